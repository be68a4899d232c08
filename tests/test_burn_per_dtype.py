"""The burn judged per dtype: each dtype's span, its clock, power and throttling in the evidence, and
the diagnosis of a slow dtype at its own clock at the power limit. Re-judges the real quick burns of
an H100 SXM5 and an H200 SXM (shared/measurements/2026-11-26, copied into
tests/fixtures/real-2026-11-26: the signed reports' predicates and their telemetry) with today's
verdict code and floors."""

from __future__ import annotations

import copy
import csv
import dataclasses
import gzip
import io
import json
from pathlib import Path

import pytest

from nodeqc.backends.base import GpuInfo, GpuSample
from nodeqc.checks.stress.burn import judge_burn
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA
from nodeqc.core.skus import BY_KEY
from nodeqc.spec import calibration
from nodeqc.spec.profile import load_profile
from nodeqc.work.telemetry import WINDOW_SAMPLES_KEPT, GpuTelemetry
from nodeqc.work.workers import STATUS_OK, Outcome, Task

REAL = Path(__file__).parent / "fixtures" / "real-2026-11-26"
# The burn step in each run's telemetry (t_s on the run's clock): from before its first loaded sample
# to before stress.power's (the next step) first one: H100 load 4.055..34.055, stress.power from
# 35.055; H200 4.558..35.058, stress.power from 36.558.
BURN_STEP = {"h100-sxm5": (3.5, 34.8), "h200-sxm": (4.0, 36.2)}
# Each dtype's phase in the H200's telemetry, in the burn's order (fp64, fp32, tf32, fp16, bf16, fp8),
# as the README's "Clocks per dtype" reads them: steps in clock and power (the run recorded no spans).
H200_PHASES = {"fp64": (4.4, 9.3), "fp32": (9.4, 14.3), "tf32": (14.4, 19.3), "fp16": (19.9, 24.3),
               "bf16": (24.9, 29.3), "fp8": (31.4, 34.8)}
# The H200 SXM's healthy fp8 (nodeqc.core.skus: 1212.4 TFLOP/s, the continuous burn's) and its floors
# (0.9 and 0.8 of it, rounded up to a tenth: warn 1091.2, fail 970).
H200_FP8 = BY_KEY["h200-sxm-141gb"].healthy_tflops["fp8"]
H200_FP8_FLOOR = calibration.floor(H200_FP8)


def _report(which: str) -> dict:
    return json.loads((REAL / f"{which}-quick.predicate.json").read_text())


def _gpu(predicate: dict, **changes) -> GpuInfo:
    fields = {f.name for f in dataclasses.fields(GpuInfo)}
    entry = {k: v for k, v in predicate["gpus"][0].items() if k in fields}
    return dataclasses.replace(GpuInfo(**entry), **changes)


def _value(text: str):
    if text == "":
        return NA
    number = float(text)
    return int(number) if number.is_integer() else number


def _window(which: str) -> GpuTelemetry:
    """The burn step's window, rebuilt from the run's telemetry as the sampler built it (every sample
    of the step, added in turn; a step's window keeps them)."""
    start, end = BURN_STEP[which]
    rows = csv.DictReader(io.StringIO(gzip.decompress((REAL / f"{which}-quick.telemetry.csv.gz").read_bytes()).decode()))
    window = GpuTelemetry(0, keep_samples=WINDOW_SAMPLES_KEPT)
    for row in rows:
        t = float(row["t_s"])
        if start <= t <= end and row["gpu"] == "0":
            # Telemetry of 2026-11-26 has no instantaneous power column (added since): NA there.
            window.add(t, GpuSample(**{f: _value(row[f]) for f in GpuSample.FIELDS if f in row}))
    return window


def _burn(predicate: dict) -> dict:
    [check] = [c for c in predicate["checks"] if c["name"] == "stress.burn"]
    return check


