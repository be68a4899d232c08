"""`nodeqc` (or `nodeqc gui`): the desktop app, from the same arguments as the headless run."""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, QTimer
from PySide6.QtWidgets import QApplication

from nodeqc import cli
from nodeqc.backends import Hardware
from nodeqc.errors import UsageError
from nodeqc.gui.session import RunSetup, probe
from nodeqc.gui.window import MainWindow
from nodeqc.keys import Signer
from nodeqc.peers import parse_peers
from nodeqc.profile import Profile
from nodeqc.prometheus import check_path
from nodeqc.runner import RunOptions
from nodeqc.safefile import OutputError, write_atomic
from nodeqc.selection import Selection

SETTLE_MS = 300  # let the last layout and paint happen before the screenshot


def check_display() -> None:
    """Qt aborts the process when it finds no display; say so in one line instead."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        raise UsageError("no display found (DISPLAY is not set): run it on a desktop, set "
                         "QT_QPA_PLATFORM=offscreen with --start --screenshot PNG, or use nodeqc --headless")


def make_app() -> QApplication:
    app = QApplication.instance() or QApplication(["nodeqc"])
    app.setStyle("Fusion")  # the same look on every desktop; the window brings its own sizes and colours
    return app


def main(args: argparse.Namespace, argv: list[str]) -> int:
    check_display()
    if args.screenshot:
        shot = Path(args.screenshot)
        if not shot.parent.is_dir():
            raise UsageError(f"--screenshot {shot}: no such directory {shot.parent}")
    runs = CommandLineRuns(args, argv)  # bad arguments end here, before any window opens
    hardware, _profile, _signer = cli.prepare(args)
    setup = RunSetup(prepare=runs.prepare, options=runs.options, after_run=runs.after_run,
                     profile=args.profile or "auto", operator=args.operator, ticket=args.ticket,
                     archive=runs.archive.root, partial=runs.selection.describe() if runs.selection.partial else None)
    app = make_app()
    window = MainWindow(setup, probe(hardware))
    if args.screenshot:  # once the run has ended and the window shows its verdict
        window.run_done.connect(lambda _: QTimer.singleShot(SETTLE_MS, lambda: _save_and_quit(window, shot)))
    window.resize(window.screen().availableGeometry().size())  # full screen even without a window manager
    window.showMaximized()
    if args.start:
        QTimer.singleShot(0, window.start)
    app.exec()
    if window.outcome is not None:
        print(window.outcome.report_path, flush=True)  # as the headless run: the last line is the report
    return window.exit_code


class CommandLineRuns:
    """The headless run's choices, for the window's runs: the same options, re-test and archive, the
    same notes and Prometheus textfile after each report (nodeqc.cli does the work)."""

    def __init__(self, args: argparse.Namespace, argv: list[str]):
        self.args = args
        self.command = ["nodeqc", *argv]
        self.selection = Selection.parse(args.only, args.skip)
        self.textfile = Path(args.prometheus_textfile) if args.prometheus_textfile else None
        if self.textfile:
            check_path(self.textfile)
        self.archive = cli._open_archive(args.archive)
        self.previous: tuple[Path, dict[str, Any]] | None = None  # the report the current run re-tests
        self.trusted: dict[str, Any] | None = None

    def prepare(self, profile_ref: str) -> tuple[Hardware, Profile, Signer]:
        run_args = copy.copy(self.args)
        run_args.profile = profile_ref
        return cli.prepare(run_args)

    def options(self, hardware: Hardware, profile: Profile, signer: Signer, operator: str | None,
                ticket: str | None) -> RunOptions:
        a = self.args
        self.previous = cli._previous_report(hardware, self.archive, a.retest)
        self.trusted = cli._signer_trust(signer)  # the key the run's report must be signed with
        return RunOptions(profile=profile, signer=signer, out_dir=Path(a.out) if a.out else None, quick=a.quick,
                          operator=operator, ticket=ticket, sample_hz=a.sample_hz, burn_in_s=a.burn_in,
                          command=self.command, archive=self.archive.root, selection=self.selection,
                          previous=self.previous[1] if self.previous else None, nic_peers=parse_peers(a.nic_peer))

    def after_run(self, report: Path) -> None:
        cli._after_run(report, self.selection, self.previous, self.textfile, trusted=self.trusted)


def _save_and_quit(window: MainWindow, path: Path) -> None:
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    saved = window.grab().save(buffer, path.suffix.lstrip(".").upper())
    try:
        if not saved:
            raise OutputError(f"{path}: could not make the screenshot")
        write_atomic(path, bytes(buffer.data()))  # never through a planted link
    except OutputError as e:
        print(f"nodeqc: {e}", file=sys.stderr)
        window.exit_code = 2
    else:
        print(f"nodeqc: screenshot saved: {path}", file=sys.stderr)
    QApplication.instance().exit()
