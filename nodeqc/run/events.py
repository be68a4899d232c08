"""The runner's one event stream. The CLI renders it to stderr, the GUI to widgets, the journal to
disk. Events are plain data; `to_dict` gives their journal form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodeqc.backends.base import GpuSample
from nodeqc.core.model import CheckResult


@dataclass
class RunStarted:
    run_id: str
    started_at: str
    profile: dict[str, Any]
    simulated: bool
    node: dict[str, Any]
    gpus: list[dict[str, Any]]
    files: dict[str, str]
    type: str = "run_started"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CheckStarted:
    name: str
    subjects: list[str]
    t: float
    type: str = "check_started"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CheckProgress:
    name: str
    subject: str
    fraction: float
    figures: dict[str, Any] = field(default_factory=dict)
    type: str = "check_progress"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CheckFinished:
    result: CheckResult
    t: float
    type: str = "check_finished"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "t": self.t, "result": self.result.to_dict()}


@dataclass
class TelemetrySampled:
    t: float
    samples: dict[str, GpuSample | None]  # subject -> reading (None: the GPU stopped answering)
    type: str = "telemetry"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "t": self.t,
                "samples": {k: (v.to_dict() if v else None) for k, v in self.samples.items()}}


@dataclass
class Notice:
    level: str  # info | warning | error | progress (how a long step stands: shown as it comes, not kept)
    text: str
    type: str = "notice"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunFinished:
    verdict: str
    status: str  # complete | aborted
    report_path: str
    counts: dict[str, int]
    failed: list[str]
    answer: Any = None  # nodeqc.report.answer.Answer: what failed, where, what to do; what did not run
    planted: list[dict[str, str]] | None = None  # a simulated node's planted faults (nodeqc.run.planted)
    type: str = "run_finished"

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["answer"] = self.answer.to_dict() if self.answer is not None else None
        return d


Event = RunStarted | CheckStarted | CheckProgress | CheckFinished | TelemetrySampled | Notice | RunFinished
