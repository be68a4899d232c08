"""The main window: the node, a tile per GPU, live plots, the checks, the verdict and the history.

It renders the runner's event stream and decides nothing itself: verdicts, codes and remediation all
come from the engine. The runner works on a worker thread (nodeqc.gui.bridge); this thread only draws.
"""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (QBoxLayout, QComboBox, QFileDialog, QFrame, QGridLayout, QHBoxLayout,
                               QLabel, QLineEdit, QMainWindow, QMessageBox, QPushButton, QTabWidget,
                               QVBoxLayout, QWidget)

from nodeqc.backends.base import GpuSample
from nodeqc.core.errors import UsageError
from nodeqc.report.answer import answer
from nodeqc.run.events import (CheckFinished, CheckProgress, CheckStarted, Event, Notice, RunFinished,
                           RunStarted, TelemetrySampled)
from nodeqc.core.model import CheckResult
from nodeqc.core.text import subjects_text
from nodeqc.gui.banner import BANNER_MIN_HEIGHT, Banner, banner_findings, compact_findings
from nodeqc.gui.bridge import RunThread
from nodeqc.gui.checks import CheckList
from nodeqc.gui.history import HistoryList
from nodeqc.gui.plots import TelemetryPlots
from nodeqc.gui.reports import ReportDialog
from nodeqc.gui.session import NodeInfo, RunSetup
from nodeqc.gui.style import COMPACT_BELOW_HEIGHT, COMPACT_BELOW_WIDTH, STYLESHEET
from nodeqc.gui.tiles import GpuTile, TileArea
from nodeqc.gui.widgets import ElidedLabel, field_name, field_value, repolish, tip
from nodeqc.report.printable import export_pdf, load_report
from nodeqc.report.render import planted_line
from nodeqc.run.runner import RunOutcome, Runner
from nodeqc.spec.profile import Profile, list_profiles, suggest_profile

REDRAW_MS = 500  # live readings and the banner are redrawn this often, however fast samples come
WIDE_COLUMNS = 4  # tiles per row when the window is wide enough to put them above the tabs
WIDE_MIN_HEIGHT = 850  # and tall enough to leave the tabs room below them
TABS_MIN_WIDTH = 620  # the tabs' width beside two columns of tiles; less, and the tiles take one
QWIDGETSIZE_MAX = (1 << 24) - 1  # Qt's "no maximum"


