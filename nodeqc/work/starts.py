"""How a worker process starts: spawned, or (the simulated node's) forked from a fork server.

A real GPU's worker is spawned: a fresh interpreter, since a CUDA context does not survive fork.
The simulated node's workers touch no GPU, and a fresh interpreter each cost more than their work:
eight interpreters importing NumPy and nodeqc took 0.38 s of CPU each (2026-11-28, 2 cores), some
3 s of an 8-GPU simulated quick run. They start instead from multiprocessing's fork server, which
imports those modules once and forks each worker from itself (with the progress fix of the same
day the run went from 9.1 to 4.0 s of CPU: benchmarks/bench_sim_quick.py, RESULTS.md). The fork server is itself a fresh interpreter (started by fork and
exec), so no thread or lock of the run's process is forked; each worker is still a process of its
own that the watchdog can kill, under the run's process (own_pids finds it).

The fork server listens on a socket in multiprocessing's temporary directory, which it makes with
mkdtemp (`pymp-*`) and removes only when its process exits normally: a run killed outright would
leave it behind, and a run in a long-lived process (the GUI, a test) would keep it past its end.
So that directory is nodeqc's scratch (`nodeqc-mp-*`, swept like the rest when its owner died), and
the fork server stops when its last pool closes. Both go through multiprocessing's private parts
(the process's `_config`, the server's `_stop`); where this Python lacks them, workers are spawned.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.forkserver as forkserver
import multiprocessing.process
import os
import tempfile
import threading
from typing import Any

from nodeqc.core import scratch

# What every simulated worker imports (workers._prepare imports them too, where spawned), done once.
# forkserver_signals, first: the fork server ignores SIGTERM from then on.
SIM_PRELOAD = ["nodeqc.work.forkserver_signals", "nodeqc.work.workers", "nodeqc.work.workloads",
               "nodeqc.backends.sim.compute"]

# A Unix socket's path is at most 107 bytes (sun_path, 108 with its NUL); the fork server's is
# DIR/listener-XXXXXXXX. Under a deeper temporary directory (a test's, a batch job's) workers spawn.
SOCKET_PATH_MAX = 107
SOCKET_NAME = "/listener-XXXXXXXX"

_lock = threading.Lock()
_users = 0  # pools using the fork server now
_tempdir: str | None = None  # the scratch directory this module gave multiprocessing, while in use


def _private_parts() -> tuple[dict[str, Any], Any] | None:
    config = getattr(multiprocessing.process.current_process(), "_config", None)
    server = getattr(forkserver, "_forkserver", None)
    if not isinstance(config, dict) or not callable(getattr(server, "_stop", None)):
        return None
    return config, server


def acquire(spec: dict[str, Any]) -> Any:
    """The multiprocessing context a pool for `spec` starts its workers with; give it back with
    `release` when the pool closes."""
    global _users, _tempdir
    if spec.get("kind") != "sim" or (parts := _private_parts()) is None:
        return multiprocessing.get_context("spawn")
    config, _ = parts
    with _lock:
        if _users == 0:
            made = config.get("tempdir")  # one multiprocessing made already: its own to remove
            depth = len(os.fsencode(made)) if made else \
                len(os.fsencode(tempfile.gettempdir())) + 1 + len(scratch.prefix("mp")) + 8  # mkdtemp's 8
            if depth + len(SOCKET_NAME) > SOCKET_PATH_MAX:
                return multiprocessing.get_context("spawn")  # a temporary directory too deep for a socket
            if made is None:
                _tempdir = tempfile.mkdtemp(prefix=scratch.prefix("mp"))
                config["tempdir"] = _tempdir
            multiprocessing.get_context("forkserver").set_forkserver_preload(SIM_PRELOAD)
        _users += 1
    return multiprocessing.get_context("forkserver")


@atexit.register
def _stop_at_exit() -> None:
    """A pool never closed: its fork server stopped and its directory removed as this process ends
    normally (a kill leaves the directory to the next run's sweep)."""
    global _users
    try:
        if _tempdir is not None and _private_parts() is not None:
            _users = 1
            release(multiprocessing.get_context("forkserver"))
    except BaseException:  # noqa: BLE001 - a Ctrl-C pressed again through the exit: the sweep has it
        pass


def release(ctx: Any) -> None:
    """A pool's context given back: the last user of the fork server stops it and removes its
    directory."""
    global _users, _tempdir
    if ctx.get_start_method() != "forkserver" or (parts := _private_parts()) is None:
        return
    config, server = parts
    with _lock:
        _users -= 1
        if _users > 0:
            return
        try:
            server._stop()  # it exits; the socket is unlinked
        except (OSError, TypeError):  # stopped part way already (a Ctrl-C in its wait): it ends with us
            pass
        finally:  # also when a Ctrl-C lands in that wait: the directory goes, and nothing is left to redo
            if _tempdir is not None:
                if config.get("tempdir") == _tempdir:
                    del config["tempdir"]
                scratch.remove(_tempdir)
                _tempdir = None
