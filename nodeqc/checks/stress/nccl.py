"""stress.nccl and stress.nccl_net: an all-reduce across the node's GPUs, its result checked on every
GPU and its bus bandwidth against the floor; nccl_net with NCCL's peer-to-peer and shared memory off,
so that the bytes go through the NICs."""

from __future__ import annotations

from typing import Any

from nodeqc.backends.base import GpuInfo
from nodeqc.checks.common import Judgement, fold, judge, skip
from nodeqc.checks.diagnosis import Observed, explain_node
from nodeqc.checks.stress.outcomes import GIB, node_expected, nvlinks_promised, outcome_failure
from nodeqc.core.model import CheckResult, Threshold, Value, Verdict
from nodeqc.core.schema import is_number
from nodeqc.spec.profile import Profile
from nodeqc.work.telemetry import GpuTelemetry
from nodeqc.work.workers import Outcome


def nccl_params(profile: Profile, quick: bool) -> dict[str, Any]:
    # Bus bandwidth only saturates with large messages (nccl-tests: 8-16 GB; 1-4 GiB gets close).
    return {"bytes": GIB if quick else 4 * GIB, "iters": 5 if quick else 20}


def judge_nccl(gpus: list[GpuInfo], outcome: Outcome, profile: Profile,
               windows: dict[int, GpuTelemetry] | None = None) -> list[CheckResult]:
    return _judge_allreduce("stress.nccl", gpus, outcome, windows, profile.threshold("gpu", "min_nccl_busbw_gbps"),
                            "NCCL_SLOW", "", {}, profile.threshold("gpu", "min_nccl_nvls_busbw_gbps"),
                            nvlinks_promised(profile, gpus))


def _judge_allreduce(name: str, gpus: list[GpuInfo], outcome: Outcome, windows: dict[int, GpuTelemetry] | None,
                     floor: Threshold | None, slow_code: str, route: str, env: dict[str, str],
                     nvls: Threshold | None = None, nvlinks: dict[int, Any] | None = None) -> list[CheckResult]:
    """An all-reduce across the node's GPUs: every GPU's result exact, bus bandwidth against the floor.
    `route` says how the bytes went (through the NICs for stress.nccl_net), `env` the NCCL settings.
    `nvls`: the floor of NVLink SHARP where the profile sets one (NCCL picks NVLS on its own where the
    NVSwitches offer it, and falls back to its ring in silence where NVLS fails): a rate that clears
    the ring's floor but not this one is NVLS off or failed (NCCL_NVLS_SLOW)."""
    windows = windows or {}
    failure = outcome_failure(name, "node", outcome)
    if failure:
        return [failure]
    r = outcome.result
    if "unavailable" in r:
        return [skip(name, "node", f"not run: {r['unavailable']}", code="NCCL_UNAVAILABLE")]
    wrong = {w["gpu"]: w for w in r["wrong"]}
    # A wrong result on a GPU the node's list does not hold is the node's finding: never lost.
    elsewhere = [Judgement(Verdict.FAIL, "NCCL_WRONG_RESULT", f"all-reduce{route} result wrong on gpu{i}, not among "
                           f"the GPUs judged: {_wrong_share(w)}") for i, w in sorted(wrong.items())
                 if i not in {g.index for g in gpus}]
    unproven = _not_measured(r, gpus)
    if unproven:  # no rate judged and no result called exact; a wrong result stands, whatever else is missing
        said = f"the all-reduce{route} {unproven}: not judged"
        node = fold(name, "node", elsewhere or [Judgement(Verdict.ERROR, "NCCL_NOT_MEASURED", said)], {}, [],
                    evidence={"wrong": r["wrong"]})
        if elsewhere:
            node.message += f"; {said}"
        return [node] + [CheckResult(name, g.subject, Verdict.FAIL, f"all-reduce{route} result wrong on this GPU: "
                                     f"{_wrong_share(wrong[g.index])}", code="NCCL_WRONG_RESULT",
                                     evidence={"wrong": wrong[g.index]}) for g in gpus if g.index in wrong]
    findings = [judge(floor, r["busbw_gbps"], slow_code, f"all-reduce across {r['gpus']} GPUs{route}: bus bandwidth",
                      "GB/s")]
    if nvls is not None and findings[0].verdict is not Verdict.FAIL:
        findings.append(judge(nvls, r["busbw_gbps"], "NCCL_NVLS_SLOW", "against NVLink SHARP's floor (a ring's rate: "
                              "NVLS off or failed?), bus bandwidth", "GB/s"))
    findings += elsewhere
    evidence = {"wrong": r["wrong"], **({"env": env} if env else {})}
    result = fold(name, "node", findings, {"busbw_gbps": Value(r["busbw_gbps"], "GB/s"),
                                           "algbw_gbps": Value(r["algbw_gbps"], "GB/s"),
                                           "message_bytes": Value(r["bytes"], "B")}, [floor, *([nvls] if nvls else [])],
                  key="busbw_gbps",
                  evidence=evidence)
    judged_here = sorted(i for i in wrong if i in {g.index for g in gpus})
    if judged_here:
        result.message += f"; the result was wrong on {', '.join(f'gpu{i}' for i in judged_here)} (judged on each GPU)"
    # Every GPU's own share of the result, checked: a wrong one is that GPU's finding, named as every
    # other GPU finding is (its index, bus id and serial in the report), not the node's.
    exact = [CheckResult(name, g.subject, Verdict.PASS, f"all-reduce{route} result exact on this GPU") if g.index not in wrong
             else CheckResult(name, g.subject, Verdict.FAIL, f"all-reduce{route} result wrong on this GPU: "
                              f"{_wrong_share(wrong[g.index])}", code="NCCL_WRONG_RESULT", evidence={"wrong": wrong[g.index]})
             for g in gpus]
    # NVLinks down explain an all-reduce over them, not one through the NICs (nvlinks None: none counted).
    observed = [Observed.of(g, windows.get(g.index), (nvlinks or {}).get(g.index, 0)) for g in gpus]
    return [explain_node(result, observed, node_expected(gpus), f"the all-reduce{route}")] + exact


