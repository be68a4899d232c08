"""Power: DCGM-style targeted power (every GPU held at its limit) and the pulse test (load swung
between full and idle, in phase, from 20 ms to 1 s periods). Verdicts tested directly at their edges
on hand-built telemetry, the workload's timing on the simulated device, and the faults end to end."""

import json
import math

import pytest

from nodeqc.backends.base import REASON_BITS, GpuInfo, GpuSample
from nodeqc.backends.sim_compute import SimDevice
from nodeqc.backends.simulated import SimNode, load_scenario
from nodeqc.checks.stress import POWER_LOADED_SAMPLES, PULSE_PERIODS_S, judge_power, judge_pulse
from nodeqc.faults import parse_fault
from nodeqc.model import Verdict
from nodeqc.profile import load_profile
from nodeqc.telemetry import GpuTelemetry
from nodeqc.workers import Outcome, Task
from nodeqc.workloads import power_pulse

H100 = load_profile("h100")
GPU = GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-x", bus_id="0000:1b:00.0", slot=0)
SPANS = [{"period_s": 0.0, "start_s": 7.0, "end_s": 9.5, "cycles": 0, "duty": 1.0},
         {"period_s": 0.02, "start_s": 10.0, "end_s": 12.0, "cycles": 100, "duty": 0.5},
         {"period_s": 0.1, "start_s": 12.1, "end_s": 14.1, "cycles": 20, "duty": 0.5},
         {"period_s": 1.0, "start_s": 15.0, "end_s": 17.0, "cycles": 2, "duty": 0.5}]


def ok(result, task=None):
    return Outcome(task or Task("x", 0, {}, 1.0), "ok", result, elapsed_s=1.0)


def window(samples):
    tel = GpuTelemetry(0)
    for t, s in samples:
        tel.add(t, s)
    return tel


def sample(reasons=0, power=600.0, util=100, limit=700.0):
    return GpuSample(temp_c=60, power_w=power, power_limit_w=limit, sm_clock_mhz=1980, util_pct=util, reasons=reasons)


# ---------------------------------------------------------------- the pulse verdict

@pytest.mark.parametrize("t, reason, verdict, period_ms", [
    (11.0, "power_brake", Verdict.FAIL, 20),
    (10.0, "hw_slowdown", Verdict.FAIL, 20),  # the first instant of a period is inside it
    (14.1, "power_brake", Verdict.FAIL, 100),  # and the last
    (14.5, "power_brake", Verdict.PASS, None),  # between periods: not the swings' doing
    (16.0, "sw_power_cap", Verdict.PASS, None),  # the power cap under load is normal
    (16.0, "sw_thermal", Verdict.PASS, None),  # heat is health.throttle's, not the transients'
])
def test_pulse_attributes_throttling_to_the_period_it_happened_in(t, reason, verdict, period_ms):
    tel = window([(9.0, sample()), (t, sample(REASON_BITS[reason])), (t + 0.01, sample())])
    r = judge_pulse([GPU], {0: ok({"periods": SPANS})}, {0: tel}, H100)[0]
    assert r.verdict is verdict
    if verdict is Verdict.FAIL:
        assert r.code == "POWER_PULSE_THROTTLE" and f"at the {period_ms} ms period" in r.message
        assert r.values["fastest_failing_period_ms"].value == period_ms


def test_pulse_names_every_failing_period_and_the_fastest_as_the_key_figure():
    tel = window([(9.0, sample()), (13.0, sample(REASON_BITS["power_brake"])), (13.5, sample()),
                  (16.0, sample(REASON_BITS["hw_slowdown"] | REASON_BITS["power_brake"]))])
    r = judge_pulse([GPU], {0: ok({"periods": SPANS})}, {0: tel}, H100)[0]
    assert r.message == ("clocks cut while the load swung: power brake at the 100 ms period; "
                         "HW slowdown, power brake at the 1000 ms period")
    assert r.values["fastest_failing_period_ms"].value == 100


def test_throttling_already_seen_under_steady_load_is_not_blamed_on_the_swings():
    """A GPU in HW slowdown whenever loaded shows it again at each burst: health.throttle judges
    that; a power brake that only the swings bring still fails."""
    hw, brake = REASON_BITS["hw_slowdown"], REASON_BITS["power_brake"]
    tel = window([(7.5, sample(hw)), (9.6, sample(util=0)), (11.0, sample(hw)), (11.1, sample(util=0)),
                  (16.0, sample(hw | brake))])
    r = judge_pulse([GPU], {0: ok({"periods": SPANS})}, {0: tel}, H100)[0]
    assert r.verdict is Verdict.FAIL and r.message == "clocks cut while the load swung: power brake at the 1000 ms period"
    calm = window([(7.5, sample(hw)), (9.6, sample(util=0)), (11.0, sample(hw))])
    assert judge_pulse([GPU], {0: ok({"periods": SPANS})}, {0: calm}, H100)[0].verdict is Verdict.PASS


