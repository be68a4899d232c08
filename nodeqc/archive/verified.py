"""What the archive knows of a report it verified: the facts read from it (verified_facts, kept in
the index: nodeqc.archive.index), an entry of a listing (Entry) or a file that did not verify and
why (Skipped), and a report read again only while it is still the content that was verified
(read_verified, read_by_digest, iter_checks, read_checks)."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from nodeqc.core.names import host_label, node_key
from nodeqc.core.errors import UsageError
from nodeqc.report.envelope import VerificationError

# What the index keeps of a verified report (nodeqc.archive.index), column by column: its path
# under the archive, the digest of the bytes verified, then the facts verified_facts reads from it.
COLUMNS = ("path", "sha256", "node", "hostname", "verdict", "status", "partial", "simulated", "profile",
           "started_at", "finished_at", "operator", "ticket", "keyid", "previous", "failed", "members")


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


def verified_facts(path: Path, trusted: dict[str, Any]) -> tuple[Any, ...]:
    """What the index keeps of one report file, less its path, stamp and keyset: (sha256, trust,
    reason, *facts), verified by a trusted key with its evidence beside it, or why not."""
    from nodeqc.report.envelope import check_evidence, read_report_bytes, verify_bytes

    facts: tuple[Any, ...] = (None,) * (len(COLUMNS) - 2)
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
        facts = (None,) * (len(COLUMNS) - 2)
    return (sha, trust, reason, *facts)


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
    # The member's name in the run is the coordinator's (the scheduler placed it there); its identity
    # is the worker's own word (2026-11-28 audit). A host name that is not the run's name for it (the
    # same first label, without case) is not believed, nor a serial beside it: a worker cannot file
    # its verdict under a node it is not. A serial or host name two members claim is neither's (one
    # of them speaks for the other). Each member is still found by its name in the run.
    for name, m in out.items():
        if m["hostname"] and host_label(m["hostname"]) != host_label(name):
            m["hostname"] = m["key"] = None
    for claimed in ("key", "hostname"):
        claims = [m[claimed] for m in out.values() if m[claimed]]
        for m in out.values():
            if m[claimed] and claims.count(m[claimed]) > 1:
                m[claimed] = None
    return out


def fabric_member(members: str | None, node: str) -> tuple[str, dict[str, Any], bool] | None:
    """A node's facts in a fabric report's members (index column): (its name in the run, its facts,
    whether it was found by that name rather than by its own claim of host name or serial)."""
    if not members or members == "{}":
        return None
    found = json.loads(members)
    if node in found:
        return node, found[node], True
    return next(((n, m, False) for n, m in found.items() if node in (m.get("hostname"), m.get("key"))), None)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


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
    yield from read_checks(entry)[0]


def read_checks(entry: Entry) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The check results of an indexed report and the GPUs it lists (subject, serial, bus id...),
    read again (NotVerified when the file is no longer the content that was verified)."""
    predicate = read_by_digest(entry.path, entry.sha256)
    return (list(predicate.get("checks") or []),
            [g for g in predicate.get("gpus") or [] if isinstance(g, dict)])
