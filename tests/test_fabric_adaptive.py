"""Adaptive isolation (nodeqc/fabric/adaptive.py): every node tested once, then each suspect against
known-good partners; it names the planted faults as random pairs do, in fewer tests and rounds."""

import base64
import json

import pytest

from conftest import cli
from nodeqc.fabric import pairing
from nodeqc.fabric.adaptive import isolate
from nodeqc.fabric.scoring import Floors, score
from nodeqc.fabric.simulated import SimulatedCluster

FLOORS = Floors(rdma_fraction=0.85, tcp_fraction=0.5)


def _isolate(c, seed):
    return isolate(c.nodes, lambda rd: [c.run_pair(rd.number, a, b, FLOORS) for a, b in rd.pairs], seed)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_fault_is_named_in_fewer_tests_and_rounds_than_random_pairs(seed):
    n = 512
    first = pairing.schedule([f"node{i}" for i in range(n)], 1, seed)[0]
    a, b = first.pairs[7]  # a bad link the first round tests
    faults = ["node3:slow=0.5", "node40:down", "node77:rail2:down", "node150:rail5=0.5", "rail6=0.6",
              f"link:{a}-{b}=0.3"]
    faults = [f for f in faults if not any(x in f for x in (f"{a}:", f"{b}:"))]
    c = SimulatedCluster.build(n, 8, faults, seed=seed)
    rounds, results = _isolate(c, seed)
    s = score(c.nodes, results)
    planted = c.planted()
    assert set(s.bad_nodes) == planted["nodes"] and set(s.bad_ports) == planted["ports"]
    assert set(s.bad_rails) == planted["rails"] and {(x, y) for x, y, _ in s.bad_links} == planted["links"]
    assert not s.inconclusive
    random_rounds = pairing.rounds_needed(n)
    assert len(rounds) <= 4 < random_rounds and len(results) < random_rounds * n // 2 // 3
    # each suspect met known-good partners it had not met: no pair twice
    assert len({frozenset((r.a, r.b)) for r in results}) == len(results)


def test_a_clean_fleet_takes_one_round():
    c = SimulatedCluster.build(64, 2, [], seed=4)
    rounds, results = _isolate(c, 4)
    assert len(rounds) == 1 and len(results) == 32 and not score(c.nodes, results).failed


def test_a_good_node_behind_a_bad_peer_is_cleared_and_the_peer_named():
    c = SimulatedCluster.build(16, 0, ["node5:down"], seed=2)
    rounds, results = _isolate(c, 2)
    s = score(c.nodes, results)
    assert s.bad_nodes == ["node5"] and not s.inconclusive and not s.bad_links
    peer = next(r.b if r.a == "node5" else r.a for r in results if r.round == 1 and "node5" in (r.a, r.b))
    assert s.node_verdict(peer) == "pass" and len(rounds) == 3


@pytest.mark.parametrize("seed", [1, 2])
def test_a_straggler_is_a_suspect_and_named_after_its_known_good_partners(seed):
    # Its bandwidth passes everywhere: only its tail says it. One high pair alone names nobody
    # (tails.judge wants two peers), so the adaptive rounds must test it again, and clear its peer.
    c = SimulatedCluster.build(64, 2, ["node11:straggler", "node40:slow=0.5"], seed=seed)
    rounds, results = _isolate(c, seed)
    s = score(c.nodes, results)
    assert list(s.tails.stragglers) == ["node11"] and s.bad_nodes == ["node40"]
    assert not s.tails.pairs_high and not s.tails.fabric_wide and not s.inconclusive
    mine = [r for r in results if "node11" in (r.a, r.b)]
    assert len(mine) == 3 and len(rounds) <= 4
    peer = next(r.b if r.a == "node11" else r.a for r in mine if r.round == 1)
    assert s.node_verdict(peer) == "pass"


def test_a_fabric_wide_high_tail_makes_no_node_a_suspect():
    # Three pairs in four with a high tail: the fabric's, not a node's (tails.judge says so); testing
    # each of their nodes against the few "known good" ones would blame nobody, in rounds.
    from dataclasses import replace

    c = SimulatedCluster.build(32, 2, [], seed=5)

    def run_round(rd):
        out = []
        for i, (a, b) in enumerate(rd.pairs):
            r = c.run_pair(rd.number, a, b, FLOORS)
            if i % 4:
                r.latencies = [replace(lat, p99=lat.floor * 3) for lat in r.latencies]
            out.append(r)
        return out

    rounds, results = isolate(c.nodes, run_round, 5)
    s = score(c.nodes, results)
    assert len(rounds) == 1 and s.tails.fabric_wide and not s.tails.stragglers and not s.bad_nodes


