"""The command line: `nodeqc --headless ...` for scripts, `nodeqc` for the desktop app, and the
report tools (`verify`, `show`, `profiles`, `scenarios`).

Exit codes: 0 the node passed (warnings allowed), 1 it failed qualification, 2 nodeqc could not do
its job (bad arguments or profile, unwritable output, aborted run, internal error). Bad input gets
one line on stderr naming what is wrong, never a traceback. Progress goes to stderr; the last line
of stdout is the path of the signed report.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import re
import signal
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

from nodeqc import __version__
from nodeqc.cli.archive import archive_parser, query
from nodeqc.core.arguments import Parser
from nodeqc.core.errors import UsageError
from nodeqc.core.text import clean

EXIT_USAGE = 2


def _run_parser() -> Parser:
    p = Parser(prog="nodeqc", description="GPU node qualification and burn-in.",
               epilog="Other commands: nodeqc verify|show|history|compare|export|baseline|fleet|profiles|scenarios|gui --help")
    p.add_argument("--version", action="version", version=f"nodeqc {__version__}")
    p.add_argument("--headless", action="store_true", help="run without the GUI (for scripts)")
    p.add_argument("--profile", metavar="NAME|PATH", help="profile name, profile file, or 'auto' (chosen from the GPUs found)")
    p.add_argument("--simulate", metavar="NAME|PATH", help="run on a simulated node: a built-in scenario "
                   "(nodeqc scenarios), a scenario file, or 'auto' (only when no NVIDIA GPU is found)")
    p.add_argument("--replay", metavar="CAPTURE", help="run on a captured machine (nodeqc capture): its NVML "
                   "answers replayed, a simulated compute twin")
    p.add_argument("--inject", metavar="FAULT", action="append", default=[],
                   help="fault for the simulated node, e.g. gpu3:pcie_width=8 (repeatable)")
    p.add_argument("--quick", action="store_true", help="short stress durations (the profile's quick_* settings)")
    p.add_argument("--burn-in", metavar="DURATION", type=_duration, help="after the checks, burn in for this long "
                   "(e.g. 8h, 90m, 1h30m; each number with its unit): matmul, memory and host-link traffic while every health check watches")
    p.add_argument("--gpus", type=int, metavar="N", help="expected GPU count (single-model profiles)")
    p.add_argument("--out", metavar="DIR", help="write the report here instead of the archive")
    p.add_argument("--operator", metavar="NAME", help="who ran the qualification (recorded)")
    p.add_argument("--ticket", metavar="ID", help="work ticket (recorded)")
    p.add_argument("--key", metavar="PEM", help="Ed25519 private key (PKCS#8 PEM) to sign with")
    p.add_argument("--sample-hz", type=_positive_float, metavar="HZ", help="telemetry samples per second")
    p.add_argument("--archive", metavar="DIR", help="the report archive (default: $NODEQC_ARCHIVE or the per-user one)")
    p.add_argument("--retest", metavar="REPORT", nargs="?", const="", help="re-test after a repair: record the "
                   "previous report (REPORT, else this node's newest in the archive) and compare at the end; "
                   "done anyway when the archive holds an earlier report of this node")
    p.add_argument("--repair", metavar="TEXT", help="what was repaired since the re-tested report (see --retest), "
                   "e.g. \"reseated GPU 3 riser\": recorded in the signed report, which says FIXED or STILL "
                   "FAILING for each earlier failure")
    p.add_argument("--only", metavar="CHECKS", action="append", help="run only these checks or families, e.g. "
                   "health.pcie_link,host (the report is partial: not a qualification)")
    p.add_argument("--skip", metavar="CHECKS", action="append", help="leave out these checks or families, e.g. "
                   "stress (the report is partial: not a qualification)")
    p.add_argument("--prometheus-textfile", metavar="PATH", help="also write the verdict and key figures to "
                   "PATH (*.prom) for node_exporter's textfile collector")
    p.add_argument("--nic-peer", metavar="[NIC=]HOST[:PORT]", action="append", default=[],
                   help="peer for NIC traffic, running `iperf3 -s` (and `ib_write_bw -d DEV` for RDMA); "
                        "NIC=HOST for one NIC (repeatable; replaces the profile's [nic] peers)")
    p.add_argument("--baseline", metavar="FILE", help="golden baseline (nodeqc baseline create) the node must "
                   "match: firmware, drivers, settings, PCIe/NUMA topology, ACS (replaces the profile's baseline)")
    p.add_argument("--start", action="store_true", help="GUI: start the run at once")
    p.add_argument("--screenshot", metavar="PNG", help="GUI: save a picture of the window when the run ends, then exit")
    return p


DURATION_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_DURATION = re.compile("".join(rf"(?:(?P<{u}>\d+(?:\.\d+)?){u})?" for u, _ in DURATION_UNITS))
MAX_DURATION_S = 30 * 86400  # a month: longer is a typo, not a burn-in
DURATION_GRAMMAR = "a duration like 90s, 15m, 1h30m, 2h or 1d12h (units d, h, m, s, largest first, each number with its unit)"


def _duration(text: str) -> float:
    """'8h', '90m', '1h30m', '45s', '1d' -> seconds. Every number carries its unit: '1h30' is refused,
    never taken as 1 h 30 s."""
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"expected a duration above zero, got {text!r}")
    m = _DURATION.fullmatch(text.strip().lower())
    if not text.strip() or not m or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"expected {DURATION_GRAMMAR}, got {text!r}")
    seconds = sum(float(m[u]) * factor for u, factor in DURATION_UNITS if m[u])
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration above zero, got {text!r}")
    if seconds > MAX_DURATION_S:
        raise argparse.ArgumentTypeError(f"expected a duration of at most 30d, got {text!r}")
    return seconds


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number above zero, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above zero, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above zero, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number above zero, got {text!r}")
    return value


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
        print(f"nodeqc: {clean(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Quitting now: a further Ctrl-C must not interrupt the exit's own clean-up (a traceback from
        # an atexit callback, and an exit status other than 2).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("nodeqc: interrupted", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `nodeqc history | head`: the reader has gone, which is no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # noqa: BLE001 - never a traceback for the user; NODEQC_DEBUG shows it
        if os.environ.get("NODEQC_DEBUG"):
            traceback.print_exc()
        print(f"nodeqc: internal error: {type(e).__name__}: {clean(e)} (set NODEQC_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_USAGE


# ---------------------------------------------------------------------- the run


def check_output_file(path: Path, option: str, suffixes: tuple[str, ...] = ()) -> None:
    """Before any work: the file named by an option can be written where it is asked for."""
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a directory; give a file name")
    if suffixes and path.suffix.lower() not in suffixes:
        raise UsageError(f"{option} {path}: expected a {' or '.join(suffixes)} file")
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"{option} {path}: no such directory {directory}")
    try:  # tried, not asked (os.access): root, read-only mounts and /proc answer it wrongly
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write in {directory}: {e.strerror}") from None


class ProgressPrinter:
    """Renders the event stream on stderr: a line when a check starts; when it ends, a line for each
    subject that did not pass and one line for all that passed, with their key figures."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stderr
        self.pending: dict[str, list[str]] = {}
        self.held: dict[str, dict[tuple[str, str], list[Any]]] = {}  # check -> (verdict, message) -> results

    def __call__(self, event: Any) -> None:
        from nodeqc.core.text import subjects_text
        from nodeqc.report.render import passed_line, result_line

        kind = event.type
        if kind == "run_started":
            p = event.profile
            sim = "  ** SIMULATED **" if event.simulated else ""
            sku = f" (SKU {p['sku']})" if p.get("sku") else ""
            self._line(f"nodeqc {__version__}: node {event.node.get('hostname')}, profile {p['name']}{sku}, "
                       f"{len(event.gpus)} GPU(s){sim}")
            for notice in p.get("notices", []):  # how the profile was resolved for these GPUs
                self._line(f"nodeqc: {notice}")
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
                group = ("pass", r.key or "") if r.verdict.value == "pass" else ("skip", r.message)
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
        """The answer, rendered as every face renders it (nodeqc.report.answer): the headline with what did
        not run, then each failing part with its identity, its findings and what to do."""
        from nodeqc.report.answer import SHOWN_PARTS, answer_lines

        first, *rest = answer_lines(event.answer, limit=SHOWN_PARTS)
        self._line(f"RESULT: {first}")
        for line in rest:
            self._line(line)
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
    flow.after_run(outcome.report_path)
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
        if self.count:  # asked to stop: what is left is writing out and exiting, which a press more must not cut
            signal.signal(signal.SIGINT, signal.SIG_IGN)


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


