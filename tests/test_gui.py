"""The desktop app, driven as a technician drives it, on a simulated node (offscreen, no GPU, no display).

The runner works on a worker thread; tests wait for the window's signals with qtbot rather than sleep.
"""

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt starts: no display needed
pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage, QTextDocument, QTextDocumentFragment, QTextTable  # noqa: E402
from PySide6.QtWidgets import QFileDialog, QMessageBox  # noqa: E402

from conftest import ROOT, cli  # noqa: E402
from nodeqc.backends import simulated_hardware  # noqa: E402
from nodeqc.backends.base import REASON_BITS, GpuSample  # noqa: E402
from nodeqc.backends.sim.faults import parse_fault  # noqa: E402
from nodeqc.core.codes import remediation  # noqa: E402
from nodeqc.core.model import CheckResult  # noqa: E402
from nodeqc.core.model import Verdict  # noqa: E402
from nodeqc.gui.banner import COMPACT_PARTS, banner_findings, key_action  # noqa: E402
from nodeqc.gui.bridge import RunThread  # noqa: E402
from nodeqc.gui.checks import CHECK, RESULT_ROLE, VERDICT  # noqa: E402
from nodeqc.gui.checks import CheckList  # noqa: E402
from nodeqc.gui.plots import SERIES, RunBuffer, TelemetryPlots, peak_decimate  # noqa: E402
from nodeqc.gui.reports import ReportDialog  # noqa: E402
from nodeqc.gui.session import RunSetup, probe  # noqa: E402
from nodeqc.gui.style import COLOURS  # noqa: E402
from nodeqc.gui.tiles import GpuTile  # noqa: E402
from nodeqc.gui.widgets import tip as as_tip  # noqa: E402
from nodeqc.gui.window import MainWindow  # noqa: E402
from nodeqc.report.answer import answer as run_answer  # noqa: E402
from nodeqc.report.envelope import verify_file  # noqa: E402
from nodeqc.report.keys import load_signer, trusted_keys  # noqa: E402
from nodeqc.report.printable import LoadedReport, load_report, results_counted, summary_html  # noqa: E402
from nodeqc.run.events import CheckFinished, CheckStarted  # noqa: E402
from nodeqc.run.runner import RunOptions, RunOutcome, Runner  # noqa: E402
from nodeqc.spec.profile import load_profile  # noqa: E402

RUN_TIMEOUT_MS = 90_000
TIME_SCALE = 40  # simulated seconds per real second: a quick run takes about a second of burn


def make_window(qtbot, scenario="hgx-h100", profile="hgx-h100", faults=(), quick=True, sample_hz=None, **setup):
    def hardware():
        return simulated_hardware(scenario, [parse_fault(f) for f in faults], time_scale=TIME_SCALE)

    def options(hw, prof, signer, operator, ticket, **_repair):
        return RunOptions(prof, signer, quick=quick, operator=operator, ticket=ticket, sample_hz=sample_hz)

    run_setup = RunSetup(prepare=lambda ref: (hardware(), load_profile(ref), load_signer(None)), options=options,
                         profile=profile, **setup)
    window = MainWindow(run_setup, probe(hardware()))
    qtbot.addWidget(window)
    window.resize(1366, 768)
    window.show()
    return window


def run(qtbot, window, button=None):
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(button or window.start_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def click_item(qtbot, tree, item):
    tree.scrollToItem(item)
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=tree.visualItemRect(item).center())


def child(check_list, name, subject):
    parent = check_list.checks[name].item
    return next(parent.child(i) for i in range(parent.childCount())
                if parent.child(i).data(CHECK, RESULT_ROLE).subject == subject)


def answer(monkeypatch, button):
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *args, **kwargs: button))


def long_profile(tmp_path):
    """A burn that only an abort ends (3000 simulated s)."""
    path = tmp_path / "long.toml"
    path.write_text('description = "long burn"\nextends = "h100"\n[run]\nburn_s = 3000\n')
    return str(path)


# ---------------------------------------------------------------------- a whole run


