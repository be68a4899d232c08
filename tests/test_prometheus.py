"""--prometheus-textfile: the verdict and key figures in the text format node_exporter's textfile
collector reads, parsed here with prometheus_client's own parser; written then renamed."""


import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import cli
from nodeqc.report.prometheus import render, write_textfile
from reports_for_tests import predicate


def _samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_failed_run_writes_a_textfile_that_prometheus_parses(tmp_path):
    prom = tmp_path / "textfile" / "nodeqc.prom"
    prom.parent.mkdir()
    prom.write_text("# an older run's file is replaced whole\nnodeqc_passed 1\n")
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--sample-hz", "8",
            "--inject", "gpu0:pcie_width=8", "--out", str(tmp_path / "r"), "--prometheus-textfile", str(prom))
    assert p.returncode == 1, p.stderr
    report = p.stdout.strip().splitlines()[-1]
    samples = _samples(prom.read_text())
    assert samples[("nodeqc_passed", ())] == 0 and samples[("nodeqc_qualified", ())] == 0
    assert samples[("nodeqc_partial", ())] == 0
    failed = [k for k in samples if k[0] == "nodeqc_check_failed"]
    assert sorted(failed) == [("nodeqc_check_failed", (("check", c), ("code", "PCIE_WIDTH"), ("subject", "gpu0")))
                              for c in ("health.pcie_link", "stress.pcie_bandwidth")]
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
