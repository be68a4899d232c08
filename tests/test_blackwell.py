"""Blackwell and rack-scale NVLink (issue 27): the Blackwell SKUs (estimated floors, DCGM's
reference points, fp4/fp6 said not run), the HGX B200 node and the GB200 NVL72 compute tray as
profiles and simulated nodes, and the NVLink fabric registration NVML reports per GPU, read by the
real backend, answered by the twin with its faults, and judged by inventory.nvlink_fabric."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.backends.base import GpuInfo
from nodeqc.backends.nvml import NvmlBackend
from nodeqc.backends.nvml_replay import ReplayNvml, out_structure
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.checks.fabric_state import nvlink_fabric
from nodeqc.core import fabric
from nodeqc.core.codes import REMEDIATION
from nodeqc.core.errors import UsageError
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA
from nodeqc.core.skus import BY_KEY, NOT_BURNED_REASON
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec import calibration
from nodeqc.spec.profile import load_for, load_profile, suggest_profile
from nodeqc.spec.selection import Selection

from nvml_descriptions import h100_device, node

BLACKWELL = ("b200-sxm-180gb", "gb200-186gb", "b300-sxm6-270gb", "gb300-279gb", "rtx-pro-6000-server")
SCALE = 200  # simulated seconds per real second: a quick run of a whole node in seconds
# ...but a clean node's whole verdict needs its telemetry to keep up: at 200 a dtype's span of the
# burn lasts 25 ms of real time, and two such runs side by side on 2 cores read a GPU's burn power
# from too few samples (BURN_POWER_LOW, 2 of 5 tries here and twice in this session's clean-clone runs).
CLEAN_SCALE = 40


# ---------------------------------------------------------------- SKUs


@pytest.mark.parametrize("key", BLACKWELL)
def test_blackwell_skus_are_estimates_that_say_so_and_name_fp4_fp6_not_burned(key):
    sku = BY_KEY[key]
    assert not sku.measured and sku.source.startswith("estimate")
    assert sku.estimated == frozenset([*sku.healthy_tflops, "hbm"])
    assert sku.not_burned == ("fp6", "fp4")
    assert "DCGM" in sku.source  # each names the published reference point it was held against


def test_dcgm_reference_points_and_the_calibration_rule():
    """DCGM's per-SKU entries (diag-skus.yaml.in): B200 targets 1000 W and floors HBM at 4,072,500
    MB/s (0.75 of 5,430,000 measured); B300 1099 W and 4,623,360 (of 6,164,480). nodeqc's healthy
    copy figure is that measurement scaled by the H100 SXM5's nodeqc/DCGM ratio (3011 / 2540, nodeqc's
    copy with a thread a vector, since 2026-11-27; 2843 / 2540 with the looping copy before)."""
    b200, b300 = BY_KEY["b200-sxm-180gb"], BY_KEY["b300-sxm6-270gb"]
    assert (b200.default_power_w, b300.default_power_w) == (1000, 1100)
    assert b200.healthy_hbm_gbps == round(5430 * 3011 / 2540) == 6437
    assert b300.healthy_hbm_gbps == round(6164.48 * 3011 / 2540) == 7308
    # The rule: warn below 90%, fail below 80% of healthy; DCGM's own floor (0.75 of its
    # measurement, scaled the same way) sits below nodeqc's failure level.
    floor = calibration.floor(b200.healthy_hbm_gbps)
    assert floor == {"fail": 5149.6, "warn": 5793.3}
    assert 4072.5 * 3011 / 2540 < floor["fail"]
    # Blackwell Ultra has almost no fp64: its floor is tiny, from the datasheet, not a typo.
    assert b300.healthy_tflops["fp64"] < 2 < b200.healthy_tflops["fp64"]


# ---------------------------------------------------------------- profiles, scenarios, runs


def test_profiles_and_scenarios_list_the_blackwell_nodes(run_cli):
    profiles = run_cli("profiles")
    assert profiles.returncode == 0
    for name in ("b200", "b300", "rtx-pro-6000", "hgx-b200", "gb200-nvl72-tray", *BLACKWELL):
        assert f"\n{name} " in "\n" + profiles.stdout, name
    assert "not burned: fp6, fp4" in profiles.stdout
    scenarios = run_cli("scenarios")
    assert "\nhgx-b200 " in scenarios.stdout and "8 x NVIDIA B200" in scenarios.stdout
    assert "\ngb200-nvl72-tray " in scenarios.stdout and "4 x NVIDIA GB200" in scenarios.stdout
    assert "gpuN:fabric_degraded" in scenarios.stdout
    tray = load_profile("gb200-nvl72-tray")
    assert tray.get("gpu", "count") == 4 and tray.get("gpu", "nvlink_links") == 18
    assert tray.get("gpu", "require_fabric") is True and tray.get("host", "min_cpu_cores") is not None


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    return create_key(tmp_path_factory.mktemp("key") / "k.pem")


def _run(scenario: str, faults: list[str], tmp_path_factory, signer, profile_name: str | None = None,
         selection: Selection | None = None, scale: float = SCALE):
    parsed = [parse_fault(f) for f in faults]
    probe = simulated_hardware(scenario, parsed, time_scale=scale)
    probe.mgmt.open()
    gpus = probe.mgmt.gpus()
    probe.mgmt.close()
    profile = load_for(profile_name or suggest_profile(gpus), gpus)
    hw = simulated_hardware(scenario, parsed, time_scale=scale)
    options = RunOptions(profile, signer, out_dir=tmp_path_factory.mktemp("out"), quick=True,
                         selection=selection or Selection())
    return profile, Runner(options, hw).run()


def _problems(outcome):
    return {(r.name, r.subject, r.code, r.verdict.value) for r in outcome.results
            if r.verdict not in (Verdict.PASS, Verdict.SKIP)}


@pytest.mark.parametrize("scenario", ["hgx-b200", "gb200-nvl72-tray"])
def test_a_clean_blackwell_node_passes_its_own_profile(scenario, tmp_path_factory, signer):
    """`--profile auto` picks the node profile, and the healthy simulated node passes it whole, the
    fp4/fp6 burn said not run on every GPU (never a silent gap)."""
    profile, outcome = _run(scenario, [], tmp_path_factory, signer, scale=CLEAN_SCALE)
    assert profile.name == scenario
    assert _problems(outcome) == set()
    burns = [r for r in outcome.results if r.name == "stress.burn"]
    assert len(burns) == {"hgx-b200": 8, "gb200-nvl72-tray": 4}[scenario]
    for r in burns:
        assert r.evidence["not_run"] == {"fp6": NOT_BURNED_REASON, "fp4": NOT_BURNED_REASON}
        assert f"not run: fp6, fp4 ({NOT_BURNED_REASON})" in r.message
    fabric_results = {r.subject: (r.verdict, r.code) for r in outcome.results if r.name == "inventory.nvlink_fabric"}
    if scenario == "gb200-nvl72-tray":
        assert fabric_results == {f"gpu{i}": (Verdict.PASS, None) for i in range(4)}
    else:  # an HGX B200 registers with no multi-node fabric here: nothing to judge, no row
        assert fabric_results == {}


def test_the_tray_s_fabric_faults_are_found_on_their_gpus(tmp_path_factory, signer):
    faults = ["gpu1:fabric_clique=7", "gpu2:fabric_degraded", "gpu3:fabric_unregistered=in_progress"]
    _, outcome = _run("gb200-nvl72-tray", faults, tmp_path_factory, signer)
    assert {p for p in _problems(outcome) if p[0] == "inventory.nvlink_fabric"} == {
        ("inventory.nvlink_fabric", "gpu1", "FABRIC_CLIQUE_MISMATCH", "fail"),
        ("inventory.nvlink_fabric", "gpu2", "FABRIC_DEGRADED", "fail"),
        ("inventory.nvlink_fabric", "gpu3", "FABRIC_NOT_REGISTERED", "fail"),
    }
    gpu0 = next(r for r in outcome.results if r.name == "inventory.nvlink_fabric" and r.subject == "gpu0")
    assert gpu0.verdict is Verdict.PASS and "clique 32766" in gpu0.message


def test_a_tray_gpu_with_every_nvlink_down_is_found_not_crashed_on(tmp_path_factory, signer):
    """The 2026-11-28 advice review: gpu1:nvlink_down=18 on the tray divided by zero in the simulated
    NVLink (exit 2, an internal error). Now its peers have no access to it, NCCL crawls through host
    memory, and the links are named down, with advice that reaches a rack-scale tray."""
    _, outcome = _run("gb200-nvl72-tray", ["gpu1:nvlink_down=18"], tmp_path_factory, signer)
    problems = _problems(outcome)
    assert ("health.nvlink", "gpu1", "NVLINK_DOWN", "fail") in problems
    assert ("stress.p2p", "node", "P2P_NO_PEER_ACCESS", "fail") in problems
    assert ("stress.nccl", "node", "NCCL_SLOW", "fail") in problems
    assert not [p for p in problems if p[3] == "error"], problems
    assert "NVL72" in REMEDIATION["NVLINK_DOWN"] and "spine" in REMEDIATION["NVLINK_DOWN"]


@pytest.mark.parametrize("fault", ["gpu0:fabric_degraded", "gpu0:fabric_clique=3", "gpu0:fabric_unregistered=not_started"])
def test_a_fabric_fault_on_a_node_without_a_fabric_is_refused(fault):
    with pytest.raises(UsageError, match="no NVLink fabric"):
        simulated_hardware("hgx-h100", [parse_fault(fault)], time_scale=SCALE)


# ---------------------------------------------------------------- NCCL with NVLink SHARP


@pytest.mark.parametrize("scenario, ring_fail, nvls_fail", [("hgx-b200", 592, 768), ("hgx-h100", 296, 384)])
def test_a_node_whose_nvls_failed_passes_the_ring_floor_and_fails_the_nvls_floor(scenario, ring_fail, nvls_fail,
                                                                                   tmp_path_factory, signer):
    """NCCL falls back to its ring in silence when NVLink SHARP fails: the ring's floor passes such a
    node, the NVLS floor (Azure's 460 GB/s on H100 assumes NVLS) fails it, naming NVLS."""
    only = Selection(only=("inventory", "stress.nccl"))
    _, clean = _run(scenario, [], tmp_path_factory, signer, scenario, only)
    _, broken = _run(scenario, ["gpu3:nvls_down"], tmp_path_factory, signer, scenario, only)
    ok = next(r for r in clean.results if r.name == "stress.nccl" and r.subject == "node")
    bad = next(r for r in broken.results if r.name == "stress.nccl" and r.subject == "node")
    assert ok.verdict is Verdict.PASS and ok.values["busbw_gbps"].value > nvls_fail
    assert [(t.name, t.fail) for t in ok.thresholds] == [("min_nccl_busbw_gbps", ring_fail),
                                                         ("min_nccl_nvls_busbw_gbps", nvls_fail)]
    assert ring_fail < bad.values["busbw_gbps"].value < nvls_fail
    assert (bad.verdict, bad.code) == (Verdict.FAIL, "NCCL_NVLS_SLOW") and "NVLS off or failed" in bad.message


def test_nvls_down_is_refused_where_there_is_no_nvlink_sharp():
    with pytest.raises(UsageError, match="NVLink SHARP needs Hopper or newer GPUs on NVSwitch"):
        simulated_hardware("dgx-a100", [parse_fault("gpu0:nvls_down")], time_scale=SCALE)


# ---------------------------------------------------------------- the check itself


def _gpu(i: int, state: str = "completed", status: int = 0, cluster: str = "c-1", clique: int = 5,
         mask: object = fabric.HEALTHY_MASK, answered: bool = True) -> GpuInfo:
    info = {"state": state, "status": status, "cluster_uuid": cluster, "clique_id": clique, "health_mask": mask}
    return GpuInfo(index=i, name="NVIDIA GB200", uuid=f"GPU-{i}", bus_id=f"0000:0{i}:00.0",
                   fabric=info if answered else NA)


def _verdicts(gpus, required=True):
    profile = load_profile("gb200-nvl72-tray" if required else "b200")
    return {r.subject: (r.verdict, r.code) for r in nvlink_fabric(gpus, profile)}


def test_the_fabric_check_names_each_way_a_gpu_is_out_of_its_tray_s_fabric():
    gpus = [_gpu(0), _gpu(1, cluster="c-2"), _gpu(2, clique=9), _gpu(3, status=3), _gpu(4, state="not_started"),
            _gpu(5, mask=fabric.DEGRADED_BANDWIDTH_MASK), _gpu(6), _gpu(7)]
    assert _verdicts(gpus) == {
        "gpu0": (Verdict.PASS, None), "gpu1": (Verdict.FAIL, "FABRIC_CLIQUE_MISMATCH"),
        "gpu2": (Verdict.FAIL, "FABRIC_CLIQUE_MISMATCH"), "gpu3": (Verdict.FAIL, "FABRIC_NOT_REGISTERED"),
        "gpu4": (Verdict.FAIL, "FABRIC_NOT_REGISTERED"), "gpu5": (Verdict.FAIL, "FABRIC_DEGRADED"),
        "gpu6": (Verdict.PASS, None), "gpu7": (Verdict.PASS, None)}
    other = next(r for r in nvlink_fabric(gpus, load_profile("gb200-nvl72-tray")) if r.subject == "gpu1")
    assert "another NVLink cluster" in other.message and "cluster c-2" in other.message


def test_an_even_split_names_no_tray_home_and_fails_every_gpu():
    gpus = [_gpu(0), _gpu(1), _gpu(2, clique=9), _gpu(3, clique=9)]
    assert set(_verdicts(gpus).values()) == {(Verdict.FAIL, "FABRIC_CLIQUE_MISMATCH")}


def test_every_unhealthy_field_of_the_health_mask_is_a_finding_and_a_healthy_mask_none():
    assert fabric.health_problems(fabric.HEALTHY_MASK) == [] and fabric.health_problems(0) == []
    assert fabric.health_problems(None) == [] and fabric.health_problems(True) == []
    route = (fabric.HEALTHY_MASK & ~(0x3 << 2)) | (1 << 2)
    config = (fabric.HEALTHY_MASK & ~(0xF << 8)) | (5 << 8)
    gfm = (fabric.HEALTHY_MASK & ~(0x3 << 14)) | (2 << 14)
    assert fabric.health_problems(route) == ["a route recovery is in progress"]
    assert fabric.health_problems(config) == ["incorrect configuration: too few NVLinks"]
    assert fabric.health_problems(gfm) == ["the global fabric manager is disconnected"]


def test_a_gpu_without_an_answer_fails_only_where_the_profile_requires_a_fabric():
    gpus = [_gpu(0, answered=False), _gpu(1, state="not_supported")]
    assert _verdicts(gpus, required=True) == {"gpu0": (Verdict.FAIL, "FABRIC_NOT_REGISTERED"),
                                              "gpu1": (Verdict.FAIL, "FABRIC_NOT_REGISTERED")}
    assert _verdicts(gpus, required=False) == {}
    # Where its siblings answer, a GPU that does not is out of the fabric, required or not.
    assert _verdicts([_gpu(0), _gpu(1, answered=False)], required=False) == {
        "gpu0": (Verdict.PASS, None), "gpu1": (Verdict.FAIL, "FABRIC_NOT_REGISTERED")}


# ---------------------------------------------------------------- the real backend


def test_the_nvml_backend_reads_the_versioned_fabric_info_and_na_where_not_supported():
    import pynvml

    b = NvmlBackend(ReplayNvml(node([h100_device(0), h100_device(1)])))
    b.open()
    assert b.gpus()[0].fabric is NA  # a driver without the call: not available, never a crash

    def answer(handle, pointer):
        # As the real binding: the structure comes by pointer with its version set (by value, the
        # driver read its bytes as the pointer and the process died on the real H100).
        info = out_structure(pointer)
        assert info is not None and info.version == pynvml.nvmlGpuFabricInfo_v2
        if handle is b._handles[1]:
            raise b.n.NVMLError(b.n.NVML_ERROR_NOT_SUPPORTED)
        info.state, info.status, info.cliqueId = pynvml.NVML_GPU_FABRIC_STATE_COMPLETED, 0, 32766
        info.healthMask = fabric.DEGRADED_BANDWIDTH_MASK
        for k, byte in enumerate(bytes.fromhex("5f3a9c2e7b414d8e9a062c1e8b7d4f10")):
            info.clusterUuid[k] = byte
        return pynvml.NVML_SUCCESS

    b.n.c_nvmlGpuFabricInfo_v2_t = pynvml.c_nvmlGpuFabricInfo_v2_t
    b.n.nvmlDeviceGetGpuFabricInfoV = answer
    first, second = b.gpus()[:2]
    assert first.fabric == {"state": "completed", "status": 0, "cluster_uuid": "5f3a9c2e-7b41-4d8e-9a06-2c1e8b7d4f10",
                            "clique_id": 32766, "health_mask": fabric.DEGRADED_BANDWIDTH_MASK}
    assert second.fabric is NA


def test_a_recorded_fabric_answer_replays_into_the_callers_structure_and_a_structure_by_value_is_refused():
    import ctypes

    import pynvml

    from nodeqc.backends.nvml_capture import RecordingNvml

    described = {"state": pynvml.NVML_GPU_FABRIC_STATE_COMPLETED, "status": 0, "cliqueId": 7,
                 "clusterUuid": list(range(16)), "healthMask": 0, "version": 99}
    replay = ReplayNvml({"devices": [{"nvmlDeviceGetGpuFabricInfoV": {"fills": described}}]})
    handle = replay.nvmlDeviceGetHandleByIndex(0)
    info = pynvml.c_nvmlGpuFabricInfo_v2_t()
    info.version = pynvml.nvmlGpuFabricInfo_v2
    assert replay.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info)) == pynvml.NVML_SUCCESS
    assert (info.cliqueId, list(info.clusterUuid)[:3], info.version) == (7, [0, 1, 2], pynvml.nvmlGpuFabricInfo_v2)
    with pytest.raises(TypeError, match="pointer"):
        replay.nvmlDeviceGetGpuFabricInfoV(handle, pynvml.c_nvmlGpuFabricInfo_v2_t())

    # Recorded again: the filled structure is the answer, keyed without the pointer's address.
    recorder = RecordingNvml(replay)
    h = recorder.nvmlDeviceGetHandleByIndex(0)
    again = pynvml.c_nvmlGpuFabricInfo_v2_t()
    recorder.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(again))
    fills = recorder.description()["devices"][0]["nvmlDeviceGetGpuFabricInfoV"]["fills"]
    assert fills["cliqueId"] == 7 and fills["clusterUuid"] == list(range(16))


