"""`nodeqc fabric --k8s`: each round one Indexed Job, through kubectl.

No Kubernetes cluster can run here (kind and k3s download their node images; Debian ships neither),
so a fake `kubectl` on PATH records its argv and plays the cluster: `get nodes` lists the nodes,
`apply` reads the rendered manifest and plays its pods (one per index, each put on one of the nodes
the affinity allows, in an order of its own, as a scheduler would, running the container's command
with the env the manifest asks for: NODEQC_NODE from spec.nodeName, JOB_COMPLETION_INDEX from the
index annotation), `wait` waits for the Job's condition, `get pods` and `logs` show what the pods
did. The pods' work is the real `nodeqc fabric worker` with real iperf3 traffic on 127.0.0.1 (or in
network namespaces joined by a bridge, one throttled with tc). The real kubectl, where installed, is
used for the path with no cluster.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import LOOPBACK_TCP_FLOOR_GBPS, ROOT
from nodeqc.fabric.kubernetes import INDEX_ANNOTATION, LABEL, KubernetesLauncher, round_manifest
from nodeqc.fabric.launchers import Work
from nodeqc.fabric.scoring import Floors

FAKE_KUBECTL = r'''#!PYTHON
"""A fake kubectl (see tests/test_fabric_k8s.py). State in $FAKE_K8S; every call appended to calls.jsonl."""
import json, os, random, signal, subprocess, sys, time
home = os.environ["FAKE_K8S"]
args = sys.argv[1:]
if args[:1] != ["__kubelet"]:
    with open(os.path.join(home, "calls.jsonl"), "a") as log:
        log.write(json.dumps(args) + "\n")
nodes = os.environ["FAKE_K8S_NODES"].split(",")
pods_dir = os.path.join(home, "pods")
os.makedirs(pods_dir, exist_ok=True)

def flag(name):
    for i, a in enumerate(args):
        if a == name:
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None

def manifest(job):
    with open(os.path.join(home, "jobs", job + ".json")) as f:
        return json.load(f)

def pods_of(job):
    m = manifest(job)
    out = []
    for index in range(m["spec"]["completions"]):
        path = os.path.join(pods_dir, f"{job}-{index}.json")
        state = json.load(open(path)) if os.path.exists(path) else {"index": index, "phase": "Pending", "node": None}
        out.append(state)
    return out

if os.environ.get("FAKE_K8S_DOWN"):
    sys.exit("The connection to the server localhost:8080 was refused - did you specify the right host or port?")
if args[:2] == ["get", "nodes"]:
    print(json.dumps({"items": [{"metadata": {"name": n}, "status": {"addresses": [
        {"type": "Hostname", "address": n}, {"type": "InternalIP", "address": "127.0.0.1"}]}} for n in nodes]}))
elif args[:2] == ["auth", "can-i"]:
    answer = os.environ.get("FAKE_K8S_CAN", "yes")
    print(answer)
    sys.exit(0 if answer == "yes" else 1)
elif args[:1] == ["apply"]:
    with open(flag("-f")) as f:
        m = json.load(f)
    job = m["metadata"]["name"]
    os.makedirs(os.path.join(home, "jobs"), exist_ok=True)
    with open(os.path.join(home, "jobs", job + ".json"), "w") as f:
        json.dump(m, f)
    kubelet = subprocess.Popen([sys.executable, __file__, "__kubelet", job], start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(home, "jobs", job + ".pid"), "w") as f:
        f.write(str(kubelet.pid))
    print(f"job.batch/{job} created")
elif args[:1] == ["__kubelet"]:
    # The scheduler and the kubelets: every index at once, each on a node the affinity allows.
    job = args[1]
    m = manifest(job)
    spec = m["spec"]["template"]["spec"]
    allowed = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
    order = list(allowed)
    random.Random(job).shuffle(order)  # not the manifest's order: a pod must find its end by its node
    (container,) = spec["containers"]
    procs = []
    for index in range(m["spec"]["completions"]):
        node = order[index]
        env = dict(os.environ)
        for e in container.get("env", []):
            ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            env[e["name"]] = e["value"] if "value" in e else {
                "spec.nodeName": node,
                "metadata.annotations['batch.kubernetes.io/job-completion-index']": str(index)}[ref]
        lie = dict(x.split("=") for x in os.environ.get("FAKE_K8S_LIE", "").split() if x)
        if node in lie:  # a pod told the wrong node name (a broken manifest or image)
            env["NODEQC_NODE"] = lie[node]
        log = open(os.path.join(pods_dir, f"{job}-{index}.log"), "w")
        if node == os.environ.get("FAKE_K8S_FAIL_NODE"):  # its pod is killed before it prints anything
            procs.append((index, node, None, log))
            continue
        prefix = ["ip", "netns", "exec", node] if os.environ.get("FAKE_NETNS") else []
        proc = subprocess.Popen(prefix + container["command"], env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append((index, node, proc, log))
    for index, node, proc, log in procs:
        code = 137 if proc is None else proc.wait()
        log.close()
        state = {"index": index, "node": node, "phase": "Succeeded" if code == 0 else "Failed", "exit": code,
                 "reason": "OOMKilled" if code == 137 else ("Error" if code else "Completed")}
        path = os.path.join(pods_dir, f"{job}-{index}.json")
        with open(path + ".tmp", "w") as f:  # whole or absent: `wait` and `get pods` read it meanwhile
            json.dump(state, f)
        os.replace(path + ".tmp", path)
elif args[:1] == ["wait"]:
    condition = flag("--for").split("=", 1)[1]
    errs = os.path.join(home, "wait-errors")  # FAKE_K8S_WAIT_ERRORS: this many waits for Complete err at once
    # Read by the waits for Complete alone, and written whole: a wait for Failed that read the count
    # while one for Complete rewrote it read "" and died, and was counted as a wait started again.
    done = int(open(errs).read()) if condition == "complete" and os.path.exists(errs) else 0
    if condition == "complete" and done < int(os.environ.get("FAKE_K8S_WAIT_ERRORS", "0")):
        with open(errs + ".tmp", "w") as f:
            f.write(str(done + 1))
        os.replace(errs + ".tmp", errs)
        sys.exit("error: an error on the server (\"unknown\") has prevented the request from succeeding")
    job = next(a for a in args if a.startswith("job/"))[4:]
    give_up = time.monotonic() + float(flag("--timeout").rstrip("s"))
    while time.monotonic() < give_up:
        pods = pods_of(job)
        if all(p["phase"] in ("Succeeded", "Failed") for p in pods):
            failed = any(p["phase"] == "Failed" for p in pods)
            if (condition == "failed") == failed:
                print(f"job.batch/{job} condition met")
                sys.exit(0)
        time.sleep(0.1)
    sys.exit(f"error: timed out waiting for the condition on jobs/{job}")
elif args[:2] == ["get", "pods"]:
    job = flag("-l").split("=", 1)[1]
    items = []
    for p in pods_of(job):
        item = {"metadata": {"name": f"{job}-{p['index']}-x7k2p", "annotations": {
                    "batch.kubernetes.io/job-completion-index": str(p["index"])}},
                "spec": {"nodeName": p["node"]} if p["node"] else {}, "status": {"phase": p["phase"]}}
        if p["phase"] == "Failed":
            item["status"]["containerStatuses"] = [{"name": "worker", "state": {"terminated": {
                "reason": p["reason"], "exitCode": p["exit"]}}}]
        items.append(item)
    print(json.dumps({"kind": "List", "items": items}))
elif args[:1] == ["logs"]:
    job = flag("-l").split("=", 1)[1]
    for p in pods_of(job):
        path = os.path.join(pods_dir, f"{job}-{p['index']}.log")
        if os.path.exists(path):
            text = open(path).read()
            if "--prefix" in args:  # as kubectl does: every line of a pod's log starts with its pod's name
                # kubectl breaks lines at \n only (not at \r, \x1c or \u2028, as splitlines does)
                text = "".join(f"[pod/{job}-{p['index']}-x7k2p/worker] {line}\n" for line in text.split("\n")[:-1]) \
                    + (f"[pod/{job}-{p['index']}-x7k2p/worker] {text.split(chr(10))[-1]}" if text.split("\n")[-1] else "")
            sys.stdout.write(text)
elif args[:2] == ["delete", "job"]:
    print(f"job.batch \"{args[2]}\" deleted")
else:
    sys.exit(f"fake kubectl: unexpected {args}")
'''

NODES = ["k8s-a", "k8s-b", "k8s-c", "k8s-d"]


@pytest.fixture
def k8s(tmp_path):
    home = tmp_path / "k8s"
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True)
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(FAKE_KUBECTL.replace("#!PYTHON", f"#!{sys.executable}"))
    kubectl.chmod(0o755)

    def run(*args: str, nodes=NODES, env=None, tests="tcp", path=None):
        (home / "calls.jsonl").write_text("")
        full_env = {**os.environ, "PATH": path if path is not None else f"{bin_dir}:{os.environ['PATH']}",
                    "FAKE_K8S": str(home), "FAKE_K8S_NODES": ",".join(nodes), "PYTHONPATH": str(ROOT), **(env or {})}
        p = subprocess.run([sys.executable, "-m", "nodeqc", "fabric", "--k8s", ",".join(nodes), "--image", "nodeqc:test",
                            "--nodeqc", f"{sys.executable} -m nodeqc", "--tests", tests, "--seconds", "1",
                            "--out", str(tmp_path / "out"), *args], env=full_env, capture_output=True, text=True,
                           timeout=300, cwd=ROOT)
        assert "Traceback" not in p.stderr, p.stderr
        calls = [json.loads(line) for line in (home / "calls.jsonl").read_text().splitlines()]
        jobs = {f.stem: json.loads(f.read_text()) for f in sorted((home / "jobs").glob("*.json"))} \
            if (home / "jobs").is_dir() else {}
        return p, calls, jobs

    return run


def _report(p):
    path = Path(p.stdout.strip().splitlines()[-1])
    from nodeqc.report.envelope import read_report_bytes
    import base64

    envelope = json.loads(read_report_bytes(path))
    return json.loads(base64.b64decode(envelope["payload"]))["predicate"], path


def _check_manifest(m, pairs):
    """What a Kubernetes API server would insist on, and what the round needs."""
    nodes = [n for pair in pairs for n in pair]
    assert (m["apiVersion"], m["kind"]) == ("batch/v1", "Job")
    spec = m["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == len(nodes)
    assert spec["backoffLimitPerIndex"] == 0 and spec["activeDeadlineSeconds"] > 0
    assert len(m["metadata"]["name"]) <= 63 and m["metadata"]["labels"][LABEL] == m["metadata"]["name"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["hostNetwork"] is True
    assert spec["template"]["metadata"]["labels"][LABEL] == m["metadata"]["name"]
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["key"] == "kubernetes.io/hostname"
    assert sorted(term["matchExpressions"][0]["values"]) == sorted(nodes)
    (anti,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == {"labelSelector": {"matchLabels": {LABEL: m["metadata"]["name"]}},
                    "topologyKey": "kubernetes.io/hostname"}
    (c,) = pod["containers"]
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
    assert env == {"NODEQC_NODE": "spec.nodeName",
                   "JOB_COMPLETION_INDEX": f"metadata.annotations['{INDEX_ANNOTATION}']"}
    cmd = c["command"]
    assert cmd[cmd.index("fabric"):cmd.index("fabric") + 3] == ["fabric", "worker", "--pairs"]
    assert cmd[cmd.index("--pairs") + 1] == " ".join(f"{a},{b}" for a, b in pairs)


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (apt-get install iperf3)")
def test_one_indexed_job_per_round_through_kubectl(k8s):
    p, calls, jobs = k8s("--min-tcp-gbps", LOOPBACK_TCP_FLOOR_GBPS, "--rounds", "3", "--seed", "2")
    assert p.returncode == 0, p.stderr
    assert "RESULT: PASS" in p.stderr and "launcher kubernetes" in p.stderr
    # Before any round: the nodes are in the cluster and Jobs may be created.
    assert calls[0] == ["get", "nodes", "-o", "json"] and calls[1][:3] == ["auth", "can-i", "create"]
    applied = [c for c in calls if c[0] == "apply"]
    assert len(applied) == 3 and len(jobs) == 3  # one Job per round, not one per pair
    predicate, path = _report(p)
    schedule = {r["round"]: r["pairs"] for r in predicate["fabric"]["schedule"]}
    for name, m in jobs.items():
        _check_manifest(m, [tuple(x) for x in schedule[int(name.rsplit("-r", 1)[1])]])
        job_calls = [c for c in calls if any(name in a for a in c)]
        assert [c[0] for c in job_calls] == ["apply", "wait", "wait", "get", "logs"]
        assert {c[1] for c in job_calls if c[0] == "wait"} == {"--for=condition=complete", "--for=condition=failed"}
    # Every pair of every round was measured both ways, each pod found its end from its node.
    assert predicate["fabric"]["launcher"] == "kubernetes"
    assert len({frozenset((r["a"], r["b"])) for r in predicate["pairs"]}) == 6
    floor = float(LOOPBACK_TCP_FLOOR_GBPS)
    assert all(r["rails"]["tcp"]["a>b"] > floor and r["rails"]["tcp"]["b>a"] > floor for r in predicate["pairs"])
    assert [n["verdict"] for n in predicate["nodes"]] == ["pass"] * 4
    journal = [json.loads(line) for line in path.with_name(path.name.replace(".report.json", ".journal.jsonl"))
               .read_text().splitlines()]
    assert [e["round"] for e in journal if e["type"] == "fabric_round"] == [1, 2, 3]


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (apt-get install iperf3)")
def test_a_wait_that_errs_is_started_again_and_the_round_ends_when_the_job_does(k8s):
    # The first two waits for Complete err at once (an API server's blip). Before: the round then sat
    # on the wait for Failed until its timeout (the round's deadline, minutes) although the Job had ended.
    p, calls, jobs = k8s("--min-tcp-gbps", LOOPBACK_TCP_FLOOR_GBPS, "--rounds", "1", "--seed", "2", env={"FAKE_K8S_WAIT_ERRORS": "2"})
    assert p.returncode == 0, p.stderr
    (name,) = jobs
    waits = [c[1] for c in calls if c[0] == "wait"]
    assert waits.count("--for=condition=complete") == 3 and waits.count("--for=condition=failed") == 1
    # Each wait started again asks for the time left of the round's deadline, never more.
    timeouts = [int(c[-1].removeprefix("--timeout=").removesuffix("s")) for c in calls if c[0] == "wait"]
    assert all(t <= timeouts[0] for t in timeouts)


def test_a_pod_that_dies_is_named_by_index_pod_and_node(k8s):
    # The RDMA test skips at once here (no ib_write_bw, or no RDMA port): no end waits for a peer.
    p, calls, jobs = k8s("--rounds", "1", "--seed", "3", env={"FAKE_K8S_FAIL_NODE": "k8s-c"}, tests="rdma")
    assert p.returncode == 2, p.stderr
    predicate, _ = _report(p)
    (pair_error,) = [c for c in predicate["checks"] if c["name"] == "fabric.pair"]
    assert "k8s-c" in pair_error["subject"]
    assert "c: worker gave no result: index " in pair_error["message"]
    assert "Failed, OOMKilled (exit 137)" in pair_error["message"]
    # Its peer's pod ran; the other pair's did too: nothing is a pass, nothing is lost.
    other = [c for c in predicate["checks"] if c["name"] == "fabric.node" and c["subject"] != "k8s-c"]
    assert all(c["verdict"] != "pass" for c in other)


def test_a_pod_that_takes_itself_for_another_node_is_not_believed(k8s):
    # The pod on k8s-a is told it is k8s-d (a broken manifest or image, or a lying node): its line
    # is bound to k8s-a, where the API server says its pod ran, and refused; k8s-a is the suspect.
    p, calls, _ = k8s("--rounds", "1", "--seed", "3", env={"FAKE_K8S_LIE": "k8s-a=k8s-d"}, tests="rdma")
    assert p.returncode == 1, p.stderr  # the lying node fails; pairs left unjudged beside it do not make it 2
    assert all("--prefix" in c for c in calls if c[0] == "logs")
    predicate, _ = _report(p)
    (pair_error,) = [c for c in predicate["checks"] if c["name"] == "fabric.pair" and "k8s-a" in c["subject"]]
    assert "ran on k8s-a but printed a result for k8s-d" in pair_error["message"]
    (node,) = [c for c in predicate["checks"] if c["name"] == "fabric.node" and c["subject"] == "k8s-a"]
    assert (node["verdict"], node["code"]) == ("fail", "FABRIC_WORKER_LIED")
    # Nothing it said was taken for k8s-d: k8s-d's own pod is the only word on k8s-d.
    assert not any(r.get("node") == "k8s-d" for c in predicate["checks"] for r in c.get("evidence", {}).get("refused", []))


@pytest.mark.parametrize("separator", ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_a_pod_cannot_print_a_line_under_another_pods_prefix(separator, tmp_path):
    """kubectl puts a pod's prefix after each \n it printed, and after nothing else: a line break of
    another kind (the 2026-11-28 hostile-node audit) must not start a line read as another pod's."""
    forged = '{"nodeqc-fabric-worker":1,"node":"victim","index":1,"figures":[]}'
    own = '{"nodeqc-fabric-worker":1,"node":"victim","index":1,"figures":[1]}'
    printed = (f"[pod/round-0-aaaaa/worker] mine{separator}[pod/round-1-bbbbb/worker] {forged}\n"
               f"[pod/round-1-bbbbb/worker] {own}\n")
    logs, error = _logs_of(printed.encode(), tmp_path)
    assert error is None
    assert {pod: logs.text(pod) for pod in logs} == {"round-0-aaaaa": f"mine{separator}[pod/round-1-bbbbb/worker] {forged}",
                                                     "round-1-bbbbb": own}


