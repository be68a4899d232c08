"""The two-node NCCL all-reduce (nodeqc/fabric/nccl_group.py) without GPUs: everything nodeqc does
around NCCL, run for real on localhost.

What is faked, and why: CuPy and NCCL (no GPU here). tests/fake_cupy stands in with CuPy's own
signatures (init_process_group(n_devices, rank, *, host, port), all_reduce(in, out, op, stream))
and CuPy's TCP-store behaviour (rank 0 hosts it in a child process; a barrier over rank 0's world
size with no timeout); its all-reduce really sums every rank's numpy buffer through that store and
blocks until every rank contributed. Two "nodes" are two processes calling the real `run` (index 0
and 1, two fake GPUs each); each spawns its rank processes as on a GPU node. Faults are planted in
the fake: one rank's contribution or its own result wrong at one element, a rank that hangs, raises
or dies. What still needs two GPU nodes: NCCL itself (its transports, its own hangs and errors), the
bandwidth figures, CuPy's store over a real network.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, cli
from nodeqc.core.known_answer import allgather_chunk, allreduce_expected, alltoall_chunk
from nodeqc.fabric import nccl_group
from nodeqc.fabric.launchers import Work, merge, one_nccl_figure
from nodeqc.fabric.scoring import Floors

FAKE = Path(__file__).resolve().parent / "fake_cupy"
START_S = 30.0  # START_TIMEOUT_S where nothing hangs: only a bound (a loaded 2-core machine spawns slowly)
HANG_S = 6.0  # where something hangs on purpose: the deadline that ends it (slow tests)
SECONDS = 0.01  # of all-reduces per rank: MIN_ITERS of them (each a few TCP round trips through the fake)
BYTES = 4096  # 1024 float32 per GPU
NODE = """
import json, sys
from nodeqc.fabric import nccl_group
nccl_group.START_TIMEOUT_S = float(sys.argv[5])
print(json.dumps(nccl_group.run(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]),
                               names=tuple(sys.argv[8].split(",")), buffer_bytes=int(sys.argv[6]), op=sys.argv[7])))
"""


def free_port() -> int:
    """A port p with p + 1 (the ends' agreement) free as well. Under xdist, from this worker's own
    range (tests/conftest.py gives each worker 2200 ports from $NODEQC_FABRIC_PORT; `nodeqc fabric`
    uses the first few hundred and 2000 above), below the ephemeral range: a port the OS handed out
    could be taken for another test's outgoing connection between this check and its use."""
    import random

    base = os.environ.get("NODEQC_FABRIC_PORT")
    candidates = ([int(base) + 300 + 2 * k for k in random.sample(range(800), 800)] if base else [0] * 50)
    for port in candidates:
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))
                port = s.getsockname()[1]
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port pair")


def node_env(node: str, gpus: str = "2", fault: str = "", log: Path | None = None, cupy: bool = True) -> dict[str, str]:
    env = {**os.environ, "FAKE_CUPY_NODE": node, "FAKE_CUPY_GPUS": gpus, "FAKE_NCCL_FAULT": fault,
           "PYTHONPATH": os.pathsep.join([str(FAKE)] * cupy + [str(ROOT)])}
    if log:
        env["FAKE_NCCL_LOG"] = str(log)
    return env


def start(index: int, port: int, env: dict[str, str], start_s: float = START_S,
          host_a: str = "127.0.0.1", op: str = "all_reduce", names: str = "a,b") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", NODE, str(index), host_a, str(port), str(SECONDS),
                             str(start_s), str(BYTES), op, names], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(p: subprocess.Popen[str]) -> dict:
    out, err = p.communicate(timeout=nccl_group.KILL_S + START_S + 60)
    assert p.returncode == 0 and "Traceback" not in err, err
    return json.loads(out.strip().splitlines()[-1])


def pair(gpus: str = "2", fault: str = "", log: Path | None = None, start_s: float = START_S,
         cupy_b: bool = True, op: str = "all_reduce") -> tuple[dict, dict, float, int]:
    """Both ends at once; their figures, the wall time and the store's port."""
    port = free_port()
    t0 = time.monotonic()
    a = start(0, port, node_env("a", gpus, fault, log), start_s, op=op)
    b = start(1, port, node_env("b", gpus, fault, log, cupy=cupy_b), start_s, op=op)
    ra, rb = finish(a), finish(b)
    return ra, rb, time.monotonic() - t0, port


