"""Verdicts on the host stress of a full run: CPU known answers per core, host memory bandwidth,
NVMe read rate (fio), and each optical module against its own thresholds (with mlxlink, also its
link's bit error rate after FEC)."""

from __future__ import annotations

import math
from typing import Any

from nodeqc.backends.host_stress import FioResult, ModuleReading
from nodeqc.backends.mlxlink import LinkReading
from nodeqc.checks.common import judge
from nodeqc.core.model import CheckResult, Threshold, Value, Verdict
from nodeqc.spec.profile import Profile

# More than a drive can carry: a PCIe Gen6 x16 slot carries 128 GB/s (64 GT/s x 16 lanes / 8 bits a
# byte), and no NVMe drive has more than one; 4x that leaves room for a device striped over several
# slots (an md RAID named as a target), an estimate. A read above it is no measurement.
MAX_STORAGE_GBPS = 512.0
STORAGE_CEILING = Threshold("max_storage_gbps", "max", MAX_STORAGE_GBPS, MAX_STORAGE_GBPS, "GB/s")
UNITS = {"temperature": "C", "voltage": "V", "bias": "mA", "tx_power": "mW", "rx_power": "mW"}
LABELS = {"temperature": "module temperature", "voltage": "module voltage", "bias": "laser bias current",
          "tx_power": "transmit power", "rx_power": "receive power"}


def cpu(outcomes: list[dict[str, Any]], seconds: float) -> CheckResult:
    name = "host.cpu_stress"
    wrong = [o for o in outcomes if o.get("wrong")]
    died = [o for o in outcomes if o.get("error") or not o.get("rounds")]
    rounds = sum(o.get("rounds", 0) for o in outcomes)
    values = {"cpus": Value(len(outcomes)), "rounds": Value(rounds), "wrong": Value(sum(o.get("wrong", 0) for o in outcomes))}
    evidence = {"per_cpu": outcomes}
    if wrong:
        cores = ", ".join(f"CPU {o['cpu']} ({o['wrong']} of {o['rounds']})" for o in wrong)
        return CheckResult(name, "node", Verdict.FAIL, f"wrong results on {cores}: a core computes wrong answers "
                           "silently", code="HOST_CPU_WRONG", values=values, evidence=evidence, key="wrong")
    if died:
        cores = ", ".join(f"CPU {o['cpu']}: {o.get('error', 'no result')}" for o in died)
        # A worker that died proves no wrong answer: the OOM killer, or a machine check that killed it
        # (which the kernel log's KERNEL_MCE then names). Not judged (the 2026-11-28 advice review: it
        # was FAIL HOST_CPU_WRONG, "replace the CPU").
        return CheckResult(name, "node", Verdict.ERROR, f"the stress work did not finish on {cores}; not judged",
                           code="HOST_CPU_STRESS_DIED", values=values, evidence=evidence, key="wrong")
    return CheckResult(name, "node", Verdict.PASS, f"{len(outcomes)} CPUs computed {rounds} known answers in "
                       f"{seconds:g} s, all right", values=values, evidence=evidence, key="rounds")


def memory_bandwidth(gbps: float, profile: Profile) -> CheckResult:
    limit = profile.threshold("host", "min_mem_bw_gbps")
    f = judge(limit, gbps, "HOST_MEM_BANDWIDTH", "host memory copy", "GB/s")
    return CheckResult("host.memory_bandwidth", "node", f.verdict, f.message, code=f.code,
                       values={"copy_gbps": Value(gbps, "GB/s")}, thresholds=[limit] if limit else [], key="copy_gbps")