def test_a_fault_turns_its_tile_and_check_red_and_the_banner_says_why(qtbot, tmp_path, monkeypatch):
    window = make_window(qtbot, faults=["gpu3:pcie_width=8"], operator="ana", ticket="RMA-42", sample_hz=20)
    assert sorted(window.tiles) == [f"gpu{i}" for i in range(8)]  # from the inventory, before any run
    outcome = run(qtbot, window)
    assert outcome.exit_code == 1 and window.exit_code == 1
    # The status bar ends on the run's end, not on a stale step of it.
    assert window.status.full == f"Run finished: FAIL; report {outcome.report_path}"

    # Tiles: one per GPU; gpu3 says FAIL and why, in words and in red; the others pass.
    assert sorted(window.tiles) == [f"gpu{i}" for i in range(8)]
    for subject, tile in window.tiles.items():
        expected = "FAIL" if subject == "gpu3" else "PASS"
        assert tile.badge.text() == expected, subject
        assert ("DOWNTRAINED" in tile.pcie.text()) == (subject == "gpu3"), tile.pcie.text()
    gpu3 = window.tiles["gpu3"]
    # in words, the count first (the label elides its end), the code last (a bare code read as nothing)
    # Full or dense (tests/test_gui_tiles.py), the tile shows the width; the whole link's text is kept.
    assert "x8" in gpu3.pcie.text() and "Gen5 x8" in gpu3.link_text
    assert gpu3.activity.full.startswith("2 failed: link at x8")
    assert gpu3.activity.full.endswith("[PCIE_WIDTH]")
    border = QColor(gpu3.grab().toImage().pixel(1, gpu3.height() // 2))
    assert border.red() > 150 and border.green() < 80 and border.blue() < 80, border.name()
    healthy = QColor(window.tiles["gpu0"].grab().toImage().pixel(1, window.tiles["gpu0"].height() // 2))
    assert healthy.green() > healthy.red(), healthy.name()

    # Plots: every GPU's curves received the run's telemetry, with the profile's limit drawn.
    assert window.plots.sample_count() > 10
    t, values, _ = window.plots.buffer.window()
    for (field, subject), curve in window.plots.curves.items():
        xs, ys = curve.getData()
        # Decimated to the plot's width (100 pixels or more), a curve leaves out only the oldest few
        # samples that do not fill a whole run: fewer than one in a hundred (plots.peak_decimate).
        assert t[0] <= xs[0] <= t[len(t) // 100] and xs[-1] == t[-1] and not all(y != y for y in ys), (field, subject)
    assert t[-1] > t[0] and (values[0] > 40).any()  # temperatures rose under load

    def lines(field):
        return sorted(item.value() for item in window.plots.plots[field].items if isinstance(item, pg.InfiniteLine))
    assert lines("temp_c") == [82, 87]  # hgx-h100 (from h100): warn above 82 C, fail above 87 C
    assert 700 in lines("power_w") and 1980 in lines("sm_clock_mhz")  # the GPUs' power limit and top clock

    # Checks: the PCIe check is red for gpu3 only.
    checks = window.checks
    assert checks.verdict_of("health.pcie_link") is Verdict.FAIL
    assert checks.verdict_of("health.pcie_link", "gpu3") is Verdict.FAIL
    assert checks.verdict_of("health.pcie_link", "gpu0") is Verdict.PASS
    assert checks.checks["health.pcie_link"].item.text(VERDICT) == "FAIL"
    burn = checks.checks["stress.burn"]
    assert burn.fraction == 1.0 and burn.bar is None and burn.item.text(VERDICT) == "PASS"  # bar gave way

    # Clicking a check shows its evidence; a failed one also what to do.
    click_item(qtbot, checks.tree, child(checks, "health.pcie_link", "gpu0"))
    assert "PASS" in checks.detail.toPlainText() and "What to do" not in checks.detail.toPlainText()
    click_item(qtbot, checks.tree, child(checks, "health.pcie_link", "gpu3"))
    detail = checks.detail.toPlainText()
    assert "Link Gen5 x8 under load, expected x16." in detail and remediation("PCIE_WIDTH") in detail
    assert "PCIE_WIDTH" in detail and "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)" in detail
    # What to do first, then the finding, then the figures and evidence.
    assert detail.index("What to do:") < detail.index("Link Gen5 x8") < detail.index("Values")

    # The banner: FAIL, the failing part with its finding and what to do, the signed report and its key.
    assert window.banner_word.text() == "FAIL" and window.banner.property("state") == "fail"
    banner = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText()
    assert "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3): link at x8 during the copies, expected x16" in banner
    assert f"What to do: {remediation('PCIE_WIDTH')}" in banner
    assert window.banner_sim.isVisible()  # a simulated run says so in the banner itself
    assert str(outcome.report_path) in window.banner_report.full
    signer = load_signer(None)
    assert signer.keyid in window.banner_report.full
    predicate = verify_file(outcome.report_path, trusted_keys()).predicate
    assert predicate["verdict"] == "FAIL" and predicate["operator"] == "ana" and predicate["ticket"] == "RMA-42"

    # Open report shows the signed report; Export PDF writes a printable summary.
    qtbot.mouseClick(window.open_button, Qt.MouseButton.LeftButton)
    dialog = window.findChild(ReportDialog)
    assert dialog is not None and dialog.isVisible()
    screen = window.screen().availableGeometry()  # never larger than the screen: its Close button on it
    assert dialog.width() <= screen.width() and dialog.height() <= screen.height()
    pdf = tmp_path / "summary.pdf"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(pdf), "PDF (*.pdf)")))
    qtbot.mouseClick(window.pdf_button, Qt.MouseButton.LeftButton)
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 5000


def flow_window(qtbot, tmp_path, *args, size=(1366, 768)):
    """The window as `nodeqc gui ARGS` opens it (nodeqc.run.flow), on a simulated node with time compressed."""
    from nodeqc.cli.main import _run_parser
    from nodeqc.run.flow import RunFlow

    scenario = tmp_path / "fast-hgx.toml"
    text = (ROOT / "nodeqc" / "backends" / "sim" / "scenarios" / "hgx-h100.toml").read_text()
    scenario.write_text(text.replace("time_scale = 10", f"time_scale = {TIME_SCALE}"))
    (tmp_path / "archive").mkdir(exist_ok=True)
    argv = ["--simulate", str(scenario), "--profile", "hgx-h100", "--quick", "--archive", str(tmp_path / "archive"),
            *args]
    flow = RunFlow(_run_parser().parse_args(argv), ["gui", *argv])
    hardware, _, _ = flow.prepare("hgx-h100")
    setup = RunSetup(prepare=flow.prepare, options=flow.options, after_run=flow.after_run, profile="hgx-h100",
                     archive=flow.archive.root)
    window = MainWindow(setup, probe(hardware))
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    return window


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_two_faults_show_without_scrolling_which_gpus_what_to_do_and_the_report(qtbot, tmp_path, size):
    window = flow_window(qtbot, tmp_path, "--inject", "gpu3:pcie_width=8", "--inject", "gpu5:hbm_bw=0.6", size=size)
    outcome = run(qtbot, window)
    assert outcome.exit_code == 1
    qtbot.wait(50)
    assert window.height() <= size[1] and window.minimumSizeHint().height() <= size[1]  # fits the screen
    banner = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText()
    for identity, todo in (("GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)", remediation("PCIE_WIDTH")),
                           ("GPU 5 (0000:c3:00.0, serial SIM-HGXH100-0001-G5)", "What to do:")):
        assert identity in banner and todo in banner[banner.index(identity):]
    # Every line of the banner is shown whole: it is tall enough for its wrapped text.
    for label in (window.banner_text, window.banner_findings):
        assert label.height() >= label.heightForWidth(label.width()), label.objectName()
    assert window.banner.geometry().bottom() < window.body.geometry().top()
    assert str(outcome.report_path) in window.banner_report.full and window.banner_report.isVisible()
    # The NIC checks without a peer and DCGM's diagnostic (a simulated node runs it only when --dcgm
    # asks) are the only checks not run; page retirement, which the H100s do not use (they remap
    # rows), is not one of them.
    counts = window.banner_text.text()
    assert re.search(r"; \d+ not run: \d+ no NIC peer given \(pass --nic-peer\), 1 no DCGM on a simulated or "
                     r"replayed node$", counts), counts
    assert "Every check passed" not in window.banner_text.text()
    # The check list, beside one column of tiles, has no horizontal scrollbar.
    assert window.tabs.currentWidget() is window.checks
    assert not window.checks.tree.horizontalScrollBar().isVisible()
    header = window.checks.tree.header()
    assert sum(header.sectionSize(i) for i in range(header.count())) <= window.checks.tree.viewport().width() + 1
    # The printable summary (PDF) renders the same answer from the signed report.
    printable = QTextDocumentFragment.fromHtml(summary_html(load_report(outcome.report_path))).toPlainText()
    assert "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)" in printable
    assert f"What to do: {remediation('PCIE_WIDTH')}" in printable and "ticket" not in printable
    # Notices open whole from the status bar.
    assert window.notices_button.isVisible() and window.notices_button.text() == f"All notices ({len(window.notices)})"
    qtbot.mouseClick(window.notices_button, Qt.MouseButton.LeftButton)
    box = window.findChild(QMessageBox, "notices")
    assert box is not None and "pass --nic-peer HOST (a host running `iperf3 -s -p PORT`" in box.text()
    box.close()


def test_a_repair_recorded_in_the_window_goes_into_the_retests_signed_report(qtbot, tmp_path):
    window = flow_window(qtbot, tmp_path, "--inject", "gpu3:pcie_width=8", "--only", "health.pcie_link")
    failed = run(qtbot, window)
    assert failed.exit_code == 1 and window.repair.isVisible()
    qtbot.keyClicks(window.repair, "reseated GPU 3 riser")
    second = run(qtbot, window, window.retest_button)
    assert second is not None, window.banner_text.text()
    predicate = verify_file(second.report_path, trusted_keys()).predicate
    repair = predicate["repair"]
    assert repair["action"] == "reseated GPU 3 riser" and repair["previous"]["path"] == str(failed.report_path)
    assert [(o["subject"], o["status"]) for o in repair["outcomes"]] == [("gpu3", "STILL FAILING")]  # still injected
    banner = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText()
    assert "[STILL FAILING]" in banner and "Failed again after a repair: do not just reseat" in banner
    # What became of the planted fault is among the run's notices, as after the headless RESULT.
    assert window.notices[-1] == "simulated fault gpu3:pcie_width=8: found: health.pcie_link FAIL on gpu3 [PCIE_WIDTH]"


def test_the_banner_names_failing_gpus_and_nics_with_what_to_do():
    results = [CheckResult("health.pcie_link", "gpu3", Verdict.FAIL, "link Gen5 x8 under load, expected x16",
                           code="PCIE_WIDTH"),
               CheckResult("health.ecc", "gpu6", Verdict.FAIL, "double-bit ECC errors 2 (limit 0)", code="ECC_DBE"),
               CheckResult("nic.link", "nic2", Verdict.FAIL, "ibp64s0 (mlx5_core, 0000:40:00.0): link down",
                           code="NIC_LINK_DOWN"),
               CheckResult("nic.inventory", "node", Verdict.PASS, "9 NICs", evidence={"nics": [
                   {"subject": "nic2", "name": "ibp64s0", "bus_id": "0000:40:00.0", "mac": "02:00:00:00:00:02"}]})]
    gpus = [{"subject": f"gpu{i}", "index": i, "bus_id": f"0000:{i:02x}:00.0", "serial": f"S{i}"} for i in range(8)]
    text = QTextDocumentFragment.fromHtml(banner_findings(run_answer(results, gpus, "FAIL", "complete").findings)).toPlainText()
    lines = text.splitlines()
    assert lines[0] == "GPU 3 (0000:03:00.0, serial S3): link Gen5 x8 under load, expected x16 (health.pcie_link)"
    assert lines[1].strip() == f"\u2192 What to do: {remediation('PCIE_WIDTH')}"
    assert lines[2].startswith("GPU 6 (0000:06:00.0, serial S6): double-bit ECC errors 2 (limit 0)")
    assert lines[4] == "NIC ibp64s0 (0000:40:00.0): link down (nic.link)"
    assert lines[5].strip() == f"\u2192 What to do: {remediation('NIC_LINK_DOWN')}"


# The failures of `--inject gpu2:transient_brake=100 --inject gpu5:p2p_bw=0.5` on hgx-h100, as the run said them.
PULSE_AND_P2P = [
    CheckResult("stress.power_pulse", "gpu2", Verdict.FAIL, "clocks cut while the load swung: power brake for 1999.8 "
                "ms at the 20 ms period, power brake for 2001.3 ms at the 100 ms period", code="POWER_PULSE_THROTTLE"),
    CheckResult("stress.p2p", "gpu5", Verdict.FAIL, "median one-way bandwidth to its peers 189 GB/s is below the "
                "limit 335 GB/s; fastest one-way copy to a peer 189 GB/s is 50 % below the node median 378 GB/s "
                "(limit 10 %)", code="P2P_SLOW"),
    CheckResult("stress.nccl", "node", Verdict.FAIL, "all-reduce across 8 GPUs: bus bandwidth 179.5 GB/s is below the "
                "limit 333 GB/s", code="NCCL_SLOW"),
    CheckResult("health.throttle", "gpu2", Verdict.FAIL, "clocks cut (power_brake) for 4 s is above the limit 1 s",
                code="THROTTLE_POWER_BRAKE")]


def show_ended_run(qtbot, window, results, tmp_path):
    """The window as a run with these results leaves it (its events, then its end), without the run."""
    for r in results:
        window.on_event(CheckStarted(r.name, [r.subject], 0.0))
        window.on_event(CheckFinished(r, 0.0))
    verdict = "FAIL" if any(r.verdict.blocks_qualification for r in results) else "PASS"
    window.worker.done.emit(RunOutcome(verdict, "complete", tmp_path / "x.report.json", results))
    qtbot.waitUntil(lambda: window.outcome is not None)
    qtbot.wait(50)


def in_view(tile, area) -> bool:
    top = tile.mapTo(area.viewport(), tile.rect().topLeft()).y()
    return 0 <= top and top + tile.height() <= area.viewport().height()


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_three_failing_parts_each_show_their_finding_and_what_to_do_without_scrolling(qtbot, tmp_path, size):
    window = make_window(qtbot)
    window.resize(*size)
    show_ended_run(qtbot, window, PULSE_AND_P2P + [CheckResult("host.cpu", "node", Verdict.PASS, "112 cores")], tmp_path)
    assert window.height() <= size[1] and window.minimumSizeHint().height() <= size[1]  # fits the screen
    # The banner's text is whole on screen: as tall as its lines wrapped at its width, no scrollbar.
    scroll = window.banner_scroll
    assert scroll.height() >= scroll.widget().layout().totalHeightForWidth(scroll.viewport().width())
    assert scroll.verticalScrollBar().maximum() == 0
    lines = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText().splitlines()
    # Each way a part failed has its own finding and what to do: GPU 2's power brake in the swings
    # and over the whole run, not one finding followed by two remedies.
    for start, finding, code in (("node: ", "bus bandwidth 179.5 GB/s", "NCCL_SLOW"),
                                 ("GPU 2 (0000:52:00.0, serial SIM-HGXH100-0001-G2): ", "power brake for 1999.8 ms",
                                  "POWER_PULSE_THROTTLE"),
                                 ("GPU 2 also: ", "clocks cut (power_brake) for 4 s", "THROTTLE_POWER_BRAKE"),
                                 ("GPU 5 (0000:c3:00.0, serial SIM-HGXH100-0001-G5): ", "median one-way bandwidth",
                                  "P2P_SLOW")):
        at = next(i for i, line in enumerate(lines) if line.startswith(start))
        assert finding in lines[at] and lines[at + 1].strip() == f"\u2192 What to do: {remediation(code)}"
    assert len(lines) == 8
    # The first failing GPU's tile is in view, though the tiles scroll on a small screen.
    assert in_view(window.tiles["gpu2"], window.tile_area)


# The failures of `--inject gpu1:pcie_width=8 --inject gpu3:ecc_dbe=1 --inject gpu6:slow=0.5` on hgx-h100.
THREE_GPUS = [
    CheckResult("health.pcie_link", "gpu1", Verdict.FAIL, "link Gen5 x8 under load, expected x16", code="PCIE_WIDTH"),
    CheckResult("health.ecc", "gpu3", Verdict.FAIL, "uncorrectable ECC errors since the driver loaded: 1 is above "
                "the limit 0", code="ECC_DBE"),
    CheckResult("stress.burn", "gpu6", Verdict.FAIL, "slow at full clocks (1,412 MHz): the GPU computes 0.50 of its "
                "SKU's rate per clock (compute defect; RMA)", code="BURN_SLOW"),
    CheckResult("host.cpu", "node", Verdict.PASS, "112 cores")]


def inside(widget, window) -> bool:
    """The widget is shown whole within the window (not cut off at its edge or hidden)."""
    rect = widget.rect().translated(widget.mapTo(window, widget.rect().topLeft()))
    return widget.isVisible() and window.rect().contains(rect)


@pytest.mark.parametrize("scenario", ["hgx-h100", "h100"])
def test_the_window_fits_a_1024_pixel_crash_cart(qtbot, scenario):
    window = make_window(qtbot, scenario=scenario, profile=scenario)
    assert window.minimumSizeHint().width() <= 1024
    for size in ((1024, 600), (1024, 768)):
        window.resize(*size)
        qtbot.wait(20)
        assert (window.width(), window.height()) == size
        # The node panel's values shorten themselves with "…" (whole in their tooltips) rather than widen it.
        assert window.hostname.toolTip() == as_tip(window.hostname.full) and inside(window.start_button, window)


def titles_whole(window):
    """Each plot's title whole within its plot ("Temperature (°C)", and beside a four-digit axis
    "SM clock (MHz)", ran past its right edge at 1024x600)."""
    for view, plot in zip(window.plots.views, window.plots.plots.values(), strict=True):
        text = plot.titleLabel.item
        assert view.rect().contains(view.mapFromScene(text.mapRectToScene(text.boundingRect())).boundingRect()), \
            plot.titleLabel.text


def test_at_1024x600_three_failing_gpus_each_show_their_finding_what_to_do_and_the_report(qtbot, tmp_path):
    window = make_window(qtbot)
    window.resize(1024, 600)
    assert all(remediation(r.code) for r in THREE_GPUS if r.code)
    show_ended_run(qtbot, window, THREE_GPUS, tmp_path)
    assert (window.width(), window.height()) == (1024, 600)
    # The answer is whole on screen: the banner's text as tall as its wrapped lines, no scrollbar.
    scroll = window.banner_scroll
    assert scroll.verticalScrollBar().maximum() == 0
    assert scroll.height() >= scroll.widget().layout().totalHeightForWidth(scroll.viewport().width())
    for label in (window.banner_word, window.banner_text, window.banner_findings, window.banner_report):
        assert inside(label, window) and inside(label, scroll if label is not window.banner_word else window), \
            label.objectName()
    for label in (window.banner_text, window.banner_findings):
        assert label.height() >= label.heightForWidth(label.width()), label.objectName()
    # Each GPU on two lines cut at the banner's width (issue 29: whole, they took half the window):
    # its finding and what to do begin on screen, and are whole in the tooltip and the Checks tab.
    text = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText()
    tip = window.banner_findings.toolTip()
    for subject, result in zip(("GPU 1 (", "GPU 3 (", "GPU 6 ("), THREE_GPUS, strict=False):
        at, whole = text.index(subject), tip.index(subject)
        assert result.message[:10] in text[at:] and "What to do: " in text[at:]
        assert result.message in tip[whole:] and f"What to do: {remediation(result.code)}" in tip[whole:]
    # The report's path and the key it is signed with: both lines on screen, the report's file name
    # (host and time) whole; a path longer than the line beside the buttons gives way in its middle
    # (its directories; under pytest-xdist this test's own path does), whole in the tooltip.
    report = window.banner_report
    assert report.full == f"Report {tmp_path / 'x.report.json'}\nSigned with key {window.keyid}"
    assert report.toolTip() == as_tip(report.full) and report.height() >= 2 * report.fontMetrics().lineSpacing()
    path_line, key_line = report.text().split("\n")
    assert key_line == f"Signed with key {window.keyid}" and path_line.endswith("/x.report.json")
    assert path_line == f"Report {tmp_path / 'x.report.json'}" or (
        "\u2026" in path_line and path_line.startswith("Report /"))
    assert report.fontMetrics().horizontalAdvance(path_line) <= report.width()
    for button in (window.open_button, window.pdf_button, window.retest_button):
        assert inside(button, window)
    # The repair field's hint whole in it ("what was repaired?" showed "what was r…"), the rest in its tooltip.
    field = window.repair
    if field.isVisible():
        hint = field.placeholderText()
        assert field.fontMetrics().horizontalAdvance(hint) <= field.contentsRect().width() - 8, (hint, field.width())
    assert window.banner.geometry().bottom() < window.body.geometry().top()
    # The plots under that banner: in one row, without the time axis's title, each with a band of
    # curve worth reading (two by two, each kept some 25 pixels of curve under its title and axes).
    window.tabs.setCurrentWidget(window.plots)
    qtbot.wait(50)
    views = window.plots.views
    assert len({v.y() for v in views}) == 1 and all(inside(v, window) for v in views)
    assert all(p.getViewBox().height() >= 120 for p in window.plots.plots.values())
    assert not any(p.getAxis("bottom").label.isVisible() for p in window.plots.plots.values())
    titles_whole(window)
    # Each limit's label in its short form, whole within its narrow plot ("limit 87 °C, warn 82" was cut),
    # for the limits an H100 run draws.
    window.plots.configure([{"subject": "gpu0", "power_limit_w": 700, "max_sm_clock_mhz": 1980}],
                           load_profile("hgx-h100"), simulated=True)
    qtbot.wait(50)
    labels = {field: [i.label for i in plot.items if isinstance(i, pg.InfiniteLine) and getattr(i, "label", None)]
              for field, plot in window.plots.plots.items()}
    assert sorted(lab.format for field in ("temp_c", "power_w", "sm_clock_mhz") for lab in labels[field]) == \
        ["1980 MHz", "700 W", "87 °C", "floor 525 W"], labels
    for field, plot in window.plots.plots.items():
        box = plot.getViewBox()
        assert all(box.boundingRect().contains(lab.mapRectToItem(box, lab.boundingRect())) for lab in labels[field]), \
            field
    titles_whole(window)  # also beside the limits' wider axes (1980 MHz)
    window.resize(1366, 768)
    qtbot.wait(50)
    assert len({v.y() for v in views}) == 2 and all(p.getAxis("bottom").label.isVisible()
                                                   for p in window.plots.plots.values())
    assert sorted(lab.format for field in labels for lab in labels[field]) == \
        ["burn floor 525 W", "limit 87 °C, warn 82", "max 1980 MHz", "power limit 700 W"]


# Eight GPUs failing eight ways (none share a line), as a crash cart's technician met them.
EIGHT_GPUS = [CheckResult(check, f"gpu{i}", Verdict.FAIL, message, code=code) for i, (check, message, code) in
              enumerate([("health.pcie_link", "link Gen5 x8 under load, expected x16", "PCIE_WIDTH"),
                         ("health.ecc", "uncorrectable ECC errors since the driver loaded: 1 is above the limit 0",
                          "ECC_DBE"),
                         ("stress.burn", "slow at full clocks (1,412 MHz): the GPU computes 0.50 of its SKU's rate "
                          "per clock (compute defect; RMA)", "BURN_SLOW"),
                         ("stress.hbm_bandwidth", "slow at full memory clock (2,619 MHz): the memory moves 0.60 of "
                          "its SKU's bandwidth (memory defect; RMA)", "HBM_SLOW"),
                         ("health.pcie_gen", "link Gen3 x16 under load, expected Gen5", "PCIE_GEN"),
                         ("health.xid", "XID 79 (fell off the bus)", "XID_RESET_GPU"),
                         ("health.row_remap", "a row remap failed", "ROW_REMAP_FAILED"),
                         ("stress.hbm_stream", "device-memory copies came back with 1 flipped bit",
                          "HBM_CORRUPT")])]


@pytest.mark.parametrize("size", [(1024, 600), (1024, 768), (1366, 768), (1920, 1080)])
def test_the_header_shows_the_serial_and_the_verdict_whole(qtbot, tmp_path, size):
    """At 1024x600 the header cut the node's serial ("SIM-HGXH100-0...", issue 29): the serial is
    what the technician checks against the chassis, so the driver and the GPUs give way first."""
    window = make_window(qtbot)
    window.resize(*size)
    show_ended_run(qtbot, window, THREE_GPUS, tmp_path)
    serial = window.serial
    assert serial.full == "SIM-HGXH100-0001" and serial.text() == serial.full
    assert serial.width() >= serial.sizeHint().width() and inside(serial, window)
    word = window.banner_word
    assert word.text() == "FAIL" and word.width() >= word.sizeHint().width() and inside(word, window)


def test_the_key_action_drops_what_happened_and_keeps_a_text_that_starts_with_the_action():
    """Cut to a line or two, what to do must show the action (issue 29's audit: "...the HBM or its
    controll..." was all a technician saw of HBM_SLOW's advice)."""
    assert key_action(remediation("HBM_SLOW")).startswith("Check that the memory clock")
    assert key_action(remediation("PCIE_WIDTH")).startswith("Reseat the GPU or riser")
    assert key_action(remediation("ECC_DISABLED")) == remediation("ECC_DISABLED")  # "Enable ECC (...): ..."
    assert key_action("no colon here") == "no colon here"


@pytest.mark.parametrize("failing", [1, 2, 3, 8])
def test_at_1024x600_the_banner_stays_within_a_third_of_the_window(qtbot, tmp_path, failing):
    """Two failing GPUs made the banner half of a 1024x600 window (issue 29): each part is now two
    lines, its finding and what to do cut at the banner's width, and past three parts a link to the
    Checks tab says how many more; the buttons sit two by two."""
    window = make_window(qtbot)
    window.resize(1024, 600)
    show_ended_run(qtbot, window, EIGHT_GPUS[:failing], tmp_path)
    assert window.banner.height() <= 600 // 3, window.banner.height()
    scroll = window.banner_scroll
    assert scroll.verticalScrollBar().maximum() == 0
    assert scroll.height() >= scroll.widget().layout().totalHeightForWidth(scroll.viewport().width())
    label = window.banner_findings
    assert label.height() >= label.heightForWidth(label.width())
    lines = QTextDocumentFragment.fromHtml(label.text()).toPlainText().splitlines()
    shown = failing if failing <= 3 else 2
    # As many lines as three parts take at most: fewer parts give the rest to what to do.
    assert len(lines) <= 2 * COMPACT_PARTS
    starts = [k for k, line in enumerate(lines) if line.startswith("GPU ")]
    assert len(starts) == shown
    for i, at in enumerate(starts):  # a part: its identity and finding, then what to do
        gpu = f"GPU {i} ({window.tiles[f'gpu{i}'].gpu['bus_id']}, serial SIM-HGXH100-0001-G{i})"
        assert lines[at].startswith(f"{gpu}: ") and lines[at + 1].strip().startswith("\u2192 What to do: ")
        end = starts[i + 1] if i + 1 < len(starts) else len(lines) - (failing > 3)
        todo = " ".join(line.strip() for line in lines[at + 1:end]).removeprefix("\u2192 What to do: ")
        action = key_action(remediation(EIGHT_GPUS[i].code))
        # The action from its start, cut only at the end; the lines a shorter list has free carry more of it.
        assert action.startswith(todo.removesuffix("\u2026")), (todo, action)
        assert (end - at - 1 == 1) if failing == 3 else (end - at - 1 >= 1)
        for line in lines[at:end]:  # no line wraps: each fits the label's width as laid out
            assert label.fontMetrics().horizontalAdvance(line) <= label.width()
    if failing == 1:  # one part: the lines three parts would take carry its whole action, which one line cut
        todo = " ".join(line.strip() for line in lines[1:]).removeprefix("\u2192 What to do: ")
        assert len(lines) > 2 and todo == key_action(remediation("PCIE_WIDTH")), lines
    assert label.heightForWidth(label.width()) <= (len(lines) + 1) * label.fontMetrics().lineSpacing()
    # The key action shows, not the sentence before it that says what happened.
    assert lines[1].strip().startswith("\u2192 What to do: Reseat the GPU or riser, check the slot and cable")
    tip = label.toolTip()  # whole, as a wide screen's banner has them (four parts at most, then the Checks tab)
    for r in EIGHT_GPUS[:failing if failing <= 4 else 3]:
        assert r.message in tip and remediation(r.code) in tip
    for button in (window.open_button, window.pdf_button, window.retest_button, window.repair):
        assert inside(button, window)
    if failing > 3:
        assert lines[-1] == f"... and {failing - 2} more parts: the Checks tab has them all"
        window.tabs.setCurrentWidget(window.plots)
        label.linkActivated.emit("checks")
        assert window.tabs.currentWidget() is window.checks


def test_at_1024x600_one_gpu_leaves_the_tabs_and_plot_titles_whole(qtbot):
    window = make_window(qtbot, scenario="h100", profile="h100")
    window.resize(1024, 600)
    qtbot.wait(50)
    assert window.tile_area.columns == 1  # one GPU: one column of tiles, the rest for the tabs
    bar = window.tabs.tabBar()
    for i in range(bar.count()):  # every tab's title whole, none behind the tab bar's scroll buttons
        rect = bar.tabRect(i)
        assert rect.right() < bar.width() and rect.width() >= bar.fontMetrics().horizontalAdvance(bar.tabText(i))
    for view, plot in zip(window.plots.views, window.plots.plots.values(), strict=True):
        title = plot.titleLabel.item.boundingRect().width()
        assert 0 < title <= plot.titleLabel.width() and plot.titleLabel.width() <= view.width(), title
        assert inside(view, window) or not view.isVisible()


def test_a_gpu_another_process_uses_reads_error_not_fail(qtbot, tmp_path):
    """A co-tenant is an ERROR of the run (exit 2), not a hardware failure: the banner says ERROR in
    the error colour, names the process and what to do, and its tile is brought into view."""
    window = make_window(qtbot)
    busy = CheckResult("stress.gpu_free", "gpu6", Verdict.ERROR, "1 other compute process(es) on this GPU before the "
                       "stress: pid 48151 (python3, 0.98 GiB); it sits out the stress", code="GPU_IN_USE")
    show_ended_run(qtbot, window, [CheckResult("host.cpu", "node", Verdict.PASS, "112 cores"), busy], tmp_path)
    assert window.banner_word.text() == "ERROR" and window.banner.property("state") == "error"
    assert window.exit_code == 2
    assert window.status.full.startswith("Run finished: ERROR; report ")  # the banner's word, not the node's FAIL
    text = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText()
    assert "GPU 6 (0000:d1:00.0, serial SIM-HGXH100-0001-G6): 1 other compute process(es) on this GPU before the " \
           "stress: pid 48151 (python3, 0.98 GiB)" in text and remediation("GPU_IN_USE") in text
    assert in_view(window.tiles["gpu6"], window.tile_area)


def test_while_running_the_banner_names_the_failing_parts(qtbot):
    window = make_window(qtbot, faults=["gpu6:cotenant"])
    window.start()
    # The eight gpu_free results arrive one by one: wait for gpu6's, not the first one
    qtbot.waitUntil(lambda: any(r.name == "stress.gpu_free" and r.subject == "gpu6" for r in window.results),
                    timeout=RUN_TIMEOUT_MS)
    window.redraw()
    running = window.banner_text.text()
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS):  # ended before any assertion
        window.worker.abort()
    assert re.search(r"\d+ results so far, 1 failing \(gpu6\)\.", running), running
    # Aborted, the banner still says what failed before the abort, and what to do.
    assert window.banner_word.text() == "ABORTED" and "1 part failed before it" in window.banner_text.text()
    text = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText()
    assert "GPU 6 (0000:d1:00.0" in text and remediation("GPU_IN_USE") in text


def test_the_printable_tables_count_adds_up_with_what_does_not_apply_counted_apart():
    """"All checks (283 results)" under a headline of 263 passed, 3 failed and 9 not run: the 8 checks
    that do not apply to an H100 were in neither."""
    checks = [CheckResult("health.ecc", f"gpu{i}", Verdict.PASS, "ok") for i in range(3)] + [
        CheckResult("stress.p2p", "gpu1", Verdict.FAIL, "slow", code="P2P_SLOW"),
        CheckResult("nic.tcp", "nic0", Verdict.SKIP, "no peer", code="NIC_NO_PEER"),
        CheckResult("health.retired_pages", "gpu0", Verdict.SKIP, "n/a", code="PAGE_RETIREMENT_NA"),
        CheckResult("health.retired_pages", "gpu1", Verdict.SKIP, "n/a", code="PAGE_RETIREMENT_NA")]
    assert results_counted(checks) == "3 passed, 1 failed, 1 not run, 2 not applicable"
    assert results_counted(checks[:3] + [CheckResult("dcgm.run", "node", Verdict.ERROR, "x", code="DCGM_HANG")]) == \
        "3 passed, 1 could not run"
    assert results_counted([]) == "none"


def test_the_printable_summary_says_what_failed_and_what_to_do_before_the_particulars(tmp_path):
    gpus = probe(simulated_hardware("hgx-h100", [])).gpus
    ecc = [CheckResult("health.ecc", f"gpu{i}", Verdict.PASS, "no ECC errors", {}, key="dbe") for i in range(8)]
    predicate = {"verdict": "FAIL", "status": "complete", "simulated": True, "gpus": gpus,
                 "checks": [c.to_dict() for c in PULSE_AND_P2P + ecc],
                 "node": {"hostname": "sim-hgx-h100", "system_serial": "SIM-1", "driver_version": "570.124.06"},
                 "profile": {"name": "hgx-h100"}}
    text = QTextDocumentFragment.fromHtml(summary_html(
        LoadedReport(tmp_path / "x.report.json", predicate, True, "signature: verified"))).toPlainText()
    order = ["FAIL", "SIMULATED", "4 failed", "Node sim-hgx-h100 serial SIM-1",
             "FAIL GPU 2 (0000:52:00.0, serial SIM-HGXH100-0001-G2)", "power brake for 1999.8 ms",
             f"What to do: {remediation('POWER_PULSE_THROTTLE')}", "clocks cut (power_brake) for 4 s",
             f"What to do: {remediation('THROTTLE_POWER_BRAKE')}", "FAIL GPU 5", f"What to do: {remediation('P2P_SLOW')}",
             "The run", "570.124.06", "All checks (12 results)"]
    assert [text.index(t) for t in order] == sorted(text.index(t) for t in order), text
    assert "All checks (12 results)\n8 passed, 4 failed\n" in text  # the table's own count under its heading
    # Every check, with the GPUs that passed one together: a row, not eight.
    assert text.count("health.ecc") == 1 and "gpu0-7" in text
    # On paper: a failed row's verdict in the banner's colours, a pass plain; the table's header on
    # every page it runs to; the signature said once, not "Signature signature: ...".
    html_text = summary_html(LoadedReport(tmp_path / "x.report.json", predicate, True, "signature: verified"))
    background, colour = COLOURS["fail"]
    assert f"<td style='background:{background}; color:{colour}'><b>FAIL</b>" in html_text
    assert "<td><b>PASS</b>" in html_text and f"background:{background}; color:{colour}'><b>PASS" not in html_text
    doc = QTextDocument()
    doc.setHtml(html_text)
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert tables[-1].format().headerRowCount() == 1
    assert "Signature" in text and "signature:" not in text.lower()


def test_the_printable_summary_of_a_gpu_another_process_used_says_error(tmp_path):
    busy = CheckResult("stress.gpu_free", "gpu6", Verdict.ERROR, "1 other compute process(es) on this GPU before the "
                       "stress: pid 48151 (python3, 0.98 GiB)", code="GPU_IN_USE")
    predicate = {"verdict": "FAIL", "status": "complete", "checks": [busy.to_dict()], "node": {}, "profile": {}}
    html_text = summary_html(LoadedReport(tmp_path / "x.report.json", predicate, True, "signature: verified"))
    text = QTextDocumentFragment.fromHtml(html_text).toPlainText()
    assert text.index("ERROR") < text.index("nothing says its hardware is bad") < text.index("ERROR GPU 6")
    assert "FAIL" not in text and COLOURS["error"][0] in html_text


def test_a_clean_node_passes_and_a_retest_runs_again(qtbot):
    window = make_window(qtbot, scenario="h100", profile="h100")
    first = run(qtbot, window)
    assert first.exit_code == 0 and window.banner_word.text() == "PASS"
    # Some checks did not run (no NIC peer, one GPU): the banner counts them, never "every check passed".
    assert "passed; " in window.banner_text.text() and "not run: " in window.banner_text.text()
    assert "no NIC peer given (pass --nic-peer)" in window.banner_text.text()
    assert window.tiles["gpu0"].badge.text() == "PASS" and "at max" in window.tiles["gpu0"].pcie.text()
    assert window.retest_button.isVisible() and window.start_button.isEnabled() and not window.abort_button.isEnabled()
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(window.retest_button, Qt.MouseButton.LeftButton)
        # Nothing of the first run stays on screen while the second reads the inventory.
        assert window.checks.checks == {} and window.tiles["gpu0"].badge.text() == "RUNNING"
        assert window.plots.sample_count() == 0
    second = blocker.args[0]
    assert second.exit_code == 0 and second.report_path != first.report_path
    assert window.history.paths()[:2] == [second.report_path, first.report_path]


def test_a_lost_gpu_and_ecc_and_xid_show_on_their_own_tiles(qtbot):
    window = make_window(qtbot, faults=["gpu1:ecc_dbe=2", "gpu4:xid=48", "gpu6:lost"])
    outcome = run(qtbot, window)
    assert outcome.exit_code == 1
    tiles = window.tiles
    assert tiles["gpu1"].ecc.text().startswith("ECC FAIL") and tiles["gpu1"].badge.text() == "FAIL"
    assert tiles["gpu4"].xid.text() == "XID FAIL 48" and tiles["gpu4"].badge.text() == "FAIL"
    assert tiles["gpu0"].ecc.text() == "ECC PASS" and tiles["gpu0"].xid.text() == "XID PASS"
    lost = tiles["gpu6"]
    assert lost.pcie.text() == "NOT ANSWERING" and lost.temp.text() == "–" and lost.badge.text() == "FAIL"
    assert any(r.code == "GPU_LOST" for r in lost.results)
    # Its curves stop where it fell off the bus; the others go on to the end.
    _, low, _ = window.plots.buffer.window()
    temp = [f for f, _, _ in SERIES].index("temp_c") * 8
    assert np.isnan(low[temp + 6][-5:]).all() and not np.isnan(low[temp + 6][:5]).all()
    assert not np.isnan(low[temp + 0][-5:]).any()


def test_a_run_that_ends_while_abort_is_being_confirmed_keeps_its_verdict(qtbot, monkeypatch):
    window = make_window(qtbot, scenario="h100", profile="h100")

    def yes_once_the_run_has_ended(*args, **kwargs):
        qtbot.waitUntil(lambda: not window.running, timeout=RUN_TIMEOUT_MS)  # the technician was slow
        return QMessageBox.StandardButton.Yes
    monkeypatch.setattr(QMessageBox, "question", staticmethod(yes_once_the_run_has_ended))
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
        window.abort()
    assert blocker.args[0].status != "aborted"
    assert window.banner_word.text() == "PASS" and window.open_button.isVisible()

    # The same for closing: the window closes, and no later run inherits "close when done".
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
        window.close()
    qtbot.waitUntil(lambda: not window.isVisible())
    assert not window.close_after_run


# ---------------------------------------------------------------------- abort and close


def test_abort_asks_first_then_writes_an_aborted_report(qtbot, tmp_path, monkeypatch):
    window = make_window(qtbot, scenario="h100", profile=long_profile(tmp_path), quick=False)
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "stress.burn" in window.checks.checks, timeout=RUN_TIMEOUT_MS)
    assert not window.start_button.isEnabled() and window.abort_button.isEnabled()
    bar = window.checks.checks["stress.burn"].bar  # the burn's progress, live
    qtbot.waitUntil(lambda: 0 < bar.value() < 100, timeout=RUN_TIMEOUT_MS)
    assert window.banner_word.text() == "RUNNING" and "stress.burn" in window.banner_text.text()

    answer(monkeypatch, QMessageBox.StandardButton.No)
    qtbot.mouseClick(window.abort_button, Qt.MouseButton.LeftButton)
    qtbot.wait(300)
    assert window.running and not window.worker.runner.aborted  # "No" keeps the run going

    answer(monkeypatch, QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(window.abort_button, Qt.MouseButton.LeftButton)
    outcome = blocker.args[0]
    assert outcome.status == "aborted" and outcome.exit_code == 2
    assert window.banner_word.text() == "ABORTED" and "not qualified" in window.banner_text.text()
    # Its tile says so too: what it passed before the abort is no pass of the GPU (it said PASS).
    [tile] = window.tiles.values()
    assert any(r.verdict is Verdict.PASS for r in tile.results)
    assert (tile.state, tile.badge.text()) == ("aborted", "ABORTED")
    predicate = verify_file(outcome.report_path, trusted_keys()).predicate
    assert predicate["status"] == "aborted" and predicate["verdict"] == "FAIL"


def test_closing_the_window_mid_run_asks_and_aborts(qtbot, tmp_path, monkeypatch):
    window = make_window(qtbot, scenario="h100", profile=long_profile(tmp_path), quick=False)
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "stress.burn" in window.checks.checks, timeout=RUN_TIMEOUT_MS)

    answer(monkeypatch, QMessageBox.StandardButton.No)
    window.close()
    assert window.isVisible() and window.running

    answer(monkeypatch, QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS) as blocker:
        window.close()
    assert blocker.args[0].status == "aborted"
    qtbot.waitUntil(lambda: not window.isVisible())


