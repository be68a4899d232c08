"""Scratch that a run makes in the temporary directory ($TMPDIR, else /tmp) and removes at its end:
the simulated node's sysfs tree (`nodeqc-sim-sysfs-*`, a directory), each stress worker's log
(`nodeqc-gpuN-*.log`) and the directory of the simulated node's fork server (`nodeqc-mp-*`).

Each name says whose it is: the process's PID namespace and pid, then mkdtemp's or mkstemp's
random part (nodeqc-sim-sysfs-4026531836-12345-k2j3h4l5). The owner removes what it made when it is
done with it, whether the run ended, raised, or was aborted by Ctrl-C or SIGTERM. A process killed
outright (SIGKILL, the OOM killer) runs nothing at its exit: what it left is removed by the next
nodeqc process that makes scratch there (`sweep`). It removes only names of this form, made by a
process of its own PID namespace that is gone, owned by this user, a directory or a regular file
itself (never a link, never followed). A pid in use again keeps its dead namesake's scratch until
that pid has gone too: a leak, never a live run's tree removed.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

# What nodeqc makes: the simulated sysfs tree, a worker's log (gpuN: the task's first GPU), the
# directory of the simulated node's fork server (mp, a directory: nodeqc.work.starts), the
# directory of a step's release files (release: TelemetrySampler.release_when).
NAME = re.compile(r"nodeqc-(?:sim-sysfs|gpu\d+|mp|release)-(?P<ns>\d+)-(?P<pid>\d+)-[a-z0-9_]+(?:\.log)?")
KIND = re.compile(r"sim-sysfs|gpu\d+|mp|release")

_swept: set[str] = set()  # the directories this process has swept (once each)


def pid_namespace() -> str | None:
    """This process's PID namespace (the inode number /proc/self/ns/pid names); None where it cannot
    be read: then no pid of a name can be told dead, and nothing is swept."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return None
    digits = re.fullmatch(r"pid:\[(\d+)\]", link)
    return digits.group(1) if digits else None


def prefix(kind: str) -> str:
    """The name's beginning for mkdtemp's or mkstemp's `prefix`: kind, namespace and this pid."""
    if not KIND.fullmatch(kind):
        raise ValueError(f"unknown scratch kind {kind!r}")
    return f"nodeqc-{kind}-{pid_namespace() or 0}-{os.getpid()}-"


def remove(path: str | Path) -> None:
    """Remove scratch this process made: a directory tree or a file; gone already is fine."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (in this PID namespace). Unsure is alive."""
    if pid <= 0:
        return True  # kill(0, ...) and kill(-1, ...) name groups, not a process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


def stale(directory: str | Path) -> list[Path]:
    """The scratch in `directory` that processes now gone left behind (see the module's words)."""
    ns = pid_namespace()
    if ns is None:
        return []
    uid, me = os.geteuid(), os.getpid()
    found = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        name = NAME.fullmatch(entry.name)
        if name is None or name["ns"] != ns or int(name["pid"]) == me or alive(int(name["pid"])):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        if st.st_uid != uid or not (is_dir or stat.S_ISREG(st.st_mode)) or is_dir == entry.name.endswith(".log"):
            continue  # another user's, a link, a FIFO; a tree named as a log or a log named as a tree
        found.append(Path(entry.path))
    return found


def sweep(directory: str | Path | None = None) -> list[Path]:
    """Remove what dead nodeqc processes left in `directory` (the temporary directory by default);
    once a process for each directory. Returns what it removed."""
    where = str(directory if directory is not None else tempfile.gettempdir())
    if where in _swept:
        return []
    _swept.add(where)
    gone = stale(where)
    for path in gone:
        # rmtree opens each directory without following links and checks it is the one it listed.
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                path.unlink()
            except OSError:
                pass
    return gone
