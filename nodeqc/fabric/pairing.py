"""Rounds of random pairs, reproducible from a seed, and how many rounds a confidence needs.

Every round pairs the nodes (with an odd count, one node sits out, a different one each round), and
no two nodes meet twice while that is possible: the rounds are those of a round-robin tournament
(the circle method) over a seeded random order of the nodes, taken in a seeded random order. With
more rounds than a round-robin has (N-1, or N for odd N), a fresh tournament over a new order follows.
Each round's pairs are a random perfect matching; distinct peers make every test new evidence.

How many rounds (the math behind `rounds_needed`)
-------------------------------------------------
Scoring (`scoring.py`) names a node (or one of its rails) bad when it fails most of its tests
against at least two distinct peers that are not themselves named, worst first, and a failure
explained by a named peer is taken off the other side's tally. A hard fault makes every test of the
faulty node fail, so attribution can only go wrong at a node that met fewer than two good peers:
- a good node that met only bad peers looks as bad as they do;
- a bad node that met fewer than two good peers cannot be told apart from its peers.
If at most a fraction f of the nodes is bad and a node meets d distinct peers, each bad with
probability at most f (the peers are a random sample), the chance that fewer than two of them are
good is

    q(d) = f^d + d * f^(d-1) * (1 - f)

and by the union bound the chance that any of N nodes is misattributed is at most N * q(d). We take
the fewest rounds (at least MIN_ROUNDS) with N * q(d) <= 1 - confidence. With f = 0.1 and a
confidence of 99.9%: 16 nodes 6 rounds, 256 nodes 8, 4,096 nodes 9; with f = 0.25, 10 to 14 rounds
(imbue's host validation runs about 15). Where a node can meet fewer peers than that (a small
cluster: at most N-1), the report states the confidence the schedule does reach,
`confidence_reached`.

Misattribution is never a silent pass: a node that cannot be cleared or blamed is reported
inconclusive. A bad link (one pair) is found only if its two nodes meet; the report lists the pairs
tested.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nodeqc.fabric.topology import Topology

MIN_ROUNDS = 3  # fewer cannot separate a bad node from a bad peer (it needs two good peers)
MAX_ROUNDS = 200
DEFAULT_CONFIDENCE = 0.999
DEFAULT_BAD_FRACTION = 0.1  # planned for: up to one node in ten bad (a new or repaired batch)


@dataclass(frozen=True)
class Round:
    number: int  # from 1
    pairs: tuple[tuple[str, str], ...]
    sitting_out: str | None = None


def miss_probability(distinct_peers: int, bad_fraction: float) -> float:
    """q(d): the chance that fewer than two of a node's d distinct peers are good."""
    f, d = bad_fraction, distinct_peers
    if d < 2:
        return 1.0
    return f ** d + d * f ** (d - 1) * (1 - f)


