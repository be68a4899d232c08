"""The --nic-peer syntax (and the profile's [nic] peers): every form parses; mistakes are one clear
line that never reaches a tool's command line."""

import pytest

from nodeqc.core.errors import UsageError
from nodeqc.spec.peers import Peer, parse_peer, parse_peers
from nodeqc.spec.profile import load_profile


@pytest.mark.parametrize("text, peer", [
    ("10.0.0.2", Peer("10.0.0.2")),
    ("node7:5202", Peer("node7", 5202)),
    ("eth0=10.0.0.2", Peer("10.0.0.2", None, "eth0")),
    ("ibp12s0=node7.example.com:6000", Peer("node7.example.com", 6000, "ibp12s0")),
    ("mlx5_0=peer", Peer("peer", None, "mlx5_0")),
    ("fd00::2", Peer("fd00::2")),
    ("[fd00::2]:5202", Peer("fd00::2", 5202)),
])
def test_valid_peers(text, peer):
    assert parse_peer(text) == peer


@pytest.mark.parametrize("text, message", [
    ("", "no host"),
    ("eth0=", "no host"),
    ("=host", "'' is not an interface name"),
    ("eth 0=host", "'eth 0' is not an interface name"),
    ("host:0", "port '0': expected 1-65535"),
    ("host:70000", "port '70000': expected 1-65535"),
    ("host:http", "port 'http': expected 1-65535"),
    ("bad host", "'bad host' is not a host name or IP address"),
    ("-rf", "'-rf' is not a host name or IP address"),  # never an option for the tool
    ("[fd00::2]x", "expected [IPV6]:PORT"),
])
def test_invalid_peers_are_one_clear_line(text, message):
    with pytest.raises(UsageError) as e:
        parse_peer(text)
    assert str(e.value).startswith(f"--nic-peer {text}: ") and message in str(e.value)
    assert "\n" not in str(e.value)


def test_a_nic_given_two_peers_is_an_error():
    with pytest.raises(UsageError, match="--nic-peer: NIC eth0 is given more than one peer"):
        parse_peers(["eth0=a", "eth0=b"])


def test_two_nics_given_one_server_is_an_error_and_other_ports_are_not():
    with pytest.raises(UsageError) as e:
        parse_peers(["eth0=a:6000", "b", "eth1=a:6000"])
    assert str(e.value) == ("--nic-peer: eth0=a:6000 and eth1=a:6000: one iperf3 server serves one test at a "
                            "time; give each NIC its own port")
    assert [str(p) for p in parse_peers(["eth0=a:6000", "eth1=a:6001", "eth2=b:6000", "a:6000", "eth3=a"])] == \
        ["eth0=a:6000", "eth1=a:6001", "eth2=b:6000", "a:6000", "eth3=a"]


def test_peers_in_a_profile_are_checked_when_it_loads(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text('description = "x"\n[nic]\npeers = ["node7", "eth0=node8:99999"]\n')
    with pytest.raises(UsageError, match=r"p.toml: \[nic\] peers: eth0=node8:99999: port '99999'"):
        load_profile(str(p))
