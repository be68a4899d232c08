"""The fabric's topology, read where the scheduler has it: which leaf switch each node hangs off, and
which switch each switch hangs off, up to the top. With it, pairs are chosen within a leaf, across
leaves and across spines (`pairing.topology_schedule`), and a fault on a switch's uplink is named as
that uplink (`uplinks.py`), not as every node behind it.

Sources (`nodeqc fabric --topology SOURCE`):

- `slurm`: `scontrol show topology` (Slurm's topology/tree plugin: the switches of topology.conf);
- `k8s`: the nodes' labels (`kubectl get nodes -o json`): the leaf is the node's rack or block
  label, above it the spine label, above that the zone; the NVLink domain is recorded beside. The
  labels default to NVIDIA topograph's (network.topology.nvidia.com/block and /spine), Kubernetes'
  well-known topology.kubernetes.io/zone and GPU feature discovery's nvidia.com/gpu.clique; change
  them with `--topology-label leaf=L,spine=S,zone=Z,nvlink=D` (`zone=` alone: no such level);
- a FILE in topology.conf's own syntax, one switch a line (`man topology.conf`):

      SwitchName=leaf1 Nodes=gpu[01-16]
      SwitchName=leaf2 Nodes=gpu[17-32]
      SwitchName=spine1 Switches=leaf[1-2]

  `#` starts a comment, a `\\` at a line's end continues it; keys are SwitchName (or BlockName, a
  block with no parent: Slurm's topology/block, whose blocks are the racks' NVLink domains, so its
  nodes are one multi-node NVLink domain too), Switches, Nodes, and LinkSpeed and Level (read, not used). Host lists
  expand as Slurm's do (`gpu[01-04,07]`, `r[1-2]-n[1-2]`).

What the cluster says is untrusted input: every node and switch name is checked as a host name is
(nodeqc.core.names.check_host: it may reach a launcher's argv), the file is read once, bounded, and a
bad line is one error naming the file and the line. A node in two leaves, a switch with two
parents, a switch defined twice, a loop, or a switch named but never defined is refused so.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeqc.core.errors import UsageError, shown
from nodeqc.core.names import check_host
from nodeqc.core.safefile import UnreadableInput, as_text, read_input

MAX_FILE = 16 << 20  # a topology of 100,000 nodes in single lines is under 5 MB
MAX_EXPANDED = 1 << 20  # names one host list, and one whole file, may expand to
# Switch tiers above a leaf. The largest published AI fabrics have three or four (NVIDIA's SuperPOD
# reference architectures: leaf, spine, core); a chain of 50,000 "switches" took minutes to walk.
MAX_LEVELS = 16
KUBECTL_S = 60
DEFAULT_LABELS = {"leaf": "network.topology.nvidia.com/block", "spine": "network.topology.nvidia.com/spine",
                  "zone": "topology.kubernetes.io/zone", "nvlink": "nvidia.com/gpu.clique"}
_KEYS = {"switchname", "blockname", "switches", "nodes", "linkspeed", "level"}
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?")


@dataclass
class Topology:
    source: str
    leaf_of: dict[str, str]  # node -> its leaf switch
    parent: dict[str, str] = field(default_factory=dict)  # switch -> the switch above it
    nvlink: dict[str, str] = field(default_factory=dict)  # node -> NVLink domain (clique), where known
    # Nodes the source names but could not place, and why (a Kubernetes node's own labels out of line
    # with the rest): restrict() says why of one under test; one not under test changes nothing.
    unplaced: dict[str, str] = field(default_factory=dict)

    def up(self, switch: str) -> list[str]:
        """The switch and those above it, lowest first."""
        out = [switch]
        while out[-1] in self.parent:
            out.append(self.parent[out[-1]])
        return out

    def crossed(self, a: str, b: str) -> list[str]:
        """The switches whose uplinks a-b traffic crosses: from each node's leaf up to, not
        including, the lowest switch above both. Two nodes of one leaf cross none."""
        ua, ub = self.up(self.leaf_of[a]), self.up(self.leaf_of[b])
        common = set(ua) & set(ub)
        return [s for s in ua if s not in common] + [s for s in ub if s not in common]

    def level(self, switch: str) -> int:
        """0 for a leaf, 1 for the switch above leaves, ... (the longest way down)."""
        if not hasattr(self, "_levels"):
            levels: dict[str, int] = {}
            for leaf in set(self.leaf_of.values()) | set(self.parent):
                for height, s in enumerate(self.up(leaf)):
                    levels[s] = max(levels.get(s, 0), height)
            self._levels = levels
        return self._levels.get(switch, 0)

    def switches(self) -> list[str]:
        """Every switch with nodes below it, leaves first."""
        seen = {s for leaf in set(self.leaf_of.values()) for s in self.up(leaf)}
        return sorted(seen, key=lambda s: (self.level(s), s))

    def below(self, switch: str) -> set[str]:
        return {n for n, leaf in self.leaf_of.items() if switch in self.up(leaf)}

    def restrict(self, nodes: list[str], where: str) -> "Topology":
        """The topology of the nodes under test; each must be in it."""
        missing = [n for n in nodes if n not in self.leaf_of]
        if missing:
            placed = [n for n in missing if n in self.unplaced]
            why = f" ({placed[0]}: {self.unplaced[placed[0]]})" if placed else ""
            raise UsageError(f"--topology {where}: {', '.join(missing[:5])}{' +more' if len(missing) > 5 else ''}: "
                             f"not in the topology (no leaf switch lists it){why}")
        keep = set(nodes)
        return Topology(self.source, {n: leaf for n, leaf in self.leaf_of.items() if n in keep}, dict(self.parent),
                        {n: d for n, d in self.nvlink.items() if n in keep})

    def to_dict(self) -> dict[str, Any]:
        leaves: dict[str, list[str]] = {}
        for n, leaf in self.leaf_of.items():
            leaves.setdefault(leaf, []).append(n)
        return {"source": self.source, "leaves": {k: sorted(v) for k, v in sorted(leaves.items())},
                "parents": dict(sorted(self.parent.items())),
                **({"nvlink": dict(sorted(self.nvlink.items()))} if self.nvlink else {})}


def expand_hostlist(text: str, where: str, budget: int = MAX_EXPANDED) -> list[str]:
    """Slurm's host list: comma-separated names, each with bracketed ranges (`gpu[01-04,07]`),
    several brackets multiplying (`r[1-2]-n[1-2]`); zero padding kept. At most `budget` names, counted
    before they are made: `x[1-999999][1-999999]` filled the memory making them."""
    out: list[str] = []
    too_many = UsageError(f"{where}: the host list expands to more than {budget} names")
    for part in _split_top(text, where):
        names = [""]
        for token in re.split(r"(\[[^\]]*\])", part):
            suffixes = _ranges(token[1:-1], where, budget) if token.startswith("[") else [token]
            if len(names) * len(suffixes) + len(out) > budget:
                raise too_many
            names = [a + b for a in names for b in suffixes]
        out += [n for n in names if n]
    return out


def _split_top(text: str, where: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise UsageError(f"{where}: nested '[' in host list {shown(text)[:80]}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise UsageError(f"{where}: ']' without '[' in host list {shown(text)[:80]}")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise UsageError(f"{where}: '[' without ']' in host list {shown(text)[:80]}")
    return [p for p in parts + [cur] if p]


def _ranges(text: str, where: str, budget: int = MAX_EXPANDED) -> list[str]:
    out: list[str] = []
    for item in text.split(","):
        # [0-9], not \d: \d takes every script's digits ("node[٠-٣]" became node0..node3)
        m = re.fullmatch(r"([0-9]{1,9})(?:-([0-9]{1,9}))?", item.strip())
        if not m:
            raise UsageError(f"{where}: [{shown(text)[:40]}]: expected numbers and ranges such as 01-16,20")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo) or int(hi) - int(lo) >= MAX_EXPANDED:
            raise UsageError(f"{where}: [{shown(text)[:40]}]: range {lo}-{hi} runs backwards or is too long")
        if len(out) + int(hi) - int(lo) + 1 > budget:
            raise UsageError(f"{where}: the host list expands to more than {budget} names")
        width = len(lo) if lo.startswith("0") else 0
        out += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
    return out


def parse_slurm(text: str, where: str) -> Topology:
    """topology.conf (or `scontrol show topology`): SwitchName=X [Switches=..] [Nodes=..]."""
    leaf_of: dict[str, str] = {}
    parent: dict[str, str] = {}
    defined: dict[str, int] = {}
    nvlink: dict[str, str] = {}  # node -> its block (topology/block: a multi-node NVLink domain)
    children: list[tuple[int, str, list[str]]] = []
    listed = 0  # switches the lines list under others, all told
    for number, line in _logical_lines(text):
        at = f"{where}:{number}"
        fields: dict[str, str] = {}
        for token in line.split():
            key, sep, value = token.partition("=")
            if not sep or not value:
                raise UsageError(f"{at}: {shown(token)[:60]}: expected KEY=VALUE (SwitchName=, Switches=, Nodes=)")
            if key.lower() not in _KEYS:
                raise UsageError(f"{at}: {shown(key)[:40]}: not a topology.conf key (SwitchName, Switches, Nodes, LinkSpeed)")
            if key.lower() in fields:
                raise UsageError(f"{at}: {key} given twice")
            fields[key.lower()] = value
        if "switchname" in fields and "blockname" in fields:  # which is it? The NVLink domain became the switch
            raise UsageError(f"{at}: SwitchName= and BlockName= on one line: a line is a switch or a block")
        name = fields.get("switchname") or fields.get("blockname")
        if name is None:
            raise UsageError(f"{at}: no SwitchName= on the line")
        check_host(name, f"{at}: switch")
        if name in defined:
            raise UsageError(f"{at}: switch {name} already defined on line {defined[name]}")
        defined[name] = number
        for node in expand_hostlist(fields.get("nodes", ""), at, MAX_EXPANDED - len(leaf_of)):
            check_host(node, f"{at}: node")
            if node in leaf_of:
                raise UsageError(f"{at}: node {node} is already under switch {leaf_of[node]}")
            leaf_of[node] = name
            if "blockname" in fields:
                nvlink[node] = name
        if "switches" in fields:
            children.append((number, name, expand_hostlist(fields["switches"], at, MAX_EXPANDED - listed)))
            listed += len(children[-1][2])
    for number, name, below in children:
        for child in below:
            check_host(child, f"{where}:{number}: switch")
            if child not in defined:
                raise UsageError(f"{where}:{number}: switch {child} is not defined (no SwitchName={child} line)")
            if child in parent:
                raise UsageError(f"{where}:{number}: switch {child} is already under switch {parent[child]}")
            if child == name:
                raise UsageError(f"{where}:{number}: switch {name} lists itself")
            parent[child] = name
    for switch in parent:
        seen = {switch}
        s = switch
        while s in parent:
            s = parent[s]
            if s in seen:
                raise UsageError(f"{where}:{defined[switch]}: switch {switch} is part of a loop of switches")
            seen.add(s)
            if len(seen) > MAX_LEVELS + 1:
                raise UsageError(f"{where}:{defined[switch]}: switch {switch} has more than {MAX_LEVELS} tiers of "
                                 "switches above it (a fabric has three or four)")
    if not leaf_of:
        raise UsageError(f"{where}: no switch lists any node (Nodes=)")
    return Topology(where, leaf_of, parent, nvlink)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out, pending, start = [], "", 0
    # Lines end at a newline (\n, \r\n or \r) only: splitlines() also broke them at a vertical tab or
    # a form feed, and the line numbers in the errors were then wrong.
    for number, raw in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip():
            out.append((start, line))
    if pending.strip():
        out.append((start, pending))
    return out


def from_k8s_nodes(items: Any, labels: dict[str, str], where: str = "--topology k8s") -> Topology:
    """From `kubectl get nodes -o json`'s items: leaf, spine and zone labels as levels. A kubelet may
    set labels on its own node (the zone, and any outside the kubernetes.io prefixes), so a node's
    labels are its word: one that is not a label value, or that puts its leaf under another switch
    than most of its leaf's nodes do, leaves that node unplaced (named, if it is under test), never
    stops the run for all (any node of the cluster could, 2026-11-28 audit)."""
    if not isinstance(items, list):
        raise UsageError(f"{where}: kubectl get nodes -o json gave no list of nodes")
    chains: dict[str, list[str]] = {}
    nvlink: dict[str, str] = {}
    unplaced: dict[str, str] = {}
    levels = [lvl for lvl in ("leaf", "spine", "zone") if labels.get(lvl)]
    for item in items:
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        try:
            check_host(name, f"{where}: kubectl get nodes gave node")
        except UsageError:
            continue  # no node a run can name (run names are checked the same way)
        got = meta.get("labels") or {}
        if not isinstance(got, dict):
            unplaced[name] = "its labels are not a map"
            continue
        chain = []
        for lvl in levels:
            value = got.get(labels[lvl])
            if value is None:
                break
            if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
                unplaced[name] = f"label {labels[lvl]}={shown(str(value))[:70]} is not a label value"
                break
            chain.append(f"{lvl}:{value}" if lvl != "leaf" else value)
        if chain and name not in unplaced:
            chains[name] = chain
        clique = got.get(labels.get("nvlink") or "")
        if name not in unplaced and isinstance(clique, str) and _LABEL_VALUE.fullmatch(clique):
            nvlink[name] = clique
    # Each switch's parent is the one most nodes under it name (ties: the first in name order).
    votes: dict[str, dict[str, int]] = {}
    for chain in chains.values():
        for low, high in zip(chain, chain[1:]):
            votes.setdefault(low, {}).setdefault(high, 0)
            votes[low][high] += 1
    parent = {low: min(highs, key=lambda h: (-highs[h], h)) for low, highs in votes.items()}
    leaf_of = {}
    for name, chain in chains.items():
        wrong = next(((low, high) for low, high in zip(chain, chain[1:]) if parent[low] != high), None)
        if wrong:
            unplaced[name] = f"its labels put {wrong[0]} under {wrong[1]}, most nodes of it under {parent[wrong[0]]}"
            nvlink.pop(name, None)
        else:
            leaf_of[name] = chain[0]
    return Topology(where, leaf_of, parent, nvlink, unplaced)


def parse_labels(text: str) -> dict[str, str]:
    """`leaf=L,spine=S,zone=Z,nvlink=D` over the defaults; an empty value drops that level."""
    out = dict(DEFAULT_LABELS)
    for item in filter(None, (t.strip() for t in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in DEFAULT_LABELS:
            raise UsageError(f"--topology-label {shown(item)}: expected leaf=, spine=, zone= or nvlink= a label key")
        if value and not re.fullmatch(r"([A-Za-z0-9.-]{1,253}/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?", value):
            raise UsageError(f"--topology-label {shown(item)}: {shown(value)} is not a label key")
        out[key] = value
    return out


def read(source: str, labels: str = "", scontrol: str = "scontrol", kubectl: str = "kubectl") -> Topology:
    """The topology from `slurm`, `k8s` or a file."""
    if source == "slurm":
        text = _run([scontrol, "show", "topology"], "--topology slurm: scontrol show topology")
        return parse_slurm(text, "--topology slurm (scontrol show topology)")
    if source == "k8s":
        text = _run([kubectl, "get", "nodes", "-o", "json"], "--topology k8s: kubectl get nodes")
        try:
            items = json.loads(text)["items"]
        except (ValueError, KeyError, TypeError, RecursionError):  # nested past the decoder's depth too
            raise UsageError("--topology k8s: kubectl get nodes -o json did not answer JSON") from None
        return from_k8s_nodes(items, parse_labels(labels))
    try:
        text = as_text(read_input(Path(source), MAX_FILE, "topology file"))
    except UnreadableInput as e:
        raise UsageError(f"--topology {source}: {e}") from None
    return parse_slurm(text, source)


def _run(argv: list[str], what: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=KUBECTL_S)
    except FileNotFoundError:
        raise UsageError(f"{what}: {argv[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"{what}: no answer within {KUBECTL_S} s") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise UsageError(f"{what}: {shown(why)[:200]}")
    if len(done.stdout) > MAX_FILE:
        raise UsageError(f"{what}: more than {MAX_FILE} bytes of answer")
    return done.stdout
