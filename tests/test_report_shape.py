"""A report's fields of the wrong kind (nodeqc.report.shape): one such report, even signed by a
trusted key, made `compare`, `history`, `fleet` and `export` end in an internal error, and broke the
listing of the whole archive. Now it is refused where it is decoded, naming the field, and the other
reports are listed as before. Real reports (old and new) still read."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from nodeqc.archive.filing import safe_name
from nodeqc.cli.main import main
from nodeqc.report.envelope import PREDICATE_TYPE, STATEMENT_TYPE, sign, write_envelope
from nodeqc.report.keys import load_signer
from nodeqc.report.shape import ShapeError, check_predicate

from reports_for_tests import file_report, predicate

ROOT = Path(__file__).resolve().parent


def _set(p: dict, path: str, value: object) -> dict:
    p = copy.deepcopy(p)
    *parents, last = path.split(".")
    target = p
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    if value is _GONE:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return p


_GONE = object()
# Each of these was an internal error of at least one command (a fuzzing helper's findings, 2026-11-28).
WRONG = [("gpus", None, "gpus: expected a list"), ("gpus", 5, "gpus: expected a list"),
         ("checks", "x", "checks: expected a list"), ("checks.0", None, "checks[0]: expected an object"),
         ("checks.0.values", 5, "checks[0].values: expected an object"),
         ("checks.0.key", [], "checks[0].key: expected text"),
         ("checks.0.verdict", "great", "checks[0].verdict: expected one of"),
         ("answer", {"findings": [{}]}, "answer.findings[0].verdict: expected text"),
         ("answer", {"findings": [{"verdict": "x", "check": "c", "subject": "gpu0", "finding": "f", "remediation": "r"}]},
          "answer.findings[0].verdict: expected one of fail, error, warn"),  # show: KeyError 'x'
         ("answer", {"findings": [{"verdict": "fail", "check": "c", "subject": "gpu0", "finding": "f", "remediation": "r",
                                   "part": {"kind": "gpu", "bus_id": 1e308}}]},
          "answer.findings[0].part.bus_id: expected text"),  # show: "sequence item 0: expected str instance"
         ("answer", {"findings": [{"verdict": "fail", "check": "c", "subject": "gpu0", "finding": "f", "remediation": "r",
                                   "escalation": -1}]},
          "answer.findings[0].escalation: expected a whole number, 0 or more"),  # show: KeyError -1
         ("finished_at", "x", "finished_at: expected a time"), ("finished_at", True, "finished_at: expected text"),
         ("valid_until", 5, "valid_until: expected text"), ("profile", "x", "profile: expected an object"),
         ("profile", None, "profile: expected an object"),
         # The 2026-11-29 audit and fuzzing: each was an internal error of history, --part, show or
         # compare, while `verify` called the report good.
         ("verdict", "BOGUS", "verdict: expected one of PASS, FAIL, ERROR"),
         ("status", 5, "status: expected one of complete, aborted"),
         ("checks.0.verdict", [], "checks[0].verdict: expected one of"),
         ("checks.0.thresholds", None, "checks[0].thresholds: expected a list"),
         ("checks.0.values", {"x": {"value": 10 ** 400}}, "checks[0].values.x.value: a whole number of 401 digits"),
         ("checks.0.values", {"x": {"value": float("nan")}}, "checks[0].values.x.value: expected a finite number"),
         ("gpus.0.subject", [], "gpus[0].subject: expected text"),
         ("profile.chain", None, "profile.chain: expected a list of text"),  # show: "can only join an iterable"
         ("profile.chain", ["a", 5], "profile.chain: expected a list of text"),
         ("profile.notices", 5, "profile.notices: expected a list of text"),
         ("profile.name", {}, "profile.name: expected text"),
         ("partial", {"only": 5}, "partial.only: expected a list of text"),
         ("partial", {"skip": [{}]}, "partial.skip: expected a list of text"),
         ("repair", {"action": "reseated", "outcomes": "x"}, "repair.outcomes: expected a list"),
         ("repair", {"action": "reseated", "outcomes": [None]}, "repair.outcomes[0]: expected an object"),
         ("repair", {"action": "reseated", "outcomes": [{"subject": "gpu0", "status": {}}]},
          "repair.outcomes[0].status: expected text"),
         ("repair", {"action": "reseated", "outcomes": [{}]}, "repair.outcomes[0].subject: missing"),
         ("simulation", {"scenario": "h100", "faults": [1]}, "simulation.faults: expected a list of text"),
         # The 2026-11-29 fuzzing: a replay's unrecorded NVML calls of another kind ended `show`.
         ("simulation", {"replay": "cap.json", "unrecorded": 5}, "simulation.unrecorded: expected a list of text"),
         ("simulation", {"replay": 5}, "simulation.replay: expected text"),
         ("simulation", {"replay": "cap.json", "captured_at": []}, "simulation.captured_at: expected text"),
         # A node run's planted faults (the 2026-11-29 review: ["x", 3] ended `show --unverified`).
         ("simulation", {"scenario": "h100", "planted": ["x", 3]}, "simulation.planted[0]: expected an object"),
         ("simulation", {"scenario": "h100", "planted": [{"fault": 5}]}, "simulation.planted[0].fault: expected text"),
         ("checks.1", {"name": "nic.inventory", "subject": "node", "verdict": "pass", "message": "1 NIC",
                       "evidence": {"nics": -1}}, "checks[1].evidence.nics: expected a list"),
         ("checks.1", {"name": "nic.inventory", "subject": "node", "verdict": "pass", "message": "1 NIC",
                       "evidence": {"nics": [{"subject": []}]}}, "checks[1].evidence.nics[0].subject: expected text")]


@pytest.mark.parametrize("path, value, said", WRONG, ids=[f"{p}={v!r}" for p, v, _ in WRONG])
def test_a_signed_report_with_a_field_of_the_wrong_kind_is_refused_naming_it(tmp_path, capsys, path, value, said):
    with pytest.raises(ShapeError, match=f"^{said}".replace("[", r"\[").replace("]", r"\]")):
        check_predicate(_set(predicate("BAD1"), path, value))
    good = file_report(tmp_path, predicate("GOOD1"))
    bad = _file_as_is(tmp_path, _set(predicate("BAD1"), path, value))
    assert main(["compare", "--unverified", str(bad), str(good)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"nodeqc: {bad}: not a readable nodeqc report: a field of the wrong kind: " + \
        err[-1].split("a field of the wrong kind: ", 1)[1] and said in err[-1], err
    # The archive's commands list the good node and say the bad report is not listed, one line.
    for argv in (["history", "--archive", str(tmp_path)], ["history", "--archive", str(tmp_path), "--expired"],
                 ["fleet", "--archive", str(tmp_path)],
                 ["export", "--archive", str(tmp_path), "--output", str(tmp_path / "rows.csv")],
                 ["history", "--archive", str(tmp_path), "--part", "GOOD1-G0"]):
        assert main(argv) in (0, 1), argv
        out, err = capsys.readouterr()
        assert "internal error" not in err and ("--part" in argv or said in err), (argv, err)
    assert "GOOD1" in (tmp_path / "rows.csv").read_text()


def _file_as_is(root: Path, pred: dict) -> Path:
    """Signed by the trusted key and filed as the runner files a report, whatever its fields are
    (envelope.statement would need its GPUs to be a list to digest them)."""
    stmt = {"_type": STATEMENT_TYPE, "subject": [{"name": "node:host-bad1", "digest": {"sha256": "0" * 64}}],
            "predicateType": PREDICATE_TYPE, "predicate": pred}
    directory = root / safe_name("BAD1")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "host-bad1-20261101T100000Z.report.json"
    write_envelope(path, sign(stmt, load_signer(None)))
    return path


@pytest.mark.parametrize("fixture", sorted((ROOT / "fixtures").glob("real-*/*.predicate.json")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_reports_old_and_new_are_of_the_kinds_nodeqc_writes(fixture):
    check_predicate(json.loads(fixture.read_text()))


def test_a_report_of_an_older_nodeqc_without_the_newer_fields_still_reads():
    old = {k: v for k, v in predicate("OLD1").items() if k in ("verdict", "node", "gpus", "checks", "finished_at")}
    check_predicate(old)


def test_a_signed_report_without_a_finish_time_does_not_break_the_archives_listing(tmp_path, capsys):
    """Every nodeqc has written the finish time, and the archive sorts and ages reports by it: one
    without it (which `verify` accepted) made `fleet` end in an internal error. It is refused, named."""
    file_report(tmp_path, predicate("GOOD1"))
    _file_as_is(tmp_path, _set(predicate("BAD1"), "finished_at", _GONE))
    for argv in (["history", "--archive", str(tmp_path)], ["history", "--archive", str(tmp_path), "--expired"],
                 ["fleet", "--archive", str(tmp_path)]):
        assert main(argv) in (0, 1), argv
        err = capsys.readouterr().err
        assert "internal error" not in err and "finished_at: expected text" in err, argv


@pytest.mark.parametrize("key, value", [("finished_at", "2026-11-29T03:11:59"), ("finished_at", "2026-11-29"),
                                        ("valid_until", "2026-12-29T03:11:59")])
def test_a_signed_report_whose_time_has_no_zone_does_not_stop_the_fleet(tmp_path, capsys, key, value):
    """nodeqc writes its times in UTC with the zone; a signed report with one without it passed the
    shape check, and `fleet` compared it with the others' and ended in an internal error for the
    whole archive (the 2026-11-29 audit). It is refused, named, and the rest are listed."""
    file_report(tmp_path, predicate("GOOD1"))
    _file_as_is(tmp_path, _set(predicate("BAD1"), key, value))
    for argv in (["history", "--archive", str(tmp_path)], ["history", "--archive", str(tmp_path), "--expired"],
                 ["fleet", "--archive", str(tmp_path)]):
        assert main(argv) in (0, 1), argv
        captured = capsys.readouterr()
        assert "internal error" not in captured.err and f"{key}: expected a time with its zone" in captured.err, argv
        assert "BAD1" not in captured.out, argv


def test_a_report_with_a_number_past_pythons_digit_limit_is_refused_in_one_line(tmp_path, capsys):
    """json raises a bare ValueError for a number of more than 4300 digits: a signed report with one
    ended `verify` and `show` in an internal error."""
    from nodeqc.report.envelope import PAYLOAD_TYPE, sign_payload

    payload = b'{"_type": "x", "n": 1' + b"0" * 5000 + b"}"
    path = tmp_path / "long.report.json"
    write_envelope(path, sign_payload(PAYLOAD_TYPE, payload, load_signer(None)))
    for argv, code in ((["verify", str(path)], 1), (["show", "--unverified", str(path)], 2)):
        assert main(argv) == code, argv
        err = capsys.readouterr().err
        assert "internal error" not in err and "a number longer than any nodeqc writes" in err, (argv, err)


@pytest.fixture(scope="module")
def fabric_statement(tmp_path_factory):
    """A simulated fabric run's signed statement, as nodeqc writes it."""
    from conftest import cli
    from nodeqc.report.envelope import decode_statement, read_envelope

    out = tmp_path_factory.mktemp("fabric")
    p = cli("fabric", "--simulate", "4", "--inject", "node1:slow=0.5", "--seed", "1", "--out", str(out))
    assert p.returncode == 1, p.stderr
    return decode_statement(read_envelope(next(out.glob("*.report.json"))))


