"""Creating output files safely, in directories other users may share (a team's report archive, /tmp).

Every file nodeqc writes (report, journal, telemetry, keys, Prometheus textfile, capture, exports,
PDF, screenshot) is made here, in one of two ways:

- `write_atomic`: the whole content at once. It goes to a fresh file made by `mkstemp` in the target
  directory (O_CREAT|O_EXCL with an unguessable name: a link planted in advance cannot catch the
  write), is synced, then renamed over the target. A reader sees the old file or the new one, never
  half of one; a rename replaces a link at the target itself, never the file it points to.
- `create_new`: a file that grows while the run goes on (journal, telemetry). O_EXCL|O_NOFOLLOW:
  it must not exist yet, not even as a link. `claim` makes one empty, to take a name (a run's
  stem); `open_append` opens it again to add to it, never through a link.
- `link_new`: a file made once and never replaced (the signing key, the index secret): written whole
  to a private temporary file, then linked to its name; link() never replaces what is there, so of
  several processes the first wins and the others read its file.

Errors come back as `OutputError`, one line that names the directory and says what is wrong
("no space left on DIR"), with any partial file removed.

Files are also read here, those a person or another node hands nodeqc (a baseline, a report, its
evidence, a telemetry file): `open_regular` opens only a regular file (never a FIFO, which would
hang the read, nor a device such as /dev/zero, which never ends), and with `follow=False` never
through a link; `read_bounded` reads such a file once, refusing one larger than the caller's limit.
`read_input`, `as_text` and `as_toml` read the inputs a person writes (profile, scenario, baseline,
host list, topology) and say why one cannot be read in the same words for each (`UnreadableInput`).
No other module writes a file or opens one to write (tests/test_safefile.py greps the package).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from nodeqc.core.errors import UsageError
from nodeqc.core.text import not_utf8

NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
APPEND_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a FIFO with no writer opens at once (and is then refused) instead of hanging the open.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


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


def check_replaceable(path: Path) -> None:
    """OutputError when `path` is something a rename must not replace: a device, a FIFO, a socket or
    a directory. Run as root, `export --output /dev/full` replaced the device node with a file (and
    /dev/null would have gone the same way); a FIFO a reader waits on was replaced as silently. A
    regular file, a link (replaced itself, never followed) or nothing at all is fine."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise OutputError(describe(e, path)) from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        kind = next((name for test, name in _KINDS if test(mode)), "something else")
        raise OutputError(f"{path}: is {kind}, not a file: nodeqc writes a regular file in its place only")


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` as the whole new content of `path` (see the module's docstring)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    tmp: str | None = None
    check_replaceable(path)
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


def probe_directory(path: Path) -> None:
    """Before any work: create (then remove) a temporary file beside `path` as write_atomic will;
    OutputError if it cannot be. Tried, not asked: os.access says yes to root in /proc or on a
    read-only mount, and the run then failed only at its end."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    check_replaceable(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OutputError(f"cannot write in {directory}: {e.strerror or e}") from None
    os.close(fd)
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


def claim(path: Path) -> bool:
    """Take a name by creating it empty (O_EXCL|O_NOFOLLOW): False when something is there already,
    a file or a link, so two runs starting together never share a name."""
    try:
        os.close(os.open(path, NEW_FILE_FLAGS, 0o644))
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno == errno.ELOOP:
            return False
        raise OutputError(describe(e, Path(path))) from None
    return True


def open_append(path: Path, mode: int = 0o644) -> int:
    """A file to add to (a journal whose name `claim` took), as a file descriptor; never through a
    link (OSError ELOOP when one is there)."""
    return os.open(path, APPEND_FLAGS, mode)


def link_new(path: Path, data: bytes, mode: int = 0o600) -> bool:
    """Make `path` with `data`, whole, unless something is there already: True when this call made
    it, False when another was first (its file stays). OutputError when it cannot be written."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)  # mode 0600
    except OSError as e:
        raise OutputError(describe(e, path)) from None
    try:
        try:
            os.fchmod(fd, mode)
            write_all(fd, data, path)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)  # whole when it appears; loses to an earlier one
    except FileExistsError:
        return False
    except OSError as e:
        raise OutputError(describe(e, path)) from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return True


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


# ---------------------------------------------------------------------- reading what others hand us


class NotAFile(ValueError):
    """An input that is not a regular file, or is larger than any file of its kind: the reason, in
    words ("not a regular file (a FIFO)"), for the caller to put after the file's name."""


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))


def open_regular(path: Path, follow: bool = True) -> int:
    """A regular file opened to read, as a file descriptor. OSError when it cannot be opened
    (FileNotFoundError when absent; with follow=False, ELOOP when it is a link); NotAFile when it
    is a FIFO, a device, a directory or a socket (opened non-blocking, so a FIFO cannot hang us)."""
    fd = os.open(path, READ_FLAGS | (0 if follow else os.O_NOFOLLOW))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "something else")
            raise NotAFile(f"not a regular file ({kind})")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(path: Path, limit: int, follow: bool = True) -> bytes:
    """A regular file's bytes, read once: NotAFile when it is not a regular file or holds more than
    `limit` bytes (also one that grows past it while read); OSError as open_regular."""
    fd = open_regular(path, follow)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise NotAFile(f"file of {size} bytes, more than any such file ({limit} bytes)")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise NotAFile(f"file grew past {limit} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


class UnreadableInput(ValueError):
    """Why an input could not be read, in words to put after its name ("cannot read it: Permission
    denied"); the error it came from is its __cause__ (a FileNotFoundError, say)."""


def read_input(path: Path, limit: int, what: str) -> bytes:
    """An input file's bytes through read_bounded (never a FIFO, a device, or more than any `what`)."""
    try:
        return read_bounded(path, limit)
    except NotAFile as e:
        raise UnreadableInput(f"{str(e).replace('any such file', f'any {what}')}: not a {what}") from e
    except OSError as e:
        raise UnreadableInput(f"cannot read it: {e.strerror or e}") from e


def as_text(raw: bytes) -> str:
    """UTF-8 text, an editor's byte-order mark dropped."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UnreadableInput(f"cannot read it: {not_utf8(e)}") from e


def as_toml(raw: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(as_text(raw))
    except tomllib.TOMLDecodeError as e:
        raise UnreadableInput(f"invalid TOML: {e}") from e
    except RecursionError as e:  # Python's TOML reader recurses once a nesting level
        raise UnreadableInput("invalid TOML: arrays or tables nested too deeply") from e
