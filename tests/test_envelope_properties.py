"""Property tests over report envelopes (issue 13): `nodeqc verify` and `nodeqc show` answer every
generated file (random bytes, random JSON, envelopes with fields of every wrong type, payloads of
random statements, and reports properly signed by a trusted key whose predicate is random) with
exit 0, 1 or 2; an answer other than 0 is one line on stderr; never a traceback, an internal error
or a control character on the terminal."""

from __future__ import annotations

import base64
import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeqc.cli import main as cli
from nodeqc.report.envelope import PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE, sign
from nodeqc.report.keys import load_signer

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                    max_leaves=20)
FIELDS = ["verdict", "status", "node", "gpus", "checks", "profile", "partial", "simulated", "simulation",
          "summary", "journal", "telemetry", "finished_at", "operator"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@st.composite
def predicates(draw) -> dict:
    """A predicate with some of the fields nodeqc writes, each of any JSON shape."""
    pred = draw(st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=len(FIELDS)))
    if draw(st.booleans()):
        pred["checks"] = draw(st.lists(st.dictionaries(
            st.sampled_from(["name", "subject", "verdict", "code", "message", "key", "values", "thresholds"]),
            JSON | st.sampled_from(["pass", "fail", "warn", "skip", "error"]), max_size=8), max_size=3))
    return pred


def _statement(pred: dict) -> dict:
    return {"_type": STATEMENT_TYPE, "predicateType": PREDICATE_TYPE, "subject": [], "predicate": pred}


@st.composite
def report_files(draw) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "envelope", "statement", "signed"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "json":
        return json.dumps(draw(JSON)).encode()
    if kind == "envelope":
        envelope = draw(st.dictionaries(st.sampled_from(["payloadType", "payload", "signatures"]), JSON))
        if draw(st.booleans()):
            envelope["payload"] = _b64(json.dumps(draw(JSON)).encode())
        return json.dumps(envelope).encode()
    payload = json.dumps(_statement(draw(predicates())), allow_nan=False).encode()
    if kind == "statement":  # a statement of the right type with a signature by nobody trusted
        signatures = draw(st.lists(st.fixed_dictionaries({"keyid": TEXT | JSON, "sig": st.just(_b64(b"x" * 64)) | JSON}),
                                   max_size=2))
        return json.dumps({"payloadType": PAYLOAD_TYPE, "payload": _b64(payload), "signatures": signatures}).encode()
    return b""  # "signed": made in the test with the trusted key


def _no_control(text: str) -> bool:
    return not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch != "\n" for ch in text)


def _answer(capsys, argv: list[str]) -> None:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code)
    assert "Traceback" not in err and "internal error" not in err, err
    assert _no_control(out + err), (out, err)
    if code != 0:
        assert len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=report_files(), pred=predicates())
def test_verify_and_show_answer_every_envelope(tmp_path, capsys, data, pred):
    signer = load_signer(None)  # the user's own key: trusted
    if data == b"":
        data = json.dumps(sign(_statement(pred), signer)).encode()
    path = Path(tmp_path) / "x.report.json"
    path.write_bytes(data)
    for argv in (["verify", str(path)], ["verify", "--report-only", str(path)], ["show", str(path)],
                 ["show", "--unverified", str(path)]):
        _answer(capsys, argv)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.binary(max_size=60) | JSON.map(lambda j: json.dumps(j).encode()), max_size=6))
def test_show_answers_every_journal(tmp_path, capsys, lines):
    path = Path(tmp_path) / "x.journal.jsonl"
    path.write_bytes(b"\n".join(lines))
    _answer(capsys, ["show", str(path)])


@st.composite
def base64_spellings(draw) -> str:
    """A base64 text of random bytes, sometimes with one character of it changed (a different last
    group's spare bits among them), so canonical and non-canonical spellings both come up."""
    text = _b64(draw(st.binary(max_size=40)))
    if text and draw(st.booleans()):
        at = draw(st.integers(0, len(text) - 1))
        text = text[:at] + draw(st.sampled_from("AQgwBCDEopz+/=")) + text[at + 1:]
    return text


@given(base64_spellings())
@settings(max_examples=400)
def test_canonical_base64_is_decided_as_by_a_full_re_encoding(text):
    """report._canonical_b64 checks the length and the last group only (a whole payload is not
    re-encoded for every report read); it must answer exactly as the full re-encoding does."""
    import binascii

    from nodeqc.report.envelope import _canonical_b64

    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return  # refused before the canonical check
    assert _canonical_b64(raw, text) == (_b64(raw) == text)


def test_a_non_canonical_last_group_is_refused():
    from nodeqc.report.envelope import _canonical_b64

    assert _canonical_b64(b"ab", "YWI=") and not _canonical_b64(b"ab", "YWJ=")  # 'J' sets a spare bit
    assert _canonical_b64(b"a", "YQ==") and not _canonical_b64(b"a", "YR==")
    assert _canonical_b64(b"", "")
