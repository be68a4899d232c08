"""The fabric report: one in-toto Statement with every node as a subject, signed as node reports are
(nodeqc.report.envelope: canonical JSON, DSSE, Ed25519); nodeqc.report.render renders it for `nodeqc show`.

The predicate carries the same top-level facts a node report does (verdict, status, profile,
`node` as the archive's key, checks, summary, times), so the archive, `verify`, `history` and
`export` take it unchanged: its `node` is the fabric (`fabric-NAME`), its checks are
`fabric.node` per node, `fabric.rail` per rail, `fabric.link` per bad link, `fabric.pair` per
pair that could not be tested, `fabric.tail` for the latency tail (nodeqc.fabric.tails: a
straggler, a high tail) and `fabric.coverage` for what no test crossed (nodeqc.fabric.coverage:
the node pairs never tested, a stated gap; a rail or switch uplink never tested, could not judge).
The per-pair figures are in `pairs`, what was covered in `fabric.coverage`.
"""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path
from statistics import median
from typing import Any

from nodeqc import __version__
from nodeqc.core.model import CheckResult, Value, Verdict, check_label
from nodeqc.fabric.coverage import Coverage, coverage
from nodeqc.fabric.groups import GroupScores
from nodeqc.fabric.groups import row as group_row
from nodeqc.fabric.groups import rows as group_rows
from nodeqc.fabric.nccl_group import test_of
from nodeqc.fabric.pairing import Round
from nodeqc.fabric.scoring import PairResult, Scores
from nodeqc.fabric.tails import NCCL_STEP_TAIL_MS, Latency, Tails
from nodeqc.fabric.topology import Topology
from nodeqc.report.envelope import FABRIC_PREDICATE_TYPE, STATEMENT_TYPE, canonical, sign, write_envelope
from nodeqc.report.keys import Signer

EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_RUN = 0, 1, 2


def node_digest(identity: dict[str, Any]) -> str:
    """What identifies a node in the statement: what its worker reported of itself (host name,
    system and board serials, machine id), or its name when nothing came back."""
    return hashlib.sha256(canonical(identity)).hexdigest()


