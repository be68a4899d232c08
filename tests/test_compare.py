"""`nodeqc compare` and re-tests on real report pairs from the simulated node: a repaired GPU (a fault,
then none), a swapped GPU (a serial that changed), a regression (exit 1); a re-test records the
previous report's digest in the new signed report and prints the comparison."""

import os
from pathlib import Path

import pytest

from conftest import cli
from nodeqc.archive.filing import file_sha256
from nodeqc.report.compare import FigureChange, compare
from nodeqc.report.envelope import decode_statement, read_envelope
from reports_for_tests import predicate

FAST = ["--quick", "--sample-hz", "8"]


def _predicate(path: Path) -> dict:
    return decode_statement(read_envelope(path))["predicate"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A node's life: qualified, GPU link fault, repaired (re-test), GPU swapped, fault again."""
    home = tmp_path_factory.mktemp("node")
    env = {"XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
           "NODEQC_ARCHIVE": str(home / "archive")}
    scenario = (Path(__file__).parent.parent / "nodeqc" / "backends" / "sim" / "scenarios" / "h100.toml").read_text()
    swapped = home / "h100-swapped.toml"
    swapped.write_text(scenario.replace('topology = "pcie"', 'topology = "pcie"\nserials = ["SPARE-0042"]'))
    out = {"env": env}
    for name, args in (("first", ["--simulate", "h100"]),
                       ("fault", ["--simulate", "h100", "--inject", "gpu0:pcie_width=8"]),
                       ("repaired", ["--simulate", "h100", "--retest"]),
                       ("swapped", ["--simulate", str(swapped)]),
                       ("regressed", ["--simulate", str(swapped), "--inject", "gpu0:pcie_width=4"])):
        p = cli("--headless", "--profile", "h100", *FAST, *args, env=env)
        assert p.returncode in (0, 1), p.stderr
        out[name] = (Path(p.stdout.strip().splitlines()[-1]), p)
    return out


def test_the_first_run_has_nothing_to_compare(runs):
    path, p = runs["first"]
    assert _predicate(path)["previous"] is None and "compare:" not in p.stderr


def test_a_retest_records_the_previous_digest_and_prints_the_comparison(runs):
    fault, _ = runs["fault"]
    repaired, p = runs["repaired"]
    assert p.returncode == 0
    previous = _predicate(repaired)["previous"]
    assert previous["sha256"] == file_sha256(fault) and previous["report"] == fault.name
    assert previous["verdict"] == "FAIL"
    assert f"re-test of node SIM-H100-0001: previous report {fault}" in p.stderr
    tail = p.stderr[p.stderr.index("compare:"):]
    assert "FIXED      health.pcie_link         gpu0   FAIL -> PASS: link Gen5 x8 -> Gen5 x16; " in tail
    assert "width 8 -> 16 (+8, +100.0%)" in tail
    assert "FIXED      stress.pcie_bandwidth    gpu0   FAIL -> PASS" in tail  # the copies ran at x8 too
    assert "no regression: 2 result(s) better (FAIL SIM -> PASS SIM)" in tail
    assert p.stdout.strip().splitlines()[-1] == str(repaired)  # still the last line of stdout
    # Automatically too, without --retest: the fault run re-tested the first one.
    assert _predicate(fault)["previous"]["sha256"] == file_sha256(runs["first"][0])
    assert "REGRESSED  health.pcie_link" in runs["fault"][1].stderr


def test_compare_a_repaired_gpu(runs):
    p = cli("compare", str(runs["fault"][0]), str(runs["repaired"][0]), env=runs["env"])
    assert p.returncode == 0, p.stderr
    assert "FIXED      health.pcie_link         gpu0   FAIL -> PASS: link Gen5 x8 -> Gen5 x16; " in p.stdout
    assert "width 8 -> 16 (+8, +100.0%)" in p.stdout
    assert "serial changed" not in p.stdout and p.stderr == ""


def test_compare_a_swapped_gpu(runs):
    p = cli("compare", str(runs["repaired"][0]), str(runs["swapped"][0]), env=runs["env"])
    assert p.returncode == 0, p.stdout
    assert "gpu0 serial changed: SIM-H100-0001-G0 -> SPARE-0042 (part swapped)" in p.stdout
    old, new = (decode_statement(read_envelope(runs[k][0])) for k in ("repaired", "swapped"))
    assert old["subject"][0]["digest"] != new["subject"][0]["digest"]  # the inventory digest shows it too


def test_compare_a_regression_exits_1(runs):
    p = cli("compare", str(runs["swapped"][0]), str(runs["regressed"][0]), env=runs["env"])
    assert p.returncode == 1, p.stdout
    assert "REGRESSED  health.pcie_link         gpu0   PASS -> FAIL: link Gen5 x16 -> Gen5 x4; " in p.stdout
    assert "width 16 -> 4 (-12, -75.0%)" in p.stdout
    assert "REGRESSED  stress.pcie_bandwidth    gpu0   PASS -> FAIL" in p.stdout
    assert p.stdout.strip().splitlines()[-1].startswith("REGRESSED: 2 result(s) worse")
    # The other way round it is a repair.
    assert cli("compare", str(runs["regressed"][0]), str(runs["swapped"][0]), env=runs["env"]).returncode == 0


def test_compare_refuses_an_untrusted_report_unless_told(runs, tmp_path):
    # This test's own (isolated) key does not trust the node's key.
    p = cli("compare", str(runs["fault"][0]), str(runs["repaired"][0]))
    assert p.returncode == 2 and "NOT VERIFIED" in p.stderr and p.stdout == ""
    p = cli("compare", "--unverified", str(runs["fault"][0]), str(runs["repaired"][0]))
    assert p.returncode == 0 and p.stderr.count("NOT VERIFIED") == 2 and "FIXED" in p.stdout


@pytest.mark.parametrize("args, message", [
    (["compare", "/nonexistent.report.json", "/nonexistent.report.json"], "no such report"),
    (["compare", "JUNK", "/nonexistent.report.json"], "JUNK: not a readable nodeqc report: not a JSON report"),
    (["compare", "JUNK", "JUNK"], "compare: JUNK and JUNK are the same report"),
    (["compare", "JUNK"], "the following arguments are required: new"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--retest"], "holds no verified report of node SIM-H100-0001"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--retest", "JUNK"], "--retest JUNK: NOT VERIFIED"),
])
def test_bad_compare_input_is_one_line_and_exit_2(tmp_path, args, message):
    junk = tmp_path / "junk.report.json"
    junk.write_text("{not json")
    args = [str(junk) if a == "JUNK" else a for a in args]
    message = message.replace("JUNK", str(junk))
    p = cli(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nodeqc: ") and message in lines[0], p.stderr


def test_verdict_changes_and_figures():
    old, new = predicate("N", "PASS"), predicate("N", "PASS")
    new["checks"][1]["verdict"] = "warn"  # pass -> warn is worse
    new["checks"][1]["values"]["memory"]["value"] = 503.0 * 1.02  # small move: not shown
    c = compare(old, new)
    assert c.regressed and [ch.kind for ch in c.changes] == ["REGRESSED"]
    new["checks"][1]["verdict"] = "pass"
    c = compare(old, new)
    assert not c.regressed and c.changes == [] and c.quiet == 1
    new["checks"][1]["values"]["memory"]["value"] = 400.0  # a big move of a key figure is shown
    (change,) = compare(old, new).changes
    assert change.kind == "CHANGED" and str(change.figures[0]) == "host memory 503 -> 400 GiB (-103, -20.5%)"
    assert FigureChange("x", 0, 3).pct is None and str(FigureChange("x", 0, 3)) == "x 0 -> 3 (+3)"
    assert str(FigureChange("link", "Gen5 x8", "Gen5 x16")) == "link Gen5 x8 -> Gen5 x16"
    # A GPU gone is a regression even when every result that remains passed.
    del new["gpus"][0]
    assert compare(old, new).regressed and compare(old, new).gpus_gone == ["gpu0"]
    # Skip judged nothing: skip -> pass is no repair, pass -> skip no regression; neither is compared.
    old2, new2 = predicate("N", "PASS"), predicate("N", "PASS")
    new2["checks"][0]["verdict"] = "skip"
    assert compare(old2, new2).changes == [] and not compare(old2, new2).regressed
    assert compare(new2, old2).changes == [] and not compare(new2, old2).regressed
    assert compare(old2, new2).not_compared == [("health.pcie_link gpu0", "skip in NEW")]
    # Skipped in both for the same reason (not applicable, no peer given): nothing to say; for a
    # different reason, or an error, it is still said.
    old2["checks"][0].update(verdict="skip", code="PAGE_RETIREMENT_NA")
    new2["checks"][0]["code"] = "PAGE_RETIREMENT_NA"
    assert compare(old2, new2).not_compared == [] and compare(old2, new2).changes == []
    new2["checks"][0]["code"] = "SKIPPED_EARLIER_FAILURE"
    assert compare(old2, new2).not_compared == [("health.pcie_link gpu0", "skip in NEW")]
    new2["checks"][0].update(verdict="error", code="PAGE_RETIREMENT_NA")
    assert compare(old2, new2).not_compared == [("health.pcie_link gpu0", "error in NEW")]


def test_a_partial_new_report_is_flagged(runs):
    old = _predicate(runs["first"][0])
    new = dict(old, partial={"only": ["host"], "skip": [], "checks": ["host.cpu", "host.memory"]},
               checks=[c for c in old["checks"] if c["name"].startswith("host.")])
    c = compare(old, new)
    assert not c.regressed and c.not_in_new == len(old["checks"]) - len(new["checks"])
    assert "NEW is partial: not a qualification" in "\n".join(c.lines())


def test_retest_of_a_named_report(runs, tmp_path):
    env = dict(runs["env"], NODEQC_ARCHIVE=str(tmp_path))  # an empty archive: the report comes from elsewhere
    first = runs["first"][0]
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host", "--retest", str(first), env=env)
    assert p.returncode == 0, p.stderr
    assert _predicate(Path(p.stdout.strip().splitlines()[-1]))["previous"]["sha256"] == file_sha256(first)
    assert "compare:" in p.stderr and "NEW is partial" in p.stderr
    assert os.listdir(tmp_path) == ["SIM-H100-0001"]


def test_retest_of_another_nodes_report_or_a_fabric_report_is_refused(runs, tmp_path):
    """Issue 25: the signed report claimed FIXED for another node's failures, with only a warning on
    stderr. Now one line, exit 2, nothing run, no report written."""
    env = dict(runs["env"], NODEQC_ARCHIVE=str(tmp_path / "archive"))
    (tmp_path / "archive").mkdir()
    a100 = cli("--headless", "--profile", "a100", "--simulate", "a100", "--only", "host", *FAST,
               "--out", str(tmp_path / "a100"), env=env)
    assert a100.returncode in (0, 1), a100.stderr
    other = Path(a100.stdout.strip().splitlines()[-1])  # another system serial: another node
    fabric = cli("fabric", "--simulate", "4", "--rounds", "2", "--seed", "1", "--out", str(tmp_path / "fabric"), env=env)
    assert fabric.returncode == 0, fabric.stderr
    fabric_report = Path(fabric.stdout.strip().splitlines()[-1])
    for report, why in ((other, "the report of node SIM-A100-0001, not of this node (SIM-H100-0001)"),
                        (fabric_report, "a fabric report, not a node's")):
        p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host", "--retest", str(report),
                "--repair", "reseated", "--out", str(tmp_path / "new"), env=env)
        assert p.returncode == 2, p.stderr
        (line,) = p.stderr.strip().splitlines()
        assert line == f"nodeqc: --retest {report}: {why}: a re-test compares a node with its own earlier report"
        assert p.stdout == "" and not list((tmp_path / "new").glob("**/*.report.json"))
    # Its own report is still re-tested.
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--only", "host", "--retest",
            str(runs["first"][0]), "--out", str(tmp_path / "new"), env=env)
    assert p.returncode == 0, p.stderr


