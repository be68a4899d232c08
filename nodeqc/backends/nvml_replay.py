"""A stand-in for the pynvml module that answers from a recorded description.

The same NvmlBackend code runs against it as against the real driver, so tests (and replays of a
capture of a real machine) exercise the real NVML shapes: NotSupported answers, functions an older
driver lacks, a GPU that is lost mid-run.

Description format (JSON-compatible)::

    {"init_error": "LIBRARY_NOT_FOUND",              # optional: nvmlInit raises this
     "system": {"nvmlSystemGetDriverVersion": "570.86.15", "nvmlSystemGetCudaDriverVersion": 12080},
     "xid_events": [{"device": 3, "xid": 79}],        # delivered by nvmlEventSetWait, in order
     "devices": [{
        "nvmlDeviceGetName": "NVIDIA H100 80GB HBM3",            # a plain answer
        "nvmlDeviceGetPciInfo": {"busId": "00000000:1B:00.0"},   # tables become attribute objects
        "nvmlDeviceGetClockInfo": {"args": {"1": 1980, "2": 2619}},  # answers by argument
        "nvmlDeviceGetPowerUsage": {"series": [70000, 650000]},      # successive calls; the last repeats
        "nvmlDeviceGetSerial": {"error": "NOT_SUPPORTED"},           # raises NVMLError
        "nvmlDeviceGetTopologyCommonAncestor": {"args": {"1": 10}},  # another GPU: by its index
     }]}

A function a device description does not name raises FunctionNotFound, as the real binding does
when the driver lacks it. In a capture (`nodeqc_capture` set) it means the capture never asked: the
names are kept in `unrecorded`, so a replay can say which readings the capture lacks rather than let
them pass for ones the GPU lacks.
"""

from __future__ import annotations

import ctypes
import time
from types import SimpleNamespace
from typing import Any

import pynvml


class _Handle:
    def __init__(self, index: int):
        self.index = index


def out_structure(arg: Any) -> ctypes.Structure | None:
    """The structure behind `ctypes.byref(structure)`, the way NVML's calls that fill a structure
    take it; None for any other argument."""
    inner = getattr(arg, "_obj", None)
    return inner if type(arg).__name__ == "CArgObject" and isinstance(inner, ctypes.Structure) else None


