"""On-chip memory (SRAM) ECC: NVML's counters by location, read once in the backend, and the
health.sram_ecc verdict at each of its limits (Azure's floors: any uncorrectable error fails, more
than 10,000 corrected fail), with the simulated faults found end to end."""

import pynvml
import pytest

from nodeqc.backends.base import GpuCounters
from nodeqc.backends.nvml import NvmlBackend
from nodeqc.backends.nvml_replay import ReplayNvml
from nodeqc.checks import health
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA

from conftest import whole
from test_health_checks import H100, gpu, loaded, telemetry


def onchip(corrected=0, uncorrected=0, where="sram"):
    return GpuCounters(onchip_ecc_corrected=corrected, onchip_ecc_uncorrected=uncorrected,
                       onchip_ecc_locations=where)


@pytest.mark.parametrize("start, end, verdict, code", [
    ((0, 0), (0, 0), Verdict.PASS, None),
    ((0, 0), (0, 1), Verdict.FAIL, "SRAM_ECC_UNCORRECTABLE"),  # any uncorrectable fails
    ((1000, 0), (1000, 0), Verdict.PASS, None),  # lifetime count at the warning level, none new
    ((1001, 0), (1001, 0), Verdict.WARN, "SRAM_ECC_CORRECTED"),
    ((10000, 0), (10000, 0), Verdict.WARN, "SRAM_ECC_CORRECTED"),
    ((10001, 0), (10001, 0), Verdict.FAIL, "SRAM_ECC_CORRECTED"),
    ((0, 0), (1, 0), Verdict.WARN, "SRAM_ECC_CORRECTED"),  # any that appears during the run warns
    ((0, 0), (100, 0), Verdict.WARN, "SRAM_ECC_CORRECTED"),
    ((0, 0), (101, 0), Verdict.FAIL, "SRAM_ECC_CORRECTED"),
    ((50, 0), (101, 3), Verdict.FAIL, "SRAM_ECC_UNCORRECTABLE"),  # the worse code leads
])
def test_sram_ecc_at_its_limits(start, end, verdict, code):
    r = health.sram_ecc(gpu(), telemetry([loaded()], (onchip(*start), onchip(*end))), H100)
    assert (r.verdict, r.code) == (verdict, code)
    assert r.values["uncorrected"].value == end[1] and r.values["corrected_growth"].value == end[0] - start[0]


def test_no_counters_or_ecc_off_is_skipped_with_the_reason():
    r = health.sram_ecc(gpu(), telemetry([loaded()], (GpuCounters(), GpuCounters())), H100)
    assert r.verdict is Verdict.SKIP and "not available" in r.message
    r = health.sram_ecc(gpu(ecc_enabled=False), telemetry([loaded()], (onchip(), onchip(0, 5))), H100)
    assert r.verdict is Verdict.SKIP and "ECC is disabled" in r.message


SRAM_LIMITS = [("max_sram_ecc_dbe", "max", 0, 0, ""), ("max_sram_ecc_sbe", "max", 10000, 1000, ""),
               ("max_sram_ecc_sbe_growth", "max", 100, 0, "")]


def test_whole_results_sram_ecc():
    tel = telemetry([loaded()], (onchip(5), onchip(5, where="l1,l2,regfile")))
    assert whole(health.sram_ecc(gpu(), tel, H100)) == (
        "health.sram_ecc", "gpu0", "pass", None, "uncorrectable on-chip (SRAM) ECC errors in the GPU's life: 0, limit <= 0",
        {"uncorrected": (0, ""), "corrected": (5, ""), "locations": ("l1,l2,regfile", ""), "corrected_growth": (0, "")},
        "uncorrected", SRAM_LIMITS, {})
    tel = telemetry([loaded()], (onchip(50), onchip(1200, 2)))
    assert whole(health.sram_ecc(gpu(), tel, H100)) == (
        "health.sram_ecc", "gpu0", "fail", "SRAM_ECC_UNCORRECTABLE",
        "uncorrectable on-chip (SRAM) ECC errors in the GPU's life: 2 is above the limit 0; corrected on-chip (SRAM) ECC "
        "errors in the GPU's life: 1200 is above the warning level 1000; corrected on-chip (SRAM) ECC errors during the "
        "run: 1150 is above the limit 100",
        {"uncorrected": (2, ""), "corrected": (1200, ""), "locations": ("sram", ""), "corrected_growth": (1150, "")},
        "uncorrected", SRAM_LIMITS, {})
    # No reading at the start: the lifetime counts are judged, no growth.
    r = health.sram_ecc(gpu(), telemetry([loaded()], (None, onchip(3))), H100)
    assert (r.verdict, sorted(r.values)) == (Verdict.PASS, ["corrected", "locations", "uncorrected"])
    # ECC state unknown (NA) is not "disabled"; no end reading is "not available".
    assert health.sram_ecc(gpu(ecc_enabled=NA), telemetry([loaded()], (onchip(), onchip(0, 1))), H100).verdict is Verdict.FAIL
    r = health.sram_ecc(gpu(), telemetry([loaded()], (onchip(), None)), H100)
    assert whole(r) == ("health.sram_ecc", "gpu0", "skip", None, "on-chip (SRAM) ECC counters not available on this GPU",
                        {}, None, [], {})
    r = health.sram_ecc(gpu(ecc_enabled=False), telemetry([loaded()], (onchip(), onchip(0, 5))), H100)
    assert whole(r) == ("health.sram_ecc", "gpu0", "skip", None,
                        "ECC is disabled, so on-chip memory errors are not counted", {}, None, [], {})


