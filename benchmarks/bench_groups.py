"""Group tests (nodeqc/fabric/groups.py, `nodeqc fabric --group-size auto`) against random pairs running
the same collectives (NCCL's all-reduce and all-to-all, hgx-h100's floors), on simulated fleets in
one run, on the same planted faults: about 1% of nodes whose collectives run slow (a GPU, NVLink or
PCIe path; `nodeN:nccl=F`, F 0.3 or 0.5), 0.5% with wrong results (`nodeN:nccl:wrong`), 0.5% down
and 0.5% stragglers (slow only at the step tail), at least one of each.

A pair test here is the simulated two-node collective (SimulatedCluster.run_group of two nodes, the
model the group tests use), scored as `nodeqc fabric --tests nccl,alltoall` scores pairs
(scoring.score, tails.judge), over the rounds `pairing.rounds_needed` asks. Precision and recall:
over the planted nodes (a node down, slow, wrong or a straggler is one bad node each), the lowest
over the seeds; "good blamed" and "not judged": good nodes named bad, nodes not judged (averages).
Rounds and tests: averages. Seconds: the simulation and the judging, not the traffic (a real
round takes its collectives' time, whatever its size).

    python benchmarks/bench_groups.py                      # 256, 1024, 4096 nodes, 3 seeds
    python benchmarks/bench_groups.py --sizes 256 --seeds 1
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nodeqc.fabric import pairing  # noqa: E402
from nodeqc.fabric.groups import auto_size, isolate  # noqa: E402
from nodeqc.fabric.scoring import Floors, PairResult, score  # noqa: E402
from nodeqc.fabric.simulated import SimulatedCluster  # noqa: E402

RAILS = 8
FLOORS = Floors(nccl_busbw_gbps=365, alltoall_busbw_gbps=59)  # hgx-h100's (profiles/hgx-h100.toml)
TESTS = ["nccl", "alltoall"]


def plant(n: int, rng: random.Random) -> tuple[list[str], set[str]]:
    order = list(range(n))
    rng.shuffle(order)
    k = [max(1, n // 100), max(1, n // 200), max(1, n // 200), max(1, n // 200)]
    faults, bad, i = [], set(), 0
    for kind, count in zip(("slow", "wrong", "down", "straggler"), k):
        for x in order[i:i + count]:
            faults.append({"slow": f"node{x}:nccl={rng.choice([0.3, 0.5])}", "wrong": f"node{x}:nccl:wrong",
                           "down": f"node{x}:down", "straggler": f"node{x}:straggler"}[kind])
            bad.add(f"node{x}")
        i += count
    return faults, bad


def pr(found: set[str], want: set[str]) -> tuple[float, float]:
    tp = len(found & want)
    return (tp / len(found) if found else 1.0), (tp / len(want) if want else 1.0)


def compare(n: int, seed: int) -> dict[str, tuple]:
    faults, bad = plant(n, random.Random(seed * 7919 + n))
    c = SimulatedCluster.build(n, RAILS, faults, seed=seed)
    out = {}
    t = time.perf_counter()
    g = isolate(c.nodes, auto_size(n), lambda number, groups: [c.run_group(number, x, FLOORS, TESTS) for x in groups],
                seed)
    named = set(g.bad_nodes)
    out["groups"] = (len(g.rounds), len(g.results), *pr(named, bad), len(named - bad), len(g.not_judged),
                     time.perf_counter() - t)
    t = time.perf_counter()
    rounds = pairing.rounds_needed(n)
    results = []
    for rd in pairing.schedule(c.nodes, rounds, seed):
        for a, b in rd.pairs:
            r = c.run_group(rd.number, (a, b), FLOORS, TESTS)
            results.append(PairResult(rd.number, a, b, r.measurements, latencies=r.latencies))
    s = score(c.nodes, results)
    named = set(s.bad_nodes) | {x for x, _ in s.bad_ports} | set(s.tails.stragglers if s.tails else {})
    out["random pairs"] = (rounds, len(results), *pr(named, bad), len(named - bad), len(s.inconclusive),
                           time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    print("| nodes | method | group size | rounds | tests | precision | recall | good blamed | not judged | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        rows = [compare(n, seed) for seed in range(1, args.seeds + 1)]
        for how in ("groups", "random pairs"):
            v = [r[how] for r in rows]
            avg = [sum(x[i] for x in v) / len(v) for i in range(7)]
            size = auto_size(n) if how == "groups" else 2
            print(f"| {n} | {how} | {size} | {avg[0]:.1f} | {avg[1]:.0f} | {min(x[2] for x in v):.3f} | "
                  f"{min(x[3] for x in v):.3f} | {avg[4]:.1f} | {avg[5]:.1f} | {avg[6]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
