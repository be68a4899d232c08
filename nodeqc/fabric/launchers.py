"""How a round's pair tests reach the nodes. Every pair of a round runs at once, so a fabric's wall
time grows with the number of rounds, not of nodes.

- `SlurmLauncher`: Slurm is the engine. One job step per pair, inside the job's allocation:
  `srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --nodelist=A,B --exclusive ... nodeqc
  fabric worker --pair A,B ...`; each task finds its end of the pair from SLURMD_NODENAME. No ssh.
- `HostLauncher`: a plain host list and a command prefix that runs a command on a host
  (`ip netns exec {host}` for network namespaces, `pdsh -w {host}`, a site's own wrapper); one
  process per end of each pair.
- `SimulatedLauncher`: the simulated cluster (no process, no packet).

Each end prints one JSON line; `merge` turns the two into the pair's result, with each figure's
floor from the slower end's rate.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from nodeqc.fabric import nccl_pair
from nodeqc.fabric.pairing import Round
from nodeqc.fabric.scoring import Floors, Measurement, PairResult
from nodeqc.fabric.simulated import SimulatedCluster
from nodeqc.fabric.worker import CONNECT_RETRY_S, MARGIN_S, MARKER, PORTS_PER_PAIR
from nodeqc.names import substitute


@dataclass
class Work:
    """What each pair runs."""

    tests: list[str]  # tcp, rdma, nccl
    seconds: float
    floors: Floors
    streams: int = 4
    port_base: int = 15201
    use_cuda: bool = False
    nodeqc: list[str] = field(default_factory=lambda: ["nodeqc"])  # the command that runs nodeqc on a node
    addresses: dict[str, str] = field(default_factory=dict)  # node -> data address (default: its name)
    nccl_bytes: int | None = None  # per GPU in the NCCL test (default: nccl_pair.BUFFER_BYTES)

    @property
    def round_timeout_s(self) -> float:
        """Every tool of a pair is bounded; a round is bounded by their sum."""
        per_test = {"tcp": 2 * (self.seconds + CONNECT_RETRY_S), "rdma": 2 * (self.seconds + CONNECT_RETRY_S),
                    "nccl": nccl_pair.time_bound_s(self.seconds)}
        return sum(per_test[t] for t in self.tests) + 2 * MARGIN_S + 60

    def worker_args(self, a: str, b: str, slot: int) -> list[str]:
        args = ["fabric", "worker", "--pair", f"{a},{b}", "--tests", ",".join(self.tests), "--seconds", f"{self.seconds:g}",
                "--streams", str(self.streams), "--port", str(self.port_base + slot * PORTS_PER_PAIR)]
        if self.addresses:
            args += ["--address", f"{self.addresses.get(a, a)},{self.addresses.get(b, b)}"]
        if self.use_cuda:
            args.append("--use-cuda")
        if self.nccl_bytes:
            args += ["--nccl-bytes", str(self.nccl_bytes)]
        return args

    def plan_args(self, pairs: tuple[tuple[str, str], ...], addresses: dict[str, str]) -> list[str]:
        """The worker's arguments for a whole round, when the node a worker lands on is chosen by a
        scheduler (Kubernetes): each worker finds its pair, its end and its ports from its node."""
        args = ["fabric", "worker", "--pairs", " ".join(f"{a},{b}" for a, b in pairs), "--tests", ",".join(self.tests),
                "--seconds", f"{self.seconds:g}", "--streams", str(self.streams), "--port", str(self.port_base)]
        known = {n: addresses[n] for pair in pairs for n in pair if n in addresses and addresses[n] != n}
        if known:
            args += ["--addresses", " ".join(f"{n}={addr}" for n, addr in known.items())]
        if self.use_cuda:
            args.append("--use-cuda")
        if self.nccl_bytes:
            args += ["--nccl-bytes", str(self.nccl_bytes)]
        return args


class Launcher:
    name = "?"

    def run_round(self, rnd: Round, work: Work) -> list[PairResult]:
        raise NotImplementedError

    def abort(self) -> None:
        """Stop what runs now (Ctrl-C, SIGTERM): the round returns at once."""


class SimulatedLauncher(Launcher):
    name = "simulated"

    def __init__(self, cluster: SimulatedCluster):
        self.cluster = cluster

    def run_round(self, rnd: Round, work: Work) -> list[PairResult]:
        return [self.cluster.run_pair(rnd.number, a, b, work.floors) for a, b in rnd.pairs]


class ProcessLauncher(Launcher):
    """Starts every process of a round at once, waits for all (bounded), reads each end's line."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        self._aborted = threading.Event()

    def commands(self, a: str, b: str, args: list[str], work: Work) -> list[list[str]]:
        raise NotImplementedError

    def abort(self) -> None:
        self._aborted.set()
        for p in list(self._procs):
            if p.poll() is None:
                p.kill()

    def run_round(self, rnd: Round, work: Work) -> list[PairResult]:
        started: list[tuple[int, subprocess.Popen[bytes] | None, IO[bytes], str | None, list[str]]] = []
        for slot, (a, b) in enumerate(rnd.pairs):
            for cmd in self.commands(a, b, work.worker_args(a, b, slot), work):
                out = tempfile.TemporaryFile()
                try:
                    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                    self._procs.append(proc)
                    started.append((slot, proc, out, None, cmd))
                except OSError as e:
                    started.append((slot, None, out, f"{cmd[0]} could not start: {e.strerror}", cmd))
        deadline = time.monotonic() + work.round_timeout_s
        for _, proc, _, _, _ in started:
            if proc is None:
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._procs = []
        by_slot: dict[int, list[tuple[dict[str, Any] | None, str]]] = {}
        for slot, proc, out, error, cmd in started:
            out.seek(0)
            text = out.read().decode("utf-8", errors="replace")
            out.close()
            found = worker_results(text)
            if error is None and not found:
                status = "killed (overran the round)" if proc is not None and proc.returncode in (-9, 137) else (
                    f"exit {proc.returncode}" if proc is not None else "not started")
                if self._aborted.is_set():
                    status = "aborted"
                tail = " | ".join(t.strip() for t in text.strip().splitlines()[-3:])
                error = f"`{shlex.join(cmd[:6])} ...` gave no result ({status}){': ' + tail if tail else ''}"
            by_slot.setdefault(slot, [])
            by_slot[slot] += [(x, "") for x in found] or [(None, error or "no output")]
        results = []
        for slot, (a, b) in enumerate(rnd.pairs):
            ends = by_slot.get(slot, [])
            outputs = [x for x, _ in ends if x is not None]
            errors = [e for x, e in ends if x is None]
            results.append(merge(rnd.number, a, b, outputs, errors, work.floors))
        return results


