"""Helpers shared by the check families: judging a value against a threshold, and folding several
findings about one subject into one result."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from nodeqc.core.model import CheckResult, Threshold, Value, Verdict


@dataclass(frozen=True)
class Judgement:
    """One judgement within a check: a verdict, its code, its message. fold() makes one result of
    several. (What a person reads after a run, one per failing part, is nodeqc.report.answer.Finding.)"""

    verdict: Verdict
    code: str | None
    message: str


def judge(threshold: Threshold | None, value: Any, code: str, what: str, unit: str = "") -> Judgement:
    """One value against one limit. No limit in the profile: the value is reported, not judged."""
    shown = f"{what} {fmt(value, unit)}"
    if threshold is None:
        return Judgement(Verdict.PASS, None, f"{shown} (no limit set)")
    verdict = threshold.judge(value)
    if verdict is Verdict.PASS:
        return Judgement(verdict, None, f"{shown}, limit {threshold.describe()}")
    side = "below" if threshold.kind == "min" else "above"
    level = threshold.fail if verdict is Verdict.FAIL else threshold.warn
    label = "limit" if verdict is Verdict.FAIL else "warning level"
    value_text, level_text = _told_apart(value, level, threshold.kind)
    return Judgement(verdict, code, f"{what} {_with_unit(value_text, unit)} is {side} the {label} "
                                  f"{_with_unit(level_text, threshold.unit)}")


def _told_apart(value: Any, level: float, kind: str) -> tuple[str, str]:
    """A value on the wrong side of a level and the level, as numbers a message shows: with the
    digits it takes for the value to read as on its side (49.99 TFLOP/s against a floor of 50 reads
    '50.0' at the usual one decimal: 'fp32 sustained 50.0 TFLOP/s is below the limit 50')."""
    value_text, level_text = fmt(value), fmt(level)
    # fmt shows three significant digits at least (model._num), so more are tried from four; 17
    # tell any two different doubles apart (a value is never judged past a level it equals).
    digits = 4
    while digits <= 17 and not (float(value_text) < float(level_text) if kind == "min"
                                else float(value_text) > float(level_text)):
        value_text, level_text = _at_most(value, digits), _at_most(level, digits)
        digits += 1
    return value_text, level_text


def _at_most(x: Any, digits: int) -> str:
    """x with `digits` significant digits, or fewer where they say it exactly (0.3, not 0.29999999999999999)."""
    text, shortest = f"{float(x):.{digits}g}", repr(float(x))
    return shortest if len(shortest) < len(text) else text


def _with_unit(text: str, unit: str) -> str:
    return f"{text} {unit}".strip()


def fold(name: str, subject: str, findings: list[Judgement], values: dict[str, Value],
         thresholds: list[Threshold | None], key: str | None = None,
         evidence: dict[str, Any] | None = None) -> CheckResult:
    """One result from several findings: the worst verdict wins, and its code and message lead."""
    worst = max(findings, key=lambda f: f.verdict.severity)
    others = [f.message for f in findings if f is not worst and f.verdict.severity >= Verdict.WARN.severity]
    message = "; ".join([worst.message] + others)
    return CheckResult(name=name, subject=subject, verdict=worst.verdict, message=message,
                       code=worst.code, values=values, thresholds=[t for t in thresholds if t],
                       evidence=evidence or {}, key=key)


# How a check says NVML gave it nothing to read, at the end of its SKIP message (checks/health.py).
# A replay says it of its capture instead (as_replayed): "this GPU" would be the captured one, which
# may well have answered, the capture being made by a nodeqc that did not ask.
ON_THIS_GPU = "on this GPU"
IN_THE_CAPTURE = "in the replayed capture (see the report's `replayed` line)"


def as_replayed(result: CheckResult) -> CheckResult:
    """RESULT as a replay says it: a SKIP for want of an NVML answer names the capture, not the GPU."""
    if result.verdict is not Verdict.SKIP or not result.message.endswith(ON_THIS_GPU):
        return result
    return replace(result, message=result.message[:-len(ON_THIS_GPU)] + IN_THE_CAPTURE)


def skip(name: str, subject: str, message: str, code: str | None = None,
         values: dict[str, Value] | None = None) -> CheckResult:
    return CheckResult(name=name, subject=subject, verdict=Verdict.SKIP, message=message, code=code,
                       values=values or {})


def fmt(value: Any, unit: str = "") -> str:
    return str(Value(value, unit))  # N/A for a value not available (Value.__str__)
