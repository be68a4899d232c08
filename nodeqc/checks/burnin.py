"""Burn-in: hours of load while every health check watches. What it adds to the verdict: when each
kind of failure first happened, and how rates, temperatures and clocks drifted from the start to the
end. Memory stays bounded however long it runs: window lists merge in pairs when they fill up."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from nodeqc.backends.base import GpuInfo
from nodeqc.checks.common import Judgement, fold, judge
from nodeqc.checks.diagnosis import apply, describe_processes, diagnose_drift
from nodeqc.checks.stress.outcomes import outcome_failure
from nodeqc.core.known_answer import relative_deficit_pct
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import FAILING_REASONS, GpuTelemetry
from nodeqc.work.workers import Outcome

MAX_WINDOWS = 128


def merge_pairs(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Halve a list of windows by merging neighbours: times from the first, figures averaged, and any
    failure kept."""
    out = []
    for a, b in zip(items[::2], items[1::2] + [None]):
        if b is None:
            out.append(a)
            continue
        merged = {"t_s": a["t_s"]}
        for k, v in a.items():
            if k != "t_s" and isinstance(v, (int, float)) and isinstance(b.get(k), (int, float)):
                merged[k] = round((v + b[k]) / 2, 2)
        merged["sdc"] = a.get("sdc") or b.get("sdc")
        out.append(merged)
    return out


@dataclass
class GpuBurnIn:
    windows: list[dict[str, Any]] = field(default_factory=list)  # from the worker
    intervals: list[dict[str, Any]] = field(default_factory=list)  # from telemetry
    first_sdc: dict[str, Any] | None = None

    @staticmethod
    def _append(items: list[dict[str, Any]], item: dict[str, Any]) -> list[dict[str, Any]]:
        items.append(item)
        return merge_pairs(items) if len(items) > MAX_WINDOWS else items


class BurnInRecorder:
    def __init__(self, gpus: list[GpuInfo]):
        self.gpus = {g.subject: GpuBurnIn() for g in gpus}

    def add_window(self, subject: str, window: dict[str, Any]) -> None:
        g = self.gpus[subject]
        if window.get("sdc") and g.first_sdc is None:
            g.first_sdc = {"t_s": window["t_s"], **window["sdc"]}
        g.windows = g._append(g.windows, window)

    def add_interval(self, t_s: float, by_subject: dict[str, GpuTelemetry]) -> None:
        """One telemetry interval of each GPU, from its readings under load only. Idle readings say
        nothing of how the burn-in drifted: the interval that closes as the work ends (workers
        stopping, memory released) can hold only those, and its clock and temperature would pass
        for the end of the burn-in. An interval with no reading under load is left out."""
        for subject, tel in by_subject.items():
            if subject not in self.gpus or tel.loaded_samples == 0:
                continue
            g = self.gpus[subject]
            g.intervals = g._append(g.intervals, {
                "t_s": round(t_s, 1), "temp_c": _rounded(tel.loaded_temp_c.mean, 1),
                "sm_clock_mhz": _rounded(tel.loaded_sm_clock_mhz.mean, None),
                "power_w": _rounded(tel.loaded_power_w.mean, 1), "throttle_s": round(tel.failing_throttle_s(), 2)})

    def snapshot(self) -> dict[str, Any]:
        """What a journal checkpoint keeps: the latest window and interval of each GPU."""
        return {s: {"windows": len(g.windows), "last_window": g.windows[-1] if g.windows else None,
                    "last_interval": g.intervals[-1] if g.intervals else None, "first_sdc": g.first_sdc}
                for s, g in self.gpus.items()}


def _duration(seconds: float) -> str:
    h, m = divmod(int(round(seconds / 60)), 60)
    return f"{h}h{m:02d}m" if h else f"{m}m"