def nvme(results: list[FioResult], missing: str | None, profile: Profile) -> list[CheckResult]:
    name = "host.nvme"
    if not (profile.get("host", "fio_targets") or profile.get("host", "fio_scratch")):
        return []  # no device or scratch file named: nothing to test
    if missing:
        return [CheckResult(name, "node", Verdict.SKIP, f"fio is not installed, so local NVMe was not tested: {missing}",
                            code="FIO_MISSING")]
    limit = profile.threshold("host", "min_nvme_read_gbps")
    out = []
    for r in results:
        evidence: dict[str, Any] = {"command": r.command}
        if r.unreadable:  # fio printed JSON out of its format: no measurement, this drive's ERROR
            evidence["output_tail"] = r.output_tail
            out.append(CheckResult(name, r.target, Verdict.ERROR, f"{r.target}: fio's output could not be read: "
                                   f"{r.error}", code="TOOL_OUTPUT_UNREADABLE", evidence=evidence))
            continue
        if r.scratch_exists:  # the profile's setting, no drive's fault: nothing measured
            out.append(CheckResult(name, r.target, Verdict.ERROR, f"not measured: {r.error}", code="NVME_SCRATCH_EXISTS",
                                   evidence=evidence))
            continue
        if r.error:
            out.append(CheckResult(name, r.target, Verdict.FAIL, f"{r.target}: fio failed: {r.error}", code="NVME_FIO",
                                   evidence=evidence))
            continue
        values = {"read_gbps": Value(r.read_gbps, "GB/s"), "read_iops": Value(r.read_iops),
                  "read_p99_us": Value(r.read_p99_us, "us")}
        if r.read_gbps is None:
            out.append(CheckResult(name, r.target, Verdict.FAIL, f"{r.target}: fio read nothing", code="NVME_FIO",
                                   evidence=evidence))
            continue
        if r.read_gbps > MAX_STORAGE_GBPS:
            out.append(CheckResult(name, r.target, Verdict.FAIL, f"{r.target}: sequential read {r.read_gbps:g} GB/s is "
                                   f"more than any local drive can carry ({MAX_STORAGE_GBPS:g} GB/s): the measurement "
                                   "is suspect", code="FIGURE_IMPOSSIBLE", values=values, evidence=evidence,
                                   thresholds=[STORAGE_CEILING], key="read_gbps"))
            continue
        f = judge(limit, r.read_gbps, "NVME_SLOW", f"{r.target}: sequential read", "GB/s")
        out.append(CheckResult(name, r.target, f.verdict, f.message, code=f.code, values=values,
                               thresholds=[limit] if limit else [], evidence=evidence, key="read_gbps"))
    return out


def optics(modules: dict[str, tuple[str, ModuleReading | None]], missing: str | None,
           links: dict[str, tuple[str, LinkReading | None]] | None = None,
           notes: dict[str, str] | None = None, unread: dict[str, tuple[str, str]] | None = None,
           unparsed: dict[str, tuple[str, str, list[str]]] | None = None) -> list[CheckResult]:
    """modules: interface -> (subject, `ethtool -m` reading, or None when it has no readable
    module); links: the same for the ports mlxlink read; notes: for a port read with ethtool
    that mlxlink would have read, why it did not; unread: interface -> (subject, why `ethtool -m`
    could not read it); unparsed: interface -> (subject, what in `ethtool -m`'s output is out of
    its format, the output's end)."""
    name, notes = "host.optics", notes or {}
    out = []
    if missing:
        out.append(CheckResult(name, "node", Verdict.SKIP, f"ethtool is not installed, so optical modules were "
                               f"not read: {missing}", code="ETHTOOL_MISSING"))
    for iface, (subject, m) in ({} if missing else modules).items():
        if m is None or not m.values:
            continue  # no module, or one without diagnostics (passive copper): nothing to judge
        findings, values = _module_findings(iface, m)
        evidence = {"reader": "ethtool -m", **_module_evidence(m)}
        note = f"; read with ethtool -m: {notes[iface]}" if iface in notes else ""
        if iface in notes:
            evidence["mlxlink"] = notes[iface]
        out.append(_optics_result(name, iface, subject, m, findings, values, evidence, note))
    for iface, (subject, why) in (unread or {}).items():
        out.append(CheckResult(name, subject, Verdict.SKIP, f"{iface}: {why}, so its module was not judged",
                               code="MODULE_UNREADABLE", evidence={"reader": "ethtool -m", "error": why}))
    for iface, (subject, why, tail) in (unparsed or {}).items():
        evidence = {"reader": "ethtool -m", "error": why, "output_tail": tail}
        if iface in notes:
            evidence["mlxlink"] = notes[iface]
        out.append(CheckResult(name, subject, Verdict.ERROR, f"{iface}: ethtool -m's output could not be read, so its "
                               f"module was not judged: {why}", code="TOOL_OUTPUT_UNREADABLE", evidence=evidence))
    for iface, (subject, link) in (links or {}).items():
        result = _link_result(name, iface, subject, link) if link is not None else None
        if result is not None:
            out.append(result)
    return out


