"""Telemetry for the whole run, held in bounded memory: what it saw of each GPU, and the time series.

Memory stays bounded however long the run: per-GPU running summaries (min/mean/max), a capped list
of events (throttle onsets with their reasons, XIDs, loss of a GPU), error counters read at the start
and the end (GpuTelemetry, for the run and for each step's window). The full time series goes to a
gzip-compressed CSV beside the report, flushed as it grows (one gzip member per flush) so a killed run
keeps what it sampled; the report references it by sha256 (SeriesWriter; read back by read_series and
describe_series). The sampler that fills both is nodeqc.work.sampler.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeqc.backends.base import GpuCounters, GpuProcess, GpuSample, decode_reasons
from nodeqc.core.errors import UsageError
from nodeqc.core.na import NA, is_na
from nodeqc.core.safefile import NotAFile, OutputError, create_new, open_regular, write_all
from nodeqc.core.text import is_digits

LOADED_UTIL_PCT = 50  # a GPU at or above this utilisation counts as under load
# NVML's power reading is its mean over the last second on Ampere (but the GA100) and later
# (nvmlDeviceGetPowerUsage), so it trails a load's start by that second. A real H100 SXM5's read 238,
# 359, 536 and 651 W over the first second of stress.power's load, then held 691-703 W from 1.0 s on
# (tests/fixtures/real-2026-11-26/h100-sxm5-quick.telemetry.csv.gz, t 35.055-36.055); the
# figure of all of them, 671.5 W, read the GPU 4 % short of the power it held, and more as fewer
# readings are taken (a clean simulated A100 warned POWER_TARGET_LOW on a loaded CI host, 2026-11-29).
# A load's power figure is of its readings from this many seconds into each stretch of load on (a
# stretch ends at two readings in a row under LOADED_UTIL_PCT).
POWER_SETTLE_S = 1.0
MAX_EVENTS = 200  # per GPU and kind; more are counted, not kept
FAILING_REASONS = ("sw_thermal", "hw_thermal", "hw_slowdown", "power_brake")
SERIES_COLUMNS = ("t_s", "gpu") + GpuSample.FIELDS
# A step's window keeps its samples (not the run's whole telemetry) so that a judge can read a part of
# the step apart (the burn's dtypes, each in its own span: `GpuTelemetry.between`). A full burn of
# 600 s at 4 Hz is 2,400 per GPU; past this many a window keeps counting but no longer keeps them.
WINDOW_SAMPLES_KEPT = 20_000


@dataclass
class Stat:
    """Running min/mean/max of a reading, skipping samples that are not available."""

    count: int = 0
    total: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")

    def add(self, value: Any) -> None:
        if is_na(value):
            return
        v = float(value)
        self.count += 1
        self.total += v
        self.low = min(self.low, v)
        self.high = max(self.high, v)

    @property
    def mean(self) -> Any:
        return self.total / self.count if self.count else NA

    @property
    def min(self) -> Any:
        return self.low if self.count else NA

    @property
    def max(self) -> Any:
        return self.high if self.count else NA

    def to_dict(self) -> dict[str, Any]:
        r = lambda v: None if is_na(v) else round(v, 2)  # noqa: E731
        return {"min": r(self.min), "mean": r(self.mean), "max": r(self.max), "samples": self.count}


@dataclass
class Events:
    """A capped list: the first MAX_EVENTS are kept, the rest counted."""

    kept: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0

    def add(self, event: dict[str, Any]) -> None:
        if len(self.kept) < MAX_EVENTS:
            self.kept.append(event)
        else:
            self.dropped += 1

    def to_dict(self) -> dict[str, Any]:
        return {"events": self.kept, "not_kept": self.dropped}


# The span a long run's PCIe replays are counted over (health.pcie_replay): DCGM's count (80) is for
# one test window of minutes, and a quick run on 8 GPUs takes minutes, so a run up to this long is
# judged by its whole count as DCGM judges a window, and a longer one (a burn-in of hours) by its
# worst span of this length, not by hours of count against a window's limit. nodeqc's choice.
REPLAY_SPAN_S = 600.0


@dataclass
class WorstGrowth:
    """The most a counter grew within any `span_s` of the run, from the readings the sampler takes
    as it goes (every few seconds), in memory bounded by the span. A span runs from the latest
    reading at or before its start, so growth across a gap in the readings (a stalled sampler) is
    never lost: it is counted in a span longer than `span_s`, never in none. A counter that ran
    backwards (the driver reloaded) starts over from its new value. `grown` is all it grew between
    the readings: where it is the run's whole count, every reading of the run was taken here."""

    span_s: float = REPLAY_SPAN_S
    readings: deque = field(default_factory=deque)
    worst: int | None = None
    grown: int = 0
    worst_from_s: float = 0.0
    worst_to_s: float = 0.0
    first_s: float | None = None
    last_s: float = 0.0

    def add(self, t: float, value: Any) -> None:
        if is_na(value):
            return
        if self.readings and value < self.readings[-1][1]:
            self.readings.clear()
        elif self.readings:
            self.grown += value - self.readings[-1][1]
        self.readings.append((t, value))
        self.first_s = t if self.first_s is None else self.first_s
        self.last_s = t
        while len(self.readings) > 1 and self.readings[1][0] <= t - self.span_s:
            self.readings.popleft()
        since, base = self.readings[0]
        if self.worst is None or value - base > self.worst:
            self.worst, self.worst_from_s, self.worst_to_s = value - base, since, t

    @property
    def covered_s(self) -> float:
        return 0.0 if self.first_s is None else self.last_s - self.first_s

    def to_dict(self) -> dict[str, Any]:
        return {"span_s": self.span_s, "worst": self.worst, "grown": self.grown, "from_s": round(self.worst_from_s, 2),
                "to_s": round(self.worst_to_s, 2), "covered_s": round(self.covered_s, 2)}


