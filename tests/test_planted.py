"""What became of each fault planted in a simulated node (nodeqc.run.planted): found by a check made
for it, untested (and why), within the floors, or a condition of a healthy node. The runs that find
every fault are tests/test_fault_detection.py's and tests/test_fault_families.py's; here, the
vocabulary and each reason a fault goes untested."""

from __future__ import annotations

import json

import pytest

from conftest import cli
from nodeqc.backends.sim.faults import TARGETS, parse_fault
from nodeqc.core.catalogue import FAMILIES, declared_codes
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.run.planted import CONDITIONS, FINDS, NEEDS_FULL, outcomes
from nodeqc.spec.selection import CHECK_NAMES, Selection

NICS = ["eno1", "ibp24s0", "ibp64s0"]


def _said(text: str, results: list[CheckResult], quick: bool = True, selection: Selection = Selection(),
          tested: frozenset[str] = frozenset({"ibp24s0", "ibp64s0"})) -> dict[str, str]:
    return outcomes([parse_fault(text)], results, quick=quick, selection=selection, nic_names=NICS,
                    nic_tested=tested.__contains__)[0]


def test_every_fault_of_the_vocabulary_has_the_checks_that_find_it_or_is_a_condition():
    for target, vocabulary in TARGETS.items():
        conditions = {k[1] for k in CONDITIONS if k[0] == target and len(k) == 2}
        assert set(FINDS[target]) | conditions == set(vocabulary), target
        assert not set(FINDS[target]) & conditions, target
    families = {f.name for f in FAMILIES}
    named = {c.removesuffix("@node") for finds in FINDS.values() for checks, _ in finds.values() for c in checks}
    assert named - set(CHECK_NAMES) <= families, sorted(named - set(CHECK_NAMES) - families)
    assert {k[:2] for k in NEEDS_FULL} <= {(t, n) for t, finds in FINDS.items() for n in finds}
    # Each code a fault is found by is one some check may give (a prefix: of at least one code).
    declared = declared_codes()
    for target, finds in FINDS.items():
        for name, (_, codes) in finds.items():
            for code in codes:
                assert (code in declared) if not code.endswith("_") else any(d.startswith(code) for d in declared), \
                    (target, name, code)


def test_a_fault_is_found_by_its_own_checks_on_its_own_part_and_not_by_another_part_s():
    burn = lambda gpu, verdict: CheckResult("stress.burn", gpu, verdict, "m", code="BURN_SLOW")  # noqa: E731
    said = _said("gpu2:slow=0.5", [burn("gpu1", Verdict.FAIL), burn("gpu2", Verdict.FAIL)])
    assert said == {"fault": "gpu2:slow=0.5", "outcome": "found", "why": "stress.burn FAIL on gpu2 [BURN_SLOW]"}
    # gpu1's failure is not gpu2's: gpu2's burn passed, the fault milder than the floors (or missed).
    said = _said("gpu2:slow=0.99", [burn("gpu1", Verdict.FAIL), burn("gpu2", Verdict.PASS)])
    assert said["outcome"] == "within the floors" and said["why"].startswith("stress.burn PASS on gpu2")
    # A family name is any of its checks (a hang in whichever stress step); "@node" the node as a whole.
    hang = CheckResult("stress.memtest", "gpu0", Verdict.FAIL, "m", code="WORKER_HANG")
    assert _said("gpu0:hang", [hang])["outcome"] == "found"
    nvls = CheckResult("stress.nccl", "node", Verdict.WARN, "m", code="NCCL_NVLS_SLOW")
    assert _said("gpu3:nvls_down", [nvls])["why"] == "stress.nccl WARN on node [NCCL_NVLS_SLOW]"
    # A host fault is the node's: a GPU's failure in the same check is not it.
    log = CheckResult("host.kernel_log", "gpu6", Verdict.FAIL, "m", code="KERNEL_XID")
    assert _said("host:mce", [log, CheckResult("host.kernel_log", "node", Verdict.PASS, "m")])["outcome"] == "within the floors"
    # A NIC by its nicN (nic.*) or by its interface name (host.optics, the baseline).
    optics = CheckResult("host.optics", "ibp24s0", Verdict.FAIL, "m", code="LINK_BER_HIGH")
    assert _said("nic1:link_ber=1e-10", [optics], quick=False)["why"] == "host.optics FAIL on ibp24s0 [LINK_BER_HIGH]"


