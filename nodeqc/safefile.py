"""Creating output files safely, in directories other users may share (a team's report archive, /tmp).

Every file nodeqc writes (report, journal, telemetry, keys, Prometheus textfile, capture, exports,
PDF, screenshot) is made here, in one of two ways:

- `write_atomic`: the whole content at once. It goes to a fresh file made by `mkstemp` in the target
  directory (O_CREAT|O_EXCL with an unguessable name: a link planted in advance cannot catch the
  write), is synced, then renamed over the target. A reader sees the old file or the new one, never
  half of one; a rename replaces a link at the target itself, never the file it points to.
- `create_new`: a file that grows while the run goes on (journal, telemetry). O_EXCL|O_NOFOLLOW:
  it must not exist yet, not even as a link.

Errors come back as `OutputError`, one line that names the directory and says what is wrong
("no space left on DIR"), with any partial file removed.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from nodeqc.errors import UsageError

NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class OutputError(UsageError):
    """An output file could not be written (disk full, no permission, a link in the way)."""


def describe(e: OSError, path: Path) -> str:
    """One line for a failed write: what happened, and where."""
    directory = path.parent if str(path.parent) else Path(".")
    if e.errno == errno.ENOSPC:
        return f"no space left on {directory} (writing {path.name})"
    if e.errno == errno.EDQUOT:
        return f"disk quota exceeded on {directory} (writing {path.name})"
    if e.errno in (errno.EEXIST, errno.ELOOP):
        return f"{path}: something is already there (a file or a link): not writing through it"
    return f"{path}: cannot write: {e.strerror or e}"


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` as the whole new content of `path` (see the module's docstring)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        tmp = None
        _sync_dir(directory)
    except OSError as e:
        raise OutputError(describe(e, path)) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def create_new(path: Path, mode: int = 0o644) -> int:
    """A new file for writing, as a file descriptor: it must not exist, not even as a link."""
    try:
        return os.open(path, NEW_FILE_FLAGS, mode)
    except OSError as e:
        raise OutputError(describe(e, Path(path))) from None


def write_all(fd: int, data: bytes, path: Path) -> None:
    """Append `data` to an open file; a short write (disk full) is an OutputError naming the place."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise OutputError(describe(e, Path(path))) from None


def _sync_dir(directory: Path) -> None:
    """The rename itself survives a power cut once the directory is synced (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
