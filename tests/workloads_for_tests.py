"""Workloads that misbehave on purpose, run by worker processes in test_workers.py."""

import os
import signal
import time


def steady(device, params, report):
    for n in range(5):
        time.sleep(0.02)
        report.progress((n + 1) / 5, step=n)
    return {"done": True}


def exits(device, params, report):
    report.progress(0.1)
    os._exit(3)


def segfaults(device, params, report):
    report.progress(0.1)
    print("about to die", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


def raises(device, params, report):
    raise ValueError("bad parameter")


def cuda_error(device, params, report):
    class CUDARuntimeError(Exception):
        pass

    raise CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")


def silent(device, params, report):
    report.progress(0.1)
    time.sleep(3600)


def never_starts(device, params, report):
    time.sleep(3600)


def chatty_forever(device, params, report):
    while True:
        time.sleep(0.02)
        report.progress(0.5)


def pid(device, params, report):
    """Which process ran the task (a kept worker serves several), after what it printed."""
    print(params.get("say", "nothing to say"), flush=True)
    report.progress(1.0)
    return {"pid": os.getpid()}


def prints_then_segfaults(device, params, report):
    report.progress(0.1)
    print("this task's last words", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


def gpu_memory(device, params, report):
    """On a real GPU: the free memory at the task's start, then a buffer of params['gib'] GiB left
    in CuPy's pool for the device's close to free (a kept worker must hand the next task its GPU's
    memory back)."""
    import cupy

    free = cupy.cuda.runtime.memGetInfo()[0]
    held = cupy.ones(int(params.get("gib", 0)) << 28, dtype=cupy.float32)  # 2^28 float32: 1 GiB
    cupy.cuda.Device().synchronize()
    del held  # back to CuPy's pool, not to the driver: only the device's release frees it
    report.progress(1.0)
    return {"pid": os.getpid(), "free": int(free)}


class _Unfreeable:
    def close(self):
        raise RuntimeError("cudaErrorIllegalAddress while freeing")


def cannot_free(device, params, report):
    """A result, then a device that fails to close: the process must not be given another task."""
    device.close = _Unfreeable().close
    report.progress(1.0)
    return {"pid": os.getpid()}


def sets_env(device, params, report):
    """As the in-node NCCL workload does: its environment applied to this process (NCCL reads it at
    its first communicator); what NCCL_P2P_DISABLE then is."""
    os.environ.update(params.get("env", {}))
    report.progress(1.0)
    return {"pid": os.getpid(), "seen": os.environ.get("NCCL_P2P_DISABLE")}


def whoami(device, params, report):
    """Where this worker came from: its process, its parent, and whether the simulated node's
    compute module was imported before the task (by a fork server's preload)."""
    import sys

    report.progress(1.0)
    return {"pid": os.getpid(), "ppid": os.getppid(), "preloaded": "nodeqc.backends.sim.compute" in sys.modules}
