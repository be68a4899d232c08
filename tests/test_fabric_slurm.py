"""`nodeqc fabric --slurm` through a fake `srun` and `scontrol` on PATH.

What is faked and why: no Slurm runs here (this machine and CI start no slurmctld/slurmd; see the
report of issue 15 for what a real one needs). The fake srun records its argv and does what srun
does for a two-node step: it starts one task per node of --nodelist with SLURMD_NODENAME and
SLURM_PROCID set, and exits with the worst task's status. The per-pair work it runs is the real
`nodeqc fabric worker` with real iperf3 traffic: on 127.0.0.1 for the clean fabric, and inside
network namespaces (one per node, as test_fabric_netns.py builds them) where a throttled node must
be found and drained. The fake scontrol is test_slurm.py's (node states in a JSON file).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
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
def test_one_srun_step_per_pair_inside_the_allocation(slurm):
    nodes = {f"gpu0{i}": {"state": "ALLOCATED", "reason": ""} for i in range(1, 5)}
    addresses = [a for n in nodes for a in ("--address", f"{n}=127.0.0.1")]
    p, calls, state = slurm(nodes, *addresses, "--min-tcp-gbps", "0.5", "--rounds", "3", "--seed", "2", "--drain")
    assert p.returncode == 0, p.stderr
    steps = _steps(calls)
    assert len(steps) == 3 * 2  # 3 rounds of 2 pairs
    for s in steps:
        assert s[1:9] == ["--nodes=2", "--ntasks=2", "--ntasks-per-node=1", s[4], "--exclusive",
                          "--job-name=nodeqc-fabric", "--kill-on-bad-exit=1", s[8]]
        assert s[4].startswith("--nodelist=gpu0") and s[8].startswith("--time=")
        assert s[9:13] == [sys.executable, "-m", "nodeqc", "fabric"] and "worker" in s
        assert "--index" not in s  # each task finds its end from SLURMD_NODENAME
    pairs = {frozenset(s[4].split("=", 1)[1].split(",")) for s in steps}
    assert len(pairs) == 6  # 4 nodes, 3 rounds: every pair once
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
