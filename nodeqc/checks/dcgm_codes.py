"""DCGM's failure codes (DCGM_FR_*), severities and error categories as numbers and names, and what
nodeqc makes of each: the family code a failure is reported under and the next step, in nodeqc's
words.

Source of the numbers and names: NVIDIA/DCGM, dcgmlib/dcgm_errors.h (enum dcgmError_t,
dcgmErrorSeverity_t, dcgmErrorCategory_t) at DCGM 4.6.0 (github.com/NVIDIA/DCGM, commit 72fa3fe,
2026); the numbers are the same in DCGM 3.3.5 (commit 18b87c7), where 10, 12 and 43 had older names
(DCGM_FR_CLOCK_THROTTLE_THERMAL, DCGM_FR_CLOCK_THROTTLE_POWER, DCGM_FR_THROTTLING_VIOLATION). `dcgmi
diag -j` gives a failure's code as its number (`error_id`): the name is looked up here, and a number
not here is shown as the number.
"""

from __future__ import annotations

# DCGM_FR_ name -> number (dcgm_errors.h). Keys of this table are names, not nodeqc codes.
FR_NUMBERS: dict[str, int] = {
    "DCGM_FR_OK": 0, "DCGM_FR_UNKNOWN": 1, "DCGM_FR_UNRECOGNIZED": 2, "DCGM_FR_PCI_REPLAY_RATE": 3,
    "DCGM_FR_VOLATILE_DBE_DETECTED": 4, "DCGM_FR_VOLATILE_SBE_DETECTED": 5, "DCGM_FR_PENDING_PAGE_RETIREMENTS": 6,
    "DCGM_FR_RETIRED_PAGES_LIMIT": 7, "DCGM_FR_RETIRED_PAGES_DBE_LIMIT": 8, "DCGM_FR_CORRUPT_INFOROM": 9,
    "DCGM_FR_CLOCKS_EVENT_THERMAL": 10, "DCGM_FR_POWER_UNREADABLE": 11, "DCGM_FR_CLOCKS_EVENT_POWER": 12,
    "DCGM_FR_NVLINK_ERROR_THRESHOLD": 13, "DCGM_FR_NVLINK_DOWN": 14, "DCGM_FR_NVSWITCH_FATAL_ERROR": 15,
    "DCGM_FR_NVSWITCH_NON_FATAL_ERROR": 16, "DCGM_FR_NVSWITCH_DOWN": 17, "DCGM_FR_NO_ACCESS_TO_FILE": 18,
    "DCGM_FR_NVML_API": 19, "DCGM_FR_DEVICE_COUNT_MISMATCH": 20, "DCGM_FR_BAD_PARAMETER": 21,
    "DCGM_FR_CANNOT_OPEN_LIB": 22, "DCGM_FR_DENYLISTED_DRIVER": 23, "DCGM_FR_NVML_LIB_BAD": 24,
    "DCGM_FR_GRAPHICS_PROCESSES": 25, "DCGM_FR_HOSTENGINE_CONN": 26, "DCGM_FR_FIELD_QUERY": 27,
    "DCGM_FR_BAD_CUDA_ENV": 28, "DCGM_FR_PERSISTENCE_MODE": 29, "DCGM_FR_LOW_BANDWIDTH": 30,
    "DCGM_FR_HIGH_LATENCY": 31, "DCGM_FR_CANNOT_GET_FIELD_TAG": 32, "DCGM_FR_FIELD_VIOLATION": 33,
    "DCGM_FR_FIELD_THRESHOLD": 34, "DCGM_FR_FIELD_VIOLATION_DBL": 35, "DCGM_FR_FIELD_THRESHOLD_DBL": 36,
    "DCGM_FR_UNSUPPORTED_FIELD_TYPE": 37, "DCGM_FR_FIELD_THRESHOLD_TS": 38, "DCGM_FR_FIELD_THRESHOLD_TS_DBL": 39,
    "DCGM_FR_THERMAL_VIOLATIONS": 40, "DCGM_FR_THERMAL_VIOLATIONS_TS": 41, "DCGM_FR_TEMP_VIOLATION": 42,
    "DCGM_FR_CLOCKS_EVENT_VIOLATION": 43, "DCGM_FR_INTERNAL": 44, "DCGM_FR_PCIE_GENERATION": 45,
    "DCGM_FR_PCIE_WIDTH": 46, "DCGM_FR_ABORTED": 47, "DCGM_FR_TEST_DISABLED": 48, "DCGM_FR_CANNOT_GET_STAT": 49,
    "DCGM_FR_STRESS_LEVEL": 50, "DCGM_FR_CUDA_API": 51, "DCGM_FR_FAULTY_MEMORY": 52,
    "DCGM_FR_CANNOT_SET_WATCHES": 53, "DCGM_FR_CUDA_UNBOUND": 54, "DCGM_FR_ECC_DISABLED": 55,
    "DCGM_FR_MEMORY_ALLOC": 56, "DCGM_FR_CUDA_DBE": 57, "DCGM_FR_MEMORY_MISMATCH": 58, "DCGM_FR_CUDA_DEVICE": 59,
    "DCGM_FR_ECC_UNSUPPORTED": 60, "DCGM_FR_ECC_PENDING": 61, "DCGM_FR_MEMORY_BANDWIDTH": 62,
    "DCGM_FR_TARGET_POWER": 63, "DCGM_FR_API_FAIL": 64, "DCGM_FR_API_FAIL_GPU": 65, "DCGM_FR_CUDA_CONTEXT": 66,
    "DCGM_FR_DCGM_API": 67, "DCGM_FR_CONCURRENT_GPUS": 68, "DCGM_FR_TOO_MANY_ERRORS": 69,
    "DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD": 70, "DCGM_FR_NVLINK_ERROR_CRITICAL": 71,
    "DCGM_FR_ENFORCED_POWER_LIMIT": 72, "DCGM_FR_MEMORY_ALLOC_HOST": 73, "DCGM_FR_GPU_OP_MODE": 74,
    "DCGM_FR_NO_MEMORY_CLOCKS": 75, "DCGM_FR_NO_GRAPHICS_CLOCKS": 76, "DCGM_FR_HAD_TO_RESTORE_STATE": 77,
    "DCGM_FR_L1TAG_UNSUPPORTED": 78, "DCGM_FR_L1TAG_MISCOMPARE": 79, "DCGM_FR_ROW_REMAP_FAILURE": 80,
    "DCGM_FR_UNCONTAINED_ERROR": 81, "DCGM_FR_EMPTY_GPU_LIST": 82, "DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS": 83,
    "DCGM_FR_UNCORRECTABLE_ROW_REMAP": 84, "DCGM_FR_PENDING_ROW_REMAP": 85,
    "DCGM_FR_BROKEN_P2P_MEMORY_DEVICE": 86, "DCGM_FR_BROKEN_P2P_WRITER_DEVICE": 87,
    "DCGM_FR_NVSWITCH_NVLINK_DOWN": 88, "DCGM_FR_EUD_BINARY_PERMISSIONS": 89, "DCGM_FR_EUD_NON_ROOT_USER": 90,
    "DCGM_FR_EUD_SPAWN_FAILURE": 91, "DCGM_FR_EUD_TIMEOUT": 92, "DCGM_FR_EUD_ZOMBIE": 93,
    "DCGM_FR_EUD_NON_ZERO_EXIT_CODE": 94, "DCGM_FR_EUD_TEST_FAILED": 95, "DCGM_FR_FILE_CREATE_PERMISSIONS": 96,
    "DCGM_FR_PAUSE_RESUME_FAILED": 97, "DCGM_FR_PCIE_H_REPLAY_VIOLATION": 98,
    "DCGM_FR_GPU_EXPECTED_NVLINKS_UP": 99, "DCGM_FR_NVSWITCH_EXPECTED_NVLINKS_UP": 100,
    "DCGM_FR_XID_ERROR": 101, "DCGM_FR_SBE_VIOLATION": 102, "DCGM_FR_DBE_VIOLATION": 103,
    "DCGM_FR_PCIE_REPLAY_VIOLATION": 104, "DCGM_FR_SBE_THRESHOLD_VIOLATION": 105,
    "DCGM_FR_DBE_THRESHOLD_VIOLATION": 106, "DCGM_FR_PCIE_REPLAY_THRESHOLD_VIOLATION": 107,
    "DCGM_FR_CUDA_FM_NOT_INITIALIZED": 108, "DCGM_FR_SXID_ERROR": 109, "DCGM_FR_GFLOPS_THRESHOLD_VIOLATION": 110,
    "DCGM_FR_NAN_VALUE": 111, "DCGM_FR_FABRIC_MANAGER_TRAINING_ERROR": 112,
    "DCGM_FR_BROKEN_P2P_PCIE_MEMORY_DEVICE": 113, "DCGM_FR_BROKEN_P2P_PCIE_WRITER_DEVICE": 114,
    "DCGM_FR_BROKEN_P2P_NVLINK_MEMORY_DEVICE": 115, "DCGM_FR_BROKEN_P2P_NVLINK_WRITER_DEVICE": 116,
    "DCGM_FR_TEST_SKIPPED": 117, "DCGM_FR_SRAM_THRESHOLD": 118, "DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD": 119,
    "DCGM_FR_FALLEN_OFF_BUS": 120, "DCGM_FR_NVLINK_SYMBOL_BER_THRESHOLD": 121, "DCGM_FR_IMEX_UNHEALTHY": 122,
    "DCGM_FR_FABRIC_PROBE_STATE": 123, "DCGM_FR_BINARY_PERMISSIONS": 124, "DCGM_FR_GPU_RECOVERY_RESET": 125,
    "DCGM_FR_GPU_RECOVERY_REBOOT": 126, "DCGM_FR_GPU_RECOVERY_DRAIN_P2P": 127,
    "DCGM_FR_GPU_RECOVERY_DRAIN_RESET": 128, "DCGM_FR_NCCL_ERROR": 129, "DCGM_FR_RETEST_REQUESTED": 130,
    "DCGM_FR_CONTAINED_ERROR": 131, "DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT": 132,
}
FR_NAMES: dict[int, str] = {n: name for name, n in FR_NUMBERS.items()}

