"""A bad switch uplink, named as such: one leaf's uplink at half rate fails every test that leaves
the leaf, so without the topology its eight nodes look bad; with it, the failures line up on the
uplink they all cross while the same nodes pass among themselves.

For each switch S and rail, from the pair tests not already explained (a fabric-wide bad rail):
`crossing` are the tests whose path crosses S's uplink (topology.Topology.crossed), `inside` those
between two nodes under S that do not. S's uplink on the rail is named bad when

- most of its remaining crossing tests failed,
- most of what hangs off S (its nodes, for a leaf; its switches, above) fail most of the crossing
  tests through them, at least two of them, and the failures reach at least two peers outside (a
  few bad nodes under a leaf, or one bad leaf under a spine, are theirs, named in their turn), and
- most of its inside tests passed, leaving out those of a node that fails most of its own (a bad
  node; a subtree of bad nodes fails inside too, and has no inside test left).

Switches are taken from the top down (a spine's uplink explains its leaves' crossing failures, not
the other way round), worst first within a level, and naming one takes its crossing tests off every
tally: the nodes behind it are then judged on the tests within it, and a failure it explains is not
held against the peers outside. Every failing test that crossed it also crossed the uplinks on its far
side, up to where the two paths meet: those whose own crossing tests mostly failed too (not cleared by
their passing tests) are told as "or" (`alternatives`). With two subtrees only, a fault on either
uplink fails exactly the same tests; with one spine above a single leaf and a schedule that never
crossed the other spine from its other leaf, a slow spine uplink failed exactly the tests of the far
leaf's uplink (a property test's counterexample: 8 nodes, 3 leaves, 2 spines).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeqc.fabric.topology import Topology


@dataclass
class Uplink:
    switch: str
    rail: str
    tests: int  # crossing tests left when it was named
    fails: int
    inside: int  # tests within it, and how many passed
    inside_passed: int
    alternatives: tuple[str, ...] = ()  # far-side uplinks every failing crossing test crossed too, not cleared
    same: tuple[str, ...] = ()  # switches above it that hold only its nodes: the same tests cross them


def name_uplinks(tests: list[tuple[str, str, str, bool]], skip: set[int], topology: Topology) -> tuple[list[Uplink], set[int]]:
    """(the bad uplinks, the indices of the tests they explain)."""
    crossed: dict[tuple[str, str], list[str]] = {}
    under: dict[str, set[str]] = {}
    by_switch: dict[tuple[str, str], list[int]] = {}
    inside: dict[tuple[str, str], list[int]] = {}
    for i, (a, b, rail, _) in enumerate(tests):
        if i in skip or a not in topology.leaf_of or b not in topology.leaf_of:
            continue
        key = (a, b) if a < b else (b, a)
        if key not in crossed:
            crossed[key] = topology.crossed(a, b)
        path = crossed[key]
        for s in path:
            by_switch.setdefault((s, rail), []).append(i)
        for s in set(topology.up(topology.leaf_of[a])) & set(topology.up(topology.leaf_of[b])):
            inside.setdefault((s, rail), []).append(i)
    for s in {s for s, _ in by_switch}:
        under[s] = topology.below(s)
    levels = sorted({topology.level(s) for s, _ in by_switch}, reverse=True)
    explained: set[int] = set()
    named: list[Uplink] = []
    for level in levels:
        keys = [k for k in by_switch if topology.level(k[0]) == level]
        while True:
            best = None
            for k in keys:
                if any(u.switch == k[0] and u.rail == k[1] for u in named):
                    continue
                left = [i for i in by_switch[k] if i not in explained]
                failed = [i for i in left if not tests[i][3]]
                if not left or len(failed) * 2 <= len(left):
                    continue
                mine = under[k[0]]
                ends_out = {n for i in failed for n in tests[i][:2] if n not in mine}
                # Per child of the switch (a node, for a leaf): does most of what crosses through it fail?
                per_child: dict[str, list[bool]] = {}
                for i in left:
                    for n in tests[i][:2]:
                        if n in mine:
                            per_child.setdefault(_child_below(topology, n, k[0]), []).append(tests[i][3])
                bad_children = sum(1 for oks in per_child.values() if oks.count(False) * 2 > len(oks))
                ends_in = range(bad_children if bad_children * 2 > len(per_child) else 0)
                if _far_nodes_explain(tests, left, mine):
                    continue
                within = [i for i in inside.get(k, []) if i not in explained]
                # A node that fails most of its tests inside is a bad node (scoring names it): the
                # inside tests that speak for the uplink are those between the others.
                tally: dict[str, list[bool]] = {}
                for i in within:
                    for n in tests[i][:2]:
                        tally.setdefault(n, []).append(tests[i][3])
                worse = {n for n, oks in tally.items() if oks.count(False) * 2 > len(oks)}
                within = [i for i in within if not set(tests[i][:2]) & worse]
                passed = sum(1 for i in within if tests[i][3])
                if len(ends_in) < 2 or len(ends_out) < 2 or not within or passed * 2 <= len(within):
                    continue
                rank = (len(failed) / len(left), len(failed), k)
                if best is None or rank[:2] > best[0][:2] or (rank[:2] == best[0][:2] and k < best[0][2]):
                    best = (rank, k, left, failed, within, passed, ends_out)
            if best is None:
                break
            _, k, left, failed, within, passed, ends_out = best
            alternatives = tuple(s for s in _far_side(topology, k[0], ends_out) if _mostly_failed(
                tests, [i for i in by_switch.get((s, k[1]), []) if i not in explained]))
            same = tuple(s for s in topology.up(k[0])[1:] if under.get(s, topology.below(s)) == under[k[0]])
            named.append(Uplink(k[0], k[1], len(left), len(failed), len(within), passed, alternatives, same))
            explained.update(left)
    return named, explained


def _far_nodes_explain(tests: list[tuple[str, str, str, bool]], left: list[int], mine: set[str]) -> bool:
    """The crossing tests' failures are their far ends' own: each failing test's node outside failed
    every crossing test it had, while a node outside passed every one of its own, with two or more
    nodes inside. The uplink carried that node's traffic; the failing ones are bad nodes (two dead
    nodes of three under the other leaf named this uplink, 2026-11-29)."""
    far: dict[str, list[tuple[str, bool]]] = {}
    for i in left:
        a, b, _, ok = tests[i]
        out, near = (a, b) if a not in mine else (b, a)
        far.setdefault(out, []).append((near, ok))
    witness = any(all(ok for _, ok in met) and len({n for n, _ in met}) >= 2 for met in far.values())
    failing = {n for n, met in far.items() if not all(ok for _, ok in met)}
    return witness and all(not any(ok for _, ok in far[n]) for n in failing)


def _child_below(topology: Topology, node: str, switch: str) -> str:
    """What hangs off `switch` on the node's way up: the node itself under a leaf, else a switch."""
    chain = [node, *topology.up(topology.leaf_of[node])]
    return chain[chain.index(switch) - 1]


