"""What a worker may say, and whose word it is.

The node being qualified is untrusted: its worker may be broken in any way, or compromised. So a
worker's result line is bound to the process (the srun step, the host's launch, the pod) that
printed it, never to the node the line claims, and it is checked against a schema before any figure
of it is used:

- `scan`: every result in what one process printed, and the ones that could not be read (cut short
  is not a result; nested beyond reason, or not JSON where a result starts, is refused).
- `line_problem`: a result's shape: types, finite non-negative figures, rates a port can have,
  names without control characters, bounded depth and size.
- `bind`: the one result of the end a process ran on: a line for another node, a second line, an
  unreadable or malformed line are refused, each naming the node whose process printed it.

A refused line is evidence against the node that printed it (the report names it, with the line);
it never counts as a figure, so it can never make a pair pass.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from nodeqc.fabric.nccl_group import COLLECTIVES
from nodeqc.fabric.worker import MARKER
from nodeqc.fabric.worker import MAX_GROUP as MAX_ENDS  # a pair's ends are 0 and 1

# A worker's line is a flat record: result -> figures/rails/identity -> a figure's fields. Deeper
# nesting is no line a worker writes (and 5,000 levels end the JSON decoder with RecursionError).
MAX_DEPTH = 4
MAX_LINE_CHARS = 1_000_000  # a result of 100 rails with their commands is ~30 kB; this is far past any
MAX_NAME = 64  # a rail (mlx5_11/2), "tcp", "nccl": IB device names are at most 64 bytes (IB_DEVICE_NAME_MAX)
MAX_TEXT = 4000  # an error or skip reason; longer text is shortened, not refused
# The fastest port on sale is 1.6 Tb/s (IEEE 802.3dj, 2025); twice that is no port's rate.
MAX_RATE_GBPS = 3200.0
# NCCL bus bandwidth in GB/s: NVLink 5 gives a GPU 1,800 GB/s (NVIDIA Blackwell datasheet); a
# two-node collective goes through the NICs and cannot beat one GPU's own link.
MAX_NCCL_GBPS = 1800.0
# A figure above its own port's rate is no measurement: iperf3 and ib_write_bw time their own
# intervals, and a few per cent over the signalling rate is that timer's error (perftest reports
# BW peak and average of one timed run); more is a broken or lying tool.
RATE_SLACK = 1.05
DIRECTIONS = ("a>b", "b>a", "both")
UNITS = ("Gb/s", "GB/s", "us", "")
# A latency (usec) or an NCCL step (ms) beyond a minute is no fabric's: a broken or lying tool.
MAX_LATENCY_US = 60e6
MAX_STEP_MS = 60e3
RAIL_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,64}")
SHOWN_CHARS = 300  # of a refused line, in the report
# Result lines read from one process's output: a worker prints one (a pair's end, or a group's), so
# more is a claim refused anyway (bind: a second result); past this many they are counted, not
# decoded, as each costs a copy and a decode of up to MAX_LINE_CHARS (16 MiB of markers took a minute).
MAX_RESULTS_READ = 64


@dataclass(frozen=True)
class Refused:
    """A result line that was not used, and why. `node` printed it (its process did): the suspect."""

    node: str
    why: str
    line: str  # the refused text, shortened (escaped where shown)
    lie: bool = False  # a claim the node could not make (another node's result, a second result, a figure it
    # does not measure): the node is named as the suspect; otherwise a malformed line (the pair is not tested)

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "why": self.why, "line": self.line, "claim": self.lie}


def excerpt(data: Any) -> str:
    """A refused line, short enough to keep in a report (never its whole, maybe huge, text)."""
    text = data if isinstance(data, str) else _dump(data)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"... ({len(text)} characters)"


def _dump(data: Any) -> str:
    try:
        return json.dumps(data, allow_nan=True)[: SHOWN_CHARS + 1]
    except (ValueError, RecursionError, TypeError):
        return repr(type(data))


RESULT_START = re.compile(r'\{\s*"' + re.escape(MARKER) + '"')


def scan(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(results, unreadable) in what one process printed. A result is a JSON object carrying
    MARKER, wherever it sits (a launcher or log collector may prefix or join lines). One cut short
    at the end of the output (the end was killed mid-write) is no result; one nested past reason,
    or too long, is unreadable (refused by `bind`), never an internal error of the run."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    unreadable: list[str] = []
    for n, start in enumerate(RESULT_START.finditer(text)):
        if n == MAX_RESULTS_READ:
            more = 1 + sum(1 for _ in RESULT_START.finditer(text, start.end()))
            unreadable.append(f"{more} more results after the first {MAX_RESULTS_READ}, not read: a worker prints one")
            break
        chunk = text[start.start():start.start() + MAX_LINE_CHARS + 1]
        if _depth_over(chunk, MAX_DEPTH + 8):  # refuse before the decoder recurses into it
            unreadable.append(f"nested deeper than {MAX_DEPTH} levels: {excerpt(chunk)}")
            continue
        try:
            data, _ = decoder.raw_decode(chunk)
        except json.JSONDecodeError:
            if len(chunk) > MAX_LINE_CHARS:
                unreadable.append(f"longer than {MAX_LINE_CHARS} characters: {excerpt(chunk)}")
            continue  # cut short (the end was killed mid-write): not a result
        except RecursionError:
            unreadable.append(f"nested past reason: {excerpt(chunk)}")
            continue
        if isinstance(data, dict) and data.get(MARKER) == 1:
            found.append(data)
    return found, unreadable


def _depth_over(text: str, limit: int) -> bool:
    """Whether the JSON value at the start of text opens more than `limit` brackets before it
    closes (strings skipped): cheap, and no recursion."""
    depth, in_string, escaped = 0, False, False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
            if depth > limit:
                return True
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return False
    return False


def _depth(x: Any, limit: int) -> bool:
    """Whether x nests deeper than limit."""
    if limit < 0:
        return True
    if isinstance(x, dict):
        return any(_depth(v, limit - 1) for v in x.values())
    if isinstance(x, list):
        return any(_depth(v, limit - 1) for v in x)
    return False


def name_problem(x: Any, what: str) -> str | None:
    if not isinstance(x, str):
        return f"{what} is {type(x).__name__}, not a name"
    if not RAIL_NAME.fullmatch(x):
        return f"{what} {excerpt(x)!r} is not a name ({RAIL_NAME.pattern})"
    return None


def number_problem(x: Any, what: str, most: float | None = None, optional: bool = True) -> str | None:
    """A figure: a finite number, not below zero, not above `most`; None where optional."""
    if x is None and optional:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return f"{what} is {excerpt(x)!r} ({type(x).__name__}), not a number"
    if isinstance(x, int) and x.bit_length() > 64:  # math.isfinite(10**400) raised: one node's line ended the run
        return f"{what} is a {x.bit_length()}-bit integer, not a figure"
    if not math.isfinite(x):
        return f"{what} is {x}, not a finite number"
    if x < 0:
        return f"{what} is {x:g}, below zero"
    if most is not None and x > most:
        return f"{what} is {x:g}, beyond any port's ({most:g})"
    return None


def text_problem(x: Any, what: str) -> str | None:
    if x is None or isinstance(x, str):
        return None
    return f"{what} is {type(x).__name__}, not text"


def line_problem(o: Any) -> str | None:
    """Why a worker's result is not in the shape a worker writes (None: it is). Checked before any
    figure of it is used: a wrong type, a non-finite or negative figure, a rate no port has, a name
    with control characters, nesting or size past reason."""
    if not isinstance(o, dict):
        return f"not an object ({type(o).__name__})"
    if _depth(o, MAX_DEPTH):
        return f"nested deeper than {MAX_DEPTH} levels"
    if not isinstance(o.get("node"), str) or not o["node"].isprintable() or not 0 < len(o["node"]) <= 253:
        return f"node {excerpt(o.get('node'))!r} is not a host name"
    index = o.get("index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < MAX_ENDS):
        return f"index {excerpt(index)!r} is no end of a pair or group (0 to {MAX_ENDS - 1})"
    job_index = o.get("job_index")
    if job_index is not None and (isinstance(job_index, bool) or not isinstance(job_index, int)):
        return f"job_index {excerpt(job_index)!r} is not a number"
    identity = o.get("identity")
    if identity is not None:
        if not isinstance(identity, dict) or len(identity) > 16:
            return "identity is not an object of a few names"
        for k, v in identity.items():
            if not isinstance(v, str) or not v.isprintable() or len(v) > 256 or not str(k).isprintable():
                return f"identity {excerpt(k)!r} is not a printable name"
    figures = o.get("figures", [])
    if not isinstance(figures, list):
        return f"figures is {type(figures).__name__}, not a list"
    for i, f in enumerate(figures):
        why = figure_problem(f)
        if why:
            return f"figure {i + 1}: {why}"
    rails = o.get("rails")
    if rails is not None:
        if not isinstance(rails, list):
            return f"rails is {type(rails).__name__}, not a list"
        for r in rails:
            if not isinstance(r, dict):
                return "a rail is not an object"
            why = (name_problem(r.get("rail"), "rail") or number_problem(r.get("rate"), "rail rate", MAX_RATE_GBPS)
                   or text_problem(r.get("subnet"), "subnet"))
            if why:
                return why
            if r.get("subnet") is not None and not r["subnet"].isprintable():
                return "subnet has control characters"
        names = [r["rail"] for r in rails]
        if len(set(names)) != len(names):
            return f"rail {sorted(n for n in names if names.count(n) > 1)[0]} listed twice"
    return None


def figure_problem(f: Any) -> str | None:
    if not isinstance(f, dict):
        return f"not an object ({type(f).__name__})"
    why = name_problem(f.get("rail"), "rail")
    if why:
        return why
    if f.get("direction") not in DIRECTIONS:
        return f"direction {excerpt(f.get('direction'))!r} is none of {', '.join(DIRECTIONS)}"
    if f.get("unit", "") not in UNITS:
        return f"unit {excerpt(f.get('unit'))!r} is none of Gb/s, GB/s, us"
    if f.get("test") not in (None, "lat"):
        return f"test {excerpt(f.get('test'))!r} is not lat"
    if (f.get("test") == "lat") != (f.get("unit") == "us") and f.get("value") is not None:
        return "a latency figure is in usec, and only a latency figure"
    most = MAX_LATENCY_US if f.get("test") == "lat" else MAX_NCCL_GBPS if f["rail"] in COLLECTIVES else MAX_RATE_GBPS
    return (number_problem(f.get("value"), "value", most) or number_problem(f.get("rate"), "rate", MAX_RATE_GBPS)
            or number_problem(f.get("p50"), "p50", MAX_LATENCY_US) or number_problem(f.get("p999"), "p999", MAX_LATENCY_US)
            or number_problem(f.get("step_p50_ms"), "step_p50_ms", MAX_STEP_MS)
            or number_problem(f.get("step_p99_ms"), "step_p99_ms", MAX_STEP_MS)
            or number_problem(f.get("steps"), "steps")
            or text_problem(f.get("error"), "error") or text_problem(f.get("skipped"), "skipped")
            or text_problem(f.get("command"), "command")
            or number_problem(f.get("retransmits"), "retransmits"))


def bind(node: str, index: int, results: list[dict[str, Any]], unreadable: list[str],
         source: str) -> tuple[dict[str, Any] | None, list[Refused]]:
    """The result of the end `node` (end `index` of its pair) from what its own process printed
    (`source` says which process, for the reasons). Another node's result, a second result, an
    unreadable or malformed one are refused, naming `node`: its process printed them."""
    refused = [Refused(node, f"{source} printed a result that could not be read ({why.split(':')[0]})", excerpt(why))
               for why in unreadable]
    own: list[dict[str, Any]] = []
    for o in results:
        why = line_problem(o)
        if why:
            refused.append(Refused(node, f"{source} printed a malformed result: {why}", excerpt(o)))
        elif o["node"] != node:
            refused.append(Refused(node, f"{source} ran on {node} but printed a result for {o['node']}", excerpt(o),
                                   lie=True))
        elif o.get("index") is not None and o["index"] != index:
            refused.append(Refused(node, f"{source} is end {index} of its pair but printed a result as end "
                                         f"{o['index']}", excerpt(o), lie=True))
        elif own:
            refused.append(Refused(node, f"{source} printed a second result for {node}", excerpt(o), lie=True))
        else:
            own.append(o)
    return (own[0] if own else None), refused
