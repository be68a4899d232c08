"""`nodeqc fabric`: qualify many nodes together by rounds of random pairs, and `nodeqc fabric
worker` (the per-node work of one pair, started by the launcher on each node).

Progress goes to stderr, the signed report's path is the last line of stdout; exit 0 the fabric
passed, 1 something failed (a node, a rail, a link), 2 something could not be judged.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import signal
import sys
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nodeqc.backends.nic import IPERF3_MAX_S
from nodeqc.core.arguments import Parser, decimal_number, number_in, whole_number
from nodeqc.core.errors import UsageError
from nodeqc.core.names import check_host, check_name, check_nodelist
from nodeqc.core.safefile import UnreadableInput, as_text, read_input
from nodeqc.core.stamps import current_user, utc_now
from nodeqc.core.text import few, is_digits
from nodeqc.fabric import pairing
from nodeqc.fabric.nccl_group import COLLECTIVES
from nodeqc.fabric.worker import MAX_NCCL_BYTES, NCCL_PORT_OFFSET, PORTS_PER_PAIR

TESTS = ("tcp", "rdma", "nccl", "allgather", "alltoall", "lat")
PORT_ENV = "NODEQC_FABRIC_PORT"  # the --port default: one fabric run's ports apart from another's on shared hosts
DEFAULT_PORT = 15201
# A floor given on the command line: nan passed every pair (each comparison with it is false). Up to
# 10^6 GB/s or Gb/s, far above any link or bus.
FLOOR = number_in(0, 1e6)
# Each NCCL collective's floor: the profile's [nic] key and the flag that replaces it, and which
# profiles carry a published figure.
COLLECTIVE_FLOORS = {"nccl": ("min_fabric_nccl_busbw_gbps", "min_nccl_busbw"),
                     "allgather": ("min_fabric_allgather_busbw_gbps", "min_allgather_busbw"),
                     "alltoall": ("min_fabric_alltoall_busbw_gbps", "min_alltoall_busbw")}
COLLECTIVE_SOURCES = {"nccl": "hgx-h100 and dgx-a100 carry OCI's published figures",
                      "allgather": "hgx-h100, hgx-b200 and gb200-nvl72-tray carry Google cluster-health-scanner's",
                      "alltoall": "hgx-h100 carries one from NVIDIA's measured two-node figure"}
NVLINK_FLOOR = "min_fabric_nvlink_busbw_gbps"  # [nic]: the all-reduce within a multi-node NVLink domain


def _parser() -> Parser:
    p = Parser(prog="nodeqc fabric", description="Qualify a set of nodes together: rounds of random pairs "
               "(seeded), every pair of a round at once, each node scored by its pass ratio and each rail by its "
               "results; with --group-size, NCCL's collectives across groups of nodes, a failing group split until "
               "the node, path or NVLink domain is found; a signed fabric report names the bad node, the bad rail "
               "or the bad link.",
               epilog="The per-node work is `nodeqc fabric worker` (started by the launcher).")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--slurm", metavar="NODELIST", nargs="?", const="",
                       help="the nodes of this Slurm job (default: $SLURM_JOB_NODELIST); one srun step per pair")
    where.add_argument("--hosts", metavar="H1,H2,..|@FILE", help="a plain host list; --launch runs the work on a host")
    where.add_argument("--k8s", metavar="N1,N2,..|@FILE", help="Kubernetes nodes (kubectl get nodes names); "
                       "each round is one Indexed Job through kubectl (needs --image)")
    where.add_argument("--simulate", metavar="N", type=whole_number, help="a simulated cluster of N nodes (node0..)")
    p.add_argument("--launch", metavar="PREFIX", help="with --hosts: the command prefix that runs a command on "
                   "{host}, e.g. 'ip netns exec {host}' or 'pdsh -N -w {host}'")
    p.add_argument("--image", help="--k8s: the container image with nodeqc, perftest and iperf3")
    p.add_argument("--namespace", default="nodeqc", help="--k8s: where the Jobs run (default nodeqc; "
                   "packaging/k8s/rbac.yaml)")
    p.add_argument("--topology", metavar="slurm|k8s|FILE", help="where the switches are: `scontrol show topology`, "
                   "the Kubernetes nodes' labels, or a file in topology.conf's syntax (SwitchName=X Nodes=.. "
                   "Switches=..); pairs are then chosen within a leaf, across leaves and across spines, and a bad "
                   "switch uplink is named as such")
    p.add_argument("--topology-label", default="", metavar="leaf=L,spine=S,zone=Z,nvlink=D",
                   help="--topology k8s: the node labels of each level (default: topograph's "
                   "network.topology.nvidia.com/block and /spine, topology.kubernetes.io/zone, nvidia.com/gpu.clique)")
    p.add_argument("--leaves", type=whole_number, default=0, help="--simulate: leaf switches (L0..), the nodes spread over them")
    p.add_argument("--spines", type=whole_number, default=0, help="--simulate: spine switches (S0..) above the leaves")
    p.add_argument("--rails", type=whole_number, default=8, help="--simulate: RDMA rails per node (0: TCP only; default 8)")
    p.add_argument("--nvlink-domain", type=whole_number, default=0, metavar="N", help="--simulate: multi-node NVLink domains "
                   "of N nodes each (D0..; a GB200 NVL72 rack holds 18 trays): group tests within one run over NVLink")
    p.add_argument("--inject", metavar="FAULT", action="append", default=[],
                   help="--simulate: nodeN:slow=F, nodeN:down, nodeN:railR=F, nodeN:railR:down, railR=F, "
                        "link:nodeA-nodeB=F, leaf:L3:slow=F, spine:S1:down, ... (repeatable)")
    p.add_argument("--tests", default="tcp,rdma", metavar="tcp,rdma,nccl,allgather,alltoall,lat", help="what each "
                   "pair runs (default tcp,rdma; RDMA is skipped, saying so, where a node has no RDMA port; nccl, "
                   "allgather, alltoall: NCCL's all-reduce, all-gather and all-to-all over both nodes' GPUs; lat: "
                   "ib_write_lat per rail, its tail judged, a straggler named; --simulate: rdma,lat)")
    p.add_argument("--profile", default="generic", metavar="NAME|PATH", help="floors from its [nic] "
                   "min_rdma_fraction and min_tcp_fraction (default: generic)")
    p.add_argument("--min-tcp-gbps", type=FLOOR, metavar="GBPS", help="absolute TCP floor per direction (replaces the fraction)")
    p.add_argument("--min-rdma-gbps", type=FLOOR, metavar="GBPS", help="absolute RDMA floor per rail and direction")
    p.add_argument("--min-nccl-busbw", type=FLOOR, metavar="GBPS", help="two-node NCCL all-reduce bus bandwidth floor, GB/s")
    p.add_argument("--min-allgather-busbw", type=FLOOR, metavar="GBPS", help="two-node NCCL all-gather bus bandwidth floor, GB/s")
    p.add_argument("--min-alltoall-busbw", type=FLOOR, metavar="GBPS", help="two-node NCCL all-to-all bus bandwidth floor, GB/s")
    p.add_argument("--min-nvlink-busbw", type=FLOOR, metavar="GBPS", help="NCCL all-reduce bus bandwidth floor of a group "
                   "within one multi-node NVLink domain, GB/s (default: the profile's; gb200-nvl72-tray carries one)")
    p.add_argument("--max-lat-p99-us", type=number_in(0, 1e7), metavar="USEC", help="ib_write_lat's 99th percentile floor per "
                   "pair and rail (default 20 usec: nodeqc/fabric/tails.py says why)")
    p.add_argument("--seconds", type=number_in(0, IPERF3_MAX_S, above=True),
                   help="seconds of each traffic test (default: the profile's traffic_s)")
    p.add_argument("--port", type=whole_number, metavar="PORT", help=f"the first port the pair tests use: pair k of a round takes "
                   f"PORT+{PORTS_PER_PAIR}k and up (iperf3, perftest), and PORT+{NCCL_PORT_OFFSET}+{PORTS_PER_PAIR}k and "
                   f"the next for NCCL (default ${PORT_ENV}, else {DEFAULT_PORT})")
    p.add_argument("--nccl-bytes", type=number_in(4, MAX_NCCL_BYTES, whole=True), metavar="BYTES",  # 4: a float32 a GPU
                   help="each GPU's buffer in the NCCL tests: what it "
                   "all-reduces, gathers in all, sends in all to the others (default 1 GiB: bandwidth-bound)")
    p.add_argument("--group-size", metavar="K|auto", help="run the collectives of --tests (nccl, allgather, "
                   "alltoall) across groups of K nodes at once instead of pairs, after the pair rounds; a failing "
                   "group is split in halves and each suspect confirmed against a known-good partner (NVIDIA's "
                   "ADR-055; nodeqc/fabric/groups.py); auto: about the square root of the node count")
    p.add_argument("--rounds", type=whole_number, help="rounds of pairs (default: as many as --confidence needs)")
    p.add_argument("--adaptive", action="store_true", help="one round pairing every node, then only the suspects, "
                   "each against known-good partners until two agree (fewer tests and rounds; nodeqc/fabric/adaptive.py)")
    p.add_argument("--confidence", type=decimal_number, default=pairing.DEFAULT_CONFIDENCE,
                   help=f"chance that no node is misattributed (default {pairing.DEFAULT_CONFIDENCE})")
    p.add_argument("--bad-fraction", type=decimal_number, default=pairing.DEFAULT_BAD_FRACTION,
                   help=f"the most nodes that may be bad, as a fraction, planned for (default {pairing.DEFAULT_BAD_FRACTION})")
    p.add_argument("--seed", type=whole_number, help="pairing seed (default: from the clock; recorded in the report)")
    p.add_argument("--name", help="the fabric's name in the archive (default: the Slurm job id, else 'fabric')")
    p.add_argument("--address", metavar="NODE=ADDR", action="append", default=[],
                   help="where a node is reached for data traffic, when not by its name (repeatable)")
    p.add_argument("--use-cuda", action="store_true", help="RDMA from GPU memory (ib_write_bw --use_cuda)")
    p.add_argument("--nodeqc", default="nodeqc", metavar="CMD", help="the command that runs nodeqc on the nodes")
    p.add_argument("--drain", action="store_true", help="--slurm: drain the nodes that fail, reason 'nodeqc: ...'")
    p.add_argument("--out", metavar="DIR", help="write the report here instead of the archive")
    p.add_argument("--archive", metavar="DIR", help="the report archive (default: $NODEQC_ARCHIVE or the per-user "
                   "one; with --simulate, the per-user archive of simulated runs)")
    p.add_argument("--key", metavar="PEM", help="Ed25519 private key to sign with")
    p.add_argument("--operator", metavar="NAME")
    p.add_argument("--ticket", metavar="ID")
    return p


def main(argv: list[str]) -> int:
    if argv[:1] == ["worker"]:
        from nodeqc.fabric.worker import main as worker_main

        return worker_main(argv[1:])
    args = _parser().parse_args(argv)
    return run(args, argv)


def _topology(args: argparse.Namespace) -> Any:
    """The topology --topology names (before the nodes: a simulated cluster takes it too), or None."""
    from nodeqc.fabric.topology import read

    if args.topology_label and args.topology != "k8s":
        raise UsageError("--topology-label names Kubernetes node labels: it needs --topology k8s")
    if (args.leaves or args.spines) and args.simulate is None:
        raise UsageError("--leaves and --spines shape the simulated cluster: they need --simulate")
    if args.topology is None:
        return None
    if args.topology in ("slurm", "k8s") and args.simulate is not None:
        raise UsageError(f"--topology {args.topology}: a simulated cluster takes --leaves/--spines or --topology FILE")
    return read(args.topology, args.topology_label)


def _nodes(args: argparse.Namespace, topology: Any = None) -> tuple[list[str], Any, Any]:
    """(nodes, launcher, simulated cluster or None)."""
    from nodeqc.fabric.launchers import HostLauncher, SimulatedLauncher, SlurmLauncher, in_allocation
    from nodeqc.fabric.simulated import SimulatedCluster

    if args.simulate is not None:
        cluster = SimulatedCluster.build(args.simulate, args.rails, args.inject, seed=args.seed or 0,
                                         leaves=args.leaves, spines=args.spines, topology=topology,
                                         nvlink=args.nvlink_domain)
        return cluster.nodes, SimulatedLauncher(cluster), cluster
    if args.nvlink_domain:
        raise UsageError("--nvlink-domain shapes the simulated cluster: it needs --simulate (a real cluster's domains "
                         "come from --topology: Slurm's BlockName= lines, or the nodes' nvidia.com/gpu.clique labels)")
    if args.inject:
        raise UsageError("--inject needs --simulate: faults are planted in a simulated cluster only")
    if args.slurm is not None:
        from nodeqc.fabric.slurm import expand

        if not in_allocation():
            raise UsageError("--slurm runs inside a job's allocation (srun steps): e.g. "
                             "salloc -N 16 --exclusive nodeqc fabric --slurm, or the same in an sbatch script")
        nodelist = args.slurm or os.environ.get("SLURM_JOB_NODELIST", "")
        if not nodelist:
            raise UsageError("--slurm: no node list given and $SLURM_JOB_NODELIST is not set")
        check_nodelist(nodelist, "--slurm" if args.slurm else "$SLURM_JOB_NODELIST")
        return expand(nodelist), SlurmLauncher(), None
    if args.k8s is not None:
        from nodeqc.fabric.kubernetes import KubernetesLauncher

        if not args.image:
            raise UsageError("--k8s needs --image IMAGE: the container image the pods run nodeqc from")
        return _host_list("--k8s", args.k8s), KubernetesLauncher(args.image, args.namespace), None
    if not args.launch:
        raise UsageError("--hosts needs --launch PREFIX, the command that runs a command on {host} "
                         "(e.g. 'pdsh -N -w {host}'); under Slurm use --slurm")
    nodes = _host_list("--hosts", args.hosts)
    try:
        launcher = HostLauncher(args.launch)
    except ValueError as e:
        raise UsageError(f"--launch {args.launch}: {e}") from None
    return nodes, launcher, None


MAX_HOST_LIST_BYTES = 4 << 20  # 100,000 names of 40 characters


def _host_list(flag: str, given: str) -> list[str]:
    """H1,H2,.. or @FILE (names separated by commas, spaces or lines; `#` starts a comment, as in
    the host files of pdsh and Slurm's hostfile). Each name is checked before anything runs (it
    becomes a word of a launcher's argv), and a bad one is named with its file and line."""
    if not given.startswith("@"):
        return [check_host(h, flag) for h in given.replace(",", " ").split() if h]
    try:
        text = as_text(read_input(Path(given[1:]), MAX_HOST_LIST_BYTES, "host list"))
    except UnreadableInput as e:
        raise UsageError(f"{flag} {given}: {e}") from None
    names = []
    for number, line in enumerate(text.split("\n"), 1):
        for h in line.split("#", 1)[0].replace(",", " ").split():
            names.append(check_host(h, f"{flag} {given[1:]}:{number}:"))
    return names


def _validate(args: argparse.Namespace, nodes: list[str]) -> list[str]:
    tests = [t.strip() for t in args.tests.split(",") if t.strip()]
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise UsageError(f"--tests {args.tests}: expected some of {', '.join(TESTS)}")
    if len(nodes) < 2:
        raise UsageError(f"a fabric needs at least two nodes, got {len(nodes)}: {', '.join(nodes) or 'none'}")
    # Once each, as DNS compares names: without case, and "a." is "a". Counted, not searched: 100,000
    # names (a 4 MB --hosts file) took minutes with a search per name.
    key = lambda n: n.lower().rstrip(".")  # noqa: E731
    seen = Counter(key(n) for n in nodes)
    twice = sorted(k for k, count in seen.items() if count > 1)
    if twice:
        spelt = sorted({n for n in nodes if key(n) == twice[0]})
        also = f" (as {', '.join(spelt)}: host names are the same without case or a final '.')" if len(spelt) > 1 else ""
        raise UsageError(f"node {spelt[0]} is listed twice{also}")
    most = (65535 - NCCL_PORT_OFFSET - 1024) // PORTS_PER_PAIR
    if len(nodes) > most:
        raise UsageError(f"{len(nodes)} nodes: one fabric run takes at most {most} (its ports, {PORTS_PER_PAIR} "
                         "a node, come from one range of 1024 to 65535)")
    if args.rounds is not None and not 1 <= args.rounds <= pairing.MAX_ROUNDS:
        raise UsageError(f"--rounds {args.rounds}: expected 1 to {pairing.MAX_ROUNDS}")
    if not 0 < args.confidence < 1:
        raise UsageError(f"--confidence {args.confidence:g}: expected a probability between 0 and 1, e.g. 0.999")
    if not 0 <= args.bad_fraction < 1:
        raise UsageError(f"--bad-fraction {args.bad_fraction:g}: expected 0 to below 1, e.g. 0.1")
    for flag in ("min_tcp_gbps", "min_rdma_gbps", "min_nccl_busbw", "min_allgather_busbw", "min_alltoall_busbw",
                 "min_nvlink_busbw",
                 "max_lat_p99_us", "seconds"):
        v = getattr(args, flag)
        if v is not None and not (v > 0 and v < float("inf")):
            raise UsageError(f"--{flag.replace('_', '-')} {v:g}: expected a number above zero")
    if args.port is None:
        text = os.environ.get(PORT_ENV, "") or str(DEFAULT_PORT)
        if not is_digits(text):
            raise UsageError(f"${PORT_ENV} {text!r}: expected a port number")
        args.port = int(text)
    if not 1024 <= args.port <= 65535 - NCCL_PORT_OFFSET - PORTS_PER_PAIR * len(nodes):
        raise UsageError(f"--port {args.port}: expected 1024 to {65535 - NCCL_PORT_OFFSET - PORTS_PER_PAIR * len(nodes)} "
                         f"(each pair of a round takes {PORTS_PER_PAIR} ports from it, and NCCL {NCCL_PORT_OFFSET} above)")
    if args.group_size is not None:
        from nodeqc.fabric.groups import auto_size

        given = args.group_size
        args.group_size = auto_size(len(nodes)) if given == "auto" else int(given) if is_digits(given) else 0
        if not 3 <= args.group_size <= len(nodes):
            raise UsageError(f"--group-size {given}: expected 3 to the node count ({len(nodes)}), or auto (two is "
                             "a pair: without --group-size the collectives run in the pair rounds)")
        if not any(t in COLLECTIVES for t in tests):
            raise UsageError(f"--group-size: --tests {args.tests} has no collective to run in groups "
                             f"({', '.join(COLLECTIVES)})")
    if args.drain and args.slurm is None:
        raise UsageError("--drain drains Slurm nodes: it needs --slurm")
    if args.image and args.k8s is None:
        raise UsageError("--image is the Kubernetes pods' image: it needs --k8s")
    return tests


def _addresses(texts: list[str], nodes: list[str]) -> dict[str, str]:
    out = {}
    for t in texts:
        node, sep, addr = t.partition("=")
        if not sep or not addr:
            raise UsageError(f"--address {t}: expected NODE=ADDR")
        if node not in nodes:
            raise UsageError(f"--address {t}: {node} is not one of the nodes")
        # The address reaches the workers' argv, joined with ',' and ' ', and then iperf3's and ip's:
        # one with a ',' or a space rewrote another node's address, one starting with '-' was an option.
        out[node] = check_host(addr, f"--address {node}=")
    return out


def run(args: argparse.Namespace, argv: list[str]) -> int:
    from nodeqc.fabric.launchers import Work
    from nodeqc.fabric.report import exit_code, pair_rows, write_report
    from nodeqc.fabric.scoring import Floors, score
    from nodeqc.report.journal import Journal
    from nodeqc.report.keys import load_signer
    from nodeqc.run.flow import ensure_writable
    from nodeqc.spec.profile import load_profile

    topology = _topology(args)
    nodes, launcher, cluster = _nodes(args, topology)
    tests = _validate(args, nodes)
    if cluster is not None:
        topology = cluster.topology
    elif topology is not None:
        topology = topology.restrict(nodes, args.topology)
    grouped = [t for t in tests if t in COLLECTIVES] if args.group_size else []
    if cluster is not None and not grouped:
        # Planted there, with no group test to find it, it went untested and the run passed.
        only = [text for text, kind, _ in cluster.injected if kind in ("nccl", "nvlink node", "nvlink")]
        if only:
            raise UsageError(f"--inject {only[0]}: a fault of the collectives' path shows only in group tests: "
                             "add --group-size K (or auto)")
    if cluster is not None:
        simulated = ["rdma", "lat"] if cluster.rails else ["tcp"]
        if args.tests != "tcp,rdma" and not set(tests) <= set(simulated + grouped):
            raise UsageError(f"--tests {args.tests}: the simulated cluster runs {','.join(simulated)} "
                             f"({'RDMA and its latency per rail; --rails 0 for TCP' if cluster.rails else 'TCP: no rails'})"
                             ", and the collectives in groups (--group-size)")
        tests = [t for t in simulated if args.tests == "tcp,rdma" or t in tests] + grouped
    pair_tests = [t for t in tests if t not in grouped]
    profile = load_profile(args.profile)
    frac = profile.threshold("nic", "min_rdma_fraction")
    tfrac = profile.threshold("nic", "min_tcp_fraction")
    busbw: dict[str, float | None] = {}
    for test, (key, flag) in COLLECTIVE_FLOORS.items():
        given = profile.threshold("nic", key)
        busbw[test] = getattr(args, flag) or (given.fail if given else None)
        if test in tests and busbw[test] is None:
            raise UsageError(f"--tests {test} needs a floor: profile {profile.name} sets no [nic] {key}; give "
                             f"--{flag.replace('_', '-')} GBPS ({COLLECTIVE_SOURCES[test]})")
    floors = Floors(rdma_fraction=frac.fail if frac else None, tcp_fraction=tfrac.fail if tfrac else None,
                    rdma_gbps=args.min_rdma_gbps, tcp_gbps=args.min_tcp_gbps, nccl_busbw_gbps=busbw["nccl"],
                    allgather_busbw_gbps=busbw["allgather"], alltoall_busbw_gbps=busbw["alltoall"],
                    lat_p99_us=args.max_lat_p99_us, nvlink_busbw_gbps=args.min_nvlink_busbw or (
                        nvlink_floor.fail if (nvlink_floor := profile.threshold("nic", NVLINK_FLOOR)) else None))
    seconds = args.seconds or float(profile.get("nic", "traffic_s", 10))
    seed = args.seed if args.seed is not None else int(time.time())
    if args.rounds:
        rounds_n, reason = args.rounds, "given with --rounds"
    else:
        rounds_n = pairing.rounds_needed(len(nodes), args.confidence, args.bad_fraction)
        reason = f"the fewest for {args.confidence:g} confidence with at most {args.bad_fraction:.0%} of nodes bad"
    if args.adaptive:
        if args.rounds:
            raise UsageError("--adaptive chooses its rounds: not with --rounds")
        schedule, reason = [], "adaptive: every node once, then each suspect against known-good partners"
        if topology is not None:
            leaves = len(set(topology.leaf_of.values()))
            reason = (f"adaptive over the topology: every node once within its leaf, then each suspect against "
                      f"known-good partners nearest it, and the uplinks between known-good nodes "
                      f"({leaves} leaves, {topology.source})")
        rounds_n = 0
    elif topology is not None:
        schedule = pairing.topology_schedule(nodes, topology, rounds_n, seed)
        if len(schedule) > rounds_n:
            reason += f"; {len(schedule)} to test each level of the topology twice"
        rounds_n = len(schedule)
        leaves = len(set(topology.leaf_of.values()))
        reason += f"; within and across {leaves} leaves ({topology.source})"
    else:
        schedule = pairing.schedule(nodes, rounds_n, seed)
    if not pair_tests:  # every test a collective, run in groups: no pair round
        schedule, rounds_n, reason = [], 0, "no pair test: the collectives run in groups"
    reached = pairing.confidence_reached(pairing.distinct_peers(schedule), args.bad_fraction)
    if pair_tests and not args.rounds and not args.adaptive and topology is None and reached < args.confidence:
        # Too few nodes for the target: say so, not "the fewest for 0.999" beside a lower figure.
        distinct = pairing.distinct_rounds(len(nodes))
        reason = (f"{args.confidence:g} confidence is out of reach: only {distinct} distinct "
                  f"round{'s are' if distinct != 1 else ' is'} possible with {len(nodes)} nodes"
                  if rounds_n >= distinct else
                  f"the most nodeqc plans, short of {args.confidence:g} confidence")
    name = args.name or (f"job{os.environ['SLURM_JOB_ID']}" if args.slurm is not None and os.environ.get("SLURM_JOB_ID")
                         else "simulated" if cluster is not None else "fabric")
    # The name is part of the report's file name: it must not lead out of the output directory.
    check_name(name, "--name" if args.name else "$SLURM_JOB_ID")
    out_dir = _out_dir(args, name)
    signer = load_signer(args.key)
    addresses = _addresses(args.address, nodes)
    if launcher.name == "kubernetes":
        # kubectl, the cluster, the nodes, the right to create Jobs; the GPUs a pod asks for (NCCL)
        launcher.preflight(nodes, addresses, profile.get("gpu", "count"))
    domains = cluster.domains if cluster is not None else topology.nvlink if topology is not None else {}
    if cluster is not None and profile.get("gpu", "count"):
        cluster.gpus = int(profile.get("gpu", "count"))  # the simulated nodes' GPUs are the profile's
    try:
        command = shlex.split(args.nodeqc)
    except ValueError as e:
        raise UsageError(f"--nodeqc {args.nodeqc}: {e}") from None
    work = Work(tests=pair_tests, seconds=seconds, floors=floors, streams=int(profile.get("nic", "streams", 4)),
                use_cuda=args.use_cuda, nodeqc=command, addresses=addresses, nccl_bytes=args.nccl_bytes,
                port_base=args.port, nvlink=dict(domains))

    # The journal: every round's pair results appended and synced as they come, so a fabric run
    # that is killed leaves what it had measured (the report records the journal's sha256).
    ensure_writable(out_dir)
    stem = _unique_stem(out_dir, f"fabric-{name}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}")
    journal = Journal(out_dir / f"{stem}.journal.jsonl")
    journal.append({"type": "run_started", "node": {"hostname": f"fabric-{name}"}, "profile": {"name": profile.name},
                    "started_at": utc_now(), "simulated": cluster is not None,
                    "fabric": {"nodes": nodes, "rounds": rounds_n, "seed": seed, "tests": tests}})
    say(f"nodeqc fabric: {len(nodes)} nodes, "
        + (f"adaptive rounds (seed {seed}; {reason})" if args.adaptive and pair_tests else
           f"{rounds_n} rounds (seed {seed}; {reason}; confidence reached {reached:.4g})" if pair_tests else
           f"no pair rounds (seed {seed}; {reason})")
        + f", tests {','.join(pair_tests) or 'none in pairs'}, launcher {launcher.name}"
        + (f"; then {','.join(grouped)} in groups of {args.group_size}" if grouped else "")
        + ("  ** SIMULATED **" if cluster is not None else ""))
    started_at, t0 = utc_now(), time.monotonic()
    results: list[Any] = []
    groups = None
    aborted = {"flag": False}

    def on_signal(signum: int, frame: Any) -> None:
        if aborted["flag"] and signum == signal.SIGINT:
            raise KeyboardInterrupt
        aborted["flag"] = True
        say(f"nodeqc fabric: {signal.Signals(signum).name}: stopping; writing the report of what ran "
            "(Ctrl-C again to quit at once)")
        launcher.abort()

    def play(rnd: Any) -> list[Any]:
        if aborted["flag"]:
            raise _Stopped
        done = launcher.run_round(rnd, work)
        if aborted["flag"]:
            # scancel and systemd's stop signal the whole step, this round's ends too: a test killed
            # halfway reads as failed, and would name a good link bad. Its pairs were not tested.
            done = [replace(r, error=r.error or ABORTED_WHILE_RUNNING) for r in done]
        results.extend(done)
        journal.append({"type": "fabric_round", "round": rnd.number, "pairs": pair_rows(done)})
        failed = [f"{r.a}-{r.b}" for r in done if r.error is None and not all(r.rails().values())]
        errors = [f"{r.a}-{r.b}" for r in done if r.error is not None]
        say(f"[{time.monotonic() - t0:8.1f}s] round {rnd.number}/{'..' if args.adaptive else rounds_n}: {len(done)} pairs"
            + (f", {rnd.sitting_out} sat out" if rnd.sitting_out else "")
            + (f"; failed: {few(failed, 6)}" if failed else "") + (f"; not tested: {few(errors, 6)}" if errors else ""))
        return done

    saved = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if args.adaptive and pair_tests:
            from nodeqc.fabric.adaptive import isolate

            played: list[Any] = []

            def track(rnd: Any) -> list[Any]:
                played.append(rnd)
                return play(rnd)

            try:
                isolate(nodes, track, seed, topology=topology)
            except _Stopped:
                played.pop()
            schedule = played
        else:
            for rnd in schedule:
                try:
                    play(rnd)
                except _Stopped:
                    break
        if grouped:
            groups = _groups(args, nodes, seed, topology, launcher, replace(work, tests=grouped, group=True),
                             len(schedule), journal, t0, aborted, bool(pair_tests))
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    scores = score(nodes, results, topology)
    from nodeqc.fabric.coverage import coverage
    from nodeqc.fabric.report import build_predicate

    covered = coverage(nodes, list(cluster.rails) if cluster is not None else scores.rails, results, topology)

    identities = {n: i for r in [*results, *(groups.results if groups else [])] for n, i in r.identities.items()}
    settings = {"seed": seed, "tests": tests, "seconds": seconds, "confidence": args.confidence,
                **({"group_size": args.group_size, "group_tests": grouped} if grouped else {}),
                "bad_fraction": args.bad_fraction, "rounds_reason": reason,
                "confidence_reached": None if args.adaptive else round(reached, 6),  # adaptive: another math
                "floors": floors.to_dict()}
    simulation = ({"nodes": len(cluster.nodes), "rails": len(cluster.rails), "faults": list(args.inject),
                   "planted": cluster.outcomes(scores, covered, groups)}
                  if cluster is not None else None)
    predicate = build_predicate(
        name=name, launcher=launcher.name, scores=scores, rounds=schedule,
        results=results, identities=identities, settings=settings, profile=profile.summary(),
        simulated=cluster is not None, simulation=simulation, status="aborted" if aborted["flag"] else "complete",
        started_at=started_at, finished_at=utc_now(), duration_s=time.monotonic() - t0,
        operator=args.operator or current_user(), ticket=args.ticket, signer=signer, command=["nodeqc", "fabric", *argv],
        covered=covered, topology=topology, groups=groups, pair_tests=bool(pair_tests))
    journal.append({"type": "run_finished", "verdict": predicate["verdict"], "status": predicate["status"]})
    journal.close()
    predicate["journal"] = {"file": journal.path.name, "sha256": hashlib.sha256(journal.path.read_bytes()).hexdigest()}
    path = out_dir / f"{stem}.report.json"
    write_report(path, predicate, signer)
    _summary(predicate)
    from nodeqc.report.render import planted_line

    for planted in (simulation or {}).get("planted", []):
        say(f"  {planted_line(planted)}")
    if args.drain and (scores.failed or (groups is not None and groups.failed)):
        _drain(predicate, str(path))
    say(f"report: {path}")
    print(path, flush=True)
    return exit_code(predicate)


def _groups(args: argparse.Namespace, nodes: list[str], seed: int, topology: Any, launcher: Any, work: Any,
            after: int, journal: Any, t0: float, aborted: dict[str, bool], pair_tests: bool) -> Any:
    """The group tests (nodeqc.fabric.groups), their rounds numbered after the pair rounds; without
    pair rounds, groups across leaves as well (the uplinks)."""
    from nodeqc.fabric.groups import isolate

    def run_groups(number: int, units: list[tuple[str, ...]]) -> list[Any]:
        done = launcher.run_groups(after + number, units, work)
        if aborted["flag"]:  # as a pair round the abort ended (play): not judged, a test of none
            done = [replace(r, error=r.error or ABORTED_WHILE_RUNNING) for r in done]
        journal.append({"type": "fabric_group_round", "round": after + number,
                        "groups": [{"nodes": list(r.nodes), "outcome": r.outcome, "failed": r.failed(),
                                    **({"error": r.error} if r.error else {})} for r in done]})
        failed = ["-".join(r.nodes) for r in done if r.outcome != "pass"]
        say(f"[{time.monotonic() - t0:8.1f}s] group round {number}: {len(done)} group tests of "
            f"{'/'.join(sorted({str(len(u)) for u in units}))} nodes" + (f"; not passed: {few(failed, 4)}" if failed else ""))
        return done

    return isolate(nodes, args.group_size, run_groups, seed, topology, stopped=lambda: aborted["flag"],
                   domains=work.nvlink, cross=not pair_tests)


ABORTED_WHILE_RUNNING = "the run was aborted while it ran"  # a round's test the abort ended: not tested


class _Stopped(Exception):
    """Ctrl-C or SIGTERM: no further round."""


def _summary(predicate: dict[str, Any]) -> None:
    c = predicate["summary"]["counts"]
    # As a node's run says it: ERROR where nothing failed but something could not be judged (exit 2).
    state = ("ABORTED (not qualified)" if predicate["status"] == "aborted" else
             "ERROR (could not judge: not qualified)" if c.get("error") and not c.get("fail") else
             predicate["verdict"])
    say(f"RESULT: {state}  ({c['pass']} pass, {c['fail']} fail, {c['error']} could not be judged, "
        f"{c['skip']} not measured)")
    for check in predicate["checks"]:
        if check["verdict"] in ("fail", "error", "skip"):
            say(f"  {check['verdict'].upper():<5} {check['name']} {check['subject']}: {check['message']} [{check['code']}]")


def _drain(predicate: dict[str, Any], report: str) -> None:
    from nodeqc.fabric.slurm import drain

    # A node's own failures: its fabric.node check, or its tail (a straggler: fabric.tail NODE).
    nodes = {n["name"] for n in predicate["nodes"]}
    failures: dict[str, str] = {}
    for c in predicate["checks"]:
        if c["name"] in ("fabric.node", "fabric.tail", "fabric.group") and c["verdict"] == "fail" and c["subject"] in nodes:
            failures.setdefault(c["subject"], f"{c['code']} {c['message'][:80]}")
    for d in drain(failures, report):
        say(f"nodeqc fabric: {d.node}: {d.action}: {d.detail}")



def _out_dir(args: argparse.Namespace, name: str) -> Path:
    if args.out:
        return Path(args.out)
    from nodeqc.archive.filing import chosen_archive, node_dir

    return node_dir(f"fabric-{name}", chosen_archive(args.archive, simulated=args.simulate is not None))


def _unique_stem(directory: Path, stem: str) -> str:
    """A file stem no report or journal in the directory has yet, its journal claimed with O_EXCL
    (nodeqc.core.safefile): two runs started together never share one, and nothing is overwritten."""
    from nodeqc.core.safefile import claim

    n, chosen = 1, stem
    while True:
        if not (directory / f"{chosen}.report.json").exists() and claim(directory / f"{chosen}.journal.jsonl"):
            return chosen
        n += 1
        chosen = f"{stem}-{n}"


def say(text: str) -> None:
    """Progress and the summary go to stderr; stdout's last line is the report's path. Escaped as
    `show` does: the messages carry what the nodes' workers said."""
    from nodeqc.core.text import clean

    print(clean(text), file=sys.stderr, flush=True)
