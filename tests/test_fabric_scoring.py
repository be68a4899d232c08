"""The fabric's scoring at its boundaries (nodeqc/fabric/scoring.py), one rule at a time, with small
hand-made result sets whose right answer can be worked out by hand: what is named bad, what is
cleared, what is left inconclusive and why, and each port's tallies after the bad ones are explained
away. Written after a mutation run of scoring.py (benchmarks/RESULTS.md) showed test_fabric.py's
whole-mesh cases left most of these rules unpinned."""

import pytest

from nodeqc.fabric.scoring import Floors, Measurement, PairResult, score


def _pair(a, b, rnd=1, **rails):
    """rails: name -> True (passed both ways) or False (below the floor both ways)."""
    return PairResult(rnd, a, b, [Measurement(rail, d, 20.0 if ok else 5.0, "Gb/s", 10.0)
                                  for rail, ok in rails.items() for d in ("a>b", "b>a")])


def _tally(s, node, rail="r0"):
    p = s.ports[(node, rail)]
    return p.tests, p.fails, p.failing_peers, p.raw_tests, p.raw_fails


# ---------------------------------------------------------------------- explaining a bad port away


def test_naming_a_bad_node_takes_its_tests_off_its_peers_tallies():
    """n0 fails with everyone (twice with n1). n1 met n0 in two of its three tests: held against it,
    it would fail half or more and be inconclusive; explained away, its one remaining test passed.
    n5 met only n0: nothing is left to clear it, and it says so."""
    results = [_pair("n0", "n1", 1, r0=False), _pair("n0", "n1", 2, r0=False), _pair("n0", "n2", r0=False),
               _pair("n0", "n3", r0=False), _pair("n0", "n5", r0=False),
               _pair("n1", "n2", r0=True), _pair("n2", "n3", r0=True), _pair("n3", "n4", r0=True),
               _pair("n2", "n4", r0=True)]
    s = score(["n0", "n1", "n2", "n3", "n4", "n5"], results)
    assert s.bad_nodes == ["n0"] and s.bad_ports == [] and s.bad_links == [] and s.bad_rails == []
    assert s.inconclusive == {"n5": "r0: every peer it met was named bad: no test left to clear it"}
    # The named port keeps its own tallies; each failure it explains is off its peer's.
    assert _tally(s, "n0") == (5, 5, {"n1": 2, "n2": 1, "n3": 1, "n5": 1}, 5, 5)
    assert _tally(s, "n1") == (1, 0, {}, 3, 2)
    assert _tally(s, "n2") == (3, 0, {}, 4, 1)
    assert _tally(s, "n5") == (0, 0, {}, 1, 1)
    assert s.ports[("n1", "r0")].cleared and not s.ports[("n5", "r0")].cleared
    assert [s.node_verdict(n) for n in s.nodes] == ["fail", "pass", "pass", "pass", "pass", "error"]
    # The raw pass ratio is before explaining away: n1 passed one test in three.
    assert s.pass_ratio("n1") == pytest.approx(1 / 3) and s.pass_ratio("n0") == 0.0


def test_two_bad_nodes_that_met_explain_their_shared_test_once():
    """b0 and b1 both fail with everyone, each other included: naming the first takes that shared
    test off the second, and naming the second must not take it off the first again."""
    good = ["g0", "g1", "g2"]
    results = [_pair("b0", "b1", r0=False)]
    results += [_pair(b, g, r0=False) for b in ("b0", "b1") for g in good]
    results += [_pair("g0", "g1", r0=True), _pair("g1", "g2", r0=True), _pair("g0", "g2", r0=True)]
    s = score(["b0", "b1", *good], results)
    assert s.bad_nodes == ["b0", "b1"] and s.inconclusive == {} and s.bad_links == []
    first, second = _tally(s, "b0"), _tally(s, "b1")
    assert first == (4, 4, {"b1": 1, "g0": 1, "g1": 1, "g2": 1}, 4, 4)  # named first (ties: by name)
    assert second == (3, 3, {"g0": 1, "g1": 1, "g2": 1}, 4, 4)  # its test with b0 was explained by b0
    assert [_tally(s, g)[:3] for g in good] == [(2, 0, {})] * 3


