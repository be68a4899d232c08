"""The signed report: an in-toto Statement v1 in a DSSE envelope, signed with Ed25519.

The statement's subject is the node, named by host and identified by the sha256 of its canonical
hardware inventory (system serial, GPU serials and UUIDs), so reports of the same hardware can be
found and compared, and a swapped part shows. The predicate is the qualification report.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from cryptography.exceptions import InvalidSignature

from nodeqc.core.errors import UsageError, shown
from nodeqc.core.names import node_key
from nodeqc.core.safefile import NotAFile, open_regular, read_bounded, write_atomic
from nodeqc.report.journal import dumps
from nodeqc.report.keys import Signer, Trusted
from nodeqc.report.shape import ShapeError, check_predicate, check_verdict

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://nodeqc.dev/qualification/v1"
FABRIC_PREDICATE_TYPE = "https://nodeqc.dev/fabric/v1"  # many nodes qualified together (nodeqc.fabric)
PREDICATE_TYPES = (PREDICATE_TYPE, FABRIC_PREDICATE_TYPE)
PAYLOAD_TYPE = "application/vnd.in-toto+json"


def canonical(obj: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the same content always gives the same bytes."""
    return json.dumps(json.loads(dumps(obj)), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def inventory_digest(node: dict[str, Any], gpus: list[dict[str, Any]]) -> str:
    identity = {
        "system": {k: node.get(k) for k in ("system_vendor", "system_model", "system_serial", "board_serial")},
        "gpus": sorted(({k: g.get(k) for k in ("uuid", "serial", "bus_id")} for g in gpus),
                       key=lambda g: str(g["bus_id"])),
    }
    return hashlib.sha256(canonical(identity)).hexdigest()


def statement(predicate: dict[str, Any]) -> dict[str, Any]:
    node = predicate["node"]
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": f"node:{node['hostname']}",
                     "digest": {"sha256": inventory_digest(node, predicate["gpus"])}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what the signature covers."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def sign(stmt: dict[str, Any], signer: Signer) -> dict[str, Any]:
    return sign_payload(PAYLOAD_TYPE, canonical(stmt), signer)


def sign_payload(payload_type: str, payload: bytes, signer: Signer) -> dict[str, Any]:
    """A DSSE envelope of any payload: the report's statement, or the watch's state
    (nodeqc.archive.watch), each with its own payload type, which the signature covers."""
    sig = signer.sign(pae(payload_type, payload))
    return {"payloadType": payload_type,
            "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": signer.keyid, "sig": base64.b64encode(sig).decode()}]}


def write_envelope(path: Path, envelope: dict[str, Any]) -> None:
    """Write then rename (nodeqc.core.safefile): a report file on disk is always whole, and no planted link
    redirects it. OutputError (one line, e.g. "no space left on DIR") when it cannot be written."""
    write_atomic(path, (json.dumps(envelope, indent=2) + "\n").encode())


class VerificationError(Exception):
    """The report is not intact, or not signed by a trusted key."""


# The largest report file read: a 24-hour burn-in of 8 GPUs is well under 1 MiB; reading stops here,
# so /dev/zero or a planted giant file cannot fill memory.
MAX_REPORT_BYTES = 64 * 2**20


@dataclass
class Verified:
    statement: dict[str, Any]
    keyid: str
    key_source: str
    sha256: str = ""  # of the report file's bytes that were verified
    missing: list[str] = field(default_factory=list)  # evidence the report names that is not beside it
    checked: list[str] = field(default_factory=list)  # evidence beside it whose digest matched

    @property
    def predicate(self) -> dict[str, Any]:
        return self.statement["predicate"]


def read_report_bytes(path: Path, limit: int = MAX_REPORT_BYTES) -> bytes:
    """A report file's bytes, read once. A FIFO, device or directory is refused without reading it
    (opened non-blocking, so a FIFO with no writer cannot hang us), as is a file over `limit`.
    UsageError when the file cannot be opened at all; VerificationError when it is no report file."""
    try:
        return read_bounded(path, limit)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such report") from None
    except NotAFile as e:
        raise VerificationError(str(e).replace("any such file", "any report")) from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read report: {e.strerror}") from None