def merged(ra: dict, rb: dict) -> dict:
    return one_nccl_figure(("a", "b"), [("a", ra), ("b", rb)])


def named(error: str, rank: int) -> bool:
    """Whether an end's error names this rank ("rank 3: ...", "ranks 2, 3 gave no result ...")."""
    return re.search(rf"\branks? (\d+, )*{rank}\b", error) is not None


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


# ---------------------------------------------------------------------- a healthy pair


def test_a_healthy_pair_lays_ranks_out_across_both_nodes_and_both_ends_report(tmp_path):
    ra, rb, _, port = pair(log=tmp_path)
    for r in (ra, rb):
        assert r["error"] is None and r["value"] > 0 and r["gpus"] == 4 and r["unit"] == "GB/s", r
    assert (tmp_path / "store-stopped").exists()  # rank 0 stopped CuPy's store (comm.stop(), CuPy >= 13)
    joined = {p.name: json.loads(p.read_text()) for p in tmp_path.iterdir() if p.name.startswith("rank")}
    # Ranks 0..G-1 on A, G..2G-1 on B, each on its own local device, all in one world of 2G,
    # all meeting at A's store.
    assert {r: (j["node"], j["device"], j["world"]) for r, j in joined.items()} == {
        "rank0": ("a", 0, 4), "rank1": ("a", 1, 4), "rank2": ("b", 0, 4), "rank3": ("b", 1, 4)}
    assert {(j["host"], j["port"]) for j in joined.values()} == {("127.0.0.1", port)}
    assert merged(ra, rb)["value"] == min(ra["value"], rb["value"])
    assert port_is_free(port) and port_is_free(port + 1)  # CuPy's store process is gone with its rank
    # Each step timed (issue 27): each end's worst rank's median and 99th percentile step, the
    # pair's the worse end's.
    for r in (ra, rb):
        assert r["steps"] >= nccl_group.MIN_ITERS and 0 < r["step_p50_ms"] <= r["step_p99_ms"], r
    assert merged(ra, rb)["step_p99_ms"] == max(ra["step_p99_ms"], rb["step_p99_ms"])


def test_bus_bandwidth_is_nccl_tests_allreduce_figure():
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n. 1 GB in 10 ms over 16 ranks: algbw
    # 100 GB/s, busbw 187.5 GB/s; over 2 ranks busbw equals algbw.
    assert nccl_group.bus_bandwidth(10**9, 0.01, 16) == pytest.approx(187.5)
    assert nccl_group.bus_bandwidth(10**9, 0.01, 2) == pytest.approx(100.0)


def test_bus_bandwidth_of_the_all_gather_and_all_to_all_is_nccl_tests_figure():
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw * (n-1)/n for AllGather and AllToAll.
    for op in ("all_gather", "all_to_all"):
        assert nccl_group.bus_bandwidth(10**9, 0.01, 16, op) == pytest.approx(93.75)
        assert nccl_group.bus_bandwidth(10**9, 0.01, 2, op) == pytest.approx(50.0)


@pytest.mark.parametrize("op", ["all_gather", "all_to_all"])
def test_a_healthy_pair_runs_the_all_gather_and_the_all_to_all_and_checks_every_element(op):
    ra, rb, _, port = pair(op=op)
    for r in (ra, rb):
        assert r["error"] is None and r["value"] > 0 and r["gpus"] == 4 and r["steps"] >= nccl_group.MIN_ITERS, r
    assert merged(ra, rb)["value"] == min(ra["value"], rb["value"])
    assert port_is_free(port) and port_is_free(port + 1)


def test_an_unknown_collective_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="no collective 'all_sum'"):
        nccl_group.run(0, "127.0.0.1", free_port(), 0.01, op="all_sum")


