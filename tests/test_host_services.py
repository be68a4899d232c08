"""Host services a GPU node needs: the NVSwitch fabric manager and the GPUDirect RDMA peer-memory
module; read from /proc (a prepared tree here) and from the simulated node's scenario, judged only
where the profile asks."""

from pathlib import Path

import pytest

from nodeqc.backends.base import HostInfo
from nodeqc.backends.host import LinuxHost
from nodeqc.backends.simulated import SimNode, load_scenario
from nodeqc.checks import host as host_checks
from nodeqc.model import Verdict
from nodeqc.na import NA
from nodeqc.profile import Profile, load_profile

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
