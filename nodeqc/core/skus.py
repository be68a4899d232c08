"""The GPU SKUs nodeqc knows: how to recognise each one, and what a healthy part of it delivers.

This table is the one place for a SKU's figures. Profiles derive their floors from the healthy
figures here (nodeqc/spec/calibration.py states the rule), and the simulated GPU models run at them
(nodeqc/backends/sim/models.py), so a measurement changes one line.

Healthy figures are sustained rates of nodeqc's own work (matmul burn TFLOP/s, STREAM copy GB/s read
plus written, pinned H2D/D2H GB/s), taken at the LOW end of what healthy parts measured:
- measured: H100 SXM5 and H200 SXM (shared/measurements/README.md, 2026-11-23, driver 580.159.04,
  quick burn of about 6 s per dtype under the 700 W limit; three H100 SXM5 machines), fp8 and the
  clock of each dtype at the power limit from the quick burns of shared/measurements/2026-11-26;
- published measurements where there are some (gpu-fryer's per-GPU rates, nvbandwidth, in
  shared/REFERENCE.md);
- otherwise an estimate: the datasheet peak times the fraction of its peak the H100 SXM5 sustained
  in the same measure (`_estimate`), marked so in the SKU's `source` and, figure by figure, in its
  `estimated` (`nodeqc profiles NAME` shows it; a rate below an estimated floor is never blamed on
  the part alone). Replace an estimate with a
  measurement when a part can be measured.

PCI device ids: pci.ids (pciutils/pciids, version 2026.08.22) and, for 0x2330 and 0x2335, the
captures in shared/measurements.

Blackwell (B200, B300, GB200, GB300, RTX PRO 6000 Blackwell Server Edition): no part was measured;
every healthy figure is an estimate, and each SKU names the published reference points it was
checked against (DCGM's per-SKU diagnostic config, NVIDIA/DCGM nvvs/diag-skus.yaml.in at commit
72fa3feaa67d716a75323a8f47c34ff3ee73f824: targeted power and the HBM floor, 0.75 of what
dcgmproftester measured). Their fp4 and fp6 tensor cores are listed in `not_burned`: nodeqc's burn
has no fp4/fp6 product yet, and stress.burn says so as "not run" on every such GPU.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Iterable

NVIDIA_VENDOR_ID = 0x10DE

# Measured on H100 SXM5 (shared/measurements/README.md): the low end over three machines of the
# quick burn's sustained rates, STREAM copy and pinned copies. The datasheet peaks beside them
# (shared/REFERENCE.md) give the fraction of peak nodeqc's work sustains, which `_estimate` applies
# to SKUs nobody has measured yet.
# Since 2026-11-26 the burn sizes its steps from a warm product and keeps the GPU computing the whole
# step; before, a step sized from the cold first product was a few products between checks, and the
# GPU idled 15-30% of each half-precision phase (utilisation 70-87%), cooled, and ran its products at
# 1600-1880 MHz instead of the 1291-1399 MHz its 700 W limit holds under a continuous load. The rates
# are of the continuous burn (benchmarks/RESULTS.md, 2026-11-26, one H100 SXM5, quick run
# vm-20261126T174004Z), the lower of it and the earlier figures (shared/measurements) per dtype:
# fp64 59.04, fp32 51.46, tf32 356.25, fp16 651.86 (732.1 duty-cycled), bf16 677.38 (747.1), fp8 1223.38
# (1237.1). fp8 against 1979 dense is 0.62 of peak, fp16 0.66.
_H100_SXM5_MEASURED = {"fp64": 59.04, "fp32": 51.46, "tf32": 356.25, "fp16": 651.86, "bf16": 677.38, "fp8": 1223.38}
_H100_SXM5_PEAK = {"fp64": 67.0, "fp32": 67.0, "tf32": 495.0, "fp16": 989.0, "bf16": 989.0, "fp8": 1979.0}
# HBM: the copy with a thread a vector, which the check keeps since 2026-11-27 (1.000-1.003 of the
# driver's device-to-device copy on H100s and 0.99-0.999 on H200s, benchmarks/RESULTS.md): the low end
# of the device copy over three H100 SXM5 (3011-3018 GB/s, 2026-11-26/27); the check read 3016.6. The
# looping copy it replaced read 2843-2859, 0.94 of the device copy.
_H100_SXM5_HBM_MEASURED, _H100_SXM5_HBM_PEAK = 3011.0, 3350.0
# Pinned copies: 54.2 GB/s (H2D, the low end over three machines) on Gen5 x16; Gen4 x16 moves 24-26
# and Gen3 x16 12-13 (REFERENCE.md; nvbandwidth 25.1 on A100 SXM4 Gen4): the low ends.
LINK_GBPS = {5: 54.2, 4: 24.0, 3: 12.0}


def _estimate(peaks: dict[str, float]) -> dict[str, float]:
    """Sustained rates of an unmeasured SKU: its datasheet peak (dense) times the fraction of peak
    the H100 SXM5 sustained in that dtype (fp8 too: its sustained burn, not fp16's fraction, which
    put the H200 SXM's fp8 15% above what two healthy parts sustained)."""
    ratio = {d: _H100_SXM5_MEASURED[d] / _H100_SXM5_PEAK[d] for d in _H100_SXM5_MEASURED}
    return {d: round(p * ratio[d], 1) for d, p in peaks.items()}


def _estimate_hbm(peak_gbps: float) -> float:
    return round(peak_gbps * _H100_SXM5_HBM_MEASURED / _H100_SXM5_HBM_PEAK)


# DCGM's memory-bandwidth floors are 0.75 of what its own kernel (dcgmproftester -t 1005) measured on
# a healthy part, and its comments give that measurement (NVIDIA/DCGM nvvs/diag-skus.yaml.in): on the
# H100 SXM5 (0x2330) ~2,540,000 MB/s, where nodeqc's copy measures 3011 GB/s (above). A SKU DCGM
# measured and nodeqc did not gets that measurement scaled by the same ratio: closer to a part's
# copy rate than its datasheet peak (`_estimate_hbm` puts a B200 at 7190 GB/s; DCGM's measurement
# scales to 6437), but still an estimate.
_H100_SXM5_DCGM_HBM_MBPS = 2_540_000


def _from_dcgm_hbm(measured_mbps: float) -> float:
    return round(measured_mbps / 1000 * _H100_SXM5_HBM_MEASURED / (_H100_SXM5_DCGM_HBM_MBPS / 1000))


@dataclass(frozen=True)
class Sku:
    key: str  # "h100-sxm5-80gb": the name of its profile
    family: str  # "h100": the family profile it belongs to
    name: str  # for people: "H100 SXM5 80GB"
    form: str  # sxm | pcie | nvl
    pci_device_ids: tuple[int, ...]  # PCI device ids (vendor 0x10de)
    nvml_names: tuple[str, ...]  # what nvmlDeviceGetName answers (shell patterns, case-insensitive)
    memory_gib: float  # memory NVML reports in total, GiB
    default_power_w: float  # nvmlDeviceGetPowerManagementDefaultLimit
    healthy_tflops: dict[str, float] = field(hash=False)  # sustained matmul rate per dtype
    healthy_sm_mhz: float  # the loaded SM clock the healthy rates were measured at (mean over the whole burn)
    healthy_hbm_gbps: float  # STREAM copy, bytes read plus written
    healthy_h2d_gbps: float
    healthy_d2h_gbps: float
    pcie_gen: int
    source: str  # where the healthy figures come from
    measured: bool = False  # healthy figures measured on this SKU (else published or estimated)
    # The loaded SM clock a healthy part holds under one dtype at its default power limit, where it
    # was measured (as nodeqc's telemetry counts it: the mean of the readings under load). A dtype
    # not here runs at healthy_sm_mhz. Half precision on a Hopper holds the 700 W limit far below
    # the mean over a whole burn.
    loaded_sm_mhz: dict[str, float] = field(default_factory=dict, hash=False)
    # Which healthy figures (dtypes of healthy_tflops, "hbm") are estimates: the datasheet peak
    # times the H100 SXM5's measured fraction of peak (`_estimate`), not a rate any part of this
    # SKU was seen to sustain. A floor made of one can be wrong by more than the calibration
    # rule's 10% band, so a rate below it is never blamed on the part alone
    # (nodeqc.checks.diagnosis).
    estimated: frozenset[str] = field(default_factory=frozenset, hash=False)
    # Tensor dtypes the GPU has that nodeqc's burn cannot run yet (Blackwell's fp6 and fp4): named,
    # so stress.burn reports them "not run" instead of leaving a silent gap.
    not_burned: tuple[str, ...] = ()

    def provenance(self, figure: str) -> str:
        """How a healthy figure ("fp8", "hbm") was had: "estimate" (datasheet-derived), or "measured"
        / "published" as the SKU's source says."""
        if figure in self.estimated:
            return "estimate"
        return "measured" if self.measured else "published"

    def loaded_clock(self, dtypes: Iterable[str] | None = None) -> float:
        """The loaded SM clock below which a healthy part does not go under a load of these dtypes:
        the lowest of theirs. A step's telemetry mixes its dtypes in whatever share the samples fell,
        so only the lowest is a floor that a healthy part always clears. None: healthy_sm_mhz."""
        chosen = list(dtypes or [])
        if not chosen:
            return self.healthy_sm_mhz
        return min(self.loaded_sm_mhz.get(d, self.healthy_sm_mhz) for d in chosen)

    def matches_name(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name.lower(), p.lower()) for p in self.nvml_names)


