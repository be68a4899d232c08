"""GPU models the simulated node can be built from: one per SKU of nodeqc.skus, whose identity and
healthy figures (sustained TFLOP/s, STREAM copy, pinned copies, memory, power limit) they take as
they are, so a clean simulated GPU performs exactly as a healthy part measured, the profiles'
floors derived from the same figures pass it, and an injected `slow=0.88` lands where a real part
12% slow would. What is here is the rest of the simulated physics: temperatures, clocks, NVLink."""

from __future__ import annotations

from dataclasses import dataclass

from nodeqc.skus import BY_KEY, Sku

MIB = 1024 * 1024


@dataclass(frozen=True)
class SimGpuModel:
    sku_key: str
    compute_capability: str
    pcie_width: int
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
    p2p_gbps: float = 0.0

    @property
    def sku(self) -> Sku:
        return BY_KEY[self.sku_key]

    @property
    def name(self) -> str:
        return self.sku.nvml_names[0]

    @property
    def pci_device_id(self) -> int:
        return self.sku.pci_device_ids[0]

    @property
    def memory_mib(self) -> int:
        return int(self.sku.memory_gib * 1024)

    @property
    def tdp_w(self) -> float:
        return self.sku.default_power_w

    @property
    def pcie_gen(self) -> int:
        return self.sku.pcie_gen

    @property
    def tflops(self) -> dict[str, float]:
        return self.sku.healthy_tflops

    @property
    def hbm_gbps(self) -> float:
        return self.sku.healthy_hbm_gbps

    @property
    def h2d_gbps(self) -> float:
        return self.sku.healthy_h2d_gbps

    @property
    def d2h_gbps(self) -> float:
        return self.sku.healthy_d2h_gbps

    @property
    def has_row_remapping(self) -> bool:
        """Ampere and newer remap rows; older GPUs retire pages instead (NVML answers NotSupported)."""
        return float(self.compute_capability) >= 8.0


def _models(*models: SimGpuModel) -> dict[str, SimGpuModel]:
    return {m.sku_key: m for m in models}


# p2p_gbps: one-way GPU-to-GPU copy a healthy pair reaches (p2pBandwidthLatencyTest, REFERENCE.md:
# H100 SXM 376-380, A100 274; V100 SXM2 6 NVLink 2 links about 140; PCIe cards through the host).
SIM_GPU_MODELS: dict[str, SimGpuModel] = _models(
    SimGpuModel("a100-sxm4-40gb", "8.0", 16, 55, 33, 62, 89, 92, 87, 95, 210, 1410, 1215, 12,
                "92.00.19.00.10", "692-2G506-0200-002", 274),
    SimGpuModel("a100-sxm4-80gb", "8.0", 16, 62, 33, 62, 89, 92, 87, 95, 210, 1410, 1593, 12,
                "92.00.36.00.02", "692-2G506-0210-002", 274),
    SimGpuModel("a100-pcie-40gb", "8.0", 16, 35, 31, 66, 88, 92, 85, 95, 210, 1410, 1215, 0,
                "92.00.25.00.08", "900-21001-0000-000", 24),
    SimGpuModel("a100-pcie-80gb", "8.0", 16, 40, 31, 66, 88, 92, 85, 95, 210, 1410, 1512, 0,
                "92.00.90.00.04", "900-21001-0020-100", 24),
    SimGpuModel("h100-sxm5-80gb", "9.0", 16, 72, 30, 64, 90, 92, 87, 95, 345, 1980, 2619, 18,
                "96.00.99.00.01", "692-2G520-0200-000", 378),
    SimGpuModel("h100-pcie-80gb", "9.0", 16, 48, 32, 70, 90, 92, 87, 95, 345, 1755, 1593, 0,
                "96.00.30.00.01", "900-21010-0000-000", 52),
    SimGpuModel("h100-nvl-94gb", "9.0", 16, 60, 32, 68, 90, 92, 87, 95, 345, 1785, 2619, 0,
                "96.00.74.00.01", "900-21010-0020-000", 52),
    SimGpuModel("h200-sxm-141gb", "9.0", 16, 78, 30, 63, 90, 92, 87, 95, 345, 1980, 3201, 18,
                "96.00.A5.00.01", "692-2G520-0280-000", 390),
    SimGpuModel("h200-nvl-141gb", "9.0", 16, 70, 31, 66, 90, 92, 87, 95, 345, 1785, 3201, 0,
                "96.00.AF.00.01", "900-21010-0040-000", 52),
    SimGpuModel("l40s", "8.9", 16, 36, 30, 68, 90, 93, 87, 95, 210, 2520, 9001, 0,
                "95.02.66.00.02", "900-2G133-0080-000", 23),
    SimGpuModel("t4", "7.5", 16, 10, 35, 68, 93, 96, 85, 95, 300, 1590, 5001, 0,
                "90.04.96.00.02", "900-2G183-0000-001", 11),
    SimGpuModel("v100-sxm2-16gb", "7.0", 16, 42, 34, 65, 87, 90, 83, 95, 135, 1530, 877, 6,
                "88.00.4F.00.09", "900-2G503-0000-000", 140),
    SimGpuModel("v100-sxm2-32gb", "7.0", 16, 42, 34, 65, 87, 90, 83, 95, 135, 1530, 877, 6,
                "88.00.80.00.01", "900-2G503-0030-000", 140),
    SimGpuModel("v100-pcie-16gb", "7.0", 16, 30, 33, 66, 87, 90, 83, 95, 135, 1380, 877, 0,
                "88.00.41.00.0A", "900-2G500-0000-000", 11),
    SimGpuModel("v100-pcie-32gb", "7.0", 16, 30, 33, 66, 87, 90, 83, 95, 135, 1380, 877, 0,
                "88.00.80.00.02", "900-2G500-0010-000", 11),
)
# The names scenarios used before the models followed the SKU table.
SIM_GPU_MODELS.update({"h100-sxm5": SIM_GPU_MODELS["h100-sxm5-80gb"], "h100-pcie": SIM_GPU_MODELS["h100-pcie-80gb"],
                       "h200-sxm": SIM_GPU_MODELS["h200-sxm-141gb"]})
