"""host.optics through mlxlink (NVIDIA MFT): captured real output parsed (tests/fixtures/mlxlink-*,
sources in each file's header), the module's readings against its own alarm range, the link's BER
after FEC against the published floor, the fall-back to ethtool -m, the tool run for real through
stand-in executables, and garbage in, one clear "unreadable" out."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeqc.backends.base import NicInfo
from nodeqc.backends.host_stress import HostStress, LinuxHostStress, parse_module
from nodeqc.backends.mlxlink import LinkReading, parse_mlxlink
from nodeqc.backends.optics import read_optics
from nodeqc.checks import host_stress
from nodeqc.checks.host_stress import MAX_LINK_BER
from nodeqc.core.model import Verdict

from conftest import cli

FIXTURES = Path(__file__).parent / "fixtures"
ETHTOOL_QSFP28 = (FIXTURES / "ethtool-m-qsfp28-mellanox.txt").read_text()


def fixture(name: str) -> str:
    """A captured output without the header that says where it came from."""
    return "\n".join(line for line in (FIXTURES / name).read_text().splitlines() if not line.startswith("#"))


def judge(link: LinkReading | None, iface: str = "ibp24s0") -> list:
    return host_stress.optics({}, None, {iface: (iface, link)})


def test_ndr_passive_copper_has_no_monitor_to_judge():
    link = parse_mlxlink(fixture("mlxlink-cx7-ndr-osfp-dac-show-module.txt"))
    assert link is not None and link.error is None
    assert (link.state, link.speed, link.recommendation) == ("Active", "IB-NDR", "No issue was observed")
    assert link.fec.startswith("Ethernet_Consortium_LL_50G_RS_FEC_PLR")
    m = link.module
    assert (m.vendor, m.part, m.identifier) == ("FS", "OSFPFL-400G-PC01", "OSFP")
    assert m.values == {}  # "0 [0..0]": a passive cable's empty monitor, not a 0 C reading
    assert judge(link) == []  # no readings, no counters (--show_module only): nothing judged, nothing made up


def test_dac_link_with_counters_and_no_errors_passes():
    link = parse_mlxlink(fixture("mlxlink-bf3-100g-dac-m-c.txt"))
    assert link.module.values == {} and link.module.part == "Q28-PC03"  # "Digital Diagnostic Monitoring: No"
    assert link.effective_errors == 0 and link.effective_ber == pytest.approx(15e-255)
    assert link.raw_errors_per_lane == [0, 0, 0, 0] and link.minutes_since_clear == 25075.2
    assert link.symbol_ber is None  # an Ethernet port: mlxlink prints symbol errors on InfiniBand only
    [r] = judge(link)
    assert r.verdict is Verdict.PASS and "no errors left after FEC in 25075.2 min" in r.message
    assert r.evidence["reader"] == "mlxlink" and r.evidence["effective_errors"] == 0


def test_raw_errors_before_fec_are_evidence_not_a_verdict():
    link = parse_mlxlink(fixture("mlxlink-cx4-100g-counters.txt"))  # the forum's "Key : value" spacing
    assert link.module is None and link.raw_ber == pytest.approx(3e-12)
    assert link.raw_errors_per_lane == [26711, 0, 0, 9108] and link.minutes_since_clear == 1715.4
    [r] = judge(link)
    assert r.verdict is Verdict.PASS and r.evidence["raw_ber"] == pytest.approx(3e-12)


def test_healthy_optical_module_against_its_own_alarm_range():
    link = parse_mlxlink(fixture("mlxlink-osfp-400g-optical-module.txt"))
    m = link.module
    assert m.values["temperature"] == [54] and m.values["voltage"] == [3261.2]
    assert m.values["rx_power"] == [1.886, 1.989, 2.281, 1.976] and m.values["bias"] == [8.38] * 4
    assert m.thresholds["rx_power"] == {"low_alarm": -10.41, "high_alarm": 6}
    assert m.units == {"temperature": "C", "voltage": "mV", "bias": "mA", "rx_power": "dBm", "tx_power": "dBm"}
    [r] = judge(link)
    assert r.verdict is Verdict.PASS and "(CLT T-F4GS-BV0)" in r.message
    assert r.values["rx_power"].value == 1.886 and r.values["rx_power"].unit == "dBm"


def test_json_module_with_a_dark_lane_fails_with_the_lane_named():
    link = parse_mlxlink((FIXTURES / "mlxlink-osfp-dr4-module.json").read_text())
    assert link.module.part == "RTXM600-2401" and link.module.values["rx_power"] == [0, 2, -9, 0]
    [r] = judge(link)
    assert r.verdict is Verdict.FAIL and r.code == "OPTICS_ALARM"
    assert "receive power (lane 3) -9 dBm is outside the module's alarm range -8..6" in r.message


def test_hot_module_fails_in_its_units():
    text = fixture("mlxlink-osfp-400g-optical-module.txt").replace(": 54 [-5..75]", ": 79 [-5..75]")
    [r] = judge(parse_mlxlink(text))
    assert r.verdict is Verdict.FAIL and "ibp24s0 module temperature 79 C is outside" in r.message


def _with_ber(ber: str, errors: str) -> str:
    return (fixture("mlxlink-bf3-100g-dac-m-c.txt")
            .replace("Effective Physical Errors          : 0", f"Effective Physical Errors          : {errors}")
            .replace("Effective Physical BER             : 15E-255", f"Effective Physical BER             : {ber}"))


def test_effective_ber_above_the_floor_fails_and_at_it_passes():
    [r] = judge(parse_mlxlink(_with_ber("3E-10", "1354000")))
    assert r.verdict is Verdict.FAIL and r.code == "LINK_BER_HIGH"
    assert "effective BER (after FEC) 3.0e-10 (1354000 errors in 25075.2 min) is above 1e-12" in r.message
    [r] = judge(parse_mlxlink(_with_ber("1E-12", "4")))
    assert MAX_LINK_BER == 1e-12 and r.verdict is Verdict.PASS and "link BER 1.0e-12 after FEC" in r.message


def test_one_error_soon_after_a_clear_is_too_few_bits_to_fail():
    text = _with_ber("2E-12", "1").replace("Time Since Last Clear [Min]        : 25075.2",
                                           "Time Since Last Clear [Min]        : 0.1")
    [r] = judge(parse_mlxlink(text))
    assert r.verdict is Verdict.PASS and r.code is None
    assert "effective BER (after FEC) 2.0e-12 (1 error in 0.1 min) is from too few bits to judge" in r.message


@pytest.mark.parametrize("errors, ber, says", [
    # No error beside a rate above none (mlxlink prints 15E-255 for none): the port's counters contradict
    # themselves; it passed as "from too few bits to judge" (2026-11-29 fuzzing).
    ("0", "1E-5", "mlxlink reads 0 effective physical errors, yet its effective physical BER is 1.0e-05 (none prints as 15E-255)"),
    # A count past a 64-bit counter: an OverflowError in the Poisson test ended the run (INTERNAL_ERROR).
    ("1" + "0" * 400, "1E-5", "mlxlink's 'Effective Physical Errors' reads '1000"),
    (str(2 ** 64), "1E-5", "mlxlink's 'Effective Physical Errors' reads '18446744073709551616', not a count"),
])
def test_counters_no_port_can_have_are_unreadable_never_a_pass_or_a_traceback(errors, ber, says):
    link = parse_mlxlink(_with_ber(ber, errors))
    assert link.error is not None and link.error.startswith(says), link.error
    [r] = judge(link)
    assert (r.verdict, r.code) == (Verdict.SKIP, "OPTICS_UNREADABLE")
    assert parse_mlxlink(_with_ber("1E-5", str(2 ** 64 - 1))).error is None  # the counter's own largest


@pytest.mark.parametrize("old, new, says", [
    (": 54 [-5..75]", ": 500 [-5..1000]", "'Temperature [C]' reads '500 [-5..1000]': outside what a module can report (-128 to 128 C)"),
    (": 54 [-5..75]", ": 54 [-99999..99999]", "outside what a module can report (-128 to 128 C)"),
])
def test_module_readings_and_ranges_no_module_can_report_are_unreadable(old, new, says):
    """An alarm range read as [-99999..99999] passed a module at 500 C, "inside its own range"."""
    text = fixture("mlxlink-osfp-400g-optical-module.txt")
    assert old in text
    link = parse_mlxlink(text.replace(old, new))
    assert link.error is not None and says in link.error, link.error
    [r] = judge(link)
    assert (r.verdict, r.code) == (Verdict.SKIP, "OPTICS_UNREADABLE")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.floats(1.01, 1e4))
def test_the_ber_test_is_never_bolder_than_the_exact_poisson_tail(errors, ratio):
    """above_floor uses an upper bound of the tail: it may keep a port it could fail, never the reverse."""
    import math

    from nodeqc.checks.host_stress import BER_SIGNIFICANCE, above_floor

    mean = errors / ratio
    exact = 1 - sum(math.exp(-mean) * mean ** i / math.factorial(i) for i in range(errors))
    if above_floor(errors, MAX_LINK_BER * ratio):
        assert exact < BER_SIGNIFICANCE


def _infiniband(symbol_errors: int, symbol_ber: str, effective_errors: int, effective_ber: str) -> str:
    """An InfiniBand port prints Symbol Errors and Symbol BER after the clear time (mstflint,
    MlxlinkCommander::prepareBerInfo); the lines are put into a captured output in that format."""
    return _with_ber(effective_ber, str(effective_errors)).replace(
        "Time Since Last Clear [Min]        : 25075.2\n",
        f"Time Since Last Clear [Min]        : 25075.2\nSymbol Errors                      : {symbol_errors}\n"
        f"Symbol BER                         : {symbol_ber}\n")


def test_on_infiniband_the_symbol_ber_is_judged():
    link = parse_mlxlink(_infiniband(88, "2E-11", 0, "15E-255"))
    assert link.symbol_errors == 88 and link.symbol_ber == pytest.approx(2e-11)
    [r] = judge(link)
    assert r.verdict is Verdict.FAIL and "symbol BER 2.0e-11 (88 errors in 25075.2 min) is above 1e-12" in r.message
    # What PLR retransmission repairs on HDR/NDR shows in the effective BER, not in what the
    # application sees (ibdiagnet: the symbol errors are the errors after correction).
    [r] = judge(parse_mlxlink(_infiniband(0, "15E-255", 9000, "4E-10")))
    assert r.verdict is Verdict.PASS and "no errors left after FEC" in r.message
    assert r.evidence["effective_ber"] == pytest.approx(4e-10) and "effective_ber" not in r.values


def _as_json(text: str) -> str:
    """A text output in the shape mlxlink's --json gives it (mstflint MlxlinkCmdPrint::toJsonFormat:
    per-lane fields as {"values": [...]}, the rest as text)."""
    sections: dict = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and lines[i + 1].startswith("---"):
            current = sections.setdefault(line.strip(), {})
        elif " : " in line:
            key, _, value = line.partition(":")
            key, value = " ".join(key.split()), value.strip()
            current[key] = {"values": value.split(",")} if key.endswith("Per Lane") else value
    return json.dumps({"result": {"output": sections}, "status": {"code": 0, "message": "success"}}, indent="\t")


def test_json_and_text_of_the_same_port_read_the_same():
    text = _with_ber("3E-10", "1354000")
    assert parse_mlxlink(_as_json(text)) == parse_mlxlink(text)


def test_no_cable_is_nothing_to_judge_and_a_failure_is_said():
    assert parse_mlxlink("", "-E- No plugged cable detected") is None
    assert parse_mlxlink(json.dumps({"status": {"code": 1, "message": "No plugged cable detected"}})) is None
    link = parse_mlxlink("", "-E- Failed to open device: 0000:18:00.0, Permission denied")
    assert link.error == "mlxlink failed: -E- Failed to open device: 0000:18:00.0, Permission denied"
    [r] = judge(link)
    assert r.verdict is Verdict.SKIP and r.code == "OPTICS_UNREADABLE" and "Permission denied" in r.message


class FakeStress(HostStress):
    """The reading side of host stress with canned tool output (the other work is not used here)."""

    def __init__(self, mlxlink: dict[str, tuple[str, str | None]], modules: dict[str, str | None],
                 missing: tuple[str, ...] = ()):
        self.outputs, self.modules, self.missing, self.asked = mlxlink, modules, missing, []

    def cpu(self, seconds):  # pragma: no cover - not used by the optics
        raise AssertionError

    def memory_bandwidth(self):  # pragma: no cover
        raise AssertionError

    def fio(self, target, seconds, scratch):  # pragma: no cover
        raise AssertionError

    def missing_tool(self, tool):
        return f"install {tool}" if tool in self.missing else None

    def module(self, interface):
        self.asked.append(("ethtool", interface))
        return self.modules.get(interface)

    def mlxlink(self, device):
        self.asked.append(("mlxlink", device))
        return self.outputs[device]


NICS = [NicInfo("ibp24s0", "infiniband", driver="mlx5_core", bus_id="0000:18:00.0"),
        NicInfo("ibp64s0", "infiniband", driver="mlx5_core", bus_id="0000:40:00.0"),
        NicInfo("eno1", "ethernet", driver="ixgbe", bus_id="0000:03:00.0")]


def test_mellanox_ports_go_to_mlxlink_the_rest_to_ethtool():
    stress = FakeStress({"0000:18:00.0": (fixture("mlxlink-osfp-400g-optical-module.txt"), None),
                         "0000:40:00.0": ("", "-E- No plugged cable detected")}, {"eno1": ETHTOOL_QSFP28})
    read = read_optics(stress, NICS)
    assert sorted(stress.asked) == [("ethtool", "eno1"), ("mlxlink", "0000:18:00.0"), ("mlxlink", "0000:40:00.0")]
    assert read.links["ibp64s0"] == ("ibp64s0", None) and read.notes == {}
    results = host_stress.optics(read.modules, read.ethtool_missing, read.links, read.notes)
    assert {r.subject: r.evidence["reader"] for r in results} == {"eno1": "ethtool -m", "ibp24s0": "mlxlink"}


def test_without_mlxlink_the_ports_are_read_with_ethtool_and_it_is_said():
    stress = FakeStress({}, {"ibp24s0": ETHTOOL_QSFP28, "ibp64s0": None, "eno1": None}, missing=("mlxlink",))
    read = read_optics(stress, NICS)
    assert not any(tool == "mlxlink" for tool, _ in stress.asked) and read.links == {}
    [r] = host_stress.optics(read.modules, read.ethtool_missing, read.links, read.notes)
    assert r.subject == "ibp24s0" and r.verdict is Verdict.PASS
    assert "read with ethtool -m: mlxlink is not installed, so its link error rates were not read" in r.message
    assert r.evidence["mlxlink"].startswith("mlxlink is not installed")


def test_a_port_mlxlink_cannot_read_falls_back_to_ethtool_or_says_why():
    stress = FakeStress({"0000:18:00.0": ("garbage", None), "0000:40:00.0": ("", "-E- Permission denied")},
                        {"ibp24s0": ETHTOOL_QSFP28, "ibp64s0": None})
    read = read_optics(stress, NICS[:2])
    by = {r.subject: r for r in host_stress.optics(read.modules, read.ethtool_missing, read.links, read.notes)}
    assert by["ibp24s0"].verdict is Verdict.PASS and "mlxlink could not read it" in by["ibp24s0"].message
    assert by["ibp64s0"].verdict is Verdict.SKIP and by["ibp64s0"].code == "OPTICS_UNREADABLE"
    assert "Permission denied" in by["ibp64s0"].message


def test_a_hung_ethtool_is_a_port_not_judged_never_a_hang_or_a_traceback(tmp_path, monkeypatch):
    """The real reader with a stand-in `ethtool` that never answers: after its timeout the port is
    SKIP MODULE_UNREADABLE naming the hang, and the other ports are still judged."""
    import nodeqc.backends.host_stress as backend

    _tool(tmp_path, "ethtool", 'case "$2" in eno1) exec sleep 30;; *) exit 1;; esac\n')
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(backend, "ETHTOOL_TIMEOUT_S", 0.5)

    class Hung(FakeStress):
        def module(self, interface):
            return LinuxHostStress.module(self, interface) if interface == "eno1" else self.modules.get(interface)

    stress = Hung({}, {"ibp24s0": ETHTOOL_QSFP28}, missing=("mlxlink",))
    read = read_optics(stress, [NICS[0], NICS[2]])
    by = {r.subject: r for r in host_stress.optics(read.modules, read.ethtool_missing, read.links, read.notes,
                                                   read.unread)}
    assert by["eno1"].verdict is Verdict.SKIP and by["eno1"].code == "MODULE_UNREADABLE"
    assert "ethtool -m did not answer within 0.5 s" in by["eno1"].message
    assert by["ibp24s0"].verdict is Verdict.PASS


def test_bytes_not_utf8_from_ethtool_or_mlxlink_are_read_never_a_traceback(tmp_path, monkeypatch):
    """2026-11-29 fuzzing: a module's vendor name in bytes that are not UTF-8 raised
    UnicodeDecodeError out of the reader, and the run ended in INTERNAL_ERROR."""
    _tool(tmp_path, "ethtool", "printf 'Identifier : 0x11 (QSFP28)\\nVendor name : \\377\\376ACME\\n"
                               "Module temperature : 40.00 degrees C / 104.00 degrees F\\n'\n")
    _tool(tmp_path, "mlxlink", "printf 'Module Info\\n-----------\\nVendor Name : \\377ACME\\n'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    module = parse_module(LinuxHostStress().module("eno1"))
    assert module.vendor == "\ufffd\ufffdACME" and module.values["temperature"] == [40.0]
    text, _ = LinuxHostStress().mlxlink("0000:18:00.0")
    assert "\ufffdACME" in text


def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_mlxlink_runs_for_real_json_first_then_text(tmp_path, monkeypatch):
    text = FIXTURES / "mlxlink-bf3-100g-dac-m-c.txt"
    grep, cat = shutil.which("grep"), shutil.which("cat")  # before PATH holds only the stand-ins
    # A version without --json rejects the option (exit 1, usage on stderr); mstflint names it mstlink.
    _tool(tmp_path, "mstlink", f'case "$*" in *--json*) echo "-E- Unrecognized option: --json" >&2; exit 1;; esac\n'
                               f'[ "$*" = "-d 0000:18:00.0 -m -c" ] || exit 3\n{grep} -v "^#" "{text}"\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    stress = LinuxHostStress()
    assert stress.missing_tool("mlxlink") is None
    out, problem = stress.mlxlink("0000:18:00.0")
    assert problem is None and parse_mlxlink(out, problem).minutes_since_clear == 25075.2
    json_out = tmp_path / "port.json"
    json_out.write_text(_as_json(fixture("mlxlink-bf3-100g-dac-m-c.txt")))
    _tool(tmp_path, "mlxlink", f'[ "$*" = "-d 0000:18:00.0 -m -c --json" ] || exit 3\n{cat} "{json_out}"\n')
    out, problem = stress.mlxlink("0000:18:00.0")
    assert out.startswith("{") and parse_mlxlink(out, problem).effective_errors == 0
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    assert "mstflint" in stress.missing_tool("mlxlink")


def test_a_hung_mlxlink_costs_one_timeout_and_says_so(tmp_path, monkeypatch):
    import nodeqc.backends.host_stress as backend

    calls = tmp_path / "calls"
    sleep = shutil.which("sleep")
    _tool(tmp_path, "mlxlink", f'echo "$*" >> "{calls}"\nexec {sleep} 5\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(backend, "MLXLINK_TIMEOUT_S", 0.5)
    out, problem = LinuxHostStress().mlxlink("0000:18:00.0")
    assert (out, problem) == ("", "mlxlink did not answer within 0.5 s")
    assert calls.read_text().splitlines() == ["-d 0000:18:00.0 -m -c --json"]  # not asked again without --json
    [r] = judge(parse_mlxlink(out, problem))
    assert r.verdict is Verdict.SKIP and "did not answer within 0.5 s" in r.message


@pytest.mark.slow
def test_simulated_node_reads_mlxlink_and_falls_back_without_it(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text('description = "x"\nextends = "hgx-h100"\n[host]\nstress_s = 1\n')
    (tmp_path / "a").mkdir()
    common = ("--headless", "--profile", str(prof), "--simulate", "hgx-h100", "--only", "host.optics",
              "--archive", str(tmp_path / "a"), "--inject", "nic3:optics_temp=85")
    p = cli(*common, "--inject", "nic1:link_ber=1e-10", "--out", str(tmp_path / "o1"))
    assert p.returncode == 1, p.stderr
    assert "ibp24s0 link symbol BER 1.0e-10 (144000 errors in 60 min)" in p.stderr and "[LINK_BER_HIGH]" in p.stderr
    assert "ibp79s0 module temperature 85 C is outside the module's alarm range -5..75" in p.stderr
    p = cli(*common, "--inject", "host:no_mlxlink", "--out", str(tmp_path / "o2"))
    assert p.returncode == 1 and "LINK_BER_HIGH" not in p.stderr
    assert "ibp79s0 module temperature 85 C is outside the module's alarm range -10..80" in p.stderr  # ethtool's


# ---------------------------------------------------------------- garbage in: "unreadable", never a traceback

def _is_clean(link: LinkReading | None) -> bool:
    if link is None:
        return True
    results = judge(link)  # the verdict side must take whatever the parser gives it
    if link.error is not None:
        assert "\n" not in link.error and link.error.strip()
        assert [r.code for r in results] == ["OPTICS_UNREADABLE"]
    return True


FIELD_LINE = st.sampled_from(["Temperature [C]", "Voltage [mV]", "Bias Current [mA]", "Rx Power Current [dBm]",
                              "Effective Physical BER", "Symbol BER", "Raw Physical Errors Per Lane",
                              "Time Since Last Clear [Min]", "Effective Physical Errors", "State"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400), st.one_of(st.none(), st.text(max_size=80)))
def test_any_text_is_read_or_said_unreadable(text, problem):
    assert _is_clean(parse_mlxlink(text, problem))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(FIELD_LINE, st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                                                    blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                                                  max_size=40)), max_size=8),
       st.sampled_from(["Module Info", "Physical Counters and BER Info", "Operational Info"]))
def test_known_fields_with_any_value_are_read_or_said_unreadable(fields, section):
    text = f"{section}\n{'-' * len(section)}\n" + "".join(f"{k:<35}: {v}\n" for k, v in fields)
    assert _is_clean(parse_mlxlink(text))


JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(JSON, st.dictionaries(FIELD_LINE, JSON, max_size=5))
def test_any_json_is_read_or_said_unreadable(anything, module_fields):
    assert _is_clean(parse_mlxlink(json.dumps(anything)))
    shaped = {"result": {"output": {"Module Info": module_fields, "Physical Counters and BER Info": module_fields}}}
    assert _is_clean(parse_mlxlink(json.dumps(shaped)))


def test_deep_or_huge_input_is_said_unreadable():
    assert parse_mlxlink("[" * 100000 + "]" * 100000).error.startswith("mlxlink's output has no sections to read")
    deep = parse_mlxlink("{" + '"a":{' * 5000 + "}" * 5001)
    assert deep.error and "unreadable" in deep.error
    big = parse_mlxlink("Module Info\n-----------\nTemperature [C] : " + "9" * 400 + " [0..1]\n")
    assert big.error == "mlxlink's 'Temperature [C]' reads '" + "9" * 40 + "', not a finite number"
