"""The real NIC backend on a prepared sysfs tree; the tools' outputs parsed; their command lines;
the traffic session's processes (stand-in tools, so no packet is sent)."""

import os
import socket
import time
from pathlib import Path

import pytest

from nodeqc.backends import nic as backend
from nodeqc.backends.base import TrafficJob
from nodeqc.backends.nic import LinuxNics, command, parse_ib_write_bw, parse_iperf3
from nodeqc.core.na import NA, is_na


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def _link(root: Path, rel: str, target: str) -> None:
    """A relative symlink, as sysfs has them."""
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.symlink_to(os.path.relpath(root / target, p.parent))


def _netdev(root: Path, device_dir: str, name: str, **attrs: str) -> None:
    d = f"{device_dir}/net/{name}"
    for key, value in {"type": "1", "operstate": "up", "carrier": "1", "speed": "-1", "mtu": "1500",
                       "carrier_changes": "2", "address": "02:00:00:00:00:01", **attrs}.items():
        _write(root, f"{d}/{key}", value)
    _link(root, f"sys/class/net/{name}", d)
    if "virtual" not in device_dir:
        _link(root, f"{d}/device", device_dir)


def _pci(root: Path, bdf: str, driver: str, cur=("16.0 GT/s PCIe", "8"), top=("16.0 GT/s PCIe", "16")) -> str:
    d = f"sys/devices/pci0000:00/0000:00:01.0/{bdf}"
    _write(root, f"{d}/current_link_speed", cur[0])
    _write(root, f"{d}/current_link_width", cur[1])
    _write(root, f"{d}/max_link_speed", top[0])
    _write(root, f"{d}/max_link_width", top[1])
    (root / f"sys/bus/pci/drivers/{driver}").mkdir(parents=True, exist_ok=True)
    _link(root, f"{d}/driver", f"sys/bus/pci/drivers/{driver}")
    return d


def _ib(root: Path, device_dir: str, dev: str, state="4: ACTIVE", rate="200 Gb/sec (4X HDR)", symbol_errors="3") -> None:
    port = f"{device_dir}/infiniband/{dev}/ports/1"
    for key, value in (("state", state), ("phys_state", "5: LinkUp"), ("rate", rate), ("link_layer", "InfiniBand"),
                       ("counters/symbol_error", symbol_errors), ("counters/link_downed", "0"),
                       ("counters/link_error_recovery", "1")):
        _write(root, f"{port}/{key}", value)
    _link(root, f"{device_dir}/infiniband/{dev}/device", device_dir)
    _link(root, f"sys/class/infiniband/{dev}", f"{device_dir}/infiniband/{dev}")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    # virtio NIC under a PCI function (as in a VM): speed unknown, no PCIe link attributes.
    virtio = "sys/devices/pci0000:00/0000:00:03.0/virtio2"
    _write(root, "sys/devices/pci0000:00/0000:00:03.0/vendor", "0x1af4")
    (root / "sys/bus/virtio/drivers/virtio_net").mkdir(parents=True)
    _link(root, f"{virtio}/driver", "sys/bus/virtio/drivers/virtio_net")
    _netdev(root, virtio, "eth0")
    # ConnectX HDR with IPoIB, trained at x8 of x16.
    hca = _pci(root, "0000:0c:00.0", "mlx5_core")
    _netdev(root, hca, "ib0", type="32", speed="200000", mtu="4092", address="00:00:10:87:fe:80")
    _ib(root, hca, "mlx5_0")
    # An HCA with no IPoIB interface, port down.
    bare = _pci(root, "0000:12:00.0", "mlx5_core", cur=("8.0 GT/s PCIe", "16"))
    _ib(root, bare, "mlx5_1", state="1: DOWN", rate="10 Gb/sec (4X SDR)", symbol_errors="0")
    # A VF of the HCA, a veth and loopback: not NICs of their own (loopback never listed).
    vf = _pci(root, "0000:0c:00.2", "mlx5_core")
    _link(root, f"{vf}/physfn", hca)
    _netdev(root, vf, "ens1f0v0")
    _netdev(root, "sys/devices/virtual", "veth0", speed="10000")
    _netdev(root, "sys/devices/virtual", "lo", type="772", operstate="unknown")
    return root


def test_nics_from_a_prepared_tree(tree):
    nics = LinuxNics(tree).nics()
    assert [(n.name, n.virtual) for n in nics] == [("eth0", False), ("ib0", False), ("mlx5_1", False),
                                                  ("ens1f0v0", True), ("veth0", True)]
    eth0, ib0, bare = nics[:3]
    assert (eth0.driver, eth0.bus_id, eth0.speed_mbps, eth0.pcie_gen, eth0.carrier_changes) == ("virtio_net", "0000:00:03.0", NA, NA, 2)
    assert (ib0.kind, ib0.driver, ib0.bus_id, ib0.speed_mbps, ib0.mtu) == ("infiniband", "mlx5_core", "0000:0c:00.0", 200000, 4092)
    assert (ib0.pcie_gen, ib0.pcie_width, ib0.pcie_max_gen, ib0.pcie_max_width) == (4, 8, 4, 16)
    port = ib0.ib_ports[0]
    assert (port.label, port.state, port.phys_state, port.rate_gbit, port.link_layer) == ("mlx5_0/1", "ACTIVE", "LinkUp", 200.0, "InfiniBand")
    assert port.counters == {"symbol_error": 3, "link_downed": 0, "link_error_recovery": 1}
    assert not bare.interface and bare.kind == "infiniband" and bare.ib_ports[0].state == "DOWN"
    assert (bare.pcie_gen, bare.pcie_width) == (3, 16)
    assert eth0.addresses == []  # addresses come from the live host only, never for a prepared tree


