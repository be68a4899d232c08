"""The node's PSUs through its BMC around the power tests: ipmitool's output parsed from fixtures in
its real formats (`sdr type` and `sensor` listings), garbage refused with one clear error, the
verdict at its edges on hand-built readings, the reader through a stand-in ipmitool on PATH, the
watch's order of reads, and the simulated node's PSU faults end to end."""

from __future__ import annotations

import json
import os
import stat
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeqc.backends.bmc import (INSTALL, Bmc, BmcError, BmcReading, BmcRun, BmcUnreadable, BmcWatch, IpmitoolBmc,
                                 Sensor, parse_sdr, parse_sensor_thresholds)
from nodeqc.checks.psu import judge_psu
from nodeqc.core.codes import REMEDIATION
from nodeqc.core.model import Verdict

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# ---------------------------------------------------------------- parsers, on ipmitool's formats

def test_sdr_power_supply_states_and_readings():
    sensors = parse_sdr(fixture("ipmitool-sdr-type-power-supply-ac-lost.txt"), "psu")
    by = {s.name: s for s in sensors}
    assert by["PSU1 Status"] == Sensor("PSU1 Status", "psu", "ok", None, "", ("Presence detected",), "C8h")
    assert by["PSU2 Status"].events == ("Presence detected", "Power Supply AC lost")
    assert by["PSU3 Status"].status == "ns" and by["PSU3 Status"].events == ()  # an empty bay: No Reading
    assert by["PSU Redundancy"].events == ("Non-Redundant: Sufficient from Redundant",)
    assert (by["Total_Power"].reading, by["Total_Power"].unit) == (2165.0, "Watts")


def test_sdr_states_led_by_a_reading():
    """Some BMCs lead a PSU's states with its output: '0 Watts, Presence detected, Failure detected'."""
    by = {s.name: s for s in parse_sdr(fixture("ipmitool-sdr-type-power-supply-watts-first.txt"), "psu")}
    assert (by["Power Supply 1"].reading, by["Power Supply 1"].events) == (0.0, ("Presence detected", "Failure detected"))
    assert by["Power Supply 2"].reading == 1085.0 and by["Power Supplies"].events == ("Fully Redundant",)


def test_sdr_threshold_sensors_keep_the_bmcs_status():
    by = {s.name: s for s in parse_sdr(fixture("ipmitool-sdr-type-voltage.txt"), "voltage")}
    assert (by["P12V"].reading, by["P12V"].unit, by["P12V"].status) == (12.06, "Volts", "ok")
    assert by["PSU2 VOut"].status == "lcr" and by["P3V_BAT"].status == "lnc"
    assert by["PSU3 VIn"].reading is None and by["PSU3 VIn"].events == ()
    current = {s.name: s for s in parse_sdr(fixture("ipmitool-sdr-type-current.txt"), "current")}
    assert (current["PSU2 IOut"].reading, current["PSU2 IOut"].status) == (131.0, "ucr")


def test_sensor_list_thresholds():
    limits = parse_sensor_thresholds(fixture("ipmitool-sensor.txt"))
    assert limits["P12V"] == {"lnr": 10.2, "lcr": 10.8, "lnc": 11.4, "unc": 12.6, "ucr": 13.2, "unr": 13.8}
    assert limits["PVCCIN_CPU0"] == {"lcr": 1.69, "ucr": 1.87}  # "na" where the BMC has none
    assert limits["PSU3 VIn"]["lcr"] == 180.0  # a sensor without a reading still lists its thresholds
    assert "PSU1 Status" not in limits  # discrete sensors have none


@pytest.mark.parametrize("text, where", [
    ("PSU1 Status | C8h | ok | Presence detected\n", "line 1: expected 5 columns"),
    ("\nPSU1 Status | C8h | ok | 10.1 | Presence detected\nPSU2 | C9 | ok | 10.2 | x\n", "line 3: expected a sensor id"),
    ("PSU1 Status | C8h | fine | 10.1 | Presence detected\n", "line 1: expected a sensor id like 66h and a status"),
    (" | C8h | ok | 10.1 | Presence detected\n", "line 1: no sensor name"),
    ("Could not open device at /dev/ipmi0\n", "line 1: expected 5 columns"),
])
def test_sdr_out_of_format_is_one_clear_error(text, where):
    with pytest.raises(BmcUnreadable, match=where):
        parse_sdr(text, "psu")