@dataclass
class GpuTelemetry:
    """What the run saw of one GPU; the health checks judge from this alone."""

    index: int
    samples: int = 0
    loaded_samples: int = 0
    loaded_reason_samples: int = 0  # samples under load whose clock-event reasons were read
    loaded_s: float = 0.0
    stats: dict[str, Stat] = field(default_factory=lambda: {
        k: Stat() for k in ("temp_c", "mem_temp_c", "power_w", "sm_clock_mhz", "mem_clock_mhz", "util_pct")})
    loaded_power_w: Stat = field(default_factory=Stat)
    # The power readings POWER_SETTLE_S or more into a stretch of load: the power the load held.
    held_power_w: Stat = field(default_factory=Stat)
    loaded_sm_clock_mhz: Stat = field(default_factory=Stat)
    loaded_mem_clock_mhz: Stat = field(default_factory=Stat)
    loaded_temp_c: Stat = field(default_factory=Stat)
    power_limit_w: Any = NA
    pcie_loaded_gen: Stat = field(default_factory=Stat)
    pcie_loaded_width: Stat = field(default_factory=Stat)
    pcie_idle_gen: Any = NA
    pcie_idle_width: Any = NA
    throttle_s: dict[str, float] = field(default_factory=dict)
    throttle_counted: list[str] = field(default_factory=list)  # reasons timed by the driver's counters
    throttle_onsets: Events = field(default_factory=Events)
    xids: Events = field(default_factory=Events)
    xids_watched: bool = True  # False where the backend gets no XID events for this GPU
    counters_start: GpuCounters | None = None
    counters_end: GpuCounters | None = None
    counters_start_t: float = 0.0
    counters_end_t: float = 0.0
    counter_first_change: dict[str, float] = field(default_factory=dict)  # when each counter first moved
    # The PCIe replay counter's worst span of a long run, from every counter reading (the ends too).
    pcie_replay_span: WorstGrowth = field(default_factory=WorstGrowth)
    # NVLinks up at the latest counters read when a step's window opened (the run's start): what a
    # slow GPU-to-GPU copy in the step rode on (nodeqc.checks.diagnosis). NA: not read.
    nvlink_active_before: Any = NA
    # The driver's throttle counters read at the bounds of a step's phases (the pulse test's
    # periods): {"t_s", "bound", "period_s", "throttle_ns": reason -> ns, None where not counted}.
    counter_marks: list[dict[str, Any]] = field(default_factory=list)
    lost_at_s: float | None = None
    # The samples themselves, (t, sample), up to `keep_samples` (0: none; a step's window keeps them).
    keep_samples: int = 0
    kept_samples: list[tuple[float, GpuSample]] = field(default_factory=list)
    # Compute processes not nodeqc's own seen on the GPU, by pid (first MAX_EVENTS); None until a
    # listing was had, and stays None where the driver cannot list processes.
    other_processes: dict[int, dict[str, Any]] | None = None
    _prev_t: float | None = None
    _prev_reasons: int = 0
    _loaded_since: float | None = None  # the first reading under load of the stretch under way
    _idle_readings: int = 0  # readings below LOADED_UTIL_PCT since the last under load

    def add(self, t: float, s: GpuSample) -> None:
        dt = 0.0 if self._prev_t is None else max(0.0, t - self._prev_t)
        self._prev_t = t
        self.samples += 1
        if len(self.kept_samples) < self.keep_samples:
            self.kept_samples.append((t, s))
        for name, stat in self.stats.items():
            stat.add(getattr(s, name))
        if not is_na(s.power_limit_w):
            self.power_limit_w = s.power_limit_w
        loaded = not is_na(s.util_pct) and s.util_pct >= LOADED_UTIL_PCT
        if loaded:
            self.loaded_samples += 1
            self.loaded_s += dt
            self.loaded_power_w.add(s.power_w)
            self._idle_readings = 0
            if self._loaded_since is None:
                self._loaded_since = t
            if t - self._loaded_since >= POWER_SETTLE_S:
                self.held_power_w.add(s.power_w)
            self.loaded_sm_clock_mhz.add(s.sm_clock_mhz)
            self.loaded_mem_clock_mhz.add(s.mem_clock_mhz)
            self.loaded_temp_c.add(s.temp_c)
            self.pcie_loaded_gen.add(s.pcie_gen)
            self.pcie_loaded_width.add(s.pcie_width)
        else:
            # Two readings idle in a row end the stretch; one is a blink (a real H200's fp8 read 32 %
            # once mid-span, a host-side check, its power held: real-2026-11-27/h200-sxm-quick), and a
            # utilisation NVML did not give says nothing of it (the 2026-11-29 review).
            self._idle_readings += not is_na(s.util_pct)
            if self._idle_readings >= 2:
                self._loaded_since = None
            self.pcie_idle_gen, self.pcie_idle_width = s.pcie_gen, s.pcie_width
        if not is_na(s.reasons):
            self.loaded_reason_samples += loaded
            reasons = int(s.reasons)
            for name in decode_reasons(reasons):
                self.throttle_s[name] = self.throttle_s.get(name, 0.0) + dt
            new = reasons & ~self._prev_reasons
            interesting = [r for r in decode_reasons(new) if r not in ("gpu_idle", "applications_clocks")]
            if interesting:
                self.throttle_onsets.add({"t_s": round(t, 2), "reasons": interesting,
                                          "temp_c": _json(s.temp_c), "sm_clock_mhz": _json(s.sm_clock_mhz)})
            self._prev_reasons = reasons

    def add_processes(self, t: float, others: list[GpuProcess]) -> None:
        """A listing of the GPU's compute processes, nodeqc's own already left out."""
        seen = self.other_processes if self.other_processes is not None else {}
        for p in others:
            if p.pid in seen:
                seen[p.pid]["last_t_s"] = round(t, 2)
                if not is_na(p.used_bytes):
                    seen[p.pid]["used_bytes"] = max(seen[p.pid]["used_bytes"] or 0, p.used_bytes)
            elif len(seen) < MAX_EVENTS:
                seen[p.pid] = {**p.to_dict(), "first_t_s": round(t, 2), "last_t_s": round(t, 2)}
        self.other_processes = seen

    def count_throttle_from_counters(self) -> None:
        """Where the driver timed a reason itself (start and end counters), its count replaces the
        sampled estimate: exact, and it holds a throttle that no sample landed in."""
        if self.counters_start is None or self.counters_end is None:
            return
        start = self.counters_start.throttle_ns()
        for reason, end_ns in self.counters_end.throttle_ns().items():
            start_ns = start[reason]
            if is_na(end_ns) or is_na(start_ns) or end_ns < start_ns:
                continue
            self.throttle_s[reason] = (end_ns - start_ns) / 1e9
            self.throttle_counted.append(reason)

    def between(self, start_s: float, end_s: float) -> "GpuTelemetry | None":
        """What this window saw from start_s to end_s (the run's clock, as the samples' t): its kept
        samples in that span summed anew, each counting its time since the one before it (the first
        since start_s, so no time outside the span is counted). The power limit is the window's where
        no sample in the span read one, and the other processes are the whole window's: another
        process during the step makes none of its figures the GPU's own. None where the window kept
        no samples (nothing to slice)."""
        return self.within([(start_s, end_s)])

    def within(self, spans: list[tuple[float, float]]) -> "GpuTelemetry | None":
        """What this window saw in these spans together, each as `between` slices one."""
        if not self.kept_samples:
            return None
        part = GpuTelemetry(self.index)
        taken: set[int] = set()  # a sample on the bound two spans share counts once
        for start_s, end_s in sorted(spans):
            part._prev_t = start_s
            part._loaded_since, part._idle_readings = start_s, 0  # a span is its load's own: its start is the stretch's
            for n, (t, s) in enumerate(self.kept_samples):
                if start_s <= t <= end_s and n not in taken:
                    taken.add(n)
                    part.add(t, s)
        if is_na(part.power_limit_w):
            part.power_limit_w = self.power_limit_w
        part.other_processes = self.other_processes
        return part

    def counted_between_marks(self, **where: Any) -> dict[str, float]:
        """Seconds the driver counted for each reason between this window's start and end counter
        marks that carry `where` (e.g. dtype="fp8"): exact whatever the sample rate. Only reasons read
        at both marks, and not run backwards; none where the two marks were not both read."""
        at = {m["bound"]: m["throttle_ns"] for m in self.counter_marks
              if all(m.get(k) == v for k, v in where.items())}
        start, end = at.get("start"), at.get("end")
        if start is None or end is None:
            return {}
        return {r: (end[r] - start[r]) / 1e9 for r in end
                if end[r] is not None and start.get(r) is not None and end[r] >= start[r]}

    def readings_between(self, start_s: float, end_s: float) -> list[GpuSample]:
        """The samples this window kept from start_s to end_s (the run's clock); none where it kept none."""
        return [s for t, s in self.kept_samples if start_s <= t <= end_s]

    @property
    def load_power_w(self) -> Stat:
        """The readings a load's power figure is of: those it held (POWER_SETTLE_S into its stretch),
        or, where there are none (a span too short for a slow sampler), every reading under load."""
        return self.held_power_w if self.held_power_w.count else self.loaded_power_w

    def failing_throttle_s(self) -> float:
        return sum(self.throttle_s.get(r, 0.0) for r in FAILING_REASONS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "loaded_samples": self.loaded_samples,
            "loaded_reason_samples": self.loaded_reason_samples,
            "loaded_s": round(self.loaded_s, 2),
            **{k: v.to_dict() for k, v in self.stats.items()},
            "loaded_power_w": self.loaded_power_w.to_dict(),
            "held_power_w": self.held_power_w.to_dict(),  # a second into each stretch: the power figures'
            "loaded_sm_clock_mhz": self.loaded_sm_clock_mhz.to_dict(),
            "loaded_mem_clock_mhz": self.loaded_mem_clock_mhz.to_dict(),
            "loaded_temp_c": self.loaded_temp_c.to_dict(),
            "power_limit_w": _json(self.power_limit_w),
            "pcie_under_load": {"gen": self.pcie_loaded_gen.to_dict(), "width": self.pcie_loaded_width.to_dict()},
            "pcie_at_idle": {"gen": _json(self.pcie_idle_gen), "width": _json(self.pcie_idle_width)},
            "throttle_s": {k: round(v, 2) for k, v in sorted(self.throttle_s.items())},
            "throttle_counted_by_driver": sorted(self.throttle_counted),
            "throttle_onsets": self.throttle_onsets.to_dict(),
            "xids": self.xids.to_dict(),
            "counters_start": self.counters_start.to_dict() if self.counters_start else None,
            "counters_end": self.counters_end.to_dict() if self.counters_end else None,
            "lost_at_s": self.lost_at_s,
            "counter_first_change_s": self.counter_first_change,
            "pcie_replay_worst_span": self.pcie_replay_span.to_dict(),
            "other_processes": None if self.other_processes is None else list(self.other_processes.values()),
        }


