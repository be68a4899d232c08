"""Earlier reports of this node from the archive, newest first (as nodeqc.archive lists them)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from nodeqc.archive import node_reports
from nodeqc.errors import UsageError
from nodeqc.gui.reports import load_report
from nodeqc.gui.style import COLOURS

COLUMNS = ("Finished", "Verdict", "Failed", "Profile", "Operator", "Ticket", "Signature")
MAX_SHOWN = 50  # each is read and its signature checked; a node re-tested for years still opens at once
PATH_ROLE = Qt.ItemDataRole.UserRole


class HistoryList(QWidget):
    open_report = Signal(Path)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setAlternatingRowColors(True)
        self.tree.setStyleSheet("QTreeView::item { min-height: 30px; }")
        self.tree.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tree.itemActivated.connect(lambda item, _col: self.open_report.emit(item.data(0, PATH_ROLE)))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.tree, 1)

    def load(self, node_id: str | None, archive: Path | None = None) -> None:
        self.tree.clear()
        paths = node_reports(node_id, archive) if node_id else []
        self.caption.setText(f"Reports of node {node_id} in the archive, newest first: {len(paths)}"
                             + (f" (the newest {MAX_SHOWN} shown)" if len(paths) > MAX_SHOWN else "")
                             + ". Double-click one to open it.")
        for path in paths[:MAX_SHOWN]:
            self.tree.addTopLevelItem(self._row(path))

    def _row(self, path: Path) -> QTreeWidgetItem:
        try:
            report = load_report(path)
        except UsageError as e:
            item = QTreeWidgetItem([path.name, "UNREADABLE", "", "", "", "", ""])
            item.setToolTip(1, str(e))
            item.setData(0, PATH_ROLE, path)
            return item
        p = report.predicate
        failed = (p.get("summary") or {}).get("failed") or []
        finished = str(p.get("finished_at", ""))
        item = QTreeWidgetItem([finished.replace("T", " ")[:16], report.word, str(len(failed)),
                                str(p.get("profile", {}).get("name", "")), str(p.get("operator") or ""),
                                str(p.get("ticket") or ""), "verified" if report.verified else "NOT VERIFIED"])
        item.setToolTip(0, f"{finished}\n{path}")
        background, text = COLOURS[report.state]
        item.setBackground(1, QBrush(QColor(background)))
        item.setForeground(1, QBrush(QColor(text)))
        item.setToolTip(1, "\n".join(failed[:20]))
        item.setToolTip(2, "\n".join(failed[:20]))
        item.setToolTip(6, report.trust)
        item.setData(0, PATH_ROLE, path)
        return item

    def paths(self) -> list[Path]:
        return [self.tree.topLevelItem(i).data(0, PATH_ROLE) for i in range(self.tree.topLevelItemCount())]
