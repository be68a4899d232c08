"""The work that runs inside worker processes, written once against the device interface
(nodeqc/backends/cupy_compute.py for real GPUs, nodeqc/backends/sim_compute.py for the simulated
node). Each reports progress after every bounded step, which is what the watchdog watches, and
returns plain data; the verdicts are made in nodeqc/checks/stress.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from nodeqc.verify import compare_exact, decode_memtest_errors, known_answer_inputs

if TYPE_CHECKING:  # workers imports this module to run its workloads
    from nodeqc.workers import Reporter

STEP_S = 1.0  # seconds of work between progress reports, on the run's clock
ALL_ONES = 0xFFFF_FFFF_FFFF_FFFF
MEMTEST_SEED = 0x6E6F_6465_7163  # "nodeqc"

# The memory pattern test: (name, [(operation, kind, value, descending)]). Kinds as in
# kernels/memtest.cu: 0 constant, 1 own address ^ value, 2 random, 3 random complemented.
MEMTEST_PROGRAM: list[tuple[str, list[tuple[str, int, int, bool]]]] = [
    ("walking ones on the address lines", [("address_lines", 0, 0, False)]),
    ("own address", [("write", 1, 0, False), ("check", 1, 0, False)]),
    ("own address, inverted", [("write", 1, ALL_ONES, False), ("check", 1, ALL_ONES, False)]),
    ("moving inversions, zeros and ones", [("write", 0, 0, False), ("invert", 0, 0, False),
                                           ("invert", 0, ALL_ONES, True), ("check", 0, 0, False)]),
    ("moving inversions, random", [("write", 2, MEMTEST_SEED, False), ("invert", 2, MEMTEST_SEED, False),
                                   ("invert", 3, MEMTEST_SEED, True), ("check", 2, MEMTEST_SEED, False)]),
]
# Bytes each operation touches, in units of the buffer size.
_TOUCHES = {"write": 1, "check": 1, "invert": 2, "address_lines": 0}


def _step(device: Any) -> float:
    """Run-clock seconds per step: about STEP_S of real time even when simulated time is compressed."""
    return max(STEP_S, 0.1 * device.clock.scale)


def burn(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Plain load for params['seconds'] (no measurement): keeps a GPU busy while others are tested."""
    seconds = float(params["seconds"])
    clock = device.clock
    device.set_load(1.0)
    start = clock.now()
    steps = 0
    try:
        while (elapsed := clock.now() - start) < seconds:
            device.busy_step(min(_step(device), seconds - elapsed))
            steps += 1
            report.progress(min(1.0, (clock.now() - start) / seconds))
    finally:
        device.set_load(0.0)
    return {"seconds": round(clock.now() - start, 3), "steps": steps}


