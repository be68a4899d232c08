"""Stable failure codes and what a technician should do about each.

A code never changes meaning once released: scripts and dashboards key on it. The text is the
first thing to try; the evidence in the result says why.
"""

from __future__ import annotations

REMEDIATION: dict[str, str] = {
    # Inventory
    "NVML_UNAVAILABLE": "Install or load the NVIDIA driver so that `nvidia-smi` lists the GPUs, then re-run.",
    "GPU_COUNT": "Check that every GPU is seated and powered; compare `lspci -d 10de:` with `nvidia-smi -L` and read dmesg for RmInitAdapter errors.",
    "GPU_MISSING": "This GPU is on the PCI bus but the driver did not bring it up: read dmesg for RmInitAdapter/XID, reseat it and check its power cables; RMA if it stays missing.",
    "GPU_MODEL": "The GPU model does not match the profile: check the build order, or run with the right --profile.",
    "GPU_MEMORY_SIZE": "The GPU reports less memory than its model has: check for a wrong SKU or disabled memory; RMA if confirmed.",
    "GPU_MIXED": "GPUs of one node must match: flash all GPUs to the same VBIOS and replace the odd part.",
    "DRIVER_VERSION": "Install the NVIDIA driver version the profile requires (or newer).",
    "CUDA_VERSION": "The driver supports too old a CUDA version: install a newer NVIDIA driver.",
    "ECC_DISABLED": "Enable ECC (`nvidia-smi -e 1`, then reboot): a datacenter GPU must run with ECC.",
    "ECC_PENDING_CHANGE": "An ECC mode change is pending: reboot the node so it takes effect, then re-run.",
    "PERSISTENCE_OFF": "Enable persistence mode (start nvidia-persistenced) so the driver stays loaded between jobs.",
    "HOST_CPU": "The node has fewer CPU cores than the profile requires: check the CPU SKU and that SMT/cores are enabled in the BIOS.",
    "HOST_MEMORY": "The node has less memory than the profile requires: reseat DIMMs and check the BIOS memory report for failed channels.",
    "FABRIC_MANAGER": "The NVIDIA fabric manager is not running, so GPUs on NVSwitch cannot reach each other: install nvidia-fabricmanager of the same version as the driver and start it (`systemctl enable --now nvidia-fabricmanager`); read `journalctl -u nvidia-fabricmanager` if it exits.",
    "PEERMEM_MISSING": "The GPUDirect RDMA module is not loaded, so NICs cannot read GPU memory directly: `modprobe nvidia-peermem` (it ships with the NVIDIA driver; older stacks use nv_peer_mem), and list it in /etc/modules-load.d so it loads at boot.",
    # NICs
    "NIC_COUNT": "The node has a different number of NICs than the profile expects: check that every NIC is seated and shows in `lspci`, that its driver loaded (dmesg), and the profile's [nic] match/drivers.",
    "NIC_LOST": "The NIC disappeared while nodeqc ran: read dmesg for driver or PCIe errors, reseat the NIC; RMA if it happens again.",
    "NIC_LINK_DOWN": "The link is down: check the cable and transceiver, the switch port (enabled, right speed), and `ip link` / `ibstat`; for InfiniBand, that a subnet manager runs on the fabric.",
    "NIC_SPEED": "The link runs below the speed the profile requires: check the cable and transceiver rating, the switch port's speed setting, and autonegotiation (`ethtool IFACE`).",
    "NIC_MTU": "The MTU is below what the profile requires: set it (`ip link set IFACE mtu N`, and in the network configuration so it persists), matching the switch.",
    "IB_PORT_DOWN": "An InfiniBand/RoCE port is not ACTIVE/LinkUp: check the cable, the switch port and the subnet manager (`ibstat`, `iblinkinfo`).",
    "IB_RATE": "The InfiniBand/RoCE port trained below the rate the profile requires: reseat or replace the cable/transceiver, check the switch port; `ibstat` shows the rate.",
    "NIC_PCIE_WIDTH": "The NIC's PCIe link trained narrower than it should: reseat the NIC or riser, check the slot (`lspci -vv` LnkSta vs LnkCap); RMA the riser or NIC if it persists.",
    "NIC_PCIE_GEN": "The NIC's PCIe link runs at a lower generation than it should: reseat it, check the BIOS PCIe speed setting and that the slot supports the NIC's generation.",
    "NIC_LINK_FLAP": "The link went down and up while nodeqc ran (carrier changes grew): replace the cable or transceiver, check the switch port's error log.",
    "IB_LINK_ERRORS": "InfiniBand port error counters grew while nodeqc ran (symbol errors, link downs, link recoveries): a marginal cable, transceiver or port; replace the cable first, then check the switch side.",
    "NIC_THROUGHPUT": "TCP throughput fell short of the profile's fraction of the link speed: check the PCIe link, the cable and switch port, the MTU on both ends, and CPU load; iperf3 before 3.16 runs all streams on one core and cannot fill links above about 40 Gb/s.",
    "RDMA_BANDWIDTH": "RDMA bandwidth fell short of the profile's fraction of the port rate: check the PCIe link and NUMA placement, the cable and switch port; with GPUDirect, that nvidia_peermem is loaded and the GPU shares a PCIe switch with the NIC.",
    "NIC_TRAFFIC": "The traffic tool could not measure this NIC: check that the peer runs the server on the port given (`iperf3 -s -p PORT`, `ib_write_bw -d DEVICE -p PORT`) and is reachable through this NIC (`ping -I IFACE PEER`), then the cable and switch port.",
    "NIC_NO_PEER": "No traffic peer was given, so throughput was not measured: pass --nic-peer HOST (or NIC=HOST), with `iperf3 -s` (and `ib_write_bw -d DEVICE` for RDMA) running on the peer.",
    "NIC_NO_ADDRESS": "The NIC has no IP address, so TCP traffic could not be sent through it: give it an address on the peer's network.",
    "IPERF3_MISSING": "Install iperf3 on this node and the peer (apt-get install iperf3, or dnf install iperf3).",
    "PERFTEST_MISSING": "Install perftest on this node and the peer (apt-get install perftest, or dnf install perftest) for ib_write_bw.",
    # Health during the run
    "TEMP_HIGH": "The GPU ran too hot: check fans, airflow, blanking panels, heatsink contact and the inlet temperature, then re-run.",
    "TEMP_SLOWDOWN": "The GPU reached its own slowdown temperature: cooling is inadequate (fans, airflow, heatsink); fix it before use.",
    "MEM_TEMP_HIGH": "GPU memory (HBM) ran too hot: check airflow and heatsink contact over the memory stacks.",
    "THROTTLE_THERMAL": "Clocks were cut for temperature: check cooling (fans, airflow, heatsink, inlet temperature).",
    "THROTTLE_HW_SLOWDOWN": "Hardware slowdown was asserted: check the GPU's power cables and the PSUs; a failing PSU or an over-current event triggers it.",
    "THROTTLE_POWER_BRAKE": "The chassis asserted power brake: check the PSUs and the node's power budget (BMC event log).",
    "PCIE_WIDTH": "The PCIe link trained narrower than its maximum under load: reseat the GPU or riser, check the slot and cable; RMA the riser if it persists.",
    "PCIE_GEN": "The PCIe link trained at a lower generation than its maximum under load: reseat the GPU or riser, check the BIOS PCIe speed setting and retimers.",
    "PCIE_REPLAY": "The PCIe link replayed packets (signal errors): reseat the GPU or riser and check the slot; a rising count means a marginal link.",
    "NO_LOAD": "The GPU was never seen under load, so its PCIe link could not be judged: make sure the stress checks run (CuPy installed).",
    "ECC_DBE": "Uncorrectable (double-bit) memory errors: reset the GPU and re-run; if they recur, RMA the GPU.",
    "ECC_SBE": "Correctable memory errors grew during the run: watch this GPU; re-run, and RMA if the count keeps rising.",
    "SRAM_ECC_UNCORRECTABLE": "Uncorrectable ECC errors in the GPU's on-chip memory (caches, register files), which has no spare rows: RMA the GPU (Azure's health checks fail any).",
    "SRAM_ECC_CORRECTED": "Corrected ECC errors in the GPU's on-chip memory are many or growing: re-run to see whether they keep growing; RMA the GPU if they pass the profile's limit again.",
    "POWER_TARGET_LOW": "Held at full load, the GPU did not reach its share of the power limit: check the enforced limit (`nvidia-smi -q -d POWER`; someone may have lowered it), the GPU's power cables and the PSUs; if power and clocks are normal, the GPU draws too little for its work (compare with a sibling), RMA.",
    "POWER_PULSE_THROTTLE": "Clocks were cut (HW slowdown or power brake) while the load swung between full and idle: the node's power delivery cannot follow fast transients. Check the PSUs (all present, input power, redundancy), the GPU power cables and the BMC event log; the faster the failing period, the more likely a PSU or a power cable.",
    "ROW_REMAP_PENDING": "Row remaps are pending: reset the GPU (or reboot) so they are applied, then re-run.",
    "ROW_REMAP_FAILED": "Row remapping failed: the GPU is out of spare rows or faulty; RMA it.",
    "ROW_REMAP_COUNT": "Many rows were remapped for uncorrectable errors: the memory is degrading; RMA the GPU.",
    "RETIRED_PAGES": "Memory pages were retired: if the count is high or pending, reboot and re-run; RMA near the limit.",
    "RETIRED_PAGES_PENDING": "Page retirement is pending: reboot the node so it takes effect, then re-run.",
    "XID": "The driver reported an XID error: see the XID code's meaning in the evidence; read dmesg around the time given.",
    "GPU_LOST": "The GPU fell off the bus: reseat it, check its power cables and the riser; RMA if it happens again.",
    # Stress workers
    "WORKER_HANG": "The stress work on this GPU stopped making progress and was killed: the GPU or its driver hung; reset the GPU, re-run, RMA if repeated.",
    "WORKER_CRASH": "The stress work on this GPU crashed: see the evidence (exit status, last output); reset the GPU and re-run.",
    "WORKER_ERROR": "The stress work on this GPU raised an error: see the evidence.",
    "CUDA_UNAVAILABLE": "GPU stress needs CuPy: install nodeqc with the CUDA extra, e.g. `pip install 'nodeqc[cuda12]'`.",
    "SKIPPED_EARLIER_FAILURE": "Skipped because this GPU already failed in an earlier stress check; fix that first.",
    "NO_GPUS": "No GPUs were found, so GPU checks could not run.",
    "INTERNAL_ERROR": "nodeqc hit an internal error in this check: report it with the journal file.",
}

