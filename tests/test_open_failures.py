"""A failure stays open until a report that re-ran that check on that part judges it
(nodeqc.archive.standing): a partial or aborted run after a failing one must not hide the failure,
in the fleet or in the automatic re-test. And the fleet lists fabric runs apart from nodes, and its
columns stay aligned whatever the text."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from conftest import cli
from reports_for_tests import file_report, predicate

HBM = {"name": "stress.hbm_bandwidth", "subject": "gpu5", "verdict": "fail", "code": "HBM_BW_LOW", "message": "low",
       "key": None, "values": {}, "thresholds": [], "evidence": {}}


def _history(root: Path, serial: str = "SN-A") -> list[Path]:
    """A full run failing HBM bandwidth on gpu5, then an aborted run that judged only host.memory,
    then a partial (--only) run that passed what it ran."""
    failing = predicate(serial, "FAIL", finished_at="2026-11-01T10:00:00Z")
    failing["checks"] = [failing["checks"][1], HBM]
    failing["summary"]["failed"] = ["stress.hbm_bandwidth gpu5"]
    aborted = predicate(serial, "PASS", finished_at="2026-11-01T11:00:00Z", status="aborted")
    aborted["checks"] = [aborted["checks"][1]]
    partial = predicate(serial, "PASS", finished_at="2026-11-01T12:00:00Z", partial={"only": ["host"]})
    partial["checks"] = [partial["checks"][1]]
    return [file_report(root, p) for p in (failing, aborted, partial)]


def test_the_fleet_keeps_a_failure_open_across_an_aborted_and_a_partial_run(tmp_path):
    root = tmp_path / "archive"
    failing, _, _ = _history(root)
    out_csv, out_html = tmp_path / "f.csv", tmp_path / "f.html"
    p = cli("fleet", "--archive", str(root), "--csv", str(out_csv), "--html", str(out_html))
    assert p.returncode == 0, p.stderr
    row = p.stdout.splitlines()[1]
    open_since = f"not qualified; FAIL: stress.hbm_bandwidth gpu5 (open since {failing.name})"
    assert "PASS (partial)" in row and open_since in row, p.stdout  # whole: the report's name is not cut
    problems = next(csv.DictReader(io.StringIO(out_csv.read_text())))["problems"]
    assert problems == f"not qualified; FAIL: stress.hbm_bandwidth gpu5 (open since {failing.name})"
    assert "stress.hbm_bandwidth gpu5" in out_html.read_text()


def test_a_later_report_that_re_ran_the_check_closes_the_failure(tmp_path):
    root = tmp_path / "archive"
    _history(root)
    fixed = predicate("SN-A", "PASS", finished_at="2026-11-01T13:00:00Z", partial={"only": ["stress"]})
    fixed["checks"] = [{**HBM, "verdict": "pass", "code": None}]
    file_report(root, fixed)
    p = cli("fleet", "--archive", str(root))
    assert p.returncode == 0, p.stderr
    assert "hbm" not in p.stdout and "not qualified" in p.stdout


def test_an_aborted_run_does_not_judge_its_run_long_checks(tmp_path):
    """health.* of an aborted run saw only part of the run: a failure there stays open."""
    from nodeqc.archive.standing import judged

    pred = predicate("SN-A", "PASS", status="aborted")
    assert judged(pred) == ["host.memory node"]  # health.pcie_link left out
    assert "health.pcie_link gpu0" in judged(predicate("SN-A", "PASS"))


def test_the_automatic_retest_carries_the_open_failure_past_an_aborted_run(tmp_path):
    """The re-test picked the aborted run as previous and said it had no failures."""
    from types import SimpleNamespace

    from nodeqc.archive.index import Archive
    from nodeqc.run.flow import previous_report

    root = tmp_path / "archive"
    failing, aborted, partial = _history(root)
    info = SimpleNamespace(system_serial="SN-A", hostname="host-sn-a")
    hardware = SimpleNamespace(host=SimpleNamespace(info=lambda: info))
    path, previous = previous_report(hardware, Archive(root), None)
    assert path == partial  # the newest report that ran to its end (partial, not aborted)
    assert [(f["check"], f["subject"], f["report"]) for f in previous["failures"]] == \
        [("stress.hbm_bandwidth", "gpu5", failing.name)]
    # Only the aborted run after the failing one: the failing one is the re-tested report.
    root2 = tmp_path / "archive2"
    failing2, aborted2, partial2 = _history(root2)
    partial2.unlink()
    path, previous = previous_report(hardware, Archive(root2), None)
    assert path == failing2 and previous["status"] == "complete"
    assert [f["report"] for f in previous["failures"]] == [failing2.name]


def test_the_retest_lines_say_aborted_and_where_a_failure_is_open_since():
    from nodeqc.report.answer import repair_lines

    lines = repair_lines({"action": None, "previous": {"report": "b.json", "sha256": "0" * 64, "verdict": "PASS",
                                                       "status": "aborted"},
                          "outcomes": [{"check": "stress.hbm_bandwidth", "subject": "gpu5", "code": "HBM_BW_LOW",
                                        "status": "NOT RE-TESTED", "report": "a.json"}]})
    assert "(sha256 0000000000000000, ABORTED)" in lines[0]
    assert lines[1].endswith("[HBM_BW_LOW] (open since a.json)")


def _fabric(serial: str) -> dict:
    pred = predicate(serial, "FAIL", finished_at="2026-11-02T10:00:00Z")
    pred["kind"] = "fabric"
    pred["simulated"] = True
    pred["nodes"] = [{"name": "node1", "verdict": "pass", "identity": {"hostname": "node1"}},
                     {"name": "node3", "verdict": "fail", "identity": {"hostname": "node3"}}]
    pred["checks"] = [{"name": "fabric.node", "subject": "node3", "verdict": "fail", "code": "FABRIC_NODE_RAIL",
                       "message": "", "key": None, "values": {}, "thresholds": [], "evidence": {}}]
    pred["summary"]["failed"] = ["fabric.node node3"]
    return pred


def test_fabric_runs_are_listed_apart_not_as_nodes(tmp_path):
    root = tmp_path / "archive"
    file_report(root, predicate("SN-P", "PASS"))
    file_report(root, _fabric("fabric-simulated"))
    out_csv, out_html = tmp_path / "f.csv", tmp_path / "f.html"
    p = cli("fleet", "--archive", str(root), "--csv", str(out_csv), "--html", str(out_html))
    assert p.returncode == 0, p.stderr
    nodes, _, fabrics = p.stdout.partition("fabric runs")
    assert "fabric-simulated" not in nodes and "SN-P" in nodes
    assert "fabric-simulated" in fabrics and "FAIL SIM" in fabrics and "node3 (fail)" in fabrics
    assert "1 node(s), 0 with problems" in p.stderr and "1 fabric run(s) listed apart" in p.stderr
    assert [r["node"] for r in csv.DictReader(io.StringIO(out_csv.read_text()))] == ["SN-P"]
    page = out_html.read_text()
    assert "1 node(s)" in page and page.index('id="nodes"') < page.index("<h2>Fabric runs</h2>")
    assert "fabric-simulated" not in page[:page.index("<h2>Fabric runs</h2>")]


def _aligned(lines: list[str], headers: list[str]) -> None:
    """Each column starts where its header does, in every line."""
    starts = [lines[0].index(h) for h in headers]
    for line in lines[1:]:
        for s in starts[1:]:
            assert line[s - 2:s] == "  " and line[s] != " ", (line, s)


def test_fleet_columns_stay_aligned_with_long_problems(tmp_path):
    root = tmp_path / "archive"
    long = predicate("SN-LONG-SERIAL-NUMBER-0000000001", "FAIL", hostname="a-very-long-host-name.example.com")
    long["summary"]["failed"] = [f"stress.hbm_bandwidth gpu{k}" for k in range(8)]
    file_report(root, long)
    file_report(root, predicate("SN-P", "PASS", finished_at="2026-11-03T10:00:00Z"))
    p = cli("fleet", "--archive", str(root))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    _aligned(lines[:3], ["NODE", "HOST", "RESULT", "AGE", "VALID UNTIL", "PROBLEMS", "WORST OUTLIER"])
    assert "…" in lines[1]  # cut, not run into the next column


def test_history_columns_stay_aligned_with_long_failures(tmp_path):
    root = tmp_path / "archive"
    long = predicate("SN-LONG-SERIAL-NUMBER-0000000001", "FAIL", hostname="a-very-long-host-name.example.com")
    long["summary"]["failed"] = [f"stress.hbm_bandwidth gpu{k}" for k in range(8)]
    file_report(root, long)
    file_report(root, predicate("SN-P", "PASS", finished_at="2026-11-03T10:00:00Z"))
    p = cli("history", "--archive", str(root))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    headers = lines[0].split()
    assert len(lines) == 3
    starts = [lines[0].index(h) for h in headers]
    for line in lines[1:]:
        for s in starts[1:]:
            assert line[s - 2:s] == "  " and line[s] != " ", (line, s)


@pytest.mark.slow
def test_a_second_partial_run_still_retests_the_open_failure_end_to_end(tmp_path):
    """A failing run, then two --only inventory runs: the second once re-tested the first partial run
    and said it had no failures."""
    env = {"NODEQC_ARCHIVE": str(tmp_path)}
    common = ["--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--quick", "--sample-hz", "8"]
    failing = cli(*common, "--only", "stress.hbm_bandwidth", "--inject", "gpu5:hbm_bw=0.6", env=env)
    assert failing.returncode == 1, failing.stderr
    first = Path(failing.stdout.strip().splitlines()[-1])
    for _ in range(2):
        p = cli(*common, "--only", "inventory", env=env)
        assert p.returncode == 0, p.stderr
    assert "(the re-tested report had no failures)" not in p.stderr
    assert "NOT RE-TESTED GPU 5" in p.stderr and f"(open since {first.name})" in p.stderr, p.stderr
    fleet = cli("fleet", env=env)
    assert "stress.hbm_bandwidth gpu5 (open since" in fleet.stdout, fleet.stdout
