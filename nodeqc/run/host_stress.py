"""The full run's host stress: every CPU on known answers, memory bandwidth, NVMe (fio), optical
modules, each judged as its tool ends, unless the run was aborted while it ran. The runner calls
host_stress_phase once; nothing else does."""

from __future__ import annotations

from typing import Any, Callable

from nodeqc.backends.base import NicInfo
from nodeqc.backends.host_stress import HostStress
from nodeqc.checks import host_stress as host_stress_checks
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.run.events import Event, Notice
from nodeqc.spec.profile import Profile
from nodeqc.spec.selection import Selection

# The host checks that load the live machine: said not run, one result each, where the run has no
# backend for them (a replay). Those that read it: nodeqc.run.platform_watch.HOST_HEALTH_CHECKS.
HOST_STRESS_CHECKS = ("host.cpu_stress", "host.memory_bandwidth", "host.nvme", "host.optics")


def host_stress_phase(stress: HostStress | None, no_host_reason: str, gpus_left: bool, profile: Profile,
                      selection: Selection, nics: list[NicInfo], aborted: Callable[[], bool],
                      publish: Callable[[list[CheckResult]], None], emit: Callable[[Event], None]) -> None:
    """Run and judge the host stress the selection asks for, publishing each check as it ends.
    `gpus_left`: whether any GPU still works (none: the node has failed already, and minutes of host
    load would not change that)."""
    if stress is None:
        publish([CheckResult(name, "node", Verdict.SKIP, f"not run: {no_host_reason}", code="HOST_NOT_HERE")
                 for name in HOST_STRESS_CHECKS])
        return
    if not gpus_left:
        publish([CheckResult("host.cpu_stress", "node", Verdict.SKIP, "host stress not run: no working GPUs, so "
                             "the node has failed already", code="NO_GPUS")])
        return

    def judge_tool(name: str, measure: Callable[[], Any], judge: Callable[[Any], list[CheckResult]],
                   signal_codes: tuple[str, ...] = ()) -> None:
        """Judge what a tool measured. Where the run was aborted while it ran, what its death may have
        caused is set aside: scancel, systemd's stop, `timeout` and Ctrl-C signal the run's whole
        process group, the tool's processes too, and dead CPU workers, a broken pool or fio's exit
        read as HOST_CPU_STRESS_DIED, an internal error or NVME_FIO. Those, and every result that
        could not judge (ERROR), are listed as aborted; a finding no signal makes (a core's wrong
        answers, HOST_CPU_WRONG) and a pass stand."""
        def set_aside(check: str, subject: str, evidence: dict[str, Any] | None = None) -> CheckResult:
            return CheckResult(check, subject, Verdict.SKIP, "not judged: the run was aborted while it ran",
                               code="RUN_ABORTED", evidence=evidence or {})

        try:
            measured = measure()
        except Exception:
            if not aborted():
                raise
            publish([set_aside(name, "node")])
            return
        results = judge(measured)
        if aborted():
            results = [set_aside(r.name, r.subject, {"tool_said": r.message})
                       if r.verdict is Verdict.ERROR or r.code in signal_codes else r for r in results]
        publish(results)

    if selection.includes("host.cpu_stress") and not aborted():
        seconds = float(profile.get("host", "stress_s", 60))
        emit(Notice("info", f"host stress: every CPU on known answers for {seconds:g} s"))
        judge_tool("host.cpu_stress", lambda: stress.cpu(seconds),
                   lambda outcomes: [host_stress_checks.cpu(outcomes, seconds)])
    if selection.includes("host.memory_bandwidth") and not aborted():
        judge_tool("host.memory_bandwidth", stress.memory_bandwidth,
                   lambda gbps: [host_stress_checks.memory_bandwidth(gbps, profile)])
    if selection.includes("host.nvme") and not aborted():
        missing = stress.missing_tool("fio")

        def fio_runs() -> list[Any]:
            if missing:
                return []
            scratch = profile.get("host", "fio_scratch")
            return ([stress.fio(t, 30, scratch=False) for t in profile.get("host", "fio_targets", [])]
                    + ([stress.fio(scratch, 30, scratch=True)] if scratch else []))
        judge_tool("host.nvme", fio_runs, lambda runs: host_stress_checks.nvme(runs, missing, profile),
                   signal_codes=("NVME_FIO",))
    if selection.includes("host.optics") and not aborted() and profile.get("host", "optics", True):
        from nodeqc.backends.optics import read_optics

        judge_tool("host.optics", lambda: read_optics(stress, [n for n in nics if not n.virtual and n.interface]),
                   lambda read: host_stress_checks.optics(read.modules, read.ethtool_missing, read.links,
                                                          read.notes, read.unread, read.unparsed))