def _judge(which: str, dtypes: dict | None = None, gpu: GpuInfo | None = None, profile: str | None = None):
    predicate = _report(which)
    result = {"dtypes": dtypes if dtypes is not None else _burn(predicate)["evidence"]["dtypes"], "not_run": {}}
    outcome = {0: Outcome(Task("matmul_burn", 0, {}, 1.0), STATUS_OK, result)}
    prof = load_profile(profile or predicate["profile"]["name"])
    [r] = judge_burn([gpu or _gpu(predicate)], outcome, {0: _window(which)}, prof)
    return r


def _with_spans(dtypes: dict, phases: dict) -> dict:
    out = copy.deepcopy(dtypes)
    for d, (start, end) in phases.items():
        out[d].update(start_s=start, end_s=end)
    return out


# ------------------------------------------------------------------ the real burns, today's verdicts

@pytest.mark.parametrize("which, profile, fp8, warn_floor", [
    # The profile each report names; fp8 as the run (the duty-cycled burn) measured it; the fp8
    # warning level today's healthy figures make (0.9 of 1223.38 and of 1212.4, the continuous
    # burn's, rounded up to a tenth: 1101.04, 1091.16).
    ("h100-sxm5", "h100-sxm5-80gb", 1237.11, 1101.1),
    ("h200-sxm", "h200-sxm-141gb", 1231.59, 1091.2),
])
def test_the_real_quick_burns_pass_with_todays_floors(which, profile, fp8, warn_floor):
    predicate = _report(which)
    assert predicate["profile"]["name"] == profile and _burn(predicate)["evidence"]["dtypes"]["fp8"]["tflops"] == fp8
    r = _judge(which)
    assert (r.verdict, r.code) == (Verdict.PASS, None), r.message
    assert "warning" not in r.message and "RMA" not in r.message and "diagnosis" not in r.evidence
    assert f"fp8 {fp8:g}" in r.message
    [floor] = [t for t in r.thresholds if t.name == "min_fp8_tflops"]
    assert floor.warn == warn_floor and fp8 > floor.warn
    assert warn_floor == calibration.floor(BY_KEY[profile].healthy_tflops["fp8"])["warn"]
    # The run's own verdict on the H200 was a WARN (the old datasheet estimate, 1318.5): today's is not.
    if which == "h200-sxm":
        assert _burn(predicate)["verdict"] == "warn"


def test_the_real_h200_with_fp8_15_percent_below_healthy_warns_without_advising_rma():
    """The report's own fp8 figure, 15% below the H200 SXM's healthy 1212.4: inside the warning band.
    The report has no spans (its worker recorded none): judged over the whole burn's telemetry."""
    dtypes = copy.deepcopy(_burn(_report("h200-sxm"))["evidence"]["dtypes"])
    dtypes["fp8"]["tflops"] = round(0.85 * H200_FP8, 2)  # 1030.54: below the warning level 1091.2, above the limit 970
    assert H200_FP8_FLOOR["fail"] < dtypes["fp8"]["tflops"] < H200_FP8_FLOOR["warn"]
    r = _judge("h200-sxm", dtypes)
    assert (r.verdict, r.code) == (Verdict.WARN, "BURN_SLOW"), r.message
    assert "RMA" not in r.message and "re-run to confirm" in r.message
    assert r.message.endswith(f"; fp8 sustained {dtypes['fp8']['tflops']:.1f} TFLOP/s is below the warning level "
                              f"{H200_FP8_FLOOR['warn']:g} TFLOP/s")
    # The whole burn's clock (1,755 MHz) against the lowest clock of its dtypes at the limit (fp8's 1380).
    readings = r.evidence["diagnosis"]["readings"]
    assert readings["healthy_sm_clock_mhz"] == 1380 and round(readings["sm_clock_mhz"]) == 1755
    assert "sm_clock_mhz" not in r.evidence["dtypes"]["fp8"]  # no span: nothing said of fp8 alone