def test_a_profile_whose_baseline_went_bad_says_so_and_does_not_start(qtbot, tmp_path, monkeypatch):
    prof = tmp_path / "fleet.toml"
    prof.write_text('description = "our H100 build"\nextends = "h100"\nbaseline = "golden.toml"\n')
    (tmp_path / "golden.toml").write_text("[baseline]\nformat = 1\n[node]\ndriver = { a = 1 }\n")  # edited badly
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda _parent, title, text: shown.append((title, text))))
    window = make_window(qtbot, scenario="h100", profile=str(prof))
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    assert shown == [("Cannot start", f"profile fleet: baseline {tmp_path}/golden.toml: [node] driver: expected a "
                                      "string, got a table")]
    assert not window.running and window.start_button.isEnabled() and window.outcome is None
    assert window.checks.checks == {}  # nothing ran
    # Bad from the outset: `nodeqc gui` says so in one line before any window opens.
    p = cli("gui", "--profile", str(prof), "--simulate", "h100", "--start", "--screenshot", str(tmp_path / "s.png"),
            env={"QT_QPA_PLATFORM": "offscreen"})
    assert p.returncode == 2 and p.stderr.splitlines() == [f"nodeqc: {shown[0][1]}"], p.stderr
    assert not (tmp_path / "s.png").exists()


