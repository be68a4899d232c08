"""Two reports of a node side by side, check by check and GPU by GPU: verdicts that changed, key
figures with their deltas, and parts swapped (a GPU whose serial changed). NEW has regressed when a
result is worse than in OLD (pass -> warn or fail), a GPU is gone, or the node's verdict went from
PASS to FAIL in two complete runs.

Only results that completed in both reports are compared: a skipped check or one that could not run
(error) judged nothing, and in an aborted run the checks that judge the whole run (health, burn-in,
NIC counters) saw only part of it. Those are listed as not compared, never as a repair or regression;
a check both reports skipped for the same reason (not applicable to the GPU, no NIC peer given) is
left out of that list: nothing it judged before is missing now.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodeqc.core.figures import label
from nodeqc.core.model import Value
from nodeqc.core.text import clean

RANK = {"pass": 0, "warn": 1, "fail": 2}  # the verdicts of a check that completed
NOTABLE_PCT = 5.0  # a figure of an unchanged verdict is shown when it moved at least this much
# Checks that judge what the whole run saw (telemetry, counters from start to end): an aborted run
# stopped before they saw it all, so their verdict there is not a finished one.
RUN_LONG = ("health.", "burnin.", "nic.stability")
NOT_COMPARED_SHOWN = 6  # named per reason in the output; the count covers all


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclass(frozen=True)
class FigureChange:
    name: str
    old: Any
    new: Any
    unit: str = ""
    check: str | None = None  # the check whose figure it is: a key shared by checks is named by it

    @property
    def delta(self) -> float | None:
        return self.new - self.old if _is_number(self.old) and _is_number(self.new) else None

    @property
    def pct(self) -> float | None:
        d = self.delta
        return None if d is None or self.old == 0 else 100.0 * d / abs(self.old)

    @property
    def notable(self) -> bool:
        if self.old == self.new:
            return False
        pct = self.pct
        return pct is None or abs(pct) >= NOTABLE_PCT

    def __str__(self) -> str:
        text = f"{label(self.name, self.check)} {Value(self.old)} -> {Value(self.new, self.unit)}"
        if self.delta is not None:
            extra = [f"{self.delta:+.4g}"] + ([f"{self.pct:+.1f}%"] if self.pct is not None else [])
            text += f" ({', '.join(extra)})"
        return text


@dataclass
class Change:
    kind: str  # REGRESSED | FIXED | CHANGED
    name: str
    subject: str
    old: str | None  # verdict, None when the check is not in that report
    new: str | None
    figures: list[FigureChange] = field(default_factory=list)

    def __str__(self) -> str:
        verdicts = (f"{(self.old or 'not run').upper()} -> {(self.new or 'not run').upper()}"
                    if self.old != self.new else (self.new or "").upper())
        figures = "; ".join(str(f) for f in self.figures)
        return f"{self.kind:<10} {self.name:<24} {self.subject:<6} {verdicts}" + (f": {figures}" if figures else "")


@dataclass
class Comparison:
    old: dict[str, Any]
    new: dict[str, Any]
    changes: list[Change]
    swapped: list[tuple[str, Any, Any]]  # subject, old serial, new serial
    gpus_gone: list[str]
    gpus_added: list[str]
    quiet: int  # figure changes too small to show
    not_in_new: int  # results of OLD that NEW does not have (a partial or aborted run)
    not_compared: list[tuple[str, str]] = field(default_factory=list)  # ("check subject", why) not in both

    @property
    def regressed(self) -> bool:
        complete = self.old.get("status") == "complete" and self.new.get("status") == "complete"
        return (any(c.kind == "REGRESSED" for c in self.changes) or bool(self.gpus_gone)
                or (complete and self.old.get("verdict") == "PASS" and self.new.get("verdict") == "FAIL"))

    def lines(self, old_label: str = "OLD", new_label: str = "NEW") -> list[str]:
        old_node, new_node = self.old.get("node", {}), self.new.get("node", {})
        out = [f"compare: node {new_node.get('system_serial')} ({new_node.get('hostname')}), "
               f"profile {self.new.get('profile', {}).get('name')}"]
        other_node = old_node.get("system_serial") != new_node.get("system_serial")
        if other_node:  # only with `nodeqc compare --any-node`: a node is compared with its own reports
            out.append(f"  warning: different nodes: OLD is serial {old_node.get('system_serial')}, "
                       f"NEW is serial {new_node.get('system_serial')}: a GPU's serial differs because the node "
                       "does, not because a part was swapped")
        for tag, p, said in (("OLD", self.old, old_label), ("NEW", self.new, new_label)):
            out.append(f"  {tag}  {p.get('finished_at')}  {_result(p):<20} {said}")
        if _later(self.old, self.new):
            out.append("  warning: OLD finished after NEW: the reports may be given in the wrong order "
                       "(nodeqc compare OLD NEW); FIXED and REGRESSED below read from OLD to NEW as given")
        for subject, a, b in self.swapped:
            out.append(f"  {subject} serial {a} -> {b}" if other_node else
                       f"  {subject} serial changed: {a} -> {b} (part swapped)")
        out += [f"  {s} is in OLD but not in NEW" for s in self.gpus_gone]
        out += [f"  {s} is new in NEW" for s in self.gpus_added]
        out += [f"  {c}" for c in self.changes]
        by_reason: dict[str, list[str]] = {}
        for result, why in self.not_compared:
            by_reason.setdefault(why, []).append(result)
        for why, results in by_reason.items():
            more = len(results) - NOT_COMPARED_SHOWN
            out.append(f"  not compared ({why}): {', '.join(results[:NOT_COMPARED_SHOWN])}"
                       + (f" and {more} more" if more > 0 else ""))
        notes = []
        if self.quiet:
            notes.append(f"{self.quiet} smaller figure change(s) under {NOTABLE_PCT:g}% not shown")
        if self.new.get("status") == "aborted":
            notes.append("NEW was aborted: only the results it completed are compared")
        if self.new.get("partial"):
            notes.append("NEW is partial: not a qualification")
        if notes:
            out.append(f"  ({'; '.join(notes)})")
        verdicts = f"{_result(self.old)} -> {_result(self.new)}"
        if self.regressed:
            worse = sum(c.kind == "REGRESSED" for c in self.changes)
            out.append(f"REGRESSED: {worse} result(s) worse, {len(self.gpus_gone)} GPU(s) gone ({verdicts})")
        else:
            fixed = sum(c.kind == "FIXED" for c in self.changes)
            # An aborted NEW judged only what it completed: no regression there is not a clean bill.
            scope = " in what NEW completed" if self.new.get("status") == "aborted" else ""
            out.append(f"no regression{scope}: {fixed} result(s) better ({verdicts})")
        return [clean(line) for line in out]  # report fields may hold control characters


def _later(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether OLD finished after NEW (ISO 8601 UTC stamps compare as text); False where either lacks one."""
    a, b = old.get("finished_at"), new.get("finished_at")
    return isinstance(a, str) and isinstance(b, str) and a > b


