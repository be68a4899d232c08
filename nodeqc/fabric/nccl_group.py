"""An NCCL collective across every GPU of a group of nodes (two: a pair; more: `nodeqc fabric
--group-size K`), bootstrapped with CuPy's own distributed module
(`cupyx.distributed.init_process_group`: rank 0 hosts a TCP store on the group's first node): the
all-reduce (`--tests nccl`), and the all-gather and all-to-all (`--tests allgather,alltoall`), whose
traffic crosses the fabric differently (every rank's whole buffer to every other rank; a different
chunk to each), as the cluster acceptance tools of Google and NVIDIA measure them.

One process per GPU (NCCL takes one device per communicator rank); on a group of k nodes of G GPUs,
ranks 0..G-1 on the first, G..2G-1 on the second, and so on to kG-1. Every rank fills its buffer with
known values (nodeqc.core.known_answer: its all-reduce contribution; its all-gather chunk; one
all-to-all chunk per destination), so the result is known exactly (small integers are exact in
float32) and every element of every result is checked, as the in-node NCCL check does. The bus
bandwidth is nccl-tests' figure for the collective.

Before NCCL starts, the ends meet on a port of their own (the store's + 1) and agree: every end has
CuPy and GPUs, the same number of GPUs (else the world sizes disagree and CuPy's store barrier waits
forever), and the first end's store port is free (else CuPy's store process dies silently and the
ranks talk to whatever holds the port). Everything is bounded by one deadline; a rank that hangs is
killed with its process group (rank 0's group holds CuPy's store process), and if this process is
itself killed, its ranks and that store go with it (PR_SET_PDEATHSIG, and a forked watcher).

Each step (one collective, launch to synchronised) is timed on the CPU side; each end reports its
worst rank's median and 99th percentile step (nodeqc.fabric.tails judges the tail).

Every end reports: each checks its own ranks' results (a fault local to one GPU shows on its node
only) and the launcher's merge makes one figure of them all.

GPU-only: where CuPy or GPUs are missing this is skipped with what to install (the code path
around NCCL runs on this machine against tests/fake_cupy; NCCL itself on a GPU cluster).
"""

from __future__ import annotations

import errno
import ipaddress
import json
import multiprocessing
import os
import queue
import signal
import socket
import time
from typing import Any, Callable

BUFFER_BYTES = 1 << 30  # 1 GiB: bandwidth-bound (the published floors average nccl-tests over 1-16 GB)
START_TIMEOUT_S = 120.0  # the peer's arrival, the TCP store and NCCL's set-up of 2x8 ranks: well under this
MIN_ITERS = 5
KILL_S = 10.0  # after the deadline: killing what hung and reaping it
HANDSHAKE_OFFSET = 1  # the ends' agreement is on the store's port + 1
# The collectives, by the fabric test that runs each (its figure's rail has the same name), and
# how they are said.
COLLECTIVES = {"nccl": "all_reduce", "allgather": "all_gather", "alltoall": "all_to_all"}


def test_of(rail: str) -> str:
    """The test a figure on this rail comes from: tcp, a collective (its own name), else rdma (an
    HCA's port, or the word rdma of a skip)."""
    return rail if rail == "tcp" or rail in COLLECTIVES else "rdma"
SAID = {"all_reduce": "all-reduce", "all_gather": "all-gather", "all_to_all": "all-to-all"}


def wrong_result(op: str) -> str:
    return f"wrong {SAID[op]} result"


def leads_with_wrong_result(error: str) -> bool:
    """An end's error whose first entry is a rank's wrong result (see run: it comes first)."""
    first = error.split("; ", 1)[0]
    return any(f": {wrong_result(op)}: " in first for op in SAID)


def time_bound_s(seconds: float) -> float:
    """The longest `run` takes at either end, whatever happens (the launcher's round allows it)."""
    return START_TIMEOUT_S + seconds + KILL_S


