"""What a check's figure is called where a person reads it.

A check's values are keyed for scripts (`h2d_gbps`, `copy_gbps`); `compare`, the fleet page and
the other faces name them for the technician with `label`. One table, so a figure reads the same
everywhere; a key a check shares with another check in another sense is named per check.
tests/test_figure_labels.py holds every key the checks write to a label.
"""

from __future__ import annotations

import re

LABELS: dict[str, str] = {
    # the burn and the power tests
    "fp64_tflops": "fp64 rate", "fp32_tflops": "fp32 rate", "tf32_tflops": "tf32 rate", "fp16_tflops": "fp16 rate",
    "bf16_tflops": "bf16 rate", "fp8_tflops": "fp8 rate", "fp6_tflops": "fp6 rate", "fp4_tflops": "fp4 rate",
    "power_w": "power", "power_fraction": "power of the limit", "sm_clock_mhz": "SM clock",
    "throttle_s": "time throttled", "held_s": "time held", "power_min_w": "lowest power", "power_max_w": "highest power",
    "periods": "pulse periods", "fastest_failing_period_ms": "fastest failing period", "psus": "PSUs",
    "voltage_sensors": "voltage sensors", "current_sensors": "current sensors", "loaded_readings": "readings under load",
    "held_readings": "readings a second into the load",
    "tflops_start": "rate at the start", "tflops_end": "rate at the end", "rate_fall_pct": "rate fall",
    "temp_start": "temperature at the start", "temp_end": "temperature at the end", "windows": "windows",
    # memory
    "copy_gbps": "copy bandwidth", "triad_gbps": "triad bandwidth", "gbps": "rate", "tested": "memory tested",
    "coverage_pct": "share of free memory tested", "errors": "errors", "fraction": "share of memory",
    # PCIe, GPU to GPU, NCCL
    "h2d_gbps": "host-to-device bandwidth", "d2h_gbps": "device-to-host bandwidth",
    "bidir_gbps": "both directions' bandwidth", "link_during_copy": "link under the copies",
    "p2p_gbps": "GPU-to-GPU bandwidth", "p2p_bidir_gbps": "GPU-to-GPU bandwidth, both ways",
    "slowest_pair_gbps": "slowest pair's bandwidth", "latency_us": "GPU-to-GPU latency", "pairs": "pairs",
    "no_access": "pairs without peer access", "busbw_gbps": "bus bandwidth", "algbw_gbps": "algorithm bandwidth",
    "message_bytes": "message size", "gen": "PCIe generation", "width": "PCIe width", "max_gen": "PCIe generation, most",
    "max_width": "PCIe width, most", "min_width_under_load": "narrowest width under load",
    "min_width_seen": "narrowest width seen", "link": "link", "growth": "counter growth", "end": "counter at the end",
    # health
    "temp_max": "hottest temperature", "temp_mean": "mean temperature", "slowdown_margin": "margin to slowdown",
    "mem_temp_max": "hottest memory temperature", "mem_max_margin": "memory's margin to its limit",
    "hw_thermal_s": "time in HW thermal slowdown", "sw_thermal_s": "time in thermal slowdown",
    "power_brake_s": "time in power brake", "hw_slowdown_s": "time in HW slowdown", "power_cap_s": "time power-capped",
    "sbe_growth": "corrected ECC errors (new)", "dbe_growth": "uncorrectable ECC errors (new)",
    "dbe": "uncorrectable ECC errors", "corrected": "corrected errors", "uncorrected": "uncorrected errors",
    "corrected_growth": "corrected errors (new)", "locations": "error locations",
    "correctable_remaps": "rows remapped (correctable)", "uncorrectable_remaps": "rows remapped (uncorrectable)",
    "pending": "remap pending", "failed": "failed", "retired": "pages retired", "retired_sbe": "pages retired (corrected)",
    "retired_dbe": "pages retired (uncorrectable)", "xids": "XID events", "lost_at": "lost at",
    "active": "links up", "expected": "expected", "crc_per_s": "CRC errors per second", "per_min": "replays a minute",
    "worst_span": "most grown in one span", "span_min": "span",
    "replay_recovery": "replays and recoveries", "correctable": "correctable errors",
    "uncorrectable": "uncorrectable errors", "lines": "kernel log lines", "readings": "readings",
    # inventory and host
    "driver": "driver", "gpus": "GPUs", "bus_id": "bus id", "model": "model", "sku": "SKU", "memory": "memory",
    "ecc_enabled": "ECC", "ecc_pending": "ECC after reboot", "persistence": "persistence mode", "version": "version",
    "required": "required", "cores": "cores", "threads": "threads", "sockets": "sockets", "numa_nodes": "NUMA nodes",
    "cpus": "CPUs", "running": "running", "module": "module", "channels": "IMEX channels",
    "nodes_listed": "nodes listed", "self_listed": "this node listed", "nodes_expected": "nodes expected", "state": "state", "status": "status",
    "cluster_uuid": "cluster", "clique_id": "clique", "health_mask": "health mask", "processes": "other processes",
    "read_gbps": "read bandwidth", "read_iops": "read operations per second", "read_p99_us": "read latency, p99",
    # NICs
    "count": "NICs", "names": "NICs", "speed": "speed", "mtu": "MTU", "mac": "MAC address", "ib_ports": "IB ports",
    "carrier_changes": "carrier changes", "bandwidth": "bandwidth", "throughput": "throughput", "streams": "streams",
    "seconds": "seconds", "peer": "peer", "percentile": "percentile", "below_median_pct": "below the median",
    # the fabric
    "pass_ratio": "pairs passed", "peers": "peers", "tests": "tests", "untested": "pairs untested", "rail": "rail",
    "rails": "rails", "rounds": "rounds", "figures": "figures", "wrong": "wrong results",
    "p50": "latency, median", "p99": "latency, p99", "high": "pairs with a high tail", "group_size": "group size",
    "inside": "tests within the leaf, all failed", "across": "tests across the leaf, all failed",
}
# Keys one check uses in another sense than the table's.
BY_CHECK: dict[tuple[str, str], str] = {
    ("fabric.coverage", "tested"): "pairs tested",
    ("fabric.node", "failed"): "pairs failed", ("fabric.rail", "failed"): "pairs failed",
    ("fabric.node", "passed"): "group tests passed",
    ("health.row_remap", "failed"): "remap failed",
    ("inventory.gpu_count", "expected"): "GPUs expected", ("health.nvlink", "expected"): "links expected",
    ("stress.power", "readings"): "sensor readings", ("stress.power_pulse", "readings"): "sensor readings",
    ("nic.pcie", "readings"): "link readings", ("host.memory", "memory"): "host memory",
    ("inventory.gpu_memory", "memory"): "GPU memory", ("inventory.driver", "version"): "driver",
    ("inventory.cuda", "version"): "CUDA", ("nic.stability", "growth"): "counter growth",
}
# Per-port keys of the RDMA and link-counter checks: "mlx5_0/1" and "mlx5_0/1:symbol_error".
_PORT = re.compile(r"(?P<port>[\w.-]+/\d+)(?::(?P<counter>\w+))?")


def label(key: str, check: str | None = None) -> str:
    """The figure's name for a person; the key itself where nodeqc has none (a figure added
    without a label reads as its key, never as nothing)."""
    if check is not None and (check, key) in BY_CHECK:
        return BY_CHECK[(check, key)]
    if key in LABELS:
        return LABELS[key]
    port = _PORT.fullmatch(key)
    if port:
        counter = port.group("counter")
        return f"{port.group('port')} {counter.replace('_', ' ')}" if counter else f"RDMA bandwidth, {port.group('port')}"
    return key


def measure_label(measure: str, with_check: bool = True) -> str:
    """A fleet measure ("stress.burn:bf16_tflops", the check and its figure) as a person reads it:
    the figure's label, its check after it ("bf16 rate (stress.burn)") unless `with_check` is off."""
    check, _, key = measure.partition(":")
    if not key:
        return measure
    return f"{label(key, check)} ({check})" if with_check else label(key, check)
