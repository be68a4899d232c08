"""--only / --skip: the report is marked partial, has only the selected checks, and never counts as
a qualification; a name that is no check is one line and exit 2."""

import re
from pathlib import Path

import pytest

from conftest import ROOT, cli
from nodeqc.core.errors import UsageError
from nodeqc.report.envelope import decode_statement, read_envelope
from nodeqc.spec.selection import CHECK_NAMES, Selection

FAST = ["--quick", "--sample-hz", "8"]


def _report(p):
    assert p.returncode in (0, 1), p.stderr
    path = Path(p.stdout.strip().splitlines()[-1])
    return path, decode_statement(read_envelope(path))["predicate"]


def test_the_catalogue_names_every_check_the_code_reports():
    run = ROOT / "nodeqc" / "run"
    sources = "".join(f.read_text() for f in [*(ROOT / "nodeqc" / "checks").rglob("*.py"), run / "runner.py",
                                              run / "platform_watch.py"])
    in_code = set(re.findall(r"\"((?:inventory|stress|health|host|nic|burnin|baseline|fleet|dcgm)\.[a-z0-9_]+)\"", sources))
    assert in_code == set(CHECK_NAMES)


def test_a_full_run_is_not_partial_and_reports_only_catalogued_checks():
    _, pred = _report(cli("--headless", "--profile", "h100", "--simulate", "h100", *FAST))
    assert pred["partial"] is None
    assert {c["name"] for c in pred["checks"]} <= set(CHECK_NAMES)


def test_selection_rules():
    only_link = Selection.parse(["health.pcie_link"], None)
    assert only_link.partial and only_link.needs_load
    assert [n for n in CHECK_NAMES if only_link.includes(n)] == ["stress.burn", "health.pcie_link"]
    no_stress = Selection.parse(None, ["stress"])
    assert not any(no_stress.includes(n) for n in CHECK_NAMES if n.startswith(("stress.", "health.")))
    assert no_stress.includes("inventory.gpu_count") and not no_stress.needs_load
    mixed = Selection.parse(["host,inventory"], ["host.cpu"])
    assert [n for n in CHECK_NAMES if mixed.includes(n) and not n.startswith("inventory.")] == [
        "host.memory", "host.fabric_manager", "host.gpudirect_rdma", "host.imex", "host.edac", "host.aer", "host.kernel_log",
        "host.cpu_stress", "host.memory_bandwidth", "host.nvme", "host.optics"]
    assert Selection.parse(None, None).partial is False and Selection.parse(None, None).to_dict() is None
    assert mixed.includes("nodeqc.internal")  # an internal error is always reported
    with pytest.raises(UsageError, match="leaves no check"):
        Selection.parse(["host"], ["host"])


def test_only_runs_the_selected_checks_and_the_report_is_partial(tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", *FAST, "--only", "health.pcie_link",
            "--inject", "gpu0:pcie_width=8", "--out", str(tmp_path))
    path, pred = _report(p)
    assert p.returncode == 1  # the selected check failed
    assert {c["name"] for c in pred["checks"]} == {"stress.burn", "health.pcie_link"}
    assert pred["partial"]["only"] == ["health.pcie_link"] and pred["partial"]["checks"] == ["stress.burn", "health.pcie_link"]
    assert "partial run (only health.pcie_link): this report is not a qualification" in p.stderr
    show = cli("show", str(path))
    assert "(PARTIAL: only some checks ran; not a qualification)" in show.stdout.splitlines()[0]


def test_skip_stress_runs_no_load_and_history_never_counts_it(isolated_dirs):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", *FAST, "--skip", "stress")
    path, pred = _report(p)
    assert p.returncode == 0
    families = {c["name"].split(".")[0] for c in pred["checks"]}
    assert families == {"inventory", "host", "nic", "dcgm"} and pred["telemetry"] is None
    assert pred["partial"]["skip"] == ["stress"]
    h = cli("history", "--simulated")  # a simulated node's runs: their own archive
    assert "PASS (partial) SIM" in h.stdout
    assert cli("history", "--simulated", "--verdict", "pass").stdout == ""  # a partial pass is no qualification
    assert str(path) in cli("history", "--simulated", "--verdict", "partial").stdout


