"""The real NICs: what sysfs shows of them (/sys/class/net, /sys/class/infiniband), and traffic
through them with the standard tools, iperf3 (TCP, its JSON output parsed) and ib_write_bw from
perftest (RDMA; ib_write_lat for the latency tail of the fabric's pair tests).

`root` prefixes every sysfs path, so tests can point it at a prepared tree as well as at the real /.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any, Callable

import psutil

from nodeqc.backends.base import MAX_PORT_GBIT, IbPort, NicBackend, NicInfo, TrafficJob, TrafficOutcome, TrafficSession
from nodeqc.core.errors import shown
from nodeqc.core.na import NA, is_na
from nodeqc.core.names import PCI_ADDRESS
from nodeqc.core.text import is_digits
from nodeqc.core.tool_output import ToolOutputError, excerpt, figure, load_json, quoted

ARPHRD_INFINIBAND = 32
ARPHRD_LOOPBACK = 772
IPERF3_MAX_S, IPERF3_MAX_STREAMS = 86400, 128  # iperf3 refuses more (MAX_TIME, MAX_STREAMS in iperf_api.h)
GT_S_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
IB_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery")

INSTALL = {
    "iperf3": "iperf3 is not installed: install it (apt-get install iperf3, or dnf install iperf3)",
    "ib_write_bw": "ib_write_bw is not installed: install perftest (apt-get install perftest, or dnf install perftest)",
}


class LinuxNics(NicBackend):
    def __init__(self, root: str | Path = "/"):
        self.root = Path(root)

    # ------------------------------------------------------------------ sysfs

    def _read(self, path: Path) -> str | None:
        try:
            return path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None  # absent; or EINVAL, as speed and carrier give while a link is down

    def _speed_mbps(self, path: Path) -> Any:
        """The link's speed; NA where none is known: -1, or u32 -1 (4294967295) read as 4.3 Pb/s
        that passed any floor (2026-11-29 fuzzing), or anything above the fastest port."""
        speed = self._int(path)
        return NA if is_na(speed) or speed > MAX_PORT_GBIT * 1000 else speed

    def _int(self, path: Path) -> Any:
        text = self._read(path)
        try:
            value = int(text, 0) if text is not None else None
        except ValueError:
            return NA
        # speed is -1 when unknown; sysfs prints kernel integers, 64 bits at most: more is not sysfs
        return NA if value is None or value < 0 or value >= 2**64 else value

    def nics(self) -> list[NicInfo]:
        net = self.root / "sys/class/net"
        found: list[NicInfo] = []
        claimed: set[str] = set()  # RDMA devices reached through an interface
        addresses = _addresses() if self.root == Path("/") else {}  # psutil sees only the live host
        for entry in sorted(net.iterdir()) if net.is_dir() else []:
            if self._int(entry / "type") == ARPHRD_LOOPBACK:
                continue
            nic = self._interface(entry, addresses.get(entry.name, []))
            claimed.update(p.device for p in nic.ib_ports)
            found.append(nic)
        ib = self.root / "sys/class/infiniband"
        for dev in sorted(ib.iterdir()) if ib.is_dir() else []:
            if dev.name not in claimed:  # an HCA without an IPoIB interface is still a NIC
                pci = self._pci_dir(dev / "device")
                nic = NicInfo(name=dev.name, kind="infiniband", driver=self._driver(dev / "device"), interface=False,
                              bus_id=pci.name if pci else NA, ib_ports=self._ports(dev))
                self._pcie(nic, pci)
                found.append(nic)
        # Physical NICs in PCI order (as GPUs are numbered), then the rest by name.
        return sorted(found, key=lambda n: (n.virtual, n.bus_id if isinstance(n.bus_id, str) else "~", n.name))

    def _interface(self, entry: Path, addresses: list[str]) -> NicInfo:
        real = str(entry.resolve())
        device = entry / "device"
        pci = self._pci_dir(device)
        # A VF belongs to its physical function's NIC; bridges, bonds, VLANs and veths are virtual.
        virtual = "/devices/virtual/" in real or (pci is not None and (pci / "physfn").exists())
        nic = NicInfo(
            name=entry.name,
            kind="infiniband" if self._int(entry / "type") == ARPHRD_INFINIBAND else "ethernet",
            driver=self._driver(device), mac=self._read(entry / "address") or NA,
            operstate=self._read(entry / "operstate") or NA, carrier=self._int(entry / "carrier"),
            speed_mbps=self._speed_mbps(entry / "speed"), mtu=self._int(entry / "mtu"),
            bus_id=pci.name if pci else NA, virtual=virtual,
            carrier_changes=self._int(entry / "carrier_changes"), addresses=addresses,
        )
        self._pcie(nic, pci)
        nic.ib_ports = self._ib_ports_of(entry, device)
        return nic

    def _driver(self, device: Path) -> Any:
        link = device / "driver"
        return os.path.basename(os.readlink(link)) if link.is_symlink() else NA

    def _pci_dir(self, device: Path) -> Path | None:
        """The PCI function behind a device: itself, or its nearest PCI ancestor (virtio sits under one)."""
        if not device.exists():
            return None
        path = device.resolve()
        for p in (path, *path.parents):
            if PCI_ADDRESS.match(p.name):
                return p
        return None

    def _pcie(self, nic: NicInfo, pci: Path | None) -> None:
        if pci is not None:
            nic.pcie_gen, nic.pcie_width = self._link(pci, "current")
            nic.pcie_max_gen, nic.pcie_max_width = self._link(pci, "max")

    def _link(self, pci: Path, which: str) -> tuple[Any, Any]:
        speed = self._read(pci / f"{which}_link_speed") or ""  # "16.0 GT/s PCIe"
        match = re.match(r"([\d.]+)\s*GT/s", speed)
        gen = GT_S_TO_GEN.get(_sysfs_number(match.group(1)), NA) if match else NA
        width = self._int(pci / f"{which}_link_width")
        return gen, (NA if width == 0 else width)

    def _ib_ports_of(self, entry: Path, device: Path) -> list[IbPort]:
        """RDMA ports of the PCI function behind the interface (InfiniBand, or RoCE on Ethernet). When
        one function has several interfaces, each gets the port matching its dev_port."""
        ib_dir = device / "infiniband"
        if not ib_dir.is_dir():
            return []
        ports = [p for dev in sorted(ib_dir.iterdir()) for p in self._ports(dev)]
        siblings = list((device / "net").iterdir()) if (device / "net").is_dir() else []
        if len(siblings) > 1:
            dev_port = self._int(entry / "dev_port")
            ports = [p for p in ports if not isinstance(dev_port, int) or p.port == dev_port + 1]
        return ports

    def _ports(self, dev: Path) -> list[IbPort]:
        out = []
        base = dev / "ports"
        ports = sorted(base.iterdir(), key=lambda p: int(p.name) if is_digits(p.name) else 0) if base.is_dir() else []
        for port in ports:
            rate = re.match(r"([\d.]+)\s*Gb/sec", self._read(port / "rate") or "")
            out.append(IbPort(
                device=dev.name, port=int(port.name) if is_digits(port.name) else 0,
                state=_after_colon(self._read(port / "state")),
                phys_state=_after_colon(self._read(port / "phys_state")),
                rate_gbit=_sysfs_number(rate.group(1)) if rate else NA, link_layer=self._read(port / "link_layer") or NA,
                counters={c: self._int(port / "counters" / c) for c in IB_COUNTERS},
            ))
        return out

    def pcie_link(self, name: str) -> tuple[Any, Any]:
        for cls in ("net", "infiniband"):
            base = self.root / "sys/class" / cls / name / "device"
            pci = self._pci_dir(base)
            if pci is not None:
                return self._link(pci, "current")
        return NA, NA

    # ------------------------------------------------------------------ traffic

    def missing_tool(self, tool: str) -> str | None:
        return None if shutil.which(tool) else INSTALL[tool]

    def start_traffic(self, rounds: list[list[TrafficJob]], watch: list[str]) -> TrafficSession:
        return ProcessTraffic(self, rounds, watch)


def _sysfs_number(text: str) -> Any:
    """A port's rate sysfs prints in Gb/s ("200", "16.0"), NA when it is not a finite number ("1.2.3",
    400 digits) or above the fastest port."""
    try:
        return figure(text, "a sysfs rate", low=0, high=MAX_PORT_GBIT, text=True)
    except ToolOutputError:
        return NA


def _after_colon(text: str | None) -> Any:
    """'4: ACTIVE' -> 'ACTIVE'."""
    return text.split(":", 1)[-1].strip() if text else NA


def _addresses() -> dict[str, list[str]]:
    """Each interface's IP addresses, IPv4 first (the traffic binds to one)."""
    out: dict[str, list[str]] = {}
    for name, addrs in psutil.net_if_addrs().items():
        v4 = [a.address for a in addrs if a.family == socket.AF_INET]
        v6 = [a.address for a in addrs if a.family == socket.AF_INET6 and not a.address.startswith("fe80")]
        out[name] = v4 + v6
    return out