# ---------------------------------------------------------------- IMEX


def test_the_host_backend_reads_imex_from_the_process_list_devices_and_nodes_config(tmp_path):
    from nodeqc.backends.host import LinuxHost

    (tmp_path / "proc/1").mkdir(parents=True)
    (tmp_path / "proc/1/comm").write_text("systemd\n")
    host = LinuxHost(tmp_path)
    assert host._imex() == {"running": False, "channels": None, "nodes": None, "own": None}  # not the live host
    (tmp_path / "proc/4242").mkdir()
    (tmp_path / "proc/4242/comm").write_text("nvidia-imex\n")
    (tmp_path / "dev/nvidia-caps-imex-channels").mkdir(parents=True)
    (tmp_path / "dev/nvidia-caps-imex-channels/channel0").write_text("")
    (tmp_path / "etc/nvidia-imex").mkdir(parents=True)
    # Comments and blank lines are no nodes; a hostile file is bounded (64 KiB, 1024 lines of 255).
    (tmp_path / "etc/nvidia-imex/nodes_config.cfg").write_text("# the rack\n10.0.0.1\n\n10.0.0.2  # tray 2\n"
                                                              + "x" * 300 + "\n" + "y\n" * 100_000)
    state = host._imex()
    assert state["running"] is True and state["channels"] == 1
    assert state["nodes"][:3] == ["10.0.0.1", "10.0.0.2", "x" * 255] and len(state["nodes"]) == 1024
    assert LinuxHost(tmp_path / "nowhere")._imex() is NA