def status_line(recorder: BurnInRecorder, elapsed_s: float, total_s: float) -> str:
    """How a burn-in stands, for the people waiting on it (as gpu-burn prints its own): elapsed and
    left, each GPU's latest rate, temperature and power, and the wrong results found so far."""
    parts = []
    for subject, g in recorder.gpus.items():
        window = g.windows[-1] if g.windows else {}
        interval = g.intervals[-1] if g.intervals else {}
        said = [f"{window['tflops']:g} TFLOP/s" if isinstance(window.get("tflops"), (int, float)) else "no window yet"]
        said += [f"{interval[k]:.0f} {unit}" for k, unit in (("temp_c", "C"), ("power_w", "W"))
                 if isinstance(interval.get(k), (int, float))]
        parts.append(f"{subject} {' '.join(said)}")
    wrong = [s for s, g in recorder.gpus.items() if g.first_sdc is not None]
    return (f"burn-in {_duration(elapsed_s)} of {_duration(total_s)} ({_duration(max(0.0, total_s - elapsed_s))} "
            f"left): {'; '.join(parts)}; wrong results so far: {', '.join(wrong) if wrong else 'none'}")


def _rounded(x: Any, digits: int | None) -> Any:
    """A mean for the report; None where NVML never answered that reading (NotSupported)."""
    return None if is_na(x) else round(x, digits)


