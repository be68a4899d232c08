"""The per-node work of one pair test, run on each of the two nodes at once
(`nodeqc fabric worker`), by srun, a command prefix (`ip netns exec NS`), or a Kubernetes pod; or of
one group test (`--group A,B,C,...`: NCCL's collectives across every GPU of a group of nodes,
`nodeqc fabric --group-size K`), run on each node of the group at once.

Which end it is: `--index`, else the position of this host (SLURMD_NODENAME, NODEQC_NODE, then
the host name) in `--pair A,B`, else SLURM_PROCID. End A serves first:

- TCP (iperf3): A runs `iperf3 -s -1` twice, B runs the client, once sending (B>A) and once
  with -R (A>B). B reports both.
- RDMA (ib_write_bw per rail, the rails matched by identity: the same HCA name (and port) on both
  nodes, as rail-optimised fabrics wire identical nodes; never by position, which a port down on
  one node would shift): A serves every rail at once and B writes (B>A), then B serves and A writes
  (A>B). Each writer reports its direction; each end lists its active rails, so a rail with no
  counterpart on the peer is named as such.
- Latency (`lat`, ib_write_lat per rail, matched as RDMA's): A serves every rail at once, B writes
  (ping-pong: one direction is both), LAT_ITERS writes; B reports each rail's median and
  percentiles (nodeqc.fabric.tails judges them).
- NCCL: an all-reduce across every GPU of both nodes, bootstrapped with cupyx.distributed (CuPy's
  own NCCL process group, its TCP store on A). Both ends report; the merge makes one figure.
  GPU-only: without CuPy or GPUs on either end it is skipped, saying what to install.

Each end prints one JSON line (marked with MARKER) with its figures and the facts a launcher merges
into the pair's result: the node's identity and each rail's rate (the floor is the profile's
fraction of the slower end). A client retries while its server is not up yet (bounded); every tool
is bounded by its duration plus a margin. Nothing here decides a verdict.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeqc.backends.nic import (IPERF3_MAX_S, IPERF3_MAX_STREAMS, iperf3_options, parse_ib_write_bw,
                                 parse_ib_write_lat, parse_iperf3)
from nodeqc.core.arguments import Parser, number_in
from nodeqc.core.errors import UsageError, shown
from nodeqc.core.names import check_host, host_name
from nodeqc.core.text import is_digits
from nodeqc.fabric.nccl_group import COLLECTIVES

MARKER = "nodeqc-fabric-worker"
CONNECT_RETRY_S = 20.0  # the peer's server may start a little after us (srun starts tasks unevenly)
# A client that found no server serving yet, tried again until CONNECT_RETRY_S: refused (not
# listening yet), busy, or reset while the control connection opened. The reset is the race between
# the two directions: the first `iperf3 -s -1` still closing its listening socket when the second
# test's client connects (a healthy pair of namespaces failed so in CI, 2026-11-28). A reset once a
# test runs is no such message, and stays the pair's error.
NOT_YET_SERVING = re.compile(r"(?i)refused|unable to connect|couldn.t connect|unable to open|server is busy"
                             r"|unable to (?:receive|send) control message: connection reset")
MARGIN_S = 30.0
PORTS_PER_PAIR = 4  # the pairs of one round get their own ports, so several may share a host (tests)
TOOL_INSTALL = {"iperf3": "install iperf3 on every node (apt-get install iperf3, or dnf install iperf3)",
                "ib_write_bw": "install perftest on every node (apt-get install perftest, or dnf install perftest)",
                "ib_write_lat": "install perftest on every node (apt-get install perftest, or dnf install perftest)"}
MAX_GROUP = 1024  # nodes in one group test: far above any group ADR-055 forms (about sqrt(N))
MAX_NCCL_BYTES = 1 << 40  # a GPU's buffer: above any GPU's memory (B300: 288 GB)
LAT_ITERS = 10_000  # 2-byte writes: ~20-50 ms of ping-pong, 100 samples above the 99th percentile


@dataclass
class Job:
    pair: tuple[str, ...]  # the pair's two nodes, or a group's (collectives only)
    index: int
    tests: list[str]
    seconds: float
    streams: int
    port: int
    addresses: tuple[str, str]  # where each end is reached for data traffic
    use_cuda: bool = False
    nccl_bytes: int | None = None

    @property
    def me(self) -> str:
        return self.pair[self.index]

    @property
    def peer_address(self) -> str:
        return self.addresses[1 - self.index]

    @property
    def my_address(self) -> str:
        return self.addresses[self.index]


def _my_names() -> list[str]:
    # Slurm names the node in SLURMD_NODENAME; the Kubernetes manifest in NODEQC_NODE (spec.nodeName).
    return [n for n in (os.environ.get("SLURMD_NODENAME"), os.environ.get("NODEQC_NODE"), socket.gethostname(),
                        socket.gethostname().split(".")[0]) if n]


def which_end(pair: tuple[str, ...], index: int | None) -> int:
    if index is not None:
        if not 0 <= index < len(pair):
            raise UsageError(f"--index {index}: expected 0 to {len(pair) - 1}, an end of {','.join(pair)}")
        return index
    for name in _my_names():
        if name in pair:
            return pair.index(name)
    procid = os.environ.get("SLURM_PROCID")
    if procid is not None and is_digits(procid) and int(procid) < len(pair):
        return int(procid)
    raise UsageError(f"fabric worker: cannot tell which end of {','.join(pair)} this host is: pass --index")


def identity() -> dict[str, Any]:
    """What names this node in the fabric report's subjects: host name, serials (where readable),
    machine id."""
    out: dict[str, Any] = {"hostname": host_name()}
    for key, path in (("system_serial", "/sys/class/dmi/id/product_serial"),
                      ("board_serial", "/sys/class/dmi/id/board_serial"), ("machine_id", "/etc/machine-id")):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text:
            out[key] = text
    return out


def tool_path(tool: str) -> str | None:
    """Where a tool is on PATH (None: not installed; the figure is then skipped saying so)."""
    return shutil.which(tool)


# ---------------------------------------------------------------------- TCP


def route_speed_gbit(address: str) -> float | None:
    """The link speed of the interface that carries traffic to `address` (what the TCP floor is a
    fraction of), from `ip route get` and sysfs."""
    try:
        out = subprocess.run(["ip", "-o", "route", "get", address], capture_output=True, text=True, errors="replace", timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bdev (\S+)", out)
    if not m:
        return None
    try:
        speed = int(Path(f"/sys/class/net/{m.group(1)}/speed").read_text())
    except (OSError, ValueError):
        return None
    return speed / 1000 if speed > 0 else None


def tcp(job: Job) -> list[dict[str, Any]]:
    if not tool_path("iperf3"):
        return [{"rail": "tcp", "direction": d, "skipped": f"iperf3 is not installed: {TOOL_INSTALL['iperf3']}"}
                for d in ("a>b", "b>a")] if job.index == 1 else []
    secs = max(1, round(job.seconds))
    if job.index == 0:
        for _ in range(2):
            try:
                subprocess.run(["iperf3", "-s", "-1", "-p", str(job.port)], capture_output=True,
                               timeout=secs + CONNECT_RETRY_S + MARGIN_S)
            except subprocess.TimeoutExpired:
                break  # the client gave up; its figures say why
        return []
    speed = route_speed_gbit(job.peer_address)
    out = []
    for direction, extra in (("b>a", []), ("a>b", ["-R"])):
        cmd = ["iperf3", "-c", job.peer_address, "-p", str(job.port), "-J", "-P", str(job.streams), "-t", str(secs),
               "-i", "0", *extra]
        if "--connect-timeout" in iperf3_options():
            cmd += ["--connect-timeout", "3000"]
        value, error, detail = _retrying(cmd, parse_iperf3, secs)
        out.append({"rail": "tcp", "direction": direction, "value": None if error else round(value, 3),
                    "unit": "Gb/s", "error": error, "rate": speed, "command": " ".join(cmd),
                    **({"retransmits": detail.get("retransmits")} if detail else {})})
    return out


def _retrying(cmd: list[str], parse: Any, secs: int) -> tuple[Any, str | None, dict[str, Any]]:
    """Run a client until it connects (its server may not be up yet), bounded."""
    give_up = time.monotonic() + CONNECT_RETRY_S
    while True:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=secs + MARGIN_S)
            text = done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            return None, f"{cmd[0]} did not finish within {secs + MARGIN_S:g} s: killed", {}
        except OSError as e:
            return None, f"{cmd[0]} could not start: {e.strerror}", {}
        value, error, detail = parse(text)
        refused = error and NOT_YET_SERVING.search(text)
        if not refused or time.monotonic() > give_up:
            return value, error, detail
        time.sleep(0.5)


# ---------------------------------------------------------------------- RDMA


def rdma_ports() -> list[tuple[str, int, float | None, bool]]:
    """This node's ACTIVE RDMA ports in PCI order: (device, port, rate Gb/s, RoCE)."""
    from nodeqc.backends.nic import LinuxNics

    out = []
    for nic in LinuxNics().nics():
        for p in nic.ib_ports:
            if p.state == "ACTIVE":
                rate = p.rate_gbit if isinstance(p.rate_gbit, (int, float)) else None
                out.append((p.device, p.port, rate, p.link_layer == "Ethernet"))
    return out


