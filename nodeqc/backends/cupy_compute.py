"""GPU compute through CuPy, used inside worker processes only.

CuPy is imported here and nowhere else, lazily: nodeqc imports and runs its simulated and host
checks on machines without CUDA.
"""

from __future__ import annotations

import time
from typing import Any

from nodeqc.backends.base import Clock
from nodeqc.errors import ComputeUnavailable


def import_cupy() -> Any:
    try:
        import cupy
    except ImportError as e:
        raise ComputeUnavailable(
            f"CuPy is not installed ({e}): pip install 'nodeqc[cuda12]' or 'nodeqc[cuda13]'") from None
    return cupy


class CupyDevice:
    """One real GPU, driven from the worker process that owns its CUDA context."""

    simulated = False

    def __init__(self, index: int):
        self.cp = import_cupy()
        self.index = index
        self.clock = Clock(1.0)
        try:
            self.device = self.cp.cuda.Device(index)
            self.device.use()
        except self.cp.cuda.runtime.CUDARuntimeError as e:
            raise ComputeUnavailable(f"gpu{index}: CUDA cannot open the device: {e}") from None
        self._load: tuple[Any, Any] | None = None

    def set_load(self, load: float) -> None:
        """Real GPUs show their load to NVML by themselves."""

    def check_alive(self) -> None:
        """A lost real GPU shows as a CUDA error from the next call."""

    def busy_step(self, seconds: float) -> None:
        """Keep the GPU busy for about `seconds` with half-precision matmuls (not all-zero inputs:
        zeros run measurably faster and draw less power)."""
        cp = self.cp
        if self._load is None:
            n = 8192
            rng = cp.random.default_rng(self.index)
            a = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
            self._load = (a, a.T.copy())
        a, b = self._load
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for _ in range(4):
                cp.matmul(a, b)
            cp.cuda.Device(self.index).synchronize()

    def close(self) -> None:
        self._load = None
        self.cp.get_default_memory_pool().free_all_blocks()