def test_one_wrong_element_in_one_ranks_all_gather_chunk_shows_at_that_chunk_on_every_rank():
    """All-gather: rank 3's chunk (the last of four, 256 elements each) lands in every rank's result
    at elements 768-1023; one wrong element there is wrong everywhere, at that offset."""
    chunk = BYTES // 4 // 4
    ra, rb, _, _ = pair(fault="corrupt-send:3:first", op="all_gather")
    for r, ranks in ((ra, (0, 1)), (rb, (2, 3))):
        assert r["value"] is None, r
        for rank in ranks:
            assert (f"rank {rank}: wrong all-gather result: 1 of {BYTES // 4} elements wrong (element {3 * chunk}: "
                    f"{allgather_chunk(3) + 1:g}, want {allgather_chunk(3):g})") in r["error"]
    assert nccl_group.leads_with_wrong_result(ra["error"])


def test_a_wrong_element_in_the_chunk_rank_3_sends_rank_0_shows_on_rank_0_alone():
    """All-to-all: each rank sends every other a chunk of its own; rank 3's first row goes to rank
    0, which finds it at row 3 of its result. Only node A (rank 0) sees the fault; B's ranks got
    theirs right. The values differ per sender and receiver, so a chunk sent to the wrong rank
    would be wrong by more than one."""
    chunk = BYTES // 4 // 4
    ra, rb, _, _ = pair(fault="corrupt-send:3:first", op="all_to_all")
    assert ra["value"] is None and ra["error"] == (
        f"rank 0: wrong all-to-all result: 1 of {BYTES // 4} elements wrong (element {3 * chunk}: "
        f"{alltoall_chunk(3, 0, 4) + 1:g}, want {alltoall_chunk(3, 0, 4):g}) in {ra['error'].split(' in ')[1]}")
    assert rb["error"] is None and rb["value"] > 0
    m = merged(ra, rb)
    assert m["value"] is None and m["error"] == f"a: {ra['error']}"
    assert len({alltoall_chunk(i, j, 4) for i in range(4) for j in range(4)}) == 16


# ---------------------------------------------------------------------- wrong results