def test_the_real_h200_fp8_span_is_diagnosed_at_fp8s_own_clock():
    """With each dtype's span (the phases of the H200's telemetry), fp8's evidence is what telemetry saw
    of fp8 alone: 1378 MHz mean, power-capped, against fp8's own 1380 MHz at the limit, not the 1,755
    MHz of the whole burn that called the healthy part a compute defect."""
    healthy = _judge("h200-sxm", _with_spans(_burn(_report("h200-sxm"))["evidence"]["dtypes"], H200_PHASES))
    assert healthy.verdict is Verdict.PASS, healthy.message
    seen = healthy.evidence["dtypes"]
    # Means of the loaded samples (util >= 50%) in each phase, read from the csv by hand: fp8 12
    # samples, 1378 MHz; its power from a second into its load (POWER_SETTLE_S: the eight readings from
    # 32.808 s, the one of 26 % at 32.558 s a blink that ends no stretch), 670 W, where the mean of all
    # twelve took in NVML's rising first second, 616 W; tf32 1543 MHz; fp32 at 1980 MHz, never capped.
    assert (seen["fp8"]["sm_clock_mhz"], round(seen["fp8"]["power_w"])) == (1378, 670)
    assert seen["fp8"]["throttle_s"].keys() == {"sw_power_cap"} and seen["fp8"]["throttle_s"]["sw_power_cap"] > 2.5
    assert seen["tf32"]["sm_clock_mhz"] == 1543 and seen["fp32"]["sm_clock_mhz"] == 1980
    assert "sw_power_cap" not in seen["fp32"]["throttle_s"]

    slow = _with_spans(_burn(_report("h200-sxm"))["evidence"]["dtypes"], H200_PHASES)
    slow["fp8"]["tflops"] = round(0.85 * H200_FP8, 2)
    r = _judge("h200-sxm", slow)
    assert (r.verdict, r.code) == (Verdict.WARN, "BURN_SLOW"), r.message
    d = r.evidence["diagnosis"]
    assert d["cause"] == "defect" and d["readings"]["healthy_sm_clock_mhz"] == 1380
    assert round(d["readings"]["sm_clock_mhz"]) == 1378
    assert r.message.startswith("slow at full clocks (1,378 MHz): the GPU computes 0.85 of its SKU's rate per clock "
                                "(a compute defect if it persists: re-run to confirm)"), r.message
    assert "RMA" not in r.message


def test_a_real_h200_fp8_that_fails_on_its_measured_floor_is_still_sent_to_rma():
    """The other side: 30% slow at fp8's own full clock, against a measured floor, fails as a defect."""
    slow = _with_spans(_burn(_report("h200-sxm"))["evidence"]["dtypes"], H200_PHASES)
    slow["fp8"]["tflops"] = round(0.7 * H200_FP8, 2)
    assert slow["fp8"]["tflops"] < H200_FP8_FLOOR["fail"]
    r = _judge("h200-sxm", slow)
    assert (r.verdict, r.code) == (Verdict.FAIL, "BURN_SLOW"), r.message
    assert r.message.startswith("slow at full clocks (1,378 MHz): the GPU computes 0.70 of its SKU's rate per clock "
                                "(compute defect: re-run once to confirm, then RMA)"), r.message


def test_a_rate_its_clock_at_the_limit_explains_is_no_defect():
    """fp8 at 0.92 of its clock at the limit and 0.86 of its rate: per clock 0.94 of its SKU's, in a
    healthy part's spread. The clock explains it: never "compute defect" beside such a figure."""
    slow = _with_spans(_burn(_report("h200-sxm"))["evidence"]["dtypes"], H200_PHASES)
    slow["fp8"]["tflops"] = round(0.86 * H200_FP8, 2)
    from unittest import mock

    assert BY_KEY["h200-sxm-141gb"].loaded_sm_mhz["fp8"] == 1380
    # The real span ran at 1378 MHz; against a SKU whose fp8 clock were 1500 (0.92 of it) the clock explains 0.86.
    sku = dataclasses.replace(BY_KEY["h200-sxm-141gb"], loaded_sm_mhz={**BY_KEY["h200-sxm-141gb"].loaded_sm_mhz, "fp8": 1500})
    with mock.patch("nodeqc.core.skus.BY_DEVICE_ID", {0x2335: sku}):
        r = _judge("h200-sxm", slow)
    assert r.verdict is Verdict.WARN and r.evidence["diagnosis"]["cause"] == "clock_bound", r.message
    assert r.message.startswith("slow at 1,378 MHz, 0.92 of the 1,500 MHz a healthy H200 SXM 141GB holds at its power "
                                "limit under fp8: per clock it computes 0.94 of its SKU's rate, so its clock explains "
                                "the rate (check cooling and power delivery; re-run to confirm)"), r.message
    assert "defect" not in r.message and "RMA" not in r.message


