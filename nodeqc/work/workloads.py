"""The work that runs inside worker processes, written once against the device interface
(nodeqc/backends/cupy_compute.py for real GPUs, nodeqc/backends/sim/compute.py for the simulated
node). Each reports progress after every bounded step, which is what the watchdog watches, and
returns plain data; the verdicts are made in nodeqc/checks/stress/.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Callable

from nodeqc.core.errors import DtypeUnavailable
from nodeqc.core.known_answer import (allreduce_expected, array_module, compare_exact, copy_pattern,
                                      known_answer_inputs, on_device_of, stream_expected)
from nodeqc.work.memtest import memory_test
from nodeqc.work.steps import Reporter, step_s

BURN_MIN_CHECKS = 2  # results of each dtype's product compared: a repeat needs a first
# Real seconds the pulse test idles before each period, after reporting the previous span's end and
# this period's start: the supervisor reads the driver's counters there within milliseconds (one
# NVML call per GPU); a tenth of a second leaves room for a busy host, 0.4 s over a pulse test.
PULSE_SETTLE_S = 0.1
STEADY_SETTLES = 5


# Work sized by time (the burn's steps, the pulse's bursts) is sized from a warm product: the first product after a set-up is cold
# (handle creation, kernel selection, clocks ramping) and took hundreds of milliseconds on real
# H100 and H200 (2026-11-26: a burst sized from it was one product, duty 0.006-0.084 instead of 0.5;
# shared/measurements/2026-11-26/README.md). These many products, after the cold one, are timed.
WARM_PRODUCTS = 4

# Each burn dtype computes for at least this share of its part of the burn, counted from its own
# start (after its set-up and warm-up): a dtype's end is the burn's schedule (start + its cumulative
# share) or this, whichever is later. One slow set-up, or a dtype that ran over, then cannot squeeze
# the next below the verdict's proof of load (BURN_MIN_LOAD_SHARE, below).
# On a real GPU it changes little: fp8's set-up left it 2.37 s of GPU time in its 5 s on a healthy
# H200 (benchmarks/RESULTS.md, 2026-11-26), about what a half gives. The simulated node's host stalls,
# magnified by its time scale, had left a dtype one step (1 s of its 5) behind one that ran over.
BURN_MIN_WINDOW_SHARE = 0.5
# Each dtype must have computed at least this share of its planned part of the burn (its GPU time over
# its share of the burn's seconds) for its rate to be a sustained one (the verdict's proof of load,
# nodeqc.checks.stress.burn). The set-up and warm-up come out of a dtype's share: fp8's (cuBLASLt's plan
# through nvmath-python) left it 2.37 s of GPU time in its 5 s on a healthy H200 (0.47;
# benchmarks/RESULTS.md, 2026-11-26), the least of any dtype on either GPU; a quarter is half of that
# (nodeqc's choice), far above a GPU whose products return at once. A dtype short of it at its
# window's end (its host stalled: 0.2 s of real time is 2 s of a simulated clock at ten times) goes on
# computing, for one share more at most, rather than leave a healthy GPU unjudged.
BURN_MIN_LOAD_SHARE = 0.25


def warm_product_s(device: Any, products: int = WARM_PRODUCTS) -> float:
    """Seconds one product takes once warm: the cold first product run and discarded, then `products`
    timed together (their mean)."""
    device.matmul_run(1)
    return max(device.matmul_run(products) / products, 1e-6)


def plain_load(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Plain load for params['seconds'] (no measurement): keeps a GPU busy while others are tested.
    A load judged from telemetry alone (stress.power) also lasts params['min_wall_s'] real seconds,
    so the sampler reads it under load however slowly it goes or however compressed the run's clock."""
    seconds, min_wall_s = float(params["seconds"]), float(params.get("min_wall_s", 0.0))
    # ... and, given a release file, until the supervisor's telemetry has seen the load (it makes the
    # file: TelemetrySampler.release_when), up to max_wall_s real seconds.
    release, max_wall_s = params.get("release_file"), float(params.get("max_wall_s", 0.0))
    clock = device.clock
    device.set_load(1.0)
    start, wall_start = clock.now(), time.monotonic()
    steps = 0

    def unseen() -> bool:
        return bool(release) and time.monotonic() - wall_start < max_wall_s and not os.path.exists(release)
    try:
        while (elapsed := clock.now() - start) < seconds or time.monotonic() - wall_start < min_wall_s or unseen():
            device.busy_step(min(step_s(device), seconds - elapsed) if elapsed < seconds else step_s(device))
            steps += 1
            report.progress(min(1.0, (clock.now() - start) / seconds))
    finally:
        device.set_load(0.0)
    # planned_s: the seconds asked for, so that the verdict can tell the load was held that long.
    return {"seconds": round(clock.now() - start, 3), "steps": steps, "planned_s": seconds}