# The link's bit error rate after FEC (mlxlink's effective BER, and on InfiniBand its symbol BER):
# above 1e-12 the link fails. 1e-12 is the threshold NVIDIA's ibdiagnet applies to a port's BER by
# default (IBUtils2 documentation, "Bit Error Rate (BER)", --ber_test: default threshold 10^-12;
# docs.nvidia.com/networking/display/ibdiagnetutilityv2240/bit-error-rate-(ber)); that page also
# says the symbol errors (HDR/NDR) and effective errors (EDR) are the errors the application sees
# after error correction: on InfiniBand (where mlxlink prints a symbol BER) the symbol BER is judged,
# since an HDR/NDR link's retransmission (PLR) still repairs what its effective BER counts; on
# Ethernet and EDR, the effective BER. The raw BER (before FEC) is evidence only: errors
# there are what the FEC is for (tests/fixtures/mlxlink-cx4-100g-counters.txt: a raw BER of 3E-12,
# none left after RS-FEC).
MAX_LINK_BER = 1e-12


def _link_result(name: str, iface: str, subject: str, link: LinkReading) -> CheckResult | None:
    evidence: dict[str, Any] = {"reader": "mlxlink", **link.evidence()}
    if link.error:
        return CheckResult(name, subject, Verdict.SKIP, f"{iface}: mlxlink's output could not be read, so its module "
                           f"and link were not judged: {link.error}", code="OPTICS_UNREADABLE", evidence=evidence)
    m = link.module
    findings, values = _module_findings(iface, m) if m is not None and m.values else ([], {})
    if m is not None:
        evidence.update(_module_evidence(m))
    too_few = []
    key, label, ber, errors = (("symbol_ber", "symbol BER", link.symbol_ber, link.symbol_errors)
                               if link.symbol_ber is not None else
                               ("effective_ber", "effective BER (after FEC)", link.effective_ber, link.effective_errors))
    if ber is not None:
        values[key] = Value(ber)
    if ber is not None and ber > MAX_LINK_BER:
        counted = f" ({errors} error{'' if errors == 1 else 's'} in {link.minutes_since_clear:g} min)" if (
            errors is not None and link.minutes_since_clear is not None) else ""
        if errors is not None and not above_floor(errors, ber):
            too_few.append(f"{iface} link {label} {ber:.1e}{counted} is from too few bits to judge against "
                           f"{MAX_LINK_BER:.0e}: clear the counters (mlxlink --pc) and read them after traffic")
        else:
            findings.append((Verdict.FAIL, f"{iface} link {label} {ber:.1e}{counted} is above {MAX_LINK_BER:.0e}",
                             "LINK_BER_HIGH"))
    if not values:
        return None  # a port without diagnostics or counters (passive copper, link down): nothing to judge
    tail = "; " + "; ".join(too_few) if too_few else _ber_summary(ber, errors, link.minutes_since_clear)
    return _optics_result(name, iface, subject, m, findings, values, evidence, tail)


# A BER above the floor fails only when the errors counted could not come from a link at the floor:
# mlxlink's BER is errors / bits, so a port read minutes after its counters were cleared shows one
# error as 2e-12 at 100 Gb/s. At the floor the count of errors in `bits` is Poisson with mean
# floor x bits; the port fails when seeing this many or more has a chance below 1e-3 (a port exactly
# at the floor fails by chance once in a thousand reads; one at ten times the floor fails from 4
# errors on).
BER_SIGNIFICANCE = 1e-3


