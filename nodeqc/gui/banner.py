"""The banner under the node panel: the answer in large type, the headline, each failing part with
what to do, the report, and the buttons for what comes after a run (open it, print it, re-test).
Its text is composed here from the engine's answer (nodeqc.report.answer); it decides nothing."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea, QSizePolicy,
                               QVBoxLayout, QWidget)

from nodeqc.gui.widgets import ElidedLabel, repolish
from nodeqc.report.answer import Finding

BANNER_PARTS = 4  # failing (or warning) parts listed in the banner; the Checks tab has them all
BANNER_MAX_SHARE = 60  # percent of the window's height the banner's text may take before it scrolls
BANNER_MIN_HEIGHT = 40  # two lines of its text
WORD_WIDTH, COMPACT_WORD_WIDTH = 200, 150  # the verdict's column; narrower on a 1024-pixel screen


class Banner(QFrame):
    """The answer: the verdict's word (and SIMULATED under it), the headline, each failing part
    with what to do, and the report. Every line wraps: nothing of the action is cut off. The window
    connects the buttons and says how much room it leaves the banner (fit)."""

    def __init__(self, simulated: bool):
        super().__init__()
        self.setObjectName("banner")
        self.word = QLabel()
        self.word.setObjectName("bannerWord")
        self.word.setMinimumWidth(WORD_WIDTH)
        self.word.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.sim = QLabel("SIMULATED")
        self.sim.setObjectName("simulated")
        self.sim.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.sim.setToolTip("A simulated node: its reports are never a qualification of real hardware.")
        self.sim.setVisible(simulated)
        word = QVBoxLayout()
        word.setSpacing(2)
        word.addWidget(self.word)
        word.addWidget(self.sim)
        word.addStretch(1)
        self.headline = _wrapping("bannerText")
        self.findings = _wrapping("bannerFindings")
        self.report = ElidedLabel(mode=Qt.TextElideMode.ElideMiddle)
        self.report.setObjectName("bannerReport")
        self.open_button = QPushButton("Open report")
        self.pdf_button = QPushButton("Export PDF")
        self.repair = QLineEdit()
        self.repair.setPlaceholderText("what was repaired?")
        self.repair.setToolTip("What was repaired, e.g. reseated GPU 3 riser: recorded in the re-test's signed "
                               "report, with a link to this report")
        self.retest_button = QPushButton("Re-test")
        # One above the other: a narrow column leaves the banner's text the width it needs.
        buttons = QVBoxLayout()
        buttons.setSpacing(4)
        for widget in (self.open_button, self.pdf_button, self.repair, self.retest_button):
            buttons.addWidget(widget)
        buttons.addStretch(1)
        inner = QWidget()
        inner.setObjectName("bannerInner")
        text = QVBoxLayout(inner)
        text.setContentsMargins(0, 0, 0, 0)
        text.setSpacing(2)
        text.addWidget(self.headline)
        text.addWidget(self.findings)
        text.addWidget(self.report)
        text.addStretch(1)
        # As tall as its wrapped lines (fit); it scrolls, never cut off silently, only when the rest
        # of the window is at its smallest or the text needs more than BANNER_MAX_SHARE of it.
        self.scroll_area = QScrollArea()
        self.scroll_area.setObjectName("bannerScroll")
        self.scroll_area.setWidget(inner)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.scroll_area.viewport().setAutoFillBackground(False)  # the banner's colour shows through
        inner.setAutoFillBackground(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 6)
        layout.addLayout(word)
        layout.addWidget(self.scroll_area, 1)
        layout.addLayout(buttons)

    def set_answer(self, state: str, word: str, text: str, finished: bool = False, report: str = "",
                   findings: str = "", repairable: bool = False) -> None:
        """What the banner says; the window fits it to its room after."""
        if self.property("state") != state:  # restyle only on a change: it is costly
            self.setProperty("state", state)
            for widget in [self, *self.findChildren(QLabel)]:
                widget.style().unpolish(widget)
                widget.style().polish(widget)
        self.word.setText(word)
        self.headline.setText(text)
        self.findings.setText(findings)
        self.findings.setVisible(bool(findings))
        self.report.setFullText(report)
        self.report.setVisible(bool(report))
        for button in (self.open_button, self.pdf_button, self.retest_button):
            button.setVisible(finished)
        self.repair.setVisible(finished and repairable)

    def set_compact(self, compact: bool) -> None:
        """Smaller type and a narrower verdict column on a crash cart's screen (the window's
        `compact` property, which the style sheet's rules select on)."""
        self.word.setMinimumWidth(COMPACT_WORD_WIDTH if compact else WORD_WIDTH)
        repolish([self, *self.findChildren(QLabel), *self.findChildren(QPushButton)])

    def fit(self, room: int, window_height: int) -> None:
        """The banner's text as tall as its lines wrapped at the width it has, up to the room the rest
        of the window leaves at its smallest and BANNER_MAX_SHARE of the window (then it scrolls):
        the parts that failed and what to do are all on screen."""
        inner = self.scroll_area.widget()
        width = self.scroll_area.viewport().width()
        needed = inner.layout().totalHeightForWidth(width) if inner.layout().hasHeightForWidth() else \
            inner.sizeHint().height()
        room = min(room, window_height * BANNER_MAX_SHARE // 100)
        height = max(BANNER_MIN_HEIGHT, min(needed, room))
        if self.scroll_area.height() != height or self.scroll_area.minimumHeight() != height:
            self.scroll_area.setFixedHeight(height)


def _wrapping(name: str) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    # As wide as the banner gives, as tall as the wrapped text needs at that width. A minimum
    # height of its own keeps Qt from sizing the window for the text wrapped at its narrowest
    # (the window would outgrow a 768 px screen).
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
    label.setMinimumHeight(1)
    return label


def banner_findings(findings: list[Finding]) -> str:
    """Each failing part (then each warning one): who it is, the finding, what to do. When more parts
    fail than the banner has room for, parts that failed the same way share one entry."""
    by_part: dict[str, list[Finding]] = {}
    for f in findings:
        by_part.setdefault(f.subject, []).append(f)
    groups = list(by_part.values())
    if len(groups) > BANNER_PARTS:  # e.g. every GPU hung: one entry naming them all
        by_way: dict[tuple[Any, ...], list[list[Finding]]] = {}
        for group in groups:
            by_way.setdefault(tuple((f.check, f.code) for f in group), []).append(group)
        entries = [_banner_entry([g[0] for g in same], same[0]) for same in by_way.values()]
    else:
        entries = [_banner_entry([group[0]], group) for group in groups]
    shown = entries[:BANNER_PARTS - 1] if len(entries) > BANNER_PARTS else entries
    if len(entries) > len(shown):
        shown.append(f"... and {len(entries) - len(shown)} more (the Checks tab has them all)")
    return "<br>".join(shown)


def _banner_entry(firsts: list[Finding], group: list[Finding]) -> str:
    """'GPU 3 (bus, serial): finding (checks) [status] / -> What to do: ...' for one part, or for
    several parts that failed the same way ('GPU 0, GPU 1, GPU 2: ...'). A part that failed in
    several ways (a firmware difference and a narrow link) gets a finding and what to do for each
    code, 'GPU 3 also: ...', so no failure is said by its remedy alone."""
    if len(firsts) == 1:
        name, _, details = group[0].part.identity.partition(" (")
        who = f"<b>{html.escape(name)}</b>" + (f" ({html.escape(details)}" if details else "")
        again = f"<b>{html.escape(name)}</b> also"
    else:
        who = again = "<b>" + html.escape(", ".join(f.part.identity.partition(" (")[0] for f in firsts)) + "</b>"
    by_code: dict[str | None, list[Finding]] = {}
    for f in group:
        by_code.setdefault(f.code, []).append(f)
    entries = []
    for n, same in enumerate(by_code.values()):
        first = same[0]
        checks = ", ".join(dict.fromkeys(f.check for f in same))
        status = f" <b>[{html.escape(first.repair)}]</b>" if first.repair else ""
        todo = " ".join(dict.fromkeys(f.remediation for f in same))
        entries.append(f"{who if n == 0 else again}: {html.escape(first.finding)} <i>({html.escape(checks)})</i>"
                       f"{status}<br>&nbsp;&nbsp;&#8594; <b>What to do:</b> {html.escape(todo)}")
    return "<br>".join(entries)