FABRIC_WRONG = [("checks", "x", "checks: expected a list"), ("checks.0.subject", None, "checks[0].subject: expected text"),
                ("checks.0.code", [], "checks[0].code: expected text"),
                ("checks.0.values", {"x": {"value": 10 ** 400}}, "checks[0].values.x.value: a whole number of 401 digits"),
                ("gpus", 5, "gpus: expected a list"), ("node", None, "node: expected an object"),
                ("profile", None, "profile: expected an object"), ("nodes.0", {}, "nodes[0].name: missing"),
                ("nodes.0.identity", "x", "nodes[0].identity: expected an object"),
                ("nodes.0.verdict", "BOGUS", "nodes[0].verdict: expected one of"),
                ("summary.failed", 5, "summary.failed: expected a list of text"),
                ("partial", "x", "partial: expected true or false"), ("verdict", "GREAT", "verdict: expected one of"),
                # 2026-11-29: `show`'s catch-all had hidden these as "not in the form nodeqc writes".
                ("fabric.bad", None, "fabric.bad: expected an object"),
                ("fabric.bad.links", [["node0"]], "fabric.bad.links: expected a list of pairs of names"),
                ("fabric.bad.node_rails", "x", "fabric.bad.node_rails: expected a list of pairs of names"),
                ("fabric.bad.inconclusive", [{}], "fabric.bad.inconclusive: expected a list of text"),
                ("fabric.nodes", None, "fabric.nodes: expected a list of text"),
                ("fabric.rails", [None], "fabric.rails: expected a list of text"),
                ("fabric.coverage.pairs", "x", "fabric.coverage.pairs: expected an object"),
                ("fabric.coverage.pairs.untested", "x", "fabric.coverage.pairs.untested: expected a whole number"),
                ("fabric.coverage.ports_untested", 5, "fabric.coverage.ports_untested: expected a list of text"),
                ("fabric.topology", {"leaves": 5}, "fabric.topology.leaves: expected an object of lists of text"),
                ("fabric.topology", {"parents": {"a": {}}}, "fabric.topology.parents: expected an object of text"),
                ("simulation.planted", [None], "simulation.planted[0]: expected an object"),
                # The group tests' rows (a second fuzzing helper, 2026-11-29: show's internal error).
                ("groups", [None], "groups[0]: expected an object"), ("groups", "abc", "groups: expected a list"),
                ("groups", [{"nodes": 5}], "groups[0].nodes: expected a list of text")]


