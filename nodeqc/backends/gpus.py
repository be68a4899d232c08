"""The node's GPUs as a run, the app, `baseline` and the profile choice all see them: opened
through the management backend, listed, and numbered by their place on the PCI bus. One place, so
every face names gpu3 the same GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nodeqc.backends.base import GpuInfo, HostInfo, PciDevice


@dataclass
class OpenGpus:
    gpus: list[GpuInfo]
    driver: str
    cuda: str


def open_gpus(hw: Any, host: HostInfo) -> OpenGpus:
    """Open the management backend (BackendUnavailable when it cannot start: the caller says so in
    its own words) and list its GPUs, numbered by slot. The caller closes it (hw.mgmt.close())."""
    hw.mgmt.open()
    gpus = hw.mgmt.gpus()
    assign_slots(gpus, host.nvidia_gpus_on_pci)
    return OpenGpus(gpus, hw.mgmt.driver_version(), hw.mgmt.cuda_version())


def assign_slots(gpus: list[GpuInfo], on_pci: list[PciDevice]) -> None:
    """Number GPUs by their place on the PCI bus, so a GPU the driver failed to bring up does not
    rename the others. Without a usable PCI listing, slots are the driver's indices."""
    order = sorted(p.bus_id for p in on_pci)
    if all(g.bus_id in order for g in gpus if not g.lost) and not any(g.lost for g in gpus):
        for g in gpus:
            g.slot = order.index(g.bus_id)
    else:
        for g in gpus:
            g.slot = g.index
