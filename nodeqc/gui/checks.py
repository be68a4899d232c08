"""The check list: one row per check with its progress bar (its verdict once every subject is done),
key figure and message, one child row per subject; selecting a row shows its evidence and what to do
about a failure."""

from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QProgressBar, QSplitter, QTextBrowser, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout, QWidget)

from nodeqc.core.codes import advice, not_applicable_reason
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.text import subjects_text
from nodeqc.gui.widgets import tip
from nodeqc.report.answer import COLOURS, WORDS
from nodeqc.report.answer import Part, nics_of, parts, split_findings

COLUMNS = ("Check", "Verdict", "Key figure", "Message")
CHECK, VERDICT, FIGURE, MESSAGE = range(len(COLUMNS))
RESULT_ROLE = Qt.ItemDataRole.UserRole
CHECKS_MIN_PART_HEIGHT = 56


@dataclass
class _Check:
    item: QTreeWidgetItem
    bar: QProgressBar | None  # in the verdict's place until every subject has its result
    subjects: list[str]
    fractions: dict[str, float] = field(default_factory=dict)
    results: dict[str, CheckResult] = field(default_factory=dict)

    @property
    def fraction(self) -> float:
        if not self.subjects:
            return 1.0
        done = [1.0 if s in self.results else self.fractions.get(s, 0.0) for s in self.subjects]
        # A node-wide step (P2P, NCCL) reports its progress for "node" alone, though its GPUs are
        # subjects too: that progress is the step's.
        return max(sum(done) / len(done), self.fractions.get("node", 0.0))


def key_figures(results: list[CheckResult]) -> str:
    """The key figures of several subjects as one short text: a range when they are numbers."""
    # The parts' own figures, not the node's beside them: the GPUs' share of the power limit and the
    # node's PSU sensor count made one range, "0.959 .. 5" (the 2026-11-28 review).
    parts = [r for r in results if r.subject != "node"]
    figures = [r.values[r.key] for r in parts or results if r.key and r.key in r.values]
    if not figures:
        return ""
    units = Counter(v.unit for v in figures)
    if len(units) > 1:  # one range in one unit: the most said
        figures = [v for v in figures if v.unit == units.most_common(1)[0][0]]
    numbers = [v.value for v in figures if isinstance(v.value, (int, float)) and not isinstance(v.value, bool)]
    if len(numbers) == len(figures):
        lo, hi = min(numbers), max(numbers)
        unit = f" {figures[0].unit}" if figures[0].unit else ""
        return f"{lo:g}{unit}" if lo == hi else f"{lo:g} .. {hi:g}{unit}"
    distinct = sorted({str(v) for v in figures})
    return ", ".join(distinct) if len(distinct) <= 2 else f"{len(distinct)} different"


def _paint_verdict(item: QTreeWidgetItem, verdict: Verdict | None, not_applicable: bool = False) -> None:
    """A verdict's word on its colour; None: a check the run ended before (the word for aborted);
    N/A for a check that does not apply to the GPUs' generation (as the headless progress says)."""
    state = "n/a" if not_applicable else verdict.value if verdict is not None else "aborted"
    background, text = COLOURS[state]
    item.setText(VERDICT, WORDS[state])
    item.setBackground(VERDICT, QBrush(QColor(background)))
    item.setForeground(VERDICT, QBrush(QColor(text)))
    font = item.font(VERDICT)
    font.setBold(True)
    item.setFont(VERDICT, font)
    item.setTextAlignment(VERDICT, Qt.AlignmentFlag.AlignCenter)


