"""The desktop app under a long burn-in: event-loop latency and memory.

The real window runs a real simulated 8-GPU run (hgx-h100, real time, telemetry at 10 Hz, eight
worker processes loading the simulated GPUs) through the real worker-thread bridge. When the run
starts, one hour of synthetic history (36,000 samples of 8 GPUs) is fed into the window at once,
so the plots hold a full hour from the first live second; then the run stays live for --minutes.

Measured in the live phase, with the Plots tab showing:
  - event-loop latency: a 10 ms timer probe; how late each tick fires (target: p99 under 50 ms);
  - redraw: the time the window's redraw timer takes (plots from their buffer, tiles);
  - memory: resident set size every 5 s (target: flat after the first minutes).

Run (no display needed):
    python benchmarks/bench_gui.py [--minutes 10] [--size 1920x1080]
Prints one JSON line; record it in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HOUR_SAMPLES = 36_000  # one hour at 10 Hz
PROBE_MS = 10
RSS_EVERY_S = 5


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(q / 100 * len(ordered))) - 1)] if ordered else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10, help="live phase after the hour of history")
    ap.add_argument("--size", default="1920x1080", help="screen (and maximized window) size")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))

    home = tempfile.mkdtemp(prefix="nodeqc-bench-gui-")
    os.environ.update(XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config")
    if not os.environ.get("DISPLAY"):
        screen = Path(home, "screen.json")
        screen.write_text(json.dumps({"screens": [{"name": "bench", "x": 0, "y": 0, "width": width,
                                                   "height": height, "logicalDpi": 96, "dpr": 1}]}))
        os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={screen}"

    import numpy as np
    import psutil
    from PySide6.QtCore import Qt, QTimer

    from nodeqc.backends import simulated_hardware
    from nodeqc.backends.base import REASON_BITS, GpuSample
    from nodeqc.backends.sim.faults import parse_fault
    from nodeqc.gui.app import make_app
    from nodeqc.gui.session import RunSetup, probe
    from nodeqc.gui.window import MainWindow
    from nodeqc.report.keys import load_signer
    from nodeqc.run.events import RunStarted, TelemetrySampled
    from nodeqc.run.runner import RunOptions
    from nodeqc.spec.profile import load_profile

    profile_path = Path(home, "burn-in.toml")
    profile_path.write_text('description = "24 h burn-in"\nextends = "hgx-h100"\n[run]\nburn_s = 86400\n')
    faults = [parse_fault("gpu5:throttle=hw_slowdown")]  # throttle onsets to mark on the plots

    def hardware():
        return simulated_hardware("hgx-h100", faults, time_scale=1.0)

    setup = RunSetup(prepare=lambda ref: (hardware(), load_profile(ref), load_signer(None)),
                     options=lambda hw, profile, signer, operator, ticket: RunOptions(profile, signer, sample_hz=10),
                     profile=str(profile_path))
    app = make_app()
    window = MainWindow(setup, probe(hardware()))
    window.showMaximized()
    proc = psutil.Process()
    # The probes' own records are preallocated, so the memory measured is the app's, not theirs.
    ticks = np.zeros(int(args.minutes * 60_000 / PROBE_MS * 1.2) + 1000)
    redraws = np.zeros(int(args.minutes * 60_000 / window.timer.interval() * 1.2) + 100)
    state: dict = {"live_from": None, "ticks": 0, "redraws": 0, "rss": [], "samples_live": 0, "fill_s": None}

    def history_hour(gpus: list[str]) -> None:
        """One hour of plausible readings before the run's first live sample (t < 0)."""
        rng = np.random.default_rng(0)
        start = time.monotonic()
        for n in range(HOUR_SAMPLES):
            t = (n - HOUR_SAMPLES) / 10
            samples = {}
            for k, subject in enumerate(gpus):
                throttled = subject == "gpu5" and (n // 600) % 2 == 1
                samples[subject] = GpuSample(
                    temp_c=round(62 + 3 * math.sin(n / 900 + k) + rng.normal(0, 0.4), 1),
                    power_w=round(650 + rng.normal(0, 8), 1), power_limit_w=700,
                    sm_clock_mhz=990 if throttled else 1980, util_pct=100, pcie_gen=5, pcie_width=16,
                    reasons=REASON_BITS["hw_slowdown"] if throttled else 0)
            window.on_event(TelemetrySampled(t, samples))
        state["fill_s"] = time.monotonic() - start

    def on_event(event: object) -> None:
        if isinstance(event, RunStarted):
            history_hour([g["subject"] for g in event.gpus])
            state["live_from"] = time.monotonic()
            state["last_tick"] = state["live_from"]
            probe_timer.start()
            rss_timer.start()
            QTimer.singleShot(int(args.minutes * 60_000), stop)
        elif isinstance(event, TelemetrySampled) and state["live_from"] is not None:
            state["samples_live"] += 1

    def tick() -> None:
        now = time.monotonic()
        if state["ticks"] < len(ticks):
            ticks[state["ticks"]] = max(0.0, (now - state["last_tick"]) * 1000 - PROBE_MS)
            state["ticks"] += 1
        state["last_tick"] = now

    def sample_rss() -> None:
        state["rss"].append((round(time.monotonic() - state["live_from"], 1), proc.memory_info().rss / 2**20))

    original_redraw = window.redraw

    def timed_redraw() -> None:
        start = time.perf_counter()
        original_redraw()
        if state["live_from"] is not None and state["redraws"] < len(redraws):
            redraws[state["redraws"]] = (time.perf_counter() - start) * 1000
            state["redraws"] += 1

    def stop() -> None:
        probe_timer.stop()
        rss_timer.stop()
        sample_rss()
        window.worker.abort()

    window.timer.timeout.disconnect()
    window.timer.timeout.connect(timed_redraw)
    window.worker.event.connect(on_event, Qt.ConnectionType.QueuedConnection)  # after the window's own slot
    window.run_done.connect(lambda _outcome: app.quit())
    probe_timer = QTimer()
    probe_timer.setTimerType(Qt.TimerType.PreciseTimer)
    probe_timer.setInterval(PROBE_MS)
    probe_timer.timeout.connect(tick)
    rss_timer = QTimer()
    rss_timer.setInterval(RSS_EVERY_S * 1000)
    rss_timer.timeout.connect(sample_rss)
    QTimer.singleShot(0, window.start)
    app.exec()

    ticks, redraws, rss = ticks[:state["ticks"]].tolist(), redraws[:state["redraws"]].tolist(), state["rss"]
    after_first_minutes = [m for t, m in rss if t >= 120] or [m for _, m in rss]
    print(json.dumps({
        "benchmark": "gui_burn_in", "gpus": 8, "sample_hz": 10, "history_samples": HOUR_SAMPLES,
        "history_fill_s": round(state["fill_s"] or float("nan"), 1), "live_minutes": args.minutes,
        "live_samples": state["samples_live"], "window": f"{window.width()}x{window.height()}",
        "latency_ms": {"p50": round(percentile(ticks, 50), 2), "p99": round(percentile(ticks, 99), 2),
                       "max": round(max(ticks, default=float("nan")), 1), "probes": len(ticks),
                       "over_50": sum(t > 50 for t in ticks)},
        "target_p99_ms": 50,
        "redraw_ms": {"p50": round(statistics.median(redraws), 1) if redraws else None,
                      "p99": round(percentile(redraws, 99), 1), "count": len(redraws)},
        "rss_mib": {"live_start": round(rss[0][1], 1) if rss else None,
                    "at_2_min": round(after_first_minutes[0], 1), "end": round(rss[-1][1], 1) if rss else None,
                    "growth_after_2_min": round(after_first_minutes[-1] - after_first_minutes[0], 1),
                    "max": round(max(m for _, m in rss), 1) if rss else None,
                    "per_minute": [round(m, 1) for t, m in rss[::60 // RSS_EVERY_S]]},
        "plot_samples": window.plots.sample_count(), "plot_rows": window.plots.buffer.rows,
        "samples_per_row": window.plots.buffer.stride, "throttle_markers": len(window.plots.markers),
        "cpus": os.cpu_count(), "python": platform.python_version(),
    }))
    return 0


if __name__ == "__main__":  # the run's worker processes are spawned: they import this module
    sys.exit(main())
