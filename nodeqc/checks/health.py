"""Health: what telemetry saw of each GPU over the run, judged apart from the workloads that loaded it.

Each function takes the GPU's inventory record, its telemetry and the profile, and returns one result.
"""

from __future__ import annotations

from typing import Any, Callable

from nodeqc.backends.base import GpuCounters, GpuInfo
from nodeqc.checks.common import ON_THIS_GPU, Judgement, fmt, fold, judge, skip
from nodeqc.core.model import CheckResult, Threshold, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.core.xids import XID_READ, XID_SOURCE, lookup
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import FAILING_REASONS, GpuTelemetry

# Thermal margin to the GPU's own slowdown temperature: below 0 the GPU is throttling for heat; within
# 5 C of it there is no headroom for a warmer day (nodeqc's choice).
SLOWDOWN_MARGIN = Threshold("slowdown_margin_c", "min", fail=0, warn=5, unit="C")
MEM_MARGIN = Threshold("mem_max_margin_c", "min", fail=0, warn=5, unit="C")


def temperature(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    name = "health.temperature"
    hottest, mem_hottest = tel.stats["temp_c"].max, tel.stats["mem_temp_c"].max
    if is_na(hottest):
        # Not watched under load is not shown safe: every reading garbage (2^64-1 C, made NA at the
        # NVML boundary) skipped the check and the GPU qualified (2026-11-29 fuzzing).
        return CheckResult(name, gpu.subject, Verdict.ERROR, "the GPU gave no valid temperature reading (not "
                           "supported, or values no sensor gives): its heat was not watched", code="NOT_READ")
    values = {"temp_max": Value(hottest, "C"), "temp_mean": Value(round(tel.stats["temp_c"].mean, 1), "C"),
              "mem_temp_max": Value(mem_hottest, "C")}
    limit, mem_limit = profile.threshold("gpu", "max_temp_c"), profile.threshold("gpu", "max_mem_temp_c")
    findings, thresholds = [], []
    # The GPU's own slowdown temperature first: reaching it is the more specific finding.
    if not is_na(gpu.temp_slowdown_c):
        margin = gpu.temp_slowdown_c - hottest
        values["slowdown_margin"] = Value(round(margin, 1), "C")
        near = judge(SLOWDOWN_MARGIN, round(margin, 1), "TEMP_SLOWDOWN",
                     f"margin to the GPU's slowdown temperature ({fmt(gpu.temp_slowdown_c, 'C')})", "C")
        if near.verdict is not Verdict.PASS:
            # The peak first, as the plot shows it: "margin ... -2.8 C is below the limit 0 C" read as
            # nothing at the rack (the 2026-11-28 review).
            where = (f"{fmt(round(-margin, 1), 'C')} past" if margin < 0 else f"only {fmt(round(margin, 1), 'C')} below")
            near = Judgement(near.verdict, near.code, f"GPU temperature peaked at {fmt(hottest, 'C')}, {where} its "
                             f"slowdown temperature ({fmt(gpu.temp_slowdown_c, 'C')}; nodeqc asks for "
                             f"{fmt(SLOWDOWN_MARGIN.warn, 'C')} of headroom)")
        findings.append(near)
        thresholds.append(SLOWDOWN_MARGIN)
    high = judge(limit, hottest, "TEMP_HIGH", "GPU temperature peaked at", "C")
    if high.verdict is not Verdict.PASS and limit is not None and findings and findings[0].verdict is not Verdict.PASS:
        # The peak said once, by the finding before: this one adds the profile's level.
        level = limit.fail if high.verdict is Verdict.FAIL else limit.warn
        high = Judgement(high.verdict, high.code, f"above the profile's {'limit' if high.verdict is Verdict.FAIL else 'warning level'} "
                         f"{fmt(level, 'C')}")
    findings.append(high)
    thresholds.append(limit)
    if not is_na(mem_hottest):
        findings.append(judge(mem_limit, mem_hottest, "MEM_TEMP_HIGH", "memory temperature peaked at", "C"))
        thresholds.append(mem_limit)
        if not is_na(gpu.temp_mem_max_c):
            margin = gpu.temp_mem_max_c - mem_hottest
            values["mem_max_margin"] = Value(round(margin, 1), "C")
            findings.append(judge(MEM_MARGIN, round(margin, 1), "MEM_TEMP_HIGH",
                                  f"margin to the memory's maximum ({fmt(gpu.temp_mem_max_c, 'C')})", "C"))
            thresholds.append(MEM_MARGIN)
    result = fold(name, gpu.subject, findings, values, thresholds, key="temp_max")
    if result.verdict is Verdict.PASS and tel.loaded_samples == 0:
        # Idle readings say nothing of the temperature under load: no PASS from them (the driver's
        # thermal-slowdown counters, judged by health.throttle, still see heat between samples).
        # Either the GPU sat out the stress (another process on it, the stress not run) or no sample
        # landed in its load: said as the PCIe link says it, the code's remedy covering both.
        return skip(name, gpu.subject, f"the GPU was never seen under load, so its temperature under load was not "
                    f"judged ({tel.samples} idle sample(s), peak {fmt(hottest, 'C')})", code="NO_LOAD")
    if result.verdict is Verdict.PASS:
        result.message = f"GPU temperature peaked at {fmt(hottest, 'C')}" + (
            f", {fmt(values['slowdown_margin'].value, 'C')} below its slowdown" if "slowdown_margin" in values else "")
    return result


def throttle(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    """Reasons are a bitmask and combine: each is timed on its own. Thermal, HW slowdown and power
    brake count against the limit; a software power cap is normal under full load and only reported."""
    name = "health.throttle"
    if tel.samples == 0:
        return skip(name, gpu.subject, "no clock-event readings")
    seen = [r for r in FAILING_REASONS if tel.throttle_s.get(r, 0) > 0]
    if not seen and tel.loaded_reason_samples == 0:
        # Nothing read of the reasons under load: "no throttling" would be a pass of nothing (it was,
        # for a GPU whose reasons NVML did not give, or one never under load). The driver's own
        # counters find a throttle at any sample rate, but do not count HW slowdown: only a sampled
        # reading under load can say there was none.
        why = ("the GPU was never seen under load" if tel.loaded_samples == 0 else
               f"none of its {tel.loaded_samples} sample(s) under load read the clock-event reasons")
        return skip(name, gpu.subject, f"{why}, so throttling under load was not judged", code="NO_LOAD")
    bad_s = round(tel.failing_throttle_s(), 2)
    cap_s = round(tel.throttle_s.get("sw_power_cap", 0.0), 2)
    values = {"throttle_s": Value(bad_s, "s"), "power_cap_s": Value(cap_s, "s"),
              **{f"{r}_s": Value(round(s, 2), "s") for r, s in sorted(tel.throttle_s.items())
                 if r in FAILING_REASONS}}
    limit = profile.threshold("gpu", "max_throttle_s")
    code = ("THROTTLE_POWER_BRAKE" if "power_brake" in seen else
            "THROTTLE_THERMAL" if {"sw_thermal", "hw_thermal"} & set(seen) else "THROTTLE_HW_SLOWDOWN")
    if seen:
        finding = judge(limit, bad_s, code, f"clocks cut ({', '.join(seen)}) for", "s")
    else:
        finding = Judgement(Verdict.PASS, None, "no thermal, HW-slowdown or power-brake throttling")
    notes = f"; power-capped for {cap_s:g} s (normal under full load, not a fault)" if cap_s > 0 else ""
    result = fold(name, gpu.subject, [finding], values, [limit], key="throttle_s",
                  evidence={"onsets": tel.throttle_onsets.to_dict()})
    result.message += notes
    return result


def pcie_link(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    """The link's generation and width while the GPU works: links downtrain at idle by design, so an
    idle reading proves nothing."""
    name = "health.pcie_link"
    idle = f"Gen{fmt(tel.pcie_idle_gen)} x{fmt(tel.pcie_idle_width)}"
    if tel.loaded_samples == 0:
        return skip(name, gpu.subject, f"the GPU was never seen under load, so its link was not judged "
                    f"(at idle: {idle})", code="NO_LOAD")
    if tel.pcie_loaded_gen.count == 0 or tel.pcie_loaded_width.count == 0:  # loaded, but no valid reading
        return CheckResult(name, gpu.subject, Verdict.ERROR, f"the GPU gave no valid link generation or width under "
                           f"load (not supported, or values no PCIe link has), so its link was not judged (at idle: "
                           f"{idle})", code="NOT_READ")
    gen, width = int(tel.pcie_loaded_gen.max), int(tel.pcie_loaded_width.max)
    want_gen = profile.get("gpu", "pcie_gen", gpu.pcie_max_gen)
    want_width = profile.get("gpu", "pcie_width", gpu.pcie_max_width)
    values = {"link": Value(f"Gen{gen} x{width}"), "gen": Value(gen), "width": Value(width),
              "max_gen": Value(gpu.pcie_max_gen), "max_width": Value(gpu.pcie_max_width),
              "min_width_under_load": Value(int(tel.pcie_loaded_width.min))}
    findings, thresholds = [], []
    for key, have, want, code, shown in (("pcie_width", width, want_width, "PCIE_WIDTH", f"x{want_width}"),
                                         ("pcie_gen", gen, want_gen, "PCIE_GEN", f"Gen{want_gen}")):
        if is_na(want):
            continue
        t = Threshold(key, "min", fail=want, warn=want)
        thresholds.append(t)
        if t.judge(have) is Verdict.FAIL:
            findings.append(Judgement(Verdict.FAIL, code, f"link Gen{gen} x{width} under load, expected {shown}"))
    if not findings:
        findings.append(Judgement(Verdict.PASS, None, f"Gen{gen} x{width} under load (at idle: {idle})"))
    return fold(name, gpu.subject, findings, values, thresholds, key="link")


def _delta(start: GpuCounters | None, end: GpuCounters | None, field: str) -> Any:
    if start is None or end is None:
        return None
    a, b = getattr(start, field), getattr(end, field)
    return None if is_na(a) or is_na(b) else b - a


# A rate over less than a minute says little (two replays in ten seconds is 12 a minute).
RATE_MIN_S = 60.0


def pcie_replay(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    """The replay counter's growth against the profile's count (DCGM fails more than 80 in one test
    window): a run's whole growth, or, over a run longer than the span (REPLAY_SPAN_S, ten minutes:
    a burn-in of hours), the most it grew in any one span of the run, read as the run went, so a
    slow count over hours is not held to one window's limit and a burst within ten minutes is. The
    rate a minute is said beside it where the run counted for a minute or more; it is not judged:
    the profile's warning count (8) is DCGM's lowest rate warning (8 a minute at Gen3) over a minute,
    so no rate under the count could warn."""
    name, what = "health.pcie_replay", "PCIe replay counter"
    growth = _delta(tel.counters_start, tel.counters_end, "pcie_replay")
    if growth is None:
        return skip(name, gpu.subject, f"{what} not available {ON_THIS_GPU}")
    limit = profile.threshold("gpu", "max_pcie_replays")
    seconds = tel.counters_end_t - tel.counters_start_t
    span = tel.pcie_replay_span
    values = {"growth": Value(growth), "end": Value(tel.counters_end.pcie_replay)}
    # Judged by its worst span only where the readings hold the run's whole count (every reading
    # went through it): else a count it never saw could hide outside every span.
    if seconds > span.span_s and span.worst is not None and span.grown == growth:
        minutes = span.span_s / 60
        values["worst_span"] = Value(span.worst)
        values["span_min"] = Value(round(minutes, 1), "min")
        result = fold(name, gpu.subject, [judge(limit, span.worst, "PCIE_REPLAY",
                                                f"{what} in its worst {minutes:g} min ({span.worst_from_s:,.0f} s "
                                                f"to {span.worst_to_s:,.0f} s of the run) grew by")],
                      values, [limit], key="worst_span")
        result.message += f"; {growth:,} in all"
    else:
        result = fold(name, gpu.subject, [judge(limit, growth, "PCIE_REPLAY", f"{what} grew by")],
                      values, [limit], key="growth")
    if seconds >= RATE_MIN_S:
        rate = growth * 60 / seconds
        result.values["per_min"] = Value(round(rate, 2), "/min")
        result.message += f"{',' if 'worst_span' in values else ';'} {rate:,.1f} a minute over {seconds / 60:,.1f} min"
    return result


def ecc(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    """Uncorrectable errors since the driver loaded fail; corrected errors that appear during the run
    are judged by their growth."""
    name = "health.ecc"
    end = tel.counters_end
    if gpu.ecc_enabled is False:
        return skip(name, gpu.subject, "ECC is disabled, so memory errors are not counted (see inventory.ecc_mode)")
    if end is None or is_na(end.ecc_dbe_volatile):
        return skip(name, gpu.subject, f"ECC counters not available {ON_THIS_GPU}")
    sbe_growth = _delta(tel.counters_start, end, "ecc_sbe_volatile")
    dbe_limit, sbe_limit = profile.threshold("gpu", "max_ecc_dbe"), profile.threshold("gpu", "max_ecc_sbe")
    findings = [judge(dbe_limit, end.ecc_dbe_volatile, "ECC_DBE", "uncorrectable ECC errors since the driver loaded:")]
    values = {"dbe": Value(end.ecc_dbe_volatile), "dbe_growth": Value(_delta(tel.counters_start, end, "ecc_dbe_volatile"))}
    if sbe_growth is not None:
        findings.append(judge(sbe_limit, sbe_growth, "ECC_SBE", "corrected ECC errors during the run:"))
        values["sbe_growth"] = Value(sbe_growth)
    return fold(name, gpu.subject, findings, values, [dbe_limit, sbe_limit], key="dbe")


def sram_ecc(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    """ECC errors in on-chip memory (caches, register files): NVML's lifetime counts, and what grew
    during the run. Device memory (HBM) errors are health.ecc's."""
    name = "health.sram_ecc"
    start, end = tel.counters_start, tel.counters_end
    if gpu.ecc_enabled is False:
        return skip(name, gpu.subject, "ECC is disabled, so on-chip memory errors are not counted")
    if end is None or is_na(end.onchip_ecc_uncorrected):
        return skip(name, gpu.subject, f"on-chip (SRAM) ECC counters not available {ON_THIS_GPU}")
    dbe_limit = profile.threshold("gpu", "max_sram_ecc_dbe")
    sbe_limit = profile.threshold("gpu", "max_sram_ecc_sbe")
    growth_limit = profile.threshold("gpu", "max_sram_ecc_sbe_growth")
    values = {"uncorrected": Value(end.onchip_ecc_uncorrected), "corrected": Value(end.onchip_ecc_corrected),
              "locations": Value(end.onchip_ecc_locations)}
    findings = [judge(dbe_limit, end.onchip_ecc_uncorrected, "SRAM_ECC_UNCORRECTABLE",
                      "uncorrectable on-chip (SRAM) ECC errors in the GPU's life:"),
                judge(sbe_limit, end.onchip_ecc_corrected, "SRAM_ECC_CORRECTED",
                      "corrected on-chip (SRAM) ECC errors in the GPU's life:")]
    growth = _delta(start, end, "onchip_ecc_corrected")
    if growth is not None:
        values["corrected_growth"] = Value(growth)
        findings.append(judge(growth_limit, growth, "SRAM_ECC_CORRECTED",
                              "corrected on-chip (SRAM) ECC errors during the run:"))
    return fold(name, gpu.subject, findings, values, [dbe_limit, sbe_limit, growth_limit], key="uncorrected")


# Ampere (compute capability 8.0) and newer remap rows of failing memory; older GPUs retire pages.
ROW_REMAPPING_FROM_CC = 8.0


def remaps_rows(gpu: GpuInfo) -> bool | None:
    """Whether the GPU's generation repairs memory by remapping rows (else by retiring pages); None
    where its compute capability is not known."""
    if is_na(gpu.compute_capability):
        return None
    try:
        return float(gpu.compute_capability) >= ROW_REMAPPING_FROM_CC
    except (TypeError, ValueError):
        return None


def row_remap(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    name = "health.row_remap"
    end = tel.counters_end
    if end is None or is_na(end.remap_pending):
        if remaps_rows(gpu) is False:  # not applicable: said once, not a check left unrun
            return skip(name, gpu.subject, "not applicable: GPUs before Ampere retire pages instead of remapping rows",
                        code="ROW_REMAP_NA")
        return skip(name, gpu.subject, f"row remapping not reported by NVML {ON_THIS_GPU}")
    limit = profile.threshold("gpu", "max_row_remaps")
    values = {"uncorrectable_remaps": Value(end.remap_uncorrectable), "correctable_remaps": Value(end.remap_correctable),
              "pending": Value(end.remap_pending), "failed": Value(end.remap_failure)}
    findings = [judge(limit, end.remap_uncorrectable, "ROW_REMAP_COUNT", "rows remapped for uncorrectable errors:")]
    if end.remap_pending:
        findings.append(Judgement(Verdict.FAIL, "ROW_REMAP_PENDING", "row remaps are pending (a GPU reset applies them)"))
    if end.remap_failure:
        findings.append(Judgement(Verdict.FAIL, "ROW_REMAP_FAILED", "a row remap failed"))
    return fold(name, gpu.subject, findings, values, [limit], key="uncorrectable_remaps")


def retired_pages(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    name = "health.retired_pages"
    end = tel.counters_end
    if end is None or is_na(end.retired_sbe) or is_na(end.retired_dbe):
        if remaps_rows(gpu):  # not applicable: said once, not a check left unrun
            return skip(name, gpu.subject, "not applicable: Ampere and newer GPUs remap rows instead of retiring pages",
                        code="PAGE_RETIREMENT_NA")
        return skip(name, gpu.subject, f"page retirement not reported by NVML {ON_THIS_GPU}")
    total = end.retired_sbe + end.retired_dbe
    limit = profile.threshold("gpu", "max_retired_pages")
    values = {"retired": Value(total), "retired_sbe": Value(end.retired_sbe), "retired_dbe": Value(end.retired_dbe),
              "pending": Value(end.retired_pending)}
    findings = [judge(limit, total, "RETIRED_PAGES", "retired pages:")]
    if end.retired_pending:
        findings.append(Judgement(Verdict.FAIL, "RETIRED_PAGES_PENDING", "page retirement is pending (needs a reboot)"))
    return fold(name, gpu.subject, findings, values, [limit], key="retired")


# The same XID this many times in one run needs the hardware inspected, whatever its own grade: gpud
# escalates an XID to hardware inspection once it returns after its default of 2 recoveries
# (leptonai/gpud xid/threshold.go DefaultRebootThreshold); within a run the driver recovers after each
# non-fatal XID, so the third sighting is the second return after a recovery.
XID_REPEAT_LIMIT = 3
# The code of a FAIL, by the catalogue's action (nodeqc.core.xids.ACTIONS): the remediation is the action.
_FATAL_CODE = {"reset_gpu": "XID_RESET_GPU", "reboot": "XID_REBOOT", "check_power": "XID_CHECK_POWER",
               "contact_support": "XID_CONTACT_SUPPORT"}
# The code of a WARN, by the action.
_WARN_CODE = {"unknown": "XID_UNKNOWN", "contact_support": "XID_CONTACT_SUPPORT"}


def judge_xid(code: int, times: int = 1, compute_capability: Any = None) -> Judgement:
    """One XID code seen `times` times during nodeqc's known-good work, judged by the catalogue:
    - fatal (the GPU needs a reset, the node a reboot, its power a look): FAIL, the action its code;
    - an application's XID (NVIDIA: restart the application; or the application class): FAIL too. In a
      node's service such an XID is most often the application's own bug, so NVIDIA's first step is
      to restart it; here the application is nodeqc's known-good work, alone on the GPU (stress.gpu_free
      checks nobody else uses it), so the usual cause is ruled out and the GPU, its memory or the
      driver remain (NVIDIA's follow-up for most of them is to contact support). This keeps what
      nodeqc did before the catalogue: an XID during known-good work fails. A co-tenant that started
      on the GPU mid-run and crashed would fail it as well; the stress diagnosis names one (another
      process used this GPU). DCGM's diagnostic fails on any XID, for the same reason.
    - warning (NVIDIA: ignore but follow up, contact support for a code unused on this generation, an
      action not published or a code not in the catalogue): WARN;
    - ignorable (a report that points at another XID, judged by itself, or a test message): PASS,
      the event listed in the evidence.
    The same XID XID_REPEAT_LIMIT times or more FAILs whatever its grade (XID_REPEATED), ignorable
    ones aside. `compute_capability`: the GPU's (the catalogue is Ampere's and newer: lookup)."""
    e = lookup(code, compute_capability)
    if e.severity == "fatal":
        return Judgement(Verdict.FAIL, _FATAL_CODE.get(e.action, "XID_RESET_GPU"), "fatal")
    if e.severity == "ignorable":
        return Judgement(Verdict.PASS, None, "ignorable")
    if times >= XID_REPEAT_LIMIT:
        return Judgement(Verdict.FAIL, "XID_REPEATED", f"repeated {times} times in one run")
    if e.action == "restart_app" or e.category == "application":
        return Judgement(Verdict.FAIL, "XID_APP_FAULT", "an application's XID during nodeqc's known-good work")
    return Judgement(Verdict.WARN, _WARN_CODE.get(e.action, "XID_WARNING"),
                     "action unknown" if e.action == "unknown" else "warning")


def xid(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    """Each XID seen during the run judged by NVIDIA's catalogue (nodeqc.core.xids; judge_xid says
    how, and why an application's XID still fails during known-good work). Before the catalogue any
    XID failed; now a warning-grade XID (a high corrected-error rate, a code unused on this
    generation, one with no published action) warns, and an ignorable one (it only points at another
    XID) passes with the event listed: the XID it points at is judged itself."""
    name = "health.xid"
    events = tel.xids.kept
    cc = gpu.compute_capability
    described = [{**e, **_described(e["code"], cc)} for e in events]
    total = len(events) + tel.xids.dropped
    values = {"xids": Value(total)}
    evidence = {"xids": described, "not_kept": tel.xids.dropped, "catalogue": {"source": XID_SOURCE, "read": XID_READ}}
    if not events and not tel.xids_watched:
        # The driver gave no XID events for this GPU (its event registration refused): none seen is
        # no evidence of none. The kernel log (host.kernel_log) still reads the driver's Xid lines.
        return skip(name, gpu.subject, "NVML gives no XID events for this GPU (event registration refused, as in "
                    "some VMs), so none seen proves nothing: host.kernel_log reads XIDs from the kernel log",
                    code="XID_NOT_WATCHED", values=values)
    if not events:
        return CheckResult(name, gpu.subject, Verdict.PASS, "no XID events", values=values, key="xids")
    by_code: dict[int, list[dict[str, Any]]] = {}
    for e in events:  # a code that is not a whole number (a replayed capture's) is judged as unknown
        code = e.get("code")
        by_code.setdefault(code if isinstance(code, int) and not isinstance(code, bool) else -1, []).append(e)
    findings = []
    for code, seen in by_code.items():
        j, e = judge_xid(code, len(seen), cc), lookup(code, cc)
        times = f" ({len(seen)} times)" if len(seen) > 1 else ""
        # The catalogue's action where it is the one to take (an application's or a repeated XID has its own).
        own = j.code in ("XID_APP_FAULT", "XID_REPEATED") or e.action in ("ignore", "unknown")
        action = "" if own else f", action: {e.action.replace('_', ' ')}"
        findings.append(Judgement(j.verdict, j.code, f"XID {code} ({e.meaning}) at {seen[0]['t_s']} s{times}: "
                                  f"{j.message}{action}"))
    if tel.xids.dropped:  # not kept, so not judged: never a pass on them
        findings.append(Judgement(Verdict.WARN, "XID_WARNING", f"{tel.xids.dropped} more XID event(s) not kept, "
                                  "so not judged"))
    return fold(name, gpu.subject, findings, values, [], key="xids", evidence=evidence)


def _described(code: int, compute_capability: Any = None) -> dict[str, Any]:
    e = lookup(code, compute_capability)
    return {"meaning": e.meaning, "severity": e.severity, "fatal": e.severity == "fatal", "action": e.action,
            "category": e.category, "hardware": e.hardware, "nvidia": e.nvidia}


def nvlink(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    """Links up against the profile (or the GPU's own link count), and no replays, recoveries or a
    high CRC error rate while the work ran (DCGM's rules)."""
    name = "health.nvlink"
    end = tel.counters_end
    expected = profile.get("gpu", "nvlink_links", gpu.nvlink_count)
    if end is None or is_na(end.nvlink_active) or is_na(expected) or not expected:
        if end is not None and profile.get("gpu", "nvlink_links") is None and not gpu.nvlink_count:
            # A PCIe card (or a GPU whose driver reports no links) under a profile that asks for none.
            return skip(name, gpu.subject, "not applicable: the GPU reports no NVLink and the profile asks for none",
                        code="NVLINK_NA")
        promised = profile.get("gpu", "nvlink_links")
        if end is not None and is_na(end.nvlink_active) and promised:
            # The profile's node has NVLink and this GPU reports none: a GPU (or a driver, or a VM) that
            # cannot show its links is no NVLink node, not a check left unrun (the 2026-11-28 advice
            # review; DCGM's issue 198, a diagnostic that passed with the links unread).
            return CheckResult(name, gpu.subject, Verdict.FAIL, f"the profile expects {promised} NVLink links and the "
                               f"GPU reports none (NVML: not supported {ON_THIS_GPU})", code="NVLINK_DOWN",
                               values={"expected": Value(promised)}, key="expected")
        return skip(name, gpu.subject, f"NVLink links or counters not reported {ON_THIS_GPU}")
    values = {"active": Value(end.nvlink_active), "expected": Value(expected)}
    findings = []
    if end.nvlink_active < expected:
        findings.append(Judgement(Verdict.FAIL, "NVLINK_DOWN", f"{end.nvlink_active} of {expected} NVLink links are up"))
    errors = _delta(tel.counters_start, end, "nvlink_replay"), _delta(tel.counters_start, end, "nvlink_recovery")
    limit, crc_limit = profile.threshold("gpu", "max_nvlink_errors"), profile.threshold("gpu", "max_nvlink_crc_per_s")
    if None not in errors:
        values["replay_recovery"] = Value(sum(errors))
        findings.append(judge(limit, sum(errors), "NVLINK_ERRORS", "NVLink replays and recoveries during the run:"))
    crc = _delta(tel.counters_start, end, "nvlink_crc")
    span = tel.counters_end_t - tel.counters_start_t
    if crc is not None and span > 0:
        values["crc_per_s"] = Value(round(crc / span, 2), "/s")
        findings.append(judge(crc_limit, round(crc / span, 2), "NVLINK_ERRORS", "NVLink CRC errors per second:"))
    elif crc:
        # Grown over no known time (a watch whose clock stepped back between passes): no rate to judge,
        # and no "no link errors" either (2026-11-28 audit).
        findings.append(Judgement(Verdict.WARN, "NVLINK_ERRORS", f"{crc} NVLink CRC errors over no measured time "
                                  "(a watch's clock that stepped back): the rate was not judged"))
    compared = None not in errors or crc is not None
    if all(f.verdict is Verdict.PASS for f in findings):  # also when nothing but the link count was judged
        errors_said = ("no link errors" if compared else "link error counters not compared ("
                       + ("no earlier reading)" if tel.counters_start is None else "not reported)"))
        findings.insert(0, Judgement(Verdict.PASS, None, f"{end.nvlink_active} of {expected} links up, {errors_said}"))
    return fold(name, gpu.subject, findings, values, [limit, crc_limit], key="active")


def presence(gpu: GpuInfo, tel: GpuTelemetry, profile: Profile) -> CheckResult:
    name = "health.gpu_lost"
    if tel.lost_at_s is None and tel.samples == 0 and tel.counters_end is None:
        # Not one reading taken: "answered all 0 readings" was a pass of nothing (2026-11-28 audit).
        return skip(name, gpu.subject, "no reading of this GPU was taken, so whether it kept answering was not watched")
    if tel.lost_at_s is None:
        # What was watched, not "the whole run": a run cut short was not watched to its planned end.
        span = (f" from {tel.counters_start_t:g} s to {tel.counters_end_t:g} s into the run"
                if tel.counters_end_t > tel.counters_start_t else "")
        return CheckResult(name, gpu.subject, Verdict.PASS, f"answered all {tel.samples} readings{span}")
    return CheckResult(name, gpu.subject, Verdict.FAIL,
                       f"stopped answering {tel.lost_at_s:g} s into the run (fell off the bus)",
                       code="GPU_LOST", values={"lost_at": Value(tel.lost_at_s, "s")}, key="lost_at")


HEALTH_CHECKS: list[Callable[[GpuInfo, GpuTelemetry, Profile], CheckResult]] = [
    presence, temperature, throttle, pcie_link, pcie_replay, ecc, sram_ecc, row_remap, retired_pages, xid, nvlink,
]


def health_results(gpus: list[GpuInfo], telemetry: dict[int, GpuTelemetry], profile: Profile) -> list[CheckResult]:
    return [check(g, telemetry[g.index], profile) for check in HEALTH_CHECKS for g in gpus]