# What the driver's XID codes mean, for the evidence of the XID check. Those marked fatal are the ones
# cloud node agents take a node out of service for (see shared/REFERENCE.md).
XID_MEANING: dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup after an earlier error",
    46: "GPU stopped processing (fatal)",
    48: "double-bit ECC error",
    54: "auxiliary power is not connected",
    61: "internal micro-controller breakpoint/warning",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recorded",
    64: "ECC page retirement or row remapper failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    109: "context switch timeout",
    110: "security fault",
    119: "GSP RPC timeout",
    120: "GSP error",
    136: "link training failed",
    140: "unrecovered ECC error",
    142: "page retirement failure",
    143: "GPU initialisation failure",
    151: "key rotation error",
    155: "NVLink link down",
    156: "resource retirement event",
    158: "GPU fatal timeout",
}
FATAL_XIDS = frozenset({46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142,
                        143, 151, 155, 156, 158})


# Why a check did not run, in a few words, for the one-line count of checks not run
# ("25 not run: 17 no NIC peer given (pass --nic-peer), ..."); the remediation above says the rest.
NOT_RUN: dict[str, str] = {
    "NIC_NO_PEER": "no NIC peer given (pass --nic-peer)",
    "NIC_NO_ADDRESS": "NIC without an IP address",
    "IPERF3_MISSING": "iperf3 not installed",
    "PERFTEST_MISSING": "perftest (ib_write_bw) not installed",
    "SKIPPED_EARLIER_FAILURE": "the GPU failed an earlier stress check",
    "NO_GPUS": "no working GPUs",
    "CUDA_UNAVAILABLE": "CuPy not installed",
    "NO_LOAD": "the GPU was never under load",
}


