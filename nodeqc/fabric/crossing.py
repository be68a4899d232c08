"""Group tests across leaves. With collectives only (no pair round) the groups lie within leaves
(nodeqc.fabric.groups: a failing group then points at its leaf's nodes), so none of them crossed a
switch uplink: a leaf whose uplinks ran at half rate passed as clean (seen on the simulated fabric,
2026-11-27). Once the groups are settled, rounds of groups that each join two leaves cross them:
each leaf meets another leaf each round (a round-robin), with about half a group of its good nodes,
a different half each round where it has them. The uplinks are then named as the pair tests name
them (nodeqc.fabric.uplinks): every two nodes of a crossing group, one in each leaf, count as a test
across the uplinks between them, and every two nodes of a leaf's own group as a test within it. A
crossing group that fails with no uplink to explain it fails only across its two leaves (the paths
between them, or the crossing's load), said as such; no node is blamed for it (each passed in its
own leaf)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodeqc.fabric.uplinks import Uplink, name_uplinks

if TYPE_CHECKING:
    from nodeqc.fabric.topology import Topology

# Leaf pairings: an uplink is named from crossings to two other leaves or more (name_uplinks needs
# its failures to reach two peers outside), and a third round outvotes one leaf that is bad itself.
CROSS_ROUNDS = 3
RAIL = "collectives"  # the group tests stripe every rail: the uplinks are judged over all of them at once


def plan_crossing(good: list[str], topology: "Topology", size: int, rounds: int = CROSS_ROUNDS) -> list[list[tuple[str, ...]]]:
    """Rounds of groups each joining two leaves (size // 2 good nodes of each, at least one), every
    leaf in one group a round, the leaves paired by the circle method. None with fewer than two leaves."""
    by_leaf: dict[str, list[str]] = {}
    for n in sorted(good):
        if n in topology.leaf_of:
            by_leaf.setdefault(topology.leaf_of[n], []).append(n)
    ring: list[str | None] = list(sorted(by_leaf))
    if len(ring) < 2:
        return []
    if len(ring) % 2:
        ring.append(None)  # a bye: one leaf sits out each round
    half = max(1, size // 2)
    out = []
    for r in range(min(rounds, len(ring) - 1)):
        groups = []
        for i in range(len(ring) // 2):
            a, b = ring[i], ring[-1 - i]
            if a is not None and b is not None:
                groups.append(_take(by_leaf[a], r, half) + _take(by_leaf[b], r, half))
        out.append(groups)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


def _take(nodes: list[str], r: int, half: int) -> tuple[str, ...]:
    """`half` of a leaf's nodes for round r, a different run of them each round where there are more."""
    k = min(half, len(nodes))
    return tuple(nodes[(r * k + j) % len(nodes)] for j in range(k))


def name_crossing(units: list[Any], topology: "Topology") -> tuple[list[Uplink], set[int]]:
    """The bad uplinks, and the units (indices) they explain: from the crossing groups ("cross") and
    every group test within one leaf that gave figures, as pair tests (name_uplinks). `units`: the
    group tests (nodeqc.fabric.groups.GroupTest, which imports this module: read by duck typing)."""
    tests: list[tuple[str, str, str, bool]] = []
    owner: list[int] = []
    for i, u in enumerate(units):
        r = u.result
        if r is None or u.skipped or r.error is not None or any(n not in topology.leaf_of for n in u.nodes):
            continue  # no figures: no evidence either way (a crossing that could not run is not judged)
        passed = r.outcome == "pass"
        leaves = {topology.leaf_of[n] for n in u.nodes}
        if u.kind == "cross":
            for a in u.nodes:
                for b in u.nodes:
                    if topology.leaf_of[a] < topology.leaf_of[b]:
                        tests.append((a, b, RAIL, passed))
                        owner.append(i)
        elif len(leaves) == 1:
            for j, a in enumerate(u.nodes):
                for b in u.nodes[j + 1:]:
                    tests.append((a, b, RAIL, passed))
                    owner.append(i)
    named, explained = name_uplinks(tests, set(), topology)
    return named, {owner[t] for t in explained}
