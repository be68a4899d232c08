"""The kinds of a capture's fields (`nodeqc capture OUT.json`), checked once where `--replay` loads it
(nodeqc.backends.replay_hardware), before anything reads it.

A capture is input: it is written on the node under test, and may be edited after. The replay serves
its answers to the same NVML backend code that reads the real driver, and that code trusts what the
real binding guarantees: a serial is text, a power reading a whole number of milliwatts, a bus id a
bus id. A capture that broke those promises ended in an internal error (a serial that was an object)
or ran on garbage (a time of capture that was no time). Here each recorded answer is held to the kind
the real binding gives for that function, and each host field to the kind nodeqc's host reader
writes. Only functions nodeqc calls are checked (tests hold this table to the backend's calls); a
function this nodeqc does not know is never asked, and is left alone."""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any, Callable

import pynvml

from nodeqc.backends.base import normalise_bus_id

# More GPUs than any node built has (a DGX-2 or HGX-2 board: 16; a GB200 NVL72 compute tray: 4). A
# capture listing more is not one node's, and a replay starts a worker and a twin for each.
MAX_GPUS = 64
UINT64 = 2 ** 64  # NVML's widest unsigned answer (unsigned long long)
UINT32 = 2 ** 32
INT64 = 2 ** 63
# Longest text a host field may hold. The host reader writes DMI strings, the CPU model, the OS's name,
# the kernel's release: each far shorter (DMI strings are at most 255 bytes, SMBIOS 3.x).
MAX_HOST_TEXT = 1024
MAX_XID = 1 << 16  # XIDs are small numbers (the catalogue's highest is in the 100s)
BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]")
NVML_ERRORS = frozenset(n.removeprefix("NVML_ERROR_") for n in dir(pynvml) if n.startswith("NVML_ERROR_"))


class CaptureShapeError(ValueError):
    """A field of a capture that is not of the kind nodeqc writes: says which (`devices[0].nvmlDeviceGetSerial`)."""


Kind = Callable[[Any, str], None]


def _fail(where: str, expected: str) -> None:
    raise CaptureShapeError(f"{where}: expected {expected}")


def _whole(low: int, high: int, what: str = "a whole number") -> Kind:
    def check(v: Any, where: str) -> None:
        if type(v) is not int or not low <= v < high:
            _fail(where, what)
    return check


UINT = _whole(0, UINT64, "a whole number of 0 or more")


def _text(limit: int) -> Kind:
    def check(v: Any, where: str) -> None:
        if not isinstance(v, str) or len(v) > limit:
            _fail(where, f"text of at most {limit} characters")
    return check


def _bus_id(v: Any, where: str) -> None:
    if not isinstance(v, str) or not BUS_ID.fullmatch(v):
        _fail(where, "a PCI bus id (00000000:1B:00.0)")


def _uints(least: int) -> Kind:
    def check(v: Any, where: str) -> None:
        if not isinstance(v, list) or len(v) < least:
            _fail(where, f"a list of at least {least} whole numbers")
        for n, x in enumerate(v):
            UINT(x, f"{where}[{n}]")
    return check


def _table(required: dict[str, Kind], optional: dict[str, Kind] | None = None) -> Kind:
    def check(v: Any, where: str) -> None:
        if not isinstance(v, dict):
            _fail(where, "an object")
        for key, kind in required.items():
            if key not in v:
                _fail(f"{where}.{key}", "a value (it is missing)")
            kind(v[key], f"{where}.{key}")
        for key, kind in (optional or {}).items():
            if key in v:
                kind(v[key], f"{where}.{key}")
    return check


def _list_of(kind: Kind) -> Kind:
    def check(v: Any, where: str) -> None:
        if not isinstance(v, list):
            _fail(where, "a list")
        for n, x in enumerate(v):
            kind(x, f"{where}[{n}]")
    return check


def _uint_or_null(v: Any, where: str) -> None:
    if v is not None:
        UINT(v, where)


def _fills(v: Any, where: str) -> None:
    """What NVML wrote into a structure the caller passed by pointer (the GPU fabric info): c_uint
    fields and byte arrays (the cluster UUID), as nvml_replay._fill writes them back."""
    if not isinstance(v, dict):
        _fail(where, "an object")
    for key, x in v.items():
        if isinstance(x, list):
            if len(x) > 64:
                _fail(f"{where}.{key}", "at most 64 bytes")
            for n, b in enumerate(x):
                _whole(0, 256, "a byte (0 to 255)")(b, f"{where}.{key}[{n}]")
        else:
            _whole(0, UINT32, "a whole number below 2^32")(x, f"{where}.{key}")


