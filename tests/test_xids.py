"""NVIDIA's XID catalogue as nodeqc carries it (nodeqc.core.xids), the verdicts health.xid gives by
it, the escalation of a repeated XID, and a simulated run with XIDs injected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodeqc.backends import simulated_hardware
from nodeqc.backends.base import GpuInfo
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.checks import health
from nodeqc.checks.health import XID_REPEAT_LIMIT, judge_xid
from nodeqc.core.codes import REMEDIATION, advice
from nodeqc.core.model import Verdict
from nodeqc.core.xids import ACTIONS, CATEGORIES, SEVERITIES, XID_READ, XID_SOURCE, XIDS, lookup
from nodeqc.report.keys import create_key
from nodeqc.run.runner import RunOptions, Runner
from nodeqc.spec.profile import load_profile
from nodeqc.spec.selection import Selection
from nodeqc.work.telemetry import GpuTelemetry

# What every XID nodeqc judges as fatal today must stay fatal (shared/REFERENCE.md: the XIDs cloud
# node agents take a node out of service for); before the catalogue these were nodeqc's FATAL_XIDS.
CLOUD_FATAL = {46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158}
# Codes gpud marks critical (its event type Fatal: leptonai/gpud xid/xid.go) among those used on Ampere
# and newer: none of them may be ignorable.
GPUD_CRITICAL = {38, 44, 46, 48, 62, 63, 64, 68, 69, 74, 79, 94, 95, 110, 119, 120, 121, 140, 143}


# ---------------------------------------------------------------------- the catalogue's shape


def test_the_catalogue_names_its_source_and_the_date_it_was_read():
    assert XID_SOURCE.startswith("https://docs.nvidia.com/deploy/xid-errors/")
    assert re.fullmatch(r"20\d\d-\d\d-\d\d", XID_READ)


def test_every_published_code_is_there_once_and_complete():
    assert sorted(XIDS) == list(range(1, 174))  # NVIDIA's catalogue runs 1..173 as read
    for code, e in XIDS.items():
        assert e.code == code
        assert e.meaning and e.meaning == e.meaning.strip() and len(e.meaning) < 200, code
        assert e.category in CATEGORIES and e.severity in SEVERITIES and e.action in ACTIONS, code
        assert e.hardware in (True, False, None), code
        # Where NVIDIA publishes no action, ours says where it comes from or it is unknown.
        assert e.nvidia or e.basis or e.action == "unknown", code
        # Never silently: an unknown action is at least a warning.
        if e.action == "unknown":
            assert e.severity == "warning", code


def test_the_fatal_codes_of_before_stay_fatal_and_gpuds_critical_are_never_ignorable():
    assert all(XIDS[c].severity == "fatal" for c in CLOUD_FATAL)
    assert not [c for c in GPUD_CRITICAL if XIDS[c].severity == "ignorable"]


def test_the_codes_the_issue_names_are_catalogued_with_an_action():
    named = {13, 31, 43, 45, 48, *range(61, 65), 68, 69, 74, 79, 92, 94, 95, 119, 120, 121, *range(136, 156)}
    missing = [c for c in named if c not in XIDS or XIDS[c].action == "unknown"]
    assert not missing


def test_each_action_that_fails_has_a_code_with_a_remediation():
    for code in XIDS:
        j = judge_xid(code)
        assert j.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.PASS)
        if j.verdict is not Verdict.PASS:
            assert j.code in REMEDIATION, code


# ---------------------------------------------------------------------- any code gets a judgement


@given(st.integers(min_value=-2**63, max_value=2**64))
def test_any_integer_xid_gets_a_defined_judgement(code):
    j = judge_xid(code)
    assert j.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.PASS)
    assert (j.verdict is Verdict.PASS) == (j.code is None)
    if code not in XIDS:  # not catalogued: a warning that says the action is unknown, never a pass
        assert (j.verdict, j.code) == (Verdict.WARN, "XID_UNKNOWN")
    tel = telemetry((code,))
    r = health.xid(gpu(), tel, None)
    assert r.verdict is j.verdict and r.code == j.code and f"XID {code} (" in r.message
    assert r.evidence["xids"][0]["severity"] in SEVERITIES


# ---------------------------------------------------------------------- verdicts


def gpu():
    return GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-0", bus_id="0000:18:00.0", serial="1650000000000")


def telemetry(codes, t0=10.0):
    tel = GpuTelemetry(0)
    for i, code in enumerate(codes):
        tel.xids.add({"t_s": t0 + i, "code": code})
    return tel


@pytest.mark.parametrize("code, verdict, result_code, action", [
    (48, Verdict.FAIL, "XID_RESET_GPU", "nvidia-smi -r -i 0"),  # fatal: double-bit ECC error
    (79, Verdict.FAIL, "XID_REBOOT", "reboot the node"),  # fatal: fallen off the bus
    (54, Verdict.FAIL, "XID_CHECK_POWER", "power cables"),  # fatal: auxiliary power
    (31, Verdict.FAIL, "XID_APP_FAULT", "known-good work"),  # an application's XID, during nodeqc's own work
    (92, Verdict.WARN, "XID_WARNING", "non-fatal XID"),  # warning: high single-bit ECC rate
    (5, Verdict.WARN, "XID_CONTACT_SUPPORT", "contact support"),  # unused on Ampere and newer
    (165, Verdict.WARN, "XID_UNKNOWN", "does not give"),  # published, no action published
    (999, Verdict.WARN, "XID_UNKNOWN", "does not give"),  # not catalogued
    (45, Verdict.PASS, None, None),  # ignorable: it follows another XID
    (154, Verdict.PASS, None, None),  # ignorable: it names another XID's recovery action
])
def test_each_grade_gives_its_verdict_and_its_action_as_the_remediation(code, verdict, result_code, action):
    r = health.xid(gpu(), telemetry((code,)), None)
    assert (r.verdict, r.code) == (verdict, result_code)
    assert r.evidence["xids"][0]["code"] == code  # listed, whatever the verdict
    assert r.evidence["catalogue"] == {"source": XID_SOURCE, "read": XID_READ}
    if action:
        assert action in advice(r.code, r.subject, r.evidence, r.verdict.value)
    if verdict is Verdict.PASS:
        assert r.message == f"XID {code} ({XIDS[code].meaning}) at 10.0 s: ignorable"


def test_a_fatal_xid_leads_an_ignorable_one_and_the_message_gives_its_action():
    r = health.xid(gpu(), telemetry((154, 119)), None)
    assert (r.verdict, r.code) == (Verdict.FAIL, "XID_RESET_GPU")
    assert r.message == "XID 119 (GSP RPC timeout) at 11.0 s: fatal, action: reset gpu"
    assert [e["code"] for e in r.evidence["xids"]] == [154, 119]


def test_the_remediation_of_a_warning_xid_advises_no_rma():
    for code in ("XID_WARNING", "XID_UNKNOWN", "XID_CONTACT_SUPPORT"):
        assert "RMA" not in advice(code, "gpu0", {}, "warn")


# ---------------------------------------------------------------------- escalation within a run


def test_a_warning_xid_repeated_in_one_run_fails_for_hardware_inspection():
    below = health.xid(gpu(), telemetry((92,) * (XID_REPEAT_LIMIT - 1)), None)
    assert (below.verdict, below.code) == (Verdict.WARN, "XID_WARNING")
    assert f"({XID_REPEAT_LIMIT - 1} times)" in below.message
    at = health.xid(gpu(), telemetry((92,) * XID_REPEAT_LIMIT), None)
    assert (at.verdict, at.code) == (Verdict.FAIL, "XID_REPEATED")
    assert f"repeated {XID_REPEAT_LIMIT} times in one run" in at.message
    assert "RMA" in advice(at.code, "gpu0", at.evidence, "fail")
    # The same count spread over different codes is not a repeat.
    mixed = health.xid(gpu(), telemetry((92, 93, 92, 93)), None)
    assert mixed.verdict is Verdict.WARN
    # Ignorable ones stay ignorable however often they come (each points at an XID judged itself).
    assert health.xid(gpu(), telemetry((45,) * 5), None).verdict is Verdict.PASS
    # A fatal one keeps its own code, its count said.
    fatal = health.xid(gpu(), telemetry((48,) * 4), None)
    assert (fatal.verdict, fatal.code) == (Verdict.FAIL, "XID_RESET_GPU") and "(4 times)" in fatal.message


def test_events_not_kept_are_never_passed():
    tel = telemetry((45,))
    tel.xids.dropped = 3
    r = health.xid(gpu(), tel, None)
    assert (r.verdict, r.code) == (Verdict.WARN, "XID_WARNING") and "3 more XID event(s) not kept" in r.message


def test_a_code_that_is_not_a_whole_number_is_judged_unknown():
    tel = GpuTelemetry(0)
    tel.xids.add({"t_s": 1.0, "code": "79"})
    r = health.xid(gpu(), tel, None)
    assert (r.verdict, r.code) == (Verdict.WARN, "XID_UNKNOWN")
    assert lookup("79").category == "unknown" and lookup(True).category == "unknown"


def test_a_code_unused_on_ampere_is_an_older_gpus_own_with_no_published_action():
    """The 2026-11-28 advice review: a V100's Xid 61 read "not used on Ampere and newer GPUs"."""
    import dataclasses

    v100 = dataclasses.replace(gpu(), name="Tesla V100-SXM2-16GB", compute_capability="7.0")
    r = health.xid(v100, telemetry((61,)), None)
    assert (r.verdict, r.code) == (Verdict.WARN, "XID_UNKNOWN"), r.message
    assert r.message.startswith("XID 61 (internal micro-controller breakpoint/warning (compute capability 7.0; "
                                "NVIDIA's catalogue, for Ampere and newer, publishes no action for it))")
    assert "not used on Ampere" not in r.message and r.evidence["xids"][0]["category"] == "unknown"
    assert lookup(10, "7.5").meaning.startswith("an XID of GPUs before Ampere")
    # On Ampere and newer, or where the GPU's generation is not known, the catalogue's words stand.
    for cc in ("9.0", "8.0", None, "N/A"):
        assert lookup(61, cc) == XIDS[61] and lookup(61, cc).meaning.startswith("not used on Ampere")
    assert lookup(79, "7.0") == XIDS[79]  # a code the catalogue uses keeps its entry on any GPU


