"""The FP8 (e4m3) burn's parts that run without a GPU: the e4m3 encoding of its inputs, the cuBLASLt
calls it makes (against an emulation of what the cuBLAS documentation says those calls do), every
way its set-up can fail ending as "not run" with the reason, the names it takes from nvmath-python's
bindings (where nvmath installs), and the simulated node following the real rule. What only a GPU
shows (the library's real answer and rate) is in tests/test_gpu_real.py."""

from __future__ import annotations

import ctypes
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from nodeqc.backends import cublaslt
from nodeqc.backends.cublaslt import (E4M3_MAX, Fp8Engine, LtNames, Operation, e4m3_bits, e4m3_value,
                                      fp8_unsupported)
from nodeqc.core.errors import DtypeUnavailable
from nodeqc.core.known_answer import KNOWN_ANSWER_VALUES, compare_exact, known_answer_inputs

ALL_BITS = np.arange(256, dtype=np.uint8)
FINITE_BITS = ALL_BITS[(ALL_BITS & 0x7F) != 0x7F]


# ---------------------------------------------------------------------- the e4m3 encoding

@pytest.mark.parametrize("value, bits", [
    (0.0, 0x00), (-0.0, 0x80), (1.0, 0x38), (-1.0, 0xB8), (2.0, 0x40), (-2.0, 0xC0), (1.125, 0x39),
    (448.0, 0x7E), (-448.0, 0xFE), (2.0 ** -6, 0x08), (2.0 ** -9, 0x01), (7 * 2.0 ** -9, 0x07), (0.5, 0x30),
    (1.0625, 0x38),  # halfway between 1 and 1.125: to the even mantissa
    (1.1875, 0x3A),  # halfway between 1.125 and 1.25: to the even mantissa (1.25)
    (2.0 ** -10, 0x00),  # halfway between 0 and the smallest subnormal: to even (zero)
    (3 * 2.0 ** -10, 0x02),  # halfway between 2^-9 and 2^-8: to even (2^-8)
    (7.5 * 2.0 ** -9, 0x08),  # halfway past the largest subnormal: up into the first normal binade (even)
    (15.5 * 2.0 ** -9, 0x10),  # halfway between 1.875 * 2^-6 and 2^-5: up into the next binade (even)
    (1000.0, 0x7E), (-1e30, 0xFE), (float("inf"), 0x7E),  # saturated, as __NV_SATFINITE does
    (float("nan"), 0x7F),
])
def test_e4m3_encoding_of_known_values(value, bits):
    assert int(e4m3_bits(np, np.float32(value))) == bits


def test_e4m3_decoding_follows_the_format():
    """sign, 4 exponent bits with bias 7, 3 mantissa bits; subnormals in steps of 2^-9; 0x7F and
    0xFF are NaN; the largest finite value is 448."""
    v = e4m3_value(ALL_BITS)
    assert np.isnan(v[[0x7F, 0xFF]]).all() and np.isnan(v).sum() == 2
    assert v[0x38] == 1.0 and v[0x01] == 2.0 ** -9 and v[0x08] == 2.0 ** -6 and v[0x7E] == E4M3_MAX
    assert np.nanmax(np.abs(v)) == E4M3_MAX
    assert np.array_equal(v[0x80:], -v[:0x80], equal_nan=True)


def test_every_finite_e4m3_value_encodes_to_its_own_bits():
    assert np.array_equal(e4m3_bits(np, e4m3_value(FINITE_BITS).astype(np.float32)), FINITE_BITS)


def test_encoding_rounds_to_the_nearest_value_ties_to_even():
    """Every value between two neighbours goes to the nearer; a tie to the one with an even mantissa."""
    v = np.unique(e4m3_value(FINITE_BITS[FINITE_BITS < 0x80]))  # 0 .. 448
    lo, hi = v[:-1], v[1:]
    for frac in (0.25, 0.5, 0.75):
        x = (lo + (hi - lo) * frac).astype(np.float32)
        got = e4m3_value(e4m3_bits(np, x))
        if frac != 0.5:
            assert np.array_equal(got, lo if frac < 0.5 else hi)
        else:
            even = (e4m3_bits(np, lo.astype(np.float32)) & 1) == 0
            assert np.array_equal(got, np.where(even, lo, hi))


