"""The simulated node's platform: a sysfs tree written from its scenario, read by the real
LinuxPlatform code, and a kernel log that prints what its faults would make a real kernel print.

The tree is what a healthy node of that build looks like: each GPU behind a PCIe switch, the NIC a
scenario places near it (DGX naming: the NIC a few buses below the GPU) on the same switch, ACS off
on the switch ports (GPUDirect P2P stays on the switch), NUMA node by bus half, IOMMU in
passthrough, EDAC memory controllers with DIMMs, AER counters at zero. Faults change it: `gpu3:acs`,
`gpu3:numa=1`, `nic2:fw=28.36.1010`, `host:iommu=DMA`, `host:bios=2.1`; `gpu3:aer=K` and
`host:edac_ce=K` grow counters once the GPUs have been loaded; `host:mce`, `host:nvme_reset` and
`gpuN:xid=CODE` put lines in the kernel log. Its BMC (SimBmc) prints ipmitool's listings of healthy
PSUs and rails until `host:psu_fault=N` or `host:psu_undervolt` strike under the swinging load;
`host:no_bmc` and `host:no_ipmitool` take it away.
"""

from __future__ import annotations

import atexit
import json
import os
import struct
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeqc.backends.bmc import INSTALL as IPMITOOL_INSTALL, Bmc, BmcError
from nodeqc.backends.host_stress import INSTALL, FioResult, HostStress
from nodeqc.backends.kernel_log import KernelLog, KernelRecord
from nodeqc.backends.platform import ACS_BITS, ACS_CAP_ID, AER_FILES, HostCounters, LinuxPlatform
from nodeqc.backends.sim.slots import SLOT_LOAD, SLOT_LOADED_S, SLOT_SWUNG, SLOTS
from nodeqc.core import scratch

if TYPE_CHECKING:
    from nodeqc.backends.sim.node import SimNode

