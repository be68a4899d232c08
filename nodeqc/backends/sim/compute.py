"""The simulated GPU as worker processes drive it: the same operations as the CuPy device
(nodeqc/backends/cupy_compute.py), done with NumPy on small buffers, timed by the GPU model's rates.

Faults change what the operations do or how long they take; the real verification code in
nodeqc/work/workloads.py and nodeqc/core/known_answer.py must then find them:
- slow=F, hbm_bw=F, p2p_bw=F, nvlink_down=K, pcie_width/pcie_gen: rates are scaled;
- throttle=REASON, power_limit=W: compute slows with the SM clock telemetry shows;
- cotenant, cotenant_late: another process takes its share of the GPU's time (compute and memory);
- bitflip: every matmul result has the same bit of the same element flipped (a GPU that is wrong the
  same way every time: comparing repeats alone would miss it);
- bitflip_random: each timed matmul product has one bit flipped at an element and bit drawn from a
  seeded generator, a different one every product, while the small known-answer product stays
  right (a GPU that errs under sustained load: only comparing repeats and peers catches it);
- badmem: one bit of device memory is stuck at 1;
- retention: a few cells lose their charge (a 1 reads back as 0) when memory is left alone;
- transient_brake=MS: power brake while the load swings with a period up to MS milliseconds;
- hbm_corrupt, pcie_corrupt, p2p_corrupt, nccl_corrupt: the data of a device-memory copy, a host
  round trip, a copy this GPU receives from a peer, or this GPU's all-reduce result comes back with
  one bit flipped at a seeded random element. The workloads' own checks must find it.
Every corruption planted is logged in `planted` (what, where, which bit), so tests can hold what the
verification reports against what was done.
- hang: work stops returning once it has started; lost: the GPU falls off the bus after some load.
- cold_start=S: the first product after each set-up takes S seconds more than the twin's own (its
  dtype's set-up, SETUP_S, and after idle the cold start COLD_FIRST_PRODUCT_S, as real GPUs showed);
- no_pulse: while the load swings, products run NO_PULSE_SLOWDOWN times slower (a GPU whose clocks
  collapse whenever its load swings): each burst overruns its period.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from nodeqc.backends.base import Clock
from nodeqc.backends.cublaslt import fp8_unsupported
from nodeqc.backends.sim.models import HBM_WORK, MEMTEST_WORK, MIB, PCIE_WORK, PLAIN, SIM_GPU_MODELS
from nodeqc.backends.sim.slots import (SLOT_BRAKE_S, SLOT_BRAKE_SINCE, SLOT_CAP_OPEN, SLOT_CAP_S, SLOT_CAP_SINCE,
                                       SLOT_CLOCK_MHZ, SLOT_LOAD, SLOT_LOADED_S,
                                       SLOT_LOST, SLOT_MEM_UTIL, SLOT_POWER_W, SLOT_PULSE_S, SLOT_SWUNG, SLOTS,
                                       transient_braking, warm, write_trace)
from nodeqc.backends.sim.physics import (COLD_FIRST_PRODUCT_S, COTENANT_SHARE, HBM_SETUP_S, IDLE_AFTER_S,
                                         LOST_AFTER_S, MEMTEST_SETUP_S, NVML_AVERAGE_S, NVML_POWER_PERIOD_S,
                                         PCIE_SETUP_S, SETUP_S, cotenant_active, held_by_limit, mean_power, power_at,
                                         sim_clock, sim_power_w)
from nodeqc.core.errors import GpuLostError
from nodeqc.core.known_answer import allreduce_contribution, copy_pattern, fingerprint, splitmix64

# All-reduce bus bandwidth with NVLink SHARP over the one-way peer copy rate: about 480 GB/s on 8x
# H100 SXM (hgx-h100's figure; NVIDIA's cluster readiness engine measured 487.9 two-node, REFERENCE.md)
# over the 378 GB/s a healthy H100 pair copies one way; the ring's 0.95 of it is about 360 (nccl-tests
# report about 370).
NVLS_SHARE = 480 / 378
NIC_PATH_BUSBW_GBS = 48.5  # all-reduce with NCCL_P2P_DISABLE and NCCL_SHM_DISABLE: see nccl_allreduce

NOMINAL_MATMUL_N = 8192  # the size a real GPU multiplies; the simulator computes a small stand-in
SIM_MATMUL_N = 64
SIM_MEMTEST_WORDS = 1 << 18  # 2 MiB of simulated device memory actually patterned
MEMTEST_MAX_RECORDS = 64
BITFLIP_AT = (7, 11)  # row, column of the element a `bitflip` GPU gets wrong
BITFLIP_BIT = 20
BADMEM_BIT = 13
SIM_BASE_ADDRESS = 0x7F3A_0000_0000
MEMTEST_MODULO = 20  # kernels/memtest.cu's MODULO
RETENTION_WEAK_CELLS = 3  # cells of a `retention` GPU that lose their charge during an idle wait
RETENTION_SEED = 0x5EED_FADE
HANG_AFTER_STEPS = 3  # a `hang` GPU stops after the work has visibly started (past its first progress)
DTYPE_NUMPY = {"fp64": np.float64, "fp32": np.float32, "tf32": np.float32, "fp16": np.float16,
               "bf16": np.float32, "fp8": np.float16}
ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
NO_PULSE_SLOWDOWN = 4.0  # a burst sized for half a period takes one and a half periods or more


def expected_words(kind: int, index: np.ndarray, value: int) -> np.ndarray:
    """What kernels/memtest.cu's expected_word gives, for every index at once."""
    v = np.uint64(value)
    base = kind & 0xFF
    if base == 0:
        return np.full(index.shape, v, dtype=np.uint64)
    if base == 1:
        return index ^ v
    if base == 4:
        return np.where(index % np.uint64(MEMTEST_MODULO) == np.uint64((kind >> 8) & 0xFF), v, ~v)
    if base == 5:
        return splitmix64((index & np.uint64((1 << ((kind >> 8) & 0x3F)) - 1)) ^ v)
    r = splitmix64(index ^ v)
    return r if base == 2 else ~r