def test_encoding_matches_a_reference_implementation():
    """ml_dtypes (the float8 types JAX uses) as the reference, where it is installed."""
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed (pip install 'nodeqc[test]')")
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.standard_normal(200_000), rng.standard_normal(50_000) * 100,
                        rng.standard_normal(50_000) * 1e-3, e4m3_value(FINITE_BITS)]).astype(np.float32)
    x = x[np.abs(x) < 464]  # beyond, ml_dtypes gives NaN where CUDA's saturating conversion gives 448
    assert np.array_equal(e4m3_bits(np, x), x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))


def test_the_known_answer_inputs_are_exact_in_e4m3_and_their_product_in_fp32():
    a, b, expected = known_answer_inputs(1024)
    assert set(np.unique(a)) <= set(KNOWN_ANSWER_VALUES)
    assert np.array_equal(e4m3_value(e4m3_bits(np, a)), a) and np.array_equal(e4m3_value(e4m3_bits(np, b)), b)
    assert np.abs(expected).max() <= 4 * 1024 < 2 ** 24  # every partial sum an integer fp32 holds exactly


# ---------------------------------------------------------------------- cuBLASLt, emulated

def _read(ptr: int, nbytes: int, dtype) -> np.ndarray:
    return np.frombuffer((ctypes.c_char * nbytes).from_address(ptr), dtype=dtype).copy()


