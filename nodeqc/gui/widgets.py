"""Small widgets the window and the tiles share."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


def tip(text: str) -> str:
    """A tooltip of text that may be the node's, shown as written: Qt takes a tooltip that looks like
    markup for rich text, and an <img> of /dev/zero in a host name crashed the app (2026-11-29)."""
    return "<qt>" + html.escape(text).replace("\n", "<br>") + "</qt>" if text else ""


def plain(label: QLabel) -> QLabel:
    """`label` showing its text as written, never as markup (a node's serial of <img src=FIFO> hung
    the window; <font size=6> restyled it: the 2026-11-29 fuzzing)."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


class ElidedLabel(QLabel):
    """Plain text whose lines shorten themselves with "…" rather than widen the window; the whole
    text is in the tooltip."""

    def __init__(self, text: str = "", mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight):
        super().__init__()
        plain(self)
        self.full = ""
        self.mode = mode
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setFullText(text)

    def setFullText(self, text: str) -> None:  # noqa: N802 - Qt's naming
        self.full = text
        self.setToolTip(tip(text))
        self._elide()

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        # Its own width, however narrow: elided at more, a narrow label showed a cut word ("2 fai") on
        # a dense tile; at less than the "…" it shows nothing, the whole still in its tooltip.
        width = max(self.width(), 1)
        self.setText("\n".join(self.fontMetrics().elidedText(line, self.mode, width) for line in self.full.split("\n")))


class FittingLabel(ElidedLabel):
    """An ElidedLabel that asks for its whole text's width and gives way down to `least` pixels when
    the window is narrower (a 1024-pixel crash cart): the row shortens it rather than widen the window.
    With `least` None it never gives way (the node's serial: the others in its row are cut first)."""

    def __init__(self, text: str = "", least: int | None = 60,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight):
        super().__init__(text, mode)
        self.least = least
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def setFullText(self, text: str) -> None:  # noqa: N802 - Qt's naming
        super().setFullText(text)
        self.updateGeometry()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        width = max((metrics.horizontalAdvance(line) for line in self.full.split("\n")), default=0)
        return QSize(width + margins.left() + margins.right() + 2, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        whole = self.sizeHint().width()
        return QSize(whole if self.least is None else min(self.least, whole), super().minimumSizeHint().height())


def repolish(widgets: list[QWidget]) -> None:
    """Apply the style sheet again to these widgets, after a property its rules select on changed."""
    for widget in widgets:
        widget.style().unpolish(widget)
        widget.style().polish(widget)
        widget.updateGeometry()


def field_name(name: str) -> QLabel:
    """A name in the window's node panel."""
    label = QLabel(name)
    label.setObjectName("fieldName")
    return label


def field_value(text: str = "", least: int | None = 60) -> FittingLabel:
    """A value of the node panel: whole where the window has room, shortened with "…" (whole in its
    tooltip) on a narrow screen; never shortened with `least` None."""
    label = FittingLabel(text, least)
    label.setObjectName("fieldValue")
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label
