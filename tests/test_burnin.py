"""Burn-in: compressed on the simulated node, it finds when each kind of failure first happened,
records drift, checkpoints the journal, and keeps its records bounded."""

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.backends.base import GpuInfo
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.models import SIM_GPU_MODELS
from nodeqc.checks.burnin import MAX_WINDOWS, BurnInRecorder, judge_burn_in, merge_pairs
from nodeqc.core.model import Verdict
from nodeqc.report.envelope import verify_file
from nodeqc.report.journal import read_journal
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.profile import load_profile
from nodeqc.work.workers import STATUS_OK, Outcome, Task
from conftest import cli


@pytest.fixture(scope="module")
def burned(tmp_path_factory):
    signer = create_key(tmp_path_factory.mktemp("k") / "k.pem")
    faults = [parse_fault(f) for f in ("gpu1:bitflip", "gpu2:ecc_sbe=3", "gpu3:throttle=hw_thermal",
                                       "gpu4:pcie_replay=100")]
    hw = simulated_hardware("hgx-h100", faults, time_scale=900)
    out = tmp_path_factory.mktemp("out")
    events = []
    outcome = Runner(RunOptions(load_profile("hgx-h100"), signer, out_dir=out, quick=True, burn_in_s=4 * 3600), hw,
                     events.append).run()
    pred = verify_file(outcome.report_path, {signer.keyid: (signer.public, "t")}).predicate
    outcome.events = events
    return outcome, pred


def test_every_gpu_gets_a_burn_in_verdict(burned):
    outcome, _ = burned
    results = {r.subject: r for r in outcome.results if r.name == "burnin.stability"}
    assert set(results) == {f"gpu{i}" for i in range(8)}
    assert (results["gpu1"].verdict, results["gpu1"].code) == (Verdict.FAIL, "SDC_BURN_IN")
    assert results["gpu0"].verdict is Verdict.PASS and results["gpu0"].values["windows"].value >= 20


def test_first_failures_are_in_time_order_with_their_gpu(burned):
    _, pred = burned
    firsts = pred["burn_in"]["first_failures"]
    kinds = {f["kind"]: f["subject"] for f in firsts}
    assert kinds["silent data corruption"] == "gpu1"
    assert kinds["ecc_sbe_volatile grew"] == "gpu2"
    assert kinds["throttling"] == "gpu3"
    assert [f["t_s"] for f in firsts] == sorted(f["t_s"] for f in firsts)


