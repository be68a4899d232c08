"""`nodeqc watch`: the node watched between qualifications (nodeqc.run.watch), its health exported as
a Prometheus textfile and as an exit code for Slurm's HealthCheckProgram: 0 healthy, 1 needs
attention (drain it), 2 could not judge. `--once` makes one pass, bounded by `--deadline`; without
it a pass every `--interval` seconds until interrupted. One line per pass on stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from time import sleep
from typing import Any

from nodeqc.cli.common import positive_float
from nodeqc.core.arguments import Parser
from nodeqc.core.errors import UsageError

DEFAULT_INTERVAL_S = 60.0
MIN_INTERVAL_S = 1.0
MAX_INTERVAL_S = 86400.0


def _parser() -> Parser:
    from nodeqc.run.watch import DEFAULT_DEADLINE_S

    p = Parser(prog="nodeqc watch", description="Watch this node between qualifications: NVML, XIDs, the "
               "kernel log, EDAC, AER and NIC counters, judged by the run's own health checks, with no load "
               "of its own. Exit 0 healthy, 1 needs attention (drain), 2 could not judge.")
    p.add_argument("--once", action="store_true", help="one pass, then exit with its code (Slurm's "
                   "HealthCheckProgram, a systemd timer)")
    p.add_argument("--interval", type=positive_float, metavar="S", help=f"seconds between passes without "
                   f"--once (default {DEFAULT_INTERVAL_S:g})")
    p.add_argument("--deadline", type=positive_float, metavar="S", help=f"cut a pass off after S seconds: "
                   f"NVML or a tool that does not answer is reported, exit 2 (default {DEFAULT_DEADLINE_S:g}; "
                   "Slurm kills a health check at 60)")
    p.add_argument("--textfile", metavar="PATH", help="write the node's health to PATH (*.prom) for "
                   "node_exporter's textfile collector, after every pass (written whole, then renamed)")
    p.add_argument("--profile", metavar="NAME|PATH", default="auto", help="the limits to judge by (default: "
                   "auto, chosen from the GPUs found)")
    p.add_argument("--archive", metavar="DIR", help="the report archive, where the watch keeps its state beside "
                   "the node's reports (default: $NODEQC_ARCHIVE or the per-user one; with --simulate, the per-user "
                   "archive of simulated runs)")
    p.add_argument("--simulate", metavar="NAME|PATH", help="watch a simulated node (nodeqc scenarios), as "
                   "found between qualifications: its injected faults have happened")
    p.add_argument("--inject", metavar="FAULT", action="append", default=[],
                   help="fault for the simulated node, e.g. gpu3:xid=79 (repeatable)")
    p.add_argument("--key", metavar="PEM", help="the node's Ed25519 private key (PKCS#8 PEM) that signs its watch "
                   "state, as its reports are signed (default: the per-user key, made on first use)")
    p.add_argument("--json", action="store_true", help="stdout: each pass as one JSON line")
    return p


def main(argv: list[str]) -> int:
    from nodeqc.backends import hardware_for
    from nodeqc.run.watch import DEFAULT_DEADLINE_S, Watcher, check_deadline

    args = _parser().parse_args(argv)
    if args.once and args.interval is not None:
        raise UsageError("--interval: a watch with --once makes one pass (leave out one of them)")
    if args.interval is not None and not MIN_INTERVAL_S <= args.interval <= MAX_INTERVAL_S:
        # A day at most: 1e10 s slept past what the platform's time_t holds (2026-11-28 audit: an
        # internal error after the first pass), and a watch that never looks again is no watch.
        raise UsageError(f"--interval {args.interval:g}: expected at least {MIN_INTERVAL_S:g} second and at most "
                         f"{MAX_INTERVAL_S:g} (a day)")
    deadline = check_deadline(args.deadline if args.deadline is not None else DEFAULT_DEADLINE_S)
    if args.simulate == "auto":
        raise UsageError("--simulate auto: a watch watches this node, or the simulated node it names "
                         "(nodeqc scenarios); never one in place of a node whose driver is missing")
    from nodeqc.archive.filing import chosen_archive

    archive = chosen_archive(args.archive, simulated=args.simulate is not None)
    textfile = Path(args.textfile) if args.textfile else None
    if textfile is not None:
        _check_textfile(textfile)
    from nodeqc.report.keys import load_signer

    signer = load_signer(args.key)  # before the hardware: a key refused is one line, nothing opened
    hardware = hardware_for(args.simulate, None, args.inject, in_service=True)
    watcher = Watcher(hardware, args.profile, str(archive), deadline, signer=signer)
    interval = args.interval or DEFAULT_INTERVAL_S
    code = 2
    try:
        while True:
            result = watcher.run_pass()
            code = result.exit_code
            _report(result, textfile, args.json)
            if args.once or watcher.hung:
                # A read that hung is left on its thread: the next pass would wait on the same NVML.
                return code
            sleep(interval)
    except KeyboardInterrupt:
        from nodeqc.cli.run import forget_interrupt

        forget_interrupt()  # the last pass's exit code, not a death by SIGINT under `python -m`
        return code
    finally:
        watcher.close()


def _check_textfile(path: Path) -> None:
    if path.suffix != ".prom":
        raise UsageError(f"--textfile {path}: the name must end in .prom (node_exporter's textfile collector "
                         "reads only *.prom files)")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK):
        raise UsageError(f"--textfile {path}: {path.parent} is not a writable directory")


def _report(result: Any, textfile: Path | None, as_json: bool) -> None:
    from nodeqc.core.text import clean

    print(clean(result.line()), file=sys.stderr)
    if result.refused:  # forged, altered, another node's, or unsigned: this node's own copy replaced it
        print(clean(f"nodeqc watch: warning: the archive's watch state was not believed: {result.refused}"),
              file=sys.stderr)
    if result.restored:  # another writer of the archive took away what this node had found
        print(clean("nodeqc watch: warning: the archive's watch state had lost what this node recorded; put back "
                    "from its own copy: " + "; ".join(result.restored)), file=sys.stderr)
    findings = [{"check": f.check, "subject": f.subject, "code": f.code, "verdict": f.verdict, "sticky": f.sticky,
                 "first_seen": f.first_seen, "clears_at": f.clears_at(), "message": f.message}
                for f in result.standing]
    watch = {"node": result.node, "hostname": result.hostname, "simulated": result.simulated,
             # Judged: read and judged in full (a pass that could not read the host's counters is not).
             "profile": result.profile, "judged": result.exit_code != 2, "error": result.error,
             "exit_code": result.exit_code, "healthy": result.exit_code == 0,
             "requalify": bool(result.requalify), "gpus": result.gpus, "pass_timestamp": result.started,
             "duration_s": result.duration_s, "qualified_at": result.qualified_at,
             "unread": [{"check": r.name, "code": r.code, "why": r.message} for r in result.unread]}
    if as_json:
        import json

        print(json.dumps({**watch, "findings": findings}, sort_keys=True), flush=True)
    if textfile is not None:
        from nodeqc.core.safefile import OutputError, write_atomic
        from nodeqc.report.prometheus import render_watch

        try:
            write_atomic(textfile, render_watch(watch, findings).encode("utf-8"))
        except OutputError as e:
            raise UsageError(f"--textfile {textfile}: {e}") from None
