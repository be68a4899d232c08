"""Group tests: NCCL's collectives across groups of nodes (`nodeqc fabric --group-size K`), isolated
after the manner of NVIDIA's cluster readiness engine (ADR-055: test groups of about sqrt(N) nodes,
split the failing ones, confirm each suspect against a known-good partner).

A collective across many nodes crosses the fabric as a training job does: every node's NICs at
once, all its rails striped, the switches under the load of a whole group, where a pair test loads
two nodes. So some faults show only in a group: a node whose GPUs or NICs fail under a job's
pattern, a path that only a collective of several nodes takes, a switch that falls short when
many ports are busy.

1. Plan: the nodes in groups of K (or K-1, so no group is left with one node: sizes differ by one at
   most). With a topology the nodes are taken leaf by leaf, so a group lies within a leaf where it
   can (a failing group then points at its leaf's nodes, not at a path across the fabric).
2. Every group runs the collectives at once (one round). Where every test of the first two rounds
   fails, the whole groups and their halves, with three groups or more, the fault is the fabric's
   (or the floor's), not a node's: that is the finding, and nothing more is split. (Not "most
   groups": with 2% of nodes bad, two groups of 64 in three hold a bad node.)
3. A failing group of four nodes or more is split in two halves, tested in the next round (all the
   halves of a round at once); a half that fails is split again. A group that could not be tested
   at all (a node never came to the rendezvous) is split the same way, so the node that cannot run
   the collective is found.
4. A failing group of two or three nodes has each node confirmed against a known-good partner (a
   node of a group that passed, never of its own failing group), each partner in one test a round:
   a node that fails with a known-good partner is bad; where every member passed with a known-good
   partner, the group fails only together (two nodes: the path between them). Three such nodes have
   each of their pairs tested (a round each: the pairs share nodes): a pair that fails again is the
   path between those two; where every pair passes, the three fail only as three.
5. A failing group whose two halves both pass fails only as a whole: the paths between its halves
   or the load of the whole group (a leaf switch, its uplinks), said as such.
6. With collectives only (no pair round) and a topology of two leaves or more, groups that join two
   leaves then cross the uplinks, which are named as the pair tests name them (nodeqc.fabric.crossing).

A test that is skipped (CuPy or GPUs missing) is no evidence and is not split. What could not be
settled in MAX_ROUNDS, or found no known-good partner, is not judged (exit 2), never a pass.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from nodeqc.fabric.crossing import name_crossing, plan_crossing
from nodeqc.fabric.scoring import GroupResult
from nodeqc.fabric.uplinks import Uplink

if TYPE_CHECKING:
    from nodeqc.fabric.topology import Topology

SPLIT_MIN = 4  # a failing group this large or larger is split; a smaller one has its members confirmed
MAX_ROUNDS = 16  # log2 of any fleet's group size, plus the confirmations, is well under this
FABRIC_GROUPS = 3  # planned groups, at least, before every test failing says "the fabric" (two could be two nodes)


def auto_size(nodes: int) -> int:
    """ADR-055's group size: about the square root of the node count, at least three."""
    return max(3, round(math.sqrt(nodes)))


def plan(nodes: list[str], size: int, seed: int, topology: "Topology | None" = None,
         domains: dict[str, str] | None = None) -> list[tuple[str, ...]]:
    """The nodes in groups of sizes that differ by one at most (so none of one node): the nodes of
    each multi-node NVLink domain (`domains`: node -> domain, gpu.clique) in groups of their own,
    so their collectives run over NVLink; the rest (and a domain's lone node) by leaf, or shuffled."""
    domains = domains or {}
    by_domain: dict[str, list[str]] = {}
    for n in nodes:
        if n in domains:
            by_domain.setdefault(domains[n], []).append(n)
    rest = [n for n in nodes if n not in domains] + [n for d in by_domain.values() if len(d) < 2 for n in d]
    out = [g for d in sorted(by_domain) if len(by_domain[d]) >= 2 for g in _chunks(sorted(by_domain[d]), size)]
    if len(rest) == 1 and out:  # one node left over: it joins the smallest group (a group across domains)
        smallest = min(range(len(out)), key=lambda i: len(out[i]))
        out[smallest] += tuple(rest)
        rest = []
    if topology is not None:
        order = sorted(rest, key=lambda n: (topology.leaf_of.get(n, ""), n))
    else:
        order = sorted(rest)
        random.Random(seed).shuffle(order)
    return out + (_chunks(order, size) if order else [])


