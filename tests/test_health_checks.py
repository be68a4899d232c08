"""Health verdicts from telemetry, each at its boundaries. The telemetry here is built by hand, as a
sampler would have accumulated it, so every verdict is exercised without hardware."""

import pytest

from nodeqc.backends.base import REASON_BITS, GpuCounters, GpuInfo, GpuSample
from nodeqc.checks import health
from nodeqc.model import Verdict
from nodeqc.na import NA
from nodeqc.profile import load_profile
from nodeqc.telemetry import GpuTelemetry

H100 = load_profile("h100")
GENERIC = load_profile("generic")


def gpu(**kw) -> GpuInfo:
    base = dict(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-x", bus_id="0000:1b:00.0", slot=0,
                ecc_enabled=True, pcie_max_gen=5, pcie_max_width=16, temp_slowdown_c=90, temp_mem_max_c=95)
    base.update(kw)
    return GpuInfo(**base)


def telemetry(samples=(), counters=(GpuCounters(), GpuCounters()), step=1.0) -> GpuTelemetry:
    tel = GpuTelemetry(0)
    for n, s in enumerate(samples):
        tel.add(n * step, s)
    tel.counters_start, tel.counters_end = counters
    return tel


def loaded(**kw) -> GpuSample:
    base = dict(temp_c=60, mem_temp_c=65, power_w=650, power_limit_w=700, sm_clock_mhz=1980, util_pct=100,
                reasons=0, pcie_gen=5, pcie_width=16)
    base.update(kw)
    return GpuSample(**base)


def idle(**kw) -> GpuSample:
    base = dict(temp_c=30, mem_temp_c=33, power_w=70, util_pct=0, reasons=REASON_BITS["gpu_idle"], pcie_gen=1, pcie_width=16)
    base.update(kw)
    return GpuSample(**base)


# ------------------------------------------------------------------ temperature (h100: fail > 87, warn > 82)

@pytest.mark.parametrize("peak, verdict, code", [
    (82, Verdict.PASS, None), (82.5, Verdict.WARN, "TEMP_HIGH"), (87, Verdict.WARN, "TEMP_HIGH"),
    (87.1, Verdict.FAIL, "TEMP_HIGH"),
])
def test_temperature_against_the_profile(peak, verdict, code):
    r = health.temperature(gpu(temp_slowdown_c=NA), telemetry([idle(), loaded(temp_c=peak)]), H100)
    assert (r.verdict, r.code) == (verdict, code)
    assert r.values["temp_max"].value == peak


@pytest.mark.parametrize("peak, verdict, code", [
    (70, Verdict.PASS, None), (70.5, Verdict.WARN, "TEMP_SLOWDOWN"), (75, Verdict.WARN, "TEMP_SLOWDOWN"),
    (75.5, Verdict.FAIL, "TEMP_SLOWDOWN"),
])
def test_temperature_against_the_gpus_own_slowdown(peak, verdict, code):
    # The generic profile sets no ceiling: only the GPU's own slowdown (75 C here) judges.
    r = health.temperature(gpu(temp_slowdown_c=75), telemetry([loaded(temp_c=peak)]), GENERIC)
    assert (r.verdict, r.code) == (verdict, code)
    assert r.values["slowdown_margin"].value == pytest.approx(75 - peak)


def test_hot_memory_fails_with_its_own_code():
    r = health.temperature(gpu(), telemetry([loaded(temp_c=60, mem_temp_c=96)]), H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "MEM_TEMP_HIGH")


def test_temperature_not_available_is_skipped():
    r = health.temperature(gpu(), telemetry([loaded(temp_c=NA, mem_temp_c=NA)]), H100)
    assert r.verdict is Verdict.SKIP


# ------------------------------------------------------------------ throttle (fail > 1 s, warn > 0)

def throttled(reasons: int, n: int, step: float = 0.25) -> GpuTelemetry:
    return telemetry([loaded()] + [loaded(reasons=reasons)] * n, step=step)


@pytest.mark.parametrize("reason, code", [
    ("hw_slowdown", "THROTTLE_HW_SLOWDOWN"), ("sw_thermal", "THROTTLE_THERMAL"),
    ("hw_thermal", "THROTTLE_THERMAL"), ("power_brake", "THROTTLE_POWER_BRAKE"),
])
def test_failing_reasons(reason, code):
    r = health.throttle(gpu(), throttled(REASON_BITS[reason], 8), H100)  # 8 x 0.25 s = 2 s
    assert (r.verdict, r.code) == (Verdict.FAIL, code)
    assert r.values["throttle_s"].value == 2.0


@pytest.mark.parametrize("samples, verdict", [(0, Verdict.PASS), (1, Verdict.WARN), (4, Verdict.WARN), (5, Verdict.FAIL)])
def test_throttle_time_boundaries(samples, verdict):
    # Each sample with the bit set counts for the 0.25 s since the last: 4 samples = 1.0 s, at the limit.
    r = health.throttle(gpu(), throttled(REASON_BITS["hw_slowdown"], samples), H100)
    assert r.verdict is verdict


