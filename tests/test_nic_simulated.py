"""NICs of the simulated node: injected NIC faults are found by the real checks and attributed to the
right NIC with nothing else failing; simulated traffic with peers; the burn-in hook that runs NIC
traffic during the GPU burn; host services from the scenario; the --nic-peer command line."""

import time

import pytest

from conftest import cli
from nodeqc.backends import simulated_hardware
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.node import SimNode
from nodeqc.backends.sim.scenario import load_scenario
from nodeqc.core.model import Verdict
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.peers import Peer
from nodeqc.spec.profile import load_profile
from nodeqc.spec.selection import Selection

SCALE = 40


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    return create_key(tmp_path_factory.mktemp("key") / "k.pem")


def qualify(tmp_path_factory, signer, scenario, profile, faults=(), peers=(), events=None, runner_hook=None,
            burn_in_s=None):
    hw = simulated_hardware(scenario, [parse_fault(f) for f in faults], time_scale=SCALE)
    options = RunOptions(load_profile(profile), signer, out_dir=tmp_path_factory.mktemp("out"), quick=True,
                         nic_peers=list(peers), burn_in_s=burn_in_s)
    runner = Runner(options, hw, events.append if events is not None else None)
    if runner_hook:
        runner_hook(runner)
    return runner.run()


def findings(outcome):
    return {(r.name, r.subject, r.code, r.verdict.value) for r in outcome.results
            if r.verdict not in (Verdict.PASS, Verdict.SKIP)}


def by_key(outcome):
    return {(r.name, r.subject): r for r in outcome.results}


NIC_FAULTS = {
    "nic1:down": ("nic.link", "nic1", "NIC_LINK_DOWN", "fail"),
    "nic3:speed=100000": ("nic.link", "nic3", "IB_RATE", "fail"),
    "nic5:pcie_width=8": ("nic.pcie", "nic5", "NIC_PCIE_WIDTH", "fail"),
}


@pytest.fixture(scope="module")
def faulty(tmp_path_factory, signer):
    return qualify(tmp_path_factory, signer, "dgx-a100", "dgx-a100", NIC_FAULTS)


@pytest.mark.parametrize("fault", NIC_FAULTS)
def test_nic_fault_is_attributed(faulty, fault):
    assert NIC_FAULTS[fault] in findings(faulty)


def test_nic_faults_find_nothing_else(faulty):
    # Without a peer RDMA runs in loopback (issue 15): the x8 link cannot carry HDR, and shows it.
    assert findings(faulty) == set(NIC_FAULTS.values()) | {("nic.rdma", "nic5", "RDMA_BANDWIDTH", "fail")}
    got = by_key(faulty)
    assert got[("nic.link", "nic1")].message.startswith("ibp18s0 (mlx5_core, 0000:12:00.0): link down")
    assert "port mlx5_3/1 rate 100 Gb/s is below the limit 200 Gb/s" in got[("nic.link", "nic3")].message
    assert "PCIe link at Gen4 x8" in got[("nic.pcie", "nic5")].message


def test_a_clean_dgx_checks_its_8_compute_nics_and_lists_the_storage_port(tmp_path_factory, signer):
    outcome = qualify(tmp_path_factory, signer, "dgx-a100", "dgx-a100")
    assert findings(outcome) == set()
    got = by_key(outcome)
    assert {s for (n, s) in got if n == "nic.link"} == {f"nic{i}" for i in range(8)}
    inventory = got[("nic.inventory", "node")]
    assert inventory.values["count"].value == 8
    assert [n["name"] for n in inventory.evidence["nics"]][-1] == "enp225s0f0"  # nic8: listed, not judged
    # Without a peer: TCP is skipped saying what to pass; RDMA runs in loopback on every HCA port.
    assert {r.code for r in outcome.results if r.name == "nic.tcp"} == {"NIC_NO_PEER"}
    rdma = [r for r in outcome.results if r.name == "nic.rdma"]
    assert len(rdma) == 8 and all(r.verdict is Verdict.PASS and "in loopback" in r.message for r in rdma)
    assert got[("host.gpudirect_rdma", "node")].verdict is Verdict.PASS


