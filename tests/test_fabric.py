"""nodeqc fabric without traffic: the pairing rounds and their math, the scoring that names the bad
node, rail or link, the simulated cluster's faults (each found and attributed; a clean cluster
passes), the signed fabric report (verify, show, archive) and the command's exit codes and usage
errors."""

import base64
import itertools
import json
from pathlib import Path

import pytest

from conftest import cli
from nodeqc.core.errors import UsageError
from nodeqc.fabric import pairing
from nodeqc.fabric.scoring import Floors, Measurement, PairResult, score
from nodeqc.fabric.simulated import SimulatedCluster

FLOORS = Floors(rdma_fraction=0.85, tcp_fraction=0.5)


# ---------------------------------------------------------------------- pairing


def test_every_round_pairs_every_node_and_the_seed_reproduces_it():
    nodes = [f"n{i}" for i in range(10)]
    a = pairing.schedule(nodes, 6, seed=42)
    assert a == pairing.schedule(nodes, 6, seed=42)
    assert a != pairing.schedule(nodes, 6, seed=43)
    for r in a:
        seen = [n for p in r.pairs for n in p]
        assert sorted(seen) == sorted(nodes) and r.sitting_out is None


def test_odd_count_one_sits_out_each_round_and_a_different_one_each_time():
    nodes = [f"n{i}" for i in range(7)]
    rounds = pairing.schedule(nodes, 7, seed=1)
    outs = [r.sitting_out for r in rounds]
    assert sorted(outs) == sorted(nodes)  # a whole tournament: everyone sits out exactly once
    for r in rounds:
        assert sorted([n for p in r.pairs for n in p] + [r.sitting_out]) == sorted(nodes)


def test_no_pair_meets_twice_within_a_tournament():
    nodes = [f"n{i}" for i in range(12)]
    rounds = pairing.schedule(nodes, 11, seed=5)
    pairs = [frozenset(p) for r in rounds for p in r.pairs]
    assert len(pairs) == len(set(pairs)) == 12 * 11 // 2
    # Beyond one tournament a new one starts: rounds still pair everyone.
    more = pairing.schedule(nodes, 15, seed=5)
    assert len(more) == 15 and all(len(r.pairs) == 6 for r in more)


@pytest.mark.parametrize("bad", [[], ["x"], ["a", "a"]])
def test_schedule_refuses_what_cannot_be_paired(bad):
    with pytest.raises(ValueError):
        pairing.schedule(bad, 3, seed=0)


@pytest.mark.parametrize("nodes,confidence,f", [(16, 0.999, 0.1), (4096, 0.999, 0.1), (256, 0.99, 0.25),
                                                 (4096, 0.999, 0.25)])
def test_rounds_needed_is_the_fewest_that_meet_the_confidence(nodes, confidence, f):
    r = pairing.rounds_needed(nodes, confidence, f)
    assert nodes * pairing.miss_probability(r, f) <= 1 - confidence
    assert r == pairing.MIN_ROUNDS or nodes * pairing.miss_probability(r - 1, f) > 1 - confidence


def test_the_documented_figures():
    # pairing.py's docstring states these; imbue's ~15 rounds correspond to planning for f near 0.25.
    assert [pairing.rounds_needed(n) for n in (16, 256, 4096)] == [6, 8, 9]
    assert pairing.rounds_needed(16, 0.999, 0.25) == 10 and pairing.rounds_needed(4096, 0.999, 0.25) == 14
    assert pairing.miss_probability(1, 0.1) == 1.0  # one peer can never clear a node
    assert pairing.miss_probability(3, 0.5) == pytest.approx(0.5 ** 3 + 3 * 0.5 ** 2 * 0.5)


def test_small_clusters_report_the_confidence_they_reach():
    rounds = pairing.schedule(["a", "b", "c", "d"], 5, seed=0)  # 4 nodes: at most 3 distinct peers
    assert pairing.distinct_peers(rounds) == {"a": 3, "b": 3, "c": 3, "d": 3}
    assert pairing.rounds_needed(4) == pairing.MIN_ROUNDS
    reached = pairing.confidence_reached(pairing.distinct_peers(rounds), 0.1)
    assert reached == pytest.approx(1 - 4 * pairing.miss_probability(3, 0.1))


def test_pairing_at_its_boundaries():
    """Pinned after a mutation run of pairing.py (benchmarks/RESULTS.md, thirteenth measurement)."""
    # Two distinct peers are the fewest that can clear a node: q(2) is the chance both are bad or one is.
    assert pairing.miss_probability(2, 0.1) == pytest.approx(0.1 ** 2 + 2 * 0.1 * 0.9)
    assert pairing.miss_probability(1, 0.0) == 1.0
    # Never fewer than MIN_ROUNDS, even when no node can be bad; never more than one tournament gives:
    # n - 1 rounds for an even count, n for an odd one (each sits out once).
    assert pairing.rounds_needed(100, 0.99, 0.0) == pairing.MIN_ROUNDS == 3
    assert pairing.rounds_needed(5, 0.999999, 0.5) == 5 and pairing.rounds_needed(6, 0.999999, 0.5) == 5
    # Exactly at the bound is enough: 8 nodes x q(6) = 8 x 7/64 = 0.875 = 1 - 0.125 (binary-exact figures).
    assert pairing.rounds_needed(8, 0.125, 0.5) == 6
    for confidence in (0, 1, 1.5):
        with pytest.raises(ValueError, match="^confidence must be between 0 and 1$"):
            pairing.rounds_needed(16, confidence)
    with pytest.raises(ValueError, match="^bad fraction must be from 0 to below 1$"):
        pairing.rounds_needed(16, 0.99, 1.0)
    # Two nodes can be paired; rounds are numbered from 1, as many as asked.
    rounds = pairing.schedule(["a", "b"], 4, seed=0)
    assert [r.number for r in rounds] == [1, 2, 3, 4] and all(r.pairs == (("a", "b"),) or r.pairs == (("b", "a"),)
                                                              for r in rounds)
    with pytest.raises(ValueError, match="^pairing needs at least two nodes$"):
        pairing.schedule(["a"], 3, seed=0)
    with pytest.raises(ValueError, match="^a node is named twice$"):
        pairing.schedule(["a", "b", "a"], 3, seed=0)
    # A node that only sat out is counted, with no peer.
    one = pairing.schedule(["a", "b", "c"], 1, seed=0)
    assert pairing.distinct_peers(one)[one[0].sitting_out] == 0


