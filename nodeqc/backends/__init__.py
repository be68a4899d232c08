"""Backends: the only code that touches hardware. `select` picks the real ones or the simulated node."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodeqc.backends.base import Clock, GpuManagement, HostBackend, NicBackend
from nodeqc.backends.platform import PlatformBackend
from nodeqc.backends.sim.faults import Fault


@dataclass
class Hardware:
    mgmt: GpuManagement
    host: HostBackend
    compute_spec: dict[str, Any]  # what a worker process needs to open its GPU
    clock: Clock
    simulation: dict[str, Any] | None = None  # scenario, faults, time scale; None on real hardware
    nics: NicBackend | None = None  # None: no NIC checks
    platform: PlatformBackend | None = None  # sysfs: baseline topology, host error counters, kernel log
    host_stress: Any = None  # nodeqc.backends.host_stress.HostStress: CPU, memory, NVMe, optics (full runs)
    bmc: Any = None  # nodeqc.backends.bmc.Bmc: the PSUs' sensors around the power tests; None: no reader
    faults: list[Fault] = field(default_factory=list)  # planted in the simulated node (--inject)

    @property
    def simulated(self) -> bool:
        return self.simulation is not None

    @property
    def replayed(self) -> bool:
        """A captured machine's NVML answers replayed (nodeqc capture), not a live node or a model."""
        return bool((self.simulation or {}).get("replay"))

    def release(self) -> None:
        """Remove what this hardware made on disk for its reads (the simulated node's sysfs tree in
        the temporary directory): the runner's last step. Read again, it is made afresh."""
        if self.platform is not None:
            self.platform.close()

    def no_host_reason(self) -> str:
        """Why this run has no backend for the node's own host, platform (sysfs) or NICs, in the words
        each result says that could not read or judge them."""
        if self.replayed:
            return "a replay carries the captured GPUs' NVML answers, not the captured machine's host"
        return "this run has no backend for the host"


MAX_CAPTURE_BYTES = 16 << 20  # a capture of 8 GPUs is under 100 kB (shared/measurements: 8 kB for one)


def hardware_for(simulate: str | None, replay: str | None, inject: list[str],
                 time_scale: float | None = None, in_service: bool = False) -> Hardware:
    """The hardware a command names: a captured machine (--replay), a simulated node (--simulate,
    with --inject's faults), or this machine's. The one place every command builds it, so each
    refuses the same mistakes with the same words (nodeqc.core.errors.UsageError). in_service: a
    simulated node as found between qualifications (SimNode.in_service), for nodeqc watch."""
    from nodeqc.backends.sim.faults import parse_fault
    from nodeqc.core.errors import UsageError

    faults = [parse_fault(f) for f in inject]
    if faults and not simulate:
        raise UsageError("--inject needs --simulate: faults are injected into a simulated node only")
    if replay and simulate:
        raise UsageError("--replay and --simulate exclude each other")
    if replay:
        return replay_hardware(replay)
    if simulate:
        return simulated_hardware(simulate, faults, time_scale=time_scale, in_service=in_service)
    return real_hardware()


def real_hardware() -> Hardware:
    from nodeqc.backends.bmc import IpmitoolBmc
    from nodeqc.backends.host import LinuxHost
    from nodeqc.backends.host_stress import LinuxHostStress
    from nodeqc.backends.nic import LinuxNics
    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.backends.platform import LinuxPlatform

    # The workers' devices count time from the run's own origin (CLOCK_MONOTONIC is one clock for every
    # process): the pulse test's spans then meet telemetry's samples and the driver's counter marks,
    # and the GPUs of a node start their bursts on the same boundaries. Each device counted from its
    # own start before (2026-11-26, H200: the spans at 2-12 s, the marks at 47-59 s).
    clock = Clock(1.0)
    return Hardware(NvmlBackend(), LinuxHost(), {"kind": "cupy", "clock": (1.0, clock.origin)}, clock,
                    nics=LinuxNics(),
                    platform=LinuxPlatform(), host_stress=LinuxHostStress(), bmc=IpmitoolBmc())


