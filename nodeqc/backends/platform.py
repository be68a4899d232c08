"""The platform under the GPUs, from sysfs: DMI (BIOS and board), the PCIe tree above each device
(which switch it hangs off, its NUMA node, ACS on the bridges above it), the IOMMU mode, RDMA
firmware, NIC drivers, and the host's error counters (EDAC memory errors, PCIe AER).

`root` prefixes every path, so tests and the simulated node point it at a prepared tree; on a real
node it is `/`. Nothing here judges: the readings go to nodeqc.spec.baseline and nodeqc.checks.
"""

from __future__ import annotations

import os
import re
import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeqc.backends.base import normalise_bus_id
from nodeqc.core.na import NA
from nodeqc.core.names import PCI_ADDRESS
from nodeqc.core.text import is_digits

if TYPE_CHECKING:
    from nodeqc.backends.kernel_log import KernelLog

# PCIe extended capability ID of Access Control Services (PCIe Base Spec 6.0, 7.7.11; Linux
# include/uapi/linux/pci_regs.h PCI_EXT_CAP_ID_ACS = 0x0d), and its control register bits, named
# as `lspci -vvv` prints them in the ACSCtl line (pciutils ls-ecaps.c).
ACS_CAP_ID = 0x000D
ACS_BITS = (("SrcValid", 0x01), ("TransBlk", 0x02), ("ReqRedir", 0x04), ("CmpltRedir", 0x08),
            ("UpstreamFwd", 0x10), ("EgressCtrl", 0x20), ("DirectTrans", 0x40))
# The bits that send peer-to-peer traffic up to the root complex instead of across the switch: with
# them set on a switch port, GPUDirect P2P and RDMA detour through the CPU (NVIDIA GPUDirect RDMA
# guide, "PCI Access Control Services"; NCCL troubleshooting, "PCI Access Control Services (ACS)").
ACS_P2P_REDIRECT = ("ReqRedir", "CmpltRedir", "EgressCtrl")
PCI_BRIDGE_CLASS = "0x0604"
# DMI fields a baseline pins; readable without root (the serials are not, and are per node anyway).
DMI_FIELDS = ("bios_vendor", "bios_version", "bios_date", "board_vendor", "board_name", "sys_vendor",
              "product_name")
# AER counters in sysfs (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats): each file is
# "NAME COUNT" lines ending with a TOTAL_ERR_* line.
AER_FILES = {"correctable": ("aer_dev_correctable", "TOTAL_ERR_COR"),
             "nonfatal": ("aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
             "fatal": ("aer_dev_fatal", "TOTAL_ERR_FATAL")}


@dataclass
class PciFunction:
    """One PCI function and the bridges above it, root port first."""

    bus_id: str
    vendor: Any = NA
    device: Any = NA
    pci_class: Any = NA
    driver: Any = NA
    numa_node: Any = NA  # NA where the platform reports none (-1)
    iommu: Any = NA  # the IOMMU group's type: identity (passthrough), DMA, DMA-FQ; "off" without a group
    bridges: list[str] = field(default_factory=list)  # bus ids, root port first

    @property
    def switch(self) -> str | None:
        """The PCIe switch this function hangs off, by the bus id of the switch's upstream port (the
        bridge below the root port); None when it sits on a root port directly."""
        return self.bridges[1] if len(self.bridges) >= 2 else None


@dataclass
class RdmaDevice:
    name: str  # mlx5_0
    bus_id: Any = NA
    firmware: Any = NA  # fw_ver
    board_id: Any = NA  # e.g. MT_0000000838


@dataclass
class HostCounters:
    """Error counters of the host, read at the start and the end of a run."""

    edac: dict[str, dict[str, int]] = field(default_factory=dict)  # "mc0" / "mc0/dimm3" -> {"ce": n, "ue": n}
    edac_labels: dict[str, str] = field(default_factory=dict)  # "mc0/dimm3" -> "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0"
    aer: dict[str, dict[str, int]] = field(default_factory=dict)  # bus id -> {"correctable": n, ...}
    edac_present: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"edac": self.edac, "edac_labels": self.edac_labels, "aer": self.aer,
                "edac_present": self.edac_present}


class PlatformBackend(ABC):
    """What sysfs (or a simulated node's stand-in) says about the platform."""

    @abstractmethod
    def dmi(self) -> dict[str, Any]: ...

    @abstractmethod
    def pci(self, bus_id: str) -> PciFunction | None:
        """The function at this address with the bridges above it; None if there is none."""

    @abstractmethod
    def acs(self, bus_id: str) -> Any:
        """The ACS control register of a bridge as lspci shows it ("SrcValid+ ReqRedir- ..."): "" when
        the bridge has no ACS capability, NA when its config space cannot be read (needs root)."""

    @abstractmethod
    def iommu_enabled(self) -> Any: ...

    @abstractmethod
    def rdma_devices(self) -> list[RdmaDevice]: ...

    @abstractmethod
    def module_version(self, module: str) -> Any:
        """A kernel module's version (/sys/module/NAME/version), NA if it has none."""

    @abstractmethod
    def counters(self, bus_ids: list[str]) -> HostCounters:
        """EDAC counts, and AER counts of these functions and every bridge above them."""

    @abstractmethod
    def kernel_log(self, after_seq: int | None = None, since: float | None = None) -> "KernelLog":
        """A window on the kernel log from now on; or, for nodeqc watch, from where its earlier pass
        stopped (after_seq: /dev/kmsg's sequence number; since: Unix time, for the journal)."""

    def close(self) -> None:
        """Give back what reading the platform made (the simulated node's sysfs tree): nothing for
        the live /sys. Reading again after is allowed."""


