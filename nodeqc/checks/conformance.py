"""Conformance: a node against a golden baseline (`nodeqc baseline create` on a known-good node).

Pure functions: the baseline and the node's observation are the same shape (nodeqc.spec.baseline), and
every field the baseline records must match. Each difference is a finding with a code and what to
do, naming the value the baseline wants ("flash VBIOS 96.00.99.00.01"). A field the node cannot
report now is a warning (not a silent pass); a device the baseline does not know is a warning too.
What this run has no backend to read at all (the observation's "unread": a replay has no platform
and no NICs) is neither missing nor unreadable: each check says once what it did not compare and
why (SKIP, BASELINE_NOT_HERE), and with nothing compared at all the comparison could not run (ERROR).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from nodeqc.backends.platform import redirecting
from nodeqc.checks.common import Judgement
from nodeqc.core.model import CheckResult, Value, Verdict


@dataclass(frozen=True)
class Field:
    check: str  # baseline.firmware | software | settings | topology
    code: str
    label: str
    todo: Callable[[str, Any], str]  # (subject, the baseline's value) -> what to do


def _v(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(map(str, x)) + "]" if x else "none"
    if isinstance(x, bool):
        return "on" if x else "off"
    return str(x)


def _gpu_index(subject: str) -> str:
    return subject[3:] if subject.startswith("gpu") else subject


FW, SW, SET, TOPO = "baseline.firmware", "baseline.software", "baseline.settings", "baseline.topology"

NODE_FIELDS: dict[str, Field] = {
    "driver": Field(SW, "BASELINE_DRIVER", "NVIDIA driver", lambda s, b: f"install NVIDIA driver {b}"),
    "cuda": Field(SW, "BASELINE_CUDA", "CUDA version of the driver", lambda s, b: f"install the driver that supports CUDA {b}"),
    "kernel": Field(SW, "BASELINE_KERNEL", "kernel", lambda s, b: f"boot kernel {b}"),
    "bios_vendor": Field(FW, "BASELINE_BIOS", "BIOS vendor", lambda s, b: f"install the {b} BIOS"),
    "bios_version": Field(FW, "BASELINE_BIOS", "BIOS version", lambda s, b: f"flash BIOS {b}"),
    "bios_date": Field(FW, "BASELINE_BIOS", "BIOS date", lambda s, b: f"flash the BIOS release of {b}"),
    "board_vendor": Field(FW, "BASELINE_BOARD", "board vendor", lambda s, b: f"this node is not the baseline's build ({b})"),
    "board_name": Field(FW, "BASELINE_BOARD", "board", lambda s, b: f"this node is not the baseline's build (board {b})"),
    "sys_vendor": Field(FW, "BASELINE_BOARD", "system vendor", lambda s, b: f"this node is not the baseline's build ({b})"),
    "product_name": Field(FW, "BASELINE_BOARD", "system model", lambda s, b: f"this node is not the baseline's build ({b})"),
    "iommu": Field(SET, "BASELINE_IOMMU", "IOMMU mode", lambda s, b: (
        "disable the IOMMU as the baseline has it (BIOS VT-d/AMD-Vi, or intel_iommu=off)" if b == "off" else
        "set passthrough on the kernel command line (iommu=pt), as the baseline has it" if b == "identity" else
        f"set the IOMMU to {b} as the baseline has it (kernel command line iommu=, intel_iommu=, amd_iommu=)")),
}

GPU_FIELDS: dict[str, Field] = {
    "model": Field(FW, "BASELINE_GPU_MODEL", "model", lambda s, b: f"fit a {b}: this GPU is not the baseline's model"),
    "vbios": Field(FW, "BASELINE_VBIOS", "VBIOS", lambda s, b: f"flash VBIOS {b} (the server vendor's GPU firmware package)"),
    "gsp_firmware": Field(FW, "BASELINE_GSP_FIRMWARE", "GSP firmware", lambda s, b: f"GSP firmware comes with the driver: install driver {b}"),
    "inforom_image": Field(FW, "BASELINE_INFOROM", "InfoROM image", lambda s, b: f"update the GPU firmware bundle to the baseline's (InfoROM image {b})"),
    "inforom_oem": Field(FW, "BASELINE_INFOROM", "InfoROM OEM object", lambda s, b: f"update the GPU firmware bundle to the baseline's (InfoROM OEM {b})"),
    "inforom_ecc": Field(FW, "BASELINE_INFOROM", "InfoROM ECC object", lambda s, b: f"update the GPU firmware bundle to the baseline's (InfoROM ECC {b})"),
    "inforom_power": Field(FW, "BASELINE_INFOROM", "InfoROM power object", lambda s, b: f"update the GPU firmware bundle to the baseline's (InfoROM power {b})"),
    "ecc": Field(SET, "BASELINE_GPU_MODE", "ECC", lambda s, b: f"nvidia-smi -i {_gpu_index(s)} -e {int(bool(b))}, then reboot"),
    "persistence": Field(SET, "BASELINE_GPU_MODE", "persistence mode", lambda s, b: f"nvidia-smi -i {_gpu_index(s)} -pm {int(bool(b))} (or nvidia-persistenced)"),
    "mig_mode": Field(SET, "BASELINE_GPU_MODE", "MIG mode", lambda s, b: f"nvidia-smi -i {_gpu_index(s)} -mig {1 if b == 'enabled' else 0}, then reset the GPU"),
    "compute_mode": Field(SET, "BASELINE_GPU_MODE", "compute mode", lambda s, b: f"nvidia-smi -i {_gpu_index(s)} -c {str(b).upper()}"),
    "app_sm_clock_mhz": Field(SET, "BASELINE_CLOCKS", "application SM clock (MHz)", lambda s, b: f"set the application clocks as the baseline (nvidia-smi -i {_gpu_index(s)} -ac MEM,{b}), or reset them (-rac)"),
    "app_mem_clock_mhz": Field(SET, "BASELINE_CLOCKS", "application memory clock (MHz)", lambda s, b: f"set the application clocks as the baseline (nvidia-smi -i {_gpu_index(s)} -ac {b},SM), or reset them (-rac)"),
    "power_limit_w": Field(SET, "BASELINE_POWER_LIMIT", "power limit (W)", lambda s, b: f"nvidia-smi -i {_gpu_index(s)} -pl {b} (and check the BMC's power capping)"),
    # The slot: GPUs are named in PCI order (gpu0 is the first bus id), so a card moved to another
    # slot, a riser on another root port or a BIOS that enumerates differently shows here first.
    "bus_id": Field(TOPO, "BASELINE_PCIE_SLOT", "PCI bus id", lambda s, b: f"the baseline has {s} at {b}: check the card sits in the baseline's slot, its riser and the BIOS's PCIe settings"),
    "numa_node": Field(TOPO, "BASELINE_NUMA", "NUMA node", lambda s, b: f"the card belongs on NUMA node {b}: check it is in the baseline's slot and the BIOS NUMA setting (SNC/NPS) matches"),
    "pcie_switch_peers": Field(TOPO, "BASELINE_PCIE_SWITCH", "devices on its PCIe switch", lambda s, b: f"the baseline has {s} on one PCIe switch with {_v(b)}: check the card's slot, risers and PCIe cabling"),
}

NIC_FIELDS: dict[str, Field] = {
    "driver": Field(SW, "BASELINE_NIC_DRIVER", "driver", lambda s, b: f"load the {b} driver for {s}"),
    "driver_version": Field(SW, "BASELINE_NIC_DRIVER", "driver version", lambda s, b: f"install the NIC driver version {b} (e.g. MLNX_OFED/DOCA {b})"),
    "firmware": Field(FW, "BASELINE_HCA_FIRMWARE", "firmware", lambda s, b: f"flash HCA firmware {b} (mlxfwmanager or flint, from the NIC vendor)"),
    "bus_id": GPU_FIELDS["bus_id"],
    "numa_node": GPU_FIELDS["numa_node"],
    "pcie_switch_peers": GPU_FIELDS["pcie_switch_peers"],
}

PLACEMENT = frozenset({"numa_node", "pcie_switch_peers"})  # where the device sits: sysfs's, not the driver's
# GPU fields NVML answers for any user: one it cannot answer now is not a matter of root (as the
# PCIe tree's, DMI's and the NICs' are) but of the driver or the GPU.
FROM_THE_DRIVER = frozenset(GPU_FIELDS) - PLACEMENT
DRIVER_UNREADABLE = ("the NVIDIA driver does not report it now (nvidia-smi -q shows what it sees): check that the "
                     "driver the baseline names is loaded and the GPU answers")

CHECKS = (FW, SW, SET, TOPO)


@dataclass
class _Subject:
    findings: dict[str, list[Judgement]]
    values: dict[str, dict[str, Value]]


# What this run could not read (no backend for it), by check, then why, then part: the labels of
# what the baseline records there. Said in one line per check, never as a difference.
_NotRead = dict[str, dict[str, dict[str, list[str]]]]
_PRESENT = "whether it is there"


def judge_conformance(baseline: dict[str, Any], observed: dict[str, Any], warn_fields: frozenset[str] = frozenset(),
            ignore_fields: frozenset[str] = frozenset(), source: str = "the baseline") -> list[CheckResult]:
    """The node (observed) against the baseline: results per check and subject, differences first.
    What the observation lists under "unread" (nodeqc.spec.baseline.observe: this run has no backend
    that reads it) is not compared, and said so, with the reason, once per check."""
    subjects: dict[str, _Subject] = {}
    unread: dict[str, dict[str, str]] = observed.get("unread") or {}
    unplaced: dict[str, str] = unread.get("pci", {})  # devices whose place in the PCIe tree was not read
    not_read: _NotRead = {}

    def unread_note(check: str, subject: str, label: str, why: str) -> None:
        not_read.setdefault(check, {}).setdefault(why, {}).setdefault(subject, []).append(label)

    def note(check: str, subject: str, field_name: str, finding: Judgement | None, value: Any = None) -> None:
        s = subjects.setdefault(subject, _Subject({}, {}))
        s.findings.setdefault(check, [])
        if finding is not None:
            s.findings[check].append(finding)
        if value is not None:
            s.values.setdefault(check, {})[field_name] = Value(_v(value))

    def verdict(field_name: str) -> Verdict:
        return Verdict.WARN if field_name in warn_fields else Verdict.FAIL

    def fields(table: dict[str, Field], subject: str, want: dict[str, Any], have: dict[str, Any], label: str,
               unread_here: dict[str, str]) -> None:
        for name, expected in want.items():
            spec = table.get(name)
            if spec is None or name in ignore_fields:
                continue
            actual = have.get(name)
            if name == "pcie_switch_peers" and isinstance(expected, list):
                # A peer whose place was not read cannot be seen on the switch: not compared. Nor can
                # a peer missing from the node, which is found under its own name: its healthy
                # neighbour failed BASELINE_PCIE_SWITCH beside it (the 2026-11-28 advice review).
                expected = [p for p in expected if str(p) not in unplaced and str(p) not in gone]
            if actual is None and name in unread_here:
                unread_note(spec.check, subject, spec.label, unread_here[name])
            elif actual is None and name in PLACEMENT and subject in unplaced:
                unread_note(spec.check, subject, spec.label, unplaced[subject])
            elif actual is None:
                advice = (DRIVER_UNREADABLE if table is GPU_FIELDS and name in FROM_THE_DRIVER else
                          "run as root, or check that the driver and tools are installed")
                note(spec.check, subject, name, Judgement(Verdict.WARN, "BASELINE_UNREADABLE",
                     f"{label}{spec.label}: not readable now (baseline {_v(expected)}); {advice}"), "N/A")
            elif _same(actual, expected):
                note(spec.check, subject, name, None, actual)
            else:
                note(spec.check, subject, name, Judgement(verdict(name), spec.code,
                     f"{label}{spec.label} {_v(actual)}, baseline {_v(expected)}: {spec.todo(subject, expected)}"), actual)

    # The baseline's GPUs and NICs this node lacks, where it looked for them (BASELINE_DEVICE_MISSING).
    # Not where the profile ignores devices: a missing one is reported nowhere else then.
    gone = set() if "devices" in ignore_fields else {
        name for kind in ("gpu", "nic") if "devices" not in unread.get(kind, {})
        for name in baseline.get(kind, {}) if name not in observed.get(kind, {})}
    fields(NODE_FIELDS, "node", baseline.get("node", {}), observed.get("node", {}), "", unread.get("node", {}))
    for kind, table in (("gpu", GPU_FIELDS), ("nic", NIC_FIELDS)):
        want_all, have_all = baseline.get(kind, {}), observed.get(kind, {})
        unread_here = unread.get(kind, {})
        for name, want in want_all.items():
            have = have_all.get(name)
            if have is None and "devices" in unread_here:
                # Nobody looked for it: not missing. Each check says what of it was not compared.
                if "devices" not in ignore_fields:
                    unread_note(TOPO, name, _PRESENT, unread_here["devices"])
                for field_name in want:
                    if field_name in table and field_name not in ignore_fields:
                        unread_note(table[field_name].check, name, table[field_name].label, unread_here["devices"])
                continue
            if have is None:
                if "devices" not in ignore_fields:
                    note(TOPO, name, "present", Judgement(verdict("devices"), "BASELINE_DEVICE_MISSING",
                         f"{name} ({want.get('bus_id', '?')}) is in {source} but not on this node"), "missing")
                continue
            label = "" if kind == "gpu" else f"{name}: "
            fields(table, name, want, have, label, unread_here)
        for name, have in have_all.items():
            if name not in want_all and "devices" not in ignore_fields:
                note(TOPO, name, "present", Judgement(Verdict.WARN, "BASELINE_DEVICE_EXTRA",
                     f"{name} ({have.get('bus_id', '?')}) is not in {source}: record a new baseline if it belongs"), "extra")
    if "acs" not in ignore_fields:
        _acs(baseline.get("bridge", {}), observed.get("bridge", {}), note, verdict("acs"),
             lambda bridge, label, why: unread_note(TOPO, f"bridge {bridge}", label, why),
             unread.get("bridge", {}).get("devices"), unplaced)
    for check, finding in _not_compared(not_read, subjects, source):
        note(check, "node", "not read", finding)
    if not subjects and (baseline.get("node") or any(baseline.get(k) for k in ("gpu", "nic", "bridge"))):
        # Nothing compared and nothing left unread: every field the baseline records is one the profile's
        # baseline_ignore leaves out (2026-11-28 audit: a baseline of one ignored field passed a full
        # run, exit 0). A run asked to conform has not shown it: ERROR, as BASELINE_NOT_HERE's.
        for check in CHECKS:
            note(check, "node", "nothing compared", Judgement(Verdict.ERROR, "BASELINE_NOTHING_COMPARED",
                 f"could not run: nothing of {source} compared (the profile's baseline_ignore leaves out every "
                 f"field it records{': ' + ', '.join(sorted(ignore_fields)) if ignore_fields else ''})"))
    return _results(subjects)


def _acs(want_all: dict[str, Any], have_all: dict[str, Any], note: Callable[..., None], level: Verdict,
         unread: Callable[[str, str, str], None], tree_unread: str | None, unplaced: dict[str, str]) -> None:
    """Each bridge of the baseline: still there, with its ACS as recorded. `tree_unread`: why the
    PCIe tree was not read at all; `unplaced`: devices whose place in it was not read (a bridge
    above one of them may be there still)."""
    for bridge, want in want_all.items():
        above = want.get("above") or []
        subject = above[0] if above else f"bridge {bridge}"
        where = f"bridge {bridge} (above {', '.join(above) or 'no device'})"
        have = have_all.get(bridge)
        why = tree_unread or next((unplaced[d] for d in above if d in unplaced), None)
        if have is None and why is not None:  # nothing known of the bridge
            unread(bridge, _PRESENT, why)
            if want.get("acs") is not None:
                unread(bridge, "ACS", why)
            continue
        if have is None:
            note(TOPO, subject, f"acs {bridge}", Judgement(level, "BASELINE_PCIE_SWITCH",
                 f"{where}: in the baseline, but no GPU or NIC sits below it now: check the cards' slots and risers"), "missing")
            continue
        expected, actual = want.get("acs"), have.get("acs")
        if expected is None:
            continue
        if actual is None:
            note(TOPO, subject, f"acs {bridge}", Judgement(Verdict.WARN, "BASELINE_UNREADABLE",
                 f"{where}: ACS control not readable (the PCIe config space needs root)"), "N/A")
        elif _same(actual, expected):
            note(TOPO, subject, f"acs {bridge}", None, "as baseline")
        else:
            added = [b for b in redirecting(actual) if b not in redirecting(expected)]
            todo = (f"disable ACS on bridge {bridge} for GPUDirect ({'/'.join(added)} send peer-to-peer traffic "
                    f"through the CPU): the BIOS's ACS option, or setpci -s {bridge} ECAP_ACS+0x6.w=0000"
                    if added else f"set ACS on bridge {bridge} as the baseline has it (BIOS ACS option, or setpci)")
            note(TOPO, subject, f"acs {bridge}", Judgement(level, "BASELINE_ACS",
                 f"{where}: ACS {actual}, baseline {expected}: {todo}"), actual)


def _not_compared(not_read: _NotRead, subjects: dict[str, _Subject], source: str) -> list[tuple[str, Judgement]]:
    """What this run could not read, one finding per check (and reason), for the node.

    Its verdict, chosen with care. Not FAIL: nothing was found different, nobody looked. Not WARN:
    a warning asks the technician to act on the node, and nothing is known wrong with it. Not PASS:
    a check that compared nothing would pass in silence. SKIP, as every check this run has no
    backend for (HOST_NOT_HERE): it does not block qualification, the answer counts it among the
    checks not run with its reason, and what was read keeps its own result and verdict (a node
    result that also compared fields shows the worse: a difference over this). When nothing of the
    baseline could be compared at all, the comparison itself could not run: ERROR, as when the node
    could not be read (BASELINE_NOT_READ), because a run asked to conform to a baseline has not
    shown it (exit 2, could not run), never a FAIL of the node (exit 1)."""
    compared_any = bool(subjects)
    out = []
    for check in CHECKS:
        compared = any(check in s.findings for s in subjects.values())
        for why, parts in not_read.get(check, {}).items():
            items = ", ".join(f"{part} ({', '.join(labels)})" for part, labels in parts.items())
            if not compared_any:
                out.append((check, Judgement(Verdict.ERROR, "BASELINE_NOT_HERE",
                                           f"could not run, nothing of {source} compared: {items} not read: {why}")))
            else:
                head = "not compared" if compared else "not run"
                out.append((check, Judgement(Verdict.SKIP, "BASELINE_NOT_HERE", f"{head}: {items} not read: {why}")))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not (math.isfinite(a) and math.isfinite(b)):  # inf is within a millionth of inf, and of 700
            return False
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    if isinstance(a, list) and isinstance(b, list):
        return sorted(map(str, a)) == sorted(map(str, b))
    return a == b


def _fields(n: int) -> str:
    return f"{n} {'field' if n == 1 else 'fields'}"


def _results(subjects: dict[str, _Subject]) -> list[CheckResult]:
    out = []
    for check in CHECKS:
        for subject, s in subjects.items():
            if check not in s.findings:
                continue
            findings = s.findings[check]
            values = s.values.get(check, {})
            if not findings:
                out.append(CheckResult(check, subject, Verdict.PASS, f"as the baseline ({_fields(len(values))})",
                                       values=values))
                continue
            worst = max(findings, key=lambda f: f.verdict.severity)
            rest = [f.message for f in findings if f is not worst]
            if worst.verdict is Verdict.SKIP and values:  # not all read, and what was read matches: say both
                rest.append(f"the rest as the baseline ({_fields(len(values))})")
            out.append(CheckResult(check, subject, worst.verdict, "; ".join([worst.message] + rest), code=worst.code,
                                   values=values, evidence={"differences": [
                                       {"code": f.code, "verdict": f.verdict.value, "message": f.message} for f in findings]}))
    order = {v: i for i, v in enumerate((Verdict.FAIL, Verdict.WARN, Verdict.PASS))}
    return sorted(out, key=lambda r: (CHECKS.index(r.name), order.get(r.verdict, 3)))
