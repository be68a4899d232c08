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

Table 2: racks of GB200 trays (`racks`): group tests within each rack's multi-node NVLink domain,
a rack with its NVLink down named as the rack, a tray with its own down (or slow collectives) as
the tray.

    python benchmarks/bench_groups.py                      # 256, 1024, 4096 nodes, 3 seeds
    python benchmarks/bench_groups.py --sizes 256 --seeds 1
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fabric import arguments, header, least, mean, row  # noqa: E402

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


def racks(n: int, seed: int) -> tuple:
    """GB200 NVL72 racks (18 trays a multi-node NVLink domain, 4 GPUs a tray, gb200-nvl72-tray's
    floors): one rack in 50 (at least one) with its NVLink down, 1% of trays with their own NVLink
    down, 0.5% with slow collectives; group isolation with groups of 6 within each rack. Returns
    (rounds, tests, domains P, domains R, trays P, trays R, not judged, seconds)."""
    rng = random.Random(seed * 104729 + n)
    c = SimulatedCluster.build(n, 4, [], seed=seed, nvlink=18)
    domains = sorted(set(c.domains.values()))
    bad_domains = set(rng.sample(domains, max(1, len(domains) // 50)))
    healthy = [x for x in c.nodes if c.domains[x] not in bad_domains]
    trays = rng.sample(healthy, max(2, n // 100 + n // 200))
    split = max(1, n // 100)
    faults = [f"nvlink:{d}:down" for d in sorted(bad_domains)] + [f"{x}:nvlink:down" for x in trays[:split]] + [
        f"{x}:nccl=0.5" for x in trays[split:]]
    c = SimulatedCluster.build(n, 4, faults, seed=seed, nvlink=18)
    c.gpus = 4
    t = time.perf_counter()
    g = isolate(c.nodes, 6, lambda number, groups: [c.run_group(number, x, RACK_FLOORS, ["nccl"]) for x in groups],
                seed, domains=c.domains)
    named = {g.domains[f.nodes[0]] for f in g.findings if f.kind == "nvlink"}
    return (len(g.rounds), len(g.results), *pr(named, bad_domains), *pr(set(g.bad_nodes), set(trays)),
            len(g.not_judged), time.perf_counter() - t)


RACK_FLOORS = Floors(nccl_busbw_gbps=143.6, nvlink_busbw_gbps=662)  # gb200-nvl72-tray's


def main() -> int:
    args = arguments(__doc__, [256, 1024, 4096])
    header("nodes", "method", "group size", "rounds", "tests", "precision", "recall", "good blamed", "not judged", "s")
    for n in args.sizes:
        rows = [compare(n, seed) for seed in range(1, args.seeds + 1)]
        for how in ("groups", "random pairs"):
            v = [r[how] for r in rows]
            row(n, how, auto_size(n) if how == "groups" else 2, f"{mean(v, 0):.1f}", f"{mean(v, 1):.0f}",
                f"{least(v, 2):.3f}", f"{least(v, 3):.3f}", f"{mean(v, 4):.1f}", f"{mean(v, 5):.1f}", f"{mean(v, 6):.1f}")
    print()
    header("trays", "racks", "rounds", "group tests", "racks P/R", "trays P/R", "not judged", "s")
    for n in args.sizes:
        n = n // 18 * 18  # whole racks
        v = [racks(n, seed) for seed in range(1, args.seeds + 1)]
        row(n, n // 18, f"{mean(v, 0):.1f}", f"{mean(v, 1):.0f}", f"{least(v, 2):.2f}/{least(v, 3):.2f}",
            f"{least(v, 4):.2f}/{least(v, 5):.2f}", f"{mean(v, 6):.1f}", f"{mean(v, 7):.1f}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
