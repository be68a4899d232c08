"""Other processes on a GPU. Before the stress: a GPU another process computes on is not free to
be qualified (its figures would be shared, and the stress would disturb that job), so it is an
ERROR of the run for that GPU, naming the processes, never a FAIL of the hardware. During the
stress, telemetry keeps listing them; the diagnosis of a slow GPU names any that appeared."""

from __future__ import annotations

from typing import Any

from nodeqc.backends.base import GpuInfo, GpuProcess
from nodeqc.checks.common import skip
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.na import is_na

NAME = "stress.gpu_free"


def describe(processes: list[GpuProcess]) -> str:
    return ", ".join(p.describe() for p in processes)


def gpu_free(gpu: GpuInfo, others: Any) -> CheckResult:
    """`others`: the GPU's compute processes that are not nodeqc's own, or NA when the driver
    cannot list them."""
    if is_na(others):
        return skip(NAME, gpu.subject, "the driver does not list this GPU's compute processes, "
                    "so another job on it cannot be ruled out")
    values = {"processes": Value(len(others))}
    if not others:
        return CheckResult(NAME, gpu.subject, Verdict.PASS, "no other compute process on this GPU",
                           values=values, key="processes")
    return CheckResult(NAME, gpu.subject, Verdict.ERROR,
                       f"{len(others)} other compute process(es) on this GPU before the stress: {describe(others)}; "
                       "it sits out the stress", code="GPU_IN_USE", values=values,
                       evidence={"processes": [p.to_dict() for p in others]}, key="processes")
