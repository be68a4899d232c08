"""Stress checks: the plan of work the GPUs do in worker processes, and the verdicts on what came back.

Each step names its workload (nodeqc/work/workloads.py), makes its tasks, and judges the outcomes together
with what telemetry saw during the step. Figures are judged against the profile's floor and against
the node's own median (a GPU well below its identical siblings fails even above the floor). A worker
that hung, crashed or lost its GPU is a failure of that GPU with the evidence.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any, Callable

from nodeqc.backends.base import COUNTED_REASONS, PEER_PATHS, PLAIN_LOAD_DTYPE, GpuInfo
from nodeqc.checks.common import Finding, fmt, fold, judge, skip
from nodeqc.checks.diagnosis import Expected, Observed, explain, explain_node
from nodeqc.core.known_answer import odd_ones_out, relative_deficit_pct
from nodeqc.core.model import CheckResult, Threshold, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import GpuTelemetry
from nodeqc.work.workers import (STATUS_ABORTED, STATUS_CRASH, STATUS_ERROR, STATUS_HANG, STATUS_LOST,
                            STATUS_UNAVAILABLE, Outcome, Task)

GIB = 1024 ** 3
MIB = 1024 ** 2
HEADLINE_DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp64", "fp8")
SEED = 20261122  # the same operands on every GPU: identical work, comparable results

# Errors raised by CUDA itself mean the GPU misbehaved; any other exception is nodeqc's own problem.
_CUDA_ERRORS = ("CUDARuntimeError", "CUDADriverError", "CUBLASError", "CuDNNError", "NCCLError")


def outcome_failure(name: str, subject: str, outcome: Outcome) -> CheckResult | None:
    """The result for a worker that did not come back with a result; None when it did."""
    status, detail = outcome.status, outcome.detail
    evidence = {"worker": {"status": status, "detail": detail, "elapsed_s": round(outcome.elapsed_s, 2),
                           **outcome.evidence}}
    first_line = detail.splitlines()[0] if detail else status
    if status == STATUS_HANG:
        return CheckResult(name, subject, Verdict.FAIL, f"hung: {first_line}", code="WORKER_HANG", evidence=evidence)
    if status == STATUS_CRASH:
        return CheckResult(name, subject, Verdict.FAIL, f"crashed: {first_line}", code="WORKER_CRASH", evidence=evidence)
    if status == STATUS_LOST:
        return CheckResult(name, subject, Verdict.FAIL, f"the GPU fell off the bus during the work ({first_line})",
                           code="GPU_LOST", evidence=evidence)
    if status == STATUS_UNAVAILABLE:
        return CheckResult(name, subject, Verdict.ERROR, first_line, code="CUDA_UNAVAILABLE", evidence=evidence)
    if status == STATUS_ERROR:
        gpu_fault = first_line.startswith(_CUDA_ERRORS)
        return CheckResult(name, subject, Verdict.FAIL if gpu_fault else Verdict.ERROR,
                           f"the work raised {first_line}", code="WORKER_ERROR", evidence=evidence)
    if status == STATUS_ABORTED:
        return CheckResult(name, subject, Verdict.SKIP, "the run was aborted", evidence=evidence)
    return None


def each_gpu(name: str, gpus: list[GpuInfo], outcomes: dict[int, Outcome],
             judge_one: Callable[[GpuInfo, dict[str, Any]], CheckResult]) -> list[CheckResult]:
    """A result per GPU: the worker's failure if it had one, else the judgement of what it returned."""
    return [outcome_failure(name, g.subject, outcomes[g.index]) or judge_one(g, outcomes[g.index].result)
            for g in gpus]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _wrong_data(mismatch: dict[str, Any], unit: str = "element") -> str:
    """Where data came back wrong, as the verification found it: how many, the first, its bits."""
    e = mismatch["first"][0]
    return (f": {mismatch['count']} {unit}(s) wrong, first at index {e['index']} expected {e['expected']:.10g}, "
            f"got {e['actual']:.10g} (bits {e['xor']} flipped)")


def _outlier(profile: Profile, value: float, median: float | None, peers: int, code: str, what: str,
             unit: str) -> Finding | None:
    """A figure well below the node's median; needs at least two GPUs to have a median worth the name.
    Said as one finding, numbers first: 'host-to-device 27.1 GB/s is 49.9 % below the node median
    54.2 GB/s (limit 10 %)'."""
    limit = profile.threshold("gpu", "max_outlier_pct")
    if median is None or peers < 2 or limit is None:
        return None
    deficit = round(relative_deficit_pct(value, median), 1)
    verdict = judge(limit, deficit, code, what, "%")
    if verdict.verdict is Verdict.PASS:
        return verdict
    level = limit.fail if verdict.verdict is Verdict.FAIL else limit.warn
    label = "limit" if verdict.verdict is Verdict.FAIL else "warning level"
    return Finding(verdict.verdict, code, f"{what} {fmt(value, unit)} is {fmt(deficit, '%')} below the node median "
                                          f"{fmt(median, unit)} ({label} {fmt(level, '%')})")


# ---------------------------------------------------------------------- matmul burn

def burn_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {"seconds": burn_seconds(profile, quick), "dtypes": profile.get("gpu", "dtypes", ["fp32", "fp16"]),
            "seed": SEED}


def burn_seconds(profile: Profile, quick: bool) -> float:
    return float(profile.get("run", "quick_burn_s" if quick else "burn_s"))


def judge_burn(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
               profile: Profile) -> list[CheckResult]:
    name = "stress.burn"
    ok = {i: o.result for i, o in outcomes.items() if o.ok}
    subject = {g.index: g.subject for g in gpus}
    dtypes = sorted({d for r in ok.values() for d in r["dtypes"]}, key=HEADLINE_DTYPES.index)
    medians = {d: _median([r["dtypes"][d]["tflops"] for r in ok.values() if d in r["dtypes"]]) for d in dtypes}
    odd = {d: odd_ones_out({subject[i]: r["dtypes"][d]["fingerprint"] for i, r in ok.items() if d in r["dtypes"]})
           for d in dtypes}

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        rate, values, thresholds = [], {}, []
        wrong_ka, wrong_repeat, wrong_peers, slow = [], [], [], []
        window = windows.get(g.index)
        # What telemetry saw of each dtype in its own span (a Hopper holds its power limit at a clock
        # of each dtype's own); None for a result without spans (an older worker's) or a window
        # without its samples: then only the whole step's telemetry speaks.
        seen = {d: _dtype_seen(window, m) for d, m in r["dtypes"].items()}
        for d, m in r["dtypes"].items():
            values[f"{d}_tflops"] = Value(m["tflops"], "TFLOP/s")
            if m["known_answer_mismatch"]:
                wrong_ka.append(d)
            if m["repeat_mismatch"]:
                wrong_repeat.append(d)
            if g.subject in odd[d][1]:
                wrong_peers.append(d)
            floor = profile.threshold("gpu", f"min_{d}_tflops")
            thresholds.append(floor)
            mine = [judge(floor, m["tflops"], "BURN_SLOW", f"{d} sustained", "TFLOP/s")]
            outlier = _outlier(profile, m["tflops"], medians[d], len(ok), "BURN_OUTLIER", f"{d} rate", "TFLOP/s")
            if outlier:
                mine.append(outlier)
            rate += mine
            if any(f.verdict is not Verdict.PASS for f in mine):
                slow.append(d)
        sdc = []
        if wrong_ka:
            d = wrong_ka[0]
            w = r["dtypes"][d]["known_answer_mismatch"]
            e = w["first"][0]
            sdc.append(Finding(Verdict.FAIL, "SDC_KNOWN_ANSWER",
                               f"known-answer products wrong ({', '.join(wrong_ka)}): in {d}, {w['count']} element(s), first at "
                               f"[{e['row']}, {e['col']}] expected {e['expected']:.10g}, got {e['actual']:.10g} (bits {e['xor']} flipped)"))
        if wrong_repeat:
            sdc.append(Finding(Verdict.FAIL, "SDC_REPEAT",
                               f"the same product gave a different result on a repeat ({', '.join(wrong_repeat)})"))
        if wrong_peers:
            d = wrong_peers[0]
            majority = odd[d][0]
            # Counted among the GPUs that ran this dtype: one that could not run it agrees with nobody.
            prints = [x["dtypes"][d]["fingerprint"] for x in ok.values() if d in x["dtypes"]]
            if majority:
                than = f"the other {prints.count(majority)} GPU(s), which agree"
            elif len(prints) == 2:
                than = "its peer (no majority to trust)"
            else:  # a tie, or all different: how many it differs from, none of them to be trusted either
                differ = sum(1 for fp in prints if fp != r["dtypes"][d]["fingerprint"])
                than = f"{differ} of the other {len(prints) - 1} GPUs (no majority to trust)"
            sdc.append(Finding(Verdict.FAIL, "SDC_CROSS_GPU",
                               f"identical work gave a different result than {than} ({', '.join(wrong_peers)})"))
        power = _power_finding(windows.get(g.index), profile, values, thresholds)
        findings = sdc + rate + ([power] if power else [])
        if not findings:
            findings = [Finding(Verdict.PASS, None, "no dtype ran")]
        short = burn_load_short(r["dtypes"])
        if short and not sdc:  # wrong results stand whatever the load; a rate of too little work is none
            return CheckResult(name, g.subject, Verdict.ERROR, f"the burn did not produce its load: {'; '.join(short)}; "
                               "not judged", code="BURN_LOAD_NOT_REACHED", values=values,
                               evidence={"dtypes": r["dtypes"], "not_run": r["not_run"]})
        key = next((f"{d}_tflops" for d in HEADLINE_DTYPES if d in r["dtypes"]), None)
        dtypes_seen = {d: {**m, **_seen_readings(seen[d])} if seen[d] is not None else m for d, m in r["dtypes"].items()}
        result = fold(name, g.subject, findings, values, thresholds + [profile.threshold("gpu", "max_outlier_pct")],
                      key=key, evidence={"dtypes": dtypes_seen, "not_run": r["not_run"],
                                         "node_median_tflops": medians})
        if result.verdict is Verdict.PASS and r["dtypes"]:
            result.message = "sustained " + ", ".join(f"{d} {m['tflops']:g}" for d, m in r["dtypes"].items()) + " TFLOP/s; results exact"
        if r["not_run"]:
            result.message += "; not run: " + "; ".join(f"{d} ({why})" for d, why in r["not_run"].items())
        expected = Expected.of(g, r["dtypes"])
        share = expected.share({d: m["tflops"] for d, m in r["dtypes"].items()}, medians)
        observed = Observed.of(g, window)
        if slow:
            # The slow dtype furthest below what it should do is the one diagnosed: in its own span,
            # against the clock a healthy part holds under it, where its span was seen under load.
            reference = expected.healthy or medians
            d = min(slow, key=lambda x: r["dtypes"][x]["tflops"] / reference[x] if reference.get(x) else 1.0)
            part = seen[d]
            if part is not None and part.loaded_samples:
                expected = Expected.of(g, [d])
                share = expected.share({d: r["dtypes"][d]["tflops"]}, medians)
                observed = Observed.of(g, part)
            else:  # the whole step's clocks; only this dtype's floor can be the estimate to blame
                expected = replace(expected, estimated=tuple(f for f in expected.estimated if f == d))
        return explain(result, observed, expected, share, "the burn")

    return each_gpu(name, gpus, outcomes, one)