def fabric_checks(scores: Scores, results: list[PairResult]) -> list[CheckResult]:
    """The verdicts: per node, per rail, per bad link, per pair that could not be tested."""
    out: list[CheckResult] = []
    met: dict[str, set[str]] = {n: set() for n in scores.nodes}
    for r in results:
        if r.error is None:
            met[r.a].add(r.b)
            met[r.b].add(r.a)
    failing_peers: dict[str, set[str]] = {}
    for r in results:
        if r.error is None and not all(r.rails().values()):
            failing_peers.setdefault(r.a, set()).add(r.b)
            failing_peers.setdefault(r.b, set()).add(r.a)
    bad_ports: dict[str, list[str]] = {}
    for n, rail in scores.bad_ports:
        bad_ports.setdefault(n, []).append(rail)
    # Rails a node has no active port on while its peers do (launchers.merge: "no counterpart on NODE").
    portless: dict[str, set[str]] = {}
    for r in results:
        for m in r.measurements:
            for node in (r.a, r.b):
                if m.error and m.error.startswith(f"no counterpart on {node}:"):
                    portless.setdefault(node, set()).add(m.rail)
    for node in scores.nodes:
        ratio = scores.pass_ratio(node)
        own = scores.ports_of(node)
        values = {"pass_ratio": Value(None if ratio is None else round(ratio, 3)),
                  "tests": Value(sum(p.raw_tests for p in own)), "failed": Value(sum(p.raw_fails for p in own)),
                  "peers": Value(len(met[node]))}
        evidence = {"ports": {p.rail: {"tests": p.raw_tests, "failed": p.raw_fails, "named_bad": p.named,
                                       "cleared": p.cleared} for p in own},
                    "peers": sorted(met[node])}
        if node in scores.suspects:
            lies = scores.suspects[node]
            msg = (f"its worker printed {len(lies)} result(s) it could not have measured, refused "
                   f"(round {lies[0]['round']}, pair {lies[0]['pair']}: {lies[0]['why']}): a broken or compromised "
                   "node; none of its refused figures counted for any pair")
            out.append(CheckResult("fabric.node", node, Verdict.FAIL, msg, "FABRIC_WORKER_LIED", values, [],
                                   {**evidence, "refused": lies[:20]}, "pass_ratio"))
        elif node in scores.bad_nodes:
            named = [p.rail for p in own if p.named]
            failing = sorted(failing_peers.get(node, set()))
            where = f"every rail ({len(named)})" if len(named) == len(own) and len(own) > 1 else ", ".join(named)
            msg = (f"failed its pair tests with {len(failing)} distinct peers that passed with others "
                   f"(pass ratio {ratio:.0%}); bad on {where}" + _portless(portless.get(node, set()) & set(named)))
            out.append(CheckResult("fabric.node", node, Verdict.FAIL, msg, "FABRIC_NODE", values, [], evidence, "pass_ratio"))
        elif node in bad_ports:
            rails = bad_ports[node]
            msg = (f"{', '.join(rails)} failed with peers that passed on {'them' if len(rails) > 1 else 'it'} "
                   f"with other nodes; the node's other rails passed" + _portless(portless.get(node, set()) & set(rails)))
            out.append(CheckResult("fabric.node", node, Verdict.FAIL, msg, "FABRIC_NODE_RAIL", values, [], evidence,
                                   "pass_ratio"))
        elif node in scores.inconclusive:
            out.append(CheckResult("fabric.node", node, Verdict.ERROR, f"inconclusive: {scores.inconclusive[node]}",
                                   "FABRIC_INCONCLUSIVE", values, [], evidence, "pass_ratio"))
        else:
            shown = "" if ratio is None else f"pass ratio {ratio:.0%}"
            explained = sum(p.raw_fails for p in own)
            note = f"; its {explained} failed rail test(s) are explained by bad peers or links" if explained else ""
            out.append(CheckResult("fabric.node", node, Verdict.PASS,
                                   f"{shown} over {len(met[node])} peers{note}", None, values, [], evidence,
                                   "pass_ratio"))
    for rail in scores.rails:
        ports = [p for (_, rl), p in scores.ports.items() if rl == rail]
        tests = sum(p.raw_tests for p in ports) // 2
        fails = sum(p.raw_fails for p in ports) // 2
        values = {"tests": Value(tests), "failed": Value(fails),
                  "pass_ratio": Value(round((tests - fails) / tests, 3) if tests else None)}
        if rail in scores.bad_rails:
            contrast = ("where the same pairs passed on other rails" if len(scores.rails) > 1 else
                        "more than bad nodes explain")
            out.append(CheckResult("fabric.rail", rail, Verdict.FAIL,
                                   f"failed {fails} of {tests} pair tests across the fabric, {contrast}: the rail "
                                   "itself (its switches, a fabric setting)", "FABRIC_RAIL", values, [], {}, "pass_ratio"))
        else:
            bad_here = sorted(n for n, rl in scores.bad_ports if rl == rail)
            note = f"; bad on {', '.join(bad_here)} only" if bad_here else ""
            out.append(CheckResult("fabric.rail", rail, Verdict.PASS, f"{tests - fails} of {tests} pair tests passed{note}",
                                   None, values, [], {}, "pass_ratio"))
    by_pair: dict[frozenset[str], list[PairResult]] = {}
    if scores.bad_links:
        for r in results:
            by_pair.setdefault(frozenset((r.a, r.b)), []).append(r)
    for a, b, rails in scores.bad_links:
        # What failed on the link; a figure not measured (a tool missing) is no evidence of it.
        figures = [m.to_dict() for r in by_pair.get(frozenset((a, b)), []) for m in r.measurements
                   if not m.passed and not m.skipped]
        out.append(CheckResult("fabric.link", f"{a}-{b}", Verdict.FAIL,
                               f"{a} and {b} failed together on {', '.join(rails)} while each passed with other peers: "
                               "the path between them", "FABRIC_LINK", {"rails": Value(", ".join(rails))}, [],
                               {"failed": figures}, "rails"))
    out += uplink_checks(scores)
    for leaf in scores.bad_leaves:
        out.append(CheckResult(
            "fabric.leaf", leaf.switch, Verdict.FAIL,
            f"every test of its {len(leaf.nodes)} nodes failed: {leaf.inside} among themselves and {leaf.across} "
            f"across it, while {leaf.rest_passed} of {leaf.rest} tests elsewhere passed: the leaf switch (its power, "
            f"a hang, its configuration), or every node under it at once ({', '.join(leaf.nodes[:8])}"
            f"{' +more' if len(leaf.nodes) > 8 else ''})", "FABRIC_LEAF",
            {"inside": Value(leaf.inside), "across": Value(leaf.across)}, [], {"nodes": list(leaf.nodes)}, "across"))
    out += tail_checks(scores.tails)
    skipped: dict[tuple[str, str], set[str]] = {}
    for r in results:
        for m in r.measurements:
            if m.skipped:
                skipped.setdefault((test_of(m.rail), m.skipped), set()).update((r.a, r.b))
    for (kind, why), nodes in sorted(skipped.items()):
        code = ("PERFTEST_MISSING" if "ib_write_bw is not installed" in why else "IPERF3_MISSING"
                if "iperf3 is not installed" in why else "CUDA_UNAVAILABLE" if "CuPy" in why else "FABRIC_NOT_MEASURED")
        shown = ", ".join(sorted(nodes)[:8]) + (f" +{len(nodes) - 8} more" if len(nodes) > 8 else "")
        out.append(CheckResult(f"fabric.{kind}", "fabric", Verdict.SKIP, f"not measured on pairs of {shown}: {why}", code))
    for r in scores.errors:
        if r.refused:
            out.append(CheckResult("fabric.pair", f"{r.a}-{r.b}", Verdict.ERROR,
                                   f"round {r.round}: not tested: {r.error}", "FABRIC_LINE_REFUSED", {}, [],
                                   {"refused": r.refused[:20]}))
        else:
            out.append(CheckResult("fabric.pair", f"{r.a}-{r.b}", Verdict.ERROR, f"round {r.round}: not tested: {r.error}",
                                   "FABRIC_PAIR_ERROR"))
    return out