# The answer each function nodeqc calls gives through the real binding (nvidia-ml-py). Text limits
# are NVML's own buffers for that call (pynvml's NVML_*_BUFFER_SIZE; the process name's 1024 is the
# buffer nvidia-ml-py passes).
DEVICE_TEXT = _text(pynvml.NVML_DEVICE_NAME_V2_BUFFER_SIZE)  # the longest device buffer: 96
ANSWERS: dict[str, Kind] = {
    "nvmlDeviceGetName": DEVICE_TEXT,
    "nvmlDeviceGetUUID": DEVICE_TEXT,
    "nvmlDeviceGetSerial": DEVICE_TEXT,
    "nvmlDeviceGetVbiosVersion": DEVICE_TEXT,
    "nvmlDeviceGetBoardPartNumber": DEVICE_TEXT,
    "nvmlDeviceGetGspFirmwareVersion": DEVICE_TEXT,
    "nvmlDeviceGetInforomImageVersion": DEVICE_TEXT,
    "nvmlDeviceGetInforomVersion": DEVICE_TEXT,
    "nvmlDeviceGetPciInfo": _table({"busId": _bus_id}, {"pciDeviceId": UINT}),
    "nvmlDeviceGetMemoryInfo": _table({"total": UINT}, {"free": UINT, "used": UINT}),
    "nvmlDeviceGetUtilizationRates": _table({"gpu": UINT, "memory": UINT}),
    "nvmlDeviceGetCudaComputeCapability": _uints(2),
    "nvmlDeviceGetEccMode": _uints(2),  # [current, pending]
    "nvmlDeviceGetMigMode": _uints(2),  # [current, pending]
    "nvmlDeviceGetRemappedRows": _uints(4),  # correctable, uncorrectable, pending, failure
    "nvmlDeviceGetRetiredPages": _list_of(UINT),  # page addresses
    "nvmlDeviceGetComputeRunningProcesses": _list_of(_table({"pid": UINT}, {"usedGpuMemory": _uint_or_null})),
    "nvmlDeviceGetGpuFabricInfoV": _fills,
    "nvmlDeviceGetGpuFabricInfo": _fills,
    **{name: UINT for name in (
        "nvmlDeviceGetApplicationsClock", "nvmlDeviceGetClockInfo", "nvmlDeviceGetMaxClockInfo",
        "nvmlDeviceGetComputeMode", "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetRetiredPagesPendingStatus",
        "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetPcieReplayCounter",
        "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetPowerManagementDefaultLimit", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature",
        "nvmlDeviceGetTemperatureThreshold", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetMemoryErrorCounter",
        "nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkErrorCounter", "nvmlDeviceGetP2PStatus",
        "nvmlDeviceGetTopologyCommonAncestor")},
    "nvmlSystemGetDriverVersion": _text(pynvml.NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE),
    "nvmlSystemGetCudaDriverVersion": UINT,
    "nvmlSystemGetProcessName": _text(1024),
}
# Called with no recorded answer of its own: the replay answers these from its own state.
NOT_RECORDED = frozenset({"nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetHandleByPciBusId",
                          "nvmlDeviceGetIndex", "nvmlDeviceRegisterEvents"})

# nvmlFieldValue_t's union member for each value type, and the numbers it holds.
FIELD_MEMBERS: dict[int, tuple[str, Kind]] = {
    1: ("uiVal", _whole(0, UINT32)), 2: ("ulVal", UINT), 3: ("ullVal", UINT),
    4: ("sllVal", _whole(-INT64, INT64)), 5: ("siVal", _whole(-2 ** 31, 2 ** 31))}


