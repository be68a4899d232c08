"""Live plots of the run's telemetry: temperature, power, SM clock and utilisation per GPU.

Samples go into a preallocated buffer that keeps the whole run at a resolution that halves as it fills
(memory is fixed however long the burn-in). A timer redraws one plot per tick with setData, from the
buffer reduced to the min and max per pixel column, so a day of 10 Hz samples costs no more to draw
than a minute and no single pause redraws all four.
A GPU that did not answer leaves NaN, drawn as a gap.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from nodeqc.backends.base import REASON_BITS, GpuSample
from nodeqc.core.na import is_na
from nodeqc.report.answer import COLOURS
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import FAILING_REASONS

HISTORY_ROWS = 36_000  # an hour at 10 Hz sample for sample; longer runs at coarser rows (RunBuffer)
PLOT_TICK_MS = 125  # one plot redrawn per tick: each of the four twice a second
PLOT_MIN_HEIGHT = 90  # title, axis and a band of curve: smaller when a failing run's banner needs the room
UNSHOWN_PIXELS = 1000  # the width assumed for a plot not laid out yet
LABEL_FILL = (255, 255, 255, 220)  # behind a limit's label: the plot's background, the curves faint through it
LABEL_PIXELS = 24  # a limit line's label, above its line: the headroom a plot keeps for it
MAX_MARKERS = 500  # throttle onsets kept on the plot
FAILING_MASK = sum(REASON_BITS[r] for r in FAILING_REASONS)

# (GpuSample field, plot title, unit)
SERIES = (("temp_c", "Temperature", "°C"), ("power_w", "Power", "W"),
          ("sm_clock_mhz", "SM clock", "MHz"), ("util_pct", "Utilisation", "%"))


class RunBuffer:
    """The whole run's samples in fixed memory. Each row holds the minimum and maximum of `stride`
    consecutive samples and the time of the first; when the rows are full, neighbouring rows merge
    and the stride doubles. So a plot always spans the whole run, spikes and dips included: a 24-hour
    burn-in at 10 Hz fits 36,000 rows at 3.2 s a row.
    """

    def __init__(self, capacity: int, columns: int):
        self.capacity = capacity - capacity % 2  # rows merge in pairs
        # One row more than the capacity: the row being filled is shown before it is complete.
        self.t = np.full(self.capacity + 1, np.nan)
        self.low = np.full((columns, self.capacity + 1), np.nan, dtype=np.float32)
        self.high = np.full((columns, self.capacity + 1), np.nan, dtype=np.float32)
        self.rows = 0  # complete rows
        self.stride = 1  # samples a row
        self.pending = 0  # samples in the row being filled (index `rows`)
        self.samples = 0

    def append(self, t: float, row: np.ndarray) -> None:
        i = self.rows
        if self.pending == 0:
            self.t[i], self.low[:, i], self.high[:, i] = t, row, row
        else:  # NaN-ignoring: one missing sample does not blank the row
            np.fmin(self.low[:, i], row, out=self.low[:, i])
            np.fmax(self.high[:, i], row, out=self.high[:, i])
        self.pending += 1
        self.samples += 1
        if self.pending == self.stride:
            self.pending, self.rows = 0, self.rows + 1
            if self.rows == self.capacity:
                self._merge_pairs()

    def _merge_pairs(self) -> None:
        half, full = self.capacity // 2, self.capacity
        self.t[:half] = self.t[0:full:2]
        self.low[:, :half] = np.fmin(self.low[:, 0:full:2], self.low[:, 1:full:2])
        self.high[:, :half] = np.fmax(self.high[:, 0:full:2], self.high[:, 1:full:2])
        self.t[half:], self.low[:, half:], self.high[:, half:] = np.nan, np.nan, np.nan
        self.rows, self.stride = half, self.stride * 2

    def window(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(t, low, high) of the rows held, the one being filled included, oldest first: views."""
        n = self.rows + (1 if self.pending else 0)
        return self.t[:n], self.low[:, :n], self.high[:, :n]


