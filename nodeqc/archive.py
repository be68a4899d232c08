"""Where reports live: a per-user archive (XDG data dir), or a shared one named by NODEQC_ARCHIVE
(or --archive DIR), filed by node so nothing is ever overwritten.

The signed report files are the truth. The SQLite index beside them (`.index.sqlite3`) is a cache
that makes the archive searchable: every listing first brings it up to date with the files (new,
changed and removed reports, by size and mtime), and it is rebuilt from the files when it is lost,
damaged, of an older schema, or was made with a different set of trusted keys. A file that is
corrupt, unsigned or signed by a key that is not trusted is recorded as skipped, with the reason,
and never listed as a report.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import platformdirs

from nodeqc.errors import UsageError
from nodeqc.na import is_na

ARCHIVE_ENV = "NODEQC_ARCHIVE"
INDEX_NAME = ".index.sqlite3"  # safe_name() strips leading dots, so no node directory has this name
SCHEMA_VERSION = 1
REPORT_GLOB = "*.report.json"


def archive_root(override: str | Path | None = None) -> Path:
    if override:
        return Path(override)
    return Path(os.environ.get(ARCHIVE_ENV) or platformdirs.user_data_path("nodeqc") / "reports")


def safe_name(text: str) -> str:
    """A file-name-safe rendering of a serial or host name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "unknown"


def node_key(serial: Any, hostname: Any) -> str:
    """What identifies a node in the archive: its system serial, else its host name."""
    return str(hostname) if is_na(serial) or serial == "" else str(serial)


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
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------- the index


@dataclass(frozen=True)
class Entry:
    """One verified report, as the index knows it."""

    path: Path
    sha256: str
    node: str
    hostname: str
    verdict: str  # PASS | FAIL
    status: str  # complete | aborted
    partial: bool
    simulated: bool
    profile: str
    started_at: str
    finished_at: str
    operator: str | None
    ticket: str | None
    keyid: str
    previous: str | None  # sha256 of the report this one re-tested
    failed: list[str]

    @property
    def qualified(self) -> bool:
        """Only a complete, full run that passed counts as a qualification."""
        return self.verdict == "PASS" and self.status == "complete" and not self.partial

    @property
    def result(self) -> str:
        text = "ABORTED" if self.status == "aborted" else self.verdict
        return text + (" (partial)" if self.partial else "") + (" SIM" if self.simulated else "")


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


_COLUMNS = ("path", "sha256", "node", "hostname", "verdict", "status", "partial", "simulated", "profile",
            "started_at", "finished_at", "operator", "ticket", "keyid", "previous", "failed")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS reports (
    {', '.join(c + ' TEXT' for c in _COLUMNS)},
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    PRIMARY KEY (path)
);
CREATE INDEX IF NOT EXISTS reports_by_node ON reports (node, finished_at);
CREATE INDEX IF NOT EXISTS reports_by_host ON reports (hostname, finished_at);
CREATE INDEX IF NOT EXISTS reports_by_time ON reports (finished_at);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, reason TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