# ---------------------------------------------------------------------- report tools


def cmd_verify(argv: list[str]) -> int:
    from nodeqc.report.envelope import VerificationError, verify_file
    from nodeqc.report.keys import trusted_keys
    from nodeqc.report.render import banner

    p = Parser(prog="nodeqc verify", description="Check a report's signature; exit 0 only if it is "
               "intact and signed by a trusted key.")
    p.add_argument("report", help="the .report.json file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable); "
                   "default: your own key and those in the trusted-keys directory")
    p.add_argument("--report-only", action="store_true", help="verify the signed report alone, without "
                   "the journal and telemetry files it names (e.g. a report copied on its own)")
    p.add_argument("--fabric-nodes", action="store_true", help="a fabric report: print each node's verdict "
                   "('NODE pass|fail|error', one a line) once verified, and only from a complete run (exit 1 "
                   "otherwise); nodeqc-retest --fabric returns nodes to service from these lines alone")
    args = p.parse_args(argv)
    try:
        verified = verify_file(Path(args.report), trusted_keys(args.pubkey))
        if verified.missing and not args.report_only:
            raise VerificationError(f"evidence missing: {', '.join(f'{m} is missing' for m in verified.missing)} "
                                    "(not beside the report; --report-only verifies the report alone)")
    except VerificationError as e:
        print(clean(f"nodeqc verify: {args.report}: NOT VERIFIED: {e}"), file=sys.stderr)
        return 1
    pred = verified.predicate
    if args.fabric_nodes:
        return _fabric_nodes(args.report, pred)
    try:
        node = pred.get("node") or {}
        line = (f"verified: {banner(pred)}  node {node.get('hostname')} (serial {node.get('system_serial')})  "
                f"profile {(pred.get('profile') or {}).get('name')}  finished {pred.get('finished_at')}  "
                f"key {verified.keyid[:16]} ({verified.key_source})")
    except (AttributeError, TypeError) as e:
        print(clean(f"nodeqc verify: {args.report}: signed, but not in the form nodeqc writes ({e})"),
              file=sys.stderr)
        return 1
    print(clean(line))
    print(clean(f"evidence: {_evidence_text(verified)}"))
    return 0


