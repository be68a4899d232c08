"""packaging/slurm/nodeqc-retest against a fake `scontrol` and `srun` on PATH that record their calls
and keep node states: nodes nodeqc drained are resumed (into a maintenance reservation) only to be
tested, and stay in service only when they pass; a failing node is drained with a reason prefixed
`nodeqc:`; a node an operator drained is never touched. The qualifications are real (simulated
nodes)."""

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import LOOPBACK_TCP_FLOOR_GBPS, ROOT

SCRIPT = ROOT / "packaging" / "slurm" / "nodeqc-retest"

FAKE_SCONTROL = r'''#!PYTHON
"""A fake scontrol: node states in $FAKE_SLURM/state.json, every call appended to $FAKE_SLURM/calls.jsonl."""
import fcntl, json, os, re, sys
home = os.environ["FAKE_SLURM"]
with open(os.path.join(home, "calls.jsonl"), "a") as log:
    log.write(json.dumps(["scontrol", *sys.argv[1:]]) + "\n")
with open(os.path.join(home, "state.json"), "r+") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    nodes = json.load(f)
    args = sys.argv[1:]
    opts = dict(a.split("=", 1) for a in args if "=" in a)
    if args[:2] == ["show", "hostnames"]:
        for item in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", args[2]):
            m = re.fullmatch(r"(.*)\[(\d+)-(\d+)\]", item)
            for name in ([f"{m[1]}{i:0{len(m[2])}d}" for i in range(int(m[2]), int(m[3]) + 1)] if m else [item]):
                print(name)
    elif args[:2] == ["show", "node"]:
        if args[2] not in nodes:
            print(f"Node {args[2]} not found", file=sys.stderr)
            sys.exit(1)
        n = nodes[args[2]]
        print(f"NodeName={args[2]} Arch=x86_64 CoresPerSocket=56\n   State={n['state']} ThreadsPerCore=2 TmpDisk=0")
        print("   Partitions=gpu\n   Comment=(null)")
        if n.get("reason"):
            print(f"   Reason={n['reason']} [root@2026-11-01T10:00:00]")
    elif args[:1] == ["update"]:
        n = nodes[opts["NodeName"]]
        if opts.get("State") == "RESUME":
            n["state"], n["reason"] = "IDLE", ""
        elif opts.get("State") == "DRAIN":
            n["state"], n["reason"] = "IDLE+DRAIN", opts["Reason"]
    elif args[:2] == ["create", "reservation"]:
        for name in opts["Nodes"].split(","):
            nodes[name]["reservation"] = opts["ReservationName"]
    elif args[:1] == ["delete"]:
        for n in nodes.values():
            if n.get("reservation") == opts["ReservationName"]:
                n["reservation"] = None
    else:
        sys.exit(f"fake scontrol: unexpected {args}")
    f.seek(0); f.truncate(); json.dump(nodes, f)
'''

FAKE_SRUN = r'''#!PYTHON
"""A fake srun: refuses a drained node (as Slurm does), else runs the command 'on' the node: each
node has its own archive; nodes in $FAKE_FAIL_NODES get a GPU link fault."""
import fcntl, json, os, subprocess, sys
home = os.environ["FAKE_SLURM"]
with open(os.path.join(home, "calls.jsonl"), "a") as log:
    log.write(json.dumps(["srun", *sys.argv[1:]]) + "\n")
opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
command = [a for a in sys.argv[1:] if not a.startswith("-")][:1]
command += sys.argv[sys.argv.index(command[0]) + 1:]
node = opts["nodelist"]
with open(os.path.join(home, "state.json")) as f:
    fcntl.flock(f, fcntl.LOCK_SH)
    state = json.load(f)[node]
if "DRAIN" in state["state"]:
    sys.exit("srun: error: Unable to allocate resources: Requested node configuration is not available")
if state.get("reservation") and opts.get("reservation") != state["reservation"]:
    sys.exit("srun: error: Unable to allocate resources: node is reserved")
if node in os.environ.get("FAKE_FAIL_NODES", "").split():
    command += ["--inject", "gpu0:pcie_width=8"]
env = dict(os.environ, NODEQC_ARCHIVE=os.path.join(home, "nodes", node))
sys.exit(subprocess.run(command, env=env).returncode)
'''