def uplink_checks(scores: Scores) -> list[CheckResult]:
    """`fabric.uplink`: each switch uplink named bad (nodeqc.fabric.uplinks), its rails together."""
    by_switch: dict[str, list[Any]] = {}
    for u in scores.bad_uplinks:
        by_switch.setdefault(u.switch, []).append(u)
    out = []
    for switch, ups in by_switch.items():
        rails = [u.rail for u in ups]
        fails, tests = sum(u.fails for u in ups), sum(u.tests for u in ups)
        inside, passed = sum(u.inside for u in ups), sum(u.inside_passed for u in ups)
        where = f"every rail ({len(rails)})" if len(rails) == len(scores.rails) and len(rails) > 1 else ", ".join(rails)
        alt = {a for u in ups for a in u.alternatives}
        same = sorted({s for u in ups for s in u.same})
        msg = (f"{fails} of {tests} pair tests across {switch}'s uplink failed on {where}, while {passed} of {inside} "
               f"tests between nodes under it passed: the uplink (its cables, ports or the switch above), not its nodes"
               + (f"; or {', '.join(same)}'s above it, which holds only its nodes: the same tests cross it" if same else "")
               + (f"; or {', '.join(sorted(alt))}'s: every failing test across it crossed that uplink too, and most of that uplink's own tests failed" if alt else ""))
        out.append(CheckResult("fabric.uplink", f"{switch} uplink", Verdict.FAIL, msg, "FABRIC_UPLINK",
                               {"rails": Value(", ".join(rails)), "failed": Value(fails), "tests": Value(tests)}, [],
                               {"rails": rails, "alternative": sorted(alt), "same": same}, "failed"))
    return out


def _latency(lat: Latency) -> str:
    return f"{lat.rail} p50 {lat.p50:g} / p99 {lat.p99:g} {lat.unit} (floor {lat.floor:g})"


