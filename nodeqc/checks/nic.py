"""NICs: count, link (state, speed, MTU, InfiniBand ports), the PCIe link under traffic, link
stability over the run, and TCP and RDMA throughput against the link's own speed.

Which NICs: those the profile's `[nic] match` (interface name patterns) and `drivers` select, or every
physical NIC when the profile selects none; and any NIC a --nic-peer names. Every NIC listed is
named `nicN` by its position (physical NICs in PCI order first), as GPUs are by slot, and its
interface name leads every message.

Traffic runs in rounds, each on every NIC at once: TCP (iperf3), then RDMA (ib_write_bw), so the
two never share a link they are measuring. Without a peer, TCP is skipped (saying what to pass) and
RDMA runs in loopback on each active HCA port: server and client on the same port, pinned to the
HCA's NUMA node, from the GPU nearest the NIC when the profile asks for GPUDirect.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from nodeqc.backends.base import MAX_PORT_GBIT, GpuInfo, IbPort, NicInfo, TrafficJob, TrafficOutcome, normalise_bus_id
from nodeqc.checks.common import Judgement, fmt, fold, judge, skip
from nodeqc.core.model import CheckResult, Threshold, Value, Verdict
from nodeqc.core.na import NA, is_na
from nodeqc.core.text import subjects_text
from nodeqc.spec.peers import IB_WRITE_BW_PORT, IPERF3_PORT, Peer
from nodeqc.spec.profile import Profile

NO_GROWTH = Threshold("max_link_counter_growth", "max", 0, 0)
# A figure above what the link can carry is no measurement (a broken or tampered tool, a wrong rate
# report): a link cannot carry more than its negotiated rate; 5% allowance for rate rounding (56 Gb/s
# FDR reports 54.54), an estimate. iperf3 counts TCP payload and ib_write_bw RDMA payload, both below it.
RATE_ALLOWANCE = 0.05
# iperf3 reports the seconds its receiver counted: 5.0-5.04 of a 5 s test. Less than nine tenths of
# the planned time is a test cut short (a peer that ended it), whose rate proves nothing of the link.
TCP_MIN_TIME_SHARE = 0.9
LOOPBACK_PEER = Peer("localhost")  # the backend connects to this host's own name, as perftest's loopback does
SERVERS = {"iperf3": f"`iperf3 -s -p PORT`, one per NIC on ports {IPERF3_PORT} and up",
           "ib_write_bw": f"`ib_write_bw -d DEVICE -p PORT`, one per NIC on ports {IB_WRITE_BW_PORT} and up"}


@dataclass(frozen=True)
class Checked:
    subject: str
    nic: NicInfo
    required: bool  # the profile or a --nic-peer names it: a link down fails rather than warns


@dataclass
class NicPlan:
    listed: list[tuple[str, NicInfo]]  # every NIC nodeqc lists, with its subject
    checked: list[Checked]
    rounds: list[list[TrafficJob]] = field(default_factory=list)  # TCP, then RDMA
    subjects: dict[TrafficJob, str] = field(default_factory=dict)
    skips: list[CheckResult] = field(default_factory=list)

    @property
    def jobs(self) -> list[TrafficJob]:
        return [j for r in self.rounds for j in r]


# ---------------------------------------------------------------------- which NICs


def _selects(profile: Profile) -> bool:
    return bool(profile.get("nic", "match") or profile.get("nic", "drivers"))


def _chosen(nic: NicInfo, profile: Profile) -> bool:
    match, drivers = profile.get("nic", "match"), profile.get("nic", "drivers")
    return ((not match or any(fnmatch.fnmatch(nic.name, p) for p in match))
            and (not drivers or nic.driver in drivers))


def select(nics: list[NicInfo], profile: Profile, named: set[str] | frozenset[str] = frozenset()) -> NicPlan:
    by_profile = _selects(profile)
    wanted = [n.name in named or (by_profile and _chosen(n, profile)) for n in nics]
    listed = [(n, w) for n, w in zip(nics, wanted) if w or not n.virtual]
    subjects = [(f"nic{i}", n) for i, (n, _) in enumerate(listed)]
    checked = [Checked(s, n, required=by_profile or n.name in named)
               for (s, n), (_, w) in zip(subjects, listed) if w or not by_profile]
    return NicPlan(subjects, checked)


# ---------------------------------------------------------------------- traffic plan


def traffic_seconds(profile: Profile, quick: bool) -> float:
    return profile.get("nic", "quick_traffic_s" if quick else "traffic_s")


def plan_traffic(plan: NicPlan, peers: list[Peer], profile: Profile, seconds: float,
                 missing_tool: Callable[[str], str | None], gpus: list[GpuInfo],
                 total_s: float | None = None) -> NicPlan:
    """Give each checked NIC its TCP and RDMA jobs, or a skip that says exactly what is missing.
    Each round lasts `seconds`, or the rounds share `total_s` (burn-in: the burn's length)."""
    own = {p.nic: p for p in peers if p.nic}
    shared = [p for p in peers if not p.nic]
    # One server serves one test at a time: no two jobs of a tool go to the same host and port. A
    # peer for one NIC keeps the port it names; the others count up from theirs, or the tool's default.
    taken = {("iperf3", p.host, p.port) for p in peers if p.nic and p.port}

    def port(tool: str, peer: Peer) -> int:
        if tool == "iperf3" and peer.port and peer.nic:
            return peer.port
        n = peer.port if tool == "iperf3" and peer.port else IPERF3_PORT if tool == "iperf3" else IB_WRITE_BW_PORT
        while (tool, peer.host, n) in taken:
            n += 1
        taken.add((tool, peer.host, n))
        return n

    pending: list[tuple[str, dict[str, Any]]] = []  # (subject, TrafficJob fields but seconds)
    use_cuda = profile.get("nic", "rdma_use_cuda", False)
    for k, c in enumerate(plan.checked):
        nic = c.nic
        peer = own.get(nic.name) or (shared[k % len(shared)] if shared else None)
        up = link_is_up(nic)
        # TCP through the interface.
        why = (_cannot("iperf3", missing_tool, peer, up) if nic.interface else
               ("no network interface on this RDMA device (load ib_ipoib for TCP)", None))
        if why is None and not nic.addresses:
            why = ("no IP address to send from: give the NIC one on the peer's network", "NIC_NO_ADDRESS")
        if why:
            plan.skips.append(skip("nic.tcp", c.subject, f"TCP not measured: {why[0]}", code=why[1]))
        else:
            assert peer is not None
            pending.append((c.subject, dict(nic=nic.name, tool="iperf3", peer=peer.host, port=port("iperf3", peer),
                                            streams=profile.get("nic", "streams"), bind=nic.addresses[0])))
        # RDMA on each active port of the NIC's RDMA device: against the peer, or without one in
        # loopback (server and client on the same HCA port, as Azure's HPC health checks run it).
        if not nic.ib_ports:
            continue
        loopback = peer is None
        why = _cannot("ib_write_bw", missing_tool, peer or LOOPBACK_PEER, up)
        if why is None and use_cuda and not gpus:
            why = ("GPUDirect RDMA is asked for ([nic] rdma_use_cuda) but there is no working GPU", "NO_GPUS")
        if why:
            plan.skips.append(skip("nic.rdma", c.subject, f"RDMA not measured: {why[0]}", code=why[1]))
            continue
        target = peer or LOOPBACK_PEER
        for p in nic.ib_ports:
            if p.state == "ACTIVE":
                pending.append((c.subject, dict(nic=nic.name, tool="ib_write_bw", peer=target.host,
                                                port=port("ib_write_bw", target), ib_device=p.device, ib_port=p.port,
                                                roce=p.link_layer == "Ethernet", loopback=loopback,
                                                cuda_device=_nearest_gpu(nic, gpus) if use_cuda else None)))
    tools = [t for t in ("iperf3", "ib_write_bw") if any(f["tool"] == t for _, f in pending)]
    each = total_s / len(tools) if total_s and tools else seconds
    for tool in tools:
        jobs = []
        for subject, fields in pending:
            if fields["tool"] == tool:
                job = TrafficJob(seconds=each, **fields)
                plan.subjects[job] = subject
                jobs.append(job)
        plan.rounds.append(jobs)
    return plan


def traffic_summary(plan: NicPlan) -> str:
    rounds = [f"{r[0].tool}{' in loopback' if all(j.loopback for j in r) else ''} on "
              f"{subjects_text(sorted({plan.subjects[j] for j in r}, key=_order))} for {r[0].seconds:g} s"
              for r in plan.rounds]
    return "NIC traffic: " + ", then ".join(rounds)


def _order(subject: str) -> int:
    return int(subject[3:])


def _cannot(tool: str, missing_tool: Callable[[str], str | None], peer: Peer | None,
            up: bool) -> tuple[str, str] | None:
    hint = missing_tool(tool)
    if hint:
        return hint, "IPERF3_MISSING" if tool == "iperf3" else "PERFTEST_MISSING"
    if peer is None:
        return (f"no peer: pass --nic-peer HOST (a host running {SERVERS[tool]}) or --nic-peer NIC=HOST, "
                "or set [nic] peers in the profile"), "NIC_NO_PEER"
    if not up:
        return "the link is down (see nic.link)", "NIC_LINK_DOWN"
    return None


def _nearest_gpu(nic: NicInfo, gpus: list[GpuInfo]) -> int:
    """The GPU on the nearest PCI bus number: on NVSwitch nodes each NIC shares a PCIe switch with
    one GPU, and GPUDirect RDMA should move that GPU's memory."""
    def bus_of(bus_id: Any) -> int | None:
        """The bus number of an address; None where there is none (NVML gave no PCI info: the
        2026-11-29 fuzzing's AttributeError)."""
        try:
            parts = normalise_bus_id(bus_id).split(":") if isinstance(bus_id, str) else []
        except ValueError:  # a domain that is not hex
            return None
        return int(parts[1], 16) if len(parts) == 3 and re.fullmatch(r"[0-9a-f]{2}", parts[1]) else None

    bus = bus_of(nic.bus_id)
    placed = [(b, g) for g in gpus if (b := bus_of(g.bus_id)) is not None]
    if bus is None or not placed:
        return gpus[0].index
    return min(placed, key=lambda bg: abs(bg[0] - bus))[1].index


def skip_warnings(plan: NicPlan) -> list[str]:
    """One line per reason a traffic check was skipped, naming the NICs: never a silent pass."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in plan.skips:
        groups.setdefault((r.name, r.message), []).append(r.subject)
    return [f"{name} skipped on {subjects_text(subjects)}: {message}" for (name, message), subjects in groups.items()]


# ---------------------------------------------------------------------- verdicts


def link_is_up(nic: NicInfo) -> bool:
    """Operational state up (or unknown with carrier, as some drivers say), and an RDMA port ACTIVE
    where the NIC has RDMA ports."""
    if nic.carrier == 0 or (nic.ib_ports and not any(p.state == "ACTIVE" for p in nic.ib_ports)):
        return False
    if is_na(nic.operstate):
        return nic.carrier == 1 or (is_na(nic.carrier) and bool(nic.ib_ports))
    return nic.operstate == "up" or (nic.operstate == "unknown" and nic.carrier == 1)


def _describe(nic: NicInfo) -> str:
    parts = [p for p in (nic.driver, nic.bus_id) if not is_na(p)]
    return f"{nic.name} ({', '.join(parts)})" if parts else nic.name


def _named(result: CheckResult, nic: NicInfo) -> CheckResult:
    result.message = f"{_describe(nic)}: {result.message}"
    return result


def inventory(plan: NicPlan, profile: Profile) -> CheckResult:
    name = "nic.inventory"
    names = [c.nic.name for c in plan.checked]
    want = profile.get("nic", "count")
    how = " ".join(f"{k} {','.join(profile.get('nic', k))}" for k in ("match", "drivers") if profile.get("nic", k))
    which = ("NIC" if len(names) == 1 else "NICs") + (f" ({how})" if how else "")
    which = which if how else f"physical {which}"
    values = {"count": Value(len(names)), "names": Value(", ".join(names) or "none")}
    thresholds = [Threshold("nic_count", "min", want, want)] if want is not None else []
    if want is not None and len(names) != want:
        finding = Judgement(Verdict.FAIL, "NIC_COUNT",
                          f"{len(names)} {which}, expected {want}: {', '.join(names) or 'none'}")
    elif not names:
        finding = Judgement(Verdict.WARN, "NIC_COUNT", f"no {which} found")
    else:
        finding = Judgement(Verdict.PASS, None, f"{len(names)} {which}: {', '.join(names)}")
    evidence = {"nics": [{"subject": s, **n.to_dict()} for s, n in plan.listed]}
    return fold(name, "node", [finding], values, thresholds, key="count", evidence=evidence)


def link(c: Checked, end: NicInfo | None, profile: Profile) -> CheckResult:
    """State, speed, MTU and RDMA ports at the end of the run."""
    name = "nic.link"
    if end is None:
        return _named(CheckResult(name, c.subject, Verdict.FAIL, "the NIC disappeared during the run",
                                  code="NIC_LOST"), c.nic)
    ports = ", ".join(f"{p.label} {fmt(p.state)}/{fmt(p.phys_state)} {fmt(p.rate_gbit, 'Gb/s')}" for p in end.ib_ports)
    values = {"state": Value(end.operstate), "speed": Value(end.speed_mbps, "Mb/s"), "mtu": Value(end.mtu),
              "mac": Value(end.mac)}
    if ports:
        values["ib_ports"] = Value(ports)
    if not link_is_up(end):
        detail = f"operstate {fmt(end.operstate)}, carrier {fmt(end.carrier)}" + (f"; {ports}" if ports else "")
        verdict = Verdict.FAIL if c.required else Verdict.WARN
        note = "" if c.required else " (the profile does not require this NIC)"
        finding = Judgement(verdict, "NIC_LINK_DOWN", f"link down ({detail}){note}")
        return _named(fold(name, c.subject, [finding], values, [], key="state"), end)
    speed, mtu = profile.threshold("nic", "min_speed_mbit"), profile.threshold("nic", "min_mtu")
    rate = profile.threshold("nic", "min_ib_rate_gbit")
    findings = [_judge_reading(speed, end.speed_mbps, "NIC_SPEED", "speed", "Mb/s"),
                _judge_reading(mtu, end.mtu, "NIC_MTU", "MTU")]
    for p in end.ib_ports:
        if p.state != "ACTIVE" or p.phys_state != "LinkUp":
            findings.append(Judgement(Verdict.FAIL if c.required else Verdict.WARN, "IB_PORT_DOWN",
                                    f"port {p.label} is {fmt(p.state)}/{fmt(p.phys_state)}, not ACTIVE/LinkUp"))
        else:
            findings.append(_judge_reading(rate, p.rate_gbit, "IB_RATE", f"port {p.label} rate", "Gb/s"))
    summary = f"up, {fmt(end.speed_mbps, 'Mb/s')}, MTU {fmt(end.mtu)}" + (f"; {ports}" if ports else "")
    shown = [f for f in findings if f.verdict is not Verdict.PASS] or [Judgement(Verdict.PASS, None, summary)]
    return _named(fold(name, c.subject, shown, values, [speed, mtu, rate], key="speed"), end)


def _judge_reading(limit: Threshold | None, value: Any, code: str, what: str, unit: str = "") -> Judgement:
    if limit is not None and is_na(value):
        return Judgement(Verdict.WARN, code,
                       f"{what} not reported by the driver, so not judged against {limit.describe()}")
    if limit is None:
        return Judgement(Verdict.PASS, None, "")
    return judge(limit, value, code, what, unit)


def pcie(c: Checked, readings: list[tuple[Any, Any]], end: NicInfo | None, profile: Profile) -> CheckResult:
    """Generation and width while traffic ran (read at the end when none ran) against the NIC's
    maximum, or what the profile asks."""
    name = "nic.pcie"
    nic = end or c.nic
    if is_na(nic.bus_id):
        return _named(skip(name, c.subject, "not a PCI device"), nic)
    seen = [(g, w) for g, w in readings if not is_na(g) and not is_na(w)]
    when = "under traffic"
    if not seen:
        seen = [(nic.pcie_gen, nic.pcie_width)] if not is_na(nic.pcie_gen) and not is_na(nic.pcie_width) else []
        when = "with no traffic running"
    if not seen:
        return _named(skip(name, c.subject, "the PCIe link is not reported (no PCIe capability)"), nic)
    gen, width = max(g for g, _ in seen), max(w for _, w in seen)
    want_gen = profile.get("nic", "pcie_gen", nic.pcie_max_gen)
    want_width = profile.get("nic", "pcie_width", nic.pcie_max_width)
    values = {"link": Value(f"Gen{gen} x{width}"), "gen": Value(gen), "width": Value(width),
              "max_gen": Value(nic.pcie_max_gen), "max_width": Value(nic.pcie_max_width),
              "min_width_seen": Value(min(w for _, w in seen)), "readings": Value(len(seen))}
    findings, thresholds = [], []
    for what, have, want, code, mark in (("width", width, want_width, "NIC_PCIE_WIDTH", "x"),
                                         ("generation", gen, want_gen, "NIC_PCIE_GEN", "Gen")):
        if is_na(want):
            continue
        t = Threshold(f"pcie_{'width' if what == 'width' else 'gen'}", "min", fail=want, warn=want)
        thresholds.append(t)
        if t.judge(have) is Verdict.FAIL:
            findings.append(Judgement(Verdict.FAIL, code,
                                    f"PCIe link at Gen{gen} x{width} {when}; expected {what} {mark}{want}"))
    findings = findings or [Judgement(Verdict.PASS, None, f"PCIe Gen{gen} x{width} {when}")]
    return _named(fold(name, c.subject, findings, values, thresholds, key="link"), nic)


def stability(c: Checked, end: NicInfo | None) -> CheckResult:
    """Carrier changes and InfiniBand port error counters must not grow while nodeqc runs."""
    name = "nic.stability"
    if end is None:
        return _named(skip(name, c.subject, "the NIC disappeared during the run (see nic.link)"), c.nic)
    pairs: list[tuple[str, str, Any, Any]] = [
        ("carrier_changes", "NIC_LINK_FLAP", c.nic.carrier_changes, end.carrier_changes)]
    before = {p.label: p for p in c.nic.ib_ports}
    for p in end.ib_ports:
        start: IbPort | None = before.get(p.label)
        for counter, value in p.counters.items():
            was = start.counters.get(counter, NA) if start else NA
            pairs.append((f"{p.label} {counter}", "IB_LINK_ERRORS", was, value))
    findings, values = [], {}
    for what, code, a, b in pairs:
        if is_na(a) or is_na(b):
            continue
        values[what.replace(" ", ":")] = Value(b - a)
        if b > a:
            findings.append(Judgement(Verdict.FAIL, code, f"{what} grew by {b - a} ({a} -> {b})"))
        elif b < a:
            findings.append(Judgement(Verdict.FAIL, code, f"{what} went from {a} to {b}: reset during the run"))
    if not values:
        return _named(skip(name, c.subject, "no link counters to compare"), end)
    findings = findings or [Judgement(Verdict.PASS, None, f"no growth in {', '.join(values)}")]
    values["growth"] = Value(sum(abs(v.value) for v in values.values()))
    return _named(fold(name, c.subject, findings, values, [NO_GROWTH], key="growth"), end)


def _traffic_failure(o: TrafficOutcome) -> Judgement:
    if o.unreadable:  # not a measurement: the tool printed something out of its format
        return Judgement(Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE",
                       f"{o.job.tool} to {o.job.peer_text}: its output could not be read ({o.error}); see output_tail")
    return Judgement(Verdict.FAIL, "NIC_TRAFFIC", f"{o.job.tool} to {o.job.peer_text} failed: {o.error}")


def carry_limit(rate_gbit: Any) -> Threshold:
    """The most a link of this rate can carry (the fastest port's where the rate is not reported)."""
    rate = rate_gbit if not is_na(rate_gbit) and rate_gbit > 0 else MAX_PORT_GBIT
    ceiling = rate * (1 + RATE_ALLOWANCE)
    return Threshold(f"carried by a {rate:g} Gb/s link", "max", ceiling, ceiling, "Gb/s")


def impossible(gbps: float, rate_gbit: Any, what: str) -> Judgement | None:
    """A figure above what the link can carry: the measurement is suspect, never a pass."""
    limit = carry_limit(rate_gbit)
    if gbps <= limit.fail:
        return None
    link = (f"the {fmt(rate_gbit, 'Gb/s')} link" if not is_na(rate_gbit) and rate_gbit > 0
            else f"any link (its rate is not reported; no port carries over {MAX_PORT_GBIT:g} Gb/s)")
    return Judgement(Verdict.FAIL, "FIGURE_IMPOSSIBLE",
                   f"{what} {fmt(gbps, 'Gb/s')} is more than {link} can carry: the measurement is suspect")


def _share(fraction: Threshold | None, of_gbit: float) -> Threshold | None:
    """The profile's fraction of a link as a limit in Gb/s, so the message shows what was measured
    against what was needed."""
    if fraction is None:
        return None
    return Threshold(f"{fraction.name} x {of_gbit:g} Gb/s", "min", fraction.fail * of_gbit,
                     fraction.warn * of_gbit, "Gb/s")


def tcp(c: Checked, outcome: TrafficOutcome, end: NicInfo | None, profile: Profile) -> CheckResult:
    """Received TCP throughput against the profile's fraction of the link speed."""
    name = "nic.tcp"
    nic = end or c.nic
    job = outcome.job
    evidence = dict(outcome.detail)
    if outcome.error:
        return _named(fold(name, c.subject, [_traffic_failure(outcome)], {}, [], evidence=evidence), nic)
    took, planned = outcome.detail.get("seconds"), job.whole_seconds
    if isinstance(took, (int, float)) and took < TCP_MIN_TIME_SHARE * planned:
        short = Judgement(Verdict.FAIL, "NIC_TRAFFIC", f"{job.tool} to {job.peer_text} received for {took:g} s of "
                          f"the planned {planned} s: cut short, so its {fmt(outcome.gbps, 'Gb/s')} is no measurement")
        return _named(fold(name, c.subject, [short], {}, [], evidence=evidence), nic)
    gbps = outcome.gbps
    values = {"throughput": Value(round(gbps, 3), "Gb/s"), "peer": Value(job.peer_text), "streams": Value(job.streams)}
    speed = nic.speed_mbps if not is_na(nic.speed_mbps) else c.nic.speed_mbps
    link_rate = NA if is_na(speed) or speed == 0 else speed / 1000
    # A virtual interface's speed (a veth says 10 Gb/s, a bridge or bond what the kernel makes up)
    # caps nothing: a veth pair carried 14-25 Gb/s in the namespace tests. Only the fastest port's
    # rate bounds it.
    cap_rate = NA if nic.virtual or c.nic.virtual else link_rate
    suspect = impossible(gbps, cap_rate, f"TCP to {job.peer_text}:")
    if suspect:
        return _named(fold(name, c.subject, [suspect], values, [carry_limit(cap_rate)], key="throughput",
                           evidence=evidence), nic)
    if is_na(speed) or speed == 0:
        message = f"{fmt(gbps, 'Gb/s')} to {job.peer_text}; link speed not reported, so not judged"
        return _named(skip(name, c.subject, message, values=values), nic)
    link_gbit = speed / 1000
    values.update({"link": Value(link_gbit, "Gb/s"), "fraction": Value(round(gbps / link_gbit, 3))})
    limit = _share(profile.threshold("nic", "min_tcp_fraction"), link_gbit)
    finding = judge(limit, gbps, "NIC_THROUGHPUT", f"TCP to {job.peer_text} ({job.streams} streams):", "Gb/s")
    share = f"{gbps / link_gbit:.0%} of the {fmt(link_gbit, 'Gb/s')} link"
    finding = Judgement(finding.verdict, finding.code, f"{finding.message}; {share}")
    return _named(fold(name, c.subject, [finding], values, [limit], key="throughput", evidence=evidence), nic)


def rdma(c: Checked, outcomes: list[TrafficOutcome], end: NicInfo | None, profile: Profile) -> CheckResult:
    """ib_write_bw bandwidth of each port against the profile's fraction of the port's rate."""
    name = "nic.rdma"
    nic = end or c.nic
    fraction = profile.threshold("nic", "min_rdma_fraction")
    rates = {p.label: p.rate_gbit for p in nic.ib_ports}
    findings, values, evidence, limits = [], {}, {}, []
    for o in outcomes:
        label = f"{o.job.ib_device}/{o.job.ib_port}"
        evidence[label] = o.detail
        if o.error:
            findings.append(_traffic_failure(o))
            continue
        gbps, rate = o.gbps, rates.get(label, NA)
        values[label] = Value(round(gbps, 3), "Gb/s")
        values.setdefault("bandwidth", Value(round(gbps, 3), "Gb/s"))
        suspect = impossible(gbps, rate, f"RDMA {label}")
        if suspect:
            findings.append(suspect)
            limits.append(carry_limit(rate))
            continue
        if is_na(rate) or rate == 0:
            findings.append(Judgement(Verdict.WARN, "RDMA_BANDWIDTH",
                                    f"{label} {fmt(gbps, 'Gb/s')}; port rate not reported, so not judged"))
            continue
        limit = _share(fraction, rate)
        limits.append(limit)
        cuda = f", GPU memory of gpu{o.job.cuda_device}" if o.job.cuda_device is not None else ""
        where = "in loopback (server and client on this HCA port)" if o.job.loopback else f"to {o.job.peer_text}"
        f = judge(limit, gbps, "RDMA_BANDWIDTH", f"RDMA {label} {where}{cuda}:", "Gb/s")
        findings.append(Judgement(f.verdict, f.code, f"{f.message}; {gbps / rate:.0%} of the {fmt(rate, 'Gb/s')} port"))
    return _named(fold(name, c.subject, findings, values, limits, key="bandwidth", evidence=evidence), nic)


def nic_results(plan: NicPlan, outcomes: list[TrafficOutcome], links: dict[str, list[tuple[Any, Any]]],
                after: list[NicInfo], profile: Profile) -> list[CheckResult]:
    """Every NIC verdict, from the NICs at the start (the plan), what traffic measured and the NICs at
    the end."""
    now = {n.name: n for n in after}
    by_subject: dict[str, list[TrafficOutcome]] = {}
    for o in outcomes:
        by_subject.setdefault(plan.subjects[o.job], []).append(o)
    results = [inventory(plan, profile)]
    results += [link(c, now.get(c.nic.name), profile) for c in plan.checked]
    results += [pcie(c, links.get(c.nic.name, []), now.get(c.nic.name), profile) for c in plan.checked]
    results += [stability(c, now.get(c.nic.name)) for c in plan.checked]
    skipped = {(r.name, r.subject): r for r in plan.skips}
    for check, tool in (("nic.tcp", "iperf3"), ("nic.rdma", "ib_write_bw")):
        for c in plan.checked:
            done = [o for o in by_subject.get(c.subject, []) if o.job.tool == tool]
            if (check, c.subject) in skipped:
                results.append(skipped[(check, c.subject)])
            elif done:
                end = now.get(c.nic.name)
                results.append(tcp(c, done[0], end, profile) if tool == "iperf3" else rdma(c, done, end, profile))
            elif any(plan.subjects[j] == c.subject and j.tool == tool for j in plan.jobs):
                results.append(_named(skip(check, c.subject, "the traffic did not run (stopped early)"), c.nic))
    return results
