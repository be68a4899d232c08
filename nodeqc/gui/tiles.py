"""One tile per GPU: who it is, what it reads now, and what the engine has found about it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from nodeqc.backends.base import GpuSample
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.na import is_na
from nodeqc.gui.style import badge_css
from nodeqc.gui.widgets import ElidedLabel, plain, tip
from nodeqc.report.answer import WORDS
from nodeqc.work.telemetry import LOADED_UTIL_PCT


def _badge(label: QLabel, state: str, size: int = 10) -> None:
    css = badge_css(state) + f"font-size: {size}pt; padding: 1px 5px;"
    if label.styleSheet() != css:  # restyling is costly; live readings arrive several times a second
        label.setStyleSheet(css)


def _shown(value: Any, fmt: str = "{:.0f}") -> str:
    return "–" if value is None or is_na(value) else fmt.format(value)


PAST_COLOUR = "#5f6773"  # grey: a reading that is no longer live
TILE_MIN_WIDTH = 355  # the longest readings fit; two columns of tiles and the tabs fit 1366 pixels
TILE_SPACING = 6
# Type sizes (pt) of a tile's title, verdict badge, readings and link badge: in full, and dense where
# the full tiles would not fit their room (an HGX node's eight tiles at 1366x768 or a crash cart's
# 1024x600 showed 2.5 to 3.3 of eight; dense, they show six to eight).
FULL_PT = {"title": 16, "badge": 13, "reading": 13, "link": 10}
DENSE_PT = {"title": 13, "badge": 11, "reading": 11, "link": 9}


class GpuTile(QFrame):
    def __init__(self, gpu: dict[str, Any], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tile")
        self.gpu = gpu
        self.subject: str = gpu["subject"]
        self.results: list[CheckResult] = []
        self.running = self.aborted = False
        self.current: str | None = None  # the check now working on this GPU
        self.fraction: float | None = None
        self.loaded_link: tuple[Any, Any] | None = None  # PCIe (gen, width) last seen under load
        self.lost = False
        self.dense = False
        self.pt = FULL_PT
        self.link_text = self.link_short = ""
        self.link_state = "idle"
        self._full_height: int | None = None

        self.title = QLabel(f"GPU {self.subject.removeprefix('gpu')}")
        self.bus = plain(QLabel(str(gpu.get("bus_id"))))
        self.badge = QLabel()
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.badge.setMinimumWidth(96)
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addSpacing(6)
        header.addWidget(self.bus)
        header.addStretch(1)
        header.addWidget(self.badge)

        name = str(gpu.get("name") or "unknown model").removeprefix("NVIDIA ")
        self.identity = plain(QLabel(f"{name} · S/N {gpu.get('serial') or '–'}"))
        self.identity.setStyleSheet("color: #333a44; font-size: 9pt;")

        self.temp, self.power, self.clock = QLabel(), QLabel(), QLabel()
        # After a run the readings stop where the run left them (no sampler runs between runs): said
        # so, or a technician reads "476 / 700 W" beside PASS as a GPU still under load.
        self.when = QLabel("last:")
        self.when.setStyleSheet(f"font-size: 9pt; color: {PAST_COLOUR};")
        self.when.setToolTip("The last reading, taken as the run ended; not live.")
        self.when.hide()
        self.sampled = False
        readings = QHBoxLayout()
        readings.addWidget(self.when)
        for label in (self.temp, self.power, self.clock):
            readings.addWidget(label)
            readings.addStretch(1)

        self.pcie = QLabel()
        self.ecc = QLabel("ECC –")
        self.xid = QLabel("XID –")
        self.activity = ElidedLabel()
        markers = self.markers = QHBoxLayout()
        markers.addWidget(self.ecc)
        markers.addWidget(self.xid)
        markers.addWidget(self.activity, 1)
        for label in (self.ecc, self.xid, self.activity):
            label.setStyleSheet("font-size: 9pt;")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.identity)
        layout.addLayout(readings)
        self.link_row = QHBoxLayout()
        self.link_row.addWidget(self.pcie)
        self.link_row.addStretch(1)
        layout.addLayout(self.link_row)
        layout.addLayout(markers)
        self._style()
        self.show_sample(None)
        self._refresh()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        # A long reading squeezes its own line instead of widening the window.
        return QSize(TILE_MIN_WIDTH, super().minimumSizeHint().height())

    # ------------------------------------------------------------------ full or dense

    def full_height(self) -> int:
        """The tile's height in full (five lines), whichever it shows now."""
        if not self.dense or self._full_height is None:
            self.layout().activate()
            self._full_height = self.sizeHint().height()
        return self._full_height

    def set_dense(self, dense: bool) -> None:
        """Dense: three lines in smaller type. The model and serial go to the tile's tooltip, the
        PCIe link joins the ECC and XID marks; the GPU's number, bus id, verdict and readings stay."""
        if dense == self.dense:
            return
        self.full_height()  # measured while still full
        self.dense = dense
        self.pt = DENSE_PT if dense else FULL_PT
        self.identity.setVisible(not dense)
        (self.link_row if dense else self.markers).removeWidget(self.pcie)
        if dense:
            self.markers.insertWidget(0, self.pcie)
        else:
            self.link_row.insertWidget(0, self.pcie)
        self.layout().setContentsMargins(8, 2 if dense else 4, 8, 2 if dense else 4)
        self.setToolTip(tip(self.identity.text()) if dense else "")
        self._style()
        self._refresh()

    def _style(self) -> None:
        self.title.setStyleSheet(f"font-size: {self.pt['title']}pt; font-weight: bold;")
        self.badge.setStyleSheet(badge_css(self.state) + f"font-size: {self.pt['badge']}pt;")
        past = not self.running and self.sampled
        for label in (self.temp, self.power, self.clock):
            label.setStyleSheet(f"font-size: {self.pt['reading']}pt; font-weight: bold;"
                                + (f"color: {PAST_COLOUR};" if past else ""))
        self._link(self.link_text, self.link_state, self.link_short)

    def _link(self, text: str, state: str, short: str | None = None) -> None:
        """The link's badge: `short` where the tile is dense (beside the ECC and XID marks), the
        whole text then in its tooltip."""
        self.link_text, self.link_short, self.link_state = text, short or text, state
        self.pcie.setText(self.link_short if self.dense else text)
        self.pcie.setToolTip(tip(text) if self.dense and short else "")
        _badge(self.pcie, state, self.pt["link"])
        self._give_way()

    # ------------------------------------------------------------------ what the engine says

    @property
    def verdict(self) -> Verdict | None:
        """The tile's summary of the engine's verdicts on this GPU: the worst, where a skipped check
        does not outweigh a pass (an H100 skips page retirement by design)."""
        verdicts = [r.verdict for r in self.results]
        judged = [v for v in verdicts if v is not Verdict.SKIP]
        if judged:
            return Verdict.worst(judged)
        return Verdict.SKIP if verdicts else None

    @property
    def state(self) -> str:
        verdict = self.verdict
        if verdict is not None and verdict.blocks_qualification:
            return verdict.value
        if self.running:
            return "running"
        if self.aborted:  # a run cut short is no pass of this GPU, whatever it passed before the abort
            return "aborted"
        return verdict.value if verdict is not None else "idle"

    def set_running(self, running: bool, aborted: bool = False) -> None:
        """Running, or not; `aborted`: the run ended cut short (the 2026-11-28 review: the tiles said
        PASS under the ABORTED banner)."""
        self.running, self.aborted = running, aborted and not running
        if not running:
            self.current, self.fraction = None, None
        past = not running and self.sampled
        self.when.setVisible(past)
        for label in (self.temp, self.power, self.clock):
            label.setToolTip(self.when.toolTip() if past else "")
        self._style()
        self._refresh()

    def check_started(self, name: str) -> None:
        self.current, self.fraction = name, None
        self._refresh()

    def check_progress(self, name: str, fraction: float) -> None:
        self.current, self.fraction = name, fraction
        self._refresh()

    def check_finished(self, result: CheckResult) -> None:
        self.results.append(result)
        if result.name == self.current:
            self.current, self.fraction = None, None
        if result.name == "health.ecc":
            self._marker(self.ecc, "ECC", result, result.key_figure)
        elif result.name == "health.xid":
            codes = ", ".join(str(e["code"]) for e in result.evidence.get("xids", []))
            self._marker(self.xid, "XID", result, codes)
        self._refresh()

    def _marker(self, label: QLabel, what: str, result: CheckResult, detail: str) -> None:
        label.setProperty("verdict", result.verdict.value)
        word = WORDS[result.verdict.value]
        label.setText(f"{what} {word}" + (f" {detail}" if detail and result.verdict is not Verdict.PASS else ""))
        _badge(label, result.verdict.value, size=9)

    def _refresh(self) -> None:
        state = self.state
        if self.property("state") != state:
            self.setProperty("state", state)
            self.style().unpolish(self)
            self.style().polish(self)
            self.badge.setText(WORDS[state])
            self.badge.setStyleSheet(badge_css(state) + f"font-size: {self.pt['badge']}pt;")
        failed = [r for r in self.results if r.verdict.blocks_qualification]
        self._give_way()
        if failed:
            first = failed[0]
            # Words, not a bare code ("PCIE_WIDTH +1" read as nothing at the rack): the first finding's
            # message, the count in front where the label's elision cannot cut it; all in the tooltip.
            count = f"{len(failed)} failed: " if len(failed) > 1 else ""
            self.activity.setFullText(f"{count}{first.message} [{first.code}]")
            self.activity.setToolTip(tip("\n".join(f"{r.name}: {r.message}" for r in failed)))
        elif self.current:
            progress = f" {self.fraction:.0%}" if self.fraction is not None else ""
            self.activity.setFullText(f"{self.current}{progress}")
        else:
            self.activity.setFullText("")

    def _give_way(self) -> None:
        """Dense, a failed tile's passing marks (link at max, ECC and XID PASS) give their room to
        its failure's words: beside them a power-capped GPU's read "po…" at 1366x768 and 1024x600
        (the 2026-11-29 screenshots), its failure only in a tooltip a crash cart cannot show."""
        quiet = self.dense and any(r.verdict.blocks_qualification for r in self.results)
        for label, state in ((self.pcie, self.link_state), (self.ecc, self.ecc.property("verdict")),
                             (self.xid, self.xid.property("verdict"))):
            label.setVisible(not (quiet and state == "pass"))

    # ------------------------------------------------------------------ live readings

    def show_sample(self, sample: GpuSample | None) -> None:
        if sample is None:
            for label in (self.temp, self.power, self.clock):
                label.setText("–")
            if self.lost:
                self._link("NOT ANSWERING", "fail")
            else:
                self._link("PCIe –", "idle")
            return
        self.sampled = True
        limit = sample.power_limit_w if not is_na(sample.power_limit_w) else self.gpu.get("power_limit_w")
        self.temp.setText(f"{_shown(sample.temp_c)} °C")
        self.power.setText(f"{_shown(sample.power_w)} / {_shown(limit)} W")
        self.clock.setText(f"{_shown(sample.sm_clock_mhz)} MHz")
        if not is_na(sample.util_pct) and sample.util_pct >= LOADED_UTIL_PCT:
            self.loaded_link = (sample.pcie_gen, sample.pcie_width)
        self._show_link(sample)

    def mark_lost(self) -> None:
        self.lost = True
        self.show_sample(None)

    def _show_link(self, sample: GpuSample) -> None:
        """Green at the GPU's maximum under load, red downtrained under load, grey until the GPU has
        been seen working (links downtrain at idle by design, so idle says nothing)."""
        max_gen, max_width = self.gpu.get("pcie_max_gen"), self.gpu.get("pcie_max_width")
        if self.loaded_link is None:
            link = f"Gen{_shown(sample.pcie_gen)} x{_shown(sample.pcie_width)} idle"
            self._link(f"PCIe {link}", "idle", link)
            return
        gen, width = self.loaded_link
        link = f"Gen{_shown(gen)} x{_shown(width)}"
        if max_gen is None or max_width is None or is_na(gen) or is_na(width):
            self._link(f"PCIe {link} under load", "idle", f"{link} loaded")
        elif gen >= max_gen and width >= max_width:
            self._link(f"PCIe {link} at max", "pass", f"{link} at max")
        else:
            best = [f"Gen{max_gen}"] if gen < max_gen else []
            best += [f"x{max_width}"] if width < max_width else []
            down = ([f"Gen{gen}"] if gen < max_gen else []) + ([f"x{width}"] if width < max_width else [])
            self._link(f"PCIe {link} DOWNTRAINED (max {' '.join(best)})", "fail", f"{' '.join(down)} DOWNTRAINED")


