"""Fake cupyx.distributed (see tests/fake_cupy/README.md): CuPy's signatures and TCP-store
rendezvous, with the all-reduce, all-gather and all-to-all done on numpy buffers through rank 0's
server (summed, joined in rank order, or each rank's row from every rank)."""

from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import random
import socket
import threading
import time

import numpy

_DEFAULT_HOST = "127.0.0.1"  # as cupyx/distributed/_store.py
_DEFAULT_PORT = 13333
MAX_NUM_RETRIES = 50  # TCPStoreProxy's retries on a refused connection, DELAY_FOR_RETRY apart
DELAY_FOR_RETRY = 0.5
_OPS = {"sum", "prod", "max", "min"}
_exit_mode = False


@atexit.register
def _exit():  # as cupyx/distributed/_store.py: no store is stopped by __del__ during exit
    global _exit_mode
    _exit_mode = True


def _fault(rank: int) -> tuple[str, str]:
    """(kind, where) planted for this rank by FAKE_NCCL_FAULT="KIND:RANK[:WHERE]", or for every rank
    on one node by "KIND:@NODE[:WHERE]" (FAKE_CUPY_NODE names this node), else ("", "")."""
    text = os.environ.get("FAKE_NCCL_FAULT", "")
    if not text:
        return "", ""
    kind, who, *where = text.split(":")
    mine = who[1:] == (os.environ.get("FAKE_CUPY_NODE") or os.environ.get("NODEQC_NODE")) if who.startswith("@") else int(who) == rank
    return (kind, where[0] if where else "first") if mine else ("", "")


def _corrupt(buf: numpy.ndarray, where: str) -> numpy.ndarray:
    buf = buf.copy()
    i = {"first": 0, "last": buf.size - 1}.get(where)
    if i is None:
        i = random.Random(int(where) if where.isdigit() else None).randrange(buf.size)
    buf.flat[i] += 1
    return buf


# ---------------------------------------------------------------------- the store (rank 0's child)


def _send(sock: socket.socket, header: dict, payload: bytes = b"") -> None:
    sock.sendall(json.dumps({**header, "bytes": len(payload)}).encode() + b"\n" + payload)


def _recv(sock: socket.socket) -> tuple[dict, bytes]:
    f = sock.makefile("rb")
    line = f.readline()
    if not line:
        raise ConnectionError("the store closed the connection")
    header = json.loads(line)
    payload = f.read(header["bytes"]) if header["bytes"] else b""
    return header, payload


class _Store:
    def __init__(self, world: int):
        self.world = world
        self.data: dict[str, object] = {}
        self.cond = threading.Condition()
        self.barrier_gen, self.barrier_count = 0, 0
        self.reduce: dict[int, dict] = {}

    def handle(self, conn: socket.socket) -> None:
        with conn:
            header, payload = _recv(conn)
            op = header["op"]
            if op == "set":
                with self.cond:
                    self.data[header["key"]] = header["value"]
                _send(conn, {"ok": True})
            elif op == "get":
                with self.cond:
                    _send(conn, {"ok": True, "value": self.data[header["key"]]})
            elif op == "barrier":  # as CuPy's _BarrierImpl: the world's arrivals, no timeout
                with self.cond:
                    gen = self.barrier_gen
                    self.barrier_count += 1
                    if self.barrier_count == self.world:
                        self.barrier_gen, self.barrier_count = gen + 1, 0
                        self.cond.notify_all()
                    while self.barrier_gen == gen:
                        self.cond.wait()
                _send(conn, {"ok": True})
            elif op == "reduce":
                self._reduce(conn, header, payload)

    def _reduce(self, conn: socket.socket, header: dict, payload: bytes) -> None:
        seq, rank = header["seq"], header["rank"]
        arr = numpy.frombuffer(payload, dtype=header["dtype"])
        with self.cond:
            slot = self.reduce.setdefault(seq, {"parts": {}, "result": None, "error": None, "served": 0})
            slot["parts"][rank] = arr
            if len(slot["parts"]) == self.world:
                sizes = {p.size for p in slot["parts"].values()}
                if len(sizes) > 1:
                    slot["error"] = f"NCCL_ERROR_INVALID_USAGE: counts differ across ranks: {sorted(sizes)}"
                else:
                    parts = [slot["parts"][r] for r in sorted(slot["parts"])]
                    how = header.get("how", "sum")
                    if how == "gather":
                        slot["result"] = numpy.concatenate(parts)
                    elif how == "alltoall":  # rank r receives row r of every rank's send, in rank order
                        rows = [p.reshape(self.world, -1) for p in parts]
                        slot["result"] = {r: numpy.concatenate([rows[i][r] for i in range(self.world)])
                                          for r in range(self.world)}
                    else:
                        total = numpy.zeros_like(arr)
                        for part in parts:
                            total += part
                        slot["result"] = total
                self.cond.notify_all()
            while slot["result"] is None and slot["error"] is None:
                self.cond.wait()  # a collective: nobody leaves before every rank came (no timeout)
            slot["served"] += 1
            if slot["served"] == self.world:
                del self.reduce[seq]
            self.cond.notify_all()  # drain() waits for every rank to be served
        if slot["error"]:
            _send(conn, {"ok": False, "error": slot["error"]})
        else:
            result = slot["result"][rank] if isinstance(slot["result"], dict) else slot["result"]
            _send(conn, {"ok": True}, result.tobytes())


    def drain(self, bound_s: float) -> None:
        """Before the store stops: every collective whose ranks all came is served to every rank. A
        real NCCL collective never passes through the store, so rank 0 stopping it once its own last
        result is in takes nothing from the others; here the results do pass through it."""
        deadline = time.monotonic() + bound_s
        with self.cond:
            while any(slot["result"] is not None or slot["error"] for slot in self.reduce.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)