def test_a_dtype_judged_against_an_estimated_floor_says_so_and_never_advises_rma():
    """An H200 NVL (every figure a datasheet estimate) whose fp8 fails its floor: the message says the
    floor is an estimate and sends nobody to RMA."""
    nvl = _gpu(_report("h200-sxm"), pci_device_id=0x233B, name="NVIDIA H200 NVL")
    sku = BY_KEY["h200-nvl-141gb"]
    assert "fp8" in sku.estimated and sku.provenance("fp8") == "estimate"
    assert BY_KEY["h200-sxm-141gb"].provenance("fp8") == "measured"
    dtypes = copy.deepcopy(_burn(_report("h200-sxm"))["evidence"]["dtypes"])
    dtypes = {d: {**m, "tflops": round(0.7 * sku.healthy_tflops[d], 2)} for d, m in dtypes.items()}
    r = _judge("h200-sxm", dtypes, nvl, "h200-nvl-141gb")
    assert r.verdict is Verdict.FAIL and r.code == "BURN_SLOW", r.message
    assert "is an estimate (datasheet-derived, not measured on a healthy H200 NVL 141GB)" in r.message
    # The dtype diagnosed (the furthest below its figure, by rounding) is the estimate named.
    [named] = r.evidence["diagnosis"]["readings"]["estimated_floors"]
    assert named in sku.estimated and f"the floor of {named} is an estimate" in r.message
    assert "RMA" not in r.message


def test_the_real_h200s_burn_power_is_read_while_its_products_ran():
    """In the real H200's set-ups between dtypes NVML still read the GPU busy (74 and 76 %, its
    utilisation a window behind) while its power fell to 508 and 288 W: no load, yet counted as one.
    Over the dtypes' spans, from a second into each (POWER_SETTLE_S), the burn held 667.6 W, 0.954
    of the 700 W limit; the mean of every reading in them read 645.1 W (0.922) and of every reading
    of the step 640.8 W (0.915). The whole step, from a second into each stretch NVML read as busy,
    reads 666.3 W (0.952): about as much, where its set-ups' readings are few."""
    whole = _judge("h200-sxm")
    assert (whole.values["power_w"].value, whole.values["power_fraction"].value) == (666.3, 0.952)
    spans = _judge("h200-sxm", _with_spans(_burn(_report("h200-sxm"))["evidence"]["dtypes"], H200_PHASES))
    assert (spans.values["power_w"].value, spans.values["power_fraction"].value) == (667.6, 0.954)
    assert spans.verdict is Verdict.PASS, spans.message


def _set_up_gaps_window(keep: int = WINDOW_SAMPLES_KEPT) -> tuple[GpuTelemetry, dict]:
    """A burn of six 5 s spans at 630 W of a 700 W limit, each after a 2 s set-up in which NVML
    still reads the GPU busy (55 %) at 150 W: as a clean simulated B200 read its set-ups, stretched
    by a busy host on a clock compressed 200 times (2026-11-29)."""
    predicate = _report("h200-sxm")
    dtypes = copy.deepcopy(_burn(predicate)["evidence"]["dtypes"])
    window = GpuTelemetry(0, keep_samples=keep)
    t = 0.0
    for d in dtypes:
        window.add(t + 1.0, GpuSample(util_pct=55, power_w=150.0, power_limit_w=700.0, sm_clock_mhz=1980))
        start = t + 2.0
        for k in range(5):
            window.add(start + k + 0.5, GpuSample(util_pct=100, power_w=630.0, power_limit_w=700.0, sm_clock_mhz=1980))
        dtypes[d].update(start_s=start, end_s=start + 5.0)
        t = start + 5.0
    return window, dtypes