@pytest.mark.parametrize("path, value, said", FABRIC_WRONG, ids=[f"{p}={v!r}"[:40] for p, v, _ in FABRIC_WRONG])
def test_a_signed_fabric_report_with_a_field_of_the_wrong_kind_is_refused_naming_it(tmp_path, capsys, fabric_statement,
                                                                                   path, value, said):
    """A fabric run's fields were never checked: 36 of the wrong kind ended show, show --pdf, history or
    export in an internal error (a fuzzing helper, 2026-11-29). Now each is refused where it is read."""
    check_predicate(fabric_statement["predicate"], fabric=True)  # as written, it is of its kinds
    bad = _set(fabric_statement["predicate"], path, value)
    with pytest.raises(ShapeError, match=f"^{said}".replace("[", r"\[").replace("]", r"\]")):
        check_predicate(bad, fabric=True)
    report = tmp_path / "fabric-x" / "fabric-x-20261101T100000Z.report.json"
    report.parent.mkdir()
    write_envelope(report, sign({**fabric_statement, "predicate": bad}, load_signer(None)))
    for argv in (["show", "--unverified", str(report)], ["history", "--archive", str(tmp_path)],
                 ["export", "--archive", str(tmp_path), "--output", str(tmp_path / "rows.csv")]):
        assert main(argv) in (0, 1, 2), argv
        err = capsys.readouterr().err
        assert "internal error" not in err and said.split(":")[0] in err, (argv, err)


def test_a_fault_in_showing_a_well_formed_report_is_said_as_nodeqcs_own(tmp_path, capsys, monkeypatch):
    """`show` caught what rendering raised and blamed the report, "not in the form nodeqc writes",
    exit 1 (a failed node's code). The report's shape is checked as it is loaded; what rendering
    raises after that is nodeqc's fault, said as an internal error (exit 2), not the report's."""
    import nodeqc.report.render as render

    path = _file_as_is(tmp_path, _set(predicate("BAD1"), "gpus", [{}]))  # a GPU without a subject is shown
    assert main(["show", str(path)]) == 0
    assert "  None   None" in capsys.readouterr().out  # the catch-all hid "unsupported format string"

    def broken(*args, **kwargs):
        raise AttributeError("'NoneType' object has no attribute 'get'")
    monkeypatch.setattr(render, "render_report", broken)
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nodeqc: internal error: AttributeError") and "not in the form" not in err, err