# Each dtype must have computed at least this share of its planned part of the burn (its GPU time over
# its share of the burn's seconds) for its rate to be a sustained one. The set-up and warm-up come out
# of a dtype's share: fp8's (cuBLASLt's plan through nvmath-python) left it 2.37 s of GPU time in its
# 5 s on a healthy H200 (0.47; benchmarks/RESULTS.md, 2026-11-26), the least of any dtype on either
# GPU; a quarter is half of that (nodeqc's choice), far above a GPU whose products return at once.
BURN_MIN_LOAD_SHARE = 0.25


def burn_load_short(dtypes: dict[str, Any]) -> list[str]:
    """The dtypes that computed less than BURN_MIN_LOAD_SHARE of their planned seconds, as said; none
    for a result that carries no plan (made before the burn recorded it)."""
    short = []
    for d, m in dtypes.items():
        planned = m.get("planned_s")
        if isinstance(planned, (int, float)) and planned > 0 and m["seconds"] < BURN_MIN_LOAD_SHARE * planned:
            short.append(f"{d} computed {m['seconds']:g} s of its {planned:g} s ({m['products']} products; "
                         f"needs {BURN_MIN_LOAD_SHARE:g} of it)")
    return short


def _dtype_seen(window: GpuTelemetry | None, m: dict[str, Any]) -> GpuTelemetry | None:
    """Telemetry of one dtype's span (matmul_burn's start_s/end_s on the run's clock), or None."""
    if window is None or not isinstance(m.get("start_s"), (int, float)) or not isinstance(m.get("end_s"), (int, float)):
        return None
    return window.between(m["start_s"], m["end_s"])


def _seen_readings(part: GpuTelemetry) -> dict[str, Any]:
    """A dtype's evidence of its span: mean SM clock and power under load, and the clocks-event
    reasons seen there with their seconds (idle and application clocks are no throttling)."""
    clock, power = part.loaded_sm_clock_mhz.mean, part.loaded_power_w.mean
    return {"sm_clock_mhz": None if is_na(clock) else round(clock),
            "power_w": None if is_na(power) else round(power, 1),
            "throttle_s": {k: round(v, 2) for k, v in sorted(part.throttle_s.items())
                           if k not in ("gpu_idle", "applications_clocks") and v > 0}}


def _power_finding(window: GpuTelemetry | None, profile: Profile, values: dict[str, Value],
                   thresholds: list[Threshold | None], code: str = "BURN_POWER_LOW") -> Finding | None:
    """Clocks, power and throttling while the products ran; power must reach its share of the limit."""
    if window is None or window.loaded_power_w.count == 0 or is_na(window.power_limit_w):
        return None
    fraction = round(window.loaded_power_w.mean / window.power_limit_w, 3)
    values["power_fraction"] = Value(fraction)
    values["power_w"] = Value(round(window.loaded_power_w.mean, 1), "W")
    values["sm_clock_mhz"] = Value(round(window.loaded_sm_clock_mhz.mean), "MHz")
    values["throttle_s"] = Value(round(window.failing_throttle_s(), 2), "s")
    limit = profile.threshold("gpu", "min_power_fraction")
    thresholds.append(limit)
    if limit is None:
        return None
    return judge(limit, fraction, code,
                 f"power under load {window.loaded_power_w.mean:.0f} W of the {window.power_limit_w:g} W limit, a fraction of")


# ---------------------------------------------------------------------- power

# The pulse test's periods: from fast swings the power supplies' control loops must follow (20 ms)
# to swings their output capacitors must ride (1 s). On an H100 SXM5, bursts at 20/100/500 ms drove
# NVML's instantaneous power to 881-951 W against a 700 W limit with no throttling: peaks over the
# limit are normal, throttling and lost GPUs are not (shared/measurements/README.md).
PULSE_PERIODS_S = (0.02, 0.1, 0.5, 1.0)
TRANSIENT_REASONS = ("hw_slowdown", "power_brake")  # the PSU and power-delivery signals
# A brake the swings cause lasts at most their loaded half (duty about 0.5, as the worker drives
# them). A brake counted for half or more of the steady load is standing: the chassis or the GPU
# holds it whatever the load does, health.throttle fails it, and the counter has no headroom left
# to tell a swing's brake from it (a 98% standing brake, read as 100% over a period, would show
# 2% "beyond" it and blame the power delivery's transients for the wrong fault).
STANDING_BRAKE_MS_PER_S = 500.0


# The power test's figure is the mean of the power readings under load: a handful of them at least
# (nodeqc's choice: a mean, not one reading; NVML's power reading changes about 10 times a second on
# the H100 SXM5, shared/measurements/README.md). The load lasts as long as the sampler needs to take
# them (nodeqc.work.telemetry.TelemetrySampler.wall_s_to_see), however slowly NVML answers.
POWER_LOADED_SAMPLES = 4
# The plain load ends only once it has run its planned seconds (workloads.burn), which its result
# keeps to the millisecond: a load that ran short by more than that rounding stopped early (nodeqc's
# choice of tolerance).
HELD_TOLERANCE_S = 0.001