def _logs_of(printed: bytes | Path, tmp_path, pods: int = 2):
    """KubernetesLauncher._logs over what a kubectl printed (or a file of it, copied a MiB at a time)."""
    launcher = KubernetesLauncher("nodeqc:test")

    def call_into(out, *args, **kwargs):
        if isinstance(printed, Path):
            with printed.open("rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)
        else:
            out.write(printed)
        return subprocess.CompletedProcess(args, 0, None, "")
    launcher._call_into = call_into
    spool = (tmp_path / "spool").open("w+b")
    return launcher._logs("round", pods, spool)


def test_what_the_pods_print_is_never_held_whole(tmp_path):
    """kubectl bounds each pod's log (16 MiB), not the round's: 2,048 pods could print 32 GiB, all
    of which the launcher held in memory (the 2026-11-28 audit's note). Here three pods print 48 MiB:
    one 16 MiB of chatter before its result, one 16 MiB of lines that each start a result, one a
    single 16 MiB line; an honest pod's result sits among them. Each pod's result is read as before,
    the rest counted or named unreadable, and no more than a few MiB is ever held."""
    import tracemalloc

    from nodeqc.fabric.lines import MAX_LINE_CHARS, MAX_RESULTS_READ, scan

    def line(pod, text):
        return f"[pod/{pod}/worker] {text}\n".encode()

    result = '{{"nodeqc-fabric-worker":1,"node":"{}","index":0,"figures":[]}}'
    chatter = b"".join(line("round-0-aaaaa", "x" * 1000) for _ in range(16 * 1024))
    starts = b"".join(line("round-2-ccccc", result.format("k8s-c") + " " * 900) for _ in range(16 * 1024))
    printed = (chatter + line("round-0-aaaaa", result.format("k8s-a")) + line("round-1-bbbbb", result.format("k8s-b"))
               + starts + line("round-3-ddddd", result.format("k8s-d")[:-1] + " " * (16 << 20) + "}"))
    assert len(printed) > 47 << 20
    (tmp_path / "printed").write_bytes(printed)
    del printed, chatter, starts
    tracemalloc.start()
    try:
        logs, error = _logs_of(tmp_path / "printed", tmp_path, pods=4)
        read = {pod: (scan(logs.text(pod)), logs.unread(pod)) for pod in logs}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error is None
    assert peak < 4 * (MAX_LINE_CHARS + 1) * 4, peak  # a pod's few lines at a time, not the round's 48 MiB
    assert read["round-0-aaaaa"] == (([json.loads(result.format("k8s-a"))], []), [])
    assert read["round-1-bbbbb"] == (([json.loads(result.format("k8s-b"))], []), [])
    (found, unreadable), unread = read["round-2-ccccc"]
    assert len(found) == MAX_RESULTS_READ and unreadable == ["1 more results after the first 64, not read: a worker prints one"]
    assert unread == [f"{16 * 1024 - MAX_RESULTS_READ - 1} more lines with a result, not read: a worker prints one"]
    (found, unreadable), unread = read["round-3-ddddd"]
    assert found == [] and unreadable[0].startswith(f"longer than {MAX_LINE_CHARS} characters") and unread == []


@pytest.mark.parametrize("env,path,message", [
    ({}, "EMPTY", "--k8s: kubectl not found: install kubectl"),
    ({"FAKE_K8S_DOWN": "1"}, None, "--k8s: kubectl cannot reach a cluster: The connection to the server localhost:8080"),
    ({"FAKE_K8S_CAN": "no"}, None, "--k8s: may not create Jobs in namespace nodeqc: no"),
])
def test_no_kubectl_no_cluster_no_right_exit_2_in_one_line(k8s, tmp_path, env, path, message):
    if path == "EMPTY":
        (tmp_path / "empty").mkdir()
        path = str(tmp_path / "empty")
    p, _, jobs = k8s(env=env, path=path)
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1].startswith(f"nodeqc: {message}"), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and jobs == {}