class FakeLt:
    """What nodeqc asks of nvmath.bindings.cublasLt, done as the cuBLAS documentation defines it on
    host memory: column-major layouts (element (i, j) at i + j*ld), op(A) = A^T under TRANSA=T, e4m3
    inputs, fp32 accumulation, D written in its layout. Failures can be planted."""

    class cuBLASLtError(Exception):
        pass

    MatmulDescAttribute = SimpleNamespace(TRANSA=3, TRANSB=4)
    MatmulPreferenceAttribute = SimpleNamespace(MAX_WORKSPACE_BYTES=1)
    matmul_heuristic_result_dtype = np.dtype([("algo", [("data_", "<u8", (8,))]), ("workspace_size", "<u8"),
                                              ("state", "<i4"), ("waves_count", "<f4"), ("reserved", "<i4", (4,))])
    TYPES = {28: "e4m3", 14: "bf16", 0: "fp32"}

    def __init__(self, algorithms: int = 1, fail: str | None = None, state: int = 0):
        self.algorithms, self.fail, self.state = algorithms, fail, state
        self.objects: dict[int, dict] = {}
        self.destroyed: list[int] = []
        self.calls: list[tuple] = []

    def _new(self, kind: str, **what) -> int:
        if self.fail == kind:
            raise self.cuBLASLtError("CUBLAS_STATUS_NOT_SUPPORTED")
        handle = 1000 + len(self.objects)
        self.objects[handle] = {"kind": kind, **what}
        return handle

    def create(self):
        return self._new("handle")

    def destroy(self, h):
        self.destroyed.append(h)

    def matmul_desc_create(self, compute, scale):
        return self._new("desc", compute=compute, scale=scale, attrs={})

    def matrix_layout_create(self, t, rows, cols, ld):
        return self._new("layout", type=self.TYPES[t], rows=rows, cols=cols, ld=ld)

    def matmul_preference_create(self):
        return self._new("pref", attrs={})

    matmul_desc_destroy = matrix_layout_destroy = matmul_preference_destroy = destroy

    @staticmethod
    def get_matmul_desc_attribute_dtype(attr):
        return np.int32

    @staticmethod
    def get_matmul_preference_attribute_dtype(attr):
        return np.uint64

    def matmul_desc_set_attribute(self, desc, attr, buf, size):
        if self.fail == "attribute":
            raise self.cuBLASLtError("CUBLAS_STATUS_INVALID_VALUE")
        self.objects[desc]["attrs"][attr] = int(_read(buf, size, np.int32)[0])

    def matmul_preference_set_attribute(self, pref, attr, buf, size):
        self.objects[pref]["attrs"][attr] = int(_read(buf, size, np.uint64)[0])

    def matmul_algo_get_heuristic(self, handle, desc, a, b, c, d, pref, requested, results, count):
        self.calls.append(("heuristic", desc, a, b, c, d, requested))
        ctypes.c_int32.from_address(count).value = min(self.algorithms, requested)
        if self.algorithms:
            ctypes.c_uint64.from_address(results + 64).value = 4096  # workspace_size follows the 64-byte algo
            ctypes.c_int32.from_address(results + 72).value = self.state  # then its status

    def _matrix(self, ptr: int, layout: dict) -> np.ndarray:
        """The (rows x cols) matrix a column-major layout describes, as float64."""
        size = {"e4m3": 1, "bf16": 2, "fp32": 4}[layout["type"]]
        n = layout["ld"] * layout["cols"]
        raw = _read(ptr, n * size, {"e4m3": np.uint8, "bf16": np.uint16, "fp32": np.float32}[layout["type"]])
        vals = e4m3_value(raw) if layout["type"] == "e4m3" else raw.astype(np.float64)
        return vals.reshape(layout["cols"], layout["ld"])[:, :layout["rows"]].T

    def matmul(self, handle, desc, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc, algo, ws, ws_size, stream):
        self.calls.append(("matmul", a, adesc, b, bdesc, c, cdesc, d, ddesc, ws, ws_size, stream))
        attrs, lay = self.objects[desc]["attrs"], self.objects
        op_a = self._matrix(a, lay[adesc])
        op_a = op_a.T if attrs.get(3, 0) == 1 else op_a  # cublasOperation_t: N=0, T=1
        op_b = self._matrix(b, lay[bdesc])
        op_b = op_b.T if attrs.get(4, 0) == 1 else op_b
        alpha_v = _read(alpha, 4, np.float32)[0]
        out = (alpha_v * (op_a.astype(np.float32) @ op_b.astype(np.float32))).astype(np.float32)
        dl = lay[ddesc]
        assert dl["type"] == "fp32", "the emulation writes fp32 only"
        dst = np.frombuffer((ctypes.c_char * (dl["ld"] * dl["cols"] * 4)).from_address(d), dtype=np.float32)
        dst.reshape(dl["cols"], dl["ld"])[:, :dl["rows"]] = out.T


NAMES = LtNames(compute_32f=68, r_8f_e4m3=28, r_16bf=14, r_32f=0, op_t=1, op_n=0, transa=3, transb=4, max_workspace=1)


def engine(lt: FakeLt, cc: float = 9.0) -> Fp8Engine:
    return Fp8Engine(cc, bindings=(lt, NAMES))


def test_the_operation_computes_a_at_b_row_major_in_the_tn_form():
    """The layouts Operation gives, read as cuBLASLt reads them (column-major, first operand
    transposed), multiply to the row-major A @ B when A goes as it is and B transposed."""
    rng = np.random.default_rng(3)
    n = 32
    a, b = (rng.integers(-3, 4, (n, n)).astype(np.float64) for _ in range(2))
    op = Operation.square(n)
    first = np.ascontiguousarray(b.T).ravel().reshape(op.first.cols, op.first.ld)[:, :op.first.rows].T
    second = a.ravel().reshape(op.second.cols, op.second.ld)[:, :op.second.rows].T
    d_col = first.T @ second  # op(first) = first^T (TRANSA=T), op(second) = second (TRANSB=N)
    d_memory = d_col.T.ravel()  # column-major write of D
    assert np.array_equal(d_memory.reshape(n, n), a @ b)
    with pytest.raises(ValueError, match="multiples of 16"):
        Operation.square(1000)


