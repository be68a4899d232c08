"""Nothing of a run stays in the temporary directory (issue: every simulated run left its sysfs
trees, 0.5-3 MB each, and its workers' logs in /tmp). The run removes what it made at its end,
normal, raised or aborted (SIGTERM); what a run killed outright left is removed by the next one
(nodeqc.core.scratch.sweep), and nothing else is."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, cli
from nodeqc.backends import simulated_hardware
from nodeqc.backends.gpus import open_gpus
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.slots import SLOT_LOADED_S, SLOTS
from nodeqc.core import scratch
from nodeqc.report.journal import read_journal
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.profile import load_profile
from nodeqc.work.workers import Task, Watchdog, run_tasks

NS = scratch.pid_namespace()


@pytest.fixture
def tmp(monkeypatch):
    """A fresh temporary directory, for this process (tempfile caches $TMPDIR once read) and for
    the nodeqc processes a test starts. In the system's own (not under tmp_path): shallow enough
    for the simulated node's fork server to put its socket there (nodeqc.work.starts), as in /tmp."""
    where = Path(tempfile.mkdtemp(prefix="nq-"))
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    monkeypatch.setenv("TMPDIR", str(where))
    yield where
    shutil.rmtree(where, ignore_errors=True)


def ours(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("nodeqc-"))


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ---------------------------------------------------------------------- whole runs


def test_a_headless_simulated_run_leaves_nothing_in_the_temporary_directory(tmp, tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--sample-hz", "8",
            "--out", str(tmp_path / "out"), env={"TMPDIR": str(tmp)})
    assert p.returncode == 0, p.stderr
    assert list(tmp.iterdir()) == []


def test_an_in_process_run_leaves_nothing_and_made_its_scratch_there(tmp, tmp_path):
    seen: set[str] = set()
    hw = simulated_hardware("h100", [], time_scale=40)
    options = RunOptions(load_profile("h100"), create_key(tmp_path / "k.pem"), out_dir=tmp_path / "out", quick=True)
    outcome = Runner(options, hw, lambda e: seen.update(ours(tmp))).run()
    assert outcome.exit_code == 0
    # It did make them here (the test would pass vacuously otherwise): the tree, and the stress workers' logs.
    me = f"{NS}-{os.getpid()}-"
    assert any(n.startswith(f"nodeqc-sim-sysfs-{me}") for n in seen), seen
    assert any(n.startswith(f"nodeqc-gpu0-{me}") and n.endswith(".log") for n in seen), seen
    assert any(n.startswith(f"nodeqc-mp-{me}") for n in seen), seen  # the fork server's socket
    assert list(tmp.iterdir()) == []


def test_a_run_that_raises_still_removes_its_tree(tmp, tmp_path):
    hw = simulated_hardware("h100", [], time_scale=40)
    options = RunOptions(load_profile("h100"), create_key(tmp_path / "k.pem"), out_dir=tmp_path / "out", quick=True)

    def boom(event):
        if event.type == "check_started" and event.name.startswith("stress."):
            assert ours(tmp)  # the tree is there while the run goes on
            raise RuntimeError("the listener broke")

    outcome = Runner(options, hw, boom).run()  # an internal error: an ERROR result, a report
    assert any(r.code == "INTERNAL_ERROR" for r in outcome.results)
    assert list(tmp.iterdir()) == []


