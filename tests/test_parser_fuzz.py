"""Every parser of a tool's output, fuzzed (issue 25: the node being qualified may be broken or
compromised, and its tools print what it likes).

Two shared strategies drive them all: `mutated(real output)` puts hostile tokens (NaN, Infinity, a
400-digit number, 1.2.3, a string, control characters) where the real output has numbers or
values, and `hostile_json` replaces any leaf of a real JSON output with any JSON value (a list, a
string, NaN, a 5000-digit integer, deep nesting). The properties: no exception escapes but the
parser's documented parse error, and no figure that comes out is NaN or infinite.

(nvidia-smi's output is not parsed: nodeqc reads the GPUs through NVML.) Examples are few and the
generation derandomized, so the file stays well under a minute on two cores and gives the same
cases on every run.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeqc.backends.bmc import BmcUnreadable, parse_sdr, parse_sensor_thresholds
from nodeqc.backends.host_stress import MODULE_RANGES, parse_fio, parse_module
from nodeqc.backends.kernel_log import KernelRecord, parse_journal_json, parse_kmsg
from nodeqc.backends.mlxlink import parse_mlxlink
from nodeqc.backends.nic import (LinuxNics, parse_ib_write_bw, parse_ib_write_lat, parse_iperf3, read_ib_write_bw,
                                 read_ib_write_lat, read_iperf3)
from nodeqc.backends.platform import acs_from_config, acs_from_lspci, parse_aer
from nodeqc.core.na import NA, is_na
from nodeqc.core.tool_output import ToolOutputError, excerpt, figure
from test_fabric_tails import IB_WRITE_LAT, ROW as IB_WRITE_LAT_ROW
from test_nic_backend import IB_WRITE_BW_OK, IPERF3_OK

FIXTURES = Path(__file__).parent / "fixtures"
FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# ---------------------------------------------------------------------- shared strategies

# What a broken or compromised tool prints where a number belongs.
HOSTILE = ["NaN", "nan", "Infinity", "-Infinity", "inf", "1e400", "-1e400", "9" * 400, "1" * 5000, "-1", "1.2.3",
           "", " ", "0x10", "1_000", "\u0662\u0663", "\u00b2", "\x1b[2J", "\x00", '"9e9"', "[]", "{}", "true",
           "null", "1e-400", "4.9e-324", "1.7976931348623157e308"]
hostile_token = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12),
                          st.integers(min_value=-10**30, max_value=10**30).map(str),
                          st.floats().map(repr))
NUMBER_TOKEN = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@st.composite
def mutated(draw, text: str):
    """TEXT with some of its numbers (and sometimes a whole line) replaced by hostile tokens."""
    spans = [m.span() for m in NUMBER_TOKEN.finditer(text)]
    picks = draw(st.sets(st.integers(0, len(spans) - 1), min_size=1, max_size=4)) if spans else set()
    out, last = [], 0
    for i, (a, b) in enumerate(spans):
        if i in picks:
            out += [text[last:a], draw(hostile_token)]
            last = b
    out.append(text[last:])
    lines = "".join(out).splitlines()
    if lines and draw(st.booleans()):
        lines[draw(st.integers(0, len(lines) - 1))] = draw(st.text(max_size=80))
    return "\n".join(lines)


LONG = "\ue000long"  # stands for a number of 5000 digits, which Python will not write itself (json.dumps)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**450, max_value=10**450),
                      st.floats(), st.text(max_size=10), st.just(LONG))
json_value = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                          max_leaves=6)


def _paths(data, path=()):
    yield path
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, path + (i,))


@st.composite
def hostile_json(draw, text: str):
    """A real JSON output with one to three of its values (leaves or whole branches) replaced by any
    JSON value, written as Python writes it (NaN and Infinity as those bare words)."""
    data = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        node = data
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = draw(json_value)
    out = json.dumps(data).replace(json.dumps(LONG), "1" * 5000)
    if draw(st.booleans()):
        out = "[" * 5000 + "]" * 5000 if draw(st.booleans()) else out.replace("{", "[", 1)
    return out


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# ---------------------------------------------------------------------- the shared reader


@FUZZ
@given(st.one_of(hostile_token, json_value))
def test_figure_gives_a_finite_number_in_bounds_or_refuses_in_one_line(value):
    try:
        x = figure(value, "the field", low=0, high=1e6, text=True)
    except ToolOutputError as e:
        assert "the field" in str(e) and "\n" not in str(e) and "\x1b" not in str(e) and len(str(e)) < 300
    else:
        assert finite(x) and 0 <= x <= 1e6


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 10**400, "9" * 400, "NaN", "Infinity", "1.2.3",
                                   "1_000", "\u0662", True, None, [1], {"a": 1}])
def test_figure_refuses_every_number_no_tool_prints(value):
    with pytest.raises(ToolOutputError):
        figure(value, "x", text=True)


def test_an_excerpt_is_bounded_and_escaped():
    tail = excerpt("ok\n" * 100 + "\x1b[2J" + "A" * 10000)
    assert len(tail) <= 20 and sum(map(len, tail)) <= 2000 + 3
    assert not any("\x1b" in line for line in tail) and tail[-1].endswith("AAA")


# ---------------------------------------------------------------------- traffic: iperf3, ib_write_bw


def _traffic_result_is_sound(result):
    gbps, error, detail = result
    assert isinstance(detail, dict) and (error is None or isinstance(error, str))
    if error is None:
        assert finite(gbps) and gbps >= 0
    else:
        assert is_na(gbps) and "\n" not in error


@FUZZ
@given(st.one_of(hostile_json(IPERF3_OK), mutated(IPERF3_OK)))
def test_iperf3_output_reads_or_is_refused(text):
    try:
        _traffic_result_is_sound(read_iperf3(text))
    except ToolOutputError as e:
        assert "iperf3" in str(e) and "\n" not in str(e)
    _traffic_result_is_sound(parse_iperf3(text))  # the fabric worker's: never raises


# ib_write_bw's result row takes only digits and points: what a node can put there.
digits_and_points = st.one_of(st.sampled_from(["9" * 400, "1.2.3", ".", "..", "0", "1e5"]),
                              st.from_regex(r"[0-9.]{1,12}", fullmatch=True))
ib_table = st.lists(digits_and_points, min_size=5, max_size=5).map(
    lambda row: IB_WRITE_BW_OK.replace(" 65536      1861262          0.00               195.12 \t\t   0.372150",
                                       " " + "   ".join(row)))


@FUZZ
@given(st.one_of(mutated(IB_WRITE_BW_OK), ib_table))
def test_ib_write_bw_output_reads_or_is_refused(text):
    try:
        _traffic_result_is_sound(read_ib_write_bw(text))
    except ToolOutputError as e:
        assert "ib_write_bw" in str(e) and "\n" not in str(e)
    _traffic_result_is_sound(parse_ib_write_bw(text))


# ib_write_lat's row likewise: digits and points, and sometimes one figure fewer or more (perftest's
# fixed-width columns run together when a figure outgrows them).
lat_table = st.lists(digits_and_points, min_size=8, max_size=10).map(
    lambda row: IB_WRITE_LAT.replace(IB_WRITE_LAT_ROW, " " + "   ".join(row)))


@FUZZ
@given(st.one_of(mutated(IB_WRITE_LAT), lat_table))
def test_ib_write_lat_output_reads_or_is_refused(text):
    try:
        p99, error, detail = read_ib_write_lat(text)
    except ToolOutputError as e:
        assert "ib_write_lat" in str(e) and "\n" not in str(e)
    else:
        if error is None:  # a figure only from a table in order: min <= median <= p99 <= p99.9 <= max
            assert finite(p99) and detail["min_us"] <= detail["p50_us"] <= p99 <= detail["p999_us"] <= detail["max_us"]
    p99, error, detail = parse_ib_write_lat(text)  # the fabric worker's: never raises
    assert (error is None and finite(p99) and p99 >= 0) or (is_na(p99) and "\n" not in error)


# ---------------------------------------------------------------------- host stress: fio, ethtool -m


FIO = fixture("fio-3.42-randwrite-nvme.txt")
FIO_JSON = json.dumps(json.JSONDecoder().raw_decode(FIO[FIO.index("{"):])[0])  # fio's lines around it dropped


@FUZZ
@given(st.one_of(hostile_json(FIO_JSON), mutated(FIO)))
def test_fio_output_reads_or_says_it_is_unreadable(text):
    r = parse_fio(text, "/dev/nvme0n1")  # never raises
    for x in (r.read_gbps, r.write_gbps, r.read_iops, r.read_p99_us):
        assert x is None or (finite(x) and x >= 0)
    if r.unreadable:
        assert r.error and "\n" not in r.error and r.output_tail


@FUZZ
@given(st.sampled_from(["ethtool-m-qsfp28-mellanox.txt", "ethtool-m-qsfp-finisar-zero-thresholds.txt",
                        "ethtool-m-dac-copper.txt"]).map(fixture).flatmap(mutated))
def test_ethtool_module_output_reads_or_is_refused(text):
    try:
        m = parse_module(text)
    except ToolOutputError as e:
        assert "ethtool -m line" in str(e) and "\n" not in str(e)
        return
    for measure, readings in m.values.items():
        low, high = MODULE_RANGES[measure]
        assert all(finite(x) and low <= x <= high for x in readings)
    assert all(finite(x) for limits in m.thresholds.values() for x in limits.values())


@FUZZ
@given(st.sampled_from(["mlxlink-cx4-100g-counters.txt", "mlxlink-osfp-400g-optical-module.txt",
                        "mlxlink-bf3-100g-dac-m-c.txt"]).map(fixture).flatmap(mutated)
       | hostile_json(fixture("mlxlink-osfp-dr4-module.json")))
def test_mlxlink_output_reads_or_says_why_not(text):
    link = parse_mlxlink(text)  # never raises: an unreadable output is the reading's error
    if link is None or link.error:
        assert link is None or ("\n" not in link.error and len(link.error) <= 300)
        return
    for x in (link.effective_ber, link.symbol_ber, link.raw_ber, link.minutes_since_clear):
        assert x is None or finite(x)
    if link.module is not None:
        assert all(finite(x) for xs in link.module.values.values() for x in xs)


# ---------------------------------------------------------------------- ipmitool


@FUZZ
@given(st.sampled_from(["ipmitool-sdr-type-voltage.txt", "ipmitool-sdr-type-power-supply-watts-first.txt",
                        "ipmitool-sensor.txt"]).map(fixture).flatmap(mutated))
def test_ipmitool_output_reads_or_is_refused_naming_the_line(text):
    for parse in (lambda t: parse_sdr(t, "voltage"), parse_sensor_thresholds):
        try:
            out = parse(text)
        except BmcUnreadable as e:
            assert "line " in str(e) and "\n" not in str(e)
            continue
        values = [s.reading for s in out] if isinstance(out, list) else [v for d in out.values() for v in d.values()]
        assert all(v is None or finite(v) for v in values)


# ---------------------------------------------------------------------- the kernel log


JOURNAL = json.dumps({"__CURSOR": "s=1;i=2", "PRIORITY": "3", "__MONOTONIC_TIMESTAMP": "123456",
                      "MESSAGE": "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus."})


@FUZZ
@given(st.lists(st.one_of(hostile_json(JOURNAL), st.text(max_size=40), json_value.map(json.dumps)), max_size=4))
def test_journal_lines_are_records_never_an_exception(lines):
    records = parse_journal_json("\n".join(lines))
    for r in records:
        assert isinstance(r, KernelRecord) and 0 <= r.level <= 7 and isinstance(r.text, str) and r.usec >= 0


@FUZZ
@given(st.one_of(mutated("6,1234,5678901,-;NVRM: Xid (PCI:0000:18:00): 79\n SUBSYSTEM=pci"),
                 st.binary(max_size=80)))
def test_kmsg_records_parse_or_are_skipped(record):
    r = parse_kmsg(record)
    assert r is None or (0 <= r.level <= 7 and isinstance(r.text, str))


# ---------------------------------------------------------------------- sysfs and lspci


AER = "RxErr 0\nBadTLP 2\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 1\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 3"
LSPCI = ("00:01.0 PCI bridge: Intel Corporation Device 09ab\n"
         "\tCapabilities: [220 v1] Access Control Services\n"
         "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
         "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n")


@FUZZ
@given(mutated(AER), mutated(LSPCI), st.binary(max_size=600))
def test_pcie_readers_never_raise(aer, lspci, config):
    assert all(isinstance(v, int) and 0 <= v < 2**64 for v in parse_aer(aer).values())
    assert all(isinstance(v, str) for v in acs_from_lspci(lspci).values())
    flags = acs_from_config(config)
    assert flags is NA or isinstance(flags, str)


@settings(FUZZ, max_examples=25)
@given(speed=hostile_token, rate=hostile_token, gts=hostile_token, width=hostile_token)
def test_sysfs_values_a_node_prints_read_as_numbers_or_not_available(tmp_path_factory, speed, rate, gts, width):
    from test_nic_backend import _ib, _netdev, _pci, _write

    root = tmp_path_factory.mktemp("sys")
    dev = _pci(root, "0000:0c:00.0", "mlx5_core", cur=(f"{gts} GT/s PCIe", "16"))
    _netdev(root, dev, "ib0", type="32", speed="200000", operstate="up", carrier="1")
    _ib(root, dev, "mlx5_0", rate=f"{rate} Gb/sec (4X HDR)")
    for rel, text in (("sys/class/net/ib0/speed", speed), (f"{dev}/current_link_width", width)):
        try:
            _write(root, rel, text)
        except (ValueError, UnicodeEncodeError):  # a NUL in a file name's text: not a sysfs file
            pass
    (nic,) = LinuxNics(root).nics()
    assert nic.speed_mbps is NA or (isinstance(nic.speed_mbps, int) and 0 <= nic.speed_mbps < 2**64)
    assert nic.speed_mbps is NA or finite(nic.speed_mbps / 1000)  # the check divides it
    assert nic.pcie_width is NA or isinstance(nic.pcie_width, int)
    for p in nic.ib_ports:
        assert p.rate_gbit is NA or finite(p.rate_gbit)