def test_sensor_list_out_of_format_is_one_clear_error():
    with pytest.raises(BmcUnreadable, match=r"line 1: threshold lcr is 'low', expected a number or na"):
        parse_sensor_thresholds("P12V | 12.0 | Volts | ok | na | low | na | na | na | na\n")
    with pytest.raises(BmcUnreadable, match="line 2: expected 10 columns"):
        parse_sensor_thresholds("P12V | 12.0 | Volts | ok | na | na | na | na | na | na\nP5V | 5.0 | Volts | ok\n")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_any_text_parses_or_is_refused_cleanly(text):
    for parse in (lambda t: parse_sdr(t, "psu"), parse_sensor_thresholds):
        try:
            parse(text)
        except BmcUnreadable as e:
            assert "line " in str(e) and "\n" not in str(e)


CELL = st.one_of(st.text(alphabet="0123456789.-naxh ", max_size=8), st.sampled_from(
    ["ok", "ns", "lcr", "ucr", "C8h", "nan", "inf", "-inf", "1e309", "12.0 Volts", "Presence detected, Failure detected"]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(CELL, min_size=1, max_size=11), max_size=6))
def test_pipe_shaped_garbage_parses_or_is_refused_cleanly(rows):
    text = "\n".join(" | ".join(cells) for cells in rows)
    for parse in (lambda t: parse_sdr(t, "voltage"), parse_sensor_thresholds):
        try:
            out = parse(text)
        except BmcUnreadable:
            continue
        values = [s.reading for s in out] if isinstance(out, list) else [v for d in out.values() for v in d.values()]
        assert all(v is None or v == v and abs(v) != float("inf") for v in values)  # never nan or inf


# ---------------------------------------------------------------- the verdict

def reading(label, *sensors, period_s=None, error=None):
    return BmcReading(label, 0.0, list(sensors), error, period_s)


PSU_OK = Sensor("PSU1 Status", "psu", "ok", None, "", ("Presence detected",))
RAIL = lambda v, status="ok": Sensor("P12V", "voltage", status, v, "Volts")  # noqa: E731
LIMITS = {"P12V": {"lnr": 10.2, "lcr": 10.8, "lnc": 11.4, "unc": 12.6, "ucr": 13.2, "unr": 13.8}}


def run_of(*readings, thresholds=LIMITS):
    return BmcRun(readings=list(readings), thresholds=thresholds)


def test_a_psu_losing_its_input_in_a_period_fails_naming_the_sensor_and_the_period():
    lost = Sensor("PSU2 Status", "psu", "ok", None, "", ("Presence detected", "Power Supply AC lost"))
    r = judge_psu("stress.power_pulse", run_of(
        reading("before the test", PSU_OK, RAIL(12.05)),
        reading("at the end of the 20 ms period", PSU_OK, RAIL(12.05), period_s=0.02),
        reading("at the end of the 100 ms period", PSU_OK, lost, RAIL(12.05), period_s=0.1),
        reading("after the test", PSU_OK, lost, RAIL(12.05))))
    assert (r.verdict, r.code, r.subject) == (Verdict.FAIL, "PSU_INPUT_LOST", "node")
    assert r.message == "PSU2 Status: input lost (Power Supply AC lost) at the end of the 100 ms period"


@pytest.mark.parametrize("event, code, verdict", [
    ("Failure detected", "PSU_FAILURE", Verdict.FAIL), ("Predictive failure", "PSU_FAILURE", Verdict.FAIL),
    ("AC lost or out-of-range", "PSU_INPUT_LOST", Verdict.FAIL),
    ("AC out-of-range, but present", "PSU_INPUT_LOST", Verdict.FAIL),
    ("Config Error", "PSU_FAILURE", Verdict.FAIL), ("Redundancy Lost", "PSU_REDUNDANCY_LOST", Verdict.FAIL),
    ("Non-Redundant: Sufficient from Redundant", "PSU_REDUNDANCY_LOST", Verdict.FAIL),
    ("Redundancy Degraded", "PSU_REDUNDANCY_LOST", Verdict.WARN),
    ("Fully Redundant", None, Verdict.PASS), ("Presence detected", None, Verdict.PASS),
])
def test_each_psu_state(event, code, verdict):
    s = Sensor("PS2", "psu", "ok", None, "", (event,))
    r = judge_psu("stress.power", run_of(reading("before the test", PSU_OK), reading("during the test", PSU_OK, s)))
    assert (r.verdict, r.code) == (verdict, code)
    if code:
        assert REMEDIATION[code] and "PS2" in r.message and "during the test" in r.message


def test_a_psu_failed_before_the_test_still_fails_and_says_so():
    bad = Sensor("PSU2 Status", "psu", "ok", None, "", ("Presence detected", "Failure detected"))
    r = judge_psu("stress.power", run_of(reading("before the test", bad), reading("after the test", bad)))
    assert r.verdict is Verdict.FAIL and r.message == "PSU2 Status: failure (Failure detected) already before the test"


