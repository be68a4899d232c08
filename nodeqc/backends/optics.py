"""Which reader reads which NIC's module for host.optics, and the readings.

A Mellanox/NVIDIA port is read with mlxlink where it is installed: it gives the module's readings
against its own alarm range and, beyond what `ethtool -m` can, the link's bit error rates after
FEC. Every other NIC, and a Mellanox port when mlxlink is not installed or could not read it, is
read with `ethtool -m`; its result then says why mlxlink did not read it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from nodeqc.backends.base import NicInfo
from nodeqc.backends.host_stress import HostStress, ModuleReading, parse_module
from nodeqc.backends.mlxlink import LinkReading, is_mlxlink_nic, parse_mlxlink
from nodeqc.core.tool_output import ToolOutputError, excerpt


@dataclass
class OpticsReadings:
    modules: dict[str, tuple[str, ModuleReading | None]] = field(default_factory=dict)  # by ethtool -m
    ethtool_missing: str | None = None  # what to install, when a NIC needed ethtool and it is missing
    links: dict[str, tuple[str, LinkReading | None]] = field(default_factory=dict)  # by mlxlink
    notes: dict[str, str] = field(default_factory=dict)  # NIC read by ethtool -m -> why not by mlxlink
    unread: dict[str, tuple[str, str]] = field(default_factory=dict)  # NIC -> (subject, why ethtool -m could not read it)
    # NIC -> (subject, what in ethtool -m's output is out of its format, the output's end): not a reading
    unparsed: dict[str, tuple[str, str, list[str]]] = field(default_factory=dict)


def read_optics(stress: HostStress, nics: list[NicInfo]) -> OpticsReadings:
    """interface -> (subject, reading) for each NIC; None: no module in the port."""
    out = OpticsReadings()
    mlx = [n for n in nics if is_mlxlink_nic(n.driver) and isinstance(n.bus_id, str) and n.bus_id]
    missing = stress.missing_tool("mlxlink") if mlx else None
    failed: dict[str, LinkReading] = {}
    for n in mlx:
        if missing:
            out.notes[n.name] = f"mlxlink is not installed, so its link error rates were not read ({missing})"
            continue
        reading = parse_mlxlink(*stress.mlxlink(n.bus_id))
        if reading is not None and reading.error:
            failed[n.name] = reading
        else:
            out.links[n.name] = (n.name, reading)
    rest = [n for n in nics if n.name not in out.links]
    out.ethtool_missing = stress.missing_tool("ethtool") if rest else None
    for n in [] if out.ethtool_missing else rest:
        try:
            text = stress.module(n.name)
        except subprocess.TimeoutExpired as e:  # a hung tool is a finding, never a hang or a traceback
            out.unread[n.name] = (n.name, f"ethtool -m did not answer within {e.timeout:g} s")
            continue
        except OSError as e:
            out.unread[n.name] = (n.name, f"ethtool -m could not be run: {e.strerror or e}")
            continue
        try:
            out.modules[n.name] = (n.name, parse_module(text) if text else None)
        except ToolOutputError as e:  # this port's ERROR; the other ports are still read
            out.unparsed[n.name] = (n.name, str(e), excerpt(text or ""))
    for name, reading in failed.items():
        if name in out.unparsed:
            out.notes[name] = f"mlxlink could not read it ({reading.error})"
        elif out.modules.get(name, (name, None))[1] is None:  # ethtool has nothing either: say what mlxlink said
            out.modules.pop(name, None)
            out.links[name] = (name, reading)
        else:
            out.notes[name] = f"mlxlink could not read it ({reading.error})"
    return out
