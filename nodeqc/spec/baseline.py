"""Golden baselines: what a known-good node is made of, recorded as a plain TOML file that a person
can review and keep under version control, and the same observation of any node to compare with it
(nodeqc.checks.conformance).

    nodeqc baseline create golden.toml          # on the known-good node
    nodeqc --headless --profile hgx-h100 --baseline golden.toml    # on every other node

The file has a table per part: [node] (driver, CUDA, kernel, BIOS from DMI, IOMMU mode), [gpu.gpuN]
(model, VBIOS, GSP firmware, InfoROM, modes, application clocks, power limit, NUMA node, the devices
on its PCIe switch), [nic.NAME] (driver and its version, HCA firmware, NUMA node, switch peers),
["bridge"."BUS"] (ACS control of each bridge between a GPU or NIC and its root port). A value the
node could not report is left out, and what is left out is not compared. Delete a line to stop
comparing it. What a run has no backend to read (a replay: no sysfs, no NICs) the observation
names under "unread", with the reason; it never reaches the file.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nodeqc import __version__
from nodeqc.backends.base import GpuInfo, HostInfo, NicInfo
from nodeqc.backends.platform import PlatformBackend
from nodeqc.core.errors import UsageError
from nodeqc.core.na import is_na
from nodeqc.core.safefile import UnreadableInput, as_toml, read_input
from nodeqc.core.schema import Spec, show, type_problem
from nodeqc.core.text import is_digits

FORMAT = 1
HEADER = """\
# nodeqc golden baseline: what every node of this build must match (nodeqc --baseline FILE).
# Review it like code. Delete a line to stop comparing it; a profile's baseline_warn / baseline_ignore
# turn fields into warnings or leave them out.
"""


# The fields a baseline holds, per kind of subject. The conformance check (nodeqc.checks.conformance)
# judges each of them, with its code and remediation; tests/test_conformance.py holds the two lists equal.
NODE_FIELDS = ("driver", "cuda", "kernel", "bios_vendor", "bios_version", "bios_date", "board_vendor", "board_name",
               "sys_vendor", "product_name", "iommu")
GPU_FIELDS = ("model", "vbios", "gsp_firmware", "inforom_image", "inforom_oem", "inforom_ecc", "inforom_power", "ecc",
              "persistence", "mig_mode", "compute_mode", "app_sm_clock_mhz", "app_mem_clock_mhz", "power_limit_w",
              "bus_id", "numa_node", "pcie_switch_peers")
NIC_FIELDS = ("driver", "driver_version", "firmware", "bus_id", "numa_node", "pcie_switch_peers")
# Every field a profile may name in baseline_warn / baseline_ignore.
ALL_FIELDS = sorted(set(NODE_FIELDS) | set(GPU_FIELDS) | set(NIC_FIELDS) | {"acs", "devices"})


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """Drop what could not be read (NA, None): the baseline records only what it knows."""
    return {k: v for k, v in d.items() if v is not None and not is_na(v) and v != ""}


# What the platform backend (sysfs: DMI, the PCIe tree, /sys/class/infiniband, module versions) and
# the NIC backend read, by table; "devices" is which parts there are at all. A run without one of
# them (a replay of an NVML capture has neither) has not looked, which is not finding them absent:
# the observation names them under "unread", and nodeqc.checks.conformance does not compare them.
READ_BY_PLATFORM: dict[str, tuple[str, ...]] = {
    "node": ("bios_vendor", "bios_version", "bios_date", "board_vendor", "board_name", "sys_vendor", "product_name",
             "iommu"),
    "gpu": ("numa_node", "pcie_switch_peers"),
    "nic": ("driver_version", "firmware", "numa_node", "pcie_switch_peers"),
    "bridge": ("devices",),  # the bridges above the GPUs and NICs, and so their ACS
}
READ_BY_NIC_BACKEND: dict[str, tuple[str, ...]] = {"nic": ("devices",)}  # the NICs, and so all about them
# A device the driver lists whose PCI function the platform backend cannot find (a container that
# shows part of the host's sysfs): its NUMA node, its switch and the bridges above it are unknown.
# The observation lists such devices under unread["pci"] ({device: why}).
UNPLACED = "not found in /sys/bus/pci, so its place in the PCIe tree is unknown (a container without the host's sysfs?)"


def observe(gpus: list[GpuInfo], driver: str, cuda: str, host: HostInfo, nics: list[NicInfo] | None,
            platform: PlatformBackend | None, absent: str = "this run has no backend for the host") -> dict[str, Any]:
    """This node, in the baseline's shape. `nics` or `platform` None: this run has no backend for
    them, for the reason `absent`; what they would have read is under "unread" ({table: {field or
    "devices": why}}), never left out as if the node lacked it. A GPU or NIC whose PCI function the
    platform cannot find is under unread["pci"] ({device: why})."""
    unread: dict[str, dict[str, str]] = {}
    for reads, missing in ((READ_BY_PLATFORM, platform is None), (READ_BY_NIC_BACKEND, nics is None)):
        for kind, names in reads.items() if missing else ():
            unread.setdefault(kind, {}).update(dict.fromkeys(names, absent))
    nics = nics or []
    live = [g for g in gpus if not g.lost]
    names = {g.bus_id: g.subject for g in live} | {n.bus_id: n.name for n in nics if not is_na(n.bus_id)}
    functions = {}
    unplaced: dict[str, str] = {}
    if platform is not None:
        for bus in names:
            fn = platform.pci(bus)
            if fn is not None:
                functions[bus] = fn
            else:  # the driver sees it, sysfs does not: where it sits is unknown, not changed
                unplaced[names[bus]] = UNPLACED
    if unplaced:
        unread["pci"] = unplaced
    by_switch: dict[str, list[str]] = {}
    for bus, fn in functions.items():
        if fn.switch:
            by_switch.setdefault(fn.switch, []).append(names[bus])

    def peers(bus: str) -> list[str] | None:
        fn = functions.get(bus)
        if fn is None:
            return None
        return sorted(n for n in by_switch.get(fn.switch or "", []) if n != names[bus])

    dmi = platform.dmi() if platform is not None else {}
    iommu = Counter(fn.iommu for fn in functions.values() if not is_na(fn.iommu)).most_common(1)
    node = _clean({"driver": driver if driver != "N/A" else None, "cuda": cuda if cuda != "N/A" else None,
                   "kernel": host.kernel, **{k: dmi.get(k) for k in NODE_FIELDS if k in dmi},
                   "iommu": iommu[0][0] if iommu else None})
    gpu_table = {}
    for g in live:
        fn = functions.get(g.bus_id)
        gpu_table[g.subject] = _clean({
            "bus_id": g.bus_id, "model": g.name, "vbios": g.vbios, "gsp_firmware": g.gsp_firmware,
            "inforom_image": g.inforom_image, "inforom_oem": g.inforom_oem, "inforom_ecc": g.inforom_ecc,
            "inforom_power": g.inforom_power, "ecc": g.ecc_enabled, "persistence": g.persistence,
            "mig_mode": g.mig_mode, "compute_mode": g.compute_mode, "app_sm_clock_mhz": g.app_sm_clock_mhz,
            "app_mem_clock_mhz": g.app_mem_clock_mhz, "power_limit_w": g.power_limit_w,
            "numa_node": fn.numa_node if fn else None, "pcie_switch_peers": peers(g.bus_id)})
    rdma = {d.bus_id: d for d in platform.rdma_devices()} if platform is not None else {}
    nic_table = {}
    for n in nics:
        if n.virtual:
            continue
        fn = functions.get(n.bus_id)
        dev = rdma.get(n.bus_id)
        nic_table[n.name] = _clean({
            "bus_id": n.bus_id, "driver": n.driver,
            "driver_version": platform.module_version(n.driver) if platform is not None and not is_na(n.driver) else None,
            "firmware": dev.firmware if dev else None, "numa_node": fn.numa_node if fn else None,
            "pcie_switch_peers": peers(n.bus_id)})
    bridges: dict[str, dict[str, Any]] = {}
    for bus, fn in functions.items():
        for bridge in fn.bridges:
            entry = bridges.setdefault(bridge, {"above": []})
            entry["above"].append(names[bus])
    for bridge, entry in bridges.items():
        entry["above"] = sorted(entry["above"], key=_natural)
        acs = platform.acs(bridge) if platform is not None else None
        if acs is not None and not is_na(acs):
            entry["acs"] = acs
    return {"node": node, "gpu": gpu_table, "nic": nic_table, "bridge": dict(sorted(bridges.items())),
            "unread": unread}


def _natural(name: str) -> list[Any]:
    return [int(t) if is_digits(t) else t for t in re.split(r"(\d+)", name)]


# ---------------------------------------------------------------------- the file


def render(observed: dict[str, Any], hostname: str, simulated: bool) -> str:
    """The baseline as TOML: a header, [baseline] provenance, then the parts."""
    meta = {"format": FORMAT, "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "hostname": hostname, "nodeqc": __version__, "simulated": simulated}
    lines = [HEADER, "[baseline]", *_pairs(meta), "", "[node]", *_pairs(observed["node"])]
    for kind in ("gpu", "nic"):
        for name, table in sorted(observed.get(kind, {}).items(), key=lambda kv: _natural(kv[0])):
            lines += ["", f"[{kind}.{_key(name)}]", *_pairs(table)]
    for name, table in observed.get("bridge", {}).items():
        lines += ["", f"[bridge.{_key(name)}]", *_pairs(table)]
    return "\n".join(lines) + "\n"


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _string(name)


def _string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() else _escape(c) for c in escaped)
    return f'"{escaped}"'


def _escape(c: str) -> str:
    """TOML's escape of a character not shown as itself: \\uXXXX, or \\UXXXXXXXX past U+FFFF (five
    digits after \\u read as four and a stray digit: a NIC's name that did not round-trip, 2026-11-29
    fuzzing); a lone surrogate, which no TOML string holds, as U+FFFD."""
    code = ord(c)
    if 0xD800 <= code <= 0xDFFF:
        return "\\ufffd"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else _string(str(v))
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return _string(str(v))


def _pairs(table: dict[str, Any]) -> list[str]:
    return [f"{_key(k)} = {_value(v)}" for k, v in table.items()]


MAX_BASELINE_BYTES = 4 << 20  # a baseline of 64 GPUs and NICs is some 30 kB; anything far larger is not one


def _spec(kind: str, help: str = "", low: float | None = None) -> Spec:
    return Spec(kind, help, low=low)


_TEXT = _spec("str")
_PEERS = _spec("names")
# Each key's type, as a profile's (nodeqc.spec.profile.SCHEMA): a wrong one is refused by name, so a
# hand-edited `power_limit_w = inf` or `numa_node = false` can never match a node's 700 W or node 0.
TABLES: dict[str, dict[str, Spec]] = {
    "baseline": {"format": _spec("int"), "created_at": _TEXT, "hostname": _TEXT, "nodeqc": _TEXT,
                 "simulated": _spec("bool")},
    "node": dict.fromkeys(NODE_FIELDS, _TEXT),
    "gpu": {**dict.fromkeys(GPU_FIELDS, _TEXT), "ecc": _spec("bool"), "persistence": _spec("bool"),
            "app_sm_clock_mhz": _spec("number", low=0), "app_mem_clock_mhz": _spec("number", low=0),
            "power_limit_w": _spec("number", low=0), "numa_node": _spec("int", low=0), "pcie_switch_peers": _PEERS},
    "nic": {**dict.fromkeys(NIC_FIELDS, _TEXT), "numa_node": _spec("int", low=0),
            "pcie_switch_peers": _PEERS},
    "bridge": {"above": _spec("strlist"), "acs": _TEXT},
}
PARTS = ("gpu", "nic", "bridge")  # tables of tables: [gpu.NAME]


def load(path: str | Path) -> dict[str, Any]:
    """Read and check a baseline file; a bad one is a UsageError naming the file and the key."""
    return _read(Path(path))[0]


def _read(path: Path) -> tuple[dict[str, Any], str]:
    """The baseline's tables and the sha256 of the bytes they came from, read once: a regular file
    of a baseline's size (never a FIFO, which would hang, nor a device such as /dev/zero), TOML,
    every key of the type it must be, and something recorded."""
    where = f"baseline {path}"
    try:
        raw = read_input(path, MAX_BASELINE_BYTES, "baseline")
        data = as_toml(raw)
    except UnreadableInput as e:
        if isinstance(e.__cause__, FileNotFoundError):
            raise UsageError(f"{where}: no such file (make one with: nodeqc baseline create {path})") from None
        raise UsageError(f"{where}: {e}") from None
    meta = data.get("baseline")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or isinstance(meta.get("format"), bool):
        raise UsageError(f"{where}: [baseline] format = {FORMAT} missing: not a nodeqc baseline")
    unknown = set(data) - set(TABLES)
    if unknown:
        raise UsageError(f"{where}: unknown table [{sorted(unknown)[0]}] (known: baseline, node, gpu, nic, bridge)")
    _check_table(where, "baseline", meta, TABLES["baseline"])
    _check_table(where, "node", data.get("node", {}), TABLES["node"])
    for kind in PARTS:
        parts = data.get(kind, {})
        if not isinstance(parts, dict):
            raise UsageError(f"{where}: [{kind}]: expected tables like [{kind}.NAME]")
        for name, table in parts.items():
            _check_table(where, f"{kind}.{name}", table, TABLES[kind])
    # An empty [gpu.gpu0] compares nothing either: a baseline of empty tables passed any node, exit 0.
    if not data.get("node") and not any(any(data.get(kind, {}).values()) for kind in PARTS):
        raise UsageError(f"{where}: records nothing (no [node] field, no [gpu.*], [nic.*] or [bridge.*]): it "
                         f"would pass any node; make one on a known-good node with: nodeqc baseline create {path}")
    return data, hashlib.sha256(raw).hexdigest()


def _check_table(where: str, name: str, table: Any, specs: dict[str, Spec]) -> None:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [{name}]: expected a table, got {show(table)}")
    for key, value in table.items():
        spec = specs.get(key)
        if spec is None:
            raise UsageError(f"{where}: [{name}] {key}: unknown key (known: {', '.join(sorted(specs))})")
        problem = type_problem(spec, key, value)
        if problem:
            raise UsageError(f"{where}: [{name}] {key}: {problem}")


@dataclass(frozen=True)
class Baseline:
    """A loaded baseline and how a profile wants it applied."""

    path: Path
    data: dict[str, Any]
    sha256: str
    warn: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()

    @classmethod
    def load(cls, path: str | Path, profile: Any = None) -> "Baseline":
        path = Path(path)
        data, digest = _read(path)
        warn = frozenset(profile.data.get("baseline_warn", [])) if profile is not None else frozenset()
        ignore = frozenset(profile.data.get("baseline_ignore", [])) if profile is not None else frozenset()
        for name in sorted(warn | ignore):
            if name not in ALL_FIELDS:
                raise UsageError(f"profile {profile.name}: baseline_warn/baseline_ignore: unknown field {name!r} "
                                 f"(known: {', '.join(ALL_FIELDS)})")
        return cls(path, data, digest, warn, ignore)

    def summary(self) -> dict[str, Any]:
        meta = self.data.get("baseline", {})
        return {"file": self.path.name, "sha256": self.sha256, "created_at": meta.get("created_at"),
                "hostname": meta.get("hostname"), "warn": sorted(self.warn), "ignore": sorted(self.ignore)}


def baseline_of_profile(profile: Any) -> Baseline | None:
    """The profile's `baseline = FILE` (relative to the profile's file), loaded; None without one."""
    path = profile.baseline_path
    return Baseline.load(path, profile) if path is not None else None
