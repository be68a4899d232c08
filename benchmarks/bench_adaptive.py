"""Adaptive isolation and topology-aware pairing against random pairs, on simulated fleets (8 NDR
rails a node), in one run.

Table 1, adaptive (nodeqc/fabric/adaptive.py) against random pairs (pairing.schedule, the rounds
`rounds_needed` asks): the same planted faults as benchmarks/bench_fabric.py (about 2% bad nodes,
2% nodes with one bad rail, a fabric-wide bad rail from 64 nodes, 1% bad links on tested pairs and as
many between random nodes), and 0.5% stragglers (at least one: slow only at the latency tail,
nodeqc.fabric.tails); the tests (pair tests) and rounds each needed, and the precision and
recall of what each named. Precision and recall count every planted node, node rail, fabric rail and
straggler, and the bad links whose pair the method tested; the links it never tested are counted beside
(declared untested in its report's coverage, never a silent pass).

Table 2, adaptive isolation over the topology and topology-aware pairs (pairing.topology_schedule
with uplinks.py) against random pairs on a
fleet of leaves of 32 nodes under spines of 4 leaves: two bad leaf uplinks, one bad spine uplink and
1% bad nodes; precision and recall of the uplinks and the nodes named, and how many good nodes each
blamed. An uplink named "or" another (two subtrees only fail the same tests) counts as found when
either is the planted one.

    python benchmarks/bench_adaptive.py                      # 256, 1024, 4096 nodes, 3 seeds
    python benchmarks/bench_adaptive.py --sizes 256 --seeds 1
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fabric import FLOORS, RAILS, arguments, header, least, mean, plant, pr, row  # noqa: E402

from nodeqc.fabric import pairing  # noqa: E402
from nodeqc.fabric.adaptive import isolate  # noqa: E402
from nodeqc.fabric.scoring import score  # noqa: E402
from nodeqc.fabric.simulated import SimulatedCluster  # noqa: E402


def named(s, planted, met) -> tuple[float, float, int]:
    """(precision, recall) over every kind of fault, links only where tested; links never tested."""
    found = ({("node", n) for n in s.bad_nodes} | {("port", p) for p in s.bad_ports}
             | {("rail", r) for r in s.bad_rails} | {("link", (a, b)) for a, b, _ in s.bad_links}
             | {("straggler", n) for n in (s.tails.stragglers if s.tails else {})})
    links = {lk for lk in planted["links"] if frozenset(lk) in met}
    want = ({("node", n) for n in planted["nodes"]} | {("port", p) for p in planted["ports"]}
            | {("rail", r) for r in planted["rails"]} | {("link", lk) for lk in links}
            | {("straggler", n) for n in planted["stragglers"]})
    p, r = pr(found, want)
    return p, r, len(planted["links"]) - len(links)


def compare(n: int, seed: int) -> dict:
    rng = random.Random(seed * 7919 + n)
    nodes = [f"node{i}" for i in range(n)]
    rounds = pairing.rounds_needed(n)
    sched = pairing.schedule(nodes, rounds, seed)
    first = pairing.schedule(nodes, 1, seed)[0]  # adaptive's first round (isolate takes the same)
    faults = plant(n, rng, [p for r in sched for p in r.pairs] + list(first.pairs))
    touched = {f.split(":")[0] for f in faults} | {x for f in faults if f.startswith("link:")
                                                   for x in f.split(":")[1].split("=")[0].split("-")}
    clean = sorted(set(nodes) - touched)
    faults += [f"{x}:straggler" for x in rng.sample(clean, max(1, n // 200))]
    c = SimulatedCluster.build(n, RAILS, faults, seed=seed)
    out = {}
    t = time.perf_counter()
    played, results = isolate(nodes, lambda rd: [c.run_pair(rd.number, a, b, FLOORS) for a, b in rd.pairs], seed)
    s = score(nodes, results)
    out["adaptive"] = (len(played), len(results), *named(s, c.planted(), {frozenset((r.a, r.b)) for r in results}),
                       len(s.inconclusive), time.perf_counter() - t)
    t = time.perf_counter()
    results = [c.run_pair(rd.number, a, b, FLOORS) for rd in sched for a, b in rd.pairs]
    s = score(nodes, results)
    out["random"] = (rounds, len(results), *named(s, c.planted(), {frozenset((r.a, r.b)) for r in results}),
                     len(s.inconclusive), time.perf_counter() - t)
    return out


def uplinks(n: int, seed: int) -> dict:
    rng = random.Random(seed * 104729 + n)
    leaves = max(2, n // 32)
    spines = max(1, leaves // 4)
    c = SimulatedCluster.build(n, RAILS, [], seed=seed, leaves=leaves, spines=spines)
    bad_leaves = rng.sample(range(leaves), min(2, leaves - 1))
    spine = rng.randrange(spines) if spines > 1 else None
    faults = [f"leaf:L{j}:slow=0.5" for j in bad_leaves] + ([f"spine:S{spine}:down"] if spine is not None else [])
    good = [i for i in range(n) if c.topology.leaf_of[f"node{i}"] not in {f"L{j}" for j in bad_leaves}]
    faults += [f"node{i}:slow=0.4" for i in rng.sample(good, max(1, n // 100))]
    c = SimulatedCluster.build(n, RAILS, faults, seed=seed, leaves=leaves, spines=spines)
    want_up = set(c.faults.uplink)
    want_nodes = c.planted()["nodes"]
    rounds = pairing.rounds_needed(n)
    out = {}
    for how in ("adaptive", "topology", "random"):
        if how == "adaptive":  # over the topology (adaptive.py's steps 1', 3', 5)
            sched, results = isolate(c.nodes, lambda rd: [c.run_pair(rd.number, a, b, FLOORS) for a, b in rd.pairs],
                                     seed, topology=c.topology)
        else:
            sched = (pairing.topology_schedule(c.nodes, c.topology, rounds, seed) if how == "topology"
                     else pairing.schedule(c.nodes, rounds, seed))
            results = [c.run_pair(rd.number, a, b, FLOORS) for rd in sched for a, b in rd.pairs]
        s = score(c.nodes, results, None if how == "random" else c.topology)
        # the planted uplink counts as named when it is the one named or one of its "or"s (uplinks.Uplink)
        ups = {next((x for x in (u.switch, *u.alternatives, *u.same) if x in want_up), u.switch) for u in s.bad_uplinks}
        blamed = len(set(s.bad_nodes) - want_nodes) + len({n for n, _ in s.bad_ports} - want_nodes)
        out[how] = (len(sched), len(results), *pr(ups, want_up), *pr(set(s.bad_nodes), want_nodes), blamed,
                    len(s.inconclusive))
    return out


def main() -> int:
    args = arguments(__doc__, [256, 1024, 4096])
    header("nodes", "method", "rounds", "pair tests", "precision", "recall", "links never tested", "inconclusive", "s")
    for n in args.sizes:
        rows = [compare(n, seed) for seed in range(1, args.seeds + 1)]
        for how in ("adaptive", "random"):
            v = [r[how] for r in rows]
            row(n, how, f"{mean(v, 0):.1f}", f"{mean(v, 1):.0f}", f"{least(v, 2):.3f}", f"{least(v, 3):.3f}",
                f"{mean(v, 4):.1f}", f"{mean(v, 5):.1f}", f"{mean(v, 6):.1f}")
    print()
    header("nodes", "pairs", "rounds", "pair tests", "uplinks P/R", "nodes P/R", "good nodes blamed", "inconclusive")
    for n in args.sizes:
        rows = [uplinks(n, seed) for seed in range(1, args.seeds + 1)]
        for how in ("adaptive", "topology", "random"):
            v = [r[how] for r in rows]
            row(n, how, f"{mean(v, 0):.1f}", f"{mean(v, 1):.0f}", f"{least(v, 2):.2f}/{least(v, 3):.2f}",
                f"{least(v, 4):.2f}/{least(v, 5):.2f}", f"{mean(v, 6):.1f}", f"{mean(v, 7):.1f}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
