"""Host: CPU and memory against the profile's floors; the fabric manager (NVSwitch nodes) and the
GPUDirect RDMA module where the profile asks for them."""

from __future__ import annotations

from nodeqc.backends.base import HostInfo
from nodeqc.checks.common import Judgement, fold, judge, skip
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.na import is_na
from nodeqc.spec.profile import Profile

GIB = 1024 ** 3


def cpu(host: HostInfo, profile: Profile) -> CheckResult:
    name = "host.cpu"
    if is_na(host.cores):
        return skip(name, "node", "CPU core count not available")
    limit = profile.threshold("host", "min_cpu_cores")
    values = {"cores": Value(host.cores), "threads": Value(host.threads), "sockets": Value(host.sockets),
              "model": Value(host.cpu_model)}
    return fold(name, "node", [judge(limit, host.cores, "HOST_CPU", f"{host.cpu_model}:", "cores")],
                values, [limit], key="cores")


def memory(host: HostInfo, profile: Profile) -> CheckResult:
    name = "host.memory"
    if is_na(host.memory_bytes):
        return skip(name, "node", "memory size not available")
    gib = round(host.memory_bytes / GIB, 1)
    limit = profile.threshold("host", "min_memory_gib")
    values = {"memory": Value(gib, "GiB"), "numa_nodes": Value(host.numa_nodes)}
    return fold(name, "node", [judge(limit, gib, "HOST_MEMORY", "memory", "GiB")], values, [limit], key="memory")


def fabric_manager(host: HostInfo) -> CheckResult:
    """GPUs on NVSwitch cannot reach each other until the fabric manager has set the switches up."""
    name = "host.fabric_manager"
    if is_na(host.fabric_manager):
        return skip(name, "node", "the process list could not be read, so the fabric manager was not checked")
    if host.fabric_manager:
        return CheckResult(name, "node", Verdict.PASS, "nv-fabricmanager is running",
                           values={"running": Value(True)}, key="running")
    return CheckResult(name, "node", Verdict.FAIL, "the NVIDIA fabric manager (nv-fabricmanager) is not running; "
                       "the profile says this is an NVSwitch node", code="FABRIC_MANAGER",
                       values={"running": Value(False)}, key="running")


def gpudirect_rdma(host: HostInfo) -> CheckResult:
    name = "host.gpudirect_rdma"
    if is_na(host.peer_memory_module):
        return skip(name, "node", "/proc/modules could not be read, so the GPUDirect RDMA module was not checked")
    if host.peer_memory_module:
        return CheckResult(name, "node", Verdict.PASS, f"{host.peer_memory_module} is loaded",
                           values={"module": Value(host.peer_memory_module)}, key="module")
    return CheckResult(name, "node", Verdict.FAIL, "no GPUDirect RDMA module loaded (nvidia_peermem or nv_peer_mem); "
                       "the profile asks for GPUDirect RDMA", code="PEERMEM_MISSING",
                       values={"module": Value("none")}, key="module")


def imex_member(listed: list[str] | None, own: list[str] | None) -> bool | None:
    """Whether the nodes config names this node by one of its addresses or host names (host names
    compared without case); None where either is unknown. A node missing from its own domain's list is
    refused by its peers' daemons: the count of nodes alone passes a list with another address in
    its place."""
    if not listed or not own:
        return None
    mine = {str(n).lower() for n in own}
    return any(str(n).strip().lower() in mine for n in listed)


def imex(host: HostInfo, nodes: int) -> CheckResult:
    """A node of a multi-node NVLink domain (GB200/GB300 NVL72) shares GPU memory across the domain
    through IMEX: its daemon must run, its channels must exist, and its nodes config must list every
    node of the domain (`[host] imex_nodes`)."""
    name = "host.imex"
    state = host.imex
    if is_na(state) or not isinstance(state, dict):
        return skip(name, "node", "the process list could not be read, so IMEX was not checked")
    listed = state.get("nodes")
    values = {"running": Value(state.get("running")), "channels": Value(state.get("channels")),
              "nodes_listed": Value(None if listed is None else len(set(listed))), "nodes_expected": Value(nodes)}
    findings = []
    if not state.get("running"):
        findings.append(Judgement(Verdict.FAIL, "IMEX_NOT_RUNNING", "the IMEX daemon (nvidia-imex) is not running"))
    if not state.get("channels"):
        findings.append(Judgement(Verdict.FAIL, "IMEX_NO_CHANNELS", "no IMEX channel under /dev/nvidia-caps-imex-channels"))
    if listed is None:
        findings.append(Judgement(Verdict.FAIL, "IMEX_NODES_MISSING", "no IMEX nodes config (/etc/nvidia-imex/nodes_config.cfg)"))
    elif len(set(listed)) < nodes:
        findings.append(Judgement(Verdict.FAIL, "IMEX_NODES_MISSING", f"the IMEX nodes config lists {len(set(listed))} "
                                  f"node(s) of the domain's {nodes}"))
    own = state.get("own")
    member = imex_member(listed, own)
    values["self_listed"] = Value(member)
    if member is False:
        shown = ", ".join(own[:4]) + (f" and {len(own) - 4} more" if len(own) > 4 else "")
        findings.append(Judgement(Verdict.FAIL, "IMEX_SELF_MISSING", f"this node ({shown}) is not among the "
                                  f"{len(set(listed))} node(s) the IMEX nodes config lists"))
    if not findings:
        said = "" if member else "; whether it lists this node was not checked (its addresses were not read)"
        findings.append(Judgement(Verdict.PASS, None, f"nvidia-imex is running with {state['channels']} channel(s); its "
                                  f"nodes config lists the domain's {len(set(listed))} nodes{said}"))
    return fold(name, "node", findings, values, [], evidence={"imex": {**state, "nodes": (listed or [])[:64]}})


def host_results(host: HostInfo, profile: Profile) -> list[CheckResult]:
    results = [cpu(host, profile), memory(host, profile)]
    if profile.get("host", "fabric_manager"):
        results.append(fabric_manager(host))
    if profile.get("host", "gpudirect_rdma"):
        results.append(gpudirect_rdma(host))
    if profile.get("host", "imex_nodes"):
        results.append(imex(host, int(profile.get("host", "imex_nodes"))))
    return results
