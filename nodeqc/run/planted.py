"""What became of each fault planted in a simulated node (--inject), as the fabric says of its own
(nodeqc.fabric.simulated.SimCluster.outcomes): `found` by a check made for it, `untested` (no check
that could find it judged its part: why), `within the floors` (its checks judged its part and passed
it), or `condition` (a healthy node's way, no defect: nothing should fail for it).

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

# A fault's checks: those that find it on its own part (gpuN; a NIC's nicN or interface name; the host's
# "node"), and with "@node" those that find it on the node as a whole (the all-reduce across every GPU,
# the PSUs' sensors). A family's name alone ("stress") is any of its checks. Held by
# tests/test_planted.py to the checks that found each fault in a simulated run of its own
# (2026-11-29: every fault of tests/test_faults.py's VALID, one run each, quick and full).
FINDS: dict[str, dict[str, tuple[str, ...]]] = {
    "gpu": {
        "missing": ("inventory.gpu_present", "inventory.gpu_count@node"),
        "pcie_width": ("health.pcie_link", "stress.pcie_bandwidth"),
        "pcie_gen": ("health.pcie_link", "stress.pcie_bandwidth"),
        "pcie_replay": ("health.pcie_replay",),
        "temp": ("health.temperature", "health.throttle"),
        "throttle": ("health.throttle", "stress.burn"),
        "ecc_dbe": ("health.ecc",), "ecc_sbe": ("health.ecc",),
        "sram_dbe": ("health.sram_ecc",), "sram_sbe": ("health.sram_ecc",),
        "xid": ("health.xid", "host.kernel_log"),
        "row_remap_pending": ("health.row_remap",), "row_remap_failed": ("health.row_remap",),
        "lost": ("health.gpu_lost", "stress"),
        "slow": ("stress.burn", "burnin.stability"),
        "hbm_bw": ("stress.hbm_bandwidth",),
        "bitflip": ("stress.burn", "burnin.stability"),
        "badmem": ("stress.memtest",),
        "retention": ("stress.memtest",),  # its bit fade: full runs only (NEEDS_FULL)
        "bitflip_random": ("stress.burn", "burnin.stability"),
        "hbm_corrupt": ("stress.hbm_bandwidth",),
        "pcie_corrupt": ("stress.pcie_bandwidth",),
        "p2p_corrupt": ("stress.p2p",),
        "nccl_corrupt": ("stress.nccl", "stress.nccl_net"),
        "nvlink_down": ("health.nvlink", "stress.p2p", "stress.nccl@node"),
        "fabric_unregistered": ("inventory.nvlink_fabric",), "fabric_degraded": ("inventory.nvlink_fabric",),
        "fabric_clique": ("inventory.nvlink_fabric",),
        "p2p_bw": ("stress.p2p", "stress.nccl@node"),
        "nvls_down": ("stress.nccl@node",),
        "hang": ("stress", "burnin.stability"),
        "power": ("stress.burn", "stress.power"),
        "transient_brake": ("stress.power_pulse", "health.throttle"),
        "no_pulse": ("stress.power_pulse",),
        "power_limit": ("stress.burn", "stress.power", "inventory.homogeneity@node"),
        "cotenant": ("stress.gpu_free",),
        "cotenant_late": ("stress",),
        "vbios": ("baseline.firmware", "inventory.homogeneity@node"),
        "numa": ("baseline.topology",),
        "acs": ("baseline.topology",),
        "aer": ("host.aer",),
    },
    "nic": {
        "down": ("nic.link",), "speed": ("nic.link",), "pcie_width": ("nic.pcie",),
        "fw": ("baseline.firmware",), "numa": ("baseline.topology",),
        "optics_temp": ("host.optics",), "link_ber": ("host.optics",),
    },
    "host": {
        "edac_ce": ("host.edac",), "edac_ue": ("host.edac",),
        "mce": ("host.kernel_log",), "nvme_reset": ("host.kernel_log",),
        "iommu": ("baseline.settings",), "bios": ("baseline.firmware",),
        "cpu_wrong": ("host.cpu_stress",),
        "psu_fault": ("stress.power@node", "stress.power_pulse@node"),
        "psu_undervolt": ("stress.power@node", "stress.power_pulse@node"),
        "imex_down": ("host.imex",), "imex_no_channels": ("host.imex",), "imex_nodes": ("host.imex",),
        "imex_not_listed": ("host.imex",),
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


def outcomes(faults: Sequence[Fault], results: Sequence[CheckResult], *, quick: bool, selection: Selection,
             nic_names: Sequence[str] = (), nic_tested: Callable[[str], bool] | None = None) -> list[dict[str, str]]:
    """Each planted fault's outcome, in the fabric's words: {fault, outcome, why}. `selection`: the run's
    --only/--skip/--gpu; `nic_names`: the simulated node's NICs in --inject's order (nic0 first);
    `nic_tested(name)`: whether the profile tests that NIC."""
    return [_outcome(f, results, quick, selection, nic_names, nic_tested) for f in faults]


def _subjects(f: Fault, nic_names: Sequence[str]) -> tuple[str, ...]:
    if f.target == "nic":  # nic.* name it nicN, host.optics and the baseline by its interface
        return (f.subject, nic_names[f.index]) if f.index < len(nic_names) else (f.subject,)
    return ("node",) if f.target == "host" else (f.subject,)


def _named(rs: Iterable[CheckResult]) -> str:
    seen = list(dict.fromkeys(f"{r.name} {r.verdict.name} on {r.subject}" + (f" [{r.code}]" if r.code else "") for r in rs))
    return "; ".join(seen[:3]) + (f" and {len(seen) - 3} more" if len(seen) > 3 else "")


def _outcome(f: Fault, results: Sequence[CheckResult], quick: bool, selection: Selection, nic_names: Sequence[str],
             nic_tested: Callable[[str], bool] | None) -> dict[str, str]:
    text = str(f)
    if (condition := CONDITIONS.get((f.target, f.name)) or CONDITIONS.get((f.target, f.name, f.value))) is not None:
        return {"fault": text, "outcome": "condition", "why": f"not a defect: {condition}; nothing should fail for it"}
    subjects = _subjects(f, nic_names)
    checks = FINDS[f.target][f.name]
    own = [c for c in checks if not c.endswith("@node")]
    whole = [c.removesuffix("@node") for c in checks if c.endswith("@node")]
    mine = [r for r in results if r.subject in subjects and any(_matches(r, c) for c in own)] + [
        r for r in results if r.subject == "node" and any(_matches(r, c) for c in whole)]
    if bad := [r for r in mine if r.verdict in BAD]:
        return {"fault": text, "outcome": "found", "why": _named(sorted(bad, key=lambda r: -r.verdict.severity))}
    judged = [r for r in mine if r.verdict is Verdict.PASS]
    if (f.target, f.name) in NEEDS_FULL and quick:
        return {"fault": text, "outcome": "untested", "why": NEEDS_FULL[f.target, f.name]}
    if judged:
        return {"fault": text, "outcome": "within the floors",
                "why": f"{_named(judged)}: milder than the floors, or missed"}
    return {"fault": text, "outcome": "untested", "why": _untested(f, subjects, checks, mine, selection, nic_tested)}


def _untested(f: Fault, subjects: tuple[str, ...], checks: tuple[str, ...], mine: list[CheckResult],
              selection: Selection, nic_tested: Callable[[str], bool] | None) -> str:
    part = subjects[0] + (f" ({subjects[1]})" if len(subjects) > 1 else "")
    if f.target == "gpu" and not selection.covers(f.index):
        return f"{part} is not among the GPUs this run tests (--gpu)"
    if f.target == "nic" and len(subjects) > 1 and nic_tested is not None and not nic_tested(subjects[1]):
        return f"{part} is not among the NICs the profile tests ([nic] match or drivers)"
    if skipped := [r for r in mine if r.verdict is Verdict.SKIP]:
        return f"{_named(skipped)}: {skipped[0].message}"
    names = [c.removesuffix("@node") for c in checks]
    left_out = [c for c in names if "." in c and not selection.includes(c)]
    if left_out and len(left_out) == len(names):
        return f"{', '.join(left_out)} left out of this run (--only/--skip)"
    reasons = list(dict.fromkeys(f"{c} did not run: it {why}" for c in names for key, why in WHEN_RUN.items()
                                 if c == key or c.startswith(key + ".")))
    return "; ".join(reasons) if len(reasons) == len(names) else f"no result of {' or '.join(names)} on {part}"
