"""The answer a person needs, computed once (nodeqc.report.answer) and rendered alike by the headless
summary, `nodeqc show` and the report: which part failed (GPU index, bus id, serial; NIC name and
PCI address), the finding with its numbers, what to do; the checks that did not run, counted once
per reason; and the repair loop (FIXED / STILL FAILING, escalation of a failure that comes back)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from conftest import cli
from nodeqc.backends import simulated_hardware
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.cli.run import ProgressPrinter
from nodeqc.core.codes import escalation, remediation
from nodeqc.report.answer import (FIXED, NEW, NOT_RETESTED, STILL_FAILING, Finding, Part, answer, answer_of,
                             answer_lines, escalate, finding_lines, repair_outcome, split_findings)
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.text import subjects_text
from nodeqc.report.envelope import decode_statement, read_envelope, verify_file
from nodeqc.report.keys import create_key, trusted_keys
from nodeqc.report.render import render_report
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.profile import load_profile
from nodeqc.spec.selection import Selection

FAULTS = ["gpu3:pcie_width=8", "gpu5:hbm_bw=0.6", "nic2:down"]


def _run(tmp: Path, faults=(), selection: Selection | None = None, scenario="hgx-h100"):
    hw = simulated_hardware(scenario, [parse_fault(f) for f in faults], time_scale=40)
    stream, events = io.StringIO(), []
    printer = ProgressPrinter(stream)

    def sink(event):
        events.append(event)
        printer(event)

    signer = create_key(tmp / "k.pem")
    options = RunOptions(load_profile(scenario), signer, out_dir=tmp / "out", quick=True,
                         selection=selection or Selection())
    outcome = Runner(options, hw, sink).run()
    predicate = decode_statement(read_envelope(outcome.report_path))["predicate"]
    return outcome, predicate, stream.getvalue(), events


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """One run of an 8-GPU node with faults on two GPUs and a NIC, and no NIC peer."""
    return _run(tmp_path_factory.mktemp("faulty"), FAULTS)


def test_the_headless_summary_names_each_part_its_finding_and_what_to_do(faulty):
    outcome, predicate, text, _ = faulty
    summary = text[text.index("RESULT: "):]
    # hgx-h100 names its compute NICs, so the one that is down fails the node (issue 12).
    first = summary.splitlines()[0]
    assert re.match(r"RESULT: FAIL: \d+ passed, 4 failed; \d+ not run: ", first), first
    assert "no NIC peer given (pass --nic-peer)" in first and "page retirement" not in first
    # Page retirement does not apply to H100s (they remap rows): said once, under the findings, and
    # once in the progress for all eight GPUs; never counted as a check not run.
    assert [line for line in summary.splitlines() if "page retirement" in line] == [
        "  not applicable to these GPUs: page retirement (Ampere and newer GPUs remap rows instead)"]
    assert re.search(r"N/A   health\.retired_pages +gpu0-7: not applicable: Ampere and newer GPUs remap rows instead "
                     r"of retiring pages\n", text)
    gpu3 = "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)"
    gpu5 = "GPU 5 (0000:c3:00.0, serial SIM-HGXH100-0001-G5)"
    nic2 = "NIC ibp64s0 (0000:40:00.0)"
    lines = summary.splitlines()
    # Failing GPUs by index, then the NIC; each with its findings, then what to do.
    assert [line.strip() for line in lines if line.strip().startswith(("FAIL ", "WARN "))] == [
        f"FAIL  {gpu3}", f"FAIL  {gpu5}", f"FAIL  {nic2}"]
    at = lines.index(f"  FAIL  {gpu3}")
    assert lines[at + 1].strip() == "stress.pcie_bandwidth: link at x8 during the copies, expected x16 [PCIE_WIDTH]"
    assert lines[at + 2].strip() == "health.pcie_link: link Gen5 x8 under load, expected x16 [PCIE_WIDTH]"
    assert lines[at + 3].strip() == f"what to do: {remediation('PCIE_WIDTH')}"  # once for the part
    # The diagnosis leads when telemetry sampled the step (issue 12), else the figure against its floor.
    hbm = next(line.strip() for line in lines if line.strip().startswith("stress.hbm_bandwidth: "))
    assert hbm.endswith("[HBM_SLOW]") and ("slow at full memory clock" in hbm or "is below the limit" in hbm), hbm
    assert f"what to do: {remediation('NIC_LINK_DOWN')}" in summary
    assert summary.splitlines()[-1] == f"report: {outcome.report_path}"
    assert "Every check passed" not in text


def test_show_renders_the_same_answer_from_the_signed_report(faulty):
    _, predicate, text, events = faulty
    shown = render_report(predicate, "signature: verified")
    the_answer = events[-1].answer
    for line in finding_lines(the_answer.findings):
        assert line in text and line in shown  # the same lines on the terminal and in `show`
    assert re.match(r"nodeqc report: FAIL: \d+ passed, 4 failed; \d+ not run", shown)
    stored = predicate["answer"]["findings"]
    assert [(f["subject"], f["check"], f["part"]["identity"]) for f in stored][:2] == [
        ("gpu3", "stress.pcie_bandwidth", "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)"),
        ("gpu3", "health.pcie_link", "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)")]
    assert [f.to_dict() for f in answer_of(predicate).findings] == stored
    # No 'ticket None'; a simulated run's seconds are called so, beside the wall clock's.
    assert "ticket" not in shown and re.search(r"run .* [\d.]+ s simulated \(\d+ s wall clock\)", shown)
    # Passing subjects of a check share one line; the NIC peer's absence is said once per check.
    no_peer = {c["name"] for c in predicate["checks"] if c.get("code") == "NIC_NO_PEER"}  # nic.tcp (and rdma)
    assert no_peer and sum("no NIC peer given" in line for line in shown.splitlines()) == 1 + len(no_peer)


def test_a_figure_below_the_node_median_is_one_finding_with_its_numbers(faulty):
    _, predicate, _, _ = faulty
    pcie = next(c for c in predicate["checks"] if c["name"] == "stress.pcie_bandwidth" and c["subject"] == "gpu3")
    findings = split_findings(pcie["message"])
    assert any(re.fullmatch(r"host-to-device \d+(\.\d)? GB/s is \d+(\.\d)? % below the node median \d+(\.\d)? GB/s "
                            r"\(limit 20 %\)", f) for f in findings), findings
    assert not any("above the limit" in f for f in findings)


def test_skipped_nic_checks_are_warned_once_and_summarised_once(faulty):
    _, predicate, text, _ = faulty
    no_peer = {c["name"] for c in predicate["checks"] if c.get("code") == "NIC_NO_PEER"}
    assert text.count("nodeqc: warning: nic.tcp skipped") == 1
    assert re.search(r"SKIP  nic\.tcp +nic\d+-\d+: no NIC peer given \(pass --nic-peer\)\n", text)
    assert text.count("pass --nic-peer HOST (a host running") == len(no_peer)  # one notice a check, nothing more


def test_unselected_checks_say_nothing(tmp_path):
    outcome, predicate, text, _ = _run(tmp_path, selection=Selection.parse(["host"], None), scenario="h100")
    assert "nic" not in text.lower().replace("nodeqc", "")
    assert {c["name"].split(".")[0] for c in predicate["checks"]} == {"host"}
    assert "RESULT: PASS (PARTIAL: only some checks ran; not a qualification): " in text


def test_a_pass_with_checks_not_run_never_says_every_check_passed():
    results = [CheckResult("host.cpu", "node", Verdict.PASS, "ok"),
               CheckResult("nic.tcp", "nic0", Verdict.SKIP, "TCP not measured: no peer ...", code="NIC_NO_PEER"),
               CheckResult("nic.tcp", "nic1", Verdict.SKIP, "TCP not measured: no peer ...", code="NIC_NO_PEER"),
               CheckResult("health.retired_pages", "gpu0", Verdict.SKIP, "page retirement not supported")]
    a = answer(results, [], "PASS", "complete")
    assert a.headline == "PASS: 1 passed; 3 not run: 2 no NIC peer given (pass --nic-peer), 1 page retirement not supported"
    one_reason = answer(results[:3], [], "PASS", "complete")
    assert one_reason.headline == "PASS: 1 passed; 2 not run: no NIC peer given (pass --nic-peer)"


def test_a_check_of_another_gpu_generation_is_said_once_and_never_counted_as_not_run():
    na = [CheckResult("health.retired_pages", f"gpu{i}", Verdict.SKIP, "not applicable: ...", code="PAGE_RETIREMENT_NA")
          for i in range(8)]
    a = answer([CheckResult("host.cpu", "node", Verdict.PASS, "ok")] + na, [], "PASS", "complete")
    assert a.headline == "PASS: 1 passed" and a.not_run == []
    assert a.not_applicable == ["page retirement (Ampere and newer GPUs remap rows instead)"]
    assert answer_lines(a) == ["PASS: 1 passed",
                               "  not applicable to these GPUs: page retirement (Ampere and newer GPUs remap rows instead)"]
    assert a.to_dict()["not_applicable"] == a.not_applicable
    # A Volta whose NVML did not answer its page-retirement counters: a check that did not run.
    volta = CheckResult("health.retired_pages", "gpu0", Verdict.SKIP, "page retirement not reported by NVML on this GPU")
    assert answer([volta], [], "PASS", "complete").headline == \
        "PASS: 0 passed; 1 not run: page retirement not reported by NVML on this GPU"


def test_a_check_that_could_not_run_where_none_failed_is_an_error_not_a_fail():
    """Another process on a GPU: exit 2, the node not qualified, but nothing says its hardware is bad.
    The faces say ERROR (the signed verdict stays FAIL: not a PASS); a failure beside it is a FAIL."""
    busy = CheckResult("stress.gpu_free", "gpu6", Verdict.ERROR, "1 other compute process(es) on this GPU before "
                       "the stress: pid 48151 (python3, 0.98 GiB); it sits out the stress", code="GPU_IN_USE")
    ok = CheckResult("host.cpu", "node", Verdict.PASS, "ok")
    a = answer([ok, busy], [], "FAIL", "complete")
    assert (a.state, a.word) == ("error", "ERROR")
    assert a.headline == "ERROR (a check could not run: not qualified): 1 passed, 1 could not run"
    assert answer_lines(a)[1] == "  ERROR GPU 6"
    failed = answer([ok, busy, CheckResult("health.ecc", "gpu1", Verdict.FAIL, "dbe 2", code="ECC_DBE")], [], "FAIL",
                    "complete")
    assert (failed.state, failed.word) == ("fail", "FAIL") and failed.headline.startswith("FAIL: 1 passed, 1 failed")
    aborted = answer([ok, busy], [], "FAIL", "aborted")
    assert (aborted.state, aborted.word) == ("aborted", "ABORTED")
    assert answer([ok], [], "PASS", "complete").word == "PASS"


def test_checks_not_run_for_one_reason_count_together_whatever_their_figures():
    """A GPU that sat out the stress leaves its checks not run, each GPU's message with its own
    figures: one reason in the tally, without a second 'not run:', never the messages whole."""
    idle = [CheckResult("health.temperature", f"gpu{i}", Verdict.SKIP,
                        f"never sampled under load ({80 + i} idle sample(s), peak 3{i}.1 C): the temperature under "
                        "load was not seen; sample more often (--sample-hz)") for i in range(3)]
    busy = [CheckResult(name, "gpu6", Verdict.SKIP, "not run: another process is using this GPU", code="GPU_IN_USE")
            for name in ("stress.burn", "stress.power")]
    a = answer(idle + busy, [], "PASS", "complete")
    assert [(e.reason, e.count) for e in a.not_run] == [("never sampled under load", 3),
                                                        ("another process is using this GPU", 2)]
    assert a.tally == "0 passed; 5 not run: 3 never sampled under load, 2 another process is using this GPU"


def test_the_tally_names_three_reasons_for_checks_not_run_and_counts_the_rest():
    def skips(n, why):
        return [CheckResult(f"x.{why}", f"gpu{i}", Verdict.SKIP, why) for i in range(n)]

    four = skips(5, "reason a") + skips(4, "reason b") + skips(3, "reason c") + skips(2, "reason d")
    assert answer(four, [], "PASS", "complete").tally == \
        "0 passed; 14 not run: 5 reason a, 4 reason b, 3 reason c, 2 reason d"  # a fourth: named, not counted
    five = four + skips(1, "reason e")
    assert answer(five, [], "PASS", "complete").tally == \
        "0 passed; 15 not run: 5 reason a, 4 reason b, 3 reason c, 3 more for 2 other reasons"


def test_subjects_of_several_kinds_are_said_in_runs_per_kind():
    gpus = [f"gpu{i}" for i in (0, 1, 2, 3, 4, 5, 7)]
    assert subjects_text(gpus + ["node", "gpu6"]) == "gpu0-7,node"  # the order a step names them in
    assert subjects_text([f"gpu{i}" for i in range(8)] + ["eno1", "ibp24s0", "ibp64s0"]) == \
        "gpu0-7,eno1,ibp24s0,ibp64s0"
    assert subjects_text(["gpu0", "gpu2", "gpu3", "gpu4"]) == "gpu0,2-4"
    assert subjects_text(["gpu0", "gpu2"]) == "gpu0,gpu2" and subjects_text(["node", "gpu1", "gpu2"]) == "node,gpu1,gpu2"


def test_a_report_that_does_not_verify_says_so_before_its_verdict():
    predicate = {"verdict": "PASS", "status": "complete", "checks": [
        CheckResult("host.cpu", "node", Verdict.PASS, "ok").to_dict()]}
    shown = render_report(predicate, "signature: NOT VERIFIED (bad signature): do not rely on this report")
    assert shown.splitlines()[0] == "nodeqc report (NOT VERIFIED: do not rely on it): PASS: 1 passed"
    assert render_report(predicate, "signature: verified (key 0123)").splitlines()[0] == "nodeqc report: PASS: 1 passed"


def test_a_finding_is_split_at_top_level_semicolons_only():
    assert split_findings("link down (operstate down, carrier 0; mlx5_3/1 DOWN) (x); speed 0") == [
        "link down (operstate down, carrier 0; mlx5_3/1 DOWN) (x)", "speed 0"]


# ---------------------------------------------------------------------- the repair loop, in parts

GPU3 = Part("gpu", "gpu3", "NVIDIA H100", 3, "0000:61:00.0", "S3")


def _finding(check="health.pcie_link", subject="gpu3", part=GPU3, code="PCIE_WIDTH"):
    return Finding("fail", check, subject, part, "link Gen5 x8 under load, expected x16", code, remediation(code))


def test_repair_outcome_says_fixed_still_failing_not_retested_and_new():
    previous = {"report": "a.report.json", "sha256": "ab", "verdict": "FAIL", "failures": [
        {"check": "health.pcie_link", "subject": "gpu3", "code": "PCIE_WIDTH", "part": "gpu:S3"},
        {"check": "stress.hbm_bandwidth", "subject": "gpu5", "code": "HBM_SLOW", "part": "gpu:S5"},
        {"check": "nic.tcp", "subject": "nic0", "code": "NIC_THROUGHPUT", "part": "nic:m"}]}
    results = [CheckResult("health.pcie_link", "gpu3", Verdict.FAIL, "x8", code="PCIE_WIDTH"),
               CheckResult("stress.hbm_bandwidth", "gpu5", Verdict.PASS, "ok"),
               CheckResult("nic.tcp", "nic0", Verdict.SKIP, "no peer", code="NIC_NO_PEER"),
               CheckResult("health.ecc", "gpu1", Verdict.FAIL, "dbe", code="ECC_DBE")]
    findings = [_finding(), _finding("health.ecc", "gpu1", Part("gpu", "gpu1", index=1, serial="S1"), "ECC_DBE")]
    repair = repair_outcome(previous, "reseated GPU 3 riser", results, findings)
    assert [o["status"] for o in repair["outcomes"]] == [STILL_FAILING, FIXED, NOT_RETESTED]
    assert [f.repair for f in findings] == [STILL_FAILING, NEW]
    assert repair["action"] == "reseated GPU 3 riser" and repair["previous"]["sha256"] == "ab"


def test_a_failure_with_another_code_on_the_same_part_is_changed():
    """Issue 24: the same check on the same part failing with another code is not 'STILL FAILING'
    (the repair may have moved the fault): CHANGED, with both codes said."""
    from nodeqc.report.answer import CHANGED, repair_lines

    previous = {"report": "a.report.json", "sha256": "ab", "verdict": "FAIL", "failures": [
        {"check": "health.pcie_link", "subject": "gpu3", "code": "PCIE_WIDTH", "part": "gpu:S3", "identity": "GPU 3"}]}
    results = [CheckResult("health.pcie_link", "gpu3", Verdict.FAIL, "Gen4", code="PCIE_GEN")]
    findings = [_finding(code="PCIE_GEN")]
    repair = repair_outcome(previous, None, results, findings)
    assert [(o["status"], o["code_now"]) for o in repair["outcomes"]] == [(CHANGED, "PCIE_GEN")]
    assert findings[0].repair == CHANGED
    lines = repair_lines(repair)
    assert not any(line.strip().startswith("repair:") for line in lines)  # no repair was recorded
    assert "    CHANGED       GPU 3: health.pcie_link [PCIE_WIDTH -> PCIE_GEN]" in lines


def test_after_a_report_that_passed_every_failure_is_new():
    from nodeqc.report.answer import repair_lines

    previous = {"report": "a.report.json", "sha256": "ab", "verdict": "PASS", "failures": []}
    findings = [_finding()]
    repair = repair_outcome(previous, None, [CheckResult("health.pcie_link", "gpu3", Verdict.FAIL, "x8",
                                                         code="PCIE_WIDTH")], findings)
    assert repair["outcomes"] == [] and findings[0].repair == NEW
    assert "    (the re-tested report had no failures)" in repair_lines(repair)


def test_a_failure_that_comes_back_on_the_same_part_escalates():
    first = [_finding()]
    escalate(first, {}, None)
    assert first[0].escalation == 0 and first[0].remediation == remediation("PCIE_WIDTH")  # reseat
    again = [_finding()]
    escalate(again, {"gpu:S3|PCIE_WIDTH": 1}, None)  # repaired once before for this code
    assert again[0].escalation == 1 and "replace the riser or cable of GPU 3" in again[0].remediation
    twice = [_finding()]
    escalate(twice, {"gpu:S3|PCIE_WIDTH": 1}, {"action": "replaced riser", "outcomes": [
        {"part": "gpu:S3", "code": "PCIE_WIDTH", "status": STILL_FAILING}]})
    assert twice[0].escalation == 2 and twice[0].remediation == escalation("PCIE_WIDTH", 2, GPU3)
    assert "RMA GPU 3 (0000:61:00.0, serial S3)" in twice[0].remediation
    other_part = [_finding(part=Part("gpu", "gpu3", index=3, serial="SPARE"))]  # a swapped GPU starts afresh
    escalate(other_part, {"gpu:S3|PCIE_WIDTH": 2}, None)
    assert other_part[0].escalation == 0


@pytest.mark.parametrize("code, first, then", [
    ("POWER_LIMIT_LOWERED", "something re-applies it", "do not RMA"),
    ("ECC_DISABLED", "something re-applies it", "do not RMA"),
    ("THROTTLE_THERMAL", "fan modules, airflow", "with the chassis cooling proven good: RMA"),
    ("THROTTLE_POWER_BRAKE", "the PSUs, their input", "with the PSUs and cables proven good: RMA"),
    ("ECC_DBE", "replace GPU 3", "RMA GPU 3"),  # a part's own fault: the default ladder
])
def test_a_setting_or_the_chassis_that_comes_back_is_not_an_rma_of_the_gpu(code, first, then):
    """The 2026-11-28 advice review: a power limit lowered again after it was restored, or a GPU
    throttling for heat again after the fans were replaced, was told to replace the GPU (RMA)."""
    assert first in escalation(code, 1, GPU3) and "GPU 3 (0000:61:00.0, serial S3)" in escalation(code, 1, GPU3)
    assert then in escalation(code, 2, GPU3)
    if code != "ECC_DBE":
        assert "RMA" not in escalation(code, 1, GPU3)


# ---------------------------------------------------------------------- the repair loop, end to end

FAST = ["--quick", "--sample-hz", "8"]


@pytest.mark.slow
def test_fail_repair_retest_fixed_then_a_repeat_escalates(tmp_path):
    env = {"NODEQC_ARCHIVE": str(tmp_path / "archive")}  # keys: the test's own XDG directories
    (tmp_path / "archive").mkdir()

    def run(*args):
        p = cli("--headless", "--profile", "h100", "--simulate", "h100", *FAST, *args, env=env)
        assert p.returncode in (0, 1), p.stderr
        return Path(p.stdout.strip().splitlines()[-1]), p

    failed, p = run("--inject", "gpu0:pcie_width=8")
    assert p.returncode == 1 and f"what to do: {remediation('PCIE_WIDTH')}" in p.stderr
    fixed, p = run("--retest", "--repair", "reseated GPU 0 riser")
    assert p.returncode == 0
    pred = verify_file(fixed, trusted_keys(None)).predicate
    assert pred["repair"]["action"] == "reseated GPU 0 riser"
    assert pred["repair"]["previous"]["path"] == str(failed)
    assert pred["repair"]["previous"]["sha256"] == pred["previous"]["sha256"]
    assert {o["status"] for o in pred["repair"]["outcomes"]} == {FIXED}
    assert "repair: reseated GPU 0 riser" in p.stderr
    assert re.search(r"FIXED +GPU 0 \(0000:01:00.0, serial SIM-H100-0001-G0\): stress.pcie_bandwidth, "
                     r"health.pcie_link \[PCIE_WIDTH\]", p.stderr)
    show = cli("show", str(fixed), env=env).stdout
    assert "repair: reseated GPU 0 riser" in show and "FIXED" in show

    # The same fault on the same GPU after that repair: reseating did not hold, replace the riser.
    _, p = run("--inject", "gpu0:pcie_width=8")
    assert "what to do: Failed again after a repair: do not just reseat; replace the riser" in p.stderr
    # Replaced, and still failing: RMA.
    last, p = run("--inject", "gpu0:pcie_width=8", "--retest", "--repair", "replaced riser")
    assert "STILL FAILING" in p.stderr and "what to do: Failed after repeated repairs: RMA GPU 0" in p.stderr

    story = cli("history", "--part", "SIM-H100-0001-G0", env=env)
    assert story.returncode == 0, story.stderr
    lines = story.stdout.splitlines()
    assert lines[0] == "part GPU 0 (0000:01:00.0, serial SIM-H100-0001-G0): 4 report(s), oldest first"
    assert "FAIL stress.pcie_bandwidth [PCIE_WIDTH], health.pcie_link [PCIE_WIDTH]" in lines[1]
    assert "PASS" in lines[2] and "repair: reseated GPU 0 riser -> FIXED" in lines[2]
    assert "repair: replaced riser -> STILL FAILING" in lines[4] and str(last) in lines[4]


def test_repair_without_a_report_to_retest_is_one_line(tmp_path):
    env = {"NODEQC_ARCHIVE": str(tmp_path)}
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--repair", "reseated", env=env)
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1].startswith("nodeqc: --repair: there is no earlier")


def test_a_retest_of_a_report_that_passed_marks_the_new_failure_new(tmp_path, run_cli):
    """The re-test of a passing report once said nothing of the failure that appeared since."""
    common = ["--headless", "--profile", "h100", "--simulate", "h100", *FAST, "--only", "health.pcie_link,stress.burn",
              "--archive", str(tmp_path)]
    first = run_cli(*common)
    assert first.returncode == 0, first.stderr
    passed = first.stdout.strip().splitlines()[-1]
    again = run_cli(*common, "--inject", "gpu0:pcie_width=8", "--retest", passed)
    assert again.returncode == 1
    assert "[NEW]" in again.stderr and "(the re-tested report had no failures)" in again.stderr


def test_an_aborted_runs_checks_not_run_are_one_reason():
    """Checks the abort never reached (RUN_ABORTED) and a stress step it interrupted were counted as
    two reasons: '31 not run: 23 the run was aborted before it, 8 the run was aborted'."""
    from nodeqc.checks.stress.outcomes import outcome_failure
    from nodeqc.core.model import CheckResult, Verdict
    from nodeqc.report.answer import answer
    from nodeqc.work.workers import STATUS_ABORTED, Outcome, Task

    never = [CheckResult(n, "node", Verdict.SKIP, "not run: the run was aborted before it", code="RUN_ABORTED")
             for n in ("nic.link", "stress.memtest", "stress.hbm_bandwidth")]
    cut = [outcome_failure("stress.burn", f"gpu{i}", Outcome(Task("x", i, {}, 1.0), STATUS_ABORTED)) for i in range(2)]
    passed = [CheckResult("inventory.gpu_count", "node", Verdict.PASS, "8 GPUs")]
    a = answer(passed + never + cut, [], "FAIL", "aborted")
    assert a.tally == "1 passed; 5 not run: the run was aborted", a.tally


def test_a_diagnosed_finding_keeps_its_figure_and_floor_beside_the_cause():
    """The 2026-11-28 advice review: the summary and `nodeqc show` kept only a diagnosis' own words
    ("slow at full clocks ...: 0.70 of its SKU's rate per clock"), without the TFLOP/s or the floor."""
    diagnosis = "slow at full clocks (1,975 MHz): the GPU computes 0.70 of its SKU's rate per clock; the floor is an estimate"
    r = CheckResult("stress.burn", "gpu0", Verdict.FAIL,
                    f"{diagnosis}; bf16 sustained 470 TFLOP/s is below the limit 600 TFLOP/s; power drew 500 W",
                    code="BURN_SLOW", evidence={"diagnosis": {"message": diagnosis, "cause": "compute"}})
    [f] = answer([r], [], "FAIL", "complete").findings
    assert f.finding == f"{diagnosis}; bf16 sustained 470 TFLOP/s is below the limit 600 TFLOP/s"
    assert f.more == ["power drew 500 W"]
    plain = CheckResult("stress.burn", "gpu0", Verdict.FAIL, "bf16 sustained 470 TFLOP/s is below the limit; x",
                        code="BURN_SLOW")
    assert answer([plain], [], "FAIL", "complete").findings[0].finding == "bf16 sustained 470 TFLOP/s is below the limit"