class SimDevice:
    simulated = True
    ka_size = 64  # known-answer product size the simulator computes for real

    def __init__(self, spec: dict[str, Any], index: int):
        self.index = index
        self.k = spec["visible"][index]
        self.shared = spec["shared"]
        scale, origin = spec["clock"]
        self.clock = Clock(scale, origin, spec.get("clock_paced"))
        mine = [f for f in spec["faults"] if f.target == "gpu" and f.index == self.k]
        self.faults = {f.name: f.value for f in mine}
        self._fault_pairs = [(f.name, f.value) for f in mine]
        self.model = SIM_GPU_MODELS[spec["scenario"]["gpus"]["model"]]
        self._rng = np.random.default_rng([spec["scenario"].get("seed", 0), self.k])  # where corruption strikes
        self._last_product_at: float | None = None  # on the run's clock: a GPU idle since is cold again
        self.planted: list[dict[str, Any]] = []
        self._steps = 0
        self._mm: dict[str, Any] = {}
        self._mem: np.ndarray | None = None
        self._stream: tuple[np.ndarray, np.ndarray] | None = None
        # What this GPU draws as it changes, for the node's NVML and temperature too (slots.write_trace).
        self._power_trace: list[tuple[float, ...]] = []
        self._doing: str | None = None  # the work whose clock and power the shared slots hold (_computing)
        self._rose_at, self._worked_since_rise = 0.0, 0.0  # the load's last rise, the work since (set_load)

    # ------------------------------------------------------------------ life and load

    def _slot(self, slot: int) -> int:
        return self.k * SLOTS + slot

    def set_load(self, load: float) -> None:
        # A pulse's burst lasts as long as its products computed from its rise, as queued kernels run:
        # not the host's time between them, ten times over on a compressed clock (2026-11-29: 561-581
        # W at 100 ms against the real 495-555).
        was, pulsing = self.shared[self._slot(SLOT_LOAD)], self.shared[self._slot(SLOT_PULSE_S)] > 0
        self.shared[self._slot(SLOT_LOAD)] = load
        fell, end = pulsing and load < was and self._worked_since_rise > 0, self._rose_at + self._worked_since_rise
        self._trace_power(min(self.clock.now(), max(self._power_trace[-1][0], end)) if fell and self._power_trace else None)
        if load > was:
            self._rose_at, self._worked_since_rise = self._power_trace[-1][0], 0.0

    def _trace_power(self, at: float | None = None) -> None:
        """Note what the GPU draws from now on (or from `at`); the trace keeps what NVML's window needs."""
        now = self.clock.now() if at is None else at
        load = self.shared[self._slot(SLOT_LOAD)]
        watts = sim_power_w(self.model, load, self.shared[self._slot(SLOT_POWER_W)], self._fault_pairs,
                            warm=warm(self.shared, self.k))
        if load > 0 and self.shared[self._slot(SLOT_PULSE_S)] > 0:
            faults = dict(self._fault_pairs)  # a burst of the pulse overshoots the limit, as far as it can draw
            limit = min(faults.get("power_limit", self.model.tdp_w), self.model.tdp_w)
            watts = max(watts, min(self.model.pulse_burst_share * limit, faults.get("power", math.inf)))
        self._time_power_cap(now)
        trace = self._power_trace
        if not trace and load > 0:  # the idle before, for NVML's mean to rise from (physics.NVML_AVERAGE_S)
            idle = sim_power_w(self.model, 0.0, self.shared[self._slot(SLOT_POWER_W)], self._fault_pairs,
                               warm=warm(self.shared, self.k))
            trace.append((now, idle, idle, 0.0, 1.0))
            write_trace(self.shared, self.k, trace[-1])
        at = power_at(trace[-1], now) if trace else watts
        trace.append((now, watts, max(at, watts), load, self.model.die_heat_share(self._doing)))
        write_trace(self.shared, self.k, trace[-1])
        while len(trace) > 1 and trace[1][0] <= now - 2 * NVML_AVERAGE_S:
            trace.pop(0)

    def _time_power_cap(self, now: float) -> None:
        """Open or close the interval in which the power limit holds this GPU's clock (SLOT_CAP_S), as
        what it computes changes. Written in the order that keeps a reader between two writes from
        counting an interval twice or from a stale start."""
        held = held_by_limit(self.model, self.shared[self._slot(SLOT_LOAD)], self.shared[self._slot(SLOT_CLOCK_MHZ)],
                             self._fault_pairs)
        was = self.shared[self._slot(SLOT_CAP_OPEN)] > 0
        if held and not was:
            self.shared[self._slot(SLOT_CAP_SINCE)] = now
            self.shared[self._slot(SLOT_CAP_OPEN)] = 1.0
        elif was and not held:
            self.shared[self._slot(SLOT_CAP_OPEN)] = 0.0
            self.shared[self._slot(SLOT_CAP_S)] += max(0.0, now - self.shared[self._slot(SLOT_CAP_SINCE)])

    def _mean_power(self, end: float, window: float = NVML_POWER_PERIOD_S) -> float:
        """The mean power over `window` seconds ending at `end` (run clock)."""
        return mean_power(self._power_trace, end, window)

    def set_pulse(self, period_s: float) -> None:
        """The period the load swings with now (0: steady), which a `transient_brake` GPU reacts to;
        the brake it causes is timed here, where the swings change (see SLOT_BRAKE_S)."""
        brake_ms = self.faults.get("transient_brake", 0)
        was = transient_braking(self.shared[self._slot(SLOT_PULSE_S)], brake_ms)
        now = self.clock.now()
        if transient_braking(period_s, brake_ms) and not was:
            self.shared[self._slot(SLOT_BRAKE_SINCE)] = now  # before the period: a reader never sees a stale start
        self.shared[self._slot(SLOT_PULSE_S)] = period_s
        if period_s > 0:
            self.shared[self._slot(SLOT_SWUNG)] = 1.0
        if was and not transient_braking(period_s, brake_ms):
            self.shared[self._slot(SLOT_BRAKE_S)] += max(0.0, now - self.shared[self._slot(SLOT_BRAKE_SINCE)])

    def power_reading(self) -> tuple[float | None, float | None]:
        """(power, instantaneous power) in W now as the worker reads them, noise aside: NVML's reading held
        from its last update ten times a second (models.power_averaged says which), and the last 100 ms's."""
        if not self._power_trace:
            self._trace_power()
        now = self.clock.now()
        held = math.floor(now / NVML_POWER_PERIOD_S) * NVML_POWER_PERIOD_S
        return self._mean_power(held, NVML_AVERAGE_S if self.model.power_averaged else NVML_POWER_PERIOD_S), \
            self._mean_power(now)

    def check_alive(self) -> None:
        if self.shared[self._slot(SLOT_LOST)] > 0:
            raise GpuLostError(self.index, "GPU has fallen off the bus")

    def _work(self, seconds: float) -> None:
        """Spend `seconds` of the run's clock on device work; faults strike here."""
        self.check_alive()
        self._steps += 1
        if "hang" in self.faults and self._steps > HANG_AFTER_STEPS:
            while True:  # a kernel that never completes: only the watchdog ends this
                time.sleep(3600)
        self.clock.sleep(seconds)
        self._worked_since_rise += seconds
        self.shared[self._slot(SLOT_LOADED_S)] += seconds * max(self.shared[self._slot(SLOT_LOAD)], 0.0)
        if "lost" in self.faults and self.shared[self._slot(SLOT_LOADED_S)] >= LOST_AFTER_S:
            self.shared[self._slot(SLOT_LOST)] = 1.0
        self.check_alive()

    def busy_step(self, seconds: float) -> None:
        self._computing(PLAIN)
        self._work(seconds)

    def _computing(self, dtype: str | None) -> None:
        """The GPU's loaded clock, power and memory utilisation follow what it computes in, or which
        work that is not matmul it does (sim_models: the twin's figures where the part was measured,
        else nodeqc.core.skus.Sku.loaded_clock and the estimates). Called as the work changes: the
        burn-in turns from matmul to copies and back in every window."""
        if dtype == self._doing and dtype is not None:
            return
        self._doing = dtype
        self.shared[self._slot(SLOT_CLOCK_MHZ)] = self.model.loaded_clock(dtype)
        self.shared[self._slot(SLOT_POWER_W)] = self.model.loaded_power_w(dtype)
        self.shared[self._slot(SLOT_MEM_UTIL)] = self.model.mem_util_share(dtype)
        self._trace_power()

    def _share(self) -> float:
        """The share of the GPU's time this work gets: all of it, unless a co-tenant computes too."""
        return COTENANT_SHARE if cotenant_active(self._fault_pairs, self.shared[self._slot(SLOT_LOADED_S)]) else 1.0

    def close(self) -> None:
        self.set_load(0.0)

    def release(self) -> None:
        self._mm, self._mem, self._stream = {}, None, None
        self._computing(None)

    @property
    def compute_capability(self) -> float:
        return float(self.model.compute_capability)

    def supports(self, dtype: str) -> str | None:
        """None when this GPU can run the dtype, else why not, as the real device says (FP8 by compute capability)."""
        if dtype == "fp8" and (why := fp8_unsupported(self.compute_capability)):
            return why
        if dtype not in self.model.tflops:
            return f"{self.model.name} has no {dtype} matrix units"
        return None

    # ------------------------------------------------------------------ matmul

    def matmul_setup(self, dtype: str, seed: int, n: int = NOMINAL_MATMUL_N) -> int:
        """Random operands, identical on every GPU for the same seed, standing for n x n ones (the rate
        is the model's at any n: an estimate below the sizes that fill a GPU); flops per product."""
        load = self.shared[self._slot(SLOT_LOAD)]
        self.set_load(0.0)  # the host's work, its time compressed: the GPU idles, as in a real set-up
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((SIM_MATMUL_N, SIM_MATMUL_N)).astype(DTYPE_NUMPY[dtype])
        b = rng.standard_normal((SIM_MATMUL_N, SIM_MATMUL_N)).astype(DTYPE_NUMPY[dtype])
        self._mm = {"dtype": dtype, "a": a, "b": b, "c": None, "cold": True, "n": n}
        self._computing(dtype)
        self.set_load(load)
        return 2 * n ** 3

    def matmul_run(self, iters: int) -> float:
        """`iters` products, timed as the GPU model would take them at its sustained rate."""
        mm = self._mm
        self._computing(mm["dtype"])
        clock_share, _ = sim_clock(self.model, self._fault_pairs, self.shared[self._slot(SLOT_POWER_W)])
        rate = self.model.tflops[mm["dtype"]] * self.faults.get("slow", 1.0) * clock_share * self._share() * 1e12
        seconds = iters * 2 * mm["n"] ** 3 / rate
        if "no_pulse" in self.faults and self.shared[self._slot(SLOT_PULSE_S)] > 0:
            seconds *= NO_PULSE_SLOWDOWN
        setup_s = 0.0
        if mm.pop("cold", False):
            # After idle, the cold start (clocks ramping, handles made); at work, the dtype's set-up,
            # through which the GPU idles (physics.SETUP_S: the real set-ups read 0-2 % busy, 1980 MHz).
            idle = self._last_product_at is None or self.clock.now() - self._last_product_at > IDLE_AFTER_S
            setup = SETUP_S.get(mm["dtype"], COLD_FIRST_PRODUCT_S)
            cold = (max(setup, COLD_FIRST_PRODUCT_S) if idle else setup) + self.faults.get("cold_start", 0.0)
            load = self.shared[self._slot(SLOT_LOAD)]
            if idle or load <= 0:
                seconds += cold
            else:
                self.set_load(0.0)
                self._work(cold)
                self.set_load(load)
                setup_s = cold
        self._work(seconds)
        self._last_product_at = self.clock.now()
        mm["c"] = self._corrupt((mm["a"].astype(np.float64) @ mm["b"].astype(np.float64)).astype(np.float32),
                                "matmul", mm["dtype"])
        return seconds + setup_s

    def matmul_fingerprint(self) -> str:
        return fingerprint(self._mm["c"])

    def known_answer(self, dtype: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.float64 if dtype == "fp64" else np.float32
        return self._corrupt((a.astype(np.float64) @ b.astype(np.float64)).astype(out), "known_answer", dtype)

    def _corrupt(self, c: np.ndarray, what: str, dtype: str) -> np.ndarray:
        if "bitflip" in self.faults:
            bits = c.view(np.uint64 if c.dtype == np.float64 else np.uint32)
            bits[BITFLIP_AT] ^= bits.dtype.type(1 << BITFLIP_BIT)
        if "bitflip_random" in self.faults and what == "matmul":
            self.flip_random_bit(c, what, dtype=dtype)
        return c

    def flip_random_bit(self, x: np.ndarray, what: str, **where: Any) -> None:
        """Flip one bit of `x` in place, at an element and bit drawn from this GPU's generator."""
        uint = np.dtype(f"u{x.dtype.itemsize}")
        flat = x.reshape(-1).view(uint)
        index = int(self._rng.integers(flat.size))
        bit = int(self._rng.integers(8 * x.dtype.itemsize))
        flat[index] ^= uint.type(1 << bit)
        self.planted.append({"what": what, **where, "index": index, "bit": bit})

    @staticmethod
    def to_host(x: np.ndarray) -> np.ndarray:
        return x

    # ------------------------------------------------------------------ memory bandwidth

    def _hbm_rate(self) -> float:
        return self.model.hbm_gbps * self.faults.get("hbm_bw", 1.0) * self._share() * 1e9

    def stream_setup(self, nbytes: int) -> int:
        """Two buffers for copy and triad; returns the bytes one pass of either moves (read + write)."""
        self._stream = (np.arange(1 << 16, dtype=np.float32), np.arange(1 << 16, dtype=np.float32))
        self._stream_nominal = nbytes
        self.clock.sleep(HBM_SETUP_S)
        self._computing(HBM_WORK)
        return 2 * nbytes

    def stream_copy_choice(self) -> dict[str, Any] | None:
        """The copy kernels' set-up rates as the real part's probe read them (models.Twin.copy_probe_gbps)."""
        return self.model.copy_choice(self._hbm_rate() / 1e9)

    def stream_run(self, kind: str, iters: int) -> float:
        init, a = self._stream
        self._computing(HBM_WORK)
        moved = (2 if kind == "copy" else 3) * self._stream_nominal * iters
        seconds = moved / (self._hbm_rate() * (1.0 if kind == "copy" else self.model.triad_share))
        self._work(seconds)
        a[:] = init if kind == "copy" else init + 2.0 * init
        return seconds

    def stream_result(self) -> np.ndarray:
        """Buffer `a` after copy then triad over buffers that all start as 0, 1, 2, ... (a copy, so a
        corruption planted here stays out of the next pass)."""
        a = self._stream[1].copy()
        if "hbm_corrupt" in self.faults:
            self.flip_random_bit(a, "hbm")
        return a

    # ------------------------------------------------------------------ memory pattern test

    def memtest_setup(self, fraction: float) -> dict[str, Any]:
        """Take `fraction` of the free memory (simulated: the model's memory, minus what the driver
        keeps); returns the bytes covered and the base address of the buffer."""
        free = int(self.model.memory_mib * MIB * 0.985)
        self._mem_nominal = int(free * fraction) // 8 * 8
        self._mem = np.zeros(SIM_MEMTEST_WORDS, dtype=np.uint64)
        self._index = np.arange(SIM_MEMTEST_WORDS, dtype=np.uint64)
        self.clock.sleep(MEMTEST_SETUP_S)
        self._computing(MEMTEST_WORK)
        return {"bytes": self._mem_nominal, "free_bytes": free, "base_address": SIM_BASE_ADDRESS,
                "words": SIM_MEMTEST_WORDS}  # the words actually patterned

    def _stuck(self) -> None:
        if "badmem" in self.faults:
            self._mem[SIM_MEMTEST_WORDS // 3] |= np.uint64(1 << BADMEM_BIT)

    def _mem_time(self, passes: float) -> float:
        seconds = passes * self._mem_nominal / (self.model.memtest_share * self._hbm_rate())
        self._work(seconds)
        return seconds

    def _log(self, want: np.ndarray, got: np.ndarray) -> tuple[int, list[tuple[int, int, int]]]:
        bad = np.flatnonzero(want != got)
        records = [(int(i), int(want[i]), int(got[i])) for i in bad[:MEMTEST_MAX_RECORDS]]
        return int(bad.size), records

    def memtest_write(self, kind: int, value: int) -> float:
        self._mem[:] = expected_words(kind, self._index, value)
        self._stuck()
        return self._mem_time(1)

    def memtest_check(self, kind: int, value: int) -> tuple[int, list[tuple[int, int, int]], float]:
        count, records = self._log(expected_words(kind, self._index, value), self._mem)
        return count, records, self._mem_time(1)

    def memtest_invert(self, kind: int, value: int, descending: bool) -> tuple[int, list[tuple[int, int, int]], float]:
        want = expected_words(kind, self._index, value)
        count, records = self._log(want, self._mem)
        self._mem[:] = ~want
        self._stuck()
        return count, records, self._mem_time(2)

    def memtest_move(self, half: int, upward: bool) -> float:
        """Copy words [0, half) onto [half, 2 half) (upward), or back."""
        if upward:
            self._mem[half:2 * half] = self._mem[:half]
        else:
            self._mem[:half] = self._mem[half:2 * half]
        self._stuck()
        return self._mem_time(1)

    def memtest_wait(self, seconds: float) -> None:
        """Leave the memory alone, the GPU idle, for `seconds`. A `retention` GPU's weak cells lose
        their charge meanwhile: a stored 1 reads back as 0."""
        self.set_load(0.0)
        self._work(seconds)
        if "retention" in self.faults:
            rng = np.random.default_rng(RETENTION_SEED + self.k)
            words = rng.choice(SIM_MEMTEST_WORDS, RETENTION_WEAK_CELLS, replace=False)
            bits = rng.integers(0, 64, RETENTION_WEAK_CELLS)
            for w, b in zip(words, bits):
                self._mem[w] &= ~np.uint64(1 << int(b))

    def memtest_address_lines(self) -> tuple[int, list[tuple[int, int, int]], float]:
        """Walking ones on the address lines: a word at each power-of-two index must not alias another."""
        lines = [0] + [1 << b for b in range(SIM_MEMTEST_WORDS.bit_length() - 1)]
        a, b = np.uint64(0x5555_5555_5555_5555), np.uint64(0xAAAA_AAAA_AAAA_AAAA)
        self._mem[lines] = a
        self._stuck()
        count, records = 0, []
        for line in lines[1:]:
            self._mem[line] = b
            self._stuck()
            others = [x for x in lines if x != line]
            c, r = self._log(np.full(len(others), a, dtype=np.uint64), self._mem[others])
            count += c
            records += [(others[i], w, g) for i, w, g in r]
            self._mem[line] = a
            self._stuck()
        return count, records[:MEMTEST_MAX_RECORDS], self._mem_time(0.01)

    # ------------------------------------------------------------------ host <-> device

    def link_factor(self) -> float:
        """How much of its maximum the PCIe link carries as trained (width, and 2x per generation)."""
        m = self.model
        width = self.faults.get("pcie_width", m.pcie_width)
        gen = self.faults.get("pcie_gen", m.pcie_gen)
        return width / m.pcie_width * 2.0 ** (gen - m.pcie_gen)

    def pcie_setup(self, nbytes: int) -> None:
        self._pcie = (np.arange(1 << 16, dtype=np.uint64).astype(np.uint8), np.zeros(1 << 16, dtype=np.uint8))
        self._pcie_nominal = nbytes
        self.clock.sleep(PCIE_SETUP_S)
        self._computing(PCIE_WORK)

    def pcie_run(self, direction: str, iters: int) -> float:
        self._computing(PCIE_WORK)
        healthy = self.model.d2h_gbps if direction == "d2h" else self.model.h2d_gbps
        rate = healthy * self.link_factor() * 1e9
        # Both directions at once share nothing on a full-duplex link, but each is a little slower.
        moved = self._pcie_nominal * iters
        seconds = moved / (rate * (self.model.bidir_share if direction == "bidir" else 1.0))
        self._work(seconds)
        host, dev = self._pcie
        dev[:] = host
        return seconds

    def pcie_link_under_copy(self) -> dict[str, Any]:
        m = self.model
        self._work(0.01)
        return {"gen": self.faults.get("pcie_gen", m.pcie_gen), "width": self.faults.get("pcie_width", m.pcie_width),
                "max_gen": m.pcie_gen, "max_width": m.pcie_width}

    def pcie_round_trip(self) -> tuple[np.ndarray, np.ndarray]:
        """A pattern copied host -> device -> host: what was sent, and what came back."""
        host, dev = self._pcie
        back = dev.copy()
        if "pcie_corrupt" in self.faults:
            self.flip_random_bit(back, "pcie")
        return host, back


class SimNodeDevices:
    """All simulated GPUs of the node from one worker: GPU-to-GPU copies and NCCL."""

    simulated = True

    def __init__(self, spec: dict[str, Any], indices: list[int]):
        self.devices = {i: SimDevice(spec, i) for i in indices}
        self.topology = spec["scenario"]["gpus"].get("topology", "pcie")
        any_dev = next(iter(self.devices.values()))
        self.clock = any_dev.clock
        self.model = any_dev.model

    def set_load(self, load: float) -> None:
        for d in self.devices.values():
            d.set_load(load)

    def close(self) -> None:
        for d in self.devices.values():
            d.close()

    def _work(self, seconds: float, involved: list[int]) -> None:
        for i in involved[1:]:
            self.devices[i].check_alive()
        self.devices[involved[0]]._work(seconds)

    def _link_fraction(self, i: int) -> float:
        d = self.devices[i]
        links = self.model.nvlink_links
        if not links or self.topology == "pcie":
            return 1.0
        return max(0.0, (links - d.faults.get("nvlink_down", 0)) / links)

    def peer_access(self) -> dict[tuple[int, int], bool]:
        """Every pair, but not a GPU whose NVLinks are all down on an NVLink node: its peers reach it
        through host memory only, as CUDA then reports no peer access (an estimate of the driver's
        answer; the GPUs of an NVSwitch baseboard have no other peer path)."""
        return {(i, j): self._link_fraction(i) > 0 and self._link_fraction(j) > 0
                for i in self.devices for j in self.devices if i != j}

    def _pair_rate(self, src: int, dst: int) -> float:
        f = min(self._link_fraction(src), self._link_fraction(dst))
        bw = min(self.devices[src].faults.get("p2p_bw", 1.0), self.devices[dst].faults.get("p2p_bw", 1.0))
        if f <= 0:
            # No NVLink left: what moves goes through host memory, at most a host copy's rate (it was a
            # division by zero: the 2026-11-28 advice review, gpu1:nvlink_down=18 on gb200-nvl72-tray).
            return min(self.devices[src].model.d2h_gbps, self.devices[dst].model.h2d_gbps) * bw * 1e9
        return self.model.p2p_gbps * f * bw * 1e9

    def p2p_setup(self, nbytes: int) -> None:
        self._p2p_nominal = nbytes
        self._buffers = {i: copy_pattern(np, 1 << 14, i) for i in self.devices}
        self._received: dict[tuple[int, int], np.ndarray] = {}

    def p2p_copy(self, src: int, dst: int, iters: int, bidir: bool = False) -> float:
        seconds = self._p2p_nominal * iters / self._pair_rate(src, dst)
        self._work(seconds, [src, dst])
        self._receive(src, dst)
        if bidir:
            self._receive(dst, src)
        return seconds

    def _receive(self, src: int, dst: int) -> None:
        got = self._buffers[src].copy()
        if "p2p_corrupt" in self.devices[dst].faults:
            self.devices[dst].flip_random_bit(got, "p2p", src=src, dst=dst)
        self._received[(src, dst)] = got

    def p2p_received(self, src: int, dst: int) -> np.ndarray:
        """What `dst` holds after the last copy from `src`."""
        return self._received[(src, dst)]

    def p2p_latency(self, src: int, dst: int, iters: int) -> float:
        per_copy = (2.2e-6 if self.topology != "pcie" else 11e-6) / max(self._link_fraction(src), 0.05)
        self._work(per_copy * iters, [src, dst])
        return per_copy

    def nccl_unavailable(self) -> str | None:
        return None

    def nvls_available(self) -> bool:
        """NVLink SHARP: NVSwitch nodes of Hopper and newer (third-generation NVSwitch and later),
        unless a GPU's multicast is down (the nvls_down fault), as NCCL sees it."""
        first = next(iter(self.devices.values()))
        return (self.topology == "nvswitch" and float(first.model.compute_capability) >= 9.0
                and not any("nvls_down" in d.faults for d in self.devices.values()))

    def nccl_allreduce(self, nbytes: int, iters: int,
                       env: dict[str, str] | None = None) -> tuple[float, dict[int, np.ndarray]]:
        """All-reduce (sum) of `nbytes` per GPU, `iters` times; returns seconds per all-reduce and
        each GPU's result, for the workload to check. `env`: NCCL's switches, as the real one reads them."""
        env = env or {}
        n = len(self.devices)
        rate = min(self._pair_rate(i, j) for i in self.devices for j in self.devices if i != j)
        busbw = rate * (0.95 if self.topology != "pcie" else 0.5)
        if self.nvls_available():
            busbw = rate * NVLS_SHARE  # NCCL picks NVLink SHARP on its own where the switches offer it
        if env.get("NCCL_P2P_DISABLE") == "1" and env.get("NCCL_SHM_DISABLE") == "1":
            # NCCL's own switches send every byte through the NICs: one 400 Gb/s NDR NIC per GPU
            # (50 GB/s) at 97% (a model: Azure's floor on an ND GB200 v6, whose 4 NICs are the same NDR
            # ConnectX-7, is 48 GB/s, so a healthy node reaches at least that; on ND H100 v5 it is 40).
            busbw = NIC_PATH_BUSBW_GBS * 1e9  # NVLink is not used: its faults do not show here
        algbw = busbw * n / (2 * (n - 1))
        per = nbytes / algbw
        self._work(per * iters, list(self.devices))
        contributions = [np.full(1024, allreduce_contribution(rank), dtype=np.float32) for rank in range(n)]
        total = np.sum(contributions, axis=0, dtype=np.float32)
        results = {}
        for i, d in self.devices.items():
            results[i] = total.copy()
            if "nccl_corrupt" in d.faults:
                d.flip_random_bit(results[i], "nccl")
        return per, results
