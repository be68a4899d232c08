"""Stress checks: the work that runs on the GPUs in worker processes, and the verdicts on what came
back. A worker that hung, crashed or lost its GPU is a failure of that GPU with the evidence."""

from __future__ import annotations

from nodeqc.backends.base import GpuInfo
from nodeqc.model import CheckResult, Value, Verdict
from nodeqc.profile import Profile
from nodeqc.workers import (STATUS_ABORTED, STATUS_CRASH, STATUS_ERROR, STATUS_HANG, STATUS_LOST,
                            STATUS_UNAVAILABLE, Outcome, Task)

# Errors raised by CUDA itself mean the GPU misbehaved; any other exception is nodeqc's own problem.
_CUDA_ERRORS = ("CUDARuntimeError", "CUDADriverError", "CUBLASError", "CuDNNError", "NCCLError")


def outcome_failure(name: str, gpu: GpuInfo, outcome: Outcome) -> CheckResult | None:
    """The result for a worker that did not come back with a result; None when it did."""
    status, detail = outcome.status, outcome.detail
    evidence = {"worker": {"status": status, "detail": detail, "elapsed_s": round(outcome.elapsed_s, 2),
                           **outcome.evidence}}
    first_line = detail.splitlines()[0] if detail else status
    if status == STATUS_HANG:
        return CheckResult(name, gpu.subject, Verdict.FAIL, f"hung: {first_line}", code="WORKER_HANG", evidence=evidence)
    if status == STATUS_CRASH:
        return CheckResult(name, gpu.subject, Verdict.FAIL, f"crashed: {first_line}", code="WORKER_CRASH", evidence=evidence)
    if status == STATUS_LOST:
        return CheckResult(name, gpu.subject, Verdict.FAIL, f"the GPU fell off the bus during the work ({first_line})",
                           code="GPU_LOST", evidence=evidence)
    if status == STATUS_UNAVAILABLE:
        return CheckResult(name, gpu.subject, Verdict.ERROR, first_line, code="CUDA_UNAVAILABLE", evidence=evidence)
    if status == STATUS_ERROR:
        gpu_fault = first_line.startswith(_CUDA_ERRORS)
        return CheckResult(name, gpu.subject, Verdict.FAIL if gpu_fault else Verdict.ERROR,
                           f"the work raised {first_line}", code="WORKER_ERROR", evidence=evidence)
    if status == STATUS_ABORTED:
        return CheckResult(name, gpu.subject, Verdict.SKIP, "the run was aborted", evidence=evidence)
    return None


def burn_seconds(profile: Profile, quick: bool) -> float:
    return float(profile.get("run", "quick_burn_s" if quick else "burn_s"))


def burn_tasks(gpus: list[GpuInfo], profile: Profile, quick: bool) -> list[Task]:
    seconds = burn_seconds(profile, quick)
    return [Task("burn", g.index, {"seconds": seconds, "bus_id": g.bus_id}, seconds) for g in gpus]


def burn_result(gpu: GpuInfo, outcome: Outcome, profile: Profile) -> CheckResult:
    name = "stress.burn"
    failure = outcome_failure(name, gpu, outcome)
    if failure:
        return failure
    seconds = outcome.result["seconds"]
    return CheckResult(name, gpu.subject, Verdict.PASS, f"kept the GPU fully loaded for {seconds:g} s",
                       values={"seconds": Value(seconds, "s"), "steps": Value(outcome.result["steps"])},
                       key="seconds")