def test_pulse_reports_the_power_swing_it_saw():
    tel = window([(10.5, sample(power=120.0, util=0)), (11.0, sample(power=951.0))])
    r = judge_pulse([GPU], {0: ok({"periods": SPANS})}, {0: tel}, H100)[0]
    assert r.verdict is Verdict.PASS  # 951 W against a 700 W limit was measured on a healthy H100
    assert (r.values["power_min_w"].value, r.values["power_max_w"].value) == (120.0, 951.0)


def test_a_gpu_lost_under_the_swings_fails_as_lost():
    lost = Outcome(Task("pulse", 0, {}, 1.0), "lost", None, "GPU has fallen off the bus", elapsed_s=3.0)
    r = judge_pulse([GPU], {0: lost}, {0: window([])}, H100)[0]
    assert (r.verdict, r.code) == (Verdict.FAIL, "GPU_LOST")


# ---------------------------------------------------------------- targeted power (h100: fail < 0.75, warn < 0.80)

@pytest.mark.parametrize("watts, verdict", [(560.0, Verdict.PASS), (559.3, Verdict.WARN), (525.0, Verdict.WARN),
                                            (524.3, Verdict.FAIL)])
def test_targeted_power_at_dcgms_floor(watts, verdict):
    tel = window([(0.0, sample(power=watts)), (1.0, sample(power=watts))])
    r = judge_power([GPU], {0: ok({"seconds": 10})}, {0: tel}, H100)[0]
    expected = {525.0: 0.75, 560.0: 0.8, 559.3: 0.799, 524.3: 0.749}[watts]
    assert r.values["power_fraction"].value == expected
    assert r.verdict is verdict and (r.code == "POWER_TARGET_LOW") == (verdict is not Verdict.PASS)


def test_targeted_power_without_readings_says_so():
    # Telemetry never read the GPU under load (no sample at all, or only idle ones): the power test
    # has shown nothing, and says why; the run could not qualify the node (exit 2), never a silent pass.
    for seen, tel in ((0, window([])), (2, window([(0.0, sample(util=0)), (1.0, sample(util=3))]))):
        r = judge_power([GPU], {0: ok({"seconds": 10})}, {0: tel}, H100)[0]
        assert (r.verdict, r.code) == (Verdict.ERROR, "POWER_NOT_READ")
        assert r.message == (f"telemetry read no sample of this GPU under load during the power test ({seen} "
                             "reading(s) in all): NVML answered too slowly; not judged")
    # Under load, but NVML reports no power for this GPU (NotSupported): nothing to judge it by.
    no_power = window([(0.0, sample(power=None)), (1.0, sample(power=None))])
    r = judge_power([GPU], {0: ok({"seconds": 10})}, {0: no_power}, H100)[0]
    assert r.verdict is Verdict.SKIP and r.message == "no power readings under load"


class SlowNvml:
    """NVML that takes `delay_s` to answer each GPU's sample (many GPUs, a driver in trouble)."""

    def __init__(self, inner, delay_s):
        self.inner, self.delay_s = inner, delay_s

    def sample(self, index):
        import time

        time.sleep(self.delay_s)
        return self.inner.sample(index)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _power_run(tmp_path, monkeypatch, loaded_samples):
    """stress.power on a one-GPU simulated H100 whose 10 s run in about 11 ms of real time (900x),
    sampled at 4 Hz by an NVML that takes 0.4 s a reading."""
    import dataclasses

    from nodeqc.backends import simulated_hardware
    from nodeqc.checks import stress
    from nodeqc.keys import create_key
    from nodeqc.runner import RunOptions, Runner
    from nodeqc.selection import Selection

    plan = [dataclasses.replace(s, loaded_samples=loaded_samples) if s.name == "stress.power" else s
            for s in stress.PLAN]
    monkeypatch.setattr(stress, "PLAN", plan)
    hw = simulated_hardware("h100", [], time_scale=900)
    hw = dataclasses.replace(hw, mgmt=SlowNvml(hw.mgmt, 0.4))
    options = RunOptions(load_profile("h100"), create_key(tmp_path / "k.pem"), out_dir=tmp_path / "out", quick=True,
                         selection=Selection(only=("stress.power",)))
    outcome = Runner(options, hw).run()
    return next(r for r in outcome.results if r.name == "stress.power")


