"""The stress plan: each step names its workload (nodeqc/work/workloads.py), the params it runs with,
how long it may take, and the judge of what came back, in the order the steps run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from nodeqc.backends.base import GpuInfo
from nodeqc.checks.psu import judge_psu
from nodeqc.checks.stress.burn import burn_params, judge_burn
from nodeqc.checks.stress.memory import HBM_LOADED_SAMPLES, hbm_params, judge_hbm, judge_memtest, memtest_params
from nodeqc.checks.stress.nccl import judge_nccl, judge_nccl_net, nccl_net_params, nccl_params
from nodeqc.checks.stress.p2p import judge_p2p, p2p_params
from nodeqc.checks.stress.pcie import judge_pcie, pcie_params
from nodeqc.checks.stress.power import POWER_LOADED_SAMPLES, judge_power, power_params
from nodeqc.checks.stress.pulse import judge_pulse, pulse_params
from nodeqc.core.catalogue import FAMILIES
from nodeqc.core.model import CheckResult
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import POWER_SETTLE_S
from nodeqc.work.workers import Outcome, Task


STRESS = next(f for f in FAMILIES if f.name == "stress")


@dataclass(frozen=True)
class Step:
    name: str
    workload: str
    params: Callable[[Profile, bool], dict[str, Any]]
    expected_s: Callable[[dict[str, Any]], float]  # a generous bound on the run's clock, for the watchdog
    per_gpu: bool = True  # one task per GPU; else one task across every GPU
    judge_per_gpu: Callable[..., list[CheckResult]] | None = None
    judge_node: Callable[..., list[CheckResult]] | None = None
    # Runs only where the profile sets this floor and the node has an RDMA port (else skipped, saying so).
    needs_rdma_floor: str | None = None
    # Judged from telemetry alone: the load lasts long enough (in real time) for this many readings.
    loaded_samples: int = 0
    # ... that many from this many seconds of the run's clock into the load (the power figure's).
    settle_s: float = 0.0
    # The node's PSUs are read from its BMC before, during and after the step (nodeqc.checks.psu).
    watch_psus: bool = False

    def tasks(self, gpus: list[GpuInfo], profile: Profile, quick: bool, run_t0: float = 0.0,
              min_wall_s: float = 0.0, time_scale: float = 1.0,
              release: tuple[dict[int, Path], float] | None = None) -> list[Task]:
        """run_t0: the run clock's reading at the run's start, which telemetry counts time from;
        min_wall_s: real seconds the load must last at least (run-clock seconds = real x time_scale);
        release: each GPU's release file and the most real seconds its load waits for it
        (TelemetrySampler.release_when)."""
        params = {**self.params(profile, quick), "bus_ids": {g.index: g.bus_id for g in gpus}, "run_t0": run_t0}
        if min_wall_s > 0:
            params["min_wall_s"] = min_wall_s
        waited = max(min_wall_s, release[1]) if release else min_wall_s
        expected = self.expected_s(params) + waited * time_scale
        if self.per_gpu:
            if release:
                return [Task(self.workload, g.index, {**params, "release_file": str(release[0][g.index]),
                                                      "max_wall_s": release[1]}, expected) for g in gpus]
            return [Task(self.workload, g.index, params, expected) for g in gpus]
        return [Task(self.workload, gpus[0].index, params, expected, gpus=tuple(g.index for g in gpus))]

    def on_progress(self, gpu: int, figures: dict[str, Any], telemetry: Any, psus: Any | None) -> None:
        """The step's own protocol, as its workload reports progress. A figure `bound` says a phase
        starts or ends (the pulse test's steady load and each period, the burn's dtypes): the driver's counters are read
        there (telemetry.mark_counters), and the PSUs when they are watched. Any other progress of a
        watched step is a chance to poll the PSUs. `bound` and `period_s` are taken out of `figures`:
        what is left is progress for the people watching."""
        if "bound" in figures:
            bound, period = figures.pop("bound"), figures.pop("period_s", None)
            mark = {"bound": bound, "period_s": period}
            if "dtype" in figures:  # the burn's dtypes, each a phase of its own
                mark["dtype"] = figures["dtype"]
            telemetry.mark_counters(gpu, mark)
            if psus is not None:
                psus.mark(f"at the {bound} of the " + ("steady load" if not period else f"{period * 1000:g} ms period"),
                          period)
        elif psus is not None:
            psus.poll(f"during the {figures['period_ms']:g} ms period" if "period_ms" in figures else "during the test")

    def judge(self, gpus: list[GpuInfo], outcomes: list[Outcome], windows: dict[int, Any], profile: Profile,
              psu_run: Any | None = None) -> list[CheckResult]:
        """The step's verdicts on what its tasks returned and telemetry saw; with `psu_run`, what the
        BMC read of the PSUs during the step (nodeqc.checks.psu)."""
        if self.per_gpu:
            results = self.judge_per_gpu(gpus, {o.task.gpu: o for o in outcomes}, windows, profile)
        else:
            results = self.judge_node(gpus, outcomes[0], profile, windows)
        if psu_run is not None:
            results.append(judge_psu(self.name, psu_run))
        return results


# The work of each stress check but stress.gpu_free (which asks NVML, before any work, whether
# another process is on the GPU: nodeqc.checks.processes).
STEPS: tuple[Step, ...] = (
    Step("stress.burn", "matmul_burn", burn_params, lambda p: p["seconds"] + 60, judge_per_gpu=judge_burn),
    Step("stress.power", "plain_load", power_params, lambda p: p["seconds"] + 60, judge_per_gpu=judge_power,
         loaded_samples=POWER_LOADED_SAMPLES, settle_s=POWER_SETTLE_S, watch_psus=True),
    Step("stress.power_pulse", "pulse", pulse_params,
         lambda p: (len(p["periods_s"]) + 1) * (p["seconds_per_period"] + 2) + 60, judge_per_gpu=judge_pulse,
         watch_psus=True),
    Step("stress.hbm_bandwidth", "hbm", hbm_params, lambda p: 60, judge_per_gpu=judge_hbm,
         loaded_samples=HBM_LOADED_SAMPLES),
    Step("stress.memtest", "memtest", memtest_params, lambda p: 180 + 2 * p["retention_s"] + p.get("min_s", 0),
         judge_per_gpu=judge_memtest),
    Step("stress.pcie_bandwidth", "pcie", pcie_params, lambda p: p["min_seconds"] + 60, judge_per_gpu=judge_pcie),
    Step("stress.p2p", "p2p", p2p_params, lambda p: 120, per_gpu=False, judge_node=judge_p2p),
    Step("stress.nccl", "nccl", nccl_params, lambda p: 120, per_gpu=False, judge_node=judge_nccl),
    Step("stress.nccl_net", "nccl", nccl_net_params, lambda p: 120, per_gpu=False,
         judge_node=judge_nccl_net, needs_rdma_floor="min_nccl_loopback_busbw_gbps"),
)
# In the catalogue's order (nodeqc.core.catalogue), the one list of checks; tests/test_selection.py
# holds that every stress check but gpu_free has its step and no step is outside the catalogue.
PLAN: list[Step] = [step for name in STRESS.names for step in STEPS if step.name == name]
