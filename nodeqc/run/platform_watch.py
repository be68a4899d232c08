"""The platform watched over a run: its PCIe error counters (AER) and memory errors (EDAC) from the
start to the end, its kernel log read between steps, and the node observed for its baseline and the
report. The runner starts it before the first check and judges it in the host phase."""

from __future__ import annotations

import subprocess
from typing import Any, Callable

from nodeqc.backends.base import GpuInfo, HostInfo, NicInfo
from nodeqc.backends.kernel_log import MAX_RECORDS
from nodeqc.checks import host_health
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.run.events import Event, Notice
from nodeqc.spec.profile import Profile

# The host checks that read the live machine (sysfs, the kernel log): said not run, one result
# each, where the run has no backend for them (a replay) or could not read them.
HOST_HEALTH_CHECKS = ("host.edac", "host.aer", "host.kernel_log")


class PlatformWatch:
    """The platform over a run: its error counters and kernel log from the start, its observation
    (for the baseline and the report). Without a platform backend every result says it was not
    watched; an error reading sysfs becomes a notice, never a failed run."""

    def __init__(self, platform: Any, absent: str = "this run has no backend for the platform"):
        self.platform = platform
        self._absent = absent  # why there is no platform to watch, said by each check it would judge
        self.unobserved: str | None = None  # why the node could not be observed for its baseline
        self._unreadable: str | None = None
        self.observed: dict[str, Any] | None = None
        self._bus_ids: list[str] = []
        self._names: dict[str, str] = {}
        self._start: Any = None
        self._log: Any = None
        self._records: list[Any] = []  # the kernel log's records read so far
        self._log_stopped: str | None = None  # why reading it failed part way, if it did
        self._emit: Callable[[Event], None] = lambda e: None

    def start(self, gpus: list[GpuInfo], nics: list[NicInfo], emit: Callable[[Event], None]) -> None:
        self._emit = emit
        if self.platform is None:
            return
        self._bus_ids = [g.bus_id for g in gpus if isinstance(g.bus_id, str)] + \
            [n.bus_id for n in nics if isinstance(n.bus_id, str) and not n.virtual]
        try:
            self._log = self.platform.kernel_log()
            self._start = self.platform.counters(self._bus_ids)
            bridges: dict[str, list[str]] = {}
            names = host_health.device_names(gpus, nics, {})
            for bus in self._bus_ids:
                fn = self.platform.pci(bus)
                for b in fn.bridges if fn else []:
                    bridges.setdefault(b, []).append(names.get(bus, bus))
            self._names = host_health.device_names(gpus, nics, bridges)
        except OSError as e:
            emit(Notice("warning", f"host health not watched: cannot read sysfs: {e}"))
            self._start = None
            self._unreadable = f"cannot read sysfs: {e}"

    def observe(self, gpus: list[GpuInfo], driver: str, cuda: str, host: HostInfo, nics: list[NicInfo] | None) -> None:
        """`nics` None: this run has no NIC backend (what it would read is said unread, for the same
        reason as the platform's absence)."""
        from nodeqc.spec.baseline import observe

        try:
            self.observed = observe(gpus, driver, cuda, host, nics, self.platform, self._absent)
        except OSError as e:
            self._emit(Notice("warning", f"the node's platform could not be read: {e}"))
            self.unobserved = f"the node's platform could not be read: {e}"

    def drain_kernel_log(self) -> None:
        """Read what the kernel logged so far, between steps and burn-in windows: the ring buffer
        holds about 1 MiB (a few thousand lines), so a run of hours read only at its end could lose
        its first lines to it."""
        if self._log is not None and self._log_stopped is None and len(self._records) < MAX_RECORDS:
            try:
                self._records += self._log.new_records()
            except (OSError, subprocess.SubprocessError, ValueError) as e:  # a read error, journalctl hung
                self._records += getattr(e, "records", [])  # what a reader cut short had read (LogCutShort)
                self._log_stopped = f"{type(e).__name__}: {e}"
            if len(self._records) >= MAX_RECORDS and self._log_stopped is None:
                # A flood: its first lines say what it was; what it hides after is said unjudged.
                self._log_stopped = f"it logged {len(self._records)} lines, the most nodeqc reads in a run"

    def health_results(self, profile: Profile) -> list[CheckResult]:
        if self.platform is None or self._start is None:
            # Never silent: each check it would have judged says why it did not run.
            code, why = (("HOST_NOT_HERE", self._absent) if self.platform is None else
                         ("HOST_UNREADABLE", self._unreadable or "the platform was not read at the start"))
            return [CheckResult(name, "node", Verdict.SKIP, f"not run: {why}", code=code) for name in HOST_HEALTH_CHECKS]
        end = self.platform.counters(self._bus_ids)
        self.drain_kernel_log()
        records = self._records
        unreadable = getattr(self._log, "reason", None)
        return (host_health.edac(self._start, end, profile) + host_health.aer(self._start, end, self._names, profile)
                + host_health.kernel_log(records, getattr(self._log, "source", ""), unreadable, self._names, profile,
                                         lost=getattr(self._log, "lost", 0), stopped=self._log_stopped,
                                         own_work=True))

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