# ACS on a switch downstream port when a fault turns it on: what a BIOS that enables ACS for
# isolation sets (SrcValid, ReqRedir, CmpltRedir, UpstreamFwd), as `lspci -vvv` shows on such nodes.
ACS_ISOLATING = sum(bit for name, bit in ACS_BITS if name in ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"))
ACS_CAPABLE = sum(bit for _, bit in ACS_BITS)  # what the switch ports could do (ACSCap)
# ConnectX-7 firmware of the 28.x line (NVIDIA's ConnectX-7 release notes), MLNX_OFED 24.10 driver.
SIM_HCA_FIRMWARE = "28.39.1002"
SIM_OFED_VERSION = "24.10-1.1.4"
SIM_BIOS = {"bios_vendor": "American Megatrends International, LLC.", "bios_version": "2.1a",
            "bios_date": "03/14/2024", "board_vendor": "Supermicro", "board_name": "X13DEG-OAD"}
DIMMS_PER_MC = 8


# Trees made and not yet removed, with the pid that made each: removed at exit by that process
# only (a forked child that exits normally runs its parent's atexit callbacks too).
_TREES: dict[Path, int] = {}
_TREES_LOCK = threading.Lock()


@atexit.register
def _remove_left_trees() -> None:
    """At exit, the trees of platforms never closed (a run that did not get to its end), which an
    impatient Ctrl-C must not turn into a traceback."""
    try:
        with _TREES_LOCK:
            mine = [root for root, pid in _TREES.items() if pid == os.getpid()]
        for root in mine:
            remove_tree(root)
    except KeyboardInterrupt:
        pass


def make_tree(node: "SimNode", grown: frozenset[str] = frozenset()) -> Path:
    """A fresh tree for the node in the temporary directory (nodeqc.core.scratch names it), its
    counters of these kinds ("gpu", "host": grow_counters) grown already. What dead runs left there goes first."""
    scratch.sweep()
    root = Path(tempfile.mkdtemp(prefix=scratch.prefix("sim-sysfs")))
    with _TREES_LOCK:
        _TREES[root] = os.getpid()
    try:
        write_tree(root, node)
        if grown:
            grow_counters(root, node, grown)
    except BaseException:
        remove_tree(root)
        raise
    return root


def remove_tree(root: Path) -> None:
    scratch.remove(root)
    with _TREES_LOCK:
        _TREES.pop(root, None)


class SimPlatform(LinuxPlatform):
    """LinuxPlatform on the simulated node's tree; a GPU's counters (its link's AER) grow with its
    faults once the GPUs have been under load, the host's (EDAC) once they were read before or the
    GPUs loaded: a host's memory errors come whatever the GPUs do (in a run of the host checks alone,
    `--only host`, they never grew: the 2026-11-29 planted-fault outcomes showed it).

    The tree is made on the first read (a probe of the node that reads no sysfs makes none) and
    removed by `close` (the runner closes it at the run's end) or at exit; read again after `close`,
    it is made afresh, in the state the closed one was in."""

    def __init__(self, node: "SimNode"):  # no LinuxPlatform.__init__: `root` is the tree, made when read
        self.node = node
        self._grown: frozenset[str] = frozenset()
        self._counted = False  # the counters read once: the host's grow from the next reading
        self._tree: Path | None = None
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:  # type: ignore[override]
        with self._lock:
            if self._tree is None:
                self._tree = make_tree(self.node, self._grown)
            return self._tree

    def close(self) -> None:
        with self._lock:
            tree, self._tree = self._tree, None
        if tree is not None:
            remove_tree(tree)

    def counters(self, bus_ids: list[str]) -> HostCounters:
        loaded = self._loaded()
        due = ({"gpu", "host"} if loaded else {"host"} if self._counted else set()) - self._grown
        if due:
            self._grow(frozenset(due))
        self._counted = True
        return super().counters(bus_ids)

    def _grow(self, kinds: frozenset[str]) -> None:
        """Once a kind: the counters of the tree there is now; a tree made later is made grown."""
        with self._lock:
            kinds = kinds - self._grown
            if not kinds:
                return
            self._grown |= kinds
            if self._tree is not None:
                grow_counters(self._tree, self.node, kinds)

    def _loaded(self) -> bool:
        return any(self.node.shared[k * SLOTS + SLOT_LOADED_S] > 0 for k in range(self.node.scenario.gpu_count))

    def kernel_log(self, after_seq: int | None = None, since: float | None = None) -> KernelLog:
        # A simulated node lives for one process: its log holds its faults' lines once, whatever the cursor.
        return SimKernelLog(self.node, self._loaded)


class SimKernelLog(KernelLog):
    """The faults' lines since the log was opened, each once: a GPU's once the GPUs have been loaded,
    the host's (machine checks, NVMe resets) whatever the GPUs do."""
    source = "simulated kernel log"

    def __init__(self, node: "SimNode", loaded: Any):
        self.node = node
        self._loaded = loaded
        self._said: set[int] = set()

    def new_records(self) -> list[KernelRecord]:
        loaded = self._loaded()
        out = []
        for seq, (level, text, kind) in enumerate(fault_lines(self.node), start=5000):
            if seq not in self._said and (loaded or kind == "host"):
                self._said.add(seq)
                out.append(KernelRecord(level, seq, 1_000_000 * (100 + seq), text))
        return out


def fault_lines(node: "SimNode") -> list[tuple[int, str, str]]:
    """Kernel log lines a real kernel prints for the node's faults (formats from the drivers:
    NVRM Xid from nvidia.ko, AER from drivers/pci/pcie/aer.c, mce from arch/x86 mce, nvme from
    drivers/nvme/host/core.c), each with its level and whose it is ("gpu" or "host")."""
    sc = node.scenario
    lines: list[tuple[int, str, str]] = []
    for f in node.faults:
        if f.target == "gpu" and f.name == "xid":
            # NVRM names the GPU without its function: PCI:0000:1b:00
            lines.append((4, f"NVRM: Xid (PCI:{sc.bus_id(f.index)[:10]}): {f.value}, pid=4242, name=python3, "
                             "Ch 00000008", f.target))
        elif f.target == "gpu" and f.name == "aer":
            port = downstream_port(node, f.index)
            lines.append((4, f"pcieport {port}: AER: Corrected error received: {sc.bus_id(f.index)}", f.target))
            lines.append((4, f"nvidia {sc.bus_id(f.index)}: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
                             f"(Receiver ID)", f.target))
        elif f.target == "host" and f.name == "mce":
            lines.append((2, "mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 7: cc00008000010090", f.target))
            lines.append((2, "mce: [Hardware Error]: Machine check events logged", f.target))
        elif f.target == "host" and f.name == "nvme_reset":
            lines.append((4, "nvme nvme0: I/O 839 (Read) QID 5 timeout, reset controller", f.target))
    return lines


# ---------------------------------------------------------------------- the tree


def _groups(node: "SimNode") -> list[dict[str, Any]]:
    """Devices grouped by the PCIe switch they share: each GPU with the NICs a few buses below it;
    NICs near no GPU sit on a root port of their own."""
    sc = node.scenario
    gpus = [(int(sc.bus_id(k)[5:7], 16), "gpu", k, sc.bus_id(k)) for k in range(sc.gpu_count)]
    nics = [(int(sc.nic_bus_id(k)[5:7], 16), "nic", k, sc.nic_bus_id(k)) for k in range(len(sc.nics))]
    groups = [{"switch": True, "members": [g]} for g in gpus]
    for nic in nics:
        home = next((grp for grp in groups if grp["switch"] and 0 < grp["members"][0][0] - nic[0] <= 8), None)
        if home:
            home["members"].insert(0, nic)
        else:
            groups.append({"switch": False, "members": [nic]})
    return groups


def _layout(node: "SimNode") -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """bus id of every endpoint -> its bridges (root port first), and every device's facts."""
    used: set[int] = set()
    spare_domains = 0
    paths: dict[str, list[str]] = {}
    facts: dict[str, dict[str, Any]] = {}
    numa_nodes = node.scenario.data.get("host", {}).get("numa_nodes", 1)
    groups = sorted(_groups(node), key=lambda g: min(m[0] for m in g["members"]))
    endpoints = {m[0] for g in groups for m in g["members"]}
    vm = in_vm(node)
    for grp in groups:
        if vm:
            # The measured VMs' GPU and NIC sat on the root bus, under no bridge (real-2026-11-27
            # *-quick*.predicate.json: platform.bridge {}), with no NUMA node (numa_node -1).
            for bus, kind, k, bus_id in grp["members"]:
                paths[bus_id], facts[bus_id] = [], {"kind": kind, "index": k, "numa": -1}
            continue
        low = min(m[0] for m in grp["members"])
        rc = low - 3
        # The switch's bridges take the three buses below the group; where they are not free the
        # devices sit on a root port of their own (as a single PCIe GPU on a CPU port does).
        domain = 0
        if rc < 0 or {rc, rc + 1, rc + 2} & (endpoints | used):
            grp["switch"] = False
            rc = next((b for b in range(256) if b not in endpoints and b not in used), -1)
            if rc < 0:  # no bus of domain 0 is free (devices spread over all of it): a domain of its own
                spare_domains += 1
                domain, rc = 0x100 + spare_domains, 0
            else:
                used.add(rc)
        else:
            used.update({rc, rc + 1, rc + 2})
        root_port = f"{domain:04x}:{rc:02x}:01.0"
        for slot, (bus, kind, k, bus_id) in enumerate(grp["members"]):
            bridges = [root_port if grp["switch"] else f"{domain:04x}:{rc:02x}:{slot + 1:02x}.0"]
            if grp["switch"]:
                bridges += [f"0000:{rc + 1:02x}:00.0", f"0000:{rc + 2:02x}:{slot:02x}.0"]
            paths[bus_id] = bridges
            fault = node.value(k, "numa") if kind == "gpu" else node.nic_value(k, "numa")
            facts[bus_id] = {"kind": kind, "index": k, "numa": fault if fault is not None else
                             (0 if bus < 0x80 or numa_nodes < 2 else 1)}
    return paths, facts


def downstream_port(node: "SimNode", gpu: int) -> str:
    """The bridge a GPU's link ends at (in a VM, under none: the root complex's)."""
    paths, _ = _layout(node)
    bus_id = node.scenario.bus_id(gpu)
    return (paths[bus_id] or [f"{bus_id[:7]}:00.0"])[-1]


def _put(root: Path, rel: str, text: str | bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text + "\n", encoding="utf-8")


def _link(root: Path, rel: str, target_rel: str) -> None:
    """A relative symlink at rel pointing to target_rel (both relative to root), as sysfs has them."""
    where = root / rel
    where.parent.mkdir(parents=True, exist_ok=True)
    (root / target_rel).mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(root / target_rel, where.parent), where)