def _fabric_nodes(report: str, pred: Any) -> int:
    """`verify --fabric-nodes`: each node's verdict from a verified, complete fabric report. An
    aborted run, or a fabric report that is not in the form nodeqc writes, gives none (exit 1)."""
    why = None
    if not isinstance(pred, dict) or pred.get("kind") != "fabric":
        why = "not a fabric report"
    elif pred.get("status") != "complete" or pred.get("partial"):
        why = f"the fabric run is {pred.get('status')}, not complete: no node's verdict stands"
    nodes = pred.get("nodes") if isinstance(pred, dict) else None
    if why is None and not (isinstance(nodes, list) and nodes and all(
            isinstance(n, dict) and isinstance(n.get("name"), str) and n.get("verdict") in ("pass", "fail", "error")
            for n in nodes)):
        why = "signed, but its nodes are not in the form nodeqc writes"
    if why:
        print(clean(f"nodeqc verify: {report}: {why}"), file=sys.stderr)
        return 1
    for n in nodes:
        print(clean(f"{n['name']} {n['verdict']}"))
    return 0


def _evidence_text(verified: Any) -> str:
    """What `verify` and `show` say about the journal and telemetry files the report names."""
    said = [f"{c.split()[0]} ok" for c in verified.checked] + [f"{m} missing" for m in verified.missing]
    return ", ".join(said) or "none named by the report"


