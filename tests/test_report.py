"""Signed reports: in-toto Statement v1 in a DSSE envelope, Ed25519. Any change to the payload or
the signature fails verification; so does a key that is not trusted."""

import base64
import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from nodeqc.core.errors import UsageError
from nodeqc.report.keys import Signer, create_key, default_key_path, keyid, load_public, load_signer, public_path, trusted_keys
from nodeqc.report.envelope import (PAYLOAD_TYPE, STATEMENT_TYPE, VerificationError, inventory_digest, pae, sign, statement,
                           verify_envelope, verify_file, write_envelope)


def predicate(**kw):
    p = {"verdict": "PASS", "simulated": True, "node": {"hostname": "n1", "system_serial": "S1"},
         "gpus": [{"uuid": "GPU-a", "serial": "1", "bus_id": "0000:1b:00.0"}], "checks": [],
         "finished_at": "2026-11-28T04:00:00+00:00"}  # every report has its finish time (nodeqc.report.shape)
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


def test_a_node_report_whose_content_calls_itself_a_fabric_run_is_refused(signer):
    """A node under test signs with its own key; readers of fabric verdicts go by the content's kind.
    A node's statement holding a fabric run's nodes (every other node "pass") verified, and
    `verify --fabric-nodes` printed its verdicts (the 2026-11-28 hostile-node audit)."""
    forged = predicate(kind="fabric", status="complete", nodes=[{"name": "gpu07", "verdict": "pass"}])
    with pytest.raises(VerificationError, match="predicate type is https://nodeqc.dev/qualification/v1, but its "
                                                "content is a fabric run's"):
        verify_envelope(sign(statement(forged), signer), trusted(signer))
    fabric = {"_type": STATEMENT_TYPE, "subject": [], "predicateType": "https://nodeqc.dev/fabric/v1",
              "predicate": predicate()}
    with pytest.raises(VerificationError, match="its content is not a fabric run's"):
        verify_envelope(sign(fabric, signer), trusted(signer))


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


# ------------------------------------------------------------------ the bytes signed, exactly
# Expected bytes and digests are written out by hand or computed with hashlib/base64 here, not by
# the code under test (issue 18: mutation testing of nodeqc/report/envelope.py).

import hashlib  # noqa: E402

from nodeqc.report.envelope import (FABRIC_PREDICATE_TYPE, MAX_REPORT_BYTES, PREDICATE_TYPE, Verified,  # noqa: E402
                           canonical, check_evidence, decode_statement, evidence_files, parse_envelope,
                           read_envelope, read_report_bytes, verify_bytes)


def test_canonical_is_sorted_compact_utf8():
    assert canonical({"b": [1, 2.5, None], "a": "é✓", "c": {"z": True, "y": 1}}) == \
        '{"a":"é✓","b":[1,2.5,null],"c":{"y":1,"z":true}}'.encode()


def test_inventory_digest_is_sha256_of_the_identity_written_out():
    node = {"hostname": "n1", "system_vendor": "V", "system_model": "M", "system_serial": "S1", "board_serial": "B1",
            "bios": "ignored"}
    gpus = [{"uuid": "GPU-b", "serial": "2", "bus_id": "0000:2b:00.0", "name": "ignored"},
            {"uuid": "GPU-a", "serial": "1", "bus_id": "0000:1b:00.0"}]
    identity = ('{"gpus":[{"bus_id":"0000:1b:00.0","serial":"1","uuid":"GPU-a"},'
                '{"bus_id":"0000:2b:00.0","serial":"2","uuid":"GPU-b"}],'
                '"system":{"board_serial":"B1","system_model":"M","system_serial":"S1","system_vendor":"V"}}')
    assert inventory_digest(node, gpus) == hashlib.sha256(identity.encode()).hexdigest()
    assert inventory_digest(node, gpus[::-1]) == inventory_digest(node, gpus)  # GPUs in any order
    for key in ("system_vendor", "system_model", "system_serial", "board_serial"):
        assert inventory_digest({**node, key: "other"}, gpus) != inventory_digest(node, gpus), key
    for key in ("uuid", "serial"):
        assert inventory_digest(node, [{**gpus[0], key: "other"}, gpus[1]]) != inventory_digest(node, gpus), key