@pytest.mark.parametrize("volts, status, verdict, code", [
    (12.05, "ok", Verdict.PASS, None),
    (11.4, "ok", Verdict.PASS, None),  # at the lower non-critical threshold: not beyond it
    (11.39, "ok", Verdict.WARN, "PSU_SENSOR_WARNING"),
    (10.8, "ok", Verdict.WARN, "PSU_SENSOR_WARNING"),  # at the lower critical: not beyond it
    (10.79, "ok", Verdict.FAIL, "PSU_SENSOR_CRITICAL"),  # the BMC's status may lag its reading
    (12.05, "lcr", Verdict.FAIL, "PSU_SENSOR_CRITICAL"),  # the BMC's own status
    (12.05, "unc", Verdict.WARN, "PSU_SENSOR_WARNING"),
    (13.9, "ok", Verdict.FAIL, "PSU_SENSOR_CRITICAL"),
])
def test_a_rail_against_its_own_thresholds(volts, status, verdict, code):
    r = judge_psu("stress.power_pulse", run_of(reading("before the test", RAIL(12.05)),
                                               reading("at the end of the 500 ms period", RAIL(volts, status), period_s=0.5)))
    assert (r.verdict, r.code) == (verdict, code)
    if code:
        assert r.message.startswith("P12V (voltage): ") and r.message.endswith("at the end of the 500 ms period")


def test_a_rail_critical_before_the_test_only_warns():
    """A sensor already beyond its critical threshold at idle (a CMOS battery) is real but not the
    load's doing: it warns, and the test still fails what it brought on."""
    bat = Sensor("P3V_BAT", "voltage", "lcr", 2.1, "Volts")
    r = judge_psu("stress.power", run_of(reading("before the test", bat), reading("after the test", bat)))
    assert (r.verdict, r.code) == (Verdict.WARN, "PSU_SENSOR_CRITICAL") and "already before the test" in r.message


def test_without_thresholds_the_bmcs_status_alone_judges_and_the_result_says_so():
    run = run_of(reading("before the test", RAIL(12.05)), reading("after the test", RAIL(10.5)), thresholds=None)
    run.thresholds_error = "ipmitool sensor line 3: expected 10 columns"
    r = judge_psu("stress.power", run)
    assert r.verdict is Verdict.PASS and "thresholds not listed (ipmitool sensor line 3" in r.message


@pytest.mark.parametrize("run, says", [
    (BmcRun(unavailable=f"ipmitool is not installed ({INSTALL})"), "apt-get install ipmitool"),
    (BmcRun(readings=[reading("before the test", PSU_OK), reading("after the test", error="no BMC answered")]),
     "not read during the test: no BMC answered"),
    (BmcRun(readings=[reading("before the test"), reading("after the test")]), "lists no power-supply"),
])
def test_no_reading_is_never_a_pass(run, says):
    r = judge_psu("stress.power_pulse", run)
    assert (r.verdict, r.code) == (Verdict.SKIP, "BMC_UNAVAILABLE") and says in r.message


def test_a_failed_read_among_good_ones_is_reported():
    r = judge_psu("stress.power", run_of(reading("before the test", PSU_OK), reading("during the test", error="timeout"),
                                         reading("after the test", PSU_OK)))
    assert r.verdict is Verdict.PASS and "1 reading(s) failed (during the test: timeout)" in r.message


# ---------------------------------------------------------------- the reader and the watch

def fake_ipmitool(tmp_path: Path, body: str) -> dict[str, str]:
    tool = tmp_path / "bin" / "ipmitool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{tool.parent}{os.pathsep}/usr/bin:/bin"}


def test_the_reader_runs_ipmitool(tmp_path, monkeypatch):
    env = fake_ipmitool(tmp_path, f"""\
        case "$1 $2 $3" in
          "sdr type Power Supply") cat {FIXTURES / 'ipmitool-sdr-type-power-supply-ac-lost.txt'} ;;
          "sdr type Voltage") cat {FIXTURES / 'ipmitool-sdr-type-voltage.txt'} ;;
          "sdr type Current") cat {FIXTURES / 'ipmitool-sdr-type-current.txt'} ;;
          "sensor  ") cat {FIXTURES / 'ipmitool-sensor.txt'} ;;
          *) echo "unexpected $*" >&2; exit 1 ;;
        esac
        """)
    monkeypatch.setenv("PATH", env["PATH"])
    bmc = IpmitoolBmc()
    assert bmc.missing() is None
    r = bmc.read("before the test", 1.0)
    assert r.error is None and {s.kind for s in r.sensors} == {"psu", "voltage", "current"} and len(r.sensors) == 17
    assert parse_sensor_thresholds(bmc.sensor_list())["P12V"]["lcr"] == 10.8