def tail_checks(tails: Tails | None) -> list[CheckResult]:
    """`fabric.tail`: each straggler (by node), a high tail left to its pair, or the whole fabric's;
    a figure not measured (ERROR), a tool missing (SKIP); one PASS when every tail was normal."""
    if tails is None or not (tails.judged or tails.unmeasured or tails.skipped):
        return []
    out: list[CheckResult] = []
    for node, s in tails.stragglers.items():
        unit = s["unit"]
        values = {"pairs": Value(s["pairs"]), "high": Value(s["high"]), "p50": Value(s["p50"], unit),
                  "p99": Value(s["p99"], unit)}
        lead = (f"its 99th percentile latency was above the floor ({s['floor']:g} {unit}) in {s['high']} of its "
                f"{s['pairs']} pair tests, with {len(s['peers'])} peers whose tails were normal with others "
                f"({', '.join(s['peers'][:6])}); median p99 {s['p99']:g} {unit}")
        if s["median_high"]:
            msg = f"{lead}, median p50 {s['p50']:g} {unit} above its floor ({s['median_floor']:g}): slow throughout"
            code = "FABRIC_NODE_LATENCY"
        else:
            msg = f"{lead} while the median stayed normal (p50 {s['p50']:g} {unit}): a straggler, slow only at the tail"
            code = "FABRIC_STRAGGLER"
        out.append(CheckResult("fabric.tail", node, Verdict.FAIL, msg, code, values, [], {"peers": s["peers"]}, "p99"))
    if tails.fabric_wide:
        high, total = tails.left
        out.append(CheckResult("fabric.tail", "fabric", Verdict.FAIL,
                               f"{high} of {total} pairs' 99th percentile latency was above the floor, across the "
                               "fabric: no one node explains it (its switches' buffering, congestion control, a "
                               "fabric-wide setting)", "FABRIC_TAIL", {"high": Value(high), "pairs": Value(total)},
                               [], {}, "high"))
    for t in tails.pairs_high:
        shown = "; ".join(_latency(x) for x in t.high[:4])
        out.append(CheckResult("fabric.tail", f"{t.a}-{t.b}", Verdict.FAIL,
                               f"round {t.round}: 99th percentile latency above the floor ({shown}), where neither "
                               "node is high with most of its peers: the path between them, or either node",
                               "FABRIC_TAIL", {"p99": Value(t.high[0].p99, t.high[0].unit)}, [],
                               {"figures": [x.to_dict() for x in t.high]}, "p99"))
    for rnd, a, b, lat in tails.unmeasured:
        out.append(CheckResult("fabric.tail", f"{a}-{b}", Verdict.ERROR,
                               f"round {rnd}: {lat.rail} latency not measured, while its bandwidth passed: "
                               f"{lat.error or 'no figure'}", "FABRIC_NOT_MEASURED"))
    for why, nodes in sorted(tails.skipped.items()):
        shown_nodes = ", ".join(sorted(nodes)[:8]) + (f" +{len(nodes) - 8} more" if len(nodes) > 8 else "")
        code = "PERFTEST_MISSING" if "ib_write_lat is not installed" in why else "FABRIC_NOT_MEASURED"
        out.append(CheckResult("fabric.tail", "fabric", Verdict.SKIP, f"not measured on pairs of {shown_nodes}: {why}",
                               code))
    if not tails.failed and tails.judged:
        said = []
        for unit, what in (("us", "RDMA write"), ("ms", "NCCL step")):
            mine = [x for t in tails.judged for x in t.figures if x.unit == unit]
            if mine:
                floors = sorted({x.floor for x in mine if x.floor is not None})
                floor = f"floor {floors[0]:g} {unit}" if len(floors) == 1 else f"median step + {NCCL_STEP_TAIL_MS:g} ms"
                said.append(f"{what} p50 median {median(x.p50 for x in mine if x.p50 is not None):g} {unit}, "
                            f"p99 median {median(x.p99 for x in mine):g} {unit} ({floor})")
        out.append(CheckResult("fabric.tail", "fabric", Verdict.PASS,
                               f"every tail of {len(tails.judged)} pair tests within its floor: {'; '.join(said)}",
                               None, {"pairs": Value(len(tails.judged))}, [], {}, "pairs"))
    return out


