"""Two real network namespaces joined by a veth pair, for the NIC tests and benchmarks/bench_nic.py.

The namespaces are our own (`nqctest<pid>x<n>a` and `...b`); the veth ends are nqv0 in a
(198.51.100.1/30) and nqv1 in b (198.51.100.2/30). Those are TEST-NET-2 addresses that exist only
inside these two namespaces, which have no other interface but loopback: no packet can leave them.
Everything is removed on exit, even when a test fails, and namespaces a killed earlier run left
behind are removed when the next one starts. Every wait is bounded.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from processes import run_checked

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "nqctest"
A_ADDR, B_ADDR = "198.51.100.1", "198.51.100.2"
A_DEV, B_DEV = "nqv0", "nqv1"
_serial = itertools.count()


def _ip(*args: str, timeout: float = 20, check: bool = False) -> subprocess.CompletedProcess[str]:
    return run_checked(["ip", *args], timeout=timeout, check=check)


@functools.lru_cache(maxsize=None)
def unavailable() -> str | None:
    """Why real namespaces cannot be used here, or None when they can."""
    for tool, package in (("ip", "iproute2"), ("iperf3", "iperf3"), ("ss", "iproute2"), ("tc", "iproute2")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {package})"
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) to create network namespaces"
    probe = f"{PREFIX}{os.getpid()}probe"
    made = _ip("netns", "add", probe)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


def _sweep_stale() -> None:
    """Remove namespaces of earlier test processes that no longer run (a killed run's leftovers)."""
    listing = _ip("netns", "list").stdout.split()
    for name in listing[:200]:
        if not name.startswith(PREFIX):
            continue
        digits = name[len(PREFIX):].split("x")[0].split("probe")[0]
        if digits.isdigit() and not Path(f"/proc/{digits}").exists():
            _ip("netns", "del", name)


class VethPair:
    def __init__(self) -> None:
        tag = f"{PREFIX}{os.getpid()}x{next(_serial)}"
        self.a, self.b = f"{tag}a", f"{tag}b"
        self._servers: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> "VethPair":
        _sweep_stale()
        try:
            for step in (["netns", "add", self.a], ["netns", "add", self.b],
                         ["link", "add", A_DEV, "netns", self.a, "type", "veth", "peer", "name", B_DEV, "netns", self.b],
                         ["-n", self.a, "addr", "add", f"{A_ADDR}/30", "dev", A_DEV],
                         ["-n", self.b, "addr", "add", f"{B_ADDR}/30", "dev", B_DEV],
                         ["-n", self.a, "link", "set", A_DEV, "up"], ["-n", self.b, "link", "set", B_DEV, "up"],
                         ["-n", self.a, "link", "set", "lo", "up"], ["-n", self.b, "link", "set", "lo", "up"]):
                _ip(*step, check=True)
            self.wait_carrier()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for proc in self._servers:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._servers = []
        for ns in (self.a, self.b):  # deleting a namespace deletes its end of the veth
            _ip("netns", "del", ns)

    def run(self, ns: str, *cmd: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_checked(["ip", "netns", "exec", ns, *cmd], timeout=timeout, check=check)

    def iperf3_server(self, port: int = 5201) -> None:
        """`iperf3 -s` in b on B_ADDR:port, and wait (bounded) until it listens."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.b, "iperf3", "-s", "-B", B_ADDR, "-p", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._servers.append(proc)
        for _ in range(100):
            listening = self.run(self.b, "ss", "-Hltn", f"sport = :{port}", check=False).stdout.strip()
            if listening:
                return
            if proc.poll() is not None:
                raise RuntimeError(f"iperf3 -s exited with {proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError("iperf3 -s did not listen within 5 s")

    def set_link(self, up: bool, ns: str | None = None) -> None:
        ns = ns or self.a
        dev = A_DEV if ns == self.a else B_DEV
        self.run(ns, "ip", "link", "set", dev, "up" if up else "down")
        if up:
            self.wait_carrier()

    def wait_carrier(self) -> None:
        for _ in range(100):
            if self.run(self.a, "cat", f"/sys/class/net/{A_DEV}/carrier", check=False).stdout.strip() == "1":
                return
            time.sleep(0.05)
        raise RuntimeError(f"{A_DEV} has no carrier after 5 s")

    def shape(self, rate: str | None) -> None:
        """Cap what nqv0 sends at `rate` (tc's token bucket), or remove the cap (None)."""
        if rate is None:
            self.run(self.a, "tc", "qdisc", "del", "dev", A_DEV, "root", check=False)
        else:
            self.run(self.a, "tc", "qdisc", "replace", "dev", A_DEV, "root", "tbf", "rate", rate,
                     "burst", "256kb", "latency", "50ms")

    def python(self, code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run Python (this interpreter, this checkout's nodeqc) inside namespace a."""
        return self.run(self.a, sys.executable, "-c", code, timeout=timeout, check=False)

    def nodeqc(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`nodeqc ARGS` as a user runs it, inside namespace a."""
        full_env = {**os.environ, **(env or {})}
        return subprocess.run(["ip", "netns", "exec", self.a, sys.executable, "-m", "nodeqc", *args],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=full_env)


class Fabric:
    """Several namespaces (`nodes`), each joined by a veth pair to a bridge in a hub namespace of
    their own: a switched network in miniature. Node i is 203.0.113.(10+i)/24 (TEST-NET-3, only
    inside these namespaces). `throttle(i, rate)` caps node i's link both ways with tc."""

    def __init__(self, count: int) -> None:
        tag = f"{PREFIX}{os.getpid()}x{next(_serial)}"
        self.hub = f"{tag}h"
        self.nodes = [f"{tag}n{i}" for i in range(count)]
        self.addresses = {ns: f"203.0.113.{10 + i}" for i, ns in enumerate(self.nodes)}

    def __enter__(self) -> "Fabric":
        _sweep_stale()
        try:
            steps = [["netns", "add", self.hub], ["-n", self.hub, "link", "add", "br0", "type", "bridge"],
                     ["-n", self.hub, "link", "set", "br0", "up"], ["-n", self.hub, "link", "set", "lo", "up"]]
            for i, ns in enumerate(self.nodes):
                steps += [["netns", "add", ns],
                          ["link", "add", "nqf0", "netns", ns, "type", "veth", "peer", "name", f"nqh{i}", "netns", self.hub],
                          ["-n", self.hub, "link", "set", f"nqh{i}", "master", "br0"],
                          ["-n", self.hub, "link", "set", f"nqh{i}", "up"],
                          ["-n", ns, "addr", "add", f"{self.addresses[ns]}/24", "dev", "nqf0"],
                          ["-n", ns, "link", "set", "nqf0", "up"], ["-n", ns, "link", "set", "lo", "up"]]
            for step in steps:
                _ip(*step, check=True)
            self._wait_reachable()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for ns in [*self.nodes, self.hub]:
            _ip("netns", "del", ns)

    def _wait_reachable(self) -> None:
        """The bridge forwards once its ports leave the listening state (bounded wait)."""
        for _ in range(100):
            states = [_ip("-n", self.hub, "-d", "link", "show", f"nqh{i}").stdout for i in range(len(self.nodes))]
            if all("state forwarding" in s for s in states):
                return
            time.sleep(0.1)
        raise RuntimeError("the fabric's bridge ports did not forward within 10 s")

    def throttle(self, index: int, rate: str) -> None:
        """Cap node `index`'s link at `rate` in both directions (its end and the hub's end)."""
        for ns, dev in ((self.nodes[index], "nqf0"), (self.hub, f"nqh{index}")):
            _ip("-n", ns, "link", "show", dev, check=True)
            run_checked(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate",
                         rate, "burst", "64kb", "latency", "50ms"], timeout=20)
