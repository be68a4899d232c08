"""inventory.nvlink_fabric: each GPU's registration with the NVLink fabric as NVML reports it
(nodeqc.core.fabric). On a rack-scale NVLink system (GB200/GB300 NVL72) every GPU of a compute
tray must be registered (state completed, status success), healthy (no degraded bandwidth, route
recovery or bad configuration in its health mask), and in the same cluster and clique as its tray
siblings: a GPU the fabric has not taken, or took into another partition, cannot reach its peers'
memory over NVLink, and a job spanning the rack fails or crawls.

Where no GPU answers (PCIe cards, drivers before the call, a capture that never asked) the check
gives no result unless the profile says `require_fabric = true`, which makes each such GPU a
failure; where some GPUs answer, one that does not is out of the fabric and fails.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from nodeqc.backends.base import GpuInfo
from nodeqc.core.fabric import health_problems
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.spec.profile import Profile

NAME = "inventory.nvlink_fabric"


def nvlink_fabric(gpus: list[GpuInfo], profile: Profile) -> list[CheckResult]:
    required = bool(profile.get("gpu", "require_fabric", False))
    live = [g for g in gpus if not g.lost]
    answered = [g for g in live if isinstance(g.fabric, dict) and g.fabric.get("state") != "not_supported"]
    if not answered and not required:
        # Not a fabric-attached node (PCIe cards, an HGX whose GPUs join no multi-node fabric, a driver
        # without the call): nothing to judge and nothing left untested, so no row in every report
        # (each GPU's answer, NA, is in the report's inventory).
        return []
    if not live:  # required, and no GPU left to ask: not a silence (2026-11-28 audit)
        return [CheckResult(NAME, "node", Verdict.FAIL, "no GPU answered, so no NVLink fabric registration was "
                            "read (the profile requires one)", code="FABRIC_NOT_REGISTERED")]
    # The tray's own cluster and clique: those most of its registered GPUs report.
    registered = [g for g in answered if _registered(g.fabric)]
    majority = Counter(_where(g.fabric) for g in registered).most_common()
    tie = len(majority) > 1 and majority[0][1] == majority[1][1]
    home = majority[0][0] if majority and not tie else None
    return [_one(g, home, tie, required) for g in live]


def _one(g: GpuInfo, home: tuple[Any, Any] | None, tie: bool, required: bool) -> CheckResult:
    f = g.fabric
    if not isinstance(f, dict) or is_na(f) or f.get("state") == "not_supported":
        # Reached only where the profile requires a fabric or another GPU of the node answered.
        why = "the profile requires one" if required else "other GPUs of this node report one"
        return CheckResult(NAME, g.subject, Verdict.FAIL, f"the GPU reports no NVLink fabric registration: {why}",
                           code="FABRIC_NOT_REGISTERED")
    values = {"state": Value(f.get("state")), "status": Value(f.get("status")),
              "cluster_uuid": Value(f.get("cluster_uuid")), "clique_id": Value(f.get("clique_id")),
              "health_mask": Value(f.get("health_mask"))}
    evidence = {"fabric": dict(f)}
    if not _registered(f):
        return CheckResult(NAME, g.subject, Verdict.FAIL, f"not registered with the NVLink fabric: state "
                           f"{f.get('state')}, status {f.get('status')}", code="FABRIC_NOT_REGISTERED",
                           values=values, evidence=evidence)
    mask = f.get("health_mask")
    problems = health_problems(mask)
    if problems:
        return CheckResult(NAME, g.subject, Verdict.FAIL, "NVLink fabric health: " + "; ".join(problems)
                           + f" (health mask {mask:#x})", code="FABRIC_DEGRADED",
                           values=values, evidence=evidence)
    if mask is not None and (not isinstance(mask, int) or isinstance(mask, bool) or mask < 0):
        # What the node gave is no mask: its health was not read, never "healthy" (2026-11-28 audit: a
        # float mask with the degraded bit set passed).
        return CheckResult(NAME, g.subject, Verdict.WARN, f"registered with the NVLink fabric, but its health mask "
                           f"is no mask ({str(mask)[:40]!r}): its health was not read", code="FABRIC_HEALTH_UNREAD",
                           values=values, evidence=evidence)
    health = ("healthy" if mask else "health not reported (no health mask: the driver has only the first "
              "version of the call)" if mask is None else "health not reported (health mask 0: no field supported)")
    mine = _where(f)
    if tie:
        return CheckResult(NAME, g.subject, Verdict.FAIL, f"the tray's GPUs split evenly between fabric "
                           f"partitions; this one is in cluster {mine[0]}, clique {mine[1]}",
                           code="FABRIC_CLIQUE_MISMATCH", values=values, evidence=evidence)
    if home is not None and mine != home:
        what = "cluster" if mine[0] != home[0] else "clique"
        return CheckResult(NAME, g.subject, Verdict.FAIL, f"in another NVLink {what} than its tray siblings: "
                           f"cluster {mine[0]}, clique {mine[1]} (the others: cluster {home[0]}, clique {home[1]})",
                           code="FABRIC_CLIQUE_MISMATCH", values=values, evidence=evidence)
    return CheckResult(NAME, g.subject, Verdict.PASS, f"registered with the NVLink fabric: cluster {mine[0]}, "
                       f"clique {mine[1]}, {health}", values=values, evidence=evidence)


def _registered(f: dict[str, Any]) -> bool:
    """State completed, status NVML's success: the integer 0 (0.0 or False is no NVML status)."""
    status = f.get("status")
    return f.get("state") == "completed" and type(status) is int and status == 0


def _where(f: dict[str, Any]) -> tuple[str, str]:
    """(cluster, clique) as text: what a node gives may be any JSON (a list crashed the count)."""
    return tuple(v if isinstance(v, str) else str(v)[:64] for v in (f.get("cluster_uuid"), f.get("clique_id")))  # type: ignore[return-value]
