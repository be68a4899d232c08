"""GPU-only tests: each stress operation on a real GPU through CuPy, including corruption planted on
the device to show the verification catches it. Skipped, with the reason, where there is no GPU."""

from __future__ import annotations

import numpy as np
import pytest

from nodeqc.verify import compare_exact, fingerprint, known_answer_inputs, splitmix64


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


@pytest.mark.parametrize("dtype", ["fp64", "fp32", "tf32", "fp16", "bf16"])
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
    from nodeqc import workloads as W

    r = W.matmul_burn(device, {"seconds": 4, "dtypes": ["fp32", "bf16"], "seed": 1}, Progress())
    for dtype, d in r["dtypes"].items():
        assert d["tflops"] > 0 and d["known_answer_mismatch"] is None and d["repeat_mismatch"] is None, dtype
    h = W.hbm_bandwidth(device, {"bytes": 1 << 30, "trials": 2, "iters": 5}, Progress())
    assert h["verified"] and h["copy_gbps"] > 100
    m = W.memory_test(device, {"fraction": 0.2}, Progress())
    assert m["errors"] == 0 and len(m["passes"]) == 5
    p = W.pcie_bandwidth(device, {"bytes": 64 << 20, "trials": 2, "iters": 4, "min_seconds": 1}, Progress())
    assert p["verified"] and p["h2d_gbps"] > 1 and "gen" in p["link"]


@pytest.mark.skipif(GPUS < 2, reason="GPU-to-GPU tests need two or more GPUs")
def test_p2p_and_nccl():
    from nodeqc import workloads as W
    from nodeqc.backends.cupy_compute import CupyNodeDevices

    node = CupyNodeDevices(list(range(GPUS)))
    r = W.p2p(node, {"bytes": 64 << 20, "iters": 2}, Progress())
    assert all(p["verified"] for p in r["pairs"])
    n = W.nccl_allreduce(node, {"bytes": 256 << 20, "iters": 2}, Progress())
    assert "unavailable" in n or n["wrong"] == []


@pytest.mark.parametrize("kind", [4 | (0 << 8), 4 | (19 << 8), 5 | (10 << 8), 5 | (20 << 8)])
def test_memtest_full_mode_patterns_match_the_host_twin(device, kind):
    """Modulo-20 (two offsets) and block patterns written by the kernel equal the simulator's twin."""
    from nodeqc.backends.sim_compute import expected_words

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
    from nodeqc import workloads as W

    m = W.memory_test(device, {"fraction": 0.1, "full": True, "retention_s": 2}, Progress())
    assert m["errors"] == 0 and [p["pattern"] for p in m["passes"]][-1] == "bit fade"