def _drift(items: list[dict[str, Any]], key: str) -> tuple[float, float] | None:
    """Mean of the first and of the last tenth (at least one) of a series."""
    values = [w[key] for w in items if isinstance(w.get(key), (int, float))]
    if len(values) < 2:
        return None
    n = max(1, len(values) // 10)
    return statistics.mean(values[:n]), statistics.mean(values[-n:])


# Drift is the first windows' figures against the last ones' (_drift), so a burn-in shows it only
# with two windows or more. Each window is at least BURN_IN_WINDOW_MIN_S of the run's clock (the
# runner's window is seconds / 200, no shorter): a burn-in asked for less than BURN_IN_MIN_S could
# show none, and is refused before it starts (run/flow.py). nodeqc's choice: a minute of load is
# what gpu-burn's own reports average over.
BURN_IN_MIN_WINDOWS = 2
BURN_IN_WINDOW_MIN_S = 60.0
BURN_IN_MIN_S = BURN_IN_MIN_WINDOWS * BURN_IN_WINDOW_MIN_S

# The burn-in's loop ends at the first window past its planned seconds, so a whole burn-in reports
# at least its plan; nine tenths leaves room for a clock read before the last window closed.
BURN_IN_MIN_SHARE = 0.9


def _burn_in_short(o: Outcome, rec: Any) -> str | None:
    """Why a burn-in that ended well did not do its work: fewer seconds than planned (the worker's own
    count, on the run's clock), or fewer windows than drift is judged from. None where it did."""
    planned, ran = o.task.params.get("seconds"), (o.result or {}).get("seconds")
    if isinstance(planned, (int, float)) and planned > 0 and (
            not isinstance(ran, (int, float)) or not ran >= BURN_IN_MIN_SHARE * planned):
        return f"the burn-in ran {ran!r} s of its {planned:g} s in {len(rec.windows)} window(s)"
    if len(rec.windows) < BURN_IN_MIN_WINDOWS:
        return (f"the burn-in recorded {len(rec.windows)} window(s), and drift needs {BURN_IN_MIN_WINDOWS}"
                if rec.windows else "the burn-in recorded no window")
    return None


def judge_burn_in(gpus: list[GpuInfo], outcomes: dict[int, Outcome], recorder: BurnInRecorder,
                  telemetry: dict[int, GpuTelemetry], profile: Profile, started_s: float,
                  time_scale: float) -> tuple[list[CheckResult], dict[str, Any]]:
    """Per-GPU verdicts, and the report's burn-in section (first failures of each kind, on the run's
    clock, and drift). `started_s` is when the burn-in began on the run's clock."""
    name = "burnin.stability"
    limit = profile.threshold("gpu", "max_burnin_drift_pct")
    results, drift, first = [], {}, {}

    def first_of(kind: str, t: float | None, subject: str, detail: str) -> None:
        if t is not None and (kind not in first or t < first[kind]["t_s"]):
            first[kind] = {"t_s": t, "subject": subject, "detail": detail}

    for g in gpus:
        rec = recorder.gpus[g.subject]
        o = outcomes[g.index]
        tel = telemetry.get(g.index)
        rate = _drift(rec.windows, "tflops")
        temp = _drift(rec.intervals, "temp_c")
        clock = _drift(rec.intervals, "sm_clock_mhz")
        drift[g.subject] = {"tflops": rate, "temp_c": temp, "sm_clock_mhz": clock, "windows": rec.windows,
                            "intervals": rec.intervals}
        if not o.ok:
            first_of(f"worker {o.status}", round(started_s + o.elapsed_s * time_scale, 1),
                     g.subject, o.detail.splitlines()[0] if o.detail else o.status)
        if rec.first_sdc:
            first_of("silent data corruption", round(started_s + rec.first_sdc["t_s"], 1), g.subject,
                     f"{rec.first_sdc['count']} wrong element(s)")
        if tel is not None:
            onsets = [e for e in tel.throttle_onsets.kept if set(e["reasons"]) & set(FAILING_REASONS)]
            if onsets:
                first_of("throttling", onsets[0]["t_s"], g.subject, ", ".join(onsets[0]["reasons"]))
            if tel.xids.kept:
                first_of("XID", tel.xids.kept[0]["t_s"], g.subject, f"XID {tel.xids.kept[0]['code']}")
            if tel.lost_at_s is not None:
                first_of("GPU lost", tel.lost_at_s, g.subject, "fell off the bus")
            for counter, t in tel.counter_first_change.items():
                if counter != "nvlink_active":
                    first_of(f"{counter} grew", t, g.subject, counter)
        failure = outcome_failure(name, g.subject, o)
        if failure:
            results.append(failure)
            continue
        findings = []
        short = _burn_in_short(o, rec)
        if short and not rec.first_sdc:  # wrong results stand however long it ran
            results.append(CheckResult(name, g.subject, Verdict.ERROR, f"{short}: its stability was not shown",
                                       code="BURN_IN_SHORT", values={"windows": Value(len(rec.windows))}))
            continue
        if rec.first_sdc:
            findings.append(Judgement(Verdict.FAIL, "SDC_BURN_IN",
                                    f"a known-answer product came back wrong {rec.first_sdc['t_s']:g} s into the burn-in "
                                    f"({rec.first_sdc['count']} element(s))"))
        values = {"windows": Value(len(rec.windows))}
        if rate:
            fall = round(relative_deficit_pct(rate[1], rate[0]), 1)
            values.update({"tflops_start": Value(round(rate[0], 1), "TFLOP/s"), "tflops_end": Value(round(rate[1], 1), "TFLOP/s"),
                           "rate_fall_pct": Value(fall, "%")})
            findings.append(judge(limit, fall, "BURN_IN_DRIFT", "matmul rate fell from start to end by", "%"))
        if temp:
            values["temp_start"], values["temp_end"] = Value(round(temp[0], 1), "C"), Value(round(temp[1], 1), "C")
        if not findings:  # windows without a rate: the worker's figures, not its time, were missing
            findings.append(Judgement(Verdict.ERROR, "BURN_IN_SHORT", f"no matmul rate in its {len(rec.windows)} "
                                      "windows: its drift was not shown"))
        result = fold(name, g.subject, findings, values, [limit], key="rate_fall_pct" if rate else "windows")
        if result.verdict is Verdict.PASS and rate:
            result.message = (f"{len(rec.windows)} windows: {rate[0]:.1f} -> {rate[1]:.1f} TFLOP/s"
                              + (f", {temp[0]:.0f} -> {temp[1]:.0f} C" if temp else "") + ", results exact")
        # Processes that computed on the GPU while the burn-in ran (the stress had it to itself).
        others = [p for p in ((tel.other_processes or {}).values() if tel else []) if p["last_t_s"] >= started_s]
        if result.code == "BURN_IN_DRIFT" and result.verdict in (Verdict.WARN, Verdict.FAIL) and rate:
            ends = [{k: round(v[i], 1) for k, v in (("tflops", rate), ("sm_clock_mhz", clock), ("temp_c", temp)) if v}
                    for i in (0, 1)]
            apply(result, diagnose_drift(ends[0], ends[1], others, warn=result.verdict is Verdict.WARN))
        elif others and result.verdict is Verdict.PASS:
            result.message += f"; another process used this GPU during the burn-in: {describe_processes(others)}"
        results.append(result)
    # A list in time order: the signed report is canonical JSON, whose tables have sorted keys.
    firsts = [{"kind": kind, **f} for kind, f in sorted(first.items(), key=lambda kv: kv[1]["t_s"])]
    return results, {"first_failures": firsts, "drift": drift}