@pytest.fixture
def slurm(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    home = tmp_path / "slurm"
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("scontrol", FAKE_SCONTROL), ("srun", FAKE_SRUN)):
        (bin_dir / name).write_text(text.replace("#!PYTHON", f"#!{sys.executable}"))
        (bin_dir / name).chmod(0o755)
    nodeqc = bin_dir / "nodeqc-on-node"
    nodeqc.write_text(f"#!/bin/sh\nexec {sys.executable} -m nodeqc \"$@\"\n")
    nodeqc.chmod(0o755)

    def run(nodes: dict, *args: str, fail: str = ""):
        (home / "state.json").write_text(json.dumps(nodes))
        (home / "calls.jsonl").write_text("")
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM": str(home),
               "FAKE_FAIL_NODES": fail, "NODEQC": str(nodeqc), "PYTHONPATH": str(ROOT)}
        p = subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=180, cwd=ROOT)
        calls = [json.loads(line) for line in (home / "calls.jsonl").read_text().splitlines()]
        return p, calls, json.loads((home / "state.json").read_text())

    return run


def _for(calls, node):
    """The calls that change or run something on one node."""
    return [c for c in calls if any(a.split("=", 1)[-1] in (node, f"nodeqc-{node}") for a in c[1:] if "=" in a)
            and c[1] not in ("show",)]


NODEQC_ARGS = ["--", "--simulate", "h100", "--quick", "--sample-hz", "8"]


def test_drain_and_resume_only_what_nodeqc_owns(slurm):
    nodes = {
        "gpu01": {"state": "IDLE+DRAIN", "reason": "nodeqc: FAIL health.pcie_link gpu0; /old.report.json"},
        "gpu02": {"state": "IDLE+DRAIN", "reason": "nodeqc: FAIL health.xid gpu3; /old.report.json"},
        "gpu03": {"state": "IDLE+DRAIN", "reason": "fan replaced, waiting for vendor"},
        "gpu04": {"state": "IDLE", "reason": ""},
        "gpu05": {"state": "MIXED", "reason": ""},
    }
    p, calls, state = slurm(nodes, "--profile", "h100", "gpu0[1-5]", *NODEQC_ARGS, fail="gpu02 gpu04")
    assert p.returncode == 1, p.stderr
    assert p.stdout.splitlines() == ["gpu01 pass", "gpu02 fail", "gpu03 skipped", "gpu04 fail", "gpu05 pass"]

    # gpu01 (nodeqc drained it, now repaired): reserved, resumed, tested in the reservation, released.
    assert [c[:2] for c in _for(calls, "gpu01")] == [["scontrol", "create"], ["scontrol", "update"],
                                                    ["srun", "--nodes=1"], ["scontrol", "delete"]]
    assert "State=RESUME" in _for(calls, "gpu01")[1]
    assert "--reservation=nodeqc-gpu01" in _for(calls, "gpu01")[2]
    assert state["gpu01"] == {"state": "IDLE", "reason": "", "reservation": None}

    # gpu02 (nodeqc drained it, still broken): tested, drained again with the new failure.
    assert state["gpu02"]["state"] == "IDLE+DRAIN" and state["gpu02"]["reservation"] is None
    reason = state["gpu02"]["reason"]
    assert reason.startswith("nodeqc: FAIL stress.pcie_bandwidth GPU 0 +1 more; ") and reason.endswith(".report.json")
    assert Path(reason.split("; ")[1]).is_file()

    # gpu03 (an operator's drain): never resumed, never tested, reason untouched.
    assert _for(calls, "gpu03") == [] and state["gpu03"] == nodes["gpu03"]
    assert "gpu03: drained by an operator (fan replaced, waiting for vendor" in p.stderr

    # gpu04 (in service, fails): drained by nodeqc; no reservation was needed. gpu05 passes: untouched.
    assert state["gpu04"]["state"] == "IDLE+DRAIN" and state["gpu04"]["reason"].startswith("nodeqc: FAIL stress.pcie_bandwidth GPU 0")
    assert [c[:2] for c in _for(calls, "gpu04")] == [["srun", "--nodes=1"], ["scontrol", "update"]]
    assert [c[:2] for c in _for(calls, "gpu05")] == [["srun", "--nodes=1"]] and state["gpu05"] == nodes["gpu05"]
    assert all("--exclusive" in c for c in calls if c[0] == "srun")


