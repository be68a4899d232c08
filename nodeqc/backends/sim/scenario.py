"""What a simulated node is made of: its scenario, a built-in one (nodeqc/backends/sim/scenarios),
a file given with --simulate PATH.toml, or one GPU of a SKU in a cloud VM; read bounded, and
validated against SCENARIO_SCHEMA before the node (nodeqc.backends.sim.node) is built from it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeqc.backends.sim.models import SIM_GPU_MODELS, SimGpuModel
from nodeqc.core.errors import UsageError
from nodeqc.core.resources import scenarios_dir
from nodeqc.core.safefile import UnreadableInput, as_toml, read_input
from nodeqc.core.schema import Spec, validate

MAX_SCENARIO_BYTES = 1 << 20  # the built-in scenarios are about 2 kB
MAX_NICS = 64  # an 8-GPU node has 8 to 12 (compute rails, front end, BMC); the twin numbers them on 64 buses
SIM_TOOLS = ("iperf3", "ib_write_bw", "ipmitool")  # the tools a scenario may leave uninstalled

SCENARIO_SCHEMA = {
    "": {
        "description": Spec("str", "what this simulated node is"),
        "hostname": Spec("str", "host name the node reports"),
        # At least real time: at 0.1 the watchdog (5 s of the run's clock without progress) killed a
        # healthy worker as hung (2026-11-29 fuzzing); a twin slower than its GPU shows nothing more.
        "time_scale": Spec("number", "simulated seconds per real second", low=1, high=1e6),
        "driver_version": Spec("version", "NVIDIA driver version reported"),
        "cuda_version": Spec("version", "CUDA version the driver reports"),
        "seed": Spec("int", "seed of the telemetry noise", low=0),
    },
    "system": {
        "vendor": Spec("str", "DMI system vendor"),
        "model": Spec("str", "DMI product name"),
        "serial": Spec("str", "DMI product serial"),
    },
    "host": {
        "cpu_model": Spec("str", "CPU model name"),
        # Bounded by what one Linux host can be: the twin builds a sysfs tree of this size, and a
        # million sockets made a million EDAC directories. 32 sockets: HPE Superdome Flex, the
        # largest x86 single system; 8192 CPUs and 1024 NUMA nodes: x86_64 Linux's MAXSMP limits
        # (NR_CPUS, NODES_SHIFT 10).
        "sockets": Spec("int", "CPU sockets", low=1, high=32),
        "cores": Spec("int", "physical cores", low=1, high=8192),
        "threads": Spec("int", "hardware threads", low=1, high=8192),
        "memory_gib": Spec("number", "memory", low=0.5, high=1 << 20),  # up to 1 PiB
        "numa_nodes": Spec("int", "NUMA nodes", low=1, high=1024),
        "os": Spec("str", "operating system"),
        "kernel": Spec("str", "kernel release"),
        "fabric_manager": Spec("bool", "the NVSwitch fabric manager runs"),
        "gpudirect_rdma": Spec("bool", "the GPUDirect RDMA module is loaded"),
        "imex_nodes": Spec("int", "nvidia-imex runs with one channel, its nodes config listing this many nodes "
                           "(none: IMEX is not installed)", low=1, high=1024),
        "vm": Spec("bool", "a virtual machine: no BMC answers, no EDAC or PCIe AER counters in sysfs"),
        "missing_tools": Spec("strlist", f"tools not installed on the node, of {', '.join(SIM_TOOLS)}"),
    },
    "gpus": {
        "model": Spec("choice", "GPU model", tuple(SIM_GPU_MODELS)),
        "count": Spec("int", "number of GPUs", low=1, high=64),
        "bus_ids": Spec("pcilist", "PCI addresses of the GPUs"),
        "serials": Spec("strlist", "GPU serial numbers (default: the system serial and -G<slot>)"),
        "topology": Spec("choice", "how the GPUs connect", ("nvswitch", "pcie", "nvlink-bridge")),
        "fabric_cluster": Spec("str", "NVLink fabric cluster UUID the GPUs register in (rack-scale NVLink); "
                               "none: NVML answers NotSupported"),
        "fabric_clique": Spec("int", "NVLink fabric clique id the GPUs register in", low=0, high=2 ** 32 - 1),
    },
    "nics": {
        "name": Spec("str", "interface name"),
        "driver": Spec("str", "kernel driver"),
        "kind": Spec("choice", "link layer", ("ethernet", "infiniband")),
        "speed_mbps": Spec("int", "link speed", low=1, high=1_600_000),  # 1.6 Tb/s: IEEE 802.3dj, the fastest
        "mtu": Spec("int", "MTU", low=68, high=65536),  # 68: IPv4's least; 65536: Linux's loopback, the most
        "pcie_gen": Spec("int", "PCIe generation", low=1, high=6),
        "pcie_width": Spec("choice", "PCIe lanes", (1, 2, 4, 8, 16)),
        "bus_id": Spec("pci", "PCI address"),
        "ib_device": Spec("str", "its RDMA device (InfiniBand, or RoCE on Ethernet), e.g. mlx5_0"),
        "virtual": Spec("bool", "a paravirtual NIC (virtio_net): no link speed and no PCIe capability reported"),
    },
}


@dataclass
class Scenario:
    name: str
    path: Path
    data: dict[str, Any]

    @property
    def gpu_model(self) -> SimGpuModel:
        return SIM_GPU_MODELS[self.data["gpus"]["model"]]

    @property
    def gpu_count(self) -> int:
        return self.data["gpus"]["count"]

    @property
    def nics(self) -> list[dict[str, Any]]:
        return self.data.get("nics", [])

    def gpu_serial(self, k: int) -> str:
        serials = self.data["gpus"].get("serials")
        return serials[k] if serials else f"{self.data.get('system', {}).get('serial', 'SIM')}-G{k}"

    def bus_id(self, k: int) -> str:
        # Without bus_ids: eight GPUs to a PCI domain, on buses 0x10-0x80 as an HGX board has them.
        ids = self.data["gpus"].get("bus_ids")
        return ids[k] if ids else f"{k // 8:04x}:{0x10 + 0x10 * (k % 8):02x}:00.0"

    def nic_bus_id(self, k: int) -> str:
        """NIC k's PCI address; without one, from bus 0xa0 up, clear of the GPUs' own."""
        return self.nics[k].get("bus_id", f"0000:{0xa0 + k:02x}:00.0")


def list_scenarios() -> list[str]:
    """The built-in scenario files; every SKU's key (nodeqc/core/skus.py) is a scenario too (sku_scenario)."""
    return sorted(p.stem for p in scenarios_dir().glob("*.toml"))


