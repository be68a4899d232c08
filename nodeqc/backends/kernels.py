"""CUDA kernels from kernels/*.cu, compiled through CuPy (NVRTC) on first use and cached by CuPy
(CUPY_CACHE_DIR). Nothing here runs at import time: nodeqc imports on machines without CUDA."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from nodeqc.core.resources import kernels_dir

KERNELS = {
    "stream": ("stream_copy", "stream_copy_x4", "stream_copy_x8", "stream_triad"),
    "memtest": ("mt_write", "mt_check", "mt_invert"),
    "checksum": ("checksum_words",),
    "fp8": ("e4m3_encode",),
}


def source(name: str) -> str:
    return (kernels_dir() / f"{name}.cu").read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def module(name: str, device: int) -> Any:
    """The compiled module for the current device (one per device: CuPy binds modules to it)."""
    import cupy

    with cupy.cuda.Device(device):
        mod = cupy.RawModule(code=source(name), options=("-std=c++17",), name_expressions=None)
        mod.compile()
    return mod


def function(name: str, kernel: str, device: int) -> Any:
    return module(name, device).get_function(kernel)