def _judged(window: GpuTelemetry, dtypes: dict):
    predicate = _report("h200-sxm")
    outcome = {0: Outcome(Task("matmul_burn", 0, {}, 1.0), STATUS_OK, {"dtypes": dtypes, "not_run": {}})}
    [r] = judge_burn([_gpu(predicate)], outcome, {0: window}, load_profile("h200-sxm-141gb"))
    return r


def test_a_burn_whose_set_ups_read_busy_at_idle_power_is_judged_on_its_spans():
    """The burn's power is what the GPU drew while its products ran (0.9 of the limit here), not
    the mean with the set-ups' readings (0.786 of every reading: BURN_POWER_LOW, the clean B200's
    false warning; 0.802 of those from a second into the step's one stretch of busy readings)."""
    window, dtypes = _set_up_gaps_window()
    assert round(window.loaded_power_w.mean / 700, 3) == 0.786
    assert round(window.held_power_w.mean / 700, 3) == 0.802 and window.held_power_w.count == 35
    r = _judged(window, dtypes)
    assert r.verdict is Verdict.PASS and r.values["power_fraction"].value == 0.9, r.message
    # A dtype without its span (an older worker's result), or a window that no longer kept every
    # sample (a burn of hours): the whole step's telemetry speaks, as before.
    del dtypes["fp32"]["start_s"]
    assert _judged(window, dtypes).values["power_fraction"].value == 0.802
    capped, dtypes = _set_up_gaps_window(keep=30)
    assert capped.samples == 36
    assert _judged(capped, dtypes).values["power_fraction"].value == 0.802
    # Spans that hold no power reading (too short for the sampler): the whole step, never no figure.
    window, dtypes = _set_up_gaps_window()
    for m in dtypes.values():
        m.update(start_s=m["start_s"] + 0.6, end_s=m["start_s"] + 0.7)
    assert _judged(window, dtypes).values["power_fraction"].value == 0.802
    # Spans with readings, none a second into them: every reading in the spans, the rising ones too.
    window, dtypes = _set_up_gaps_window()
    for m in dtypes.values():
        m.update(end_s=m["start_s"] + 0.9)
    assert _judged(window, dtypes).values["power_fraction"].value == 0.9  # the one at 0.5 s of each: 630 W


# ------------------------------------------------------------------ a window sliced by time

def test_a_window_sliced_by_time_sums_its_own_samples_only():
    tel = GpuTelemetry(0, keep_samples=100)
    for t in range(10):
        tel.add(float(t), GpuSample(power_w=100.0 * t, power_limit_w=700.0, sm_clock_mhz=1000 + t,
                                    util_pct=100 if t != 4 else 0, reasons=4 if t >= 4 else 0))
    part = tel.between(2.5, 6.0)
    assert part.samples == 4 and part.loaded_samples == 3  # t = 3, 4 (idle), 5, 6
    assert part.loaded_sm_clock_mhz.mean == pytest.approx((1003 + 1005 + 1006) / 3)
    assert part.loaded_power_w.mean == pytest.approx(1400 / 3)
    assert part.loaded_s == pytest.approx(0.5 + 1 + 1)  # from 2.5 to 3, then 4 to 5 and 5 to 6 (4 was idle)
    assert part.throttle_s == {"sw_power_cap": pytest.approx(3.0)}  # 3 to 4, 4 to 5, 5 to 6
    assert part.power_limit_w == 700.0
    assert GpuTelemetry(0).between(0, 10) is None  # a window that kept nothing has nothing to slice
    assert tel.within([(2.0, 3.0), (3.0, 4.0)]).samples == 3  # t = 3 on both spans' bound counts once
    both = tel.within([(6.5, 8.0), (0.5, 2.0)])  # spans apart, each counting from its own start
    assert both.samples == 4 and both.loaded_power_w.mean == pytest.approx((100 + 200 + 700 + 800) / 4)
    assert both.loaded_s == pytest.approx(0.5 + 1 + 0.5 + 1)
    capped = GpuTelemetry(0, keep_samples=2)
    for t in range(5):
        capped.add(float(t), GpuSample(util_pct=100))
    assert [t for t, _ in capped.kept_samples] == [0.0, 1.0] and capped.samples == 5