def test_simulated_traffic_with_peers(tmp_path_factory, signer):
    events = []
    outcome = qualify(tmp_path_factory, signer, "dgx-a100", "dgx-a100", ["nic2:down", "nic6:pcie_width=4"],
                      peers=[Peer("peer-a"), Peer("peer-b")], events=events)
    got = by_key(outcome)
    # IPoIB carries a fifth of HDR; ib_write_bw nearly all of it, with GPU memory (GPUDirect).
    tcp0, rdma0 = got[("nic.tcp", "nic0")], got[("nic.rdma", "nic0")]
    assert tcp0.verdict is Verdict.PASS and tcp0.values["throughput"].value == pytest.approx(40)
    assert rdma0.verdict is Verdict.PASS and "GPU memory of gpu" in rdma0.message
    assert got[("nic.tcp", "nic2")].code == "NIC_LINK_DOWN" and got[("nic.tcp", "nic2")].verdict is Verdict.SKIP
    # An x4 link cannot carry HDR: traffic shows it as well as the link check.
    assert findings(outcome) == {("nic.link", "nic2", "NIC_LINK_DOWN", "fail"), ("nic.pcie", "nic6", "NIC_PCIE_WIDTH", "fail"),
                                 ("nic.rdma", "nic6", "RDMA_BANDWIDTH", "fail")}
    assert "under traffic" in got[("nic.pcie", "nic6")].message
    notices = [e.text for e in events if e.type == "notice"]
    assert "NIC traffic: iperf3 on nic0-1,3-7 for 5 s, then ib_write_bw on nic0-1,3-7 for 5 s" in notices
    # Peers alternate by NIC position (nicK gets peer K mod 2, even when a NIC is skipped), and each
    # NIC sent to one peer has its own server port.
    peers = {r.subject: r.values["peer"].value for r in outcome.results if r.name == "nic.tcp" and "peer" in r.values}
    assert peers == {"nic0": "peer-a:5201", "nic1": "peer-b:5201", "nic3": "peer-b:5202", "nic4": "peer-a:5202",
                     "nic5": "peer-b:5203", "nic6": "peer-a:5203", "nic7": "peer-b:5204"}


def test_burn_in_runs_nic_traffic_during_the_gpu_burn(tmp_path_factory, signer):
    events = []
    outcome = qualify(tmp_path_factory, signer, "a100", "a100", peers=[Peer("peer")], events=events, burn_in_s=600)
    kinds = [(e.type, getattr(e, "name", None) or getattr(e, "text", "")) for e in events
             if e.type == "check_started" or (e.type == "notice" and e.text.startswith("NIC traffic"))]
    burn_in = kinds.index(("check_started", "burnin.stability"))
    traffic = [i for i, k in enumerate(kinds) if k[0] == "notice"]
    assert traffic == [burn_in + 1]  # started once, with the burn-in, not again after it
    assert kinds[traffic[0]][1] == "NIC traffic: iperf3 on nic0 for 300 s, then ib_write_bw on nic0 for 300 s"
    got = by_key(outcome)
    assert got[("nic.tcp", "nic0")].verdict is Verdict.PASS and got[("nic.rdma", "nic0")].verdict is Verdict.PASS
    assert got[("burnin.stability", "gpu0")].verdict is Verdict.PASS
    assert outcome.verdict == "PASS"


def _traffic_started_during(events):
    """The check that was running (started, not finished) when the NIC traffic's notice came."""
    running = []
    for e in events:
        if e.type == "check_started":
            running.append(e.name)
        elif e.type == "check_finished" and e.result.name in running:
            running.remove(e.result.name)
        elif e.type == "notice" and e.text.startswith("NIC traffic"):
            return list(running)
    return None


def test_a_quick_run_sends_its_nic_traffic_while_the_gpus_burn(tmp_path_factory, signer, tmp_path):
    """Issue 30: the NIC checks' traffic (two rounds of 5 s in a quick run) runs beside the 30 s burn,
    not after every GPU step, so it costs the run no time of its own; judged as before. Traffic that
    would outlast the burn (two rounds of 20 s) starts after the GPU steps, so no GPU copy over PCIe
    is measured beside it; so does traffic of a run without the burn."""
    events = []
    outcome = qualify(tmp_path_factory, signer, "a100", "a100", peers=[Peer("peer")], events=events)
    assert _traffic_started_during(events) == ["stress.burn"]
    got = by_key(outcome)
    assert got[("nic.tcp", "nic0")].verdict is Verdict.PASS and got[("nic.rdma", "nic0")].verdict is Verdict.PASS
    assert outcome.verdict == "PASS"
    long = tmp_path / "long.toml"
    long.write_text('description = "traffic longer than the burn"\nextends = "a100"\n[nic]\nquick_traffic_s = 20\n')
    events = []
    outcome = qualify(tmp_path_factory, signer, "a100", str(long), peers=[Peer("peer")], events=events)
    assert _traffic_started_during(events) == []
    assert by_key(outcome)[("nic.tcp", "nic0")].verdict is Verdict.PASS
    events = []
    hw = simulated_hardware("a100", [], time_scale=SCALE)
    options = RunOptions(load_profile("a100"), signer, out_dir=tmp_path_factory.mktemp("out"), quick=True,
                         nic_peers=[Peer("peer")], selection=Selection.parse(["nic.tcp", "stress.pcie_bandwidth"], None))
    Runner(options, hw, events.append).run()
    assert _traffic_started_during(events) == []


