"""Burn-in: compressed on the simulated node, it finds when each kind of failure first happened,
records drift, checkpoints the journal, and keeps its records bounded."""

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.checks.burnin import MAX_WINDOWS, BurnInRecorder, judge_burn_in, merge_pairs
from nodeqc.backends.base import GpuInfo
from nodeqc.backends.sim_models import SIM_GPU_MODELS
from nodeqc.faults import parse_fault
from nodeqc.journal import read_journal
from nodeqc.keys import create_key
from nodeqc.model import Verdict
from nodeqc.profile import load_profile
from nodeqc.report import verify_file
from nodeqc.runner import RunOptions, Runner
from nodeqc.workers import STATUS_OK, Outcome, Task
from conftest import cli


@pytest.fixture(scope="module")
def burned(tmp_path_factory):
    signer = create_key(tmp_path_factory.mktemp("k") / "k.pem")
    faults = [parse_fault(f) for f in ("gpu1:bitflip", "gpu2:ecc_sbe=3", "gpu3:throttle=hw_thermal")]
    hw = simulated_hardware("hgx-h100", faults, time_scale=900)
    out = tmp_path_factory.mktemp("out")
    outcome = Runner(RunOptions(load_profile("hgx-h100"), signer, out_dir=out, quick=True, burn_in_s=4 * 3600), hw).run()
    pred = verify_file(outcome.report_path, {signer.keyid: (signer.public, "t")}).predicate
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
    assert d["tflops"] == [model.tflops["bf16"]] * 2  # the H100 SXM5's healthy bf16 (nodeqc/skus.py)
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


@pytest.mark.parametrize("text", ["8x", "0m", "h", "-5"])
def test_bad_burn_in_durations(text):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--burn-in", text)
    assert p.returncode == 2 and "expected a duration" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def _drifting(clock_end: float, temp_end: float, others: list | None = None):
    """Ten windows whose rate falls 20%, with telemetry intervals from 1794 MHz / 61 C to the end values."""
    from nodeqc.backends.base import GpuProcess, GpuSample
    from nodeqc.telemetry import GpuTelemetry

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
    from nodeqc.telemetry import GpuTelemetry

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
