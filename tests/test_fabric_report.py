"""The fabric report's checks in full (nodeqc/fabric/report.py): every kind of fabric.node verdict
(pass with its failures explained, a bad node on every rail, a bad rail of one node with no active
port, inconclusive), fabric.rail passing and failing, fabric.link with its evidence, the not-measured
groups with their codes, fabric.pair errors; then the per-pair rows, the exit code and the signed
statement. Each scenario's answer was worked out by hand (the comments) before it was pinned: a
mutation run showed the end-to-end tests left these texts, values and codes unpinned."""

import itertools
import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from nodeqc.core.model import Verdict
from nodeqc.fabric.pairing import Round
from nodeqc.fabric.coverage import coverage
from nodeqc.fabric.report import build_predicate, coverage_checks, exit_code, fabric_checks, fabric_statement, node_digest, pair_rows
from nodeqc.fabric.scoring import Measurement, PairResult, score
from nodeqc.report.keys import Signer

NODES = ["a", "b", "c", "d", "e", "f"]


def _first_fabric():
    """b is bad on both rails; e has no active port on mlx5_1 (its peers say so, as launchers.merge
    does) and fails it with everyone; c-f fail mlx5_0 together though each passes with the others
    (their link); a-c also ran a TCP test iperf3 was missing for; d-f could not be allocated."""
    results = []
    for a, b in itertools.combinations(NODES, 2):
        bad = "b" in (a, b)
        figures = []
        for d in ("a>b", "b>a"):
            r0 = not bad and {a, b} != {"c", "f"}
            figures.append(Measurement("mlx5_0", d, 390.0 if r0 else 100.0, "Gb/s", 360.0))
            if b == "e" and not bad:
                figures.append(Measurement("mlx5_1", d, None, "Gb/s", 360.0,
                                           error=f"no counterpart on e: {a} has mlx5_1 active, e has no active port on it"))
            else:
                r1 = not bad and a != "e"
                figures.append(Measurement("mlx5_1", d, 390.0 if r1 else 100.0, "Gb/s", 360.0))
        results.append(PairResult(1, a, b, figures))
    results.append(PairResult(2, "a", "c", [Measurement("tcp", "a>b", None, "Gb/s", None,
                                                        skipped="iperf3 is not installed (apt-get install iperf3)")]))
    results.append(PairResult(3, "d", "f", error="srun: Unable to allocate resources"))
    return results


def test_every_kind_of_fabric_verdict_in_full():
    results = _first_fabric()
    s = score(NODES, results)
    checks = fabric_checks(s, results)
    got = []
    for c in checks:
        d = c.to_dict()
        # Every failure and error, and the missing tool, says what to do (codes.py's text, tested there).
        assert bool(d.pop("remediation")) == (c.verdict is not Verdict.PASS), d
        assert d.pop("thresholds") == []
        got.append(d)
    assert got == [{'name': 'fabric.node',
      'subject': 'a',
      'verdict': 'pass',
      'code': None,
      'message': 'pass ratio 70% over 5 peers; its 3 failed rail test(s) are explained by bad peers or links',
      'values': {'pass_ratio': {'value': 0.7, 'unit': ''},
                 'tests': {'value': 10, 'unit': ''},
                 'failed': {'value': 3, 'unit': ''},
                 'peers': {'value': 5, 'unit': ''}},
      'evidence': {'ports': {'mlx5_0': {'tests': 5, 'failed': 1, 'named_bad': False, 'cleared': True},
                             'mlx5_1': {'tests': 5, 'failed': 2, 'named_bad': False, 'cleared': True}},
                   'peers': ['b', 'c', 'd', 'e', 'f']},
      'key': 'pass_ratio'},
     {'name': 'fabric.node',
      'subject': 'b',
      'verdict': 'fail',
      'code': 'FABRIC_NODE',
      'message': 'failed its pair tests with 5 distinct peers that passed with others (pass ratio 0%); bad on every rail '
                 '(2)',
      'values': {'pass_ratio': {'value': 0.0, 'unit': ''},
                 'tests': {'value': 10, 'unit': ''},
                 'failed': {'value': 10, 'unit': ''},
                 'peers': {'value': 5, 'unit': ''}},
      'evidence': {'ports': {'mlx5_0': {'tests': 5, 'failed': 5, 'named_bad': True, 'cleared': False},
                             'mlx5_1': {'tests': 5, 'failed': 5, 'named_bad': True, 'cleared': False}},
                   'peers': ['a', 'c', 'd', 'e', 'f']},
      'key': 'pass_ratio'},
     {'name': 'fabric.node',
      'subject': 'c',
      'verdict': 'pass',
      'code': None,
      'message': 'pass ratio 60% over 5 peers; its 4 failed rail test(s) are explained by bad peers or links',
      'values': {'pass_ratio': {'value': 0.6, 'unit': ''},
                 'tests': {'value': 10, 'unit': ''},
                 'failed': {'value': 4, 'unit': ''},
                 'peers': {'value': 5, 'unit': ''}},
      'evidence': {'ports': {'mlx5_0': {'tests': 5, 'failed': 2, 'named_bad': False, 'cleared': True},
                             'mlx5_1': {'tests': 5, 'failed': 2, 'named_bad': False, 'cleared': True}},
                   'peers': ['a', 'b', 'd', 'e', 'f']},
      'key': 'pass_ratio'},
     {'name': 'fabric.node',
      'subject': 'd',
      'verdict': 'pass',
      'code': None,
      'message': 'pass ratio 70% over 5 peers; its 3 failed rail test(s) are explained by bad peers or links',
      'values': {'pass_ratio': {'value': 0.7, 'unit': ''},
                 'tests': {'value': 10, 'unit': ''},
                 'failed': {'value': 3, 'unit': ''},
                 'peers': {'value': 5, 'unit': ''}},
      'evidence': {'ports': {'mlx5_0': {'tests': 5, 'failed': 1, 'named_bad': False, 'cleared': True},
                             'mlx5_1': {'tests': 5, 'failed': 2, 'named_bad': False, 'cleared': True}},
                   'peers': ['a', 'b', 'c', 'e', 'f']},
      'key': 'pass_ratio'},
     {'name': 'fabric.node',
      'subject': 'e',
      'verdict': 'fail',
      'code': 'FABRIC_NODE_RAIL',
      'message': "mlx5_1 failed with peers that passed on it with other nodes; the node's other rails passed; no active "
                 'port on mlx5_1 here while its peers have one (link down, or the HCA missing: ibstat)',
      'values': {'pass_ratio': {'value': 0.4, 'unit': ''},
                 'tests': {'value': 10, 'unit': ''},
                 'failed': {'value': 6, 'unit': ''},
                 'peers': {'value': 5, 'unit': ''}},
      'evidence': {'ports': {'mlx5_0': {'tests': 5, 'failed': 1, 'named_bad': False, 'cleared': True},
                             'mlx5_1': {'tests': 5, 'failed': 5, 'named_bad': True, 'cleared': False}},
                   'peers': ['a', 'b', 'c', 'd', 'f']},
      'key': 'pass_ratio'},
     {'name': 'fabric.node',
      'subject': 'f',
      'verdict': 'pass',
      'code': None,
      'message': 'pass ratio 60% over 5 peers; its 4 failed rail test(s) are explained by bad peers or links',
      'values': {'pass_ratio': {'value': 0.6, 'unit': ''},
                 'tests': {'value': 10, 'unit': ''},
                 'failed': {'value': 4, 'unit': ''},
                 'peers': {'value': 5, 'unit': ''}},
      'evidence': {'ports': {'mlx5_0': {'tests': 5, 'failed': 2, 'named_bad': False, 'cleared': True},
                             'mlx5_1': {'tests': 5, 'failed': 2, 'named_bad': False, 'cleared': True}},
                   'peers': ['a', 'b', 'c', 'd', 'e']},
      'key': 'pass_ratio'},
     {'name': 'fabric.rail',
      'subject': 'mlx5_0',
      'verdict': 'pass',
      'code': None,
      'message': '9 of 15 pair tests passed',
      'values': {'tests': {'value': 15, 'unit': ''},
                 'failed': {'value': 6, 'unit': ''},
                 'pass_ratio': {'value': 0.6, 'unit': ''}},
      'evidence': {},
      'key': 'pass_ratio'},
     {'name': 'fabric.rail',
      'subject': 'mlx5_1',
      'verdict': 'pass',
      'code': None,
      'message': '6 of 15 pair tests passed; bad on e only',
      'values': {'tests': {'value': 15, 'unit': ''},
                 'failed': {'value': 9, 'unit': ''},
                 'pass_ratio': {'value': 0.4, 'unit': ''}},
      'evidence': {},
      'key': 'pass_ratio'},
     {'name': 'fabric.link',
      'subject': 'c-f',
      'verdict': 'fail',
      'code': 'FABRIC_LINK',
      'message': 'c and f failed together on mlx5_0 while each passed with other peers: the path between them',
      'values': {'rails': {'value': 'mlx5_0', 'unit': ''}},
      'evidence': {'failed': [{'rail': 'mlx5_0', 'direction': 'a>b', 'value': 100.0, 'unit': 'Gb/s', 'floor': 360.0},
                              {'rail': 'mlx5_0', 'direction': 'b>a', 'value': 100.0, 'unit': 'Gb/s', 'floor': 360.0}]},
      'key': 'rails'},
     {'name': 'fabric.tcp',
      'subject': 'fabric',
      'verdict': 'skip',
      'code': 'IPERF3_MISSING',
      'message': 'not measured on pairs of a, c: iperf3 is not installed (apt-get install iperf3)',
      'values': {},
      'evidence': {},
      'key': None},
     {'name': 'fabric.pair',
      'subject': 'd-f',
      'verdict': 'error',
      'code': 'FABRIC_PAIR_ERROR',
      'message': 'round 3: not tested: srun: Unable to allocate resources',
      'values': {},
      'evidence': {},
      'key': None}]


