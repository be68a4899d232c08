"""What became of each fault planted in a simulated node (--inject), as the fabric says of its own
(nodeqc.fabric.simulated.SimCluster.outcomes): `found` by a check made for it, with a code that names
it; `masked` (a check made for it failed on its part for another cause, which may hide it);
`untested` (no check that could find it judged its part: why); `within the floors` (its checks judged
its part and passed it); or `condition` (a healthy node's way, no defect: nothing should fail for it).

A simulated run with a fault where no check looks passed in silence: `--inject nic0:down` on the
hgx-h100 scenario took down eno1, which its profile (NICs ib*) never tests, and the run passed with
nothing said (2026-11-29). The run's verdict stays the checks' own; what was planted and not tested
is said beside it, in the report (simulation.planted), in `show`, and after the headless RESULT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from nodeqc.backends.sim.faults import Fault
from nodeqc.core.catalogue import family_of
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.spec.selection import Selection

# A fault's checks and the codes they find it by. Checks: those that find it on its own part (gpuN; a
# NIC's nicN or interface name; the host's "node"), and with "@node" those that find it on the node as
# a whole (the all-reduce across every GPU, the PSUs' sensors), credited only where no check of its own
# part passed. A family's name alone ("stress") is any of its checks. Codes: a code, or a prefix ending
# in "_" (XID_); a check that failed with another code is another fault's finding (a burn failed on a
# flipped bit says nothing of its slowness). From one simulated run per fault, quick and full
# (2026-11-29: every fault of tests/test_faults.py's VALID), held by tests/test_planted.py and the
# fault runs of tests/test_fault_detection.py and tests/test_fault_families.py.
FINDS: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "gpu": {
        "missing": (("inventory.gpu_present", "inventory.gpu_count@node"), ("GPU_MISSING", "GPU_COUNT")),
        "pcie_width": (("health.pcie_link", "stress.pcie_bandwidth"), ("PCIE_WIDTH",)),
        "pcie_gen": (("health.pcie_link", "stress.pcie_bandwidth"), ("PCIE_GEN",)),
        "pcie_replay": (("health.pcie_replay",), ("PCIE_REPLAY",)),
        "temp": (("health.temperature", "health.throttle"), ("TEMP_", "MEM_TEMP_HIGH", "THROTTLE_THERMAL")),
        "throttle": (("health.throttle", "stress.burn"), ("THROTTLE_",)),
        "ecc_dbe": (("health.ecc",), ("ECC_DBE",)), "ecc_sbe": (("health.ecc",), ("ECC_SBE",)),
        "sram_dbe": (("health.sram_ecc",), ("SRAM_ECC_UNCORRECTABLE",)),
        "sram_sbe": (("health.sram_ecc",), ("SRAM_ECC_CORRECTED",)),
        "xid": (("health.xid", "host.kernel_log"), ("XID_", "KERNEL_XID")),
        "row_remap_pending": (("health.row_remap",), ("ROW_REMAP_PENDING",)),
        "row_remap_failed": (("health.row_remap",), ("ROW_REMAP_FAILED",)),
        "lost": (("health.gpu_lost", "stress"), ("GPU_LOST",)),
        "slow": (("stress.burn", "burnin.stability"), ("BURN_SLOW", "BURN_OUTLIER", "BURN_IN_DRIFT")),
        "hbm_bw": (("stress.hbm_bandwidth",), ("HBM_SLOW", "HBM_OUTLIER")),
        "bitflip": (("stress.burn", "burnin.stability"), ("SDC_",)),
        "badmem": (("stress.memtest",), ("MEMTEST_ERRORS",)),
        "retention": (("stress.memtest",), ("MEMTEST_ERRORS",)),  # its bit fade: full runs only (NEEDS_FULL)
        "bitflip_random": (("stress.burn", "burnin.stability"), ("SDC_",)),
        "hbm_corrupt": (("stress.hbm_bandwidth",), ("HBM_CORRUPT",)),
        "pcie_corrupt": (("stress.pcie_bandwidth",), ("PCIE_COPY_CORRUPT",)),
        "p2p_corrupt": (("stress.p2p",), ("P2P_CORRUPT",)),
        "nccl_corrupt": (("stress.nccl", "stress.nccl_net"), ("NCCL_WRONG_RESULT",)),
        "nvlink_down": (("health.nvlink", "stress.p2p", "stress.nccl@node"), ("NVLINK_DOWN", "P2P_", "NCCL_SLOW", "NCCL_NVLS_SLOW")),
        "fabric_unregistered": (("inventory.nvlink_fabric",), ("FABRIC_NOT_REGISTERED",)),
        "fabric_degraded": (("inventory.nvlink_fabric",), ("FABRIC_DEGRADED",)),
        "fabric_clique": (("inventory.nvlink_fabric",), ("FABRIC_CLIQUE_MISMATCH",)),
        "p2p_bw": (("stress.p2p", "stress.nccl@node"), ("P2P_SLOW", "P2P_OUTLIER", "P2P_PAIR_SLOW", "NCCL_SLOW")),
        "nvls_down": (("stress.nccl@node",), ("NCCL_NVLS_SLOW",)),
        "hang": (("stress", "burnin.stability"), ("WORKER_HANG",)),
        "power": (("stress.burn", "stress.power"), ("BURN_POWER_LOW", "POWER_TARGET_LOW")),
        "transient_brake": (("stress.power_pulse", "health.throttle"), ("POWER_PULSE_THROTTLE", "THROTTLE_POWER_BRAKE")),
        "no_pulse": (("stress.power_pulse",), ("PULSE_NOT_FOLLOWED",)),
        "power_limit": (("stress.burn", "stress.power", "inventory.homogeneity@node"), ("POWER_LIMIT_LOWERED",)),
        "cotenant": (("stress.gpu_free",), ("GPU_IN_USE",)),
        "cotenant_late": (("stress",), ("GPU_IN_USE",)),
        "vbios": (("baseline.firmware", "inventory.homogeneity@node"), ("BASELINE_VBIOS", "GPU_MIXED")),
        "numa": (("baseline.topology",), ("BASELINE_NUMA",)),
        "acs": (("baseline.topology",), ("BASELINE_ACS",)),
        "aer": (("host.aer",), ("AER_CORRECTABLE",)),
    },
    "nic": {
        "down": (("nic.link",), ("NIC_LINK_DOWN", "IB_PORT_DOWN")),
        "speed": (("nic.link",), ("NIC_SPEED", "IB_RATE")),
        "pcie_width": (("nic.pcie",), ("NIC_PCIE_WIDTH",)),
        "fw": (("baseline.firmware",), ("BASELINE_HCA_FIRMWARE",)),
        "numa": (("baseline.topology",), ("BASELINE_NUMA",)),
        "optics_temp": (("host.optics",), ("OPTICS_ALARM", "OPTICS_WARNING")),
        "link_ber": (("host.optics",), ("LINK_BER_HIGH",)),
    },
    "host": {
        "edac_ce": (("host.edac",), ("EDAC_CE",)), "edac_ue": (("host.edac",), ("EDAC_UE",)),
        "mce": (("host.kernel_log",), ("KERNEL_MCE",)), "nvme_reset": (("host.kernel_log",), ("KERNEL_NVME_RESET",)),
        "iommu": (("baseline.settings",), ("BASELINE_IOMMU",)), "bios": (("baseline.firmware",), ("BASELINE_BIOS",)),
        "cpu_wrong": (("host.cpu_stress",), ("HOST_CPU_WRONG",)),
        "psu_fault": (("stress.power@node", "stress.power_pulse@node"), ("PSU_FAILURE", "PSU_REDUNDANCY_LOST")),
        "psu_undervolt": (("stress.power@node", "stress.power_pulse@node"), ("PSU_SENSOR_CRITICAL", "PSU_SENSOR_WARNING")),
        "imex_down": (("host.imex",), ("IMEX_NOT_RUNNING",)), "imex_no_channels": (("host.imex",), ("IMEX_NO_CHANNELS",)),
        "imex_nodes": (("host.imex",), ("IMEX_NODES_MISSING",)), "imex_not_listed": (("host.imex",), ("IMEX_SELF_MISSING",)),
    },
}
# Not defects: what a healthy node may be or do (nothing should fail for them; the run must cope).
CONDITIONS: dict[tuple[str, ...], str] = {
    ("gpu", "cold_start"): "a slow first product after each set-up, as real GPUs have",
    ("gpu", "no_throttle_counters"): "a driver that does not count clock-event time",
    ("host", "no_bmc"): "no BMC (as in a VM): the PSUs go unread", ("host", "no_ipmitool"): "no ipmitool: the PSUs go unread",
    ("host", "no_mlxlink"): "no mlxlink: the optics are read with ethtool -m",
    ("gpu", "throttle", "sw_power_cap"): "a GPU held at its power cap, as every GPU under a full load is",
}
# Faults only a full run's part of a check finds (the memory test's bit fade leaves cells alone for minutes).
NEEDS_FULL = {("gpu", "retention"): "the memory test's bit fade runs in full runs only (not --quick)"}
# Why a check has no result in a run that did not leave it out.
WHEN_RUN = {"baseline": "runs against a golden baseline (--baseline FILE)",
            "host.cpu_stress": "runs in full runs only (not --quick)", "host.memory_bandwidth": "runs in full runs only (not --quick)",
            "host.nvme": "runs in full runs only (not --quick)", "host.optics": "runs in full runs only (not --quick)",
            "burnin.stability": "runs with a burn-in (--burn-in)", "host.imex": "runs where the node uses multi-node NVLink"}

BAD = (Verdict.FAIL, Verdict.WARN, Verdict.ERROR)


def _matches(result: CheckResult, check: str) -> bool:
    return result.name == check or (family_of(check) is not None and "." not in check and result.name.startswith(check + "."))


def _finds(code: str | None, codes: tuple[str, ...]) -> bool:
    return code is not None and any(code == c or (c.endswith("_") and code.startswith(c)) for c in codes)


def outcomes(faults: Sequence[Fault], results: Sequence[CheckResult], *, quick: bool, selection: Selection,
             nic_names: Sequence[str] = (), nic_tested: Callable[[str], bool] | None = None) -> list[dict[str, str]]:
    """Each planted fault's outcome, in the fabric's words: {fault, outcome, why}: `found` (a check made
    for it failed or warned with a code that names it), `masked` (one of its checks failed with another
    code: another cause's finding, which may hide it), `within the floors` (its checks judged its part
    and passed), `untested` (why: not selected, not run, could not run) or `condition`. `selection`: the
    run's --only/--skip/--gpu; `nic_names`: the simulated node's NICs in --inject's order (nic0 first);
    `nic_tested(name)`: whether the profile tests that NIC."""
    said = [_outcome(f, results, quick, selection, nic_names, nic_tested) for f in faults]
    # A result of the node as a whole credited to two faults: each says the other shares it.
    credited: dict[int, list[str]] = {}
    for f, (_, found) in zip(faults, said):
        for r in found:
            if r.subject == "node":
                credited.setdefault(id(r), []).append(str(f))
    out = []
    for f, (entry, found) in zip(faults, said):
        others = sorted({o for r in found if r.subject == "node" for o in credited.get(id(r), []) if o != str(f)})
        if others:
            entry["why"] += f" (the node's result, shared with {', '.join(others)})"
        out.append(entry)
    return out


def _subjects(f: Fault, nic_names: Sequence[str]) -> tuple[str, ...]:
    if f.target == "nic":  # nic.* name it nicN, host.optics and the baseline by its interface
        return (f.subject, nic_names[f.index]) if f.index < len(nic_names) else (f.subject,)
    return ("node",) if f.target == "host" else (f.subject,)


def _named(rs: Iterable[CheckResult]) -> str:
    seen = list(dict.fromkeys(f"{r.name} {r.verdict.name} on {r.subject}" + (f" [{r.code}]" if r.code else "") for r in rs))
    return "; ".join(seen[:3]) + (f" and {len(seen) - 3} more" if len(seen) > 3 else "")


def _outcome(f: Fault, results: Sequence[CheckResult], quick: bool, selection: Selection, nic_names: Sequence[str],
             nic_tested: Callable[[str], bool] | None) -> tuple[dict[str, str], list[CheckResult]]:
    """(the fault's outcome, the results credited with finding it)."""
    text = str(f)

    def said(outcome: str, why: str, found: list[CheckResult] | None = None) -> tuple[dict[str, str], list[CheckResult]]:
        return {"fault": text, "outcome": outcome, "why": why}, found or []

    if (condition := CONDITIONS.get((f.target, f.name)) or CONDITIONS.get((f.target, f.name, f.value))) is not None:
        return said("condition", f"not a defect: {condition}; nothing should fail for it")
    subjects = _subjects(f, nic_names)
    part = subjects[0] + (f" ({subjects[1]})" if len(subjects) > 1 else "")
    if f.target == "gpu" and not selection.covers(f.index):  # the node's results are the other GPUs'
        return said("untested", f"{part} is not among the GPUs this run tests (--gpu)")
    checks, codes = FINDS[f.target][f.name]
    own = [c for c in checks if not c.endswith("@node")]
    whole = [c.removesuffix("@node") for c in checks if c.endswith("@node")]
    mine = [r for r in results if r.subject in subjects and any(_matches(r, c) for c in own)]
    if not any(r.verdict is Verdict.PASS for r in mine):  # a passing check of its own part outweighs the node's
        mine += [r for r in results if r.subject == "node" and any(_matches(r, c) for c in whole)]
    by_severity = sorted(mine, key=lambda r: -r.verdict.severity)
    if found := [r for r in by_severity if r.verdict in BAD and _finds(r.code, codes)]:
        return said("found", _named(found), found)
    if masked := [r for r in by_severity if r.verdict in (Verdict.FAIL, Verdict.WARN)]:
        return said("masked", f"{_named(masked)}: another cause's finding, which may hide this one (its message may name it)")
    if (f.target, f.name) in NEEDS_FULL and quick:
        return said("untested", NEEDS_FULL[f.target, f.name])
    if judged := [r for r in mine if r.verdict is Verdict.PASS]:
        return said("within the floors", f"{_named(judged)}: milder than the floors, or missed")
    if errors := [r for r in mine if r.verdict is Verdict.ERROR]:
        return said("untested", f"{_named(errors)}: could not run: {errors[0].message}")
    return said("untested", _untested(f, subjects, part, checks, mine, selection, nic_tested))


def _untested(f: Fault, subjects: tuple[str, ...], part: str, checks: tuple[str, ...], mine: list[CheckResult],
              selection: Selection, nic_tested: Callable[[str], bool] | None) -> str:
    if f.target == "nic" and len(subjects) > 1 and nic_tested is not None and not nic_tested(subjects[1]):
        return f"{part} is not among the NICs the profile tests ([nic] match or drivers)"
    if skipped := [r for r in mine if r.verdict is Verdict.SKIP]:
        return f"{_named(skipped)}: {skipped[0].message}"
    names = [c.removesuffix("@node") for c in checks]
    reasons = []
    for c in names:
        if "." in c and not selection.includes(c):
            reasons.append(f"{c} left out of this run (--only/--skip)")
        elif why := next((w for key, w in WHEN_RUN.items() if c == key or c.startswith(key + ".")), None):
            reasons.append(f"{c} did not run: it {why}")
    return "; ".join(reasons) if len(reasons) == len(names) else f"no result of {' or '.join(names)} on {part}"
