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