def test_the_worst_port_is_named_first():
    """A fails every test (3 of 3); B fails 2 of 3, one of them with A and one with E. Named worst
    first, A explains B's failure with it, and B is left with 1 of 2: inconclusive, not bad. Named
    the other way round, B would be called bad (and A too)."""
    results = [_pair("A", "B", r0=False), _pair("A", "C", r0=False), _pair("A", "D", r0=False),
               _pair("B", "E", r0=False), _pair("B", "C", r0=True), _pair("C", "D", r0=True),
               _pair("D", "E", r0=True), _pair("C", "E", r0=True)]
    s = score(["A", "B", "C", "D", "E"], results)
    assert s.bad_nodes == ["A"] and s.bad_links == []
    assert s.inconclusive == {"B": "r0: 1 of 2 tests failed with peers not named bad (E): cannot tell this node "
                                   "from its peer"}


def test_worst_is_by_share_of_tests_failed_not_by_failures_times_tests():
    """A fails 3 of 3, B 3 of 5 (with A, E, F). A is worse (all its tests), though B has more
    failures over more tests: A is named, explains B's failure with it, and B is left at 2 of 4."""
    results = [_pair("A", "B", r0=False), _pair("A", "C", r0=False), _pair("A", "D", r0=False),
               _pair("B", "E", r0=False), _pair("B", "F", r0=False), _pair("B", "C", r0=True), _pair("B", "D", r0=True),
               _pair("C", "D", r0=True), _pair("E", "C", r0=True), _pair("E", "D", r0=True),
               _pair("F", "C", r0=True), _pair("F", "D", r0=True)]
    s = score(["A", "B", "C", "D", "E", "F"], results)
    assert s.bad_nodes == ["A"]
    assert s.inconclusive == {"B": "r0: 2 of 4 tests failed with peers not named bad (E, F): cannot tell this node "
                                   "from its peer"}


def test_between_ports_failing_every_test_the_one_with_more_failures_is_named_first():
    """A fails 3 of 3 (X, P, Q), X 2 of 2 (A, Y): both all their tests. A, with more failures, is
    named first and explains X's failure with it; X is left with one failure with one peer."""
    results = [_pair("A", "X", r0=False), _pair("A", "P", r0=False), _pair("A", "Q", r0=False),
               _pair("X", "Y", r0=False), _pair("P", "Q", r0=True), _pair("P", "Y", r0=True), _pair("Q", "Y", r0=True)]
    s = score(["A", "P", "Q", "X", "Y"], results)
    assert s.bad_nodes == ["A"]
    assert s.inconclusive == {"X": "r0: 1 of 1 tests failed with peers not named bad (Y): cannot tell this node "
                                   "from its peer"}


# ---------------------------------------------------------------------- naming a port: its boundaries


def test_a_port_failing_exactly_half_its_tests_is_not_named_and_not_cleared():
    results = [_pair("d", "a", r0=False), _pair("d", "b", r0=False), _pair("d", "c", r0=True),
               _pair("d", "e", r0=True), _pair("a", "b", r0=True), _pair("c", "e", r0=True),
               _pair("a", "c", r0=True), _pair("b", "e", r0=True)]
    s = score(["a", "b", "c", "d", "e"], results)
    assert s.bad_nodes == [] and s.bad_ports == [] and s.bad_links == []
    assert s.inconclusive == {"d": "r0: 2 of 4 tests failed with peers not named bad (a, b): cannot tell this "
                                   "node from its peer"}
    assert not s.ports[("d", "r0")].named and not s.ports[("d", "r0")].cleared


