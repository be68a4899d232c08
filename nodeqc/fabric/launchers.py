"""How a round's pair tests reach the nodes. Every pair of a round runs at once, so a fabric's wall
time grows with the number of rounds, not of nodes.

- `SlurmLauncher`: Slurm is the engine. One job step per end of each pair, inside the job's
  allocation: `srun --nodes=1 --ntasks=1 --nodelist=A --exclusive ... nodeqc fabric worker --pair
  A,B --index 0 ...` and the same on B. No ssh.
- `HostLauncher`: a plain host list and a command prefix that runs a command on a host
  (`ip netns exec {host}` for network namespaces, `pdsh -w {host}`, a site's own wrapper); one
  process per end of each pair.
- `SimulatedLauncher`: the simulated cluster (no process, no packet).

Each end prints one JSON line. Its process's output is that end's alone (one launch, one step, one
pod): the line is bound to the node the process ran on, never to the node the line names, and
checked against the worker's schema (nodeqc.fabric.lines); what is refused names the node that
printed it. `merge` turns the two ends into the pair's result, each figure's floor from the
profile or the faster end's rate.
"""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from nodeqc.core.names import substitute
from nodeqc.core.text import few
from nodeqc.fabric import nccl_group
from nodeqc.fabric.groups import shared_domain
from nodeqc.fabric.lines import RATE_SLACK, Refused, bind, excerpt, line_problem, scan
from nodeqc.fabric.pairing import Round
from nodeqc.fabric.scoring import Floors, GroupResult, Measurement, PairResult
from nodeqc.fabric.simulated import SimulatedCluster
from nodeqc.fabric.tails import LAT_P50_US, MIN_SAMPLES, Latency, lat_floor, nccl_step_floor
from nodeqc.fabric.worker import CONNECT_RETRY_S, MARGIN_S, PORTS_PER_PAIR


