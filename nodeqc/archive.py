"""Where reports live: a per-user archive (XDG data dir), or a shared one named by NODEQC_ARCHIVE,
filed by node so nothing is ever overwritten."""

from __future__ import annotations

import os
import re
from pathlib import Path

import platformdirs

ARCHIVE_ENV = "NODEQC_ARCHIVE"


def archive_root() -> Path:
    return Path(os.environ.get(ARCHIVE_ENV) or platformdirs.user_data_path("nodeqc") / "reports")


def safe_name(text: str) -> str:
    """A file-name-safe rendering of a serial or host name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "unknown"


def node_dir(node_id: str) -> Path:
    """Where the reports of one node (by system serial, else host name) are filed."""
    return archive_root() / safe_name(node_id)


def node_reports(node_id: str) -> list[Path]:
    """The reports of one node in the archive, newest first."""
    directory = node_dir(node_id)
    if not directory.is_dir():
        return []
    return sorted(directory.glob("*.report.json"), key=lambda p: p.stat().st_mtime, reverse=True)
