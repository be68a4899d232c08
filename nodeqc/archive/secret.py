"""This user's secret for the caches it keeps of verified reports (the archive's index, the fleet's
figures), and the HMAC each cached row carries under it: a row edited in a cache, or made under
another secret, is noticed and taken from its report again."""

from __future__ import annotations

import hmac
import os
import stat
from typing import Any

from nodeqc.core.safefile import OutputError, link_new


def index_secret() -> bytes | None:
    """This user's secret for the index rows' HMACs: 32 random bytes in the config directory, made
    on first use (atomically: concurrent first users all end up with the same one), readable only by
    the user. None when there is none to be had (the index is then kept in memory only)."""
    from nodeqc.report.keys import config_dir

    path = config_dir() / "index-secret"
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                link_new(path, os.urandom(32), 0o600)  # whole when it appears; loses to an earlier one
            except (OSError, OutputError):
                return None
            continue
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read(33)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077 and len(data) == 32:
            return data
        return None
    return None


def row_mac(secret: bytes, values: tuple[Any, ...]) -> str:
    """HMAC-SHA256 of a row of a cache this user keeps (the index, the fleet's figures) under the
    index secret: strings and None, where repr() is unambiguous, and fast."""
    return hmac.digest(secret, repr(values).encode(), "sha256").hex()


def row_mac_ok(secret: bytes, values: tuple[Any, ...], mac: Any) -> bool:
    """Whether `mac` is the row's: an edited row (or one made under another secret) is not."""
    return isinstance(mac, str) and hmac.compare_digest(row_mac(secret, values), mac)
