"""Host stress of a full run: CPU known answers (for real, briefly, on this machine), memory
bandwidth, fio and `ethtool -m` parsed from captured real output (tests/fixtures, sources in each
file's header), and the verdicts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nodeqc.backends.host_stress import (CPU_FLOAT_ANSWER, CPU_HASH_ANSWER, FioResult, LinuxHostStress, ModuleReading,
                                         known_answer, parse_fio, parse_module)
from nodeqc.backends.mlxlink import LinkReading
from nodeqc.checks import host_stress
from nodeqc.core.model import Value, Verdict
from nodeqc.spec.profile import load_profile

from conftest import cli, whole

FIXTURES = Path(__file__).parent / "fixtures"
GENERIC = load_profile("generic")


def _profile(tmp_path, host: str):
    p = tmp_path / "p.toml"
    p.write_text(f'description = "x"\nextends = "generic"\n[host]\n{host}\n')
    return load_profile(str(p))


def test_known_answers_are_what_this_cpu_computes():
    assert known_answer() == (CPU_HASH_ANSWER, CPU_FLOAT_ANSWER)


def test_cpu_stress_for_real_on_every_cpu_here():
    outcomes = LinuxHostStress().cpu(0.3)
    import os

    assert sorted(o["cpu"] for o in outcomes) == sorted(os.sched_getaffinity(0))
    assert all(o["rounds"] >= 1 and o["wrong"] == 0 for o in outcomes)
    r = host_stress.cpu(outcomes, 0.3)
    assert r.verdict is Verdict.PASS and r.values["wrong"].value == 0


def test_a_wrong_core_is_named():
    outcomes = [{"cpu": 0, "rounds": 50, "wrong": 0}, {"cpu": 7, "rounds": 50, "wrong": 2, "first_wrong": {}}]
    r = host_stress.cpu(outcomes, 5)
    assert r.verdict is Verdict.FAIL and r.code == "HOST_CPU_WRONG" and "CPU 7 (2 of 50)" in r.message
    died = host_stress.cpu([{"cpu": 3, "rounds": 0, "wrong": 0, "error": "BrokenProcessPool: killed"}], 5)
    # A worker that died proves no wrong answer (the OOM killer, a machine check the kernel log names).
    assert (died.verdict, died.code) == (Verdict.ERROR, "HOST_CPU_STRESS_DIED") and "CPU 3: BrokenProcessPool" in died.message


def test_memory_bandwidth_for_real_and_against_a_floor(tmp_path):
    gbps = LinuxHostStress().memory_bandwidth()
    assert gbps > 0.5  # any machine copies faster than half a GB/s
    assert host_stress.memory_bandwidth(gbps, GENERIC).verdict is Verdict.PASS  # no floor: reported
    strict = _profile(tmp_path, "min_mem_bw_gbps = 400")
    r = host_stress.memory_bandwidth(120.0, strict)
    assert r.verdict is Verdict.FAIL and r.code == "HOST_MEM_BANDWIDTH"


def test_fio_json_from_fio_3_42_with_text_around_it():
    r = parse_fio((FIXTURES / "fio-3.42-randwrite-nvme.txt").read_text(), "/dev/nvme8n13")
    assert r.error is None and r.read_gbps is None
    assert r.write_gbps == pytest.approx(0.005096, abs=1e-6)


def test_fio_json_from_fio_3_1_without_bw_bytes():
    r = parse_fio((FIXTURES / "fio-3.1-write-json.txt").read_text())
    assert r.target == "test" and r.write_gbps == pytest.approx(1753471 * 1024 / 1e9, abs=1e-3)


@pytest.mark.parametrize("text, error", [("", "no JSON"), ("fio: pid=1, err=2/file:filesetup.c", "no JSON"),
                                         ('{"jobs": [', "unreadable"), ('{"jobs": []}', "no jobs"),
                                         ('{"jobs": [{"error": 5, "read": {}}]}', "job error 5")])
def test_fio_failures_are_errors(text, error):
    assert error in parse_fio(text, "/dev/nvme0n1").error


def test_nvme_verdicts(tmp_path):
    prof = _profile(tmp_path, 'fio_targets = ["/dev/nvme0n1", "/dev/nvme1n1"]\nmin_nvme_read_gbps = 5')
    results = [FioResult("/dev/nvme0n1", read_gbps=6.8, read_iops=6500, read_p99_us=900),
               FioResult("/dev/nvme1n1", read_gbps=2.1, read_iops=2000, read_p99_us=4000)]
    by = {r.subject: r for r in host_stress.nvme(results, None, prof)}
    assert by["/dev/nvme0n1"].verdict is Verdict.PASS and by["/dev/nvme1n1"].code == "NVME_SLOW"
    [skip] = host_stress.nvme([], "apt-get install fio (or dnf install fio)", prof)
    assert skip.verdict is Verdict.SKIP and skip.code == "FIO_MISSING" and "apt-get install fio" in skip.message
    [err] = host_stress.nvme([FioResult("/dev/nvme0n1", error="fio job error 2")], None, prof)
    assert err.verdict is Verdict.FAIL and err.code == "NVME_FIO"
    assert host_stress.nvme([], None, GENERIC) == []  # no targets named: nothing to do


def test_ethtool_module_healthy_qsfp28():
    m = parse_module((FIXTURES / "ethtool-m-qsfp28-mellanox.txt").read_text())
    assert m.vendor == "Mellanox" and m.part == "MMA1B00-C100D"
    assert m.values["temperature"] == [30.56] and m.values["voltage"] == [3.235]
    assert m.values["bias"] == [6.75] * 4 and m.values["rx_power"] == [0.972, 0.9798, 1.134, 1.134]
    assert m.values["tx_power"][0] == 1.3924
    assert m.thresholds["temperature"] == {"high_alarm": 80, "low_alarm": -10, "high_warning": 70, "low_warning": 0}
    assert m.thresholds["rx_power"]["low_alarm"] == 0.0467
    [r] = host_stress.optics({"ibp24s0": ("ibp24s0", m)}, None)
    assert r.verdict is Verdict.PASS and r.values["temperature"].value == 30.56


def test_ethtool_module_out_of_range_warns_and_alarms():
    text = (FIXTURES / "ethtool-m-qsfp28-mellanox.txt").read_text()
    hot = text.replace("30.56 degrees C", "72.50 degrees C")
    [r] = host_stress.optics({"eth0": ("eth0", parse_module(hot))}, None)
    assert r.verdict is Verdict.WARN and r.code == "OPTICS_WARNING" and "module temperature 72.5 C" in r.message
    dark = text.replace("Rcvr signal avg optical power(Channel 3)  : 1.1340 mW", "Rcvr signal avg optical power(Channel 3)  : 0.0300 mW")
    [r] = host_stress.optics({"eth0": ("eth0", parse_module(dark))}, None)
    assert r.verdict is Verdict.FAIL and r.code == "OPTICS_ALARM" and "receive power (lane 3) 0.03 mW" in r.message


def test_module_without_thresholds_is_not_judged_on_them():
    finisar = parse_module((FIXTURES / "ethtool-m-qsfp-finisar-zero-thresholds.txt").read_text())
    [r] = host_stress.optics({"swp13": ("swp13", finisar)}, None)
    assert r.verdict is Verdict.PASS  # lasers off, but no power thresholds: temperature and voltage only
    dac = parse_module((FIXTURES / "ethtool-m-dac-copper.txt").read_text())
    assert host_stress.optics({"swp13": ("swp13", dac)}, None)[0].verdict is Verdict.PASS
    assert host_stress.optics({"eno1": ("eno1", None)}, None) == []
    [skip] = host_stress.optics({}, "apt-get install ethtool (or dnf install ethtool)")
    assert skip.code == "ETHTOOL_MISSING"


def test_missing_tools_say_what_to_install():
    stress = LinuxHostStress()
    for tool in ("fio", "ethtool"):
        missing = stress.missing_tool(tool)
        assert (missing is None) == (shutil.which(tool) is not None)
        if missing:
            assert f"install {tool}" in missing


@pytest.mark.slow
def test_full_run_on_the_simulated_node_stresses_the_host(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text('description = "x"\nextends = "hgx-h100"\n[host]\nstress_s = 1\nmin_mem_bw_gbps = 300\n'
                    'fio_targets = ["/dev/nvme0n1"]\nmin_nvme_read_gbps = 5\n[run]\nburn_s = 5\n')
    p = cli("--headless", "--profile", str(prof), "--simulate", "hgx-h100", "--only", "host",
            "--inject", "host:cpu_wrong=17", "--inject", "nic3:optics_temp=85", "--out", str(tmp_path / "o"))
    assert p.returncode == 1, p.stderr
    assert "CPU 17 (3 of 10)" in p.stderr and "[HOST_CPU_WRONG]" in p.stderr
    assert "host.memory_bandwidth" in p.stderr and "host.nvme" in p.stderr
    assert "ibp79s0 module temperature 85 C" in p.stderr and "[OPTICS_ALARM]" in p.stderr


# ------------------------------------------------------------------ whole results, field by field


def test_whole_results_cpu():
    fine = [{"cpu": 0, "rounds": 50, "wrong": 0}, {"cpu": 1, "rounds": 48, "wrong": 0}]
    assert whole(host_stress.cpu(fine, 2.5)) == (
        "host.cpu_stress", "node", "pass", None, "2 CPUs computed 98 known answers in 2.5 s, all right",
        {"cpus": (2, ""), "rounds": (98, ""), "wrong": (0, "")}, "rounds", [], {"per_cpu": fine})
    # Every wrong core is named, in order; a core that also died is not what the verdict leads with.
    wrong = [{"cpu": 0, "rounds": 50, "wrong": 0}, {"cpu": 3, "rounds": 50, "wrong": 2},
             {"cpu": 7, "rounds": 49, "wrong": 1}, {"cpu": 9, "rounds": 0, "wrong": 0, "error": "BrokenProcessPool: killed"}]
    assert whole(host_stress.cpu(wrong, 60.0)) == (
        "host.cpu_stress", "node", "fail", "HOST_CPU_WRONG",
        "wrong results on CPU 3 (2 of 50), CPU 7 (1 of 49): a core computes wrong answers silently",
        {"cpus": (4, ""), "rounds": (149, ""), "wrong": (3, "")}, "wrong", [], {"per_cpu": wrong})
    # A core that died, reported an error after some rounds, finished none, or returned no counts.
    died = [{"cpu": 0, "rounds": 50, "wrong": 0}, {"cpu": 3, "rounds": 0, "wrong": 0, "error": "BrokenProcessPool: killed"},
            {"cpu": 5, "rounds": 0, "wrong": 0}, {"cpu": 6, "rounds": 12, "wrong": 0, "error": "TimeoutError: no answer"},
            {"cpu": 8}]
    assert whole(host_stress.cpu(died, 60.0)) == (
        "host.cpu_stress", "node", "error", "HOST_CPU_STRESS_DIED",
        "the stress work did not finish on CPU 3: BrokenProcessPool: killed, CPU 5: no result, "
        "CPU 6: TimeoutError: no answer, CPU 8: no result; not judged",
        {"cpus": (5, ""), "rounds": (62, ""), "wrong": (0, "")}, "wrong", [], {"per_cpu": died})


MEM_FLOOR = [("min_mem_bw_gbps", "min", 400.0, 420.0, "GB/s")]  # the profile's default 5% warning band


@pytest.mark.parametrize("gbps, verdict, code, message", [
    (420.0, "pass", None, "host memory copy 420 GB/s, limit >= 400 GB/s, warn below 420"),
    (419.9, "warn", "HOST_MEM_BANDWIDTH", "host memory copy 419.9 GB/s is below the warning level 420 GB/s"),
    (400.0, "warn", "HOST_MEM_BANDWIDTH", "host memory copy 400 GB/s is below the warning level 420 GB/s"),
    (399.9, "fail", "HOST_MEM_BANDWIDTH", "host memory copy 399.9 GB/s is below the limit 400 GB/s")])
def test_whole_results_memory_bandwidth_at_its_floor(tmp_path, gbps, verdict, code, message):
    assert whole(host_stress.memory_bandwidth(gbps, _profile(tmp_path, "min_mem_bw_gbps = 400"))) == (
        "host.memory_bandwidth", "node", verdict, code, message, {"copy_gbps": (gbps, "GB/s")}, "copy_gbps", MEM_FLOOR, {})


def test_whole_results_memory_bandwidth_without_a_floor():
    assert whole(host_stress.memory_bandwidth(123.4, GENERIC)) == (
        "host.memory_bandwidth", "node", "pass", None, "host memory copy 123.4 GB/s (no limit set)",
        {"copy_gbps": (123.4, "GB/s")}, "copy_gbps", [], {})


NVME_FLOOR = [("min_nvme_read_gbps", "min", 5.0, 5.25, "GB/s")]


def test_whole_results_nvme_each_device_in_order(tmp_path):
    prof = _profile(tmp_path, 'fio_targets = ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1", '
                              '"/dev/nvme4n1"]\nmin_nvme_read_gbps = 5')
    cmd = [["fio", f"--filename=/dev/nvme{i}n1"] for i in range(5)]
    results = [FioResult("/dev/nvme0n1", read_gbps=6.8, read_iops=6500.0, read_p99_us=900.0, command=cmd[0]),
               FioResult("/dev/nvme1n1", error="fio job error 5", command=cmd[1]),
               FioResult("/dev/nvme2n1", command=cmd[2]),  # fio ran and read nothing
               FioResult("/dev/nvme3n1", read_gbps=5.0, read_iops=4800.0, command=cmd[3]),  # no percentiles
               FioResult("/dev/nvme4n1", read_gbps=4.99, read_iops=4700.0, read_p99_us=2100.5, command=cmd[4])]
    assert [whole(r) for r in host_stress.nvme(results, None, prof)] == [
        ("host.nvme", "/dev/nvme0n1", "pass", None, "/dev/nvme0n1: sequential read 6.8 GB/s, limit >= 5 GB/s, warn below 5.25",
         {"read_gbps": (6.8, "GB/s"), "read_iops": (6500.0, ""), "read_p99_us": (900.0, "us")}, "read_gbps", NVME_FLOOR,
         {"command": cmd[0]}),
        ("host.nvme", "/dev/nvme1n1", "fail", "NVME_FIO", "/dev/nvme1n1: fio failed: fio job error 5", {}, None, [],
         {"command": cmd[1]}),
        ("host.nvme", "/dev/nvme2n1", "fail", "NVME_FIO", "/dev/nvme2n1: fio read nothing", {}, None, [],
         {"command": cmd[2]}),
        ("host.nvme", "/dev/nvme3n1", "warn", "NVME_SLOW", "/dev/nvme3n1: sequential read 5 GB/s is below the warning "
         "level 5.25 GB/s", {"read_gbps": (5.0, "GB/s"), "read_iops": (4800.0, ""), "read_p99_us": (None, "us")},
         "read_gbps", NVME_FLOOR, {"command": cmd[3]}),
        ("host.nvme", "/dev/nvme4n1", "fail", "NVME_SLOW", "/dev/nvme4n1: sequential read 4.99 GB/s is below the limit 5 GB/s",
         {"read_gbps": (4.99, "GB/s"), "read_iops": (4700.0, ""), "read_p99_us": (2100.5, "us")}, "read_gbps", NVME_FLOOR,
         {"command": cmd[4]})]


def test_whole_results_nvme_scratch_file_missing_fio_and_nothing_named(tmp_path):
    scratch = _profile(tmp_path, 'fio_scratch = "/scratch/nodeqc.fio"')  # a scratch file alone is something to test
    [r] = host_stress.nvme([FioResult("/scratch/nodeqc.fio", read_gbps=2.0, read_iops=1900.0, read_p99_us=None)], None,
                           scratch)
    assert whole(r) == ("host.nvme", "/scratch/nodeqc.fio", "pass", None, "/scratch/nodeqc.fio: sequential read 2 GB/s "
                        "(no limit set)", {"read_gbps": (2.0, "GB/s"), "read_iops": (1900.0, ""), "read_p99_us": (None, "us")},
                        "read_gbps", [], {"command": []})
    missing = "apt-get install fio (or dnf install fio)"
    skipped = ("host.nvme", "node", "skip", "FIO_MISSING",
               "fio is not installed, so local NVMe was not tested: apt-get install fio (or dnf install fio)", {}, None, [], {})
    assert [whole(r) for r in host_stress.nvme([], missing, scratch)] == [skipped]
    assert [whole(r) for r in host_stress.nvme([], missing, _profile(tmp_path, 'fio_targets = ["/dev/nvme0n1"]'))] == [skipped]
    assert host_stress.nvme([], missing, GENERIC) == []  # nothing named: fio's absence does not matter


TEMP = {"high_alarm": 80.0, "low_alarm": -10.0, "high_warning": 70.0, "low_warning": 0.0}
WARN_TEMP, FAIL_TEMP = "outside the module's warning range 0..70", "outside the module's alarm range -10..80"


@pytest.mark.parametrize("x, found", [
    (80.0, [(Verdict.WARN, f"eth0 module temperature 80 C is {WARN_TEMP}", "OPTICS_WARNING")]),  # at the alarm: inside it
    (80.5, [(Verdict.FAIL, f"eth0 module temperature 80.5 C is {FAIL_TEMP}", "OPTICS_ALARM")]),
    (70.0, []), (69.5, []), (0.0, []),  # at the warning levels: inside them
    (70.5, [(Verdict.WARN, f"eth0 module temperature 70.5 C is {WARN_TEMP}", "OPTICS_WARNING")]),
    (-0.5, [(Verdict.WARN, f"eth0 module temperature -0.5 C is {WARN_TEMP}", "OPTICS_WARNING")]),
    (-10.0, [(Verdict.WARN, f"eth0 module temperature -10 C is {WARN_TEMP}", "OPTICS_WARNING")]),
    (-10.5, [(Verdict.FAIL, f"eth0 module temperature -10.5 C is {FAIL_TEMP}", "OPTICS_ALARM")])])
def test_a_module_reading_at_each_edge_of_its_ranges(x, found):
    m = ModuleReading(values={"temperature": [x]}, thresholds={"temperature": TEMP})
    assert host_stress._module_findings("eth0", m) == (found, {"temperature": Value(x, "C")})


def test_a_warning_side_the_module_does_not_give_is_its_alarm_side():
    high_only = {"high_alarm": 80.0, "low_alarm": -10.0, "high_warning": 70.0}
    assert host_stress._module_findings("eth0", ModuleReading({"temperature": [75.0]}, {"temperature": high_only}))[0] == [
        (Verdict.WARN, "eth0 module temperature 75 C is outside the module's warning range -10..70", "OPTICS_WARNING")]
    low_only = {"high_alarm": 80.0, "low_alarm": -10.0, "low_warning": 0.0}
    assert host_stress._module_findings("eth0", ModuleReading({"temperature": [-5.0]}, {"temperature": low_only}))[0] == [
        (Verdict.WARN, "eth0 module temperature -5 C is outside the module's warning range 0..80", "OPTICS_WARNING")]
    # Warnings not implemented (zero on both sides) beside real alarms: judged on the alarms, no false warning.
    unwarned = {"high_alarm": 80.0, "low_alarm": -10.0, "high_warning": 0.0, "low_warning": 0.0}
    assert host_stress._module_findings("eth0", ModuleReading({"temperature": [30.0]}, {"temperature": unwarned})) == (
        [], {"temperature": Value(30.0, "C")})
    assert host_stress._module_findings("eth0", ModuleReading({"temperature": [85.0]}, {"temperature": unwarned}))[0] == [
        (Verdict.FAIL, "eth0 module temperature 85 C is outside the module's alarm range -10..80", "OPTICS_ALARM")]


@pytest.mark.parametrize("thresholds", [
    {},  # no thresholds printed for it
    {"bias": {}},
    {"bias": {"high_alarm": 0.0, "low_alarm": 0.0, "high_warning": 0.0, "low_warning": 0.0}},  # not implemented
    {"bias": {"high_alarm": 6.5, "low_alarm": 6.5}},  # a range of one point is none
    {"bias": {"high_alarm": 5.0, "low_alarm": 8.0}},  # upside down
    {"bias": {"high_alarm": 8.0}}, {"bias": {"low_alarm": 2.0}},  # a side unreadable (N/A): half a range
])
def test_a_reading_without_a_range_is_not_judged_nor_shown(thresholds):
    # The readings are far outside any range, and the temperature after them is still judged.
    m = ModuleReading(values={"bias": [0.0, 99.0], "temperature": [75.0]}, thresholds={**thresholds, "temperature": TEMP})
    assert host_stress._module_findings("eth0", m) == (
        [(Verdict.WARN, f"eth0 module temperature 75 C is {WARN_TEMP}", "OPTICS_WARNING")], {"temperature": Value(75.0, "C")})


def test_module_values_are_each_measures_worst_lane_and_lanes_are_named():
    m = ModuleReading(values={"bias": [6.0, 7.5, 6.8, 6.2], "tx_power": [1.2, 0.9], "rx_power": [0.8, 1.1, 0.03, 0.9]},
                      thresholds={"bias": {"high_alarm": 10.0, "low_alarm": 2.0, "high_warning": 9.0, "low_warning": 3.0},
                                  "tx_power": {"high_alarm": 3.0, "low_alarm": 0.5, "high_warning": 2.5, "low_warning": 1.0},
                                  "rx_power": {"high_alarm": 3.0, "low_alarm": 0.0467, "high_warning": 2.5,
                                               "low_warning": 0.1}},
                      units={"tx_power": "mW"})
    assert host_stress._module_findings("eth0", m) == (
        [(Verdict.WARN, "eth0 transmit power (lane 2) 0.9 mW is outside the module's warning range 1..2.5", "OPTICS_WARNING"),
         (Verdict.FAIL, "eth0 receive power (lane 3) 0.03 mW is outside the module's alarm range 0.0467..3", "OPTICS_ALARM")],
        {"bias": Value(7.5, "mA"), "tx_power": Value(0.9, "mW"), "rx_power": Value(0.03, "mW")})  # bias: highest; power: lowest


@pytest.mark.parametrize("vendor, part, identifier, shown", [
    ("Mellanox", "MMA1B00-C100D", "QSFP28", "Mellanox MMA1B00-C100D QSFP28"), ("", "", "QSFP28", "QSFP28"),
    ("Mellanox", "", "", "Mellanox"), ("", "", "", "")])
def test_module_evidence(vendor, part, identifier, shown):
    m = ModuleReading(values={"temperature": [40.0], "voltage": [3261.2]}, thresholds={"temperature": TEMP},
                      units={"voltage": "mV"}, vendor=vendor, part=part, identifier=identifier)
    assert host_stress._module_evidence(m) == {"thresholds": {"temperature": TEMP},
                                               "readings": {"temperature": [40.0], "voltage": [3261.2]},
                                               "units": {"temperature": "C", "voltage": "mV"}, "module": shown}


def _module(vendor="Mellanox", part="MMA1B00", **values) -> ModuleReading:
    return ModuleReading(values=values, thresholds={k: TEMP for k in values}, vendor=vendor, part=part, identifier="QSFP28")


def _evidence(m: ModuleReading, reader: str = "ethtool -m", **more) -> dict:
    return {"reader": reader, "thresholds": m.thresholds, "readings": m.values, "units": {k: "C" for k in m.values},
            "module": f"{m.vendor} {m.part} QSFP28".strip(), **more}


@pytest.mark.parametrize("vendor, part, shown", [("Mellanox", "MMA1B00", " (Mellanox MMA1B00)"), ("Mellanox", "", " (Mellanox)"),
                                                 ("", "MMA1B00", " (MMA1B00)"), ("", "", "")])
def test_whole_results_optics_a_module_in_range_names_its_vendor_and_part(vendor, part, shown):
    m = _module(vendor, part, temperature=[40.0])
    assert [whole(r) for r in host_stress.optics({"eth0": ("nic0", m)}, None)] == [
        ("host.optics", "nic0", "pass", None, f"eth0{shown}: every module reading inside its own range",
         {"temperature": (40.0, "C")}, "temperature", [], _evidence(m))]


def test_whole_results_optics_every_port_in_order():
    hot = _module(temperature=[85.0])
    warm = _module(temperature=[75.0])
    unranged = ModuleReading(values={"bias": [6.0]}, thresholds={"bias": {"high_alarm": 0.0, "low_alarm": 0.0}})
    modules = {"eth0": ("nic0", hot), "eth1": ("nic1", None), "eth2": ("nic2", ModuleReading(vendor="Amphenol")),
               "eth3": ("nic3", warm), "eth4": ("nic4", unranged)}
    unread = {"eth5": ("nic5", "ethtool -m timed out after 30 s")}
    assert [whole(r) for r in host_stress.optics(modules, None, None, {"eth3": "mlxlink is not installed"}, unread)] == [
        ("host.optics", "nic0", "fail", "OPTICS_ALARM", f"eth0 module temperature 85 C is {FAIL_TEMP}",
         {"temperature": (85.0, "C")}, None, [], _evidence(hot)),
        # no module (eth1) and one without diagnostics (eth2): nothing to judge, nothing said
        ("host.optics", "nic3", "warn", "OPTICS_WARNING", f"eth3 module temperature 75 C is {WARN_TEMP}",
         {"temperature": (75.0, "C")}, None, [], _evidence(warm, mlxlink="mlxlink is not installed")),
        ("host.optics", "nic4", "pass", None, "eth4: the module gives no ranges to judge its readings against", {}, None, [],
         {"reader": "ethtool -m", "thresholds": unranged.thresholds, "readings": {"bias": [6.0]}, "units": {"bias": "mA"},
          "module": ""}),
        ("host.optics", "nic5", "skip", "MODULE_UNREADABLE", "eth5: ethtool -m timed out after 30 s, so its module was not "
         "judged", {}, None, [], {"reader": "ethtool -m", "error": "ethtool -m timed out after 30 s"})]
    # In range, with a note: the note ends the message.
    fine = _module(temperature=[40.0])
    [r] = host_stress.optics({"eth3": ("nic3", fine)}, None, None, {"eth3": "mlxlink is not installed"})
    assert whole(r) == ("host.optics", "nic3", "pass", None, "eth3 (Mellanox MMA1B00): every module reading inside its own "
                        "range; read with ethtool -m: mlxlink is not installed", {"temperature": (40.0, "C")},
                        "temperature", [], _evidence(fine, mlxlink="mlxlink is not installed"))


def test_whole_results_optics_the_worst_finding_leads_and_every_other_follows_in_order():
    m = ModuleReading(values={"temperature": [75.0], "rx_power": [0.9, 0.03, 0.02, 0.9]},
                      thresholds={"temperature": TEMP, "rx_power": {"high_alarm": 3.0, "low_alarm": 0.0467,
                                                                    "high_warning": 2.5, "low_warning": 0.1}})
    [r] = host_stress.optics({"eth0": ("nic0", m)}, None)
    assert (r.verdict, r.code, r.message, r.key) == (
        Verdict.FAIL, "OPTICS_ALARM",
        "eth0 receive power (lane 2) 0.03 mW is outside the module's alarm range 0.0467..3; eth0 module temperature 75 C "
        f"is {WARN_TEMP}; eth0 receive power (lane 3) 0.02 mW is outside the module's alarm range 0.0467..3", None)


def test_whole_results_optics_without_ethtool_still_judges_mlxlink_ports():
    link = LinkReading(effective_errors=0, effective_ber=1.5e-254, minutes_since_clear=30.0)
    results = host_stress.optics({"eth0": ("nic0", _module(temperature=[85.0]))}, "apt-get install ethtool",
                                 {"ibp0": ("nic1", link)})
    assert [whole(r) for r in results] == [
        ("host.optics", "node", "skip", "ETHTOOL_MISSING", "ethtool is not installed, so optical modules were not read: "
         "apt-get install ethtool", {}, None, [], {}),
        ("host.optics", "nic1", "pass", None, "ibp0: no module readings to judge; no errors left after FEC in 30 min",
         {"effective_ber": (1.5e-254, "")}, None, [], {"reader": "mlxlink", **_link_evidence(link)})]


def _link_evidence(link: LinkReading) -> dict:
    return {"state": link.state, "speed": link.speed, "fec": link.fec, "effective_errors": link.effective_errors,
            "effective_ber": link.effective_ber, "symbol_errors": link.symbol_errors, "symbol_ber": link.symbol_ber,
            "raw_ber": link.raw_ber, "raw_errors_per_lane": link.raw_errors_per_lane,
            "minutes_since_clear": link.minutes_since_clear, "recommendation": link.recommendation}


ABOVE = "is above 1e-12"


@pytest.mark.parametrize("link, verdict, code, message, values", [
    # The count and the time are said only when both are known.
    (LinkReading(effective_ber=3e-10, minutes_since_clear=5.0), "fail", "LINK_BER_HIGH",
     f"ibp0 link effective BER (after FEC) 3.0e-10 {ABOVE}", {"effective_ber": (3e-10, "")}),
    (LinkReading(effective_errors=40, effective_ber=3e-10), "fail", "LINK_BER_HIGH",
     f"ibp0 link effective BER (after FEC) 3.0e-10 {ABOVE}", {"effective_ber": (3e-10, "")}),
    (LinkReading(effective_errors=1, effective_ber=1e-8, minutes_since_clear=0.5), "fail", "LINK_BER_HIGH",
     f"ibp0 link effective BER (after FEC) 1.0e-08 (1 error in 0.5 min) {ABOVE}", {"effective_ber": (1e-8, "")}),
    (LinkReading(effective_errors=2, effective_ber=1e-8, minutes_since_clear=0.5), "fail", "LINK_BER_HIGH",
     f"ibp0 link effective BER (after FEC) 1.0e-08 (2 errors in 0.5 min) {ABOVE}", {"effective_ber": (1e-8, "")}),
    # Above the floor from too few bits: said, not failed.
    (LinkReading(effective_errors=1, effective_ber=2e-12, minutes_since_clear=0.1), "pass", None,
     "ibp0: no module readings to judge; ibp0 link effective BER (after FEC) 2.0e-12 (1 error in 0.1 min) is from too few "
     "bits to judge against 1e-12: clear the counters (mlxlink --pc) and read them after traffic",
     {"effective_ber": (2e-12, "")}),
    # At the floor: passes.
    (LinkReading(effective_errors=4, effective_ber=1e-12, minutes_since_clear=60.0), "pass", None,
     "ibp0: no module readings to judge; link BER 1.0e-12 after FEC", {"effective_ber": (1e-12, "")}),
    (LinkReading(effective_errors=0, effective_ber=1e-255), "pass", None,
     "ibp0: no module readings to judge; no errors left after FEC", {"effective_ber": (1e-255, "")}),
    # InfiniBand: the symbol BER is judged, the effective BER is evidence.
    (LinkReading(effective_errors=9000, effective_ber=4e-10, symbol_errors=0, symbol_ber=1e-255, minutes_since_clear=2.5),
     "pass", None, "ibp0: no module readings to judge; no errors left after FEC in 2.5 min", {"symbol_ber": (1e-255, "")}),
    (LinkReading(effective_errors=0, effective_ber=1e-255, symbol_errors=88, symbol_ber=2e-11, minutes_since_clear=25075.2),
     "fail", "LINK_BER_HIGH", f"ibp0 link symbol BER 2.0e-11 (88 errors in 25075.2 min) {ABOVE}", {"symbol_ber": (2e-11, "")}),
])
def test_whole_results_link_ber(link, verdict, code, message, values):
    assert [whole(r) for r in host_stress.optics({}, None, {"ibp0": ("nic0", link)})] == [
        ("host.optics", "nic0", verdict, code, message, values, None, [], {"reader": "mlxlink", **_link_evidence(link)})]


def test_whole_results_link_with_its_module():
    m = _module(temperature=[54.0])
    link = LinkReading(module=m, state="Active", effective_errors=0, effective_ber=1e-255, minutes_since_clear=30.0)
    evidence = {"reader": "mlxlink", **_link_evidence(link), **{k: v for k, v in _evidence(m).items() if k != "reader"}}
    assert [whole(r) for r in host_stress.optics({}, None, {"ibp0": ("nic0", link)})] == [
        ("host.optics", "nic0", "pass", None, "ibp0 (Mellanox MMA1B00): every module reading inside its own range; no errors "
         "left after FEC in 30 min", {"temperature": (54.0, "C"), "effective_ber": (1e-255, "")}, "temperature", [], evidence)]
    # The module's alarm and the link's BER are one result, the worst leading.
    hot = _module(temperature=[85.0])
    link = LinkReading(module=hot, effective_errors=40, effective_ber=3e-10, minutes_since_clear=30.0)
    [r] = host_stress.optics({}, None, {"ibp0": ("nic0", link)})
    assert (r.verdict, r.code, r.message, r.key) == (
        Verdict.FAIL, "OPTICS_ALARM", f"ibp0 module temperature 85 C is {FAIL_TEMP}; ibp0 link effective BER (after FEC) "
        f"3.0e-10 (40 errors in 30 min) {ABOVE}", None)
    # A module with readings but no ranges, and counters: the counters are judged and the module said.
    unranged = ModuleReading(values={"temperature": [54.0]}, thresholds={"temperature": {"high_alarm": 0.0, "low_alarm": 0.0}})
    [r] = host_stress.optics({}, None, {"ibp0": ("nic0", LinkReading(module=unranged, effective_errors=0, effective_ber=1e-255))})
    assert (r.verdict, r.message, r.key) == (
        Verdict.PASS, "ibp0: the module gives no ranges to judge its readings against; no errors left after FEC", None)
    # A module alone, no counters: no BER said.
    [r] = host_stress.optics({}, None, {"ibp0": ("nic0", LinkReading(module=_module(temperature=[54.0])))})
    assert (r.verdict, r.message) == (Verdict.PASS, "ibp0 (Mellanox MMA1B00): every module reading inside its own range")


def test_links_with_nothing_to_judge_or_unreadable():
    nothing = {"ibp1": ("nic1", None), "ibp2": ("nic2", LinkReading()),  # no cable; a port without counters or module
               "ibp3": ("nic3", LinkReading(module=ModuleReading(values={"temperature": [54.0]})))}  # a module without ranges
    assert host_stress.optics({}, None, nothing) == []
    bad = LinkReading(error="mlxlink failed: -E- device not found")
    assert [whole(r) for r in host_stress.optics({}, None, {"ibp0": ("nic0", bad)})] == [
        ("host.optics", "nic0", "skip", "OPTICS_UNREADABLE", "ibp0: mlxlink's output could not be read, so its module and link "
         "were not judged: mlxlink failed: -E- device not found", {}, None, [], {"reader": "mlxlink", **_link_evidence(bad)})]


@pytest.mark.parametrize("errors, ber, above", [
    (0, 1e-10, False), (5, 1e-12, False), (5, 9e-13, False),  # no errors; at and below the floor
    (1, 1e-8, True),  # one error in 1e8 bits: the floor's mean is 1e-4
    # Each count's edge (the bound at the floor's mean crosses 1e-3): just inside, just outside.
    (1, 9.99e-10, False), (1, 1e-9, True), (4, 9.33e-12, False), (4, 9.35e-12, True),
    (10, 3.38e-12, False), (10, 3.39e-12, True)])
def test_ber_above_the_floor_at_its_edges(errors, ber, above):
    assert host_stress.above_floor(errors, ber) is above


@pytest.mark.parametrize("ber, errors, minutes, summary", [
    (None, 0, 5.0, ""), (1e-255, 0, None, "; no errors left after FEC"), (1e-255, 0, 2.5, "; no errors left after FEC in 2.5 min"),
    (1e-13, 3, 2.5, "; link BER 1.0e-13 after FEC"), (1e-13, None, None, "; link BER 1.0e-13 after FEC")])
def test_ber_summary(ber, errors, minutes, summary):
    assert host_stress._ber_summary(ber, errors, minutes) == summary


def test_a_threshold_ethtool_prints_as_na_is_no_crash():
    """Before, a missing alarm side raised KeyError and a missing warning side TypeError (formatting None)."""
    text = (FIXTURES / "ethtool-m-qsfp28-mellanox.txt").read_text()
    no_high_alarm = text.replace("Module temperature high alarm threshold   : 80.00 degrees C / 176.00 degrees F",
                                 "Module temperature high alarm threshold   : N/A")
    [r] = host_stress.optics({"eth0": ("eth0", parse_module(no_high_alarm))}, None)
    assert r.verdict is Verdict.PASS and "temperature" not in r.values  # half a range: not judged
    no_low_warning = text.replace("Module temperature low warning threshold  : 0.00 degrees C / 32.00 degrees F",
                                  "Module temperature low warning threshold  : N/A").replace("30.56 degrees C", "75.00 degrees C")
    [r] = host_stress.optics({"eth0": ("eth0", parse_module(no_low_warning))}, None)
    assert (r.verdict, r.code, r.message) == (Verdict.WARN, "OPTICS_WARNING", "eth0 module temperature 75 C is outside the "
                                                                             "module's warning range -10..70")


def test_the_fio_scratch_file_is_one_nodeqc_makes_and_an_existing_file_is_never_touched(tmp_path, monkeypatch):
    """The 2026-11-29 fuzzing: `[host] fio_scratch` naming an existing file deleted it after fio ran
    (fio would have written its 1 GiB over it first). An existing path is refused; a new one is made,
    read by fio and removed."""
    from nodeqc.backends.host_stress import LinuxHostStress

    fio = tmp_path / "bin" / "fio"
    fio.parent.mkdir()
    log = tmp_path / "fio-args"
    fio.write_text(f"#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > {log}\necho '{{}}'\n")
    fio.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fio.parent}:{os.environ['PATH']}")
    precious = tmp_path / "precious.db"
    precious.write_text("precious")
    result = LinuxHostStress().fio(str(precious), 1, scratch=True)
    assert precious.read_text() == "precious" and "exists: [host] fio_scratch must name a file that does not exist" in result.error
    link = tmp_path / "link"
    link.symlink_to(precious)
    assert "exists" in LinuxHostStress().fio(str(link), 1, scratch=True).error and precious.exists()
    fresh = tmp_path / "scratch:1.bin"  # a ':' fio would split at: escaped, one file (the review's finding)
    LinuxHostStress().fio(str(fresh), 1, scratch=True)
    assert not fresh.exists() and f"--filename={str(fresh).replace(':', chr(92) + ':')}" in log.read_text().splitlines()
    # An existing scratch path is the profile's setting, no drive's fault: not measured (ERROR), never NVME_FIO.
    h100 = load_profile("h100")
    scratching = h100.__class__(h100.name, h100.path, {**h100.data, "host": {**h100.data.get("host", {}),
                                                                             "fio_scratch": str(precious)}}, h100.chain)
    judged = host_stress.nvme([LinuxHostStress().fio(str(precious), 1, scratch=True)], None, scratching)
    assert [(r.verdict, r.code) for r in judged] == [(Verdict.ERROR, "NVME_SCRATCH_EXISTS")]