def _sku(key: str, family: str, name: str, form: str, ids: tuple[int, ...], nvml: tuple[str, ...],
         memory_gib: float, power_w: float, tflops: dict[str, float], sm_mhz: float, hbm: float,
         pcie_gen: int, source: str, h2d: float | None = None, d2h: float | None = None,
         measured: bool = False, loaded_mhz: dict[str, float] | None = None,
         estimated: Iterable[str] | None = None, not_burned: tuple[str, ...] = ()) -> Sku:
    """`estimated`: the healthy figures that are estimates; None: all of them where the source says
    "estimate", none otherwise."""
    if estimated is None:
        estimated = [*tflops, "hbm"] if source.startswith("estimate") else []
    return Sku(key, family, name, form, ids, nvml, memory_gib, power_w, tflops, sm_mhz, hbm,
               LINK_GBPS[pcie_gen] if h2d is None else h2d, LINK_GBPS[pcie_gen] if d2h is None else d2h,
               pcie_gen, source, measured, dict(loaded_mhz or {}), frozenset(estimated), not_burned)


def _half_precision(mhz: float) -> dict[str, float]:
    """fp16's measured loaded clock, for bf16 too: the same tensor cores at the same dense peak
    (989 TFLOP/s each on the H100 SXM5, shared/REFERENCE.md) and the same measured rate within 5%
    (fp16 732-749, bf16 747-782 TFLOP/s, shared/measurements/README.md), so the same power per
    clock at the limit. bf16's clock itself was not read."""
    return {"fp16": mhz, "bf16": mhz}


