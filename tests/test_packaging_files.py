"""The packaging files that cannot run here whole: the .desktop file (desktop-file-validate), the
container file (no container engine here: parsed, its base image and COPY sources checked), the
Kubernetes Job (parsed, pinned, tolerating the taint its gate removes), and the Job's node gate,
run against a fake Kubernetes API on the loopback address."""

import io
import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from conftest import ROOT
from nodeqc.cli.main import COMMANDS

PACKAGING = ROOT / "packaging"


def test_desktop_file_is_valid_and_runs_a_real_command():
    desktop = PACKAGING / "linux" / "nodeqc.desktop"
    exec_line = next(line for line in desktop.read_text().splitlines() if line.startswith("Exec="))
    assert exec_line == "Exec=nodeqc gui" and "gui" in COMMANDS
    assert (PACKAGING / "linux" / "nodeqc.svg").is_file()
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate is not installed (apt-get install desktop-file-utils)")
    p = subprocess.run([tool, str(desktop)], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stdout + p.stderr


def test_container_file_parses_and_copies_what_exists():
    parser = DockerfileParser(fileobj=io.BytesIO((PACKAGING / "container" / "Containerfile").read_bytes()))
    instructions = [(i["instruction"], i["value"]) for i in parser.structure]
    args = {v.split("=", 1)[0]: v.split("=", 1)[1] for k, v in instructions if k == "ARG" and "=" in v}
    # NVIDIA's CUDA *runtime* image (not devel: no compiler needed; not base: CuPy wants the runtime libraries).
    assert args["CUDA_IMAGE"] == "nvidia/cuda:12.8.1-runtime-ubuntu24.04" and args["EXTRA"] == "cuda12"
    assert ("FROM", "${CUDA_IMAGE}") in instructions
    for kind, value in instructions:
        if kind == "COPY":
            *sources, _ = value.split()
            for src in sources:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
    assert json.loads(dict(instructions)["ENTRYPOINT"]) == ["nodeqc", "--headless"]
    # The tools of the NIC checks and of the fabric's pair tests (nodeqc fabric --k8s runs this image).
    installs = " ".join(v for k, v in instructions if k == "RUN" and "apt-get install" in v).split()
    assert {"iperf3", "perftest", "iproute2"} <= set(installs)
    assert "cuda12" in (ROOT / "pyproject.toml").read_text() and "cuda13" in (ROOT / "pyproject.toml").read_text()


def test_kubernetes_job_is_pinned_and_tolerates_the_taint_it_removes():
    text = (PACKAGING / "k8s" / "job.yaml").read_text()
    filled = text.replace("${NODE}", "gpu-node-17").replace("${IMAGE}", "nodeqc:0.1.0").replace("${PROFILE}", "h100")
    assert "${" not in filled.replace("$NODE_NAME", "").replace('"$PROFILE"', "")
    (job,) = list(yaml.safe_load_all(filled))
    spec = job["spec"]["template"]["spec"]
    assert job["kind"] == "Job" and job["spec"]["backoffLimit"] == 0
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-17"}
    assert {"key": "nodeqc.dev/unqualified", "operator": "Exists"} in spec["tolerations"]
    script = spec["containers"][0]["args"][0]
    assert "nodeqc --headless" in script and 'nodeqc-node-gate "$NODE_NAME" "$rc"' in script
    rbac = list(yaml.safe_load_all((PACKAGING / "k8s" / "rbac.yaml").read_text()))
    role = next(d for d in rbac if d["kind"] == "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    assert spec["serviceAccountName"] == next(d for d in rbac if d["kind"] == "ServiceAccount")["metadata"]["name"]
    containerfile = (PACKAGING / "container" / "Containerfile").read_text()
    assert "packaging/k8s/node_gate.py /opt/nodeqc/bin/nodeqc-node-gate" in containerfile


def _gate_policy_allows(request_node: str | None, old: dict, new: dict, user="system:serviceaccount:nodeqc:nodeqc"):
    """What the packaged ValidatingAdmissionPolicy answers to the gate's UPDATE of a node: each of its
    CEL validations evaluated as the API server does (cel-python), or True where it does not match."""
    import celpy  # the test extra (pyproject): never skipped for want of it
    docs = list(yaml.safe_load_all((PACKAGING / "k8s" / "rbac.yaml").read_text()))
    (policy,) = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    extra = {} if request_node is None else {"authentication.kubernetes.io/node-name": [request_node]}
    env = celpy.Environment()
    act = {"request": celpy.json_to_cel({"userInfo": {"username": user, "extra": extra}}),
           "object": celpy.json_to_cel(new), "oldObject": celpy.json_to_cel(old)}
    run = lambda expression: bool(env.program(env.compile(expression)).evaluate(act))  # noqa: E731
    if not all(run(c["expression"]) for c in policy["spec"]["matchConditions"]):
        return True
    return [v["message"] for v in policy["spec"]["validations"] if not run(v["expression"])] or True


def _node(name="gpu-17", labels=None, taints=None, unschedulable=False, annotations=None):
    node = {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0", **(annotations or {})}},
            "spec": {"taints": [{"key": "nodeqc.dev/unqualified", "effect": "NoSchedule"}, *(taints or [])]}}
    if unschedulable:
        node["spec"]["unschedulable"] = True
    return node


def test_the_gate_may_change_only_its_own_node_and_only_nodeqcs_marks_there():
    """RBAC gives the gate's account `patch nodes` on every node, and the node under test holds its
    token: it could mark every other node passed (the 2026-11-28 hostile-node audit). The packaged
    policy holds it to its own node (its token's node name) and to nodeqc's label, annotations and
    taint; the gate's own patch passes it."""
    old = _node(taints=[{"key": "gpu.example/broken", "effect": "NoSchedule"}])
    passed = _node(labels={"nodeqc.dev/qualification": "passed", "nodeqc.dev/valid-until": "2027-01-01"},
                   annotations={"nodeqc.dev/report": "/var/lib/nodeqc/r.json"},
                   taints=[{"key": "gpu.example/broken", "effect": "NoSchedule"}])
    passed["spec"]["taints"] = passed["spec"]["taints"][1:]  # the gate removed its own taint
    assert _gate_policy_allows("gpu-17", old, passed) is True
    assert _gate_policy_allows("gpu-17", _node(), {**_node(), "spec": {}}) is True  # its taint, the last one
    other = _node("gpu-18")
    marked = _node("gpu-18", labels={"nodeqc.dev/qualification": "passed"})
    assert _gate_policy_allows("gpu-17", other, marked) == ["the nodeqc gate may change only the node its own pod runs on"]
    assert _gate_policy_allows(None, other, marked)[0].startswith("the nodeqc gate may change only the node")
    assert _gate_policy_allows("gpu-17", old, _node()) == [  # another's taint removed
        "the nodeqc gate may add or remove only its own taint (nodeqc.dev/unqualified)"]
    assert _gate_policy_allows("gpu-17", _node(), _node(labels={"node-role.kubernetes.io/worker": ""})) == [
        "the nodeqc gate may change only its own labels (nodeqc.dev/...)"]
    removed = _node()
    del removed["metadata"]["labels"]["kubernetes.io/hostname"]
    assert _gate_policy_allows("gpu-17", _node(), removed) == ["the nodeqc gate may change only its own labels (nodeqc.dev/...)"]
    assert _gate_policy_allows("gpu-17", _node(), _node(annotations={"x.io/y": "1"})) == [
        "the nodeqc gate may change only its own annotations (nodeqc.dev/...)"]
    assert _gate_policy_allows("gpu-17", _node(), _node(unschedulable=True)) == [
        "the nodeqc gate may not cordon or uncordon a node"]
    # Anyone else's update is not this policy's to judge.
    assert _gate_policy_allows(None, other, marked, user="system:admin") is True


class FakeApi(BaseHTTPRequestHandler):
    """GET and merge-PATCH of one node, with resourceVersion conflicts as the API server has them."""

    node: dict = {}
    calls: list = []
    conflicts = 0

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        FakeApi.calls.append(("GET", self.path, None, self.headers["Authorization"]))
        self._send(200, FakeApi.node)

    def do_PATCH(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeApi.calls.append(("PATCH", self.path, body, self.headers["Content-Type"]))
        meta = FakeApi.node["metadata"]
        if FakeApi.conflicts:
            FakeApi.conflicts -= 1
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)  # someone else wrote meanwhile
            FakeApi.node["spec"]["taints"].append({"key": "other.io/late", "effect": "NoSchedule"})
        rv = body.get("metadata", {}).get("resourceVersion")
        if rv is not None and rv != meta["resourceVersion"]:
            return self._send(409, {"kind": "Status", "reason": "Conflict"})
        for k, v in body["metadata"].get("labels", {}).items():
            meta.setdefault("labels", {})[k] = v
        for k, v in body["metadata"].get("annotations", {}).items():
            meta.setdefault("annotations", {})[k] = v
        if "spec" in body:
            FakeApi.node["spec"]["taints"] = body["spec"]["taints"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self._send(200, FakeApi.node)

    def log_message(self, *args):
        pass


@pytest.fixture
def api(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), FakeApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = tmp_path / "token"
    token.write_text("sa-token\n")
    FakeApi.node = {"metadata": {"name": "gpu-node-17", "resourceVersion": "100", "labels": {}},
                    "spec": {"taints": [{"key": "nodeqc.dev/unqualified", "value": "true", "effect": "NoSchedule"},
                                        {"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}
    FakeApi.calls, FakeApi.conflicts = [], 0

    def gate(*args):
        env = {"NODEQC_K8S_API": f"http://127.0.0.1:{server.server_port}", "NODEQC_K8S_TOKEN_FILE": str(token),
               "PATH": "/usr/bin:/bin"}
        return subprocess.run([sys.executable, str(PACKAGING / "k8s" / "node_gate.py"), *args], env=env,
                              capture_output=True, text=True, timeout=60)

    yield gate
    server.shutdown()


def test_node_gate_pass_removes_only_the_startup_taint(api):
    FakeApi.conflicts = 1  # the first write races another controller: read again, keep its taint
    p = api("gpu-node-17", "0", "/var/lib/nodeqc/reports/SN1/x.report.json")
    assert p.returncode == 0, p.stderr
    assert [t["key"] for t in FakeApi.node["spec"]["taints"]] == ["nvidia.com/gpu", "other.io/late"]
    meta = FakeApi.node["metadata"]
    assert meta["labels"]["nodeqc.dev/qualification"] == "passed"
    assert meta["annotations"]["nodeqc.dev/report"] == "/var/lib/nodeqc/reports/SN1/x.report.json"
    assert [c[0] for c in FakeApi.calls] == ["GET", "PATCH", "GET", "PATCH"]
    assert FakeApi.calls[0][3] == "Bearer sa-token" and FakeApi.calls[1][3] == "application/merge-patch+json"
    assert all(c[1] == "/api/v1/nodes/gpu-node-17" for c in FakeApi.calls)


@pytest.mark.parametrize("code, label", [("1", "failed"), ("2", "error")])
def test_node_gate_fail_keeps_the_taint_and_labels_the_node(api, code, label):
    p = api("gpu-node-17", code, "/r.report.json")
    assert p.returncode == 0, p.stderr
    assert [t["key"] for t in FakeApi.node["spec"]["taints"]] == ["nodeqc.dev/unqualified", "nvidia.com/gpu"]
    assert FakeApi.node["metadata"]["labels"]["nodeqc.dev/qualification"] == label
    assert all("spec" not in (c[2] or {}) for c in FakeApi.calls)


def test_node_gate_reports_an_api_it_cannot_reach(tmp_path):
    token = tmp_path / "token"
    token.write_text("t")
    p = subprocess.run([sys.executable, str(PACKAGING / "k8s" / "node_gate.py"), "n1", "0"],
                       env={"NODEQC_K8S_API": "http://127.0.0.1:9", "NODEQC_K8S_TOKEN_FILE": str(token)},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "n1: cannot update the node" in p.stderr and "Traceback" not in p.stderr