def test_software_power_cap_is_reported_not_failed():
    r = health.throttle(gpu(), throttled(REASON_BITS["sw_power_cap"], 40), H100)
    assert r.verdict is Verdict.PASS
    assert r.values["power_cap_s"].value == 10.0
    assert "power-capped for 10 s" in r.message


def test_reasons_are_a_bitmask_not_a_value():
    # Power cap and power brake together: an equality test against one reason would miss the brake.
    both = REASON_BITS["sw_power_cap"] | REASON_BITS["power_brake"] | REASON_BITS["hw_slowdown"]
    r = health.throttle(gpu(), throttled(both, 8), H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "THROTTLE_POWER_BRAKE")
    assert r.values["power_brake_s"].value == 2.0 and r.values["hw_slowdown_s"].value == 2.0


def test_throttle_onsets_are_recorded_as_events():
    tel = telemetry([loaded(), loaded(reasons=REASON_BITS["hw_thermal"]), loaded(), loaded(reasons=REASON_BITS["hw_thermal"])])
    onsets = tel.throttle_onsets.kept
    assert [o["t_s"] for o in onsets] == [1.0, 3.0] and onsets[0]["reasons"] == ["hw_thermal"]


# ------------------------------------------------------------------ PCIe link under load

def test_link_at_maximum_under_load_passes_though_idle_is_downtrained():
    r = health.pcie_link(gpu(), telemetry([idle(), loaded(), loaded(), idle()]), H100)
    assert r.verdict is Verdict.PASS
    assert "Gen5 x16 under load (at idle: Gen1 x16)" in r.message


def test_idle_link_is_never_judged():
    r = health.pcie_link(gpu(), telemetry([idle(pcie_width=8), idle(pcie_width=8)]), H100)
    assert (r.verdict, r.code) == (Verdict.SKIP, "NO_LOAD")


@pytest.mark.parametrize("gen, width, verdict, code", [
    (5, 16, Verdict.PASS, None), (5, 8, Verdict.FAIL, "PCIE_WIDTH"), (4, 16, Verdict.FAIL, "PCIE_GEN"),
    (3, 4, Verdict.FAIL, "PCIE_WIDTH"),
])
def test_link_trained_below_expected(gen, width, verdict, code):
    r = health.pcie_link(gpu(), telemetry([loaded(pcie_gen=gen, pcie_width=width)]), H100)
    assert (r.verdict, r.code) == (verdict, code)


def test_generic_profile_compares_with_the_devices_own_maximum():
    r = health.pcie_link(gpu(pcie_max_gen=4, pcie_max_width=16), telemetry([loaded(pcie_gen=4, pcie_width=16)]), GENERIC)
    assert r.verdict is Verdict.PASS
    r = health.pcie_link(gpu(pcie_max_gen=4, pcie_max_width=16), telemetry([loaded(pcie_gen=3, pcie_width=16)]), GENERIC)
    assert (r.verdict, r.code) == (Verdict.FAIL, "PCIE_GEN")


# ------------------------------------------------------------------ counters

def counters(**end) -> tuple[GpuCounters, GpuCounters]:
    start = GpuCounters(ecc_sbe_volatile=10, ecc_dbe_volatile=0, pcie_replay=5, remap_correctable=0,
                        remap_uncorrectable=0, remap_pending=False, remap_failure=False)
    return start, GpuCounters(**{**start.__dict__, **end})


@pytest.mark.parametrize("end, verdict", [(5, Verdict.PASS), (13, Verdict.PASS), (14, Verdict.WARN), (85, Verdict.WARN), (86, Verdict.FAIL)])
def test_pcie_replay_growth(end, verdict):
    # generic: fail above 80 replays, warn above 8; the counter started at 5.
    r = health.pcie_replay(gpu(), telemetry([loaded()], counters(pcie_replay=end)), H100)
    assert r.verdict is verdict
    assert r.values["growth"].value == end - 5
    if verdict is not Verdict.PASS:
        assert r.code == "PCIE_REPLAY"


def test_replay_counter_not_supported_is_skipped():
    r = health.pcie_replay(gpu(), telemetry([loaded()], counters(pcie_replay=NA)), H100)
    assert r.verdict is Verdict.SKIP


@pytest.mark.parametrize("dbe, sbe_end, verdict, code", [
    (0, 10, Verdict.PASS, None),
    (0, 11, Verdict.WARN, "ECC_SBE"),
    (0, 110, Verdict.WARN, "ECC_SBE"),
    (0, 111, Verdict.FAIL, "ECC_SBE"),
    (1, 10, Verdict.FAIL, "ECC_DBE"),
    (1, 500, Verdict.FAIL, "ECC_DBE"),  # the worse code leads
])
def test_ecc(dbe, sbe_end, verdict, code):
    r = health.ecc(gpu(), telemetry([loaded()], counters(ecc_dbe_volatile=dbe, ecc_sbe_volatile=sbe_end)), H100)
    assert (r.verdict, r.code) == (verdict, code)