def power_load_short(r: dict[str, Any], window: GpuTelemetry) -> str | None:
    """Why the power test did not prove the load it claimed, from its own measurements: the plain
    load ran its planned seconds in at least one step, and telemetry took POWER_LOADED_SAMPLES power
    readings under it (the figure is their mean). None where it did, and for a result from before
    the load was proven (no `planned_s`): judged as before."""
    if "planned_s" not in r:
        return None
    planned, held, steps = float(r["planned_s"]), float(r["seconds"]), int(r.get("steps", 0))
    said = []
    if steps < 1 or held < planned - HELD_TOLERANCE_S:
        said.append(f"the load ran {fmt(held, 's')} in {steps} step(s) of the {fmt(planned, 's')} planned")
    read = window.loaded_power_w.count
    if read < POWER_LOADED_SAMPLES:
        said.append(f"telemetry took {read} power reading(s) under load, fewer than the {POWER_LOADED_SAMPLES} "
                    "its figure is the mean of")
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
        finding = _power_finding(window, profile, values, thresholds, code="POWER_TARGET_LOW")
        if finding is None:  # NVML reports no power, no limit or no utilisation for this GPU
            return skip(name, g.subject, "no power readings under load")
        short = power_load_short(r, window)
        if short:  # a figure of a load not held is no figure: never a pass, nor a fail
            return CheckResult(name, g.subject, Verdict.ERROR, short, code="POWER_LOAD_NOT_REACHED",
                               values={**values, "held_s": Value(r["seconds"], "s"),
                                       "loaded_readings": Value(window.loaded_power_w.count)},
                               evidence={"load": {k: r.get(k) for k in ("planned_s", "seconds", "steps")},
                                         "loaded_readings_needed": POWER_LOADED_SAMPLES}, key="power_fraction")
        values["temp_max"] = Value(window.stats["temp_c"].max, "C")
        result = fold(name, g.subject, [finding], values, thresholds, key="power_fraction")
        if result.verdict is Verdict.PASS:
            result.message = (f"held {values['power_w']} of the {window.power_limit_w:g} W limit "
                              f"({values['power_fraction']}) for {r['seconds']:g} s at {values['sm_clock_mhz']}")
        return explain(result, Observed.of(g, window), Expected.of(g, [PLAIN_LOAD_DTYPE]), None, "the power test")

    return each_gpu(name, gpus, outcomes, one)


# The pulse must pulse before its verdict means anything (2026-11-26: on a real H100 SXM5 and H200 each
# burst was one product, duty 0.006-0.084, 125-184 W through the 100 ms-1 s periods, and the check
# passed). Each swinging period proves its load from the worker's own timing: the share of the period
# the GPU computed, between these bounds (issue 23; warmed, the same workload achieved 0.446-0.553 on
# the H200: shared/measurements/2026-11-26/h200-pulse-warmed.jsonl).
PULSE_DUTY = (0.35, 0.65)
# A period whose boundary passed before its burst began has none (a host short of CPU: eight simulated
# GPUs on two busy cores skipped up to four in five of the 20 ms periods): up to three periods in four
# may go without, the swings still come at their period and each burst still fills half of its own
# (nodeqc's choice); fewer bursts than that leave too few swings to call it a pulse.
PULSE_MAX_SKIPPED_PER_BURST = 3
# A period shorter than this in real time is not paced by any host: the duty and skipped periods are
# judged only at periods at least this long in real seconds. On real hardware every period is (the
# fastest is 20 ms, and a real H200 paced it at duty 0.446); only the simulated node, whose clock runs
# 10-1000 times faster than real time, makes its 20 ms period 2 ms or less, which a Python worker
# on a busy CPU cannot pace (nodeqc's choice: the shortest period the test runs on real GPUs).
PULSE_MIN_REAL_PERIOD_S = 0.02
# ...and, from this period up, a swing of the power NVML reads (faster swings are averaged away by
# NVML's power reading, which changes about ten times a second): the highest reading in the period
# less the lowest at least this share of the enforced limit. Warmed, the H200's readings swung 86 W
# at 100 ms, 177 W at 500 ms and 181 W at 1 s against its 700 W limit (0.12-0.26 of it, polled fast);
# a twentieth of the limit (35 W) is under half the smallest of those, for telemetry's sparser
# samples (nodeqc's choice), and about five times a steady load's reading-to-reading noise.
PULSE_SWING_MIN_PERIOD_S = 0.1
PULSE_MIN_SWING_SHARE = 0.05
# The worker reads NVML's power at the end of every burst and every idle half from this period up,
# and in the second half of the steady load before the swings. NVML shows a swing two ways, and the
# larger counts:
# - in phase: the mean at the bursts' ends less the mean at the idle halves' ends, of the averaged
#   reading or of the instantaneous one (NVML_FI_DEV_POWER_INSTANT). On a real H100 SXM5 (2026-11-26,
#   benchmarks/RESULTS.md) the instantaneous reading swung 627 W at 500 ms and 642 W at 1 s; the
#   averaged one, which averages about the last second there, 9 W at 500 ms;
# - in level: the steady load's averaged reading less the mean of the period's readings (a GPU idle
#   half the time draws less on average). At 100 ms NVML's readings, which change about ten times a
#   second, land on the same phase of every period and show no swing in phase (0 W on the H100, its
#   readings held from the end of a burst to the end of the idle half); the level fell 214 W (488 W
#   under the swings against 702 W under the steady load).
# At least this many readings of each are needed (a quick 1 s period gives two).
PULSE_PHASE_READINGS = 2
# Where the worker could not read NVML (an old result), telemetry's own readings inside the period
# stand in: the highest less the lowest, from at least this many (fewer can all land in one half of
# the swings: a quick period of 2 s at the default 4 Hz holds 8). With neither, the swing is not
# judged and the evidence says so; the duty still is.
PULSE_SWING_READINGS = 4


def _phase_swing(read: dict[str, Any], steady: dict[str, Any] | None) -> tuple[float | None, str]:
    """The swing the worker's readings show (W), and how it is said; None: too few readings."""
    best: tuple[float | None, str] = (None, "")
    for kind, said in (("", "power"), ("_instant", "instantaneous power")):
        high, low = read.get(f"high{kind}") or {}, read.get(f"low{kind}") or {}
        if min(high.get("n", 0), low.get("n", 0)) < PULSE_PHASE_READINGS:
            continue
        swing = high["mean"] - low["mean"]
        if best[0] is None or swing > best[0]:
            best = (swing, f"the {said} NVML read swung {swing:.0f} W in phase (mean {high['mean']:.0f} W at the "
                           f"bursts' ends, {low['mean']:.0f} W at the idle halves' ends, {high['n']} of each)")
    high, low = read.get("high") or {}, read.get("low") or {}
    level = (steady or {}).get("high") or {}
    if level.get("n", 0) >= PULSE_PHASE_READINGS and min(high.get("n", 0), low.get("n", 0)) >= PULSE_PHASE_READINGS:
        mean = (high["mean"] * high["n"] + low["mean"] * low["n"]) / (high["n"] + low["n"])
        drop = level["mean"] - mean
        if best[0] is None or drop > best[0]:
            best = (drop, f"the power NVML read fell {drop:.0f} W in level (mean {mean:.0f} W under the swings, "
                          f"{level['mean']:.0f} W under the steady load)")
    return best


def _steady_level(spans: list[dict[str, Any]], window: GpuTelemetry | None) -> dict[str, Any] | None:
    """The steady load's power before the swings: the worker's readings in its second half, or (a
    result without them) telemetry's readings there; None without either."""
    span = next((s for s in spans if s["period_s"] == 0), None)
    if span is None:
        return None
    if span.get("power_read"):
        return span["power_read"]
    middle = (span["start_s"] + span["end_s"]) / 2
    watts = [float(r.power_w) for r in (window.readings_between(middle, span["end_s"]) if window is not None else [])
             if not is_na(r.power_w)]
    return {"high": {"n": len(watts), "mean": sum(watts) / len(watts)}} if watts else None


