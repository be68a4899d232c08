"""The one list of nodeqc's checks: every check a run can report, family by family in the order a
run reaches them, with the failure codes each family may give. Everything that names checks or
codes is derived from here or held to it by a test:
- `--only/--skip` and the report's list of checks run (nodeqc.spec.selection: CHECKS, CHECK_NAMES);
- the stress plan's order (nodeqc.checks.stress.plan: one step per stress check but gpu_free, in
  this order);
- the code registry (nodeqc.core.codes: what to do for every code declared here, and no other;
  tests/test_codes.py also holds that each family's modules emit only its codes, and that every
  result of the simulated runs carries a code its family declares).
A new check is one line here; its codes another.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    covers: str  # what the family judges, in a line
    checks: tuple[str, ...]  # its checks, each reported as FAMILY.CHECK, in the order they run
    codes: tuple[str, ...]  # the failure codes its checks may give

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"{self.name}.{c}" for c in self.checks)


FAMILIES: tuple[Family, ...] = (
    Family("inventory", "What the node is, against what the profile says it must be",
           checks=("nvml", "gpu_count", "gpu_present", "driver", "cuda", "homogeneity", "gpu_model", "gpu_memory", "ecc_mode", "persistence", "nvlink_fabric"),
           codes=("CUDA_VERSION", "DRIVER_VERSION", "ECC_DISABLED", "ECC_PENDING_CHANGE", "FABRIC_CLIQUE_MISMATCH",
                  "FABRIC_DEGRADED", "FABRIC_HEALTH_UNREAD", "FABRIC_NOT_REGISTERED", "GPU_COUNT", "GPU_LOST",
                  "GPU_MEMORY_SIZE", "GPU_MISSING", "GPU_MIXED", "GPU_MODEL", "NVML_UNAVAILABLE", "PERSISTENCE_OFF",
                  "POWER_LIMIT_LOWERED")),
    Family("stress", "The GPUs' work in worker processes, each step proving its load (nodeqc.checks.stress)",
           checks=("gpu_free", "burn", "power", "power_pulse", "hbm_bandwidth", "memtest", "pcie_bandwidth", "p2p", "nccl", "nccl_net"),
           codes=("BMC_UNAVAILABLE", "BURN_LOAD_NOT_REACHED", "BURN_NO_DTYPE", "BURN_OUTLIER", "BURN_POWER_LOW", "BURN_SLOW",
                  "CLOCKS_LOW", "CUDA_UNAVAILABLE", "GPU_IN_USE", "GPU_LOST", "HBM_CORRUPT", "HBM_LOAD_NOT_REACHED",
                  "HBM_OUTLIER", "HBM_SLOW", "MEMTEST_ERRORS", "MEMTEST_LOAD_NOT_REACHED", "NCCL_NET_SLOW",
                  "NCCL_NOT_MEASURED", "NCCL_NVLS_SLOW", "NCCL_SLOW", "NCCL_UNAVAILABLE", "NCCL_WRONG_RESULT", "NO_GPUS", "ONE_GPU_NA", "P2P_CORRUPT",
                  "P2P_LATENCY", "P2P_NO_PEER_ACCESS", "P2P_OUTLIER", "P2P_PAIR_SLOW", "P2P_SLOW", "PCIE_BW_LOW",
                  "PCIE_BW_OUTLIER", "PCIE_COPY_CORRUPT", "PCIE_GEN", "PCIE_LOAD_NOT_REACHED", "PCIE_WIDTH",
                  "POWER_LIMIT_LOWERED", "POWER_LIMIT_UNREADABLE", "POWER_LOAD_NOT_REACHED", "POWER_NOT_READ", "POWER_PULSE_THROTTLE",
                  "POWER_TARGET_LOW", "PSU_FAILURE", "PSU_INPUT_LOST", "PSU_REDUNDANCY_LOST", "PSU_SENSOR_CRITICAL",
                  "PSU_SENSOR_WARNING", "PULSE_LOAD_NOT_REACHED", "PULSE_NOT_FOLLOWED", "PULSE_NOT_OBSERVED", "SDC_CROSS_GPU",
                  "SDC_KNOWN_ANSWER", "SDC_REPEAT", "SKIPPED_EARLIER_FAILURE", "THROTTLE_HW_SLOWDOWN",
                  "THROTTLE_POWER_BRAKE", "THROTTLE_THERMAL", "WORKER_CRASH", "WORKER_ERROR", "WORKER_HANG")),
    Family("health", "What NVML telemetry saw of each GPU under the stress load",
           checks=("gpu_lost", "temperature", "throttle", "pcie_link", "pcie_replay", "ecc", "sram_ecc", "row_remap", "retired_pages", "xid", "nvlink"),
           codes=("ECC_DBE", "ECC_SBE", "GPU_LOST", "MEM_TEMP_HIGH", "NO_LOAD", "NOT_READ", "NVLINK_DOWN", "NVLINK_ERRORS",
                  "NVLINK_NA", "PAGE_RETIREMENT_NA", "PCIE_GEN", "PCIE_REPLAY", "PCIE_WIDTH", "RETIRED_PAGES",
                  "RETIRED_PAGES_PENDING", "ROW_REMAP_COUNT", "ROW_REMAP_FAILED", "ROW_REMAP_NA", "ROW_REMAP_PENDING",
                  "SRAM_ECC_CORRECTED", "SRAM_ECC_UNCORRECTABLE", "TEMP_HIGH", "TEMP_SLOWDOWN",
                  "THROTTLE_HW_SLOWDOWN", "THROTTLE_POWER_BRAKE", "THROTTLE_THERMAL", "XID_APP_FAULT",
                  "XID_CHECK_POWER", "XID_CONTACT_SUPPORT", "XID_NOT_WATCHED", "XID_REBOOT", "XID_REPEATED", "XID_RESET_GPU",
                  "XID_UNKNOWN", "XID_WARNING")),
    Family("host", "The host: its make-up, its error counters and kernel log over the run, and (full runs) its own stress",
           checks=("cpu", "memory", "fabric_manager", "gpudirect_rdma", "imex", "edac", "aer", "kernel_log", "cpu_stress", "memory_bandwidth", "nvme", "optics"),
           codes=("AER_CORRECTABLE", "AER_MISSING", "AER_UNCORRECTABLE", "EDAC_CE", "EDAC_MISSING", "EDAC_UE", "EDAC_UNREADABLE",
                  "ETHTOOL_MISSING", "FABRIC_MANAGER", "FIGURE_IMPOSSIBLE", "FIO_MISSING", "HOST_CPU",
                  "HOST_CPU_STRESS_DIED", "HOST_CPU_WRONG", "HOST_MEMORY", "HOST_MEM_BANDWIDTH", "HOST_NOT_HERE", "HOST_UNREADABLE",
                  "IMEX_NODES_MISSING", "IMEX_NOT_RUNNING", "IMEX_NO_CHANNELS", "IMEX_SELF_MISSING",
                  "KERNEL_AER", "KERNEL_HW_ERROR", "KERNEL_LOG_LOST", "KERNEL_LOG_UNREADABLE", "KERNEL_MCE",
                  "KERNEL_NVME_RESET", "KERNEL_SXID", "KERNEL_XID", "LINK_BER_HIGH", "MODULE_UNREADABLE", "NO_GPUS",
                  "NVME_FIO", "NVME_SCRATCH_EXISTS", "NVME_SLOW", "OPTICS_ALARM", "OPTICS_UNREADABLE", "OPTICS_WARNING", "PEERMEM_MISSING",
                  "TOOL_OUTPUT_UNREADABLE")),
    Family("baseline", "The node against its golden baseline (nodeqc baseline; --baseline)",
           checks=("firmware", "software", "settings", "topology"),
           codes=("BASELINE_ACS", "BASELINE_BIOS", "BASELINE_BOARD", "BASELINE_CLOCKS", "BASELINE_CUDA",
                  "BASELINE_DEVICE_EXTRA", "BASELINE_DEVICE_MISSING", "BASELINE_DRIVER", "BASELINE_GPU_MODE",
                  "BASELINE_GPU_MODEL", "BASELINE_GSP_FIRMWARE", "BASELINE_HCA_FIRMWARE", "BASELINE_INFOROM",
                  "BASELINE_IOMMU", "BASELINE_KERNEL", "BASELINE_NIC_DRIVER", "BASELINE_NOTHING_COMPARED",
                  "BASELINE_NOT_HERE", "BASELINE_NOT_READ", "BASELINE_NUMA", "BASELINE_PCIE_SLOT",
                  "BASELINE_PCIE_SWITCH", "BASELINE_POWER_LIMIT",
                  "BASELINE_UNREADABLE", "BASELINE_VBIOS")),
    Family("dcgm", "NVIDIA's DCGM diagnostic (dcgmi diag -r LEVEL), where DCGM is installed: each test per GPU",
           checks=("run", "deployment", "integration", "hardware", "stress"),
           codes=("DCGM_FAIL", "DCGM_HANG", "DCGM_MEMORY", "DCGM_MISSING", "DCGM_NOT_HERE", "DCGM_NVLINK", "DCGM_OFF",
                  "DCGM_PCIE", "DCGM_PERFORMANCE", "DCGM_POWER", "DCGM_RUNTIME_ERROR", "DCGM_SOFTWARE",
                  "DCGM_TEST_SKIPPED", "DCGM_THERMAL", "DCGM_WARN", "DCGM_XID", "TOOL_OUTPUT_UNREADABLE")),
    Family("fleet", "This run's figures against the fleet's in the archive",
           checks=("outlier",),
           codes=("FLEET_OUTLIER",)),
    Family("nic", "The NICs: links, PCIe, stability, and traffic to a peer",
           checks=("inventory", "link", "pcie", "stability", "tcp", "rdma"),
           codes=("FIGURE_IMPOSSIBLE", "HOST_NOT_HERE", "IB_LINK_ERRORS", "IB_PORT_DOWN", "IB_RATE", "IPERF3_MISSING",
                  "NIC_COUNT", "NIC_LINK_DOWN", "NIC_LINK_FLAP", "NIC_LOST", "NIC_MTU", "NIC_NO_ADDRESS",
                  "NIC_NO_PEER", "NIC_PCIE_GEN", "NIC_PCIE_WIDTH", "NIC_SPEED", "NIC_THROUGHPUT", "NIC_TRAFFIC",
                  "NO_GPUS", "PERFTEST_MISSING", "RDMA_BANDWIDTH", "TOOL_OUTPUT_UNREADABLE")),
    Family("burnin", "Hours of work on every GPU, window after window (--burn-in)",
           checks=("stability",),
           codes=("BURN_IN_DRIFT", "BURN_IN_SHORT", "CUDA_UNAVAILABLE", "GPU_LOST", "SDC_BURN_IN", "WORKER_CRASH", "WORKER_ERROR",
                  "WORKER_HANG")),
)

# Reported whatever was selected, by the run itself: an error inside nodeqc, and a run in which no
# check reached a verdict.
RUN = Family("nodeqc", "The run itself", checks=("internal", "nothing_judged"),
             codes=("INTERNAL_ERROR", "NOTHING_JUDGED"))
# Codes any check of a node run may carry: the run was aborted before it, the GPU is not the
# profile's model (its floors would judge another model: nodeqc.checks.inventory.not_judged_for_model),
# or nodeqc's own code failed in it (a stress worker's exception that is no CUDA error).
ANY_CHECK = ("RUN_ABORTED", "MODEL_NOT_JUDGED", "INTERNAL_ERROR")

# The fabric report's checks (nodeqc fabric: many nodes by pair tests), not a node run's.
FABRIC = Family("fabric", "Many nodes qualified together by pair tests (nodeqc fabric)",
                checks=("rail", "link", "pair", "node", "coverage", "uplink", "leaf", "tail", "group"),
                codes=("CUDA_UNAVAILABLE", "FABRIC_GROUP_NODE", "FABRIC_GROUP_NOT_JUDGED", "FABRIC_GROUP_NVLINK",
                       "FABRIC_GROUP_TOGETHER",
                       "FABRIC_GROUP_WIDE", "FABRIC_INCONCLUSIVE", "FABRIC_LEAF", "FABRIC_LINE_REFUSED", "FABRIC_LINK", "FABRIC_NODE",
                       "FABRIC_NODE_LATENCY", "FABRIC_NODE_RAIL", "FABRIC_NOT_MEASURED", "FABRIC_PAIR_ERROR",
                       "FABRIC_RAIL", "FABRIC_STRAGGLER", "FABRIC_TAIL", "FABRIC_UNTESTED", "FABRIC_UPLINK",
                       "FABRIC_WORKER_LIED", "IPERF3_MISSING", "PERFTEST_MISSING"))


def family_of(check: str) -> Family | None:
    """The family of a check name (FAMILY.CHECK), the run's own or the fabric's; None if unknown."""
    prefix = check.split(".", 1)[0]
    return next((f for f in (*FAMILIES, RUN, FABRIC) if f.name == prefix), None)


def declared_codes() -> frozenset[str]:
    """Every code a check may give: the code registry (nodeqc.core.codes) says what to do for each."""
    return frozenset(ANY_CHECK).union(*(f.codes for f in (*FAMILIES, RUN, FABRIC)))