def test_the_command_names_a_straggler_adaptively(tmp_path):
    p = cli("fabric", "--simulate", "32", "--rails", "2", "--adaptive", "--seed", "3", "--inject", "node3:straggler",
            "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "FAIL  fabric.tail node3:" in p.stderr and "FABRIC_STRAGGLER" in p.stderr
    assert "node3:straggler: found" in p.stderr


def _predicate(path):
    env = json.loads(open(path).read())
    return json.loads(base64.b64decode(env["payload"]))["predicate"]


def test_the_command_runs_adaptively(tmp_path):
    p = cli("fabric", "--simulate", "64", "--adaptive", "--seed", "2", "--inject", "node3:slow=0.5",
            "--inject", "node9:rail2:down", "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "adaptive rounds" in p.stderr and "round 1/..: 32 pairs" in p.stderr
    assert "FAIL  fabric.node node3" in p.stderr and "FAIL  fabric.node node9" in p.stderr
    pred = _predicate(p.stdout.strip().splitlines()[-1])
    assert pred["fabric"]["rounds"] == len(pred["fabric"]["schedule"]) <= 4
    assert pred["fabric"]["confidence_reached"] is None


# ---------------------------------------------------------------- with a topology

def _isolate_over(c, seed):
    return isolate(c.nodes, lambda rd: [c.run_pair(rd.number, a, b, FLOORS) for a, b in rd.pairs], seed,
                   topology=c.topology)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_over_a_topology_bad_uplinks_and_nodes_are_named_in_fewer_tests_and_rounds(seed):
    """256 nodes, 8 leaves of 32 under 2 spines: a leaf's uplink at half rate, a spine's down, two
    bad nodes elsewhere. Each is named, as topology-aware pairs name them, and no good node is blamed
    for its leaf's uplink, in fewer rounds and tests than topology_schedule's."""
    n, leaves, spines = 256, 8, 2
    bare = SimulatedCluster.build(n, 2, [], seed=seed, leaves=leaves, spines=spines)
    leaf_of = bare.topology.leaf_of
    others = [x for x in bare.nodes if leaf_of[x] not in ("L1", "L6")]
    faults = ["leaf:L1:slow=0.5", "spine:S1:down", f"{others[3]}:slow=0.4", f"{others[40]}:down"]
    c = SimulatedCluster.build(n, 2, faults, seed=seed, leaves=leaves, spines=spines)
    rounds, results = _isolate_over(c, seed)
    s = score(c.nodes, results, c.topology)
    named = {x for u in s.bad_uplinks for x in (u.switch, *u.alternatives, *u.same) if x}
    assert set(c.faults.uplink) <= named, s.bad_uplinks
    assert set(s.bad_nodes) == c.planted()["nodes"] and not s.bad_ports and not s.inconclusive
    # The first round never leaves a leaf (with leaves of an even size): a bad uplink cannot make a suspect.
    assert all(leaf_of[a] == leaf_of[b] for a, b in rounds[0].pairs)
    planned = pairing.topology_schedule(c.nodes, c.topology, pairing.rounds_needed(n), seed)
    assert len(rounds) < len(planned) and len(results) < sum(len(r.pairs) for r in planned)
    assert len({frozenset((r.a, r.b)) for r in results}) == len(results)  # no pair twice


def test_a_suspects_partner_is_a_known_good_node_of_its_own_leaf_where_there_is_one():
    c = SimulatedCluster.build(64, 0, ["node5:down"], seed=3, leaves=4, spines=2)
    rounds, results = _isolate_over(c, 3)
    leaf = c.topology.leaf_of
    confirming = [r for r in results if r.round > 1 and "node5" in (r.a, r.b)]
    assert len(confirming) >= 2 and all(leaf[r.a] == leaf[r.b] for r in confirming)
    assert score(c.nodes, results, c.topology).bad_nodes == ["node5"]


def test_the_command_runs_adaptively_over_a_topology(tmp_path):
    p = cli("fabric", "--simulate", "64", "--leaves", "4", "--spines", "2", "--adaptive", "--seed", "2",
            "--inject", "leaf:L2:slow=0.5", "--out", str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "adaptive over the topology" in p.stderr and "FAIL  fabric.uplink" in p.stderr
    assert "FAIL  fabric.node" not in p.stderr  # the leaf's nodes are not blamed for its uplink


@pytest.mark.parametrize("args,message", [
    (["--simulate", "8", "--adaptive", "--rounds", "3"], "--adaptive chooses its rounds"),
])
def test_adaptive_usage_errors(args, message):
    p = cli("fabric", *args)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