def test_a_port_failing_two_in_five_is_cleared_and_its_failures_are_links():
    results = [_pair("d", "a", r0=False), _pair("d", "b", r0=False), _pair("d", "c", r0=True),
               _pair("d", "e", r0=True), _pair("d", "f", r0=True), _pair("a", "b", r0=True),
               _pair("a", "c", r0=True), _pair("b", "c", r0=True), _pair("e", "f", r0=True)]
    s = score(["a", "b", "c", "d", "e", "f"], results)
    assert s.ports[("d", "r0")].cleared and s.bad_nodes == [] and s.inconclusive == {}
    assert s.bad_links == [("a", "d", ["r0"]), ("b", "d", ["r0"])]


def test_two_distinct_failing_peers_are_enough_to_name_a_port_one_is_not():
    two = [_pair("d", "a", r0=False), _pair("d", "b", r0=False), _pair("d", "c", r0=True),
           _pair("a", "b", r0=True), _pair("a", "c", r0=True), _pair("b", "c", r0=True)]
    s = score(["a", "b", "c", "d"], two)
    assert s.bad_nodes == ["d"] and s.inconclusive == {}
    # The same two failures with one peer (met twice) cannot tell d from a or the cable between.
    one = [_pair("d", "a", 1, r0=False), _pair("d", "a", 2, r0=False), _pair("d", "c", r0=True),
           _pair("a", "b", r0=True), _pair("a", "c", r0=True), _pair("b", "c", r0=True)]
    s = score(["a", "b", "c", "d"], one)
    assert s.bad_nodes == [] and s.bad_links == []
    assert "2 of 3 tests failed with peers not named bad (a)" in s.inconclusive["d"]
    assert "2 of 4 tests failed with peers not named bad (d)" in s.inconclusive["a"]  # a: two passes, two failures
    assert s.ports[("d", "r0")].failing_peers == {"a": 2}


def test_a_failure_with_one_cleared_end_is_no_link():
    """d failed with a once and passed with b: a is cleared (1 of 3), d is not (1 of 2), so the
    failure is not put on the link: d is left inconclusive."""
    results = [_pair("d", "a", r0=False), _pair("d", "b", r0=True), _pair("a", "b", r0=True), _pair("a", "c", r0=True)]
    s = score(["a", "b", "c", "d"], results)
    assert s.ports[("a", "r0")].cleared and s.bad_links == [] and s.bad_nodes == []
    assert s.inconclusive == {"d": "r0: 1 of 2 tests failed with peers not named bad (a): cannot tell this node "
                                   "from its peer"}


def test_one_passing_test_clears_both_ends():
    s = score(["a", "b"], [_pair("a", "b", r0=True)])
    assert s.inconclusive == {} and not s.failed and s.node_verdict("a") == s.node_verdict("b") == "pass"
    assert s.pass_ratio("a") == 1.0


# ---------------------------------------------------------------------- rails of the whole fabric


def _mesh(nodes, failing):
    """Every pair once on r0 (one rail), failing where (a, b) is in `failing`."""
    out = []
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            out.append(_pair(a, b, r0=(a, b) not in failing))
    return out


FIVE = ["a", "b", "c", "d", "e"]
PAIRS = [(a, b) for i, a in enumerate(FIVE) for b in FIVE[i + 1:]]  # 10


def test_a_single_rail_is_the_fabrics_fault_past_three_failures_in_four():
    eight = score(FIVE, _mesh(FIVE, set(PAIRS[:8])))
    assert eight.bad_rails == ["r0"] and eight.bad_nodes == []
    # Its tests say nothing of the nodes: none passes on them (each passed before, 2026-11-29).
    assert eight.inconclusive == {n: "tested only on r0, which failed across the fabric: nothing left to judge "
                                     "this node by" for n in FIVE}
    assert {eight.node_verdict(n) for n in FIVE} == {"error"}
    # Its ports are left out of the rest, but what they met is kept: the raw pass ratio.
    assert all(eight.ports[(n, "r0")].tests == 0 and eight.ports[(n, "r0")].raw_tests == 4 for n in FIVE)
    assert eight.pass_ratio("a") == 0.0 and eight.pass_ratio("e") == pytest.approx(0.5)
    seven = score(FIVE, _mesh(FIVE, set(PAIRS[:7])))  # 70%: not the rail's (the nodes are judged)
    assert seven.bad_rails == []


