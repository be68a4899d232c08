"""The shapes every check shares: verdicts, thresholds, measured values and results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from nodeqc.core.na import is_na, or_none


class Verdict(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @property
    def blocks_qualification(self) -> bool:
        """A FAIL, or an ERROR (a check that could not run has not shown the node is good)."""
        return self in (Verdict.FAIL, Verdict.ERROR)

    @staticmethod
    def worst(verdicts: "list[Verdict]") -> "Verdict":
        return max(verdicts, key=lambda v: v.severity, default=Verdict.PASS)


_SEVERITY = {Verdict.PASS: 0, Verdict.SKIP: 1, Verdict.WARN: 2, Verdict.FAIL: 3, Verdict.ERROR: 4}


@dataclass(frozen=True)
class Threshold:
    """A floor (`min`) or ceiling (`max`) with a warning band.

    Floor: value < fail fails, value < warn warns. Ceiling: value > fail fails, value > warn warns.
    A value exactly at a limit is on the good side of it.
    """

    name: str
    kind: str  # "min" or "max"
    fail: float
    warn: float
    unit: str = ""

    def judge(self, value: Any) -> Verdict:
        if is_na(value):
            raise ValueError(f"{self.name}: cannot judge a value that is not available")
        v = float(value)
        if self.kind == "min":
            if v < self.fail:
                return Verdict.FAIL
            return Verdict.WARN if v < self.warn else Verdict.PASS
        if v > self.fail:
            return Verdict.FAIL
        return Verdict.WARN if v > self.warn else Verdict.PASS

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.kind == "min":
            return f">= {_num(self.fail)}{unit}" + (f", warn below {_num(self.warn)}" if self.warn != self.fail else "")
        return f"<= {_num(self.fail)}{unit}" + (f", warn above {_num(self.warn)}" if self.warn != self.fail else "")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "fail": self.fail, "warn": self.warn,
                "unit": self.unit}


@dataclass(frozen=True)
class Value:
    value: Any
    unit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"value": or_none(self.value), "unit": self.unit}

    def __str__(self) -> str:
        if is_na(self.value):
            return "N/A"
        text = _num(self.value)  # a number with its digits; anything else as it is
        return f"{text} {self.unit}".strip()


@dataclass
class CheckResult:
    """One verdict on one subject (`node`, `gpu3`, `nic0`), with its evidence.

    `code` is a stable failure code (see nodeqc.core.codes) for WARN/FAIL/ERROR/SKIP; `key` names the
    value shown as the key figure in progress lines.
    """

    name: str
    subject: str
    verdict: Verdict
    message: str
    code: str | None = None
    values: dict[str, Value] = field(default_factory=dict)
    thresholds: list[Threshold] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    key: str | None = None

    @property
    def key_figure(self) -> str:
        if self.key and self.key in self.values:
            return f"{self.key}={self.values[self.key]}"
        return ""

    def to_dict(self) -> dict[str, Any]:
        from nodeqc.core.codes import advice

        return {
            "name": self.name,
            "subject": self.subject,
            "verdict": self.verdict.value,
            "code": self.code,
            "message": self.message,
            "remediation": advice(self.code, self.subject, self.evidence, self.verdict.value) if self.code else None,
            "values": {k: v.to_dict() for k, v in self.values.items()},
            "thresholds": [t.to_dict() for t in self.thresholds],
            "evidence": self.evidence,
            "key": self.key,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CheckResult":
        return cls(
            name=d["name"], subject=d["subject"], verdict=Verdict(d["verdict"]),
            message=d["message"], code=d.get("code"),
            values={k: Value(v.get("value"), v.get("unit", "")) for k, v in d.get("values", {}).items()},
            thresholds=[Threshold(**t) for t in d.get("thresholds", [])],
            evidence=d.get("evidence", {}), key=d.get("key"),
        )


def check_label(name: str, subject: str) -> str:
    """How a report's summary names one result, the check with its part: 'health.pcie_link gpu3'
    (summary.failed, the archive's and the fleet's lists of failed and warned checks)."""
    return f"{name} {subject}"


def node_verdict(results: list[CheckResult]) -> str:
    """FAIL where a check failed; else ERROR where a check could not run or judge (exit 2: not
    qualified, but nothing says the hardware is bad, so a fleet view must not count it a failure);
    else PASS (warnings allowed). The one word every face and file uses."""
    if any(r.verdict is Verdict.FAIL for r in results):
        return "FAIL"
    return "ERROR" if any(r.verdict.blocks_qualification for r in results) else "PASS"


def _num(x: Any) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int) or (math.isfinite(x) and float(x).is_integer() and abs(x) < 1e15):
        return str(int(x))
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"
