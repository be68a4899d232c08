"""`nodeqc fleet`: every node in the archive with its last verdict, age, fleet outliers and expiry,
newest problems first; `--csv FILE` and `--html FILE` write the same (the page, nodeqc.cli.fleetpage,
is one file: the table first, sortable and filterable by an inline script, then inline SVG plots;
nothing fetched)."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from nodeqc.cli.archive import archive_parser, query
from nodeqc.core.arguments import Parser, decimal_number, whole_number
from nodeqc.core.errors import UsageError
from nodeqc.core.text import csv_writer

CSV_FIELDS = ("node", "hostname", "sku", "result", "qualified", "finished_at", "age", "valid_until", "expired",
              "problems", "outliers", "failed", "report", "warned")


def _parser() -> Parser:
    p = archive_parser("nodeqc fleet", "The fleet from the archive: each node's last verdict, age, fleet "
                       "outliers (figures far below their SKU's median) and expiry, newest problems first.")
    p.add_argument("--profile", metavar="NAME|PATH", help="take [fleet] outlier_pct / min_fleet from this profile")
    p.add_argument("--outlier-pct", type=decimal_number, metavar="PCT", help="how far below the fleet median is an outlier "
                   "(default: the profile's, else 10)")
    p.add_argument("--min-fleet", type=whole_number, metavar="N", help="fewest nodes of a SKU to judge outliers (default 10)")
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    p.add_argument("--html", metavar="FILE",
                   help="also write a self-contained HTML page: the nodes (sortable, filterable), then plots")
    p.add_argument("--rows", type=whole_number, metavar="N", help="print at most N rows (files get all)")
    return p


def main(argv: list[str]) -> int:
    from nodeqc.archive.fleet import fleet
    from nodeqc.report.keys import trusted_keys
    from nodeqc.checks.fleet import DEFAULT_MIN_FLEET, DEFAULT_OUTLIER_PCT

    p = _parser()
    args = p.parse_args(argv)
    pct, min_fleet = DEFAULT_OUTLIER_PCT, DEFAULT_MIN_FLEET
    if args.profile:
        from nodeqc.spec.profile import load_profile

        prof = load_profile(args.profile)
        pct = prof.get("fleet", "outlier_pct", pct)
        min_fleet = prof.get("fleet", "min_fleet", min_fleet)
    if args.outlier_pct is not None:
        if not 0 < args.outlier_pct < 100:
            raise UsageError(f"--outlier-pct {args.outlier_pct:g}: expected a percentage between 0 and 100")
        pct = args.outlier_pct
    if args.min_fleet is not None:
        if args.min_fleet < 2:
            raise UsageError(f"--min-fleet {args.min_fleet}: expected 2 or more")
        min_fleet = args.min_fleet
    if args.rows is not None and args.rows < 1:  # -5 was taken, and printed all but the last five
        raise UsageError(f"--rows {args.rows}: expected 1 or more")
    outputs = [Path(f) for f in (args.csv, args.html) if f]
    for out in outputs:
        if not out.parent.is_dir():
            raise UsageError(f"{out}: {out.parent} is not a directory")
    entries = query(args)
    view = fleet(entries, pct, min_fleet, trusted=trusted_keys(args.pubkey))
    rows = [_row(r, view.now) for r in view.rows]
    _print(rows[: args.rows] if args.rows else rows, view, pct)  # fabric runs apart: not nodes
    if args.csv:
        _write(Path(args.csv), lambda f: _csv(f, rows))
    if args.html:
        from nodeqc.cli.fleetpage import page_dir_of, render_html

        page = render_html(view, rows, pct, min_fleet, page_dir_of(Path(args.html)))
        _write(Path(args.html), lambda f: f.write(page))
    return 0


def _row(r: Any, now: Any) -> dict[str, Any]:
    return {"node": r.node, "hostname": r.hostname, "sku": r.sku, "result": r.result, "qualified": r.qualified,
            "finished_at": r.finished_at, "age": r.age(now), "valid_until": r.valid_until or "",
            "expired": r.expired(now), "problems": "; ".join(r.problems(now)),
            "outliers": "; ".join(o.describe() for o in r.outliers), "failed": "; ".join(r.failed),
            "report": str(r.report), "warned": "; ".join(r.warned), "bad": r.has_problems(now)}


# The widest each column of the fleet's table may be (a longer cell is cut with '…': the CSV and the
# page hold it whole): NODE, HOST, RESULT, AGE, VALID UNTIL, PROBLEMS, WORST OUTLIER.
CAPS = [24, 20, 20, 5, 20, 100, 60]


def _print(rows: list[dict[str, Any]], view: Any, pct: float) -> None:
    from nodeqc.archive.fleet import fabric_failed
    from nodeqc.core.text import table

    if rows:
        body = [[row["node"], row["hostname"], row["result"], row["age"], row["valid_until"] or "-",
                 row["problems"] or "-", r.outliers[0].describe() if r.outliers else "-"]
                for row, r in zip(rows, view.rows)]
        # Every field comes from a report a node wrote: table() escapes it, as `show` does, so a host
        # name holding a line break or an escape sequence cannot forge a row or repaint the terminal.
        for line in table(["NODE", "HOST", "RESULT", "AGE", "VALID UNTIL", "PROBLEMS", "WORST OUTLIER"], body,
                          CAPS, right=frozenset({3})):
            print(line)
    if view.fabrics:
        print()
        print("fabric runs (many nodes' pairs, not nodes; `nodeqc history --node NODE` lists a node's):")
        for line in table(["FABRIC", "RESULT", "FINISHED", "FAILED NODES", "REPORT"],
                          [[f.node, f.result, f.finished_at or "-", fabric_failed(f) or "-", f.path.name]
                           for f in view.fabrics], [24, 20, 20, 40, 80]):
            print(line)
    nodes = len(view.rows)
    bad = sum(1 for r in view.rows if r.has_problems(view.now))
    fabric = f", {len(view.fabrics)} fabric run(s) listed apart" if view.fabrics else ""
    print(f"nodeqc: {nodes} node(s), {bad} with problems, {len(view.outliers)} outlier figure(s) "
          f"(more than {pct:g}% from their fleet median){fabric}", file=sys.stderr)


def _write(path: Path, fill: Any) -> None:
    """The whole file at once through nodeqc.core.safefile: never through a link planted at its name or
    at a temporary one, and the old file stays whole if the write fails."""
    from nodeqc.core.safefile import write_atomic

    text = io.StringIO(newline="")
    fill(text)
    write_atomic(path, text.getvalue().encode("utf-8"))


def _csv(f: Any, rows: list[dict[str, Any]]) -> None:
    w = csv_writer(f, CSV_FIELDS)
    w.writeheader()
    for row in rows:
        w.writerow({k: row[k] for k in CSV_FIELDS})
