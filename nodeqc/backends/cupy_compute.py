"""GPU compute through CuPy, one GPU's work (the GPUs of a node together: nodeqc.backends.cupy_node), used
inside worker processes only.

CuPy is imported here and nowhere else, lazily: nodeqc imports and runs its simulated and host
checks on machines without CUDA. The operations mirror nodeqc/backends/sim/compute.py one for one;
the workloads in nodeqc/work/workloads.py drive either.

Matrix products go through cuBLAS `gemmEx`, which names the input, output and compute types
explicitly: true FP32 (no silent TF32), TF32, FP16 and BF16 (CuPy has no bfloat16 dtype, so BF16
operands are uint16 bit patterns) with FP32 accumulation, FP64. FP8 (e4m3) needs cuBLASLt, which
CuPy does not expose: it goes through nvmath-python's cuBLASLt bindings (nodeqc/backends/cublaslt.py)
on CuPy buffers of e4m3 bit patterns, and where that cannot run it is reported as not run, never faked.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from nodeqc.backends.base import Clock
from nodeqc.backends.cublaslt import Fp8Engine, e4m3_bits
from nodeqc.backends.kernels import compile_beside, function
from nodeqc.core.errors import ComputeUnavailable, DtypeUnavailable

MATMUL_N = 8192  # big enough to keep every SM busy on an H100; 128-512 MiB per operand
MEMTEST_MAX_RECORDS = 64
THREADS = 256
# The STREAM copies (kernels/stream.cu): the plain one-load loop over an oversubscribed grid; 4 and
# 8 loads in flight a thread over one wave of blocks; and the plain loop with a thread for every
# vector (no thread loops). On an H100 (2026-11-27, benchmarks/hbm_copy_variants.py, 4 GiB) the first
# three read 0.936-0.949 of a device-to-device copy (2823-2848 against 3017 GB/s), cache-streaming
# loads and stores and the bulk copy engine (TMA) no better; a thread a vector read 1.003 (3026).
# Each run measures them all and keeps the fastest.
STREAM_COPIES = ("stream_copy", "stream_copy_x4", "stream_copy_x8", "stream_copy_flat")
MAX_GRID_X = 2**31 - 1


def byte_ramp(nbytes: int) -> np.ndarray:
    """Bytes 0, 1, ..., 255, 0, 1, ... (byte i is i mod 256): the PCIe round trip's pattern, so a
    shifted, dropped or repeated chunk changes the data. Built by repeating one 256-byte row, not by
    narrowing a 64-bit ramp: that made a 2 GiB temporary for a 256 MiB buffer, 21 s on this 2-core
    CI machine against 0.1 s now (2026-11-27); on a GPU node it is an estimated second or two of the
    quick PCIe check's 5 s, unmeasured there (issue 30)."""
    out = np.empty(nbytes, dtype=np.uint8)
    whole = nbytes - nbytes % 256
    out[:whole].reshape(-1, 256)[:] = np.arange(256, dtype=np.uint8)
    out[whole:] = np.arange(nbytes - whole, dtype=np.uint8)
    return out


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
    ka_size = 1024  # known-answer product: exact in every dtype, and cheap to check on the host

    def __init__(self, index: int, bus_id: str | None = None, clock_origin: float | None = None):
        cp = self.cp = import_cupy()
        self.index = index
        self.clock = Clock(1.0, clock_origin)  # the run's clock (nodeqc.backends.real_hardware)
        try:
            # Open the GPU by its PCI address: CUDA's own numbering need not match NVML's.
            ordinal = cp.cuda.runtime.deviceGetByPCIBusId(bus_id) if bus_id else index
            self.device = cp.cuda.Device(ordinal)
            self.device.use()
            properties = cp.cuda.runtime.getDeviceProperties(ordinal)
            self.sm_count = properties["multiProcessorCount"]
            # One wave of resident blocks, for the copies that keep several loads in flight a thread.
            self.resident_blocks = self.sm_count * max(1, properties["maxThreadsPerMultiProcessor"] // THREADS)
        except cp.cuda.runtime.CUDARuntimeError as e:
            raise ComputeUnavailable(f"gpu{index}: CUDA cannot open the device: {e}") from None
        self.ordinal = ordinal
        self.bus_id = bus_id
        self._power: Any = None  # nodeqc.backends.nvml.PowerReader, opened on first use
        self._mm: dict[str, Any] = {}
        self._busy: tuple[Any, Any] | None = None
        self._fp8: Fp8Engine | DtypeUnavailable | None = None  # made on first use: the engine, or why not

    def compile_kernels_beside(self) -> None:
        """Every kernel module compiled for this GPU in a thread beside the task's work (nodeqc.backends.kernels)."""
        compile_beside(self.ordinal)

    @property
    def compute_capability(self) -> float:
        return int(self.device.compute_capability) / 10

    def set_load(self, load: float) -> None:
        """Real GPUs show their load to NVML by themselves."""

    def set_pulse(self, period_s: float) -> None:
        """The pulse test's period: real GPUs show what it does to their power by themselves."""

    def check_alive(self) -> None:
        """A lost real GPU shows as a CUDA error from the next call."""

    def power_reading(self) -> tuple[float | None, float | None]:
        """(power, instantaneous power) in W as NVML reads them now, from this worker (None: no answer)."""
        if self._power is None:
            from nodeqc.backends.nvml import PowerReader

            self._power = PowerReader(self.bus_id, self.index)
        return self._power.read()

    def release(self) -> None:
        """Free every buffer of the last operation, so the next one can take the memory."""
        self._close_fp8_plans()
        self._mm, self._busy = {}, None
        self._stream = self._mem = self._errors = self._records = None
        self._pinned = self._host = self._dev = None
        self.cp.get_default_memory_pool().free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()

    def close(self) -> None:
        self.release()
        if self._power is not None:
            self._power.close()
            self._power = None
        if isinstance(self._fp8, Fp8Engine):
            self._fp8.close()
        self._fp8 = None

    def supports(self, dtype: str) -> str | None:
        cc = self.compute_capability
        if dtype == "fp8":
            try:
                self._fp8_engine()
            except DtypeUnavailable as e:
                return str(e)
            return None
        if dtype in ("tf32", "bf16") and cc < 8.0:
            return f"{dtype} needs compute capability 8.0 or newer (this GPU: {cc:.1f})"
        return None

    def _grid(self) -> tuple[int]:
        return (self.sm_count * 32,)

    def _elapsed(self, start: Any, end: Any) -> float:
        end.synchronize()
        return self.cp.cuda.get_elapsed_time(start, end) / 1000.0

    def busy_step(self, seconds: float) -> None:
        """Plain load for `seconds` (half-precision products)."""
        cp = self.cp
        if self._busy is None:
            a = cp.random.default_rng(self.index).standard_normal((MATMUL_N, MATMUL_N), dtype=cp.float32)
            self._busy = (a.astype(cp.float16), a.T.astype(cp.float16))
        a, b = self._busy
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for _ in range(4):
                cp.matmul(a, b)
            self.device.synchronize()

    # ------------------------------------------------------------------ matmul

    def _types(self, dtype: str, exact_out: bool) -> tuple[int, int, int, Any]:
        """(input type, output type, compute type, scalar numpy type) for cublasGemmEx."""
        from cupy.cuda import cublas, runtime

        r32, r64, r16, rbf16 = runtime.CUDA_R_32F, runtime.CUDA_R_64F, runtime.CUDA_R_16F, runtime.CUDA_R_16BF
        if dtype == "fp64":
            return r64, r64, cublas.CUBLAS_COMPUTE_64F, np.float64
        if dtype == "fp32":
            return r32, r32, cublas.CUBLAS_COMPUTE_32F_PEDANTIC, np.float32
        if dtype == "tf32":
            return r32, r32, cublas.CUBLAS_COMPUTE_32F_FAST_TF32, np.float32
        inp = r16 if dtype == "fp16" else rbf16
        return inp, (r32 if exact_out else inp), cublas.CUBLAS_COMPUTE_32F, np.float32

    def _operand(self, x32: Any, dtype: str) -> Any:
        """A float32 device array as the dtype's operand (bf16 as its top 16 bits)."""
        cp = self.cp
        if dtype == "fp64":
            return x32.astype(cp.float64)
        if dtype in ("fp32", "tf32"):
            return x32
        if dtype == "fp16":
            return x32.astype(cp.float16)
        return (x32.view(cp.uint32) >> 16).astype(cp.uint16)

    def _gemm(self, a: Any, b: Any, c: Any, n: int, types: tuple[int, int, int, Any]) -> None:
        from cupy.cuda import cublas

        in_t, out_t, compute, scalar = types
        handle = self.cp.cuda.device.get_cublas_handle()
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        alpha, beta = np.array(1, dtype=scalar), np.array(0, dtype=scalar)
        # Row-major C = A B is column-major C^T = B^T A^T: hand cuBLAS B first.
        cublas.gemmEx(handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, n, n, alpha.ctypes.data,
                      b.data.ptr, in_t, n, a.data.ptr, in_t, n, beta.ctypes.data, c.data.ptr, out_t, n,
                      compute, getattr(cublas, "CUBLAS_GEMM_DEFAULT", -1))

    # FP8 (e4m3) through cuBLASLt: nodeqc/backends/cublaslt.py says what the library requires.

    def _fp8_engine(self) -> Fp8Engine:
        """cuBLASLt for this GPU, made once; DtypeUnavailable (again, each time asked) if it cannot be."""
        if self._fp8 is None:
            try:
                self._fp8 = Fp8Engine(self.compute_capability)
            except DtypeUnavailable as e:
                self._fp8 = e
        if isinstance(self._fp8, DtypeUnavailable):
            raise DtypeUnavailable(str(self._fp8))
        return self._fp8

    def _fp8_plan(self, n: int, out: str) -> Any:
        """The plan of an n x n FP8 product writing `out`, with its workspace, made once per operation."""
        plans = self._mm.setdefault("fp8_plans", {})
        if (n, out) not in plans:
            plan = self._fp8_engine().plan(n, out)
            plans[(n, out)] = (plan, self.cp.empty(max(plan.workspace_bytes, 1), dtype=self.cp.uint8))
        return plans[(n, out)]

    def _close_fp8_plans(self) -> None:
        for plan, _ in self._mm.get("fp8_plans", {}).values():
            plan.close()
        self._mm.pop("fp8_plans", None)

    def _fp8_product(self, a: Any, bt: Any, d: Any, out: str) -> None:
        """D = A @ B for e4m3 operands A and B transposed (uint8 bit patterns), on the current stream."""
        plan, workspace = self._fp8_plan(a.shape[0], out)
        plan.run(bt.data.ptr, a.data.ptr, d.data.ptr, workspace.data.ptr, self.cp.cuda.get_current_stream().ptr)

    def e4m3(self, x32: Any) -> Any:
        """A float32 device array's e4m3 bit patterns (uint8), by one kernel (kernels/fp8.cu): the
        encoding of e4m3_bits, which compiled a dozen CuPy kernels on a node's first run (3.17 s)."""
        x32 = self.cp.ascontiguousarray(x32, dtype=self.cp.float32)  # the kernel reads words in order
        out = self.cp.empty(x32.shape, dtype=self.cp.uint8)
        function("fp8", "e4m3_encode", self.ordinal)(self._grid(), (THREADS,), (x32, out, np.uint64(x32.size)))
        return out

    def _fp8_setup(self, rng: Any, n: int) -> int:
        """Standard normal operands rounded to e4m3, a bf16 product (as uint16 bits), the plans of
        the burn's and the known-answer's products, and a first product: whatever cuBLASLt refuses
        shows here, in the set-up, as not run. A CUDA error (a GPU fault) is not caught here."""
        cp = self.cp
        a = self.e4m3(rng.standard_normal((n, n), dtype=cp.float32))
        bt = self.e4m3(rng.standard_normal((n, n), dtype=cp.float32))  # random: B^T is as good
        c = cp.empty((n, n), dtype=cp.uint16)
        self._close_fp8_plans()
        self._mm = {"a": a, "b": bt, "c": c, "fp8": True, "n": n}
        self._fp8_plan(self.ka_size, "fp32")
        try:
            self._fp8_product(a, bt, c, "bf16")
        except DtypeUnavailable:
            raise
        except Exception as e:  # noqa: BLE001 - a cuBLASLt status on the first product: it cannot run here
            raise DtypeUnavailable(f"cuBLASLt refused the first fp8 product: {type(e).__name__}: {e}") from None
        self.device.synchronize()
        return 2 * n ** 3

    def matmul_setup(self, dtype: str, seed: int, n: int = MATMUL_N) -> int:
        """Operands of n x n (the burn's MATMUL_N unless a workload needs shorter products: the
        pulse's fastest bursts); returns flops per product."""
        cp = self.cp
        rng = cp.random.default_rng(seed)  # the same seed on every GPU: identical work to compare
        if dtype == "fp8":
            return self._fp8_setup(rng, n)
        a = self._operand(rng.standard_normal((n, n), dtype=cp.float32), dtype)
        b = self._operand(rng.standard_normal((n, n), dtype=cp.float32), dtype)
        out = {"fp64": cp.float64, "fp32": cp.float32, "tf32": cp.float32, "fp16": cp.float16, "bf16": cp.uint16}
        c = cp.empty((n, n), dtype=out[dtype])
        self._mm = {"a": a, "b": b, "c": c, "types": self._types(dtype, exact_out=False), "n": n}
        return 2 * n ** 3

    def matmul_run(self, iters: int) -> float:
        cp, mm = self.cp, self._mm
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(iters):
            if "fp8" in mm:
                self._fp8_product(mm["a"], mm["b"], mm["c"], "bf16")
            else:
                self._gemm(mm["a"], mm["b"], mm["c"], mm["n"], mm["types"])
        end.record()
        return self._elapsed(start, end)  # completed work only: the end event waits for every product

    def fingerprint(self, x: Any) -> str:
        cp = self.cp
        words = x.view(cp.uint32).ravel()
        out = cp.zeros(2, dtype=cp.uint64)
        function("checksum", "checksum_words", self.ordinal)(self._grid(), (THREADS,), (words, np.uint64(words.size), out))
        plain, weighted = (int(v) for v in out.get())
        return f"{plain:016x}{weighted:016x}"

    def matmul_fingerprint(self) -> str:
        return self.fingerprint(self._mm["c"])

    def known_answer(self, dtype: str, a: np.ndarray, b: np.ndarray) -> Any:
        """The product of integer matrices in `dtype`, accumulated and returned in FP32 (FP64 for
        fp64), so the exact result is representable and can be compared bit for bit."""
        cp = self.cp
        n = a.shape[0]
        if dtype == "fp8":
            c = cp.zeros((n, n), dtype=cp.float32)
            self._fp8_product(cp.asarray(e4m3_bits(np, a)), cp.asarray(e4m3_bits(np, np.ascontiguousarray(b.T))), c, "fp32")
            return c
        da = self._operand(cp.asarray(a, dtype=cp.float32), dtype)
        db = self._operand(cp.asarray(b, dtype=cp.float32), dtype)
        types = self._types(dtype, exact_out=True)
        c = cp.zeros((n, n), dtype=cp.float64 if dtype == "fp64" else cp.float32)
        self._gemm(da, db, c, n, types)
        return c

    def to_host(self, x: Any) -> np.ndarray:
        return self.cp.asnumpy(x)

    # ------------------------------------------------------------------ memory bandwidth

    def stream_setup(self, nbytes: int) -> int:
        """The buffers, and the copy kernel this GPU runs fastest: each of STREAM_COPIES a few passes
        (compiled and warmed first), the best of them kept (measure_copies says their rates). Every
        copy then timed is that kernel's, and the triad reads what it wrote: the verification of the
        final buffer covers the kernel that gave the figure."""
        cp = self.cp
        n = nbytes // 16
        self._stream = [cp.arange(n * 4, dtype=cp.float32) for _ in range(3)]
        self._stream_n = n
        self._copy_kernel = STREAM_COPIES[0]
        self._copy_rates = self._measure_copies()
        self._copy_kernel = max(self._copy_rates, key=lambda k: self._copy_rates[k])
        return 2 * n * 16

    def _measure_copies(self) -> dict[str, float]:
        """GB/s (read + written) of each copy kernel on this buffer: best of three timed passes."""
        rates = {}
        for kernel in STREAM_COPIES:
            self._copy_kernel = kernel
            self.stream_run("copy", 1)  # compiled, loaded and warm before it is timed
            seconds = min(self.stream_run("copy", 1) for _ in range(3))
            rates[kernel] = round(2 * self._stream_n * 16 / seconds / 1e9, 1) if seconds > 0 else 0.0
        return rates

    def stream_copy_choice(self) -> dict[str, Any]:
        """Which copy kernel the figures are of, and every kernel's rate when it was chosen."""
        return {"kernel": self._copy_kernel, "rates_gbps": dict(self._copy_rates)}

    def _copy_launch(self, choice: str) -> tuple[str, tuple[int]]:
        """The kernel and grid of one of STREAM_COPIES."""
        if choice == "stream_copy_flat":
            return "stream_copy", (min(-(-self._stream_n // THREADS), MAX_GRID_X),)
        if choice == "stream_copy":
            return choice, self._grid()
        return choice, (self.resident_blocks,)

    def stream_run(self, kind: str, iters: int) -> float:
        cp = self.cp
        a, b, c = self._stream
        start, end = cp.cuda.Event(), cp.cuda.Event()
        kernel, grid = self._copy_launch(self._copy_kernel)
        start.record()
        for _ in range(iters):
            if kind == "copy":
                function("stream", kernel, self.ordinal)(grid, (THREADS,), (b, a, np.uint64(self._stream_n)))
            else:
                function("stream", "stream_triad", self.ordinal)(
                    self._grid(), (THREADS,), (b, c, a, np.float32(2.0), np.uint64(self._stream_n)))
        end.record()
        return self._elapsed(start, end)

    def stream_result(self) -> Any:
        """Buffer `a` after copy (b = a) then triad (a = b + 2c), a, b, c all starting as arange;
        nodeqc.core.known_answer.stream_expected says what it must hold."""
        return self._stream[0]

    # ------------------------------------------------------------------ memory pattern test

    def memtest_setup(self, fraction: float) -> dict[str, Any]:
        cp = self.cp
        self.release()
        free, _ = cp.cuda.runtime.memGetInfo()
        words = int(free * fraction) // 8
        self._mem = cp.empty(words, dtype=cp.uint64)
        self._errors = cp.zeros(1, dtype=cp.uint64)
        self._records = cp.zeros((MEMTEST_MAX_RECORDS, 3), dtype=cp.uint64)
        self._memtest_warm_up()
        return {"bytes": words * 8, "free_bytes": int(free), "base_address": int(self._mem.data.ptr),
                "words": words}

    def _memtest_warm_up(self) -> None:
        """Every kernel of the memory test launched once on no words before any is timed: CUDA loads a
        function into the context on its first launch (lazy loading, CUDA 11.7+), and CuPy builds its
        copy kernel on its first copy. With compilation already out of the timing, the quick test's
        first run in a process still read 1369 GB/s on an H100 against ~2850 for a second (2026-11-26);
        that this is the rest is a hypothesis until benchmarks/on_device.sh measures it. n = 0 writes
        no word; the copy moves one word, which the first pattern overwrites."""
        none, mem = np.uint64(0), self._mem
        for kernel, args in (("mt_write", (mem, none, np.int32(0), none)),
                             ("mt_check", (mem, none, np.int32(0), none, self._errors, self._records,
                                           np.uint32(MEMTEST_MAX_RECORDS))),
                             ("mt_invert", (mem, none, np.int32(0), none, np.int32(0), self._errors, self._records,
                                            np.uint32(MEMTEST_MAX_RECORDS)))):
            function("memtest", kernel, self.ordinal)((1,), (THREADS,), args)
        if mem.size >= 2:
            mem[1:2] = mem[0:1]
        self.device.synchronize()

    def _launch(self, kernel: str, *args: Any) -> float:
        cp = self.cp
        # The kernel is compiled (NVRTC) on its first use, before the clock starts: timed inside, the
        # quick memory test's first call read 1030 GB/s on an H100 whose memory moves 2843 (2026-11-26).
        kernel_fn = function("memtest", kernel, self.ordinal)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel_fn(self._grid(), (THREADS,), args)
        end.record()
        return self._elapsed(start, end)

    def _log(self) -> tuple[int, list[tuple[int, int, int]]]:
        count = int(self._errors.get()[0])
        records = [tuple(int(v) for v in r) for r in self._records[:min(count, MEMTEST_MAX_RECORDS)].get()]
        self._errors.fill(0)
        return count, records  # type: ignore[return-value]

    def memtest_write(self, kind: int, value: int) -> float:
        return self._launch("mt_write", self._mem, np.uint64(self._mem.size), np.int32(kind), np.uint64(value))

    def memtest_check(self, kind: int, value: int) -> tuple[int, list[tuple[int, int, int]], float]:
        seconds = self._launch("mt_check", self._mem, np.uint64(self._mem.size), np.int32(kind), np.uint64(value),
                               self._errors, self._records, np.uint32(MEMTEST_MAX_RECORDS))
        return (*self._log(), seconds)

    def memtest_invert(self, kind: int, value: int, descending: bool) -> tuple[int, list[tuple[int, int, int]], float]:
        seconds = self._launch("mt_invert", self._mem, np.uint64(self._mem.size), np.int32(kind), np.uint64(value),
                               np.int32(descending), self._errors, self._records, np.uint32(MEMTEST_MAX_RECORDS))
        return (*self._log(), seconds)

    def memtest_move(self, half: int, upward: bool) -> float:
        """Copy words [0, half) onto [half, 2 half) (upward), or back: device to device, timed on the GPU."""
        cp = self.cp
        lower, upper = self._mem[:half], self._mem[half:2 * half]
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        (upper if upward else lower)[...] = lower if upward else upper
        end.record()
        return self._elapsed(start, end)

    def memtest_wait(self, seconds: float) -> None:
        """Leave the memory alone with the GPU idle (the bit-fade test's retention time)."""
        self.device.synchronize()
        time.sleep(seconds)

    def memtest_address_lines(self) -> tuple[int, list[tuple[int, int, int]], float]:
        cp, mem = self.cp, self._mem
        t0 = time.perf_counter()
        lines = [0] + [1 << b for b in range(mem.size.bit_length() - 1)]
        a, b = 0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA
        idx = cp.asarray(lines, dtype=cp.int64)
        mem[idx] = a
        count, records = 0, []
        for line in lines[1:]:
            mem[line] = b
            others = [x for x in lines if x != line]
            got = cp.asnumpy(mem[cp.asarray(others, dtype=cp.int64)])
            for x, g in zip(others, got):
                if int(g) != a:
                    count += 1
                    records.append((x, a, int(g)))
            mem[line] = a
        self.device.synchronize()
        return count, records[:MEMTEST_MAX_RECORDS], time.perf_counter() - t0

    # ------------------------------------------------------------------ host <-> device

    def pcie_setup(self, nbytes: int) -> None:
        cp = self.cp
        self._pinned = [cp.cuda.alloc_pinned_memory(nbytes) for _ in range(2)]
        self._host = [np.frombuffer(p, dtype=np.uint8, count=nbytes) for p in self._pinned]
        self._host[0][:] = byte_ramp(nbytes)
        self._dev = [cp.empty(nbytes, dtype=cp.uint8) for _ in range(2)]
        self._streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
        self._pcie_n = nbytes

    def _copy(self, direction: str, slot: int, stream: Any) -> None:
        rt = self.cp.cuda.runtime
        if direction == "h2d":
            rt.memcpyAsync(self._dev[slot].data.ptr, self._host[slot].ctypes.data, self._pcie_n,
                           rt.memcpyHostToDevice, stream.ptr)
        else:
            rt.memcpyAsync(self._host[slot].ctypes.data, self._dev[slot].data.ptr, self._pcie_n,
                           rt.memcpyDeviceToHost, stream.ptr)

    def pcie_run(self, direction: str, iters: int) -> float:
        """Seconds for `iters` copies of the buffer one way, or both ways at once ('bidir')."""
        cp = self.cp
        s0, s1 = self._streams
        t0 = time.perf_counter()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(s0)
        for _ in range(iters):
            if direction == "bidir":
                self._copy("h2d", 0, s0)
                self._copy("d2h", 1, s1)
            else:
                self._copy(direction, 0, s0)
        end.record(s0)
        s1.synchronize()
        if direction == "bidir":
            s0.synchronize()
            return time.perf_counter() - t0
        return self._elapsed(start, end)

    def pcie_link_under_copy(self) -> dict[str, Any]:
        """The link as NVML reads it while host-to-device copies are in flight (links train up under
        load and down at idle, so only a reading during traffic says what the link can do)."""
        import pynvml

        s0 = self._streams[0]
        for _ in range(16):
            self._copy("h2d", 0, s0)
        try:
            pynvml.nvmlInit()
            bus = self.cp.cuda.runtime.deviceGetPCIBusId(self.ordinal)
            h = pynvml.nvmlDeviceGetHandleByPciBusId(bus)
            link = {"gen": pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h),
                    "width": pynvml.nvmlDeviceGetCurrPcieLinkWidth(h),
                    "max_gen": pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h),
                    "max_width": pynvml.nvmlDeviceGetMaxPcieLinkWidth(h)}
        except pynvml.NVMLError as e:
            link = {"error": str(e)}
        finally:
            s0.synchronize()
        return link

    def pcie_round_trip(self) -> tuple[np.ndarray, np.ndarray]:
        """A pattern copied host -> device -> host: what was sent, and what came back."""
        s0 = self._streams[0]
        rt = self.cp.cuda.runtime
        self._copy("h2d", 0, s0)
        rt.memcpyAsync(self._host[1].ctypes.data, self._dev[0].data.ptr, self._pcie_n, rt.memcpyDeviceToHost, s0.ptr)
        s0.synchronize()
        return self._host[0], self._host[1]
