"""From per-pair results to what is bad: a node, a rail of one node, a rail of the whole fabric, or
the link between two good nodes.

A pair test on a rail (RDMA between the two nodes' NICs on that rail, both directions; "tcp" for
iperf3; "nccl" for the two-node all-reduce) passes when every measurement on it reached its floor.
Scoring works on ports, a node's end of a rail:

1. A rail that fails in most of its tests across the fabric (tests of pairs that passed on another
   rail; with a single rail, three tests in four), among at least three nodes, is the rail's fault
   (its switches, a fabric-wide setting), not its ports': it is named and left out of the rest.
2. Ports are named bad worst first: a port fails most of its remaining tests, against at least two
   distinct peers not named bad (one peer alone cannot tell the port from the peer or the cable
   between them). Naming a port takes its tests off its peers' tallies: a failure it explains is
   not held against the other side. This is imbue's pass ratio with the bad peer explained away.
3. A port is cleared when most of its remaining tests passed. A failure left between two cleared
   ports is the link between them. A failure with an endpoint that is neither named nor cleared
   leaves that node inconclusive: never a silent pass.
4. A node with more than half of its ports bad is a bad node; with fewer, its bad rails are named.

A test the launcher could not run at all (no allocation, the worker did not start) is no evidence
either way: it is listed as an error and left out of the tallies.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodeqc.fabric.tails import Latency, Tails
    from nodeqc.fabric.topology import Topology
    from nodeqc.fabric.uplinks import DeadLeaf, Uplink


@dataclass(frozen=True)
class Floors:
    """What a pair test must reach. Fractions (the profile's [nic] min_rdma_fraction and
    min_tcp_fraction) are of the faster end's port rate or link speed: a port that trained down
    (100 Gb/s facing 400) must not lower its own pair's floor (0.85 x 100 would let 90 pass); an
    absolute floor in Gb/s (--min-rdma-gbps, --min-tcp-gbps) replaces them. NCCL's collectives
    (all-reduce, all-gather, all-to-all): bus bandwidth in GB/s. Latency tails: nodeqc.fabric.tails."""

    rdma_fraction: float | None = None
    tcp_fraction: float | None = None
    rdma_gbps: float | None = None
    tcp_gbps: float | None = None
    nccl_busbw_gbps: float | None = None
    allgather_busbw_gbps: float | None = None
    alltoall_busbw_gbps: float | None = None
    nvlink_busbw_gbps: float | None = None  # the all-reduce within one multi-node NVLink domain (groups)
    lat_p99_us: float | None = None  # ib_write_lat's p99 floor (None: nodeqc.fabric.tails.LAT_P99_US)

    def busbw(self, rail: str, nodes: int = 2, gpus: int | None = None, nvlink: bool = False) -> float | None:
        """The bus bandwidth floor (GB/s) of a collective's rail (nccl: the all-reduce, allgather,
        alltoall) across `nodes` nodes of `gpus` GPUs each. The floors are two-node figures. The
        all-reduce's and all-gather's bus bandwidth does not depend on the node count (nccl-tests
        defines it so: a ring moves the same bytes per rank whatever the rank count). The all-to-all's
        does, once the NICs are the bottleneck: of each rank's data the share (k-1)/k leaves its node
        (1/2 across two), against a bus factor of (n-1)/n for n = k x G ranks, so its floor is scaled
        by that ratio against two nodes' (an estimate, from the NIC-bound model: 0.69 of the two-node
        floor across four nodes of 8 GPUs, 0.55 across sixteen)."""
        if nvlink and rail == "nccl" and self.nvlink_busbw_gbps is not None:
            # Within one multi-node NVLink domain NCCL's all-reduce goes over NVLink: its own floor.
            # (The all-gather's and all-to-all's there have none: their NIC floors, lower, stand.)
            return self.nvlink_busbw_gbps
        floor = {"nccl": self.nccl_busbw_gbps, "allgather": self.allgather_busbw_gbps,
                 "alltoall": self.alltoall_busbw_gbps}[rail]
        if floor is None or rail != "alltoall" or nodes == 2 or not gpus:
            return floor
        return round(floor * alltoall_bus_factor(nodes, gpus) / alltoall_bus_factor(2, gpus), 3)

    def rdma(self, *rates: float | None) -> float | None:
        if self.rdma_gbps is not None:
            return self.rdma_gbps
        known = [r for r in rates if r]
        return round(self.rdma_fraction * max(known), 3) if known and self.rdma_fraction is not None else None

    def tcp(self, *speeds: float | None) -> float | None:
        if self.tcp_gbps is not None:
            return self.tcp_gbps
        known = [s for s in speeds if s]
        return round(self.tcp_fraction * max(known), 3) if known and self.tcp_fraction is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def alltoall_bus_factor(nodes: int, gpus: int) -> float:
    """The NIC-bound all-to-all's bus bandwidth per unit of a node's NIC rate: busbw = algbw (n-1)/n
    with algbw = NIC / ((k-1)/k), the share of each rank's bytes that leaves its node (Floors.busbw)."""
    ranks = nodes * gpus
    return ((ranks - 1) / ranks) / ((nodes - 1) / nodes)