def test_a_fabric_wide_rail_an_untested_node_and_what_was_not_measured():
    """r1 fails on every pair but n0-n1 while r0 passes on them: the rail's fault. n3 has no active
    r0 port and fails it with all eight peers: a bad node (bad on r0 only: r1 is the fabric's). n9's
    one pair was never run: inconclusive. CuPy missing on every pair (nine nodes: eight named, "+1
    more"), perftest and a TCP address on one pair: one not-measured line each, with its own code."""
    nodes = [f"n{i}" for i in range(10)]
    results = []
    for a, b in itertools.combinations(nodes[:9], 2):
        figures = [Measurement("nccl", "both", None, "GB/s", None, skipped="CuPy is not installed (pip install 'nodeqc[cuda12]')")]
        for d in ("a>b", "b>a"):
            figures.append(Measurement("r0", d, None, "Gb/s", 360.0, error=f"no counterpart on n3: {a if b == 'n3' else b} "
                                       "has r0 active, n3 has no active port on it") if "n3" in (a, b)
                           else Measurement("r0", d, 390.0, "Gb/s", 360.0))
            figures.append(Measurement("r1", d, 390.0 if (a, b) == ("n0", "n1") else 100.0, "Gb/s", 360.0))
        results.append(PairResult(1, a, b, figures))
    results.append(PairResult(2, "n9", "n0", error="worker gave no result"))
    results.append(PairResult(2, "n7", "n8", [
        Measurement("mlx5_2", "a>b", None, "Gb/s", None, skipped="ib_write_bw is not installed (apt-get install perftest)"),
        Measurement("tcp", "a>b", None, "Gb/s", None, skipped="no address on the rail")]))
    s = score(nodes, results)
    checks = fabric_checks(s, results)
    told = [(c.name, c.subject, c.verdict.value, c.code, c.message) for c in checks
            if not (c.name == "fabric.node" and c.verdict is Verdict.PASS)]
    assert told == [
        ("fabric.node", "n3", "fail", "FABRIC_NODE", "failed its pair tests with 8 distinct peers that passed with "
         "others (pass ratio 0%); bad on r0; no active port on r0 here while its peers have one (link down, or the "
         "HCA missing: ibstat)"),
        ("fabric.node", "n9", "error", "FABRIC_INCONCLUSIVE", "inconclusive: r0: never tested (no pair with results)"),
        ("fabric.rail", "r0", "pass", None, "28 of 36 pair tests passed"),
        ("fabric.rail", "r1", "fail", "FABRIC_RAIL", "failed 35 of 36 pair tests across the fabric, where the same "
         "pairs passed on other rails: the rail itself (its switches, a fabric setting)"),
        ("fabric.nccl", "fabric", "skip", "CUDA_UNAVAILABLE", "not measured on pairs of n0, n1, n2, n3, n4, n5, n6, "
         "n7 +1 more: CuPy is not installed (pip install 'nodeqc[cuda12]')"),
        ("fabric.rdma", "fabric", "skip", "PERFTEST_MISSING", "not measured on pairs of n7, n8: ib_write_bw is not "
         "installed (apt-get install perftest)"),
        ("fabric.tcp", "fabric", "skip", "FABRIC_NOT_MEASURED", "not measured on pairs of n7, n8: no address on the rail"),
        ("fabric.pair", "n9-n0", "error", "FABRIC_PAIR_ERROR", "round 2: not tested: worker gave no result")]
    by = {(c.name, c.subject): c for c in checks}
    assert {k: v.value for k, v in by[("fabric.rail", "r1")].values.items()} == {"tests": 36, "failed": 35,
                                                                                 "pass_ratio": 0.028}
    assert {k: v.value for k, v in by[("fabric.node", "n9")].values.items()} == {"pass_ratio": None, "tests": 0,
                                                                                 "failed": 0, "peers": 0}
    # n0's raw tally: r0 failed with n3 only, r1 with all but n1: 8 of 16, explained by n3 and the rail.
    assert by[("fabric.node", "n0")].message == ("pass ratio 50% over 8 peers; its 8 failed rail test(s) are "
                                                  "explained by bad peers or links")