class TileArea(QScrollArea):
    """The tiles in a grid of `columns`; it scrolls (vertically only) when they do not fit."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.tiles: dict[str, GpuTile] = {}
        self.columns = 2
        self.empty = ""
        self.revealed: str | None = None  # the tile kept in view (the first that failed), if any
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Its preferred height (every tile in full) is no claim on the window: beside a tab whose text
        # wraps, Qt counted the body at it, and a failing run's banner got less than it was fitted to,
        # cut at its frame (the 2026-11-28 review). The tiles scroll, or go dense (fit).
        self.set_above(False)
        self._lay_out()

    def set_above(self, above: bool) -> None:
        """Above the tabs the tiles' height is their own (fit sets it): a box layout counted an
        Ignored height as none and laid the tabs over the tiles (1920x1080, the 2026-11-28 GUI
        review); beside them it is Ignored, as said above."""
        policy, wanted = self.sizePolicy(), QSizePolicy.Policy.Fixed if above else QSizePolicy.Policy.Ignored
        if policy.verticalPolicy() != wanted:  # a change only: each asks the window for a new layout
            policy.setVerticalPolicy(wanted)
            self.setSizePolicy(policy)

    def set_gpus(self, gpus: list[dict[str, Any]], empty: str) -> None:
        """New tiles (the old ones go with the old grid); `empty` is said when there are none."""
        self.tiles = {g["subject"]: GpuTile(g) for g in gpus}
        self.empty = empty
        self.revealed = None
        self._lay_out()

    def set_columns(self, columns: int, above: bool = False) -> None:
        """`columns` of tiles, above the tabs or beside them (set_above)."""
        self.set_above(above)
        if columns != self.columns:
            self.columns = columns
            self._lay_out()

    def _lay_out(self) -> None:
        inner = QWidget()
        grid = QGridLayout(inner)
        grid.setContentsMargins(0, 0, 4, 0)
        grid.setSpacing(TILE_SPACING)
        for n, tile in enumerate(self.tiles.values()):
            grid.addWidget(tile, n // self.columns, n % self.columns)
        if not self.tiles:
            empty = QLabel(self.empty)
            empty.setWordWrap(True)
            empty.setStyleSheet("font-size: 13pt; color: #c4161c;")
            grid.addWidget(empty, 0, 0)
        grid.setRowStretch(grid.rowCount(), 1)
        self.setWidget(inner)  # deletes the previous grid widget, and any tile still in it
        if self.revealed:
            QTimer.singleShot(0, self._reveal)  # once the new grid has its size

    def reveal(self, subject: str) -> None:
        """Keep this GPU's tile in view: on a small screen the tiles scroll, and the one that failed
        may be below the fold. It stays in view as the window or the grid's columns change."""
        self.revealed = subject
        self._reveal()
        QTimer.singleShot(0, self._reveal)

    def _reveal(self) -> None:
        tile = self.tiles.get(self.revealed or "")
        if tile is not None and self.widget() is tile.parentWidget():
            self.widget().layout().activate()
            self.ensureWidgetVisible(tile, 0, TILE_SPACING)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if self.revealed:
            self._reveal()

    def fit(self, above: int | None) -> None:
        """Dense tiles where the full ones in the grid's rows are taller than their room, full
        otherwise: decided on the full tiles' heights, so the choice does not swing as the dense ones
        free room. `above`: the tiles are above the tabs, this tall at most (their own height then
        follows); None: beside them, in the column's height."""
        tiles = list(self.tiles.values())
        if not tiles:
            return
        room = self.viewport().height() if above is None else above
        rows = -(-len(tiles) // self.columns)
        full = rows * max(t.full_height() for t in tiles) + (rows - 1) * TILE_SPACING
        dense = full > room
        if any(t.dense != dense for t in tiles):
            for tile in tiles:
                tile.set_dense(dense)
            if self.revealed:
                QTimer.singleShot(0, self._reveal)  # its place in the grid moved
        if above is not None:
            self.setFixedHeight(min(self.content_height(), above))

    def width_for(self, columns: int) -> int:
        return columns * TILE_MIN_WIDTH + (columns - 1) * TILE_SPACING + self.verticalScrollBar().sizeHint().width() + 6

    def content_height(self) -> int:
        return self.widget().sizeHint().height()