def simulated_hardware(scenario_ref: str, faults: list[Fault], time_scale: float | None = None,
                       in_service: bool = False) -> Hardware:
    from nodeqc.backends.sim.node import SimNode
    from nodeqc.backends.sim.platform import SimBmc, SimHostStress, SimPlatform
    from nodeqc.backends.sim.scenario import load_scenario

    node = SimNode(load_scenario(scenario_ref), faults, time_scale)
    if in_service:
        node.in_service()
    return Hardware(node.management(), node.host(), node.compute_spec(), node.clock,
                    simulation={"scenario": node.scenario.name, "faults": [str(f) for f in faults],
                                "time_scale": node.clock.scale}, nics=node.nics(), platform=SimPlatform(node),
                    host_stress=SimHostStress(node), bmc=SimBmc(node), faults=list(faults))


def replay_hardware(path: str, twin_faults: list[Any] | None = None) -> Hardware:
    """A captured machine: its NVML answers and host replayed (nodeqc capture), with a simulated
    compute twin of the captured GPU model so the stress checks run too. Reports say simulated.
    `twin_faults` (nodeqc.backends.sim.faults) are planted in the twin's compute, never in the replayed answers:
    a slow GPU seen through a real machine's telemetry."""
    import json
    from pathlib import Path

    from nodeqc.backends.base import HostInfo, PciDevice
    from nodeqc.backends.capture_shape import CaptureShapeError, check_capture
    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.backends.nvml_replay import ReplayNvml
    from nodeqc.backends.sim.models import SIM_GPU_MODELS
    from nodeqc.backends.sim.node import SimNode
    from nodeqc.backends.sim.scenario import Scenario
    from nodeqc.core.errors import UsageError

    from nodeqc.core.safefile import NotAFile, read_bounded

    try:
        # Read once from a regular file of a capture's size: a FIFO or /dev/zero given as a capture
        # must not hang or fill the memory (a capture of 8 GPUs is under 100 kB).
        data = json.loads(read_bounded(Path(path), MAX_CAPTURE_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"--replay {path}: no such capture") from None
    except NotAFile as e:
        raise UsageError(f"--replay {path}: {e}") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise UsageError(f"--replay {path}: not a readable capture ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict) or data.get("nodeqc_capture") != 1 or "devices" not in data:
        raise UsageError(f"--replay {path}: not a nodeqc capture (make one with: nodeqc capture OUT.json)")
    try:
        check_capture(data)
    except CaptureShapeError as e:
        raise UsageError(f"--replay {path}: a field of the wrong kind: {e}") from None
    host_data = dict(data.get("host") or {"hostname": "replay"})
    pci = [PciDevice(**p) for p in host_data.pop("nvidia_gpus_on_pci", [])]
    host = HostInfo(**{k: v for k, v in host_data.items() if k in HostInfo.__dataclass_fields__}, nvidia_gpus_on_pci=pci)
    skus = _captured_skus(data)
    twin = next(iter(skus)).key if len(skus) == 1 and None not in skus else None
    simulation = {"replay": Path(path).name, "captured_at": data.get("captured_at"),
                  "compute": f"simulated twin ({twin})" if twin else "none: no simulated twin for this GPU model"}
    if twin is None:
        return Hardware(NvmlBackend(ReplayNvml(data)), _ReplayHost(host), {"kind": "none"}, Clock(1.0), simulation)
    links = SIM_GPU_MODELS[twin].nvlink_links
    scenario = Scenario("replay", Path(path), {
        "gpus": {"model": twin, "count": len(data["devices"]), "topology": "nvswitch" if links else "pcie"},
        "host": {"cores": host.cores or 1, "memory_gib": 1}})
    node = SimNode(scenario, list(twin_faults or []))
    simulation["time_scale"] = node.clock.scale
    return Hardware(NvmlBackend(ReplayNvml(data)), _ReplayHost(host), node.compute_spec(), node.clock, simulation)


def _captured_skus(data: dict[str, Any]) -> set[Any]:
    """The SKUs (nodeqc.core.skus) of a capture's GPUs, as the replayed NVML backend reads them."""
    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.backends.nvml_replay import ReplayNvml
    from nodeqc.core.errors import BackendUnavailable
    from nodeqc.core.skus import identify

    probe = NvmlBackend(ReplayNvml(data))  # its own replay: the run's series of answers stay unread
    try:
        probe.open()
        return {identify(g) for g in probe.gpus() if not g.lost}
    except BackendUnavailable:
        return set()
    finally:
        probe.close()


class _ReplayHost(HostBackend):
    def __init__(self, info):
        self._info = info

    def info(self):
        return self._info
