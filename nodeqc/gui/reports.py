"""Signed reports for a person in the app: shown whole as `nodeqc show` shows them (the printable
summary, nodeqc.report.printable, is the Export PDF button's)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout,
                               QWidget)

from nodeqc.report.printable import LoadedReport
from nodeqc.report.render import render_report


class ReportDialog(QDialog):
    """The whole report as text, exactly as `nodeqc show` prints it."""

    def __init__(self, report: LoadedReport, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"nodeqc report: {report.path.name}")
        self.resize(1100, 700)
        self.text = text = QPlainTextEdit(render_report(report.predicate, report.trust))
        text.setReadOnly(True)
        text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        path = QLabel(str(report.path))
        path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(path)
        layout.addWidget(text, 1)
        layout.addWidget(buttons)
