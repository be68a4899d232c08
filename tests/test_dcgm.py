"""NVIDIA's DCGM diagnostic in the report (issue 28): `dcgmi diag -r LEVEL -j` read in both DCGM 3.x
and 4.x shapes (tests/fixtures/dcgm/README.source says how the outputs were made), judged per GPU and
test category, and run through a stand-in `dcgmi` put on PATH: one that fails a GPU, one that hangs
(its process group killed), one that is not there."""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeqc.backends import dcgm as backend
from nodeqc.backends.dcgm import DiagRun
from nodeqc.checks import dcgm as checks
from nodeqc.checks.dcgm_codes import FR_NUMBERS, fail_code, fr_name
from nodeqc.core.model import Verdict
from nodeqc.core.tool_output import ToolOutputError
from tests.conftest import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "dcgm"


class Gpu:
    def __init__(self, index: int, serial: str = "N/A"):
        self.index, self.slot, self.serial, self.lost = index, index, serial, False

    @property
    def subject(self) -> str:
        return f"gpu{self.index}"


GPUS = [Gpu(0), Gpu(1)]


def judged(name: str, returncode: int = 0, gpus=GPUS, stderr: str = ""):
    text = (FIXTURES / name).read_text()
    run = DiagRun(["dcgmi", "diag", "-r", "2", "-j"], returncode, stdout=text, stderr=stderr, seconds=12.5,
                  stdout_bytes=len(text))
    return {(r.name, r.subject): r for r in checks.judge_run(run, 2, 900, gpus)}


# ---------------------------------------------------------------------- the parser, on every fixture

@pytest.mark.parametrize("name,fmt,version,count", [
    ("dcgm-4x-pass-r2.json", "DCGM 4.x", "4.2.3", 6), ("dcgm-3x-pass-r2.json", "DCGM 3.x", "3.3.5", 13),
])
def test_both_formats_parse_to_each_tests_result_per_gpu(name, fmt, version, count):
    diag = checks.parse_diag((FIXTURES / name).read_text())
    assert (diag.format, diag.version, len(diag.results)) == (fmt, version, count)
    assert {(r.test, r.entity_id) for r in diag.results if r.entity_group == "GPU"} >= {(t, g) for g in (0, 1) for t in (
        ("pcie", "memory") if fmt == "DCGM 4.x" else ("PCIe", "GPU Memory"))}
    assert diag.serials == {0: "1652922000101", 1: "1652922000102"}
    assert all(r.status == "Pass" and not r.errors for r in diag.results)


@pytest.mark.parametrize("name,check,code,fr,severity", [
    ("dcgm-4x-fail-xid.json", "dcgm.hardware", "DCGM_XID", "DCGM_FR_XID_ERROR", "isolate"),
    ("dcgm-4x-fail-dbe-pending-page-retirement.json", "dcgm.deployment", "DCGM_MEMORY",
     "DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS", "reset"),
    ("dcgm-4x-fail-pcie-replay.json", "dcgm.integration", "DCGM_PCIE", "DCGM_FR_PCIE_REPLAY_VIOLATION", "triage"),
    ("dcgm-4x-fail-ecc-uncorrected.json", "dcgm.hardware", "DCGM_MEMORY", "DCGM_FR_VOLATILE_DBE_DETECTED", "isolate"),
    ("dcgm-4x-fail-nvlink-down.json", "dcgm.integration", "DCGM_NVLINK", "DCGM_FR_NVLINK_DOWN", "isolate"),
    ("dcgm-3x-fail-xid.json", "dcgm.hardware", "DCGM_XID", "DCGM_FR_XID_ERROR", "isolate"),
])
def test_a_dcgm_failure_is_that_gpus_failure_with_its_code_severity_message_and_next_step(name, check, code, fr,
                                                                                           severity):
    results = judged(name, returncode=226)  # dcgmi exits non-zero when a test fails: its JSON is still read
    bad = results[(check, "gpu0")]
    assert (bad.verdict, bad.code) == (Verdict.FAIL, code)
    assert fr in bad.message and f"{fr}, {severity}" in bad.message and "GPU 0" in bad.message
    error = next(e for t in bad.evidence["tests"] for e in t["errors"])
    assert (error["code"], error["severity"]) == (fr, severity) and error["next_step"] == bad.evidence["next_step"]
    assert len(error["next_step"]) > 20
    # The other GPU passed the same test; every other category passed on both.
    assert results[(check, "gpu1")].verdict is Verdict.PASS
    assert [r for r in results.values() if r.verdict is not Verdict.PASS] == [bad]
    run = results[("dcgm.run", "node")]
    assert run.verdict is Verdict.PASS and run.evidence["exit_status"] == 226
    assert run.evidence["raw"] == json.loads((FIXTURES / name).read_text())  # the raw JSON, for the vendor