def group_checks(groups: GroupScores, pair_tests: bool) -> list[CheckResult]:
    """The group tests' verdicts (nodeqc.fabric.groups): each finding; each node not judged; where no
    pair test ran, each node's verdict from its groups (fabric.node), else one line for the passes."""
    out: list[CheckResult] = []
    tests = groups.results
    values = {"group_size": Value(groups.size), "tests": Value(len(tests)), "rounds": Value(len(groups.rounds))}
    for f in groups.findings:
        code = {"node": "FABRIC_GROUP_NODE", "together": "FABRIC_GROUP_TOGETHER", "fabric": "FABRIC_GROUP_WIDE",
                "nvlink": "FABRIC_GROUP_NVLINK", "uplink": "FABRIC_UPLINK"}[f.kind]
        subject = (f.nodes[0] if f.kind == "node" else "fabric" if f.kind == "fabric" else
                   f"nvlink:{groups.domains.get(f.nodes[0])}" if f.kind == "nvlink" else
                   f"{f.uplink.switch} uplink" if f.uplink is not None else "-".join(f.nodes))
        evidence = {"test": group_row(groups, f.unit)} if f.unit is not None else {}
        if f.uplink is not None:
            evidence = {"nodes": list(f.nodes), "tests": f.uplink.tests, "fails": f.uplink.fails}
        out.append(CheckResult("fabric.uplink" if f.kind == "uplink" else "fabric.group", subject, Verdict.FAIL,
                               f.why, code, values, [], evidence))
    for node, lies in sorted(groups.suspects.items()):
        out.append(CheckResult("fabric.group" if pair_tests else "fabric.node", node, Verdict.FAIL,
                               f"its worker printed {len(lies)} result(s) it could not have measured, refused (round "
                               f"{lies[0]['round']}, group {lies[0]['group']}: {lies[0]['why']}): a broken or "
                               "compromised node; none of its refused figures counted for any group",
                               "FABRIC_WORKER_LIED", values, [], {"refused": lies[:20]}))
    judged = {n for f in groups.findings if f.kind == "node" for n in f.nodes} | set(groups.suspects)
    for node, why in sorted(groups.not_judged.items()):
        if node not in judged:
            out.append(CheckResult("fabric.group" if pair_tests else "fabric.node", node, Verdict.ERROR,
                                   f"not judged by the group tests: {why}", "FABRIC_GROUP_NOT_JUDGED", values))
    skipped = sorted({m.skipped for r in tests for m in r.measurements if m.skipped})
    if skipped:
        out.append(CheckResult("fabric.group", "fabric", Verdict.SKIP, f"not measured: {'; '.join(skipped)[:500]}",
                               "CUDA_UNAVAILABLE" if any("CuPy" in w or "GPU" in w for w in skipped) else
                               "FABRIC_NOT_MEASURED"))
    passed = [r for r in tests if r.outcome == "pass"]
    if not pair_tests:
        # With no pair round, the groups are all that crossed the paths between nodes.
        total, listed = groups.apart(8)
        if total:
            how = ("each all-to-all crossed the path between every two nodes of its group" if any(
                m.rail == "alltoall" for r in tests for m in r.measurements) else "an all-reduce or all-gather "
                "crosses only the paths NCCL's rings and trees take: add alltoall to cross every pair of a group")
            shown = ", ".join(f"{a}-{b}" for a, b in listed) + (f" +{total - len(listed)} more" if total > len(listed) else "")
            out.append(CheckResult("fabric.coverage", "pairs", Verdict.SKIP, f"{total} node pairs were never in one "
                                   f"group test ({shown}): a fault on a path only such a pair takes would go unseen; "
                                   f"{how}", "FABRIC_UNTESTED", {"untested": Value(total)}))
        for node in groups.nodes:
            verdict = groups.node_verdict(node)
            if verdict == "skip":  # nothing measured it: never a pass (as a pair test that gave nothing)
                why = sorted({m.skipped for r in tests if node in r.nodes for m in r.measurements if m.skipped})
                out.append(CheckResult("fabric.node", node, Verdict.ERROR, "not judged: no group test of this node "
                                       f"gave figures ({'; '.join(why)[:300]})", "FABRIC_GROUP_NOT_JUDGED", values))
            if verdict == "pass":
                mine = [r for r in tests if node in r.nodes]
                ok = sum(r.outcome == "pass" for r in mine)
                out.append(CheckResult("fabric.node", node, Verdict.PASS, f"{ok} of its {len(mine)} group tests "
                                       "passed; any failure it was in is explained by another node or path", None,
                                       {"tests": Value(len(mine)), "passed": Value(ok)}))
    elif passed:
        out.append(CheckResult("fabric.group", "groups", Verdict.PASS, f"{len(passed)} of {len(tests)} group tests "
                               f"passed (groups of {groups.size} or {groups.size - 1}, {len(groups.rounds)} rounds)",
                               None, values))
    return out