def test_a_node_the_cluster_does_not_have(k8s):
    p, _, _ = k8s(nodes=["k8s-a", "k8s-b"], env={"FAKE_K8S_NODES": "k8s-a"})
    assert p.returncode == 2 and "--k8s: k8s-b: not a node of this cluster" in p.stderr


def test_k8s_needs_an_image(tmp_path):
    from conftest import cli

    p = cli("fabric", "--k8s", "a,b", "--out", str(tmp_path))
    assert p.returncode == 2 and "--k8s needs --image IMAGE" in p.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl here")
def test_the_real_kubectl_without_a_cluster(tmp_path):
    # The real client, pointed at no cluster (an empty kubeconfig): it tries localhost:8080 and is refused.
    (tmp_path / "kubeconfig").write_text("")
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "kubeconfig"), "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "nodeqc", "fabric", "--k8s", "a,b", "--image", "nodeqc:test",
                        "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("nodeqc: --k8s: kubectl cannot reach a cluster: ") and "refused" in line


def test_the_packaged_manifest_is_what_the_launcher_renders():
    """packaging/k8s/fabric-round.yaml (for people and reviews) and the launcher's manifest agree."""
    text = (ROOT / "packaging" / "k8s" / "fabric-round.yaml").read_text()
    (packaged,) = list(yaml.safe_load_all(text))
    work = Work(["tcp", "rdma"], 10, Floors(), nodeqc=["nodeqc"])
    rendered = round_manifest("nodeqc-fabric-0a1b2c-r1", "nodeqc", "registry/nodeqc:0.1.0",
                              (("gpu-17", "gpu-42"), ("gpu-03", "gpu-11")), work,
                              {"gpu-17": "10.1.0.17", "gpu-42": "10.1.0.42", "gpu-03": "10.1.0.3", "gpu-11": "10.1.0.11"},
                              deadline_s=900)

    def shape(x):
        """Keys and fixed values; what varies per round (names, nodes, command) as its type."""
        if isinstance(x, dict):
            return {k: shape(v) for k, v in x.items()}
        if isinstance(x, list):
            return [shape(v) for v in x] if x and isinstance(x[0], dict) else "list"
        return x

    for key in ("name",):
        packaged["metadata"][key] = rendered["metadata"][key]
    packaged["metadata"]["labels"][LABEL] = rendered["metadata"]["labels"][LABEL]
    packaged["spec"]["template"]["metadata"]["labels"][LABEL] = rendered["metadata"]["labels"][LABEL]
    anti = packaged["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchLabels"][LABEL] = \
        rendered["metadata"]["name"]
    packaged["spec"]["template"]["spec"]["containers"][0]["image"] = "registry/nodeqc:0.1.0"
    _check_manifest(rendered, [("gpu-17", "gpu-42"), ("gpu-03", "gpu-11")])
    assert shape(packaged) == shape(rendered)