def test_a_known_answer_product_through_the_calls_is_exact():
    """The whole path, Fp8Plan's calls included, on the emulation: the known answer comes back exact,
    and the descriptor says what FP8 requires (TN, COMPUTE_32F, scale type CUDA_R_32F, e4m3 inputs)."""
    lt = FakeLt()
    plan = engine(lt).plan(64, "fp32")
    a, b, expected = known_answer_inputs(64)
    da, dbt = e4m3_bits(np, a), e4m3_bits(np, np.ascontiguousarray(b.T))
    d = np.zeros((64, 64), dtype=np.float32)
    plan.run(dbt.ctypes.data, da.ctypes.data, d.ctypes.data, 0, 0)
    assert compare_exact(d, expected) is None
    desc = lt.objects[plan.desc]
    assert (desc["compute"], desc["scale"], desc["attrs"]) == (68, 0, {3: 1, 4: 0})
    assert [lt.objects[h]["type"] for h in (plan.a_layout, plan.b_layout, plan.d_layout)] == ["e4m3", "e4m3", "fp32"]
    _, *_, c, cdesc, dd, ddesc, ws, ws_size, stream = lt.calls[-1]
    assert (c, cdesc) == (dd, ddesc) == (d.ctypes.data, plan.d_layout)  # C is D: beta is 0, in place allowed
    assert plan.workspace_bytes == ws_size == 4096
    plan.close()
    assert set(lt.destroyed) == {plan.desc, plan.a_layout, plan.b_layout, plan.d_layout} | \
        {h for h, o in lt.objects.items() if o["kind"] == "pref"}


def test_a_flipped_bit_in_the_product_is_caught():
    lt = FakeLt()
    plan = engine(lt).plan(32, "fp32")
    a, b, expected = known_answer_inputs(32)
    da, dbt, d = e4m3_bits(np, a), e4m3_bits(np, np.ascontiguousarray(b.T)), np.zeros((32, 32), dtype=np.float32)
    plan.run(dbt.ctypes.data, da.ctypes.data, d.ctypes.data, 0, 0)
    d.view(np.uint32)[5, 9] ^= np.uint32(1 << 3)
    wrong = compare_exact(d, expected)
    assert wrong.count == 1 and (wrong.first[0]["row"], wrong.first[0]["col"]) == (5, 9)


def test_the_burn_plan_writes_bf16():
    lt = FakeLt()
    plan = engine(lt).plan(8192, "bf16")
    assert lt.objects[plan.d_layout] == {"kind": "layout", "type": "bf16", "rows": 8192, "cols": 8192, "ld": 8192}
    pref = next(o for o in lt.objects.values() if o["kind"] == "pref")
    assert pref["attrs"] == {1: cublaslt.MAX_WORKSPACE_BYTES}


# ---------------------------------------------------------------------- set-up failures: not run, with the reason

@pytest.mark.parametrize("cc", [7.0, 7.5, 8.0, 8.6, 8.7])
def test_a_gpu_older_than_ada_cannot_run_fp8(cc):
    why = fp8_unsupported(cc)
    assert why == f"fp8 needs compute capability 8.9 or newer (Ada, Hopper and later); this GPU is {cc:.1f}"
    with pytest.raises(DtypeUnavailable, match="compute capability 8.9"):
        engine(FakeLt(), cc)


@pytest.mark.parametrize("cc", [8.9, 9.0, 10.0, 12.0])
def test_ada_hopper_and_blackwell_can(cc):
    assert fp8_unsupported(cc) is None


def test_no_algorithm_from_the_heuristic_is_not_run():
    lt = FakeLt(algorithms=0)
    with pytest.raises(DtypeUnavailable, match=r"offers no algorithm .* 8192x8192 .*returned none"):
        engine(lt).plan(8192, "bf16")
    assert {h for h, o in lt.objects.items() if o["kind"] != "handle"} == set(lt.destroyed)  # nothing leaks