def _not_measured(r: dict[str, Any], gpus: list[GpuInfo]) -> str | None:
    """What the all-reduce's result does not prove: every one of the node's GPUs in the group, each
    one's share of the result checked (`checked`, where the worker records it), timed iterations, a
    bandwidth that is a number. None where it proves all of it."""
    rate, iters, n = r.get("busbw_gbps"), r.get("iters", 1), r.get("gpus")  # no iters: a result from before
    if not isinstance(n, int) or n < 1 or (gpus and n != len(gpus)):  # no list given: the node's figure alone
        return f"ran across {n!r} GPUs of the {len(gpus)} judged"
    if not isinstance(iters, int) or iters < 1 or not is_number(rate) or rate < 0:
        return f"timed {iters!r} iterations at {rate!r} GB/s"
    if "checked" in r:
        unchecked = [g.subject for g in gpus if g.index not in r["checked"]]
        if unchecked:
            return f"checked no result on {', '.join(unchecked)}"
    return None


def _wrong_share(w: dict[str, Any]) -> str:
    return f"{w['count']} element(s), first at {w['index']} expected {w['expected']:g}, got {w['actual']:g} (bits {w['xor']} flipped)"


# NCCL's own switches: peer-to-peer (NVLink, PCIe) and shared memory off, so the all-reduce between
# the node's GPUs goes through the network plugin and the NICs, a peer-less test of every NIC's
# GPUDirect path (Azure's HPC health checks and Meta's gcm run NCCL this way; issue 15).
NCCL_THROUGH_NICS = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}


def nccl_net_params(profile: Profile, quick: bool) -> dict[str, Any]:
    return {**nccl_params(profile, quick), "env": NCCL_THROUGH_NICS}


def judge_nccl_net(gpus: list[GpuInfo], outcome: Outcome, profile: Profile,
                   windows: dict[int, GpuTelemetry] | None = None) -> list[CheckResult]:
    return _judge_allreduce("stress.nccl_net", gpus, outcome, windows,
                            profile.threshold("nic", "min_nccl_loopback_busbw_gbps"), "NCCL_NET_SLOW",
                            " through the NICs (P2P and SHM off)", NCCL_THROUGH_NICS)