@dataclass(frozen=True)
class Measurement:
    """One figure of a pair test: a rail in one direction (or both, for NCCL)."""

    rail: str  # an RDMA device name (mlx5_0), "tcp", or a collective: "nccl" (all-reduce), "allgather", "alltoall"
    direction: str  # "a>b", "b>a" or "both"
    value: float | None  # Gb/s (RDMA, TCP) or GB/s bus bandwidth (NCCL)
    unit: str
    floor: float | None
    error: str | None = None  # the tool failed: the test fails
    skipped: str | None = None  # could not be measured here (tool missing): no evidence

    @property
    def passed(self) -> bool:
        return (self.error is None and self.skipped is None and self.value is not None
                and (self.floor is None or self.value >= self.floor))

    def to_dict(self) -> dict[str, Any]:
        d = {"rail": self.rail, "direction": self.direction, "value": self.value, "unit": self.unit,
             "floor": self.floor}
        if self.error:
            d["error"] = self.error
        if self.skipped:
            d["skipped"] = self.skipped
        return d


@dataclass
class PairResult:
    round: int
    a: str
    b: str
    measurements: list[Measurement] = field(default_factory=list)
    error: str | None = None  # the pair could not be tested at all
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)  # what each end said it is
    refused: list[dict[str, Any]] = field(default_factory=list)  # lines.Refused.to_dict(): lines not used
    latencies: list["Latency"] = field(default_factory=list)  # the tail figures (nodeqc.fabric.tails)

    def rails(self) -> dict[str, bool]:
        """rail -> passed, over the rails with evidence."""
        out: dict[str, bool] = {}
        for m in self.measurements:
            if m.skipped:
                continue
            out[m.rail] = out.get(m.rail, True) and m.passed
        return out


@dataclass
class GroupResult:
    """One group test (nodeqc.fabric.groups): NCCL's collectives across every GPU of a group of
    nodes, each collective one figure ("both": every end checks its own ranks)."""

    round: int
    nodes: tuple[str, ...]
    measurements: list[Measurement] = field(default_factory=list)
    error: str | None = None  # the group could not be tested at all
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: list[dict[str, Any]] = field(default_factory=list)
    latencies: list["Latency"] = field(default_factory=list)  # each collective's step tail
    nvlink: str | None = None  # the multi-node NVLink domain every node of the group is in, where one is

    @property
    def outcome(self) -> str:
        """pass, fail, or not judged (not tested, or every figure skipped: no evidence)."""
        if self.error is not None:
            return "not judged"
        if not any(not m.skipped for m in self.measurements):
            return "not judged"
        return "fail" if self.failed() else "pass"

    def failed(self) -> list[str]:
        """What failed: a collective below its floor or in error, or its step tail high (every step
        waits for the group's slowest rank: a straggler among them, nodeqc.fabric.tails)."""
        return ([m.rail for m in self.measurements if not m.skipped and not m.passed]
                + [f"{lat.rail} tail" for lat in self.latencies if lat.high])


