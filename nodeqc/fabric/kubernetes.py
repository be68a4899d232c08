"""Kubernetes as the fabric's engine: each round's pair work is one Indexed Job, run with `kubectl`.

A round of P pairs is one Job (`completionMode: Indexed`, completions = parallelism = 2P): one pod
per node of the round (node affinity to exactly those nodes, pod anti-affinity on the host name, so
no node gets two), host network and the RDMA devices, running `nodeqc fabric worker --pairs ...`.
The scheduler places the pods, so a pod finds its pair and its end from the node it landed on
(NODEQC_NODE, from spec.nodeName). The launcher reads every pod's log with its pod's name
(`kubectl logs --prefix`) and binds each line to the node the API server says that pod ran on,
never to the node the line names (nodeqc.fabric.lines): a pod that prints another node's result
is refused and named. An index that gave none is named by its index, pod and node.

Per round: `kubectl apply -f MANIFEST`, `kubectl wait` for the Job's Complete or Failed condition
(bounded by the round's timeout plus the pods' start), then `kubectl get pods` (each index's pod,
node and state) and `kubectl logs` (the result lines). `backoffLimitPerIndex: 0`: a pod that fails
is not retried (half a pair alone measures nothing) and does not stop the other pairs (Kubernetes
1.29 or later). Results are merged, scored, journaled and reported as for srun steps.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import tempfile
import time
from typing import IO, Any

from nodeqc.core.errors import UsageError, shown
from nodeqc.core.names import check_host, host_problem
from nodeqc.fabric.groups import shared_domain
from nodeqc.fabric.launchers import OUTPUT_BYTES, Launcher, Work, merge, merge_group
from nodeqc.fabric.lines import Refused, bind, scan
from nodeqc.fabric.nccl_group import COLLECTIVES
from nodeqc.fabric.pairing import Round
from nodeqc.fabric.pod_logs import PodLogs
from nodeqc.fabric.scoring import GroupResult, PairResult

LABEL = "nodeqc.dev/fabric-round"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
START_S = 300  # scheduling and the image pull, on top of the round's own bound (a cold node pulls GBs)
KUBECTL_S = 60  # one kubectl call that is not a wait
WAIT_RESTARTS = 3  # a `kubectl wait` that errs early is started again this often in a round, at most
WAIT_SLACK_S = 5  # ... unless its timeout is this close: then it timed out, as asked
INSTALL = ("install kubectl (https://kubernetes.io/docs/tasks/tools/; Debian: apt-get install kubernetes-client) "
           "and point it at the cluster (KUBECONFIG)")


def round_manifest(job: str, namespace: str, image: str, pairs: tuple[tuple[str, str], ...], work: Work,
                   addresses: dict[str, str], deadline_s: int, gpus: int | None = None) -> dict[str, Any]:
    """The Indexed Job of one round (kubectl takes JSON as it takes YAML). gpus: what a pod asks of
    the NVIDIA device plugin for the NCCL test (every GPU of its node: the profile's [gpu] count)."""
    nodes = [n for pair in pairs for n in pair]
    command = [*work.nodeqc, *work.plan_args(pairs, addresses)]
    container: dict[str, Any] = {
        "name": "worker", "image": image, "command": command,
        "env": [{"name": "NODEQC_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                # Set by Kubernetes itself since 1.22; spelled out so the manifest says where it comes from.
                {"name": "JOB_COMPLETION_INDEX",
                 "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}}}],
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},  # RDMA pins memory
    }
    if "rdma" in work.tests:  # the RDMA shared device plugin's resource (NVIDIA Network Operator)
        container["resources"] = {"limits": {"rdma/hca_shared_devices_a": 1}}
    if set(work.tests) & set(COLLECTIVES) and gpus:  # without GPUs the worker skips NCCL, saying so
        container.setdefault("resources", {}).setdefault("limits", {})["nvidia.com/gpu"] = gpus
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job, "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "nodeqc-fabric", LABEL: job}},
        "spec": {
            "completionMode": "Indexed",  # one index per node of the round
            "completions": len(nodes),
            "parallelism": len(nodes),  # every end at once: a pair test needs its server and its client
            "backoffLimitPerIndex": 0,  # a failed pod is evidence, not something to retry, and stops no other
            "activeDeadlineSeconds": deadline_s,
            "ttlSecondsAfterFinished": 86400,  # a day to read the pods' logs by hand
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "nodeqc-fabric", LABEL: job}},
                "spec": {
                    "restartPolicy": "Never",
                    "hostNetwork": True,  # the nodes' own addresses and RDMA devices
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "affinity": {
                        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                   "values": nodes}]}]}},
                        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [  # one pod a node
                            {"labelSelector": {"matchLabels": {LABEL: job}}, "topologyKey": "kubernetes.io/hostname"}]},
                    },
                    "tolerations": [{"key": "nodeqc.dev/unqualified", "operator": "Exists"}],
                    "containers": [container],
                },
            },
        },
    }