def test_pcie_link_now(tree):
    nics = LinuxNics(tree)
    assert nics.pcie_link("ib0") == (4, 8) and nics.pcie_link("mlx5_1") == (3, 16)
    assert nics.pcie_link("veth0") == (NA, NA) and nics.pcie_link("nosuch") == (NA, NA)


def test_this_machine_lists_no_loopback():
    assert all(n.name != "lo" for n in LinuxNics().nics())


# ---------------------------------------------------------------------- the tools' output

IPERF3_OK = """{"start": {}, "intervals": [], "end": {"streams": [{}, {}, {}, {}],
 "sum_sent": {"seconds": 5.0, "bytes": 5875000000, "bits_per_second": 9.4e9, "retransmits": 12},
 "sum_received": {"seconds": 5.0, "bytes": 5850000000, "bits_per_second": 9.36e9}}}"""
IPERF3_REFUSED = '{"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}'

IB_WRITE_BW_OK = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Link type       : IB
---------------------------------------------------------------------------------------
 local address: LID 0x0d QPN 0x0107 PSN 0x8a3f2c RKey 0x1fff00 VAddr 0x007f6a2b3c4000
 remote address: LID 0x0c QPN 0x0107 PSN 0x6b1e58 RKey 0x1fff00 VAddr 0x007f8d9e0a1000
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1861262          0.00               195.12 \t\t   0.372150
---------------------------------------------------------------------------------------
"""
IB_WRITE_BW_REFUSED = """ Couldn't connect to 10.0.0.2:18515
Unable to open file descriptor for socket connection Unable to init the socket connection
"""


def test_parse_iperf3():
    gbps, error, detail = parse_iperf3(IPERF3_OK)
    assert (gbps, error) == (9.36, None) and detail["retransmits"] == 12 and detail["streams"] == 4
    assert parse_iperf3(IPERF3_REFUSED)[:2] == (NA, "iperf3: unable to connect to server: Connection refused")
    assert parse_iperf3("iperf3: error - no route")[:2] == (NA, "iperf3 gave no JSON result")
    # Cut short by an error 0.3 s into its 5 s: what arrived first is no rate of the link (it passed).
    cut = IPERF3_OK.replace('"seconds": 5.0, "bytes": 5850000000', '"seconds": 0.3, "bytes": 350000000')[:-1] + \
        ', "error": "error - the server has terminated"}'
    assert parse_iperf3(cut)[:2] == (NA, "iperf3: error - the server has terminated (after 0.3 s, 9.36 Gb/s received)")


def test_parse_ib_write_bw():
    gbps, error, detail = parse_ib_write_bw(IB_WRITE_BW_OK)
    assert (gbps, error, detail["bytes"]) == (195.12, None, 65536)
    gbps, error, _ = parse_ib_write_bw(IB_WRITE_BW_REFUSED)
    assert gbps is NA and error == "ib_write_bw gave no result: Unable to open file descriptor for socket connection Unable to init the socket connection"


def test_command_lines(monkeypatch):
    monkeypatch.setattr(backend, "iperf3_options", lambda: frozenset({"--bind-dev", "--connect-timeout"}))
    tcp = TrafficJob("ib0", "iperf3", "10.0.0.2", 5202, 5, 4, bind="10.0.0.1")
    assert command(tcp) == ["iperf3", "-c", "10.0.0.2", "-p", "5202", "-J", "-P", "4", "-t", "5", "-i", "0",
                            "-B", "10.0.0.1", "--bind-dev", "ib0", "--connect-timeout", "5000"]
    monkeypatch.setattr(backend, "iperf3_options", lambda: frozenset())  # an old iperf3 (3.7)
    assert command(tcp)[-2:] == ["-B", "10.0.0.1"]
    assert command(TrafficJob("ib0", "iperf3", "p", 5201, 7.5, 4))[9:10] == ["8"]  # whole seconds
    rdma = TrafficJob("ib0", "ib_write_bw", "peer", 18516, 5, ib_device="mlx5_0", ib_port=1, cuda_device=3, roce=True)
    assert command(rdma) == ["ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18516", "-D", "5", "--report_gbits", "-F",
                             "-R", "--use_cuda=3", "peer"]


# ---------------------------------------------------------------------- the session's processes


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """Stand-ins for iperf3 on PATH: `iperf3 ... -p 5201` answers at once, `-p 5299` never ends."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "iperf3"
    tool.write_text("#!/bin/sh\n"
                    'case "$*" in *--help*) echo "  --bind-dev <dev>"; exit 0;; *5299*) exec sleep 60;; esac\n'
                    "sleep 0.3\n"
                    f"cat <<'EOF'\n{IPERF3_OK}\nEOF\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    backend.iperf3_options.cache_clear()
    yield bin_dir
    backend.iperf3_options.cache_clear()


def test_a_round_runs_every_job_at_once_and_reads_pcie_meanwhile(tree, fake_tools):
    jobs = [TrafficJob("ib0", "iperf3", "peer", 5201, 1, 4, bind="10.0.0.1"),
            TrafficJob("eth0", "iperf3", "peer", 5202, 1, 4, bind="10.0.0.3")]
    start = time.monotonic()
    session = LinuxNics(tree).start_traffic([jobs], ["ib0"])
    outcomes = session.stop()
    assert time.monotonic() - start < 5  # at once, not one after the other
    assert [(o.job.nic, o.gbps, o.error) for o in outcomes] == [("ib0", 9.36, None), ("eth0", 9.36, None)]
    assert "--bind-dev ib0" in outcomes[0].detail["command"]
    assert session.links["ib0"] and set(session.links["ib0"]) == {(4, 8)}


def test_a_tool_that_never_ends_is_killed_at_its_deadline(tree, fake_tools, monkeypatch):
    monkeypatch.setattr(backend.ProcessTraffic, "GRACE_S", 0.5)
    start = time.monotonic()
    session = LinuxNics(tree).start_traffic([[TrafficJob("ib0", "iperf3", "peer", 5299, 0.5, 1)]], [])
    (outcome,) = session.stop()
    assert time.monotonic() - start < 5
    assert outcome.gbps is NA and outcome.error == "iperf3 did not end within 1 s: killed"


def test_stopping_early_kills_the_tools(tree, fake_tools):
    session = LinuxNics(tree).start_traffic([[TrafficJob("ib0", "iperf3", "peer", 5299, 30, 1)]], [])
    time.sleep(0.2)
    start = time.monotonic()
    (outcome,) = session.stop(kill=True)
    assert time.monotonic() - start < 5 and outcome.error == "iperf3 stopped before it finished: killed"


def test_a_missing_tool_is_an_outcome_not_a_crash(tree, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    (outcome,) = LinuxNics(tree).start_traffic([[TrafficJob("ib0", "ib_write_bw", "p", 18515, 1, ib_device="mlx5_0")]], []).stop()
    assert outcome.error == "ib_write_bw could not start: No such file or directory"
    assert LinuxNics(tree).missing_tool("ib_write_bw").startswith("ib_write_bw is not installed: install perftest")


def test_rdma_loopback_starts_the_server_half_then_the_client_on_the_same_port(tree, tmp_path, monkeypatch):
    # A stand-in ib_write_bw: the server half (no host argument) waits to be ended, the client half
    # prints perftest's table (tests/test_fabric_worker.py's real NDR sample). Every call is logged.
    from test_fabric_worker import IB_WRITE_BW_NDR

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    sample = tmp_path / "sample.txt"
    sample.write_text(IB_WRITE_BW_NDR)
    tool = bin_dir / "ib_write_bw"
    tool.write_text("#!/bin/sh\n"
                    f'echo "$*" >> {log}\n'
                    'for last; do :; done\n'
                    'case "$last" in -*|*=*|[0-9]*) exec sleep 60;; esac\n'
                    f"sleep 0.2; cat {sample}\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(backend.ProcessTraffic, "LOOPBACK_SERVER_START_S", 0.2)
    job = TrafficJob("ib0", "ib_write_bw", "localhost", 18515, 1, ib_device="mlx5_0", loopback=True)
    start = time.monotonic()
    (outcome,) = LinuxNics(tree).start_traffic([[job]], []).stop()
    assert time.monotonic() - start < 10  # the server half is ended with the round, never waited for
    assert (outcome.gbps, outcome.error) == (392.34, None)
    server, client = log.read_text().splitlines()
    assert server == "-d mlx5_0 -i 1 -p 18515 -D 1 --report_gbits -F"
    assert client.startswith(server + " ") and client.split()[-1] == socket.gethostname()


@pytest.mark.parametrize("speed, rate, read", [("4294967295", "1e9 Gb/sec (4X HDR)", False),
                                               ("1600001", "1601 Gb/sec", False),
                                               ("1600000", "800 Gb/sec (4X XDR)", True)])
def test_a_link_speed_or_rate_above_the_fastest_port_is_none(tmp_path, speed, rate, read):
    """2026-11-29 fuzzing: a sysfs speed of 4294967295 (u32 -1) read as 4.3 Pb/s and passed any
    floor, "up, 4294967295 Mb/s"; an IB rate of 10^9 Gb/s likewise."""
    root = tmp_path / "root"
    hca = _pci(root, "0000:0c:00.0", "mlx5_core")
    _netdev(root, hca, "ib0", type="32", speed=speed)
    _ib(root, hca, "mlx5_0", rate=rate)
    [nic] = [n for n in LinuxNics(root).nics() if n.name == "ib0"]
    [port] = nic.ib_ports
    assert (not is_na(nic.speed_mbps), not is_na(port.rate_gbit)) == (read, read)