@functools.lru_cache(maxsize=None)
def iperf3_options() -> frozenset[str]:
    """The long options this iperf3 knows (--bind-dev came in 3.10, --connect-timeout in 3.8)."""
    try:
        text = subprocess.run(["iperf3", "--help"], capture_output=True, text=True, errors="replace", timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(re.findall(r"(--[a-z][a-z-]+)", text))


def command(job: TrafficJob) -> list[str]:
    """The command line of one job, as a person would type it."""
    if job.tool == "iperf3":
        cmd = ["iperf3", "-c", job.peer, "-p", str(job.port), "-J", "-P", str(job.streams),
               "-t", str(job.whole_seconds), "-i", "0"]
        if job.bind:
            cmd += ["-B", job.bind]
        known = iperf3_options()
        if "--bind-dev" in known:  # the address alone does not force the route through this NIC
            cmd += ["--bind-dev", job.nic]
        if "--connect-timeout" in known:
            cmd += ["--connect-timeout", "5000"]
        return cmd
    cmd = ["ib_write_bw", "-d", str(job.ib_device), "-i", str(job.ib_port), "-p", str(job.port),
           "-D", str(job.whole_seconds), "--report_gbits", "-F"]
    if job.roce:
        cmd.append("-R")
    if job.cuda_device is not None:
        cmd.append(f"--use_cuda={job.cuda_device}")
    # Loopback: the client reaches its own server by this host's name (Azure's checks do the same;
    # with -R, rdma_cm needs an address of the RoCE interface, which the name resolves to).
    return cmd + [socket.gethostname() if job.loopback else job.peer]


def loopback_server(job: TrafficJob) -> list[str]:
    """The server half of an RDMA loopback: the same test on the same HCA port, without a peer
    (Azure's HPC health checks run ib_write_bw this way, client and server on one HCA)."""
    return command(job)[:-1]


def numa_node(ib_device: str, root: Path = Path("/")) -> int | None:
    """The NUMA node an HCA hangs off (sysfs); None where the kernel does not say (-1, one node)."""
    try:
        node = int((root / f"sys/class/infiniband/{ib_device}/device/numa_node").read_text())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def pin_prefix(ib_device: str | None, root: Path = Path("/")) -> list[str]:
    """What runs a loopback half on its HCA's NUMA node: numactl (CPUs and memory, as Azure's checks
    do), else taskset with the node's CPUs, else nothing (the figure is still taken, unpinned)."""
    node = numa_node(ib_device, root) if ib_device else None
    if node is None:
        return []
    if shutil.which("numactl"):
        return ["numactl", f"--cpunodebind={node}", f"--membind={node}"]
    try:
        cpus = (root / f"sys/devices/system/node/node{node}/cpulist").read_text().strip()
    except OSError:
        return []
    return ["taskset", "-c", cpus] if cpus and shutil.which("taskset") else []


def parse_iperf3(text: str) -> tuple[Any, str | None, dict[str, Any]]:
    """(Gb/s received, error, detail) from `iperf3 -J` output; never raises: output out of iperf3's
    format is an error too, with detail["unreadable"] set (see read_iperf3)."""
    return _never_raising(read_iperf3, text)


def read_iperf3(text: str) -> tuple[Any, str | None, dict[str, Any]]:
    """(Gb/s received, error, detail) from `iperf3 -J` output. `error` is what went wrong in the
    test (no JSON at all: iperf3 failed before its result; its own "error"; nothing received).
    JSON out of iperf3's format (another type where a figure belongs, NaN, Infinity, a negative or
    400-digit rate) raises ToolOutputError naming the field."""
    try:
        data = load_json(text, "iperf3's JSON")
    except json.JSONDecodeError:
        return NA, "iperf3 gave no JSON result", {}
    data = _object(data, "iperf3's JSON")
    end = _object(data.get("end", {}), "iperf3's end")
    summary = _object(end.get("sum_received", {}), "iperf3's end.sum_received")
    error = data.get("error")
    error_text = shown(str(error))[:300] if error else None
    raw = summary.get("bits_per_second")
    received = None if raw is None else figure(raw, "iperf3's end.sum_received.bits_per_second", low=0)
    if error_text and received:
        # Cut short ("the server has terminated" 0.3 s into 5): the rate of what arrived before the
        # error is no measurement of the link, however high.
        took = figure(summary.get("seconds", 0), "iperf3's end.sum_received.seconds", low=0)
        return NA, f"iperf3: {error_text} (after {took:g} s, {received / 1e9:.3g} Gb/s received)", {}
    if error_text:
        return NA, f"iperf3: {error_text}", {}
    if not received:
        return NA, "iperf3 reported no data received", {}
    sent = _object(end.get("sum_sent", {}), "iperf3's end.sum_sent")
    streams = end.get("streams", [])
    if not isinstance(streams, list):
        raise ToolOutputError(f"iperf3's end.streams is {quoted(streams)}, not a list")
    retransmits = sent.get("retransmits")
    detail = {"sent_gbps": round(figure(sent.get("bits_per_second", 0), "iperf3's end.sum_sent.bits_per_second",
                                        low=0) / 1e9, 3),
              "retransmits": None if retransmits is None else int(figure(retransmits, "iperf3's retransmits", low=0)),
              "streams": len(streams),
              "seconds": round(figure(summary.get("seconds", 0), "iperf3's end.sum_received.seconds", low=0), 2)}
    return received / 1e9, None, detail


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolOutputError(f"{what} is {quoted(value)}, not an object")
    return value


def parse_ib_write_bw(text: str) -> tuple[Any, str | None, dict[str, Any]]:
    """(average Gb/s, error, detail) from ib_write_bw's table; never raises: output out of its
    format is an error too, with detail["unreadable"] set (see read_ib_write_bw)."""
    return _never_raising(read_ib_write_bw, text)


def read_ib_write_bw(text: str) -> tuple[Any, str | None, dict[str, Any]]:
    """(average Gb/s, error, detail) from ib_write_bw's table (run with --report_gbits). A table
    whose figures are not numbers (1.2.3, a 400-digit rate) raises ToolOutputError."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if "BW average" not in line:
            continue
        header = [h.strip() for h in re.split(r"\s{2,}", line.strip())]
        col = next((i for i, h in enumerate(header) if h.startswith("BW average")), None)
        if col is None:
            raise ToolOutputError(f"ib_write_bw's table header has no 'BW average' column: {quoted(line.strip())}")
        for row in lines[n + 1:]:
            fields = row.split()
            if len(fields) == len(header) and all(re.match(r"^[\d.]+$", f) for f in fields):
                where = f"ib_write_bw's result row {quoted(row.strip())}"
                if not re.fullmatch(r"[0-9]{1,19}", fields[0]):  # a message size: bytes, a 64-bit count
                    raise ToolOutputError(f"{where}: #bytes is not a whole number")
                peak = header.index("BW peak[Gb/sec]") if "BW peak[Gb/sec]" in header else None
                detail: dict[str, Any] = {"bytes": int(fields[0])}
                if peak is not None:
                    detail["peak_gbps"] = figure(fields[peak], f"{where}: BW peak", low=0, text=True)
                return figure(fields[col], f"{where}: BW average", low=0, text=True), None, detail
        break
    errors = [line.strip() for line in lines if re.search(r"(?i)error|fail|couldn't|unable", line)]
    return NA, "ib_write_bw gave no result" + (f": {shown(errors[-1])[:300]}" if errors else ""), {}


def parse_ib_write_lat(text: str) -> tuple[Any, str | None, dict[str, Any]]:
    """(99th percentile in usec, error, detail) from ib_write_lat's table; never raises: output out
    of its format is an error too, with detail["unreadable"] set (see read_ib_write_lat)."""
    return _never_raising(read_ib_write_lat, text)


# ib_write_lat's columns (perftest 4.x, latency in usec): t_typical is the median of the samples.
LAT_COLUMNS = {"t_min[usec]": "min_us", "t_max[usec]": "max_us", "t_typical[usec]": "p50_us",
               "t_avg[usec]": "avg_us", "t_stdev[usec]": "stdev_us", "99% percentile[usec]": "p99_us",
               "99.9% percentile[usec]": "p999_us"}
MAX_LATENCY_US = 60e6  # a minute per write: no fabric's; a bigger figure is a broken tool


def read_ib_write_lat(text: str) -> tuple[Any, str | None, dict[str, Any]]:
    """(99th percentile in usec, error, detail) from ib_write_lat's table: detail has the message
    size, iterations and every column (LAT_COLUMNS' names). A table whose figures are not numbers,
    are out of order (a median below the minimum, a percentile beyond the maximum) or run together
    (perftest prints fixed-width columns, and a stdev of 2465.90 meets the next figure:
    "2465.901216.65") raises ToolOutputError; a perftest without percentile columns (before 3.x)
    too: its tail cannot be judged."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if "t_typical" not in line:
            continue
        header = [h.strip() for h in re.split(r"\s{2,}", line.strip())]
        missing = [c for c in ("#bytes #iterations", *LAT_COLUMNS) if c not in header]
        if missing or header[0] != "#bytes #iterations":
            raise ToolOutputError(f"ib_write_lat's table header has no {(missing or header)[0]!r} column where "
                                  f"perftest 4.x prints it: {quoted(line.strip())}")
        width = len(header) + 1  # "#bytes #iterations" is one header cell and two columns
        for row in lines[n + 1:]:
            fields = row.split()
            if not fields or fields[0].startswith("-"):
                continue
            where = f"ib_write_lat's result row {quoted(row.strip())}"
            if len(fields) != width:
                raise ToolOutputError(f"{where}: {len(fields)} figures where the header has {width}")
            if not re.fullmatch(r"[0-9]{1,19}", fields[0]) or not re.fullmatch(r"[0-9]{1,19}", fields[1]):
                raise ToolOutputError(f"{where}: #bytes and #iterations are not whole numbers")
            detail: dict[str, Any] = {"bytes": int(fields[0]), "iterations": int(fields[1])}
            for name, value in zip(header[1:], fields[2:]):
                if name in LAT_COLUMNS:
                    detail[LAT_COLUMNS[name]] = figure(value, f"{where}: {name}", low=0, high=MAX_LATENCY_US,
                                                       text=True)
            order = [detail["min_us"], detail["p50_us"], detail["p99_us"], detail["p999_us"], detail["max_us"]]
            if order != sorted(order):
                raise ToolOutputError(f"{where}: t_min <= t_typical <= 99% <= 99.9% <= t_max does not hold")
            if detail["iterations"] < 100:
                return NA, (f"ib_write_lat ran {detail['iterations']} iterations: too few for a 99th "
                            "percentile"), detail
            return detail["p99_us"], None, detail
        break
    errors = [line.strip() for line in lines if re.search(r"(?i)error|fail|couldn't|unable", line)]
    return NA, "ib_write_lat gave no result" + (f": {shown(errors[-1])[:300]}" if errors else ""), {}


def _never_raising(read: Callable[[str], tuple[Any, str | None, dict[str, Any]]],
                   text: str) -> tuple[Any, str | None, dict[str, Any]]:
    try:
        return read(text)
    except ToolOutputError as e:
        return NA, str(e), {"unreadable": True}


class ProcessTraffic(TrafficSession):
    """Every job a process of its own, a round's all started at once; output goes to temporary
    files, so a long result never fills a pipe and stalls the tool."""

    LOOPBACK_SERVER_START_S = 2.0  # the server half listens before its client connects (Azure waits 5 s)

    def __init__(self, backend: NicBackend, rounds: list[list[TrafficJob]], watch: list[str]):
        self._procs: list[tuple[subprocess.Popen[bytes] | None, IO[bytes], str | None]] = []
        self._servers: list[subprocess.Popen[bytes]] = []
        super().__init__(backend, rounds, watch)

    def _start(self, jobs: list[TrafficJob]) -> None:
        env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}  # --use_cuda indices in NVML's order
        self._procs = []
        loopbacks = [j for j in jobs if j.loopback]
        for job in loopbacks:  # RDMA loopback: the server half first, on the HCA's NUMA node
            try:
                self._servers.append(subprocess.Popen(pin_prefix(job.ib_device) + loopback_server(job),
                                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                      stdin=subprocess.DEVNULL, env=env))
            except OSError:
                pass  # the client then fails to connect, and says so
        if loopbacks:
            time.sleep(self.LOOPBACK_SERVER_START_S)
        for job in jobs:
            out = tempfile.TemporaryFile()
            try:
                pin = pin_prefix(job.ib_device) if job.loopback else []
                proc = subprocess.Popen(pin + command(job), stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env)
                self._procs.append((proc, out, None))
            except OSError as e:
                self._procs.append((None, out, f"{job.tool} could not start: {e.strerror}"))

    def _running(self) -> bool:
        return any(p is not None and p.poll() is None for p, _, _ in self._procs)

    def _collect(self, jobs: list[TrafficJob], overdue: str | None) -> list[TrafficOutcome]:
        outcomes = []
        for server in self._servers:  # a server whose client failed waits for ever: end it
            if server.poll() is None:
                server.kill()
            server.wait(timeout=10)
        self._servers = []
        for job, (proc, out, error) in zip(jobs, self._procs):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
                error = f"{job.tool} {overdue}: killed"
            out.seek(0)
            text = out.read().decode("utf-8", errors="replace")
            out.close()
            read = read_iperf3 if job.tool == "iperf3" else read_ib_write_bw
            unreadable = False
            try:
                gbps, problem, detail = read(text) if error is None else (NA, error, {})
            except ToolOutputError as e:  # the tool's output, not nodeqc: this NIC's ERROR, the run goes on
                gbps, problem, detail, unreadable = NA, str(e), {}, True
            detail["command"] = " ".join(command(job))
            if problem and text.strip():
                detail["exit_status"] = proc.returncode if proc is not None else None
                detail["output_tail"] = excerpt(text) if unreadable else excerpt(text)[-5:]
            outcomes.append(TrafficOutcome(job, gbps, problem, detail, unreadable=unreadable))
        self._procs = []
        return outcomes