# dcgmErrorSeverity_t: what DCGM says the GPU needs.
SEVERITIES = {0: "none", 1: "monitor", 2: "isolate", 3: "unknown", 4: "triage", 5: "config", 6: "reset"}
# dcgmErrorCategory_t
CATEGORIES = {0: "none", 1: "performance threshold", 2: "performance violation", 3: "software configuration",
              4: "software library", 5: "software XID", 6: "software CUDA", 7: "software EUD", 8: "software other",
              9: "hardware thermal", 10: "hardware memory", 11: "hardware NVLink", 12: "hardware NVSwitch",
              13: "hardware PCIe", 14: "hardware power", 15: "hardware other", 16: "internal other"}

# A DCGM failure's nodeqc code, by its DCGM_FR name (where the name says more than its category)...
FAIL_CODE_BY_FR: dict[str, str] = {
    "DCGM_FR_XID_ERROR": "DCGM_XID", "DCGM_FR_UNCONTAINED_ERROR": "DCGM_XID", "DCGM_FR_CONTAINED_ERROR": "DCGM_XID",
    "DCGM_FR_FALLEN_OFF_BUS": "DCGM_XID", "DCGM_FR_GPU_RECOVERY_RESET": "DCGM_XID",
    "DCGM_FR_GPU_RECOVERY_REBOOT": "DCGM_XID", "DCGM_FR_GPU_RECOVERY_DRAIN_RESET": "DCGM_XID",
    "DCGM_FR_VOLATILE_DBE_DETECTED": "DCGM_MEMORY", "DCGM_FR_VOLATILE_SBE_DETECTED": "DCGM_MEMORY",
    "DCGM_FR_PENDING_PAGE_RETIREMENTS": "DCGM_MEMORY", "DCGM_FR_RETIRED_PAGES_LIMIT": "DCGM_MEMORY",
    "DCGM_FR_RETIRED_PAGES_DBE_LIMIT": "DCGM_MEMORY", "DCGM_FR_FAULTY_MEMORY": "DCGM_MEMORY",
    "DCGM_FR_CUDA_DBE": "DCGM_MEMORY", "DCGM_FR_MEMORY_MISMATCH": "DCGM_MEMORY",
    "DCGM_FR_ROW_REMAP_FAILURE": "DCGM_MEMORY", "DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS": "DCGM_MEMORY",
    "DCGM_FR_UNCORRECTABLE_ROW_REMAP": "DCGM_MEMORY", "DCGM_FR_PENDING_ROW_REMAP": "DCGM_MEMORY",
    "DCGM_FR_SBE_VIOLATION": "DCGM_MEMORY", "DCGM_FR_DBE_VIOLATION": "DCGM_MEMORY",
    "DCGM_FR_SBE_THRESHOLD_VIOLATION": "DCGM_MEMORY", "DCGM_FR_DBE_THRESHOLD_VIOLATION": "DCGM_MEMORY",
    "DCGM_FR_SRAM_THRESHOLD": "DCGM_MEMORY", "DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT": "DCGM_MEMORY",
    "DCGM_FR_L1TAG_MISCOMPARE": "DCGM_MEMORY", "DCGM_FR_NAN_VALUE": "DCGM_MEMORY",
    "DCGM_FR_PCI_REPLAY_RATE": "DCGM_PCIE", "DCGM_FR_PCIE_GENERATION": "DCGM_PCIE", "DCGM_FR_PCIE_WIDTH": "DCGM_PCIE",
    "DCGM_FR_PCIE_H_REPLAY_VIOLATION": "DCGM_PCIE", "DCGM_FR_PCIE_REPLAY_VIOLATION": "DCGM_PCIE",
    "DCGM_FR_PCIE_REPLAY_THRESHOLD_VIOLATION": "DCGM_PCIE", "DCGM_FR_BROKEN_P2P_PCIE_MEMORY_DEVICE": "DCGM_PCIE",
    "DCGM_FR_BROKEN_P2P_PCIE_WRITER_DEVICE": "DCGM_PCIE",
    "DCGM_FR_NVLINK_ERROR_THRESHOLD": "DCGM_NVLINK", "DCGM_FR_NVLINK_DOWN": "DCGM_NVLINK",
    "DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD": "DCGM_NVLINK", "DCGM_FR_NVLINK_ERROR_CRITICAL": "DCGM_NVLINK",
    "DCGM_FR_GPU_EXPECTED_NVLINKS_UP": "DCGM_NVLINK", "DCGM_FR_NVSWITCH_EXPECTED_NVLINKS_UP": "DCGM_NVLINK",
    "DCGM_FR_NVSWITCH_FATAL_ERROR": "DCGM_NVLINK", "DCGM_FR_NVSWITCH_NON_FATAL_ERROR": "DCGM_NVLINK",
    "DCGM_FR_SXID_ERROR": "DCGM_NVLINK", "DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD": "DCGM_NVLINK",
    "DCGM_FR_NVLINK_SYMBOL_BER_THRESHOLD": "DCGM_NVLINK", "DCGM_FR_BROKEN_P2P_NVLINK_MEMORY_DEVICE": "DCGM_NVLINK",
    "DCGM_FR_BROKEN_P2P_NVLINK_WRITER_DEVICE": "DCGM_NVLINK",
    "DCGM_FR_CLOCKS_EVENT_THERMAL": "DCGM_THERMAL", "DCGM_FR_THERMAL_VIOLATIONS": "DCGM_THERMAL",
    "DCGM_FR_THERMAL_VIOLATIONS_TS": "DCGM_THERMAL", "DCGM_FR_TEMP_VIOLATION": "DCGM_THERMAL",
    "DCGM_FR_CLOCKS_EVENT_POWER": "DCGM_POWER", "DCGM_FR_TARGET_POWER": "DCGM_POWER",
    "DCGM_FR_ENFORCED_POWER_LIMIT": "DCGM_POWER", "DCGM_FR_POWER_UNREADABLE": "DCGM_POWER",
    # DCGM could not test, whatever the category it gives (its host engine, its own memory, its
    # internals, another process on the GPU): not judged (SOFTWARE_CODES).
    "DCGM_FR_HOSTENGINE_CONN": "DCGM_SOFTWARE", "DCGM_FR_MEMORY_ALLOC": "DCGM_SOFTWARE",
    "DCGM_FR_INTERNAL": "DCGM_SOFTWARE", "DCGM_FR_GRAPHICS_PROCESSES": "DCGM_SOFTWARE",
}
# ... else by its DCGM error category.
FAIL_CODE_BY_CATEGORY = {1: "DCGM_PERFORMANCE", 2: "DCGM_PERFORMANCE", 3: "DCGM_SOFTWARE", 4: "DCGM_SOFTWARE",
                         5: "DCGM_XID", 6: "DCGM_SOFTWARE", 7: "DCGM_SOFTWARE", 8: "DCGM_SOFTWARE",
                         9: "DCGM_THERMAL", 10: "DCGM_MEMORY", 11: "DCGM_NVLINK", 12: "DCGM_NVLINK",
                         13: "DCGM_PCIE", 14: "DCGM_POWER", 16: "DCGM_SOFTWARE"}
