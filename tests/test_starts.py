"""How workers start (nodeqc.work.starts): a real GPU's spawned, each a fresh interpreter; the
simulated node's forked from one fork server that imported their modules once, which stops with the
last pool using it and leaves nothing in the temporary directory."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.core import scratch
from nodeqc.work import starts
from nodeqc.work.workers import Task, Watchdog, WorkerPool, own_pids, run_tasks


@pytest.fixture(scope="module")
def spec():
    return simulated_hardware("hgx-h100", []).compute_spec


@pytest.fixture
def tmp(monkeypatch):
    where = Path(tempfile.mkdtemp(prefix="nq-"))  # the system's temporary directory: shallow
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    yield where
    shutil.rmtree(where, ignore_errors=True)


def whoami(gpus, pool=None, spec_=None):
    tasks = [Task("workloads_for_tests:whoami", g, {}, 0.1) for g in gpus]
    outcomes = run_tasks(tasks, spec_, Watchdog(startup_s=30, stall_s=10), pool=pool)
    assert all(o.ok for o in outcomes), [(o.status, o.detail) for o in outcomes]
    return [o.result for o in outcomes]


def loaded(pid: int, library: str) -> bool:
    return library in Path(f"/proc/{pid}/maps").read_text()


def test_the_simulated_nodes_workers_fork_from_one_server_that_imported_their_modules(spec, tmp):
    with WorkerPool(spec, keep=False) as pool:
        first, second = whoami([0, 1], pool, spec)
        server = first["ppid"]
        # One server, not the test's process, forked both; it imported NumPy (the simulated
        # compute's) before either worker existed; each is still a process the run owns.
        assert server == second["ppid"] and server != os.getpid() and first["pid"] != second["pid"]
        assert loaded(server, "_multiarray_umath")
        assert server in own_pids()
        # Its socket's directory, named as scratch (a run killed outright leaves it to the next's sweep).
        assert [p.name[:len(scratch.prefix("mp"))] for p in tmp.iterdir()] == [scratch.prefix("mp")]
        again = whoami([0], pool, spec)[0]
        assert again["ppid"] == server  # the same server for the pool's every task
    assert not scratch.alive(server)  # stopped with its pool ...
    assert list(tmp.iterdir()) == []  # ... and its directory gone


def test_the_server_stops_with_the_last_pool_using_it(spec, tmp):
    outer = WorkerPool(spec, keep=False)
    inner = WorkerPool(spec, keep=False)
    server = whoami([0], inner, spec)[0]["ppid"]
    inner.close()
    assert scratch.alive(server) and whoami([1], outer, spec)[0]["ppid"] == server
    outer.close()
    assert not scratch.alive(server) and list(tmp.iterdir()) == []
    # A later pool starts a fresh one (with the environment of its time).
    with WorkerPool(spec, keep=False) as pool:
        assert whoami([0], pool, spec)[0]["ppid"] not in (server, os.getpid())


def test_under_a_temporary_directory_too_deep_for_a_socket_workers_are_spawned(spec, tmp, monkeypatch):
    deep = tmp / ("d" * 60)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert len(str(deep)) + len(starts.SOCKET_NAME) + len(scratch.prefix("mp")) > starts.SOCKET_PATH_MAX - 8
    assert whoami([0], spec_=spec)[0]["ppid"] == os.getpid()
    assert list(deep.iterdir()) == []


def test_a_real_gpus_workers_are_spawned():
    ctx = starts.acquire({"kind": "cupy"})
    assert ctx.get_start_method() == "spawn"
    starts.release(ctx)  # nothing to stop
    assert starts.acquire({"kind": "none"}).get_start_method() == "spawn"


def test_where_this_python_lacks_the_fork_servers_private_parts_workers_are_spawned(spec, tmp, monkeypatch):
    import multiprocessing.forkserver

    class Plain:  # a fork server without the `_stop` nodeqc stops it with
        pass

    monkeypatch.setattr(multiprocessing.forkserver, "_forkserver", Plain())
    ctx = starts.acquire(spec)
    assert ctx.get_start_method() == "spawn"
    starts.release(ctx)
    assert whoami([0], spec_=spec)[0]["ppid"] == os.getpid() and list(tmp.iterdir()) == []


def test_a_pool_never_closed_leaves_nothing_when_its_process_ends(tmp):
    script = (
        "from nodeqc.backends import simulated_hardware\n"
        "from nodeqc.work.workers import Task, Watchdog, WorkerPool, run_tasks\n"
        "spec = simulated_hardware('h100', []).compute_spec\n"
        "pool = WorkerPool(spec, keep=False)\n"
        "(o,) = run_tasks([Task('workloads_for_tests:whoami', 0, {}, 0.1)], spec, Watchdog(30, 10), pool=pool)\n"
        "import os; assert o.ok and o.result['ppid'] != os.getpid(), o\n"  # from the fork server
    )
    tests = Path(__file__).parent
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": f"{tests.parent}:{tests}"})
    assert p.returncode == 0, p.stderr
    assert list(tmp.iterdir()) == []


def test_a_ctrl_c_or_a_half_stopped_server_still_removes_its_directory_and_leaves_the_exit_nothing(
        spec, tmp, monkeypatch):
    """An impatient Ctrl-C landed in the server's stop (its wait for the server to exit); the exit's
    own stop then found it half stopped and printed a traceback (a clean-clone CI run, 2026-11-28)."""
    import multiprocessing.forkserver

    server = multiprocessing.forkserver._forkserver
    real = server._stop

    def interrupted():
        real()
        raise KeyboardInterrupt

    pool = WorkerPool(spec, keep=False)
    whoami([0], pool, spec)
    monkeypatch.setattr(server, "_stop", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pool.close()
    assert list(tmp.iterdir()) == []
    starts._stop_at_exit()  # nothing left to redo

    def half_stopped():
        raise TypeError("'NoneType' object cannot be interpreted as an integer")  # its fd closed already

    pool = WorkerPool(spec, keep=False)
    whoami([0], pool, spec)
    monkeypatch.setattr(server, "_stop", half_stopped)
    pool.close()  # no raise
    assert list(tmp.iterdir()) == []
    with contextlib.suppress(FileNotFoundError):  # its socket went with the directory
        real()  # the server this test left running