class Archive:
    """A report archive and its index. `trusted` is keyid -> (key, source), as keys.trusted_keys()."""

    def __init__(self, root: str | Path | None = None, trusted: dict[str, Any] | None = None):
        from nodeqc.keys import trusted_keys

        self.root = archive_root(root)
        self.trusted = trusted_keys() if trusted is None else trusted
        self._db: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ the index file

    @property
    def index_path(self) -> Path:
        """Beside the reports; in the user's cache when this user cannot write there (a read-only
        shared mount, or an index another user made)."""
        beside = self.root / INDEX_NAME
        if os.access(self.root, os.W_OK) and (not beside.exists() or os.access(beside, os.W_OK)):
            return beside
        tag = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:16]
        return platformdirs.user_cache_path("nodeqc") / f"index-{tag}.sqlite3"

    def _keyset(self) -> str:
        return ",".join(sorted(self.trusted))

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        path = self.index_path
        path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in (1, 2):
            try:
                db = sqlite3.connect(path, timeout=30, isolation_level=None)
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version not in (0, SCHEMA_VERSION):
                    db.close()
                    raise sqlite3.DatabaseError("index of another schema version")
                db.executescript(_SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                db.execute("PRAGMA synchronous = NORMAL")
                break
            except sqlite3.DatabaseError:
                if attempt == 2:
                    raise
                # A damaged or foreign index is only a cache: start it again from the reports.
                for stale in (path, path.with_name(path.name + "-journal")):
                    stale.unlink(missing_ok=True)
        row = db.execute("SELECT value FROM meta WHERE key = 'trusted_keys'").fetchone()
        if row is None or row[0] != self._keyset():
            # What verifies depends on the trusted keys: index again with the present ones.
            with _transaction(db):
                db.execute("DELETE FROM reports")
                db.execute("DELETE FROM skipped")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('trusted_keys', ?)", (self._keyset(),))
        self._db = db
        return db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def rebuild(self) -> None:
        """Forget the index and make it again from the report files."""
        self.close()
        if self.root.is_dir():
            self.index_path.unlink(missing_ok=True)
        self.refresh()

    # ------------------------------------------------------------------ keeping it current

    def _files(self) -> dict[str, tuple[int, int]]:
        """Every report file on disk: path relative to the root -> (size, mtime_ns)."""
        found = {}
        with os.scandir(self.root) as nodes:
            for node in nodes:
                if not node.is_dir() or node.name.startswith("."):
                    continue
                with os.scandir(node.path) as files:
                    for f in files:
                        if f.name.endswith(".report.json") and f.is_file():
                            st = f.stat()
                            found[f"{node.name}/{f.name}"] = (st.st_size, st.st_mtime_ns)
        return found

    def refresh(self) -> None:
        """Bring the index up to date with the report files: index new and changed ones, forget
        removed ones."""
        if not self.root.is_dir():
            return
        db = self._connect()
        on_disk = self._files()
        known = {p: (s, m) for p, s, m in db.execute(
            "SELECT path, size, mtime_ns FROM reports UNION ALL SELECT path, size, mtime_ns FROM skipped")}
        gone = [p for p in known if p not in on_disk]
        todo = [p for p, stamp in on_disk.items() if known.get(p) != stamp]
        if not gone and not todo:
            return
        with _transaction(db):
            for p in gone + todo:
                db.execute("DELETE FROM reports WHERE path = ?", (p,))
                db.execute("DELETE FROM skipped WHERE path = ?", (p,))
            for p in todo:
                size, mtime = on_disk[p]
                row, reason = self._read(p)
                if row is not None:
                    db.execute(f"INSERT OR REPLACE INTO reports ({', '.join(_COLUMNS)}, size, mtime_ns) "
                               f"VALUES ({', '.join('?' * (len(_COLUMNS) + 2))})", (*row, size, mtime))
                else:
                    db.execute("INSERT OR REPLACE INTO skipped VALUES (?, ?, ?, ?)", (p, size, mtime, reason))

    def _read(self, rel: str) -> tuple[tuple[Any, ...] | None, str]:
        """One report file as an index row, or None and why it cannot be trusted."""
        from nodeqc.report import VerificationError, verify_file

        path = self.root / rel
        try:
            verified = verify_file(path, self.trusted)
            p = verified.predicate
            node = p["node"]
            previous = (p.get("previous") or {}).get("sha256")
            row = (rel, file_sha256(path), node_key(node.get("system_serial"), node.get("hostname")),
                   str(node.get("hostname")), p["verdict"], p["status"], int(bool(p.get("partial"))),
                   int(bool(p.get("simulated"))), str(p.get("profile", {}).get("name")),
                   p.get("started_at"), p.get("finished_at"), p.get("operator"), p.get("ticket"),
                   verified.keyid, previous, json.dumps(p.get("summary", {}).get("failed", [])))
            return row, ""
        except VerificationError as e:
            return None, str(e)
        except UsageError as e:
            return None, str(e).removeprefix(f"{path}: ")
        except Exception as e:  # noqa: BLE001 - one odd file must never break a listing
            return None, f"not a nodeqc report ({type(e).__name__}: {e})"

    # ------------------------------------------------------------------ queries

    def reports(self, node: str | None = None, verdict: str | None = None, since: str | None = None,
                limit: int | None = None) -> list[Entry]:
        """Verified reports, newest first. verdict: 'pass' (qualifications that passed: complete,
        not partial), 'fail', or 'partial'. since: an ISO UTC timestamp ('2026-11-01T00:00:00Z')."""
        self.refresh()
        if not self.root.is_dir():
            return []
        where, args = [], []
        if node:
            where.append("(node = ? OR hostname = ?)")
            args += [node, node]
        if verdict == "pass":
            where.append("verdict = 'PASS' AND status = 'complete' AND partial = '0'")
        elif verdict == "fail":
            where.append("verdict = 'FAIL'")
        elif verdict == "partial":
            where.append("partial = '1'")
        elif verdict is not None:
            raise ValueError(f"unknown verdict filter {verdict!r}")
        if since:
            where.append("finished_at >= ?")
            args.append(since)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM reports"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY finished_at DESC, mtime_ns DESC, path DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [self._entry(r) for r in self._connect().execute(sql, args)]

    def _entry(self, r: tuple[Any, ...]) -> Entry:
        d = dict(zip(_COLUMNS, r))
        return Entry(**{**d, "path": self.root / d["path"], "partial": d["partial"] == "1",
                        "simulated": d["simulated"] == "1", "failed": json.loads(d["failed"])})

    def latest(self, node: str) -> Entry | None:
        """The newest verified report of a node, by its node key (system serial, else host name)."""
        self.refresh()
        if not self.root.is_dir():
            return None
        row = self._connect().execute(f"SELECT {', '.join(_COLUMNS)} FROM reports WHERE node = ? "
                                      "ORDER BY finished_at DESC, mtime_ns DESC, path DESC LIMIT 1", (node,)).fetchone()
        return self._entry(row) if row else None

    def skipped(self) -> list[Skipped]:
        """Files in the archive that are not listed, and why (call after refresh or reports)."""
        if not self.root.is_dir():
            return []
        rows = self._connect().execute("SELECT path, reason FROM skipped ORDER BY path")
        return [Skipped(self.root / p, reason) for p, reason in rows]


class _transaction:
    """BEGIN IMMEDIATE .. COMMIT: one writer at a time when processes share an archive."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def iter_checks(entry: Entry) -> Iterator[dict[str, Any]]:
    """The check results of an indexed report (its file was verified when it was indexed)."""
    from nodeqc.report import decode_statement, read_envelope

    yield from decode_statement(read_envelope(entry.path))["predicate"].get("checks", [])
