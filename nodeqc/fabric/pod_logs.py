"""The pods' logs of one Kubernetes round (`kubectl logs --prefix`), read from a file, a pod at a time.

kubectl bounds each pod's log (`--limit-bytes`, an end's output as the launchers take it: 16 MiB),
not their sum: a round of 2,048 pods could print 32 GiB, and the nodes under test choose what they
print. Held whole in memory, as it was (the 2026-11-28 audit), a round of nodes that each printed
their limit could end the operator's run. So kubectl writes to a file, one pass notes where each
pod's result lines are (a line with a result's start, lines.RESULT_START; a worker prints one),
and each pod's text is read back only while its pod is judged. Lines without a result say nothing a
round uses and are not kept; a line is read to MAX_LINE_CHARS, past which it is unreadable (lines.scan).
"""

from __future__ import annotations

import re
from typing import IO, Iterator

from nodeqc.fabric.lines import MAX_LINE_CHARS, MAX_RESULTS_READ, RESULT_START

# kubectl logs --prefix: "[pod/NAME/CONTAINER] " before each line; pod names are DNS labels.
POD_PREFIX = re.compile(rb"\[pod/([a-z0-9][a-z0-9.-]{0,252})/[a-z0-9-]{1,63}\] ")
_PREFIX_MAX = 6 + 253 + 1 + 63 + 2
# Of one line, what is read: a prefix and a line one character too long to be read as a result, so
# lines.scan still names it too long. The rest of a longer line is skipped, never held.
_LINE_READ = _PREFIX_MAX + 4 * (MAX_LINE_CHARS + 1)  # UTF-8: at most 4 bytes a character
# Where a result's start may sit in a line (lines.scan finds it anywhere): its marker's bytes.
_START = re.compile(RESULT_START.pattern.encode())


class PodLogs:
    """What each pod printed, by pod name: `kubectl logs --prefix` starts every line with
    [pod/NAME/CONTAINER], and a pod cannot write before its own line's start (what it prints after a
    newline gets its own pod's prefix). A line without a prefix is no pod's."""

    def __init__(self, spool: IO[bytes]):
        self._spool = spool
        # pod -> the (offset, length) of its first result lines (MAX_RESULTS_READ and one more:
        # enough for lines.scan to refuse a second result), and how many more it printed.
        self._lines: dict[str, list[tuple[int, int]]] = {}
        self._more: dict[str, int] = {}
        spool.seek(0)
        at = 0
        while True:
            line = spool.readline(_LINE_READ)
            if not line:
                break
            start, at = at, at + len(line)
            if not line.endswith(b"\n"):
                at += _skip_rest(spool)
            # Lines end at \n only, where kubectl starts its prefix: a pod printing \r, \x1c-\x1e, \x85 or
            # \u2028 before a forged "[pod/OTHER/...]" has that text read as its own line's.
            m = POD_PREFIX.match(line)
            if m is None or not _START.search(line, m.end()):
                continue
            pod = m.group(1).decode()
            kept = self._lines.setdefault(pod, [])
            if len(kept) > MAX_RESULTS_READ:
                self._more[pod] = self._more.get(pod, 0) + 1
            else:
                kept.append((start + m.end(), len(line) - m.end()))

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def text(self, pod: str) -> str:
        """The pod's result lines, read back now (at most MAX_RESULTS_READ and one more, each up to
        one character past MAX_LINE_CHARS)."""
        parts = []
        for offset, length in self._lines.get(pod, []):
            self._spool.seek(offset)
            parts.append(self._spool.read(length).decode("utf-8", errors="replace").removesuffix("\n"))
        return "\n".join(parts)

    def unread(self, pod: str) -> list[str]:
        """What was not read of the pod's results, as lines.scan says what it did not read."""
        more = self._more.get(pod, 0)
        return [f"{more} more lines with a result, not read: a worker prints one"] if more else []


def _skip_rest(spool: IO[bytes]) -> int:
    """Read past the rest of an overlong line, a bounded piece at a time; the bytes skipped."""
    skipped = 0
    while True:
        piece = spool.readline(1 << 20)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return skipped