def _config(acs_control: int | None) -> bytes:
    """A 4 KiB config space: the ACS extended capability at 0x100 for bridges, none for endpoints."""
    data = bytearray(4096)
    if acs_control is not None:
        struct.pack_into("<IHH", data, 0x100, ACS_CAP_ID | (1 << 16), ACS_CAPABLE, acs_control)
    return bytes(data)


def _aer_text(kind: str, count: int) -> str:
    names = {"correctable": ["RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout"],
             "nonfatal": ["Undefined", "DLP", "TLP", "CmpltTO"], "fatal": ["Undefined", "DLP", "SDES"]}[kind]
    total = AER_FILES[kind][1]
    return "\n".join([f"{names[0]} {count}"] + [f"{n} 0" for n in names[1:]] + [f"{total} {count}"])


def write_tree(root: Path, node: "SimNode") -> None:
    sc = node.scenario
    host_fault = {f.name: (True if f.value is None else f.value) for f in node.faults if f.target == "host"}
    dmi = {**SIM_BIOS, "sys_vendor": sc.data.get("system", {}).get("vendor", "Simulated"),
           "product_name": sc.data.get("system", {}).get("model", sc.name)}
    if "bios" in host_fault:
        dmi["bios_version"] = host_fault["bios"]
    # The measured VMs (a Firecracker guest: kernel 6.18.44-fc) read no DMI and no IOMMU (real-2026-11-27
    # *-quick*.predicate.json: platform.node's BIOS and board fields null, iommu "off").
    for name, value in dmi.items() if not in_vm(node) else ():
        _put(root, f"sys/class/dmi/id/{name}", value)
    # Elsewhere iommu=pt, as NVIDIA's GPUDirect guides recommend.
    iommu = host_fault.get("iommu", "off" if in_vm(node) else "identity")
    (root / "sys/class/iommu").mkdir(parents=True, exist_ok=True)
    if iommu != "off":
        (root / "sys/class/iommu/dmar0").mkdir(parents=True, exist_ok=True)
    _put(root, "sys/module/nvidia/version", sc.data.get("driver_version", "570.124.06"))
    _put(root, "sys/module/mlx5_core/version", SIM_OFED_VERSION)

    paths, facts = _layout(node)
    acs_faults = {sc.bus_id(f.index) for f in node.faults if f.target == "gpu" and f.name == "acs"}
    group = 0
    for bus_id, bridges in paths.items():
        chain = [f"pci{(bridges[0] if bridges else bus_id)[:7]}"] + bridges + [bus_id]
        for depth, dev in enumerate(chain[1:], start=1):
            rel = "sys/devices/" + "/".join(chain[:depth + 1])
            if (root / rel).exists():
                continue
            is_bridge = dev != bus_id
            f = facts[bus_id]
            if is_bridge:
                redirect = bus_id in acs_faults and dev == bridges[-1] and len(bridges) > 1
                _put(root, f"{rel}/class", "0x060400")
                _put(root, f"{rel}/vendor", "0x1000" if depth > 1 else "0x8086")  # Broadcom PEX switch / Intel root port
                _put(root, f"{rel}/device", "0xc030" if depth > 1 else "0x352a")
                _put(root, f"{rel}/config", _config(ACS_ISOLATING if redirect else (ACS_ISOLATING if depth == 1 else 0)))
                _link(root, f"{rel}/driver", "sys/bus/pci/drivers/pcieport")
            else:
                gpu = f["kind"] == "gpu"
                _put(root, f"{rel}/class", "0x030200" if gpu else "0x020700")
                _put(root, f"{rel}/vendor", "0x10de" if gpu else "0x15b3")
                _put(root, f"{rel}/device", "0x2330" if gpu else "0x1021")
                _put(root, f"{rel}/config", _config(None))
                spec = None if gpu else sc.nics[f["index"]]
                driver = "nvidia" if gpu else spec.get("driver", "mlx5_core")
                _link(root, f"{rel}/driver", f"sys/bus/pci/drivers/{driver}")
            _put(root, f"{rel}/numa_node", str(f["numa"]))
            for kind in AER_FILES if not in_vm(node) else ():  # a VM's guest sees no AER counters
                _put(root, f"{rel}/{AER_FILES[kind][0]}", _aer_text(kind, 0))
            if iommu != "off":
                _put(root, f"sys/kernel/iommu_groups/{group}/type", iommu)
                _link(root, f"{rel}/iommu_group", f"sys/kernel/iommu_groups/{group}")
                group += 1
            _link(root, f"sys/bus/pci/devices/{dev}", rel)
    for k, spec in enumerate(sc.nics):
        bus_id = sc.nic_bus_id(k)
        target = "sys/devices/" + "/".join([f"pci{(paths[bus_id] or [bus_id])[0][:7]}"] + paths[bus_id] + [bus_id])
        _link(root, f"sys/class/net/{spec['name']}/device", target)
        if "ib_device" in spec:
            ib = f"sys/class/infiniband/{spec['ib_device']}"
            _put(root, f"{ib}/fw_ver", str(node.nic_value(k, "fw", SIM_HCA_FIRMWARE)))
            _put(root, f"{ib}/board_id", "MT_0000000838")
            _link(root, f"{ib}/device", target)
    sockets = sc.data.get("host", {}).get("sockets", 1)
    for mc in range(sockets if not in_vm(node) else 0):  # nor EDAC memory controllers
        base = f"sys/devices/system/edac/mc/mc{mc}"
        _put(root, f"{base}/ce_count", "0")
        _put(root, f"{base}/ue_count", "0")
        for d in range(DIMMS_PER_MC):
            _put(root, f"{base}/dimm{d}/dimm_ce_count", "0")
            _put(root, f"{base}/dimm{d}/dimm_ue_count", "0")
            _put(root, f"{base}/dimm{d}/dimm_label", f"CPU_SrcID#{mc}_MC#0_Chan#{d}_DIMM#0")


