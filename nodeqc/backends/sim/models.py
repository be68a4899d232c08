"""GPU models the simulated node can be built from: one per SKU of nodeqc.core.skus, whose identity and
healthy figures (sustained TFLOP/s, STREAM copy, pinned copies, memory, power limit) they take as
they are, so a clean simulated GPU performs exactly as a healthy part measured, the profiles'
floors derived from the same figures pass it, and an injected `slow=0.88` lands where a real part
12% slow would. What is here is the rest of the simulated physics: temperatures, clocks, NVLink.

Where a SKU was measured whole on a real part, its model carries a twin (`Twin`): the figures that
part delivered in nodeqc's own quick run, per dtype its rate, clock and power at the 700 W limit,
and the copies and memory test, so the simulated GPU reproduces what the real one showed (issue 23),
not what nodeqc's table says a healthy part delivers at the least."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodeqc.backends.base import PLAIN_LOAD_DTYPE
from nodeqc.core.skus import BY_KEY, Sku

MIB = 1024 * 1024
PLAIN = "plain"  # the plain load (SimDevice.busy_step): the Twin's loaded clock and power under it
# The work that is not matmul: the STREAM kernels, the memory test's sweeps and the host copies.
HBM_WORK, MEMTEST_WORK, PCIE_WORK = "hbm", "memtest", "pcie"
MEMORY_WORK = (HBM_WORK, MEMTEST_WORK, PCIE_WORK)
# None of them brings a GPU to its power limit: on the real H100 SXM5 and H200 each ran at the maximum
# SM clock (1980 MHz) with no clock-event reason, at 98-100 % utilisation, the memory's utilisation 100 %
# for the copies and the sweeps and 2 % for the host copies (tests/fixtures/real-2026-11-27/
# *-flat-copy and *-kept-workers telemetry, while each step's kernels ran). Their power where no part was
# measured: MEMORY_WORK_POWER_SHARE, below the twins.
MEM_UTIL_SHARE = {HBM_WORK: 1.0, MEMTEST_WORK: 1.0, PCIE_WORK: 0.02}
# Under matmul the memory's utilisation read 32-38 % in the pulse's bursts and 20-34 % in the captures
# (same fixtures; shared/measurements/2026-11-26/capture-*.json): where no part was measured, and the
# twins' plain load (their dtypes: Twin.matmul_mem_util).
MATMUL_MEM_UTIL_SHARE = 0.33


# A pulse burst's draw against the limit where no part was measured: the two twins' (1.10 and 1.04),
# their middle, an estimate.
ESTIMATED_PULSE_BURST_SHARE = 1.07
ESTIMATED_MEM_TEMP_OFFSET_C = 4.0  # memory against GPU temperature where no part was measured (an estimate)
ESTIMATED_TEMP_FAST_SHARE = 0.52  # Twin.temp_fast_share where no part was measured: the H100's, an estimate
ESTIMATED_MEMBOUND_DIE_HEAT_SHARE = 0.55  # Twin.membound_die_heat_share where no part was measured: the H100's, an estimate
# Work whose memory utilisation is at least this share is memory-bound (the real copies and sweeps
# read 99-100 %, a matmul 20-38 %: tests/fixtures/real-2026-11-27 telemetry): its memory runs hot, and
# its watts heat the die less (Twin.membound_die_heat_share).
MEMORY_BOUND_SHARE = 0.9


@dataclass(frozen=True)
class Twin:
    """What one real part delivered, figure by figure, for the simulated GPU to reproduce.

    tflops: the quick burn's sustained rate per dtype; sm_mhz: the mean SM clock over each dtype's
    span in that burn (the burn runs fp64, fp32, tf32, fp16, bf16, fp8 in turn) and under the plain
    load (PLAIN: stress.power's busy steps); power_w: what the GPU draws steadily under each, NVML's
    one-second mean from a second into the span on (the node's NVML averages it as the real one,
    so the set-up gaps and the ramp bring a span's mean down as they did);
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
    # The memory's temperature against the GPU's under load: the median difference over the loaded
    # samples of the real quick runs (tests/fixtures/real-2026-11-2*/*quick*.telemetry.csv.gz: H100
    # -4 to -8 C, H200 -7 to -11 C); the untwinned models keep ESTIMATED_MEM_TEMP_OFFSET_C.
    mem_temp_offset_c: float
    # ...and at idle before the first load, the memory warmer than the GPU: the median difference of
    # the same runs' samples before their first load (H100 +1 to +4 C, median +3; H200 -1 to +4, +1).
    # Between the two, the offset follows how far the GPU has warmed from idle towards its loaded
    # temperature (SimGpuModel.mem_temp_offset_at).
    idle_mem_temp_offset_c: float = 0.0
    # ...and under memory-bound work (the copies and the memory test's sweeps, the memory 90 % busy or
    # more), the memory warmer than the GPU again, from the first sample of it: the median over those
    # samples of the same runs (H100 +6 to +16 C, median +11 over 21 samples; H200 0 to +14, +8.5
    # over 16). The matmul's offset above is under compute, where the SMs heat the die, not the HBM.
    membound_mem_temp_offset_c: float | None = None
    # What a burst of the pulse test draws: NVML's instantaneous power at the bursts' ends of its
    # 500 ms and 1 s periods, the median over the real quick runs (tests/fixtures/real-2026-11-2*
    # /*quick*.predicate.json, the pulse's power_read high_instant: H100 753-785 W, H200 718-748 W).
    # Above the 700 W limit: the limiter holds a mean over about a second, a burst overshoots it.
    pulse_burst_w: float = 0.0
    # The share of a quick run's rise in GPU temperature that came within half a second of its first
    # load (nodeqc.backends.sim.physics.THERMAL_TAUS_S): H100 0.42-0.52, median 0.52 of five runs;
    # H200 0.68-0.81, median 0.71 of four.
    temp_fast_share: float = 0.0
    # Each STREAM copy kernel's rate in the set-up's probe (one warm pass, best of three), from which
    # the fastest is kept for the figure (real-2026-11-27/*-quick-flat-copy, copy_kernel's rates_gbps);
    # the probe reads below the figure, which is the best of the timed passes.
    copy_probe_gbps: dict[str, float] = field(default_factory=dict)
    # The share of memory-bound work's watts above idle that heats the die as a matmul's watts do
    # (physics.heat_step): the memory's power heats the HBM stacks beside it. Fitted so that the
    # thermal model, driven by each real quick run's own power, reads the real die's temperature at
    # the memory-bound samples (median error nearest 0; tests/fixtures/real-2026-11-2*/*quick*
    # .telemetry.csv.gz, memory 90 % busy or more): H100 0.55 (21 samples; +4.5 C at 1), H200 0.25
    # (16; +9.9 C at 1: the real die read 43-53 C under the copies at 300-545 W). The H100's is the
    # weaker fit: its runs split by machine (46-49 C on three, 61-64 C on two, which err -5 and +6
    # C at 0.55). None: ESTIMATED_MEMBOUND_DIE_HEAT_SHARE.
    membound_die_heat_share: float | None = None
    # The memory's utilisation under each dtype's matmul, as a share: the median over the real quick
    # runs of NVML's memory utilisation in each dtype's span of stress.burn (past its first half
    # second; tests/fixtures/real-2026-11-2*/*quick*: H100 four runs, H200 three, each within 2.5
    # points of the median). fp32 reads lowest (9 and 6 %), fp8 highest on the H100 (37 %).
    matmul_mem_util: dict[str, float] = field(default_factory=dict)


M26 = "shared/measurements/2026-11-26"
# The burn keeps the GPU computing the whole of each step since 2026-11-26 (a warm product sizes its
# steps): the figures a twin reproduces are of that burn, read on the same day with the same driver
# (benchmarks/RESULTS.md, "2026-11-26, issue 23"). Per dtype: the burn's sustained rate, the mean
# SM clock over its span (the evidence's per-dtype readings) and the median power reading from a
# second into it (the telemetry's: 686-699 W on the H100, 669-696 W on the H200, where the spans'
# means, set-up gaps and ramp in, read 595-698); PLAIN: stress.power's clock and steady power; the copies and pinned copies of the quick run; the memory test's rate as the
# benchmark's second call read it (its kernels compiled).
# H100 SXM5 80GB (PCI 0x2330), 700 W, driver 580.159.04: quick run vm-20261126T174004Z
# (tests/fixtures/real-2026-11-26/h100-sxm5-quick-pulsed.predicate.json).
H100_SXM5_TWIN = Twin(
    tflops={"fp64": 59.04, "fp32": 51.46, "tf32": 356.25, "fp16": 651.86, "bf16": 677.38, "fp8": 1223.38},
    sm_mhz={"fp64": 1795, "fp32": 1975, "tf32": 1412, "fp16": 1291, "bf16": 1369, "fp8": 1272, PLAIN: 1332},
    power_w={"fp64": 696.9, "fp32": 691.5, "tf32": 698.4, "fp16": 695.8, "bf16": 698.9, "fp8": 686.2, PLAIN: 695.6,
             # The instantaneous field while the copies, sweeps and host copies ran (real-2026-11-27
             # kept-workers and flat-copy: 440-472, 403 and 611, 136-152 W); the memory test's from two
             # samples, their middle.
             HBM_WORK: 460.0, MEMTEST_WORK: 500.0, PCIE_WORK: 143.0},
    # The copy of the kernel with a thread a vector (kept since 2026-11-27: quick run vm-20261127T171934Z,
    # tests/fixtures/real-2026-11-27/h100-sxm5-quick-flat-copy); the looping kernels read 2847.5.
    copy_gbps=3016.6, triad_gbps=2914.7, h2d_gbps=55.3, d2h_gbps=55.2, bidir_gbps=96.4, memtest_gbps=2872.6,
    source="benchmarks/RESULTS.md 2026-11-26 (quick run vm-20261126T174004Z, bench_gpu memtest_second)",
    mem_temp_offset_c=-8.0, idle_mem_temp_offset_c=3.0, membound_mem_temp_offset_c=11.0, pulse_burst_w=770.0,
    temp_fast_share=0.52, membound_die_heat_share=0.55,
    matmul_mem_util={"fp64": 0.21, "fp32": 0.09, "tf32": 0.33, "fp16": 0.31, "bf16": 0.33, "fp8": 0.37},
    copy_probe_gbps={"stream_copy": 2775.7, "stream_copy_flat": 2956.7, "stream_copy_x4": 2771.6, "stream_copy_x8": 2808.5})
# H200 SXM 141GB (PCI 0x2335), the same: quick run vm-20261126T174732Z
# (tests/fixtures/real-2026-11-26/h200-sxm-quick-pulsed.predicate.json).
H200_SXM_TWIN = Twin(
    tflops={"fp64": 59.53, "fp32": 51.26, "tf32": 344.91, "fp16": 639.14, "bf16": 663.68, "fp8": 1212.4},
    sm_mhz={"fp64": 1801, "fp32": 1980, "tf32": 1508, "fp16": 1399, "bf16": 1473, "fp8": 1390, PLAIN: 1418},
    power_w={"fp64": 696.2, "fp32": 689.0, "tf32": 692.2, "fp16": 690.7, "bf16": 687.7, "fp8": 669.2, PLAIN: 690.5,
             # As the H100's (real-2026-11-27/h200-sxm-quick-flat-copy: 531-572, 491 and 747, 132-133 W).
             HBM_WORK: 550.0, MEMTEST_WORK: 620.0, PCIE_WORK: 133.0},
    # The thread-a-vector copy (quick run vm-20261127T171545Z, real-2026-11-27/h200-sxm-quick-flat-copy);
    # the looping kernels read 3988.2.
    copy_gbps=4242.6, triad_gbps=4158.4, h2d_gbps=55.4, d2h_gbps=55.3, bidir_gbps=101.4, memtest_gbps=3921.7,
    source="benchmarks/RESULTS.md 2026-11-26 (quick run vm-20261126T174732Z, bench_gpu memtest_second)",
    mem_temp_offset_c=-9.0, idle_mem_temp_offset_c=1.0, membound_mem_temp_offset_c=8.5, pulse_burst_w=727.0,
    temp_fast_share=0.71, membound_die_heat_share=0.25,
    matmul_mem_util={"fp64": 0.16, "fp32": 0.06, "tf32": 0.24, "fp16": 0.24, "bf16": 0.25, "fp8": 0.24},
    copy_probe_gbps={"stream_copy": 3848.9, "stream_copy_flat": 4116.9, "stream_copy_x4": 3782.5, "stream_copy_x8": 3776.7})
# The memory-bound work's power where no part was measured: the H100 SXM5's as a share of its 700 W
# limit (0.66, 0.71, 0.20), an estimate.
MEMORY_WORK_POWER_SHARE = {work: round(H100_SXM5_TWIN.power_w[work] / 700, 2) for work in MEMORY_WORK}
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
    # The InfoROM image where it was read (the measured parts'); else it follows the board part
    # (nodeqc.backends.sim.node.sim_firmware).
    inforom_image: str = ""

    @property
    def sku(self) -> Sku:
        return BY_KEY[self.sku_key]

    @property
    def mem_temp_offset_c(self) -> float:
        """The memory's temperature against the GPU's under load: the twin's, measured, else the estimate."""
        return self.twin.mem_temp_offset_c if self.twin else ESTIMATED_MEM_TEMP_OFFSET_C

    @property
    def temp_fast_share(self) -> float:
        """The share of its quick-run rise in temperature a GPU takes within a sample of its load."""
        return self.twin.temp_fast_share if self.twin and self.twin.temp_fast_share else ESTIMATED_TEMP_FAST_SHARE

    @property
    def pulse_burst_share(self) -> float:
        """A pulse burst's draw as a share of the enforced limit: the twin's, measured, else the estimate."""
        return self.twin.pulse_burst_w / self.tdp_w if self.twin and self.twin.pulse_burst_w else \
            ESTIMATED_PULSE_BURST_SHARE

    def mem_temp_offset_at(self, temp_c: float, load_temp_c: float, memory_bound: bool = False) -> float:
        """The memory's temperature against the GPU's at GPU temperature temp_c: the idle offset at the
        idle temperature, the loaded one at load_temp_c (the GPU's under full load), in proportion
        between; under memory-bound work, the measured offset of that work. Untwinned models keep
        their one estimate at every temperature and under every work (no measurement to set them by)."""
        if memory_bound and self.twin is not None and self.twin.membound_mem_temp_offset_c is not None:
            return self.twin.membound_mem_temp_offset_c
        if self.twin is None or load_temp_c <= self.idle_temp_c:
            return self.mem_temp_offset_c
        warmed = min(1.0, max(0.0, (temp_c - self.idle_temp_c) / (load_temp_c - self.idle_temp_c)))
        idle = self.twin.idle_mem_temp_offset_c
        return idle + warmed * (self.twin.mem_temp_offset_c - idle)

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

    def copy_choice(self, copy_gbps: float) -> dict[str, Any] | None:
        """The copy kernels' probe rates on a part whose copy reads `copy_gbps` now (a slow HBM's
        slower alike), and the fastest, kept: the evidence the real part gives (None: not measured,
        one kernel)."""
        if not self.twin or not self.twin.copy_probe_gbps:
            return None
        rates = {k: round(v * copy_gbps / self.twin.copy_gbps, 1) for k, v in self.twin.copy_probe_gbps.items()}
        return {"kernel": max(rates, key=lambda k: rates[k]), "rates_gbps": rates}

    @property
    def memtest_share(self) -> float:
        """The memory test's rate over the STREAM copy's."""
        return self.twin.memtest_gbps / self.twin.copy_gbps if self.twin else 0.8

    def loaded_clock(self, dtype: str | None) -> float:
        """The SM clock under full load of `dtype` (PLAIN: the plain load) at the power limit; 0 for
        no load. Without a twin: the SKU's loaded clock of the dtype (the plain load is fp16)."""
        if not dtype:
            return 0.0
        if dtype in MEMORY_WORK:
            return float(self.max_sm_mhz)
        if self.twin and dtype in self.twin.sm_mhz:
            return self.twin.sm_mhz[dtype]
        return self.sku.loaded_clock([PLAIN_LOAD_DTYPE if dtype == PLAIN else dtype])

    def loaded_power_w(self, dtype: str | None) -> float:
        """The power a healthy part draws under full load of `dtype`; 0: not measured (the node's
        general share of the limit applies). The work that is not matmul: the twin's, else its share
        of the limit (MEMORY_WORK_POWER_SHARE, an estimate)."""
        if self.twin and dtype in self.twin.power_w:
            return self.twin.power_w[dtype]
        return MEMORY_WORK_POWER_SHARE[dtype] * self.tdp_w if dtype in MEMORY_WORK else 0.0

    def mem_util_share(self, dtype: str | None) -> float:
        """The memory's utilisation under full load of this work, as a share: the twin's for its
        matmul dtypes (Twin.matmul_mem_util), else the work's (MEM_UTIL_SHARE) or a matmul's."""
        if self.twin and dtype in self.twin.matmul_mem_util:
            return self.twin.matmul_mem_util[dtype]
        return MEM_UTIL_SHARE.get(dtype or "", MATMUL_MEM_UTIL_SHARE)

    def die_heat_share(self, dtype: str | None) -> float:
        """The share of this work's watts above idle that heats the die as a matmul's do."""
        return self.die_heat_share_at(self.mem_util_share(dtype))

    def die_heat_share_at(self, mem_util_share: float) -> float:
        """...of work that keeps the memory this busy: all of them but for memory-bound work's
        (Twin.membound_die_heat_share)."""
        if mem_util_share < MEMORY_BOUND_SHARE:
            return 1.0
        measured = self.twin.membound_die_heat_share if self.twin else None
        return ESTIMATED_MEMBOUND_DIE_HEAT_SHARE if measured is None else measured

    @property
    def power_averaged(self) -> bool:
        """Whether NVML's power reading is the last second's mean: "On Ampere (except GA100) or newer
        GPUs, the API returns power averaged over 1 sec interval. On GA100 and older architectures,
        instantaneous power is returned" (NVML API reference, nvmlDeviceGetPowerUsage): A100 (8.0),
        V100 (7.0) and T4 (7.5) read the power now."""
        return float(self.compute_capability) > 8.0

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
    # The twins' thresholds are their NVML answers (capture-h100-sxm5-80gb.json, capture-h200-sxm-141gb.json:
    # nvmlDeviceGetTemperatureThreshold shutdown 95, slowdown 89, memory max 95, GPU max 87); the H100's
    # load temperature the median peak of its five real quick runs (65, 66, 69, 77, 79 C: the machines'
    # cooling differs; the H200's four: 59-66 C), their idle temperature the median before those runs'
    # first load (32, 35, 36, 39, 50 C; the H200's 36, 37, 38, 43 C). Their VBIOS, board part and InfoROM image are the
    # calibration runs' machines' (tests/fixtures/capture-h100-sxm5-80gb.json, capture-h200-sxm-141gb.json).
    SimGpuModel("h100-sxm5-80gb", "9.0", 16, 72, 36, 69, 89, 95, 87, 95, 345, 1980, 2619, 18,
                "96.00.DA.00.0C", "695-2G520-0200-000", 378, H100_SXM5_TWIN),
    SimGpuModel("h100-pcie-80gb", "9.0", 16, 48, 32, 70, 90, 92, 87, 95, 345, 1755, 1593, 0,
                "96.00.30.00.01", "900-21010-0000-000", 52),
    SimGpuModel("h100-nvl-94gb", "9.0", 16, 60, 32, 68, 90, 92, 87, 95, 345, 1785, 2619, 0,
                "96.00.74.00.01", "900-21010-0020-000", 52),
    SimGpuModel("h200-sxm-141gb", "9.0", 16, 78, 37.5, 63, 89, 95, 87, 95, 345, 1980, 3201, 18,
                "96.00.A5.00.1A", "692-2G520-0282-000", 390, H200_SXM_TWIN, "G520.0282.02.02"),
    SimGpuModel("h200-nvl-141gb", "9.0", 16, 70, 31, 66, 90, 92, 87, 95, 345, 1785, 3201, 0,
                "96.00.AF.00.01", "900-21010-0040-000", 52),
    # Blackwell: no part measured. Clocks: the maximum SM and memory clocks nvidia-smi shows on such
    # parts in public logs (B200 1965/3996 MHz, B300 2032); the rest follows the Hopper SXM models.
    # NVLink 5: 18 links per GPU, 1.8 TB/s both ways (datasheets); p2p_gbps is an estimate, the H100
    # SXM's measured share of its NVLink (378 of 450 GB/s one way) of 900 GB/s.
    SimGpuModel("b200-sxm-180gb", "10.0", 16, 140, 30, 64, 90, 92, 87, 95, 345, 1965, 3996, 18,
                "97.00.4B.00.01", "692-2G525-0200-000", 756),
    SimGpuModel("gb200-186gb", "10.0", 16, 150, 30, 64, 90, 92, 87, 95, 345, 1965, 3996, 18,
                "97.00.6D.00.01", "699-2G548-0200-000", 756),
    SimGpuModel("b300-sxm6-270gb", "10.3", 16, 160, 30, 64, 90, 92, 87, 95, 345, 2032, 3996, 18,
                "97.10.1A.00.01", "692-2G530-0200-000", 756),
    SimGpuModel("gb300-279gb", "10.3", 16, 170, 30, 64, 90, 92, 87, 95, 345, 2032, 3996, 18,
                "97.10.2C.00.01", "699-2G558-0200-000", 756),
    SimGpuModel("rtx-pro-6000-server", "12.0", 16, 60, 30, 70, 90, 93, 87, 95, 210, 2617, 13801, 0,
                "98.02.1F.00.01", "900-2G153-0010-000", 52),
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
