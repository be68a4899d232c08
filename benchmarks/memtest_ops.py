"""Per-operation times of the quick memory test, first and second call in one fresh process (issue 30:
the quick run's memtest read 1472.7 GB/s on an H100 on 2026-11-27 where the benchmark's second call
read 2858). Run on a GPU machine: python3 benchmarks/memtest_ops.py"""
import time, json
from nodeqc.backends.cupy_compute import CupyDevice
from nodeqc.work import workloads as W
class Q:
    def progress(self, *a, **k): pass
t0=time.monotonic()
dev = CupyDevice(0)
print("open", round(time.monotonic()-t0,2), flush=True)
times = {}
for name in ("memtest_write","memtest_check","memtest_invert","memtest_address_lines","memtest_move"):
    real = getattr(dev, name)
    def wrap(*a, _r=real, _n=name, **k):
        w=time.perf_counter(); out=_r(*a, **k); el=time.perf_counter()-w
        s = out if isinstance(out,float) else out[-1]
        times.setdefault(_n, []).append((round(s,4), round(el,4)))
        return out
    setattr(dev, name, wrap)
for call in ("first","second"):
    times.clear(); w=time.monotonic()
    m = W.memory_test(dev, {"fraction": 0.9}, Q())
    print(call, "gbps", m["gbps"], "wall", round(time.monotonic()-w,2), json.dumps(times), flush=True)
