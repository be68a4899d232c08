"""Host stress of a full run: CPU known answers (for real, briefly, on this machine), memory
bandwidth, fio and `ethtool -m` parsed from captured real output (tests/fixtures, sources in each
file's header), and the verdicts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nodeqc.backends.host_stress import (CPU_FLOAT_ANSWER, CPU_HASH_ANSWER, FioResult, LinuxHostStress, known_answer,
                                         parse_fio, parse_module)
from nodeqc.checks import host_stress
from nodeqc.model import Verdict
from nodeqc.profile import load_profile

from conftest import cli

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
    assert died.verdict is Verdict.FAIL and "CPU 3: BrokenProcessPool" in died.message


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


def whole(r):
    return (r.name, r.subject, r.verdict.value, r.code, r.message, {k: (v.value, v.unit) for k, v in r.values.items()},
            r.key, [(t.name, t.kind, t.fail, t.warn, t.unit) for t in r.thresholds], r.evidence)


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
        "host.cpu_stress", "node", "fail", "HOST_CPU_WRONG",
        "the stress work did not finish on CPU 3: BrokenProcessPool: killed, CPU 5: no result, "
        "CPU 6: TimeoutError: no answer, CPU 8: no result",
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
