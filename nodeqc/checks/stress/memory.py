"""The device memory: stress.hbm_bandwidth (copy and triad bandwidth, the data verified) and
stress.memtest (patterns over most of the free memory, every word checked)."""

from __future__ import annotations

from typing import Any

from nodeqc.backends.base import GpuInfo
from nodeqc.checks.common import Judgement, fmt, fold, judge
from nodeqc.checks.diagnosis import Expected, Observed, explain
from nodeqc.checks.stress.outcomes import GIB, HELD_TOLERANCE_S, each_gpu, median_or_none, node_outlier, wrong_data
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.schema import is_number
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import GpuTelemetry
from nodeqc.work.workers import Outcome


def hbm_params(profile: Profile, quick: bool) -> dict[str, Any]:
    # 1 GiB per buffer is far beyond any L2 cache (50 MB on H100), so the figure is DRAM's.
    return {"bytes": GIB, "trials": 3 if quick else 5, "iters": 10}


HBM_KINDS = ("copy", "triad")
# Readings under the bandwidth test's load that a slow result's diagnosis needs (the memory clock
# under load; nodeqc's choice: two, not one that may straddle the load's start): the test lasts as
# long as the sampler takes to read them (nodeqc.work.sampler.TelemetrySampler.wall_s_to_see), a
# second and a bit on a real GPU's 10 Hz telemetry (an estimate: 1 s of NVML's utilisation window
# and two polls).
HBM_LOADED_SAMPLES = 2


def hbm_load_short(r: dict[str, Any]) -> str | None:
    """Why the bandwidth test did not prove the bytes it claimed to move: every one of its
    trials x iters timed passes of the buffer done for both kinds (copy and triad), with bytes moved
    and a rate above 0 GB/s measured for each. None where it did, and for a result from before the
    load was proven (no `passes`): judged as before."""
    if "passes" not in r:
        return None
    planned = _whole(r["planned_passes"])
    said = [] if planned > 0 else [f"a plan of {r['planned_passes']!r} passes"]
    for kind in HBM_KINDS:
        done, moved = _whole(r["passes"].get(kind, 0)), _whole(r.get("moved_bytes", {}).get(kind, 0))
        rate = r[f"{kind}_gbps"]
        if done < planned or moved <= 0 or not (is_number(rate) and rate > 0):
            raw = r.get("moved_bytes", {}).get(kind, 0)
            shown = fmt(round(moved / GIB, 2), 'GiB') if moved or raw == 0 else f"{raw!r} bytes"
            said.append(f"{kind} {done} of {planned} passes of the {fmt(round(r['bytes'] / GIB, 2), 'GiB')} buffer, "
                        f"{shown} moved, {fmt(r[f'{kind}_gbps'], 'GB/s')}")
    return "the bandwidth test did not move its load: " + ", ".join(said) + "; not judged" if said else None


def _whole(x: Any) -> int:
    """A count from a worker's result; 0 for what is no finite number (a NaN or inf moved no bytes)."""
    return int(x) if is_number(x) else 0


def judge_hbm(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
              profile: Profile) -> list[CheckResult]:
    name = "stress.hbm_bandwidth"
    ok = {i: o.result for i, o in outcomes.items() if o.ok}
    median = median_or_none([r["copy_gbps"] for r in ok.values()])
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
            findings.append(Judgement(Verdict.FAIL, "HBM_CORRUPT",
                                    "the copied data came back wrong" + wrong_data(r["mismatch"])))
        findings.append(judge(floor, r["copy_gbps"], "HBM_SLOW", "copy bandwidth", "GB/s"))
        outlier = node_outlier(profile, r["copy_gbps"], median, len(ok), "HBM_OUTLIER", "copy bandwidth", "GB/s")
        if outlier:
            findings.append(outlier)
        result = fold(name, g.subject, findings,
                      {"copy_gbps": Value(r["copy_gbps"], "GB/s"), "triad_gbps": Value(r["triad_gbps"], "GB/s")},
                      [floor, profile.threshold("gpu", "max_outlier_pct")], key="copy_gbps",
                      # which copy kernel gave the figure, and each one's rate (a real GPU's run)
                      evidence={"copy_kernel": r["copy_kernel"]} if r.get("copy_kernel") else None)
        expected = Expected.of(g)
        share = expected.share({"hbm": r["copy_gbps"]}, {"hbm": median} if median else None)
        return explain(result, Observed.of(g, windows.get(g.index)), expected, share, "the bandwidth test")

    return each_gpu(name, gpus, outcomes, one)


