"""GPU-only tests: each stress operation on a real GPU through CuPy, including corruption planted on
the device to show the verification catches it. Every kernel in kernels/ runs here with a fault
planted in device memory: each memtest check and inversion for every pattern of the program
(constant, own address, random and its complement; ascending and descending), the STREAM copy and
triad, the checksum. Skipped, with the reason, where there is no GPU."""

from __future__ import annotations

import numpy as np
import pytest

from nodeqc.core.known_answer import (allreduce_expected, compare_exact, copy_pattern, fingerprint, known_answer_inputs,
                           splitmix64, stream_expected)


def _gpu_count() -> tuple[int, str]:
    try:
        import cupy
    except ImportError:
        return 0, "CuPy is not installed (pip install 'nodeqc[cuda12]')"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - no driver, no device: the reason is the message
        return 0, f"no CUDA device: {e}"
    return n, "no CUDA device" if n == 0 else ""


GPUS, WHY = _gpu_count()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS == 0, reason=WHY)]


class Progress:
    def __init__(self):
        self.calls = 0

    def progress(self, fraction, **figures):
        self.calls += 1


@pytest.fixture(scope="module")
def device():
    from nodeqc.backends.cupy_compute import CupyDevice

    d = CupyDevice(0)
    yield d
    d.close()


