"""Earlier reports of this node from the archive, newest first, as `nodeqc history` lists them: through
the archive's index (nodeqc.archive.index), so each is verified (its signature by a trusted key, its
journal and telemetry beside it) before it is shown. A file in the node's directory that does not
verify (forged, altered, signed by a key not trusted) is shown as NOT VERIFIED with the reason,
never with the verdict it claims.

Above the list, the node's live health from `nodeqc watch` (its state beside the reports,
nodeqc.archive.watch) beside its last qualification, read again every WATCH_REFRESH_S: healthy,
needs attention, or needs re-qualification since when and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QLabel, QSizePolicy, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from nodeqc.archive.index import Archive
from nodeqc.archive.verified import Entry, Skipped
from nodeqc.archive.watch import NotVouched, last_cleared, load_state, needs_requalification, parse_stamp, stamp
from nodeqc.core.errors import UsageError
from nodeqc.gui.widgets import plain, tip
from nodeqc.report.answer import COLOURS

COLUMNS = ("Finished (UTC)", "Verdict", "Failed", "Profile", "Operator", "Ticket", "Signature")
MAX_SHOWN = 50  # a node re-tested for years still opens at once (the index verified each file once)
PATH_ROLE = Qt.ItemDataRole.UserRole
# How often the watch's line is read again: the watch writes its state once a pass (a minute under the
# packaged timer); reading a small file this often costs nothing and the line is never staler than that.
WATCH_REFRESH_S = 15
TREE_MIN_HEIGHT = 90  # its header and two rows: the rest scrolls when a failing run's banner needs the room


class HistoryList(QWidget):
    open_report = Signal(Path)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.caption = plain(QLabel())  # names the node: never markup
        self.caption.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setAlternatingRowColors(True)
        self.tree.setStyleSheet("QTreeView::item { min-height: 30px; }")
        self.tree.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tree.itemActivated.connect(lambda item, _col: self.open_report.emit(item.data(0, PATH_ROLE)))
        # A list scrolls: its preferred height is no claim on the window (as the plots', above).
        self.tree.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        self.tree.setMinimumHeight(TREE_MIN_HEIGHT)
        self.watch = QLabel()  # the live health from nodeqc watch, beside the last qualification
        self.watch.setWordWrap(True)
        self.watch.setTextFormat(Qt.TextFormat.PlainText)  # findings quote the node's kernel log: never markup
        self._watched: tuple[str, Path | None, str | None, dict[str, Any]] | None = None
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.refresh_watch)
        self._timer.start(WATCH_REFRESH_S * 1000)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.watch)
        layout.addWidget(self.caption)
        layout.addWidget(self.tree, 1)

    def load(self, node_id: str | None, archive: Path | None = None) -> None:
        self.tree.clear()
        if not node_id:
            self.caption.setText("No node: no history.")
            self._watched = None
            self.watch.setText("")
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
        self._watched = (node_id, archive, last_cleared(entries).get(node_id), index.trusted)
        self.refresh_watch()
        for entry in entries[:MAX_SHOWN]:
            self.tree.addTopLevelItem(self._row(entry))
        for skipped in unverified:
            self.tree.addTopLevelItem(self._unverified_row(skipped))

    def refresh_watch(self, now: float | None = None) -> None:
        """The watch's line: its last pass and what stands, beside the last qualification."""
        import time

        if self._watched is None:
            return
        node, archive, qualified, trusted = self._watched
        since = f"last passing qualification {qualified}" if qualified else "no passing qualification in the archive"
        try:
            state = load_state(node, trusted, archive)
        except NotVouched as e:
            self._show_watch(f"Watch: its state is not believed: {e}", "error")
            return
        except UsageError as e:
            self._show_watch(f"Watch: its state could not be read: {e}", "error")
            return
        if state is None:
            self._show_watch(f"Watch: not watched (nodeqc watch keeps no state for this node); {since}.", None)
            return
        now = time.time() if now is None else now
        standing = [f for f in state.findings if f.stands(now, parse_stamp(qualified))]
        ended = needs_requalification(state, parse_stamp(qualified), now)
        when = f"last pass {stamp(state.updated_at)}"
        failing = [f for f in standing if f.verdict == "fail"]
        if ended:
            first = min(ended, key=lambda f: f.first_seen)
            text = (f"Watch: NEEDS RE-QUALIFICATION since {stamp(first.first_seen)} ({when}; {since}, no longer "
                    f"valid): " + "; ".join(f.describe() for f in ended[:3]) + (f" (+{len(ended) - 3} more)" if len(ended) > 3 else ""))
            self._show_watch(text, "fail")
        elif failing:
            text = f"Watch: needs attention ({when}; {since}): " + "; ".join(
                f"{f.describe()} (clears {stamp(f.clears_at() or now)} unless seen again)" for f in failing[:3])
            self._show_watch(text, "warn")
        else:
            warned = f", {len(standing)} warning(s)" if standing else ""
            self._show_watch(f"Watch: healthy{warned} ({when}; {since}).", "pass")

    def _show_watch(self, text: str, verdict: str | None) -> None:
        self.watch.setText(text)
        if verdict is None:
            self.watch.setStyleSheet("")
        else:
            background, colour = COLOURS[verdict]
            self.watch.setStyleSheet(f"QLabel {{ background: {background}; color: {colour}; padding: 4px; }}")

    def _row(self, entry: Entry) -> QTreeWidgetItem:
        word = "ABORTED" if entry.status == "aborted" else entry.verdict
        item = QTreeWidgetItem([(entry.finished_at or "").replace("T", " ")[:16], word, str(len(entry.failed)),
                                entry.profile, entry.operator or "", entry.ticket or "", "verified"])
        item.setToolTip(0, tip(f"{entry.finished_at}\n{entry.path}"))
        background, text = COLOURS["aborted" if word == "ABORTED" else "pass" if word == "PASS" else "fail"]
        item.setBackground(1, QBrush(QColor(background)))
        item.setForeground(1, QBrush(QColor(text)))
        item.setToolTip(1, tip("\n".join(entry.failed[:20])))
        item.setToolTip(2, tip("\n".join(entry.failed[:20])))
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
            item.setToolTip(column, tip(f"{skipped.path}\nNOT VERIFIED: {skipped.reason}\nDo not rely on this file."))
        item.setData(0, PATH_ROLE, skipped.path)
        return item

    def paths(self) -> list[Path]:
        return [self.tree.topLevelItem(i).data(0, PATH_ROLE) for i in range(self.tree.topLevelItemCount())]