def test_no_bmc_and_no_ipmitool_say_what_to_do(tmp_path, monkeypatch):
    env = fake_ipmitool(tmp_path, """\
        echo "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory" >&2
        exit 1
        """)
    monkeypatch.setenv("PATH", env["PATH"])
    r = IpmitoolBmc().read("before the test", 0.0)
    assert r.error.startswith("no BMC answered (ipmitool sdr type Power Supply: Could not open device")
    assert "modprobe -a ipmi_devintf ipmi_si" in r.error  # modprobe loads one module unless given -a
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert IpmitoolBmc().missing() == INSTALL


class ScriptedBmc(Bmc):
    """Answers from a list of Power Supply listings, one per read; voltage and current empty."""

    def __init__(self, listings, fail_sensor_list=False):
        self.listings, self.reads, self.fail = list(listings), 0, fail_sensor_list

    def missing(self):
        return None

    def sdr_type(self, sensor_type):
        if sensor_type != "Power Supply":
            return ""
        self.reads += 1
        return self.listings[min(self.reads, len(self.listings)) - 1]

    def sensor_list(self):
        if self.fail:
            raise BmcError("ipmitool sensor did not answer within 120 s (a wedged BMC?)")
        return fixture("ipmitool-sensor.txt")


def test_the_watch_reads_before_at_each_mark_once_and_after():
    ok = "PSU1 Status | C8h | ok | 10.1 | Presence detected\n"
    lost = "PSU1 Status | C8h | ok | 10.1 | Presence detected, Power Supply AC lost\n"
    bmc = ScriptedBmc([ok, ok, lost, lost])
    watch = BmcWatch(bmc, time.monotonic)
    watch.start()
    assert watch.run.thresholds["P12V"]["ucr"] == 13.2
    watch.mark("at the start of the 20 ms period", 0.02)
    watch.mark("at the start of the 20 ms period", 0.02)  # the same point from another GPU's worker
    watch.mark("at the end of the 20 ms period", 0.02)
    run = watch.finish()
    assert [r.label for r in run.readings] == ["before the test", "at the start of the 20 ms period",
                                               "at the end of the 20 ms period", "after the test"]
    r = judge_psu("stress.power_pulse", run)
    assert r.verdict is Verdict.FAIL and r.message.endswith("at the end of the 20 ms period")
    # Thresholds that could not be listed leave the BMC's status to judge alone.
    watch = BmcWatch(ScriptedBmc([ok], fail_sensor_list=True), time.monotonic)
    watch.start()
    assert watch.run.thresholds is None and "wedged BMC" in watch.run.thresholds_error
    watch.finish()


def test_the_watch_without_a_reader_or_a_bmc_reads_nothing():
    watch = BmcWatch(None, time.monotonic)
    watch.start()
    watch.mark("at the end of the 20 ms period", 0.02)
    assert watch.finish().unavailable.startswith("no BMC reader")


# ---------------------------------------------------------------- the simulated node end to end

def _checks(p):
    import base64

    path = p.stdout.strip().splitlines()[-1]
    return json.loads(base64.b64decode(json.loads(open(path).read())["payload"]))["predicate"]["checks"]


@pytest.mark.slow
def test_simulated_psu_faults_fail_the_pulse_test_for_the_node(tmp_path, run_cli):
    p = run_cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--quick",
                "--only", "stress.power,stress.power_pulse", "--inject", "host:psu_fault=2",
                "--inject", "host:psu_undervolt", "--out", str(tmp_path))
    node = {c["name"]: c for c in _checks(p) if c["subject"] == "node"}
    assert node["stress.power"]["verdict"] == "pass"  # the faults strike once the load swings
    pulse = node["stress.power_pulse"]
    assert (pulse["verdict"], pulse["code"]) == ("fail", "PSU_FAILURE")
    assert "PSU2 Status: failure (Failure detected)" in pulse["message"]
    assert "P12V (voltage): 10.42 Volts" in pulse["message"]
    assert " ms period" in pulse["message"]  # attributed to a pulse period, not to before or after
    assert p.returncode == 1
    gpus = [c for c in _checks(p) if c["name"] == "stress.power_pulse" and c["subject"] != "node"]
    assert len(gpus) == 8 and all(c["verdict"] == "pass" for c in gpus)


@pytest.mark.parametrize("fault, says", [("host:no_ipmitool", "ipmitool is not installed (apt-get install ipmitool"),
                                         ("host:no_bmc", "no BMC answered (ipmitool sdr type: Could not open device")])
def test_the_simulated_bmc_without_ipmitool_or_bmc(fault, says):
    from nodeqc.backends.sim.faults import parse_fault
    from nodeqc.backends.sim.node import SimNode
    from nodeqc.backends.sim.platform import SimBmc
    from nodeqc.backends.sim.scenario import load_scenario

    watch = BmcWatch(SimBmc(SimNode(load_scenario("hgx-h100"), [parse_fault(fault)])), time.monotonic)
    watch.start()
    watch.mark("at the end of the 20 ms period", 0.02)
    r = judge_psu("stress.power_pulse", watch.finish())
    assert (r.verdict, r.code) == (Verdict.SKIP, "BMC_UNAVAILABLE") and says in r.message


