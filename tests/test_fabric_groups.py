"""Group tests (nodeqc/fabric/groups.py): NCCL's collectives across groups of nodes, a failing group
split in halves and its last suspects confirmed against known-good partners (ADR-055), on the
simulated cluster, through the launcher's merge of what real ends print, and end to end through
`nodeqc fabric` with its workers over tests/fake_cupy."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, cli
from nodeqc.fabric.crossing import CROSS_ROUNDS, plan_crossing
from nodeqc.fabric.groups import auto_size, isolate, plan
from nodeqc.fabric.launchers import merge_group
from nodeqc.fabric.scoring import Floors, GroupResult, alltoall_bus_factor
from nodeqc.fabric.simulated import HEALTHY_BUSBW, SimulatedCluster

FLOORS = Floors(nccl_busbw_gbps=365, allgather_busbw_gbps=250, alltoall_busbw_gbps=59)  # hgx-h100's
TESTS = ["nccl", "alltoall"]
FAKE = Path(__file__).resolve().parent / "fake_cupy"


def _run(c, floors=FLOORS, tests=TESTS):
    return lambda number, groups: [c.run_group(number, g, floors, tests) for g in groups]


def _isolate(c, size, seed=1, **kw):
    return isolate(c.nodes, size, _run(c, kw.pop("floors", FLOORS), kw.pop("tests", TESTS)), seed, c.topology, **kw)


# ---------------------------------------------------------------------- the plan


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 300), k=st.integers(3, 300), seed=st.integers(0, 99))
def test_the_plan_puts_every_node_in_one_group_of_k_or_k_minus_one_and_none_alone(n, k, seed):
    k = min(k, max(3, n))
    nodes = [f"n{i}" for i in range(n)]
    groups = plan(nodes, k, seed)
    assert sorted(x for g in groups for x in g) == sorted(nodes)
    sizes = {len(g) for g in groups}
    assert max(sizes) <= k and max(sizes) - min(sizes) <= 1 and len(groups) == math.ceil(n / k)
    assert min(sizes) >= 2 or n < 2


def test_with_a_topology_a_group_lies_within_a_leaf_where_it_can():
    c = SimulatedCluster.build(32, 8, [], seed=1, leaves=4)
    groups = plan(c.nodes, 8, 1, c.topology)
    assert all(len({c.topology.leaf_of[n] for n in g}) == 1 for g in groups)


def test_adr_055s_group_size_is_about_the_square_root():
    assert [auto_size(n) for n in (2, 9, 64, 232, 4096)] == [3, 3, 8, 15, 64]


# ---------------------------------------------------------------------- isolation


def test_a_clean_fleet_takes_one_round_and_every_node_passes():
    c = SimulatedCluster.build(64, 8, [], seed=2)
    s = _isolate(c, 8)
    assert len(s.rounds) == 1 and len(s.results) == 8 and not s.findings and not s.not_judged
    assert {s.node_verdict(n) for n in c.nodes} == {"pass"}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_nodes_whose_collectives_fail_are_found_by_halving_and_confirmed_against_known_good_partners(seed):
    # A slow GPU path, wrong results, a node down, a straggler: each only in a group it joins.
    faults = ["node3:nccl=0.5", "node17:nccl:wrong", "node40:down", "node51:straggler"]
    c = SimulatedCluster.build(64, 8, faults, seed=seed)
    s = _isolate(c, 8, seed)
    assert s.bad_nodes == ["node17", "node3", "node40", "node51"] and not s.not_judged
    assert [f.kind for f in s.findings] == ["node"] * 4
    # 8 -> 4 -> 2, then one confirmation round: log2(8) + 1, never every pair
    assert len(s.rounds) <= 5 and len(s.results) < 8 + 4 * (2 + 2 + 2 + 2)
    assert all(s.node_verdict(n) == "pass" for n in c.nodes if n not in s.bad_nodes)
    for f in s.findings:  # each named by a test of it with a node of a group that passed
        test = s.units[f.unit]
        assert test.kind == "confirm" and test.member == f.nodes[0] and test.outcome == "fail"


def test_two_good_nodes_that_fail_only_together_are_their_path_not_either_node():
    c = SimulatedCluster.build(16, 8, [], seed=1)
    a, b = plan(c.nodes, 4, 1)[0][:2]  # the first half of the first group: they stay together
    c = SimulatedCluster.build(16, 8, [f"link:{a}-{b}=0.3"], seed=1)
    s = _isolate(c, 4)
    assert [(f.kind, set(f.nodes)) for f in s.findings] == [("together", {a, b})] and not s.bad_nodes
    assert "the path between them" in s.findings[0].why and s.node_verdict(a) == s.node_verdict(b) == "pass"


def test_a_trio_that_fails_only_together_has_its_pairs_tested_and_the_failing_pair_is_the_path():
    """Groups of three: a slow path between two members fails their trio; each member passes with a
    known-good partner; then each pair of the three is tested (a round each, as they share nodes):
    the pair that fails again is named, with the path between them, and the third node is not."""
    c = SimulatedCluster.build(9, 8, [], seed=1)
    a, b, third = plan(c.nodes, 3, 1)[0]
    c = SimulatedCluster.build(9, 8, [f"link:{a}-{b}=0.3"], seed=1)
    s = _isolate(c, 3)
    assert [(f.kind, set(f.nodes)) for f in s.findings] == [("together", {a, b})] and not s.bad_nodes
    why = s.findings[0].why
    assert why.startswith("failed together as a pair (round ") and why.endswith("the path between them")
    assert f"after their group {a}-{b}-{third} failed only together (its members each passed with a known-good partner)" in why
    pairs = [u for u in s.units if u.kind == "pair"]
    assert sorted(set(u.nodes) for u in pairs) == sorted([{a, b}, {a, third}, {b, third}], key=sorted)
    assert len({u.result.round for u in pairs}) == 3  # they share nodes: a round each
    assert {s.node_verdict(n) for n in (a, b, third)} == {"pass"}


def test_a_trio_whose_pairs_all_pass_fails_only_as_three():
    """The load of three nodes together (a leaf's ports, say): every member passes with a known-good
    partner and every pair passes: the trio is the finding, saying so."""
    c = SimulatedCluster.build(9, 8, [], seed=1)
    trio = plan(c.nodes, 3, 1)[0]
    high = replace(FLOORS, alltoall_busbw_gbps=200)
    run = lambda number, groups: [c.run_group(number, g, high if set(trio) <= set(g) else FLOORS, TESTS)
                                  for g in groups]  # noqa: E731
    s = isolate(c.nodes, 3, run, 1, c.topology)
    assert [(f.kind, f.nodes) for f in s.findings] == [("together", trio)]
    assert ("its members each passed with a known-good partner, and each pair of them passed: the load of the "
            "three together on their switches") in s.findings[0].why
    assert sum(u.kind == "pair" for u in s.units) == 3


def test_a_trio_whose_pairs_were_not_all_run_keeps_its_unnarrowed_finding():
    """Rounds ran out after the first pair (which passed): the failing pair was never tested, so the
    trio's finding stays the trio's, unnarrowed, and no pair is blamed."""
    c = SimulatedCluster.build(9, 8, [], seed=1)
    a, b, third = plan(c.nodes, 3, 1)[0]
    c = SimulatedCluster.build(9, 8, [f"link:{b}-{third}=0.3"], seed=1)
    s = _isolate(c, 3, max_rounds=3)  # groups, confirmations, then the first pair: a-b, which passes
    pairs = [u for u in s.units if u.kind == "pair"]
    assert [(u.nodes, u.outcome) for u in pairs if u.result is not None] == [((a, b), "pass")]
    assert sorted(u.nodes for u in pairs if u.result is None) == [(a, third), (b, third)]
    assert [(f.kind, f.nodes) for f in s.findings] == [("together", (a, b, third))]
    assert "the paths between its parts" in s.findings[0].why


def test_a_group_whose_halves_pass_fails_only_as_a_whole():
    c = SimulatedCluster.build(16, 8, [], seed=1)
    g = plan(c.nodes, 4, 1)[0]
    a, b = g[0], g[2]  # in different halves: each half passes
    c = SimulatedCluster.build(16, 8, [f"link:{a}-{b}=0.3"], seed=1)
    s = _isolate(c, 4)
    assert [(f.kind, f.nodes) for f in s.findings] == [("together", g)]
    assert "its halves" in s.findings[0].why and "each passed" in s.findings[0].why


def test_when_every_group_and_every_half_fails_it_is_the_fabric_and_nothing_more_is_split():
    c = SimulatedCluster.build(32, 8, [], seed=1)
    s = _isolate(c, 8, floors=replace(FLOORS, alltoall_busbw_gbps=200))
    assert len(s.rounds) == 2 and [f.kind for f in s.findings] == ["fabric"]
    assert s.findings[0].why.startswith("every one of 12 group tests in 2 rounds failed (alltoall)")
    assert {s.node_verdict(n) for n in c.nodes} == {"error"}  # nothing says any node is good


def test_many_bad_nodes_failing_most_groups_are_still_isolated_not_blamed_on_the_fabric():
    # 6 bad nodes in 64, groups of 8: most groups fail, yet their halves do not all fail.
    bad = [3, 12, 21, 30, 45, 60]
    c = SimulatedCluster.build(64, 8, [f"node{i}:nccl=0.5" for i in bad], seed=1)
    s = _isolate(c, 8)
    first = [u for u in s.units if u.kind == "group"]
    assert sum(u.outcome == "fail" for u in first) * 2 > len(first)
    assert s.bad_nodes == sorted(f"node{i}" for i in bad) and not any(f.kind == "fabric" for f in s.findings)


def test_groups_too_small_to_split_that_all_fail_are_the_fabric_unless_the_run_was_stopped():
    c = SimulatedCluster.build(9, 8, [], seed=1)
    high = replace(FLOORS, alltoall_busbw_gbps=200)
    s = _isolate(c, 3, floors=high)
    assert len(s.rounds) == 1 and [f.kind for f in s.findings] == ["fabric"]
    asked = []
    s = _isolate(c, 3, floors=high, stopped=lambda: bool(asked.append(1)) or len(asked) > 1)
    assert len(s.rounds) == 1 and not s.findings and len(s.not_judged) == 9


def test_with_no_known_good_partner_the_suspects_are_not_judged_never_passed():
    c = SimulatedCluster.build(3, 8, ["node1:nccl=0.3"], seed=1)
    s = _isolate(c, 3)
    assert not s.findings and set(s.not_judged) == {"node0", "node1", "node2"}
    assert "no known-good partner" in s.not_judged["node1"]
    assert {s.node_verdict(n) for n in c.nodes} == {"error"}


def test_a_failing_trio_whose_bad_member_was_not_confirmed_in_time_is_not_said_to_fail_only_together():
    # Five nodes in groups of 3 and 2: the trio node2-node3-node4 fails (node4), its members wait for
    # the two known-good nodes, and two rounds confirm only node2 and node3 (both pass). node4 is
    # not judged, and the trio is no "together" finding: one member was never confirmed.
    c = SimulatedCluster.build(5, 8, ["node4:nccl=0.4"], seed=1)
    s = _isolate(c, 3, 1, max_rounds=2, tests=["nccl"])
    assert plan(c.nodes, 3, 1)[0] == ("node2", "node3", "node4")
    assert s.not_judged == {"node4": "not settled within 2 rounds"} and not s.findings
    assert s.node_verdict("node4") == "error" and s.node_verdict("node2") == "pass"


def test_two_failing_groups_are_too_few_to_blame_the_fabric_and_are_split():
    c = SimulatedCluster.build(16, 8, ["node1:nccl=0.5", "node2:nccl=0.5"], seed=1)
    groups = plan(c.nodes, 8, 1)
    assert all(any(n in g for n in ("node1", "node2")) for g in groups)  # one in each group
    s = _isolate(c, 8)
    assert s.bad_nodes == ["node1", "node2"] and all(f.kind == "node" for f in s.findings)


def test_a_node_whose_worker_never_answers_is_found_by_splitting_and_left_not_judged_not_failed():
    # No figure at all from node6's worker (merge_group's error): the groups it joins cannot be
    # tested; halving finds it, and with a known-good partner it still cannot be: not judged (exit 2).
    from nodeqc.fabric.scoring import GroupResult

    c = SimulatedCluster.build(16, 8, [], seed=1)

    def run(number, groups):
        return [GroupResult(number, g, error="node6: worker gave no result: exit 1") if "node6" in g
                else c.run_group(number, g, FLOORS, TESTS) for g in groups]

    s = isolate(c.nodes, 8, run, 1)
    assert list(s.not_judged) == ["node6"] and "could not be tested with known-good partner" in s.not_judged["node6"]
    assert not s.findings and s.node_verdict("node6") == "error"
    assert sum(s.node_verdict(n) == "pass" for n in c.nodes) == 15


def test_a_stopped_run_leaves_what_it_did_not_settle_not_judged():
    c = SimulatedCluster.build(16, 8, ["node3:nccl=0.5"], seed=1)
    asked = []

    def stopped():
        asked.append(1)
        return len(asked) > 1  # after the first round

    s = _isolate(c, 4, stopped=stopped)
    assert len(s.rounds) == 1 and not s.bad_nodes
    failing = next(r.nodes for r in s.results if r.outcome == "fail")
    assert set(s.not_judged) == set(failing) and all("stopped" in w for w in s.not_judged.values())


def test_a_skipped_group_is_no_evidence_and_is_not_split():
    c = SimulatedCluster.build(8, 8, [], seed=1)

    def run(number, groups):
        out = _run(c)(number, groups)
        for r in out[:1]:
            r.measurements = [replace(m, value=None, skipped="CuPy is not installed") for m in r.measurements]
            r.latencies = []
        return out

    s = isolate(c.nodes, 4, run, 1)
    skipped = s.results[0].nodes
    assert len(s.rounds) == 1 and not s.findings and {s.node_verdict(n) for n in skipped} == {"skip"}


# ---------------------------------------------------------------------- floors and the simulated figures


def test_the_all_to_all_floor_scales_with_the_share_of_bytes_that_leave_a_node():
    assert FLOORS.busbw("alltoall") == FLOORS.busbw("alltoall", 2, 8) == 59
    assert FLOORS.busbw("alltoall", 4, 8) == pytest.approx(59 * (31 / 32) / (3 / 4) / ((15 / 16) / (1 / 2)), abs=1e-3)
    assert FLOORS.busbw("alltoall", 4, 1) == 59  # one GPU a node: every byte leaves it at any size
    assert FLOORS.busbw("nccl", 16, 8) == 365 and FLOORS.busbw("allgather", 16, 8) == 250  # rings: no change
    assert FLOORS.busbw("alltoall", 8, None) == 59  # GPU count unknown: the two-node floor, the higher


def test_a_healthy_simulated_group_gives_nvidias_two_node_figures_scaled_as_the_floors_are():
    c = SimulatedCluster.build(8, 8, [], seed=1)
    r = c.run_group(1, tuple(c.nodes[:4]), FLOORS, ["nccl", "allgather", "alltoall"])
    got = {m.rail: m.value for m in r.measurements}
    assert got["nccl"] == pytest.approx(HEALTHY_BUSBW["nccl"], rel=0.03)
    assert got["allgather"] == pytest.approx(HEALTHY_BUSBW["allgather"], rel=0.03)
    want = HEALTHY_BUSBW["alltoall"] * alltoall_bus_factor(4, 8) / alltoall_bus_factor(2, 8)
    assert got["alltoall"] == pytest.approx(want, rel=0.03) and r.outcome == "pass"
    assert all(lat.measured and not lat.high for lat in r.latencies)


# ---------------------------------------------------------------------- the merge of what the ends print


def _end(node, **figure):
    f = {"rail": "nccl", "direction": "both", "value": 400.0, "unit": "GB/s", "error": None, "gpus": 24,
         "steps": 200, "step_p50_ms": 4.0, "step_p99_ms": 4.5, **figure}
    return {"nodeqc-fabric-worker": 1, "node": node, "index": 0, "identity": {"hostname": node}, "figures": [f]}


NODES = ("a", "b", "c")


def test_a_groups_figure_is_its_slowest_ends_and_every_end_must_speak():
    r = merge_group(1, NODES, [_end("a"), _end("b", value=380.0), _end("c")], [], FLOORS, tests=["nccl"])
    assert r.outcome == "pass" and [(m.rail, m.value, m.floor) for m in r.measurements] == [("nccl", 380.0, 365)]
    r = merge_group(1, NODES, [_end("a"), _end("b")], ["c: exit 1"], FLOORS, tests=["nccl"])
    assert r.outcome == "not judged" and r.error.startswith("c: worker gave no result: c: exit 1")
    r = merge_group(1, NODES, [_end("a"), _end("b"), _end("c", error="rank 4: wrong all-reduce result: ...")],
                    [], FLOORS, tests=["nccl"])
    assert r.outcome == "fail" and r.measurements[0].error.startswith("c: rank 4: wrong all-reduce result")


def test_the_all_to_all_floor_of_a_group_comes_from_the_world_its_ends_agree_on():
    ends = [_end(n, rail="alltoall", gpus=24) for n in NODES]
    r = merge_group(1, NODES, ends, [], FLOORS, tests=["alltoall"])
    assert r.measurements[0].floor == FLOORS.busbw("alltoall", 3, 8)
    ends[1]["figures"][0]["gpus"] = 3  # an end that says another world: the two-node floor, the higher
    assert merge_group(1, NODES, ends, [], FLOORS, tests=["alltoall"]).measurements[0].floor == 59


@pytest.mark.parametrize("lie,why", [
    ({"node": "d"}, "a result for d, not of this group"),
    ({"figures": [{"rail": "rdma", "direction": "a>b", "value": 1.0, "unit": "Gb/s"}]}, "a test this group did not run"),
    ({"figures": [{"rail": "nccl", "direction": "both", "value": 1.0, "unit": "GB/s"}] * 2}, "said twice"),
    ({"figures": [{"rail": "alltoall", "direction": "both", "value": 1.0, "unit": "GB/s"}]}, "a test this group did not run"),
])
def test_what_an_end_could_not_have_measured_makes_the_group_not_tested_naming_it(lie, why):
    bad = {**_end("c"), **lie}
    r = merge_group(1, NODES, [_end("a"), _end("b"), bad], [], FLOORS, tests=["nccl"])
    assert r.outcome == "not judged" and why in r.error and "(refused: not tested)" in r.error, r.error


# ---------------------------------------------------------------------- the command


def _predicate(stdout):
    env = json.loads(Path(stdout.strip().splitlines()[-1]).read_text())
    return json.loads(base64.b64decode(env["payload"]))["predicate"]


def test_the_command_runs_the_collectives_in_groups_after_the_pairs(tmp_path):
    p = cli("fabric", "--simulate", "32", "--profile", "hgx-h100", "--tests", "rdma,nccl,alltoall", "--group-size", "8",
            "--seed", "4", "--inject", "node5:nccl=0.5", "--inject", "node9:rail1:down", "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "tests rdma, launcher simulated; then nccl,alltoall in groups of 8" in p.stderr
    assert "FAIL  fabric.group node5: failed with known-good partner" in p.stderr
    assert "FAIL  fabric.node node9: " in p.stderr  # the pair rounds' own finding
    assert "node5:nccl=0.5: found" in p.stderr and "node9:rail1:down: found" in p.stderr
    pred = _predicate(p.stdout)
    # node9 with a rail down fails its collectives too (NCCL stripes every rail): named by both phases
    assert pred["fabric"]["groups"]["bad_nodes"] == ["node5", "node9"] and pred["fabric"]["group_size"] == 8
    assert {n["name"]: n["verdict"] for n in pred["nodes"]}["node5"] == "fail"
    assert pred["groups"][0]["kind"] == "group" and set(pred["groups"][0]["collectives"]) == {"nccl", "alltoall"}
    rounds = [r["round"] for r in pred["groups"]]
    assert min(rounds) == len(pred["fabric"]["schedule"]) + 1  # numbered after the pair rounds


def test_the_command_with_collectives_only_judges_every_node_from_its_groups(tmp_path):
    p = cli("fabric", "--simulate", "16", "--profile", "hgx-h100", "--tests", "alltoall", "--group-size", "auto",
            "--seed", "2", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "no pair rounds" in p.stderr and "in groups of 4" in p.stderr
    pred = _predicate(p.stdout)
    assert sorted(c["subject"] for c in pred["checks"] if c["name"] == "fabric.node") == sorted(f"node{i}" for i in range(16))
    untested = next(c for c in pred["checks"] if c["name"] == "fabric.coverage")
    assert untested["verdict"] == "skip" and untested["message"].startswith("96 node pairs were never in one group test")


# ---------------------------------------------------------------------- across leaves (no pair round)


@pytest.mark.parametrize("leaves", [2, 3, 4, 5, 8])
def test_the_crossing_rounds_join_two_leaves_a_group_each_leaf_once_a_round(leaves):
    c = SimulatedCluster.build(8 * leaves, 8, [], seed=1, leaves=leaves)
    rounds = plan_crossing(c.nodes, c.topology, 8)
    assert len(rounds) == min(CROSS_ROUNDS, leaves - 1 if leaves % 2 == 0 else leaves)
    met = set()
    for groups in rounds:
        used = [c.topology.leaf_of[n] for g in groups for n in g]
        assert all(len({c.topology.leaf_of[n] for n in g}) == 2 and len(g) == 8 for g in groups)
        assert len(used) == len(set(used)) * 4  # each leaf in one group, with four of its nodes
        met |= {frozenset(c.topology.leaf_of[n] for n in g) for g in groups}
    assert len(met) == sum(len(g) for g in rounds)  # no two leaves meet twice
    assert plan_crossing(c.nodes, replace(c.topology, leaf_of={n: "L0" for n in c.nodes}), 8) == []


def test_with_collectives_only_a_slow_leaf_uplink_is_named_by_the_groups_across_leaves_not_its_nodes():
    """Groups lie within leaves, so none crossed an uplink: the slow uplink passed as clean. The
    crossing rounds fail every group that takes leaf L1 across, while L1's own group passed."""
    c = SimulatedCluster.build(32, 8, ["leaf:L1:slow=0.5"], seed=1, leaves=4)
    s = _isolate(c, 8, cross=True)
    assert [(f.kind, f.uplink.switch) for f in s.findings] == [("uplink", "L1")]
    assert s.findings[0].nodes == tuple(sorted(c.topology.below("L1")))
    assert "the uplink (its cables, ports or the switch above), not its nodes" in s.findings[0].why
    assert {s.node_verdict(n) for n in c.nodes} == {"pass"} and not s.bad_nodes
    assert sum(u.kind == "cross" for u in s.units) == 6 and len(s.rounds) == 4
    clean = SimulatedCluster.build(32, 8, [], seed=1, leaves=4)
    s = _isolate(clean, 8, cross=True)
    assert not s.findings and all(u.outcome == "pass" for u in s.units if u.kind == "cross")
    assert not any(u.kind == "cross" for u in _isolate(c, 8).units)  # with pair rounds: they cross the uplinks


def test_a_crossing_group_that_fails_with_no_uplink_to_blame_fails_only_across_its_leaves():
    c = SimulatedCluster.build(32, 8, [], seed=1, leaves=4)
    first = plan_crossing(c.nodes, c.topology, 8)[0][0]
    a, b = first[0], first[-1]  # one in each leaf of the first crossing group
    c = SimulatedCluster.build(32, 8, [f"link:{a}-{b}=0.3"], seed=1, leaves=4)
    s = _isolate(c, 8, cross=True)
    assert [(f.kind, f.nodes) for f in s.findings] == [("together", first)]
    la, lb = sorted({c.topology.leaf_of[a], c.topology.leaf_of[b]})
    assert s.findings[0].why.startswith(f"failed only across leaves {la} and {lb} (round 2: ")
    assert {s.node_verdict(n) for n in c.nodes} == {"pass"}


def test_a_crossing_group_that_could_not_run_leaves_its_nodes_not_judged_and_names_nothing():
    """No figures, no evidence: its nodes are not judged (exit 2), no uplink and no path is blamed."""
    c = SimulatedCluster.build(32, 8, [], seed=1, leaves=4)
    first = plan_crossing(c.nodes, c.topology, 8)[0][0]

    def run(number, groups):
        return [GroupResult(number, tuple(g), error="rank 12 never came to the rendezvous") if g == first
                else c.run_group(number, g, FLOORS, TESTS) for g in groups]
    s = isolate(c.nodes, 8, run, 1, c.topology, cross=True)
    assert not s.findings
    assert set(s.not_judged) == set(first)
    assert s.not_judged[first[0]].startswith("its group test across leaves ") and "could not run (round 2)" in s.not_judged[first[0]]
    assert {s.node_verdict(n) for n in first} == {"error"}


def test_the_command_with_collectives_only_names_a_slow_uplink(tmp_path):
    p = cli("fabric", "--simulate", "32", "--leaves", "4", "--profile", "hgx-h100", "--tests", "nccl,alltoall",
            "--group-size", "8", "--inject", "leaf:L1:slow=0.5", "--seed", "1", "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "simulated fault leaf:L1:slow=0.5: found: named in the report" in p.stderr
    pred = _predicate(p.stdout)
    up = next(c for c in pred["checks"] if c["name"] == "fabric.uplink")
    assert (up["subject"], up["verdict"], up["code"]) == ("L1 uplink", "fail", "FABRIC_UPLINK")
    assert {r["kind"] for r in pred["groups"]} == {"group", "cross"}


@pytest.mark.parametrize("args,message", [
    (["--group-size", "2"], "--group-size 2: expected 3 to the node count (8), or auto"),
    (["--group-size", "9"], "--group-size 9: expected 3 to the node count (8)"),
    (["--group-size", "x"], "--group-size x: expected 3 to"),
    (["--group-size", "4", "--tests", "rdma"], "--group-size: --tests rdma has no collective"),
])
def test_group_size_usage_errors(args, message, tmp_path):
    p = cli("fabric", "--simulate", "8", "--profile", "hgx-h100", "--tests", "nccl", *args, "--out", str(tmp_path))
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_fabric_runs_a_group_through_its_workers_and_finds_the_node_with_wrong_results(tmp_path):
    """nodeqc fabric -> host launcher -> `nodeqc fabric worker --group` on each of four "nodes" ->
    nccl_group.run across all four, wrong results planted on every rank of node c: the group fails,
    its half with c fails, and c fails again with a node of the half that passed."""
    args = ["fabric", "--hosts", "a,b,c,d", "--launch", "env FAKE_CUPY_NODE={host}", "--nodeqc", f"{sys.executable} -m nodeqc",
            "--tests", "nccl", "--group-size", "4", "--min-nccl-busbw", "0.000001",
            "--seconds", "0.01", "--nccl-bytes", "4096", "--seed", "1", "--out", str(tmp_path),
            *[x for n in "abcd" for x in ("--address", f"{n}=127.0.0.1")]]
    # One fake GPU a node: each rank is a process of its own, spawned anew for every test of the 3 rounds.
    env = {"PYTHONPATH": os.pathsep.join([str(FAKE), str(ROOT)]), "FAKE_CUPY_GPUS": "1", "FAKE_NCCL_FAULT": "corrupt-recv:@c"}
    p = cli(*args, env=env, timeout=300)
    assert p.returncode == 1, p.stderr
    pred = _predicate(p.stdout)
    assert pred["fabric"]["groups"]["bad_nodes"] == ["c"] and not pred["fabric"]["groups"]["not_judged"], p.stderr
    first = pred["groups"][0]
    assert first["nodes"] and sorted(first["nodes"]) == ["a", "b", "c", "d"] and first["outcome"] == "fail"
    assert "wrong all-reduce result" in first["collectives"]["nccl"]["error"]
    assert "c: rank" in first["collectives"]["nccl"]["error"]  # said by c's own ranks
    assert {n["name"]: n["verdict"] for n in pred["nodes"]} == {"a": "pass", "b": "pass", "c": "fail", "d": "pass"}


def test_a_group_worker_that_lies_is_named_as_in_the_pair_tests():
    # node2's worker claims a figure its group did not run: every group test with it is refused
    # (not tested), and node2 is the suspect: a fail with the refused line as evidence.
    from nodeqc.fabric.report import group_checks

    c = SimulatedCluster.build(16, 8, [], seed=1)

    def run(number, groups):
        out = []
        for g in groups:
            if "node2" not in g:
                out.append(c.run_group(number, g, FLOORS, ["nccl"]))
                continue
            ends = [_end(n, gpus=8 * len(g)) for n in g]
            ends[g.index("node2")]["figures"].append({"rail": "rdma", "direction": "a>b", "value": 1.0, "unit": "Gb/s"})
            out.append(merge_group(number, g, ends, [], FLOORS, tests=["nccl"]))
        return out

    s = isolate(c.nodes, 4, run, 1)
    assert list(s.suspects) == ["node2"] and s.node_verdict("node2") == "fail" and s.failed
    lied = [ch for ch in group_checks(s, pair_tests=False) if ch.code == "FABRIC_WORKER_LIED"]
    assert [(ch.name, ch.subject, ch.verdict.value) for ch in lied] == [("fabric.node", "node2", "fail")]
    assert "a test this group did not run" in lied[0].message
    assert all(s.node_verdict(n) in ("pass", "error") for n in c.nodes if n != "node2")


# ---------------------------------------------------------------------- multi-node NVLink domains

NVL = replace(FLOORS, nccl_busbw_gbps=143.6, nvlink_busbw_gbps=662)  # gb200-nvl72-tray's


def _rack(count=72, faults=(), per=18):
    c = SimulatedCluster.build(count, 4, list(faults), seed=3, nvlink=per)
    c.gpus = 4
    return c


def test_the_plan_keeps_each_nvlink_domain_in_groups_of_its_own():
    domains = {f"n{i}": f"D{i // 5}" for i in range(10)}  # two domains of five, and n10 in none
    groups = plan([f"n{i}" for i in range(11)], 3, 1, domains=domains)
    assert sorted(sorted(g) for g in groups) == [["n0", "n1", "n2"], ["n10", "n3", "n4"], ["n5", "n6", "n7"], ["n8", "n9"]]
    # n10, alone outside any domain, joined the smallest group: the one group across domains


def test_within_an_nvlink_domain_the_all_reduce_is_judged_against_the_nvlink_floor_only():
    assert NVL.busbw("nccl", 6, 4, nvlink=True) == 662 and NVL.busbw("nccl", 6, 4) == 143.6
    assert NVL.busbw("alltoall", 6, 4, nvlink=True) == NVL.busbw("alltoall", 6, 4)  # no NVLink figure for it
    assert FLOORS.busbw("nccl", 4, 8, nvlink=True) == 365  # a profile without one: its NIC floor
    ends = [_end(n, gpus=12) for n in NODES]
    assert merge_group(1, NODES, ends, [], NVL, tests=["nccl"], nvlink="D0").measurements[0].floor == 662
    assert merge_group(1, NODES, ends, [], NVL, tests=["nccl"], nvlink="D0").nvlink == "D0"
    assert merge_group(1, NODES, ends, [], NVL, tests=["nccl"]).measurements[0].floor == 143.6


def test_a_domain_whose_nvlink_is_down_is_named_as_the_domain_and_its_trays_fail():
    c = _rack(faults=["nvlink:D2:down"])
    s = isolate(c.nodes, 6, _run(c, NVL, ["nccl"]), 3, domains=c.domains)
    (f,) = s.findings
    d2 = tuple(n for n, d in c.domains.items() if d == "D2")
    assert f.kind == "nvlink" and set(f.nodes) == set(d2) and "NVLink domain D2" in f.why
    assert "191." in f.why or "192." in f.why  # NCCL fell back to the NICs (NVIDIA's 191.4 without NVLink)
    assert {s.node_verdict(n) for n in d2} == {"fail"} and not s.not_judged
    assert {s.node_verdict(n) for n in c.nodes if n not in d2} == {"pass"}


def test_a_tray_whose_nvlink_is_down_is_confirmed_against_a_known_good_tray_of_its_own_domain():
    c = _rack(faults=["node20:nvlink:down"])
    s = isolate(c.nodes, 6, _run(c, NVL, ["nccl"]), 3, domains=c.domains)
    assert s.bad_nodes == ["node20"] and [f.kind for f in s.findings] == ["node"]
    confirm = s.units[s.findings[0].unit]
    assert {c.domains[n] for n in confirm.nodes} == {c.domains["node20"]}  # over the same NVLink, not the NICs
    assert confirm.result.nvlink == c.domains["node20"] and confirm.result.measurements[0].floor == 662


@pytest.mark.parametrize("fault,message", [
    ("node3:nvlink:down", "node3 is in no NVLink domain (--nvlink-domain N)"),
    ("nvlink:D9:down", "no NVLink domain D9 (domains: none: give --nvlink-domain N)"),
])
def test_nvlink_faults_need_domains(fault, message):
    from nodeqc.core.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(message)):
        SimulatedCluster.build(8, 4, [fault])


def test_the_command_names_a_failed_nvlink_domain_of_simulated_gb200_racks(tmp_path):
    p = cli("fabric", "--simulate", "72", "--rails", "4", "--nvlink-domain", "18", "--profile", "gb200-nvl72-tray",
            "--tests", "nccl", "--group-size", "6", "--seed", "3", "--inject", "nvlink:D2:down", "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "FAIL  fabric.group nvlink:D2: every one of" in p.stderr and "[FABRIC_GROUP_NVLINK]" in p.stderr
    assert "nvlink:D2:down: found" in p.stderr
    p = cli("fabric", "--hosts", "a,b", "--nvlink-domain", "2", "--tests", "tcp", "--out", str(tmp_path))
    assert p.returncode == 2 and "--nvlink-domain shapes the simulated cluster" in p.stderr


def test_a_slurm_block_is_an_nvlink_domain(tmp_path):
    from nodeqc.fabric.topology import parse_slurm

    t = parse_slurm("BlockName=rack1 Nodes=gpu[01-03]\nBlockName=rack2 Nodes=gpu[04-06]\n"
                    "SwitchName=leaf1 Nodes=cpu[1-2]\n", "topology.conf")
    assert t.nvlink == {f"gpu0{i}": "rack1" if i <= 3 else "rack2" for i in range(1, 7)}


def test_a_simulated_cluster_takes_its_nvlink_domains_from_the_topology_file_s_blocks(tmp_path):
    """The 2026-11-29 notes: with --simulate, BlockName= lines of --topology FILE were not the cluster's
    NVLink domains (`nvlink:rack2:down` was refused: "domains: none"); a real cluster's are."""
    topo = tmp_path / "topology.conf"
    topo.write_text("BlockName=rack1 Nodes=node[0-5]\nBlockName=rack2 Nodes=node[6-11]\n")
    common = ["fabric", "--simulate", "12", "--topology", str(topo), "--tests", "nccl", "--group-size", "3",
              "--profile", "gb200-nvl72-tray", "--rails", "4", "--seed", "3", "--out", str(tmp_path)]
    p = cli(*common, "--inject", "nvlink:rack2:down")
    assert p.returncode == 1, p.stderr
    assert "FAIL  fabric.group nvlink:rack2: every one of 2 group tests within NVLink domain rack2 failed" in p.stderr
    assert "simulated fault nvlink:rack2:down: found" in p.stderr
    p = cli(*common, "--nvlink-domain", "6")
    assert p.returncode == 2 and "the topology's BlockName= lines name the NVLink domains already" in p.stderr


def test_fabric_judges_groups_within_a_slurm_block_against_the_nvlink_floor_through_its_workers(tmp_path):
    topo = tmp_path / "topology.conf"
    topo.write_text("BlockName=rack1 Nodes=a,b,c\nBlockName=rack2 Nodes=d,e,f\n")
    args = ["fabric", "--hosts", "a,b,c,d,e,f", "--launch", "env FAKE_CUPY_NODE={host}", "--nodeqc",
            f"{sys.executable} -m nodeqc", "--topology", str(topo), "--tests", "nccl", "--group-size", "3",
            "--min-nccl-busbw", "0.000001", "--min-nvlink-busbw", "0.000002", "--seconds", "0.01", "--nccl-bytes", "4096",
            "--seed", "1", "--out", str(tmp_path), *[x for n in "abcdef" for x in ("--address", f"{n}=127.0.0.1")]]
    env = {"PYTHONPATH": os.pathsep.join([str(FAKE), str(ROOT)]), "FAKE_CUPY_GPUS": "2", "FAKE_NCCL_FAULT": ""}
    p = cli(*args, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = _predicate(p.stdout)["groups"]
    within = [r for r in rows if r["kind"] == "group"]
    assert sorted(sorted(r["nodes"]) for r in within) == [["a", "b", "c"], ["d", "e", "f"]]
    assert {r["collectives"]["nccl"]["floor"] for r in within} == {0.000002}
    # With collectives only, a group across the two blocks then crosses between them, over the NICs
    # (nodeqc.fabric.crossing): held to the NIC floor, not NVLink's.
    across = [r for r in rows if r["kind"] == "cross"]
    assert [sorted(r["nodes"]) for r in across] == [["a", "d"]] and across[0]["outcome"] == "pass"
    assert across[0]["collectives"]["nccl"]["floor"] == 0.000001


def test_one_failing_group_is_too_little_to_blame_its_nvlink_domain():
    # A domain of three trays is one group: one bad tray fails it, and no tray of its domain is
    # known good to confirm against. One test cannot tell the tray from the domain: not judged.
    c = _rack(12, ["node1:nccl=0.3"], per=3)
    s = isolate(c.nodes, 3, _run(c, NVL, ["nccl"]), 3, domains=c.domains)
    assert not s.findings and set(s.not_judged) == {"node0", "node1", "node2"}


def test_group_tests_that_measured_nothing_never_pass_the_run(tmp_path):
    # No GPU on any node (fake CuPy with none): every group test is skipped, saying why. With no pair
    # test either, nothing judged the nodes: exit 2, each node not judged, never a pass.
    args = ["fabric", "--hosts", "a,b,c", "--launch", "env FAKE_CUPY_NODE={host}", "--nodeqc",
            f"{sys.executable} -m nodeqc", "--tests", "nccl", "--group-size", "3", "--min-nccl-busbw", "1",
            "--seconds", "0.01", "--out", str(tmp_path), *[x for n in "abc" for x in ("--address", f"{n}=127.0.0.1")]]
    env = {"PYTHONPATH": os.pathsep.join([str(FAKE), str(ROOT)]), "FAKE_CUPY_GPUS": "0", "FAKE_NCCL_FAULT": ""}
    p = cli(*args, env=env, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "SKIP  fabric.group fabric: not measured: no CUDA GPU on this node" in p.stderr
    for n in "abc":
        assert f"ERROR fabric.node {n}: not judged: no group test of this node gave figures" in p.stderr
    assert {n["verdict"] for n in _predicate(p.stdout)["nodes"]} == {"error"}