# Codes that say DCGM could not test the GPU (its software, libraries, set-up, internals), not that the
# GPU failed: the result is ERROR, not judged (the 2026-11-28 advice review: a host engine DCGM could not
# reach, or its own failed allocation, failed the GPU with exit 1).
SOFTWARE_CODES = ("DCGM_SOFTWARE",)

# The next step for the commonest failures, in nodeqc's words (DCGM's own text comes in its message).
NEXT_STEP_BY_FR: dict[str, str] = {
    "DCGM_FR_XID_ERROR": "read the XID in the message and in `dmesg`; reset the GPU (nvidia-smi -r) and re-run; an "
                         "XID that returns after a reset needs the GPU inspected or replaced",
    "DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS": "an uncorrectable memory error left pages waiting to be retired: drain "
                                            "the GPU and reset it (or reboot); RMA if it happens again",
    "DCGM_FR_PENDING_PAGE_RETIREMENTS": "reset the GPU (or reboot) so the pending pages are retired, then re-run",
    "DCGM_FR_RETIRED_PAGES_LIMIT": "the GPU has retired more pages than DCGM accepts: RMA it",
    "DCGM_FR_RETIRED_PAGES_DBE_LIMIT": "the GPU has retired too many pages for uncorrectable errors: RMA it",
    "DCGM_FR_VOLATILE_DBE_DETECTED": "an uncorrectable (double-bit) ECC error: drain the GPU, reset it or reboot, "
                                     "and re-run; RMA it if it recurs",
    "DCGM_FR_DBE_VIOLATION": "an uncorrectable (double-bit) ECC error during the test: reset the GPU and re-run; "
                             "RMA it if it recurs",
    "DCGM_FR_PENDING_ROW_REMAP": "reset the GPU (or reboot) so the pending row remap takes effect, then re-run",
    "DCGM_FR_UNCORRECTABLE_ROW_REMAP": "the GPU's memory ran out of spare rows: RMA it",
    "DCGM_FR_ROW_REMAP_FAILURE": "a row remap failed: the GPU's memory cannot repair itself; RMA it",
    "DCGM_FR_PCI_REPLAY_RATE": "PCIe replays point at the slot, riser or card: reseat it, check the riser and the "
                               "slot's BIOS speed setting, then re-run",
    "DCGM_FR_PCIE_REPLAY_VIOLATION": "PCIe replays during the test: reseat the card and riser, check the slot, "
                                     "re-run; replace the riser or the card if they stay",
    "DCGM_FR_PCIE_H_REPLAY_VIOLATION": "correctable PCIe errors during the test: reseat the card and riser and re-run",
    "DCGM_FR_NVLINK_DOWN": "an NVLink is down: check that the fabric manager runs (NVSwitch systems), reset the GPU; "
                           "a link that stays down needs the baseboard or GPU inspected",
    "DCGM_FR_NVLINK_ERROR_THRESHOLD": "NVLink errors beyond DCGM's limit: reset the GPU and re-run; persistent errors "
                                      "need the baseboard or GPU inspected",
    "DCGM_FR_FAULTY_MEMORY": "DCGM found faulty GPU memory: RMA the GPU",
    "DCGM_FR_UNCONTAINED_ERROR": "an uncontained memory error (XID 95): reset the GPU or reboot before any work; "
                                 "RMA it if it recurs",
    "DCGM_FR_FALLEN_OFF_BUS": "the GPU fell off the PCIe bus (a reset cannot reach it): reboot the node, read dmesg and "
                              "the BMC's event log, then power off and reseat it, its power cables and riser; RMA if "
                              "it repeats",
    "DCGM_FR_INTERNAL": "DCGM hit an internal error: restart DCGM (systemctl restart nvidia-dcgm), reset the GPU "
                        "and re-run `dcgmi diag`; report it to NVIDIA if it recurs",
    "DCGM_FR_HOSTENGINE_CONN": "start DCGM's host engine (systemctl start nvidia-dcgm, or nv-hostengine) and re-run",
    "DCGM_FR_MEMORY_ALLOC": "DCGM could not allocate its memory: free the host and the GPU of other work and re-run",
    "DCGM_FR_PERSISTENCE_MODE": "enable persistence mode (start nvidia-persistenced) and re-run",
    "DCGM_FR_GRAPHICS_PROCESSES": "stop the processes using the GPU (nvidia-smi lists them) and re-run",
}
NEXT_STEP_BY_SEVERITY = {
    1: "DCGM says the GPU can work but must be watched: re-run after the next maintenance",
    2: "DCGM says isolate this GPU: keep work off it and have it inspected (RMA with this report)",
    4: "DCGM says triage: read its message, fix what it names, and re-run",
    5: "DCGM says this is configuration: fix the setting it names and re-run",
    6: "DCGM says drain and reset this GPU, then re-run",
}
GENERIC_NEXT_STEP = "read DCGM's message, fix what it names and re-run `dcgmi diag`; give this report to the vendor for an RMA"


def fr_name(number: int | None) -> str | None:
    """A DCGM_FR number's name; None for no number, 'DCGM_FR #N' for a number DCGM 4.6 does not have."""
    if number is None:
        return None
    return FR_NAMES.get(number, f"DCGM_FR #{number}")


def fail_code(number: int | None, category: int | None) -> str:
    """The nodeqc code a DCGM failure is reported under."""
    by_name = FAIL_CODE_BY_FR.get(FR_NAMES.get(number, "") if number is not None else "")
    return by_name or FAIL_CODE_BY_CATEGORY.get(category if category is not None else -1, "DCGM_FAIL")


def next_step(number: int | None, severity: int | None) -> str:
    by_name = NEXT_STEP_BY_FR.get(FR_NAMES.get(number, "") if number is not None else "")
    return by_name or NEXT_STEP_BY_SEVERITY.get(severity if severity is not None else -1, GENERIC_NEXT_STEP)