def _number(value: Any) -> float:
    return math.nan if is_na(value) else float(value)


def peak_decimate(t: np.ndarray, low: np.ndarray, high: np.ndarray | None, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows reduced to the min and max of about `buckets` runs of samples, in time order: all a plot
    that many pixels wide can show, spikes included. A run with no sample at all stays NaN. `high`
    None: each sample is one value (`low`); fewer samples than buckets are then drawn as they are."""
    size = max(1, len(t) // max(buckets, 1))
    if size < 2 and high is None:
        return t, low
    high = low if high is None else high
    runs = len(t) // size
    skip = len(t) - runs * size  # the oldest few samples that do not fill a run
    times = t[skip:].reshape(runs, size)
    x = np.column_stack([times[:, 0], times[:, -1]]).ravel()
    lows = np.fmin.reduce(low[:, skip:].reshape(len(low), runs, size), axis=2)  # NaN-ignoring
    highs = np.fmax.reduce(high[:, skip:].reshape(len(high), runs, size), axis=2)
    return x, np.stack([lows, highs], axis=2).reshape(len(low), 2 * runs)


# One colour per GPU, far from every other GPU's and from the limit lines' red and amber: eight
# dark or saturated colours (they read on white), chosen for the least CIELAB distance between any two
# of them and the limit colours (38.9; colours 10 apart are told apart at a glance). Hues spaced
# evenly, as before, put gpu2 and gpu3 within 20 of each other. A node of more GPUs takes evenly
# spaced hues for the rest.
GPU_COLOURS = ("#00008b", "#00bfff", "#009988", "#006400", "#bcbd22", "#7570b3", "#aa3377", "#ff00ff")
FAIL_RED = COLOURS["fail"][0]


def gpu_colour(n: int, count: int) -> str:
    if n < len(GPU_COLOURS):
        return GPU_COLOURS[n]
    return pg.intColor(n - len(GPU_COLOURS), hues=max(count - len(GPU_COLOURS), 1), values=1, maxValue=200).name()


class TelemetryPlots(QWidget):
    """Four plots, one curve per GPU in each, with the profile's limits as dashed lines and throttle
    onsets marked on the clock plot."""

    def __init__(self, parent: QWidget | None = None, capacity: int = HISTORY_ROWS):
        super().__init__(parent)
        self.capacity = capacity
        self.subjects: list[str] = []
        self.colours: dict[str, str] = {}
        self.singled_out: set[str] = set()
        self.buffer = RunBuffer(capacity, 0)
        self.markers: deque[tuple[float, float, str]] = deque(maxlen=MAX_MARKERS)
        self._reasons: dict[str, int] = {}
        self._stale: list[str] = []  # plots with samples not drawn yet, next first
        self._shown_markers: list[tuple[float, float, str]] = []
        self.timer = QTimer(self)
        self.timer.setInterval(PLOT_TICK_MS)
        self.timer.timeout.connect(self._redraw_next)
        pg.setConfigOptions(antialias=False, foreground="#222222", background="#ffffff")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        layout.addWidget(self.legend)
        # The plots scroll (they are not the answer) rather than hold the window taller than a
        # 600-pixel screen when a failing run's banner needs the room; otherwise they fill the tab.
        inner = QWidget()
        grid = QGridLayout(inner)
        grid.setContentsMargins(0, 0, 0, 0)
        self.scroll = QScrollArea()
        self.scroll.setWidget(inner)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setMinimumHeight(PLOT_MIN_HEIGHT)
        # Its preferred height (four plots) is no claim on the window: with a legend that wraps, Qt
        # counted the tab at it (477 px where 135 do), and a failing run's banner scrolled its
        # what-to-do away above empty room (the 2026-11-28 review). It takes what is left.
        self.scroll.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        layout.addWidget(self.scroll, 1)
        self.plots: dict[str, pg.PlotItem] = {}
        self.views: list[pg.GraphicsLayoutWidget] = []
        for n, (field, title, unit) in enumerate(SERIES):
            view = pg.GraphicsLayoutWidget()
            view.setMinimumHeight(PLOT_MIN_HEIGHT)
            view.setMinimumWidth(0)  # a row of four fits a 1024-pixel screen's tab: its title does not hold it wider
            plot = view.addPlot(title=f"<b>{title}</b> ({unit})")
            # The title over the whole plot, its axis's width included, not over the curves' box
            # alone: in a crash cart's row of four narrow plots "Temperature (°C)" and, beside a
            # four-digit axis, "SM clock (MHz)" ran past the plot's right edge.
            plot.layout.removeItem(plot.titleLabel)
            plot.layout.addItem(plot.titleLabel, 0, 0, 1, 3)
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.setLabel("bottom", "run time", units="s")
            plot.getAxis("bottom").enableAutoSIPrefix(False)
            self.plots[field] = plot
            self.views.append(view)
            grid.addWidget(view, n // 2, n % 2)
        self.grid = grid
        self.compact = False
        self.curves: dict[tuple[str, str], pg.PlotDataItem] = {}
        self.throttle = pg.ScatterPlotItem(symbol="x", size=14, pen=pg.mkPen("#c4161c", width=3),
                                           brush=None, hoverable=True, tip=lambda x, y, data: data)
        self._y_floor: dict[str, float] = {}
        self.unit = "s"  # of the run's clock, in the throttle markers' tips
        self._ceiling: dict[str, float] = {}  # the highest limit labelled above its line, per plot
        self._labels: list[tuple[pg.InfiniteLine, tuple[str, str]]] = []  # each labelled limit: (full, short)

    def set_compact(self, compact: bool) -> None:
        """A crash cart's screen (1024x600): the four plots in one row, without the time axis's
        title. Two by two, under a failing run's banner, each kept a band of curve some 25 pixels
        tall under its title and axes; in a row each has the tab's whole height."""
        if compact == self.compact:
            return
        self.compact = compact
        for n, view in enumerate(self.views):
            self.grid.removeWidget(view)
            self.grid.addWidget(view, *((0, n) if compact else (n // 2, n % 2)))
        for (_, title, unit), plot in zip(SERIES, self.plots.values(), strict=True):
            plot.titleLabel.opts.pop("size", None)  # back to the window's type (None crashes Qt's paint)
            plot.setTitle(f"<b>{title}</b> ({unit})", **({"size": "9pt"} if compact else {}))
            plot.getAxis("bottom").showLabel(not compact)
        for line, texts in self._labels:  # "limit 87 °C, warn 82" was cut at a narrow plot's edge
            line.label.setFormat(texts[compact])
        self._stale = list(self.plots)

    # ------------------------------------------------------------------ set up for a run

    def configure(self, gpus: list[dict[str, Any]], profile: Profile | None, simulated: bool = False) -> None:
        """New run: one curve per GPU, limit lines from the profile and the GPUs' own limits. A simulated
        node's clock runs faster than the wall's (the banner's elapsed time): the axis says which it is."""
        self.subjects = [g["subject"] for g in gpus]
        self.unit = "sim s" if simulated else "s"
        for plot in self.plots.values():
            plot.setLabel("bottom", "simulated run time" if simulated else "run time", units="s")
            plot.getAxis("bottom").showLabel(not self.compact)  # setLabel shows it again
        self.buffer = RunBuffer(self.capacity, len(SERIES) * len(self.subjects))
        self.markers.clear()
        self._shown_markers = []
        self.throttle.setData([], [])
        self._reasons.clear()
        for plot in self.plots.values():
            plot.clear()
        self.plots["sm_clock_mhz"].addItem(self.throttle)
        self.curves.clear()
        self.colours = {s: gpu_colour(n, len(self.subjects)) for n, s in enumerate(self.subjects)}
        self.singled_out = set()
        for field, plot in self.plots.items():
            for subject, colour in self.colours.items():
                # A 1-pixel pen draws several times faster than a wider one.
                curve = plot.plot(pen=pg.mkPen(colour, width=1), connect="finite", name=subject)
                self.curves[(field, subject)] = curve
        self._legend()
        self._y_floor = {"temp_c": 100.0, "power_w": 100.0, "sm_clock_mhz": 500.0, "util_pct": 105.0}
        self._ceiling = {}
        self._labels = []
        temp = profile.threshold("gpu", "max_temp_c") if profile else None
        if temp:
            warn = f", warn {temp.warn:g}" if temp.warn != temp.fail else ""
            self._limit("temp_c", temp.fail, (f"limit {temp.fail:g} °C{warn}", f"{temp.fail:g} °C"), "#c4161c")
            if warn:
                self._limit("temp_c", temp.warn, ("", ""), "#d08700")
        floor = profile.threshold("gpu", "min_power_fraction") if profile else None
        for value in sorted({g["power_limit_w"] for g in gpus if g.get("power_limit_w")}):
            self._limit("power_w", value, (f"power limit {value:g} W", f"{value:g} W"), "#c4161c")
            if floor:  # the burn must reach this much of the limit
                self._limit("power_w", floor.fail * value,
                            (f"burn floor {floor.fail * value:g} W", f"floor {floor.fail * value:g} W"), "#d08700",
                            above=False)
        for value in sorted({g["max_sm_clock_mhz"] for g in gpus if g.get("max_sm_clock_mhz")}):
            self._limit("sm_clock_mhz", value, (f"max {value:g} MHz", f"{value:g} MHz"), "#555555")
        self.refresh()
        self.timer.start()

    def single_out(self, subject: str) -> None:
        """A GPU a check failed: its curves drawn wider and on top, its legend entry says FAIL, so the
        plots show which GPU the banner names among eight that look alike."""
        if subject not in self.colours or subject in self.singled_out:
            return
        self.singled_out.add(subject)
        for field in self.plots:
            curve = self.curves[(field, subject)]
            curve.setPen(pg.mkPen(self.colours[subject], width=3))
            curve.setZValue(10)
        self._legend()

    def _legend(self) -> None:
        def entry(subject: str) -> str:
            name = f"GPU {subject.removeprefix('gpu')}"  # as the tiles and the banner name it
            failed = f' <span style="color:{FAIL_RED}">FAIL</span>' if subject in self.singled_out else ""
            return (f'<span style="color:{self.colours[subject]}; font-size:14pt">&#9632;</span>&nbsp;'
                    f'<b style="font-size:10pt">{name}{failed}</b>')
        self.legend.setText("  ".join(entry(s) for s in self.subjects))

    def _limit(self, field: str, value: float, texts: tuple[str, str], colour: str, above: bool = True) -> None:
        """A limit's line and its label: (the label, its short form for a crash cart's narrow plots)."""
        text = texts[self.compact]
        # A ceiling's label sits above its line at the left, in headroom kept above the highest
        # limit; a floor's below its line in the middle, where the work holds the curves above it.
        # Each on the plot's white, mostly opaque: the curves cross a floor's label wherever a step
        # leaves the GPUs idle (the HBM and memory tests), and its text was lost in them.
        anchor = (0, 1) if above else (0.5, 0)
        line = pg.InfiniteLine(pos=value, angle=0, pen=pg.mkPen(colour, width=2, style=pg.QtCore.Qt.PenStyle.DashLine),
                               label=text or None, labelOpts={"position": 0.02 if above else 0.5, "color": colour,
                                                              "anchors": [anchor, anchor], "fill": LABEL_FILL})
        self.plots[field].addItem(line)
        if text:
            self._labels.append((line, texts))
        self._y_floor[field] = max(self._y_floor[field], value * 1.22)
        if text and above:
            self._ceiling[field] = max(self._ceiling.get(field, 0.0), value)

    def _headroom(self, field: str, plot: pg.PlotItem) -> float:
        """The top of the y range that leaves the label above the highest limit whole: a fixed share
        of the range cut it off on a 600-pixel screen, where a plot is some 60 pixels tall."""
        ceiling = self._ceiling.get(field)
        pixels = plot.getViewBox().height()
        if not ceiling or pixels <= 0:
            return 0.0
        return ceiling * pixels / max(pixels - LABEL_PIXELS, pixels / 3)

    # ------------------------------------------------------------------ data

    def add(self, t: float, samples: dict[str, GpuSample | None]) -> None:
        """One telemetry event: cheap, called at the sampling rate; drawing waits for the plot timer."""
        if not self.subjects:
            return
        row = np.full(len(SERIES) * len(self.subjects), np.nan, dtype=np.float32)
        for k, subject in enumerate(self.subjects):
            sample = samples.get(subject)
            if sample is None:
                continue
            for f, (field, _, _) in enumerate(SERIES):
                row[f * len(self.subjects) + k] = _number(getattr(sample, field))
            if not is_na(sample.reasons):
                reasons = int(sample.reasons)
                onset = reasons & FAILING_MASK & ~self._reasons.get(subject, 0)
                if onset:
                    names = ", ".join(r for r in FAILING_REASONS if onset & REASON_BITS[r])
                    self.markers.append((t, _number(sample.sm_clock_mhz), f"{subject}: {names} at {t:.0f} {self.unit}"))
                self._reasons[subject] = reasons
        self.buffer.append(t, row)
        self._stale += [f for f in self.plots if f not in self._stale]

    def _redraw_next(self) -> None:
        if self._stale and self.isVisible():
            self.refresh([self._stale[0]])

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        # Shown (their tab chosen): every plot drawn at once for the size it is shown at, once the
        # layout has settled, not one a tick, which left the last of them stale for half a second
        # after the technician looked. Live samples and resizes still redraw one plot a tick.
        self._stale = list(self.plots)
        QTimer.singleShot(0, self._redraw_shown)

    def _redraw_shown(self) -> None:
        if self._stale and self.isVisible():
            self.refresh(list(self._stale))

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._stale = list(self.plots)  # the headroom for the limits' labels depends on the height

    def refresh(self, fields: list[str] | None = None) -> None:
        """Redraw these plots (all by default) from the buffer now."""
        t, low, high = self.buffer.window()
        merged = self.buffer.stride > 1  # rows are ranges of samples, not single samples
        n = len(self.subjects)
        for f, (field, _, _) in enumerate(SERIES):
            if fields is not None and field not in fields:
                continue
            if field in self._stale:
                self._stale.remove(field)
            plot = self.plots[field]
            pixels = int(plot.getViewBox().width())
            span = slice(f * n, (f + 1) * n)
            x, rows = peak_decimate(t, low[span], high[span] if merged else None,
                                    pixels if pixels >= 100 else UNSHOWN_PIXELS)
            for k, subject in enumerate(self.subjects):
                self.curves[(field, subject)].setData(x, rows[k])
            top = float(np.fmax.reduce(rows, axis=None)) if rows.size else math.nan
            plot.setYRange(0, max(self._y_floor.get(field, 1.0), self._headroom(field, plot),
                                  0 if math.isnan(top) else top * 1.08), padding=0)
            if len(t):
                plot.setXRange(t[0], max(t[-1], t[0] + 10), padding=0.01)
            if field == "sm_clock_mhz":
                oldest = t[0] if len(t) else math.inf
                shown = [m for m in self.markers if m[0] >= oldest and not math.isnan(m[1])]
                if shown != self._shown_markers:  # re-setting the same points still costs pyqtgraph memory
                    self._shown_markers = shown
                    self.throttle.setData([m[0] for m in shown], [m[1] for m in shown], data=[m[2] for m in shown])

    def sample_count(self) -> int:
        return self.buffer.samples