def in_vm(node: "SimNode") -> bool:
    """The scenario's host is a VM (`[host] vm`), as the measured single-GPU machines were: no BMC
    answers, and sysfs has no EDAC memory controllers and no PCIe AER counters."""
    return bool(node.scenario.data.get("host", {}).get("vm", False))


def grow_counters(root: Path, node: "SimNode", kinds: frozenset[str] = frozenset({"gpu", "host"})) -> None:
    """The counters grown by the faults of these kinds: "gpu", AER on faulty GPU links (the device and
    its downstream port); "host", EDAC on the first DIMM (none in a VM: it has neither)."""
    if in_vm(node):
        return
    sc = node.scenario
    paths, _ = _layout(node)
    for f in node.faults:
        if f.target not in kinds:
            continue
        if f.target == "gpu" and f.name == "aer":
            for dev in (sc.bus_id(f.index), paths[sc.bus_id(f.index)][-1]):
                (root / f"sys/bus/pci/devices/{dev}/aer_dev_correctable").write_text(_aer_text("correctable", f.value))
        if f.target == "host" and f.name in ("edac_ce", "edac_ue"):
            kind = f.name[-2:]
            base = root / "sys/devices/system/edac/mc/mc0"
            for rel in (f"{kind}_count", f"dimm2/dimm_{kind}_count"):
                path = base / rel
                path.write_text(f"{int(path.read_text()) + f.value}\n")


