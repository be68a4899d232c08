"""The latency tail of the fabric's pair tests (issue 27): ib_write_lat's output read as untrusted
input, the NCCL all-reduce's step times, the straggler named (slow only at the tail), a uniformly
slow fabric blamed on no node, and the simulated `nodeN:straggler` end to end."""

import base64
import json

import pytest

from conftest import cli
from nodeqc.backends.nic import parse_ib_write_lat, read_ib_write_lat
from nodeqc.core.na import is_na
from nodeqc.core.tool_output import ToolOutputError
from nodeqc.fabric import pairing
from nodeqc.fabric.launchers import merge, one_nccl_figure
from nodeqc.fabric.lines import line_problem
from nodeqc.fabric.nccl_group import percentile
from nodeqc.fabric.report import fabric_checks
from nodeqc.fabric.scoring import Floors, Measurement, PairResult, score
from nodeqc.fabric.simulated import SimulatedCluster
from nodeqc.fabric.tails import LAT_P99_US, Latency

# ib_write_lat (perftest 4.x) between two ConnectX-7 NDR hosts, in the format perftest prints: the
# header's cells are two or more spaces apart ("#bytes #iterations" one cell), the row's figures
# whitespace-separated, t_typical the median.
IB_WRITE_LAT = """\
---------------------------------------------------------------------------------------
                    RDMA_Write Latency Test
 Dual-port       : OFF          Device         : mlx5_0
 Number of qps   : 1            Transport type : IB
 Connection type : RC           Using SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : ON
 TX depth        : 1
 Mtu             : 4096[B]
 Link type       : IB
 Max inline data : 220[B]
 rdma_cm QPs     : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address: LID 0x0b QPN 0x0111 PSN 0x5b2f0d RKey 0x1fff00 VAddr 0x0055d1d3a5c000
 remote address: LID 0x0c QPN 0x0111 PSN 0xa9b0e8 RKey 0x1fff00 VAddr 0x0055b0f9b2a000
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n\
 2       10000          1.01           6.84         1.06               1.08          0.09            1.33                    4.49   \n\
---------------------------------------------------------------------------------------
"""
ROW = " 2       10000          1.01           6.84         1.06               1.08          0.09            1.33                    4.49   "


# ---------------------------------------------------------------------- ib_write_lat's output


def test_ib_write_lat_as_perftest_prints_it():
    p99, error, detail = parse_ib_write_lat(IB_WRITE_LAT)
    assert error is None and p99 == 1.33
    assert detail == {"bytes": 2, "iterations": 10000, "min_us": 1.01, "max_us": 6.84, "p50_us": 1.06,
                      "avg_us": 1.08, "stdev_us": 0.09, "p99_us": 1.33, "p999_us": 4.49}


@pytest.mark.parametrize("text,said", [
    # perftest's columns are fixed-width: a large stdev meets the next figure (seen on soft-RoCE)
    (IB_WRITE_LAT.replace("0.09            1.33", "2465.901216.65"), "8 figures where the header has 9"),
    (IB_WRITE_LAT.replace("1.06   ", "nan    "), "t_typical[usec] is 'nan', not a number"),
    (IB_WRITE_LAT.replace("1.33  ", "0.50  "), "t_min <= t_typical <= 99% <= 99.9% <= t_max does not hold"),
    (IB_WRITE_LAT.replace("4.49", "9" * 400), "not a number"),
    (IB_WRITE_LAT.replace("   99% percentile[usec]   99.9% percentile[usec]", ""), "no '99% percentile[usec]' column"),
    (IB_WRITE_LAT.replace(" 2       10000", " 2.5     10000"), "not whole numbers"),
])
def test_ib_write_lat_out_of_its_format_is_unreadable_never_a_figure(text, said):
    with pytest.raises(ToolOutputError, match="ib_write_lat"):
        read_ib_write_lat(text)
    p99, error, detail = parse_ib_write_lat(text)
    assert is_na(p99) and said in error and detail == {"unreadable": True} and "\n" not in error


@pytest.mark.parametrize("text,said", [
    (IB_WRITE_LAT.split(ROW)[0], "ib_write_lat gave no result"),  # cut short after its header
    ("", "ib_write_lat gave no result"),
    ("Couldn't connect to 10.0.0.2:18201\nUnable to open file descriptor for socket connection",
     "ib_write_lat gave no result: Unable to open"),
    (IB_WRITE_LAT.replace(" 2       10000", " 2       50   "), "ib_write_lat ran 50 iterations: too few"),
])
def test_ib_write_lat_without_a_result_says_why(text, said):
    p99, error, _ = parse_ib_write_lat(text)
    assert is_na(p99) and error.startswith(said)