@pytest.mark.slow
def test_simulated_node_without_a_bmc_says_not_run(tmp_path, run_cli):
    p = run_cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--quick",
                "--only", "stress.power_pulse", "--inject", "host:no_bmc", "--out", str(tmp_path))
    node = next(c for c in _checks(p) if c["subject"] == "node")
    assert (node["verdict"], node["code"]) == ("skip", "BMC_UNAVAILABLE") and "/dev/ipmi0" in node["message"]
    assert p.returncode == 0  # the GPUs passed; the PSUs were not judged, and the report says so
    assert "no BMC readable (ipmitool)" in p.stdout + p.stderr  # counted among the checks not run


def test_a_wedged_bmc_is_not_asked_again():
    """After a read times out, the marks still waiting and the reading after the test are skipped:
    a BMC that stopped answering must not hold the run for a timeout per read."""
    class Wedging(ScriptedBmc):
        def sdr_type(self, sensor_type):
            if self.reads >= 1 and sensor_type == "Power Supply":
                self.reads += 1
                raise BmcError("ipmitool sdr type Power Supply did not answer within 30 s (a wedged BMC?)")
            return super().sdr_type(sensor_type)

    bmc = Wedging(["PSU1 Status | C8h | ok | 10.1 | Presence detected\n"])
    watch = BmcWatch(bmc, time.monotonic)
    watch.start()
    for period in (0.02, 0.1, 0.5):
        watch.mark("at the end of a period", period)
    run = watch.finish()
    assert bmc.reads == 2  # before the test, then the one that timed out
    assert [r.error is None for r in run.readings] == [True, False]
    r = judge_psu("stress.power_pulse", run)
    assert (r.verdict, r.code) == (Verdict.SKIP, "BMC_UNAVAILABLE") and "wedged BMC" in r.message


def test_an_aborted_test_drops_the_reads_still_waiting():
    bmc = ScriptedBmc(["PSU1 Status | C8h | ok | 10.1 | Presence detected\n"])
    slow = bmc.sdr_type

    def sdr_type(sensor_type):
        time.sleep(0.05)
        return slow(sensor_type)

    bmc.sdr_type = sdr_type
    watch = BmcWatch(bmc, time.monotonic)
    watch.start()
    for n in range(20):
        watch.mark(f"mark {n}", n)
    run = watch.finish(after=False)
    assert run.readings[0].label == "before the test" and len(run.readings) < 21
    assert all(r.label != "after the test" for r in run.readings)


# ---------------------------------------------------------------- the whole result (issue 18 §5: mutation survivors)

def test_a_passing_result_in_full():
    """Name, subject, key figure, counts, the message's every figure and the evidence."""
    cur = Sensor("PSU1 Current", "current", "ok", 8.5, "Amps")
    run = run_of(reading("before the test", PSU_OK, RAIL(12.05), cur),
                 reading("during the test", PSU_OK, RAIL(12.1), cur), reading("after the test", PSU_OK, RAIL(12.0)))
    r = judge_psu("stress.power", run)
    assert (r.name, r.subject, r.verdict, r.code, r.key) == ("stress.power", "node", Verdict.PASS, None, "readings")
    assert {k: v.value for k, v in r.values.items()} == {"psus": 1, "voltage_sensors": 1, "current_sensors": 1,
                                                          "readings": 3}
    assert r.message == ("1 PSU, 1 voltage and 1 current sensor(s) read 3 times (before, during and after the test): "
                         "no PSU failure, input loss or redundancy loss, no voltage or current beyond its thresholds")
    assert r.thresholds == []
    ev = r.evidence
    assert ev["readings"] == [{"label": "before the test", "t_s": 0.0, "error": None, "sensors": 3, "not_ok": []},
                              {"label": "during the test", "t_s": 0.0, "error": None, "sensors": 3, "not_ok": []},
                              {"label": "after the test", "t_s": 0.0, "error": None, "sensors": 2, "not_ok": []}]
    assert ev["psus"] == ["PSU1 Status"] and ev["thresholds"] == LIMITS and ev["thresholds_error"] is None


def test_a_pulse_pass_names_its_reading_points_and_counts_each_sensor_once():
    second = Sensor("PSU2 Status", "psu", "ok", None, "", ("Fully Redundant",))
    run = run_of(reading("before the test", PSU_OK, second), *(reading(f"period {i}", PSU_OK, second, period_s=0.02)
                                                               for i in range(3)))
    r = judge_psu("stress.power_pulse", run)
    assert r.verdict is Verdict.PASS and r.values["psus"].value == 2 and r.values["readings"].value == 4
    assert r.message.startswith("2 PSU, 0 voltage and 0 current sensor(s) read 4 times (before the test, at each "
                                "period's start and end, and after it): ")
    assert r.evidence["psus"] == ["PSU1 Status", "PSU2 Status"]


