"""The narrow interfaces between nodeqc and hardware, and the plain records they return.

Checks and the runner see only these. A reading the hardware cannot give is NA (nodeqc.core.na), a GPU
that stops answering raises GpuLostError, a backend that cannot start raises BackendUnavailable.
"""

from __future__ import annotations

import contextlib
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator

from nodeqc.core.na import NA, or_none

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


# What a device's plain load (busy_step: stress.power, the capture's load) computes in: half-precision
# products, the dtype whose loaded clock at the power limit was measured (nodeqc.core.skus).
PLAIN_LOAD_DTYPE = "fp16"


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


# The kinds of path between two GPUs, nearest first: NVLink, then NVML's PCIe topology levels
# (nvmlGpuTopologyLevel_t: INTERNAL, SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM). "unknown" where
# the driver does not say.
PEER_PATHS = {"nvlink": "NVLink", "board": "the same board", "switch": "one PCIe switch",
              "switches": "several PCIe switches", "host_bridge": "a PCIe host bridge",
              "numa_node": "host bridges of one NUMA node", "system": "the link between CPU sockets",
              "unknown": "a path the driver does not report"}


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
    pci_device_id: Any = NA  # the PCI device id (0x2330: H100 SXM5), which names the SKU (nodeqc.core.skus)
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
    # The NVLink fabric registration NVML reports (nodeqc.core.fabric: state, status, cluster_uuid,
    # clique_id, health_mask); NA where the GPU or driver does not answer.
    fabric: Any = NA
    # Firmware and settings a golden baseline pins (nodeqc baseline): what two nodes of one fleet
    # must share to behave alike.
    gsp_firmware: Any = NA  # GSP firmware version; NA where the GPU has no GSP or runs without it
    inforom_image: Any = NA  # InfoROM image version, e.g. G520.0200.00.05
    inforom_oem: Any = NA  # InfoROM object versions
    inforom_ecc: Any = NA
    inforom_power: Any = NA
    mig_mode: Any = NA  # "enabled" | "disabled"; NA on GPUs without MIG
    compute_mode: Any = NA  # "default" | "exclusive_process" | "prohibited"
    app_sm_clock_mhz: Any = NA  # application clocks (nvidia-smi -ac)
    app_mem_clock_mhz: Any = NA
    # How this GPU reaches each other GPU, by the other's index (a string, as in JSON): PEER_PATHS'
    # keys, from NVML's P2P status and common PCIe ancestor. GPU-to-GPU copies are compared only
    # with copies over the same kind of path (nodeqc.checks.stress.p2p.judge_p2p).
    peer_paths: dict[str, str] = field(default_factory=dict)
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
    # NVML_FI_DEV_POWER_INSTANT: the power now, where power_w is NVML's reading of the last update
    # (about ten a second); under swinging load it peaks above the limit (881-951 W against 700 W on
    # an H100 SXM5: shared/measurements/README.md). NA where the driver does not answer it.
    power_instant_w: Any = NA

    FIELDS = ("temp_c", "mem_temp_c", "power_w", "power_limit_w", "sm_clock_mhz", "mem_clock_mhz",
              "util_pct", "mem_util_pct", "reasons", "pcie_gen", "pcie_width", "power_instant_w")

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
    nvlink_active: Any = NA  # links up now
    nvlink_replay: Any = NA  # error counters, summed over the links
    nvlink_recovery: Any = NA
    nvlink_crc: Any = NA
    # ECC errors in the GPU's on-chip memories (SRAM: caches, register files) since the GPU was made
    # (NVML's aggregate counters), and which of NVML's locations answered.
    onchip_ecc_corrected: Any = NA
    onchip_ecc_uncorrected: Any = NA
    onchip_ecc_locations: Any = NA
    # How long the clocks have been held down for each reason, in ns, counted by the driver itself
    # (NVML field values NVML_FI_DEV_CLOCKS_EVENT_REASON_*): exact whatever the sample rate, where
    # a sampled bitmask only sees what a sample lands on.
    throttle_ns_sw_power_cap: Any = NA
    throttle_ns_sw_thermal: Any = NA
    throttle_ns_hw_thermal: Any = NA
    throttle_ns_power_brake: Any = NA

    def to_dict(self) -> dict[str, Any]:
        return _dict(self)

    def throttle_ns(self) -> dict[str, Any]:
        """reason -> ns the driver counted (NA where it does not count that reason)."""
        return {reason: getattr(self, f"throttle_ns_{reason}") for reason in COUNTED_REASONS}


# The reasons the driver times on its own (NVML field id names, as nvidia-ml-py spells them).
COUNTED_REASONS: dict[str, str] = {
    "sw_power_cap": "NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP",
    "sw_thermal": "NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN",
    "hw_thermal": "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN",
    "power_brake": "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN",
}