def _server_loop(world: int, host: str, port: int, run) -> None:
    store = _Store(world)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))  # in use: this child dies with a traceback, rank 0 goes on (as CuPy's)
        s.listen(128)
        s.settimeout(0.5)
        while run.value == 1:
            try:
                conn, _ = s.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            threading.Thread(target=store.handle, args=(conn,), daemon=True).start()
        store.drain(5.0)


class _Proxy:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port

    def call(self, header: dict, payload: bytes = b"") -> tuple[dict, bytes]:
        for _ in range(MAX_NUM_RETRIES):
            try:
                with socket.create_connection((self.host, self.port)) as s:
                    _send(s, header, payload)
                    reply, data = _recv(s)
                    if not reply.get("ok"):
                        raise RuntimeError(reply.get("error"))
                    return reply, data
            except ConnectionRefusedError:
                time.sleep(DELAY_FOR_RETRY)
        raise RuntimeError("TCPStore is not available")


# ---------------------------------------------------------------------- the backend


class NCCLBackend:
    def __init__(self, n_devices, rank, host=_DEFAULT_HOST, port=_DEFAULT_PORT, use_mpi=False):
        self._n_devices, self.rank = n_devices, rank
        self._proxy = _Proxy(host, port)
        self._seq = 0
        self._process = None
        if rank == 0:  # CuPy: TCPStore.run starts the server in a child process
            self._run = multiprocessing.Value("b", 1)
            self._process = multiprocessing.Process(target=_server_loop, args=(n_devices, host, port, self._run))
            self._process.start()
            self._proxy.call({"op": "set", "key": "nccl_id", "value": f"fake-nccl-id-{os.getpid()}"})
            self._proxy.call({"op": "barrier"})
        else:
            self._proxy.call({"op": "barrier"})
            self._proxy.call({"op": "get", "key": "nccl_id"})
        self._proxy.call({"op": "barrier"})  # ncclCommInitRank: returns once every rank has joined
        log = os.environ.get("FAKE_NCCL_LOG")
        if log:  # who joined as which rank, on which node and device (the tests check the layout)
            import cupy.cuda

            with open(os.path.join(log, f"rank{rank}"), "w") as f:
                json.dump({"node": cupy.cuda.node_name(), "device": cupy.cuda.Device().id, "world": n_devices,
                           "host": host, "port": port, "pid": os.getpid()}, f)

    def stop(self):  # CuPy >= 13 (_comm.py _Backend.stop): rank 0 stops its store
        log = os.environ.get("FAKE_NCCL_LOG")
        if log and self._process is not None:  # the tests check it is called, not left to __del__
            open(os.path.join(log, "store-stopped"), "w").close()
        self._stop()

    def _stop(self):
        if self._process is not None and self._process.is_alive():
            self._run.value = 0
            self._process.join()

    def __del__(self):  # CuPy's TCPStore.__del__ stops the server, except at interpreter exit
        if not _exit_mode:
            self._stop()

    def all_reduce(self, in_array, out_array, op="sum", stream=None):
        if op not in _OPS:
            raise RuntimeError(f"Unknown op {op} for NCCL")
        if op != "sum":
            raise NotImplementedError("the fake all-reduce sums only")
        self._collective("sum", in_array, out_array)

    def all_gather(self, in_array, out_array, count, stream=None):
        if in_array.size != count or out_array.size != count * self._n_devices:
            raise RuntimeError(f"all_gather: count {count} against {in_array.size} sent and {out_array.size} "
                               f"received over {self._n_devices} ranks")
        self._collective("gather", in_array, out_array)

    def all_to_all(self, in_array, out_array, stream=None):
        if in_array.shape[0] != self._n_devices or out_array.shape[0] != self._n_devices:
            raise RuntimeError(f"all_to_all requires {self._n_devices} elements in the first dimension, found "
                               f"{in_array.shape} and {out_array.shape}")
        self._collective("alltoall", in_array, out_array)

    def _collective(self, how, in_array, out_array):
        kind, where = _fault(self.rank) if in_array.size > 1 else ("", "")  # the data, not a 1-element vote
        if kind == "hang":
            while True:
                time.sleep(3600)
        if kind == "raise":
            raise RuntimeError("NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for details)")
        if kind == "die":
            os._exit(3)
        send = _corrupt(in_array, where) if kind == "corrupt-send" else in_array
        self._seq += 1
        _, data = self._proxy.call({"op": "reduce", "how": how, "seq": self._seq, "rank": self.rank,
                                    "dtype": send.dtype.str}, numpy.ascontiguousarray(send).tobytes())
        result = numpy.frombuffer(data, dtype=send.dtype).reshape(out_array.shape)
        out_array[...] = _corrupt(result, where) if kind == "corrupt-recv" else result


def init_process_group(n_devices, rank, *, backend="nccl", host=None, port=None, use_mpi=False):
    if n_devices <= 0:
        raise ValueError(f"Invalid number of devices {n_devices}")
    if not (0 <= rank < n_devices):
        raise ValueError(f"Invalid number of rank {rank} {n_devices}")
    if backend != "nccl":
        raise ValueError(f"{backend} is not supported")
    if host is None:
        host = os.environ.get("CUPYX_DISTRIBUTED_HOST", _DEFAULT_HOST)
    if port is None:
        port = int(os.environ.get("CUPYX_DISTRIBUTED_PORT", _DEFAULT_PORT))
    return NCCLBackend(n_devices, rank, host, port, use_mpi)
