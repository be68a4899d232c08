"""The archive's filters as command-line options (--node, --verdict, --since, --archive, --pubkey)
and the reports they select: shared by `nodeqc history`, `nodeqc export` and `nodeqc fleet`."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from nodeqc.core.arguments import Parser
from nodeqc.core.errors import UsageError


def archive_parser(prog: str, description: str) -> Parser:
    p = Parser(prog=prog, description=description)
    p.add_argument("--node", metavar="SERIAL", help="only this node (system serial or host name)")
    p.add_argument("--verdict", type=str.lower, choices=("pass", "fail", "error", "partial"), metavar="pass|fail|error|partial",
                   help="pass: qualifications that passed (complete, not partial); fail: runs that failed; "
                   "error: runs that could not judge (exit 2); "
                   "partial: runs with --only/--skip")
    p.add_argument("--since", metavar="DATE", help="finished at or after DATE (2026-11-01, 2026-11-01T08:00Z) "
                   "or within an age (7d, 12h)")
    p.add_argument("--archive", metavar="DIR", help="the report archive (default: $NODEQC_ARCHIVE or the per-user one)")
    p.add_argument("--simulated", action="store_true", help="the per-user archive of simulated and replayed runs "
                   "(--simulate, --replay file there by default, apart from the real nodes)")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable); "
                   "default: your own key and those in the trusted-keys directory")
    return p


def parse_since(text: str) -> str:
    """An ISO date or time (UTC unless it says otherwise), or an age like 7d / 12h, as the UTC
    timestamp reports carry ('2026-11-01T00:00:00Z')."""
    from datetime import datetime, timedelta, timezone

    age = re.fullmatch(r"([0-9]{1,9})([dh])", text.strip())
    try:
        if age:
            n = int(age.group(1))
            when = datetime.now(timezone.utc) - (timedelta(days=n) if age.group(2) == "d" else timedelta(hours=n))
        else:
            when = datetime.fromisoformat(text.strip())
    except (ValueError, OverflowError):  # an age of 99999999999999999999d was an internal error
        raise UsageError(f"--since {text}: expected a date like 2026-11-01, a time like 2026-11-01T08:00Z, "
                         "or an age like 7d or 12h") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def chosen_archive(args: argparse.Namespace) -> Path:
    """--archive, else the default: the real nodes' archive, or with --simulated the simulated runs'."""
    from nodeqc.archive import filing

    return filing.chosen_archive(args.archive, simulated=getattr(args, "simulated", False))


def query(args: argparse.Namespace) -> list[Any]:
    """The reports the filters select, newest first; skipped files are warned about on stderr."""
    from nodeqc.archive.index import Archive  # here, not at the top: `nodeqc --help` need not load them
    from nodeqc.core.text import clean
    from nodeqc.report.keys import trusted_keys

    since = parse_since(args.since) if args.since else None
    archive = Archive(chosen_archive(args), trusted_keys(args.pubkey))
    entries = archive.reports(node=args.node, verdict=args.verdict, since=since, limit=getattr(args, "limit", None),
                              fabrics=getattr(args, "fabrics", False))
    for skipped in archive.skipped():
        print(clean(f"nodeqc: warning: NOT VERIFIED: {skipped.path}: {skipped.reason} (not listed)"),
              file=sys.stderr)
    archive.close()
    if not entries:
        print(f"nodeqc: no reports in {archive.root} match", file=sys.stderr)
    return entries