@pytest.mark.parametrize("error_id, category, code, verdict", [
    (26, 8, "DCGM_SOFTWARE", Verdict.ERROR),  # DCGM_FR_HOSTENGINE_CONN: DCGM could not reach its host engine
    (56, 4, "DCGM_SOFTWARE", Verdict.ERROR),  # DCGM_FR_MEMORY_ALLOC (DCGM issue #284)
    (44, 16, "DCGM_SOFTWARE", Verdict.ERROR),  # DCGM_FR_INTERNAL
    (25, 3, "DCGM_SOFTWARE", Verdict.ERROR),  # DCGM_FR_GRAPHICS_PROCESSES: another process on the GPU
    (999, 3, "DCGM_SOFTWARE", Verdict.ERROR),  # any software configuration failure
    (101, 5, "DCGM_XID", Verdict.FAIL),  # an XID is the GPU's
    (120, 15, "DCGM_XID", Verdict.FAIL),  # fallen off the bus
])
def test_a_dcgm_failure_that_says_dcgm_could_not_test_is_not_judged(tmp_path, error_id, category, code, verdict):
    """The 2026-11-28 advice review: DCGM's own failures (its host engine, its memory, its internals)
    failed the GPU with exit 1 and RMA advice."""
    text = (FIXTURES / "dcgm-4x-fail-xid.json").read_text()
    text = text.replace('"error_id": 101', f'"error_id": {error_id}').replace('"error_category": 5',
                                                                            f'"error_category": {category}')
    (tmp_path / "x.json").write_text(text)
    run = DiagRun(["dcgmi", "diag", "-r", "2", "-j"], 226, stdout=text, stderr="", seconds=1.0, stdout_bytes=len(text))
    bad = next(r for r in checks.judge_run(run, 2, 900, GPUS) if r.subject == "gpu0" and r.verdict is not Verdict.PASS)
    assert (bad.verdict, bad.code) == (verdict, code)
    assert ("not judged" in bad.message) is (verdict is Verdict.ERROR)
    if error_id == 120:
        assert "reboot the node" in bad.evidence["next_step"]


def test_dcgm_3x_deployment_failure_names_its_gpu_from_the_number_and_the_warnings_key():
    results = judged("dcgm-3x-fail-row-remap-pending.json")
    bad = results[("dcgm.deployment", "gpu1")]
    assert (bad.verdict, bad.code) == (Verdict.FAIL, "DCGM_MEMORY")
    assert "Page Retirement/Row Remap: DCGM_FR_PENDING_ROW_REMAP, reset: GPU 1 has a row remap pending" in bad.message
    # The deployment tests without a GPU are the node's.
    assert results[("dcgm.deployment", "node")].verdict is Verdict.PASS
    assert "Inforom" in results[("dcgm.deployment", "node")].message