def _burn_clocks(fp64: float, tf32: float, fp8: float) -> dict[str, float]:
    """The dtypes that held the 700 W limit (sw_power_cap asserted in every loaded sample) in the
    quick burn of shared/measurements/2026-11-26 ("Clocks per dtype"), read from the runs'
    telemetry (*-reports/*.telemetry.csv.gz, 4 Hz): the median SM clock of each phase's loaded
    samples. The burn runs the profile's dtypes in order (fp64, fp32, tf32, fp16, bf16, fp8:
    nodeqc.work.workloads.matmul_burn), one phase each; the phases' lengths match the evidence's
    seconds per dtype (fp64 and fp32 about 4.5-4.7 s of products, tf32 4.9-5.1; fp16, bf16 and fp8
    about 3 s, their products faster than the known-answer checks between them). fp32 did not
    hold the limit (1980 MHz, the maximum) and fp16/bf16 keep the capture's plain-load clock, the
    lower: a floor. fp8's mean is below its median on the H100 (1225 against 1290: two readings at
    1035 and 1155 MHz among 11), inside the diagnosis' 0.9 of it."""
    return {"fp64": fp64, "tf32": tf32, "fp8": fp8}


# Datasheet dense peaks are in shared/REFERENCE.md unless the comment names another datasheet.
# healthy_sm_mhz of an unmeasured SKU is its datasheet boost clock (an upper bound of the loaded clock).
SKUS: tuple[Sku, ...] = (
    # ---- Hopper
    _sku("h100-sxm5-80gb", "h100", "H100 SXM5 80GB", "sxm", (0x2330,), ("NVIDIA H100 80GB HBM3",),
         79.6, 700,
         # fp8: the quick burn's sustained rate under the 700 W limit (1237.1 TFLOP/s duty-cycled,
         # shared/measurements/2026-11-26, h100-reports/vm-20261126T153634Z; 1223.38 continuous). It
         # replaces 1353.2, an 8192^3 product through nvmath-python's Matmul: a short peak the burn
         # did not sustain, which left a healthy part 1.6% above the warning level.
         dict(_H100_SXM5_MEASURED),
         # The mean over a whole burn was not read on the H100: the H200's (same GH100 die, clocks
         # and 700 W limit), 1794 MHz over the quick burn's five dtypes, stands for the dtypes whose
         # own clock was not read.
         1794, _H100_SXM5_HBM_MEASURED, 5,
         "measured on three H100 SXM5 (shared/measurements, 2026-11-23): quick burn low ends, "
         "copy 3011 (the device copy's low end; the check's copy 3016.6, 2026-11-27), H2D 54.2-55.3, D2H 55.2 (one machine; H2D's low end used for both); "
         "SM clock under fp16 1331 MHz (capture); the rates and clocks per dtype of the continuous quick burn of "
         "2026-11-26 (benchmarks/RESULTS.md) where lower",
         measured=True,
         # Half precision at the 700 W limit: capture-h100-sxm5-80gb.json, `nodeqc capture` under
         # half-precision products (the plain load, CupyDevice.busy_step), SW power cap asserted,
         # power 690-704 W: 34 readings under load, 1260-1455 MHz, mean 1331 (1290-1365 once steady).
         # The continuous burn of 2026-11-26 (vm-20261126T174004Z, the evidence's mean per dtype) held
         # fp16 at 1291 MHz, bf16 1369, fp64 1795, tf32 1412, fp8 1272: the lowest of those and of the
         # earlier readings is each dtype's floor.
         loaded_mhz={**_half_precision(1291), **_burn_clocks(fp64=1795, tf32=1410, fp8=1272)}),
    _sku("h100-pcie-80gb", "h100", "H100 PCIe 80GB", "pcie", (0x2331,), ("NVIDIA H100 PCIe",),
         79.6, 350,
         _estimate({"fp64": 51, "fp32": 51, "tf32": 378, "fp16": 756, "bf16": 756, "fp8": 1513}),
         1755, _estimate_hbm(2000), 5,
         "estimate: datasheet peaks (H100 PCIe 80GB) x the H100 SXM5's measured fraction of peak"),
    # H100 NVL datasheet: FP64 tensor 60, FP32 60, TF32 835 / BF16 1671 / FP8 3341 with sparsity
    # (half that dense), 94 GB HBM3 at 3.9 TB/s, 350-400 W, Gen5 x16. pci.ids: 0x2321 "H100L 94GB".
    _sku("h100-nvl-94gb", "h100", "H100 NVL 94GB", "nvl", (0x2321,), ("NVIDIA H100 NVL",),
         93.6, 400,
         _estimate({"fp64": 60, "fp32": 60, "tf32": 417.5, "fp16": 835.5, "bf16": 835.5, "fp8": 1670.5}),
         1785, _estimate_hbm(3900), 5,
         "estimate: datasheet peaks (H100 NVL) x the H100 SXM5's measured fraction of peak"),
    _sku("h200-sxm-141gb", "h200", "H200 SXM 141GB", "sxm", (0x2335,), ("NVIDIA H200",),
         140.4, 700,
         # tf32: 349.1 on this H200 against 358-364 on the H100s. fp8: the low end of the quick
         # burn's sustained rates under the 700 W limit on two H200 SXM (shared/measurements/2026-11-26):
         # 1231.6 (h200-reports/vm-20261126T154124Z), 1219.9 and 1223.0 (a second serial, twice). It
         # replaces a datasheet estimate (1464.5) that warned on the healthy part.
         # The continuous burn (benchmarks/RESULTS.md, 2026-11-26, quick run vm-20261126T174732Z): fp64
         # 59.53, fp32 51.26, tf32 344.91, fp16 639.14 (742.6 duty-cycled), bf16 663.68 (738.8), fp8
         # 1212.4; the lower of it and the earlier figures per dtype (fp32 51.05 on 2026-11-26).
         {"fp64": 59.53, "fp32": 51.05, "tf32": 344.91, "fp16": 639.14, "bf16": 663.68, "fp8": 1212.4},
         # HBM: the device copy's low end over two H200 SXM (4234 on 2026-11-26, 4286.7 on 2026-11-27), which
         # the check's thread-a-vector copy matches (4242.6 in the quick run, 2026-11-27); the looping copy
         # it replaced read 3972-3988.
         1794, 4234, 5,
         "measured on one H200 SXM (shared/measurements, 2026-11-23): quick burn, copy 4234 (the device copy's low end, 2026-11-26/27), "
         "H2D 55.5, D2H 55.3-55.4, SM clock 1794 MHz mean under the burn, 1400 MHz under fp16 (capture); "
         "the rates and clocks per dtype of the continuous quick burn of 2026-11-26 (benchmarks/RESULTS.md) where "
         "lower",
         h2d=55.5, d2h=55.3, measured=True,
         # Half precision at the 700 W limit: capture-h200-sxm-141gb.json, the same plain load, SW
         # power cap asserted, power 683-705 W: 35 readings under load, 1305-1440 MHz, mean 1400.
         # The continuous burn of 2026-11-26 (vm-20261126T174732Z) held fp16 at 1399 MHz, bf16 1473,
         # fp64 1801, tf32 1508, fp8 1390: the lowest of those and of the earlier readings.
         loaded_mhz={**_half_precision(1399), **_burn_clocks(fp64=1801, tf32=1508, fp8=1380)}),
    # H200 NVL datasheet: FP64 tensor 60, FP32 60, TF32 835 / BF16 1671 / FP8 3341 with sparsity,
    # 141 GB HBM3e at 4.8 TB/s, up to 600 W, Gen5 x16.
    _sku("h200-nvl-141gb", "h200", "H200 NVL 141GB", "nvl", (0x233B,), ("NVIDIA H200 NVL",),
         140.4, 600,
         _estimate({"fp64": 60, "fp32": 60, "tf32": 417.5, "fp16": 835.5, "bf16": 835.5, "fp8": 1670.5}),
         1785, _estimate_hbm(4800), 5,
         "estimate: datasheet peaks (H200 NVL) x the H100 SXM5's measured fraction of peak"),
    # ---- Blackwell. No part measured: every healthy figure is `_estimate` of the dense datasheet peak
    # per GPU (the HGX B200 / HGX B300 and GB200 NVL72 / GB300 NVL72 datasheets give system figures
    # with sparsity: divided by the GPU count, and by 2 for dense; the RTX PRO 6000 Blackwell Server
    # Edition datasheet per card). The datasheet figures are as nodeqc read them, not checked against
    # a part: confirm on the first measurement. Memory: what nvidia-smi reports on such parts in
    # public logs (B200 183359 MiB, B300 SXM6 AC 275040 MiB, GB200 189471 MiB, GB300 284208 MiB, RTX
    # PRO 6000 Server 97887 MiB). NVML names: the same logs. pci.ids 2026.08.22: 0x2901 GB100 [B200],
    # 0x2941 GB100 [HGX GB200], 0x3182 GB110 [B300 SXM6 AC], 0x31c2 and 0x31c3 GB110 [GB300], 0x2bb5
    # GB202GL [RTX PRO 6000 Blackwell Server Edition]. 0x2909 [HGX B200 168GB] is another memory size
    # and no SKU here (an unknown B200: the family's floors with a notice).
    # Default power limits: DCGM's targeted power targets one watt under the part's limit where the
    # limit is round (diag-skus.yaml.in: B200 0x2901 1000.00, B300 0x3182 1099.00, 0x2941 1199.00,
    # GB300 NVL 0x31c2 1399.00, 0x2bb5 "PG153 SKU 210" 600.00).
    # HBM: DCGM's measurement scaled to nodeqc's copy (`_from_dcgm_hbm`): B200 0x2901 floor 4,072,500
    # MB/s from ~5,430,000 measured; B300 0x3182 4,623,360 from 6,164,480; GB300 NVL 0x31c2 4,522,500
    # from 6,030,000; RTX PRO 6000 Server 0x2bb5 1,110,000 from 1,480,000. GB200: DCGM's 0x2941 entry
    # ("B200 DevId 10DE", 3,470,000 measured, sm_stress at 0.4 of the B200's) reads as an early
    # board; the B200's figure stands for it (the same GB100 die and 8 TB/s of HBM3e, datasheets).
    # Pinned host copies: B200 and B300 sit on PCIe Gen5 hosts (a Gen5 link's figure). GB200 and
    # GB300 reach Grace over NVLink-C2C, far faster than PCIe; nodeqc keeps the Gen5 figure as a
    # conservative floor until measured (Azure's GB200 check keeps 48 GB/s: azurehpc-health-checks
    # conf/nd128isr_ndr_gb200_v6.conf, check_gpu_bw 48 335).
    # HGX B200 datasheet per GPU: FP64 37, FP32 75, TF32 1100, FP16/BF16 2250, FP8 4500, FP6 4500,
    # FP4 9000 TFLOP/s dense; 1000 W.
    _sku("b200-sxm-180gb", "b200", "B200 SXM 180GB", "sxm", (0x2901,), ("NVIDIA B200",),
         179.06, 1000,
         _estimate({"fp64": 37, "fp32": 75, "tf32": 1100, "fp16": 2250, "bf16": 2250, "fp8": 4500}),
         1965, _from_dcgm_hbm(5_430_000), 5,
         "estimate: HGX B200 datasheet peaks x the H100 SXM5's measured fraction of peak; DCGM "
         "(diag-skus.yaml.in, B200 0x2901): targeted power 1000 W, HBM floor 4,072,500 MB/s",
         not_burned=("fp6", "fp4")),
    # GB200 NVL72 datasheet per GPU (72): FP64 45, TF32 1250, FP16/BF16 2500, FP8/FP6 5000, FP4 10000
    # dense; FP32 taken as the B200's 75 (not given per GPU). 1200 W (DCGM 0x2941: 1199.00).
    _sku("gb200-186gb", "b200", "GB200 (Grace Blackwell superchip GPU) 186GB", "sxm", (0x2941,), ("NVIDIA GB200",),
         185.03, 1200,
         _estimate({"fp64": 45, "fp32": 75, "tf32": 1250, "fp16": 2500, "bf16": 2500, "fp8": 5000}),
         1965, _from_dcgm_hbm(5_430_000), 5,
         "estimate: GB200 NVL72 datasheet peaks per GPU x the H100 SXM5's measured fraction of peak; "
         "power limit 1200 W (DCGM diag-skus.yaml.in 0x2941 targets 1199 W); H2D/D2H a Gen5 floor "
         "(NVLink-C2C to Grace is faster)",
         not_burned=("fp6", "fp4")),
    # HGX B300 datasheet per GPU: FP64 1.25, FP32 75, TF32 1100, FP16/BF16 2250, FP8/FP6 4500, FP4
    # 13500 dense (Blackwell Ultra trades fp64 for fp4). 1100 W (DCGM 0x3182: 1099.00).
    _sku("b300-sxm6-270gb", "b300", "B300 SXM6 AC 270GB", "sxm", (0x3182,), ("NVIDIA B300 SXM6 AC", "NVIDIA B300*"),
         268.59, 1100,
         _estimate({"fp64": 1.25, "fp32": 75, "tf32": 1100, "fp16": 2250, "bf16": 2250, "fp8": 4500}),
         2032, _from_dcgm_hbm(6_164_480), 5,
         "estimate: HGX B300 datasheet peaks x the H100 SXM5's measured fraction of peak; DCGM "
         "(diag-skus.yaml.in, B300 0x3182): targeted power 1099 W, HBM floor 4,623,360 MB/s",
         not_burned=("fp6", "fp4")),
    # GB300 NVL72 datasheet per GPU (72): FP64 1.39, TF32 1250, FP16/BF16 2500, FP8/FP6 5000, FP4 15000
    # dense; FP32 taken as the B300's 75. 1400 W (DCGM 0x31c2 "GB300 NVL Bianca": 1399.00).
    _sku("gb300-279gb", "b300", "GB300 (Grace Blackwell Ultra superchip GPU) 279GB", "sxm", (0x31C2, 0x31C3),
         ("NVIDIA GB300",),
         277.55, 1400,
         _estimate({"fp64": 1.39, "fp32": 75, "tf32": 1250, "fp16": 2500, "bf16": 2500, "fp8": 5000}),
         2032, _from_dcgm_hbm(6_030_000), 5,
         "estimate: GB300 NVL72 datasheet peaks per GPU x the H100 SXM5's measured fraction of peak; "
         "DCGM (diag-skus.yaml.in, GB300 NVL 0x31c2): targeted power 1399 W, HBM floor 4,522,500 MB/s; "
         "H2D/D2H a Gen5 floor (NVLink-C2C to Grace is faster)",
         not_burned=("fp6", "fp4")),
    # RTX PRO 6000 Blackwell Server Edition datasheet: FP32 120, tensor (dense) TF32 250, FP16/BF16
    # 500, FP8 1000, FP4 2000 TFLOP/s; fp64 at 1/64 of fp32 (no fp64 tensor cores: not burned, as
    # on the L40S); 96 GB GDDR7 at 1792 GB/s; up to 600 W (DCGM 0x2bb5: 600.00); PCIe Gen5 x16.
    _sku("rtx-pro-6000-server", "rtx-pro-6000", "RTX PRO 6000 Blackwell Server Edition 96GB", "pcie", (0x2BB5,),
         ("NVIDIA RTX PRO 6000 Blackwell Server Edition",),
         95.59, 600, _estimate({"fp32": 120, "tf32": 250, "fp16": 500, "bf16": 500, "fp8": 1000}),
         2617, _from_dcgm_hbm(1_480_000), 5,
         "estimate: RTX PRO 6000 Blackwell Server Edition datasheet peaks x the H100 SXM5's measured "
         "fraction of peak; DCGM (diag-skus.yaml.in 0x2bb5): targeted power 600 W, memory floor 1,110,000 MB/s",
         not_burned=("fp6", "fp4")),
    # ---- Ampere: gpu-fryer measured TF32 / BF16 130 / 270 on A100-SXM4-80GB and 106 / 224 on
    # A100-PCIe-40GB (REFERENCE.md); the 40 GB SXM4 and 80 GB PCIe parts share the chip, clocks and
    # power of their form. fp16 runs on the same tensor pipes as bf16 (datasheet: 312 both).
    _sku("a100-sxm4-40gb", "a100", "A100 SXM4 40GB", "sxm", (0x20B0,), ("NVIDIA A100-SXM4-40GB",),
         40.0, 400, {**_estimate({"fp64": 19.5, "fp32": 19.5}), "tf32": 130, "fp16": 270, "bf16": 270},
         1410, _estimate_hbm(1555), 4,
         "published: gpu-fryer A100-SXM4-80GB (tf32, bf16, fp16); fp64/fp32 and HBM estimated from "
         "datasheet peaks x the H100 SXM5's measured fraction of peak", estimated=("fp64", "fp32", "hbm")),
    _sku("a100-sxm4-80gb", "a100", "A100 SXM4 80GB", "sxm", (0x20B2,), ("NVIDIA A100-SXM4-80GB",),
         80.0, 400, {**_estimate({"fp64": 19.5, "fp32": 19.5}), "tf32": 130, "fp16": 270, "bf16": 270},
         1410, _estimate_hbm(2039), 4,
         "published: gpu-fryer A100-SXM4-80GB (tf32, bf16, fp16); fp64/fp32 and HBM estimated from "
         "datasheet peaks x the H100 SXM5's measured fraction of peak", estimated=("fp64", "fp32", "hbm")),
    # Two device ids carry the 40 GB PCIe card (pci.ids: 0x20b1 and 0x20f1 "A100 PCIe 40GB"). At 250 W
    # it sustains 224/270 of the SXM4's tensor rate (gpu-fryer); fp64/fp32 scaled the same way.
    _sku("a100-pcie-40gb", "a100", "A100 PCIe 40GB", "pcie", (0x20B1, 0x20F1), ("NVIDIA A100-PCIE-40GB",),
         40.0, 250, {**_estimate({"fp64": 19.5 * 224 / 270, "fp32": 19.5 * 224 / 270}),
                     "tf32": 106, "fp16": 224, "bf16": 224},
         1410, _estimate_hbm(1555), 4,
         "published: gpu-fryer A100-PCIe-40GB (tf32, bf16, fp16); fp64/fp32 and HBM estimated",
         estimated=("fp64", "fp32", "hbm")),
    _sku("a100-pcie-80gb", "a100", "A100 PCIe 80GB", "pcie", (0x20B5,), ("NVIDIA A100 80GB PCIe",),
         80.0, 300, {**_estimate({"fp64": 19.5 * 224 / 270, "fp32": 19.5 * 224 / 270}),
                     "tf32": 106, "fp16": 224, "bf16": 224},
         1410, _estimate_hbm(1935), 4,
         "published: gpu-fryer A100-PCIe-40GB (same chip and clocks; 300 W, so at least as fast); "
         "fp64/fp32 and HBM estimated", estimated=("fp64", "fp32", "hbm")),
    # ---- Ada, Turing, Volta
    _sku("l40s", "l40s", "L40S 48GB", "pcie", (0x26B9,), ("NVIDIA L40S",),
         45.0, 350, _estimate({"fp32": 91.6, "tf32": 183, "fp16": 362, "bf16": 362, "fp8": 733}),
         2520, _estimate_hbm(864), 4,
         "estimate: datasheet peaks (L40S) x the H100 SXM5's measured fraction of peak"),
    # A 70 W T4 sustains far less than its boost peak (8.1 fp32, 65 fp16): the H100's fraction of
    # peak does not carry over to a card this power-limited. nodeqc's estimate of 55% (fp32) and
    # 40% (fp16) of peak, pending a measurement.
    _sku("t4", "t4", "Tesla T4 16GB", "pcie", (0x1EB8,), ("Tesla T4", "NVIDIA T4", "NVIDIA Tesla T4"),
         15.0, 70, {"fp32": round(8.1 * 0.55, 1), "fp16": round(65 * 0.40, 1)},
         1590, _estimate_hbm(320), 3,
         "estimate: datasheet peaks x 0.55 (fp32) and 0.40 (fp16), a 70 W card under a sustained burn"),
    # V100 SXM2 datasheet: FP64 7.8, FP32 15.7, FP16 tensor 125, 900 GB/s, 300 W; PCIe: 7, 14, 112,
    # 900 GB/s, 250 W. pci.ids: SXM2 16GB 0x1db1 and 0x1df5, SXM2 32GB 0x1db5, PCIe 16GB 0x1db4,
    # PCIe 32GB 0x1db6.
    _sku("v100-sxm2-16gb", "v100", "Tesla V100 SXM2 16GB", "sxm", (0x1DB1, 0x1DF5), ("Tesla V100-SXM2-16GB",),
         16.0, 300, _estimate({"fp64": 7.8, "fp32": 15.7, "fp16": 125}), 1530, _estimate_hbm(900), 3,
         "estimate: datasheet peaks (V100 SXM2) x the H100 SXM5's measured fraction of peak"),
    _sku("v100-sxm2-32gb", "v100", "Tesla V100 SXM2 32GB", "sxm", (0x1DB5,), ("Tesla V100-SXM2-32GB",),
         32.0, 300, _estimate({"fp64": 7.8, "fp32": 15.7, "fp16": 125}), 1530, _estimate_hbm(900), 3,
         "estimate: datasheet peaks (V100 SXM2) x the H100 SXM5's measured fraction of peak"),
    _sku("v100-pcie-16gb", "v100", "Tesla V100 PCIe 16GB", "pcie", (0x1DB4,), ("Tesla V100-PCIE-16GB",),
         16.0, 250, _estimate({"fp64": 7.0, "fp32": 14.0, "fp16": 112}), 1380, _estimate_hbm(900), 3,
         "estimate: datasheet peaks (V100 PCIe) x the H100 SXM5's measured fraction of peak"),
    _sku("v100-pcie-32gb", "v100", "Tesla V100 PCIe 32GB", "pcie", (0x1DB6,), ("Tesla V100-PCIE-32GB",),
         32.0, 250, _estimate({"fp64": 7.0, "fp32": 14.0, "fp16": 112}), 1380, _estimate_hbm(900), 3,
         "estimate: datasheet peaks (V100 PCIe) x the H100 SXM5's measured fraction of peak"),
)

