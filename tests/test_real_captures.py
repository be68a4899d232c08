"""The NVML captures of the real H100 SXM5 and H200 SXM the figures were measured on
(shared/measurements/2026-11-26, and the first ones of 2026-11-23 under dated names; copied to
tests/fixtures/): replayed, `--profile auto` picks their SKU's profile, the inventory is the machine's,
and the healthy GPUs qualify with no warning (issue 23: no WARN, FAIL or ERROR on the GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, cli
from nodeqc.backends import replay_hardware
from nodeqc.backends.sim.models import SIM_GPU_MODELS
from nodeqc.core.skus import BY_KEY, family_skus
from nodeqc.report.envelope import decode_statement, read_envelope
from nodeqc.spec import calibration
from nodeqc.spec.profile import load_for, suggest_profile

FIXTURES = ROOT / "tests" / "fixtures"
CAPTURES = {
    # 2026-11-26: with SRAM ECC fields, the process list, peer paths, the clock-event counters.
    "capture-h100-sxm5-80gb.json": ("h100-sxm5-80gb", 0x2330, "NVIDIA H100 80GB HBM3"),
    "capture-h200-sxm-141gb.json": ("h200-sxm-141gb", 0x2335, "NVIDIA H200"),
    # 2026-11-27: the first with the NVLink fabric structure NVML filled (by pointer).
    "capture-h100-sxm5-80gb-2026-11-27.json": ("h100-sxm5-80gb", 0x2330, "NVIDIA H100 80GB HBM3"),
    "capture-h200-sxm-141gb-2026-11-27.json": ("h200-sxm-141gb", 0x2335, "NVIDIA H200"),
    # 2026-11-23: the first captures (test_diagnosis replays the H100's readings at its limit).
    "capture-h100-sxm5-80gb-2026-11-23.json": ("h100-sxm5-80gb", 0x2330, "NVIDIA H100 80GB HBM3"),
    "capture-h200-sxm-141gb-2026-11-23.json": ("h200-sxm-141gb", 0x2335, "NVIDIA H200"),
    # 2026-11-28: driver 580.159.04 with CUDA 13.0, the first capture of a CUDA 13 driver.
    "capture-h100-sxm5-80gb-2026-11-28.json": ("h100-sxm5-80gb", 0x2330, "NVIDIA H100 80GB HBM3"),
}


def _captured(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())["devices"][0]


def _replayed_gpus(name: str):
    hw = replay_hardware(str(FIXTURES / name))
    hw.mgmt.open()
    try:
        return hw, hw.mgmt.gpus()
    finally:
        hw.mgmt.close()


@pytest.mark.parametrize("name", CAPTURES)
def test_auto_picks_the_sku_profile_and_its_floors(name):
    key, device_id, model = CAPTURES[name]
    hw, gpus = _replayed_gpus(name)
    assert suggest_profile(gpus) == key
    profile = load_for(key, gpus)
    assert profile.sku.key == key and profile.notices == []
    # The family name resolves to the same floors, and says so.
    family = load_for(key.split("-")[0], gpus)
    assert family.sku.key == key and family.floors() == profile.floors()
    assert family.notices == [f"profile {key.split('-')[0]}: the GPUs are {profile.sku.name} (PCI device "
                              f"0x{device_id:04x}): the floors of {key} apply"]
    assert hw.simulation["compute"] == f"simulated twin ({key})"


@pytest.mark.parametrize("name", CAPTURES)
def test_inventory_is_the_captured_machine(name):
    key, device_id, model = CAPTURES[name]
    raw = _captured(name)
    _, gpus = _replayed_gpus(name)
    g = gpus[0]
    assert (g.name, g.uuid, g.serial, g.vbios) == (model, raw["nvmlDeviceGetUUID"], raw["nvmlDeviceGetSerial"],
                                                   raw["nvmlDeviceGetVbiosVersion"])
    assert g.bus_id == "0000:00:06.0" and g.pci_device_id == device_id
    assert g.memory_total_bytes == raw["nvmlDeviceGetMemoryInfo"]["total"] and g.power_default_limit_w == 700


@pytest.mark.slow
@pytest.mark.parametrize("name", CAPTURES)
def test_a_replayed_healthy_gpu_qualifies_with_no_warning(request, tmp_path, name):
    """What the project's before-stop hook runs: the real capture, `--profile auto --quick`."""
    key, device_id, model = CAPTURES[name]
    raw = _captured(name)
    p = cli("--headless", "--replay", str(FIXTURES / name), "--profile", "auto", "--quick", "--out", str(tmp_path),
            timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"nodeqc: profile auto: using '{key}'" in p.stderr
    pred = decode_statement(read_envelope(Path(p.stdout.strip().splitlines()[-1])))["predicate"]
    bad = [(c["name"], c["subject"], c["verdict"], c["message"]) for c in pred["checks"] if c["verdict"] not in ("pass", "skip")]
    assert bad == []
    # The captured machine's host is not here: its sysfs checks say so, one by one.
    assert sorted(c["name"] for c in pred["checks"] if c["code"] == "HOST_NOT_HERE") == [
        "host.aer", "host.edac", "host.kernel_log"]
    # The SKU's own floors (bf16 fail 542.0 on the H100 SXM5, 531.0 on the H200 SXM), not its family's,
    # whose slowest form (the H100 PCIe's, the H200 NVL's: estimated) sets a lower one.
    sku = BY_KEY[key]
    bf16_fail = pred["profile"]["floors"]["min_bf16_tflops"]["fail"]
    assert pred["profile"]["sku"] == key and bf16_fail == calibration.floor(sku.healthy_tflops["bf16"])["fail"]
    assert bf16_fail > calibration.conservative_floors(family_skus(sku.family))["min_bf16_tflops"]["fail"]
    gpu = next(c for c in pred["checks"] if c["name"] == "inventory.gpu_model")
    assert gpu["message"] == f"{model} ({BY_KEY[key].name}, PCI device 0x{device_id:04x})"
    inventory = pred["gpus"][0]
    assert (inventory["uuid"], inventory["serial"], inventory["vbios"], inventory["bus_id"], inventory["pci_device_id"],
            inventory["sku"]) == (raw["nvmlDeviceGetUUID"], raw["nvmlDeviceGetSerial"], raw["nvmlDeviceGetVbiosVersion"],
                                  "0000:00:06.0", device_id, key)
    burn = next(c for c in pred["checks"] if c["name"] == "stress.burn")
    # FP8 runs on the replayed Hopper (compute capability 9.0) at its twin's figure: 1223.38 on the H100
    # SXM5, what the real one sustained in the continuous burn (sim_models.H100_SXM5_TWIN).
    assert f"fp8 {SIM_GPU_MODELS[key].tflops['fp8']:g} TFLOP/s" in burn["message"] and "not run" not in burn["message"]