def test_gpus_are_named_by_serial_before_index():
    # DCGM's GPU 0 is the GPU with its serial, whatever NVML's index: here nodeqc's gpu1.
    results = judged("dcgm-4x-fail-xid.json", gpus=[Gpu(0, "1652922000102"), Gpu(1, "1652922000101")])
    assert results[("dcgm.hardware", "gpu1")].verdict is Verdict.FAIL
    assert results[("dcgm.hardware", "gpu1")].evidence["dcgm_gpu_ids"] == [0]


def test_a_gpu_dcgm_tested_but_the_run_did_not_find_is_the_nodes_failure_naming_it():
    results = judged("dcgm-4x-fail-xid.json", gpus=[Gpu(1)])
    bad = results[("dcgm.hardware", "node")]
    assert bad.verdict is Verdict.FAIL and "DCGM GPU 0, not one of this run's GPUs" in bad.message


def test_skipped_and_warned_tests():
    skipped = judged("dcgm-4x-skip.json")
    s = skipped[("dcgm.hardware", "gpu0")]
    assert (s.verdict, s.code, s.message) == (Verdict.SKIP, "DCGM_TEST_SKIPPED", "DCGM skipped memory")
    assert s.evidence["tests"][0]["info"] == ["The memory test is not supported on this GPU in MIG mode"]
    warned = judged("dcgm-4x-warn.json")[("dcgm.deployment", "gpu1")]
    assert (warned.verdict, warned.code) == (Verdict.WARN, "DCGM_WARN")
    assert "DCGM_FR_PERSISTENCE_MODE, config" in warned.message
    assert "persistence" in warned.evidence["next_step"]


def test_dcgm_that_could_not_run_says_so_as_an_error():
    r = judged("dcgm-4x-runtime-error.json", returncode=1)[("dcgm.run", "node")]
    assert (r.verdict, r.code) == (Verdict.ERROR, "DCGM_RUNTIME_ERROR")
    assert r.message == ("DCGM could not run its diagnostic: Error: the GPUs are in use by another process; stop it "
                         "before running the diagnostic.")


@pytest.mark.parametrize("name,says", [
    ("dcgm-4x-truncated.json", "dcgmi diag -j output is not JSON (cut short: it ends inside the document)"),
    ("dcgm-4x-malformed-status.json", "test_categories[1].tests[0].results[0].status is an int 3, not a string"),
    ("dcgm-not-json.txt", "dcgmi diag -j output is not JSON: Expecting value at line 1 column 1"),
])
def test_malformed_or_truncated_output_is_one_clear_error_line(name, says):
    results = judged(name)
    assert list(results) == [("dcgm.run", "node")]
    r = results[("dcgm.run", "node")]
    assert (r.verdict, r.code) == (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE")
    assert says in r.message and "\n" not in r.message and "Traceback" not in r.message
    assert r.evidence["output_end"]


def test_a_failed_dcgmi_without_output_gives_its_own_last_line():
    run = DiagRun(["dcgmi", "diag", "-r", "1", "-j"], 255, stdout="", stderr="Error: unable to establish a connection "
                  "to the specified host: localhost\nError: Unable to connect to host engine. Host engine connection "
                  "invalid/disconnected.\n")
    [r] = checks.judge_run(run, 1, 300, GPUS)
    assert (r.verdict, r.code) == (Verdict.ERROR, "DCGM_RUNTIME_ERROR")
    assert "Unable to connect to host engine" in r.message and "systemctl status nvidia-dcgm" in r.message


def test_the_raw_json_in_the_evidence_is_safe_to_show_and_bounded():
    doc = json.loads((FIXTURES / "dcgm-4x-pass-r2.json").read_text())
    doc["metadata"]["version"] = "4.2.3\x1b[2J"
    run = DiagRun(["dcgmi"], 0, stdout=json.dumps(doc), stdout_bytes=1)
    raw = checks.judge_run(run, 2, 900, GPUS)[0].evidence["raw"]
    assert raw["metadata"]["version"] == "4.2.3\\x1b[2J" and raw["DCGM Diagnostic"] == doc["DCGM Diagnostic"]
    doc["metadata"]["padding"] = "x" * checks.RAW_EVIDENCE_CHARS
    run = DiagRun(["dcgmi"], 0, stdout=json.dumps(doc), stdout_bytes=1)
    evidence = checks.judge_run(run, 2, 900, GPUS)[0].evidence
    assert "raw" not in evidence and len(evidence["raw_start"]) == checks.RAW_EVIDENCE_CHARS
    assert evidence["raw_chars"] == len(json.dumps(doc))


def test_the_failure_code_table_is_dcgms_numbering():
    # Spot checks against dcgm_errors.h (DCGM 4.6.0)
    assert (FR_NUMBERS["DCGM_FR_XID_ERROR"], FR_NUMBERS["DCGM_FR_NVLINK_DOWN"],
            FR_NUMBERS["DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS"], FR_NUMBERS["DCGM_FR_PCIE_REPLAY_VIOLATION"],
            FR_NUMBERS["DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT"]) == (101, 14, 83, 104, 132)
    assert len(set(FR_NUMBERS.values())) == len(FR_NUMBERS) == 133
    assert fr_name(999) == "DCGM_FR #999" and fr_name(None) is None
    assert fail_code(999, 13) == "DCGM_PCIE" and fail_code(999, None) == "DCGM_FAIL"


# ---------------------------------------------------------------------- untrusted input never raises

KEYS = st.sampled_from(["DCGM Diagnostic", "DCGM GPU Diagnostic", "test_categories", "tests", "results", "status",
                        "warnings", "warning", "error_id", "entity_id", "gpu_id", "category", "name", "info",
                        "runtime_error", "metadata", "entity_groups", "test_summary"])


def _any_json(kids):
    return st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4)


