"""The simulated node: N GPUs with a topology, telemetry that responds to load, and injectable faults.

It implements the same interfaces as the real backends, so every check runs unmodified against it.
The simulator makes faults happen (a link that trains narrow, a counter that grows); it never decides
a verdict. Its reports are marked simulated.

Worker processes (the stress work) and the telemetry in the main process share one small array per
node: a worker writes how loaded its GPU is, telemetry reads it, so temperature, power, clocks and
PCIe link state follow the real work schedule. Time is compressed by the scenario's `time_scale`.

The node is built from its scenario (nodeqc.backends.sim.scenario); how its GPUs behave under load
is nodeqc.backends.sim.physics, which its workers (nodeqc.backends.sim.compute) share.
"""

from __future__ import annotations

import math
import multiprocessing
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from nodeqc.backends.base import (COUNTED_REASONS, PACED_FIELDS, REASON_BITS, Clock, GpuCounters, GpuInfo,
                                  GpuManagement, GpuProcess, GpuSample, HostBackend, HostInfo, IbPort, NicBackend,
                                  NicInfo, PciDevice, TrafficJob, TrafficOutcome, TrafficSession, XidEvent,
                                  decode_reasons)
from nodeqc.backends.nic import IB_COUNTERS, INSTALL
from nodeqc.backends.sim.models import (INSTANT_OVERSHOOT, MATMUL_MEM_UTIL_SHARE, MEMORY_BOUND_SHARE, MIB,
                                         SimGpuModel)
from nodeqc.backends.sim.physics import (COTENANT, LOADED, NVML_AVERAGE_S, NVML_POWER_PERIOD_S, NVML_UTIL_WINDOW_S,
                                         RAMP_S, XID_AFTER_S, cotenant_active, heat_step, held_by_limit, mean_load,
                                         mean_power, on_clock_grid, power_segments, quick_load_w, sim_clock,
                                         sim_power_demand_w, sim_power_w)
from nodeqc.backends.sim.scenario import Scenario
from nodeqc.backends.sim.slots import (SLOT_BRAKE_S, SLOT_BRAKE_SINCE, SLOT_CAP_OPEN, SLOT_CAP_S, SLOT_CAP_SINCE,
                                       SLOT_CLOCK_MHZ, SLOT_LOAD, SLOT_LOADED_S,
                                       SLOT_LOST, SLOT_MEM_UTIL, SLOT_POWER_W, SLOT_PULSE_S, SLOTS, read_trace,
                                       transient_braking, warm)
from nodeqc.backends.sim.faults import Fault, check_applies, check_imex_faults, check_range
from nodeqc.core import fabric
from nodeqc.core.errors import GpuLostError
from nodeqc.core.na import NA, is_na

GIB = 1024 ** 3
POWER_NOISE_SHARE = 0.004
VIRTIO_MBPS = 10_000
# Users' work a watched node has done (SimNode.in_service): past every fault's onset under load
# (XID_AFTER_S, LOST_AFTER_S, RAMP_S in nodeqc.backends.sim.physics: a few seconds).
IN_SERVICE_S = 60.0

# Simulated traffic: what a healthy link carries, as a fraction of its speed. TCP over Ethernet at
# 1500 MTU carries at most 94% of the line rate (headers); IPoIB pushes TCP through the CPU and
# reaches a fraction of an InfiniBand link; ib_write_bw comes close to the port rate. PCIe caps it:
# Gb/s per lane after encoding, times 0.85 for packet overhead.
TCP_EFFICIENCY = {"ethernet": 0.94, "infiniband": 0.2}
RDMA_EFFICIENCY = 0.97
PCIE_LANE_GBIT = {1: 2.0, 2: 4.0, 3: 7.88, 4: 15.75, 5: 31.5, 6: 63.0}