# ------------------------------------------------------------------ the simulated node, end to end

def test_the_simulated_burn_records_each_dtypes_span_clock_and_power(tmp_path):
    """The simulated H100 SXM5 runs each dtype at the clock and power the real one held at its power
    limit in the continuous burn (sim_models.H100_SXM5_TWIN: fp64 1795 MHz and 696.9 W steady, fp8
    1272 MHz and 686.2 W): the burn's evidence gives each dtype's span on the run's clock and what
    telemetry saw in it (spans of 12-15 s here, so the second after each set-up weighs little: the
    quick run's short spans are held to the real ones in test_twin_fidelity)."""
    from nodeqc.backends import simulated_hardware
    from nodeqc.backends.sim.models import H100_SXM5_TWIN as twin
    from nodeqc.report.keys import create_key
    from nodeqc.run.runner import RunOptions, Runner
    from nodeqc.spec.selection import Selection

    (tmp_path / "two.toml").write_text('description = "H100 SXM5, fp64 and fp8"\nextends = "h100"\n'
                                        '[gpu]\ndtypes = ["fp64", "fp8"]\n')
    hw = simulated_hardware("h100", [], time_scale=4)
    options = RunOptions(load_profile(str(tmp_path / "two.toml")), create_key(tmp_path / "k.pem"),
                         out_dir=tmp_path / "out", quick=True, selection=Selection(only=("stress.burn",)))
    outcome = Runner(options, hw).run()
    r = next(r for r in outcome.results if r.name == "stress.burn" and r.subject == "gpu0")
    assert r.verdict is Verdict.PASS, r.message
    fp64, fp8 = r.evidence["dtypes"]["fp64"], r.evidence["dtypes"]["fp8"]
    assert 0 < fp64["start_s"] < fp64["end_s"] <= fp8["start_s"] < fp8["end_s"]
    assert (twin.sm_mhz["fp64"], twin.sm_mhz["fp8"]) == (1795, 1272)
    # Each sample a step of NVML's 15 MHz table either side (physics.CLOCK_STEP_MHZ), their mean the
    # measured clock: within 6 MHz over a span's 15-25 samples (a third of a step).
    assert fp64["sm_clock_mhz"] == pytest.approx(1795, abs=6) and fp8["sm_clock_mhz"] == pytest.approx(1272, abs=6)
    # Each dtype's power is its own, the twin's within 5% (fp8 under fp64 as on the real part), not
    # the node's general share of the limit.
    assert fp64["power_w"] == pytest.approx(twin.power_w["fp64"], rel=0.05)
    assert fp8["power_w"] == pytest.approx(twin.power_w["fp8"], rel=0.05)
    assert fp8["power_w"] < fp64["power_w"]
    # The power cap holds both below the maximum clock for nearly all of their spans, as it held the
    # real H100's (0.96-0.99 of each dtype but fp32: tests/fixtures/real-2026-11-26), and nothing
    # else throttles without a fault.
    for m in (fp64, fp8):
        assert set(m["throttle_s"]) == {"sw_power_cap"} and "sw_power_cap" in m["throttle_counted_by_driver"]
        assert m["throttle_s"]["sw_power_cap"] >= 0.9 * (m["end_s"] - m["start_s"]), m


def _marks(dtype: str, at: tuple[float, float], cap_ns: tuple[int, int | None]) -> list[dict]:
    """The counter marks the supervisor reads at a dtype's bounds (matmul_burn's progress)."""
    reads = [{"hw_thermal": 0, "power_brake": 0, "sw_power_cap": ns, "sw_thermal": 0} for ns in cap_ns]
    return [{"t_s": t, "bound": bound, "period_s": None, "dtype": dtype, "throttle_ns": read}
            for t, bound, read in zip(at, ("start", "end"), reads)]


