"""A repair is of the part(s) it names (nodeqc.report.answer.repair_targets): a note that names GPU 3
must not escalate GPU 5's failure nor enter GPU 5's story; a note that names no part counts for
every failing part, and says so."""

from __future__ import annotations


import pytest

from conftest import cli
from nodeqc.core.codes import remediation
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.report.answer import (STILL_FAILING, Finding, Part, escalate, repair_lines, repair_outcome,
                                  repair_targets, repairs_of)

G3 = Part("gpu", "gpu3", "NVIDIA H100", 3, "0000:61:00.0", "S3")
G5 = Part("gpu", "gpu5", "NVIDIA H100", 5, "0000:9d:00.0", "S5")
FAILURES = [{"check": "health.pcie_link", "subject": "gpu3", "code": "PCIE_WIDTH", "part": "gpu:S3",
             "identity": G3.identity},
            {"check": "stress.hbm_bandwidth", "subject": "gpu5", "code": "HBM_SLOW", "part": "gpu:S5",
             "identity": G5.identity}]


@pytest.mark.parametrize("note,parts,named", [
    ("reseated GPU 3 riser", [], {"gpu3"}),
    ("reseated gpu3 riser", [], {"gpu3"}),
    ("swapped GPU #5", [], {"gpu5"}),
    ("replaced S5 with a spare", [], {"gpu5"}),
    ("reflowed 0000:61:00.0 slot", [], {"gpu3"}),
    ("reseated GPU 3 and GPU 5", [], {"gpu3", "gpu5"}),
    ("reseated GPU 30 riser", [], set()),  # a part that did not fail: of none of the failures
    ("reseated the risers", [], set()),
    ("reseated the risers", ["5"], {"gpu5"}),
    ("reseated the risers", ["gpu3", "S5"], {"gpu3", "gpu5"}),
    ("reseated GPU 3 riser", ["gpu5"], {"gpu5"}),  # --repair-part says which, over the note
])
def test_a_repair_names_its_parts(note, parts, named):
    assert repair_targets(note, parts, FAILURES)[0] == named


@pytest.mark.parametrize("note,names", [("reseated GPU 7 riser", True), ("reflowed 0000:c3:00.0", True),
                                         ("reseated the risers", False), ("cleaned nic 2 cable", True)])
def test_a_note_that_names_another_part_is_not_a_repair_of_every_failure(note, names):
    assert repair_targets(note, [], FAILURES) == (set(), names)


def _retest(note: str, parts=()) -> tuple[dict, list[Finding]]:
    results = [CheckResult("health.pcie_link", "gpu3", Verdict.PASS, "x16"),
               CheckResult("stress.hbm_bandwidth", "gpu5", Verdict.FAIL, "slow", code="HBM_SLOW")]
    findings = [Finding("fail", "stress.hbm_bandwidth", "gpu5", G5, "slow", "HBM_SLOW", remediation("HBM_SLOW"))]
    repair = repair_outcome({"report": "a.report.json", "sha256": "ab", "verdict": "FAIL", "failures": FAILURES},
                            note, results, findings, parts)
    escalate(findings, {}, repair)
    return repair, findings


def test_a_repair_of_gpu3_does_not_escalate_gpu5():
    repair, findings = _retest("reseated GPU 3 riser")
    assert [o["repaired"] for o in repair["outcomes"]] == [True, False]
    assert repair["parts"] == ["gpu3"] and repair["named"] is True
    assert repairs_of({"repair": repair}) == [("gpu:S3", "PCIE_WIDTH")]
    assert findings[0].repair == STILL_FAILING and findings[0].escalation == 0
    assert findings[0].remediation == remediation("HBM_SLOW")
    assert repair_lines(repair)[0] == "  repair: reseated GPU 3 riser (of gpu3)"


def test_a_repair_that_names_no_part_counts_for_every_one_and_says_so():
    repair, findings = _retest("reseated the risers")
    assert repair["named"] is False and all(o["repaired"] for o in repair["outcomes"])
    assert findings[0].escalation == 1
    assert "named no part, so it counts for every part still failing" in findings[0].remediation
    assert repair_lines(repair)[0] == ("  repair: reseated the risers (names no part: counted as a repair of "
                                       "every failing part)")


def test_older_reports_without_the_field_count_every_outcome():
    old = {"action": "x", "outcomes": [{"part": "gpu:S3", "code": "A"}, {"part": "gpu:S5", "code": "B"}]}
    assert repairs_of({"repair": old}) == [("gpu:S3", "A"), ("gpu:S5", "B")]


def test_a_repair_of_a_part_that_did_not_fail_is_of_none_of_the_failures():
    repair, findings = _retest("reseated GPU 7 riser")
    assert repair["named"] is True and repair["parts"] == [] and not any(o["repaired"] for o in repair["outcomes"])
    assert findings[0].escalation == 0
    assert repair_lines(repair)[0] == "  repair: reseated GPU 7 riser (of no part that failed in the re-tested report)"


FAST = ["--quick", "--sample-hz", "8"]


@pytest.mark.slow
def test_a_repair_of_gpu3_leaves_gpu5_out_end_to_end(tmp_path):
    env = {"NODEQC_ARCHIVE": str(tmp_path)}

    def run(*args):
        p = cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", *FAST, "--only", "stress.hbm_bandwidth",
                "--inject", "gpu5:hbm_bw=0.6", *args, env=env)
        assert p.returncode == 1, p.stderr
        return p

    run()
    p = run("--retest", "--repair", "reseated GPU 3 riser")
    assert "[STILL FAILING]" in p.stderr and "AGAIN after a repair" not in p.stderr
    assert "Failed again after a repair" not in p.stderr and "repair: reseated GPU 3 riser" in p.stderr
    story = cli("history", "--part", "SIM-HGXH100-0001-G5", env=env)
    assert story.returncode == 0 and "2 report(s)" in story.stdout and "repair:" not in story.stdout, story.stdout
    bad = cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--repair-part", "gpu5", env=env)
    assert bad.returncode == 2 and "--repair-part" in bad.stderr.strip().splitlines()[-1]
