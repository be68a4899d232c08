"""Adaptive isolation: test everyone once, then only the suspects, each against known-good partners,
after the manner of NVIDIA's cluster readiness engine (ADR-055: test groups, split the failing
ones, confirm each suspect against a known-good partner). Here a group is a pair, the smallest
group a pair test has.

1. One round pairs every node (a seeded random matching, as `pairing.schedule`'s first round).
2. A rail that fails in most of that round's pairs which passed on another rail is the fabric's
   (scoring names it); it is left out of what makes a node a suspect. So is the tail where most of
   the round's pairs are high (the whole fabric's tail, as tails.judge says: no node's).
3. A node is a suspect when a test of it failed (or could not run) or its latency tail was high (a
   straggler moves its bytes at the floor's rate and stalls now and then: nodeqc.fabric.tails, which
   names one only from two peers or more); a node whose every test passed is known good. Each further round pairs each suspect with a known-good partner it has not met, every
   node in at most one pair a round, until the suspect has two tests with known-good partners that
   agree (both failed: it is bad; both passed: the failure was its peer's or their link's), or four.
4. All the results go to the same scoring as random pairs (`scoring.score`): a bad node then failed
   with three distinct peers, two of them good; a good node behind a bad peer passed with two; two
   good nodes that failed only together are their link.

With a fraction f of bad nodes this is N/2 tests in the first round and about 2 x 2fN after, in
three rounds, against `rounds_needed(N)` x N/2 for random pairs (9 x N/2 at 4,096 nodes):
`benchmarks/bench_adaptive.py` measures both at equal precision and recall. What it gives up: a
node that passed its one first-round test is cleared on that one peer, which holds for the hard
faults this scoring is built for (a slow or dead port fails every test, scoring.py) but is less
evidence against an intermittent one; and it tests N/2 node pairs, not 9N/2, so fewer pair-only
paths (bad links) are crossed; the coverage report says which (coverage.py).

With a topology (leaves under switches, topology.py) the same steps keep a switch's uplink out of a
node's judgement and test the uplinks apart:

1'. The first round pairs within the leaves (topology_schedule's first round), where no test crosses
   an uplink: a node fails there for its own fault, never for its leaf's uplink.
3'. A suspect's known-good partner is taken from its own leaf where one is free, else from as near
   as the topology has (the fewest uplinks between them).
5. The crossing rounds of topology_schedule (two across each level above the leaves) test the
   uplinks, between nodes known good only: their pairs join the confirmation rounds wherever both
   nodes are free, so the uplinks cost rounds only where they outlast the suspects. The scoring then
   names a bad uplink from those tests and the leaves' own (uplinks.py).
"""

from __future__ import annotations

import random
from typing import Callable

from nodeqc.fabric.pairing import Round, schedule, topology_schedule
from nodeqc.fabric.scoring import PairResult
from nodeqc.fabric.topology import Topology

CONFIRM = 2  # tests against known-good partners that agree settle a suspect
MOST = 4  # ... and no suspect gets more than this many
MAX_ROUNDS = 12