def _dcgm_shaped(kids):
    return st.lists(kids, max_size=3) | st.dictionaries(KEYS, kids, max_size=5)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20), _any_json,
                    max_leaves=30)
SHAPED = st.recursive(st.none() | st.integers(-5, 200) | st.sampled_from(["Pass", "Fail", "Skip", "Warn", "GPU", "0"]),
                      _dcgm_shaped, max_leaves=40)


def _never_raises(text: str) -> None:
    try:
        checks.parse_diag(text)
    except ToolOutputError as e:
        assert "\n" not in str(e)
    run = DiagRun(["dcgmi"], 0, stdout=text, stdout_bytes=len(text))
    assert checks.judge_run(run, 2, 900, GPUS)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.one_of(st.text(max_size=200), JSON.map(json.dumps), SHAPED.map(json.dumps),
                 SHAPED.map(lambda d: json.dumps({"DCGM Diagnostic": d})),
                 SHAPED.map(lambda d: json.dumps({"DCGM GPU Diagnostic": {"test_categories": [d]}}))))
def test_any_text_or_json_gives_results_or_one_line_never_a_traceback(text):
    _never_raises(text)


@pytest.mark.parametrize("digit", ["\u00b2", "\u0663", "\uff11"])  # superscript 2, Arabic-Indic 3, fullwidth 1
def test_a_digit_of_another_kind_in_dcgms_output_is_no_gpu_number(digit):
    """str.isdigit() took "²", which int() then refused: an internal error from the node's own output.
    Other scripts' digits (which int() reads) named a GPU DCGM never wrote."""
    doc = json.loads((FIXTURES / "dcgm-3x-pass-r2.json").read_text())
    doc["GPU Device Serials"] = {digit: "1652922000109", "0": "1652922000101"}
    _never_raises(json.dumps(doc))
    assert checks._serials(doc, "DCGM 3.x") == {0: "1652922000101"}
    doc["DCGM GPU Diagnostic"]["test_categories"][-1]["tests"][0]["results"][0]["gpu_id"] = digit
    with pytest.raises(ToolOutputError, match="gpu_id is .*not a whole number"):
        checks.parse_diag(json.dumps(doc))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4000))
