"""The work that runs inside worker processes, written once against the device interface
(nodeqc.backends.cupy_compute.CupyDevice for real GPUs, nodeqc.backends.simulated.SimDevice for the
simulated node). Each reports progress after every bounded step, which is what the watchdog watches.
"""

from __future__ import annotations

from typing import Any, Callable

from nodeqc.workers import Reporter

STEP_S = 0.5  # seconds of work between progress reports, on the run's clock


def burn(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Keep the GPU fully loaded for params['seconds'] while telemetry watches it."""
    seconds = float(params["seconds"])
    clock = device.clock
    # Real seconds of work per step stay near 0.1 s even when the simulated clock is compressed.
    step = max(STEP_S, 0.1 * clock.scale)
    device.set_load(1.0)
    start = clock.now()
    steps = 0
    try:
        while (elapsed := clock.now() - start) < seconds:
            device.busy_step(min(step, seconds - elapsed))
            steps += 1
            report.progress(min(1.0, (clock.now() - start) / seconds))
    finally:
        device.set_load(0.0)
    return {"seconds": round(clock.now() - start, 3), "steps": steps}


WORKLOADS: dict[str, Callable[[Any, dict[str, Any], Reporter], dict[str, Any]]] = {
    "burn": burn,
}
