"""The real host: CPU, memory, NUMA, DMI and the NVIDIA devices on the PCI bus, from psutil and sysfs.

`root` prefixes every path read, so tests can point it at a prepared tree as well as at the real /.
"""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

import psutil

from nodeqc.backends.base import HostBackend, HostInfo, PciDevice, normalise_bus_id
from nodeqc.core.na import NA
from nodeqc.core.names import host_name
from nodeqc.core.text import is_digits

NVIDIA_VENDOR = "0x10de"
# PCI classes of NVIDIA GPUs: VGA controller (0x0300) and 3D controller (0x0302). NVSwitches and
# audio functions have other classes.
GPU_CLASSES = ("0x0300", "0x0302")
# The fabric manager daemon is nv-fabricmanager; /proc/PID/comm keeps only its first 15 characters.
FABRIC_MANAGER_COMM = "nv-fabricmanage"
# GPUDirect RDMA: nvidia_peermem ships with the driver (R470 and later); nv_peer_mem is the older
# Mellanox module.
PEER_MEMORY_MODULES = ("nvidia_peermem", "nv_peer_mem")
# NVIDIA IMEX (nvidia-imex package): the daemon's process name, the channel devices it serves, and the
# default nodes config (NODE_CONFIG_FILE_NAME in /etc/nvidia-imex/config.cfg): one address a line.
IMEX_COMM = "nvidia-imex"
IMEX_CHANNELS = "dev/nvidia-caps-imex-channels"
IMEX_NODES_CONFIG = "etc/nvidia-imex/nodes_config.cfg"
IMEX_NODES_MAX_BYTES, IMEX_NODES_MAX = 64 * 1024, 1024


class LinuxHost(HostBackend):
    def __init__(self, root: str | Path = "/"):
        self.root = Path(root)

    def _read(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None  # absent, or root-only (DMI serials) when not run as root

    def _dmi(self, name: str):
        value = self._read(f"sys/class/dmi/id/{name}")
        # Vendors fill unset DMI fields with placeholders; a placeholder is not a serial.
        if not value or value.lower() in ("to be filled by o.e.m.", "default string", "not specified",
                                          "system serial number", "0123456789", "none"):
            return NA
        return value

    def info(self) -> HostInfo:
        return HostInfo(
            hostname=host_name(),
            system_vendor=self._dmi("sys_vendor"),
            system_model=self._dmi("product_name"),
            system_serial=self._dmi("product_serial"),
            board_serial=self._dmi("board_serial"),
            bios_version=self._dmi("bios_version"),
            cpu_model=self._cpu_model(),
            sockets=self._sockets(),
            cores=psutil.cpu_count(logical=False) or NA,
            threads=psutil.cpu_count(logical=True) or NA,
            memory_bytes=psutil.virtual_memory().total,
            numa_nodes=self._numa_nodes(),
            os=self._os_name(),
            kernel=platform.release(),
            nvidia_gpus_on_pci=self.nvidia_gpus_on_pci(),
            fabric_manager=self._fabric_manager(),
            peer_memory_module=self._peer_memory_module(),
            imex=self._imex(),
        )

    def _imex(self):
        """IMEX as a node of an NVLink domain needs it: the daemon's process, its channel devices and
        the nodes its config lists (bounded: the file is the node's, read as untrusted text)."""
        proc = self.root / "proc"
        if not proc.is_dir():
            return NA
        running = any(is_digits(entry.name) and (self._read(f"proc/{entry.name}/comm") or "") == IMEX_COMM
                      for entry in proc.iterdir())
        channels_dir = self.root / IMEX_CHANNELS
        channels = sum(1 for _ in channels_dir.iterdir()) if channels_dir.is_dir() else None
        return {"running": running, "channels": channels, "nodes": self._imex_nodes(), "own": self._own_names()}

    def _own_names(self):
        """What names this node in an IMEX nodes config: its IP addresses (link-local IPv6 aside) and
        host names; None off the live host (psutil and the resolver see only the machine it runs on)."""
        if self.root != Path("/"):
            return None
        names = {host_name()}
        try:
            names.add(socket.getfqdn())
        except UnicodeError:  # a host name of other bytes than UTF-8: the resolver's IDNA refuses it
            pass
        for addrs in psutil.net_if_addrs().values():
            names.update(a.address.split("%")[0] for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)
                         and not a.address.startswith("fe80"))
        return sorted(n for n in names if n)

    def _imex_nodes(self):
        try:
            with open(self.root / IMEX_NODES_CONFIG, "rb") as f:
                text = f.read(IMEX_NODES_MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None
        lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
        return [line[:255] for line in lines if line][:IMEX_NODES_MAX]

    def _fabric_manager(self):
        """Whether the fabric manager daemon runs: its process, which is there with or without systemd."""
        proc = self.root / "proc"
        if not proc.is_dir():
            return NA
        for entry in proc.iterdir():
            if is_digits(entry.name) and (self._read(f"proc/{entry.name}/comm") or "").startswith(FABRIC_MANAGER_COMM):
                return True
        return False

    def _peer_memory_module(self):
        text = self._read("proc/modules")
        if text is None:
            return NA
        loaded = {line.split(" ", 1)[0] for line in text.splitlines()}
        return next((m for m in PEER_MEMORY_MODULES if m in loaded), "")

    def _cpu_model(self):
        text = self._read("proc/cpuinfo") or ""
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Processor", "cpu model"):
                return value.strip()
        return platform.processor() or NA

    def _sockets(self):
        cpus = self.root / "sys/devices/system/cpu"
        ids = set()
        for topo in cpus.glob("cpu[0-9]*/topology/physical_package_id"):
            value = self._read(str(topo.relative_to(self.root)))
            if value is not None:
                ids.add(value)
        return len(ids) or NA

    def _numa_nodes(self):
        nodes = list((self.root / "sys/devices/system/node").glob("node[0-9]*"))
        return len(nodes) or NA

    def _os_name(self):
        text = self._read("etc/os-release") or ""
        for line in text.splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
        return NA

    def nvidia_gpus_on_pci(self) -> list[PciDevice]:
        """NVIDIA GPUs the PCI bus shows, whether or not the driver brought them up."""
        found = []
        base = self.root / "sys/bus/pci/devices"
        for dev in sorted(base.glob("*")) if base.is_dir() else []:
            rel = str(dev.relative_to(self.root))
            vendor = self._read(f"{rel}/vendor")
            pci_class = (self._read(f"{rel}/class") or "")[:6]
            if vendor == NVIDIA_VENDOR and pci_class in GPU_CLASSES:
                found.append(PciDevice(bus_id=normalise_bus_id(os.path.basename(dev)), vendor=vendor,
                                       device=self._read(f"{rel}/device") or "", pci_class=pci_class))
        return found