def pulse_load(spans: list[dict[str, Any]], window: GpuTelemetry | None) -> tuple[list[dict[str, Any]], list[str]]:
    """Each swinging period's proof of its load: (per period: its duty, bursts, skipped periods and
    the power swing NVML saw, and whether that was judged; what fell short, as said)."""
    limit = None if window is None or is_na(window.power_limit_w) else float(window.power_limit_w)
    steady = _steady_level(spans, window)
    proof, short = [], []
    for span in spans:
        period = span["period_s"]
        if period <= 0:
            continue
        ms = f"{period * 1000:g} ms"
        entry: dict[str, Any] = {"period_ms": period * 1000, "duty": span.get("duty"), "products": span.get("products")}
        duty = span.get("duty")
        cycles, skipped = span.get("cycles", 0), span.get("skipped", 0)
        entry["cycles"], entry["skipped"] = cycles, skipped
        real = span.get("real_period_s", period)
        paced = real >= PULSE_MIN_REAL_PERIOD_S - 1e-9
        if not paced:
            entry["pace_judged"] = False
            entry["pace_not_judged"] = (f"the {ms} period ran in {real * 1000:g} ms of real time (a compressed "
                                        f"simulated clock): no host paces under {PULSE_MIN_REAL_PERIOD_S * 1000:g} ms")
        elif not isinstance(duty, (int, float)) or not PULSE_DUTY[0] <= duty <= PULSE_DUTY[1]:
            shown = "no duty reported" if not isinstance(duty, (int, float)) else f"duty {duty:.3f}"
            short.append(f"at the {ms} period the GPU computed {shown} of the time "
                         f"(planned {PULSE_DUTY[0]:g}-{PULSE_DUTY[1]:g})")
        if paced and skipped > PULSE_MAX_SKIPPED_PER_BURST * cycles:
            short.append(f"at the {ms} period {skipped} of {cycles + skipped} periods had no burst "
                         "(a burst overran into them, or the host started it late)")
        if period >= PULSE_SWING_MIN_PERIOD_S:
            swing, said = _phase_swing(span.get("power_read") or {}, steady)
            if swing is None:
                watts = [float(r.power_w) for r in (window.readings_between(span["start_s"], span["end_s"])
                                                     if window is not None else []) if not is_na(r.power_w)]
                if len(watts) >= PULSE_SWING_READINGS:
                    swing = max(watts) - min(watts)
                    said = (f"the power telemetry read swung {swing:.0f} W ({min(watts):.0f}-{max(watts):.0f} W "
                            f"over {len(watts)} readings)")
            judged = swing is not None and limit is not None and limit > 0
            entry["swing_judged"] = judged
            if swing is not None:
                entry["swing_w"] = round(swing, 1)
                entry["swing_said"] = said
            if judged:
                assert swing is not None and limit is not None
                need = PULSE_MIN_SWING_SHARE * limit
                if swing < need:
                    short.append(f"at the {ms} period {said}: needs {need:.0f} W, "
                                 f"{PULSE_MIN_SWING_SHARE:g} of the {limit:g} W limit")
        proof.append(entry)
    return proof, short


def pulse_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {"periods_s": list(PULSE_PERIODS_S), "seed": SEED, "dtype": "fp16", "read_power_from_s": PULSE_SWING_MIN_PERIOD_S,
            "seconds_per_period": float(profile.get("run", "quick_pulse_s" if quick else "pulse_s"))}


def judge_pulse(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
                profile: Profile) -> list[CheckResult]:
    """HW slowdown or power brake while the load swings fails, naming the period it happened at
    (the node's power delivery cannot follow swings that fast), unless the same reason showed under
    the steady load before the swings (then it is the load's: health.throttle judges it); a GPU lost
    under the swings fails as a lost GPU (the worker's outcome).

    Power brake is timed by the driver's own counter, read at each period's start and end: a brake
    shorter than the gap between telemetry samples still lands in its period. Where the driver does
    not count it (NotSupported), and for HW slowdown, which NVML keeps no counter of, the sampled
    onsets attribute it. The evidence says which was used for each reason."""
    name = "stress.power_pulse"
    limit = profile.threshold("gpu", "max_pulse_brake_ms")

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        window = windows.get(g.index)
        spans = r["periods"]
        values = {"periods": Value(len(spans))}
        if window is not None and window.samples:
            values["power_min_w"] = Value(window.stats["power_w"].min, "W")
            values["power_max_w"] = Value(window.stats["power_w"].max, "W")
        counted, counted_s = _counted_per_period(spans, window.counter_marks if window is not None else [])
        sampled = window is not None and window.samples > 0
        if not counted and not sampled:
            # Nothing watched the swings: never a pass. As with the power test's POWER_NOT_READ,
            # telemetry that missed a stress means the check could not run (ERROR, exit 2).
            return CheckResult(name, g.subject, Verdict.ERROR, "the load swung, but no telemetry sample and no "
                               "driver throttle counter was read, so HW slowdown and power brake were not observed; "
                               "not judged", code="PULSE_NOT_OBSERVED", values=values)
        assert window is not None  # neither counted nor sampled without a window: returned above
        unseen = [REASON_TEXT[x] for x in TRANSIENT_REASONS if x not in counted and not sampled]
        method = {reason: ("driver counter, read at each period's start and end" if reason in counted else
                           "sampled onsets (" + ("NVML keeps no counter of it" if reason not in COUNTED_REASONS
                                                 else "the driver's counter is not supported here") + ")")
                  for reason in TRANSIENT_REASONS}
        hits: dict[float, set[str]] = {}
        for onset in window.throttle_onsets.kept:
            reasons = {x for x in onset["reasons"] if x in TRANSIENT_REASONS and x not in counted}
            span = next((p for p in spans if p["start_s"] <= onset["t_s"] <= p["end_s"]), None)
            if reasons and span is not None:
                hits.setdefault(span["period_s"], set()).update(reasons)
        # period -> reason -> how it is said; failing and warning apart
        findings: dict[float, dict[str, str]] = {}
        warnings: dict[float, dict[str, str]] = {}
        standing: dict[str, float] = {}  # reason -> ms a second under the steady load, where it held throughout
        for reason, per_period in counted.items():
            # What the steady load brought is the load's (health.throttle judges it): a period is
            # judged on the brake beyond the steady load's rate over as long a time, the time the
            # counter counted over (between its two reads, which include the gaps around a period).
            # Each period has its count (else the reason is not counted at all) and its time between
            # the marks; no steady load (0 s, or a plan without one) leaves the swings all theirs.
            steady_per_s = per_period[0.0] / counted_s[0.0] if counted_s.get(0.0) else 0.0
            if steady_per_s >= STANDING_BRAKE_MS_PER_S:
                standing[reason] = steady_per_s
                continue
            for period, ms in per_period.items():
                excess = round(ms - steady_per_s * counted_s[period], 3)
                if period == 0.0 or excess <= 0:
                    continue
                verdict = limit.judge(excess) if limit is not None else Verdict.FAIL
                text = f"{REASON_TEXT[reason]} for {fmt(excess, 'ms')}" + (
                    f" beyond the steady load's {fmt(round(steady_per_s, 3), 'ms')} a second" if steady_per_s else "")
                if verdict is Verdict.FAIL:
                    findings.setdefault(period, {})[reason] = text
                elif verdict is Verdict.WARN:
                    warnings.setdefault(period, {})[reason] = text
        # Period 0 is the steady load before the swings: what it shows is the load's, not the swings'.
        steady = hits.pop(0.0, set())
        for period, why in hits.items():
            for reason in why - steady:
                findings.setdefault(period, {})[reason] = REASON_TEXT[reason]

        def said(by_period: dict[float, dict[str, str]]) -> str:
            # One finding, so never '; ' (the faces split a message there into findings, and showed
            # only the first period).
            return ", ".join(f"{' and '.join(texts[x] for x in sorted(texts))} at the {period * 1000:g} ms period"
                             for period, texts in sorted(by_period.items()))

        swinging = [p for p in spans if p["period_s"] > 0]
        proof, short = pulse_load(spans, window)
        steady_span = next((p for p in spans if p["period_s"] == 0), None)
        evidence = {"periods": swinging, "steady": steady_span, "load": proof, "attributed_by": method,
                    "counted_ms": {reason: {f"{p * 1000:g}": round(ms, 3) for p, ms in sorted(per.items())}
                                   for reason, per in counted.items()},
                    "counter_marks": window.counter_marks, "throttle_onsets": window.throttle_onsets.kept}
        thresholds = [limit] if limit is not None and counted else []
        if findings:
            shown = said(findings)
            values["fastest_failing_period_ms"] = Value(min(findings) * 1000, "ms")
            return CheckResult(name, g.subject, Verdict.FAIL, f"clocks cut while the load swung: {shown}",
                               code="POWER_PULSE_THROTTLE", values=values, evidence=evidence,
                               thresholds=thresholds, key="fastest_failing_period_ms")
        if short or not swinging:
            # Not a pass: the swings this check is about did not happen as planned (a FAIL above
            # stands: the clocks were cut under whatever swings there were).
            said_short = "; ".join(short) if short else "no swinging period ran"
            return CheckResult(name, g.subject, Verdict.ERROR, f"the load did not swing as planned: {said_short}; "
                               "not judged", code="PULSE_LOAD_NOT_REACHED", values=values, evidence=evidence,
                               thresholds=thresholds, key="periods")
        periods = ", ".join(f"{p['period_s'] * 1000:g}" for p in swinging)
        if warnings:
            shown = said(warnings)
            return CheckResult(name, g.subject, Verdict.WARN,
                               f"brief clock cuts while the load swung: {shown} (within the limit "
                               f"{limit.describe()})", code="POWER_PULSE_THROTTLE", values=values,
                               evidence=evidence, thresholds=thresholds, key="periods")
        # Sampled reasons the window saw that no swing brought (begun under the steady load, or between
        # two periods, then perhaps held through the swings: telemetry keeps when a reason began, not
        # when it ended): not this check's to fail, and never said absent. health.throttle judges their
        # time (it fails HW slowdown and power brake over max_throttle_s wherever they happen).
        outside = {x: window.throttle_s[x] for x in TRANSIENT_REASONS
                   if x not in counted and window.throttle_s.get(x, 0.0) > 0}
        seen = " or ".join(REASON_TEXT[x] for x in TRANSIENT_REASONS
                           if REASON_TEXT[x] not in unseen and x not in standing and x not in outside)
        apart = "; ".join(f"{REASON_TEXT[x]} seen for {fmt(round(t, 2), 's')} of this test, not begun in a swing "
                          "(health.throttle judges it)" for x, t in outside.items())
        held = "; ".join(f"{REASON_TEXT[x]} held {fmt(round(rate, 1), 'ms')} of every second of the steady load, so "
                         "the swings cannot show more (health.throttle judges it)" for x, rate in standing.items())
        message = f"load swung at {periods} ms periods" + (f" with no {seen}" if seen else "") + (
            f" ({' and '.join(unseen)} not observed: no telemetry sample)" if unseen else "") + (
            f"; {held}" if held else "") + (f"; {apart}" if apart else "")
        return CheckResult(name, g.subject, Verdict.PASS, message,
                           values=values, evidence=evidence, thresholds=thresholds, key="periods")

    return each_gpu(name, gpus, outcomes, one)


