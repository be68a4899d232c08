"""Stress work in worker processes, under a watchdog.

Each task runs in its own spawned process (CUDA contexts do not survive fork, and a process is the
unit the OS lets us kill). A worker reports progress over a pipe after every bounded step of work;
the supervisor kills a worker that stays silent too long (hung kernel), notices one that dies
(crashed context) and turns both into outcomes with evidence, never into a hang of nodeqc.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from nodeqc.core import scratch
from nodeqc.core.errors import ComputeUnavailable, GpuLostError

STATUS_OK = "ok"
STATUS_HANG = "hang"  # silent past the watchdog's limit, killed
STATUS_CRASH = "crash"  # died without a result
STATUS_ERROR = "error"  # the workload raised
STATUS_LOST = "lost"  # the GPU fell off the bus
STATUS_UNAVAILABLE = "unavailable"  # no compute backend (CuPy missing)
STATUS_ABORTED = "aborted"  # the run was aborted


@dataclass(frozen=True)
class Task:
    workload: str  # a name in nodeqc.work.workloads.WORKLOADS, or "package.module:function"
    gpu: int  # the GPU (driver index) of a one-GPU task
    params: dict[str, Any]
    expected_s: float  # how long it should take, on the run's clock
    gpus: tuple[int, ...] = ()  # every GPU of a GPU-to-GPU task (then `gpu` is the first)


@dataclass(frozen=True)
class Watchdog:
    startup_s: float  # real seconds a worker may take to its first message (imports, CUDA context)
    stall_s: float  # real seconds a worker may stay silent once it has started
    time_scale: float = 1.0  # run-clock seconds per real second

    def deadline_s(self, task: Task) -> float:
        return self.startup_s + task.expected_s / self.time_scale + self.stall_s


@dataclass
class Outcome:
    task: Task
    status: str
    result: dict[str, Any] | None = None
    detail: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK


ProgressFn = Callable[[Task, float, dict[str, Any]], None]


class PipeReporter:
    """The worker's side of the pipe: progress after each step of work, at most ~10 a second."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self._last = 0.0

    def progress(self, fraction: float, **figures: Any) -> None:
        now = time.monotonic()
        # A burn-in window's figures are results, not just progress, and a pulse period's bound is
        # when the supervisor reads counters: they always go through.
        if now - self._last >= 0.1 or fraction >= 1.0 or "window" in figures or "bound" in figures:
            self._last = now
            self._conn.send(("progress", float(fraction), figures))


def own_pids() -> set[int]:
    """This nodeqc process and every process it started (the stress workers and anything they
    start): a compute process on a GPU with one of these pids is ours, any other is a co-tenant.
    In a container without the host's PID namespace NVML reports host pids, which match none of
    these: run nodeqc with the host's PID namespace (docker --pid=host) there."""
    import psutil

    me = psutil.Process()
    try:
        return {me.pid} | {c.pid for c in me.children(recursive=True)}
    except psutil.Error:
        return {me.pid}


def open_device(spec: dict[str, Any], task: "Task") -> Any:
    """The device a task works on: one GPU, or every GPU the task names (GPU-to-GPU work)."""
    bus_ids = task.params.get("bus_ids", {})
    if spec["kind"] == "none":
        raise ComputeUnavailable("this run has no GPU compute (a replayed capture of a GPU model with no simulated twin)")
    if spec["kind"] == "sim":
        from nodeqc.backends.sim.compute import SimDevice, SimNodeDevices

        return SimNodeDevices(spec, list(task.gpus)) if task.gpus else SimDevice(spec, task.gpu)
    from nodeqc.backends.cupy_compute import CupyDevice
    from nodeqc.backends.cupy_node import CupyNodeDevices

    origin = spec.get("clock", (1.0, None))[1]
    if task.gpus:
        return CupyNodeDevices(list(task.gpus), bus_ids, origin)
    return CupyDevice(task.gpu, bus_ids.get(task.gpu), origin)


def resolve_workload(name: str) -> Callable[..., dict[str, Any]]:
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)
    from nodeqc.work.workloads import WORKLOADS

    return WORKLOADS[name]


