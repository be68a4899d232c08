"""How a simulated GPU behaves under load, shared by the node's NVML (nodeqc.backends.sim.node) and
the worker processes that load it (nodeqc.backends.sim.compute): when its faults fire, what it
draws, where its clock is held and why, and when a co-tenant computes beside the work."""

from __future__ import annotations

import math
import statistics
from typing import Any

from nodeqc.backends.base import REASON_BITS, GpuProcess
from nodeqc.backends.sim.models import SimGpuModel

# Behaviour of the simulated physics, in simulated seconds.
RAMP_S = 5.0  # faulty counters grow over the first seconds of load
XID_AFTER_S = 2.0  # an injected XID arrives after this much load
LOST_AFTER_S = 3.0  # an injected `lost` GPU falls off the bus after this much load
LOADED = 0.3  # above this load the GPU counts as busy (PCIe trains up, utilisation high)
FULL_LOAD_POWER = 0.93  # a healthy GPU under full load draws this share of its limit (H200: 0.94, measured)
# NVML's power reading (nvmlDeviceGetPowerUsage) changes about ten times a second however fast it is
# polled, and holds between (about 45 distinct readings in 4 s on the H100 SXM5, driver 580.159.04:
# shared/measurements/README.md); the instantaneous field (NVML_FI_DEV_POWER_INSTANT) moves with the load.
NVML_POWER_PERIOD_S = 0.1
# SM clock under load as a share of its sustained clock, per throttle reason (a HW slowdown halves it
# or worse). The software power cap is how a healthy GPU reaches its sustained clock under full load
# (the H200 ran at 0.94 of its limit and 1794 MHz: shared/measurements), so it costs nothing more.
THROTTLE_CLOCK = {"sw_power_cap": 1.0, "sw_thermal": 0.8, "hw_thermal": 0.7, "hw_slowdown": 0.5, "power_brake": 0.5}
# A co-tenant: a bf16 PyTorch job beside the burn on a real H100 SXM5 left the burn 0.40-0.44 of its
# rate in every dtype (bf16 310.7 of 747.1, fp32 20.9 of 51.6: shared/measurements, cotenant log).
COTENANT_SHARE = 0.42
COTENANT_AFTER_S = 2.0  # a `cotenant_late` process starts after this much load
COTENANT = GpuProcess(48151, "python3", 1_050_000_000)  # pid, name and memory as a PyTorch job showed


# A GPU's temperature follows the power it draws, not its utilisation (the host copies at 98-100 %
# and 140 W left the real GPUs 5-20 C below their matmul temperature), in three parts:
# - within a sample (0.25 s): the die over its heatsink. Half a second into the first load the real
#   H100 SXM5 had risen 0.42-0.52 of what it rose over its whole quick run (five runs, median 0.52),
#   the H200 0.68-0.81 (four, median 0.71) (tests/fixtures/real-2026-11-2*/*quick*.telemetry.csv.gz:
#   the first sample over 400 W); as the load stopped it fell as far within a sample (79 to 63 C).
#   The time constant is an estimate, below the sampling period;
# - over seconds: the rest of the quick run's rise. A least-squares fit to the same runs fits 8 to
#   20 s about as well (a residual of 4.3 C either way); 16 s, within it, gives the burn-in below
#   the cooler first minute the real one had;
# - over minutes: the heatsink and the air. A 3-minute burn-in after a quick run rose from 61 to 70 C
#   (first minute's mean to last) and peaked at 71 C, on a machine whose quick run had peaked at 63 C
#   (shared/measurements/h100-burnin-3m.log, h100-quick.log, 2026-11-23): 8 C above the quick run's
#   peak after 4 minutes of load. SOAK_SHARE, as a share of the quick run's rise, gives the H100 twin
#   that (+8 C, and +6 C first minute to last); its time constant is an estimate (no real run was
#   longer than 4 minutes), and leaves an hour's load of the H100 twin at 79 C, the hottest real
#   quick runs' peaks (77 and 79 C), below the profile's warning (82 C).
THERMAL_TAUS_S = (0.2, 16.0, 120.0)
SOAK_SHARE = 0.42
QUICK_PEAK_LOADED_S = 40.0  # seconds of load before a real quick run's peak (39-49 loaded in all)


def thermal_shares(fast_share: float) -> tuple[float, float, float]:
    """Each thermal part's share of the rise a quick run shows (the GPU's load temperature less its
    idle): the fast part's as measured, the slow part's SOAK_SHARE, and the part over seconds the
    rest, so that the three together reach the load temperature after a quick run's load."""
    quick = 1.0 - SOAK_SHARE * (1.0 - math.exp(-QUICK_PEAK_LOADED_S / THERMAL_TAUS_S[2]))
    return fast_share, quick - fast_share, SOAK_SHARE