def rounds_needed(nodes: int, confidence: float = DEFAULT_CONFIDENCE,
                  bad_fraction: float = DEFAULT_BAD_FRACTION) -> int:
    """The fewest rounds (>= MIN_ROUNDS) with nodes * q(rounds) <= 1 - confidence; more rounds than
    a node has distinct peers add no certainty, so the count stops at what one tournament gives."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    if not 0 <= bad_fraction < 1:
        raise ValueError("bad fraction must be from 0 to below 1")
    most = max(MIN_ROUNDS, _tournament_rounds(nodes))
    for r in range(MIN_ROUNDS, MAX_ROUNDS + 1):
        if r >= most or nodes * miss_probability(r, bad_fraction) <= 1 - confidence:
            return min(r, MAX_ROUNDS)
    return MAX_ROUNDS


def confidence_reached(distinct_peers: dict[str, int], bad_fraction: float) -> float:
    """1 - the union bound over the nodes of a schedule, from the peers each actually met."""
    total = sum(miss_probability(d, bad_fraction) for d in distinct_peers.values())
    return max(0.0, 1.0 - total)


def distinct_rounds(n: int) -> int:
    """How many rounds of n nodes differ at all (one round-robin tournament): with 4 nodes 3, with 2 one."""
    return _tournament_rounds(n)


def _tournament_rounds(n: int) -> int:
    return n - 1 if n % 2 == 0 else n


def schedule(nodes: list[str], rounds: int, seed: int) -> list[Round]:
    """`rounds` rounds over `nodes` (at least two, distinct), the same for the same seed."""
    if len(nodes) < 2:
        raise ValueError("pairing needs at least two nodes")
    if len(set(nodes)) != len(nodes):
        raise ValueError("a node is named twice")
    rng = random.Random(seed)
    out: list[Round] = []
    while len(out) < rounds:
        order = list(nodes)
        rng.shuffle(order)
        slots: list[str | None] = order + ([None] if len(order) % 2 else [])
        # Only the rounds needed are built: a whole tournament of 4,096 nodes is 8 million pairs.
        picked = rng.sample(range(len(slots) - 1), min(rounds - len(out), len(slots) - 1))
        for r in picked:
            pairs, out_node = _circle_round(slots, r)
            out.append(Round(len(out) + 1, pairs, out_node))
    return out


def _circle_round(slots: list[str | None], r: int) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """Round r of the circle method: slot 0 fixed, the rest rotated by r; with an odd count a bye
    (None) joins and whoever meets it sits out. Over rounds 0..m-2 every pair meets exactly once."""
    m = len(slots)
    ring = slots[1:]
    current = [slots[0]] + ring[r:] + ring[:r]
    pairs, out = [], None
    for i in range(m // 2):
        a, b = current[i], current[m - 1 - i]
        if a is None or b is None:
            out = b if a is None else a
        else:
            pairs.append((a, b))
    return tuple(pairs), out


def distinct_peers(rounds: list[Round]) -> dict[str, int]:
    met: dict[str, set[str]] = {}
    for r in rounds:
        for a, b in r.pairs:
            met.setdefault(a, set()).add(b)
            met.setdefault(b, set()).add(a)
        if r.sitting_out:
            met.setdefault(r.sitting_out, set())
    return {n: len(p) for n, p in met.items()}



def topology_schedule(nodes: list[str], topology: "Topology", rounds: int, seed: int) -> list[Round]:
    """Rounds that pair within a leaf, across leaves under one switch and across the switches above,
    so each switch's uplink is crossed by many tests and each node has peers on its own leaf (which
    clear it when its leaf's uplink is bad: `uplinks.py`). The kinds alternate: a round within the
    leaves, then one of each level above in turn, and so on; at least two rounds of each kind the
    topology has (two good peers tell a node from a peer, as for random pairs). Within a leaf the
    rounds are its round-robin tournament (no pair twice); across, a seeded random matching of nodes
    under different children, the one with the fewest repeated pairs of a few drawn. Nodes a kind
    leaves without a partner (an odd leaf, a child larger than the rest) are paired among
    themselves, so every round still tests (nearly) every node."""
    if len(nodes) < 2:
        raise ValueError("pairing needs at least two nodes")
    if len(set(nodes)) != len(nodes):
        raise ValueError("a node is named twice")
    rng = random.Random(seed)
    chains = {n: [n, *topology.up(topology.leaf_of[n]), "*"] for n in nodes}
    depth = max(len(c) for c in chains.values())
    for c in chains.values():  # an unbalanced tree: the top stands in for the missing levels
        c[-1:] = ["*"] * (depth - len(c) + 1)
    kinds = [d for d in range(1, depth) if _splits(nodes, chains, d)]
    if not kinds:
        return schedule(nodes, rounds, seed)
    # within the leaves, across level 1, within, across level 2, ...: every other round within the leaves
    cycle = [x for k in kinds[1:] for x in (kinds[0], k)] or [kinds[0]]
    total = max(rounds, 2 * len(cycle)) if len(kinds) > 1 else rounds
    met: set[frozenset[str]] = set()
    out: list[Round] = []
    seen_kind: dict[int, int] = {}
    for i in range(total):
        d = cycle[i % len(cycle)]
        k = seen_kind.get(d, 0)
        seen_kind[d] = k + 1
        best = None
        for _ in range(1 if d == kinds[0] else 8):
            pairs, left = _kind_round(nodes, chains, d, k, rng, within=(d == kinds[0]), seed=seed)
            repeats = sum(frozenset(p) in met for p in pairs)
            if best is None or repeats < best[0]:
                best = (repeats, pairs, left)
            if repeats == 0:
                break
        _, pairs, left = best  # type: ignore[misc]
        rng.shuffle(left)
        pairs += [(left[j], left[j + 1]) for j in range(0, len(left) - 1, 2)]
        met.update(frozenset(p) for p in pairs)
        out.append(Round(i + 1, tuple(pairs), left[-1] if len(left) % 2 else None))
    return out


def _splits(nodes: list[str], chains: dict[str, list[str]], d: int) -> bool:
    """Some switch at height d has nodes under two different children."""
    kids: dict[str, set[str]] = {}
    for n in nodes:
        kids.setdefault(chains[n][d], set()).add(chains[n][d - 1])
    return any(len(k) > 1 for k in kids.values())


def _kind_round(nodes: list[str], chains: dict[str, list[str]], d: int, k: int, rng: random.Random,
                within: bool, seed: int) -> tuple[list[tuple[str, str]], list[str]]:
    """One round's pairs at height d (group: the switch at d; partners under different children of
    it), and the nodes left without a partner."""
    groups: dict[str, dict[str, list[str]]] = {}
    for n in nodes:
        groups.setdefault(chains[n][d], {}).setdefault(chains[n][d - 1], []).append(n)
    pairs: list[tuple[str, str]] = []
    left: list[str] = []
    for g in sorted(groups):
        kids = groups[g]
        if within:  # d is the leaf level: children are nodes; the leaf's own tournament, round k
            members = sorted(n for ns in kids.values() for n in ns)
            random.Random(f"{seed}:{g}").shuffle(members)  # the same order each round: one tournament
            if len(members) < 2:
                left += members
                continue
            slots: list[str | None] = members + ([None] if len(members) % 2 else [])
            rp, out = _circle_round(slots, k % (len(slots) - 1))
            pairs += list(rp)
            left += [out] if out else []
            continue
        # A random matching across children: each node, those of the largest child first (the
        # one that could be left over), takes the next node of another child in a random order,
        # so a leaf's nodes meet nodes of many leaves, not one leaf's block.
        members = sorted(n for ns in kids.values() for n in ns)
        rng.shuffle(members)
        size = {c: len(ns) for c, ns in kids.items()}
        order = sorted(members, key=lambda n: -size[chains[n][d - 1]])
        taken: set[str] = set()
        for a in order:
            if a in taken:
                continue
            mine = chains[a][d - 1]
            b = next((m for m in members if m not in taken and m != a and chains[m][d - 1] != mine), None)
            if b is None:
                left.append(a)
                taken.add(a)
                continue
            taken |= {a, b}
            pairs.append((a, b))
            members = [m for m in members if m not in taken] if len(taken) % 64 == 0 else members
    return pairs, left
