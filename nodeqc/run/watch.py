"""`nodeqc watch`: the node watched between qualifications. A light, passive pass (no load of its
own) reads what the run's health checks read (NVML's counters, a sample and the XIDs the driver
reports; the kernel log; EDAC and AER counters; the NICs' links and their counters), judges it with
the same pure functions (nodeqc.checks.health, host_health, nic), and keeps what it found in the
node's watch state in the archive (nodeqc.archive.watch: which findings are sticky, which clear and
when). Growth (corrected ECC, PCIe replays, NVLink, EDAC, AER, link counters) is judged from the
previous pass's reading, kept in the state; the first pass records the reading and judges what is
absolute (uncorrectable ECC since the driver loaded, row remaps, retired pages, links down, a lost
GPU, what the kernel logged).

Every read of the node runs on a thread of its own under a deadline: NVML or a tool that does not
answer is cut off and reported (could not judge: exit 2), never a hang. A pass's exit code is the
one Slurm's HealthCheckProgram wrapper acts on: 0 healthy, 1 needs attention (a failing finding
stands), 2 could not judge.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from nodeqc.archive.watch import (STICKY_CODES, XID_CODES, WatchFinding, WatchState, last_cleared, load_watched, merge,
                                  needs_requalification, parse_stamp, save_watched, state_lock)
from nodeqc.backends.base import GpuCounters, GpuInfo, GpuSample, HostInfo, IbPort, NicInfo, XidEvent
from nodeqc.backends.platform import HostCounters
from nodeqc.checks import health, host_health, inventory, nic as nic_checks
from nodeqc.checks.fabric_state import nvlink_fabric
from nodeqc.core.errors import BackendUnavailable, GpuLostError, UsageError
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.na import NA, is_na
from nodeqc.report.keys import Signer, load_signer
from nodeqc.work.telemetry import GpuTelemetry

EXIT_HEALTHY, EXIT_ATTENTION, EXIT_UNJUDGED = 0, 1, 2
# Slurm kills a HealthCheckProgram after 60 s (slurmd's health check timeout); a pass is cut at
# this deadline by default, leaving the wrapper time to drain the node and the textfile to be written.
DEFAULT_DEADLINE_S = 20.0
MAX_DEADLINE_S = 300.0
XID_WAIT_S = 0.2  # how long a pass waits for XID events the driver has queued (NVML's event set)
# The health checks a passive pass can judge: pcie_link needs the GPU under load (skipped at idle).
WATCH_GPU_CHECKS = (health.presence, health.temperature, health.throttle, health.pcie_replay, health.ecc,
                    health.sram_ecc, health.row_remap, health.retired_pages, health.xid, health.nvlink)
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# What a pass's host counters are judged over (the run's words, "during the run", are not a watch's).
SINCE_LAST_PASS, SINCE_BOOT = "since the last watch pass", "since boot (the watch's first reading)"


class Unjudged(Exception):
    """The pass could not judge the node (NVML missing, a read that hung): one line says why."""


@dataclass
class Observation:
    """What one pass read of the node."""

    host: HostInfo | None = None
    gpus: list[GpuInfo] = field(default_factory=list)
    state: WatchState | None = None  # the node's watch state as the pass found it
    counters: dict[int, GpuCounters | None] = field(default_factory=dict)  # None: the GPU is lost
    samples: dict[int, GpuSample | None] = field(default_factory=dict)
    xids: list[XidEvent] = field(default_factory=list)
    host_counters: HostCounters | None = None
    host_unread: str | None = None
    host_unread_absent: bool = False  # no platform backend at all (a replay), not a sysfs that failed
    names: dict[str, str] = field(default_factory=dict)
    log: Any = None
    records: list[Any] = field(default_factory=list)
    log_stopped: str | None = None
    boot_id: str = ""
    nics: list[NicInfo] | None = None
    qualified_at: float | None = None  # when the node last passed a qualification (the archive)


@dataclass
class PassResult:
    exit_code: int
    node: str = ""
    hostname: str = ""
    simulated: bool = False
    profile: str = ""
    started: float = 0.0
    duration_s: float = 0.0
    gpus: int = 0
    results: list[CheckResult] = field(default_factory=list)
    seen: list[WatchFinding] = field(default_factory=list)
    standing: list[WatchFinding] = field(default_factory=list)
    requalify: list[WatchFinding] = field(default_factory=list)
    qualified_at: float | None = None
    error: str | None = None  # why the node could not be judged
    # What this node's own copy of its watch state put back over the archive's (load_watched), and
    # why the archive's copy was not believed at all ('' when it was).
    restored: list[str] = field(default_factory=list)
    refused: str = ""

    @property
    def unread(self) -> list[CheckResult]:
        """What this pass could not read or judge (the host's EDAC, AER, kernel log; a GPU's temperature
        that NVML gave no valid reading of: a check's ERROR), each with why."""
        return [r for r in self.results if r.verdict is Verdict.ERROR
                or (r.verdict is Verdict.SKIP and r.code in ("HOST_UNREADABLE", "HOST_NOT_HERE"))]

    def line(self) -> str:
        """The pass in one line, for stderr and Slurm's log."""
        if self.error:
            return f"nodeqc watch: could not judge: {self.error}"
        unread = self.unread
        said = (f"; not read: {', '.join(dict.fromkeys(r.name for r in unread))} "
                f"({unread[0].message.removeprefix('not read: ')})" if unread else "")
        failing = [f for f in self.standing if f.verdict == "fail"]
        if not failing:
            warned = [f for f in self.standing if f.verdict == "warn"]
            gpus = f"{self.gpus} GPU(s)" + (f", {len(warned)} warning(s)" if warned else "")
            if self.exit_code == EXIT_UNJUDGED:
                return f"nodeqc watch: could not judge it all:{said.removeprefix(';')}; {gpus}, nothing failing"
            return f"nodeqc watch: healthy: {gpus}{said}"
        first = failing[0]
        more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
        what = "needs re-qualification" if self.requalify else "needs attention"
        return f"nodeqc watch: {what}: {first.describe()}{more}{said}"


def bounded(work: Callable[[Callable[[str], None]], Any], deadline_s: float) -> Any:
    """work(step) on a thread of its own, cut off after deadline_s: Unjudged names the step it was in.
    The thread is a daemon: one stuck in NVML or a tool is left behind, never waited for."""
    box: dict[str, Any] = {}
    step = ["starting"]

    def target() -> None:
        try:
            box["value"] = work(lambda s: step.__setitem__(0, s))
        except BaseException as e:  # noqa: BLE001 - carried to the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="nodeqc-watch-pass", daemon=True)
    t.start()
    t.join(deadline_s)
    if t.is_alive():
        raise Unjudged(f"no answer within the {deadline_s:g} s deadline ({step[0]})")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class Watcher:
    """One node watched: its hardware (opened once), its profile and its archive. `signer`: the node's
    key, which signs its watch state (default: the per-user key its reports are signed with);
    `clock` gives Unix time (a test's fake clock)."""

    def __init__(self, hardware: Any, profile_ref: str = "auto", archive: str | None = None,
                 deadline_s: float = DEFAULT_DEADLINE_S, clock: Callable[[], float] = time.time,
                 signer: Signer | None = None):
        self.hw = hardware
        self.signer = signer or load_signer(None)
        self.profile_ref = profile_ref
        self.profile: Any = None
        self.archive = archive
        self.deadline_s = deadline_s
        self.clock = clock
        self._opened = False
        self.hung = False  # a pass was cut off at its deadline: its reads may still be stuck

    # ------------------------------------------------------------------ reading the node

    def _observe(self, step: Callable[[str], None], obs: Observation) -> Observation:
        hw = self.hw
        step("reading the host")
        obs.host = hw.host.info()
        state, _, _ = load_watched(node_of(obs.host), self.signer, self.archive)
        obs.state = state
        prev = state.readings if state else {}
        step("reading the archive")
        obs.qualified_at = self._qualified_at(node_of(obs.host))
        if not self._opened:
            step("opening NVML")
            hw.mgmt.open()
            self._opened = True
        step("listing the GPUs (NVML)")
        obs.gpus = hw.mgmt.gpus()
        if self.profile is None:
            step("resolving the profile")
            self.profile = _profile(self.profile_ref, obs.gpus)
        for g in obs.gpus:
            step(f"reading {g.subject}'s counters (NVML)")
            try:
                obs.counters[g.index] = None if g.lost else hw.mgmt.counters(g.index)
                obs.samples[g.index] = None if g.lost else hw.mgmt.sample(g.index)
            except GpuLostError:
                obs.counters[g.index] = obs.samples[g.index] = None
        step("waiting for XID events (NVML)")
        obs.xids = list(hw.mgmt.wait_xids(XID_WAIT_S, hw.clock))
        if hw.platform is not None:
            self._observe_platform(step, obs, prev.get("kernel_log") or {})
        else:
            obs.host_unread, obs.host_unread_absent = hw.no_host_reason(), True
        if hw.nics is not None:
            step("reading the NICs (sysfs)")
            obs.nics = hw.nics.nics()
        return obs

    def _observe_platform(self, step: Callable[[str], None], obs: Observation, cursor: dict[str, Any]) -> None:
        step("reading EDAC and AER counters (sysfs)")
        bus_ids = [g.bus_id for g in obs.gpus if isinstance(g.bus_id, str)]
        try:
            obs.host_counters = self.hw.platform.counters(bus_ids)
            bridges: dict[str, list[str]] = {}
            names = host_health.device_names(obs.gpus, [], {})
            for bus in bus_ids:
                fn = self.hw.platform.pci(bus)
                for b in fn.bridges if fn else []:
                    bridges.setdefault(b, []).append(names.get(bus, bus))
            obs.names = host_health.device_names(obs.gpus, [], bridges)
        except OSError as e:
            obs.host_unread = f"cannot read sysfs: {e}"
        step("reading the kernel log")
        obs.boot_id = "simulated" if self.hw.simulated else _boot_id()
        same_boot = cursor.get("boot_id") == obs.boot_id and isinstance(cursor.get("seq"), int)
        after = cursor["seq"] if same_boot else -1
        since = cursor.get("t") if same_boot and isinstance(cursor.get("t"), (int, float)) else None
        try:
            obs.log = self.hw.platform.kernel_log(after_seq=after, since=since)
            obs.records = obs.log.new_records()
        except (OSError, ValueError, subprocess.SubprocessError) as e:  # journalctl failed, or hung
            obs.records = getattr(e, "records", [])  # what a reader cut short had read (LogCutShort)
            obs.log_stopped = f"{type(e).__name__}: {e}"
        if not same_boot and not self.hw.simulated and obs.records:
            obs.records = _after_qualification(obs.records, obs.qualified_at)

    def _qualified_at(self, node: str) -> float | None:
        """When the node's newest passing qualification finished (for a simulated node, its newest
        complete passing simulated run: the only qualification such a node has)."""
        from nodeqc.archive.index import Archive

        archive = Archive(self.archive, warn=lambda line: None)
        try:
            entries, _ = archive.history(node)
        finally:
            archive.close()
        return parse_stamp(last_cleared(entries).get(node))

    # ------------------------------------------------------------------ a pass

    def run_pass(self) -> PassResult:
        started = self.clock()
        t0 = time.monotonic()
        obs = Observation()
        try:
            bounded(lambda step: self._observe(step, obs), self.deadline_s)
        except (BackendUnavailable, Unjudged) as e:
            self.hung = isinstance(e, Unjudged)
            return self._unjudged(str(e), started, t0, obs)
        except UsageError:
            raise  # the operator's input (a profile, the state file): one line naming it, as ever
        except Exception as e:  # noqa: BLE001 - a driver unloaded mid-watch (NVML's DRIVER_NOT_LOADED), sysfs gone
            # Could not judge, in one line and exit 2, with the textfile saying so; it was an internal
            # error that left the last pass's "healthy" in the textfile (2026-11-28 audit).
            return self._unjudged(f"reading the node failed: {type(e).__name__}: {e}", started, t0, obs)
        assert obs.host is not None
        node = node_of(obs.host)
        prev = obs.state.readings if obs.state else {}
        now = self.clock()
        results = judge(obs, prev, self.profile, now)
        seen = [finding(r, now) for r in results if r.verdict in (Verdict.FAIL, Verdict.WARN)]
        with state_lock(node, self.archive):
            # What is on disk now: another watch of this node may have written since this pass read it.
            state, restored, refused = load_watched(node, self.signer, self.archive)
            state = state or WatchState(node)
            state.hostname, state.simulated = obs.host.hostname, self.hw.simulated
            merge(state, seen, now, obs.qualified_at)
            state.readings = readings(obs, prev, now)
            save_watched(state, self.signer, self.archive)
        standing = list(state.findings)
        requalify = needs_requalification(state, obs.qualified_at, now)
        # A healthy pass that could not read the host's counters has not shown them healthy: "could not
        # judge" (it said healthy, exit 0, with an uncorrected memory error unread, 2026-11-29 fuzzing).
        code = (EXIT_ATTENTION if any(f.verdict == "fail" for f in standing)
                else EXIT_UNJUDGED if any(r.code == "HOST_UNREADABLE" or r.verdict is Verdict.ERROR for r in results)
                else EXIT_HEALTHY)
        return PassResult(code, state.node, obs.host.hostname, self.hw.simulated, getattr(self.profile, "name", ""),
                          started, time.monotonic() - t0, len(obs.gpus), results, seen, standing, requalify,
                          obs.qualified_at, restored=restored, refused=refused)

    def _unjudged(self, why: str, started: float, t0: float, obs: Observation) -> PassResult:
        """The findings that stood before still stand (and are exported); nothing new is recorded."""
        state, now = obs.state, self.clock()
        standing = [f for f in state.findings if f.stands(now, obs.qualified_at)] if state else []
        return PassResult(EXIT_UNJUDGED, state.node if state else "", state.hostname if state else "",
                          self.hw.simulated, getattr(self.profile, "name", ""), started, time.monotonic() - t0,
                          0, standing=standing, requalify=[f for f in standing if f.sticky], error=why)

    def close(self) -> None:
        """Release what reading the node made (the simulated node's sysfs tree); not after a pass that
        hung, whose thread may still be reading it."""
        if not self.hung:
            if self._opened:
                self.hw.mgmt.close()
                self._opened = False
            self.hw.release()


# ---------------------------------------------------------------------- judging


def judge(obs: Observation, prev: dict[str, Any], profile: Any, now: float) -> list[CheckResult]:
    """The pass judged by the run's own checks, growth from the previous pass's readings `prev`."""
    # The GPUs' count and presence on the PCI bus, as a run's inventory judges them: a node whose GPUs
    # the driver lost before the first pass, or between two passes it never saw, was called healthy
    # with 0 or 6 of its 8 GPUs (2026-11-28 audit).
    results: list[CheckResult] = [inventory.gpu_count(obs.gpus, profile)]
    if obs.host is not None:
        results += inventory.gpu_present(obs.gpus, obs.host.nvidia_gpus_on_pci)
    # The NVLink fabric registration, as a run's inventory judges it: on a rack-scale tray the fabric
    # can drop a GPU or degrade its bandwidth long after qualification (none on a node without one).
    results += nvlink_fabric(obs.gpus, profile)
    before = prev.get("gpus") or {}
    keys = gpu_keys(obs.gpus)
    for g in obs.gpus:
        tel = GpuTelemetry(g.index)
        key = keys.get(g.index)
        if key is None:
            results.append(CheckResult("health.gpu_lost", g.subject, Verdict.SKIP, "cannot be told apart from another "
                                       "GPU from one pass to the next (its serial, UUID and bus id are missing or "
                                       "shared): whether it goes missing, and its counters' growth, are not watched"))
        was = before.get(key) if key is not None else None
        was = was if isinstance(was, dict) else {}
        tel.counters_start = _counters(was.get("counters"))
        t = was.get("t")  # the previous pass's time: rates (NVLink CRC errors per second) over the gap
        tel.counters_end_t = max(0.0, now - t) if isinstance(t, (int, float)) and tel.counters_start else 0.0
        tel.counters_end = obs.counters.get(g.index)
        sample = obs.samples.get(g.index)
        if sample is not None:
            tel.add(tel.counters_end_t, sample)
        if obs.counters.get(g.index) is None:
            tel.lost_at_s = 0.0
            tel.counters_end = None
        tel.count_throttle_from_counters()
        for e in obs.xids:
            if e.gpu == g.index:
                tel.xids.add({"t_s": 0.0, "code": e.code})
        for check in WATCH_GPU_CHECKS:
            r = check(g, tel, profile)
            if r.code == "GPU_LOST":  # the run's words count from its start; a watch has no run
                r = replace(r, message="stopped answering NVML (fell off the bus)", values={}, key=None)
            elif r.code in XID_CODES:  # nor a time into it: the event was read in this pass
                r = replace(r, message=re.sub(r" at 0(?:\.0+)? s\b", "", r.message))
                if r.code == "XID_APP_FAULT":
                    # A run's own known-good work makes an application's XID the GPU's; in service
                    # the GPU runs the users' work, and the application is the likelier cause (as
                    # NVIDIA's catalogue and gpud take it): a warning that clears, unless it repeats.
                    r = replace(r, verdict=Verdict.WARN, code="XID_WARNING", message=r.message.replace(
                        "an application's XID during nodeqc's known-good work",
                        "an application's XID (the users' work on this GPU is the likelier cause)"))
            results.append(r)
    listed = set(keys.values())
    for key, was in sorted(before.items()):
        # "N/A": the key watches before 2026-11-28 gave every GPU without a serial, no GPU's own.
        if key not in listed and key != "N/A" and isinstance(was, dict):  # seen by an earlier pass, gone now
            results.append(CheckResult("health.gpu_lost", str(was.get("subject") or "gpu?"), Verdict.FAIL,
                                       f"GPU {_said(key)} (bus {was.get('bus_id')}), seen by an earlier watch, "
                                       "is no longer listed by the driver", code="GPU_LOST"))
    indexes = {g.index for g in obs.gpus}
    for e in obs.xids:
        if e.gpu not in indexes:  # the driver's event, for a GPU it does not list: said, not dropped
            results.append(CheckResult("health.xid", "node", Verdict.WARN, f"XID {e.code} reported for GPU index "
                                       f"{e.gpu}, which the driver does not list: not judged against a GPU",
                                       code="XID_WARNING"))
    results += _host_results(obs, prev, profile)
    results += _nic_results(obs, prev, profile)
    return results


def _host_results(obs: Observation, prev: dict[str, Any], profile: Any) -> list[CheckResult]:
    out: list[CheckResult] = []
    start = _host_counters(prev.get("host"))
    end = obs.host_counters
    if end is None and obs.host_unread:
        # Never silent: a pass that could not read sysfs said "healthy" with no EDAC or AER row.
        kinds = ("host.edac", "host.aer") + (("host.kernel_log",) if obs.log is None and not obs.log_stopped else ())
        code = "HOST_NOT_HERE" if obs.host_unread_absent else "HOST_UNREADABLE"
        out += [CheckResult(name, "node", Verdict.SKIP, f"not read: {obs.host_unread}", code=code) for name in kinds]
    elif end is not None and start is not None:  # growth since the last pass
        out += host_health.edac(start, end, profile, during=SINCE_LAST_PASS)
        out += host_health.aer(start, end, obs.names, profile, during=SINCE_LAST_PASS)
    elif end is not None:
        # The first reading: its growth is the next pass's to judge, but uncorrected errors since boot
        # are judged now, as the GPUs' uncorrectable ECC since the driver loaded is; a node already
        # holding them was called healthy for a pass, then passed "no memory errors" (2026-11-28 audit).
        out += host_health.edac(_corrected_only(end), end, profile, during=SINCE_BOOT)
        out += host_health.aer(_corrected_only(end), end, obs.names, profile, during=SINCE_BOOT)
    if obs.log is not None or obs.log_stopped:
        out += host_health.kernel_log(obs.records, getattr(obs.log, "source", ""), getattr(obs.log, "reason", None),
                                      obs.names, profile, lost=getattr(obs.log, "lost", 0), stopped=obs.log_stopped)
    return out


def _nic_results(obs: Observation, prev: dict[str, Any], profile: Any) -> list[CheckResult]:
    if obs.nics is None:
        return []
    before = prev.get("nics") or {}
    out = []
    for c in nic_checks.select(obs.nics, profile).checked:
        out.append(nic_checks.link(c, c.nic, profile))
        was = before.get(c.nic.name)
        if isinstance(was, dict):
            out.append(nic_checks.stability(replace(c, nic=_nic_as_was(c.nic, was)), c.nic))
    return out


def finding(r: CheckResult, now: float) -> WatchFinding:
    return WatchFinding(r.name, r.subject, r.code or "", "fail" if r.verdict is Verdict.FAIL else "warn", r.message,
                   sticky(r), now, now)


def sticky(r: CheckResult) -> bool:
    """Whether a result's state must stand until a qualification passes (nodeqc.archive.watch)."""
    if r.verdict is not Verdict.FAIL:
        return False
    if r.code in XID_CODES:
        if r.code == "KERNEL_XID":
            return True  # the kernel log's check fails only the XIDs the catalogue calls fatal
        events = r.evidence.get("xids") if isinstance(r.evidence, dict) else None
        if not isinstance(events, list) or not events:
            return True  # not known to be harmless: held until a qualification says otherwise
        return any(isinstance(e, dict) and (e.get("fatal") is True or str(e.get("severity", "")).lower() == "fatal")
                   for e in events)
    return r.code in STICKY_CODES


# ---------------------------------------------------------------------- the readings kept


def readings(obs: Observation, prev: dict[str, Any], now: float) -> dict[str, Any]:
    """What the next pass judges growth from. A GPU that did not answer keeps its last reading."""
    gpus = dict(prev.get("gpus") or {})
    keys = gpu_keys(obs.gpus)
    for g in obs.gpus:
        counters = obs.counters.get(g.index)
        if counters is not None and g.index in keys:
            gpus[keys[g.index]] = {"subject": g.subject, "bus_id": g.bus_id, "counters": counters.to_dict(), "t": now}
    out: dict[str, Any] = {"gpus": gpus}
    if obs.host_counters is not None:
        out["host"] = obs.host_counters.to_dict()
    elif prev.get("host"):
        out["host"] = prev["host"]
    if obs.nics is not None:
        out["nics"] = {n.name: {"carrier_changes": None if is_na(n.carrier_changes) else n.carrier_changes,
                                "ports": {p.label: {k: None if is_na(v) else v for k, v in p.counters.items()}
                                          for p in n.ib_ports}} for n in obs.nics}
    seq = getattr(obs.log, "last_seq", None)
    cursor = dict(prev.get("kernel_log") or {})
    if obs.boot_id and cursor.get("boot_id") != obs.boot_id:
        cursor = {"boot_id": obs.boot_id, "seq": -1}
    if isinstance(seq, int):
        cursor["seq"] = max(seq, cursor.get("seq", -1))
    cursor["t"] = now
    out["kernel_log"] = cursor
    return out


def gpu_keys(gpus: list[GpuInfo]) -> dict[int, str]:
    """Each GPU's name from one pass to the next: its serial where no other GPU shares it, else its
    UUID ("uuid:..."), else its bus id ("bus:..."). A GPU with none of them its own is left out: an
    unreadable serial (NA) or a node that reports one serial twice put GPUs under one key, and a GPU
    lost among them went unseen (2026-11-28 audit)."""
    out: dict[int, str] = {}
    for attr, prefix in (("serial", ""), ("uuid", "uuid:"), ("bus_id", "bus:")):
        def own(g: GpuInfo) -> str | None:
            v = getattr(g, attr)
            return str(v).strip() if isinstance(v, (str, int)) and not is_na(v) and str(v).strip() else None
        counts = Counter(own(g) for g in gpus)
        for g in gpus:
            if g.index not in out and (v := own(g)) is not None and counts[v] == 1:
                out[g.index] = prefix + v
    return out


def _said(key: str) -> str:
    return (f"UUID {key[5:]}" if key.startswith("uuid:") else f"at {key[4:]}" if key.startswith("bus:")
            else f"serial {key}")


def _corrected_only(end: HostCounters) -> HostCounters:
    """`end` with no uncorrected error counted: what a first reading's growth is judged from, so that
    the uncorrected errors since boot are judged and the corrected ones are only recorded."""
    edac = {k: {**v, "ue": 0} for k, v in end.edac.items()}
    aer = {k: {**v, **{c: 0 for c in ("nonfatal", "fatal") if c in v}} for k, v in end.aer.items()}
    return HostCounters(edac, end.edac_labels, aer, end.edac_present)


def _counters(data: Any) -> GpuCounters | None:
    if not isinstance(data, dict):
        return None
    fields = GpuCounters.__dataclass_fields__
    return GpuCounters(**{k: NA if v is None else v for k, v in data.items()
                          if k in fields and (v is None or isinstance(v, (int, float, str, bool)))})


def _host_counters(data: Any) -> HostCounters | None:
    if not isinstance(data, dict):
        return None
    try:
        edac = {str(k): {str(a): int(b) for a, b in v.items()} for k, v in (data.get("edac") or {}).items()}
        aer = {str(k): {str(a): int(b) for a, b in v.items()} for k, v in (data.get("aer") or {}).items()}
        labels = {str(k): str(v) for k, v in (data.get("edac_labels") or {}).items()}
    except (AttributeError, TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        return None  # not the watch's reading: growth is judged from this pass on
    return HostCounters(edac, labels, aer, bool(data.get("edac_present")))


def _nic_as_was(now: NicInfo, was: dict[str, Any]) -> NicInfo:
    """The NIC with the counters the previous pass read, for nic.stability to compare."""
    ports = was.get("ports") if isinstance(was.get("ports"), dict) else {}
    cc = was.get("carrier_changes")
    return replace(now, carrier_changes=cc if isinstance(cc, int) and not isinstance(cc, bool) else NA,
                   ib_ports=[IbPort(p.device, p.port, p.state, p.phys_state, p.rate_gbit, p.link_layer,
                                    {k: v for k, v in (ports.get(p.label) or {}).items()
                                     if isinstance(v, int) and not isinstance(v, bool)})
                             for p in now.ib_ports if isinstance(ports.get(p.label), dict)])


# ---------------------------------------------------------------------- small things


def node_of(host: HostInfo) -> str:
    from nodeqc.core.names import node_key

    return node_key(host.system_serial, host.hostname)


def _profile(ref: str, gpus: list[GpuInfo]) -> Any:
    from nodeqc.spec.profile import load_for, suggest_profile

    if ref == "auto":
        return load_for(suggest_profile(gpus), gpus).chosen_by_auto()
    return load_for(ref, gpus)


def _boot_id() -> str:
    try:
        with open(BOOT_ID) as f:
            return f.read(64).strip()
    except OSError:
        return ""


def _after_qualification(records: list[Any], qualified_at: float | None) -> list[Any]:
    """On a pass with no cursor into this boot's log: the records since the last qualification only
    (the log's times are since boot, CLOCK_MONOTONIC; the wall time of boot is now less that)."""
    if qualified_at is None:
        return records
    boot = time.time() - time.monotonic()
    return [r for r in records if boot + r.usec / 1e6 > qualified_at]


def check_deadline(value: float) -> float:
    if not 0 < value <= MAX_DEADLINE_S:
        raise UsageError(f"--deadline {value:g}: expected more than 0 and at most {MAX_DEADLINE_S:g} seconds "
                         "(Slurm gives a health check 60 s)")
    return value

