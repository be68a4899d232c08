"""Who ran something and when, as every nodeqc record writes it (node reports, fabric reports,
captures): one spelling, so the archive sorts and compares them as text."""

from __future__ import annotations

import getpass
from datetime import datetime, timezone


def utc_now() -> str:
    """Now in UTC to the second, ISO 8601 with a Z: '2026-11-23T08:00:00Z'."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def current_user() -> str | None:
    """The login name of whoever runs nodeqc (the report's default operator); None when the system
    cannot say (no passwd entry for the uid, as in some containers)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