def worker_results(text: str) -> list[dict[str, Any]]:
    """Every worker result (a JSON object carrying MARKER) in what a step or log printed, wherever it
    sits: the two ends of a pair share one output, and a line of one end can land glued to the
    other's (a Python started with PYTHONUNBUFFERED=1 writes a line and its newline separately;
    a launcher or a log collector may prefix or join lines). Text around them is ignored."""
    decoder = json.JSONDecoder()
    found = []
    for start in _RESULT_START.finditer(text):
        try:
            data, _ = decoder.raw_decode(text, start.start())
        except json.JSONDecodeError:
            continue  # cut short (the end was killed mid-write): not a result
        if isinstance(data, dict) and data.get(MARKER) == 1:
            found.append(data)
    return found


_RESULT_START = re.compile(r'\{\s*"' + re.escape(MARKER) + '"')


def merge(round_no: int, a: str, b: str, outputs: list[dict[str, Any]], errors: list[str], floors: Floors) -> PairResult:
    """The pair's result from what its two ends printed. Rails are matched by identity (the HCA's
    name and port, worker.rail_id), as both ends name them; a rail active on one end only is a
    finding of its own (no counterpart on the peer), not a connection error and never a silent drop,
    and a rail whose two ports sit on different subnets is one too (cabled to another rail)."""
    ends = {o.get("node"): o for o in outputs}
    if set(ends) != {a, b}:
        missing = [n for n in (a, b) if n not in ends]
        why = "; ".join(errors) or "no output"
        return PairResult(round_no, a, b, error=f"{', '.join(missing)}: worker gave no result: {why}")
    rates: dict[tuple[str, str], float | None] = {}
    active: dict[str, dict[str, dict[str, Any]]] = {}  # node -> rail -> what the end said of it
    figures = []
    for node, o in ends.items():
        if isinstance(o.get("rails"), list):
            active[node] = {str(r.get("rail")): r for r in o["rails"] if isinstance(r, dict)}
            for rail, r in active[node].items():
                rates[(node, rail)] = r.get("rate")
        for f in o.get("figures", []):
            rail = str(f.get("rail"))
            rates.setdefault((node, rail), f.get("rate"))
            figures.append((node, rail, f))
    mismatched: dict[str, str] = {}
    if len(active) == 2:
        for node, peer in ((a, b), (b, a)):
            for rail in sorted(set(active[node]) - set(active[peer])):
                mismatched[rail] = (f"no counterpart on {peer}: {node} has {rail} active, {peer} has no active "
                                    f"port on that rail ({', '.join(sorted(active[peer])) or 'none'})")
        for rail in sorted(set(active[a]) & set(active[b])):
            sa, sb = active[a][rail].get("subnet"), active[b][rail].get("subnet")
            if sa and sb and sa != sb:
                mismatched[rail] = f"{rail} is on subnet {sa} at {a} but {sb} at {b}: cabled to another rail?"
    nccl = [(node, f) for node, rail, f in figures if rail == "nccl"]
    if nccl:
        figures = [x for x in figures if x[1] != "nccl"] + [(a, "nccl", one_nccl_figure(a, b, nccl))]
    out = []
    for node, rail, f in figures:
        if rail in mismatched:
            continue  # the clients' connection errors on it say less than the finding below
        if rail == "nccl":
            floor = floors.nccl_busbw_gbps
        elif rail == "tcp":
            floor = floors.tcp(rates.get((a, rail)), rates.get((b, rail)))
        else:
            floor = floors.rdma(rates.get((a, rail)), rates.get((b, rail)))
        skipped = f.get("skipped")
        if not skipped and not f.get("error") and floor is None:
            skipped = "no floor: the link's rate is not reported and no absolute floor was given"
        out.append(Measurement(rail, str(f.get("direction")), f.get("value"), str(f.get("unit", "")), floor,
                               f.get("error"), skipped))
    for rail, why in sorted(mismatched.items()):
        floor = floors.rdma(rates.get((a, rail)), rates.get((b, rail)))
        out += [Measurement(rail, d, None, "Gb/s", floor, why) for d in ("a>b", "b>a")]
    return PairResult(round_no, a, b, out, identities={n: o.get("identity") or {"hostname": n} for n, o in ends.items()})


