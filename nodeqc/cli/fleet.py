"""`nodeqc fleet`: every node in the archive with its last verdict, age, fleet outliers and expiry,
newest problems first; `--csv FILE` and `--html FILE` write the same (the page is one file: inline
SVG plots, no script, nothing fetched)."""

from __future__ import annotations

import html
import io
import sys
from pathlib import Path
from typing import Any

from nodeqc.cli.archive import archive_parser, query
from nodeqc.core.arguments import Parser
from nodeqc.core.errors import UsageError
from nodeqc.core.text import clean, csv_writer

CSV_FIELDS = ("node", "hostname", "sku", "result", "qualified", "finished_at", "age", "valid_until", "expired",
              "problems", "outliers", "failed", "report", "warned")
MAX_PLOTS = 24


def _parser() -> Parser:
    p = archive_parser("nodeqc fleet", "The fleet from the archive: each node's last verdict, age, fleet "
                       "outliers (figures far below their SKU's median) and expiry, newest problems first.")
    p.add_argument("--profile", metavar="NAME|PATH", help="take [fleet] outlier_pct / min_fleet from this profile")
    p.add_argument("--outlier-pct", type=float, metavar="PCT", help="how far below the fleet median is an outlier "
                   "(default: the profile's, else 10)")
    p.add_argument("--min-fleet", type=int, metavar="N", help="fewest nodes of a SKU to judge outliers (default 10)")
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page with plots")
    p.add_argument("--rows", type=int, metavar="N", help="print at most N rows (files get all)")
    return p


def main(argv: list[str]) -> int:
    from nodeqc.archive.fleet import fleet
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
    outputs = [Path(f) for f in (args.csv, args.html) if f]
    for out in outputs:
        if not out.parent.is_dir():
            raise UsageError(f"{out}: {out.parent} is not a directory")
    entries = query(args)
    view = fleet(entries, pct, min_fleet)
    rows = [_row(r, view.now) for r in view.rows]
    _print(rows[: args.rows] if args.rows else rows, view, pct)
    if args.csv:
        _write(Path(args.csv), lambda f: _csv(f, rows))
    if args.html:
        _write(Path(args.html), lambda f: f.write(render_html(view, rows, pct, min_fleet)))
    return 0


def _row(r: Any, now: Any) -> dict[str, Any]:
    return {"node": r.node, "hostname": r.hostname, "sku": r.sku, "result": r.result, "qualified": r.qualified,
            "finished_at": r.finished_at, "age": r.age(now), "valid_until": r.valid_until or "",
            "expired": r.expired(now), "problems": "; ".join(r.problems(now)),
            "outliers": "; ".join(o.describe() for o in r.outliers), "failed": "; ".join(r.failed),
            "report": str(r.report), "warned": "; ".join(r.warned), "bad": r.has_problems(now)}


def _print(rows: list[dict[str, Any]], view: Any, pct: float) -> None:
    if not rows:
        return
    print(f"{'NODE':<18} {'HOST':<16} {'RESULT':<20} {'AGE':>5}  {'VALID UNTIL':<20} {'PROBLEMS':<28} WORST OUTLIER")
    for row, r in zip(rows, view.rows):
        worst = r.outliers[0].describe() if r.outliers else "-"
        # Every field comes from a report a node wrote: escaped, as `show` does, so a host name
        # holding a line break or an escape sequence cannot forge a row or repaint the terminal.
        print(clean(f"{row['node']:<18} {row['hostname']:<16} {row['result']:<20} {row['age']:>5}  "
                    f"{(row['valid_until'] or '-'):<20} {(row['problems'] or '-'):<28} {worst}"))
    nodes = len(view.rows)
    bad = sum(1 for r in view.rows if r.has_problems(view.now))
    print(f"nodeqc: {nodes} node(s), {bad} with problems, {len(view.outliers)} outlier figure(s) "
          f"(more than {pct:g}% from their fleet median)", file=sys.stderr)


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


# ---------------------------------------------------------------------- the page


