"""The NVML recorder of `nodeqc capture OUT.json` (nodeqc.run.capture): what a machine's NVML answers,
written down for replay without the machine.

The recorder sits between the NVML backend and the real binding and writes down every answer the
backend asked for, NotSupported and other errors included, in the description format that
nodeqc.backends.nvml_replay.ReplayNvml serves back. Replaying a capture of a real H100 runs every
check against a datacenter GPU's real NVML shapes on a machine with no GPU.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import pynvml

from nodeqc.backends.nvml_replay import out_structure


_ERROR_NAMES = {getattr(pynvml, n): n.removeprefix("NVML_ERROR_") for n in dir(pynvml) if n.startswith("NVML_ERROR_")}
# Calls that take no device handle, or whose answers are not the device's to replay.
_PASS_THROUGH = ("nvmlDeviceGetCount", "nvmlDeviceRegisterEvents", "nvmlDeviceGetIndex", "nvmlDeviceGetHandleByPciBusId")
# Field-value union members, by NVML value type.
_VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}


def _plain(value: Any) -> Any:
    """An NVML answer as JSON: ctypes structures become tables of their fields."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, ctypes.Structure):
        return {name: _plain(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, ctypes.Array):
        return [_plain(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (int, float, str)) or value is None:
        return value
    if isinstance(value, SimpleNamespace) or hasattr(value, "__dict__"):
        # a replayed answer recorded again, or pynvml's friendly objects (compute processes)
        return {k: _plain(v) for k, v in vars(value).items()}
    return str(value)


class RecordingNvml:
    """A proxy for an NVML module that records every device and system answer it passes on."""

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.system: dict[str, dict[str, list[Any]]] = {}  # name -> answers by arguments
        self.devices: dict[int, dict[str, dict[str, list[Any]]]] = {}
        self.handle_errors: dict[int, str] = {}
        self._handles: dict[int, int] = {}  # id(handle) -> index

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.nvml, name)
        if name == "nvmlDeviceGetHandleByIndex":
            return self._handle_by_index
        if name == "nvmlDeviceGetFieldValues":
            return self._field_values
        if name.startswith("nvmlDevice") and name not in _PASS_THROUGH:
            return lambda handle, *args: self._record_device(name, real, handle, args)
        if name.startswith("nvmlSystem"):
            return lambda *args: self._record(self.system.setdefault(name, {}).setdefault(
                ",".join(map(str, args)), []), real, args)
        return real

    def _handle_by_index(self, index: int) -> Any:
        try:
            handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
        except self.nvml.NVMLError as e:
            self.handle_errors[index] = _ERROR_NAMES.get(e.value, "UNKNOWN")
            raise
        self._handles[id(handle)] = index
        self.devices.setdefault(index, {})
        return handle

    def _record(self, answers: list[Any], real: Any, args: tuple[Any, ...]) -> Any:
        try:
            value = real(*args)
        except self.nvml.NVMLError as e:
            answers.append({"error": _ERROR_NAMES.get(e.value, "UNKNOWN")})
            raise
        answers.append(_plain(value))
        return value

    def _record_device(self, name: str, real: Any, handle: Any, args: tuple[Any, ...]) -> Any:
        table = self.devices.setdefault(self._handles.get(id(handle), -1), {}).setdefault(name, {})
        # Another GPU's handle among the arguments (topology, P2P status) is recorded by its index,
        # as ReplayNvml looks it up. A structure NVML fills (passed by pointer) is no part of the key:
        # what it was filled with is the answer.
        filled = out_structure(args[-1]) if args else None
        keyed = args[:-1] if filled is not None else args
        key = ",".join(str(self._handles[id(a)]) if id(a) in self._handles else str(a) for a in keyed)
        answers = table.setdefault(key, [])
        value = self._record(answers, real, (handle, *args))
        if filled is not None:
            answers[-1] = {"fills": _plain(filled)}
        return value

    def _field_values(self, handle: Any, field_ids: list[int]) -> Any:
        values = self.nvml.nvmlDeviceGetFieldValues(handle, field_ids)
        table = self.devices.setdefault(self._handles.get(id(handle), -1), {}).setdefault("nvmlDeviceGetFieldValues", {})
        for fid, v in zip(field_ids, values):
            member = _VALUE_MEMBERS.get(v.valueType, "uiVal")
            # A field the driver does not support (nvmlReturn != 0) carries no value to record.
            table[str(fid)] = [{"nvmlReturn": v.nvmlReturn, "valueType": v.valueType,
                                "value": {member: getattr(v.value, member)} if v.nvmlReturn == 0 else {}}]
        return values

    def description(self) -> dict[str, Any]:
        """The recorded answers in ReplayNvml's format: one answer where every call agreed, a series
        where they differed (telemetry), answers by argument where the function takes any."""
        def collapse(answers: list[Any]) -> Any:
            return answers[0] if all(a == answers[0] for a in answers) else {"series": answers}

        def by_args(table: dict[str, list[Any]]) -> Any:
            if list(table) == [""]:
                return collapse(table[""])
            return {"args": {k: collapse(v) for k, v in table.items()}}

        devices = []
        for index in range(max(list(self.devices) + list(self.handle_errors), default=-1) + 1):
            if index in self.handle_errors:
                devices.append({"handle_error": self.handle_errors[index]})
                continue
            device: dict[str, Any] = {}
            for name, answers in self.devices.get(index, {}).items():
                if name == "nvmlDeviceGetFieldValues":
                    device[name] = {fid: recorded[-1] for fid, recorded in answers.items()}
                else:
                    device[name] = by_args(answers)
            devices.append(device)
        return {"system": {k: by_args(v) for k, v in self.system.items()}, "devices": devices}
