"""Verification shared by real and simulated GPUs: the same code judges a CuPy result and a
simulated one, so a fault the simulator plants is found by the code that runs on real hardware.

- Known-answer products: integer inputs in {-2, -1, 1, 2} (never zeros: zeros run faster and cooler
  and prove less), small enough that every product and partial sum is exact in each dtype's
  accumulator, so the expected result is known exactly and compared bit for bit.
- Fingerprints of identical work compared across GPUs (majority) and across repeats.
- Memory-test error logs decoded into counts and first addresses with expected, actual and XOR.
- Copies (device memory, host round trip, GPU to GPU) and all-reduce sums compared element by
  element with what they must hold. A device array (CuPy) is compared on its own GPU and only the
  first few wrong elements come to the host; a host array (NumPy, or the simulated device) the same
  way on the CPU. The simulator only corrupts data: these functions find it.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

KNOWN_ANSWER_VALUES = np.array([-2, -1, 1, 2], dtype=np.int8)
MAX_REPORTED = 5  # mismatches named in a report; the count covers all


def known_answer_inputs(n: int, seed: int = 20261122) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer matrices a, b (int8) and their exact product (float64). |a @ b| <= 4n, exact in fp32
    accumulation for n up to 2^22 and in fp16/bf16 inputs (small integers are exact there)."""
    rng = np.random.default_rng(seed)
    a = rng.choice(KNOWN_ANSWER_VALUES, size=(n, n))
    b = rng.choice(KNOWN_ANSWER_VALUES, size=(n, n))
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


@dataclass
class Mismatch:
    count: int
    first: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "first": self.first}


def array_module(x: Any) -> Any:
    """cupy for an array on a GPU, numpy otherwise. CuPy is never imported here: a CuPy array can
    only exist once the device code has imported it."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return cupy
    return np


def on_device_of(x: Any) -> Any:
    """A context that makes the array's own GPU the current one (CuPy works on the current device);
    nothing to do for a host array."""
    return x.device if array_module(x) is not np else contextlib.nullcontext()


def _host(x: Any) -> np.ndarray:
    return x.get() if array_module(x) is not np else np.asarray(x)


def compare_exact(actual: Any, expected: Any) -> Mismatch | None:
    """Bit-for-bit comparison of a result with its expected value (in the result's dtype): an array
    of the same size, or one value every element must hold. Positions are [row, col] of a matrix,
    else the element's index."""
    xp = array_module(actual)
    with on_device_of(actual):
        want = xp.asarray(expected).astype(actual.dtype, copy=False)
        if want.size not in (1, actual.size):
            raise ValueError(f"cannot compare {actual.size} elements with {want.size} expected")
        uint = np.dtype(f"u{actual.dtype.itemsize}")
        a_bits, w_bits = actual.reshape(-1).view(uint), want.reshape(-1).view(uint)
        bad = xp.flatnonzero(a_bits != w_bits)
        if bad.size == 0:
            return None
        shown = bad[:MAX_REPORTED]
        index, got = _host(shown), _host(a_bits[shown])
        wanted = _host(w_bits[shown]) if w_bits.size > 1 else np.full(index.size, _host(w_bits)[0], dtype=uint)
    cols = actual.shape[1] if actual.ndim == 2 else None
    first = []
    for flat, g, w in zip(index.tolist(), got, wanted):
        where = {"row": flat // cols, "col": flat % cols} if cols else {"index": flat}
        first.append({**where, "expected": float(np.asarray(w).view(actual.dtype)),
                      "actual": float(np.asarray(g).view(actual.dtype)),
                      "xor": f"0x{int(g) ^ int(w):0{2 * actual.dtype.itemsize}x}"})
    return Mismatch(int(bad.size), first)


def stream_expected(xp: Any, n: int) -> Any:
    """What the STREAM buffer `a` holds after a copy (b = a) then a triad (a = b + 2c), all three
    buffers starting as 0, 1, 2, ...: three times that, rounded in float32 as the triad rounds it."""
    return 3 * xp.arange(n, dtype=xp.float32)


def copy_pattern(xp: Any, nbytes: int, source: int) -> Any:
    """The bytes GPU `source` sends in a peer copy: a pattern of its own, so a copy that took data
    from the wrong peer, or stale data, is wrong too."""
    return ((xp.arange(nbytes, dtype=xp.uint32) % 251) * (source + 1)).astype(xp.uint8)


def allreduce_contribution(rank: int) -> float:
    """What rank `rank` puts in every element of an all-reduce (sum) test."""
    return float(rank + 1)


def allreduce_expected(ranks: int) -> float:
    """Every element of the all-reduce's result: the sum of every rank's contribution (exact in
    float32 for any node: 64 ranks sum to 2080)."""
    return float(sum(allreduce_contribution(r) for r in range(ranks)))


def allgather_chunk(rank: int) -> float:
    """Every element of rank `rank`'s chunk in an all-gather test: the result is every rank's
    chunk in rank order, so a chunk landing at the wrong offset shows."""
    return float(rank + 1)


def alltoall_chunk(sender: int, receiver: int, ranks: int) -> float:
    """Every element of the chunk `sender` sends `receiver` in an all-to-all test: distinct for
    every pair, so a chunk delivered to the wrong rank, or from the wrong one, shows (exact in
    float32 up to 4096 ranks: at most 4096^2 < 2^24)."""
    return float(sender * ranks + receiver + 1)


def odd_ones_out(fingerprints: dict[str, str]) -> tuple[str | None, list[str]]:
    """The fingerprint most subjects share, and the subjects that differ from it. With no strict
    majority (two GPUs that disagree, say) nobody can be blamed alone: everyone differs."""
    if len(fingerprints) < 2:
        return next(iter(fingerprints.values()), None), []
    counts = Counter(fingerprints.values())
    common, n = counts.most_common(1)[0]
    if n * 2 <= len(fingerprints):
        return None, sorted(fingerprints)
    return common, sorted(s for s, f in fingerprints.items() if f != common)


def decode_memtest_errors(count: int, records: list[tuple[int, int, int]], base_address: int,
                          word_bytes: int = 8) -> dict[str, Any]:
    """The evidence of a memory-test pass: how many words were wrong and the first few, by address."""
    first = []
    for index, expected, actual in sorted(records)[:MAX_REPORTED]:
        first.append({"address": f"0x{base_address + index * word_bytes:x}", "expected": f"0x{expected:016x}",
                      "actual": f"0x{actual:016x}", "xor": f"0x{expected ^ actual:016x}"})
    return {"errors": int(count), "first": first}


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The random pattern of the memory test (kernels/memtest.cu), for the simulated device."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def fingerprint(words: np.ndarray) -> str:
    """The host-side twin of kernels/checksum.cu: plain and position-weighted sums of 32-bit words."""
    w = words.view(np.uint32).astype(np.uint64).ravel()
    with np.errstate(over="ignore"):
        plain = int(w.sum(dtype=np.uint64))
        weighted = int((w * np.arange(1, w.size + 1, dtype=np.uint64)).sum(dtype=np.uint64))
    return f"{plain:016x}{weighted:016x}"


def relative_deficit_pct(value: float, median: float) -> float:
    """How far below the node's median a figure falls, in percent (0 when at or above it)."""
    return max(0.0, (median - value) / median * 100) if median > 0 else 0.0