def rail_id(device: str, port: int) -> str:
    """A rail's identity, the same on every node of a rail-optimised fabric: the HCA's name (the
    i-th HCA of identical nodes sits on rail i), with its port when it is not the first. Rails are
    matched by it, never by position: a port down on one node must not shift every rail after it."""
    return device if port == 1 else f"{device}/{port}"


def rail_port_offset(rail: str) -> int | None:
    """The TCP port offset of a rail's ib_write_bw, the same on both ends since it comes from the
    rail's identity: the HCA's number (mlx5_3 -> 3) and port. None: no number to take it from."""
    m = re.fullmatch(r".*?(\d+)(?:/(\d+))?", rail)
    if not m:
        return None
    offset = int(m.group(1)) * 4 + int(m.group(2) or 1) - 1
    return offset if offset < RAIL_PORTS else None


RAIL_PORTS = 400  # TCP ports set aside per phase for the rails' ib_write_bw (100 HCAs of 4 ports)


def gid_prefix(device: str, port: int) -> str | None:
    """The port's subnet prefix (the first 64 bits of GID 0), as sysfs shows it; None if unreadable."""
    try:
        gid = Path(f"/sys/class/infiniband/{device}/ports/{port}/gids/0").read_text().strip()
    except OSError:
        return None
    groups = gid.split(":")
    return ":".join(groups[:4]) if len(groups) == 8 else None


