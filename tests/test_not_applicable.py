"""Checks a node's make-up does not call for are said to be not applicable (once, under the summary),
not counted as checks that did not run: NVLink on a PCIe card whose profile asks for none, GPU-to-GPU
copies and all-reduce on a node with one GPU. Where the check could have applied (a profile that
asks for NVLink, a second GPU the driver did not bring up) it stays a check that did not run."""

from __future__ import annotations

import pytest

from nodeqc.backends import simulated_hardware
from nodeqc.backends.base import GpuCounters, GpuInfo
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.checks import health
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.profile import load_profile
from nodeqc.spec.selection import Selection
from nodeqc.work.telemetry import GpuTelemetry


def _gpu(nvlink_count) -> GpuInfo:
    return GpuInfo(index=0, name="NVIDIA H100 PCIe", uuid="GPU-x", bus_id="0000:1b:00.0", nvlink_count=nvlink_count)


def _tel(end: GpuCounters | None = GpuCounters()) -> GpuTelemetry:
    tel = GpuTelemetry(0)
    tel.counters_start, tel.counters_end = GpuCounters(), end
    return tel


@pytest.mark.parametrize("nvlink_count", [NA, 0])
def test_a_gpu_without_nvlink_under_a_profile_asking_none_is_not_applicable(nvlink_count):
    r = health.nvlink(_gpu(nvlink_count), _tel(), load_profile("h100"))
    assert (r.verdict, r.code) == (Verdict.SKIP, "NVLINK_NA") and r.message.startswith("not applicable")


def test_nvlink_stays_a_check_not_run_where_it_could_apply():
    # The node profile asks for 18 links and the GPU reports none: no NVLink node's GPU, a failure
    # (it was a check not run, and the node passed: the 2026-11-28 advice review).
    asked = health.nvlink(_gpu(NA), _tel(), load_profile("hgx-h100"))
    assert asked.verdict is Verdict.FAIL and asked.code == "NVLINK_DOWN"
    # A GPU with links whose counters were never read (it fell off the bus).
    lost = health.nvlink(_gpu(18), _tel(end=None), load_profile("h100"))
    assert lost.verdict is Verdict.SKIP and lost.code is None


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    return create_key(tmp_path_factory.mktemp("key") / "k.pem")


def _peer_checks(tmp_path, signer, scenario, faults=(), gpus=None):
    hw = simulated_hardware(scenario, [parse_fault(f) for f in faults], time_scale=100)
    profile = load_profile("h100").with_gpu_count(gpus) if gpus else load_profile("h100")
    options = RunOptions(profile, signer, out_dir=tmp_path, quick=True,
                         selection=Selection(only=("stress.p2p", "stress.nccl")))
    return {r.name: r for r in Runner(options, hw).run().results if r.name in ("stress.p2p", "stress.nccl")}


def test_peer_checks_on_a_one_gpu_node_are_not_applicable(tmp_path, signer):
    found = _peer_checks(tmp_path, signer, "h100")
    assert {(n, r.verdict, r.code) for n, r in found.items()} == {
        ("stress.p2p", Verdict.SKIP, "ONE_GPU_NA"), ("stress.nccl", Verdict.SKIP, "ONE_GPU_NA")}


def test_peer_checks_with_a_second_gpu_missing_did_not_run(tmp_path, signer):
    """Two H100s on the bus, one not brought up by the driver: the peer checks could have applied."""
    scenario = tmp_path / "two.toml"
    scenario.write_text('[gpus]\nmodel = "h100-sxm5-80gb"\ncount = 2\n[host]\ncores = 32\nmemory_gib = 256\n')
    found = _peer_checks(tmp_path, signer, str(scenario), ["gpu1:missing"], gpus=2)
    assert {(n, r.verdict, r.code) for n, r in found.items()} == {
        ("stress.p2p", Verdict.SKIP, None), ("stress.nccl", Verdict.SKIP, None)}
    assert found["stress.p2p"].message == "needs two or more working GPUs"