def memtest_params(profile: Profile, quick: bool) -> dict[str, Any]:
    """Quick mode runs the short pattern set; a full run adds the full-mode patterns and bit fade."""
    return {"fraction": profile.get("gpu", "memtest_fraction", 0.9), "full": not quick,
            "retention_s": 0.0 if quick else float(profile.get("run", "memtest_retention_s")),
            "min_s": float(profile.get("run", "quick_memtest_s" if quick else "memtest_s", 0))}


# How far below the asked fraction of free memory the memory test's buffer may fall: the buffer is
# the fraction of free memory rounded down to whole 8-byte words (backends/cupy_compute.py), which
# loses under 8 bytes; half a percentage point leaves room for a backend that rounds to larger
# blocks, and is still far less than any memory a failing run leaves untested (nodeqc's choice).
MEMTEST_COVERAGE_TOLERANCE = 0.005


def memtest_load_short(r: dict[str, Any]) -> str | None:
    """Why the memory test did not prove the coverage it claimed: bytes tested against the fraction
    of free memory asked, less MEMTEST_COVERAGE_TOLERANCE, every pattern of its program run, and the
    run's seconds against the profile's min_s (where the result records them, to HELD_TOLERANCE_S).
    None where it did, and for a result from before the coverage was proven (no `fraction`)."""
    if "fraction" not in r:
        return None
    asked, free, tested = float(r["fraction"]), _whole(r["free_bytes"]), _whole(r["bytes"])
    coverage = tested / free if free > 0 else 0.0
    said = []
    if not 0 < asked <= 1 or tested <= 0:
        said.append(f"asked for {asked:g} of the free memory and tested {r['bytes']!r} bytes")
    elif coverage > 1 + MEMTEST_COVERAGE_TOLERANCE:  # figures that disagree prove nothing
        said.append(f"tested {fmt(round(tested / GIB, 2), 'GiB')}, more than the {fmt(round(free / GIB, 2), 'GiB')} free")
    elif coverage < asked - MEMTEST_COVERAGE_TOLERANCE:
        said.append(f"tested {fmt(round(r['bytes'] / GIB, 2), 'GiB')}, {fmt(round(100 * coverage, 1), '%')} of the "
                    f"{fmt(round(free / GIB, 2), 'GiB')} free, short of the {fmt(round(100 * asked, 1), '%')} asked "
                    f"(tolerance {fmt(100 * MEMTEST_COVERAGE_TOLERANCE, '%')})")
    planned = _whole(r.get("patterns_planned", 0))
    if planned < 1 or len(r["passes"]) < planned:
        said.append(f"{len(r['passes'])} of its {r.get('patterns_planned')!r} patterns ran")
    asked_s, ran_s = r.get("min_s") or 0, r.get("elapsed_s")
    if ran_s is not None and (not is_number(ran_s) or not is_number(asked_s) or ran_s < asked_s - HELD_TOLERANCE_S):
        # The profile's longer memory test (run.memtest_s) is the soak asked for: fewer seconds
        # than that is a shorter test, whatever it found (held as the plain load and the copies are).
        said.append(f"it ran {fmt(ran_s, 's')} of the {fmt(asked_s, 's')} asked")
    return "the memory test did not cover what it was asked to: " + " and ".join(said) + "; not judged" \
        if said else None


def judge_memtest(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
                  profile: Profile) -> list[CheckResult]:
    name = "stress.memtest"

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        values = {"errors": Value(r["errors"]), "tested": Value(round(r["bytes"] / GIB, 2), "GiB"),
                  "coverage_pct": Value(round(100 * r["bytes"] / r["free_bytes"], 1) if _whole(r["free_bytes"]) > 0
                                        else None, "%"),
                  "gbps": Value(r["gbps"], "GB/s"), "rounds": Value(int(r.get("rounds", 1)))}
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
                                                        "patterns_planned": r.get("patterns_planned"),
                                                        **{k: r[k] for k in ("min_s", "elapsed_s") if k in r}},
                               key="coverage_pct")
        rounds = int(r.get("rounds", 1))
        repeated = f", each {rounds} times ({fmt(r.get('min_s'), 's')} asked)" if rounds > 1 else ""
        return CheckResult(name, g.subject, Verdict.PASS,
                           f"{len(r['passes'])} patterns over {values['tested']} "
                           f"({values['coverage_pct']} of free memory){repeated}: no errors",
                           values=values, evidence=evidence, key="errors")

    return each_gpu(name, gpus, outcomes, one)
