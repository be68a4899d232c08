"""Fleet statistics: the outlier rule on a generated archive of 1,000 nodes with planted outliers,
`nodeqc fleet` with its CSV and HTML, expiry (valid_until, history --expired, Prometheus, the k8s
gate)."""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodeqc.archive.fleet import FigureCache, expired_entries, extract, fleet
from nodeqc.archive.index import Archive
from nodeqc.checks.fleet import FleetFigure, distributions, outliers
from nodeqc.core.model import Verdict
from nodeqc.report.keys import load_signer

from conftest import cli
from reports_for_tests import file_report, predicate

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
MODEL = "NVIDIA H100 80GB HBM3"
# Planted: node -> (gpu, factor on its bf16 rate). 0.85 is 15% below the median, 0.93 only 7%.
PLANTED = {"SN00017": (3, 0.85), "SN00444": (0, 0.80), "SN00901": (7, 0.88)}
NEAR = {"SN00100": (2, 0.93)}


def fleet_predicate(n: int, rng: random.Random, finished: datetime) -> dict:
    serial = f"SN{n:05d}"
    pred = predicate(serial, finished_at=finished.strftime("%Y-%m-%dT%H:%M:%SZ"))
    pred["gpus"] = [{"subject": f"gpu{k}", "name": MODEL, "serial": f"{serial}-G{k}"} for k in range(8)]
    checks = []
    for k in range(8):
        # Healthy spread: about 1% around 760 TFLOP/s (shared/measurements: 1% run to run).
        bf16 = 760 * rng.gauss(1.0, 0.01)
        hbm = 3000 * rng.gauss(1.0, 0.01)
        for table in (PLANTED, NEAR):
            if serial in table and table[serial][0] == k:
                bf16 *= table[serial][1]
        checks.append({"name": "stress.burn", "subject": f"gpu{k}", "verdict": "pass", "code": None, "message": "",
                       "key": "bf16_tflops", "thresholds": [], "evidence": {},
                       "values": {"bf16_tflops": {"value": round(bf16, 1), "unit": "TFLOP/s"},
                                  "power_w": {"value": 650.0, "unit": "W"}}})
        checks.append({"name": "stress.hbm_bandwidth", "subject": f"gpu{k}", "verdict": "pass", "code": None,
                       "message": "", "key": "copy_gbps", "thresholds": [], "evidence": {},
                       "values": {"copy_gbps": {"value": round(hbm, 1), "unit": "GB/s"}}})
    checks.append({"name": "stress.nccl", "subject": "node", "verdict": "pass", "code": None, "message": "",
                   "key": "busbw_gbps", "thresholds": [], "evidence": {},
                   "values": {"busbw_gbps": {"value": round(360 * rng.gauss(1.0, 0.01) * (0.7 if n == 555 else 1), 1),
                                             "unit": "GB/s"}}})
    pred["checks"] = checks
    pred["valid_until"] = (finished + timedelta(days=90)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return pred


@pytest.fixture(scope="module")
def archive_1000(tmp_path_factory) -> Path:
    """1,000 nodes; some also have an older report with a stale, far lower figure (only the newest counts)."""
    import os

    home = tmp_path_factory.mktemp("fleet-home")
    old = {k: os.environ.get(k) for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")}
    os.environ.update({"XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(home / "cache"),
                       "XDG_DATA_HOME": str(home / "data")})
    try:
        root = home / "archive"
        signer = load_signer(None)
        rng = random.Random(17)
        for n in range(1000):
            when = NOW - timedelta(days=1, minutes=n)
            if n % 100 == 0 or n == 17:
                older = fleet_predicate(n, random.Random(n), when - timedelta(days=200))
                older["checks"][0]["values"]["bf16_tflops"]["value"] = 100.0  # stale: must not count
                file_report(root, older, signer)
            file_report(root, fleet_predicate(n, rng, when), signer)
        yield root
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _fig(node: str, value: float, measure: str = "stress.burn:bf16_tflops", unit: str = "TFLOP/s") -> FleetFigure:
    return FleetFigure(node, "gpu0", MODEL, measure, value, unit)


def test_rule_on_small_fleets():
    figs = [_fig(f"n{i}", 760 + i % 3) for i in range(20)] + [_fig("slow", 640)]
    found, dists = outliers(figs, outlier_pct=10, min_fleet=10)
    assert [o.figure.node for o in found] == ["slow"]
    o = found[0]
    assert o.median == 761 and 15.8 < o.off_pct < 16 and o.percentile == pytest.approx(100 * 0.5 / 21, abs=0.1)
    assert "below the fleet median 761" in o.describe() and "percentile" in o.describe()
    # Too few nodes: nobody is an outlier.
    assert outliers(figs[:5] + [figs[-1]], 10, 10)[0] == []
    # Lower is better for latencies: an outlier is above the median.
    lat = [_fig(f"n{i}", 2.2, "stress.p2p:latency_us", "us") for i in range(12)] + [_fig("far", 3.0, "stress.p2p:latency_us", "us")]
    found, _ = outliers(lat, 10, 10)
    assert [o.figure.node for o in found] == ["far"] and "above" in found[0].describe()
    d = distributions(figs)[(MODEL, "stress.burn:bf16_tflops")]
    assert d.count == 21 and d.nodes == 21 and d.p10 <= d.median <= d.p90


def test_extract_takes_rates_not_watts_and_skus():
    pred = fleet_predicate(1, random.Random(1), NOW)
    got = extract(pred)
    measures = {f[2] for f in got["figures"]}
    assert measures == {"stress.burn:bf16_tflops", "stress.hbm_bandwidth:copy_gbps", "stress.nccl:busbw_gbps"}
    assert got["node_sku"] == f"8x {MODEL}" and got["valid_until"] == pred["valid_until"]


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_extract_leaves_out_figures_that_are_no_number(value):
    """A report is the node's input: json.loads takes Infinity and NaN, and one Infinity scaled the
    fleet page's chart into an OverflowError for the whole fleet (the 2026-11-28 hostile-node audit)."""
    pred = fleet_predicate(1, random.Random(1), NOW)
    burn = next(c for c in pred["checks"] if c["name"] == "stress.burn" and c["subject"] == "gpu0")
    burn["values"]["bf16_tflops"]["value"] = value
    figures = extract(json.loads(json.dumps(pred)))["figures"]
    assert ["gpu0", MODEL, "stress.burn:bf16_tflops"] not in [f[:3] for f in figures]
    assert ["gpu1", MODEL, "stress.burn:bf16_tflops"] in [f[:3] for f in figures]


@pytest.mark.slow
def test_planted_outliers_found_in_1000_nodes(archive_1000, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(archive_1000.parent / "config"))  # the key that signed them
    archive = Archive(archive_1000)
    entries = archive.reports()
    assert len(entries) == 1011 and not archive.skipped()
    view = fleet(entries, outlier_pct=10, min_fleet=10, now=NOW, cache=FigureCache(archive_1000.parent / "c.sqlite3"))
    assert len(view.rows) == 1000
    found = {(o.figure.node, o.figure.subject, o.figure.measure) for o in view.outliers}
    expected = {(s, f"gpu{g}", "stress.burn:bf16_tflops") for s, (g, _) in PLANTED.items()}
    expected.add(("SN00555", "node", "stress.nccl:busbw_gbps"))
    assert found == expected  # all planted, nothing else: not the 7% one, not a healthy one, not stale reports
    assert [o.figure.node for o in view.outliers] == ["SN00555", "SN00444", "SN00017", "SN00901"]  # worst first
    assert view.outliers[1].percentile < 0.1 and 19 < view.outliers[1].off_pct < 21
    d = view.distributions[(MODEL, "stress.burn:bf16_tflops")]
    assert d.nodes == 1000 and 755 < d.median < 765
    # Rows: problems first (the four outlier nodes), newest first within them.
    top = [r.node for r in view.rows[:4]]
    assert set(top) == {"SN00017", "SN00444", "SN00555", "SN00901"}
    assert top == sorted(top)  # n smaller finished later: newest first
    # Cached: a second pass reads no report file.
    again = fleet(entries, 10, 10, now=NOW, cache=FigureCache(archive_1000.parent / "c.sqlite3"))
    assert [o.figure for o in again.outliers] == [o.figure for o in view.outliers]
    # Expiry: 90 days from a day ago; in 100 days all have expired.
    assert expired_entries(entries, now=NOW) == []
    assert len(expired_entries(entries, now=NOW + timedelta(days=100))) == 1000


@pytest.mark.slow
def test_fleet_command_csv_and_html(archive_1000, tmp_path):
    out_csv, out_html = tmp_path / "fleet.csv", tmp_path / "fleet.html"
    env = {"XDG_CONFIG_HOME": str(archive_1000.parent / "config"), "XDG_CACHE_HOME": str(archive_1000.parent / "cache")}
    p = cli("fleet", "--archive", str(archive_1000), "--csv", str(out_csv), "--html", str(out_html), "--rows", "6", env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("NODE") and len(lines) == 7
    assert {ln.split()[0] for ln in lines[1:5]} == {"SN00017", "SN00444", "SN00555", "SN00901"}
    assert "1000 node(s), 4 with problems, 4 outlier figure(s)" in p.stderr
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert len(rows) == 1000 and rows[0]["problems"].startswith("1 outlier")
    page = out_html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "SN00444" in page
    # Self-contained, no network: one inline script, nothing with a src, nothing fetched.
    assert page.count("<script") == 1 and not re.search(r"src=|href=\"http|@import|url\(", page)
    assert len(page.encode()) < 1_500_000  # 1,000 nodes, 8,000 GPUs: dots one per pixel
    strict = cli("fleet", "--archive", str(archive_1000), "--outlier-pct", "5", env=env)
    assert "SN00100" in strict.stdout  # the 7% one at a 5% distance
    bad = cli("fleet", "--archive", str(archive_1000), "--outlier-pct", "0", env=env)
    assert bad.returncode == 2 and "--outlier-pct" in bad.stderr


def test_history_expired_and_valid_until_in_reports(tmp_path):
    signer = load_signer(None)
    root = tmp_path / "archive"
    past = fleet_predicate(1, random.Random(1), datetime(2026, 1, 1, tzinfo=timezone.utc))  # valid until April
    future = fleet_predicate(2, random.Random(2), datetime.now(timezone.utc) - timedelta(days=1))
    never = fleet_predicate(3, random.Random(3), datetime(2026, 1, 1, tzinfo=timezone.utc))
    never.pop("valid_until")
    for pred in (past, future, never):
        file_report(root, pred, signer)
    p = cli("history", "--archive", str(root), "--expired")
    assert p.returncode == 0, p.stderr
    assert "SN00001" in p.stdout and "SN00002" not in p.stdout and "SN00003" not in p.stdout


@pytest.mark.slow
def test_run_carries_valid_until_and_prometheus_exposes_it(tmp_path):
    import base64

    prof = tmp_path / "p.toml"
    prof.write_text('description = "x"\nextends = "h100"\nvalid_days = 30\n')
    prom = tmp_path / "nodeqc.prom"
    p = cli("--headless", "--profile", str(prof), "--simulate", "h100", "--quick", "--sample-hz", "8",
            "--out", str(tmp_path / "out"), "--prometheus-textfile", str(prom))
    assert p.returncode == 0, p.stderr
    report = Path(p.stdout.strip().splitlines()[-1])
    pred = json.loads(base64.b64decode(json.loads(report.read_text())["payload"]))["predicate"]
    until = datetime.fromisoformat(pred["valid_until"].replace("Z", "+00:00"))
    assert timedelta(days=29, hours=23) < until - datetime.now(timezone.utc) <= timedelta(days=30)
    text = prom.read_text()
    m = re.search(r"^nodeqc_valid_until_timestamp_seconds (\S+)$", text, re.M)
    assert m and abs(float(m.group(1)) - until.timestamp()) < 1
    partial = cli("--headless", "--profile", str(prof), "--simulate", "h100", "--quick", "--only", "host",
                  "--out", str(tmp_path / "out2"))
    ppred = json.loads(base64.b64decode(json.loads(Path(partial.stdout.strip().splitlines()[-1]).read_text())["payload"]))
    assert ppred["predicate"]["valid_until"] is None  # a partial run is no qualification: no expiry


def test_k8s_gate_labels_when_the_qualification_expires(tmp_path):
    """node_gate.py reads valid_until from the report it is given and labels the node with the date."""
    import base64
    import importlib.util

    spec = importlib.util.spec_from_file_location("node_gate", Path(__file__).resolve().parent.parent / "packaging/k8s/node_gate.py")
    gate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gate)
    report = tmp_path / "x.report.json"
    payload = {"predicate": {"valid_until": "2027-02-21T10:00:00Z"}}
    report.write_text(json.dumps({"payload": base64.b64encode(json.dumps(payload).encode()).decode()}))
    assert gate.valid_until(str(report)) == "2027-02-21T10:00:00Z"
    assert gate.valid_until(str(tmp_path / "absent")) is None
    report.write_text("{not json")
    assert gate.valid_until(str(report)) is None
    sent = []
    gate.call = lambda method, path, body=None: sent.append((method, body)) or {"metadata": {"resourceVersion": "1"}, "spec": {}}
    report.write_text(json.dumps({"payload": base64.b64encode(json.dumps(payload).encode()).decode()}))
    gate.gate("n1", 0, str(report))
    labels = sent[-1][1]["metadata"]["labels"]
    assert labels["nodeqc.dev/valid-until"] == "2027-02-21"
    assert sent[-1][1]["metadata"]["annotations"]["nodeqc.dev/valid-until"] == "2027-02-21T10:00:00Z"
    gate.gate("n1", 1, str(report))  # a failed run: no validity, the label is removed
    assert sent[-1][1]["metadata"]["labels"]["nodeqc.dev/valid-until"] is None


def test_a_run_is_judged_against_its_fleet():
    from nodeqc.checks.fleet import judge_run

    fleet_figs = [_fig(f"n{i}", 760 + i % 5) for i in range(12)]
    own = [FleetFigure("me", "gpu0", MODEL, "stress.burn:bf16_tflops", 761, "TFLOP/s"),
           FleetFigure("me", "gpu3", MODEL, "stress.burn:bf16_tflops", 700, "TFLOP/s"),
           FleetFigure("me", "gpu3", "NVIDIA H200", "stress.burn:bf16_tflops", 10, "TFLOP/s")]  # no fleet of its SKU
    results = judge_run(own, fleet_figs, outlier_pct=5, min_fleet=10)
    [warn] = results
    assert (warn.name, warn.subject, warn.verdict, warn.code) == ("fleet.outlier", "gpu3", Verdict.WARN, "FLEET_OUTLIER")
    assert "8.1% below the fleet median 761.5" in warn.message and warn.values["percentile"].value == 0.0
    ok = judge_run(own[:1], fleet_figs, 5, 10)
    assert [(r.subject, r.verdict) for r in ok] == [("node", Verdict.PASS)]
    assert judge_run(own, fleet_figs[:5], 5, 10) == []  # too small a fleet: no verdict at all


@pytest.mark.slow
def test_run_warns_as_a_fleet_outlier(tmp_path):
    """Twelve simulated hgx-h100 nodes in the archive; a run whose gpu3 computes at 92% warns."""
    signer = load_signer(None)
    root = tmp_path / "archive"
    for n in range(12):
        pred = fleet_predicate(n, random.Random(n), datetime.now(timezone.utc) - timedelta(hours=n + 1))
        pred["simulated"] = True
        for c in pred["checks"]:
            if c["name"] == "stress.burn":
                c["values"]["bf16_tflops"]["value"] = 760.0 + n % 3  # the simulated node's healthy rate
        file_report(root, pred, signer)
    prof = tmp_path / "p.toml"
    prof.write_text('description = "x"\nextends = "hgx-h100"\n[fleet]\noutlier_pct = 5\n')
    p = cli("--headless", "--profile", str(prof), "--simulate", "hgx-h100", "--quick", "--sample-hz", "8",
            "--inject", "gpu3:slow=0.92", "--archive", str(root), "--only", "stress.burn,fleet")
    assert p.returncode == 0, p.stderr  # a warning, not a failure
    assert re.search(r"WARN\s+fleet\.outlier\s+gpu3 .*bf16 rate .* below the fleet median 761", p.stderr), p.stderr
    assert "[FLEET_OUTLIER]" in p.stderr


@st.composite
def _figure_sets(draw):
    """Figures of a few SKUs and measures (a measure keeps one unit), values near a common level with
    a few far off either way, some equal."""
    from nodeqc.checks.fleet import FleetFigure

    units = {"stress.burn:bf16_tflops": "TFLOP/s", "stress.hbm_bandwidth:copy_gbps": "GB/s", "stress.p2p:latency_us": "us"}
    out = []
    for n in range(draw(st.integers(0, 30))):
        measure = draw(st.sampled_from(sorted(units)))
        value = draw(st.sampled_from([100.0, 100.0, 99.0, 101.5, 88.0, 89.9, 90.0, 112.0, 0.0]) | st.floats(0, 200))
        out.append(FleetFigure(f"n{draw(st.integers(0, 14))}", f"gpu{n % 8}", draw(st.sampled_from(["H100", "H200"])),
                          measure, value, units[measure]))
    return out


@given(_figure_sets(), st.sampled_from([0.0, 5.0, 10.0]), st.integers(1, 4))
@settings(max_examples=300, deadline=None)
def test_outliers_are_what_comparing_every_figure_with_its_median_finds(figures, pct, min_fleet):
    """checks.fleet.outliers passes over a SKU's measure whose extremes are within the limit; the
    answer must be the same as comparing each figure with its fleet's median, worst first."""
    from nodeqc.checks.fleet import distributions, outliers

    dists = distributions(figures)
    expected = []
    for f in figures:
        d = dists[(f.sku, f.measure)]
        if d.nodes < min_fleet or d.median <= 0:
            continue
        off = (d.median - f.value) / d.median * 100 if f.unit != "us" else (f.value - d.median) / d.median * 100
        if off > pct:
            expected.append((f, round(off, 2)))
    expected.sort(key=lambda x: -x[1])
    found, _ = outliers(figures, pct, min_fleet)
    assert [(o.figure, o.off_pct) for o in found] == expected


# ---------------------------------------------------------------- the rule at its edges (issue 18 §5: mutation survivors)

def test_distribution_in_full():
    figs = [FleetFigure(f"n{i // 2}", f"gpu{i % 2}", MODEL, "stress.burn:bf16_tflops", v, "TFLOP/s")
            for i, v in enumerate([10.0, 14.0, 11.0, 13.0, 12.0, 30.0])]
    d = distributions(figs)[(MODEL, "stress.burn:bf16_tflops")]
    assert (d.sku, d.measure, d.unit, d.count, d.nodes) == (MODEL, "stress.burn:bf16_tflops", "TFLOP/s", 6, 3)
    # Each node one voice, its median (12, 12, 21): one node's many GPUs cannot set the fleet's.
    assert d.values == (10.0, 11.0, 12.0, 13.0, 14.0, 30.0) and d.node_medians == (12.0, 12.0, 21.0) and d.median == 12.0
    assert d.mad == 0.0  # |m - 12|: 0 0 9
    assert (d.p10, d.p90) == (12.0, 19.2)  # numpy.percentile(node_medians, [10, 90]) (linear, "inclusive")
    assert d.percentile(12.0) == 33.3 and d.percentile(9) == 0.0 and d.percentile(31) == 100.0
    one = distributions([_fig("n0", 7.0)])[(MODEL, "stress.burn:bf16_tflops")]
    assert (one.median, one.mad, one.p10, one.p90, one.count) == (7.0, 0.0, 7.0, 7.0, 1)


def test_one_node_of_many_fast_gpus_does_not_make_the_fleet_its_outliers():
    """The 2026-11-29 fuzzing: one report claiming 200 GPUs twice as fast set the median of the GPUs'
    figures and made every one of ten honest nodes an outlier (and would have warned in their runs)."""
    gpu = lambda node, value, g: FleetFigure(node, f"gpu{g}", MODEL, "stress.burn:bf16_tflops", value, "TFLOP/s")  # noqa: E731
    honest = [gpu(f"n{i}", 100.0 + i % 3, g) for i in range(10) for g in range(8)]
    liar = [gpu("liar", 200.0, g) for g in range(200)]
    found, dists = outliers(honest + liar, 10.0, 10)
    assert dists[(MODEL, "stress.burn:bf16_tflops")].median == 101.0
    assert {o.figure.node for o in found} == set()  # the liar is fast, not an outlier below
    slow = [gpu("slow", 80.0, g) for g in range(8)]
    found, _ = outliers(honest + liar + slow, 10.0, 10)
    assert {o.figure.node for o in found} == {"slow"}


def test_percentile_counts_ties_half():
    d = distributions([_fig(f"n{i}", v) for i, v in enumerate([1, 2, 2, 3])])[(MODEL, "stress.burn:bf16_tflops")]
    assert d.percentile(2) == 50.0 and d.percentile(1) == 12.5 and d.percentile(3) == 87.5
    d = distributions([_fig(f"n{i}", v) for i, v in enumerate([1, 2, 3])])[(MODEL, "stress.burn:bf16_tflops")]
    assert d.percentile(1) == 16.7  # rounded to one place


def test_outlier_exactly_at_and_just_past_the_limit():
    base = [_fig(f"n{i}", 100.0) for i in range(11)]
    at = outliers(base + [_fig("at", 90.0)], outlier_pct=10, min_fleet=10)[0]
    assert at == []  # exactly 10% below: not beyond it
    past = outliers(base + [_fig("past", 89.99)], outlier_pct=10, min_fleet=10)[0]
    assert [(o.figure.node, o.median, o.off_pct) for o in past] == [("past", 100.0, 10.01)]
    # a fleet of exactly min_fleet nodes is judged; one fewer is not
    assert [o.figure.node for o in outliers(base[:9] + [_fig("slow", 50.0)], 10, 10)[0]] == ["slow"]
    assert outliers(base[:8] + [_fig("slow", 50.0)], 10, 10)[0] == []
    # the defaults: 10% and 10 nodes
    assert [o.figure.node for o in outliers(base[:9] + [_fig("slow", 89.9)])[0]] == ["slow"]
    assert outliers(base[:8] + [_fig("slow", 50.0)])[0] == []
    assert outliers(base + [_fig("at", 90.0)])[0] == []


def test_outliers_on_either_end_worst_first_ties_in_order():
    lat = lambda node, v: FleetFigure(node, "gpu0", MODEL, "stress.p2p:latency_us", v, "us")  # noqa: E731
    figs = [lat(f"n{i}", 2.0) for i in range(10)] + [lat("a", 2.5), lat("b", 3.0), lat("c", 2.5), lat("fast", 1.0)]
    found, _ = outliers(figs, 10, 10)
    assert [(o.figure.node, o.off_pct) for o in found] == [("b", 50.0), ("a", 25.0), ("c", 25.0)]
    assert found[0].describe() == ("gpu0 GPU-to-GPU latency 3 us is 50.0% above the fleet median 2 (percentile 96.4, "
                                   f"{MODEL})")
    # a rate with its one outlier at the low end only (the highest is on the good side)
    rates = [_fig(f"n{i}", 100.0) for i in range(10)] + [_fig("fast", 200.0), _fig("slow", 80.0)]
    found, _ = outliers(rates, 10, 10)
    assert [o.figure.node for o in found] == ["slow"]
    assert found[0].describe() == f"gpu0 bf16 rate 80 TFLOP/s is 20.0% below the fleet median 100 (percentile 4.2, {MODEL})"


def test_a_fleet_whose_median_is_zero_or_less_names_no_one():
    assert outliers([_fig(f"n{i}", 0.0) for i in range(10)] + [_fig("x", -5.0)], 10, 10)[0] == []
    own = [FleetFigure("me", "gpu0", MODEL, "stress.burn:bf16_tflops", -5.0, "TFLOP/s")]
    assert judge_run_of(own, [_fig(f"n{i}", 0.0) for i in range(12)]) == []


def judge_run_of(own, fleet_figs, *args):
    from nodeqc.checks.fleet import judge_run
    return judge_run(own, fleet_figs, *args)


def test_a_runs_warning_in_full_and_its_pass():
    fleet_figs = [_fig(f"n{i}", 100.0) for i in range(10)]
    own = [FleetFigure("me", "gpu2", MODEL, "stress.burn:bf16_tflops", 85.0, "TFLOP/s"),
           FleetFigure("me", "gpu2", MODEL, "stress.burn:bf16_tflops", 70.0, "TFLOP/s"),
           FleetFigure("me", "gpu1", MODEL, "stress.burn:bf16_tflops", 90.0, "TFLOP/s"),  # exactly at 10%
           FleetFigure("me", "gpu5", MODEL, "stress.burn:bf16_tflops", 89.0, "TFLOP/s")]
    results = judge_run_of(own, fleet_figs)  # the defaults: 10%, 10 nodes
    assert [(r.name, r.subject, r.verdict, r.code, r.key) for r in results] == [
        ("fleet.outlier", "gpu2", Verdict.WARN, "FLEET_OUTLIER", "below_median_pct"),
        ("fleet.outlier", "gpu5", Verdict.WARN, "FLEET_OUTLIER", "below_median_pct")]
    w = results[0]
    assert w.message == (f"gpu2 bf16 rate 70 TFLOP/s is 30.0% below the fleet median 100 (percentile 0, {MODEL}); "
                         f"gpu2 bf16 rate 85 TFLOP/s is 15.0% below the fleet median 100 (percentile 0, {MODEL}): "
                         "it clears the floor but trails its fleet")
    assert (w.values["below_median_pct"].value, w.values["below_median_pct"].unit, w.values["percentile"].value) == \
        (30.0, "%", 0.0)
    assert w.evidence == {"outliers": [
        {"measure": "stress.burn:bf16_tflops", "value": 70.0, "median": 100.0, "off_pct": 30.0, "percentile": 0.0},
        {"measure": "stress.burn:bf16_tflops", "value": 85.0, "median": 100.0, "off_pct": 15.0, "percentile": 0.0}],
        "outlier_pct": 10.0}
    [ok] = judge_run_of(own[2:3], fleet_figs + [_fig("n99", 100.0, "stress.x:y_gbps", "GB/s")])
    assert (ok.name, ok.subject, ok.verdict, ok.code, ok.key) == ("fleet.outlier", "node", Verdict.PASS, None, "figures")
    assert ok.message == "1 figure(s) within 10% of their fleet's median (up to 10 nodes)"
    assert ok.values["figures"].value == 1
    assert judge_run_of(own, fleet_figs[:9]) == []  # 9 nodes: below the default fleet size
    assert len(judge_run_of(own, fleet_figs[:9], 10, 9)) == 2


def test_a_runs_latency_is_judged_lower_better():
    lat = lambda node, v: FleetFigure(node, "gpu0", MODEL, "stress.p2p:latency_us", v, "us")  # noqa: E731
    [w] = judge_run_of([lat("me", 2.5), lat("me", 1.0)], [lat(f"n{i}", 2.0) for i in range(10)])
    assert w.verdict is Verdict.WARN and w.values["below_median_pct"].value == 25.0
    assert "2.5 us is 25.0% above the fleet median 2" in w.message and "1 us" not in w.message


def test_two_figures_have_their_own_deciles_and_a_measure_keeps_all_after_its_check():
    d = distributions([_fig("a", 1.0), _fig("b", 3.0)])[(MODEL, "stress.burn:bf16_tflops")]
    assert (d.p10, d.p90) == (pytest.approx(1.2), pytest.approx(2.8))  # numpy.percentile([1, 3], [10, 90])
    figs = [_fig(f"n{i}", 100.0, "stress.x:a:b", "GB/s") for i in range(10)] + [_fig("slow", 50.0, "stress.x:a:b", "GB/s")]
    [o] = outliers(figs, 10, 10)[0]
    assert o.describe().startswith("gpu0 a:b 50 GB/s is 50.0% below")


def test_outliers_equal_to_two_places_keep_the_figures_order():
    base = [_fig(f"n{i}", 100.0) for i in range(10)]
    found, _ = outliers(base + [_fig("first", 79.999), _fig("second", 79.996)], 10, 10)
    assert [(o.figure.node, o.off_pct) for o in found] == [("first", 20.0), ("second", 20.0)]


def test_a_run_against_its_fleet_counts_every_figure_and_rounds_as_shown():
    fleet_figs = [_fig(f"n{i}", 100.0) for i in range(10)]
    own = [FleetFigure("me", "gpu0", "NVIDIA H200", "stress.burn:bf16_tflops", 1.0, "TFLOP/s"),  # no fleet: passed over
           FleetFigure("me", "gpu0", MODEL, "stress.burn:bf16_tflops", 99.0, "TFLOP/s"),
           FleetFigure("me", "gpu1", MODEL, "stress.burn:bf16_tflops", 98.0, "TFLOP/s")]
    [ok] = judge_run_of(own, fleet_figs)
    assert ok.message == "2 figure(s) within 10% of their fleet's median (up to 10 nodes)" and ok.values["figures"].value == 2
    [w] = judge_run_of(own + [FleetFigure("me", "gpu1", MODEL, "stress.burn:bf16_tflops", 87.6543, "TFLOP/s")], fleet_figs)
    assert w.evidence["outliers"][0]["off_pct"] == 12.35 and w.values["below_median_pct"].value == 12.35
    # a fleet whose median is small but positive is judged
    small = [_fig(f"n{i}", 0.5, "stress.x:lat_gbps", "GB/s") for i in range(10)]
    [w] = judge_run_of([FleetFigure("me", "gpu0", MODEL, "stress.x:lat_gbps", 0.25, "GB/s")], small)
    assert w.verdict is Verdict.WARN and w.values["below_median_pct"].value == 50.0


# ---------------------------------------------------------------------- the figure cache is signed (issue 25)


def test_an_edited_figure_cache_row_is_not_trusted(tmp_path):
    """The fleet's figure cache carried no HMAC: a valid_until edited into it was believed, and an
    expired qualification listed as valid. Each row carries an HMAC under the index secret now; an
    edited row is read again from its report (and rewritten)."""
    import sqlite3

    signer = load_signer(None)
    root = tmp_path / "archive"
    past = fleet_predicate(1, random.Random(1), datetime(2026, 1, 1, tzinfo=timezone.utc))  # valid until April
    file_report(root, past, signer)
    entries = Archive(root).reports()
    cache_path = tmp_path / "figures.sqlite3"
    assert [e.node for e in expired_entries(entries, now=NOW, cache=FigureCache(cache_path))] == ["SN00001"]
    with sqlite3.connect(cache_path) as db:
        [(digest, data, mac)] = db.execute("SELECT sha256, data, mac FROM figures").fetchall()
        forged = json.loads(data)
        assert forged["valid_until"] == past["valid_until"]
        forged["valid_until"] = "2099-01-01T00:00:00Z"
        forged["figures"] = [f[:3] + [9999.0] + f[4:] for f in forged["figures"]]
        db.execute("UPDATE figures SET data = ?", (json.dumps(forged, separators=(",", ":")),))
    assert [e.node for e in expired_entries(entries, now=NOW, cache=FigureCache(cache_path))] == ["SN00001"]
    view = fleet(entries, 10, 10, now=NOW, cache=FigureCache(cache_path))
    assert view.rows[0].valid_until == past["valid_until"] and "expired" in view.rows[0].problems(NOW)
    with sqlite3.connect(cache_path) as db:  # the row is the report's again, with a MAC that holds
        assert db.execute("SELECT data, mac FROM figures").fetchall() == [(data, mac)]
    # A row with its MAC removed, or made under another user's secret, is not trusted either.
    with sqlite3.connect(cache_path) as db:
        db.execute("UPDATE figures SET data = ?, mac = ''", (json.dumps(forged, separators=(",", ":")),))
    assert FigureCache(cache_path).get_many([digest]) == {}
    assert FigureCache(cache_path, secret=b"another user's secret" * 2).get_many([digest]) == {}
    assert FigureCache(cache_path).get_many([digest]) == {}
    fleet(entries, 10, 10, now=NOW, cache=FigureCache(cache_path))
    assert FigureCache(cache_path).get_many([digest])[digest]["valid_until"] == past["valid_until"]


@pytest.mark.parametrize("made", ["a directory", "under a file", "read-only"])
def test_a_figure_cache_that_cannot_be_used_only_slows_the_fleet(tmp_path, capsys, monkeypatch, made):
    """Its path a directory, or its directory a file, ended `fleet` in an internal error (the
    2026-11-29 audit). A cache is only a cache: the figures are read from the reports, with a warning."""
    root = tmp_path / "archive"
    file_report(root, fleet_predicate(1, random.Random(1), datetime(2026, 1, 1, tzinfo=timezone.utc)), load_signer(None))
    entries = Archive(root).reports()
    cache_path = tmp_path / "cache" / "figures.sqlite3"
    if made == "a directory":
        cache_path.mkdir(parents=True)
    elif made == "under a file":
        cache_path.parent.write_text("not a directory")
    else:  # made, then opened read-only (as on a read-only disk; root writes past file modes)
        cache_path.parent.mkdir()
        FigureCache(cache_path).get_many([])
        opened = FigureCache._open
        monkeypatch.setattr(FigureCache, "_open", lambda self, path: opened(self, path) if path == ":memory:" else
                            sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    view = fleet(entries, 10, 10, now=NOW, cache=FigureCache(cache_path))
    assert [r.node for r in view.rows] == ["SN00001"] and view.rows[0].valid_until
    err = capsys.readouterr().err
    assert f"nodeqc: warning: figure cache {cache_path}: " in err and "reading the figures from the reports" in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_figure_cache_of_the_old_format_is_dropped_not_trusted(tmp_path):
    import sqlite3

    cache_path = tmp_path / "figures.sqlite3"
    with sqlite3.connect(cache_path) as db:
        db.execute("CREATE TABLE figures (sha256 TEXT PRIMARY KEY, data TEXT NOT NULL)")
        db.execute("INSERT INTO figures VALUES ('ab', '{\"valid_until\": \"2099-01-01T00:00:00Z\"}')")
        db.execute("PRAGMA user_version = 1")
    assert FigureCache(cache_path).get_many(["ab"]) == {}


def test_fleet_table_names_failed_and_warned_checks_with_their_part_as_the_csv_does(tmp_path):
    """PROBLEMS said only FAIL: it names each failed check with its part, and the warned ones
    marked (warn), from the one function the CSV's problems column uses too."""
    root = tmp_path / "archive"
    warn = {"name": "health.temperature", "subject": "gpu1", "verdict": "warn", "code": "GPU_HOT", "message": "hot",
            "key": None, "values": {}, "thresholds": [], "evidence": {}}
    failing = predicate("SN-F", "FAIL", finished_at="2026-11-02T10:00:00Z")
    failing["checks"].append(warn)
    warned = predicate("SN-W", "PASS", finished_at="2026-11-03T10:00:00Z")
    warned["checks"].append(warn)
    for pred in (failing, warned, predicate("SN-P", "PASS", finished_at="2026-11-04T10:00:00Z")):
        file_report(root, pred)
    out_csv, out_html = tmp_path / "fleet.csv", tmp_path / "fleet.html"
    p = cli("fleet", "--archive", str(root), "--csv", str(out_csv), "--html", str(out_html))
    assert p.returncode == 0, p.stderr
    table = {ln.split()[0]: ln for ln in p.stdout.splitlines()[1:]}
    assert "FAIL: health.pcie_link gpu0, health.temperature gpu1 (warn)" in table["SN-F"]
    assert "health.temperature gpu1 (warn)" in table["SN-W"] and "FAIL" not in table["SN-W"]
    assert " - " in table["SN-P"]  # nothing to say
    # Warnings are named, but a qualification with warnings is not a node with problems.
    assert "3 node(s), 1 with problems" in p.stderr
    assert list(table) == ["SN-F", "SN-P", "SN-W"]  # the failed node first, then newest first
    rows = {r["node"]: r for r in csv.DictReader(io.StringIO(out_csv.read_text()))}
    assert rows["SN-P"]["problems"] == ""
    for node in ("SN-F", "SN-W"):
        assert rows[node]["problems"] in table[node]  # the table's words, from the same function
    assert rows["SN-F"]["failed"] == "health.pcie_link gpu0" and rows["SN-F"]["warned"] == "health.temperature gpu1"
    assert rows["SN-W"]["failed"] == "" and rows["SN-W"]["warned"] == "health.temperature gpu1"
    page = out_html.read_text()
    assert page.count('<tr class="s0">') == 1 and "health.temperature gpu1 (warn)" in page
    assert page.index('<tr class="s0">') < page.index('<tr class="s2">') < page.index('<tr class="s3">')


# ---------------------------------------------------------------------- the page, as operators read it

HOSTILE = '<script>alert(1)</script>"onmouseover=alert(2) x=\''


def small_fleet(root: Path, signer=None) -> None:
    """Ten 8-GPU H100 nodes (a fleet just big enough to judge) with one failed, one warned, one
    outlier and one with a hostile host name and message; and three A100 nodes (too few to judge)."""
    rng = random.Random(3)
    warn = {"name": "health.temperature", "subject": "gpu1", "verdict": "warn", "code": "GPU_HOT",
            "message": "hot <b>", "key": None, "values": {}, "thresholds": [], "evidence": {}}
    for n in range(10):
        when = NOW - timedelta(hours=1, minutes=n)
        pred = fleet_predicate(n, rng, when)
        if n == 2:  # the outlier: gpu5 at 80%
            pred["checks"][10]["values"]["bf16_tflops"]["value"] = 600.0
        if n == 4:
            pred["verdict"] = "FAIL"
            pred["checks"][0]["verdict"] = "fail"
            pred["summary"]["failed"] = ["stress.burn gpu0"]
        if n == 6:
            pred["checks"].append(warn)
        if n == 8:
            pred["node"]["hostname"] = HOSTILE
            pred["checks"].append({**warn, "name": "health.xid", "subject": "gpu2", "message": HOSTILE})
        file_report(root, pred, signer, name=f"report-{n}.report.json")
    for n in range(3):
        pred = fleet_predicate(100 + n, rng, NOW - timedelta(hours=2, minutes=n))
        for g in pred["gpus"]:
            g["name"] = "NVIDIA A100-SXM4-80GB"
        file_report(root, pred, signer)


class _Page(__import__("html.parser").parser.HTMLParser):
    """The page's structure: where the table and the first plot start, each body row's class, cells
    and link, the scripts and the text of each figure's caption."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.events, self.rows, self.scripts, self.captions, self.texts = [], [], [], [], []
        self._row = self._cell = self._cap = None
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.events.append((tag, a))
        if tag == "tr" and a.get("class", "").startswith("s"):
            self._row = {"class": a["class"], "cells": [], "href": None}
            self.rows.append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "a" and self._row is not None:
            self._row["href"] = a.get("href")
        elif tag == "figcaption":
            self._cap = []
        elif tag in ("script", "text", "title"):
            self._in = tag
            self.scripts.append("") if tag == "script" else self.texts.append("")

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row["cells"].append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "figcaption":
            self.captions.append("".join(self._cap))
            self._cap = None
        elif tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._cap is not None:
            self._cap.append(data)
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in:
            self.texts[-1] += data


def _page(tmp_path: Path) -> tuple[str, Path, Path]:
    root = tmp_path / "archive"
    small_fleet(root)
    out = root / "fleet.html"  # in the archive: its links are relative
    p = cli("fleet", "--archive", str(root), "--html", str(out))
    assert p.returncode == 0, p.stderr
    return out.read_text(), out, root


def test_the_page_puts_the_nodes_first_problems_first_linked_and_escaped(tmp_path):
    import base64
    import hashlib
    import urllib.parse

    text, out, root = _page(tmp_path)
    page = _Page()
    page.feed(text)
    tags = [t for t, _ in page.events]
    assert tags.index("table") < tags.index("svg")  # the table before the first plot
    assert len(page.rows) == 13
    classes = [r["class"] for r in page.rows]
    assert classes == sorted(classes)  # failed, then other problems, then warned, then the rest
    by_node = {r["cells"][1]: r for r in page.rows}
    assert page.rows[0]["cells"][1] == "SN00004" and page.rows[0]["cells"][0] == "fail"
    assert "stress.burn gpu0" in page.rows[0]["cells"][7]  # the problem names its check and part
    assert page.rows[1]["cells"][1] == "SN00002" and "1 outlier(s)" in page.rows[1]["cells"][7]
    assert {r["cells"][1] for r in page.rows[2:4]} == {"SN00006", "SN00008"}
    assert by_node["SN00006"]["cells"][7] == "health.temperature gpu1 (warn)"
    # Each node links to its own report, relative to the page, which is in the archive.
    for r in page.rows:
        href = r["href"]
        assert href and not href.startswith(("/", "http", "javascript")), href
        target = (out.parent / urllib.parse.unquote(href)).resolve()
        assert target.is_file() and target.suffixes[-2:] == [".report", ".json"]
        assert r["cells"][1] in target.parent.name
    # Hostile text from a report is text: parsed back it is the very string, and nothing of it is markup.
    assert by_node["SN00008"]["cells"][2] == HOSTILE
    assert "<script>alert" not in text and '"onmouseover' not in text and "&lt;script&gt;alert(1)" in text
    assert not any("onmouseover" in k or "alert" in str(v) for _, a in page.events for k, v in a.items())
    assert len(page.scripts) == 1 and "alert" not in page.scripts[0]
    # Self-contained: nothing fetched; the policy allows exactly the page's own script and style.
    assert not re.search(r"src=|href=\"http|@import|url\(", text)
    csp = next(a["content"] for t, a in page.events if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    digest = base64.b64encode(hashlib.sha256(page.scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
    style = re.search(r"<style>(.*?)</style>", text, re.S).group(1)
    assert base64.b64encode(hashlib.sha256(style.encode()).digest()).decode() in csp


def test_each_plot_has_a_scale_names_its_outliers_and_says_when_it_is_too_small(tmp_path):
    text, _, _ = _page(tmp_path)
    page = _Page()
    page.feed(text)
    bf16 = next(c for c in page.captions if c.startswith(f"{MODEL}: bf16 rate (stress.burn), TFLOP/s"))
    assert "1 outlier(s): SN00002 gpu5 600 TFLOP/s" in bf16
    assert "SN00002 gpu5 600" in page.texts  # named in the plot too
    assert "bf16 rate (TFLOP/s)" in page.texts and "copy bandwidth (GB/s)" in page.texts  # axis with unit
    ticks = [float(t) for t in page.texts if re.fullmatch(r"-?[0-9.]+", t)]
    assert len(ticks) >= 6 and any(600 <= t <= 700 for t in ticks)  # a scale, not two ends
    small = [c for c in page.captions if c.startswith("NVIDIA A100")]
    assert small and all("too small to judge: 3 node(s) of this SKU, fewer than min_fleet 10" in c for c in small)
    assert not any("0 outlier(s)" in c for c in page.captions)
    assert any(c.endswith("no outliers") for c in page.captions)


def _chromium() -> str | None:
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _dom(browser: str, url: str, tmp_path: Path) -> str:
    import subprocess

    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
                        "--virtual-time-budget=3000", "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="no chromium to load the page in (apt-get install chromium)")
def test_the_page_in_a_headless_browser_runs_its_script_under_its_policy(tmp_path):
    text, out, _ = _page(tmp_path)
    browser = _chromium()
    dom = _dom(browser, out.as_uri(), tmp_path)
    # The script ran (the policy let it): the filter box is shown and counts the rows.
    assert "13 of 13 node(s) shown" in dom and re.search(r'<input id="q"(?![^>]*hidden)', dom)
    # The hostile host name is still text in the DOM the browser built, never an element.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>alert" not in dom
    for words, rows in (("health.temperature", {"SN00006"}), ("(warn)%20gpu", {"SN00006", "SN00008"}),
                        ("A100", {"SN00100", "SN00101", "SN00102"})):
        filtered = _dom(browser, out.as_uri() + "#filter=" + words, tmp_path)
        assert f"{len(rows)} of 13 node(s) shown" in filtered
        shown = re.findall(r'<tr class="s\d"([^>]*)>.*?<a [^>]*>([^<]*)</a>', filtered)
        assert len(shown) == 13 and {node for attrs, node in shown if "hidden" not in attrs} == rows
    # A filter that is not percent-encoding is taken as written (it threw, and the box never appeared).
    filtered = _dom(browser, out.as_uri() + "#filter=%", tmp_path)
    assert "0 of 13 node(s) shown" in filtered and re.search(r'<input id="q"(?![^>]*hidden)', filtered)
    # Sorted by a column, as a click on its header sorts: by node, then by age (oldest last).
    nodes = re.findall(r'<tr class="s\d"[^>]*>.*?<a [^>]*>([^<]*)</a>', _dom(browser, out.as_uri() + "#sort=node", tmp_path))
    assert nodes == sorted(nodes) and len(nodes) == 13
    dom = _dom(browser, out.as_uri() + "#sort=age", tmp_path)
    aged = re.findall(r'<tr class="s\d"[^>]*>.*?<a [^>]*>([^<]*)</a>', dom)
    assert aged[:3] == ["SN00000", "SN00001", "SN00002"] and aged[-1] == "SN00102"
    assert 'aria-sort="ascending"><button type="button">age' in dom


def test_a_failed_node_comes_before_nodes_that_are_only_unqualified_as_simulated(tmp_path):
    """Every node of a demo (or a replayed) archive is "not qualified", passing or not: within those
    the newest came first, so a simulated FAIL sank below the PASS SIM runs filed after it."""
    root = tmp_path / "archive"
    rng = random.Random(5)
    for n in range(4):
        pred = fleet_predicate(n, rng, NOW - timedelta(minutes=10 - n))  # SN00000 the oldest
        pred["simulated"] = True
        if n == 0:
            pred["verdict"] = "FAIL"
            pred["checks"][0]["verdict"] = "fail"
            pred["summary"]["failed"] = ["stress.burn gpu0"]
        file_report(root, pred)
    table = cli("fleet", "--archive", str(root), "--html", str(root / "fleet.html"))
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("SN")]
    assert rows[0].startswith("SN00000") and "stress.burn gpu0" in rows[0], table.stdout
    page = _Page()
    page.feed((root / "fleet.html").read_text())
    assert page.rows[0]["cells"][1] == "SN00000", [r["cells"][1] for r in page.rows]
    assert [r["cells"][1] for r in page.rows[1:]] == ["SN00003", "SN00002", "SN00001"]  # then newest first
    # Its status says which failed: the passes are unqualified (simulated), not failed.
    assert [r["cells"][0] for r in page.rows] == ["fail", "unqualified", "unqualified", "unqualified"]


@pytest.mark.parametrize("rows", ["0", "-5"])
def test_fleet_rows_must_be_one_or_more(tmp_path, rows):
    """--rows -5 was taken, and printed every row but the last five."""
    p = cli("fleet", "--archive", str(tmp_path), "--rows", rows)
    assert p.returncode == 2 and p.stderr.strip() == f"nodeqc: --rows {rows}: expected 1 or more"


@pytest.mark.parametrize("values", [(1.7e308, -1.7e308), (1.7e308, 0.0), (1e300, 1.5e300), (5e-324, 1e-323)])
def test_a_plot_of_figures_at_the_ends_of_the_floats_is_drawn_or_said_too_far_apart(values):
    """The 2026-11-29 fuzzing: two signed figures of +-1.7e308 overflowed the plot's scale and ended
    `fleet --html` for the whole fleet in an internal error."""
    from nodeqc.cli.fleetpage import _strip

    d = distributions([_fig(f"n{i}", v) for i, v in enumerate(values)])[(MODEL, "stress.burn:bf16_tflops")]
    text = _strip(d, [], 10.0, 10)
    assert "too far apart to draw" in text if not math.isfinite((max(values) - min(values)) * 4) else "<svg" in text


_DOM_MOCK = """
function el() { return {tBodies: [{rows: []}], tHead: {rows: [{cells: []}]}, rows: [], hidden: true, value: "",
  textContent: "", addEventListener: function () {}, appendChild: function () {}}; }
var box = el();
var document = {getElementById: function (id) { return id === "q" ? box : el(); },
                createDocumentFragment: function () { return el(); }};
var location = {hash: HASH};
"""


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="no node to run the page's script in")
@pytest.mark.parametrize("hash_, value", [("#filter=%", "%"), ("#filter=%41%20b", "A b"), ("#sort=%E0%A4%A", "")])
def test_the_page_s_script_takes_an_address_that_is_not_percent_encoding_as_written(tmp_path, hash_, value):
    """The 2026-11-29 fuzzing: "#filter=%" threw URIError in the page's script, and the filter box never
    appeared (its script run under node, with the little of a page it touches)."""
    import subprocess

    from nodeqc.cli.fleetpage import SCRIPT

    script = tmp_path / "page.js"
    script.write_text(_DOM_MOCK.replace("HASH", json.dumps(hash_)) + SCRIPT
                      + "\nconsole.log(JSON.stringify([box.hidden, box.value]));")
    p = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout) == [False, value], p.stderr
