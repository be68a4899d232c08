"""The calibration rule (nodeqc/spec/calibration.py) applied to every SKU (nodeqc/core/skus.py): a healthy
simulated GPU of each SKU passes with no warning, quick and full; 12% slow warns; 22% slow fails;
likewise its memory bandwidth. The simulated GPU runs at the SKU's healthy figures (or, where a part
was measured whole, at what it delivered: sim_models.Twin), so these runs put the real workload code
and the real verdicts at the places a real part would land."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

from nodeqc.backends import simulated_hardware
from nodeqc.backends.sim.compute import SimDevice
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.models import SIM_GPU_MODELS
from nodeqc.backends.sim.node import SimNode
from nodeqc.backends.sim.scenario import sku_scenario
from nodeqc.checks.stress.burn import burn_params, judge_burn
from nodeqc.checks.stress.memory import hbm_params, judge_hbm
from nodeqc.checks.stress.pcie import judge_pcie, pcie_params
from nodeqc.core.model import Verdict
from nodeqc.core.skus import BY_KEY, SKUS
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec import calibration
from nodeqc.spec.profile import load_for, load_profile, suggest_profile
from nodeqc.work import workloads
from nodeqc.work.workers import STATUS_OK, Outcome, Task

KEYS = [s.key for s in SKUS]
REAL = ROOT / "tests" / "fixtures" / "real-2026-11-26"


class _Quiet:
    def progress(self, fraction: float, **figures: object) -> None:
        pass


def judged(key: str, faults: list[str], check: str, quick: bool = True):
    """One stress check on one simulated GPU of the SKU, its workload run in this process (time
    compressed so a full 600 s burn takes milliseconds), judged by the profile `auto` picks."""
    node = SimNode(sku_scenario(key), [parse_fault(f) for f in faults], time_scale=1e6)
    gpus = node.management().gpus()
    profile = load_for(suggest_profile(gpus), gpus)
    assert profile.sku is BY_KEY[key]
    work, params, judge = {
        "burn": (workloads.matmul_burn, burn_params, judge_burn),
        "hbm": (workloads.hbm_bandwidth, hbm_params, judge_hbm),
        "pcie": (workloads.pcie_bandwidth, pcie_params, judge_pcie),
    }[check]
    p = params(profile, quick)
    result = work(SimDevice(node.compute_spec(), 0), p, _Quiet())
    return judge(gpus, {0: Outcome(Task(check, 0, p, 1.0), STATUS_OK, result)}, {}, profile)[0]




@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
@pytest.mark.parametrize("check", ["burn", "hbm", "pcie"])
@pytest.mark.parametrize("key", KEYS)
def test_a_healthy_gpu_of_every_sku_passes_without_a_warning(request, key, check, quick):
    r = judged(key, [], check, quick)
    assert r.verdict is Verdict.PASS, r.message


@pytest.mark.parametrize("fault, check, verdict, code", [
    ("slow=0.88", "burn", Verdict.WARN, "BURN_SLOW"),
    ("slow=0.78", "burn", Verdict.FAIL, "BURN_SLOW"),
    ("hbm_bw=0.88", "hbm", Verdict.WARN, "HBM_SLOW"),
    ("hbm_bw=0.78", "hbm", Verdict.FAIL, "HBM_SLOW"),
])
@pytest.mark.parametrize("key", KEYS)
def test_a_slow_gpu_of_every_sku_warns_at_12_and_fails_at_22_percent(request, key, fault, check, verdict, code):
    r = judged(key, [f"gpu0:{fault}"], check)
    assert (r.verdict, r.code) == (verdict, code), r.message


def test_a_simulated_hopper_burns_fp8_at_the_measured_figure():
    """FP8 runs where the real rule lets it (compute capability 8.9 and newer), at what the real H100
    SXM5 sustained in its continuous quick burn of 2026-11-26 (sim_models.H100_SXM5_TWIN: 1223.38
    TFLOP/s, tests/fixtures/real-2026-11-26/h100-sxm5-quick-pulsed), verified like every other dtype."""
    real = json.loads((REAL / "h100-sxm5-quick-pulsed.predicate.json").read_text())
    [real_burn] = [c for c in real["checks"] if c["name"] == "stress.burn"]
    r = judged("h100-sxm5-80gb", [], "burn")
    assert r.evidence["not_run"] == {}
    assert {d: m["tflops"] for d, m in r.evidence["dtypes"].items()} == SIM_GPU_MODELS["h100-sxm5-80gb"].tflops
    assert r.evidence["dtypes"]["fp8"]["tflops"] == real_burn["evidence"]["dtypes"]["fp8"]["tflops"] == 1223.38
    assert r.evidence["dtypes"]["fp8"]["known_answer_mismatch"] is None


def test_a_simulated_ampere_asked_for_fp8_says_not_run_as_the_real_one_does():
    node = SimNode(sku_scenario("a100-sxm4-80gb"), [], time_scale=1e6)
    device = SimDevice(node.compute_spec(), 0)
    result = workloads.matmul_burn(device, {"seconds": 1, "dtypes": ["bf16", "fp8"], "seed": 1}, _Quiet())
    assert result["not_run"] == {"fp8": "fp8 needs compute capability 8.9 or newer (Ada, Hopper and later); "
                                        "this GPU is 8.0"}
    assert list(result["dtypes"]) == ["bf16"]


@pytest.mark.parametrize("fault, code", [("bitflip", "SDC_KNOWN_ANSWER"), ("slow=0.78", "BURN_SLOW")])
def test_faults_reach_the_simulated_fp8_burn(fault, code):
    r = judged("h200-sxm-141gb", [f"gpu0:{fault}"], "burn")
    assert (r.verdict, r.code) == (Verdict.FAIL, code)
    assert "fp8" in r.message


# ---------------------------------------------------------------------- the rule at its boundaries

@pytest.mark.parametrize("healthy, fail, warn", [(747.1, 597.7, 672.4), (2843, 2274.4, 2558.7), (54.2, 43.4, 48.8),
                                                 (100, 80, 90), (4.5, 3.6, 4.1)])
def test_floor_is_80_and_90_percent_rounded_up_to_a_tenth(healthy, fail, warn):
    assert calibration.floor(healthy) == {"fail": fail, "warn": warn}


@pytest.mark.parametrize("key", KEYS)
def test_every_generated_floor_sits_at_its_boundary(key):
    """Just below 90% of healthy warns, the warning level itself passes; just below 80% fails, the
    limit itself warns (a value at a limit is on its good side)."""
    sku = BY_KEY[key]
    profile = load_profile(key)
    figures = {**{f"min_{d}_tflops": v for d, v in sku.healthy_tflops.items()},
               "min_hbm_gbps": sku.healthy_hbm_gbps, "min_h2d_gbps": sku.healthy_h2d_gbps,
               "min_d2h_gbps": sku.healthy_d2h_gbps}
    for name, healthy in figures.items():
        t = profile.threshold("gpu", name)
        assert t.judge(healthy) is Verdict.PASS, name
        assert t.judge(healthy * 0.9 * 0.999) is Verdict.WARN and t.judge(t.warn) is Verdict.PASS, name
        assert t.judge(healthy * 0.8 * 0.999) is Verdict.FAIL and t.judge(t.fail) is Verdict.WARN, name
        assert healthy * 0.9 - 1e-9 <= t.warn < healthy * 0.9 + 0.1, name
        assert healthy * 0.8 - 1e-9 <= t.fail < healthy * 0.8 + 0.1, name


@pytest.mark.parametrize("key", KEYS)
def test_the_memory_floor_passes_the_sku_and_fails_a_smaller_part(key):
    sku = BY_KEY[key]
    t = load_profile(key).threshold("gpu", "min_memory_gib")
    assert t.judge(sku.memory_gib) is Verdict.PASS
    assert t.judge(t.fail) is Verdict.PASS and t.judge(t.fail - 0.01) is Verdict.FAIL
    assert sku.memory_gib * 0.98 - 0.5 < t.fail <= sku.memory_gib * 0.98  # 98%, down to half a GiB


def test_family_floors_are_those_of_its_slowest_sku():
    h100 = load_profile("h100")
    for name in ("min_bf16_tflops", "min_hbm_gbps", "min_fp64_tflops"):
        floors = [load_profile(s.key).threshold("gpu", name).fail for s in SKUS if s.family == "h100"]
        assert h100.threshold("gpu", name).fail == min(floors), name
    # The H100 PCIe's, well under the SXM5's: which is why a family profile resolves to the SKU.
    assert h100.threshold("gpu", "min_bf16_tflops").fail < 0.8 * load_profile("h100-sxm5-80gb").threshold("gpu", "min_bf16_tflops").fail


# ---------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    return create_key(tmp_path_factory.mktemp("key") / "k.pem")


def qualify(tmp_path, signer, key: str, faults=(), only=None):
    from nodeqc.spec.selection import Selection

    hw = simulated_hardware(key, [parse_fault(f) for f in faults], time_scale=60)
    hw.mgmt.open()
    gpus = hw.mgmt.gpus()
    hw.mgmt.close()
    profile = load_for(suggest_profile(gpus), gpus)
    options = RunOptions(profile, signer, out_dir=tmp_path, quick=True)
    if only:
        options.selection = Selection.parse([only], None)
    return Runner(options, hw).run()


@pytest.mark.slow
@pytest.mark.parametrize("key", ["h100-sxm5-80gb", "h200-sxm-141gb", "a100-pcie-80gb", "v100-pcie-32gb"])
def test_a_healthy_simulated_gpu_qualifies_with_no_warning_end_to_end(request, tmp_path, signer, key):
    """The whole quick qualification with the profile auto picks, on the cloud host of the real
    measurements (16 cores, 125.9 GiB): no check warns or fails, host checks included."""
    outcome = qualify(tmp_path, signer, key)
    bad = [(r.name, r.subject, r.verdict.value, r.message) for r in outcome.results
           if r.verdict not in (Verdict.PASS, Verdict.SKIP)]
    assert bad == [] and outcome.exit_code == 0


@pytest.mark.slow
@pytest.mark.parametrize("fault, only, verdict, exit_code", [
    ("gpu0:slow=0.88", "stress.burn", Verdict.WARN, 0),
    ("gpu0:slow=0.78", "stress.burn", Verdict.FAIL, 1),
    ("gpu0:hbm_bw=0.88", "stress.hbm_bandwidth", Verdict.WARN, 0),
    ("gpu0:hbm_bw=0.78", "stress.hbm_bandwidth", Verdict.FAIL, 1),
])
def test_a_slow_h100_sxm5_warns_or_fails_end_to_end(tmp_path, signer, fault, only, verdict, exit_code):
    outcome = qualify(tmp_path, signer, "h100-sxm5-80gb", [fault], only)
    r = next(r for r in outcome.results if r.name == only)
    assert r.verdict is verdict and r.code in ("BURN_SLOW", "HBM_SLOW"), r.message
    assert outcome.exit_code == exit_code


# ---------------------------------------------------------------------- one rule for both references

# The intra-node performance floors the rule sets (the fabric's floors are published per-cluster
# figures, judged across nodes: not these).
RATE_FLOORS = ("min_fp64_tflops", "min_fp32_tflops", "min_tf32_tflops", "min_fp16_tflops", "min_bf16_tflops",
               "min_fp8_tflops", "min_hbm_gbps", "min_h2d_gbps", "min_d2h_gbps", "min_p2p_gbps", "min_nccl_busbw_gbps",
               "min_nccl_nvls_busbw_gbps")


def _every_profile():
    from nodeqc.spec.profile import list_profiles
    return list_profiles() + [load_profile(key) for key in KEYS]


def test_one_rule_for_the_skus_figure_and_the_nodes_median():
    """Below 90% warns, below 80% fails: against the SKU's healthy figure (every rate floor of every
    profile: warn / fail = 90 / 80, at a tenth's resolution) and against the node's median
    (max_outlier_pct), in every shipped profile and every SKU's."""
    outlier = {"fail": round(100 * (1 - calibration.FAIL_FRACTION), 6), "warn": round(100 * (1 - calibration.WARN_FRACTION), 6)}
    assert outlier == {"fail": 20, "warn": 10}
    checked = 0
    for profile in _every_profile():
        t = profile.threshold("gpu", "max_outlier_pct")
        assert (t.fail, t.warn) == (outlier["fail"], outlier["warn"]), profile.name
        for key in RATE_FLOORS:
            t = profile.threshold("gpu", key)
            if t is None:
                continue
            healthy = t.warn / calibration.WARN_FRACTION
            assert t.fail == pytest.approx(healthy * calibration.FAIL_FRACTION, abs=0.11), (profile.name, key, t)
            checked += 1
    assert checked > 100


@pytest.mark.slow
@pytest.mark.parametrize("fault, verdict, exit_code", [("gpu2:slow=0.88", Verdict.WARN, 0),
                                                        ("gpu2:slow=0.78", Verdict.FAIL, 1)])
def test_a_slow_gpu_among_eight_warns_at_88_and_fails_at_78_percent(tmp_path, signer, fault, verdict, exit_code):
    """The README's rule on an 8x H100 SXM5 node: 88% of its SKU and of its siblings' median warns
    (it failed BURN_OUTLIER at a 10% median limit), 78% fails; the seven others pass."""
    outcome = qualify(tmp_path, signer, "hgx-h100", [fault], "stress.burn")
    burns = {r.subject: r for r in outcome.results if r.name == "stress.burn"}
    assert burns["gpu2"].verdict is verdict, burns["gpu2"].message
    assert "below the node median" in burns["gpu2"].message
    assert all(r.verdict is Verdict.PASS for s, r in burns.items() if s != "gpu2")
    assert outcome.exit_code == exit_code
