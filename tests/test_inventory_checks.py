"""Inventory verdicts: count, GPUs on the PCI bus the driver did not bring up, model, memory, ECC,
persistence, driver and CUDA versions, homogeneity."""

import pytest

from nodeqc.backends.base import GpuInfo, PciDevice
from nodeqc.checks import inventory
from nodeqc.model import Verdict
from nodeqc.na import NA
from nodeqc.profile import load_profile

GIB = 1024 ** 3
HGX, H100, GENERIC = load_profile("hgx-h100"), load_profile("h100"), load_profile("generic")
BUSES = ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0"]


def gpu(i, **kw):
    base = dict(index=i, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{i}", bus_id=BUSES[i], memory_total_bytes=int(79.6 * GIB),
                vbios="96.00.99.00.01", ecc_enabled=True, ecc_pending=True, persistence=True, power_limit_w=700)
    base.update(kw)
    return GpuInfo(**base)


def pci(buses):
    return [PciDevice(b, "0x10de", "0x2330", "0x0302") for b in buses]


@pytest.mark.parametrize("found, profile, verdict", [
    (8, HGX, Verdict.PASS), (7, HGX, Verdict.FAIL), (9, HGX, Verdict.FAIL),
    (3, H100, Verdict.PASS), (0, H100, Verdict.FAIL), (3, H100.with_gpu_count(4), Verdict.FAIL),
])
def test_gpu_count(found, profile, verdict):
    r = inventory.gpu_count([gpu(0)] * found, profile)
    assert r.verdict is verdict
    assert r.code == (None if verdict is Verdict.PASS else "GPU_COUNT")


def test_a_gpu_on_pci_that_the_driver_did_not_bring_up_is_named_by_its_slot():
    # The driver lists three GPUs; the bus shows four: the third slot's GPU is missing.
    gpus = [gpu(0), gpu(1, bus_id=BUSES[1]), gpu(2, bus_id=BUSES[3])]
    results = inventory.gpu_present(gpus, pci(BUSES))
    verdicts = {r.subject: (r.verdict, r.code) for r in results}
    assert verdicts == {"gpu0": (Verdict.PASS, None), "gpu1": (Verdict.PASS, None),
                        "gpu2": (Verdict.FAIL, "GPU_MISSING"), "gpu3": (Verdict.PASS, None)}
    inventory.assign_slots(gpus, pci(BUSES))
    assert [g.subject for g in gpus] == ["gpu0", "gpu1", "gpu3"]  # the one after keeps its slot's name


def test_without_a_pci_listing_slots_are_driver_indices():
    gpus = [gpu(0), gpu(1)]
    inventory.assign_slots(gpus, [])
    assert [g.subject for g in gpus] == ["gpu0", "gpu1"]


def test_model_must_be_one_the_profile_accepts():
    assert inventory.gpu_model(gpu(0), HGX).verdict is Verdict.PASS
    r = inventory.gpu_model(gpu(0, name="NVIDIA H100 PCIe"), HGX)
    assert (r.verdict, r.code) == (Verdict.FAIL, "GPU_MODEL")
    assert inventory.gpu_model(gpu(0, name="NVIDIA H100 PCIe"), H100).verdict is Verdict.PASS
    assert inventory.gpu_model(gpu(0, name="Some Future GPU"), GENERIC).verdict is Verdict.PASS


# The h100 family's memory floor: 98% of the 79.6 GiB an H100 80GB reports, to half a GiB (calibration.py).
@pytest.mark.parametrize("gib, verdict", [(79.65, Verdict.PASS), (78.0, Verdict.PASS), (77.99, Verdict.FAIL)])
def test_memory_size(gib, verdict):
    assert inventory.gpu_memory(gpu(0, memory_total_bytes=int(gib * GIB) + 1), H100).verdict is verdict


@pytest.mark.parametrize("enabled, pending, profile, verdict, code", [
    (True, True, H100, Verdict.PASS, None),
    (False, False, H100, Verdict.FAIL, "ECC_DISABLED"),
    (False, False, GENERIC, Verdict.WARN, "ECC_DISABLED"),
    (True, False, H100, Verdict.WARN, "ECC_PENDING_CHANGE"),
    (NA, NA, H100, Verdict.FAIL, "ECC_DISABLED"),
    (NA, NA, GENERIC, Verdict.SKIP, None),
])
def test_ecc_mode(enabled, pending, profile, verdict, code):
    r = inventory.ecc_mode(gpu(0, ecc_enabled=enabled, ecc_pending=pending), profile)
    assert (r.verdict, r.code) == (verdict, code)


def test_persistence_off_warns_unless_required(tmp_path):
    assert inventory.persistence(gpu(0, persistence=False), H100).verdict is Verdict.WARN
    p = tmp_path / "strict.toml"
    p.write_text('description = "s"\nextends = "h100"\n[gpu]\nrequire_persistence = true\n')
    r = inventory.persistence(gpu(0, persistence=False), load_profile(str(p)))
    assert (r.verdict, r.code) == (Verdict.FAIL, "PERSISTENCE_OFF")


@pytest.mark.parametrize("have, verdict", [("535.54", Verdict.PASS), ("535.54.03", Verdict.PASS), ("570.86.15", Verdict.PASS),
                                           ("535.53.99", Verdict.FAIL), ("470.223.02", Verdict.FAIL), ("N/A", Verdict.FAIL)])
def test_driver_version(have, verdict):
    assert inventory.driver(have, H100).verdict is verdict


def test_cuda_version_and_no_minimum():
    assert inventory.cuda("12.1", H100).verdict is Verdict.FAIL
    assert inventory.cuda("12.2", H100).verdict is Verdict.PASS
    assert inventory.cuda("11.0", GENERIC).verdict is Verdict.PASS


def test_homogeneity():
    same = [gpu(i) for i in range(4)]
    assert inventory.homogeneity(same).verdict is Verdict.PASS
    r = inventory.homogeneity(same[:3] + [gpu(3, vbios="96.00.30.00.01")])
    assert (r.verdict, r.code) == (Verdict.WARN, "GPU_MIXED") and "gpu3: 96.00.30.00.01" in r.message
    r = inventory.homogeneity(same[:3] + [gpu(3, name="NVIDIA H100 PCIe")])
    assert r.verdict is Verdict.FAIL and "model differs" in r.message
    r = inventory.homogeneity(same[:3] + [gpu(3, power_limit_w=500)])
    assert r.verdict is Verdict.WARN and "power_limit_w" in r.message


def test_no_driver():
    r = inventory.nvml_result("NVML not available: is the NVIDIA driver installed? (x)", "N/A", 0)
    assert (r.verdict, r.code, r.subject) == (Verdict.FAIL, "NVML_UNAVAILABLE", "node")