def test_statement_whole():
    p = predicate()
    assert statement(p) == {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "node:n1", "digest": {"sha256": inventory_digest(p["node"], p["gpus"])}}],
        "predicateType": "https://nodeqc.dev/qualification/v1",
        "predicate": p}


def test_sign_and_write_whole(signer, tmp_path):
    stmt = statement(predicate())
    env = sign(stmt, signer)
    payload = json.dumps(stmt, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert env == {"payloadType": "application/vnd.in-toto+json", "payload": base64.b64encode(payload).decode(),
                   "signatures": [{"keyid": signer.keyid, "sig": base64.b64encode(
                       signer.sign(b"DSSEv1 28 application/vnd.in-toto+json %d %s" % (len(payload), payload))).decode()}]}
    path = tmp_path / "r.report.json"
    write_envelope(path, env)
    assert path.read_text() == json.dumps(env, indent=2) + "\n"
    assert read_envelope(path) == env
    v = verify_bytes(path.read_bytes(), trusted(signer))
    assert (v.statement, v.keyid, v.key_source, v.sha256, v.missing, v.checked) == (
        stmt, signer.keyid, "test", hashlib.sha256(path.read_bytes()).hexdigest(), [], [])


# ------------------------------------------------------------------ reading a report file

def test_read_report_bytes_reads_a_regular_file_whole(tmp_path):
    path = tmp_path / "r.json"
    data = os.urandom(3 << 20)  # several reads' worth
    path.write_bytes(data)
    assert read_report_bytes(path) == data
    assert read_report_bytes(path, limit=len(data)) == data  # exactly at the limit is read
    with pytest.raises(VerificationError, match=rf"^file of {len(data)} bytes, more than any report \({len(data) - 1} bytes\)$"):
        read_report_bytes(path, limit=len(data) - 1)
    assert MAX_REPORT_BYTES == 64 * 2**20


def test_read_report_bytes_refuses_what_is_no_report_file(tmp_path):
    with pytest.raises(UsageError, match=r"^.*/none\.json: no such report$"):
        read_report_bytes(tmp_path / "none.json")
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match=r"/f/child: cannot read report: Not a directory$"):
        read_report_bytes(tmp_path / "f" / "child")
    with pytest.raises(VerificationError, match="^not a regular file \\(a directory\\)$"):
        read_report_bytes(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(VerificationError, match="^not a regular file \\(a FIFO\\)$"):
        read_report_bytes(fifo)  # returns at once: no writer is waited for


def test_a_file_that_grows_past_the_limit_while_read_is_refused():
    # /proc files are regular and say size 0, whatever they hold: the limit holds while reading.
    with pytest.raises(VerificationError, match=r"^file grew past 10 bytes while read$"):
        read_report_bytes(Path("/proc/self/status"), limit=10)
    # Read a page at a time (/proc/kallsyms, megabytes): the limit holds over the reads together.
    if Path("/proc/kallsyms").is_file():
        with pytest.raises(VerificationError, match=r"^file grew past 100000 bytes while read$"):
            read_report_bytes(Path("/proc/kallsyms"), limit=100000)


def test_an_error_while_reading_says_which_file(tmp_path, monkeypatch):
    import errno

    from nodeqc.report import envelope as report

    path = tmp_path / "r.json"
    path.write_bytes(b"{}")
    real_read = os.read

    def failing_read(fd, n):
        if os.fstat(fd).st_ino == path.stat().st_ino:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_read(fd, n)

    monkeypatch.setattr(report.os, "read", failing_read)
    with pytest.raises(UsageError, match=r"/r\.json: cannot read report: Input/output error$"):
        read_report_bytes(path)


@pytest.mark.parametrize("data, message", [
    (b"", r"^not a JSON report \(damaged\? Expecting value: line 1 column 1\)$"),
    (b'{"a": 1,\n', r"^not a JSON report \(damaged\? Expecting property name enclosed in double quotes: line 2 column 1\)$"),
    # A truncated report: json's message ends in "at"; it read "starting at at line 3".
    (b'{\n "a": 1,\n "b": "trunc', r"^not a JSON report \(damaged\? Unterminated string starting at: line 3 column 7\)$"),
    (b"\xff\xfe\xff", r"^not a JSON report \(damaged\? not UTF-8 text\)$"),
    (b"[" * 100000, r"^not a JSON report \(nested too deeply for a nodeqc report\)$"),
    (b"[]", "^not a nodeqc report envelope$"),
    (b'"text"', "^not a nodeqc report envelope$"),
])
def test_damaged_envelopes_say_what_is_wrong(data, message):
    with pytest.raises(VerificationError, match=message):
        parse_envelope(data)


def test_parse_envelope_returns_the_object():
    assert parse_envelope(b'{"payloadType": "x", "signatures": []}') == {"payloadType": "x", "signatures": []}


@pytest.mark.parametrize("payload, message", [
    (None, "^payload is missing$"),
    (42, "^payload is missing$"),
    ("not base64!", r"^payload is not valid base64 \(altered\?\)$"),
    ("QQ==!", r"^payload is not valid base64 \(altered\?\)$"),  # a character outside the alphabet is refused, not skipped
    ("QR==", r"^payload is not canonical base64 \(altered\?\)$"),  # "QQ==" with other padding bits
    (base64.b64encode(b"[1, 2").decode(), r"^payload is not JSON \(damaged\? .*: line 1 column \d+\)$"),
    (base64.b64encode(b"[]").decode(), "^payload is not a nodeqc qualification statement$"),
    (base64.b64encode(b'{"_type": "x", "predicateType": "https://nodeqc.dev/qualification/v1"}').decode(),
     "^payload is not a nodeqc qualification statement$"),
    (base64.b64encode(b'{"_type": "https://in-toto.io/Statement/v1", "predicateType": "x"}').decode(),
     "^payload is not a nodeqc qualification statement$"),
])
def test_decode_statement_refuses_what_is_not_ours(payload, message):
    with pytest.raises(VerificationError, match=message):
        decode_statement({"payload": payload})


def test_decode_statement_of_both_predicate_types():
    for kind in (PREDICATE_TYPE, FABRIC_PREDICATE_TYPE):
        stmt = {"_type": STATEMENT_TYPE, "predicateType": kind, "predicate": {"x": 1, "finished_at": "2026-11-28T04:00:00Z",
                                                                          **({"kind": "fabric"} if kind == FABRIC_PREDICATE_TYPE else {})}}
        assert decode_statement({"payload": base64.b64encode(json.dumps(stmt).encode()).decode()}) == stmt
    assert FABRIC_PREDICATE_TYPE == "https://nodeqc.dev/fabric/v1"


# ------------------------------------------------------------------ signatures

def test_envelope_refusals_say_why(signer):
    env = sign(statement(predicate()), signer)
    with pytest.raises(VerificationError, match=r"^payloadType is 'x', expected application/vnd\.in-toto\+json$"):
        verify_envelope({**env, "payloadType": "x"}, trusted(signer))
    with pytest.raises(VerificationError, match=r"^payloadType is None, expected"):
        verify_envelope({k: v for k, v in env.items() if k != "payloadType"}, trusted(signer))
    for sigs in (None, {"keyid": signer.keyid}, []):
        with pytest.raises(VerificationError, match="^the report is not signed$"):
            verify_envelope({**env, "signatures": sigs}, trusted(signer))
    with pytest.raises(VerificationError, match=rf"^no trusted public key: the report is signed by key "
                                                rf"{signer.keyid[:16]}…; pass its public key with --pubkey PEM$"):
        verify_envelope(env, {})
    with pytest.raises(VerificationError, match="^signature is missing$"):
        verify_envelope({**env, "signatures": ["not a dict"]}, trusted(signer))
    with pytest.raises(VerificationError, match="^signature is missing$"):
        verify_envelope({**env, "signatures": [{"keyid": signer.keyid}]}, trusted(signer))


def test_every_signature_is_tried_and_every_refusal_named(signer, tmp_path):
    other = create_key(tmp_path / "other.pem")
    env = sign(statement(predicate()), signer)
    by_other = sign(statement(predicate()), other)["signatures"][0]
    forged = {"keyid": signer.keyid, "sig": by_other["sig"]}
    # An untrusted signature first, then a bad one, then the good one: verified by the good one.
    v = verify_envelope({**env, "signatures": [by_other, forged, env["signatures"][0]]}, trusted(signer))
    assert (v.keyid, v.key_source, v.predicate) == (signer.keyid, "test", predicate())
    with pytest.raises(VerificationError) as e:
        verify_envelope({**env, "signatures": [by_other, forged, {"keyid": 7, "sig": by_other["sig"]}]}, trusted(signer))
    assert str(e.value) == (f"signed by key {other.keyid[:16]}…, which is not trusted; signature does not match the "
                            "content (altered); signed by key 7…, which is not trusted")


# ------------------------------------------------------------------ evidence beside the report

def test_evidence_files_named_by_a_report():
    assert evidence_files({"journal": {"file": "r.journal.jsonl", "sha256": "aa"},
                           "telemetry": {"series": {"file": "r.telemetry.csv.gz", "sha256": "bb"}}}) == [
        ("journal", "r.journal.jsonl", "aa"), ("telemetry", "r.telemetry.csv.gz", "bb")]
    assert evidence_files({"journal": {"file": "j"}, "telemetry": {"series": None}}) == [("journal", "j", "None")]
    assert evidence_files({"journal": "j", "telemetry": ["not", "a", "dict"]}) == []
    assert evidence_files({"journal": {"file": ""}, "telemetry": {"series": {"sha256": "bb"}}}) == []
    assert evidence_files({}) == []


def _verified(**evidence) -> Verified:
    return Verified({"predicate": evidence}, "k", "test")


def test_check_evidence_lists_what_matched_and_what_is_missing(tmp_path):
    (tmp_path / "j.jsonl").write_bytes(b"journal")
    v = _verified(journal={"file": "j.jsonl", "sha256": hashlib.sha256(b"journal").hexdigest()},
                  telemetry={"series": {"file": "t.csv.gz", "sha256": "00"}})
    check_evidence(v, tmp_path)
    assert (v.checked, v.missing) == (["journal j.jsonl"], ["telemetry t.csv.gz"])
    (tmp_path / "t.csv.gz").write_bytes(b"x")
    with pytest.raises(VerificationError, match=r"^telemetry t\.csv\.gz does not match the signed digest \(altered evidence\)$"):
        check_evidence(_verified(telemetry={"series": {"file": "t.csv.gz", "sha256": "00"}}), tmp_path)
    # A missing journal does not stop the telemetry's check.
    v = _verified(journal={"file": "none.jsonl", "sha256": "00"}, telemetry={"series": {"file": "t.csv.gz", "sha256": "00"}})
    with pytest.raises(VerificationError, match="^telemetry t.csv.gz does not match"):
        check_evidence(v, tmp_path)
    v = _verified(journal={"file": "none.jsonl", "sha256": "00"}, telemetry={"series": {"file": "none.csv.gz", "sha256": "00"}})
    check_evidence(v, tmp_path)
    assert (v.checked, v.missing) == ([], ["journal none.jsonl", "telemetry none.csv.gz"])


@pytest.mark.parametrize("name, message", [
    ("../j.jsonl", r"^journal file name '\.\./j\.jsonl' is not a plain file name$"),
    ("/etc/passwd", r"^journal file name '/etc/passwd' is not a plain file name$"),
    (".", r"^journal file name '\.' is not a plain file name$"),
    ("..", r"^journal file name '\.\.' is not a plain file name$"),
    ("sub", r"^journal sub is not a regular file$"),
    ("x" * 300, rf"^journal {'x' * 300} cannot be read: File name too long$"),
])
def test_check_evidence_refuses_names_that_are_no_plain_file(tmp_path, name, message):
    (tmp_path / "sub").mkdir()
    with pytest.raises(VerificationError, match=message):
        check_evidence(_verified(journal={"file": name, "sha256": "00"}), tmp_path)


def test_verify_file_checks_evidence_unless_told_not_to(signer, tmp_path):
    p = predicate(journal={"file": "r.journal.jsonl", "sha256": "00"})
    path = tmp_path / "r.report.json"
    write_envelope(path, sign(statement(p), signer))
    (tmp_path / "r.journal.jsonl").write_bytes(b"edited")
    with pytest.raises(VerificationError, match="journal r.journal.jsonl does not match"):
        verify_file(path, trusted(signer))
    v = verify_file(path, trusted(signer), evidence=False)
    assert (v.checked, v.missing, v.sha256) == ([], [], hashlib.sha256(path.read_bytes()).hexdigest())


def test_evidence_that_is_a_fifo_is_refused_without_waiting(tmp_path):
    os.mkfifo(tmp_path / "j.jsonl")
    with pytest.raises(VerificationError, match=r"^journal j\.jsonl is not a regular file$"):
        check_evidence(_verified(journal={"file": "j.jsonl", "sha256": "00"}), tmp_path)
