"""The fabric's topology, read from topology.conf (or `scontrol show topology`), Kubernetes node
labels or a file, defensively: one error naming the file and line; node and switch names checked as
host names (tests/test_fabric_uplinks.py: what the fabric does with it)."""

import json
import os
import stat

import pytest

from nodeqc.core.errors import UsageError
from nodeqc.fabric.topology import Topology, expand_hostlist, from_k8s_nodes, parse_labels, parse_slurm, read

CONF = """# two spines of leaves, a core above
SwitchName=leaf1 Nodes=gpu[01-04]
SwitchName=leaf2 Nodes=gpu[05-08] LinkSpeed=100
SwitchName=leaf3 \\
    Nodes=gpu[09-12]
SwitchName=spine1 Switches=leaf[1-2]
SwitchName=spine2 Switches=leaf3
SwitchName=core Switches=spine[1-2]
"""


# ---------------------------------------------------------------------- reading it


def test_hostlists_expand_as_slurms_do():
    assert expand_hostlist("gpu[01-03,07],login1,r[1-2]-n[1-2]", "x") == [
        "gpu01", "gpu02", "gpu03", "gpu07", "login1", "r1-n1", "r1-n2", "r2-n1", "r2-n2"]
    assert expand_hostlist("n[8-10]", "x") == ["n8", "n9", "n10"]


def test_topology_conf_gives_leaves_parents_and_paths():
    t = parse_slurm(CONF, "topology.conf")
    assert t.leaf_of["gpu10"] == "leaf3" and t.parent == {"leaf1": "spine1", "leaf2": "spine1", "leaf3": "spine2",
                                                          "spine1": "core", "spine2": "core"}
    assert t.crossed("gpu01", "gpu02") == []
    assert t.crossed("gpu01", "gpu05") == ["leaf1", "leaf2"]
    assert t.crossed("gpu01", "gpu09") == ["leaf1", "spine1", "leaf3", "spine2"]
    assert t.switches() == ["leaf1", "leaf2", "leaf3", "spine1", "spine2", "core"]
    assert [t.level(s) for s in ("leaf2", "spine2", "core")] == [0, 1, 2]


