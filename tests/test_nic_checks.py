"""NIC and host-service verdicts as pure functions of readings and profile, at each threshold's
boundary; which NICs are checked; and the traffic plan (peers, ports, skips that say what to do)."""

from dataclasses import replace
from pathlib import Path

import pytest

from conftest import whole
from nodeqc.backends.base import GpuInfo, IbPort, NicInfo, TrafficJob, TrafficOutcome
from nodeqc.checks import nic as checks
from nodeqc.checks.nic import Checked
from nodeqc.core.model import Verdict
from nodeqc.core.na import NA
from nodeqc.spec.peers import Peer
from nodeqc.spec.profile import Profile

PASS, WARN, FAIL, SKIP = Verdict.PASS, Verdict.WARN, Verdict.FAIL, Verdict.SKIP


def profile(nic=None, host=None) -> Profile:
    data = {"warn_band": 0.05, "nic": {"streams": 4, "traffic_s": 10, "quick_traffic_s": 5, **(nic or {})},
            "host": host or {}}
    return Profile("t", Path("t.toml"), data)


def port(**kw) -> IbPort:
    base = dict(device="mlx5_0", port=1, state="ACTIVE", phys_state="LinkUp", rate_gbit=200.0,
                link_layer="InfiniBand", counters={"symbol_error": 0, "link_downed": 0, "link_error_recovery": 0})
    return IbPort(**{**base, **kw})


def nic(name="eth0", **kw) -> NicInfo:
    base = dict(kind="ethernet", driver="mlx5_core", mac="02:00:00:00:00:01", operstate="up", carrier=1,
                speed_mbps=10000, mtu=9000, bus_id="0000:0c:00.0", pcie_gen=4, pcie_width=16, pcie_max_gen=4,
                pcie_max_width=16, carrier_changes=1, addresses=["10.0.0.1"])
    return NicInfo(name=name, **{**base, **kw})


def checked(n=None, required=True) -> Checked:
    return Checked("nic0", n or nic(), required)


# ---------------------------------------------------------------------- link


@pytest.mark.parametrize("reading, expected", [
    (dict(), True),
    (dict(operstate="down", carrier=NA), False),  # set down by the admin: carrier cannot be read
    (dict(operstate="lowerlayerdown", carrier=0), False),  # the peer's end is down
    (dict(operstate="up", carrier=0), False),
    (dict(operstate="unknown", carrier=1), True),  # some drivers never report operstate
    (dict(operstate="unknown", carrier=0), False),
    (dict(operstate="dormant", carrier=1), False),
    (dict(ib_ports=[port(state="INIT")]), False),  # no subnet manager yet
    (dict(ib_ports=[port(state="DOWN"), port(port=2)]), True),
    (dict(operstate=NA, carrier=NA, ib_ports=[port()], interface=False), True),  # an HCA without IPoIB
    (dict(operstate=NA, carrier=NA, ib_ports=[port(state="DOWN")], interface=False), False),
    (dict(operstate=NA, carrier=1), True),  # no operstate: the carrier says
    (dict(operstate=NA, carrier=NA), False),  # neither, and no RDMA port: not up
])
def test_link_is_up(reading, expected):
    assert checks.link_is_up(nic(**reading)) is expected


@pytest.mark.parametrize("required, verdict", [(True, FAIL), (False, WARN)])
def test_a_down_link_fails_a_required_nic_and_warns_for_others(required, verdict):
    r = checks.link(checked(required=required), nic(operstate="down", carrier=NA, speed_mbps=NA), profile())
    assert (r.verdict, r.code) == (verdict, "NIC_LINK_DOWN")
    assert r.message.startswith("eth0 (mlx5_core, 0000:0c:00.0): link down (operstate down, carrier N/A)")
    assert ("does not require" in r.message) is (not required)


@pytest.mark.parametrize("limit, speed, verdict", [
    ({"fail": 100000, "warn": 100000}, 99999, FAIL),
    ({"fail": 100000, "warn": 100000}, 100000, PASS),  # exactly at the limit is on the good side
    (100000, 100000, WARN),  # a plain number warns within the 5% band above it
    (100000, 104999, WARN),
    (100000, 105000, PASS),
    (100000, NA, WARN),  # not reported: said, never a silent pass
])
def test_link_speed_boundaries(limit, speed, verdict):
    r = checks.link(checked(), nic(speed_mbps=speed), profile({"min_speed_mbit": limit}))
    assert r.verdict is verdict
    assert (r.code == "NIC_SPEED") is (verdict is not PASS)


def test_link_speed_without_a_limit_is_reported_not_judged():
    r = checks.link(checked(), nic(speed_mbps=25000), profile())
    assert r.verdict is PASS and r.values["speed"].value == 25000 and "up, 25000 Mb/s, MTU 9000" in r.message


@pytest.mark.parametrize("mtu, verdict", [(1500, FAIL), (8999, FAIL), (9000, PASS), (9216, PASS)])
def test_mtu_boundaries(mtu, verdict):
    r = checks.link(checked(), nic(mtu=mtu), profile({"min_mtu": {"fail": 9000, "warn": 9000}}))
    assert r.verdict is verdict and (r.code == "NIC_MTU") is (verdict is FAIL)


@pytest.mark.parametrize("rate, verdict", [(100.0, FAIL), (199.9, FAIL), (200.0, PASS), (400.0, PASS)])
def test_ib_rate_boundaries(rate, verdict):
    r = checks.link(checked(), nic(kind="infiniband", ib_ports=[port(rate_gbit=rate)]),
                    profile({"min_ib_rate_gbit": {"fail": 200, "warn": 200}}))
    assert r.verdict is verdict
    if verdict is FAIL:
        assert r.code == "IB_RATE" and f"port mlx5_0/1 rate {rate:g} Gb/s is below the limit 200 Gb/s" in r.message


def test_one_port_down_of_two_fails_naming_the_port():
    r = checks.link(checked(), nic(ib_ports=[port(), port(port=2, state="DOWN", phys_state="Polling")]), profile())
    assert (r.verdict, r.code) == (FAIL, "IB_PORT_DOWN") and "port mlx5_0/2 is DOWN/Polling" in r.message


def test_a_nic_that_vanished_fails():
    r = checks.link(checked(), None, profile())
    assert (r.verdict, r.code) == (FAIL, "NIC_LOST")


# ---------------------------------------------------------------------- PCIe


@pytest.mark.parametrize("readings, reading, nic_profile, verdict, code", [
    ([(4, 16), (4, 16)], {}, {}, PASS, None),
    ([(4, 8), (4, 8)], {}, {}, FAIL, "NIC_PCIE_WIDTH"),
    ([(3, 16)], {}, {}, FAIL, "NIC_PCIE_GEN"),
    ([(4, 8)], {}, {"pcie_width": 8}, PASS, None),  # the profile accepts x8 for this node
    ([(4, 16)], {}, {"pcie_gen": 5}, FAIL, "NIC_PCIE_GEN"),
    ([(NA, NA)], {"pcie_width": 8}, {}, FAIL, "NIC_PCIE_WIDTH"),  # nothing read under traffic: the end reading
    ([], {}, {}, PASS, None),
    ([], {"bus_id": NA}, {}, SKIP, None),  # a veth, a bridge
    ([], {"pcie_gen": NA, "pcie_width": NA}, {}, SKIP, None),  # virtio: no PCIe capability
])
def test_pcie_link(readings, reading, nic_profile, verdict, code):
    r = checks.pcie(checked(), readings, nic(**reading), profile(nic_profile))
    assert (r.verdict, r.code) == (verdict, code)


