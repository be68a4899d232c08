"""A hostile node in the fabric (issue 25): its worker prints results for its peer, prints twice,
reports rails it does not have, or prints figures no tool gives (Infinity, NaN, negative, a string,
5,000 levels of nesting, control characters). Under every launcher (a fake `srun`, a plain host
list, a fake `kubectl`) each line belongs to the process that printed it: what the bad node says
of another node is refused, the bad node is named with the refused line in evidence, no refused
figure makes a pair pass, and the run never ends in an internal error.

The workers here are a stand-in (HOSTILE_WORKER): the honest nodes print the line a worker prints
for a TCP pair test (9.5 Gb/s both ways on 10 Gb/s links), the bad node prints what the test asks.
The launchers, the binding, the merge, the scoring and the signed report are nodeqc's own.
"""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from nodeqc.fabric.launchers import merge
from nodeqc.fabric.lines import bind, line_problem, scan
from nodeqc.fabric.scoring import Floors
from nodeqc.fabric.worker import MARKER
from test_fabric_k8s import FAKE_KUBECTL
from test_fabric_slurm import FAKE_SRUN
from test_slurm import FAKE_SCONTROL

HOSTILE_WORKER = r'''#!PYTHON
"""A stand-in for `nodeqc fabric worker`: honest on every node but $FAKE_BAD, which does $FAKE_HOSTILE."""
import json, os, sys
args = sys.argv[sys.argv.index("worker") + 1:]
opt = lambda name: args[args.index(name) + 1] if name in args else None
me = os.environ.get("SLURMD_NODENAME") or os.environ.get("FAKE_NODE") or os.environ.get("NODEQC_NODE")
if opt("--pairs"):
    pair = next(p.split(",") for p in opt("--pairs").split() if me in p.split(","))
else:
    pair = opt("--pair").split(",")
index = int(opt("--index")) if opt("--index") is not None else pair.index(me)
peer = pair[1 - index]
M = "nodeqc-fabric-worker"

def line(node, end, value=9.5, **extra):
    figures = [] if end == 0 else [{"rail": "tcp", "direction": d, "value": value, "unit": "Gb/s", "rate": 10.0}
                                   for d in ("a>b", "b>a")]
    out = {M: 1, "node": node, "index": end, "identity": {"hostname": node}, "figures": figures, **extra}
    if os.environ.get("JOB_COMPLETION_INDEX"):
        out["job_index"] = int(os.environ["JOB_COMPLETION_INDEX"])
    return out

def say(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")

mode = os.environ.get("FAKE_HOSTILE", "") if me == os.environ.get("FAKE_BAD") else ""
if mode == "":
    say(line(me, index))
elif mode == "peer":  # a failing node that speaks for its peer as well as itself (the issue's case)
    say(line(peer, 1 - index, value=9.9))
    say(line(me, index, value=9.9))
elif mode == "only-peer":  # prints nothing for itself, a result for its peer
    say(line(peer, 1 - index, value=0.1))
elif mode == "twice":
    say(line(me, index))
    say(line(me, index, value=9.9))
elif mode == "other-end":  # claims to be the other end of its pair
    say(line(me, 1 - index))
elif mode == "rail":  # a figure on a rail it does not have (and of a test this run did not ask for)
    out = line(me, index)
    out["figures"].append({"rail": "mlx5_9", "direction": "a>b" if index == 0 else "b>a", "value": 390.0,
                           "unit": "Gb/s", "rate": 400.0})
    say(out)
elif mode == "peer-figure":  # end A reporting the TCP figures end B measures
    out = line(me, 1)
    out["index"] = index
    say(out)
elif mode in ("Infinity", "NaN", "-5", '"9.5"', "[9.5]", "1e400", "1e5"):
    # Python's json reads Infinity, NaN and 1e400 as floats: exactly what a hostile line sends.
    # End B carries the pair's TCP figures; as end A the node has none to corrupt.
    text = json.dumps(line(me, index))
    say(text.replace("9.5", mode, 1) if index == 1 else text)
elif mode == "deep":
    say('{"' + M + '": 1, "node": "' + me + '", "x": ' + "[" * 5000 + "]" * 5000 + "}")
elif mode == "control":
    out = line(me, 1)
    out["index"] = index
    out["figures"] = [{**f, "rail": "tcp\x1b[2J"} for f in out["figures"]]
    say(out)
elif mode == "identity":
    out = line(me, index)
    out["identity"] = {"hostname": "gpu\x1b]0;pwned\x07"}
    say(out)
'''

