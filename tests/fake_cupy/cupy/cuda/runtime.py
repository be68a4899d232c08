"""Fake cupy.cuda.runtime: FAKE_CUPY_GPUS is "N" or "node=N,node=N" (with FAKE_CUPY_NODE)."""

import os


class CUDARuntimeError(RuntimeError):
    pass


def getDeviceCount():
    text = os.environ.get("FAKE_CUPY_GPUS", "0")
    if "=" in text:
        counts = dict(item.split("=") for item in text.split(","))
        return int(counts.get(((os.environ.get("FAKE_CUPY_NODE") or os.environ.get("NODEQC_NODE")) or os.environ.get("NODEQC_NODE", "")), 0))
    return int(text)
