"""NVML descriptions for the replay stand-in: a healthy H100 and named driver quirks."""

from __future__ import annotations

import copy
from typing import Any

import pynvml

MIB = 1024 * 1024


def h100_device(n: int = 0, **overrides: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "nvmlDeviceGetName": "NVIDIA H100 80GB HBM3",
        "nvmlDeviceGetUUID": f"GPU-0000000{n}-aaaa-bbbb-cccc-dddddddddddd",
        "nvmlDeviceGetSerial": f"165322001234{n}",
        "nvmlDeviceGetPciInfo": {"busId": f"00000000:{0x1B + n:02X}:00.0"},
        "nvmlDeviceGetMemoryInfo": {"total": 81559 * MIB, "free": 81000 * MIB, "used": 559 * MIB},
        "nvmlDeviceGetVbiosVersion": "96.00.99.00.01",
        "nvmlDeviceGetBoardPartNumber": "692-2G520-0200-000",
        "nvmlDeviceGetCudaComputeCapability": [9, 0],
        "nvmlDeviceGetEccMode": [1, 1],
        "nvmlDeviceGetPersistenceMode": 1,
        "nvmlDeviceGetMaxPcieLinkGeneration": 5,
        "nvmlDeviceGetMaxPcieLinkWidth": 16,
        "nvmlDeviceGetGpuMaxPcieLinkGeneration": 5,
        "nvmlDeviceGetTemperatureThreshold": {"args": {"0": 92, "1": 90, "2": 95, "3": 87}},
        "nvmlDeviceGetEnforcedPowerLimit": 700000,
        "nvmlDeviceGetPowerManagementDefaultLimit": 700000,
        "nvmlDeviceGetMaxClockInfo": {"args": {"1": 1980, "2": 2619}},
        "nvmlDeviceGetFieldValues": {
            str(pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT): {"nvmlReturn": 0, "valueType": 1, "value": {"uiVal": 18}},
            str(pynvml.NVML_FI_DEV_MEMORY_TEMP): {"nvmlReturn": 0, "valueType": 1, "value": {"uiVal": 41}},
        },
        "nvmlDeviceGetTemperature": {"series": [31, 45, 62]},
        "nvmlDeviceGetPowerUsage": {"series": [72000, 310000, 655000]},
        "nvmlDeviceGetClockInfo": {"args": {"1": {"series": [345, 1980, 1980]}, "2": 2619}},
        "nvmlDeviceGetUtilizationRates": {"series": [{"gpu": 0, "memory": 0}, {"gpu": 100, "memory": 60},
                                                     {"gpu": 100, "memory": 61}]},
        "nvmlDeviceGetCurrentClocksEventReasons": {"series": [1, 0, 4]},
        "nvmlDeviceGetCurrPcieLinkGeneration": {"series": [1, 5, 5]},
        "nvmlDeviceGetCurrPcieLinkWidth": 16,
        "nvmlDeviceGetTotalEccErrors": {"args": {"0,0": 0, "1,0": 0}},
        "nvmlDeviceGetPcieReplayCounter": 0,
        "nvmlDeviceGetRemappedRows": [0, 0, 0, 0],
        "nvmlDeviceGetRetiredPages": {"error": "NOT_SUPPORTED"},
        "nvmlDeviceGetRetiredPagesPendingStatus": {"error": "NOT_SUPPORTED"},
        "nvmlDeviceRegisterEvents": None,
        # To each other GPU of an HGX board (by its index, as ReplayNvml keys handles): peer-to-peer
        # over NVLink (NVML_P2P_CAPS_INDEX_NVLINK = 2, NVML_P2P_STATUS_OK = 0); the PCIe ancestor, a
        # switch for the GPU beside it and the CPUs' link for the rest.
        "nvmlDeviceGetP2PStatus": {"args": {f"{j},2": 0 for j in range(8) if j != n}},
        "nvmlDeviceGetTopologyCommonAncestor": {"args": {str(j): 10 if j // 2 == n // 2 else 50
                                                         for j in range(8) if j != n}},
    }
    d.update(overrides)
    return d


def node(devices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"system": {"nvmlSystemGetDriverVersion": "570.86.15", "nvmlSystemGetCudaDriverVersion": 12080},
            "devices": copy.deepcopy(devices), **extra}


# Named driver quirks seen on real SKUs and drivers.
QUIRKS: dict[str, dict[str, Any]] = {
    # Consumer and some PCIe SKUs: no serial, no memory temperature, no row remapping.
    "no_serial_no_memtemp": {
        "nvmlDeviceGetSerial": {"error": "NOT_SUPPORTED"},
        "nvmlDeviceGetFieldValues": {},
        "nvmlDeviceGetRemappedRows": {"error": "NOT_SUPPORTED"},
    },
    # A driver older than the binding: these functions are missing from the library.
    "old_driver": {
        "nvmlDeviceGetGpuMaxPcieLinkGeneration": {"error": "FUNCTION_NOT_FOUND"},
        "nvmlDeviceGetCurrentClocksEventReasons": {"error": "FUNCTION_NOT_FOUND"},
        "nvmlDeviceGetPowerManagementDefaultLimit": {"error": "FUNCTION_NOT_FOUND"},
    },
    # Inside a VM or container without privileges: counters need permission.
    "no_permission": {
        "nvmlDeviceGetPcieReplayCounter": {"error": "NO_PERMISSION"},
        "nvmlDeviceGetTotalEccErrors": {"error": "NO_PERMISSION"},
        "nvmlDeviceRegisterEvents": {"error": "NOT_SUPPORTED"},
    },
}
