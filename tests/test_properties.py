"""Property-based tests (hypothesis) of what nodeqc reads from people: profiles, simulated-node
scenarios, --inject values and durations. Whatever is generated, nodeqc answers with exit 0, 1 or 2
and, when it refuses, one line naming what is wrong: never a traceback, never an internal error,
never a hang, and never a value it cannot judge with (nan, infinity) accepted."""

from __future__ import annotations

import contextlib
import io
import json
import math
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nodeqc.backends import simulated_hardware
from nodeqc.backends.sim.faults import GPU_FAULTS, NIC_FAULTS, parse_fault
from nodeqc.backends.sim.scenario import SCENARIO_SCHEMA, load_scenario
from nodeqc.cli import common as cli_common, main as cli
from nodeqc.core.errors import UsageError
from nodeqc.spec.profile import SCHEMA, load_profile

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """`nodeqc ARGV` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:  # --help and --version, as argparse does it
            code = e.code if isinstance(e.code, int) else 0
    return code, out.getvalue(), err.getvalue()


def assert_one_line_refusal(code: int, err: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("nodeqc: ") and "internal error" not in err and "Traceback" not in err, err


# ------------------------------------------------------------------ TOML documents

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0])
SCALARS = st.one_of(st.integers(-10**20, 10**20), st.integers(-5, 100), FLOATS, st.booleans(), TEXT)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.lists(TEXT, max_size=3),
                   st.dictionaries(st.sampled_from(["fail", "warn", "x"]), SCALARS, max_size=3))


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        # JSON's escapes are TOML's basic-string escapes; TOML also wants DEL escaped.
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def toml_document(top: dict[str, Any], tables: dict[str, Any]) -> str:
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in top.items()]
    for name, body in tables.items():
        if isinstance(body, list):  # an array of tables
            for entry in body:
                lines.append(f"[[{name}]]")
                lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in entry.items()]
        else:
            lines.append(f"[{name}]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def keys_of(schema: dict[str, Any], table: str) -> st.SearchStrategy[str]:
    return st.sampled_from(sorted(schema[table])) | st.sampled_from(["typo_key", "max_temp", ""])


def table_strategy(schema: dict[str, Any], table: str, good: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict]:
    """Mostly plausible values for the schema's keys (so generated documents get past the first
    check and reach deeper ones), now and then anything at all."""
    plausible = st.fixed_dictionaries({}, optional={k: s for k, s in good.items()})
    anything = st.dictionaries(keys_of(schema, table), VALUES, max_size=4)
    return st.builds(lambda a, b: {**a, **b}, plausible, st.one_of(st.just({}), st.just({}), anything))


# Mostly numbers a profile or node could hold, so that documents reach the checks past the first.
NUMBERS = st.one_of(st.integers(1, 2000), st.floats(0.5, 5000), st.integers(1, 2000), FLOATS)


@st.composite
def profiles(draw) -> str:
    top = {"description": draw(TEXT | st.just("mine")), "extends": draw(st.sampled_from(["h100", "generic", "a100", "nope"]))}
    top.update(draw(table_strategy(SCHEMA, "", {"warn_band": NUMBERS, "kind": st.sampled_from(["gpu", "node", "x"])})))
    tables = {}
    for table in draw(st.sets(st.sampled_from(["gpu", "host", "nic", "run"]), max_size=4)):
        good = {k: NUMBERS for k in SCHEMA[table] if SCHEMA[table][k].kind in ("threshold", "number", "int")}
        tables[table] = draw(table_strategy(SCHEMA, table, good))
    return toml_document(top, tables)


@st.composite
def scenarios(draw) -> str:
    top = {"description": "generated"}
    top.update(draw(table_strategy(SCENARIO_SCHEMA, "", {"time_scale": NUMBERS, "seed": st.integers(0, 10**12)})))
    tables: dict[str, Any] = {
        "host": {"cores": draw(st.integers(1, 512) | st.integers(-2, 512) | FLOATS),
                 "memory_gib": draw(st.one_of(NUMBERS, NUMBERS, NUMBERS, st.just(1e300))),
                 **draw(table_strategy(SCENARIO_SCHEMA, "host", {"threads": st.integers(-1, 1024)}))},
        "gpus": {"model": draw(st.sampled_from(["h100-sxm5", "a100-sxm4-80gb", "h100-sxm5", "nope"])),
                 "count": draw(st.integers(1, 8) | st.integers(-1, 70)),
                 **draw(table_strategy(SCENARIO_SCHEMA, "gpus", {"bus_ids": st.lists(TEXT, max_size=3)}))},
    }
    if draw(st.booleans()):
        nic = {"name": TEXT, "speed_mbps": st.integers(1, 10**9) | st.integers(-1, 1), "pcie_gen": st.integers(1, 6) | st.integers(0, 7),
               "pcie_width": st.sampled_from([1, 8, 16, 0, 3]), "mtu": st.integers(68, 10**6) | st.integers(0, 100),
               "kind": st.sampled_from(["ethernet", "infiniband", "x"]), "ib_device": TEXT}
        entries = draw(st.lists(table_strategy(SCENARIO_SCHEMA, "nics", nic), max_size=3))
        tables["nics"] = entries if draw(st.booleans()) or not entries else entries[0]  # [[nics]] or [nics]
    return toml_document(top, tables)


@PROPERTY
@given(text=profiles())
def test_any_profile_is_loaded_or_refused_in_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("p") / "mine.toml"
    path.write_text(text, encoding="utf-8")
    try:
        profile = load_profile(str(path))
    except UsageError as e:
        assert "\n" not in str(e) and str(e)
    else:
        for section in ("gpu", "host", "nic", "run"):
            for key, value in profile.section(section).items():
                if key.startswith(("min_", "max_")):
                    t = profile.threshold(section, key)
                    assert math.isfinite(t.fail) and math.isfinite(t.warn), (key, value)
                elif isinstance(value, float):
                    assert math.isfinite(value), (key, value)
    code, _, err = run_main(["profiles", str(path)])
    assert code in (0, 2) and "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert_one_line_refusal(code, err)


def exercise(hw: Any) -> None:
    """What a run asks of the simulated node first: its host, GPUs, one reading of each, its NICs."""
    hw.host.info()
    hw.mgmt.open()
    for g in hw.mgmt.gpus():
        hw.mgmt.sample(g.index)
        hw.mgmt.counters(g.index)
    for nic in hw.nics.nics():
        hw.nics.pcie_link(nic.name)


@PROPERTY
@given(text=scenarios())
def test_any_scenario_is_simulated_or_refused_in_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("s") / "node.toml"
    path.write_text(text, encoding="utf-8")
    try:
        scenario = load_scenario(str(path))
        exercise(simulated_hardware(str(path), []))
    except UsageError as e:
        assert "\n" not in str(e) and str(e)
    else:
        scale = scenario.data.get("time_scale", 10.0)
        assert math.isfinite(scale) and scale > 0
        assert math.isfinite(scenario.data["host"]["memory_gib"])


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=scenarios())
def test_any_scenario_from_the_command_line_gives_exit_0_1_or_2(tmp_path_factory, text):
    """A whole (short) run on the generated node: inventory and host checks only."""
    d = tmp_path_factory.mktemp("run")
    path = d / "node.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_main(["--headless", "--simulate", str(path), "--profile", "generic", "--only",
                               "inventory,host", "--out", str(d / "out")])
    assert code in (0, 1, 2) and "Traceback" not in err and "internal error" not in err, err
    if code == 2 and not out:
        assert_one_line_refusal(code, err)


# ------------------------------------------------------------------ --inject

FAULT_NAMES = sorted(set(GPU_FAULTS) | set(NIC_FAULTS)) + ["tmp", "pcie", "x"]
FAULT_VALUES = st.one_of(st.none(), st.sampled_from(["nan", "NaN", "inf", "-inf", "+nan", "1e309", "-0", "0", "1",
                                                     "8", "16", "0.5", "1e-320", "95", "hw_slowdown", "", " 8", "8\n"]),
                         st.integers(-10**6, 10**6).map(str), st.floats().map(repr), TEXT)


@st.composite
def injects(draw) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(TEXT)
    target = draw(st.sampled_from(["gpu", "nic", "cpu", "GPU", ""]))
    index = draw(st.sampled_from(["0", "3", "7", "99999999999999999999", "-1", ""]))
    name = draw(st.sampled_from(FAULT_NAMES))
    value = draw(FAULT_VALUES)
    return f"{target}{index}:{name}" + ("" if value is None else f"={value}")


@PROPERTY
@given(text=injects())
def test_any_inject_value_is_parsed_to_a_usable_fault_or_refused(text):
    try:
        fault = parse_fault(text)
    except UsageError as e:
        assert "\n" not in str(e) and str(e).startswith("--inject ")
        return
    if isinstance(fault.value, float):
        assert math.isfinite(fault.value)
    parser, _ = {"gpu": GPU_FAULTS, "nic": NIC_FAULTS}[fault.target][fault.name]
    assert (fault.value is None) == (parser is None)


@PROPERTY
@given(text=injects())
def test_any_inject_on_the_command_line_is_one_line_and_exit_2_before_any_work(tmp_path_factory, text):
    """With a profile that does not exist the run cannot start: the --inject value is judged first,
    then the node, then the profile; each refusal is one line."""
    code, out, err = run_main(["--headless", "--simulate", "hgx-h100", f"--inject={text}", "--profile",
                               "/nonexistent/profile.toml"])
    assert_one_line_refusal(code, err)
    assert out == ""


# ------------------------------------------------------------------ durations

DURATION_TEXT = st.one_of(
    TEXT,
    st.from_regex(r"\A-?[0-9]{0,4}(\.[0-9]{0,2})?[dhms]?([0-9]{0,3}[dhms]?){0,3}\Z"),
    st.sampled_from(["1h30", "1h30m", "-1h", "90", "0s", "nan", "infh", "1e9s", "720h", "721h", "30d", "1d1s"]),
)


@PROPERTY
@given(text=DURATION_TEXT)
def test_any_duration_is_a_positive_bounded_number_of_seconds_or_refused(text):
    import argparse

    try:
        seconds = cli_common.duration(text)
    except argparse.ArgumentTypeError as e:
        assert "\n" not in str(e) and "expected a duration" in str(e)
        return
    assert math.isfinite(seconds) and 0 < seconds <= cli_common.MAX_DURATION_S
    # Every number carries its unit: the accepted text is digits and units only.
    assert set(text.strip().lower()) <= set(string.digits + ".dhms")
    assert text.strip()[-1].lower() in "dhms"


@PROPERTY
@given(text=DURATION_TEXT)
def test_any_burn_in_on_the_command_line_is_one_line_and_exit_2_before_any_work(text):
    code, out, err = run_main(["--headless", f"--burn-in={text}", "--profile", "/nonexistent/profile.toml",
                               "--simulate", "h100"])
    assert_one_line_refusal(code, err)
    assert out == ""


@PROPERTY
@given(limit=st.one_of(TEXT, st.integers(-10, 10).map(str)))
def test_any_history_limit_lists_or_refuses(tmp_path_factory, limit):
    archive = tmp_path_factory.mktemp("a")
    code, _, err = run_main(["history", "--archive", str(archive), f"--limit={limit}"])
    assert code in (0, 2) and "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert_one_line_refusal(code, err)
    else:
        assert int(limit) >= 1