@dataclass(frozen=True)
class GpuProcess:
    """A process with a compute context on a GPU (nvmlDeviceGetComputeRunningProcesses)."""

    pid: int
    name: Any = NA  # NA: the process is not visible from here (another container or machine)
    used_bytes: Any = NA  # NA: the driver does not say (some VMs, MIG)

    def to_dict(self) -> dict[str, Any]:
        return _dict(self)

    def describe(self) -> str:
        """'pid 4242 (python3, 1.05 GiB)': what a technician needs to find it."""
        name = "name unknown" if self.name is NA or self.name is None else str(self.name)
        used = "" if self.used_bytes is NA or self.used_bytes is None else f", {self.used_bytes / 2 ** 30:.2f} GiB"
        return f"pid {self.pid} ({name}{used})"


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
    # NVIDIA IMEX (multi-node NVLink memory export): {"running": bool, "channels": int (entries of
    # /dev/nvidia-caps-imex-channels; None where the directory is absent), "nodes": [addresses in its
    # nodes config] (None where the file is absent), "own": [this node's addresses and host names]
    # (None where not read)}; NA where the process list could not be read.
    imex: Any = NA

    def to_dict(self) -> dict[str, Any]:
        d = _dict(self)
        d["nvidia_gpus_on_pci"] = [asdict(p) for p in self.nvidia_gpus_on_pci]
        return d


@dataclass
class IbPort:
    """One port of an RDMA device (InfiniBand, or RoCE when link_layer is Ethernet)."""

    device: str  # mlx5_0
    port: int
    state: Any = NA  # ACTIVE, DOWN, INIT, ARMED
    phys_state: Any = NA  # LinkUp, Polling, Disabled
    rate_gbit: Any = NA
    link_layer: Any = NA  # InfiniBand or Ethernet
    counters: dict[str, Any] = field(default_factory=dict)  # symbol_error, link_downed, link_error_recovery

    @property
    def label(self) -> str:
        return f"{self.device}/{self.port}"


# No NIC port carries more than 1.6 Tb/s, the fastest Ethernet defined (IEEE 802.3dj, 2025);
# InfiniBand XDR ports run at 800 Gb/s. A rate read above it is not the port's.
MAX_PORT_GBIT = 1600.0


@dataclass
class NicInfo:
    """One NIC as sysfs shows it at one moment, error counters included."""

    name: str  # interface name, or the RDMA device's name when it has no interface (no IPoIB)
    kind: str = "ethernet"  # ethernet | infiniband
    driver: Any = NA
    mac: Any = NA
    operstate: Any = NA  # up, down, lowerlayerdown, unknown, ...
    carrier: Any = NA  # 1 when the link has carrier
    speed_mbps: Any = NA
    mtu: Any = NA
    bus_id: Any = NA
    virtual: bool = False  # veth, bridge, bond, VLAN, VF: not a NIC of its own
    interface: bool = True  # False: an RDMA device without a network interface (IPoIB not loaded)
    pcie_gen: Any = NA
    pcie_width: Any = NA
    pcie_max_gen: Any = NA
    pcie_max_width: Any = NA
    carrier_changes: Any = NA
    addresses: list[str] = field(default_factory=list)  # IPv4 first
    ib_ports: list[IbPort] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = _dict(self)
        d["ib_ports"] = [{**_dict(p), "counters": {k: or_none(v) for k, v in p.counters.items()}}
                         for p in self.ib_ports]
        return d


@dataclass(frozen=True)
class TrafficJob:
    """One traffic test of one NIC: `iperf3` (TCP) or `ib_write_bw` (RDMA) against a peer."""

    nic: str  # interface (or RDMA device) name
    tool: str  # "iperf3" | "ib_write_bw"
    peer: str
    port: int
    seconds: float
    streams: int = 1
    bind: str | None = None  # local address to send from (iperf3)
    ib_device: str | None = None  # ib_write_bw
    ib_port: int = 1
    cuda_device: int | None = None  # ib_write_bw --use_cuda (GPUDirect RDMA)
    roce: bool = False  # ib_write_bw -R: connect through rdma_cm, as RoCE needs
    loopback: bool = False  # ib_write_bw server and client on this HCA port (no peer; issue 15)

    @property
    def whole_seconds(self) -> int:
        """The test's length as iperf3 (-t) and ib_write_bw (-D) take it: whole seconds, one at least."""
        return max(1, round(self.seconds))

    @property
    def peer_text(self) -> str:
        return "loopback" if self.loopback else f"{self.peer}:{self.port}"


@dataclass
class TrafficOutcome:
    job: TrafficJob
    gbps: Any = NA  # received, in Gb/s (bits)
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)  # retransmits, peak, the command
    unreadable: bool = False  # the tool's output was not in its format (error says where): not a measurement


