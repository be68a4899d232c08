"""Why a GPU was slow: a diagnosis of a performance failure from the telemetry of its own step.

A rate below its floor says that something is wrong, not what. Telemetry of the same window says
which it is, and each answer sends the technician somewhere else:
- another process computed on the GPU (the figures are not the GPU's own: an ERROR of the run);
- the enforced power limit was lowered below the default (a setting: restore it);
- clocks were held down by HW slowdown or power brake (PSUs, power cables), or by heat (cooling);
- clocks were low with no throttle reason (locked clocks), or the GPU hit its power limit at a low
  clock (draws more power per clock than its SKU);
- the PCIe link ran narrow or slow under the copies;
- none of these: the GPU was slow at full clocks, i.e. it computes (or moves) less per cycle than
  its SKU: a defect of the part (RMA).

`diagnose` is a pure function of plain readings (`Observed`, from a step's telemetry window), the
SKU's healthy figures (nodeqc.core.skus) and how far the measure fell short; `apply` puts its answer into
a check's result: the message leads with it, the code becomes the cause's (whose remediation fits),
and evidence["diagnosis"] holds the readings it was drawn from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from nodeqc.backends.base import GpuInfo, GpuProcess
from nodeqc.checks.processes import describe
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.na import NA, is_na
from nodeqc.work.telemetry import GpuTelemetry

# A loaded SM clock at or above this share of the SKU's healthy loaded clock is "full": the
# calibration rule (nodeqc/spec/calibration.py) warns about 10% below healthy, so a clock 10% low alone
# would explain a warning (nodeqc's choice, in step with that band).
FULL_CLOCK_SHARE = 0.9
# The memory clock does not boost: under load it sits at its maximum unless something holds it.
FULL_MEM_CLOCK_SHARE = 0.95
# A throttle reason asserted for at least this share of the loaded time explains a slow rate; a
# brief assertion cannot move a sustained rate by 10% (nodeqc's choice).
THROTTLE_SHARE = 0.1
# An enforced power limit below this share of the default was lowered on purpose: limits read
# back within a watt or two of what was set (nodeqc's choice, with room for rounding).
LOWERED_LIMIT_SHARE = 0.95
# Power within this share of the enforced limit means the GPU was running against it.
AT_LIMIT_SHARE = 0.9
# The cap bit asserted for at least this share of the loaded time, at a mean power of at least this
# share of the limit, is the limit holding the clock though the mean power is under AT_LIMIT_SHARE
# (a span with no reading a second in: its mean takes in the ramp; see diagnose). Most of the time,
# near the limit: nodeqc's choice, below the H200 fp8 span's 0.88 of its limit (all its readings).
CAP_BIT_SHARE = 0.5
CAP_BIT_POWER_SHARE = 0.8
# A rate per clock at or above this share of the SKU's is no defect: the calibration rule
# (nodeqc/spec/calibration.py, WARN_FRACTION) calls a healthy part's spread anything down to 90%, so a
# rate that its clock explains to within that band is the clock's, not the part's compute.
PER_CLOCK_HEALTHY_SHARE = 0.9
# What a WARN's diagnosis advises in place of an RMA: a warning is a rate in the band a healthy
# part's spread reaches (nodeqc/spec/calibration.py); one run of it is no proof of a defect.
CONFIRM = "re-run to confirm"

# The measures whose shortfall a diagnosis explains, and what the step was doing (for the message).
PERFORMANCE_CODES: dict[str, str] = {
    "BURN_SLOW": "compute", "BURN_OUTLIER": "compute", "BURN_POWER_LOW": "power", "POWER_TARGET_LOW": "power",
    "BURN_IN_DRIFT": "compute",
    "HBM_SLOW": "memory", "HBM_OUTLIER": "memory",
    "PCIE_BW_LOW": "pcie", "PCIE_BW_OUTLIER": "pcie",
    "P2P_SLOW": "p2p", "P2P_OUTLIER": "p2p", "P2P_PAIR_SLOW": "p2p", "NCCL_SLOW": "p2p", "NCCL_NET_SLOW": "p2p",
}
THROTTLE_CODES = {"hw_slowdown": "THROTTLE_HW_SLOWDOWN", "power_brake": "THROTTLE_POWER_BRAKE",
                  "hw_thermal": "THROTTLE_THERMAL", "sw_thermal": "THROTTLE_THERMAL"}
_REASON_WORDS = {"hw_slowdown": "HW slowdown", "power_brake": "power brake", "hw_thermal": "HW thermal slowdown",
                 "sw_thermal": "thermal slowdown"}


@dataclass(frozen=True)
class Observed:
    """One GPU during one step, as telemetry saw it (means are over the loaded samples)."""

    subject: str
    loaded_s: float = 0.0
    sm_clock_mhz: Any = None
    mem_clock_mhz: Any = None
    max_mem_clock_mhz: Any = None
    power_w: Any = None
    power_limit_w: Any = None  # enforced
    default_power_limit_w: Any = None
    throttle_s: dict[str, float] = field(default_factory=dict)
    temp_max_c: Any = None
    pcie: tuple[Any, Any] | None = None  # (gen, width) at its narrowest under load
    pcie_max: tuple[Any, Any] | None = None
    other_processes: list[dict[str, Any]] = field(default_factory=list)
    # The clock-event reasons were read in loaded samples: a cap bit's absence then says something.
    reasons_read: bool = False
    # (NVLinks up when the step began, the GPU's NVLinks); None where either was not read.
    nvlinks: tuple[int, int] | None = None

    @classmethod
    def of(cls, gpu: GpuInfo, window: GpuTelemetry | None, nvlinks_expected: Any = None) -> "Observed":
        """`nvlinks_expected`: the links the profile promises (health.nvlink's count); None: the GPU's own."""
        if window is None:
            return cls(gpu.subject)
        links = gpu.nvlink_count if nvlinks_expected is None else nvlinks_expected

        def val(x: Any) -> Any:
            return None if is_na(x) else x

        pcie = None
        if window.pcie_loaded_width.count:
            pcie = (val(window.pcie_loaded_gen.min), val(window.pcie_loaded_width.min))
        return cls(
            subject=gpu.subject, loaded_s=window.loaded_s,
            sm_clock_mhz=val(window.loaded_sm_clock_mhz.mean), mem_clock_mhz=val(window.loaded_mem_clock_mhz.mean),
            max_mem_clock_mhz=val(gpu.max_mem_clock_mhz), power_w=val(window.load_power_w.mean),
            power_limit_w=val(window.power_limit_w) if not is_na(window.power_limit_w) else val(gpu.power_limit_w),
            default_power_limit_w=val(gpu.power_default_limit_w), throttle_s=dict(window.throttle_s),
            temp_max_c=val(window.stats["temp_c"].max), pcie=pcie,
            pcie_max=(val(gpu.pcie_max_gen), val(gpu.pcie_max_width)),
            other_processes=list((window.other_processes or {}).values()),
            reasons_read=window.loaded_reason_samples > 0,
            nvlinks=None if is_na(window.nvlink_active_before) or is_na(links) or not links
            else (window.nvlink_active_before, links))


@dataclass(frozen=True)
class Expected:
    """What a healthy GPU of this SKU does (nodeqc.core.skus); None where nodeqc does not know the SKU."""

    sku: str | None = None
    sm_clock_mhz: float | None = None  # the SKU's loaded clock over a whole burn
    healthy: dict[str, float] = field(default_factory=dict)  # bf16, ..., hbm, h2d, d2h
    # The lowest loaded SM clock a healthy part holds AT ITS POWER LIMIT under the step's dtypes
    # (Sku.loaded_clock): half precision holds the limit far below the whole burn's mean.
    capped_sm_clock_mhz: float | None = None
    load: str | None = None  # the step's dtypes ("fp16", "fp64, fp32, ..."), for the message
    # The step's dtypes (and "hbm") whose healthy figure is an estimate (nodeqc.core.skus.Sku.estimated):
    # a floor made of one may be wrong by more than its band, so nothing is blamed on the part.
    estimated: tuple[str, ...] = ()

    @classmethod
    def of(cls, gpu: GpuInfo, dtypes: Iterable[str] | None = None) -> "Expected":
        """`dtypes`: what the step computed in (the clock a healthy part holds depends on it)."""
        from nodeqc.core.skus import identify

        sku = identify(gpu)
        if sku is None:
            return cls()
        chosen = list(dtypes or [])
        return cls(sku.name, sku.healthy_sm_mhz, {**sku.healthy_tflops, "hbm": sku.healthy_hbm_gbps,
                                                  "h2d": sku.healthy_h2d_gbps, "d2h": sku.healthy_d2h_gbps},
                   sku.loaded_clock(chosen) if chosen else None, ", ".join(chosen) or None,
                   tuple(f for f in [*chosen, "hbm"] if f in sku.estimated))

    def full_clock(self, at_power_limit: bool) -> tuple[float | None, str]:
        """The loaded clock a healthy part of the SKU holds, and how to say where: at its power limit
        the step's dtypes set it (a healthy H100 SXM5 holds 1331 MHz under fp16 at 700 W); off the
        limit nothing holds it below the SKU's clock."""
        if at_power_limit and self.capped_sm_clock_mhz and self.sm_clock_mhz and \
                self.capped_sm_clock_mhz < self.sm_clock_mhz:
            return self.capped_sm_clock_mhz, f"holds at its power limit under {self.load}"
        return self.sm_clock_mhz, "sustains"

    def share(self, measured: dict[str, Any], fallback: dict[str, Any] | None = None) -> float | None:
        """The worst of the measures as a share of the SKU's healthy figure, or of `fallback` (the
        node's medians) for a SKU nodeqc does not know; None when neither says."""
        reference = self.healthy or fallback or {}
        shares = [v / reference[k] for k, v in measured.items()
                  if isinstance(v, (int, float)) and isinstance(reference.get(k), (int, float)) and reference[k] > 0]
        return min(shares) if shares else None


@dataclass(frozen=True)
class Diagnosis:
    # cotenant | power_limit | throttle | clocks_low | power_bound | clock_bound | power_low | link | defect | unexplained
    cause: str
    message: str
    code: str | None  # the cause's code; None: the measure's own code stands
    error: bool = False  # the figures are not the GPU's own: an ERROR of the run, not a FAIL
    readings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mhz(x: float) -> str:
    return f"{x:,.0f} MHz"


def _share(obs: Observed, reasons: tuple[str, ...]) -> float:
    if obs.loaded_s <= 0:
        return 0.0
    return min(1.0, sum(obs.throttle_s.get(r, 0.0) for r in reasons) / obs.loaded_s)


def describe_processes(processes: list[dict[str, Any]]) -> str:
    """Telemetry's other processes (GpuTelemetry.other_processes), said as stress.gpu_free says them."""
    return describe([GpuProcess(p["pid"], p.get("name") or NA, p.get("used_bytes") or NA) for p in processes])


def diagnose(kind: str, obs: Observed, expected: Expected, rate_share: float | None,
             during: str = "the burn", warn: bool = False) -> Diagnosis:
    """Why a measure of `kind` (compute | power | memory | pcie | p2p) fell short. `rate_share`: the measure
    as a share of what a healthy part of the SKU does (or of the node's median), None if unknown.
    `warn`: the result only warns, and a warning never advises an RMA (it says "re-run to confirm");
    nor does a shortfall against a floor that is an estimate (Expected.estimated), which says so."""
    readings = {k: v for k, v in asdict(obs).items() if k not in ("subject", "reasons_read")}
    estimated = [f for f in expected.estimated if (f == "hbm") == (kind == "memory")] \
        if kind in ("compute", "power", "memory") else []
    readings.update({"sku": expected.sku, "healthy_sm_clock_mhz": expected.sm_clock_mhz,
                     "rate_share": None if rate_share is None else round(rate_share, 3)})
    if estimated:
        readings["estimated_floors"] = estimated
    clock = obs.sm_clock_mhz
    no_rma = warn or bool(estimated)
    guessed = (f"; the floor of {', '.join(estimated)} is an estimate (datasheet-derived, not measured on a healthy "
               f"{expected.sku}), so the part is not to blame on it alone") if estimated else ""

    def rma(fail_text: str) -> str:
        """fail_text where an RMA may be advised; else what to do instead."""
        return CONFIRM if no_rma else fail_text

    def found(cause: str, message: str, code: str | None, error: bool = False) -> Diagnosis:
        return Diagnosis(cause, message + guessed, code, error, readings)

    if obs.other_processes:
        return found("cotenant", f"another process used this GPU during {during}: "
                     f"{describe_processes(obs.other_processes)}; the figures are not the GPU's own",
                     "GPU_IN_USE", error=True)
    limit, default = obs.power_limit_w, obs.default_power_limit_w
    # Against its power limit: drawing close to it, or (with no power figure) capped by it. A cap bit
    # beside a mean power far below the limit is not the limit holding it.
    drawing = obs.power_w is not None and bool(limit)
    capped = (obs.power_w >= AT_LIMIT_SHARE * limit) if drawing else _share(obs, ("sw_power_cap",)) >= THROTTLE_SHARE
    if capped and drawing and obs.reasons_read and _share(obs, ("sw_power_cap",)) < THROTTLE_SHARE:
        # Near the limit with the driver not saying it holds the clock: the work draws that much at
        # its clock, the limit does not hold it (fp32 on the real H100 SXM5 and H200 drew 0.97 of the
        # limit at their maximum clock with the cap bit in 0.04-0.35 of its samples; the copies drew
        # 460-550 W with none: tests/fixtures/real-2026-11-2*).
        capped = False
    if drawing and not capped:
        # A span too short for a reading a second into it (telemetry.POWER_SETTLE_S) is judged on
        # all of its readings, its ramp up to the limit too: the cap asserted for most of it, near
        # the limit, is the limit holding it (shared/measurements/2026-11-26, H200 fp8: sw_power_cap
        # in all 12 loaded samples, 616 W mean of them all, 661 W median, 674 W from a second in).
        capped = _share(obs, ("sw_power_cap",)) >= CAP_BIT_SHARE and obs.power_w >= CAP_BIT_POWER_SHARE * limit
    healthy, holds = expected.full_clock(capped)
    readings["healthy_sm_clock_mhz"] = healthy  # the one this diagnosis compared with
    if limit and default and limit < LOWERED_LIMIT_SHARE * default and capped and kind != "pcie":
        return found("power_limit", f"power-capped at {limit:g} W: the enforced limit is below the default "
                     f"{default:g} W (someone lowered it; restore it with nvidia-smi -i {obs.subject.removeprefix('gpu')} "
                     f"-pl {default:g})",
                     "POWER_LIMIT_LOWERED")
    for reasons in (("hw_slowdown", "power_brake"), ("hw_thermal", "sw_thermal")):
        if kind != "pcie" and _share(obs, reasons) >= THROTTLE_SHARE:
            reason = max(reasons, key=lambda r: obs.throttle_s.get(r, 0.0))
            held = f"clocks were held near {_mhz(clock)}" if clock else "clocks were held down"
            where = {"hw_slowdown": "check PSUs and power cables", "power_brake": "check PSUs and the node's power budget",
                     }.get(reason, f"check cooling (fans, airflow, heatsink){_at(obs.temp_max_c)}")
            return found("throttle", f"slow because {held} by {_REASON_WORDS[reason]} for "
                         f"{_share(obs, reasons):.0%} of the load: {where}", THROTTLE_CODES[reason])
    if kind == "pcie":
        return _link(obs, found)
    if kind == "memory":
        return _memory(obs, rate_share, found, "its SKU's" if expected.sku else "the node's median", no_rma)
    if kind == "p2p":  # copies between GPUs ride the links, not the SM clock
        if obs.nvlinks and obs.nvlinks[0] < obs.nvlinks[1]:
            # The 2026-11-28 advice review: "no cause on this GPU" stood beside its links down.
            up, links = obs.nvlinks
            return found("link", f"{up} of this GPU's {links} NVLinks were up when the step began: its copies rode "
                         "the links left (`nvidia-smi nvlink -s` shows which are down; bring every link up before "
                         "judging the bandwidth)", None)
        return found("unexplained", f"no cause on this GPU in telemetry ({_readings(obs)}): "
                     "the links between GPUs are the suspects", None)
    if clock and healthy and clock < FULL_CLOCK_SHARE * healthy:
        low = f"{_mhz(clock)}, {clock / healthy:.2f} of the {_mhz(healthy)} a healthy {expected.sku} {holds}"
        if capped:
            at_limit = f"its {limit:g} W power limit" if limit else "its power limit"
            return found("power_bound", f"slow because the GPU reached {at_limit} at only {low}: "
                         f"it draws more power per clock than its SKU (check cooling and power delivery; {rma('RMA if it persists')})",
                         "CLOCKS_LOW")
        return found("clocks_low", f"slow because the SM clock averaged {low}, with no throttle reason to explain it: "
                     "look for locked clocks (nvidia-smi -rgc resets them)", "CLOCKS_LOW")
    if kind == "power":
        drew = "little power" if obs.power_w is None else f"{obs.power_w:.0f} W" + (f" of the {limit:g} W limit" if limit else "")
        # "Full" only where the SKU's clock says so (an unknown SKU, or no clock reading, claims nothing).
        at = f" at full clocks ({_mhz(clock)})" if clock and healthy else f" at {_mhz(clock)}" if clock else ""
        rate = f", the rate {rate_share:.2f} of its SKU's" if rate_share is not None else ""
        if rate_share is not None and rate_share >= PER_CLOCK_HEALTHY_SHARE and clock and healthy:
            # Computing at a healthy part's rate and clock on less power is no starved GPU (one would
            # throttle): the reading is the suspect (the 2026-11-28 advice review: this said RMA).
            return found("power_reading", f"drew {drew}{at}{rate}, with no throttling: a GPU computing at full "
                         "rate on that little power is not starved of it; the power reading is the suspect", None)
        return found("power_low", f"drew {drew}{at}{rate}, with no throttling: a GPU that cannot draw "
                     f"its power (check its power cables and the PSUs; {rma('RMA if it persists')})", None)
    if clock and healthy and rate_share is not None:
        # The healthy clock is a floor (the dtype's own at the power limit, or the lowest of the
        # step's): a clock above it earns no credit, one a little under it explains that much of the
        # shortfall.
        per_clock = rate_share / min(1.0, clock / healthy)
        if rate_share >= PER_CLOCK_HEALTHY_SHARE:  # as fast as a healthy part's spread: the floor is not its SKU's
            return found("unexplained", f"the GPU computes {rate_share:.2f} of its SKU's healthy rate at "
                         f"{_mhz(clock)}, within a healthy part's spread: the profile's floor is above its SKU's "
                         "(check the profile is this SKU's)", None)
        if per_clock >= PER_CLOCK_HEALTHY_SHARE:  # its clock explains the rate: nothing per clock is missing
            return found("clock_bound", f"slow at {_mhz(clock)}, {clock / healthy:.2f} of the {_mhz(healthy)} a healthy "
                         f"{expected.sku} {holds}: per clock it computes {per_clock:.2f} of its SKU's rate, so its "
                         f"clock explains the rate (check cooling and power delivery; {CONFIRM})", None)
        return found("defect", f"slow at full clocks ({_mhz(clock)}): the GPU computes {per_clock:.2f} of its SKU's rate per clock ("
                     + (f"a compute defect if it persists: {CONFIRM})" if no_rma else "compute defect: re-run once to confirm, then RMA)"), None)
    if clock:
        return found("defect", f"slow at {_mhz(clock)} with no throttling, lowered power limit or other process "
                     f"({_readings(obs)}): a compute defect is likely ({rma('RMA')})", None)
    return found("unexplained", "no telemetry under load to explain it", None)


def _at(temp: Any) -> str:
    return f"; it peaked at {temp:g} C" if temp is not None else ""


def _readings(obs: Observed) -> str:
    parts = []
    if obs.sm_clock_mhz:
        parts.append(f"SM clock {_mhz(obs.sm_clock_mhz)}")
    if obs.power_w is not None and obs.power_limit_w:
        parts.append(f"power {obs.power_w:.0f} W of {obs.power_limit_w:g} W")
    parts.append("no throttling")
    return ", ".join(parts)


def _memory(obs: Observed, rate_share: float | None, found: Any, of: str, no_rma: bool = False) -> Diagnosis:
    """`of`: what rate_share is a share of (the SKU's healthy bandwidth, or the node's median where
    nodeqc does not know the SKU); `no_rma`: a warning, or an estimated floor, advises no RMA."""
    rma = CONFIRM if no_rma else "RMA"
    mem, top = obs.mem_clock_mhz, obs.max_mem_clock_mhz
    if mem and top and mem < FULL_MEM_CLOCK_SHARE * top:
        return found("clocks_low", f"slow because the memory clock averaged {_mhz(mem)} of its {_mhz(top)}, "
                     "with no throttle reason: look for locked memory clocks (nvidia-smi -rmc resets them)", "CLOCKS_LOW")
    if rate_share is not None and rate_share >= 1:
        # As fast as its reference: below the floor, but not slower than a healthy part (or the node's
        # other GPUs). Nothing on this GPU to blame: never "a memory defect (RMA)".
        return found("unexplained", f"the memory moves {rate_share:.2f} of {of} bandwidth, no slower than that: "
                     "the profile's floor is above it (check the profile is this SKU's)", None)
    share = f"{rate_share:.2f} of {of} bandwidth" if rate_share is not None else "less than its SKU"
    if not mem:  # a step too short for a reading under load: say so, claim nothing about clocks
        return found("defect", f"the memory moves {share} with no other process, power cap or throttling seen "
                     f"(no memory-clock reading under load): a memory defect is likely ({rma})", None)
    if not top:  # no maximum to hold the clock against: say what it was, claim nothing about it
        return found("defect", f"the memory moves {share} at a memory clock of {_mhz(mem)} (its maximum unknown) with "
                     f"no other process, power cap or throttling seen: a memory defect is likely ({rma})", None)
    return found("defect", f"slow at full memory clock ({_mhz(mem)}): the memory moves {share} "
                 + (f"(a memory defect if it persists: {CONFIRM})" if no_rma else "(memory defect: re-run once to confirm, then RMA)"), None)


def _link(obs: Observed, found: Any) -> Diagnosis:
    if obs.pcie and obs.pcie_max and None not in obs.pcie + obs.pcie_max:
        (gen, width), (max_gen, max_width) = obs.pcie, obs.pcie_max
        if width < max_width or gen < max_gen:
            return found("link", f"slow because the link ran at Gen{gen:g} x{width:g} under the copies "
                         f"(max Gen{max_gen:g} x{max_width:g})", "PCIE_WIDTH" if width < max_width else "PCIE_GEN")
        return found("defect", f"slow at the full link (Gen{gen:g} x{width:g}): look at the riser, retimer and "
                     "the GPU's NUMA placement", None)
    return found("unexplained", "no link reading under load to explain it", None)


def apply(result: CheckResult, diagnosis: Diagnosis) -> CheckResult:
    """Lead the result's message with the diagnosis, give it the cause's code (and, for another
    process on the GPU, make it an ERROR of the run), and keep the readings as evidence."""
    result.evidence["diagnosis"] = {**diagnosis.to_dict(), "measure_code": result.code}
    result.message = f"{diagnosis.message}; {result.message}"
    if diagnosis.code:
        result.code = diagnosis.code
    if diagnosis.error:
        result.verdict = Verdict.ERROR
    return result


def explain(result: CheckResult, obs: Observed, expected: Expected, rate_share: float | None,
            during: str) -> CheckResult:
    """Diagnose a result that fell short on a performance measure; a passing result only notes
    another process that used the GPU meanwhile."""
    kind = PERFORMANCE_CODES.get(result.code or "")
    if result.verdict in (Verdict.WARN, Verdict.FAIL) and kind and _seen(obs):  # no telemetry: nothing to say
        return apply(result, diagnose(kind, obs, expected, rate_share, during, result.verdict is Verdict.WARN))
    return _note_others(result, obs.other_processes, during)


def _note_others(result: CheckResult, processes: list[dict[str, Any]], during: str) -> CheckResult:
    """A passing result notes the other processes that used its GPUs meanwhile (and nothing else does)."""
    if result.verdict is Verdict.PASS and processes:
        result.message += f"; another process used this GPU during {during}: {describe_processes(processes)}"
        result.evidence["other_processes"] = processes
    return result


def _seen(obs: Observed) -> bool:
    """Telemetry saw something of this GPU during the step, or its NVLinks were down as it began (read from
    the counters: a short step, an all-reduce of a second, may hold no telemetry sample)."""
    return bool(obs.loaded_s > 0 or obs.sm_clock_mhz is not None or obs.power_w is not None or obs.other_processes
                or (obs.nvlinks and obs.nvlinks[0] < obs.nvlinks[1]))


def explain_node(result: CheckResult, observations: list[Observed], expected: Expected, during: str) -> CheckResult:
    """A node-wide result (all-reduce, slow pairs): the first GPU whose telemetry explains it (one with
    another process on it before any other)."""
    if result.verdict not in (Verdict.WARN, Verdict.FAIL) or result.code not in PERFORMANCE_CODES \
            or not any(_seen(o) for o in observations):
        return _note_others(result, [p for o in observations for p in o.other_processes], during)
    # A GPU-to-GPU diagnosis is a cause on that GPU or "unexplained". Another process on any GPU
    # outranks the others' causes, as it does on one GPU: the node's figures are not its own.
    diagnosed = [(obs, diagnose("p2p", obs, expected, None, during)) for obs in observations]
    causes = [(obs, d) for obs, d in diagnosed if d.cause != "unexplained"]
    if causes:
        obs, d = min(causes, key=lambda found: not found[1].error)  # the first of the co-tenants, else the first
        return apply(result, Diagnosis(d.cause, f"{obs.subject}: {d.message}", d.code, d.error, d.readings))
    # (The SM clock is not looked at: copies between GPUs ride the links.)
    return apply(result, Diagnosis("unexplained", "no cause in any GPU's telemetry (no other process, lowered "
                                   "power limit or throttling): the links between GPUs are the suspects",
                                   None, False, {"gpus": [asdict(o) for o in observations]}))


def diagnose_drift(start: dict[str, Any], end: dict[str, Any], others: list[dict[str, Any]],
                   warn: bool = False) -> Diagnosis:
    """Why the burn-in's rate fell: `start` and `end` are the means of its first and last tenth
    (tflops, sm_clock_mhz, temp_c). `warn`: the result only warns, which never advises an RMA."""
    readings = {"start": start, "end": end, "other_processes": others}
    if others:
        return Diagnosis("cotenant", f"another process used this GPU during the burn-in: {describe_processes(others)}; "
                         "the figures are not the GPU's own", "GPU_IN_USE", True, readings)
    c0, c1, t0, t1 = start.get("sm_clock_mhz"), end.get("sm_clock_mhz"), start.get("temp_c"), end.get("temp_c")
    if c0 and c1 and c1 < DRIFT_CLOCK_SHARE * c0:
        if t0 is not None and t1 is not None and t1 - t0 >= DRIFT_TEMP_RISE_C:
            return Diagnosis("throttle", f"the SM clock fell from {_mhz(c0)} to {_mhz(c1)} as the temperature rose from "
                             f"{t0:g} to {t1:g} C: check cooling (fans, airflow, heatsink)", "THROTTLE_THERMAL", False, readings)
        return Diagnosis("clocks_low", f"the SM clock fell from {_mhz(c0)} to {_mhz(c1)} over the burn-in without a "
                         "matching rise in temperature: check PSUs and power cables, and for locked clocks", "CLOCKS_LOW",
                         False, readings)
    if not (c0 and c1):  # "clocks holding" is a reading, never a guess
        return Diagnosis("unexplained", "the rate fell, and the SM clock was not read at both ends of the burn-in, so "
                         "the cause is not known: re-run the burn-in with telemetry working (NVML answering)", None,
                         False, readings)
    return Diagnosis("defect", f"the rate fell at a steady {_mhz(c1)} with clocks holding: "
                     + (f"the GPU may be degrading under sustained load ({CONFIRM} with a longer burn-in)" if warn
                        else "the GPU is degrading under sustained load (RMA)"), None, False, readings)


# Burn-in drift: a clock that ends 5% below where it started, or a temperature 5 C up, is a change
# and not noise (nodeqc's choice; the measured 3-minute burn-in held its rate within 0.2% while the
# temperature rose 9 C: shared/measurements).
DRIFT_CLOCK_SHARE = 0.95
DRIFT_TEMP_RISE_C = 5.0
