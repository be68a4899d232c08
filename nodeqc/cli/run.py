"""`nodeqc --headless` and `nodeqc` (the desktop app): the run, its progress printed on stderr, and
Ctrl-C (or SIGTERM) that aborts it with a report. The report's path is the last line of stdout."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any, Callable

from nodeqc import __version__
from nodeqc.cli.common import check_output_file
from nodeqc.core.codes import verdict_counts
from nodeqc.core.errors import UsageError


class ProgressPrinter:
    """Renders the event stream on stderr: a line when a check starts; when it ends, a line for each
    subject that did not pass and one line for all that passed, with their key figures."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stderr
        self.pending: dict[str, list[str]] = {}
        self.held: dict[str, dict[tuple[str, str], list[Any]]] = {}  # check -> (verdict, message) -> results
        self.unit = "s"  # a simulated run's clock runs faster than the wall's: its seconds say so

    def _stamp(self, t: float) -> str:
        return f"[{t:8.1f}{self.unit}] "

    def __call__(self, event: Any) -> None:
        from nodeqc.core.text import subjects_text
        from nodeqc.report.render import passed_line, result_line

        kind = event.type
        if kind == "run_started":
            p = event.profile
            sim = "  ** SIMULATED ** (times in simulated seconds)" if event.simulated else ""
            self.unit = " sim s" if event.simulated else "s"
            sku = f" (SKU {p['sku']})" if p.get("sku") else ""
            self._line(f"nodeqc {__version__}: node {event.node.get('hostname')}, profile {p['name']}{sku}, "
                       f"{len(event.gpus)} GPU(s){sim}")
            for notice in p.get("notices", []):  # how the profile was resolved for these GPUs
                self._line(f"nodeqc: {notice}")
            self._line(f"journal: {event.files['journal']}")
        elif kind == "check_started":
            self.pending[event.name] = list(event.subjects)
            self.held[event.name] = {}
            self._line(f"{self._stamp(event.t)}..    {event.name:<24} {subjects_text(event.subjects)}")
        elif kind == "check_finished":
            r = event.result
            waiting = self.pending.get(r.name, [])
            if r.subject in waiting:
                waiting.remove(r.subject)
            held = self.held.get(r.name)
            if held is not None and r.verdict.value in ("pass", "skip"):
                group = ("pass", r.key or "") if r.verdict.value == "pass" else ("skip", r.message)
                held.setdefault(group, []).append(r)
            else:
                self._line(self._stamp(event.t) + result_line(r))
            if not waiting and held:
                for group in self.held.pop(r.name).values():
                    self._line(self._stamp(event.t) + passed_line(group))
        elif kind == "notice":
            self._line(f"nodeqc: {event.level}: {event.text}")
        elif kind == "run_finished":
            self._summary(event)

    def _summary(self, event: Any) -> None:
        """The answer, rendered as every face renders it (nodeqc.report.answer): the headline with what did
        not run, then each failing part with its identity, its findings and what to do."""
        from nodeqc.report.answer import SHOWN_PARTS, answer_lines
        from nodeqc.report.render import planted_line

        first, *rest = answer_lines(event.answer, limit=SHOWN_PARTS)
        self._line(f"RESULT: {first}")
        for line in rest:
            self._line(line)
        for planted in event.planted or []:  # a simulated node's faults: each found, or why not
            self._line(f"  {planted_line(planted)}")
        self._line(f"report: {event.report_path}")

    def _line(self, text: str) -> None:
        # Host, NIC and part names come from the node (a NIC's name is whatever its driver or udev
        # made it): escaped here, once for every line, as `show` does.
        from nodeqc.core.text import clean

        print(clean(text), file=self.stream, flush=True)


def headless(args: argparse.Namespace, argv: list[str]) -> int:
    from nodeqc.run.flow import RunFlow
    from nodeqc.run.runner import Runner

    flow = RunFlow(args, argv)
    hardware, profile, signer = flow.prepare(args.profile)
    options = flow.options(hardware, profile, signer, args.operator, args.ticket)
    runner = Runner(options, hardware, ProgressPrinter())
    with _graceful_abort(runner.abort):
        outcome = runner.run()
    # The run is over and its report signed on disk: what is left (the comparison, the textfile, the
    # report's path on stdout) is saying so, which a Ctrl-C no longer cuts short ("interrupted", exit
    # 2, no path, beside a complete report: the 2026-11-29 fuzzing).
    ignore_interrupts()
    flow.after_run(outcome.report_path)
    if args.json:
        print(json.dumps(run_summary(outcome, options.selection.partial, hardware.simulated), sort_keys=True),
              flush=True)
    else:
        print(outcome.report_path, flush=True)
    return outcome.exit_code