def sku_scenario(key: str) -> Scenario:
    """One GPU of a SKU in a cloud VM like those the real figures were measured on
    (shared/measurements: 16 cores, 125.9 GiB, one virtio NIC): a single-GPU profile must pass it.
    A SKU measured whole (its model has a twin: H100 SXM5, H200 SXM) is that VM as it was: no BMC,
    no EDAC, no AER (shared/measurements/2026-11-26: those checks did not run)."""
    model = SIM_GPU_MODELS[key]
    return Scenario(key, scenarios_dir() / f"{key}.toml", {
        "description": f"one {model.sku.name} in a cloud VM", "hostname": f"sim-{key}", "time_scale": 10,
        "driver_version": "580.159.04", "cuda_version": "13.0",
        "system": {"vendor": "Simulated Cloud", "model": "SIM-VM", "serial": f"SIM-{key.upper()}"},
        "host": {"cpu_model": "Intel(R) Xeon(R) Processor", "sockets": 1, "cores": 16, "threads": 16,
                 "memory_gib": 125.9, "numa_nodes": 1, "os": "Ubuntu 24.04.3 LTS",
                 "kernel": "6.18.44-fc-v657-gpu" if model.twin else "6.8.0-generic",  # the measured VMs
                 "vm": model.twin is not None, **({"missing_tools": ["iperf3", "ipmitool"]} if model.twin else {})},
        "gpus": {"model": key, "count": 1, "bus_ids": ["0000:00:06.0"], "topology": "pcie"},
        # The measured VMs' NIC: virtio_net, no speed and no PCIe capability in sysfs, MTU 1400; neither
        # iperf3 nor ipmitool installed (real-2026-11-27/*-quick*.predicate.json: nic.link "up, N/A,
        # MTU 1400", nic.pcie SKIP "no PCIe capability", nic.tcp IPERF3_MISSING, stress.power "ipmitool
        # is not installed"). Elsewhere a generic cloud VM's NIC, an estimate.
        "nics": [{"name": "eth0", "driver": "virtio_net", "kind": "ethernet", "mtu": 1400, "virtual": True,
                  "bus_id": "0000:00:03.0"} if model.twin else
                 {"name": "eth0", "driver": "virtio_net", "kind": "ethernet", "speed_mbps": 10000,
                  "mtu": 1500, "pcie_gen": 3, "pcie_width": 1, "bus_id": "0000:00:03.0"}],
    })


