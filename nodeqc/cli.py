"""The command line: `nodeqc --headless ...` for scripts, `nodeqc` for the desktop app, and the
report tools (`verify`, `show`, `profiles`, `scenarios`).

Exit codes: 0 the node passed (warnings allowed), 1 it failed qualification, 2 nodeqc could not do
its job (bad arguments or profile, unwritable output, aborted run, internal error). Bad input gets
one line on stderr naming what is wrong, never a traceback. Progress goes to stderr; the last line
of stdout is the path of the signed report.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

from nodeqc import __version__
from nodeqc.errors import UsageError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit 2, not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def _run_parser() -> _Parser:
    p = _Parser(prog="nodeqc", description="GPU node qualification and burn-in.",
                epilog="Other commands: nodeqc verify|show|profiles|scenarios|gui --help")
    p.add_argument("--version", action="version", version=f"nodeqc {__version__}")
    p.add_argument("--headless", action="store_true", help="run without the GUI (for scripts)")
    p.add_argument("--profile", metavar="NAME|PATH", help="profile name, profile file, or 'auto' (chosen from the GPUs found)")
    p.add_argument("--simulate", metavar="NAME|PATH", help="run on a simulated node: a built-in scenario "
                   "(nodeqc scenarios), a scenario file, or 'auto' (only when no NVIDIA GPU is found)")
    p.add_argument("--inject", metavar="FAULT", action="append", default=[],
                   help="fault for the simulated node, e.g. gpu3:pcie_width=8 (repeatable)")
    p.add_argument("--quick", action="store_true", help="short stress durations (the profile's quick_* settings)")
    p.add_argument("--gpus", type=int, metavar="N", help="expected GPU count (single-model profiles)")
    p.add_argument("--out", metavar="DIR", help="write the report here instead of the archive")
    p.add_argument("--operator", metavar="NAME", help="who ran the qualification (recorded)")
    p.add_argument("--ticket", metavar="ID", help="work ticket (recorded)")
    p.add_argument("--key", metavar="PEM", help="Ed25519 private key (PKCS#8 PEM) to sign with")
    p.add_argument("--sample-hz", type=float, metavar="HZ", help="telemetry samples per second")
    p.add_argument("--start", action="store_true", help="GUI: start the run at once")
    p.add_argument("--screenshot", metavar="PNG", help="GUI: save a picture of the window when the run ends, then exit")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            return COMMANDS[argv[0]](argv[1:])
        args = _run_parser().parse_args(argv)
        if args.headless:
            return headless(args, argv)
        return gui(args, argv)
    except UsageError as e:
        print(f"nodeqc: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("nodeqc: interrupted", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - never a traceback for the user; NODEQC_DEBUG shows it
        if os.environ.get("NODEQC_DEBUG"):
            traceback.print_exc()
        print(f"nodeqc: internal error: {type(e).__name__}: {e} (set NODEQC_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_USAGE


# ---------------------------------------------------------------------- the run


def prepare(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """Resolve hardware, profile and key from the arguments, or raise UsageError. Shared by the
    headless run and the GUI."""
    from nodeqc.backends import real_hardware, simulated_hardware
    from nodeqc.faults import parse_fault
    from nodeqc.keys import load_signer
    from nodeqc.profile import load_profile, suggest_profile

    faults = [parse_fault(f) for f in args.inject]
    if faults and not args.simulate:
        raise UsageError("--inject needs --simulate: faults are injected into a simulated node only")
    if args.gpus is not None and args.gpus < 1:
        raise UsageError(f"--gpus {args.gpus}: expected a positive number of GPUs")
    if args.sample_hz is not None and not 0.1 <= args.sample_hz <= 50:
        raise UsageError(f"--sample-hz {args.sample_hz:g}: expected 0.1 to 50 samples per second")
    if args.out:
        ensure_writable(Path(args.out))
    simulate = args.simulate
    if simulate == "auto":
        simulate = None if _nvidia_gpu_present() else "hgx-h100"
        if simulate:
            print(f"nodeqc: no NVIDIA GPU found: running the simulated node '{simulate}'", file=sys.stderr)
    hardware = simulated_hardware(simulate, faults) if simulate else real_hardware()
    profile_ref = args.profile or "auto"
    if profile_ref == "auto":
        profile_ref = suggest_profile(_gpu_models(hardware))
        print(f"nodeqc: profile auto: using '{profile_ref}'", file=sys.stderr)
    profile = load_profile(profile_ref)
    if args.gpus is not None:
        fixed = profile.get("gpu", "count")
        if profile.kind == "node" and fixed != args.gpus:
            raise UsageError(f"--gpus {args.gpus}: profile {profile.name} fixes the GPU count at {fixed}")
        profile = profile.with_gpu_count(args.gpus)
    signer = load_signer(args.key)
    return hardware, profile, signer


def _nvidia_gpu_present() -> bool:
    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.errors import BackendUnavailable

    nvml = NvmlBackend()
    try:
        nvml.open()
        return len(nvml.gpus()) > 0
    except BackendUnavailable:
        return False
    finally:
        nvml.close()


def _gpu_models(hardware: Any) -> list[str]:
    from nodeqc.errors import BackendUnavailable

    try:
        hardware.mgmt.open()
        return [g.name for g in hardware.mgmt.gpus()]
    except BackendUnavailable:
        return []
    finally:
        hardware.mgmt.close()


def ensure_writable(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise UsageError(f"{directory}: cannot write reports there: {e.strerror}") from None


class ProgressPrinter:
    """Renders the event stream on stderr: a line when a check starts; when it ends, a line for each
    subject that did not pass and one line for all that passed, with their key figures."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stderr
        self.pending: dict[str, list[str]] = {}
        self.held: dict[str, dict[tuple[str, str], list[Any]]] = {}  # check -> (verdict, message) -> results

    def __call__(self, event: Any) -> None:
        from nodeqc.render import passed_line, result_line, subjects_text

        kind = event.type
        if kind == "run_started":
            p = event.profile
            sim = "  ** SIMULATED **" if event.simulated else ""
            self._line(f"nodeqc {__version__}: node {event.node.get('hostname')}, profile {p['name']}, "
                       f"{len(event.gpus)} GPU(s){sim}")
            self._line(f"journal: {event.files['journal']}")
        elif kind == "check_started":
            self.pending[event.name] = list(event.subjects)
            self.held[event.name] = {}
            self._line(f"[{event.t:8.1f}s] ..    {event.name:<24} {subjects_text(event.subjects)}")
        elif kind == "check_finished":
            r = event.result
            waiting = self.pending.get(r.name, [])
            if r.subject in waiting:
                waiting.remove(r.subject)
            held = self.held.get(r.name)
            if held is not None and r.verdict.value in ("pass", "skip"):
                group = ("pass", "") if r.verdict.value == "pass" else ("skip", r.message)
                held.setdefault(group, []).append(r)
            else:
                self._line(result_line(r, event.t))
            if not waiting and held:
                for group in self.held.pop(r.name).values():
                    self._line(passed_line(group, event.t))
        elif kind == "notice":
            self._line(f"nodeqc: {event.level}: {event.text}")
        elif kind == "run_finished":
            self._summary(event)

    def _summary(self, event: Any) -> None:
        c = event.counts
        state = "ABORTED (not qualified)" if event.status == "aborted" else event.verdict
        self._line(f"RESULT: {state}  ({c['pass']} pass, {c['warn']} warn, {c['fail']} fail, "
                   f"{c['skip']} skip, {c['error']} error)")
        for f in event.failed[:20]:
            self._line(f"  failed: {f}")
        if len(event.failed) > 20:
            self._line(f"  ... and {len(event.failed) - 20} more (nodeqc show REPORT)")
        self._line(f"report: {event.report_path}")

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


