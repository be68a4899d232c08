"""Tool output is untrusted input (issue 25): each defect the attack review found, as a test.

iperf3 printing `Infinity`, or 94 Gb/s on a 10 Gb/s link, passed; a string, list or NaN rate ended
the whole run (exit 2, every later check lost). ib_write_bw, fio, journalctl and `ethtool -m`
crashed or read 400-digit numbers as infinity. Now output out of the tool's format is that check's
ERROR (TOOL_OUTPUT_UNREADABLE, the output's end in its evidence), a figure above what the link or
device can carry is FAIL FIGURE_IMPOSSIBLE, and the run goes on. The fuzzers are in
test_parser_fuzz.py; the end-to-end run below uses stand-in tools on PATH, as test_nic_backend does.
"""

from __future__ import annotations

import os

import pytest

from nodeqc.backends import nic as nic_backend
from nodeqc.backends import simulated_hardware
from nodeqc.backends.host_stress import FioResult, HostStress, parse_fio, parse_module
from nodeqc.backends.kernel_log import parse_journal_json
from nodeqc.backends.nic import ProcessTraffic, parse_iperf3, read_ib_write_bw, read_iperf3
from nodeqc.backends.optics import read_optics
from nodeqc.backends.sim.node import SimNics
from nodeqc.checks import host_stress as host_stress_checks
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA
from nodeqc.core.tool_output import ToolOutputError
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.peers import Peer
from nodeqc.spec.profile import load_profile
from test_nic_backend import IB_WRITE_BW_OK
from test_nic_checks import nic

BIG = "9" * 400


def iperf3_json(rate: str) -> str:
    """iperf3 -J's result with RATE written as is where bits_per_second goes."""
    return ('{"start": {}, "intervals": [], "end": {"streams": [{}], "sum_sent": {"seconds": 5.0, '
            f'"bits_per_second": 3.8e11, "retransmits": 0}}, "sum_received": {{"seconds": 5.0, "bits_per_second": {rate}}}}}}}')


@pytest.mark.parametrize("rate, said", [
    ("Infinity", "is inf, not a finite number"), ("-Infinity", "not a finite number"),
    ("NaN", "not a finite number"), ('"9.4e9"', "the string '9.4e9', not a number"),
    ("[9400000000]", "a list [9400000000], not a number"), ("true", "the boolean true, not a number"),
    (BIG, "a number of 400 digits, beyond any measurement"), ("1" * 5000, "cannot be read"),
    ("-9.4e9", "outside [0, ]"),
])
def test_iperf3_rates_no_iperf3_prints_are_refused_naming_the_field(rate, said):
    with pytest.raises(ToolOutputError) as e:
        read_iperf3(iperf3_json(rate))
    assert said in str(e.value) and "\n" not in str(e.value)
    gbps, error, detail = parse_iperf3(iperf3_json(rate))  # the fabric worker's: an error, never an exception
    assert gbps is NA and said in error and detail == {"unreadable": True}


@pytest.mark.parametrize("doc", ["[1, 2]", '"end"', '{"end": []}', '{"end": {"sum_received": 5}}', "[" * 5000 + "]" * 5000])
def test_iperf3_json_of_another_shape_is_refused(doc):
    with pytest.raises(ToolOutputError):
        read_iperf3(doc)


@pytest.mark.parametrize("average, said", [(BIG, "not a number"), ("1.2.3", "'1.2.3', not a number")])
def test_ib_write_bw_figures_that_are_not_numbers_are_refused(average, said):
    with pytest.raises(ToolOutputError) as e:
        read_ib_write_bw(IB_WRITE_BW_OK.replace("195.12", average))
    assert said in str(e.value) and "BW average" in str(e.value)