# ---------------------------------------------------------------------- history


def test_history_lists_the_nodes_earlier_reports_newest_first(qtbot):
    hardware = lambda: simulated_hardware("h100", [], time_scale=TIME_SCALE)  # noqa: E731
    earlier = [Runner(RunOptions(load_profile("h100"), load_signer(None), quick=True, operator=who), hardware()).run()
               for who in ("first", "second")]
    window = make_window(qtbot, scenario="h100", profile="h100")
    rows = window.history.tree
    assert window.history.paths() == [earlier[1].report_path, earlier[0].report_path]
    assert [rows.topLevelItem(i).text(4) for i in range(2)] == ["second", "first"]
    assert rows.topLevelItem(0).text(1) == "PASS" and rows.topLevelItem(0).text(6) == "verified"

    latest = run(qtbot, window)
    assert window.history.paths() == [latest.report_path, earlier[1].report_path, earlier[0].report_path]

    window.history.open_report.emit(earlier[0].report_path)  # what a double-click on the row does
    text = window.findChildren(ReportDialog)[-1].text.toPlainText()
    assert "nodeqc report: PASS" in text and "operator  first" in text


def test_history_shows_only_verified_reports_and_marks_forged_ones(qtbot, tmp_path):
    import base64
    import json

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from nodeqc.report.envelope import decode_statement, read_envelope, sign, write_envelope
    from nodeqc.report.keys import Signer

    hardware = lambda: simulated_hardware("h100", [], time_scale=TIME_SCALE)  # noqa: E731
    real = Runner(RunOptions(load_profile("h100"), load_signer(None), quick=True, operator="tech"), hardware()).run()
    report = Path(real.report_path)
    # A forged copy: the signed payload edited (another operator, a later finish), the signature kept.
    envelope = read_envelope(report)
    stmt = decode_statement(envelope)
    stmt["predicate"].update(operator="forger", finished_at="2099-01-01T00:00:00Z")
    envelope["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    altered = report.with_name("zz-altered.report.json")
    altered.write_text(json.dumps(envelope))
    # A report signed properly, but by a key nobody trusts.
    stranger = Signer(Ed25519PrivateKey.generate(), tmp_path / "stranger.pem")
    stmt["predicate"]["operator"] = "stranger"
    foreign = report.with_name("zz-foreign.report.json")
    write_envelope(foreign, sign(stmt, stranger))

    window = make_window(qtbot, scenario="h100", profile="h100")
    history, rows = window.history, window.history.tree
    assert rows.topLevelItemCount() == 3
    assert history.paths() == [report, altered, foreign]  # the verified one first, then the NOT VERIFIED ones
    first = rows.topLevelItem(0)
    assert (first.text(1), first.text(4), first.text(6)) == ("PASS", "tech", "verified")
    for i, why in ((1, "altered"), (2, "not trusted")):
        row = rows.topLevelItem(i)
        assert row.text(1) == "NOT VERIFIED" and why in row.text(6), row.text(6)
        assert row.text(0) == history.paths()[i].name and "forger" not in row.text(4) and row.text(4) == ""
        assert "2099" not in row.text(0)  # nothing the file claims is shown
        assert row.background(1).color() == QColor("#7a0a2e")
    assert "1 verified; 2 NOT VERIFIED" in history.caption.text()


# ---------------------------------------------------------------------- the parts


def test_peak_decimation_keeps_spikes_and_gaps():
    t = np.arange(1000, dtype=float)
    rows = np.full((2, 1000), 50.0, dtype=np.float32)
    rows[0, 617] = 95.0  # a one-sample spike
    rows[1, 200:300] = np.nan  # a GPU that stopped answering for a while
    x, reduced = peak_decimate(t, rows, None, buckets=100)
    assert len(x) == 200 and x[0] == 0 and x[-1] == 999 and (np.diff(x) >= 0).all()
    assert reduced[0].max() == 95.0 and reduced[0].min() == 50.0
    assert np.isnan(reduced[1]).sum() == 20 and not np.isnan(reduced[0]).any()  # 10 empty runs, min and max each
    same_x, same = peak_decimate(t[:150], rows[:, :150], None, buckets=100)  # fewer samples than pixels: as they are
    assert len(same_x) == 150 and (same == rows[:, :150]).all()
    # Rows that are already ranges (a long run's merged rows) are drawn as their low and high.
    x, ranges = peak_decimate(t[:3], rows[:, :3], rows[:, :3] + 5, buckets=100)
    assert list(x) == [0, 0, 1, 1, 2, 2] and list(ranges[0]) == [50, 55, 50, 55, 50, 55]


def test_the_run_buffer_keeps_the_whole_run_at_halving_resolution():
    buf = RunBuffer(capacity=6, columns=2)
    arrays = (buf.t, buf.low, buf.high)
    for i in range(5):
        buf.append(float(i), np.array([i, -i], dtype=np.float32))
    t, low, high = buf.window()
    assert list(t) == [0, 1, 2, 3, 4] and list(low[0]) == list(high[0]) == [0, 1, 2, 3, 4]
    buf.append(5.0, np.array([5, -5], dtype=np.float32))  # full: pairs merge, two samples a row from now on
    assert (buf.rows, buf.stride) == (3, 2)
    t, low, high = buf.window()
    assert list(t) == [0, 2, 4] and list(low[0]) == [0, 2, 4] and list(high[0]) == [1, 3, 5]
    for i in range(6, 26):
        value = 99 if i == 17 else i  # one spike
        buf.append(float(i), np.array([value, np.nan if i in (20, 21) else -i], dtype=np.float32))
    t, low, high = buf.window()
    assert buf.samples == 26 and buf.stride == 8 and t[0] == 0 and t[-1] == 24  # the whole run
    assert high[0].max() == 99 and low[0].min() == 0  # the spike survived three merges
    assert list(low[1]) == [-7, -15, -23, -25] and list(high[1]) == [0, -8, -16, -24]  # NaNs inside a row ignored
    assert all(a is b for a, b in zip(arrays, (buf.t, buf.low, buf.high)))  # the same arrays: fixed memory


def test_plots_leave_a_gap_for_a_missing_sample_and_mark_throttle_onsets(qtbot):
    plots = TelemetryPlots(capacity=200)
    qtbot.addWidget(plots)
    plots.configure([{"subject": "gpu0", "power_limit_w": 700}, {"subject": "gpu1", "power_limit_w": 700}],
                    load_profile("h100"))
    for i in range(150):
        reasons = REASON_BITS["hw_slowdown"] if i >= 120 else 0
        plots.add(i * 0.1, {"gpu0": GpuSample(temp_c=50 + i % 3, sm_clock_mhz=1500, reasons=reasons),
                            "gpu1": None if i == 140 else GpuSample(temp_c=40)})
    plots.refresh()
    assert plots.sample_count() == 150
    xs, _ = plots.curves[("temp_c", "gpu0")].getData()
    assert len(xs) == 150  # never shown, so not yet reduced to a width it does not have
    t, values, _ = plots.buffer.window()
    assert t[0] == 0 and t[-1] == pytest.approx(14.9)
    temp = [f for f, _, _ in SERIES].index("temp_c")
    assert sum(v != v for v in values[temp * 2 + 1]) == 1  # one NaN: gpu1's missing sample
    assert len(plots.markers) == 1 and "hw_slowdown" in plots.markers[0][2]  # the onset, not every sample
    assert plots.throttle.data["x"].tolist() == [pytest.approx(12.0)]
    for i in range(150, 250):  # past the capacity: rows merge, the whole run stays on the plot
        plots.add(i * 0.1, {"gpu0": GpuSample(temp_c=50), "gpu1": GpuSample(temp_c=40)})
    plots.refresh()
    xs, ys = plots.curves[("temp_c", "gpu0")].getData()
    assert xs[0] == 0 and xs[-1] == pytest.approx(24.8) and np.nanmax(ys) == 52  # ranges: low and high
    assert plots.throttle.data["x"].tolist() == [pytest.approx(12.0)]


@pytest.mark.parametrize("tab", ["history", "plots", "checks"])
def test_four_failing_gpus_banner_is_never_cut_at_its_frame_it_scrolls(qtbot, tmp_path, tab):
    """At 1366x768, after the crash cart's size, the full banner of four failing GPUs needs more
    room than the tiles in two columns leave beside the History tab (their wrapped text sets their
    height only once laid out): it was taller than its frame, the last GPU's what-to-do and the
    report cut off with no scroll bar. Now it fits its room, and scrolls where it needs more."""
    four = THREE_GPUS[:3] + EIGHT_GPUS[3:4] + THREE_GPUS[3:]
    window = make_window(qtbot)
    show_ended_run(qtbot, window, four, tmp_path)
    window.resize(1024, 600)
    qtbot.wait(100)
    window.resize(1366, 768)
    qtbot.wait(100)
    window.tabs.setCurrentWidget(getattr(window, tab))
    qtbot.wait(100)  # laid out
    banner, scroll = window.banner, window.banner.scroll_area
    inner = scroll.widget()

    def whole_or_scrolling() -> bool:  # the scroll bar follows the refit once the layout has run
        return inner.height() <= scroll.viewport().height() or scroll.verticalScrollBar().isVisible()

    qtbot.waitUntil(whole_or_scrolling, timeout=3000)
    assert scroll.geometry().bottom() <= banner.contentsRect().bottom()
    assert inside(banner, window)


def test_after_a_run_the_window_shrinks_to_a_crash_carts_screen_in_one_resize(qtbot, tmp_path):
    """The banner fitted at 1920x1080 and 1366x768 set the window's least height: resized to 1024x600
    the window stayed 659 px tall, past the screen, until a second resize."""
    four = THREE_GPUS[:3] + EIGHT_GPUS[3:4] + THREE_GPUS[3:]
    window = make_window(qtbot)
    show_ended_run(qtbot, window, four, tmp_path)
    # And from the wide screen straight to the crash cart's: the tiles' height above the tabs held it
    # at 707 px (the 2026-11-28 review).
    for size in ((1920, 1080), (1366, 768), (1024, 600), (1920, 1080), (1024, 600)):
        window.resize(*size)
        qtbot.wait(100)
        assert (window.width(), window.height()) == size
        banner, scroll = window.banner, window.banner.scroll_area
        assert scroll.geometry().bottom() <= banner.contentsRect().bottom() and inside(banner, window)


def _delta_e(a: str, b: str) -> float:
    """CIELAB distance (CIE76) of two sRGB colours: about 2 is just seen, over 10 told apart at a glance."""
    def lab(colour: str) -> tuple[float, float, float]:
        rgb = [c / 255 for c in QColor(colour).getRgb()[:3]]
        r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
        y = 0.2126 * r + 0.7152 * g + 0.0722 * b
        z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
        fx, fy, fz = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
        return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)
    return sum((p - q) ** 2 for p, q in zip(lab(a), lab(b))) ** 0.5