def cmd_show(argv: list[str]) -> int:
    from nodeqc.report.envelope import VerificationError, decode_statement, read_envelope, read_report_bytes, verify_file
    from nodeqc.report.journal import MAX_JOURNAL_BYTES, parse_journal
    from nodeqc.report.keys import trusted_keys
    from nodeqc.report.render import render_journal, render_report

    p = Parser(prog="nodeqc show", description="Show a report (or the journal or telemetry of a run that did not finish).")
    p.add_argument("report", help="a .report.json file, a .journal.jsonl file, or a .telemetry.csv.gz file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable)")
    p.add_argument("--unverified", action="store_true", help="show a report that does not verify anyway "
                   "(marked NOT VERIFIED); without it such a report is refused with exit 1")
    p.add_argument("--pdf", metavar="FILE", help="also write the printable summary of a report here, as the "
                   "app's Export PDF does (needs the GUI extra, PySide6; no display needed)")
    args = p.parse_args(argv)
    path = Path(args.report)
    if args.pdf:
        check_output_file(Path(args.pdf), "--pdf", (".pdf",))
        if path.name.endswith((".csv.gz", ".jsonl")):
            raise UsageError(f"--pdf: {path}: a printable summary is made of a report (.report.json), "
                             "not of a journal or telemetry")
    if path.name.endswith(".csv.gz"):
        from nodeqc.work.telemetry import describe_series

        if not path.is_file():
            raise UsageError(f"{path}: no such telemetry file")
        from nodeqc.core.text import clean_lines

        print(clean_lines(describe_series(path)))
        return 0
    if path.name.endswith(".jsonl"):
        try:
            records = parse_journal(read_report_bytes(path, MAX_JOURNAL_BYTES).decode("utf-8", errors="replace"))
        except VerificationError as e:
            print(clean(f"nodeqc show: {path}: not a readable journal: {e}"), file=sys.stderr)
            return 1
        try:
            print(render_journal(records))
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            print(clean(f"nodeqc show: {path}: not a journal nodeqc writes ({type(e).__name__}: {e})"), file=sys.stderr)
            return 1
        return 0
    try:
        verified = verify_file(path, trusted_keys(args.pubkey))
        is_verified, stmt = True, verified.statement
        trust = (f"signature: verified (key {verified.keyid[:16]}, {verified.key_source}); "
                 f"evidence: {_evidence_text(verified)}")
    except VerificationError as e:
        if not args.unverified:
            print(clean(f"nodeqc show: {path}: NOT VERIFIED: {e} (--unverified shows it anyway)"), file=sys.stderr)
            return 1
        try:
            stmt = decode_statement(read_envelope(path))
        except VerificationError as e2:
            print(clean(f"nodeqc show: {path}: not a readable nodeqc report: {e2}"), file=sys.stderr)
            return 1
        is_verified, trust = False, f"signature: NOT VERIFIED ({e}): do not rely on this report"
    try:
        text = render_report(stmt["predicate"], trust)
    except (AttributeError, TypeError, KeyError, ValueError) as e:
        print(clean(f"nodeqc show: {path}: not in the form nodeqc writes ({type(e).__name__}: {e})"),
              file=sys.stderr)
        return 1
    print(text)
    if args.pdf:
        from nodeqc.report.printable import LoadedReport, export_pdf

        export_pdf(LoadedReport(path, stmt["predicate"], is_verified, trust), Path(args.pdf))
        print(clean(f"nodeqc show: printable summary written: {args.pdf}"), file=sys.stderr)
    return 0


def cmd_profiles(argv: list[str]) -> int:
    from nodeqc.spec.profile import SCHEMA, list_profiles, load_profile

    p = Parser(prog="nodeqc profiles", description="List the profiles, or show one resolved.")
    p.add_argument("name", nargs="?", help="show this profile's resolved settings and limits")
    args = p.parse_args(argv)
    if args.name:
        prof = load_profile(args.name)
        print(f"{prof.name}: {prof.description}\n  file {prof.path}\n  extends {' -> '.join(prof.chain)}\n"
              f"  sha256 {prof.digest}")
        sku = prof.sku
        if sku is not None:
            print(f"  sku {sku.key}: {sku.name}, PCI {', '.join(f'0x{i:04x}' for i in sku.pci_device_ids)} (floors: nodeqc/core/skus.py)")
            print(f"  healthy figures: {_provenance(sku)}")
        elif prof.data.get("skus"):
            print(f"  skus {', '.join(prof.data['skus'])}: the floors of the slowest until the GPUs are known")
            from nodeqc.core.skus import BY_KEY
            for key in prof.data["skus"]:
                if key in BY_KEY:
                    print(f"    {key} healthy figures: {_provenance(BY_KEY[key])}")
        for section in ("gpu", "host", "nic", "run"):
            print(f"[{section}]")
            for key in SCHEMA[section]:
                if key not in prof.section(section):
                    continue
                # Only limits have a warning band: a version floor (min_driver) is shown as written.
                t = prof.threshold(section, key) if SCHEMA[section][key].kind == "threshold" else None
                shown = t.describe() if t else prof.get(section, key)
                print(f"  {key:<22} {shown}")
        return 0
    for prof in list_profiles():
        count = prof.get("gpu", "count")
        gpus = f"{count} GPUs" if count else "any count"
        print(f"{prof.name:<10} {prof.kind:<4} {gpus:<10} {prof.description}")
    _print_skus()
    return 0