def _counted_per_period(spans: list[dict[str, Any]], marks: list[dict[str, Any]]
                        ) -> tuple[dict[str, dict[float, float]], dict[float, float]]:
    """(reason -> period -> ms the driver counted between the period's start and end marks, for each
    transient reason the driver counted at both marks of every period (else that reason falls back
    to the sampled onsets: one period without a count would leave a hole in the judgement);
    period -> seconds between its two marks, the time those counts cover)."""
    out: dict[str, dict[float, float]] = {}
    between: dict[float, float] = {}
    for span in spans:
        at = {m["bound"]: m["t_s"] for m in marks if m.get("period_s") == span["period_s"]}
        if "start" in at and "end" in at:
            between[span["period_s"]] = max(at["end"] - at["start"], 0.0)
    for reason in TRANSIENT_REASONS:
        if reason not in COUNTED_REASONS:
            continue
        per: dict[float, float] = {}
        for span in spans:
            at = {m["bound"]: m["throttle_ns"].get(reason) for m in marks if m.get("period_s") == span["period_s"]}
            start, end = at.get("start"), at.get("end")
            if start is None or end is None or end < start:
                per = {}
                break
            per[span["period_s"]] = (end - start) / 1e6
        if per:
            out[reason] = per
    return out, between


REASON_TEXT = {"hw_slowdown": "HW slowdown", "power_brake": "power brake"}


# ---------------------------------------------------------------------- device memory

def hbm_params(profile: Profile, quick: bool) -> dict[str, Any]:
    # 1 GiB per buffer is far beyond any L2 cache (50 MB on H100), so the figure is DRAM's.
    return {"bytes": GIB, "trials": 3 if quick else 5, "iters": 10}


HBM_KINDS = ("copy", "triad")


def hbm_load_short(r: dict[str, Any]) -> str | None:
    """Why the bandwidth test did not prove the bytes it claimed to move: every one of its
    trials x iters timed passes of the buffer done for both kinds (copy and triad), with bytes moved
    and a rate above 0 GB/s measured for each. None where it did, and for a result from before the
    load was proven (no `passes`): judged as before."""
    if "passes" not in r:
        return None
    planned = int(r["planned_passes"])
    said = []
    for kind in HBM_KINDS:
        done, moved = int(r["passes"].get(kind, 0)), int(r.get("moved_bytes", {}).get(kind, 0))
        if done < planned or moved <= 0 or not r[f"{kind}_gbps"] > 0:
            said.append(f"{kind} {done} of {planned} passes of the {fmt(round(r['bytes'] / GIB, 2), 'GiB')} buffer, "
                        f"{fmt(round(moved / GIB, 2), 'GiB')} moved, {fmt(r[f'{kind}_gbps'], 'GB/s')}")
    return "the bandwidth test did not move its load: " + ", ".join(said) + "; not judged" if said else None


def judge_hbm(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
              profile: Profile) -> list[CheckResult]:
    name = "stress.hbm_bandwidth"
    ok = {i: o.result for i, o in outcomes.items() if o.ok}
    median = _median([r["copy_gbps"] for r in ok.values()])
    floor = profile.threshold("gpu", "min_hbm_gbps")

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        short = hbm_load_short(r)
        if short and r["verified"]:  # wrong data fails whatever load moved it; a rate needs its load
            return CheckResult(name, g.subject, Verdict.ERROR, short, code="HBM_LOAD_NOT_REACHED",
                               values={"copy_gbps": Value(r["copy_gbps"], "GB/s"),
                                       "triad_gbps": Value(r["triad_gbps"], "GB/s")},
                               evidence={k: r.get(k) for k in ("passes", "planned_passes", "moved_bytes", "bytes")},
                               key="copy_gbps")
        findings = []
        if not r["verified"]:
            findings.append(Finding(Verdict.FAIL, "HBM_CORRUPT",
                                    "the copied data came back wrong" + _wrong_data(r["mismatch"])))
        findings.append(judge(floor, r["copy_gbps"], "HBM_SLOW", "copy bandwidth", "GB/s"))
        outlier = _outlier(profile, r["copy_gbps"], median, len(ok), "HBM_OUTLIER", "copy bandwidth", "GB/s")
        if outlier:
            findings.append(outlier)
        result = fold(name, g.subject, findings,
                      {"copy_gbps": Value(r["copy_gbps"], "GB/s"), "triad_gbps": Value(r["triad_gbps"], "GB/s")},
                      [floor, profile.threshold("gpu", "max_outlier_pct")], key="copy_gbps")
        expected = Expected.of(g)
        share = expected.share({"hbm": r["copy_gbps"]}, {"hbm": median} if median else None)
        return explain(result, Observed.of(g, windows.get(g.index)), expected, share, "the bandwidth test")

    return each_gpu(name, gpus, outcomes, one)


def memtest_params(profile: Profile, quick: bool) -> dict[str, Any]:
    """Quick mode runs the short pattern set; a full run adds the full-mode patterns and bit fade."""
    return {"fraction": profile.get("gpu", "memtest_fraction", 0.9), "full": not quick,
            "retention_s": 0.0 if quick else float(profile.get("run", "memtest_retention_s"))}


# How far below the asked fraction of free memory the memory test's buffer may fall: the buffer is
# the fraction of free memory rounded down to whole 8-byte words (backends/cupy_compute.py), which
# loses under 8 bytes; half a percentage point leaves room for a backend that rounds to larger
# blocks, and is still far less than any memory a failing run leaves untested (nodeqc's choice).
MEMTEST_COVERAGE_TOLERANCE = 0.005


def memtest_load_short(r: dict[str, Any]) -> str | None:
    """Why the memory test did not prove the coverage it claimed: bytes tested against the fraction
    of free memory asked, less MEMTEST_COVERAGE_TOLERANCE, and every pattern of its program run.
    None where it did, and for a result from before the coverage was proven (no `fraction`)."""
    if "fraction" not in r:
        return None
    asked, free = float(r["fraction"]), int(r["free_bytes"])
    coverage = r["bytes"] / free if free > 0 else 0.0
    said = []
    if coverage < asked - MEMTEST_COVERAGE_TOLERANCE:
        said.append(f"tested {fmt(round(r['bytes'] / GIB, 2), 'GiB')}, {fmt(round(100 * coverage, 1), '%')} of the "
                    f"{fmt(round(free / GIB, 2), 'GiB')} free, short of the {fmt(round(100 * asked, 1), '%')} asked "
                    f"(tolerance {fmt(100 * MEMTEST_COVERAGE_TOLERANCE, '%')})")
    planned = int(r.get("patterns_planned", 0))
    if len(r["passes"]) < planned:
        said.append(f"{len(r['passes'])} of its {planned} patterns ran")
    return "the memory test did not cover what it was asked to: " + " and ".join(said) + "; not judged" \
        if said else None


