"""The runner: one qualification run from inventory to signed report, as one stream of events.

Order: inventory, then the stress work on every GPU while telemetry samples in the background, then
the health verdicts on what telemetry saw, then the host and the NICs. Every result is journaled to disk as it
is reached. Abort (Ctrl-C, the GUI's button) stops the work, and the report is still written,
marked aborted. An exception inside nodeqc becomes an ERROR result with its traceback, not a crash.
"""

from __future__ import annotations

import tempfile
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from nodeqc.backends import Hardware
from nodeqc.backends.base import GpuInfo, GpuSample, HostInfo, NicInfo, describe_unrecorded
from nodeqc.backends.bmc import BmcWatch
from nodeqc.backends.gpus import open_gpus
from nodeqc.checks import conformance, health, host as host_checks, inventory
from nodeqc.checks.burnin import BURN_IN_WINDOW_MIN_S, BurnInRecorder, judge_burn_in, status_line
from nodeqc.checks.common import as_replayed
from nodeqc.checks.processes import gpu_free
from nodeqc.checks.stress import plan as stress_plan
from nodeqc.checks.stress.burn import burn_seconds
from nodeqc.checks.stress.outcomes import MIB, SEED
from nodeqc.core.errors import BackendUnavailable, GpuLostError
from nodeqc.run.events import (CheckFinished, CheckProgress, CheckStarted, Event, Notice, RunFinished,
                           RunStarted, TelemetrySampled)
from nodeqc.core import scratch
from nodeqc.core.model import CheckResult, Verdict, node_verdict
from nodeqc.core.na import is_na
from nodeqc.core.safefile import OutputError
from nodeqc.core.stamps import current_user, utc_now
from nodeqc.report.answer import answer, escalate, repair_outcome, xids_returned
from nodeqc.report.envelope import sign, statement, write_envelope
from nodeqc.report.journal import Journal
from nodeqc.report.keys import Signer
from nodeqc.report.predicate import build_predicate, nothing_judged, tally
from nodeqc.run.dcgm import dcgm_results
from nodeqc.run.host_stress import host_stress_phase
from nodeqc.run.nic_traffic import NicTraffic
from nodeqc.run.paths import RunPaths, claim_paths
from nodeqc.run.planted import outcomes as planted_outcomes
from nodeqc.run.platform_watch import PlatformWatch
from nodeqc.run.watchdog import watchdog_for
from nodeqc.spec.peers import Peer
from nodeqc.spec.profile import Profile
from nodeqc.spec.selection import CHECK_NAMES, CHECKS, Selection
from nodeqc.work.sampler import TelemetrySampler, TelemetrySummary
from nodeqc.work.workers import STATUS_CRASH, STATUS_HANG, STATUS_LOST, Task, WorkerPool, own_pids, run_tasks

EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_RUN = 0, 1, 2
PROGRESS_EVERY_S = 0.25  # real seconds between progress events of one subject
# The longest a step's load waits on a slow telemetry sampler (real seconds; the watchdog's bound
# grows by as much): a sampler slower than this is broken, not slow (nodeqc's choice).
MAX_TELEMETRY_WAIT_S = 60.0
# Before any load, telemetry reads the GPUs idle (the plots' and the link's "at idle") for this many
# run-clock seconds, 4 readings at the default 4 Hz, and for as long beyond it as the workers take to
# import what their tasks need (CuPy, nvmath's binding: a fresh node's first import of those is the
# slow part), at most WORKER_READY_WAIT_S: a worker still importing then makes its first task wait,
# watched by the watchdog's start-up limit. It was a fixed 2 s, of which a worker ready sooner left
# the rest idle (issue 30's 60 s: the first stress step began 2.1 s into a real H100's quick run).
IDLE_BASELINE_S = 1.0
WORKER_READY_WAIT_S = 10.0


