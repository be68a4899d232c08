"""The memory pattern test, run inside worker processes against the device interface: the quick
program (address lines, own address, moving inversions) and the full one's patterns beyond it, once
or repeated for as long as the profile asks; every wrong word logged by address."""

from __future__ import annotations

from typing import Any

from nodeqc.core.known_answer import decode_memtest_errors
from nodeqc.work.steps import Reporter, idle

ALL_ONES = 0xFFFF_FFFF_FFFF_FFFF
MEMTEST_SEED = 0x6E6F_6465_7163  # "nodeqc"

# The memory pattern test: (name, [(operation, kind, value, flag)]). Kinds as in kernels/memtest.cu:
# 0 constant, 1 own address ^ value, 2 random, 3 random complemented, 4 modulo-20 (offset in bits
# 8-15), 5 block pattern (block of 2^k words, k in bits 8-15). `flag` is the descending order of an
# invert and the direction of a move (True: the lower half onto the upper).
MemtestOp = tuple[str, int, int, bool]
MEMTEST_QUICK: list[tuple[str, list[MemtestOp]]] = [
    ("walking ones on the address lines", [("address_lines", 0, 0, False)]),
    ("own address", [("write", 1, 0, False), ("check", 1, 0, False)]),
    ("own address, inverted", [("write", 1, ALL_ONES, False), ("check", 1, ALL_ONES, False)]),
    ("moving inversions, zeros and ones", [("write", 0, 0, False), ("invert", 0, 0, False),
                                           ("invert", 0, ALL_ONES, True), ("check", 0, 0, False)]),
    ("moving inversions, random", [("write", 2, MEMTEST_SEED, False), ("invert", 2, MEMTEST_SEED, False),
                                   ("invert", 3, MEMTEST_SEED, True), ("check", 2, MEMTEST_SEED, False)]),
]
MEMTEST_SEED_2 = 0x7365_7175_656E  # a second random sequence for full mode
MODULO_PATTERN = 0x5A5A_5A5A_A5A5_A5A5


def _moving_inversions(value: int) -> list[MemtestOp]:
    """Write `value`; check it and write its complement ascending; check that and restore descending."""
    return [("write", 0, value, False), ("invert", 0, value, False),
            ("invert", 0, value ^ ALL_ONES, True), ("check", 0, value, False)]


def _walking(width: int) -> list[MemtestOp]:
    """A one walking through every bit of each `width`-bit lane (its complement, the walking zero,
    comes from the inversions)."""
    lane = sum(1 << k for k in range(0, 64, width))  # the lowest bit of every lane
    return [op for bit in range(width) for op in _moving_inversions(lane << bit)]


