"""The archive's index: each reader's SQLite index of the report files (nodeqc.archive.filing), and
the listings answered from it.

The signed report files are the truth; writers write only files (hundreds of nodes may write one
shared archive directory at once, over NFS). Each reader keeps its own SQLite index of the archive in
its own cache directory, one per host and archive, so no SQLite file is ever written by several hosts
(SQLite's locking is not reliable over NFS). The index is a cache of **verified facts**
(nodeqc.archive.verified): each row holds the digest of the report bytes that were verified and what
they said, and carries an HMAC under a secret of this user (nodeqc.archive.secret), so a row edited
in the index is noticed and its file verified again. Every listing first brings the index up to date
with the files (a report whose size, mtime, ctime or inode changed, or whose journal or telemetry
beside it did, is read and verified again); a file that does not verify is NOT VERIFIED, with the
reason, and never listed as a report nor counted as a pass. A damaged index is rebuilt from the
files; one that cannot be used at all is replaced by one in memory: a listing or a run never fails
because of the index.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import hmac
import json
import multiprocessing
import os
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import platformdirs

from nodeqc.archive.filing import EVIDENCE_SUFFIXES, REPORT_SUFFIX, archive_root, safe_name
from nodeqc.archive.secret import index_secret, row_mac, row_mac_ok
from nodeqc.archive.verified import COLUMNS, Entry, Skipped, fabric_member, verified_facts
from nodeqc.core.errors import UsageError, shown
from nodeqc.core.names import host_label, host_name
from nodeqc.core.text import few, is_unicode

SCHEMA_VERSION = 4  # 3: a fabric report's members and their verdicts; 4: members' claims held to their run names

# stamp: what the file (and its evidence beside it) looked like when verified; trust: 'verified' or
# 'not verified' (then reason says why, and keyset which trusted keys it was tried with).
_ROW = ("path", "stamp", "sha256", "trust", "reason", "keyset", *COLUMNS[2:])
_SELECT = ", ".join(_ROW) + ", mac"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS reports (
    {', '.join(c + ' TEXT' for c in _ROW)}, mac TEXT NOT NULL,
    PRIMARY KEY (path)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


def warn_stderr(text: str) -> None:
    print(f"nodeqc: warning: {text}", file=sys.stderr, flush=True)


def _bound(trusted: Any) -> frozenset[str] | None:
    """The nodes a trusted key is bound to (keys.Trusted.nodes; None: any node)."""
    return trusted[2] if len(trusted) > 2 else None


class Archive:
    """A report archive and this reader's index of it. `trusted` is keyid -> keys.Trusted, as
    keys.trusted_keys(): the same keys `nodeqc verify` trusts. `warn` gets one line per problem
    with the index (default: stderr)."""

    def __init__(self, root: str | Path | None = None, trusted: dict[str, Any] | None = None,
                 warn: Callable[[str], None] | None = None):
        from nodeqc.report.keys import trusted_keys

        self.root = archive_root(root)
        self.trusted = trusted_keys() if trusted is None else trusted
        self.warn = warn or warn_stderr
        self._db: sqlite3.Connection | None = None
        self._in_memory = False
        self._secret: bytes | None = None
        self._checked: dict[str, dict[str, Any]] | None = None  # the rows the last refresh checked
        self._unnamed: list[Skipped] = []  # report files whose names are not UTF-8 (the last refresh's)

    # ------------------------------------------------------------------ the index file

    @property
    def index_path(self) -> Path:
        """This reader's index of this archive: in the user's cache directory, one per host (a home
        directory shared by many nodes over NFS still gives each host its own file)."""
        try:
            where = str(self.root.resolve())
        except OSError:
            where = str(self.root.absolute())
        tag = hashlib.sha256(f"{host_name()}\0{where}".encode()).hexdigest()[:16]
        return platformdirs.user_cache_path("nodeqc") / f"index-{tag}.sqlite3"

    def _keyset(self) -> str:
        """The trusted keys, and the nodes each bound one vouches for (keys.Trusted.nodes)."""
        return ",".join(sorted(kid + ("" if _bound(t) is None else ":" + "\0".join(sorted(_bound(t))))
                               for kid, t in self.trusted.items()))

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
            row = db.execute("SELECT value FROM meta WHERE key = 'verifier'").fetchone()
            if row is None or row[0] != verifier():  # verified by other rules: each file verified again
                with _transaction(db):
                    db.execute("DELETE FROM reports")
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('verifier', ?)", (verifier(),))
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
        self._unnamed = []
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
                if not is_unicode(f"{name}/{fname}"):  # the index (SQLite) holds text: one such name stopped every listing
                    self._unnamed.append(Skipped(self.root / name / fname, "its name is not UTF-8 text: rename it"))
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
        if row["trust"] == "verified":  # a key bound to nodes since (or bound otherwise) is tried again
            return row["keyid"] in self.trusted and (_bound(self.trusted[row["keyid"]]) is None or row["keyset"] == keyset)
        return row["keyset"] == keyset

    def _read(self, rel: str, stamp: str, keyset: str) -> tuple[Any, ...]:
        """One report file as an index row (with its HMAC): verified, or why not."""
        return self._row(_row_values(rel, stamp, keyset, verified_facts(self.root / rel, self.trusted)))

    def _row(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """(rel, stamp, sha, trust, reason, keyset, *facts) with its HMAC."""
        return (*values, self._mac(values))

    def _read_many(self, todo: list[str], on_disk: dict[str, str], keyset: str) -> list[tuple[Any, ...]]:
        """Index rows for many report files. Reading and verifying them is CPU-bound (JSON, base64,
        Ed25519: about 5 ms a report), so a large batch (an index built from nothing over a fleet's
        archive) is spread over this host's cores by forked workers, each given the trusted keys
        when it starts (the pool's initializer); the rows are MAC'd here, so the index secret never leaves this process. Forking is done
        only from a single-threaded process (the command line): a process with other threads (the
        desktop app) verifies in order, as a small batch always does."""
        workers = min(_usable_cpus(), 8, len(todo) // _FILES_PER_WORKER)
        if workers < 2 or threading.active_count() > 1 or "fork" not in multiprocessing.get_all_start_methods():
            return [self._read(p, on_disk[p], keyset) for p in todo]
        paths = [str(self.root / p) for p in todo]
        try:
            with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                                        initializer=_trust_in_worker, initargs=(self.trusted,)) as pool:
                facts = list(pool.map(_verified_facts_in_worker, paths, chunksize=32))
        except (OSError, concurrent.futures.process.BrokenProcessPool):  # no processes to be had: in order
            return [self._read(p, on_disk[p], keyset) for p in todo]
        return [self._row(_row_values(p, on_disk[p], keyset, f)) for p, f in zip(todo, facts)]

    # ------------------------------------------------------------------ queries

    def reports(self, node: str | None = None, verdict: str | None = None, since: str | None = None,
                limit: int | None = None, fabrics: bool = False, by_host_name: bool = True) -> list[Entry]:
        """Verified reports, newest first. node: by its node key (system serial, else host name), or
        (by_host_name) by the host name its reports give, where no node has that key and one node alone
        gives it: a host name is the node's own claim, and a node whose key speaks only for itself
        claimed another's name to list its PASS as that node's and to put repairs in that node's signed
        advice (2026-11-29 fuzzing). Two nodes giving one host name is a UsageError naming them.
        verdict: 'pass' (qualifications that passed: complete, not partial, not simulated), 'fail', or
        'partial'. since: an ISO UTC timestamp ('2026-11-01T00:00:00Z'). fabrics: with a node, also
        the fabric reports it took part in (by its name in the fabric, its host name or its system serial)."""
        wanted: list[Callable[[dict[str, Any]], bool]] = []

        own_hosts: set[str] = set()  # the host names the node's own reports give (filled below)
        keys: set[str] = {node} if node else set()  # the node keys the node is known by (filled below)

        def member(r: dict[str, Any]) -> dict[str, Any] | None:
            """The node's facts in a fabric report it took part in (when fabrics are asked for). Found by
            its claim of host name or serial, not its name in the run, it is believed only where the run's
            name is a host name the node's own reports give: a worker that claims the serial of a node
            outside its run is not that node (2026-11-28 audit), and a node with no report of its own has
            no host name to hold the claim to (2026-11-29: any worker could file its verdict under the
            serial of a node not yet qualified alone). Found by its name in the run, it is that node."""
            if not (node and fabrics and r["node"] not in keys and r["hostname"] != node):
                return None
            found = fabric_member(r["members"], node)
            if found is None or not (found[2] or host_label(found[0]) in own_hosts):
                return None
            return found[1]

        def own_verdict(r: dict[str, Any]) -> str:
            """The report's verdict; in a fabric report the node took part in, the node's own there."""
            m = member(r)
            return r["verdict"] if m is None else {"pass": "PASS", "fail": "FAIL"}.get(m.get("verdict"), "ERROR")

        if node:
            wanted.append(lambda r: r["node"] in keys or member(r) is not None)
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
        own = [r for r in rows.values() if r["members"] in (None, "{}") and r["trust"] == "verified" and r["keyid"] in self.trusted]
        claimants = sorted({r["node"] for r in own if r["hostname"] == node and r["node"] != node}) if node else []
        if node and by_host_name and claimants and any(r["node"] == node for r in own):
            # A node key and the host name of others (the same machine run without the root that reads
            # its serial, then with it): theirs are not listed, and that is said (the 2026-11-29 review).
            self.warn(f"{shown(node)} is also the host name in the reports of {few([shown(c) for c in claimants])}: "
                      "not listed; name each by its system serial (--node SERIAL)")
        elif node and by_host_name:
            if len(claimants) > 1:
                raise UsageError(f"{shown(node)}: the host name of {len(claimants)} nodes in the archive "
                                 f"({few([shown(c) for c in claimants])}): name one by its system serial")
            keys.update(claimants)
        if node and fabrics:
            own_hosts.update(host_label(r["hostname"]) for r in own if r["hostname"] and r["node"] in keys)
        return self._entries([r for r in rows.values() if all(w(r) for w in wanted)], limit)

    def _entries(self, rows: list[dict[str, Any]], limit: int | None = None) -> list[Entry]:
        """Checked rows of verified reports as entries, newest first."""
        rows = [r for r in rows if r["trust"] == "verified" and r["keyid"] in self.trusted]
        rows.sort(key=lambda r: (r["finished_at"] or "", r["path"]), reverse=True)
        return [Entry(**{c: r[c] for c in COLUMNS if c not in ("path", "partial", "simulated", "failed", "members")},
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
        return [Skipped(self.root / r["path"], r["reason"]) for r in rows] + self._unnamed


@functools.cache
def verifier() -> str:
    """The verifying code's own digest (the envelope, the report's shape, the archive's facts): an index
    row verified by other rules is not believed. A report that said PASS over its own failed checks,
    indexed before verify refused it, stayed PASS in history and fleet (the 2026-11-29 review)."""
    from nodeqc import __version__
    from nodeqc.archive import verified
    from nodeqc.report import envelope, shape

    digest = hashlib.sha256(__version__.encode())
    for module in (envelope, shape, verified):
        try:
            digest.update(Path(module.__file__ or "").read_bytes())
        except OSError:  # packed where the source is not a file: the version alone
            pass
    return digest.hexdigest()[:32]


_FILES_PER_WORKER = 250  # a worker costs a fork and its share of the pool's start: worth it past a few hundred files
# The trusted keys in a forked verifying worker, set there (and only there) by the pool's initializer,
# which the parent hands them to: nothing in the parent process is written for its workers.
_worker_trusted: dict[str, Any] | None = None


def _trust_in_worker(trusted: dict[str, Any]) -> None:
    """The pool's initializer: runs in each forked worker as it starts."""
    global _worker_trusted
    _worker_trusted = trusted


def _verified_facts_in_worker(path: str) -> tuple[Any, ...]:
    assert _worker_trusted is not None
    return verified_facts(Path(path), _worker_trusted)


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _row_values(rel: str, stamp: str, keyset: str, verified: tuple[Any, ...]) -> tuple[Any, ...]:
    """An index row's values in _ROW's order, from verified_facts' answer."""
    sha, trust, reason, *facts = verified
    return (rel, stamp, sha, trust, reason, keyset, *facts)


def _stamp(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


class _transaction:
    """BEGIN IMMEDIATE .. COMMIT: one writer at a time among this host's readers of the index."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
