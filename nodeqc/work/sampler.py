"""The run's telemetry sampler: every GPU sampled in the background at a steady rate, XIDs waited for
on a thread of their own, each sample added to the run's and every open window's GpuTelemetry and
written to the time-series file (nodeqc.work.telemetry); stopped, it gives the run's TelemetrySummary.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from nodeqc.backends.base import Clock, GpuCounters, GpuInfo, GpuManagement, GpuProcess, GpuSample
from nodeqc.core.errors import GpuLostError
from nodeqc.core.safefile import OutputError, claim
from nodeqc.core.na import is_na
from nodeqc.work.telemetry import SERIES_COLUMNS, WINDOW_SAMPLES_KEPT, GpuTelemetry, SeriesWriter

FLUSH_EVERY_S = 2.0  # real seconds between flushes of the time-series file: a killed run keeps what came before
PROCESS_POLL_S = 1.0  # seconds on the run's clock between listings of the GPUs' compute processes
# NVML's utilisation is the share of time a kernel ran over its last sample period, between 1/6 s
# and 1 s depending on the product (nvmlDeviceGetUtilizationRates): a load reads as one up to 1 s
# after it starts.
UTIL_WINDOW_S = 1.0
# The most sample rounds a real second under a compressed clock (the simulated node's): a round of
# eight simulated GPUs costs 0.4 ms of CPU (2026-11-28, this machine), so 40 a second is 1.6% of a
# core, and a clock compressed ten times is sampled at a real GPU's 4 Hz of its own seconds.
MAX_REAL_HZ = 40.0
POLL_GAPS_KEPT = 8  # sample rounds whose spacing says how fast the sampler really goes


@dataclass
class TelemetrySummary:
    gpus: dict[int, GpuTelemetry]
    duration_s: float
    sample_hz: float
    series_file: str | None = None
    series_sha256: str | None = None
    series_rows: int = 0
    series_error: str | None = None  # why the file holds fewer rows than were sampled (disk full)

    def to_dict(self) -> dict[str, Any]:
        return {
            "duration_s": round(self.duration_s, 2),
            "sample_hz": self.sample_hz,
            "series": {"file": self.series_file, "sha256": self.series_sha256, "rows": self.series_rows,
                       "columns": list(SERIES_COLUMNS),
                       **({"incomplete": self.series_error} if self.series_error else {})} if self.series_file else None,
            "gpus": {f"gpu{i}": g.to_dict() for i, g in sorted(self.gpus.items())},
        }


SampleFn = Callable[[float, dict[int, GpuSample | None]], None]


class TelemetrySampler:
    """Samples every GPU at `hz` (real time) on a background thread, and waits for XIDs on another."""

    def __init__(self, mgmt: GpuManagement, gpus: list[GpuInfo], clock: Clock, t0: float, hz: float,
                 series_path: Path | None, on_sample: SampleFn | None = None,
                 own_pids: Callable[[], set[int]] | None = None):
        self.mgmt = mgmt
        self.indices = [g.index for g in gpus if not g.lost]
        self.clock = clock
        self.t0 = t0
        # Rounds a real second: `hz` a second of the run's clock, as on a real GPU, under a compressed
        # clock too, up to MAX_REAL_HZ. At 4 Hz of real time a simulated node at ten times compression
        # was sampled ten times more sparsely than a real GPU (0-1 samples in each of the pulse's 2 s
        # periods against 8), and a GPU whose power braked in the 20 ms period passed 2 runs in 3.
        self.scale = float(getattr(clock, "scale", 1.0))  # 1 on a real GPU's clock
        self.real_hz = min(hz * self.scale, max(hz, MAX_REAL_HZ))
        self.hz = self.real_hz / self.scale  # samples a second of the run's clock: what the report says
        self.series_path = series_path
        self.on_sample = on_sample
        self.own_pids = own_pids or (lambda: set())
        self._processes_at = float("-inf")
        self.watch = {g.index: GpuTelemetry(g.index, xids_watched=mgmt.xids_watched(g.index)) for g in gpus}
        for g in gpus:
            if g.lost:
                self.watch[g.index].lost_at_s = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._series: Any = None
        self._last_flush = 0.0
        self._last_counters: dict[int, GpuCounters] = {}
        self._windows: dict[str, dict[int, GpuTelemetry]] = {}
        self._releases: dict[str, tuple[dict[int, Path], Callable[[GpuTelemetry], bool]]] = {}
        self._round_starts: deque[float] = deque(maxlen=POLL_GAPS_KEPT + 1)  # time.monotonic()
        self._stopped_at: float | None = None  # time.monotonic() at stop: no round is under way after it

    def now(self) -> float:
        return self.clock.now() - self.t0

    def poll_period_s(self) -> float:
        """Real seconds between sample rounds as the sampler achieves them: 1/hz, or longer where NVML
        answers slowly (many GPUs, a driver in trouble) or the CPU starves the thread. The longest
        of the last few gaps, the round under way included (until the sampler stopped: its pace is
        then fixed)."""
        starts = list(self._round_starts)
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        if starts:
            gaps.append((self._stopped_at or time.monotonic()) - starts[-1])
        return max([1.0 / self.real_hz] + gaps)

    def wall_s_to_see(self, samples: int, settle_s: float = 0.0) -> float:
        """Real seconds a load must last for telemetry to take `samples` readings of it under load,
        `settle_s` of the run's clock after its first (the power figure's: telemetry.POWER_SETTLE_S).
        NVML's utilisation window is the GPU's, on the run's clock: a simulated GPU's passes `scale`
        times faster than real time (it was counted as a real second, which held each step of the
        twin 10 s of its clock where the real steps took 1.5-2: the 2026-11-28 fidelity review).
        One round more than the samples: the round under way as the load starts may read it idle.
        Until the sampler has timed a few rounds its pace is a guess, and a whole real second more
        stands for what it does not know yet (a slow NVML at the first step)."""
        known = len(self._round_starts) > POLL_GAPS_KEPT
        window = UTIL_WINDOW_S / self.scale if known else UTIL_WINDOW_S
        return window + settle_s / self.scale + (samples + 1) * self.poll_period_s()

    def open_window(self, name: str) -> None:
        """Start collecting what telemetry sees during one step of the work, apart from the run."""
        with self._lock:
            self._windows[name] = {i: GpuTelemetry(i, keep_samples=WINDOW_SAMPLES_KEPT) for i in self.indices}
            for i, window in self._windows[name].items():
                if i in self._last_counters:
                    window.nvlink_active_before = self._last_counters[i].nvlink_active

    def close_window(self, name: str) -> dict[int, GpuTelemetry]:
        with self._lock:
            self._releases.pop(name, None)
            return self._windows.pop(name, {})

    def release_when(self, name: str, files: dict[int, Path], seen: Callable[[GpuTelemetry], bool]) -> None:
        """Make each GPU's file once window `name` has `seen` what its step needs of that GPU: its
        worker holds the load until then (workloads.plain_load's release file). A sampler the host
        starved of CPU took too few readings of a load timed from its pace before (the 2026-11-29
        review: four simulated GPUs ERROR POWER_LOAD_NOT_REACHED beside four busy loops)."""
        with self._lock:
            self._releases[name] = (dict(files), seen)
            self._release()

    def _release(self) -> None:
        """Under the lock: the release files now due."""
        for name, (files, seen) in self._releases.items():
            window = self._windows.get(name, {})
            for i in [i for i in files if i in window and seen(window[i])]:
                try:
                    claim(files.pop(i))
                except (OutputError, OSError):
                    pass  # its directory gone: the worker's own bound ends its load

    def mark_counters(self, i: int, mark: dict[str, Any]) -> None:
        """Read GPU i's throttle counters now and keep the reading, with `mark` (where in the step
        it was taken), in every open window: time the driver counted between two marks belongs to
        what the GPU did between them, however short and whatever the sample rate."""
        if i not in self.watch or self.watch[i].lost_at_s is not None:
            return
        try:
            counted = self.mgmt.throttle_counters(i)
        except GpuLostError:
            self._mark_lost(i)
            return
        reading = {"t_s": round(self.now(), 3), **mark,
                   "throttle_ns": {r: None if is_na(ns) else int(ns) for r, ns in counted.items()}}
        with self._lock:
            for window in self._windows.values():
                if i in window:
                    window[i].counter_marks.append(reading)

    def start(self) -> None:
        for i in self.indices:
            self.watch[i].counters_start = self._read_counters(i)
            self.watch[i].counters_start_t = self.now()
        if self.series_path is not None:
            self._series = SeriesWriter(self.series_path)
            self._series.write_line(",".join(SERIES_COLUMNS))
        self._threads = [threading.Thread(target=self._sample_loop, name="nodeqc-telemetry", daemon=True),
                         threading.Thread(target=self._xid_loop, name="nodeqc-xid", daemon=True)]
        for t in self._threads:
            t.start()

    def stop(self) -> TelemetrySummary:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)
        self._stopped_at = time.monotonic()
        for i in self.indices:
            end = self._read_counters(i)
            self.watch[i].counters_end = end or self._last_counters.get(i)
            if end is not None:
                self.watch[i].counters_end_t = self.now()
            self.watch[i].count_throttle_from_counters()
        digest, rows, error = None, 0, None
        if self._series is not None:
            with self._lock:
                self._series.close()
            digest = hashlib.sha256(self.series_path.read_bytes()).hexdigest()
            rows, error = max(0, self._series.lines_written - 1), self._series.error  # less the header
        return TelemetrySummary(
            gpus=self.watch, duration_s=self.now(), sample_hz=self.hz,
            series_file=self.series_path.name if self.series_path else None,
            series_sha256=digest, series_rows=rows, series_error=error)

    def _read_counters(self, i: int) -> GpuCounters | None:
        try:
            counters = self.mgmt.counters(i)
        except GpuLostError:
            self._mark_lost(i)
            return None
        self._last_counters[i] = counters
        self.watch[i].pcie_replay_span.add(self.now(), counters.pcie_replay)
        start = self.watch[i].counters_start
        if start is not None:
            for name, value in counters.to_dict().items():
                if value != getattr(start, name) and not is_na(value) and name not in self.watch[i].counter_first_change:
                    self.watch[i].counter_first_change[name] = round(self.now(), 2)
        return counters

    def _mark_lost(self, i: int) -> None:
        with self._lock:
            w = self.watch[i]
            if w.lost_at_s is None:
                w.lost_at_s = round(self.now(), 2)

    def sample_once(self) -> dict[int, GpuSample | None]:
        t = self.now()
        readings: dict[int, GpuSample | None] = {}
        # Each GPU's reading is timed when it came back, not when the round began: GPUs are read
        # one after another, and a reading timed before the earlier GPUs' (a host stalled between)
        # could show a state that began after its time, such as a pulse period's throttle placed
        # before the period started (a suite flake, 2026-11-28: gpu2's brake onset stamped before
        # its 20 ms span at ten times compression, so the pulse test did not see it).
        read_at: dict[int, float] = {}
        for i in self.indices:
            if self.watch[i].lost_at_s is not None:
                readings[i] = None
                continue
            try:
                readings[i] = self.mgmt.sample(i)
                read_at[i] = self.now()
            except GpuLostError:
                self._mark_lost(i)
                readings[i] = None
        others = self._other_processes(readings)
        with self._lock:
            for i, s in readings.items():
                if s is not None:
                    self.watch[i].add(read_at[i], s)
                    for window in self._windows.values():
                        window[i].add(read_at[i], s)
                    self._write_row(read_at[i], i, s)
            for i, procs in others.items():
                self.watch[i].add_processes(t, procs)
                for window in self._windows.values():
                    window[i].add_processes(t, procs)
            self._release()
        if self.on_sample:
            self.on_sample(t, readings)
        return readings

    def _other_processes(self, readings: dict[int, GpuSample | None]) -> dict[int, list[GpuProcess]]:
        """Every PROCESS_POLL_S: each answering GPU's compute processes that are not nodeqc's own."""
        now = self.clock.now()  # the run's clock: a compressed simulated run lists them as often per step
        if now - self._processes_at < PROCESS_POLL_S:
            return {}
        self._processes_at = now
        own: set[int] | None = None  # asked only when some GPU lists a process: a scan of /proc
        out = {}
        for i, s in readings.items():
            if s is None:
                continue
            try:
                listed = self.mgmt.processes(i)
            except GpuLostError:
                self._mark_lost(i)
                continue
            if is_na(listed):
                continue
            if listed and own is None:
                own = self.own_pids()
            out[i] = [p for p in listed if p.pid not in (own or set())]
        return out

    def _sample_loop(self) -> None:
        period = 1.0 / self.real_hz
        next_at = time.monotonic()
        # Re-read counters every ~5 s of the run's clock: a GPU lost later keeps them.
        counters_every = max(1, int(self.real_hz * 5 / self.scale))
        n = 0
        while not self._stop.is_set():
            self._round_starts.append(time.monotonic())
            self.sample_once()
            n += 1
            if n % counters_every == 0:
                for i in self.indices:
                    if self.watch[i].lost_at_s is None:
                        self._read_counters(i)
            next_at += period
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _xid_loop(self) -> None:
        while not self._stop.is_set():
            for event in self.mgmt.wait_xids(0.5, self.clock):
                if event.gpu in self.watch:
                    with self._lock:
                        self.watch[event.gpu].xids.add({"t_s": round(event.t - self.t0, 2), "code": event.code})

    def _write_row(self, t: float, i: int, s: GpuSample) -> None:
        if self._series is None:
            return
        values = [f"{t:.3f}", str(i)] + ["" if is_na(v := getattr(s, f)) else str(v) for f in GpuSample.FIELDS]
        self._series.write_line(",".join(values))
        now = time.monotonic()
        if now - self._last_flush > FLUSH_EVERY_S:
            self._series.flush()
            self._last_flush = now
