"""The archive: reports filed by node serial and never overwritten, an SQLite index per reader that is
only a cache of the signed files (rebuilt when lost, damaged or stale), `history` and `export` with
their filters, and files that cannot be trusted reported as NOT VERIFIED and left out, never crashing
a listing."""

import re
import base64
import csv
import io
import json
import os
import sqlite3
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conftest import cli
from nodeqc.archive.filing import file_sha256, node_reports
from nodeqc.archive.index import Archive
from nodeqc.report.keys import Signer, public_pem
from reports_for_tests import file_report, predicate

FAST = ["--quick", "--sample-hz", "8"]


@pytest.fixture
def archive(tmp_path):
    root = tmp_path / "archive"
    file_report(root, predicate("NODE-A", "PASS", "2026-10-01T08:00:00Z"))
    file_report(root, predicate("NODE-A", "FAIL", "2026-11-02T08:00:00Z"))
    file_report(root, predicate("NODE-B", "PASS", "2026-11-03T08:00:00Z", hostname="gpu-b"))
    file_report(root, predicate("NODE-B", "PASS", "2026-11-04T08:00:00Z", hostname="gpu-b",
                                partial={"only": ["health"], "skip": [], "checks": []}))
    file_report(root, predicate("NODE-C", "FAIL", "2026-11-05T08:00:00Z", status="aborted"))
    return root


def _listed(root, *args):
    p = cli("history", "--archive", str(root), *args)
    assert p.returncode == 0, p.stderr
    return [line.split()[0] + " " + line.split()[1] for line in p.stdout.splitlines()[1:]], p


def test_runs_are_filed_by_serial_never_overwritten_and_listed(isolated_dirs):
    """By default a simulated node's runs file in the per-user archive of simulated runs, apart from
    the real nodes' (issue 29: the README's demo filed into the user's real archive)."""
    paths = []
    for extra in ([], ["--inject", "gpu0:pcie_width=8"]):
        p = cli("--headless", "--profile", "h100", "--simulate", "h100", *FAST, *extra)
        assert p.returncode in (0, 1), p.stderr
        paths.append(Path(p.stdout.strip().splitlines()[-1]))
    root = isolated_dirs / "data" / "nodeqc" / "simulated"
    assert {p.parent for p in paths} == {root / "SIM-H100-0001"} and paths[0] != paths[1]
    assert all(p.is_file() for p in paths)
    assert node_reports("SIM-H100-0001", root) == [paths[1], paths[0]]  # the GUI's call, newest first
    assert not (isolated_dirs / "data" / "nodeqc" / "reports").exists()
    real = cli("history")
    assert real.returncode == 0 and real.stdout == "", real.stdout  # the real nodes' archive: none
    assert "no reports in" in real.stderr and str(isolated_dirs / "data" / "nodeqc" / "reports") in real.stderr
    h = cli("history", "--simulated")
    lines = h.stdout.splitlines()
    assert h.returncode == 0 and len(lines) == 3, h.stdout
    assert "FAIL SIM" in lines[1] and re.search(r"\.pcie_\w+ gpu0", lines[1]) and str(paths[1]) in lines[1]
    assert "PASS SIM" in lines[2] and str(paths[0]) in lines[2]
    assert Archive(root).index_path.is_file()
    assert not [f for f in root.rglob("*") if "sqlite" in f.name]  # writers write only report files


def test_shared_archive_by_environment_or_option(tmp_path):
    shared = tmp_path / "shared"
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host",
            env={"NODEQC_ARCHIVE": str(shared)})
    assert Path(p.stdout.strip().splitlines()[-1]).parent == shared / "SIM-H100-0001"
    other = tmp_path / "other"
    other.mkdir()
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host", "--archive", str(other),
            env={"NODEQC_ARCHIVE": str(shared)})
    assert Path(p.stdout.strip().splitlines()[-1]).parent == other / "SIM-H100-0001"
    assert len(Archive(shared).reports()) == 1 and len(Archive(other).reports()) == 1
    assert len(_listed(shared)[0]) == 1


