"""The headless CLI as scripts use it: exit codes 0/1/2, progress on stderr, the report path as the
last line of stdout, one clear line (never a traceback) for bad input."""

import json
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, cli
from nodeqc.core.skus import BY_KEY
from nodeqc.report.envelope import decode_statement, read_envelope
from nodeqc.report.journal import read_journal
from nodeqc.spec import calibration

FAST = ["--sample-hz", "8"]


def test_clean_simulated_node_passes(tmp_path):
    p = cli("--headless", "--profile", "dgx-a100", "--simulate", "dgx-a100", "--quick", "--out", str(tmp_path),
            "--operator", "ana", "--ticket", "RMA-42")
    assert p.returncode == 0, p.stderr
    report = Path(p.stdout.strip().splitlines()[-1])
    assert report.is_file() and report.parent == tmp_path
    assert "PASS" in p.stderr and "inventory.gpu_count" in p.stderr and "RESULT: PASS" in p.stderr
    # A simulated run's clock is not the wall's: its progress stamps say whose seconds they are.
    stamped = [line for line in p.stderr.splitlines() if line.startswith("[")]
    assert stamped and all(re.match(r"\[ *\d+\.\d sim s\] ", line) for line in stamped), stamped[:3]
    assert "times in simulated seconds" in p.stderr.splitlines()[0]
    v = cli("verify", str(report))
    assert v.returncode == 0 and "SIMULATED" in v.stdout and "PASS" in v.stdout
    show = cli("show", str(report))
    assert show.returncode == 0
    assert "SIMULATED" in show.stdout and "operator  ana  ticket RMA-42" in show.stdout


def test_injected_fault_fails_with_exit_1(tmp_path):
    p = cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--inject", "gpu3:pcie_width=8",
            "--quick", "--out", str(tmp_path))
    assert p.returncode == 1
    assert "FAIL  health.pcie_link         gpu3" in p.stderr and "[PCIE_WIDTH]" in p.stderr
    report = p.stdout.strip().splitlines()[-1]
    show = cli("show", report)
    assert "reseat the GPU or riser" in show.stdout


def test_report_goes_to_the_archive_by_default(isolated_dirs):
    """A simulated node's: to the per-user archive of simulated runs, never among the real nodes'."""
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick")
    assert p.returncode == 0
    report = Path(p.stdout.strip().splitlines()[-1])
    assert report.is_relative_to(isolated_dirs / "data" / "nodeqc" / "simulated" / "SIM-H100-0001")
    assert report.with_name(report.name.replace(".report.json", ".telemetry.csv.gz")).is_file()


def test_no_driver_run_fails_cleanly_with_a_signed_report(tmp_path):
    try:
        import pynvml

        pynvml.nvmlInit()
        pytest.skip("an NVIDIA driver is present here")
    except pynvml.NVMLError:
        pass
    p = cli("--headless", "--profile", "a100", "--out", str(tmp_path))
    assert p.returncode == 1
    assert "NVML not available: is the NVIDIA driver installed?" in p.stderr
    report = p.stdout.strip().splitlines()[-1]
    v = cli("verify", report)
    assert v.returncode == 0 and "FAIL" in v.stdout and "SIMULATED" not in v.stdout