def _json(data: bytes | str, what: str) -> Any:
    """JSON, or VerificationError saying `what` is wrong and why (never a RecursionError)."""
    try:
        return json.loads(data)
    except json.JSONDecodeError as e:
        # "line N column M" after a colon: json's own messages may end in "at" ("Unterminated string
        # starting at"), and "... at at line 3" read as a typo.
        raise VerificationError(f"{what} (damaged? {e.msg}: line {e.lineno} column {e.colno})") from None
    except UnicodeDecodeError:
        raise VerificationError(f"{what} (damaged? not UTF-8 text)") from None
    except ValueError:  # a number of more digits than Python converts (4300), which json raises bare
        raise VerificationError(f"{what} (a number longer than any nodeqc writes)") from None
    except RecursionError:
        raise VerificationError(f"{what} (nested too deeply for a nodeqc report)") from None


def parse_envelope(data: bytes, kind: str = "report") -> dict[str, Any]:
    envelope = _json(data, f"not a JSON {kind}")
    if not isinstance(envelope, dict):
        raise VerificationError(f"not a nodeqc {kind} envelope")
    return envelope


def read_envelope(path: Path) -> dict[str, Any]:
    """The envelope as JSON; UsageError when the file cannot be read at all."""
    return parse_envelope(read_report_bytes(path))


def _b64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise VerificationError(f"{what} is missing")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationError(f"{what} is not valid base64 (altered?)") from None
    if not _canonical_b64(raw, text):  # non-canonical padding bits hide edits
        raise VerificationError(f"{what} is not canonical base64 (altered?)")
    return raw