@dataclass
class Work:
    """What each pair runs."""

    tests: list[str]  # tcp, rdma, nccl, allgather, alltoall, lat
    seconds: float
    floors: Floors
    streams: int = 4
    port_base: int = 15201  # nodeqc fabric --port
    use_cuda: bool = False
    nodeqc: list[str] = field(default_factory=lambda: ["nodeqc"])  # the command that runs nodeqc on a node
    addresses: dict[str, str] = field(default_factory=dict)  # node -> data address (default: its name)
    nccl_bytes: int | None = None  # per GPU in the NCCL test (default: nccl_group.BUFFER_BYTES)
    group: bool = False  # group tests (nodeqc.fabric.groups): `tests` are collectives, run across each group
    nvlink: dict[str, str] = field(default_factory=dict)  # node -> multi-node NVLink domain, where known

    @property
    def round_timeout_s(self) -> float:
        """Every tool of a pair is bounded; a round is bounded by their sum."""
        per_test = {"tcp": 2 * (self.seconds + CONNECT_RETRY_S), "rdma": 2 * (self.seconds + CONNECT_RETRY_S),
                    "lat": CONNECT_RETRY_S + MARGIN_S,
                    **{test: nccl_group.time_bound_s(self.seconds) for test in nccl_group.COLLECTIVES}}
        return sum(per_test[t] for t in self.tests) + 2 * MARGIN_S + 60

    def worker_args(self, nodes: tuple[str, ...], slot: int) -> list[str]:
        """A pair's worker (--pair A,B), or a group's (--group A,B,C,..., NCCL's collectives only)."""
        args = ["fabric", "worker", "--group" if self.group else "--pair", ",".join(nodes),
                "--tests", ",".join(self.tests), "--seconds", f"{self.seconds:g}",
                "--streams", str(self.streams), "--port", str(self.port_base + slot * PORTS_PER_PAIR)]
        if self.addresses:
            args += ["--address", ",".join(self.addresses.get(n, n) for n in nodes)]
        if self.use_cuda:
            args.append("--use-cuda")
        if self.nccl_bytes:
            args += ["--nccl-bytes", str(self.nccl_bytes)]
        return args

    def plan_args(self, pairs: tuple[tuple[str, ...], ...], addresses: dict[str, str]) -> list[str]:
        """The worker's arguments for a whole round, when the node a worker lands on is chosen by a
        scheduler (Kubernetes): each worker finds its pair (or group), its end and its ports from its node."""
        args = ["fabric", "worker", "--groups" if self.group else "--pairs", " ".join(",".join(p) for p in pairs),
                "--tests", ",".join(self.tests),
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

    def run_groups(self, number: int, groups: list[tuple[str, ...]], work: Work) -> list[GroupResult]:
        """One round of group tests (nodeqc.fabric.groups): every group at once."""
        raise NotImplementedError

    def abort(self) -> None:
        """Stop what runs now (Ctrl-C, SIGTERM): the round returns at once."""


class SimulatedLauncher(Launcher):
    name = "simulated"

    def __init__(self, cluster: SimulatedCluster):
        self.cluster = cluster

    def run_round(self, rnd: Round, work: Work) -> list[PairResult]:
        return [self.cluster.run_pair(rnd.number, a, b, work.floors, work.tests) for a, b in rnd.pairs]

    def run_groups(self, number: int, groups: list[tuple[str, ...]], work: Work) -> list[GroupResult]:
        return [self.cluster.run_group(number, g, work.floors, work.tests) for g in groups]


class ProcessLauncher(Launcher):
    """Starts every process of a round at once, waits for all (bounded), reads each end's line."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        self._aborted = threading.Event()

    def commands(self, nodes: tuple[str, ...], args: list[str], work: Work) -> list[list[str]]:
        """One command an end, in end order."""
        raise NotImplementedError

    def abort(self) -> None:
        self._aborted.set()
        for p in list(self._procs):
            if p.poll() is None:
                p.kill()

    def run_round(self, rnd: Round, work: Work) -> list[PairResult]:
        got = self._launch([(a, b) for a, b in rnd.pairs], [work.worker_args((a, b), slot)
                                                           for slot, (a, b) in enumerate(rnd.pairs)], work)
        return [merge(rnd.number, a, b, outputs, errors, work.floors, refused, work.tests)
                for (a, b), (outputs, errors, refused) in zip(rnd.pairs, got)]

    def run_groups(self, number: int, groups: list[tuple[str, ...]], work: Work) -> list[GroupResult]:
        got = self._launch(groups, [work.worker_args(g, slot) for slot, g in enumerate(groups)], work)
        return [merge_group(number, g, outputs, errors, work.floors, refused, work.tests, shared_domain(g, work.nvlink))
                for g, (outputs, errors, refused) in zip(groups, got)]

    def _launch(self, units: list[tuple[str, ...]], args: list[list[str]],
                work: Work) -> list[tuple[list[dict[str, Any]], list[str], list[Refused]]]:
        """Every end of every unit (a pair or a group) at once; for each unit, (the outputs bound to
        their ends, the errors of ends that gave none, what was refused). Each process runs one end
        (commands() gives them in end order): what it prints is that end's, whatever node its lines
        name (lines.bind)."""
        started: list[tuple[int, int, subprocess.Popen[bytes] | None, IO[bytes], str | None, list[str]]] = []
        for slot, nodes in enumerate(units):
            for end, cmd in enumerate(self.commands(nodes, args[slot], work)):
                out = tempfile.TemporaryFile()
                try:
                    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            preexec_fn=_cap_output)
                    self._procs.append(proc)
                    started.append((slot, end, proc, out, None, cmd))
                except OSError as e:
                    started.append((slot, end, None, out, f"{cmd[0]} could not start: {e.strerror}", cmd))
        deadline = time.monotonic() + work.round_timeout_s
        for _, _, proc, _, _, _ in started:
            if proc is None:
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._procs = []
        got: list[tuple[list[dict[str, Any]], list[str], list[Refused]]] = [([], [], []) for _ in units]
        for slot, end, proc, out, error, cmd in started:
            node = units[slot][end]
            out.seek(0)
            text = out.read(OUTPUT_BYTES).decode("utf-8", errors="replace")
            out.close()
            found, unreadable = scan(text)
            mine, bad = bind(node, end, found, unreadable, f"the {self.name} launch of {node}")
            got[slot][2].extend(bad)
            if mine is not None:
                got[slot][0].append(mine)
                continue
            if error is None:
                status = "killed (overran the round)" if proc is not None and proc.returncode in (-9, 137) else (
                    f"exit {proc.returncode}" if proc is not None else "not started")
                if self._aborted.is_set():
                    status = "aborted"
                tail = " | ".join(t.strip() for t in text.strip().splitlines()[-3:])[:500]
                error = f"`{shlex.join(cmd[:6])} ...` gave no result ({status}){': ' + tail if tail else ''}"
            got[slot][1].append(error)
        return got


OUTPUT_BYTES = 16 * 1024 * 1024  # of one end's output: a worker prints one line of a few kB (lines.MAX_LINE_CHARS)
# The most an end's process may write to its output file on the coordinator: twice what is read, so a
# worker's whole line always fits, and an end printing without end (a hostile or broken node, for the
# whole round's timeout) is ended by SIGXFSZ there, not left to fill the login node's $TMPDIR.
OUTPUT_FILE_BYTES = 2 * OUTPUT_BYTES


def _cap_output() -> None:
    """Run in each end's process before it starts (Popen's preexec_fn): files it writes stop at
    OUTPUT_FILE_BYTES (RLIMIT_FSIZE; what it starts, ssh or srun's own, inherits the limit)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_BYTES, OUTPUT_FILE_BYTES))


def worker_results(text: str) -> list[dict[str, Any]]:
    """Every worker result (a JSON object carrying MARKER) in what a step or log printed, wherever it
    sits: a line can land glued to another's (a Python started with PYTHONUNBUFFERED=1 writes a
    line and its newline separately; a launcher or a log collector may prefix or join lines). Text
    around them is ignored; lines.scan also returns the ones that could not be read."""
    return scan(text)[0]


def merge(round_no: int, a: str, b: str, outputs: list[dict[str, Any]], errors: list[str], floors: Floors,
          refused: list[Refused] | tuple[Refused, ...] = (), tests: list[str] | None = None) -> PairResult:
    """The pair's result from what its two ends printed, each output already bound to the end whose
    process printed it (lines.bind; `refused`: what was not). Rails are matched by identity (the
    HCA's name and port, worker.rail_id), as both ends name them; a rail active on one end only is a
    finding of its own (no counterpart on the peer), not a connection error and never a silent
    drop, and a rail whose two ports sit on different subnets is one too (cabled to another rail).

    Every output is checked first (lines.line_problem, then `figure_claims`: each figure from the
    end that measures it, once, on a rail that end has, within its own port's rate). Anything
    refused makes the pair not tested, naming the node that printed it: refused data never makes
    a pair pass, and never lowers a floor."""
    refused = list(refused)
    ends: dict[str, dict[str, Any]] = {}
    for o in outputs:
        node = o.get("node") if isinstance(o, dict) else None
        who = node if node in (a, b) else f"{a}/{b}"
        why = line_problem(o)
        if why:
            refused.append(Refused(who, f"a malformed result: {why}", excerpt(o)))
        elif node not in (a, b):
            refused.append(Refused(who, f"a result for {node}, not of this pair", excerpt(o), lie=True))
        elif node in ends:
            refused.append(Refused(node, f"a second result for {node}", excerpt(o), lie=True))
        else:
            ends[node] = o
    if len(ends) == 2:
        refused += figure_claims(a, b, ends, tests)
    if refused:
        named = list(dict.fromkeys(r.node for r in refused))
        return PairResult(round_no, a, b, error="; ".join(f"{n}: {r.why}" for n in named for r in refused
                                                          if r.node == n)[:2000] + " (refused: not tested)",
                          refused=[r.to_dict() for r in refused])
    if set(ends) != {a, b}:
        missing = [n for n in (a, b) if n not in ends]
        why = "; ".join(errors) or "no output"
        return PairResult(round_no, a, b, error=f"{', '.join(missing)}: worker gave no result: {why}")
    rates: dict[tuple[str, str], float | None] = {}
    active: dict[str, dict[str, dict[str, Any]]] = {}  # node -> rail -> what the end said of it
    figures = []
    for node, o in ends.items():
        if isinstance(o.get("rails"), list):
            active[node] = {r["rail"]: r for r in o["rails"]}
            for rail, r in active[node].items():
                rates[(node, rail)] = r.get("rate")
        for f in o.get("figures", []):
            rail = f["rail"]
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
    for collective in nccl_group.COLLECTIVES:
        both = [(node, f) for node, rail, f in figures if rail == collective]
        if both:
            figures = [x for x in figures if x[1] != collective] + [(a, collective,
                                                                      one_nccl_figure((a, b), both, collective))]
    out = []
    latencies = [latency(f, floors) for _, rail, f in figures if f.get("test") == "lat" and rail not in mismatched]
    for node, rail, f in figures:
        if rail in mismatched or f.get("test") == "lat":
            continue  # the clients' connection errors on it say less than the finding below
        if rail in nccl_group.COLLECTIVES:
            floor = floors.busbw(rail)
        elif rail == "tcp":
            floor = floors.tcp(rates.get((a, rail)), rates.get((b, rail)))
        else:
            floor = floors.rdma(rates.get((a, rail)), rates.get((b, rail)))
        skipped = f.get("skipped")
        if not skipped and not f.get("error") and floor is None:
            skipped = "no floor: the link's rate is not reported and no absolute floor was given"
        out.append(Measurement(rail, str(f.get("direction")), f.get("value"), str(f.get("unit", "")), floor,
                               f.get("error"), skipped))
        if rail in nccl_group.COLLECTIVES and f.get("steps") is not None:
            latencies.append(nccl_steps(f, rail))
    for rail, why in sorted(mismatched.items()):
        floor = floors.rdma(rates.get((a, rail)), rates.get((b, rail)))
        out += [Measurement(rail, d, None, "Gb/s", floor, why) for d in ("a>b", "b>a")]
    # A test asked for of which neither end said a word (no figure, no error, no reason to skip it):
    # said not measured, as a missing tool is. A worker that left out its RDMA figures passed the
    # pair on TCP alone, nothing said (the 2026-11-29 fuzzing). (Latency rides on the RDMA rails.)
    said = {nccl_group.test_of(rail) for _, rail, f in figures if f.get("test") != "lat"} | (
        {"rdma"} if mismatched else set())
    for kind in [t for t in tests or [] if t != "lat" and t not in said]:
        out.append(Measurement(kind, "both", None, "GB/s" if kind in nccl_group.COLLECTIVES else "Gb/s", None, None,
                               "neither end of the pair gave a figure or a reason for it"))
    return PairResult(round_no, a, b, out, identities={n: o.get("identity") or {"hostname": n} for n, o in ends.items()},
                      latencies=latencies)


def merge_group(round_no: int, nodes: tuple[str, ...], outputs: list[dict[str, Any]], errors: list[str],
                floors: Floors, refused: list[Refused] | tuple[Refused, ...] = (),
                tests: list[str] | None = None, nvlink: str | None = None) -> GroupResult:
    """A group test's result from what its ends printed (each bound to its end, lines.bind), checked
    as merge checks a pair's: a malformed line, a line for another node or a second one, a figure
    that is no collective this run asked for, or one said twice, makes the group not tested, naming
    who printed it. Each collective is one figure of every end's (one_nccl_figure), its floor the
    profile's for that many nodes (Floors.busbw; within one NVLink domain, `nvlink`, the all-reduce's
    NVLink floor), and its step tail a latency figure."""
    refused = list(refused)
    ends: dict[str, dict[str, Any]] = {}
    for o in outputs:
        node = o.get("node") if isinstance(o, dict) else None
        who = node if node in nodes else "/".join(nodes)
        why = line_problem(o)
        if why:
            refused.append(Refused(who, f"a malformed result: {why}", excerpt(o)))
        elif node not in nodes:
            refused.append(Refused(who, f"a result for {node}, not of this group", excerpt(o), lie=True))
        elif node in ends:
            refused.append(Refused(node, f"a second result for {node}", excerpt(o), lie=True))
        else:
            ends[node] = o
    for node, o in ends.items():
        seen: set[str] = set()
        for f in o.get("figures", []):
            rail = f["rail"]
            if rail not in nccl_group.COLLECTIVES or (tests is not None and rail not in tests):
                refused.append(Refused(node, f"a {rail} figure, a test this group did not run", excerpt(f), lie=True))
            elif f["direction"] != "both" or rail in seen:
                refused.append(Refused(node, f"{rail} {f['direction']} said twice or in no direction a collective has",
                                       excerpt(f), lie=True))
            seen.add(rail)
    if refused:
        named = list(dict.fromkeys(r.node for r in refused))
        return GroupResult(round_no, nodes, error="; ".join(f"{n}: {r.why}" for n in named for r in refused
                                                            if r.node == n)[:2000] + " (refused: not tested)",
                           refused=[r.to_dict() for r in refused])
    if set(ends) != set(nodes):
        missing = [n for n in nodes if n not in ends]
        return GroupResult(round_no, nodes, error=f"{few(missing)}: worker gave no result: "
                                                  f"{'; '.join(errors)[:1500] or 'no output'}")
    out, latencies = [], []
    for rail in nccl_group.COLLECTIVES:
        said = [(node, f) for node, o in ends.items() for f in o.get("figures", []) if f["rail"] == rail]
        if not said:
            continue
        f = one_nccl_figure(nodes, said, rail)
        worlds = {x.get("gpus") for _, x in said}
        world = worlds.pop() if len(worlds) == 1 else None
        gpus = world // len(nodes) if type(world) is int and world > 0 and world % len(nodes) == 0 else None
        out.append(Measurement(rail, "both", f.get("value"), "GB/s", floors.busbw(rail, len(nodes), gpus, bool(nvlink)),
                               f.get("error"), f.get("skipped")))
        if f.get("steps") is not None:
            latencies.append(nccl_steps(f, rail))
    return GroupResult(round_no, nodes, out, identities={n: o.get("identity") or {"hostname": n} for n, o in ends.items()},
                       latencies=latencies, nvlink=nvlink)



def latency(f: dict[str, Any], floors: Floors) -> Latency:
    """A rail's ib_write_lat figure (its 99th percentile in `value`), checked for sense: a median
    missing or above the 99th percentile is no figure to judge a tail by (an error, never a pass)."""
    floor = lat_floor(floors.lat_p99_us)
    rail, p50, p99 = str(f["rail"]), f.get("p50"), f.get("value")
    if f.get("skipped"):
        return Latency(rail, None, None, "us", floor, LAT_P50_US, skipped=str(f["skipped"]))
    error = f.get("error") or (None if p99 is not None and p50 is not None else "ib_write_lat gave no median and 99th "
                               "percentile") or (f"median {p50:g} usec above its 99th percentile {p99:g}: no such "
                                                 "table" if p50 > p99 else None)
    if error:
        return Latency(rail, None, None, "us", floor, LAT_P50_US, error=str(error))
    return Latency(rail, p50, p99, "us", floor, LAT_P50_US, p999=f.get("p999"))


def nccl_steps(f: dict[str, Any], rail: str = "nccl") -> Latency:
    """A collective's step times (the rail: nccl for the all-reduce, allgather, alltoall) as a tail
    figure (ms): every collective waits for its slowest rank, so a straggler shows in each. Too few
    steps for a 99th percentile is a skip."""
    steps, p50, p99 = f.get("steps"), f.get("step_p50_ms"), f.get("step_p99_ms")
    if steps < MIN_SAMPLES or p50 is None or p99 is None or p50 > p99:
        said = nccl_group.SAID[nccl_group.COLLECTIVES[rail]]
        why = (f"{steps} {said} steps, too few for a 99th percentile (at least {MIN_SAMPLES}: a longer "
               "--seconds or smaller --nccl-bytes)" if steps < MIN_SAMPLES else "no step times to judge")
        return Latency(rail, None, None, "ms", None, skipped=why)
    return Latency(rail, p50, p99, "ms", nccl_step_floor(p50))


def writer(rail: str, direction: str, a: str, b: str, test: str | None = None) -> tuple[str, ...]:
    """The end(s) that measure a figure (worker.py): iperf3's client, end B, reports TCP both ways;
    each RDMA direction is reported by its writer (a>b by A); each end reports its NCCL ranks;
    ib_write_lat's client, end B, reports each rail's latency."""
    if test == "lat":
        return (b,) if direction == "b>a" else ()
    if rail in nccl_group.COLLECTIVES:
        return (a, b) if direction == "both" else ()
    if rail == "tcp":
        return (b,) if direction in ("a>b", "b>a") else ()
    return {"a>b": (a,), "b>a": (b,)}.get(direction, ())


def figure_claims(a: str, b: str, ends: dict[str, dict[str, Any]], tests: list[str] | None) -> list[Refused]:
    """The figures an end could not have measured: another end's figure, one twice, one on a rail
    it does not list as active, a test that was not run, a value beyond its own port's rate. Each
    names the end that printed it (the suspect); a value beyond the rate is a suspect measurement."""
    out: list[Refused] = []
    seen: set[tuple[str, str, str]] = set()
    for node in (a, b):
        o = ends[node]
        listed = {r["rail"]: r for r in o.get("rails") or []}
        for f in o.get("figures", []):
            rail, direction, test = f["rail"], f["direction"], f.get("test")
            kind = "lat" if test == "lat" else nccl_group.test_of(rail)
            if tests is not None and kind not in tests:
                out.append(Refused(node, f"a {kind} figure ({rail} {direction}), a test this run did not ask for",
                                   excerpt(f), lie=True))
            elif node not in writer(rail, direction, a, b, test):
                out.append(Refused(node, f"a figure it does not measure ({kind} {rail} {direction}: "
                                         f"{' and '.join(writer(rail, direction, a, b, test)) or 'no end'} does)",
                                   excerpt(f), lie=True))
            elif (node, kind, rail, direction) in seen:
                out.append(Refused(node, f"{kind} {rail} {direction} reported twice", excerpt(f), lie=True))
            elif kind in ("rdma", "lat") and rail != "rdma" and rail not in listed:
                out.append(Refused(node, f"a figure on rail {rail}, which it does not list as active "
                                         f"({', '.join(sorted(listed)) or 'none'})", excerpt(f), lie=True))
            elif rail == "rdma" and not f.get("skipped"):
                out.append(Refused(node, "an RDMA figure on no rail (only a skip may say 'rdma')", excerpt(f),
                                   lie=True))
            else:
                seen.add((node, kind, rail, direction))
                # RDMA only: a port's rate (ibstat) is its signalling rate, a hard cap. TCP's is the
                # route's interface speed, nominal on a veth, bridge or VLAN (10 Gb/s while 25 flow):
                # a TCP figure is bounded by lines.MAX_RATE_GBPS alone.
                own = listed.get(rail, {}).get("rate") or f.get("rate")
                value = f.get("value")
                if value is not None and own and kind == "rdma" and value > own * RATE_SLACK:
                    out.append(Refused(node, f"{rail} {direction} {value:g} Gb/s, beyond its own port's rate "
                                             f"({own:g} Gb/s): suspect the measurement", excerpt(f)))
    return out


def one_nccl_figure(nodes: tuple[str, ...], figures: list[tuple[str, dict[str, Any]]], rail: str = "nccl") -> dict[str, Any]:
    """The pair's or group's collective (the rail: nccl for the all-reduce, allgather, alltoall)
    from every end's figure: each end checked its own ranks, so an error at any is the whole test's
    (named by its node where the ends differ); the bandwidth is the slowest end's; an end that said
    nothing is an error, never a silent pass."""
    missing = f"no {nccl_group.SAID[nccl_group.COLLECTIVES[rail]]} figure"
    by_node = {node: f for node, f in figures}
    said = {n: by_node[n].get("error") or (None if by_node[n].get("skipped") or by_node[n].get("value") is not None
                                             else missing) for n in by_node}
    said.update({n: missing for n in nodes if n not in by_node})
    errors = {n: e for n, e in said.items() if e}
    out: dict[str, Any] = {"rail": rail, "direction": "both", "unit": "GB/s", "value": None}
    if errors:
        texts = list(dict.fromkeys(errors.values()))
        # The end that found a wrong result first: the other end's errors may be its consequence.
        ordered = sorted(errors.items(), key=lambda ne: not nccl_group.leads_with_wrong_result(ne[1]))
        out["error"] = texts[0] if len(texts) == 1 and len(errors) == len(nodes) else "; ".join(
            f"{n}: {e}" for n, e in ordered)
        return out
    skipped = list(dict.fromkeys(f["skipped"] for f in by_node.values() if f.get("skipped")))
    if skipped:
        out["skipped"] = "; ".join(skipped)
        return out
    out["value"] = min(float(f["value"]) for f in by_node.values())
    # The step tail: the end with the worse 99th percentile (the whole all-reduce waits for it).
    timed = [f for f in by_node.values() if f.get("step_p99_ms") is not None and f.get("steps") is not None]
    if len(timed) == len(by_node):
        worst = max(timed, key=lambda f: f["step_p99_ms"])
        out.update(steps=min(int(f["steps"]) for f in timed), step_p50_ms=worst.get("step_p50_ms"),
                   step_p99_ms=worst["step_p99_ms"])
    return out


class HostLauncher(ProcessLauncher):
    """A plain host list: `prefix` (with {host}) runs a command on a host, e.g. `ip netns exec {host}`
    (the tests' network namespaces) or `pdsh -N -w {host}`. Both ends of each pair start at once."""

    name = "hosts"

    def __init__(self, prefix: str):
        super().__init__()
        # Split first, substitute after (nodeqc.core.names.substitute): a host is then one word, or part
        # of one, of argv, never text a shell or shlex reads again.
        try:
            self.words = shlex.split(prefix)
        except ValueError as e:
            raise ValueError(f"cannot be split into words: {e}") from None
        if not any("{host}" in w for w in self.words):
            raise ValueError("the launch prefix must contain {host}")
        self.prefix = prefix

    def commands(self, nodes: tuple[str, ...], args: list[str], work: Work) -> list[list[str]]:
        return [[*substitute(self.words, host), *work.nodeqc, *args, "--index", str(i)]
                for i, host in enumerate(nodes)]


class SlurmLauncher(ProcessLauncher):
    """One srun step per end of each pair, inside the job's allocation (srun refuses nodes outside
    it): `srun --nodes=1 --ntasks=1 --nodelist=A ... --index 0` and the same for B. A step's output
    is its one task's, so what it prints is bound to that node (lines.bind) by construction: no
    label to parse, no task order to trust, and a node cannot speak for its peer."""

    name = "slurm"

    def __init__(self, srun: str = "srun", extra: list[str] | None = None):
        super().__init__()
        self.srun = srun
        self.extra = extra or []

    def commands(self, nodes: tuple[str, ...], args: list[str], work: Work) -> list[list[str]]:
        minutes = max(1, int(work.round_timeout_s // 60) + 1)
        return [[self.srun, "--nodes=1", "--ntasks=1", f"--nodelist={node}", "--exclusive",
                 "--job-name=nodeqc-fabric", f"--time={minutes}", *self.extra, *work.nodeqc, *args, "--index", str(i)]
                for i, node in enumerate(nodes)]


def in_allocation() -> bool:
    return bool(os.environ.get("SLURM_JOB_ID"))
