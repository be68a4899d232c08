"""The latency tail of the pair tests, and the straggler it names: a node slow only at the tail.

Bandwidth averages hide a node that stalls now and then (interrupts on the NIC's cores, a CPU
frequency drop, PCIe power states, a flaky retimer): its pairs move their bytes at the floor's
rate, yet every collective it joins waits for its slowest step. So each pair test also carries a
latency figure where one is measured:

- RDMA (`--tests ...,lat`): ib_write_lat per rail (2-byte writes, 10,000 of them, ping-pong; the
  one-way latency in usec): its median (perftest's t_typical) and its 99th percentile.
- NCCL: each two-node collective's step times (nccl_group: all-reduce, all-gather, all-to-all): the
  median and the 99th percentile step.

Each figure carries its `floor`, the 99th percentile above which the tail is high (set where the
figure is made, as bandwidth floors are: launchers.merge, simulated.run_pair). Judging, as scoring
does for bandwidth (nodeqc.fabric.scoring):

1. A node is a straggler when most of its pairs' tails are high, against at least two distinct
   peers whose tails were normal with others (one peer alone cannot tell the node from the peer);
   naming it takes its pairs off its peers' tallies. Where the medians of its high pairs are
   normal too, it is slow only at the tail (FABRIC_STRAGGLER); where they are high as well, its
   latency is slow throughout (FABRIC_NODE_LATENCY).
2. The high tails left: where most of the remaining pairs are high, among at least three nodes, the
   whole fabric's tail is high (FABRIC_TAIL on the fabric), and no node is blamed for it; else each
   is a finding of its pair (FABRIC_TAIL on A-B): never a silent pass.
3. A figure that could not be measured on a pair whose bandwidth passed on that rail could not be
   judged (ERROR); on a pair whose bandwidth failed there, the failure already says why. A tool
   missing is a skip, saying what to install.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any


# ib_write_lat's 99th percentile floor: nodeqc's choice, no published figure. A healthy InfiniBand
# or RoCE fabric gives 2-byte RDMA writes about 1-3 usec one way (perftest's t_typical through a
# switch or two; about 1 usec back to back), with the 99th percentile within a usec or two of it.
# 20 usec is ten times a healthy median: a pair above it spends one write in a hundred waiting as
# long as ten; far above switch buffering on a lossless fabric, so it is the node or the path.
LAT_P99_US = 20.0
# A median above this is no longer "normal at the median" (nodeqc's choice, as above: several
# times a healthy median, above what a few more switch hops add).
LAT_P50_US = 10.0
# NCCL step tail: Google's cluster-health-scanner flags a pipeline-parallel SendRecv of 16 or 32 MB
# that takes 8 ms or more as a straggler event (src/straggler_healthcheck/entrypoint.sh,
# STRAGGLER_THRESHOLD_MS default 8; deploy/helm/health_checks/straggler_healthcheck/values.yaml:
# message_sizes_mb 16,32). Such a transfer takes well under 1 ms at these NICs' rates, so 8 ms is a
# stall of about 8 ms; our step all-reduces 1 GiB (tens of ms by itself), so the same stall is
# judged as the 99th percentile's excess over the pair's median step.
NCCL_STEP_TAIL_MS = 8.0
MIN_SAMPLES = 100  # fewer steps or writes give no 99th percentile worth the name


@dataclass(frozen=True)
class Latency:
    """One latency figure of a pair test: a rail's ib_write_lat, or an NCCL collective's steps."""

    rail: str  # an RDMA rail, or a collective's: "nccl" (the all-reduce), "allgather", "alltoall"
    p50: float | None
    p99: float | None
    unit: str  # "us" (ib_write_lat) or "ms" (NCCL steps)
    floor: float | None  # the p99 above which the tail is high
    median_floor: float | None = None  # the p50 above which the median is not normal (RDMA)
    error: str | None = None
    skipped: str | None = None
    p999: float | None = None

    @property
    def measured(self) -> bool:
        return self.error is None and self.skipped is None and self.p99 is not None

    @property
    def high(self) -> bool:
        return self.measured and self.floor is not None and self.p99 > self.floor  # type: ignore[operator]

    @property
    def median_high(self) -> bool:
        return (self.measured and self.median_floor is not None and self.p50 is not None
                and self.p50 > self.median_floor)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"p50": self.p50, "p99": self.p99, "unit": self.unit, "floor": self.floor}
        if self.p999 is not None:
            d["p999"] = self.p999
        if self.error:
            d["error"] = self.error
        if self.skipped:
            d["skipped"] = self.skipped
        return d


def lat_floor(override: float | None = None) -> float:
    return LAT_P99_US if override is None else override


def nccl_step_floor(p50_ms: float | None) -> float | None:
    return None if p50_ms is None else round(p50_ms + NCCL_STEP_TAIL_MS, 3)


@dataclass
class PairTail:
    round: int
    a: str
    b: str
    high: list[Latency]  # the figures above their floor
    median_high: bool
    figures: list[Latency]


@dataclass
class Tails:
    judged: list[PairTail] = field(default_factory=list)  # pairs with at least one measured figure
    stragglers: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> what named it
    fabric_wide: bool = False
    pairs_high: list[PairTail] = field(default_factory=list)  # high tails left to their pairs
    unmeasured: list[tuple[int, str, str, Latency]] = field(default_factory=list)  # could not judge
    skipped: dict[str, set[str]] = field(default_factory=dict)  # why -> nodes
    left: tuple[int, int] = (0, 0)  # (high, all) of the pairs no straggler explains

    @property
    def failed(self) -> bool:
        return bool(self.stragglers or self.fabric_wide or self.pairs_high)


def judge(nodes: list[str], results: list[Any]) -> Tails:
    """The tails of scoring.PairResult's (this module is below scoring: it imports none of it)."""
    out = Tails()
    for r in results:
        if r.error is not None or not r.latencies:
            continue
        bandwidth = r.rails()
        measured = []
        for lat in r.latencies:
            if lat.skipped:
                out.skipped.setdefault(lat.skipped, set()).update((r.a, r.b))
            elif not lat.measured:
                if bandwidth.get(lat.rail, True):  # a rail whose bandwidth failed says why already
                    out.unmeasured.append((r.round, r.a, r.b, lat))
            else:
                measured.append(lat)
        if measured:
            high = [x for x in measured if x.high]
            out.judged.append(PairTail(r.round, r.a, r.b, high, any(x.median_high for x in high), measured))

    # 1. Stragglers, worst first, each explaining its pairs away from its peers.
    named: set[str] = set()

    def live(node: str) -> list[PairTail]:
        return [t for t in by_node.get(node, []) if t.a not in named and t.b not in named]

    def clean_elsewhere(peer: str, besides: str) -> bool:
        others = [t for t in live(peer) if besides not in (t.a, t.b)]
        return bool(others) and sum(1 for t in others if not t.high) * 2 > len(others)

    by_node: dict[str, list[PairTail]] = {}
    for t in out.judged:
        by_node.setdefault(t.a, []).append(t)
        by_node.setdefault(t.b, []).append(t)
    while True:
        ranked = []
        for node in nodes:
            if node in named:
                continue
            mine = live(node)
            high = [t for t in mine if t.high]
            if not mine or len(high) * 2 <= len(mine):
                continue
            witnesses = sorted({t.b if t.a == node else t.a for t in high} - named)
            witnesses = [p for p in witnesses if clean_elsewhere(p, node)]
            if len(witnesses) >= 2:
                ranked.append((-len(high) / len(mine), node, mine, high, witnesses))
        if not ranked:
            break
        _, node, mine, high, witnesses = min(ranked, key=lambda x: (x[0], x[1]))
        named.add(node)
        p50s = [x.p50 for t in high for x in t.high if x.p50 is not None]
        p99s = [x.p99 for t in high for x in t.high if x.p99 is not None]
        out.stragglers[node] = {"pairs": len(mine), "high": len(high), "peers": witnesses,
                                "median_high": sum(t.median_high for t in high) * 2 > len(high),
                                "p50": round(median(p50s), 3) if p50s else None,
                                "p99": round(median(p99s), 3) if p99s else None,
                                "unit": high[0].high[0].unit, "floor": high[0].high[0].floor,
                                "median_floor": high[0].high[0].median_floor}

    # 2. What is left: the whole fabric's tail, or each pair's.
    left = [t for t in out.judged if t.a not in named and t.b not in named]
    high_left = [t for t in left if t.high]
    among = {n for t in high_left for n in (t.a, t.b)}
    if high_left and len(among) >= 3 and len(high_left) * 2 > len(left):
        out.fabric_wide = True
    else:
        out.pairs_high = high_left
    out.left = (len(high_left), len(left))
    return out
