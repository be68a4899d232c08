"""CUDA kernels from kernels/*.cu, compiled through CuPy (NVRTC) on first use and cached by CuPy
(CUPY_CACHE_DIR). Nothing here runs at import time: nodeqc imports on machines without CUDA.

A worker's first open of a GPU starts compiling every module beside its work (`compile_beside`):
on a node that never ran nodeqc each module's first compilation stood between two steps of the
quick run, while the burn's 30 s before them leave the worker's CPU idle (it waits on the GPU)."""

from __future__ import annotations

import threading
from typing import Any

from nodeqc.core.resources import kernels_dir

KERNELS = {
    "stream": ("stream_copy", "stream_copy_x4", "stream_copy_x8", "stream_triad"),
    "memtest": ("mt_write", "mt_check", "mt_invert"),
    "checksum": ("checksum_words",),
    "fp8": ("e4m3_encode",),
}

# What the product hands NVRTC beside the architecture CuPy picks; tests/test_kernels.py compiles every
# module with the same, through NVRTC itself and through nvcc.
COMPILE_OPTIONS = ("-std=c++17",)

_modules: dict[tuple[str, int], Any] = {}
_building: dict[tuple[str, int], threading.Lock] = {}
_guard = threading.Lock()
_compiling: dict[int, threading.Thread] = {}


def source(name: str) -> str:
    return (kernels_dir() / f"{name}.cu").read_text(encoding="utf-8")


def module(name: str, device: int) -> Any:
    """The compiled module for `device` (one per device: CuPy binds modules to it). Compiled once a
    process: a caller that asks while another thread compiles it waits for that compilation."""
    key = (name, device)
    with _guard:
        lock = _building.setdefault(key, threading.Lock())
    with lock:
        if key not in _modules:
            import cupy

            with cupy.cuda.Device(device):
                mod = cupy.RawModule(code=source(name), options=COMPILE_OPTIONS, name_expressions=None)
                mod.compile()
            _modules[key] = mod
        return _modules[key]


def compiled(name: str, device: int) -> bool:
    """Whether this process holds the module for `device` already (no compilation waits for it)."""
    return (name, device) in _modules


def function(name: str, kernel: str, device: int) -> Any:
    return module(name, device).get_function(kernel)


def compile_beside(device: int) -> threading.Thread:
    """Every module for `device` compiled in a thread of its own, once a process. The GPU is not
    touched beyond loading each module, and NVRTC runs without the interpreter's lock (CuPy releases
    it), so the work in the calling thread goes on. A module that fails here is left for the step
    that needs it, which compiles it again and reports the error as its own."""
    with _guard:
        thread = _compiling.get(device)
        if thread is None:
            thread = _compiling[device] = threading.Thread(target=_compile_all, args=(device,), daemon=True,
                                                           name=f"nodeqc-kernels-gpu{device}")
            thread.start()
    return thread


def _compile_all(device: int) -> None:
    for name in KERNELS:
        try:
            module(name, device)
        except Exception:  # noqa: BLE001 - the step that needs the module meets the error again, and reports it
            continue