def test_a_clean_pair_passes_without_a_note():
    results = [PairResult(1, "a", "b", [Measurement("tcp", d, 9.0, "Gb/s", 5.0) for d in ("a>b", "b>a")])]
    checks = fabric_checks(score(["a", "b"], results), results)
    assert [(c.subject, c.verdict.value, c.message) for c in checks] == [
        ("a", "pass", "pass ratio 100% over 1 peers"), ("b", "pass", "pass ratio 100% over 1 peers"),
        ("tcp", "pass", "1 of 1 pair tests passed")]


def test_pair_rows_keep_each_figure_its_error_or_why_it_was_skipped():
    rows = {(r["round"], r["a"], r["b"]): r for r in pair_rows(_first_fabric())}
    assert rows[(1, "a", "e")] == {"round": 1, "a": "a", "b": "e", "rails": {
        "mlx5_0": {"a>b": 390.0, "b>a": 390.0, "floor": 360.0},
        "mlx5_1": {"a>b": {"error": "no counterpart on e: a has mlx5_1 active, e has no active port on it"},
                   "b>a": {"error": "no counterpart on e: a has mlx5_1 active, e has no active port on it"},
                   "floor": 360.0}}, "failed": ["mlx5_1"]}
    assert rows[(1, "c", "f")]["failed"] == ["mlx5_0"] and rows[(1, "a", "d")]["failed"] == []
    assert rows[(2, "a", "c")] == {"round": 2, "a": "a", "b": "c", "rails": {"tcp": {
        "a>b": {"skipped": "iperf3 is not installed (apt-get install iperf3)"}, "floor": None}}, "failed": []}
    assert rows[(3, "d", "f")] == {"round": 3, "a": "d", "b": "f", "error": "srun: Unable to allocate resources"}


_SIGNER = Signer(Ed25519PrivateKey.generate(), None)


def _predicate(results, nodes, status="complete"):
    s = score(nodes, results)
    return build_predicate(
        name="rack7", launcher="slurm", scores=s, rounds=[Round(1, (("a", "b"),), None)], results=results,
        identities={"a": {"hostname": "a.example", "machine_id": "m-a"}}, settings={"tests": ["tcp"]},
        profile={"name": "generic"}, simulated=False, simulation=None, status=status, started_at="2026-11-23T00:00:00Z",
        finished_at="2026-11-23T00:01:00Z", duration_s=60.0006, operator="tech1", ticket="RMA-1",
        signer=_SIGNER, command=["nodeqc", "fabric"])


