"""What the window is given: how to prepare a run, and what the node is."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from nodeqc.core.names import node_key
from nodeqc.backends import Hardware
from nodeqc.backends.gpus import open_gpus
from nodeqc.checks import inventory
from nodeqc.core.errors import BackendUnavailable
from nodeqc.report.keys import Signer
from nodeqc.run.runner import RunOptions
from nodeqc.spec.profile import Profile

# (hardware, profile, signer, operator, ticket, repair=, retest=) -> the run's options; repair: what
# the technician did, retest: the report the run re-tests (both None for a first run)
OptionsFn = Callable[..., RunOptions]


def _nothing(report: Path) -> None:
    pass


@dataclass
class RunSetup:
    """How the window starts runs: fresh hardware, profile and key for each (a re-test too), the
    run's options from the command line, and what follows a report. `options` and `after_run` are
    called on the run's worker thread: they may take a while (the archive's index, a comparison)."""

    prepare: Callable[[str], tuple[Hardware, Profile, Signer]]  # profile name or path -> a run's inputs
    options: OptionsFn
    after_run: Callable[[Path], None] = _nothing
    profile: str = "auto"  # offered first; "auto": the one suggested for the GPUs found
    operator: str | None = None
    ticket: str | None = None
    archive: Path | None = None  # where History looks; None: the default archive
    partial: str | None = None  # what --only/--skip leave out: such a run is not a qualification


@dataclass
class NodeInfo:
    """The node as found before any run: shown at once, and used to suggest the profile."""

    host: dict[str, Any]
    gpus: list[dict[str, Any]]
    driver: str = "N/A"
    cuda: str = "N/A"
    error: str | None = None  # why no GPUs could be listed
    simulated: bool = False
    found: list[Any] = field(default_factory=list)  # the GpuInfo records: the profile suggested fits their SKU

    @property
    def node_id(self) -> str:
        """How the archive files this node's reports."""
        return node_key(self.host.get("system_serial"), self.host.get("hostname"))

    @property
    def models(self) -> list[str]:
        return [g["name"] for g in self.gpus]


def probe(hardware: Hardware) -> NodeInfo:
    """Read the node's inventory once (the runner reads it again for the report)."""
    host = hardware.host.info()
    node = NodeInfo(host=host.to_dict(), gpus=[], simulated=hardware.simulated)
    try:
        found = open_gpus(hardware, host)
        node.gpus = inventory.describe_gpus(found.gpus)
        node.found = found.gpus
        node.driver, node.cuda = found.driver, found.cuda
    except BackendUnavailable as e:
        node.error = str(e)
    finally:
        hardware.mgmt.close()
    return node