class Clock:
    """The run's clock. Real runs use real time; the simulated node compresses it (`scale`
    simulated seconds per real second) so a simulated burn-in of hours takes a minute.

    `paced` (a shared array of PACED_FIELDS doubles, for every process of a simulated node) lets the
    host's own start-up pass at its real pace (host_paced): the twin's workers importing NumPy took
    0.5-1.3 real seconds, 5-13 of its compressed ones, and its burn began 10-18 s into a quick run
    where the real ones began 2.9-5.0 s in (tests/fixtures/real-2026-11-2*, stress.burn's first
    start_s; the real workers start at their real pace too). A real clock has none."""

    def __init__(self, scale: float = 1.0, origin: float | None = None, paced: Any = None):
        self.scale = scale
        self.origin = time.monotonic() if origin is None else origin
        self.paced = paced

    def now(self) -> float:
        """Seconds on this clock since its origin."""
        t = time.monotonic()
        if self.paced is None:
            return (t - self.origin) * self.scale
        return (t - self.origin) * self.scale - (self.scale - 1) * self._paced_s(t)

    def _paced_s(self, t: float) -> float:
        """Real seconds passed at the host's pace by time t: those of the spans that ended, and of the
        one under way. Read again where a span began or ended meanwhile (its writer counts a
        generation up before and after), a few times at most."""
        p = self.paced
        for _ in range(8):
            generation = p[PACED_GENERATION]
            total, since = p[PACED_TOTAL_S], p[PACED_SINCE]
            if generation == p[PACED_GENERATION] and not generation % 2:
                break
        return total + (max(0.0, t - since) if since else 0.0)

    @contextlib.contextmanager
    def host_paced(self) -> Iterator[None]:
        """While the host itself starts up (worker processes, their imports), a simulated node's clock
        passes at real pace, as a real host's start-up takes its real time; a real clock is unchanged.
        One span at a time (the run's thread)."""
        p = self.paced
        if p is None:
            yield
            return
        p[PACED_GENERATION] += 1
        p[PACED_SINCE] = time.monotonic()
        p[PACED_GENERATION] += 1
        try:
            yield
        finally:
            p[PACED_GENERATION] += 1
            p[PACED_TOTAL_S] += time.monotonic() - p[PACED_SINCE]
            p[PACED_SINCE] = 0.0
            p[PACED_GENERATION] += 1

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds) / self.scale)

    def wall(self, seconds: float) -> float:
        """Real seconds that `seconds` on this clock take."""
        return seconds / self.scale


# Clock.paced's fields: real seconds of the spans that ended, the monotonic start of the one under
# way (0: none), and a generation counted up around each change (odd while one is written).
PACED_TOTAL_S, PACED_SINCE, PACED_GENERATION = 0, 1, 2
PACED_FIELDS = 3


def describe_unrecorded(functions: list[str]) -> str:
    """What a replay says of the NVML calls its capture never recorded (GpuManagement.unrecorded),
    the fields of one call together: "nvmlDeviceGetFieldValues(A, B)"."""
    calls: dict[str, list[str]] = {}
    for f in map(str, functions):
        call, _, arg = f.partition("(")
        calls.setdefault(call, []).extend([arg.rstrip(")")] if arg else [])
    said = ", ".join(f"{call}({', '.join(args)})" if args else call for call, args in calls.items())
    return (f"the capture holds no answer to {said} (made before nodeqc asked): "
            "checks reading them say not in the replayed capture, which says nothing of the captured GPU; "
            "a capture made now (nodeqc capture) records them")


class GpuManagement(ABC):
    """GPU management: inventory, telemetry, counters, XID events (NVML and its stand-ins)."""

    simulated = False

    @abstractmethod
    def open(self) -> None:
        """Start the backend; raise BackendUnavailable with a plain reason if it cannot."""

    def close(self) -> None:  # noqa: B027 - optional: most backends hold nothing to release
        """Release the backend."""

    def unrecorded(self) -> list[str]:
        """What this run asked of a replayed capture that the capture holds no answer to (it was made
        by a nodeqc that did not ask): those readings say not available, which says nothing of the
        captured GPU. Empty for a live backend, which answers for itself."""
        return []

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

    def throttle_counters(self, index: int) -> dict[str, Any]:
        """Only the driver's clocks-event durations (reason -> ns, NA where it does not count it):
        few enough calls to read at the bounds of a pulse period. Raises GpuLostError as counters()."""
        return self.counters(index).throttle_ns()

    @abstractmethod
    def wait_xids(self, timeout_s: float, clock: Clock) -> list[XidEvent]:
        """XID events that arrive within timeout_s (blocks up to that long)."""

    def xids_watched(self, index: int) -> bool:
        """Whether this GPU's XIDs reach wait_xids (NVML's event registration can be refused, as in
        some VMs): where they do not, no event is no evidence of none."""
        return True

    def processes(self, index: int) -> "list[GpuProcess] | Any":
        """The processes computing on this GPU now, nodeqc's own workers included; NA when the
        backend cannot list them. Raises GpuLostError when the GPU stopped answering."""
        return NA

