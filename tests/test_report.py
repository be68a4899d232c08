"""Signed reports: in-toto Statement v1 in a DSSE envelope, Ed25519. Any change to the payload or
the signature fails verification; so does a key that is not trusted."""

import base64
import json
import os
import stat

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from nodeqc.errors import UsageError
from nodeqc.keys import Signer, create_key, default_key_path, keyid, load_public, load_signer, public_path, trusted_keys
from nodeqc.report import (PAYLOAD_TYPE, STATEMENT_TYPE, VerificationError, inventory_digest, pae, sign, statement,
                           verify_envelope, verify_file, write_envelope)


def predicate(**kw):
    p = {"verdict": "PASS", "simulated": True, "node": {"hostname": "n1", "system_serial": "S1"},
         "gpus": [{"uuid": "GPU-a", "serial": "1", "bus_id": "0000:1b:00.0"}], "checks": []}
    p.update(kw)
    return p


@pytest.fixture
def signer(tmp_path):
    return create_key(tmp_path / "k.pem")


def trusted(signer):
    return {signer.keyid: (signer.public, "test")}


def test_envelope_shape(signer):
    env = sign(statement(predicate()), signer)
    assert env["payloadType"] == PAYLOAD_TYPE == "application/vnd.in-toto+json"
    stmt = json.loads(base64.b64decode(env["payload"]))
    assert stmt["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert stmt["subject"][0]["name"] == "node:n1" and len(stmt["subject"][0]["digest"]["sha256"]) == 64
    assert env["signatures"] == [{"keyid": signer.keyid, "sig": env["signatures"][0]["sig"]}]
    # The signature covers DSSE's pre-authentication encoding, not the bare payload.
    sig = base64.b64decode(env["signatures"][0]["sig"])
    signer.public.verify(sig, pae(PAYLOAD_TYPE, base64.b64decode(env["payload"])))


def test_pae_matches_the_dsse_spec():
    assert pae("http://example.com/HelloWorld", b"hello world") == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"


def test_round_trip(signer):
    v = verify_envelope(sign(statement(predicate()), signer), trusted(signer))
    assert v.predicate["verdict"] == "PASS" and v.keyid == signer.keyid


def test_inventory_digest_names_the_hardware_not_the_run():
    a = predicate(verdict="PASS")
    b = predicate(verdict="FAIL", checks=[{"x": 1}])
    assert inventory_digest(a["node"], a["gpus"]) == inventory_digest(b["node"], b["gpus"])
    swapped = [{"uuid": "GPU-b", "serial": "2", "bus_id": "0000:1b:00.0"}]
    assert inventory_digest(a["node"], swapped) != inventory_digest(a["node"], a["gpus"])


def _with_char(text: str, i: int) -> str:
    c = text[i]
    return text[:i] + ("A" if c != "A" else "B") + text[i + 1:]


def test_every_single_character_change_of_payload_or_signature_fails(signer):
    env = sign(statement(predicate()), signer)
    t = trusted(signer)
    for field in ("payload", "sig"):
        text = env["payload"] if field == "payload" else env["signatures"][0]["sig"]
        for i in range(len(text)):
            bad = json.loads(json.dumps(env))
            if field == "payload":
                bad["payload"] = _with_char(text, i)
            else:
                bad["signatures"][0]["sig"] = _with_char(text, i)
            with pytest.raises(VerificationError):
                verify_envelope(bad, t)


def test_a_changed_byte_anywhere_in_the_report_file_fails(signer, tmp_path):
    """Byte-level edits of the file itself: every byte inside the payload and signature strings."""
    path = tmp_path / "r.report.json"
    write_envelope(path, sign(statement(predicate()), signer))
    raw = path.read_bytes()
    env = json.loads(raw)
    spans = []
    for value in (env["payload"], env["signatures"][0]["sig"]):
        start = raw.index(value.encode())
        spans.append(range(start, start + len(value)))
    t = trusted(signer)
    for span in spans:
        for i in span:
            altered = bytearray(raw)
            altered[i] = altered[i] ^ 0x01
            path.write_bytes(bytes(altered))
            with pytest.raises((VerificationError, UsageError)):
                verify_file(path, t)
    path.write_bytes(raw)
    assert verify_file(path, t).predicate["verdict"] == "PASS"


def test_a_valid_signature_by_an_untrusted_key_fails(signer, tmp_path):
    other = create_key(tmp_path / "other.pem")
    env = sign(statement(predicate()), other)
    with pytest.raises(VerificationError, match="not trusted"):
        verify_envelope(env, trusted(signer))


def test_keyid_swapped_to_a_trusted_one_fails(signer, tmp_path):
    other = create_key(tmp_path / "other.pem")
    env = sign(statement(predicate()), other)
    env["signatures"][0]["keyid"] = signer.keyid
    with pytest.raises(VerificationError, match="does not match"):
        verify_envelope(env, trusted(signer))


@pytest.mark.parametrize("change, message", [
    (lambda e: e.update(payloadType="application/json"), "payloadType"),
    (lambda e: e.update(signatures=[]), "not signed"),
    (lambda e: e.pop("payload"), "payload is missing"),
])
def test_malformed_envelopes(signer, change, message):
    env = sign(statement(predicate()), signer)
    change(env)
    with pytest.raises(VerificationError, match=message):
        verify_envelope(env, trusted(signer))


def test_the_telemetry_file_is_bound_by_its_digest(signer, tmp_path):
    series = tmp_path / "r.telemetry.csv.gz"
    series.write_bytes(b"data")
    import hashlib

    p = predicate(telemetry={"series": {"file": series.name, "sha256": hashlib.sha256(b"data").hexdigest()}})
    path = tmp_path / "r.report.json"
    write_envelope(path, sign(statement(p), signer))
    verify_file(path, trusted(signer))
    series.write_bytes(b"dat4")
    with pytest.raises(VerificationError, match="telemetry r.telemetry.csv.gz does not match"):
        verify_file(path, trusted(signer))


# ------------------------------------------------------------------ keys

def test_per_user_key_is_made_once_with_mode_0600():
    s1 = load_signer(None)
    path = default_key_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert public_path(path).is_file()
    assert load_public(public_path(path)).public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw) == \
        s1.public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert load_signer(None).keyid == s1.keyid
    assert s1.keyid in trusted_keys()  # your own key is trusted by default