# Why the burn leaves a dtype of `not_burned` out (stress.burn's "not run").
NOT_BURNED_REASON = "nodeqc's burn has no fp4/fp6 matrix product yet"

BY_KEY: dict[str, Sku] = {s.key: s for s in SKUS}
BY_DEVICE_ID: dict[int, Sku] = {i: s for s in SKUS for i in s.pci_device_ids}
assert len(BY_DEVICE_ID) == sum(len(s.pci_device_ids) for s in SKUS), "a PCI device id names two SKUs"

# How far a reported memory size may be from the SKU's (NVML reserves a little; 16 and 32 GB parts
# of one name differ by half).
_MEMORY_TOLERANCE = 0.05


def family_skus(family: str) -> list[Sku]:
    return [s for s in SKUS if s.family == family]


def identify(gpu: Any) -> Sku | None:
    """The SKU of a GPU (nodeqc.backends.base.GpuInfo), or None when nodeqc does not know it.

    The PCI device id decides when there is one. Without it (an older capture, a backend that could
    not read it), the NVML name picks the candidates and the memory size and default power limit
    break ties; a GPU that still matches several SKUs, or none, is unknown.
    """
    device_id = _int(getattr(gpu, "pci_device_id", None))
    if device_id is not None:
        return BY_DEVICE_ID.get(device_id)
    name = getattr(gpu, "name", None)
    if not isinstance(name, str):
        return None
    candidates = [s for s in SKUS if s.matches_name(name)]
    memory = _int(getattr(gpu, "memory_total_bytes", None))
    if memory is not None and len(candidates) > 1:
        gib = memory / 1024 ** 3
        candidates = [s for s in candidates if abs(gib - s.memory_gib) <= _MEMORY_TOLERANCE * s.memory_gib]
    power = getattr(gpu, "power_default_limit_w", None)
    if isinstance(power, (int, float)) and len(candidates) > 1:
        candidates = [s for s in candidates if abs(power - s.default_power_w) <= 1]
    return candidates[0] if len(candidates) == 1 else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def device_id_from_nvml(pci_device_id: int) -> int | None:
    """NVML's pciDeviceId packs the device id above the vendor id (0x233010de); None if not NVIDIA's."""
    if pci_device_id & 0xFFFF != NVIDIA_VENDOR_ID:
        return None
    return pci_device_id >> 16
