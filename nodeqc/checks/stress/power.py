"""stress.power: every GPU held at its power limit at once (DCGM's targeted power) must reach its
share of it, the load proven by its own measurements; and the power finding the burn shares."""

from __future__ import annotations

import math
from typing import Any

from nodeqc.backends.base import PLAIN_LOAD_DTYPE, GpuInfo
from nodeqc.checks.common import Judgement, fmt, fold, judge
from nodeqc.checks.diagnosis import Expected, Observed, explain
from nodeqc.checks.stress.outcomes import HELD_TOLERANCE_S, each_gpu
from nodeqc.core.model import CheckResult, Threshold, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import POWER_SETTLE_S, GpuTelemetry
from nodeqc.work.workers import Outcome

# The power test's figure is the mean of the power readings under load once NVML's power has settled
# (nodeqc.work.telemetry.POWER_SETTLE_S): a handful of them at least (nodeqc's choice: a mean, not one
# reading; NVML's power reading changes about 10 times a second on the H100 SXM5,
# shared/measurements/README.md). The load lasts as long as the sampler needs to take them after the
# settling second (nodeqc.work.sampler.TelemetrySampler.wall_s_to_see), however slowly NVML answers.
POWER_LOADED_SAMPLES = 4


def power_finding(window: GpuTelemetry | None, profile: Profile, values: dict[str, Value],
                  thresholds: list[Threshold | None], code: str = "BURN_POWER_LOW") -> Judgement | None:
    """Clocks, power and throttling while the products ran; power must reach its share of the limit."""
    if window is None or window.load_power_w.count == 0 or is_na(window.power_limit_w):
        return None
    if not window.power_limit_w > 0:  # the driver's answer, not a limit (a capture's 0: the 2026-11-29 audit)
        return Judgement(Verdict.ERROR, "POWER_LIMIT_UNREADABLE",
                         f"the driver reported a power limit of {window.power_limit_w!r} W: power under load not judged")
    power = window.load_power_w.mean
    fraction = round(power / window.power_limit_w, 3)
    values["power_fraction"] = Value(fraction)
    values["power_w"] = Value(round(power, 1), "W")
    values["sm_clock_mhz"] = Value(round(window.loaded_sm_clock_mhz.mean), "MHz")
    values["throttle_s"] = Value(round(window.failing_throttle_s(), 2), "s")
    limit = profile.threshold("gpu", "min_power_fraction")
    thresholds.append(limit)
    if limit is None:
        return None
    return judge(limit, fraction, code,
                 f"power under load {power:.0f} W of the {window.power_limit_w:g} W limit, a fraction of")


def power_load_short(r: dict[str, Any], window: GpuTelemetry) -> str | None:
    """Why the power test did not prove the load it claimed, from its own measurements: the plain
    load ran its planned seconds in at least one step, and telemetry took POWER_LOADED_SAMPLES power
    readings under it once NVML's power had settled (POWER_SETTLE_S in; the figure is their mean).
    None where it did, and for a result from before the load was proven (no `planned_s`): judged as
    before."""
    if "planned_s" not in r:
        return None
    planned, held, steps = float(r["planned_s"]), float(r["seconds"]), int(r.get("steps", 0))
    said = []
    # A NaN compares false with everything: "held" NaN s passed "for nan s" (2026-11-28 audit).
    if steps < 1 or not (0 < planned < math.inf and held <= math.inf) or held < planned - HELD_TOLERANCE_S:
        said.append(f"the load ran {fmt(held, 's')} in {steps} step(s) of the {fmt(planned, 's')} planned")
    read = window.held_power_w.count
    if read < POWER_LOADED_SAMPLES:
        said.append(f"telemetry took {read} power reading(s) from {POWER_SETTLE_S:g} s into the load (NVML's "
                    f"power is a mean of its last second), fewer than the {POWER_LOADED_SAMPLES} its figure is the mean of")
    return " and ".join(said) + "; not judged" if said else None


def power_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {"seconds": float(profile.get("run", "quick_power_s" if quick else "power_s"))}


def judge_power(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
                profile: Profile) -> list[CheckResult]:
    """DCGM's targeted power: every GPU held at its power limit at once must reach its share of it."""
    name = "stress.power"

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        values: dict[str, Value] = {}
        thresholds: list[Threshold | None] = []
        window = windows.get(g.index)
        if window is None or (window.loaded_samples == 0 and window.stats["util_pct"].count == window.samples):
            # Utilisation was read (or nothing was), yet never a reading under load: telemetry missed
            # the load. The power test has not shown anything: it could not run.
            seen = window.samples if window is not None else 0
            return CheckResult(name, g.subject, Verdict.ERROR,
                               f"telemetry read no sample of this GPU under load during the power test ({seen} "
                               "reading(s) in all): NVML answered too slowly; not judged", code="POWER_NOT_READ")
        finding = power_finding(window, profile, values, thresholds, code="POWER_TARGET_LOW")
        if finding is None:  # NVML reports no power, no limit or no utilisation for this GPU
            # Never a skip the run passes over: a power of 2^32-1 mW (no reading, nvml.physical) held a
            # GPU "at 4294967 W" and passed before, and no reading at all shows no load (2026-11-29 review).
            return CheckResult(name, g.subject, Verdict.ERROR, "NVML gave no valid power, power limit or "
                               "utilisation reading of this GPU under load: the power test showed nothing; not "
                               "judged", code="POWER_NOT_READ")
        short = power_load_short(r, window)
        if short:  # a figure of a load not held is no figure: never a pass, nor a fail
            return CheckResult(name, g.subject, Verdict.ERROR, short, code="POWER_LOAD_NOT_REACHED",
                               values={**values, "held_s": Value(r["seconds"], "s"),
                                       "held_readings": Value(window.held_power_w.count)},
                               evidence={"load": {k: r.get(k) for k in ("planned_s", "seconds", "steps")},
                                         "held_readings_needed": POWER_LOADED_SAMPLES}, key="power_fraction")
        values["temp_max"] = Value(window.stats["temp_c"].max, "C")
        result = fold(name, g.subject, [finding], values, thresholds, key="power_fraction")
        if result.verdict is Verdict.PASS:
            result.message = (f"held {values['power_w']} of the {window.power_limit_w:g} W limit "
                              f"({values['power_fraction']}) for {r['seconds']:g} s at {values['sm_clock_mhz']}")
        return explain(result, Observed.of(g, window), Expected.of(g, [PLAIN_LOAD_DTYPE]), None, "the power test")

    return each_gpu(name, gpus, outcomes, one)