# When the same code comes back on the same part after a repair, the first remedy did not hold:
# the next step of the ladder (reseat -> replace the cable/riser -> RMA). The codes of a link
# (PCIe, NIC cable) have a middle step; for the others a repeat after a repair is already a
# replacement. {part} is the part's identity.
ESCALATION: dict[str, tuple[str, str]] = {
    "PCIE_WIDTH": ("Failed again after a repair: do not just reseat; replace the riser or cable of {part}, then re-test.",
                   "Failed after repeated repairs: RMA {part} (and the riser if it was not replaced)."),
    "PCIE_GEN": ("Failed again after a repair: replace the riser or cable of {part} (retimer), then re-test.",
                 "Failed after repeated repairs: RMA {part}."),
    "PCIE_REPLAY": ("Failed again after a repair: replace the riser or cable of {part}, then re-test.",
                    "Failed after repeated repairs: RMA {part}."),
    "NIC_PCIE_WIDTH": ("Failed again after a repair: replace the riser of {part}, then re-test.",
                       "Failed after repeated repairs: RMA {part}."),
    "NIC_LINK_DOWN": ("Failed again after a repair: replace the cable or transceiver of {part}, then re-test.",
                      "Failed after repeated repairs: RMA {part} (the switch port too, if a known-good cable fails)."),
    "NIC_LINK_FLAP": ("Failed again after a repair: replace the cable or transceiver of {part}, then re-test.",
                      "Failed after repeated repairs: RMA {part}."),
    "IB_LINK_ERRORS": ("Failed again after a repair: replace the cable or transceiver of {part}, then re-test.",
                       "Failed after repeated repairs: RMA {part}."),
}
ESCALATION_DEFAULT = ("Failed again after a repair: the first remedy did not hold; replace {part} (RMA).",
                      "Failed after repeated repairs: RMA {part}.")


def escalation(code: str, step: int, part: object) -> str:
    """What to do when this code came back on this part after `step` repairs (1, 2 or more)."""
    ladder = ESCALATION.get(code, ESCALATION_DEFAULT)
    return ladder[min(step, len(ladder)) - 1].format(part=getattr(part, "identity", part))


def not_run_reason(code: str | None) -> str | None:
    return NOT_RUN.get(code) if code else None


def remediation(code: str) -> str:
    return REMEDIATION.get(code, "See the check's evidence.")


def xid_meaning(code: int) -> str:
    return XID_MEANING.get(code, "see NVIDIA's XID catalogue")