def judge_memtest(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
                  profile: Profile) -> list[CheckResult]:
    name = "stress.memtest"

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        values = {"errors": Value(r["errors"]), "tested": Value(round(r["bytes"] / GIB, 2), "GiB"),
                  "coverage_pct": Value(round(100 * r["bytes"] / r["free_bytes"], 1), "%"),
                  "gbps": Value(r["gbps"], "GB/s")}
        evidence = {"passes": r["passes"], "first_errors": r["first"]}
        if r["errors"]:
            e = r["first"][0]
            bad = [p["pattern"] for p in r["passes"] if p["errors"]]
            return CheckResult(name, g.subject, Verdict.FAIL,
                               f"{r['errors']} wrong word(s) in {', '.join(bad)}: first at {e['address']} "
                               f"expected {e['expected']} got {e['actual']} (xor {e['xor']})",
                               code="MEMTEST_ERRORS", values=values, evidence=evidence, key="errors")
        short = memtest_load_short(r)
        if short:  # no errors in less memory than asked is no clean bill: not judged
            return CheckResult(name, g.subject, Verdict.ERROR, short, code="MEMTEST_LOAD_NOT_REACHED",
                               values=values, evidence={**evidence, "fraction": r["fraction"],
                                                        "patterns_planned": r.get("patterns_planned")},
                               key="coverage_pct")
        return CheckResult(name, g.subject, Verdict.PASS,
                           f"{len(r['passes'])} patterns over {values['tested']} "
                           f"({values['coverage_pct']} of free memory): no errors",
                           values=values, evidence=evidence, key="errors")

    return each_gpu(name, gpus, outcomes, one)


# ---------------------------------------------------------------------- host <-> device

def pcie_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {"bytes": 256 * MIB, "trials": 3, "iters": 8, "min_seconds": 3.0 if quick else 10.0}


PCIE_DIRECTIONS = ("h2d", "d2h", "bidir")


def pcie_load_short(r: dict[str, Any]) -> str | None:
    """Why the host copies did not prove the traffic they claimed: bytes moved and a rate above
    0 GB/s in each direction (to the GPU, from it, both at once), and copies lasting min_seconds,
    the time telemetry needs to read the link under traffic. The result keeps its seconds to the
    millisecond (HELD_TOLERANCE_S). None where they did, and for a result from before the load was
    proven (no `moved_bytes`): judged as before."""
    if "moved_bytes" not in r:
        return None
    said = [f"{d} moved {fmt(round(r['moved_bytes'].get(d, 0) / GIB, 2), 'GiB')} at {fmt(r[f'{d}_gbps'], 'GB/s')}"
            for d in PCIE_DIRECTIONS if r["moved_bytes"].get(d, 0) <= 0 or not r[f"{d}_gbps"] > 0]
    if float(r["seconds"]) < float(r["min_seconds"]) - HELD_TOLERANCE_S:
        said.append(f"the copies lasted {fmt(r['seconds'], 's')} of the {fmt(r['min_seconds'], 's')} planned")
    return "the host copies did not carry their load: " + ", ".join(said) + "; not judged" if said else None


def judge_pcie(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
               profile: Profile) -> list[CheckResult]:
    name = "stress.pcie_bandwidth"
    ok = {i: o.result for i, o in outcomes.items() if o.ok}
    medians = {k: _median([r[k] for r in ok.values()]) for k in ("h2d_gbps", "d2h_gbps")}

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        short = pcie_load_short(r)
        if short and r["verified"]:  # wrong data fails whatever load carried it; a rate needs its load
            return CheckResult(name, g.subject, Verdict.ERROR, short, code="PCIE_LOAD_NOT_REACHED",
                               values={k: Value(r[k], "GB/s") for k in ("h2d_gbps", "d2h_gbps", "bidir_gbps")},
                               evidence={k: r.get(k) for k in ("moved_bytes", "seconds", "min_seconds", "bytes")},
                               key="h2d_gbps")
        findings, thresholds = [], []
        if not r["verified"]:
            findings.append(Finding(Verdict.FAIL, "PCIE_COPY_CORRUPT",
                                    "data copied to the GPU and back came back wrong" + _wrong_data(r["mismatch"], "byte")))
        values = {k: Value(r[k], "GB/s") for k in ("h2d_gbps", "d2h_gbps", "bidir_gbps")}
        link = r.get("link", {})
        if "gen" in link:
            gen, width = link["gen"], link["width"]
            values["link_during_copy"] = Value(f"Gen{gen} x{width}")
            want_gen = profile.get("gpu", "pcie_gen", link["max_gen"])
            want_width = profile.get("gpu", "pcie_width", link["max_width"])
            if width < want_width:
                findings.append(Finding(Verdict.FAIL, "PCIE_WIDTH", f"link at x{width} during the copies, expected x{want_width}"))
            if gen < want_gen:
                findings.append(Finding(Verdict.FAIL, "PCIE_GEN", f"link at Gen{gen} during the copies, expected Gen{want_gen}"))
        for key, what in (("h2d_gbps", "host-to-device"), ("d2h_gbps", "device-to-host")):
            floor = profile.threshold("gpu", f"min_{key}")
            thresholds.append(floor)
            findings.append(judge(floor, r[key], "PCIE_BW_LOW", what, "GB/s"))
            outlier = _outlier(profile, r[key], medians[key], len(ok), "PCIE_BW_OUTLIER", what, "GB/s")
            if outlier:
                findings.append(outlier)
        result = fold(name, g.subject, findings, values, thresholds, key="h2d_gbps")
        expected = Expected.of(g)
        share = expected.share({"h2d": r["h2d_gbps"], "d2h": r["d2h_gbps"]},
                               {"h2d": medians["h2d_gbps"], "d2h": medians["d2h_gbps"]})
        return explain(result, Observed.of(g, windows.get(g.index)), expected, share, "the copies")

    return each_gpu(name, gpus, outcomes, one)


# ---------------------------------------------------------------------- GPU to GPU

def p2p_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {"bytes": 256 * MIB, "iters": 4 if quick else 10}


def _node_expected(gpus: list[GpuInfo]) -> Expected:
    """What a healthy GPU of the node's SKU does (the node's GPUs match: inventory checks that)."""
    return Expected.of(gpus[0]) if gpus else Expected()


