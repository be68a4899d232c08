"""Health verdicts from telemetry, each at its boundaries. The telemetry here is built by hand, as a
sampler would have accumulated it, so every verdict is exercised without hardware."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import whole
from nodeqc.backends.base import REASON_BITS, GpuCounters, GpuInfo, GpuSample
from nodeqc.checks import health
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.na import NA
from nodeqc.spec.profile import load_profile
from nodeqc.work.telemetry import FAILING_REASONS, GpuTelemetry

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


def test_temperature_not_available_under_load_could_not_be_judged():
    r = health.temperature(gpu(), telemetry([loaded(temp_c=NA, mem_temp_c=NA)]), H100)
    assert (r.verdict, r.code) == (Verdict.ERROR, "NOT_READ")


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
    r = health.pcie_link(gpu(pcie_max_gen=4, pcie_max_width=16), telemetry([loaded(pcie_gen=4, pcie_width=8)]), GENERIC)
    assert (r.verdict, r.code, r.message) == (Verdict.FAIL, "PCIE_WIDTH", "link Gen4 x8 under load, expected x16")


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


@pytest.mark.parametrize("minutes, grown, verdict, said", [
    (1.5, 81, Verdict.FAIL, "PCIe replay counter grew by 81 is above the limit 80; 54.0 a minute over 1.5 min"),
    # Counters read at the run's ends only (no readings between): over the count fails however slow.
    (480, 200, Verdict.FAIL, "PCIe replay counter grew by 200 is above the limit 80; 0.4 a minute over 480.0 min"),
    (1, 8, Verdict.PASS, "PCIe replay counter grew by 8, limit <= 80, warn above 8; 8.0 a minute over 1.0 min"),
    (2, 9, Verdict.WARN, "PCIe replay counter grew by 9 is above the warning level 8; 4.5 a minute over 2.0 min"),
    (0.5, 8, Verdict.PASS, "PCIe replay counter grew by 8, limit <= 80, warn above 8"),  # under a minute: no rate
])
def test_pcie_replays_are_judged_by_count_with_the_rate_beside_it(minutes, grown, verdict, said):
    """The 2026-11-28 advice review: the count was a whole run's, quick or an 8-hour burn-in, with
    nothing to tell a slow count from a fast one; the rate a minute is said beside it."""
    tel = telemetry([loaded()], counters(pcie_replay=5 + grown))
    tel.counters_start_t, tel.counters_end_t = 10.0, 10.0 + minutes * 60
    r = health.pcie_replay(gpu(), tel, H100)
    assert r.verdict is verdict and r.message.startswith(said), r.message
    assert r.code == (None if verdict is Verdict.PASS else "PCIE_REPLAY")
    assert ("per_min" in r.values) is (minutes >= 1)


def read_as_the_sampler_does(tel: GpuTelemetry, counts: list[tuple[float, int]]) -> GpuTelemetry:
    """The replay counter read at each (t, count), the first and last as the run's ends."""
    for t, n in counts:
        tel.pcie_replay_span.add(t, n)
    (tel.counters_start_t, first), (tel.counters_end_t, last) = counts[0], counts[-1]
    tel.counters_start, tel.counters_end = GpuCounters(pcie_replay=first), GpuCounters(pcie_replay=last)
    return tel