def test_the_live_host_names_itself_by_its_host_name_and_addresses():
    import socket

    from nodeqc.backends.host import LinuxHost

    own = LinuxHost()._own_names()
    assert socket.gethostname() in own and "127.0.0.1" in own
    assert not [n for n in own if n.startswith("fe80")]  # link-local: no address of the domain's network


def test_a_nodes_config_must_name_this_node():
    from nodeqc.checks.host import imex_member

    assert imex_member(["10.0.0.1", "10.0.0.2"], ["10.0.0.2", "tray2"]) is True
    assert imex_member(["Tray2.rack7 "], ["10.0.0.9", "tray2.rack7"]) is True  # a host name, any case
    assert imex_member(["10.0.0.1", "10.0.0.3"], ["10.0.0.2", "tray2"]) is False
    assert imex_member(["10.0.0.1"], None) is None and imex_member(None, ["10.0.0.1"]) is None
    assert imex_member([], ["10.0.0.1"]) is None


@pytest.mark.parametrize("faults, codes", [
    ([], set()),
    (["host:imex_down"], {"IMEX_NOT_RUNNING"}),
    (["host:imex_no_channels", "host:imex_nodes=16"], {"IMEX_NO_CHANNELS"}),
    (["host:imex_not_listed"], {"IMEX_SELF_MISSING"}),
])
def test_imex_on_the_tray_and_its_faults(faults, codes, tmp_path_factory, signer):
    _, outcome = _run("gb200-nvl72-tray", faults, tmp_path_factory, signer, "gb200-nvl72-tray",
                      Selection(only=("host.imex",)))
    (r,) = [r for r in outcome.results if r.name == "host.imex"]
    assert ({r.code} - {None}) == codes and r.values["nodes_expected"].value == 18
    if "host:imex_nodes=16" in faults:
        assert "lists 16 node(s) of the domain's 18" in r.message and r.values["nodes_listed"].value == 16
    if not faults:
        assert r.verdict is Verdict.PASS and "lists the domain's 18 nodes" in r.message
        assert r.values["self_listed"].value is True and "not checked" not in r.message
    if faults == ["host:imex_not_listed"]:
        # Eighteen listed, as the domain has: the count alone would have passed it.
        assert r.verdict is Verdict.FAIL and r.values["nodes_listed"].value == 18
        assert r.message.startswith("this node (10.0.0.1, sim-") and "is not among the 18 node(s)" in r.message


