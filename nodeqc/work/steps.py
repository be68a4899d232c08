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
    left = seconds
    # The memory is waited on at least once: on a compressed clock the whole wait may pass before
    # the first look at it (a loaded host, 1e6 times compression), and the bit fade then read back at
    # once what it had just written, its weak cells never left alone (a suite flake, 2026-11-29).
    while True:
        device.memtest_wait(min(step_s(device), max(0.0, left)))
        progress()
        if (left := seconds - (clock.now() - start)) <= 0:
            break
