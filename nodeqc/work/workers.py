"""Stress work in worker processes, under a watchdog.

Tasks run in processes of their own (a process is the unit the OS lets us kill): spawned, as CUDA
contexts do not survive fork, or for the simulated node forked from a fork server
(nodeqc.work.starts). A worker reports progress over a pipe after every bounded step of work; the
supervisor kills a worker that stays silent too long (hung kernel), notices one that dies (crashed
context) and turns both into outcomes with evidence, never into a hang of nodeqc.

A run keeps its workers from one step to the next (WorkerPool): one process per GPU pays the
start-up (interpreter, NumPy and CuPy imports, CUDA context, compiled kernels) once, not once a
step (issue 30). Only a worker whose task ended well is kept; every task opens and closes its own
device, so no buffer outlives its task.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from nodeqc.core import scratch
from nodeqc.core.errors import ComputeUnavailable, GpuLostError
from nodeqc.work import starts

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
        self._done = False  # a fraction of 1 sent: the work's end shown

    def progress(self, fraction: float, **figures: Any) -> None:
        now = time.monotonic()
        # A burn-in window's figures are results, not just progress, and a pulse period's bound is
        # when the supervisor reads counters: they always go through. So does the first report of
        # the work done, but not each after it: a load held on to its minimum wall time (the HBM
        # triad's, PCIe's) reports 1 on every pass, some 700 passes a GPU in a simulated quick run.
        ended = fraction >= 1.0 and not self._done
        if now - self._last >= 0.1 or ended or "window" in figures or "bound" in figures:
            self._last = now
            self._done = self._done or fraction >= 1.0
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
    device = CupyDevice(task.gpu, bus_ids.get(task.gpu), origin)
    # The later steps' kernels compile while this one works: on a node that never ran nodeqc
    # (CuPy's kernel cache empty) each compilation otherwise stood between two steps.
    device.compile_kernels_beside()
    return device


def resolve_workload(name: str) -> Callable[..., dict[str, Any]]:
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)
    from nodeqc.work.workloads import WORKLOADS

    return WORKLOADS[name]


def _prepare(spec: dict[str, Any]) -> None:
    """What every task of a kept worker needs, imported before its first task arrives (a run starts
    its first workers while telemetry takes its idle readings): the workloads and the device's
    module, CuPy included. Nothing here touches a GPU: no CUDA context is made until a task opens
    its device. A failed import is the first task's to report."""
    try:
        import nodeqc.work.workloads  # noqa: F401

        if spec["kind"] == "sim":
            for name in starts.SIM_PRELOAD:  # where a fork server started it, imported there already
                importlib.import_module(name)
        elif spec["kind"] != "none":
            import nodeqc.backends.cupy_node  # noqa: F401
            from nodeqc.backends.cublaslt import import_bindings
            from nodeqc.backends.cupy_compute import import_cupy

            import_cupy()
            # nvmath's cuBLASLt binding for the fp8 burn: fp8's set-up left a gap of 1.9 s in the
            # burn on a fresh H100 (2026-11-27 evening), this import part of it; here it overlaps the
            # idle readings. It loads libraries, no CUDA context (benchmarks/burn_setup.py shows both).
            import_bindings()
    except Exception:  # noqa: BLE001 - the task that needs it says why
        pass


