"""GPU models the simulated node can be built from: one per SKU of nodeqc.skus, whose identity and
healthy figures (sustained TFLOP/s, STREAM copy, pinned copies, memory, power limit) they take as
they are, so a clean simulated GPU performs exactly as a healthy part measured, the profiles'
floors derived from the same figures pass it, and an injected `slow=0.88` lands where a real part
12% slow would. What is here is the rest of the simulated physics: temperatures, clocks, NVLink.

Where a SKU was measured whole on a real part, its model carries a twin (`Twin`): the figures that
part delivered in nodeqc's own quick run, per dtype its rate, clock and power at the 700 W limit,
and the copies and memory test, so the simulated GPU reproduces what the real one showed (issue 23),
not what nodeqc's table says a healthy part delivers at the least."""

from __future__ import annotations

from dataclasses import dataclass

from nodeqc.backends.base import PLAIN_LOAD_DTYPE
from nodeqc.skus import BY_KEY, Sku

MIB = 1024 * 1024
PLAIN = "plain"  # the plain load (SimDevice.busy_step): the Twin's loaded clock and power under it


@dataclass(frozen=True)
class Twin:
    """What one real part delivered, figure by figure, for the simulated GPU to reproduce.

    tflops: the quick burn's sustained rate per dtype; sm_mhz and power_w: the median SM clock and
    power over each dtype's steady telemetry samples in that burn (the burn runs fp64, fp32, tf32,
    fp16, bf16, fp8 in turn), and under the plain load (PLAIN: stress.power's busy steps);
    copy/triad: the STREAM kernels; memtest: the memory test's rate once its kernels are compiled."""

    tflops: dict[str, float]
    sm_mhz: dict[str, float]
    power_w: dict[str, float]
    copy_gbps: float
    triad_gbps: float
    h2d_gbps: float
    d2h_gbps: float
    bidir_gbps: float
    memtest_gbps: float
    source: str


M26 = "shared/measurements/2026-11-26"
# H100 SXM5 80GB (PCI 0x2330), 700 W, driver 580.159.04: the quick run h100-reports/
# vm-20261126T153634Z (predicate: burn, copies, pinned copies; telemetry: the medians per phase:
# fp64 5.0-8.6 s, fp32 9.8-13.6, tf32 14.3-18.8, fp16 20.3-23.6, bf16 25.3-28.6, fp8 31.3-33.9,
# stress.power 36-45 s); the memory test's second call in one process, 2850.1 GB/s
# (h100-memtest-and-copies.jsonl: the quick check's 1217.7 includes the kernels' compilation).
H100_SXM5_TWIN = Twin(
    tflops={"fp64": 60.41, "fp32": 51.62, "tf32": 359.79, "fp16": 727.74, "bf16": 741.96, "fp8": 1237.11},
    sm_mhz={"fp64": 1860, "fp32": 1980, "tf32": 1410, "fp16": 1598, "bf16": 1605, "fp8": 1290, PLAIN: 1320},
    power_w={"fp64": 699.6, "fp32": 670.9, "tf32": 697.3, "fp16": 698.7, "bf16": 694.2, "fp8": 680.4, PLAIN: 697.0},
    copy_gbps=2850.7, triad_gbps=2915.2, h2d_gbps=55.1, d2h_gbps=55.1, bidir_gbps=94.0, memtest_gbps=2850.1,
    source=f"{M26}/h100-reports/vm-20261126T153634Z (quick run), h100-memtest-and-copies.jsonl (memtest)")
