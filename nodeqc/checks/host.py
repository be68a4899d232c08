"""Host: CPU and memory against the profile's floors."""

from __future__ import annotations

from nodeqc.backends.base import HostInfo
from nodeqc.checks.common import fold, judge, skip
from nodeqc.model import CheckResult, Value
from nodeqc.na import is_na
from nodeqc.profile import Profile

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


def host_results(host: HostInfo, profile: Profile) -> list[CheckResult]:
    return [cpu(host, profile), memory(host, profile)]
