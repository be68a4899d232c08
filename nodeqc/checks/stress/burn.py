"""stress.burn: matrix products in every dtype the profile names, on every GPU at once; each dtype's
sustained rate against its floor and the node's median, the products exact (known answers, repeats,
the same work on every GPU), and the power the GPU reached under them."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from nodeqc.backends.base import GpuInfo
from nodeqc.checks.common import Judgement, fold, judge
from nodeqc.checks.diagnosis import Expected, Observed, explain
from nodeqc.checks.stress.outcomes import SEED, each_gpu, median_or_none, node_outlier
from nodeqc.checks.stress.power import power_finding
from nodeqc.core.known_answer import odd_ones_out
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.core.schema import is_number
from nodeqc.core.skus import NOT_BURNED_REASON, identify
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import GpuTelemetry
from nodeqc.work.workers import Outcome
from nodeqc.work.workloads import BURN_MIN_CHECKS, BURN_MIN_LOAD_SHARE

HEADLINE_DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp64", "fp8")


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
    medians = {d: median_or_none([r["dtypes"][d]["tflops"] for r in ok.values()
                                  if d in r["dtypes"] and is_number(r["dtypes"][d]["tflops"])]) for d in dtypes}
    odd = {d: odd_ones_out({subject[i]: r["dtypes"][d]["fingerprint"] for i, r in ok.items() if d in r["dtypes"]})
           for d in dtypes}

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        # The GPU's dtypes the burn cannot run yet (Blackwell's fp6 and fp4): said, never a silent gap.
        sku = identify(g)
        r = {**r, "not_run": {**r["not_run"], **{d: NOT_BURNED_REASON for d in (sku.not_burned if sku else ())}}}
        rate, values, thresholds = [], {}, []
        wrong_ka, wrong_repeat, wrong_peers, slow = [], [], [], []
        window = windows.get(g.index)
        # What telemetry saw of each dtype in its own span (a Hopper holds its power limit at a clock
        # of each dtype's own); None for a result without spans (an older worker's) or a window
        # without its samples: then only the whole step's telemetry speaks.
        seen = {d: _dtype_seen(window, d, m) for d, m in r["dtypes"].items()}
        for d, m in r["dtypes"].items():
            values[f"{d}_tflops"] = Value(m["tflops"], "TFLOP/s")
            if m["known_answer_mismatch"]:
                wrong_ka.append(d)
            if m["repeat_mismatch"]:
                wrong_repeat.append(d)
            if g.subject in odd[d][1]:
                wrong_peers.append(d)
            if not is_number(m["tflops"]):
                continue  # no rate to judge: burn_load_short says so below
            floor = profile.threshold("gpu", f"min_{d}_tflops")
            thresholds.append(floor)
            mine = [judge(floor, m["tflops"], "BURN_SLOW", f"{d} sustained", "TFLOP/s")]
            outlier = node_outlier(profile, m["tflops"], medians[d], len(ok), "BURN_OUTLIER", f"{d} rate", "TFLOP/s")
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
            sdc.append(Judgement(Verdict.FAIL, "SDC_KNOWN_ANSWER",
                               f"known-answer products wrong ({', '.join(wrong_ka)}): in {d}, {w['count']} element(s), first at "
                               f"[{e['row']}, {e['col']}] expected {e['expected']:.10g}, got {e['actual']:.10g} (bits {e['xor']} flipped)"))
        if wrong_repeat:
            sdc.append(Judgement(Verdict.FAIL, "SDC_REPEAT",
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
            sdc.append(Judgement(Verdict.FAIL, "SDC_CROSS_GPU",
                               f"identical work gave a different result than {than} ({', '.join(wrong_peers)})"))
        if not r["dtypes"]:
            # No product computed, none checked: a power figure alone is no burn (a T4 given a
            # profile of fp8 and bf16 passed on its power, exit 0).
            why = "; ".join(f"{d} ({reason})" for d, reason in r["not_run"].items()) or "the worker named none"
            return CheckResult(name, g.subject, Verdict.ERROR, f"no dtype ran: {why}; nothing computed, not judged",
                               code="BURN_NO_DTYPE", values=values, evidence={"dtypes": {}, "not_run": r["not_run"]})
        power = power_finding(_while_computing(window, r["dtypes"]) or window, profile, values, thresholds)
        findings = sdc + rate + ([power] if power else [])
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
            by_reason: dict[str, list[str]] = {}
            for d, why in r["not_run"].items():
                by_reason.setdefault(why, []).append(d)
            result.message += "; not run: " + "; ".join(f"{', '.join(ds)} ({why})" for why, ds in by_reason.items())
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


def burn_load_short(dtypes: dict[str, Any]) -> list[str]:
    """The dtypes that computed less than BURN_MIN_LOAD_SHARE of their planned seconds, or fewer
    products or result checks than a burn makes (matmul_burn compares at least BURN_MIN_CHECKS
    results: a rate and "results exact" from none are no proof), as said; none for a result that
    carries no plan (made before the burn recorded it)."""
    short = []
    for d, m in dtypes.items():
        planned = m.get("planned_s")
        if not isinstance(planned, (int, float)) or isinstance(planned, bool):
            continue
        seconds, products, checks = m.get("seconds"), m.get("products"), m.get("checks")
        if not (planned > 0 and is_number(seconds) and is_number(m.get("tflops"))):
            short.append(f"{d} recorded {seconds!r} s of a {planned!r} s plan at {m.get('tflops')!r} TFLOP/s")
        elif seconds < BURN_MIN_LOAD_SHARE * planned:
            short.append(f"{d} computed {seconds:g} s of its {planned:g} s ({products} products; "
                         f"needs {BURN_MIN_LOAD_SHARE:g} of it)")
        elif not isinstance(products, int) or not isinstance(checks, int) or products < 1 \
                or checks < BURN_MIN_CHECKS or m.get("fingerprint") is None:
            short.append(f"{d} computed {products!r} products and compared {checks!r} results (a burn compares "
                         f"{BURN_MIN_CHECKS} at least)")
    return short


def _while_computing(window: GpuTelemetry | None, dtypes: dict[str, Any]) -> GpuTelemetry | None:
    """Telemetry of the dtypes' spans together: the power the GPU drew while its products ran, not
    in the set-ups between them, where it idles by design (a real fp8 set-up, cuBLASLt's plan, took
    1.9-3.4 s: tests/fixtures/real-2026-11-2*). NVML reads a GPU as busy up to a second after its
    load stops, and its power falls meanwhile: a clean simulated B200 whose set-ups ran long on a
    busy host read 243 and 273 W as under load, and warned BURN_POWER_LOW (2 runs in 24, 2026-11-29).
    None where a dtype has no span (an older worker's result), the window did not keep every sample
    (a burn of hours) or the spans hold no power reading: then the whole step's telemetry speaks,
    as before."""
    spans = [(m.get("start_s"), m.get("end_s")) for m in dtypes.values()]
    if window is None or not spans or len(window.kept_samples) < window.samples \
            or not all(isinstance(x, (int, float)) and math.isfinite(x) for span in spans for x in span):
        return None
    part = window.within(spans)
    # No power reading in the spans (spans too short for the sampler on a compressed clock): the
    # whole step speaks, as before, rather than no power finding at all.
    return part if part is not None and part.loaded_power_w.count else None


def _dtype_seen(window: GpuTelemetry | None, dtype: str, m: dict[str, Any]) -> GpuTelemetry | None:
    """Telemetry of one dtype's span (matmul_burn's start_s/end_s on the run's clock), or None. What
    the driver counted between the dtype's two counter marks replaces the sampled estimate of each
    reason it counts: a span of two seconds holds a handful of samples, a slow sampler fewer."""
    if window is None or not isinstance(m.get("start_s"), (int, float)) or not isinstance(m.get("end_s"), (int, float)):
        return None
    part = window.between(m["start_s"], m["end_s"])
    if part is not None:
        counted = window.counted_between_marks(dtype=dtype)
        part.throttle_s.update(counted)
        part.throttle_counted = sorted(counted)
    return part


def _seen_readings(part: GpuTelemetry) -> dict[str, Any]:
    """A dtype's evidence of its span: mean SM clock and power under load, and the clocks-event
    reasons seen there with their seconds (idle and application clocks are no throttling)."""
    clock, power = part.loaded_sm_clock_mhz.mean, part.load_power_w.mean
    return {"sm_clock_mhz": None if is_na(clock) else round(clock),
            "power_w": None if is_na(power) else round(power, 1),
            "throttle_s": {k: round(v, 2) for k, v in sorted(part.throttle_s.items())
                           if k not in ("gpu_idle", "applications_clocks") and v > 0},
            "throttle_counted_by_driver": part.throttle_counted}