def rdma(job: Job) -> list[dict[str, Any]]:
    if not tool_path("ib_write_bw"):
        return [{"rail": "rdma", "direction": "a>b" if job.index == 0 else "b>a",
                 "skipped": f"ib_write_bw is not installed: {TOOL_INSTALL['ib_write_bw']}"}]
    ports = rdma_ports()
    if not ports:
        return [{"rail": "rdma", "direction": "a>b" if job.index == 0 else "b>a",
                 "skipped": "no active RDMA port on this node (ibstat shows the ports)"}]
    secs = max(1, round(job.seconds))
    out: list[dict[str, Any]] = []
    offsets = [rail_port_offset(rail_id(dev, port)) for dev, port, _, _ in ports]
    # Phase 1: A serves, B writes (B>A). Phase 2: B serves, A writes (A>B). Each rail's server and
    # client meet on the port of the rail's identity: a rail the peer lacks finds no server.
    for phase, server in ((0, 0), (1, 1)):
        base = job.port + 1000 + RAIL_PORTS * phase
        procs = []
        direction = "b>a" if job.index == 1 else "a>b"
        for (dev, port, rate, roce), offset in zip(ports, offsets):
            rail = rail_id(dev, port)
            if offset is None or offsets.count(offset) > 1:
                if job.index != server:
                    out.append({"rail": rail, "direction": direction, "rate": rate, "unit": "Gb/s",
                                "error": f"cannot give rail {rail} a port of its own from its name"})
                continue
            cmd = ["ib_write_bw", "-d", dev, "-i", str(port), "-p", str(base + offset), "-D", str(secs),
                   "--report_gbits", "-F"]
            if roce:
                cmd.append("-R")
            if job.use_cuda:
                cmd.append("--use_cuda=0")
            if job.index != server:
                cmd.append(job.peer_address)
            procs.append((rail, rate, cmd))
        if job.index == server:
            _run_all([c for _, _, c in procs], secs + CONNECT_RETRY_S + MARGIN_S)
            continue
        if not procs:
            continue
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(procs)) as pool:
            done = list(pool.map(lambda p: _retrying(p[2], parse_ib_write_bw, secs), procs))
        for (rail, rate, cmd), (value, error, _) in zip(procs, done):
            out.append({"rail": rail, "direction": direction, "value": None if error else round(value, 3),
                        "unit": "Gb/s", "error": error, "rate": rate, "command": " ".join(cmd)})
    return out


LAT_PORT_OFFSET = 3000  # past ib_write_bw's two phases (1000 + 2 x RAIL_PORTS) and NCCL's (2000, 2001)


def lat(job: Job) -> list[dict[str, Any]]:
    """ib_write_lat per rail: A serves, B writes and reports (its line carries the figures)."""
    if not tool_path("ib_write_lat"):
        return [{"test": "lat", "rail": "rdma", "direction": "b>a",
                 "skipped": f"ib_write_lat is not installed: {TOOL_INSTALL['ib_write_lat']}"}] if job.index == 1 else []
    ports = rdma_ports()
    if not ports:
        return [{"test": "lat", "rail": "rdma", "direction": "b>a",
                 "skipped": "no active RDMA port on this node (ibstat shows the ports)"}] if job.index == 1 else []
    base = job.port + LAT_PORT_OFFSET
    offsets = [rail_port_offset(rail_id(dev, port)) for dev, port, _, _ in ports]
    procs, out = [], []
    for (dev, port, _, roce), offset in zip(ports, offsets):
        rail = rail_id(dev, port)
        if offset is None or offsets.count(offset) > 1:
            if job.index == 1:
                out.append({"test": "lat", "rail": rail, "direction": "b>a", "unit": "us",
                            "error": f"cannot give rail {rail} a port of its own from its name"})
            continue
        cmd = ["ib_write_lat", "-d", dev, "-i", str(port), "-p", str(base + offset), "-n", str(LAT_ITERS), "-F"]
        if roce:
            cmd.append("-R")
        if job.index == 1:
            cmd.append(job.peer_address)
        procs.append((rail, cmd))
    if job.index == 0:
        _run_all([c for _, c in procs], CONNECT_RETRY_S + MARGIN_S)
        return out
    if procs:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(procs)) as pool:
            done = list(pool.map(lambda p: _retrying(p[1], parse_ib_write_lat, 1), procs))
        for (rail, cmd), (p99, error, detail) in zip(procs, done):
            out.append({"test": "lat", "rail": rail, "direction": "b>a", "unit": "us",
                        "value": None if error else p99, "p50": None if error else detail.get("p50_us"),
                        "p999": None if error else detail.get("p999_us"), "error": error, "command": " ".join(cmd)})
    return out


def _run_all(cmds: list[list[str]], timeout: float) -> None:
    procs = []
    for cmd in cmds:
        try:
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        except OSError:
            continue
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


# ---------------------------------------------------------------------- NCCL


NCCL_PORT_OFFSET = 2000  # CuPy's TCP store on A (and nccl_group's agreement on the next port)
MAX_PORT = 65535 - NCCL_PORT_OFFSET


def nccl(job: Job, test: str = "nccl") -> list[dict[str, Any]]:
    """A two-node collective over every GPU of both nodes: the all-reduce (test nccl), all-gather
    or all-to-all, one after another on the same ports (each stops its store before the next).
    Both ends report (each checks its own ranks' results; a missing CuPy or GPU on either end is
    said by both); merge makes one figure."""
    from nodeqc.fabric import nccl_group

    result = nccl_group.run(job.index, job.addresses[0], job.port + NCCL_PORT_OFFSET, job.seconds, names=job.pair,
                           op=nccl_group.COLLECTIVES[test], **({"buffer_bytes": job.nccl_bytes} if job.nccl_bytes else {}))
    return [{"rail": test, "direction": "both", **result}]


# ---------------------------------------------------------------------- entry


def run(job: Job) -> dict[str, Any]:
    figures: list[dict[str, Any]] = []
    for test in job.tests:
        figures += (nccl(job, test) if test in COLLECTIVES else {"tcp": tcp, "rdma": rdma, "lat": lat}[test](job))
    out = {MARKER: 1, "node": job.me, "index": job.index, "identity": identity(), "figures": figures}
    if "rdma" in job.tests or "lat" in job.tests:
        # Every active rail, so the launcher can say which has no counterpart on the peer.
        out["rails"] = [{"rail": rail_id(dev, port), "rate": rate, "subnet": gid_prefix(dev, port)}
                        for dev, port, rate, _ in rdma_ports()]
    if is_digits(os.environ.get("JOB_COMPLETION_INDEX", "")):  # a pod of an Indexed Job (Kubernetes)
        out["job_index"] = int(os.environ["JOB_COMPLETION_INDEX"])
    return out


def write_line(text: str) -> None:
    """TEXT and its newline to standard output in one write (see main)."""
    data = (text + "\n").encode()
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # stdout replaced in-process (a test's capture)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    while data:
        data = data[os.write(fd, data):]


def pair_in_plan(text: str, addresses_text: str | None, port: int,
                 group: bool = False) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    """--pairs 'A,B C,D ...' (a whole round), or --groups 'A,B,C D,E,F ...': this node's pair or
    group, its ports, and its nodes' addresses."""
    units = [tuple(p.split(",")) for p in text.split()]
    flag = "--groups" if group else "--pairs"
    sizes = range(2, MAX_GROUP + 1) if group else range(2, 3)
    if not units or any(len(u) not in sizes or not all(u) or len(set(u)) != len(u) for u in units):
        want = (f"groups of 2 to {MAX_GROUP} different node names, 'A,B,C D,E,F ...'" if group else
                "pairs of two different node names, 'A,B C,D ...'")
        raise UsageError(f"{flag} {shown(text[:200])}: expected {want}")
    addresses: dict[str, str] = {}
    for item in (addresses_text or "").split():
        node, sep, addr = item.partition("=")
        if not sep or not node or not addr:
            raise UsageError(f"--addresses {addresses_text}: expected NODE=ADDR items separated by spaces")
        addresses[node] = check_host(addr, f"--addresses {node}=")
    for slot, unit in enumerate(units):
        if any(name in unit for name in _my_names()):
            return unit, port + slot * PORTS_PER_PAIR, tuple(addresses.get(n, n) for n in unit)
    raise UsageError(f"{flag}: this node ({', '.join(_my_names()) or 'no name'}) is in none of the round's "
                     f"{'groups' if group else 'pairs'}")


