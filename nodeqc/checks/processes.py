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
from nodeqc.core.text import few

NAME = "stress.gpu_free"


# The processes a result lists: a technician finds a few by pid, and the count says the rest. A node
# that listed tens of thousands made one message of 1.3 MB (the 2026-11-29 audit); the message names
# four (text.few), the evidence 64.
MOST_LISTED = 64


def describe(processes: list[GpuProcess]) -> str:
    return few([p.describe() for p in processes])


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
                       evidence={"processes": [p.to_dict() for p in others[:MOST_LISTED]],
                                 **({"processes_not_listed": len(others) - MOST_LISTED} if len(others) > MOST_LISTED else {})},
                       key="processes")
