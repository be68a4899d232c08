"""The NICs' traffic for one run: planned once, started beside the GPUs' load where it fits, waited
for and judged after the GPU steps. The runner holds one NicTraffic and calls it; nothing else does."""

from __future__ import annotations

from typing import Any, Callable

from nodeqc.backends.base import GpuInfo, NicInfo, TrafficSession
from nodeqc.checks import nic as nic_checks
from nodeqc.core.model import CheckResult
from nodeqc.run.events import Notice
from nodeqc.spec.peers import Peer, parse_peers
from nodeqc.spec.profile import Profile
from nodeqc.spec.selection import CHECKS, Selection

NIC_CHECKS = CHECKS["nic"]
# A traffic plan has at most two rounds, one after the other: TCP (iperf3), then RDMA (ib_write_bw).
MAX_ROUNDS = 2


class NicTraffic:
    def __init__(self, nics: Any, profile: Profile, quick: bool, selection: Selection, peers: list[Peer] | None,
                 emit: Callable[[Any], None]):
        self.nics, self.profile, self.quick, self.selection = nics, profile, quick, selection
        self.peers, self.emit = peers, emit
        self.plan: nic_checks.NicPlan | None = None
        self.session: TrafficSession | None = None

    @property
    def selected(self) -> bool:
        return self.nics is not None and any(self.selection.includes(f"nic.{name}") for name in NIC_CHECKS)

    @property
    def traffic_selected(self) -> bool:
        return self.nics is not None and (self.selection.includes("nic.tcp") or self.selection.includes("nic.rdma"))

    def start(self, nics_start: list[NicInfo], gpus: list[GpuInfo], total_s: float | None = None) -> None:
        """Start the traffic in the background: a TCP round (iperf3 on every NIC at once), then an RDMA
        round (ib_write_bw on every RDMA port at once), the NICs' PCIe links read meanwhile. Each round
        lasts the profile's traffic_s, or the rounds share total_s (burn-in: the burn's length). Does
        nothing without NICs, or when traffic was started already."""
        if self.nics is None or self.plan is not None:
            return
        peers = self.peers or parse_peers(self.profile.get("nic", "peers", []))
        plan = nic_checks.select(nics_start, self.profile, {p.nic for p in peers if p.nic})
        plan = nic_checks.plan_traffic(plan, peers, self.profile, self.round_s, self.nics.missing_tool, gpus, total_s)
        for line in nic_checks.skip_warnings(plan):
            if self.selection.includes(line.partition(" ")[0]):  # unselected checks say nothing
                self.emit(Notice("warning", line))
        self.plan = plan
        if plan.rounds:
            self.emit(Notice("info", nic_checks.traffic_summary(plan)))
            self.session = self.nics.start_traffic(plan.rounds, sorted({j.nic for j in plan.jobs}))

    @property
    def round_s(self) -> float:
        return nic_checks.traffic_seconds(self.profile, self.quick)

    def start_beside(self, gpu_s: float, nics_start: list[NicInfo], gpus: list[GpuInfo],
                     total_s: float | None = None) -> None:
        """Start the traffic while the GPUs hold a load of gpu_s seconds (the burn), when traffic is
        selected and its rounds end within that load (or share it: total_s). The NIC checks then cost
        the run no time of their own: about 10 s of a quick run on a node with NICs and peers (issue
        30). Traffic longer than the burn starts after the GPU steps instead, so no GPU copy over PCIe
        (stress.pcie_bandwidth, whose switch the NICs may share) is measured beside it."""
        if self.traffic_selected and (total_s is not None or MAX_ROUNDS * self.round_s <= gpu_s):
            self.start(nics_start, gpus, total_s)

    def results(self, nics_start: list[NicInfo], gpus: list[GpuInfo], aborted: Callable[[], bool]) -> list[CheckResult]:
        """Judge the NICs: the traffic (started now unless it was beside the GPUs), then their state at
        the end of the run against the start. None when aborted while waiting."""
        self.start(nics_start, gpus)
        assert self.plan is not None
        outcomes, links = [], {}
        if self.session is not None:
            self.session.wait(aborted)
            if aborted():
                return []  # the run's end kills the traffic
            session, self.session = self.session, None
            outcomes, links = session.stop(), session.links
        return nic_checks.nic_results(self.plan, outcomes, links, self.nics.nics(), self.profile)

    def kill(self) -> None:
        """No traffic tool outlives the run (abort, or an error elsewhere)."""
        session, self.session = self.session, None
        if session is not None:
            try:
                session.stop(kill=True)
            except Exception:  # noqa: BLE001 - the run's own outcome is what gets reported
                pass
