"""--prometheus-textfile: the verdict and key figures in the text format node_exporter's textfile
collector reads, parsed here with prometheus_client's own parser; written then renamed."""


import base64
import json
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import cli
from nodeqc.core.codes import NOT_APPLICABLE
from nodeqc.report.prometheus import render, write_textfile
from reports_for_tests import predicate


def _samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_failed_run_writes_a_textfile_that_prometheus_parses(tmp_path):
    prom = tmp_path / "textfile" / "nodeqc.prom"
    prom.parent.mkdir()
    prom.write_text("# an older run's file is replaced whole\nnodeqc_passed 1\n")
    began = time.monotonic()
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--sample-hz", "8",
            "--inject", "gpu0:pcie_width=8", "--out", str(tmp_path / "r"), "--prometheus-textfile", str(prom))
    wall = time.monotonic() - began
    assert p.returncode == 1, p.stderr
    report = p.stdout.strip().splitlines()[-1]
    pred = json.loads(base64.b64decode(json.loads(Path(report).read_text())["payload"]))["predicate"]
    samples = _samples(prom.read_text())
    assert samples[("nodeqc_passed", ())] == 0 and samples[("nodeqc_qualified", ())] == 0
    assert samples[("nodeqc_partial", ())] == 0
    failed = [k for k in samples if k[0] == "nodeqc_check_failed"]
    # A GPU's failures carry its serial and PCI bus id, as the report lists the GPU.
    gpu0 = next(g for g in pred["gpus"] if g["subject"] == "gpu0")
    assert gpu0["serial"] == "SIM-H100-0001-G0" and gpu0["bus_id"]
    assert sorted(failed) == [("nodeqc_check_failed", (("check", c), ("code", "PCIE_WIDTH"),
                                                       ("gpu_serial", gpu0["serial"]), ("pci_bus_id", gpu0["bus_id"]),
                                                       ("subject", "gpu0")))
                              for c in ("health.pcie_link", "stress.pcie_bandwidth")]
    # The duration is the wall time of the run, not the simulated node's compressed seconds.
    duration = samples[("nodeqc_run_duration_seconds", ())]
    assert pred["duration_s"] > wall + 2  # the simulated clock ran faster: the old figure was wrong
    assert duration <= wall + 1
    # Not applicable (page retirement on an H100, one GPU's peer copies) is counted apart from skips.
    na = sum(1 for c in pred["checks"] if c["verdict"] == "skip" and c["code"] in NOT_APPLICABLE)
    assert na and samples[("nodeqc_checks", (("verdict", "n/a"),))] == na
    assert samples[("nodeqc_checks", (("verdict", "skip"),))] == pred["summary"]["counts"]["skip"] - na
    width = {k: v for k, v in samples.items() if k[0] == "nodeqc_check_value" and ("check", "health.temperature") in k[1]}
    (temp,) = width.values()
    assert 40 < temp < 90 and ("unit", "C") in next(iter(width))[1]
    assert samples[("nodeqc_checks", (("verdict", "fail"),))] == 2
    info = next(k for k in samples if k[0] == "nodeqc_info")
    assert ("report", report) in info[1] and ("simulated", "true") in info[1] and ("serial", "SIM-H100-0001") in info[1]
    assert samples[("nodeqc_last_run_timestamp_seconds", ())] > 1.7e9
    assert [f.name for f in prom.parent.iterdir()] == ["nodeqc.prom"]  # no temporary file left behind


def test_qualified_only_for_a_complete_full_real_pass_and_labels_are_escaped(tmp_path):
    pred = predicate("SN-1", "PASS", hostname='odd "host"\\name\nline')
    samples = _samples(render(pred, "/r/x.report.json"))
    assert samples[("nodeqc_qualified", ())] == 1 and samples[("nodeqc_passed", ())] == 1
    info = next(k for k in samples if k[0] == "nodeqc_info")
    assert ("hostname", 'odd "host"\\name\nline') in info[1]
    partial = dict(pred, partial={"only": ["host"], "skip": [], "checks": []})
    assert _samples(render(partial, "r"))[("nodeqc_qualified", ())] == 0
    path = tmp_path / "n.prom"
    text = render(pred, "r")
    write_textfile(path, text)
    assert path.read_text() == text and path.stat().st_mode & 0o777 == 0o644  # node_exporter may run as another user


