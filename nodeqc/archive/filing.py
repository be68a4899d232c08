"""Where reports are filed: a per-user archive (XDG data dir), or a shared one named by NODEQC_ARCHIVE
(or --archive DIR), one directory per node (by its node key: system serial, else host name), so
nothing is ever overwritten. The archive's index of these files is nodeqc.archive.index."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import platformdirs

from nodeqc.core.errors import UsageError

ARCHIVE_ENV = "NODEQC_ARCHIVE"
REPORT_GLOB = "*.report.json"
REPORT_SUFFIX = ".report.json"
EVIDENCE_SUFFIXES = (".journal.jsonl", ".telemetry.csv.gz")  # beside a report, by its stem (nodeqc.run.paths.RunPaths)


def archive_root(override: str | Path | None = None, simulated: bool = False) -> Path:
    """The archive: `override` (--archive), else $NODEQC_ARCHIVE, else the per-user one. A simulated
    or replayed node's runs default to a per-user archive of their own ("simulated" beside "reports"):
    a demo or a training run never lands among the real nodes that `history`, `fleet` and the
    automatic re-test read (a twin's serial is the same on every run: its reports are one node's).
    --archive or $NODEQC_ARCHIVE, named on purpose, hold both; simulated reports say so there."""
    if override:
        return Path(override)
    if os.environ.get(ARCHIVE_ENV):
        return Path(os.environ[ARCHIVE_ENV])
    return platformdirs.user_data_path("nodeqc") / ("simulated" if simulated else "reports")


def chosen_archive(option: str | None, simulated: bool = False) -> Path:
    """The archive a command uses: --archive OPTION, which must be an existing directory (a mistyped
    one would file or look where nobody does), else archive_root's default."""
    if option and not Path(option).is_dir():
        what = "not a directory" if Path(option).exists() else "no such directory"
        raise UsageError(f"--archive {option}: {what}")
    return archive_root(option, simulated)


# The longest rendering of a name in a file's name: the node's serial or host name is the node's to
# say, and a capture's 1,000-character host name made a report name past NAME_MAX (255 bytes), an
# internal error. Longer ones keep their start and a digest of the whole, so two stay apart.
SAFE_NAME_MAX = 120


def safe_name(text: str) -> str:
    """A file-name-safe rendering of a serial or host name, at most SAFE_NAME_MAX characters."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "unknown"
    if len(name) > SAFE_NAME_MAX:
        name = f"{name[:SAFE_NAME_MAX - 13]}_{hashlib.sha256(text.encode(errors='replace')).hexdigest()[:12]}"
    return name


def node_dir(node_id: str, root: str | Path | None = None) -> Path:
    """Where the reports of one node (by system serial, else host name) are filed."""
    return archive_root(root) / safe_name(node_id)


def node_reports(node_id: str, root: str | Path | None = None) -> list[Path]:
    """The reports of one node in the archive, newest first."""
    directory = node_dir(node_id, root)
    if not directory.is_dir():
        return []
    return sorted(directory.glob(REPORT_GLOB), key=lambda p: p.stat().st_mtime, reverse=True)


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