def _result(p: dict[str, Any]) -> str:
    text = "ABORTED" if p.get("status") == "aborted" else str(p.get("verdict"))
    return text + (" (partial)" if p.get("partial") else "") + (" SIM" if p.get("simulated") else "")


def _figures(old: dict[str, Any], new: dict[str, Any]) -> dict[str, FigureChange]:
    """Every value of a check that both reports have, old -> new."""
    ov, nv = old.get("values") or {}, new.get("values") or {}
    key = new.get("key")
    names = ([key] if key in nv else []) + [k for k in nv if k != key]  # the key figure first
    check = str(new.get("name")) if new.get("name") else None
    return {k: FigureChange(k, ov[k].get("value"), nv[k].get("value"), nv[k].get("unit") or "", check)
            for k in names if k in ov}


def _unfinished(check: dict[str, Any] | None, report: dict[str, Any], tag: str) -> str | None:
    """Why a result did not complete in a report (None when it did)."""
    if check is None:
        return f"not in {tag}"
    verdict = check.get("verdict")
    if verdict not in RANK:
        return f"{verdict} in {tag}"
    if report.get("status") == "aborted" and str(check.get("name", "")).startswith(RUN_LONG):
        return f"{tag} aborted before it ended"
    return None


def _same_skip(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    """Both reports skipped the check for the same reason (its code)."""
    return (old is not None and new is not None and old.get("verdict") == new.get("verdict") == "skip"
            and old.get("code") == new.get("code"))


def _checks(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(str(c.get("name")), str(c.get("subject"))): c for c in report.get("checks") or []
            if isinstance(c, dict)}


def compare(old: dict[str, Any], new: dict[str, Any]) -> Comparison:
    """Compare two report predicates (OLD first): the results that completed in both."""
    old_checks, new_checks = _checks(old), _checks(new)
    changes: list[Change] = []
    not_compared: list[str] = []
    quiet = 0
    for key in list(new_checks) + [k for k in old_checks if k not in new_checks]:
        o, n = old_checks.get(key), new_checks.get(key)
        why = _unfinished(n, new, "NEW") or _unfinished(o, old, "OLD")
        if why and _same_skip(o, n):
            continue  # skipped alike in both (not applicable, no peer given): nothing was lost to say
        if why:
            not_compared.append((f"{key[0]} {key[1]}", why))
            continue
        assert o is not None and n is not None
        ov, nv = o["verdict"], n["verdict"]
        figures = _figures(o, n)
        moved = [f for f in figures.values() if f.old != f.new]
        if ov != nv:
            kind = "REGRESSED" if RANK[nv] > RANK[ov] else "FIXED"
            changes.append(Change(kind, key[0], key[1], ov, nv, moved))
        elif n.get("key") in figures and figures[n["key"]].notable:
            changes.append(Change("CHANGED", key[0], key[1], ov, nv, [figures[n["key"]]]))
            quiet += len(moved) - 1
        else:
            quiet += len(moved)
    order = {"REGRESSED": 0, "FIXED": 1, "CHANGED": 2}
    changes.sort(key=lambda c: order[c.kind])

    old_gpus = {g.get("subject"): g for g in old.get("gpus", [])}
    new_gpus = {g.get("subject"): g for g in new.get("gpus", [])}
    swapped = [(s, old_gpus[s].get("serial"), g.get("serial")) for s, g in new_gpus.items()
               if s in old_gpus and old_gpus[s].get("serial") != g.get("serial")]
    return Comparison(old, new, changes, swapped,
                      gpus_gone=[s for s in old_gpus if s not in new_gpus],
                      gpus_added=[s for s in new_gpus if s not in old_gpus],
                      quiet=quiet, not_in_new=sum(1 for k in old_checks if k not in new_checks),
                      not_compared=not_compared)