@pytest.mark.parametrize("name, message", [
    ("nodeqc.txt", "the name must end in .prom"),
    ("missing/nodeqc.prom", "is not a writable directory"),
])
def test_bad_textfile_path_is_one_line_and_exit_2(tmp_path, name, message):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--prometheus-textfile", str(tmp_path / name))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr


def _check(name, subject, verdict, code=None):
    return {"name": name, "subject": subject, "verdict": verdict, "code": code, "message": "m", "key": None,
            "values": {}, "thresholds": [], "evidence": {}}


def test_not_applicable_is_counted_apart_from_checks_not_run():
    pred = predicate("SN-1", "PASS")
    pred["checks"] += [_check("health.retired_pages", "gpu0", "skip", "PAGE_RETIREMENT_NA"),
                       _check("stress.p2p", "node", "skip", "ONE_GPU_NA"),
                       _check("nic.tcp", "nic0", "skip", "NIC_NO_PEER")]
    pred["summary"]["counts"] = {"pass": 2, "warn": 0, "fail": 0, "skip": 3, "error": 0}
    samples = _samples(render(pred, "r"))
    counts = {dict(k[1])["verdict"]: v for k, v in samples.items() if k[0] == "nodeqc_checks"}
    assert counts == {"pass": 2, "warn": 0, "fail": 0, "skip": 1, "n/a": 2, "error": 0}


def test_duration_is_the_wall_time_between_the_stamps_also_when_simulated():
    pred = dict(predicate("SN-1", "PASS"), simulated=True, duration_s=961.25,
                started_at="2026-11-01T10:00:00Z", finished_at="2026-11-01T10:01:36Z")
    assert _samples(render(pred, "r"))[("nodeqc_run_duration_seconds", ())] == 96
    # A report without its start stamp: a real run's own clock is the wall clock; a simulated one's is not.
    unstamped = dict(pred, started_at=None)
    assert ("nodeqc_run_duration_seconds", ()) not in _samples(render(unstamped, "r"))
    assert _samples(render(dict(unstamped, simulated=False), "r"))[("nodeqc_run_duration_seconds", ())] == 961.25


def test_failed_gpu_labels_are_escaped_and_only_for_gpus():
    pred = predicate("SN-1", "FAIL")
    pred["gpus"][0].update(serial='odd "serial"\\x\nline', bus_id="0000:01:00.0")
    pred["checks"].append(_check("host.memory_errors", "node", "fail", "HOST_MEMORY_ERRORS"))
    pred["checks"].append(_check("health.xid", "gpu7", "error", "XID"))  # a GPU the report does not list
    samples = _samples(render(pred, "r"))
    failed = {dict(k[1])["subject"]: dict(k[1]) for k in samples if k[0] == "nodeqc_check_failed"}
    assert failed["gpu0"]["gpu_serial"] == 'odd "serial"\\x\nline' and failed["gpu0"]["pci_bus_id"] == "0000:01:00.0"
    assert "gpu_serial" not in failed["node"] and "pci_bus_id" not in failed["node"]
    assert "gpu_serial" not in failed["gpu7"]


def test_a_textfile_in_an_unwritable_directory_fails_before_the_run_with_its_path_once(tmp_path, monkeypatch):
    """As root, os.access says /proc is writable: the pre-check passed, the whole run went by, then
    the write failed with the path said twice. The pre-check now creates a file there, as the write will."""
    import os

    from nodeqc.core.errors import UsageError
    from nodeqc.report.prometheus import check_path

    target = Path("/proc/nodeqc-test.prom")
    monkeypatch.setattr(os, "access", lambda *a, **k: True)  # what root is told
    with pytest.raises(UsageError, match=r"^--prometheus-textfile /proc/nodeqc-test\.prom: cannot write in /proc"):
        check_path(target)
    with pytest.raises(UsageError) as e:
        write_textfile(target, "x 1\n")
    assert str(e.value).count(str(target)) == 1, e.value
    # A writable directory passes and is left as it was.
    check_path(tmp_path / "n.prom")
    assert list(tmp_path.iterdir()) == []
    # End to end: refused at once (no run), one line.
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--prometheus-textfile", str(target),
            "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "cannot write in /proc" in p.stderr or "is not a writable directory" in p.stderr  # root or not
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