# ---------------------------------------------------------------------- the verdicts


NODES = [f"n{i}" for i in range(8)]
FLOORS = Floors(rdma_fraction=0.85)


def _results(p99_of, p50_of=lambda a, b: 2.0, error_of=lambda a, b: None, rounds=6, nodes=NODES):
    """Pair results of passing bandwidth on one rail, each with its rail's latency figure."""
    out = []
    for rnd in pairing.schedule(nodes, rounds, seed=7):
        for a, b in rnd.pairs:
            error = error_of(a, b)
            bw = [Measurement("r0", d, 0 if error else 390.0, "Gb/s", 340.0) for d in ("a>b", "b>a")]
            lat = (Latency("r0", None, None, "us", LAT_P99_US, 10.0, error=error) if error else
                   Latency("r0", p50_of(a, b), p99_of(a, b), "us", LAT_P99_US, 10.0))
            out.append(PairResult(rnd.number, a, b, bw, latencies=[lat]))
    return out


def _tail_checks(results, nodes=NODES):
    s = score(nodes, results)
    return s, {(c.subject, c.verdict.value, c.code) for c in fabric_checks(s, results) if c.name == "fabric.tail"}


def test_a_node_slow_only_at_the_tail_is_named_a_straggler():
    s, checks = _tail_checks(_results(lambda a, b: 60.0 if "n5" in (a, b) else 2.6))
    assert set(s.tails.stragglers) == {"n5"} and s.node_verdict("n5") == "fail" and s.failed
    assert checks == {("n5", "fail", "FABRIC_STRAGGLER")}  # its peers' high pairs are explained by it
    assert all(s.node_verdict(n) == "pass" for n in NODES if n != "n5")


def test_a_node_slow_at_the_median_too_is_slow_throughout_not_a_straggler():
    slow = lambda a, b: "n2" in (a, b)  # noqa: E731
    s, checks = _tail_checks(_results(lambda a, b: 60.0 if slow(a, b) else 2.6, lambda a, b: 30.0 if slow(a, b) else 2.0))
    assert checks == {("n2", "fail", "FABRIC_NODE_LATENCY")}


def test_a_uniformly_slow_fabric_is_not_blamed_on_one_node():
    s, checks = _tail_checks(_results(lambda a, b: 60.0))
    assert not s.tails.stragglers and s.tails.fabric_wide and s.failed
    assert checks == {("fabric", "fail", "FABRIC_TAIL")}
    assert all(s.node_verdict(n) == "pass" for n in NODES)


def test_a_clean_fabric_passes_its_tail():
    s, checks = _tail_checks(_results(lambda a, b: 2.6))
    assert not s.failed and checks == {("fabric", "pass", None)}


def test_one_high_pair_between_nodes_normal_elsewhere_is_the_pairs_finding():
    s, checks = _tail_checks(_results(lambda a, b: 60.0 if {a, b} == {"n0", "n1"} else 2.6, rounds=7))
    assert not s.tails.stragglers and checks in ({("n0-n1", "fail", "FABRIC_TAIL")}, {("n1-n0", "fail", "FABRIC_TAIL")})


def test_a_latency_not_measured_is_an_error_where_bandwidth_passed_and_explained_where_it_failed():
    res = _results(lambda a, b: 2.6, error_of=lambda a, b: "ib_write_lat gave no result" if "n3" in (a, b) else None)
    s, checks = _tail_checks(res)
    assert {c for c in checks if c[1] == "error"} == set()  # n3's bandwidth failed too: that says why
    ok = _results(lambda a, b: 2.6)
    ok[0].latencies = [Latency("r0", None, None, "us", LAT_P99_US, 10.0, error="ib_write_lat: unreadable row")]
    s, checks = _tail_checks(ok)
    assert (f"{ok[0].a}-{ok[0].b}", "error", "FABRIC_NOT_MEASURED") in checks and not s.failed


# ---------------------------------------------------------------------- worker lines, NCCL steps


def _end(node, index, figures, rails=("mlx5_0",)):
    return {"nodeqc-fabric-worker": 1, "node": node, "index": index, "figures": figures,
            "rails": [{"rail": r, "rate": 400.0} for r in rails]}


