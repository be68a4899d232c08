"""Host services a GPU node needs: the NVSwitch fabric manager and the GPUDirect RDMA peer-memory
module; read from /proc (a prepared tree here) and from the simulated node's scenario, judged only
where the profile asks."""

from pathlib import Path

import pytest

from nodeqc.backends.base import HostInfo
from nodeqc.backends.host import LinuxHost
from nodeqc.backends.sim.node import SimNode
from nodeqc.backends.sim.scenario import load_scenario
from nodeqc.checks import host as host_checks
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA
from nodeqc.spec.profile import Profile, load_profile

PASS, FAIL, SKIP = Verdict.PASS, Verdict.FAIL, Verdict.SKIP


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def profile(host=None) -> Profile:
    return Profile("t", Path("t.toml"), {"host": host or {}})


def test_fabric_manager_and_peer_memory_from_a_prepared_tree(tmp_path):
    _write(tmp_path, "proc/1/comm", "systemd")
    _write(tmp_path, "proc/modules", "mlx5_ib 434176 0 - Live 0x0\nib_core 434176 2 mlx5_ib, Live 0x0")
    info = LinuxHost(tmp_path).info()
    assert (info.fabric_manager, info.peer_memory_module) == (False, "")
    _write(tmp_path, "proc/2345/comm", "nv-fabricmanage")  # the kernel keeps 15 characters of the name
    _write(tmp_path, "proc/modules", "nvidia_peermem 16384 0 - Live 0x0\nnvidia 56000000 1 nvidia_peermem, Live 0x0")
    info = LinuxHost(tmp_path).info()
    assert (info.fabric_manager, info.peer_memory_module) == (True, "nvidia_peermem")
    assert LinuxHost(tmp_path / "empty").info().peer_memory_module is NA


@pytest.mark.parametrize("running, verdict, code", [(True, PASS, None), (False, FAIL, "FABRIC_MANAGER"), (NA, SKIP, None)])
def test_fabric_manager(running, verdict, code):
    r = host_checks.fabric_manager(HostInfo("h", fabric_manager=running))
    assert (r.verdict, r.code) == (verdict, code)


@pytest.mark.parametrize("module, verdict, code", [("nvidia_peermem", PASS, None), ("nv_peer_mem", PASS, None),
                                                   ("", FAIL, "PEERMEM_MISSING"), (NA, SKIP, None)])
def test_gpudirect_rdma_module(module, verdict, code):
    r = host_checks.gpudirect_rdma(HostInfo("h", peer_memory_module=module))
    assert (r.verdict, r.code) == (verdict, code)


def test_host_services_are_checked_only_where_the_profile_asks():
    host = HostInfo("h", cores=8, memory_bytes=64 * 1024 ** 3, fabric_manager=False, peer_memory_module="")
    assert {r.name for r in host_checks.host_results(host, profile())} == {"host.cpu", "host.memory"}
    asked = host_checks.host_results(host, profile(host={"fabric_manager": True, "gpudirect_rdma": True}))
    assert {(r.name, r.code) for r in asked if r.verdict is FAIL} == {("host.fabric_manager", "FABRIC_MANAGER"),
                                                                       ("host.gpudirect_rdma", "PEERMEM_MISSING")}


def test_host_services_follow_the_scenario(tmp_path):
    text = load_scenario("dgx-a100").path.read_text().replace("fabric_manager = true", "fabric_manager = false")
    scenario = tmp_path / "no-fm.toml"
    scenario.write_text(text.replace("gpudirect_rdma = true", "gpudirect_rdma = false"))
    info = SimNode(load_scenario(str(scenario)), []).host().info()
    results = {r.name: r for r in host_checks.host_results(info, load_profile("dgx-a100"))}
    assert (results["host.fabric_manager"].verdict, results["host.fabric_manager"].code) == (Verdict.FAIL, "FABRIC_MANAGER")
    assert (results["host.gpudirect_rdma"].verdict, results["host.gpudirect_rdma"].code) == (Verdict.FAIL, "PEERMEM_MISSING")


# ---------------------------------------------------------------- the whole results (issue 18 §5: mutation survivors)

FLOORS = profile(host={"min_cpu_cores": 32, "min_memory_gib": 1024})