def test_index_is_rebuilt_when_lost_or_damaged_and_follows_the_files(archive):
    a = Archive(archive)
    first = [(e.path, e.sha256, e.verdict) for e in a.reports()]
    assert len(first) == 5 and all(sha == file_sha256(path) for path, sha, _ in first)
    a.close()
    index = Archive(archive).index_path
    index.unlink()  # lost
    assert [(e.path, e.sha256, e.verdict) for e in Archive(archive).reports()] == first
    index.write_bytes(b"this is not an SQLite database" * 100)  # damaged
    assert [(e.path, e.sha256, e.verdict) for e in Archive(archive).reports()] == first
    db = sqlite3.connect(index)
    db.execute("PRAGMA user_version = 99")  # an index of another nodeqc version
    db.commit()
    db.close()
    assert [(e.path, e.sha256, e.verdict) for e in Archive(archive).reports()] == first
    # Stale: a report added, one removed, one replaced by another signed report.
    added = file_report(archive, predicate("NODE-D", "PASS", "2026-11-06T08:00:00Z"))
    first[0][0].unlink()
    replaced = first[1][0]
    file_report(archive, predicate("NODE-B", "FAIL", "2026-11-04T08:00:00Z", hostname="gpu-b"),
                name=replaced.name)
    os.utime(replaced, ns=(1, 1))
    now = {e.path: e for e in Archive(archive).reports()}
    assert added in now and first[0][0] not in now
    assert now[replaced].verdict == "FAIL" and now[replaced].sha256 == file_sha256(replaced)


def test_history_filters(archive):
    everything, _ = _listed(archive)
    assert everything == ["2026-11-05T08:00:00Z NODE-C", "2026-11-04T08:00:00Z NODE-B",
                          "2026-11-03T08:00:00Z NODE-B", "2026-11-02T08:00:00Z NODE-A",
                          "2026-10-01T08:00:00Z NODE-A"]
    assert _listed(archive, "--node", "NODE-A")[0] == everything[3:]
    assert _listed(archive, "--node", "gpu-b")[0] == everything[1:3]  # by host name too
    assert _listed(archive, "--verdict", "FAIL")[0] == [everything[0], everything[3]]
    # Only a complete, full run that passed is a qualification: not the partial one.
    assert _listed(archive, "--verdict", "pass")[0] == [everything[2], everything[4]]
    lines, p = _listed(archive, "--verdict", "partial")
    assert lines == [everything[1]] and "PASS (partial)" in p.stdout
    assert _listed(archive, "--since", "2026-11-03")[0] == everything[:3]
    assert _listed(archive, "--since", "2026-11-04T09:00+01:00")[0] == everything[:2]  # 08:00 UTC
    assert _listed(archive, "--since", "2026-11-01", "--node", "NODE-A", "--verdict", "fail")[0] == [everything[3]]
    assert _listed(archive, "--limit", "2")[0] == everything[:2]
    assert "ABORTED" in _listed(archive, "--node", "NODE-C")[1].stdout
    lines, p = _listed(archive, "--since", "1d")
    assert lines == [] and "no reports" in p.stderr