def coverage_checks(cov: Coverage) -> list[CheckResult]:
    """`fabric.coverage`: the node pairs never tested (SKIP: a stated gap), and each rail or switch
    uplink no test crossed (ERROR: nothing judged it); nodeqc.fabric.coverage says why they differ."""
    out: list[CheckResult] = []
    total, untested = cov.pairs_total, cov.pairs_untested
    values = {"pairs": Value(total), "tested": Value(total - untested), "untested": Value(untested)}
    if untested:
        listed = [f"{a}-{b}" for a, b in cov.untested_pairs(8)]
        more = f" +{untested - len(listed)} more" if untested > len(listed) else ""
        hint = (f"; --rounds {len(cov.nodes) - 1 + len(cov.nodes) % 2} tests every pair"
                if len(cov.nodes) <= 64 else "")
        out.append(CheckResult("fabric.coverage", "pairs", Verdict.SKIP,
                               f"{untested} of {total} node pairs never tested ({', '.join(listed)}{more}): a fault on "
                               f"the path that only such a pair takes would go unseen{hint}", "FABRIC_UNTESTED",
                               values, [], {"untested": [f"{a}-{b}" for a, b in cov.untested_pairs()]}, "untested"))
    else:
        out.append(CheckResult("fabric.coverage", "pairs", Verdict.PASS, f"all {total} node pairs tested",
                               None, values, [], {}, "untested"))
    for rail in cov.untested_rails:
        out.append(CheckResult("fabric.coverage", rail, Verdict.ERROR,
                               "no pair test gave a result on this rail: nothing judged it", "FABRIC_UNTESTED"))
    for switch, rail in cov.untested_uplinks:
        out.append(CheckResult("fabric.coverage", f"{switch} uplink", Verdict.ERROR,
                               f"no pair test crossed {switch}'s uplink on {rail}: nothing judged it", "FABRIC_UNTESTED",
                               {"rail": Value(rail)}, [], {}, "rail"))
    return out


def _portless(rails: set[str]) -> str:
    if not rails:
        return ""
    return (f"; no active port on {', '.join(sorted(rails))} here while its peers have one "
            "(link down, or the HCA missing: ibstat)")


def pair_rows(results: list[PairResult]) -> list[dict[str, Any]]:
    """Per pair, compactly: each rail's figure in each direction; failures with their error."""
    rows = []
    for r in results:
        row: dict[str, Any] = {"round": r.round, "a": r.a, "b": r.b}
        if r.error:
            row["error"] = r.error
            if r.refused:
                row["refused"] = r.refused[:20]
        else:
            rails: dict[str, dict[str, Any]] = {}
            for m in r.measurements:
                rails.setdefault(m.rail, {})[m.direction] = m.value if m.error is None and m.skipped is None else (
                    {"error": m.error} if m.error else {"skipped": m.skipped})
                rails[m.rail]["floor"] = m.floor
            row["rails"] = rails
            row["failed"] = sorted(rl for rl, ok in r.rails().items() if not ok)
            if r.latencies:
                row["tails"] = {lat.rail: lat.to_dict() for lat in r.latencies}
        rows.append(row)
    return rows