def test_pcie_says_whether_traffic_ran():
    assert "under traffic" in checks.pcie(checked(), [(4, 8)], nic(), profile()).message
    assert "with no traffic running" in checks.pcie(checked(), [], nic(pcie_width=8), profile()).message


# ---------------------------------------------------------------------- stability


def test_no_counter_growth_passes():
    n = nic(ib_ports=[port()])
    r = checks.stability(checked(n), n)
    assert r.verdict is PASS and r.values["growth"].value == 0


@pytest.mark.parametrize("before, after, code, text", [
    (nic(carrier_changes=1), nic(carrier_changes=3), "NIC_LINK_FLAP", "carrier_changes grew by 2 (1 -> 3)"),
    (nic(ib_ports=[port()]), nic(ib_ports=[port(counters={"symbol_error": 12, "link_downed": 0, "link_error_recovery": 0})]),
     "IB_LINK_ERRORS", "mlx5_0/1 symbol_error grew by 12 (0 -> 12)"),
    (nic(ib_ports=[port()]), nic(ib_ports=[port(counters={"symbol_error": 0, "link_downed": 1, "link_error_recovery": 0})]),
     "IB_LINK_ERRORS", "mlx5_0/1 link_downed grew by 1 (0 -> 1)"),
    (nic(ib_ports=[port()]), nic(ib_ports=[port(counters={"symbol_error": 0, "link_downed": 0, "link_error_recovery": 3})]),
     "IB_LINK_ERRORS", "mlx5_0/1 link_error_recovery grew by 3 (0 -> 3)"),
    (nic(carrier_changes=5), nic(carrier_changes=0), "NIC_LINK_FLAP", "went from 5 to 0: reset during the run"),
])
def test_counter_growth_fails_naming_the_counter_and_the_amount(before, after, code, text):
    r = checks.stability(checked(before), after)
    assert (r.verdict, r.code) == (FAIL, code) and text in r.message


def test_stability_without_counters_is_skipped():
    assert checks.stability(checked(nic(carrier_changes=NA)), nic(carrier_changes=NA)).verdict is SKIP
    assert checks.stability(checked(), None).verdict is SKIP


# ---------------------------------------------------------------------- throughput


def tcp_outcome(gbps, error=None):
    return TrafficOutcome(TrafficJob("eth0", "iperf3", "10.0.0.2", 5201, 5, 4), gbps, error, {"command": "iperf3 ..."})


FRACTION = {"min_tcp_fraction": {"fail": 0.5, "warn": 0.7}}


@pytest.mark.parametrize("seconds, verdict", [(4.49, FAIL), (4.5, PASS), (5.04, PASS)])
def test_a_tcp_test_cut_short_is_no_measurement_of_the_link(seconds, verdict):
    """iperf3 counts the receiver's seconds: a 5 s test that received for 0.3 s (a peer that ended it)
    passed on the rate of what arrived first."""
    outcome = tcp_outcome(9.4)
    outcome.detail["seconds"] = seconds
    r = checks.tcp(checked(), outcome, nic(speed_mbps=10000), profile(FRACTION))
    assert r.verdict is verdict
    if verdict is FAIL:
        assert r.code == "NIC_TRAFFIC" and r.message.endswith(
            f"iperf3 to 10.0.0.2:5201 received for {seconds:g} s of the planned 5 s: cut short, so its 9.4 Gb/s is no "
            "measurement")


@pytest.mark.parametrize("gbps, verdict", [(4.999, FAIL), (5.0, WARN), (6.999, WARN), (7.0, PASS), (10.5, PASS)])
def test_tcp_fraction_of_link_speed_boundaries(gbps, verdict):
    r = checks.tcp(checked(), tcp_outcome(gbps), nic(speed_mbps=10000), profile(FRACTION))
    assert r.verdict is verdict and r.values["fraction"].value == pytest.approx(gbps / 10, abs=1e-3)
    assert (r.code == "NIC_THROUGHPUT") is (verdict is not PASS)
    assert r.message.startswith("eth0 (mlx5_core, 0000:0c:00.0): TCP to 10.0.0.2:5201 (4 streams): ")
    assert r.message.endswith(f"; {gbps / 10:.0%} of the 10 Gb/s link")
    if verdict is FAIL:
        assert "is below the limit 5 Gb/s" in r.message


def test_tcp_tool_error_fails_with_the_error():
    r = checks.tcp(checked(), tcp_outcome(NA, "iperf3: unable to connect to server: Connection refused"), nic(), profile(FRACTION))
    assert (r.verdict, r.code) == (FAIL, "NIC_TRAFFIC") and "Connection refused" in r.message


def test_tcp_without_a_link_speed_reports_the_figure_but_does_not_judge():
    r = checks.tcp(checked(nic(speed_mbps=NA)), tcp_outcome(9.4), nic(speed_mbps=NA), profile(FRACTION))
    assert r.verdict is SKIP and r.values["throughput"].value == 9.4 and "not judged" in r.message


@pytest.mark.parametrize("gbps, speed, verdict", [
    (10.5, 10000, PASS),  # the link's rate and its 5% allowance: still possible
    (10.51, 10000, FAIL), (94.0, 10000, FAIL),  # 94 Gb/s on a 10 Gb/s link passed as "940% of the link"
    (1e300, 10000, FAIL), (1e300, NA, FAIL),  # a link whose rate is not reported still carries no more than any port
])
def test_tcp_above_what_the_link_can_carry_is_a_suspect_measurement(gbps, speed, verdict):
    r = checks.tcp(checked(nic(speed_mbps=speed)), tcp_outcome(gbps), nic(speed_mbps=speed), profile(FRACTION))
    assert r.verdict is verdict
    if verdict is FAIL:
        assert r.code == "FIGURE_IMPOSSIBLE" and "the measurement is suspect" in r.message
        assert r.thresholds[0].kind == "max" and r.thresholds[0].fail == (10.5 if speed == 10000 else 1680.0)


def test_a_virtual_interfaces_speed_caps_nothing():
    """A veth reports 10 Gb/s and carried 14.1 Gb/s in CI's namespace test: not a suspect figure.
    Only the fastest port's rate bounds a virtual interface."""
    veth = nic(speed_mbps=10000, virtual=True)
    r = checks.tcp(checked(veth), tcp_outcome(14.1), veth, profile(FRACTION))
    assert r.verdict is PASS, r.message
    r = checks.tcp(checked(veth), tcp_outcome(1e300), veth, profile(FRACTION))
    assert (r.verdict, r.code) == (FAIL, "FIGURE_IMPOSSIBLE") and r.thresholds[0].fail == 1680.0