def test_ecc_disabled_is_skipped_and_says_why():
    r = health.ecc(gpu(ecc_enabled=False), telemetry([loaded()], counters()), H100)
    assert r.verdict is Verdict.SKIP and "inventory.ecc_mode" in r.message


@pytest.mark.parametrize("end, verdict, code", [
    (dict(), Verdict.PASS, None),
    (dict(remap_pending=True), Verdict.FAIL, "ROW_REMAP_PENDING"),
    (dict(remap_failure=True), Verdict.FAIL, "ROW_REMAP_FAILED"),
    (dict(remap_uncorrectable=1), Verdict.WARN, "ROW_REMAP_COUNT"),
    (dict(remap_uncorrectable=511), Verdict.WARN, "ROW_REMAP_COUNT"),
    (dict(remap_uncorrectable=512), Verdict.FAIL, "ROW_REMAP_COUNT"),
])
def test_row_remapping(end, verdict, code):
    r = health.row_remap(gpu(), telemetry([loaded()], counters(**end)), H100)
    assert (r.verdict, r.code) == (verdict, code)


def test_pre_ampere_gpus_retire_pages_instead():
    start = GpuCounters(retired_sbe=0, retired_dbe=0, retired_pending=False)
    for total, verdict in ((0, Verdict.PASS), (1, Verdict.WARN), (62, Verdict.WARN), (63, Verdict.FAIL)):
        end = GpuCounters(retired_sbe=total, retired_dbe=0, retired_pending=False)
        r = health.retired_pages(gpu(), telemetry([loaded()], (start, end)), H100)
        assert r.verdict is verdict, total
    pending = GpuCounters(retired_sbe=0, retired_dbe=0, retired_pending=True)
    r = health.retired_pages(gpu(), telemetry([loaded()], (start, pending)), H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "RETIRED_PAGES_PENDING")
    assert health.row_remap(gpu(), telemetry([loaded()], (start, pending)), H100).verdict is Verdict.SKIP
    assert health.retired_pages(gpu(), telemetry([loaded()], counters()), H100).verdict is Verdict.SKIP


@pytest.mark.parametrize("cc,pages,rows", [
    # Ampere and newer remap rows: page retirement does not apply (said once, never "not run").
    # (Their row-remap counters unanswered is a check that did not run.)
    ("9.0", ("PAGE_RETIREMENT_NA", "not applicable: Ampere and newer GPUs remap rows instead of retiring pages"),
     (None, "row remapping not reported by NVML on this GPU")),
    ("8.0", ("PAGE_RETIREMENT_NA", "not applicable: Ampere and newer GPUs remap rows instead of retiring pages"),
     (None, "row remapping not reported by NVML on this GPU")),
    # Volta and Turing retire pages: an unanswered counter there is a check that did not run.
    ("7.0", (None, "page retirement not reported by NVML on this GPU"),
     ("ROW_REMAP_NA", "not applicable: GPUs before Ampere retire pages instead of remapping rows")),
    ("7.5", (None, "page retirement not reported by NVML on this GPU"),
     ("ROW_REMAP_NA", "not applicable: GPUs before Ampere retire pages instead of remapping rows")),
    # A generation nodeqc cannot tell: nothing is claimed to be not applicable.
    (NA, (None, "page retirement not reported by NVML on this GPU"),
     (None, "row remapping not reported by NVML on this GPU")),
])
def test_memory_repair_of_another_generation_is_not_applicable(cc, pages, rows):
    unanswered = telemetry([loaded()], (GpuCounters(), GpuCounters()))  # NVML answered NotSupported to both
    r = health.retired_pages(gpu(compute_capability=cc), unanswered, H100)
    assert (r.verdict, r.code, r.message) == (Verdict.SKIP, *pages)
    remap = health.row_remap(gpu(compute_capability=cc), unanswered, H100)
    assert (remap.verdict, remap.code, remap.message) == (Verdict.SKIP, *rows)
    # Where the counters answer, the check judges them whatever the generation says.
    start = GpuCounters(retired_sbe=0, retired_dbe=0, retired_pending=False)
    end = GpuCounters(retired_sbe=63, retired_dbe=0, retired_pending=False)
    assert health.retired_pages(gpu(compute_capability=cc), telemetry([loaded()], (start, end)), H100).code == \
        "RETIRED_PAGES"


def test_any_xid_fails_and_names_its_meaning():
    tel = telemetry([loaded()])
    assert health.xid(gpu(), tel, H100).verdict is Verdict.PASS
    tel.xids.add({"t_s": 12.5, "code": 79})
    tel.xids.add({"t_s": 13.0, "code": 13})
    r = health.xid(gpu(), tel, H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "XID")
    assert r.message == "XID 79 (GPU has fallen off the bus) at 12.5 s and 1 more"
    assert [e["fatal"] for e in r.evidence["xids"]] == [True, False]


def test_a_lost_gpu_fails():
    tel = telemetry([loaded()])
    assert health.presence(gpu(), tel, H100).verdict is Verdict.PASS
    tel.lost_at_s = 42.0
    r = health.presence(gpu(), tel, H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "GPU_LOST")