def test_the_plots_name_gpus_as_the_tiles_do_in_colours_apart_and_single_out_the_failing_one(qtbot, tmp_path):
    """The legend said "gpu0" where the tiles say "GPU 0"; hues spaced evenly put gpu2 and gpu3, gpu5
    and gpu6 close together; and nothing on the plots showed which GPU the banner named."""
    window = make_window(qtbot)
    plots = window.plots
    plots.configure([{"subject": f"gpu{n}", "power_limit_w": 700} for n in range(8)], load_profile("hgx-h100"))
    assert len(plots.subjects) == 8 and len(set(plots.colours.values())) == 8
    legend = QTextDocumentFragment.fromHtml(plots.legend.text()).toPlainText()
    assert "GPU 0" in legend and "GPU 7" in legend and "gpu0" not in legend and "FAIL" not in legend
    for a in plots.subjects:  # every two GPUs' colours, and each against the limit lines' red and amber
        for b in [*(s for s in plots.subjects if s != a), "limit-red", "limit-amber"]:
            other = {"limit-red": "#c4161c", "limit-amber": "#d08700"}.get(b) or plots.colours[b]
            assert _delta_e(plots.colours[a], other) > 35, (a, b)
    show_ended_run(qtbot, window, THREE_GPUS, tmp_path)
    assert plots.singled_out == {"gpu1", "gpu3", "gpu6"}
    for field in plots.plots:
        assert plots.curves[(field, "gpu1")].opts["pen"].width() == 3 and plots.curves[(field, "gpu1")].zValue() > 0
        assert plots.curves[(field, "gpu0")].opts["pen"].width() == 1
    legend = QTextDocumentFragment.fromHtml(plots.legend.text()).toPlainText()
    assert "GPU 1 FAIL" in legend and "GPU 6 FAIL" in legend and "GPU 0 FAIL" not in legend