@pytest.mark.parametrize("fault, results, kwargs, why", [
    # The 2026-11-29 case: eno1 is down, the profile tests ib* NICs only.
    ("nic0:down", [CheckResult("nic.link", "nic1", Verdict.PASS, "m")], {},
     "nic0 (eno1) is not among the NICs the profile tests ([nic] match or drivers)"),
    ("gpu5:ecc_dbe=3", [], {"selection": Selection(gpus=(0, 1))}, "gpu5 is not among the GPUs this run tests (--gpu)"),
    ("gpu1:retention", [CheckResult("stress.memtest", "gpu1", Verdict.PASS, "m")], {},
     "the memory test's bit fade runs in full runs only (not --quick)"),
    ("host:bios=1.0", [], {}, "baseline.firmware did not run: it runs against a golden baseline (--baseline FILE)"),
    ("host:cpu_wrong=3", [], {}, "host.cpu_stress did not run: it runs in full runs only (not --quick)"),
    ("gpu0:p2p_bw=0.5", [], {"selection": Selection(skip=("stress.p2p", "stress.nccl"))},
     "stress.p2p left out of this run (--only/--skip); stress.nccl left out of this run (--only/--skip)"),
    # Each of its checks with its own reason (the review: a --skip beside a burn-in said "no result").
    ("gpu0:slow=0.5", [], {"selection": Selection(skip=("stress.burn",))},
     "stress.burn left out of this run (--only/--skip); burnin.stability did not run: it runs with a burn-in (--burn-in)"),
    # A check that could not run judged nothing (the review: GPU_IN_USE was taken for finding slow HBM).
    ("gpu0:hbm_bw=0.97", [CheckResult("stress.hbm_bandwidth", "gpu0", Verdict.ERROR, "another process computes on it",
                                      code="GPU_IN_USE")], {},
     "stress.hbm_bandwidth ERROR on gpu0 [GPU_IN_USE]: could not run: another process computes on it"),
    # A GPU --gpu left out is untested whatever the node's all-reduce over the others said.
    ("gpu7:nvlink_down=18", [CheckResult("stress.nccl", "node", Verdict.PASS, "m")], {"selection": Selection(gpus=(0, 1))},
     "gpu7 is not among the GPUs this run tests (--gpu)"),
    ("gpu0:p2p_corrupt", [CheckResult("stress.p2p", "gpu0", Verdict.SKIP, "an earlier step failed on this GPU",
                                      code="SKIPPED_EARLIER_FAILURE")], {},
     "stress.p2p SKIP on gpu0 [SKIPPED_EARLIER_FAILURE]: an earlier step failed on this GPU"),
    ("gpu0:badmem", [], {}, "no result of stress.memtest on gpu0"),
])
def test_a_fault_no_check_judged_is_untested_with_the_reason(fault, results, kwargs, why):
    said = _said(fault, results, **kwargs)
    assert said == {"fault": str(parse_fault(fault)), "outcome": "untested", "why": why}


def test_a_check_that_failed_for_another_cause_masks_the_fault_rather_than_finding_it():
    """The review of 2026-11-29: `gpu0:slow=0.97` beside `gpu0:bitflip` was "found" by the burn's
    SDC_KNOWN_ANSWER, and a mild p2p_bw by the node's all-reduce another GPU's NVLinks slowed."""
    sdc = CheckResult("stress.burn", "gpu0", Verdict.FAIL, "a flipped bit", code="SDC_KNOWN_ANSWER")
    said = outcomes([parse_fault("gpu0:slow=0.97"), parse_fault("gpu0:bitflip")], [sdc], quick=True, selection=Selection())
    assert [p["outcome"] for p in said] == ["masked", "found"]
    assert said[0]["why"].startswith("stress.burn FAIL on gpu0 [SDC_KNOWN_ANSWER]: another cause's finding")
    nccl = CheckResult("stress.nccl", "node", Verdict.FAIL, "slow", code="NCCL_SLOW")
    p2p = [CheckResult("stress.p2p", "gpu5", Verdict.PASS, "m"), CheckResult("stress.p2p", "gpu0", Verdict.FAIL, "m", code="P2P_SLOW"),
           CheckResult("health.nvlink", "gpu0", Verdict.FAIL, "m", code="NVLINK_DOWN")]
    said = outcomes([parse_fault("gpu5:p2p_bw=0.97"), parse_fault("gpu0:nvlink_down=18")], [nccl, *p2p], quick=True,
                    selection=Selection())
    assert [p["outcome"] for p in said] == ["within the floors", "found"]
    # Two faults that only the node's result speaks for: each found, each saying it shares it.
    said = outcomes([parse_fault("gpu1:nvls_down"), parse_fault("gpu2:nvls_down")],
                    [CheckResult("stress.nccl", "node", Verdict.WARN, "m", code="NCCL_NVLS_SLOW")], quick=True,
                    selection=Selection())
    assert [p["outcome"] for p in said] == ["found", "found"]
    assert said[0]["why"] == "stress.nccl WARN on node [NCCL_NVLS_SLOW] (the node's result, shared with gpu2:nvls_down)"


