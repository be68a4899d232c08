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
from nodeqc.errors import UsageError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit 2, not a usage dump."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # A value starting with a minus and a digit is a value (`--burn-in -1h`, `--limit -3`), to be
        # refused by its own check, not an unknown option ("expected one argument"). Our options all
        # start with letters, so nothing is lost.
        self._negative_number_matcher = re.compile(r"^-\d")

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def _run_parser() -> _Parser:
    p = _Parser(prog="nodeqc", description="GPU node qualification and burn-in.",
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
        print(f"nodeqc: {_clean(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("nodeqc: interrupted", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `nodeqc history | head`: the reader has gone, which is no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # noqa: BLE001 - never a traceback for the user; NODEQC_DEBUG shows it
        if os.environ.get("NODEQC_DEBUG"):
            traceback.print_exc()
        print(f"nodeqc: internal error: {type(e).__name__}: {_clean(e)} (set NODEQC_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_USAGE


def _clean(text: Any) -> str:
    """Text that may come from a report or a file name, safe for the terminal (nodeqc.render)."""
    from nodeqc.render import clean

    return clean(text)


# ---------------------------------------------------------------------- the run


def prepare(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """Resolve hardware, profile and key from the arguments, or raise UsageError. Shared by the
    headless run and the GUI."""
    from nodeqc.backends import real_hardware, replay_hardware, simulated_hardware
    from nodeqc.faults import parse_fault
    from nodeqc.keys import load_signer
    from nodeqc.peers import parse_peers
    from nodeqc.profile import load_for, suggest_profile

    faults = [parse_fault(f) for f in args.inject]
    peers = parse_peers(getattr(args, "nic_peer", []))
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
    if args.replay and simulate:
        raise UsageError("--replay and --simulate exclude each other")
    if args.replay:
        hardware = replay_hardware(args.replay)
    elif simulate:
        # A simulated burn-in of any length takes about a minute: time runs that much faster.
        scale = args.burn_in / 60 if getattr(args, "burn_in", None) and args.burn_in / 60 > 10 else None
        hardware = simulated_hardware(simulate, faults, time_scale=scale)
    else:
        hardware = real_hardware()
    _check_peer_nics(peers, hardware)
    profile_ref = args.profile or "auto"
    gpus = _gpus(hardware)
    if profile_ref == "auto":
        profile_ref = suggest_profile(gpus)
        print(f"nodeqc: profile auto: using '{profile_ref}'", file=sys.stderr)
    profile = load_for(profile_ref, gpus)
    if args.gpus is not None:
        fixed = profile.get("gpu", "count")
        if profile.kind == "node" and fixed != args.gpus:
            raise UsageError(f"--gpus {args.gpus}: profile {profile.name} fixes the GPU count at {fixed}")
        profile = profile.with_gpu_count(args.gpus)
    signer = load_signer(args.key)
    return hardware, profile, signer


def _check_peer_nics(peers: list[Any], hardware: Any) -> None:
    """A --nic-peer NIC=HOST must name a NIC this node has."""
    named = [p for p in peers if p.nic]
    if not named or hardware.nics is None:
        return
    have = [n.name for n in hardware.nics.nics()]
    for p in named:
        if p.nic not in have:
            raise UsageError(f"--nic-peer {p}: this node has no NIC {p.nic} (it has: {', '.join(have) or 'none'})")


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


def _gpus(hardware: Any) -> list[Any]:
    """The GPUs as the management backend finds them (none when it cannot start)."""
    from nodeqc.errors import BackendUnavailable

    try:
        hardware.mgmt.open()
        return hardware.mgmt.gpus()
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
        from nodeqc.render import passed_line, result_line, subjects_text

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
    from nodeqc.peers import parse_peers
    from nodeqc.runner import RunOptions, Runner
    from nodeqc.selection import Selection

    selection = Selection.parse(args.only, args.skip)
    textfile = Path(args.prometheus_textfile) if args.prometheus_textfile else None
    if textfile:
        from nodeqc.prometheus import check_path

        check_path(textfile)
    hardware, profile, signer = prepare(args)
    archive = _open_archive(args.archive)
    previous = _previous_report(hardware, archive, args.retest)
    options = RunOptions(profile=profile, signer=signer, out_dir=Path(args.out) if args.out else None,
                         quick=args.quick, operator=args.operator, ticket=args.ticket,
                         sample_hz=args.sample_hz, burn_in_s=args.burn_in, command=["nodeqc", *argv],
                         archive=archive.root, selection=selection, previous=previous[1] if previous else None,
                         nic_peers=parse_peers(args.nic_peer),
                         baseline=_baseline(args.baseline, profile))
    runner = Runner(options, hardware, ProgressPrinter())
    with _graceful_abort(runner.abort):
        outcome = runner.run()
    _after_run(outcome.report_path, selection, previous, textfile, trusted=_signer_trust(signer))
    print(outcome.report_path, flush=True)
    return outcome.exit_code


def _baseline(path: str | None, profile: Any) -> Any:
    from nodeqc.baseline import Baseline

    return Baseline.load(path, profile) if path else None


def _signer_trust(signer: Any) -> dict[str, Any]:
    """The run's own signing key, as the one that must have signed the report it just wrote."""
    return {signer.keyid: (signer.public, f"this run's signing key {signer.path}")}


def _open_archive(directory: str | None) -> Any:
    from nodeqc.archive import Archive

    if directory and not Path(directory).is_dir():
        raise UsageError(f"--archive {directory}: no such directory")
    return Archive(directory)


def _previous_report(hardware: Any, archive: Any, retest: str | None) -> tuple[Path, dict[str, Any]] | None:
    """The report this run re-tests: the one named with --retest REPORT, else this node's newest in
    the archive (None if there is none; an error if --retest asked for one)."""
    from nodeqc.archive import node_key, read_verified, safe_name
    from nodeqc.report import VerificationError

    if retest:
        path = Path(retest)
        try:
            verified = read_verified(path, archive.trusted)  # read once: the digest is of what was verified
        except VerificationError as e:
            raise UsageError(f"--retest {path}: NOT VERIFIED: {e}") from None
        pred = verified.predicate
        return path, {"report": path.name, "sha256": verified.sha256, "verdict": pred.get("verdict"),
                      "finished_at": pred.get("finished_at")}
    host = hardware.host.info()
    node = node_key(host.system_serial, host.hostname)
    entry = archive.latest(node)
    for skipped in archive.skipped():
        if skipped.path.parent.name == safe_name(node):
            print(f"nodeqc: warning: archive: NOT VERIFIED: {_clean(skipped.path)}: {_clean(skipped.reason)}",
                  file=sys.stderr)
    if entry is None:
        if retest is not None:
            raise UsageError(f"--retest: the archive {archive.root} holds no verified report of node {node}; "
                             "name one with --retest REPORT")
        return None
    print(_clean(f"nodeqc: re-test of node {node}: previous report {entry.path} ({entry.result}, "
                 f"{entry.finished_at})"), file=sys.stderr)
    return entry.path, {"report": entry.path.name, "sha256": entry.sha256, "verdict": entry.verdict,
                        "finished_at": entry.finished_at}


def _after_run(report: Path, selection: Any, previous: tuple[Path, dict[str, Any]] | None,
               textfile: Path | None, trusted: dict[str, Any] | None = None) -> None:
    """What follows the report: the partial note, the comparison with the re-tested report, the
    Prometheus textfile; each from the files as verified (the report just written by `trusted`, the
    run's own key; the re-tested one by the digest it was looked up with), never from what a file
    says after someone changed it."""
    from nodeqc.archive import read_verified
    from nodeqc.keys import trusted_keys
    from nodeqc.report import VerificationError

    try:
        predicate = read_verified(report, trusted_keys() if trusted is None else trusted).predicate
    except VerificationError as e:
        raise UsageError(f"{report}: the report just written is NOT VERIFIED: {e}") from None
    if selection.partial:
        print(f"nodeqc: partial run ({selection.describe()}): this report is not a qualification",
              file=sys.stderr)
    if previous:
        from nodeqc.archive import read_by_digest
        from nodeqc.compare import compare

        try:
            old = read_by_digest(previous[0], previous[1]["sha256"])
        except (VerificationError, UsageError) as e:
            print(_clean(f"nodeqc: warning: previous report {previous[0]}: NOT VERIFIED: {e}; not compared"),
                  file=sys.stderr)
        else:
            for line in compare(old, predicate).lines(str(previous[0]), str(report)):
                print(line, file=sys.stderr)
    if textfile:
        from nodeqc.prometheus import render, write_textfile

        write_textfile(textfile, render(predicate, report))


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
    from nodeqc.keys import trusted_keys
    from nodeqc.render import banner
    from nodeqc.report import VerificationError, verify_file

    p = _Parser(prog="nodeqc verify", description="Check a report's signature; exit 0 only if it is "
                "intact and signed by a trusted key.")
    p.add_argument("report", help="the .report.json file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable); "
                   "default: your own key and those in the trusted-keys directory")
    p.add_argument("--report-only", action="store_true", help="verify the signed report alone, without "
                   "the journal and telemetry files it names (e.g. a report copied on its own)")
    args = p.parse_args(argv)
    try:
        verified = verify_file(Path(args.report), trusted_keys(args.pubkey))
        if verified.missing and not args.report_only:
            raise VerificationError(f"evidence missing: {', '.join(f'{m} is missing' for m in verified.missing)} "
                                    "(not beside the report; --report-only verifies the report alone)")
    except VerificationError as e:
        print(_clean(f"nodeqc verify: {args.report}: NOT VERIFIED: {e}"), file=sys.stderr)
        return 1
    pred = verified.predicate
    try:
        node = pred.get("node") or {}
        line = (f"verified: {banner(pred)}  node {node.get('hostname')} (serial {node.get('system_serial')})  "
                f"profile {(pred.get('profile') or {}).get('name')}  finished {pred.get('finished_at')}  "
                f"key {verified.keyid[:16]} ({verified.key_source})")
    except (AttributeError, TypeError) as e:
        print(_clean(f"nodeqc verify: {args.report}: signed, but not in the form nodeqc writes ({e})"),
              file=sys.stderr)
        return 1
    print(_clean(line))
    print(_clean(f"evidence: {_evidence_text(verified)}"))
    return 0


def _evidence_text(verified: Any) -> str:
    """What `verify` and `show` say about the journal and telemetry files the report names."""
    said = [f"{c.split()[0]} ok" for c in verified.checked] + [f"{m} missing" for m in verified.missing]
    return ", ".join(said) or "none named by the report"


def cmd_show(argv: list[str]) -> int:
    from nodeqc.journal import MAX_JOURNAL_BYTES, parse_journal
    from nodeqc.keys import trusted_keys
    from nodeqc.render import render_journal, render_report
    from nodeqc.report import VerificationError, decode_statement, read_envelope, read_report_bytes, verify_file

    p = _Parser(prog="nodeqc show", description="Show a report (or the journal or telemetry of a run that did not finish).")
    p.add_argument("report", help="a .report.json file, a .journal.jsonl file, or a .telemetry.csv.gz file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable)")
    p.add_argument("--unverified", action="store_true", help="show a report that does not verify anyway "
                   "(marked NOT VERIFIED); without it such a report is refused with exit 1")
    args = p.parse_args(argv)
    path = Path(args.report)
    if path.name.endswith(".csv.gz"):
        from nodeqc.telemetry import describe_series

        if not path.is_file():
            raise UsageError(f"{path}: no such telemetry file")
        from nodeqc.render import clean_lines

        print(clean_lines(describe_series(path)))
        return 0
    if path.name.endswith(".jsonl"):
        try:
            records = parse_journal(read_report_bytes(path, MAX_JOURNAL_BYTES).decode("utf-8", errors="replace"))
        except VerificationError as e:
            print(_clean(f"nodeqc show: {path}: not a readable journal: {e}"), file=sys.stderr)
            return 1
        try:
            print(render_journal(records))
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            print(_clean(f"nodeqc show: {path}: not a journal nodeqc writes ({type(e).__name__}: {e})"), file=sys.stderr)
            return 1
        return 0
    try:
        verified = verify_file(path, trusted_keys(args.pubkey))
        stmt, trust = verified.statement, (f"signature: verified (key {verified.keyid[:16]}, {verified.key_source}); "
                                           f"evidence: {_evidence_text(verified)}")
    except VerificationError as e:
        if not args.unverified:
            print(_clean(f"nodeqc show: {path}: NOT VERIFIED: {e} (--unverified shows it anyway)"), file=sys.stderr)
            return 1
        try:
            stmt = decode_statement(read_envelope(path))
        except VerificationError as e2:
            print(_clean(f"nodeqc show: {path}: not a readable nodeqc report: {e2}"), file=sys.stderr)
            return 1
        trust = f"signature: NOT VERIFIED ({e}): do not rely on this report"
    try:
        text = render_report(stmt["predicate"], trust)
    except (AttributeError, TypeError, KeyError, ValueError) as e:
        print(_clean(f"nodeqc show: {path}: not in the form nodeqc writes ({type(e).__name__}: {e})"),
              file=sys.stderr)
        return 1
    print(text)
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
        sku = prof.sku
        if sku is not None:
            print(f"  sku {sku.key}: {sku.name}, PCI {', '.join(f'0x{i:04x}' for i in sku.pci_device_ids)} (floors: nodeqc/skus.py)")
        elif prof.data.get("skus"):
            print(f"  skus {', '.join(prof.data['skus'])}: the floors of the slowest until the GPUs are known")
        for section in ("gpu", "host", "nic", "run"):
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
    _print_skus()
    return 0


def _print_skus() -> None:
    """The SKU table (nodeqc/skus.py): how each SKU is recognised, its healthy figures, the floors
    the calibration rule makes of them, and where the figures come from."""
    from nodeqc import calibration
    from nodeqc.skus import SKUS

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


def cmd_scenarios(argv: list[str]) -> int:
    from nodeqc.backends.simulated import list_scenarios, load_scenario
    from nodeqc.faults import GPU_FAULTS, HOST_FAULTS, NIC_FAULTS

    p = _Parser(prog="nodeqc scenarios", description="List the built-in simulated nodes and the faults they take.")
    p.parse_args(argv)
    for name in list_scenarios():
        s = load_scenario(name)
        print(f"{name:<10} {s.gpu_count} x {s.gpu_model.name:<24} {s.data.get('description', '')}")
    print("any SKU's key (nodeqc profiles): one GPU of that SKU in a cloud VM (16 cores, 125.9 GiB)")
    print("\nfaults (--inject gpuN:FAULT[=VALUE] / nicN:FAULT[=VALUE] / host:FAULT[=VALUE]):")
    for target, vocab in (("gpu", GPU_FAULTS), ("nic", NIC_FAULTS), ("host", HOST_FAULTS)):
        for name, (parser, text) in vocab.items():
            print(f"  {target}{'' if target == 'host' else 'N'}:{name}{'=VALUE' if parser else '':<7} {text}")
    return 0


def cmd_capture(argv: list[str]) -> int:
    from nodeqc.backends.host import LinuxHost
    from nodeqc.capture import capture, write_capture
    from nodeqc.errors import BackendUnavailable

    p = _Parser(prog="nodeqc capture", description="Record this machine's NVML answers (inventory, counters, "
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


def _archive_parser(prog: str, description: str) -> _Parser:
    p = _Parser(prog=prog, description=description)
    p.add_argument("--node", metavar="SERIAL", help="only this node (system serial or host name)")
    p.add_argument("--verdict", type=str.lower, choices=("pass", "fail", "partial"), metavar="pass|fail|partial",
                   help="pass: qualifications that passed (complete, not partial); fail: runs that failed; "
                   "partial: runs with --only/--skip")
    p.add_argument("--since", metavar="DATE", help="finished at or after DATE (2026-11-01, 2026-11-01T08:00Z) "
                   "or within an age (7d, 12h)")
    p.add_argument("--archive", metavar="DIR", help="the report archive (default: $NODEQC_ARCHIVE or the per-user one)")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable); "
                   "default: your own key and those in the trusted-keys directory")
    return p


def parse_since(text: str) -> str:
    """An ISO date or time (UTC unless it says otherwise), or an age like 7d / 12h, as the UTC
    timestamp reports carry ('2026-11-01T00:00:00Z')."""
    from datetime import datetime, timedelta, timezone

    age = re.fullmatch(r"(\d+)([dh])", text.strip())
    try:
        if age:
            n = int(age.group(1))
            when = datetime.now(timezone.utc) - (timedelta(days=n) if age.group(2) == "d" else timedelta(hours=n))
        else:
            when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--since {text}: expected a date like 2026-11-01, a time like 2026-11-01T08:00Z, "
                         "or an age like 7d or 12h") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _query(args: argparse.Namespace) -> list[Any]:
    """The reports the filters select, newest first; skipped files are warned about on stderr."""
    from nodeqc.archive import Archive
    from nodeqc.keys import trusted_keys

    since = parse_since(args.since) if args.since else None
    if args.archive and not Path(args.archive).is_dir():
        raise UsageError(f"--archive {args.archive}: no such directory")
    archive = Archive(args.archive, trusted_keys(args.pubkey))
    entries = archive.reports(node=args.node, verdict=args.verdict, since=since, limit=getattr(args, "limit", None))
    for skipped in archive.skipped():
        print(_clean(f"nodeqc: warning: NOT VERIFIED: {skipped.path}: {skipped.reason} (not listed)"),
              file=sys.stderr)
    archive.close()
    if not entries:
        print(f"nodeqc: no reports in {archive.root} match", file=sys.stderr)
    return entries


def cmd_history(argv: list[str]) -> int:
    p = _archive_parser("nodeqc history", "List the verified reports in the archive, newest first. Only a "
                        "complete, full run that passed is a qualification; partial runs say so.")
    p.add_argument("--limit", type=_positive_int, metavar="N", help="at most N reports")
    p.add_argument("--expired", action="store_true", help="only each node's newest qualification whose "
                   "valid_until (the profile's valid_days) has passed")
    args = p.parse_args(argv)
    limit = args.limit
    if args.expired:  # expiry is judged on each node's newest qualification: limit after that
        args.limit = None
    entries = _query(args)
    if args.expired:
        from nodeqc.fleet import expired_entries

        entries = expired_entries(entries)[:limit] if limit else expired_entries(entries)
    if entries:
        print(f"{'FINISHED':<20}  {'NODE':<18} {'HOST':<16} {'RESULT':<20} {'PROFILE':<10} {'FAILED':<28} REPORT")
    for e in entries:
        failed = (e.failed[0] + (f" +{len(e.failed) - 1}" if len(e.failed) > 1 else "")) if e.failed else "-"
        print(_clean(f"{e.finished_at:<20}  {e.node:<18} {e.hostname:<16} {e.result:<20} {e.profile:<10} "
                     f"{failed:<28} {e.path}"))
    return 0


def cmd_compare(argv: list[str]) -> int:
    from nodeqc.compare import compare
    from nodeqc.keys import trusted_keys
    from nodeqc.report import VerificationError, decode_statement, read_envelope, verify_file

    p = _Parser(prog="nodeqc compare", description="Compare two reports of a node, check by check and GPU by "
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
            print(_clean(f"nodeqc: warning: {path}: NOT VERIFIED ({e}); compared anyway"), file=sys.stderr)
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
    import csv
    import json

    from nodeqc.archive import NotVerified, iter_checks
    from nodeqc.render import clean

    p = _archive_parser("nodeqc export", "Write one row per report and check, for spreadsheets and pandas.")
    p.add_argument("--format", default="csv", type=str.lower, choices=("csv", "jsonl"), metavar="csv|jsonl",
                   help="csv (default) or jsonl (one JSON object a line)")
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    args = p.parse_args(argv)
    if args.output:
        check_output_file(Path(args.output), "--output")
    # A file is written whole at the end (nodeqc.safefile: never through a planted link).
    out = io.StringIO() if args.output else sys.stdout
    entries = _query(args)
    writer = csv.DictWriter(out, EXPORT_FIELDS, lineterminator="\n") if args.format == "csv" else None
    if writer:
        writer.writeheader()
    to_terminal = out.isatty()  # a file or a pipe gets the data as it is; a terminal, escaped
    for e in entries:
        try:
            checks = list(iter_checks(e))
        except NotVerified as error:
            print(_clean(f"nodeqc: warning: NOT VERIFIED: {e.path}: {error} (not exported)"), file=sys.stderr)
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
        from nodeqc.safefile import write_atomic

        write_atomic(Path(args.output), out.getvalue().encode())
    return 0


def cmd_baseline(argv: list[str]) -> int:
    from nodeqc.cli_baseline import main as baseline_main

    return baseline_main(argv)


def cmd_fleet(argv: list[str]) -> int:
    from nodeqc.cli_fleet import main as fleet_main

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
