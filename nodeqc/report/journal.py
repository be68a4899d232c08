"""The run's journal: one JSON object a line, appended and synced to disk as things happen, so a run
that is killed (SIGKILL, power loss) leaves every result it had reached."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nodeqc.core.na import or_none
from nodeqc.core.safefile import OutputError, describe, open_append, write_all


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=_default, separators=(",", ":"), ensure_ascii=False)


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    value = or_none(obj)
    if value is None:
        return None
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


class Journal:
    def __init__(self, path: Path):
        self.path = path
        # Never through a link: the runner claimed this name with O_EXCL (nodeqc.core.safefile).
        self._fd = open_append(path)

    def append(self, record: dict[str, Any]) -> None:
        """One record, whole and synced; OutputError (one line, "no space left on DIR") when the
        disk refuses it."""
        write_all(self._fd, (dumps(record) + "\n").encode(), self.path)
        try:
            os.fsync(self._fd)
        except OSError as e:
            raise OutputError(describe(e, self.path)) from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


MAX_JOURNAL_BYTES = 1 << 30  # what `show` reads of a journal: far more than a week's burn-in writes


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Every complete record; a line torn by a kill mid-write is dropped."""
    return parse_journal(path.read_text(encoding="utf-8", errors="replace"))


def parse_journal(text: str) -> list[dict[str, Any]]:
    """A journal's records (JSON objects, one a line); torn, odd or too deeply nested lines dropped."""
    return damaged_lines(text)[0]


def damaged_lines(text: str) -> tuple[list[dict[str, Any]], int]:
    """A journal's records, and how many of its lines before the last were no record: a kill tears
    only the last line, so any other is damage to say (`nodeqc show`), never to pass over silently.
    A number of more digits than Python converts (ValueError, not a JSONDecodeError) is no record
    either: it ended `show` in an internal error."""
    records, damaged = [], 0
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if not line.strip():  # no record, and no exception to raise and catch: 20 MB of them took 90 s
            record = None
        else:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                record = None
        if isinstance(record, dict):
            records.append(record)
        elif n < len(lines) - 1:
            damaged += 1
    return records, damaged