def test_world_readable_key_is_refused(tmp_path):
    key = create_key(tmp_path / "k.pem")
    os.chmod(key.path, 0o644)
    with pytest.raises(UsageError, match=r"readable by all users \(mode 0644\); run chmod 600"):
        load_signer(key.path)


def test_keys_of_the_wrong_kind(tmp_path):
    rsa_like = tmp_path / "ec.pem"
    rsa_like.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    os.chmod(rsa_like, 0o600)
    with pytest.raises(UsageError, match="not an Ed25519 key"):
        load_signer(rsa_like)
    garbage = tmp_path / "g.pem"
    garbage.write_text("hello")
    os.chmod(garbage, 0o600)
    with pytest.raises(UsageError, match="not a PEM private key"):
        load_signer(garbage)
    enc = tmp_path / "enc.pem"
    enc.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")))
    os.chmod(enc, 0o600)
    with pytest.raises(UsageError, match="encrypted private keys are not supported"):
        load_signer(enc)
    with pytest.raises(UsageError, match="signing key not found"):
        load_signer(tmp_path / "none.pem")


def test_keyid_is_sha256_of_the_raw_public_key():
    import hashlib

    k = Ed25519PrivateKey.generate()
    raw = k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert keyid(k.public_key()) == hashlib.sha256(raw).hexdigest()
    assert Signer(k, None).keyid == keyid(k.public_key())
