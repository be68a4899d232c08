"""Where the quick burn's time goes besides its load (issue 30): each set-up operation's wall time in
one fresh process, on a real GPU. On an H100 on 2026-11-27 (evening) the quick run took 63.2 s: the
burn's first dtype computed 1.6 s after the step began, fp8 1.9 s after bf16 ended.

On a GPU machine, from the project root:
    PYTHONPATH=$PWD python3 benchmarks/burn_setup.py [--gpu 0]
Run it with CUPY_CACHE_DIR pointing at an empty folder (a fresh node: CuPy compiles every kernel),
then again with the same folder (a node qualified before). Prints one JSON line per operation, and
whether importing nvmath's cuBLASLt binding made a CUDA context (nodeqc's workers import it while
telemetry takes the GPU's idle readings, which must see an untouched GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Callable

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")


def timed(name: str, fn: Callable[[], Any], **extra: Any) -> Any:
    start = time.perf_counter()
    out = fn()
    print(json.dumps({"op": name, "s": round(time.perf_counter() - start, 4), **extra}), flush=True)
    return out


def has_context(gpu: int) -> bool | str:
    """Whether this process holds a CUDA context on the GPU, as NVML lists compute processes."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(gpu)
        return any(p.pid == os.getpid() for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle))
    except Exception as e:  # noqa: BLE001 - a VM's NVML may not list processes: say so
        return f"unknown: {type(e).__name__}: {e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, default=0)
    gpu = parser.parse_args().gpu
    print(json.dumps({"cupy_cache": os.environ.get("CUPY_CACHE_DIR", "~/.cupy/kernel_cache")}), flush=True)
    timed("import cupy", lambda: __import__("cupy"))
    from nodeqc.backends.cublaslt import import_bindings

    timed("import nvmath cuBLASLt", import_bindings)
    print(json.dumps({"op": "context after the imports", "context": has_context(gpu)}), flush=True)
    from nodeqc.backends.cupy_compute import CupyDevice
    from nodeqc.core.known_answer import known_answer_inputs
    from nodeqc.work.workloads import warm_product_s

    dev = timed("open the device (CUDA context)", lambda: CupyDevice(gpu))
    print(json.dumps({"op": "context after the open", "context": has_context(gpu)}), flush=True)
    a, b, _ = timed("known-answer inputs (host)", lambda: known_answer_inputs(dev.ka_size))
    for dtype in DTYPES:
        if why := dev.supports(dtype):
            print(json.dumps({"op": "skip", "dtype": dtype, "why": why}), flush=True)
            continue
        timed("matmul_setup", lambda: dev.matmul_setup(dtype, 1), dtype=dtype)
        timed("warm product", lambda: warm_product_s(dev), dtype=dtype)
        timed("known answer", lambda: dev.to_host(dev.known_answer(dtype, a, b)), dtype=dtype)
        timed("fingerprint", dev.matmul_fingerprint, dtype=dtype)
        timed("known answer again", lambda: dev.to_host(dev.known_answer(dtype, a, b)), dtype=dtype)
        timed("release", dev.release, dtype=dtype)
    # Each kernel module's compilation (those the burn did not compile already take an empty cache's
    # time): what a fresh node's quick run paid between its steps before the modules were compiled
    # beside the burn (nodeqc.backends.kernels.compile_beside).
    from nodeqc.backends.kernels import KERNELS, module

    for name in KERNELS:
        timed("compile", lambda: module(name, dev.ordinal), module=f"kernels/{name}.cu")
    timed("close", dev.close)


if __name__ == "__main__":
    main()