class KubernetesLauncher(Launcher):
    """One Indexed Job per round (of pairs, or of group tests), through kubectl (see the module's docstring)."""

    name = "kubernetes"
    def __init__(self, image: str, namespace: str = "nodeqc", kubectl: str = "kubectl"):
        self.image = image
        self.namespace = namespace
        self.kubectl = kubectl
        self.run_id = secrets.token_hex(3)  # Jobs of this run: nodeqc-fabric-<run_id>-r<round> (g<round>: groups)
        self.addresses: dict[str, str] = {}
        self.gpus: int | None = None  # per pod, for the NCCL test
        self._waits: list[subprocess.Popen[bytes]] = []
        self._aborted = False
        self._job: str | None = None

    # ------------------------------------------------------------------ before the first round

    def _call(self, *args: str, timeout: float = KUBECTL_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.kubectl, *args], capture_output=True, text=True, errors="replace", timeout=timeout)

    def _call_into(self, out: IO[bytes], *args: str, timeout: float = KUBECTL_S) -> subprocess.CompletedProcess[str]:
        """kubectl with its output written to `out` (its errors kept)."""
        return subprocess.run([self.kubectl, *args], stdout=out, stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout)

    def preflight(self, nodes: list[str], given: dict[str, str], gpus: int | None = None) -> None:
        """kubectl is there, the cluster answers, every node is in it, Jobs may be created; each
        node's data address is its InternalIP unless --address gives one. A usage error otherwise."""
        self.gpus = gpus
        try:
            done = self._call("get", "nodes", "-o", "json")
        except FileNotFoundError:
            raise UsageError(f"--k8s: {self.kubectl} not found: {INSTALL}") from None
        except subprocess.TimeoutExpired:
            raise UsageError(f"--k8s: kubectl get nodes did not answer within {KUBECTL_S} s: is the cluster up?") from None
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise UsageError(f"--k8s: kubectl cannot reach a cluster: {why}")
        try:
            items = json.loads(done.stdout)["items"]
        except (ValueError, KeyError, TypeError, RecursionError):
            raise UsageError("--k8s: kubectl get nodes -o json did not answer JSON") from None
        known: dict[str, str | None] = {}
        for item in _list(items):
            name = _obj(_obj(item).get("metadata")).get("name")
            # Kubernetes allows only DNS names for nodes: any other is not a cluster's answer to trust.
            check_host(name, "--k8s: kubectl get nodes gave node")
            ips = [a.get("address") for a in map(_obj, _list(_obj(item.get("status")).get("addresses")))
                   if a.get("type") == "InternalIP" and isinstance(a.get("address"), str)]
            known[name] = ips[0] if ips else None
        missing = [n for n in nodes if n not in known]
        if missing:
            raise UsageError(f"--k8s: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}: "
                             "not a node of this cluster (kubectl get nodes)")
        no_ip = [n for n in nodes if n not in given and not known[n]]
        if no_ip:
            raise UsageError(f"--k8s: {no_ip[0]} has no InternalIP: give its data address with --address {no_ip[0]}=ADDR")
        self.addresses = {n: given.get(n) or str(known[n]) for n in nodes}
        try:
            can = self._call("auth", "can-i", "create", "jobs.batch", "--namespace", self.namespace)
        except subprocess.TimeoutExpired:
            raise UsageError(f"--k8s: kubectl auth can-i did not answer within {KUBECTL_S} s") from None
        if can.stdout.strip() != "yes":
            why = can.stderr.strip().splitlines()[-1] if can.stderr.strip() else can.stdout.strip() or "no"
            raise UsageError(f"--k8s: may not create Jobs in namespace {self.namespace}: {why} "
                             "(packaging/k8s/rbac.yaml grants it)")

    # ------------------------------------------------------------------ a round

    def abort(self) -> None:
        self._aborted = True
        for p in list(self._waits):
            if p.poll() is None:
                p.kill()

    def run_round(self, rnd: Round, work: Work) -> list[PairResult]:
        got = self._run(rnd.number, rnd.pairs, work)
        return [merge(rnd.number, a, b, outputs, errors, work.floors, refused, work.tests)
                for (a, b), (outputs, errors, refused) in zip(rnd.pairs, got)]

    def run_groups(self, number: int, groups: list[tuple[str, ...]], work: Work) -> list[GroupResult]:
        got = self._run(number, tuple(groups), work, "g")
        return [merge_group(number, g, outputs, errors, work.floors, refused, work.tests, shared_domain(g, work.nvlink))
                for g, (outputs, errors, refused) in zip(groups, got)]

    def _run(self, number: int, units: tuple[tuple[str, ...], ...], work: Work,
             kind: str = "r") -> list[tuple[list[dict[str, Any]], list[str], list[Refused]]]:
        """One Indexed Job for a round of pairs (or of group tests, kind "g"): for each pair or group,
        (the outputs bound to their ends, why each silent end said nothing, what was refused)."""
        job = f"nodeqc-fabric-{self.run_id}-{kind}{number}"
        self._job = job
        deadline_s = int(work.round_timeout_s + START_S)
        manifest = round_manifest(job, self.namespace, self.image, units, work, self.addresses, deadline_s,
                                  self.gpus)
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix=f"{job}-") as f:
            json.dump(manifest, f)
            f.flush()
            try:
                applied = self._call("apply", "-f", f.name)
                failure = None if applied.returncode == 0 else (
                    applied.stderr.strip().splitlines() or [f"exit {applied.returncode}"])[-1]
            except (OSError, subprocess.TimeoutExpired) as e:
                failure = str(e)
        if failure is not None:
            return [([], [f"kubectl apply of Job {job}: {failure}"], []) for _ in units]
        finished = self._wait(job, deadline_s)
        pods = self._pods(job)
        with tempfile.TemporaryFile() as spool:
            logs, log_error = self._logs(job, manifest["spec"]["completions"], spool)
            if not finished or self._aborted:
                self._delete(job)  # stop what still runs or waits for a node
            return self._bind(units, pods, logs, finished, log_error)

    def _bind(self, units: tuple[tuple[str, ...], ...], pods: dict[str, dict[str, Any]], logs: PodLogs, finished: bool,
              log_error: str | None) -> list[tuple[list[dict[str, Any]], list[str], list[Refused]]]:
        """Each unit's outputs bound to their ends, the errors of ends that gave none, and what was refused."""
        # Each pod's lines are its node's (kubectl logs --prefix names the pod of every line; the API
        # server, not the worker, says where the pod ran): whatever node a line names, it is bound to
        # the pod's node, and a line for another node is refused naming the pod's node (lines.bind).
        where = {p["pod"]: node for node, p in pods.items() if not node.startswith(("unscheduled:", "invalid:"))}
        end_of = {n: (slot, i) for slot, unit in enumerate(units) for i, n in enumerate(unit)}
        got: list[tuple[list[dict[str, Any]], list[str], list[Refused]]] = [([], [], []) for _ in units]
        for pod in logs:
            node = where.get(pod)
            if node not in end_of:
                continue  # not a pod of this round's nodes (it ran nowhere, or on an invalid node name)
            slot, end = end_of[node]
            found, unreadable = scan(logs.text(pod))
            unreadable += logs.unread(pod)
            mine, bad = bind(node, end, found, unreadable, f"index {pods[node]['index']} (pod {pod})")
            got[slot][2].extend(bad)
            if mine is not None:
                got[slot][0].append(mine)
        for slot, unit in enumerate(units):
            said = {o["node"] for o in got[slot][0]}
            got[slot][1].extend(self._why_not(n, pods, finished, log_error) for n in unit if n not in said)
        return got

    def _wait(self, job: str, deadline_s: int) -> bool:
        """`kubectl wait` for the Job's Complete and, at once, its Failed condition (one index that
        failed makes the Job Failed once every index has finished): whichever comes first. A wait
        that errs well before its timeout (the API server blinked, a watch was cut) is started again
        for the time left, a few times at most: otherwise a Job that completes would be seen only
        when the other condition's wait timed out, minutes later."""
        give_up = time.monotonic() + deadline_s + KUBECTL_S
        ends = time.monotonic() + deadline_s
        conditions = ("complete", "failed")

        def start(condition: str) -> subprocess.Popen[bytes]:
            left = max(1, int(ends - time.monotonic()))
            return subprocess.Popen([self.kubectl, "wait", f"--for=condition={condition}", f"job/{job}",
                                     "--namespace", self.namespace, f"--timeout={left}s"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        restarts = WAIT_RESTARTS
        try:
            self._waits = [start(c) for c in conditions]
            while time.monotonic() < give_up and not self._aborted:
                codes = [p.poll() for p in self._waits]
                if 0 in codes:
                    return True
                for i, code in enumerate(codes):
                    if code is not None and restarts > 0 and ends - time.monotonic() > WAIT_SLACK_S:
                        restarts -= 1
                        self._waits[i] = start(conditions[i])
                        codes[i] = None
                if all(c is not None for c in codes):
                    return False  # both gave up (timed out, or the Job is gone)
                time.sleep(0.2)
            return False
        except OSError:
            return False
        finally:
            for p in self._waits:
                if p.poll() is None:
                    p.kill()
                p.wait()
            self._waits = []

    def _pods(self, job: str) -> dict[str, dict[str, Any]]:
        """node -> what its pod says of itself: index, pod name, phase, why it is not running."""
        try:
            done = self._call("get", "pods", "--namespace", self.namespace, "-l", f"{LABEL}={job}", "-o", "json")
            items = _obj(json.loads(done.stdout)).get("items", []) if done.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired, ValueError, RecursionError):
            items = []
        out: dict[str, dict[str, Any]] = {}
        for item in map(_obj, _list(items)):
            # Any shape is read as far as it is the API's (a null or a string where an object is
            # expected raised AttributeError out of the launcher, 2026-11-29 fuzzing).
            meta, spec, status = _obj(item.get("metadata")), _obj(item.get("spec")), _obj(item.get("status"))
            index = _obj(meta.get("annotations")).get(INDEX_ANNOTATION) or _obj(meta.get("labels")).get(INDEX_ANNOTATION)
            reasons = [str(c.get("message") or c.get("reason")) for c in map(_obj, _list(status.get("conditions")))
                       if c.get("status") == "False" and (c.get("message") or c.get("reason"))]
            for cs in map(_obj, _list(status.get("containerStatuses"))):
                state = _obj(cs.get("state"))
                for what in ("waiting", "terminated"):
                    said = _obj(state.get(what))
                    if what in state and said.get("reason") not in (None, "Completed"):
                        reasons.append(f"{said.get('reason')}" + (f" (exit {said['exitCode']})" if "exitCode" in said else ""))
            node = spec.get("nodeName")
            node = node if isinstance(node, str) or node is None else str(node)
            if node and host_problem(node) is not None:
                # Not a node name Kubernetes allows: its pod is not where any node of the round ran,
                # so no line of its pod is taken for one (run_round binds lines to a round's node only).
                reasons.append(f"its node name {shown(str(node))[:80]!r} is not a host name")
                node = f"invalid:{index}"
            entry = {"index": index, "pod": meta.get("name"), "phase": status.get("phase"), "why": "; ".join(reasons)}
            out[node or f"unscheduled:{index}"] = entry
        return out

    def _logs(self, job: str, pods: int, spool: IO[bytes]) -> tuple[PodLogs, str | None]:
        """What each pod of the Job printed (pod_logs.PodLogs), kubectl writing to `spool`: a round's
        logs are the nodes' choice, up to kubectl's limit a pod, and never held whole in memory."""
        try:
            done = self._call_into(spool, "logs", "--namespace", self.namespace, "-l", f"{LABEL}={job}", "--tail=-1",
                                   "--prefix", f"--limit-bytes={OUTPUT_BYTES}",  # a pod's log, as an end's output
                                   f"--max-log-requests={max(5, min(pods, 64))}", timeout=KUBECTL_S + pods)
        except (OSError, subprocess.TimeoutExpired) as e:
            spool.truncate(0)
            return PodLogs(spool), f"kubectl logs: {e}"
        error = None if done.returncode == 0 else (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return PodLogs(spool), error

    def _why_not(self, node: str, pods: dict[str, dict[str, Any]], finished: bool, log_error: str | None) -> str:
        pod = pods.get(node)
        if pod is None:
            pending = [p for k, p in pods.items() if k.startswith(("unscheduled:", "invalid:"))]
            hint = f" ({pending[0]['why']})" if pending and pending[0]["why"] else ""
            return (f"no pod of Job {self._job} ran on {node}{hint}" if not self._aborted else "aborted")
        state = f"index {pod['index']}, pod {pod['pod']}: {pod['phase']}" + (f", {pod['why']}" if pod["why"] else "")
        if not finished:
            state += "; the Job did not finish within its deadline" if not self._aborted else "; aborted"
        if log_error:
            state += f"; kubectl logs: {log_error}"
        return state

    def _delete(self, job: str) -> None:
        try:
            self._call("delete", "job", job, "--namespace", self.namespace, "--cascade=foreground", "--wait=false")
        except (OSError, subprocess.TimeoutExpired):
            pass


def _obj(x: Any) -> dict[str, Any]:
    """An object of kubectl's JSON, or {} where it gave something else."""
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []
