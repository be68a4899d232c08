"""The per-node work of one pair test, run on each of the two nodes at once
(`nodeqc fabric worker`), by srun, a command prefix (`ip netns exec NS`), or a Kubernetes pod.

Which end it is: `--index`, else the position of this host (SLURMD_NODENAME, NODEQC_NODE, then
the host name) in `--pair A,B`, else SLURM_PROCID. End A serves first:

- TCP (iperf3): A runs `iperf3 -s -1` twice, B runs the client, once sending (B>A) and once
  with -R (A>B). B reports both.
- RDMA (ib_write_bw per rail, the rails paired by position: the i-th active RDMA port of A with the
  i-th of B, as rail-optimised fabrics wire them): A serves every rail at once and B writes (B>A),
  then B serves and A writes (A>B). Each writer reports its direction.
- NCCL: an all-reduce across every GPU of both nodes, bootstrapped with cupyx.distributed (CuPy's
  own NCCL process group, its TCP store on A). GPU-only: without CuPy or GPUs it is skipped, saying
  what to install.

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

from nodeqc.backends.nic import iperf3_options, parse_ib_write_bw, parse_iperf3
from nodeqc.cli_parser import Parser
from nodeqc.errors import UsageError

MARKER = "nodeqc-fabric-worker"
CONNECT_RETRY_S = 20.0  # the peer's server may start a little after us (srun starts tasks unevenly)
MARGIN_S = 30.0
TOOL_INSTALL = {"iperf3": "install iperf3 on every node (apt-get install iperf3, or dnf install iperf3)",
                "ib_write_bw": "install perftest on every node (apt-get install perftest, or dnf install perftest)"}


@dataclass
class Job:
    pair: tuple[str, str]
    index: int
    tests: list[str]
    seconds: float
    streams: int
    port: int
    addresses: tuple[str, str]  # where each end is reached for data traffic
    use_cuda: bool = False

    @property
    def me(self) -> str:
        return self.pair[self.index]

    @property
    def peer_address(self) -> str:
        return self.addresses[1 - self.index]

    @property
    def my_address(self) -> str:
        return self.addresses[self.index]


def which_end(pair: tuple[str, str], index: int | None) -> int:
    if index is not None:
        return index
    # Slurm names the node in SLURMD_NODENAME; the Kubernetes manifest in NODEQC_NODE (spec.nodeName).
    for name in (os.environ.get("SLURMD_NODENAME"), os.environ.get("NODEQC_NODE"), socket.gethostname(),
                 socket.gethostname().split(".")[0]):
        if name in pair:
            return pair.index(name)
    procid = os.environ.get("SLURM_PROCID")
    if procid in ("0", "1"):
        return int(procid)
    raise UsageError(f"fabric worker: cannot tell which end of {pair[0]},{pair[1]} this host is: pass --index")


def identity() -> dict[str, Any]:
    """What names this node in the fabric report's subjects: host name, serials (where readable),
    machine id."""
    out: dict[str, Any] = {"hostname": socket.gethostname()}
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
        out = subprocess.run(["ip", "-o", "route", "get", address], capture_output=True, text=True, timeout=10).stdout
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
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + MARGIN_S)
            text = done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            return None, f"{cmd[0]} did not finish within {secs + MARGIN_S:g} s: killed", {}
        except OSError as e:
            return None, f"{cmd[0]} could not start: {e.strerror}", {}
        value, error, detail = parse(text)
        refused = error and re.search(r"(?i)refused|unable to connect|couldn.t connect|unable to open|server is busy", text)
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
    # Phase 1: A serves, B writes (B>A). Phase 2: B serves, A writes (A>B).
    for phase, server in ((0, 0), (1, 1)):
        base = job.port + 1000 + 100 * phase
        procs = []
        for k, (dev, port, rate, roce) in enumerate(ports):
            cmd = ["ib_write_bw", "-d", dev, "-i", str(port), "-p", str(base + k), "-D", str(secs), "--report_gbits", "-F"]
            if roce:
                cmd.append("-R")
            if job.use_cuda:
                cmd.append("--use_cuda=0")
            if job.index != server:
                cmd.append(job.peer_address)
            procs.append((dev, rate, cmd))
        if job.index == server:
            _run_all([c for _, _, c in procs], secs + CONNECT_RETRY_S + MARGIN_S)
            continue
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(procs)) as pool:
            done = list(pool.map(lambda p: _retrying(p[2], parse_ib_write_bw, secs), procs))
        direction = "b>a" if job.index == 1 else "a>b"
        for (dev, rate, cmd), (value, error, _) in zip(procs, done):
            out.append({"rail": dev, "direction": direction, "value": None if error else round(value, 3),
                        "unit": "Gb/s", "error": error, "rate": rate, "command": " ".join(cmd)})
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


def nccl(job: Job) -> list[dict[str, Any]]:
    """A two-node all-reduce over every GPU of both nodes; end A reports the bus bandwidth."""
    from nodeqc.fabric import nccl_pair

    why = nccl_pair.unavailable()
    if why:
        return [{"rail": "nccl", "direction": "both", "skipped": why}] if job.index == 0 else []
    result = nccl_pair.run(job.index, job.addresses[0], job.port + 2000, job.seconds)
    return [{"rail": "nccl", "direction": "both", **result}] if job.index == 0 else []


# ---------------------------------------------------------------------- entry


def run(job: Job) -> dict[str, Any]:
    figures: list[dict[str, Any]] = []
    for test in job.tests:
        figures += {"tcp": tcp, "rdma": rdma, "nccl": nccl}[test](job)
    return {MARKER: 1, "node": job.me, "index": job.index, "identity": identity(), "figures": figures}


def main(argv: list[str]) -> int:
    p = Parser(prog="nodeqc fabric worker", description="The per-node work of one fabric pair test "
               "(started by nodeqc fabric on both nodes of the pair; not for use by hand).")
    p.add_argument("--pair", required=True, metavar="A,B")
    p.add_argument("--index", type=int, choices=(0, 1), help="which end this is (default: from the host name)")
    p.add_argument("--tests", default="tcp", metavar="tcp,rdma,nccl")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--streams", type=int, default=4)
    p.add_argument("--port", type=int, default=5201)
    p.add_argument("--address", metavar="ADDR_A,ADDR_B", help="where each end is reached for data traffic "
                   "(default: the node names)")
    p.add_argument("--use-cuda", action="store_true", help="ib_write_bw --use_cuda (GPUDirect RDMA)")
    args = p.parse_args(argv)
    pair = tuple(args.pair.split(","))
    if len(pair) != 2 or not all(pair) or pair[0] == pair[1]:
        raise UsageError(f"--pair {args.pair}: expected two different node names, A,B")
    tests = [t for t in args.tests.split(",") if t]
    unknown = [t for t in tests if t not in ("tcp", "rdma", "nccl")]
    if unknown or not tests:
        raise UsageError(f"--tests {args.tests}: expected tcp, rdma and/or nccl")
    addresses = tuple(args.address.split(",")) if args.address else pair
    if len(addresses) != 2:
        raise UsageError(f"--address {args.address}: expected two addresses, ADDR_A,ADDR_B")
    job = Job(pair, which_end(pair, args.index), tests, args.seconds, args.streams, args.port,  # type: ignore[arg-type]
              addresses, args.use_cuda)  # type: ignore[arg-type]
    print(json.dumps(run(job)), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