class MainWindow(QMainWindow):
    run_done = Signal(object)  # the RunOutcome once the window shows it; None if the run could not start

    def __init__(self, setup: RunSetup, node: NodeInfo):
        super().__init__()
        self.setup = setup
        self.node = node
        self.profile: Profile | None = None
        self.keyid: str | None = None
        self.results: list[CheckResult] = []
        self.finished: RunFinished | None = None
        self.outcome: RunOutcome | None = None
        self.findings_shown: list[Any] = []  # the banner's parts, in its order
        self.exit_code = 0
        self.close_after_run = False
        self.active = False  # a run is under way, as this thread knows it: from start() to its end shown
        self.started_at = 0.0
        self.current_check: str | None = None
        self.run_clock = 0.0  # the run's own clock: on a simulated node faster than the wall's
        self.banner_shown = ""
        self.latest: dict[str, GpuSample | None] = {}
        self.setWindowTitle(f"nodeqc: {node.host.get('hostname')}")
        self.setStyleSheet(STYLESHEET)

        self.worker = RunThread(self)
        self.worker.event.connect(self.on_event)  # already on this thread, in order with `done`
        self.worker.done.connect(self._on_done, Qt.ConnectionType.QueuedConnection)
        self.worker.failed.connect(self._on_failed, Qt.ConnectionType.QueuedConnection)
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)

        central = _Central(self)
        layout = QVBoxLayout(central)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(6)
        self.node_panel = self._node_panel()
        layout.addWidget(self.node_panel)
        self.banner = Banner(node.simulated)
        b = self.banner  # its parts, by the names the window has always given them
        self.banner_word, self.banner_sim, self.banner_text = b.word, b.sim, b.headline
        self.banner_findings, self.banner_report, self.banner_scroll = b.findings, b.report, b.scroll_area
        self.repair = b.repair
        self.open_button, self.pdf_button, self.retest_button = b.open_button, b.pdf_button, b.retest_button
        self.open_button.clicked.connect(lambda: self.show_report(Path(self.finished.report_path)))
        self.pdf_button.clicked.connect(self.export_pdf)
        self.retest_button.clicked.connect(self.retest)
        self.banner.more_wanted.connect(lambda: self.tabs.setCurrentWidget(self.checks))
        layout.addWidget(self.banner)
        self.tile_area = TileArea()
        self.plots = TelemetryPlots()
        self.checks = CheckList()
        self.history = HistoryList()
        self.history.open_report.connect(self.show_report)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.plots, "Plots")
        self.tabs.addTab(self.checks, "Checks")
        self.tabs.addTab(self.history, "History")
        self.tabs.currentChanged.connect(lambda _: self._rearrange())
        self.body = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self.body.addWidget(self.tile_area)
        self.body.addWidget(self.tabs, 1)
        layout.addLayout(self.body, 1)
        self.setCentralWidget(central)
        self.status = ElidedLabel()  # the last notice or file written; every notice of the run in its tooltip
        self.statusBar().addWidget(self.status, 1)
        self.notices_button = QPushButton("Notices")  # every notice of the run, in full
        self.notices_button.setObjectName("notices")
        self.notices_button.setFlat(True)
        self.notices_button.clicked.connect(self.show_notices)
        self.notices_button.setVisible(False)
        self.statusBar().addPermanentWidget(self.notices_button)
        self.notices: list[str] = []

        self._build_tiles(node.gpus)
        self.history.load(node.node_id, setup.archive)
        self._show_idle()

    # ------------------------------------------------------------------ layout

    def _node_panel(self) -> QWidget:
        panel = QFrame()
        grid = QGridLayout(panel)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(10)
        host = self.node.host
        self.hostname = field_value(str(host.get("hostname")), least=120)
        # The serial whole at any width: it is what the technician checks against the chassis' label.
        self.serial = field_value(str(host.get("system_serial") or "N/A"), least=None)
        self.versions = field_value(f"{self.node.driver} / {self.node.cuda}")
        system = " ".join(str(host.get(k)) for k in ("system_vendor", "system_model") if host.get(k))
        self.gpu_summary = field_value(self._gpu_summary(self.node.gpus) if not self.node.error else self.node.error)
        if self.node.error:
            self.gpu_summary.setStyleSheet("color: #c4161c;")
        self.system = system
        self.gpu_summary.setToolTip(tip(f"{self.gpu_summary.full}\n{system}".strip()))
        row = QHBoxLayout()
        for name, value in (("Host", self.hostname), ("Serial", self.serial), ("Driver / CUDA", self.versions),
                            ("GPUs", self.gpu_summary)):
            row.addWidget(field_name(name))
            row.addWidget(value)
            row.addSpacing(10)
        row.addStretch(1)
        if self.node.simulated:
            sim = QLabel("SIMULATED")
            sim.setObjectName("simulated")
            sim.setToolTip("A simulated node: its reports are never a qualification of real hardware.")
            row.addWidget(sim)
        grid.addLayout(row, 0, 0, 1, 7)

        self.profile_box = QComboBox()
        self.profile_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self._fill_profiles()
        self.operator = QLineEdit(self.setup.operator or "")
        self.operator.setPlaceholderText("your name")
        self.ticket = QLineEdit(self.setup.ticket or "")
        self.ticket.setPlaceholderText("work ticket")
        self.start_button = QPushButton("START")
        self.start_button.setObjectName("start")
        self.start_button.clicked.connect(lambda: self.start())
        self.abort_button = QPushButton("ABORT")
        self.abort_button.setObjectName("abort")
        self.abort_button.clicked.connect(self.abort)
        grid.addWidget(field_name("Profile"), 1, 0)
        grid.addWidget(self.profile_box, 1, 1)
        grid.addWidget(field_name("Operator"), 1, 2)
        grid.addWidget(self.operator, 1, 3)
        grid.addWidget(field_name("Ticket"), 1, 4)
        grid.addWidget(self.ticket, 1, 5)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.abort_button)
        grid.addLayout(buttons, 1, 6)
        grid.setColumnStretch(3, 1)
        grid.setColumnStretch(5, 1)
        return panel

    def _fill_profiles(self) -> None:
        suggested = suggest_profile(self.node.found)
        names = [p.name for p in list_profiles()]
        wanted = self.setup.profile if self.setup.profile != "auto" else suggested
        if suggested not in names:
            names.append(suggested)  # a SKU's profile (nodeqc/core/skus.py)
        if wanted not in names:
            names.append(wanted)  # a profile file given with --profile
        for name in names:
            self.profile_box.addItem(f"{name}  (suggested)" if name == suggested else name, name)
        self.profile_box.setCurrentIndex(names.index(wanted))

    def _fit_banner(self) -> None:
        """The banner's text as tall as its lines wrapped at the width it has (nodeqc.gui.banner)."""
        self.banner.fit(self._room_for_banner(), self.height())
        QTimer.singleShot(0, self._fit_tiles)  # to the room the banner leaves them, once laid out

    def _fit_tiles(self) -> None:
        """Dense tiles where the full ones would not fit their room (nodeqc.gui.tiles): above the
        tabs, two fifths of the window; beside them, the column's height."""
        self.centralWidget().layout().activate()
        above = self.body.direction() == QBoxLayout.Direction.TopToBottom
        self.tile_area.fit(self.height() * 2 // 5 if above else None)

    def _room_for_banner(self) -> int:
        """The window's height less the rest at its smallest (node panel, tiles and tabs, status bar,
        margins), added up from the parts: the window's own minimum size is cached until its next
        layout, and would count the banner's last height."""
        central = self.centralWidget().layout()
        margins, inside = central.contentsMargins(), self.banner.layout().contentsMargins()
        # Tiles in two columns beside the History tab wrap their text: the body's least height then
        # depends on its width, and counting only its plain minimum left the banner taller than the
        # room and cut at its frame, its last what-to-do hidden with no scroll bar (1366x768).
        width = self.centralWidget().width() - margins.left() - margins.right()
        body = self.body.minimumHeightForWidth(width) if self.body.hasHeightForWidth() else 0
        others = (margins.top() + margins.bottom() + 2 * central.spacing() + inside.top() + inside.bottom()
                  + self.node_panel.minimumSizeHint().height() + max(body, self.body.minimumSize().height())
                  + self.statusBar().sizeHint().height())
        return self.height() - others

    def _set_banner(self, state: str, word: str, text: str, finished: bool = False, report: str = "",
                    findings: str = "", repairable: bool = False, compact: tuple[list[Any], int] = ([], 0)) -> None:
        self.banner.set_answer(state, word, text, finished, report, findings, repairable, *compact)
        self.banner_shown = text
        self._fit_banner()
        QTimer.singleShot(0, self._fit_banner)  # again at the width the new buttons leave it

    @property
    def tiles(self) -> dict[str, GpuTile]:
        return self.tile_area.tiles

    def _build_tiles(self, gpus: list[dict[str, Any]]) -> None:
        self.tile_area.set_gpus(gpus, f"No GPUs found: {self.node.error or 'the driver lists none'}")
        self._arrange()

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._rearrange()

    def _rearrange(self) -> None:
        """Arranged now, and the banner fitted again once the layout has settled: tiles that change
        columns know the height their wrapped text needs only then."""
        self._arrange()
        QTimer.singleShot(0, self._refit)

    def _refit(self) -> None:
        self.centralWidget().layout().activate()  # the tiles' new columns laid out: their heights known
        self._fit_banner()

    def _arrange(self) -> None:
        """Narrow screens: two columns of tiles beside the tabs. Wide ones: rows of four tiles above
        the tabs, which then get the whole width. A crash cart's screen: smaller type."""
        compact = self.width() < COMPACT_BELOW_WIDTH or self.height() < COMPACT_BELOW_HEIGHT
        if self.property("compact") != compact:
            self.setProperty("compact", compact)
            repolish(self.node_panel.findChildren(QLabel))
            self.banner.set_compact(compact)
            self.plots.set_compact(compact)
        wide = self.width() >= self.tile_area.width_for(WIDE_COLUMNS) + 20 and self.height() >= WIDE_MIN_HEIGHT
        # Beside the check list, or on a narrow screen (1024 pixels), the tiles take one column: the
        # tabs need the width more. Never more columns than GPUs.
        roomy = self.width() >= self.tile_area.width_for(2) + TABS_MIN_WIDTH
        two = roomy and self.tabs.currentWidget() is not self.checks
        narrow_columns = max(1, min(2 if two else 1, len(self.tiles)))
        self.tile_area.set_columns(WIDE_COLUMNS if wide else narrow_columns, above=wide)
        area = self.tile_area
        if wide:
            self.body.setDirection(QBoxLayout.Direction.TopToBottom)
            area.setMinimumWidth(0)
            area.setMaximumWidth(QWIDGETSIZE_MAX)
            area.fit(self.height() * 2 // 5)
        else:
            self.body.setDirection(QBoxLayout.Direction.LeftToRight)
            area.setMinimumHeight(0)
            area.setMaximumHeight(QWIDGETSIZE_MAX)
            area.setFixedWidth(area.width_for(narrow_columns))
        self._fit_banner()  # to the room the body leaves as now arranged

    @staticmethod
    def _gpu_summary(gpus: list[dict[str, Any]]) -> str:
        models = sorted({str(g.get("name")).removeprefix("NVIDIA ") for g in gpus})
        return f"{len(gpus)} x {', '.join(models)}" if gpus else "none found"

    # ------------------------------------------------------------------ control

    @property
    def running(self) -> bool:
        """A run started and its end not yet shown. Kept on this thread (not the worker thread's
        liveness), so a dialog answered after the run ended sees that it ended."""
        return self.active

    def start(self, repair: str | None = None, retest: Path | None = None) -> None:
        """A run with the chosen profile; after a repair, `repair` says what was done and `retest`
        names the report it re-tests."""
        if self.running:
            return
        ref = self.profile_box.currentData()
        try:
            hardware, profile, signer = self.setup.prepare(ref)
        except UsageError as e:
            QMessageBox.warning(self, "Cannot start", str(e))
            return
        operator, ticket = self.operator.text().strip() or None, self.ticket.text().strip() or None
        self.profile, self.keyid = profile, signer.keyid
        self.results, self.finished, self.outcome, self.current_check = [], None, None, None
        self.active, self.close_after_run = True, False
        self.started_at = time.monotonic()
        self.checks.clear()
        # Nothing of the last run stays on screen while this one reads the inventory (seconds on a
        # real node) or if it cannot start at all.
        self.run_clock = 0.0
        self._fresh_view(self.node.gpus, "", self.node.simulated)
        self.tabs.setCurrentWidget(self.plots)
        self._set_inputs(running=True)
        # Only a re-test after a repair passes these: a first run's options are the command line's.
        after_repair = {k: v for k, v in (("repair", repair), ("retest", retest)) if v is not None}
        self.worker.start(lambda emit: Runner(self.setup.options(hardware, profile, signer, operator, ticket,
                                                                 **after_repair), hardware, emit),
                          after=lambda outcome: self.setup.after_run(outcome.report_path))
        self.timer.start()
        self.redraw()

    def abort(self) -> None:
        # The dialog runs its own event loop: the run may end while it is open, so ask again after.
        if self.running and self._confirm("Abort the run?", "The work stops and a report marked ABORTED "
                                          "(not qualified) is written.") and self.running:
            self._abort()

    def _abort(self) -> None:
        self.worker.abort()
        self._set_banner("aborted", "ABORTING", "Stopping the work and writing the report marked ABORTED...")

    def closeEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        if not self.running:
            event.accept()
            return
        event.ignore()
        if self._confirm("Abort the run and close?", "A run is in progress. Closing aborts it: the work stops, "
                         "a report marked ABORTED (not qualified) is written, then the window closes."):
            if self.running:  # closes once the aborted report is written
                self.close_after_run = True
                self._abort()
            else:  # it ended while the question was open: its report is written, nothing to abort
                event.accept()

    def _confirm(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(self, title, text, QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def _set_inputs(self, running: bool, aborted: bool = False) -> None:
        self.start_button.setEnabled(not running)
        self.abort_button.setEnabled(running)
        for widget in (self.profile_box, self.operator, self.ticket):
            widget.setEnabled(not running)
        for tile in self.tiles.values():
            tile.set_running(running, aborted)

    # ------------------------------------------------------------------ the event stream

    def on_event(self, event: Event) -> None:
        if isinstance(event, (TelemetrySampled, CheckStarted, CheckFinished)):
            self.run_clock = max(self.run_clock, event.t)
        if isinstance(event, TelemetrySampled):
            self.plots.add(event.t, event.samples)
            self.latest.update(event.samples)
        elif isinstance(event, CheckProgress):
            self.checks.check_progress(event.name, event.subject, event.fraction)
            if event.subject in self.tiles:
                self.tiles[event.subject].check_progress(event.name, event.fraction)
        elif isinstance(event, CheckStarted):
            self.current_check = event.name
            self.checks.check_started(event.name, event.subjects)
            for subject in event.subjects:
                if subject in self.tiles:
                    self.tiles[subject].check_started(event.name)
            self._show_running()  # the banner's "Now:" as the tiles say it, not half a second later
        elif isinstance(event, CheckFinished):
            self.results.append(event.result)
            self.checks.check_finished(event.result)
            if event.result.subject in self.tiles:
                self.tiles[event.result.subject].check_finished(event.result)
                if event.result.verdict.blocks_qualification:
                    self.plots.single_out(event.result.subject)
            self._show_running()
        elif isinstance(event, RunStarted):
            self._run_started(event)
        elif isinstance(event, Notice) and event.level == "progress":
            self._say(event.text)  # how a long step stands: the status line, not a notice to keep
        elif isinstance(event, Notice):
            self.notices.append(f"{event.level}: {event.text}")
            self._say(self.notices[-1])
        elif isinstance(event, RunFinished):
            self.finished = event
            self.notices += [planted_line(p) for p in event.planted or []]  # a simulated node's faults, each found or not

    def _run_started(self, event: RunStarted) -> None:
        node = event.node
        self.hostname.setFullText(str(node.get("hostname")))
        self.serial.setFullText(str(node.get("system_serial") or "N/A"))
        self.gpu_summary.setFullText(self._gpu_summary(event.gpus))
        self.gpu_summary.setToolTip(tip(f"{self.gpu_summary.full}\n{self.system}".strip()))
        self._fresh_view(event.gpus, f"journal: {event.files.get('journal')}", event.simulated)
        self.checks.set_gpus(event.gpus)
        for tile in self.tiles.values():
            tile.set_running(True)

    def _fresh_view(self, gpus: list[dict[str, Any]], status: str, simulated: bool) -> None:
        """New tiles and empty plots for these GPUs; no notices yet."""
        self.latest.clear()
        self._build_tiles(gpus)
        self.plots.configure(gpus, self.profile, simulated)
        self.notices = []
        self._say(status)

    def redraw(self) -> None:
        """On the timer: live readings and the running banner (the plots keep their own timer)."""
        for subject, sample in self.latest.items():
            tile = self.tiles.get(subject)
            if tile is None:
                continue
            if sample is None:
                tile.mark_lost()
            else:
                tile.show_sample(sample)
        self.latest.clear()
        self._arrange()  # tiles grow a little as their markers fill in
        self._show_running()

    def _show_running(self) -> None:
        """The running banner: time, the check under way and how far it is, the failures so far. On a
        simulated node also the run's own clock, the one the plots' time axis and the journal use."""
        if self.running and not self.worker.aborting:
            elapsed = int(time.monotonic() - self.started_at)
            clock = int(self.run_clock)
            simulated = f" ({clock // 60}:{clock % 60:02d} simulated)" if self.plots.unit == "sim s" else ""
            check = self.checks.checks.get(self.current_check or "")
            doing = (f"{html.escape(check.item.text(0))} on {html.escape(subjects_text(check.subjects))}: {check.fraction:.0%}"
                     if check else "reading the inventory")
            failing = [r.subject for r in self.results if r.verdict.blocks_qualification]
            where = f" ({html.escape(subjects_text(list(dict.fromkeys(failing))))})" if failing else ""
            text = (f"{elapsed // 60}:{elapsed % 60:02d} elapsed{simulated}. Now: {doing}."
                    f"<br>{len(self.results)} results so far, {len(failing)} failing{where}.")
            if text != self.banner_shown:  # called at every check's start and end: only a change costs a layout
                self._set_banner("running", "RUNNING", text)

    # ------------------------------------------------------------------ the end of a run

    def _on_done(self, outcome: RunOutcome) -> None:
        self.active = False
        self.timer.stop()
        self.redraw()
        self.plots.refresh()  # every plot, up to the last sample
        self.checks.finish()
        self.outcome = outcome
        self.exit_code = outcome.exit_code
        self._set_inputs(running=False, aborted=outcome.status == "aborted")
        word = self._show_verdict(outcome)
        # The status bar ends on the run's end, not on whatever the run said last (a stale step), in
        # the banner's word (ERROR where a check could not run and none failed, not the node's FAIL).
        self._say(f"Run {'aborted' if outcome.status == 'aborted' else 'finished'}: {word}; "
                  f"report {outcome.report_path}")
        self.history.load(self.node.node_id, self.setup.archive)
        if any(r.verdict.blocks_qualification for r in outcome.results):
            # The list and the tiles open on the part the banner names first.
            first = self.findings_shown[0] if self.findings_shown else None
            self.tabs.setCurrentWidget(self.checks)
            self.checks.select_first_failure((first.check, first.subject) if first else None)
            failing = first.subject if first is not None and first.subject in self.tiles else \
                next((s for s, t in self.tiles.items() if t.state in ("fail", "error")), None)
            if failing is not None:
                self.tile_area.reveal(failing)  # on a small screen the tiles scroll
        self.run_done.emit(outcome)
        if self.close_after_run:
            self.close()

    def _on_failed(self, message: str) -> None:
        self.active = False
        self.timer.stop()
        self.exit_code = 2
        self._set_inputs(running=False)
        self._set_banner("error", "ERROR", f"The run could not be done: {html.escape(message)}")
        self.run_done.emit(None)
        if self.close_after_run:
            self.close()

    def _show_verdict(self, outcome: RunOutcome) -> str:
        """The engine's answer (nodeqc.report.answer), as the headless summary and `show` give it;
        returns the banner's word."""
        finished = self.finished
        the_answer = finished.answer if finished is not None and finished.answer is not None else answer(
            outcome.results, self.node.gpus, outcome.verdict, outcome.status, self.setup.partial, self.node.simulated)
        report = f"Report {outcome.report_path}\nSigned with key {self.keyid}"
        if self.setup.partial:
            report = f"Partial run ({self.setup.partial}): this report is not a qualification.\n{report}"
        headline = html.escape(the_answer.tally)
        self.findings_shown = the_answer.findings
        if outcome.status == "aborted":
            # What failed before the abort is said below, with what to do, as after a whole run: the
            # technician who stopped a run with a red tile sees why it is red.
            failed = len({f.subject for f in the_answer.findings})
            so_far = f"; {failed} part{'s' * (failed != 1)} failed before it" if failed else ""
            headline = (f"The run was aborted: the node is <b>not qualified</b>. "
                        f"{len(outcome.results)} results were reached{so_far}.")
        # The answer's word and colour: ABORTED; ERROR, not FAIL, where a check could not run and none
        # failed (nothing says the hardware is bad).
        self._set_banner(the_answer.state, the_answer.word, headline, finished=True, report=report,
                         findings=banner_findings(the_answer.findings), repairable=bool(the_answer.failing),
                         compact=compact_findings(the_answer.findings))
        return the_answer.word

    def retest(self) -> None:
        """Re-test after a repair: the same checks, the repair recorded, the report just written linked."""
        previous = Path(self.finished.report_path) if self.finished is not None else None
        self.start(repair=self.repair.text().strip() or None, retest=previous)

    def _show_idle(self) -> None:
        self._set_inputs(running=False)
        text = "Confirm the profile, enter your name and the ticket, then press START."
        if self.setup.partial:
            text += f"<br>Partial run ({html.escape(self.setup.partial)}): not a qualification."
        self._set_banner("idle", "READY", text)

    # ------------------------------------------------------------------ reports

    def show_report(self, path: Path) -> None:
        try:
            dialog = ReportDialog(load_report(path), self)
        except UsageError as e:
            QMessageBox.warning(self, "Cannot open the report", str(e))
            return
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()

    def export_pdf(self) -> None:
        if self.finished is None:
            return
        report = Path(self.finished.report_path)
        suggested = report.with_name(report.name.replace(".report.json", ".summary.pdf"))
        chosen, _ = QFileDialog.getSaveFileName(self, "Export a printable summary", str(suggested), "PDF (*.pdf)")
        if not chosen:
            return
        try:
            export_pdf(load_report(report), Path(chosen))
        except UsageError as e:
            QMessageBox.warning(self, "Cannot export the PDF", str(e))
            return
        self._say(f"PDF summary written: {chosen}")

    def _say(self, text: str) -> None:
        self.status.setFullText(text)
        self.status.setToolTip(tip("\n".join(self.notices)))
        self.notices_button.setText(f"All notices ({len(self.notices)})")
        self.notices_button.setVisible(bool(self.notices))

    def show_notices(self) -> None:
        """Every notice of the run, whole: the status bar has room for the last one only."""
        box = QMessageBox(QMessageBox.Icon.Information, "Notices of the run", "\n\n".join(self.notices), parent=self)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setObjectName("notices")
        box.show()


class _Central(QWidget):
    """The window's body. Its least height counts the banner at its own least height, not at the
    height it was last fitted to: a window made smaller (a run's end at 1366x768, then a 1024x600
    screen) was held at its old banner's height, taller than the screen, until a second resize. Made
    smaller, the window fits the banner to the room left (MainWindow.resizeEvent) before it paints."""

    def __init__(self, window: "MainWindow"):
        super().__init__()
        self._window = window

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        hint = super().minimumSizeHint()
        scroll = getattr(self._window, "banner_scroll", None)
        if scroll is None:
            return hint
        # Nor the tiles' height fitted above the tabs: 1920x1080 straight to 1024x600 stayed 707 px tall.
        tiles = self._window.tile_area.minimumHeight() if self._window.body.direction() == QBoxLayout.Direction.TopToBottom else 0
        return QSize(hint.width(), hint.height() - max(0, scroll.minimumHeight() - BANNER_MIN_HEIGHT) - tiles)