def render_html(view: Any, rows: list[dict[str, Any]], pct: float, min_fleet: int) -> str:
    e = html.escape
    marked = {(o.figure.sku, o.figure.measure) for o in view.outliers}
    # Plots: the measures with outliers first, then the largest fleets.
    dists = sorted(view.distributions.values(), key=lambda d: ((d.sku, d.measure) not in marked, -d.count, d.measure))
    plots = [_strip(d, [o for o in view.outliers if (o.figure.sku, o.figure.measure) == (d.sku, d.measure)], pct)
             for d in dists[:MAX_PLOTS]]
    head = ("<tr>" + "".join(f"<th>{e(h)}</th>" for h in ("node", "host", "result", "age", "valid until",
                                                          "problems", "outliers")) + "</tr>")
    body = "".join(
        f"<tr class=\"{'bad' if row['bad'] else ''}\"><td>{e(row['node'])}</td><td>{e(row['hostname'])}</td>"
        f"<td>{e(row['result'])}</td><td>{e(row['age'])}</td><td>{e(row['valid_until'] or '-')}</td>"
        f"<td>{e(row['problems'] or '-')}</td><td>{e(row['outliers'] or '-')}</td></tr>" for row in rows)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nodeqc fleet</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }}
tr.bad td {{ background: #fde8e8; }}
.plots {{ display: flex; flex-wrap: wrap; gap: 12px; }}
figure {{ margin: 0; }} figcaption {{ font-size: 12px; }}
</style></head><body>
<h1>nodeqc fleet</h1>
<p>{len(view.rows)} node(s) at {e(view.now.strftime('%Y-%m-%d %H:%M UTC'))}; {sum(1 for r in view.rows if r.has_problems(view.now))}
with problems; {len(view.outliers)} outlier figure(s): more than {pct:g}% on the bad side of the median of their SKU and
measure (fleets of {min_fleet} nodes or more). Each plot shows every figure of one SKU and measure: the median as a
line, the outlier limit dashed, outliers in red.</p>
<div class="plots">{''.join(plots)}</div>
<h2>Nodes, newest problems first</h2>
<table>{head}{body}</table>
</body></html>
"""


def _strip(d: Any, outs: list[Any], pct: float) -> str:
    """One distribution as an inline SVG strip plot with a histogram underneath."""
    e = html.escape
    width, height, pad = 420, 120, 30
    lo, hi = min(d.values), max(d.values)
    limit = d.median * (1 - pct / 100) if d.unit not in ("us",) else d.median * (1 + pct / 100)
    lo, hi = min(lo, limit), max(hi, limit)
    span = (hi - lo) or max(abs(hi), 1.0) * 0.01

    def x(v: float) -> float:
        return pad + (v - lo) / span * (width - 2 * pad)

    bins = [0] * 30
    for v in d.values:
        bins[min(29, int((v - lo) / span * 30))] += 1
    top = max(bins) or 1
    bw = (width - 2 * pad) / 30
    bars = "".join(f'<rect x="{pad + i * bw:.1f}" y="{100 - 50 * b / top:.1f}" width="{bw - 1:.1f}" '
                   f'height="{50 * b / top:.1f}" fill="#9bb7d4"/>' for i, b in enumerate(bins) if b)
    bad = {(o.figure.value) for o in outs}
    dots = "".join(f'<circle cx="{x(v):.1f}" cy="{30 + (i % 7) * 3}" r="2" fill="{"#c00" if v in bad else "#246"}"/>'
                   for i, v in enumerate(d.values))
    title = f"{d.sku}: {d.measure} ({d.unit})"
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{e(title)}">{bars}{dots}'
            f'<line x1="{x(d.median):.1f}" x2="{x(d.median):.1f}" y1="15" y2="100" stroke="#000"/>'
            f'<line x1="{x(limit):.1f}" x2="{x(limit):.1f}" y1="15" y2="100" stroke="#c00" stroke-dasharray="4 3"/>'
            f'<text x="{pad}" y="115" font-size="10">{lo:g}</text>'
            f'<text x="{width - pad}" y="115" font-size="10" text-anchor="end">{hi:g}</text>'
            f'<text x="{x(d.median):.1f}" y="12" font-size="10" text-anchor="middle">median {d.median:g}</text>'
            f'</svg><figcaption>{e(title)}: {d.count} figures from {d.nodes} nodes, MAD {d.mad:.3g}, '
            f'{len(outs)} outlier(s)</figcaption></figure>')