def run_summary(outcome: Any, partial: bool, simulated: bool) -> dict[str, Any]:
    """`--headless --json`: the run in one line for a pipeline, with the exit code it ends with, so a
    script reading stdout has the verdict and what failed without unwrapping the signed report."""
    # n/a apart from the skips, as the text's tally and the Prometheus textfile count them.
    by_verdict: dict[str, int] = {}
    for r in outcome.results:
        by_verdict[r.verdict.value] = by_verdict.get(r.verdict.value, 0) + 1
    counts = verdict_counts(by_verdict, [r.code for r in outcome.results if r.verdict.value == "skip"])
    problems = [{"check": r.name, "subject": r.subject, "verdict": r.verdict.value, "code": r.code}
                for r in outcome.results if r.verdict.value in ("fail", "error", "warn")]
    return {"report": str(outcome.report_path), "verdict": outcome.verdict, "status": outcome.status,
            "exit_code": outcome.exit_code, "partial": partial, "simulated": simulated, "counts": counts,
            "problems": problems, **({"planted": outcome.planted} if outcome.planted is not None else {})}


def ignore_interrupts() -> None:
    """Ctrl-C ignored from here on, whatever is pending. `signal.signal` first runs the handler of a
    Ctrl-C already received (CPython checks pending signals before it changes a handler), so a press
    that lands just then raises KeyboardInterrupt out of the very call that was to ignore it; left
    uncaught there, Python re-raised SIGINT and the process ended -2 after saying it was
    interrupted (tests/test_cli.py, under load). Each retry takes one pending press; new ones stay
    pending at most one at a time, so this ends."""
    while True:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            return
        except KeyboardInterrupt:
            continue


def forget_interrupt() -> None:
    """Tell CPython that the Ctrl-C it saw was handled. A KeyboardInterrupt that left a string
    `exec`/`eval` (CPython's run_eval_code_obj: `typing` and `dataclasses` evaluate strings) marks the
    process as interrupted even when a caller catches it; under `python -m` the interpreter then
    kills itself with SIGINT after a clean exit 2 (exit -2 after "nodeqc: interrupted", the torture
    test's flake, once in a few whole runs). Every string eval clears the mark as it starts: one
    that does nothing clears it."""
    exec("None")  # noqa: S102 - a constant string: it clears CPython's interrupted mark, nothing else


class _graceful_abort:
    """First Ctrl-C (or SIGTERM, as Slurm sends) aborts the run cleanly, with a report; a second
    Ctrl-C quits at once."""

    def __init__(self, abort: Callable[[], None]):
        self.abort = abort
        self.count = 0
        self.saved: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.count > 1 and signum == signal.SIGINT:
            raise KeyboardInterrupt
        print(f"nodeqc: {signal.Signals(signum).name}: aborting; writing the report "
              "(Ctrl-C again to quit at once)", file=sys.stderr, flush=True)
        self.abort()

    def __enter__(self) -> "_graceful_abort":
        for s in (signal.SIGINT, signal.SIGTERM):
            self.saved[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        # Asked to stop: what is left is writing out and exiting, which a press more must not cut.
        # Ctrl-C goes straight from this handler to ignored, never back to Python's default between.
        for s, h in self.saved.items():
            if not (self.count and s == signal.SIGINT):
                signal.signal(s, h)
        if self.count:
            ignore_interrupts()


SCREENSHOT_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")  # formats Qt writes without plugins


def gui(args: argparse.Namespace, argv: list[str]) -> int:
    if args.screenshot:  # before the run, not after it
        check_output_file(Path(args.screenshot), "--screenshot", SCREENSHOT_SUFFIXES)
    try:
        import PySide6  # noqa: F401
        import pyqtgraph  # noqa: F401
    except ImportError as e:
        from importlib.util import find_spec

        if find_spec("PySide6") is None or find_spec("pyqtgraph") is None:
            raise UsageError("the desktop app needs the GUI extra: pip install 'nodeqc[gui]'; "
                             "for scripts use: nodeqc --headless --profile NAME") from None
        # PySide6 is there but Qt cannot load: a system library is missing (libEGL, libxkbcommon, ...).
        raise UsageError(f"Qt cannot start: {e} (install the system's Qt/X11 libraries, e.g. libegl1 "
                         "libxkbcommon0 libgl1); for scripts use: nodeqc --headless --profile NAME") from None
    from nodeqc.gui.app import main as gui_main

    return gui_main(args, argv)
