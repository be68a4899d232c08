"""The calibration rule: how a SKU's healthy figures (nodeqc.core.skus) become a profile's floors.

One rule for every SKU and every performance measure (matmul TFLOP/s per dtype, HBM copy, H2D,
D2H), in quick and full runs alike:

    a healthy GPU of the SKU passes without a warning;
    below 90% of its healthy figure it warns;
    below 80% it fails.

"Healthy" is the LOW end of the figures measured on healthy parts (skus.py gives each source), so a
healthy part sits at least 10% above the warning level: room for the spread seen on real parts
(about 1% run to run on one machine, about 5% between machines: bf16 747-782 on three H100 SXM5).
A part 12% slow warns, a part 22% slow fails. Until a 600 s (full) burn is measured, full runs use
the quick figures; the 10% margin covers the heat soak a longer burn adds under the same power cap.

Memory is not a rate: a GPU reporting less memory than its SKU by more than NVML's reservation is a
wrong or damaged part, so the memory floor is 98% of the SKU's reported size, rounded down to half
a GiB, with no warning band.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from nodeqc.core.skus import Sku

WARN_FRACTION = 0.90
FAIL_FRACTION = 0.80
MEMORY_FRACTION = 0.98
# Every dtype the burn knows, in the order profiles list them.
_DTYPE_ORDER = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")


def floor(healthy: float) -> dict[str, float]:
    """The { fail, warn } floor of one healthy figure, at a tenth's resolution, rounded up: no
    figure below 80% (90%) of healthy lands on the good side of the limit."""
    return {"fail": _up(healthy * FAIL_FRACTION), "warn": _up(healthy * WARN_FRACTION)}


def _up(x: float) -> float:
    return math.ceil(round(x * 10, 6)) / 10


def sku_floors(sku: Sku) -> dict[str, Any]:
    """The [gpu] settings a profile takes from one SKU: what it accepts, what it burns, its floors."""
    memory = math.floor(sku.memory_gib * MEMORY_FRACTION * 2) / 2
    return {
        "models": list(sku.nvml_names),
        "dtypes": [d for d in _DTYPE_ORDER if d in sku.healthy_tflops],
        "min_memory_gib": {"fail": memory, "warn": memory},
        **{f"min_{d}_tflops": floor(rate) for d, rate in sku.healthy_tflops.items()},
        "min_hbm_gbps": floor(sku.healthy_hbm_gbps),
        "min_h2d_gbps": floor(sku.healthy_h2d_gbps),
        "min_d2h_gbps": floor(sku.healthy_d2h_gbps),
    }


def conservative_floors(skus: Iterable[Sku]) -> dict[str, Any]:
    """The floors that hold for any of several SKUs (a family, or a node profile that takes two):
    each floor that of the slowest SKU having it. What they accept and burn stays the profile's own."""
    out: dict[str, Any] = {}
    for sku in skus:
        for key, value in sku_floors(sku).items():
            if not key.startswith("min_"):
                continue
            if key not in out:
                out[key] = dict(value)
            else:
                out[key] = {k: min(out[key][k], value[k]) for k in ("fail", "warn")}
    return out
