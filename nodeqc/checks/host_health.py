"""Host health over the run: memory errors (EDAC), PCIe errors (AER) of the GPUs, NICs and the
bridges above them, and what the kernel logged (NVRM Xid, machine checks, AER, NVMe resets).

Pure functions of two counter readings (start and end of the run) and the kernel's records between
them. Growth warns or fails per the profile's [host] limits; every finding names the device.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from nodeqc.backends.kernel_log import KernelRecord
from nodeqc.backends.platform import HostCounters
from nodeqc.checks.common import Judgement, fold
from nodeqc.core.codes import OWN_WORK_APP_XID
from nodeqc.core.model import CheckResult, Threshold, Value, Verdict
from nodeqc.core.xids import lookup as lookup_xid, sxid_grade, sxid_meaning
from nodeqc.spec.profile import Profile

# Limits when a profile sets none. Corrected memory errors: any growth warns, because a DIMM that
# logs corrected errors is far likelier to log uncorrected ones later (Schroeder, Pinheiro, Weber,
# "DRAM errors in the wild", SIGMETRICS 2009); 100 in one run is a storm, not noise (project choice,
# to calibrate on the fleet). Uncorrected memory errors and uncorrectable PCIe errors fail at one.
# Corrected PCIe errors (AER) warn from the first: a healthy link logs none (PCIe Base Spec 6.0
# 6.2: correctable errors are recovered by the link, but each is a replay or a bad symbol).
DEFAULT_LIMITS = {
    "max_edac_ce": {"fail": 100, "warn": 0},
    "max_edac_ue": {"fail": 0, "warn": 0},
    "max_aer_correctable": {"fail": 100, "warn": 0},
    "max_aer_uncorrectable": {"fail": 0, "warn": 0},
}
EVIDENCE_LINES = 20


def _limit(profile: Profile, key: str) -> Threshold:
    t = profile.threshold("host", key)
    if t is not None:
        return t
    d = DEFAULT_LIMITS[key]
    return Threshold(key, "max", float(d["fail"]), float(d["warn"]))


def _judge(t: Threshold, growth: int) -> Verdict:
    return t.judge(growth)


# ---------------------------------------------------------------------- EDAC


def edac(start: HostCounters, end: HostCounters, profile: Profile, during: str = "during the run") -> list[CheckResult]:
    """Memory errors the controllers counted from `start` to `end`; `during` says over what (a watch's
    passes have no run)."""
    name = "host.edac"
    # A controller whose count is not a number ("0x7", a word) is left out by the reader: never
    # read as 0, which passed its new errors (2026-11-29 fuzzing); not read, it is not judged.
    unread = sorted(k for k in start.edac if "/" not in k and k not in end.edac)
    if not unread and (not end.edac_present or not any("/" not in k for k in end.edac)):  # nothing watched
        return [CheckResult(name, "node", Verdict.SKIP, "no EDAC memory controllers in sysfs "
                            "(/sys/devices/system/edac/mc): memory errors were not watched", code="EDAC_MISSING")]
    if not any("/" not in k for k in end.edac):
        return [CheckResult(name, "node", Verdict.ERROR, f"the EDAC memory controllers ({', '.join(unread)}) gave no "
                            "error count nodeqc could read at the end (/sys/devices/system/edac/mc/mc*/ce_count, "
                            "ue_count): memory errors were not judged", code="EDAC_UNREADABLE")]
    ce_t, ue_t = _limit(profile, "max_edac_ce"), _limit(profile, "max_edac_ue")
    findings, values = [], {}
    if unread:
        findings.append(Judgement(Verdict.ERROR, "EDAC_UNREADABLE", f"{', '.join(unread)}: error counts read at the "
                                  "start and not at the end (not a number, or gone): their memory errors were not judged"))
    # Controllers give the totals; DIMMs (or chip-select rows) say where.
    for key, now in end.edac.items():
        was = start.edac.get(key, {})  # not read at the start (a DIMM that appeared): no growth
        grown = {k: max(0, now[k] - was.get(k, now[k])) for k in ("ce", "ue")}
        where = key + (f" ({end.edac_labels[key]})" if end.edac_labels.get(key) else "")
        if "/" not in key:
            values[f"{key}_ce"] = Value(grown["ce"])
            values[f"{key}_ue"] = Value(grown["ue"])
            continue
        for kind, t, code, what in (("ue", ue_t, "EDAC_UE", "uncorrected"), ("ce", ce_t, "EDAC_CE", "corrected")):
            if grown[kind]:
                v = _judge(t, grown[kind])
                if v is not Verdict.PASS:
                    findings.append(Judgement(v, code, f"{where}: {grown[kind]} {what} memory error(s) {during} "
                                                     f"(now {now[kind]})"))
    total_ce = sum(v.value for k, v in values.items() if k.endswith("_ce"))
    total_ue = sum(v.value for k, v in values.items() if k.endswith("_ue"))
    # A controller whose DIMMs are not listed still counts; and the limits are the node's over the run
    # (profile.py: "that appear during the run"), so errors spread over DIMMs, each under the limit,
    # are judged by their sum too.
    for total, t, code, what in ((total_ue, ue_t, "EDAC_UE", "uncorrected"), (total_ce, ce_t, "EDAC_CE", "corrected")):
        v = _judge(t, total) if total else Verdict.PASS
        by_dimm = [f.verdict.severity for f in findings if f.code == code]
        if v is not Verdict.PASS and (not by_dimm or v.severity > max(by_dimm)):
            findings.append(Judgement(v, code, f"{total} {what} memory error(s) {during} (memory controllers)"))
    values = {"corrected": Value(total_ce), "uncorrected": Value(total_ue)}
    if not findings:
        return [CheckResult(name, "node", Verdict.PASS, f"no memory errors {during} "
                            f"({sum(1 for k in end.edac if '/' not in k)} memory controllers)",
                            values=values, thresholds=[ce_t, ue_t], key="corrected")]
    return [fold(name, "node", findings, values, [ce_t, ue_t], "corrected")]


# ---------------------------------------------------------------------- AER


def aer(start: HostCounters, end: HostCounters, names: dict[str, str], profile: Profile,
        during: str = "during the run") -> list[CheckResult]:
    """names: bus id -> how to name it (gpu3, ibp24s0, 'bridge 0000:5d:01.0 above gpu3')."""
    name = "host.aer"
    if not end.aer:
        return [CheckResult(name, "node", Verdict.SKIP, "no PCIe AER counters in sysfs (aer_dev_correctable): "
                            "the kernel lacks AER statistics or the platform handles AER in firmware", code="AER_MISSING")]
    cor_t, unc_t = _limit(profile, "max_aer_correctable"), _limit(profile, "max_aer_uncorrectable")
    by_subject: dict[str, list[Judgement]] = {}
    totals: dict[str, dict[str, int]] = {}
    for bus, now in end.aer.items():
        was = start.aer.get(bus, now)
        subject, label = _subject(bus, names)
        # A counter the start did not read has no growth; one a device lacks counts none.
        grown = {k: max(0, n - was.get(k, n)) for k, n in now.items()}
        cor, unc = grown.get("correctable", 0), grown.get("nonfatal", 0) + grown.get("fatal", 0)
        t = totals.setdefault(subject, {"correctable": 0, "uncorrectable": 0})
        t["correctable"] += cor
        t["uncorrectable"] += unc
        if _judge(unc_t, unc) is not Verdict.PASS:
            kind = "fatal" if grown.get("fatal") else "non-fatal"
            by_subject.setdefault(subject, []).append(Judgement(_judge(unc_t, unc), "AER_UNCORRECTABLE",
                f"{label}: {unc} uncorrectable ({kind}) PCIe error(s) {during}"))
        if _judge(cor_t, cor) is not Verdict.PASS:
            by_subject.setdefault(subject, []).append(Judgement(_judge(cor_t, cor), "AER_CORRECTABLE",
                f"{label}: {cor} correctable PCIe error(s) {during}"))
    out = []
    for subject, t in totals.items():
        values = {"correctable": Value(t["correctable"]), "uncorrectable": Value(t["uncorrectable"])}
        if subject in by_subject:
            out.append(fold(name, subject, by_subject[subject], values, [cor_t, unc_t], "correctable"))
        else:
            out.append(CheckResult(name, subject, Verdict.PASS, f"no PCIe errors {during} (AER)",
                                   values=values, thresholds=[cor_t, unc_t], key="correctable"))
    return out


def _subject(bus: str, names: dict[str, str]) -> tuple[str, str]:
    """(subject, label) for a PCI function: a GPU or NIC by its name; a bridge under the first
    device below it."""
    label = names.get(bus, bus)
    if label.startswith("bridge "):
        below = label.split(" above ", 1)[1].split(",")[0].strip() if " above " in label else "node"
        return below, label
    return (label if bus in names else "node"), (label if bus in names else f"PCI {bus}")


# ---------------------------------------------------------------------- the kernel log


@dataclass(frozen=True)
class LogFinding:
    kind: str  # xid | mce | ghes | aer | nvme
    verdict: Verdict
    code: str
    device: str | None  # a PCI address or an NVMe controller
    text: str
    xid_action: str | None = None  # an Xid's action in NVIDIA's catalogue (nodeqc.core.xids), for its advice
    app_xid: bool = False  # an application's Xid (NVIDIA: restart the application, or the application class)


_XID = re.compile(r"NVRM: Xid \(PCI:(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): (?P<xid>\d{1,10})\b")
# "NVRM: The NVIDIA GPU BUS (PCI ID: ...) installed in this system has fallen off the bus" (newer drivers,
# NVIDIA/NVSentinel#155) and "NVRM: GPU BUS: GPU has fallen off the bus." (the line after the Xid 79 in an
# nvidia-bug-report, congphase/my-t450s troubleshoot_log.md): either says it, with or without an Xid.
_FALLEN = re.compile(r"NVRM: (?:The NVIDIA GPU|GPU) (?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
                     r"\b.*fallen off the bus", re.S)
_AER = re.compile(r"AER: (?P<what>(?:Multiple )?(?:Corrected|Correctable|Uncorrected|Uncorrectable)[^:]*?)"
                  r"(?: error)?(?: message)? received(?: from)?:? "
                  r"(?:(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])|id=(?P<id>[0-9a-fA-F]{4}))")
# "Machine check" followed by a colon: the machine check handler's own lines. Without the colon it
# also matched "Machine check injector initialized" (mce-inject loading), which reports no error.
# An NVSwitch's own errors (HGX/DGX baseboards), printed by the nvswitch driver (open-gpu-kernel-modules,
# NVSWITCH_PRINT_SXID: "nvidia-nvswitchN: SXid (PCI:BUS): CODE, Fatal|Non-fatal, ..."; the lines after
# it, "CODE, Severity N Engine instance ...", repeat the event). Graded by the line and NVIDIA's SXid
# tables (nodeqc.core.xids.sxid_grade): fatal and always-fatal ones fail. Non-fatal ones are left
# unjudged: NVSwitch link training logs them on healthy baseboards (NVIDIA's tables list corrected
# ECC errors, replays and heartbeat timeouts among them, to watch, not to act on).
_SXID = re.compile(r"nvidia-(?P<sw>nvswitch\d+): SXid \(PCI:[^)]*\): (?P<sxid>\d{1,6}), (?P<sev>Fatal|Non-fatal)\b")
# Downstream Port Containment: the port took its link down on an uncorrectable error (PCIe Base Spec
# 6.0 6.2.11). The kernel prints "DPC: containment event, status:S source:ID" (drivers/pci/pcie/dpc.c;
# "DPC containment event" on a ":pcie010" service device before Linux 5.0, "..., ERR_FATAL received
# from BUS" in newer ones) and no "error received" line, and the device below, reset, may count nothing.
_BUS = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_DPC = re.compile(rf"(?:(?P<port>{_BUS})\S*\s+)?DPC:? containment event(?:.*?received from (?P<src>{_BUS}))?")
_MCE = re.compile(r"mce: \[Hardware Error\]|Machine [Cc]heck(?: Exception)?:")
# __print_mce (arch/x86/kernel/cpu/mce/core.c): "CPU n: Machine Check[ Exception]: MCGSTATUS Bank n:
# STATUS". Bit 61 of the bank's status (UC) says the error was not corrected (Intel SDM vol. 3B
# 16.3.2.2 IA32_MCi_STATUS; the same bit on AMD's MCA_STATUS). Recoverable uncorrected errors (a
# patrol scrub's, one a process consumed) are printed without "Exception" and without a panic.
_MCE_STATUS = re.compile(r"Machine Check(?: Exception)?: [0-9a-fA-F]+ Bank \d+: (?P<status>[0-9a-fA-F]{1,16})\b")
MCI_STATUS_UC = 1 << 61
# An uncorrected memory error the kernel recovered from by poisoning the page (and killing its
# user): "mce: Uncorrected hardware memory error in user-access at ADDR" (mce/core.c kill_me_maybe)
# and "Memory failure: PFN: recovery action for PAGE: RESULT" (mm/memory-failure.c action_result).
# Neither says "Hardware Error"; with the first line the only other one is "Machine check events
# logged", so they were taken for a corrected error.
_MEMORY_FAILURE = re.compile(r"Uncorrected hardware memory error|Memory failure: 0x[0-9a-fA-F]+: recovery action")
# Firmware-first platforms (APEI GHES) report memory, PCIe and CPU errors through the firmware;
# the kernel prints each record as "{n}[Hardware Error]: event severity: SEV" (drivers/firmware/
# efi/cper.c cper_estatus_print) with SEV one of recoverable, fatal, corrected, info (UEFI spec
# N.2.1 Error Severity). There, no AER or EDAC counter grows: these lines are the only trace.
_GHES = re.compile(r"\[Hardware Error\]: event severity: (?P<sev>recoverable|fatal|corrected)")
_NVME = re.compile(r"nvme (?P<dev>nvme\d+): (?P<what>.*)")
# An I/O the drive did not answer in time (drivers/nvme/host/pci.c nvme_timeout: "I/O N [...] QID N
# timeout, aborting | reset controller | disable controller | completion polled"). Not "Shutdown
# timeout set to N seconds": nvme core prints that at every probe and reset of a healthy drive.
_NVME_TIMEOUT = re.compile(r"QID \d+ timeout")
_NVME_RESET = re.compile(r"reset controller|resetting controller|controller is down|Removing after probe failure|"
                         r"Disabling device after reset failure|Device not ready")


def classify(line: str) -> LogFinding | None:
    """What one kernel log line says about the hardware, or None. Formats: NVRM Xid (nvidia.ko),
    AER (drivers/pci/pcie/aer.c: 'Corrected error received:' before Linux 6.8, 'Correctable error
    message received from' after), mce (arch/x86/kernel/cpu/mce: 'Machine Check Exception' when the
    error was not corrected; memory-failure's recovery from an uncorrected memory error), firmware-first
    errors (APEI GHES 'event severity'), nvme (drivers/nvme/host/core.c, pci.c)."""
    m = _XID.search(line)
    if m:
        # Judged by NVIDIA's catalogue (nodeqc.core.xids): fatal fails, an ignorable one (it points at
        # another Xid, judged itself) is not of note, the others warn. The log holds every process's
        # Xids, not only nodeqc's work's (health.xid judges those, from NVML).
        e = lookup_xid(int(m["xid"]))
        if e.severity == "ignorable":
            return None
        action = "" if e.action in ("ignore", "unknown") else f", action: {e.action.replace('_', ' ')}"
        return LogFinding("xid", Verdict.FAIL if e.severity == "fatal" else Verdict.WARN, "KERNEL_XID",
                          f"{m['bus'].lower()}.0", f"Xid {e.code} ({e.meaning}{action})", e.action,
                          app_xid=e.severity != "fatal" and (e.action == "restart_app" or e.category == "application"))
    m = _FALLEN.search(line)
    if m:  # newer drivers say this without an Xid line (NVIDIA/NVSentinel#155)
        lost = lookup_xid(79)
        return LogFinding("xid", Verdict.FAIL, "KERNEL_XID", m["bus"].lower(),
                          f"Xid 79 ({lost.meaning}, action: {lost.action})", lost.action)
    m = _SXID.search(line)
    if m:
        code = int(m["sxid"])
        grade = sxid_grade(code, m["sev"] == "Fatal")
        if grade == "non_fatal":
            return None
        what = ("always-fatal NVSwitch error (the whole NVLink fabric must be reset: reboot the host)"
                if grade == "always_fatal" else "fatal NVSwitch error")
        return LogFinding("sxid", Verdict.FAIL, "KERNEL_SXID", m["sw"], f"{what} SXid {code} ({sxid_meaning(code)})")
    m = _DPC.search(line)
    if m:
        device = m["src"] or m["port"]
        return LogFinding("aer", Verdict.FAIL, "KERNEL_AER", device.lower() if device else None,
                          "PCIe link contained (DPC) after an uncorrectable error")
    m = _AER.search(line)
    if m:
        corrected = m["what"].lower().removeprefix("multiple ").startswith("correct")
        # Older kernels name the source by requester id ("id=00e5"), not by address: the node's.
        return LogFinding("aer", Verdict.WARN if corrected else Verdict.FAIL, "KERNEL_AER",
                          m["bus"].lower() if m["bus"] else None,
                          f"AER {'corrected' if corrected else 'uncorrected'} error")
    m = _GHES.search(line)
    if m:
        corrected = m["sev"] == "corrected"
        return LogFinding("ghes", Verdict.WARN if corrected else Verdict.FAIL, "KERNEL_HW_ERROR", None,
                          f"hardware error reported by the firmware ({m['sev']})")
    if _MEMORY_FAILURE.search(line):
        return LogFinding("mce", Verdict.FAIL, "KERNEL_MCE", None, "machine check (uncorrected memory error)")
    if _MCE.search(line):
        status = _MCE_STATUS.search(line)
        uncorrected = ("Machine Check Exception" in line or re.search(r"\buncorrected\b|\bUC\b|[Ff]atal", line)
                       or (status is not None and int(status["status"], 16) & MCI_STATUS_UC))
        return LogFinding("mce", Verdict.FAIL if uncorrected else Verdict.WARN, "KERNEL_MCE", None,
                          "machine check" + (" (uncorrected)" if uncorrected else " (corrected)"))
    m = _NVME.search(line)
    if m and (_NVME_RESET.search(m["what"]) or _NVME_TIMEOUT.search(m["what"])):
        reset = bool(_NVME_RESET.search(m["what"]))
        return LogFinding("nvme", Verdict.FAIL if reset else Verdict.WARN, "KERNEL_NVME_RESET", m["dev"],
                          "NVMe controller reset" if reset else "NVMe I/O timeout")
    return None


def kernel_log(records: list[KernelRecord], source: str, unreadable: str | None, names: dict[str, str],
               profile: Profile, lost: int = 0, stopped: str | None = None,
               own_work: bool = False) -> list[CheckResult]:
    """lost: records of the run the kernel overwrote before they were read (KernelLog.lost);
    stopped: why reading the log failed part way through the run (what was read is still judged).
    own_work: the log covers nodeqc's own known-good work, alone on its GPUs (a run, not a watch of
    users' work): an application's Xid then fails as health.xid fails it from NVML (XID_APP_FAULT),
    which matters where NVML refuses XID events and the log is all there is (the 2026-11-28 advice
    review: an Xid 94 during the run warned)."""
    name = "host.kernel_log"
    mode = profile.get("host", "kernel_log", "fail")
    if mode == "off":
        return []
    if unreadable:
        return [CheckResult(name, "node", Verdict.SKIP, f"the kernel log could not be read: {unreadable}",
                            code="KERNEL_LOG_UNREADABLE")]
    found: dict[str, list[tuple[LogFinding, str]]] = {}
    for rec in records:
        f = classify(rec.text)
        if f is None:
            continue
        if own_work and f.app_xid:
            f = replace(f, verdict=Verdict.FAIL, xid_action=OWN_WORK_APP_XID)
        subject = "node"
        if f.device and (f.kind in ("xid", "aer")):
            subject, _ = _subject(f.device, names)
        found.setdefault(subject, []).append((f, rec.text))
    values = {"lines": Value(len(records))}
    # A ring buffer that wrapped hid part of the run: never a pass on what was left.
    gap = Judgement(Verdict.WARN, "KERNEL_LOG_LOST", f"at least {lost} kernel log record(s) of the run were overwritten "
                  f"before they were read (the ring buffer wrapped): what they said was not judged") if lost else None
    if stopped:  # as a gap: what came after was not read, so never a pass on what was
        gap = Judgement(Verdict.WARN, "KERNEL_LOG_LOST", f"the kernel log could not be read to the end of the run "
                      f"({stopped}): what it said after was not judged")
    if not found:
        if gap:
            return [CheckResult(name, "node", Verdict.WARN, f"{gap.message}; nothing of note in the {len(records)} "
                                f"line(s) read ({source})", code=gap.code, values=values, key="lines")]
        return [CheckResult(name, "node", Verdict.PASS, f"nothing of note in {len(records)} kernel log line(s) "
                            f"during the run ({source})", values=values, key="lines")]
    if gap:
        found.setdefault("node", [])
    out = []
    for subject, items in found.items():
        findings = []
        for kind in dict.fromkeys(f.kind for f, _ in items):
            same = [(f, t) for f, t in items if f.kind == kind]
            worst = max((f for f, _ in same), key=lambda f: f.verdict.severity)
            verdict = Verdict.WARN if mode == "warn" and worst.verdict is Verdict.FAIL else worst.verdict
            device = f" on {names.get(worst.device, worst.device)}" if worst.device else ""
            more = f" (+{len(same) - 1} more line(s))" if len(same) > 1 else ""
            findings.append(Judgement(verdict, worst.code, f"{worst.text}{device}{more}: {same[0][1]}"))
        if gap and subject == "node":
            findings.append(gap)
        result = fold(name, subject, findings, {"lines": Value(len(items))}, [], "lines")
        result.evidence = {"lines": [t for _, t in items[:EVIDENCE_LINES]], "source": source}
        xids = [f for f, _ in items if f.kind == "xid" and f.xid_action]
        if xids:  # the advice follows the worst Xid's action, as health.xid's does (codes.advice)
            result.evidence["xid_action"] = max(xids, key=lambda f: f.verdict.severity).xid_action
        out.append(result)
    return out


def device_names(gpus: list[Any], nics: list[Any], bridges: dict[str, list[str]]) -> dict[str, str]:
    """bus id -> name: GPUs by slot, NICs by interface, bridges by what sits below them."""
    names = {g.bus_id: g.subject for g in gpus if not g.lost}
    names.update({n.bus_id: n.name for n in nics if isinstance(n.bus_id, str)})
    for bridge, below in bridges.items():
        names.setdefault(bridge, f"bridge {bridge} above {', '.join(below)}")
    return names

