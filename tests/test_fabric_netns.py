"""nodeqc fabric with real traffic: several network namespaces joined through a bridge stand in for
nodes, the host launcher runs each pair's work in them (`ip netns exec NS nodeqc fabric worker`),
iperf3 measures both directions, and a namespace whose link is throttled with tc is named as the
bad node while its peers pass.

Skipped, with the reason, where namespaces cannot be made (not root) or iperf3 / iproute2 are
missing (`.ci/run` installs them). Traffic stays on TEST-NET-3 addresses inside the namespaces.
"""

import base64
import json
import sys

import pytest

from conftest import cli
from netns import Fabric, unavailable

pytestmark = pytest.mark.netns

# A veth through a bridge carries several Gb/s even with two pairs at once on a busy 2-core machine;
# the throttled node gets 100 Mb/s. The floor sits between: 0.5 Gb/s per direction.
FLOOR_GBPS = "0.5"


@pytest.fixture(scope="module")
def fabric():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with Fabric(4) as f:
        yield f


def run_fabric(fabric, tmp_path, *extra):
    args = ["fabric", "--hosts", ",".join(fabric.nodes), "--launch", "ip netns exec {host}",
            "--nodeqc", f"{sys.executable} -m nodeqc", "--tests", "tcp", "--seconds", "1",
            "--min-tcp-gbps", FLOOR_GBPS, "--rounds", "3", "--seed", "11", "--out", str(tmp_path)]
    for ns, addr in fabric.addresses.items():
        args += ["--address", f"{ns}={addr}"]
    p = cli(*args, *extra, timeout=300)
    path = p.stdout.strip().splitlines()[-1]
    pred = json.loads(base64.b64decode(json.loads(open(path).read())["payload"]))["predicate"]
    return p, pred


def test_a_throttled_namespace_is_named_the_bad_node(fabric, tmp_path):
    fabric.throttle(2, "100mbit")
    p, pred = run_fabric(fabric, tmp_path)
    bad = fabric.nodes[2]
    assert p.returncode == 1, p.stderr
    assert pred["fabric"]["bad"]["nodes"] == [bad], p.stderr
    assert not pred["fabric"]["bad"]["links"] and not pred["fabric"]["bad"]["inconclusive"]
    verdicts = {c["subject"]: c["verdict"] for c in pred["checks"] if c["name"] == "fabric.node"}
    assert verdicts == {n: ("fail" if n == bad else "pass") for n in fabric.nodes}
    # Every pair with the throttled node measured real traffic below the floor, both ways.
    mine = [r for r in pred["pairs"] if bad in (r["a"], r["b"])]
    assert len(mine) == 3
    for r in mine:
        assert r["failed"] == ["tcp"] and all(r["rails"]["tcp"][d] < 0.2 for d in ("a>b", "b>a")), r
    others = [r for r in pred["pairs"] if bad not in (r["a"], r["b"])]
    assert others and all(r["rails"]["tcp"][d] > float(FLOOR_GBPS) for r in others for d in ("a>b", "b>a"))
    assert f"FAIL  fabric.node {bad}" in p.stderr