def test_a_healthy_node_s_ways_are_conditions_whatever_the_checks_said():
    for fault in ("gpu0:cold_start=2", "gpu3:no_throttle_counters", "host:no_bmc", "gpu5:throttle=sw_power_cap"):
        assert _said(fault, [])["outcome"] == "condition", fault
    assert _said("gpu4:throttle=power_brake", [])["outcome"] == "untested"


def test_a_simulated_run_says_the_fault_its_profile_never_tests(tmp_path):
    """The 2026-11-29 notes: `--inject nic0:down` on the hgx-h100 scenario downs eno1, which the profile
    (ib* NICs) never tests; the run passed and nothing said so. It still passes (its checks are the
    verdict), and says what it left untested, after RESULT, in --json and in the signed report."""
    p = cli("--headless", "--simulate", "hgx-h100", "--quick", "--out", str(tmp_path), "--only", "nic,inventory",
            "--inject", "nic0:down", "--inject", "nic2:speed=25000", "--json")
    assert p.returncode == 1, p.stderr
    assert "  simulated fault nic0:down: untested: nic0 (eno1) is not among the NICs the profile tests" in p.stderr
    assert "  simulated fault nic2:speed=25000: found: nic.link FAIL on nic2 [IB_RATE]" in p.stderr
    summary = json.loads(p.stdout.splitlines()[-1])
    assert [(s["fault"], s["outcome"]) for s in summary["planted"]] == [("nic0:down", "untested"), ("nic2:speed=25000", "found")]
    shown = cli("show", summary["report"])
    assert "simulated fault nic0:down: untested: nic0 (eno1)" in shown.stdout, shown.stdout


def test_host_nic_and_gpu_faults_of_one_run_are_each_found_by_the_code_that_names_them(tmp_path):
    """The table held to a real simulated run beside the GPU faults of tests/test_fault_detection.py:
    the host's, the NICs' and the GPU faults those runs leave out, each on a check of its own."""
    faults = ["host:edac_ue=1", "host:nvme_reset", "host:psu_fault=2", "nic1:speed=25000", "nic2:pcie_width=8",
              "gpu1:aer=3", "gpu2:power_limit=350", "gpu3:transient_brake=100", "gpu4:sram_dbe=1", "gpu6:cotenant",
              "gpu0:cold_start=2"]
    p = cli("--headless", "--simulate", "hgx-h100", "--quick", "--json", "--out", str(tmp_path),
            *[a for f in faults for a in ("--inject", f)])
    said = {s["fault"]: s["outcome"] for s in json.loads(p.stdout.splitlines()[-1])["planted"]}
    assert said == {str(parse_fault(f)): "condition" if "cold_start" in f else "found" for f in faults}, said


def test_the_twin_s_host_faults_come_whatever_the_gpus_do(tmp_path):
    """The planted outcomes showed it (2026-11-29): with `--only host` no GPU is loaded, and the twin's
    host faults, fired only once the GPUs had been, read "within the floors ..., or missed". A host's
    memory errors and kernel lines come whatever the GPUs do; a GPU's link errors still come under load."""
    faults = ["host:edac_ue=1", "host:nvme_reset", "gpu1:aer=3"]
    p = cli("--headless", "--simulate", "hgx-h100", "--quick", "--only", "host", "--json", "--out", str(tmp_path),
            *[a for f in faults for a in ("--inject", f)])
    said = {s["fault"]: s["outcome"] for s in json.loads(p.stdout.splitlines()[-1])["planted"]}
    assert said == {"host:edac_ue=1": "found", "host:nvme_reset": "found", "gpu1:aer=3": "within the floors"}, said


def test_a_gb200_tray_s_fabric_and_imex_faults_are_each_found(tmp_path):
    faults = ["gpu0:fabric_unregistered=in_progress", "gpu1:fabric_degraded", "gpu2:fabric_clique=7", "host:imex_nodes=17"]
    p = cli("--headless", "--simulate", "gb200-nvl72-tray", "--quick", "--only", "inventory,host", "--json",
            "--out", str(tmp_path), *[a for f in faults for a in ("--inject", f)])
    said = {s["fault"]: s["outcome"] for s in json.loads(p.stdout.splitlines()[-1])["planted"]}
    assert said == {str(parse_fault(f)): "found" for f in faults}, said
