"""The signed report: an in-toto Statement v1 in a DSSE envelope, signed with Ed25519.

The statement's subject is the node, named by host and identified by the sha256 of its canonical
hardware inventory (system serial, GPU serials and UUIDs), so reports of the same hardware can be
found and compared, and a swapped part shows. The predicate is the qualification report.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from nodeqc.errors import UsageError
from nodeqc.journal import dumps
from nodeqc.keys import Signer
from nodeqc.safefile import write_atomic

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://nodeqc.dev/qualification/v1"
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
    payload = canonical(stmt)
    sig = signer.sign(pae(PAYLOAD_TYPE, payload))
    return {"payloadType": PAYLOAD_TYPE,
            "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": signer.keyid, "sig": base64.b64encode(sig).decode()}]}


def write_envelope(path: Path, envelope: dict[str, Any]) -> None:
    """Write then rename (nodeqc.safefile): a report file on disk is always whole, and no planted link
    redirects it. OutputError (one line, e.g. "no space left on DIR") when it cannot be written."""
    write_atomic(path, (json.dumps(envelope, indent=2) + "\n").encode())


class VerificationError(Exception):
    """The report is not intact, or not signed by a trusted key."""


@dataclass
class Verified:
    statement: dict[str, Any]
    keyid: str
    key_source: str

    @property
    def predicate(self) -> dict[str, Any]:
        return self.statement["predicate"]


def read_envelope(path: Path) -> dict[str, Any]:
    """The envelope as JSON; UsageError when the file cannot be read at all."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such report") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read report: {e}") from None
    try:
        envelope = json.loads(text)
    except json.JSONDecodeError as e:
        raise VerificationError(f"not a JSON report (damaged? {e.msg} at line {e.lineno})") from None
    if not isinstance(envelope, dict):
        raise VerificationError("not a nodeqc report envelope")
    return envelope


def _b64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise VerificationError(f"{what} is missing")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationError(f"{what} is not valid base64 (altered?)") from None
    if base64.b64encode(raw).decode() != text:  # non-canonical padding bits hide edits
        raise VerificationError(f"{what} is not canonical base64 (altered?)")
    return raw


def decode_statement(envelope: dict[str, Any]) -> dict[str, Any]:
    """The statement inside an envelope, without checking the signature (for `show` of an
    untrusted report, which says so)."""
    payload = _b64(envelope.get("payload"), "payload")
    try:
        stmt = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise VerificationError("payload is not JSON") from None
    if not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE or stmt.get("predicateType") != PREDICATE_TYPE:
        raise VerificationError("payload is not a nodeqc qualification statement")
    return stmt


def verify_envelope(envelope: dict[str, Any], trusted: dict[str, tuple[Ed25519PublicKey, str]]) -> Verified:
    if envelope.get("payloadType") != PAYLOAD_TYPE:
        raise VerificationError(f"payloadType is {envelope.get('payloadType')!r}, expected {PAYLOAD_TYPE}")
    payload = _b64(envelope.get("payload"), "payload")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise VerificationError("the report is not signed")
    if not trusted:
        raise VerificationError("no trusted public key: pass --pubkey PEM")
    message = pae(PAYLOAD_TYPE, payload)
    reasons = []
    for s in signatures:
        kid = s.get("keyid") if isinstance(s, dict) else None
        sig = _b64(s.get("sig") if isinstance(s, dict) else None, "signature")
        if kid not in trusted:
            reasons.append(f"signed by key {str(kid)[:16]}…, which is not trusted")
            continue
        key, source = trusted[kid]
        try:
            key.verify(sig, message)
        except InvalidSignature:
            reasons.append("signature does not match the content (altered)")
            continue
        return Verified(decode_statement(envelope), kid, source)
    raise VerificationError("; ".join(reasons))


def verify_file(path: Path, trusted: dict[str, tuple[Ed25519PublicKey, str]]) -> Verified:
    verified = verify_envelope(read_envelope(path), trusted)
    series = (verified.predicate.get("telemetry") or {}).get("series")
    if series and series.get("file"):
        data_path = path.parent / series["file"]
        if data_path.is_file():
            if hashlib.sha256(data_path.read_bytes()).hexdigest() != series.get("sha256"):
                raise VerificationError(f"telemetry file {series['file']} does not match the signed digest")
    return verified