def above_floor(errors: int, ber: float, floor: float = MAX_LINK_BER) -> bool:
    """Whether `errors` at a measured `ber` show the link's BER is above `floor`: an upper bound of
    the Poisson tail P(X >= errors) at the floor's mean is below BER_SIGNIFICANCE."""
    if errors <= 0 or ber <= floor:
        return False
    mean = floor * errors / ber  # the floor's expected errors over the bits mlxlink counted
    # P(X >= k) <= pmf(k) / (1 - mean / (k + 1)) when mean < k + 1 (the terms after k fall at least that fast).
    log_tail = -mean + errors * math.log(mean) - math.lgamma(errors + 1) - math.log1p(-mean / (errors + 1))
    return log_tail < math.log(BER_SIGNIFICANCE)


def _ber_summary(ber: float | None, errors: int | None, minutes: float | None) -> str:
    if ber is None:
        return ""
    if errors == 0:
        return "; no errors left after FEC" + (f" in {minutes:g} min" if minutes is not None else "")
    return f"; link BER {ber:.1e} after FEC"


def _module_findings(iface: str, m: ModuleReading) -> tuple[list[tuple[Verdict, str, str]], dict[str, Value]]:
    """Each reading against the module's own alarm and warning ranges. The values include only
    the readings the module gives a range for."""
    findings: list[tuple[Verdict, str, str]] = []
    values = {}
    for measure, readings in m.values.items():
        t = m.thresholds.get(measure) or {}
        alarm = _range(t.get("low_alarm"), t.get("high_alarm"))
        if alarm is None:
            continue
        # A warning side the module does not give is its alarm side.
        warning = _range(t.get("low_warning", alarm[0]), t.get("high_warning", alarm[1])) or alarm
        unit = m.units.get(measure, UNITS[measure])
        values[measure] = Value(min(readings) if measure in ("rx_power", "tx_power") else max(readings), unit)
        for lane, x in enumerate(readings, start=1):
            where = f"{iface} {LABELS[measure]}" + (f" (lane {lane})" if len(readings) > 1 else "")
            if not alarm[0] <= x <= alarm[1]:
                findings.append((Verdict.FAIL, f"{where} {x:g} {unit} is outside the module's alarm range "
                                               f"{alarm[0]:g}..{alarm[1]:g}", "OPTICS_ALARM"))
            elif not warning[0] <= x <= warning[1]:
                findings.append((Verdict.WARN, f"{where} {x:g} {unit} is outside the module's warning range "
                                               f"{warning[0]:g}..{warning[1]:g}", "OPTICS_WARNING"))
    return findings, values


def _range(low: float | None, high: float | None) -> tuple[float, float] | None:
    """(low, high), or None where it is no range to judge against: a module that does not implement
    a threshold reports it as zero on both sides (the Finisar module in tests/fixtures reports its
    power and bias ranges so), and a side ethtool could not read (N/A) leaves half a range."""
    return (low, high) if low is not None and high is not None and low < high else None


def _module_evidence(m: ModuleReading) -> dict[str, Any]:
    return {"thresholds": m.thresholds, "readings": m.values, "units": {k: m.units.get(k, UNITS[k]) for k in m.values},
            "module": f"{m.vendor} {m.part} {m.identifier}".strip()}


def _optics_result(name: str, iface: str, subject: str, m: ModuleReading | None,
                   findings: list[tuple[Verdict, str, str]], values: dict[str, Value],
                   evidence: dict[str, Any], tail: str) -> CheckResult:
    part = f" ({m.vendor} {m.part})".replace("( ", "(").replace(" )", ")") if m and (m.vendor or m.part) else ""
    if not findings:
        judged = ("every module reading inside its own range" if any(k in values for k in UNITS) else
                  "the module gives no ranges to judge its readings against" if m and m.values else
                  "no module readings to judge")
        return CheckResult(name, subject, Verdict.PASS, f"{iface}{part}: {judged}{tail}", values=values,
                           evidence=evidence, key="temperature" if "temperature" in values else None)
    worst = max(findings, key=lambda f: f[0].severity)
    return CheckResult(name, subject, worst[0], "; ".join([worst[1]] + [f[1] for f in findings if f is not worst]),
                       code=worst[2], values=values, evidence=evidence)