def test_abort_during_nic_traffic_ends_the_run_with_an_aborted_report(tmp_path_factory, signer, tmp_path):
    profile = tmp_path / "long.toml"  # 2 x 4000 simulated seconds of traffic: 200 s at 40x, unless aborted
    profile.write_text('description = "long traffic"\nextends = "a100"\n[nic]\nquick_traffic_s = 4000\n')
    runner_box = []

    class Events(list):
        def append(self, event):
            super().append(event)
            if event.type == "notice" and event.text.startswith("NIC traffic"):
                runner_box[0].abort()

    start = time.monotonic()
    outcome = qualify(tmp_path_factory, signer, "a100", str(profile), peers=[Peer("peer")], events=Events(),
                      runner_hook=runner_box.append)
    assert time.monotonic() - start < 30
    assert outcome.status == "aborted" and outcome.exit_code == 2
    # Nothing judged from cut traffic: the NIC checks are listed as never reached
    assert all(r.code == "RUN_ABORTED" for r in outcome.results if r.name.startswith("nic."))
    assert runner_box[0]._nic.session is None  # ended, not left running


def test_an_ethernet_nic_below_the_profiles_speed(tmp_path_factory, signer, tmp_path):
    profile = tmp_path / "eth.toml"
    profile.write_text('description = "a100 with 100GbE"\nextends = "a100"\n[nic]\nmin_speed_mbit = { fail = 100000, warn = 100000 }\n')
    outcome = qualify(tmp_path_factory, signer, "a100", str(profile), ["nic0:speed=25000"])
    assert findings(outcome) == {("nic.link", "nic0", "NIC_SPEED", "fail")}


def test_every_scenario_has_nics():
    from nodeqc.backends.sim.scenario import list_scenarios

    for name in list_scenarios():
        nics = SimNode(load_scenario(name), []).nics().nics()
        assert nics and len({n.name for n in nics}) == len(nics), name
    assert [n.kind for n in SimNode(load_scenario("dgx-a100"), []).nics().nics()][:8] == ["infiniband"] * 8


# ---------------------------------------------------------------------- the command line