@pytest.mark.parametrize("where,element", [("first", 0), ("last", BYTES // 4 - 1), ("random", None)])
def test_one_wrong_element_in_one_ranks_contribution_fails_the_pair_with_the_count(where, element):
    ra, rb, _, _ = pair(fault=f"corrupt-send:3:{where}")
    for r, ranks in ((ra, (0, 1)), (rb, (2, 3))):
        assert r["value"] is None, r
        for rank in ranks:  # every rank's result holds the bad sum at that element
            assert f"rank {rank}: wrong all-reduce result: 1 of {BYTES // 4} elements wrong (element " in r["error"]
        i = int(r["error"].split("(element ")[1].split(":")[0])
        assert i == element if element is not None else 0 <= i < BYTES // 4
        want = allreduce_expected(4)
        assert f": {want + 1:g}, want {want:g})" in r["error"]
    m = merged(ra, rb)
    assert m["value"] is None and m["error"].startswith("a: rank 0: wrong") and "; b: rank 2: wrong" in m["error"]


def test_a_result_wrong_on_one_gpu_of_node_b_fails_the_pair():
    # The sum is right everywhere but rank 3's own copy of it (a fault local to one GPU of B): only
    # B can see it, so B's figure must count.
    ra, rb, _, _ = pair(fault="corrupt-recv:3:last")
    assert ra["error"] is None and ra["value"] > 0
    assert rb["value"] is None and rb["error"].startswith(f"rank 3: wrong all-reduce result: 1 of {BYTES // 4} "
                                                          f"elements wrong (element {BYTES // 4 - 1}:")
    m = merged(ra, rb)
    assert m["value"] is None and m["error"] == f"b: {rb['error']}"


# ---------------------------------------------------------------------- ranks that hang, raise or die


@pytest.mark.slow
def test_a_hung_rank_is_bounded_at_both_ends_and_killed_with_its_store():
    ra, rb, wall, port = pair(fault="hang:0", start_s=HANG_S)
    assert ra["error"] == f"ranks 0, 1 gave no result within {HANG_S + SECONDS:g} s (hung; killed)", ra
    # B's ranks hang too, or see CuPy's store go when A kills its rank 0: named either way.
    assert rb["value"] is None and named(rb["error"], 2) and named(rb["error"], 3), rb
    assert wall < HANG_S + SECONDS + nccl_group.KILL_S + 10
    assert port_is_free(port)  # rank 0 was killed with its group: no store left holding the port


@pytest.mark.slow
def test_a_rank_that_raises_is_named_and_the_rest_are_bounded():
    ra, rb, _, _ = pair(fault="raise:1", start_s=HANG_S)
    assert "rank 1: RuntimeError: NCCL Error 1: unhandled cuda error" in ra["error"]
    assert "rank 0 gave no result" in ra["error"]
    # B's ranks hang in the collective; once A's ranks are killed (CuPy's store with rank 0), those
    # still talking to it may see an error instead: either way each is named and B's figure fails.
    assert rb["value"] is None and named(rb["error"], 2) and named(rb["error"], 3)
    m = merged(ra, rb)
    assert m["error"] == f"a: {ra['error']}; b: {rb['error']}"


@pytest.mark.slow
def test_a_rank_that_dies_is_told_from_one_that_hangs():
    ra, rb, _, _ = pair(fault="die:3", start_s=HANG_S)
    assert "rank 3 exited (code 3) without a result" in rb["error"] and named(rb["error"], 2)
    assert "ranks 0, 1 gave no result" in ra["error"]


# ---------------------------------------------------------------------- the two ends disagree


def test_different_gpu_counts_are_found_before_nccl_starts(tmp_path):
    # World sizes 4 and 6 would leave CuPy's store barrier waiting forever: the ends compare first.
    ra, rb, wall, _ = pair(gpus="a=2,b=3", log=tmp_path)
    want = "GPU counts differ: a has 2, b has 3"
    assert ra["error"].startswith(want) and rb["error"] == ra["error"] and ra["value"] is None
    assert not list(tmp_path.iterdir())  # no rank started
    assert merged(ra, rb)["error"] == ra["error"]  # said once, not per end


def test_the_store_port_in_use_on_a_is_an_error_at_both_ends():
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        a = start(0, port, node_env("a"))
        b = start(1, port, node_env("b"))
        ra, rb = finish(a), finish(b)
    assert ra["error"] == rb["error"]
    assert ra["error"].startswith(f"cannot host the NCCL rendezvous (CuPy's TCP store) on a at 127.0.0.1:{port}: "
                                  "Address already in use")


@pytest.mark.parametrize("index,missing", [(0, "b"), (1, "a")])
def test_a_peer_that_never_comes_is_bounded(index, missing):
    port = free_port()
    t0 = time.monotonic()
    r = finish(start(index, port, node_env("ab"[index]), start_s=2))
    assert r["error"] == f"{missing} did not come to the NCCL rendezvous at 127.0.0.1:{port + 1} within 2 s"
    assert time.monotonic() - t0 < 2 + 10


def test_a_node_name_that_is_loopback_here_is_named_as_the_likely_reason_the_peer_never_came():
    """Debian and Ubuntu map a machine's own name to 127.0.1.1: given as node A's address, B waits
    on itself. Where the peer never comes and A's name is a loopback address here, the error says
    so; an address given as such (127.0.0.1 above, both ends on one machine) is taken as meant."""
    port = free_port()
    r = finish(start(1, port, node_env("b"), start_s=2, host_a="localhost"))
    assert r["error"].startswith(f"a did not come to the NCCL rendezvous at localhost:{port + 1} within 2 s (localhost "
                                 "is 127.0.0.1 on this node, a loopback address: each node meets only itself there; "
                                 "give the nodes' addresses by IP")


def test_no_gpu_or_no_cupy_on_either_end_skips_the_pair_saying_where():
    ra, rb, _, _ = pair(gpus="a=2,b=0")
    assert ra == rb == {"skipped": "on b: no CUDA GPU on this node"}
    ra, rb, _, _ = pair(cupy_b=False)
    assert ra == rb and ra["skipped"].startswith("on b: CuPy is not installed")
    assert merged(ra, rb) == {"rail": "nccl", "direction": "both", "unit": "GB/s", "value": None,
                              "skipped": ra["skipped"]}


# ---------------------------------------------------------------------- groups of more than two nodes


def group(k: int, gpus: str = "2", fault: str = "", log: Path | None = None, op: str = "all_reduce",
          present: tuple[int, ...] | None = None, start_s: float = START_S) -> list[dict]:
    """k ends at once (nodes n0..n{k-1}), or only those `present`; their figures, in end order."""
    port, names = free_port(), ",".join(f"n{i}" for i in range(k))
    ends = [start(i, port, node_env(f"n{i}", gpus, fault, log), start_s, op=op, names=names)
            for i in (range(k) if present is None else present)]
    return [finish(e) for e in ends]


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "all_to_all"])
def test_a_group_of_three_nodes_lays_ranks_out_across_all_three_and_every_end_checks_its_own(tmp_path, op):
    results = group(3, log=tmp_path, op=op)
    for r in results:
        assert r["error"] is None and r["value"] > 0 and r["gpus"] == 6, r
    joined = {p.name: json.loads(p.read_text()) for p in tmp_path.iterdir() if p.name.startswith("rank")}
    assert {r: (j["node"], j["device"], j["world"]) for r, j in joined.items()} == {
        f"rank{2 * i + g}": (f"n{i}", g, 6) for i in range(3) for g in range(2)}


def test_a_wrong_chunk_in_a_group_of_four_names_its_rank_where_it_lands():
    # Rank 5 (node n2's second GPU) sends rank 0 a wrong element: only n0 sees it, naming rank 0.
    # (The other ends may say what followed: rank 0 hosts the store, and once it has its result and
    # leaves, a rank still in the last vote loses the store: a consequence, never a wrong result.)
    results = group(4, fault="corrupt-send:5:first", op="all_to_all")
    assert named(results[0]["error"], 0) and "wrong all-to-all result" in results[0]["error"], results
    assert not any("wrong" in (r["error"] or "") for r in results[1:]), results
    one = one_nccl_figure(("n0", "n1", "n2", "n3"), [(f"n{i}", r) for i, r in enumerate(results)], "alltoall")
    assert one["error"].startswith("n0: rank 0: wrong all-to-all result") and one["value"] is None


def test_an_end_that_never_comes_is_named_by_the_host_which_tells_the_ends_that_came():
    t0 = time.monotonic()
    results = group(3, present=(0, 1), start_s=2)
    want = "n2 did not come to the NCCL rendezvous at 127.0.0.1:"
    assert all(r["error"].startswith(want) for r in results), results
    assert time.monotonic() - t0 < 2 + 15


def test_different_gpu_counts_across_a_group_are_said_node_by_node(tmp_path):
    results = group(3, gpus="n0=2,n1=2,n2=1", log=tmp_path)
    want = "GPU counts differ: n0 has 2, n1 has 2, n2 has 1"
    assert all(r["error"].startswith(want) for r in results) and not list(tmp_path.iterdir())


def test_a_stranger_at_the_rendezvous_is_ignored_and_an_end_said_twice_is_an_error():
    port, names = free_port(), "n0,n1,n2"
    host = start(0, port, node_env("n0"), start_s=4, names=names)
    deadline = time.monotonic() + 20
    while True:  # garbage, then an end out of range, then end 1 twice
        try:
            with socket.create_connection(("127.0.0.1", port + 1), timeout=2) as c:
                c.sendall(b"not json\n")
            break
        except ConnectionRefusedError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    with socket.create_connection(("127.0.0.1", port + 1), timeout=2) as c:
        c.sendall(b"[" * 100_000 + b"\n")  # nested past the decoder's depth: a RecursionError ended the host
    with socket.create_connection(("127.0.0.1", port + 1), timeout=2) as c:
        c.sendall(json.dumps({"end": 7, "gpus": 2}).encode() + b"\n")
    first = socket.create_connection(("127.0.0.1", port + 1), timeout=2)
    first.sendall(json.dumps({"end": 1, "gpus": 2, "unavailable": None}).encode() + b"\n")
    with socket.create_connection(("127.0.0.1", port + 1), timeout=2) as c:
        c.sendall(json.dumps({"end": 1, "gpus": 2}).encode() + b"\n")
    r = finish(host)
    assert r["error"].startswith("end 1 (n1) came twice to the NCCL rendezvous"), r
    assert json.loads(first.makefile("rb").readline())["error"] == r["error"]  # told, not left waiting
    first.close()


@pytest.mark.parametrize("gpus", [0, -1, "8", 2.0, None, 10**9, True])
def test_an_ends_gpu_count_that_is_no_count_is_an_error_not_a_world(gpus):
    what, why = nccl_group._agree([{"gpus": 2}, {"gpus": gpus}], ("a", "b"))
    assert what == "error" and why.startswith("b said it has"), why


# ---------------------------------------------------------------------- the merge and the report


def test_the_pairs_figure_is_the_slower_ends_and_an_end_that_said_nothing_fails_it():
    ok = {"value": 40.0, "unit": "GB/s", "error": None}
    assert merged(ok, {**ok, "value": 35.5})["value"] == 35.5
    assert one_nccl_figure(("a", "b"), [("a", ok)])["error"] == "b: no all-reduce figure"
    assert merged(ok, {"value": None, "error": None})["error"] == "b: no all-reduce figure"
    end = {"nodeqc-fabric-worker": 1, "identity": {}}
    r = merge(1, "a", "b", [{**end, "node": "a", "figures": [{"rail": "nccl", "direction": "both", **ok}]},
                            {**end, "node": "b", "figures": [{"rail": "nccl", "direction": "both", **ok,
                                                              "value": 30.0}]}], [], Floors(nccl_busbw_gbps=35.0))
    assert [(m.rail, m.value, m.floor, m.passed) for m in r.measurements] == [("nccl", 30.0, 35.0, False)]


def test_the_round_allows_the_all_reduce_its_whole_bound():
    w = Work(tests=["nccl"], seconds=10, floors=Floors(nccl_busbw_gbps=1))
    assert w.round_timeout_s > nccl_group.time_bound_s(10)
    assert Work(tests=["nccl"], seconds=1, floors=Floors(), nccl_bytes=4096).worker_args(("a", "b"), 0)[-2:] == [
        "--nccl-bytes", "4096"]


def test_fabric_runs_the_all_reduce_through_its_workers_and_reports_it(tmp_path):
    # nodeqc fabric -> host launcher -> `nodeqc fabric worker` on each "node" -> nccl_group.run, with
    # one wrong element planted in B's rank 3's result: the pair fails NCCL, saying where.
    args = ["fabric", "--hosts", "a,b", "--launch", "env FAKE_CUPY_NODE={host}", "--nodeqc", f"{sys.executable} -m nodeqc",
            "--tests", "nccl", "--min-nccl-busbw", "0.000001", "--seconds", str(SECONDS), "--nccl-bytes", str(BYTES),
            "--rounds", "1", "--seed", "1", "--address", "a=127.0.0.1", "--address", "b=127.0.0.1", "--out", str(tmp_path)]
    env = {"PYTHONPATH": os.pathsep.join([str(FAKE), str(ROOT)]), "FAKE_CUPY_GPUS": "2"}
    good = cli(*args, env={**env, "FAKE_NCCL_FAULT": ""}, timeout=120)
    assert good.returncode == 0, good.stderr
    bad = cli(*args, env={**env, "FAKE_NCCL_FAULT": "corrupt-recv:3:first"}, timeout=120)
    # Two nodes and one failed test: the scoring cannot tell which node it is (exit 2, inconclusive).
    assert bad.returncode == 2 and "nccl: 1 of 1 tests failed" in bad.stderr, bad.stderr
    import base64

    pred = json.loads(base64.b64decode(json.loads(Path(bad.stdout.strip().splitlines()[-1]).read_text())["payload"]))[
        "predicate"]
    (row,) = pred["pairs"]
    assert row["failed"] == ["nccl"]
    # rank 3 is on the pair's second node (which of a, b that is, the seeded schedule says)
    assert row["rails"]["nccl"]["both"]["error"].startswith(f"{row['b']}: rank 3: wrong all-reduce result: 1 of 1024 "
                                                            "elements wrong (element 0: 11, want 10)")


def test_the_end_that_found_a_wrong_result_leads_the_pairs_error():
    """The other end's lost store is the consequence of a rank that checked its result and left
    (ConnectionError first, the wrong result after it, in a whole-suite run, 2026-11-27): the
    finding leads, whichever end it came from."""
    lost = {"value": None, "error": "rank 0: ConnectionError: the store closed the connection"}
    wrong = {"value": None, "error": "rank 3: wrong all-reduce result: 1 of 1024 elements wrong (element 0: 11, "
                                     "want 10) in 5 of 5 results; rank 2: ConnectionError: the store closed the connection"}
    both = one_nccl_figure(("a", "b"), [("a", lost), ("b", wrong)])["error"]
    assert both.startswith("b: rank 3: wrong all-reduce result") and "; a: rank 0: ConnectionError" in both
    assert one_nccl_figure(("a", "b"), [("a", wrong), ("b", lost)])["error"].startswith("a: rank 3: wrong")


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _same_command_below(pid: int) -> list[int]:
    """The processes under `pid` whose command line is its own (its forks), as `pkill -f` finds them."""
    def cmdline(p: int) -> bytes:
        try:
            return Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            return b""

    found, mine = [], cmdline(pid)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid and cmdline(int(entry.name)) == mine:
                found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGKILL", "pkill"])
def test_ranks_die_with_a_worker_that_is_killed(tmp_path, how):
    # A launcher kills a worker that overran its round (SIGKILL), or an operator kills it by name
    # (`pkill -f`, SIGTERM to every process with its command line, its own forks among them): its
    # ranks, hung in the collective, must not stay behind holding their GPUs, nor rank 0's store its
    # port (a store left by a test run killed so held its port for 47 minutes, 2026-11-28).
    import signal

    port = free_port()
    ends = [start(i, port, node_env("ab"[i], fault="hang:0", log=tmp_path)) for i in (0, 1)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.iterdir())) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)  # the files are written as the ranks join; their contents just after
    pids = [json.loads(p.read_text())["pid"] for p in tmp_path.iterdir() if p.name.startswith("rank")]
    assert len(pids) == 4
    for e in ends:
        if how == "pkill":
            for fork in _same_command_below(e.pid):
                os.kill(fork, signal.SIGTERM)
        e.send_signal(signal.SIGKILL if how == "SIGKILL" else signal.SIGTERM)
        e.wait(timeout=10)  # (its pipes stay open while a rank holds them: no communicate)
        e.stdout.close()
        e.stderr.close()
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in pids)
    # CuPy's store (forked by rank 0) went with it: the port is free for the next run.
    while not port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert port_is_free(port)


