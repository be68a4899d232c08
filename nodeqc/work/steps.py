"""What every workload shares: the reporter it tells how far it is, and the step of work it reports
after, which is what the watchdog watches (nodeqc.work.workers)."""

from __future__ import annotations

from typing import Any, Callable, Protocol

STEP_S = 1.0  # seconds of work between progress reports, on the run's clock


class Reporter(Protocol):
    """Where a workload says how far it is (nodeqc.work.workers.PipeReporter in a worker process)."""

    def progress(self, fraction: float, **figures: Any) -> None: ...


def step_s(device: Any) -> float:
    """Run-clock seconds per step: about STEP_S of real time even when simulated time is compressed."""
    return max(STEP_S, 0.1 * device.clock.scale)


def idle(device: Any, seconds: float, progress: Callable[[], None]) -> None:
    """Leave the memory alone for `seconds` of the run's clock, reporting progress every step so the
    watchdog sees a live worker."""
    device.set_load(0.0)
    clock = device.clock
    start = clock.now()
    while (left := seconds - (clock.now() - start)) > 0:
        device.memtest_wait(min(step_s(device), left))
        progress()