# ---------------------------------------------------------------------- scoring


def _pair(rnd, a, b, **rails):
    """rails: name -> bool (passed) or 'error'."""
    ms = []
    for rail, ok in rails.items():
        for d in ("a>b", "b>a"):
            if ok == "error":
                ms.append(Measurement(rail, d, None, "Gb/s", 10.0, error="could not connect"))
            else:
                ms.append(Measurement(rail, d, 20.0 if ok else 5.0, "Gb/s", 10.0))
    return PairResult(rnd, a, b, ms)


def _full_mesh(nodes, verdict):
    """Every pair once, each pair's rails from verdict(a, b) -> {rail: ok}."""
    return [_pair(i, a, b, **verdict(a, b)) for i, (a, b) in enumerate(itertools.combinations(nodes, 2))]


NODES = [f"n{i}" for i in range(6)]


def test_a_bad_node_is_told_apart_from_its_peers():
    res = _full_mesh(NODES, lambda a, b: {"r0": "n2" not in (a, b), "r1": "n2" not in (a, b)})
    s = score(NODES, res)
    assert s.bad_nodes == ["n2"] and not s.bad_ports and not s.bad_links and not s.bad_rails
    assert [n for n in NODES if s.node_verdict(n) == "pass"] == ["n0", "n1", "n3", "n4", "n5"]
    assert s.pass_ratio("n2") == 0.0 and s.pass_ratio("n0") == pytest.approx(0.8)


def test_a_bad_rail_of_one_node():
    res = _full_mesh(NODES, lambda a, b: {"r0": True, "r1": "n4" not in (a, b)})
    s = score(NODES, res)
    assert s.bad_ports == [("n4", "r1")] and not s.bad_nodes and not s.bad_rails
    assert s.node_verdict("n4") == "fail" and s.node_verdict("n0") == "pass"


def test_a_rail_bad_across_the_fabric_is_the_rails_not_every_nodes():
    res = _full_mesh(NODES, lambda a, b: {"r0": True, "r1": False})
    s = score(NODES, res)
    assert s.bad_rails == ["r1"] and not s.bad_nodes and not s.bad_ports and not s.bad_links
    assert s.failed


def test_the_link_between_two_good_nodes():
    res = _full_mesh(NODES, lambda a, b: {"r0": {a, b} != {"n1", "n3"}})
    s = score(NODES, res)
    assert s.bad_links == [("n1", "n3", ["r0"])] and not s.bad_nodes
    assert s.node_verdict("n1") == s.node_verdict("n3") == "pass"


def test_a_bad_node_and_a_bad_link_together():
    def verdict(a, b):
        return {"r0": "n0" not in (a, b) and {a, b} != {"n2", "n5"}, "r1": "n0" not in (a, b)}

    s = score(NODES, _full_mesh(NODES, verdict))
    assert s.bad_nodes == ["n0"] and s.bad_links == [("n2", "n5", ["r0"])]


def test_two_nodes_cannot_tell_a_node_from_the_link():
    s = score(["a", "b"], [_pair(1, "a", "b", r0=False), _pair(2, "a", "b", r0=False)])
    assert not s.bad_nodes and not s.bad_links
    assert set(s.inconclusive) == {"a", "b"} and "cannot tell this node from its peer" in s.inconclusive["a"]
    assert s.node_verdict("a") == "error"  # never a silent pass


def test_a_tool_error_fails_the_test_and_an_untested_pair_is_no_evidence():
    res = _full_mesh(NODES, lambda a, b: {"r0": "error" if "n5" in (a, b) else True})
    s = score(NODES, res)
    assert s.bad_nodes == ["n5"]
    untested = [PairResult(1, "n0", "n1", error="srun: Unable to allocate resources")] + [
        _pair(2, a, b, r0=True) for a, b in (("n0", "n2"), ("n1", "n2"), ("n0", "n3"), ("n1", "n3"))]
    s = score(["n0", "n1", "n2", "n3"], untested)
    assert not s.failed and len(s.errors) == 1
    assert all(s.node_verdict(n) == "pass" for n in ("n0", "n1", "n2", "n3"))


def test_skipped_figures_are_no_evidence():
    res = [PairResult(1, "a", "b", [Measurement("rdma", "a>b", None, "Gb/s", None, skipped="perftest missing")])]
    s = score(["a", "b"], res)
    assert s.rails == [] and set(s.inconclusive) == {"a", "b"}


