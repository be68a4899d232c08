"""A two-node NCCL all-reduce across every GPU of both nodes, bootstrapped with CuPy's own
distributed module (`cupyx.distributed.init_process_group`: rank 0 hosts a TCP store on node A).

One process per GPU (NCCL takes one device per communicator rank); ranks 0..G-1 on A, G..2G-1 on
B. Every rank fills its buffer with rank + 1, so the sum is known exactly (small integers are exact
in float32) and every element of every result is checked, as the in-node NCCL check does. The bus
bandwidth is nccl-tests' all-reduce figure: bytes / time * 2(n-1)/n.

GPU-only: where CuPy or GPUs are missing this is skipped with what to install (nothing on this
machine can run it; the code path is exercised on a GPU cluster).
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

BUFFER_BYTES = 1 << 30  # 1 GiB: bandwidth-bound (the published floors average nccl-tests over 1-16 GB)
START_TIMEOUT_S = 120.0


def unavailable() -> str | None:
    try:
        import cupy
        import cupyx.distributed  # noqa: F401
    except ImportError:
        return "CuPy is not installed: pip install 'nodeqc[cuda12]' (or cuda13) on every node"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU on this node"
    except Exception as e:  # noqa: BLE001 - a driver problem is a reason to skip, said as such
        return f"CUDA is not usable here: {e}"
    return None


def _rank(rank: int, local: int, world: int, host: str, port: int, seconds: float, out: Any) -> None:
    try:
        import cupy
        import cupyx.distributed

        cupy.cuda.Device(local).use()
        comm = cupyx.distributed.init_process_group(world, rank, host=host, port=port)
        n = BUFFER_BYTES // 4
        send = cupy.full(n, rank + 1, dtype=cupy.float32)
        recv = cupy.empty_like(send)
        comm.all_reduce(send, recv, "sum")  # warm-up: connections set up here
        cupy.cuda.Device().synchronize()
        iters, start = 0, time.perf_counter()
        while True:
            comm.all_reduce(send, recv, "sum")
            iters += 1
            cupy.cuda.Device().synchronize()
            if time.perf_counter() - start >= seconds and iters >= 5:
                break
        elapsed = time.perf_counter() - start
        want = world * (world + 1) / 2
        wrong = int(cupy.count_nonzero(recv != want))  # every element checked
        algbw = BUFFER_BYTES * iters / elapsed / 1e9
        out.put({"rank": rank, "busbw": algbw * 2 * (world - 1) / world, "wrong": wrong, "iters": iters})
    except Exception as e:  # noqa: BLE001 - reported as the pair's error, never lost
        out.put({"rank": rank, "error": f"{type(e).__name__}: {e}"})


def run(index: int, host_a: str, port: int, seconds: float) -> dict[str, Any]:
    import cupy

    gpus = cupy.cuda.runtime.getDeviceCount()
    world = 2 * gpus
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(index * gpus + g, g, world, host_a, port, seconds, out))
             for g in range(gpus)]
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + START_TIMEOUT_S + seconds
    for _ in procs:
        try:
            results.append(out.get(timeout=max(1.0, deadline - time.monotonic())))
        except Exception:  # noqa: BLE001 - queue.Empty: a rank hung
            break
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
    errors = [r["error"] for r in results if "error" in r]
    if len(results) < gpus:
        errors.append(f"{gpus - len(results)} rank(s) gave no result within {START_TIMEOUT_S + seconds:.0f} s (hung)")
    wrong = sum(r.get("wrong", 0) for r in results)
    if wrong:
        errors.append(f"{wrong} elements of the all-reduce result were wrong")
    if errors:
        return {"value": None, "unit": "GB/s", "error": "; ".join(errors)}
    busbw = min(r["busbw"] for r in results)
    return {"value": round(busbw, 2), "unit": "GB/s", "error": None, "gpus": world}
