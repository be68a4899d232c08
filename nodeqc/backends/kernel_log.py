"""The kernel log over a run: what the kernel printed between the start and the end, read from
/dev/kmsg (its records carry a sequence number, so nothing is read twice and nothing from before the
run is counted), or from the journal (`journalctl -k -o json`) where /dev/kmsg cannot be read.

Reading /dev/kmsg needs root or CAP_SYSLOG when kernel.dmesg_restrict = 1 (the default on most
distributions). The lines are judged in nodeqc.checks.host_health.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from nodeqc.core.tool_output import ToolOutputError, load_json

KMSG = "/dev/kmsg"
MAX_RECORDS = 100_000  # a flood of messages is itself a finding; the first ones say what it was


@dataclass(frozen=True)
class KernelRecord:
    level: int  # syslog priority: 0 emerg .. 7 debug
    seq: int
    usec: int  # microseconds since boot
    text: str


def parse_kmsg(record: bytes | str) -> KernelRecord | None:
    """One /dev/kmsg record: 'PRIO,SEQ,USEC,FLAGS[,...];MESSAGE\\n[ KEY=VALUE\\n...]'
    (Documentation/ABI/testing/dev-kmsg). PRIO is facility * 8 + level."""
    text = record.decode("utf-8", errors="replace") if isinstance(record, bytes) else record
    head, sep, rest = text.partition(";")
    if not sep:
        return None
    fields = head.split(",")
    try:
        prio, seq, usec = int(fields[0]), int(fields[1]), int(fields[2])
    except (ValueError, IndexError):
        return None
    message = rest.split("\n", 1)[0]
    return KernelRecord(prio & 7, seq, usec, message)  # non-printable bytes stay escaped as \\xNN


class LogCutShort(OSError):
    """The log's reader failed part way: what it printed before is kept (`records`, real lines of the
    log, an Xid among them still judged), and the rest is said unread."""

    def __init__(self, message: str, records: list["KernelRecord"]):
        super().__init__(message)
        self.records = records


class KernelLog(ABC):
    """A window on the kernel log, opened at the start of a run."""

    source = ""
    # Records of the run overwritten before they were read (at least this many): what they said is
    # unknown, so the check cannot pass on what remains.
    lost = 0

    @abstractmethod
    def new_records(self) -> list[KernelRecord]:
        """What the kernel printed since the window opened (or since the last call)."""

    def close(self) -> None:  # noqa: B027 - optional
        pass


class Unreadable(KernelLog):
    """Neither /dev/kmsg nor the journal could be read: the check says so instead of passing."""

    def __init__(self, reason: str):
        self.reason = reason
        self.source = "none"

    def new_records(self) -> list[KernelRecord]:
        return []


class Kmsg(KernelLog):
    source = KMSG

    def __init__(self, path: str = KMSG, after_seq: int | None = None):
        """after_seq None: only what comes after now (the start of a run). A number (nodeqc watch,
        between two of its passes): the records after that one the ring buffer still holds, from
        its oldest; -1 for all of them (since boot, if the buffer kept that much)."""
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        if after_seq is None:
            os.lseek(self.fd, 0, os.SEEK_END)  # only what comes after the start of the run
        else:
            os.lseek(self.fd, 0, os.SEEK_SET)  # the oldest record the buffer holds
        self._after = after_seq
        self.lost = 0
        self.last_seq: int | None = None  # the newest record's sequence number read so far
        self._next_seq: int | None = None  # the sequence number the next record should carry

    def new_records(self) -> list[KernelRecord]:
        out: list[KernelRecord] = []
        wrapped = False
        while len(out) < MAX_RECORDS:
            try:
                data = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except OSError as e:
                # The ring buffer wrapped past our position: the kernel moves us to its oldest record
                # and says so once (EPIPE, Documentation/ABI/testing/dev-kmsg). Go on, and count the gap.
                if e.errno == errno.EPIPE:
                    wrapped = True
                    continue
                raise
            if not data:
                break
            rec = parse_kmsg(data)
            if rec is not None and self._after is not None:
                if rec.seq <= self._after:
                    continue  # read by an earlier pass
                if self._next_seq is None and self._after >= 0 and rec.seq > self._after + 1:
                    self.lost += rec.seq - self._after - 1  # overwritten since the earlier pass read
                self._after = None
            if rec is not None:
                self.last_seq = rec.seq
                if self._next_seq is not None and rec.seq > self._next_seq:
                    self.lost += rec.seq - self._next_seq
                elif self._next_seq is None and wrapped:
                    self.lost += 1  # lost before the first record read: how many is unknown, at least one
                wrapped = False
                self._next_seq = rec.seq + 1
                out.append(rec)
        return out

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class JournalctlLog(KernelLog):
    """`journalctl -k -o json --since @EPOCH`: the kernel's messages the journal kept."""

    source = "journalctl -k"

    def __init__(self, since: float | None = None):
        self.since = time.time() if since is None else since
        self._seen: set[str] = set()

    def new_records(self) -> list[KernelRecord]:
        proc = subprocess.run(["journalctl", "-k", "-o", "json", "--no-pager", "--since", f"@{int(self.since)}"],
                              capture_output=True, text=True, errors="replace", timeout=60)
        if proc.returncode != 0:
            # Killed (the OOM killer under the memory test) or refused: what it printed may be none or
            # part of the log, which read as "nothing of note" would be a pass for a log not read.
            why = (proc.stderr.strip().splitlines() or [""])[-1][:200]
            raise LogCutShort(f"journalctl -k exited {proc.returncode}" + (f": {why}" if why else ""),
                              parse_journal_json(proc.stdout, self._seen))
        return parse_journal_json(proc.stdout, self._seen)


