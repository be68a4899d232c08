"""Every kernel in kernels/ compiles with nvcc for each architecture the profiles name, and the
kernel names nodeqc calls exist in the sources."""

import re
import shutil
import subprocess

import pytest

from nodeqc.backends.kernels import KERNELS, source
from nodeqc.core.resources import kernels_dir
from nodeqc.spec.profile import list_profiles

NVCC = shutil.which("nvcc")
ARCHS = sorted({p.get("gpu", "compute_capability").replace(".", "") for p in list_profiles()
                if p.get("gpu", "compute_capability")})


def _supported() -> set[str]:
    out = subprocess.run([NVCC, "--list-gpu-arch"], capture_output=True, text=True).stdout
    return {m for m in re.findall(r"compute_(\d+)", out)}


def test_every_kernel_file_is_registered():
    assert {p.stem for p in kernels_dir().glob("*.cu")} == set(KERNELS)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_called_kernels_exist(name):
    text = source(name)
    for kernel in KERNELS[name]:
        assert re.search(rf'extern "C" __global__ void {kernel}\(', text), kernel


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles(tmp_path, name, arch):
    if arch not in _supported():
        pytest.skip(f"this nvcc no longer targets sm_{arch} (CUDA 13 dropped Volta); "
                    "those GPUs need the CUDA 12 toolchain (nodeqc[cuda12])")
    p = subprocess.run([NVCC, "-std=c++17", f"-arch=sm_{arch}", "-c", str(kernels_dir() / f"{name}.cu"),
                        "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_gpu_benchmark_checks_its_measuring_code_without_a_gpu():
    """benchmarks/bench_gpu.py --check: the measuring code's correctness on the simulated device."""
    import json
    import sys

    from conftest import ROOT

    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--check"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout) == {"benchmark": "gpu", "mode": "check", "ok": True, "problems": []}


def test_every_stream_copy_launches_a_kernel_of_the_stream_module_on_a_grid_that_covers_the_buffer():
    """The copies the HBM check chooses between (measured on the GPU by tests/test_gpu_real.py):
    each names a kernel of kernels/stream.cu, and the thread-a-vector copy has a thread for every
    16-byte vector (a buffer of no whole block too), within CUDA's grid limit."""
    from nodeqc.backends.cupy_compute import MAX_GRID_X, STREAM_COPIES, THREADS, CupyDevice

    device = CupyDevice.__new__(CupyDevice)  # its launch plan only: no CUDA here
    device.sm_count, device.resident_blocks = 132, 132 * 8
    for n in (THREADS * 1000, THREADS * 1000 + 3, (4 << 30) // 16):
        device._stream_n = n
        for choice in STREAM_COPIES:
            kernel, (blocks,) = device._copy_launch(choice)
            assert kernel in KERNELS["stream"] and 0 < blocks <= MAX_GRID_X
        _, (blocks,) = device._copy_launch("stream_copy_flat")
        assert (blocks - 1) * THREADS < n <= blocks * THREADS