def test_a_node_that_cannot_be_tested_stays_drained(slurm):
    nodes = {"gpu01": {"state": "IDLE+DRAIN", "reason": "nodeqc: FAIL health.xid gpu1"},
             "gpu02": {"state": "IDLE", "reason": ""},
             "gpu03": {"state": "DOWN+NOT_RESPONDING", "reason": "Not responding"}}
    # A profile that does not exist: nodeqc exits 2 on every node.
    p, calls, state = slurm(nodes, "--profile", "no-such-profile", "gpu01,gpu02,gpu03", *NODEQC_ARGS)
    assert p.returncode == 2
    assert p.stdout.splitlines() == ["gpu01 error", "gpu02 error", "gpu03 error"]
    assert state["gpu01"]["state"] == "IDLE+DRAIN" and state["gpu01"]["reason"] == "nodeqc: retest could not run (exit 2)"
    assert state["gpu01"]["reservation"] is None
    assert state["gpu02"] == nodes["gpu02"]  # not drained for nodeqc's own trouble
    assert state["gpu03"] == nodes["gpu03"] and _for(calls, "gpu03") == []
    assert 'no profile named "no-such-profile"' in p.stderr


def test_usage(slurm):
    p, calls, _ = slurm({}, "--bogus")
    assert p.returncode == 2 and "unknown option --bogus" in p.stderr and calls == []


FABRIC_DRAIN = "nodeqc: FAIL fabric FABRIC_NODE failed its pair tests with 3 distinct peers; /r/fabric-job7.report.json"


def test_a_fabric_drain_is_not_cleared_by_a_single_node_pass(slurm):
    from nodeqc.fabric.slurm import FABRIC_REASON

    assert FABRIC_DRAIN.startswith(FABRIC_REASON) and f'"${{reason#{FABRIC_REASON}}}"' in SCRIPT.read_text()
    nodes = {"gpu01": {"state": "IDLE+DRAIN", "reason": FABRIC_DRAIN}}
    p, calls, state = slurm(nodes, "--profile", "h100", "gpu01", *NODEQC_ARGS)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["gpu01 skipped"]
    # Never resumed, never reserved, never tested: only a fabric re-test or an operator clears it.
    # (A node nodeqc drained alone is resumed when it passes: test_drain_and_resume_only_what_nodeqc_owns,
    # and both side by side under a real Slurm below.)
    assert _for(calls, "gpu01") == [] and state["gpu01"] == nodes["gpu01"]
    assert "gpu01: drained by the fabric test (nodeqc: FAIL fabric FABRIC_NODE" in p.stderr
    assert "a single-node pass cannot clear it" in p.stderr


def _real_slurm_nodeqc(tmp_path):
    """Skip without a local Slurm (tests/slurm_local.py); else the nodeqc the nodes run."""
    from slurm_local import unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    nodeqc = tmp_path / "nodeqc-on-node"
    nodeqc.write_text(f"#!/bin/sh\nexec {sys.executable} -m nodeqc \"$@\"\n")
    nodeqc.chmod(0o755)
    return nodeqc