@dataclass
class RunOptions:
    profile: Profile
    signer: Signer
    out_dir: Path | None = None  # None: the archive, filed by node
    quick: bool = False
    operator: str | None = None
    ticket: str | None = None
    sample_hz: float | None = None
    burn_in_s: float | None = None  # None: the profile's [run] burn_in_s
    command: list[str] = field(default_factory=list)
    archive: Path | None = None  # None: archive_root() (NODEQC_ARCHIVE or the per-user one)
    selection: Selection = field(default_factory=Selection)  # --only/--skip; a partial run is no qualification
    previous: dict[str, Any] | None = None  # the earlier report this run re-tests: file, sha256, ...
    nic_peers: list[Peer] = field(default_factory=list)  # empty: the profile's [nic] peers
    repair: str | None = None  # what the technician did since the `previous` report (--repair)
    repair_parts: list[str] = field(default_factory=list)  # the parts the repair was of (--repair-part)
    prior_repairs: dict[str, int] = field(default_factory=dict)  # 'part|code' -> earlier repairs (archive)
    baseline: Any = None  # nodeqc.spec.baseline.Baseline to conform to; None: the profile's `baseline`, if any
    dcgm: str | None = None  # --dcgm: "off" or a level "1".."4"; None: the profile's (nodeqc.run.dcgm)


@dataclass
class RunOutcome:
    verdict: str
    status: str
    report_path: Path
    results: list[CheckResult]
    planted: list[dict[str, str]] | None = None  # a simulated node's planted faults and what became of them

    @property
    def exit_code(self) -> int:
        """0 passed; 1 failed qualification; 2 could not do the job (aborted, or a check could not run
        and none failed). A failure proven beside a check that could not run is still a failure: a
        pipeline that retries on 2 would retest a node with a proven bad part (the 2026-11-28 advice
        review: a riser at x8 beside a co-tenant's GPU exited 2)."""
        if self.status == "aborted":
            return EXIT_CANNOT_RUN
        if any(r.verdict is Verdict.FAIL for r in self.results):
            return EXIT_FAIL
        if any(r.verdict is Verdict.ERROR for r in self.results):
            return EXIT_CANNOT_RUN
        return EXIT_FAIL if self.verdict == "FAIL" else EXIT_PASS

    def __repr__(self) -> str:
        """What did not pass first: a failed assertion shows the head of a repr, and the dataclass's
        own put a hundred passing results before the one that mattered (a CI failure, 2026-11-29,
        cut off before the result that made a retest ERROR)."""
        others = [" ".join(filter(None, (r.verdict.name, r.name, r.subject, r.code))) + f": {r.message}"
                  for r in sorted(self.results, key=lambda r: -r.verdict.severity) if r.verdict is not Verdict.PASS]
        return (f"RunOutcome({self.verdict}, {self.status}, not passed: {others}, "
                f"{len(self.results) - len(others)} passed, report {self.report_path})")