def judge_p2p(gpus: list[GpuInfo], outcome: Outcome, profile: Profile,
              windows: dict[int, GpuTelemetry] | None = None) -> list[CheckResult]:
    name = "stress.p2p"
    windows = windows or {}
    failure = outcome_failure(name, "node", outcome)
    if failure:
        return [failure]
    r = outcome.result
    by_index = {g.index: g for g in gpus}
    floor, bidir_floor = profile.threshold("gpu", "min_p2p_gbps"), profile.threshold("gpu", "min_p2p_bidir_gbps")
    latency_limit = profile.threshold("gpu", "max_p2p_latency_us")
    blamed = p2p_corrupt_gpus(r["pairs"])
    standing = _p2p_standing(r["pairs"], by_index)
    results = []
    for g in gpus:
        mine = [p for p in r["pairs"] if g.index in (p["src"], p["dst"])]
        both = [p for p in r["bidir"] if g.index in (p["a"], p["b"])]
        if not mine:
            results.append(skip(name, g.subject, "no peer access to any other GPU"))
            continue
        # What this GPU reaches with most of its peers: one bad GPU drags all its pairs down, while a
        # GPU that merely shares a pair with it keeps a healthy figure (_peer_median).
        uni = _peer_median(mine, g.index, "src", "dst")
        worst_latency = max(p["latency_us"] for p in mine)
        values = {"p2p_gbps": Value(uni, "GB/s"), "latency_us": Value(worst_latency, "us"),
                  "slowest_pair_gbps": Value(min(p["gbps"] for p in mine), "GB/s")}
        findings = []
        corrupt = [p for p in mine if not p["verified"]]
        if g.index in blamed:
            p = corrupt[0]
            findings.append(Finding(Verdict.FAIL, "P2P_CORRUPT",
                                    f"copies with {len(_peers(corrupt, g.index))} of its {len(_peers(mine, g.index))} "
                                    f"peers came back wrong; first gpu{p['src']}->gpu{p['dst']}"
                                    + _wrong_data(p["mismatch"], "byte")))
        findings.append(judge(floor, uni, "P2P_SLOW", "median one-way bandwidth to its peers", "GB/s"))
        if both:
            values["p2p_bidir_gbps"] = Value(_peer_median(both, g.index, "a", "b"), "GB/s")
            findings.append(judge(bidir_floor, values["p2p_bidir_gbps"].value, "P2P_SLOW",
                                  "median two-way bandwidth to its peers", "GB/s"))
        findings.append(judge(latency_limit, worst_latency, "P2P_LATENCY", "worst copy latency", "us"))
        outlier = None
        if g.index in standing:
            path, fastest, median, others = standing[g.index]
            over = f" over {PEER_PATHS[path]}" if path else ""
            outlier = _outlier(profile, fastest, median, others + 1, "P2P_OUTLIER",
                               f"fastest one-way copy to a peer{over}", "GB/s")
        if outlier:
            findings.append(outlier)
        judged_by = [floor, bidir_floor, latency_limit] + ([profile.threshold("gpu", "max_outlier_pct")] if outlier else [])
        result = fold(name, g.subject, findings, values, judged_by, key="p2p_gbps",
                      evidence={"pairs": mine})
        results.append(explain(result, Observed.of(g, windows.get(g.index)), Expected.of(g), None,
                               "the GPU-to-GPU copies"))
    node = _p2p_node(r, by_index, results, profile, blamed)
    results.append(explain_node(node, [Observed.of(g, windows.get(g.index)) for g in gpus], _node_expected(gpus),
                                "the GPU-to-GPU copies"))
    return results


def _peer_median(copies: list[dict[str, Any]], me: int, one_end: str, other_end: str) -> float:
    """A GPU's figure against the P2P floors: the slower of its copies with each peer (either way),
    then the upper median over its peers, so that the GPU falls below a floor exactly when its copies
    with more than half of its peers do, as p2p_corrupt_gpus blames wrong copies. The median of its
    copies, as before, failed healthy GPUs of a three-GPU node beside one slow one: half of each
    one's four copies are with the slow GPU, and the mean of the middle two (400 and 100 GB/s: 250)
    fell below a 300 GB/s floor. With two GPUs, both still fall below (no telling which end is slow)."""
    slower: dict[int, float] = {}
    for p in copies:
        peer = p[other_end] if p[one_end] == me else p[one_end]
        slower[peer] = min(slower.get(peer, p["gbps"]), p["gbps"])
    return statistics.median_high(slower.values())


def _p2p_standing(pairs: list[dict[str, Any]], by_index: dict[int, GpuInfo]
                  ) -> dict[int, tuple[str | None, float, float, int]]:
    """Each GPU's fastest copy to a peer against the other GPUs' fastest copies over the same kind of
    path (NVLink, one PCIe switch, across the CPU sockets: GpuInfo.peer_paths), leaving out the copies
    with the GPU itself: a GPU whose own link is slow reaches no peer fast over any path, while a
    healthy GPU on an uneven PCIe tree (alone on a root port, or across the sockets from the rest) is
    only compared with copies that cross as much. Profiles without a P2P floor (every PCIe-card
    profile) catch a slow GPU this way only.

    A path where fewer than two other GPUs copy without the GPU says nothing of it (gpu0 and gpu1
    alone behind a switch; the one GPU across the sockets, in every copy that crosses): the GPU stands
    where it does best among the paths that do, its fastest there as a share of the others' median.
    GPU -> (the path, None where the node has one kind; its fastest GB/s; the others' median GB/s;
    how many others). A GPU no path can judge is absent. At a tie the nearer path (PEER_PATHS' order)
    stands."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for p in pairs:
        src = by_index.get(p["src"])
        path = (src.peer_paths.get(str(p["dst"])) if src is not None else None) or "unknown"
        by_path.setdefault(path, []).append(p)
    out: dict[int, tuple[str | None, float, float, int]] = {}
    # Paths in PEER_PATHS' order (nearest first), not in the order the copies came: where a GPU stands
    # as well over two paths, the nearer is named, whatever the GPUs are numbered.
    order = list(PEER_PATHS)
    for path in sorted(by_path, key=lambda x: (order.index(x) if x in order else len(order), x)):
        copies = by_path[path]
        for me in {g for p in copies for g in (p["src"], p["dst"])}:
            mine = max(p["gbps"] for p in copies if me in (p["src"], p["dst"]))
            others: dict[int, float] = {}
            for p in copies:
                if me not in (p["src"], p["dst"]):
                    for g in (p["src"], p["dst"]):
                        others[g] = max(others.get(g, 0.0), p["gbps"])
            # A copy that leaves this GPU out joins two others: there are none, or two and more.
            median = _median(list(others.values()))
            if median is None or (median <= 0 and mine <= 0):  # nobody to compare with, or nothing moved
                continue
            if me not in out or _path_share(mine, median) > _path_share(out[me][1], out[me][2]):
                out[me] = (path if len(by_path) > 1 else None, mine, median, len(others))
    return out


def _path_share(fastest: float, median: float) -> float:
    """A GPU's fastest copy over a path as a share of the others' median there. Where the others'
    copies all moved nothing (each with a dead GPU) while this GPU's did, it stands above them: a
    healthy GPU alone on a switch with a dead one is judged by its copies over the other paths, not
    failed over the switch (it was: the path of 0 GB/s was left out, the switch's 0 against 50 kept)."""
    return fastest / median if median > 0 else float("inf")


def _peers(pairs: list[dict[str, Any]], me: int) -> set[int]:
    return {p["src"] if p["dst"] == me else p["dst"] for p in pairs}


def p2p_corrupt_gpus(pairs: list[dict[str, Any]]) -> set[int]:
    """The GPUs to blame for peer copies that came back wrong: those whose copies with more than
    half of their peers were wrong. A bad GPU spoils every pair it is in, while a healthy GPU shares
    only its one pair with it; with two GPUs, or no clear culprit, both ends are blamed. A wrong copy
    between two GPUs neither of which is to blame is a bad path, judged for the node."""
    peers: dict[int, set[int]] = {}
    bad: dict[int, set[int]] = {}
    for p in pairs:
        for me, other in ((p["src"], p["dst"]), (p["dst"], p["src"])):
            peers.setdefault(me, set()).add(other)
            if not p["verified"]:
                bad.setdefault(me, set()).add(other)
    return {g for g, wrong in bad.items() if 2 * len(wrong) > len(peers[g])}


def _p2p_node(r: dict[str, Any], by_index: dict[int, GpuInfo], per_gpu: list[CheckResult], profile: Profile,
              blamed: set[int]) -> CheckResult:
    """The node's view: peer access everywhere the fabric promises it, and slow pairs or wrong copies
    between GPUs that are each fine (a bad link rather than a bad GPU)."""
    name = "stress.p2p"
    missing = [(i, j) for i, j, ok in r["access"] if not ok]
    findings = []
    path_corrupt = [p for p in r["pairs"] if not p["verified"] and not {p["src"], p["dst"]} & blamed]
    if path_corrupt:
        p = path_corrupt[0]
        findings.append(Finding(Verdict.FAIL, "P2P_CORRUPT",
                                f"{len(path_corrupt)} copy path(s) between GPUs not otherwise at fault came back wrong; "
                                f"{by_index[p['src']].subject}->{by_index[p['dst']].subject}"
                                + _wrong_data(p["mismatch"], "byte")))
    if missing and profile.get("gpu", "nvlink_links"):
        shown = ", ".join(f"gpu{i}->gpu{j}" for i, j in missing[:6])
        findings.append(Finding(Verdict.FAIL, "P2P_NO_PEER_ACCESS", f"no peer access for {len(missing)} pair(s): {shown}"))
    passing = {res.subject for res in per_gpu if res.verdict in (Verdict.PASS, Verdict.WARN)}
    floor = profile.threshold("gpu", "min_p2p_gbps")
    if floor is not None:
        slow = [p for p in r["pairs"] if p["gbps"] < floor.fail
                and by_index[p["src"]].subject in passing and by_index[p["dst"]].subject in passing]
        if slow:
            shown = ", ".join(f"{by_index[p['src']].subject}->{by_index[p['dst']].subject} {p['gbps']:g} GB/s" for p in slow[:6])
            findings.append(Finding(Verdict.FAIL, "P2P_PAIR_SLOW", f"{len(slow)} slow pair(s) between healthy GPUs: {shown}"))
    if not findings:
        wrong = sum(1 for p in r["pairs"] if not p["verified"])
        findings.append(Finding(Verdict.PASS, None, f"{len(r['pairs'])} peer pairs, " + (
            f"{wrong} wrong copies, each with a GPU failed for it" if wrong else "every copy verified")))
    return fold(name, "node", findings, {"pairs": Value(len(r["pairs"])), "no_access": Value(len(missing))}, [floor],
                key="pairs", evidence={"access": r["access"], "bidir": r["bidir"]})


def nccl_params(profile: Profile, quick: bool) -> dict[str, Any]:
    # Bus bandwidth only saturates with large messages (nccl-tests: 8-16 GB; 1-4 GiB gets close).
    return {"bytes": GIB if quick else 4 * GIB, "iters": 5 if quick else 20}


def judge_nccl(gpus: list[GpuInfo], outcome: Outcome, profile: Profile,
               windows: dict[int, GpuTelemetry] | None = None) -> list[CheckResult]:
    return _judge_allreduce("stress.nccl", gpus, outcome, windows, profile.threshold("gpu", "min_nccl_busbw_gbps"),
                            "NCCL_SLOW", "", {})


def _judge_allreduce(name: str, gpus: list[GpuInfo], outcome: Outcome, windows: dict[int, GpuTelemetry] | None,
                     floor: Threshold | None, slow_code: str, route: str, env: dict[str, str]) -> list[CheckResult]:
    """An all-reduce across the node's GPUs: every GPU's result exact, bus bandwidth against the floor.
    `route` says how the bytes went (through the NICs for stress.nccl_net), `env` the NCCL settings."""
    windows = windows or {}
    failure = outcome_failure(name, "node", outcome)
    if failure:
        return [failure]
    r = outcome.result
    if "unavailable" in r:
        return [skip(name, "node", f"not run: {r['unavailable']}", code="NCCL_UNAVAILABLE")]
    wrong = {w["gpu"]: w for w in r["wrong"]}
    findings = [judge(floor, r["busbw_gbps"], slow_code, f"all-reduce across {r['gpus']} GPUs{route}: bus bandwidth",
                      "GB/s")]
    # A wrong result on a GPU the node's list does not hold is the node's finding: never lost.
    findings += [Finding(Verdict.FAIL, "NCCL_WRONG_RESULT", f"all-reduce{route} result wrong on gpu{i}, not among "
                         f"the GPUs judged: {_wrong_share(w)}") for i, w in sorted(wrong.items())
                 if i not in {g.index for g in gpus}]
    evidence = {"wrong": r["wrong"], **({"env": env} if env else {})}
    result = fold(name, "node", findings, {"busbw_gbps": Value(r["busbw_gbps"], "GB/s"),
                                           "algbw_gbps": Value(r["algbw_gbps"], "GB/s"),
                                           "message_bytes": Value(r["bytes"], "B")}, [floor], key="busbw_gbps",
                  evidence=evidence)
    judged_here = sorted(i for i in wrong if i in {g.index for g in gpus})
    if judged_here:
        result.message += f"; the result was wrong on {', '.join(f'gpu{i}' for i in judged_here)} (judged on each GPU)"
    # Every GPU's own share of the result, checked: a wrong one is that GPU's finding, named as every
    # other GPU finding is (its index, bus id and serial in the report), not the node's.
    exact = [CheckResult(name, g.subject, Verdict.PASS, f"all-reduce{route} result exact on this GPU") if g.index not in wrong
             else CheckResult(name, g.subject, Verdict.FAIL, f"all-reduce{route} result wrong on this GPU: "
                              f"{_wrong_share(wrong[g.index])}", code="NCCL_WRONG_RESULT", evidence={"wrong": wrong[g.index]})
             for g in gpus]
    return [explain_node(result, [Observed.of(g, windows.get(g.index)) for g in gpus], _node_expected(gpus),
                        f"the all-reduce{route}")] + exact


def _wrong_share(w: dict[str, Any]) -> str:
    return f"{w['count']} element(s), first at {w['index']} expected {w['expected']:g}, got {w['actual']:g} (bits {w['xor']} flipped)"


# NCCL's own switches: peer-to-peer (NVLink, PCIe) and shared memory off, so the all-reduce between
# the node's GPUs goes through the network plugin and the NICs, a peer-less test of every NIC's
# GPUDirect path (Azure's HPC health checks and Meta's gcm run NCCL this way; issue 15).
NCCL_THROUGH_NICS = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}