def quick_load_w(model: SimGpuModel) -> float:
    """What a GPU drew under the quick run's load that brought it to its load temperature: a measured
    twin's median over its burn's dtypes, else FULL_LOAD_POWER of its limit."""
    if model.twin:
        return statistics.median(model.twin.power_w[d] for d in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8"))
    return FULL_LOAD_POWER * model.tdp_w


def heat_step(parts: list[float], drive: float, rise_c: float, fast_share: float, dt: float) -> None:
    """Advance a GPU's thermal parts (C above its idle temperature) by dt seconds at `drive`, its
    power above idle as a share of quick_load_w's above idle (1: the quick run's load, whose end
    temperature is idle + rise_c)."""
    for j, (share, tau) in enumerate(zip(thermal_shares(fast_share), THERMAL_TAUS_S)):
        parts[j] += (drive * share * rise_c - parts[j]) * (1.0 - math.exp(-dt / tau))


def sim_clock(model: SimGpuModel, faults: list[tuple[str, Any]], full_w: float = 0.0) -> tuple[float, int]:
    """A loaded GPU's SM clock as a share of its full-load clock, and the clock-event reason bits
    that say why; the simulated compute runs slower by the same share. `full_w`: what the work draws
    under full load (SLOT_POWER_W; 0: FULL_LOAD_POWER x its limit). A lowered limit holds only work
    that would draw more: the copies and the memory test drew 440-620 W on the real 700 W parts at
    their maximum clock (sim_models.MEMORY_WORK), under a 500 W limit most of them run free."""
    share, reasons = 1.0, 0
    draws = full_w or FULL_LOAD_POWER * model.tdp_w
    for name, value in faults:
        if name == "throttle":
            share *= THROTTLE_CLOCK[value]
            reasons |= REASON_BITS[value]
        elif name == "power_limit" and value < draws:
            # Clocks fall until the power fits under the limit (taken as linear above idle power).
            share *= max(0.2, (value - model.idle_w) / (draws - model.idle_w))
            reasons |= REASON_BITS["sw_power_cap"]
    return share, reasons


def held_by_limit(model: SimGpuModel, load: float, dtype_clock: float, faults: list[tuple[str, Any]]) -> bool:
    """Whether a healthy GPU's work under full load holds its clock below the maximum: the driver's
    power cap does that, and NVML says so (sw_power_cap). The real H100 SXM5 and H200 spent 0.96-0.99
    of each burn dtype, and all of stress.power, with it set at 1272-1801 MHz; fp32 at 1975-1980 MHz
    (the maximum) 0.35 and 0.04 (tests/fixtures/real-2026-11-26/*-quick-pulsed: the burn's throttle_s
    per dtype, the telemetry's reasons). A clock within 1% of the maximum is taken as not held; a GPU
    that cannot draw up to its limit (a `power` fault) is not held by it. `dtype_clock` 0: the SKU's
    loaded clock."""
    values = dict(faults)
    if load <= LOADED or values.get("power", math.inf) < min(values.get("power_limit", model.tdp_w), model.tdp_w):
        return False
    return (dtype_clock or model.sku.healthy_sm_mhz) < 0.99 * model.max_sm_mhz


def sim_power_demand_w(model: SimGpuModel, load: float, full_w: float) -> float:
    """What a simulated GPU's load asks for: its idle power plus the load's share of what it draws
    under full load of its work now (`full_w`, SLOT_POWER_W: a measured twin's per dtype; 0 for
    FULL_LOAD_POWER x its limit)."""
    return model.idle_w + load * ((full_w or FULL_LOAD_POWER * model.tdp_w) - model.idle_w)


# Once it has been loaded a GPU does not fall back to its idle state: its clocks stay up (the maximum,
# 1980 MHz, with no clock-event reason), between the pulse's bursts and between the steps. The
# instantaneous power NVML read at the ends of the idle halves of the 500 ms and 1 s periods was
# 125-149 W against a 700 W limit on the real H100 SXM5 and H200 (tests/fixtures/real-2026-11-2*
# /*quick*.predicate.json: the pulse's power_read low_instant); between steps 125-135 W and never the
# idle reason after the first load, in all nine real quick runs' telemetry, and still 127 W at 1980 MHz
# in the captures taken a minute after (shared/measurements/2026-11-26/capture-*.json); before any
# load the parts idled at 70-80 W, 345 MHz.
WARM_IDLE_SHARE = 0.19  # of the limit: 133 W of 700


def sim_power_w(model: SimGpuModel, load: float, full_w: float, faults: list[tuple[str, Any]],
                warm: bool = False) -> float:
    """What a simulated GPU draws at this load (no reading noise): its demand, held under the enforced
    limit (`power_limit`) and what it can draw (`power`); without load once it has been loaded (`warm`)
    at least WARM_IDLE_SHARE of its limit. The node's NVML readings and the workers' own read the same."""
    values = dict(faults)
    demand = sim_power_demand_w(model, load, full_w)
    if warm and load <= 0:
        demand = max(demand, WARM_IDLE_SHARE * model.tdp_w)
    return min(demand, values.get("power", model.tdp_w), min(values.get("power_limit", model.tdp_w), model.tdp_w))


def cotenant_active(faults: list[tuple[str, Any]], loaded_s: float) -> bool:
    """Whether another process is computing on the GPU now."""
    names = {name for name, _ in faults}
    return "cotenant" in names or ("cotenant_late" in names and loaded_s >= COTENANT_AFTER_S)


# Timing of the work on a real GPU, which the simulated workers (nodeqc.backends.sim.compute) keep.
# The first product after a set-up is cold on a real GPU: handle creation, kernel selection, clocks
# ramping. On the H100 SXM5 and H200 (2026-11-26, shared/measurements/2026-11-26/README.md) a pulse
# burst sized from it at the 1 s period was one product: int(0.5 s / first) = 1, so the first
# product took more than 0.25 s (and a product warm about 1.7 ms: duty 0.084 at 20 ms). The twin's
# cold start is 0.3 s, an estimate just above that bound; `cold_start=S` adds S.
COLD_FIRST_PRODUCT_S = 0.3
# NVML's power reading averages about the last second: at the pulse's 500 ms and 1 s periods it read
# 418-469 W at both the bursts' and the idle halves' ends on the real H100 SXM5 and H200 (a 0-30 W
# swing), where the instantaneous field swung 718-785 W to 125-149 W (tests/fixtures/real-2026-11-2*
# /*quick*.predicate.json: the pulse's power_read). The twin's read a 100 ms mean, and swung 612 W.
# So its first loaded samples rise over a second from idle: 111 W, then 233, 392, ... on the real
# H100 SXM5 (tests/fixtures/real-2026-11-26/h100-sxm5-quick.telemetry.csv.gz at 3.8 s); the twin's
# read the load's whole mean at once until 2026-11-29 (its first trace entry stood for the time before).
NVML_AVERAGE_S = 1.0
# When its load stops, a GPU's power falls to its warm idle over some milliseconds, not at once: the
# real parts' one-second mean under the 100 ms period read 476-565 W (the bursts 718-785 W, warm idle
# 125-150 W), where an instant fall gives about 450 W; a fall with this time constant gives it, and
# leaves the 500 ms and 1 s periods' means at 441-463 W against the real 418-478 W (the real quick
# runs' power_read, tests/fixtures/real-2026-11-2*/*quick*.predicate.json). Fitted, an estimate.
POWER_FALL_TAU_S = 0.009
# NVML's utilisation is the share of its sample period in which a kernel ran, a period of 1/6 s to 1 s
# by product (nvmlDeviceGetUtilizationRates). Under the pulse's 20 ms and 100 ms periods the real
# H100 SXM5 and H200 read 46-59 % in every sample after the first; under the 500 ms period 0, 100
# and partial readings (68-80 %) by turns (tests/fixtures/real-2026-11-2*/*quick*: the telemetry
# inside the pulse's spans): a window of a sixth of a second.
NVML_UTIL_WINDOW_S = 1 / 6


def power_at(entry: tuple[float, ...], t: float) -> float:
    """The draw at time t of a power trace entry (from, W, W at from, ...): falling from the third
    towards the second (POWER_FALL_TAU_S), a rise at once."""
    since, watts, was = entry[:3]
    return watts + (was - watts) * math.exp(-max(0.0, t - since) / POWER_FALL_TAU_S)


def power_segments(trace: list[tuple[float, ...]], start: float, end: float) -> list[tuple[float, float, float]]:
    """The stretches of [start, end] (run clock) between a power trace's changes (entries from, W,
    W it falls from, load, die heat share, oldest first; before the first, what it began with):
    (seconds, mean W, the share of those watts that heats the die) each."""
    out = []
    first = trace[0][0]
    if first > start:
        out.append((min(first, end) - start, trace[0][1], trace[0][4]))
    for i, entry in enumerate(trace):
        t, watts, was = entry[:3]
        until = trace[i + 1][0] if i + 1 < len(trace) else end
        lo, hi = max(t, start), min(until, end)
        if hi > lo:
            # What falls from `was` towards `watts`: the decay's integral over [lo, hi].
            energy = watts * (hi - lo) + (was - watts) * POWER_FALL_TAU_S * (
                math.exp(-(lo - t) / POWER_FALL_TAU_S) - math.exp(-(hi - t) / POWER_FALL_TAU_S))
            out.append((hi - lo, energy / (hi - lo), entry[4]))
    return out


def mean_power(trace: list[tuple[float, ...]], end: float, window: float) -> float:
    """The mean power over `window` seconds ending at `end` (run clock) of a power trace."""
    return sum(seconds * watts for seconds, watts, _ in power_segments(trace, end - window, end)) / window


def mean_load(trace: list[tuple[float, ...]], end: float, window: float) -> float:
    """The mean load over `window` seconds ending at `end` of a trace whose entries' fourth field is
    the load from then on."""
    start, total = end - window, 0.0
    for i, entry in enumerate(trace):
        until = trace[i + 1][0] if i + 1 < len(trace) else end
        total += entry[3] * max(0.0, min(until, end) - max(entry[0], start))
    if trace[0][0] > start:
        total += trace[0][3] * (min(trace[0][0], end) - start)
    return total / window
# A set-up's cost in a GPU already at work, per dtype: the gap before each dtype's first timed product
# in the real quick burns (its set-up, its first product, the warm timing), the median of seven runs
# on the H100 SXM5 and H200 (tests/fixtures/real-2026-11-2*/*quick*.predicate.json, stress.burn's
# per-dtype start_s against the previous dtype's end_s): fp32 0.19-0.23 s, tf32 0.02-0.03, fp16
# 0.20-0.28, bf16 0.56-1.03, fp8 1.92-3.40 (cuBLASLt's plan through nvmath-python). fp64, first, follows
# an idle GPU: its cold start is the pulse's bound above. The twin had 0.3 s for every dtype, so its
# fp8 computed 4.7 s of its 5 with 5 checks, where the real ones computed 2.5-3.7 s with 2-3.
# The GPU idles through a set-up at work: in the real quick burns' telemetry the bf16 and fp8 set-ups
# read 0-2 % utilisation, the idle boost clock (1980 MHz) and no throttle reason, and the one-second
# power fell to the warm idle's 125-146 W (tests/fixtures/real-2026-11-2*/*quick* between stress.burn's
# spans). So each span's first second reads NVML's mean rising from there: the real fp8 spans read
# 563-639 W at a steady 669-686. The twin drew 70 % of its load through them (fitted to the spans'
# power alone, 2026-11-27), and its fp8 spans read 631-656 W (test_twin_fidelity holds them since).
SETUP_S = {"fp64": COLD_FIRST_PRODUCT_S, "fp32": 0.2, "tf32": 0.03, "fp16": 0.22, "bf16": 0.84, "fp8": 2.42}
# The set-up of the work that is not matmul, before its first kernel, in a worker kept for the run:
# the gap in the real telemetry between one step's last loaded sample and the next one's first
# (tests/fixtures/real-2026-11-27/*-kept-workers and *-flat-copy, read at 4 Hz, so to 0.25 s): the
# copies 0.25 s after the pulse; the memory test 1.25, 1.25 and 1.75 s after the copies (it takes 90 %
# of the memory and builds its kernels); the host copies 0.5 s after the memory test (pinned buffers).
HBM_SETUP_S, MEMTEST_SETUP_S, PCIE_SETUP_S = 0.25, 1.25, 0.5
# NVML reads the SM clock from the GPU's table of supported clocks: 15 MHz apart on the measured
# H100 SXM5 and H200 (every sm_clock_mhz of the nine real quick runs, 345 to 1980 MHz:
# tests/fixtures/real-2026-11-2*/*.telemetry.csv.gz) and in A100's and T4's supported-clock tables.
# A held clock between two steps shows as samples at both (its mean kept), not as a value between.
CLOCK_STEP_MHZ = 15
IDLE_AFTER_S = 1.0  # run-clock seconds without a product after which the GPU has gone idle: a cold start again


def on_clock_grid(mhz: float, draw: float) -> int:
    """A clock as NVML reports it: a step of the supported-clock table (CLOCK_STEP_MHZ). Between two
    steps the lower or the upper one, the upper as often as `mhz` lies towards it (`draw` uniform in
    [0, 1)), so the samples' mean stays the modelled clock, as a real clock hopping between two steps."""
    below = math.floor(mhz / CLOCK_STEP_MHZ) * CLOCK_STEP_MHZ
    return int(below + CLOCK_STEP_MHZ if draw < (mhz - below) / CLOCK_STEP_MHZ else below)
