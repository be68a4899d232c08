"""Where reports live: a per-user archive (XDG data dir), or a shared one named by NODEQC_ARCHIVE
(or --archive DIR), filed by node so nothing is ever overwritten.

The signed report files are the truth; writers write only files (hundreds of nodes may write one
shared archive directory at once, over NFS). Each reader keeps its own SQLite index of the archive in
its own cache directory, one per host and archive, so no SQLite file is ever written by several hosts
(SQLite's locking is not reliable over NFS). The index is a cache of **verified facts**: each row
holds the digest of the report bytes that were verified and what they said, and carries an HMAC
under a secret of this user, so a row edited in the index is noticed and its file verified again.
Every listing first brings the index up to date with the files (a report whose size, mtime, ctime or
inode changed, or whose journal or telemetry beside it did, is read and verified again); a file that
does not verify is NOT VERIFIED, with the reason, and never listed as a report nor counted as a pass.
A damaged index is rebuilt from the files; one that cannot be used at all is replaced by one in
memory: a listing or a run never fails because of the index.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import hmac
import json
import multiprocessing
import os
import re
import socket
import sqlite3
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import platformdirs

from nodeqc.core.errors import UsageError
from nodeqc.core.na import is_na
from nodeqc.core.safefile import OutputError, link_new
from nodeqc.report.envelope import VerificationError

ARCHIVE_ENV = "NODEQC_ARCHIVE"
SCHEMA_VERSION = 3  # 3: a fabric report's members and their verdicts
REPORT_GLOB = "*.report.json"
REPORT_SUFFIX = ".report.json"
EVIDENCE_SUFFIXES = (".journal.jsonl", ".telemetry.csv.gz")  # beside a report, by its stem (nodeqc.run.paths.RunPaths)


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
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()



# ---------------------------------------------------------------------- the index


class NotVerified(VerificationError):
    """A report file is not (or no longer) the content that was verified."""


@dataclass(frozen=True)
class Entry:
    """One verified report, as the index knows it: the file `rel` (NODE/NAME.report.json) under the
    archive `root`."""

    rel: str
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
    root: Path
    # A fabric report (many nodes qualified together): each node's name -> its verdict there
    # (pass, fail, error), host name, node key and failure code. Empty for a node's own report.
    members: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def fabric(self) -> bool:
        return bool(self.members)

    def member(self, node: str) -> tuple[str, dict[str, Any]] | None:
        """The fabric member a node's name there, host name or node key (system serial) stands for:
        (its name, its facts), or None."""
        if node in self.members:
            return node, self.members[node]
        found = [(n, m) for n, m in self.members.items() if node in (m.get("hostname"), m.get("key"))]
        return found[0] if found else None

    @functools.cached_property
    def path(self) -> Path:
        # Made when asked for: a listing of a fleet's archive makes 10,000 entries and shows a few,
        # and building a Path is most of an entry's cost.
        return self.root / self.rel

    @property
    def qualified(self) -> bool:
        """Only a complete, full run of real hardware that passed counts as a qualification."""
        return self.verdict == "PASS" and self.status == "complete" and not self.partial and not self.simulated

    @property
    def result(self) -> str:
        text = "ABORTED" if self.status == "aborted" else self.verdict
        return text + (" (partial)" if self.partial else "") + (" SIM" if self.simulated else "")


@dataclass(frozen=True)
class Skipped:
    """A file in the archive that did not verify, and why: NOT VERIFIED, never listed."""

    path: Path
    reason: str


_COLUMNS = ("path", "sha256", "node", "hostname", "verdict", "status", "partial", "simulated", "profile",
            "started_at", "finished_at", "operator", "ticket", "keyid", "previous", "failed", "members")
# stamp: what the file (and its evidence beside it) looked like when verified; trust: 'verified' or
# 'not verified' (then reason says why, and keyset which trusted keys it was tried with).
_ROW = ("path", "stamp", "sha256", "trust", "reason", "keyset", *_COLUMNS[2:])
_SELECT = ", ".join(_ROW) + ", mac"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS reports (
    {', '.join(c + ' TEXT' for c in _ROW)}, mac TEXT NOT NULL,
    PRIMARY KEY (path)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


def _warn_stderr(text: str) -> None:
    print(f"nodeqc: warning: {text}", file=sys.stderr, flush=True)


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


class Archive:
    """A report archive and this reader's index of it. `trusted` is keyid -> (key, source), as
    keys.trusted_keys(): the same keys `nodeqc verify` trusts. `warn` gets one line per problem
    with the index (default: stderr)."""

    def __init__(self, root: str | Path | None = None, trusted: dict[str, Any] | None = None,
                 warn: Callable[[str], None] | None = None):
        from nodeqc.report.keys import trusted_keys

        self.root = archive_root(root)
        self.trusted = trusted_keys() if trusted is None else trusted
        self.warn = warn or _warn_stderr
        self._db: sqlite3.Connection | None = None
        self._in_memory = False
        self._secret: bytes | None = None
        self._checked: dict[str, dict[str, Any]] | None = None  # the rows the last refresh checked

    # ------------------------------------------------------------------ the index file

    @property
    def index_path(self) -> Path:
        """This reader's index of this archive: in the user's cache directory, one per host (a home
        directory shared by many nodes over NFS still gives each host its own file)."""
        try:
            where = str(self.root.resolve())
        except OSError:
            where = str(self.root.absolute())
        tag = hashlib.sha256(f"{socket.gethostname()}\0{where}".encode()).hexdigest()[:16]
        return platformdirs.user_cache_path("nodeqc") / f"index-{tag}.sqlite3"

    def _keyset(self) -> str:
        return ",".join(sorted(self.trusted))

    def _mac(self, values: tuple[Any, ...]) -> str:
        assert self._secret is not None
        return row_mac(self._secret, values)

    def _mac_ok(self, row: tuple[Any, ...]) -> bool:
        assert self._secret is not None
        return row_mac_ok(self._secret, tuple(row[:-1]), row[-1])  # row: _ROW values, then mac

    def _open(self, path: str | Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):  # another nodeqc's index: it is only a cache
                db.executescript("DROP TABLE IF EXISTS reports; DROP TABLE IF EXISTS skipped; "
                                 "DROP TABLE IF EXISTS meta;")
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("PRAGMA synchronous = NORMAL")
            check = hmac.new(self._secret or b"", b"nodeqc index", "sha256").hexdigest()
            row = db.execute("SELECT value FROM meta WHERE key = 'secret'").fetchone()
            if row is None or row[0] != check:  # made under another secret: nothing in it can be checked
                with _transaction(db):
                    db.execute("DELETE FROM reports")
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('secret', ?)", (check,))
        except BaseException:
            db.close()
            raise
        return db

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        if self._secret is None:
            self._secret = index_secret()
            if self._secret is None:
                self.warn("no index secret in the config directory can be made or read safely; "
                          "reading the reports without a lasting index")
                self._secret, self._in_memory = os.urandom(32), True
        if self._in_memory:
            self._db = self._open(":memory:")
            return self._db
        path = self.index_path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise sqlite3.OperationalError(f"cannot create {path.parent}: {e.strerror}") from None
        try:
            self._db = self._open(path)
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as e:  # not a database, or damaged: it is only a cache
            self.warn(f"index {path}: {e}; rebuilding it from the reports")
            self._discard()
            self._db = self._open(path)
        return self._db

    def _discard(self) -> None:
        """Forget a damaged index file (it is only a cache)."""
        self.close()
        if not self._in_memory:
            path = self.index_path
            for stale in (path, path.with_name(path.name + "-journal")):
                try:
                    stale.unlink(missing_ok=True)
                except OSError:
                    pass

    def _guarded(self, work: Callable[[], Any]) -> Any:
        """Run `work` on the index; an index that turns out damaged is rebuilt from the files, and
        one that cannot be used (locked for long, unwritable) is replaced by one in memory."""
        try:
            return work()
        except sqlite3.Error as e:
            text = str(e)
            if isinstance(e, sqlite3.OperationalError) and ("locked" in text or "busy" in text or
                                                            "cannot create" in text or "unable to open" in text
                                                            or "readonly" in text):
                self.warn(f"index {self.index_path}: {text}; reading the reports without it")
                self.close()
                self._in_memory = True
                return work()
            self.warn(f"index {self.index_path}: {text}; rebuilding it from the reports")
            self._discard()
        try:
            return work()
        except sqlite3.Error as e:
            self.warn(f"index {self.index_path}: {e} again; reading the reports without it")
            self.close()
            self._in_memory = True
            return work()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def rebuild(self) -> None:
        """Forget the index and make it again from the report files."""
        self._discard()
        self.refresh()

    # ------------------------------------------------------------------ keeping it current

    def _files(self, node_dir_name: str | None = None) -> dict[str, str]:
        """Every report file on disk (of one node directory, or all): path relative to the root ->
        its stamp (size, mtime, ctime, inode; and those of its journal and telemetry beside it).
        ctime cannot be set back by the file's owner, so an edit that restores size and mtime
        still shows."""
        found: dict[str, str] = {}
        if node_dir_name is not None:
            dirs = [node_dir_name] if (self.root / node_dir_name).is_dir() else []
        else:
            with os.scandir(self.root) as nodes:
                dirs = [n.name for n in nodes if n.is_dir(follow_symlinks=False) and not n.name.startswith(".")]
        for name in dirs:
            try:
                with os.scandir(self.root / name) as files:
                    entries = {f.name: f for f in files}
            except OSError:
                continue
            for fname, f in entries.items():
                if not fname.endswith(REPORT_SUFFIX):
                    continue
                try:
                    if not f.is_file(follow_symlinks=False):
                        continue
                    parts = [_stamp(f.stat(follow_symlinks=False))]
                    stem = fname[:-len(REPORT_SUFFIX)]
                    for suffix in EVIDENCE_SUFFIXES:
                        sibling = entries.get(stem + suffix)
                        if sibling is not None:
                            parts.append(f"{suffix}={_stamp(sibling.stat(follow_symlinks=False))}")
                except OSError:
                    continue  # gone while we looked
                found[f"{name}/{fname}"] = "|".join(parts)
        return found

    def refresh(self, node: str | None = None) -> None:
        """Bring the index up to date with the report files (of one node, or all): verify new and
        changed ones, forget removed ones."""
        if self.root.is_dir():
            self._guarded(lambda: self._refresh(None if node is None else safe_name(node)))

    def _refresh(self, node_dir_name: str | None) -> dict[str, dict[str, Any]]:
        """Bring the index up to date (see refresh); returns every row of the scope as checked now:
        path -> row, each matching its HMAC and its file. Queries answer from these rows, so what
        they list is what was checked, whatever happens to the index file meanwhile."""
        db = self._connect()
        on_disk = self._files(node_dir_name)
        keyset = self._keyset()
        if node_dir_name is None:
            rows = db.execute(f"SELECT {_SELECT} FROM reports").fetchall()
        else:  # the paths under NAME/: from 'NAME/' up to, not including, 'NAME0' ('0' follows '/')
            rows = db.execute(f"SELECT {_SELECT} FROM reports WHERE path >= ? AND path < ?",
                              (node_dir_name + "/", node_dir_name + "0")).fetchall()
        known: dict[str, dict[str, Any]] = {}
        altered = []
        for r in rows:
            if self._mac_ok(r):
                known[r[0]] = dict(zip(_ROW, r))
            else:
                altered.append(r[0])
        if altered:
            self.warn(f"index {self.index_path}: {len(altered)} entr{'y' if len(altered) == 1 else 'ies'} "
                      f"did not match what was verified (altered?), e.g. {altered[0]}: verifying the files again")
        todo = [p for p, stamp in on_disk.items() if not self._current(known.get(p), stamp, keyset)]
        gone = [r[0] for r in rows if r[0] not in on_disk]
        checked = {p: row for p, row in known.items() if p in on_disk}
        if todo or gone:
            fresh = self._read_many(todo, on_disk, keyset)  # verified before the write lock is taken
            with _transaction(db):
                db.executemany("DELETE FROM reports WHERE path = ?", [(p,) for p in gone])
                db.executemany(f"INSERT OR REPLACE INTO reports ({_SELECT}) "
                               f"VALUES ({', '.join('?' * (len(_ROW) + 1))})", fresh)
            checked.update((r[0], dict(zip(_ROW, r))) for r in fresh)
        self._checked = checked
        return checked

    def _current(self, row: dict[str, Any] | None, stamp: str, keyset: str) -> bool:
        """Whether an index row still stands for the file: same stamp, and verified by a key still
        trusted (or, when it did not verify, tried with the same trusted keys)."""
        if row is None or row["stamp"] != stamp:
            return False
        if row["trust"] == "verified":
            return row["keyid"] in self.trusted
        return row["keyset"] == keyset

    def _read(self, rel: str, stamp: str, keyset: str) -> tuple[Any, ...]:
        """One report file as an index row (with its HMAC): verified, or why not."""
        return self._row(_row_values(rel, stamp, keyset, _verified_facts(self.root / rel, self.trusted)))

    def _row(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """(rel, stamp, sha, trust, reason, keyset, *facts) with its HMAC."""
        return (*values, self._mac(values))

    def _read_many(self, todo: list[str], on_disk: dict[str, str], keyset: str) -> list[tuple[Any, ...]]:
        """Index rows for many report files. Reading and verifying them is CPU-bound (JSON, base64,
        Ed25519: about 5 ms a report), so a large batch (an index built from nothing over a fleet's
        archive) is spread over this host's cores by forked workers that inherit the trusted keys;
        the rows are MAC'd here, so the index secret never leaves this process. Forking is done
        only from a single-threaded process (the command line): a process with other threads (the
        desktop app) verifies in order, as a small batch always does."""
        workers = min(_usable_cpus(), 8, len(todo) // _FILES_PER_WORKER)
        if workers < 2 or threading.active_count() > 1 or "fork" not in multiprocessing.get_all_start_methods():
            return [self._read(p, on_disk[p], keyset) for p in todo]
        global _pool_trusted
        _pool_trusted = self.trusted
        paths = [str(self.root / p) for p in todo]
        try:
            with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                facts = list(pool.map(_verified_facts_in_worker, paths, chunksize=32))
        except (OSError, concurrent.futures.process.BrokenProcessPool):  # no processes to be had: in order
            return [self._read(p, on_disk[p], keyset) for p in todo]
        finally:
            _pool_trusted = None
        return [self._row(_row_values(p, on_disk[p], keyset, f)) for p, f in zip(todo, facts)]

    # ------------------------------------------------------------------ queries

    def reports(self, node: str | None = None, verdict: str | None = None, since: str | None = None,
                limit: int | None = None, fabrics: bool = False) -> list[Entry]:
        """Verified reports, newest first. verdict: 'pass' (qualifications that passed: complete,
        not partial, not simulated), 'fail', or 'partial'. since: an ISO UTC timestamp
        ('2026-11-01T00:00:00Z'). fabrics: with a node, also the fabric reports it took part in
        (by its name in the fabric, its host name or its system serial)."""
        wanted: list[Callable[[dict[str, Any]], bool]] = []

        def member(r: dict[str, Any]) -> dict[str, Any] | None:
            """The node's facts in a fabric report it took part in (when fabrics are asked for)."""
            return _member(r["members"], node) if node and fabrics and r["node"] != node and r["hostname"] != node else None

        def own_verdict(r: dict[str, Any]) -> str:
            """The report's verdict; in a fabric report the node took part in, the node's own there."""
            m = member(r)
            return r["verdict"] if m is None else {"pass": "PASS", "fail": "FAIL"}.get(m.get("verdict"), "ERROR")

        if node:
            wanted.append(lambda r: r["node"] == node or r["hostname"] == node or member(r) is not None)
        if verdict == "pass":
            wanted.append(lambda r: (own_verdict(r), r["status"], r["partial"], r["simulated"]) == ("PASS", "complete", "0", "0"))
        elif verdict == "fail":
            wanted.append(lambda r: own_verdict(r) == "FAIL")
        elif verdict == "error":
            wanted.append(lambda r: own_verdict(r) == "ERROR")
        elif verdict == "partial":
            wanted.append(lambda r: r["partial"] == "1")
        elif verdict is not None:
            raise ValueError(f"unknown verdict filter {verdict!r}")
        if since:
            wanted.append(lambda r: r["finished_at"] is not None and r["finished_at"] >= since)
        if not self.root.is_dir():
            return []
        try:
            rows = self._guarded(lambda: self._refresh(None))
        except OSError as e:
            raise UsageError(f"{self.root}: cannot read the archive: {e.strerror or e}") from None
        return self._entries([r for r in rows.values() if all(w(r) for w in wanted)], limit)

    def _entries(self, rows: list[dict[str, Any]], limit: int | None = None) -> list[Entry]:
        """Checked rows of verified reports as entries, newest first."""
        rows = [r for r in rows if r["trust"] == "verified" and r["keyid"] in self.trusted]
        rows.sort(key=lambda r: (r["finished_at"] or "", r["path"]), reverse=True)
        return [Entry(**{c: r[c] for c in _COLUMNS if c not in ("path", "partial", "simulated", "failed", "members")},
                      rel=r["path"], root=self.root, partial=r["partial"] == "1", simulated=r["simulated"] == "1",
                      failed=[] if r["failed"] == "[]" else json.loads(r["failed"]),
                      members={} if r["members"] in (None, "{}") else json.loads(r["members"])) for r in rows[:limit]]

    def latest(self, node: str) -> Entry | None:
        """The newest verified report of a node, by its node key (system serial, else host name).
        Only that node's directory is brought up to date."""
        if not self.root.is_dir():
            return None
        try:
            rows = self._guarded(lambda: self._refresh(safe_name(node)))
        except OSError as e:  # the archive cannot be read: a run goes on without its previous report
            self.warn(f"archive {self.root}: {e.strerror or e}; no previous report looked up")
            return None
        found = self._entries([r for r in rows.values() if r["node"] == node], 1)
        return found[0] if found else None

    def history(self, node: str) -> tuple[list[Entry], list[Skipped]]:
        """One node's verified reports, newest first, and the files in its directory that did not
        verify, with why (forged, altered, its evidence changed, signed by a key not trusted). Only
        that node's directory is brought up to date."""
        if not self.root.is_dir():
            return [], []
        try:
            rows = self._guarded(lambda: self._refresh(safe_name(node)))
        except OSError as e:
            raise UsageError(f"{self.root}: cannot read the archive: {e.strerror or e}") from None
        entries = self._entries([r for r in rows.values() if r["node"] == node])
        bad = sorted((r for r in rows.values() if r["trust"] != "verified"), key=lambda r: r["path"])
        return entries, [Skipped(self.root / r["path"], r["reason"]) for r in bad]

    def skipped(self) -> list[Skipped]:
        """Files in the archive that did not verify, and why, as the last listing found them (the
        whole archive when there was none)."""
        if not self.root.is_dir():
            return []
        if self._checked is None:
            self._guarded(lambda: self._refresh(None))
        rows = sorted((r for r in (self._checked or {}).values() if r["trust"] != "verified"), key=lambda r: r["path"])
        return [Skipped(self.root / r["path"], r["reason"]) for r in rows]


