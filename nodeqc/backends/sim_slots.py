"""The state a simulated node shares with the worker processes that load its GPUs: one array of
doubles (multiprocessing, no lock: each slot has one writer), SLOTS per GPU, GPU k's at k * SLOTS.
A module of its own, below the node (nodeqc.backends.simulated), its workers (sim_compute) and its
platform (sim_platform), which all read or write it."""

# Slots per GPU in the shared array: the load a worker puts on it now, whether it fell off the bus,
# and the seconds of load it has had (written by the worker that makes the load).
SLOT_LOAD, SLOT_LOST, SLOT_LOADED_S, SLOT_PULSE_S = 0, 1, 2, 3
# The loaded clock of the dtype the GPU computes in now (nodeqc.skus: half precision holds the power
# limit at a lower clock); 0: the SKU's loaded clock.
SLOT_CLOCK_MHZ = 4
SLOTS = 5
