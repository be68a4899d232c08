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


def remediation(code: str) -> str:
    return REMEDIATION.get(code, "See the check's evidence.")


def xid_meaning(code: int) -> str:
    return XID_MEANING.get(code, "see NVIDIA's XID catalogue")