def test_any_cut_of_a_real_output_never_raises(cut):
    _never_raises((FIXTURES / "dcgm-4x-fail-xid.json").read_text()[:cut])


# ---------------------------------------------------------------------- the backend, through a stand-in dcgmi

FAKE_DCGMI = """#!PYTHON
import os, subprocess, sys, time
with open(os.environ["FAKE_DCGM_ARGS"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_DCGM_SLEEP"):
    child = subprocess.Popen(["sleep", "300"])  # nvvs, DCGM's plugin process, hangs with it
    with open(os.environ["FAKE_DCGM_ARGS"] + ".child", "w") as f:
        f.write(str(child.pid))
    sys.stdout.write('{"DCGM Diagnostic": {"test_categ')
    sys.stdout.flush()
    time.sleep(float(os.environ["FAKE_DCGM_SLEEP"]))
if os.environ.get("FAKE_DCGM_FLOOD"):
    chunk = "x" * 65536
    for _ in range(int(os.environ["FAKE_DCGM_FLOOD"])):
        sys.stdout.write(chunk)
    sys.exit(0)
sys.stdout.write(open(os.environ["FAKE_DCGM_FIXTURE"]).read())
sys.exit(int(os.environ.get("FAKE_DCGM_EXIT", "0")))
"""


@pytest.fixture
def fake_dcgmi(tmp_path, monkeypatch):
    """A stand-in `dcgmi` on PATH (in tmp_path, never the repository) that prints a fixture; its
    arguments are logged to the file it returns."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    exe = bin_dir / "dcgmi"
    exe.write_text(FAKE_DCGMI.replace("#!PYTHON", f"#!{sys.executable}"))
    exe.chmod(0o755)
    log = tmp_path / "dcgmi-args.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DCGM_ARGS", str(log))
    monkeypatch.setenv("FAKE_DCGM_FIXTURE", str(FIXTURES / "dcgm-4x-fail-xid.json"))
    return log


def test_the_backend_runs_dcgmi_and_keeps_its_output_and_exit_status(fake_dcgmi, monkeypatch):
    monkeypatch.setenv("FAKE_DCGM_EXIT", "226")
    dcgmi = backend.which_dcgmi()
    assert dcgmi and Path(dcgmi).parent == fake_dcgmi.parent / "fakebin"
    run = backend.run_diag(dcgmi, 3, 30, [0, 2])
    assert (run.returncode, run.timed_out, run.truncated) == (226, False, False)
    assert json.loads(run.stdout) == json.loads((FIXTURES / "dcgm-4x-fail-xid.json").read_text())
    assert fake_dcgmi.read_text() == "diag -r 3 -j -i 0,2\n"


def test_a_hanging_dcgmi_is_killed_with_its_process_group_and_is_that_checks_error(fake_dcgmi, monkeypatch):
    monkeypatch.setenv("FAKE_DCGM_SLEEP", "300")
    start = time.monotonic()
    run = backend.run_diag(backend.which_dcgmi(), 2, 1.0, term_grace_s=0.5, kill_wait_s=2)
    assert time.monotonic() - start < 10
    assert run.timed_out and run.returncode is None and not run.unkillable
    child = int(Path(str(fake_dcgmi) + ".child").read_text())
    for _ in range(50):  # its child, in the same group, was killed too (reaped by init)
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("dcgmi's child outlived the timeout")
    [r] = checks.judge_run(run, 2, 1.0, GPUS)
    assert (r.verdict, r.code) == (Verdict.ERROR, "DCGM_HANG")
    assert r.message.endswith("did not finish within 1 s; it was killed")


def test_the_runs_abort_ends_a_running_dcgmi_at_once(fake_dcgmi, monkeypatch):
    monkeypatch.setenv("FAKE_DCGM_SLEEP", "300")
    start = time.monotonic()
    run = backend.run_diag(backend.which_dcgmi(), 3, 3600, should_abort=lambda: time.monotonic() - start > 1,
                           term_grace_s=0.5, kill_wait_s=2)
    assert time.monotonic() - start < 10 and run.aborted and not run.timed_out
    [r] = checks.judge_run(run, 3, 3600, GPUS)
    assert (r.verdict, r.code) == (Verdict.SKIP, "RUN_ABORTED")


def test_output_past_the_bound_is_counted_not_kept(fake_dcgmi, monkeypatch):
    monkeypatch.setenv("FAKE_DCGM_FLOOD", "20")  # 1.25 MiB
    monkeypatch.setattr(backend, "MAX_OUTPUT_BYTES", 256 << 10)
    run = backend.run_diag(backend.which_dcgmi(), 1, 30)
    assert run.stdout_bytes == 20 * 65536 and len(run.stdout) == 256 << 10 and run.truncated
    [r] = checks.judge_run(run, 1, 30, GPUS)
    assert (r.verdict, r.code) == (Verdict.ERROR, "TOOL_OUTPUT_UNREADABLE") and "1310720 bytes" in r.message


# ---------------------------------------------------------------------- the run's step

def test_levels_from_option_profile_and_quick():
    from nodeqc.run.dcgm import level_of, parse_level
    from nodeqc.spec.profile import load_profile

    profile = load_profile("h100")
    assert (level_of(None, profile, False), level_of(None, profile, True)) == (2, 1)
    assert (level_of("3", profile, True), level_of("off", profile, False)) == (3, 0)
    assert [parse_level(t) for t in ("off", "0", "1", " 4 ", "OFF")] == ["off", "off", "1", "4", "off"]
    for bad in ("5", "-1", "two", ""):
        with pytest.raises(ValueError):
            parse_level(bad)


def _report(proc):
    path = Path(proc.stdout.strip().splitlines()[-1])
    return json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))["predicate"]


def _checks(predicate, family="dcgm"):
    return {(c["name"], c["subject"]): c for c in predicate["checks"] if c["name"].startswith(family + ".")}


SIM = ("--headless", "--profile", "h100", "--simulate", "h100", "--quick")


def test_dcgm_missing_is_a_skip_that_says_how_to_install_it(tmp_path):
    empty = tmp_path / "nobin"
    empty.mkdir()
    path = ":".join(p for p in os.environ["PATH"].split(":") if not (Path(p) / "dcgmi").exists())
    p = cli(*SIM, "--dcgm", "2", "--only", "dcgm,host.cpu", "--out", str(tmp_path / "r"), env={"PATH": path})
    run = _checks(_report(p))[("dcgm.run", "node")]
    assert (run["verdict"], run["code"]) == ("skip", "DCGM_MISSING")
    assert run["message"].startswith("DCGM diagnostic (level 2) not run: dcgmi is not on PATH")
    assert "datacenter-gpu-manager" in run["message"] and "nv-hostengine" in run["message"] and p.returncode == 0


def test_a_simulated_run_does_not_run_dcgmi_unless_asked(fake_dcgmi, tmp_path):
    """A machine with DCGM and GPUs running a simulation: its real GPUs are not tested as the simulated ones."""
    p = cli(*SIM, "--only", "dcgm,host.cpu", "--out", str(tmp_path / "r"))
    run = _checks(_report(p))[("dcgm.run", "node")]
    assert (run["verdict"], run["code"]) == ("skip", "DCGM_NOT_HERE") and "the simulated node has no DCGM" in run["message"]
    assert not fake_dcgmi.exists() and p.returncode == 0


def test_a_simulated_run_with_dcgm_failing_gpu0_exits_1_naming_gpu0(fake_dcgmi, tmp_path):
    p = cli(*SIM, "--dcgm", "1", "--only", "dcgm", "--out", str(tmp_path / "r"))
    assert p.returncode == 1, p.stderr[-2000:]
    assert fake_dcgmi.read_text() == "diag -r 1 -j\n"
    found = _checks(_report(p))
    bad = found[("dcgm.hardware", "gpu0")]
    assert (bad["verdict"], bad["code"]) == ("fail", "DCGM_XID") and "DCGM_FR_XID_ERROR" in bad["message"]
    assert "nvidia-smi -r -i 0" in bad["remediation"]
    assert found[("dcgm.run", "node")]["evidence"]["raw"]["metadata"]["version"] == "4.2.3"
    assert "dcgm.hardware" in p.stderr and "gpu0" in p.stderr


def test_a_hanging_dcgmi_is_the_runs_error_and_the_run_goes_on(fake_dcgmi, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_DCGM_SLEEP", "300")
    profile = tmp_path / "short.toml"
    profile.write_text('extends = "h100"\n\n[dcgm]\ntimeout_s = 1\n')
    args = [a if a != "h100" or i != 2 else str(profile) for i, a in enumerate(SIM)]
    start = time.monotonic()
    p = cli(*args, "--dcgm", "2", "--only", "dcgm,host.cpu", "--out", str(tmp_path / "r"))
    assert time.monotonic() - start < 60 and p.returncode == 2
    predicate = _report(p)
    run = _checks(predicate)[("dcgm.run", "node")]
    assert (run["verdict"], run["code"]) == ("error", "DCGM_HANG") and "within 1 s" in run["message"]
    assert _checks(predicate, "host")[("host.cpu", "node")]["verdict"] == "pass"  # the run went on
    assert fake_dcgmi.read_text() == "diag -r 2 -j\n"


@pytest.mark.parametrize("args,says", [
    (["--dcgm", "5"], "expected a DCGM diagnostic level 1, 2, 3 or 4, or 'off' (or 0), got '5'"),
])
def test_a_bad_dcgm_level_is_one_line(args, says, tmp_path):
    p = cli(*SIM, *args, "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) <= 3


def test_dcgm_off_and_skip_dcgm(fake_dcgmi, tmp_path):
    p = cli(*SIM, "--only", "dcgm", "--dcgm", "off", "--out", str(tmp_path / "a"))
    run = _checks(_report(p))[("dcgm.run", "node")]
    assert (run["verdict"], run["code"], run["message"]) == ("skip", "DCGM_OFF", "DCGM diagnostic not run: --dcgm off")
    p = cli(*SIM, "--only", "host.cpu", "--skip", "dcgm", "--out", str(tmp_path / "b"))
    assert not _checks(_report(p)) and not fake_dcgmi.exists()


def test_a_diagnostic_of_nothing_or_of_some_gpus_only_is_no_pass(tmp_path):
    """2026-11-28 audit: a 4.x document whose tests held no result passed as "0 tests", and a GPU
    DCGM gave no result for had no result and no mention."""
    doc = json.loads((FIXTURES / "dcgm-4x-pass-r2.json").read_text())
    for category in doc["DCGM Diagnostic"]["test_categories"]:
        for test in category["tests"]:
            test["results"] = []
    empty = json.dumps(doc)
    run = DiagRun(["dcgmi", "diag", "-r", "2", "-j"], 0, stdout=empty, seconds=12.0, stdout_bytes=len(empty))
    # Each test's summary says Pass, but no GPU has a result: neither GPU was diagnosed.
    got = {(r.name, r.subject): r for r in checks.judge_run(run, 2, 900, GPUS)}
    for gpu in ("gpu0", "gpu1"):
        assert (got["dcgm.run", gpu].verdict, got["dcgm.run", gpu].code) == (Verdict.ERROR, "DCGM_RUNTIME_ERROR")
    for category in doc["DCGM Diagnostic"]["test_categories"]:
        category["tests"] = []  # categories that ran no test at all
    nothing = json.dumps(doc)
    run = DiagRun(["dcgmi", "diag", "-r", "2", "-j"], 0, stdout=nothing, seconds=12.0, stdout_bytes=len(nothing))
    [r] = checks.judge_run(run, 2, 900, GPUS)
    assert (r.name, r.subject, r.verdict, r.code) == ("dcgm.run", "node", Verdict.ERROR, "DCGM_RUNTIME_ERROR")
    assert r.message == "DCGM 4.2.3: level 2 reported no test result: nothing was diagnosed"
    three = judged("dcgm-4x-pass-r2.json", gpus=[Gpu(0), Gpu(1), Gpu(2)])
    assert three["dcgm.run", "node"].verdict is Verdict.PASS and three["dcgm.hardware", "gpu1"].verdict is Verdict.PASS
    missing = three["dcgm.run", "gpu2"]
    assert (missing.verdict, missing.code) == (Verdict.ERROR, "DCGM_RUNTIME_ERROR")
    assert missing.message.endswith("level 2 reported no result for this GPU: not diagnosed")
    assert ("dcgm.run", "gpu2") not in judged("dcgm-4x-pass-r2.json")  # two GPUs, both reported: nothing more


def _memtest_diag(results: list[dict], serials: dict[int, str]) -> list:
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "memtest", "results": results}]}]},
        "entity_groups": [{"entity_group": "GPU", "entities": [
            {"entity_id": i, "serial_num": s} for i, s in serials.items()]}],
        "metadata": {"version": "4.1"}}
    return DiagRun(["dcgmi"], 0, stdout=json.dumps(doc))


DBE = {"warning": "DBE", "error_id": 52, "error_category": 0, "error_severity": 2}


def test_a_dcgm_gpu_whose_serial_is_none_of_the_runs_is_not_the_run_gpu_of_its_index():
    """2026-11-29 fuzzing: DCGM's GPU 1 (serial ZZZ, none of this run's) failed its memory test,
    and the failure was laid on the run's gpu1 (serial B, which DCGM tested as its GPU 0)."""
    run = _memtest_diag([{"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
                         {"entity_group": "GPU", "entity_id": 1, "status": "Fail", "warnings": [DBE]}],
                        {0: "B", 1: "ZZZ"})
    found = {(r.name, r.subject): r for r in checks.judge_run(run, 2, 60, [Gpu(0, "A"), Gpu(1, "B")])}
    assert found[("dcgm.hardware", "gpu1")].verdict is Verdict.PASS
    node = found[("dcgm.hardware", "node")]
    assert node.verdict is Verdict.FAIL and node.message.endswith("(DCGM GPU 1, not one of this run's GPUs)")
    assert found[("dcgm.run", "gpu0")].code == "DCGM_RUNTIME_ERROR"  # its serial's GPU was not diagnosed


def test_a_hardware_finding_leads_over_a_software_code_listed_before_it():
    """An internal error listed before a double-bit error made the memory failure 'DCGM could not
    test, not judged' (ERROR)."""
    internal = {"warning": "internal", "error_id": 44, "error_category": 0, "error_severity": 0}
    run = _memtest_diag([{"entity_group": "GPU", "entity_id": 0, "status": "Fail", "warnings": [internal, DBE]}], {})
    [bad] = [r for r in checks.judge_run(run, 2, 60, [Gpu(0, "A")]) if r.name == "dcgm.hardware"]
    assert (bad.subject, bad.verdict, bad.code) == ("gpu0", Verdict.FAIL, "DCGM_MEMORY")
    run = _memtest_diag([{"entity_group": "GPU", "entity_id": 0, "status": "Fail", "warnings": [internal]}], {})
    [alone] = [r for r in checks.judge_run(run, 2, 60, [Gpu(0, "A")]) if r.name == "dcgm.hardware"]
    assert alone.verdict is Verdict.ERROR and alone.message.endswith("DCGM could not test, not judged")