@pytest.mark.parametrize("text,message", [
    ("SwitchName=a Nodes=x[1-", "t.conf:1: '[' without ']'"),
    ("SwitchName=a Nodes=x[1-3]]", "t.conf:1: ']' without '['"),
    ("SwitchName=a Nodes=n[3-1]", "t.conf:1: [3-1]: range 3-1 runs backwards"),
    ("SwitchName=a Nodes=n[a-b]", "t.conf:1: [a-b]: expected numbers and ranges"),
    ("# fine\nSwitchName=a Nodes=-oProxyCommand=x", "t.conf:2: node -oProxyCommand=x: starts with '-'"),
    ("SwitchName=a Nodes=n1;reboot", "t.conf:1: node n1;reboot: not a host name"),
    ("SwitchName=a/b Nodes=n1", "t.conf:1: switch a/b: not a host name"),
    ("Nodes=a", "t.conf:1: no SwitchName= on the line"),
    ("SwitchName=a Nodes", "t.conf:1: Nodes: expected KEY=VALUE"),
    ("SwitchName=a Colour=red", "t.conf:1: Colour: not a topology.conf key"),
    ("SwitchName=a Nodes=n1 Nodes=n2", "t.conf:1: Nodes given twice"),
    ("SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2", "t.conf:2: switch a already defined on line 1"),
    ("SwitchName=a Nodes=n1\nSwitchName=b Nodes=n[0-1]", "t.conf:2: node n1 is already under switch a"),
    ("SwitchName=a Nodes=n1\nSwitchName=b Switches=c", "t.conf:2: switch c is not defined"),
    ("SwitchName=a Nodes=n1\nSwitchName=b Switches=a\nSwitchName=c Switches=a", "t.conf:3: switch a is already under switch b"),
    ("SwitchName=a Switches=b Nodes=n1\nSwitchName=b Switches=a", "is part of a loop of switches"),
    ("# nothing\n\nSwitchName=a Switches=a", "t.conf:3: switch a lists itself"),
    ("SwitchName=s Switches=t\nSwitchName=t", "t.conf: no switch lists any node"),
    ("SwitchName=a Nodes=n[1-9999999]", "t.conf:1: [1-9999999]: range 1-9999999 runs backwards or is too long"),
    ("SwitchName=a Nodes=n[1-600000],m[1-600000]", "t.conf:1: the host list expands to more than 1048576 names"),
    # counted before they are made: these filled the memory (MemoryError) first
    ("SwitchName=a Nodes=node[0-3],x[1-999999][1-999999]", "t.conf:1: the host list expands to more than"),
    ("SwitchName=a Nodes=x[" + ",".join(["1-999999"] * 50) + "]", "t.conf:1: the host list expands to more than"),
    # a whole file's names are bounded too: eight lines of a million each ran 14 s, exit 0
    ("\n".join(f"SwitchName=s{i} Nodes=y{i}-[1-999999]" for i in range(8)), "t.conf:2: the host list expands to more "
     "than"),
    # \d took other scripts' digits: node[٠-٣] became node0..node3
    ("SwitchName=a Nodes=node[\u0660-\u0663]", "expected numbers and ranges"),
    ("SwitchName=a Nodes=node[\uff10-\uff13]", "expected numbers and ranges"),
    # a block or a switch? The NVLink domain was recorded under the switch's name
    ("BlockName=b1 SwitchName=s Nodes=n[0-3]", "t.conf:1: SwitchName= and BlockName= on one line"),
    # a vertical tab or form feed broke the line for splitlines(): the error named line 2 of a one-line file
    ("SwitchName=a Nodes=n1\vColour=red", "t.conf:1: Colour: not a topology.conf key"),
    ("SwitchName=a Nodes=n1\r\nSwitchName=b Nodes=n1\r\n", "t.conf:2: node n1 is already under switch a"),
    # a chain of 50,000 switches took minutes to walk
    ("\n".join(f"SwitchName=s{i} Switches=s{i + 1}" for i in range(50_000)) + "\nSwitchName=s50000 Nodes=n[0-3]",
     "t.conf:18: switch s17 has more than 16 tiers of switches above it"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(text, message):
    with pytest.raises(UsageError, match=None) as e:
        parse_slurm(text, "t.conf")
    assert message in str(e.value) and "\n" not in str(e.value)


def _k8s_node(name, **labels):
    return {"metadata": {"name": name, "labels": {k.replace("_", "/"): v for k, v in labels.items()}}}


def test_kubernetes_labels_give_levels_and_the_nvlink_domain():
    block, spine, zone, clique = ("network.topology.nvidia.com/block", "network.topology.nvidia.com/spine",
                                  "topology.kubernetes.io/zone", "nvidia.com/gpu.clique")
    items = [{"metadata": {"name": f"k{i}", "labels": {block: f"b{i // 2}", spine: f"s{i // 4}", zone: "z1",
                                                       clique: f"c{i // 2}.1"}}} for i in range(8)]
    t = from_k8s_nodes(items, parse_labels(""))
    assert t.leaf_of["k3"] == "b1" and t.parent["b1"] == "spine:s0" and t.parent["spine:s0"] == "zone:z1"
    assert t.nvlink["k5"] == "c2.1" and t.crossed("k0", "k5") == ["b0", "spine:s0", "b2", "spine:s1"]
    # Another rack label, no zone level
    items = [{"metadata": {"name": "k0", "labels": {"example.com/rack": "r7"}}}]
    t = from_k8s_nodes(items, parse_labels("leaf=example.com/rack,zone="))
    assert t.leaf_of == {"k0": "r7"} and t.parent == {}


def test_kubernetes_answers_are_checked():
    with pytest.raises(UsageError, match="gave no list of nodes"):
        from_k8s_nodes({"items": 1}, parse_labels(""))


def test_a_nodes_own_labels_out_of_line_leave_that_node_unplaced_not_the_run_stopped():
    """A kubelet may label its own node: one node whose labels were not label values, or put its leaf
    under another spine, stopped every `--topology k8s` run of the cluster, tested or not (the
    2026-11-28 hostile-node audit). Most of a leaf's nodes now decide its spine; the odd one out is
    unplaced, named only where it is under test."""
    block, spine = "network.topology.nvidia.com/block", "network.topology.nvidia.com/spine"
    items = [{"metadata": {"name": f"k{i}", "labels": {block: "b0", spine: "s0"}}} for i in range(3)]
    items += [{"metadata": {"name": "liar", "labels": {block: "b0", spine: "s9"}}},
              {"metadata": {"name": "odd", "labels": {block: "a b"}}},
              {"metadata": {"name": "-x", "labels": {block: "b0"}}}]
    t = from_k8s_nodes(items, parse_labels(""))
    assert t.leaf_of == {"k0": "b0", "k1": "b0", "k2": "b0"} and t.parent == {"b0": "spine:s0"}
    assert t.unplaced == {"liar": "its labels put b0 under spine:s9, most nodes of it under spine:s0",
                          "odd": "label network.topology.nvidia.com/block=a b is not a label value"}
    assert t.restrict(["k0", "k2"], "k8s").leaf_of == {"k0": "b0", "k2": "b0"}  # the liar untested: no matter
    with pytest.raises(UsageError, match=r"--topology k8s: liar: not in the topology \(no leaf switch lists it\) "
                                         r"\(liar: its labels put b0 under spine:s9, most nodes of it under spine:s0\)"):
        t.restrict(["k0", "liar"], "k8s")


def test_label_options_are_checked():
    with pytest.raises(UsageError, match="expected leaf=, spine=, zone= or nvlink="):
        parse_labels("rack=x")
    with pytest.raises(UsageError, match="is not a label key"):
        parse_labels("leaf=bad key!")


def _tool(tmp_path, name, out, rc=0):
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{out}\nEOF\nexit {rc}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_read_from_scontrol_kubectl_and_a_file(tmp_path):
    shown = ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu[01-02]\nSwitchName=s1 Level=0 LinkSpeed=1 Nodes=gpu[03-04]\n"
             "SwitchName=s2 Level=1 LinkSpeed=1 Switches=s[0-1]")
    t = read("slurm", scontrol=_tool(tmp_path, "scontrol", shown))
    assert t.leaf_of == {"gpu01": "s0", "gpu02": "s0", "gpu03": "s1", "gpu04": "s1"} and t.parent["s1"] == "s2"
    failing = tmp_path / "scontrol-flat"
    failing.write_text("#!/bin/sh\necho 'scontrol: error: topology/flat has no switches' >&2\nexit 1\n")
    failing.chmod(0o755)
    with pytest.raises(UsageError, match="scontrol show topology: scontrol: error: topology/flat has no switches"):
        read("slurm", scontrol=str(failing))
    nodes = json.dumps({"items": [_k8s_node("k0", **{"network.topology.nvidia.com_block": "b0"})]})
    assert read("k8s", kubectl=_tool(tmp_path, "kubectl", nodes)).leaf_of == {"k0": "b0"}
    # Nested past the JSON decoder's depth: an internal error (RecursionError), 2026-11-29 fuzzing.
    deep = _tool(tmp_path, "kubectl-deep", '{"items": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(UsageError, match="^--topology k8s: kubectl get nodes -o json did not answer JSON$"):
        read("k8s", kubectl=deep)
    conf = tmp_path / "topology.conf"
    conf.write_text(CONF)
    assert read(str(conf)).leaf_of["gpu12"] == "leaf3"
    conf.write_bytes(b"\xef\xbb\xbf" + CONF.encode())  # an editor's byte-order mark: "\ufeffSwitchName" was no key
    assert read(str(conf)).leaf_of["gpu12"] == "leaf3"
    with pytest.raises(UsageError, match="cannot read"):
        read(str(tmp_path / "none.conf"))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UsageError, match="--topology .*fifo"):
        read(str(tmp_path / "fifo"))


def test_a_topology_restricted_to_the_nodes_under_test():
    t = parse_slurm(CONF, "t").restrict(["gpu01", "gpu09"], "t")
    assert t.leaf_of == {"gpu01": "leaf1", "gpu09": "leaf3"} and isinstance(t, Topology)
    assert t.to_dict()["leaves"] == {"leaf1": ["gpu01"], "leaf3": ["gpu09"]}