def test_plots_are_all_drawn_when_their_tab_is_shown_not_one_a_tick(qtbot):
    """Samples that came while another tab was in front are all on every plot as soon as the plots
    are looked at; the timer that redraws one plot a tick plays no part (stopped here)."""
    from PySide6.QtWidgets import QLabel, QTabWidget

    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    plots = TelemetryPlots(capacity=200)
    tabs.addTab(QLabel("checks"), "Checks")
    tabs.addTab(plots, "Plots")
    plots.configure([{"subject": "gpu0", "power_limit_w": 700}], load_profile("h100"))
    tabs.resize(1024, 600)
    tabs.show()
    plots.timer.stop()
    for i in range(40):
        plots.add(i * 0.25, {"gpu0": GpuSample(temp_c=50, power_w=600, sm_clock_mhz=1500, mem_clock_mhz=2619)})
    unshown = [plots.curves[(f, "gpu0")].getData()[0] for f, _, _ in SERIES]
    assert all(xs is None or len(xs) == 0 for xs in unshown)  # nothing drawn while hidden
    tabs.setCurrentWidget(plots)
    qtbot.waitUntil(lambda: not plots._stale, timeout=2000)
    for field, _, _ in SERIES:
        xs, _ = plots.curves[(field, "gpu0")].getData()
        assert xs is not None and xs[0] == 0 and xs[-1] == pytest.approx(9.75), field


