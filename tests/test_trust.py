"""What the report tools trust (issue 13, items 1-8): the index is a cache of verified facts, never
believed over the signed files; a damaged index is rebuilt, never an exit 2; compare and show say
NOT VERIFIED with a non-zero exit; an aborted run claims no repairs; simulated runs are no
qualification; the evidence files a report names are checked; odd files are refused at once; and
no control character from a report reaches the terminal."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import cli
from nodeqc.archive.index import Archive
from nodeqc.report.compare import compare
from nodeqc.report.envelope import verify_file
from reports_for_tests import file_report, predicate


def _edit_payload_same_size(path: Path, old: bytes, new: bytes) -> None:
    """Alter the signed payload in place as an attacker would: same size, mtime put back."""
    assert len(old) == len(new)
    st = path.stat()
    env = json.loads(path.read_text())
    payload = base64.b64decode(env["payload"])
    assert old in payload
    env["payload"] = base64.b64encode(payload.replace(old, new)).decode()
    text = json.dumps(env, indent=2) + "\n"
    assert len(text.encode()) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _history(root: Path, *args: str):
    p = cli("history", "--archive", str(root), *args)
    assert p.returncode == 0, p.stderr
    return p


@pytest.fixture
def node_a(tmp_path):
    root = tmp_path / "archive"
    old = file_report(root, predicate("NODE-A", "PASS", "2026-10-01T08:00:00Z"))
    new = file_report(root, predicate("NODE-A", "FAIL", "2026-11-02T08:00:00Z"))
    return root, old, new


# ---------------------------------------------------------------------- 1. the index is a cache of verified facts


def test_an_index_row_edited_to_pass_is_not_believed(node_a):
    root, old, failed = node_a
    assert "FAIL" in _history(root).stdout
    db = sqlite3.connect(Archive(root).index_path)
    db.execute("UPDATE reports SET verdict = 'PASS', failed = '[]'")
    db.commit()
    db.close()
    p = _history(root)
    row = next(line for line in p.stdout.splitlines() if str(failed) in line)
    assert " FAIL " in row and "PASS" not in row, p.stdout
    assert str(failed) not in _history(root, "--verdict", "pass").stdout
    # The re-test lookup asks the same index.
    assert Archive(root).latest("NODE-A").verdict == "FAIL"


def test_a_report_edited_in_place_is_re_verified_and_never_exported(node_a):
    root, old, failed = node_a
    assert _history(root).returncode == 0  # indexed as it was
    _edit_payload_same_size(failed, b'"verdict":"FAIL"', b'"verdict":"PASS"')
    _edit_payload_same_size(failed, b'"verdict":"fail"', b'"verdict":"pass"')
    p = _history(root)
    assert str(failed) not in p.stdout
    assert f"NOT VERIFIED: {failed}" in p.stderr and "altered" in p.stderr
    e = cli("export", "--archive", str(root))
    assert e.returncode == 0 and str(failed) not in e.stdout and "NOT VERIFIED" in e.stderr
    assert str(failed) not in _history(root, "--verdict", "pass").stdout
    # The re-test lookup falls back to the newest report that does verify.
    assert Archive(root).latest("NODE-A").path == old


def test_export_rereads_only_the_content_that_was_verified(node_a, monkeypatch):
    """A file changed between the listing and the reading of its checks is not exported."""
    root, old, failed = node_a
    from nodeqc.archive import verified as archive_mod

    a = Archive(root)
    entries = a.reports()
    _edit_payload_same_size(failed, b'"verdict":"fail"', b'"verdict":"pass"')
    entry = next(e for e in entries if e.path == failed)
    with pytest.raises(archive_mod.NotVerified):
        list(archive_mod.iter_checks(entry))


def test_the_prometheus_textfile_is_written_from_a_verified_report(tmp_path):
    from nodeqc.core.errors import UsageError
    from nodeqc.report.keys import load_signer
    from nodeqc.run import flow
    from nodeqc.spec.selection import Selection

    signer = load_signer(None)
    report = file_report(tmp_path / "a", predicate("NODE-P", "FAIL"), signer)
    _edit_payload_same_size(report, b'"verdict":"FAIL"', b'"verdict":"PASS"')
    prom = tmp_path / "n.prom"
    with pytest.raises(UsageError, match="NOT VERIFIED"):
        flow.after_run(report, Selection.parse(None, None), None, prom,
                           trusted={signer.keyid: (signer.public, "test")})
    assert not prom.exists()


def test_a_previous_report_changed_after_the_lookup_is_not_compared(node_a, capsys):
    from nodeqc.report.keys import load_signer
    from nodeqc.run import flow
    from nodeqc.spec.selection import Selection

    root, old, failed = node_a
    signer = load_signer(None)
    entry = Archive(root).latest("NODE-A")
    previous = (entry.path, {"report": entry.path.name, "sha256": entry.sha256})
    new = file_report(root, predicate("NODE-A", "PASS", "2026-11-03T08:00:00Z"), signer)
    _edit_payload_same_size(failed, b'"verdict":"FAIL"', b'"verdict":"PASS"')
    flow.after_run(new, Selection.parse(None, None), previous, None, trusted={signer.keyid: (signer.public, "test")})
    err = capsys.readouterr().err
    assert f"previous report {failed}: NOT VERIFIED: changed since it was verified; not compared" in err
    assert "compare:" not in err and "FIXED" not in err


# ---------------------------------------------------------------------- 2. a damaged index is rebuilt


def _many(root: Path, n: int = 60) -> list[Path]:
    return [file_report(root, predicate(f"NODE-{i:03d}", "PASS", f"2026-11-01T08:{i % 60:02d}:00Z"))
            for i in range(n)]


def test_a_damaged_index_page_is_detected_and_rebuilt(tmp_path):
    root = tmp_path / "archive"
    paths = _many(root)
    assert len(_history(root).stdout.splitlines()) == len(paths) + 1
    index = Archive(root).index_path
    size = index.stat().st_size
    assert size > 4 * 4096
    with open(index, "r+b") as f:  # one page in the middle, overwritten
        f.seek((size // 4096 // 2) * 4096)
        f.write(os.urandom(4096))
    p = cli("history", "--archive", str(root))
    assert p.returncode == 0, p.stderr
    assert len(p.stdout.splitlines()) == len(paths) + 1
    assert "index" in p.stderr and "rebuil" in p.stderr and "malformed" not in p.stdout
    e = cli("export", "--archive", str(root))
    assert e.returncode == 0 and len(e.stdout.splitlines()) == 2 * len(paths) + 1


def test_a_run_never_fails_because_of_the_index(tmp_path):
    root = tmp_path / "archive"
    root.mkdir()
    first = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host", "--archive", str(root))
    assert first.returncode == 0, first.stderr
    index = Archive(root).index_path
    index.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))  # a header, then nothing that makes sense
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host", "--archive", str(root))
    assert p.returncode == 0, p.stderr
    assert "re-test of node SIM-H100-0001" in p.stderr
    # An index that cannot be written at all (its directory is a file): warned, the run goes on.
    index.unlink()
    index.parent.rmdir() if not any(index.parent.iterdir()) else None
    cache = tmp_path / "cachefile"
    cache.write_text("not a directory")
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host", "--archive", str(root),
            env={"XDG_CACHE_HOME": str(cache)})
    assert p.returncode == 0, p.stderr
    assert "re-test of node SIM-H100-0001" in p.stderr and "warning" in p.stderr


# ---------------------------------------------------------------------- 3. compare and show of unverified input


def test_compare_of_an_unverified_report_exits_non_zero(node_a):
    root, old, failed = node_a
    _edit_payload_same_size(failed, b'"verdict":"FAIL"', b'"verdict":"PASS"')
    p = cli("compare", str(old), str(failed))
    assert p.returncode == 2, p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{failed}: NOT VERIFIED" in lines[0] and "--unverified" in lines[0]
    assert p.stdout == ""
    p = cli("compare", "--unverified", str(old), str(failed))
    assert p.returncode in (0, 1) and "NOT VERIFIED" in p.stderr and "compare:" in p.stdout


def test_a_signed_report_whose_verdict_is_better_than_its_checks_does_not_verify(tmp_path):
    """The 2026-11-29 fuzzing: a report signed by a trusted key saying PASS over its own failed check was
    `verified: PASS` (exit 0), `show` headed it PASS and the archive listed it a qualification. A node's
    key can sign what it likes of itself, but not a report that contradicts itself."""
    root = tmp_path / "archive"
    liar = predicate("NODE-L", "FAIL", "2026-11-02T08:00:00Z")
    liar["verdict"], liar["summary"]["failed"] = "PASS", []
    path = file_report(root, liar)
    p = cli("verify", str(path))
    assert p.returncode != 0 and "verdict: PASS, where its own checks hold 1 that failed or could not run (FAIL): " \
        "the report contradicts itself" in p.stderr, (p.stdout, p.stderr)
    assert "NOT VERIFIED" in cli("show", str(path)).stderr + cli("show", str(path)).stdout
    assert str(path) not in _history(root).stdout
    aborted = predicate("NODE-L", "PASS", "2026-11-03T08:00:00Z", status="aborted")
    aborted["verdict"] = "FAIL"  # an aborted run's FAIL over passing checks: worse than its checks is the runner's own word
    p = cli("verify", str(file_report(root, aborted)))
    assert p.returncode == 0 and p.stdout.startswith("verified: ABORTED"), p.stdout


def test_show_of_an_altered_report_exits_non_zero(node_a):
    root, old, failed = node_a
    assert cli("show", str(failed)).returncode == 0
    _edit_payload_same_size(failed, b'"verdict":"FAIL"', b'"verdict":"PASS"')
    p = cli("show", str(failed))
    assert p.returncode == 2 and "NOT VERIFIED" in p.stderr and "--unverified" in p.stderr  # as compare: exit 2
    assert len(p.stderr.strip().splitlines()) == 1 and "PASS" not in p.stdout
    p = cli("show", "--unverified", str(failed))
    assert p.returncode == 0 and "signature: NOT VERIFIED" in p.stdout


# ---------------------------------------------------------------------- 4. only checks completed in both are compared


def test_an_aborted_run_claims_no_repairs():
    old = predicate("N", "FAIL")  # health.pcie_link gpu0 failed
    old["checks"].append({"name": "stress.memtest", "subject": "gpu0", "verdict": "fail", "code": "MEMTEST_ERRORS",
                          "message": "errors", "key": None, "values": {}, "thresholds": [], "evidence": {}})
    new = predicate("N", "PASS", "2026-11-02T10:00:00Z", status="aborted")
    new["verdict"] = "FAIL"
    new["checks"].append({"name": "stress.memtest", "subject": "gpu0", "verdict": "skip", "code": None,
                          "message": "the run was aborted", "key": None, "values": {}, "thresholds": [],
                          "evidence": {}})
    c = compare(old, new)
    assert not [ch for ch in c.changes if ch.kind == "FIXED"], c.changes
    text = "\n".join(c.lines())
    assert "FIXED" not in text
    assert "not compared (skip in NEW): stress.memtest gpu0" in text
    assert "not compared (NEW aborted before it ended): health.pcie_link gpu0" in text  # saw part of the run
    assert "host.memory" not in text  # it completed in both, and did not change


def test_a_skipped_check_is_neither_a_repair_nor_a_regression():
    old, new = predicate("N", "FAIL"), predicate("N", "PASS")
    new["checks"][0]["verdict"] = "skip"
    c = compare(old, new)
    assert c.changes == [] and not c.regressed
    assert "not compared (skip in NEW): health.pcie_link gpu0" in "\n".join(c.lines())
    old, new = predicate("N", "PASS"), predicate("N", "PASS")
    new["checks"][0]["verdict"] = "error"
    assert "not compared (error in NEW): health.pcie_link gpu0" in "\n".join(compare(old, new).lines())


# ---------------------------------------------------------------------- 5. simulated runs are never a qualification


def test_history_verdict_pass_leaves_out_simulated_runs(tmp_path):
    real = file_report(tmp_path, predicate("NODE-R", "PASS", "2026-11-01T08:00:00Z"))
    sim = predicate("NODE-S", "PASS", "2026-11-02T08:00:00Z")
    sim["simulated"] = True
    sim_path = file_report(tmp_path, sim)
    p = _history(tmp_path, "--verdict", "pass")
    assert str(real) in p.stdout and str(sim_path) not in p.stdout
    assert str(sim_path) in _history(tmp_path).stdout  # listed, as PASS SIM, just not as a qualification
    assert not next(e for e in Archive(tmp_path).reports() if e.path == sim_path).qualified


# ---------------------------------------------------------------------- 6. the evidence files


def _with_evidence(root: Path) -> Path:
    pred = predicate("NODE-E", "PASS")
    directory = root / "NODE-E"
    directory.mkdir(parents=True)
    journal, telemetry = directory / "run.journal.jsonl", directory / "run.telemetry.csv.gz"
    journal.write_text('{"type":"run_started"}\n{"type":"run_finished"}\n')
    telemetry.write_bytes(b"\x1f\x8b fake gzip bytes")
    import hashlib

    pred["journal"] = {"file": journal.name, "sha256": hashlib.sha256(journal.read_bytes()).hexdigest()}
    pred["telemetry"] = {"series": {"file": telemetry.name, "sha256": hashlib.sha256(telemetry.read_bytes()).hexdigest()}}
    return file_report(root, pred, name="run.report.json")


def test_verify_checks_the_journal_and_telemetry_beside_the_report(tmp_path):
    report = _with_evidence(tmp_path)
    p = cli("verify", str(report))
    assert p.returncode == 0 and "evidence: journal ok, telemetry ok" in p.stdout, p.stdout + p.stderr
    journal = report.with_name("run.journal.jsonl")
    with open(journal, "a") as f:
        f.write('{"type":"check_finished"}\n')
    p = cli("verify", str(report))
    assert p.returncode == 1 and "journal run.journal.jsonl does not match the signed digest" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert str(report) not in _history(tmp_path).stdout  # the archive does not list it either


def test_verify_says_which_evidence_is_missing(tmp_path):
    report = _with_evidence(tmp_path)
    report.with_name("run.telemetry.csv.gz").unlink()
    p = cli("verify", str(report))
    assert p.returncode == 1 and "telemetry run.telemetry.csv.gz is missing" in p.stderr, p.stderr
    p = cli("verify", "--report-only", str(report))
    assert p.returncode == 0 and "evidence: not checked (--report-only)" in p.stdout, p.stdout
    assert verify_file(report, _trusted()).missing == ["telemetry run.telemetry.csv.gz"]


def test_verify_report_only_reads_no_evidence_file_even_one_beside_it(tmp_path):
    """--report-only verifies the report alone (issue 29: it read the journal beside it, so an
    altered journal failed a check that was asked not to look at it)."""
    report = _with_evidence(tmp_path)
    with open(report.with_name("run.journal.jsonl"), "a") as f:
        f.write('{"type":"check_finished"}\n')
    assert cli("verify", str(report)).returncode == 1
    p = cli("verify", "--report-only", str(report))
    assert p.returncode == 0 and "evidence: not checked (--report-only)" in p.stdout, p.stdout + p.stderr


def _trusted():
    from nodeqc.report.keys import trusted_keys

    return trusted_keys()


# ---------------------------------------------------------------------- 7. odd files are refused at once


@pytest.mark.parametrize("command", ["verify", "show"])
def test_a_fifo_or_a_device_is_refused_at_once(tmp_path, command):
    fifo = tmp_path / "x.report.json"
    os.mkfifo(fifo)
    journal_fifo = tmp_path / "x.journal.jsonl"
    os.mkfifo(journal_fifo)
    t0 = time.monotonic()
    for target in (fifo, Path("/dev/zero")) + ((journal_fifo,) if command == "show" else ()):
        p = cli(command, str(target), timeout=20)
        assert p.returncode in (1, 2) and "not a regular file" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
    assert time.monotonic() - t0 < 15


@pytest.mark.parametrize("command", ["verify", "show"])
def test_deep_nesting_and_binary_input_are_malformed_input(tmp_path, command):
    deep = tmp_path / "deep.report.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    inner = tmp_path / "inner.report.json"
    inner.write_text(json.dumps({"payloadType": "application/vnd.in-toto+json",
                                 "payload": base64.b64encode(b"{\"a\":" * 100_000 + b"1" + b"}" * 100_000).decode(),
                                 "signatures": [{"keyid": "x", "sig": "AAAA"}]}))
    binary = tmp_path / "bin.report.json"
    binary.write_bytes(b"\xff\xfe\x00\x01garbage")
    big = tmp_path / "big.report.json"
    with open(big, "wb") as f:
        f.truncate(200 * 2**20)  # sparse: takes no disk
    for target in (deep, inner, binary, big):
        p = cli(command, str(target), timeout=30)
        # verify: 1, it does not verify; show: 2, nothing to show (as compare refuses it)
        assert p.returncode == (1 if command == "verify" else 2), (target, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "internal error" not in lines[0], p.stderr


# ---------------------------------------------------------------------- 8. control characters are escaped


EVIL = "evil\x1b[2K\r\nsignature: verified (key 0123456789abcdef, you)\x1b]0;title\x07\u202e"


def _evil_report(root: Path) -> Path:
    pred = predicate("NODE-X", "FAIL", hostname=EVIL)
    pred["checks"][0]["message"] = "link\x1b[32m ok\x1b[0m\n  PASS  everything"
    pred["operator"] = "op\x9b31m"
    return file_report(root, pred, name="x.report.json")


def _no_control(text: str) -> bool:
    import unicodedata

    return not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch != "\n" for ch in text)


def test_show_escapes_control_characters(tmp_path):
    report = _evil_report(tmp_path)
    _edit_payload_same_size(report, b'"verdict":"FAIL"', b'"verdict":"PASS"')
    p = cli("show", "--unverified", str(report))
    assert _no_control(p.stdout + p.stderr), repr(p.stdout)
    trust = [line for line in p.stdout.splitlines() if line.startswith("signature:")]
    assert trust == [next(line for line in p.stdout.splitlines() if line.startswith("signature: NOT VERIFIED"))]
    assert "\\x1b[2K" in p.stdout and "\\n" in p.stdout


def test_every_report_tool_escapes_control_characters(tmp_path):
    report = _evil_report(tmp_path)
    other = file_report(tmp_path, predicate("NODE-X", "PASS", "2026-10-01T08:00:00Z", hostname=EVIL))
    for args in (["verify", str(report)], ["show", str(report)], ["history", "--archive", str(tmp_path)],
                 ["compare", str(other), str(report)], ["export", "--archive", str(tmp_path), "--format", "jsonl"]):
        p = cli(*args)
        assert p.returncode in (0, 1), (args, p.stderr)
        assert _no_control(p.stdout + p.stderr), (args, repr(p.stdout))
        assert sum(line.startswith("signature:") for line in p.stdout.splitlines()) == (args[0] == "show")


def test_a_key_bound_to_nodes_vouches_for_those_nodes_only(tmp_path):
    """The 2026-11-28 audit: any trusted key vouched for any node, and the archive files a report by
    the serial it claims, so a node under test that holds a trusted key (the Kubernetes Job mounts
    one) could sign a FAIL, or a PASS, for another node. A trusted key with a `.nodes` file beside it
    vouches only for the reports of the nodes listed there, and for no fabric run."""
    from nodeqc.core.errors import UsageError
    from nodeqc.report.envelope import VerificationError
    from nodeqc.report.keys import create_key, public_path, trusted_keys

    signer = create_key(tmp_path / "gpu17.pem")
    pub = public_path(signer.path)
    root = tmp_path / "archive"
    own = file_report(root, predicate("SN-17", "PASS"), signer)
    other = file_report(root, predicate("SN-99", "FAIL", "2026-11-02T10:00:00Z"), signer)
    fabric = predicate("fabric-x", "FAIL", "2026-11-03T10:00:00Z")
    fabric.update(kind="fabric", nodes=[{"name": "gpu03", "verdict": "fail", "identity": {"hostname": "gpu03"}}])
    fabric = file_report(root, fabric, signer)
    unbound = trusted_keys([str(pub)])
    assert unbound[signer.keyid].nodes is None and {e.node for e in Archive(root, unbound).reports()} == {
        "SN-17", "SN-99", "fabric-x"}
    pub.with_name("gpu17.pub.nodes").write_text("# gpu17, rack 4\nSN-17\n")
    bound = trusted_keys([str(pub)])
    assert bound[signer.keyid].nodes == {"SN-17"}
    assert verify_file(own, bound).predicate["node"]["system_serial"] == "SN-17"
    with pytest.raises(VerificationError, match=r"which is bound to node\(s\) SN-17: this report is of node SN-99$"):
        verify_file(other, bound)
    with pytest.raises(VerificationError, match="bound to node\\(s\\) SN-17: it vouches for no fabric run$"):
        verify_file(fabric, bound)
    # The index had them verified under the key unbound: bound since, they are tried again.
    assert [e.node for e in Archive(root, bound).reports()] == ["SN-17"]
    p = cli("verify", "--pubkey", str(pub), str(other))
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "this report is of node SN-99" in p.stderr
    assert cli("verify", "--pubkey", str(pub), str(own)).returncode == 0
    # A binding that names nothing, or a line that is no node key, is one line naming the file and line.
    binding = pub.with_name("gpu17.pub.nodes")
    binding.write_text("# nothing yet\n\n")
    with pytest.raises(UsageError, match="gpu17.pub.nodes: lists no node"):
        trusted_keys([str(pub)])
    binding.write_text("SN-17\nSN-\x1b[2J\n")
    with pytest.raises(UsageError, match=r"gpu17.pub.nodes:2: SN-\\x1b\[2J: not a node key"):
        trusted_keys([str(pub)])
    p = cli("verify", "--pubkey", str(pub), str(own))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "gpu17.pub.nodes:2" in p.stderr, p.stderr


def test_an_index_verified_by_other_rules_is_verified_again(tmp_path, monkeypatch):
    """The 2026-11-29 review: a report saying PASS over its failed check, indexed before `verify`
    refused such reports, stayed PASS in history and fleet: the index held the old rules' answer."""
    import nodeqc.archive.index as index

    root = tmp_path / "archive"
    liar = predicate("NODE-L", "FAIL", "2026-11-02T08:00:00Z")
    liar["verdict"], liar["summary"]["failed"] = "PASS", []
    file_report(root, liar)
    with monkeypatch.context() as before:
        before.setattr("nodeqc.report.envelope.check_verdict", lambda p: None)  # the rules before
        before.setattr(index, "verifier", lambda: "the rules before")
        assert [e.verdict for e in Archive(root).reports()] == ["PASS"]
    assert Archive(root).reports() == []
    assert "the report contradicts itself" in _history(root).stderr