def test_rdma_above_the_port_rate_is_a_suspect_measurement_and_the_other_ports_are_still_judged():
    two = nic(ib_ports=[port(), port(port=2)])
    r = checks.rdma(checked(), [rdma_outcome(9e9), rdma_outcome(90.0, 2)], two, profile({"min_rdma_fraction": 0.9}))
    assert (r.verdict, r.code) == (FAIL, "FIGURE_IMPOSSIBLE")
    assert "RDMA mlx5_0/1 9000000000 Gb/s is more than the 200 Gb/s link can carry" in r.message
    assert "mlx5_0/2 to peer:18515, GPU memory of gpu3: 90 Gb/s is below the limit 180 Gb/s" in r.message


def test_unreadable_tool_output_is_the_checks_error_not_a_traffic_failure():
    o = TrafficOutcome(TrafficJob("eth0", "iperf3", "10.0.0.2", 5201, 5, 4), NA,
                       "iperf3's end.sum_received.bits_per_second is the string '9e9', not a number",
                       {"output_tail": ["{...}"]}, unreadable=True)
    r = checks.tcp(checked(), o, nic(), profile(FRACTION))
    assert (r.verdict, r.code) == (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE")
    assert "bits_per_second is the string '9e9'" in r.message and r.evidence["output_tail"] == ["{...}"]
    r = checks.rdma(checked(), [TrafficOutcome(rdma_outcome(NA).job, NA, "bad table", {}, unreadable=True),
                                rdma_outcome(196.0, 2)], nic(ib_ports=[port(), port(port=2)]),
                    profile({"min_rdma_fraction": 0.9}))
    assert (r.verdict, r.code) == (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE") and r.values["mlx5_0/2"].value == 196.0


def rdma_outcome(gbps, port_n=1, error=None):
    job = TrafficJob("ib0", "ib_write_bw", "peer", 18515, 5, ib_device="mlx5_0", ib_port=port_n, cuda_device=3)
    return TrafficOutcome(job, gbps, error, {})


@pytest.mark.parametrize("gbps, verdict", [(179.9, FAIL), (180.0, WARN), (189.9, WARN), (190.0, PASS), (196.0, PASS)])
def test_rdma_fraction_of_port_rate_boundaries(gbps, verdict):
    limit = {"min_rdma_fraction": {"fail": 0.9, "warn": 0.95}}
    r = checks.rdma(checked(), [rdma_outcome(gbps)], nic(ib_ports=[port()]), profile(limit))
    assert r.verdict is verdict
    assert "RDMA mlx5_0/1 to peer:18515, GPU memory of gpu3: " in r.message and "of the 200 Gb/s port" in r.message


def test_rdma_judges_every_port():
    two = nic(ib_ports=[port(), port(port=2)])
    r = checks.rdma(checked(), [rdma_outcome(196.0), rdma_outcome(90.0, 2)], two, profile({"min_rdma_fraction": 0.9}))
    assert (r.verdict, r.code) == (FAIL, "RDMA_BANDWIDTH")
    assert "RDMA mlx5_0/2 to peer:18515, GPU memory of gpu3: 90 Gb/s is below the limit 180 Gb/s" in r.message


# ---------------------------------------------------------------------- which NICs, and their count


NICS = [nic("eno1", driver="igb", bus_id="0000:03:00.0"), nic("ib0", driver="mlx5_core", bus_id="0000:0c:00.0"),
        nic("ib1", driver="mlx5_core", bus_id="0000:12:00.0"), nic("nqv0", driver=NA, bus_id=NA, virtual=True)]


@pytest.mark.parametrize("nic_profile, named, listed, checked_, required", [
    ({}, set(), ["eno1", "ib0", "ib1"], ["eno1", "ib0", "ib1"], False),  # no selection: every physical NIC
    ({"match": ["ib*"]}, set(), ["eno1", "ib0", "ib1"], ["ib0", "ib1"], True),
    ({"drivers": ["mlx5_core"]}, set(), ["eno1", "ib0", "ib1"], ["ib0", "ib1"], True),
    ({"match": ["ib0", "eno*"], "drivers": ["mlx5_core"]}, set(), ["eno1", "ib0", "ib1"], ["ib0"], True),  # both must match
    ({"match": ["nqv*"]}, set(), ["eno1", "ib0", "ib1", "nqv0"], ["nqv0"], True),  # a virtual NIC only when asked for
    ({}, {"nqv0"}, ["eno1", "ib0", "ib1", "nqv0"], ["eno1", "ib0", "ib1", "nqv0"], False),
])
def test_select(nic_profile, named, listed, checked_, required):
    plan = checks.select(NICS, profile(nic_profile), named)
    assert [n.name for _, n in plan.listed] == listed
    assert [s for s, _ in plan.listed] == [f"nic{i}" for i in range(len(listed))]  # nicN: position in the list
    assert [c.nic.name for c in plan.checked] == checked_
    assert all(c.required is (required or c.nic.name in named) for c in plan.checked)
    assert all(c.subject == f"nic{listed.index(c.nic.name)}" for c in plan.checked)


@pytest.mark.parametrize("count, found, verdict", [(2, 2, PASS), (2, 1, FAIL), (2, 3, FAIL), (None, 0, WARN), (None, 2, PASS)])
def test_nic_count(count, found, verdict):
    nics = [nic(f"ib{i}", bus_id=f"0000:{i + 1:02x}:00.0") for i in range(found)]
    p = profile({"match": ["ib*"], **({"count": count} if count is not None else {})})
    r = checks.inventory(checks.select(nics + [nic("eno1", bus_id="0000:f0:00.0")], p), p)
    assert r.verdict is verdict and r.values["count"].value == found
    if verdict is FAIL:
        assert r.code == "NIC_COUNT" and f"{found} NIC" in r.message and "expected 2" in r.message
    assert len(r.evidence["nics"]) == found + 1  # every NIC listed is in the evidence


# ---------------------------------------------------------------------- traffic plan


def plan_for(nics, peers, nic_profile=None, missing=(), gpus=(), total_s=None):
    p = profile(nic_profile)
    hints = {"iperf3": "iperf3 is not installed: install it", "ib_write_bw": "ib_write_bw is not installed: install perftest"}
    return checks.plan_traffic(checks.select(nics, p), peers, p, 5, lambda t: hints[t] if t in missing else None,
                               list(gpus), total_s)


def jobs_of(plan):
    return [(plan.subjects[j], j.tool, j.peer, j.port) for j in plan.jobs]


THREE = [nic("eth0", bus_id="0000:01:00.0"), nic("eth1", bus_id="0000:02:00.0"),
         nic("ib0", kind="infiniband", bus_id="0000:0c:00.0", ib_ports=[port()])]


def test_each_nic_gets_its_own_port_on_a_shared_peer():
    plan = plan_for(THREE, [Peer("p")])
    assert [[j.tool for j in r] for r in plan.rounds] == [["iperf3"] * 3, ["ib_write_bw"]]  # TCP first, then RDMA
    assert jobs_of(plan) == [("nic0", "iperf3", "p", 5201), ("nic1", "iperf3", "p", 5202), ("nic2", "iperf3", "p", 5203),
                             ("nic2", "ib_write_bw", "p", 18515)]
    assert plan.jobs[0].bind == "10.0.0.1" and plan.jobs[0].streams == 4 and plan.jobs[0].seconds == 5
    assert not plan.skips


def test_peers_alternate_and_a_nic_may_have_its_own():
    plan = plan_for(THREE, [Peer("a"), Peer("b"), Peer("c", 6000, nic="eth1")])
    assert jobs_of(plan)[:3] == [("nic0", "iperf3", "a", 5201), ("nic1", "iperf3", "c", 6000), ("nic2", "iperf3", "a", 5202)]


@pytest.mark.parametrize("missing, peers, reading, check, code, text", [
    (("iperf3",), [Peer("p")], {}, "nic.tcp", "IPERF3_MISSING", "iperf3 is not installed: install it"),
    (("ib_write_bw",), [Peer("p")], {}, "nic.rdma", "PERFTEST_MISSING", "install perftest"),
    ((), [], {}, "nic.tcp", "NIC_NO_PEER", "no peer: pass --nic-peer HOST (a host running `iperf3 -s -p PORT`"),
    (("ib_write_bw",), [], {}, "nic.rdma", "PERFTEST_MISSING", "install perftest"),  # loopback needs it too
    ((), [Peer("p")], {"operstate": "down", "carrier": NA}, "nic.tcp", "NIC_LINK_DOWN", "the link is down"),
    ((), [Peer("p")], {"ib_ports": [port(state="DOWN")]}, "nic.rdma", "NIC_LINK_DOWN", "the link is down"),
    ((), [Peer("p")], {"addresses": []}, "nic.tcp", "NIC_NO_ADDRESS", "no IP address to send from"),
    ((), [Peer("p")], {"interface": False, "operstate": NA, "carrier": NA}, "nic.tcp", None, "load ib_ipoib"),
])
def test_what_cannot_run_is_skipped_saying_what_to_do(missing, peers, reading, check, code, text):
    one = nic("ib0", kind="infiniband", ib_ports=[port()])
    plan = plan_for([replace(one, **reading)], peers, missing=missing)
    skipped = {r.name: r for r in plan.skips}
    assert skipped[check].verdict is SKIP and skipped[check].code == code and text in skipped[check].message
    assert not any(j.tool == ("iperf3" if check == "nic.tcp" else "ib_write_bw") for j in plan.jobs)
    assert f"{check} skipped on nic0: " in "\n".join(checks.skip_warnings(plan))


def test_without_a_peer_rdma_runs_in_loopback_on_each_active_port():
    # Issue 15: an RDMA NIC without a peer is still measured: ib_write_bw server and client on the
    # same HCA port; TCP, which needs a peer, is skipped saying so.
    hca = nic("ib0", kind="infiniband", ib_ports=[port(), replace(port(), port=2, state="DOWN")])
    plan = plan_for([hca], [])
    rdma = [j for j in plan.jobs if j.tool == "ib_write_bw"]
    assert [(j.ib_port, j.loopback, j.peer_text) for j in rdma] == [(1, True, "loopback")]
    assert [(r.name, r.code) for r in plan.skips] == [("nic.tcp", "NIC_NO_PEER")]
    outcome = TrafficOutcome(rdma[0], 190.0, None, {})
    got = {(r.name, r.subject): r for r in checks.nic_results(plan, [outcome], {}, [hca], profile({"min_rdma_fraction": 0.9}))}
    r = got[("nic.rdma", "nic0")]
    assert r.verdict is PASS and "in loopback (server and client on this HCA port)" in r.message
    slow = TrafficOutcome(rdma[0], 150.0, None, {})
    got = {(r.name, r.subject): r for r in checks.nic_results(plan, [slow], {}, [hca], profile({"min_rdma_fraction": 0.9}))}
    assert got[("nic.rdma", "nic0")].code == "RDMA_BANDWIDTH"


def test_loopback_commands_pin_the_server_and_client_to_the_hcas_numa_node(tmp_path):
    from nodeqc.backends import nic as backend

    job = replace(plan_for([nic("ib0", kind="infiniband", ib_ports=[port()])], []).jobs[0], cuda_device=3)
    client, server = backend.command(job), backend.loopback_server(job)
    assert client[:-1] == server and "--use_cuda=3" in server and client[-1] != "localhost"
    (tmp_path / "sys/class/infiniband/mlx5_0/device").mkdir(parents=True)
    (tmp_path / "sys/class/infiniband/mlx5_0/device/numa_node").write_text("1\n")
    (tmp_path / "sys/devices/system/node/node1").mkdir(parents=True)
    (tmp_path / "sys/devices/system/node/node1/cpulist").write_text("24-26,48\n")
    assert backend.numa_node("mlx5_0", tmp_path) == 1
    prefix = backend.pin_prefix("mlx5_0", tmp_path)
    assert prefix in (["numactl", "--cpunodebind=1", "--membind=1"], ["taskset", "-c", "24-26,48"])
    (tmp_path / "sys/class/infiniband/mlx5_0/device/numa_node").write_text("-1\n")
    assert backend.numa_node("mlx5_0", tmp_path) is None and backend.pin_prefix("mlx5_0", tmp_path) == []


def test_skip_warnings_name_every_nic_once_per_reason():
    plan = plan_for(THREE, [])
    assert checks.skip_warnings(plan)[0].startswith("nic.tcp skipped on nic0-2: TCP not measured: no peer")


def test_burn_in_rounds_share_the_burn():
    plan = plan_for(THREE, [Peer("p")], total_s=600)
    assert {j.seconds for j in plan.rounds[0]} == {300} and {j.seconds for j in plan.rounds[1]} == {300}


def test_gpudirect_uses_the_gpu_nearest_the_nic_and_needs_a_gpu():
    gpus = [GpuInfo(i, "A100", f"GPU-{i}", f"00000000:{b}:00.0") for i, b in enumerate(("07", "0F", "47"))]
    plan = plan_for(THREE, [Peer("p")], {"rdma_use_cuda": True}, gpus=gpus)
    assert [j.cuda_device for j in plan.jobs if j.tool == "ib_write_bw"] == [1]  # bus 0x0c: nearest 0x0f
    none = plan_for(THREE, [Peer("p")], {"rdma_use_cuda": True})
    assert [r.code for r in none.skips] == ["NO_GPUS"]
    # A GPU NVML gave no PCI address (NA) or a malformed one is passed over, never an AttributeError
    # (2026-11-29 fuzzing); with none placed, the first GPU.
    from nodeqc.core.na import NA

    odd = [GpuInfo(0, "A100", "GPU-0", NA), GpuInfo(1, "A100", "GPU-1", "zz:0c:00.0"), *gpus[1:]]
    assert [j.cuda_device for j in plan_for(THREE, [Peer("p")], {"rdma_use_cuda": True}, gpus=odd).jobs
            if j.tool == "ib_write_bw"] == [1]
    assert [j.cuda_device for j in plan_for(THREE, [Peer("p")], {"rdma_use_cuda": True}, gpus=odd[:2]).jobs
            if j.tool == "ib_write_bw"] == [0]


def test_roce_ports_connect_through_rdma_cm():
    roce = nic("ens1f0", ib_ports=[port(link_layer="Ethernet")])
    assert [j.roce for j in plan_for([roce], [Peer("p")]).jobs if j.tool == "ib_write_bw"] == [True]


def test_results_cover_every_checked_nic_and_say_when_traffic_did_not_run():
    plan = plan_for(THREE, [Peer("p")], {"min_tcp_fraction": 0.5})
    tcp0 = plan.rounds[0][0]
    results = checks.nic_results(plan, [TrafficOutcome(tcp0, 9.0, None, {})], {}, THREE, profile({"min_tcp_fraction": 0.5}))
    got = {(r.name, r.subject): r for r in results}
    assert got[("nic.tcp", "nic0")].verdict is PASS
    assert got[("nic.tcp", "nic1")].verdict is SKIP and "did not run" in got[("nic.tcp", "nic1")].message
    assert {n for n, _ in got} == {"nic.inventory", "nic.link", "nic.pcie", "nic.stability", "nic.tcp", "nic.rdma"}


# ---------------------------------------------------------------------- whole results, field by field (issue 18)

LINK_PROFILE = {"min_speed_mbit": {"fail": 10000, "warn": 25000}, "min_mtu": 4096, "min_ib_rate_gbit": {"fail": 200, "warn": 200}}
LINK_LIMITS = [("min_speed_mbit", "min", 10000, 25000, "Mb/s"), ("min_mtu", "min", 4096, 4096 * 1.05, ""),
               ("min_ib_rate_gbit", "min", 200, 200, "Gb/s")]
IB0 = "ib0 (mlx5_core, 0000:0c:00.0)"
ETH0 = "eth0 (mlx5_core, 0000:0c:00.0)"
LINK_VALUES = {"state": ("up", ""), "mtu": (9000, ""), "mac": ("02:00:00:00:00:01", "")}


def test_whole_results_link():
    ib = nic("ib0", ib_ports=[port(), port(port=2, rate_gbit=100.0)])
    assert whole(checks.link(checked(ib), ib, profile(LINK_PROFILE))) == (
        "nic.link", "nic0", "fail", "IB_RATE",
        f"{IB0}: port mlx5_0/2 rate 100 Gb/s is below the limit 200 Gb/s; speed 10000 Mb/s is below the warning level 25000 Mb/s",
        {"state": ("up", ""), "speed": (10000, "Mb/s"), "mtu": (9000, ""), "mac": ("02:00:00:00:00:01", ""),
         "ib_ports": ("mlx5_0/1 ACTIVE/LinkUp 200 Gb/s, mlx5_0/2 ACTIVE/LinkUp 100 Gb/s", "")}, "speed", LINK_LIMITS, {})
    ok = nic("ib0", ib_ports=[port()], speed_mbps=200000)
    assert whole(checks.link(checked(ok), ok, profile(LINK_PROFILE))) == (
        "nic.link", "nic0", "pass", None, f"{IB0}: up, 200000 Mb/s, MTU 9000; mlx5_0/1 ACTIVE/LinkUp 200 Gb/s",
        {"state": ("up", ""), "speed": (200000, "Mb/s"), "mtu": (9000, ""), "mac": ("02:00:00:00:00:01", ""),
         "ib_ports": ("mlx5_0/1 ACTIVE/LinkUp 200 Gb/s", "")}, "speed", LINK_LIMITS, {})
    down = nic("ib0", operstate="down", carrier=0, ib_ports=[port(state="DOWN", phys_state="Disabled")])
    assert whole(checks.link(checked(down, required=False), down, profile(LINK_PROFILE))) == (
        "nic.link", "nic0", "warn", "NIC_LINK_DOWN",
        f"{IB0}: link down (operstate down, carrier 0; mlx5_0/1 DOWN/Disabled 200 Gb/s) (the profile does not require this NIC)",
        {"state": ("down", ""), "speed": (10000, "Mb/s"), "mtu": (9000, ""), "mac": ("02:00:00:00:00:01", ""),
         "ib_ports": ("mlx5_0/1 DOWN/Disabled 200 Gb/s", "")}, "state", [], {})
    r = checks.link(checked(down, required=True), down, profile(LINK_PROFILE))
    assert (r.verdict, r.message) == (FAIL, f"{IB0}: link down (operstate down, carrier 0; mlx5_0/1 DOWN/Disabled 200 Gb/s)")
    assert whole(checks.link(checked(), None, profile(LINK_PROFILE))) == (
        "nic.link", "nic0", "fail", "NIC_LOST", f"{ETH0}: the NIC disappeared during the run", {}, None, [], {})
    # An Ethernet NIC has no RDMA ports: none shown, no port value.
    r = checks.link(checked(), nic(speed_mbps=100000), profile(LINK_PROFILE))
    assert (r.verdict, r.message, "ib_ports" in r.values) == (PASS, f"{ETH0}: up, 100000 Mb/s, MTU 9000", False)
    # A port INIT but the link up on another: the down port fails a required NIC, warns for another.
    half = nic("ib0", ib_ports=[port(), port(port=2, state="INIT")], speed_mbps=200000)
    for required, verdict in ((True, FAIL), (False, WARN)):
        r = checks.link(checked(half, required=required), half, profile(LINK_PROFILE))
        assert (r.verdict, r.code, r.message) == (verdict, "IB_PORT_DOWN",
                                                  f"{IB0}: port mlx5_0/2 is INIT/LinkUp, not ACTIVE/LinkUp")
    polling = nic("ib0", ib_ports=[port(phys_state="Polling")], speed_mbps=200000)
    assert checks.link(checked(polling), polling, profile(LINK_PROFILE)).code == "IB_PORT_DOWN"


def test_a_low_mtu_is_said_without_a_unit():
    r = checks.link(checked(), nic(mtu=1500, speed_mbps=100000), profile(LINK_PROFILE))
    assert (r.verdict, r.code, r.message) == (FAIL, "NIC_MTU", f"{ETH0}: MTU 1500 is below the limit 4096")


def test_link_readings_not_reported_are_said_against_their_limit():
    r = checks.link(checked(), nic(mtu=NA, speed_mbps=100000), profile(LINK_PROFILE))
    assert (r.verdict, r.code, r.message) == (
        WARN, "NIC_MTU", f"{ETH0}: MTU not reported by the driver, so not judged against >= 4096, warn below 4300.8")
    # No limit in the profile: a missing reading is not a finding.
    assert checks.link(checked(), nic(mtu=NA, speed_mbps=NA), profile()).verdict is PASS


def test_whole_results_pcie():
    assert whole(checks.pcie(checked(), [(4, 8), (4, 16), (NA, 16)], nic(), profile())) == (
        "nic.pcie", "nic0", "pass", None, f"{ETH0}: PCIe Gen4 x16 under traffic",
        {"link": ("Gen4 x16", ""), "gen": (4, ""), "width": (16, ""), "max_gen": (4, ""), "max_width": (16, ""),
         "min_width_seen": (8, ""), "readings": (2, "")}, "link", [("pcie_width", "min", 16, 16, ""), ("pcie_gen", "min", 4, 4, "")],
        {})
    assert whole(checks.pcie(checked(), [], nic(pcie_gen=3, pcie_width=16), profile({"pcie_gen": 4}))) == (
        "nic.pcie", "nic0", "fail", "NIC_PCIE_GEN",
        f"{ETH0}: PCIe link at Gen3 x16 with no traffic running; expected generation Gen4",
        {"link": ("Gen3 x16", ""), "gen": (3, ""), "width": (16, ""), "max_gen": (4, ""), "max_width": (16, ""),
         "min_width_seen": (16, ""), "readings": (1, "")}, "link", [("pcie_width", "min", 16, 16, ""), ("pcie_gen", "min", 4, 4, "")],
        {})
    r = checks.pcie(checked(), [(5, 8)], nic(pcie_max_gen=5, pcie_max_width=16), profile({"pcie_width": 16}))
    assert (r.code, r.message) == ("NIC_PCIE_WIDTH", f"{ETH0}: PCIe link at Gen5 x8 under traffic; expected width x16")
    # The profile's width over the NIC's maximum; no maximum known and no profile value: not judged.
    r = checks.pcie(checked(), [(4, 8)], nic(pcie_max_width=16), profile({"pcie_width": 8}))
    assert r.verdict is PASS
    r = checks.pcie(checked(), [(3, 2)], nic(pcie_max_gen=NA, pcie_max_width=NA), profile())
    assert (r.verdict, r.thresholds) == (PASS, [])
    r = checks.pcie(checked(), [(3, 2)], nic(pcie_max_gen=4, pcie_max_width=NA), profile())
    assert (r.code, [t.name for t in r.thresholds]) == ("NIC_PCIE_GEN", ["pcie_gen"])  # no width known: the generation still
    assert whole(checks.pcie(checked(), [], nic(pcie_gen=NA), profile())) == (
        "nic.pcie", "nic0", "skip", None, f"{ETH0}: the PCIe link is not reported (no PCIe capability)", {}, None, [], {})
    assert checks.pcie(checked(), [], nic(pcie_width=NA), profile()).verdict is SKIP
    assert whole(checks.pcie(checked(), [], nic(bus_id=NA, driver=NA), profile())) == (
        "nic.pcie", "nic0", "skip", None, "eth0: not a PCI device", {}, None, [], {})
    # The NIC as read at the end is judged, not as it was at the start.
    r = checks.pcie(checked(), [], nic(pcie_gen=3), profile())
    r_end = checks.pcie(checked(nic(pcie_gen=3)), [], nic(pcie_gen=4), profile())
    assert (r.verdict, r_end.verdict) == (FAIL, PASS)


def test_whole_results_stability():
    start = nic("ib0", carrier_changes=1, ib_ports=[port()])
    end = nic("ib0", carrier_changes=3, ib_ports=[port(counters={"symbol_error": 5, "link_downed": 0, "link_error_recovery": 0}),
                                                  port(port=2)])
    assert whole(checks.stability(checked(start), end)) == (
        "nic.stability", "nic0", "fail", "NIC_LINK_FLAP",
        f"{IB0}: carrier_changes grew by 2 (1 -> 3); mlx5_0/1 symbol_error grew by 5 (0 -> 5)",
        {"carrier_changes": (2, ""), "mlx5_0/1:symbol_error": (5, ""), "mlx5_0/1:link_downed": (0, ""),
         "mlx5_0/1:link_error_recovery": (0, ""), "growth": (7, "")}, "growth", [("max_link_counter_growth", "max", 0, 0, "")], {})
    assert whole(checks.stability(checked(start), start)) == (
        "nic.stability", "nic0", "pass", None,
        f"{IB0}: no growth in carrier_changes, mlx5_0/1:symbol_error, mlx5_0/1:link_downed, mlx5_0/1:link_error_recovery",
        {"carrier_changes": (0, ""), "mlx5_0/1:symbol_error": (0, ""), "mlx5_0/1:link_downed": (0, ""),
         "mlx5_0/1:link_error_recovery": (0, ""), "growth": (0, "")}, "growth", [("max_link_counter_growth", "max", 0, 0, "")], {})
    assert whole(checks.stability(checked(nic(carrier_changes=5)), nic(carrier_changes=2))) == (
        "nic.stability", "nic0", "fail", "NIC_LINK_FLAP", f"{ETH0}: carrier_changes went from 5 to 2: reset during the run",
        {"carrier_changes": (-3, ""), "growth": (3, "")}, "growth", [("max_link_counter_growth", "max", 0, 0, "")], {})
    assert whole(checks.stability(checked(nic(carrier_changes=NA)), nic(carrier_changes=NA))) == (
        "nic.stability", "nic0", "skip", None, f"{ETH0}: no link counters to compare", {}, None, [], {})
    assert whole(checks.stability(checked(), None)) == (
        "nic.stability", "nic0", "skip", None, f"{ETH0}: the NIC disappeared during the run (see nic.link)", {}, None, [], {})
    r = checks.stability(checked(start), nic("ib0", carrier_changes=1, ib_ports=[port(counters={"link_downed": 2})]))
    assert (r.code, r.message) == ("IB_LINK_ERRORS", f"{IB0}: mlx5_0/1 link_downed grew by 2 (0 -> 2)")
    # A counter not read at the start (carrier changes here) does not stop the others' comparison.
    r = checks.stability(checked(nic("ib0", carrier_changes=NA, ib_ports=[port()])), end)
    assert (r.code, sorted(r.values)) == ("IB_LINK_ERRORS", ["growth", "mlx5_0/1:link_downed", "mlx5_0/1:link_error_recovery",
                                                             "mlx5_0/1:symbol_error"])


def test_whole_results_tcp():
    assert whole(checks.tcp(checked(), tcp_outcome(6.12345), nic(speed_mbps=10000), profile(FRACTION))) == (
        "nic.tcp", "nic0", "warn", "NIC_THROUGHPUT",
        f"{ETH0}: TCP to 10.0.0.2:5201 (4 streams): 6.12 Gb/s is below the warning level 7 Gb/s; 61% of the 10 Gb/s link",
        {"throughput": (6.123, "Gb/s"), "peer": ("10.0.0.2:5201", ""), "streams": (4, ""), "link": (10, "Gb/s"),
         "fraction": (0.612, "")}, "throughput", [("min_tcp_fraction x 10 Gb/s", "min", 5, 7, "Gb/s")], {"command": "iperf3 ..."})
    assert whole(checks.tcp(checked(), tcp_outcome(NA, "refused"), nic(), profile(FRACTION))) == (
        "nic.tcp", "nic0", "fail", "NIC_TRAFFIC", f"{ETH0}: iperf3 to 10.0.0.2:5201 failed: refused", {}, None, [],
        {"command": "iperf3 ..."})
    assert whole(checks.tcp(checked(nic(speed_mbps=0)), tcp_outcome(9.4), nic(speed_mbps=0), profile(FRACTION))) == (
        "nic.tcp", "nic0", "skip", None, f"{ETH0}: 9.4 Gb/s to 10.0.0.2:5201; link speed not reported, so not judged",
        {"throughput": (9.4, "Gb/s"), "peer": ("10.0.0.2:5201", ""), "streams": (4, "")}, None, [], {})
    # The speed at the start stands in when the end reading has none.
    r = checks.tcp(checked(nic(speed_mbps=10000)), tcp_outcome(9.0), nic(speed_mbps=NA), profile(FRACTION))
    assert (r.verdict, r.values["link"].value) == (PASS, 10)
    r = checks.tcp(checked(nic(speed_mbps=100000)), tcp_outcome(9.0), None, profile(FRACTION))
    assert (r.verdict, r.values["link"].value) == (FAIL, 100)
    r = checks.tcp(checked(nic(speed_mbps=10000)), tcp_outcome(9.0), nic(speed_mbps=100000), profile(FRACTION))
    assert (r.verdict, r.values["link"].value) == (FAIL, 100)  # the speed at the end judges


def test_whole_results_rdma():
    two = nic("ib0", ib_ports=[port(), port(port=2, rate_gbit=NA)])
    loopback = TrafficOutcome(TrafficJob("ib0", "ib_write_bw", "localhost", 18515, 5, ib_device="mlx5_0", ib_port=1,
                                         loopback=True), 185.55555, None, {"c": 1})
    outcomes = [loopback, rdma_outcome(90.0, 2), rdma_outcome(NA, 3, "failed to connect")]
    assert whole(checks.rdma(checked(), outcomes, two, profile({"min_rdma_fraction": {"fail": 0.9, "warn": 0.95}}))) == (
        "nic.rdma", "nic0", "fail", "NIC_TRAFFIC",
        f"{IB0}: ib_write_bw to peer:18515 failed: failed to connect; RDMA mlx5_0/1 in loopback (server and client on this "
        "HCA port): 185.6 Gb/s is below the warning level 190 Gb/s; 93% of the 200 Gb/s port; mlx5_0/2 90 Gb/s; port rate "
        "not reported, so not judged",
        {"mlx5_0/1": (185.556, "Gb/s"), "bandwidth": (185.556, "Gb/s"), "mlx5_0/2": (90, "Gb/s")}, "bandwidth",
        [("min_rdma_fraction x 200 Gb/s", "min", 180, 190, "Gb/s")], {"mlx5_0/1": {"c": 1}, "mlx5_0/2": {}, "mlx5_0/3": {}})
    # A port whose rate reads 0 is not judged either; without a GPU, no GPU memory is named.
    job = TrafficJob("ib0", "ib_write_bw", "peer", 18515, 5, ib_device="mlx5_0", ib_port=1)
    r = checks.rdma(checked(), [TrafficOutcome(job, 196.0)], nic("ib0", ib_ports=[port(rate_gbit=0)]), profile({"min_rdma_fraction": 0.9}))
    assert (r.verdict, r.code, r.message) == (WARN, "RDMA_BANDWIDTH", f"{IB0}: mlx5_0/1 196 Gb/s; port rate not reported, so not judged")
    # A port whose traffic failed does not stop the next port's judgement.
    failed = TrafficOutcome(TrafficJob("ib0", "ib_write_bw", "peer", 18515, 5, ib_device="mlx5_0", ib_port=2), NA, "refused")
    r = checks.rdma(checked(), [failed, TrafficOutcome(job, 196.0)], nic("ib0", ib_ports=[port(), port(port=2)]),
                    profile({"min_rdma_fraction": 0.9}))
    assert (r.code, sorted(r.values)) == ("NIC_TRAFFIC", ["bandwidth", "mlx5_0/1"])
    r = checks.rdma(checked(), [TrafficOutcome(job, 196.0)], nic("ib0", ib_ports=[port()]), profile({"min_rdma_fraction": 0.9}))
    assert (r.verdict, r.message) == (PASS, f"{IB0}: RDMA mlx5_0/1 to peer:18515: 196 Gb/s, limit >= 180 Gb/s, warn below 189; "
                                            "98% of the 200 Gb/s port")
    # The ports as read at the end give the rates; without an end reading, as at the start.
    r = checks.rdma(checked(nic("ib0", ib_ports=[port(rate_gbit=400.0)])), [TrafficOutcome(job, 196.0)], None,
                    profile({"min_rdma_fraction": 0.9}))
    assert r.verdict is FAIL


def test_whole_result_inventory():
    plan = checks.select(NICS, profile({"match": ["ib*"], "count": 2}))
    r = checks.inventory(plan, profile({"match": ["ib*"], "count": 2}))
    assert whole(r)[:8] == ("nic.inventory", "node", "pass", None, "2 NICs (match ib*): ib0, ib1",
                            {"count": (2, ""), "names": ("ib0, ib1", "")}, "count", [("nic_count", "min", 2, 2, "")])
    assert [n["subject"] for n in r.evidence["nics"]] == ["nic0", "nic1", "nic2"]
    assert r.evidence["nics"][1] == {"subject": "nic1", **NICS[1].to_dict()}
    assert checks.inventory(checks.select(NICS, profile()), profile()).thresholds == []  # no count set: none judged
    r = checks.inventory(checks.select(NICS, profile()), profile({"count": 4}))
    assert (r.verdict, r.code, r.message) == (FAIL, "NIC_COUNT", "3 physical NICs, expected 4: eno1, ib0, ib1")
    one = checks.select(NICS[:1], profile())
    assert checks.inventory(one, profile()).message == "1 physical NIC: eno1"
    both = profile({"match": ["ib*"], "drivers": ["mlx5_core", "x"]})
    r = checks.inventory(checks.select(NICS[:1], both), both)
    assert (r.verdict, r.code, r.message, r.values["names"].value) == (
        WARN, "NIC_COUNT", "no NICs (match ib* drivers mlx5_core,x) found", "none")
    r = checks.inventory(checks.select([], profile()), profile({"count": 1}))
    assert r.message == "0 physical NICs, expected 1: none"


def test_nics_sharing_a_peer_that_names_its_port_count_up_from_it():
    # One iperf3 server serves one test at a time: three NICs sent to p:6000 at once would find the
    # server busy for all but one (a false failure of two healthy NICs).
    plan = plan_for(THREE, [Peer("p", 6000)])
    assert jobs_of(plan) == [("nic0", "iperf3", "p", 6000), ("nic1", "iperf3", "p", 6001), ("nic2", "iperf3", "p", 6002),
                             ("nic2", "ib_write_bw", "p", 18515)]  # the port is iperf3's: RDMA counts from its own


def test_a_nic_keeps_its_own_peers_port_and_the_others_count_around_it():
    plan = plan_for(THREE, [Peer("p"), Peer("p", 5202, nic="eth0"), Peer("q", 5201, nic="ib0")])
    assert jobs_of(plan)[:3] == [("nic0", "iperf3", "p", 5202), ("nic1", "iperf3", "p", 5201), ("nic2", "iperf3", "q", 5201)]
    plan = plan_for(THREE, [Peer("p", 5201), Peer("p", 5202, nic="eth1")])
    assert jobs_of(plan)[:3] == [("nic0", "iperf3", "p", 5201), ("nic1", "iperf3", "p", 5202), ("nic2", "iperf3", "p", 5203)]
    ports = [(j.peer, j.port) for j in plan.rounds[0]]
    assert len(set(ports)) == len(ports)


# ---------------------------------------------------------------------- the traffic plan in full (issue 18)


def test_the_traffic_plan_says_how_long_and_on_which_nics_in_their_order():
    assert checks.traffic_seconds(profile(), quick=True) == 5 and checks.traffic_seconds(profile(), quick=False) == 10
    assert checks.traffic_summary(plan_for(THREE, [Peer("p")])) == \
        "NIC traffic: iperf3 on nic0-2 for 5 s, then ib_write_bw on nic2 for 5 s"
    assert checks.traffic_summary(plan_for([nic("ib0", kind="infiniband", ib_ports=[port()])], [])) == \
        "NIC traffic: ib_write_bw in loopback on nic0 for 5 s"
    # Two NICs named by number, not by text: nic2 before nic10.
    many = [nic(f"eth{i}", addresses=["10.0.0.1"] if i in (2, 10) else []) for i in range(11)]
    assert checks.traffic_summary(plan_for(many, [Peer("p")])) == "NIC traffic: iperf3 on nic2,nic10 for 5 s"


def test_every_job_names_its_nic_and_rdma_port():
    dual = nic("ib0", kind="infiniband", ib_ports=[port(state="DOWN"), port(port=2)])
    plan = plan_for([nic("eth0"), dual], [Peer("p")])
    assert [(j.nic, j.tool, j.ib_device, j.ib_port) for j in plan.jobs] == [
        ("eth0", "iperf3", None, 1), ("ib0", "iperf3", None, 1), ("ib0", "ib_write_bw", "mlx5_0", 2)]


def test_a_nic_whose_rdma_cannot_run_leaves_the_next_ones_planned():
    down = nic("ib0", kind="infiniband", operstate="down", carrier=0, ib_ports=[port(state="DOWN")])
    up = nic("ib1", kind="infiniband", bus_id="0000:0d:00.0", ib_ports=[port(device="mlx5_1")])
    plan = plan_for([down, up], [Peer("p")])
    assert [(r.name, r.subject, r.code) for r in plan.skips] == [("nic.tcp", "nic0", "NIC_LINK_DOWN"),
                                                                 ("nic.rdma", "nic0", "NIC_LINK_DOWN")]
    assert jobs_of(plan) == [("nic1", "iperf3", "p", 5201), ("nic1", "ib_write_bw", "p", 18515)]


@pytest.mark.parametrize("reading, nic_profile, gpus, peers, skipped", [
    ({"interface": False, "operstate": NA, "carrier": NA}, {}, [], [Peer("p")],
     [("nic.tcp", None, "TCP not measured: no network interface on this RDMA device (load ib_ipoib for TCP)")]),
    ({"addresses": []}, {}, [], [Peer("p")],
     [("nic.tcp", "NIC_NO_ADDRESS", "TCP not measured: no IP address to send from: give the NIC one on the peer's network")]),
    ({}, {"rdma_use_cuda": True}, [], [Peer("p")],
     [("nic.rdma", "NO_GPUS", "RDMA not measured: GPUDirect RDMA is asked for ([nic] rdma_use_cuda) but there is no "
                              "working GPU")]),
    ({}, {}, [], [],
     [("nic.tcp", "NIC_NO_PEER", "TCP not measured: no peer: pass --nic-peer HOST (a host running `iperf3 -s -p PORT`, "
                                 "one per NIC on ports 5201 and up) or --nic-peer NIC=HOST, or set [nic] peers in the profile")]),
    ({"operstate": "down", "carrier": 0, "ib_ports": [port(state="DOWN")]}, {}, [], [Peer("p")],
     [("nic.tcp", "NIC_LINK_DOWN", "TCP not measured: the link is down (see nic.link)"),
      ("nic.rdma", "NIC_LINK_DOWN", "RDMA not measured: the link is down (see nic.link)")]),
])
def test_each_skip_says_exactly_what_to_do(reading, nic_profile, gpus, peers, skipped):
    one = replace(nic("ib0", kind="infiniband", ib_ports=[port()]), **reading)
    plan = plan_for([one], peers, nic_profile, gpus=gpus)
    assert [(r.name, r.code, r.message) for r in plan.skips] == skipped


def test_gpudirect_takes_the_gpu_nearest_on_the_pci_bus_read_in_hex():
    def gpus(*buses):
        return [GpuInfo(i, "A100", f"GPU-{i}", f"00000000:{b}:00.0") for i, b in enumerate(buses)]

    def nearest(bus, *gpu_buses):
        plan = plan_for([nic("ib0", kind="infiniband", bus_id=bus, ib_ports=[port()])], [Peer("p")],
                        {"rdma_use_cuda": True}, gpus=gpus(*gpu_buses))
        return [j.cuda_device for j in plan.jobs if j.tool == "ib_write_bw"]

    assert nearest("0000:80:00.0", "7A", "84") == [1]  # 0x84 is 4 away, 0x7a 6 (read in decimal: 2 against 4)
    assert nearest("0000:19:00.0", "18", "1B") == [0]
    assert nearest(NA, "84", "7A") == [0]  # no bus of its own: the first GPU


def test_results_judge_each_nic_as_it_ended_and_only_the_traffic_it_had():
    p = profile({"min_tcp_fraction": 0.5, "min_rdma_fraction": 0.9})
    plan = plan_for(THREE, [Peer("p")])
    tcp0, tcp1, tcp2, rdma2 = plan.jobs
    after = [replace(THREE[0], carrier_changes=3, speed_mbps=25000),  # flapped; came back faster
             replace(THREE[1], operstate="down", carrier=0, pcie_gen=3),  # down at the end, its link trained down
             replace(THREE[2], ib_ports=[port(rate_gbit=400.0)])]
    outcomes = [TrafficOutcome(tcp0, 9.0), TrafficOutcome(tcp2, 9.0), TrafficOutcome(rdma2, 190.0)]
    got = {(r.name, r.subject): (r.verdict, r.code, r.message) for r in
           checks.nic_results(plan, outcomes, {"eth0": [(3, 8)]}, after, p)}
    assert set(got) == {("nic.inventory", "node")} | {(f"nic.{c}", f"nic{i}") for c in ("link", "pcie", "stability", "tcp")
                                                       for i in range(3)} | {("nic.rdma", "nic2")}
    assert got[("nic.stability", "nic0")][:2] == (FAIL, "NIC_LINK_FLAP")
    assert got[("nic.tcp", "nic0")][:2] == (FAIL, "NIC_THROUGHPUT")  # 9 of the 25 Gb/s it ended at, not of 10
    assert got[("nic.pcie", "nic0")][:2] == (FAIL, "NIC_PCIE_WIDTH")  # read under traffic: x8
    assert got[("nic.link", "nic1")][:2] == (WARN, "NIC_LINK_DOWN")  # the profile names no NIC: not required
    assert got[("nic.pcie", "nic1")][:2] == (FAIL, "NIC_PCIE_GEN")  # no traffic reading: as it ended, Gen3
    assert got[("nic.tcp", "nic1")] == (SKIP, None, "eth1 (mlx5_core, 0000:02:00.0): the traffic did not run (stopped early)")
    assert got[("nic.rdma", "nic2")][:2] == (FAIL, "RDMA_BANDWIDTH")  # 190 of the 400 Gb/s port it ended at
    assert got[("nic.link", "nic2")][0] is PASS and got[("nic.tcp", "nic2")][0] is PASS