class SimNode:
    """One simulated node: its scenario, its faults, its clock and the state shared with workers."""

    def __init__(self, scenario: Scenario, faults: list[Fault], time_scale: float | None = None):
        check_range(faults, scenario.gpu_count, len(scenario.nics), scenario.data.get("host", {}).get("threads"))
        check_applies(faults, scenario.gpu_model, scenario.gpu_count, "fabric_cluster" in scenario.data["gpus"],
                      scenario.data["gpus"].get("topology", "pcie"))
        check_imex_faults(faults, scenario.data.get("host", {}).get("imex_nodes"))
        self.scenario = scenario
        self.faults = faults
        ctx = multiprocessing.get_context("spawn")
        self.clock = Clock(time_scale or scenario.data.get("time_scale", 10.0),
                           paced=ctx.Array("d", PACED_FIELDS, lock=False))
        self.shared = ctx.Array("d", scenario.gpu_count * SLOTS, lock=False)
        # NVML lists the GPUs the driver brought up, in bus order; a `missing` one is on PCI only.
        self.visible = [k for k in range(scenario.gpu_count) if not self.has(k, "missing")]

    def in_service(self, loaded_s: float = IN_SERVICE_S) -> None:
        """The node as `nodeqc watch` finds it between qualifications: its GPUs have run users' work
        for `loaded_s` seconds and are idle now, so every fault that happens under load has happened
        (its XIDs logged, its counters grown, a `lost` GPU off the bus). The watch puts no load."""
        for k in range(self.scenario.gpu_count):
            self.shared[k * SLOTS + SLOT_LOADED_S] = max(self.shared[k * SLOTS + SLOT_LOADED_S], loaded_s)
            if self.has(k, "lost"):
                self.shared[k * SLOTS + SLOT_LOST] = 1.0

    def gpu_faults(self, k: int) -> list[Fault]:
        return [f for f in self.faults if f.target == "gpu" and f.index == k]

    def has(self, k: int, name: str) -> bool:
        return any(f.name == name for f in self.gpu_faults(k))

    def value(self, k: int, name: str, default: Any = None) -> Any:
        return next((f.value for f in self.gpu_faults(k) if f.name == name), default)

    def management(self) -> "SimManagement":
        return SimManagement(self)

    def host(self) -> "SimHost":
        return SimHost(self)

    def nics(self) -> "SimNics":
        return SimNics(self)

    def nic_value(self, k: int, name: str, default: Any = None) -> Any:
        return next((f.value if f.value is not None else True for f in self.faults
                     if f.target == "nic" and f.index == k and f.name == name), default)

    def compute_spec(self) -> dict[str, Any]:
        """What a worker process needs to drive a simulated GPU (picklable for spawn)."""
        return {"kind": "sim", "scenario": self.scenario.data, "faults": self.faults,
                "visible": self.visible, "shared": self.shared,
                "clock": (self.clock.scale, self.clock.origin), "clock_paced": self.clock.paced}


@dataclass
class _GpuState:
    temp: float
    last_t: float
    heat: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # physics.heat_step's parts
    xids_due: list[int] | None = None
    lost_reported: bool = False
    # The driver's clocks-event durations (ns), integrated as simulated time passes, as a real
    # driver counts them: a fault is in these counters whether or not a telemetry sample lands in it.
    throttle_ns: dict[str, float] = field(default_factory=lambda: {r: 0.0 for r in COUNTED_REASONS})
    transient_brake_ns: float = 0.0  # the pulse test's brake (`transient_brake`), exact: see SLOT_BRAKE_S
    power_cap_ns: float = 0.0  # the power limit holding a healthy load's clock, exact: see SLOT_CAP_S
    power_tick: int = -1  # the NVML power update period the held reading belongs to (NVML_POWER_PERIOD_S)
    power_held: float = 0.0
    # What the worker drew over NVML's averaging window and the time since the last reading, as read
    # by the last _advance at last_t (one read of the trace serves the temperature and the sample).
    trace: list[tuple[float, ...]] = field(default_factory=list)