class HostBackend(ABC):
    """The host: CPU, memory, DMI, PCI (psutil and sysfs, or a scenario's)."""

    @abstractmethod
    def info(self) -> HostInfo: ...

class NicBackend(ABC):
    """The NICs: what sysfs shows of them, and traffic through them (iperf3, ib_write_bw)."""

    @abstractmethod
    def nics(self) -> list[NicInfo]:
        """Every NIC but loopback, physical ones in PCI order first, then the rest by name."""

    @abstractmethod
    def pcie_link(self, name: str) -> tuple[Any, Any]:
        """(generation, width) the NIC's PCIe link runs at now; NA where not reported."""

    @abstractmethod
    def missing_tool(self, tool: str) -> str | None:
        """None if `tool` can run here, else what to install to get it."""

    @abstractmethod
    def start_traffic(self, rounds: list[list[TrafficJob]], watch: list[str]) -> "TrafficSession":
        """Run the rounds one after another in the background, each round's jobs all at once; read
        the PCIe links of the NICs named in `watch` while they run."""

class TrafficSession(ABC):
    """NIC traffic running in the background, and the NICs' PCIe links read while it runs (links
    can train down at idle, so only a reading under load says what a link can do)."""

    POLL_S = 0.05
    SAMPLE_S = 0.5  # real seconds between PCIe readings
    GRACE_S = 30.0  # what a job may overrun its duration by: connection set-up, result exchange

    def __init__(self, backend: NicBackend, rounds: list[list[TrafficJob]], watch: list[str]):
        self.backend = backend
        self.rounds = [r for r in rounds if r]
        self.outcomes: list[TrafficOutcome] = []
        self.links: dict[str, list[tuple[Any, Any]]] = {name: [] for name in watch}
        self._halt = threading.Event()
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drive, name="nic-traffic", daemon=True)
        self._thread.start()

    @abstractmethod
    def _start(self, jobs: list[TrafficJob]) -> None:
        """Start every job of a round."""

    @abstractmethod
    def _running(self) -> bool:
        """Some job of the current round has not ended."""

    @abstractmethod
    def _collect(self, jobs: list[TrafficJob], overdue: str | None) -> list[TrafficOutcome]:
        """End the round, killing what still runs (an error saying `overdue`), and return its outcomes."""

    def _wall(self, seconds: float) -> float:
        """Real seconds that `seconds` of traffic take (the simulated node compresses time)."""
        return seconds

    def _limit_s(self, jobs: list[TrafficJob]) -> float:
        return self._wall(max(j.seconds for j in jobs)) + self.GRACE_S

    def _drive(self) -> None:
        current: list[TrafficJob] = []
        try:
            for jobs in self.rounds:
                if self._halt.is_set():
                    break
                current = jobs
                self._start(jobs)
                limit = self._limit_s(jobs)
                end = next_sample = time.monotonic()
                end += limit
                while self._running() and time.monotonic() < end and not self._halt.is_set():
                    if time.monotonic() >= next_sample:
                        for name, readings in self.links.items():
                            readings.append(self.backend.pcie_link(name))
                        next_sample += self.SAMPLE_S
                    self._halt.wait(self.POLL_S)
                overdue = "stopped before it finished" if self._halt.is_set() else f"did not end within {limit:g} s"
                current = []
                self.outcomes += self._collect(jobs, overdue)
        except BaseException as e:  # noqa: BLE001 - handed to the caller by stop()
            self._error = e
            if current:
                try:
                    self._collect(current, "stopped by an error in nodeqc")  # no tool outlives its session
                except Exception:  # noqa: BLE001 - the first error is the one to report
                    pass
        finally:
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, should_abort: Callable[[], bool] = lambda: False) -> None:
        """Until every round ends (each is bounded by its duration plus GRACE_S) or should_abort()."""
        end = time.monotonic() + sum(self._limit_s(r) for r in self.rounds) + 5
        while not self._done.wait(0.1) and time.monotonic() < end and not should_abort():
            pass

    def stop(self, kill: bool = False) -> list[TrafficOutcome]:
        """Wait for the traffic to end (or end it now with kill=True) and return what it measured,
        in job order; a round that never started has no outcomes."""
        if not kill:
            self.wait()
        self._halt.set()
        self._thread.join(timeout=self.GRACE_S + 10)
        if self._error is not None:
            raise self._error
        return list(self.outcomes)