class SeriesWriter:
    """The time-series file: gzip, one complete gzip member per flush (RFC 1952 allows any number,
    one after the other; gzip, zcat, Python's gzip and pandas read them as one stream). A run killed
    with SIGKILL leaves whole members up to its last flush, which every reader takes, and at most one
    member cut short, which only `read_series` recovers. A single gzip stream flushed mid-way has no
    trailer after a kill, and gzip and pandas refuse the whole file."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = create_new(path)  # O_EXCL|O_NOFOLLOW: never through a planted link
        self._pending: list[bytes] = []
        self.lines_written = 0
        # Why the file stopped growing (a full disk): sampling goes on in memory, the checks still
        # judge every sample, and the report says the file holds only the rows before this.
        self.error: str | None = None

    def write_line(self, line: str) -> None:
        if self.error is None:
            self._pending.append((line + "\n").encode())

    def flush(self) -> None:
        if self._pending and self._fd >= 0 and self.error is None:
            lines, self._pending = self._pending, []
            whole = os.lseek(self._fd, 0, os.SEEK_CUR)
            try:
                write_all(self._fd, gzip.compress(b"".join(lines), compresslevel=6, mtime=0), self.path)
            except OutputError as e:
                self.error = str(e)
                try:
                    os.ftruncate(self._fd, whole)  # no member cut short: every reader takes the file
                except OSError:
                    pass
                return
            self.lines_written += len(lines)

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            self.flush()
        finally:
            os.close(self._fd)
            self._fd = -1


# What `show` and read_series read of a time-series file, decompressed: a week at the default 4 Hz on
# 8 GPUs is some 300 MB. A gzip of 16 MB can hold 3 GB (it ran `show` out of memory): refused past this.
MAX_SERIES_BYTES = 1 << 30
MAX_ROW_BYTES = 64 << 10  # a row is some 100 bytes; a "row" far longer is no telemetry
_CHUNK = 1 << 20


class _Inflated:
    """A time-series file decompressed in chunks of at most _CHUNK bytes, every gzip member in
    turn: stops at damage or at a member cut short (`whole` then False), and raises UsageError,
    naming the file, before more than `limit` bytes come out."""

    def __init__(self, path: Path, limit: int):
        self.path, self.limit, self.whole, self.size = path, limit, False, 0

    def __iter__(self) -> Any:
        try:
            fd = open_regular(self.path)
        except NotAFile as e:
            raise UsageError(f"{self.path}: {e}: not a telemetry file") from None
        except OSError as e:
            raise UsageError(f"{self.path}: cannot read telemetry: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            data, inflate, need_input = b"", None, True
            while True:
                if need_input:
                    more = f.read(_CHUNK)
                    if not more:
                        self.whole = inflate is None  # not in the middle of a member
                        return
                    data += more
                if inflate is None:
                    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                try:
                    out = inflate.decompress(data, _CHUNK)
                except zlib.error:
                    return  # damaged beyond this point: keep what came before
                self.size += len(out)
                if self.size > self.limit:
                    raise UsageError(f"{self.path}: holds more than {self.limit >> 20} MiB once decompressed, more "
                                     f"than any run's telemetry (a decompression bomb?): not read")
                if out:
                    yield out
                if inflate.eof:
                    data, inflate = inflate.unused_data, None
                    need_input = not data
                else:
                    data = inflate.unconsumed_tail
                    need_input = not out and not data


def _rows(path: Path, chunks: Any) -> Any:
    """The rows in decompressed chunks; a row torn by a kill (no newline after it) is dropped."""
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        if len(rest) > MAX_ROW_BYTES:
            raise UsageError(f"{path}: a row of more than {MAX_ROW_BYTES} bytes: not a nodeqc telemetry file")
        # Blank lines are no rows: 100 MB of them (a 100 kB file) took half a minute a row at a time.
        for line in filter(None, lines):
            yield line.decode(errors="replace").split(",")


def read_series(path: Path, limit: int = MAX_SERIES_BYTES) -> list[list[str]]:
    """The rows of a time-series file, header first: every gzip member in turn; of a member cut
    short by a kill, what it holds up to the cut (a row torn mid-way is dropped). UsageError, naming
    the file, when it is no regular file or holds more than `limit` bytes decompressed."""
    return list(_rows(path, _Inflated(path, limit)))


def describe_series(path: Path, limit: int = MAX_SERIES_BYTES) -> str:
    """A time-series file for a person (`nodeqc show X.telemetry.csv.gz`): its span and, per GPU, the
    extremes of what was sampled. Also a file cut short by a kill, up to its last flush. Read twice
    in chunks, never whole: first only decompressed, so a bomb is refused before any row is parsed,
    then row by row; memory stays flat however long the run."""
    measured = _Inflated(path, limit)
    for _ in measured:
        pass
    rows = _rows(path, _Inflated(path, limit))
    header = next(rows, None)
    if not header or header[:2] != ["t_s", "gpu"]:
        raise UsageError(f"{path}: not a nodeqc telemetry file (no header t_s,gpu,...)")
    col = {name: n for n, name in enumerate(header)}
    shown = ("temp_c", "power_w", "sm_clock_mhz", "util_pct")
    count, first, last = 0, None, None
    per_gpu: dict[str, list[Any]] = {}  # gpu -> [samples, {column: (min, max)}]
    for r in rows:
        if len(r) != len(header):
            continue
        count += 1
        if _is_float(r[0]):
            t = float(r[0])
            first, last = min(t, first if first is not None else t), max(t, last if last is not None else t)
        if not (is_digits(r[1]) and len(r[1]) <= 3):  # a GPU index: anything else is counted, not listed
            continue
        entry = per_gpu.setdefault(str(int(r[1])), [0, {}])  # "000" is GPU 0, as "0" is
        entry[0] += 1
        for name in shown:
            if name in col and _is_float(r[col[name]]):
                v = float(r[col[name]])
                lo, hi = entry[1].get(name, (v, v))
                entry[1][name] = (min(lo, v), max(hi, v))
    units = {"temp_c": "C", "power_w": "W", "sm_clock_mhz": "MHz", "util_pct": "%"}
    out = [f"nodeqc telemetry: {path.name}" + ("" if measured.whole else
           "  (cut short, as by a killed run: every row up to its last flush)"),
           f"{count} rows" + (f", t = {first:.1f} s to {last:.1f} s" if first is not None else "")]
    for gpu in sorted(per_gpu, key=int):
        samples, spans = per_gpu[gpu]
        said = [f"{n} {spans[n][0]:g}..{spans[n][1]:g} {units[n]}" if n in spans else f"{n} N/A" for n in shown]
        out.append(f"  gpu{gpu}: {samples} samples, {', '.join(said)}")
    return "\n".join(out)


def _is_float(text: str) -> bool:
    """A finite number as nodeqc writes one: float() alone also takes "1_000", "nan" and "inf"."""
    try:
        return "_" not in text and math.isfinite(float(text))
    except ValueError:
        return False


def _json(v: Any) -> Any:
    return None if is_na(v) else v
