"""The per-pair worker and what the launchers do with its output: which end a node is, merging the
two ends' figures into a pair result (rails by identity, the floor from the slower end), the
launchers' command lines, ib_write_bw output as perftest prints it (the Kubernetes manifest: test_fabric_k8s.py)."""

import json
import os
import sys

import pytest

from nodeqc.backends.nic import parse_ib_write_bw
from nodeqc.core.errors import UsageError
from nodeqc.fabric import worker
from nodeqc.fabric.launchers import HostLauncher, SlurmLauncher, Work, merge
from nodeqc.fabric.scoring import Floors
from nodeqc.fabric.worker import MARKER

FLOORS = Floors(rdma_fraction=0.9, tcp_fraction=0.5)


@pytest.mark.parametrize("env,index", [({"SLURMD_NODENAME": "b"}, 1), ({"NODEQC_NODE": "a"}, 0),
                                       ({"SLURM_PROCID": "1"}, 1)])
def test_which_end(monkeypatch, env, index):
    for k in ("SLURMD_NODENAME", "NODEQC_NODE", "SLURM_PROCID"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert worker.which_end(("a", "b"), None) == index
    assert worker.which_end(("a", "b"), 0) == 0


def test_which_end_unknown_is_a_usage_error(monkeypatch):
    for k in ("SLURMD_NODENAME", "NODEQC_NODE", "SLURM_PROCID"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(UsageError, match="pass --index"):
        worker.which_end(("no-such-a", "no-such-b"), None)


def _end(node, figures):
    return {worker.MARKER: 1, "node": node, "index": 0, "identity": {"hostname": node, "system_serial": f"S-{node}"},
            "figures": figures}


def _rails(*items):
    return [{"rail": r, "rate": rate, "subnet": subnet} for r, rate, subnet in items]


def test_merge_matches_rails_by_identity_and_takes_the_faster_ends_rate():
    a = _end("a", [{"rail": "mlx5_0", "direction": "a>b", "value": 390.0, "unit": "Gb/s", "rate": 400.0},
                   {"rail": "mlx5_3", "direction": "a>b", "value": 150.0, "unit": "Gb/s", "rate": 400.0}])
    a["rails"] = _rails(("mlx5_0", 400.0, "fe80:0000:0000:0000"), ("mlx5_3", 400.0, "fe80:0000:0000:0000"))
    b = _end("b", [{"rail": "mlx5_0", "direction": "b>a", "value": 190.0, "unit": "Gb/s", "rate": 200.0},
                   {"rail": "mlx5_3", "direction": "b>a", "value": 391.0, "unit": "Gb/s", "rate": 400.0},
                   {"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s", "rate": 10.0}])
    b["rails"] = _rails(("mlx5_0", 200.0, "fe80:0000:0000:0000"), ("mlx5_3", 400.0, "fe80:0000:0000:0000"))
    r = merge(3, "a", "b", [a, b], [], FLOORS)
    got = {(m.rail, m.direction): (m.value, m.floor, m.passed) for m in r.measurements}
    # b's mlx5_0 trained at 200: it does not lower its own pair's floor (0.9 x 400, the faster end)
    assert got[("mlx5_0", "a>b")] == (390.0, 360.0, True)
    assert got[("mlx5_0", "b>a")] == (190.0, 360.0, False)
    assert got[("mlx5_3", "a>b")] == (150.0, 360.0, False)
    assert got[("tcp", "b>a")] == (9.0, 5.0, True)
    assert r.rails() == {"mlx5_0": False, "mlx5_3": False, "tcp": True}
    assert r.identities["a"]["system_serial"] == "S-a"


def test_a_port_down_shifts_no_rail_and_its_rail_has_no_counterpart():
    # a's mlx5_1 is down. By position, a's mlx5_2 would have met b's mlx5_1 and every rail after it
    # would be a wrong pair; by identity, mlx5_0 and mlx5_2 meet their own, and mlx5_1 is a finding.
    refused = "ib_write_bw: Couldn't connect to 10.0.0.1:16205"
    a = _end("a", [{"rail": "mlx5_0", "direction": "a>b", "value": 392.0, "unit": "Gb/s", "rate": 400.0},
                   {"rail": "mlx5_2", "direction": "a>b", "value": 391.0, "unit": "Gb/s", "rate": 400.0}])
    a["rails"] = _rails(("mlx5_0", 400.0, None), ("mlx5_2", 400.0, None))
    b = _end("b", [{"rail": "mlx5_0", "direction": "b>a", "value": 390.0, "unit": "Gb/s", "rate": 400.0},
                   {"rail": "mlx5_1", "direction": "b>a", "value": None, "unit": "Gb/s", "rate": 400.0, "error": refused},
                   {"rail": "mlx5_2", "direction": "b>a", "value": 393.0, "unit": "Gb/s", "rate": 400.0}])
    b["rails"] = _rails(("mlx5_0", 400.0, None), ("mlx5_1", 400.0, None), ("mlx5_2", 400.0, None))
    r = merge(1, "a", "b", [a, b], [], FLOORS)
    assert r.rails() == {"mlx5_0": True, "mlx5_1": False, "mlx5_2": True}
    missing = [m for m in r.measurements if m.rail == "mlx5_1"]
    assert [m.direction for m in missing] == ["a>b", "b>a"] and all(m.value is None for m in missing)
    assert missing[0].error.startswith("no counterpart on a: b has mlx5_1 active, a has no active port on that rail")
    assert refused not in " ".join(m.error or "" for m in r.measurements)


def test_a_rail_on_another_subnet_is_named():
    a, b = _end("a", []), _end("b", [])
    a["rails"] = _rails(("mlx5_0", 400.0, "fe80:0000:0000:0001"))
    b["rails"] = _rails(("mlx5_0", 400.0, "fe80:0000:0000:0002"))
    r = merge(1, "a", "b", [a, b], [], FLOORS)
    assert r.rails() == {"mlx5_0": False}
    assert "subnet fe80:0000:0000:0001 at a but fe80:0000:0000:0002 at b" in r.measurements[0].error


def test_rail_identity_and_its_ports():
    assert worker.rail_id("mlx5_3", 1) == "mlx5_3" and worker.rail_id("mlx5_0", 2) == "mlx5_0/2"
    assert worker.rail_port_offset("mlx5_3") == 12 and worker.rail_port_offset("mlx5_0/2") == 1
    assert worker.rail_port_offset("irdma") is None and worker.rail_port_offset("mlx5_100") is None


def test_merge_without_a_floor_skips_and_a_missing_end_is_an_error():
    a = _end("a", [])
    b = _end("b", [{"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s", "rate": None}])
    r = merge(1, "a", "b", [a, b], [], FLOORS)
    assert r.measurements[0].skipped and "no floor" in r.measurements[0].skipped and r.rails() == {}
    r = merge(1, "a", "b", [a], ["exit 127: nodeqc: command not found"], FLOORS)
    assert r.error.startswith("b: worker gave no result: exit 127") and not r.measurements


def test_launcher_command_lines():
    work = Work(["tcp", "rdma"], 10, FLOORS, nodeqc=["nodeqc"], addresses={"a": "10.0.0.1"})
    args = work.worker_args(("a", "b"), slot=2)
    assert args[:4] == ["fabric", "worker", "--pair", "a,b"] and "--port" in args
    assert args[args.index("--port") + 1] == str(15201 + 2 * 4) and args[args.index("--address") + 1] == "10.0.0.1,b"
    # One srun step per end: a step's output is its one node's (lines.bind), never a shared one.
    slurm = SlurmLauncher().commands(("a", "b"), args, work)
    assert [c[:6] for c in slurm] == [["srun", "--nodes=1", "--ntasks=1", f"--nodelist={n}", "--exclusive",
                                       "--job-name=nodeqc-fabric"] for n in ("a", "b")]
    assert [c[-2:] for c in slurm] == [["--index", "0"], ["--index", "1"]]
    hosts = HostLauncher("ip netns exec {host}").commands(("a", "b"), args, work)
    assert [c[:5] for c in hosts] == [["ip", "netns", "exec", "a", "nodeqc"], ["ip", "netns", "exec", "b", "nodeqc"]]
    assert [c[-2:] for c in hosts] == [["--index", "0"], ["--index", "1"]]


def test_a_missing_tool_is_a_skip_that_says_what_to_install(monkeypatch):
    monkeypatch.setattr(worker, "tool_path", lambda tool: None)
    job = worker.Job(("a", "b"), 1, ["tcp", "rdma"], 1, 1, 5201, ("a", "b"))
    out = worker.run(job)
    assert [(f["rail"], f["skipped"].split(":")[0]) for f in out["figures"]] == [
        ("tcp", "iperf3 is not installed"), ("tcp", "iperf3 is not installed"), ("rdma", "ib_write_bw is not installed")]
    assert "apt-get install perftest" in out["figures"][-1]["skipped"]


def test_worker_usage_errors():
    from conftest import cli

    for args, message in ((["--pair", "a"], "expected two different node names"),
                          (["--pair", "a,a"], "expected two different node names"),
                          (["--pair", "a,b", "--tests", "udp"], "expected some of tcp, rdma, nccl, allgather, alltoall"),
                          (["--pair", "a,b", "--address", "x"], "expected 2 addresses, one an end"),
                          (["--group", "a,b,c", "--tests", "nccl", "--address", "x,y"], "expected 3 addresses, one an end"),
                          (["--group", "a,b,a"], "expected 2 to 1024 different node names"),
                          (["--group", "a"], "expected 2 to 1024 different node names"),
                          (["--group", "a,b,c", "--tests", "nccl,tcp"], "a group test runs NCCL's collectives only"),
                          (["--group", "a,b,c", "--tests", "nccl", "--index", "3"], "--index 3: expected 0 to 2"),
                          (["--pair", "a,b", "--index", "-1"], "--index -1: expected 0 to 1"),
                          # The 2026-11-29 audit: internal errors, or a worker run on port 0 that said it was fine.
                          (["--pairs", ","], "--pairs ,: expected pairs of two different node names"),
                          (["--groups", "a,b,a"], "--groups a,b,a: expected groups of 2 to 1024"),
                          (["--pair", "a,b", "--seconds", "nan"], "--seconds: expected a number above 0, at most 86400, got 'nan'"),
                          (["--pair", "a,b", "--seconds", "1e308"], "--seconds: expected a number above 0, at most 86400"),
                          (["--pair", "a,b", "--port", "0"], "--port: expected a whole number from 1 to 63535, got '0'"),
                          (["--pair", "a,b", "--streams", "129"], "--streams: expected a whole number from 1 to 128"),
                          (["--pair", "a,b", "--nccl-bytes", "-4"], "--nccl-bytes: expected a whole number from 1 to")):
        p = cli("fabric", "worker", *args)
        assert p.returncode == 2 and message in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr


# A real ib_write_bw --report_gbits run between two ConnectX-7 NDR hosts (csegpu1 -> csegpu2), from
# public notes found with the reference search (index id 58145501009; the index gives no repository
# name): perftest prints its CPU-frequency warning between the header and the figures.
IB_WRITE_BW_NDR = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: ON\t\tLock-free      : OFF
 ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF
 TX depth        : 128
 CQ Moderation   : 1
 CQE Poll Batch  : Dynamic
 Mtu             : 4096[B]
 Link type       : IB
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address: LID 0x01 QPN 0x004a PSN 0xbe352e RKey 0x1fff00 VAddr 0x007e6f4ed11000
 remote address: LID 0x02 QPN 0x0049 PSN 0x4601da RKey 0x1fff00 VAddr 0x007778e64eb000
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
Conflicting CPU frequency values detected: 3295.212000 != 4999.302000. CPU Frequency is not max.
 65536      5000             392.38             392.34 \t\t     0.748336
---------------------------------------------------------------------------------------
"""


def test_ib_write_bw_as_perftest_prints_it():
    gbps, error, detail = parse_ib_write_bw(IB_WRITE_BW_NDR)
    assert (gbps, error) == (392.34, None) and detail == {"bytes": 65536, "peak_gbps": 392.38}
    # 392 Gb/s on a 400 Gb/s NDR port: above the hgx-h100 profile's fail (375) and warn (380) floors.
    assert gbps >= 0.95 * 400


def test_a_node_with_a_port_down_is_named_on_that_rail_only():
    from itertools import combinations

    from nodeqc.fabric.report import fabric_checks
    from nodeqc.fabric.scoring import score

    nodes = ["n0", "n1", "n2", "n3", "n4"]
    have = {n: ["mlx5_0", "mlx5_1", "mlx5_2"] for n in nodes}
    have["n2"] = ["mlx5_0", "mlx5_2"]  # mlx5_1 down: by position its mlx5_2 would have met the peers' mlx5_1

    def end(node, peer, direction):
        out = _end(node, [{"rail": r, "direction": direction, "unit": "Gb/s", "rate": 400.0,
                           **({"value": 392.0} if r in have[peer] else {"value": None, "error": "Couldn't connect"})}
                          for r in have[node]])
        out["rails"] = _rails(*((r, 400.0, None) for r in have[node]))
        return out

    results = [merge(1, a, b, [end(a, b, "a>b"), end(b, a, "b>a")], [], FLOORS) for a, b in combinations(nodes, 2)]
    scores = score(nodes, results)
    assert scores.bad_ports == [("n2", "mlx5_1")] and not scores.bad_nodes and not scores.bad_links
    checks = {c.subject: c for c in fabric_checks(scores, results) if c.name == "fabric.node"}
    assert checks["n2"].code == "FABRIC_NODE_RAIL" and "no active port on mlx5_1 here" in checks["n2"].message
    assert all(checks[n].verdict.value == "pass" for n in nodes if n != "n2")


def test_a_worker_finds_its_pair_its_ports_and_addresses_in_the_rounds_plan(monkeypatch):
    # Kubernetes: every pod gets the whole round; it finds its pair from the node it landed on.
    for k in ("SLURMD_NODENAME", "NODEQC_NODE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NODEQC_NODE", "d")
    assert worker.pair_in_plan("a,b c,d", "a=10.0.0.1 d=10.0.0.4", 15201) == (("c", "d"), 15205, ("c", "10.0.0.4"))
    assert worker.which_end(("c", "d"), None) == 1
    monkeypatch.setenv("NODEQC_NODE", "x")
    with pytest.raises(UsageError, match="this node \\(x.*is in none of the round's pairs"):
        worker.pair_in_plan("a,b c,d", None, 15201)
    for plan, addresses, message in (("a,b c", None, "expected pairs of two different node names"),
                                     ("a,a", None, "expected pairs of two different node names"),
                                     ("a,b", "a:1", "expected NODE=ADDR items")):
        with pytest.raises(UsageError, match=message):
            worker.pair_in_plan(plan, addresses, 15201)
    work = Work(["tcp"], 2, FLOORS, nodeqc=["nodeqc"])
    args = work.plan_args((("a", "b"), ("c", "d")), {"a": "10.0.0.1", "b": "b", "c": "10.0.0.3", "d": "10.0.0.4"})
    assert args[:4] == ["fabric", "worker", "--pairs", "a,b c,d"]
    assert args[args.index("--addresses") + 1] == "a=10.0.0.1 c=10.0.0.3 d=10.0.0.4"
    assert args[args.index("--port") + 1] == "15201"


def test_a_worker_finds_its_group_in_the_rounds_plan(monkeypatch):
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    monkeypatch.setenv("NODEQC_NODE", "e")
    assert worker.pair_in_plan("a,b,c d,e,f", "e=10.0.0.5", 15201, group=True) == (
        ("d", "e", "f"), 15205, ("d", "10.0.0.5", "f"))
    assert worker.which_end(("d", "e", "f"), None) == 1
    for plan in ("a,b,c d", "a,b,a", "a,b,,c"):
        with pytest.raises(UsageError, match="--groups .*: expected groups of 2 to 1024 different node names"):
            worker.pair_in_plan(plan, None, 15201, group=True)
    with pytest.raises(UsageError, match="expected pairs of two"):
        worker.pair_in_plan("d,e,f", None, 15201)  # a group is no pair
    work = Work(["nccl"], 2, FLOORS, nodeqc=["nodeqc"], group=True)
    assert work.plan_args((("a", "b", "c"), ("d", "e", "f")), {})[:4] == ["fabric", "worker", "--groups", "a,b,c d,e,f"]


def test_worker_results_are_found_glued_together_and_among_other_text():
    from nodeqc.fabric.launchers import worker_results

    a = {MARKER: 1, "node": "n1", "figures": [{"rail": "tcp", "value": 0.095}]}
    b = {MARKER: 1, "node": "n3", "figures": []}
    # Two ends sharing one output, each writing its text and newline apart (PYTHONUNBUFFERED=1):
    # the CI log of stop 21, where this pair was "not tested" although both ends had reported.
    glued = json.dumps(a) + json.dumps(b) + "\n\n"
    assert worker_results(glued) == [a, b]
    noisy = ("srun: job step 7 started\n0: " + json.dumps(a) + " trailing words\n"
             + json.dumps({"not": "ours"}) + "\n" + json.dumps({MARKER: 2, "node": "x"}) + "\n"
             + json.dumps(b)[:-5] + "\n")  # the last end killed mid-write: no result, not an error
    assert worker_results(noisy) == [a]
    assert worker_results("") == [] and worker_results('{"' + MARKER + '": 1') == []
    # One end cut short, then the other's whole line: the whole one is still found.
    assert worker_results(json.dumps(b)[:-5] + "\n" + json.dumps(a) + "\n") == [a]


def test_a_worker_writes_its_line_and_newline_in_one_write(monkeypatch, tmp_path):
    from nodeqc.fabric import worker

    writes = []
    real_write = os.write
    monkeypatch.setattr(worker.os, "write", lambda fd, data: writes.append(data) or real_write(fd, data))
    with open(tmp_path / "out", "w", buffering=1) as out:
        monkeypatch.setattr(worker.sys, "stdout", out)
        out.write("before ")  # text the stream still buffers goes out first
        worker.write_line('{"x": 1}')
    assert writes == [b'{"x": 1}\n'] and (tmp_path / "out").read_text() == 'before {"x": 1}\n'


# ---------------------------------------------------------------------- merge, whole
# Pinned whole after a mutation run of launchers.py (benchmarks/RESULTS.md, thirteenth measurement):
# the floor taken from the first end's rate alone, a figure's error or unit dropped, and the
# no-counterpart and NCCL paths' particulars all passed the tests above.


def _measured(r):
    return [m.to_dict() for m in r.measurements]


def test_merge_takes_the_floor_from_the_faster_end_whichever_it_is():
    # A port that trained down must not lower its own pair's floor (issue 25: 400 and 100 Gb/s
    # ends made the floor 85, so 90 passed): the floor is the profile's fraction of the faster end.
    floors = Floors(rdma_fraction=0.9, tcp_fraction=0.5)
    a = _end("a", [{"rail": "mlx5_0", "direction": "a>b", "value": 370.0, "unit": "Gb/s", "rate": 400.0}])
    a["rails"] = _rails(("mlx5_0", 400.0, None))  # a is the faster end
    b = _end("b", [{"rail": "tcp", "direction": "a>b", "value": 4.0, "unit": "Gb/s", "rate": 10.0},
                   {"rail": "tcp", "direction": "b>a", "value": None, "unit": "Gb/s", "rate": 10.0,
                    "error": "iperf3: unable to connect"},
                   {"rail": "mlx5_0", "direction": "b>a", "value": 90.0, "unit": "Gb/s", "rate": 100.0}])
    b["rails"] = _rails(("mlx5_0", 100.0, None))
    b["index"] = 1
    r = merge(7, "a", "b", [a, b], [], floors)
    assert (r.round, r.a, r.b, r.error) == (7, "a", "b", None)
    assert _measured(r) == [
        {"rail": "mlx5_0", "direction": "a>b", "value": 370.0, "unit": "Gb/s", "floor": 360.0},
        {"rail": "tcp", "direction": "a>b", "value": 4.0, "unit": "Gb/s", "floor": 5.0},
        {"rail": "tcp", "direction": "b>a", "value": None, "unit": "Gb/s", "floor": 5.0,
         "error": "iperf3: unable to connect"},
        {"rail": "mlx5_0", "direction": "b>a", "value": 90.0, "unit": "Gb/s", "floor": 360.0}]
    assert r.rails() == {"mlx5_0": False, "tcp": False}
    # The same with the ends the other way round: the faster end still sets the floor.
    a["rails"], b["rails"] = _rails(("mlx5_0", 100.0, None)), _rails(("mlx5_0", 400.0, None))
    a["figures"][0]["value"], b["figures"][2]["value"] = 90.0, 370.0
    got = {(m.rail, m.direction): (m.value, m.floor) for m in merge(7, "a", "b", [a, b], [], floors).measurements}
    assert got[("mlx5_0", "a>b")] == (90.0, 360.0) and got[("mlx5_0", "b>a")] == (370.0, 360.0)
    assert r.identities == {"a": {"hostname": "a", "system_serial": "S-a"}, "b": {"hostname": "b", "system_serial": "S-b"}}
    # An end that says nothing of itself is known by its name.
    del a["identity"]
    assert merge(7, "a", "b", [a, b], [], floors).identities["a"] == {"hostname": "a"}


def test_a_rail_with_no_counterpart_in_full():
    a = _end("a", [])
    b = _end("b", [{"rail": "mlx5_1", "direction": "b>a", "value": None, "unit": "Gb/s",
                    "error": "ib_write_bw: Couldn't connect"},
                   {"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s", "rate": 10.0}])
    a["rails"] = []  # no active port at all
    b["rails"] = _rails(("mlx5_1", 400.0, None))
    r = merge(2, "a", "b", [a, b], [], FLOORS)
    why = "no counterpart on a: b has mlx5_1 active, a has no active port on that rail (none)"
    # The connection error on the rail gives way to the finding; the figures after it are kept.
    assert _measured(r) == [{"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s", "floor": 5.0}] + [
        {"rail": "mlx5_1", "direction": d, "value": None, "unit": "Gb/s", "floor": 360.0, "error": why}
        for d in ("a>b", "b>a")]
    # The same rail active on a only: its floor from a's rate.
    b["figures"] = []  # its figures were end B's; here it is end A
    r = merge(2, "b", "a", [a, b], [], Floors(rdma_fraction=0.5))
    assert {m.floor for m in r.measurements if m.rail == "mlx5_1"} == {200.0}
    a["rails"] = _rails(("mlx5_0", 400.0, None), ("mlx5_2", 400.0, None))
    b["rails"] = _rails(("mlx5_0", 400.0, None), ("mlx5_1", 400.0, None), ("mlx5_2", 400.0, None))
    errors = {m.error for m in merge(2, "a", "b", [a, b], [], FLOORS).measurements if m.rail == "mlx5_1"}
    assert errors == {"no counterpart on a: b has mlx5_1 active, a has no active port on that rail (mlx5_0, mlx5_2)"}


def test_no_floor_skips_a_figure_but_never_hides_its_error():
    a = _end("a", [{"rail": "rdma", "direction": "a>b", "value": None, "skipped": "ib_write_bw is not installed"}])
    b = _end("b", [{"rail": "tcp", "direction": "a>b", "value": None, "unit": "Gb/s", "error": "iperf3: refused"},
                   {"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s"}])
    r = merge(1, "a", "b", [a, b], [], FLOORS)  # no rate from either end: no floor for tcp
    assert _measured(r) == [
        {"rail": "rdma", "direction": "a>b", "value": None, "unit": "", "floor": None, "skipped": "ib_write_bw is not installed"},
        {"rail": "tcp", "direction": "a>b", "value": None, "unit": "Gb/s", "floor": None, "error": "iperf3: refused"},
        {"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s", "floor": None,
         "skipped": "no floor: the link's rate is not reported and no absolute floor was given"}]


def test_an_end_that_reports_no_figures_adds_none():
    a, b = _end("a", []), _end("b", [{"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s", "rate": 10.0}])
    del a["figures"]
    assert _measured(merge(1, "a", "b", [a, b], [], FLOORS)) == [
        {"rail": "tcp", "direction": "b>a", "value": 9.0, "unit": "Gb/s", "floor": 5.0}]


def test_a_missing_end_is_named_with_why():
    assert merge(4, "a", "b", [], [], FLOORS).error == "a, b: worker gave no result: no output"
    r = merge(4, "a", "b", [_end("b", [])], ["exit 1: srun: error", "killed"], FLOORS)
    assert (r.round, r.a, r.b, r.measurements) == (4, "a", "b", [])
    assert r.error == "a: worker gave no result: exit 1: srun: error; killed"


def test_merge_makes_one_nccl_figure_of_both_ends_and_keeps_the_rest():
    floors = Floors(tcp_gbps=5.0, nccl_busbw_gbps=150.0)
    a = _end("a", [{"rail": "nccl", "direction": "both", "value": 181.0, "unit": "GB/s"}])
    b = _end("b", [{"rail": "nccl", "direction": "both", "value": 179.5, "unit": "GB/s"},
                   {"rail": "tcp", "direction": "a>b", "value": 9.0, "unit": "Gb/s"}])
    r = merge(1, "a", "b", [a, b], [], floors)
    assert _measured(r) == [{"rail": "tcp", "direction": "a>b", "value": 9.0, "unit": "Gb/s", "floor": 5.0},
                            {"rail": "nccl", "direction": "both", "value": 179.5, "unit": "GB/s", "floor": 150.0}]
    b["figures"][0] = {"rail": "nccl", "direction": "both", "value": None, "unit": "GB/s", "error": "rank 9: NaN"}
    (nccl,) = [m for m in merge(1, "a", "b", [a, b], [], floors).measurements if m.rail == "nccl"]
    assert (nccl.value, nccl.error, nccl.floor) == (None, "b: rank 9: NaN", 150.0)
    a["figures"][0] = {"rail": "nccl", "direction": "both", "value": None, "skipped": "CuPy is not installed"}
    b["figures"][0] = {"rail": "nccl", "direction": "both", "value": None, "skipped": "one GPU: nothing to reduce"}
    (nccl,) = [m for m in merge(1, "a", "b", [a, b], [], floors).measurements if m.rail == "nccl"]
    assert nccl.skipped == "CuPy is not installed; one GPU: nothing to reduce" and nccl.error is None


# ---------------------------------------------------------------------- a client before its server


def _client(tmp_path, *answers):
    """A stand-in client answering in turn what iperf3 -J said, once each call."""
    script = tmp_path / "client.py"
    script.write_text("import json, pathlib, sys\n"
                      f"count = pathlib.Path({str(tmp_path / 'calls')!r})\n"
                      "n = int(count.read_text()) if count.exists() else 0\n"
                      "count.write_text(str(n + 1))\n"
                      f"answers = {list(answers)!r}\n"
                      "print(json.dumps(answers[min(n, len(answers) - 1)]))\n")
    return [sys.executable, str(script)]


def _parse(text):
    said = json.loads(text)
    return (None, f"iperf3: {said['error']}", {}) if "error" in said else (said["gbps"], None, {})


@pytest.mark.parametrize("first", ["unable to connect to server: Connection refused",
                                   "unable to receive control message: Connection reset by peer",
                                   "the server is busy running a test. try again later"])
def test_a_client_that_finds_no_server_serving_yet_tries_again(tmp_path, first):
    """The second direction's client met the first direction's server closing (`iperf3 -s -1`): its
    control connection was reset, and a healthy pair of namespaces failed in CI."""
    value, error, _ = worker._retrying(_client(tmp_path, {"error": first}, {"gbps": 9.7}), _parse, 1)
    assert (value, error) == (9.7, None) and (tmp_path / "calls").read_text() == "2"


def test_a_reset_once_the_test_runs_is_the_pairs_error_not_tried_again(tmp_path):
    said = "error - unable to read from stream socket: Connection reset by peer"
    value, error, _ = worker._retrying(_client(tmp_path, {"error": said}, {"gbps": 9.7}), _parse, 1)
    assert (value, error) == (None, f"iperf3: {said}") and (tmp_path / "calls").read_text() == "1"