@dataclass
class Port:
    node: str
    rail: str
    tests: int = 0
    fails: int = 0
    failing_peers: dict[str, int] = field(default_factory=dict)  # peer node -> failed tests, still counted
    raw_tests: int = 0
    raw_fails: int = 0
    named: bool = False
    cleared: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return self.node, self.rail


@dataclass
class Scores:
    nodes: list[str]
    rails: list[str]
    ports: dict[tuple[str, str], Port]
    bad_rails: list[str]  # fabric-wide
    bad_nodes: list[str]
    bad_ports: list[tuple[str, str]]  # (node, rail) on nodes that are not bad as a whole
    bad_links: list[tuple[str, str, list[str]]]  # (a, b, rails) between cleared ports
    inconclusive: dict[str, str]  # node -> why
    errors: list[PairResult]
    # node -> the lines its worker printed that it could not have measured (another node's result,
    # a second one, a figure of its peer's): the node is the suspect, whatever its pairs say
    suspects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # switch uplinks named bad (nodeqc.fabric.uplinks), where the topology is known
    bad_uplinks: list["Uplink"] = field(default_factory=list)
    # leaves whose every test failed (nodeqc.fabric.uplinks.dead_leaves): their nodes are inconclusive
    bad_leaves: list["DeadLeaf"] = field(default_factory=list)
    # the latency tail: stragglers, high tails (nodeqc.fabric.tails); None where no figure was measured
    tails: "Tails | None" = None

    def ports_of(self, node: str) -> list[Port]:
        """The node's ports (indexed once: thousands of nodes times their rails)."""
        if not hasattr(self, "_by_node"):
            index: dict[str, list[Port]] = {}
            for (n, _), p in self.ports.items():
                index.setdefault(n, []).append(p)
            self._by_node = index
        return self._by_node.get(node, [])

    def node_verdict(self, node: str) -> str:
        if (node in self.suspects or node in self.bad_nodes or any(n == node for n, _ in self.bad_ports)
                or (self.tails is not None and node in self.tails.stragglers)):
            return "fail"
        if node in self.inconclusive:
            return "error"
        return "pass"

    def pass_ratio(self, node: str) -> float | None:
        """The node's raw pass ratio over its pair tests on every rail (before explaining away)."""
        tests = sum(p.raw_tests for p in self.ports_of(node))
        fails = sum(p.raw_fails for p in self.ports_of(node))
        return None if tests == 0 else (tests - fails) / tests

    @property
    def failed(self) -> bool:
        return bool(self.bad_rails or self.bad_nodes or self.bad_ports or self.bad_links or self.suspects
                    or self.bad_uplinks or self.bad_leaves or (self.tails is not None and self.tails.failed))


