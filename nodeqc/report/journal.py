"""The run's journal: one JSON object a line, appended and synced to disk as things happen, so a run
that is killed (SIGKILL, power loss) leaves every result it had reached."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nodeqc.core.na import or_none
from nodeqc.core.safefile import NotAFile, OutputError, describe, open_append, open_regular, write_all


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
    only the last line, so any other is damage to say (`nodeqc show`), never to pass over silently."""
    return _records(text.splitlines(), None)


# One record's longest line: a check's result with its evidence is some kB, a week's burn-in verdict
# with its windows well under a MB. A longer line is damage, passed over without being held whole.
MAX_RECORD_BYTES = 16 << 20


def read_records(path: Path, keep: frozenset[str], limit: int = MAX_JOURNAL_BYTES) -> tuple[list[dict[str, Any]], int]:
    """The records of the types in `keep` of a journal file, and its damaged lines (as damaged_lines
    counts them), read line by line: `show` had read the whole file, decoded it whole and held every
    record, 1.1 GB of memory for 21 MB of `{}` lines. OSError and NotAFile (a FIFO, a device, a file
    past `limit`) from safefile, for the caller to say."""
    fd = open_regular(path)
    total = 0

    def lines() -> Any:
        nonlocal total
        with os.fdopen(fd, "rb") as f:
            while line := f.readline(MAX_RECORD_BYTES + 1):
                total += len(line)
                if total > limit:
                    raise NotAFile(f"file of more than {limit} bytes, more than any journal")
                if len(line) > MAX_RECORD_BYTES:  # the rest of it read past, never held
                    while not line.endswith(b"\n") and (line := f.readline(MAX_RECORD_BYTES + 1)):
                        total += len(line)
                        if total > limit:
                            raise NotAFile(f"file of more than {limit} bytes, more than any journal")
                    yield b""
                else:
                    yield line

    return _records(lines(), keep)


def _records(lines: Any, keep: frozenset[str] | None) -> tuple[list[dict[str, Any]], int]:
    """A number of more digits than Python converts (ValueError, not a JSONDecodeError) is no record:
    it ended `show` in an internal error. A blank line is none either, without an exception to raise
    and catch (20 MB of them took 90 s)."""
    records: list[dict[str, Any]] = []
    damaged, last_bad = 0, False
    for line in lines:
        record = None
        if line.strip():
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                record = None
        last_bad = not isinstance(record, dict)
        if last_bad:
            damaged += 1
        elif keep is None or record.get("type") in keep:
            records.append(record)
    return records, damaged - last_bad  # the last line, torn by a kill, is no damage