@pytest.mark.slow
def test_a_fabric_drain_stays_under_a_real_slurm(tmp_path):
    """The same against Debian's slurmctld and slurmd on this host (tests/slurm_local.py): the real
    scontrol reports the reasons (with their [user@time] suffix), the real srun runs the test."""
    from slurm_local import LocalSlurm

    nodeqc = _real_slurm_nodeqc(tmp_path)
    with LocalSlurm(tmp_path / "slurm", ["rt1", "rt2"]) as s:
        for node, why in (("rt1", FABRIC_DRAIN), ("rt2", "nodeqc: FAIL health.xid gpu1; /old.report.json")):
            subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={why}"],
                           env=s.env, check=True, capture_output=True, timeout=30)
        env = {**s.env, "NODEQC": str(nodeqc), "PYTHONPATH": str(ROOT), "NODEQC_ARCHIVE": str(tmp_path / "archive")}
        (tmp_path / "archive").mkdir()
        p = subprocess.run(["bash", str(SCRIPT), "--profile", "h100", "rt[1-2]", *NODEQC_ARGS], env=env,
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
        rt1, rt2 = s.node("rt1"), s.node("rt2")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["rt1 skipped", "rt2 pass"], p.stderr
    assert "DRAIN" in rt1 and f"Reason={FABRIC_DRAIN}" in rt1
    assert "DRAIN" not in rt2


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (apt-get install iperf3)")
def test_only_a_fabric_retest_clears_a_fabric_drain_under_a_real_slurm(tmp_path):
    """nodeqc-retest --fabric under Debian's slurmctld and slurmd on this host: the fabric-drained
    node is resumed into a reservation with its in-service peers, re-tested by `nodeqc fabric
    --slurm --drain` (real iperf3 on 127.0.0.1, each pair on its own ports) and, passing, is back in
    service; a node nodeqc drained alone is not touched (a fabric pass says nothing of its GPUs)."""
    from slurm_local import LocalSlurm

    nodeqc = _real_slurm_nodeqc(tmp_path)
    alone = "nodeqc: FAIL health.xid gpu1; /old.report.json"
    with LocalSlurm(tmp_path / "slurm", ["ff1", "ff2", "ff3", "ff4", "ff5"]) as s:
        for node, why in (("ff2", FABRIC_DRAIN), ("ff3", alone)):
            subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={why}"],
                           env=s.env, check=True, capture_output=True, timeout=30)
        env = {**s.env, "NODEQC": str(nodeqc), "PYTHONPATH": str(ROOT)}
        addresses = [a for n in ("ff1", "ff2", "ff4", "ff5") for a in ("--address", f"{n}=127.0.0.1")]
        p = subprocess.run(["bash", str(SCRIPT), "--fabric", "ff[1-5]", "--", *addresses, "--tests", "tcp",
                            "--seconds", "1", "--min-tcp-gbps", LOOPBACK_TCP_FLOOR_GBPS, "--rounds", "3", "--seed", "5",
                            "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=300,
                           cwd=ROOT)
        nodes = {n: s.node(n) for n in s.nodes}
        reservations = subprocess.run(["scontrol", "show", "reservation"], env=s.env, capture_output=True,
                                      text=True, timeout=30).stdout
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["ff1 pass", "ff2 pass", "ff3 skipped", "ff4 pass", "ff5 pass"], p.stderr
    assert "qualifying 4 nodes together (fabric): ff1,ff2,ff4,ff5" in p.stderr
    assert "DRAIN" not in nodes["ff2"]  # the fabric re-test cleared the fabric drain
    assert "DRAIN" in nodes["ff3"] and f"Reason={alone}" in nodes["ff3"]
    assert "ff3: drained by nodeqc alone" in p.stderr
    assert "nodeqc-fabric-" not in reservations  # the maintenance reservation is gone
    (report,) = (tmp_path / "out").glob("fabric-*.report.json")
    payload = json.loads(base64.b64decode(json.loads(report.read_text())["payload"]))["predicate"]
    assert {n["name"]: n["verdict"] for n in payload["nodes"]} == {n: "pass" for n in ("ff1", "ff2", "ff4", "ff5")}


def test_a_reason_in_bytes_not_utf8_stops_neither_the_drain_nor_the_list(tmp_path):
    """2026-11-29 fuzzing: a node may set its own Slurm reason (health-check scripts do): one in bytes
    that are not UTF-8 raised UnicodeDecodeError out of the drain loop, leaving it and every node
    after it undrained; and out of `scontrol show hostnames`, a traceback for a usage error."""
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\n"
                    "if [ \"$1\" = show ] && [ \"$2\" = node ]; then\n"
                    "  printf 'NodeName=%s State=IDLE+DRAIN\\n   Reason=\\377\\376 bad [root@2024]\\n' \"$3\"; exit 0; fi\n"
                    "if [ \"$1\" = show ] && [ \"$2\" = hostnames ]; then printf 'n1\\n\\377n2\\n'; exit 0; fi\n"
                    "exit 0\n")
    fake.chmod(0o755)
    from nodeqc.core.errors import UsageError
    from nodeqc.fabric import slurm as fabric_slurm

    out = fabric_slurm.drain({"n1": "bad", "n2": "bad"}, "r.json", scontrol=str(fake))
    assert [(o.node, o.action) for o in out] == [("n1", "left"), ("n2", "left")]  # an operator's drain, not nodeqc's
    assert "\ufffd\ufffd bad" in out[0].detail
    with pytest.raises(UsageError, match=r"^--slurm n\[1-2\]: scontrol show hostnames gave"):
        fabric_slurm.expand("n[1-2]", scontrol=str(fake))