@pytest.mark.parametrize("doc, said", [
    ('{"jobs": [{"read": {"io_bytes": 1, "bw_bytes": "fast"}}]}', "fio's read.bw_bytes is the string 'fast'"),
    ('{"jobs": [{"read": {"io_bytes": 1, "bw_bytes": ' + BIG + "}}]}", "a number of 400 digits"),
    ('{"jobs": [{"read": {"io_bytes": 1, "bw_bytes": NaN}}]}', "not a finite number"),
    ('{"jobs": [{"read": [1]}]}', "fio's read is [1], not an object"),
    ('{"jobs": {"a": 1}}', "fio's jobs is {'a': 1}, not a list"),
])
def test_fio_json_out_of_its_format_is_unreadable_not_a_crash(doc, said, tmp_path):
    r = parse_fio(doc, "/dev/nvme0n1")
    assert r.unreadable and said in r.error and r.read_gbps is None and r.output_tail
    [result] = host_stress_checks.nvme([r], None, fio_profile(tmp_path))
    assert (result.verdict, result.code) == (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE")
    assert said in result.message and result.evidence["output_tail"]


def fio_profile(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text('description = "x"\nextends = "generic"\n[host]\nfio_targets = ["/dev/nvme0n1"]\nmin_nvme_read_gbps = 5\n')
    return load_profile(str(p))


@pytest.mark.parametrize("gbps, verdict, code", [(1e12, Verdict.FAIL, "FIGURE_IMPOSSIBLE"), (512.0, Verdict.PASS, None),
                                                 (6.5, Verdict.PASS, None)])
def test_a_fio_read_faster_than_any_drive_is_a_suspect_measurement(tmp_path, gbps, verdict, code):
    [r] = host_stress_checks.nvme([FioResult("/dev/nvme0n1", read_gbps=gbps)], None, fio_profile(tmp_path))
    assert (r.verdict, r.code) == (verdict, code)
    if code:
        assert "more than any local drive can carry (512 GB/s): the measurement is suspect" in r.message


MODULE = """\tIdentifier                                : 0x11 (QSFP28)
\tModule temperature                        : 41.00 degrees C / 105.80 degrees F
\tModule temperature high alarm threshold   : 80.00 degrees C / 176.00 degrees F
\tModule voltage                            : 3.2910 V
"""


@pytest.mark.parametrize("line, said", [
    ("Module temperature high alarm threshold   : " + BIG, "(400 characters)', not a number"),  # was infinity: never alarmed
    ("Module temperature                        : 999.00 degrees C", "is 999, outside [-128, 128]"),
    ("Module voltage                            : 1.2.3 V", None),  # "1.2" read, within range: a reading
])
def test_ethtool_module_figures_no_module_can_report_are_refused(line, said):
    text = MODULE + "\t" + line + "\n"
    if said is None:
        assert parse_module(text).values["voltage"][-1] == 1.2
        return
    with pytest.raises(ToolOutputError) as e:
        parse_module(text)
    assert said in str(e.value) and "ethtool -m line 5" in str(e.value)


class _Modules(HostStress):
    """ethtool -m answers per port; nothing else is run."""

    def __init__(self, outputs: dict[str, str]):
        self.outputs = outputs

    def cpu(self, seconds): raise AssertionError  # noqa: E704
    def memory_bandwidth(self): raise AssertionError  # noqa: E704
    def fio(self, target, seconds, scratch): raise AssertionError  # noqa: E704
    def mlxlink(self, device): raise AssertionError  # noqa: E704

    def missing_tool(self, tool):
        return None

    def module(self, interface):
        return self.outputs[interface]


def test_a_module_read_as_infinity_is_that_ports_error_and_the_other_ports_are_judged():
    bad = MODULE.replace("80.00 degrees C", BIG + " degrees C")
    read = read_optics(_Modules({"eth0": bad, "eth1": MODULE}), [nic("eth0", driver="i40e"), nic("eth1", driver="i40e")])
    results = {r.subject: r for r in host_stress_checks.optics(read.modules, read.ethtool_missing, read.links,
                                                               read.notes, read.unread, read.unparsed)}
    assert (results["eth0"].verdict, results["eth0"].code) == (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE")
    assert "ethtool -m line 3 ('Module temperature high alarm threshold') is '9999" in results["eth0"].message
    assert any(BIG in line for line in results["eth0"].evidence["output_tail"])
    assert results["eth1"].verdict is Verdict.PASS


@pytest.mark.parametrize("line", ["[1, 2]", '"NVRM: Xid 79"', "5", '{"MESSAGE": [300, -1], "PRIORITY": "' + BIG + '"}',
                                  '{"MESSAGE": "x", "__CURSOR": ["a"]}', '{"__MONOTONIC_TIMESTAMP": "' + "1" * 5000 + '"}'])
def test_journal_lines_out_of_its_format_are_kept_as_text_never_an_exception(line):
    [record] = parse_journal_json(line)
    assert 0 <= record.level <= 7 and record.usec >= 0
    if "Xid" in line:
        assert "Xid 79" in record.text  # still judged by the kernel log check


# ---------------------------------------------------------------------- end to end: a whole run


# The stand-in tools: what each port's test prints. hgx-h100's NICs get iperf3 ports 5201 (eno1,
# 10 Gb/s) to 5209 and ib_write_bw ports 18515 to 18522 (its eight 400 Gb/s HCAs).
IPERF3_BY_PORT = {5201: iperf3_json("9.4e10"), 5202: iperf3_json("Infinity"), 5203: iperf3_json('"9.4e9"'),
                  5204: iperf3_json("NaN"), 5205: iperf3_json(BIG), 5206: iperf3_json("[1, 2]")}
GOOD_IPERF3 = iperf3_json("3.8e11")
IB_BY_PORT = {18515: IB_WRITE_BW_OK.replace("195.12", BIG), 18516: IB_WRITE_BW_OK.replace("195.12", "1.2.3"),
              18517: IB_WRITE_BW_OK.replace("195.12", "4000.00")}
GOOD_IB = IB_WRITE_BW_OK.replace("195.12", "390.00")


@pytest.fixture
def hostile_tools(tmp_path, monkeypatch):
    bin_dir, out = tmp_path / "bin", tmp_path / "out"
    bin_dir.mkdir()
    out.mkdir()
    for port, text in [*IPERF3_BY_PORT.items(), *IB_BY_PORT.items(), ("iperf3", GOOD_IPERF3), ("ib", GOOD_IB)]:
        (out / str(port)).write_text(text + "\n")
    for tool, default in (("iperf3", "iperf3"), ("ib_write_bw", "ib")):
        script = bin_dir / tool
        script.write_text("#!/bin/sh\n"
                          'case "$*" in *--help*) exit 0;; esac\n'
                          'port=$(echo "$*" | sed -n "s/.*-p \\([0-9]*\\).*/\\1/p")\n'
                          f'if [ -f "{out}/$port" ]; then cat "{out}/$port"; else cat "{out}/{default}"; fi\n')
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    nic_backend.iperf3_options.cache_clear()
    yield
    nic_backend.iperf3_options.cache_clear()


class _RealTrafficNics(SimNics):
    """The simulated node's NICs, measured by the real traffic session (the tools on PATH)."""

    def start_traffic(self, rounds, watch):
        return ProcessTraffic(self, rounds, watch)


def test_hostile_traffic_tools_give_errors_and_suspect_figures_and_the_run_goes_on(tmp_path, hostile_tools):
    hw = simulated_hardware("hgx-h100", [], time_scale=40)
    hw.nics = _RealTrafficNics(hw.nics.node)
    profile = tmp_path / "all-nics.toml"  # eno1 (10 Gb/s) judged too, for the 94 Gb/s case
    profile.write_text('description = "x"\nextends = "hgx-h100"\n[nic]\nmatch = ["*"]\ncount = 9\n')
    options = RunOptions(load_profile(str(profile)), create_key(tmp_path / "k.pem"), out_dir=tmp_path / "out",
                         quick=True, nic_peers=[Peer("peer")])
    outcome = Runner(options, hw).run()
    by = {(r.name, r.subject): r for r in outcome.results}
    assert "nodeqc.internal" not in {r.name for r in outcome.results}  # a string rate ended the run before
    tcp = {s: by[("nic.tcp", s)] for s in (f"nic{i}" for i in range(9))}
    assert (tcp["nic0"].verdict, tcp["nic0"].code) == (Verdict.FAIL, "FIGURE_IMPOSSIBLE")  # 94 Gb/s on 10 Gb/s
    assert "94 Gb/s is more than the 10 Gb/s link can carry" in tcp["nic0"].message
    for s, said in (("nic1", "not a finite number"), ("nic2", "the string '9.4e9'"), ("nic3", "not a finite number"),
                    ("nic4", "400 digits"), ("nic5", "a list [1, 2]")):
        assert (tcp[s].verdict, tcp[s].code) == (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE"), s
        assert said in tcp[s].message and tcp[s].evidence["output_tail"], s
    assert all(tcp[f"nic{i}"].verdict is Verdict.PASS for i in range(6, 9))  # the ports after still measured
    rdma = {s: by[("nic.rdma", s)] for s in (f"nic{i}" for i in range(1, 9))}
    assert [(rdma[s].verdict, rdma[s].code) for s in ("nic1", "nic2", "nic3")] == [
        (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE"), (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE"),
        (Verdict.FAIL, "FIGURE_IMPOSSIBLE")]
    assert all(rdma[f"nic{i}"].verdict is Verdict.PASS for i in range(4, 9))
    # Every other NIC check still ran, and the report says why the node failed.
    assert all(("nic.link", f"nic{i}") in by and ("nic.stability", f"nic{i}") in by for i in range(9))
    # Checks that could not measure beside a proven failure (FIGURE_IMPOSSIBLE): the node failed, exit 1.
    assert outcome.verdict == "FAIL" and outcome.exit_code == 1
    assert outcome.status != "aborted"