class SimManagement(GpuManagement):
    simulated = True

    def __init__(self, node: SimNode):
        self.node = node
        self._in_vm = bool(node.scenario.data.get("host", {}).get("vm"))
        self.model = node.scenario.gpu_model
        self._lock = threading.Lock()
        seed = node.scenario.data.get("seed", 0)
        self._rng = [random.Random(seed * 1000 + k) for k in range(node.scenario.gpu_count)]
        now = node.clock.now()
        self._state = [_GpuState(temp=self.model.idle_temp_c, last_t=now,
                                 xids_due=[f.value for f in node.gpu_faults(k) if f.name == "xid"])
                       for k in range(node.scenario.gpu_count)]
        self._events: list[XidEvent] = []

    def open(self) -> None:
        pass

    def driver_version(self) -> str:
        return self.node.scenario.data.get("driver_version", "570.124.06")

    def cuda_version(self) -> str:
        return self.node.scenario.data.get("cuda_version", "12.8")

    def _physical(self, index: int) -> int:
        return self.node.visible[index]

    def gpus(self) -> list[GpuInfo]:
        m, sc = self.model, self.node.scenario
        out = []
        for j, k in enumerate(self.node.visible):
            serial = sc.gpu_serial(k)
            out.append(GpuInfo(
                index=j, name=m.name, uuid=f"GPU-{uuid.uuid5(uuid.NAMESPACE_OID, serial)}",
                bus_id=sc.bus_id(k), serial=serial, memory_total_bytes=m.memory_mib * MIB,
                vbios=self.node.value(k, "vbios", m.vbios), board_part=m.board_part, pci_device_id=m.pci_device_id,
                compute_capability=m.compute_capability,
                ecc_enabled=True, ecc_pending=True, persistence=True,
                pcie_max_gen=m.pcie_gen, pcie_max_width=m.pcie_width, pcie_gpu_max_gen=m.pcie_gen,
                temp_slowdown_c=m.slowdown_c, temp_shutdown_c=m.shutdown_c, temp_gpu_max_c=m.gpu_max_c,
                temp_mem_max_c=m.mem_max_c, power_limit_w=self._limit(k), power_default_limit_w=m.tdp_w,
                max_sm_clock_mhz=m.max_sm_mhz, max_mem_clock_mhz=m.mem_mhz,
                nvlink_count=self._links() or NA,
                fabric=self._fabric(k),
                peer_paths={str(i): self._peer_path(k, other) for i, other in enumerate(self.node.visible) if i != j},
                **sim_firmware(m, self.driver_version()),
            ))
        return out

    def _fabric(self, k: int) -> Any:
        """NVML's GPU fabric info (nodeqc.core.fabric) where the scenario puts the GPUs on a fabric,
        with the GPU's fabric faults; NA (NotSupported) elsewhere."""
        gpus = self.node.scenario.data["gpus"]
        if "fabric_cluster" not in gpus:
            return NA
        state = self.node.value(k, "fabric_unregistered", "completed")
        return {"state": state, "status": 0, "cluster_uuid": gpus["fabric_cluster"],
                "clique_id": self.node.value(k, "fabric_clique", gpus.get("fabric_clique", 0)),
                "health_mask": fabric.DEGRADED_BANDWIDTH_MASK if self.node.has(k, "fabric_degraded") else fabric.HEALTHY_MASK}

    def _peer_path(self, k: int, other: int) -> str:
        """NVLink on NVSwitch and bridged nodes; a common host bridge on PCIe nodes, whose simulated
        copies run at one rate between any two GPUs (sim_compute)."""
        return "nvlink" if self.node.scenario.data["gpus"].get("topology", "pcie") != "pcie" else "host_bridge"

    # ------------------------------------------------------------------ physics

    def _limit(self, k: int) -> float:
        return min(self.node.value(k, "power_limit", self.model.tdp_w), self.model.tdp_w)

    def _fault_pairs(self, k: int) -> list[tuple[str, Any]]:
        return [(f.name, f.value) for f in self.node.gpu_faults(k)]

    def _load(self, k: int) -> float:
        """nodeqc's own load, or a co-tenant's while it computes: NVML reads the GPU, not whose work it
        is (real co-tenants, nodeqc idle: 688-701 W, 100 %, capped; measurements/2026-11-26 reports)."""
        return 1.0 if cotenant_active(self._fault_pairs(k), self._loaded_s(k)) else self.node.shared[k * SLOTS + SLOT_LOAD]

    def _lost(self, k: int) -> bool:
        return self.node.shared[k * SLOTS + SLOT_LOST] > 0

    def _loaded_s(self, k: int) -> float:
        return self.node.shared[k * SLOTS + SLOT_LOADED_S]

    def _advance(self, k: int) -> _GpuState:
        """Bring GPU k's state up to now: temperature follows load, faults fire after load."""
        st = self._state[k]
        now = self.node.clock.now()
        dt = max(0.0, now - st.last_t)
        st.last_t = now
        if self._lost(k):
            if not st.lost_reported:
                st.lost_reported = True
                self._events.append(XidEvent(self.node.visible.index(k), 79, now))  # fallen off the bus
            return st
        load = self._load(k)
        m = self.model
        # One read reaching back over NVML's window and the time since the last reading (sample uses it).
        st.trace = trace = self._trace(k, now - max(dt, NVML_AVERAGE_S + NVML_POWER_PERIOD_S))
        # The temperature follows the power over the idle power (physics.heat_step): 1 at what the
        # quick runs' loads drew, which brought the GPU to its load temperature; memory-bound work's
        # watts at their share (Twin.membound_die_heat_share). Stretch by stretch of what the worker
        # drew since the last reading (a pulse's bursts and gaps), else now's.
        rise = self.node.value(k, "temp", m.load_temp_c) - m.idle_temp_c
        segments = (power_segments(trace, now - dt, now) if trace
                    else [(dt, self._draw(k, load)[2], m.die_heat_share_at(self._mem_util_share(k)))])
        for seconds, watts, share in segments:
            heat_step(st.heat, share * max(0.0, (watts - m.idle_w) / (quick_load_w(m) - m.idle_w)), rise,
                      m.temp_fast_share, seconds)
        st.temp = m.idle_temp_c + sum(st.heat)
        for reason in decode_reasons(self._reasons(k, load, st.temp, sampled=False)):
            if reason in st.throttle_ns:
                st.throttle_ns[reason] += dt * 1e9
        # The swings' brake, as the worker timed it; never less than a reading already given (a
        # reading between the worker's two writes at the end of a brake sees the closed total only).
        brake_s = self.node.shared[k * SLOTS + SLOT_BRAKE_S]
        if self._braking(k):
            brake_s += max(0.0, now - self.node.shared[k * SLOTS + SLOT_BRAKE_SINCE])
        st.transient_brake_ns = max(st.transient_brake_ns, brake_s * 1e9)
        cap_s = self.node.shared[k * SLOTS + SLOT_CAP_S]
        if self.node.shared[k * SLOTS + SLOT_CAP_OPEN] > 0:
            cap_s += max(0.0, now - self.node.shared[k * SLOTS + SLOT_CAP_SINCE])
        st.power_cap_ns = max(st.power_cap_ns, cap_s * 1e9)
        if st.xids_due and self._loaded_s(k) >= XID_AFTER_S:
            self._events += [XidEvent(self.node.visible.index(k), code, now) for code in st.xids_due]
            st.xids_due = []
        return st

    def sample(self, index: int) -> GpuSample:
        k = self._physical(index)
        with self._lock:
            st = self._advance(k)
            now, trace = st.last_t, st.trace  # as _advance read them
        if self._lost(k):
            raise GpuLostError(index)
        m, rng = self.model, self._rng[k]
        load = self._load(k)
        busy = load > LOADED
        # NVML's utilisation: the share of its last sixth of a second a kernel ran. While it counts the
        # GPU busy, the clocks and link trained up under load stay so (a driver drops them after idle).
        busy_share = mean_load(trace, now, NVML_UTIL_WINDOW_S) if trace else load
        counted_busy = busy or busy_share > 0
        reasons = self._reasons(k, load, st.temp)
        full_w, dtype_clock, power = self._draw(k, load)
        demand = sim_power_demand_w(m, load, full_w)
        warm = self._warm(k)
        # Under full load a healthy GPU runs at its SKU's sustained clock (below its maximum: the
        # power limit holds it there), which the SKU's healthy rates were measured at; at its limit,
        # the clock of the dtype it computes in (half precision holds it lower). A GPU that cannot
        # draw what its load asks (a `power` fault) is not held by its limit.
        at_limit = power >= min(demand, self._limit(k))
        full = dtype_clock if dtype_clock and at_limit else m.sku.healthy_sm_mhz
        # Once loaded, the clock stays up at idle (physics.WARM_IDLE_SHARE): the maximum, as measured.
        idle_clock = m.max_sm_mhz if warm else m.idle_sm_mhz
        clock = idle_clock + load * (min(full, m.max_sm_mhz) - idle_clock)
        if busy:
            clock *= sim_clock(m, self._fault_pairs(k), full_w)[0]
        if self._braking(k):
            clock *= 0.5
        # Links downtrain at idle on bare metal; in the measured VMs the link read Gen5 x16 at idle in
        # all nine real quick runs (tests/fixtures/real-2026-11-2*: pcie_at_idle).
        # (A link read as idle, Gen1, beside a busy utilisation read as DOWNTRAINED under load.)
        gen = self.node.value(k, "pcie_gen", m.pcie_gen) if counted_busy or self._in_vm else 1
        width = self.node.value(k, "pcie_width", m.pcie_width)
        # NVML's temperatures are whole degrees (every real sample); the noise dithers them.
        temp_c = round(st.temp + rng.gauss(0, 0.4))
        hot = self.node.value(k, "temp", m.load_temp_c)
        memory_bound = busy and self._mem_util_share(k) >= MEMORY_BOUND_SHARE
        mem_temp_c = round(st.temp + m.mem_temp_offset_at(st.temp, hot, memory_bound) + rng.gauss(0, 0.4))
        # NVML's power reading under a steady load moved with a standard deviation of 2.5-2.9 W on the
        # real 700 W parts (real-2026-11-27 *-flat-copy and *-kept-workers telemetry, stress.power's
        # held samples): 0.4 % of the limit.
        noise = rng.gauss(0, POWER_NOISE_SHARE * m.tdp_w)
        instant = power
        if busy and self.node.shared[k * SLOTS + SLOT_PULSE_S] > 0:
            # Each swing up overshoots the limit for a moment, as far as the GPU can draw at all.
            instant = min(max(power, self._limit(k) * INSTANT_OVERSHOOT), self.node.value(k, "power", math.inf))
        with self._lock:
            tick = math.floor(now / NVML_POWER_PERIOD_S)
            if st.power_tick != tick:  # NVML's reading: updated about ten times a second, held between
                # ...the mean of about the last second, of what the worker drew where it says (a pulse's
                # bursts and gaps: 450-470 W under its 500 ms and 1 s periods, as on the real parts).
                mean = mean_power(trace, tick * NVML_POWER_PERIOD_S, NVML_AVERAGE_S) \
                    if trace and m.power_averaged else power  # GA100 and older: the power now
                st.power_tick, st.power_held = tick, round(max(0.0, mean + noise), 1)
            held = st.power_held
        return GpuSample(
            temp_c=temp_c,
            mem_temp_c=mem_temp_c,
            power_w=held,
            power_instant_w=round(max(0.0, instant + noise), 1),
            power_limit_w=self._limit(k),
            sm_clock_mhz=min(on_clock_grid(clock, rng.random()), m.max_sm_mhz),  # never past its maximum
            # The measured HBM parts hold their memory clock at idle (2619 and 3201 MHz in every real
            # sample); the rest halve it, an estimate, once NVML no longer counts them busy (a "loaded"
            # sample at half made CLOCKS_LOW).
            mem_clock_mhz=m.mem_mhz if counted_busy or m.twin is not None else m.mem_mhz // 2,
            util_pct=min(100, int(round(busy_share * 100))),
            mem_util_pct=min(100, int(round(busy_share * 100 * self._mem_util_share(k)))),
            reasons=reasons,
            pcie_gen=gen,
            pcie_width=width,
        )

    def _warm(self, k: int) -> bool:
        return warm(self.node.shared, k)

    def _draw(self, k: int, load: float) -> tuple[float, float, float]:
        """GPU k's work at this load: what it draws under full load, the clock of its dtype there (0:
        the SKU's), and its power now (no reading noise)."""
        m = self.model
        # Under full load a measured part draws what it drew computing this dtype (sim_models.Twin).
        full_w = self.node.shared[k * SLOTS + SLOT_POWER_W]
        dtype_clock = self.node.shared[k * SLOTS + SLOT_CLOCK_MHZ]
        if not self.node.shared[k * SLOTS + SLOT_LOAD] and load:
            # A co-tenant's burn, nodeqc's stopped: the limit at 1305-1515 MHz, the bf16 clocks within
            # 1-4 MHz of its means (tests/fixtures/real-2026-11-26/*cotenant*burn.predicate.json).
            full_w = self._limit(k)
            dtype_clock = m.twin.sm_mhz.get("bf16", 0.0) if m.twin else 0.0
        return full_w, dtype_clock, sim_power_w(m, load, full_w, self._fault_pairs(k), warm=self._warm(k))

    def _trace(self, k: int, since: float) -> list[tuple[float, ...]]:
        """What GPU k's worker drew as its work changed from `since` on (slots.read_trace); none while
        a co-tenant computes on it, whose work no worker of ours traces."""
        if cotenant_active(self._fault_pairs(k), self._loaded_s(k)):
            return []
        return read_trace(self.node.shared, k, since)

    def _mem_util_share(self, k: int) -> float:
        """The memory's utilisation under full load of what GPU k does now (SLOT_MEM_UTIL; before any
        worker wrote it, matmul's)."""
        return self.node.shared[k * SLOTS + SLOT_MEM_UTIL] or MATMUL_MEM_UTIL_SHARE

    def _reasons(self, k: int, load: float, temp: float, sampled: bool = True) -> int:
        """The clocks-event reasons of GPU k at this load and temperature: idle, an injected throttle
        under load, and the driver's own thermal slowdown, as a real GPU enters it: software
        slowdown above its maximum operating temperature, hardware slowdown at its slowdown one; the
        power limit holding a healthy load and the swings' brake where a sample shows them
        (`sampled`): the workers time those two exactly for the counters (SLOT_CAP_S, SLOT_BRAKE_S)."""
        m = self.model
        reasons = REASON_BITS["gpu_idle"] if load < 0.05 and not self._warm(k) else 0
        if load > LOADED:
            # injected throttles, a lowered power limit
            reasons |= sim_clock(m, self._fault_pairs(k), self.node.shared[k * SLOTS + SLOT_POWER_W])[1]
            if sampled and held_by_limit(m, load, self.node.shared[k * SLOTS + SLOT_CLOCK_MHZ],
                                         self._fault_pairs(k)):
                reasons |= REASON_BITS["sw_power_cap"]
        if sampled and self._braking(k):
            reasons |= REASON_BITS["power_brake"]  # the chassis brakes while the swings last
        if temp >= m.gpu_max_c:
            reasons |= REASON_BITS["sw_thermal"]
        if temp >= m.slowdown_c:
            reasons |= REASON_BITS["hw_thermal"]
        return reasons

    def _braking(self, k: int) -> bool:
        """A `transient_brake` GPU under load swings at or below the brake's period."""
        return transient_braking(self.node.shared[k * SLOTS + SLOT_PULSE_S], self.node.value(k, "transient_brake", 0))

    def counters(self, index: int) -> GpuCounters:
        k = self._physical(index)
        with self._lock:
            st = self._advance(k)
            throttle_ns = {f"throttle_ns_{r}": int(ns + (st.transient_brake_ns if r == "power_brake" else 0))
                           for r, ns in st.throttle_ns.items()}
            # A lowered limit caps all the loaded time, a superset of what holds a healthy load
            cap = "throttle_ns_sw_power_cap"
            if cap in throttle_ns:
                throttle_ns[cap] = max(throttle_ns[cap], int(st.power_cap_ns))
        if self.node.has(k, "no_throttle_counters"):
            throttle_ns = {}  # NotSupported: the fields stay NA
        if self._lost(k):
            raise GpuLostError(index)
        ramp = min(self._loaded_s(k) / RAMP_S, 1.0)
        grow = lambda name: int(round(self.node.value(k, name, 0) * ramp))  # noqa: E731
        remaps = self.model.has_row_remapping
        return GpuCounters(
            ecc_sbe_volatile=grow("ecc_sbe"),
            ecc_dbe_volatile=grow("ecc_dbe"),
            pcie_replay=grow("pcie_replay"),
            remap_correctable=0 if remaps else NA,
            remap_uncorrectable=0 if remaps else NA,
            remap_pending=self.node.has(k, "row_remap_pending") if remaps else NA,
            remap_failure=self.node.has(k, "row_remap_failed") if remaps else NA,
            retired_sbe=NA if remaps else 0,
            retired_dbe=NA if remaps else 0,
            retired_pending=NA if remaps else False,
            **self._nvlink(k),
            **throttle_ns,
            # Ampere and newer count on-chip errors under SRAM; older GPUs per cache and register file.
            onchip_ecc_corrected=grow("sram_sbe"),
            onchip_ecc_uncorrected=grow("sram_dbe"),
            onchip_ecc_locations="sram" if remaps else "l1,l2,register_file,texture",
        )

    def _links(self) -> int:
        """NVLink links NVML reports: none in a VM with one GPU and no NVLink peers (`[host] vm`, as
        measured: shared/measurements/2026-11-26, "NVLink (none reported)")."""
        return 0 if self.node.scenario.data.get("host", {}).get("vm", False) else self.model.nvlink_links

    def _nvlink(self, k: int) -> dict[str, Any]:
        links = self._links()
        if not links:
            return {}
        down = self.node.value(k, "nvlink_down", 0)
        return {"nvlink_active": max(0, links - down), "nvlink_replay": 0, "nvlink_recovery": 0, "nvlink_crc": 0}

    def processes(self, index: int) -> list[GpuProcess]:
        """Only the injected co-tenant: the workers that stress a simulated GPU compute on no GPU."""
        k = self._physical(index)
        if self._lost(k):
            raise GpuLostError(index)
        return [COTENANT] if cotenant_active(self._fault_pairs(k), self._loaded_s(k)) else []

    def wait_xids(self, timeout_s: float, clock: Clock) -> list[XidEvent]:
        time.sleep(min(timeout_s, 0.1))
        with self._lock:
            for k in self.node.visible:
                self._advance(k)
            events, self._events = self._events, []
        return events


