"""A simulated fault is observed whatever the telemetry sample rate (issue 13 item 17).

Sampling sees only what a sample lands on. Real drivers also count, on their own, how long the clocks
were held down for each reason (NVML's clocks-event-reason durations); the simulated twin keeps the
same counters as its simulated time passes, and the throttle check takes them, so a thermal or
power-brake event between two samples is still seen. Above its maximum operating and slowdown
temperatures the simulated GPU enters thermal slowdown, as a real one does: `--inject gpu0:temp=95`
at `--sample-hz 0.5` used to pass."""

from __future__ import annotations

import time

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.backends.base import GpuCounters, GpuSample, REASON_BITS
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.node import SLOT_LOAD, SLOTS
from nodeqc.core.model import Verdict
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.profile import load_profile
from nodeqc.spec.selection import Selection
from nodeqc.work.telemetry import GpuTelemetry

SLOWEST_HZ = 0.1  # the lowest rate the CLI and the profiles accept


def test_the_simulated_driver_counts_throttle_time_with_no_sample_taken():
    hw = simulated_hardware("h100", [parse_fault("gpu0:temp=95")], time_scale=100)
    node = hw.mgmt.node
    start = hw.mgmt.counters(0).throttle_ns()
    node.shared[0 * SLOTS + SLOT_LOAD] = 1.0
    deadline = time.monotonic() + 5
    while hw.mgmt.counters(0).throttle_ns()["hw_thermal"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # counters read now and then, as telemetry does; sample() never called
    node.shared[0 * SLOTS + SLOT_LOAD] = 0.0
    end = hw.mgmt.counters(0).throttle_ns()
    assert start == {"sw_power_cap": 0, "sw_thermal": 0, "hw_thermal": 0, "power_brake": 0}
    assert end["sw_thermal"] > 0 and end["hw_thermal"] > 0 and end["power_brake"] == 0


def test_driver_counted_throttle_time_replaces_the_sampled_estimate():
    tel = GpuTelemetry(0)
    tel.add(0.0, GpuSample(util_pct=100, reasons=0))
    tel.add(10.0, GpuSample(util_pct=100, reasons=0))  # no sample saw the brake
    tel.counters_start = GpuCounters(throttle_ns_power_brake=1_000_000_000, throttle_ns_sw_thermal=0)
    tel.counters_end = GpuCounters(throttle_ns_power_brake=4_500_000_000, throttle_ns_sw_thermal=0)
    tel.count_throttle_from_counters()
    assert tel.throttle_s == {"power_brake": 3.5, "sw_thermal": 0.0}
    assert tel.failing_throttle_s() == 3.5
    assert sorted(tel.to_dict()["throttle_counted_by_driver"]) == ["power_brake", "sw_thermal"]


def test_counters_the_driver_does_not_keep_leave_the_sampled_estimate():
    tel = GpuTelemetry(0)
    tel.add(0.0, GpuSample(util_pct=100, reasons=REASON_BITS["hw_slowdown"]))
    tel.add(2.0, GpuSample(util_pct=100, reasons=REASON_BITS["hw_slowdown"]))
    tel.counters_start, tel.counters_end = GpuCounters(), GpuCounters()  # all NA: an older driver
    tel.count_throttle_from_counters()
    assert tel.throttle_s == {"hw_slowdown": 2.0} and tel.throttle_counted == []


@pytest.mark.slow
def test_faults_are_found_at_the_slowest_sample_rate(tmp_path):
    """The burn and the health checks at 0.1 samples a second: one round of samples lands before
    the burn and, on an unloaded machine, none in it, so the throttle check's seconds are the
    driver's counters'. The whole quick run took 70 s (43 s of CPU): its power and HBM steps wait
    for samples under load, ten real seconds each, and add nothing to what is asserted here."""
    # A burn alone loads the GPU some 26 s, short of the 40 s after which a quick run reaches the
    # fault's temperature (physics.QUICK_PEAK_LOADED_S): at 95 C it peaked at 86-87 and throttled
    # 0.3-0.5 s (a warning) since the set-ups idle as the real ones do; at 100 C, 16.7 s.
    faults = ["gpu0:temp=100", "gpu1:throttle=hw_thermal", "gpu2:throttle=power_brake", "gpu3:throttle=sw_thermal",
              "gpu4:throttle=hw_slowdown"]
    hw = simulated_hardware("hgx-h100", [parse_fault(f) for f in faults], time_scale=10)
    options = RunOptions(load_profile("hgx-h100"), create_key(tmp_path / "k.pem"), out_dir=tmp_path, quick=True,
                         sample_hz=SLOWEST_HZ, selection=Selection.parse(["stress.burn", "health"], None))
    outcome = Runner(options, hw).run()
    throttle = {r.subject: r for r in outcome.results if r.name == "health.throttle"}
    assert {s: (throttle[s].verdict, throttle[s].code) for s in ("gpu0", "gpu1", "gpu2", "gpu3")} == {
        "gpu0": (Verdict.FAIL, "THROTTLE_THERMAL"), "gpu1": (Verdict.FAIL, "THROTTLE_THERMAL"),
        "gpu2": (Verdict.FAIL, "THROTTLE_POWER_BRAKE"), "gpu3": (Verdict.FAIL, "THROTTLE_THERMAL")}
    # The healthy GPUs: with no sample under load (this rate, an unloaded machine) nothing read says
    # there was no throttling (the driver counts no HW slowdown), so not judged, never a pass of nothing.
    for s in ("gpu5", "gpu6", "gpu7"):
        assert (throttle[s].verdict, throttle[s].code) in ((Verdict.PASS, None), (Verdict.SKIP, "NO_LOAD")), s
    # NVML keeps no counter of HW slowdown: a sample may never land in it, but the clocks it cuts
    # slow the work, and the burn fails that GPU whatever the sample rate.
    burn = next(r for r in outcome.results if r.name == "stress.burn" and r.subject == "gpu4")
    assert burn.verdict is Verdict.FAIL and burn.code in ("BURN_SLOW", "THROTTLE_HW_SLOWDOWN", "CLOCKS_LOW")
    assert outcome.verdict == "FAIL" and outcome.exit_code == 1


def test_the_nvml_backend_reads_the_drivers_throttle_counters():
    import pynvml

    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.backends.nvml_replay import ReplayNvml
    from nodeqc.core.na import NA
    from nvml_descriptions import h100_device, node

    device = h100_device(0)
    fields = device["nvmlDeviceGetFieldValues"]
    fields[str(pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN)] = {
        "nvmlReturn": 0, "valueType": 3, "value": {"ullVal": 2_500_000_000}}
    fields[str(pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP)] = {
        "nvmlReturn": 0, "valueType": 3, "value": {"ullVal": 7}}
    backend = NvmlBackend(ReplayNvml(node([device])))
    backend.open()
    counted = backend.counters(0).throttle_ns()
    assert counted == {"sw_power_cap": 7, "sw_thermal": NA, "hw_thermal": 2_500_000_000, "power_brake": NA}
    # The same four alone, as the pulse test reads them at each period's bounds.
    assert backend.throttle_counters(0) == counted


def test_no_temperature_pass_from_idle_readings_alone():
    from nodeqc.backends.base import GpuInfo
    from nodeqc.checks import health

    gpu = GpuInfo(index=0, name="x", uuid="u", bus_id="b", temp_slowdown_c=90)
    idle_only = GpuTelemetry(0)
    for t in range(3):
        idle_only.add(float(t), GpuSample(temp_c=31, util_pct=0))
    r = health.temperature(gpu, idle_only, load_profile("h100"))
    assert r.verdict is Verdict.SKIP and r.code == "NO_LOAD" and "never seen under load" in r.message
    hot_idle = GpuTelemetry(0)
    hot_idle.add(0.0, GpuSample(temp_c=95, util_pct=0))
    assert health.temperature(gpu, hot_idle, load_profile("h100")).verdict is Verdict.FAIL  # a finding stands