@pytest.mark.netns
def test_the_throttled_node_is_named_through_kubernetes(k8s):
    from netns import Fabric, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with Fabric(4) as fabric:
        fabric.throttle(1, "100mbit")
        addresses = [a for n, addr in fabric.addresses.items() for a in ("--address", f"{n}={addr}")]
        p, _, _ = k8s(*addresses, "--min-tcp-gbps", "0.5", "--rounds", "3", "--seed", "4", nodes=fabric.nodes,
                      env={"FAKE_NETNS": "1"})
    assert p.returncode == 1, p.stderr
    assert f"FAIL  fabric.node {fabric.nodes[1]}" in p.stderr


def test_group_tests_run_as_one_indexed_job_a_round_and_name_the_node_with_wrong_results(k8s):
    # `--group-size 4` over fake CuPy: each group round is one Job whose pods find their group and end
    # from their node (--groups); k8s-c's ranks return wrong results wherever they sit.
    fake = Path(__file__).resolve().parent / "fake_cupy"
    env = {"PYTHONPATH": os.pathsep.join([str(fake), str(ROOT)]), "FAKE_CUPY_GPUS": "1",
           "FAKE_NCCL_FAULT": "corrupt-recv:@k8s-c"}
    p, calls, jobs = k8s("--group-size", "4", "--min-nccl-busbw", "0.000001", "--nccl-bytes", "4096", "--seconds", "0.01",
                         "--seed", "3", tests="nccl", env=env)
    assert p.returncode == 1, p.stderr
    assert "FAIL  fabric.group k8s-c: failed with known-good partner" in p.stderr
    assert sorted(jobs) == sorted(j for j in jobs if "-g" in j) and len(jobs) == 3  # the group, its halves, confirmations
    for m in jobs.values():
        cmd = m["spec"]["template"]["spec"]["containers"][0]["command"]
        assert cmd[cmd.index("worker") + 1] == "--groups"
    predicate, _ = _report(p)
    assert {n["name"]: n["verdict"] for n in predicate["nodes"]} == {"k8s-a": "pass", "k8s-b": "pass", "k8s-c": "fail",
                                                                     "k8s-d": "pass"}