@pytest.mark.parametrize("args, message", [
    (["--nic-peer", "eth0="], "--nic-peer eth0=: no host"),
    (["--nic-peer", "host:99999"], "--nic-peer host:99999: port '99999': expected 1-65535"),
    (["--nic-peer", "eth9=10.0.0.2"], "--nic-peer eth9=10.0.0.2: this node has no NIC eth9 (it has: ibp12s0,"),
])
def test_bad_nic_peer_is_one_line_and_exit_2(args, message):
    p = cli("--headless", "--profile", "dgx-a100", "--simulate", "dgx-a100", *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nodeqc: ") and message in lines[0]


def test_profiles_shows_the_nic_settings():
    p = cli("profiles", "dgx-a100")
    assert p.returncode == 0 and "[nic]" in p.stdout and "min_ib_rate_gbit       >= 200 Gb/s" in p.stdout


def test_every_node_profile_names_its_compute_nics():
    """A node profile states its fabric: which NICs (name patterns or drivers), how many, at what rate."""
    from nodeqc.spec.profile import list_profiles

    nodes = [p for p in list_profiles() if p.kind == "node"]
    assert {p.name for p in nodes} >= {"dgx-a100", "hgx-h100"}
    for p in nodes:
        nic = p.section("nic")
        assert (nic.get("match") or nic.get("drivers")) and nic.get("count"), p.name
        assert p.threshold("nic", "min_ib_rate_gbit") or p.threshold("nic", "min_speed_mbit"), p.name


@pytest.mark.parametrize("node, faults, found", [
    # hgx-h100: nic0 is the management port (eno1, not judged); nic1-nic8 the NDR compute NICs.
    ("hgx-h100", [], set()),
    ("hgx-h100", ["nic4:down"], {("nic.link", "nic4", "NIC_LINK_DOWN", "fail")}),
    ("hgx-h100", ["nic2:speed=200000"], {("nic.link", "nic2", "IB_RATE", "fail")}),
    ("dgx-a100", ["nic0:down"], {("nic.link", "nic0", "NIC_LINK_DOWN", "fail")}),
])
def test_a_node_profile_fails_a_down_or_slow_compute_nic(tmp_path, signer, node, faults, found):
    from nodeqc.spec.selection import Selection

    hw = simulated_hardware(node, [parse_fault(f) for f in faults], time_scale=SCALE)
    options = RunOptions(load_profile(node), signer, out_dir=tmp_path, quick=True,
                         selection=Selection.parse(["nic"], None))
    outcome = Runner(options, hw).run()
    assert findings(outcome) == found
    assert {r.subject for r in outcome.results if r.name == "nic.link"} == \
        ({f"nic{i}" for i in range(1, 9)} if node == "hgx-h100" else {f"nic{i}" for i in range(8)})
    assert outcome.exit_code == (1 if found else 0)


def test_hgx_h100_fails_a_missing_compute_nic(tmp_path, signer):
    from nodeqc.core.resources import scenarios_dir
    from nodeqc.spec.selection import Selection

    text = (scenarios_dir() / "hgx-h100.toml").read_text()
    seven = tmp_path / "hgx-7nics.toml"
    seven.write_text(text[:text.rindex("[[nics]]")])  # the last compute NIC gone
    options = RunOptions(load_profile("hgx-h100"), signer, out_dir=tmp_path, quick=True,
                         selection=Selection.parse(["nic"], None))
    outcome = Runner(options, simulated_hardware(str(seven), [], time_scale=SCALE)).run()
    assert findings(outcome) == {("nic.inventory", "node", "NIC_COUNT", "fail")}


# ---------------------------------------------------------------------- NCCL through the NICs (issue 15)


def test_nccl_through_the_nics_runs_where_the_profile_has_a_floor(tmp_path_factory, signer):
    # hgx-h100 sets Azure's 40 GB/s floor and has 8 NDR NICs: the all-reduce runs again with NCCL's
    # P2P and SHM switches off, which the simulated twin honours (every byte through the NICs).
    events = []
    outcome = qualify(tmp_path_factory, signer, "hgx-h100", "hgx-h100", ["gpu4:nvlink_down=6"], events=events)
    got = by_key(outcome)
    net, nvlink = got[("stress.nccl_net", "node")], got[("stress.nccl", "node")]
    assert net.verdict is Verdict.PASS and net.values["busbw_gbps"].value == 48.5
    assert net.evidence["env"] == {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
    assert "through the NICs (P2P and SHM off)" in net.message and "limit >= 40 GB/s" in net.message
    assert nvlink.values["busbw_gbps"].value > 100  # the in-node check kept NVLink (and sees its fault)


def test_nccl_through_the_nics_fails_without_an_rdma_nic_and_is_not_planned_without_a_floor(tmp_path_factory, signer, tmp_path):
    from nodeqc.core.resources import scenarios_dir

    text = (scenarios_dir() / "a100.toml").read_text()
    text = text.replace('count = 1\nbus_ids = ["0000:01:00.0"]', 'count = 2\nbus_ids = ["0000:01:00.0", "0000:02:00.0"]')
    scenario = tmp_path / "two-a100-no-rdma.toml"
    scenario.write_text(text.replace('ib_device = "mlx5_0"\n', ""))
    profile = tmp_path / "a100-nccl-net.toml"
    profile.write_text('extends = "a100"\ndescription = "test"\n[nic]\nmin_nccl_loopback_busbw_gbps = 40\n')
    got = by_key(qualify(tmp_path_factory, signer, str(scenario), str(profile)))
    r = got[("stress.nccl_net", "node")]
    # The profile promises the NICs (it gives their floor): a node without them fails, never a skip.
    assert (r.verdict, r.code) == (Verdict.FAIL, "NIC_COUNT") and "no RDMA NIC on this node" in r.message
    # Without the floor (the a100 profile), the step is not part of the plan at all.
    got = by_key(qualify(tmp_path_factory, signer, str(scenario), "a100"))
    assert ("stress.nccl_net", "node") not in got and got[("stress.nccl", "node")].verdict is Verdict.PASS


@pytest.mark.parametrize("result,verdict,code", [
    ({"busbw_gbps": 38.0, "algbw_gbps": 21.7, "bytes": 1 << 30, "gpus": 8, "wrong": []}, Verdict.FAIL, "NCCL_NET_SLOW"),
    ({"busbw_gbps": 46.0, "algbw_gbps": 26.3, "bytes": 1 << 30, "gpus": 8, "wrong": []}, Verdict.PASS, None),
    ({"busbw_gbps": 46.0, "algbw_gbps": 26.3, "bytes": 1 << 30, "gpus": 8,
      "wrong": [{"gpu": 3, "count": 1, "index": 7, "expected": 36.0, "actual": 35.0, "xor": "0x00000200"}]},
     Verdict.FAIL, "NCCL_WRONG_RESULT"),
    ({"unavailable": "NCCL is not available to CuPy"}, Verdict.SKIP, "NCCL_UNAVAILABLE"),
])
def test_nccl_through_the_nics_verdict(result, verdict, code):
    from nodeqc.checks.stress.nccl import judge_nccl_net
    from nodeqc.work.workers import Outcome, Task

    outcome = Outcome(Task("nccl", 0, {}, 120, gpus=tuple(range(8))), "ok", result)
    (r,) = judge_nccl_net([], outcome, load_profile("hgx-h100"))
    assert (r.verdict, r.code) == (verdict, code), r.message
