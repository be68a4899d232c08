"""nodeqc's GPU work against the best reference on the same GPU, in the same process.

    python benchmarks/bench_gpu.py [--gpu 0] [--profile h100]     # on a machine with an NVIDIA GPU
    python benchmarks/bench_gpu.py --check                        # anywhere: correctness only

Side by side (targets from the GPU stress issue):
  - our matmul (cuBLAS gemmEx, as the burn runs it) vs CuPy's matmul and PyTorch's, same shape and
    dtype: at least 95% of the best library rate;
  - our STREAM copy kernel vs a large device-to-device copy (bytes read plus written): at least 90%;
  - our pinned H2D/D2H vs a plain cudaMemcpyAsync loop on pinned memory: at least 90%;
  - the memory test's GB/s; the wall time of `nodeqc --headless --profile P --quick` from a cold start
    (target under 90 s for one GPU);
  - the pulse test (stress.power_pulse's workload): per period the bursts it made, their duty, the
    power NVML read (average and instantaneous) and any HW slowdown or power brake (target: none on
    a healthy GPU, which is what makes the check's failures true ones);
  - FP8 e4m3 8192^3: the burn's own (cuBLASLt through nvmath-python's bindings, bf16 out, as the burn
    runs it) against nvmath-python's Matmul and PyTorch's _scaled_mm (both need PyTorch for float8
    tensors), in the same run: at least 97% of the best library rate. Where the burn cannot run fp8
    it says why.
Prints one JSON line a part as each completes; record them in benchmarks/RESULTS.md with the date,
device, driver and command.

--check runs the same measuring code on the simulated device and checks what it can without a GPU:
the known answers are exact, fingerprints agree, the memory test finds a planted stuck bit and
nothing on clean memory, the verified copies verify.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Iterator

N = 8192


class _Quiet:
    def progress(self, fraction: float, **figures: Any) -> None:
        pass


def check() -> int:
    """Correctness of the measuring code, on the simulated device."""
    from nodeqc.backends.sim.compute import SimDevice
    from nodeqc.backends.sim.faults import parse_fault
    from nodeqc.backends.sim.node import SimNode
    from nodeqc.backends.sim.scenario import load_scenario
    from nodeqc.core.known_answer import compare_exact, known_answer_inputs
    from nodeqc.work import workloads as W

    problems = []
    node = SimNode(load_scenario("hgx-h100"), [parse_fault("gpu1:badmem"), parse_fault("gpu2:bitflip")], time_scale=5000)
    spec = node.compute_spec()
    clean, stuck, flipped = (SimDevice(spec, i) for i in range(3))
    a, b, expected = known_answer_inputs(clean.ka_size)
    for dtype in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8"):
        if compare_exact(clean.known_answer(dtype, a, b), expected) is not None:
            problems.append(f"known answer not exact in {dtype}")
        if compare_exact(flipped.known_answer(dtype, a, b), expected) is None:
            problems.append(f"a flipped bit in {dtype} went unnoticed")
    m = W.matmul_burn(clean, {"seconds": 20, "dtypes": ["bf16"], "seed": 1}, _Quiet())["dtypes"]["bf16"]
    if m["known_answer_mismatch"] or m["repeat_mismatch"] or not m["tflops"] > 0:
        problems.append(f"clean burn not clean: {m}")
    if W.memory_test(clean, {"fraction": 0.9}, _Quiet())["errors"]:
        problems.append("memory test found errors on clean memory")
    if not W.memory_test(stuck, {"fraction": 0.9}, _Quiet())["errors"]:
        problems.append("memory test missed a stuck bit")
    if not W.hbm_bandwidth(clean, {"bytes": 1 << 30, "trials": 2, "iters": 2}, _Quiet())["verified"]:
        problems.append("STREAM copy did not verify")
    if not W.pcie_bandwidth(clean, {"bytes": 1 << 28, "trials": 2, "iters": 2, "min_seconds": 0}, _Quiet())["verified"]:
        problems.append("PCIe round trip did not verify")
    full = {"fraction": 0.9, "full": True, "retention_s": 5}
    if W.memory_test(clean, full, _Quiet())["errors"]:
        problems.append("full memory test found errors on clean memory")
    fading = SimDevice(SimNode(load_scenario("hgx-h100"), [parse_fault("gpu0:retention")], time_scale=5000).compute_spec(), 0)
    faded = W.memory_test(fading, full, _Quiet())
    if [p["pattern"] for p in faded["passes"] if p["errors"]] != ["bit fade"]:
        problems.append(f"bit fade did not find the fading cells alone: {faded['passes']}")
    # The pulse paces itself by the clock, so it gets a node of its own, compressed ten times: at
    # 5000x a period's four seconds are 0.8 ms of real time, and one scheduling
    # hiccup of a busy CI machine passed a whole period with no swing (CI, 2026-11-23).
    pacing = SimDevice(SimNode(load_scenario("hgx-h100"), [], time_scale=10).compute_spec(), 0)
    pulse = W.power_pulse(pacing, {"periods_s": [0.02, 1.0], "seconds_per_period": 4, "run_t0": pacing.clock.now(),
                                   "seed": 1}, _Quiet())["periods"]
    if [p["period_s"] for p in pulse] != [0.0, 0.02, 1.0] or any(p["cycles"] < 1 for p in pulse[1:]):
        problems.append(f"pulse test did not swing at each period: {pulse}")
    # Its 1 s period is 100 ms of real time here, which a host paces: half of each period computing.
    from nodeqc.checks.stress.pulse import PULSE_DUTY
    if not PULSE_DUTY[0] <= pulse[2]["duty"] <= PULSE_DUTY[1]:
        problems.append(f"pulse test's 1 s period did not compute half the time: {pulse[2]}")
    print(json.dumps({"benchmark": "gpu", "mode": "check", "ok": not problems, "problems": problems}))
    return 1 if problems else 0


def _best_of(fn: Any, trials: int = 5) -> float:
    return min(fn() for _ in range(trials))


def _timer(cp: Any) -> Any:
    def timed(fn: Any, iters: int) -> float:
        """Seconds per call of fn, by CUDA events, after one untimed call."""
        start, end = cp.cuda.Event(), cp.cuda.Event()
        fn()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1000 / iters
    return timed


def _torch_tflops(dtype: str, ordinal: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    tdt = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
           "fp64": torch.float64}[dtype]
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    t = torch.randn(N, N, device=f"cuda:{ordinal}", dtype=torch.float32).to(tdt)

    def once() -> float:
        torch.matmul(t, t)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20):
            torch.matmul(t, t)
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 1000 / 20

    return 2 * N ** 3 / _best_of(once, 3) / 1e12


def _matmul(dev: Any, cp: Any, dtype: str) -> dict[str, Any]:
    flops = 2 * N ** 3
    dev.matmul_setup(dtype, 1)
    dev.matmul_run(3)
    ours = flops * 20 / _best_of(lambda: dev.matmul_run(20), 3) / 1e12
    dev.release()
    refs: dict[str, float] = {}
    if dtype in ("fp32", "fp16", "fp64"):
        npdt = {"fp32": cp.float32, "fp16": cp.float16, "fp64": cp.float64}[dtype]
        x = cp.random.default_rng(1).standard_normal((N, N), dtype=cp.float32).astype(npdt)
        refs["cupy"] = flops / _best_of(lambda: _timer(cp)(lambda: cp.matmul(x, x), 20), 3) / 1e12
    torch_rate = _torch_tflops(dtype, dev.ordinal)
    if torch_rate:
        refs["torch"] = torch_rate
    best = max(refs.values()) if refs else None
    return {"ours_tflops": round(ours, 1), **{f"{k}_tflops": round(v, 1) for k, v in refs.items()},
            "ratio": round(ours / best, 3) if best else None, "target": 0.95}


def _device_copy_gbps(cp: Any, nbytes: int) -> float:
    src, dst = cp.empty(nbytes, dtype=cp.uint8), cp.empty(nbytes, dtype=cp.uint8)
    seconds = _best_of(lambda: _timer(cp)(lambda: dst.data.copy_from_device(src.data, nbytes), 10))
    return 2 * nbytes / seconds / 1e9  # read plus written, as the STREAM figure counts


def _plain_copy_gbps(cp: Any, nbytes: int) -> tuple[float, float]:
    import numpy as np

    rt = cp.cuda.runtime
    pinned = cp.cuda.alloc_pinned_memory(nbytes)
    host = np.frombuffer(pinned, dtype=np.uint8, count=nbytes)
    d = cp.empty(nbytes, dtype=cp.uint8)
    timed = _timer(cp)
    h2d = _best_of(lambda: timed(lambda: rt.memcpyAsync(d.data.ptr, host.ctypes.data, nbytes, rt.memcpyHostToDevice, 0), 8))
    d2h = _best_of(lambda: timed(lambda: rt.memcpyAsync(host.ctypes.data, d.data.ptr, nbytes, rt.memcpyDeviceToHost, 0), 8))
    return nbytes / h2d / 1e9, nbytes / d2h / 1e9


def _pulse(dev: Any, gpu: int) -> dict[str, Any]:
    """The pulse workload as the check runs it (its parameters, 4 s a period), NVML read as fast as it
    answers meanwhile, and the check's own proof of the load (duty, skipped periods, the in-phase
    power swing) beside what the fast readings saw."""
    import threading

    import pynvml

    from nodeqc.backends.base import REASON_BITS
    from nodeqc.checks.stress.pulse import pulse_load, pulse_params
    from nodeqc.spec.profile import load_profile
    from nodeqc.work import workloads as W
    from nodeqc.work.telemetry import GpuTelemetry

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(gpu)
    readings: list[tuple[float, float, float | None, int]] = []
    stop = threading.Event()
    instant = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", None)

    def watch() -> None:
        while not stop.is_set():
            inst = None
            if instant is not None:
                v = pynvml.nvmlDeviceGetFieldValues(h, [instant])[0]
                inst = v.value.uiVal / 1000 if v.nvmlReturn == 0 else None
            readings.append((dev.clock.now(), pynvml.nvmlDeviceGetPowerUsage(h) / 1000, inst,
                             pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)))
            time.sleep(0.005)

    t0 = dev.clock.now()
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        params = {**pulse_params(load_profile("generic"), True), "seconds_per_period": 4, "run_t0": t0, "seed": 1}
        result = W.power_pulse(dev, params, _Quiet())
    finally:
        stop.set()
        thread.join()
    spans = result["periods"]
    limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000
    window = GpuTelemetry(gpu)
    window.power_limit_w = limit
    proof, short = pulse_load(spans, window)
    bad = REASON_BITS["hw_slowdown"] | REASON_BITS["power_brake"]
    out = []
    for p in spans:
        inside = [r for r in readings if p["start_s"] <= r[0] - t0 <= p["end_s"]]
        inst = [r[2] for r in inside if r[2] is not None]
        out.append({**p, "power_w": [round(min(r[1] for r in inside)), round(max(r[1] for r in inside))] if inside else None,
                    "instant_max_w": round(max(inst)) if inst else None,
                    "hw_slowdown_or_brake": any(r[3] & bad for r in inside)})
    return {"power_limit_w": limit, "product_s": result.get("product_s"), "periods": out, "load": proof,
            "load_reached": not short, "short": short,
            "target": "duty 0.35-0.65 and a power swing from 100 ms; no HW slowdown or power brake on a healthy GPU"}


def _fp8(dev: Any, ordinal: int) -> dict[str, Any]:
    """FP8 e4m3 N^3 (TFLOP/s, best of three runs of 20 products): the burn's own, then the libraries
    that reach cuBLASLt, when installed, on the same GPU one after another."""
    out: dict[str, Any] = {"target": 0.97}
    refs: dict[str, float] = {}
    if why := dev.supports("fp8"):
        out["ours"] = f"not run: {why}"
    else:
        flops = dev.matmul_setup("fp8", 1)
        dev.matmul_run(3)
        out["ours_tflops"] = round(flops * 20 / _best_of(lambda: dev.matmul_run(20), 3) / 1e12, 1)
        dev.release()
    try:
        import torch

        dev_name = f"cuda:{ordinal}"
        a = torch.randn(N, N, device=dev_name).to(torch.float8_e4m3fn)  # (M, K) row-major
        b = torch.randn(N, N, device=dev_name).to(torch.float8_e4m3fn).t()  # (K, N) column-major: K contiguous
        one = torch.tensor(1.0, device=dev_name)

        def rate(product: Any) -> float:
            def once() -> float:
                product()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(20):
                    product()
                e.record()
                e.synchronize()
                return s.elapsed_time(e) / 1000 / 20
            return 2 * N ** 3 / _best_of(once, 3) / 1e12

        try:
            refs["torch_scaled_mm"] = rate(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        except Exception as e:  # noqa: BLE001 - a reference that cannot run is reported, not fatal
            out["torch_scaled_mm"] = f"not run: {type(e).__name__}: {e}"[:200]
        try:
            import nvmath
            from nvmath.linalg.advanced import Matmul

            mm = Matmul(a, b, quantization_scales={"a": 1.0, "b": 1.0},
                        options={"result_type": nvmath.CudaDataType.CUDA_R_16BF})
            mm.plan()
            try:
                refs["nvmath_matmul"] = rate(mm.execute)
            finally:
                mm.free()
        except Exception as e:  # noqa: BLE001 - a reference that cannot run is reported, not fatal
            out["nvmath_matmul"] = f"not run: {type(e).__name__}: {e}"[:200]
        a = b = None  # the operands' memory goes back before the next part
        torch.cuda.empty_cache()
    except ImportError as e:
        out["references"] = f"not run: {e} (both need PyTorch's float8 tensors)"
    out.update({f"{k}_tflops": round(v, 1) for k, v in refs.items()})
    if refs and "ours_tflops" in out:
        out["ratio"] = round(out["ours_tflops"] / max(refs.values()), 3)
    return out


def measure(gpu: int, profile: str, quick_run: bool = True) -> Iterator[tuple[str, Any]]:
    """Each measurement in its own function, so its buffers are freed before the next one; each part
    yielded as it completes, so a run cut short keeps what it measured."""
    import cupy as cp

    from nodeqc.backends.cupy_compute import CupyDevice
    from nodeqc.work import workloads as W

    dev = CupyDevice(gpu)
    props = cp.cuda.runtime.getDeviceProperties(dev.ordinal)
    yield "device", {"device": props["name"].decode(), "driver": cp.cuda.runtime.driverGetVersion(),
                     "runtime": cp.cuda.runtime.runtimeGetVersion(), "cupy": cp.__version__}
    for dtype in ("fp32", "tf32", "fp16", "bf16", "fp64"):
        if not dev.supports(dtype):
            yield f"matmul_{dtype}", _matmul(dev, cp, dtype)
            dev.release()

    h = W.hbm_bandwidth(dev, {"bytes": 2 << 30, "trials": 5, "iters": 10}, _Quiet())
    d2d = _device_copy_gbps(cp, 2 << 30)
    dev.release()
    yield "hbm", {"ours_copy_gbps": h["copy_gbps"], "ours_triad_gbps": h["triad_gbps"], "d2d_copy_gbps": round(d2d, 1),
                  "ratio": round(h["copy_gbps"] / d2d, 3), "target": 0.90,
                  # issue 30's target is 0.98; each copy kernel's rate, the best one's figure above
                  "issue_target": 0.98, "copy_kernel": h.get("copy_kernel")}

    p = W.pcie_bandwidth(dev, {"bytes": 256 << 20, "trials": 5, "iters": 8, "min_seconds": 0}, _Quiet())
    h2d, d2h = _plain_copy_gbps(cp, 256 << 20)
    dev.release()
    yield "pcie", {"ours_h2d_gbps": p["h2d_gbps"], "plain_h2d_gbps": round(h2d, 1), "ours_d2h_gbps": p["d2h_gbps"],
                   "plain_d2h_gbps": round(d2h, 1), "h2d_ratio": round(p["h2d_gbps"] / h2d, 3),
                   "d2h_ratio": round(p["d2h_gbps"] / d2h, 3), "link": p["link"], "target": 0.90}

    # The quick memory test twice in one process: the first call pays the kernels' compilation and
    # first touch (792 against 2850 GB/s on an H100, 2026-11-26), which is what a quick check reports.
    for call in ("memtest_first", "memtest_second"):
        start = time.monotonic()
        m = W.memory_test(dev, {"fraction": 0.9}, _Quiet())
        yield call, {"gbps": m["gbps"], "tested_gib": round(m["bytes"] / 2**30, 1), "errors": m["errors"],
                     "wall_s": round(time.monotonic() - start, 1)}
    yield "pulse", _pulse(dev, gpu)
    yield "fp8", _fp8(dev, gpu)
    start = time.monotonic()
    full = W.memory_test(dev, {"fraction": 0.9, "full": True, "retention_s": 10}, _Quiet())
    yield "memtest_full", {"wall_s": round(time.monotonic() - start, 1), "retention_s": 10, "errors": full["errors"],
                           "patterns": len(full["passes"]), "gbps": full["gbps"]}
    dev.close()

    if quick_run:
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "XDG_DATA_HOME": f"{home}/d", "XDG_CONFIG_HOME": f"{home}/c"}
            start = time.monotonic()
            run = subprocess.run([sys.executable, "-m", "nodeqc", "--headless", "--profile", profile, "--quick"],
                                 env=env, capture_output=True, text=True)
            yield "quick_profile", {"profile": profile, "wall_s": round(time.monotonic() - start, 1),
                                    "exit": run.returncode, "target_s": 90,
                                    "result": (run.stderr.strip().splitlines() or [""])[-2:]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="correctness only, on the simulated device (no GPU needed)")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--profile", default="h100")
    ap.add_argument("--no-quick", action="store_true", help="leave out the timed quick qualification")
    args = ap.parse_args()
    if args.check:
        return check()
    # One JSON line a part, printed as it completes (a run cut short keeps the parts before it).
    for part, figures in measure(args.gpu, args.profile, quick_run=not args.no_quick):
        print(json.dumps({"benchmark": "gpu", "part": part, **figures}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