def test_evidence_keeps_the_unhealthy_sensors_in_full_and_failed_reads():
    lost = Sensor("PSU2 Status", "psu", "ok", None, "", ("Presence detected", "Power Supply AC lost"))
    warm = RAIL(12.7, "unc")
    ns = Sensor("P5V", "voltage", "ns", None, "Volts")
    run = run_of(reading("before the test", PSU_OK, ns), reading("during the test", error="timeout"),
                 reading("after the test", PSU_OK, lost, warm))
    r = judge_psu("stress.power", run)
    ev = r.evidence["readings"]
    assert [e["not_ok"] for e in ev] == [[], [], [lost.to_dict(), warm.to_dict()]]
    assert ev[1] == {"label": "during the test", "t_s": 0.0, "error": "timeout", "sensors": 0, "not_ok": []}
    # the worst leads; the warning follows it; the failed read is said last
    assert r.message == ("PSU2 Status: input lost (Power Supply AC lost) after the test; P12V (voltage): 12.7 Volts, "
                         "status unc (beyond its non-critical threshold) after the test; no reading of P5V; 1 "
                         "reading(s) failed (during the test: timeout)")


@pytest.mark.parametrize("volts, status, says", [
    (10.1, "ok", "P12V (voltage): 10.1 Volts, below its lower non-recoverable threshold 10.2 after the test"),
    (13.9, "ok", "P12V (voltage): 13.9 Volts, above its upper non-recoverable threshold 13.8 after the test"),
    (10.5, "ok", "P12V (voltage): 10.5 Volts, below its lower critical threshold 10.8 after the test"),
    (13.3, "ok", "P12V (voltage): 13.3 Volts, above its upper critical threshold 13.2 after the test"),
    (13.8, "ok", "P12V (voltage): 13.8 Volts, above its upper critical threshold 13.2 after the test"),  # at unr
    (10.2, "ok", "P12V (voltage): 10.2 Volts, below its lower critical threshold 10.8 after the test"),  # at lnr
    (11.3, "ok", "P12V (voltage): 11.3 Volts, below its lower non-critical threshold 11.4 after the test"),
    (12.7, "ok", "P12V (voltage): 12.7 Volts, above its upper non-critical threshold 12.6 after the test"),
    (12.6, "ok", None),  # at the upper non-critical: not beyond it
    (13.2, "ok", "P12V (voltage): 13.2 Volts, above its upper non-critical threshold 12.6 after the test"),  # at ucr
    (12.0, "ucr", "P12V (voltage): 12 Volts, status ucr (beyond its critical threshold) after the test"),
    (12.0, "lnc", "P12V (voltage): 12 Volts, status lnc (beyond its non-critical threshold) after the test"),
    (None, "lnr", "P12V (voltage): no reading, status lnr (beyond its critical threshold) after the test"),
])
def test_each_threshold_crossing_says_which_and_where(volts, status, says):
    rail = Sensor("P12V", "voltage", status, volts, "Volts")
    r = judge_psu("stress.power", run_of(reading("before the test", RAIL(12.05)), reading("after the test", rail)))
    if says is None:
        assert r.verdict is Verdict.PASS
        return
    critical = "non-critical" not in says
    assert (r.verdict, r.code) == ((Verdict.FAIL, "PSU_SENSOR_CRITICAL") if critical
                                   else (Verdict.WARN, "PSU_SENSOR_WARNING"))
    assert r.message == says


def test_only_this_sensors_thresholds_judge_it_and_a_unitless_reading_reads_plainly():
    other = Sensor("P5V", "voltage", "ok", 4.0, "")
    r = judge_psu("stress.power", run_of(reading("before the test", other), reading("after the test", other)))
    assert r.verdict is Verdict.PASS  # LIMITS has no P5V
    r = judge_psu("stress.power", run_of(reading("after the test", other),
                                         thresholds={"P5V": {"lcr": 4.5}}))
    assert r.message == "P5V (voltage): 4, below its lower critical threshold 4.5 after the test"


def test_a_psu_status_beyond_critical_fails_and_each_problem_is_said_once():
    s = Sensor("PSU1 Status", "psu", "cr", None, "", ("Presence detected",))
    r = judge_psu("stress.power", run_of(reading("during the test", s), reading("after the test", s)))
    assert (r.verdict, r.code, r.message) == (Verdict.FAIL, "PSU_FAILURE", "PSU1 Status: status cr during the test")
    both = Sensor("PSU1 Status", "psu", "ok", None, "", ("Failure detected", "Redundancy Degraded"))
    r = judge_psu("stress.power", run_of(reading("during the test", both)))
    assert r.message == ("PSU1 Status: failure (Failure detected) during the test; "
                         "PSU1 Status: redundancy degraded (Redundancy Degraded) during the test")


