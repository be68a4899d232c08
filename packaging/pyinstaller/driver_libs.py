"""The NVIDIA driver's user-space libraries: never bundled. They must match the kernel module of
the machine the build runs on, so the build loads the ones the installed driver provides."""

from __future__ import annotations

from pathlib import PurePath

# libcudart and the other CUDA toolkit libraries (CuPy's) are not the driver and may be bundled.
DRIVER_PREFIXES = ("libnvidia-", "libcuda.so", "libcudadebugger.so", "libnvcuvid.so", "libnvoptix.so")


def is_driver_library(name: str) -> bool:
    return PurePath(name).name.startswith(DRIVER_PREFIXES)