def isolate(nodes: list[str], run_round: Callable[[Round], list[PairResult]], seed: int,
            max_rounds: int = MAX_ROUNDS, topology: Topology | None = None) -> tuple[list[Round], list[PairResult]]:
    """Run the rounds through `run_round` (a launcher's); (the rounds, every result)."""
    rng = random.Random(seed)
    crossing: list[tuple[str, str]] = []  # the uplinks' tests still to run (with a topology)
    if topology is None:
        first = schedule(nodes, 1, seed)[0]
    else:
        # Within the leaves, then (where the topology has levels above them) a crossing round of
        # each level in turn, twice over: the first is this round, the crossing ones the uplinks'.
        planned = topology_schedule(nodes, topology, 1, seed)
        first = planned[0]
        crossing = [p for rnd in planned[1::2] for p in rnd.pairs]
    rounds, results = [first], list(run_round(first))
    ignored = _fabric_rails(results) | _fabric_tail(results)
    failed: set[str] = set()
    met: dict[str, set[str]] = {n: set() for n in nodes}
    for r in results:
        met[r.a].add(r.b)
        met[r.b].add(r.a)
        if not _passed(r, ignored):
            failed |= {r.a, r.b}
    tested = {n for r in results for n in (r.a, r.b)}
    good = sorted(n for n in tested if n not in failed)
    checks: dict[str, list[bool]] = {n: [] for n in sorted(failed | (set(nodes) - tested))}
    known_good = set(good)
    while len(rounds) < max_rounds:
        open_ = sorted(n for n, oks in checks.items() if _unsettled(oks))
        if (not open_ or not good) and not crossing:
            break
        rng.shuffle(open_)
        free = list(good)
        rng.shuffle(free)
        if topology is not None:
            free_by_leaf: dict[str, list[str]] = {}
            for g in free:
                free_by_leaf.setdefault(topology.leaf_of.get(g, ""), []).append(g)
        used: set[str] = set()
        pairs = []
        for s in open_ if good else []:
            options = free if topology is None else _nearest_first(s, free, free_by_leaf, topology)
            partner = next((g for g in options if g not in used and g not in met[s]), None)
            if partner is None:
                continue
            used.update((s, partner))
            pairs.append((s, partner))
        # The uplinks' tests between nodes known good, wherever both are free this round.
        waiting = []
        for a, b in crossing:
            if b in met[a] or a not in known_good or b not in known_good:
                continue  # tested already (a pair round 1 had left over), or not between known-good nodes
            if a in used or b in used:
                waiting.append((a, b))
                continue
            used.update((a, b))
            pairs.append((a, b))
        crossing = waiting
        if not pairs:
            break
        rnd = Round(len(rounds) + 1, tuple(pairs), None)
        done = run_round(rnd)
        rounds.append(rnd)
        results += done
        for r in done:
            met[r.a].add(r.b)
            met[r.b].add(r.a)
            if r.a not in checks and r.b not in checks:
                continue  # an uplink's test: the scoring judges it
            s = r.a if r.a in checks else r.b
            if r.error is None:
                checks[s].append(_passed(r, ignored))
    return rounds, results


def _nearest_first(node: str, free: list[str], by_leaf: dict[str, list[str]], topology: Topology) -> list[str]:
    """Free known-good partners for `node`: its own leaf's first, then the rest by how many switches
    up their paths meet (the fewest uplinks crossed)."""
    mine = topology.leaf_of.get(node, "")
    chain = topology.up(mine) if mine else []  # its leaf and the switches above it, lowest first

    def distance(g: str) -> int:
        theirs = topology.leaf_of.get(g, "")
        up = set(topology.up(theirs)) if theirs else set()
        return next((k for k, x in enumerate(chain) if x in up), len(chain))

    return by_leaf.get(mine, []) + sorted((g for g in free if topology.leaf_of.get(g, "") != mine), key=distance)


def _unsettled(oks: list[bool]) -> bool:
    if len(oks) >= MOST:
        return False
    return len(oks) < CONFIRM or len(set(oks[-CONFIRM:])) > 1


TAIL = "tail"  # in `ignored`: the fabric's tail is high, so no pair's high tail makes a suspect


def _passed(r: PairResult, ignored: set[str]) -> bool:
    if r.error is not None:
        return False
    if TAIL not in ignored and _tail_high(r, ignored):
        return False
    return all(ok for rail, ok in r.rails().items() if rail not in ignored)


def _tail_high(r: PairResult, ignored: set[str]) -> bool:
    return any(lat.high for lat in r.latencies if lat.rail not in ignored)


def _fabric_tail(results: list[PairResult]) -> set[str]:
    """{TAIL} where most of the pairs with a measured tail are high, among three nodes or more (as
    tails.judge's fabric-wide tail): then every pair would make suspects of its nodes for nobody's fault."""
    judged = [r for r in results if r.error is None and any(lat.measured for lat in r.latencies)]
    high = [r for r in judged if _tail_high(r, set())]
    among = {n for r in high for n in (r.a, r.b)}
    return {TAIL} if len(among) >= 3 and len(high) * 2 > len(judged) else set()


def _fabric_rails(results: list[PairResult]) -> set[str]:
    """Rails that fail in most pairs that passed on another rail (as scoring's step 1)."""
    votes: dict[str, list[bool]] = {}
    for r in results:
        if r.error is not None:
            continue
        rails = r.rails()
        for rail, ok in rails.items():
            if any(v for other, v in rails.items() if other != rail):
                votes.setdefault(rail, []).append(ok)
    return {rail for rail, oks in votes.items() if len(oks) >= 3 and oks.count(False) * 2 > len(oks)}