def test_nccl_bytes_below_one_float_is_a_usage_error():
    p = cli("fabric", "--hosts", "a,b", "--launch", "env H={host}", "--tests", "nccl", "--min-nccl-busbw", "1",
            "--nccl-bytes", "2")
    assert p.returncode == 2 and p.stderr.strip() == \
        "nodeqc: argument --nccl-bytes: expected a whole number from 4 to 1099511627776, got '2' (see nodeqc fabric --help)"


# ---------------------------------------------------------------------- all-gather and all-to-all (issue 27)


def test_each_collective_is_its_own_figure_judged_against_its_own_floor():
    ok = {"value": 300.0, "unit": "GB/s", "error": None}
    end = {"nodeqc-fabric-worker": 1, "identity": {}}
    figures = [{"rail": "nccl", "direction": "both", **ok}, {"rail": "allgather", "direction": "both", **ok},
               {"rail": "alltoall", "direction": "both", **ok, "value": 50.0}]
    floors = Floors(nccl_busbw_gbps=365.0, allgather_busbw_gbps=250.0, alltoall_busbw_gbps=59.0)
    r = merge(1, "a", "b", [{**end, "node": "a", "figures": figures}, {**end, "node": "b", "figures": figures}], [],
              floors)
    assert sorted((m.rail, m.value, m.floor, m.passed) for m in r.measurements) == [
        ("allgather", 300.0, 250.0, True), ("alltoall", 50.0, 59.0, False), ("nccl", 300.0, 365.0, False)]
    assert one_nccl_figure(("a", "b"), [("a", ok)], "alltoall")["error"] == "b: no all-to-all figure"
    # An end that prints a collective the run did not ask for is refused, as for any test.
    r = merge(1, "a", "b", [{**end, "node": "a", "figures": figures[:1]},
                            {**end, "node": "b", "figures": figures[:2]}], [], floors, tests=["nccl"])
    assert r.error and [(x["node"], x["why"]) for x in r.refused] == [
        ("b", "a allgather figure (allgather both), a test this run did not ask for")]


