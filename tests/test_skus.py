"""SKU identification (nodeqc.core.skus): by PCI device id first, by NVML name, memory and default power
limit where the id is missing."""

from __future__ import annotations

import pytest

from nodeqc.backends.base import GpuInfo
from nodeqc.backends.sim.models import H100_SXM5_TWIN, H200_SXM_TWIN
from nodeqc.core.na import NA
from nodeqc.core.skus import BY_KEY, SKUS, device_id_from_nvml, identify

GIB = 1024 ** 3

# Device id -> SKU, from pci.ids (pciutils/pciids 2026.08.22) and the real captures (0x2330, 0x2335).
DEVICE_IDS = [
    (0x2330, "h100-sxm5-80gb"), (0x2331, "h100-pcie-80gb"), (0x2321, "h100-nvl-94gb"),
    (0x2335, "h200-sxm-141gb"), (0x233B, "h200-nvl-141gb"),
    (0x20B0, "a100-sxm4-40gb"), (0x20B2, "a100-sxm4-80gb"), (0x20B1, "a100-pcie-40gb"),
    (0x20F1, "a100-pcie-40gb"), (0x20B5, "a100-pcie-80gb"),
    (0x26B9, "l40s"), (0x1EB8, "t4"),
    (0x1DB1, "v100-sxm2-16gb"), (0x1DF5, "v100-sxm2-16gb"), (0x1DB5, "v100-sxm2-32gb"),
    (0x1DB4, "v100-pcie-16gb"), (0x1DB6, "v100-pcie-32gb"),
    # Blackwell, pci.ids 2026.08.22.
    (0x2901, "b200-sxm-180gb"), (0x2941, "gb200-186gb"), (0x3182, "b300-sxm6-270gb"), (0x31C2, "gb300-279gb"),
    (0x31C3, "gb300-279gb"), (0x2BB5, "rtx-pro-6000-server"),
]


def gpu(name: str = "whatever", device_id: object = NA, memory_gib: float | None = None,
        power_w: object = NA) -> GpuInfo:
    return GpuInfo(index=0, name=name, uuid="GPU-x", bus_id="0000:01:00.0", pci_device_id=device_id,
                   memory_total_bytes=NA if memory_gib is None else int(memory_gib * GIB),
                   power_default_limit_w=power_w)


@pytest.mark.parametrize("device_id,key", DEVICE_IDS)
def test_the_pci_device_id_names_the_sku(device_id, key):
    # The id decides even when the NVML name says something else (a renamed or odd driver string).
    assert identify(gpu("NVIDIA Something Else", device_id)).key == key


def test_every_sku_is_in_the_device_id_table_and_ids_are_unique():
    assert {k for _, k in DEVICE_IDS} == {s.key for s in SKUS}
    ids = [i for s in SKUS for i in s.pci_device_ids]
    assert len(ids) == len(set(ids))


def test_an_unknown_device_id_is_an_unknown_sku_even_with_a_known_name():
    # 0x2339 is an H100 SXM5 94GB (pci.ids), a part nodeqc has no figures for: not an SXM5 80GB.
    assert identify(gpu("NVIDIA H100 80GB HBM3", 0x2339, 79.6, 700)) is None


@pytest.mark.parametrize("sku", SKUS, ids=lambda s: s.key)
def test_without_a_device_id_name_memory_and_power_identify_each_sku(sku):
    assert identify(gpu(sku.nvml_names[0], NA, sku.memory_gib, sku.default_power_w)) is sku


def test_name_alone_decides_when_it_is_unambiguous():
    assert identify(gpu("NVIDIA H200")).key == "h200-sxm-141gb"
    assert identify(gpu("nvidia l40s")).key == "l40s"  # NVML names compare case-insensitively


def test_memory_breaks_a_tie_of_names_and_power_a_tie_of_memory(monkeypatch):
    # Two SKUs of one name differing in memory: only the memory can tell them apart.
    import dataclasses

    import nodeqc.core.skus as skus

    a = dataclasses.replace(BY_KEY["v100-sxm2-16gb"], nvml_names=("Tesla V100",))
    b = dataclasses.replace(BY_KEY["v100-sxm2-32gb"], nvml_names=("Tesla V100",))
    c = dataclasses.replace(BY_KEY["v100-pcie-32gb"], nvml_names=("Tesla V100",))
    monkeypatch.setattr(skus, "SKUS", (a, b, c))
    assert identify(gpu("Tesla V100", NA, 16.0)) is a
    assert identify(gpu("Tesla V100", NA, 32.0, 300)) is b
    assert identify(gpu("Tesla V100", NA, 32.0, 250)) is c
    assert identify(gpu("Tesla V100", NA, 32.0)) is None  # still two candidates: unknown, not a guess
    assert identify(gpu("Tesla V100", NA, 24.0)) is None  # no SKU of that size


def test_unknown_gpus_are_none():
    assert identify(gpu("NVIDIA GeForce RTX 4090")) is None
    # pci.ids 0x29bc GB102 [B100]: a Blackwell nodeqc has no SKU for (0x2901 is the B200 now).
    assert identify(gpu("NVIDIA B100", 0x29BC)) is None
    # 0x2909 [HGX B200 168GB]: another memory size of the B200, no SKU of its own: unknown by its id.
    assert identify(gpu("NVIDIA B200", 0x2909)) is None


def test_nvml_pci_device_id_unpacks_device_above_vendor():
    assert device_id_from_nvml(0x233010DE) == 0x2330  # as the H100 SXM5 capture holds it
    assert device_id_from_nvml(590680286) == 0x2335  # the H200 capture's decimal answer
    assert device_id_from_nvml(0x74A11002) is None  # not NVIDIA's


def test_healthy_figures_are_complete_and_sourced():
    for s in SKUS:
        assert s.healthy_tflops and all(v > 0 for v in s.healthy_tflops.values()), s.key
        assert s.healthy_hbm_gbps > 0 and s.healthy_h2d_gbps > 0 and s.healthy_d2h_gbps > 0, s.key
        assert s.healthy_sm_mhz > 0 and s.source, s.key
    # The measured SKUs carry the low ends of shared/measurements/README.md and of the continuous
    # burn of 2026-11-26 (benchmarks/RESULTS.md), the lower per figure: bf16 677.38 on the H100 SXM5
    # (747.1 duty-cycled), tf32 344.91 on the H200 (349.1 on 2026-11-23).
    h100, h200 = BY_KEY["h100-sxm5-80gb"], BY_KEY["h200-sxm-141gb"]
    assert h100.measured and h200.measured
    assert h100.healthy_tflops["bf16"] == 677.38 and h100.healthy_hbm_gbps == 3011
    assert h200.healthy_tflops["tf32"] == 344.91 and h200.healthy_hbm_gbps == 4234 and h200.healthy_sm_mhz == 1794
    # A low end: no healthy rate above what the real part sustained in today's run (its twin), and
    # no loaded clock above the clock it held there.
    for sku, twin in ((h100, H100_SXM5_TWIN), (h200, H200_SXM_TWIN)):
        assert sku.healthy_tflops.keys() == twin.tflops.keys(), sku.key
        assert all(sku.healthy_tflops[d] <= twin.tflops[d] for d in twin.tflops), sku.key
        assert all(mhz <= twin.sm_mhz[d] for d, mhz in sku.loaded_sm_mhz.items()), sku.key
    assert (h100.loaded_clock(["fp16"]), h200.loaded_clock(["fp16"])) == (1291, 1399)