def test_an_algorithm_the_heuristic_marks_unusable_is_not_run():
    lt = FakeLt(state=15)  # CUBLAS_STATUS_NOT_SUPPORTED
    with pytest.raises(DtypeUnavailable, match=r"cannot run on this GPU \(heuristic status 15\)"):
        engine(lt).plan(8192, "bf16")
    assert {h for h, o in lt.objects.items() if o["kind"] != "handle"} == set(lt.destroyed)


@pytest.mark.parametrize("where", ["desc", "attribute", "layout", "pref"])
def test_a_cublaslt_status_while_planning_is_not_run_with_the_status(where):
    lt = FakeLt(fail=where)
    with pytest.raises(DtypeUnavailable, match="cuBLASLt cannot plan an fp8 product of 1024x1024 on this GPU: "
                                               "cuBLASLtError: CUBLAS_STATUS_"):
        engine(lt).plan(1024, "fp32")
    assert {h for h, o in lt.objects.items() if o["kind"] != "handle"} == set(lt.destroyed)


def test_cublaslt_that_will_not_start_is_not_run():
    with pytest.raises(DtypeUnavailable, match="cuBLASLt could not start: cuBLASLtError: CUBLAS_STATUS_NOT_SUPPORTED"):
        engine(FakeLt(fail="handle"))


def test_without_nvmath_fp8_is_not_run_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvmath", None)  # import nvmath now raises ImportError
    with pytest.raises(DtypeUnavailable, match=r"fp8 needs nvmath-python for cuBLASLt .*pip install 'nodeqc\[cuda12\]'"):
        Fp8Engine(9.0)


def test_a_binding_that_lacks_a_name_is_not_run(monkeypatch):
    fake = SimpleNamespace(CudaDataType=SimpleNamespace(), bindings=SimpleNamespace())
    monkeypatch.setitem(sys.modules, "nvmath", fake)
    monkeypatch.setitem(sys.modules, "nvmath.bindings", fake.bindings)
    monkeypatch.setitem(sys.modules, "nvmath.bindings.cublas", SimpleNamespace())
    monkeypatch.setitem(sys.modules, "nvmath.bindings.cublasLt", SimpleNamespace())
    fake.bindings.cublas, fake.bindings.cublasLt = sys.modules["nvmath.bindings.cublas"], sys.modules["nvmath.bindings.cublasLt"]
    with pytest.raises(DtypeUnavailable, match="lacks a name nodeqc uses"):
        cublaslt.import_bindings()


# ---------------------------------------------------------------------- the real binding's names

def test_nvmath_bindings_have_every_name_nodeqc_uses():
    """Importing nvmath.bindings.cublasLt needs no GPU: every enum value and function this module
    uses must exist there, with the values cuBLAS's headers give them."""
    pytest.importorskip("nvmath", reason="nvmath-python is not installed (pip install 'nodeqc[cuda12]')")
    lt, names = cublaslt.import_bindings()
    assert names == NAMES  # CUBLAS_COMPUTE_32F 68, CUDA_R_8F_E4M3 28, CUDA_R_16BF 14, CUDA_R_32F 0, OP_T 1
    for function in ("create", "destroy", "matmul_desc_create", "matmul_desc_destroy", "matmul_desc_set_attribute",
                     "get_matmul_desc_attribute_dtype", "matrix_layout_create", "matrix_layout_destroy",
                     "matmul_preference_create", "matmul_preference_destroy", "matmul_preference_set_attribute",
                     "get_matmul_preference_attribute_dtype", "matmul_algo_get_heuristic", "matmul"):
        assert callable(getattr(lt, function)), function
    assert lt.matmul_heuristic_result_dtype.names[:2] == ("algo", "workspace_size")  # the algo comes first
    assert lt.matmul_heuristic_result_dtype.fields["algo"][1] == 0
    assert np.dtype(lt.get_matmul_desc_attribute_dtype(lt.MatmulDescAttribute.TRANSA)).itemsize == 4
    assert np.dtype(lt.get_matmul_preference_attribute_dtype(lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES)).itemsize == 8


# ---------------------------------------------------------------------- the burn around it

class _Quiet:
    def progress(self, fraction: float, **figures: object) -> None:
        pass


