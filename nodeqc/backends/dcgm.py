"""NVIDIA DCGM's diagnostic, `dcgmi diag -r LEVEL -j`, run on this machine: found on PATH, bounded in
time and in what it may print. The verdicts on its JSON are nodeqc.checks.dcgm's.

DCGM's own users report `dcgmi diag` hanging on a faulty GPU (a wedged driver call in one of its
plugins). The run is therefore started in a process group of its own, and past its timeout the whole
group is sent SIGTERM, then SIGKILL: nv-hostengine's plugin processes (nvvs) are its children and go
with it. A process stuck in the kernel (state D) may not die even then; the run does not wait for it
past KILL_WAIT_S and says so.

What it prints is untrusted input (nodeqc.core.tool_output): at most MAX_OUTPUT_BYTES of each
stream is kept, the rest read and counted, never held.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

# A level-4 run on 8 GPUs prints about 60 kB of JSON (its tests x GPUs x a few hundred bytes each,
# an estimate from DCGM's JSON builder, dcgmi/Diag.cpp); 4 MiB is far past any real output.
MAX_OUTPUT_BYTES = 4 << 20
TERM_GRACE_S = 5.0  # after SIGTERM, before SIGKILL (nodeqc's choice: nvvs cleans up its GPU state)
POLL_S = 0.5  # how often a run's abort is looked at while dcgmi runs
KILL_WAIT_S = 5.0  # after SIGKILL: a process that still lives is stuck in the kernel
INSTALL = ("install DCGM: the datacenter-gpu-manager package (CUDA repository: apt-get install "
           "datacenter-gpu-manager-4-cuda12, or dnf install datacenter-gpu-manager-4-cuda12; DCGM 3.x: "
           "datacenter-gpu-manager) and start its host engine (systemctl enable --now nvidia-dcgm, or nv-hostengine)")


@dataclass
class DiagRun:
    """One run of `dcgmi diag`: what it printed (bounded), how it ended."""

    command: list[str]
    returncode: int | None  # None: it did not end by itself (timed out), or could not start
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    timed_out: bool = False
    aborted: bool = False  # ended by the run's abort
    start_error: str | None = None  # it could not be started at all (OSError)
    stdout_bytes: int = 0  # everything it printed on stdout, kept or not
    unkillable: bool = False  # still alive after SIGKILL (stuck in the kernel)
    notes: list[str] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.stdout_bytes > MAX_OUTPUT_BYTES


def which_dcgmi() -> str | None:
    """Where `dcgmi` is on PATH; None where DCGM is not installed."""
    return shutil.which("dcgmi")


def diag_command(dcgmi: str, level: int, gpu_ids: list[int] | None = None) -> list[str]:
    cmd = [dcgmi, "diag", "-r", str(level), "-j"]
    if gpu_ids:
        cmd += ["-i", ",".join(str(i) for i in gpu_ids)]
    return cmd


def run_diag(dcgmi: str, level: int, timeout_s: float, gpu_ids: list[int] | None = None, *,
             should_abort: Callable[[], bool] = lambda: False, term_grace_s: float = TERM_GRACE_S,
             kill_wait_s: float = KILL_WAIT_S) -> DiagRun:
    """Run `dcgmi diag -r LEVEL -j [-i IDS]` for at most timeout_s seconds, then end its process group;
    also when should_abort() says so (the run's abort: checked every POLL_S)."""
    cmd = diag_command(dcgmi, level, gpu_ids)
    run = DiagRun(cmd, None)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError as e:
        run.start_error = f"{type(e).__name__}: {e.strerror or e}"
        return run
    out, err = _Drain(proc.stdout), _Drain(proc.stderr)
    deadline = start + timeout_s
    while run.returncode is None:
        try:
            run.returncode = proc.wait(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            aborted = should_abort()
            if aborted or time.monotonic() >= deadline:
                run.aborted, run.timed_out = aborted, not aborted
                run.unkillable = not _end_group(proc, term_grace_s, kill_wait_s)
                break
    run.seconds = round(time.monotonic() - start, 3)
    # A grandchild that left the group may hold the pipes open: the readers are not waited on for long.
    for drain in (out, err):
        drain.thread.join(timeout=2.0)
    run.stdout, run.stdout_bytes = out.text(), out.total
    run.stderr = err.text()
    if run.unkillable:
        run.notes.append(f"dcgmi (pid {proc.pid}) still ran {kill_wait_s:g} s after SIGKILL: stuck in the kernel "
                         "(a wedged GPU or driver)")
    return run


def _end_group(proc: subprocess.Popen[bytes], term_grace_s: float, kill_wait_s: float) -> bool:
    """SIGTERM to the process group, then SIGKILL; True when dcgmi itself has ended."""
    for sig, wait_s in ((signal.SIGTERM, term_grace_s), (signal.SIGKILL, kill_wait_s)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait_s)
            if sig == signal.SIGTERM:
                try:  # its children may have ignored SIGTERM
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return True
        except subprocess.TimeoutExpired:
            continue
    return False


class _Drain:
    """Reads a pipe to its end on a thread of its own, keeping the first MAX_OUTPUT_BYTES."""

    def __init__(self, pipe) -> None:  # noqa: ANN001 - a binary file object
        self.pipe = pipe
        self.kept = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while chunk := self.pipe.read1(65536):
                self.total += len(chunk)
                room = MAX_OUTPUT_BYTES - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except (OSError, ValueError):
            pass
        finally:
            try:
                self.pipe.close()
            except OSError:
                pass

    def text(self) -> str:
        return bytes(self.kept).decode("utf-8", errors="replace")