# ---------------------------------------------------------------------- a simulated run


@pytest.mark.slow
def test_a_simulated_run_judges_each_injected_xid_by_the_catalogue(tmp_path):
    """The simulated node's driver reports each injected XID under load (NVML event and kernel log line)."""
    faults = ["gpu0:xid=48", "gpu1:xid=45", "gpu2:xid=92", "gpu3:xid=999", "gpu4:xid=13"]
    hw = simulated_hardware("hgx-h100", [parse_fault(f) for f in faults], time_scale=40)
    signer = create_key(tmp_path / "k.pem")
    selection = Selection(only=("stress.gpu_free", "stress.burn", "health.xid", "host.kernel_log"))
    outcome = Runner(RunOptions(load_profile("hgx-h100"), signer, out_dir=tmp_path / "out", quick=True,
                                selection=selection), hw).run()
    xid = {r.subject: (r.verdict, r.code) for r in outcome.results if r.name == "health.xid"}
    assert xid == {"gpu0": (Verdict.FAIL, "XID_RESET_GPU"), "gpu1": (Verdict.PASS, None),
                   "gpu2": (Verdict.WARN, "XID_WARNING"), "gpu3": (Verdict.WARN, "XID_UNKNOWN"),
                   "gpu4": (Verdict.FAIL, "XID_APP_FAULT"), "gpu5": (Verdict.PASS, None),
                   "gpu6": (Verdict.PASS, None), "gpu7": (Verdict.PASS, None)}
    listed = {r.subject: [e["code"] for e in r.evidence.get("xids", [])] for r in outcome.results
              if r.name == "health.xid"}
    assert listed["gpu1"] == [45]  # passed, the event listed
    log = {r.subject: (r.verdict, r.code) for r in outcome.results if r.name == "host.kernel_log"}
    assert log["gpu0"] == (Verdict.FAIL, "KERNEL_XID") and log["gpu2"] == (Verdict.WARN, "KERNEL_XID")
    assert "gpu1" not in log  # the ignorable line is not of note