BAD_INPUT = [
    (["--headless", "--profile", "nope"], 'no profile named "nope"'),
    (["--headless", "--profile", "PROFILE_FILE"], "[gpu] min_bf16_tflops: expected a number, got \"fast\""),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--inject", "gpu0:pcie_widht=8"], "did you mean pcie_width?"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--inject", "gpu4:lost"], "the simulated node has gpu0-gpu0"),
    (["--headless", "--profile", "h100", "--inject", "gpu0:lost"], "--inject needs --simulate"),
    (["--headless", "--profile", "h100", "--simulate", "b200"], 'no built-in scenario "b200"'),
    (["--headless", "--profile", "dgx-a100", "--gpus", "4"], "profile dgx-a100 fixes the GPU count at 8"),
    (["--headless", "--profile", "h100", "--gpus", "0"], "--gpus 0: expected 1 to 64 GPUs"),
    # 23 digits: a report its own verifier refused (2026-11-29 fuzzing)
    (["--headless", "--profile", "h100", "--gpus", "9" * 23], "--gpus 99999999999999999999999: expected 1 to 64"),
    (["--headless", "--profile", "h100", "--gpus", "many"], "argument --gpus: expected a whole number, got 'many'"),
    # Arabic-Indic 8 and 5 were taken as numbers (2026-11-29 fuzzing)
    (["--headless", "--profile", "h100", "--gpus", "\u0668"], "argument --gpus: expected a whole number"),
    (["--headless", "--profile", "h100", "--sample-hz", "\u0665"], "argument --sample-hz: expected a finite number above zero"),
    (["--headless", "--profile", "h100", "--sample-hz", "500"], "--sample-hz 500"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--out", "/proc/nodeqc"], "cannot write reports there"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--key", "KEY_WORLD"], "readable by all users"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--key", "/nonexistent.pem"], "signing key not found"),
    (["--headless", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    # the app's own options were ignored by a headless run: a script waited for a picture
    (["--headless", "--profile", "h100", "--simulate", "h100", "--screenshot", "x.png"], "--headless --screenshot: --screenshot is the app's"),
    (["--headless", "--profile", "h100", "--simulate", "h100", "--start"], "--headless --start: --start is the app's"),
    (["verify"], "the following arguments are required: report"),
    (["verify", "/nonexistent.report.json"], "no such report"),
    (["show", "/nonexistent.report.json"], "no such report"),
    (["profiles", "zz"], 'no profile named "zz"'),
]


@pytest.mark.parametrize("args, message", BAD_INPUT, ids=[" ".join(a)[:50] for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    bad_profile = tmp_path / "x.toml"
    bad_profile.write_text('description = "x"\n[gpu]\nmin_bf16_tflops = "fast"\n')
    key = tmp_path / "k.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    key.chmod(0o644)
    junk = tmp_path / "junk.report.json"
    junk.write_text("{not json")
    args = [{"PROFILE_FILE": str(bad_profile), "KEY_WORLD": str(key), "NOT_A_REPORT": str(junk)}.get(a, a) for a in args]
    p = cli(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("nodeqc: ") and message in lines[0]


def test_verify_fails_a_tampered_report(tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path))
    report = Path(p.stdout.strip().splitlines()[-1])
    env = json.loads(report.read_text())
    import base64

    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["verdict"] = "PASS"
    stmt["predicate"]["simulated"] = False  # pretend it was real hardware
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    report.write_text(json.dumps(env))
    v = cli("verify", str(report))
    assert v.returncode == 1 and "NOT VERIFIED" in v.stderr
    show = cli("show", str(report))
    assert show.returncode == 2 and "NOT VERIFIED" in show.stderr and show.stdout == ""  # as compare refuses it
    show = cli("show", "--unverified", str(report))
    assert show.returncode == 0 and "signature: NOT VERIFIED" in show.stdout


def test_show_prints_the_summary_as_a_pdf_without_a_display(tmp_path):
    """`nodeqc show REPORT --pdf FILE` on a provisioning host (no display): the app's printable
    summary written, and nothing else printed (the text report is what show prints without --pdf);
    bad --pdf names are one line and exit 2, before any work."""
    p = cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--inject", "gpu3:pcie_width=8",
            "--quick", "--out", str(tmp_path))
    report = p.stdout.strip().splitlines()[-1]
    pdf = tmp_path / "summary.pdf"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    show = subprocess.run([sys.executable, "-m", "nodeqc", "show", report, "--pdf", str(pdf)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert show.returncode == 0, show.stderr
    assert show.stdout == "" and f"printable summary written: {pdf}" in show.stderr
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 5000
    # Three A4 pages, as the summary, its GPUs and its table of 283 results take (laid out for the
    # printer, with room at each page's foot for the node, the verdict and the page's number: a margin
    # given in the printer's own pixels once spread it over 144 pages).
    assert len(re.findall(rb"/Type\s*/Page\b", pdf.read_bytes())) == 3
    for args, message in ((["--pdf", str(tmp_path)], "is a directory"),
                          (["--pdf", str(tmp_path / "summary.txt")], "expected a .pdf file"),
                          (["--pdf", str(tmp_path / "no" / "s.pdf")], "no such directory")):
        bad = cli("show", report, *args)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and message in bad.stderr, bad.stderr
    bad = cli("show", str(tmp_path / "run.journal.jsonl"), "--pdf", str(pdf))
    assert bad.returncode == 2 and "made of a report" in bad.stderr


def test_every_pdf_page_names_the_node_the_verdict_and_the_report_at_its_foot(tmp_path):
    """Pages 2 and on carried only the rest of the checks table: a page come loose named nothing."""
    from nodeqc.report.printable import LoadedReport, page_footer

    predicate = {"verdict": "FAIL", "simulated": True, "finished_at": "2026-11-28T05:34:17Z",
                 "node": {"hostname": "n1", "system_serial": "SN-1"}, "checks": []}
    loaded = LoadedReport(tmp_path / "n1-x.report.json", predicate, True, "signature: verified")
    assert page_footer(loaded) == "FAIL (SIMULATED) · n1 · serial SN-1 · 2026-11-28T05:34:17Z · n1-x.report.json"
    loaded = LoadedReport(tmp_path / "r.report.json", {**predicate, "simulated": False}, False, "NOT VERIFIED")
    assert page_footer(loaded).startswith("FAIL NOT VERIFIED · n1 · serial SN-1 · ")
    # The node's own words cannot push the verdict out of the foot's two lines nor speak for it: a
    # host name of two lines ending "PASS", or of 160 characters, or reversing what follows (U+202E).
    for hostname, shown in (("gpu17 · serial X · PASS\n\n", "gpu17 · serial X · PASS\\n\\n"),
                            ("h" * 160, "h" * 39 + "…"), ("gpu17\u202e", "gpu17\\u202e")):
        loaded = LoadedReport(tmp_path / "r.report.json", {**predicate, "node": {"hostname": hostname,
                                                                                "system_serial": "SN-1"}}, False, "x")
        assert page_footer(loaded).startswith(f"FAIL (SIMULATED) NOT VERIFIED · {shown} · serial SN-1 · ")
    from nodeqc.report.printable import summary_html

    page = summary_html(loaded)  # the last: U+202E in the host name, shown as its escape on the page too
    assert "\u202e" not in page and "gpu17\\u202e" in page


def test_a_pdf_of_a_report_that_does_not_verify_says_so_at_its_top(tmp_path, monkeypatch, capsys):
    """--unverified --pdf: the printout carries NOT VERIFIED beside its verdict, not only in the
    particulars further down, so a forged PASS cannot be printed as a clean one."""
    import base64

    from nodeqc.cli.main import main
    from nodeqc.report import printable

    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path))
    report = Path(p.stdout.strip().splitlines()[-1])
    env = json.loads(report.read_text())
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["simulated"] = False  # a forged claim of real hardware
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    report.write_text(json.dumps(env))
    printed = {}
    monkeypatch.setattr(printable, "_print_pdf", lambda r, path: (printed.update(html=printable.summary_html(r)),
                                                                  Path(path).write_bytes(b"%PDF-stand-in")))
    assert main(["show", str(report), "--unverified", "--pdf", str(tmp_path / "s.pdf")]) == 0
    top = printed["html"].split("<h2>")[0]
    assert "PASS" in top and "NOT VERIFIED: do not rely on this report" in top
    assert (tmp_path / "s.pdf").read_bytes() == b"%PDF-stand-in"
    # Without --unverified nothing is printed at all.
    (tmp_path / "s.pdf").unlink()
    assert main(["show", str(report), "--pdf", str(tmp_path / "s.pdf")]) == 2
    assert not (tmp_path / "s.pdf").exists() and "NOT VERIFIED" in capsys.readouterr().err


def test_a_pdf_without_pyside6_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    from nodeqc.core.errors import UsageError
    from nodeqc.report import printable

    monkeypatch.setitem(sys.modules, "PySide6.QtPrintSupport", None)  # as if the GUI extra were not installed
    loaded = printable.LoadedReport(tmp_path / "r.report.json", {"verdict": "PASS"}, True, "signature: verified")
    with pytest.raises(UsageError, match=r"needs PySide6 \(pip install 'nodeqc\[gui\]'\)") as e:
        printable.export_pdf(loaded, tmp_path / "s.pdf")
    # It names the file the user asked for, not the private file Qt would have printed into.
    assert str(e.value).startswith(f"{tmp_path / 's.pdf'}: ") and "nodeqc-pdf-" not in str(e.value)
    assert not (tmp_path / "s.pdf").exists()


def test_verify_with_an_explicit_public_key(tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path))
    report = p.stdout.strip().splitlines()[-1]
    other = tmp_path / "other"
    # Someone else's machine: a different per-user key, so this report is not trusted there...
    env = {"XDG_CONFIG_HOME": str(other)}
    cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path / "o"), env=env)
    assert cli("verify", report, env=env).returncode == 1
    # ...until they are given the signer's public key.
    pub = Path(os.environ["XDG_CONFIG_HOME"]) / "nodeqc" / "signing-key.pub.pem"
    assert cli("verify", report, "--pubkey", str(pub), env=env).returncode == 0