def test_since_by_age(tmp_path):
    from datetime import datetime, timedelta, timezone

    recent = (datetime.now(timezone.utc) - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    file_report(tmp_path, predicate("NODE-R", "PASS", recent))
    file_report(tmp_path, predicate("NODE-R", "PASS", "2020-01-01T00:00:00Z"))
    assert _listed(tmp_path, "--since", "1d")[0] == [f"{recent} NODE-R"]
    assert _listed(tmp_path, "--since", "1h")[0] == []


@pytest.mark.parametrize("args, message", [
    (["history", "--since", "last tuesday"], "--since last tuesday: expected a date like 2026-11-01"),
    (["history", "--verdict", "great"], "argument --verdict: invalid choice: 'great'"),
    (["history", "--archive", "/nonexistent/archive"], "--archive /nonexistent/archive: no such directory"),
    (["export", "--format", "xlsx"], "argument --format: invalid choice: 'xlsx'"),
    (["export", "--output", "/proc/nodeqc.csv"], "--output /proc/nodeqc.csv: cannot write"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--archive", "/nonexistent/a"], "no such directory"),
])
def test_bad_archive_input_is_one_line_and_exit_2(args, message):
    p = cli(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nodeqc: ") and message in lines[0], p.stderr


def _tamper(path: Path) -> None:
    env = json.loads(path.read_text())
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["verdict"] = "PASS"
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    path.write_text(json.dumps(env))


def test_untrustworthy_files_are_reported_and_skipped(archive, tmp_path):
    node = archive / "NODE-A"
    (node / "torn.report.json").write_text('{"payloadType": "application/vnd.in-toto+json", "payl')
    (node / "binary.report.json").write_bytes(b"\xff\xfe\x00garbage")
    unsigned = file_report(archive, predicate("NODE-A", "PASS", "2026-11-07T08:00:00Z"), name="unsigned.report.json")
    env = json.loads(unsigned.read_text())
    env["signatures"] = []
    unsigned.write_text(json.dumps(env))
    stranger = Signer(Ed25519PrivateKey.generate(), tmp_path / "stranger.pem")
    foreign = file_report(archive, predicate("NODE-A", "PASS", "2026-11-08T08:00:00Z"), stranger,
                          name="foreign.report.json")
    tampered = file_report(archive, predicate("NODE-A", "FAIL", "2026-11-09T08:00:00Z"), name="tampered.report.json")
    _tamper(tampered)
    (node / "empty.report.json").write_text("")
    (archive / "stray-file.report.json").write_text("{}")  # not in a node directory: not a report of the archive
    lines, p = _listed(archive)
    assert len(lines) == 5  # the good ones, nothing else
    warnings = [w for w in p.stderr.splitlines() if w.startswith("nodeqc: warning: NOT VERIFIED: ")]
    reasons = {Path(w.split()[4].rstrip(":")).name: w for w in warnings}
    assert set(reasons) == {"torn.report.json", "binary.report.json", "unsigned.report.json",
                            "foreign.report.json", "tampered.report.json", "empty.report.json"}, p.stderr
    assert "not a JSON report" in reasons["torn.report.json"]
    assert "the report is not signed" in reasons["unsigned.report.json"]
    assert "which is not trusted" in reasons["foreign.report.json"]
    assert "altered" in reasons["tampered.report.json"]
    assert "Traceback" not in p.stderr
    # The stranger's key becomes trusted: its report is listed from then on, without touching the index.
    trusted = Path(os.environ["XDG_CONFIG_HOME"]) / "nodeqc" / "trusted-keys"
    trusted.mkdir(parents=True)
    (trusted / "stranger.pem").write_bytes(public_pem(stranger.public))
    lines, p = _listed(archive)
    assert "2026-11-08T08:00:00Z NODE-A" in lines and "foreign.report.json" not in p.stderr
    assert str(foreign) in p.stdout


def test_export_csv_and_jsonl_one_row_per_report_and_check(archive, tmp_path):
    p = cli("export", "--archive", str(archive), "--format", "csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == 5 * 2  # five reports of two checks each
    fail = [r for r in rows if r["verdict"] == "fail"]
    assert {r["node"] for r in fail} == {"NODE-A", "NODE-C"}
    assert fail[0]["check"] == "health.pcie_link" and fail[0]["code"] == "PCIE_WIDTH" and fail[0]["value"] == "8"
    out = tmp_path / "out.jsonl"
    p = cli("export", "--archive", str(archive), "--format", "JSONL", "--node", "NODE-B", "-o", str(out))
    assert p.returncode == 0 and p.stdout == ""
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4 and {r["node"] for r in records} == {"NODE-B"}
    assert {r["partial"] for r in records} == {True, False}
    memory = next(r for r in records if r["check"] == "host.memory")
    assert memory["value"] == 503.0 and memory["unit"] == "GiB"


def test_export_names_the_gpu_of_each_gpu_row_by_serial_and_bus_id(archive, tmp_path):
    """DCGM's and NHC's users find a GPU by its serial or bus id: a GPU subject's rows carry both,
    as the report lists the GPU; other subjects' are empty."""
    p = cli("export", "--archive", str(archive), "--format", "csv", "--node", "NODE-A")
    assert p.returncode == 0, p.stderr
    header, *_ = p.stdout.splitlines()
    assert header.endswith(",message,gpu_serial,pci_bus_id")  # added last: earlier columns keep their place
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    gpu = [r for r in rows if r["subject"] == "gpu0"]
    assert len(gpu) == 2 and {(r["gpu_serial"], r["pci_bus_id"]) for r in gpu} == {("NODE-A-G0", "0000:01:00.0")}
    assert {(r["gpu_serial"], r["pci_bus_id"]) for r in rows if r["subject"] == "node"} == {("", "")}
    p = cli("export", "--archive", str(archive), "--format", "jsonl", "--node", "NODE-A")
    records = [json.loads(line) for line in p.stdout.splitlines()]
    assert {(r["subject"], r["gpu_serial"], r["pci_bus_id"]) for r in records} == {
        ("gpu0", "NODE-A-G0", "0000:01:00.0"), ("node", None, None)}


def test_many_files_are_verified_by_forked_workers_with_the_same_answers(archive, tmp_path, monkeypatch):
    """An index built from nothing over many files is verified by forked workers (archive._read_many):
    every row must be what verifying in order gives, the forged and the foreign included."""
    import concurrent.futures

    import nodeqc.archive.index as archive_module

    node = archive / "NODE-A"
    (node / "torn.report.json").write_text('{"payloadType": "application/vnd.in-toto+json", "payl')
    tampered = file_report(archive, predicate("NODE-A", "FAIL", "2026-11-09T08:00:00Z"), name="tampered.report.json")
    _tamper(tampered)
    stranger = Signer(Ed25519PrivateKey.generate(), tmp_path / "stranger.pem")
    file_report(archive, predicate("NODE-C", "PASS", "2026-11-08T08:00:00Z"), stranger, name="foreign.report.json")

    def rows(workers: int) -> tuple[list, list]:
        monkeypatch.setattr(archive_module, "_usable_cpus", lambda: workers)
        a = Archive(archive, warn=lambda _: None)
        a.index_path.unlink(missing_ok=True)
        a = Archive(archive, warn=lambda _: None)
        entries = [(e.path.name, e.verdict, e.node, e.sha256, e.finished_at) for e in a.reports()]
        return entries, sorted((s.path.name, s.reason) for s in a.skipped())

    pools = []
    real_pool = concurrent.futures.ProcessPoolExecutor
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor",
                        lambda *a, **k: pools.append(a) or real_pool(*a, **k))
    monkeypatch.setattr(archive_module, "_FILES_PER_WORKER", 1)
    in_order = rows(1)
    assert pools == []
    forked = rows(2)
    assert pools == [(2,)], "the forked workers verified the batch"
    assert forked == in_order
    assert len(in_order[0]) == 5 and {name for name, _ in in_order[1]} == {"torn.report.json", "tampered.report.json",
                                                                         "foreign.report.json"}


@pytest.mark.parametrize("text", ["99999999999999999999d", "999999999d", "5000000d", "\u0667d"])
def test_an_age_past_any_date_or_of_other_digits_is_one_line(text):
    """--since 99999999999999999999d was an internal error (OverflowError); "٧d" was read as 7 days."""
    from nodeqc.cli.archive import parse_since
    from nodeqc.core.errors import UsageError

    with pytest.raises(UsageError, match="expected a date like 2026-11-01"):
        parse_since(text)


def test_a_host_name_is_a_node_s_claim_and_never_speaks_for_another_node(archive, tmp_path):
    """The 2026-11-29 fuzzing: a node whose key is bound to its own serial gave another node's serial as
    its host name; `history --node NODE-B --verdict pass` listed its PASS as NODE-B's (NODE-B had
    failed), and the re-test's count of earlier repairs took its reports' repairs into NODE-B's own
    signed advice ("Failed after repeated repairs: RMA"). A node is found by its node key; by a host
    name only where no node has that key and one node alone gives it."""
    from nodeqc.archive.parts import prior_repairs
    from nodeqc.report.keys import trusted_keys_dir

    liar = Signer(Ed25519PrivateKey.generate(), tmp_path / "liar.pem")
    trusted_keys_dir().mkdir(parents=True)
    (trusted_keys_dir() / "liar.pem").write_bytes(public_pem(liar.public))
    (trusted_keys_dir() / "liar.nodes").write_text("SERIAL-L\n")
    claim = predicate("SERIAL-L", "PASS", "2026-11-06T08:00:00Z", hostname="NODE-A")
    claim["repair"] = {"action": "reseated", "outcomes": [{"part": "gpu:NODE-A-G0", "code": "PCIE_WIDTH",
                                                          "subject": "gpu0", "status": "STILL FAILING"}]}
    file_report(archive, claim, liar)
    assert [e.node for e in Archive(archive).reports()].count("SERIAL-L") == 1  # the liar's report verifies
    assert _listed(archive, "--node", "NODE-A")[0] == ["2026-11-02T08:00:00Z NODE-A", "2026-10-01T08:00:00Z NODE-A"]
    assert _listed(archive, "--node", "NODE-A", "--verdict", "pass")[0] == ["2026-10-01T08:00:00Z NODE-A"]
    assert prior_repairs(Archive(archive), "NODE-A") == {}
    # A host name one node alone gives still finds it; two nodes giving it is one line naming both.
    assert _listed(archive, "--node", "gpu-b")[0] == ["2026-11-04T08:00:00Z NODE-B", "2026-11-03T08:00:00Z NODE-B"]
    file_report(archive, predicate("SERIAL-L", "PASS", "2026-11-07T08:00:00Z", hostname="gpu-b"), liar)
    p = cli("history", "--archive", str(archive), "--node", "gpu-b")
    assert p.returncode == 2 and p.stderr.strip() == (
        "nodeqc: gpu-b: the host name of 2 nodes in the archive (NODE-B, SERIAL-L): name one by its system serial")
    assert _listed(archive, "--node", "SERIAL-L")[0] == ["2026-11-07T08:00:00Z SERIAL-L", "2026-11-06T08:00:00Z SERIAL-L"]


def test_text_that_is_not_unicode_is_one_file_not_verified_never_the_whole_listing(archive):
    """The 2026-11-29 fuzzing: a signed report whose host name held a lone surrogate (JSON "\\udcff"),
    and a report file whose name is not UTF-8, each ended history, fleet and export for the whole
    archive in an internal error (SQLite takes only Unicode text)."""
    from nodeqc.report.envelope import PAYLOAD_TYPE, canonical, sign_payload, statement, write_envelope
    from nodeqc.report.keys import load_signer

    (archive / "NODE-U").mkdir()
    payload = canonical(statement(predicate("NODE-U", "PASS", "2026-11-06T08:00:00Z", hostname="HOSTU")))
    write_envelope(archive / "NODE-U" / "u.report.json",  # as a node's own writer never could: nodeqc signs Unicode
                   sign_payload(PAYLOAD_TYPE, payload.replace(b"HOSTU", b"host\\udcff"), load_signer(None)))
    (archive / "NODE-A" / os.fsdecode(b"\xff.report.json")).write_text("junk")
    for command in (["history"], ["fleet"], ["export", "--format", "jsonl", "--output", str(archive.parent / "x.jsonl")]):
        p = cli(*command, "--archive", str(archive))
        assert p.returncode == 0 and "internal error" not in p.stderr, (command, p.stderr)
        warnings = sorted(w for w in p.stderr.splitlines() if "NOT VERIFIED" in w)
        assert len(warnings) == 2, (command, p.stderr)
        assert "NODE-A/\\udcff.report.json: its name is not UTF-8 text: rename it" in warnings[0]
        assert "u.report.json: " in warnings[1] and "node.hostname: text with a lone surrogate" in warnings[1], warnings
    assert _listed(archive)[0][0] == "2026-11-05T08:00:00Z NODE-C"


def test_a_node_key_that_is_also_others_host_name_lists_its_own_and_names_the_others(tmp_path):
    """The 2026-11-29 review: a machine run as a user (no serial read: keyed by its host name) and as
    root (keyed by its serial, same host name): `history --node gpu-017` dropped the root runs without
    a word. They are still not listed (a host name is a claim), and the warning names them."""
    root = tmp_path / "archive"
    as_user = predicate("X", "PASS", "2026-11-02T08:00:00Z", hostname="gpu-017")
    as_user["node"]["system_serial"] = ""
    file_report(root, as_user, name="u.report.json")
    file_report(root, predicate("SER-17", "FAIL", "2026-11-03T08:00:00Z", hostname="gpu-017"))
    lines, p = _listed(root, "--node", "gpu-017")
    assert lines == ["2026-11-02T08:00:00Z gpu-017"]
    assert ("nodeqc: warning: gpu-017 is also the host name in the reports of SER-17: not listed; "
            "name each by its system serial (--node SERIAL)") in p.stderr
    assert _listed(root, "--node", "SER-17")[0] == ["2026-11-03T08:00:00Z SER-17"]


def test_a_part_in_two_nodes_reports_is_said_so(tmp_path):
    """A node's key vouches for its own reports, and a report may name any GPU serial: a part's story
    that spans two nodes says so (a part that moved, or a report naming another node's part), each
    chapter with its node (2026-11-29 fuzzing)."""
    root = tmp_path / "archive"
    file_report(root, predicate("NODE-A", "PASS", "2026-11-01T08:00:00Z"))
    other = predicate("NODE-B", "FAIL", "2026-11-02T08:00:00Z")
    other["gpus"][0]["serial"] = "NODE-A-G0"
    file_report(root, other)
    p = cli("history", "--archive", str(root), "--part", "NODE-A-G0")
    assert p.returncode == 0 and "2 report(s)" in p.stdout, p.stdout
    assert [line.split()[1] for line in p.stdout.splitlines()[1:]] == ["NODE-A", "NODE-B"]
    assert "the part is in the reports of 2 nodes (NODE-A, NODE-B)" in p.stderr
    alone = cli("history", "--archive", str(root), "--part", "NODE-B-G0")
    assert "nodes (" not in alone.stderr