def parse_journal_json(text: str, seen: set[str] | None = None) -> list[KernelRecord]:
    """Lines of `journalctl -o json`: one JSON object each, MESSAGE and PRIORITY as strings (MESSAGE
    may be a list of bytes when it was not valid UTF-8). Never raises: the kernel log is judged by
    its text, so a line out of the journal's format is kept as a record of its own text (an Xid in
    it is still found), a PRIORITY that is not a syslog level (0-7) reads as info (6), and a
    MESSAGE of another type as its JSON text. Lines that are not JSON are journalctl's own notes."""
    seen = set() if seen is None else seen
    out = []
    for line in text.splitlines():
        try:
            entry = load_json(line, "a journal line")
        except json.JSONDecodeError:
            continue
        except ToolOutputError:
            entry = None  # nested deeper, or a longer number, than any journal entry: kept as its text
        if not isinstance(entry, dict):
            seen.add(f"line:{len(seen)}")
            out.append(KernelRecord(6, len(seen), 0, line[:MAX_MESSAGE_CHARS]))
            continue
        cursor = entry.get("__CURSOR", "")
        cursor = cursor if isinstance(cursor, str) else ""
        if cursor and cursor in seen:
            continue
        seen.add(cursor)
        out.append(KernelRecord(_journal_int(entry.get("PRIORITY"), 7, 6), len(seen),
                                _journal_int(entry.get("__MONOTONIC_TIMESTAMP"), 2**64 - 1, 0),
                                _journal_text(entry.get("MESSAGE", ""))))
    return out


MAX_MESSAGE_CHARS = 16384  # the kernel's printk record holds at most 1 KiB of text (PRINTKRNL_MAX_LINE); 16x that is not one


def _journal_int(value: Any, most: int, default: int) -> int:
    """A journal field that holds a whole number as a string ("3"), within 0..most, else default."""
    text = value if isinstance(value, str) else str(value) if isinstance(value, int) and not isinstance(value, bool) else ""
    if not re.fullmatch(r"[0-9]{1,20}", text.strip()):
        return default
    n = int(text)
    return n if n <= most else default


def _journal_text(message: Any) -> str:
    if isinstance(message, list) and all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in message):
        message = bytes(message).decode("utf-8", errors="replace")
    elif not isinstance(message, str):
        try:
            message = json.dumps(message)
        except (ValueError, RecursionError):
            message = repr(message)
    return message[:MAX_MESSAGE_CHARS]


def open_kernel_log(path: str = KMSG, after_seq: int | None = None, since: float | None = None) -> KernelLog:
    """/dev/kmsg, else the journal, else a log that says why it cannot be read. after_seq (Kmsg) and
    since (the journal, Unix time): where an earlier pass of nodeqc watch stopped reading."""
    try:
        return Kmsg(path, after_seq)
    except OSError as e:
        reason = f"{path}: {e.strerror}"
    if shutil.which("journalctl"):
        probe = subprocess.run(["journalctl", "-k", "-n", "1", "-o", "json", "--no-pager"],
                               capture_output=True, text=True, errors="replace", timeout=30)
        if probe.returncode == 0 and probe.stdout.strip():
            return JournalctlLog(since)
        reason += "; journalctl -k shows nothing (run as root, or in the systemd-journal/adm group)"
    else:
        reason += "; no journalctl"
    return Unreadable(reason + ": run nodeqc as root (or with CAP_SYSLOG) to read the kernel log")
