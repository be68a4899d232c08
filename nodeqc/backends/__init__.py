"""Backends: the only code that touches hardware. `select` picks the real ones or the simulated node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nodeqc.backends.base import Clock, GpuManagement, HostBackend, NicBackend
from nodeqc.faults import Fault
from nodeqc.profile import Profile
from nodeqc.workers import Watchdog


@dataclass
class Hardware:
    mgmt: GpuManagement
    host: HostBackend
    compute_spec: dict[str, Any]  # what a worker process needs to open its GPU
    clock: Clock
    simulation: dict[str, Any] | None = None  # scenario, faults, time scale; None on real hardware
    nics: NicBackend | None = None  # None: no NIC checks

    @property
    def simulated(self) -> bool:
        return self.simulation is not None

    def watchdog(self, profile: Profile) -> Watchdog:
        if self.simulated:
            # Simulated work steps take milliseconds; a few silent seconds is a hang.
            return Watchdog(startup_s=60, stall_s=5, time_scale=self.clock.scale)
        return Watchdog(startup_s=profile.get("run", "startup_timeout_s"),
                        stall_s=profile.get("run", "stall_timeout_s"), time_scale=1.0)


def real_hardware() -> Hardware:
    from nodeqc.backends.host import LinuxHost
    from nodeqc.backends.nic import LinuxNics
    from nodeqc.backends.nvml import NvmlBackend

    return Hardware(NvmlBackend(), LinuxHost(), {"kind": "cupy"}, Clock(1.0), nics=LinuxNics())


def simulated_hardware(scenario_ref: str, faults: list[Fault], time_scale: float | None = None) -> Hardware:
    from nodeqc.backends.simulated import SimNode, load_scenario

    node = SimNode(load_scenario(scenario_ref), faults, time_scale)
    return Hardware(node.management(), node.host(), node.compute_spec(), node.clock,
                    simulation={"scenario": node.scenario.name, "faults": [str(f) for f in faults],
                                "time_scale": node.clock.scale}, nics=node.nics())
