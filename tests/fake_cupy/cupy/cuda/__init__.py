"""Fake cupy.cuda: a device count from the environment, devices that do nothing."""

import os

from cupy.cuda import runtime  # noqa: F401

_current = [0]


class Device:
    def __init__(self, device=None):
        self.id = _current[0] if device is None else int(device)
        if not 0 <= self.id < runtime.getDeviceCount():
            raise runtime.CUDARuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id}")

    def use(self):
        _current[0] = self.id

    def synchronize(self):
        pass


def node_name():
    return ((os.environ.get("FAKE_CUPY_NODE") or os.environ.get("NODEQC_NODE")) or os.environ.get("NODEQC_NODE", ""))