def test_imex_faults_need_a_host_with_imex():
    with pytest.raises(UsageError, match="runs no IMEX"):
        simulated_hardware("hgx-b200", [parse_fault("host:imex_down")], time_scale=SCALE)
    with pytest.raises(UsageError, match="lists 18: give fewer"):
        simulated_hardware("gb200-nvl72-tray", [parse_fault("host:imex_nodes=18")], time_scale=SCALE)


def _said(gpus, subject="gpu0"):
    return next(r for r in nvlink_fabric(gpus, load_profile("gb200-nvl72-tray")) if r.subject == subject)


def test_a_health_mask_not_read_is_never_called_healthy():
    """The 2026-11-28 audit: None (the first version of the call), 0, -1, a float or text all passed
    as "healthy", and a float with the degraded bit set too."""
    assert _said([_gpu(0)]).message.endswith(", healthy")
    none = _said([_gpu(0, mask=None)])
    assert none.verdict is Verdict.PASS and "health not reported (no health mask" in none.message
    zero = _said([_gpu(0, mask=0)])
    assert zero.verdict is Verdict.PASS and "health not reported (health mask 0" in zero.message
    for mask in (-1, float(fabric.DEGRADED_BANDWIDTH_MASK), "0x155", True, [1]):
        r = _said([_gpu(0, mask=mask)])
        assert (r.verdict, r.code) == (Verdict.WARN, "FABRIC_HEALTH_UNREAD"), mask
        assert "healthy" not in r.message and "its health was not read" in r.message


def test_a_status_that_is_not_nvmls_integer_success_is_not_registered():
    for status in (0.0, False, "0", None):
        assert _verdicts([_gpu(0, status=status)]) == {"gpu0": (Verdict.FAIL, "FABRIC_NOT_REGISTERED")}, status


def test_any_cluster_or_clique_a_node_gives_is_compared_without_a_crash():
    gpus = [_gpu(0, clique=[1]), _gpu(1, clique=[1]), _gpu(2, cluster={}), _gpu(3, clique=[1])]
    assert _verdicts(gpus) == {"gpu0": (Verdict.PASS, None), "gpu1": (Verdict.PASS, None),
                               "gpu2": (Verdict.FAIL, "FABRIC_CLIQUE_MISMATCH"), "gpu3": (Verdict.PASS, None)}


def test_a_required_fabric_with_no_gpu_left_to_ask_is_said():
    lost = [replace(_gpu(0), lost=True)]
    [r] = nvlink_fabric(lost, load_profile("gb200-nvl72-tray"))
    assert (r.subject, r.verdict, r.code) == ("node", Verdict.FAIL, "FABRIC_NOT_REGISTERED")
    assert nvlink_fabric([], load_profile("b200")) == []  # not required, nothing to ask: no row