def test_drift_is_recorded_from_start_to_end(burned):
    _, pred = burned
    d = pred["burn_in"]["drift"]["gpu0"]
    # Temperatures are the means of the first and last tenth of the telemetry intervals. (Whether the
    # end is warmer depends on how far the quick plan had already heated the GPU: not asserted.)
    temps = [i["temp_c"] for i in d["intervals"]]
    tenth = max(1, len(temps) // 10)
    assert d["temp_c"] == [pytest.approx(sum(temps[:tenth]) / tenth), pytest.approx(sum(temps[-tenth:]) / tenth)]
    model = SIM_GPU_MODELS["h100-sxm5-80gb"]
    assert min(d["temp_c"]) > (model.idle_temp_c + model.load_temp_c) / 2  # read under load, not at idle
    assert d["tflops"] == [model.tflops["bf16"]] * 2  # the H100 SXM5's healthy bf16 (nodeqc/core/skus.py)
    assert 0 < len(d["windows"]) <= MAX_WINDOWS and len(d["intervals"]) > 5


def test_the_journal_is_checkpointed_as_it_goes(burned):
    outcome, _ = burned
    journal = outcome.report_path.with_name(outcome.report_path.name.replace(".report.json", ".journal.jsonl"))
    checkpoints = [r for r in read_journal(journal) if r["type"] == "checkpoint"]
    assert len(checkpoints) >= 10
    assert checkpoints[-1]["burn_in"]["gpu1"]["first_sdc"] is not None
    assert [c["t"] for c in checkpoints] == sorted(c["t"] for c in checkpoints)


def test_window_lists_stay_bounded():
    rec = BurnInRecorder([GpuInfo(index=0, name="x", uuid="u", bus_id="b", slot=0)])
    for n in range(10 * MAX_WINDOWS):
        rec.add_window("gpu0", {"t_s": n, "tflops": 100.0 + n % 2, "sdc": {"count": 1} if n == 777 else None})
    windows = rec.gpus["gpu0"].windows
    assert len(windows) <= MAX_WINDOWS and windows[0]["t_s"] == 0
    assert rec.gpus["gpu0"].first_sdc["t_s"] == 777
    assert any(w["sdc"] for w in windows)  # merging keeps failures
    assert merge_pairs([{"t_s": 0, "x": 1.0, "sdc": None}, {"t_s": 5, "x": 3.0, "sdc": None}]) == [{"t_s": 0, "x": 2.0, "sdc": None}]


@pytest.mark.parametrize("end_tflops, verdict", [
    (950.0, Verdict.PASS),  # fell 5.0 %: at the warning level, not above it
    (949.0, Verdict.WARN),  # 5.1 %
    (900.0, Verdict.WARN),  # 10.0 %: at the limit
    (899.0, Verdict.FAIL),  # 10.1 %
])
def test_a_falling_matmul_rate_is_judged_at_the_profiles_drift_limit(end_tflops, verdict):
    gpu = GpuInfo(index=0, name="x", uuid="u", bus_id="b", slot=0)
    rec = BurnInRecorder([gpu])
    for n in range(10):  # the first and last tenth are one window each
        rec.add_window("gpu0", {"t_s": 60 * n, "tflops": 1000.0 if n < 9 else end_tflops, "sdc": None})
    done = Outcome(Task("matmul_burn", 0, {}, 600.0), STATUS_OK, elapsed_s=600.0)
    profile = load_profile("generic")  # max_burnin_drift_pct: warn above 5, fail above 10
    [result], section = judge_burn_in([gpu], {0: done}, rec, {}, profile, started_s=0.0, time_scale=1.0)
    assert result.verdict is verdict
    assert result.values["rate_fall_pct"].value == pytest.approx(100 * (1000 - end_tflops) / 1000)
    assert result.code == (None if verdict is Verdict.PASS else "BURN_IN_DRIFT")
    assert section["drift"]["gpu0"]["tflops"] == (1000.0, end_tflops)


UNREAD_CLOCK = ("the rate fell, and the SM clock was not read at both ends of the burn-in, so the cause is not known: "
                "re-run the burn-in with telemetry working (NVML answering); ")


@pytest.mark.parametrize("windows, end_tflops, message", [
    (10, 899.0, UNREAD_CLOCK + "matmul rate fell from start to end by 10.1 % is above the limit 10 %"),
    (10, 949.0, UNREAD_CLOCK + "matmul rate fell from start to end by 5.1 % is above the warning level 5 %"),
    (2, 899.0, UNREAD_CLOCK + "matmul rate fell from start to end by 10.1 % is above the limit 10 %"),  # two: judged
])
def test_a_drift_says_by_how_much_the_rate_fell_against_which_level(windows, end_tflops, message):
    gpu = GpuInfo(index=0, name="x", uuid="u", bus_id="b", slot=0)
    rec = BurnInRecorder([gpu])
    for n in range(windows):
        rec.add_window("gpu0", {"t_s": 60 * n, "tflops": 1000.0 if n < windows - 1 else end_tflops, "sdc": None})
    done = Outcome(Task("matmul_burn", 0, {}, 600.0), STATUS_OK, elapsed_s=600.0)
    [result], section = judge_burn_in([gpu], {0: done}, rec, {}, load_profile("generic"), started_s=0.0, time_scale=1.0)
    assert (result.code, result.message) == ("BURN_IN_DRIFT", message)
    assert section["drift"]["gpu0"]["tflops"] == (1000.0, end_tflops)


@pytest.mark.parametrize("text", ["8x", "0m", "h", "-5"])
def test_bad_burn_in_durations(text):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--burn-in", text)
    assert p.returncode == 2 and "expected a duration" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def _drifting(clock_end: float, temp_end: float, others: list | None = None):
    """Ten windows whose rate falls 20%, with telemetry intervals from 1794 MHz / 61 C to the end values."""
    from nodeqc.backends.base import GpuProcess, GpuSample
    from nodeqc.work.telemetry import GpuTelemetry

    gpu = GpuInfo(index=0, name="x", uuid="u", bus_id="b", slot=0)
    rec = BurnInRecorder([gpu])
    for n in range(10):
        rec.add_window("gpu0", {"t_s": 60 * n, "tflops": 740.0 if n < 9 else 592.0, "sdc": None})
        tel = GpuTelemetry(0)
        late = n == 9
        tel.add(0.0, GpuSample(util_pct=100, temp_c=temp_end if late else 61, sm_clock_mhz=clock_end if late else 1794,
                               power_w=650))
        rec.add_interval(60.0 * n, {"gpu0": tel})
    whole = GpuTelemetry(0)
    for t, p in others or []:
        whole.add_processes(t, [p])
    done = Outcome(Task("matmul_burn", 0, {}, 600.0), STATUS_OK, elapsed_s=600.0)
    [result], _ = judge_burn_in([gpu], {0: done}, rec, {0: whole}, load_profile("generic"), started_s=100.0,
                                time_scale=1.0)
    return result, GpuProcess


def test_burn_in_drift_is_diagnosed_from_its_clocks_and_temperatures():
    hot, _ = _drifting(1500, 88)
    assert hot.verdict is Verdict.FAIL and hot.code == "THROTTLE_THERMAL"
    assert hot.message.startswith("the SM clock fell from 1,794 MHz to 1,500 MHz as the temperature rose from 61 to 88 C")
    assert hot.evidence["diagnosis"]["measure_code"] == "BURN_IN_DRIFT"
    steady, GpuProcess = _drifting(1794, 64)
    assert steady.code == "BURN_IN_DRIFT" and "the GPU is degrading under sustained load (RMA)" in steady.message
    # A process seen before the burn-in began is not blamed; one during it is.
    before, _ = _drifting(1794, 64, [(50.0, GpuProcess(7, "old", None))])
    assert before.code == "BURN_IN_DRIFT"
    during, _ = _drifting(1794, 64, [(300.0, GpuProcess(4242, "python3", 2 ** 30))])
    assert during.verdict is Verdict.ERROR and during.code == "GPU_IN_USE" and "pid 4242 (python3, 1.00 GiB)" in during.message


def test_an_interval_of_idle_readings_is_not_the_end_of_the_burn_in():
    """The interval that closes as the work stops (workers exiting, memory released) can hold only
    idle readings, on a real node as in a compressed run. Those are not how the burn-in ended: a
    healthy GPU whose rate fell would otherwise be told its clock fell (CLOCKS_LOW) and cooled."""
    from nodeqc.backends.base import GpuSample
    from nodeqc.work.telemetry import GpuTelemetry

    gpu = GpuInfo(index=0, name="x", uuid="u", bus_id="b", slot=0)
    rec = BurnInRecorder([gpu])
    for n in range(10):
        rec.add_window("gpu0", {"t_s": 60 * n, "tflops": 740.0 if n < 9 else 592.0, "sdc": None})
        tel = GpuTelemetry(0)
        tel.add(0.0, GpuSample(util_pct=100, temp_c=70, sm_clock_mhz=1794, power_w=650))
        if n == 9:  # the last loaded interval ends with the work stopping: its idle readings are left out
            tel.add(1.0, GpuSample(util_pct=0, temp_c=40, sm_clock_mhz=345, power_w=90))
        rec.add_interval(60.0 * n, {"gpu0": tel})
    idle = GpuTelemetry(0)  # the interval that closed after the work: nothing under load
    for t in range(3):
        idle.add(float(t), GpuSample(util_pct=0, temp_c=38, sm_clock_mhz=345, power_w=70))
    rec.add_interval(600.0, {"gpu0": idle})
    assert len(rec.gpus["gpu0"].intervals) == 10
    assert rec.gpus["gpu0"].intervals[-1] == {"t_s": 540.0, "temp_c": 70.0, "sm_clock_mhz": 1794, "power_w": 650.0,
                                              "throttle_s": 0.0}
    done = Outcome(Task("matmul_burn", 0, {}, 600.0), STATUS_OK, elapsed_s=600.0)
    [result], section = judge_burn_in([gpu], {0: done}, rec, {}, load_profile("generic"), started_s=0.0, time_scale=1.0)
    assert section["drift"]["gpu0"]["sm_clock_mhz"] == (1794, 1794)
    assert section["drift"]["gpu0"]["temp_c"] == (70.0, 70.0)
    assert result.code == "BURN_IN_DRIFT" and result.evidence["diagnosis"]["cause"] == "defect"
    assert "clocks holding" in result.message


# ---------------------------------------------------------------- the verdict in full, in process (issue 18 §5)

def _three_gpus():
    """gpu0: a wrong product, throttling, an XID, a counter and the bus lost; gpu1: its worker
    crashed; gpu2: clean, rising slightly, with another process seen during the burn-in."""
    from nodeqc.backends.base import GpuSample
    from nodeqc.work.telemetry import GpuTelemetry
    from nodeqc.work.workers import STATUS_CRASH

    gpus = [GpuInfo(index=i, name="x", uuid=f"u{i}", bus_id=f"b{i}", slot=i) for i in range(3)]
    rec = BurnInRecorder(gpus)
    for n in range(20):
        rec.add_window("gpu0", {"t_s": 30 * n, "tflops": 700.0 + n % 2,
                                "sdc": {"count": 2, "dtype": "bf16"} if n in (4, 6) else None})
        rec.add_window("gpu2", {"t_s": 30 * n, "tflops": 700.04 + 0.5 * n, "sdc": None})
        for g in ("gpu0", "gpu2"):
            tel = GpuTelemetry(0)
            tel.add(0.0, GpuSample(util_pct=100, temp_c=60.04 + n, sm_clock_mhz=1980.4 - n, power_w=650.04 + n))
            # a GPU the burn-in does not run, and one without samples, are passed over
            rec.add_interval(30.0 * n + 0.04, {g: tel, "gpu9": tel, "gpu1": GpuTelemetry(1)})
    t0 = GpuTelemetry(0)
    t0.throttle_onsets.kept = [{"t_s": 110.0, "reasons": ["sw_power_cap"]},  # not a failing reason
                               {"t_s": 150.0, "reasons": ["sw_power_cap", "hw_slowdown"]},
                               {"t_s": 160.0, "reasons": ["hw_thermal"]}]
    t0.xids.kept = [{"t_s": 400.0, "code": 79}, {"t_s": 390.0, "code": 13}]  # the first kept is the first seen
    t0.counter_first_change = {"nvlink_active": 101.0, "ecc_sbe": 250.0}
    t0.lost_at_s = 500.0
    t2 = GpuTelemetry(2)
    t2.other_processes = {7: {"pid": 7, "name": "old", "used_bytes": None, "last_t_s": 99.0},  # before: not blamed
                          8: {"pid": 8, "name": "python3", "used_bytes": 2 ** 30, "last_t_s": 100.0}}
    outcomes = {i: Outcome(Task("matmul_burn", i, {}, 600.0), STATUS_OK, elapsed_s=600.0) for i in (0, 2)}
    outcomes[1] = Outcome(Task("matmul_burn", 1, {}, 600.0), STATUS_CRASH, detail="segfault\nat 0x0", elapsed_s=30.0)
    return gpus, rec, outcomes, {0: t0, 2: t2}


def test_burn_in_verdicts_and_first_failures_in_full():
    gpus, rec, outcomes, telemetry = _three_gpus()
    results, section = judge_burn_in(gpus, outcomes, rec, telemetry, load_profile("generic"), started_s=100.0,
                                     time_scale=10.0)
    r0, r1, r2 = results
    assert (r0.name, r0.subject, r0.verdict, r0.code, r0.key) == ("burnin.stability", "gpu0", Verdict.FAIL,
                                                                  "SDC_BURN_IN", "rate_fall_pct")
    assert r0.message == "a known-answer product came back wrong 120 s into the burn-in (2 element(s))"
    assert {k: (v.value, v.unit) for k, v in r0.values.items()} == {
        "windows": (20, ""), "tflops_start": (700.5, "TFLOP/s"), "tflops_end": (700.5, "TFLOP/s"),
        "rate_fall_pct": (0.0, "%"), "temp_start": (60.5, "C"), "temp_end": (78.5, "C")}
    assert [t.name for t in r0.thresholds] == ["max_burnin_drift_pct"]
    assert (r1.name, r1.subject, r1.verdict, r1.code, r1.message) == ("burnin.stability", "gpu1", Verdict.FAIL,
                                                                      "WORKER_CRASH", "crashed: segfault")
    assert (r2.subject, r2.verdict, r2.code) == ("gpu2", Verdict.PASS, None)
    # means of the first and last tenth (two windows of twenty): 700.29 and 709.29, rounded as shown; a
    # rate that rose is no fall
    assert {k: v.value for k, v in r2.values.items()} == {
        "windows": 20, "tflops_start": 700.3, "tflops_end": 709.3, "rate_fall_pct": 0.0, "temp_start": 60.5,
        "temp_end": 78.5}
    assert r2.message == ("20 windows: 700.3 -> 709.3 TFLOP/s, 60 -> 78 C, results exact; another process used "
                          "this GPU during the burn-in: pid 8 (python3, 1.00 GiB)")
    # every first failure on the run's clock, in time order (a tie in the GPUs' order)
    assert section["first_failures"] == [
        {"kind": "throttling", "t_s": 150.0, "subject": "gpu0", "detail": "sw_power_cap, hw_slowdown"},
        {"kind": "silent data corruption", "t_s": 220.0, "subject": "gpu0", "detail": "2 wrong element(s)"},
        {"kind": "ecc_sbe grew", "t_s": 250.0, "subject": "gpu0", "detail": "ecc_sbe"},
        {"kind": "XID", "t_s": 400.0, "subject": "gpu0", "detail": "XID 79"},
        {"kind": "worker crash", "t_s": 400.0, "subject": "gpu1", "detail": "segfault"},  # 100 + 30 s x 10
        {"kind": "GPU lost", "t_s": 500.0, "subject": "gpu0", "detail": "fell off the bus"}]
    drift = section["drift"]
    assert {s: (d["tflops"], d["temp_c"], d["sm_clock_mhz"]) for s, d in drift.items()} == {
        "gpu0": ((700.5, 700.5), (60.5, 78.5), (1979.5, 1961.5)),  # intervals keep 0.1 C and whole MHz
        "gpu1": (None, None, None),
        "gpu2": ((pytest.approx(700.29), pytest.approx(709.29)), (60.5, 78.5), (1979.5, 1961.5))}
    assert drift["gpu0"]["windows"] is rec.gpus["gpu0"].windows and drift["gpu2"]["intervals"] is rec.gpus["gpu2"].intervals
    assert rec.gpus["gpu0"].intervals[1] == {"t_s": 30.0, "temp_c": 61.0, "sm_clock_mhz": 1979, "power_w": 651.0,
                                             "throttle_s": 0.0}


def test_the_earliest_failure_of_a_kind_wins_across_gpus():
    gpus, rec, outcomes, telemetry = _three_gpus()
    rec.add_window("gpu2", {"t_s": 700, "tflops": 700.0, "sdc": {"count": 5}})  # later than gpu0's
    outcomes[0] = Outcome(Task("matmul_burn", 0, {}, 600.0), "crash", detail="", elapsed_s=50.0)
    results, section = judge_burn_in(gpus, outcomes, rec, telemetry, load_profile("generic"), started_s=100.0,
                                     time_scale=10.0)
    firsts = {f["kind"]: f for f in section["first_failures"]}
    assert firsts["silent data corruption"]["subject"] == "gpu0"
    assert firsts["worker crash"] == {"kind": "worker crash", "t_s": 400.0, "subject": "gpu1", "detail": "segfault"}
    assert results[0].code == "WORKER_CRASH" and results[2].code == "SDC_BURN_IN"
    assert results[2].message == "a known-answer product came back wrong 700 s into the burn-in (5 element(s))"


def test_a_burn_in_of_one_window_shows_no_drift_and_is_not_judged():
    """Before, one window passed as "too short to judge drift": a stability check that showed none."""
    gpu = GpuInfo(index=0, name="x", uuid="u", bus_id="b", slot=0)
    rec = BurnInRecorder([gpu])
    rec.add_window("gpu0", {"t_s": 0, "tflops": 700.0, "sdc": None})
    done = Outcome(Task("matmul_burn", 0, {}, 60.0), STATUS_OK, elapsed_s=60.0)
    [r], section = judge_burn_in([gpu], {0: done}, rec, {}, load_profile("generic"), 0.0, 1.0)
    assert (r.verdict, r.code, r.message) == (
        Verdict.ERROR, "BURN_IN_SHORT", "the burn-in recorded 1 window(s), and drift needs 2: its stability was not shown")
    assert {k: v.value for k, v in r.values.items()} == {"windows": 1} and section["first_failures"] == []
    rec.add_window("gpu0", {"t_s": 60, "tflops": 699.0, "sdc": None})
    [r], _ = judge_burn_in([gpu], {0: done}, rec, {}, load_profile("generic"), 0.0, 1.0)
    assert (r.verdict, r.message) == (Verdict.PASS, "2 windows: 700.0 -> 699.0 TFLOP/s, results exact")
    # Windows that carry no rate show no drift either.
    rec = BurnInRecorder([gpu])
    for t in (0, 60):
        rec.add_window("gpu0", {"t_s": t, "sdc": None})
    [r], _ = judge_burn_in([gpu], {0: done}, rec, {}, load_profile("generic"), 0.0, 1.0)
    assert (r.verdict, r.code, r.message) == (Verdict.ERROR, "BURN_IN_SHORT",
                                              "no matmul rate in its 2 windows: its drift was not shown")


@pytest.mark.parametrize("args, said", [
    (["--burn-in", "1s"], "--burn-in 1s: a burn-in shows drift from its first window to its last, 2 windows of "
                          "at least 60 s; give at least 2m"),
    (["--burn-in", "119s"], "--burn-in 119s: "),
])
def test_a_burn_in_too_short_to_show_drift_is_refused_before_any_work(args, said, tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path / "o"), *args)
    assert p.returncode == 2 and said in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not any((tmp_path / "o").rglob("*"))  # nothing ran, no report
    profile = tmp_path / "short.toml"
    profile.write_text('extends = "h100"\ndescription = "x"\n[run]\nburn_in_s = 30\n')
    p = cli("--headless", "--profile", str(profile), "--simulate", "h100", "--quick", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "[run] burn_in_s = 30 in the profile: a burn-in shows drift" in p.stderr


def test_the_shortest_burn_in_accepted_records_the_windows_drift_needs():
    from nodeqc.backends.sim.compute import SimDevice
    from nodeqc.backends.sim.node import SimNode
    from nodeqc.backends.sim.scenario import load_scenario
    from nodeqc.checks.burnin import BURN_IN_MIN_S, BURN_IN_MIN_WINDOWS, BURN_IN_WINDOW_MIN_S
    from nodeqc.work import workloads

    class Quiet:
        def progress(self, *a, **k):
            pass

    # 300x: the 120 s burn-in takes 0.4 s; each window's checks (known answer, copies) may take up to
    # 0.24 real seconds on a loaded host before the second window is lost (at 1e4x, 7 ms lost it in CI).
    device = SimDevice(SimNode(load_scenario("h100"), [], time_scale=300).compute_spec(), 0)
    r = workloads.burn_in(device, {"seconds": BURN_IN_MIN_S, "window_s": BURN_IN_WINDOW_MIN_S, "dtype": "bf16",
                                   "seed": 1, "hbm_bytes": 1 << 20, "pcie_bytes": 1 << 20}, Quiet())
    assert r["windows"] >= BURN_IN_MIN_WINDOWS and r["seconds"] >= BURN_IN_MIN_S


def test_a_burn_in_judges_pcie_replays_by_its_worst_ten_minutes(burned):
    """Four hours are judged span by span from the counters read as the run went: gpu4's 100 replays
    as its load began fail in the span that holds them, the healthy GPUs' spans pass, and the whole
    count of each is said beside."""
    outcome, pred = burned
    replays = {r.subject: r for r in outcome.results if r.name == "health.pcie_replay"}
    assert (replays["gpu4"].verdict, replays["gpu4"].code, replays["gpu4"].key) == (Verdict.FAIL, "PCIE_REPLAY",
                                                                                   "worst_span")
    assert replays["gpu4"].values["worst_span"].value == replays["gpu4"].values["growth"].value == 100
    assert "in its worst 10 min" in replays["gpu4"].message and "; 100 in all, " in replays["gpu4"].message
    assert {r.verdict for s, r in replays.items() if s != "gpu4"} == {Verdict.PASS}
    assert {r.key for r in replays.values()} == {"worst_span"}
    spans = [g["pcie_replay_worst_span"] for g in pred["telemetry"]["gpus"].values()]
    assert all(s["covered_s"] >= 4 * 3600 and s["span_s"] == 600 for s in spans), spans


def test_snapshot_keeps_the_latest_of_each_gpu():
    gpus, rec, _, _ = _three_gpus()
    snap = rec.snapshot()
    assert snap["gpu0"] == {"windows": 20, "last_window": {"t_s": 570, "tflops": 701.0, "sdc": None},
                            "last_interval": {"t_s": 570.0, "temp_c": 79.0, "sm_clock_mhz": 1961, "power_w": 669.0,
                                              "throttle_s": 0.0},
                            "first_sdc": {"t_s": 120, "count": 2, "dtype": "bf16"}}
    assert snap["gpu1"] == {"windows": 0, "last_window": None, "last_interval": None, "first_sdc": None}


def test_merging_windows_averages_numbers_only_and_keeps_an_odd_last_one():
    a = {"t_s": 0, "tflops": 1.0, "n": 1, "label": "x", "sdc": None}
    b = {"t_s": 9, "tflops": 2.001, "n": 4, "label": "y", "sdc": {"count": 1}}
    c = {"t_s": 20, "tflops": 5.0, "sdc": None}
    assert merge_pairs([a, b, c]) == [{"t_s": 0, "tflops": 1.5, "n": 2.5, "sdc": {"count": 1}}, c]
    assert merge_pairs([b, a]) == [{"t_s": 9, "tflops": 1.5, "n": 2.5, "sdc": {"count": 1}}]
    assert merge_pairs([{"t_s": 0, "x": 1.0, "sdc": None}, {"t_s": 1, "sdc": None}]) == [{"t_s": 0, "sdc": None}]


def test_a_burn_in_says_how_it_stands_at_a_steady_interval(burned):
    """A 4-hour burn-in is not silent until its end: at each checkpoint (at most 5 minutes of its
    clock apart) a status line with elapsed and left, every GPU's rate, temperature and power, and
    the GPUs that returned wrong results so far."""
    outcome, _ = burned
    lines = [e.text for e in outcome.events if getattr(e, "level", None) == "progress"]
    assert len(lines) >= 40, len(lines)  # 4 h in checkpoints of 4h/50 = 4.8 min
    first, last = lines[0], lines[-1]
    assert first.startswith("burn-in ") and " of 4h00m (" in first and " left): gpu0 " in first
    assert all(f"gpu{i} " in last for i in range(8)) and " TFLOP/s " in last and " C " in last and " W" in last
    assert last.endswith("wrong results so far: gpu1")  # the planted bit flip, named as soon as it is seen
    import re

    def minutes(text):
        h, m = re.fullmatch(r"(?:(\d+)h)?(\d+)m", text).groups()
        return int(h or 0) * 60 + int(m)

    elapsed = [minutes(line.split()[1]) for line in lines]
    gaps = sorted(b - a for a, b in zip(elapsed, elapsed[1:]))
    # Checkpoints come with the workers' progress (10 a second of real time); at 900x compression a
    # second's stall of a loaded machine is 15 minutes of the burn-in's clock, so only the typical
    # gap is held to the interval.
    assert elapsed == sorted(elapsed) and gaps[len(gaps) // 2] <= 6, gaps


@pytest.mark.parametrize("ran, windows, said", [
    (3.0, 0, "the burn-in ran 3.0 s of its 28800 s in 0 window(s)"),
    (25000.0, 40, "the burn-in ran 25000.0 s of its 28800 s in 40 window(s)"),
    (float("nan"), 40, "the burn-in ran nan s of its 28800 s in 40 window(s)"),
    (28800.0, 0, "the burn-in recorded no window"),
])
def test_a_burn_in_that_did_not_run_its_time_is_not_judged(ran, windows, said):
    """2026-11-28 audit: a worker that came back after 3 s of an 8 h burn-in, with no window, passed
    as "too short to judge drift"."""
    gpu = GpuInfo(index=0, name="x", uuid="u", bus_id="b", slot=0)
    rec = BurnInRecorder([gpu])
    for k in range(windows):
        rec.add_window("gpu0", {"t_s": 600 * k, "tflops": 700.0, "sdc": None})
    done = Outcome(Task("burn_in", 0, {"seconds": 28800.0}, 28800.0), STATUS_OK,
                   {"seconds": ran, "windows": windows, "dtype": "fp16"}, elapsed_s=ran)
    [r], _ = judge_burn_in([gpu], {0: done}, rec, {}, load_profile("generic"), 0.0, 1.0)
    assert (r.verdict, r.code, r.message) == (Verdict.ERROR, "BURN_IN_SHORT", f"{said}: its stability was not shown")
    whole = Outcome(Task("burn_in", 0, {"seconds": 28800.0}, 28800.0), STATUS_OK,
                    {"seconds": 28830.0, "windows": 48, "dtype": "fp16"}, elapsed_s=28830.0)
    if windows:
        assert judge_burn_in([gpu], {0: whole}, rec, {}, load_profile("generic"), 0.0, 1.0)[0][0].verdict is Verdict.PASS