class ReplayNvml:
    def __init__(self, description: dict[str, Any]):
        self.description = description
        self._devices = description.get("devices", [])
        self._calls: dict[tuple[int, str, str], int] = {}
        self._xids = list(description.get("xid_events", []))
        self.unrecorded: set[str] = set()  # functions asked that the capture never recorded

    # Constants and exception classes are the real binding's, so error codes match exactly.
    def __getattr__(self, name: str) -> Any:
        if name.startswith("nvmlDevice"):
            return lambda handle, *args: self._device_call(name, handle, args)
        if name.startswith("nvmlSystem"):
            return lambda *args: self._answer(self.description.get("system", {}), name, args, -1)
        return getattr(pynvml, name)

    @staticmethod
    def error(name: str) -> pynvml.NVMLError:
        return pynvml.NVMLError(getattr(pynvml, f"NVML_ERROR_{name}"))

    def nvmlInit(self) -> None:
        if self.description.get("init_error"):
            raise self.error(self.description["init_error"])

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self._devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        if index >= len(self._devices):
            raise self.error("INVALID_ARGUMENT")
        failure = self._devices[index].get("handle_error")
        if failure:
            raise self.error(failure)
        return _Handle(index)

    def nvmlDeviceGetIndex(self, handle: _Handle) -> int:
        return handle.index

    def nvmlEventSetCreate(self) -> object:
        return object()

    def nvmlDeviceRegisterEvents(self, handle: _Handle, types: int, events: object) -> None:
        self._device_call("nvmlDeviceRegisterEvents", handle, (), default=None)

    def nvmlEventSetWait(self, events: object, timeout_ms: int) -> Any:
        if not self._xids:
            time.sleep(timeout_ms / 1000)  # NVML blocks until an event or the timeout
            raise self.error("TIMEOUT")
        e = self._xids.pop(0)
        return SimpleNamespace(device=_Handle(e["device"]), eventType=pynvml.nvmlEventTypeXidCriticalError,
                               eventData=e["xid"])

    def nvmlEventSetFree(self, events: object) -> None:
        pass

    def nvmlDeviceGetFieldValues(self, handle: _Handle, field_ids: list[int]) -> list[Any]:
        table = self._devices[handle.index].get("nvmlDeviceGetFieldValues", {})
        out = []
        for fid in field_ids:
            if str(fid) not in table and self.description.get("nodeqc_capture"):
                self.unrecorded.add(f"nvmlDeviceGetFieldValues({_field_name(fid)})")
            rec = table.get(str(fid), {"nvmlReturn": pynvml.NVML_ERROR_NOT_SUPPORTED, "valueType": 0, "value": {}})
            out.append(SimpleNamespace(fieldId=fid, nvmlReturn=rec["nvmlReturn"], valueType=rec["valueType"],
                                       value=SimpleNamespace(**rec["value"])))
        return out

    # ------------------------------------------------------------------ answers

    def _device_call(self, name: str, handle: _Handle, args: tuple[Any, ...], default: Any = ...) -> Any:
        device = self._devices[handle.index]
        if device.get("lost"):
            raise self.error("GPU_IS_LOST")
        if name not in device and default is not ...:
            return default
        return self._answer(device, name, args, handle.index)

    def _answer(self, table: dict[str, Any], name: str, args: tuple[Any, ...], index: int) -> Any:
        if name not in table:
            if self.description.get("nodeqc_capture"):
                self.unrecorded.add(name)
            raise self.error("FUNCTION_NOT_FOUND")
        answer = table[name]
        # As the real binding does, a structure for NVML to fill must come by pointer: passed by
        # value, the driver reads its bytes as the pointer (a segfault on the real H100).
        if any(isinstance(a, ctypes.Structure) for a in args):
            raise TypeError(f"{name}: NVML fills a structure through a pointer (ctypes.byref), not by value")
        filled = out_structure(args[-1]) if args else None
        if filled is not None:
            args = args[:-1]
        # Another GPU's handle among the arguments (topology, P2P status) is keyed by its index.
        key = ",".join(str(a.index) if isinstance(a, _Handle) else str(a) for a in args)
        if isinstance(answer, dict) and "args" in answer:
            if key not in answer["args"]:
                raise self.error("NOT_SUPPORTED")
            answer = answer["args"][key]
        if isinstance(answer, dict) and "series" in answer:
            call = (index, name, key)
            n = self._calls.get(call, 0)
            self._calls[call] = n + 1
            answer = answer["series"][min(n, len(answer["series"]) - 1)]
        if isinstance(answer, dict) and "error" in answer:
            raise self.error(answer["error"])
        if isinstance(answer, dict) and "fills" in answer:
            if filled is None:
                raise TypeError(f"{name}: NVML fills a structure here; pass one by ctypes.byref")
            _fill(filled, answer["fills"])
            return pynvml.NVML_SUCCESS
        return _objects(answer)


def _fill(structure: ctypes.Structure, fields: dict[str, Any]) -> None:
    """Write recorded fields into the caller's structure; the caller's version field stays its own,
    and a field this structure lacks (another version's) is left out."""
    for name, _ in structure._fields_:
        if name == "version" or name not in fields:
            continue
        value = fields[name]
        if isinstance(value, list):
            target = getattr(structure, name)
            for k, v in enumerate(value[:len(target)]):
                target[k] = v
        else:
            setattr(structure, name, value)


def _objects(value: Any) -> Any:
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _objects(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_objects(v) for v in value]
    return value


def _field_name(field_id: int) -> str:
    """NVML's name of a field id (NVML_FI_DEV_...), as nvidia-ml-py defines it; the number otherwise."""
    return next((k for k in dir(pynvml) if k.startswith("NVML_FI_") and getattr(pynvml, k) == field_id), str(field_id))