def test_events_of_an_ended_run_never_reach_the_next(qtbot):
    """A telemetry sampler stuck in a dying GPU's driver call may emit after its run ended."""
    worker = RunThread()
    got, emits = [], []

    class Runner:
        def __init__(self, emit):
            emits.append(emit)

        def abort(self):
            pass

        def run(self):
            emits[-1](f"run {len(emits)}")
            return len(emits)

    worker.event.connect(got.append)
    for _ in range(2):
        with qtbot.waitSignal(worker.done, timeout=RUN_TIMEOUT_MS):
            worker.start(Runner)
    late = threading.Thread(target=emits[0], args=("late, from run 1",))
    late.start()
    late.join()
    emits[1]("still run 2")
    qtbot.waitUntil(lambda: len(got) >= 3)
    qtbot.wait(100)
    assert got == ["run 1", "run 2", "still run 2"]


def test_a_step_that_ends_without_a_result_for_every_subject_does_not_stay_running(qtbot):
    checks = CheckList()
    qtbot.addWidget(checks)
    checks.check_started("stress.p2p", ["gpu0", "gpu1", "node"])
    checks.check_progress("stress.p2p", "node", 0.5)  # a node-wide step reports for the node
    assert checks.checks["stress.p2p"].bar.value() == 50
    checks.check_finished(CheckResult("stress.p2p", "node", Verdict.FAIL, "hung: no progress", code="WORKER_HANG"))
    checks.check_started("stress.nccl", ["node"])  # aborted before any result
    assert checks.checks["stress.p2p"].bar is not None  # two subjects still owe a result
    checks.finish()
    p2p, nccl = checks.checks["stress.p2p"], checks.checks["stress.nccl"]
    assert p2p.bar is None and p2p.item.text(VERDICT) == "FAIL" and "hung" in p2p.item.text(3)
    assert nccl.bar is None and nccl.item.text(VERDICT) == "ABORTED" and "did not finish" in nccl.item.text(3)


def test_a_check_of_another_gpu_generation_reads_not_applicable(qtbot):
    checks = CheckList()
    qtbot.addWidget(checks)
    checks.check_started("health.retired_pages", ["gpu0", "gpu1"])
    for subject in ("gpu0", "gpu1"):
        checks.check_finished(CheckResult("health.retired_pages", subject, Verdict.SKIP, "not applicable: Ampere and "
                                          "newer GPUs remap rows instead of retiring pages", code="PAGE_RETIREMENT_NA"))
    row = checks.checks["health.retired_pages"].item
    assert row.text(VERDICT) == "N/A" and row.child(0).text(VERDICT) == "N/A"
    checks.check_started("nic.tcp", ["nic0"])  # a check that did not run stays a SKIP
    checks.check_finished(CheckResult("nic.tcp", "nic0", Verdict.SKIP, "no peer", code="NIC_NO_PEER"))
    assert checks.checks["nic.tcp"].item.text(VERDICT) == "SKIP"


def test_a_tile_shows_the_pcie_link_only_as_seen_under_load(qtbot):
    tile = GpuTile({"subject": "gpu2", "name": "NVIDIA H100", "bus_id": "0000:52:00.0", "serial": "S2",
                    "pcie_max_gen": 5, "pcie_max_width": 16, "power_limit_w": 700})
    qtbot.addWidget(tile)
    tile.show_sample(GpuSample(util_pct=0, pcie_gen=1, pcie_width=16, temp_c=30, power_w=70, power_limit_w=700))
    assert "idle" in tile.pcie.text() and "70 / 700 W" in tile.power.text()
    tile.show_sample(GpuSample(util_pct=100, pcie_gen=5, pcie_width=16))
    assert "at max" in tile.pcie.text()
    tile.show_sample(GpuSample(util_pct=100, pcie_gen=4, pcie_width=16))
    assert tile.pcie.text() == "PCIe Gen4 x16 DOWNTRAINED (max Gen5)"
    tile.show_sample(GpuSample(util_pct=0, pcie_gen=1, pcie_width=16))  # back at idle: the loaded reading stays
    assert "DOWNTRAINED" in tile.pcie.text()
    tile.mark_lost()
    assert tile.pcie.text() == "NOT ANSWERING"


def test_after_a_run_a_tiles_readings_say_they_are_the_last_not_live(qtbot):
    """The readings stop with the run: "476 / 700 W" beside PASS read as a GPU still under load."""
    tile = GpuTile({"subject": "gpu0", "name": "NVIDIA H100", "bus_id": "0000:1b:00.0", "serial": "S0"})
    qtbot.addWidget(tile)
    tile.show()
    tile.set_running(False)
    assert tile.when.isHidden()  # before any reading there is nothing to call the last one
    tile.set_running(True)
    tile.show_sample(GpuSample(util_pct=100, temp_c=47, power_w=476, power_limit_w=700, sm_clock_mhz=1359))
    assert tile.when.isHidden() and "color" not in tile.power.styleSheet()
    tile.set_running(False)
    assert tile.when.isVisible() and tile.when.text() == "last:"
    assert all("color" in label.styleSheet() and "not live" in label.toolTip()
               for label in (tile.temp, tile.power, tile.clock))
    tile.set_running(True)  # the next run: live again
    assert tile.when.isHidden() and tile.power.toolTip() == "" and "color" not in tile.power.styleSheet()


# ---------------------------------------------------------------------- the command line


def test_screenshot_of_a_finished_run_from_the_command_line(tmp_path):
    scenario = tmp_path / "fast-hgx.toml"  # the built-in node, with time compressed further
    text = (ROOT / "nodeqc" / "backends" / "sim" / "scenarios" / "hgx-h100.toml").read_text()
    scenario.write_text(text.replace("time_scale = 10", f"time_scale = {TIME_SCALE}"))
    shot, archive, textfile = tmp_path / "shot.png", tmp_path / "archive", tmp_path / "node.prom"
    archive.mkdir()
    p = cli("gui", "--simulate", str(scenario), "--profile", "hgx-h100", "--quick", "--start",
            "--inject", "gpu3:pcie_width=8", "--screenshot", str(shot), "--archive", str(archive),
            "--prometheus-textfile", str(textfile), env={"QT_QPA_PLATFORM": "offscreen"})
    assert p.returncode == 1, p.stderr
    assert "propagateSizeHints" not in p.stderr  # offscreen Qt's noise is filtered out
    image = QImage(str(shot))
    assert not image.isNull() and image.width() >= 600 and image.height() >= 400
    report = Path(p.stdout.strip().splitlines()[-1])
    assert verify_file(report, trusted_keys()).predicate["verdict"] == "FAIL"
    # The headless run's options hold in the app too: the archive named, the textfile after the report.
    assert report.is_relative_to(archive) and "nodeqc_" in textfile.read_text()


def test_without_pyside6_nodeqc_says_how_to_install_the_gui(tmp_path):
    code = "import sys; sys.modules['PySide6'] = None; from nodeqc.cli.main import main; sys.exit(main([]))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'nodeqc[gui]'" in lines[0] and "--headless" in lines[0]


def test_with_qt_unable_to_load_nodeqc_names_the_missing_library_not_the_extra():
    # As on a server without libEGL: PySide6 is installed, its QtGui module cannot load.
    code = "import sys; sys.modules['PySide6.QtGui'] = None; from nodeqc.cli.main import main; sys.exit(main([]))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nodeqc: Qt cannot start:") and "PySide6.QtGui" in lines[0]
    assert "nodeqc[gui]" not in lines[0] and "--headless" in lines[0]