def main(argv: list[str]) -> int:
    p = Parser(prog="nodeqc fabric worker", description="The per-node work of one fabric pair test "
               "(started by nodeqc fabric on both nodes of the pair; not for use by hand).")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--pair", metavar="A,B")
    which.add_argument("--group", metavar="A,B,C,...", help="the nodes of one group test (collectives only)")
    which.add_argument("--groups", metavar="'A,B,C D,E,F ...'", help="every group of the round: this node's is found "
                       "from its name, as with --pairs")
    which.add_argument("--pairs", metavar="'A,B C,D ...'", help="every pair of the round: this node's is found "
                       "from its name (NODEQC_NODE, SLURMD_NODENAME, the host name); its ports from the pair's place")
    p.add_argument("--index", type=int, help="which end this is, from 0 (default: from the host name)")
    p.add_argument("--tests", default="tcp", metavar="tcp,rdma,nccl,allgather,alltoall,lat")
    p.add_argument("--seconds", type=number_in(0, IPERF3_MAX_S, above=True), default=5.0)
    p.add_argument("--streams", type=number_in(1, IPERF3_MAX_STREAMS, whole=True), default=4)
    p.add_argument("--port", type=number_in(1, MAX_PORT, whole=True), default=5201)
    p.add_argument("--address", metavar="ADDR_A,ADDR_B,...", help="where each end is reached for data traffic "
                   "(default: the node names)")
    p.add_argument("--addresses", metavar="'NODE=ADDR ...'", help="with --pairs: where nodes are reached for "
                   "data traffic (default: their names)")
    p.add_argument("--use-cuda", action="store_true", help="ib_write_bw --use_cuda (GPUDirect RDMA)")
    p.add_argument("--nccl-bytes", type=number_in(1, MAX_NCCL_BYTES, whole=True),
                   help="each GPU's buffer in the NCCL collectives (default 1 GiB)")
    args = p.parse_args(argv)
    if args.pairs is not None:
        pair, args.port, addresses = pair_in_plan(args.pairs, args.addresses, args.port)
        args.pair, args.address = ",".join(pair), ",".join(addresses)
    if args.groups is not None:
        unit, args.port, addresses = pair_in_plan(args.groups, args.addresses, args.port, group=True)
        args.group, args.address = ",".join(unit), ",".join(addresses)
    if args.port > MAX_PORT:
        raise UsageError(f"--port: this node's pair takes port {args.port}, past {MAX_PORT} "
                         f"(its NCCL store is {NCCL_PORT_OFFSET} above)")
    if args.group is not None:
        pair = tuple(args.group.split(","))
        if len(pair) < 2 or len(pair) > MAX_GROUP or not all(pair) or len(set(pair)) != len(pair):
            raise UsageError(f"--group {args.group[:200]}: expected 2 to {MAX_GROUP} different node names, A,B,C,...")
    else:
        pair = tuple(args.pair.split(","))
        if len(pair) != 2 or not all(pair) or pair[0] == pair[1]:
            raise UsageError(f"--pair {args.pair}: expected two different node names, A,B")
    tests = [t for t in args.tests.split(",") if t]
    unknown = [t for t in tests if t not in ("tcp", "rdma", "lat", *COLLECTIVES)]
    if unknown or not tests:
        raise UsageError(f"--tests {args.tests}: expected some of tcp, rdma, nccl, allgather, alltoall (NCCL's "
                         "all-reduce, all-gather, all-to-all) and lat (ib_write_lat's latency tail)")
    if args.group is not None and not set(tests) <= set(COLLECTIVES):
        raise UsageError(f"--tests {args.tests}: a group test runs NCCL's collectives only "
                         f"({', '.join(COLLECTIVES)}); tcp, rdma and lat are pair tests")
    addresses = tuple(check_host(a, "--address") for a in args.address.split(",")) if args.address else pair
    if len(addresses) != len(pair):
        raise UsageError(f"--address {args.address[:200]}: expected {len(pair)} addresses, one an end")
    job = Job(pair, which_end(pair, args.index), tests, args.seconds, args.streams, args.port,  # type: ignore[arg-type]
              addresses, args.use_cuda, args.nccl_bytes)  # type: ignore[arg-type]
    # One write of the whole line: both ends of a pair often share one output (a Slurm step's, a
    # pod log), and print() under PYTHONUNBUFFERED=1 writes the text and its newline apart, so the
    # other end's line could land between them.
    write_line(json.dumps(run(job)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