@pytest.mark.parametrize("dtype", ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"])
def test_known_answer_is_exact(device, dtype):
    if device.supports(dtype):
        pytest.skip(device.supports(dtype))
    a, b, expected = known_answer_inputs(device.ka_size)
    assert compare_exact(device.to_host(device.known_answer(dtype, a, b)), expected) is None


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_a_corrupted_element_planted_on_the_device_is_caught(device, dtype):
    if device.supports(dtype):
        pytest.skip(device.supports(dtype))
    import cupy

    a, b, expected = known_answer_inputs(device.ka_size)
    c = device.known_answer(dtype, a, b)
    c.view(cupy.uint32)[123, 456] ^= cupy.uint32(1 << 7)  # one bit, on the device
    wrong = compare_exact(device.to_host(c), expected)
    assert wrong is not None and wrong.count == 1
    assert (wrong.first[0]["row"], wrong.first[0]["col"]) == (123, 456) and wrong.first[0]["xor"] == "0x00000080"


def test_device_fingerprint_matches_the_host_twin(device):
    import cupy

    x = cupy.random.default_rng(1).integers(0, 2**31, size=(1000, 1000), dtype=cupy.int64).astype(cupy.uint32)
    assert device.fingerprint(x) == fingerprint(cupy.asnumpy(x))


def test_memtest_random_pattern_matches_the_host_twin(device):
    info = device.memtest_setup(0.01)
    device.memtest_write(2, 12345)
    words = device.to_host(device._mem[:4096])
    assert np.array_equal(words, splitmix64(np.arange(4096, dtype=np.uint64) ^ np.uint64(12345)))
    assert info["bytes"] > 0
    device.release()


def test_memtest_finds_a_word_planted_on_the_device(device):
    import cupy

    device.memtest_setup(0.02)
    device.memtest_write(1, 0)
    device._mem[777] ^= cupy.uint64(1 << 40)
    count, records, _ = device.memtest_check(1, 0)
    assert count == 1 and records[0][0] == 777 and records[0][1] ^ records[0][2] == 1 << 40
    device.release()


def test_workloads_run_clean(device):
    from nodeqc.work import workloads as W

    r = W.matmul_burn(device, {"seconds": 4, "dtypes": ["fp32", "bf16"], "seed": 1}, Progress())
    for dtype, d in r["dtypes"].items():
        assert d["tflops"] > 0 and d["known_answer_mismatch"] is None and d["repeat_mismatch"] is None, dtype
    h = W.hbm_bandwidth(device, {"bytes": 1 << 30, "trials": 2, "iters": 5}, Progress())
    assert h["verified"] and h["copy_gbps"] > 100
    m = W.memory_test(device, {"fraction": 0.2}, Progress())
    assert m["errors"] == 0 and len(m["passes"]) == 5
    p = W.pcie_bandwidth(device, {"bytes": 64 << 20, "trials": 2, "iters": 4, "min_seconds": 1}, Progress())
    assert p["verified"] and p["h2d_gbps"] > 1 and "gen" in p["link"]


# ---------------------------------------------------------------------- FP8 through cuBLASLt (nvmath-python)

def _needs_fp8(device) -> None:
    if why := device.supports("fp8"):
        pytest.skip(f"fp8 does not run here: {why}")


def test_fp8_product_of_random_e4m3_matches_numpy(device):
    """Not only small integers: random e4m3 operands, the product against the exact product of the
    same values. Hopper's FP8 tensor cores do not accumulate in full fp32 (an fp32-exact tolerance
    failed on a real H100 and H200: shared/measurements/2026-11-26, item 5), so every element is held
    to the bound that accumulation allows, derived in tests/fp8_bound.py: |error_ij| <= (K/32) 2^-13
    sum_k |a_ik||b_kj| (2^-8 = 3.9e-3 at K = 1024; measured on an H200 at most 5.1e-5). A transposed
    operand, a wrong layout or a zeroed result errs by about 0.05 of that sum, far outside it."""
    _needs_fp8(device)
    import cupy

    from fp8_bound import fp8_error_bound, fp8_product_error
    from nodeqc.backends.cublaslt import e4m3_bits, e4m3_value

    n = device.ka_size
    rng = np.random.default_rng(16)
    a, bt = (e4m3_bits(np, rng.standard_normal((n, n)).astype(np.float32)) for _ in range(2))
    d = cupy.zeros((n, n), dtype=cupy.float32)
    device._fp8_product(cupy.asarray(a), cupy.asarray(bt), d, "fp32")
    error, scale = fp8_product_error(cupy.asnumpy(d), e4m3_value(a), e4m3_value(bt))
    worst = float((error / scale).max())
    assert worst <= fp8_error_bound(n), (
        f"max |error| / sum|a||b| {worst:.3g} beyond the accumulation's bound {fp8_error_bound(n):.3g} "
        f"(max |error| {float(error.max()):.4g})")
    device.release()


def test_fp8_burn_runs_verified(device):
    _needs_fp8(device)
    from nodeqc.work import workloads as W

    r = W.matmul_burn(device, {"seconds": 4, "dtypes": ["fp8", "bf16"], "seed": 1}, Progress())
    assert r["not_run"] == {} and list(r["dtypes"]) == ["fp8", "bf16"]
    fp8 = r["dtypes"]["fp8"]
    assert fp8["tflops"] > r["dtypes"]["bf16"]["tflops"] and fp8["checks"] >= 1
    assert fp8["known_answer_mismatch"] is None and fp8["repeat_mismatch"] is None


def test_fp8_burn_catches_flips_planted_on_the_device(device, monkeypatch):
    """One bit flipped in the burn's own bf16 product on the device after a few products (the
    repeats must disagree), and one in the known-answer product (it must be named, bit and place)."""
    _needs_fp8(device)
    import cupy

    from nodeqc.work import workloads as W

    real_run, real_known = device.matmul_run, device.known_answer
    runs = []

    def run(iters):
        seconds = real_run(iters)
        runs.append(iters)
        if len(runs) == 3:  # the warm-up, the first timed run, then a wrong one
            device._mm["c"][100, 200] ^= cupy.uint16(1 << 4)
        return seconds

    def known(dtype, a, b):
        c = real_known(dtype, a, b)
        c.view(cupy.uint32)[7, 11] ^= cupy.uint32(1 << 20)
        return c

    monkeypatch.setattr(device, "matmul_run", run)
    monkeypatch.setattr(device, "known_answer", known)
    r = W.matmul_burn(device, {"seconds": 6, "dtypes": ["fp8"], "seed": 1}, Progress())["dtypes"]["fp8"]
    assert r["repeat_mismatch"] is not None and r["repeat_mismatch"]["check"] == 1
    first = r["known_answer_mismatch"]["first"][0]
    assert r["known_answer_mismatch"]["count"] == 1 and (first["row"], first["col"], first["xor"]) == (7, 11, "0x00100000")


def test_fp8_on_a_gpu_older_than_ada_is_not_run(device):
    if device.compute_capability >= 8.9:
        pytest.skip(f"this GPU ({device.compute_capability}) runs fp8")
    from nodeqc.work import workloads as W

    assert "compute capability 8.9" in device.supports("fp8")
    r = W.matmul_burn(device, {"seconds": 2, "dtypes": ["fp8", "fp32"], "seed": 1}, Progress())
    assert list(r["dtypes"]) == ["fp32"] and "compute capability 8.9" in r["not_run"]["fp8"]


@pytest.mark.skipif(GPUS < 2, reason="GPU-to-GPU tests need two or more GPUs")
def test_p2p_and_nccl():
    from nodeqc.backends.cupy_node import CupyNodeDevices
    from nodeqc.work import workloads as W

    node = CupyNodeDevices(list(range(GPUS)))
    r = W.p2p(node, {"bytes": 64 << 20, "iters": 2}, Progress())
    assert all(p["verified"] for p in r["pairs"])
    n = W.nccl_allreduce(node, {"bytes": 256 << 20, "iters": 2}, Progress())
    assert "unavailable" in n or n["wrong"] == []


# ---------------------------------------------------------------------- faults planted on the device

def _planted_positions(n: int, seed: int) -> list[int]:
    """The first word, the last, and one drawn at random."""
    return [0, n - 1, int(np.random.default_rng(seed).integers(1, n - 1))]


@pytest.mark.parametrize("dtype", ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"])
def test_known_answer_flip_found_first_last_and_random(device, dtype):
    if device.supports(dtype):
        pytest.skip(device.supports(dtype))
    import cupy

    a, b, expected = known_answer_inputs(device.ka_size)
    n = device.ka_size
    for k, flat in enumerate(_planted_positions(n * n, 5)):
        c = device.known_answer(dtype, a, b)
        words = c.reshape(-1).view(cupy.uint64 if c.dtype == cupy.float64 else cupy.uint32)
        words[flat] ^= words.dtype.type(1 << (3 + k))
        wrong = compare_exact(c, expected)  # on the device, as the workloads compare device data
        assert wrong is not None and wrong.count == 1
        assert (wrong.first[0]["row"], wrong.first[0]["col"]) == divmod(flat, n)
        assert int(wrong.first[0]["xor"], 16) == 1 << (3 + k)


def _memtest_ops():
    """Every checking operation of the memory test program, quick and full: (pattern, step)."""
    from nodeqc.work.memtest import memtest_program

    for name, ops in memtest_program(1 << 20, full=True):
        for step, (op, kind, value, descending) in enumerate(ops):
            if op in ("check", "invert"):
                yield pytest.param(name, step, id=f"{name}-{step}-{op}{'-down' if descending else ''}")


@pytest.mark.parametrize("pattern, step", list(_memtest_ops()))
def test_memtest_kernel_finds_a_word_planted_before_each_check(device, pattern, step):
    """Run the pattern's operations in order as the workload does (the bit fade's wait left out);
    before the checking operation under test, flip one bit of one word (first, last, random) on the
    device. The kernel must report exactly that word, with the expected value the host twin computes."""
    import cupy

    from nodeqc.backends.sim.compute import expected_words
    from nodeqc.work.memtest import memtest_program

    info = device.memtest_setup(0.005)
    ops = dict(memtest_program(info["words"], full=True))[pattern]
    n = info["bytes"] // 8
    try:
        for flat in _planted_positions(n, step):
            for k, (op, kind, value, flag) in enumerate(ops):
                if k == step:
                    want = int(expected_words(kind, np.array([flat], dtype=np.uint64), value)[0])
                    assert int(device._mem[flat]) == want  # the pattern the previous operations left
                    device._mem[flat] ^= cupy.uint64(1 << 41)
                count = 0
                if op == "write":
                    device.memtest_write(kind, value)
                elif op == "move":
                    device.memtest_move(value, flag)
                elif op == "check":
                    count, records, _ = device.memtest_check(kind, value)
                elif op == "invert":
                    count, records, _ = device.memtest_invert(kind, value, flag)
                if k == step:
                    assert (count, records) == (1, [(flat, want, want ^ (1 << 41))]), (op, kind, flag)
                    break
                assert count == 0, (pattern, k)
    finally:
        device.release()


@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_memtest_written_pattern_matches_the_host_twin(device, kind):
    from nodeqc.backends.sim.compute import expected_words

    device.memtest_setup(0.005)
    try:
        value = 0x0123_4567_89AB_CDEF
        device.memtest_write(kind, value)
        n = int(device._mem.size)
        idx = np.array(sorted({0, 1, n // 2, n - 1}), dtype=np.uint64)
        import cupy

        got = device.to_host(device._mem[cupy.asarray(idx.astype(np.int64))])
        assert np.array_equal(got, expected_words(kind, idx, value))
    finally:
        device.release()


@pytest.mark.parametrize("where", [0, -1, 12345])
def test_stream_kernels_then_a_planted_flip_is_found(device, where):
    import cupy

    device.stream_setup(64 << 20)
    try:
        device.stream_run("copy", 1)
        device.stream_run("triad", 1)
        a = device.stream_result()
        assert compare_exact(a, stream_expected(cupy, a.size)) is None
        flat = where % a.size
        a.view(cupy.uint32)[flat] ^= cupy.uint32(1 << 22)
        wrong = compare_exact(a, stream_expected(cupy, a.size))
        assert wrong.count == 1 and wrong.first[0]["index"] == flat and wrong.first[0]["xor"] == "0x00400000"
    finally:
        device.release()


def test_every_stream_copy_kernel_copies_every_vector_and_the_fastest_is_kept(device):
    """Issue 30's copies with several loads in flight: a buffer whose length is no multiple of their
    chunk (the tail's bounds), each kernel alone; then the kernel kept is the fastest measured."""
    import cupy

    from nodeqc.backends.cupy_compute import STREAM_COPIES

    device.stream_setup((64 << 20) + 3 * 16)
    try:
        choice = device.stream_copy_choice()
        assert set(choice["rates_gbps"]) == set(STREAM_COPIES) and all(v > 0 for v in choice["rates_gbps"].values())
        assert choice["rates_gbps"][choice["kernel"]] == max(choice["rates_gbps"].values())
        a, b, _ = device._stream
        for kernel in STREAM_COPIES:
            device._copy_kernel = kernel
            b.fill(-1.0)
            device.stream_run("copy", 1)
            assert bool(cupy.array_equal(a, b)), kernel
    finally:
        device.release()


def test_the_fp8_operands_kernel_encodes_as_the_host_does(device):
    """kernels/fp8.cu on the GPU (the fp8 burn's operands) against e4m3_bits on the host: random
    normals at several scales and random float32 bit patterns (every class), byte for byte."""
    import cupy

    from nodeqc.backends.cublaslt import e4m3_bits

    rng = np.random.default_rng(27)
    x = np.concatenate([*(rng.standard_normal(1 << 20).astype(np.float32) * s for s in (1e-3, 1.0, 500.0)),
                        rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    got = cupy.asnumpy(device.e4m3(cupy.asarray(x)))
    assert np.array_equal(got, e4m3_bits(np, x)), int((got != e4m3_bits(np, x)).sum())


def test_the_kernels_compiled_beside_a_product_are_those_the_steps_then_use(device):
    """kernels.compile_beside on the real GPU while a product runs in this thread: the thread ends,
    and every kernel the steps name is then in a module the thread compiled."""
    from nodeqc.backends import kernels

    device.matmul_setup("bf16", 1)
    try:
        thread = kernels.compile_beside(device.ordinal)
        device.matmul_run(20)
        thread.join(120)
        assert not thread.is_alive()
        assert all(kernels.compiled(name, device.ordinal) for name in kernels.KERNELS)
        for name, functions in kernels.KERNELS.items():
            for f in functions:
                assert kernels.function(name, f, device.ordinal) is not None
    finally:
        device.release()


def test_checksum_kernel_sees_a_planted_flip(device):
    import cupy

    x = cupy.random.default_rng(3).integers(0, 2**31, size=1 << 20, dtype=cupy.int64).astype(cupy.uint32)
    before = device.fingerprint(x)
    x[777_777] ^= cupy.uint32(1)
    assert device.fingerprint(x) != before and device.fingerprint(x) == fingerprint(cupy.asnumpy(x))


def test_pcie_round_trip_verifies(device):
    device.pcie_setup(16 << 20)
    try:
        sent, received = device.pcie_round_trip()
        assert compare_exact(received, sent) is None
    finally:
        device.release()


def test_allreduce_result_checked_on_the_device_finds_a_planted_flip():
    """NCCL with this node's GPUs (one is enough for the check): a bit flipped in one GPU's result
    after the all-reduce is reported by the workload with that GPU, element and bit."""
    import cupy

    from nodeqc.backends.cupy_node import CupyNodeDevices
    from nodeqc.work import workloads as W

    node = CupyNodeDevices(list(range(GPUS)))
    if node.nccl_unavailable():
        pytest.skip(node.nccl_unavailable())
    real = node.nccl_allreduce
    victim = GPUS - 1

    def flipped(nbytes, iters, env=None):
        per, results = real(nbytes, iters, env)
        with results[victim].device:
            assert compare_exact(results[victim], allreduce_expected(GPUS)) is None
            results[victim].view(cupy.uint32)[4097] ^= cupy.uint32(1 << 30)
        return per, results

    node.nccl_allreduce = flipped
    r = W.nccl_allreduce(node, {"bytes": 64 << 20, "iters": 1}, Progress())
    assert [(w["gpu"], w["count"], w["index"], w["xor"]) for w in r["wrong"]] == [(victim, 1, 4097, "0x40000000")]
    node.close()


@pytest.mark.skipif(GPUS < 2, reason="GPU-to-GPU tests need two or more GPUs")
def test_peer_copy_checked_on_the_receiving_gpu_finds_a_planted_flip():
    import cupy

    from nodeqc.backends.cupy_node import CupyNodeDevices
    from nodeqc.work import workloads as W

    node = CupyNodeDevices([0, 1])
    node.p2p_setup(8 << 20)
    node.p2p_copy(0, 1, 1)
    got = node.p2p_received(0, 1)
    with got.device:
        assert compare_exact(got, copy_pattern(cupy, got.size, 0)) is None
        got[99] ^= cupy.uint8(4)
    wrong = W.check_peer_copy(got, 0)
    assert wrong.count == 1 and wrong.first[0]["index"] == 99 and wrong.first[0]["xor"] == "0x04"
    node.close()


@pytest.mark.parametrize("kind", [4 | (0 << 8), 4 | (19 << 8), 5 | (10 << 8), 5 | (20 << 8)])
def test_memtest_full_mode_patterns_match_the_host_twin(device, kind):
    """Modulo-20 (two offsets) and block patterns written by the kernel equal the simulator's twin."""
    from nodeqc.backends.sim.compute import expected_words

    device.memtest_setup(0.01)
    device.memtest_write(kind, 0x5A5A_5A5A_A5A5_A5A5)
    words = device.to_host(device._mem[:1 << 16])
    assert np.array_equal(words, expected_words(kind, np.arange(1 << 16, dtype=np.uint64), 0x5A5A_5A5A_A5A5_A5A5))
    count, _, _ = device.memtest_check(kind, 0x5A5A_5A5A_A5A5_A5A5)
    assert count == 0
    device.release()


def test_memtest_block_move_keeps_the_pattern_and_carries_a_planted_fault(device):
    import cupy

    info = device.memtest_setup(0.02)
    k = (info["words"] // 2).bit_length() - 1
    kind = 5 | (k << 8)
    device.memtest_write(kind, 7)
    device._mem[99] ^= cupy.uint64(1 << 3)
    device.memtest_move(1 << k, True)
    count, records, _ = device.memtest_check(kind, 7)
    assert count == 2 and sorted(r[0] for r in records) == [99, (1 << k) + 99]
    device.release()


def test_full_memory_test_runs_clean_with_a_short_bit_fade(device):
    from nodeqc.work import workloads as W

    m = W.memory_test(device, {"fraction": 0.1, "full": True, "retention_s": 2}, Progress())
    assert m["errors"] == 0 and [p["pattern"] for p in m["passes"]][-1] == "bit fade"


def test_nvml_names_a_cotenant_and_not_nodeqcs_own_workers(device, tmp_path):
    """A process computing on GPU 0 that nodeqc did not start is listed with its pid, name and
    memory as another's; this test's own CUDA context (the `device` fixture) counts as nodeqc's."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.work.workers import own_pids

    ready = tmp_path / "ready"
    code = ("import cupy, pathlib, sys; a = cupy.ones((4096, 4096), dtype=cupy.float32); a @ a; "
            "cupy.cuda.Device().synchronize(); pathlib.Path(sys.argv[1]).touch(); [a @ a for _ in iter(int, 1)]")
    # Started through a shell that exits at once, so the co-tenant is no descendant of this process.
    pid = int(subprocess.check_output(["sh", "-c", '"$0" -c "$1" "$2" >/dev/null 2>&1 & echo $!',
                                       sys.executable, code, str(ready)], text=True).strip())
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.exists(), "the co-tenant did not start"
        b = NvmlBackend()
        b.open()
        try:
            listed = b.processes(0)
        finally:
            b.close()
        others = [p for p in listed if p.pid not in own_pids()]
        assert [p.pid for p in others] == [pid], listed
        assert others[0].used_bytes > 64 * 2 ** 20 and str(others[0].name).startswith("python")
        assert any(p.pid == os.getpid() for p in listed)  # the fixture's context: ours, left out above
    finally:
        os.kill(pid, signal.SIGKILL)


def test_the_nvml_backend_reads_every_gpu_on_the_real_driver_and_its_capture_replays_the_same():
    """Every NVML call the inventory, the telemetry and the counters make, against the real driver,
    in a child process: a call that hands the driver a wrong argument kills the process (the fabric
    structure passed by value segfaulted `nodeqc --headless` on the real H100, 2026-11-27, while
    every test here passed), and the child's death is this test's named failure. The recorded
    answers replay to the same inventory."""
    import json
    import subprocess
    import sys

    code = """
import dataclasses, json, sys
from nodeqc.backends.nvml import NvmlBackend
from nodeqc.backends.nvml_capture import RecordingNvml
from nodeqc.backends.nvml_replay import ReplayNvml
import pynvml
rec = RecordingNvml(pynvml)
b = NvmlBackend(rec)
b.open()
gpus = [dataclasses.asdict(g) for g in b.gpus()]
for i in range(len(gpus)):
    b.sample(i); b.counters(i); b.throttle_counters(i); b.processes(i)
b.close()
again = NvmlBackend(ReplayNvml(json.loads(json.dumps(rec.description()))))
again.open()
replayed = [dataclasses.asdict(g) for g in again.gpus()]
print(json.dumps({"gpus": gpus, "replayed": replayed}, default=str))
"""
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    answer = json.loads(done.stdout.splitlines()[-1])
    assert len(answer["gpus"]) == GPUS and all(g["uuid"].startswith("GPU-") for g in answer["gpus"])
    assert answer["replayed"] == answer["gpus"]


def test_a_kept_worker_gives_the_next_task_its_gpu_memory_back():
    """Issue 30: a run keeps one worker process per GPU from step to step (nodeqc.work.workers
    .WorkerPool). On a real GPU the second task runs in the same process, with the CUDA context it
    already has, and finds the memory the first task took free again (the memtest sizes itself
    from free memory). To confirm on the next lent GPU."""
    from nodeqc.work.workers import Task, Watchdog, WorkerPool, run_tasks

    spec = {"kind": "cupy", "clock": (1.0, None)}
    task = Task("workloads_for_tests:gpu_memory", 0, {"gib": 4}, 10.0)
    with WorkerPool(spec) as pool:
        first, second, third = (run_tasks([task], spec, Watchdog(120, 60), pool=pool)[0] for _ in range(3))
        assert [o.status for o in (first, second, third)] == ["ok"] * 3, [o.detail for o in (first, second, third)]
        assert first.result["pid"] == second.result["pid"] == third.result["pid"] and pool.started == 1
        # 4 GiB was taken and left in CuPy's pool each time: all of it is back for the next task
        # (within 256 MiB of what the second task found: the context's own allocations settle).
        assert third.result["free"] >= second.result["free"] - (256 << 20)
        assert second.result["free"] >= first.result["free"] - (256 << 20)
