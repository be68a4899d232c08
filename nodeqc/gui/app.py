"""`nodeqc` (or `nodeqc gui`): the desktop app, from the same arguments as the headless run."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, QSize, QtMsgType, QTimer, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from nodeqc.core.errors import UsageError
from nodeqc.core.safefile import OutputError, write_atomic
from nodeqc.core.text import is_digits
from nodeqc.gui.session import RunSetup, probe
from nodeqc.gui.window import MainWindow
from nodeqc.run.flow import RunFlow, prepare

SETTLE_MS = 300  # let the last layout and paint happen before the screenshot


def check_display() -> None:
    """Qt aborts the process when it finds no display; say so in one line instead."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        raise UsageError("no display found (DISPLAY is not set): run it on a desktop, set "
                         "QT_QPA_PLATFORM=offscreen with --start --screenshot PNG, or use nodeqc --headless")


def _qt_message(mode: QtMsgType, context: Any, message: str) -> None:
    """Qt's own messages, less one that is noise: the offscreen platform (screenshots, tests) says it
    cannot pass size hints to a window manager it does not have, once per layout change."""
    if "propagateSizeHints" in message:
        return
    print(message, file=sys.stderr)


def make_app() -> QApplication:
    if os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen"):
        qInstallMessageHandler(_qt_message)
    app = QApplication.instance() or QApplication(["nodeqc"])
    app.setStyle("Fusion")  # the same look on every desktop; the window brings its own sizes and colours
    return app


def main(args: argparse.Namespace, argv: list[str]) -> int:
    check_display()
    size = window_size()
    if args.screenshot:
        shot = Path(args.screenshot)
        if not args.start:  # the picture is taken when the run ends: without --start it never would (a hang)
            raise UsageError(f"--screenshot {shot}: the window is saved when its run ends; add --start to start it")
        if not shot.parent.is_dir():
            raise UsageError(f"--screenshot {shot}: no such directory {shot.parent}")
    runs = RunFlow(args, argv)  # bad arguments end here, before any window opens
    hardware, _profile, _signer = prepare(args)
    setup = RunSetup(prepare=runs.prepare, options=runs.options, after_run=runs.after_run,
                     profile=args.profile or "auto", operator=args.operator, ticket=args.ticket,
                     archive=runs.archive.root, partial=runs.selection.describe() if runs.selection.partial else None)
    app = make_app()
    window = MainWindow(setup, probe(hardware))
    if args.screenshot:  # once the run has ended and the window shows its verdict
        window.run_done.connect(lambda _: QTimer.singleShot(SETTLE_MS, lambda: _save_and_quit(window, shot)))
    if size is not None:  # a given size: screenshots at 1366x768 and 1920x1080 (NODEQC_WINDOW_SIZE=WxH)
        window.resize(size)
        window.show()
    else:
        window.resize(window.screen().availableGeometry().size())  # full screen even without a window manager
        window.showMaximized()
    if args.start:
        QTimer.singleShot(0, window.start)
    app.exec()
    if window.outcome is not None:
        print(window.outcome.report_path, flush=True)  # as the headless run: the last line is the report
    return window.exit_code


def window_size() -> QSize | None:
    """NODEQC_WINDOW_SIZE=1366x768: open the window at this size instead of filling the screen."""
    text = os.environ.get("NODEQC_WINDOW_SIZE", "").strip()
    if not text:
        return None
    w, sep, h = text.lower().partition("x")
    if not (sep and is_digits(w) and is_digits(h) and int(w) >= 320 and int(h) >= 240):
        raise UsageError(f"NODEQC_WINDOW_SIZE={text}: expected WIDTHxHEIGHT, e.g. 1366x768")
    return QSize(int(w), int(h))


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
