"""FP8 (e4m3) matrix products through cuBLASLt, by nvmath-python's bindings.

CuPy exposes cuBLAS's `gemmEx`, which has no FP8; cuBLASLt has. nvmath-python
(`nvmath.bindings.cublasLt`, NVIDIA's maintained binding) calls it on raw device pointers, so CuPy
buffers holding e4m3 bit patterns (uint8) serve as operands. nvmath is imported lazily, by the CuPy
device only: nodeqc imports and its simulated node runs without it.

What cuBLASLt asks of an FP8 product (cuBLAS documentation, cublasLtMatmul(), "To use tensor- or
block-scaled FP8 kernels", and §3.1.4 "Narrow Precision Data Types Usage"):
- compute capability 8.9 or newer ("FP8 ... introduced with Ada and Hopper GPUs (compute capability
  8.9 and above)");
- A transposed and B not (the "TN" format) on 8.9, 9.0 and 12.x;
- compute type CUBLAS_COMPUTE_32F, scale type CUDA_R_32F;
- pointers and dimensions 16-byte aligned (Tensor Core Usage): n a multiple of 16 here, CuPy's pool
  hands out 512-byte aligned blocks;
- with A and B CUDA_R_8F_E4M3, C and D CUDA_R_16BF/CUDA_R_16BF or CUDA_R_32F/CUDA_R_32F (the FP8 type
  table). The burn writes bf16, as PyTorch's `_scaled_mm` did for the reference figure; the
  known-answer product writes fp32, where every integer it makes is exact.
- The scale pointers are left unset: "If not specified, or set to NULL, the scaling factor is assumed
  to be 1" (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER), in the tensorwide mode that is the default for FP8
  tensors (§3.1.4.1): D = alpha A B, nothing to dequantize.
- CUBLASLT_MATMUL_DESC_FAST_ACCUM stays at its default 0: the FP32 accumulation, which keeps the
  known-answer sums exact (and is what `_scaled_mm` runs by default).

The algorithm is the first that cublasLtMatmulAlgoGetHeuristic offers, as nvmath's own Matmul takes
it, so the rate is the library's. Every way the set-up can fail (no nvmath, no cuBLASLt, a GPU older
than 8.9, no algorithm offered, any cuBLASLt status) ends as FP8 "not run" with the reason
(DtypeUnavailable), never as a failure of the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nodeqc.core.errors import DtypeUnavailable

FP8_MIN_CC = (8, 9)  # Ada and Hopper and later (cuBLAS documentation, §3.1.4)
E4M3_MAX = 448.0  # the largest finite e4m3 ("fn": no infinity; 0x7F/0xFF are NaN)
E4M3_NAN = 0x7F
# The workspace the heuristic may plan with: cuBLAS recommends 32 MiB on Hopper (cublasSetWorkspace(),
# "recommended size of user-provided workspace": 32 MiB for Hopper, 4 MiB otherwise), the size PyTorch
# gives cuBLASLt there too; its algorithms for these sizes need less.
MAX_WORKSPACE_BYTES = 32 << 20
OUT_TYPES = ("bf16", "fp32")
INSTALL_HINT = "pip install 'nodeqc[cuda12]' or 'nodeqc[cuda13]'"


def fp8_unsupported(compute_capability: float) -> str | None:
    """Why a GPU of this compute capability cannot run FP8 products, or None. The simulated GPU asks
    the same, so a simulated Ampere says what a real one says."""
    cc = round(float(compute_capability) * 10)
    if cc < FP8_MIN_CC[0] * 10 + FP8_MIN_CC[1]:
        return (f"fp8 needs compute capability {FP8_MIN_CC[0]}.{FP8_MIN_CC[1]} or newer (Ada, Hopper and later); "
                f"this GPU is {cc / 10:.1f}")
    return None


def e4m3_bits(xp: Any, x: Any) -> Any:
    """float32 values as e4m3fn bit patterns (uint8), rounded to nearest even and saturated to
    +-448 as CUDA's __nv_cvt_float_to_fp8(..., __NV_SATFINITE, __NV_E4M3) does; NaN -> 0x7F.
    `xp` is numpy or cupy: the same code encodes the host's known-answer inputs and the device's
    random operands.

    e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits; subnormals below 2^-6 in steps of 2^-9."""
    x = xp.asarray(x, dtype=xp.float32)
    nan = xp.isnan(x)
    a = xp.minimum(xp.abs(xp.where(nan, xp.float32(0), x)), xp.float32(E4M3_MAX))
    _, e = xp.frexp(a)  # a = f 2^e with f in [0.5, 1): the binade is 2^(e-1)
    binade = xp.maximum(e.astype(xp.int32) - 1, -6)  # subnormals share the lowest normal binade's step
    steps = xp.rint(xp.ldexp(a, 3 - binade)).astype(xp.int32)  # 8..16 in a normal binade, 0..8 below
    carry = steps >= 16  # rounded up into the next binade
    normal = steps >= 8
    exponent = xp.where(normal, binade + 7 + carry.astype(xp.int32), 0)
    mantissa = xp.where(carry, 0, xp.where(normal, steps - 8, steps))
    bits = (xp.signbit(x).astype(xp.int32) << 7) | (exponent << 3) | mantissa
    return xp.where(nan, E4M3_NAN, bits).astype(xp.uint8)


def e4m3_value(bits: Any) -> np.ndarray:
    """The value of e4m3fn bit patterns (numpy), for tests and evidence: the format's own definition."""
    b = np.asarray(bits, dtype=np.uint8).astype(np.int32)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exponent, mantissa = (b >> 3) & 0xF, b & 0x7
    value = np.where(exponent == 0, np.ldexp(mantissa / 8.0, -6), np.ldexp(1.0 + mantissa / 8.0, exponent - 7))
    return np.where((b & 0x7F) == E4M3_NAN, np.nan, sign * value)