def load_scenario(ref: str) -> Scenario:
    if ref in SIM_GPU_MODELS and ref == SIM_GPU_MODELS[ref].sku_key and not (scenarios_dir() / f"{ref}.toml").is_file():
        return sku_scenario(ref)
    if ref.endswith(".toml") or "/" in ref:
        path = Path(ref)
        if not path.exists():  # one that is there but no file (a FIFO) is told so where it is read
            raise UsageError(f"{ref}: scenario file not found")
    else:
        path = scenarios_dir() / f"{ref}.toml"
        if not path.is_file():
            raise UsageError(f'--simulate: no built-in scenario "{ref}"; known: {", ".join(list_scenarios())}'
                             " (or give a scenario file PATH.toml, or a GPU SKU: nodeqc profiles)")
    where = str(path) if path.parent != scenarios_dir() else f"scenario {path.stem}"
    try:
        data = as_toml(read_input(path, MAX_SCENARIO_BYTES, "scenario"))
    except UnreadableInput as e:
        raise UsageError(f"{where}: {e}") from None
    validate(where, SCENARIO_SCHEMA, data, arrays=("nics",), required={"nics": ("name",)})
    if len(data.get("nics", [])) > MAX_NICS:
        raise UsageError(f"{where}: [[nics]]: {len(data['nics'])} NICs; a node has at most {MAX_NICS}")
    names = [nic["name"] for nic in data.get("nics", [])]
    for nic in data.get("nics", []):
        for key, most in (("name", 15), ("ib_device", 63)):
            if key in nic and not _device_name(nic[key], most):
                raise UsageError(f"{where}: [[nics]] {key}: {json.dumps(nic[key])[:60]} is not a device name "
                                 f"(1 to {most} characters, no '/', ':' or spaces, not '.' or '..')")
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"{where}: [[nics]] name: {name!r} appears {names.count(name)} times; each NIC needs its own")
    # An RDMA device is one NIC's: two sharing one made the simulated sysfs fail to build (its host health
    # then went unread), and a paravirtual NIC has none (its RDMA figure was NA: an internal error).
    devices = [nic["ib_device"] for nic in data.get("nics", []) if "ib_device" in nic]
    for device in devices:
        if devices.count(device) > 1:
            raise UsageError(f"{where}: [[nics]] ib_device: {device!r} appears {devices.count(device)} times; "
                             "each RDMA device is one NIC's")
    for nic in data.get("nics", []):
        if nic.get("virtual") and "ib_device" in nic:
            raise UsageError(f"{where}: [[nics]] {nic['name']!r}: a virtual NIC (virtio_net) has no RDMA device "
                             "(ib_device)")
    for tool in data.get("host", {}).get("missing_tools", []):
        if tool not in SIM_TOOLS:
            raise UsageError(f"{where}: [host] missing_tools: {tool!r} is not one of {', '.join(SIM_TOOLS)}")
    for table, key in (("gpus", "model"), ("gpus", "count"), ("host", "cores"), ("host", "memory_gib")):
        if key not in data.get(table, {}):
            raise UsageError(f"{where}: [{table}] {key}: missing")
    for key in ("bus_ids", "serials"):
        ids = data["gpus"].get(key)
        if ids is not None and len(ids) != data["gpus"]["count"]:
            raise UsageError(f"{where}: [gpus] {key}: {len(ids)} {'addresses' if key == 'bus_ids' else 'serials'} for {data['gpus']['count']} GPUs")
    scenario = Scenario(path.stem, path, data)
    addresses = [scenario.bus_id(k) for k in range(scenario.gpu_count)] + \
        [scenario.nic_bus_id(k) for k in range(len(scenario.nics))]
    for address in addresses:
        if addresses.count(address) > 1:
            raise UsageError(f"{where}: PCI address {address} is {addresses.count(address)} devices' "
                             "(given, or a NIC's default from 0000:a0:00.0 up); each device has its own")
    return scenario


def _device_name(name: str, most: int) -> bool:
    """A name the kernel gives a device (Linux's dev_valid_name: an interface name is under IFNAMSIZ,
    16; an RDMA device's under IB_DEVICE_NAME_MAX, 64). It becomes a directory of the twin's sysfs
    tree (sys/class/net/NAME), so "../x" would have been written outside it."""
    return 0 < len(name) <= most and name not in (".", "..") and not any(c in name for c in "/:") \
        and not any(c.isspace() for c in name)