def _print_skus() -> None:
    """The SKU table (nodeqc/core/skus.py): how each SKU is recognised, its healthy figures, the floors
    the calibration rule makes of them, and where the figures come from."""
    from nodeqc.core.skus import SKUS
    from nodeqc.spec import calibration

    print(f"\nSKUs, each a profile by its key; floors warn below {calibration.WARN_FRACTION:.0%} and fail below "
          f"{calibration.FAIL_FRACTION:.0%} of the healthy figure (TFLOP/s, GB/s):")
    for sku in SKUS:
        ids = ", ".join(f"0x{i:04x}" for i in sku.pci_device_ids)
        print(f"{sku.key:<16} PCI {ids:<14} {sku.name}, {sku.memory_gib:g} GiB, {sku.default_power_w:g} W"
              f" ({'measured' if sku.measured else 'not measured'})")
        figures = {**sku.healthy_tflops, "hbm": sku.healthy_hbm_gbps, "h2d": sku.healthy_h2d_gbps,
                   "d2h": sku.healthy_d2h_gbps}
        print("  healthy " + ", ".join(f"{k} {v:g}" for k, v in figures.items()))
        print("  fail <  " + ", ".join(f"{k} {calibration.floor(v)['fail']:g}" for k, v in figures.items()))
        print(f"  source: {sku.source}")
        if sku.estimated:
            print(f"  {_provenance(sku)}")


def _provenance(sku) -> str:
    """Which of a SKU's healthy figures were measured (or published) and which are estimates: a floor
    made of an estimate may be wrong by more than its warning band."""
    figures = [*sku.healthy_tflops, "hbm"]
    known = [f for f in figures if f not in sku.estimated]
    guessed = [f for f in figures if f in sku.estimated]
    parts = [f"{'measured' if sku.measured else 'published'}: {', '.join(known)}"] if known else []
    if guessed:
        parts.append(f"estimates (datasheet-derived, not measured): {', '.join(guessed)}")
    return "; ".join(parts)


def cmd_scenarios(argv: list[str]) -> int:
    from nodeqc.backends.sim.faults import GPU_FAULTS, HOST_FAULTS, NIC_FAULTS
    from nodeqc.backends.sim.node import list_scenarios, load_scenario

    p = Parser(prog="nodeqc scenarios", description="List the built-in simulated nodes and the faults they take.")
    p.parse_args(argv)
    for name in list_scenarios():
        s = load_scenario(name)
        print(f"{name:<10} {s.gpu_count} x {s.gpu_model.name:<24} {s.data.get('description', '')}")
    print("any SKU's key (nodeqc profiles): one GPU of that SKU in a cloud VM (16 cores, 125.9 GiB); "
          "h100-sxm5-80gb and h200-sxm-141gb as measured (no BMC, EDAC or AER)")
    print("\nfaults (--inject gpuN:FAULT[=VALUE] / nicN:FAULT[=VALUE] / host:FAULT[=VALUE]):")
    for target, vocab in (("gpu", GPU_FAULTS), ("nic", NIC_FAULTS), ("host", HOST_FAULTS)):
        for name, (parser, text) in vocab.items():
            print(f"  {target}{'' if target == 'host' else 'N'}:{name}{'=VALUE' if parser else '':<7} {text}")
    return 0


def cmd_capture(argv: list[str]) -> int:
    from nodeqc.backends.host import LinuxHost
    from nodeqc.core.errors import BackendUnavailable
    from nodeqc.run.capture import capture, write_capture
    from nodeqc.run.flow import ensure_writable

    p = Parser(prog="nodeqc capture", description="Record this machine's NVML answers (inventory, counters, "
               "telemetry under load) for replay with --replay.")
    p.add_argument("out", help="the capture file to write (JSON)")
    p.add_argument("--seconds", type=_positive_float, default=10.0, help="seconds of telemetry (default 10)")
    p.add_argument("--hz", type=_positive_float, default=4.0, help="telemetry samples per second (default 4)")
    p.add_argument("--no-load", action="store_true", help="do not load the GPUs while sampling")
    args = p.parse_args(argv)
    out = Path(args.out)
    ensure_writable(out.parent if str(out.parent) else Path("."))
    try:
        data = capture(args.seconds, args.hz, not args.no_load, LinuxHost().info())
    except BackendUnavailable as e:
        raise UsageError(f"capture: {e}") from None
    write_capture(out, data)
    print(f"nodeqc: captured {len(data['devices'])} GPU(s); load: {data['load']}", file=sys.stderr)
    print(out)