def test_a_measurement_without_a_floor_never_passes_silently():
    assert not Measurement("tcp", "a>b", 9.0, "Gb/s", None, skipped="no floor").passed
    assert Measurement("tcp", "a>b", 9.0, "Gb/s", 8.0).passed and not Measurement("tcp", "a>b", 7.9, "Gb/s", 8.0).passed


# ---------------------------------------------------------------------- the simulated cluster


def _found(nodes, rails, faults, seed=7, rounds=None):
    c = SimulatedCluster.build(nodes, rails, faults, seed=seed)
    sched = pairing.schedule(c.nodes, rounds or pairing.rounds_needed(nodes), seed)
    res = [c.run_pair(r.number, a, b, FLOORS) for r in sched for a, b in r.pairs]
    s = score(c.nodes, res)
    return s, c.planted()


@pytest.mark.parametrize("nodes,rails", [(16, 8), (17, 2), (8, 0)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_clean_simulated_cluster_passes(nodes, rails, seed):
    s, _ = _found(nodes, rails, [], seed=seed)
    assert not s.failed and not s.inconclusive
    assert all(s.node_verdict(n) == "pass" for n in s.nodes)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_every_planted_fault_is_found_and_attributed(seed):
    faults = ["node3:slow=0.5", "node5:rail1=0.5", "node9:rail6:down", "rail4=0.6", "node12:down",
              "link:node2-node7:down"]
    s, planted = _found(32, 8, faults, seed=seed, rounds=31)  # a whole tournament: every pair meets
    assert set(s.bad_nodes) == planted["nodes"] == {"node3", "node12"}
    assert set(s.bad_ports) == planted["ports"] == {("node5", "rail1"), ("node9", "rail6")}
    assert set(s.bad_rails) == planted["rails"] == {"rail4"}
    assert {(a, b) for a, b, _ in s.bad_links} == planted["links"] == {("node2", "node7")}
    assert not s.inconclusive


def test_tcp_only_cluster_names_the_slow_node():
    s, _ = _found(10, 0, ["node4:slow=0.3"])
    assert s.bad_nodes == ["node4"] and not s.bad_links


@pytest.mark.parametrize("text,why", [
    ("node3:slow", "not a fabric fault"), ("node3:slow=2", "the fraction left must be a number above 0 and below 1, got '2'"),
    ("node3:slow=0", "above 0 and below 1"), ("node99:down", "no node99 in a cluster of 16"),
    ("node1:rail9=0.5", "no rail9"), ("link:node1-node1:down", "two different nodes"),
    ("gpu3:pcie_width=8", "not a fabric fault"), ("node1:rail1=0.5x", "got '0.5x'"),
])
def test_faults_are_parsed_strictly(text, why):
    with pytest.raises(UsageError, match=why):
        SimulatedCluster.build(16, 8, [text])


# ---------------------------------------------------------------------- the command and its report


def _predicate(path):
    env = json.loads(open(path).read())
    stmt = json.loads(base64.b64decode(env["payload"]))
    return stmt, stmt["predicate"]


def test_fabric_report_signed_with_every_node_as_subject(tmp_path):
    p = cli("fabric", "--simulate", "12", "--rails", "2", "--seed", "3", "--out", str(tmp_path),
            "--inject", "node4:slow=0.4", "--inject", "node6:rail1:down")
    assert p.returncode == 1, p.stderr
    path = p.stdout.strip().splitlines()[-1]
    stmt, pred = _predicate(path)
    assert stmt["predicateType"] == "https://nodeqc.dev/fabric/v1"
    assert [s["name"] for s in stmt["subject"]] == [f"node:node{i}" for i in range(12)]
    assert all(len(s["digest"]["sha256"]) == 64 for s in stmt["subject"])
    assert pred["fabric"]["bad"]["nodes"] == ["node4"] and pred["fabric"]["bad"]["node_rails"] == [["node6", "rail1"]]
    assert pred["simulated"] and pred["fabric"]["seed"] == 3 and pred["fabric"]["rounds"] == 6
    assert len(pred["pairs"]) == 6 * 6 and {"round", "a", "b", "rails", "failed"} <= set(pred["pairs"][0])
    verdicts = {c["subject"]: (c["verdict"], c["code"]) for c in pred["checks"] if c["name"] == "fabric.node"}
    assert verdicts["node4"] == ("fail", "FABRIC_NODE") and verdicts["node6"] == ("fail", "FABRIC_NODE_RAIL")
    assert verdicts["node0"] == ("pass", None)
    assert "FAIL  fabric.node node4" in p.stderr

    v = cli("verify", path)
    assert v.returncode == 0 and "verified: FAIL" in v.stdout, v.stderr
    shown = cli("show", path)
    assert shown.returncode == 0
    assert "nodeqc fabric report: FAIL" in shown.stdout and "bad nodes                node4" in shown.stdout
    assert "node6:rail1" in shown.stdout and "-> This node failed its pair tests" in shown.stdout

    # The journal beside it holds every round's pairs, as they came; the report holds its digest.
    import hashlib
    from pathlib import Path

    journal = Path(path).with_name(pred["journal"]["file"])
    assert hashlib.sha256(journal.read_bytes()).hexdigest() == pred["journal"]["sha256"]
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [r["type"] for r in records] == ["run_started"] + ["fabric_round"] * 6 + ["run_finished"]
    assert sum(len(r["pairs"]) for r in records if r["type"] == "fabric_round") == len(pred["pairs"])
    j = cli("show", str(journal))
    assert j.returncode == 0 and "node fabric-simulated" in j.stdout

    # Altered: not verified.
    env = json.loads(open(path).read())
    stmt["predicate"]["verdict"] = "PASS"
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    forged = tmp_path / "forged.report.json"
    forged.write_text(json.dumps(env))
    assert cli("verify", str(forged)).returncode == 1


def test_clean_fabric_passes_and_the_archive_indexes_it():
    p = cli("fabric", "--simulate", "16", "--seed", "9", "--name", "rack7")  # files among the simulated runs
    assert p.returncode == 0, p.stderr
    assert "/fabric-rack7/fabric-rack7-" in p.stdout.strip() and "RESULT: PASS" in p.stderr
    h = cli("history", "--simulated")
    assert h.returncode == 0 and "fabric-rack7" in h.stdout and "PASS SIM" in h.stdout
    e = cli("export", "--simulated", "--format", "jsonl")
    rows = [json.loads(line) for line in e.stdout.splitlines()]
    # 16 nodes in 6 rounds test 48 of 120 pairs: the coverage row says so (not measured, not a failure);
    # the latency tail (the simulated cluster runs rdma,lat) is one row for the fabric.
    assert {r["check"] for r in rows} == {"fabric.node", "fabric.rail", "fabric.coverage", "fabric.tail"}
    assert len(rows) == 16 + 8 + 1 + 1
    assert [r["verdict"] for r in rows if r["check"] == "fabric.coverage"] == ["skip"]


def test_a_nodes_history_lists_the_fabric_runs_it_took_part_in():
    p = cli("fabric", "--simulate", "8", "--rails", "2", "--seed", "3", "--name", "rack9", "--inject", "node3:slow=0.4")
    assert p.returncode == 1, p.stderr
    bad = cli("history", "--simulated", "--node", "node3")
    (row,) = bad.stdout.splitlines()[1:]
    assert "fabric-rack9" in row and "fabric of 8" in row and "FABRIC FAIL SIM" in row and "FABRIC_NODE as node3" in row
    good = cli("history", "--simulated", "--node", "node1")
    (row,) = good.stdout.splitlines()[1:]
    assert "FABRIC PASS SIM" in row and "as node1" in row
    # --verdict is the node's own verdict in that fabric, not the fabric's.
    assert len(cli("history", "--simulated", "--node", "node3", "--verdict", "fail").stdout.splitlines()) == 2
    assert cli("history", "--simulated", "--node", "node1", "--verdict", "fail").stdout == ""
    assert cli("history", "--simulated", "--node", "node42").stdout == ""  # not a member
    everything = cli("history", "--simulated")
    assert "FABRIC FAIL SIM" in everything.stdout and "fabric of 8" in everything.stdout


def test_a_fabric_member_is_found_by_its_name_host_name_or_serial():
    import dataclasses

    from nodeqc.archive.verified import Entry, _fabric_members

    predicate = {"kind": "fabric", "nodes": [
        {"name": "gpu17", "verdict": "fail", "identity": {"hostname": "gpu17.dc1", "system_serial": "SN-17"}},
        {"name": "gpu42", "verdict": "pass", "identity": {"hostname": "gpu42"}}],
        "checks": [{"name": "fabric.node", "subject": "gpu17", "code": "FABRIC_NODE_RAIL"}]}
    members = _fabric_members(predicate)
    entry = Entry(rel="fabric-x/r.report.json", sha256="0" * 64, node="fabric-x", hostname="fabric-x", verdict="FAIL",
                  status="complete", partial=False, simulated=False, profile="generic", started_at="", finished_at="",
                  operator=None, ticket=None, keyid="k", previous=None, failed=[], root=Path("/r"), members=members)
    assert entry.fabric and [entry.member(n)[0] for n in ("gpu17", "gpu17.dc1", "SN-17", "gpu42")] == \
        ["gpu17", "gpu17", "gpu17", "gpu42"]
    assert entry.member("SN-17")[1]["code"] == "FABRIC_NODE_RAIL" and entry.member("gpu99") is None
    assert _fabric_members({"kind": "node", "nodes": []}) == {}
    # A worker that claims a host name other than its name in the run: neither it nor the serial beside
    # it is believed, and the members it named keep theirs.
    liar = {"name": "gpu03", "verdict": "fail", "identity": {"hostname": "gpu42", "system_serial": "SN-17"}}
    members = _fabric_members({**predicate, "nodes": [*predicate["nodes"], liar]})
    assert [(m["key"], m["hostname"]) for m in members.values()] == [("SN-17", "gpu17.dc1"), ("gpu42", "gpu42"),
                                                                     (None, None)]
    # One that claims another member's serial under its own host name: the serial is neither's.
    liar["identity"]["hostname"] = "GPU03.dc1"
    members = _fabric_members({**predicate, "nodes": [*predicate["nodes"], liar]})
    assert [(m["key"], m["hostname"]) for m in members.values()] == [(None, "gpu17.dc1"), ("gpu42", "gpu42"),
                                                                     (None, "GPU03.dc1")]
    entry = dataclasses.replace(entry, members=members)
    assert entry.member("SN-17") is None and entry.member("gpu17.dc1")[0] == "gpu17" and entry.member("gpu03")[0] == "gpu03"


def test_a_worker_cannot_file_its_fabric_verdict_under_a_node_outside_its_run(tmp_path):
    """The 2026-11-28 audit: a worker's identity is its own word. One the run named gpu03 that claimed
    the serial of gpu17, a node not in its run, had its fabric verdict listed in gpu17's history (and
    counted by `history --verdict fail`). A member found by its claim, not its name in the run, is
    now believed only where that name is a host name the node's own reports give (none: not at all)."""
    from nodeqc.archive.index import Archive
    from reports_for_tests import file_report, predicate

    def fabric(run: str, day: int, nodes: list) -> dict:
        pred = predicate(run, "FAIL", finished_at=f"2026-11-0{day}T10:00:00Z")
        pred.update(kind="fabric", nodes=nodes)
        return pred

    root = tmp_path / "archive"
    file_report(root, predicate("SN-17", "PASS", hostname="gpu17.dc1"))
    file_report(root, fabric("fabric-a", 2, [{"name": "gpu03", "verdict": "fail",
                                              "identity": {"hostname": "gpu03", "system_serial": "SN-17"}},
                                             {"name": "gpu11", "verdict": "pass", "identity": {"hostname": "gpu11"}}]))
    file_report(root, fabric("fabric-b", 3, [{"name": "gpu17", "verdict": "pass",
                                              "identity": {"hostname": "gpu17.dc1", "system_serial": "SN-17"}},
                                             {"name": "gpu42", "verdict": "fail", "identity": {"hostname": "gpu42"}}]))
    archive = Archive(root)
    for name in ("SN-17", "gpu17.dc1"):
        assert [e.node for e in archive.reports(node=name, fabrics=True)] == ["fabric-b", "SN-17"], name
    assert [e.node for e in archive.reports(node="gpu17", fabrics=True)] == ["fabric-b"]  # its name in that run
    assert archive.reports(node="SN-17", fabrics=True, verdict="fail") == []
    # A node with no report of its own has no host name to hold a claim to: no worker's claim of its
    # serial is believed (gpu05 claims gpu99's), until the node has one; by its run name it is found.
    file_report(root, fabric("fabric-c", 4, [{"name": "gpu05", "verdict": "fail",
                                              "identity": {"hostname": "gpu05", "system_serial": "SN-99"}},
                                             {"name": "gpu06", "verdict": "pass", "identity": {"hostname": "gpu06"}}]))
    assert Archive(root).reports(node="SN-99", fabrics=True) == []
    assert Archive(root).reports(node="SN-99", fabrics=True, verdict="fail") == []
    assert [e.node for e in Archive(root).reports(node="gpu05", fabrics=True)] == ["fabric-c"]
    file_report(root, predicate("SN-99", "PASS", hostname="gpu99", finished_at="2026-11-05T10:00:00Z"))
    assert [e.node for e in Archive(root).reports(node="SN-99", fabrics=True)] == ["SN-99"]
    file_report(root, fabric("fabric-d", 6, [{"name": "gpu99", "verdict": "pass",
                                              "identity": {"hostname": "gpu99", "system_serial": "SN-99"}},
                                             {"name": "gpu06", "verdict": "pass", "identity": {"hostname": "gpu06"}}]))
    assert [e.node for e in Archive(root).reports(node="SN-99", fabrics=True)] == ["fabric-d", "SN-99"]


def test_dead_nodes_on_a_lone_rail_fail_and_a_simulated_run_returns_no_node_to_service(tmp_path):
    """The 2026-11-29 fuzzing: with one rail and 4 of 8 nodes down, the rail was named and the four
    dead nodes passed ("pass ratio 0%"); `verify --fabric-nodes` printed them pass, exit 0, the
    lines nodeqc-retest --fabric returns nodes to service by. Now the dead fail, and a simulated
    run's verdicts are refused there: they are no real node's."""
    dead = ("node2", "node5", "node6", "node7")
    p = cli("fabric", "--simulate", "8", "--seed", "1", "--rails", "1", *[a for n in dead for a in ("--inject", f"{n}:down")],
            "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    for n in dead:
        assert f"FAIL  fabric.node {n}: failed its pair tests" in p.stderr
    assert "FABRIC_RAIL" not in p.stderr
    [report] = tmp_path.glob("*.report.json")
    v = cli("verify", str(report), "--fabric-nodes")
    assert v.returncode == 1 and v.stdout == "" and "a simulated fabric run: no real node's verdict stands" in v.stderr


def test_a_leaf_whose_nodes_are_all_down_is_named_as_the_leaf(tmp_path):
    """The 2026-11-29 notes: with the leaves known and one rail, a leaf of three nodes all down named
    the rail (every node not judged) and one of four named the other leaf's uplink. The leaf is named,
    its nodes never pass (judged with it), and the planted faults are found in it."""
    dead = ("node3", "node4", "node5")
    p = cli("fabric", "--simulate", "6", "--leaves", "2", "--seed", "1", "--rails", "1",
            *[a for n in dead for a in ("--inject", f"{n}:down")], "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "FAIL  fabric.leaf L1: every test of its 3 nodes failed" in p.stderr and "FABRIC_RAIL" not in p.stderr
    for n in dead:
        assert f"ERROR fabric.node {n}: inconclusive: under L1, whose every test failed" in p.stderr
        assert f"simulated fault {n}:down: found" in p.stderr
    [report] = tmp_path.glob("*.report.json")
    assert "dead leaves              L1" in cli("show", str(report)).stdout


@pytest.mark.parametrize("args, code, said", [
    # Milder than the floors: every test it touched passed ("missed: NOT FOUND" before, exit 0).
    (["--rounds", "7", "--inject", "node1:slow=0.9"], 0, "node1:slow=0.9: within the floors: every test it touched "
                                                         "passed its floors"),
    # A group run: judged by its groups, which passed it ("inconclusive: node1 could not be judged" before).
    (["--group-size", "3", "--tests", "nccl", "--min-nccl-busbw", "100", "--inject", "node1:nccl=0.5"], 0,
     "node1:nccl=0.5: within the floors"),
    # Just past the floors, failed on a link of the node ("missed" before).
    (["--rounds", "7", "--inject", "node1:slow=0.88"], 1,
     "node1:slow=0.88: blamed elsewhere: the run fails node1-node7, on its path"),
])
def test_each_planted_fault_is_labelled_by_what_the_run_did_with_it(tmp_path, args, code, said):
    """The 2026-11-29 fuzzing: planted faults the floors cannot see, or that a link took the blame
    for, or that only group tests judge, were labelled "missed" or "inconclusive"."""
    p = cli("fabric", "--simulate", "8", "--seed", "1", *args, "--out", str(tmp_path))
    assert p.returncode == code, p.stderr
    assert f"simulated fault {said}" in p.stderr, p.stderr


def test_a_straggler_two_nodes_cannot_place_is_blamed_on_their_pairs_tail(tmp_path):
    """Two nodes: the high tail fails their pair and neither node (no second witness); the label said
    "missed", and the review's first mend "within the floors" (tails were not counted as failures)."""
    p = cli("fabric", "--simulate", "2", "--seed", "1", "--inject", "node1:straggler", "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert ("simulated fault node1:straggler: blamed elsewhere: the run fails node0-node1's tail, on its path"
            in p.stderr), p.stderr


def test_a_collectives_fault_without_group_tests_is_refused():
    """Planted without --group-size it was never tested, and the run passed (exit 0)."""
    p = cli("fabric", "--simulate", "8", "--inject", "node1:nccl=0.5")
    assert p.returncode == 2
    assert p.stderr.strip() == ("nodeqc: --inject node1:nccl=0.5: a fault of the collectives' path shows only in group "
                                "tests: add --group-size K (or auto)")


def test_a_node_that_cannot_be_judged_exits_2(tmp_path):
    p = cli("fabric", "--simulate", "2", "--rails", "1", "--inject", "node1:down", "--out", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "inconclusive" in p.stderr and "FABRIC_INCONCLUSIVE" in p.stderr


@pytest.mark.parametrize("args,message", [
    (["--simulate", "8", "--tests", "udp"], "--tests udp: expected some of tcp, rdma, nccl"),
    (["--simulate", "4", "--nodeqc", "'"], "--nodeqc ': No closing quotation"),  # an internal error before
    # Other scripts' digits were taken as numbers (2026-11-29 fuzzing): node٣ as node3, ４ as 4.
    (["--simulate", "\u0664"], "argument --simulate: expected a whole number, got"),
    (["--simulate", " 4"], "argument --simulate: expected a whole number, got"),
    (["--simulate", "4", "--port", "\uff11\uff15\uff12\uff10\uff11"], "argument --port: expected a whole number"),
    (["--simulate", "4", "--inject", "node\u0663:down"], "not a fabric fault"),
    (["--simulate", "8", "--spines", "2"], "--spines 2: spines stand above leaves: give --leaves K too"),
    (["--hosts", "a,b", "--launch", "x", "--inject", "node1:down"], "--inject needs --simulate"),
    (["--hosts", "a,b"], "--hosts needs --launch PREFIX"),
    (["--hosts", "a,b", "--launch", "ssh"], "must contain {host}"),
    (["--hosts", "a", "--launch", "env H={host}"], "at least two nodes"),
    (["--hosts", "a,b,a", "--launch", "env H={host}"], "node a is listed twice"),
    # DNS names are the same without case or a final dot; ".." and "::" are no host at all
    (["--hosts", "a,b,A.", "--launch", "env H={host}"], "node A. is listed twice (as A., a: host names are the same"),
    (["--hosts", "a,..", "--launch", "env H={host}"], "--hosts ..: no letter or digit"),
    # an address reached the workers' argv joined with ',' and ' ', then iperf3's: accepted, exit 0, before
    (["--simulate", "4", "--address", "node0=-oProxyCommand=x"], "--address node0= -oProxyCommand=x: starts with '-'"),
    (["--simulate", "4", "--address", "node0=a,b"], "--address node0= a,b: not a host name"),
    (["--simulate", "4", "--address", "node1=x node0=evil"], "not a host name"),
    (["--slurm"], "inside a job's allocation"),
    (["--simulate", "8", "--drain"], "--drain drains Slurm nodes"),
    (["--simulate", "8", "--image", "nodeqc:1"], "--image is the Kubernetes pods' image: it needs --k8s"),
    (["--simulate", "8", "--confidence", "1.5"], "--confidence 1.5"),
    (["--simulate", "8", "--inject", "node9:down"], "no node9 in a cluster of 8"),
    (["--simulate", "1"], "at least two nodes"),
    (["--simulate", "99999999999"], "--simulate 99999999999: at most 4096 simulated nodes"),  # ran away before
    (["--simulate", "8", "--tests", "nccl"], "the simulated cluster runs rdma"),
    (["--hosts", "@/no/such/file", "--launch", "env H={host}"], "--hosts @/no/such/file: cannot read"),
    ([], "one of the arguments --slurm --hosts --k8s --simulate is required"),
    (["--hosts", "a,b", "--launch", "env H={host}", "--tests", "nccl"], "--min-nccl-busbw"),
    (["--hosts", "a,b", "--launch", "env H={host}", "--port", "80"], "--port 80: expected 1024 to 63527"),
    (["--hosts", "a,b", "--launch", "env H={host}", "--port", "65000"], "--port 65000: expected 1024 to"),
    # nan floors passed every pair (each comparison with nan is false); nan seconds reached the workers
    (["--simulate", "4", "--min-tcp-gbps", "nan"], "--min-tcp-gbps: expected a number from 0 to 1e+06, got 'nan'"),
    (["--simulate", "4", "--min-nvlink-busbw", "inf"], "--min-nvlink-busbw: expected a number from 0 to 1e+06"),
    (["--simulate", "4", "--max-lat-p99-us", "nan"], "--max-lat-p99-us: expected a number from 0 to"),
    (["--simulate", "4", "--seconds", "nan"], "--seconds: expected a number above 0, at most 86400, got 'nan'"),
    (["--simulate", "4", "--seconds", "0"], "--seconds: expected a number above 0, at most 86400, got '0'"),
    (["--simulate", "4", "--nccl-bytes", "3"], "--nccl-bytes: expected a whole number from 4 to"),
    # math.isfinite of a 400-digit whole number raised OverflowError: an internal error (2026-11-29 fuzzing)
    (["--simulate", "4", "--nccl-bytes", "9" * 400], "--nccl-bytes: expected a whole number from 4 to"),
    # a fraction out of range was "not a fabric fault" with the whole vocabulary; 0 alone said why
    (["--simulate", "4", "--inject", "node0:slow=-1"], "the fraction left must be a number above 0 and below 1, got '-1'"),
    (["--simulate", "4", "--inject", "link:node0-node1=2"], "the fraction left must be a number above 0 and below 1, got '2'"),
])
def test_usage_errors_are_one_line(args, message):
    env = {"SLURM_JOB_ID": ""}
    p = cli("fabric", *args, env=env)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_list_of_100000_hosts_is_refused_at_once_for_its_size(tmp_path):
    """A duplicate search per name took minutes over a 4 MB list; the port range holds far fewer nodes."""
    hosts = tmp_path / "hosts"
    hosts.write_text("\n".join(f"gpu{n:06d}" for n in range(100_000)))
    p = cli("fabric", "--hosts", f"@{hosts}", "--launch", "env H={host}", timeout=30)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "nodeqc: 100000 nodes: one fabric run takes at most 15627 (its ports, 4 a node, come from one range of 1024 "
        "to 65535)"]


def test_a_host_file_takes_comments_and_names_a_bad_host_with_its_line(tmp_path):
    """`#` comments were read as host names ("#: not a host name"), and a bad name was not placed."""
    from nodeqc.fabric.cli import _host_list

    hosts = tmp_path / "hosts"
    hosts.write_text("# rack 12\ngpu01, gpu02  # the first pair\n\ngpu03\ngpu04;reboot\n")
    with pytest.raises(UsageError) as e:
        _host_list("--hosts", f"@{hosts}")
    assert str(e.value).startswith(f"--hosts {hosts}:5: gpu04;reboot: not a host name")
    hosts.write_text("# rack 12\ngpu01, gpu02  # the first pair\n\ngpu03\n")
    assert _host_list("--hosts", f"@{hosts}") == ["gpu01", "gpu02", "gpu03"]


@pytest.mark.parametrize("given, env, port", [(["--port", "23001"], {}, "23001"), ([], {"NODEQC_FABRIC_PORT": "24001"}, "24001"),
                                              ([], {"NODEQC_FABRIC_PORT": ""}, "15201")])
def test_the_pair_tests_ports_start_at_port(tmp_path, given, env, port):
    """--port (else $NODEQC_FABRIC_PORT, else 15201) is the first port of a round's first pair: two
    fabric runs sharing hosts (two test workers on one machine, two jobs on shared login nodes) keep
    apart. The 'nodes' here only write down how they were started."""
    log = tmp_path / "started"
    p = cli("fabric", "--hosts", "a,b", "--launch", "env H={host}", "--nodeqc", f"sh -c 'echo \"$*\" >> {log}' worker",
            "--tests", "tcp", "--min-tcp-gbps", "1", "--rounds", "1", "--out", str(tmp_path), *given, env=env)
    assert p.returncode == 2, p.stderr  # the 'nodes' printed no result: not judged
    started = log.read_text().splitlines()
    assert len(started) == 2 and all(f"--port {port} " in f"{line} " for line in started), started
    p = cli("fabric", "--hosts", "a,b", "--launch", "env H={host}", env={"NODEQC_FABRIC_PORT": "15k"})
    assert p.returncode == 2 and p.stderr.strip() == "nodeqc: $NODEQC_FABRIC_PORT '15k': expected a port number"


def test_sigterm_stops_the_rounds_and_the_report_says_aborted(tmp_path):
    # Workers that hang (a `sleep` in place of nodeqc on the nodes): SIGTERM ends them at once and
    # the report of what ran is written, marked aborted (exit 2).
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    proc = subprocess.Popen([sys.executable, "-m", "nodeqc", "fabric", "--hosts", "a,b,c,d", "--launch", "env H={host}",
                             "--nodeqc", "sh -c 'sleep 60' hang", "--tests", "tcp", "--min-tcp-gbps", "1",
                             "--rounds", "3", "--out", str(tmp_path)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "SIGTERM: stopping" in err and "ABORTED" in err and "Traceback" not in err
    _, pred = _predicate(out.strip().splitlines()[-1])
    assert pred["status"] == "aborted" and pred["verdict"] == "FAIL"
    assert all("error" in r for r in pred["pairs"]) and len(pred["pairs"]) == 2  # the first round only


def test_the_headline_matches_the_exit_when_nothing_failed_but_nodes_could_not_be_judged():
    """Two nodes, one slow: neither can be told from its only peer. Nothing failed, so the headline
    is ERROR (exit 2), as a node's run says it, not FAIL."""
    p = cli("fabric", "--simulate", "2", "--seed", "3", "--inject", "node1:slow=0.5")
    assert p.returncode == 2, p.stderr
    assert "RESULT: ERROR (could not judge: not qualified)  (" in p.stderr and "RESULT: FAIL" not in p.stderr


@pytest.mark.parametrize("nodes, distinct", [(2, "only 1 distinct round is possible with 2 nodes"),
                                             (4, "only 3 distinct rounds are possible with 4 nodes")])
def test_too_few_nodes_for_the_confidence_says_so(nodes, distinct):
    p = cli("fabric", "--simulate", str(nodes), "--seed", "3")
    assert p.returncode == 0, p.stderr
    assert f"0.999 confidence is out of reach: {distinct}" in p.stderr and "the fewest for" not in p.stderr
    # Enough nodes: the target is met and said as before.
    assert "the fewest for 0.999 confidence" in cli("fabric", "--simulate", "16", "--seed", "3").stderr


def test_show_of_a_fabric_report_names_a_ticket_only_when_given(tmp_path):
    """It printed `ticket None` for a run without --ticket."""
    for extra, said in (([], None), (["--ticket", "T-9"], "ticket T-9")):
        p = cli("fabric", "--simulate", "4", "--seed", "3", "--out", str(tmp_path / (said or "none")), *extra)
        shown = cli("show", p.stdout.strip().splitlines()[-1]).stdout
        operator = next(line for line in shown.splitlines() if line.startswith("operator  "))
        assert "None" not in operator and (said in operator if said else "ticket" not in operator), operator


def test_show_of_a_fabric_report_escapes_what_the_nodes_printed():
    """A failed check's message carries a worker's own text (its error, the tail of what it printed):
    `nodeqc show` of a fabric report wrote it raw, escapes and all (the 2026-11-28 hostile-node audit)."""
    from nodeqc.core.model import CheckResult, Verdict
    from nodeqc.report.render import render_fabric_report
    hostile = "no result\x1b]0;owned\x07\x1b[2J signature: verified"
    predicate = {"fabric": {"name": "f", "nodes": ["n1"]},
                 "checks": [CheckResult("fabric.node", "n1", Verdict.ERROR, hostile, code="FABRIC_NODE").to_dict()]}
    shown = render_fabric_report(predicate, "signature: NOT verified")
    assert "\x1b" not in shown and "\x07" not in shown
    assert "no result\\x1b]0;owned\\x07\\x1b[2J signature: verified" in shown



@pytest.mark.parametrize("groups", [False, True])
def test_a_round_the_abort_ended_is_not_judged(tmp_path, capsys, monkeypatch, groups):
    """scancel and systemd's stop signal the fabric run's whole step, the ends of the round in flight
    too: a test killed halfway reads as failed (its tool's error), and the round the abort ended was
    judged, naming a good link or group bad in the aborted report. Its pairs and groups are now not
    tested, saying why."""
    import dataclasses
    import os
    import signal

    from nodeqc.cli.main import main
    from nodeqc.fabric.launchers import SimulatedLauncher
    from nodeqc.report.envelope import decode_statement, read_envelope

    name = "run_groups" if groups else "run_round"
    ran, calls = getattr(SimulatedLauncher, name), []

    def killed_in_the_third_round(self, *args):
        done = ran(self, *args)
        calls.append(1)
        if len(calls) < 3:
            return done
        os.kill(os.getpid(), signal.SIGTERM)  # the step's signal, while this round's ends run
        killed = [dataclasses.replace(m, value=None, error="iperf3 exited -15 (SIGTERM)") for m in done[0].measurements]
        return [dataclasses.replace(done[0], measurements=killed), *done[1:]]
    monkeypatch.setattr(SimulatedLauncher, name, killed_in_the_third_round)
    argv = ["fabric", "--simulate", "8", "--seed", "3", "--out", str(tmp_path)]
    if groups:
        argv += ["--tests", "nccl", "--group-size", "4", "--profile", "hgx-h100", "--inject", "node5:slow=0.4"]
    code = main(argv)
    report = decode_statement(read_envelope(next(tmp_path.glob("*.report.json"))))["predicate"]
    assert code == 2 and report["status"] == "aborted", capsys.readouterr().err
    bad = report["fabric"]["bad"]
    assert not bad["links"] and not bad["node_rails"] and set(bad["nodes"]) <= {"node5"}, bad
    assert not [c for c in report["checks"] if c["verdict"] == "fail" and "node5" not in c["subject"]], \
        [(c["name"], c["subject"], c["message"]) for c in report["checks"] if c["verdict"] == "fail"]
    if not groups:
        killed = [r for r in report["pairs"] if r.get("error") == "the run was aborted while it ran"]
        assert len(killed) == 4 and all(r["round"] == 3 for r in killed), report["pairs"]