class LinuxPlatform(PlatformBackend):
    def __init__(self, root: str | Path = "/"):
        self.root = Path(root)

    def _read(self, rel: str | Path) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None

    def _link_name(self, rel: str) -> str | None:
        try:
            return os.path.basename(os.readlink(self.root / rel))
        except OSError:
            return None

    # ------------------------------------------------------------------ identity

    def dmi(self) -> dict[str, Any]:
        out = {}
        for name in DMI_FIELDS:
            value = self._read(f"sys/class/dmi/id/{name}")
            out[name] = value if value else NA
        return out

    def module_version(self, module: str) -> Any:
        return self._read(f"sys/module/{module}/version") or NA

    def kernel_log(self, after_seq: int | None = None, since: float | None = None) -> "KernelLog":
        from nodeqc.backends.kernel_log import open_kernel_log

        return open_kernel_log(str(self.root / "dev/kmsg"), after_seq, since)

    def iommu_enabled(self) -> Any:
        base = self.root / "sys/class/iommu"
        if not base.is_dir():
            return NA
        return any(base.iterdir())

    def rdma_devices(self) -> list[RdmaDevice]:
        base = self.root / "sys/class/infiniband"
        if not base.is_dir():
            return []
        out = []
        for dev in sorted(base.iterdir()):
            rel = f"sys/class/infiniband/{dev.name}"
            bus = self._link_name(f"{rel}/device")
            out.append(RdmaDevice(dev.name, normalise_bus_id(bus) if bus else NA,
                                  self._read(f"{rel}/fw_ver") or NA, self._read(f"{rel}/board_id") or NA))
        return out

    # ------------------------------------------------------------------ the PCIe tree

    def _device_dir(self, bus_id: str) -> Path | None:
        link = self.root / "sys/bus/pci/devices" / bus_id
        if not link.exists():
            return None
        try:
            target = os.readlink(link)
        except OSError:
            return link  # a plain directory in a hand-made tree: no ancestry
        return (link.parent / target).resolve() if not os.path.isabs(target) else self.root / target.lstrip("/")

    def pci(self, bus_id: str) -> PciFunction | None:
        bus_id = normalise_bus_id(bus_id)
        where = self._device_dir(bus_id)
        if where is None:
            return None
        rel = f"sys/bus/pci/devices/{bus_id}"
        numa = self._read(f"{rel}/numa_node")
        group_type = self._read(f"{rel}/iommu_group/type")
        has_group = (self.root / rel / "iommu_group").exists()
        return PciFunction(
            bus_id=bus_id, vendor=self._read(f"{rel}/vendor") or NA, device=self._read(f"{rel}/device") or NA,
            pci_class=(self._read(f"{rel}/class") or "")[:6] or NA, driver=self._link_name(f"{rel}/driver") or NA,
            numa_node=int(numa) if numa and is_digits(numa.lstrip("-")) and int(numa) >= 0 else NA,
            iommu=group_type or ("off" if not has_group and self.iommu_enabled() is False else NA),
            bridges=_bridges(where))

    def acs(self, bus_id: str) -> Any:
        try:
            config = (self.root / "sys/bus/pci/devices" / bus_id / "config").read_bytes()
        except OSError:
            return NA
        return acs_from_config(config)

    # ------------------------------------------------------------------ error counters

    def counters(self, bus_ids: list[str]) -> HostCounters:
        out = HostCounters()
        self._edac(out)
        seen: set[str] = set()
        for bus in bus_ids:
            fn = self.pci(bus)
            for dev in ([*fn.bridges, fn.bus_id] if fn else [normalise_bus_id(bus)]):
                if dev in seen:
                    continue
                seen.add(dev)
                aer = self._aer(dev)
                if aer:
                    out.aer[dev] = aer
        return out

    def _aer(self, bus_id: str) -> dict[str, int]:
        counts = {}
        for kind, (name, total) in AER_FILES.items():
            text = self._read(f"sys/bus/pci/devices/{bus_id}/{name}")
            if text is None:
                continue
            value = parse_aer(text).get(total)
            if value is not None:
                counts[kind] = value
        return counts

    def _edac(self, out: HostCounters) -> None:
        base = self.root / "sys/devices/system/edac/mc"
        # The EDAC core makes .../edac/mc at its own start (drivers/edac/edac_mc_sysfs.c,
        # edac_mc_sysfs_init), built into most distribution kernels; only a memory controller's driver
        # (i10nm_edac, skx_edac, amd64_edac, ...) adds mcN. An empty mc watches nothing.
        # Only mcN and dimmN/csrowN themselves: "mc1-old" matches the glob too (a traceback, 2026-11-29).
        mcs = sorted((p for p in base.glob("mc[0-9]*") if is_digits(p.name[2:])), key=lambda p: int(p.name[2:])) \
            if base.is_dir() else []
        if not mcs:
            return
        out.edac_present = True
        for mc in mcs:
            rel = f"sys/devices/system/edac/mc/{mc.name}"
            ce, ue = _count(self._read(f"{rel}/ce_count")), _count(self._read(f"{rel}/ue_count"))
            if ce is not None and ue is not None:  # a count not read is left out, never read as 0
                out.edac[mc.name] = {"ce": ce, "ue": ue}
            # Newer kernels list DIMMs (dimmN/dimm_ce_count); older ones chip-select rows (csrowN/ce_count).
            for stem, prefix, label in (("dimm", "dimm_", "dimm_label"), ("csrow", "", "ch0_dimm_label")):
                parts = (p for p in mc.glob(f"{stem}[0-9]*") if is_digits(p.name[len(stem):]))
                for part in sorted(parts, key=lambda p: int(p.name[len(stem):])):
                    d = f"{rel}/{part.name}"
                    ce, ue = _count(self._read(f"{d}/{prefix}ce_count")), _count(self._read(f"{d}/{prefix}ue_count"))
                    if ce is not None and ue is not None:
                        key = f"{mc.name}/{part.name}"
                        out.edac[key] = {"ce": ce, "ue": ue}
                        out.edac_labels[key] = self._read(f"{d}/{label}") or ""


