"""`nodeqc fabric --slurm`, against a real Slurm and against a fake one.

Real: Debian's slurmctld and one slurmd per node, all on this host (tests/slurm_local.py; `.ci/run`
installs them when root): `salloc` an allocation, nodeqc starts one srun step per end of each pair
inside it, and the slurmds' logs show each step on exactly its one node; with each node's work in a network
namespace of its own and one namespace throttled with tc, the node is named and drained through the
real scontrol. Skipped, saying why, without the packages or root.

Fake (runs anywhere, no root): a `srun` on PATH that records its argv and does what srun does for a
step: one task per node of --nodelist with SLURMD_NODENAME and SLURM_PROCID set. It is here
so the step's command line is checked where no Slurm can run; the per-pair work it runs is the real
`nodeqc fabric worker` with real iperf3 traffic (on 127.0.0.1, or in namespaces). The fake scontrol
is test_slurm.py's (node states in a JSON file), used to test the drain rules (an operator's drain
is left alone) without a cluster.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import LOOPBACK_TCP_FLOOR_GBPS, ROOT
from nodeqc.fabric import slurm as fabric_slurm
from test_slurm import FAKE_SCONTROL

FAKE_SRUN = r'''#!PYTHON
"""A fake srun: one task per node of --nodelist, each with SLURMD_NODENAME and SLURM_PROCID;
inside $FAKE_NETNS_PREFIX+node's network namespace when FAKE_NETNS is set."""
import json, os, subprocess, sys
home = os.environ["FAKE_SLURM"]
with open(os.path.join(home, "calls.jsonl"), "a") as log:
    log.write(json.dumps(["srun", *sys.argv[1:]]) + "\n")
if not os.environ.get("SLURM_JOB_ID"):
    sys.exit("srun: error: not inside a job allocation")
args = sys.argv[1:]
opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
command = args[next(i for i, a in enumerate(args) if not a.startswith("-")):]
nodes = opts["nodelist"].split(",")
procs = []
for rank, node in enumerate(sorted(nodes)):  # Slurm orders a step's tasks by its own node order
    env = dict(os.environ, SLURMD_NODENAME=node, SLURM_PROCID=str(rank), SLURM_STEP_NODELIST=opts["nodelist"])
    prefix = ["ip", "netns", "exec", node] if os.environ.get("FAKE_NETNS") else []
    procs.append(subprocess.Popen(prefix + command, env=env))