# ---------------------------------------------------------------------- host stress


# Healthy figures of the simulated host: STREAM-like copy of about 230 GB/s per socket (DDR5-4800,
# 8 channels: 307 GB/s peak, copy reaches about three quarters), a PCIe Gen4 NVMe drive reading
# 6.8 GB/s (datasheets of Gen4 data-centre drives: about 7 GB/s sequential read).
SIM_COPY_GBPS_PER_SOCKET = 230.0
SIM_NVME_READ_GBPS = 6.8
# An SFF-8636 QSFP module as `ethtool -m` prints it; readings and thresholds are those of a Mellanox
# MMA1B00-C100D in tests/fixtures/ethtool-m-qsfp28-mellanox.txt, the temperature filled in.
SIM_MODULE = """\
\tIdentifier                                : 0x11 (QSFP28)
\tVendor name                               : Mellanox
\tVendor PN                                 : MMA1B00-C100D
\tModule temperature                        : {temp:.2f} degrees C / {temp_f:.2f} degrees F
\tModule voltage                            : 3.2350 V
\tLaser tx bias current (Channel 1)         : 6.750 mA
\tLaser tx bias current (Channel 2)         : 6.750 mA
\tTransmit avg optical power (Channel 1)    : 1.3924 mW / 1.44 dBm
\tTransmit avg optical power (Channel 2)    : 1.3181 mW / 1.20 dBm
\tRcvr signal avg optical power(Channel 1)  : 0.9720 mW / -0.12 dBm
\tRcvr signal avg optical power(Channel 2)  : 0.9798 mW / -0.09 dBm
\tLaser bias current high alarm threshold   : 8.500 mA
\tLaser bias current low alarm threshold    : 5.492 mA
\tLaser bias current high warning threshold : 8.000 mA
\tLaser bias current low warning threshold  : 6.000 mA
\tLaser output power high alarm threshold   : 3.4673 mW / 5.40 dBm
\tLaser output power low alarm threshold    : 0.0724 mW / -11.40 dBm
\tLaser output power high warning threshold : 1.7378 mW / 2.40 dBm
\tLaser output power low warning threshold  : 0.1445 mW / -8.40 dBm
\tModule temperature high alarm threshold   : 80.00 degrees C / 176.00 degrees F
\tModule temperature low alarm threshold    : -10.00 degrees C / 14.00 degrees F
\tModule temperature high warning threshold : 70.00 degrees C / 158.00 degrees F
\tModule temperature low warning threshold  : 0.00 degrees C / 32.00 degrees F
\tModule voltage high alarm threshold       : 3.5000 V
\tModule voltage low alarm threshold        : 3.1000 V
\tModule voltage high warning threshold     : 3.4650 V
\tModule voltage low warning threshold      : 3.1350 V
\tLaser rx power high alarm threshold       : 3.4673 mW / 5.40 dBm
\tLaser rx power low alarm threshold        : 0.0467 mW / -13.31 dBm
\tLaser rx power high warning threshold     : 1.7378 mW / 2.40 dBm
\tLaser rx power low warning threshold      : 0.0933 mW / -10.30 dBm
"""

