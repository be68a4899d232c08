"""Signed reports for a person in the app: shown whole as `nodeqc show` shows them (the printable
summary, nodeqc.report.printable, is the Export PDF button's)."""

from __future__ import annotations

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget

from nodeqc.report.printable import LoadedReport
from nodeqc.report.render import render_report


class ReportDialog(QDialog):
    """The whole report as text, exactly as `nodeqc show` prints it."""

    def __init__(self, report: LoadedReport, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"nodeqc report: {report.path.name}")
        # At most the screen it opens on: a fixed 1100x700 put the Close button off a crash cart's
        # 1024x600 screen.
        room = (parent or self).screen().availableGeometry()
        self.resize(min(1100, room.width()), min(700, room.height()))
        self.text = text = QPlainTextEdit(render_report(report.predicate, report.trust))
        text.setReadOnly(True)
        text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        # A read-only line, not a label: a long path scrolls within it (and copies whole) rather than
        # widen the dialog past the screen.
        path = QLineEdit(str(report.path))
        path.setReadOnly(True)
        path.setFrame(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(path)
        layout.addWidget(text, 1)
        layout.addWidget(buttons)
