"""stress.pcie_bandwidth: copies between the host and each GPU, both ways and both at once: the
data verified, the rates against their floors and the node's median, the link's width and generation
while the copies ran."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from nodeqc.backends.base import GpuInfo
from nodeqc.checks.common import Judgement, fmt, fold, judge
from nodeqc.checks.diagnosis import Expected, Observed, explain
from nodeqc.checks.stress.outcomes import (GIB, HELD_TOLERANCE_S, MIB, each_gpu, median_or_none, node_outlier,
                                           wrong_data)
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.schema import is_number
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import GpuTelemetry
from nodeqc.work.workers import Outcome


# The copies go on this long (the run's clock) so that telemetry reads the link while it carries
# traffic. With --quick, 2 s: NVML's utilisation window (1 s) and then 4 readings at the default
# 4 Hz, the rule TelemetrySampler.wall_s_to_see keeps for a load judged from telemetry; the link
# itself is read by the worker during the copies. It was 3 s (issue 30's 60 s: a real H100's quick
# PCIe step took 3.7 s of them, benchmarks/RESULTS.md 2026-11-28).
PCIE_MIN_SECONDS = {True: 2.0, False: 10.0}


def pcie_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {"bytes": 256 * MIB, "trials": 3, "iters": 8, "min_seconds": PCIE_MIN_SECONDS[quick]}


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
    seconds, least = float(r["seconds"]), float(r["min_seconds"])
    # NaN compares false with everything, and a plan of no seconds holds to nothing (2026-11-28 audit).
    if not (0 < least < math.inf and 0 < seconds < math.inf) or seconds < least - HELD_TOLERANCE_S:
        said.append(f"the copies lasted {fmt(r['seconds'], 's')} of the {fmt(r['min_seconds'], 's')} planned")
    return "the host copies did not carry their load: " + ", ".join(said) + "; not judged" if said else None


def judge_pcie(gpus: list[GpuInfo], outcomes: dict[int, Outcome], windows: dict[int, GpuTelemetry],
               profile: Profile) -> list[CheckResult]:
    name = "stress.pcie_bandwidth"
    ok = {i: o.result for i, o in outcomes.items() if o.ok}
    medians = {k: median_or_none([r[k] for r in ok.values()]) for k in ("h2d_gbps", "d2h_gbps")}

    def one(g: GpuInfo, r: dict[str, Any]) -> CheckResult:
        short = pcie_load_short(r)
        if short and r["verified"]:  # wrong data fails whatever load carried it; a rate needs its load
            return CheckResult(name, g.subject, Verdict.ERROR, short, code="PCIE_LOAD_NOT_REACHED",
                               values={k: Value(r[k], "GB/s") for k in ("h2d_gbps", "d2h_gbps", "bidir_gbps")},
                               evidence={k: r.get(k) for k in ("moved_bytes", "seconds", "min_seconds", "bytes")},
                               key="h2d_gbps")
        findings, thresholds = [], []
        if not r["verified"]:
            findings.append(Judgement(Verdict.FAIL, "PCIE_COPY_CORRUPT",
                                    "data copied to the GPU and back came back wrong" + wrong_data(r["mismatch"], "byte")))
        values = {k: Value(r[k], "GB/s") for k in ("h2d_gbps", "d2h_gbps", "bidir_gbps")}
        # A result without "link" is from before the link was read under the copies: judged as before.
        link, unread = r.get("link"), None
        read = isinstance(link, dict) and all(is_number(link.get(k)) for k in ("gen", "width", "max_gen", "max_width"))
        if link is not None and not read:
            # NVML's answer failed (the backend keeps its error) or is no link: health.pcie_link still
            # judges the link from telemetry, but this check must not read as having seen it.
            error = link.get("error") if isinstance(link, dict) else None
            unread = f"the link was not read during the copies ({error or 'no reading'})"
            values["link_during_copy"] = Value(None)
        elif read:
            gen, width = link["gen"], link["width"]
            values["link_during_copy"] = Value(f"Gen{gen} x{width}")
            want_gen = profile.get("gpu", "pcie_gen", link["max_gen"])
            want_width = profile.get("gpu", "pcie_width", link["max_width"])
            if width < want_width:
                findings.append(Judgement(Verdict.FAIL, "PCIE_WIDTH", f"link at x{width} during the copies, expected x{want_width}"))
            if gen < want_gen:
                findings.append(Judgement(Verdict.FAIL, "PCIE_GEN", f"link at Gen{gen} during the copies, expected Gen{want_gen}"))
        for key, what in (("h2d_gbps", "host-to-device"), ("d2h_gbps", "device-to-host")):
            floor = profile.threshold("gpu", f"min_{key}")
            thresholds.append(floor)
            findings.append(judge(floor, r[key], "PCIE_BW_LOW", what, "GB/s"))
            outlier = node_outlier(profile, r[key], medians[key], len(ok), "PCIE_BW_OUTLIER", what, "GB/s")
            if outlier:
                findings.append(outlier)
        result = fold(name, g.subject, findings, values, thresholds, key="h2d_gbps")
        if unread:
            result = replace(result, message=f"{result.message}; {unread}: health.pcie_link judges it")
        expected = Expected.of(g)
        share = expected.share({"h2d": r["h2d_gbps"], "d2h": r["d2h_gbps"]},
                               {"h2d": medians["h2d_gbps"], "d2h": medians["d2h_gbps"]})
        return explain(result, Observed.of(g, windows.get(g.index)), expected, share, "the copies")

    return each_gpu(name, gpus, outcomes, one)