def _chunks(order: list[str], size: int) -> list[tuple[str, ...]]:
    """ceil(N / size) runs of `order`, of sizes that differ by one at most."""
    count = max(1, -(-len(order) // size))
    base, extra = divmod(len(order), count)
    out, i = [], 0
    for k in range(count):
        take = base + (1 if k < extra else 0)
        out.append(tuple(order[i:i + take]))
        i += take
    return out


def shared_domain(nodes: tuple[str, ...], domains: dict[str, str]) -> str | None:
    """The multi-node NVLink domain every node of a group is in, or None (not all in one, or unknown)."""
    found = {domains.get(n) for n in nodes}
    return found.pop() if len(found) == 1 and None not in found else None


@dataclass
class GroupTest:
    """One group test: a planned group, a half of a failing one, or a member with a known-good partner."""

    nodes: tuple[str, ...]
    kind: str  # "group", "half", "confirm", "pair" (two members of a trio that failed only together),
    # "cross" (two leaves joined, nodeqc.fabric.crossing)
    parent: int | None = None  # the unit it came from (its index in GroupScores.units)
    member: str | None = None  # confirm: the node confirmed
    result: GroupResult | None = None

    @property
    def outcome(self) -> str:
        return "not run" if self.result is None else self.result.outcome

    @property
    def skipped(self) -> bool:
        r = self.result
        return r is not None and r.error is None and bool(r.measurements) and all(m.skipped for m in r.measurements)


@dataclass
class GroupFinding:
    kind: str  # "node" (failed with a known-good partner), "together" (fails only as a whole), "fabric",
    # "nvlink" (every test within one multi-node NVLink domain failed, tests elsewhere passed), "uplink"
    nodes: tuple[str, ...]
    why: str
    unit: int | None = None  # the test that shows it
    uplink: Uplink | None = None  # "uplink": the switch uplink named (its nodes are `nodes`)


@dataclass
class GroupScores:
    nodes: list[str]
    size: int
    domains: dict[str, str] = field(default_factory=dict)  # node -> multi-node NVLink domain, where known
    units: list[GroupTest] = field(default_factory=list)
    rounds: list[list[int]] = field(default_factory=list)  # each round's units
    findings: list[GroupFinding] = field(default_factory=list)
    not_judged: dict[str, str] = field(default_factory=dict)  # node -> why

    @property
    def results(self) -> list[GroupResult]:
        return [u.result for u in self.units if u.result is not None]

    @property
    def bad_nodes(self) -> list[str]:
        return sorted({n for f in self.findings if f.kind == "node" for n in f.nodes})

    @property
    def suspects(self) -> dict[str, list[dict[str, Any]]]:
        """Nodes whose worker printed what it could not have measured (launchers.merge_group refused
        it as a lie): a broken or compromised node, as in the pair tests (scoring.Scores.suspects)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for r in self.results:
            for refused in r.refused:
                if refused.get("claim") and refused.get("node") in self.nodes:
                    out.setdefault(refused["node"], []).append({"round": r.round, "group": "-".join(r.nodes),
                                                                **refused})
        return out

    @property
    def failed(self) -> bool:
        return bool(self.findings or self.suspects)

    def together(self, a: str, b: str) -> bool:
        """Whether a and b were in one group test that gave figures (an all-to-all there crossed
        the path between them; an all-reduce or all-gather, the paths NCCL's rings and trees took)."""
        return any(a in r.nodes and b in r.nodes and r.error is None for r in self.results)

    def apart(self, most: int = 200) -> tuple[int, list[tuple[str, str]]]:
        """The node pairs never in one group test that gave figures: how many, and the first `most`."""
        seen = {frozenset((a, b)) for r in self.results if r.error is None
                for i, a in enumerate(r.nodes) for b in r.nodes[i + 1:]}
        total = len(self.nodes) * (len(self.nodes) - 1) // 2 - len(seen)
        listed = []
        for i, a in enumerate(self.nodes):
            for b in self.nodes[i + 1:]:
                if len(listed) >= most:
                    return total, listed
                if frozenset((a, b)) not in seen:
                    listed.append((a, b))
        return total, listed

    def node_verdict(self, node: str) -> str:
        """fail (found bad), error (not judged), pass (in a group test that passed, or cleared), or
        skip (in skipped tests only: no evidence)."""
        if node in self.bad_nodes or node in self.suspects or any(
                f.kind == "nvlink" and node in f.nodes for f in self.findings):
            return "fail"  # (a node of a failed NVLink domain cannot serve the jobs the domain is for)
        if node in self.not_judged:
            return "error"
        if any(f.kind == "fabric" for f in self.findings):
            return "error"  # every group failed: nothing says this node is good
        mine = [u for u in self.units if node in u.nodes and u.result is not None]
        if mine and all(u.skipped for u in mine):
            return "skip"
        return "pass"


def isolate(nodes: list[str], size: int, run_groups: Callable[[int, list[tuple[str, ...]]], list[GroupResult]],
            seed: int, topology: "Topology | None" = None, max_rounds: int = MAX_ROUNDS,
            stopped: Callable[[], bool] = lambda: False, domains: dict[str, str] | None = None,
            cross: bool = False) -> GroupScores:
    """Plan, run (through `run_groups(round_number, groups)`, a launcher's) and isolate; the scores.
    `stopped()` is asked before each round (Ctrl-C): what is left is then not judged, saying so.
    `domains`: node -> multi-node NVLink domain, where known (plan). `cross`: then groups across
    leaves, for the uplinks (no pair round crossed them)."""
    rng = random.Random(seed)
    domains = domains or {}
    out = GroupScores(list(nodes), size, domains=dict(domains))
    units = out.units
    units += [GroupTest(g, "group") for g in plan(nodes, size, seed, topology, domains)]
    todo = list(range(len(units)))
    waiting: list[tuple[str, int]] = []  # (member, the failing unit it came from) to confirm
    pairs: list[tuple[tuple[str, str], int]] = []  # (two members, their trio) to test together
    paired: set[int] = set()  # the trios whose pairs are planned
    good: set[str] = set()
    limit = f"not settled within {max_rounds} rounds"
    while (todo or waiting or pairs) and len(out.rounds) < max_rounds:
        if stopped():
            limit = "the run was stopped before it was settled"
            break
        batch = list(todo)
        todo = []
        busy = {n for i in batch for n in units[i].nodes}
        later_pairs = []
        for pair, trio in pairs:
            if busy.isdisjoint(pair):
                busy.update(pair)
                units.append(GroupTest(pair, "pair", trio))
                batch.append(len(units) - 1)
            else:
                later_pairs.append((pair, trio))
        pairs = later_pairs
        free = sorted(good - busy)
        rng.shuffle(free)
        later = []
        for member, parent in waiting:
            # Known good: of a group test that passed. Never of the member's failing group (its nodes
            # were in it when it failed, and in no other test of their lineage); having shared a bigger
            # group with the member says nothing of the path between the two alone.
            # Within an NVLink domain the partner is of the same domain: the test must take the path
            # that failed (NVLink), not the NICs between domains.
            domain = shared_domain(units[parent].nodes, domains)
            partner = next((g for g in free if member not in busy and g not in busy
                            and (domain is None or domains.get(g) == domain)), None)
            if partner is None:
                later.append((member, parent))
                continue
            busy.update((member, partner))
            units.append(GroupTest((member, partner), "confirm", parent, member))
            batch.append(len(units) - 1)
        if not batch:
            waiting = later
            break  # no known-good partner to be had: those members are not judged (below)
        waiting = later
        results = run_groups(len(out.rounds) + 1, [units[i].nodes for i in batch])
        out.rounds.append(batch)
        for i, r in zip(batch, results):
            units[i].result = r
            if r.outcome == "pass":
                good.update(r.nodes)
        if len(out.rounds) == 2 and _fabric_wide(out):
            return out
        for trio in _trios_to_pair(units, paired):
            paired.add(trio)
            a, b, c = units[trio].nodes
            pairs += [((a, b), trio), ((a, c), trio), ((b, c), trio)]
        for i in batch:
            u = units[i]
            if u.kind in ("confirm", "pair") or u.outcome == "pass" or u.skipped:
                continue
            if len(u.nodes) >= SPLIT_MIN:
                half = (len(u.nodes) + 1) // 2
                for part in (u.nodes[:half], u.nodes[half:]):
                    units.append(GroupTest(part, "half", i))
                    todo.append(len(units) - 1)
            else:
                waiting += [(m, i) for m in u.nodes]
    # Groups of two or three that all failed in the one round there was: nothing to split, nobody
    # known good. (Not where the run was stopped: one round is too little to blame the fabric on.)
    if not stopped() and not any(f.kind == "fabric" for f in out.findings) and _fabric_wide(out):
        return out
    for member, parent in waiting:
        out.not_judged.setdefault(member, limit if stopped() or len(out.rounds) >= max_rounds else
                                  f"its group {'-'.join(units[parent].nodes)} failed and no known-good partner was "
                                  "free to confirm it against")
    for i in todo:
        for n in units[i].nodes:
            out.not_judged.setdefault(n, limit)
    for pair, trio in pairs:  # planned, never run: the trio's finding says "together", unnarrowed
        units.append(GroupTest(pair, "pair", trio))
    _nvlink_domains(out)
    for i in range(len(units)):  # a planned group never run (stopped before the first round)
        if units[i].result is None and units[i].kind == "group":
            for n in units[i].nodes:
                out.not_judged.setdefault(n, limit)
    _judge(out)
    if cross and topology is not None and not stopped() and not any(f.kind == "fabric" for f in out.findings):
        _cross(out, run_groups, topology, size, stopped)
    return out


def _cross(out: GroupScores, run_groups: Callable[[int, list[tuple[str, ...]]], list[GroupResult]],
           topology: "Topology", size: int, stopped: Callable[[], bool]) -> None:
    """Rounds of groups joining two leaves, of the nodes that passed; the uplinks they name, and each
    crossing group that failed with no uplink to explain it."""
    good = [n for n in out.nodes if out.node_verdict(n) == "pass"]
    for groups in plan_crossing(good, topology, size):
        if stopped():
            break
        first = len(out.units)
        out.units += [GroupTest(g, "cross") for g in groups]
        batch = list(range(first, len(out.units)))
        for i, r in zip(batch, run_groups(len(out.rounds) + 1, groups)):
            out.units[i].result = r
        out.rounds.append(batch)
    uplinks, explained = name_crossing(out.units, topology)
    for up in uplinks:
        other = f" (or {', '.join(up.alternatives)}'s: every failing group crossed it too)" if up.alternatives else ""
        out.findings.append(GroupFinding("uplink", tuple(sorted(topology.below(up.switch))), (
            f"{up.fails} of {up.tests} node pairs across {up.switch}'s uplink failed in the group tests joining two "
            f"leaves, while {up.inside_passed} of {up.inside} pairs within it passed in its own groups: the uplink{other} "
            "(its cables, ports or the switch above), not its nodes"), uplink=up))
    for i, u in enumerate(out.units):
        if u.kind != "cross" or u.result is None:
            continue
        a, b = sorted({topology.leaf_of[n] for n in u.nodes})
        if u.result.error is not None:
            for n in u.nodes:
                out.not_judged.setdefault(n, f"its group test across leaves {a} and {b} could not run (round "
                                             f"{u.result.round}): {u.result.error[:200]}")
        elif u.outcome == "fail" and not u.skipped and i not in explained:
            out.findings.append(GroupFinding("together", u.nodes, (
                f"failed only across leaves {a} and {b} (round {u.result.round}: {_what(u.result)}): each of its "  # type: ignore[union-attr]
                "nodes passed within its own leaf and no uplink explains it: the paths between the two leaves, or "
                "the load of the crossing on their switches"), i))


def _trios_to_pair(units: list[GroupTest], paired: set[int]) -> list[int]:
    """Failing groups of three whose members each passed with a known-good partner, pairs not yet planned."""
    found = []
    for i, u in enumerate(units):
        if i in paired or len(u.nodes) != 3 or u.kind in ("confirm", "pair") or u.outcome != "fail" or u.skipped:
            continue
        confirms = [k for k in units if k.parent == i and k.kind == "confirm"]
        if {k.member for k in confirms} == set(u.nodes) and all(k.outcome == "pass" for k in confirms):
            found.append(i)
    return found


def _fabric_wide(out: GroupScores) -> bool:
    """Every test so far failed, the halves as the whole groups, with three groups or more: the
    fabric's (or the floor's). Bad nodes in every group and in every half of it would take a large
    share of bad nodes: at 2% bad, two in three groups of 64 hold one, and a third of their halves
    pass. Then the rest is not split (every part would fail for the same reason)."""
    tests = [u for u in out.units if u.result is not None]
    planned = sum(1 for u in out.units if u.kind == "group")
    if planned < FABRIC_GROUPS or not tests or any(u.outcome != "fail" for u in tests):
        return False
    rails = sorted({rail for u in tests for rail in u.result.failed()})  # type: ignore[union-attr]
    out.findings.append(GroupFinding("fabric", tuple(out.nodes), f"every one of {len(tests)} group tests in "
                                     f"{len(out.rounds)} rounds failed ({', '.join(rails)}), the halves as the whole "
                                     "groups: the fabric, or a floor above what it gives, not a node (or bad nodes in "
                                     "every part of every group: a smaller --group-size would tell)"))
    return True


def _nvlink_domains(out: GroupScores) -> None:
    """An NVLink domain every test within which failed, where tests elsewhere passed: the domain's
    NVLink fabric, not its nodes (no partner of the domain was known good to tell a node from it)."""
    within: dict[str, list[GroupTest]] = {}
    for u in out.units:
        domain = shared_domain(u.nodes, out.domains)
        if domain is not None and u.result is not None and not u.skipped:
            within.setdefault(domain, []).append(u)
    elsewhere = any(u.outcome == "pass" and shared_domain(u.nodes, out.domains) is None for u in out.units)
    for domain, tests in sorted(within.items()):
        if len(tests) < 2 or not all(u.outcome == "fail" for u in tests) or not (
                elsewhere or any(u.outcome == "pass" for d, us in within.items() if d != domain for u in us)):
            continue
        nodes = tuple(sorted({n for u in tests for n in u.nodes}))
        failed = sorted({x for u in tests for x in u.result.failed()})  # type: ignore[union-attr]
        out.findings.append(GroupFinding("nvlink", nodes, f"every one of {len(tests)} group tests within NVLink domain "
                                         f"{domain} failed ({', '.join(failed)}; e.g. {_what(tests[0].result)}), "  # type: ignore[arg-type]
                                         "while groups elsewhere passed: the domain's multi-node NVLink (its NVSwitch "
                                         "trays, the fabric manager, IMEX), not one node", out.units.index(tests[0])))
        for n in nodes:
            out.not_judged.pop(n, None)


def _judge(out: GroupScores) -> None:
    units = out.units
    children: dict[int, list[int]] = {}
    for i, u in enumerate(units):
        if u.parent is not None:
            children.setdefault(u.parent, []).append(i)
    for i, u in enumerate(units):
        if u.kind == "pair":
            continue  # judged with its trio, below
        if u.kind == "confirm":
            r = u.result
            partner = next(n for n in u.nodes if n != u.member)
            if u.outcome == "fail":
                out.findings.append(GroupFinding("node", (u.member,), f"failed with known-good partner {partner} "  # type: ignore[arg-type]
                                                 f"(round {r.round}: {_what(r)}), after its group "  # type: ignore[arg-type,union-attr]
                                                 f"{'-'.join(units[u.parent].nodes)} failed", i))  # type: ignore[index]
            elif u.outcome == "not judged" and not u.skipped:
                out.not_judged.setdefault(u.member, f"could not be tested with known-good partner {partner}: "  # type: ignore[arg-type]
                                                    f"{(r.error or '')[:300]}")  # type: ignore[union-attr]
            continue
        if u.outcome == "pass" or u.skipped or u.result is None:
            continue
        pairs = [k for k in children.get(i, []) if units[k].kind == "pair"]
        kids = [units[k] for k in children.get(i, []) if units[k].kind != "pair"]
        confirmed = {k.member for k in kids if k.kind == "confirm"}
        if not kids or any(k.result is None for k in kids) or (kids[0].kind == "confirm" and confirmed != set(u.nodes)):
            continue  # not split (the fabric's), or not settled (not_judged says so)
        if all(k.outcome == "pass" for k in kids):
            what = ("its members each passed with a known-good partner" if kids[0].kind == "confirm" else
                    f"its halves {'-'.join(kids[0].nodes)} and {'-'.join(kids[1].nodes)} each passed")
            where = ("the path between them" if len(u.nodes) == 2 else
                     "the paths between its parts, or the load of the whole group on their switches")
            failing = [k for k in pairs if units[k].outcome == "fail" and not units[k].skipped]
            if pairs and all(units[k].result is not None and not units[k].skipped for k in pairs) and not failing:
                what, where = f"{what}, and each pair of them passed", "the load of the three together on their switches"
            for k in failing:
                pair = units[k]
                out.findings.append(GroupFinding("together", pair.nodes, f"failed together as a pair (round "
                                                 f"{pair.result.round}: {_what(pair.result)}) after their group "  # type: ignore[arg-type,union-attr]
                                                 f"{'-'.join(u.nodes)} failed only together ({what}): the path "
                                                 "between them", k))
            if failing:
                continue
            out.findings.append(GroupFinding("together", u.nodes, f"failed only together (round "
                                             f"{u.result.round}: {_what(u.result)}): {what}: {where}", i))  # type: ignore[union-attr]


def _what(r: GroupResult) -> str:
    """What failed in a group test, with its figure: a collective below its floor, its error, a tail."""
    if r.error is not None:
        return f"not tested: {r.error[:200]}"
    said = []
    for m in r.measurements:
        if m.skipped or m.passed:
            continue
        said.append(f"{m.rail}: {m.error[:200]}" if m.error else f"{m.rail} {m.value:g} GB/s below its floor {m.floor:g}")
    said += [f"{lat.rail} step p99 {lat.p99:g} ms above {lat.floor:g} (median {lat.p50:g})" for lat in r.latencies if lat.high]
    return "; ".join(said)


def rows(scores: GroupScores) -> list[dict[str, Any]]:
    """Per group test, compactly, for the report: what it was, each collective's figure and floor."""
    return [row(scores, i) for i, u in enumerate(scores.units) if u.result is not None]


def row(scores: GroupScores, i: int) -> dict[str, Any]:
    u = scores.units[i]
    r = u.result
    assert r is not None, "a group test that was not run has no row"
    out: dict[str, Any] = {"round": r.round, "nodes": list(r.nodes), "kind": u.kind, "outcome": r.outcome}
    if u.parent is not None:
        out["from"] = list(scores.units[u.parent].nodes)
    if r.error:
        out["error"] = r.error
        if r.refused:
            out["refused"] = r.refused[:20]
        return out
    out["collectives"] = {m.rail: ({"value": m.value, "floor": m.floor} if m.error is None and m.skipped is None
                                   else {"error": m.error} if m.error else {"skipped": m.skipped})
                          for m in r.measurements}
    if r.latencies:
        out["tails"] = {lat.rail: lat.to_dict() for lat in r.latencies}
    out["failed"] = r.failed()
    return out
