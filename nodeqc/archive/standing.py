"""A node's open failures across its reports: the rule that a failure stays open until a report that
actually re-ran that check on that part judges it.

A report judges a check on a part when it holds that result with a verdict (pass, warn or fail). A
check it skipped, did not select (--only, --skip, --gpu) or could not run judged nothing, and the
run-long checks of an aborted run (health, burn-in, NIC counters: nodeqc.report.compare.RUN_LONG)
saw only part of the run and judged nothing either. So a partial or aborted run after a failing one
leaves that failure open: the fleet still lists it (with the report that judged it) and the next
re-test still says what became of it. Walking a node's reports newest first, each failure of a
report is open unless a newer report judged the same check on the same part; the walk ends at the
newest complete, full run (it judged every check its profile holds), which is also the oldest
report a failure can come from.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from nodeqc.core.model import check_label
from nodeqc.report.compare import RUN_LONG

JUDGED = ("pass", "warn", "fail")


def judged(predicate: dict[str, Any]) -> list[str]:
    """'check subject' (nodeqc.core.model.check_label) of each result this report judged."""
    aborted = predicate.get("status") == "aborted"
    out = []
    for c in predicate.get("checks") or []:
        if not isinstance(c, dict) or c.get("verdict") not in JUDGED:
            continue
        name = str(c.get("name"))
        if aborted and name.startswith(RUN_LONG):
            continue
        out.append(check_label(name, str(c.get("subject"))))
    return out


def complete_run(entry: Any) -> bool:
    """A complete, full run: it judged every check of its profile, so nothing older stays open."""
    return entry.status == "complete" and not entry.partial


def open_labels(entries: Iterable[Any], judged_of: Callable[[Any], list[str]]) -> list[tuple[str, Any]]:
    """(label, entry) of each failure (summary.failed) still open among a node's entries, newest
    first; `judged_of(entry)` gives what that report judged. Fabric reports are not the node's."""
    seen: set[str] = set()
    out: list[tuple[str, Any]] = []
    for e in entries:
        if e.fabric:
            continue
        for label in e.failed:
            if label not in seen:
                out.append((label, e))
                seen.add(label)
        seen.update(judged_of(e))
        if complete_run(e):
            break
    return out


def walked(entries: Iterable[Any]) -> list[Any]:
    """The entries open_labels reads: newest first, down to the newest complete, full run."""
    out = []
    for e in entries:
        if e.fabric:
            continue
        out.append(e)
        if complete_run(e):
            break
    return out


def open_failures(history: list[tuple[Any, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The open failures of a node, each as nodeqc.report.answer.failures_of gives them plus the
    report that judged it ('report', 'path', 'finished_at'), from (entry, predicate) newest first."""
    from nodeqc.report.answer import failures_of

    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for entry, predicate in history:
        if entry.fabric:
            continue
        for f in failures_of(predicate):
            label = check_label(str(f.get("check")), str(f.get("subject")))
            if label not in seen:
                out.append({**f, "report": entry.path.name, "path": str(entry.path),
                            "finished_at": entry.finished_at})
                seen.add(label)
        seen.update(judged(predicate))
        if complete_run(entry):
            break
    return out