def test_a_rail_critical_before_and_still_after_says_so_once():
    bat = Sensor("P3V_BAT", "voltage", "lcr", 2.1, "Volts")
    r = judge_psu("stress.power", run_of(reading("before the test", bat), reading("after the test", bat)))
    assert r.message == ("P3V_BAT (voltage): 2.1 Volts, status lcr (beyond its critical threshold) already before "
                         "the test (not the test's doing; see the BMC)")
    warn = RAIL(12.0, "unc")
    r = judge_psu("stress.power", run_of(reading("before the test", warn), reading("after the test", warn)))
    assert r.message == ("P12V (voltage): 12 Volts, status unc (beyond its non-critical threshold) already before "
                         "the test")


def test_unreadable_runs_say_exactly_why():
    r = judge_psu("stress.power", BmcRun(unavailable="no BMC"))
    assert (r.name, r.subject, r.message) == ("stress.power", "node", "PSU sensors not read: no BMC")
    r = judge_psu("stress.power", BmcRun(readings=[reading("before the test", PSU_OK)]))
    assert (r.name, r.subject, r.message) == (
        "stress.power", "node", "PSU sensors not read during the test: no reading during or after the test")
    r = judge_psu("stress.power", BmcRun(readings=[reading("before the test", PSU_OK), reading("a", error="e1"),
                                                   reading("b", error="e2")]))
    assert r.message == "PSU sensors not read during the test: e1"
    r = judge_psu("stress.power", BmcRun(readings=[reading("during the test")]))
    assert (r.name, r.subject, r.message) == (
        "stress.power", "node", "PSU sensors not read: the BMC lists no power-supply, voltage or current sensors")


def test_a_sensor_listing_only_some_thresholds_is_judged_on_those():
    """ipmitool lists "na" for a threshold the BMC does not set: it is left out, never compared."""
    for limits, volts, verdict in (({"ucr": 13.2}, 12.0, Verdict.PASS), ({"ucr": 13.2}, 13.3, Verdict.FAIL),
                                   ({"lcr": 10.8}, 12.0, Verdict.PASS), ({"lnc": 11.4}, 12.0, Verdict.PASS),
                                   ({"unc": 12.6}, 12.0, Verdict.PASS), ({"unc": 12.6}, 12.7, Verdict.WARN),
                                   ({"lnr": 10.2, "unr": 13.8}, 12.0, Verdict.PASS)):
        r = judge_psu("stress.power", run_of(reading("after the test", RAIL(volts)), thresholds={"P12V": limits}))
        assert r.verdict is verdict, (limits, volts)


def test_every_sensor_of_a_reading_is_judged_and_each_named():
    """A healthy rail listed first does not hide a bad one after it; two bad rails are both said."""
    fine = Sensor("P5V", "voltage", "ok", 5.0, "Volts")
    low = Sensor("P3V3", "voltage", "ok", 3.0, "Volts")
    limits = {**LIMITS, "P3V3": {"lcr": 3.1}}
    r = judge_psu("stress.power", run_of(reading("after the test", fine, low, RAIL(13.3)), thresholds=limits))
    assert r.message == ("P3V3 (voltage): 3 Volts, below its lower critical threshold 3.1 after the test; "
                         "P12V (voltage): 13.3 Volts, above its upper critical threshold 13.2 after the test")
    assert r.message.count("after the test") == 2


def test_each_note_is_said_once_after_the_verdict():
    run = run_of(reading("before the test", PSU_OK), reading("during the test", error="timeout"),
                 reading("after the test", PSU_OK), thresholds=None)
    run.thresholds_error = "no thresholds"
    r = judge_psu("stress.power", run)
    assert r.message.endswith("; 1 reading(s) failed (during the test: timeout); thresholds not listed "
                              "(no thresholds): the BMC's own status judged alone")


def test_evidence_leaves_healthy_states_out():
    redundant = Sensor("PSU Redundancy", "psu", "ok", None, "", ("Fully Redundant",))
    absent = Sensor("P5V", "voltage", "na", None, "Volts")
    idle = Sensor("PSU1 Status", "psu", "ns", None, "", ("Presence Detected",))
    r = judge_psu("stress.power", run_of(reading("after the test", redundant, absent, idle, PSU_OK)))
    assert r.verdict is Verdict.PASS and r.evidence["readings"][0]["not_ok"] == []


