"""What the stress judges share: a worker that did not come back as a result, one result per GPU,
the node's median and the figure well below it, wrong data as the verification found it, what a
healthy GPU of the node's SKU does; and the sizes, seed and timing tolerance the steps' params and
load proofs share."""

from __future__ import annotations

import statistics
from typing import Any, Callable

from nodeqc.backends.base import GpuInfo
from nodeqc.checks.common import Judgement, fmt, judge
from nodeqc.checks.diagnosis import Expected
from nodeqc.core.known_answer import relative_deficit_pct
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.spec.profile import Profile
from nodeqc.work.workers import (STATUS_ABORTED, STATUS_CRASH, STATUS_ERROR, STATUS_HANG, STATUS_LOST,
                                 STATUS_UNAVAILABLE, Outcome)

GIB = 1024 ** 3
MIB = 1024 ** 2
SEED = 20261122  # the same operands on every GPU: identical work, comparable results
# The plain load ends only once it has run its planned seconds (workloads.plain_load), which its result
# keeps to the millisecond: a load that ran short by more than that rounding stopped early (nodeqc's
# choice of tolerance). The host copies' minimum seconds are held to it too (pcie_load_short).
HELD_TOLERANCE_S = 0.001

# Errors raised by CUDA itself mean the GPU misbehaved; any other exception is nodeqc's own problem.
_CUDA_ERRORS = ("CUDARuntimeError", "CUDADriverError", "CUBLASError", "CuDNNError", "NCCLError")


def outcome_failure(name: str, subject: str, outcome: Outcome) -> CheckResult | None:
    """The result for a worker that did not come back with a result; None when it did."""
    status, detail = outcome.status, outcome.detail
    evidence = {"worker": {"status": status, "detail": detail, "elapsed_s": round(outcome.elapsed_s, 2),
                           **outcome.evidence}}
    first_line = detail.splitlines()[0] if detail else status
    if status == STATUS_HANG:
        return CheckResult(name, subject, Verdict.FAIL, f"hung: {first_line}", code="WORKER_HANG", evidence=evidence)
    if status == STATUS_CRASH:
        return CheckResult(name, subject, Verdict.FAIL, f"crashed: {first_line}", code="WORKER_CRASH", evidence=evidence)
    if status == STATUS_LOST:
        return CheckResult(name, subject, Verdict.FAIL, f"the GPU fell off the bus during the work ({first_line})",
                           code="GPU_LOST", evidence=evidence)
    if status == STATUS_UNAVAILABLE:
        return CheckResult(name, subject, Verdict.ERROR, first_line, code="CUDA_UNAVAILABLE", evidence=evidence)
    if status == STATUS_ERROR:
        gpu_fault = first_line.startswith(_CUDA_ERRORS)
        # Any other exception is nodeqc's own: its advice is to report it, not to reset or RMA the GPU
        # (the 2026-11-28 advice review: a ZeroDivisionError in the simulated NVLink said "RMA if it recurs").
        return CheckResult(name, subject, Verdict.FAIL if gpu_fault else Verdict.ERROR,
                           f"the work raised {first_line}", code="WORKER_ERROR" if gpu_fault else "INTERNAL_ERROR",
                           evidence=evidence)
    if status == STATUS_ABORTED:
        return CheckResult(name, subject, Verdict.SKIP, "the run was aborted", evidence=evidence)
    return None


def each_gpu(name: str, gpus: list[GpuInfo], outcomes: dict[int, Outcome],
             judge_one: Callable[[GpuInfo, dict[str, Any]], CheckResult]) -> list[CheckResult]:
    """A result per GPU: the worker's failure if it had one, else the judgement of what it returned."""
    return [outcome_failure(name, g.subject, outcomes[g.index]) or judge_one(g, outcomes[g.index].result)
            for g in gpus]


def nvlinks_promised(profile: Profile, gpus: list[GpuInfo]) -> dict[int, Any]:
    """Each GPU's NVLinks as health.nvlink counts them (the profile's promise, else the GPU's own): what
    a GPU-to-GPU step's diagnosis counts the links up against (nodeqc.checks.diagnosis.Observed)."""
    return {g.index: profile.get("gpu", "nvlink_links", g.nvlink_count) for g in gpus}


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def wrong_data(mismatch: dict[str, Any], unit: str = "element") -> str:
    """Where data came back wrong, as the verification found it: how many, the first, its bits."""
    e = mismatch["first"][0]
    return (f": {mismatch['count']} {unit}(s) wrong, first at index {e['index']} expected {e['expected']:.10g}, "
            f"got {e['actual']:.10g} (bits {e['xor']} flipped)")


def node_outlier(profile: Profile, value: float, median: float | None, peers: int, code: str, what: str,
                 unit: str) -> Judgement | None:
    """A figure well below the node's median; needs at least two GPUs to have a median worth the name.
    Said as one finding, numbers first: 'host-to-device 27.1 GB/s is 49.9 % below the node median
    54.2 GB/s (limit 10 %)'."""
    limit = profile.threshold("gpu", "max_outlier_pct")
    if median is None or peers < 2 or limit is None:
        return None
    deficit = round(relative_deficit_pct(value, median), 1)
    verdict = judge(limit, deficit, code, what, "%")
    if verdict.verdict is Verdict.PASS:
        return verdict
    level = limit.fail if verdict.verdict is Verdict.FAIL else limit.warn
    label = "limit" if verdict.verdict is Verdict.FAIL else "warning level"
    return Judgement(verdict.verdict, code, f"{what} {fmt(value, unit)} is {fmt(deficit, '%')} below the node median "
                                          f"{fmt(median, unit)} ({label} {fmt(level, '%')})")


def node_expected(gpus: list[GpuInfo]) -> Expected:
    """What a healthy GPU of the node's SKU does (the node's GPUs match: inventory checks that)."""
    return Expected.of(gpus[0]) if gpus else Expected()