def _bridges(device_dir: Path) -> list[str]:
    """The bus ids above a device in /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/..., root
    port first (the path's components that are PCI addresses, less the device itself)."""
    parts = [p for p in device_dir.parts if PCI_ADDRESS.match(p.lower())]
    return [p.lower() for p in parts[:-1]]


def _count(text: str | None) -> int | None:
    """A sysfs counter's text as its count; None where it is none ("0x7", "", a word: read as 0
    before, and a controller's new memory errors passed unseen, 2026-11-29 fuzzing)."""
    text = (text or "").strip()
    return int(text) if re.fullmatch(r"[0-9]{1,20}", text) else None


def parse_aer(text: str) -> dict[str, int]:
    """aer_dev_correctable & co: 'RxErr 0\\nBadTLP 2\\n...\\nTOTAL_ERR_COR 2' -> {name: count}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"[0-9]{1,20}", parts[1]):  # a 64-bit count; not "²", which isdigit() takes
            out[parts[0]] = int(parts[1])
    return out


def acs_flags(control: int) -> str:
    """The ACS control register as lspci prints ACSCtl: 'SrcValid+ TransBlk- ReqRedir+ ...'."""
    return " ".join(f"{name}{'+' if control & bit else '-'}" for name, bit in ACS_BITS)


def acs_from_config(config: bytes) -> Any:
    """The ACS control flags from a function's config space (sysfs `config`): walk the extended
    capabilities from 0x100. Without root only the first 64 bytes can be read: NA (unknown), not
    "no ACS"."""
    if len(config) <= 0x100:
        return NA
    offset, seen = 0x100, set()
    while offset and offset + 8 <= len(config) and offset not in seen:
        seen.add(offset)
        header = struct.unpack_from("<I", config, offset)[0]
        if header in (0, 0xFFFFFFFF):
            return ""
        if header & 0xFFFF == ACS_CAP_ID:
            control = struct.unpack_from("<H", config, offset + 6)[0]
            return acs_flags(control)
        offset = (header >> 20) & 0xFFC
    return ""


_ACSCTL = re.compile(r"ACSCtl:\s*(.+)")


def acs_from_lspci(text: str) -> dict[str, str]:
    """bus id -> ACSCtl flags, from `lspci -vvv` (or `-vvvD`) output; functions without an ACSCtl
    line are left out."""
    out, current = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            addr = line.split()[0]
            current = normalise_bus_id(addr if addr.count(":") == 2 else f"0000:{addr}")
            continue
        m = _ACSCTL.search(line)
        if m and current:
            flags = [f for f in m.group(1).split() if f[-1:] in "+-"]
            out[current] = " ".join(flags)
    return out


def redirecting(flags: Any) -> list[str]:
    """The P2P-redirecting ACS controls that are enabled in an ACSCtl string."""
    if not isinstance(flags, str):
        return []
    enabled = {f[:-1] for f in flags.split() if f.endswith("+")}
    return [name for name in ACS_P2P_REDIRECT if name in enabled]