# ---------------------------------------------------------------------- the archive


def cmd_history(argv: list[str]) -> int:
    p = archive_parser("nodeqc history", "List the verified reports in the archive, newest first. Only a "
                        "complete, full run that passed is a qualification; partial runs say so.")
    p.add_argument("--limit", type=_positive_int, metavar="N", help="at most N reports")
    p.add_argument("--expired", action="store_true", help="only each node's newest qualification whose "
                   "valid_until (the profile's valid_days) has passed")
    p.add_argument("--part", metavar="SERIAL", help="one part's story instead: a GPU by its serial, a NIC by its "
                   "MAC or PCI address; each report that saw it, what failed, what was repaired and whether it held")
    args = p.parse_args(argv)
    if args.part:
        return _part_history(args)
    limit = args.limit
    if args.expired:  # expiry is judged on each node's newest qualification: limit after that
        args.limit = None
    args.fabrics = not args.expired  # a node's history includes the fabric runs it took part in
    entries = query(args)
    if args.expired:
        from nodeqc.archive.fleet import expired_entries

        entries = expired_entries(entries)[:limit] if limit else expired_entries(entries)
    if entries:
        print(f"{'FINISHED':<20}  {'NODE':<18} {'HOST':<16} {'RESULT':<20} {'PROFILE':<10} {'FAILED':<28} REPORT")
    for e in entries:
        failed = (e.failed[0] + (f" +{len(e.failed) - 1}" if len(e.failed) > 1 else "")) if e.failed else "-"
        host, result = e.hostname, e.result
        if e.fabric:  # many nodes qualified together: with --node, that node's own verdict there
            host, result = f"fabric of {len(e.members)}", f"FABRIC {e.result}"
            found = e.member(args.node) if args.node else None
            if found:
                name, facts = found
                aborted = " (aborted)" if e.status == "aborted" else ""
                result = f"FABRIC {str(facts.get('verdict')).upper()}{aborted}" + (" SIM" if e.simulated else "")
                failed = f"{facts.get('code')} as {name}" if facts.get("code") else f"as {name}"
        print(clean(f"{e.finished_at:<20}  {e.node:<18} {host:<16} {result:<20} {e.profile:<10} "
                     f"{failed:<28} {e.path}"))
    return 0


def _part_history(args: argparse.Namespace) -> int:
    from nodeqc.archive.parts import story
    from nodeqc.archive.store import Archive
    from nodeqc.report.keys import trusted_keys

    if args.archive and not Path(args.archive).is_dir():
        raise UsageError(f"--archive {args.archive}: no such directory")
    archive = Archive(args.archive, trusted_keys(args.pubkey))
    chapters = story(archive, args.part)
    archive.close()
    if not chapters:
        print(clean(f"nodeqc: no verified report in {archive.root} saw a part {args.part}"), file=sys.stderr)
        return 0
    print(clean(f"part {chapters[-1].identity}: {len(chapters)} report(s), oldest first"))
    for c in chapters:
        print(clean("  " + c.line()))
    return 0


