"""Small widgets the window and the tiles share."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy


class ElidedLabel(QLabel):
    """Plain text whose lines shorten themselves with "…" rather than widen the window; the whole
    text is in the tooltip."""

    def __init__(self, text: str = "", mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight):
        super().__init__()
        self.full = ""
        self.mode = mode
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setFullText(text)

    def setFullText(self, text: str) -> None:  # noqa: N802 - Qt's naming
        self.full = text
        self.setToolTip(text)
        self._elide()

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.width(), 40)
        self.setText("\n".join(self.fontMetrics().elidedText(line, self.mode, width) for line in self.full.split("\n")))
