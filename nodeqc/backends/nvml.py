"""GPU management through NVML (nvidia-ml-py, imported as pynvml).

Every NVML call goes through `query`: an answer the SKU or driver cannot give becomes NA, a lost GPU
raises GpuLostError. The module is injectable, so tests drive the same code with a fake NVML.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any, Callable

from nodeqc.backends.base import (COUNTED_REASONS, Clock, GpuCounters, GpuInfo, GpuManagement, GpuProcess, GpuSample,
                                  XidEvent, normalise_bus_id)
from nodeqc.core import fabric
from nodeqc.core.errors import BackendUnavailable, GpuLostError
from nodeqc.core.na import NA, is_na
from nodeqc.core.skus import device_id_from_nvml


def _load_pynvml() -> Any:
    import pynvml

    return pynvml


def field_value(v: Any) -> Any:
    """The number an nvmlFieldValue_t holds, by its valueType; NA for a type nodeqc does not know."""
    kind = v.valueType
    return {0: lambda: v.value.dVal, 1: lambda: v.value.uiVal, 2: lambda: v.value.ulVal,
            3: lambda: v.value.ullVal, 4: lambda: v.value.sllVal, 5: lambda: v.value.siVal}.get(
        kind, lambda: NA)()



# What a GPU's reading can be at all, wider than any part's: a field answered as a double (memory
# temperature, instantaneous power) of 1e308 overflowed the run's mean to inf, and the run's own
# report then failed its check (a replayed capture, 2026-11-29 fuzzing). Outside: no reading (NA).
TEMP_RANGE_C = (-273.0, 1000.0)
POWER_RANGE_W = (0.0, 100_000.0)
# PCIe as its specifications have it (generations 1 to 7, links x1 to x32): 2^32-1 read as the link
# passed health.pcie_link, and 2^64-1 ended in a report that failed its own check (2026-11-29 fuzzing).
PCIE_GEN_RANGE = (1, 7)
PCIE_WIDTH_RANGE = (1, 32)
# Clocks and utilisation likewise (the review of those fixes: a clock of 2^64-1 MHz wrote a report that
# failed its own check; a power reading of 2^32-1 mW "held 4294967 W of the 700 W limit" and passed).
CLOCK_RANGE_MHZ = (0, 100_000)
PERCENT_RANGE = (0, 100)


def physical(value: Any, low: float, high: float) -> Any:
    """`value` where it is a number in [low, high]; NA where it is none (a driver's garbage)."""
    if is_na(value) or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return value if low <= value <= high else NA

class NvmlBackend(GpuManagement):
    def __init__(self, nvml: Any = None, local_names: bool | None = None):
        self._nvml_module = nvml
        # Name processes NVML cannot name from this machine's process table; not when NVML is a
        # replay of another machine, whose pids mean other processes here.
        self._local_names = nvml is None if local_names is None else local_names
        self.n: Any = None
        self._handles: list[Any] = []
        self._lost: set[int] = set()
        self._events: Any = None

    def unrecorded(self) -> list[str]:
        # A ReplayNvml keeps them (and its record outlives close()); the real binding has none.
        return sorted(getattr(self._nvml_module, "unrecorded", ()) or ())

    # ------------------------------------------------------------------ plumbing

    def query(self, fn_name: str, *args: Any, index: int | None = None) -> Any:
        """Call NVML; NotSupported, missing functions and other non-answers become NA."""
        n = self.n
        fn: Callable[..., Any] | None = getattr(n, fn_name, None)
        if fn is None:
            return NA
        try:
            value = fn(*args)
        except n.NVMLError as e:
            if e.value == n.NVML_ERROR_GPU_IS_LOST:
                if index is not None:
                    self._lost.add(index)
                raise GpuLostError(index if index is not None else -1) from None
            if e.value in (n.NVML_ERROR_UNINITIALIZED, n.NVML_ERROR_DRIVER_NOT_LOADED):
                raise
            return NA
        return value.decode(errors="replace") if isinstance(value, bytes) else value  # a driver's bytes are input

    def _h(self, index: int) -> Any:
        if index in self._lost:
            raise GpuLostError(index)
        return self._handles[index]

    def _field(self, index: int, field_id: int) -> Any:
        values = self.query("nvmlDeviceGetFieldValues", self._h(index), [field_id], index=index)
        if is_na(values) or not values or values[0].nvmlReturn != 0:
            return NA
        return field_value(values[0])

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        try:
            self.n = self._nvml_module or _load_pynvml()
        except ImportError:
            raise BackendUnavailable("NVML not available: is the NVIDIA driver installed? "
                                     "(the nvidia-ml-py package is missing)") from None
        n = self.n
        try:
            n.nvmlInit()
            count = n.nvmlDeviceGetCount()
        except n.NVMLError as e:
            raise BackendUnavailable(f"NVML not available: is the NVIDIA driver installed? ({e})") from None
        self._handles = []
        for i in range(count):
            try:
                self._handles.append(n.nvmlDeviceGetHandleByIndex(i))
            except n.NVMLError:
                self._handles.append(None)
                self._lost.add(i)
        self._xids_watched: set[int] = set()
        self._events = self._register_xid_events()

    def _register_xid_events(self) -> Any:
        n = self.n
        try:
            events = n.nvmlEventSetCreate()
        except (n.NVMLError, AttributeError):
            return None
        for i, h in enumerate(self._handles):
            if h is None:
                continue
            try:
                n.nvmlDeviceRegisterEvents(h, n.nvmlEventTypeXidCriticalError, events)
                self._xids_watched.add(i)
            except n.NVMLError:
                pass  # NotSupported on some SKUs and in some VMs: XIDs then come from dmesg only
        return events

    def xids_watched(self, index: int) -> bool:
        return index in self._xids_watched

    def close(self) -> None:
        if self.n is None:
            return
        try:
            if self._events is not None:
                self.n.nvmlEventSetFree(self._events)
            self.n.nvmlShutdown()
        except self.n.NVMLError:
            pass
        self.n = None

    # ------------------------------------------------------------------ inventory

    def driver_version(self) -> str:
        v = self.query("nvmlSystemGetDriverVersion")
        return "N/A" if is_na(v) else str(v)

    def cuda_version(self) -> str:
        v = self.query("nvmlSystemGetCudaDriverVersion")
        return "N/A" if is_na(v) else f"{v // 1000}.{(v % 1000) // 10}"

    def gpus(self) -> list[GpuInfo]:
        infos = [self._info(i) for i in range(len(self._handles))]
        for info in infos:
            if not info.lost:
                info.peer_paths = {str(j.index): self._peer_path(info.index, j.index)
                                   for j in infos if j.index != info.index and not j.lost}
        return infos

    def _peer_path(self, i: int, j: int) -> str:
        """How GPU i reaches GPU j: NVLink where the driver reports peer-to-peer over it, else the
        nearest common PCIe ancestor's level; "unknown" where the driver answers neither."""
        n, hi, hj = self.n, self._handles[i], self._handles[j]
        nvlink = self.query("nvmlDeviceGetP2PStatus", hi, hj, n.NVML_P2P_CAPS_INDEX_NVLINK, index=i)
        if not is_na(nvlink) and nvlink == n.NVML_P2P_STATUS_OK:
            return "nvlink"
        level = self.query("nvmlDeviceGetTopologyCommonAncestor", hi, hj, index=i)
        levels = {n.NVML_TOPOLOGY_INTERNAL: "board", n.NVML_TOPOLOGY_SINGLE: "switch",
                  n.NVML_TOPOLOGY_MULTIPLE: "switches", n.NVML_TOPOLOGY_HOSTBRIDGE: "host_bridge",
                  n.NVML_TOPOLOGY_NODE: "numa_node", n.NVML_TOPOLOGY_SYSTEM: "system"}
        return "unknown" if is_na(level) else levels.get(level, "unknown")

    def _info(self, i: int) -> GpuInfo:
        n = self.n
        if i in self._lost:
            return GpuInfo(index=i, name="unavailable", uuid=NA, bus_id=NA, lost=True)
        try:
            h = self._handles[i]
            q = lambda name, *a: self.query(name, h, *a, index=i)  # noqa: E731
            pci = q("nvmlDeviceGetPciInfo")
            mem = q("nvmlDeviceGetMemoryInfo")
            cc = q("nvmlDeviceGetCudaComputeCapability")
            ecc = q("nvmlDeviceGetEccMode")
            persistence = q("nvmlDeviceGetPersistenceMode")
            limit = q("nvmlDeviceGetEnforcedPowerLimit")
            default_limit = q("nvmlDeviceGetPowerManagementDefaultLimit")
            t = lambda kind: physical(q("nvmlDeviceGetTemperatureThreshold", kind), *TEMP_RANGE_C)  # noqa: E731
            return GpuInfo(
                index=i,
                name=str(q("nvmlDeviceGetName")),
                uuid=q("nvmlDeviceGetUUID"),
                bus_id=NA if is_na(pci) else normalise_bus_id(_text(pci.busId)),
                serial=q("nvmlDeviceGetSerial"),
                memory_total_bytes=NA if is_na(mem) else int(mem.total),
                vbios=q("nvmlDeviceGetVbiosVersion"),
                board_part=q("nvmlDeviceGetBoardPartNumber"),
                pci_device_id=_device_id(pci),
                compute_capability=NA if is_na(cc) else f"{cc[0]}.{cc[1]}",
                ecc_enabled=NA if is_na(ecc) else bool(ecc[0]),
                ecc_pending=NA if is_na(ecc) else bool(ecc[1]),
                persistence=NA if is_na(persistence) else persistence == n.NVML_FEATURE_ENABLED,
                pcie_max_gen=physical(q("nvmlDeviceGetMaxPcieLinkGeneration"), *PCIE_GEN_RANGE),
                pcie_max_width=physical(q("nvmlDeviceGetMaxPcieLinkWidth"), *PCIE_WIDTH_RANGE),
                pcie_gpu_max_gen=physical(q("nvmlDeviceGetGpuMaxPcieLinkGeneration"), *PCIE_GEN_RANGE),
                temp_slowdown_c=t(n.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
                temp_shutdown_c=t(n.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
                temp_gpu_max_c=t(n.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
                temp_mem_max_c=t(n.NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
                power_limit_w=NA if is_na(limit) else physical(limit / 1000.0, *POWER_RANGE_W),
                power_default_limit_w=NA if is_na(default_limit) else physical(default_limit / 1000.0, *POWER_RANGE_W),
                max_sm_clock_mhz=physical(q("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_SM), *CLOCK_RANGE_MHZ),
                max_mem_clock_mhz=physical(q("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_MEM), *CLOCK_RANGE_MHZ),
                nvlink_count=self._nvlink_count(i),
                fabric=self._fabric(i),
                **self._firmware_and_modes(i),
            )
        except GpuLostError:
            return GpuInfo(index=i, name="unavailable", uuid=NA, bus_id=NA, lost=True)

    def _firmware_and_modes(self, i: int) -> dict[str, Any]:
        """Firmware versions, MIG and compute modes, application clocks: what a baseline pins."""
        n, h = self.n, self._handles[i]
        q = lambda name, *a: self.query(name, h, *a, index=i)  # noqa: E731
        mig = q("nvmlDeviceGetMigMode")
        compute = q("nvmlDeviceGetComputeMode")
        compute_names = {getattr(n, "NVML_COMPUTEMODE_DEFAULT", 0): "default",
                         getattr(n, "NVML_COMPUTEMODE_EXCLUSIVE_THREAD", 1): "exclusive_thread",
                         getattr(n, "NVML_COMPUTEMODE_PROHIBITED", 2): "prohibited",
                         getattr(n, "NVML_COMPUTEMODE_EXCLUSIVE_PROCESS", 3): "exclusive_process"}
        return {
            "gsp_firmware": q("nvmlDeviceGetGspFirmwareVersion"),
            "inforom_image": q("nvmlDeviceGetInforomImageVersion"),
            "inforom_oem": q("nvmlDeviceGetInforomVersion", n.NVML_INFOROM_OEM),
            "inforom_ecc": q("nvmlDeviceGetInforomVersion", n.NVML_INFOROM_ECC),
            "inforom_power": q("nvmlDeviceGetInforomVersion", n.NVML_INFOROM_POWER),
            # [current, pending]: the mode the GPU runs in now is the one that matters.
            "mig_mode": NA if is_na(mig) else ("enabled" if mig[0] == n.NVML_DEVICE_MIG_ENABLE else "disabled"),
            "compute_mode": NA if is_na(compute) else compute_names.get(compute, str(compute)),
            "app_sm_clock_mhz": q("nvmlDeviceGetApplicationsClock", n.NVML_CLOCK_SM),
            "app_mem_clock_mhz": q("nvmlDeviceGetApplicationsClock", n.NVML_CLOCK_MEM),
        }

    def _fabric(self, i: int) -> Any:
        """NVML's GPU fabric info (nodeqc.core.fabric): the versioned call with the health mask where
        the driver has it, else the first version; NA where neither answers."""
        n, h = self.n, self._handles[i]
        for fn, struct, version in (("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfo_v2_t", "nvmlGpuFabricInfo_v2"),
                                    ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t", None)):
            make = getattr(n, struct, None)
            if make is None or (version is not None and getattr(n, version, None) is None):
                continue
            info = make()
            if version is not None:
                info.version = getattr(n, version)  # the versioned call refuses a structure without it
            # nvidia-ml-py hands these structures to the driver as they are given: by value, the driver
            # reads the structure's first bytes as its pointer and the process dies (a segfault on the
            # real H100, 2026-11-27, before the run printed a line). The pointer is what NVML takes.
            if is_na(self.query(fn, h, ctypes.byref(info), index=i)):
                continue
            return {"state": fabric.state_name(int(info.state)), "status": int(info.status),
                    "cluster_uuid": fabric.uuid_text(info.clusterUuid), "clique_id": int(info.cliqueId),
                    "health_mask": int(info.healthMask) if version is not None else None}
        return NA

    def _nvlink_count(self, i: int) -> Any:
        count = self._field(i, self.n.NVML_FI_DEV_NVLINK_LINK_COUNT)
        return NA if is_na(count) else int(count)

    # ------------------------------------------------------------------ telemetry

    def sample(self, index: int) -> GpuSample:
        n, h = self.n, self._h(index)
        q = lambda name, *a: self.query(name, h, *a, index=index)  # noqa: E731
        power = q("nvmlDeviceGetPowerUsage")
        limit = q("nvmlDeviceGetEnforcedPowerLimit")
        util = q("nvmlDeviceGetUtilizationRates")
        return GpuSample(
            temp_c=physical(q("nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU), *TEMP_RANGE_C),
            mem_temp_c=physical(self._field(index, n.NVML_FI_DEV_MEMORY_TEMP), *TEMP_RANGE_C),
            power_w=NA if is_na(power) else physical(power / 1000.0, *POWER_RANGE_W),
            power_limit_w=NA if is_na(limit) else physical(limit / 1000.0, *POWER_RANGE_W),
            sm_clock_mhz=physical(q("nvmlDeviceGetClockInfo", n.NVML_CLOCK_SM), *CLOCK_RANGE_MHZ),
            mem_clock_mhz=physical(q("nvmlDeviceGetClockInfo", n.NVML_CLOCK_MEM), *CLOCK_RANGE_MHZ),
            util_pct=NA if is_na(util) else physical(util.gpu, *PERCENT_RANGE),
            mem_util_pct=NA if is_na(util) else physical(util.memory, *PERCENT_RANGE),
            reasons=q("nvmlDeviceGetCurrentClocksEventReasons"),
            pcie_gen=physical(q("nvmlDeviceGetCurrPcieLinkGeneration"), *PCIE_GEN_RANGE),
            pcie_width=physical(q("nvmlDeviceGetCurrPcieLinkWidth"), *PCIE_WIDTH_RANGE),
            power_instant_w=self._power_instant(index),
        )

    def _power_instant(self, index: int) -> Any:
        """NVML_FI_DEV_POWER_INSTANT in W (the field answers mW); NA where this driver or binding
        lacks it or answers NotSupported."""
        field_id = getattr(self.n, "NVML_FI_DEV_POWER_INSTANT", None)
        value = NA if field_id is None else self._field(index, field_id)
        return NA if is_na(value) else physical(value / 1000.0, *POWER_RANGE_W)

    def counters(self, index: int) -> GpuCounters:
        n, h = self.n, self._h(index)
        q = lambda name, *a: self.query(name, h, *a, index=index)  # noqa: E731
        remap = q("nvmlDeviceGetRemappedRows")
        retired_sbe = q("nvmlDeviceGetRetiredPages", n.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
        retired_dbe = q("nvmlDeviceGetRetiredPages", n.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
        pending = q("nvmlDeviceGetRetiredPagesPendingStatus")
        return GpuCounters(
            ecc_sbe_volatile=q("nvmlDeviceGetTotalEccErrors", n.NVML_MEMORY_ERROR_TYPE_CORRECTED, n.NVML_VOLATILE_ECC),
            ecc_dbe_volatile=q("nvmlDeviceGetTotalEccErrors", n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, n.NVML_VOLATILE_ECC),
            pcie_replay=q("nvmlDeviceGetPcieReplayCounter"),
            remap_correctable=NA if is_na(remap) else int(remap[0]),
            remap_uncorrectable=NA if is_na(remap) else int(remap[1]),
            remap_pending=NA if is_na(remap) else bool(remap[2]),
            remap_failure=NA if is_na(remap) else bool(remap[3]),
            retired_sbe=NA if is_na(retired_sbe) else len(retired_sbe),
            retired_dbe=NA if is_na(retired_dbe) else len(retired_dbe),
            retired_pending=NA if is_na(pending) else pending == n.NVML_FEATURE_ENABLED,
            **self._nvlink(index),
            **self._throttle_counters(index),
            **self._onchip_ecc(index),
        )

    def throttle_counters(self, index: int) -> dict[str, Any]:
        """Four field values, not the whole counter set (NVLink alone is dozens of calls)."""
        return {name.removeprefix("throttle_ns_"): v for name, v in self._throttle_counters(index).items()}

    def _throttle_counters(self, index: int) -> dict[str, Any]:
        """The driver's own clocks-event durations (ns); NA where this driver or binding lacks them."""
        out = {}
        for reason, field_name in COUNTED_REASONS.items():
            field_id = getattr(self.n, field_name, None)
            value = NA if field_id is None else self._field(index, field_id)
            out[f"throttle_ns_{reason}"] = NA if is_na(value) else int(value)
        return out

    # Ampere and newer count every on-chip memory under SRAM (the H100 answers SRAM and
    # NotSupported for the others); older GPUs count L1, L2, register file and texture separately.
    # One or the other, never both: summing them could count an error twice.
    _ONCHIP_SRAM = (("sram", "NVML_MEMORY_LOCATION_SRAM"),)
    _ONCHIP_PARTS = (("l1", "NVML_MEMORY_LOCATION_L1_CACHE"), ("l2", "NVML_MEMORY_LOCATION_L2_CACHE"),
                     ("register_file", "NVML_MEMORY_LOCATION_REGISTER_FILE"),
                     ("texture", "NVML_MEMORY_LOCATION_TEXTURE_MEMORY"),
                     ("texture_shm", "NVML_MEMORY_LOCATION_TEXTURE_SHM"), ("cbu", "NVML_MEMORY_LOCATION_CBU"))

    def _onchip_ecc(self, index: int) -> dict[str, Any]:
        """Corrected and uncorrected ECC errors in on-chip memory, aggregate, summed over the
        locations that answer; nothing when none does."""
        n, h = self.n, self._h(index)
        for group in (self._ONCHIP_SRAM, self._ONCHIP_PARTS):
            totals, answered = [0, 0], []
            for label, const in group:
                location = getattr(n, const, None)
                if location is None:
                    continue
                counts = [self.query("nvmlDeviceGetMemoryErrorCounter", h, kind, n.NVML_AGGREGATE_ECC, location,
                                     index=index)
                          for kind in (n.NVML_MEMORY_ERROR_TYPE_CORRECTED, n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)]
                if any(is_na(c) for c in counts):
                    continue
                totals = [t + int(c) for t, c in zip(totals, counts)]
                answered.append(label)
            if answered:
                return {"onchip_ecc_corrected": totals[0], "onchip_ecc_uncorrected": totals[1],
                        "onchip_ecc_locations": ",".join(answered)}
        return {}

    def _nvlink(self, index: int) -> dict[str, Any]:
        """Links up, and replay/recovery/CRC error counters summed over the GPU's links."""
        n, h = self.n, self._h(index)
        links = self._nvlink_count(index)
        if is_na(links) or links == 0:
            return {}
        active, totals = 0, {"nvlink_replay": 0, "nvlink_recovery": 0, "nvlink_crc": 0}
        counters = {"nvlink_replay": n.NVML_NVLINK_ERROR_DL_REPLAY, "nvlink_recovery": n.NVML_NVLINK_ERROR_DL_RECOVERY,
                    "nvlink_crc": n.NVML_NVLINK_ERROR_DL_CRC_FLIT}
        for link in range(links):
            state = self.query("nvmlDeviceGetNvLinkState", h, link, index=index)
            if state == n.NVML_FEATURE_ENABLED:
                active += 1
            for key, counter in counters.items():
                value = self.query("nvmlDeviceGetNvLinkErrorCounter", h, link, counter, index=index)
                totals[key] = NA if is_na(value) or is_na(totals[key]) else totals[key] + value
        return {"nvlink_active": active, **totals}

    def processes(self, index: int) -> Any:
        """Compute processes on the GPU: pid and memory from NVML, the name from NVML or, failing
        that, from this machine's process table. NA when the driver will not list them (vGPU, MIG)."""
        listed = self.query("nvmlDeviceGetComputeRunningProcesses", self._h(index), index=index)
        if is_na(listed):
            return NA
        out = []
        for p in listed:
            used = getattr(p, "usedGpuMemory", None)
            # NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot say; pynvml makes it None.
            used = NA if used is None or used >= 2 ** 64 - 1 else int(used)
            out.append(GpuProcess(int(p.pid), self._process_name(int(p.pid)), used))
        return out

    def _process_name(self, pid: int) -> Any:
        name = self.query("nvmlSystemGetProcessName", pid)
        if not is_na(name) and name:
            return str(name).rsplit("/", 1)[-1]
        if not self._local_names:
            return NA
        import psutil

        try:
            return psutil.Process(pid).name()
        except (psutil.Error, OSError):
            return NA  # gone already, or in another PID namespace

    def wait_xids(self, timeout_s: float, clock: Clock) -> list[XidEvent]:
        n = self.n
        if self._events is None or n is None:
            time.sleep(timeout_s)  # no event source: nothing can arrive
            return []
        started = time.monotonic()
        try:
            data = n.nvmlEventSetWait(self._events, int(timeout_s * 1000))
        except n.NVMLError:
            # Timeout when idle, after NVML waited; any other error (a GPU lost, events gone) is
            # no event and may come back at once: the rest of the wait is slept, or the XID thread
            # that calls this in a loop would spin (a replay's immediate Timeout spun it: 9 s of
            # CPU in an 11 s run, 2026-11-28).
            time.sleep(max(0.0, timeout_s - (time.monotonic() - started)))
            return []
        try:
            index = n.nvmlDeviceGetIndex(data.device)
        except n.NVMLError:
            index = -1
        return [XidEvent(gpu=index, code=int(data.eventData), t=clock.now())]


def _device_id(pci: Any) -> Any:
    """The PCI device id from nvmlPciInfo's pciDeviceId (device << 16 | vendor); NA if absent."""
    raw = NA if is_na(pci) else getattr(pci, "pciDeviceId", NA)
    device = None if not isinstance(raw, int) else device_id_from_nvml(raw)
    return NA if device is None else device


def _text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


class PowerReader:
    """One GPU's power, read from the worker process that loads it: the pulse test reads it at the
    end of each burst and of each idle half, in phase with its swings (telemetry's sampler, at its
    own steady rate, can land on the same phase of every period and see no swing at all). Answers
    (power, instantaneous power) in watts, None where NVML does not give one; never raises."""

    def __init__(self, bus_id: str | None, index: int):
        self.n: Any = None
        self.h: Any = None
        try:
            n = _load_pynvml()
            n.nvmlInit()
            self.h = n.nvmlDeviceGetHandleByPciBusId(bus_id) if bus_id else n.nvmlDeviceGetHandleByIndex(index)
            self.n = n
        except Exception:  # noqa: BLE001 - no NVML in this process: the readings are None, said so by the verdict
            self.n = None

    def read(self) -> tuple[float | None, float | None]:
        n = self.n
        if n is None:
            return None, None
        try:
            power = n.nvmlDeviceGetPowerUsage(self.h) / 1000.0
        except Exception:  # noqa: BLE001 - NotSupported or a driver in trouble: no reading
            power = None
        instant = None
        field = getattr(n, "NVML_FI_DEV_POWER_INSTANT", None)
        if field is not None:
            try:
                v = n.nvmlDeviceGetFieldValues(self.h, [field])[0]
                mw = field_value(v) if v.nvmlReturn == 0 else NA
                instant = None if is_na(mw) else float(mw) / 1000.0  # milliwatts, as nvmlDeviceGetPowerUsage
            except Exception:  # noqa: BLE001 - an older driver or binding without the field
                instant = None
        return power, instant

    def close(self) -> None:
        if self.n is not None:
            try:
                self.n.nvmlShutdown()
            except Exception:  # noqa: BLE001 - shutting down what may already be gone
                pass
            self.n = None