def _worker_main(conn: Connection, spec: dict[str, Any], task: Task, log_path: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the supervisor's to handle
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    device = None
    try:
        workload = resolve_workload(task.workload)
        device = open_device(spec, task)
        result = workload(device, task.params, PipeReporter(conn))
        conn.send(("result", result))
    except GpuLostError as e:
        conn.send((STATUS_LOST, str(e)))
    except ComputeUnavailable as e:
        conn.send((STATUS_UNAVAILABLE, str(e)))
    except BaseException as e:  # noqa: BLE001 - everything a workload raises is evidence
        conn.send((STATUS_ERROR, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        if device is not None:
            try:
                device.close()
            except Exception:  # noqa: BLE001 - the result is already sent
                pass
        conn.close()


@dataclass
class _Running:
    task: Task
    process: Any
    conn: Connection
    log_path: str
    started: float
    last_message: float | None = None
    last_progress: dict[str, Any] = field(default_factory=dict)
    outcome: Outcome | None = None


def run_tasks(tasks: list[Task], compute_spec: dict[str, Any], watchdog: Watchdog,
              on_progress: ProgressFn | None = None,
              should_abort: Callable[[], bool] = lambda: False) -> list[Outcome]:
    """Run tasks concurrently, one process each; return one outcome per task, in order.

    Each worker's stdout and stderr go to a log in the temporary directory (named by
    nodeqc.core.scratch). A worker that hangs or crashes has the log's last lines copied into its
    outcome's evidence when it is found out; every log is removed here once the workers have ended,
    however this ends (a raise, Ctrl-C). Those of a supervisor killed outright go at the next sweep."""
    ctx = multiprocessing.get_context("spawn")
    running: list[_Running] = []
    logs: list[str] = []
    try:
        scratch.sweep()
        for task in tasks:
            fd, log_path = tempfile.mkstemp(prefix=scratch.prefix(f"gpu{task.gpu}"), suffix=".log")
            os.close(fd)
            logs.append(log_path)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker_main, args=(child, compute_spec, task, log_path),
                               name=f"nodeqc-{task.workload}-gpu{task.gpu}", daemon=True)
            proc.start()
            child.close()
            running.append(_Running(task, proc, parent, log_path, time.monotonic()))
        _supervise(running, watchdog, on_progress, should_abort)
    finally:
        for r in running:
            if r.process.is_alive():
                _kill(r.process)
            r.conn.close()
        for log_path in logs:  # also the log of a worker that failed to start
            scratch.remove(log_path)
    return [r.outcome for r in running]  # type: ignore[misc]


def _supervise(running: list[_Running], watchdog: Watchdog, on_progress: ProgressFn | None,
               should_abort: Callable[[], bool]) -> None:
    while any(r.outcome is None for r in running):
        active = [r for r in running if r.outcome is None]
        wait([r.conn for r in active] + [r.process.sentinel for r in active], timeout=0.2)
        now = time.monotonic()
        for r in active:
            _drain(r, now, on_progress)
            if r.outcome is None and not r.process.is_alive():
                _drain(r, now, on_progress)  # a final message may have raced the exit
                if r.outcome is None:
                    r.outcome = _crashed(r, now)
        if should_abort():
            for r in running:
                if r.outcome is None:
                    _kill(r.process)
                    r.outcome = Outcome(r.task, STATUS_ABORTED, detail="run aborted",
                                        elapsed_s=now - r.started)
            return
        for r in running:
            if r.outcome is None:
                _watch(r, now, watchdog)


def _drain(r: _Running, now: float, on_progress: ProgressFn | None) -> None:
    while r.outcome is None:
        try:
            if not r.conn.poll():
                return
            message = r.conn.recv()
        except (EOFError, OSError):
            return
        r.last_message = now
        kind = message[0]
        if kind == "progress":
            _, fraction, figures = message
            r.last_progress = {"fraction": fraction, **figures}
            if on_progress:
                on_progress(r.task, fraction, figures)
        elif kind == "result":
            r.outcome = Outcome(r.task, STATUS_OK, result=message[1], elapsed_s=now - r.started)
        else:
            r.outcome = Outcome(r.task, kind, detail=str(message[1]).strip(),
                                evidence={"last_progress": r.last_progress}, elapsed_s=now - r.started)


def _watch(r: _Running, now: float, watchdog: Watchdog) -> None:
    silent = now - (r.last_message or r.started)
    limit = watchdog.stall_s if r.last_message else watchdog.startup_s
    overdue = now - r.started > watchdog.deadline_s(r.task)
    if silent <= limit and not overdue:
        return
    _kill(r.process)
    why = (f"no progress for {silent:.1f} s (limit {limit:g} s)" if silent > limit else
           f"still running {now - r.started:.1f} s after start (deadline {watchdog.deadline_s(r.task):.1f} s)")
    r.outcome = Outcome(r.task, STATUS_HANG, detail=f"worker killed by the watchdog: {why}",
                        evidence={"last_progress": r.last_progress, "silent_s": round(silent, 2),
                                  "log_tail": _tail(r.log_path)},
                        elapsed_s=now - r.started)


def _crashed(r: _Running, now: float) -> Outcome:
    code = r.process.exitcode
    if code is not None and code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exited with status {code}"
    return Outcome(r.task, STATUS_CRASH, detail=f"worker {how} without a result",
                   evidence={"exit_code": code, "last_progress": r.last_progress,
                             "log_tail": _tail(r.log_path)},
                   elapsed_s=now - r.started)


def _kill(process: Any) -> None:
    process.kill()
    process.join(timeout=5)


def _tail(path: str, lines: int = 20) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            return f.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return []