# ---------------------------------------------------------------------- escalation across runs


def _run(tmp_path, signer, faults, previous=None):
    from nodeqc.report.envelope import verify_file

    hw = simulated_hardware("hgx-h100", [parse_fault(f) for f in faults], time_scale=40)
    selection = Selection(only=("stress.gpu_free", "stress.burn", "health.xid"))
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    outcome = Runner(RunOptions(load_profile("hgx-h100"), signer, out_dir=out, quick=True, selection=selection,
                                previous=previous), hw).run()
    return verify_file(outcome.report_path, {signer.keyid: (signer.public, "test")}).predicate


def test_xids_of_a_report_are_keyed_by_the_gpus_serial_and_bounded():
    from nodeqc.report.answer import xids_of

    pred = {"gpus": [{"subject": "gpu0", "serial": "S0"}, {"subject": "gpu1"}],  # gpu1: no serial, not followed
            "checks": [{"name": "health.xid", "subject": "gpu0",
                        "evidence": {"xids": [{"code": 48}, {"code": 48}, {"code": "79"}, "junk", {"code": 92}]}},
                       {"name": "health.xid", "subject": "gpu1", "evidence": {"xids": [{"code": 13}]}},
                       {"name": "health.xid", "subject": "gpu9", "evidence": {"xids": [{"code": 13}]}},
                       {"name": "health.ecc", "subject": "gpu0", "evidence": {"xids": [{"code": 13}]}},
                       {"name": "health.xid", "subject": "gpu0", "evidence": "not a dict"}]}
    assert xids_of(pred) == {"gpu:S0": [48, 92]}
    assert xids_of({}) == {} and xids_of({"checks": "x", "gpus": None}) == {}


