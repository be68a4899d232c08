"""What the pair tests covered, and what they never tested: node pairs, rails, a node's end of a
rail (its port) and, where the topology is known, each switch's uplink on each rail.

A fault can only be found where a test crosses it, so the report lists what no test crossed, and a
fault planted anywhere in the simulated cluster is either found or declared untested (never a
silent pass). What an untested part does to the verdict depends on what it is:

- **A node pair** (the path only those two nodes' traffic takes: an ECMP route, a switch port's
  forwarding entry) is a *stated coverage gap*: a `fabric.coverage` check on `pairs` that is SKIP
  (not measured, code FABRIC_UNTESTED), listing the pairs and their count; the verdict of the nodes
  stands. Pairs grow as N(N-1)/2 while a round tests N/2 of them: 8 nodes in 6 rounds leave 4 of
  28 pairs untested, 4,096 nodes in 9 rounds leave 99.8% of 8.4 million. Making an untested pair
  "could not judge" would make every fabric run beyond a dozen nodes exit 2 and teach people to
  ignore exit 2; and the nodes at both ends were each judged against other peers, which is what
  their verdict says. The gap is stated, in the report and on stderr, and a small cluster can close
  it (`--rounds N-1` tests every pair).
- **A rail, a port or a switch uplink** is a finite part every schedule is built to cover, and a
  bad one slows every job that crosses it: one that no test crossed is *could not judge*, an ERROR
  check (FABRIC_UNTESTED) naming it, and the run exits 2. (A port no test reached also leaves its
  node inconclusive: `scoring.py`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodeqc.fabric.scoring import PairResult
from nodeqc.fabric.topology import Topology

LISTED = 200  # untested pairs listed by name in the report; the count is always whole
ENUMERATE = 1 << 16  # a fleet with more pairs than this has its untested pairs counted, not listed


@dataclass
class Coverage:
    nodes: list[str]
    rails: list[str]
    tested: set[frozenset[str]]  # node pairs with results (on any rail)
    untested_rails: list[str]
    untested_ports: list[tuple[str, str]]
    # (switch, rail) uplinks no test crossed; filled where the topology is known
    untested_uplinks: list[tuple[str, str]] = field(default_factory=list)
    uplinks: int = 0

    @property
    def pairs_total(self) -> int:
        n = len(self.nodes)
        return n * (n - 1) // 2

    @property
    def pairs_untested(self) -> int:
        return self.pairs_total - len(self.tested)

    def pair_tested(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.tested

    def untested_pairs(self, most: int = LISTED) -> list[tuple[str, str]]:
        """The first `most` untested pairs in node order (all, for a small fleet)."""
        out: list[tuple[str, str]] = []
        if self.pairs_total > ENUMERATE:
            most = min(most, LISTED)
        for i, a in enumerate(self.nodes):
            for b in self.nodes[i + 1:]:
                if frozenset((a, b)) not in self.tested:
                    out.append((a, b))
                    if len(out) >= most:
                        return out
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": {"total": self.pairs_total, "tested": len(self.tested), "untested": self.pairs_untested,
                          "listed": [f"{a}-{b}" for a, b in self.untested_pairs()]},
                "rails_untested": self.untested_rails,
                "ports_untested": [f"{n}:{r}" for n, r in self.untested_ports],
                "uplinks": self.uplinks,
                "uplinks_untested": [f"{s}:{r}" for s, r in self.untested_uplinks]}


def coverage(nodes: list[str], rails: list[str], results: list[PairResult], topology: Topology | None = None) -> Coverage:
    """What the results tested. `rails`: every rail the fleet has (those the results name are
    added); a rail or a port counts as tested when one measurement on it gave evidence (a figure or
    the tool's error: a link down is tested, and failed)."""
    all_rails = sorted(set(rails) | {m.rail for r in results for m in r.measurements if not m.skipped})
    tested: set[frozenset[str]] = set()
    ports: set[tuple[str, str]] = set()
    for r in results:
        if r.error is not None:
            continue
        with_evidence = {m.rail for m in r.measurements if not m.skipped}
        if with_evidence:
            tested.add(frozenset((r.a, r.b)))
        for rail in with_evidence:
            ports.add((r.a, rail))
            ports.add((r.b, rail))
    rails_hit = {rl for _, rl in ports}
    uplinks: list[tuple[str, str]] = []
    crossed: set[tuple[str, str]] = set()
    if topology is not None:
        everyone = set(nodes)
        # every switch some pair of these nodes crosses: all but one at the top over them all
        uplinks = [(s, rl) for s in topology.switches() if topology.below(s) & everyone != everyone
                   and topology.below(s) & everyone for rl in all_rails]
        for r in results:
            if r.error is None:
                for rail in {m.rail for m in r.measurements if not m.skipped}:
                    crossed.update((s, rail) for s in topology.crossed(r.a, r.b))
    return Coverage(nodes=list(nodes), rails=all_rails, tested=tested,
                    untested_rails=[rl for rl in all_rails if rl not in rails_hit],
                    untested_ports=[(n, rl) for n in nodes for rl in all_rails
                                    if rl in rails_hit and (n, rl) not in ports],
                    untested_uplinks=[u for u in uplinks if u not in crossed], uplinks=len(uplinks))
