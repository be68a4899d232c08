"""Verdicts on the host stress of a full run: CPU known answers per core, host memory bandwidth,
NVMe read rate (fio), and each optical module against its own thresholds."""

from __future__ import annotations

from typing import Any

from nodeqc.backends.host_stress import FioResult, ModuleReading
from nodeqc.checks.common import judge
from nodeqc.model import CheckResult, Value, Verdict
from nodeqc.profile import Profile

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
        return CheckResult(name, "node", Verdict.FAIL, f"the stress work did not finish on {cores}",
                           code="HOST_CPU_WRONG", values=values, evidence=evidence, key="wrong")
    return CheckResult(name, "node", Verdict.PASS, f"{len(outcomes)} CPUs computed {rounds} known answers in "
                       f"{seconds:g} s, all right", values=values, evidence=evidence, key="rounds")


def memory_bandwidth(gbps: float, profile: Profile) -> CheckResult:
    limit = profile.threshold("host", "min_mem_bw_gbps")
    f = judge(limit, gbps, "HOST_MEM_BANDWIDTH", "host memory copy", "GB/s")
    return CheckResult("host.memory_bandwidth", "node", f.verdict, f.message, code=f.code,
                       values={"copy_gbps": Value(gbps, "GB/s")}, thresholds=[limit] if limit else [], key="copy_gbps")


def nvme(results: list[FioResult], missing: str | None, profile: Profile) -> list[CheckResult]:
    name = "host.nvme"
    targets = profile.get("host", "fio_targets", []) + ([profile.get("host", "fio_scratch")]
                                                       if profile.get("host", "fio_scratch") else [])
    if not targets:
        return []
    if missing:
        return [CheckResult(name, "node", Verdict.SKIP, f"fio is not installed, so local NVMe was not tested: {missing}",
                            code="FIO_MISSING")]
    limit = profile.threshold("host", "min_nvme_read_gbps")
    out = []
    for r in results:
        evidence = {"command": r.command}
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
        f = judge(limit, r.read_gbps, "NVME_SLOW", f"{r.target}: sequential read", "GB/s")
        out.append(CheckResult(name, r.target, f.verdict, f.message, code=f.code, values=values,
                               thresholds=[limit] if limit else [], evidence=evidence, key="read_gbps"))
    return out


def optics(modules: dict[str, tuple[str, ModuleReading | None]], missing: str | None) -> list[CheckResult]:
    """modules: interface -> (subject, reading or None when it has no readable module)."""
    name = "host.optics"
    if missing:
        return [CheckResult(name, "node", Verdict.SKIP, f"ethtool is not installed, so optical modules were not "
                            f"read: {missing}", code="ETHTOOL_MISSING")]
    out = []
    for iface, (subject, m) in modules.items():
        if m is None or not m.values:
            continue  # no module, or one without diagnostics (passive copper): nothing to judge
        findings: list[tuple[Verdict, str]] = []
        values = {}
        for measure, readings in m.values.items():
            t = m.thresholds.get(measure, {})
            unit = UNITS[measure]
            values[measure] = Value(min(readings) if measure in ("rx_power", "tx_power") else max(readings), unit)
            # A module that does not implement a threshold reports it as zero on both sides.
            if not t or t.get("high_alarm", 0) <= t.get("low_alarm", 0):
                continue
            for lane, x in enumerate(readings, start=1):
                where = f"{iface} {LABELS[measure]}" + (f" (lane {lane})" if len(readings) > 1 else "")
                if x > t["high_alarm"] or x < t["low_alarm"]:
                    findings.append((Verdict.FAIL, f"{where} {x:g} {unit} is outside the module's alarm range "
                                                   f"{t['low_alarm']:g}..{t['high_alarm']:g}"))
                elif x > t.get("high_warning", t["high_alarm"]) or x < t.get("low_warning", t["low_alarm"]):
                    findings.append((Verdict.WARN, f"{where} {x:g} {unit} is outside the module's warning range "
                                                   f"{t.get('low_warning'):g}..{t.get('high_warning'):g}"))
        part = f" ({m.vendor} {m.part})".rstrip() if m.vendor or m.part else ""
        evidence = {"thresholds": m.thresholds, "readings": m.values, "module": f"{m.vendor} {m.part} {m.identifier}".strip()}
        if not findings:
            out.append(CheckResult(name, subject, Verdict.PASS, f"{iface}{part}: every reading inside the module's "
                                   "warning range", values=values, evidence=evidence, key="temperature"
                                   if "temperature" in values else None))
            continue
        worst = max(findings, key=lambda f: f[0].severity)
        out.append(CheckResult(name, subject, worst[0], "; ".join([worst[1]] + [f[1] for f in findings if f is not worst]),
                               code="OPTICS_ALARM" if worst[0] is Verdict.FAIL else "OPTICS_WARNING",
                               values=values, evidence=evidence))
    return out