def test_a_burn_in_of_hours_is_judged_by_its_worst_ten_minutes():
    """Held to the whole count, eight hours of a healthy trickle (200 replays, 0.4 a minute) failed
    as DCGM fails 80 in one test window; read every 5 s as the run goes, its worst ten minutes hold 5."""
    trickle = [(t, 5 + int(t * 200 / 28_800)) for t in range(0, 28_801, 5)]
    r = health.pcie_replay(gpu(), read_as_the_sampler_does(GpuTelemetry(0), trickle), H100)
    assert (r.verdict, r.code) == (Verdict.PASS, None)
    assert r.message == ("PCIe replay counter in its worst 10 min (120 s to 720 s of the run) grew by 5, "
                         "limit <= 80, warn above 8; 200 in all, 0.4 a minute over 480.0 min")
    assert (r.key, r.values["worst_span"].value, r.values["growth"].value) == ("worst_span", 5, 200)
    # The same eight hours with a burst of 81 in four minutes at the sixth hour fail, and say where.
    burst = [(t, n + (81 if t >= 21_840 else min(81, max(0, (t - 21_600) * 81 // 240)))) for t, n in trickle]
    r = health.pcie_replay(gpu(), read_as_the_sampler_does(GpuTelemetry(0), burst), H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "PCIE_REPLAY")
    assert r.message == ("PCIe replay counter in its worst 10 min (21,290 s to 21,890 s of the run) grew by 86 "
                         "is above the limit 80; 281 in all, 0.6 a minute over 480.0 min"), r.message


def test_a_run_within_ten_minutes_is_judged_by_its_whole_count():
    counts = [(t, 5 + t // 5) for t in range(0, 601, 5)]  # 120 replays in exactly ten minutes
    r = health.pcie_replay(gpu(), read_as_the_sampler_does(GpuTelemetry(0), counts), H100)
    assert (r.verdict, r.key, r.values["growth"].value) == (Verdict.FAIL, "growth", 120)
    assert "worst_span" not in r.values


def test_a_count_the_readings_did_not_see_is_judged_whole():
    """Readings that do not hold the run's whole count (the end counters read past them) leave no
    span to trust: the whole count judges."""
    tel = read_as_the_sampler_does(GpuTelemetry(0), [(t, 5) for t in range(0, 3_601, 5)])
    tel.counters_end = GpuCounters(pcie_replay=105)
    r = health.pcie_replay(gpu(), tel, H100)
    assert (r.verdict, r.key, r.values["growth"].value) == (Verdict.FAIL, "growth", 100)


def test_the_worst_span_counts_growth_across_a_gap_and_starts_over_after_a_reset():
    span = GpuTelemetry(0).pcie_replay_span
    for t, n in [(0, 0), (5, 1), (2_000, 90), (2_005, 90)]:  # 89 grown while the sampler stalled 33 min
        span.add(t, n)
    assert (span.worst, span.worst_from_s, span.worst_to_s) == (89, 5, 2_000)
    for t, n in [(2_010, 3), (2_015, 50)]:  # the driver reloaded: the counter starts again at 3
        span.add(t, n)
    assert (span.worst, span.grown) == (89, 90 + 47)


@given(st.lists(st.tuples(st.floats(0.1, 900), st.integers(0, 40)), min_size=1, max_size=60))
def test_the_worst_span_is_at_least_any_spans_growth_and_at_most_its_readings(steps):
    """Against every pair of readings: no span of 600 s grew by more than `worst`, and `worst` is the
    growth between two readings of the run."""
    span, t, n, seen = GpuTelemetry(0).pcie_replay_span, 0.0, 0, [(0.0, 0)]
    span.add(0.0, 0)
    for dt, grew in steps:
        t, n = t + dt, n + grew
        span.add(t, n)
        seen.append((t, n))
    pairs = [(b[1] - a[1], b[0] - a[0]) for i, a in enumerate(seen) for b in seen[i:]]
    assert span.worst >= max(g for g, dt in pairs if dt <= span.span_s)
    assert span.worst in {g for g, _ in pairs} and span.grown == n


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


def test_an_xid_is_judged_by_the_catalogue_and_names_its_meaning_and_action():
    tel = telemetry([loaded()])
    assert health.xid(gpu(), tel, H100).verdict is Verdict.PASS
    tel.xids.add({"t_s": 12.5, "code": 79})
    tel.xids.add({"t_s": 13.0, "code": 13})
    r = health.xid(gpu(), tel, H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "XID_REBOOT")  # the fatal one leads
    assert r.message == ("XID 79 (GPU has fallen off the bus) at 12.5 s: fatal, action: reboot; "
                         "XID 13 (graphics engine exception) at 13.0 s: an application's XID during nodeqc's "
                         "known-good work")
    assert [e["fatal"] for e in r.evidence["xids"]] == [True, False]
    assert [e["action"] for e in r.evidence["xids"]] == ["reboot", "restart_app"]


def test_a_lost_gpu_fails():
    tel = telemetry([loaded()])
    assert health.presence(gpu(), tel, H100).verdict is Verdict.PASS
    tel.lost_at_s = 42.0
    r = health.presence(gpu(), tel, H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "GPU_LOST")


# ------------------------------------------------------------------ whole results, field by field
# Name, subject, verdict, code, message, values, key figure, thresholds and evidence of each health
# check, for a passing, a failing and a skipped GPU: what the report and the GUI show, not only the
# verdict (issue 18: mutation testing found these fields unasserted).

TEMP_LIMITS = [("slowdown_margin_c", "min", 0, 5, "C"), ("max_temp_c", "max", 87, 82, "C"),
               ("max_mem_temp_c", "max", 95, 90, "C"), ("mem_max_margin_c", "min", 0, 5, "C")]


def test_whole_results_temperature():
    g3 = gpu(index=3, slot=3)
    assert whole(health.temperature(g3, telemetry([idle(), loaded(temp_c=71.5, mem_temp_c=80)]), H100)) == (
        "health.temperature", "gpu3", "pass", None, "GPU temperature peaked at 71.5 C, 18.5 C below its slowdown",
        {"temp_max": (71.5, "C"), "temp_mean": (50.8, "C"), "mem_temp_max": (80, "C"), "slowdown_margin": (18.5, "C"),
         "mem_max_margin": (15, "C")}, "temp_max", TEMP_LIMITS, {})
    # No slowdown temperature known and no memory reading: judged against the profile alone.
    assert whole(health.temperature(gpu(temp_slowdown_c=NA, temp_mem_max_c=NA), telemetry([loaded(temp_c=71, mem_temp_c=NA)]),
                                    H100)) == (
        "health.temperature", "gpu0", "pass", None, "GPU temperature peaked at 71 C",
        {"temp_max": (71, "C"), "temp_mean": (71, "C"), "mem_temp_max": (NA, "C")}, "temp_max", [TEMP_LIMITS[1]], {})
    # Memory reading but no memory maximum known: the memory ceiling judges, no margin.
    r = health.temperature(gpu(temp_mem_max_c=NA), telemetry([loaded(temp_c=60, mem_temp_c=91)]), H100)
    assert (r.verdict, r.code, "mem_max_margin" in r.values) == (Verdict.WARN, "MEM_TEMP_HIGH", False)
    assert [t.name for t in r.thresholds] == ["slowdown_margin_c", "max_temp_c", "max_mem_temp_c"]
    # Every warning is named, the GPU's own slowdown first.
    assert whole(health.temperature(gpu(), telemetry([loaded(temp_c=86, mem_temp_c=92)]), H100)) == (
        "health.temperature", "gpu0", "warn", "TEMP_SLOWDOWN",
        "GPU temperature peaked at 86 C, only 4 C below its slowdown temperature (90 C; nodeqc asks for 5 C of headroom); "
        "above the profile's warning level 82 C; memory temperature peaked at 92 C is above the warning level 90 C; margin to the "
        "memory's maximum (95 C) 3 C is below the warning level 5 C",
        {"temp_max": (86, "C"), "temp_mean": (86, "C"), "mem_temp_max": (92, "C"), "slowdown_margin": (4, "C"),
         "mem_max_margin": (3, "C")}, "temp_max", TEMP_LIMITS, {})


def test_past_its_slowdown_temperature_the_peak_is_said_first():
    """2026-11-28 review: "margin to the GPU's slowdown temperature (90 C) -2.8 C is below the limit 0 C"
    led the banner; the plot showed a peak of 92.8 C."""
    r = health.temperature(gpu(), telemetry([loaded(temp_c=92.8, mem_temp_c=80)]), H100)
    assert (r.verdict, r.code) == (Verdict.FAIL, "TEMP_SLOWDOWN")
    assert r.message.startswith("GPU temperature peaked at 92.8 C, 2.8 C past its slowdown temperature (90 C; ")
    assert r.message.count("peaked at") == 1 and "above the profile's limit 87 C" in r.message


@pytest.mark.parametrize("mem_peak, verdict", [(90, Verdict.PASS), (90.5, Verdict.WARN), (95, Verdict.WARN),
                                               (95.5, Verdict.FAIL)])
def test_memory_margin_to_its_own_maximum(mem_peak, verdict):
    # The generic profile sets no memory ceiling: the memory's own maximum (95 C), 5 C of margin.
    r = health.temperature(gpu(temp_slowdown_c=NA), telemetry([loaded(temp_c=60, mem_temp_c=mem_peak)]), GENERIC)
    assert (r.verdict, r.code) == (verdict, None if verdict is Verdict.PASS else "MEM_TEMP_HIGH")
    assert r.values["mem_max_margin"].value == pytest.approx(95 - mem_peak)


def test_temperature_seen_only_at_idle_is_skipped_not_passed():
    r = health.temperature(gpu(), telemetry([idle(temp_c=40), idle(temp_c=41)]), H100)
    assert whole(r) == ("health.temperature", "gpu0", "skip", "NO_LOAD",
                        "the GPU was never seen under load, so its temperature under load was not judged (2 idle "
                        "sample(s), peak 41 C)", {}, None, [], {})
    # A hot idle GPU is still judged: only a PASS needs a loaded sample.
    assert health.temperature(gpu(), telemetry([idle(temp_c=88)]), H100).verdict is Verdict.FAIL
    # Under load with no valid reading (2^64-1 C is none, nvml.physical): not watched is no pass, and
    # no skip the run passes over either (the 2026-11-29 fuzzing: such a GPU qualified).
    assert whole(health.temperature(gpu(), telemetry([loaded(temp_c=NA, mem_temp_c=NA)]), H100)) == (
        "health.temperature", "gpu0", "error", "NOT_READ", "the GPU gave no valid temperature reading (not "
        "supported, or values no sensor gives): its heat was not watched", {}, None, [], {})


THROTTLE_LIMIT = [("max_throttle_s", "max", 1, 0, "s")]


def test_whole_results_throttle():
    assert whole(health.throttle(gpu(), throttled(REASON_BITS["sw_power_cap"], 6), H100)) == (
        "health.throttle", "gpu0", "pass", None,
        "no thermal, HW-slowdown or power-brake throttling; power-capped for 1.5 s (normal under full load, not a fault)",
        {"throttle_s": (0, "s"), "power_cap_s": (1.5, "s")}, "throttle_s", THROTTLE_LIMIT,
        {"onsets": {"events": [{"t_s": 0.25, "reasons": ["sw_power_cap"], "temp_c": 60, "sm_clock_mhz": 1980}],
                    "not_kept": 0}})
    both = REASON_BITS["hw_thermal"] | REASON_BITS["hw_slowdown"]
    assert whole(health.throttle(gpu(), throttled(both, 6), H100)) == (
        "health.throttle", "gpu0", "fail", "THROTTLE_THERMAL", "clocks cut (hw_thermal, hw_slowdown) for 3 s is above the limit 1 s",
        {"throttle_s": (3, "s"), "power_cap_s": (0, "s"), "hw_slowdown_s": (1.5, "s"), "hw_thermal_s": (1.5, "s")},
        "throttle_s", THROTTLE_LIMIT,
        {"onsets": {"events": [{"t_s": 0.25, "reasons": ["hw_slowdown", "hw_thermal"], "temp_c": 60, "sm_clock_mhz": 1980}],
                    "not_kept": 0}})
    r = health.throttle(gpu(), throttled(REASON_BITS["hw_slowdown"], 2), H100)
    assert (r.verdict, r.message) == (Verdict.WARN, "clocks cut (hw_slowdown) for 0.5 s is above the warning level 0 s")
    assert "power-capped" not in health.throttle(gpu(), throttled(0, 6), H100).message
    assert whole(health.throttle(gpu(), telemetry([]), H100)) == (
        "health.throttle", "gpu0", "skip", None, "no clock-event readings", {}, None, [], {})


def test_throttle_time_is_rounded_to_hundredths():
    tel = telemetry([loaded(), loaded(reasons=REASON_BITS["hw_slowdown"] | REASON_BITS["sw_power_cap"])], step=0.123456)
    r = health.throttle(gpu(), tel, H100)
    assert (r.values["throttle_s"].value, r.values["power_cap_s"].value, r.values["hw_slowdown_s"].value) == (0.12, 0.12, 0.12)


PCIE_LIMITS = [("pcie_width", "min", 16, 16, ""), ("pcie_gen", "min", 5, 5, "")]


def test_whole_results_pcie_link():
    assert whole(health.pcie_link(gpu(), telemetry([idle(), loaded(), loaded(pcie_width=8), idle()]), H100)) == (
        "health.pcie_link", "gpu0", "pass", None, "Gen5 x16 under load (at idle: Gen1 x16)",
        {"link": ("Gen5 x16", ""), "gen": (5, ""), "width": (16, ""), "max_gen": (5, ""), "max_width": (16, ""),
         "min_width_under_load": (8, "")}, "link", PCIE_LIMITS, {})
    assert whole(health.pcie_link(gpu(pcie_max_gen=6, pcie_max_width=32), telemetry([loaded(pcie_gen=4, pcie_width=8)]),
                                  H100)) == (
        "health.pcie_link", "gpu0", "fail", "PCIE_WIDTH",
        "link Gen4 x8 under load, expected x16; link Gen4 x8 under load, expected Gen5",
        {"link": ("Gen4 x8", ""), "gen": (4, ""), "width": (8, ""), "max_gen": (6, ""), "max_width": (32, ""),
         "min_width_under_load": (8, "")}, "link", PCIE_LIMITS, {})
    assert whole(health.pcie_link(gpu(), telemetry([idle(pcie_width=8)]), H100)) == (
        "health.pcie_link", "gpu0", "skip", "NO_LOAD",
        "the GPU was never seen under load, so its link was not judged (at idle: Gen1 x8)", {}, None, [], {})
    # Loaded samples without a valid link reading (2^32-1 read as the link passed): not judged, and said.
    r = health.pcie_link(gpu(), telemetry([loaded(pcie_gen=NA, pcie_width=NA)]), H100)
    assert (r.verdict, r.code) == (Verdict.ERROR, "NOT_READ") and r.message.startswith(
        "the GPU gave no valid link generation or width under load")


def test_pcie_link_with_no_expected_width_judges_the_generation_only():
    # The generic profile and a GPU that does not report its maximum width: only the generation is judged.
    r = health.pcie_link(gpu(pcie_max_gen=5, pcie_max_width=NA), telemetry([loaded(pcie_gen=4, pcie_width=2)]), GENERIC)
    assert (r.verdict, r.code, r.message) == (Verdict.FAIL, "PCIE_GEN", "link Gen4 x2 under load, expected Gen5")
    assert [t.name for t in r.thresholds] == ["pcie_gen"]


def test_whole_results_counters():
    assert whole(health.pcie_replay(gpu(), telemetry([loaded()], counters(pcie_replay=20)), H100)) == (
        "health.pcie_replay", "gpu0", "warn", "PCIE_REPLAY", "PCIe replay counter grew by 15 is above the warning level 8",
        {"growth": (15, ""), "end": (20, "")}, "growth", [("max_pcie_replays", "max", 80, 8, "")], {})
    assert whole(health.pcie_replay(gpu(), telemetry([loaded()], counters(pcie_replay=NA)), H100)) == (
        "health.pcie_replay", "gpu0", "skip", None, "PCIe replay counter not available on this GPU", {}, None, [], {})
    # No reading at the start (or the end) is no growth either.
    tel = telemetry([loaded()], (None, GpuCounters(pcie_replay=3)))
    assert health.pcie_replay(gpu(), tel, H100).verdict is Verdict.SKIP
    tel = telemetry([loaded()], (GpuCounters(pcie_replay=3), None))
    assert health.pcie_replay(gpu(), tel, H100).verdict is Verdict.SKIP


ECC_LIMITS = [("max_ecc_dbe", "max", 0, 0, ""), ("max_ecc_sbe", "max", 100, 0, "")]


def test_whole_results_ecc():
    assert whole(health.ecc(gpu(), telemetry([loaded()], counters()), H100)) == (
        "health.ecc", "gpu0", "pass", None, "uncorrectable ECC errors since the driver loaded: 0, limit <= 0",
        {"dbe": (0, ""), "dbe_growth": (0, ""), "sbe_growth": (0, "")}, "dbe", ECC_LIMITS, {})
    assert whole(health.ecc(gpu(), telemetry([loaded()], counters(ecc_dbe_volatile=2, ecc_sbe_volatile=15)), H100)) == (
        "health.ecc", "gpu0", "fail", "ECC_DBE",
        "uncorrectable ECC errors since the driver loaded: 2 is above the limit 0; corrected ECC errors during the run: 5 "
        "is above the warning level 0", {"dbe": (2, ""), "dbe_growth": (2, ""), "sbe_growth": (5, "")}, "dbe", ECC_LIMITS, {})
    # Uncorrectable errors counted before the run still fail (the driver's volatile count, not the growth).
    tel = telemetry([loaded()], (GpuCounters(ecc_dbe_volatile=1), GpuCounters(ecc_dbe_volatile=1)))
    assert whole(health.ecc(gpu(), tel, H100)) == (
        "health.ecc", "gpu0", "fail", "ECC_DBE", "uncorrectable ECC errors since the driver loaded: 1 is above the limit 0",
        {"dbe": (1, ""), "dbe_growth": (0, "")}, "dbe", ECC_LIMITS, {})
    assert whole(health.ecc(gpu(), telemetry([loaded()], (GpuCounters(), GpuCounters())), H100)) == (
        "health.ecc", "gpu0", "skip", None, "ECC counters not available on this GPU", {}, None, [], {})
    assert health.ecc(gpu(), telemetry([loaded()], (GpuCounters(), None)), H100).verdict is Verdict.SKIP
    assert whole(health.ecc(gpu(ecc_enabled=False), telemetry([loaded()], counters()), H100)) == (
        "health.ecc", "gpu0", "skip", None, "ECC is disabled, so memory errors are not counted (see inventory.ecc_mode)",
        {}, None, [], {})
    # ECC state unknown (NA) is not "disabled": the counters are judged.
    assert health.ecc(gpu(ecc_enabled=NA), telemetry([loaded()], counters(ecc_dbe_volatile=1)), H100).verdict is Verdict.FAIL


def test_whole_results_row_remap():
    end = dict(remap_uncorrectable=3, remap_correctable=7, remap_pending=True, remap_failure=True)
    assert whole(health.row_remap(gpu(), telemetry([loaded()], counters(**end)), H100)) == (
        "health.row_remap", "gpu0", "fail", "ROW_REMAP_PENDING",
        "row remaps are pending (a GPU reset applies them); rows remapped for uncorrectable errors: 3 is above the warning "
        "level 0; a row remap failed",
        {"uncorrectable_remaps": (3, ""), "correctable_remaps": (7, ""), "pending": (True, ""), "failed": (True, "")},
        "uncorrectable_remaps", [("max_row_remaps", "max", 511, 0, "")], {})
    r = health.row_remap(gpu(), telemetry([loaded()], counters()), H100)
    assert (r.verdict, r.message) == (Verdict.PASS, "rows remapped for uncorrectable errors: 0, limit <= 511, warn above 0")
    assert whole(health.row_remap(gpu(), telemetry([loaded()], (GpuCounters(), GpuCounters())), H100)) == (
        "health.row_remap", "gpu0", "skip", None, "row remapping not reported by NVML on this GPU",
        {}, None, [], {})
    assert health.row_remap(gpu(), telemetry([loaded()], (GpuCounters(), None)), H100).verdict is Verdict.SKIP


def test_whole_results_retired_pages():
    start = GpuCounters(retired_sbe=0, retired_dbe=0, retired_pending=False)
    end = GpuCounters(retired_sbe=2, retired_dbe=1, retired_pending=True)
    assert whole(health.retired_pages(gpu(), telemetry([loaded()], (start, end)), H100)) == (
        "health.retired_pages", "gpu0", "fail", "RETIRED_PAGES_PENDING",
        "page retirement is pending (needs a reboot); retired pages: 3 is above the warning level 0",
        {"retired": (3, ""), "retired_sbe": (2, ""), "retired_dbe": (1, ""), "pending": (True, "")}, "retired",
        [("max_retired_pages", "max", 62, 0, "")], {})
    # Double-bit retirements count toward the total as single-bit ones do (62 + 1 = 63 fails).
    end = GpuCounters(retired_sbe=1, retired_dbe=62, retired_pending=False)
    r = health.retired_pages(gpu(), telemetry([loaded()], (start, end)), H100)
    assert (r.verdict, r.code, r.message) == (Verdict.FAIL, "RETIRED_PAGES", "retired pages: 63 is above the limit 62")
    for end in (GpuCounters(retired_sbe=1, retired_dbe=NA), GpuCounters(retired_sbe=NA, retired_dbe=1), None):
        r = health.retired_pages(gpu(), telemetry([loaded()], (start, end)), H100)
        assert whole(r) == ("health.retired_pages", "gpu0", "skip", None,
                            "page retirement not reported by NVML on this GPU", {}, None, [], {})


def test_whole_results_xid():
    tel = telemetry([loaded()])
    assert whole(health.xid(gpu(), tel, H100)) == (
        "health.xid", "gpu0", "pass", None, "no XID events", {"xids": (0, "")}, "xids", [], {})
    tel.xids.add({"t_s": 12.5, "code": 48})
    assert whole(health.xid(gpu(), tel, H100)) == (
        "health.xid", "gpu0", "fail", "XID_RESET_GPU", "XID 48 (double-bit ECC error) at 12.5 s: fatal, action: reset gpu",
        {"xids": (1, "")}, "xids", [],
        {"xids": [{"t_s": 12.5, "code": 48, "meaning": "double-bit ECC error", "severity": "fatal", "fatal": True,
                   "action": "reset_gpu", "category": "memory", "hardware": True, "nvidia": "WORKFLOW_XID_48"}],
         "not_kept": 0, "catalogue": {"source": "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
                                      "read": "2026-11-27"}})
    # Events past the kept list are counted in the total and said not judged.
    tel.xids.dropped = 4
    r = health.xid(gpu(), tel, H100)
    assert (r.values["xids"].value, r.message, r.evidence["not_kept"]) == (
        5, "XID 48 (double-bit ECC error) at 12.5 s: fatal, action: reset gpu; 4 more XID event(s) not kept, "
        "so not judged", 4)


NVLINK_LIMITS = [("max_nvlink_errors", "max", 0, 0, ""), ("max_nvlink_crc_per_s", "max", 100, 10, "per s")]


def nvlink_counters(**kw) -> GpuCounters:
    return GpuCounters(**{"nvlink_active": 18, "nvlink_replay": 0, "nvlink_recovery": 0, "nvlink_crc": 0, **kw})


def nvlink_telemetry(start, end, span=10.0) -> GpuTelemetry:
    tel = telemetry([loaded()], (start, end))
    tel.counters_start_t, tel.counters_end_t = 5.0, 5.0 + span
    return tel


@pytest.mark.parametrize("crc, verdict", [(100, Verdict.PASS), (101, Verdict.WARN), (1000, Verdict.WARN), (1001, Verdict.FAIL)])
def test_nvlink_crc_rate_boundaries(crc, verdict):
    # DCGM's rule: CRC errors per second over the counters' span (10 s here); warn above 10/s, fail above 100/s.
    r = health.nvlink(gpu(nvlink_count=18), nvlink_telemetry(nvlink_counters(nvlink_crc=7), nvlink_counters(nvlink_crc=7 + crc)),
                      H100)
    assert (r.verdict, r.code) == (verdict, None if verdict is Verdict.PASS else "NVLINK_ERRORS")
    assert r.values["crc_per_s"].value == pytest.approx(crc / 10)


@pytest.mark.parametrize("replay, recovery, verdict", [(0, 0, Verdict.PASS), (1, 0, Verdict.FAIL), (0, 1, Verdict.FAIL)])
def test_nvlink_any_replay_or_recovery_fails(replay, recovery, verdict):
    end = nvlink_counters(nvlink_replay=5 + replay, nvlink_recovery=2 + recovery)
    r = health.nvlink(gpu(nvlink_count=18), nvlink_telemetry(nvlink_counters(nvlink_replay=5, nvlink_recovery=2), end), H100)
    assert (r.verdict, r.values["replay_recovery"].value) == (verdict, replay + recovery)
    assert r.code == (None if verdict is Verdict.PASS else "NVLINK_ERRORS")


def test_nvlink_crc_rate_over_a_short_span_and_as_shown():
    # Half a second between the readings is still a rate; the rate judged is the one shown (to hundredths):
    # 10.004/s shows as 10/s, at the warning level, not above it.
    g = gpu(nvlink_count=18)
    r = health.nvlink(g, nvlink_telemetry(nvlink_counters(), nvlink_counters(nvlink_crc=60), span=0.5), H100)
    assert (r.verdict, r.values["crc_per_s"].value) == (Verdict.FAIL, 120)
    r = health.nvlink(g, nvlink_telemetry(nvlink_counters(), nvlink_counters(nvlink_crc=10004), span=1000.0), H100)
    assert (r.verdict, r.values["crc_per_s"].value) == (Verdict.PASS, 10)


def test_whole_results_nvlink():
    g = gpu(nvlink_count=18)
    assert whole(health.nvlink(g, nvlink_telemetry(nvlink_counters(), nvlink_counters(nvlink_crc=50)), H100)) == (
        "health.nvlink", "gpu0", "pass", None, "18 of 18 links up, no link errors",
        {"active": (18, ""), "expected": (18, ""), "replay_recovery": (0, ""), "crc_per_s": (5, "/s")}, "active",
        NVLINK_LIMITS, {})
    end = nvlink_counters(nvlink_active=16, nvlink_replay=2, nvlink_recovery=1, nvlink_crc=1500)
    assert whole(health.nvlink(g, nvlink_telemetry(nvlink_counters(), end), H100)) == (
        "health.nvlink", "gpu0", "fail", "NVLINK_DOWN",
        "16 of 18 NVLink links are up; NVLink replays and recoveries during the run: 3 is above the limit 0; NVLink CRC "
        "errors per second: 150 is above the limit 100 per s",
        {"active": (16, ""), "expected": (18, ""), "replay_recovery": (3, ""), "crc_per_s": (150, "/s")}, "active",
        NVLINK_LIMITS, {})
    # A warning leads with itself, not with "no link errors"; the rate is kept to hundredths (printed to 4 figures).
    r = health.nvlink(g, nvlink_telemetry(nvlink_counters(), nvlink_counters(nvlink_crc=1000), span=3.0), H100)
    assert (r.verdict, r.message, r.values["crc_per_s"].value) == (
        Verdict.FAIL, "NVLink CRC errors per second: 333.3 is above the limit 100 per s", 333.33)
    r = health.nvlink(g, nvlink_telemetry(nvlink_counters(), nvlink_counters(nvlink_crc=400), span=8.0), H100)
    assert (r.verdict, r.code, r.message) == (Verdict.WARN, "NVLINK_ERRORS",
                                              "NVLink CRC errors per second: 50 is above the warning level 10 per s")
    # No time between the readings: no rate (never a division by zero), and errors that grew are said,
    # never "no link errors"; no error counters: links only, and said so.
    r = health.nvlink(g, nvlink_telemetry(nvlink_counters(), nvlink_counters(nvlink_crc=5000), span=0.0), H100)
    assert (r.verdict, r.code, sorted(r.values)) == (Verdict.WARN, "NVLINK_ERRORS", ["active", "expected", "replay_recovery"])
    assert r.message == "5000 NVLink CRC errors over no measured time (a watch's clock that stepped back): the rate was not judged"
    r = health.nvlink(g, nvlink_telemetry(GpuCounters(nvlink_active=18), GpuCounters(nvlink_active=18)), H100)
    assert (r.verdict, r.message, sorted(r.values)) == (
        Verdict.PASS, "18 of 18 links up, link error counters not compared (not reported)", ["active", "expected"])
    r = health.nvlink(g, nvlink_telemetry(GpuCounters(nvlink_active=18), GpuCounters(nvlink_active=17)), H100)
    assert (r.verdict, r.code, r.message) == (Verdict.FAIL, "NVLINK_DOWN", "17 of 18 NVLink links are up")


def test_nvlink_expected_links_from_the_profile_over_the_gpu():
    from pathlib import Path

    from nodeqc.spec.profile import Profile
    profile = Profile("t", Path("t.toml"), {"gpu": {"nvlink_links": 18, "max_nvlink_errors": {"fail": 0, "warn": 0}}})
    r = health.nvlink(gpu(nvlink_count=12), nvlink_telemetry(nvlink_counters(), nvlink_counters(nvlink_active=12)), profile)
    assert (r.verdict, r.code, r.message) == (Verdict.FAIL, "NVLINK_DOWN", "12 of 18 NVLink links are up")
    assert [t.name for t in r.thresholds] == ["max_nvlink_errors"]


NVLINK_NOT_APPLICABLE = ("NVLINK_NA", "not applicable: the GPU reports no NVLink and the profile asks for none")
NVLINK_NOT_REPORTED = (None, "NVLink links or counters not reported on this GPU")


@pytest.mark.parametrize("count, end, said", [
    (NA, nvlink_counters(), NVLINK_NOT_APPLICABLE),  # no link count from NVML (an SXM GPU alone in a VM)
    (0, nvlink_counters(), NVLINK_NOT_APPLICABLE),  # a PCIe card
    (18, GpuCounters(), NVLINK_NOT_REPORTED),  # links, but their state not read: a check not run
    (18, None, NVLINK_NOT_REPORTED)])
def test_no_nvlink_is_not_applicable_and_links_not_read_are_not_run(count, end, said):
    r = health.nvlink(gpu(nvlink_count=count), nvlink_telemetry(nvlink_counters(), end), H100)
    assert whole(r) == ("health.nvlink", "gpu0", "skip", *said, {}, None, [], {})


def test_a_profile_asking_for_nvlink_fails_a_gpu_that_reports_none():
    """hgx-h100 asks for 18 links: a GPU that reports none is no NVLink node's GPU, never 'not
    applicable' as on a PCIe card. It was a check not run, which passed the node (the 2026-11-28
    advice review; DCGM's issue 198). Where the counters were not read at all, it is not run."""
    hgx = load_profile("hgx-h100")
    for count in (0, NA):
        r = health.nvlink(gpu(nvlink_count=count), nvlink_telemetry(nvlink_counters(), GpuCounters()), hgx)
        assert whole(r) == ("health.nvlink", "gpu0", "fail", "NVLINK_DOWN",
                            "the profile expects 18 NVLink links and the GPU reports none (NVML: not supported on "
                            "this GPU)", {"expected": (18, "")}, "expected", [], {})
        unread = health.nvlink(gpu(nvlink_count=count), nvlink_telemetry(nvlink_counters(), None), hgx)
        assert whole(unread) == ("health.nvlink", "gpu0", "skip", *NVLINK_NOT_REPORTED, {}, None, [], {})


def test_memory_repair_of_another_generation_names_its_check_and_gpu():
    unanswered = telemetry([loaded()], (GpuCounters(), GpuCounters()))
    for check, cc, code in ((health.retired_pages, "9.0", "PAGE_RETIREMENT_NA"), (health.row_remap, "7.0", "ROW_REMAP_NA")):
        r = check(gpu(index=3, slot=3, compute_capability=cc), unanswered, H100)
        assert (r.name, r.subject, r.verdict, r.code) == (f"health.{check.__name__}", "gpu3", Verdict.SKIP, code)


def test_whole_results_presence():
    tel = telemetry([loaded()])
    assert whole(health.presence(gpu(), tel, H100)) == (
        "health.gpu_lost", "gpu0", "pass", None, f"answered all {tel.samples} readings", {}, None, [], {})
    # What was watched, never "the whole run" (issue 24: a run cut short claimed it)
    tel.counters_start_t, tel.counters_end_t = 0.5, 12.0
    assert health.presence(gpu(), tel, H100).message == f"answered all {tel.samples} readings from 0.5 s to 12 s into the run"
    tel.lost_at_s = 42.5
    assert whole(health.presence(gpu(), tel, H100)) == (
        "health.gpu_lost", "gpu0", "fail", "GPU_LOST", "stopped answering 42.5 s into the run (fell off the bus)",
        {"lost_at": (42.5, "s")}, "lost_at", [], {})


def test_health_results_run_every_check_for_every_gpu_in_order():
    gpus = [gpu(index=0, slot=0), gpu(index=1, slot=1, uuid="GPU-y")]
    tels = {0: telemetry([loaded()], counters()), 1: telemetry([loaded()], counters())}
    tels[1].lost_at_s = 3.0
    results = health.health_results(gpus, tels, H100)
    names = [c(gpus[0], tels[0], H100).name for c in health.HEALTH_CHECKS]
    assert [(r.name, r.subject) for r in results] == [(n, s) for n in names for s in ("gpu0", "gpu1")]
    assert names[0] == "health.gpu_lost" and len(names) == 11
    assert [r.verdict for r in results[:2]] == [Verdict.PASS, Verdict.FAIL]


def test_margins_are_judged_as_shown_to_a_tenth():
    # 90 - 85.04 = 4.96 C shows as 5 C: at the warning level, not inside it (the figure judged is the one shown).
    r = health.temperature(gpu(temp_mem_max_c=NA), telemetry([loaded(temp_c=85.04, mem_temp_c=NA)]), GENERIC)
    assert (r.verdict, r.values["slowdown_margin"].value) == (Verdict.PASS, 5.0)
    r = health.temperature(gpu(temp_slowdown_c=NA), telemetry([loaded(temp_c=60, mem_temp_c=90.04)]), GENERIC)
    assert (r.verdict, r.values["mem_max_margin"].value) == (Verdict.PASS, 5.0)
    r = health.temperature(gpu(), telemetry([loaded(temp_c=71.26, mem_temp_c=80.13)]), GENERIC)
    assert (r.values["slowdown_margin"].value, r.values["mem_max_margin"].value) == (18.7, 14.9)


def test_a_short_power_cap_is_still_reported():
    r = health.throttle(gpu(), throttled(REASON_BITS["sw_power_cap"], 2), H100)  # 0.5 s
    assert r.message == "no thermal, HW-slowdown or power-brake throttling; power-capped for 0.5 s (normal under full load, not a fault)"


def test_a_replay_names_the_capture_only_in_a_skip_for_want_of_an_answer():
    from nodeqc.checks.common import IN_THE_CAPTURE, as_replayed

    lacking = CheckResult("health.ecc", "gpu0", Verdict.SKIP, "ECC counters not available on this GPU")
    assert as_replayed(lacking).message == f"ECC counters not available {IN_THE_CAPTURE}"
    assert as_replayed(lacking).verdict is Verdict.SKIP and lacking.message.endswith("on this GPU")  # a copy
    kept = [CheckResult("gpu.processes", "gpu0", Verdict.PASS, "no other compute process on this GPU"),
            CheckResult("health.ecc", "gpu0", Verdict.SKIP, "ECC is disabled, so memory errors are not counted")]
    assert [as_replayed(r) for r in kept] == kept


def test_throttle_is_not_judged_from_no_reason_read_under_load():
    """"No throttling" was said of a GPU whose reasons NVML never gave, or that was never under load
    (2026-11-28 audit): nothing seen is no pass."""
    unread = health.throttle(gpu(), telemetry([loaded(reasons=NA)] * 10), H100)
    assert (unread.verdict, unread.code) == (Verdict.SKIP, "NO_LOAD")
    assert unread.message == ("none of its 10 sample(s) under load read the clock-event reasons, so throttling "
                              "under load was not judged")
    never = health.throttle(gpu(), telemetry([idle()] * 10), H100)
    assert (never.verdict, never.code) == (Verdict.SKIP, "NO_LOAD") and never.message.startswith(
        "the GPU was never seen under load")
    # One sample under load with its reasons read is a judgement; so is a throttle the driver counted
    # (at 0.1 Hz no sample may land in it). The driver does not count HW slowdown: its counters alone
    # cannot say there was none.
    assert health.throttle(gpu(), telemetry([idle()] * 9 + [loaded()]), H100).verdict is Verdict.PASS
    counted = telemetry([idle()] * 10)
    counted.throttle_s["hw_thermal"], counted.throttle_counted = 4.0, ["hw_thermal"]
    assert (health.throttle(gpu(), counted, H100).code) == "THROTTLE_THERMAL"
    quiet = telemetry([idle()] * 10)
    quiet.throttle_s.update({r: 0.0 for r in FAILING_REASONS if r != "hw_slowdown"})
    quiet.throttle_counted = [r for r in FAILING_REASONS if r != "hw_slowdown"]
    assert health.throttle(gpu(), quiet, H100).verdict is Verdict.SKIP


def test_no_xid_is_no_evidence_where_the_driver_gives_no_xid_events():
    """Where NVML refuses XID event registration (some VMs) the run cannot see XIDs: 'no XID events'
    was a pass of nothing. Events that did arrive are still judged."""
    unwatched = telemetry([loaded()])
    unwatched.xids_watched = False
    r = health.xid(gpu(), unwatched, H100)
    assert (r.verdict, r.code) == (Verdict.SKIP, "XID_NOT_WATCHED") and "host.kernel_log" in r.message
    unwatched.xids.add({"t_s": 3.0, "code": 79})
    assert health.xid(gpu(), unwatched, H100).code == "XID_REBOOT"
    assert health.xid(gpu(), telemetry([loaded()]), H100).verdict is Verdict.PASS  # watched, none came


def test_the_nvml_backend_says_which_gpus_xids_it_watches():
    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.backends.nvml_replay import ReplayNvml
    from nvml_descriptions import h100_device, node

    refused = h100_device(1)
    refused["nvmlDeviceRegisterEvents"] = {"error": "NOT_SUPPORTED"}
    backend = NvmlBackend(ReplayNvml(node([h100_device(0), refused])))
    backend.open()
    assert [backend.xids_watched(i) for i in (0, 1)] == [True, False]


def test_a_gpu_never_read_is_not_said_to_have_answered_every_reading():
    never = GpuTelemetry(0)
    r = health.presence(gpu(), never, H100)
    assert r.verdict is Verdict.SKIP and r.message.startswith("no reading of this GPU was taken")
    assert health.presence(gpu(), telemetry([loaded()]), H100).verdict is Verdict.PASS
    counted = GpuTelemetry(0)
    counted.counters_end = GpuCounters()  # its counters answered at the end: it was there
    assert health.presence(gpu(), counted, H100).verdict is Verdict.PASS
