"""GPU models the simulated node can be built from: names as NVML reports them, limits, and healthy
figures. Rates are what a healthy part sustains (below datasheet peaks), so the shipped profiles pass
a clean simulated node and its injected faults push figures past their limits."""

from __future__ import annotations

from dataclasses import dataclass, field

MIB = 1024 * 1024


@dataclass(frozen=True)
class SimGpuModel:
    name: str
    memory_mib: int
    compute_capability: str
    pcie_gen: int
    pcie_width: int
    tdp_w: float
    idle_w: float
    idle_temp_c: float
    load_temp_c: float
    slowdown_c: float
    shutdown_c: float
    gpu_max_c: float
    mem_max_c: float
    idle_sm_mhz: int
    max_sm_mhz: int
    mem_mhz: int
    nvlink_links: int
    vbios: str
    board_part: str
    tflops: dict[str, float] = field(default_factory=dict)
    hbm_gbps: float = 0.0
    h2d_gbps: float = 0.0
    p2p_gbps: float = 0.0

    @property
    def has_row_remapping(self) -> bool:
        """Ampere and newer remap rows; older GPUs retire pages instead (NVML answers NotSupported)."""
        return float(self.compute_capability) >= 8.0


SIM_GPU_MODELS: dict[str, SimGpuModel] = {
    "a100-sxm4-80gb": SimGpuModel(
        "NVIDIA A100-SXM4-80GB", 81920, "8.0", 4, 16, 400, 62, 33, 62, 89, 92, 87, 95, 210, 1410, 1593, 12,
        "92.00.36.00.02", "692-2G506-0210-002",
        {"fp64": 18.6, "fp32": 19.1, "tf32": 138, "fp16": 276, "bf16": 276}, 1790, 25.2, 274),
    "a100-pcie-40gb": SimGpuModel(
        "NVIDIA A100-PCIE-40GB", 40960, "8.0", 4, 16, 250, 35, 31, 66, 88, 92, 85, 95, 210, 1410, 1215, 0,
        "92.00.25.00.08", "900-21001-0000-000",
        {"fp64": 17.2, "fp32": 18.4, "tf32": 108, "fp16": 228, "bf16": 228}, 1380, 24.8, 24),
    "h100-sxm5": SimGpuModel(
        "NVIDIA H100 80GB HBM3", 81559, "9.0", 5, 16, 700, 72, 30, 64, 90, 92, 87, 95, 345, 1980, 2619, 18,
        "96.00.99.00.01", "692-2G520-0200-000",
        {"fp64": 53, "fp32": 52, "tf32": 380, "fp16": 760, "bf16": 760, "fp8": 1510}, 3000, 53.5, 378),
    "h100-pcie": SimGpuModel(
        "NVIDIA H100 PCIe", 81559, "9.0", 5, 16, 350, 48, 32, 70, 90, 92, 87, 95, 345, 1755, 1593, 0,
        "96.00.30.00.01", "900-21010-0000-000",
        {"fp64": 40, "fp32": 40, "tf32": 290, "fp16": 570, "bf16": 570, "fp8": 1180}, 1800, 52.8, 52),
    "h200-sxm": SimGpuModel(
        "NVIDIA H200", 143771, "9.0", 5, 16, 700, 78, 30, 63, 90, 92, 87, 95, 345, 1980, 3201, 18,
        "96.00.A5.00.01", "692-2G520-0280-000",
        {"fp64": 54, "fp32": 53, "tf32": 385, "fp16": 780, "bf16": 780, "fp8": 1530}, 4300, 54.1, 390),
    "v100-sxm2-32gb": SimGpuModel(
        "Tesla V100-SXM2-32GB", 32768, "7.0", 3, 16, 300, 42, 34, 65, 87, 90, 83, 95, 135, 1530, 877, 6,
        "88.00.80.00.01", "900-2G503-0030-000",
        {"fp64": 7.4, "fp32": 14.8, "fp16": 98}, 830, 12.4, 140),
    "t4": SimGpuModel(
        "Tesla T4", 15360, "7.5", 3, 16, 70, 10, 35, 68, 93, 96, 85, 95, 300, 1590, 5001, 0,
        "90.04.96.00.02", "900-2G183-0000-001",
        {"fp32": 4.6, "fp16": 27}, 248, 12.3, 11),
    "l40s": SimGpuModel(
        "NVIDIA L40S", 46068, "8.9", 4, 16, 350, 36, 30, 68, 90, 93, 87, 95, 210, 2520, 9001, 0,
        "95.02.66.00.02", "900-2G133-0080-000",
        {"fp32": 70, "tf32": 150, "fp16": 290, "bf16": 290, "fp8": 580}, 760, 25.1, 23),
}