def test_fp8_refused_in_the_set_up_is_not_run_and_the_burn_still_passes():
    """A device whose fp8 plan fails (as the CuPy device raises it from cuBLASLt) keeps burning the
    other dtypes; the verdict passes and says fp8 was not run, and why."""
    from nodeqc.backends.sim.compute import SimDevice
    from nodeqc.backends.sim.node import SimNode
    from nodeqc.backends.sim.scenario import sku_scenario
    from nodeqc.checks.stress.burn import burn_params, judge_burn
    from nodeqc.core.model import Verdict
    from nodeqc.spec.profile import load_for, suggest_profile
    from nodeqc.work.workers import STATUS_OK, Outcome, Task
    from nodeqc.work.workloads import matmul_burn

    why = "cuBLASLt offers no algorithm for an fp8 product of 8192x8192 on this GPU"

    class NoFp8Plan(SimDevice):
        def matmul_setup(self, dtype, seed):
            if dtype == "fp8":
                raise DtypeUnavailable(why)
            return super().matmul_setup(dtype, seed)

    node = SimNode(sku_scenario("h100-sxm5-80gb"), [], time_scale=1e6)
    gpus = node.management().gpus()
    profile = load_for(suggest_profile(gpus), gpus)
    params = burn_params(profile, True)
    assert "fp8" in params["dtypes"]
    result = matmul_burn(NoFp8Plan(node.compute_spec(), 0), params, _Quiet())
    assert result["not_run"] == {"fp8": why} and list(result["dtypes"]) == ["fp64", "fp32", "tf32", "fp16", "bf16"]
    r = judge_burn(gpus, {0: Outcome(Task("matmul_burn", 0, params, 1.0), STATUS_OK, result)}, {}, profile)[0]
    assert r.verdict is Verdict.PASS and r.message.endswith(f"; not run: fp8 ({why})")


# ---------------------------------------------------------------------- the bound a real FP8 product is held to


def test_the_fp8_error_bound_passes_the_modelled_accumulation_and_real_gpus_and_fails_a_wrong_product():
    """tests/test_gpu_real.py holds the GPU's FP8 product to fp8_bound.fp8_error_bound: a model of
    Hopper's accumulation (13 fraction bits, truncated, once per 32-product MMA step) stays inside
    it, and so does what real GPUs measured (5.1e-5 at K = 1024, an H200); a transposed operand or a
    zeroed result does not, on most elements."""
    from fp8_bound import FP8_MMA_K, fp8_error_bound, fp8_product_error, modelled_product, truncate

    assert fp8_error_bound(1024) == 2.0 ** -8 and fp8_error_bound(256) == 2.0 ** -10
    assert fp8_error_bound(1) == fp8_error_bound(FP8_MMA_K) == 2.0 ** -13
    assert 5.1e-5 * 50 < fp8_error_bound(1024)  # the measured worst element, with a wide margin
    assert truncate(np.array([1 + 2.0 ** -13 + 2.0 ** -14, -(1 + 2.0 ** -14)])).tolist() == [1 + 2.0 ** -13, -1.0]
    n = 256
    rng = np.random.default_rng(16)
    a, bt = (e4m3_value(e4m3_bits(np, rng.standard_normal((n, n)).astype(np.float32))) for _ in range(2))
    bound = fp8_error_bound(n)
    error, scale = fp8_product_error(modelled_product(a, bt), a, bt)
    assert 0 < (error / scale).max() <= bound
    exact = a.astype(np.float64) @ bt.astype(np.float64).T
    # The same error fails the tolerance the test held Hopper to before (fp32-exact accumulation).
    assert not np.allclose(modelled_product(a, bt), exact, rtol=1e-4, atol=1e-3)
    for wrong in (a.astype(np.float64) @ bt.astype(np.float64), np.zeros((n, n)), exact.T):
        error, scale = fp8_product_error(wrong, a, bt)
        assert (error / scale).max() > 10 * bound and (error / scale > bound).mean() > 0.8