def _far_side(topology: Topology, switch: str, ends_out: set[str]) -> list[str]:
    """The switches every one of `ends_out` reaches `switch`'s nodes through, on their own side of
    where the paths meet (from their leaf up): the uplinks each of those failing tests crossed too."""
    if not ends_out:
        return []
    mine = topology.below(switch)
    sides = [[s for s in topology.up(topology.leaf_of[n]) if not topology.below(s) & mine] for n in sorted(ends_out)]
    common = set(sides[0]).intersection(*sides[1:])
    return [s for s in sides[0] if s in common]


def _mostly_failed(tests: list[tuple[str, str, str, bool]], indices: list[int]) -> bool:
    """More than half of these tests failed (none at all: not)."""
    return sum(1 for i in indices if not tests[i][3]) * 2 > len(indices)


@dataclass
class DeadLeaf:
    """A leaf switch every test of whose nodes failed, among themselves and across it, while the rest
    of the fabric passed: the switch itself (its power, a reboot, its configuration), or every node
    under it at once, which no test can tell apart; a leaf first (2026-11-29: on a lone rail half the
    nodes under one leaf named the rail, the dead nodes not judged)."""
    switch: str
    nodes: tuple[str, ...]
    inside: int  # tests between its nodes, every one failed
    across: int  # tests from its nodes to the rest, every one failed
    rest: int  # tests elsewhere, and how many passed
    rest_passed: int


def dead_leaves(tests: list[tuple[str, str, str, bool]], topology: Topology) -> tuple[list[DeadLeaf], set[int]]:
    """(the leaves whose every test failed, the indices of the tests they explain). A leaf of two or
    more nodes qualifies with at least one test inside it and one across, every one failed on every
    rail, and more than half of the tests that touch no such leaf passed (a fabric failing everywhere
    is its rails' or its spines')."""
    size: dict[str, int] = {}
    for leaf in topology.leaf_of.values():
        size[leaf] = size.get(leaf, 0) + 1
    inside: dict[str, list[int]] = {}
    across: dict[str, list[int]] = {}
    for i, (a, b, _, _) in enumerate(tests):
        la, lb = topology.leaf_of.get(a), topology.leaf_of.get(b)
        if la is not None and la == lb:
            inside.setdefault(la, []).append(i)
            continue
        for leaf in (la, lb):
            if leaf is not None:
                across.setdefault(leaf, []).append(i)
    candidates = [leaf for leaf in sorted(size) if size[leaf] >= 2 and inside.get(leaf) and across.get(leaf)
                  and not any(tests[i][3] for i in inside[leaf] + across[leaf])]
    if not candidates:
        return [], set()
    explained = {i for leaf in candidates for i in inside[leaf] + across[leaf]}
    rest = [i for i in range(len(tests)) if i not in explained]
    passed = sum(1 for i in rest if tests[i][3])
    if passed * 2 <= len(rest):
        return [], set()
    return [DeadLeaf(leaf, tuple(sorted(n for n, lf in topology.leaf_of.items() if lf == leaf)), len(inside[leaf]),
                     len(across[leaf]), len(rest), passed) for leaf in candidates], explained