def bus_bandwidth(nbytes: int, seconds_per_op: float, ranks: int, op: str = "all_reduce") -> float:
    """nccl-tests' bus bandwidth, GB/s (doc/PERFORMANCE.md), so it compares with the hardware's link
    bandwidth whatever the rank count: algbw = bytes / time, where bytes is each rank's buffer (the
    all-reduce's, the all-gather's whole result, the all-to-all's whole send buffer), and busbw =
    algbw * 2(n-1)/n for the all-reduce (each rank sends and receives 2(n-1)/n of the data), algbw *
    (n-1)/n for the all-gather and the all-to-all (each rank receives the (n-1)/n that is not its own)."""
    algbw = nbytes / seconds_per_op / 1e9
    return algbw * (2 if op == "all_reduce" else 1) * (ranks - 1) / ranks


def percentile(samples: list[float], q: float) -> float:
    """The nearest-rank q-th percentile (q in 0..100] of samples (not empty): a value that was seen."""
    ordered = sorted(samples)
    return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * q // 100) - 1))]  # ceil(n q / 100) - 1


def unavailable() -> str | None:
    try:
        import cupy
        import cupyx.distributed  # noqa: F401
    except ImportError:
        return "CuPy is not installed: pip install 'nodeqc[cuda12]' (or cuda13) on every node"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU on this node"
    except Exception as e:  # noqa: BLE001 - a driver problem is a reason to skip, said as such
        return f"CUDA is not usable here: {e}"
    return None


