"""Names are data, never options or paths (issue 25): a host name from --hosts, --k8s, scontrol or
kubectl becomes one word of a launcher's argv only when it is a host name, and the fabric's --name
never leads out of the output directory. Each refusal is one line, exit 2, no traceback, and runs
nothing."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, cli
from nodeqc.core.errors import UsageError
from nodeqc.core.names import MAX_HOST, check_host, check_name, substitute
from nodeqc.fabric.kubernetes import KubernetesLauncher
from nodeqc.fabric.launchers import HostLauncher, Work
from nodeqc.fabric.scoring import Floors
from nodeqc.fabric.slurm import expand

# An ssh that does what the real one does with -oProxyCommand=CMD: runs CMD through a shell, on
# this machine. Every call is logged, so a test sees that none was made.
FAKE_SSH = """#!/bin/sh
echo "$@" >> "$FAKE_SSH_LOG"
for a in "$@"; do
  case "$a" in -oProxyCommand=*) sh -c "${a#-oProxyCommand=}" ;; esac
done
exit 1
"""

HOSTILE = 'n1,-oProxyCommand=touch${IFS}pwned'


def _fake_ssh(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ssh = bin_dir / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SSH_LOG": str(tmp_path / "ssh.log"),
           "PYTHONPATH": str(ROOT), "SLURM_JOB_ID": ""}
    return ssh, env


def test_the_fake_ssh_would_run_a_proxy_command(tmp_path):
    # The proof below means something only if this ssh runs what it is handed, as the real one does.
    ssh, env = _fake_ssh(tmp_path)
    subprocess.run([str(ssh), "-oProxyCommand=touch${IFS}pwned", "n1"], cwd=tmp_path, env={**os.environ, **env},
                   timeout=30)
    assert (tmp_path / "pwned").exists()


def test_a_host_that_is_an_option_runs_nothing_and_is_refused(tmp_path):
    work = tmp_path / "cwd"
    work.mkdir()
    _, env = _fake_ssh(tmp_path)
    p = cli("fabric", "--hosts", HOSTILE, "--launch", "ssh {host}", "--tests", "tcp", "--min-tcp-gbps", "1",
            "--rounds", "1", "--out", str(work), cwd=work, env=env)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [
        "nodeqc: --hosts -oProxyCommand=touch${IFS}pwned: starts with '-': a host name is letters, digits, '.', "
        f"'_', ':' and '-', not starting with '-', at most {MAX_HOST}"]
    assert not (work / "pwned").exists() and not (tmp_path / "ssh.log").exists()  # ssh never ran
    assert list(work.iterdir()) == []  # nor was a journal started


@pytest.mark.parametrize("hosts,shown", [
    ("n1,n'2", "n'2: not a host name"),
    ("n1,n2;id", "n2;id: not a host name"),
    ("n1,$(id)", "$(id): not a host name"),
    ("n1,-x", "-x: starts with '-'"),
    ("n1,n\x1b[2J", "n\\x1b[2J: not a host name"),
    ("n1,gpü1", "gpü1: not a host name"),
    (f"n1,{'a' * (MAX_HOST + 1)}", f"{MAX_HOST + 1} characters long"),
])
def test_bad_host_names_are_refused_in_one_line(hosts, shown, tmp_path):
    p = cli("fabric", "--hosts", hosts, "--launch", "env H={host}", "--out", str(tmp_path), env={"SLURM_JOB_ID": ""})
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"--hosts {shown}" in p.stderr or shown in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_host_file_is_checked_as_a_list_is(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("n1\n-oProxyCommand=id\n")
    p = cli("fabric", "--hosts", f"@{hosts}", "--launch", "ssh {host}", env={"SLURM_JOB_ID": ""})
    assert p.returncode == 2 and f"--hosts {hosts}:2: -oProxyCommand=id: starts with '-'" in p.stderr, p.stderr


def test_k8s_node_list_is_checked_before_kubectl_runs(tmp_path):
    p = cli("fabric", "--k8s", "n1,-n2", "--image", "nodeqc:1", env={"SLURM_JOB_ID": "", "PATH": str(tmp_path)})
    assert p.returncode == 2 and "--k8s -n2: starts with '-'" in p.stderr, p.stderr


def test_a_slurm_node_list_that_is_an_option_is_refused(tmp_path):
    p = cli("fabric", "--slurm=-oX", env={"SLURM_JOB_ID": "7"})
    assert p.returncode == 2 and "--slurm -oX: not a Slurm host list" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_a_bad_launch_template_is_a_usage_error_not_an_internal_one():
    p = cli("fabric", "--hosts", "a,b", "--launch", "ssh {host} 'x", env={"SLURM_JOB_ID": ""})
    assert p.returncode == 2 and "--launch ssh {host} 'x: cannot be split into words" in p.stderr, p.stderr


# ---------------------------------------------------------------------- the launch template


def test_the_template_is_split_before_the_host_is_put_in():
    work = Work(tests=["tcp"], seconds=1, floors=Floors(tcp_gbps=1))
    launcher = HostLauncher("sh -c 'echo {host} > out' x {host}")
    cmd = launcher.commands(("n1", "n2"), ["w"], work)[1]
    assert cmd[:5] == ["sh", "-c", "echo n2 > out", "x", "n2"] and cmd[-2:] == ["--index", "1"]


def test_the_launcher_refuses_a_bad_host_whoever_calls_it():
    work = Work(tests=["tcp"], seconds=1, floors=Floors(tcp_gbps=1))
    with pytest.raises(UsageError, match="starts with '-'"):
        HostLauncher("ssh {host}").commands(("n1", "-oProxyCommand=id"), ["w"], work)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300) | st.text(alphabet="abz09.-_:/ '\"$;{}\\\n\x00", max_size=40))
def test_any_host_is_refused_or_one_argv_word_that_is_no_option(host):
    try:
        checked = check_host(host, "--hosts")
    except UsageError as e:
        text = str(e)
        assert "\n" not in text and text.isprintable()  # one line, whatever the name held
        return
    assert checked == host and not host.startswith("-") and 0 < len(host) <= MAX_HOST
    argv = substitute(shlex.split("ssh -n {host} nodeqc"), host)
    assert argv == ["ssh", "-n", host, "nodeqc"]
    assert shlex.split(shlex.join(argv)) == argv  # what a shell would see, if one ever saw it, is the same word


# ---------------------------------------------------------------------- names from Slurm and Kubernetes


def _script(path: Path, text: str) -> str:
    path.write_text(f"#!{sys.executable}\n{text}")
    path.chmod(0o755)
    return str(path)


def test_scontrols_names_are_checked_as_a_persons_are(tmp_path):
    scontrol = _script(tmp_path / "scontrol", "print('gpu01'); print('-oProxyCommand=id')\n")
    with pytest.raises(UsageError, match=r"^--slurm gpu\[01-02\]: scontrol show hostnames gave -oProxyCommand=id: "
                                         r"starts with '-'"):
        expand("gpu[01-02]", scontrol=scontrol)


def _fake_kubectl(tmp_path: Path, nodes: list[str], pods: list[dict]) -> str:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"nodes": nodes, "pods": pods}))
    return _script(tmp_path / "kubectl", f"""import json, sys
