"""The banner under the node panel: the answer in large type, the headline, each failing part with
what to do, the report, and the buttons for what comes after a run (open it, print it, re-test).
Its text is composed here from the engine's answer (nodeqc.report.answer); it decides nothing."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QTextDocumentFragment
from PySide6.QtWidgets import (QFrame, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea,
                               QSizePolicy, QVBoxLayout, QWidget)

from nodeqc.gui.widgets import ElidedLabel, repolish
from nodeqc.report.answer import Finding

BANNER_PARTS = 4  # failing (or warning) parts listed in the banner; the Checks tab has them all
# On a crash cart's screen (compact) each part takes two lines, its finding and what to do, each cut
# with "…" at the banner's width (whole in the tooltip and the Checks tab): three parts, or two and a
# link to the rest, keep the banner within a third of a 600-pixel window; fewer parts give the lines
# they leave to what to do (compose_compact).
COMPACT_PARTS = 3
MORE_LINK = "checks"  # the "... and N more" link's target: the window opens the Checks tab
BANNER_MAX_SHARE = 60  # percent of the window's height the banner's text may take before it scrolls
BANNER_MIN_HEIGHT = 40  # two lines of its text
WORD_WIDTH, COMPACT_WORD_WIDTH = 200, 120  # the verdict's column; narrower on a 1024-pixel screen


class Banner(QFrame):
    """The answer: the verdict's word (and SIMULATED under it), the headline, each failing part
    with what to do, and the report. Every line wraps: nothing of the action is cut off. The window
    connects the buttons and says how much room it leaves the banner (fit). On a crash cart's screen
    (set_compact) it lists each part in two cut lines and puts its buttons two by two."""

    more_wanted = Signal()  # the compact list's "... and N more" was clicked

    def __init__(self, simulated: bool):
        super().__init__()
        self.compact = False
        self.full_findings = ""
        self.entries: list[CompactEntry] = []  # the compact list, composed at the width it gets (fit)
        self.hidden = 0  # parts the compact list leaves to the Checks tab
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
        self.findings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                              | Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.findings.linkActivated.connect(lambda link: self.more_wanted.emit() if link == MORE_LINK else None)
        self.report = ElidedLabel(mode=Qt.TextElideMode.ElideMiddle)
        self.report.setObjectName("bannerReport")
        self.open_button = QPushButton("Open report")
        self.pdf_button = QPushButton("Export PDF")
        self.repair = QLineEdit()
        self.repair.setPlaceholderText("what was repaired?")
        self.repair.setToolTip("What was repaired, e.g. reseated GPU 3 riser: recorded in the re-test's signed "
                               "report, with a link to this report")
        self.retest_button = QPushButton("Re-test")
        # One above the other: a narrow column leaves the banner's text the width it needs; two by two
        # on a crash cart's screen, where four rows of buttons made the banner a third of the window.
        self.buttons = QGridLayout()
        self.buttons.setSpacing(4)
        self._place_buttons()
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
        layout.addLayout(self.buttons)

    def _place_buttons(self) -> None:
        widgets = (self.open_button, self.pdf_button, self.repair, self.retest_button)
        columns = 2 if self.compact else 1
        # Two by two, the repair field takes the width of the button above it, not its own wider hint.
        self.repair.setSizePolicy(QSizePolicy.Policy.Ignored if self.compact else QSizePolicy.Policy.Expanding,
                                  QSizePolicy.Policy.Fixed)
        # ... where "what was repaired?" showed as "what was r…" (1024x600, 2026-11-29): the tooltip says the rest.
        self.repair.setPlaceholderText("repaired:" if self.compact else "what was repaired?")
        for i, widget in enumerate(widgets):
            self.buttons.addWidget(widget, i // columns, i % columns)
        for row in range(len(widgets) + 1):
            self.buttons.setRowStretch(row, 1 if row == len(widgets) // columns else 0)

    def set_answer(self, state: str, word: str, text: str, finished: bool = False, report: str = "",
                   findings: str = "", repairable: bool = False, entries: list[CompactEntry] | None = None,
                   hidden: int = 0) -> None:
        """What the banner says; the window fits it to its room after. `findings` is the full list;
        `entries` and `hidden` the compact one (compact_findings), shown on a crash cart's screen."""
        if self.property("state") != state:  # restyle only on a change: it is costly
            self.setProperty("state", state)
            for widget in [self, *self.findChildren(QLabel)]:
                widget.style().unpolish(widget)
                widget.style().polish(widget)
        self.word.setText(word)
        self.headline.setText(text)
        self.full_findings, self.entries, self.hidden = findings, entries or [], hidden
        self.findings.setToolTip(_plain(findings) if self.entries else "")
        self._show_findings()
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
        if compact != self.compact:
            self.compact = compact
            self._place_buttons()
            self._show_findings()

    def _show_findings(self) -> None:
        """The full list, or on a crash cart's screen the compact one cut at the width it has now."""
        if not (self.compact and self.entries):
            self.findings.setText(self.full_findings)
            return
        width = self.scroll_area.viewport().width()
        colour = self.findings.palette().windowText().color().name()
        self.findings.setText(compose_compact(self.entries, self.hidden, self.findings.font(), width, colour))

    def fit(self, room: int, window_height: int) -> None:
        """The banner's text as tall as its lines wrapped at the width it has, up to the room the rest
        of the window leaves at its smallest and BANNER_MAX_SHARE of the window (then it scrolls):
        the parts that failed and what to do are all on screen."""
        inner = self.scroll_area.widget()
        width = self.scroll_area.viewport().width()
        if self.compact and self.entries:
            self._show_findings()  # cut again at this width
        needed = inner.layout().totalHeightForWidth(width) if inner.layout().hasHeightForWidth() else \
            inner.sizeHint().height()
        room = min(room, window_height * BANNER_MAX_SHARE // 100)
        height = max(BANNER_MIN_HEIGHT, min(needed, room))
        if self.scroll_area.height() != height or self.scroll_area.minimumHeight() != height:
            self.scroll_area.setFixedHeight(height)


def _plain(text: str) -> str:
    return QTextDocumentFragment.fromHtml(text).toPlainText()


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


# ---------------------------------------------------------------------- the compact list


@dataclass(frozen=True)
class CompactEntry:
    """One part (or parts that failed the same way) in the compact list: its name in bold, the rest
    of its identity and its status, its first finding, and what to do about it."""

    name: str
    details: str
    finding: str
    todo: str


def compact_findings(findings: list[Finding]) -> tuple[list[CompactEntry], int]:
    """The compact list: COMPACT_PARTS parts at most, or one fewer and how many more (the last
    line links to the Checks tab). A part that failed in several ways says how many, then its first."""
    by_part: dict[str, list[Finding]] = {}
    for f in findings:
        by_part.setdefault(f.subject, []).append(f)
    groups = list(by_part.values())
    if len(groups) > COMPACT_PARTS:  # parts that failed the same way share a line, as in the full list
        by_way: dict[tuple[Any, ...], list[list[Finding]]] = {}
        for group in groups:
            by_way.setdefault(tuple((f.check, f.code) for f in group), []).append(group)
        groups = [[g[0] for g in same] if len(same) > 1 else same[0] for same in by_way.values()]
    entries = []
    for group in groups:
        parts = list(dict.fromkeys(f.subject for f in group))
        first = group[0]
        if len(parts) > 1:
            name, details = ", ".join(f.part.identity.partition(" (")[0] for f in group), ""
        else:
            name, _, details = first.part.identity.partition(" (")
            details = f" ({details}" if details else ""
        ways = len({f.code for f in group}) if len(parts) == 1 else 1
        status = f" [{first.repair}]" if first.repair else ""
        finding = (f"{ways} findings: " if ways > 1 else "") + first.finding
        entries.append(CompactEntry(name, details + status, finding, key_action(first.remediation)))
    shown = entries if len(entries) <= COMPACT_PARTS else entries[:COMPACT_PARTS - 1]
    return shown, len(entries) - len(shown)


# The remediation texts (nodeqc.core.codes) say what happened, a colon, then what to do; the few
# that start with the action start with one of these verbs.
IMPERATIVES = frozenset({"Enable", "Set", "Check", "Run", "Re-run", "Reseat", "Replace", "Install", "Reset", "Reboot",
                         "Update", "Flash", "Load", "Start", "Keep", "Fix", "Read", "Compare", "Watch", "Create"})


def key_action(todo: str) -> str:
    """What to do less the clause before it that says what happened ("The PCIe link trained narrower
    than its maximum under load: reseat the GPU or riser, ..."; "Device-memory bandwidth is below the
    floor ...: check that the memory clock ..."): on lines cut at the banner's width the action is
    what has to show. A text that starts with the action ("Enable ECC (...): ...") is left whole."""
    said, colon, action = todo.partition(": ")
    if colon and action and said.split(" ", 1)[0] not in IMPERATIVES:
        return action[0].upper() + action[1:]
    return todo


def compose_compact(entries: list[CompactEntry], hidden: int, font: QFont, width: int, colour: str) -> str:
    """The compact list as rich text for a label `width` pixels wide: two lines a part, each cut with
    "…" where it would wrap, then "... and N more" linking to the Checks tab."""
    metrics, bold_font = QFontMetrics(font), QFont(font)
    bold_font.setBold(True)
    bold = QFontMetrics(bold_font)
    slack = 4  # rich text lays out a little wider than the metrics add up
    arrow, what = "\u00a0\u00a0\u2192 ", "What to do: "
    # Lines a full list of COMPACT_PARTS parts takes; a shorter list gives the rest to what to do
    # (one part: its action on up to four lines), so the banner is never taller than the full list's.
    spare = 2 * COMPACT_PARTS - 2 * len(entries) - (1 if hidden else 0)
    lines = []
    for k, e in enumerate(entries):
        room = width - slack - bold.horizontalAdvance(e.name) - metrics.horizontalAdvance(f"{e.details}: ")
        finding = metrics.elidedText(e.finding, Qt.TextElideMode.ElideRight, max(room, 0))
        lines.append(f"<b>{html.escape(e.name)}</b>{html.escape(e.details)}: {html.escape(finding)}")
        extra = spare // len(entries) + (1 if k < spare % len(entries) else 0) if spare > 0 else 0
        indent = metrics.horizontalAdvance(arrow)
        first = width - slack - indent - bold.horizontalAdvance(what)
        todo = wrapped(e.todo, metrics, max(first, 0), max(width - slack - indent, 0), 1 + extra)
        lines.append(f"{arrow}<b>{what}</b>{html.escape(todo[0])}")
        lines += [f"{arrow.replace(chr(0x2192), chr(0xa0))}{html.escape(more)}" for more in todo[1:]]
    if hidden:
        lines.append(f"<a href='{MORE_LINK}' style='color:{colour}'>... and {hidden} more part{'s' * (hidden != 1)}: "
                     f"the Checks tab has them all</a>")
    return "<br>".join(lines)


def wrapped(text: str, metrics: QFontMetrics, first: int, room: int, most: int) -> list[str]:
    """`text` broken at spaces into at most `most` lines, the first `first` pixels wide and the rest
    `room`; the last line cut with "..." where the text goes on."""
    lines: list[str] = []
    rest = text
    while rest and len(lines) < most - 1:
        width = first if not lines else room
        if metrics.horizontalAdvance(rest) <= width:
            break
        words, line = rest.split(" "), ""
        for word in words:
            trial = f"{line} {word}" if line else word
            if metrics.horizontalAdvance(trial) > width:
                break
            line = trial
        if not line:  # one word wider than the line: cut it there
            break
        lines.append(line)
        rest = rest[len(line):].lstrip(" ")
    if rest:
        lines.append(metrics.elidedText(rest, Qt.TextElideMode.ElideRight, first if not lines else room))
    return lines
