"""The GPU tiles on screens too short for an HGX node's eight in full: at 1366x768 beside the Checks
tab and on a 1024x600 crash cart the full tiles showed 2.5 to 3.3 of eight, the rest behind a scroll
bar. Where the full tiles do not fit their room they turn dense (three lines in smaller type) and the
technician sees nearly twice as many, each still with its number, bus id, verdict, readings and link."""

import dataclasses

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from test_gui import EIGHT_GPUS, in_view, make_window, show_ended_run  # noqa: E402  (sets Qt offscreen)

from nodeqc.backends.base import GpuSample  # noqa: E402
from nodeqc.gui.widgets import tip  # noqa: E402


def _sample(**values) -> GpuSample:
    blank = {f.name: None for f in dataclasses.fields(GpuSample)}
    return GpuSample(**{**blank, "temp_c": 64, "power_w": 648, "power_limit_w": 700, "sm_clock_mhz": 1794,
                        "pcie_gen": 5, "pcie_width": 16, "util_pct": 100, **values})


def _settle(qtbot, window, size, tab=None) -> None:
    window.resize(*size)
    if tab is not None:
        window.tabs.setCurrentWidget(getattr(window, tab))
    qtbot.wait(150)  # the layout, then the banner, then the tiles fitted to the room left


def _whole_in_view(window) -> int:
    return sum(in_view(t, window.tile_area) for t in window.tiles.values())


def _inside_tile(widget, tile) -> bool:
    rect = widget.rect().translated(widget.mapTo(tile, widget.rect().topLeft()))
    return widget.isVisible() and tile.rect().contains(rect)


@pytest.mark.parametrize("size, tab, least", [((1366, 768), "checks", 7), ((1024, 600), "plots", 5)])
def test_eight_tiles_that_do_not_fit_in_full_turn_dense_and_nearly_twice_as_many_show(qtbot, size, tab, least):
    window = make_window(qtbot)
    for tile in window.tiles.values():
        tile.show_sample(_sample())
    _settle(qtbot, window, size, tab)
    tiles = list(window.tiles.values())
    assert all(t.dense for t in tiles)
    # The dense tiles' own heights take a layout pass more (a busy CI machine: 3 in view at 150 ms).
    qtbot.waitUntil(lambda: _whole_in_view(window) >= least, timeout=3000)
    shown = _whole_in_view(window)
    # In full this room held four and three (113 px a tile); dense (70 px), seven and five.
    full_rows = window.tile_area.viewport().height() // tiles[0].full_height()
    assert shown >= least and shown >= full_rows + 2, (shown, full_rows)
    for tile in tiles:  # what a technician reads off a tile, all of it on the tile
        for part in (tile.title, tile.bus, tile.badge, tile.temp, tile.power, tile.clock, tile.pcie, tile.ecc, tile.xid):
            assert _inside_tile(part, tile), (tile.subject, part.text())
        for label in (tile.temp, tile.power, tile.clock, tile.pcie):  # nothing cut: each as wide as its text
            assert label.width() >= label.sizeHint().width(), label.text()
        assert not tile.identity.isVisible() and tile.toolTip() == tip(tile.identity.text())
        assert "S/N SIM-HGXH100-0001-G" in tile.toolTip()


def test_where_the_full_tiles_fit_they_stay_full_and_come_back_after_a_smaller_screen(qtbot):
    window = make_window(qtbot)
    down = window.tiles["gpu3"]
    for tile in window.tiles.values():
        tile.show_sample(_sample(pcie_width=8) if tile is down else _sample())
    _settle(qtbot, window, (1920, 1080), "plots")  # two rows of four above the tabs: room for them in full
    assert not any(t.dense for t in window.tiles.values()) and _whole_in_view(window) == 8
    assert down.identity.isVisible() and down.toolTip() == ""
    assert down.pcie.text() == "PCIe Gen5 x8 DOWNTRAINED (max x16)"
    _settle(qtbot, window, (1366, 768), "checks")
    assert down.dense and down.pcie.text() == "x8 DOWNTRAINED"  # only what is down, beside ECC and XID
    assert down.pcie.toolTip() == tip("PCIe Gen5 x8 DOWNTRAINED (max x16)")  # the whole of it, a hover away
    assert down.markers.indexOf(down.pcie) == 0 and down.link_row.indexOf(down.pcie) == -1
    _settle(qtbot, window, (1920, 1080), "plots")
    assert not down.dense and down.identity.isVisible() and down.link_row.indexOf(down.pcie) == 0
    assert down.pcie.text() == "PCIe Gen5 x8 DOWNTRAINED (max x16)" and down.pcie.toolTip() == ""
    # The readings' type is back to full: as tall as a fresh full tile's.
    assert down.temp.font().pointSize() == window.tiles["gpu0"].temp.font().pointSize() == 13


def test_one_gpu_on_a_crash_cart_keeps_its_full_tile(qtbot):
    window = make_window(qtbot, scenario="h100", profile="h100")
    _settle(qtbot, window, (1024, 600))
    tile = window.tiles["gpu0"]
    assert not tile.dense and tile.identity.isVisible()


def test_after_a_failed_run_the_dense_tiles_keep_the_failing_one_in_view(qtbot, tmp_path):
    window = make_window(qtbot)
    _settle(qtbot, window, (1366, 768), "checks")
    show_ended_run(qtbot, window, [EIGHT_GPUS[5]], tmp_path)
    qtbot.wait(150)
    failing = window.tiles["gpu5"]
    assert failing.dense and failing.badge.text() == "FAIL"
    qtbot.waitUntil(lambda: in_view(failing, window.tile_area), timeout=2000)