def test_a_latency_line_becomes_the_pairs_tail_figure_and_only_its_client_may_say_it():
    lat = {"test": "lat", "rail": "mlx5_0", "direction": "b>a", "unit": "us", "value": 1.33, "p50": 1.06, "p999": 4.49}
    r = merge(1, "a", "b", [_end("a", 0, []), _end("b", 1, [lat])], [], FLOORS, tests=["lat"])
    assert r.error is None and r.measurements == []
    assert r.latencies == [Latency("mlx5_0", 1.06, 1.33, "us", LAT_P99_US, 10.0, p999=4.49)]
    lie = merge(1, "a", "b", [_end("a", 0, [lat]), _end("b", 1, [])], [], FLOORS, tests=["lat"])
    assert lie.error and lie.refused[0]["node"] == "a" and lie.refused[0]["claim"]
    upside = merge(1, "a", "b", [_end("a", 0, []), _end("b", 1, [{**lat, "p50": 9.0}])], [], FLOORS, tests=["lat"])
    assert "above its 99th percentile" in upside.latencies[0].error and not upside.latencies[0].measured
    assert "usec" in line_problem(_end("b", 1, [{"rail": "mlx5_0", "direction": "b>a", "unit": "us", "value": 390.0}]))
    assert "below zero" in line_problem(_end("b", 1, [{**lat, "p50": -1}]))


def test_nccl_step_tail_is_the_worse_ends_and_too_few_steps_are_a_skip():
    ends = [("a", {"rail": "nccl", "direction": "both", "value": 40.0, "steps": 200, "step_p50_ms": 45.0,
                   "step_p99_ms": 47.0}),
            ("b", {"rail": "nccl", "direction": "both", "value": 41.0, "steps": 201, "step_p50_ms": 45.5,
                   "step_p99_ms": 70.0})]
    one = one_nccl_figure(("a", "b"), ends)
    assert one["value"] == 40.0 and (one["steps"], one["step_p50_ms"], one["step_p99_ms"]) == (200, 45.5, 70.0)
    r = merge(1, "a", "b", [_end("a", 0, [ends[0][1]], ()), _end("b", 1, [ends[1][1]], ())], [],
              Floors(nccl_busbw_gbps=30.0), tests=["nccl"])
    assert r.latencies == [Latency("nccl", 45.5, 70.0, "ms", 53.5)] and r.latencies[0].high  # 70 > 45.5 + 8
    few = [(n, {**f, "steps": 12}) for n, f in ends]
    r = merge(1, "a", "b", [_end("a", 0, [few[0][1]], ()), _end("b", 1, [few[1][1]], ())], [],
              Floors(nccl_busbw_gbps=30.0), tests=["nccl"])
    assert "12 all-reduce steps, too few" in r.latencies[0].skipped
    assert percentile(list(range(1, 201)), 99) == 198 and percentile([5.0], 99) == 5.0


def test_every_collectives_step_tail_is_judged_on_its_own_rail():
    """A straggler stalls every collective it joins: the all-gather's and the all-to-all's steps are
    tail figures of their own rails, as the all-reduce's are (issue 27)."""
    def end(node, index, p99):
        return _end(node, index, [{"rail": rail, "direction": "both", "value": 300.0, "steps": 200,
                                   "step_p50_ms": 20.0, "step_p99_ms": p99} for rail in ("allgather", "alltoall")], ())

    r = merge(1, "a", "b", [end("a", 0, 21.0), end("b", 1, 35.0)], [],
              Floors(allgather_busbw_gbps=250.0, alltoall_busbw_gbps=59.0), tests=["allgather", "alltoall"])
    assert sorted(r.latencies, key=lambda x: x.rail) == [Latency("allgather", 20.0, 35.0, "ms", 28.0),
                                                         Latency("alltoall", 20.0, 35.0, "ms", 28.0)]
    assert all(x.high for x in r.latencies)  # 35 > 20 + 8 ms
    few = merge(1, "a", "b", [_end("a", 0, [{"rail": "alltoall", "direction": "both", "value": 300.0, "steps": 12,
                                             "step_p50_ms": 20.0, "step_p99_ms": 21.0}], ()),
                              _end("b", 1, [{"rail": "alltoall", "direction": "both", "value": 300.0, "steps": 12,
                                             "step_p50_ms": 20.0, "step_p99_ms": 21.0}], ())],
                [], Floors(alltoall_busbw_gbps=59.0), tests=["alltoall"])
    assert few.latencies[0].rail == "alltoall" and "12 all-to-all steps, too few" in few.latencies[0].skipped


# ---------------------------------------------------------------------- the simulated fabric