# A Mellanox/NVIDIA port as `mlxlink -m -c --json` prints it (mstflint's MlxlinkCmdPrint::toJsonFormat):
# the module readings and alarm ranges of the CLT OSFP in tests/fixtures/mlxlink-osfp-400g-optical-
# module.txt, the temperature filled in; counters over an hour at NDR (400 Gb/s), none left after
# FEC unless `nicN:link_ber=R` sets the symbol and effective BER. mlxlink prints a BER as coefficient and
# magnitude; no error at all as 15E-255.
SIM_MLXLINK_MINUTES = 60.0
SIM_MLXLINK_BPS = 400e9


def sim_mlxlink(temp: float, ber: float) -> str:
    errors = round(ber * SIM_MLXLINK_BPS * SIM_MLXLINK_MINUTES * 60)
    coef, mag = (f"{ber:.0e}".split("e-") if ber > 0 else ("15", "255"))
    return json.dumps({"result": {"output": {
        "Operational Info": {"State": "Active", "Physical state": "LinkUp", "Speed": "IB-NDR", "Width": "4x",
                             "FEC": "Ethernet_Consortium_LL_50G_RS_FEC_PLR -(272,257+1)"},
        "Troubleshooting Info": {"Status Opcode": "0", "Recommendation": "No issue was observed"},
        "Module Info": {"Temperature [C]": f"{temp:g} [-5..75]", "Voltage [mV]": "3261.2 [2970..3630]",
                        "Bias Current [mA]": "8.380,8.380,8.380,8.380 [2..15]",
                        "Rx Power Current [dBm]": "1.886,1.989,2.281,1.976 [-10.41..6]",
                        "Tx Power Current [dBm]": "1.562,1.427,1.559,1.761 [-8.508..5]",
                        "Identifier": "OSFP", "Vendor Name": "CLT", "Vendor Part Number": "T-F4GS-BV0"},
        "Physical Counters and BER Info": {
            "Time Since Last Clear [Min]": f"{SIM_MLXLINK_MINUTES:g}", "Symbol Errors": str(errors),
            "Symbol BER": f"{coef}E-{int(mag)}", "Effective Physical Errors": str(errors),
            "Effective Physical BER": f"{coef}E-{int(mag)}", "Raw Physical BER": "2E-9",
            "Raw Physical Errors Per Lane": {"values": ["4321", "5210", "3987", "4876"]}}}},
        "status": {"code": 0, "message": "success"}}, indent=1)