sys.exit(max(p.wait() for p in procs))
'''


@pytest.fixture
def slurm(tmp_path):
    home = tmp_path / "slurm"
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("scontrol", FAKE_SCONTROL), ("srun", FAKE_SRUN)):
        (bin_dir / name).write_text(text.replace("#!PYTHON", f"#!{sys.executable}"))
        (bin_dir / name).chmod(0o755)

    def run(nodes: dict, *args: str, netns: bool = False):
        (home / "state.json").write_text(json.dumps(nodes))
        (home / "calls.jsonl").write_text("")
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM": str(home),
               "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": ",".join(nodes), "PYTHONPATH": str(ROOT),
               "FAKE_NETNS": "1" if netns else ""}
        p = subprocess.run([sys.executable, "-m", "nodeqc", "fabric", "--slurm", *args,
                            "--nodeqc", f"{sys.executable} -m nodeqc", "--tests", "tcp", "--seconds", "1",
                            "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert "Traceback" not in p.stderr, p.stderr
        calls = [json.loads(line) for line in (home / "calls.jsonl").read_text().splitlines()]
        return p, calls, json.loads((home / "state.json").read_text())

    return run


def _steps(calls):
    return [c for c in calls if c[0] == "srun"]


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (apt-get install iperf3)")
def test_one_srun_step_per_end_inside_the_allocation(slurm):
    nodes = {f"gpu0{i}": {"state": "ALLOCATED", "reason": ""} for i in range(1, 5)}
    addresses = [a for n in nodes for a in ("--address", f"{n}=127.0.0.1")]
    p, calls, state = slurm(nodes, *addresses, "--min-tcp-gbps", LOOPBACK_TCP_FLOOR_GBPS, "--rounds", "3", "--seed", "2", "--drain")
    assert p.returncode == 0, p.stderr
    steps = _steps(calls)
    assert len(steps) == 3 * 2 * 2  # 3 rounds of 2 pairs, one step per end: a step's output is its node's alone
    for s in steps:
        assert s[1:7] == ["--nodes=1", "--ntasks=1", s[3], "--exclusive", "--job-name=nodeqc-fabric", s[6]]
        assert s[3].startswith("--nodelist=gpu0") and "," not in s[3] and s[6].startswith("--time=")
        assert s[7:11] == [sys.executable, "-m", "nodeqc", "fabric"] and "worker" in s
        # Each step is told its end: the node it runs on is end --index of --pair.
        pair = s[s.index("--pair") + 1].split(",")
        assert pair[int(s[s.index("--index") + 1])] == s[3].split("=", 1)[1]
    pairs = {s[s.index("--pair") + 1] for s in steps}
    assert len({frozenset(x.split(",")) for x in pairs}) == 6  # 4 nodes, 3 rounds: every pair once
    assert "RESULT: PASS" in p.stderr and "job4242" in p.stdout
    # Nothing failed: nothing drained.
    assert not [c for c in calls if c[0] == "scontrol" and c[1] == "update"]
    assert state == nodes


@pytest.mark.netns
def test_the_throttled_node_is_named_and_drained(slurm):
    from netns import Fabric, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with Fabric(4) as fabric:
        fabric.throttle(1, "100mbit")
        nodes = {ns: {"state": "ALLOCATED", "reason": ""} for ns in fabric.nodes}
        addresses = [a for n, addr in fabric.addresses.items() for a in ("--address", f"{n}={addr}")]
        p, calls, state = slurm(nodes, *addresses, "--min-tcp-gbps", "0.5", "--rounds", "3", "--seed", "4",
                                "--drain", netns=True)
    bad = fabric.nodes[1]
    assert p.returncode == 1, p.stderr
    assert f"FAIL  fabric.node {bad}" in p.stderr
    assert state[bad]["state"] == "IDLE+DRAIN"
    reason = state[bad]["reason"]
    assert reason.startswith("nodeqc: FAIL fabric FABRIC_NODE ") and reason.endswith(".report.json")
    assert all(state[n] == nodes[n] for n in fabric.nodes if n != bad)


def test_drain_leaves_an_operators_drain_alone(tmp_path, monkeypatch):
    home = tmp_path / "slurm"
    home.mkdir()
    scontrol = home / "scontrol"
    scontrol.write_text(FAKE_SCONTROL.replace("#!PYTHON", f"#!{sys.executable}"))
    scontrol.chmod(0o755)
    nodes = {"gpu01": {"state": "ALLOCATED", "reason": ""},
             "gpu02": {"state": "IDLE+DRAIN", "reason": "PSU swap, do not use"},
             "gpu03": {"state": "IDLE+DRAIN", "reason": "nodeqc: FAIL health.xid gpu1"}}
    (home / "state.json").write_text(json.dumps(nodes))
    monkeypatch.setenv("FAKE_SLURM", str(home))
    out = fabric_slurm.drain({"gpu01": "FABRIC_NODE x" * 40, "gpu02": "FABRIC_NODE y", "gpu03": "FABRIC_NODE z"},
                             "/r/fabric.report.json", scontrol=str(scontrol))
    state = json.loads((home / "state.json").read_text())
    assert [(o.node, o.action) for o in out] == [("gpu01", "drained"), ("gpu02", "left"), ("gpu03", "drained")]
    assert state["gpu02"] == nodes["gpu02"]
    assert state["gpu01"]["reason"].startswith("nodeqc: FAIL fabric FABRIC_NODE x")
    assert len(state["gpu01"]["reason"]) <= fabric_slurm.MAX_REASON + len("; /r/fabric.report.json")
    assert state["gpu03"]["reason"] == "nodeqc: FAIL fabric FABRIC_NODE z; /r/fabric.report.json"


def test_the_node_list_comes_from_slurm(tmp_path, monkeypatch):
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(FAKE_SCONTROL.replace("#!PYTHON", f"#!{sys.executable}"))
    scontrol.chmod(0o755)
    (tmp_path / "state.json").write_text("{}")
    monkeypatch.setenv("FAKE_SLURM", str(tmp_path))
    assert fabric_slurm.expand("gpu[01-03],login1", scontrol=str(scontrol)) == ["gpu01", "gpu02", "gpu03", "login1"]


# ---------------------------------------------------------------------- a real Slurm


@pytest.fixture(scope="module")
def real_slurm(tmp_path_factory):
    from slurm_local import LocalSlurm, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with LocalSlurm(tmp_path_factory.mktemp("slurm"), ["fab1", "fab2", "fab3", "fab4"]) as s:
        yield s


def _salloc(slurm, tmp_path, *fabric_args, nodeqc=None, timeout=300):
    nodeqc = nodeqc or f"{sys.executable} -m nodeqc"
    cmd = ["salloc", "-N", str(len(slurm.nodes)), "--exclusive", sys.executable, "-m", "nodeqc", "fabric", "--slurm",
           "--nodeqc", nodeqc, "--tests", "tcp", "--seconds", "1", "--out", str(tmp_path / "out"), *fabric_args]
    env = {**slurm.env, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (apt-get install iperf3)")
def test_real_slurm_runs_one_step_per_end_inside_the_allocation(real_slurm, tmp_path):
    # All four Slurm nodes are this host (one slurmd each): data traffic goes to 127.0.0.1, each
    # pair of a round on its own ports.
    addresses = [a for n in real_slurm.nodes for a in ("--address", f"{n}=127.0.0.1")]
    before = set(real_slurm.steps())
    p = _salloc(real_slurm, tmp_path, *addresses, "--min-tcp-gbps", LOOPBACK_TCP_FLOOR_GBPS, "--rounds", "3", "--seed", "5")
    assert p.returncode == 0, p.stderr
    assert "RESULT: PASS" in p.stderr and "launcher slurm" in p.stderr
    steps = {k: v for k, v in real_slurm.steps().items() if k not in before}
    # 3 rounds x 2 pairs, one step per end, each on exactly its one node: every node in 3 steps.
    assert len(steps) == 12 and all(len(nodes) == 1 for nodes in steps.values()), steps
    assert sorted(n for v in steps.values() for n in v) == sorted(real_slurm.nodes * 3)


@pytest.mark.slow
@pytest.mark.netns
def test_real_slurm_names_and_drains_the_throttled_node(real_slurm, tmp_path):
    # Each Slurm node's work runs in a network namespace of its own (a wrapper picks it from
    # SLURMD_NODENAME); one namespace is throttled with tc. --drain uses the real scontrol.
    from netns import Fabric, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with Fabric(len(real_slurm.nodes)) as fabric:
        ns_of = dict(zip(real_slurm.nodes, fabric.nodes))
        wrapper = tmp_path / "nodeqc-in-netns"
        cases = "".join(f"  {n}) ns={ns} ;;\n" for n, ns in ns_of.items())
        wrapper.write_text(f"#!/bin/sh\ncase \"$SLURMD_NODENAME\" in\n{cases}esac\n"
                           f"exec ip netns exec \"$ns\" {sys.executable} -m nodeqc \"$@\"\n")
        wrapper.chmod(0o755)
        fabric.throttle(2, "100mbit")
        addresses = [a for n in real_slurm.nodes for a in ("--address", f"{n}={fabric.addresses[ns_of[n]]}")]
        p = _salloc(real_slurm, tmp_path, *addresses, "--min-tcp-gbps", "0.5", "--rounds", "3", "--seed", "6",
                    "--drain", nodeqc=str(wrapper))
    try:
        assert p.returncode == 1, p.stderr
        assert "FAIL  fabric.node fab3" in p.stderr and "fab3: drained" in p.stderr
        node = real_slurm.node("fab3")
        assert "DRAIN" in node and "Reason=nodeqc: FAIL fabric FABRIC_NODE" in node
        assert all("DRAIN" not in real_slurm.node(n) for n in ("fab1", "fab2", "fab4"))
    finally:
        subprocess.run(["scontrol", "update", "NodeName=fab3", "State=RESUME"], env=real_slurm.env, timeout=30)


@pytest.mark.slow
def test_real_slurm_runs_a_group_test_one_step_per_node_and_names_the_node_with_wrong_results(real_slurm, tmp_path):
    # `--group-size 4` over fake CuPy (tests/fake_cupy): each node of a group is one srun step of its
    # own running `nodeqc fabric worker --group`; fab3's ranks return wrong results wherever they sit.
    # The group fails, its half with fab3 fails, fab3 fails again with a node of the half that passed.
    import base64

    fake = Path(__file__).resolve().parent / "fake_cupy"
    wrapper = tmp_path / "nodeqc-fake-gpus"
    wrapper.write_text(f"#!/bin/sh\nexport FAKE_CUPY_NODE=\"$SLURMD_NODENAME\" FAKE_CUPY_GPUS=1 "
                       f"FAKE_NCCL_FAULT=corrupt-recv:@fab3 PYTHONPATH={fake}:{ROOT}\n"
                       f"exec {sys.executable} -m nodeqc \"$@\"\n")
    wrapper.chmod(0o755)
    addresses = [a for n in real_slurm.nodes for a in ("--address", f"{n}=127.0.0.1")]
    before = set(real_slurm.steps())
    p = _salloc(real_slurm, tmp_path, *addresses, "--tests", "nccl", "--group-size", "4", "--seconds", "0.01",
                "--nccl-bytes", "4096", "--min-nccl-busbw", "0.000001", "--seed", "3", nodeqc=str(wrapper))
    assert p.returncode == 1, p.stderr
    assert "FAIL  fabric.group fab3: failed with known-good partner" in p.stderr
    steps = {k: v for k, v in real_slurm.steps().items() if k not in before}
    # the group (4 steps), its halves (4), two confirmations (4): every step on exactly its one node
    assert len(steps) == 12 and all(len(nodes) == 1 for nodes in steps.values()), steps
    report = Path(p.stdout.strip().splitlines()[-1])
    pred = json.loads(base64.b64decode(json.loads(report.read_text())["payload"]))["predicate"]
    assert {n["name"]: n["verdict"] for n in pred["nodes"]} == {"fab1": "pass", "fab2": "pass", "fab3": "fail",
                                                                "fab4": "pass"}
