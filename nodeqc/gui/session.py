"""What the window is given: how to prepare a run, and what the node is."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from nodeqc.backends import Hardware
from nodeqc.checks import inventory
from nodeqc.errors import BackendUnavailable
from nodeqc.keys import Signer
from nodeqc.na import is_na
from nodeqc.profile import Profile


@dataclass
class RunSetup:
    """The command line's choices, and how to get fresh hardware, the profile and the key for a run
    (every run, a re-test too, starts on freshly opened hardware)."""

    prepare: Callable[[str], tuple[Hardware, Profile, Signer]]  # profile name or path -> a run's inputs
    profile: str = "auto"  # offered first; "auto": the one suggested for the GPUs found
    quick: bool = False
    operator: str | None = None
    ticket: str | None = None
    out_dir: Path | None = None
    sample_hz: float | None = None
    command: list[str] = field(default_factory=list)


@dataclass
class NodeInfo:
    """The node as found before any run: shown at once, and used to suggest the profile."""

    host: dict[str, Any]
    gpus: list[dict[str, Any]]
    driver: str = "N/A"
    cuda: str = "N/A"
    error: str | None = None  # why no GPUs could be listed
    simulated: bool = False

    @property
    def node_id(self) -> str:
        """How the archive files this node's reports (as the runner does)."""
        serial = self.host.get("system_serial")
        return str(serial) if serial is not None and not is_na(serial) else str(self.host.get("hostname"))

    @property
    def models(self) -> list[str]:
        return [g["name"] for g in self.gpus]


def probe(hardware: Hardware) -> NodeInfo:
    """Read the node's inventory once (the runner reads it again for the report)."""
    host = hardware.host.info()
    node = NodeInfo(host=host.to_dict(), gpus=[], simulated=hardware.simulated)
    try:
        hardware.mgmt.open()
        gpus = hardware.mgmt.gpus()
        inventory.assign_slots(gpus, host.nvidia_gpus_on_pci)
        node.gpus = inventory.describe_gpus(gpus)
        node.driver, node.cuda = hardware.mgmt.driver_version(), hardware.mgmt.cuda_version()
    except BackendUnavailable as e:
        node.error = str(e)
    finally:
        hardware.mgmt.close()
    return node