def matmul_burn(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Matrix products in each dtype for params['seconds'] in all: the sustained rate of completed
    products, and silent data corruption caught three ways (known answer, repeats, and a
    fingerprint of identical work that the verdict compares across GPUs). Each dtype's span on the
    run's clock (start_s, end_s from params['run_t0'], as power_pulse's periods), from its first timed
    product to its last check: the verdict reads what telemetry saw of that dtype alone (a Hopper
    holds its power limit at a clock of each dtype's own: shared/measurements/2026-11-26)."""
    seconds, seed = float(params["seconds"]), int(params["seed"])
    t0 = params.get("run_t0")  # None (a caller outside a run): no spans, the verdict reads the whole step
    not_run = {d: why for d in params["dtypes"] if (why := device.supports(d))}
    dtypes = [d for d in params["dtypes"] if d not in not_run]
    a, b, expected = known_answer_inputs(device.ka_size)
    clock = device.clock
    share = seconds / max(1, len(dtypes))  # each dtype's part of the burn
    step = min(step_s(device), share)  # under heavy time compression too
    results: dict[str, Any] = {}
    device.set_load(1.0)
    start = clock.now()
    try:
        for k, dtype in enumerate(dtypes):
            try:
                flops = device.matmul_setup(dtype, seed)
                warm = warm_product_s(device)  # the cold first product, then a warm timing; not counted
            except DtypeUnavailable as e:  # found in the set-up (a library's plan): not run, never a failure
                not_run[dtype] = str(e)
                device.release()
                continue
            per_product = warm
            done_flops = done_s = 0.0
            first = repeat_mismatch = wrong = None
            checks = 0
            # The supervisor reads the driver's throttle counters at each dtype's bounds (as at
            # the pulse's periods): what a dtype's span was held by, exact at any sample rate.
            report.progress(min(1.0, (clock.now() - start) / seconds), bound="start", dtype=dtype)
            began = clock.now()
            until = max(start + share * (k + 1), began + BURN_MIN_WINDOW_SHARE * share)
            # Two checks at least: the repeat comparison needs two results of the same product (one
            # step that filled the window, on a loaded host, left it nothing to compare).
            while clock.now() < until or checks < BURN_MIN_CHECKS or (
                    done_s < BURN_MIN_LOAD_SHARE * share and clock.now() < until + share):
                # A step of about `step` seconds, or what is left of the window: a step sized from the
                # warm product (at the clock before the power cap bites) ran half again as long as
                # planned on real H100s, and the last one overran the window by up to a second
                # (benchmarks/RESULTS.md, 2026-11-27 evening). The last step's products give the pace.
                # Past the window (a step more only for the second check, or a host that stalled past it
                # on a compressed clock) a whole step, as the repeat's comparison and the proof need.
                left = until - clock.now()
                iters = max(1, int((min(step, left) if left > 0 else step) / per_product))
                took = device.matmul_run(iters)
                done_s += took
                done_flops += flops * iters
                per_product = max(took / iters, 1e-6)
                fp = device.matmul_fingerprint()
                if first is None:
                    first = fp
                elif fp != first and repeat_mismatch is None:
                    repeat_mismatch = {"check": checks, "first": first, "now": fp}
                if wrong is None:
                    mismatch = compare_exact(device.to_host(device.known_answer(dtype, a, b)), expected)
                    wrong = mismatch.to_dict() if mismatch else None
                checks += 1
                tflops = done_flops / done_s / 1e12
                report.progress(min(1.0, (clock.now() - start) / seconds), dtype=dtype, tflops=round(tflops, 1))
            ended = clock.now()
            report.progress(min(1.0, (ended - start) / seconds), bound="end", dtype=dtype)
            results[dtype] = {"tflops": round(done_flops / done_s / 1e12, 2), "products": int(done_flops / flops),
                              "seconds": round(done_s, 3), "fingerprint": first, "checks": checks,
                              "repeat_mismatch": repeat_mismatch, "known_answer_mismatch": wrong,
                              "known_answer_size": device.ka_size,
                              "planned_s": round(share, 3)}
            if t0 is not None:
                results[dtype].update(start_s=round(began - float(t0), 3), end_s=round(ended - float(t0), 3))
            device.release()
    finally:
        device.set_load(0.0)
    return {"dtypes": results, "not_run": not_run, "seconds": round(clock.now() - start, 3)}


def run_burst(device: Any, busy_s: float, deadline: float, one: float) -> tuple[float, int]:
    """Products until the GPU has computed `busy_s` seconds (by its own timing), or the run's clock
    passes `deadline`, whichever comes first: each chunk sized from the products just completed,
    never from a count taken once (a burst sized from one cold product was one product on real
    GPUs). The first chunk is three quarters of what is asked, so a product slower than `one`
    (clocks ramping after an idle half) shows before the burst is spent. The GPU's own time is the
    measure, so a slow host (the simulated node's compressed clock) shortens the idle half, not the
    load. Returns (seconds computed, products); a caller that reports progress asks a step at most."""
    clock = device.clock
    done, products, per = 0.0, 0, one
    while done < busy_s - per / 2 and clock.now() < deadline:
        want = (busy_s - done) * (0.75 if products == 0 else 1.0)
        n = max(1, int(want / per))
        took = device.matmul_run(n)
        done, products, per = done + took, products + n, max(took / n, 1e-6)
    return done, products


# A burst at the fastest period computes at least this many products in its half period: the burst
# ends within half a product of its half, so its duty is within 1/8 of the planned 0.5 (nodeqc's
# choice). At the burn's 8192^3 a product took about 1.7 ms warm on the H100 SXM5 and H200
# (shared/measurements/2026-11-26: 5.9 products a 10 ms half, duty 0.446 at 20 ms), and they keep
# that size; a T4's (26 TFLOP/s fp16: 42 ms) or a V100's (13 ms) is longer than the whole half, and
# the burst computed none (the 2026-11-28 audit, on the simulated T4: 100 cycles, 0 products).
PULSE_PRODUCTS_PER_HALF = 4
PULSE_MIN_N = 1024  # a smaller product is mostly its launch; an n x n of 1024 fills a T4's 40 SMs
PULSE_N_STEP = 256  # sizes the matrix units and cuBLASLt's FP8 tiles take whole


def pulse_product(device: Any, dtype: str, seed: int, half_s: float) -> tuple[int, float]:
    """Set up the pulse's products and time one warm: the burn's size, or a smaller n x n where a
    product would not fit PULSE_PRODUCTS_PER_HALF times in `half_s` (the fastest period's half).
    The size follows the warm time's cube root, timed again at each size. Returns (n, seconds)."""
    n = round((device.matmul_setup(dtype, seed) / 2) ** (1 / 3))
    one = warm_product_s(device)
    target = half_s / PULSE_PRODUCTS_PER_HALF
    for _ in range(3):  # the rate can fall at a smaller size: once more, then no further
        if one <= target or n <= PULSE_MIN_N:
            break
        n = max(PULSE_MIN_N, int(n * (target / one) ** (1 / 3)) // PULSE_N_STEP * PULSE_N_STEP)
        device.matmul_setup(dtype, seed, n=n)
        one = warm_product_s(device)
    return n, one


def power_pulse(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Full load and idle in turn, half a period each, at every period in params['periods_s'] for
    params['seconds_per_period'] each (and at least params['min_wall_s'] real seconds, so telemetry
    reads each period under its swings): fast swings of the power drawn, the way DCGM's pulse test
    stresses a node's power delivery. Bursts start on period boundaries of the run's clock, which
    every worker shares, so the GPUs of a node swing together, and each burst runs products until
    its half period is over. Returns each period's span on the run's clock (from params['run_t0']),
    with the duty the GPU achieved by its own timing (seconds computed over the span), for the
    verdict to prove the load and match with what telemetry saw. Each span's start and end is also
    reported as it happens (progress with `bound`), once the load has changed, so the supervisor
    reads the driver's throttle counters and the BMC's sensors there."""
    periods = [float(p) for p in params["periods_s"]]
    per_period, t0 = float(params["seconds_per_period"]), float(params["run_t0"])
    clock = device.clock
    span_s = max(per_period, float(params.get("min_wall_s", 0.0)) * clock.scale)
    device.set_load(1.0)
    size, one = pulse_product(device, params.get("dtype", "fp16"), int(params["seed"]), min(periods, default=1.0) / 2)
    device.set_load(0.0)

    def settle() -> None:
        """Idle between a bound's report and the next change of load: the supervisor's read of the
        counters at that bound lands between the periods, not in the swings."""
        clock.sleep(clock.scale * PULSE_SETTLE_S)

    spans = []
    try:
        # First a steady full load as long as one period's test (span_s: long enough for telemetry's
        # samples at the pace the sampler keeps, min_wall_s): throttling seen here comes from the load
        # itself (health.throttle's to judge), not from its swings. It was at least a second of real
        # time besides, from when the sampler read a fixed rate of real time: ten seconds of the
        # twin's clock where the real steady load took 2 (the 2026-11-28 fidelity review). The driver's
        # counters are read across the steady load and both its settles (idle), so it must dwarf them
        # for a standing brake to count as standing (pulse.STANDING_BRAKE_MS_PER_S, half the time):
        # at least STEADY_SETTLES settles, 5/7 of the counted time (a real GPU's settle is 0.1 s; a
        # compressed clock's is scaled, as the supervisor's reads are real time).
        steady_s = max(span_s, STEADY_SETTLES * clock.scale * PULSE_SETTLE_S)
        start = clock.now()
        device.set_load(1.0)
        report.progress(0.0, bound="start", period_s=0.0)
        steady_read = params.get("read_power_from_s") is not None
        steady_power: dict[str, list[float]] = {"high": [], "high_instant": []}
        # The steady load's own power, read in its second half (past the ramp: NVML's reading averages
        # about the last second on an H100), is the level the swings' readings are compared with.
        # A step at a time, each reported: a profile's pulse_s of 70 s made the first half one silent
        # burst of 35 s, which the watchdog killed as hung ("RMA if repeated"; the 2026-11-29 audit).
        busy_s, products, step = 0.0, 0, step_s(device)
        while clock.now() - start < steady_s / 2:
            s, k = run_burst(device, min(step, start + steady_s / 2 - clock.now()), start + steady_s / 2, one)
            busy_s, products = busy_s + s, products + k
            report.progress(0.0)
            if k == 0:  # less than half a product left
                break
        while clock.now() - start < steady_s:
            s, k = run_burst(device, min(steady_s / 8, step, steady_s - (clock.now() - start)), start + steady_s, one)
            busy_s, products = busy_s + s, products + k
            if steady_read:
                _read_power(device, steady_power, "high")
            report.progress(0.0)
            if k == 0:
                break
        device.set_load(0.0)
        report.progress(0.0, bound="end", period_s=0.0)
        spans.append({"period_s": 0.0, "start_s": round(start - t0, 3), "end_s": round(clock.now() - t0, 3),
                      "cycles": 0, "products": products, "duty": round(busy_s / max(clock.now() - start, 1e-9), 3),
                      **({"power_read": _power_summary(steady_power)} if steady_read else {})})
        for n, period in enumerate(periods):
            # One pause serves the previous span's end, reported above, and this period's start.
            report.progress(n / len(periods), bound="start", period_s=period)
            settle()
            start = t0 + math.ceil((clock.now() - t0) / period) * period
            clock.sleep(start - clock.now())
            device.set_pulse(period)
            cycles, boundary, busy_s, products = 0, 0, 0.0, 0
            report_every = max(1, int(0.25 / period))
            # Power read at the end of each burst and of each idle half, where the swings are widest.
            read = period >= float(params.get("read_power_from_s", math.inf))
            power: dict[str, list[float]] = {"high": [], "low": [], "high_instant": [], "low_instant": []}
            # At least one burst a period: a host stalled past the whole span (0.2 s of real time
            # is a quick period's 2 s at ten times compression) left a period with none, duty 0,
            # where the stall is the skipped periods' to say.
            while cycles == 0 or clock.now() - start < span_s:
                device.set_load(1.0)
                # Half the period computing, and at most a period from the burst's own start: a host
                # that started it late (busy elsewhere) overruns into the next period, which is then
                # skipped, rather than cut the burst short.
                s, k = run_burst(device, period / 2, clock.now() + period, one)
                if read:
                    _read_power(device, power, "high")
                device.set_load(0.0)
                busy_s, products = busy_s + s, products + k
                cycles += 1
                # The next boundary; one missed while the burst ran is skipped, so the phase holds.
                boundary = max(boundary + 1, math.ceil((clock.now() - start) / period))
                clock.sleep(start + boundary * period - clock.now())
                if read:
                    _read_power(device, power, "low")
                if cycles % report_every == 0:
                    report.progress(min(1.0, (n + (clock.now() - start) / span_s) / len(periods)),
                                    period_ms=round(period * 1000))
            end = clock.now()
            # Periods that passed after the last boundary slept to are skipped too: a host stalled
            # there (reading power, reporting) ended the span with none of them run, and they were
            # counted as none (2026-11-27: one burst in 5.7 s of a 1 s period, skipped 0, judged
            # from five idle telemetry readings).
            boundary = max(boundary, math.floor((end - start) / period + 1e-9))
            device.set_pulse(0.0)
            report.progress((n + 1) / len(periods), bound="end", period_s=period)
            # The duty is the share of each period with a burst that the GPU computed; a period whose
            # boundary passed while the host was busy elsewhere has no burst (a host starved of CPU,
            # as eight simulated GPUs on two cores are) and is counted apart, as skipped.
            spans.append({"period_s": period, "start_s": round(start - t0, 3), "end_s": round(end - t0, 3),
                          "real_period_s": round(clock.wall(period), 6),
                          "cycles": cycles, "skipped": max(0, boundary - cycles), "products": products,
                          "duty": round(busy_s / max(cycles * period, 1e-9), 3),
                          **({"power_read": _power_summary(power)} if read else {})})
    finally:
        device.set_load(0.0)
        device.set_pulse(0.0)
        device.release()
    return {"periods": spans, "product_s": round(one, 6), "matmul_n": size, "periods_planned": periods}


def _read_power(device: Any, into: dict[str, list[float]], phase: str) -> None:
    power, instant = device.power_reading()
    if power is not None:
        into[phase].append(power)
    if instant is not None:
        into[f"{phase}_instant"].append(instant)


def _power_summary(readings: dict[str, list[float]]) -> dict[str, Any]:
    """The readings at the bursts' ends and the idle halves' ends: how many, their mean, lowest and
    highest, in W (None where NVML gave none)."""
    def summary(values: list[float]) -> dict[str, Any]:
        if not values:
            return {"n": 0, "mean": None, "min": None, "max": None}
        return {"n": len(values), "mean": round(sum(values) / len(values), 1), "min": round(min(values), 1),
                "max": round(max(values), 1)}
    return {phase: summary(values) for phase, values in readings.items()}


def hbm_bandwidth(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """STREAM copy and triad, best of several timed repeats after a warm-up; bytes read plus written.
    The triad repeats until the test has lasted params['min_wall_s'] real seconds (where given), so
    telemetry reads the memory clock under the load and a slow result's diagnosis does not depend on
    whether a sample happened to land in a step of a second or two."""
    nbytes, trials, iters = int(params["bytes"]), int(params["trials"]), int(params["iters"])
    min_wall_s, wall_start = float(params.get("min_wall_s", 0.0)), time.monotonic()
    per_copy = device.stream_setup(nbytes)  # bytes moved by one copy pass (read + write)
    choice = device.stream_copy_choice()  # the copy kernel measured fastest here (None: one kernel)
    per_pass = {"copy": per_copy, "triad": per_copy * 3 // 2}
    best: dict[str, float] = {}
    passes = {"copy": 0, "triad": 0}  # timed passes of the buffer completed, for the verdict's proof of load
    device.set_load(1.0)
    try:
        for n, kind in enumerate(("copy", "triad")):
            device.stream_run(kind, 2)  # warm-up
            t = 0
            while t < trials or (kind == "triad" and time.monotonic() - wall_start < min_wall_s):
                seconds = device.stream_run(kind, iters)
                passes[kind] += iters
                gbps = per_pass[kind] * iters / seconds / 1e9 if seconds > 0 else 0.0  # no time: nothing measured
                best[kind] = max(best.get(kind, 0.0), gbps)
                t += 1
                report.progress((n * trials + min(t, trials)) / (2 * trials), kind=kind, gbps=round(gbps, 1))
        a = device.stream_result()
        wrong = compare_exact(a, stream_expected(array_module(a), a.size))
    finally:
        device.set_load(0.0)
        device.release()
    return {"copy_gbps": round(best["copy"], 1), "triad_gbps": round(best["triad"], 1), "verified": wrong is None,
            "mismatch": wrong.to_dict() if wrong else None, "bytes": nbytes,
            "passes": passes, "planned_passes": trials * iters,
            "moved_bytes": {kind: per_pass[kind] * done for kind, done in passes.items()},
            **({"copy_kernel": choice} if choice else {})}


def pcie_bandwidth(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Pinned host<->device copies: H2D, D2H and both at once, best of several; the copies go on for
    at least params['min_seconds'] so telemetry reads the link while it carries traffic."""
    nbytes, trials, iters = int(params["bytes"]), int(params["trials"]), int(params["iters"])
    device.pcie_setup(nbytes)
    best: dict[str, float] = {}
    moved_bytes = {"h2d": 0, "d2h": 0, "bidir": 0}  # bytes the timed copies moved, for the verdict's proof
    clock = device.clock
    device.set_load(1.0)
    start = clock.now()
    try:
        for n, direction in enumerate(("h2d", "d2h", "bidir")):
            device.pcie_run(direction, 1)  # warm-up
            moved = nbytes * iters * (2 if direction == "bidir" else 1)
            for t in range(trials):
                seconds = device.pcie_run(direction, iters)
                moved_bytes[direction] += moved
                gbps = moved / seconds / 1e9 if seconds > 0 else 0.0  # no time: nothing measured
                best[direction] = max(best.get(direction, 0.0), gbps)
                report.progress((n * trials + t + 1) / (3 * trials), direction=direction, gbps=round(gbps, 1))
        link = device.pcie_link_under_copy()
        while clock.now() - start < float(params["min_seconds"]):
            device.pcie_run("h2d", iters)
            report.progress(1.0)
        copied_s = clock.now() - start
        sent, received = device.pcie_round_trip()
        wrong = compare_exact(received, sent)
    finally:
        device.set_load(0.0)
        device.release()
    return {"h2d_gbps": round(best["h2d"], 1), "d2h_gbps": round(best["d2h"], 1),
            "bidir_gbps": round(best["bidir"], 1), "verified": wrong is None,
            "mismatch": wrong.to_dict() if wrong else None, "bytes": nbytes, "link": link,
            "moved_bytes": moved_bytes, "seconds": round(copied_s, 3), "min_seconds": float(params["min_seconds"])}


def p2p(node: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Peer access between every pair of GPUs; one-way and two-way bandwidth and latency per pair,
    each copy verified."""
    nbytes, iters = int(params["bytes"]), int(params["iters"])
    access = node.peer_access()
    node.p2p_setup(nbytes)
    pairs = [p for p, ok in sorted(access.items()) if ok]
    out_pairs, out_bidir = [], []
    node.set_load(0.5)
    try:
        for n, (src, dst) in enumerate(pairs):
            node.p2p_copy(src, dst, 1)  # warm-up
            gbps = nbytes * iters / node.p2p_copy(src, dst, iters) / 1e9
            wrong = check_peer_copy(node.p2p_received(src, dst), src)
            out_pairs.append({"src": src, "dst": dst, "gbps": round(gbps, 1), "verified": wrong is None,
                              "latency_us": round(node.p2p_latency(src, dst, 100) * 1e6, 2)})
            if wrong:
                out_pairs[-1]["mismatch"] = wrong.to_dict()
            if src < dst:
                both = 2 * nbytes * iters / node.p2p_copy(src, dst, iters, bidir=True) / 1e9
                out_bidir.append({"a": src, "b": dst, "gbps": round(both, 1)})
            report.progress((n + 1) / len(pairs), pair=f"{src}->{dst}", gbps=round(gbps, 1))
    finally:
        node.set_load(0.0)
    return {"access": [[i, j, ok] for (i, j), ok in sorted(access.items())], "pairs": out_pairs,
            "bidir": out_bidir, "bytes": nbytes}


def check_peer_copy(received: Any, src: int) -> Any:
    """What a GPU received from peer `src`, against the pattern `src` sent (on the receiving GPU)."""
    with on_device_of(received):
        return compare_exact(received, copy_pattern(array_module(received), received.size, src))


def nccl_allreduce(node: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """All-reduce (sum) across every GPU; bus bandwidth = algorithm bandwidth x 2(n-1)/n; every GPU's
    result is checked, element by element, on that GPU."""
    why = node.nccl_unavailable()
    if why:
        return {"unavailable": why}
    nbytes, iters, n = int(params["bytes"]), int(params["iters"]), len(node.devices)
    node.set_load(0.7)
    try:
        per, results = node.nccl_allreduce(nbytes, iters, params.get("env", {}))
        expected = allreduce_expected(n)
        wrong = []
        for gpu, result in results.items():
            mismatch = compare_exact(result, expected)
            if mismatch:
                e = mismatch.first[0]
                wrong.append({"gpu": gpu, "count": mismatch.count, "index": e["index"], "expected": e["expected"],
                              "actual": e["actual"], "xor": e["xor"]})
    finally:
        node.set_load(0.0)
    report.progress(1.0)
    algbw = nbytes / per / 1e9
    return {"bytes": nbytes, "iters": iters, "gpus": n, "algbw_gbps": round(algbw, 1),
            "busbw_gbps": round(algbw * 2 * (n - 1) / n, 1), "wrong": wrong, "checked": sorted(results)}


def burn_in(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Hours of matmul, device-memory and host-link traffic in turn, window after window. Each window
    reports its figures as progress (so they survive a hang later on): the matmul rate, a known-answer
    check, the copy bandwidth and the host-to-device bandwidth."""
    seconds, window_s, dtype = float(params["seconds"]), float(params["window_s"]), params["dtype"]
    a, b, expected = known_answer_inputs(device.ka_size)
    clock = device.clock
    flops = device.matmul_setup(dtype, int(params["seed"]))
    per_copy = device.stream_setup(int(params["hbm_bytes"]))
    device.pcie_setup(int(params["pcie_bytes"]))
    iters = max(1, int(min(step_s(device), window_s) / warm_product_s(device)))
    windows = 0
    device.set_load(1.0)
    start = clock.now()
    try:
        while clock.now() - start < seconds:
            w_start, done_flops, done_s = clock.now(), 0.0, 0.0
            while clock.now() - w_start < 0.8 * window_s:
                done_s += device.matmul_run(iters)
                done_flops += flops * iters
                report.progress(min(1.0, (clock.now() - start) / seconds))
            wrong = compare_exact(device.to_host(device.known_answer(dtype, a, b)), expected)
            hbm = per_copy * 4 / device.stream_run("copy", 4) / 1e9
            h2d = int(params["pcie_bytes"]) * 4 / device.pcie_run("h2d", 4) / 1e9
            windows += 1
            report.progress(min(1.0, (clock.now() - start) / seconds), window={
                "t_s": round(w_start - start, 1), "tflops": round(done_flops / done_s / 1e12, 2),
                "hbm_gbps": round(hbm, 1), "h2d_gbps": round(h2d, 1),
                "sdc": wrong.to_dict() if wrong else None})
    finally:
        device.set_load(0.0)
        device.release()
    return {"seconds": round(clock.now() - start, 1), "windows": windows, "dtype": dtype}


WORKLOADS: dict[str, Callable[[Any, dict[str, Any], Reporter], dict[str, Any]]] = {
    "plain_load": plain_load,
    "matmul_burn": matmul_burn,
    "pulse": power_pulse,
    "hbm": hbm_bandwidth,
    "memtest": memory_test,
    "pcie": pcie_bandwidth,
    "p2p": p2p,
    "nccl": nccl_allreduce,
    "burn_in": burn_in,
}
