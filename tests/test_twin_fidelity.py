"""Issue 23: the simulated twin against the real GPUs it stands for. The quick runs of a real H100
SXM5 and H200 SXM with today's workloads (tests/fixtures/real-2026-11-26/*-quick-pulsed: the burn
computing the whole of each step, the pulse paced by the GPU's own timing; benchmarks/RESULTS.md,
2026-11-26) and the same
quick runs of the simulated h100-sxm5-80gb and h200-sxm-141gb: every stress figure within 5% of the
real one, the same verdicts the real runs should get (clean on these healthy GPUs, skipped where the
VM had no BMC, EDAC or AER), and the twin's NVML as the real NVML answered (power updated about ten
times a second with an instantaneous reading beside it, per-dtype clocks and power at the limit, a
co-tenant listed)."""

from __future__ import annotations

import base64
import json
import math
import time
from pathlib import Path

import pytest

from conftest import ROOT
from nodeqc.backends import simulated_hardware
from nodeqc.backends.base import REASON_BITS, GpuSample
from nodeqc.core.na import NA
from nodeqc.backends.sim.compute import SimDevice
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.models import HBM_WORK, MEMORY_BOUND_SHARE, MEMTEST_WORK, PLAIN, SIM_GPU_MODELS
from nodeqc.backends.sim.node import SimNode
from nodeqc.backends.sim.physics import CLOCK_STEP_MHZ, NVML_POWER_PERIOD_S, heat_step, quick_load_w
from nodeqc.backends.sim.scenario import sku_scenario
from nodeqc.report.envelope import decode_statement, read_envelope
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.profile import load_for, suggest_profile
from nodeqc.spec.selection import Selection
from nodeqc.work.telemetry import GpuTelemetry

REAL = ROOT / "tests" / "fixtures" / "real-2026-11-26"
LATER = ROOT / "tests" / "fixtures" / "real-2026-11-27"
# The runs the twins were calibrated on (their per-dtype figures are these runs' evidence).
QUICK = {"h100-sxm5-80gb": REAL / "h100-sxm5-quick-pulsed.predicate.json",
         "h200-sxm-141gb": REAL / "h200-sxm-quick-pulsed.predicate.json"}
# Every real quick run the twin is held to: the calibration runs, and a later run of the same code's
# successor on an H100 SXM5 and an H200 SXM (benchmarks/RESULTS.md, 2026-11-27), which the twin
# never saw; and a third H100 SXM5 the same evening, with one worker process kept per GPU for the whole run.
RUNS = [*QUICK.items(), ("h100-sxm5-80gb", LATER / "h100-sxm5-quick.predicate.json"),
        ("h200-sxm-141gb", LATER / "h200-sxm-quick.predicate.json"),
        ("h100-sxm5-80gb", LATER / "h100-sxm5-quick-kept-workers.predicate.json"),
        # The same evening, the copy with a thread a vector kept (1.0 of a device copy), on another
        # H100 SXM5 and an H200 SXM.
        ("h100-sxm5-80gb", LATER / "h100-sxm5-quick-flat-copy.predicate.json"),
        ("h200-sxm-141gb", LATER / "h200-sxm-quick-flat-copy.predicate.json")]
# The HBM copy the check keeps (nodeqc.backends.cupy_compute.STREAM_COPIES): a run whose copy was a
# looping kernel (0.94 of the device copy: every run before 2026-11-27 evening) measured a kernel the
# check no longer uses, so the twin is held to the copy figure of the runs that kept this one.
KEPT_COPY = "stream_copy_flat"


def run_name(path: Path) -> str:
    """'real-2026-11-27/h100-sxm5-quick': the day's folder and the run, which RIGHT and CORRECTED name."""
    return f"{path.parent.name}/{path.name.removesuffix('.predicate.json')}"


TOLERANCE = 0.05
# Figures that healthy real runs spread wider than that: both directions' PCIe copies at once read
# 92.9 and 101.4 GB/s on the same H200 the same day, 94.0 and 96.4 on one H100, 88.7 on another, 87.1
# and 94.5 on two more (2026-11-27 evening): 87.1 to 101.4 over healthy runs, 0.107 below the twin's 96.4.
WIDER = {"bidir_gbps": 0.12}
# nvidia-smi clocks.max.sm on both parts (shared/measurements/2026-11-26).
MAX_SM_MHZ = 1980