def _die_with_parent() -> None:
    """A rank ends when its worker does, even killed (a launcher's round timeout, an abort): else a
    rank hung in NCCL would hold its GPU until someone finds it. Linux's PR_SET_PDEATHSIG."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the watchdog in run() is the only bound
        pass


def _buffers(cupy: Any, comm: Any, op: str, rank: int, world: int, nbytes: int) -> tuple[Any, Any, Any, Callable[[], None]]:
    """(what this rank sends, where its result lands, the result it must be, the collective): each
    rank's buffer nbytes, as nccl-tests sizes it (the all-gather's result, the all-to-all's send).
    The known answers are imported here, in the rank's process: the module stays light (NumPy-free)
    for the fabric worker and the launcher's line checks, which only need its names."""
    from nodeqc.core.known_answer import allgather_chunk, allreduce_contribution, allreduce_expected, alltoall_chunk

    n = max(1, nbytes // 4 // world) * world  # whole chunks: one a rank
    chunk = n // world
    if op == "all_gather":
        send = cupy.full(chunk, allgather_chunk(rank), dtype=cupy.float32)
        want = cupy.repeat(cupy.asarray([allgather_chunk(r) for r in range(world)], dtype=cupy.float32), chunk)
        recv = cupy.zeros(n, dtype=cupy.float32)
        return send, recv, want, lambda: comm.all_gather(send, recv, chunk)
    if op == "all_to_all":
        # Row j goes to rank j; row i of the result came from rank i.
        send = cupy.repeat(cupy.asarray([alltoall_chunk(rank, j, world) for j in range(world)],
                                        dtype=cupy.float32), chunk).reshape(world, chunk)
        want = cupy.repeat(cupy.asarray([alltoall_chunk(i, rank, world) for i in range(world)],
                                        dtype=cupy.float32), chunk).reshape(world, chunk)
        recv = cupy.zeros((world, chunk), dtype=cupy.float32)
        return send, recv, want, lambda: comm.all_to_all(send, recv)
    n = nbytes // 4
    send = cupy.full(n, allreduce_contribution(rank), dtype=cupy.float32)
    recv = cupy.zeros(n, dtype=cupy.float32)
    return send, recv, cupy.full(n, allreduce_expected(world), dtype=cupy.float32), \
        lambda: comm.all_reduce(send, recv, "sum")


def _rank(rank: int, local: int, world: int, host: str, port: int, seconds: float, nbytes: int, out: Any,
          op: str = "all_reduce") -> None:
    comm = None
    try:
        # Its own process group: CuPy's TCP store (a child of rank 0) joins it, so a rank killed
        # for hanging takes its store with it and leaves no process holding the port.
        os.setpgrp()
        _die_with_parent()
        import cupy
        import cupyx.distributed

        cupy.cuda.Device(local).use()  # CuPy: the device is the caller's to set, before the group
        comm = cupyx.distributed.init_process_group(world, rank, host=host, port=port)
        send, recv, want, collective = _buffers(cupy, comm, op, rank, world, nbytes)
        collective()  # warm-up: connections set up here (current stream)
        cupy.cuda.Device().synchronize()
        vote, votes = cupy.zeros(1, dtype=cupy.float32), cupy.zeros(1, dtype=cupy.float32)
        iters, busy, wrong_results, most_wrong, first = 0, 0.0, 0, 0, None
        steps: list[float] = []  # each collective's wall time (launch to synchronised), for the tail
        while True:
            recv.fill(0)  # a collective that wrote nothing must not pass on the last one's result
            start = time.perf_counter()
            collective()
            cupy.cuda.Device().synchronize()
            step = time.perf_counter() - start
            busy += step
            steps.append(step)
            iters += 1
            bad = (recv != want).ravel()  # every element of every result, outside the timed part
            wrong = int(cupy.count_nonzero(bad))
            if wrong:
                wrong_results += 1
                most_wrong = max(most_wrong, wrong)
                if first is None:
                    i = int(cupy.flatnonzero(bad)[0])
                    first = (i, float(recv.ravel()[i]), float(want.ravel()[i]))
            # Every rank must run the same number of all-reduces (one more on any rank waits forever
            # for the others), so they stop together: a rank that has had its time votes to stop,
            # and the votes are summed by a one-element all-reduce outside the timed part.
            vote.fill(1.0 if busy >= seconds and iters >= MIN_ITERS else 0.0)
            comm.all_reduce(vote, votes, "sum")
            cupy.cuda.Device().synchronize()
            if float(votes[0]) > 0:
                break
        size = int(recv.size if op == "all_gather" else send.size) * 4
        out.put({"rank": rank, "busbw": bus_bandwidth(size, busy / iters, world, op), "iters": iters,
                 "step_p50_ms": percentile(steps, 50) * 1e3, "step_p99_ms": percentile(steps, 99) * 1e3,
                 "elements": int(recv.size), "wrong": most_wrong, "wrong_results": wrong_results,
                 "first": first})
    except Exception as e:  # noqa: BLE001 - reported as the pair's error, never lost
        out.put({"rank": rank, "error": f"{type(e).__name__}: {e}"})
    finally:
        if comm is not None:
            # CuPy >= 13: rank 0 stops its TCP store. Left to garbage collection at exit it is not
            # stopped (CuPy's atexit hook turns that off) and multiprocessing joins it forever.
            try:
                comm.stop()
            except Exception:  # noqa: BLE001 - the figure is out already; the watchdog reaps the rest
                pass


def _kill(p: Any) -> None:
    """A rank and its group (CuPy's store process, for rank 0)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # never became a group leader: the process alone
        if p.is_alive():
            p.kill()


class _Reaper:
    """A forked watcher that kills every rank's process group if this process ends without saying
    it is done (killed by a launcher's round timeout or an abort). PR_SET_PDEATHSIG ends the ranks,
    but CuPy's TCP store is a spawned child of rank 0 that nothing else would end: it would hold the
    store's port for every later run on this node. The watcher learns each rank's pid down a pipe
    only this process writes; end of file without "done" means this process is gone. It outlives a
    kill by name: `pkill -f` or a terminal's Ctrl-C reaches it too (a fork has this process's command
    line and process group), and a watcher that died with it left the store holding its port (a test
    run killed so, 2026-11-28: 47 minutes). Only SIGKILL ends it before its work."""

    def __init__(self) -> None:
        r, self._w = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the watcher: nothing but reads and kills, then _exit
            try:
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
                    try:
                        signal.signal(sig, signal.SIG_IGN)  # the end of the pipe is its only signal
                    except (ValueError, OSError):  # never a reason to leave the watch undone
                        pass
                os.close(self._w)
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # hold no one's pipe open
                    os.dup2(null, fd)
                data = b""
                while chunk := os.read(r, 4096):
                    data += chunk
                if not data.endswith(b"done\n"):
                    for line in data.split():
                        if line.isdigit():  # bytes: ASCII digits only
                            _kill_group(int(line))
            finally:
                os._exit(0)
        os.close(r)

    def watch(self, pid: int) -> None:
        os.write(self._w, f"{pid}\n".encode())

    def done(self) -> None:
        os.write(self._w, b"done\n")
        os.close(self._w)
        os.waitpid(self._pid, 0)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


MAX_GPUS = 1024  # a node's GPU count as an end says it: beyond any node built (a lie or garbage otherwise)


def _agree(infos: list[dict[str, Any]], names: tuple[str, ...]) -> tuple[str, str | int]:
    """What every end does, from what each said (in end order; the host's first): ("skip", why),
    ("error", why) or ("go", world). Each end decides alone from the same list, so all decide alike."""
    missing = [(name, info["unavailable"]) for name, info in zip(names, infos) if info.get("unavailable")]
    if missing:
        reasons = {str(why) for _, why in missing}
        if len(missing) == len(infos) and len(reasons) == 1:
            return "skip", reasons.pop()
        return "skip", "; ".join(f"on {name}: {why}" for name, why in missing)
    if infos[0].get("error"):
        return "error", str(infos[0]["error"])
    for name, info in zip(names, infos):
        gpus = info.get("gpus")
        if type(gpus) is not int or not 0 < gpus <= MAX_GPUS:
            return "error", f"{name} said it has {str(gpus)[:40]!r} GPUs: not a GPU count"
    counts = [info["gpus"] for info in infos]
    if len(set(counts)) > 1:
        said = ", ".join(f"{name} has {n}" for name, n in zip(names, counts))
        return "error", (f"GPU counts differ: {said} (the collective takes every GPU of every node: a GPU is "
                         "missing on one; its node report shows which)")
    return "go", sum(counts)


def _loopback_hint(host: str) -> str:
    """Why two nodes may never meet at `host`: where it names a loopback address on this node (Debian
    and Ubuntu map a machine's own name to 127.0.1.1 in /etc/hosts), each end waits on itself."""
    try:
        ipaddress.ip_address(host)
        return ""  # given as an address: whoever wrote 127.0.0.1 meant it (both ends on one machine)
    except ValueError:
        pass
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return ""
    if not ipaddress.ip_address(address).is_loopback:
        return ""
    return (f" ({host} is {address} on this node, a loopback address: each node meets only itself there; give "
            "the nodes' addresses by IP, or map their names to a routable address in /etc/hosts)")


def _handshake(index: int, host_a: str, port: int, mine: dict[str, Any], names: tuple[str, ...],
               deadline: float) -> tuple[str, str | int]:
    """The host (end 0) listens on port + HANDSHAKE_OFFSET; every other end connects (retrying while
    the host is not there yet) and says its end and what it has; once all have come, the host answers
    each with the whole list (its own first), and every end decides the same with _agree. An end
    that never comes is named by the host, which tells those that came."""
    where = f"{host_a}:{port + HANDSHAKE_OFFSET}"
    try:
        if index == 0:
            return _host(host_a, port, mine, names, deadline, where)
        while True:  # the host may not be listening yet: retry until the deadline
            try:
                conn = socket.create_connection((host_a, port + HANDSHAKE_OFFSET),
                                                timeout=max(0.1, min(5.0, deadline - time.monotonic())))
                break
            except (ConnectionRefusedError, socket.timeout):
                if time.monotonic() > deadline:
                    raise socket.timeout from None
                time.sleep(0.2)
        with conn:
            # The host answers at its own deadline at the latest (naming who did not come).
            conn.settimeout(max(0.1, deadline - time.monotonic()) + ANSWER_GRACE_S)
            conn.sendall(json.dumps({**mine, "end": index}).encode() + b"\n")
            answer = json.loads(conn.makefile("rb").readline(MAX_ANSWER) or b"null")
        if not isinstance(answer, dict):
            return "error", f"{names[0]} closed the NCCL rendezvous at {where} without a word"
        if answer.get("error"):
            return "error", str(answer["error"])[:2000]
        infos = answer.get("ends")
        if not isinstance(infos, list) or len(infos) != len(names) or not all(isinstance(i, dict) for i in infos):
            return "error", f"the NCCL rendezvous at {where}: {names[0]} answered with no list of {len(names)} ends"
        return _agree(infos, names)
    except socket.timeout:
        return "error", (f"{names[0]} did not come to the NCCL rendezvous at {where} within {START_TIMEOUT_S:g} s"
                         + _loopback_hint(host_a))
    except OSError as e:
        return "error", f"the NCCL rendezvous at {where}: {e.strerror or e}"
    except (ValueError, RecursionError) as e:  # another node's line: nested past the decoder's depth too
        return "error", f"the NCCL rendezvous at {where}: unreadable answer ({type(e).__name__})"


ANSWER_GRACE_S = 5.0  # an end waits this long past its deadline for the host's answer (sent at the host's)
MAX_ANSWER = 1 << 20  # bytes of one rendezvous line: a few hundred per end


def _host(host_a: str, port: int, mine: dict[str, Any], names: tuple[str, ...], deadline: float,
          where: str) -> tuple[str, str | int]:
    """End 0's side of the rendezvous: every other end's word, then one answer to each."""
    try:  # CuPy's store binds here later, in a child whose failure nobody hears of: try it now
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as CuPy's store does
            probe.bind((host_a, port))
    except OSError as e:
        hint = ("another process listens there (a store left by an earlier run?)"
                if e.errno == errno.EADDRINUSE else f"is {host_a} an address of {names[0]}?")
        mine = {**mine, "error": f"cannot host the NCCL rendezvous (CuPy's TCP store) on {names[0]} at "
                                 f"{host_a}:{port}: {e.strerror}: {hint}"}
    came: dict[int, tuple[socket.socket, dict[str, Any]]] = {}
    problem = None
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host_a, port + HANDSHAKE_OFFSET))
        s.listen(len(names))
        try:
            while len(came) < len(names) - 1 and problem is None:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    conn, _ = s.accept()
                except socket.timeout:
                    absent = [names[i] for i in range(1, len(names)) if i not in came]
                    problem = (f"{', '.join(absent)} did not come to the NCCL rendezvous at {where} within "
                               f"{START_TIMEOUT_S:g} s" + _loopback_hint(host_a))
                    break
                conn.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    said = json.loads(conn.makefile("rb").readline(MAX_ANSWER) or b"null")
                except (OSError, ValueError, RecursionError):  # another node's line, however nested
                    said = None
                end = said.get("end") if isinstance(said, dict) else None
                if type(end) is not int or not 0 < end < len(names) or end in came:
                    conn.close()  # not one of ours, or an end twice: nothing it says is used
                    if isinstance(said, dict) and end in came:
                        problem = f"end {end} ({names[end]}) came twice to the NCCL rendezvous at {where}"
                    continue
                came[end] = (conn, said)
            if problem is None:
                infos = [mine] + [came[i][1] for i in range(1, len(names))]
                answer: dict[str, Any] = {"ends": infos}
            else:
                answer = {"error": problem}
            for conn, _ in came.values():
                try:
                    conn.sendall(json.dumps(answer).encode() + b"\n")
                except OSError:
                    pass
        finally:
            for conn, _ in came.values():
                conn.close()
    if problem is not None:
        return "error", problem
    return _agree(infos, names)


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


def run(index: int, host_a: str, port: int, seconds: float, *, names: tuple[str, ...] = ("A", "B"),
        buffer_bytes: int = BUFFER_BYTES, op: str = "all_reduce") -> dict[str, Any]:
    """This end's part of the collective `op` (COLLECTIVES' values) across the nodes `names` (this
    one is names[index]); every end calls it at once.
    Returns this end's figure: {"value": GB/s, "unit", "error", "gpus"} or {"skipped": why}. Never
    longer than time_bound_s."""
    if op not in SAID:
        raise ValueError(f"nccl_group.run: no collective {op!r} (expected one of {', '.join(SAID)})")
    t0 = time.monotonic()
    deadline = t0 + START_TIMEOUT_S + seconds
    why = unavailable()
    mine: dict[str, Any] = {"unavailable": why}
    if not why:
        import cupy

        mine["gpus"] = cupy.cuda.runtime.getDeviceCount()
    what, detail = _handshake(index, host_a, port, mine, names, t0 + START_TIMEOUT_S)
    if what == "skip":
        return {"skipped": detail}
    if what == "error":
        return {"value": None, "unit": "GB/s", "error": detail}
    world, gpus = int(detail), int(mine["gpus"])
    reaper = _Reaper()  # first: it holds no pipe but its own
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = {index * gpus + g: ctx.Process(target=_rank, args=(index * gpus + g, g, world, host_a, port, seconds,
                                                               buffer_bytes, out, op)) for g in range(gpus)}
    try:
        for p in procs.values():
            p.start()
            reaper.watch(p.pid)  # type: ignore[arg-type]
    except OSError as e:  # no process to be had (memory, a process limit): the pair's error, said
        for p in procs.values():
            if p.pid is not None:
                _kill(p)
                p.join(timeout=1)
        reaper.done()
        return {"value": None, "unit": "GB/s", "error": f"could not start the ranks: {e}", "gpus": world}
    results: dict[int, dict[str, Any]] = {}
    while len(results) < gpus and time.monotonic() < deadline:
        try:
            r = out.get(timeout=0.2)
            results[r["rank"]] = r
            continue
        except queue.Empty:
            pass
        if all(not p.is_alive() for rank, p in procs.items() if rank not in results):
            try:  # a rank's last words may still be in the pipe as it exits
                while len(results) < gpus:
                    r = out.get(timeout=0.5)
                    results[r["rank"]] = r
            except queue.Empty:
                pass
            break
    errors = []
    hung = [rank for rank, p in procs.items() if rank not in results and p.is_alive()]
    crashed = [(rank, p.exitcode) for rank, p in procs.items() if rank not in results and not p.is_alive()]
    reap = time.monotonic() + KILL_S / 2
    for rank, p in procs.items():
        if rank in hung:
            _kill(p)
        p.join(timeout=max(0.1, reap - time.monotonic()))
        _kill(p)  # what is left of its group (a store process whose rank is gone)
        p.join(timeout=1)
    reaper.done()
    # A wrong result first: it is the finding, where the others may be its consequence (a rank that
    # has checked its result and left closes the store its peers still use: their ConnectionError).
    for rank in sorted(results):
        r = results[rank]
        if "error" not in r and r["wrong"]:
            i, got, want = r["first"]
            errors.append(f"rank {rank}: {wrong_result(op)}: {r['wrong']} of {r['elements']} elements wrong "
                          f"(element {i}: {got:g}, want {want:g}) in {r['wrong_results']} of {r['iters']} results")
    errors += [f"rank {rank}: {results[rank]['error']}" for rank in sorted(results) if "error" in results[rank]]
    for rank, code in crashed:
        errors.append(f"rank {rank} exited (code {code}) without a result")
    if hung:
        errors.append(f"{_ranks(hung)} gave no result within {START_TIMEOUT_S + seconds:g} s (hung; killed)")
    if errors:
        return {"value": None, "unit": "GB/s", "error": "; ".join(errors), "gpus": world}
    busbw = min(r["busbw"] for r in results.values())
    # The tail: every rank waits for the slowest at each step, so the rank with the worst 99th
    # percentile speaks for this end (its median with it).
    worst = max(results.values(), key=lambda r: r["step_p99_ms"])
    return {"value": float(f"{busbw:.4g}"), "unit": "GB/s", "error": None, "gpus": world,
            "steps": min(r["iters"] for r in results.values()), "step_p50_ms": round(worst["step_p50_ms"], 3),
            "step_p99_ms": round(worst["step_p99_ms"], 3)}