def _fabric_members(predicate: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A fabric report's nodes: name -> verdict there, host name, failure code (nodeqc.fabric.report)."""
    if predicate.get("kind") != "fabric":
        return {}
    codes = {c.get("subject"): c.get("code") for c in predicate.get("checks") or []
             if isinstance(c, dict) and c.get("name") == "fabric.node"}
    out = {}
    for n in predicate.get("nodes") or []:
        if isinstance(n, dict) and isinstance(n.get("name"), str):
            identity = n.get("identity") if isinstance(n.get("identity"), dict) else {}
            hostname = _text(identity.get("hostname"))
            out[n["name"]] = {"verdict": str(n.get("verdict")), "hostname": hostname,
                              "key": node_key(identity.get("system_serial"), hostname or n["name"]),
                              "code": _text(codes.get(n["name"]))}
    return out


def _member(members: str | None, node: str) -> dict[str, Any] | None:
    """A node's facts in a fabric report's members (index column), by its name there or host name."""
    if not members or members == "{}":
        return None
    found = json.loads(members)
    return found.get(node) or next((m for m in found.values() if node in (m.get("hostname"), m.get("key"))), None)


_FILES_PER_WORKER = 250  # a worker costs a fork and its share of the pool's start: worth it past a few hundred files
_pool_trusted: dict[str, Any] | None = None  # the trusted keys, inherited by forked verifying workers


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _row_values(rel: str, stamp: str, keyset: str, verified: tuple[Any, ...]) -> tuple[Any, ...]:
    """An index row's values in _ROW's order, from _verified_facts' answer."""
    sha, trust, reason, *facts = verified
    return (rel, stamp, sha, trust, reason, keyset, *facts)


def _verified_facts_in_worker(path: str) -> tuple[Any, ...]:
    assert _pool_trusted is not None
    return _verified_facts(Path(path), _pool_trusted)


def _verified_facts(path: Path, trusted: dict[str, Any]) -> tuple[Any, ...]:
    """What the index keeps of one report file, less its path, stamp and keyset: (sha256, trust,
    reason, *facts), verified by a trusted key with its evidence beside it, or why not."""
    from nodeqc.report.envelope import check_evidence, read_report_bytes, verify_bytes

    facts: tuple[Any, ...] = (None,) * (len(_COLUMNS) - 2)
    sha = None
    try:
        data = read_report_bytes(path)
        sha = hashlib.sha256(data).hexdigest()
        verified = verify_bytes(data, trusted, sha256=sha)
        check_evidence(verified, path.parent)
        p = verified.predicate
        node = p["node"]
        previous = p.get("previous") or {}
        facts = (node_key(node.get("system_serial"), node.get("hostname")), str(node.get("hostname")),
                 str(p["verdict"]), str(p["status"]), "1" if p.get("partial") else "0",
                 "1" if p.get("simulated") else "0", str((p.get("profile") or {}).get("name")),
                 _text(p.get("started_at")), _text(p.get("finished_at")), _text(p.get("operator")),
                 _text(p.get("ticket")), verified.keyid,
                 _text(previous.get("sha256") if isinstance(previous, dict) else None),
                 json.dumps([str(f) for f in (p.get("summary") or {}).get("failed") or []]),
                 json.dumps(_fabric_members(p)))
        trust, reason = "verified", ""
    except VerificationError as e:
        trust, reason = "not verified", str(e)
    except UsageError as e:
        trust, reason = "not verified", str(e).removeprefix(f"{path}: ")
    except Exception as e:  # noqa: BLE001 - one odd file must never break a listing
        trust, reason = "not verified", f"not a nodeqc report ({type(e).__name__}: {e})"
    if trust != "verified":
        facts = (None,) * (len(_COLUMNS) - 2)
    return (sha, trust, reason, *facts)


def _stamp(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class _transaction:
    """BEGIN IMMEDIATE .. COMMIT: one writer at a time among this host's readers of the index."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def read_verified(path: Path, trusted: dict[str, Any], sha256: str | None = None) -> Any:
    """A report read once and verified (report.Verified); with `sha256`, it must also still be the
    content of that digest (the one that was looked up, recorded or compared)."""
    from nodeqc.report.envelope import read_report_bytes, verify_bytes

    verified = verify_bytes(read_report_bytes(path), trusted)
    if sha256 is not None and verified.sha256 != sha256:
        raise NotVerified(f"changed since it was verified (sha256 {verified.sha256[:16]}…, "
                          f"expected {sha256[:16]}…)")
    return verified


def read_by_digest(path: Path, sha256: str) -> dict[str, Any]:
    """The predicate of a report that was verified as the content of digest `sha256` (an index
    entry, a re-test's previous report): read again, and only if it is still that content
    (NotVerified otherwise)."""
    from nodeqc.report.envelope import decode_statement, parse_envelope, read_report_bytes

    data = read_report_bytes(path)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise NotVerified("changed since it was verified")
    return decode_statement(parse_envelope(data))["predicate"]


def iter_checks(entry: Entry) -> Iterator[dict[str, Any]]:
    """The check results of an indexed report, read again (NotVerified when the file is no longer
    the content that was verified)."""
    yield from read_by_digest(entry.path, entry.sha256).get("checks", [])