def build_predicate(*, name: str, launcher: str, scores: Scores, rounds: list[Round], results: list[PairResult],
                    identities: dict[str, dict[str, Any]], settings: dict[str, Any], profile: dict[str, Any],
                    simulated: bool, simulation: dict[str, Any] | None, status: str, started_at: str,
                    finished_at: str, duration_s: float, operator: str | None, ticket: str | None,
                    signer: Signer, command: list[str], covered: Coverage | None = None,
                    topology: Topology | None = None, groups: GroupScores | None = None,
                    pair_tests: bool = True) -> dict[str, Any]:
    covered = covered or coverage(scores.nodes, scores.rails, results, topology)
    checks = fabric_checks(scores, results) + coverage_checks(covered) if pair_tests else []
    if groups is not None:
        checks += group_checks(groups, pair_tests)
    counts = {v.value: sum(1 for c in checks if c.verdict is v) for v in Verdict}
    failed = [check_label(c.name, c.subject) for c in checks if c.verdict.blocks_qualification]
    verdict = "FAIL" if failed or status == "aborted" else "PASS"
    return {
        "kind": "fabric",
        "verdict": verdict,
        "status": status,
        "simulated": simulated,
        "simulation": simulation,
        "profile": profile,
        "node": {"hostname": f"fabric-{name}", "system_serial": None},  # the archive files it as this
        "gpus": [],
        "fabric": {"name": name, "launcher": launcher, "nodes": scores.nodes, "rails": scores.rails,
                   "rounds": len(rounds), **settings,
                   "schedule": [{"round": r.number, "pairs": [list(p) for p in r.pairs],
                                 "sitting_out": r.sitting_out} for r in rounds],
                   "bad": _group_bad(groups) if groups is not None and not pair_tests else {"nodes": scores.bad_nodes, "node_rails": [list(p) for p in scores.bad_ports],
                           "rails": scores.bad_rails, "links": [[a, b] for a, b, _ in scores.bad_links],
                           "suspects": sorted(scores.suspects),
                           **({"stragglers": sorted(scores.tails.stragglers)} if scores.tails is not None else {}),
                           "inconclusive": sorted(scores.inconclusive),
                           **({"uplinks": sorted({u.switch for u in scores.bad_uplinks}),
                               "leaves": [leaf.switch for leaf in scores.bad_leaves]} if topology else {})},
                   "coverage": covered.to_dict() if pair_tests else None,
                   **({"groups": {"size": groups.size, "rounds": len(groups.rounds),
                                  "bad_nodes": groups.bad_nodes,
                                  "together": [list(f.nodes) for f in groups.findings if f.kind == "together"],
                                  "fabric_wide": any(f.kind == "fabric" for f in groups.findings),
                                  "not_judged": sorted(groups.not_judged)}} if groups is not None else {}),
                   **({"topology": topology.to_dict()} if topology is not None else {})},
        "nodes": [{"name": n, "verdict": _node_verdict(n, scores, groups, pair_tests),
                   "identity": identities.get(n, {"hostname": n})} for n in scores.nodes],
        "checks": [c.to_dict() for c in checks],
        "pairs": pair_rows(results),
        **({"groups": group_rows(groups)} if groups is not None else {}),
        "summary": {"counts": counts, "failed": failed},
        "tool": {"name": "nodeqc", "version": __version__, "python": platform.python_version(), "command": command},
        "started_at": started_at,
        "finished_at": finished_at,
        "duration_s": round(duration_s, 3),
        "operator": operator,
        "ticket": ticket,
        "signer": {"keyid": signer.keyid},
        "partial": False,
    }


def _group_bad(groups: GroupScores) -> dict[str, Any]:
    """What is bad where the group tests alone judged the nodes (no pair test ran)."""
    return {"nodes": groups.bad_nodes, "node_rails": [], "rails": [], "links": [], "suspects": sorted(groups.suspects),
            "inconclusive": sorted(n for n in groups.not_judged if n not in groups.bad_nodes),
            **({"fabric": True} if any(f.kind == "fabric" for f in groups.findings) else {})}


def _node_verdict(node: str, scores: Scores, groups: GroupScores | None, pair_tests: bool) -> str:
    """The node's verdict over the pair tests and the group tests: the worse of the two."""
    said = [scores.node_verdict(node)] if pair_tests else []
    if groups is not None:
        grouped = groups.node_verdict(node)
        said.append("error" if grouped == "skip" and not pair_tests else grouped)  # measured by nothing
    return next((v for v in ("fail", "error", "pass", "skip") if v in said), "error")


def exit_code(predicate: dict[str, Any]) -> int:
    """As for a node: 2 when aborted; 1 when something failed; 2 when something could not be judged
    (a pair not tested, a node inconclusive) and nothing failed; else 0."""
    counts = predicate["summary"]["counts"]
    if predicate["status"] == "aborted":
        return EXIT_CANNOT_RUN
    if counts.get("fail"):
        return EXIT_FAIL
    if counts.get("error"):
        return EXIT_CANNOT_RUN
    return EXIT_FAIL if predicate["verdict"] == "FAIL" else EXIT_PASS


def fabric_statement(predicate: dict[str, Any]) -> dict[str, Any]:
    subjects = [{"name": f"node:{n['name']}", "digest": {"sha256": node_digest(n["identity"])}}
                for n in predicate["nodes"]]
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": FABRIC_PREDICATE_TYPE,
            "predicate": predicate}


def write_report(path: Path, predicate: dict[str, Any], signer: Signer) -> None:
    write_envelope(path, sign(fabric_statement(predicate), signer))