def memtest_program(words: int, full: bool) -> list[tuple[str, list[MemtestOp]]]:
    """Quick mode: address lines, own address and moving inversions (constant and random). Full mode
    adds the patterns cuda_memtest and DCGM's memtest run beyond those: 8- and 32-bit walking
    patterns, modulo-20, a second random sequence, block move, and bit fade (written, left alone for
    the retention time with the GPU idle, read back; ones, then zeros)."""
    if not full:
        return MEMTEST_QUICK
    k = max(1, (words // 2).bit_length() - 1)  # the largest power-of-two block two of which fit
    block = 5 | (k << 8)
    return MEMTEST_QUICK + [
        ("walking ones and zeros, 8-bit", _walking(8)),
        ("walking ones and zeros, 32-bit", _walking(32)),
        ("modulo-20", [op for offset in range(20) for op in
                       (("write", 4 | (offset << 8), MODULO_PATTERN, False),
                        ("check", 4 | (offset << 8), MODULO_PATTERN, False))]),
        ("random sequence", [("write", 2, MEMTEST_SEED_2, False), ("check", 2, MEMTEST_SEED_2, False),
                             ("write", 3, MEMTEST_SEED_2, False), ("check", 3, MEMTEST_SEED_2, False)]),
        ("block move", [("write", block, MEMTEST_SEED, False), ("move", block, 1 << k, True),
                        ("check", block, MEMTEST_SEED, False), ("move", block, 1 << k, False),
                        ("check", block, MEMTEST_SEED, False)]),
        ("bit fade", [("write", 0, ALL_ONES, False), ("wait", 0, 0, False), ("check", 0, ALL_ONES, False),
                      ("write", 0, 0, False), ("wait", 0, 0, False), ("check", 0, 0, False)]),
    ]


# Bytes each operation touches, in units of the buffer size.
_TOUCHES = {"write": 1, "check": 1, "invert": 2, "address_lines": 0, "move": 1, "wait": 0}


# Wrong words kept with their addresses over every round (the count is exact): a stuck bit
# repeats each round, and the first of them say where it is.
MEMTEST_RECORDS_KEPT = 1024


def memory_test(device: Any, params: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """The pattern program over params['fraction'] of free device memory; every error is logged.
    params['full'] adds the full-mode patterns, params['retention_s'] is the bit fade's wait. The
    program runs once, then again whole until params['min_s'] run-clock seconds have passed (a
    profile's longer memory test); each pattern's errors are summed over its rounds."""
    info = device.memtest_setup(float(params["fraction"]))
    program = memtest_program(info["words"], bool(params.get("full")))
    retention_s, min_s = float(params.get("retention_s", 0)), float(params.get("min_s", 0))
    total, records, seconds, touched = 0, [], 0.0, 0.0
    errors = [0] * len(program)
    steps = sum(len(ops) for _, ops in program)
    clock = device.clock
    done, rounds, start = 0, 0, clock.now()

    def progress(found: int) -> None:
        # The first round by its operations; the rounds after it by the time asked for.
        share = done / steps if rounds == 0 else (clock.now() - start) / min_s
        report.progress(min(1.0, share), errors=total + found, rounds=rounds + 1)

    device.set_load(1.0)
    try:
        while rounds == 0 or clock.now() - start < min_s:
            done = 0
            for k, (_, ops) in enumerate(program):
                found = 0
                for op, kind, value, flag in ops:
                    count, recs, s = 0, [], 0.0
                    if op == "write":
                        s = device.memtest_write(kind, value)
                    elif op == "check":
                        count, recs, s = device.memtest_check(kind, value)
                    elif op == "invert":
                        count, recs, s = device.memtest_invert(kind, value, flag)
                    elif op == "move":
                        s = device.memtest_move(value, flag)
                    elif op == "wait":
                        idle(device, retention_s, lambda: progress(found))
                        device.set_load(1.0)
                    else:
                        count, recs, s = device.memtest_address_lines()
                    found += count
                    records += recs[:max(0, MEMTEST_RECORDS_KEPT - len(records))]  # the first ones tell
                    if _TOUCHES[op]:
                        # The rate is of the passes that sweep the buffer. The address lines' few words
                        # cost host round trips and, in a fresh process, CuPy's indexing kernels' first
                        # compilation: 0.568 s of a first call's 1.69 s on a real H100, which halved the
                        # reported rate (1234.6 GB/s; 2860.6 from the same call's sweeps; 2026-11-27,
                        # benchmarks/memtest_ops.py).
                        seconds += s
                    touched += _TOUCHES[op] * info["bytes"]
                    done += 1
                    progress(found)
                total += found
                errors[k] += found
            rounds += 1
        elapsed = clock.now() - start
    finally:
        device.set_load(0.0)
        device.release()
    # fraction and patterns_planned: what was asked, for the verdict's proof of coverage.
    return {"bytes": info["bytes"], "free_bytes": info["free_bytes"], "fraction": float(params["fraction"]),
            "patterns_planned": len(program), "rounds": rounds, "min_s": min_s,
            "elapsed_s": round(elapsed, 3),
            "gbps": round(touched / seconds / 1e9, 1) if seconds else None,
            "passes": [{"pattern": name, "errors": n} for (name, _), n in zip(program, errors)],
            "retention_s": retention_s if params.get("full") else 0,
            **decode_memtest_errors(total, records, info["base_address"])}