def test_the_simulated_straggler_leaves_bandwidth_and_median_alone():
    c = SimulatedCluster.build(8, 2, ["node5:straggler"])
    bad, good = c.run_pair(1, "node5", "node1", FLOORS), c.run_pair(1, "node2", "node1", FLOORS)
    assert all(m.passed for m in bad.measurements) and [m.value for m in bad.measurements] != []
    assert all(x.high and not x.median_high for x in bad.latencies) and len(bad.latencies) == 2
    assert not any(x.high for x in good.latencies) and 1 < good.latencies[0].p50 < 3
    with pytest.raises(Exception, match="not with --rails 0"):
        SimulatedCluster.build(8, 0, ["node5:straggler"])


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("tails")
    runs = {}
    for name, extra in (("clean", []), ("straggler", ["--inject", "node5:straggler"])):
        p = cli("fabric", "--simulate", "8", "--seed", "3", "--out", str(out / name), *extra)
        envelope = json.loads(open(p.stdout.strip().splitlines()[-1]).read())
        report = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
        runs[name] = (p, report)
    return runs


def test_simulated_straggler_is_named_and_a_clean_fabric_passes(simulated):
    p, report = simulated["straggler"]
    assert p.returncode == 1, p.stderr
    assert "FAIL  fabric.tail node5:" in p.stderr and "[FABRIC_STRAGGLER]" in p.stderr
    assert "simulated fault node5:straggler: found" in p.stderr
    assert report["fabric"]["bad"]["stragglers"] == ["node5"] and report["fabric"]["bad"]["nodes"] == []
    assert {n["name"]: n["verdict"] for n in report["nodes"]}["node5"] == "fail"
    assert report["fabric"]["tests"] == ["rdma", "lat"] and "tails" in report["pairs"][0]
    p, report = simulated["clean"]
    assert p.returncode == 0, p.stderr
    assert [c["verdict"] for c in report["checks"] if c["name"] == "fabric.tail"] == ["pass"]


def test_drain_takes_a_straggler_as_a_failed_node(simulated, monkeypatch):
    from nodeqc.fabric import cli as fabric_cli
    from nodeqc.fabric import slurm as fabric_slurm

    asked = {}
    monkeypatch.setattr(fabric_slurm, "drain", lambda failures, report: asked.update(failures) or [])
    fabric_cli._drain(simulated["straggler"][1], "r.json")
    assert list(asked) == ["node5"] and asked["node5"].startswith("FABRIC_STRAGGLER ")


def test_the_workers_lat_test_runs_ib_write_lat_per_rail_and_its_output_becomes_the_pairs_tail(monkeypatch):
    import subprocess

    from nodeqc.fabric import worker

    outputs = {"mlx5_0": IB_WRITE_LAT, "mlx5_1": IB_WRITE_LAT.replace("0.09            1.33", "2465.901216.65")}
    ran = []

    def run(cmd, **kw):
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, outputs[cmd[cmd.index("-d") + 1]], "")

    monkeypatch.setattr(worker, "tool_path", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(worker, "rdma_ports", lambda: [("mlx5_0", 1, 400.0, False), ("mlx5_1", 1, 400.0, True)])
    monkeypatch.setattr(worker.subprocess, "run", run)
    job = worker.Job(("a", "b"), 1, ["lat"], 5.0, 4, 15201, ("10.0.0.1", "10.0.0.2"))
    figures = worker.lat(job)
    assert [c[:2] + c[-2:] for c in ran] == [["ib_write_lat", "-d", "-F", "10.0.0.1"],
                                             ["ib_write_lat", "-d", "-R", "10.0.0.1"]]  # RoCE: -R
    assert all(c[c.index("-n") + 1] == str(worker.LAT_ITERS) for c in ran)
    good, garbled = figures
    assert (good["value"], good["p50"], good["p999"], good["error"]) == (1.33, 1.06, 4.49, None)
    assert garbled["value"] is None and "8 figures where the header has 9" in garbled["error"]
    ends = [_end("a", 0, [], ("mlx5_0", "mlx5_1")), _end("b", 1, figures, ("mlx5_0", "mlx5_1"))]
    r = merge(1, "a", "b", ends, [], FLOORS, tests=["lat"])
    assert r.error is None and [x.measured for x in r.latencies] == [True, False]
    monkeypatch.setattr(worker, "tool_path", lambda tool: None)
    assert "install perftest" in worker.lat(job)[0]["skipped"]
    assert worker.lat(worker.Job(("a", "b"), 0, ["lat"], 5.0, 4, 15201, ("a", "b"))) == []  # the server says nothing