# The figures each check reports that the twin must reproduce.
FIGURES = {
    "stress.burn": ("fp64_tflops", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops", "power_w"),
    "stress.power": ("power_w",),
    "stress.hbm_bandwidth": ("copy_gbps", "triad_gbps"),
    "stress.pcie_bandwidth": ("h2d_gbps", "d2h_gbps", "bidir_gbps"),
    "stress.memtest": ("gbps",),
}
# Figures the real run got wrong, and what is right instead. The quick memory test timed its kernels'
# run-time compilation with their first call: 1030.1 GB/s on the H100 and 1589.5 on the H200, whose
# second calls in one process (the benchmark's memtest_second, the same day) ran at 2872.6 and 3921.7.
# (CupyDevice._launch compiles before the clock starts since.)
# On 2026-11-27 the quick memtest read 1472.7 GB/s on the H100: the address-line pass, in the rate's
# time, paid CuPy's kernel compilation in the fresh worker (0.568 s); its sweeps ran at 2860.6
# (benchmarks/memtest_ops.py, the same day; the rate has been the sweeps' alone since).
RIGHT = {("real-2026-11-26/h100-sxm5-quick-pulsed", "h100-sxm5-80gb", "stress.memtest", "gbps"): 2872.6,
         ("real-2026-11-26/h200-sxm-quick-pulsed", "h200-sxm-141gb", "stress.memtest", "gbps"): 3921.7,
         ("real-2026-11-27/h100-sxm5-quick", "h100-sxm5-80gb", "stress.memtest", "gbps"): 2860.6}
# Verdicts the real run got wrong, that the corrected code gives right: both burns warned on fp16 or
# bf16 against floors taken from the earlier, duty-cycled burn (skus.py: the continuous burn's figures
# since); the H100's pulse swung at 100 ms, which that run's code judged in phase only (0 W: NVML's
# readings held through each period) where its level fell 214 W (tests/test_pulse_load.py).
CORRECTED = {("real-2026-11-26/h200-sxm-quick-pulsed", "h200-sxm-141gb", "stress.burn", "gpu0"): "pass",
             ("real-2026-11-26/h100-sxm5-quick-pulsed", "h100-sxm5-80gb", "stress.burn", "gpu0"): "pass",
             ("real-2026-11-26/h100-sxm5-quick-pulsed", "h100-sxm5-80gb", "stress.power_pulse", "gpu0"): "pass"}
# DCGM's diagnostic came after the real runs (issue 28): the twin, without --dcgm, skips it as a
# simulated node, as a real node without DCGM installed skips it. The NIC checks are compared since
# the twin's NIC is the measured VMs' (virtio, no speed or PCIe capability, no iperf3).
NOT_COMPARED = ("dcgm.",)


def _real(path) -> dict:
    return json.loads(path.read_text())


def _run(tmp_path, key: str, faults=(), only=None, time_scale=10.0):
    hw = simulated_hardware(key, [parse_fault(f) for f in faults], time_scale=time_scale)
    hw.mgmt.open()
    gpus = hw.mgmt.gpus()
    hw.mgmt.close()
    profile = load_for(suggest_profile(gpus), gpus)
    assert profile.sku.key == key  # `--profile auto` picks the SKU, as it did on the real machine
    options = RunOptions(profile, create_key(tmp_path / "k.pem"), out_dir=tmp_path, quick=True)
    if only:
        options.selection = Selection.parse([only], None)
    return Runner(options, hw).run()


TWIN_REPORTS: dict[str, Path] = {}  # each twin's quick-run report, as the module's fixture made it


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Each twin's quick run, once for the module (about 15 s each at time scale 10)."""
    out = {}
    for key in QUICK:
        outcome = _run(tmp_path_factory.mktemp(key), key)
        out[key] = {(r.name, r.subject): r for r in outcome.results}
        TWIN_REPORTS[key] = outcome.report_path
    return out


def _telemetry_rows(path: Path) -> list[dict[str, str]]:
    """GPU 0's rows of a real run's telemetry file."""
    import csv
    import gzip

    with gzip.open(path.with_name(path.name.replace(".predicate.json", ".telemetry.csv.gz")), "rt") as f:
        return [r for r in csv.DictReader(f) if r["gpu"] == "0"]


def _replay(path: Path) -> tuple[GpuTelemetry, dict[str, dict]]:
    """A real run's telemetry of GPU 0 read again by today's GpuTelemetry, every sample kept, and
    the run's checks of GPU 0 by name."""
    rows = [(float(r["t_s"]), GpuSample(**{f: NA if r[f] in ("", "NA") else float(r[f]) for f in GpuSample.FIELDS}))
            for r in _telemetry_rows(path)]
    window = GpuTelemetry(0, keep_samples=len(rows))
    for t, s in rows:
        window.add(t, s)
    return window, {c["name"]: c for c in _real(path)["checks"] if c["subject"] == "gpu0"}


def _replayed(path: Path) -> dict[str, GpuTelemetry]:
    """The burn's telemetry (its dtypes' spans together, as the burn judges power) and the power
    test's (the readings between the burn's end and the pulse's start) of a real run, replayed."""
    window, checks = _replay(path)
    spans = [(s["start_s"], s["end_s"]) for s in checks["stress.burn"]["evidence"]["dtypes"].values()]
    pulse = min(p["start_s"] for p in checks["stress.power_pulse"]["evidence"]["periods"])
    power = GpuTelemetry(0)
    for t, s in window.kept_samples:
        if max(end for _, end in spans) < t < pulse:
            power.add(t, s)
    return {"stress.burn": window.within(spans), "stress.power": power}


def _replayed_spans(path: Path) -> dict[str, GpuTelemetry]:
    """Each burn dtype's span of a real run, replayed."""
    window, checks = _replay(path)
    return {d: window.between(m["start_s"], m["end_s"]) for d, m in checks["stress.burn"]["evidence"]["dtypes"].items()}


@pytest.mark.parametrize("key, path", RUNS, ids=lambda v: getattr(v, "parent", None) and run_name(v))
def test_the_real_gpus_held_their_power_limit_and_the_figure_says_so(key, path):
    """NVML's power is the mean of its last second, so each load's first second read it rising (an
    H100 SXM5's stress.power: 238, 359, 536, 651 W, then 691-703). The power figures of the burn and
    the power test are of the readings from a second into each stretch of load (POWER_SETTLE_S): every
    real run held 0.97 of its 700 W limit or more, where the mean of every reading said 0.93-0.98."""
    window, checks = _replay(path)
    replayed = _replayed(path)
    # The replay is the run's own: its burn's mean of every reading is the report's figure.
    assert replayed["stress.burn"].loaded_power_w.mean == pytest.approx(checks["stress.burn"]["values"]["power_w"]["value"], rel=0.005)
    for check in ("stress.burn", "stress.power"):
        held, every = replayed[check].held_power_w, replayed[check].loaded_power_w
        assert held.count >= 4 and held.mean >= 0.97 * 700 and held.mean > every.mean, (check, held.mean, every.mean)
    assert window.power_limit_w == 700


def _figure_cases():
    for key, path in RUNS:
        real = {(c["name"], c["subject"]): c for c in _real(path)["checks"]}
        day = run_name(path)
        replayed = _replayed(path)
        for check, figures in FIGURES.items():
            for figure in figures:
                if figure == "power_w":  # the power held, as the code judges it now (POWER_SETTLE_S)
                    yield pytest.param(key, check, figure, round(replayed[check].held_power_w.mean, 1),
                                       id=f"{day}-{key}-{check}-{figure}")
                    continue
                if (check, figure) == ("stress.hbm_bandwidth", "copy_gbps") and (
                        (real[(check, "gpu0")].get("evidence") or {}).get("copy_kernel", {}).get("kernel") != KEPT_COPY):
                    continue
                value = RIGHT.get((day, key, check, figure), real[(check, "gpu0")]["values"][figure]["value"])
                yield pytest.param(key, check, figure, value, id=f"{day}-{key}-{check}-{figure}")


def test_the_copy_figure_is_held_on_both_parts():
    """The looping copies' runs are left out of the copy figure: the runs of the kept copy hold it."""
    held = {case.values[0] for case in _figure_cases() if case.values[1:3] == ("stress.hbm_bandwidth", "copy_gbps")}
    assert held == set(QUICK)


@pytest.mark.parametrize("key, path", [("h100-sxm5-80gb", LATER / "h100-sxm5-quick-flat-copy.predicate.json"),
                                       ("h200-sxm-141gb", LATER / "h200-sxm-quick-flat-copy.predicate.json")])
def test_the_twin_chooses_its_copy_kernel_as_the_real_part_did(simulated, key, path):
    """The real parts' copy figure says which copy kernel it is of, and every kernel's probe rate;
    the twin's said nothing (stream_copy_choice was None), so that evidence only ever ran on a GPU.
    The twin keeps the real part's kernel, its rates within 5 % of the probe's, and a slow HBM's
    rates are slow alike."""
    real = next(c for c in _real(path)["checks"] if c["name"] == "stress.hbm_bandwidth")["evidence"]["copy_kernel"]
    got = simulated[key][("stress.hbm_bandwidth", "gpu0")].evidence["copy_kernel"]
    assert got["kernel"] == real["kernel"] == KEPT_COPY and set(got["rates_gbps"]) == set(real["rates_gbps"])
    for kernel, rate in real["rates_gbps"].items():
        assert abs(got["rates_gbps"][kernel] - rate) <= TOLERANCE * rate, (kernel, got, real)
    *_, slow = _device(key, ["gpu0:hbm_bw=0.5"])
    slow.stream_setup(1 << 20)
    assert slow.stream_copy_choice()["rates_gbps"][KEPT_COPY] == pytest.approx(0.5 * real["rates_gbps"][KEPT_COPY], rel=0.05)


def test_every_correction_names_a_run_held_here():
    """A correction keyed to a run that is not in RUNS (a renamed fixture) would silently stop applying."""
    runs = {(run_name(path), key) for key, path in RUNS}
    assert {k[:2] for k in (*RIGHT, *CORRECTED)} <= runs

@pytest.mark.slow
@pytest.mark.parametrize("key, check, figure, real", list(_figure_cases()))
def test_every_stress_figure_is_within_5_percent_of_the_real_one(simulated, key, check, figure, real):
    got = simulated[key][(check, "gpu0")].values[figure].value
    assert abs(got - real) <= WIDER.get(figure, TOLERANCE) * real, f"{key} {check} {figure}: simulated {got}, real {real}"


@pytest.mark.slow
@pytest.mark.parametrize("key", QUICK)
def test_the_twins_pulse_swings_as_the_warmed_real_one_did(simulated, key):
    """The real runs' pulse did not pulse (duty 0.006-0.084, each burst one product sized from a cold
    first product): no figure of a pulse to reproduce there. Warmed, the same workload computed
    0.446-0.553 of each period on the H200 (h200-pulse-warmed.jsonl); the twin, with its cold first
    product, computes within the check's 0.35-0.65 at every period it paces in real time, and its
    power swings between its idle and its load at every period from 100 ms."""
    got = simulated[key][("stress.power_pulse", "gpu0")]
    assert got.verdict.value == "pass", got.message
    for entry in got.evidence["load"]:
        if entry.get("pace_judged", True):
            assert 0.35 <= entry["duty"] <= 0.65, entry
        if entry["period_ms"] >= 100:
            assert entry["swing_judged"] and entry["swing_w"] > 0.05 * 700, entry


@pytest.mark.slow
@pytest.mark.parametrize("key, path", RUNS, ids=lambda v: getattr(v, "parent", None) and run_name(v))
def test_the_power_cap_holds_the_same_dtypes_as_on_the_real_gpu(simulated, key, path):
    """NVML said sw_power_cap for 0.91-1.0 of every burn dtype that ran well below the maximum clock,
    on both H100s and the H200; the twin's NVML says the same. fp32 ran at the maximum clock, where
    the 700 W limit is at its edge and cards differ: capped for 0.35 of its span on one H100 (1975
    MHz), 0.75 on another (1949 MHz, 2026-11-27), 0.04 on the H200. There the twin is held to the
    clock, not to a side of the edge."""
    burn = next(c for c in _real(path)["checks"] if (c["name"], c["subject"]) == ("stress.burn", "gpu0"))
    got = simulated[key][("stress.burn", "gpu0")].evidence["dtypes"]

    def held(m):
        return m["throttle_s"].get("sw_power_cap", 0.0) / (m["end_s"] - m["start_s"]) >= 0.5

    real = burn["evidence"]["dtypes"]
    below = {d for d, m in real.items() if m["sm_clock_mhz"] < 0.95 * MAX_SM_MHZ}
    assert below == {"fp64", "tf32", "fp16", "bf16", "fp8"}
    assert all(held(real[d]) for d in below)
    assert all(held(got[d]) for d in below)
    for d in set(real) - below:  # at the edge: the twin at the maximum clock too
        assert got[d]["sm_clock_mhz"] >= 0.95 * MAX_SM_MHZ, (d, got[d])
    assert all(set(m["throttle_s"]) <= {"sw_power_cap"} for m in got.values())


# A dtype's span power against the real runs', as the burn reads it now: from a second into the span
# (POWER_SETTLE_S), past NVML's mean rising from what the set-up before it drew. Every dtype of every
# real run held 650-698 W of its 700 W limit so (the reports' own span figures, of every reading, read
# fp8 at 563-639 W and called it under 0.9 of the limit). The twin may read up to this much outside the
# real runs' range: a span with a handful of readings past its first second leans on them (the H200's
# fp8 had 1-6), and on a loaded host the sampler may take none there, when the span's every reading
# speaks, its rising first second with them (the H100 twin's fp8 read 559.7 W of every reading
# beside eight other test modules, 2026-11-29).
SPAN_POWER_SLACK_W = 20.0
SPAN_POWER_SLACK_BELOW_W = 40.0


@pytest.mark.slow
@pytest.mark.parametrize("key", list(QUICK))
def test_each_dtypes_span_power_reads_as_the_real_spans_held(simulated, key):
    """The diagnosis tells a slow dtype held at its power limit (at least 0.9 of it) from one that
    is not: each dtype of the real parts held its limit, fp8 too, and the twin's spans read so."""
    got = simulated[key][("stress.burn", "gpu0")].evidence["dtypes"]
    spans: dict[str, list[float]] = {}
    for k, path in RUNS:
        if k == key:
            for d, w in _replayed_spans(path).items():
                spans.setdefault(d, []).append(round(w.load_power_w.mean, 1))
    assert set(spans) == set(got) and all(len(v) >= 3 for v in spans.values())
    for d, real in spans.items():
        assert min(real) >= 0.9 * 700, (d, real)  # every real span at its limit
        assert min(real) - SPAN_POWER_SLACK_BELOW_W <= got[d]["power_w"] <= max(real) + SPAN_POWER_SLACK_W, (d, got[d]["power_w"], real)


def _span_mem_util(predicate: dict, telemetry: Path) -> dict[str, float]:
    """GPU 0's median memory utilisation (%) in each dtype's span of stress.burn, past its first half
    second (NVML's utilisation looks back a sixth of a second)."""
    import csv
    import gzip
    import statistics

    burn = next(c for c in predicate["checks"] if (c["name"], c["subject"]) == ("stress.burn", "gpu0"))
    with gzip.open(telemetry, "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["gpu"] == "0" and r["mem_util_pct"]]
    out = {}
    for d, m in burn["evidence"]["dtypes"].items():
        seen = [float(r["mem_util_pct"]) for r in rows if m["start_s"] + 0.5 <= float(r["t_s"]) <= m["end_s"]]
        if seen:
            out[d] = statistics.median(seen)
    return out


@pytest.mark.parametrize("key", QUICK)
def test_each_dtypes_memory_utilisation_reads_as_on_the_real_gpu(simulated, key):
    """The 2026-11-29 fidelity audit: the twin's memory read 33 % busy under every dtype's matmul;
    the real parts' differ by dtype and part (H100 fp32 9 %, fp64 21, fp8 37; the H200's 6-25), the
    same from run to run within 2.5 points."""
    real: dict[str, list[float]] = {}
    for k, path in RUNS:
        telemetry = path.with_name(path.name.replace(".predicate.json", ".telemetry.csv.gz"))
        if k == key and telemetry.is_file():
            for d, pct in _span_mem_util(_real(path), telemetry).items():
                real.setdefault(d, []).append(pct)
    report = TWIN_REPORTS[key]
    predicate = json.loads(base64.b64decode(json.loads(report.read_bytes())["payload"]))["predicate"]
    twin = _span_mem_util(predicate, report.with_name(report.name.replace(".report.json", ".telemetry.csv.gz")))
    assert set(twin) == set(real) and all(len(v) >= 3 for v in real.values()), (twin, real)
    for d, pcts in real.items():
        assert min(pcts) - 3 <= twin[d] <= max(pcts) + 3, (d, twin[d], pcts)


def _verdict_cases():
    for key, path in RUNS:
        day = run_name(path)
        for c in _real(path)["checks"]:
            if c["name"].startswith(NOT_COMPARED):
                continue
            want = CORRECTED.get((day, key, c["name"], c["subject"]), c["verdict"])
            yield pytest.param(key, c["name"], c["subject"], want, c["code"] if c["verdict"] == "skip" else None,
                               id=f"{day}-{key}-{c['name']}-{c['subject']}")


@pytest.mark.slow
@pytest.mark.parametrize("key, name, subject, verdict, code", list(_verdict_cases()))
def test_the_twin_gets_the_verdicts_the_real_gpu_should(simulated, key, name, subject, verdict, code):
    """Clean on these healthy GPUs: PASS on the GPU's checks; SKIP where the VM had no BMC, EDAC or
    AER, with the same code."""
    got = simulated[key].get((name, subject))
    assert got is not None, f"{key}: the twin's run has no {name} on {subject}"
    assert got.verdict.value == verdict, got.message
    if code:
        assert got.code == code


@pytest.mark.slow
def test_the_twin_runs_no_check_the_real_run_did_not(simulated):
    for key, path in RUNS:
        real = {(c["name"], c["subject"]) for c in _real(path)["checks"]}
        extra = {k for k in simulated[key] if k not in real and not k[0].startswith(NOT_COMPARED)}
        assert extra == set(), key


# ---------------------------------------------------------------------- a co-tenant, as measured

@pytest.mark.slow
@pytest.mark.parametrize("key, real, only", [
    ("h100-sxm5-80gb", "h100-sxm5-cotenant-burn.predicate.json", "stress.burn"),
    ("h200-sxm-141gb", "h200-sxm-cotenant-gpu-free-burn.predicate.json", "stress.gpu_free,stress.burn"),
    ("h100-sxm5-80gb", "../real-2026-11-27/h100-sxm5-cotenant-burn-only.predicate.json", "stress.burn"),
])
def test_a_cotenant_is_listed_and_judged_as_on_the_real_gpu(tmp_path, key, real, only):
    """A bf16 PyTorch job beside nodeqc: NVML lists it, stress.gpu_free says ERROR GPU_IN_USE and
    the burn does not run, as on the real H100 and H200."""
    outcome = _run(tmp_path, key, ["gpu0:cotenant"], only)
    got = {(r.name, r.subject): (r.verdict.value, r.code) for r in outcome.results}
    want = {(c["name"], c["subject"]): (c["verdict"], c["code"]) for c in _real(REAL / real)["checks"]}
    assert {k: got.get(k) for k in want} == want
    gpu_free = next((r for r in outcome.results if r.name == "stress.gpu_free"), None)
    if gpu_free is not None:
        assert gpu_free.values["processes"].value == 1


# ---------------------------------------------------------------------- the twin's NVML, as measured

def _device(key: str, faults=(), scale=1000.0):
    node = SimNode(sku_scenario(key), [parse_fault(f) for f in faults], time_scale=scale)
    return node, node.management(), SimDevice(node.compute_spec(), 0)


def _steady_power(path: Path) -> dict[str, float]:
    """GPU 0's steady power in a real quick run: the median NVML reading from a second into each
    burn dtype's span to its end, and (PLAIN) into stress.power's load, between the burn and the pulse."""
    import csv
    import gzip
    import statistics

    with gzip.open(path.with_name(path.name.replace(".predicate.json", ".telemetry.csv.gz")), "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["gpu"] == "0"]
    checks = {c["name"]: c for c in _real(path)["checks"] if c["subject"] in ("gpu0",)}
    spans = checks["stress.burn"]["evidence"]["dtypes"]
    out = {d: statistics.median(float(r["power_w"]) for r in rows if s["start_s"] + 1 <= float(r["t_s"]) <= s["end_s"])
           for d, s in spans.items()}
    end = max(s["end_s"] for s in spans.values())
    pulse = min(p["start_s"] for p in checks["stress.power_pulse"]["evidence"]["periods"])
    plain = [r for r in rows if end < float(r["t_s"]) < pulse and float(r["util_pct"]) >= 90]
    out[PLAIN] = statistics.median(float(r["power_w"]) for r in plain if float(r["t_s"]) >= float(plain[0]["t_s"]) + 1)
    return {d: round(w, 1) for d, w in out.items()}


@pytest.mark.parametrize("key", QUICK)
def test_each_dtype_runs_at_its_measured_clock_and_power_at_the_limit(key):
    """Each dtype's mean SM clock in the real burn's evidence (fp8 1272 MHz on the H100 and 1390 on
    the H200, 500-700 MHz below fp32's) and steady power in its telemetry (686-699 W), reproduced by
    the twin's NVML while it computes."""
    twin = SIM_GPU_MODELS[key].twin
    node, mgmt, dev = _device(key)
    dev.set_load(1.0)
    for dtype in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8"):
        dev.matmul_setup(dtype, 1)
        time.sleep(0.15)  # past the NVML power reading's next update
        s = mgmt.sample(0)
        assert abs(s.sm_clock_mhz - twin.sm_mhz[dtype]) < CLOCK_STEP_MHZ, dtype  # a step of NVML's either side
        assert abs(s.power_w - twin.power_w[dtype]) <= TOLERANCE * twin.power_w[dtype], dtype
        assert s.power_w <= 700 * 1.05
    burn = next(c for c in _real(QUICK[key])["checks"] if (c["name"], c["subject"]) == ("stress.burn", "gpu0"))
    real = burn["evidence"]["dtypes"]
    assert {d: twin.sm_mhz[d] for d in real} == {d: m["sm_clock_mhz"] for d, m in real.items()}
    assert {d: twin.power_w[d] for d in (*real, PLAIN)} == _steady_power(QUICK[key])
    assert {d: twin.tflops[d] for d in real} == {d: m["tflops"] for d, m in real.items()}
    dev.busy_step(0.001)  # the plain load (stress.power) holds its own clock
    assert abs(mgmt.sample(0).sm_clock_mhz - twin.sm_mhz[PLAIN]) < CLOCK_STEP_MHZ
    dev.close()


def test_nvml_power_holds_between_updates_about_ten_times_a_second():
    """nvmlDeviceGetPowerUsage gave about 45 distinct readings in 4 s however fast it was polled."""
    node, mgmt, dev = _device("h100-sxm5-80gb", scale=1.0)
    dev.set_load(1.0)
    dev.matmul_setup("bf16", 1)
    readings = []
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        readings.append(mgmt.sample(0).power_w)
        time.sleep(0.002)
    distinct = sum(1 for a, b in zip(readings, readings[1:]) if a != b) + 1
    assert len(readings) > 100 and 5 <= distinct <= 1.0 / NVML_POWER_PERIOD_S + 2, (len(readings), distinct)
    dev.close()


def test_nvml_power_is_the_last_seconds_mean_from_ampere_but_ga100_on_and_the_power_then_before():
    """nvmlDeviceGetPowerUsage: "On Ampere (except GA100) or newer GPUs, the API returns power
    averaged over 1 sec interval. On GA100 and older architectures, instantaneous power is
    returned." A third of a second into a load the H100's reading is still rising (a real one read
    238-536 W there); an A100's, V100's or T4's is the load's; an L40S (Ada) averages as the H100."""
    from nodeqc.backends.sim.scenario import load_scenario

    shares = {}
    for scenario in ("h100", "l40s", "a100", "v100", "t4"):
        node = SimNode(load_scenario(scenario), [], time_scale=20.0)
        mgmt, dev = node.management(), SimDevice(node.compute_spec(), 0)
        idle = mgmt.sample(0).power_w
        dev.set_load(1.0)
        dev.busy_step(0.35)  # of the run's clock
        early = mgmt.sample(0).power_w
        dev.busy_step(2.0)
        loaded = mgmt.sample(0).power_w
        shares[scenario] = (early - idle) / (loaded - idle)
        dev.close()
    assert all(shares[k] < 0.6 for k in ("h100", "l40s")), shares
    assert all(shares[k] > 0.85 for k in ("a100", "v100", "t4")), shares


def test_the_power_cap_counter_is_exact_however_seldom_it_is_read():
    """The driver's sw_power_cap counter counts the time the limit held the clock, whatever the
    readings between: fp32 at the maximum clock is not held, tf32 is (the real H100's evidence), and
    one reading after both gives tf32's time alone; the sampled reasons say the same as they go."""
    node, mgmt, dev = _device("h100-sxm5-80gb", scale=1.0)
    cap = REASON_BITS["sw_power_cap"]
    before = mgmt.counters(0).throttle_ns_sw_power_cap
    dev.set_load(1.0)
    dev.matmul_setup("fp32", 1)
    assert not mgmt.sample(0).reasons & cap
    time.sleep(0.3)
    dev.matmul_setup("tf32", 1)
    assert mgmt.sample(0).reasons & cap
    time.sleep(0.2)
    dev.set_load(0.0)
    assert not mgmt.sample(0).reasons & cap
    time.sleep(0.2)
    held_s = (mgmt.counters(0).throttle_ns_sw_power_cap - before) / 1e9
    assert 0.19 <= held_s < 0.45, held_s  # tf32 alone: with fp32 or the idle after it, 0.5 or more
    dev.close()


def test_the_workers_power_reading_averages_nvmls_window():
    """At a 100 ms period the real H100's readings at each burst's end and each idle half's end were
    the period's mean (488 W at both); at 500 ms they swung 628 W. The twin's worker reads NVML's
    100 ms window the same way."""
    node, mgmt, dev = _device("h100-sxm5-80gb", scale=1.0)
    dev.matmul_setup("bf16", 1)
    ends = {}
    for period in (0.1, 0.5):
        high, low = [], []
        for _ in range(3):
            dev.set_load(1.0)
            time.sleep(period / 2)
            high.append(dev.power_reading()[1])
            dev.set_load(0.0)
            time.sleep(period / 2)
            low.append(dev.power_reading()[1])
        ends[period] = (sum(high) / 3, sum(low) / 3)
    swing_100, swing_500 = (h - lo for h, lo in (ends[0.1], ends[0.5]))
    assert abs(swing_100) < 0.15 * 700 and swing_500 > 0.7 * 700, ends
    dev.close()


@pytest.mark.parametrize("key", QUICK)
def test_the_instantaneous_power_peaks_above_the_limit_while_the_load_swings(key):
    """NVML_FI_DEV_POWER_INSTANT reached 881-951 W against 700 W on the H100 SXM5 under pulsed
    load (up to 795 W on the H200) while the averaged reading stayed at or below the limit."""
    node, mgmt, dev = _device(key)
    dev.set_load(1.0)
    dev.matmul_setup("bf16", 1)
    time.sleep(0.01)  # ten simulated seconds: NVML's reading averages about the last one
    steady = mgmt.sample(0)
    assert abs(steady.power_instant_w - steady.power_w) < 0.05 * 700
    dev.set_pulse(0.1)
    swinging = mgmt.sample(0)
    assert 780 <= swinging.power_instant_w <= 960 and swinging.power_w <= 700 * 1.05
    dev.set_pulse(0.0)
    dev.close()


def test_a_part_that_cannot_draw_does_not_overshoot():
    node, mgmt, dev = _device("h100-sxm5-80gb", ["gpu0:power=300"])
    dev.set_load(1.0)
    dev.set_pulse(0.1)
    assert mgmt.sample(0).power_instant_w <= 300 * 1.05
    dev.set_pulse(0.0)
    dev.close()


def test_the_nvml_backend_reads_the_instantaneous_field_in_watts_or_none():
    import pynvml

    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.backends.nvml_replay import ReplayNvml
    from nodeqc.core.na import NA
    from nvml_descriptions import h100_device, node

    device = h100_device(0)
    fields = dict(device.get("nvmlDeviceGetFieldValues", {}))
    fields[str(pynvml.NVML_FI_DEV_POWER_INSTANT)] = {"nvmlReturn": 0, "valueType": 1, "value": {"uiVal": 951000}}
    device["nvmlDeviceGetFieldValues"] = fields
    backend = NvmlBackend(ReplayNvml(node([device, h100_device(1)])))
    backend.open()
    try:
        assert backend.sample(0).power_instant_w == 951.0
        assert backend.sample(1).power_instant_w is NA  # NotSupported: no reading
    finally:
        backend.close()


def test_the_twin_is_a_vm_as_measured():
    """No BMC answers, no EDAC or AER in sysfs, no NVLink reported; a co-tenant is listed by NVML."""
    node, mgmt, dev = _device("h100-sxm5-80gb", ["gpu0:cotenant"])
    assert sku_scenario("h100-sxm5-80gb").data["host"]["vm"] is True
    assert sku_scenario("a100-pcie-80gb").data["host"]["vm"] is False  # a SKU not measured whole keeps its BMC
    assert mgmt.gpus()[0].nvlink_count is None or not mgmt.gpus()[0].nvlink_count
    assert [p.pid for p in mgmt.processes(0)] == [48151]
    assert not math.isnan(mgmt.sample(0).power_w)


@pytest.mark.parametrize("key, path", [("h100-sxm5-80gb", LATER / "h100-sxm5-quick.predicate.json"),
                                       ("h200-sxm-141gb", LATER / "h200-sxm-quick.predicate.json")])
def test_the_twins_platform_reads_as_the_measured_vms(tmp_path, key, path):
    """The 2026-11-28 audit left it: the measured VMs (a Firecracker guest) read no DMI, no IOMMU, no
    bridge above the GPU or the NIC and no NUMA node, where the twin read a Supermicro board, iommu
    identity, a root port with ACS above each device and NUMA node 0, so a baseline taken on a twin
    held a real VM to a board and bridges it has not. The twin's platform block is now the real one."""
    real = _real(path)["platform"]
    outcome = _run(tmp_path, key, only="inventory.gpu_count")
    twin = decode_statement(read_envelope(outcome.report_path))["predicate"]["platform"]
    assert twin == real, {k: (twin.get(k), real.get(k)) for k in set(twin) | set(real) if twin.get(k) != real.get(k)}


COTENANT_RUNS = {"h100-sxm5-80gb": ROOT / "tests/fixtures/real-2026-11-26/h100-sxm5-cotenant-burn.predicate.json",
                 "h200-sxm-141gb": ROOT / "tests/fixtures/real-2026-11-26/h200-sxm-cotenant-gpu-free-burn.predicate.json"}


@pytest.mark.parametrize("key", QUICK)
def test_a_cotenants_load_reads_in_nvml_as_on_the_real_gpu(key):
    """The 2026-11-28 fidelity audit: while another process burned the GPU and nodeqc ran nothing,
    the real NVML read it loaded in every sample (688-701 W of 700, 100 %, power-capped, 1305-1515
    MHz); the twin showed an idle GPU (70 W, 345 MHz, the idle reason), so the health checks that
    need load skipped where the real run judged them."""
    import statistics

    real = _real(COTENANT_RUNS[key])["telemetry"]["gpus"]["gpu0"]
    assert real["loaded_samples"] == real["samples"] >= 5 and real["throttle_s"]["sw_power_cap"] > 0
    node, mgmt, dev = _device(key, ["gpu0:cotenant"])
    time.sleep(0.01)  # ten simulated seconds
    samples = [mgmt.sample(0) for _ in range(101)]
    dev.close()
    assert {s.util_pct for s in samples} == {100}
    assert all(s.reasons & REASON_BITS["sw_power_cap"] and not s.reasons & REASON_BITS["gpu_idle"] for s in samples)
    power = statistics.median(s.power_w for s in samples)
    assert real["loaded_power_w"]["min"] - 10 <= power <= real["loaded_power_w"]["max"] + 10, (power, real["loaded_power_w"])
    clock = statistics.mean(s.sm_clock_mhz for s in samples)
    assert abs(clock - real["loaded_sm_clock_mhz"]["mean"]) <= 20, (clock, real["loaded_sm_clock_mhz"])


def _memory_bound(row: dict[str, str]) -> bool:
    """Whether a real telemetry sample is of memory-bound work (the copies, the memory test's sweeps)."""
    return bool(row["mem_util_pct"]) and float(row["mem_util_pct"]) >= 100 * MEMORY_BOUND_SHARE


def _temperature_against_power(path: Path, membound_share: float | None = None) -> tuple[list[float], list[float], int]:
    """GPU 0's real temperatures over a quick run, the twin's thermal model's from the run's own idle
    temperature driven by the run's own power readings (the instantaneous field where it was read,
    else NVML's one-second mean; a memory-bound sample's watts at the twin's die heat share, or at
    `membound_share`), and the index of the first sample over 400 W."""
    import csv
    import gzip

    key = "h100-sxm5-80gb" if path.name.startswith("h100") else "h200-sxm-141gb"
    m = SIM_GPU_MODELS[key]
    with gzip.open(path, "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["gpu"] == "0"]
    parts, idle_w, t0 = [0.0, 0.0, 0.0], float(rows[0]["power_w"]), float(rows[0]["t_s"])
    real, twin = [], []
    for r in rows:
        watts = float(r.get("power_instant_w") or r["power_w"])
        share = 1.0
        if _memory_bound(r):
            share = m.die_heat_share(MEMTEST_WORK) if membound_share is None else membound_share
        heat_step(parts, share * max(0.0, (watts - idle_w) / (quick_load_w(m) - m.idle_w)),
                  m.load_temp_c - m.idle_temp_c, m.temp_fast_share, float(r["t_s"]) - t0)
        t0 = float(r["t_s"])
        real.append(float(r["temp_c"]))
        twin.append(float(rows[0]["temp_c"]) + sum(parts))
    return real, twin, next(i for i, r in enumerate(rows) if float(r["power_w"]) > 400)


def _die_errors_under_memory_work(prefix: str, membound_share: float | None = None) -> list[float]:
    """The thermal model's error against the real die (C) at every memory-bound sample of one part's
    real quick runs, the model driven by each run's own power (_temperature_against_power)."""
    import csv
    import gzip

    errors = []
    for path in sorted(ROOT.glob(f"tests/fixtures/real-2026-11-2*/{prefix}*quick*.telemetry.csv.gz")):
        with gzip.open(path, "rt") as f:
            bound = [_memory_bound(r) for r in csv.DictReader(f) if r["gpu"] == "0"]
        real, twin, _ = _temperature_against_power(path, membound_share)
        errors += [t - r for t, r, b in zip(twin, real, bound) if b]
    return errors


@pytest.mark.parametrize("key", QUICK)
def test_memory_bound_watts_heat_the_die_as_little_as_on_the_real_gpu(key):
    """The 2026-11-29 fidelity audit: under the copies and the memory test the real H200's die read
    43-53 C at 300-545 W, the twin's 56-59 C. The twin heated the die by its watts alone, and a
    memory-bound load's watts heat the HBM beside it. Driven by each real run's own power, the
    model now reads the real die at those samples (median error within 1.5 C), where heating by
    the watts alone read it 4.5 C (H100) and 9.9 C (H200) hot."""
    import statistics

    prefix = "h100" if key.startswith("h100") else "h200"
    errors = _die_errors_under_memory_work(prefix)
    assert len(errors) >= 12
    assert abs(statistics.median(errors)) <= 1.5, statistics.median(errors)
    assert statistics.median(_die_errors_under_memory_work(prefix, membound_share=1.0)) > 4  # the old model's
    model = SIM_GPU_MODELS[key]
    assert model.die_heat_share(MEMTEST_WORK) == model.die_heat_share(HBM_WORK) < 1 == model.die_heat_share("bf16")
    # A part never measured takes the estimate (the H100's), not the whole of its watts.
    unmeasured = SIM_GPU_MODELS["a100-sxm4-80gb"]
    assert unmeasured.twin is None and unmeasured.die_heat_share(MEMTEST_WORK) == 0.55


def _die_under_memory_work(telemetry: Path) -> list[float]:
    """GPU 0's temperature at each memory-bound sample of a run's telemetry."""
    import csv
    import gzip

    with gzip.open(telemetry, "rt") as f:
        return [float(r["temp_c"]) for r in csv.DictReader(f) if r["gpu"] == "0" and _memory_bound(r)]


@pytest.mark.parametrize("key", QUICK)
def test_the_twins_die_under_its_copies_reads_as_the_real_one_did(simulated, key):
    """The same, end to end: the twin's own quick run reads its die under the copies and the memory
    test within the real runs' range (H200 43-53 C; the twin read 56-59 C before), its median
    between the runs' medians. The H200's case tells the old twin from the new; the H100's is a
    range check only (its machines differed: 46-49 C in three runs, 61-64 C in two)."""
    import statistics

    prefix = "h100" if key.startswith("h100") else "h200"
    runs = [_die_under_memory_work(p) for p in sorted(ROOT.glob(f"tests/fixtures/real-2026-11-2*/{prefix}*quick*.telemetry.csv.gz"))]
    real = [t for run in runs for t in run]
    medians = [statistics.median(run) for run in runs if run]
    report = TWIN_REPORTS[key]
    twin = _die_under_memory_work(report.with_name(report.name.replace(".report.json", ".telemetry.csv.gz")))
    assert len(twin) >= 3 and len(real) >= 12
    assert min(real) - 2 <= min(twin) and max(twin) <= max(real) + 2, (twin, (min(real), max(real)))
    assert min(medians) - 1 <= statistics.median(twin) <= max(medians) + 1, (twin, medians)


@pytest.mark.parametrize("path", sorted(ROOT.glob("tests/fixtures/real-2026-11-2*/*quick*.telemetry.csv.gz")),
                         ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_the_gpu_temperature_follows_the_power_as_the_real_one_did(path):
    """The 2026-11-28 fidelity audit: the real GPU's temperature followed its power within a sample
    (up 15-21 C in the first half second of load, down as far within one as the load stopped; the
    host copies at 100 % utilisation and 140 W ran 5-20 C below the matmul), where the twin's one
    8 s time constant followed utilisation. Driven by each real run's own power, the twin's model
    follows that run's temperature within a few degrees (the machines' cooling differs: the model
    is their medians), and takes the first half second's step as it did where NVML's instantaneous
    power was read (the one-second mean lags the step)."""
    import statistics

    real, twin, first = _temperature_against_power(path)
    errors = [t - r for t, r in zip(twin, real)]
    assert math.sqrt(statistics.mean(e * e for e in errors)) <= 6.5 and abs(statistics.median(errors)) <= 5
    if "-pulsed" in path.name or "2026-11-27" in str(path):  # the runs that read the instantaneous power
        assert abs((twin[first] - twin[0]) - (real[first] - real[0])) <= 3.5, (twin[first], real[first])


@pytest.mark.parametrize("key", QUICK)
def test_a_burn_in_after_a_quick_run_warms_on_as_the_real_one_did(key):
    """The 2026-11-28 fidelity audit: a 3-minute burn-in after a quick run on a real H100 SXM5 rose
    from 61 to 70 C, first minute's mean to last, and peaked 8 C above that machine's quick run
    (63, then 71 C: shared/measurements/h100-quick.log, h100-burnin-3m.log); the twin's rose 2.5 C,
    under the 5 C a burn-in's drift is told thermal by (diagnosis.DRIFT_TEMP_RISE_C), so a falling
    clock would be called CLOCKS_LOW where the real GPU says THROTTLE_THERMAL. Its sustained load
    settles below the profile's warning (82 C) with room for NVML's noise, an estimate: no real run
    was longer than 4 minutes."""
    import statistics

    from nodeqc.checks.diagnosis import DRIFT_TEMP_RISE_C

    m, dt = SIM_GPU_MODELS[key], 0.25
    parts, rise = [0.0, 0.0, 0.0], m.load_temp_c - m.idle_temp_c

    def run(seconds: float, drive: float) -> list[float]:
        out = []
        for _ in range(int(seconds / dt)):
            heat_step(parts, drive, rise, m.temp_fast_share, dt)
            out.append(m.idle_temp_c + sum(parts))
        return out

    quick = run(45, 1.0) + run(13, 0.3)  # the burn, then the copies, memory test and host copies
    burn_in = run(180, 1.0)
    minute = int(60 / dt)
    assert abs(max(quick) - m.load_temp_c) <= 2, max(quick)
    if key.startswith("h100"):  # the part the burn-in was measured on
        assert statistics.mean(burn_in[-minute:]) - statistics.mean(burn_in[:minute]) >= DRIFT_TEMP_RISE_C
        assert 6 <= max(burn_in) - max(quick) <= 10, (max(quick), max(burn_in))
    else:  # the H200 rose less in its quick runs (22-26 C against 29-38): the same share of it, an estimate
        assert 4 <= max(burn_in) - max(quick) <= 10, (max(quick), max(burn_in))
    assert max(run(3600, 1.0)) < 80


@pytest.mark.parametrize("key", QUICK)
def test_the_twins_temperature_steps_with_its_power_within_a_sample(key):
    """The same audit, through the twin's NVML: half a simulated second into the first load its
    temperature has risen by its fast part (the real ones 15-21 C), half a second after the load
    stops it has fallen about as far (79 to 63 C on the real H100), and the host copies, 100 %
    busy at 140 W, leave it near its idle temperature, as on the real GPUs."""
    m = SIM_GPU_MODELS[key]
    rise = m.load_temp_c - m.idle_temp_c
    node, mgmt, dev = _device(key, scale=10.0)
    idle = mgmt.sample(0).temp_c
    dev.matmul_setup("tf32", 1)
    dev.set_load(1.0)
    time.sleep(0.05)  # half a simulated second, or more on a busy host (the rise only grows)
    loaded = mgmt.sample(0).temp_c
    assert loaded - idle >= 0.8 * m.temp_fast_share * rise - 1, (idle, loaded)
    dev.set_load(0.0)
    time.sleep(0.05)
    assert loaded - mgmt.sample(0).temp_c >= 0.8 * m.temp_fast_share * rise - 1
    node, mgmt, dev = _device(key)
    dev.pcie_setup(64 << 20)
    dev.set_load(1.0)
    time.sleep(0.1)  # a hundred simulated seconds
    s = mgmt.sample(0)
    dev.close()
    assert s.util_pct == 100 and s.temp_c <= m.idle_temp_c + 0.3 * rise, s


def _real_pulse_telemetry(prefix: str) -> dict[float, tuple[list[float], list[float]]]:
    """Per pulse period, GPU 0's power readings and utilisation in the real quick runs of one part,
    from a second and a half into each period's span (past the steady load NVML's mean still holds)."""
    import csv
    import gzip

    out: dict[float, tuple[list[float], list[float]]] = {}
    for path in sorted(ROOT.glob(f"tests/fixtures/real-2026-11-2*/{prefix}*quick*.predicate.json")):
        telemetry = path.with_name(path.name.replace(".predicate.json", ".telemetry.csv.gz"))
        if not telemetry.exists():
            continue
        with gzip.open(telemetry, "rt") as f:
            rows = [r for r in csv.DictReader(f) if r["gpu"] == "0"]
        pulse = next(c for c in _real(path)["checks"] if c["name"] == "stress.power_pulse")
        for span in pulse["evidence"]["periods"]:
            inside = [r for r in rows if span["start_s"] + 1.5 <= float(r["t_s"]) <= span["end_s"]]
            watts, util = out.setdefault(span["period_s"], ([], []))
            watts += [float(r["power_w"]) for r in inside]
            util += [float(r["util_pct"]) for r in inside]
    return out


@pytest.mark.parametrize("key", QUICK)
def test_nvml_averages_the_pulse_as_on_the_real_gpus(key, manual_time):
    """The 2026-11-28 fidelity audit: under the pulse the real NVML's power reading was the mean of
    about the last second (424-531 W on the H100 at every period, not the bursts' 700 W and the gaps'
    130 W by turns) and its utilisation the share of about the last sixth of a second a kernel ran
    (46-59 % at 100 ms); the twin's telemetry read the load of the moment, 0 or 100 %, 130 or 680 W."""
    import statistics

    real = _real_pulse_telemetry("h100" if key.startswith("h100") else "h200")
    node, mgmt, dev = _device(key, scale=10.0)
    dev.matmul_setup("bf16", 1)
    dev.set_load(1.0)
    dev.clock.sleep(2.0)
    dev.set_load(0.0)
    for period in (0.1, 0.5, 1.0):
        dev.set_pulse(period)
        start, utils = dev.clock.now(), []
        while dev.clock.now() - start < 3.0:
            dev.set_load(1.0)
            dev.clock.sleep(period / 2)
            utils.append(mgmt.sample(0).util_pct)  # at the burst's end and the gap's: the phases' extremes
            dev.set_load(0.0)
            dev.clock.sleep(period / 2)
            utils.append(mgmt.sample(0).util_pct)
        watts, util = real[period]
        twin = mgmt.sample(0)
        assert min(watts) * 0.9 <= twin.power_w <= max(watts) * 1.1, (period, twin.power_w, min(watts), max(watts))
        if period == 0.1:  # never the load of the moment (0 or 100 %): a share between, as the real ones
            assert 15 < min(utils[4:]) <= max(utils[4:]) < 85 and 40 <= statistics.median(util) <= 60, (utils, util)
    dev.set_pulse(0.0)
    dev.close()


def test_the_twins_nic_and_tools_are_the_measured_vms():
    """The 2026-11-28 fidelity review: the twin's NIC linked at 10 Gb/s over PCIe Gen3 x1 with MTU 1500,
    so nic.pcie passed where the real one was skipped, and nic.tcp and the PSU reading asked for a peer
    or a BMC where the real VM lacked iperf3 and ipmitool."""
    from nodeqc.backends.sim.node import SimNics
    from nodeqc.backends.sim.platform import SimBmc

    for key, path in RUNS:
        [real] = [n for c in _real(path)["checks"] if c["name"] == "nic.inventory" for n in c["evidence"]["nics"]]
        node = SimNode(sku_scenario(key), [], time_scale=1000.0)
        [nic] = SimNics(node).nics()
        twin = {"name": nic.name, "driver": nic.driver, "mtu": nic.mtu, "speed_mbps": nic.speed_mbps,
                "pcie_gen": nic.pcie_gen, "pcie_width": nic.pcie_width, "pcie_max_gen": nic.pcie_max_gen,
                "bus_id": nic.bus_id}
        assert {k: (None if v is NA else v) for k, v in twin.items()} == {k: real[k] for k in twin}, key
        assert SimNics(node).missing_tool("iperf3") and SimBmc(node).missing()
    node = SimNode(sku_scenario("a100-pcie-80gb"), [], time_scale=1000.0)  # not measured: a generic VM's
    assert SimNics(node).missing_tool("iperf3") is None and SimNics(node).nics()[0].speed_mbps == 10000


def _samples_in_periods(predicate: dict, rows: list[list[str]]) -> list[int]:
    """Telemetry rows of GPU 0 inside each swinging period of the pulse (its evidence's spans)."""
    [pulse] = [c for c in predicate["checks"] if c["name"] == "stress.power_pulse" and c["subject"] == "gpu0"]
    spans = [p for p in pulse["evidence"]["periods"] if p["period_s"] > 0]
    times = [float(r[0]) for r in rows if r[1] == "0"]
    return [sum(1 for t in times if p["start_s"] <= t <= p["end_s"]) for p in spans]


@pytest.mark.slow
def test_the_twin_samples_each_pulse_period_as_densely_as_the_real_gpu(tmp_path):
    """The 2026-11-28 fidelity review: at the twin's time scale of ten, telemetry read 4 times a real
    second gave 0-1 samples in each 2 s period of the pulse, where the real H100 gave 8; a power brake
    in the 20 ms period then passed 2 runs in 3. The sampler reads 4 times a second of the run's clock."""
    import csv
    import gzip

    real_dir = ROOT / "tests" / "fixtures" / "real-2026-11-27"
    real = _real(real_dir / "h100-sxm5-quick.predicate.json")
    with gzip.open(real_dir / "h100-sxm5-quick.telemetry.csv.gz", "rt") as f:
        real_counts = _samples_in_periods(real, list(csv.reader(f))[1:])
    assert min(real_counts) >= 7, real_counts  # 4 Hz over each 2 s period
    outcome = _run(tmp_path, "h100-sxm5-80gb", only="stress.power_pulse")
    predicate = json.loads(base64.b64decode(json.loads(outcome.report_path.read_text())["payload"]))["predicate"]
    [series] = list(tmp_path.rglob("*.telemetry.csv.gz"))
    with gzip.open(series, "rt") as f:
        twin_counts = _samples_in_periods(predicate, list(csv.reader(f))[1:])
    assert len(twin_counts) == len(real_counts)
    assert min(twin_counts) >= 0.75 * min(real_counts), (twin_counts, real_counts)


@pytest.mark.parametrize("key, capture", [("h100-sxm5-80gb", "capture-h100-sxm5-80gb.json"),
                                          ("h200-sxm-141gb", "capture-h200-sxm-141gb.json")])
def test_the_twins_idle_link_memory_clock_and_thresholds_are_the_real_ones(key, capture):
    """The 2026-11-28 fidelity review: at idle the twin dropped its link to Gen1 and halved its memory
    clock, where every real sample of the measured VMs read Gen5 x16 and 2619 / 3201 MHz; its slowdown
    and shutdown were 90 and 92 C, where NVML answered 89 and 95; its memory ran 4 C above the GPU,
    where the real memory ran 4-11 C below it."""
    path = ROOT.parent / "shared" / "measurements" / capture
    if not path.is_file():
        pytest.skip("the captures (shared/measurements) are not here")
    hw = simulated_hardware(key, [], time_scale=1000)
    hw.mgmt.open()
    try:
        [g] = hw.mgmt.gpus()
        idle = hw.mgmt.sample(0)
    finally:
        hw.mgmt.close()
    model = SIM_GPU_MODELS[key]
    assert (idle.pcie_gen, idle.pcie_width) == (5, 16) and idle.mem_clock_mhz == model.mem_mhz
    real = _thresholds(path)
    assert (g.temp_shutdown_c, g.temp_slowdown_c, g.temp_gpu_max_c, g.temp_mem_max_c) == (
        real["0"], real["1"], real["3"], real["2"])
    assert model.twin is not None and model.twin.mem_temp_offset_c < 0


@pytest.mark.parametrize("key, capture", [("h100-sxm5-80gb", "capture-h100-sxm5-80gb.json"),
                                          ("h200-sxm-141gb", "capture-h200-sxm-141gb.json")])
def test_the_twins_firmware_strings_are_the_calibration_machines(key, capture):
    """The 2026-11-28 fidelity review: the twins' VBIOS and board part were made up (96.00.99.00.01 on
    the H100, whose real VBIOS is 96.00.DA.00.0C): a baseline recorded on the twin matched no real part."""
    from nodeqc.backends.sim.node import sim_firmware

    [real] = json.loads((ROOT / "tests" / "fixtures" / capture).read_text())["devices"]
    hw = simulated_hardware(key, [], time_scale=1000)
    hw.mgmt.open()
    try:
        [g] = hw.mgmt.gpus()
    finally:
        hw.mgmt.close()
    assert (g.vbios, g.board_part, sim_firmware(SIM_GPU_MODELS[key], "580.159.04")["inforom_image"]) == (
        real["nvmlDeviceGetVbiosVersion"], real["nvmlDeviceGetBoardPartNumber"], real["nvmlDeviceGetInforomImageVersion"])


def _thresholds(path: Path) -> dict[str, int]:
    """nvmlDeviceGetTemperatureThreshold's answers in a capture, by threshold type."""
    def find(node):
        if isinstance(node, dict):
            if "nvmlDeviceGetTemperatureThreshold" in node:
                return node["nvmlDeviceGetTemperatureThreshold"]["args"]
            for v in node.values():
                if (got := find(v)) is not None:
                    return got
        elif isinstance(node, list):
            for v in node:
                if (got := find(v)) is not None:
                    return got
        return None
    return find(json.loads(path.read_text()))


def _burn_phases(burn: dict) -> dict[str, tuple[float | None, float, int]]:
    """Each dtype of a burn's evidence: (the gap before it, its span, its checks), in the order run."""
    runs = sorted(((k, v) for k, v in burn["evidence"]["dtypes"].items() if "start_s" in v), key=lambda kv: kv[1]["start_s"])
    out, end = {}, None
    for dtype, v in runs:
        out[dtype] = (None if end is None else v["start_s"] - end, v["end_s"] - v["start_s"], v["checks"])
        end = v["end_s"]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("key", QUICK)
def test_each_dtypes_set_up_costs_what_it_cost_on_the_real_gpu(simulated, key):
    """The 2026-11-28 fidelity review: the twin paid 0.3 s before every dtype, where the real burns
    paid 0.02-0.03 s before tf32 and 1.9-3.4 s before fp8 (cuBLASLt's plan), which left fp8 2.5-3.7 s
    of its 5 and 2-3 checks (the floor is 2); the twin's fp8 ran 4.7 s with 5 checks, far from it."""
    real = [_burn_phases(next(c for c in _real(path)["checks"] if c["name"] == "stress.burn" and c["subject"] == "gpu0"))
            for k, path in RUNS if k == key]
    twin = _burn_phases(simulated[key][("stress.burn", "gpu0")].to_dict())
    assert list(twin) == list(real[0])  # the same order
    for dtype, (gap, span, checks) in twin.items():
        if gap is None:
            continue
        gaps = [r[dtype][0] for r in real]
        # The simulated host's own stalls only add, magnified by the time scale of ten: 0.17 s of a
        # simulated second under CI's load (fp32, 0.40 against 0.23), 0.03 s of real time.
        assert min(gaps) - 0.05 <= gap <= max(gaps) + 0.5, (dtype, gap, gaps)
    # And the order they cost in, as on the real parts: tf32 least, then fp32 and fp16, bf16, fp8 most.
    assert twin["tf32"][0] < twin["bf16"][0] < twin["fp8"][0]
    spans, checks = [r["fp8"][1] for r in real], [r["fp8"][2] for r in real]
    assert min(spans) - 0.3 <= twin["fp8"][1] <= max(spans) + 0.3 and twin["fp8"][2] <= max(checks) + 1


@pytest.mark.slow
@pytest.mark.parametrize("key", QUICK)
def test_the_burn_begins_and_ends_when_the_real_ones_did(simulated, key):
    """The 2026-11-29 fidelity review: the twin's burn began 10-18 s into its quick run, where the
    real ones began 2.9-5.0 s in: its workers' start-up (NumPy's import, 0.5-1.3 real seconds) counted
    ten times over on the compressed clock. It now passes at the host's own pace (Clock.host_paced),
    as a real host's start-up does. The rest of the run before the burn (inventory, the idle
    readings) is still the host's time compressed, so a loaded host adds to it: hence the margin after
    (a loaded CI run began the slow-host test's burn at 9.3 s)."""
    def span(burn: dict) -> tuple[float, float]:
        runs = [v for v in burn["evidence"]["dtypes"].values() if "start_s" in v]
        return min(v["start_s"] for v in runs), max(v["end_s"] for v in runs)

    real = [span(next(c for c in _real(path)["checks"] if c["name"] == "stress.burn" and c["subject"] == "gpu0"))
            for _, path in RUNS if any("start_s" in v for v in next(
                c for c in _real(path)["checks"] if c["name"] == "stress.burn")["evidence"]["dtypes"].values())]
    starts, ends = [r[0] for r in real], [r[1] for r in real]
    assert (min(starts), max(starts)) == (2.876, 4.962) and (min(ends), max(ends)) == (33.024, 35.234)
    start, end = span(simulated[key][("stress.burn", "gpu0")].to_dict())
    assert min(starts) - 1.5 <= start <= max(starts) + 6.0, (start, starts)
    assert min(ends) - 3.0 <= end <= max(ends) + 6.0, (end, ends)


def test_a_slow_host_start_up_is_not_counted_ten_times_over(tmp_path, monkeypatch):
    """The same, where the host is slow to start and to end its workers (a cold fork server, a loaded
    CI machine): a second of it is a second of the twin's run, not ten. (The real runs ended 0.4-0.5 s
    after their last step's load.)"""

    from nodeqc.work import workers

    start, close = workers.WorkerPool.start, workers.WorkerPool.close

    def slow_start(self, gpus):
        time.sleep(1.0)
        return start(self, gpus)

    def slow_close(self):
        if self._idle:  # the first close, which ends the workers (a second finds none)
            time.sleep(1.0)
        return close(self)
    monkeypatch.setattr(workers.WorkerPool, "start", slow_start)
    monkeypatch.setattr(workers.WorkerPool, "close", slow_close)
    outcome = _run(tmp_path, "h100-sxm5-80gb", only="stress.burn")
    (burn,) = [r for r in outcome.results if (r.name, r.subject) == ("stress.burn", "gpu0")]
    runs = [v for v in burn.evidence["dtypes"].values() if "start_s" in v]
    first, last = min(v["start_s"] for v in runs), max(v["end_s"] for v in runs)
    # The real runs' latest start, and the margin above: the inventory before it is still the host's time
    # compressed, 9.3 s on a loaded CI run (13.9 unloaded before the fix).
    assert 1.0 <= first <= 4.962 + 6.0, first
    envelope = json.loads(outcome.report_path.read_bytes())
    duration = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["duration_s"]
    assert duration - last <= 4.0, (duration, last)


def test_only_a_simulated_clock_passes_at_the_hosts_pace(manual_time):
    """Clock.host_paced: a simulated node's clock passes at real pace while its host starts up, in
    every process that shares it, and never runs back; a real clock is never held."""
    import multiprocessing

    from nodeqc.backends.base import PACED_FIELDS, Clock

    real = Clock(1.0)
    with real.host_paced():
        manual_time.sleep(2.0)
    assert real.now() == pytest.approx(2.0)
    paced = multiprocessing.get_context("spawn").Array("d", PACED_FIELDS, lock=False)
    sim = Clock(10.0, paced=paced)
    worker = Clock(10.0, sim.origin, paced)  # a worker's copy, as compute_spec gives it
    manual_time.sleep(1.0)
    assert sim.now() == pytest.approx(10.0)
    readings = []
    with sim.host_paced():
        for _ in range(4):
            manual_time.sleep(0.5)
            readings.append(worker.now())
    manual_time.sleep(0.5)
    assert readings == pytest.approx([10.5, 11.0, 11.5, 12.0])
    assert sim.now() == worker.now() == pytest.approx(17.0)


@pytest.mark.slow
@pytest.mark.parametrize("key", QUICK)
def test_the_pulse_power_nvml_reads_swings_as_on_the_real_gpu(simulated, key):
    """The 2026-11-28 fidelity review: the twin's power reading swung 612 W at the 500 ms and 1 s
    periods, where the real ones' moved 0-30 W (NVML averages about a second) and only the
    instantaneous field swung, down to 125-149 W between bursts, not the 72 W idle."""
    real = [next(c for c in _real(path)["checks"] if c["name"] == "stress.power_pulse" and c["subject"] == "gpu0")
            for k, path in RUNS if k == key]
    twin = simulated[key][("stress.power_pulse", "gpu0")].to_dict()
    for check in (*real, twin):
        for period in check["evidence"]["periods"]:
            if period["period_s"] < 0.5:
                continue
            read = period["power_read"]
            # The real readings moved up to 27 W (0.04 of the limit); the twin's first period after
            # another load carries that load into its one-second mean, up to about 75 W.
            assert abs(read["high"]["mean"] - read["low"]["mean"]) < 0.12 * 700, (check is twin, period)
            assert 110 <= read["low_instant"]["min"] <= 170, (check is twin, period)
            assert read["high_instant"]["max"] - read["low_instant"]["min"] > 450, (check is twin, period)


def _pulse_power(predicate: dict, telemetry: Path, after_s: float = 1.5) -> dict[float, list[float]]:
    """NVML's power readings under each period of a quick run's pulse, from `after_s` into its span
    (past the one-second mean's memory of what came before): period -> the readings in W."""
    import csv
    import gzip

    with gzip.open(telemetry, "rt") as f:
        rows = [(float(r["t_s"]), float(r["power_w"])) for r in csv.DictReader(f) if r["gpu"] == "0"]
    pulse = next(c for c in predicate["checks"] if c["name"] == "stress.power_pulse" and c["subject"] == "gpu0")
    out = {}
    for span in pulse["evidence"]["periods"]:
        out[span["period_s"]] = [w for t, w in rows if span["start_s"] + after_s <= t <= span["end_s"]]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("key", QUICK)
def test_a_quick_runs_pulse_reads_in_nvml_as_the_real_ones_did(simulated, key):
    """The 2026-11-29 fidelity review: on the compressed clock the host's time between a burst's
    products (each simulated product's sleep overshooting, its NumPy work) counted as load, and the
    twin's H100 read 690-718 W under the 20 ms period (real 561-690) and 561-571 W under the 100 ms
    one (real 495-555). A burst now lasts as long as its products computed (SimDevice.set_load)."""

    import statistics

    real: dict[float, list[float]] = {}
    for k, path in RUNS:
        telemetry = path.with_name(path.name.replace(".predicate.json", ".telemetry.csv.gz"))
        if k == key and telemetry.is_file():
            for period, watts in _pulse_power(_real(path), telemetry, after_s=1.0).items():
                real.setdefault(period, []).extend(watts)
    report = TWIN_REPORTS[key]
    envelope = json.loads(report.read_bytes())
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    telemetry = report.with_name(report.name.replace(".report.json", ".telemetry.csv.gz"))
    late, twin = _pulse_power(predicate, telemetry), _pulse_power(predicate, telemetry, after_s=1.0)
    pulse = next(c for c in predicate["checks"] if c["name"] == "stress.power_pulse" and c["subject"] == "gpu0")
    skipped = {span["period_s"]: span.get("skipped", 0) for span in pulse["evidence"]["periods"]}
    # Not the 20 ms period: its real 2 ms on the compressed clock are the host's timer's, 459-563 W
    # from run to run on this machine against the real 479-690 (the pulse check judges the GPU's duty).
    for period in (0.1, 0.5, 1.0):
        low, high = min(real[period]), max(real[period])
        # A stalled host skips periods (idle, counted apart as skipped), which lowers the reading: a CI
        # machine under load read 347-437 W at 100 ms with periods skipped. One that starts a burst
        # late shortens the idle half after it, which raises a sample or two: 489.7 W and 571.1 W at
        # 500 ms beside other test modules (2026-11-28, 2026-11-29), 460-465 W alone. So the 100 ms
        # period, where the twin read high for a whole span (561-571 W), is held by its highest
        # reading past 1.5 s; the slower ones by their median reading past 1 s (4-5 samples).
        if period == 0.1:
            assert max(late[period]) <= high + 10, (period, late[period], (low, high))
        else:
            assert statistics.median(twin[period]) <= high + 30, (period, twin[period], (low, high))
        assert skipped[period] or low - 80 <= statistics.median(twin[period]), (period, twin[period], (low, high), skipped)


# The real runs whose telemetry has the instantaneous field beside each sample, per part.
INSTANT_RUNS = {"h100-sxm5-80gb": (LATER / "h100-sxm5-quick-flat-copy.telemetry.csv.gz",
                                   LATER / "h100-sxm5-quick-kept-workers.telemetry.csv.gz"),
                "h200-sxm-141gb": (LATER / "h200-sxm-quick-flat-copy.telemetry.csv.gz",)}


def _memory_work_rows(key: str) -> dict[str, list[dict[str, float]]]:
    """The real samples taken while memory-bound work ran, by what the memory's utilisation says:
    the copies and the memory test's sweeps keep it at 99-100 %, the host copies at 1-5 % with the
    SMs busy (a matmul keeps it at 20-38 %)."""
    import csv
    import gzip

    rows: dict[str, list[dict[str, float]]] = {"memory": [], "host copies": []}
    for path in INSTANT_RUNS[key]:
        with gzip.open(path, "rt") as f:
            for r in csv.DictReader(f):
                if r["gpu"] != "0" or not r["power_instant_w"]:
                    continue
                sample = {k: float(r[k]) for k in ("util_pct", "mem_util_pct", "sm_clock_mhz", "power_instant_w",
                                                   "reasons")}
                if sample["util_pct"] >= 90 and sample["mem_util_pct"] >= 99:
                    rows["memory"].append(sample)
                elif sample["util_pct"] >= 99 and sample["mem_util_pct"] <= 5:
                    rows["host copies"].append(sample)
    return rows


@pytest.mark.parametrize("key", QUICK)
def test_memory_bound_work_runs_at_the_maximum_clock_uncapped_at_the_power_the_real_gpu_drew(key):
    """The 2026-11-28 fidelity review: the twin ran the copies, the memory test and the host copies as
    compute loads, at 0.93 of the limit with the power cap set (650 W, 1794 MHz on the H100). The
    real parts ran them at their maximum clock with no clock-event reason, the copies and sweeps at
    440-750 W and the host copies at 125-155 W; a slow HBM beside a lowered limit was then blamed
    on the limit."""
    from nodeqc.backends.sim.models import PCIE_WORK

    real = _memory_work_rows(key)
    assert len(real["memory"]) >= 4 and len(real["host copies"]) >= 8
    assert {(r["sm_clock_mhz"], r["reasons"]) for rows in real.values() for r in rows} == {(MAX_SM_MHZ, 0)}
    node, mgmt, dev = _device(key)
    for kind, setup, rows in ((HBM_WORK, lambda: dev.stream_setup(1 << 20), real["memory"]),
                              (MEMTEST_WORK, lambda: dev.memtest_setup(0.9), real["memory"]),
                              (PCIE_WORK, lambda: dev.pcie_setup(1 << 20), real["host copies"])):
        setup()
        dev.set_load(1.0)
        time.sleep(0.15)  # past the NVML power reading's next update
        s = mgmt.sample(0)
        watts = [r["power_instant_w"] for r in rows]
        assert (s.sm_clock_mhz, s.reasons, s.util_pct) == (MAX_SM_MHZ, 0, 100), kind
        assert min(watts) * (1 - TOLERANCE) <= s.power_w <= max(watts) * (1 + TOLERANCE), (kind, s.power_w, watts)
        assert s.mem_util_pct == (2 if kind == PCIE_WORK else 100), kind
    # A limit lowered to 500 W holds the matmul, not the copies (460 W on the H100, 550 W on the H200).
    node, mgmt, dev = _device(key, ["gpu0:power_limit=500"])
    dev.stream_setup(1 << 20)
    dev.set_load(1.0)
    hbm_w = SIM_GPU_MODELS[key].twin.power_w[HBM_WORK]
    assert bool(mgmt.sample(0).reasons & REASON_BITS["sw_power_cap"]) is (hbm_w > 500), hbm_w
    dev.matmul_setup("bf16", 1)
    assert mgmt.sample(0).reasons & REASON_BITS["sw_power_cap"]
    dev.close()


def _idle_after_load(path: Path) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """GPU 0's samples with no utilisation before its first load, and after it."""
    import csv
    import gzip

    with gzip.open(path, "rt") as f:
        rows = [{k: float(r[k]) for k in ("util_pct", "sm_clock_mhz", "power_w", "reasons")}
                for r in csv.DictReader(f) if r["gpu"] == "0"]
    first = next(i for i, r in enumerate(rows) if r["util_pct"] > 0)
    return rows[:first], [r for r in rows[first:] if r["util_pct"] == 0]


@pytest.mark.parametrize("path", sorted(ROOT.glob("tests/fixtures/real-2026-11-2*/*quick*.telemetry.csv.gz")),
                         ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_once_loaded_the_twin_idles_warm_as_the_real_gpu_did(path):
    """The 2026-11-28 fidelity review: between steps the twin fell back to 345 MHz, 58-83 W and the idle
    reason; in all nine real quick runs, once loaded, no sample had the idle reason and the clock stayed
    at 1965-1980 MHz (1650 once) at no utilisation, where before the first load it read 345-435 MHz (the median)
    and the idle reason (one run began still warm from the one before it)."""
    before, after = _idle_after_load(path)
    idle = [r for r in before if int(r["reasons"]) & REASON_BITS["gpu_idle"]]
    idle_clocks = sorted(r["sm_clock_mhz"] for r in idle)
    assert len(idle) >= 0.5 * len(before) and idle_clocks[len(idle_clocks) // 2] <= 450, idle_clocks
    assert len(after) >= 20 and not any(int(r["reasons"]) & REASON_BITS["gpu_idle"] for r in after)
    clocks = sorted(r["sm_clock_mhz"] for r in after)
    assert clocks[len(clocks) // 2] == MAX_SM_MHZ and clocks[0] >= 1600
    key = "h100-sxm5-80gb" if path.name.startswith("h100") else "h200-sxm-141gb"
    node, mgmt, dev = _device(key)
    cold = mgmt.sample(0)
    assert (cold.sm_clock_mhz, bool(cold.reasons & REASON_BITS["gpu_idle"])) == (345, True)
    dev.set_load(1.0)
    dev.matmul_setup("bf16", 1)
    dev.matmul_run(1)
    dev.set_load(0.0)
    time.sleep(0.15)  # past the NVML power reading's next update
    warm = mgmt.sample(0)
    assert (warm.sm_clock_mhz, warm.reasons, warm.util_pct) == (MAX_SM_MHZ, 0, 0)
    # At the real parts' power between steps once their one-second mean has settled: 96-137 W at the least.
    assert min(r["power_w"] for r in after) * 0.9 <= warm.power_w <= 160, warm.power_w
    dev.close()


@pytest.mark.parametrize("path", sorted(ROOT.glob("tests/fixtures/real-2026-11-2*/*.telemetry.csv.gz")),
                         ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_clocks_step_by_15_mhz_and_temperatures_are_whole_degrees_as_the_real_nvml_read(path):
    """The 2026-11-28 fidelity review: the twin's clocks fell between NVML's steps (1794, 1504 MHz) and
    its temperatures had tenths; every sample of the real runs is a multiple of 15 MHz and a whole
    degree. The twin's held clock hops between the two steps around it, its mean the modelled clock."""
    import csv
    import gzip

    with gzip.open(path, "rt") as f:
        rows = list(csv.DictReader(f))
    assert {float(r["sm_clock_mhz"]) % CLOCK_STEP_MHZ for r in rows} == {0.0}
    assert all(float(r[k]).is_integer() for r in rows for k in ("temp_c", "mem_temp_c"))
    key = "h100-sxm5-80gb" if path.name.startswith("h100") else "h200-sxm-141gb"
    node, mgmt, dev = _device(key)
    dev.set_load(1.0)
    dev.matmul_setup("fp8", 1)  # the dtype whose measured clock (1272, 1390 MHz) is off the grid
    samples = [mgmt.sample(0) for _ in range(400)]
    dev.close()
    clocks = [s.sm_clock_mhz for s in samples]
    assert {c % CLOCK_STEP_MHZ for c in clocks} == {0} and len(set(clocks)) >= 2
    assert all(isinstance(s.temp_c, int) and isinstance(s.mem_temp_c, int) for s in samples)
    expected = SIM_GPU_MODELS[key].twin.sm_mhz["fp8"]
    assert abs(sum(clocks) / len(clocks) - expected) < 3, (sum(clocks) / len(clocks), expected)


def _mem_against_gpu(path: Path) -> tuple[float, float]:
    """GPU 0's median memory-less-GPU temperature before its first load, and under full load."""
    import csv
    import gzip
    import statistics

    with gzip.open(path, "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["gpu"] == "0"]
    first = next(i for i, r in enumerate(rows) if float(r["util_pct"]) > 0)
    diff = [float(r["mem_temp_c"]) - float(r["temp_c"]) for r in rows]
    loaded = [d for d, r in zip(diff, rows) if float(r["util_pct"]) > 90]
    return statistics.median(diff[:first]), statistics.median(loaded)


@pytest.mark.parametrize("key", QUICK)
def test_the_memory_is_warmer_than_the_gpu_at_idle_and_cooler_under_load_as_measured(key):
    """The 2026-11-28 fidelity review: the twin's memory ran 8-9 C under the GPU at idle too, where
    the real memory ran 1 to 4 C over it before the first load (and 4-11 C under it loaded)."""
    import statistics

    prefix = "h100" if key.startswith("h100") else "h200"
    real = [_mem_against_gpu(p) for p in sorted(ROOT.glob(f"tests/fixtures/real-2026-11-2*/{prefix}*quick*.telemetry.csv.gz"))]
    assert len(real) >= 4
    node, mgmt, dev = _device(key)
    idle = statistics.median(s.mem_temp_c - s.temp_c for s in (mgmt.sample(0) for _ in range(201)))
    dev.set_load(1.0)
    time.sleep(0.1)  # 100 simulated seconds: past the time constants that bring it to its load temperature
    loaded = statistics.median(s.mem_temp_c - s.temp_c for s in (mgmt.sample(0) for _ in range(201)))
    dev.close()
    assert min(i for i, _ in real) <= idle <= max(i for i, _ in real), (idle, real)
    assert min(lo for _, lo in real) <= loaded <= max(lo for _, lo in real), (loaded, real)
    assert idle > 0 > loaded


def _mem_against_gpu_under_memory_work(prefix: str) -> list[float]:
    """Every real sample's memory-less-GPU temperature while the memory was 90 % busy or more (the
    copies and the memory test's sweeps), over the quick runs of one part."""
    import csv
    import gzip

    out = []
    for path in sorted(ROOT.glob(f"tests/fixtures/real-2026-11-2*/{prefix}*quick*.telemetry.csv.gz")):
        with gzip.open(path, "rt") as f:
            out += [float(r["mem_temp_c"]) - float(r["temp_c"]) for r in csv.DictReader(f)
                    if r["mem_util_pct"] and float(r["mem_util_pct"]) >= 90 and r["mem_temp_c"]]
    return out


@pytest.mark.parametrize("key", QUICK)
def test_memory_bound_work_runs_the_memory_hotter_than_the_gpu_as_measured(key):
    """The 2026-11-28 fidelity audit: under the copies and the memory test the real memory ran 6 to
    16 C above the GPU (H100; H200 0 to 14), from their first sample; the twin kept the matmul's
    offset there (2-5 C below the GPU), so its memory test could never warm the memory toward its
    limit as the real one does."""
    import statistics

    real = _mem_against_gpu_under_memory_work("h100" if key.startswith("h100") else "h200")
    assert len(real) >= 12
    node, mgmt, dev = _device(key)
    for kind, setup in ((HBM_WORK, lambda: dev.stream_setup(1 << 20)), (MEMTEST_WORK, lambda: dev.memtest_setup(0.9))):
        setup()
        dev.set_load(1.0)
        twin = [s.mem_temp_c - s.temp_c for s in (mgmt.sample(0) for _ in range(101))]
        assert abs(statistics.median(twin) - statistics.median(real)) <= 1.5, (kind, statistics.median(twin), real)
        assert min(real) <= statistics.median(twin) <= max(real)
        dev.set_load(0.0)
    dev.matmul_setup("bf16", 1)  # compute: the matmul's offset again, the memory below the GPU
    dev.set_load(1.0)
    time.sleep(0.1)
    assert statistics.median(s.mem_temp_c - s.temp_c for s in (mgmt.sample(0) for _ in range(101))) < 0
    dev.close()


class _SetClock:
    """A clock the test moves by hand."""

    def __init__(self, t: float = 0.0):
        self.t = t

    def now(self) -> float:
        return self.t


@pytest.mark.parametrize("key", QUICK)
def test_the_one_second_power_mean_under_each_pulse_period_is_the_real_ones(key):
    """The 2026-11-28 fidelity review: under the 100 ms period the twin's one-second power mean fell
    317 W below the steady load's, the real parts' 115-192 W. The real bursts overshoot the limit (the
    limiter holds a mean over about a second) and the power falls to warm idle over milliseconds: the
    twin's mean under each period, once the period has run a second, lies among the real runs' means
    (their readings from the period's start: the highest and lowest)."""
    from nodeqc.backends.sim.physics import NVML_AVERAGE_S

    prefix = "h100" if key.startswith("h100") else "h200"
    real: dict[float, list[float]] = {}
    for path in sorted(ROOT.glob(f"tests/fixtures/real-2026-11-2*/{prefix}*quick*.predicate.json")):
        pulse = next(c for c in _real(path)["checks"] if c["name"] == "stress.power_pulse" and c["subject"] == "gpu0")
        for p in pulse["evidence"]["periods"]:
            if p.get("power_read") and p["period_s"] > 0:
                real.setdefault(p["period_s"], []).extend((p["power_read"]["high"]["max"], p["power_read"]["low"]["min"]))
    assert sorted(real) == [0.1, 0.5, 1.0]
    node, mgmt, dev = _device(key)
    dev.set_load(1.0)
    dev.matmul_setup("fp16", 1)  # at the pulse's dtype
    dev.matmul_run(1)  # loaded once: warm between bursts
    dev.clock = clock = _SetClock(dev.clock.now())
    for period, means in real.items():
        dev.set_pulse(period)
        for _ in range(round(2 / period)):
            dev.set_load(1.0)
            clock.t += period / 2
            dev.set_load(0.0)
            clock.t += period / 2
        twin = dev._mean_power(clock.t, NVML_AVERAGE_S)
        dev.set_pulse(0.0)
        assert min(means) <= twin <= max(means), (period, twin, sorted(means))
    dev.close()