class Runner:
    def __init__(self, options: RunOptions, hardware: Hardware, emit: Callable[[Event], None] | None = None):
        from nodeqc.spec.baseline import baseline_of_profile

        self.options = options
        self.hw = hardware
        self.profile = options.profile
        self._listener = emit or (lambda event: None)
        self._aborted = threading.Event()
        self._journal: Journal | None = None
        self._results: list[CheckResult] = []
        # GPU subject -> its model, for the GPUs the profile does not accept (judged not against
        # another model's floors: inventory.not_judged_for_model)
        self._wrong_models: dict[str, str] = {}
        self._progress_at: dict[str, float] = {}
        self._burn_in: dict[str, Any] | None = None
        self.t0 = 0.0
        self._nics_start: list[NicInfo] = []  # read first: link counters must not grow during the run
        self._live_gpus: list[GpuInfo] = []
        self._nic = NicTraffic(hardware.nics, self.profile, options.quick, options.selection, options.nic_peers, self._emit)
        self._platform = PlatformWatch(hardware.platform, hardware.no_host_reason())
        self._baseline = options.baseline if options.baseline is not None else baseline_of_profile(self.profile)
        self._one_gpu_node = False  # one GPU on the node by every count: GPU-to-GPU checks do not apply
        self._bmc_thresholds: tuple[Any, str | None] | None = None  # read once a run (`ipmitool sensor` is slow)

    # ------------------------------------------------------------------ control

    def abort(self) -> None:
        """Stop at the next safe point; the report is still written, marked aborted."""
        self._aborted.set()

    @property
    def aborted(self) -> bool:
        return self._aborted.is_set()

    def now(self) -> float:
        return round(self.hw.clock.now() - self.t0, 3)

    # ------------------------------------------------------------------ events

    def _emit(self, event: Event) -> None:
        if self._journal is not None and not isinstance(event, (CheckProgress, TelemetrySampled)):
            self._journal.append(event.to_dict())
        self._listener(event)

    def _publish(self, results: list[CheckResult]) -> None:
        """Start and finish each check of a batch that was judged at once."""
        results = [r for r in results if self.options.selection.includes(r.name)]
        names = list(dict.fromkeys(r.name for r in results))
        for name in names:
            batch = [r for r in results if r.name == name]
            self._emit(CheckStarted(name, [r.subject for r in batch], self.now()))
            for r in batch:
                self._finish(r)

    def _finish(self, result: CheckResult) -> None:
        if self.hw.replayed:
            result = as_replayed(result)
        models = self._wrong_models.get(result.subject) or (sorted(set(self._wrong_models.values()))
                                                             if result.subject == "node" and self._wrong_models else None)
        if models:
            result = inventory.not_judged_for_model(result, [models] if isinstance(models, str) else models,
                                                    self.profile.name)
        self._results.append(result)
        self._emit(CheckFinished(result, self.now()))

    # ------------------------------------------------------------------ the run

    def run(self) -> RunOutcome:
        self.t0 = self.hw.clock.now()
        started_at = utc_now()
        host = self.hw.host.info()
        gpus, driver, cuda, nvml_error = self._open_gpus(host)
        self._wrong_models = {g.subject: str(g.name) for g in gpus
                              if not g.lost and not self.profile.accepts_model(str(g.name))}
        paths = claim_paths(host, self.options.out_dir, self.options.archive)
        self._journal = Journal(paths.journal)
        self._emit(RunStarted(
            run_id=str(uuid.uuid4()), started_at=started_at, profile=self.profile.summary(),
            simulated=self.hw.simulated, node=host.to_dict(), gpus=inventory.describe_gpus(gpus),
            files={"report": str(paths.report), "journal": str(paths.journal),
                   "telemetry": str(paths.telemetry)}))
        summary: TelemetrySummary | None = None
        self._live_gpus = [g for g in gpus if not g.lost and self.options.selection.covers(g.slot)]
        self._one_gpu_node = (len(gpus) == 1 and len(host.nvidia_gpus_on_pci) <= 1
                              and self.profile.get("gpu", "count", 1) == 1)
        try:
            self._nics_start = self.hw.nics.nics() if self.hw.nics else []
            self._platform.start(self._live_gpus, self._nics_start, self._emit)
            self._inventory_phase(host, gpus, driver, cuda, nvml_error)
            self._conformance_phase(host, gpus, driver, cuda)
            self._publish([] if self.aborted else dcgm_results(self.hw, self.options, gpus, self._emit,
                                                               lambda: self.aborted))
            summary = self._gpu_phase(self._live_gpus, paths)
            self._host_phase(host)
            self._nic_phase()
            self._fleet_phase(host, gpus)
        except Exception as e:  # noqa: BLE001 - an internal error must still produce a report
            self._emit(Notice("error", f"internal error: {type(e).__name__}: {e}"))
            self._finish(CheckResult("nodeqc.internal", "node", Verdict.ERROR,
                                     f"nodeqc failed: {type(e).__name__}: {e}", code="INTERNAL_ERROR",
                                     evidence={"traceback": traceback.format_exc().splitlines()[-20:]}))
        finally:
            self._nic.kill()
            self._platform.close()
            self.hw.mgmt.close()
            self.hw.release()  # the simulated node's sysfs tree: nothing of a run stays in the temporary directory
        return self._conclude(paths, host, gpus, driver, cuda, summary, started_at)

    # ------------------------------------------------------------------ phases

    def _inventory_phase(self, host: HostInfo, gpus: list[GpuInfo], driver: str, cuda: str,
                         nvml_error: str | None) -> None:
        self._publish([inventory.nvml_result(nvml_error, driver, len(gpus))])
        if nvml_error is None:
            self._publish(inventory.inventory_results(gpus, host.nvidia_gpus_on_pci, driver, cuda, self.profile))

    def _gpu_phase(self, live: list[GpuInfo], paths: "RunPaths") -> TelemetrySummary | None:
        """Stress every working GPU while telemetry watches, then judge what telemetry saw."""
        if not live:
            self._publish([CheckResult("stress.burn", "node", Verdict.SKIP, "no working GPUs to load", code="NO_GPUS")])
            return None
        selection = self.options.selection
        if self.aborted or not (selection.needs_gpu_phase or self._burn_in_selected):
            return None
        in_use = self._gpus_in_use(live)
        summary = self._stress_and_watch(live, paths, in_use)
        self._publish(health.health_results(live, summary.gpus, self.profile))
        return summary

    def _gpus_in_use(self, live: list[GpuInfo]) -> set[int]:
        """Before any load: the GPUs another process computes on (they sit out the stress)."""
        own = own_pids()
        results = []
        for g in live:
            try:
                listed = self.hw.mgmt.processes(g.index)
            except GpuLostError:
                continue  # health.gpu_lost reports it
            results.append((g.index, gpu_free(g, listed if is_na(listed) else [p for p in listed if p.pid not in own])))
        self._publish([r for _, r in results])
        return {i for i, r in results if r.verdict is Verdict.ERROR}

    def _host_phase(self, host: HostInfo) -> None:
        if not self.aborted:
            self._publish(host_checks.host_results(host, self.profile))
            self._publish(self._platform.health_results(self.profile))
            if not self.options.quick:
                host_stress_phase(self.hw.host_stress, self.hw.no_host_reason(), bool(self._live_gpus), self.profile,
                                  self.options.selection, self._nics_start, lambda: self.aborted, self._publish,
                                  self._emit)

    def _conformance_phase(self, host: HostInfo, gpus: list[GpuInfo], driver: str, cuda: str) -> None:
        """The node against its golden baseline: firmware, software, settings, topology."""
        self._platform.observe(gpus, driver, cuda, host, self._nics_start if self.hw.nics is not None else None)
        if self._baseline is None or self.aborted:
            return
        b = self._baseline
        if self._platform.observed is None:
            # Nothing read is not "every device missing": the comparison could not run (exit 2).
            why = self._platform.unobserved or "the node's platform could not be read"
            self._publish([CheckResult(f"baseline.{name}", "node", Verdict.ERROR, f"not compared with {b.path.name}: {why}",
                                       code="BASELINE_NOT_READ") for name in CHECKS["baseline"]])
            return
        self._publish(conformance.judge_conformance(b.data, self._platform.observed or {}, b.warn, b.ignore,
                                          source=f"the baseline ({b.path.name})"))

    def _fleet_phase(self, host: HostInfo, gpus: list[GpuInfo]) -> None:
        """This run's figures against the fleet's in the archive (other nodes' newest reports of the
        same SKU): a GPU or node far below its fleet's median warns, with its percentile."""
        from nodeqc.core.names import node_key
        from nodeqc.archive.fleet import fleet_figures, own_figures
        from nodeqc.archive.index import Archive
        from nodeqc.checks.fleet import DEFAULT_MIN_FLEET, DEFAULT_OUTLIER_PCT, judge_run

        if self.aborted or not self.options.selection.includes("fleet.outlier"):
            return
        node = node_key(host.system_serial, host.hostname)
        archive = Archive(self.options.archive)
        try:
            fleet = fleet_figures(archive.reports(), node, self.hw.simulated)
        except Exception as e:  # noqa: BLE001 - an unreadable archive is no verdict on this node
            self._emit(Notice("warning", f"fleet outliers not judged: the archive {archive.root} could not be "
                                         f"read ({type(e).__name__}: {e})"))
            return
        finally:
            archive.close()
        own = own_figures(node, inventory.describe_gpus(gpus), [r.to_dict() for r in self._results])
        self._publish(judge_run(own, fleet, self.profile.get("fleet", "outlier_pct", DEFAULT_OUTLIER_PCT),
                                self.profile.get("fleet", "min_fleet", DEFAULT_MIN_FLEET)))

    def _nic_phase(self) -> None:
        """Judge the NICs: their traffic (started now unless it ran beside the burn), then their state."""
        if not self.aborted and self._nic.selected:
            self._publish(self._nic.results(self._nics_start, self._live_gpus, lambda: self.aborted))

    def _open_gpus(self, host: HostInfo) -> tuple[list[GpuInfo], str, str, str | None]:
        try:
            found = open_gpus(self.hw, host)
        except BackendUnavailable as e:
            return [], "N/A", "N/A", str(e)
        return found.gpus, found.driver, found.cuda, None

    def _stress_and_watch(self, gpus: list[GpuInfo], paths: RunPaths, in_use: set[int]) -> TelemetrySummary:
        by_index = {g.index: g for g in gpus}

        def on_sample(t: float, readings: dict[int, GpuSample | None]) -> None:
            self._listener(TelemetrySampled(t, {by_index[i].subject: s for i, s in readings.items()}))

        hz = self.options.sample_hz or self.profile.get("run", "sample_hz")
        sampler = TelemetrySampler(self.hw.mgmt, gpus, self.hw.clock, self.t0, hz, paths.telemetry, on_sample,
                                   own_pids=own_pids)
        sampler.start()
        try:
            # One worker process per GPU for every step (start-up paid once), started now so its
            # imports overlap the idle readings; no GPU is touched until the first task.
            with WorkerPool(self.hw.compute_spec) as pool:
                with self.hw.clock.host_paced():  # a simulated node's workers start at the host's own pace
                    pool.start([g.index for g in gpus if g.index not in in_use])
                self.hw.clock.sleep(IDLE_BASELINE_S)
                ready_by = time.monotonic() + WORKER_READY_WAIT_S
                with self.hw.clock.host_paced():
                    while not pool.wait_ready(0.25) and not self.aborted and time.monotonic() < ready_by:
                        pass
                failed = self._stress(gpus, sampler, in_use, pool)
                self._burn_in_phase([g for g in gpus if g.index not in failed], sampler, pool)
                with self.hw.clock.host_paced():  # and end at it (0.2 s, 2 s of a compressed clock)
                    pool.close()
        finally:
            with self.hw.clock.host_paced():
                summary = sampler.stop()
        return summary

    def _stress(self, gpus: list[GpuInfo], sampler: TelemetrySampler, in_use: set[int], pool: WorkerPool) -> dict[int, str]:
        """Each step of the stress plan on every GPU still standing; a GPU whose worker hung, crashed
        or lost its GPU sits out the later steps (it has already failed, with the evidence), and so
        does a GPU another process was using. Returns those GPUs, with the check each failed in."""
        failed: dict[int, str] = {i: "stress.gpu_free" for i in in_use}
        watchdog = watchdog_for(self.hw, self.profile)
        for step in stress_plan.PLAN:
            if self.aborted:
                return failed
            if not self.options.selection.includes(step.name):
                continue
            if step.needs_rdma_floor and self.profile.threshold("nic", step.needs_rdma_floor) is None:
                continue  # the profile does not ask for it (no published floor for this node)
            if step.needs_rdma_floor and not any(n.ib_ports for n in self._nics_start):
                # The profile asks for NCCL through the NICs (it gives the floor): a node without the RDMA
                # NICs it promises fails, where it was a skip advising to install NCCL (the 2026-11-28
                # advice review).
                self._publish([CheckResult(step.name, "node", Verdict.FAIL, "no RDMA NIC on this node, where the "
                                           "profile measures NCCL through them (InfiniBand or RoCE)", code="NIC_COUNT")])
                continue
            live = [g for g in gpus if g.index not in failed]
            sitting_out = [CheckResult(step.name, g.subject, Verdict.SKIP, "not run: another process is using this GPU",
                                       code="GPU_IN_USE") if g.index in in_use else
                           CheckResult(step.name, g.subject, Verdict.SKIP, f"not run: this GPU failed {failed[g.index]}",
                                       code="SKIPPED_EARLIER_FAILURE") for g in gpus if g.index in failed]
            if not step.per_gpu and len(live) < 2:
                if self._one_gpu_node:  # nothing to pair it with: not a check left unrun
                    self._publish([CheckResult(step.name, "node", Verdict.SKIP, "not applicable: one GPU on this node",
                                               code="ONE_GPU_NA")])
                else:
                    self._publish([CheckResult(step.name, "node", Verdict.SKIP, "needs two or more working GPUs")])
                continue
            subjects = [g.subject for g in live]
            self._emit(CheckStarted(step.name, subjects + ([] if step.per_gpu and not step.watch_psus else ["node"])
                                    + [r.subject for r in sitting_out], self.now()))
            by_index = {g.index: g for g in live}
            if step.name == "stress.burn" and not self._burn_in_selected:  # burn-in starts its own, as long
                self._nic.start_beside(burn_seconds(self.profile, self.options.quick), self._nics_start, live)
            psus = self._watch_psus() if step.watch_psus else None
            sampler.open_window(step.name)

            def on_progress(task: Task, fraction: float, figures: dict[str, Any], step: Any = step) -> None:
                step.on_progress(task.gpu, figures, sampler, psus)
                self._progress(step.name, by_index[task.gpu].subject if not task.gpus else "node", fraction, figures)
            release = None
            try:
                # A step judged from telemetry alone holds its load until the sampler, at the pace it
                # really keeps, has read it (bounded by MAX_TELEMETRY_WAIT_S).
                min_wall_s = min(MAX_TELEMETRY_WAIT_S, sampler.wall_s_to_see(step.loaded_samples, step.settle_s)) \
                    if step.loaded_samples else 0.0
                release = self._release_files(sampler, step, live) if step.settle_s else None
                tasks = step.tasks(live, self.profile, self.options.quick, self.t0, min_wall_s, self.hw.clock.scale,
                                   release[:2] if release else None)
                outcomes = run_tasks(tasks, self.hw.compute_spec, watchdog, on_progress=on_progress,
                                     should_abort=lambda: self.aborted, pool=pool)
            finally:
                windows = sampler.close_window(step.name)
                if release:
                    scratch.remove(release[2])
                self._platform.drain_kernel_log()
                psu_run = psus.finish(after=not self.aborted) if psus is not None else None
            results = step.judge(live, outcomes, windows, self.profile, None if self.aborted else psu_run)
            if step.per_gpu:
                for o in outcomes:
                    if o.status in (STATUS_HANG, STATUS_CRASH, STATUS_LOST):
                        failed[o.task.gpu] = step.name
            for r in results + sitting_out:
                self._finish(r)
        return failed

    @staticmethod
    def _release_files(sampler: TelemetrySampler, step: Any,
                       live: list[GpuInfo]) -> tuple[dict[int, Path], float, Path]:
        """Each GPU's load held, past its planned seconds, until telemetry has its readings a second
        in (bounded by MAX_TELEMETRY_WAIT_S): the pace the sampler kept before is no promise. Eight
        times as many readings of any kind say NVML gives none of use (no power, no utilisation):
        holding the load longer would not change that."""
        where = Path(tempfile.mkdtemp(prefix=scratch.prefix("release")))
        files = {g.index: where / f"gpu{g.index}" for g in live}
        n = step.loaded_samples
        sampler.release_when(step.name, files, lambda w: w.held_power_w.count >= n or w.samples >= 8 * n)
        return files, MAX_TELEMETRY_WAIT_S, where

    def _watch_psus(self) -> BmcWatch:
        """The BMC read before a power test (and, once a run, each sensor's thresholds); the
        thread that reads it at the test's marks runs until finish()."""
        watch = BmcWatch(self.hw.bmc, self.now)
        watch.start(self._bmc_thresholds)
        if watch.run.thresholds is not None or watch.run.thresholds_error:
            self._bmc_thresholds = (watch.run.thresholds, watch.run.thresholds_error)
        return watch

    @property
    def _burn_in_selected(self) -> bool:
        return self.burn_in_s > 0 and self.options.selection.includes("burnin.stability")

    @property
    def burn_in_s(self) -> float:
        chosen = self.options.burn_in_s
        return float(self.profile.get("run", "burn_in_s", 0) if chosen is None else chosen)

    def _burn_in_phase(self, gpus: list[GpuInfo], sampler: TelemetrySampler, pool: WorkerPool) -> None:
        """Every GPU under matmul, memory and host-link traffic for the burn-in's duration, journal
        checkpoints as it goes, telemetry watching throughout."""
        seconds = self.burn_in_s
        if seconds <= 0 or not gpus or self.aborted or not self.options.selection.includes("burnin.stability"):
            return
        name = "burnin.stability"
        window_s = max(BURN_IN_WINDOW_MIN_S, seconds / 200)
        # A checkpoint (journal record, status line) at least every 5 minutes of an 8-hour burn-in: a
        # burn-in must not be silent for hours (gpu-burn prints every few seconds).
        checkpoint_s = max(60.0, min(300.0, seconds / 50))
        dtypes = self.profile.get("gpu", "dtypes", ["fp32"])
        dtype = next((d for d in ("bf16", "fp16", "fp32") if d in dtypes), dtypes[0])
        params = {"seconds": seconds, "window_s": window_s, "dtype": dtype, "seed": SEED,
                  "hbm_bytes": 256 * MIB, "pcie_bytes": 64 * MIB,
                  "bus_ids": {g.index: g.bus_id for g in gpus}}
        by_index = {g.index: g for g in gpus}
        recorder = BurnInRecorder(gpus)
        started = self.now()
        state = {"window": 0, "at": started}
        self._emit(CheckStarted(name, [g.subject for g in gpus], started))
        sampler.open_window("burnin-0")

        def checkpoint() -> None:
            closed = sampler.close_window(f"burnin-{state['window']}")
            self._platform.drain_kernel_log()
            recorder.add_interval(state["at"] - started, {by_index[i].subject: t for i, t in closed.items()})
            state["window"] += 1
            state["at"] = self.now()
            sampler.open_window(f"burnin-{state['window']}")
            assert self._journal is not None
            self._journal.append({"type": "checkpoint", "t": self.now(), "burn_in": recorder.snapshot()})
            self._emit(Notice("progress", status_line(recorder, self.now() - started, seconds)))

        def on_progress(task: Task, fraction: float, figures: dict[str, Any]) -> None:
            subject = by_index[task.gpu].subject
            if "window" in figures:
                recorder.add_window(subject, figures["window"])
            if self.now() - state["at"] >= checkpoint_s:
                checkpoint()
            self._progress(name, subject, fraction, {k: v for k, v in figures.items() if k != "window"})

        tasks = [Task("burn_in", g.index, params, seconds) for g in gpus]
        # Network traffic at the same time as the GPUs burn: power and heat at their worst together.
        self._nic.start_beside(seconds, self._nics_start, self._live_gpus, total_s=seconds)
        try:
            outcomes = run_tasks(tasks, self.hw.compute_spec, watchdog_for(self.hw, self.profile),
                                 on_progress=on_progress, should_abort=lambda: self.aborted, pool=pool)
        finally:
            closed = sampler.close_window(f"burnin-{state['window']}")
            recorder.add_interval(state["at"] - started, {by_index[i].subject: t for i, t in closed.items()})
        results, self._burn_in = judge_burn_in(gpus, {o.task.gpu: o for o in outcomes}, recorder, sampler.watch,
                                               self.profile, started, self.hw.clock.scale)
        self._burn_in.update({"seconds": seconds, "window_s": window_s, "dtype": dtype})
        for r in results:
            self._finish(r)

    def _progress(self, name: str, subject: str, fraction: float, figures: dict[str, Any]) -> None:
        now = time.monotonic()
        if fraction < 1.0 and now - self._progress_at.get(subject, 0.0) < PROGRESS_EVERY_S:
            return
        self._progress_at[subject] = now
        self._emit(CheckProgress(name, subject, fraction, figures))

    def _never_ran(self) -> list[CheckResult]:
        """A row for each selected check that an aborted run never reached (RUN_ABORTED), so the report
        lists what was left untested rather than leaving it out. Checks the run would not have had
        (a burn-in not asked for, a baseline not given, the fleet's and the NIC loop-back's own
        conditions) are not listed."""
        done = {r.name for r in self._results}
        wanted = [n for n in CHECK_NAMES if self.options.selection.includes(n) and n not in done]
        conditions = {"burnin.stability": self.burn_in_s > 0, "fleet.outlier": False,
                      "stress.nccl_net": self.profile.threshold("nic", "min_nccl_loopback_busbw_gbps") is not None}
        return [CheckResult(n, "node", Verdict.SKIP, "not run: the run was aborted before it", code="RUN_ABORTED")
                for n in wanted if conditions.get(n, True) and not (n.startswith("baseline.") and self._baseline is None)]

    # ------------------------------------------------------------------ the report

    def _conclude(self, paths: RunPaths, host: HostInfo, gpus: list[GpuInfo], driver: str, cuda: str,
                  summary: TelemetrySummary | None, started_at: str) -> RunOutcome:
        status = "aborted" if self.aborted else "complete"
        if self.aborted:
            self._publish(self._never_ran())
        if not self.aborted and (unjudged := nothing_judged(self._results)) is not None:
            self._finish(unjudged)
        verdict = "FAIL" if self.aborted else node_verdict(self._results)
        counts, failed = tally(self._results)
        described = inventory.describe_gpus(gpus)
        selection = self.options.selection
        the_answer = answer(self._results, described, verdict, status,
                            selection.describe() if selection.partial else None, self.hw.simulated)
        previous = self.options.previous
        if previous is not None:
            # A re-test: what became of each earlier failure, and which failures are new (also
            # after a report that passed).
            the_answer.repair = repair_outcome(self.options.previous, self.options.repair, self._results,
                                               the_answer.findings, self.options.repair_parts)
        escalate(the_answer.findings, self.options.prior_repairs, the_answer.repair)
        xids_returned(the_answer.findings, self._results, previous)  # an XID back after a reset: inspect
        finished = RunFinished(verdict, status, str(paths.report), counts, failed, the_answer,
                               self._planted() if self.hw.simulated and self.hw.faults else None)
        assert self._journal is not None
        self._journal.append(finished.to_dict())
        simulation = self.hw.simulation
        if simulation and (unrecorded := self.hw.mgmt.unrecorded()):
            simulation = {**simulation, "unrecorded": unrecorded}
            self._emit(Notice("warning", describe_unrecorded(unrecorded)))
        if finished.planted is not None:
            simulation = {**(simulation or {}), "planted": finished.planted}
        predicate = build_predicate(
            verdict=verdict, status=status, results=self._results, the_answer=the_answer, profile=self.profile,
            selection=selection, quick=self.options.quick, host=host, driver=driver, cuda=cuda, gpus=described,
            simulated=self.hw.simulated, simulation=simulation, telemetry=summary, burn_in=self._burn_in,
            observed=self._platform.observed, baseline=self._baseline, journal=paths.journal,
            command=self.options.command, started_at=started_at, finished_at=utc_now(), duration_s=self.now(),
            operator=self.options.operator or current_user(), ticket=self.options.ticket,
            keyid=self.options.signer.keyid, previous=previous)
        try:
            write_envelope(paths.report, sign(statement(predicate), self.options.signer))
        except OutputError as e:
            # The journal must not end on "finished: PASS" with no report on disk (disk full).
            try:
                self._journal.append({"type": "report_not_written", "t": self.now(), "reason": str(e)})
            except OutputError:
                pass
            raise
        finally:
            self._journal.close()
        self._listener(finished)
        return RunOutcome(verdict, status, paths.report, list(self._results), finished.planted)

    def _planted(self) -> list[dict[str, str]]:
        """What became of each fault planted in the simulated node (nodeqc.run.planted)."""
        from nodeqc.checks.nic import select as nic_plan

        tested = {c.nic.name for c in nic_plan(self._nics_start, self.profile, {p.nic for p in self.options.nic_peers if p.nic}).checked}
        return planted_outcomes(self.hw.faults, self._results, quick=self.options.quick, selection=self.options.selection,
                                nic_names=[n.name for n in self._nics_start], nic_tested=tested.__contains__)
