"""Peers for NIC traffic: `--nic-peer HOST[:PORT]` (any NIC) or `--nic-peer NIC=HOST[:PORT]` (that
NIC), from the command line or the profile's `[nic] peers`.

A peer runs the servers: `iperf3 -s -p PORT` for TCP, `ib_write_bw -d DEVICE -p PORT` for RDMA.
Every NIC sent to one peer host gets its own port (one iperf3 server serves one test at a time):
counting up from the tool's default, or from the port a peer for any NIC names; a peer for one NIC
(`NIC=HOST:PORT`) gets exactly the port it names, so two of those may not name the same host and port.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from nodeqc.core.errors import UsageError
from nodeqc.core.text import is_digits

IPERF3_PORT = 5201
IB_WRITE_BW_PORT = 18515

_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_NIC = re.compile(r"^[A-Za-z0-9_.:-]{1,32}$")
EXAMPLE = "expected HOST, HOST:PORT or NIC=HOST[:PORT], e.g. 10.0.0.2 or eth0=10.0.0.2:5202"


@dataclass(frozen=True)
class Peer:
    host: str
    port: int | None = None  # None: counted up from the tool's default port
    nic: str | None = None  # None: for any NIC without a peer of its own

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (f"{self.nic}=" if self.nic else "") + host + (f":{self.port}" if self.port else "")


def parse_peer(text: str, where: str = "--nic-peer") -> Peer:
    """One peer; raise UsageError naming what is wrong."""
    shown = f"{where} {text}"
    nic, sep, rest = text.strip().partition("=")
    if not sep:
        nic, rest = "", text.strip()
    if sep and not _NIC.match(nic):
        raise UsageError(f"{shown}: {nic!r} is not an interface name; {EXAMPLE}")
    host, port = _split_port(rest, shown)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOSTNAME.match(host):
            raise UsageError(f"{shown}: {host!r} is not a host name or IP address; {EXAMPLE}") from None
    return Peer(host, port, nic or None)


def _split_port(text: str, shown: str) -> tuple[str, int | None]:
    if text.startswith("["):  # [IPv6]:PORT
        host, _, tail = text[1:].partition("]")
        if tail and not tail.startswith(":"):
            raise UsageError(f"{shown}: expected [IPV6]:PORT; {EXAMPLE}")
        port = tail[1:] if tail else None
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:  # a bare IPv6 address, or a name
        host, port = text, None
    if not host:
        raise UsageError(f"{shown}: no host; {EXAMPLE}")
    if port is None:
        return host, None
    if not is_digits(port) or not 1 <= int(port) <= 65535:
        raise UsageError(f"{shown}: port {port!r}: expected 1-65535")
    return host, int(port)


def parse_peers(texts: list[str], where: str = "--nic-peer") -> list[Peer]:
    peers = [parse_peer(t, where) for t in texts]
    named = [p.nic for p in peers if p.nic]
    twice = sorted({n for n in named if named.count(n) > 1})
    if twice:
        raise UsageError(f"{where}: NIC {twice[0]} is given more than one peer")
    fixed = [p for p in peers if p.nic and p.port]
    for i, a in enumerate(fixed):
        for b in fixed[i + 1:]:
            if (a.host, a.port) == (b.host, b.port):
                raise UsageError(f"{where}: {a} and {b}: one iperf3 server serves one test at a time; "
                                 "give each NIC its own port")
    return peers