def test_the_verdict_and_exit_code_of_a_fabric():
    tcp = [Measurement("tcp", d, 9.0, "Gb/s", 5.0) for d in ("a>b", "b>a")]
    passed = _predicate([PairResult(1, "a", "b", tcp)], ["a", "b"])
    assert (passed["verdict"], exit_code(passed)) == ("PASS", 0)
    # a, b, tcp and the coverage: the one pair there is was tested
    assert passed["summary"] == {"counts": {"pass": 4, "warn": 0, "fail": 0, "error": 0, "skip": 0}, "failed": []}
    aborted = _predicate([PairResult(1, "a", "b", tcp)], ["a", "b"], status="aborted")
    assert (aborted["verdict"], aborted["status"], exit_code(aborted)) == ("FAIL", "aborted", 2)
    failed = _predicate(_first_fabric()[:-1], NODES)  # without the pair that could not be allocated
    assert (failed["verdict"], exit_code(failed)) == ("FAIL", 1)
    assert failed["summary"]["failed"] == ["fabric.node b", "fabric.node e", "fabric.link c-f"]
    assert [n["verdict"] for n in failed["nodes"]] == ["pass", "fail", "pass", "pass", "fail", "pass"]
    assert failed["fabric"]["bad"] == {"nodes": ["b"], "node_rails": [["e", "mlx5_1"]], "rails": [],
                                       "links": [["c", "f"]], "inconclusive": [],
                                       "suspects": []}
    # A pair not tested is something not judged, but beside a proven failure the fabric failed: exit 1
    # (a pipeline that retries on 2 would retest proven bad nodes); with nothing failed, exit 2.
    unjudged = _predicate(_first_fabric(), NODES)
    assert (unjudged["verdict"], unjudged["summary"]["counts"]["error"] > 0, exit_code(unjudged)) == ("FAIL", True, 1)
    only_unjudged = {**unjudged, "summary": {**unjudged["summary"], "counts": {**unjudged["summary"]["counts"], "fail": 0}}}
    assert exit_code(only_unjudged) == 2


def test_the_fabric_predicate_and_statement_whole():
    import platform

    from nodeqc import __version__
    from nodeqc.report.envelope import FABRIC_PREDICATE_TYPE, STATEMENT_TYPE

    tcp = [Measurement("tcp", d, 9.0, "Gb/s", 5.0) for d in ("a>b", "b>a")]
    results = [PairResult(1, "a", "b", tcp)]
    p = _predicate(results, ["a", "b"])
    checks = [c.to_dict() for c in fabric_checks(score(["a", "b"], results), results)]
    (covered,) = [c.to_dict() for c in coverage_checks(coverage(["a", "b"], [], results))]
    assert (covered["name"], covered["verdict"], covered["message"]) == ("fabric.coverage", "pass", "all 1 node pairs tested")
    checks.append(covered)
    assert p == {
        "kind": "fabric", "verdict": "PASS", "status": "complete", "simulated": False, "simulation": None,
        "profile": {"name": "generic"}, "node": {"hostname": "fabric-rack7", "system_serial": None}, "gpus": [],
        "fabric": {"name": "rack7", "launcher": "slurm", "nodes": ["a", "b"], "rails": ["tcp"], "rounds": 1,
                   "tests": ["tcp"], "schedule": [{"round": 1, "pairs": [["a", "b"]], "sitting_out": None}],
                   "bad": {"nodes": [], "node_rails": [], "rails": [], "links": [], "inconclusive": [],
                           "suspects": []},
                   "coverage": {"pairs": {"total": 1, "tested": 1, "untested": 0, "listed": []}, "rails_untested": [],
                                "ports_untested": [], "uplinks": 0, "uplinks_untested": []}},
        "nodes": [{"name": "a", "verdict": "pass", "identity": {"hostname": "a.example", "machine_id": "m-a"}},
                  {"name": "b", "verdict": "pass", "identity": {"hostname": "b"}}],  # none reported: its name
        "checks": checks, "pairs": pair_rows(results),
        "summary": {"counts": {"pass": 4, "warn": 0, "fail": 0, "error": 0, "skip": 0}, "failed": []},
        "tool": {"name": "nodeqc", "version": __version__, "python": platform.python_version(),
                 "command": ["nodeqc", "fabric"]},
        "started_at": "2026-11-23T00:00:00Z", "finished_at": "2026-11-23T00:01:00Z", "duration_s": 60.001,
        "operator": "tech1", "ticket": "RMA-1", "signer": {"keyid": p["signer"]["keyid"]}, "partial": False}
    assert len(p["signer"]["keyid"]) == 64 and len(checks) == 4
    st = fabric_statement(p)
    assert st == {"_type": STATEMENT_TYPE, "predicateType": FABRIC_PREDICATE_TYPE, "predicate": p, "subject": [
        {"name": "node:a", "digest": {"sha256": node_digest({"hostname": "a.example", "machine_id": "m-a"})}},
        {"name": "node:b", "digest": {"sha256": node_digest({"hostname": "b"})}}]}
    assert node_digest({"hostname": "b"}) != node_digest({"hostname": "a"}) and len(node_digest({})) == 64


