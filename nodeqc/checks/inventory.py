"""Inventory: what the node is, against what the profile says it must be."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nodeqc.backends.base import GpuInfo, PciDevice
from nodeqc.checks.common import Judgement, fold, judge
from nodeqc.checks.fabric_state import nvlink_fabric
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.core.skus import identify
from nodeqc.core.text import is_digits
from nodeqc.spec.profile import Profile, version_tuple

GIB = 1024 ** 3


def nvml_result(error: str | None, driver: str, count: int) -> CheckResult:
    if error:
        return CheckResult("inventory.nvml", "node", Verdict.FAIL, error, code="NVML_UNAVAILABLE")
    return CheckResult("inventory.nvml", "node", Verdict.PASS,
                       f"NVML answers: driver {driver}, {count} GPU(s)",
                       values={"driver": Value(driver), "gpus": Value(count)}, key="gpus")


def gpu_count(gpus: list[GpuInfo], profile: Profile) -> CheckResult:
    expected = profile.get("gpu", "count")
    found = len(gpus)
    # Listed is not answering: one the driver lists but lost is said here, and failed by gpu_model.
    lost = sum(1 for g in gpus if g.lost)
    lost_said = f" ({lost} of them not answering)" if lost else ""
    values = {"gpus": Value(found), "expected": Value(expected if expected is not None else "any")}
    if expected is None:
        if found == 0:
            return CheckResult("inventory.gpu_count", "node", Verdict.FAIL, "no GPU answered NVML (inventory.gpu_present "
                               "says which the PCI bus holds)",
                               code="GPU_COUNT", values=values, key="gpus")
        return CheckResult("inventory.gpu_count", "node", Verdict.PASS,
                           f"{found} GPU(s); the profile accepts any number{lost_said}", values=values, key="gpus")
    if found != expected:
        return CheckResult("inventory.gpu_count", "node", Verdict.FAIL,
                           f"{found} GPU(s) found, the profile expects {expected}",
                           code="GPU_COUNT", values=values, key="gpus")
    return CheckResult("inventory.gpu_count", "node", Verdict.PASS, f"{found} GPU(s) as expected{lost_said}",
                       values=values, key="gpus")


def gpu_present(gpus: list[GpuInfo], on_pci: list[PciDevice]) -> list[CheckResult]:
    """Each NVIDIA GPU on the PCI bus must be one the driver brought up."""
    known = {g.bus_id for g in gpus}
    if not on_pci and gpus:
        # The driver lists GPUs the bus showed none of: the bus was not read (no /sys/bus/pci), so a
        # GPU the driver did not bring up was not looked for. Said, never an empty pass (2026-11-28 audit).
        return [CheckResult("inventory.gpu_present", "node", Verdict.SKIP, "the PCI bus was not read (it lists none "
                            f"of the {len(gpus)} GPU(s) the driver has): GPUs the driver did not bring up were not "
                            "looked for")]
    results = []
    ordered = sorted(on_pci, key=lambda p: p.bus_id)
    for slot, dev in enumerate(ordered):
        values = {"bus_id": Value(dev.bus_id)}
        # Only where GPUs follow it on the bus does nvidia-smi number them one lower than their slot.
        after = " (nvidia-smi numbers the GPUs after it one lower)" if slot < len(ordered) - 1 else ""
        if dev.bus_id in known:
            results.append(CheckResult("inventory.gpu_present", f"gpu{slot}", Verdict.PASS,
                                       f"GPU at {dev.bus_id} is up", values=values))
        else:
            results.append(CheckResult(
                "inventory.gpu_present", f"gpu{slot}", Verdict.FAIL,
                f"GPU at {dev.bus_id} is on the PCI bus but the driver did not bring it up{after}",
                code="GPU_MISSING", values=values))
    return results


def gpu_model(gpu: GpuInfo, profile: Profile) -> CheckResult:
    patterns = profile.get("gpu", "models", ["*"])
    sku = identify(gpu)
    values = {"model": Value(gpu.name), "sku": Value(sku.key if sku else "unknown")}
    want_cc = profile.get("gpu", "compute_capability")
    if profile.accepts_model(gpu.name) and want_cc is not None and not is_na(gpu.compute_capability) \
            and (version_tuple(str(gpu.compute_capability)) + (0,))[:2] != (version_tuple(want_cc) + (0,))[:2]:
        # The name matched but the GPU is not the architecture the profile was written for: a model
        # pattern wider than meant ("NVIDIA A1*" takes an A100, 8.0, and an A10, 8.6).
        return CheckResult("inventory.gpu_model", gpu.subject, Verdict.FAIL,
                           f"{gpu.name} reports compute capability {gpu.compute_capability}; profile "
                           f"{profile.name} is for compute capability {want_cc}", code="GPU_MODEL", values=values,
                           evidence={"accepted": patterns, "compute_capability": want_cc}, key="model")
    if profile.accepts_model(gpu.name):
        what = f"{sku.name}, PCI device 0x{gpu.pci_device_id:04x}" if sku and isinstance(gpu.pci_device_id, int) \
            else sku.name if sku else "a SKU nodeqc has no figures for"
        return CheckResult("inventory.gpu_model", gpu.subject, Verdict.PASS, f"{gpu.name} ({what})", values=values,
                           evidence={"accepted": patterns}, key="model")
    return CheckResult("inventory.gpu_model", gpu.subject, Verdict.FAIL,
                       f"{gpu.name} is not a model profile {profile.name} accepts ({', '.join(patterns)})",
                       code="GPU_MODEL", values=values, evidence={"accepted": patterns}, key="model")


# Codes whose floor or expectation is the profile's model's (its rates, link, memory size, NVLink
# count, clocks): on a GPU the profile does not accept they would hold it to another model's figures
# ("expected Gen5" of an A100, "compute defect" of a part at 1.00 of its own rate). Checks of the
# GPU's own health (errors, throttling, wrong results, its own limits) and its siblings' median
# (*_OUTLIER) stay judged.
MODEL_FLOOR_CODES = frozenset({"BURN_SLOW", "HBM_SLOW", "PCIE_BW_LOW", "P2P_SLOW", "P2P_PAIR_SLOW", "NCCL_SLOW",
                               "NCCL_NET_SLOW", "PCIE_GEN", "PCIE_WIDTH", "GPU_MEMORY_SIZE", "NVLINK_DOWN", "CLOCKS_LOW"})


def not_judged_for_model(result: CheckResult, models: list[str], profile_name: str) -> CheckResult:
    """A WARN or FAIL that held a GPU of another model (`models`: those the profile does not accept)
    to the profile's model's floors, made a SKIP (MODEL_NOT_JUDGED) that reports its figures; any
    other result as it is. The diagnosis' code counts as the result's (evidence measure_code)."""
    if result.verdict not in (Verdict.WARN, Verdict.FAIL):
        return result
    diagnosis = result.evidence.get("diagnosis")
    measure = diagnosis.get("measure_code") if isinstance(diagnosis, dict) else None
    if result.code not in MODEL_FLOOR_CODES and measure not in MODEL_FLOOR_CODES:
        return result
    figures = ", ".join(f"{k} {v}" for k, v in result.values.items())
    evidence = {k: v for k, v in result.evidence.items() if k != "diagnosis"}
    evidence["not_judged"] = {"verdict": result.verdict.value, "code": result.code, "models": models}
    return CheckResult(result.name, result.subject, Verdict.SKIP,
                       f"not judged: {' and '.join(models)} is not a model profile {profile_name} accepts "
                       f"(inventory.gpu_model), so the figures are reported, not held to that model's floors"
                       + (f": {figures}" if figures else ""), code="MODEL_NOT_JUDGED", values=result.values,
                       evidence=evidence, key=result.key)


def gpu_memory(gpu: GpuInfo, profile: Profile) -> CheckResult:
    t = profile.threshold("gpu", "min_memory_gib")
    gib = gpu.memory_total_bytes / GIB if not is_na(gpu.memory_total_bytes) else gpu.memory_total_bytes
    values = {"memory": Value(None if is_na(gib) else round(gib, 2), "GiB")}
    if is_na(gib):
        return CheckResult("inventory.gpu_memory", gpu.subject, Verdict.SKIP,
                           "memory size not available from the driver", values=values)
    return fold("inventory.gpu_memory", gpu.subject,
                [judge(t, round(gib, 2), "GPU_MEMORY_SIZE", "memory", "GiB")], values, [t], key="memory")


def ecc_mode(gpu: GpuInfo, profile: Profile) -> CheckResult:
    required = profile.get("gpu", "require_ecc", False)
    values = {"ecc_enabled": Value(gpu.ecc_enabled), "ecc_pending": Value(gpu.ecc_pending)}
    name = "inventory.ecc_mode"
    if is_na(gpu.ecc_enabled):
        verdict = Verdict.FAIL if required else Verdict.SKIP
        return CheckResult(name, gpu.subject, verdict, "this GPU reports no ECC mode",
                           code="ECC_DISABLED" if required else None, values=values)
    findings = []
    if not gpu.ecc_enabled:
        findings.append(Judgement(Verdict.FAIL if required else Verdict.WARN, "ECC_DISABLED", "ECC is disabled"))
    if not is_na(gpu.ecc_pending) and gpu.ecc_pending != gpu.ecc_enabled:
        state = "on" if gpu.ecc_pending else "off"
        findings.append(Judgement(Verdict.WARN, "ECC_PENDING_CHANGE", f"ECC turns {state} at the next reboot"))
    if not findings:
        findings.append(Judgement(Verdict.PASS, None, "ECC is enabled"))
    return fold(name, gpu.subject, findings, values, [])


def persistence(gpu: GpuInfo, profile: Profile) -> CheckResult:
    required = profile.get("gpu", "require_persistence", False)
    values = {"persistence": Value(gpu.persistence)}
    name = "inventory.persistence"
    if is_na(gpu.persistence):
        return CheckResult(name, gpu.subject, Verdict.SKIP, "persistence mode not available", values=values)
    if gpu.persistence:
        return CheckResult(name, gpu.subject, Verdict.PASS, "persistence mode is on", values=values)
    return CheckResult(name, gpu.subject, Verdict.FAIL if required else Verdict.WARN,
                       "persistence mode is off", code="PERSISTENCE_OFF", values=values)


def version_at_least(name: str, what: str, have: str, need: str | None, code: str) -> CheckResult:
    values = {"version": Value(have), "required": Value(need or "any")}
    if need is None:
        if not version_tuple(have):  # "driver N/A" was a pass of nothing read (2026-11-28 audit)
            return CheckResult(name, "node", Verdict.SKIP, f"{what} version not readable ({have or 'empty'}); "
                               "the profile asks for none", values=values, key="version")
        return CheckResult(name, "node", Verdict.PASS, f"{what} {have}", values=values, key="version")
    if not version_tuple(have):
        return CheckResult(name, "node", Verdict.FAIL, f"{what} version not available ({have})",
                           code=code, values=values, key="version")
    if version_tuple(have) < version_tuple(need):
        return CheckResult(name, "node", Verdict.FAIL, f"{what} {have} is older than the required {need}",
                           code=code, values=values, key="version")
    return CheckResult(name, "node", Verdict.PASS, f"{what} {have} (at least {need})", values=values,
                       key="version")


def driver(version: str, profile: Profile) -> CheckResult:
    return version_at_least("inventory.driver", "driver", version, profile.get("gpu", "min_driver"),
                            "DRIVER_VERSION")


def cuda(version: str, profile: Profile) -> CheckResult:
    return version_at_least("inventory.cuda", "CUDA", version, profile.get("gpu", "min_cuda"), "CUDA_VERSION")


# What the GPUs of one node must share: (field, GpuInfo attribute, as said).
_SAME = (("model", "name", "model"), ("memory", "memory_total_bytes", "memory"), ("vbios", "vbios", "VBIOS"),
         ("power_limit_w", "power_limit_w", "power limit"))


def homogeneity(gpus: list[GpuInfo]) -> CheckResult:
    """The GPUs of one node must match: model and memory (fail), VBIOS and power limit (warn)."""
    live = [g for g in gpus if not g.lost]
    if not live:
        return CheckResult("inventory.homogeneity", "node", Verdict.SKIP, "no GPU answered: nothing compared",
                           values={"gpus": Value(0)})
    spread: dict[str, dict[str, list[str]]] = {}
    unread: dict[str, list[str]] = {}
    for field, attr, _ in _SAME:
        groups: dict[str, list[str]] = {}
        if all(is_na(getattr(g, attr)) for g in live):
            # Read on none: not compared, never "match" ("N/A" matched "N/A": 2026-11-28 audit). Read on
            # some, a GPU that cannot say what its siblings do differs from them, as before.
            unread[field] = [g.subject for g in live]
            continue
        for g in live:
            groups.setdefault(str(getattr(g, attr)), []).append(g.subject)
        if len(groups) > 1:
            spread[field] = groups
    findings = []
    lowered = _lowered_limits(live)
    if lowered:
        # A limit someone set below the GPU's own default is a setting to restore, not a part to
        # replace: the advice names each GPU and its default (codes.advice).
        findings.append(Judgement(Verdict.WARN, "POWER_LIMIT_LOWERED", "power limit below the GPU's default: " + "; ".join(
            f"gpu{i} {e['power_limit_w']:g} W (default {e['default_power_limit_w']:g} W)" for i, e in lowered.items())))
    for field, verdict in (("model", Verdict.FAIL), ("memory", Verdict.FAIL), ("vbios", Verdict.WARN),
                           ("power_limit_w", Verdict.WARN)):
        if field == "power_limit_w" and lowered:
            continue  # said above, with what to do
        if field in spread:
            groups = spread[field]
            common = Counter({k: len(v) for k, v in groups.items()}).most_common(1)[0][0]
            shown = _memory_shown(groups) if field == "memory" else {k: k for k in groups}
            odd = [f"{', '.join(v)}: {shown[k]}" for k, v in groups.items() if k != common]
            findings.append(Judgement(verdict, "GPU_MIXED",
                                    f"{field} differs from the others' {shown[common]} ({'; '.join(odd)})"))
    labels = {field: label for field, _, label in _SAME}
    not_read = "; ".join(f"{labels[field]} not read on {', '.join(subjects)}" for field, subjects in unread.items())
    if not findings:
        compared = [label for field, _, label in _SAME if len(unread.get(field, [])) < len(live)]
        said = ("one GPU: no other to differ from" if len(live) == 1 else
                f"{len(live)} GPU(s) match in {', '.join(compared[:-1]) + ' and ' if len(compared) > 1 else ''}"
                f"{compared[-1]}" if compared else "nothing compared")
        findings.append(Judgement(Verdict.PASS if compared else Verdict.SKIP, None,
                                  said + (f" ({not_read})" if not_read and len(live) > 1 else "")))
    evidence: dict[str, Any] = dict(spread)
    if lowered:
        evidence["per_gpu"] = lowered
    return fold("inventory.homogeneity", "node", findings, {"gpus": Value(len(live))}, [], evidence=evidence)


def _lowered_limits(gpus: list[GpuInfo]) -> dict[str, dict[str, float]]:
    """The GPUs whose enforced power limit is below their own default (NVML's
    nvmlDeviceGetPowerManagementDefaultLimit), with both figures; GPUs that do not say are left out."""
    out = {}
    for g in gpus:
        limit, default = g.power_limit_w, g.power_default_limit_w
        if is_na(limit) or is_na(default) or not isinstance(limit, (int, float)) or not isinstance(default, (int, float)):
            continue
        if limit < default - 1:  # NVML reports whole watts (milliwatts rounded): 1 W of slack
            out[str(g.index)] = {"power_limit_w": float(limit), "default_power_limit_w": float(default)}
    return out


def _memory_shown(groups: dict[str, list[str]]) -> dict[str, str]:
    """Memory sizes (bytes, as grouped) as a technician reads them, in GiB to two decimals; in bytes
    where two sizes would read the same (sizes a few MiB apart: one GPU lost memory to retirement)."""
    def gib(key: str) -> str:
        return f"{round(int(key) / GIB, 2):g} GiB" if is_digits(key) else key

    shown = {k: gib(k) for k in groups}
    if len(set(shown.values())) < len(shown):
        return {k: f"{v} ({k} bytes)" if is_digits(k) else v for k, v in shown.items()}
    return shown


def inventory_results(gpus: list[GpuInfo], on_pci: list[PciDevice], driver_version: str,
                      cuda_version: str, profile: Profile) -> list[CheckResult]:
    """Every inventory verdict for a node whose driver answered."""
    results = [gpu_count(gpus, profile), *gpu_present(gpus, on_pci),
               driver(driver_version, profile), cuda(cuda_version, profile), homogeneity(gpus)]
    for g in gpus:
        if g.lost:
            results.append(CheckResult("inventory.gpu_model", g.subject, Verdict.FAIL,
                                       "the driver lists this GPU but it does not answer", code="GPU_LOST"))
            continue
        results += [gpu_model(g, profile), gpu_memory(g, profile), ecc_mode(g, profile), persistence(g, profile)]
    return results + nvlink_fabric(gpus, profile)


def describe_gpus(gpus: list[GpuInfo]) -> list[dict[str, Any]]:
    return [{"subject": g.subject, **g.to_dict(), "sku": (s.key if (s := identify(g)) else None)} for g in gpus]

