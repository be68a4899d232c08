"""A simulated cluster: nodes `node0`..`nodeN-1`, each with `rails` RDMA rails (`rail0`..; none: TCP
only), and faults per node, rail and link that the real scoring must find and attribute.

Faults (`--inject`, repeatable; F is the fraction of the healthy bandwidth left, 0 < F < 1):

    nodeN:slow=F          every rail of the node (a host problem: PCIe, NUMA, CPU)
    nodeN:down            the node answers no test (its tools fail to connect)
    nodeN:straggler       the node stalls now and then: its bandwidth and median latency stay
                          normal, its 99th percentile latency is high (nodeqc.fabric.tails)
    nodeN:nccl=F          NCCL's collectives through the node at F of healthy, its NICs healthy (its
                          GPUs, NVLink or PCIe path: what a job loads and ib_write_bw does not);
                          seen by group tests (--group-size) only
    nodeN:nccl:wrong      one wrong element in every collective result on the node's ranks
    nodeN:railR=F         one rail of one node (a NIC, cable or transceiver)
    nodeN:railR:down      that rail's link is down
    railR=F | railR:down  one rail across the fabric (its leaf switches, a fabric setting)
    link:nodeA-nodeB=F | link:nodeA-nodeB:down
                          the path between two nodes on every rail (a bad route between good nodes)
    leaf:NAME:slow=F | leaf:NAME:down | spine:NAME:slow=F | spine:NAME:down
                          a switch's uplink on every rail (with a topology: --leaves K [--spines S],
                          whose switches are L0.. and S0.., or --topology FILE): every test whose
                          path crosses it (topology.Topology.crossed)

The figures: a healthy NDR port gives ib_write_bw 97.5% of its 400 Gb/s (perftest's usual share of
the line rate; generic profile note), a healthy TCP link 90% of its 100 Gb/s, each with 0.5%
seeded noise. With rails, each pair also gives ib_write_lat's figures per rail (the `lat` test),
estimates, not measurements: a median of 2 usec one way (2-byte RDMA writes through a switch or
two on InfiniBand or RoCE: about 1 usec back to back, plus a few hundred ns a hop) and a 99th
percentile 0.6 usec above it; a straggler's 99th percentile is 60 usec (stalls of tens of usec:
an interrupt storm, a C-state exit, a PCIe link leaving a power state), its median unchanged.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass, field

from nodeqc.core.arguments import ascii_number
from nodeqc.core.errors import UsageError, shown
from nodeqc.core.text import few
from nodeqc.fabric.coverage import Coverage
from nodeqc.fabric.groups import GroupScores, shared_domain
from nodeqc.fabric.nccl_group import BUFFER_BYTES, COLLECTIVES, wrong_result
from nodeqc.fabric.scoring import Floors, GroupResult, Measurement, PairResult, Scores, alltoall_bus_factor
from nodeqc.fabric.tails import LAT_P50_US as LAT_P50_FLOOR_US
from nodeqc.fabric.tails import Latency, lat_floor, nccl_step_floor
from nodeqc.fabric.topology import Topology

# The most nodes --simulate builds: the largest simulated fabric measured (4,096 nodes, benchmarks/
# RESULTS.md "Fabric acceptance at scale"); beyond it time and memory are unknown.
MAX_SIMULATED_NODES = 4096
PORT_RATE_GBIT = 400.0  # NDR InfiniBand
TCP_LINK_GBIT = 100.0
HEALTHY_RDMA_SHARE = 0.975
HEALTHY_TCP_SHARE = 0.90
NOISE = 0.005
LAT_P50_US = 2.0  # estimates (see above)
LAT_TAIL_US = 0.6
LAT_P999_US = 4.0
STRAGGLER_P99_US = 60.0
# Group tests: NVIDIA's two-node H100 nccl-tests figures at 16 GB (cluster readiness engine, ADR-055;
# shared/REFERENCE.md), GB/s bus bandwidth; 8 GPUs a node (an HGX). A straggler's 99th percentile
# step: a stall of 12 ms, above cluster-health-scanner's 8 ms (nodeqc.fabric.tails), an estimate.
HEALTHY_BUSBW = {"nccl": 487.9, "allgather": 338.6, "alltoall": 79.1}
# A rack-scale cluster (--nvlink-domain): NVIDIA's four GB200 nodes' all-reduce, 882.5 GB/s with
# multi-node NVLink and 191.4 without (the same source). Its all-gather and all-to-all: the H100
# figures above (no GB200 figure is published; estimates).
NVLINK_BUSBW = 882.5
NVLINK_FALLBACK_BUSBW = 191.4
GROUP_GPUS = 8
STRAGGLER_STALL_MS = 12.0

_FRACTION = r"([^:\s]+)"  # any word: fraction() says what a fraction must be (-1 and 2 had the vocabulary)
# ASCII digits: \d took node٣ and node１ as node3 and node1 (2026-11-29 fuzzing).
_FAULT = re.compile(
    rf"^(?:node(?P<node>[0-9]+):(?:slow=(?P<slow>{_FRACTION})|(?P<down>down)|(?P<straggler>straggler)|nccl(?:=(?P<nccl>{_FRACTION})|:(?P<wrong>wrong))|(?P<nvdown>nvlink:down)|rail(?P<nrail>[0-9]+)(?:=(?P<nrf>{_FRACTION})|:(?P<nrdown>down))))$"
    rf"|^(?:nvlink:(?P<domain>[A-Za-z0-9._-]{{1,63}}):down)$"
    rf"|^(?:rail(?P<rail>[0-9]+)(?:=(?P<rf>{_FRACTION})|:(?P<rdown>down)))$"
    rf"|^(?:link:node(?P<la>[0-9]+)-node(?P<lb>[0-9]+)(?:=(?P<lf>{_FRACTION})|:(?P<ldown>down)))$"
    rf"|^(?:(?P<lvl>leaf|spine):(?P<sw>[A-Za-z0-9._-]{{1,253}}?)(?::slow=(?P<uf>{_FRACTION})|:(?P<udown>down)))$")
VOCABULARY = "nodeN:slow=F, nodeN:down, nodeN:straggler, nodeN:nccl=F, nodeN:nccl:wrong, nodeN:nvlink:down, " \
             "nvlink:DOMAIN:down, nodeN:railR=F, nodeN:railR:down, railR=F, railR:down, " \
             "link:nodeA-nodeB=F, link:nodeA-nodeB:down, leaf:NAME:slow=F, leaf:NAME:down, spine:NAME:slow=F, " \
             "spine:NAME:down (F: the fraction of bandwidth left, 0 < F < 1)"


@dataclass
class Faults:
    node: dict[str, float] = field(default_factory=dict)  # 0.0: down
    port: dict[tuple[str, str], float] = field(default_factory=dict)
    rail: dict[str, float] = field(default_factory=dict)
    link: dict[tuple[str, str], float] = field(default_factory=dict)
    uplink: dict[str, float] = field(default_factory=dict)  # switch -> its uplink's share left
    straggler: set[str] = field(default_factory=set)  # nodes slow only at the latency tail
    nccl: dict[str, float] = field(default_factory=dict)  # node -> its collectives' share left (0.0: wrong results)
    nvlink: set[str] = field(default_factory=set)  # NVLink domains, and nodes, whose multi-node NVLink is down


@dataclass
class SimulatedCluster:
    nodes: list[str]
    rails: list[str]  # empty: TCP only
    faults: Faults
    seed: int = 0
    injected: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)  # (text, kind, where)
    topology: Topology | None = None
    domains: dict[str, str] = field(default_factory=dict)  # node -> multi-node NVLink domain (D0..)
    gpus: int = GROUP_GPUS

    @classmethod
    def build(cls, count: int, rails: int, injected: list[str], seed: int = 0, leaves: int = 0, spines: int = 0,
              topology: Topology | None = None, nvlink: int = 0, gpus: int = 0) -> "SimulatedCluster":
        if count < 2:
            raise UsageError(f"--simulate {count}: a fabric needs at least two nodes")
        if count > MAX_SIMULATED_NODES:  # an unbounded count ran for minutes, gigabytes growing, silent
            raise UsageError(f"--simulate {count}: at most {MAX_SIMULATED_NODES} simulated nodes (the largest "
                             "simulated fabric measured, benchmarks/RESULTS.md)")
        if not 0 <= rails <= 32:
            raise UsageError(f"--rails {rails}: expected 0 (TCP only) to 32")
        nodes = [f"node{i}" for i in range(count)]
        if leaves or spines:
            if topology is not None:
                raise UsageError("--leaves/--spines build the simulated topology: not with --topology FILE")
            if not leaves and spines:  # it said "--leaves 0: expected 1 to ..." of an option not given
                raise UsageError(f"--spines {spines}: spines stand above leaves: give --leaves K too")
            if not 1 <= leaves <= count:
                raise UsageError(f"--leaves {leaves}: expected 1 to the node count ({count})")
            if not 0 <= spines <= leaves:
                raise UsageError(f"--spines {spines}: expected 0 (leaves only) to the leaf count ({leaves})")
            parent = {f"L{j}": f"S{j * spines // leaves}" for j in range(leaves)} if spines else {}
            topology = Topology(f"simulated: {leaves} leaves" + (f", {spines} spines" if spines else ""),
                                {n: f"L{i * leaves // count}" for i, n in enumerate(nodes)}, parent)
        elif topology is not None:
            topology = topology.restrict(nodes, topology.source)
        if not 0 <= nvlink <= count:
            raise UsageError(f"--nvlink-domain {nvlink}: expected 0 (none) to the node count ({count})")
        if not 0 <= gpus <= 72:
            raise UsageError(f"--gpus {gpus}: expected 1 to 72")
        # A topology file's BlockName= lines are its multi-node NVLink domains, as on a real cluster
        # (they were left out of a simulated one: its group tests ran as if no node had NVLink).
        known = dict(topology.nvlink) if topology is not None else {}
        if nvlink and known:
            raise UsageError(f"--nvlink-domain {nvlink}: the topology's BlockName= lines name the NVLink domains already")
        domains = {n: f"D{i // nvlink}" for i, n in enumerate(nodes)} if nvlink else known
        cluster = cls(nodes, [f"rail{r}" for r in range(rails)], Faults(), seed, topology=topology, domains=domains,
                      gpus=gpus or GROUP_GPUS)
        for text in injected:
            cluster.inject(text)
        return cluster

    def inject(self, text: str) -> None:
        m = _FAULT.match(text.strip())
        if not m:
            raise UsageError(f"--inject {text}: not a fabric fault; expected one of: {VOCABULARY}")
        g = m.groupdict()

        def node(i: str) -> str:
            name = f"node{int(i)}"
            if name not in self.nodes:
                raise UsageError(f"--inject {text}: no {name} in a cluster of {len(self.nodes)} nodes (node0..node{len(self.nodes) - 1})")
            return name

        def rail(i: str) -> str:
            name = f"rail{int(i)}"
            if name not in self.rails:
                have = f"rail0..rail{len(self.rails) - 1}" if self.rails else "none: TCP only (--rails 0)"
                raise UsageError(f"--inject {text}: no {name} (rails: {have})")
            return name

        def fraction(value: str | None) -> float:
            if value is None:
                return 0.0
            try:
                f = float(ascii_number(value))
            except ValueError:
                f = math.nan
            if not 0 < f < 1:  # nan too
                raise UsageError(f"--inject {shown(text)}: the fraction left must be a number above 0 and below 1, "
                                 f"got {shown(value)!r} (use :down for none)")
            return f

        if g["node"] is not None:
            n = node(g["node"])
            if g["nvdown"]:
                if n not in self.domains:
                    raise UsageError(f"--inject {text}: {n} is in no NVLink domain (--nvlink-domain N)")
                self.faults.nvlink.add(n)
                self.injected.append((text, "nvlink node", (n,)))
            elif g["nccl"] is not None or g["wrong"]:
                self.faults.nccl[n] = 0.0 if g["wrong"] else fraction(g["nccl"])
                self.injected.append((text, "nccl", (n,)))
            elif g["straggler"]:
                if not self.rails:
                    raise UsageError(f"--inject {text}: a straggler shows in ib_write_lat's tail, on RDMA rails: "
                                     "not with --rails 0")
                self.faults.straggler.add(n)
                self.injected.append((text, "straggler", (n,)))
            elif g["nrail"] is not None:
                r = rail(g["nrail"])
                self.faults.port[(n, r)] = fraction(g["nrf"])
                self.injected.append((text, "port", (n, r)))
            else:
                self.faults.node[n] = fraction(g["slow"])
                self.injected.append((text, "node", (n,)))
        elif g["domain"] is not None:
            if g["domain"] not in set(self.domains.values()):
                raise UsageError(f"--inject {text}: no NVLink domain {g['domain']} (domains: "
                                 f"{few(sorted(set(self.domains.values())), 8) or 'none: give --nvlink-domain N'})")
            self.faults.nvlink.add(g["domain"])
            self.injected.append((text, "nvlink", (g["domain"],)))
        elif g["lvl"] is not None:
            sw = g["sw"]
            have = self.topology.switches() if self.topology is not None else []
            leaves = [x for x in have if self.topology is not None and self.topology.level(x) == 0]
            known = leaves if g["lvl"] == "leaf" else [x for x in have if x not in leaves]
            if sw not in known:
                raise UsageError(f"--inject {text}: no {g['lvl']} {sw} in the topology "
                                 f"({'leaves' if g['lvl'] == 'leaf' else 'spines'}: "
                                 f"{few(known, 8) or 'none: give --leaves K [--spines S] or --topology FILE'})")
            if self.topology is not None and self.topology.below(sw) >= set(self.nodes):
                raise UsageError(f"--inject {text}: {g['lvl']} {sw} is above every node: no pair test can cross its uplink")
            self.faults.uplink[sw] = fraction(g["uf"])
            self.injected.append((text, "uplink", (sw,)))
        elif g["rail"] is not None:
            r = rail(g["rail"])
            self.faults.rail[r] = fraction(g["rf"])
            self.injected.append((text, "rail", (r,)))
        else:
            a, b = node(g["la"]), node(g["lb"])
            if a == b:
                raise UsageError(f"--inject {text}: a link joins two different nodes")
            key = tuple(sorted((a, b)))
            self.faults.link[key] = fraction(g["lf"])  # type: ignore[index]
            self.injected.append((text, "link", key))

    def _noise(self, *key: object) -> float:
        digest = hashlib.sha256(repr((self.seed, *key)).encode()).digest()
        return random.Random(digest).gauss(1.0, NOISE)

    def _factor(self, a: str, b: str, rail: str | None) -> float:
        f = min(self.faults.node.get(a, 1.0), self.faults.node.get(b, 1.0),
                self.faults.link.get(tuple(sorted((a, b))), 1.0))  # type: ignore[arg-type]
        if self.faults.uplink and self.topology is not None:
            f = min([f, *(self.faults.uplink.get(s, 1.0) for s in self.topology.crossed(a, b))])
        if rail is not None:
            f = min(f, self.faults.rail.get(rail, 1.0), self.faults.port.get((a, rail), 1.0),
                    self.faults.port.get((b, rail), 1.0))
        return f

    def run_pair(self, round_no: int, a: str, b: str, floors: Floors, tests: list[str] | None = None) -> PairResult:
        """The pair test the worker runs on real nodes: RDMA per rail in both directions, or TCP
        both ways without rails; with rails and the `lat` test (the default here), ib_write_lat per rail."""
        out = []
        rails = self.rails or [None]
        for rail in rails:
            for direction in ("a>b", "b>a"):
                factor = self._factor(a, b, rail)
                name = rail or "tcp"
                if rail:
                    floor, share, rate, unit = floors.rdma(PORT_RATE_GBIT, PORT_RATE_GBIT), HEALTHY_RDMA_SHARE, PORT_RATE_GBIT, "Gb/s"
                else:
                    floor, share, rate, unit = floors.tcp(TCP_LINK_GBIT), HEALTHY_TCP_SHARE, TCP_LINK_GBIT, "Gb/s"
                if factor == 0.0:
                    tool = "ib_write_bw" if rail else "iperf3"
                    out.append(Measurement(name, direction, None, unit, floor,
                                           error=f"{tool}: could not connect to the peer (simulated link down)"))
                    continue
                value = rate * share * factor * self._noise(round_no, a, b, name, direction)
                out.append(Measurement(name, direction, round(min(value, rate), 3), unit, floor))
        lat = [self._latency(round_no, a, b, rail, floors) for rail in self.rails] if tests is None or "lat" in tests else []
        return PairResult(round_no, a, b, out, latencies=lat)

    def run_group(self, round_no: int, nodes: tuple[str, ...], floors: Floors, tests: list[str]) -> GroupResult:
        """A group test (nodeqc.fabric.groups): each collective in `tests` across every GPU of the
        group's nodes (GROUP_GPUS each). Healthy: NVIDIA's two-node H100 figures (HEALTHY_BUSBW), the
        all-to-all's scaled to the node count (scoring.alltoall_bus_factor), each at the share the
        group's worst path leaves (a node, a link between two of its nodes, an uplink any two cross,
        a rail: NCCL stripes every rail, so the slowest holds every step). An estimate, not a
        measurement: no multi-node NCCL has run on real nodes here."""
        k, out, latencies, g = len(nodes), [], [], self.gpus
        domain = shared_domain(nodes, self.domains)
        # Within a multi-node NVLink domain the all-reduce runs over NVLink (NVIDIA's 882.5 GB/s over four
        # GB200 nodes), unless the domain's NVLink, or a member's, is down: then NCCL falls back to the
        # NICs (191.4 GB/s measured so). A rack-scale cluster's all-reduce across domains is that too.
        nvlink_up = domain is not None and domain not in self.faults.nvlink and not (set(nodes) & self.faults.nvlink)
        factor = self._group_factor(nodes, nics=not nvlink_up)
        down = [n for n in nodes if self.faults.node.get(n) == 0.0]
        for test in tests:
            op = COLLECTIVES[test]
            floor = floors.busbw(test, k, g, domain is not None)
            if down:
                out.append(Measurement(test, "both", None, "GB/s", floor, error=f"{few(down)} did not come to the "
                                       "NCCL rendezvous (simulated node down)"))
                continue
            if factor == 0.0:
                out.append(Measurement(test, "both", None, "GB/s", floor, error="rank 0: NCCL error: remote process "
                                       "exited or there was a network error (simulated link down)"))
                continue
            wrong = [n for n in nodes if self.faults.nccl.get(n) == 0.0]
            if wrong:
                rank = nodes.index(wrong[0]) * g
                out.append(Measurement(test, "both", None, "GB/s", floor, error=f"{wrong[0]}: rank {rank}: "
                                       f"{wrong_result(op)}: 1 of 33554432 elements wrong (simulated)"))
                continue
            scale = alltoall_bus_factor(k, g) / alltoall_bus_factor(2, g) if test == "alltoall" else 1
            healthy = HEALTHY_BUSBW[test]
            if test == "nccl" and self.domains:
                healthy = NVLINK_BUSBW if nvlink_up else NVLINK_FALLBACK_BUSBW
            busbw = healthy * scale * factor * self._noise(round_no, nodes, test)
            out.append(Measurement(test, "both", round(busbw, 3), "GB/s", floor))
            # One step: each GPU's 1 GiB at algbw = busbw / the collective's bus factor.
            bus = (2 if op == "all_reduce" else 1) * (k * g - 1) / (k * g)
            p50 = BUFFER_BYTES / (busbw / bus * 1e9) * 1e3
            p99 = p50 * (1 + 4 * NOISE) + (STRAGGLER_STALL_MS if any(n in self.faults.straggler for n in nodes) else 0)
            latencies.append(Latency(test, round(p50, 3), round(p99, 3), "ms", nccl_step_floor(round(p50, 3))))
        return GroupResult(round_no, tuple(nodes), out, latencies=latencies, nvlink=domain)

    def _group_factor(self, nodes: tuple[str, ...], nics: bool = True) -> float:
        """The share the group's worst path leaves; `nics` False: its collective runs over NVLink, so
        links, uplinks and rails between the nodes are not on its path (their GPUs' are)."""
        members = set(nodes)
        if not nics:
            return min([1.0, *(x for n, x in self.faults.nccl.items() if n in members and x > 0)])
        f = min([1.0, *(self.faults.node.get(n, 1.0) for n in nodes),
                 *(x for n, x in self.faults.nccl.items() if n in members and x > 0),
                 *(x for (a, b), x in self.faults.link.items() if a in members and b in members)])
        if self.faults.uplink and self.topology is not None:
            leaves = {}
            for n in nodes:
                leaves.setdefault(self.topology.leaf_of.get(n), n)
            ends = list(leaves.values())
            f = min([f, *(self.faults.uplink.get(sw, 1.0) for i, a in enumerate(ends) for b in ends[i + 1:]
                          for sw in self.topology.crossed(a, b))])
        for rail in self.rails:
            f = min([f, self.faults.rail.get(rail, 1.0), *(self.faults.port.get((n, rail), 1.0) for n in nodes)])
        return f

    def _latency(self, round_no: int, a: str, b: str, rail: str, floors: Floors) -> Latency:
        floor = lat_floor(floors.lat_p99_us)
        if self._factor(a, b, rail) == 0.0:
            return Latency(rail, None, None, "us", floor, LAT_P50_FLOOR_US,
                           error="ib_write_lat: could not connect to the peer (simulated link down)")
        p50 = round(LAT_P50_US * self._noise(round_no, a, b, rail, "lat"), 3)
        p99 = p50 + LAT_TAIL_US * self._noise(round_no, a, b, rail, "tail")
        if a in self.faults.straggler or b in self.faults.straggler:
            p99 = STRAGGLER_P99_US * self._noise(round_no, a, b, rail, "stall")
        return Latency(rail, p50, round(p99, 3), "us", floor, LAT_P50_FLOOR_US, p999=round(max(p99, LAT_P999_US), 3))

    def outcomes(self, scores: Scores, covered: Coverage, groups: GroupScores | None = None) -> list[dict[str, str]]:
        """Each planted fault: `found` (named as planted, or masked by a fault that was: a port on
        a bad rail or of a bad node), `untested` (no test crossed it: the report lists it so),
        `inconclusive` (a node it touches could not be judged: exit 2), `blamed elsewhere` (the run
        fails a node on its path instead: too few nodes to tell, e.g. a rail of a two-node fabric),
        `within the floors` (no node it touches failed any test: a fault too mild for the floors,
        node1:slow=0.9) or `missed` (none of these: a failure not put on the fault, which
        tests/test_fabric_coverage.py holds never happens)."""
        bad_links = {(a, b) for a, b, _ in scores.bad_links}
        # Nodes in any test that failed: a fault none of whose nodes failed anything was milder than
        # the floors (node1:slow=0.9 passed every test: "missed" said a silent pass, 2026-11-29).
        failing = {n for (n, _), p in scores.ports.items() if p.raw_fails} | (
            {n for u in groups.units if u.outcome == "fail" for n in u.nodes} if groups is not None else set())
        if scores.tails is not None:  # a latency tail over its floor is a failed test too
            failing |= set(scores.tails.stragglers) | {n for t in scores.tails.pairs_high for n in (t.a, t.b)}
            if scores.tails.fabric_wide:
                failing |= set(self.nodes)
        grouped = set(groups.bad_nodes) if groups is not None else set()
        together = [set(f.nodes) for f in groups.findings if f.kind != "node"] if groups is not None else []
        out = []
        for text, kind, where in self.injected:
            if kind == "nvlink":  # a domain's multi-node NVLink: named as the domain's
                found = groups is not None and any(f.kind == "nvlink" and groups.domains.get(f.nodes[0]) == where[0]
                                                   for f in groups.findings)
                untested = groups is None or not any(r.nvlink == where[0] for r in groups.results)
            elif kind in ("nccl", "nvlink node"):  # group tests only: a pair test loads the NICs, not this path
                found = where[0] in grouped
                untested = groups is None or not any(where[0] in r.nodes for r in groups.results)
            elif kind == "straggler":
                found = scores.tails is not None and where[0] in scores.tails.stragglers
                untested = not any(where[0] in (t.a, t.b) for t in (scores.tails.judged if scores.tails else []))
            elif kind == "node":  # (or with its leaf, where every node under it is down: fabric.leaf)
                found = where[0] in scores.bad_nodes or any(where[0] in leaf.nodes for leaf in scores.bad_leaves)
                untested = not any(
                    (where[0], rl) not in covered.untested_ports for rl in covered.rails)
            elif kind == "port":
                found = where in scores.bad_ports or where[0] in scores.bad_nodes or where[1] in scores.bad_rails
                untested = where in covered.untested_ports or where[1] in covered.untested_rails
            elif kind == "rail":
                found, untested = where[0] in scores.bad_rails, where[0] in covered.untested_rails
            elif kind == "uplink":
                # every failing test also crossed the far side's uplinks: named "or" them (uplinks.Uplink.alternatives)
                # and a switch that holds only one below it is crossed by the same tests (uplinks.Uplink.same)
                named = [*scores.bad_uplinks, *(f.uplink for f in (groups.findings if groups else []) if f.uplink)]
                found = any(where[0] in (u.switch, *u.alternatives, *u.same) or (self.topology is not None and any(
                            self.topology.below(a) == self.topology.below(where[0]) for a in u.alternatives))
                            for u in named)
                # (group tests across leaves cross it too, nodeqc.fabric.crossing)
                untested = all((where[0], rl) in covered.untested_uplinks for rl in covered.rails) and not (
                    groups is not None and self.topology is not None and any(
                        u.kind == "cross" and u.result is not None and where[0] in self.topology.crossed(a, b)
                        for u in groups.units for a in u.nodes for b in u.nodes if a < b))
            else:
                found = where in bad_links or any(set(where) <= t for t in together)
                untested = not covered.pair_tested(*where) and not (groups is not None and groups.together(*where))
            touched = (where if kind == "link" else where[:1] if kind in ("node", "port", "straggler", "nccl", "nvlink node")
                       else tuple(n for n, d in self.domains.items() if d == where[0]) if kind == "nvlink"
                       else tuple(sorted(self.topology.below(where[0]))) if kind == "uplink" and self.topology
                       else tuple(self.nodes))
            if kind in ("node", "port", "straggler") and not found and where[0] in grouped:
                found = True  # the group tests named the node
            # A fault of the collectives' path is judged by the group tests alone (no pair test ran
            # leaves every node "inconclusive" in the pairs' scores: a group run's node1:nccl=0.5 was
            # said not judged where its groups had passed it).
            group_kind = kind in ("nccl", "nvlink node", "nvlink")
            unjudged = [n for n in touched if (n in scores.inconclusive and not group_kind)
                        or (groups is not None and n in groups.not_judged)]
            blamed = [n for n in touched if scores.node_verdict(n) == "fail"] + [
                "-".join(sorted(t)) for t in together if set(touched) & t] + [
                f"{a}-{b}" for a, b in sorted(bad_links) if kind in ("node", "port", "straggler") and {a, b} & set(touched)] + [
                f"{'-'.join(sorted((t.a, t.b)))}'s tail" for t in (scores.tails.pairs_high if scores.tails else [])
                if kind in ("node", "straggler") and {t.a, t.b} & set(touched)]
            blamed = list(dict.fromkeys(blamed))
            state = ("found" if found else "untested" if untested else "inconclusive" if unjudged
                     else "blamed elsewhere" if blamed else "within the floors" if not set(touched) & failing
                     else "missed")
            if kind == "link" and state == "untested":
                why = f"the pair {where[0]}-{where[1]} was never tested (listed in the report's untested pairs)"
            elif state == "found":
                why = "named in the report"
            elif state == "inconclusive":
                why = f"{few(unjudged)} could not be judged (the tests cannot tell the fault's place)"
            elif state == "blamed elsewhere":
                why = f"the run fails {few(blamed)}, on its path, not the fault itself"
            elif state == "within the floors":
                why = "every test it touched passed its floors: milder than the floors tell from health"
            else:
                why = "no test crossed it" if untested else "NOT FOUND, and tested"
            out.append({"fault": text, "outcome": state, "why": why})
        return out

    def planted(self) -> dict[str, set]:
        """What was injected, in the scoring's terms (for tests and the benchmark)."""
        down_nodes = set(self.faults.node)
        # A port on a rail that is bad across the fabric is masked by it: nothing can tell them apart.
        ports = {p for p in self.faults.port if p[1] not in self.faults.rail}
        # A node with more than half its rails bad is a bad node, as the scoring says.
        for n in {n for n, _ in ports}:
            own = [p for p in ports if p[0] == n]
            if self.rails and len(own) * 2 > len(self.rails):
                down_nodes.add(n)
                ports -= set(own)
        return {"nodes": down_nodes, "ports": ports, "rails": set(self.faults.rail), "links": set(self.faults.link),
                "uplinks": set(self.faults.uplink), "stragglers": set(self.faults.straggler)}