def score(nodes: list[str], results: list[PairResult], topology: "Topology | None" = None,
          judge_rails: bool = True) -> Scores:
    """The fabric's scores from its pair tests. `judge_rails` False: no rail is named bad across the
    fabric (the trial a lone rail is held to, below)."""
    rails = sorted({m.rail for r in results for m in r.measurements if not m.skipped})
    tested = [r for r in results if r.error is None]
    errors = [r for r in results if r.error is not None]
    tests = [(r.a, r.b, rail, ok) for r in tested for rail, ok in r.rails().items()]
    # 0. Leaves whose every test failed, inside and across, where the topology is known: named as the
    # leaves they are (nodeqc.fabric.uplinks.dead_leaves), their nodes judged with them, their tests
    # out of every tally below.
    leaves: list[DeadLeaf] = []
    explained: set[int] = set()
    if topology is not None:
        from nodeqc.fabric.uplinks import dead_leaves

        leaves, explained = dead_leaves(tests, topology)
    under_dead = {n for leaf in leaves for n in leaf.nodes}

    # 1. Rails that fail fabric-wide. With several rails, only pairs that passed on another rail
    # speak for the rail (a bad node fails every rail of its pairs and says nothing about any).
    # With one rail there is no such contrast: it takes three failures in four, and as everywhere,
    # failures spread over at least three nodes (two nodes alone cannot tell a rail from a node).
    per_rail: dict[str, list[bool]] = {}
    failing_nodes: dict[str, set[str]] = {}
    for r in tested:
        if r.a in under_dead or r.b in under_dead:
            continue
        verdicts = r.rails()
        for rail, ok in verdicts.items():
            others = [v for other, v in verdicts.items() if other != rail]
            if len(rails) == 1 or any(others):
                per_rail.setdefault(rail, []).append(ok)
                if not ok:
                    failing_nodes.setdefault(rail, set()).update((r.a, r.b))
    share = 0.75 if len(rails) == 1 else 0.5
    bad_rails = sorted(rl for rl, oks in per_rail.items()
                       if judge_rails and len(failing_nodes.get(rl, ())) >= 3 and oks.count(False) > share * len(oks))
    if len(rails) == 1 and bad_rails:
        # A lone rail has no other rail to contrast with: half the nodes dead fail three tests in four
        # of theirs too, and naming the rail set every node's tests aside, so the dead passed (the
        # 2026-11-29 fuzzing: 4 of 8 nodes down, exit 1 with all 8 "pass"). The rail is to blame only
        # where nodes cannot be: where, judged without it, more than half the nodes are named bad or
        # a node is left that no test cleared or named (a failure nothing explains: every pair of a
        # ring of eight failing named every other node, and left the rest to no one).
        trial = score(nodes, results, topology, judge_rails=False)
        if len(trial.bad_nodes) * 2 <= len(nodes) and not trial.inconclusive:
            return trial

    # 1b. Switch uplinks, where the topology is known: their crossing tests leave the tallies.
    uplinks: list[Uplink] = []
    if topology is not None:
        from nodeqc.fabric.uplinks import name_uplinks

        uplinks, crossing = name_uplinks(tests, explained | {i for i, t in enumerate(tests) if t[2] in bad_rails}, topology)
        explained |= crossing

    ports: dict[tuple[str, str], Port] = {(n, rl): Port(n, rl) for n in nodes for rl in rails}
    by_port: dict[tuple[str, str], list[int]] = {}
    for i, (a, b, rail, ok) in enumerate(tests):
        for me, peer in ((a, b), (b, a)):
            p = ports.setdefault((me, rail), Port(me, rail))
            p.raw_tests += 1
            p.raw_fails += not ok
            if rail in bad_rails or i in explained:
                continue
            p.tests += 1
            if not ok:
                p.fails += 1
                p.failing_peers[peer] = p.failing_peers.get(peer, 0) + 1
            by_port.setdefault((me, rail), []).append(i)

    # 2. Name bad ports, worst first, explaining their failures away from their peers.
    def candidate(p: Port) -> bool:
        return not p.named and p.fails * 2 > p.tests and len(p.failing_peers) >= 2

    def rank(p: Port) -> tuple[float, int, str, str]:
        return (-p.fails / p.tests, -p.fails, p.node, p.rail)

    heap = [(rank(p), p.key) for p in ports.values() if candidate(p)]
    heapq.heapify(heap)
    removed: set[int] = set()
    while heap:
        key_rank, key = heapq.heappop(heap)
        p = ports[key]
        if not candidate(p) or rank(p) != key_rank:
            continue  # stale entry: its tallies changed since it was pushed
        p.named = True
        for i in by_port.get(key, []):
            if i in removed:
                continue
            removed.add(i)
            a, b, rail, ok = tests[i]
            peer = ports[(b if a == p.node else a, rail)]
            peer.tests -= 1
            if not ok:
                peer.fails -= 1
                other = p.node
                peer.failing_peers[other] -= 1
                if peer.failing_peers[other] == 0:
                    del peer.failing_peers[other]
            if candidate(peer):
                heapq.heappush(heap, (rank(peer), peer.key))

    # 3. Cleared ports, links between them, inconclusive nodes.
    inconclusive: dict[str, str] = {}
    for p in ports.values():
        if p.rail in bad_rails or p.named:
            continue
        p.cleared = p.fails * 2 < p.tests  # no test left: not cleared (0 < 0)
        if not p.cleared and p.raw_tests:
            why = (f"{p.rail}: {p.fails} of {p.tests} tests failed with peers not named bad "
                   f"({', '.join(sorted(p.failing_peers))}): cannot tell this node from its peer"
                   if p.tests else f"{p.rail}: every peer it met was named bad: no test left to clear it")
            inconclusive.setdefault(p.node, why)
        elif not p.raw_tests and p.node not in inconclusive:
            inconclusive[p.node] = f"{p.rail}: never tested (no pair with results)"
    links: dict[tuple[str, str], list[str]] = {}
    for i, (a, b, rail, ok) in enumerate(tests):
        if ok or i in removed or rail in bad_rails or i in explained:
            continue
        if ports[(a, rail)].cleared and ports[(b, rail)].cleared:
            links.setdefault(tuple(sorted((a, b))), []).append(rail)  # type: ignore[arg-type]
    tested_on: dict[str, set[str]] = {}  # node -> the rails it had tests on
    for (n, rl), p in ports.items():
        if p.raw_tests:
            tested_on.setdefault(n, set()).add(rl)
    for leaf in leaves:
        for node in leaf.nodes:  # not this node's alone: its leaf's (fabric.leaf), never a pass
            inconclusive[node] = (f"under {leaf.switch}, whose every test failed, among its nodes and across it: "
                                  "judged with its leaf")
    for node in nodes:
        if node not in tested_on and node not in inconclusive:
            inconclusive[node] = "no pair test of this node gave results"
        elif node in tested_on and tested_on[node] <= set(bad_rails) and node not in inconclusive:
            # Every test it had was on a rail that failed across the fabric: they say nothing of it.
            inconclusive[node] = (f"tested only on {', '.join(sorted(tested_on[node]))}, which failed across "
                                  "the fabric: nothing left to judge this node by")

    # 4. Bad nodes and bad rails of one node.
    bad_nodes, bad_ports = [], []
    by_node: dict[str, list[Port]] = {}
    for (n, _), p in ports.items():
        by_node.setdefault(n, []).append(p)
    for node in nodes:
        own = [p for p in by_node.get(node, []) if p.rail not in bad_rails]
        named = [p for p in own if p.named]
        if own and len(named) * 2 > len(own):
            bad_nodes.append(node)
        else:
            bad_ports += [p.key for p in named]
    for node in bad_nodes:
        inconclusive.pop(node, None)
    for node, _ in bad_ports:
        inconclusive.pop(node, None)
    suspects: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        for refused in r.refused:
            if refused.get("claim") and refused.get("node") in nodes:
                suspects.setdefault(refused["node"], []).append({"round": r.round, "pair": f"{r.a}-{r.b}", **refused})
    for node in suspects:
        inconclusive.pop(node, None)
    # A node whose line was refused as malformed passes on nothing it said: it is not judged.
    # (Said before any other reason: it is why the node has no evidence.)
    named = set(bad_nodes) | {n for n, _ in bad_ports} | set(suspects)
    for r in reversed(results):
        for refused in reversed(r.refused):
            node = refused.get("node")
            if node in nodes and node not in named:
                inconclusive[node] = (f"round {r.round}, pair {r.a}-{r.b}: its worker's result was refused: "
                                      f"{refused.get('why')}")
    from nodeqc.fabric.tails import judge

    tails = judge(list(nodes), results) if any(r.latencies for r in results) else None
    return Scores(nodes=list(nodes), rails=rails, suspects=suspects, ports=ports, bad_rails=bad_rails, bad_nodes=bad_nodes,
                  bad_ports=sorted(bad_ports), bad_links=sorted((a, b, sorted(set(r))) for (a, b), r in links.items()),
                  inconclusive=inconclusive, errors=errors, bad_uplinks=uplinks, tails=tails, bad_leaves=leaves)