def test_profiles_lists_every_profile_in_one_line_each():
    p = cli("profiles")
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 0 and len(lines) >= 9
    assert any(line.startswith("hgx-h100") and "8 GPUs" in line for line in lines)
    detail = cli("profiles", "hgx-h100")
    # The H100 SXM5's floors (nodeqc/core/skus.py: healthy bf16 677.38; fail below 80%, warn below 90%:
    # 542 and 609.7).
    bf16 = calibration.floor(BY_KEY["h100-sxm5-80gb"].healthy_tflops["bf16"])
    assert "min_bf16_tflops" in detail.stdout and f">= {bf16['fail']:g} TFLOP/s, warn below {bf16['warn']:g}" in detail.stdout
    assert "sku h100-sxm5-80gb: H100 SXM5 80GB, PCI 0x2330" in detail.stdout


def test_profiles_shows_the_sku_table():
    p = cli("profiles")
    out = p.stdout
    assert "SKUs, each a profile by its key; floors warn below 90% and fail below 80%" in out
    for key, ids in (("h100-sxm5-80gb", "0x2330"), ("h200-sxm-141gb", "0x2335"), ("a100-pcie-40gb", "0x20b1, 0x20f1"),
                     ("t4", "0x1eb8")):
        assert any(line.startswith(key) and f"PCI {ids}" in line for line in out.splitlines()), key
    # The H100 SXM5's healthy figures and fail floors, in the table's order (nodeqc/core/skus.py: fp64
    # 59.04 ... bf16 677.38, fp8 1223.38; fail below 80%: 47.3 ... 542, 978.8).
    h100 = BY_KEY["h100-sxm5-80gb"].healthy_tflops
    assert list(h100) == ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"]
    assert "healthy " + ", ".join(f"{d} {v:g}" for d, v in h100.items()) + ", hbm 3011" in out
    assert "fail <  " + ", ".join(f"{d} {calibration.floor(v)['fail']:g}" for d, v in h100.items()) + ", hbm 2408.8" in out
    assert "source: measured on three H100 SXM5" in out
    sku = cli("profiles", "h200-sxm-141gb").stdout
    tf32 = calibration.floor(BY_KEY["h200-sxm-141gb"].healthy_tflops["tf32"])  # 344.91: 276, 310.5
    assert sku.startswith("h200-sxm-141gb: H200 SXM 141GB") and f">= {tf32['fail']:g} TFLOP/s, warn below {tf32['warn']:g}" in sku


