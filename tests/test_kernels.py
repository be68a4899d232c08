"""Every kernel in kernels/ compiles for each architecture the profiles name, with nvcc and with NVRTC
(the compiler the product runs through CuPy on the GPU node), and the kernel names nodeqc calls exist
in the sources and in what NVRTC builds."""

import ctypes
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nodeqc.backends.kernels import COMPILE_OPTIONS, KERNELS, source
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
        pytest.skip(f"this nvcc no longer targets sm_{arch} (CUDA 13 dropped Volta); those GPUs need the "
                    "CUDA 12 toolchain (nodeqc[cuda12]), whose NVRTC compiles them in the test below")
    # Device code alone (-cubin), as NVRTC compiles it at run time: the host pass of `-c` added
    # nothing the run compiles and doubled each compilation's time (0.72 against 1.44 s).
    p = subprocess.run([NVCC, *COMPILE_OPTIONS, f"-arch=sm_{arch}", "-cubin", str(kernels_dir() / f"{name}.cu"),
                        "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# Where each NVRTC wheel of the test extra puts its library: nvidia-cuda-nvrtc-cu12 (CUDA 12, the
# driver the lent H100s and H200s ran, and the last to target Volta) and nvidia-cuda-nvrtc (CUDA 13).
NVRTC_WHEELS = {"12": ("cuda_nvrtc/lib", "libnvrtc.so.12"), "13": ("cu13/lib", "libnvrtc.so.13")}


def _nvrtcs() -> dict[str, ctypes.CDLL]:
    """Each NVRTC installed, by CUDA major, its builtins loaded first and globally, as CuPy loads them."""
    spec = importlib.util.find_spec("nvidia")
    found = {}
    for major, (folder, name) in NVRTC_WHEELS.items():
        for root in (spec.submodule_search_locations if spec else ()):
            lib = Path(root) / folder
            if (lib / name).exists():
                for builtins in sorted(lib.glob(f"libnvrtc-builtins.so.{major}.*")):
                    ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
                found[major] = ctypes.CDLL(str(lib / name))
                break
    return found


NVRTCS = _nvrtcs()
NO_NVRTC = "NVRTC (the nvidia-cuda-nvrtc wheels of the test extra) is not installed"


def _nvrtc_compile(nvrtc: ctypes.CDLL, text: str, filename: str, options: list[str]) -> tuple[int, str, bytes]:
    """(NVRTC's result code, its log, the cubin) for one source."""
    program = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), text.encode(), filename.encode(), 0, None, None) == 0
    try:
        encoded = [o.encode() for o in options]
        result = nvrtc.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        cubin = b""
        if result == 0:
            nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
            buffer = ctypes.create_string_buffer(size.value)
            nvrtc.nvrtcGetCUBIN(program, buffer)
            cubin = buffer.raw
        return result, log.value.decode(errors="replace"), cubin
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def _targets(nvrtc: ctypes.CDLL) -> set[int]:
    count = ctypes.c_int()
    assert nvrtc.nvrtcGetNumSupportedArchs(ctypes.byref(count)) == 0
    supported = (ctypes.c_int * count.value)()
    nvrtc.nvrtcGetSupportedArchs(supported)
    return set(supported)


@pytest.mark.skipif(not NVRTCS, reason=NO_NVRTC)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles_with_nvrtc_as_the_product_compiles_it(name):
    """No host headers under NVRTC: a source that leans on one (fp8.cu's math functions, say) compiles
    with nvcc and fails on the node. Each module, with the product's options, for every architecture
    the profiles name, through each NVRTC installed that targets it (Volta's through CUDA 12's alone);
    every kernel nodeqc calls is in the cubin by name."""
    covered = set()
    for major, nvrtc in sorted(NVRTCS.items()):
        for arch in [a for a in ARCHS if int(a) in _targets(nvrtc)]:
            result, log, cubin = _nvrtc_compile(nvrtc, source(name), f"{name}.cu",
                                                [*COMPILE_OPTIONS, f"--gpu-architecture=sm_{arch}"])
            assert result == 0, f"CUDA {major} NVRTC, sm_{arch}: {log}"
            for kernel in KERNELS[name]:
                assert kernel.encode() + b"\0" in cubin, (major, arch, kernel)
            covered.add(arch)
    # With both wheels (the test extra on Linux), every architecture a profile names.
    assert covered == set(ARCHS) or set(NVRTCS) != set(NVRTC_WHEELS), sorted(set(ARCHS) - covered)


@pytest.mark.skipif(not NVRTCS, reason=NO_NVRTC)
def test_nvrtc_refuses_a_source_that_needs_a_host_header():
    """The test above can fail: a kernel that includes a host header does not compile under NVRTC."""
    for major, nvrtc in NVRTCS.items():
        result, log, _ = _nvrtc_compile(nvrtc, '#include <cstdio>\nextern "C" __global__ void k() {}\n', "k.cu",
                                        [*COMPILE_OPTIONS, "--gpu-architecture=sm_90"])
        assert result != 0 and "cstdio" in log, major


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
def test_the_fp8_kernels_encoding_is_e4m3_bits_value_by_value(tmp_path):
    """kernels/fp8.cu's e4m3_of, compiled for the host, against nodeqc's e4m3 encoding (itself held to
    ml_dtypes' by tests/test_fp8.py): every e4m3 value, every midpoint between neighbours (ties to
    even) and a float32 step either side, random normals at several scales, 200,000 random float32
    bit patterns (every class: subnormals, infinities, NaNs of either sign), and the edges."""
    import numpy as np

    from nodeqc.backends.cublaslt import e4m3_bits, e4m3_value

    harness = tmp_path / "harness.cu"
    harness.write_text('#include <cmath>\n#include <cstdio>\n#include "fp8.cu"\n'
                       "int main() { float v; while (fread(&v, sizeof v, 1, stdin) == 1) {"
                       " unsigned char b = e4m3_of(v); fwrite(&b, 1, 1, stdout); } return 0; }\n")
    built = subprocess.run([NVCC, "-std=c++17", "-I", str(kernels_dir()), "-o", str(tmp_path / "h"), str(harness)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    values = np.unique(e4m3_value(np.arange(256, dtype=np.uint8))[~np.isnan(e4m3_value(np.arange(256, dtype=np.uint8)))])
    mids = ((values[:-1].astype(np.float64) + values[1:]) / 2).astype(np.float32)
    rng = np.random.default_rng(20261127)
    x = np.concatenate([
        values.astype(np.float32), mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
        *(rng.standard_normal(20_000).astype(np.float32) * s for s in (1e-3, 1.0, 30.0, 500.0)),
        rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 448, 449, 464, 465, -1e30, 2**-9, 2**-10, 1e-45],
                 dtype=np.float32)])
    got = subprocess.run([str(tmp_path / "h")], input=x.tobytes(), capture_output=True, timeout=60).stdout
    want = e4m3_bits(np, x)
    wrong = np.flatnonzero(np.frombuffer(got, dtype=np.uint8) != want)
    assert len(got) == len(x) and wrong.size == 0, [(float(x[i]), got[i], int(want[i])) for i in wrong[:5]]


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