def test_kubectl_json_of_unexpected_shapes_is_read_as_far_as_it_goes_never_a_traceback(tmp_path):
    """2026-11-29 fuzzing: a pod whose metadata is null, or a node address that is a string,
    raised AttributeError out of the launcher."""
    from nodeqc.core.errors import UsageError
    from nodeqc.fabric.kubernetes import KubernetesLauncher

    fake = tmp_path / "kubectl"
    fake.write_text("#!/bin/sh\ncase \"$1 $2\" in\n"
                    "  \"get pods\") echo '{\"items\": [{\"metadata\": null}, \"pod\", {\"status\": {\"conditions\": [1],"
                    " \"containerStatuses\": [{\"state\": {\"waiting\": null}}]}, \"spec\": {\"nodeName\": \"n1\"}}]}';;\n"
                    "  \"get nodes\") echo '{\"items\": [{\"metadata\": {\"name\": \"n1\"}, \"status\": {\"addresses\": "
                    "[\"10.0.0.1\", {\"type\": \"InternalIP\", \"address\": \"10.0.0.2\"}]}}, \"node\"]}';;\n"
                    "  \"auth can-i\") echo yes;;\nesac\n")
    fake.chmod(0o755)
    k = KubernetesLauncher("img", kubectl=str(fake))
    pods = k._pods("j")
    assert pods["n1"]["phase"] is None and set(pods) == {"n1", "unscheduled:None"}
    with pytest.raises(UsageError, match="kubectl get nodes gave node"):  # "node": no name, refused as such
        k.preflight(["n1"], {})