def test_a_fabric_report_written_verifies_with_its_key(tmp_path):
    from nodeqc.fabric.report import write_report
    from nodeqc.report.envelope import verify_file

    tcp = [Measurement("tcp", d, 9.0, "Gb/s", 5.0) for d in ("a>b", "b>a")]
    p = _predicate([PairResult(1, "a", "b", tcp)], ["a", "b"])
    write_report(tmp_path / "f.report.json", p, _SIGNER)
    v = verify_file(tmp_path / "f.report.json", {_SIGNER.keyid: (_SIGNER.public, "test key")})
    assert v.statement == json.loads(json.dumps(fabric_statement(p))) and v.keyid == _SIGNER.keyid


NODES10 = [f"m{i}" for i in range(10)]


def _fourth_fabric():
    """Four rails, ten nodes. m0 has no active port on r0 and r1 (two rails of four: its bad rails,
    not a bad node); m1 fails r0 with everyone; m2-m3 fail r2 and r3 together (their link, on two
    rails); iperf3 was missing on the pairs among exactly eight nodes (m2..m9)."""
    results = []
    for x, y in itertools.combinations(NODES10, 2):
        figures = []
        for d in ("a>b", "b>a"):
            for rail in ("r0", "r1", "r2", "r3"):
                if "m0" in (x, y) and rail in ("r0", "r1"):
                    other = y if x == "m0" else x
                    figures.append(Measurement(rail, d, None, "Gb/s", 360.0, error=f"no counterpart on m0: {other} has "
                                               f"{rail} active, m0 has no active port on it"))
                    continue
                ok = not ("m1" in (x, y) and rail == "r0") and not ({x, y} == {"m2", "m3"} and rail in ("r2", "r3"))
                figures.append(Measurement(rail, d, 390.0 if ok else 100.0, "Gb/s", 360.0))
        if x in NODES10[2:] and y in NODES10[2:]:
            figures.append(Measurement("tcp", "a>b", None, "Gb/s", None,
                                       skipped="iperf3 is not installed (apt-get install iperf3)"))
        results.append(PairResult(1, x, y, figures))
    return results


def test_bad_rails_of_nodes_a_link_on_two_rails_and_eight_nodes_not_measured():
    results = _fourth_fabric()
    s = score(NODES10, results)
    checks = fabric_checks(s, results)
    told = [((c.name, c.subject, c.verdict.value, c.code, c.message), {k: v.value for k, v in c.values.items()})
            for c in checks if c.subject in ("m0", "m1", "m2", "r0", "r1", "r2", "m2-m3", "fabric")]
    assert told == [
        (("fabric.node", "m0", "fail", "FABRIC_NODE_RAIL", "r0, r1 failed with peers that passed on them with other "
          "nodes; the node's other rails passed; no active port on r0, r1 here while its peers have one (link down, "
          "or the HCA missing: ibstat)"), {"pass_ratio": 0.5, "tests": 36, "failed": 18, "peers": 9}),
        (("fabric.node", "m1", "fail", "FABRIC_NODE_RAIL", "r0 failed with peers that passed on it with other nodes; "
          "the node's other rails passed"), {"pass_ratio": 0.722, "tests": 36, "failed": 10, "peers": 9}),
        (("fabric.node", "m2", "pass", None, "pass ratio 86% over 9 peers; its 5 failed rail test(s) are explained by "
          "bad peers or links"), {"pass_ratio": 0.861, "tests": 36, "failed": 5, "peers": 9}),
        (("fabric.rail", "r0", "pass", None, "28 of 45 pair tests passed; bad on m0, m1 only"),
         {"tests": 45, "failed": 17, "pass_ratio": 0.622}),
        (("fabric.rail", "r1", "pass", None, "36 of 45 pair tests passed; bad on m0 only"),
         {"tests": 45, "failed": 9, "pass_ratio": 0.8}),
        (("fabric.rail", "r2", "pass", None, "44 of 45 pair tests passed"), {"tests": 45, "failed": 1, "pass_ratio": 0.978}),
        (("fabric.link", "m2-m3", "fail", "FABRIC_LINK", "m2 and m3 failed together on r2, r3 while each passed with "
          "other peers: the path between them"), {"rails": "r2, r3"}),
        (("fabric.tcp", "fabric", "skip", "IPERF3_MISSING", "not measured on pairs of m2, m3, m4, m5, m6, m7, m8, m9: "
          "iperf3 is not installed (apt-get install iperf3)"), {})]
    # The link's evidence: its four failed figures; the TCP test not measured on it is no evidence.
    link = next(c for c in checks if c.name == "fabric.link")
    assert [(f["rail"], f["direction"]) for f in link.evidence["failed"]] == [
        ("r2", "a>b"), ("r3", "a>b"), ("r2", "b>a"), ("r3", "b>a")]