@pytest.mark.slow
def test_an_xid_that_returns_in_the_next_run_needs_hardware_inspection(tmp_path):
    """gpud's rule across runs: the previous report asked for a reset; the same XID on the same GPU
    (by serial) in the next run means the reset did not clear it. Another XID, or the same XID on
    another GPU, is not a return."""
    from nodeqc.report.answer import xids_of

    signer = create_key(tmp_path / "k.pem")
    first = _run(tmp_path, signer, ["gpu0:xid=48", "gpu1:xid=92"])
    before = {f["subject"]: f for f in first["answer"]["findings"]}
    assert before["gpu0"]["escalation"] == 0 and "came back" not in before["gpu0"]["remediation"]
    previous = {"report": "first.report.json", "failures": [], "xids": xids_of(first)}
    assert sorted(previous["xids"].values()) == [[48], [92]]
    second = _run(tmp_path, signer, ["gpu0:xid=48", "gpu1:xid=92", "gpu2:xid=48", "gpu3:xid=79"], previous)
    after = {f["subject"]: f for f in second["answer"]["findings"]}
    serial0 = next(g["serial"] for g in second["gpus"] if g["subject"] == "gpu0")
    assert after["gpu0"]["escalation"] == 1
    assert after["gpu0"]["remediation"].startswith("XID 48 came back on ")
    assert serial0 in after["gpu0"]["remediation"] and "first.report.json" in after["gpu0"]["remediation"]
    assert after["gpu0"]["remediation"].endswith("hardware inspection: RMA it.")
    # A warning that returns: inspected, never an RMA for a warning.
    assert after["gpu1"]["verdict"] == "warn" and "came back" in after["gpu1"]["remediation"]
    assert "RMA" not in after["gpu1"]["remediation"]
    # The same code on a GPU that had none before, and a new code: their own remediation.
    assert after["gpu2"]["escalation"] == 0 and "came back" not in after["gpu2"]["remediation"]
    assert after["gpu3"]["escalation"] == 0 and after["gpu3"]["code"] == "XID_REBOOT"
    assert second["previous"]["xids"] == previous["xids"]  # the report records what it was compared with


@pytest.mark.slow
def test_the_cli_tells_an_xid_that_came_back_from_the_archive(tmp_path):
    """`nodeqc` as a user runs it twice on one node with an archive: the second run reads the first
    report's XIDs from the archive (no --retest needed) and says XID 48 came back on gpu0."""
    import base64
    import json

    from conftest import cli

    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "NODEQC_ARCHIVE": str(tmp_path / "archive")}
    args = ["--headless", "--profile", "h100", "--quick", "--sample-hz", "8", "--simulate", "h100",
            "--inject", "gpu0:xid=48", "--only", "stress.gpu_free,stress.burn,health.xid"]
    reports = []
    for _ in range(2):
        p = cli(*args, env=env)
        assert p.returncode == 1, p.stderr
        envelope = json.loads(Path(p.stdout.strip().splitlines()[-1]).read_text())
        reports.append((json.loads(base64.b64decode(envelope["payload"]))["predicate"], p))
    (first, _), (second, p) = reports
    assert first["previous"] is None
    assert list(second["previous"]["xids"].values()) == [[48]]
    finding = next(f for f in second["answer"]["findings"] if f["check"] == "health.xid")
    assert finding["code"] == "XID_RESET_GPU" and finding["escalation"] == 1
    assert finding["remediation"].startswith("XID 48 came back on ") and "RMA it" in finding["remediation"]
    assert "XID 48 came back on " in p.stderr  # the end-of-run summary says it too
