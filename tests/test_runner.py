"""The runner's behaviour around the checks: the event stream, the journal, abort, internal errors."""

import threading
import time

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.checks import health
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.report.envelope import verify_file
from nodeqc.report.journal import read_journal
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, RunOutcome, Runner
from nodeqc.spec.profile import load_profile


@pytest.fixture
def signer(tmp_path):
    return create_key(tmp_path / "k.pem")


def runner(tmp_path, signer, events=None, scenario="h100", faults=(), scale=40, quick=True):
    from nodeqc.backends.sim.faults import parse_fault

    hw = simulated_hardware(scenario, [parse_fault(f) for f in faults], time_scale=scale)
    sink = events.append if events is not None else None
    return Runner(RunOptions(load_profile(scenario), signer, out_dir=tmp_path / "out", quick=quick), hw, sink)


def test_event_stream_and_journal_agree(tmp_path, signer):
    events = []
    outcome = runner(tmp_path, signer, events).run()
    kinds = [e.type for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "telemetry" in kinds and "check_progress" in kinds
    finished = [e.result for e in events if e.type == "check_finished"]
    assert [r.to_dict() for r in finished] == [r.to_dict() for r in outcome.results]
    # Every check starts before its results arrive.
    started = set()
    for e in events:
        if e.type == "check_started":
            started.add(e.name)
        if e.type == "check_finished":
            assert e.result.name in started
    journal = read_journal(outcome.report_path.with_name(outcome.report_path.name.replace(".report.json", ".journal.jsonl")))
    assert [r["type"] for r in journal if r["type"] in ("check_finished",)] == ["check_finished"] * len(outcome.results)
    assert journal[-1]["type"] == "run_finished" and journal[-1]["verdict"] == "PASS"
    assert not any(r["type"] in ("telemetry", "check_progress") for r in journal)  # kept out of the journal


def test_report_predicate_has_what_a_qualification_needs(tmp_path, signer):
    outcome = runner(tmp_path, signer).run()
    pred = verify_file(outcome.report_path, {signer.keyid: (signer.public, "t")}).predicate
    for key in ("verdict", "simulated", "profile", "node", "gpus", "checks", "telemetry", "tool", "started_at",
                "finished_at", "operator", "ticket"):
        assert key in pred, key
    assert pred["simulated"] is True and pred["simulation"]["scenario"] == "h100"
    assert pred["profile"]["name"] == "h100" and len(pred["profile"]["sha256"]) == 64
    check = pred["checks"][0]
    assert set(check) >= {"name", "subject", "verdict", "code", "message", "values", "thresholds", "remediation"}
    gpu0 = pred["telemetry"]["gpus"]["gpu0"]
    assert gpu0["temp_c"]["max"] > gpu0["temp_c"]["min"] and gpu0["loaded_samples"] > 0
    assert pred["telemetry"]["series"]["rows"] > 0


def test_abort_during_the_work_writes_an_aborted_report(tmp_path, signer):
    events = []
    r = runner(tmp_path, signer, events, scale=1, quick=False)  # a real-time 600 s burn: only abort ends it
    threading.Thread(target=lambda: (time.sleep(4), r.abort()), daemon=True).start()
    start = time.monotonic()
    outcome = r.run()
    assert time.monotonic() - start < 30
    assert outcome.status == "aborted" and outcome.verdict == "FAIL" and outcome.exit_code == 2
    burn = next(x for x in outcome.results if x.name == "stress.burn")
    assert burn.verdict is Verdict.SKIP and "aborted" in burn.message
    pred = verify_file(outcome.report_path, {signer.keyid: (signer.public, "t")}).predicate
    assert pred["status"] == "aborted"
    # Every check the run never reached has its row (issue 24: they had none), and only those
    never = {c["name"] for c in pred["checks"] if c["code"] == "RUN_ABORTED"}
    assert {"stress.hbm_bandwidth", "stress.memtest", "nic.link"} <= never
    assert "stress.burn" not in never and "inventory.gpu_model" not in never
    assert "burnin.stability" not in never and not any(n.startswith("baseline.") for n in never)
    assert all(c["verdict"] == "skip" and c["message"] == "not run: the run was aborted before it"
               for c in pred["checks"] if c["code"] == "RUN_ABORTED")
    assert not any("whole run" in c["message"] for c in pred["checks"])


def test_an_internal_error_is_an_error_result_and_exit_2(tmp_path, signer, monkeypatch):
    def broken(*args):
        raise KeyError("boom")

    monkeypatch.setattr(health, "health_results", broken)
    outcome = runner(tmp_path, signer).run()
    err = next(x for x in outcome.results if x.name == "nodeqc.internal")
    assert (err.verdict, err.code) == (Verdict.ERROR, "INTERNAL_ERROR")
    assert any("KeyError" in line for line in err.evidence["traceback"])
    assert outcome.exit_code == 2 and outcome.report_path.is_file()


def test_runs_starting_in_the_same_second_get_their_own_files(tmp_path, signer):
    """Each run claims its name by creating the journal exclusively; a name taken is never reused."""
    import threading

    outcomes = []
    runners = [runner(tmp_path, signer) for _ in range(3)]
    threads = [threading.Thread(target=lambda r=r: outcomes.append(r.run())) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    paths = {o.report_path for o in outcomes}
    assert len(paths) == 3 and all(p.is_file() for p in paths)
    journals = {p.with_name(p.name.replace(".report.json", ".journal.jsonl")) for p in paths}
    assert all(read_journal(j)[0]["type"] == "run_started" and len([r for r in read_journal(j) if r["type"] == "run_started"]) == 1
               for j in journals)


def test_reports_never_overwrite_each_other(tmp_path, signer):
    a = runner(tmp_path, signer).run().report_path
    b = runner(tmp_path, signer).run().report_path
    assert a != b and a.is_file() and b.is_file()


@pytest.mark.parametrize("replay", [True, False])
def test_host_checks_without_a_host_to_read_each_say_they_did_not_run(tmp_path, signer, replay):
    """A run with no platform or host-stress backend (a replay of a capture carries only NVML
    answers) names every host check it could not run, never leaves them out silently."""
    from nodeqc.spec.selection import Selection

    hw = simulated_hardware("h100", [], time_scale=40)
    hw.platform, hw.host_stress = None, None
    if replay:
        hw.simulation = {"replay": "capture.json"}
    options = RunOptions(load_profile("h100"), signer, out_dir=tmp_path / "out", quick=False,
                         selection=Selection.parse(["host"], None))
    outcome = Runner(options, hw).run()
    skipped = {r.name: r for r in outcome.results if r.code == "HOST_NOT_HERE"}
    assert sorted(skipped) == ["host.aer", "host.cpu_stress", "host.edac", "host.kernel_log", "host.memory_bandwidth",
                               "host.nvme", "host.optics"]
    assert all(r.verdict is Verdict.SKIP and r.subject == "node" for r in skipped.values())
    why = ("a replay carries the captured GPUs' NVML answers, not the captured machine's host" if replay
           else "this run has no backend for the host")
    assert skipped["host.cpu_stress"].message == f"not run: {why}"
    assert {r.name for r in outcome.results} == set(skipped) | {"host.cpu", "host.memory"}


def test_host_health_says_why_when_sysfs_could_not_be_read():
    from nodeqc.run.platform_watch import PlatformWatch

    class Broken:
        def kernel_log(self):
            raise OSError("Permission denied: '/sys/bus/pci/devices'")

    watch, said = PlatformWatch(Broken()), []
    watch.start([], [], said.append)
    results = watch.health_results(load_profile("h100"))
    assert [(r.name, r.verdict, r.code) for r in results] == [
        ("host.edac", Verdict.SKIP, "HOST_UNREADABLE"), ("host.aer", Verdict.SKIP, "HOST_UNREADABLE"),
        ("host.kernel_log", Verdict.SKIP, "HOST_UNREADABLE")]
    assert results[0].message == "not run: cannot read sysfs: Permission denied: '/sys/bus/pci/devices'"
    assert said[0].text.startswith("host health not watched: cannot read sysfs")


def test_a_node_that_could_not_be_read_is_not_compared_with_its_baseline_never_all_missing(tmp_path, signer):
    """The platform unreadable (DMI, the PCIe tree): comparing nothing with the baseline would call
    every GPU, NIC and bridge missing, a false FAIL. Each baseline check is an ERROR saying why."""
    from pathlib import Path

    from nodeqc.spec.baseline import Baseline
    from nodeqc.spec.selection import Selection

    hw = simulated_hardware("h100", [], time_scale=40)
    real = hw.platform

    class Unreadable:
        def __getattr__(self, name):
            return getattr(real, name)

        def dmi(self):
            raise PermissionError(13, "Permission denied", "/sys/class/dmi/id/product_serial")

    hw.platform = Unreadable()
    golden = Baseline(Path("golden.toml"), {"node": {"kernel": "6.8"}, "gpu": {"gpu0": {"vbios": "96.00.99.00.01"}},
                                            "bridge": {"0000:17:01.0": {"acs": "SrcValid+"}}}, "0" * 64)
    options = RunOptions(load_profile("h100"), signer, out_dir=tmp_path / "out", quick=True, baseline=golden,
                         selection=Selection.parse(["baseline"], None))
    events = []
    outcome = Runner(options, hw, events.append).run()
    assert [(r.name, r.verdict, r.code) for r in outcome.results] == [
        (f"baseline.{n}", Verdict.ERROR, "BASELINE_NOT_READ") for n in ("firmware", "software", "settings", "topology")]
    assert outcome.results[0].message == ("not compared with golden.toml: the node's platform could not be read: "
                                          "[Errno 13] Permission denied: '/sys/class/dmi/id/product_serial'")
    assert outcome.exit_code == 2


# ---------------------------------------------------------------------- a run that judged nothing (issue 23)


def _selected_run(tmp_path, signer, only, faults=()):
    from nodeqc.backends.sim.faults import parse_fault
    from nodeqc.spec.selection import Selection

    hw = simulated_hardware("h100", [parse_fault(f) for f in faults], time_scale=40)
    options = RunOptions(load_profile("h100"), signer, out_dir=tmp_path / "out", quick=True,
                         selection=Selection.parse([only], None))
    return Runner(options, hw).run()


def _predicate(outcome, signer):
    return verify_file(outcome.report_path, {signer.keyid: (signer.public, "t")}).predicate


def test_a_run_in_which_nothing_ran_is_an_error_not_a_pass(run_cli, tmp_path):
    """On a real H100 with a co-tenant, `--quick --only stress.burn` said "PASS (PARTIAL...): 0
    passed" and exited 0 (shared/measurements/2026-11-26, item 4)."""
    p = run_cli("--headless", "--simulate", "h100", "--profile", "h100", "--quick", "--only", "stress.burn",
                "--inject", "gpu0:cotenant", "--out", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "SKIP  stress.burn              gpu0   not run: another process is using this GPU [GPU_IN_USE]" in p.stderr
    headline = next(line for line in p.stderr.splitlines() if line.startswith("RESULT: "))
    assert headline.startswith("RESULT: ERROR (a check could not run: not qualified) (PARTIAL"), headline
    assert "0 passed, 1 could not run; 1 not run: another process is using this GPU" in headline
    assert ("nodeqc.nothing_judged: no selected check reached a verdict, so nothing was judged: 1 not run: "
            "another process is using this GPU (stress.burn) [NOTHING_JUDGED]") in p.stderr
    from pathlib import Path

    from nodeqc.report.envelope import decode_statement, read_envelope

    pred = decode_statement(read_envelope(Path(p.stdout.strip().splitlines()[-1])))["predicate"]
    assert pred["verdict"] == "ERROR" and pred["answer"]["headline"].startswith("ERROR")
    nothing = [c for c in pred["checks"] if c["name"] == "nodeqc.nothing_judged"]
    assert len(nothing) == 1 and nothing[0]["verdict"] == "error" and nothing[0]["code"] == "NOTHING_JUDGED"
    assert nothing[0]["evidence"]["not_run"] == [{"reason": "another process is using this GPU", "count": 1,
                                                  "checks": ["stress.burn"]}]
    assert nothing[0]["remediation"] and "another process on a GPU" in nothing[0]["remediation"]


def test_a_run_of_checks_that_do_not_apply_alone_judged_nothing(tmp_path, signer):
    """One GPU: GPU-to-GPU copies do not apply. Nothing was left untested, but nothing was shown."""
    outcome = _selected_run(tmp_path, signer, "stress.p2p")
    assert [(r.name, r.verdict, r.code) for r in outcome.results] == [
        ("stress.p2p", Verdict.SKIP, "ONE_GPU_NA"), ("nodeqc.nothing_judged", Verdict.ERROR, "NOTHING_JUDGED")]
    assert outcome.exit_code == 2 and outcome.verdict == "ERROR"
    err = outcome.results[-1]
    assert err.message == ("no selected check reached a verdict, so nothing was judged: not applicable to this "
                           "node: GPU-to-GPU copies and all-reduce (one GPU on this node)")
    assert err.evidence == {"not_run": [], "not_applicable": ["GPU-to-GPU copies and all-reduce (one GPU on this node)"]}
    answer = _predicate(outcome, signer)["answer"]
    assert answer["headline"].startswith("ERROR (a check could not run: not qualified)")


def test_one_check_that_passes_among_skips_still_passes(tmp_path, signer):
    """The burn passes beside a check not run (no NIC peer given) and one that does not apply (one
    GPU): the run judged something, and what it judged passed: PASS, exit 0."""
    outcome = _selected_run(tmp_path, signer, "stress.burn,stress.p2p,nic.tcp")
    assert [(r.name, r.verdict, r.code) for r in outcome.results] == [
        ("stress.burn", Verdict.PASS, None), ("stress.p2p", Verdict.SKIP, "ONE_GPU_NA"),
        ("nic.tcp", Verdict.SKIP, "NIC_NO_PEER")]
    assert outcome.exit_code == 0 and outcome.verdict == "PASS"
    assert _predicate(outcome, signer)["answer"]["headline"].startswith("PASS (PARTIAL")


def test_nothing_judged_is_said_only_when_nothing_was():
    from nodeqc.report.predicate import nothing_judged

    skip = CheckResult("nic.tcp", "nic0", Verdict.SKIP, "not run: no peer", code="NIC_NO_PEER")
    na = CheckResult("health.nvlink", "gpu0", Verdict.SKIP, "not applicable", code="NVLINK_NA")
    for verdict in (Verdict.PASS, Verdict.WARN, Verdict.FAIL, Verdict.ERROR):
        assert nothing_judged([skip, na, CheckResult("stress.burn", "gpu0", verdict, "x")]) is None
    both = nothing_judged([skip, skip, na])
    assert both.verdict is Verdict.ERROR and both.code == "NOTHING_JUDGED"
    assert both.message == ("no selected check reached a verdict, so nothing was judged: 2 not run: no NIC peer "
                            "given (pass --nic-peer) (nic.tcp); not applicable to this node: NVLink (none reported, "
                            "none asked for)")
    assert nothing_judged([]).message == ("no selected check reached a verdict, so nothing was judged (no check "
                                          "reported a result)")


@pytest.mark.slow
def test_a_run_that_could_not_judge_reads_error_everywhere(run_cli, tmp_path):
    """Issue 24: a run that could not judge (ERROR, exit 2) read FAIL outside the banner, so fleet
    views counted a healthy node as a hardware failure. One word in the signed report, verify,
    history (and --verdict error), export, fleet, the Prometheus textfile and the printable state."""
    from pathlib import Path

    from nodeqc.report.envelope import decode_statement, read_envelope
    from nodeqc.report.printable import LoadedReport

    archive = tmp_path / "archive"
    archive.mkdir()
    prom = tmp_path / "node.prom"
    p = run_cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--only", "stress.gpu_free,stress.burn",
                "--inject", "gpu0:cotenant", "--archive", str(archive), "--prometheus-textfile", str(prom))
    assert p.returncode == 2
    report = Path(p.stdout.strip().splitlines()[-1])
    pred = decode_statement(read_envelope(report))["predicate"]
    assert pred["verdict"] == "ERROR"
    assert run_cli("verify", str(report)).stdout.startswith("verified: ERROR")
    for args, listed in ((("--verdict", "error"), True), (("--verdict", "fail"), False), ((), True)):
        h = run_cli("history", "--archive", str(archive), *args)
        assert (" ERROR (partial) SIM " in h.stdout) is listed, (args, h.stdout, h.stderr)
    assert ",ERROR,complete," in run_cli("export", "--archive", str(archive)).stdout
    fleet = run_cli("fleet", "--archive", str(archive)).stdout
    assert "ERROR (partial) SIM" in fleet and "FAIL" not in fleet
    assert 'verdict="ERROR"' in prom.read_text() and "nodeqc_passed 0" in prom.read_text()
    assert LoadedReport(report, pred, True, "").state == "error"


def test_a_proven_failure_exits_1_whatever_could_not_run_beside_it(tmp_path):
    """The 2026-11-28 advice review: a riser at x8 beside a co-tenant's GPU exited 2, "could not
    judge", and a pipeline that retries on 2 would retest a node with a proven bad part."""

    def outcome(*verdicts, status="complete", verdict="FAIL"):
        results = [CheckResult("x", f"gpu{k}", v, "m") for k, v in enumerate(verdicts)]
        return RunOutcome(verdict, status, tmp_path / "r.json", results)

    assert outcome(Verdict.FAIL, Verdict.ERROR).exit_code == 1
    assert outcome(Verdict.PASS, Verdict.ERROR, verdict="ERROR").exit_code == 2
    assert outcome(Verdict.FAIL, status="aborted").exit_code == 2  # cut short: not a whole judgement
    assert outcome(Verdict.FAIL).exit_code == 1
    assert outcome(Verdict.PASS, Verdict.WARN, verdict="PASS").exit_code == 0


def test_an_outcome_names_what_did_not_pass_first(tmp_path):
    """A failed assertion prints the head of a repr: the result that made the verdict comes first."""
    results = [CheckResult(f"health.c{i}", "gpu0", Verdict.PASS, "fine") for i in range(50)]
    results += [CheckResult("stress.pulse", "gpu3", Verdict.ERROR, "no swing seen", code="PULSE_NOT_OBSERVED"),
                CheckResult("nic.loopback", "node", Verdict.SKIP, "no peer")]
    text = repr(RunOutcome("ERROR", "complete", tmp_path / "r.json", results))
    assert text.startswith("RunOutcome(ERROR, complete, not passed: ['ERROR stress.pulse gpu3 PULSE_NOT_OBSERVED: "
                           "no swing seen', 'SKIP nic.loopback node: no peer'], 50 passed"), text


class _AbortedWhileRunning:
    """The simulated node's host stress, but the run's group is signalled while a tool runs: the
    abort is asked, and the tool's processes die of the same signal (scancel, systemd's stop)."""

    def __init__(self, stress, in_tool):
        self.stress, self.in_tool, self.runner = stress, in_tool, None

    def __getattr__(self, name):
        return getattr(self.stress, name)

    def cpu(self, seconds):
        if not self.in_tool.startswith("cpu"):
            return self.stress.cpu(seconds)
        self.runner.abort()
        died = [{"cpu": c, "rounds": 0, "wrong": 0, "error": "BrokenProcessPool: A process in the process pool "
                 "was terminated abruptly while the future was running or pending."} for c in range(4)]
        if self.in_tool == "cpu_wrong":  # core 0 had computed a wrong answer before the signal came
            died[0] = {"cpu": 0, "rounds": 12, "wrong": 1, "first_wrong": {"hash": "d41d8cd9"}}
        return died

    def memory_bandwidth(self):
        from concurrent.futures.process import BrokenProcessPool

        if self.in_tool != "memory_bandwidth":
            return self.stress.memory_bandwidth()
        self.runner.abort()
        raise BrokenProcessPool("A child process terminated abruptly, the process pool is not usable anymore")

    def fio(self, target, seconds, scratch):
        from nodeqc.backends.host_stress import FioResult

        self.runner.abort()  # fio ends at the signal and says so: its exit read as "fio failed"
        return FioResult(target, error="fio: terminating on signal 15", command=["fio"])


@pytest.mark.parametrize("in_tool", ["cpu", "memory_bandwidth", "cpu_wrong", "nvme"])
def test_a_host_tool_ended_by_the_abort_is_not_judged(tmp_path, signer, in_tool):
    """A group SIGTERM killed the host stress's workers with the run: the dead workers read as
    HOST_CPU_STRESS_DIED ("the stress work did not finish"), and the broken pool of the memory
    bandwidth as an internal error, in an aborted run's report. What a tool the abort ended leaves is
    no finding; a wrong answer a core computed before it is, and stands."""
    from nodeqc.spec.selection import Selection

    hw = simulated_hardware("h100", [], time_scale=40)
    hw.host_stress = stress = _AbortedWhileRunning(hw.host_stress, in_tool)
    profile = tmp_path / "p.toml"
    profile.write_text('description = "h100, one disk"\nextends = "h100"\n[host]\nfio_targets = ["/dev/nvme0n1"]\n')
    options = RunOptions(load_profile(str(profile)), signer, out_dir=tmp_path / "out", quick=False)
    checks = ["host.cpu_stress", "host.memory_bandwidth"] if in_tool != "nvme" else ["host.nvme"]
    options.selection = Selection.parse(checks, None)
    stress.runner = run = Runner(options, hw)
    outcome = run.run()
    names = [r.name for r in outcome.results]
    assert all(names.count(name) == 1 for name in checks), names  # each listed once
    by = {r.name: r for r in outcome.results}
    if in_tool == "nvme":  # fio's "failed" (NVME_FIO, a FAIL) was the signal's
        assert outcome.exit_code == 2 and (by["host.nvme"].verdict, by["host.nvme"].code) == (Verdict.SKIP, "RUN_ABORTED")
        assert by["host.nvme"].evidence["tool_said"].endswith("terminating on signal 15"), by["host.nvme"]
        return
    if in_tool == "cpu_wrong":
        assert outcome.status == "aborted" and outcome.exit_code == 2
        assert (by["host.cpu_stress"].verdict, by["host.cpu_stress"].code) == (Verdict.FAIL, "HOST_CPU_WRONG")
        return
    assert outcome.status == "aborted" and outcome.exit_code == 2
    assert not [r for r in outcome.results if r.verdict in (Verdict.FAIL, Verdict.ERROR)], outcome
    ended = by[f"host.{'cpu_stress' if in_tool == 'cpu' else 'memory_bandwidth'}"]
    assert (ended.verdict, ended.code, ended.message) == (Verdict.SKIP, "RUN_ABORTED",
                                                          "not judged: the run was aborted while it ran")
    if in_tool == "memory_bandwidth":
        assert by["host.cpu_stress"].verdict is Verdict.PASS  # judged before the abort, and kept
    else:
        assert "did not finish" in ended.evidence["tool_said"]  # what the tool's end said, kept as evidence