def _canonical_b64(raw: bytes, text: str) -> bool:
    """Whether `text` is the one base64 spelling of `raw`. Only the last four characters can differ:
    b64decode(validate=True) has already refused any character outside the alphabet and any '='
    before the end, and every full four-character group carries exactly three bytes, with no spare
    bits; the last group's spare bits (before '=' padding) are where an edit could hide. So the
    length and the last group's encoding decide, without re-encoding a whole report's payload."""
    if len(text) != 4 * -(-len(raw) // 3):
        return False
    tail = base64.b64encode(raw[(len(raw) - 1) // 3 * 3:]).decode() if raw else ""
    return text.endswith(tail)


def decode_statement(envelope: dict[str, Any]) -> dict[str, Any]:
    """The statement inside an envelope, without checking the signature (for `show` of an
    untrusted report, which says so)."""
    return _statement(_b64(envelope.get("payload"), "payload"))


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _statement(payload: bytes) -> dict[str, Any]:
    """A decoded payload as a nodeqc statement, or VerificationError."""
    stmt = _json(payload, "payload is not JSON")
    if not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE or stmt.get("predicateType") not in PREDICATE_TYPES:
        raise VerificationError("payload is not a nodeqc qualification statement")
    # The signed type and the content agree: readers of fabric verdicts (verify --fabric-nodes, the
    # archive's fabric members) go by the content's kind, and a node's report whose content called
    # itself a fabric run would vouch for other nodes with one node's key (2026-11-28 audit).
    predicate = stmt.get("predicate")
    if (stmt["predicateType"] == FABRIC_PREDICATE_TYPE) != (isinstance(predicate, dict) and predicate.get("kind") == "fabric"):
        raise VerificationError(f"its predicate type is {stmt['predicateType']}, but its content is "
                                + ("a fabric run's" if stmt["predicateType"] == PREDICATE_TYPE else "not a fabric run's"))
    try:
        # A lone surrogate comes only from a \\uD800-\\uDFFF escape (UTF-8 cannot carry one): text is
        # walked for them where the payload holds such an escape (a fifth of the check's time otherwise).
        check_predicate(stmt.get("predicate"), fabric=stmt["predicateType"] == FABRIC_PREDICATE_TYPE,
                        text=_SURROGATE_ESCAPE.search(payload) is not None)
    except ShapeError as e:
        raise VerificationError(f"a field of the wrong kind: {e}") from None
    return stmt


def _outside_binding(stmt: dict[str, Any], nodes: frozenset[str] | None) -> str | None:
    """Why a key bound to `nodes` (keys.Trusted) does not vouch for this statement, or None."""
    if nodes is None:
        return None
    bound = ", ".join(sorted(nodes)[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
    predicate = stmt["predicate"]
    if stmt["predicateType"] == FABRIC_PREDICATE_TYPE:
        return f"which is bound to node(s) {bound}: it vouches for no fabric run"
    node = predicate.get("node") if isinstance(predicate.get("node"), dict) else {}
    claimed = node_key(node.get("system_serial"), node.get("hostname"))
    if claimed not in nodes:
        return f"which is bound to node(s) {bound}: this report is of node {shown(claimed)}"
    return None


def verify_envelope(envelope: dict[str, Any], trusted: dict[str, Trusted]) -> Verified:
    def vouched(payload: bytes, nodes: frozenset[str] | None) -> tuple[dict[str, Any], str | None]:
        stmt = _statement(payload)  # the payload that was verified, decoded once
        if stmt["predicateType"] != FABRIC_PREDICATE_TYPE:
            try:
                check_verdict(stmt["predicate"])
            except ShapeError as e:
                raise VerificationError(str(e)) from None
        return stmt, _outside_binding(stmt, nodes)

    stmt, kid, source = open_signed(envelope, PAYLOAD_TYPE, trusted, vouched, "the report")
    return Verified(stmt, kid, source)


def open_signed(envelope: dict[str, Any], payload_type: str, trusted: dict[str, Trusted],
                vouched: Callable[[bytes, frozenset[str] | None], tuple[Any, str | None]], what: str) -> tuple[Any, str, str]:
    """A DSSE envelope's content, once a trusted key's signature over it matches: (what `vouched`
    made of the payload, the key's id, where the key came from). `vouched` reads the verified payload
    and says why the key, bound to those nodes (keys.Trusted; None: any), does not vouch for it, or
    None. VerificationError, naming `what`, with each signature's reason otherwise."""
    if envelope.get("payloadType") != payload_type:
        raise VerificationError(f"payloadType is {envelope.get('payloadType')!r}, expected {payload_type}")
    payload = _b64(envelope.get("payload"), "payload")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise VerificationError(f"{what} is not signed")
    if not trusted:
        kids = [str(s.get("keyid"))[:16] + "…" for s in signatures if isinstance(s, dict) and s.get("keyid")]
        raise VerificationError("no trusted public key: " + (f"{what} is signed by key {', '.join(kids[:3])}; "
                                                             if kids else "") + "pass its public key with --pubkey PEM")
    message = pae(payload_type, payload)
    reasons = []
    for s in signatures:
        kid = s.get("keyid") if isinstance(s, dict) else None
        sig = _b64(s.get("sig") if isinstance(s, dict) else None, "signature")
        if not isinstance(kid, str) or kid not in trusted:
            reasons.append(f"signed by key {str(kid)[:16]}…, which is not trusted")
            continue
        key, source = trusted[kid][:2]
        try:
            key.verify(sig, message)
        except InvalidSignature:
            reasons.append("signature does not match the content (altered)")
            continue
        content, outside = vouched(payload, trusted[kid][2] if len(trusted[kid]) > 2 else None)
        if outside:
            reasons.append(f"signed by key {kid[:16]}… ({source}), {outside}")
            continue
        return content, kid, source
    raise VerificationError("; ".join(reasons))


def verify_bytes(data: bytes, trusted: dict[str, Trusted], sha256: str | None = None) -> Verified:
    """A report file's bytes verified: the envelope's signature by a trusted key (evidence aside).
    `sha256`: the bytes' digest when the caller has already taken it."""
    verified = verify_envelope(parse_envelope(data), trusted)
    verified.sha256 = sha256 or hashlib.sha256(data).hexdigest()
    return verified


def evidence_files(predicate: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The evidence files a report names, as (what, file name, signed sha256)."""
    telemetry = predicate.get("telemetry")
    named = [("journal", predicate.get("journal")),
             ("telemetry", telemetry.get("series") if isinstance(telemetry, dict) else None)]
    return [(what, str(d["file"]), str(d.get("sha256"))) for what, d in named
            if isinstance(d, dict) and d.get("file")]


def check_evidence(verified: Verified, directory: Path) -> None:
    """The journal and telemetry files the report names, when they are beside it, must have the
    signed digests (VerificationError naming the one that differs); those that are not there are
    listed in verified.missing."""
    for what, name, digest in evidence_files(verified.predicate):
        if Path(name).name != name or name == "..":  # a path, "." (whose name is ""), or the parent
            raise VerificationError(f"{what} file name {name!r} is not a plain file name")
        path = directory / name
        try:  # the file itself, never a link to another file: evidence is what lies beside the report
            fd = open_regular(path, follow=False)
        except FileNotFoundError:
            verified.missing.append(f"{what} {name}")
            continue
        except NotAFile:
            raise VerificationError(f"{what} {name} is not a regular file") from None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise VerificationError(f"{what} {name} is a symbolic link, not the evidence file itself") from None
            raise VerificationError(f"{what} {name} cannot be read: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            actual = hashlib.file_digest(f, "sha256").hexdigest()
        if actual != digest:
            raise VerificationError(f"{what} {name} does not match the signed digest (altered evidence)")
        verified.checked.append(f"{what} {name}")


def verify_file(path: Path, trusted: dict[str, Trusted], evidence: bool = True) -> Verified:
    """A report file verified: read once (refusing what is not a regular file of a report's size),
    signed by a trusted key, and its evidence files checked when they are beside it."""
    verified = verify_bytes(read_report_bytes(path), trusted)
    if evidence:
        check_evidence(verified, path.parent)
    return verified


def evidence_text(verified: Verified) -> str:
    """What `verify`, `show` and the printable summary say about the journal and telemetry files the
    report names."""
    said = [f"{c.split()[0]} ok" for c in verified.checked] + [f"{m} missing" for m in verified.missing]
    return ", ".join(said) or "none named by the report"


@dataclass
class Loaded:
    """A report file as every face shows it: read once, verified (signature and evidence) or, when it
    does not verify, why not, with its statement still decoded if it is a readable report at all."""

    path: Path
    statement: dict[str, Any] | None  # None: not a readable nodeqc report (see `problem`)
    verified: Verified | None  # None: it does not verify (see `problem`)
    problem: str | None = None  # why it does not verify
    unreadable: str | None = None  # why it is not a readable report at all

    @property
    def trust(self) -> str:
        """One line: verified by which key, with its evidence; or why not, and not to rely on it."""
        if self.verified is not None:
            v = self.verified
            return f"signature: verified (key {v.keyid[:16]}, {v.key_source}); evidence: {evidence_text(v)}"
        return f"signature: NOT VERIFIED ({self.problem}): do not rely on this report"


def load(path: Path, trusted: dict[str, Trusted]) -> Loaded:
    """The one way a face reads a report to show it (`show`, `compare`, the app's report view and
    PDF): the same checks everywhere, the evidence files included. A file that is not a regular
    file raises UsageError as read_report_bytes does; one too large to be a report is unreadable."""
    try:
        data = read_report_bytes(path)
    except VerificationError as e:
        return Loaded(path, None, None, str(e), str(e))
    try:
        verified = verify_bytes(data, trusted)
        check_evidence(verified, path.parent)
        return Loaded(path, verified.statement, verified)
    except VerificationError as e:
        problem = str(e)
    try:
        return Loaded(path, decode_statement(parse_envelope(data)), None, problem)
    except VerificationError as e:
        return Loaded(path, None, None, problem, str(e))