def test_half_the_nodes_dead_on_a_lone_rail_are_named_not_the_rail():
    """The 2026-11-29 fuzzing: on one rail, 4 of 8 nodes down failed 22 of 28 tests, past three in
    four: the rail was named, every node's tests set aside, and the four dead nodes passed. Judged
    without the rail, the four dead explain every failure, and no more than half are named: the
    nodes are the fault. A rail all fail stays the rail's, its nodes not judged."""
    eight = [f"n{i}" for i in range(8)]
    dead = {"n2", "n5", "n6", "n7"}
    s = score(eight, _mesh(eight, {(a, b) for i, a in enumerate(eight) for b in eight[i + 1:] if {a, b} & dead}))
    assert s.bad_rails == [] and s.bad_nodes == sorted(dead) and s.inconclusive == {}
    assert {n: s.node_verdict(n) for n in eight} == {n: "fail" if n in dead else "pass" for n in eight}
    down = score(eight, _mesh(eight, {(a, b) for i, a in enumerate(eight) for b in eight[i + 1:]}))
    assert down.bad_rails == ["r0"] and down.bad_nodes == [] and {down.node_verdict(n) for n in eight} == {"error"}
    # A rail down under a sparse schedule (a ring of eight pairs, each failing): judged without the
    # rail, every other node is named and the rest cleared by nothing; the rail it stays (a review's
    # case against a rule that only counted the named).
    ring = score(eight, [_pair(eight[i], eight[(i + 1) % 8], r0=False) for i in range(8)])
    assert ring.bad_rails == ["r0"] and ring.bad_nodes == [] and {ring.node_verdict(n) for n in eight} == {"error"}


