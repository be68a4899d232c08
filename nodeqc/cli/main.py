"""The command line: `nodeqc --headless ...` for scripts, `nodeqc` for the desktop app, and the
report tools (`verify`, `show`, `profiles`, `scenarios`). Here: the top-level parser and the table
of commands; each family of commands is a module of its own (nodeqc.cli.run, .reports, .machines,
.baseline, .fleet; nodeqc.fabric.cli), their shared option types in nodeqc.cli.common.

Exit codes: 0 the node passed (warnings allowed), 1 it failed qualification, 2 nodeqc could not do
its job (bad arguments or profile, unwritable output, aborted run, internal error). Bad input gets
one line on stderr naming what is wrong, never a traceback. Progress goes to stderr; the last line
of stdout is the path of the signed report.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import traceback
from typing import Any, Callable

from nodeqc import __version__
from nodeqc.cli.common import dcgm_level, duration, positive_float
from nodeqc.cli.machines import cmd_capture, cmd_profiles, cmd_scenarios
from nodeqc.cli.reports import cmd_compare, cmd_export, cmd_history, cmd_show, cmd_verify
from nodeqc.cli.run import forget_interrupt, gui, headless, ignore_interrupts
from nodeqc.core.arguments import Parser, whole_number
from nodeqc.core.errors import UsageError
from nodeqc.core.text import clean

EXIT_USAGE = 2


# Every command besides the run, with what it does in a line: `nodeqc --help` lists them all, and
# tests/test_cli.py holds this list to COMMANDS.
SUMMARIES = {
    "verify": "check a report's signature and evidence (exit 0 only if it verifies)",
    "show": "show a report, or the journal or telemetry of a run that did not finish (--json, --pdf)",
    "history": "the verified reports of the archive, newest first (--part: one GPU's or NIC's story)",
    "compare": "two reports of a node side by side (exit 1 when the newer regressed)",
    "export": "the archive's checks as CSV or JSON lines",
    "baseline": "record a known-good node as a golden baseline, or check a node against one",
    "watch": "watch the node between qualifications: its health as a Prometheus textfile and an exit code "
             "for Slurm's HealthCheckProgram",
    "fleet": "every node's newest report and the fleet's outliers, as a table, CSV or an HTML page",
    "fabric": "qualify many nodes together by pair tests (Slurm, Kubernetes, or a host list)",
    "capture": "record this machine's NVML answers, for --replay without the machine",
    "profiles": "list the profiles, or show one resolved",
    "scenarios": "list the simulated nodes and the faults they take",
    "gui": "the desktop app (the same as nodeqc without --headless)",
}


def _run_parser(prog: str = "nodeqc") -> Parser:
    """The run's options: `nodeqc`'s, and `nodeqc gui`'s (prog), which refuses the headless-only ones."""
    width = max(map(len, SUMMARIES))
    epilog = "commands (nodeqc COMMAND --help):\n" + "\n".join(
        f"  {name:<{width}}  {what}" for name, what in SUMMARIES.items())
    gui_only = prog != "nodeqc"
    p = Parser(prog=prog, description=SUMMARIES["gui"] + "; --headless and --json are not for it"
               if gui_only else "GPU node qualification and burn-in.", epilog=None if gui_only else epilog,
               formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p.add_argument("--burn-in", metavar="DURATION", type=duration, help="after the checks, burn in for this long "
                   "(e.g. 8h, 90m, 1h30m; each number with its unit): matmul, memory and host-link traffic while every health check watches")
    p.add_argument("--gpus", type=whole_number, metavar="N", help="expected GPU count (single-model profiles)")
    p.add_argument("--gpu", metavar="LIST", action="append", help="test only these GPUs, as nodeqc numbers "
                   "them (gpu3): e.g. 3 or 0,2-3 (repeatable); the report is partial and names them: not a "
                   "qualification")
    p.add_argument("--out", metavar="DIR", help="write the report here instead of the archive (made if missing)")
    p.add_argument("--operator", metavar="NAME", help="who ran the qualification (recorded)")
    p.add_argument("--ticket", metavar="ID", help="work ticket (recorded)")
    p.add_argument("--key", metavar="PEM", help="Ed25519 private key (PKCS#8 PEM) to sign with")
    p.add_argument("--sample-hz", type=positive_float, metavar="HZ", help="telemetry samples per second")
    p.add_argument("--archive", metavar="DIR", help="the report archive, an existing directory (default: "
                   "$NODEQC_ARCHIVE or the per-user one; a simulated or replayed node's runs: the per-user "
                   "archive of simulated runs, `nodeqc history --simulated` lists them)")
    p.add_argument("--retest", metavar="REPORT", nargs="?", const="", help="re-test after a repair: record the "
                   "previous report (REPORT, else this node's newest in the archive) and compare at the end; "
                   "done anyway when the archive holds an earlier report of this node")
    p.add_argument("--repair", metavar="TEXT", help="what was repaired since the re-tested report (see --retest), "
                   "e.g. \"reseated GPU 3 riser\": recorded in the signed report, which says FIXED or STILL "
                   "FAILING for each earlier failure; it is a repair of the parts it names (GPU 3, gpu3, a serial, "
                   "bus id, NIC name or MAC), or of every failing part when it names none")
    p.add_argument("--repair-part", metavar="PART", action="append", help="the part --repair was of, when the note "
                   "does not name it: gpu3 or 3, a GPU serial or bus id, a NIC name or MAC (repeatable)")
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
    p.add_argument("--dcgm", metavar="LEVEL", type=dcgm_level, help="NVIDIA DCGM diagnostic where dcgmi is "
                   "installed: dcgmi diag -r LEVEL (1 to 4; default: the profile's [dcgm] level, 2, or quick_level, "
                   "1, with --quick), or 'off' (or 0)")
    p.add_argument("--start", action="store_true", help="GUI: start the run at once")
    p.add_argument("--json", action="store_true", help="with --headless: stdout's one line is a JSON summary "
                   "(report, verdict, status, exit code, partial, counts, each failing part's check and code) "
                   "instead of the report's path")
    p.add_argument("--screenshot", metavar="PNG", help="GUI: save a picture of the window when the run ends, then exit")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    watched = sys.stdout = _Watched(sys.stdout)
    try:
        try:
            code = _dispatch(argv)
        except SystemExit:  # argparse's --help and --version end in sys.exit: their text is flushed here too
            watched.flush_or_raise()
            raise
        watched.flush_or_raise()  # what could not be written is said here, not lost in the exit's own flush
        return code
    except UsageError as e:
        print(f"nodeqc: {clean(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Quitting now: a further Ctrl-C must not interrupt the exit's own clean-up (a traceback from
        # an atexit callback, and an exit status other than 2).
        ignore_interrupts()
        forget_interrupt()
        print("nodeqc: interrupted", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `nodeqc history | head`: the reader has gone, which is no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:  # a path given too long for the file system, wherever it is opened
            print(f"nodeqc: {clean(str(e.filename))[:80]}...: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
        if e is not watched.failed:
            return _internal_error(e)
        # `nodeqc show R > /dev/full`, a full disk under a redirect: one line, not an internal error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"nodeqc: cannot write to standard output: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - never a traceback for the user; NODEQC_DEBUG shows it
        return _internal_error(e)
    finally:
        sys.stdout = watched.stream


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] in COMMANDS:
        return COMMANDS[argv[0]](argv[1:])
    args = _run_parser().parse_args(argv)
    if args.headless:
        for option, given in (("--start", args.start), ("--screenshot", args.screenshot)):
            if given:  # the app's own: ignored, a script waited for a picture that never came
                raise UsageError(f"--headless {option}: {option} is the app's (nodeqc without --headless)")
        return headless(args, argv)
    _refuse_headless_only(args, "")
    return gui(args, argv)


class _Watched:
    """Standard output, noting the error a write or flush to it raised: an OSError from there (a full
    disk under a redirect) is said as such, one from anywhere else is an internal error."""

    def __init__(self, stream: Any):
        self.stream = stream.stream if isinstance(stream, _Watched) else stream
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as e:
            self.failed = e
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as e:
            self.failed = e
            raise

    def flush_or_raise(self) -> None:
        """Flush, and raise the error of any earlier write too: argparse's help passes over an OSError
        from its own write (a text longer than the buffer is written at once), leaving nothing to flush."""
        self.flush()
        if self.failed is not None:
            raise self.failed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _internal_error(e: BaseException) -> int:
    if os.environ.get("NODEQC_DEBUG"):
        traceback.print_exc()
    print(f"nodeqc: internal error: {type(e).__name__}: {clean(e)} (set NODEQC_DEBUG=1 for details)",
          file=sys.stderr)
    return EXIT_USAGE


def cmd_baseline(argv: list[str]) -> int:
    from nodeqc.cli.baseline import main as baseline_main

    return baseline_main(argv)


def cmd_fleet(argv: list[str]) -> int:
    from nodeqc.cli.fleet import main as fleet_main

    return fleet_main(argv)


def cmd_watch(argv: list[str]) -> int:
    from nodeqc.cli.watch import main as watch_main

    return watch_main(argv)


def cmd_fabric(argv: list[str]) -> int:
    from nodeqc.fabric.cli import main as fabric_main  # many nodes together: its own parser and module

    return fabric_main(argv)


def _refuse_headless_only(args: argparse.Namespace, command: str) -> None:
    """The app takes the run's options but not the headless run's own: said in one line (exit 2),
    never ignored while the app starts (offscreen, that was a hang)."""
    if args.json:
        raise UsageError(f"{command}--json: the JSON summary is the headless run's (--headless); the app shows its own")
    if command and args.headless:
        raise UsageError(f"{command}--headless: `nodeqc gui` is the desktop app; for a run without it: "
                         "nodeqc --headless ...")


def cmd_gui(argv: list[str]) -> int:
    args = _run_parser("nodeqc gui").parse_args(argv)
    _refuse_headless_only(args, "gui ")
    return gui(args, ["gui", *argv])


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
    "watch": cmd_watch,
    "gui": cmd_gui,
    "fabric": cmd_fabric,
}
