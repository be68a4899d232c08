"""Corruption planted by the simulated GPU is found by the verification the real GPUs use
(nodeqc/work/workloads.py with nodeqc/core/known_answer.py): the right GPU, the right data, the exact element and
bit. The simulator logs what it planted (`planted`); the workloads never see that log."""

from __future__ import annotations

import copy

import pytest

from nodeqc.backends.sim.compute import SimDevice, SimNodeDevices
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.node import SimNode
from nodeqc.backends.sim.scenario import load_scenario
from nodeqc.work import workloads as W


class Quiet:
    def progress(self, fraction, **figures):
        pass


def spec(*faults, seed=None):
    s = SimNode(load_scenario("hgx-h100"), [parse_fault(f) for f in faults], time_scale=5000).compute_spec()
    if seed is not None:
        s = {**s, "scenario": {**copy.deepcopy(s["scenario"]), "seed": seed}}
    return s


HBM = {"bytes": 1 << 30, "trials": 2, "iters": 2}
PCIE = {"bytes": 1 << 28, "trials": 2, "iters": 2, "min_seconds": 0}
P2P = {"bytes": 1 << 28, "iters": 2}
NCCL = {"bytes": 1 << 30, "iters": 2}


def _found_is_planted(mismatch, planted):
    assert mismatch["count"] == 1
    e = mismatch["first"][0]
    assert e["index"] == planted["index"] and int(e["xor"], 16) == 1 << planted["bit"]


def test_hbm_corrupt_is_found_at_the_element_planted():
    s = spec("gpu1:hbm_corrupt")
    bad, good = SimDevice(s, 1), SimDevice(s, 0)
    r = W.hbm_bandwidth(bad, HBM, Quiet())
    assert r["verified"] is False and bad.planted[-1]["what"] == "hbm"
    _found_is_planted(r["mismatch"], bad.planted[-1])
    clean = W.hbm_bandwidth(good, HBM, Quiet())
    assert clean["verified"] is True and clean["mismatch"] is None


def test_pcie_corrupt_is_found_at_the_byte_planted():
    s = spec("gpu6:pcie_corrupt")
    bad, good = SimDevice(s, 6), SimDevice(s, 5)
    r = W.pcie_bandwidth(bad, PCIE, Quiet())
    assert r["verified"] is False and bad.planted[-1]["what"] == "pcie"
    _found_is_planted(r["mismatch"], bad.planted[-1])
    assert W.pcie_bandwidth(good, PCIE, Quiet())["verified"] is True


def test_p2p_corrupt_is_found_in_every_copy_the_gpu_receives():
    node = SimNodeDevices(spec("gpu2:p2p_corrupt"), list(range(8)))
    at_check = {}
    received = node.p2p_received

    def spy(src, dst):  # what was planted in this copy, as the check reads it
        at_check[(src, dst)] = dict(node.devices[dst].planted[-1]) if node.devices[dst].planted else None
        return received(src, dst)

    node.p2p_received = spy
    r = W.p2p(node, P2P, Quiet())
    wrong = {(p["src"], p["dst"]): p for p in r["pairs"] if not p["verified"]}
    assert set(wrong) == {(i, 2) for i in range(8) if i != 2}
    for (src, dst), p in wrong.items():
        planted = at_check[(src, dst)]
        assert (planted["src"], planted["dst"]) == (src, dst)
        _found_is_planted(p["mismatch"], planted)
    assert all("mismatch" not in p for p in r["pairs"] if p["verified"])


def test_nccl_corrupt_is_found_on_the_gpu_planted():
    node = SimNodeDevices(spec("gpu3:nccl_corrupt"), list(range(8)))
    r = W.nccl_allreduce(node, NCCL, Quiet())
    planted = node.devices[3].planted[-1]
    assert [w["gpu"] for w in r["wrong"]] == [3]
    w = r["wrong"][0]
    assert (w["count"], w["index"], w["expected"], int(w["xor"], 16)) == (1, planted["index"], 36.0, 1 << planted["bit"])


def test_a_clean_node_verifies_everything():
    s = spec()
    node = SimNodeDevices(s, list(range(8)))
    assert all(p["verified"] for p in W.p2p(node, P2P, Quiet())["pairs"])
    assert W.nccl_allreduce(node, NCCL, Quiet())["wrong"] == []
    assert not any(d.planted for d in node.devices.values())


def test_bitflip_random_makes_repeats_differ_and_keeps_the_known_answer():
    """A GPU that errs under sustained load, a different element each time: the repeats differ
    (SDC_REPEAT), while the small known-answer product is right."""
    bad = SimDevice(spec("gpu4:bitflip_random"), 4)
    # 8000 simulated seconds in 1.6 s: steps of 500 s, about eight repeats per dtype, so that a
    # scheduling hiccup of a busy machine still leaves two or more
    r = W.matmul_burn(bad, {"seconds": 8000, "dtypes": ["fp32", "bf16"], "seed": 1}, Quiet())["dtypes"]
    for dtype, d in r.items():
        assert d["repeat_mismatch"] is not None and d["known_answer_mismatch"] is None, dtype
        assert d["checks"] >= 2
    flips = [(p["dtype"], p["index"], p["bit"]) for p in bad.planted]
    assert {p["what"] for p in bad.planted} == {"matmul"} and len(set(flips)) > 2
    clean = W.matmul_burn(SimDevice(spec(), 0), {"seconds": 60, "dtypes": ["fp32"], "seed": 1}, Quiet())["dtypes"]
    assert r["fp32"]["fingerprint"] != clean["fp32"]["fingerprint"]  # the cross-GPU comparison sees it too


def test_corruption_is_seeded():
    """The same scenario seed plants the same flips; another seed plants others."""
    def planted(seed):
        d = SimDevice(spec("gpu0:hbm_corrupt", seed=seed), 0)
        W.hbm_bandwidth(d, HBM, Quiet())
        W.hbm_bandwidth(d, HBM, Quiet())
        return d.planted

    assert planted(1) == planted(1)
    assert planted(1) != planted(2)
    assert len({p["index"] for p in planted(1)}) == 2  # a new place each time


@pytest.mark.parametrize("fault", ["gpu0:bitflip", "gpu0:bitflip_random"])
def test_matmul_corruption_never_touches_other_gpus(fault):
    s = spec(fault)
    other = SimDevice(s, 1)
    r = W.matmul_burn(other, {"seconds": 20, "dtypes": ["fp32"], "seed": 1}, Quiet())["dtypes"]["fp32"]
    assert r["repeat_mismatch"] is None and r["known_answer_mismatch"] is None and other.planted == []