# ---------------------------------------------------------------------- the product's layout

@dataclass(frozen=True)
class Layout:
    """One cuBLASLt matrix layout (column-major, the library's default order)."""

    rows: int
    cols: int
    ld: int


@dataclass(frozen=True)
class Operation:
    """Row-major D = A @ B (n x n, as the burn's other dtypes compute it) as one cuBLASLt call in the
    TN form FP8 requires. The row-major memory of D read column-major is D^T = B^T A^T, so cuBLASLt's
    first operand is B^T and its second A^T. With TRANSA=T the first operand is stored as B (n x n,
    column-major): the memory of B^T in row-major order. With TRANSB=N the second is A^T column-major:
    the memory of A in row-major order. So the caller passes A as it is and B transposed (`bt`)."""

    n: int
    first: Layout  # cuBLASLt's A: the memory of B^T, row-major
    second: Layout  # cuBLASLt's B: the memory of A, row-major
    out: Layout  # C and D: the memory of D, row-major

    @classmethod
    def square(cls, n: int) -> "Operation":
        if n % 16:
            raise ValueError(f"FP8 products need dimensions that are multiples of 16, not {n}")
        return cls(n, Layout(n, n, n), Layout(n, n, n), Layout(n, n, n))


# ---------------------------------------------------------------------- cuBLASLt through nvmath

@dataclass(frozen=True)
class LtNames:
    """Every enum value this module hands cuBLASLt, read from nvmath's bindings by name (so a binding
    that renamed one fails here, in the set-up, as 'not run', and tests/test_fp8.py checks them
    wherever nvmath installs)."""

    compute_32f: int
    r_8f_e4m3: int
    r_16bf: int
    r_32f: int
    op_t: int
    op_n: int
    transa: int
    transb: int
    max_workspace: int

    @classmethod
    def read(cls, lt: Any, cublas: Any, types: Any) -> "LtNames":
        return cls(compute_32f=int(cublas.ComputeType.COMPUTE_32F), r_8f_e4m3=int(types.CUDA_R_8F_E4M3),
                   r_16bf=int(types.CUDA_R_16BF), r_32f=int(types.CUDA_R_32F), op_t=int(cublas.Operation.T),
                   op_n=int(cublas.Operation.N), transa=int(lt.MatmulDescAttribute.TRANSA),
                   transb=int(lt.MatmulDescAttribute.TRANSB),
                   max_workspace=int(lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES))


def import_bindings() -> tuple[Any, LtNames]:
    """(nvmath.bindings.cublasLt, the names it is used with); DtypeUnavailable if nvmath is missing."""
    try:
        import nvmath
        from nvmath.bindings import cublas
        from nvmath.bindings import cublasLt as lt
    except ImportError as e:
        raise DtypeUnavailable(f"fp8 needs nvmath-python for cuBLASLt ({e}): {INSTALL_HINT}") from None
    try:
        return lt, LtNames.read(lt, cublas, nvmath.CudaDataType)
    except AttributeError as e:
        raise DtypeUnavailable(f"this nvmath-python's cuBLASLt binding lacks a name nodeqc uses ({e})") from None


def _set(setter: Any, dtype_of: Any, handle: int, attribute: int, value: int) -> None:
    """Set one descriptor attribute from a value, in the C type nvmath says the attribute has."""
    buf = np.array([value], dtype=dtype_of(attribute))
    setter(handle, attribute, buf.ctypes.data, buf.itemsize)


def _why(e: BaseException) -> str:
    """A cuBLASLt failure in words: the status name when the binding gives one."""
    return f"{type(e).__name__}: {e}".strip().rstrip(":")