s = json.load(open({str(state)!r}))
a = sys.argv[1:]
if a[:2] == ["get", "nodes"]:
    print(json.dumps({{"items": [{{"metadata": {{"name": n}}, "status": {{"addresses": [
        {{"type": "InternalIP", "address": "10.0.0.1"}}]}}}} for n in s["nodes"]]}}))
elif a[:2] == ["get", "pods"]:
    print(json.dumps({{"items": s["pods"]}}))
elif a[:2] == ["auth", "can-i"]:
    print("yes")
""")


def test_kubectls_node_names_are_checked(tmp_path):
    kubectl = _fake_kubectl(tmp_path, ["n1", "n2", "--kubeconfig=/tmp/x"], [])
    with pytest.raises(UsageError, match="^--k8s: kubectl get nodes gave node --kubeconfig=/tmp/x: starts with '-'"):
        KubernetesLauncher("img", kubectl=kubectl).preflight(["n1", "n2"], {})
    KubernetesLauncher("img", kubectl=_fake_kubectl(tmp_path, ["n1", "n2"], [])).preflight(["n1", "n2"], {})


def test_a_pod_on_a_node_with_a_bad_name_is_where_no_node_ran(tmp_path):
    pod = {"metadata": {"name": "p0", "annotations": {"batch.kubernetes.io/job-completion-index": "0"}},
           "spec": {"nodeName": "n1;\x1b[2Jrm"}, "status": {"phase": "Succeeded"}}
    launcher = KubernetesLauncher("img", kubectl=_fake_kubectl(tmp_path, ["n1"], [pod]))
    pods = launcher._pods("job")
    assert "n1;\x1b[2Jrm" not in pods and list(pods) == ["invalid:0"]
    assert "is not a host name" in pods["invalid:0"]["why"] and "\x1b" not in pods["invalid:0"]["why"]


# ---------------------------------------------------------------------- the fabric's --name


@pytest.mark.parametrize("name,why", [
    ("a/b", "has a path separator"),
    ("/../../x", "has a path separator"),
    ("..", "has '..'"),
    ("x..y", "has '..'"),
    ("a\\b", "has a path separator"),
    ("-rf", "starts with '-'"),
    (".hidden", "starts with '.'"),
    ("a\nb", "has control characters"),
    ("a\x1b[2Jb", "has control characters"),
    ("x" * 129, "129 characters long"),
])
def test_a_fabric_name_never_leaves_the_output_directory(name, why, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    p = cli("fabric", "--simulate", "4", "--rails", "1", f"--name={name}", "--out", str(out))
    assert p.returncode == 2 and why in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert sorted(x.name for x in tmp_path.rglob("*")) == ["out"]  # nothing written, in or out


def test_a_plain_fabric_name_is_used():
    assert check_name("rack-7_a.b c", "--name") == "rack-7_a.b c"


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200) | st.text(alphabet="ab./\\-\x00\n ", max_size=20))
def test_any_name_is_refused_or_stays_in_the_directory(name):
    try:
        check_name(name, "--name")
    except UsageError as e:
        assert "\n" not in str(e) and str(e).isprintable()
        return
    out = Path("/srv/out")
    path = out / f"fabric-{name}-20250101T000000Z-2.journal.jsonl"
    assert Path(os.path.normpath(path)).parent == out and len(path.name.encode()) <= 255