@pytest.mark.slow
def test_a_slow_nvml_poll_still_reads_the_power_test_under_load(tmp_path, monkeypatch):
    """The load lasts until the sampler, at the pace it really keeps, has read it under load: a slow
    NVML (or a compressed run on a loaded machine) cannot leave the power test without readings."""
    r = _power_run(tmp_path, monkeypatch, POWER_LOADED_SAMPLES)
    assert r.verdict is Verdict.PASS and r.values["power_fraction"].value >= 0.8, r.message
    # Without the wait the same load is over before the sampler reads it: the test says it could not judge.
    (tmp_path / "without").mkdir()
    missed = _power_run(tmp_path / "without", monkeypatch, 0)
    assert (missed.verdict, missed.code) == (Verdict.ERROR, "POWER_NOT_READ"), missed.message


def test_the_sampler_knows_the_pace_it_really_keeps():
    """1/hz when NVML answers at once; the time a round takes when it does not."""
    import time

    from nodeqc.backends import simulated_hardware
    from nodeqc.telemetry import UTIL_WINDOW_S, TelemetrySampler

    hw = simulated_hardware("h100", [], time_scale=1)
    gpus = hw.mgmt.gpus()
    for mgmt, low, high in ((hw.mgmt, 0.25, 0.5), (SlowNvml(hw.mgmt, 0.3), 0.3, 1.0)):
        sampler = TelemetrySampler(mgmt, gpus, hw.clock, hw.clock.now(), 4, None)
        assert sampler.poll_period_s() == 0.25  # nothing measured yet: the rate asked for
        sampler.start()
        try:
            time.sleep(1.5)
            assert low <= sampler.poll_period_s() <= high
            assert sampler.wall_s_to_see(4) == pytest.approx(UTIL_WINDOW_S + 4 * sampler.poll_period_s(), abs=0.05)
        finally:
            sampler.stop()


def test_the_plain_load_lasts_its_real_time_floor_however_compressed_the_clock():
    import time

    from nodeqc.workloads import burn

    n = SimNode(load_scenario("h100"), [], time_scale=900)
    dev = SimDevice(n.compute_spec(), 0)
    start = time.monotonic()
    r = burn(dev, {"seconds": 10, "min_wall_s": 0.5}, Progress())
    assert time.monotonic() - start >= 0.5 and r["seconds"] >= 10
    start = time.monotonic()
    burn(dev, {"seconds": 10}, Progress())  # no floor: 10 s of the run's clock, about 11 ms of real time
    assert time.monotonic() - start < 0.5


# ---------------------------------------------------------------- the workload on the simulated device

class Progress:
    def progress(self, fraction, **figures):
        assert 0 <= fraction <= 1


def test_pulse_bursts_start_on_period_boundaries_and_cover_each_period():
    n = SimNode(load_scenario("hgx-h100"), [], time_scale=1)
    dev = SimDevice(n.compute_spec(), 0)
    t0 = dev.clock.now() - 0.37  # the run started a little before this step
    r = power_pulse(dev, {"periods_s": [0.02, 0.1], "seconds_per_period": 0.4, "run_t0": t0, "seed": 1}, Progress())
    spans = r["periods"]
    assert [p["period_s"] for p in spans] == [0.0, 0.02, 0.1]  # the steady control first
    assert spans[0]["end_s"] - spans[0]["start_s"] >= 0.4
    for p in spans[1:]:
        boundary = p["start_s"] / p["period_s"]
        assert math.isclose(boundary, round(boundary), abs_tol=1e-6)  # shared by every GPU's worker
        assert p["end_s"] - p["start_s"] >= 0.4 - 1e-3  # rounded to milliseconds
        assert 0.5 * 0.4 / p["period_s"] <= p["cycles"] <= 0.4 / p["period_s"] + 1
        assert 0 < p["duty"] <= 1
    assert n.shared[3] == 0  # the pulse marker is cleared afterwards


# ---------------------------------------------------------------- end to end on the simulated node

def _checks(p):
    path = p.stdout.strip().splitlines()[-1]
    import base64

    return json.loads(base64.b64decode(json.loads(open(path).read())["payload"]))["predicate"]["checks"]


@pytest.mark.slow
def test_transient_brake_fails_the_pulse_test_on_that_gpu_only(tmp_path, run_cli):
    # 20 Hz: each 2 s span (0.2 s of real time at the scenario's compression) gets several samples.
    p = run_cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--quick", "--sample-hz", "20",
                "--only", "stress.power_pulse,stress.power", "--inject", "gpu2:transient_brake=20",
                "--inject", "gpu5:power=400", "--out", str(tmp_path))
    bad = {(c["name"], c["subject"], c["code"]) for c in _checks(p) if c["verdict"] != "pass"}
    assert bad == {("stress.power_pulse", "gpu2", "POWER_PULSE_THROTTLE"), ("stress.power", "gpu5", "POWER_TARGET_LOW")}
    pulse = next(c for c in _checks(p) if c["name"] == "stress.power_pulse" and c["subject"] == "gpu2")
    assert "at the 20 ms period" in pulse["message"] and p.returncode == 1