@pytest.mark.parametrize("cores, verdict, says", [
    (31, FAIL, "Xeon 8480+: 31 cores is below the limit 32"),
    (32, Verdict.WARN, "Xeon 8480+: 32 cores is below the warning level 33.6"),
    (34, PASS, None),
])
def test_cpu_in_full(cores, verdict, says):
    r = host_checks.cpu(HostInfo("h", cpu_model="Xeon 8480+", sockets=2, cores=cores, threads=2 * cores), FLOORS)
    assert (r.name, r.subject, r.verdict, r.key) == ("host.cpu", "node", verdict, "cores")
    assert r.code == (None if verdict is PASS else "HOST_CPU")
    if says:
        assert r.message == says
    assert {k: (v.value, v.unit) for k, v in r.values.items()} == {
        "cores": (cores, ""), "threads": (2 * cores, ""), "sockets": (2, ""), "model": ("Xeon 8480+", "")}
    assert [(t.name, t.fail) for t in r.thresholds] == [("min_cpu_cores", 32)]


@pytest.mark.parametrize("gib, verdict, says", [
    (1023.9, FAIL, "memory 1023.9 GiB is below the limit 1024 GiB"),
    (1023.96, Verdict.WARN, "memory 1024 GiB is below the warning level 1075.2 GiB"),  # rounded to 0.1 GiB first
    (1100, PASS, None),
])
def test_memory_in_full(gib, verdict, says):
    r = host_checks.memory(HostInfo("h", memory_bytes=int(gib * 1024 ** 3), numa_nodes=2), FLOORS)
    assert (r.name, r.subject, r.verdict, r.key) == ("host.memory", "node", verdict, "memory")
    assert r.code == (None if verdict is PASS else "HOST_MEMORY")
    if says:
        assert r.message == says
    assert {k: (v.value, v.unit) for k, v in r.values.items()} == {"memory": (round(gib, 1), "GiB"),
                                                                   "numa_nodes": (2, "")}
    assert [(t.name, t.fail, t.unit) for t in r.thresholds] == [("min_memory_gib", 1024, "GiB")]


def test_not_read_is_said_and_never_judged():
    r = host_checks.cpu(HostInfo("h"), FLOORS)
    assert (r.name, r.subject, r.verdict, r.message) == ("host.cpu", "node", SKIP, "CPU core count not available")
    r = host_checks.memory(HostInfo("h"), FLOORS)
    assert (r.name, r.subject, r.verdict, r.message) == ("host.memory", "node", SKIP, "memory size not available")
    r = host_checks.fabric_manager(HostInfo("h"))
    assert (r.name, r.subject, r.message) == (
        "host.fabric_manager", "node", "the process list could not be read, so the fabric manager was not checked")
    r = host_checks.gpudirect_rdma(HostInfo("h"))
    assert (r.name, r.subject, r.message) == (
        "host.gpudirect_rdma", "node", "/proc/modules could not be read, so the GPUDirect RDMA module was not checked")


def test_host_services_in_full():
    r = host_checks.fabric_manager(HostInfo("h", fabric_manager=True))
    assert (r.name, r.subject, r.message, r.key, r.values["running"].value) == (
        "host.fabric_manager", "node", "nv-fabricmanager is running", "running", True)
    r = host_checks.fabric_manager(HostInfo("h", fabric_manager=False))
    assert (r.name, r.subject, r.key, r.values["running"].value) == ("host.fabric_manager", "node", "running", False)
    assert r.message == ("the NVIDIA fabric manager (nv-fabricmanager) is not running; the profile says this is an "
                         "NVSwitch node")
    r = host_checks.gpudirect_rdma(HostInfo("h", peer_memory_module="nvidia_peermem"))
    assert (r.name, r.subject, r.message, r.key, r.values["module"].value) == (
        "host.gpudirect_rdma", "node", "nvidia_peermem is loaded", "module", "nvidia_peermem")
    r = host_checks.gpudirect_rdma(HostInfo("h", peer_memory_module=""))
    assert (r.name, r.subject, r.key, r.values["module"].value) == ("host.gpudirect_rdma", "node", "module", "none")
    assert r.message == ("no GPUDirect RDMA module loaded (nvidia_peermem or nv_peer_mem); the profile asks for "
                         "GPUDirect RDMA")


def test_each_host_service_is_asked_for_alone():
    host = HostInfo("h", cores=8, memory_bytes=64 * 1024 ** 3, fabric_manager=False, peer_memory_module="")
    assert [r.name for r in host_checks.host_results(host, profile(host={"fabric_manager": True}))] == [
        "host.cpu", "host.memory", "host.fabric_manager"]
    assert [r.name for r in host_checks.host_results(host, profile(host={"gpudirect_rdma": True}))] == [
        "host.cpu", "host.memory", "host.gpudirect_rdma"]