class SimHostStress(HostStress):
    """Host stress on the simulated node's clock: known answers per CPU (a `host:cpu_wrong=N` core
    gets some wrong), its memory and NVMe at healthy figures, modules on its InfiniBand NICs (read
    with mlxlink unless `host:no_mlxlink`, then with ethtool -m)."""

    def __init__(self, node: "SimNode"):
        self.node = node

    def cpu(self, seconds: float) -> list[dict[str, Any]]:
        host = self.node.scenario.data.get("host", {})
        threads = min(int(host.get("threads", host.get("cores", 1))), 4096)
        bad = {f.value for f in self.node.faults if f.target == "host" and f.name == "cpu_wrong"}
        rounds = max(1, int(seconds * 10))
        return [{"cpu": c, "rounds": rounds, "wrong": 3 if c in bad else 0,
                 "first_wrong": {"hash": "simulated"} if c in bad else None} for c in range(threads)]

    def memory_bandwidth(self) -> float:
        return SIM_COPY_GBPS_PER_SOCKET * self.node.scenario.data.get("host", {}).get("sockets", 1)

    def missing_tool(self, tool: str) -> str | None:
        gone = tool == "mlxlink" and any(f.target == "host" and f.name == "no_mlxlink" for f in self.node.faults)
        return INSTALL[tool] if gone else None

    def fio(self, target: str, seconds: float, scratch: bool) -> FioResult:
        return FioResult(target, read_gbps=SIM_NVME_READ_GBPS, read_iops=6485.0, read_p99_us=1200.0,
                         command=["fio", "(simulated)", f"--filename={target}"])

    def module(self, interface: str) -> str | None:
        for k, spec in enumerate(self.node.scenario.nics):
            if spec["name"] == interface and spec.get("kind") == "infiniband":
                temp = float(self.node.nic_value(k, "optics_temp", 45.0))
                return SIM_MODULE.format(temp=temp, temp_f=temp * 9 / 5 + 32)
        return None

    def mlxlink(self, device: str) -> tuple[str, str | None]:
        for k, spec in enumerate(self.node.scenario.nics):
            if spec.get("bus_id") == device:
                if spec.get("kind") != "infiniband":
                    return "", "-E- No plugged cable detected"
                return sim_mlxlink(float(self.node.nic_value(k, "optics_temp", 45.0)),
                                   float(self.node.nic_value(k, "link_ber", 0.0))), None
        return "", f"-E- Failed to open device: {device}"


# The simulated BMC's rails: (sensor, nominal volts, its thresholds lnr, lcr, lnc, unc, ucr, unr), as
# a server board's BMC lists them (+-10 % critical, +-5 % non-critical, +-15 % non-recoverable on 12 V).
SIM_RAILS = (("P12V", 12.05, (10.2, 10.8, 11.4, 12.6, 13.2, 13.8)),
             ("P5V", 5.02, (4.25, 4.5, 4.75, 5.25, 5.5, 5.75)),
             ("P3V3", 3.31, (2.8, 2.97, 3.13, 3.47, 3.63, 3.8)))
SIM_PSU_AMPS_IDLE, SIM_PSU_AMPS_FULL, SIM_PSU_AMPS_UCR = 12.0, 95.0, 125.0  # 12 V output current per PSU
SIM_UNDERVOLT = 10.42  # the 12 V rail under `psu_undervolt`: below its lower critical 10.8