def _double(v: Any, where: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        _fail(where, "a finite number")


def _field_values(v: Any, where: str) -> None:
    if not isinstance(v, dict):
        _fail(where, "an object of field ids")
    for fid, rec in v.items():
        at = f"{where}.{fid}"
        _table({"nvmlReturn": UINT, "valueType": UINT, "value": _table({})})(rec, at)
        if rec["nvmlReturn"] != 0:
            continue  # not supported: no value to read
        member, kind = ("dVal", _double) if rec["valueType"] == 0 else FIELD_MEMBERS.get(rec["valueType"], (None, None))
        if member is None:
            continue  # a value type nodeqc does not know reads as NA
        if member not in rec["value"]:
            _fail(f"{at}.value.{member}", "a value (it is missing)")
        kind(rec["value"][member], f"{at}.value.{member}")


def _error_name(v: Any, where: str) -> None:
    if not isinstance(v, str) or v not in NVML_ERRORS:
        _fail(where, "an NVML error's name (NOT_SUPPORTED, GPU_IS_LOST, ...)")


def _answer(kind: Kind, v: Any, where: str) -> None:
    """A recorded answer in ReplayNvml's grammar: by arguments, then a series, then an error, what
    NVML filled in, or the answer itself."""
    if isinstance(v, dict) and "args" in v:
        if not isinstance(v["args"], dict):
            _fail(f"{where}.args", "an object of answers by argument")
        for key, inner in v["args"].items():
            _series(kind, inner, f"{where}.args.{key}")
    else:
        _series(kind, v, where)


def _series(kind: Kind, v: Any, where: str) -> None:
    if isinstance(v, dict) and "series" in v:
        if not isinstance(v["series"], list) or not v["series"]:
            _fail(f"{where}.series", "a list of at least one answer")
        for n, leaf in enumerate(v["series"]):
            _leaf(kind, leaf, f"{where}.series[{n}]")
    else:
        _leaf(kind, v, where)


def _leaf(kind: Kind, v: Any, where: str) -> None:
    if isinstance(v, dict) and "error" in v:
        _error_name(v["error"], f"{where}.error")
    elif kind is _fills:
        _table({"fills": _fills})(v, where)
    else:
        kind(v, where)


def _host_text(v: Any, where: str) -> None:
    if v is not None:
        _text(MAX_HOST_TEXT)(v, where)


def _host_count(v: Any, where: str) -> None:
    if v is not None:
        UINT(v, where)


def _host_flag(v: Any, where: str) -> None:
    if v is not None and not isinstance(v, bool):
        _fail(where, "true, false or null")


def _texts_or_null(v: Any, where: str) -> None:
    if v is not None:
        _list_of(_text(MAX_HOST_TEXT))(v, where)


def _pci_device(v: Any, where: str) -> None:
    _table({"bus_id": _bus_id, **{k: _text(MAX_HOST_TEXT) for k in ("vendor", "device", "pci_class")}})(v, where)


# nodeqc.backends.base.HostInfo's fields, as its to_dict writes them (NA is null).
HOST: dict[str, Kind] = {
    "hostname": _text(MAX_HOST_TEXT),
    **{k: _host_text for k in ("system_vendor", "system_model", "system_serial", "board_serial", "bios_version",
                               "cpu_model", "os", "kernel", "peer_memory_module")},
    **{k: _host_count for k in ("sockets", "cores", "threads", "memory_bytes", "numa_nodes")},
    "fabric_manager": _host_flag,
    "nvidia_gpus_on_pci": _list_of(_pci_device),
    "imex": lambda v, where: None if v is None else _table(
        {"running": _host_flag}, {"channels": _host_count, "nodes": _texts_or_null, "own": _texts_or_null})(v, where),
}


def check_capture(data: Any) -> None:
    """CaptureShapeError naming the first field of a loaded capture that is not of its kind."""
    if not isinstance(data, dict):
        _fail("capture", "an object")
    devices = data.get("devices")
    if not isinstance(devices, list) or len(devices) > MAX_GPUS:
        _fail("devices", f"a list of at most {MAX_GPUS} GPUs")
    if "captured_at" in data:
        _time(data["captured_at"], "captured_at")
    if "load" in data:
        _text(MAX_HOST_TEXT)(data["load"], "load")
    if "tool" in data:
        _table({}, {"version": _text(64), "python": _text(64)})(data["tool"], "tool")
    if "init_error" in data and data["init_error"]:
        _error_name(data["init_error"], "init_error")
    host = data.get("host")
    if host is not None:
        _table({}, HOST)(host, "host")
    system = data.get("system", {})
    if not isinstance(system, dict):
        _fail("system", "an object of NVML answers")
    for name, answer in system.items():
        if name in ANSWERS:
            _answer(ANSWERS[name], answer, f"system.{name}")
    seen: dict[tuple[str, str], int] = {}
    for n, device in enumerate(devices):
        _device(device, f"devices[{n}]")
        # One GPU captured twice was two GPUs both named gpu0, and the node passed (2026-11-29 fuzzing).
        pci = device.get("nvmlDeviceGetPciInfo")
        for key in (("bus id", pci.get("busId") if isinstance(pci, dict) else None),
                    ("UUID", device.get("nvmlDeviceGetUUID"))):
            if isinstance(key[1], str) and key[1]:
                # The address, not its spelling: 00000000:00:06.0 and 0000:00:06.0 are one GPU.
                same = normalise_bus_id(key[1]) if key[0] == "bus id" else key[1].lower()
                first = seen.setdefault((key[0], same), n)
                if first != n:
                    _fail(f"devices[{n}]", f"a GPU of its own (its {key[0]} {key[1]} is devices[{first}]'s too)")
    xids = data.get("xid_events", [])
    _list_of(_table({"device": _whole(0, len(devices), "a GPU's index in devices"),
                     "xid": _whole(0, MAX_XID, "an XID number")}))(xids, "xid_events")


def _device(device: Any, where: str) -> None:
    if not isinstance(device, dict):
        _fail(where, "an object of NVML answers")
    if "handle_error" in device:
        _error_name(device["handle_error"], f"{where}.handle_error")
    if "lost" in device:
        _host_flag(device["lost"], f"{where}.lost")
    for name, answer in device.items():
        if name == "nvmlDeviceGetFieldValues":
            _field_values(answer, f"{where}.{name}")
        elif name in ANSWERS:
            _answer(ANSWERS[name], answer, f"{where}.{name}")


def _time(v: Any, where: str) -> None:
    if not isinstance(v, str) or len(v) > 64:
        _fail(where, "a time (ISO 8601)")
    try:
        datetime.fromisoformat(v)
    except ValueError:
        _fail(where, "a time (ISO 8601)")