# H200 SXM 141GB (PCI 0x2335), the same: h200-reports/vm-20261126T154124Z (phases: fp64 5.3-9.1 s,
# fp32 10.3-14.1, tf32 14.5-19.1, fp16 20.5-24.0, bf16 25.8-28.9, fp8 32.3-34.6, stress.power
# 37-46 s). No warm memory test on this H200 on 2026-11-26 (its quick check's 1504.9 GB/s includes
# the compilation): the benchmark's 3733 GB/s on the H200 of 2026-11-23 (shared/measurements/README.md).
H200_SXM_TWIN = Twin(
    tflops={"fp64": 60.89, "fp32": 51.05, "tf32": 354.08, "fp16": 746.01, "bf16": 771.07, "fp8": 1231.59},
    sm_mhz={"fp64": 1860, "fp32": 1980, "tf32": 1530, "fp16": 1883, "bf16": 1785, "fp8": 1373, PLAIN: 1410},
    power_w={"fp64": 694.2, "fp32": 659.5, "tf32": 690.0, "fp16": 621.7, "bf16": 657.0, "fp8": 664.4, PLAIN: 691.3},
    copy_gbps=3978.5, triad_gbps=4192.6, h2d_gbps=54.9, d2h_gbps=55.3, bidir_gbps=92.9, memtest_gbps=3733.0,
    source=f"{M26}/h200-reports/vm-20261126T154124Z (quick run), shared/measurements/README.md (memtest)")
# Power above the limit that NVML's instantaneous reading (NVML_FI_DEV_POWER_INSTANT) shows while
# the load swings, as a share of the limit: 881, 861 and 951 W against 700 W on the H100 SXM5 under
# pulsed bf16 (shared/measurements/README.md, 2026-11-23), up to 795 W on the H200
# (2026-11-26/README.md, h200-pulse-warmed.jsonl): 1.14-1.36; the middle of it.
INSTANT_OVERSHOOT = 1.25


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
    twin: Twin | None = None

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
        return self.twin.tflops if self.twin else self.sku.healthy_tflops

    @property
    def hbm_gbps(self) -> float:
        return self.twin.copy_gbps if self.twin else self.sku.healthy_hbm_gbps

    @property
    def h2d_gbps(self) -> float:
        return self.twin.h2d_gbps if self.twin else self.sku.healthy_h2d_gbps

    @property
    def d2h_gbps(self) -> float:
        return self.twin.d2h_gbps if self.twin else self.sku.healthy_d2h_gbps

    @property
    def triad_share(self) -> float:
        """STREAM triad's rate over copy's (1 where the part was not measured)."""
        return self.twin.triad_gbps / self.twin.copy_gbps if self.twin else 1.0

    @property
    def bidir_share(self) -> float:
        """Each direction's rate in a bidirectional pinned copy, over H2D's alone."""
        return self.twin.bidir_gbps / (2 * self.twin.h2d_gbps) if self.twin else 0.9

    @property
    def memtest_share(self) -> float:
        """The memory test's rate over the STREAM copy's."""
        return self.twin.memtest_gbps / self.twin.copy_gbps if self.twin else 0.8

    def loaded_clock(self, dtype: str | None) -> float:
        """The SM clock under full load of `dtype` (PLAIN: the plain load) at the power limit; 0 for
        no load. Without a twin: the SKU's loaded clock of the dtype (the plain load is fp16)."""
        if not dtype:
            return 0.0
        if self.twin and dtype in self.twin.sm_mhz:
            return self.twin.sm_mhz[dtype]
        return self.sku.loaded_clock([PLAIN_LOAD_DTYPE if dtype == PLAIN else dtype])

    def loaded_power_w(self, dtype: str | None) -> float:
        """The power a healthy part draws under full load of `dtype`; 0: not measured (the node's
        general share of the limit applies)."""
        return self.twin.power_w.get(dtype, 0.0) if self.twin and dtype else 0.0

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
                "96.00.99.00.01", "692-2G520-0200-000", 378, H100_SXM5_TWIN),
    SimGpuModel("h100-pcie-80gb", "9.0", 16, 48, 32, 70, 90, 92, 87, 95, 345, 1755, 1593, 0,
                "96.00.30.00.01", "900-21010-0000-000", 52),
    SimGpuModel("h100-nvl-94gb", "9.0", 16, 60, 32, 68, 90, 92, 87, 95, 345, 1785, 2619, 0,
                "96.00.74.00.01", "900-21010-0020-000", 52),
    SimGpuModel("h200-sxm-141gb", "9.0", 16, 78, 30, 63, 90, 92, 87, 95, 345, 1980, 3201, 18,
                "96.00.A5.00.01", "692-2G520-0280-000", 390, H200_SXM_TWIN),
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