def test_without_a_display_the_gui_says_so_in_one_line():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    p = subprocess.run([sys.executable, "-m", "nodeqc", "gui", "--simulate", "h100"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "no display" in lines[0] and "--headless" in lines[0]


@pytest.mark.parametrize("args, message", [
    (["gui", "--profile", "nope", "--simulate", "h100"], 'no profile named "nope"'),
    (["gui", "--simulate", "h100", "--screenshot", "/nonexistent/dir/x.png"], "no such directory"),
    (["--simulate", "h100", "--inject", "gpu9:lost"], "the simulated node has gpu0-gpu0"),
    # offscreen, a screenshot taken when a run ends that never starts was a hang (2026-11-27)
    (["--simulate", "h100", "--quick", "--screenshot", "shot.png"], "add --start to start it"),
])
def test_bad_input_to_the_gui_is_one_line_and_exit_2(args, message):
    p = cli(*args, env={"QT_QPA_PLATFORM": "offscreen"})
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr


def test_the_engine_never_imports_the_gui():
    engine = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "nodeqc").rglob("*.py")
              if "gui" not in p.parts and p.name != "__main__.py"]
    assert "nodeqc.run.runner" in engine and "nodeqc.backends.sim.node" in engine
    code = (f"import importlib, sys\nfor name in {engine!r}:\n    importlib.import_module(name)\n"
            "bad = [m for m in sys.modules\n"
            "       if m.split('.')[0] in ('PySide6', 'pyqtgraph') or m.startswith('nodeqc.gui')]\n"
            "assert not bad, bad\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr


def test_a_burn_ins_status_shows_in_the_status_bar_and_is_not_kept_as_a_notice(qtbot):
    """A burn-in's steady status line (Notice level "progress") replaces the status bar's text as it
    comes; the run's notices, kept for the Notices button, stay the warnings and information."""
    from nodeqc.run.events import Notice

    window = make_window(qtbot)
    window.on_event(Notice("warning", "something to keep"))
    window.on_event(Notice("progress", "burn-in 5m of 8h00m (7h55m left): gpu0 612 TFLOP/s 70 C 690 W"))
    assert window.notices == ["warning: something to keep"]
    assert window.status.toolTip() == as_tip("warning: something to keep")
    assert "burn-in 5m of 8h00m" in window.status.full


@pytest.mark.parametrize("action,title", [(None, "Re-test"), ("reseated GPU 3", "Repair")])
def test_the_printable_re_test_wraps_at_the_margin_and_is_titled_for_what_it_was(qtbot, tmp_path, action, title):
    """The PDF's re-test section was a <pre> block: a report path and [ROW_REMAP_PENDING] ran off the
    right margin; and an automatic re-test (no --repair) was titled "Repair". Laid out on A4 now,
    every line fits the page's width, long paths break at their slashes, and the title says which."""
    from PySide6.QtCore import QSizeF
    from PySide6.QtGui import QFont, QTextDocument

    long_path = "/srv/archive/" + "a-very-long-directory-name/" * 6 + "node-20261127T002427Z.report.json"
    repair = {"previous": {"path": long_path, "sha256": "8b24d926a1d9eac1" * 4, "verdict": "FAIL"},
              "outcomes": [{"subject": "gpu3", "check": "health.row_remap", "code": "ROW_REMAP_PENDING",
                            "status": "STILL FAILING", "identity": "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)"}]}
    if action:
        repair["action"] = action
    predicate = {"verdict": "FAIL", "status": "complete", "checks": [], "node": {}, "profile": {}, "repair": repair}
    html_text = summary_html(LoadedReport(tmp_path / "x.report.json", predicate, True, "signature: verified"))
    assert f"<h2>{title}</h2>" in html_text and "<pre>" not in html_text
    doc = QTextDocument()
    doc.setDefaultFont(QFont("Sans Serif", 9))
    doc.setHtml(html_text)
    width = 595 - 72  # A4 in points, less the margins
    doc.setPageSize(QSizeF(width, 842 - 72))
    assert doc.idealWidth() <= width + 1, doc.idealWidth()
    text = QTextDocumentFragment.fromHtml(html_text).toPlainText().replace("\u200b", "")
    assert long_path in text and "[ROW_REMAP_PENDING]" in text


def test_the_printable_repair_lines_up_its_labels_and_values_as_the_run_does(qtbot, tmp_path):
    """The PDF's repair block was the terminal's lines, padded for monospace: in the PDF's type the
    statuses' padding did not line up and wrapped lines went back to the margin. Its rows are now
    the run's kind of table: labels in one column, every value starting at one left edge."""
    from PySide6.QtCore import QSizeF
    from PySide6.QtGui import QFont, QTextDocument

    from nodeqc.report.answer import repair_rows
    from nodeqc.report.printable import field_table

    repair = {"action": "reseated GPU 3 riser", "named": True, "parts": ["gpu3"],
              "previous": {"path": "/srv/archive/node-20261127T002427Z.report.json", "sha256": "8b24d926a1d9eac1" * 4,
                           "verdict": "FAIL"},
              "outcomes": [{"subject": "gpu3", "check": "health.pcie_link", "code": "PCIE_WIDTH", "status": "FIXED",
                            "identity": "GPU 3 (0000:61:00.0, serial SIM-HGXH100-0001-G3)"},
                           {"subject": "gpu5", "check": "stress.hbm_bandwidth", "code": "HBM_SLOW",
                            "status": "STILL FAILING", "identity": "GPU 5 (0000:c3:00.0, serial SIM-HGXH100-0001-G5)"}]}
    predicate = {"verdict": "FAIL", "status": "complete", "checks": [], "node": {}, "profile": {}, "repair": repair}
    html_text = summary_html(LoadedReport(tmp_path / "x.report.json", predicate, True, "signature: verified"))
    rows = repair_rows(repair)
    assert [label for label, _ in rows] == ["Repair", "Re-test of", "FIXED", "STILL FAILING"]
    # The same structure as the run's block: one table of label and value cells.
    block = html_text[html_text.index("<h2>Repair</h2>") + len("<h2>Repair</h2>"):html_text.index("<h2>The run</h2>")]
    assert block.startswith("<table cellpadding='2'>") and block.count("<tr>") == len(rows)
    assert block.count("<td nowrap>") == len(rows) and "white-space" not in block
    run_block = html_text[html_text.index("<h2>The run</h2>") + len("<h2>The run</h2>"):html_text.index("<h2>All checks")]
    assert run_block.startswith(field_table([])[:-len("</table>")])
    # Laid out as the PDF is: the labels where the run's are, the values at one left edge right of them.
    doc = QTextDocument()
    doc.setDefaultFont(QFont("Sans Serif", 9))
    doc.setHtml(html_text)
    doc.setPageSize(QSizeF(595 - 72, 842 - 72))
    where: dict[str, float] = {}
    block_ = doc.begin()
    while block_.isValid():
        where.setdefault(block_.text().replace("\u200b", ""), doc.documentLayout().blockBoundingRect(block_).x())
        block_ = block_.next()
    labels = {where[label] for label, _ in rows[1:]} | {where["Driver"], where["Signature"]}
    values = {where[text] for _, text in rows}
    assert len(labels) == 1 and len(values) == 1 and values.pop() > labels.pop(), (labels, values)
    assert doc.idealWidth() <= 595 - 72 + 1, doc.idealWidth()


def _limit_labels(plot):
    return [item.label for item in plot.items if isinstance(item, pg.InfiniteLine) and getattr(item, "label", None) is not None]


@pytest.mark.parametrize("size", [(1024, 600), (1366, 768)])
def test_the_plots_limit_labels_are_whole_at_a_crash_carts_size(qtbot, size):
    """At 1024x600 a plot is about 50 pixels tall: a fixed headroom above the highest limit left
    its label ("limit 87 °C, warn 82") cut off by the top of the plot."""
    window = make_window(qtbot, scenario="h100", profile="h100")
    window.resize(*size)
    gpus = [{"subject": "gpu0", "power_limit_w": 700, "max_sm_clock_mhz": 1980}]
    window.plots.configure(gpus, load_profile("h100"))
    for i in range(200):
        window.plots.add(i * 0.5, {"gpu0": GpuSample(temp_c=60, power_w=690, sm_clock_mhz=1980, util_pct=100)})
    qtbot.wait(50)
    window.plots.refresh()
    qtbot.wait(50)
    for field, plot in window.plots.plots.items():
        box = plot.getViewBox().sceneBoundingRect()
        labels = _limit_labels(plot)
        assert labels or field == "util_pct"
        for label in labels:
            rect = label.sceneBoundingRect()
            assert box.top() <= rect.top() and rect.bottom() <= box.bottom(), (field, label.toPlainText(), size)


def test_on_a_simulated_node_the_plots_and_the_running_banner_say_which_clock_they_show(qtbot):
    """The plots' time axis is the run's clock, which on a simulated node runs TIME_SCALE times the
    wall's: an axis reading 250 s beside a banner reading 0:25 elapsed looked like a lag or a bug."""
    window = make_window(qtbot, scenario="h100", profile="h100")
    window.start()
    qtbot.waitUntil(lambda: window.plots.sample_count() > 5 and window.current_check is not None,
                    timeout=RUN_TIMEOUT_MS)
    window.redraw()
    running = QTextDocumentFragment.fromHtml(window.banner_text.text()).toPlainText()
    axis = window.plots.plots["temp_c"].getAxis("bottom").labelText
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS):
        window.worker.abort()
    assert "simulated" in axis, axis
    assert re.search(r"\d+:\d\d elapsed \(\d+:\d\d simulated\)", running), running


def test_the_running_banners_now_line_follows_a_check_as_it_starts_not_on_the_next_redraw(qtbot):
    window = make_window(qtbot)
    window.active = True
    window.started_at = 0.0
    window.on_event(CheckStarted("health.pcie_link", ["gpu0", "gpu1"], 12.0))
    first = window.banner_text.text()
    window.on_event(CheckStarted("stress.burn", ["gpu0", "gpu1"], 13.0))  # no timer tick between
    window.active = False
    assert "pcie_link" in first or "PCIe" in first, first
    assert "burn" in window.banner_text.text(), window.banner_text.text()


def test_the_checks_list_and_the_tiles_open_on_the_part_the_banner_names_first(qtbot, tmp_path):
    """Three GPUs failed: the banner names GPU 1 first; the list opened on GPU 6's stress.burn (the
    first failing check in the list's order), and the detail pane on a part the banner named last."""
    window = make_window(qtbot)
    window.resize(1024, 600)
    burn_first = [THREE_GPUS[2], *THREE_GPUS[:2], THREE_GPUS[3]]  # as a run finishes them: the burn first
    show_ended_run(qtbot, window, burn_first, tmp_path)
    first_line = QTextDocumentFragment.fromHtml(window.banner_findings.text()).toPlainText().splitlines()[0]
    assert first_line.startswith("GPU 1"), first_line
    result = window.checks.tree.currentItem().data(0, Qt.ItemDataRole.UserRole)
    assert (result.name, result.subject) == ("health.pcie_link", "gpu1")
    assert in_view(window.tiles["gpu1"], window.tile_area)


def test_at_1024x600_the_failing_check_selected_is_in_view_in_the_checks_list(qtbot, tmp_path):
    """The Checks tab opens on the first failure, scrolled to it: at 1024x600 the list is a few rows
    high and gpu5's failing row sat below them (issue 29's audit), the detail pane naming a row not shown."""
    window = make_window(qtbot)
    window.resize(1024, 600)
    results = [CheckResult(name, f"gpu{i}", Verdict.PASS, "fine") for name in ("stress.burn", "stress.power")
               for i in range(8)]
    results += [CheckResult("stress.hbm_bandwidth", f"gpu{i}", Verdict.FAIL if i == 5 else Verdict.PASS,
                            "slow at full memory clock" if i == 5 else "fine", code="HBM_SLOW" if i == 5 else None)
                for i in range(8)]
    show_ended_run(qtbot, window, results, tmp_path)
    tree = window.checks.tree
    item = tree.currentItem()
    assert item is not None and item.text(0).strip() == "gpu5"

    def shown() -> bool:
        rect = tree.visualItemRect(item)
        return rect.isValid() and tree.viewport().rect().contains(rect)

    qtbot.waitUntil(shown, timeout=2000)


def test_the_nodes_own_words_show_as_written_never_as_markup(qtbot, tmp_path):
    """2026-11-29 fuzzing: the header's labels and tooltips took a host name or a serial that looks
    like markup for rich text: <img src=/dev/zero> crashed the app, an <img> of a FIFO hung it and
    <font size=6> restyled the header."""
    import json

    from nodeqc.core.resources import scenarios_dir
    from nodeqc.gui.widgets import tip

    hostile = '<img src="nothing.png"><font size=6>n1</font>'
    text = (scenarios_dir() / "h100.toml").read_text()
    scenario = tmp_path / "hostile.toml"
    scenario.write_text("\n".join(f"hostname = {json.dumps(hostile)}" if line.startswith("hostname") else line
                                  for line in text.splitlines()))
    window = make_window(qtbot, str(scenario), "h100")
    assert window.hostname.textFormat() == Qt.TextFormat.PlainText and window.hostname.full == hostile
    assert window.hostname.toolTip() == "<qt>&lt;img src=&quot;nothing.png&quot;&gt;&lt;font size=6&gt;n1&lt;/font&gt;</qt>"
    tile = window.findChildren(GpuTile)[0]
    assert tile.identity.textFormat() == Qt.TextFormat.PlainText and tile.bus.textFormat() == Qt.TextFormat.PlainText
    assert tip("a\nb<") == "<qt>a<br>b&lt;</qt>" and tip("") == ""