class SimBmc(Bmc):
    """The simulated node's BMC, printing what ipmitool prints (the real parsers read it): its PSUs
    (six on an 8-GPU node, as HGX H100 systems carry, else two), each present; their redundancy;
    12, 5 and 3.3 V rails; each PSU's 12 V output current, following the GPUs' load. `host:psu_fault=N`
    and `host:psu_undervolt` strike once the GPUs' load has swung; `host:no_bmc` and
    `host:no_ipmitool` take the BMC away."""

    def __init__(self, node: "SimNode"):
        self.node = node
        self.psus = 6 if node.scenario.gpu_count >= 8 else 2

    def _host(self, name: str) -> Any:
        return next((f.value if f.value is not None else True for f in self.node.faults
                     if f.target == "host" and f.name == name), None)

    def _swung(self) -> bool:
        return any(self.node.shared[k * SLOTS + SLOT_SWUNG] > 0 for k in range(self.node.scenario.gpu_count))

    def _load(self) -> float:
        n = self.node.scenario.gpu_count
        return sum(max(0.0, self.node.shared[k * SLOTS + SLOT_LOAD]) for k in range(n)) / max(1, n)

    def missing(self) -> str | None:
        gone = "ipmitool" in self.node.scenario.data.get("host", {}).get("missing_tools", [])
        return IPMITOOL_INSTALL if gone or self._host("no_ipmitool") else None

    def _answer(self) -> None:
        if self._host("no_bmc") or in_vm(self.node):
            raise BmcError("no BMC answered (ipmitool sdr type: Could not open device at /dev/ipmi0 or /dev/ipmi/0 "
                           "or /dev/ipmidev/0: No such file or directory); on a bare-metal node load the in-band "
                           "driver (modprobe -a ipmi_devintf ipmi_si); a VM has no BMC")

    def sdr_type(self, sensor_type: str) -> str:
        self._answer()
        struck = self._swung()
        failed = self._host("psu_fault") if struck else None
        lines = []
        if sensor_type == "Power Supply":
            for n in range(self.psus):
                states = "Presence detected" + (", Failure detected" if failed == n else "")
                lines.append(f"PSU{n} Status      | {0x80 + n:02X}h | ok  | 10.{n + 1} | {states}")
            lines.append(f"PSU Redundancy   | {0x80 + self.psus:02X}h | ok  | 21.1 | "
                         + ("Redundancy Lost" if failed is not None else "Fully Redundant"))
        elif sensor_type == "Voltage":
            for n, (name, volts, limits) in enumerate(SIM_RAILS):
                status = "ok"
                if name == "P12V" and struck and self._host("psu_undervolt"):
                    volts, status = SIM_UNDERVOLT, "lcr"
                lines.append(f"{name:<16} | {0x30 + n:02X}h | {status:<3} |  7.1 | {volts:.2f} Volts")
        elif sensor_type == "Current":
            amps = SIM_PSU_AMPS_IDLE + self._load() * (SIM_PSU_AMPS_FULL - SIM_PSU_AMPS_IDLE)
            for n in range(self.psus):
                lines.append(f"PSU{n} IOut        | {0x40 + n:02X}h | ok  | 10.{n + 1} | {amps:.1f} Amps")
        return "\n".join(lines) + "\n"

    def sensor_list(self) -> str:
        self._answer()
        rows = [(name, f"{volts:.3f}", "Volts", limits) for name, volts, limits in SIM_RAILS]
        rows += [(f"PSU{n} IOut", f"{SIM_PSU_AMPS_IDLE:.3f}", "Amps", (None, None, None, None, SIM_PSU_AMPS_UCR, None))
                 for n in range(self.psus)]
        out = [f"PSU{n} Status      | 0x1        | discrete   | 0x0100| na        | na        | na        | na        "
               "| na        | na" for n in range(self.psus)]
        for name, value, unit, limits in rows:
            cells = ["na" if x is None else f"{x:.3f}" for x in limits]
            out.append(f"{name:<16} | {value:<10} | {unit:<10} | ok    | " + " | ".join(f"{c:<9}" for c in cells))
        return "\n".join(out) + "\n"
