"""Threshold semantics at every boundary: a value exactly at a limit is on the good side of it."""

import math

import pytest

from nodeqc.core.model import Threshold, Verdict, node_verdict, CheckResult
from nodeqc.core.na import NA
from nodeqc.spec.profile import make_threshold

FLOOR = Threshold("min_x", "min", fail=100, warn=105)
CEIL = Threshold("max_y", "max", fail=85, warn=80)


@pytest.mark.parametrize("value, verdict", [
    (99.999, Verdict.FAIL), (100, Verdict.WARN), (104.999, Verdict.WARN), (105, Verdict.PASS), (1e9, Verdict.PASS),
    (-1, Verdict.FAIL),
])
def test_floor_boundaries(value, verdict):
    assert FLOOR.judge(value) is verdict


@pytest.mark.parametrize("value, verdict", [
    (85.001, Verdict.FAIL), (85, Verdict.WARN), (80.001, Verdict.WARN), (80, Verdict.PASS), (-40, Verdict.PASS),
])
def test_ceiling_boundaries(value, verdict):
    assert CEIL.judge(value) is verdict


def test_zero_ceiling_fails_on_any_count():
    t = Threshold("max_ecc_dbe", "max", 0, 0)
    assert t.judge(0) is Verdict.PASS
    assert t.judge(1) is Verdict.FAIL


@pytest.mark.parametrize("missing", [NA, None, math.nan])
def test_missing_value_is_never_judged(missing):
    with pytest.raises(ValueError):
        FLOOR.judge(missing)


def test_plain_number_gets_the_profile_warn_band():
    floor = make_threshold("min_h2d_gbps", 48, 0.05)
    assert (floor.fail, floor.warn, floor.unit) == (48, pytest.approx(50.4), "GB/s")
    ceiling = make_threshold("max_temp_c", 80, 0.05)
    assert (ceiling.fail, ceiling.warn, ceiling.unit) == (80, 76, "C")


def test_a_banded_warning_level_is_exact_at_its_boundary():
    floor = make_threshold("min_power_fraction", 0.9, 0.05)
    assert floor.warn == 0.945
    assert floor.judge(0.945) is Verdict.PASS and floor.judge(0.9449) is Verdict.WARN


def test_explicit_table_keeps_both_limits():
    t = make_threshold("max_pcie_replays", {"fail": 80, "warn": 8}, 0.05)
    assert (t.kind, t.fail, t.warn) == ("max", 80, 8)


def test_describe_names_both_limits():
    assert FLOOR.describe() == ">= 100, warn below 105"
    assert Threshold("max_temp_c", "max", 87, 82, "C").describe() == "<= 87 C, warn above 82"


def _r(verdict):
    return CheckResult("x", "node", verdict, "m")


@pytest.mark.parametrize("verdicts, expected", [
    ([Verdict.PASS, Verdict.WARN, Verdict.SKIP], "PASS"),
    ([Verdict.PASS, Verdict.FAIL], "FAIL"),
    # A check that could not run has not shown the node is good, nor that it is bad (issue 24)
    ([Verdict.PASS, Verdict.ERROR], "ERROR"),
    ([Verdict.ERROR, Verdict.FAIL], "FAIL"),
    ([], "PASS"),
])
def test_node_verdict(verdicts, expected):
    assert node_verdict([_r(v) for v in verdicts]) == expected
