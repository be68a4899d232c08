"""Earlier reports of this node from the archive, newest first, as `nodeqc history` lists them: through
the archive's index (nodeqc.archive.index), so each is verified (its signature by a trusted key, its
journal and telemetry beside it) before it is shown. A file in the node's directory that does not
verify (forged, altered, signed by a key not trusted) is shown as NOT VERIFIED with the reason,
never with the verdict it claims."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from nodeqc.archive.index import Archive
from nodeqc.archive.verified import Entry, Skipped
from nodeqc.core.errors import UsageError
from nodeqc.report.answer import COLOURS

COLUMNS = ("Finished", "Verdict", "Failed", "Profile", "Operator", "Ticket", "Signature")
MAX_SHOWN = 50  # a node re-tested for years still opens at once (the index verified each file once)
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
        if not node_id:
            self.caption.setText("No node: no history.")
            return
        index_problems: list[str] = []  # the index's own (rebuilt from the files), said under the list
        index = Archive(archive, warn=index_problems.append)
        try:
            entries, unverified = index.history(node_id)
        except UsageError as e:
            self.caption.setText(f"The archive could not be read: {e}")
            return
        finally:
            index.close()
        self.caption.setText(f"Reports of node {node_id} in the archive, newest first: {len(entries)} verified"
                             + (f" (the newest {MAX_SHOWN} shown)" if len(entries) > MAX_SHOWN else "")
                             + (f"; {len(unverified)} NOT VERIFIED (forged, altered, or signed by a key not "
                                "trusted): listed last, never counted" if unverified else "")
                             + ". Double-click one to open it."
                             + "".join(f"\nIndex: {line}" for line in index_problems))
        for entry in entries[:MAX_SHOWN]:
            self.tree.addTopLevelItem(self._row(entry))
        for skipped in unverified:
            self.tree.addTopLevelItem(self._unverified_row(skipped))

    def _row(self, entry: Entry) -> QTreeWidgetItem:
        word = "ABORTED" if entry.status == "aborted" else entry.verdict
        item = QTreeWidgetItem([(entry.finished_at or "").replace("T", " ")[:16], word, str(len(entry.failed)),
                                entry.profile, entry.operator or "", entry.ticket or "", "verified"])
        item.setToolTip(0, f"{entry.finished_at}\n{entry.path}")
        background, text = COLOURS["aborted" if word == "ABORTED" else "pass" if word == "PASS" else "fail"]
        item.setBackground(1, QBrush(QColor(background)))
        item.setForeground(1, QBrush(QColor(text)))
        item.setToolTip(1, "\n".join(entry.failed[:20]))
        item.setToolTip(2, "\n".join(entry.failed[:20]))
        item.setToolTip(6, f"signature: verified (key {entry.keyid[:16]}); sha256 {entry.sha256[:16]}")
        item.setData(0, PATH_ROLE, entry.path)
        return item

    def _unverified_row(self, skipped: Skipped) -> QTreeWidgetItem:
        """Nothing the file claims is shown: not its time, verdict or operator."""
        item = QTreeWidgetItem([skipped.path.name, "NOT VERIFIED", "", "", "", "", f"NOT VERIFIED: {skipped.reason}"])
        background, text = COLOURS["error"]
        for column in (1, 6):
            item.setBackground(column, QBrush(QColor(background)))
            item.setForeground(column, QBrush(QColor(text)))
        for column in range(len(COLUMNS)):
            item.setToolTip(column, f"{skipped.path}\nNOT VERIFIED: {skipped.reason}\nDo not rely on this file.")
        item.setData(0, PATH_ROLE, skipped.path)
        return item

    def paths(self) -> list[Path]:
        return [self.tree.topLevelItem(i).data(0, PATH_ROLE) for i in range(self.tree.topLevelItemCount())]
