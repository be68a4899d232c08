"""The GPUs of one node together through CuPy, for the GPU-to-GPU checks (peer copies and NCCL
all-reduce), used inside worker processes only; one GPU's work is nodeqc.backends.cupy_compute."""

from __future__ import annotations

import os
import time
from typing import Any

from nodeqc.backends.base import Clock
from nodeqc.backends.cupy_compute import CupyDevice, import_cupy
from nodeqc.core.known_answer import allreduce_contribution, copy_pattern


class CupyNodeDevices:
    """All GPUs of the node from one worker process: peer copies and NCCL."""

    simulated = False

    def __init__(self, indices: list[int], bus_ids: dict[int, str] | None = None, clock_origin: float | None = None):
        self.cp = import_cupy()
        self.devices = {i: CupyDevice(i, (bus_ids or {}).get(i), clock_origin) for i in indices}
        self.clock = Clock(1.0, clock_origin)

    def set_load(self, load: float) -> None:
        pass

    def close(self) -> None:
        for d in self.devices.values():
            with d.device:
                d.release()

    def peer_access(self) -> dict[tuple[int, int], bool]:
        rt = self.cp.cuda.runtime
        out = {}
        for i, di in self.devices.items():
            for j, dj in self.devices.items():
                if i != j:
                    out[(i, j)] = bool(rt.deviceCanAccessPeer(di.ordinal, dj.ordinal))
        return out

    def p2p_setup(self, nbytes: int) -> None:
        cp, rt = self.cp, self.cp.cuda.runtime
        self._n = nbytes
        self._src, self._dst = {}, {}
        for i, d in self.devices.items():
            with d.device:
                for j, other in self.devices.items():
                    if i != j and rt.deviceCanAccessPeer(d.ordinal, other.ordinal):
                        try:
                            rt.deviceEnablePeerAccess(other.ordinal)
                        except rt.CUDARuntimeError:
                            pass  # already enabled
                self._src[i] = copy_pattern(cp, nbytes, i)
                self._dst[i] = cp.zeros(nbytes, dtype=cp.uint8)

    def _copy(self, src: int, dst: int, stream: Any) -> None:
        rt = self.cp.cuda.runtime
        rt.memcpyPeerAsync(self._dst[dst].data.ptr, self.devices[dst].ordinal, self._src[src].data.ptr,
                           self.devices[src].ordinal, self._n, stream.ptr)

    def p2p_copy(self, src: int, dst: int, iters: int, bidir: bool = False) -> float:
        cp = self.cp
        with self.devices[src].device:
            s_fwd = cp.cuda.Stream(non_blocking=True)
        with self.devices[dst].device:
            s_back = cp.cuda.Stream(non_blocking=True)
        t0 = time.perf_counter()
        for _ in range(iters):
            self._copy(src, dst, s_fwd)
            if bidir:
                self._copy(dst, src, s_back)
        s_fwd.synchronize()
        s_back.synchronize()
        return time.perf_counter() - t0

    def p2p_received(self, src: int, dst: int) -> Any:
        """What `dst` holds after the last copy from `src` (on `dst`'s memory)."""
        return self._dst[dst]

    def p2p_latency(self, src: int, dst: int, iters: int) -> float:
        cp, rt = self.cp, self.cp.cuda.runtime
        with self.devices[src].device:
            s = cp.cuda.Stream(non_blocking=True)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(s)
            for _ in range(iters):
                rt.memcpyPeerAsync(self._dst[dst].data.ptr, self.devices[dst].ordinal, self._src[src].data.ptr,
                                   self.devices[src].ordinal, 4, s.ptr)
            end.record(s)
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) / 1000.0 / iters

    def nccl_unavailable(self) -> str | None:
        from cupy.cuda import nccl

        if not nccl.available:
            return "NCCL is not available to CuPy: pip install nvidia-nccl-cu12 (or -cu13)"
        return None

    def nccl_allreduce(self, nbytes: int, iters: int, env: dict[str, str] | None = None) -> tuple[float, dict[int, Any]]:
        """All-reduce (sum) of `nbytes` per GPU, `iters` times after a warm-up; returns seconds per
        all-reduce and each GPU's result (on that GPU), for the workload to check. `env`: NCCL's
        switches (NCCL_P2P_DISABLE, ...), read from the environment when this (fresh) worker process
        makes its first communicator."""
        cp = self.cp
        from cupy.cuda import nccl

        os.environ.update(env or {})

        order = list(self.devices)
        count = nbytes // 4
        comms = nccl.NcclCommunicator.initAll([self.devices[i].ordinal for i in order])
        send, recv, streams = {}, {}, {}
        for rank, i in enumerate(order):
            with self.devices[i].device:
                send[i] = cp.full(count, allreduce_contribution(rank), dtype=cp.float32)
                recv[i] = cp.zeros(count, dtype=cp.float32)
                streams[i] = cp.cuda.Stream(non_blocking=True)

        def once() -> None:
            nccl.groupStart()
            for rank, i in enumerate(order):
                with self.devices[i].device:
                    comms[rank].allReduce(send[i].data.ptr, recv[i].data.ptr, count, nccl.NCCL_FLOAT32,
                                          nccl.NCCL_SUM, streams[i].ptr)
            nccl.groupEnd()
            for s in streams.values():
                s.synchronize()

        once()  # warm-up: rings and buffers are set up on first use
        t0 = time.perf_counter()
        for _ in range(iters):
            once()
        per = (time.perf_counter() - t0) / iters
        return per, recv