def headless(args: argparse.Namespace, argv: list[str]) -> int:
    from nodeqc.runner import RunOptions, Runner

    hardware, profile, signer = prepare(args)
    options = RunOptions(profile=profile, signer=signer, out_dir=Path(args.out) if args.out else None,
                         quick=args.quick, operator=args.operator, ticket=args.ticket,
                         sample_hz=args.sample_hz, command=["nodeqc", *argv])
    runner = Runner(options, hardware, ProgressPrinter())
    with _graceful_abort(runner.abort):
        outcome = runner.run()
    print(outcome.report_path, flush=True)
    return outcome.exit_code


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
        for s, h in self.saved.items():
            signal.signal(s, h)


def gui(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        import PySide6  # noqa: F401
        import pyqtgraph  # noqa: F401
    except ImportError:
        raise UsageError("the desktop app needs the GUI extra: pip install 'nodeqc[gui]'; "
                         "for scripts use: nodeqc --headless --profile NAME") from None
    from nodeqc.gui.app import main as gui_main

    return gui_main(args, argv)


# ---------------------------------------------------------------------- report tools


def cmd_verify(argv: list[str]) -> int:
    from nodeqc.keys import trusted_keys
    from nodeqc.render import banner
    from nodeqc.report import VerificationError, verify_file

    p = _Parser(prog="nodeqc verify", description="Check a report's signature; exit 0 only if it is "
                "intact and signed by a trusted key.")
    p.add_argument("report", help="the .report.json file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable); "
                   "default: your own key and those in the trusted-keys directory")
    args = p.parse_args(argv)
    try:
        verified = verify_file(Path(args.report), trusted_keys(args.pubkey))
    except VerificationError as e:
        print(f"nodeqc verify: {args.report}: NOT VERIFIED: {e}", file=sys.stderr)
        return 1
    pred = verified.predicate
    node = pred.get("node", {})
    print(f"verified: {banner(pred)}  node {node.get('hostname')} (serial {node.get('system_serial')})  "
          f"profile {pred.get('profile', {}).get('name')}  finished {pred.get('finished_at')}  "
          f"key {verified.keyid[:16]} ({verified.key_source})")
    return 0


def cmd_show(argv: list[str]) -> int:
    from nodeqc.journal import read_journal
    from nodeqc.keys import trusted_keys
    from nodeqc.render import render_journal, render_report
    from nodeqc.report import VerificationError, decode_statement, read_envelope, verify_envelope

    p = _Parser(prog="nodeqc show", description="Show a report (or the journal of a run that did not finish).")
    p.add_argument("report", help="a .report.json file, or a .journal.jsonl file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable)")
    args = p.parse_args(argv)
    path = Path(args.report)
    if path.name.endswith(".jsonl"):
        if not path.is_file():
            raise UsageError(f"{path}: no such journal")
        print(render_journal(read_journal(path)))
        return 0
    try:
        envelope = read_envelope(path)
        stmt = decode_statement(envelope)
    except VerificationError as e:
        raise UsageError(f"{path}: not a readable nodeqc report: {e}") from None
    try:
        v = verify_envelope(envelope, trusted_keys(args.pubkey))
        trust = f"signature: verified (key {v.keyid[:16]}, {v.key_source})"
    except VerificationError as e:
        trust = f"signature: NOT VERIFIED ({e}): do not rely on this report"
    print(render_report(stmt["predicate"], trust))
    return 0


def cmd_profiles(argv: list[str]) -> int:
    from nodeqc.profile import SCHEMA, list_profiles, load_profile

    p = _Parser(prog="nodeqc profiles", description="List the profiles, or show one resolved.")
    p.add_argument("name", nargs="?", help="show this profile's resolved settings and limits")
    args = p.parse_args(argv)
    if args.name:
        prof = load_profile(args.name)
        print(f"{prof.name}: {prof.description}\n  file {prof.path}\n  extends {' -> '.join(prof.chain)}\n"
              f"  sha256 {prof.digest}")
        for section in ("gpu", "host", "run"):
            print(f"[{section}]")
            for key in SCHEMA[section]:
                if key not in prof.section(section):
                    continue
                t = prof.threshold(section, key) if key.startswith(("min_", "max_")) else None
                shown = t.describe() if t else prof.get(section, key)
                print(f"  {key:<22} {shown}")
        return 0
    for prof in list_profiles():
        count = prof.get("gpu", "count")
        gpus = f"{count} GPUs" if count else "any count"
        print(f"{prof.name:<10} {prof.kind:<4} {gpus:<10} {prof.description}")
    return 0


def cmd_scenarios(argv: list[str]) -> int:
    from nodeqc.backends.simulated import list_scenarios, load_scenario
    from nodeqc.faults import GPU_FAULTS, NIC_FAULTS

    p = _Parser(prog="nodeqc scenarios", description="List the built-in simulated nodes and the faults they take.")
    p.parse_args(argv)
    for name in list_scenarios():
        s = load_scenario(name)
        print(f"{name:<10} {s.gpu_count} x {s.gpu_model.name:<24} {s.data.get('description', '')}")
    print("\nfaults (--inject gpuN:FAULT[=VALUE] / nicN:FAULT[=VALUE]):")
    for target, vocab in (("gpu", GPU_FAULTS), ("nic", NIC_FAULTS)):
        for name, (parser, text) in vocab.items():
            print(f"  {target}N:{name}{'=VALUE' if parser else '':<7} {text}")
    return 0


def cmd_gui(argv: list[str]) -> int:
    return gui(_run_parser().parse_args(argv), ["gui", *argv])


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "verify": cmd_verify,
    "show": cmd_show,
    "profiles": cmd_profiles,
    "scenarios": cmd_scenarios,
    "gui": cmd_gui,
}