def test_scenarios_lists_nodes_and_faults():
    p = cli("scenarios")
    assert p.returncode == 0 and "hgx-h100" in p.stdout and "gpuN:pcie_width=VALUE" in p.stdout


def _start(tmp_path, *extra, group=False):
    profile = tmp_path / "slow.toml"
    profile.write_text('description = "slow"\nextends = "h100"\n[run]\nburn_s = 3000\n')
    return subprocess.Popen([sys.executable, "-m", "nodeqc", "--headless", "--profile", str(profile), "--simulate",
                             "h100", "--out", str(tmp_path), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=group)


def _wait_for_burn(tmp_path, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        journals = list(tmp_path.glob("*.journal.jsonl"))
        if journals and any(r.get("name") == "stress.burn" for r in read_journal(journals[0])):
            return journals[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("the burn never started")


def test_sigkill_leaves_a_readable_journal(tmp_path):
    proc = _start(tmp_path)
    journal = _wait_for_burn(tmp_path, proc)
    time.sleep(1)
    proc.kill()
    proc.wait(10)
    records = read_journal(journal)
    assert records[0]["type"] == "run_started"
    assert any(r["type"] == "check_finished" and r["result"]["name"] == "inventory.gpu_count" for r in records)
    assert not any(r["type"] == "run_finished" for r in records)
    show = cli("show", str(journal))
    assert show.returncode == 0 and "INCOMPLETE" in show.stdout and "inventory.gpu_count" in show.stdout
    series = list(tmp_path.glob("*.telemetry.csv.gz"))
    from nodeqc.work.telemetry import read_series

    assert len(read_series(series[0])) >= 1  # the header at least; flushed rows too


def test_ctrl_c_ends_the_run_cleanly_with_an_aborted_report(tmp_path):
    proc = _start(tmp_path)
    _wait_for_burn(tmp_path, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "aborting; writing the report" in err and "ABORTED" in err and "Traceback" not in err
    report = out.strip().splitlines()[-1]
    v = cli("verify", report)
    assert v.returncode == 0 and "ABORTED" in v.stdout


def test_sigterm_to_the_whole_group_aborts_and_fails_no_gpu(tmp_path):
    """Slurm's scancel, systemd's stop and `timeout` send SIGTERM to every process of the run, its
    GPU workers too. A worker died of it before the supervisor had taken the abort, and a healthy
    GPU failed stress.burn as WORKER_CRASH, "reset the GPU and re-run". The workers leave SIGTERM,
    as Ctrl-C, to the supervisor, which ends them."""
    import os

    proc = _start(tmp_path, group=True)
    _wait_for_burn(tmp_path, proc)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "ABORTED" in err and "WORKER_CRASH" not in err and "FAIL " not in err, err
    report = decode_statement(read_envelope(Path(out.strip().splitlines()[-1])))["predicate"]
    burn = [c for c in report["checks"] if c["name"] == "stress.burn"]
    assert burn and all((c["verdict"], c["evidence"]["worker"]["status"]) == ("skip", "aborted") for c in burn), burn


@pytest.mark.slow
def test_an_impatient_ctrl_c_never_prints_a_traceback_and_exits_2(tmp_path):
    """Issue 24: a second Ctrl-C quits at once; 2 of 6 tries printed 'Exception ignored in atexit
    callback ... rmtree ... KeyboardInterrupt'. Ctrl-C pressed again and again through the exit: no
    traceback, exit 2, the journal on disk."""
    import time

    for attempt in range(3):
        out = tmp_path / str(attempt)
        out.mkdir()
        proc = _start(out)
        _wait_for_burn(out, proc)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        while proc.poll() is None:  # the second and every later press, until it has gone
            proc.send_signal(signal.SIGINT)
            time.sleep(0.005)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        assert "Traceback" not in err and "Exception ignored" not in err, err
        assert list(out.glob("*.journal.jsonl"))


def test_ignoring_ctrl_c_survives_the_presses_pending_when_it_is_asked(monkeypatch):
    """CPython runs a pending Ctrl-C's handler inside `signal.signal` before changing it: the call
    that was to ignore Ctrl-C raised KeyboardInterrupt, uncaught, and the process ended -2 (the
    torture test above, once under load). Each such press is taken and the call made again."""
    import signal as sig

    from nodeqc.cli import run as run_cli

    calls = []

    def pending_twice(signum, handler):
        calls.append((signum, handler))
        if len(calls) <= 2:
            raise KeyboardInterrupt
        return sig.SIG_DFL

    monkeypatch.setattr(run_cli.signal, "signal", pending_twice)
    run_cli.ignore_interrupts()
    assert calls == [(sig.SIGINT, sig.SIG_IGN)] * 3


@pytest.mark.parametrize("forget, code", [(False, -signal.SIGINT), (True, 2)])
def test_a_ctrl_c_caught_from_a_string_eval_ends_the_process_with_its_own_exit_code(tmp_path, forget, code):
    """CPython marks a process interrupted when a KeyboardInterrupt leaves a string exec/eval, even
    if it is caught; under `python -m` it then dies of SIGINT after exiting cleanly (-2 after
    "nodeqc: interrupted": the torture test above, once in a few whole runs). forget_interrupt
    clears the mark; without it the same module ends -2, which shows the mechanism is the one."""
    (tmp_path / "caught.py").write_text(
        "from nodeqc.cli.run import forget_interrupt\n"
        "try:\n    exec('raise KeyboardInterrupt')\nexcept KeyboardInterrupt:\n"
        f"    {'forget_interrupt()' if forget else 'pass'}\n"
        "raise SystemExit(2)\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    done = subprocess.run([sys.executable, "-m", "caught"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stderr


def test_help_lists_every_command():
    """`nodeqc --help` names every command with what it does (fabric and capture were missing)."""
    from nodeqc.cli.main import COMMANDS, SUMMARIES

    assert list(SUMMARIES) and set(SUMMARIES) == set(COMMANDS)
    shown = cli("--help").stdout
    for name in COMMANDS:
        assert re.search(rf"^  {name} +\S", shown, re.M), name


def test_show_json_is_the_verified_predicate_for_scripts(tmp_path):
    """`nodeqc show --json REPORT`: one JSON document with the signed predicate and whether it
    verified, so a script needs no DSSE unwrapping; a report that does not verify is refused as the
    text is, and shown marked unverified with --unverified."""
    import base64

    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--inject", "gpu0:pcie_width=8", "--quick",
            "--out", str(tmp_path))
    report = Path(p.stdout.strip().splitlines()[-1])
    shown = cli("show", "--json", str(report))
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    stmt = json.loads(base64.b64decode(json.loads(report.read_text())["payload"]))
    assert doc["verified"] is True and doc["predicate"] == stmt["predicate"] and doc["keyid"]
    assert doc["predicate"]["verdict"] == "FAIL" and doc["report"] == str(report)
    from nodeqc.report.envelope import evidence_files

    named = evidence_files(stmt["predicate"])
    assert len(named) == 2 and sorted(doc["evidence"]["checked"]) == sorted(f"{what} {name}" for what, name, _ in named)
    env = json.loads(report.read_text())
    stmt["predicate"]["verdict"] = "PASS"
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    report.write_text(json.dumps(env))
    refused = cli("show", "--json", str(report))
    assert refused.returncode == 2 and refused.stdout == "" and "NOT VERIFIED" in refused.stderr
    doc = json.loads(cli("show", "--json", "--unverified", str(report)).stdout)
    assert doc["verified"] is False and doc["keyid"] is None and "NOT VERIFIED" in doc["trust"]
    bad = cli("show", "--json", str(tmp_path / "run.journal.jsonl"))
    assert bad.returncode == 2 and "--json" in bad.stderr and bad.stderr.count("\n") == 1


def test_headless_stdout_is_one_line_and_json_gives_the_summary(tmp_path):
    """stdout is the report's path alone, so `report=$(nodeqc --headless ...); rc=$?` keeps the exit
    code; --json makes that one line a summary a pipeline reads without the signed report."""
    plain = cli("--headless", "--profile", "h100", "--simulate", "h100", "--inject", "gpu0:pcie_width=8",
                "--quick", "--out", str(tmp_path / "a"))
    assert plain.returncode == 1 and plain.stdout.count("\n") == 1 and plain.stdout.strip().endswith(".report.json")
    p = cli("--headless", "--json", "--profile", "h100", "--simulate", "h100", "--inject", "gpu0:pcie_width=8",
            "--quick", "--out", str(tmp_path / "b"))
    assert p.returncode == 1 and p.stdout.count("\n") == 1, p.stderr[-2000:]
    summary = json.loads(p.stdout)
    assert summary["exit_code"] == 1 and summary["verdict"] == "FAIL" and summary["status"] == "complete"
    assert summary["simulated"] is True and summary["partial"] is False and Path(summary["report"]).is_file()
    assert {"check": "health.pcie_link", "subject": "gpu0", "verdict": "fail", "code": "PCIE_WIDTH"} in summary["problems"]
    assert summary["counts"]["fail"] == sum(1 for q in summary["problems"] if q["verdict"] == "fail")
    bad = cli("--json", "--simulate", "h100")
    assert bad.returncode == 2 and "--headless" in bad.stderr and bad.stderr.count("\n") == 1


def test_json_counts_agree_with_the_text_and_prometheus(tmp_path):
    """--json counted a check that does not apply to the node (page retirement on an H100) among the
    skips, where the text's tally and the Prometheus textfile count it as n/a."""
    prom = tmp_path / "n.prom"
    p = cli("--headless", "--json", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path),
            "--prometheus-textfile", str(prom))
    assert p.returncode == 0, p.stderr[-2000:]
    counts = json.loads(p.stdout)["counts"]
    samples = dict(re.findall(r'^nodeqc_checks\{verdict="([^"]+)"\} (\d+)$', prom.read_text(), re.M))
    assert counts["n/a"] > 0 and {v: str(n) for v, n in counts.items()} == samples
    shown = cli("show", json.loads(p.stdout)["report"])
    assert f"{counts['pass']} passed" in shown.stdout
    assert (f"{counts['skip']} not run" in shown.stdout) if counts["skip"] else "not run" not in shown.stdout


@pytest.mark.parametrize("option", ["--headless", "--json"])
def test_gui_refuses_the_headless_runs_options_in_one_line(option):
    """`nodeqc gui --headless ...` ignored --headless and started the app (offscreen: a hang)."""
    p = cli("gui", option, "--simulate", "h100", "--quick", timeout=60, env={"QT_QPA_PLATFORM": "offscreen"})
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and f"gui {option}:" in p.stderr, p.stderr


def test_gui_help_names_the_gui_command():
    p = cli("gui", "--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: nodeqc gui ")
    assert "not for it" in p.stdout and "commands (nodeqc COMMAND --help)" not in p.stdout
    assert cli("--help").stdout.startswith("usage: nodeqc [")


def test_show_of_a_file_that_is_no_report_does_not_suggest_unverified(tmp_path):
    """`nodeqc show /etc/passwd` suggested --unverified, which then said it is no readable report."""
    other = tmp_path / "passwd"
    other.write_text("root:x:0:0:root:/root:/bin/bash\n")
    for args in ([], ["--unverified"]):
        p = cli("show", *args, str(other))
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
        assert "not a readable nodeqc report" in p.stderr and "--unverified" not in p.stderr


def test_show_without_a_trusted_key_names_the_reports_key(tmp_path):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path))
    report = p.stdout.strip().splitlines()[-1]
    keyid = json.loads(Path(report).read_text())["signatures"][0]["keyid"]
    # No key of ours (a fresh config), none given: the report's signer is named, so the right PEM can be found.
    shown = cli("show", report, env={"XDG_CONFIG_HOME": str(tmp_path / "elsewhere")})
    assert shown.returncode == 2 and f"signed by key {keyid[:16]}" in shown.stderr, shown.stderr


@pytest.mark.parametrize("name, extends", [("h100", "  extends generic"), ("hgx-h100", "  extends h100 -> generic"),
                                           ("generic", "  extends nothing (a base profile)")])
def test_profiles_extends_names_the_parents_not_the_profile_itself(name, extends):
    """`nodeqc profiles h100` said `extends h100 -> generic`: the profile as its own parent."""
    lines = cli("profiles", name).stdout.splitlines()
    assert extends in lines, lines[:4]


def test_out_is_made_where_missing_and_a_missing_archive_is_refused_as_their_help_says(tmp_path):
    """--out is this run's destination: made where missing; --archive is a store that must exist: a
    mistyped one is refused. A new user found one made and the other refused with nothing saying
    why (issue 29): the help says it now."""
    out = tmp_path / "a" / "b"
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--only", "inventory", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert list(out.glob("*.report.json"))
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--archive", str(tmp_path / "nowhere"))
    assert p.returncode == 2 and "no such directory" in p.stderr and not (tmp_path / "nowhere").exists()
    shown = " ".join(cli("--help").stdout.split())
    assert "instead of the archive (made if missing)" in shown and "the report archive, an existing directory" in shown


@pytest.mark.parametrize("content", [b"root:x:0:0:root:/root:/bin/bash\n", b"", b"\x00\xff" * 50, b"[1]\n[2]\n",
                                     b'{"type":"notice","x":' + b"9" * 100_000 + b"}\n"])
def test_show_of_a_file_that_is_no_journal_is_one_line_and_exit_2(tmp_path, content):
    """/etc/passwd or random bytes named *.journal.jsonl showed as an INCOMPLETE run with exit 0; a line
    with a 100,000-digit number ended in an internal error (ValueError, not a JSONDecodeError)."""
    journal = tmp_path / "x.journal.jsonl"
    journal.write_bytes(content)
    p = cli("show", str(journal))
    assert p.returncode == 2 and p.stdout == "" and p.stderr.strip().splitlines() == [
        f"nodeqc show: {journal}: not a nodeqc journal (no run_started record)"]


def test_show_of_a_journal_says_what_damage_it_passed_over(tmp_path):
    """A kill tears only the last line: lines before it that are no record were dropped silently."""
    started = '{"type":"run_started","node":{"hostname":"n1"},"profile":{"name":"h100"},"started_at":"2026-11-28T06:00:00Z"}'
    journal = tmp_path / "x.journal.jsonl"
    journal.write_text(started + "\nnot json\n" + '{"type":"notice","x":' + "9" * 5000 + '}\n{"type":"notice"')
    p = cli("show", str(journal))
    assert p.returncode == 0 and "node n1  profile h100" in p.stdout
    assert p.stderr.strip() == (f"nodeqc show: warning: {journal}: 2 damaged line(s) before the last were passed over "
                                "(a kill tears only the last)")
    journal.write_text(started + '\n{"type":"notice"')  # only the last torn, as a kill leaves it: nothing to say
    p = cli("show", str(journal))
    assert p.returncode == 0 and p.stderr == ""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", [["scenarios"], ["profiles"], ["--help"], ["--version"], ["fleet", "--help"]])
def test_a_full_standard_output_is_one_line_not_an_internal_error(args):
    """`nodeqc scenarios > /dev/full` (a full disk under a redirect) ended in an internal error; `nodeqc
    --help > /dev/full` exited 0 saying nothing (argparse's own sys.exit passed main's flush by)."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "nodeqc", *args], stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=60)
    assert p.returncode == 2 and p.stderr == "nodeqc: cannot write to standard output: No space left on device\n"


def test_an_os_error_from_elsewhere_than_standard_output_is_still_an_internal_error(monkeypatch, capsys):
    from nodeqc.cli import main as main_module

    def broken(argv):
        raise OSError(28, "No space left on device")

    monkeypatch.setitem(main_module.COMMANDS, "scenarios", broken)
    assert main_module.main(["scenarios"]) == 2
    assert "internal error: OSError" in capsys.readouterr().err
    assert not isinstance(sys.stdout, main_module._Watched)  # put back as it was


def test_a_journal_is_read_line_by_line_keeping_only_what_show_renders(tmp_path):
    """`show` read a journal whole and held every record (1.1 GB of memory for 21 MB of `{}` lines);
    now a line at a time, keeping the records it renders, and a line longer than any record is
    damage passed over without being held."""
    from nodeqc.report.journal import MAX_RECORD_BYTES, read_records
    from nodeqc.report.render import RENDERED

    started = '{"type":"run_started","node":{"hostname":"n1"},"profile":{"name":"h100"}}'
    journal = tmp_path / "x.journal.jsonl"
    with open(journal, "w") as f:
        f.write(started + "\n" + "{}\n" * 100_000 + '{"type":"notice","text":"' + "x" * (MAX_RECORD_BYTES + 10) + '"}\n')
        f.write('{"type":"run_finished","verdict":"PASS","status":"complete"}\n{"type":"check_fin')
    records, damaged = read_records(journal, RENDERED)
    assert [r["type"] for r in records] == ["run_started", "run_finished"] and damaged == 1  # the long line
    p = cli("show", str(journal))
    assert p.returncode == 0 and "finished: PASS (complete)" in p.stdout and "1 damaged line(s)" in p.stderr
    # Anyone can write a journal (the 2026-11-29 fuzzing: a forged one's PASS was shown as any other):
    # `show` says it is not signed, and which report is, where the journal names one.
    assert p.stdout.splitlines()[1] == ("NOT VERIFIED: a journal is not signed, only the run's own record; "
                                        "its signed report is the qualification")


def test_a_journal_whose_finish_is_of_the_wrong_kind_is_no_journal_nodeqc_writes(tmp_path):
    """A run_finished record with the verdict [1] was shown as "finished: [1]", exit 0."""
    journal = tmp_path / "x.journal.jsonl"
    journal.write_text('{"type":"run_started","node":{"hostname":"n1"},"profile":{"name":"h100"}}\n'
                       '{"type":"run_finished","verdict":[1],"status":"complete"}\n')
    p = cli("show", str(journal))
    assert p.returncode == 2 and p.stdout == "" and p.stderr.strip() == (
        f"nodeqc show: {journal}: not a journal nodeqc writes (ValueError: its run_finished record's verdict or "
        "status is not text)")


def test_the_printable_summary_names_every_gpu_it_qualified_and_an_abort(tmp_path):
    """2026-11-28 review: a PASS certificate said "8 GPU(s)" and no serial; an aborted run's PDF had
    no word that the node is not qualified (the GUI and an ERROR's PDF have)."""
    from nodeqc.report.printable import LoadedReport, summary_html

    gpus = [{"subject": f"gpu{i}", "bus_id": f"0000:{i}b:00.0", "serial": f"165000000{i}", "name": "NVIDIA H100 80GB HBM3",
             "vbios": "96.00.99.00.01"} for i in range(2)]
    predicate = {"verdict": "PASS", "status": "complete", "node": {"hostname": "n1"}, "gpus": gpus, "checks": []}
    page = summary_html(LoadedReport(Path("r.report.json"), predicate, True, "signature: verified"))
    assert "<h2>The GPUs (2)</h2>" in page
    for g in gpus:
        assert f"<td>{g['subject']}</td><td>{g['bus_id']}</td><td>{g['serial']}</td>" in page
    assert str(Path("r.report.json").resolve()) in page.replace("&#8203;", "")  # where it lies, not as given
    aborted = summary_html(LoadedReport(Path("r.report.json"), {**predicate, "verdict": "FAIL", "status": "aborted"},
                                        True, "signature: verified"))
    assert "The run was aborted: the node is not qualified." in aborted
    assert "aborted" not in page.lower()


def test_an_argument_in_bytes_not_utf8_is_refused_before_anything_runs(tmp_path):
    """2026-11-29 fuzzing: a --repair (or --operator, --ticket, --out) in bytes that are not UTF-8 ran
    every check, then lost the report to an internal error (UnicodeEncodeError) while the journal
    said finished."""
    out = tmp_path / "o"
    p = cli("--headless", "--simulate", "h100", "--quick", "--only", "health.pcie_link", "--repair", "r\udcff",
            "--out", str(out))
    assert p.returncode == 2 and p.stderr.strip() == (
        "nodeqc: argument 8 ('r\\udcff') is not UTF-8 text: give names, paths and notes in UTF-8"), p.stderr
    assert not out.exists()


@pytest.mark.parametrize("args", [["--headless", "--profile", "x" * 300], ["--headless", "--simulate", "x" * 300],
                                  ["history", "--archive", "x" * 300]])
def test_a_path_too_long_for_the_file_system_is_one_line(args):
    """2026-11-29 fuzzing: ENAMETOOLONG from wherever the path was opened was an internal error."""
    p = cli(*args)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "internal error" not in p.stderr, p.stderr
    assert p.stderr.rstrip().endswith("...: File name too long"), p.stderr


def test_a_ctrl_c_after_the_report_is_written_loses_neither_its_path_nor_its_exit_code(tmp_path, monkeypatch, capsys):
    """2026-11-29 fuzzing: a Ctrl-C while the run's report was being compared and announced exited 2,
    "interrupted", with no path on stdout, beside a complete signed report."""
    import signal as signals

    from nodeqc.cli.main import main
    from nodeqc.run import flow

    after_run = flow.RunFlow.after_run

    def pressed(self, path):
        os.kill(os.getpid(), signals.SIGINT)
        return after_run(self, path)

    monkeypatch.setattr(flow.RunFlow, "after_run", pressed)
    before = signals.getsignal(signals.SIGINT)
    try:
        code = main(["--headless", "--simulate", "h100", "--quick", "--only", "inventory.nvml", "--out", str(tmp_path / "o")])
    finally:
        signals.signal(signals.SIGINT, before)
    out = capsys.readouterr()
    assert code == 0 and out.out.strip().endswith(".report.json"), out.err[-500:]
    assert Path(out.out.strip().splitlines()[-1]).is_file()