@pytest.mark.parametrize("tab", ["plots", "checks", "history"])
def test_the_tabs_claim_no_more_than_they_need_so_the_banner_shows_whole(qtbot, tmp_path, tab):
    """2026-11-28 review: a wrapping legend (Plots) or caption (History) made Qt count the tabs at the
    plots' and the list's preferred heights (320-477 px where 150 do): the banner of four failing GPUs
    got the rest at 1366x768, and scrolled its what-to-do out of sight above empty room. The plots and
    the list scroll; their preferred heights are no claim on the window."""
    window = make_window(qtbot)
    show_ended_run(qtbot, window, EIGHT_GPUS[:4], tmp_path)
    window.plots.legend.setText("  ".join(f"GPU {i} FAIL" for i in range(12)))  # two lines at the tab's width
    window.history.watch.setText("Watch: " + "not watched by nodeqc watch; " * 6)
    window.resize(1366, 768)
    window.tabs.setCurrentWidget(getattr(window, tab))
    qtbot.wait(200)
    tabs = window.tabs
    assert not tabs.hasHeightForWidth() or tabs.heightForWidth(tabs.width()) < 250
    scroll = window.banner_scroll
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() == 0, timeout=3000)
    assert scroll.height() >= scroll.widget().layout().totalHeightForWidth(scroll.viewport().width())
    assert scroll.geometry().bottom() <= window.banner.contentsRect().bottom()


def test_a_checks_row_shows_its_worst_judged_verdict_and_one_range_of_the_parts_figures(qtbot):
    """2026-11-28 review: stress.power's row read SKIP (grey) over seven GPUs that passed and one not
    run, with "0.959 .. 5" for its figure: the GPUs' share of the limit and the node's sensor count."""
    from nodeqc.core.model import CheckResult, Value, Verdict
    from nodeqc.gui.checks import FIGURE, MESSAGE, VERDICT, CheckList

    checks = CheckList()
    qtbot.addWidget(checks)
    subjects = [f"gpu{i}" for i in range(3)] + ["node"]
    checks.check_started("stress.power", subjects)
    for i, share in enumerate((0.959, 0.962)):
        checks.check_finished(CheckResult("stress.power", f"gpu{i}", Verdict.PASS, "held", values={"share": Value(share)},
                                          key="share"))
    checks.check_finished(CheckResult("stress.power", "gpu2", Verdict.SKIP, "not run: another process uses it",
                                      code="GPU_IN_USE"))
    checks.check_finished(CheckResult("stress.power", "node", Verdict.PASS, "5 sensors", values={"sensors": Value(5)},
                                      key="sensors"))
    row = checks.checks["stress.power"].item
    assert row.text(VERDICT) == "PASS"
    assert row.text(FIGURE) == "0.959 .. 0.962"
    assert row.text(MESSAGE) == "3 passed; gpu2: not run: another process uses it"
    checks.check_started("stress.hbm_bandwidth", ["gpu0"])
    checks.check_finished(CheckResult("stress.hbm_bandwidth", "gpu0", Verdict.SKIP, "not run", code="GPU_IN_USE"))
    assert checks.checks["stress.hbm_bandwidth"].item.text(VERDICT) == "SKIP"  # all not run: SKIP


def test_a_tall_banner_on_a_wide_screen_leaves_the_tiles_above_the_tabs_not_under_them(qtbot, tmp_path):
    """The 2026-11-28 GUI review: at 1920x1080 after three failing GPUs the tabs lay over the tiles
    (the tiles' row was 6 px of the layout's reckoning: it counted their Ignored height as none)."""
    window = make_window(qtbot)
    window.resize(1920, 1080)
    qtbot.wait(100)
    show_ended_run(qtbot, window, EIGHT_GPUS[:4], tmp_path)
    qtbot.wait(100)
    tiles, tabs = window.tile_area.geometry(), window.tabs.geometry()
    assert tiles.height() >= 2 * 60 and tabs.top() > tiles.bottom(), (tiles, tabs)
    assert window.banner.geometry().bottom() < tiles.top()



def test_a_failed_dense_tile_gives_its_passing_marks_room_for_its_failure(qtbot, tmp_path):
    """The 2026-11-29 screenshots at 1366x768 and 1024x600: beside its link, ECC and XID badges a
    power-capped GPU's dense tile said "po…" of its failure. Its passing marks now give way; a
    passing tile keeps them, and a failed mark stays (it is the news)."""
    from nodeqc.core.model import CheckResult, Verdict

    window = make_window(qtbot)
    _settle(qtbot, window, (1366, 768), "checks")
    for tile in window.tiles.values():
        tile.show_sample(_sample())
    passing = [CheckResult(check, f"gpu{i}", Verdict.PASS, "fine") for i in (2, 3) for check in ("health.ecc", "health.xid")]
    show_ended_run(qtbot, window, passing + [EIGHT_GPUS[2], EIGHT_GPUS[5]], tmp_path)
    qtbot.wait(150)
    burn, xid, clean = window.tiles["gpu2"], window.tiles["gpu5"], window.tiles["gpu3"]
    assert burn.dense and clean.dense
    assert not burn.pcie.isVisible() and not burn.ecc.isVisible() and not burn.xid.isVisible()
    assert burn.activity.text().startswith("slow at full clocks (1,412 MHz)"), burn.activity.text()
    assert xid.xid.isVisible() and xid.xid.text().startswith("XID FAIL")
    assert clean.pcie.isVisible() and clean.ecc.isVisible() and clean.xid.isVisible()
    window.resize(1920, 2000)  # room for every tile in full: the marks are back
    qtbot.waitUntil(lambda: not burn.dense, timeout=2000)
    assert burn.pcie.isVisible() and burn.ecc.isVisible() and burn.xid.isVisible()