class Fp8Plan:
    """One planned FP8 product of n x n matrices: the descriptors and the algorithm the heuristic
    chose, reused for every product (as the documentation recommends: the heuristic is host work)."""

    def __init__(self, lt: Any, names: LtNames, handle: int, n: int, out: str):
        if out not in OUT_TYPES:
            raise ValueError(f"FP8 products write one of {OUT_TYPES}, not {out}")
        self.lt, self.handle, self.n, self.out = lt, handle, n, out
        self.op = Operation.square(n)
        self._made: list[tuple[Any, int]] = []  # (destroyer, handle) to release, newest last
        out_type = names.r_16bf if out == "bf16" else names.r_32f
        # alpha and beta in the scale type (fp32), read from the host (the default pointer mode).
        self.alpha, self.beta = np.ones(1, dtype=np.float32), np.zeros(1, dtype=np.float32)
        self.count = np.zeros(1, dtype=np.int32)
        self.result = np.zeros(1, dtype=lt.matmul_heuristic_result_dtype)
        try:
            self.desc = self._make(lt.matmul_desc_destroy, lt.matmul_desc_create(names.compute_32f, names.r_32f))
            _set(lt.matmul_desc_set_attribute, lt.get_matmul_desc_attribute_dtype, self.desc, names.transa, names.op_t)
            _set(lt.matmul_desc_set_attribute, lt.get_matmul_desc_attribute_dtype, self.desc, names.transb, names.op_n)
            first, second, d = self.op.first, self.op.second, self.op.out
            self.a_layout = self._make(lt.matrix_layout_destroy,
                                       lt.matrix_layout_create(names.r_8f_e4m3, first.rows, first.cols, first.ld))
            self.b_layout = self._make(lt.matrix_layout_destroy,
                                       lt.matrix_layout_create(names.r_8f_e4m3, second.rows, second.cols, second.ld))
            self.d_layout = self._make(lt.matrix_layout_destroy, lt.matrix_layout_create(out_type, d.rows, d.cols, d.ld))
            pref = self._make(lt.matmul_preference_destroy, lt.matmul_preference_create())
            _set(lt.matmul_preference_set_attribute, lt.get_matmul_preference_attribute_dtype, pref,
                 names.max_workspace, MAX_WORKSPACE_BYTES)
            # C is D (same layout, beta 0: C is never read), which the library allows in place.
            lt.matmul_algo_get_heuristic(handle, self.desc, self.a_layout, self.b_layout, self.d_layout,
                                         self.d_layout, pref, 1, self.result.ctypes.data, self.count.ctypes.data)
        except DtypeUnavailable:
            self.close()
            raise
        except Exception as e:  # noqa: BLE001 - any cuBLASLt status or binding error: the dtype cannot run here
            self.close()
            raise DtypeUnavailable(f"cuBLASLt cannot plan an fp8 product of {n}x{n} on this GPU: {_why(e)}") from None
        if int(self.count[0]) < 1:
            self.close()
            raise DtypeUnavailable(f"cuBLASLt offers no algorithm for an fp8 product of {n}x{n} on this GPU "
                                   "(cublasLtMatmulAlgoGetHeuristic returned none)")
        if (state := int(self.result["state"][0])) != 0:  # CUBLAS_STATUS_SUCCESS: the algorithm can run
            self.close()
            raise DtypeUnavailable(f"cuBLASLt's algorithm for an fp8 product of {n}x{n} cannot run on this GPU "
                                   f"(heuristic status {state})")
        self.workspace_bytes = int(self.result["workspace_size"][0])

    def _make(self, destroyer: Any, made: int) -> int:
        self._made.append((destroyer, made))
        return made

    def run(self, first: int, second: int, d: int, workspace: int, stream: int) -> None:
        """One product on `stream`: `first` holds B transposed, `second` A, both e4m3 (see Operation);
        D = A @ B lands in `d`. The algorithm is the first member of the heuristic's result."""
        self.lt.matmul(self.handle, self.desc, self.alpha.ctypes.data, first, self.a_layout, second, self.b_layout,
                       self.beta.ctypes.data, d, self.d_layout, d, self.d_layout, self.result.ctypes.data,
                       workspace, self.workspace_bytes, stream)

    def close(self) -> None:
        while self._made:
            destroyer, made = self._made.pop()
            try:
                destroyer(made)
            except Exception:  # noqa: BLE001, S110 - releasing a descriptor: nothing left to do about it
                pass


class Fp8Engine:
    """cuBLASLt for one GPU (the current CUDA device when made): its handle, and plans by size."""

    def __init__(self, compute_capability: float, bindings: tuple[Any, LtNames] | None = None):
        if why := fp8_unsupported(compute_capability):
            raise DtypeUnavailable(why)
        self.lt, self.names = bindings or import_bindings()
        try:
            self.handle = self.lt.create()
        except Exception as e:  # noqa: BLE001 - no library, no driver, a binding error: FP8 cannot run here
            raise DtypeUnavailable(f"cuBLASLt could not start: {_why(e)}") from None

    def plan(self, n: int, out: str) -> Fp8Plan:
        return Fp8Plan(self.lt, self.names, self.handle, n, out)

    def close(self) -> None:
        try:
            self.lt.destroy(self.handle)
        except Exception:  # noqa: BLE001, S110 - the process is ending its use of the library anyway
            pass