def test_a_leaf_whose_every_test_failed_inside_and_across_is_named_with_its_nodes_not_judged_apart():
    """The 2026-11-29 notes: with a topology, a leaf whose nodes were all down on a lone rail named the
    rail (three of them, of six) or an uplink (four of eight) and left its nodes not judged or failed
    one by one. Every test among them and across the leaf failed while the other leaf's passed: the
    leaf switch, or all of its nodes at once, told as the leaf; its nodes never pass."""
    from nodeqc.fabric.topology import Topology

    for n in (6, 8):
        nodes = [f"n{i}" for i in range(n)]
        topo = Topology("test", {node: "L0" if i < n // 2 else "L1" for i, node in enumerate(nodes)}, {"L0": "S0", "L1": "S0"})
        dead = set(nodes[n // 2:])
        s = score(nodes, _mesh(nodes, {(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:] if {a, b} & dead}), topo)
        assert [leaf.switch for leaf in s.bad_leaves] == ["L1"] and s.bad_leaves[0].nodes == tuple(sorted(dead))
        assert (s.bad_rails, s.bad_nodes, s.bad_uplinks, s.bad_links) == ([], [], [], []) and s.failed
        assert {node: s.node_verdict(node) for node in nodes} == {node: "error" if node in dead else "pass" for node in nodes}
        assert s.inconclusive[nodes[-1]] == "under L1, whose every test failed, among its nodes and across it: judged with its leaf"
        # One node of the leaf that passed among its own: no dead leaf, the others named one by one.
        alive = {(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:] if {a, b} & (dead - {nodes[-1]})}
        one = score(nodes, _mesh(nodes, alive), topo)
        assert one.bad_leaves == [] and set(one.bad_nodes) == dead - {nodes[-1]}
        # Without the other leaf passing, no leaf is to blame: a fabric that failed everywhere.
        every = score(nodes, _mesh(nodes, {(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]}), topo)
        assert every.bad_leaves == []


def test_three_nodes_failing_together_are_a_rail_two_are_not():
    three = score(["a", "b", "c"], _mesh(["a", "b", "c"], {("a", "b"), ("a", "c"), ("b", "c")}))
    assert three.bad_rails == ["r0"] and three.bad_nodes == []
    two = score(["a", "b"], [_pair("a", "b", 1, r0=False), _pair("a", "b", 2, r0=False)])
    assert two.bad_rails == []


def test_with_several_rails_a_rail_failing_more_than_half_is_the_fabrics():
    def results(failing_r1):
        return [PairResult(1, a, b, [Measurement(rail, d, 5.0 if rail == "r1" and (a, b) in failing_r1 else 20.0,
                                                 "Gb/s", 10.0) for rail in ("r0", "r1") for d in ("a>b", "b>a")])
                for a, b in PAIRS]

    # r1 fails in 6 of 10 pairs that passed on r0, among all five nodes: the rail's fault.
    six = score(FIVE, results(set(PAIRS[:4] + PAIRS[7:9])))
    assert six.bad_rails == ["r1"] and six.bad_nodes == [] and six.bad_ports == []
    # Exactly half is not more than half: the rail is not named.
    five = score(FIVE, results(set(PAIRS[:4] + PAIRS[7:8])))
    assert five.bad_rails == []


def test_a_rail_failing_only_with_pairs_that_fail_everywhere_says_nothing_of_the_rail():
    """With two rails, a pair that failed on both speaks for neither rail: here the bad node d fails
    both rails with everyone, and only its pairs fail, so no rail is the fabric's."""
    results = [PairResult(1, a, b, [Measurement(rail, dr, 5.0 if "d" in (a, b) else 20.0, "Gb/s", 10.0)
                                    for rail in ("r0", "r1") for dr in ("a>b", "b>a")]) for a, b in PAIRS]
    s = score(FIVE, results)
    assert s.bad_rails == [] and s.bad_nodes == ["d"]


# ---------------------------------------------------------------------- bad node or bad rails of a node


def test_a_node_with_one_bad_rail_of_two_has_that_rail_named_and_nothing_inconclusive():
    """n's r1 fails everywhere (named); its r0 fails exactly half (not named, not cleared, which would
    make n inconclusive): n is already failed on its r1, so it is not also inconclusive."""
    tests = {("n", "a"): (False, False), ("n", "b"): (False, False), ("n", "c"): (True, False),
             ("n", "e"): (True, False), ("a", "b"): (True, True), ("a", "c"): (True, True),
             ("b", "e"): (True, True), ("c", "e"): (True, True)}
    results = [_pair(a, b, r0=r0, r1=r1) for (a, b), (r0, r1) in tests.items()]
    s = score(["a", "b", "c", "e", "n"], results)
    assert s.bad_ports == [("n", "r1")] and s.bad_nodes == [] and s.inconclusive == {}
    assert not s.ports[("n", "r0")].cleared and not s.ports[("n", "r0")].named


def test_a_node_with_two_bad_rails_of_three_is_bad_and_not_inconclusive():
    tests = {("n", "a"): (False, False, False), ("n", "b"): (False, False, False), ("n", "c"): (True, False, False),
             ("n", "e"): (True, False, False), ("a", "b"): (True, True, True), ("a", "c"): (True, True, True),
             ("b", "e"): (True, True, True), ("c", "e"): (True, True, True)}
    results = [_pair(a, b, r0=r0, r1=r1, r2=r2) for (a, b), (r0, r1, r2) in tests.items()]
    s = score(["a", "b", "c", "e", "n"], results)
    assert s.bad_nodes == ["n"] and s.bad_ports == [] and s.inconclusive == {}


# ---------------------------------------------------------------------- what was never tested


def test_a_node_never_tested_says_so_per_rail_then_for_the_node():
    results = [_pair("a", "b", r0=True, r1=True), PairResult(2, "a", "c", error="srun: no allocation")]
    s = score(["a", "b", "c"], results)
    assert s.inconclusive == {"c": "r0: never tested (no pair with results)"}
    # No rail at all (every pair errored or was skipped): each node is said untested as a node.
    s = score(["a", "b"], [PairResult(1, "a", "b", error="srun: no allocation")])
    assert s.rails == [] and s.inconclusive == {"a": "no pair test of this node gave results",
                                                "b": "no pair test of this node gave results"}
    assert s.ports_of("a") == [] and s.pass_ratio("a") is None and s.pass_ratio("nowhere") is None


def test_a_skipped_figure_is_passed_over_and_the_rest_of_the_pair_still_counts():
    pair = PairResult(1, "a", "b", [Measurement("r0", "a>b", None, "Gb/s", None, skipped="perftest missing"),
                                    Measurement("r1", "a>b", 20.0, "Gb/s", 10.0),
                                    Measurement("r1", "b>a", 5.0, "Gb/s", 10.0)])
    assert pair.rails() == {"r1": False}


# ---------------------------------------------------------------------- floors


@pytest.mark.parametrize("floor", ["rdma", "tcp"])
def test_a_floor_is_the_fraction_of_the_faster_end_to_a_thousandth(floor):
    f = Floors(rdma_fraction=0.85, tcp_fraction=0.85)
    judge = getattr(f, floor)
    assert judge(97.0001, 50.0) == 82.45  # 82.450085: three decimals, not four, not an integer
    # A port trained down to 100 Gb/s facing 400 does not lower its own pair's floor (issue 25:
    # the floor was 85, so 90 passed): the faster end's rate sets it, whichever end it is.
    assert judge(400.0, 100.0) == judge(100.0, 400.0) == 340.0
    assert judge(None, 0) is None  # no rate known: no floor (the figure is then skipped, never passed)
    assert getattr(Floors(), floor)(400.0) is None  # no fraction given
    assert getattr(Floors(rdma_gbps=300.0, tcp_gbps=20.0), floor)(400.0) == (300.0 if floor == "rdma" else 20.0)


def test_a_bad_links_evidence_is_each_figure_that_failed_as_measured():
    from nodeqc.fabric.report import fabric_checks

    link = PairResult(1, "a", "d", [Measurement("r0", "a>b", 5.0, "Gb/s", 10.0),
                                    Measurement("r0", "b>a", None, "Gb/s", 10.0, error="ib_write_bw: timeout"),
                                    Measurement("r1", "a>b", None, "Gb/s", None, skipped="perftest missing")])
    others = [_pair("a", "b", r0=True), _pair("a", "c", r0=True), _pair("b", "c", r0=True),
              _pair("d", "b", r0=True), _pair("d", "c", r0=True), _pair("d", "e", r0=True)]
    results = [link, *others]
    s = score(["a", "b", "c", "d", "e"], results)
    assert s.bad_links == [("a", "d", ["r0"])]
    (check,) = [c for c in fabric_checks(s, results) if c.name == "fabric.link"]
    assert (check.subject, check.code) == ("a-d", "FABRIC_LINK")
    assert check.evidence == {"failed": [
        {"rail": "r0", "direction": "a>b", "value": 5.0, "unit": "Gb/s", "floor": 10.0},
        {"rail": "r0", "direction": "b>a", "value": None, "unit": "Gb/s", "floor": 10.0, "error": "ib_write_bw: timeout"}]}
    # The figure not measured (r1's) is no evidence against the link: it is not listed.


def test_floors_are_recorded_as_given():
    assert Floors(rdma_fraction=0.85, tcp_gbps=20.0).to_dict() == {"rdma_fraction": 0.85, "tcp_gbps": 20.0}
    assert Floors().to_dict() == {}


def test_a_measurement_as_recorded():
    assert Measurement("tcp", "a>b", None, "Gb/s", None, skipped="iperf3 is not installed").to_dict() == {
        "rail": "tcp", "direction": "a>b", "value": None, "unit": "Gb/s", "floor": None,
        "skipped": "iperf3 is not installed"}
    assert Measurement("nccl", "both", 180.5, "GB/s", 150.0).to_dict() == {
        "rail": "nccl", "direction": "both", "value": 180.5, "unit": "GB/s", "floor": 150.0}
