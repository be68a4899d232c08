"""Helpers shared by the check families: judging a value against a threshold, and folding several
findings about one subject into one result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nodeqc.model import CheckResult, Threshold, Value, Verdict
from nodeqc.na import is_na


@dataclass(frozen=True)
class Finding:
    verdict: Verdict
    code: str | None
    message: str


def judge(threshold: Threshold | None, value: Any, code: str, what: str, unit: str = "") -> Finding:
    """One value against one limit. No limit in the profile: the value is reported, not judged."""
    shown = f"{what} {fmt(value, unit)}"
    if threshold is None:
        return Finding(Verdict.PASS, None, f"{shown} (no limit set)")
    verdict = threshold.judge(value)
    if verdict is Verdict.PASS:
        return Finding(verdict, None, f"{shown}, limit {threshold.describe()}")
    side = "below" if threshold.kind == "min" else "above"
    level = threshold.fail if verdict is Verdict.FAIL else threshold.warn
    label = "limit" if verdict is Verdict.FAIL else "warning level"
    return Finding(verdict, code, f"{shown} is {side} the {label} {fmt(level, threshold.unit)}")


def fold(name: str, subject: str, findings: list[Finding], values: dict[str, Value],
         thresholds: list[Threshold | None], key: str | None = None,
         evidence: dict[str, Any] | None = None) -> CheckResult:
    """One result from several findings: the worst verdict wins, and its code and message lead."""
    worst = max(findings, key=lambda f: f.verdict.severity)
    others = [f.message for f in findings if f is not worst and f.verdict.severity >= Verdict.WARN.severity]
    message = "; ".join([worst.message] + others)
    return CheckResult(name=name, subject=subject, verdict=worst.verdict, message=message,
                       code=worst.code, values=values, thresholds=[t for t in thresholds if t],
                       evidence=evidence or {}, key=key)


def skip(name: str, subject: str, message: str, code: str | None = None,
         values: dict[str, Value] | None = None) -> CheckResult:
    return CheckResult(name=name, subject=subject, verdict=Verdict.SKIP, message=message, code=code,
                       values=values or {})


def fmt(value: Any, unit: str = "") -> str:
    return str(Value(value, unit)) if not is_na(value) else "N/A"