@pytest.mark.parametrize("args, message", [
    (["--only", "health.pcie_lnik"], "--only health.pcie_lnik: no check or family of that name; did you mean health.pcie_link?"),
    (["--skip", "gpu"], "--skip gpu: no check or family of that name"),
    # Ran every check as a full qualification, exit 0 (2026-11-29 fuzzing).
    (["--only", ","], "--only ',': names no check"), (["--skip", " , "], "--skip ' , ': names no check"),
    # The burn-in asked for was dropped without a word, exit 0.
    (["--skip", "burnin", "--burn-in", "2m"], "--burn-in: the selection (--only/--skip) leaves out burnin.stability"),
    (["--only", "stress.burn", "--burn-in", "720h"], "leaves out burnin.stability, so no burn-in would run"),
    (["--only", "host", "--skip", "host.cpu,host.memory", "--skip", "host.fabric_manager,host.gpudirect_rdma,host.imex",
      "--skip", "host.edac,host.aer,host.kernel_log,host.cpu_stress,host.memory_bandwidth,host.nvme,host.optics"],
     "this selection leaves no check to run"),
])
def test_bad_selection_is_one_line_and_exit_2(args, message):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", *args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nodeqc: ") and message in lines[0], p.stderr


@pytest.mark.parametrize("only", ["stress.memtest", "stress.hbm_bandwidth", "stress.nccl"])
def test_a_gpu_check_selected_without_the_burn_still_runs(only):
    """`--only stress.memtest` once started no GPU work at all and reported PASS with nothing run."""
    sel = Selection.parse([only], None)
    assert sel.needs_gpu_phase and not sel.needs_load
    assert not Selection.parse(["host,inventory"], None).needs_gpu_phase


def test_only_the_memory_test_runs_it_and_finds_a_bad_cell(tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", *FAST, "--only", "stress.memtest",
            "--inject", "gpu0:badmem", "--out", str(tmp_path))
    _, pred = _report(p)
    assert p.returncode == 1
    assert {(c["name"], c["code"]) for c in pred["checks"]} == {("stress.memtest", "MEMTEST_ERRORS")}


def test_the_stress_plan_is_the_catalogues_stress_checks_in_its_order():
    """The plan is derived from the one list of checks (nodeqc.core.catalogue): every stress check
    but gpu_free (asked of NVML before any work) has its step, in the catalogue's order, and no step
    names a check the catalogue does not have."""
    from nodeqc.checks.stress.plan import PLAN, STEPS

    stress = [n for n in CHECK_NAMES if n.startswith("stress.") and n != "stress.gpu_free"]
    assert [s.name for s in PLAN] == stress
    assert sorted(s.name for s in STEPS) == sorted(stress)


def test_gpu_tests_only_the_gpus_named_and_the_report_says_which(tmp_path):
    """--gpu 1,3 (as `dcgmi diag -i` and `gpu_burn -i` test a subset): only gpu1 and gpu3 do the GPU
    work and are judged by the stress and health checks; the node's inventory still counts every GPU;
    the report is partial and names the GPUs it covers, so it is never a qualification."""
    p = cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--inject", "gpu0:pcie_width=8",
            "--gpu", "1,3", "--quick", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    _, pred = _report(p)
    assert pred["partial"]["gpus"] == ["gpu1", "gpu3"]
    gpu_work = {c["subject"] for c in pred["checks"] if c["name"].split(".")[0] in ("stress", "health")
                and c["subject"].startswith("gpu")}
    assert gpu_work == {"gpu1", "gpu3"}
    count = next(c for c in pred["checks"] if c["name"] == "inventory.gpu_count")
    assert count["values"]["gpus"]["value"] == 8
    assert "GPUs gpu1,gpu3 only" in p.stderr and "not a qualification" in p.stderr
    # Every check ran, on two GPUs: the headline says which was partial (it said "only some checks ran").
    assert "RESULT: PASS (PARTIAL: only some GPUs were tested; not a qualification)" in p.stderr
    shown = cli("show", p.stdout.strip()).stdout
    assert "GPUs gpu1,gpu3 only" in shown
    assert shown.splitlines()[0].startswith("nodeqc report: PASS (PARTIAL: only some GPUs were tested; not a qualification)")


def test_a_partial_runs_headline_says_what_it_left_out():
    from nodeqc.spec.selection import Selection, partial_words

    def words(only=None, skip=None, gpus=None):
        return partial_words(Selection.parse(only, skip, gpus).describe())

    assert words(only=["health"]) == words(skip=["stress"]) == "only some checks ran"
    assert words(gpus=["3"]) == "only some GPUs were tested"
    assert words(only=["stress.burn"], gpus=["0,2-3"]) == "only some checks ran, on some GPUs"


@pytest.mark.parametrize("value,message", [("9", "gpu9: no such GPU on this node (it has gpu0-7)"),
                                           ("1,x", "expected GPU numbers and ranges"),
                                           ("3-1", "expected GPU numbers and ranges"),
                                           ("\u0663", "expected GPU numbers and ranges")])  # Arabic-Indic 3: \\d took it
def test_a_bad_gpu_list_is_one_line_and_exit_2(value, message):
    p = cli("--headless", "--simulate", "hgx-h100", "--quick", "--gpu", value)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
