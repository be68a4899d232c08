"""The kinds of a qualification report's fields that the faces rely on (`show`, `compare`, the archive's
history, `fleet`, `export`, the app), checked once where a statement is decoded (nodeqc.report.envelope).

A report is input even when a trusted key signed it: a field of the wrong kind (the checks a string,
a finding with no subject, a finish time that is no time) made each of those commands end in an
internal error, and one such file in an archive broke the listing of the whole archive. Only kinds
are checked here, and only of fields that are there: a report written by an older nodeqc, without
the newer fields, still reads."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from nodeqc.core.model import Verdict
from nodeqc.core.text import is_unicode
from nodeqc.report.answer import SHOWN_ORDER

VERDICTS = frozenset(v.value for v in Verdict)
RUN_VERDICTS = ("PASS", "FAIL", "ERROR")  # model.node_verdict; an aborted run is FAIL (runner._conclude)
STATUSES = ("complete", "aborted")
# No device counter is wider than 64 bits (NVML's are unsigned long long), and nodeqc writes no
# infinity or NaN; JSON has numbers of any length, and 10**400 ended show and compare in an
# OverflowError where it was made a float.
MAX_WHOLE = 2 ** 64
# Fields that are an object where present (null is not), and those that may be null too.
OBJECTS = ("node", "profile")
OBJECTS_OR_NULL = ("platform", "telemetry", "journal", "repair", "partial", "simulation", "summary", "baseline",
                   "previous", "burn_in", "answer", "tool", "signer")
LISTS = ("gpus", "checks")
FLAGS = ("quick", "simulated")


class ShapeError(ValueError):
    """A field of a report that is not of the kind nodeqc writes: says which (`checks[3].values`)."""


def check_predicate(p: Any, fabric: bool = False, text: bool = True) -> None:
    """ShapeError naming the first field of a qualification predicate (with `fabric`, a fabric run's:
    nodeqc.fabric.report) that is not of its kind. A fabric run's checks and node, read by the same
    faces, were not checked at all: 36 fields of the wrong kind ended show, --pdf, history or export
    in an internal error (a fuzzing helper, 2026-11-29)."""
    if not isinstance(p, dict):
        raise ShapeError("predicate: expected an object")
    for key in OBJECTS + OBJECTS_OR_NULL + (("fabric",) if fabric else ()):
        if key == "partial" and fabric:
            continue  # a fabric run's is a flag
        if key in p and not isinstance(p[key], dict) and not (key in OBJECTS_OR_NULL and p[key] is None):
            raise ShapeError(f"{key}: expected an object")
    for key in LISTS + (("nodes", "pairs") if fabric else ()):
        if key in p and not isinstance(p[key], list):
            raise ShapeError(f"{key}: expected a list")
    for key in FLAGS + (("partial",) if fabric else ()):
        if key in p and not isinstance(p[key], bool) and not (key == "partial" and p[key] is None):
            raise ShapeError(f"{key}: expected true or false")
    _numbers(p, text)
    if "verdict" in p and p["verdict"] not in RUN_VERDICTS:
        raise ShapeError(f"verdict: expected one of {', '.join(RUN_VERDICTS)}")
    if "status" in p and p["status"] not in STATUSES:
        raise ShapeError(f"status: expected one of {', '.join(STATUSES)}")
    # Every nodeqc has written the finish time; the archive sorts and ages reports by it.
    _time(p.get("finished_at"), "finished_at")
    for key in ("started_at", "valid_until"):
        if p.get(key) is not None:
            _time(p[key], key)
    if "duration_s" in p and (isinstance(p["duration_s"], bool) or not isinstance(p["duration_s"], (int, float))):
        raise ShapeError("duration_s: expected a number")
    for n, gpu in enumerate(_list(p.get("gpus"), "gpus")):
        _fields(gpu, f"gpus[{n}]", GPU)
    _fields(p.get("profile", {}), "profile", PROFILE)
    for key, spec in (("partial", PARTIAL), ("simulation", SIMULATION), ("repair", REPAIR), ("summary", SUMMARY)):
        if isinstance(p.get(key), dict):
            _fields(p[key], key, spec)
    simulation = p.get("simulation")  # a node's planted faults as a fabric's (show renders each)
    for n, planted in enumerate(_list(simulation.get("planted"), "simulation.planted") if isinstance(simulation, dict) else ()):
        _fields(planted, f"simulation.planted[{n}]", PLANTED)
    for n, node in enumerate(_list(p.get("nodes"), "nodes") if fabric else ()):
        _fields(node, f"nodes[{n}]", MEMBER, ("name",))
        if "verdict" in node and node["verdict"] not in VERDICTS:  # `fleet` printed "node0 ([{}])"
            raise ShapeError(f"nodes[{n}].verdict: expected one of {', '.join(sorted(VERDICTS))}")
    for n, pair in enumerate(_list(p.get("pairs"), "pairs") if fabric else ()):
        if not isinstance(pair, dict):
            raise ShapeError(f"pairs[{n}]: expected an object")
    if fabric:
        _fabric_block(p)
    repair = p.get("repair")
    if isinstance(repair, dict):
        for n, outcome in enumerate(_list(repair.get("outcomes"), "repair.outcomes")):
            _fields(outcome, f"repair.outcomes[{n}]", OUTCOME, OUTCOME_NEEDS)
    for n, check in enumerate(_list(p.get("checks"), "checks")):
        _check(check, f"checks[{n}]")
    answer = p.get("answer")
    if isinstance(answer, dict):
        for n, finding in enumerate(_list(answer.get("findings"), "answer.findings")):
            _finding(finding, f"answer.findings[{n}]")


def check_verdict(p: dict[str, Any]) -> None:
    """A node report's verdict no better than its own checks (model.node_verdict), for a signed report
    to be verified: one that said PASS over a failed check was `verified: PASS` (exit 0) and headed
    `show` with PASS (2026-11-29 fuzzing). Worse than its checks is an aborted run's FAIL (runner),
    never a better word. (Not a shape: `show --unverified` still shows such a report, NOT VERIFIED.)"""
    verdicts = {c.get("verdict") for c in p.get("checks") or []}
    allowed = "FAIL" if "fail" in verdicts else "ERROR" if "error" in verdicts else "PASS"
    rank = {"PASS": 0, "ERROR": 1, "FAIL": 2}
    if p.get("verdict") in rank and rank[p["verdict"]] < rank[allowed]:
        failed = sum(c.get("verdict") in ("fail", "error") for c in p.get("checks") or [])
        raise ShapeError(f"verdict: {p['verdict']}, where its own checks hold {failed} that failed or could not "
                         f"run ({allowed}): the report contradicts itself")


def _check(c: Any, where: str) -> None:
    if not isinstance(c, dict):
        raise ShapeError(f"{where}: expected an object")
    for key in ("name", "subject", "message"):
        _text(c.get(key), f"{where}.{key}")
    if not isinstance(c.get("verdict"), str) or c["verdict"] not in VERDICTS:
        raise ShapeError(f"{where}.verdict: expected one of {', '.join(sorted(VERDICTS))}")
    for key in ("code", "key"):
        if c.get(key) is not None:
            _text(c[key], f"{where}.{key}")
    values = c.get("values", {})
    if not isinstance(values, dict):
        raise ShapeError(f"{where}.values: expected an object")
    for name, value in values.items():
        if not isinstance(value, dict) or not isinstance(value.get("unit", ""), str):
            raise ShapeError(f"{where}.values.{name}: expected an object with a value and a unit")
    if "thresholds" in c and not isinstance(c["thresholds"], list):
        raise ShapeError(f"{where}.thresholds: expected a list")
    for n, t in enumerate(_list(c.get("thresholds"), f"{where}.thresholds")):
        if not (isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("kind") in ("min", "max")
                and all(isinstance(t.get(k), (int, float)) and not isinstance(t.get(k), bool) for k in ("fail", "warn"))
                and isinstance(t.get("unit", ""), str) and set(t) <= {"name", "kind", "fail", "warn", "unit"}):
            raise ShapeError(f"{where}.thresholds[{n}]: expected a name, min or max, fail and warn numbers, a unit")
    if c.get("evidence") is not None and not isinstance(c["evidence"], dict):
        raise ShapeError(f"{where}.evidence: expected an object")
    # The NICs the run listed are the parts its findings name (answer.parts, answer.nics_of).
    if c.get("name") == "nic.inventory" and isinstance(c.get("evidence"), dict) and "nics" in c["evidence"]:
        nics = c["evidence"]["nics"]
        if not isinstance(nics, list):
            raise ShapeError(f"{where}.evidence.nics: expected a list")
        for n, nic in enumerate(nics):
            _fields(nic, f"{where}.evidence.nics[{n}]", NIC)


def _finding(f: Any, where: str) -> None:
    if not isinstance(f, dict):
        raise ShapeError(f"{where}: expected an object")
    for key in ("verdict", "check", "subject", "finding", "remediation"):
        _text(f.get(key), f"{where}.{key}")
    for key in ("code", "repair"):
        if f.get(key) is not None:
            _text(f[key], f"{where}.{key}")
    if f["verdict"] not in SHOWN_ORDER:  # a finding is of a failed, unjudged or warned check
        raise ShapeError(f"{where}.verdict: expected one of {', '.join(SHOWN_ORDER)}")
    if f.get("part") is not None:
        _fields(f["part"], f"{where}.part", PART)
    if not isinstance(f.get("more", []), list) or not all(isinstance(m, str) for m in f.get("more", [])):
        raise ShapeError(f"{where}.more: expected a list of text")
    escalation = f.get("escalation", 0)  # the repairs this finding came back after: none or more
    if isinstance(escalation, bool) or not isinstance(escalation, int) or escalation < 0:
        raise ShapeError(f"{where}.escalation: expected a whole number, 0 or more")


# The fields of the parts a face reads, by kind, where present: "text", "text?" (or null), "texts"
# (a list of text), "flag", "number", "whole?" (a whole number or null), "list", "object", "pairs"
# (a list of two names each), "textlists" (a list of lists of text), "textlists_by_name" and
# "text_by_name" (an object of those).
GPU = {"subject": "text", "name": "text?", "bus_id": "text?", "serial": "text?", "uuid": "text?", "index": "whole?",
       "sku": "text?"}
# The profile a run was judged by (spec.profile.Profile.summary): `show` prints its chain and notices.
PROFILE = {"name": "text?", "path": "text?", "sha256": "text?", "chain": "texts", "kind": "text?", "skus": "texts",
           "sku": "text?", "floors": "object", "notices": "texts"}
# A fabric report's block (fabric.report.build_predicate): its nodes, rails and tests by name; what it
# found bad (pairs of names for a node's rail and for a link); what it covered; the topology it read.
FABRIC = {"name": "text?", "launcher": "text?", "nodes": "texts", "rails": "texts", "tests": "texts",
          "group_tests": "texts", "rounds_reason": "text?", "bad": "object", "coverage": "object?",
          "topology": "object?", "groups": "object?", "schedule": "list"}
FABRIC_BAD = {"nodes": "texts", "rails": "texts", "inconclusive": "texts", "uplinks": "texts?", "leaves": "texts?",
              "stragglers": "texts", "suspects": "texts", "node_rails": "pairs", "links": "pairs"}
FABRIC_COVERAGE = {"pairs": "object?", "rails_untested": "texts", "ports_untested": "texts",
                   "uplinks_untested": "texts"}
FABRIC_PAIRS_COVERED = {"listed": "texts", "untested": "whole?", "tested": "whole?", "total": "whole?"}
FABRIC_TOPOLOGY = {"source": "text?", "leaves": "textlists_by_name", "parents": "text_by_name"}
FABRIC_GROUPS = {"together": "textlists", "rounds": "whole?", "size": "whole?"}
PLANTED = {"fault": "text?", "outcome": "text?", "why": "text?"}
# A group test's row (fabric.groups.row): `show` counts their outcomes.
GROUP_ROW = {"nodes": "texts", "kind": "text?", "outcome": "text?", "from": "texts", "error": "text?"}
# What a finding's part is (answer.Part): `show` names it by these.
PART = {"kind": "text?", "subject": "text?", "name": "text?", "index": "whole?", "bus_id": "text?", "serial": "text?"}
NIC = {"subject": "text", "name": "text?", "bus_id": "text?", "mac": "text?"}
PARTIAL = {"only": "texts", "skip": "texts", "checks": "texts", "gpus": "texts"}
SIMULATION = {"scenario": "text", "faults": "texts", "time_scale": "number", "nodes": "whole", "rails": "whole",
              "planted": "list", "replay": "text?", "captured_at": "text?", "compute": "text?", "unrecorded": "texts"}
SUMMARY = {"counts": "object", "failed": "texts"}
MEMBER = {"name": "text", "verdict": "text", "identity": "object"}  # a fabric run's node (archive.verified)
REPAIR = {"action": "text?", "named": "flag", "parts": "texts", "outcomes": "list", "previous": "object?"}
OUTCOME = {"part": "text?", "code": "text?", "code_now": "text?", "subject": "text", "check": "text?",
           "status": "text", "identity": "text?", "repaired": "flag"}
OUTCOME_NEEDS = ("subject", "status")  # every nodeqc has written them; a part's standing is read from them


def _fields(obj: Any, where: str, spec: dict[str, str], needs: tuple[str, ...] = ()) -> None:
    if not isinstance(obj, dict):
        raise ShapeError(f"{where}: expected an object")
    for key in needs:
        if key not in obj:
            raise ShapeError(f"{where}.{key}: missing")
    for key, kind in spec.items():
        if key not in obj:
            continue
        value, at = obj[key], f"{where}.{key}"
        if kind.endswith("?") and value is None:
            continue
        kind = kind.rstrip("?")
        if kind == "text":
            _text(value, at)
        elif kind == "texts" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ShapeError(f"{at}: expected a list of text")
        elif kind == "list" and not isinstance(value, list):
            raise ShapeError(f"{at}: expected a list")
        elif kind == "object" and not isinstance(value, dict):
            raise ShapeError(f"{at}: expected an object")
        elif kind == "pairs" and not (isinstance(value, list) and all(
                isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in value)):
            raise ShapeError(f"{at}: expected a list of pairs of names")
        elif kind == "textlists" and not (isinstance(value, list) and all(
                isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value)):
            raise ShapeError(f"{at}: expected a list of lists of text")
        elif kind == "textlists_by_name" and not (isinstance(value, dict) and all(
                isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values())):
            raise ShapeError(f"{at}: expected an object of lists of text")
        elif kind == "text_by_name" and not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
            raise ShapeError(f"{at}: expected an object of text")
        elif kind == "flag" and not isinstance(value, bool):
            raise ShapeError(f"{at}: expected true or false")
        elif kind in ("number", "whole") and (isinstance(value, bool) or
                                              not isinstance(value, int if kind == "whole" else (int, float))):
            raise ShapeError(f"{at}: expected a {'whole ' if kind == 'whole' else ''}number")


def _fabric_block(p: dict[str, Any]) -> None:
    """A fabric report's own block, as `show` reads it (report.render.render_fabric_report): each of
    its lists and objects was an internal error of a signed report's `show` when of another kind."""
    fab = p.get("fabric", {})
    _fields(fab, "fabric", FABRIC)
    for key, spec in (("bad", FABRIC_BAD), ("coverage", FABRIC_COVERAGE), ("topology", FABRIC_TOPOLOGY),
                      ("groups", FABRIC_GROUPS)):
        if fab.get(key) is not None:
            _fields(fab[key], f"fabric.{key}", spec)
    if isinstance((fab.get("coverage") or {}).get("pairs"), dict):
        _fields(fab["coverage"]["pairs"], "fabric.coverage.pairs", FABRIC_PAIRS_COVERED)
    for n, row in enumerate(_list(p.get("groups"), "groups")):
        _fields(row, f"groups[{n}]", GROUP_ROW)


