"""stress.p2p: copies between every pair of GPUs with peer access: the data verified and blamed on
the GPU that spoils its copies with most of its peers, each GPU's bandwidth and latency against the
floors and its fastest copy against the others' over the same kind of path, and the node's view of
missing peer access and slow pairs between healthy GPUs."""

from __future__ import annotations

import statistics
from typing import Any

from nodeqc.backends.base import PEER_PATHS, GpuInfo
from nodeqc.checks.common import Judgement, fold, judge, skip
from nodeqc.checks.diagnosis import Expected, Observed, explain, explain_node
from nodeqc.checks.stress.outcomes import (MIB, median_or_none, node_expected, node_outlier, nvlinks_promised,
                                          outcome_failure, wrong_data)
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import GpuTelemetry
from nodeqc.work.workers import Outcome


def p2p_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {"bytes": 256 * MIB, "iters": 4 if quick else 10}


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
    links = nvlinks_promised(profile, gpus)
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
            findings.append(Judgement(Verdict.FAIL, "P2P_CORRUPT",
                                    f"copies with {len(_peers(corrupt, g.index))} of its {len(_peers(mine, g.index))} "
                                    f"peers came back wrong; first gpu{p['src']}->gpu{p['dst']}"
                                    + wrong_data(p["mismatch"], "byte")))
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
            outlier = node_outlier(profile, fastest, median, others + 1, "P2P_OUTLIER",
                                   f"fastest one-way copy to a peer{over}", "GB/s")
        if outlier:
            findings.append(outlier)
        judged_by = [floor, bidir_floor, latency_limit] + ([profile.threshold("gpu", "max_outlier_pct")] if outlier else [])
        result = fold(name, g.subject, findings, values, judged_by, key="p2p_gbps",
                      evidence={"pairs": mine})
        results.append(explain(result, Observed.of(g, windows.get(g.index), links[g.index]), Expected.of(g), None,
                               "the GPU-to-GPU copies"))
    node = _p2p_node(r, by_index, results, profile, blamed)
    results.append(explain_node(node, [Observed.of(g, windows.get(g.index), links[g.index]) for g in gpus],
                                node_expected(gpus), "the GPU-to-GPU copies"))
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
            median = median_or_none(list(others.values()))
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
        findings.append(Judgement(Verdict.FAIL, "P2P_CORRUPT",
                                f"{len(path_corrupt)} copy path(s) between GPUs not otherwise at fault came back wrong; "
                                f"{by_index[p['src']].subject}->{by_index[p['dst']].subject}"
                                + wrong_data(p["mismatch"], "byte")))
    if missing and profile.get("gpu", "nvlink_links"):
        shown = ", ".join(f"gpu{i}->gpu{j}" for i, j in missing[:6])
        findings.append(Judgement(Verdict.FAIL, "P2P_NO_PEER_ACCESS", f"no peer access for {len(missing)} pair(s): {shown}"))
    passing = {res.subject for res in per_gpu if res.verdict in (Verdict.PASS, Verdict.WARN)}
    floor = profile.threshold("gpu", "min_p2p_gbps")
    if floor is not None:
        slow = [p for p in r["pairs"] if p["gbps"] < floor.fail
                and by_index[p["src"]].subject in passing and by_index[p["dst"]].subject in passing]
        if slow:
            shown = ", ".join(f"{by_index[p['src']].subject}->{by_index[p['dst']].subject} {p['gbps']:g} GB/s" for p in slow[:6])
            findings.append(Judgement(Verdict.FAIL, "P2P_PAIR_SLOW", f"{len(slow)} slow pair(s) between healthy GPUs: {shown}"))
    if not findings and not r["pairs"]:
        # Nothing copied (PCIe GPUs in a VM often get no peer access): no pass of nothing, as on each GPU.
        return skip(name, "node", f"no GPU pair has peer access ({len(missing)} without): nothing copied",
                    values={"pairs": Value(0), "no_access": Value(len(missing))})
    if not findings:
        wrong = sum(1 for p in r["pairs"] if not p["verified"])
        findings.append(Judgement(Verdict.PASS, None, f"{len(r['pairs'])} peer pairs, " + (
            f"{wrong} wrong copies, each with a GPU failed for it" if wrong else "every copy verified")))
    return fold(name, "node", findings, {"pairs": Value(len(r["pairs"])), "no_access": Value(len(missing))}, [floor],
                key="pairs", evidence={"access": r["access"], "bidir": r["bidir"]})
