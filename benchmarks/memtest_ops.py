"""Each operation's time in the quick memory test, first and second call in one fresh process
(issue 30). The quick run's memtest read 1472.7 GB/s on an H100 on 2026-11-27 where the benchmark's
calls read 2858: this showed the first call's address-line pass taking 0.568 s (CuPy compiling its
indexing kernels) while every sweep took the same time in both calls.

On a GPU machine, from the project root: PYTHONPATH=$PWD python3 benchmarks/memtest_ops.py
Prints, per call, the rate the workload reports, the wall time, and each operation's (timed, wall)
seconds.
"""

from __future__ import annotations

import json
import time

from nodeqc.backends.cupy_compute import CupyDevice
from nodeqc.work import workloads as W

OPS = ("memtest_write", "memtest_check", "memtest_invert", "memtest_address_lines", "memtest_move")


class _Quiet:
    def progress(self, *args, **figures) -> None:
        pass


def main() -> None:
    start = time.monotonic()
    dev = CupyDevice(0)
    print("open", round(time.monotonic() - start, 2), flush=True)
    times: dict[str, list[tuple[float, float]]] = {}
    for name in OPS:
        def timed(*args, _real=getattr(dev, name), _name=name, **kwargs):
            t0 = time.perf_counter()
            out = _real(*args, **kwargs)
            wall = time.perf_counter() - t0
            reported = out if isinstance(out, float) else out[-1]
            times.setdefault(_name, []).append((round(reported, 4), round(wall, 4)))
            return out
        setattr(dev, name, timed)
    for call in ("first", "second"):
        times.clear()
        start = time.monotonic()
        m = W.memory_test(dev, {"fraction": 0.9}, _Quiet())
        print(call, "gbps", m["gbps"], "wall", round(time.monotonic() - start, 2), json.dumps(times), flush=True)
    dev.close()


if __name__ == "__main__":
    main()
