"""The signed report's predicate: which keys a node's qualification report carries and their shape,
built from a run's plain values (the runner gathers them; nodeqc.report.envelope signs the result).
Also what the report concludes on its own: a run that judged nothing, and when a qualification expires.
"""

from __future__ import annotations

import hashlib
import platform
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeqc import __version__
from nodeqc.backends.base import HostInfo
from nodeqc.core.model import CheckResult, Verdict, check_label
from nodeqc.report.answer import Answer, not_applicable, not_run
from nodeqc.spec.profile import Profile
from nodeqc.spec.selection import Selection
from nodeqc.work.sampler import TelemetrySummary

if TYPE_CHECKING:
    from nodeqc.spec.baseline import Baseline


def tally(results: list[CheckResult]) -> tuple[dict[str, int], list[str]]:
    """The results counted by verdict, and the `name subject` of each that blocks qualification."""
    counts = {v.value: sum(1 for r in results if r.verdict is v) for v in Verdict}
    failed = [check_label(r.name, r.subject) for r in results if r.verdict.blocks_qualification]
    return counts, failed


def build_predicate(*, verdict: str, status: str, results: list[CheckResult], the_answer: Answer,
                    profile: Profile, selection: Selection, quick: bool, host: HostInfo, driver: str, cuda: str,
                    gpus: list[dict[str, Any]], simulated: bool, simulation: dict[str, Any] | None,
                    telemetry: TelemetrySummary | None, burn_in: dict[str, Any] | None,
                    observed: dict[str, Any] | None, baseline: Baseline | None, journal: Path,
                    command: list[str], started_at: str, finished_at: str, duration_s: float, operator: str,
                    ticket: str | None, keyid: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The report's predicate. `gpus` as described by nodeqc.checks.inventory.describe_gpus; `observed`
    the platform as read for the baseline; `journal` the run's journal, already ended (its digest
    binds it to the report)."""
    counts, failed = tally(results)
    return {
        "verdict": verdict,
        "status": status,
        "simulated": simulated,
        "simulation": simulation,
        "profile": profile.summary(),
        "quick": quick,
        "node": {**host.to_dict(), "driver_version": driver, "cuda_version": cuda},
        "gpus": gpus,
        "checks": [r.to_dict() for r in results],
        "summary": {"counts": counts, "failed": failed},
        "answer": the_answer.to_dict(),
        "telemetry": telemetry.to_dict() if telemetry else None,
        "burn_in": burn_in,
        "journal": {"file": journal.name, "sha256": hashlib.sha256(journal.read_bytes()).hexdigest()},
        "tool": {"name": "nodeqc", "version": __version__, "python": platform.python_version(),
                 "command": command},
        "started_at": started_at,
        "finished_at": finished_at,
        "duration_s": duration_s,
        "operator": operator,
        "ticket": ticket,
        "signer": {"keyid": keyid},
        "partial": selection.to_dict(),
        "previous": previous,
        "repair": the_answer.repair,
        "platform": observed,
        "baseline": baseline.summary() if baseline is not None else None,
        "valid_until": valid_until(profile, status, selection.partial),
    }


def nothing_judged(results: list[CheckResult]) -> CheckResult | None:
    """A run in which no check reached a verdict has shown nothing of the node: an ERROR (exit 2)
    that says why each selected check did not run, never a pass. With `--only stress.burn` and
    another process on the GPU the run once said "PASS: 0 passed" and exited 0
    (shared/measurements/2026-11-26, item 4). A check that does not apply to this hardware
    (nodeqc.core.codes.NOT_APPLICABLE) left nothing untested, but judged nothing either: a run of those
    alone has shown nothing too. None where some check reached a verdict (PASS, WARN, FAIL, ERROR)."""
    if any(r.verdict is not Verdict.SKIP for r in results):
        return None
    skipped, na = not_run(results), not_applicable(results)
    said = [f"{e.count} not run: {e.reason} ({', '.join(e.checks)})" for e in skipped]
    if na:
        said.append(f"not applicable to this node: {'; '.join(na)}")
    message = ("no selected check reached a verdict, so nothing was judged"
               + (f": {'; '.join(said)}" if said else " (no check reported a result)"))
    return CheckResult("nodeqc.nothing_judged", "node", Verdict.ERROR, message, code="NOTHING_JUDGED",
                       evidence={"not_run": [e.to_dict() for e in skipped], "not_applicable": na})


def valid_until(profile: Profile, status: str, partial: bool) -> str | None:
    """When this qualification expires: the profile's valid_days after now. Only a complete, full
    run qualifies, so only it has one."""
    days = profile.data.get("valid_days")
    if not days or status != "complete" or partial:
        return None
    return (datetime.now(timezone.utc) + timedelta(days=days)).isoformat(timespec="seconds").replace("+00:00", "Z")
