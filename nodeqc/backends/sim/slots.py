"""The state a simulated node shares with the worker processes that load its GPUs: one array of
doubles (multiprocessing, no lock: each slot has one writer), SLOTS per GPU, GPU k's at k * SLOTS.
A module of its own, below the node (nodeqc.backends.sim.node), its workers (sim_compute) and its
platform (sim_platform), which all read or write it."""

from typing import Any

# Slots per GPU in the shared array: the load a worker puts on it now, whether it fell off the bus,
# and the seconds of load it has had (written by the worker that makes the load); the period the
# load swings with, and for a `transient_brake` GPU the seconds of brake the swings have caused
# (closed intervals) and when the open one began, kept by the worker as it changes the swings, so
# the driver's brake counter is exact at any reading, as a real driver's is.
SLOT_LOAD, SLOT_LOST, SLOT_LOADED_S, SLOT_PULSE_S, SLOT_BRAKE_S, SLOT_BRAKE_SINCE = 0, 1, 2, 3, 4, 5
SLOT_SWUNG = 6  # whether the load has swung at all (the pulse test ran): the PSU faults follow it
# The loaded clock of the dtype the GPU computes in now (nodeqc.core.skus: half precision holds the power
# limit at a lower clock); 0: the SKU's loaded clock.
SLOT_CLOCK_MHZ = 7
# The power a healthy part draws under full load of that dtype (sim_models.Twin); 0: not measured.
SLOT_POWER_W = 8
# The seconds the power limit has held the clock down (sw_power_cap: closed intervals), when the open
# one began, and whether one is open: kept by the worker as it changes what the GPU computes, so the
# driver's counter is exact however seldom it is read (the burn's dtypes change between readings).
SLOT_CAP_S, SLOT_CAP_SINCE, SLOT_CAP_OPEN = 9, 10, 11
# The memory's utilisation under full load of the work the GPU does now, as a share (sim_models.MEM_UTIL_SHARE).
SLOT_MEM_UTIL = 12
# What the GPU drew as its work changed, for the node's NVML to average as a real one does (its power
# over about a second, its utilisation over a sixth: physics.NVML_AVERAGE_S, NVML_UTIL_WINDOW_S): the
# worker's last TRACE_LEN changes (compute.SimDevice._trace_power), each TRACE_FIELDS doubles (run
# time, W, W it falls from, load, the share of the watts that heats the die: models.SimGpuModel
# .die_heat_share) in a ring from SLOT_TRACE; SLOT_TRACE_N counts the changes written,
# each entry written before the count that publishes it (read_trace). 256 changes: 2.5 s of the
# pulse's 20 ms period, more than the second NVML averages.
SLOT_TRACE_N = 13
SLOT_TRACE = 14
TRACE_LEN, TRACE_FIELDS = 256, 5
SLOTS = SLOT_TRACE + TRACE_LEN * TRACE_FIELDS


def transient_braking(pulse_s: float, brake_ms: float) -> bool:
    """A `transient_brake=brake_ms` GPU brakes while its load swings with a period up to brake_ms."""
    return 0 < pulse_s <= brake_ms / 1000


def warm(shared: Any, k: int) -> bool:
    """Whether GPU k has been loaded (seconds of load recorded): its clocks then stay up at idle
    (physics.WARM_IDLE_SHARE), as the node's NVML and the worker's own power reading both show."""
    return shared[k * SLOTS + SLOT_LOADED_S] > 0


def write_trace(shared: Any, k: int, entry: tuple[float, ...]) -> None:
    """Publish one change of GPU k's draw (the worker is its only writer)."""
    base = k * SLOTS
    n = int(shared[base + SLOT_TRACE_N])
    at = base + SLOT_TRACE + (n % TRACE_LEN) * TRACE_FIELDS
    for i, value in enumerate(entry):
        shared[at + i] = value
    shared[base + SLOT_TRACE_N] = n + 1


def read_trace(shared: Any, k: int, since: float = float("-inf")) -> list[tuple[float, ...]]:
    """GPU k's published changes, oldest first, from the last one before `since` (run clock) on;
    read again where the worker wrote one meanwhile (it may overwrite the oldest), a few times at
    most. The ring is copied in one slice: the node reads it at every telemetry sample."""
    base = k * SLOTS
    entries: list[tuple[float, ...]] = []
    for _ in range(4):
        n = int(shared[base + SLOT_TRACE_N])
        ring = shared[base + SLOT_TRACE:base + SLOT_TRACE + TRACE_LEN * TRACE_FIELDS]
        entries = []
        for j in range(n - 1, max(0, n - TRACE_LEN) - 1, -1):  # newest first, back to `since`
            at = (j % TRACE_LEN) * TRACE_FIELDS
            entries.append(tuple(ring[at:at + TRACE_FIELDS]))
            if entries[-1][0] <= since:
                break
        if int(shared[base + SLOT_TRACE_N]) == n:
            break
    entries.reverse()
    return entries
