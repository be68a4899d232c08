"""The fleet, from the archive: each node's newest verified report, its figures by SKU and measure,
outliers against the fleet (nodeqc.checks.fleet), and when each qualification expires.

The archive's index (nodeqc.archive.index) says which reports are verified; this module reads only the
newest report of each node, and keeps what it took from each in a per-user cache keyed by the
report's sha256 (a digest names its content, so the cache can never describe another file). Each
row carries an HMAC under the user's index secret, as the archive's index rows do: a row edited in
the cache (a later valid_until, a better figure) is not trusted but taken from the report again.
The cache is only a cache: delete it and it is rebuilt from the reports.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import platformdirs

from nodeqc.checks.fleet import HIGHER_BETTER_UNITS, LOWER_BETTER_UNITS, FleetFigure, Outlier
from nodeqc.archive.index import warn_stderr
from nodeqc.archive.standing import judged, open_labels, walked
from nodeqc.archive.watch import last_cleared, validity
from nodeqc.checks.fleet import outliers as find_outliers
from nodeqc.core.model import check_label
from nodeqc.report.keys import trusted_keys

CACHE_VERSION = 4  # 2: each row with its HMAC; 3: with the checks that warned; 4: with the checks judged
WARNED = " (warn)"  # how a warned check is marked among the failed ones
UNITS = HIGHER_BETTER_UNITS + LOWER_BETTER_UNITS


def extract(predicate: dict[str, Any]) -> dict[str, Any]:
    """What the fleet needs of one report: its SKU(s), figures, expiry and the checks that warned
    (named as summary.failed names the failed ones: nodeqc.core.model.check_label)."""
    gpus = {g.get("subject"): g.get("name") for g in predicate.get("gpus") or [] if g.get("subject")}
    models = sorted({m for m in gpus.values() if m and m != "unavailable"})
    node_sku = f"{len(gpus)}x {models[0]}" if len(models) == 1 else " + ".join(models) or "unknown"
    figures, warned = [], []
    for c in predicate.get("checks") or []:
        if c.get("verdict") == "warn":
            warned.append(check_label(str(c.get("name")), str(c.get("subject"))))
        if c.get("verdict") not in ("pass", "warn", "fail"):
            continue
        subject = c.get("subject", "")
        sku = gpus.get(subject) if subject.startswith("gpu") else node_sku if subject == "node" else None
        if not sku:
            continue
        for name, v in (c.get("values") or {}).items():
            value, unit = v.get("value"), v.get("unit")
            if unit in UNITS and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and math.isfinite(value):  # no NaN, and no ±Infinity (which json.loads takes) to scale a chart by
                figures.append([subject, sku, f"{c['name']}:{name}", float(value), unit])
    return {"valid_until": predicate.get("valid_until"), "node_sku": node_sku, "figures": figures, "warned": warned,
            "judged": judged(predicate)}


class FigureCache:
    """sha256 of a report -> what extract() took from it, in the user's cache directory, each row
    with its HMAC (nodeqc.archive.secret.row_mac). Without an index secret to be had, kept in memory only."""

    def __init__(self, path: Path | None = None, secret: bytes | None = None):
        self.path = path or platformdirs.user_cache_path("nodeqc") / "fleet-figures.sqlite3"
        self._secret = secret
        self._db: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            if self._secret is None:
                from nodeqc.archive.secret import index_secret

                self._secret = index_secret()
            if self._secret is None:  # nothing to sign rows with: nothing lasting to trust
                self._secret, self._db = os.urandom(32), self._open(":memory:")
                return self._db
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    self._db = self._open(self.path)
                except sqlite3.DatabaseError:
                    if not self.path.is_file():
                        raise
                    self.path.unlink()  # a damaged cache is rebuilt, never trusted
                    self._db = self._open(self.path)
            except (OSError, sqlite3.Error) as e:
                self._unusable(e)
        return self._db

    def _unusable(self, e: Exception) -> None:
        """A cache that cannot be opened or written (its path a directory, its directory a file, a
        read-only disk) is only slower: the figures are read from the reports, kept in memory."""
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        warn_stderr(f"figure cache {self.path}: {why}; reading the figures from the reports")
        if self._db is not None:
            self._db.close()
        self._db = self._open(":memory:")

    def _open(self, path: Path | str) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=30)
        if db.execute("PRAGMA user_version").fetchone()[0] not in (0, CACHE_VERSION):
            db.execute("DROP TABLE IF EXISTS figures")
        db.execute("CREATE TABLE IF NOT EXISTS figures (sha256 TEXT PRIMARY KEY, data TEXT NOT NULL, mac TEXT NOT NULL)")
        db.execute(f"PRAGMA user_version = {CACHE_VERSION}")
        return db

    def _row(self, digest: str, data: str) -> tuple[Any, ...]:
        return ("fleet figures", digest, data)  # tagged: never a row of the index's

    def get_many(self, digests: list[str]) -> dict[str, dict[str, Any]]:
        """The rows of these reports whose HMAC holds; an edited row is left out (read again)."""
        from nodeqc.archive.secret import row_mac_ok

        db, out = self._connect(), {}
        assert self._secret is not None
        for i in range(0, len(digests), 500):
            chunk = digests[i:i + 500]
            rows = db.execute(f"SELECT sha256, data, mac FROM figures WHERE sha256 IN ({','.join('?' * len(chunk))})",
                              chunk)
            for d, data, mac in rows:
                if row_mac_ok(self._secret, self._row(d, data), mac):
                    out[d] = json.loads(data)
        return out

    def put_many(self, items: dict[str, dict[str, Any]]) -> None:
        from nodeqc.archive.secret import row_mac

        if not items:
            return
        db = self._connect()
        assert self._secret is not None
        texts = {d: json.dumps(v, separators=(",", ":")) for d, v in items.items()}
        rows = [(d, t, row_mac(self._secret, self._row(d, t))) for d, t in texts.items()]
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO figures VALUES (?, ?, ?)", rows)
        except sqlite3.Error as e:
            self._unusable(e)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def read_extracts(entries: Iterable[Any], cache: FigureCache | None = None) -> dict[str, dict[str, Any]]:
    """sha256 -> extract for these archive entries: from the cache, else from the report file
    (already verified by the archive's index), then cached."""
    import hashlib

    from nodeqc.report.envelope import decode_statement, parse_envelope, read_report_bytes

    cache = cache or FigureCache()
    entries = list(entries)
    known = cache.get_many([e.sha256 for e in entries])
    new = {}
    for e in entries:
        if e.sha256 in known or e.sha256 in new:
            continue
        try:
            data = read_report_bytes(e.path)
            # Only the bytes the index verified: a file changed since is not read for this digest.
            if hashlib.sha256(data).hexdigest() != e.sha256:
                raise ValueError("changed since it was indexed")
            new[e.sha256] = extract(decode_statement(parse_envelope(data))["predicate"])
        except Exception:  # noqa: BLE001 - unreadable or changed: no figures, the node is listed anyway
            new[e.sha256] = {"valid_until": None, "node_sku": "unknown", "figures": [], "warned": [],
                             "unreadable": True}
    cache.put_many({d: v for d, v in new.items() if not v.get("unreadable")})
    return {**known, **new}


@dataclass
class NodeRow:
    node: str
    hostname: str
    result: str  # PASS, FAIL, ABORTED, + (partial) / SIM
    qualified: bool
    finished_at: str
    valid_until: str | None
    sku: str
    report: Path
    failed: list[str]  # 'check subject' of each result that failed or could not run (summary.failed)
    outliers: list[Outlier] = field(default_factory=list)
    warned: list[str] = field(default_factory=list)  # 'check subject' of each result that warned
    # Why `nodeqc watch` ended the qualification since (valid_until is then when it did), or ''.
    watch: str = ""
    # Failures still open from older reports that the newer ones did not re-run (nodeqc.archive.standing):
    # 'check subject' -> the file name of the report that judged it.
    carried: dict[str, str] = field(default_factory=dict)

    def expired(self, now: datetime) -> bool:
        return bool(self.valid_until) and _parse(self.valid_until) <= now

    def age(self, now: datetime) -> str:
        seconds = max(0.0, (now - _parse(self.finished_at)).total_seconds())
        if seconds < 3600:
            return f"{int(seconds // 60)}m"
        if seconds < 86400 * 2:
            return f"{int(seconds // 3600)}h"
        return f"{int(seconds // 86400)}d"

    @property
    def checks(self) -> list[str]:
        return named_checks(self.failed, self.warned)

    def has_problems(self, now: datetime) -> bool:
        """Not qualified, expired or with outliers: such a node is listed first and counted. A
        qualification with warnings is not one (warnings are allowed), though problems() names them."""
        return not self.qualified or self.expired(now) or bool(self.outliers) or bool(self.watch)

    @property
    def failing(self) -> bool:
        """Something on the node failed or could not run, not only unqualified: a simulated,
        replayed or partial PASS is not qualified either, and in a demo archive every node is that."""
        return (bool(self.failed or self.carried or self.watch)
                or self.result.startswith(("FAIL", "ERROR", "ABORTED")))

    def severity(self, now: datetime) -> int:
        """Where the node goes on the fleet page: 0 not qualified (failed, aborted, could not run),
        1 another problem (expired, outliers), 2 qualified with warnings, 3 nothing to say."""
        if not self.qualified or self.watch:
            return 0
        if self.has_problems(now):
            return 1
        return 2 if self.warned else 3

    def problems(self, now: datetime) -> list[str]:
        """What the fleet's table, CSV and page say of the node: 'FAIL: health.pcie_link gpu3,
        health.temperature gpu1 (warn)', 'expired', '2 outlier(s)'."""
        out = []
        named = ", ".join(self.checks)
        by_report: dict[str, list[str]] = {}
        for label, report in self.carried.items():
            by_report.setdefault(report, []).append(label)
        carried = [f"FAIL: {', '.join(labels)} (open since {report})" for report, labels in by_report.items()]
        if not self.qualified:
            word = (self.result if self.failed or self.result.startswith(("FAIL", "ERROR", "ABORTED"))
                    else "not qualified")
            out.append(f"{word}: {named}" if named else word)
        elif named:
            out.append(named)
        out += carried  # a failure stays open until a report re-runs that check on that part
        if self.watch:
            out.append(self.watch)
        elif self.expired(now):
            out.append("expired")
        if self.outliers:
            out.append(f"{len(self.outliers)} outlier(s)")
        return out


def named_checks(failed: list[str], warned: list[str]) -> list[str]:
    """The checks a node's report failed (or could not run), then those it warned on marked as such,
    each with its part: ['health.pcie_link gpu3', 'health.temperature gpu1 (warn)']."""
    return [*failed, *(w + WARNED for w in warned)]


@dataclass
class FleetView:
    rows: list[NodeRow]
    outliers: list[Outlier]
    distributions: dict[tuple[str, str], Any]
    now: datetime
    # Fabric runs (many nodes' pairs, not a node): each fabric's newest report, newest first, kept
    # out of the node rows and counts.
    fabrics: list[Any] = field(default_factory=list)


def fleet(entries: list[Any], outlier_pct: float, min_fleet: int, now: datetime | None = None,
          cache: FigureCache | None = None, trusted: dict[str, Any] | None = None) -> FleetView:
    """The fleet from archive entries (newest first, as Archive.reports gives them): each node's
    newest report, the outliers, and the rows ordered newest problems first. `trusted`: the keys
    a node's watch state is believed by (default: keys.trusted_keys(), as the archive's index)."""
    now = now or datetime.now(timezone.utc)
    trusted = trusted_keys() if trusted is None else trusted
    newest: dict[str, Any] = {}
    fabrics: dict[str, Any] = {}
    by_node: dict[str, list[Any]] = {}
    for e in entries:
        if e.fabric:  # a fabric run is not a node: listed apart (FleetView.fabrics)
            fabrics.setdefault(e.node, e)
            continue
        by_node.setdefault(e.node, []).append(e)
        if e.node not in newest:
            newest[e.node] = e
    # Each node's reports down to its newest complete, full run: its open failures (nodeqc.archive.standing).
    walks = {node: walked(es) for node, es in by_node.items()}
    extracts = read_extracts([e for w in walks.values() for e in w], cache)
    figures = [FleetFigure(e.node, s, sku, m, v, u) for e in newest.values()
               for s, sku, m, v, u in extracts[e.sha256]["figures"]]
    found, dists = find_outliers(figures, outlier_pct, min_fleet)
    outliers_of: dict[str, list[Outlier]] = {}
    for o in found:
        outliers_of.setdefault(o.figure.node, []).append(o)
    rows = []
    cleared = last_cleared(entries)
    for e in newest.values():
        until, watched = validity(e.node, e.root, extracts[e.sha256].get("valid_until"), cleared.get(e.node),
                                  trusted, now.timestamp())
        carried = {label: old.path.name for label, old in
                   open_labels(walks[e.node], lambda x: list(extracts[x.sha256].get("judged") or []))
                   if old is not e}
        rows.append(NodeRow(e.node, e.hostname, e.result, e.qualified, e.finished_at, until,
                            extracts[e.sha256].get("node_sku", "unknown"), e.path, list(e.failed),
                            outliers_of.get(e.node, []), list(extracts[e.sha256].get("warned") or []), watched,
                            carried))
    rows.sort(key=lambda r: r.finished_at, reverse=True)
    # Stable: newest first within each; among the problems a failure before an unqualified pass.
    rows.sort(key=lambda r: (0 if r.has_problems(now) else 1, 0 if r.failing else 1))
    return FleetView(rows, found, dists, now, list(fabrics.values()))


def fabric_failed(entry: Any) -> str:
    """The nodes a fabric run did not pass, by their names there: 'node3 (fail), node7 (error)'."""
    return ", ".join(f"{name} ({m.get('verdict')})" for name, m in sorted(entry.members.items())
                     if m.get("verdict") != "pass")


def expired_entries(entries: list[Any], now: datetime | None = None, cache: FigureCache | None = None,
                    trusted: dict[str, Any] | None = None) -> list[Any]:
    """Each node's newest qualification (a complete, full run that passed) whose valid_until has
    passed, or that `nodeqc watch` ended (a sticky finding since: nodeqc.archive.watch); newest
    first. A qualification without valid_until (its profile set no valid_days) never expires by age."""
    now = now or datetime.now(timezone.utc)
    newest_pass: dict[str, Any] = {}
    for e in entries:
        if e.qualified and e.node not in newest_pass:
            newest_pass[e.node] = e
    extracts = read_extracts(newest_pass.values(), cache)
    cleared = last_cleared(entries)
    trusted = trusted_keys() if trusted is None else trusted
    ended = {e.sha256: validity(e.node, e.root, extracts[e.sha256].get("valid_until"), cleared.get(e.node),
                                trusted, now.timestamp())[0] for e in newest_pass.values()}
    return [e for e in newest_pass.values() if ended[e.sha256] and _parse(ended[e.sha256]) <= now]


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def fleet_figures(entries: list[Any], exclude_node: str, simulated: bool,
                  cache: FigureCache | None = None) -> list[FleetFigure]:
    """The figures of every other node's newest report, real and simulated kept apart."""
    newest: dict[str, Any] = {}
    for e in entries:
        if e.node != exclude_node and e.simulated == simulated and e.node not in newest:
            newest[e.node] = e
    extracts = read_extracts(newest.values(), cache)
    return [FleetFigure(e.node, s, sku, m, v, u) for e in newest.values()
            for s, sku, m, v, u in extracts[e.sha256]["figures"]]


def own_figures(node: str, gpus: list[dict[str, Any]], checks: list[dict[str, Any]]) -> list[FleetFigure]:
    got = extract({"gpus": gpus, "checks": checks})
    return [FleetFigure(node, s, sku, m, v, u) for s, sku, m, v, u in got["figures"]]