def _numbers(p: dict[str, Any], text: bool = True) -> None:
    """ShapeError at the first number no device or nodeqc writes (see MAX_WHOLE), or text that is not
    Unicode (core.text.is_unicode), anywhere in `p`: walked without recursion, since json nests as deep as Python's
    own limit."""
    stack: list[tuple[Any, str]] = [(p, "")]
    while stack:
        value, where = stack.pop()
        if text and isinstance(value, str) and not value.isascii() and not is_unicode(value):  # one such host name stopped history, fleet and export
            raise ShapeError(f"{where[:200] or 'predicate'}: text with a lone surrogate (\\ud800-\\udfff), not Unicode")
        if isinstance(value, dict):
            for k in value:
                if text and not k.isascii() and not is_unicode(k):
                    raise ShapeError(f"{where[:200] or 'predicate'}: a key with a lone surrogate (\\ud800-\\udfff), not Unicode")
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{n}]") for n, v in enumerate(value))
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int) and abs(value) >= MAX_WHOLE:
            raise ShapeError(f"{where[:200]}: a whole number of {len(str(abs(value)))} digits, wider than any counter")
        elif isinstance(value, float) and not math.isfinite(value):
            raise ShapeError(f"{where[:200]}: expected a finite number, not {value}")


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(f"{where}: expected a list")
    return value


def _text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise ShapeError(f"{where}: expected text")


def _time(value: Any, where: str) -> None:
    _text(value, where)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ShapeError(f"{where}: expected a time (ISO 8601), not {value[:40]!r}") from None
    if parsed.tzinfo is None:
        # nodeqc writes UTC with its zone; one without was compared with those and stopped `fleet`
        # for the whole archive (the 2026-11-29 audit: "can't subtract offset-naive and offset-aware").
        raise ShapeError(f"{where}: expected a time with its zone (ISO 8601, e.g. ...Z), not {value[:40]!r}")