def matmul_burn(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Matrix products in each dtype for params['seconds'] in all: the sustained rate of completed
    products, and silent data corruption caught three ways (known answer, repeats, and a
    fingerprint of identical work that the verdict compares across GPUs)."""
    seconds, seed = float(params["seconds"]), int(params["seed"])
    not_run = {d: why for d in params["dtypes"] if (why := device.supports(d))}
    dtypes = [d for d in params["dtypes"] if d not in not_run]
    a, b, expected = known_answer_inputs(device.ka_size)
    clock = device.clock
    step = min(_step(device), seconds / max(1, len(dtypes)))  # under heavy time compression too
    results: dict[str, Any] = {}
    device.set_load(1.0)
    start = clock.now()
    try:
        for k, dtype in enumerate(dtypes):
            flops = device.matmul_setup(dtype, seed)
            warm = device.matmul_run(1)  # first product: kernel selection and clocks ramping; not timed
            iters = max(1, int(step / max(warm, 1e-6)))
            done_flops = done_s = 0.0
            first = repeat_mismatch = wrong = None
            checks = 0
            until = start + seconds * (k + 1) / len(dtypes)
            while clock.now() < until or checks == 0:
                done_s += device.matmul_run(iters)
                done_flops += flops * iters
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
            results[dtype] = {"tflops": round(done_flops / done_s / 1e12, 2), "products": int(done_flops / flops),
                              "seconds": round(done_s, 3), "fingerprint": first, "checks": checks,
                              "repeat_mismatch": repeat_mismatch, "known_answer_mismatch": wrong,
                              "known_answer_size": device.ka_size}
            device.release()
    finally:
        device.set_load(0.0)
    return {"dtypes": results, "not_run": not_run, "seconds": round(clock.now() - start, 3)}


def hbm_bandwidth(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """STREAM copy and triad, best of several timed repeats after a warm-up; bytes read plus written."""
    nbytes, trials, iters = int(params["bytes"]), int(params["trials"]), int(params["iters"])
    per_copy = device.stream_setup(nbytes)  # bytes moved by one copy pass (read + write)
    per_pass = {"copy": per_copy, "triad": per_copy * 3 // 2}
    best: dict[str, float] = {}
    device.set_load(1.0)
    try:
        for n, kind in enumerate(("copy", "triad")):
            device.stream_run(kind, 2)  # warm-up
            for t in range(trials):
                gbps = per_pass[kind] * iters / device.stream_run(kind, iters) / 1e9
                best[kind] = max(best.get(kind, 0.0), gbps)
                report.progress((n * trials + t + 1) / (2 * trials), kind=kind, gbps=round(gbps, 1))
        verified = device.stream_verify()
    finally:
        device.set_load(0.0)
        device.release()
    return {"copy_gbps": round(best["copy"], 1), "triad_gbps": round(best["triad"], 1), "verified": verified,
            "bytes": nbytes}


def memory_test(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """The pattern program over params['fraction'] of free device memory; every error is logged."""
    info = device.memtest_setup(float(params["fraction"]))
    total, records, seconds, touched = 0, [], 0.0, 0.0
    passes = []
    steps = sum(len(ops) for _, ops in MEMTEST_PROGRAM)
    done = 0
    device.set_load(0.8)
    try:
        for name, ops in MEMTEST_PROGRAM:
            found = 0
            for op, kind, value, descending in ops:
                if op == "write":
                    s = device.memtest_write(kind, value)
                    count, recs = 0, []
                elif op == "check":
                    count, recs, s = device.memtest_check(kind, value)
                elif op == "invert":
                    count, recs, s = device.memtest_invert(kind, value, descending)
                else:
                    count, recs, s = device.memtest_address_lines()
                found += count
                records += recs
                seconds += s
                touched += _TOUCHES[op] * info["bytes"]
                done += 1
                report.progress(done / steps, errors=total + found)
            total += found
            passes.append({"pattern": name, "errors": found})
    finally:
        device.set_load(0.0)
        device.release()
    return {"bytes": info["bytes"], "free_bytes": info["free_bytes"],
            "gbps": round(touched / seconds / 1e9, 1) if seconds else None, "passes": passes,
            **decode_memtest_errors(total, records, info["base_address"])}


def pcie_bandwidth(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Pinned host<->device copies: H2D, D2H and both at once, best of several; the copies go on for
    at least params['min_seconds'] so telemetry reads the link while it carries traffic."""
    nbytes, trials, iters = int(params["bytes"]), int(params["trials"]), int(params["iters"])
    device.pcie_setup(nbytes)
    best: dict[str, float] = {}
    clock = device.clock
    device.set_load(0.6)
    start = clock.now()
    try:
        for n, direction in enumerate(("h2d", "d2h", "bidir")):
            device.pcie_run(direction, 1)  # warm-up
            moved = nbytes * iters * (2 if direction == "bidir" else 1)
            for t in range(trials):
                gbps = moved / device.pcie_run(direction, iters) / 1e9
                best[direction] = max(best.get(direction, 0.0), gbps)
                report.progress((n * trials + t + 1) / (3 * trials), direction=direction, gbps=round(gbps, 1))
        link = device.pcie_link_under_copy()
        while clock.now() - start < float(params["min_seconds"]):
            device.pcie_run("h2d", iters)
            report.progress(1.0)
        verified = device.pcie_verify()
    finally:
        device.set_load(0.0)
        device.release()
    return {"h2d_gbps": round(best["h2d"], 1), "d2h_gbps": round(best["d2h"], 1),
            "bidir_gbps": round(best["bidir"], 1), "verified": verified, "bytes": nbytes, "link": link}


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
            out_pairs.append({"src": src, "dst": dst, "gbps": round(gbps, 1), "verified": node.p2p_verify(src, dst),
                              "latency_us": round(node.p2p_latency(src, dst, 100) * 1e6, 2)})
            if src < dst:
                both = 2 * nbytes * iters / node.p2p_copy(src, dst, iters, bidir=True) / 1e9
                out_bidir.append({"a": src, "b": dst, "gbps": round(both, 1)})
            report.progress((n + 1) / len(pairs), pair=f"{src}->{dst}", gbps=round(gbps, 1))
    finally:
        node.set_load(0.0)
    return {"access": [[i, j, ok] for (i, j), ok in sorted(access.items())], "pairs": out_pairs,
            "bidir": out_bidir, "bytes": nbytes}


def nccl_allreduce(node: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """All-reduce (sum) across every GPU; bus bandwidth = algorithm bandwidth x 2(n-1)/n; every GPU's
    result is checked."""
    why = node.nccl_unavailable()
    if why:
        return {"unavailable": why}
    nbytes, iters, n = int(params["bytes"]), int(params["iters"]), len(node.devices)
    node.set_load(0.7)
    try:
        per, wrong = node.nccl_allreduce(nbytes, iters)
    finally:
        node.set_load(0.0)
    report.progress(1.0)
    algbw = nbytes / per / 1e9
    return {"bytes": nbytes, "iters": iters, "gpus": n, "algbw_gbps": round(algbw, 1),
            "busbw_gbps": round(algbw * 2 * (n - 1) / n, 1), "wrong": wrong}


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
    iters = max(1, int(min(_step(device), window_s) / max(device.matmul_run(1), 1e-6)))
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
    "burn": burn,
    "matmul": matmul_burn,
    "hbm": hbm_bandwidth,
    "memtest": memory_test,
    "pcie": pcie_bandwidth,
    "p2p": p2p,
    "nccl": nccl_allreduce,
    "burn_in": burn_in,
}
