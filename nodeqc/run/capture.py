"""`nodeqc capture OUT.json`: a machine's NVML answers recorded (nodeqc.backends.nvml_capture) over
inventory, counters and a stretch of telemetry, under load if CuPy is here, and written as one file
that nodeqc.backends.nvml_replay serves back."""

from __future__ import annotations

import json
import platform
import threading
import time
from pathlib import Path
from typing import Any

import pynvml

from nodeqc import __version__
from nodeqc.backends.base import HostInfo
from nodeqc.backends.nvml import NvmlBackend
from nodeqc.backends.nvml_capture import RecordingNvml
from nodeqc.core.safefile import write_atomic
from nodeqc.core.stamps import utc_now
from nodeqc.work.workers import Task, Watchdog, run_tasks


def capture(seconds: float, hz: float, load: bool, host: HostInfo, nvml: Any = None) -> dict[str, Any]:
    """Record inventory, counters and `seconds` of telemetry at `hz`; with `load`, the GPUs are kept
    busy meanwhile (links train up only under load)."""
    recorder = RecordingNvml(nvml or pynvml)
    backend = NvmlBackend(recorder)
    backend.open()  # BackendUnavailable propagates: nothing to capture without a driver
    try:
        gpus = backend.gpus()
        live = [g for g in gpus if not g.lost]
        for g in live:
            backend.counters(g.index)
            backend.processes(g.index)  # before our own load: any process listed is another's
        loader = _start_load(live, seconds) if load else None
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for g in live:
                    backend.sample(g.index)
                time.sleep(min(1.0 / hz, max(0.0, end - time.monotonic())))  # never past the end
        finally:
            load_note = _stop_load(loader)
        for g in live:
            backend.counters(g.index)
        backend.driver_version()
        backend.cuda_version()
    finally:
        backend.close()
    return {
        "nodeqc_capture": 1,
        "captured_at": utc_now(),
        "tool": {"version": __version__, "python": platform.python_version()},
        "load": load_note,
        "host": host.to_dict(),
        **recorder.description(),
    }


def _start_load(gpus: list[Any], seconds: float) -> Any:
    """Plain load on every GPU in worker processes, if CuPy is here; None otherwise."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return None
    tasks = [Task("plain_load", g.index, {"seconds": seconds, "bus_ids": {g.index: g.bus_id}}, seconds) for g in gpus]
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("outcomes", run_tasks(
        tasks, {"kind": "cupy"}, Watchdog(startup_s=120, stall_s=60))), daemon=True)
    thread.start()
    return thread, box


def _stop_load(loader: Any) -> str:
    if loader is None:
        return "none (CuPy not installed): links may read downtrained"
    thread, box = loader
    thread.join(timeout=300)
    statuses = sorted({o.status for o in box.get("outcomes", [])})
    return f"plain matmul load on every GPU ({', '.join(statuses) or 'unknown'})"


def write_capture(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