def _backend(counter_answers):
    """An NVML backend over a described device whose on-chip counters answer as given:
    {(error type, location): count}, everything else NotSupported."""
    ecc = {f"{kind},{pynvml.NVML_AGGREGATE_ECC},{loc}": n for (kind, loc), n in counter_answers.items()}
    desc = {"system": {"nvmlSystemGetDriverVersion": "580.159.04", "nvmlSystemGetCudaDriverVersion": 13000},
            "devices": [{"nvmlDeviceGetName": "NVIDIA H100 80GB HBM3",
                         "nvmlDeviceGetMemoryErrorCounter": {"args": ecc}}]}
    b = NvmlBackend(ReplayNvml(desc))
    b.open()
    return b


C, U = pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED


def test_hopper_answers_sram_alone_as_the_h100_did():
    """The H100 SXM5 answered SRAM (and DRAM, device memory) and NotSupported for L1, L2, register
    file, texture and CBU (shared/measurements/README.md)."""
    sram = pynvml.NVML_MEMORY_LOCATION_SRAM
    c = _backend({(C, sram): 7, (U, sram): 0}).counters(0)
    assert (c.onchip_ecc_corrected, c.onchip_ecc_uncorrected, c.onchip_ecc_locations) == (7, 0, "sram")


def test_older_gpus_sum_their_caches_and_register_file_never_with_sram():
    L1, L2, RF = (pynvml.NVML_MEMORY_LOCATION_L1_CACHE, pynvml.NVML_MEMORY_LOCATION_L2_CACHE,
                  pynvml.NVML_MEMORY_LOCATION_REGISTER_FILE)
    c = _backend({(C, L1): 1, (U, L1): 0, (C, L2): 2, (U, L2): 1, (C, RF): 4, (U, RF): 0}).counters(0)
    assert (c.onchip_ecc_corrected, c.onchip_ecc_uncorrected, c.onchip_ecc_locations) == (7, 1, "l1,l2,register_file")


def test_no_location_answers_means_not_available():
    c = _backend({}).counters(0)
    assert c.onchip_ecc_uncorrected is NA and c.onchip_ecc_locations is NA


@pytest.mark.parametrize("fault, verdict, code", [
    ("gpu1:sram_dbe=1", "fail", "SRAM_ECC_UNCORRECTABLE"),
    ("gpu1:sram_sbe=5", "warn", "SRAM_ECC_CORRECTED"),
])
def test_simulated_on_chip_errors_are_found_on_the_right_gpu(tmp_path, run_cli, fault, verdict, code):
    import json

    p = run_cli("--headless", "--profile", "h100", "--simulate", "hgx-h100", "--quick", "--gpus", "8",
                "--only", "health.sram_ecc", "--inject", fault, "--out", str(tmp_path))
    report = json.loads(open(p.stdout.strip().splitlines()[-1]).read())
    import base64

    checks = json.loads(base64.b64decode(report["payload"]))["predicate"]["checks"]
    found = {(c["subject"], c["verdict"], c["code"]) for c in checks if c["name"] == "health.sram_ecc"
             and c["verdict"] != "pass"}
    assert found == {("gpu1", verdict, code)}
    assert p.returncode == (1 if verdict == "fail" else 0)