def test_a_collective_without_a_floor_is_a_usage_error_naming_the_profiles_that_carry_one():
    p = cli("fabric", "--hosts", "a,b", "--launch", "env H={host}", "--tests", "alltoall", "--profile", "hgx-b200")
    assert p.returncode == 2 and p.stderr.strip() == (
        "nodeqc: --tests alltoall needs a floor: profile hgx-b200 sets no [nic] min_fabric_alltoall_busbw_gbps; give "
        "--min-alltoall-busbw GBPS (hgx-h100 carries one from NVIDIA's measured two-node figure)")
    p = cli("fabric", "--hosts", "a,b", "--launch", "env H={host}", "--tests", "allgather", "--min-allgather-busbw", "0")
    assert p.returncode == 2 and p.stderr.strip() == "nodeqc: --min-allgather-busbw 0: expected a number above zero"


def test_fabric_runs_the_all_gather_and_all_to_all_through_its_workers_and_names_a_misdelivered_chunk(tmp_path):
    """nodeqc fabric -> host launcher -> `nodeqc fabric worker` on each "node" -> nccl_group.run for
    each collective in turn on the same ports. Healthy: both pass their floors (the hgx-h100
    profile's, the fake's rates replaced by tiny floors). With one element of the chunk rank 3 sends
    rank 0 wrong (the fake plants it in what rank 3 sends to every collective): the all-gather is
    wrong on every rank, at rank 3's chunk; the all-to-all only on rank 0, on the pair's first end."""
    args = ["fabric", "--hosts", "a,b", "--launch", "env FAKE_CUPY_NODE={host}", "--nodeqc", f"{sys.executable} -m nodeqc",
            "--tests", "allgather,alltoall", "--min-allgather-busbw", "0.000001", "--min-alltoall-busbw", "0.000001",
            "--seconds", str(SECONDS), "--nccl-bytes", str(BYTES), "--rounds", "1", "--seed", "1",
            "--address", "a=127.0.0.1", "--address", "b=127.0.0.1", "--out", str(tmp_path)]
    env = {"PYTHONPATH": os.pathsep.join([str(FAKE), str(ROOT)]), "FAKE_CUPY_GPUS": "2"}
    good = cli(*args, env={**env, "FAKE_NCCL_FAULT": ""}, timeout=180)
    assert good.returncode == 0, good.stderr
    import base64

    def row_of(p):
        pred = json.loads(base64.b64decode(json.loads(Path(p.stdout.strip().splitlines()[-1]).read_text())["payload"]))
        return pred["predicate"]["pairs"][0]

    row = row_of(good)
    assert set(row["rails"]) == {"allgather", "alltoall"} and not row.get("failed")
    bad = cli(*args, env={**env, "FAKE_NCCL_FAULT": "corrupt-send:3:first"}, timeout=180)
    assert bad.returncode == 2 and "inconclusive: allgather: 1 of 1 tests failed" in bad.stderr, bad.stderr
    row = row_of(bad)
    assert sorted(row["failed"]) == ["allgather", "alltoall"], row
    gather, scatter = row["rails"]["allgather"]["both"]["error"], row["rails"]["alltoall"]["both"]["error"]
    assert gather.startswith(f"{row['a']}: rank 0: wrong all-gather result: 1 of 1024 elements wrong (element 768: 5, "
                             "want 4)") and f"; {row['b']}: rank 2: wrong all-gather result" in gather, gather
    assert scatter.startswith(f"{row['a']}: rank 0: wrong all-to-all result: 1 of 1024 elements wrong (element 768: "
                              "14, want 13)") and f"; {row['b']}: " not in scatter, scatter
