"""The NVLink fabric state NVML reports per GPU (nvmlDeviceGetGpuFabricInfoV, nvidia-ml-py's
c_nvmlGpuFabricInfo_v2_t; nvmlDeviceGetGpuFabricInfo without the health mask on older drivers):
whether the GPU is registered with the NVLink fabric (GB200/GB300 NVL racks, GH200 NVL, HGX
systems whose fabric manager registers GPUs), in which cluster and clique, and the health mask.

A backend reads it into a plain dict (`GpuInfo.fabric`): {"state": one of STATES, "status": NVML's
return code of the registration (0: success), "cluster_uuid": text, "clique_id": int,
"health_mask": int or None where the driver has only the first version}. NA: the GPU or driver
does not answer (NotSupported, a function the driver lacks, a capture that never asked).
"""

from __future__ import annotations

from typing import Any

# NVML_GPU_FABRIC_STATE_* (0..3).
STATES = ("not_supported", "not_started", "in_progress", "completed")

# The health mask's fields: (name, shift, width mask, the values that are a finding, what each says).
# NVML_GPU_FABRIC_HEALTH_MASK_* in nvidia-ml-py: each field is 0 where not supported.
_TRUE = 1
HEALTH_FIELDS: tuple[tuple[str, int, int, dict[int, str]], ...] = (
    ("degraded_bandwidth", 0, 0x3, {_TRUE: "NVLink bandwidth is degraded"}),
    ("route_recovery", 2, 0x3, {_TRUE: "a route recovery is in progress"}),
    ("route_unhealthy", 4, 0x3, {_TRUE: "a route is unhealthy"}),
    ("access_timeout_recovery", 6, 0x3, {_TRUE: "recovering from an access timeout"}),
    ("incorrect_configuration", 8, 0xF, {2: "incorrect configuration: system GUID", 3: "incorrect configuration: chassis serial",
                                         4: "incorrect configuration: no partition", 5: "incorrect configuration: too few NVLinks",
                                         6: "incorrect configuration: incompatible GPU firmware",
                                         7: "incorrect configuration: invalid location", 8: "incorrect configuration: GPU state invalid"}),
    ("gfm_state", 14, 0x3, {2: "the global fabric manager is disconnected"}),
)
# What a healthy registered GPU's mask reads: every supported field at its healthy value (degraded,
# recovery, unhealthy, timeout FALSE = 2; configuration NONE = 1; partition assigned TRUE = 1; the
# global fabric manager connected = 1).
HEALTHY_MASK = (2 << 0) | (2 << 2) | (2 << 4) | (2 << 6) | (1 << 8) | (1 << 12) | (1 << 14)
DEGRADED_BANDWIDTH_MASK = (HEALTHY_MASK & ~(0x3 << 0)) | (_TRUE << 0)


def health_problems(mask: Any) -> list[str]:
    """What the health mask says is wrong, in words; [] for a healthy mask or none read."""
    if not isinstance(mask, int) or isinstance(mask, bool) or mask < 0:
        return []
    return [bad[value] for _, shift, width, bad in HEALTH_FIELDS if (value := (mask >> shift) & width) in bad]


def state_name(state: Any) -> str:
    return STATES[state] if isinstance(state, int) and 0 <= state < len(STATES) else f"unknown ({state!r})"


def uuid_text(raw: Any) -> str:
    """clusterUuid (16 bytes) as a UUID's text; an unreadable one as its repr, bounded."""
    try:
        b = bytes(raw)[:16]
    except (TypeError, ValueError):
        return repr(raw)[:64]
    h = b.hex().ljust(32, "0")
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