def test_thresholds_unlisted_without_a_reason_add_nothing():
    run = run_of(reading("after the test", PSU_OK), thresholds=None)
    r = judge_psu("stress.power", run)
    assert r.verdict is Verdict.PASS and "thresholds not listed" not in r.message and ";" not in r.message


def test_reads_that_listed_no_sensor_and_a_node_without_psu_sensors_claim_nothing_of_the_psus():
    """2026-11-28 audit: reads during and after the test that listed nothing (ipmitool exiting 0
    with no output) counted as readings ("read 3 times (before, during and after the test)"), and a
    BMC with no PSU sensor was said to show "no PSU failure, input loss or redundancy loss"."""
    rail = Sensor("12V", "voltage", "ok", 12.05, "Volts")
    psu = Sensor("PS1 Status", "psu", "ok", events=("Presence detected",))
    only_before = run_of(reading("before the test", psu, rail), reading("during the test"), reading("after the test"))
    r = judge_psu("stress.power", only_before)
    assert (r.verdict, r.code) == (Verdict.SKIP, "BMC_UNAVAILABLE")
    assert r.message == "PSU sensors not read during the test: the BMC listed no sensor"
    before_after = run_of(reading("before the test", psu, rail), reading("during the test"),
                          reading("after the test", psu, rail))
    r = judge_psu("stress.power", before_after)
    assert r.verdict is Verdict.PASS and "read 2 times (before and after the test)" in r.message
    assert r.message.endswith("; 1 reading(s) failed (during the test: no sensor listed)")
    no_psu = run_of(reading("before the test", rail), reading("during the test", rail), reading("after the test", rail))
    r = judge_psu("stress.power", no_psu)
    assert r.verdict is Verdict.PASS and "no PSU failure" not in r.message
    assert "no power-supply sensor listed, so the PSUs' own state was not read" in r.message


# ------------------------------------------------ sensors with no reading, and names sensors share

def test_sensors_the_bmc_gave_no_reading_of_are_not_a_pass():
    """The 2026-11-29 fuzzing: a BMC whose every sensor said "No Reading" (status ns) passed the
    PSUs, "no PSU failure, input loss or redundancy loss". Such sensors are not read: with none
    read the PSUs were not judged, and one among others is named."""
    unread = (parse_sdr("P12V | 71h | ns | 7.1 | No Reading\n", "voltage")
              + parse_sdr("PS1 Status | 60h | ns | 10.1 | No Reading\n", "psu"))
    assert not any(s.read for s in unread)
    r = judge_psu("stress.power", run_of(reading("before the test", *unread), reading("after the test", *unread)))
    assert (r.verdict, r.code) == (Verdict.SKIP, "BMC_UNAVAILABLE")
    assert r.message == "PSU sensors not read: the BMC gave no reading of its sensors (P12V, PS1 Status)"
    r = judge_psu("stress.power", run_of(reading("after the test", PSU_OK, *unread)))
    assert r.verdict is Verdict.PASS and r.values["psus"].value == 1 and r.values["voltage_sensors"].value == 0
    assert r.message.endswith("; no reading of P12V, PS1 Status")


def test_sensors_that_share_a_name_are_told_apart_by_their_record_id():
    """A Dell BMC names both PSUs' rails "Voltage": one already low before the test hid the other
    that the test brought below its threshold (WARN "already before the test", where it is a FAIL)."""
    before = parse_sdr("Voltage | 6Ch | lcr | 10.1 | 180 Volts\nVoltage | 6Dh | ok | 10.2 | 230 Volts\n", "voltage")
    during = parse_sdr("Voltage | 6Ch | lcr | 10.1 | 180 Volts\nVoltage | 6Dh | lcr | 10.2 | 150 Volts\n", "voltage")
    r = judge_psu("stress.power_pulse", run_of(reading("before the test", *before), reading("during the test", *during),
                                               reading("after the test", *during), thresholds={}))
    assert (r.verdict, r.code) == (Verdict.FAIL, "PSU_SENSOR_CRITICAL"), r.message
    assert r.values["voltage_sensors"].value == 2
    assert r.message.startswith("Voltage [6Dh] (voltage): 150 Volts, status lcr (beyond its critical threshold) "
                                "during the test; Voltage [6Ch] (voltage): 180 Volts"), r.message
    # `ipmitool sensor` has no record id: thresholds two sensors' shared name gives differently are left out.
    listed = parse_sensor_thresholds("Voltage | 180 | Volts | ok | na | 190 | na | na | 250 | na\n"
                                     "Voltage | 230 | Volts | ok | na | 200 | na | na | 260 | na\n"
                                     "P5V | 5.0 | Volts | ok | na | 4.5 | na | na | 5.5 | na\n"
                                     "P5V | 5.0 | Volts | ok | na | 4.5 | na | na | 5.5 | na\n")
    assert listed == {"P5V": {"lcr": 4.5, "ucr": 5.5}}