def sim_firmware(m: SimGpuModel, driver: str) -> dict[str, Any]:
    """Firmware and modes of a simulated GPU. The InfoROM image follows the board part number, as on
    the measured H100 SXM5 (board 695-2G520-0200-000, image G520.0200.00.05; OEM 2.1, ECC 7.16,
    shared/measurements/README.md); GSP firmware ships with the driver and carries its version."""
    part = m.board_part.split("-")
    image = m.inforom_image or (f"G{part[1][-3:]}.{part[2]}.00.05" if len(part) >= 3 and len(part[1]) >= 3 else NA)
    hopper = float(m.compute_capability) >= 8.0
    return {"gsp_firmware": driver if hopper else NA, "inforom_image": image,
            "inforom_oem": "2.1", "inforom_ecc": "7.16", "inforom_power": NA,
            "mig_mode": "disabled" if m.name.startswith(("NVIDIA A100", "NVIDIA H")) else NA,
            "compute_mode": "default", "app_sm_clock_mhz": m.max_sm_mhz, "app_mem_clock_mhz": m.mem_mhz}


class SimHost(HostBackend):
    def __init__(self, node: SimNode):
        self.node = node

    def info(self) -> HostInfo:
        d = self.node.scenario.data
        host, system = d.get("host", {}), d.get("system", {})
        cores = host["cores"]
        return HostInfo(
            hostname=d.get("hostname", f"sim-{self.node.scenario.name}"),
            system_vendor=system.get("vendor", NA), system_model=system.get("model", NA),
            system_serial=system.get("serial", NA), board_serial=NA, bios_version="SIM",
            cpu_model=host.get("cpu_model", NA), sockets=host.get("sockets", 1), cores=cores,
            threads=host.get("threads", cores), memory_bytes=int(host["memory_gib"] * GIB),
            numa_nodes=host.get("numa_nodes", 1), os=host.get("os", NA), kernel=host.get("kernel", NA),
            nvidia_gpus_on_pci=[
                PciDevice(self.node.scenario.bus_id(k), "0x10de", f"0x{self.node.scenario.gpu_model.pci_device_id:04x}", "0x0302")
                for k in range(self.node.scenario.gpu_count)],
            fabric_manager=host.get("fabric_manager", False),
            peer_memory_module="nvidia_peermem" if host.get("gpudirect_rdma", False) else "",
            imex=self._imex(host),
        )

    def _imex(self, host: dict[str, Any]) -> Any:
        """IMEX where the scenario has it, with the host's IMEX faults; not installed elsewhere."""
        faults = {f.name: f.value for f in self.node.faults if f.target == "host"}
        if "imex_nodes" not in host:
            return {"running": False, "channels": None, "nodes": None}
        listed = min(host["imex_nodes"], faults.get("imex_nodes", host["imex_nodes"]))
        # This node is the domain's first address; not listed, the list starts at the second.
        first = 2 if "imex_not_listed" in faults else 1
        return {"running": "imex_down" not in faults, "channels": 0 if "imex_no_channels" in faults else 1,
                "nodes": [f"10.0.0.{i + first}" for i in range(listed)],
                "own": ["10.0.0.1", self.node.scenario.data.get("hostname", f"sim-{self.node.scenario.name}")]}