def one_nccl_figure(a: str, b: str, figures: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The pair's all-reduce from both ends' figures: each end checked its own ranks, so an error at
    either is the pair's (named by its node where the two ends differ); the bandwidth is the
    slower end's; an end that said nothing is an error, never a silent pass."""
    by_node = {node: f for node, f in figures}
    said = {n: by_node[n].get("error") or (None if by_node[n].get("skipped") or by_node[n].get("value") is not None
                                             else "no all-reduce figure") for n in by_node}
    said.update({n: "no all-reduce figure" for n in (a, b) if n not in by_node})
    errors = {n: e for n, e in said.items() if e}
    out: dict[str, Any] = {"rail": "nccl", "direction": "both", "unit": "GB/s", "value": None}
    if errors:
        texts = list(dict.fromkeys(errors.values()))
        out["error"] = texts[0] if len(texts) == 1 and len(errors) == 2 else "; ".join(
            f"{n}: {e}" for n, e in errors.items())
        return out
    skipped = list(dict.fromkeys(f["skipped"] for f in by_node.values() if f.get("skipped")))
    if skipped:
        out["skipped"] = "; ".join(skipped)
        return out
    out["value"] = min(float(f["value"]) for f in by_node.values())
    return out


class HostLauncher(ProcessLauncher):
    """A plain host list: `prefix` (with {host}) runs a command on a host, e.g. `ip netns exec {host}`
    (the tests' network namespaces) or `pdsh -N -w {host}`. Both ends of each pair start at once."""

    name = "hosts"

    def __init__(self, prefix: str):
        super().__init__()
        # Split first, substitute after (nodeqc.names.substitute): a host is then one word, or part
        # of one, of argv, never text a shell or shlex reads again.
        try:
            self.words = shlex.split(prefix)
        except ValueError as e:
            raise ValueError(f"cannot be split into words: {e}") from None
        if not any("{host}" in w for w in self.words):
            raise ValueError("the launch prefix must contain {host}")
        self.prefix = prefix

    def commands(self, a: str, b: str, args: list[str], work: Work) -> list[list[str]]:
        return [[*substitute(self.words, host), *work.nodeqc, *args, "--index", str(i)]
                for i, host in enumerate((a, b))]


class SlurmLauncher(ProcessLauncher):
    """One srun step per pair, inside the job's allocation (srun refuses nodes outside it)."""

    name = "slurm"

    def __init__(self, srun: str = "srun", extra: list[str] | None = None):
        super().__init__()
        self.srun = srun
        self.extra = extra or []

    def commands(self, a: str, b: str, args: list[str], work: Work) -> list[list[str]]:
        minutes = max(1, int(work.round_timeout_s // 60) + 1)
        return [[self.srun, "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", f"--nodelist={a},{b}", "--exclusive",
                 "--job-name=nodeqc-fabric", "--kill-on-bad-exit=1", f"--time={minutes}", *self.extra,
                 *work.nodeqc, *args]]


def in_allocation() -> bool:
    return bool(os.environ.get("SLURM_JOB_ID"))
