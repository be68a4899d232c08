"""nodeqc fabric at scale: simulated clusters of 16 to 4,096 nodes (8 NDR rails each) with planted
bad nodes, bad rails of one node, a bad rail of the whole fabric and bad links; how many of each
the scoring names correctly (precision and recall), the rounds it needs, and the wall time of the
orchestration itself (pairing, scoring, the signed report), which is what grows with the cluster:
the traffic of a round runs all its pairs at once, so on a real fabric the wall time is rounds x
one pair test.

    python benchmarks/bench_fabric.py              # 16 .. 4096 nodes, 3 seeds each
    python benchmarks/bench_fabric.py --sizes 16 256 --seeds 1

Bad links are only found when their two nodes meet: half the planted links join nodes the schedule
pairs (recall there measures the scoring), half join random nodes (recall there is the schedule's
coverage, about rounds / (nodes - 1)).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nodeqc.fabric import pairing  # noqa: E402
from nodeqc.fabric.report import build_predicate, write_report  # noqa: E402
from nodeqc.fabric.scoring import Floors, score  # noqa: E402
from nodeqc.fabric.simulated import SimulatedCluster  # noqa: E402
from nodeqc.report.keys import create_key  # noqa: E402

RAILS = 8
FLOORS = Floors(rdma_fraction=0.9375, tcp_fraction=0.5)  # hgx-h100: Azure's 375 of 400 Gb/s


def plant(n: int, rng: random.Random, met: list[tuple[str, str]]) -> list[str]:
    """About 2% bad nodes, 2% nodes with one bad rail, 1% bad links between good nodes whose pair the
    schedule tests and as many between random good nodes (at least one of each), and a fabric-wide
    bad rail in clusters of 64 nodes and more."""
    nodes = list(range(n))
    rng.shuffle(nodes)
    k_nodes, k_ports, k_links = max(1, n // 50), max(1, n // 50), max(1, n // 100)
    faults = []
    for i in nodes[:k_nodes]:
        faults.append(f"node{i}:slow={rng.choice([0.3, 0.5, 0.8])}" if rng.random() < 0.8 else f"node{i}:down")
    for i in nodes[k_nodes:k_nodes + k_ports]:
        faults.append(f"node{i}:rail{rng.randrange(RAILS)}={rng.choice([0.5, 0.7])}")
    good = {f"node{i}" for i in nodes[k_nodes + k_ports:]}
    tested = [p for p in met if set(p) <= good]
    used: set[str] = set()
    for a, b in rng.sample(tested, min(k_links, len(tested))):  # at most one bad link per node
        if a not in used and b not in used:
            used |= {a, b}
            faults.append(f"link:{a}-{b}={rng.choice([0.1, 0.5])}")
    for _ in range(k_links):
        a, b = rng.sample(sorted(good - used), 2)
        used |= {a, b}
        faults.append(f"link:{a}-{b}={rng.choice([0.1, 0.5])}")
    if n >= 64:
        faults.append(f"rail{rng.randrange(RAILS)}=0.6")
    return faults


def pr(found: set, planted: set) -> tuple[float, float]:
    tp = len(found & planted)
    precision = tp / len(found) if found else 1.0
    recall = tp / len(planted) if planted else 1.0
    return precision, recall


def arguments(doc: str, sizes: list[int]) -> argparse.Namespace:
    """--sizes and --seeds, as every fabric benchmark takes them."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=sizes)
    ap.add_argument("--seeds", type=int, default=3)
    return ap.parse_args()


def header(*columns: str) -> None:
    """A Markdown table's header and rule (RESULTS.md takes the tables as printed)."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def row(*cells: object) -> None:
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def mean(values: list, i: int) -> float:
    """The mean of column i over the seeds' results."""
    return sum(v[i] for v in values) / len(values)


def least(values: list, i: int) -> float:
    """The smallest of column i over the seeds' results: a precision or recall is reported at its worst."""
    return min(v[i] for v in values)


def run(n: int, seed: int, key_dir: Path, signer) -> dict:
    rng = random.Random(seed * 7919 + n)
    t0 = time.perf_counter()
    rounds = pairing.rounds_needed(n)
    sched = pairing.schedule([f"node{i}" for i in range(n)], rounds, seed)
    t_pair = time.perf_counter() - t0
    faults = plant(n, rng, [p for r in sched for p in r.pairs])
    cluster = SimulatedCluster.build(n, RAILS, faults, seed=seed)
    results = [cluster.run_pair(r.number, a, b, FLOORS) for r in sched for a, b in r.pairs]  # the "traffic"
    t1 = time.perf_counter()
    s = score(cluster.nodes, results)
    t_score = time.perf_counter() - t1
    t2 = time.perf_counter()
    pred = build_predicate(name=f"bench{n}", launcher="simulated", scores=s, rounds=sched, results=results,
                           identities={}, settings={"seed": seed}, profile={"name": "hgx-h100"}, simulated=True,
                           simulation={"nodes": n, "rails": RAILS, "faults": faults}, status="complete",
                           started_at="", finished_at="", duration_s=0.0, operator=None, ticket=None,
                           signer=signer, command=["bench"])
    path = key_dir / f"fabric-{n}-{seed}.report.json"
    write_report(path, pred, signer)
    t_report = time.perf_counter() - t2
    planted = cluster.planted()
    met = {frozenset((a, b)) for r in sched for a, b in r.pairs}
    exercised = {link for link in planted["links"] if frozenset(link) in met}
    links = {(a, b) for a, b, _ in s.bad_links}
    return {
        "n": n, "seed": seed, "rounds": rounds, "pairs": len(results),
        "nodes": pr(set(s.bad_nodes), planted["nodes"]), "ports": pr(set(s.bad_ports), planted["ports"]),
        "rails": pr(set(s.bad_rails), planted["rails"]), "links": pr(links, planted["links"]),
        "links_exercised": pr(links, exercised), "planted": {k: len(v) for k, v in planted.items()},
        "exercised": len(exercised), "inconclusive": len(s.inconclusive),
        "t_pair": t_pair, "t_score": t_score, "t_report": t_report, "report_mb": path.stat().st_size / 1e6,
    }


def main() -> int:
    args = arguments(__doc__, [16, 64, 256, 1024, 4096])
    header("nodes", "rounds", "pairs", "planted nodes/node rails/rails/links", "nodes P/R", "node rails P/R",
           "fabric rails P/R", "links P/R, all (tested)", "inconclusive", "pairing s", "scoring s", "report s (MB)")
    with tempfile.TemporaryDirectory() as tmp:
        signer = create_key(Path(tmp) / "bench-key.pem")
        for n in args.sizes:
            rows = [run(n, seed, Path(tmp), signer) for seed in range(1, args.seeds + 1)]

            def avg(key: str, i: int | None = None) -> float:
                vals = [r[key][i] if i is not None else r[key] for r in rows]
                return sum(vals) / len(vals)

            p = rows[0]["planted"]
            ex = sum(r["exercised"] for r in rows) / len(rows)
            print(f"| {n} | {rows[0]['rounds']} | {rows[0]['pairs']} | {p['nodes']}/{p['ports']}/{p['rails']}/{p['links']} "
                  f"({ex:.0f} tested) | {avg('nodes', 0):.2f}/{avg('nodes', 1):.2f} | {avg('ports', 0):.2f}/{avg('ports', 1):.2f} "
                  f"| {avg('rails', 0):.2f}/{avg('rails', 1):.2f} | {avg('links', 0):.2f}/{avg('links', 1):.2f} "
                  f"({avg('links_exercised', 1):.2f}) | {avg('inconclusive'):.1f} | {avg('t_pair'):.3f} | {avg('t_score'):.3f} "
                  f"| {avg('t_report'):.2f} ({avg('report_mb'):.1f}) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