class SimNics(NicBackend):
    """The scenario's [[nics]], with their faults: `down` (no carrier, ports DOWN/Polling), `speed`
    (the link and its port run at that speed), `pcie_width` (the NIC's PCIe link trains that narrow)."""

    def __init__(self, node: SimNode):
        self.node = node

    def _spec(self, name: str) -> tuple[int, dict[str, Any]] | None:
        return next(((k, s) for k, s in enumerate(self.node.scenario.nics) if s["name"] == name), None)

    def nics(self) -> list[NicInfo]:
        return [self._nic(k, spec) for k, spec in enumerate(self.node.scenario.nics)]

    def _nic(self, k: int, spec: dict[str, Any]) -> NicInfo:
        down = bool(self.node.nic_value(k, "down", False))
        speed = self.node.nic_value(k, "speed", NA if spec.get("virtual") else spec.get("speed_mbps", 100_000))
        kind = spec.get("kind", "ethernet")
        gen, width = self.pcie_link(spec["name"])
        ports = [IbPort(spec["ib_device"], 1, state="DOWN" if down else "ACTIVE",
                        phys_state="Polling" if down else "LinkUp", rate_gbit=speed / 1000,
                        link_layer="InfiniBand" if kind == "infiniband" else "Ethernet",
                        counters={c: 0 for c in IB_COUNTERS})] if "ib_device" in spec else []
        return NicInfo(
            name=spec["name"], kind=kind, driver=spec.get("driver", NA), mac=f"02:00:5e:00:{k // 256:02x}:{k % 256:02x}",
            operstate="down" if down else "up", carrier=0 if down else 1, speed_mbps=NA if down else speed,
            mtu=spec.get("mtu", 4092 if kind == "infiniband" else 1500),
            bus_id=self.node.scenario.nic_bus_id(k), pcie_gen=gen, pcie_width=width,
            pcie_max_gen=NA if spec.get("virtual") else spec.get("pcie_gen", 4),
            pcie_max_width=NA if spec.get("virtual") else spec.get("pcie_width", 16),
            carrier_changes=1, addresses=[f"10.10.{k}.1"], ib_ports=ports,  # never used: no packet is sent
        )

    def pcie_link(self, name: str) -> tuple[Any, Any]:
        found = self._spec(name)
        if found is None:
            return NA, NA
        k, spec = found
        if spec.get("virtual"):
            return NA, NA  # a virtio device has no PCIe capability to read
        return spec.get("pcie_gen", 4), self.node.nic_value(k, "pcie_width", spec.get("pcie_width", 16))

    def missing_tool(self, tool: str) -> str | None:
        gone = tool in self.node.scenario.data.get("host", {}).get("missing_tools", [])
        return INSTALL[tool] if gone else None

    def start_traffic(self, rounds: list[list[TrafficJob]], watch: list[str]) -> TrafficSession:
        return SimTraffic(self, rounds, watch)


class SimTraffic(TrafficSession):
    """Traffic on the simulated node's clock: what each link carries follows its speed, its state
    and its PCIe link; no packet leaves the machine."""

    def __init__(self, backend: SimNics, rounds: list[list[TrafficJob]], watch: list[str]):
        self.sim = backend
        self._end = 0.0
        super().__init__(backend, rounds, watch)

    def _wall(self, seconds: float) -> float:
        return self.sim.node.clock.wall(seconds)

    def _start(self, jobs: list[TrafficJob]) -> None:
        self._end = self.sim.node.clock.now() + max(j.seconds for j in jobs)

    def _running(self) -> bool:
        return self.sim.node.clock.now() < self._end

    def _collect(self, jobs: list[TrafficJob], overdue: str | None) -> list[TrafficOutcome]:
        early = self._running()
        nics = {n.name: n for n in self.sim.nics()}
        out = []
        for job in jobs:
            nic = nics[job.nic]
            up = nic.carrier == 1 and all(p.state == "ACTIVE" for p in nic.ib_ports)
            if early or not up:
                out.append(TrafficOutcome(job, NA, f"{job.tool} {overdue}" if early else "no route to the peer"))
                continue
            # A virtio NIC has no PCIe link of its own and no speed: the host's vhost carries it (an
            # estimate: the 10 Gb/s a cloud VM's virtio NIC commonly gets).
            pcie = math.inf if is_na(nic.pcie_gen) else PCIE_LANE_GBIT[nic.pcie_gen] * nic.pcie_width * 0.85
            speed_mbps = VIRTIO_MBPS if is_na(nic.speed_mbps) else nic.speed_mbps
            if job.tool == "iperf3":
                gbps = min(speed_mbps / 1000 * TCP_EFFICIENCY[nic.kind], pcie)
            else:
                gbps = min(nic.ib_ports[0].rate_gbit * RDMA_EFFICIENCY, pcie)
            out.append(TrafficOutcome(job, round(gbps, 3), None, {"simulated": True}))
        return out
