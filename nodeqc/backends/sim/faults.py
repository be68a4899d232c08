"""The fault vocabulary of the simulated node: `--inject gpu3:pcie_width=8`, `--inject nic0:down`.

The simulator only makes the fault happen (a link that trains narrow, a result with a flipped bit);
the real checks must find it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Callable

from nodeqc.backends.sim.models import SimGpuModel
from nodeqc.core.errors import UsageError, shown

THROTTLE_REASONS = ("hw_slowdown", "sw_thermal", "hw_thermal", "power_brake", "sw_power_cap")


# The most a counter fault adds in a run: far past every floor, and a count every report holds (a
# 29-digit ecc_dbe ran the whole run and then failed its own report's check; a 21-digit aer was
# dropped by the sysfs reader and passed, 2026-11-29 fuzzing).
MAX_FAULT_COUNT = 10 ** 9
# The smallest fraction of a rate a fault leaves: slower than any GPU that still answers (slow=1e-300
# made a product last past the platform's time_t, an internal error).
MIN_FAULT_FRACTION = 0.001


def _int(low: int, high: int | None = None, choices: tuple[int, ...] = ()) -> Callable[[str], int]:
    high = MAX_FAULT_COUNT if high is None else high

    def parse(text: str) -> int:
        # ASCII digits only: int() takes "٣" and "1_000", which no counter or index is written as.
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise ValueError(f"expected an integer, got {shown(text)!r}")
        v = int(text)
        if choices and v not in choices:
            raise ValueError(f"expected one of {', '.join(map(str, choices))}, got {v}")
        if not low <= v <= high:
            raise ValueError(f"expected {low}..{high}, got {shown(text)}")
        return v
    return parse


def _number(low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        # ASCII decimal notation only: float() takes "nan", "inf", "٩٠" and "1_0".
        if not re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text):
            raise ValueError(f"expected a number, got {shown(text)!r}")
        v = float(text)
        if not low <= v <= high:
            raise ValueError(f"expected a number in [{low:g}, {high:g}], got {shown(text)}")
        return v
    return parse


def _text(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", text):
        raise ValueError(f"expected a version like 96.00.99.00.01, got {text!r}")
    return text


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {text!r}")
        return text
    return parse


def _reason(text: str) -> str:
    if text not in THROTTLE_REASONS:
        raise ValueError(f"expected one of {', '.join(THROTTLE_REASONS)}, got {text!r}")
    return text


# name -> (parser of the value, or None for a fault without one; what it does)
GPU_FAULTS: dict[str, tuple[Callable[[str], Any] | None, str]] = {
    "missing": (None, "the driver does not bring the GPU up (it is on the PCI bus only)"),
    "pcie_width": (_int(1, choices=(1, 2, 4, 8, 16)), "the PCIe link trains to this width under load"),
    "pcie_gen": (_int(1, 5), "the PCIe link trains to this generation under load"),
    "pcie_replay": (_int(1), "the PCIe replay counter grows by this much under load"),
    "temp": (_number(0, 130), "the GPU reaches this temperature (C) under load"),
    "throttle": (_reason, "clocks are cut for this reason under load"),
    "ecc_dbe": (_int(1), "this many uncorrectable ECC errors appear under load"),
    "ecc_sbe": (_int(1), "this many correctable ECC errors appear under load"),
    "sram_dbe": (_int(1), "this many uncorrectable ECC errors appear in on-chip memory (SRAM) under load"),
    "sram_sbe": (_int(1), "this many correctable ECC errors appear in on-chip memory (SRAM) under load"),
    "xid": (_int(1, 999), "the driver reports this XID under load"),
    "row_remap_pending": (None, "row remaps are pending (not yet applied)"),
    "row_remap_failed": (None, "a row remap failed"),
    "lost": (None, "the GPU falls off the bus a few seconds into its load"),
    "slow": (_number(MIN_FAULT_FRACTION, 1), "compute runs at this fraction of its normal rate"),
    "hbm_bw": (_number(MIN_FAULT_FRACTION, 1), "memory bandwidth is this fraction of normal"),
    "bitflip": (None, "matmul results come back with one flipped bit"),
    "badmem": (None, "one bit of device memory is stuck"),
    "retention": (None, "weak memory cells lose their charge while left alone (found by full mode's bit fade)"),
    # Silent corruption at seeded random positions, for the verification of every kind of data.
    "bitflip_random": (None, "sustained matmul products come back with one bit flipped at a random place, a new one each product"),
    "hbm_corrupt": (None, "device-memory copies (STREAM) come back with one flipped bit"),
    "pcie_corrupt": (None, "host-to-device-to-host copies come back with one flipped bit"),
    "p2p_corrupt": (None, "copies this GPU receives from its peers come back with one flipped bit"),
    "nccl_corrupt": (None, "this GPU's all-reduce result comes back with one flipped bit"),
    "nvlink_down": (_int(1, 18), "this many NVLink links are down"),
    # The NVLink fabric registration (nodeqc.core.fabric), on a scenario whose GPUs are on a fabric.
    "fabric_unregistered": (_choice("not_started", "in_progress"), "the GPU's NVLink fabric registration is "
                            "stuck in this state (not_started or in_progress)"),
    "fabric_degraded": (None, "the NVLink fabric reports the GPU's bandwidth degraded (its health mask)"),
    "fabric_clique": (_int(0, 2 ** 32 - 1), "the GPU is registered in this NVLink clique, not its tray's"),
    "p2p_bw": (_number(MIN_FAULT_FRACTION, 1), "GPU-to-GPU bandwidth is this fraction of normal"),
    "nvls_down": (None, "NVLink SHARP (NVSwitch multicast) fails on this GPU: NCCL falls back to its ring algorithm"),
    "hang": (None, "a kernel never returns"),
    "power": (_number(1, 2000), "the GPU cannot draw more than this many watts"),
    # From 20 ms: the pulse test's shortest period (checks.stress.pulse.PULSE_PERIODS_S). A fault under it
    # would never brake, and a simulated node that ignores its fault passes in silence.
    "transient_brake": (_number(20, 2000), "power brake is asserted while the load swings with a period up "
                        "to this many ms, 20 or more (the pulse test finds it)"),
    "cold_start": (_number(0, 60), "the first product after each set-up takes this many seconds more (handle "
                   "creation, kernel selection, clocks ramping; the twin's own is its dtype's SETUP_S, COLD_FIRST_PRODUCT_S after idle)"),
    "no_pulse": (None, "the GPU cannot follow the pulse test's swings: while the load swings its products run "
                 "four times slower, so its bursts overrun their periods (the pulse test finds it)"),
    "no_throttle_counters": (None, "the driver does not count clock-event time (its NVML fields answer NotSupported)"),
    "power_limit": (_number(1, 2000), "the enforced power limit is lowered to this many watts (the default stays)"),
    "cotenant": (None, "another process computes on the GPU from the start (nodeqc must not stress it)"),
    "cotenant_late": (None, "another process starts computing on the GPU once it is under load, taking over half its throughput"),
    # Conformance and host health (nodeqc.backends.sim.platform): the sysfs tree and kernel log differ.
    "vbios": (_text, "the GPU reports this VBIOS version"),
    "numa": (_int(0, 7), "the GPU sits on this NUMA node"),
    "acs": (None, "ACS redirects peer-to-peer traffic on the PCIe switch port above the GPU"),
    "aer": (_int(1), "this many correctable PCIe errors (AER) appear on the GPU's link during the run"),
}
NIC_FAULTS: dict[str, tuple[Callable[[str], Any] | None, str]] = {
    "down": (None, "the link is down"),
    "speed": (_int(1), "the link runs at this speed (Mb/s)"),
    "pcie_width": (_int(1, choices=(1, 2, 4, 8, 16)), "the NIC's PCIe link trains to this width"),
    "fw": (_text, "the NIC's RDMA device runs this firmware version"),
    "numa": (_int(0, 7), "the NIC sits on this NUMA node"),
    "optics_temp": (_number(-40, 150), "the NIC's optical module runs at this temperature (C)"),
    "link_ber": (_number(0, 1e-3), "the link's bit error rate after FEC, as mlxlink reads it (symbol and effective BER)"),
}
# The host as a whole: `--inject host:edac_ce=5` (host0 is the same).
HOST_FAULTS: dict[str, tuple[Callable[[str], Any] | None, str]] = {
    "edac_ce": (_int(1), "this many corrected memory errors (EDAC) appear on a DIMM during the run"),
    "edac_ue": (_int(1), "this many uncorrected memory errors (EDAC) appear during the run"),
    "mce": (None, "the kernel logs a machine check during the run"),
    "nvme_reset": (None, "the kernel logs an NVMe controller reset during the run"),
    "iommu": (_choice("off", "identity", "DMA", "DMA-FQ"), "the IOMMU runs in this mode (off: disabled)"),
    "bios": (_text, "the BIOS reports this version"),
    "cpu_wrong": (_int(0, 4095), "this logical CPU computes wrong answers in the host stress"),
    # The BMC's power-supply sensors (nodeqc.backends.sim.platform.SimBmc), read around the power tests.
    "psu_fault": (_int(0, 15), "this PSU reports a failure (and the PSUs their redundancy lost) once the GPUs' load has swung"),
    "psu_undervolt": (None, "the 12 V rail reads below its lower critical threshold once the GPUs' load has swung"),
    "no_bmc": (None, "ipmitool is installed but no BMC answers (as in a VM)"),
    "no_ipmitool": (None, "ipmitool is not installed"),
    "imex_down": (None, "the IMEX daemon (nvidia-imex) is not running"),
    "imex_no_channels": (None, "no IMEX channel device exists"),
    "imex_nodes": (_int(0, 1024), "the IMEX nodes config lists only this many nodes"),
    "imex_not_listed": (None, "the IMEX nodes config lists the domain's other nodes and another address in "
                              "place of this node's"),
    "no_mlxlink": (None, "NVIDIA MFT (mlxlink) is not installed: optical modules are read with ethtool -m"),
}
TARGETS = {"gpu": GPU_FAULTS, "nic": NIC_FAULTS, "host": HOST_FAULTS}

_SYNTAX = re.compile(r"^(?P<target>[a-z]+)(?P<index>[0-9]*):(?P<name>[a-z0-9_]+)(?:=(?P<value>.+))?$")


@dataclass(frozen=True)
class Fault:
    target: str  # "gpu" or "nic"
    index: int
    name: str
    value: Any = None

    @property
    def subject(self) -> str:
        """gpu3, nic0; the host is one ("host", as --inject's help writes it; host0 is taken too)."""
        return self.target if self.target == "host" else f"{self.target}{self.index}"

    def __str__(self) -> str:
        return f"{self.subject}:{self.name}" + ("" if self.value is None else f"={self.value}")


def parse_fault(text: str) -> Fault:
    """Parse one --inject argument; raise UsageError naming what is wrong."""
    where = f"--inject {shown(text)}"
    m = _SYNTAX.fullmatch(text.strip())
    if not m:
        raise UsageError(f"{where}: expected TARGET:FAULT[=VALUE], e.g. gpu3:pcie_width=8 or nic0:down")
    target, name, value = m["target"], m["name"], m["value"]
    if target not in TARGETS:
        raise UsageError(f"{where}: unknown target {target!r} (gpuN, nicN or host)")
    if m["index"] == "" and target != "host":
        raise UsageError(f"{where}: expected TARGET:FAULT[=VALUE], e.g. gpu3:pcie_width=8 or nic0:down")
    if target == "host" and m["index"] not in ("", "0"):  # was "the simulated node has host0-host0"
        raise UsageError(f"{where}: a node has one host: write host:{name}" + ("" if value is None else f"={value}"))
    vocab = TARGETS[target]
    if name not in vocab:
        hint = difflib.get_close_matches(name, list(vocab), n=1)
        extra = f" (did you mean {hint[0]}?)" if hint else ""
        raise UsageError(f"{where}: unknown {target} fault {name!r}{extra}; known: {', '.join(vocab)}")
    parser, _ = vocab[name]
    if parser is None:
        if value is not None:
            raise UsageError(f"{where}: fault {name!r} takes no value")
        return Fault(target, int(m["index"] or 0), name)
    if value is None:
        raise UsageError(f"{where}: fault {name!r} needs a value ({name}=...)")
    try:
        parsed = parser(value)
    except ValueError as e:
        raise UsageError(f"{where}: {e}") from None
    return Fault(target, int(m["index"] or 0), name, parsed)


# Faults the simulated node takes several of, each value its own: a wrong core each
# (platform.SimHostStress), an XID each (node.xids_due), a throttle reason each (physics.sim_clock).
MANY_VALUED = frozenset({"cpu_wrong", "xid", "throttle"})


def check_range(faults: list[Fault], gpus: int, nics: int, cpus: int | None = None) -> None:
    """A fault on a GPU, NIC or CPU the simulated node does not have is a usage error, and so is one
    fault given twice with different values (the compute took the last, the management the first:
    gpu0:slow=0.5 then slow=1 passed, the report listing slow=0.5)."""
    counts = {"gpu": gpus, "nic": nics, "host": 1}
    seen: dict[tuple[str, int, str], Fault] = {}
    for f in faults:
        n = counts[f.target]
        if f.index >= n:
            have = f"{f.target}0-{f.target}{n - 1}" if n else f"no {f.target.upper()}s"
            raise UsageError(f"--inject {f}: the simulated node has {have}")
        if f.name == "cpu_wrong" and cpus is not None and f.value >= cpus:
            raise UsageError(f"--inject {f}: the simulated host has CPUs 0-{cpus - 1}")
        other = seen.setdefault((f.target, f.index, f.name), f)
        if other.value != f.value and f.name not in MANY_VALUED:
            raise UsageError(f"--inject {f}: given before as {other}: one value a fault")


def check_applies(faults: list[Fault], model: SimGpuModel, gpu_count: int, fabric_attached: bool = False,
                  topology: str = "pcie") -> None:
    """A GPU fault the simulated GPU could not have is a usage error, not a fault that silently does
    nothing (a node that then passes would look like a fault the checks missed): NVLink faults on a
    GPU without NVLink, row remapping before Ampere, a link generation above the GPU's, a power cap
    at or above its limit, peer faults on a node without peers."""
    sku = model.sku.name
    for f in faults:
        if f.target != "gpu":
            continue
        why = None
        if f.name == "nvlink_down" and f.value > model.nvlink_links:
            why = (f"the simulated {sku} has no NVLink" if not model.nvlink_links
                   else f"the simulated {sku} has {model.nvlink_links} NVLink links")
        elif f.name in ("row_remap_pending", "row_remap_failed") and not model.has_row_remapping:
            why = f"the simulated {sku} retires pages instead of remapping rows (GPUs before Ampere)"
        elif f.name == "pcie_gen" and f.value > model.pcie_gen:
            why = f"the simulated {sku} links at PCIe Gen{model.pcie_gen} at most"
        elif f.name in ("power", "power_limit") and f.value >= model.tdp_w:
            why = f"the simulated {sku}'s power limit is {model.tdp_w:g} W: give fewer watts"
        elif f.name == "nvls_down" and not (topology == "nvswitch" and float(model.compute_capability) >= 9.0):
            why = f"NVLink SHARP needs Hopper or newer GPUs on NVSwitch; the simulated {sku} node has none"
        elif f.name.startswith("fabric_") and not fabric_attached:
            why = "the scenario's GPUs are on no NVLink fabric (give [gpus] fabric_cluster, as gb200-nvl72-tray does)"
        elif f.name in ("p2p_bw", "p2p_corrupt", "nccl_corrupt") and gpu_count < 2:
            why = "needs two or more GPUs (the simulated node has one)"
        if why:
            raise UsageError(f"--inject {f}: {why}")


def check_imex_faults(faults: list[Fault], imex_nodes: int | None) -> None:
    """IMEX faults need a host that runs IMEX, and a shorter list than the one it has."""
    for f in faults:
        if f.target != "host" or not f.name.startswith("imex"):
            continue
        if imex_nodes is None:
            raise UsageError(f"--inject {f}: the scenario's host runs no IMEX (give [host] imex_nodes, as "
                             "gb200-nvl72-tray does)")
        if f.name == "imex_nodes" and f.value >= imex_nodes:
            raise UsageError(f"--inject {f}: the scenario's IMEX nodes config lists {imex_nodes}: give fewer")