def test_a_dtypes_throttling_is_the_drivers_count_between_its_bounds_whatever_the_sample_rate():
    """A sampler that stalled through fp8's span (one sample in its 3.4 s, a loaded host's, read as
    the clock came off the limit) says fp8 was never held; the driver's counters read at fp8's two
    bounds say 3.3 s (the real H200's counter advanced with the time at its limit, 2.2 s in a 2.2 s
    pulse period: h200-sxm-quick-pulsed), and their count is fp8's. A dtype without both marks keeps
    its sampled estimate."""
    predicate = _report("h200-sxm")
    dtypes = _with_spans(_burn(predicate)["evidence"]["dtypes"], H200_PHASES)
    start, end = H200_PHASES["fp8"]

    def judged(marks):
        window = _window("h200-sxm")
        inside = [(t, x) for t, x in window.kept_samples if start <= t <= end]
        stalled = GpuTelemetry(0, keep_samples=WINDOW_SAMPLES_KEPT)
        for t, x in window.kept_samples:
            if not (start <= t <= end):
                stalled.add(t, x)
            elif (t, x) == inside[-1]:
                stalled.add(t, dataclasses.replace(x, reasons=0))
        stalled.counter_marks = marks
        outcome = {0: Outcome(Task("matmul_burn", 0, {}, 1.0), STATUS_OK, {"dtypes": dtypes, "not_run": {}})}
        [r] = judge_burn([_gpu(predicate)], outcome, {0: stalled}, load_profile(predicate["profile"]["name"]))
        return r.evidence["dtypes"]

    sampled = judged([])
    assert sampled["fp8"]["throttle_s"] == {} and sampled["fp8"]["throttle_counted_by_driver"] == []
    counted = judged(_marks("fp8", (start, end), (30_000_000_000, 33_300_000_000)))
    assert counted["fp8"]["throttle_s"] == {"sw_power_cap": 3.3}
    assert counted["fp8"]["throttle_counted_by_driver"] == ["hw_thermal", "power_brake", "sw_power_cap", "sw_thermal"]
    assert counted["tf32"] == sampled["tf32"] and counted["tf32"]["throttle_counted_by_driver"] == []
    # Only a reason read at both bounds counts, another dtype's marks are not fp8's, and a counter
    # that ran backwards (a driver reload) is no count.
    assert judged(_marks("fp8", (start, end), (30_000_000_000, None)))["fp8"]["throttle_s"] == sampled["fp8"]["throttle_s"]
    assert judged(_marks("fp8", (start, end), (30_000_000_000, None)))["fp8"]["throttle_counted_by_driver"] == \
        ["hw_thermal", "power_brake", "sw_thermal"]
    assert judged(_marks("bf16", (start, end), (0, 3_300_000_000)))["fp8"] == sampled["fp8"]
    assert judged(_marks("fp8", (start, end), (33_300_000_000, 0)))["fp8"]["throttle_s"] == sampled["fp8"]["throttle_s"]
    assert judged(_marks("fp8", (start, end), (0, 3_300_000_000))[:1])["fp8"] == sampled["fp8"]


def test_profiles_say_which_healthy_figures_are_estimates(run_cli):
    nvl = run_cli("profiles", "h200-nvl-141gb")
    assert nvl.returncode == 0
    assert "  healthy figures: estimates (datasheet-derived, not measured): fp64, fp32, tf32, fp16, bf16, fp8, hbm\n" \
        in nvl.stdout
    sxm = run_cli("profiles", "h200-sxm-141gb")
    assert "  healthy figures: measured: fp64, fp32, tf32, fp16, bf16, fp8, hbm\n" in sxm.stdout
    family = run_cli("profiles", "h100")
    assert "    h100-sxm5-80gb healthy figures: measured: fp64, fp32, tf32, fp16, bf16, fp8, hbm\n" in family.stdout
    assert "    h100-pcie-80gb healthy figures: estimates (datasheet-derived, not measured): " in family.stdout
