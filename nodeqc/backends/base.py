"""The narrow interfaces between nodeqc and hardware, and the plain records they return.

Checks and the runner see only these. A reading the hardware cannot give is NA (nodeqc.na), a GPU
that stops answering raises GpuLostError, a backend that cannot start raises BackendUnavailable.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from nodeqc.na import NA, or_none

# NVML clocks-event-reason bits (nvmlDeviceGetCurrentClocksEventReasons).
REASON_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal": 0x20,
    "hw_thermal": 0x40,
    "power_brake": 0x80,
    "display_clocks": 0x100,
}


def decode_reasons(mask: int) -> list[str]:
    """Every reason whose bit is set: reasons combine, so never compare the mask for equality."""
    return [name for name, bit in REASON_BITS.items() if mask & bit]


def normalise_bus_id(bus_id: str) -> str:
    """'00000000:07:00.0' (NVML) and '0000:07:00.0' (sysfs) -> '0000:07:00.0'."""
    bus_id = bus_id.strip().lower()
    domain, _, rest = bus_id.partition(":")
    return f"{int(domain, 16):04x}:{rest}" if rest else bus_id


def _dict(obj: Any) -> dict[str, Any]:
    return {k: or_none(v) for k, v in asdict(obj).items()}


@dataclass
class GpuInfo:
    """What a GPU is: identity, capabilities and limits, read once."""

    index: int
    name: str
    uuid: str
    bus_id: str
    serial: Any = NA
    memory_total_bytes: Any = NA
    vbios: Any = NA
    board_part: Any = NA
    compute_capability: Any = NA
    ecc_enabled: Any = NA
    ecc_pending: Any = NA
    persistence: Any = NA
    pcie_max_gen: Any = NA  # what the device and slot together allow
    pcie_max_width: Any = NA
    pcie_gpu_max_gen: Any = NA  # what the GPU alone allows
    temp_slowdown_c: Any = NA
    temp_shutdown_c: Any = NA
    temp_gpu_max_c: Any = NA
    temp_mem_max_c: Any = NA
    power_limit_w: Any = NA
    power_default_limit_w: Any = NA
    max_sm_clock_mhz: Any = NA
    max_mem_clock_mhz: Any = NA
    nvlink_count: Any = NA
    lost: bool = False  # the driver lists it but it does not answer: it stays, saying so
    # Position among the NVIDIA GPUs on the PCI bus: a GPU the driver failed to bring up shifts the
    # driver's indices of those after it, never their slots. Reports name GPUs by slot.
    slot: int | None = None

    @property
    def subject(self) -> str:
        return f"gpu{self.index if self.slot is None else self.slot}"

    def to_dict(self) -> dict[str, Any]:
        return _dict(self)


@dataclass
class GpuSample:
    """One telemetry reading of one GPU."""

    temp_c: Any = NA
    mem_temp_c: Any = NA
    power_w: Any = NA
    power_limit_w: Any = NA
    sm_clock_mhz: Any = NA
    mem_clock_mhz: Any = NA
    util_pct: Any = NA
    mem_util_pct: Any = NA
    reasons: Any = NA  # clocks-event-reason bitmask
    pcie_gen: Any = NA
    pcie_width: Any = NA

    FIELDS = ("temp_c", "mem_temp_c", "power_w", "power_limit_w", "sm_clock_mhz", "mem_clock_mhz",
              "util_pct", "mem_util_pct", "reasons", "pcie_gen", "pcie_width")

    def to_dict(self) -> dict[str, Any]:
        return _dict(self)


@dataclass
class GpuCounters:
    """Error counters and memory-health state; the run compares a reading at the start and the end."""

    ecc_sbe_volatile: Any = NA
    ecc_dbe_volatile: Any = NA
    pcie_replay: Any = NA
    remap_correctable: Any = NA
    remap_uncorrectable: Any = NA
    remap_pending: Any = NA
    remap_failure: Any = NA
    retired_sbe: Any = NA
    retired_dbe: Any = NA
    retired_pending: Any = NA

    def to_dict(self) -> dict[str, Any]:
        return _dict(self)


@dataclass(frozen=True)
class XidEvent:
    gpu: int
    code: int
    t: float  # on the run's clock


@dataclass
class PciDevice:
    bus_id: str
    vendor: str
    device: str
    pci_class: str


@dataclass
class HostInfo:
    hostname: str
    system_vendor: Any = NA
    system_model: Any = NA
    system_serial: Any = NA
    board_serial: Any = NA
    bios_version: Any = NA
    cpu_model: Any = NA
    sockets: Any = NA
    cores: Any = NA
    threads: Any = NA
    memory_bytes: Any = NA
    numa_nodes: Any = NA
    os: Any = NA
    kernel: Any = NA
    nvidia_gpus_on_pci: list[PciDevice] = field(default_factory=list)
    fabric_manager: Any = NA  # the NVSwitch fabric manager daemon runs (True/False)
    peer_memory_module: Any = NA  # the GPUDirect RDMA module loaded ("nvidia_peermem"), "" if none

    def to_dict(self) -> dict[str, Any]:
        d = _dict(self)
        d["nvidia_gpus_on_pci"] = [asdict(p) for p in self.nvidia_gpus_on_pci]
        return d


class Clock:
    """The run's clock. Real runs use real time; the simulated node compresses it (`scale`
    simulated seconds per real second) so a simulated burn-in of hours takes a minute."""

    def __init__(self, scale: float = 1.0, origin: float | None = None):
        self.scale = scale
        self.origin = time.monotonic() if origin is None else origin

    def now(self) -> float:
        """Seconds on this clock since its origin."""
        return (time.monotonic() - self.origin) * self.scale

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds) / self.scale)

    def wall(self, seconds: float) -> float:
        """Real seconds that `seconds` on this clock take."""
        return seconds / self.scale


class GpuManagement(ABC):
    """GPU management: inventory, telemetry, counters, XID events (NVML and its stand-ins)."""

    simulated = False

    @abstractmethod
    def open(self) -> None:
        """Start the backend; raise BackendUnavailable with a plain reason if it cannot."""

    def close(self) -> None:
        """Release the backend."""

    @abstractmethod
    def driver_version(self) -> str: ...

    @abstractmethod
    def cuda_version(self) -> str: ...

    @abstractmethod
    def gpus(self) -> list[GpuInfo]: ...

    @abstractmethod
    def sample(self, index: int) -> GpuSample:
        """Current telemetry; raises GpuLostError when the GPU stopped answering."""

    @abstractmethod
    def counters(self, index: int) -> GpuCounters:
        """Current error counters; raises GpuLostError when the GPU stopped answering."""

    @abstractmethod
    def wait_xids(self, timeout_s: float, clock: Clock) -> list[XidEvent]:
        """XID events that arrive within timeout_s (blocks up to that long)."""


class HostBackend(ABC):
    """The host: CPU, memory, DMI, PCI (psutil and sysfs, or a scenario's)."""

    @abstractmethod
    def info(self) -> HostInfo: ...