def _start_slow(tmp_path: Path, tmp: Path) -> subprocess.Popen[str]:
    profile = tmp_path / "slow.toml"
    profile.write_text('description = "slow"\nextends = "h100"\n[run]\nburn_s = 3000\n')
    return subprocess.Popen([sys.executable, "-m", "nodeqc", "--headless", "--profile", str(profile), "--simulate",
                             "h100", "--sample-hz", "8", "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "TMPDIR": str(tmp)})


def _wait_for_burn(tmp_path: Path, proc: subprocess.Popen[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        journals = list((tmp_path / "out").glob("*.journal.jsonl"))
        if journals and any(r.get("name") == "stress.burn" for r in read_journal(journals[0])):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("the burn never started")


def test_a_run_aborted_by_sigterm_leaves_nothing(tmp, tmp_path):
    proc = _start_slow(tmp_path, tmp)
    try:
        _wait_for_burn(tmp_path, proc)
        mid = ours(tmp)
        assert any(n.startswith(f"nodeqc-sim-sysfs-{NS}-{proc.pid}-") for n in mid), mid
        assert any(n.startswith(f"nodeqc-gpu0-{NS}-{proc.pid}-") for n in mid), mid  # the burn's worker
        assert any(n.startswith(f"nodeqc-mp-{NS}-{proc.pid}-") for n in mid), mid  # its fork server's
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2 and "SIGTERM: aborting" in err and "ABORTED" in err, err
    assert list(tmp.iterdir()) == []


def test_what_a_killed_run_left_is_removed_by_the_next_run(tmp, tmp_path):
    proc = _start_slow(tmp_path, tmp)
    try:
        _wait_for_burn(tmp_path, proc)
    finally:
        proc.kill()  # SIGKILL: nothing runs at its exit
        proc.communicate(timeout=30)
    left = ours(tmp)
    assert any(n.startswith(f"nodeqc-sim-sysfs-{NS}-{proc.pid}-") for n in left), left
    assert any(n.startswith(f"nodeqc-gpu0-{NS}-{proc.pid}-") for n in left), left
    assert any(n.startswith(f"nodeqc-mp-{NS}-{proc.pid}-") for n in left), left
    assert all(f"-{NS}-{proc.pid}-" in n for n in left), left
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--only", "inventory",
            "--out", str(tmp_path / "next"), env={"TMPDIR": str(tmp)})
    assert p.returncode == 0, p.stderr
    assert list(tmp.iterdir()) == []


# ---------------------------------------------------------------------- the parts


def test_the_simulated_tree_is_made_when_read_removed_by_close_and_made_again_as_it_was(tmp):
    hw = simulated_hardware("hgx-h100", [parse_fault("gpu1:aer=3"), parse_fault("host:edac_ce=4")])
    p = hw.platform
    open_gpus(hw, hw.host.info())  # what the GUI's probe reads (nodeqc.gui.session.probe)
    hw.mgmt.close()
    assert list(tmp.iterdir()) == []  # so the probe's hardware makes no tree: one tree a run, not two
    buses = ["0000:43:00.0"]
    assert p.counters(buses).aer["0000:43:00.0"]["correctable"] == 0
    (tree,) = tmp.iterdir()
    assert tree.name.startswith(f"nodeqc-sim-sysfs-{NS}-{os.getpid()}-") and tree.stat().st_mode & 0o777 == 0o700
    p.node.shared[1 * SLOTS + SLOT_LOADED_S] = 5.0
    assert p.counters(buses).aer["0000:43:00.0"]["correctable"] == 3
    hw.release()
    assert list(tmp.iterdir()) == []
    hw.release()  # twice is fine
    again = p.counters(buses)  # read after close: a fresh tree, grown once, not twice
    assert again.aer["0000:43:00.0"]["correctable"] == 3 and again.edac["mc0/dimm2"]["ce"] == 4
    assert len(list(tmp.iterdir())) == 1
    p.close()
    assert list(tmp.iterdir()) == []


def test_a_platform_loaded_before_its_first_read_grows_its_counters_once(tmp):
    hw = simulated_hardware("hgx-h100", [parse_fault("gpu1:aer=3")])
    hw.platform.node.shared[1 * SLOTS + SLOT_LOADED_S] = 5.0
    assert hw.platform.counters(["0000:43:00.0"]).aer["0000:43:00.0"]["correctable"] == 3
    hw.release()


def test_worker_logs_are_removed_and_a_crashed_workers_tail_is_kept_in_its_evidence(tmp):
    spec = simulated_hardware("hgx-h100", []).compute_spec
    tasks = [Task("workloads_for_tests:steady", 0, {}, 0.1), Task("workloads_for_tests:segfaults", 1, {}, 0.1)]
    ok, crashed = run_tasks(tasks, spec, Watchdog(startup_s=30, stall_s=5))
    assert ok.status == "ok" and crashed.status == "crash"
    assert "about to die" in crashed.evidence["log_tail"]  # the evidence is the log's tail, copied
    assert list(tmp.iterdir()) == []


def test_sweep_removes_only_our_scratch_of_dead_processes_and_follows_no_link(tmp_path):
    if NS is None:
        pytest.skip("no /proc/self/ns/pid here: nothing is swept")
    where = tmp_path / "tmp"
    where.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("not nodeqc's")
    dead, alive = dead_pid(), os.getppid()

    tree = where / f"nodeqc-sim-sysfs-{NS}-{dead}-k2j3h4l5"
    (tree / "sys/class").mkdir(parents=True)
    (tree / "sys/class/file").write_text("1\n")
    (tree / "sys/class/out").symlink_to(victim)  # a link inside the tree: removed, never followed
    log = where / f"nodeqc-gpu3-{NS}-{dead}-x1y2z3_a.log"
    log.write_text("a worker's output\n")
    kept = {
        f"nodeqc-sim-sysfs-{NS}-{alive}-aaaa1111": "dir",  # a live process's
        f"nodeqc-sim-sysfs-{NS}-{os.getpid()}-bbbb2222": "dir",  # this process's
        f"nodeqc-sim-sysfs-1-{dead}-cccc3333": "dir",  # another PID namespace's: its pids are not ours to judge
        f"nodeqc-gpu0-{NS}-0-dddd4444.log": "file",  # pid 0 names no process
        "nodeqc-sim-sysfs-k2j3h4l5": "dir",  # an older nodeqc's: whose it is cannot be told
        f"other-sim-sysfs-{NS}-{dead}-eeee5555": "dir",  # not ours
        f"nodeqc-sim-sysfs-{NS}-{dead}-ffff6666": "link",  # a link with our name: not what we make
        f"nodeqc-gpu1-{NS}-{dead}-gggg7777.log": "fifo",
        f"nodeqc-gpu2-{NS}-{dead}-hhhh8888.log": "dir",  # a tree named as a log
        f"nodeqc-sim-sysfs-{NS}-{dead}-iiii9999.txt": "file",
    }
    for name, kind in kept.items():
        path = where / name
        if kind == "dir":
            path.mkdir()
        elif kind == "file":
            path.write_text("")
        elif kind == "link":
            path.symlink_to(victim)
        else:
            os.mkfifo(path)

    removed = scratch.sweep(where)
    assert sorted(removed) == sorted([tree, log])
    assert sorted(p.name for p in where.iterdir()) == sorted(kept)
    assert (victim / "keep.txt").read_text() == "not nodeqc's"
    assert scratch.sweep(where) == []  # once a process for each directory


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_sweep_leaves_another_users_scratch(tmp_path):
    if NS is None:
        pytest.skip("no /proc/self/ns/pid here: nothing is swept")
    theirs = tmp_path / f"nodeqc-sim-sysfs-{NS}-{dead_pid()}-k2j3h4l5"
    theirs.mkdir()
    os.chown(theirs, 4242, 4242)
    assert scratch.stale(tmp_path) == []
    assert theirs.is_dir()


def test_scratch_names_say_whose_they_are_and_sweep_reads_them_back():
    name = scratch.prefix("sim-sysfs") + "k2j3h4l5"
    m = scratch.NAME.fullmatch(name)
    assert m and m["pid"] == str(os.getpid()) and m["ns"] == str(NS or 0)
    assert scratch.NAME.fullmatch(scratch.prefix("gpu12") + "abc_12.log")
    with pytest.raises(ValueError):
        scratch.prefix("../etc")