def test_compare_in_the_wrong_order_says_so():
    """Issue 24: `compare NEW OLD` printed 'FIXED' for what had broken, without a word."""
    earlier = predicate("N", "PASS", finished_at="2026-11-01T10:00:00Z")
    later = predicate("N", "FAIL", finished_at="2026-11-02T10:00:00Z")
    wrong = compare(later, earlier).lines("a", "b")
    assert any(line.startswith("  warning: OLD finished after NEW") for line in wrong), wrong
    right = compare(earlier, later).lines("a", "b")
    assert not any("OLD finished after NEW" in line for line in right)


def test_an_aborted_new_report_is_no_clean_bill():
    """A review found 'no regression: 0 result(s) better (FAIL SIM -> ABORTED SIM)': an aborted run
    judged only what it completed, and the last line says so."""
    old, new = predicate("N", "FAIL"), predicate("N", "PASS", status="aborted")
    last = compare(old, new).lines("a", "b")[-1]
    assert last.startswith("no regression in what NEW completed: "), last
    assert compare(old, predicate("N", "PASS")).lines("a", "b")[-1].startswith("no regression: ")


def test_compare_refuses_two_nodes_or_a_fabric_report_in_one_line(tmp_path):
    """compare once exited 1 on two nodes' reports, claiming 'serial changed (part swapped)', and 0 on
    a fabric report against a node's ('OLD is serial None')."""
    from reports_for_tests import file_report, predicate

    root = tmp_path / "archive"
    a = file_report(root, predicate("SN-A", "PASS"))
    b = file_report(root, predicate("SN-B", "FAIL", finished_at="2026-11-02T10:00:00Z"))
    fabric_pred = predicate("fabric-simulated", "PASS")
    fabric_pred["kind"] = "fabric"
    fabric = file_report(root, fabric_pred)
    p = cli("compare", str(a), str(b))
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == ("nodeqc: compare: OLD is the report of node SN-A, NEW of node SN-B: compare "
                                "compares two reports of one node (--any-node compares them anyway)")
    for old, new, tag in ((fabric, a, "OLD"), (a, fabric, "NEW")):
        p = cli("compare", str(old), str(new))
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.strip() == (f"nodeqc: compare: {tag} is a fabric report, not a node's: compare compares "
                                    "two reports of one node")
    anyway = cli("compare", "--any-node", str(a), str(b))
    assert anyway.returncode == 1 and "warning: different nodes" in anyway.stdout
    # One report given twice said "no regression"; a directory was told that --unverified compares it anyway.
    p = cli("compare", str(a), str(a))
    assert p.returncode == 2 and p.stderr.strip() == (f"nodeqc: compare: {a} and {a} are the same report: give an "
                                                      "earlier one and a later one")
    p = cli("compare", "--unverified", str(tmp_path), str(a))
    assert p.returncode == 2 and "not a readable nodeqc report" in p.stderr and "--unverified" not in p.stderr
    assert "part swapped" not in anyway.stdout and "gpu0 serial SN-A-G0 -> SN-B-G0" in anyway.stdout