def _run_one(conn: Connection, spec: dict[str, Any], task: Task) -> bool:
    """One task: its result (or why there is none) sent; True when the result went and the device
    was freed, so this process may take another task. The result says which (its third part), so
    the supervisor never gives a task to a process that is about to end."""
    device = None
    message: tuple[str, Any]
    try:
        workload = resolve_workload(task.workload)
        device = open_device(spec, task)
        message = ("result", workload(device, task.params, PipeReporter(conn)))
    except GpuLostError as e:
        message = (STATUS_LOST, str(e))
    except ComputeUnavailable as e:
        message = (STATUS_UNAVAILABLE, str(e))
    except BaseException as e:  # noqa: BLE001 - everything a workload raises is evidence
        message = (STATUS_ERROR, f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
    # The device is closed before the result goes: a process that dies or hangs while freeing its
    # GPU does so inside its own task, not inside the next one it would be given.
    freed = True
    if device is not None:
        try:
            device.close()
        except Exception:  # noqa: BLE001 - a failure to free is not the task's verdict, but ends the process
            freed = False
    reusable = message[0] == "result" and freed
    conn.send((*message, reusable) if message[0] == "result" else message)
    return reusable


def _worker_main(conn: Connection, spec: dict[str, Any], task: Task | None, log_path: str,
                 tasks: Connection | None = None) -> None:
    """A worker: `task`, then (kept by a pool) each task that arrives on `tasks` until None, the
    pipe's end (the supervisor gone, even killed) or a task that did not end well."""
    # Ctrl-C and SIGTERM are the supervisor's to handle: each reaches every process of the run (a
    # terminal's Ctrl-C, and scancel's, systemd's and timeout's SIGTERM), and a worker that died of
    # one before the supervisor took the abort was judged a crashed GPU. The supervisor ends its
    # workers; one whose supervisor is gone ends at its pipe's next message.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        if task is None:
            _prepare(spec)
            conn.send(("ready",))  # imported: the run's idle readings need not wait longer for it
        while True:
            if task is None:
                try:
                    task = tasks.recv() if tasks is not None else None
                except (EOFError, OSError):
                    return
                if task is None:
                    return
                sys.stdout.flush()
                sys.stderr.flush()
                os.ftruncate(1, 0)  # the log's tail, when it is evidence, is this task's alone
            if not _run_one(conn, spec, task) or tasks is None:
                return
            task = None
    finally:
        conn.close()


def _take_ready(worker: _Worker) -> None:
    """A kept worker's "ready" taken off its pipe: sent before it reads its first task, it is the
    only message that can come before one. A worker that ended counts as ready: its first task's
    outcome says how it ended."""
    try:
        if worker.conn.poll():
            worker.conn.recv()
            worker.ready = True
        elif not worker.process.is_alive():
            worker.ready = True
    except (EOFError, OSError):
        worker.ready = True


def task_gpus(task: Task) -> tuple[int, ...]:
    """The GPUs a task's process opens: the key a kept worker serves."""
    return tuple(task.gpus) if task.gpus else (task.gpu,)


@dataclass
class _Worker:
    gpus: tuple[int, ...]
    process: Any
    conn: Connection  # worker -> supervisor: progress and the result
    tasks: Connection | None  # supervisor -> worker: the next task (None: one task, then it exits)
    log_path: str
    ready: bool = False  # a kept worker said it has imported what its tasks need (or ended)


class WorkerPool:
    """The worker processes of one run. With keep=True a one-GPU task's worker, once the task ended
    well, waits for the next task on that GPU; one that hung, crashed, raised, lost its GPU or was
    aborted is killed, and the next task gets a fresh process. With keep=False, and always for a
    GPU-to-GPU task or one that sets its own environment (`env` in its params), each task has a
    process of its own: NCCL reads its switches (NCCL_P2P_DISABLE for the check through the NICs)
    once a process, when it makes its first communicator, and peer access once enabled stays so; a
    reused process would run the check through the NICs over NVLink and pass it without its work.
    A task's process never sits beside an idle kept worker on its GPUs: those are retired first
    (each holds a CUDA context and its memory there).

    Each worker's stdout and stderr go to a log in the temporary directory (named by
    nodeqc.core.scratch), removed when its worker ends or the pool closes; those of a supervisor
    killed outright go at the next sweep. The spec is given to each process at its start (the
    simulated node's shared memory cannot travel down a pipe), so a pool serves one spec."""

    def __init__(self, spec: dict[str, Any], keep: bool = True):
        self.spec = spec
        self.keep = keep
        self.started = 0  # processes started, all told
        self._ctx = starts.acquire(spec)  # spawn; for the simulated node, a fork server
        self._idle: dict[tuple[int, ...], _Worker] = {}
        scratch.sweep()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def kept(self, task: Task) -> bool:
        """Whether `task` runs in a worker kept from one task to the next (see the class)."""
        return self.keep and not task.gpus and not task.params.get("env")

    def _spawn(self, gpus: tuple[int, ...], task: Task | None) -> _Worker:
        """A worker for `task` alone (task given), or a kept one that waits for its tasks (None)."""
        fd, log_path = tempfile.mkstemp(prefix=scratch.prefix(f"gpu{gpus[0]}"), suffix=".log")
        os.close(fd)
        parent, child = self._ctx.Pipe(duplex=False)
        take, give = self._ctx.Pipe(duplex=False) if task is None else (None, None)
        name = f"nodeqc-{task.workload if task else 'worker'}-gpu{gpus[0]}"
        try:
            proc = self._ctx.Process(target=_worker_main, args=(child, self.spec, task, log_path, take),
                                     name=name, daemon=True)
            proc.start()
        except BaseException:
            scratch.remove(log_path)
            raise
        finally:
            child.close()
            if take is not None:
                take.close()
        self.started += 1
        return _Worker(gpus, proc, parent, give, log_path)

    def start(self, gpus: list[int]) -> None:
        """A kept worker for each of these GPUs started ahead of its first task (it imports while the
        run does other things, such as telemetry's idle readings); nothing when workers are not kept."""
        for gpu in gpus:
            if self.keep and (gpu,) not in self._idle:
                self._idle[(gpu,)] = self._spawn((gpu,), None)

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait, at most timeout_s real seconds, until every kept worker started ahead of its task has
        imported what its tasks need (its "ready"), or has ended (its first task then says why).
        True when none is left waiting."""
        end = time.monotonic() + timeout_s
        while True:
            waiting = [w for w in self._idle.values() if w.tasks is not None and not w.ready]
            for w in waiting:
                _take_ready(w)
            waiting = [w for w in waiting if not w.ready]
            left = end - time.monotonic()
            if not waiting or left <= 0:
                return not waiting
            wait([w.conn for w in waiting] + [w.process.sentinel for w in waiting], timeout=left)

    def assign(self, task: Task) -> _Worker:
        """A process running `task`: a kept one for its GPU, else a new one."""
        gpus = task_gpus(task)
        if not self.kept(task):
            for key in [k for k in self._idle if set(k) & set(gpus)]:
                self._end(self._idle.pop(key))
            return self._spawn(gpus, task)
        worker = self._idle.pop(gpus, None)
        if worker is not None and worker.process.is_alive():
            assert worker.tasks is not None
            try:
                worker.tasks.send(task)
                return worker
            except (OSError, ValueError):  # it ended since: a fresh one
                pass
        if worker is not None:
            self._end(worker)
        worker = self._spawn(gpus, None)
        assert worker.tasks is not None
        worker.tasks.send(task)
        return worker

    def finished(self, worker: _Worker, outcome: Outcome | None) -> None:
        """A task's end: its worker kept for the next task when it ended well (None: it did not end,
        or its worker cannot take another), else ended."""
        if worker.tasks is not None and outcome is not None and outcome.ok and worker.process.is_alive() \
                and worker.gpus not in self._idle:
            self._idle[worker.gpus] = worker
        else:
            self._end(worker)

    def _end(self, worker: _Worker) -> None:
        try:
            if worker.process.is_alive() and worker.tasks is not None:
                try:
                    worker.tasks.send(None)  # done: it exits on its own
                except (OSError, ValueError):
                    pass
                worker.process.join(timeout=2)
            if worker.process.is_alive():
                _kill(worker.process)
        finally:
            worker.conn.close()
            if worker.tasks is not None:
                worker.tasks.close()
            scratch.remove(worker.log_path)

    def close(self) -> None:
        """Every kept worker told to end (killed if it does not) and its log removed."""
        while self._idle:
            self._end(self._idle.popitem()[1])
        if self._ctx is not None:
            starts.release(self._ctx)
            self._ctx = None


@dataclass
class _Running:
    task: Task
    worker: _Worker
    started: float
    last_message: float | None = None
    last_progress: dict[str, Any] = field(default_factory=dict)
    outcome: Outcome | None = None
    reusable: bool = False  # the worker said it may take another task (its result's third part)

    @property
    def process(self) -> Any:
        return self.worker.process

    @property
    def conn(self) -> Connection:
        return self.worker.conn

    @property
    def log_path(self) -> str:
        return self.worker.log_path


def run_tasks(tasks: list[Task], compute_spec: dict[str, Any], watchdog: Watchdog,
              on_progress: ProgressFn | None = None,
              should_abort: Callable[[], bool] = lambda: False, pool: WorkerPool | None = None) -> list[Outcome]:
    """Run tasks concurrently, one process each (a pool's kept ones where it has them); return one
    outcome per task, in order.

    A worker that hangs or crashes has its log's last lines copied into its outcome's evidence
    when it is found out; the workers that are not kept end here, however this ends (a raise,
    Ctrl-C), their logs with them."""
    if pool is not None and pool.spec is not compute_spec:
        raise ValueError("run_tasks: the pool serves another compute spec")
    own = pool is None
    pool = pool if pool is not None else WorkerPool(compute_spec, keep=False)
    running: list[_Running] = []
    try:
        for task in tasks:
            running.append(_Running(task, pool.assign(task), time.monotonic()))
        _supervise(running, watchdog, on_progress, should_abort)
    finally:
        for r in running:
            pool.finished(r.worker, r.outcome if r.reusable else None)
        if own:
            pool.close()
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
        kind = message[0]
        if kind == "ready":  # a kept worker's imports done, not yet taken: no sign of its task's life
            continue
        r.last_message = now
        if kind == "progress":
            _, fraction, figures = message
            r.last_progress = {"fraction": fraction, **figures}
            if on_progress:
                on_progress(r.task, fraction, figures)
        elif kind == "result":
            r.outcome = Outcome(r.task, STATUS_OK, result=message[1], elapsed_s=now - r.started)
            r.reusable = bool(message[2]) if len(message) > 2 else False
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