class CheckList(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(COLUMNS)
        # Messages wrap onto more lines rather than hide behind "..." or a horizontal scrollbar.
        self.tree.setWordWrap(True)
        self.tree.setUniformRowHeights(False)
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.tree.setAlternatingRowColors(True)
        self.tree.setStyleSheet("QTreeView::item { min-height: 30px; }")
        header = self.tree.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(CHECK, QHeaderView.ResizeMode.ResizeToContents)
        header.resizeSection(VERDICT, 90)
        header.setSectionResizeMode(VERDICT, QHeaderView.ResizeMode.Fixed)
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.setPlaceholderText("Select a check to see its evidence and what to do about it.")
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.tree)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        # A header and a row each, at least: on a 600-pixel screen a failing run's banner (the
        # answer) has the room first, and the list and the detail scroll.
        for part in (self.tree, self.detail):
            part.setMinimumHeight(CHECKS_MIN_PART_HEIGHT)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.checks: dict[str, _Check] = {}
        self.parts: dict[str, Part] = {}  # subject -> its identity, for the detail pane
        self.tree.currentItemChanged.connect(self._show_detail)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        # Key figures get more room on a wide screen; on a narrow one the message keeps most.
        self.tree.header().resizeSection(FIGURE, max(110, min(260, self.width() // 6)))

    def clear(self) -> None:
        self.tree.clear()
        self.checks.clear()
        self.detail.clear()

    def set_gpus(self, gpus: list[dict[str, Any]]) -> None:
        """The run's GPUs, so a result names its part (index, bus id, serial); NICs come with the
        NIC inventory's result."""
        self.parts = parts(gpus, [])

    # ------------------------------------------------------------------ the event stream

    def check_started(self, name: str, subjects: list[str]) -> None:
        check = self.checks.get(name)
        if check is None:
            item = QTreeWidgetItem([name, "", "", subjects_text(subjects)])
            bold = QFont(item.font(CHECK))
            bold.setBold(True)
            item.setFont(CHECK, bold)
            self.tree.addTopLevelItem(item)
            bar = QProgressBar()
            bar.setRange(0, 100)
            bar.setTextVisible(True)
            self.tree.setItemWidget(item, VERDICT, bar)
            check = self.checks[name] = _Check(item, bar, [])
        check.subjects += [s for s in subjects if s not in check.subjects]
        self._update(check)

    def check_progress(self, name: str, subject: str, fraction: float) -> None:
        check = self.checks.get(name)
        if check is not None and check.bar is not None:
            check.fractions[subject] = fraction
            check.bar.setValue(round(100 * check.fraction))

    def check_finished(self, result: CheckResult) -> None:
        check = self.checks.get(result.name)
        if check is None:  # a result without a start (the runner's internal-error result)
            self.check_started(result.name, [result.subject])
            check = self.checks[result.name]
        check.results[result.subject] = result
        if result.name == "nic.inventory":
            self.parts.update(parts([], nics_of([result])))
        child = QTreeWidgetItem([result.subject, "", result.key_figure.partition("=")[2], result.message])
        child.setData(CHECK, RESULT_ROLE, result)
        child.setToolTip(MESSAGE, tip(result.message))
        _paint_verdict(child, result.verdict, bool(not_applicable_reason(result.code)))
        check.item.addChild(child)
        if result.verdict.blocks_qualification:
            check.item.setExpanded(True)
        self._update(check)
        if self.tree.currentItem() is check.item:
            self._show_detail(check.item)

    def _update(self, check: _Check) -> None:
        results = list(check.results.values())
        if check.bar is not None:
            check.bar.setValue(round(100 * check.fraction))
            if results and len(results) >= len(check.subjects):
                self.tree.removeItemWidget(check.item, VERDICT)
                check.bar = None
        if check.bar is None:
            # The worst judged verdict: one GPU not run among seven that passed is no SKIP of the check
            # (the 2026-11-28 review: a grey SKIP over seven passes); all not run is.
            judged = [r.verdict for r in results if r.verdict is not Verdict.SKIP]
            _paint_verdict(check.item, Verdict.worst(judged) if judged else Verdict.worst([r.verdict for r in results]),
                           bool(results) and all(not_applicable_reason(r.code) for r in results))
        check.item.setText(FIGURE, key_figures(results))
        bad = [r for r in results if r.verdict is not Verdict.PASS]
        if len(results) == 1:
            message = results[0].message
        elif bad:
            worst = max(bad, key=lambda r: r.verdict.severity)
            passed = len(results) - len(bad)
            message = (f"{passed} passed; " if worst.verdict is Verdict.SKIP and passed else "") + \
                f"{worst.subject}: {worst.message}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
        else:
            message = subjects_text(check.subjects) + (": all passed" if results else "")
        check.item.setText(MESSAGE, message)
        check.item.setToolTip(MESSAGE, tip(message))

    def finish(self) -> None:
        """The run ended: a check still showing its bar got fewer results than it had subjects (a
        node-wide step that failed as a whole, an abort): it shows what it got, or that it did not end."""
        for check in self.checks.values():
            if check.bar is None:
                continue
            self.tree.removeItemWidget(check.item, VERDICT)
            check.bar = None
            if check.results:
                self._update(check)
            else:
                _paint_verdict(check.item, None)
                check.item.setText(MESSAGE, "did not finish: the run ended first")

    # ------------------------------------------------------------------ details

    def verdict_of(self, name: str, subject: str | None = None) -> Verdict | None:
        check = self.checks.get(name)
        if check is None:
            return None
        if subject is not None:
            r = check.results.get(subject)
            return r.verdict if r else None
        return Verdict.worst([r.verdict for r in check.results.values()]) if check.results else None

    def select_first_failure(self, prefer: tuple[str, str] | None = None) -> None:
        """The first failing result selected and shown: `prefer` (check, subject), the banner's first
        part, where it is in the list, so the list opens on what the banner names first."""
        def wanted(result: CheckResult) -> bool:
            return result.verdict.blocks_qualification and (prefer is None or (result.name, result.subject) == prefer)

        if prefer is not None and not any(wanted(check.item.child(i).data(CHECK, RESULT_ROLE))
                                          for check in self.checks.values() for i in range(check.item.childCount())):
            prefer = None
        for check in self.checks.values():
            for i in range(check.item.childCount()):
                child = check.item.child(i)
                if wanted(child.data(CHECK, RESULT_ROLE)):
                    check.item.setExpanded(True)
                    self.tree.setCurrentItem(child)
                    self.tree.scrollToItem(child, QAbstractItemView.ScrollHint.PositionAtCenter)
                    # Again once the window has laid out the run's end (the banner grows, the list
                    # shrinks): at 1024x600 the row scrolled to now sat below the list's few rows.
                    QTimer.singleShot(0, lambda: self._scroll_to_current(child))
                    return

    def _scroll_to_current(self, item: QTreeWidgetItem) -> None:
        """Scroll to `item` if it is still the one selected (a new run may have cleared the list)."""
        if self.tree.currentItem() is item:
            self.tree.scrollToItem(item, QAbstractItemView.ScrollHint.PositionAtCenter)

    def _show_detail(self, item: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None = None) -> None:
        if item is None:
            self.detail.clear()
            return
        result = item.data(CHECK, RESULT_ROLE)
        if result is not None:
            self.detail.setHtml(result_html(result, self.parts.get(result.subject)))
            return
        check = self.checks[item.text(CHECK)]
        results = list(check.results.values())
        shown = [r for r in results if r.verdict is not Verdict.PASS] or results
        running = f"<p>{html.escape(item.text(CHECK))}: running on {html.escape(subjects_text(check.subjects))}</p>"
        self.detail.setHtml("<hr>".join(result_html(r, self.parts.get(r.subject)) for r in shown) or running)


def result_html(r: CheckResult, part: Part | None = None) -> str:
    """One result for a person, the answer first: verdict and part, what to do, the finding, then
    the figures, limits and evidence (long, and below the fold on a small screen)."""
    background, text = COLOURS[r.verdict.value]
    who = part.identity if part is not None else r.subject
    out = [f'<h2><span style="background:{background}; color:{text}">&nbsp;{WORDS[r.verdict.value]}&nbsp;</span> '
           f"{html.escape(r.name)} &middot; {html.escape(who)}</h2>"]
    if r.code and r.verdict is not Verdict.PASS:
        out.append(f"<p style='font-size:13pt'><b>What to do:</b> {html.escape(advice(r.code, r.subject, r.evidence, r.verdict.value))}</p>")
    findings = split_findings(r.message)
    out.append("".join(f"<p style='font-size:12pt'>{html.escape(f[:1].upper() + f[1:])}.</p>" for f in findings))
    if r.code and r.verdict is not Verdict.PASS:
        out.append(f"<p>Code: <b>{html.escape(r.code)}</b></p>")
    if r.values:
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td><b>{html.escape(str(v))}</b></td></tr>"
                       for k, v in r.values.items())
        out.append(f"<h3>Values</h3><table cellpadding='3'>{rows}</table>")
    if r.thresholds:
        out.append("<h3>Limits</h3><ul>" + "".join(f"<li>{html.escape(t.name)} {html.escape(t.describe())}</li>"
                                                    for t in r.thresholds) + "</ul>")
    if r.evidence:
        out.append(f"<h3>Evidence</h3><pre>{html.escape(json.dumps(r.evidence, indent=2, default=str))}</pre>")
    return "".join(out)