NODES = ["n1", "n2", "n3", "n4"]
BAD = "n2"


@pytest.fixture
def fabric(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("scontrol", FAKE_SCONTROL), ("srun", FAKE_SRUN), ("kubectl", FAKE_KUBECTL),
                       ("hostile-nodeqc", HOSTILE_WORKER)):
        (bin_dir / name).write_text(text.replace("#!PYTHON", f"#!{sys.executable}"))
        (bin_dir / name).chmod(0o755)
    (tmp_path / "k8s").mkdir()

    def run(launcher: str, mode: str):
        out = tmp_path / f"out-{launcher}-{len(list(tmp_path.glob('out-*')))}"
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
               "FAKE_BAD": BAD, "FAKE_HOSTILE": mode, "FAKE_SLURM": str(tmp_path), "SLURM_JOB_ID": "77",
               "SLURM_JOB_NODELIST": ",".join(NODES), "FAKE_K8S": str(tmp_path / "k8s"),
               "FAKE_K8S_NODES": ",".join(NODES)}
        where = {"slurm": ["--slurm"], "hosts": ["--hosts", ",".join(NODES), "--launch", "env FAKE_NODE={host}"],
                 "k8s": ["--k8s", ",".join(NODES), "--image", "nodeqc:test"]}[launcher]
        (tmp_path / "state.json").write_text(json.dumps({n: {"state": "ALLOCATED", "reason": ""} for n in NODES}))
        p = subprocess.run([sys.executable, "-m", "nodeqc", "fabric", *where, "--nodeqc", str(bin_dir / "hostile-nodeqc"),
                            "--tests", "tcp", "--seconds", "1", "--min-tcp-gbps", "5", "--rounds", "3", "--seed", "1",
                            "--out", str(out)], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
        path = Path(p.stdout.strip().splitlines()[-1])
        envelope = json.loads(path.read_text())
        return p, json.loads(base64.b64decode(envelope["payload"]))["predicate"]

    return run


LAUNCHERS = ["slurm", "hosts", "k8s"]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_honest_nodes_pass_under_every_launcher(fabric, launcher):
    # The stand-in is believed when it tells the truth: what follows is the lines, not the stand-in.
    p, pred = fabric(launcher, "")
    assert p.returncode == 0, p.stderr
    assert {n["name"]: n["verdict"] for n in pred["nodes"]} == {n: "pass" for n in NODES}


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("mode", ["peer", "only-peer", "twice", "other-end", "rail", "peer-figure"])
def test_a_node_that_speaks_for_others_is_the_suspect(fabric, launcher, mode):
    p, pred = fabric(launcher, mode)
    assert p.returncode != 0, p.stderr
    verdicts = {n["name"]: n["verdict"] for n in pred["nodes"]}
    assert verdicts[BAD] == "fail" and pred["verdict"] == "FAIL", (verdicts, p.stderr)
    # Its peers are not failed for it: each passed with the other honest nodes.
    assert all(verdicts[n] == "pass" for n in NODES if n != BAD), (verdicts, p.stderr)
    (check,) = [c for c in pred["checks"] if c["name"] == "fabric.node" and c["subject"] == BAD]
    assert check["code"] == "FABRIC_WORKER_LIED" and check["evidence"]["refused"], check
    assert all(r["node"] == BAD and r["line"] for r in check["evidence"]["refused"])
    assert pred["fabric"]["bad"]["suspects"] == [BAD]
    # Every pair of the bad node is not tested, naming it; none passed on what it said.
    # (peer-figure lies as end A only: as end B the TCP figures are its own to report.)
    pairs = [r for r in pred["pairs"] if (r["a"],) == (BAD,) or (mode != "peer-figure" and r["b"] == BAD)]
    assert pairs and all("error" in r and r["refused"] and f"{BAD}: " in r["error"] for r in pairs), pairs
    assert f"FAIL  fabric.node {BAD}:" in p.stderr and "[FABRIC_WORKER_LIED]" in p.stderr


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("mode,why", [
    ("Infinity", "value is inf, not a finite number"),
    ("NaN", "value is nan, not a finite number"),
    ("-5", "value is -5, below zero"),
    ('"9.5"', "value is '9.5' (str), not a number"),
    ("[9.5]", "value is '[9.5]' (list), not a number"),
    ("1e400", "value is inf, not a finite number"),
    ("1e5", "value is 100000, beyond any port's (3200)"),
    ("deep", "could not be read (nested deeper than 4 levels)"),
    ("control", "is not a name"),
    ("identity", "identity 'hostname' is not a printable name"),
])
def test_a_malformed_line_leaves_its_pairs_not_tested_naming_the_node(fabric, launcher, mode, why):
    p, pred = fabric(launcher, mode)
    assert p.returncode == 2, p.stderr  # something could not be judged; never a pass, never an internal error
    verdicts = {n["name"]: n["verdict"] for n in pred["nodes"]}
    assert verdicts[BAD] != "pass" and pred["verdict"] == "FAIL", (verdicts, p.stderr)
    assert all(verdicts[n] == "pass" for n in NODES if n != BAD), (verdicts, p.stderr)
    errors = [c for c in pred["checks"] if c["name"] == "fabric.pair"]
    assert errors and all(BAD in c["subject"] and c["code"] == "FABRIC_LINE_REFUSED" for c in errors), errors
    if mode in ("deep", "control", "identity"):  # as either end
        assert len(errors) == len([r for r in pred["pairs"] if BAD in (r["a"], r["b"])])
    (node,) = [c for c in pred["checks"] if c["name"] == "fabric.node" and c["subject"] == BAD]
    assert node["verdict"] == "error" and "its worker's result was refused" in node["message"], node
    assert all(c["message"].count(f"{BAD}: ") and why in c["message"] for c in errors), errors
    assert all(r["node"] == BAD for c in errors for r in c["evidence"]["refused"])
    # Control characters in what the node said reach no terminal raw.
    assert "\x1b" not in p.stderr and "\x07" not in p.stderr


# ---------------------------------------------------------------------- merge alone


def _ends(value_a=380.0, value_b=385.0, rate_a=400.0, rate_b=400.0):
    a = {MARKER: 1, "node": "a", "index": 0, "rails": [{"rail": "mlx5_0", "rate": rate_a, "subnet": None}],
         "figures": [{"rail": "mlx5_0", "direction": "a>b", "value": value_a, "unit": "Gb/s", "rate": rate_a}]}
    b = {MARKER: 1, "node": "b", "index": 1, "rails": [{"rail": "mlx5_0", "rate": rate_b, "subnet": None}],
         "figures": [{"rail": "mlx5_0", "direction": "b>a", "value": value_b, "unit": "Gb/s", "rate": rate_b}]}
    return a, b


def test_a_figure_beyond_its_own_ports_rate_is_refused_naming_its_end():
    floors = Floors(rdma_fraction=0.85)
    assert merge(1, "a", "b", list(_ends()), [], floors, tests=["rdma"]).rails() == {"mlx5_0": True}
    r = merge(1, "a", "b", list(_ends(value_b=430.0)), [], floors, tests=["rdma"])
    assert r.measurements == [] and r.rails() == {}
    assert r.error.startswith("b: mlx5_0 b>a 430 Gb/s, beyond its own port's rate (400 Gb/s)")
    assert [x["node"] for x in r.refused] == ["b"] and not r.refused[0]["claim"]
    # Within the timer's slack (lines.RATE_SLACK) it is a measurement.
    assert merge(1, "a", "b", list(_ends(value_b=405.0)), [], floors).error is None
    # A peer cannot frame an honest end by claiming a slow port of its own: each end is held to its own rate.
    r = merge(1, "a", "b", list(_ends(rate_b=1.0, value_b=0.9)), [], floors)
    assert r.error is None and r.rails() == {"mlx5_0": False}


def test_a_test_asked_for_of_which_neither_end_said_a_word_is_not_measured():
    """The 2026-11-29 fuzzing: workers that printed their TCP figures and left out RDMA (no figure,
    no skip) passed every pair on TCP alone under --tests tcp,rdma, nothing said."""
    floors = Floors(rdma_fraction=0.85, tcp_fraction=0.5)
    tcp = [{"rail": "tcp", "direction": d, "value": 90.0, "unit": "Gb/s", "rate": 100.0} for d in ("a>b", "b>a")]
    a = {MARKER: 1, "node": "a", "index": 0, "rails": [], "figures": []}
    b = {MARKER: 1, "node": "b", "index": 1, "rails": [], "figures": tcp}  # the client's end measures both ways
    r = merge(1, "a", "b", [a, b], [], floors, tests=["tcp", "rdma", "lat"])
    assert r.error is None and r.rails() == {"tcp": True}
    [silent] = [m for m in r.measurements if m.rail == "rdma"]
    assert silent.skipped == "neither end of the pair gave a figure or a reason for it" and silent.value is None
    # What the worker says of a test it could not run stands for it: no second word.
    skip = {"rail": "rdma", "direction": "a>b", "skipped": "no active RDMA port on this node (ibstat shows the ports)"}
    r = merge(1, "a", "b", [{**a, "figures": [skip]}, b], [], floors, tests=["tcp", "rdma", "lat"])
    assert [m.skipped for m in r.measurements if m.rail == "rdma"] == [skip["skipped"]]


def test_a_downtrained_port_does_not_lower_its_own_pairs_floor():
    # 400 and 100 Gb/s ends used to make the floor 85 (0.85 x the slower end), so 90 passed.
    r = merge(1, "a", "b", list(_ends(value_a=90.0, value_b=90.0, rate_b=100.0)), [], Floors(rdma_fraction=0.85))
    assert {m.floor for m in r.measurements} == {340.0} and r.rails() == {"mlx5_0": False}


def test_lines_are_bound_to_the_process_that_printed_them():
    honest = {MARKER: 1, "node": "a", "index": 0, "figures": []}
    mine, refused = bind("a", 0, [honest], [], "the launch of a")
    assert mine == honest and refused == []
    mine, refused = bind("a", 0, [{**honest, "node": "b", "index": 1}, honest, honest], ["nested past reason: {"],
                         "the launch of a")
    assert mine == honest
    assert [(r.node, r.lie) for r in refused] == [("a", False), ("a", True), ("a", True)]
    assert [r.why for r in refused] == ["the launch of a printed a result that could not be read (nested past reason)",
                                        "the launch of a ran on a but printed a result for b",
                                        "the launch of a printed a second result for a"]


def test_scan_refuses_deep_nesting_and_never_raises():
    deep = '{"' + MARKER + '": 1, "x": ' + "[" * 5000 + "]" * 5000 + "}"
    found, unreadable = scan(deep + "\n" + json.dumps({MARKER: 1, "node": "a"}))
    assert found == [{MARKER: 1, "node": "a"}] and len(unreadable) == 1
    assert unreadable[0].startswith("nested deeper than 4 levels") and len(unreadable[0]) < 500
    assert line_problem({MARKER: 1, "node": "a", "figures": [{"rail": "tcp", "direction": "a>b", "value": 1,
                                                              "x": [[[[1]]]]}]}) == "nested deeper than 4 levels"
    for bad, why in ((True, "value is 'true' (bool), not a number"), (float("inf"), "value is inf, not a finite number"),
                     (-0.5, "value is -0.5, below zero")):
        assert line_problem({"node": "a", "figures": [{"rail": "tcp", "direction": "a>b", "value": bad}]}) == \
            f"figure 1: {why}"


def test_a_flood_of_result_markers_is_counted_not_decoded():
    """16 MiB of markers cost a minute of the coordinator's time, a 1 MB copy and a decode each (the
    2026-11-28 hostile-node audit): past MAX_RESULTS_READ they are counted, and bind still refuses
    every result after the first."""
    from nodeqc.fabric.lines import MAX_RESULTS_READ

    line = json.dumps({MARKER: 1, "node": "a", "index": 0, "figures": []})
    found, unreadable = scan("\n".join([line] * (MAX_RESULTS_READ + 500)))
    assert len(found) == MAX_RESULTS_READ
    assert unreadable == [f"500 more results after the first {MAX_RESULTS_READ}, not read: a worker prints one"]
    mine, refused = bind("a", 0, found, unreadable, "the launch of a")
    assert mine == found[0] and len(refused) == MAX_RESULTS_READ  # 63 second results and the count


def test_an_end_that_prints_without_end_is_stopped_at_its_output_cap(tmp_path, monkeypatch):
    """An end's output went to a temporary file with no bound for the whole round's timeout: a
    hostile node could fill the login node's $TMPDIR. Its process is now ended at OUTPUT_FILE_BYTES
    (SIGXFSZ), and the end is said to have given no result."""
    from nodeqc.fabric import launchers

    monkeypatch.setattr(launchers, "OUTPUT_FILE_BYTES", 1 << 20)
    monkeypatch.setenv("TMPDIR", str(tmp_path))

    class Flood(launchers.ProcessLauncher):
        name = "flood"

        def commands(self, nodes, args, work):
            return [[sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"] for _ in nodes]

    class Work:
        round_timeout_s = 60

    started = __import__("time").monotonic()
    [(outputs, errors, refused)] = Flood()._launch([("a", "b")], [[]], Work())
    assert __import__("time").monotonic() - started < 30  # ended by its cap, not by the round's timeout
    assert outputs == [] and refused == [] and len(errors) == 2
    assert all("gave no result (exit -25)" in e or "gave no result (exit 1)" in e for e in errors), errors


# ---------------------------------------------------------------------- nodeqc-retest --fabric

FAKE_SALLOC = r'''#!PYTHON
# A fake salloc: the allocation's environment, the command run here (as salloc does); with
# $FAKE_TAMPER, the report the command names is changed afterwards (by someone else).
import json, os, subprocess, sys
home = os.environ["FAKE_SLURM"]
with open(os.path.join(home, "calls.jsonl"), "a") as log:
    log.write(json.dumps(["salloc", *sys.argv[1:]]) + "\n")
args, i = sys.argv[1:], 0
while args[i].startswith("-"):
    i += 2 if args[i] == "-N" else 1
opts = dict(a[2:].split("=", 1) for a in args[:i] if a.startswith("--") and "=" in a)
env = dict(os.environ, SLURM_JOB_ID="99", SLURM_JOB_NODELIST=opts["nodelist"])
p = subprocess.run(args[i:], env=env, stdout=subprocess.PIPE, text=True)
sys.stdout.write(p.stdout)
report = (p.stdout.strip().splitlines() or [""])[-1]
if os.environ.get("FAKE_TAMPER") and report.endswith(".report.json"):
    envelope = json.load(open(report))
    envelope["payload"] = envelope["payload"][:-8] + "AAAAAAA="
    json.dump(envelope, open(report, "w"))
sys.exit(p.returncode)
'''

NODEQC_ON_NODE = r"""#!/bin/sh
# nodeqc on the login node; the stand-in worker (HOSTILE_WORKER) for `nodeqc fabric worker`.
if [ "$1" = fabric ] && [ "$2" = worker ]; then exec "$(dirname "$0")/hostile-nodeqc" "$@"; fi
exec PYTHON -m nodeqc "$@"
"""

FABRIC_DRAIN = "nodeqc: FAIL fabric FABRIC_NODE failed its pair tests; /r/old.report.json"


@pytest.fixture
def retest(tmp_path):
    from test_slurm import SCRIPT

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("scontrol", FAKE_SCONTROL), ("srun", FAKE_SRUN), ("salloc", FAKE_SALLOC),
                       ("hostile-nodeqc", HOSTILE_WORKER), ("nodeqc-on-node", NODEQC_ON_NODE)):
        (bin_dir / name).write_text(text.replace("#!PYTHON", f"#!{sys.executable}").replace("PYTHON", sys.executable))
        (bin_dir / name).chmod(0o755)

    def run(mode: str = "", tamper: bool = False):
        nodes = {n: {"state": "ALLOCATED", "reason": ""} for n in NODES}
        nodes["n3"] = {"state": "IDLE+DRAIN", "reason": FABRIC_DRAIN}  # the node a fabric re-test may return
        (tmp_path / "state.json").write_text(json.dumps(nodes))
        (tmp_path / "calls.jsonl").write_text("")
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
               "FAKE_SLURM": str(tmp_path), "FAKE_BAD": BAD, "FAKE_HOSTILE": mode, "FAKE_TAMPER": "1" if tamper else "",
               "NODEQC": str(bin_dir / "nodeqc-on-node")}
        env.pop("SLURM_JOB_ID", None)
        p = subprocess.run(["bash", str(SCRIPT), "--fabric", "n[1-4]", "--", "--tests", "tcp", "--seconds", "1",
                            "--min-tcp-gbps", "5", "--rounds", "3", "--seed", "1", "--out", str(tmp_path / "out")],
                           env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        return p, json.loads((tmp_path / "state.json").read_text())

    return run


def test_a_fabric_retest_returns_a_node_that_passed_in_a_complete_verified_run(retest):
    p, state = retest()
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"{n} pass" for n in NODES], p.stderr
    assert state["n3"]["state"] == "IDLE" and state["n3"]["reason"] == ""


@pytest.mark.parametrize("mode,tamper,why", [
    ("NaN", False, "could not judge every node (exit 2): nothing resumed"),  # n2's pairs not tested: exit 2
    ("", True, "NOT VERIFIED"),  # the report changed after the run
])
def test_a_fabric_retest_returns_none_from_a_partial_or_unverified_run(retest, mode, tamper, why):
    # Before, the script read the run's stderr: n3 (never named FAIL or ERROR there) went back to
    # service although the run ended in exit 2, or from a report that did not verify.
    p, state = retest(mode, tamper)
    assert p.returncode == 2, p.stderr
    assert why in p.stderr
    assert "n3 pass" not in p.stdout and "n3 error" in p.stdout.splitlines(), p.stdout
    assert state["n3"]["state"] == "IDLE+DRAIN" and state["n3"]["reason"] == FABRIC_DRAIN


@pytest.mark.parametrize("field", ["value", "rate"])
def test_a_figure_of_hundreds_of_digits_is_refused_naming_the_node_never_a_traceback(field):
    """2026-11-29 fuzzing: math.isfinite(10**400) raised OverflowError in the coordinator, and one
    node's line ended the whole fabric run, no node judged."""
    figure = {"rail": "mlx5_0", "direction": "a>b", "unit": "Gb/s", "value": 100.0, "rate": 400.0}
    text = json.dumps({MARKER: 1, "node": "n1", "figures": [figure]}).replace(
        f'"{field}": {figure[field]}', f'"{field}": 1{"0" * 400}')
    [line] = scan(text)[0]
    assert line_problem(line) == f"figure 1: {field} is a 1329-bit integer, not a figure"