def cmd_compare(argv: list[str]) -> int:
    from nodeqc.report.compare import compare
    from nodeqc.report.envelope import VerificationError, decode_statement, read_envelope, verify_file
    from nodeqc.report.keys import trusted_keys

    p = Parser(prog="nodeqc compare", description="Compare two reports of a node, check by check and GPU by "
               "GPU; exit 1 when NEW regressed, 0 when it did not.")
    p.add_argument("old", help="the earlier .report.json")
    p.add_argument("new", help="the later .report.json")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable)")
    p.add_argument("--unverified", action="store_true", help="compare reports that do not verify anyway "
                   "(with a warning); without it such a report is refused with exit 2")
    args = p.parse_args(argv)
    trusted = trusted_keys(args.pubkey)
    predicates = []
    for path in (Path(args.old), Path(args.new)):
        try:
            predicates.append(verify_file(path, trusted).predicate)
            continue
        except VerificationError as e:
            if not args.unverified:
                raise UsageError(f"{path}: NOT VERIFIED: {e} (--unverified compares it anyway)") from None
            print(clean(f"nodeqc: warning: {path}: NOT VERIFIED ({e}); compared anyway"), file=sys.stderr)
        try:
            predicates.append(decode_statement(read_envelope(path))["predicate"])
        except VerificationError as e:
            raise UsageError(f"{path}: not a readable nodeqc report: {e}") from None
    result = compare(*predicates)
    print("\n".join(result.lines(args.old, args.new)))
    return 1 if result.regressed else 0


EXPORT_FIELDS = ("report", "report_sha256", "node", "hostname", "finished_at", "report_verdict", "status",
                 "partial", "simulated", "profile", "check", "subject", "verdict", "code", "key", "value",
                 "unit", "message")


def cmd_export(argv: list[str]) -> int:
    import json

    from nodeqc.archive.store import NotVerified, iter_checks
    from nodeqc.core.text import clean, csv_writer

    p = archive_parser("nodeqc export", "Write one row per report and check, for spreadsheets and pandas.")
    p.add_argument("--format", default="csv", type=str.lower, choices=("csv", "jsonl"), metavar="csv|jsonl",
                   help="csv (default) or jsonl (one JSON object a line)")
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    args = p.parse_args(argv)
    if args.output:
        check_output_file(Path(args.output), "--output")
    # A file is written whole at the end (nodeqc.core.safefile: never through a planted link).
    out = io.StringIO() if args.output else sys.stdout
    entries = query(args)
    writer = csv_writer(out, EXPORT_FIELDS) if args.format == "csv" else None
    if writer:
        writer.writeheader()
    to_terminal = out.isatty()  # a file or a pipe gets the data as it is; a terminal, escaped
    for e in entries:
        try:
            checks = list(iter_checks(e))
        except NotVerified as error:
            print(clean(f"nodeqc: warning: NOT VERIFIED: {e.path}: {error} (not exported)"), file=sys.stderr)
            continue
        base = {"report": str(e.path), "report_sha256": e.sha256, "node": e.node, "hostname": e.hostname,
                "finished_at": e.finished_at, "report_verdict": e.verdict, "status": e.status,
                "partial": e.partial, "simulated": e.simulated, "profile": e.profile}
        for c in checks or [{}]:  # a report without results still has its row
            figure = (c.get("values") or {}).get(c.get("key") or "", {})
            row = {**base, "check": c.get("name"), "subject": c.get("subject"), "verdict": c.get("verdict"),
                   "code": c.get("code"), "key": c.get("key"), "value": figure.get("value"),
                   "unit": figure.get("unit"), "message": c.get("message")}
            if writer:
                writer.writerow({k: clean(v) if to_terminal and isinstance(v, str) else v for k, v in row.items()})
            else:  # ASCII JSON: the data intact, and nothing a terminal would act on
                out.write(json.dumps(row) + "\n")
    if out is not sys.stdout:
        from nodeqc.core.safefile import write_atomic

        write_atomic(Path(args.output), out.getvalue().encode())
    return 0


def cmd_baseline(argv: list[str]) -> int:
    from nodeqc.cli.baseline import main as baseline_main

    return baseline_main(argv)


def cmd_fleet(argv: list[str]) -> int:
    from nodeqc.cli.fleet import main as fleet_main

    return fleet_main(argv)


def cmd_fabric(argv: list[str]) -> int:
    from nodeqc.fabric.cli import main as fabric_main  # many nodes together: its own parser and module

    return fabric_main(argv)


def cmd_gui(argv: list[str]) -> int:
    return gui(_run_parser().parse_args(argv), ["gui", *argv])


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "verify": cmd_verify,
    "show": cmd_show,
    "profiles": cmd_profiles,
    "scenarios": cmd_scenarios,
    "capture": cmd_capture,

    "history": cmd_history,
    "compare": cmd_compare,
    "export": cmd_export,
    "baseline": cmd_baseline,
    "fleet": cmd_fleet,
    "gui": cmd_gui,
    "fabric": cmd_fabric,
}