def test_a_bad_node_on_its_only_rail_counts_the_peers_it_failed_with_not_all_it_met():
    """a fails with b, c and d and passes with e: bad on tcp (its one rail, not "every rail (1)"),
    failed with 3 distinct peers of the 4 it met. c's pass ratio is two in three, kept to a thousandth."""
    ok = {("a", "e"), ("b", "c"), ("c", "d"), ("d", "e"), ("b", "e")}
    results = [PairResult(1, x, y, [Measurement("tcp", d, 9.0 if (x, y) in ok else 1.0, "Gb/s", 5.0)
                                    for d in ("a>b", "b>a")])
               for x, y in [("a", "b"), ("a", "c"), ("a", "d"), *sorted(ok)]]
    s = score(["a", "b", "c", "d", "e"], results)
    by = {c.subject: c for c in fabric_checks(s, results)}
    assert by["a"].message == ("failed its pair tests with 3 distinct peers that passed with others (pass ratio 25%); "
                               "bad on tcp")
    assert by["c"].values["pass_ratio"].value == 0.667 and by["c"].verdict is Verdict.PASS


def test_inconclusive_and_fabric_rail_results_whole():
    nodes = [f"n{i}" for i in range(4)]
    results = [PairResult(1, x, y, [Measurement(rail, "a>b", 390.0 if rail == "r0" or (x, y) == ("n0", "n1") else 1.0,
                                                "Gb/s", 360.0) for rail in ("r0", "r1")])
               for x, y in itertools.combinations(nodes[:3], 2)]
    s = score(nodes, results)
    by = {c.subject: c.to_dict() for c in fabric_checks(s, results)}
    for d in by.values():
        d.pop("remediation")
    assert by["n3"] == {"name": "fabric.node", "subject": "n3", "verdict": "error", "code": "FABRIC_INCONCLUSIVE",
                        "message": "inconclusive: r0: never tested (no pair with results)",
                        "values": {"pass_ratio": {"value": None, "unit": ""}, "tests": {"value": 0, "unit": ""},
                                   "failed": {"value": 0, "unit": ""}, "peers": {"value": 0, "unit": ""}},
                        "thresholds": [], "evidence": {"ports": {
                            "r0": {"tests": 0, "failed": 0, "named_bad": False, "cleared": False},
                            "r1": {"tests": 0, "failed": 0, "named_bad": False, "cleared": False}}, "peers": []},
                        "key": "pass_ratio"}
    assert by["r1"] == {"name": "fabric.rail", "subject": "r1", "verdict": "fail", "code": "FABRIC_RAIL",
                        "message": "failed 2 of 3 pair tests across the fabric, where the same pairs passed on other "
                                   "rails: the rail itself (its switches, a fabric setting)",
                        "values": {"tests": {"value": 3, "unit": ""}, "failed": {"value": 2, "unit": ""},
                                   "pass_ratio": {"value": 0.333, "unit": ""}},
                        "thresholds": [], "evidence": {}, "key": "pass_ratio"}


def test_a_bad_node_on_most_but_not_all_its_rails_names_them():
    nodes = ["a", "b", "c", "d", "e"]
    results = [PairResult(1, x, y, [Measurement(rail, "a>b", 100.0 if "a" in (x, y) and rail != "r3" else 390.0,
                                                "Gb/s", 360.0) for rail in ("r0", "r1", "r2", "r3")])
               for x, y in itertools.combinations(nodes, 2)]
    s = score(nodes, results)
    (bad,) = [c for c in fabric_checks(s, results) if c.verdict is Verdict.FAIL]
    assert (bad.subject, bad.code, bad.message) == ("a", "FABRIC_NODE", "failed its pair tests with 4 distinct peers "
                                                    "that passed with others (pass ratio 25%); bad on r0, r1, r2")