def nccl_net_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {**nccl_params(profile, quick), "env": NCCL_THROUGH_NICS}


def judge_nccl_net(gpus: list[GpuInfo], outcome: Outcome, profile: Profile,
                   windows: dict[int, GpuTelemetry] | None = None) -> list[CheckResult]:
    return _judge_allreduce("stress.nccl_net", gpus, outcome, windows,
                            profile.threshold("nic", "min_nccl_loopback_busbw_gbps"), "NCCL_NET_SLOW",
                            " through the NICs (P2P and SHM off)", NCCL_THROUGH_NICS)


# ---------------------------------------------------------------------- the plan

@dataclass(frozen=True)
class Step:
    name: str
    workload: str
    params: Callable[[Profile, bool], dict[str, Any]]
    expected_s: Callable[[dict[str, Any]], float]  # a generous bound on the run's clock, for the watchdog
    per_gpu: bool = True  # one task per GPU; else one task across every GPU
    judge_per_gpu: Callable[..., list[CheckResult]] | None = None
    judge_node: Callable[..., list[CheckResult]] | None = None
    # Runs only where the profile sets this floor and the node has an RDMA port (else skipped, saying so).
    needs_rdma_floor: str | None = None
    # Judged from telemetry alone: the load lasts long enough (in real time) for this many readings.
    loaded_samples: int = 0
    # The node's PSUs are read from its BMC before, during and after the step (nodeqc.checks.psu).
    watch_psus: bool = False

    def tasks(self, gpus: list[GpuInfo], profile: Profile, quick: bool, run_t0: float = 0.0,
              min_wall_s: float = 0.0, time_scale: float = 1.0) -> list[Task]:
        """run_t0: the run clock's reading at the run's start, which telemetry counts time from;
        min_wall_s: real seconds the load must last at least (run-clock seconds = real x time_scale)."""
        params = {**self.params(profile, quick), "bus_ids": {g.index: g.bus_id for g in gpus}, "run_t0": run_t0}
        if min_wall_s > 0:
            params["min_wall_s"] = min_wall_s
        expected = self.expected_s(params) + min_wall_s * time_scale
        if self.per_gpu:
            return [Task(self.workload, g.index, params, expected) for g in gpus]
        return [Task(self.workload, gpus[0].index, params, expected, gpus=tuple(g.index for g in gpus))]


PLAN: list[Step] = [
    Step("stress.burn", "matmul", burn_params, lambda p: p["seconds"] + 60, judge_per_gpu=judge_burn),
    Step("stress.power", "burn", power_params, lambda p: p["seconds"] + 60, judge_per_gpu=judge_power,
         loaded_samples=POWER_LOADED_SAMPLES, watch_psus=True),
    Step("stress.power_pulse", "pulse", pulse_params,
         lambda p: (len(p["periods_s"]) + 1) * (p["seconds_per_period"] + 2) + 60, judge_per_gpu=judge_pulse,
         watch_psus=True),
    Step("stress.hbm_bandwidth", "hbm", hbm_params, lambda p: 60, judge_per_gpu=judge_hbm),
    Step("stress.memtest", "memtest", memtest_params, lambda p: 180 + 2 * p["retention_s"], judge_per_gpu=judge_memtest),
    Step("stress.pcie_bandwidth", "pcie", pcie_params, lambda p: p["min_seconds"] + 60, judge_per_gpu=judge_pcie),
    Step("stress.p2p", "p2p", p2p_params, lambda p: 120, per_gpu=False, judge_node=judge_p2p),
    Step("stress.nccl", "nccl", nccl_params, lambda p: 120, per_gpu=False, judge_node=judge_nccl),
    Step("stress.nccl_net", "nccl", nccl_net_params, lambda p: 120, per_gpu=False,
         judge_node=judge_nccl_net, needs_rdma_floor="min_nccl_loopback_busbw_gbps"),
]
