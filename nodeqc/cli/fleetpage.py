"""The page `nodeqc fleet --html FILE` writes: one self-contained file that works offline.

The node table comes first, the nodes that need work at its top (not qualified, then expired or
with outliers, then qualified with warnings, then the rest), each naming its problems as the
terminal's table does (NodeRow.problems) and linking to its report. A small inline script sorts the
table by a column (click its header; `#sort=COLUMN` in the address clicks it) and filters it (a
text box; `#filter=TEXT` fills it in); the Content-Security-Policy allows that script and the
style sheet by their sha256 and nothing else: nothing is fetched. Below it, one inline SVG plot per SKU and measure with its
scale, limit, median and each outlier named.

Every host name, node name, check name and message comes from a report a node wrote: all of it
goes through html.escape, and the page holds no JSON or script built from it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import os
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nodeqc.core.figures import measure_label

MAX_PLOTS = 24
NAMED_OUTLIERS = 4  # named in a plot; the caption names them all
WORDS = {0: "fail", 1: "warn", 2: "warn", 3: "ok"}
# Not qualified with nothing failed (a simulated, replayed or partial PASS): not a "fail".
UNQUALIFIED = "unqualified"

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th button { font: inherit; font-weight: bold; border: 0; background: none; padding: 0; cursor: pointer; }
th[aria-sort=ascending] button::after { content: " \\25B2"; }
th[aria-sort=descending] button::after { content: " \\25BC"; }
tr.s0 td { background: #fde0e0; } tr.s1 td { background: #fdf0d8; } tr.s2 td { background: #fdf8e4; }
td.st { font-weight: bold; } tr.s0 td.st { color: #a00; } tr.s1 td.st, tr.s2 td.st { color: #850; }
#q { font-size: 14px; padding: 3px 6px; width: 24em; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; } figcaption { font-size: 12px; max-width: 460px; }
.small { color: #850; }
"""

# Sorts by a column (its cells' data-sort when they have one, numerically where the header says
# data-num), ties in the page's order; filters on every word typed. Built from nothing in a report.
SCRIPT = """
(function () {
  var table = document.getElementById("nodes"), body = table.tBodies[0];
  var box = document.getElementById("q"), shown = document.getElementById("shown");
  var rows = Array.prototype.slice.call(body.rows), heads = table.tHead.rows[0].cells;
  rows.forEach(function (r, i) { r.setAttribute("data-i", i); });
  function key(r, i) {
    var c = r.cells[i], s = c.getAttribute("data-sort");
    return s !== null ? s : c.textContent.toLowerCase();
  }
  function filter() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean), n = 0;
    rows.forEach(function (r) {
      var text = r.textContent.toLowerCase();
      var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      r.hidden = !ok;
      if (ok) { n++; }
    });
    shown.textContent = n + " of " + rows.length + " node(s) shown";
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    th.querySelector("button").addEventListener("click", function () {
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1, num = th.hasAttribute("data-num");
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      rows.sort(function (a, b) {
        var x = key(a, i), y = key(b, i);
        var d = num ? parseFloat(x) - parseFloat(y) : x.localeCompare(y, undefined, {numeric: true});
        return d * dir || a.getAttribute("data-i") - b.getAttribute("data-i");
      });
      var f = document.createDocumentFragment();
      rows.forEach(function (r) { f.appendChild(r); });
      body.appendChild(f);
    });
  });
  box.addEventListener("input", filter);
  function decoded(t) {  // "#filter=%" threw URIError, and the filter box never appeared
    try { return decodeURIComponent(t); } catch (e) { return t; }
  }
  var m = /[#&]filter=([^&]*)/.exec(location.hash), s = /[#&]sort=([^&]*)/.exec(location.hash);
  if (m) { box.value = decoded(m[1]); }
  Array.prototype.forEach.call(heads, function (th) {
    if (s && th.textContent === decoded(s[1])) { th.querySelector("button").click(); }
  });
  box.hidden = false;
  filter();
})();
"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


CSP = (f"default-src 'none'; script-src '{_sha256(SCRIPT)}'; style-src '{_sha256(STYLE)}'; img-src data:; "
       "base-uri 'none'; form-action 'none'")
COLUMNS = (("status", True), ("node", False), ("host", False), ("sku", False), ("result", False), ("age", True),
           ("valid until", False), ("problems", False), ("outliers", False))


def report_link(report: str, page_dir: Path | None) -> str:
    """A link to a report: relative where it lies under the page's directory (the page moves with
    the archive), else a file:// URI; percent-encoded either way, so no name makes it a scheme."""
    path = Path(report)
    try:
        full = path.resolve()
        if page_dir is not None:
            rel = full.relative_to(page_dir.resolve())
            return quote(rel.as_posix())
        return full.as_uri()
    except ValueError:
        return full.as_uri()


def render_html(view: Any, rows: list[dict[str, Any]], pct: float, min_fleet: int,
                page_dir: Path | None = None) -> str:
    e = html.escape
    now = view.now
    # Stable: newest first within each severity, a failure before a pass only unqualified (simulated).
    order = sorted(range(len(rows)), key=lambda i: (view.rows[i].severity(now), 0 if view.rows[i].failing else 1))
    counts = [0, 0, 0, 0]
    for r in view.rows:
        counts[r.severity(now)] += 1
    head = "".join(f"<th{' data-num' if num else ''}><button type=\"button\">{e(h)}</button></th>"
                   for h, num in COLUMNS)
    body = "".join(_table_row(rows[i], view.rows[i].severity(now), now, page_dir, view.rows[i].failing)
                   for i in order)
    marked = {(o.figure.sku, o.figure.measure) for o in view.outliers}
    # Plots: the measures with outliers first, then the largest fleets.
    dists = sorted(view.distributions.values(), key=lambda d: ((d.sku, d.measure) not in marked, -d.count, d.measure))
    plots = [_strip(d, [o for o in view.outliers if (o.figure.sku, o.figure.measure) == (d.sku, d.measure)],
                    pct, min_fleet) for d in dists[:MAX_PLOTS]]
    more = (f"<p>{len(dists) - MAX_PLOTS} more SKU and measure pair(s) not plotted (their outliers are in the "
            f"table).</p>" if len(dists) > MAX_PLOTS else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nodeqc fleet</title>
<style>{STYLE}</style></head><body>
<h1>nodeqc fleet</h1>
<p>{len(view.rows)} node(s) at {e(now.strftime('%Y-%m-%d %H:%M UTC'))}: {counts[0]} not qualified, {counts[1]}
expired or with outliers, {counts[2]} qualified with warnings, {counts[3]} with nothing to say;
{len(view.outliers)} outlier figure(s). Click a column's header to sort by it; type to filter the rows.</p>
<h2>Nodes, those that need work first</h2>
<p><input id="q" type="search" placeholder="filter: host, check, part..." aria-label="filter the nodes" hidden>
<span id="shown">{len(rows)} node(s)</span></p>
<table id="nodes"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
{_fabrics(view.fabrics, page_dir)}<h2>Figures by SKU and measure</h2>
<p>An outlier is a figure more than {pct:g}% on the bad side of the median of its SKU and measure, judged
only where {min_fleet} nodes or more of the SKU have the figure. Each plot shows every figure of one SKU
and measure (dots, and their histogram), its scale in the measure's unit, the median (solid line), the
outlier limit (dashed) and the outliers in red, each named.</p>
<div class="plots">{''.join(plots)}</div>{more}
<script>{SCRIPT}</script>
</body></html>
"""


def _fabrics(fabrics: list[Any], page_dir: Path | None) -> str:
    """The fabric runs, apart from the nodes: many nodes' pairs, not a node (nodeqc.archive.fleet)."""
    from nodeqc.archive.fleet import fabric_failed

    if not fabrics:
        return ""
    e = html.escape
    rows = "".join(f'<tr><td><a href="{e(report_link(str(f.path), page_dir))}">{e(f.node)}</a></td>'
                   f'<td>{e(f.result)}</td><td>{e(f.finished_at or "-")}</td><td>{e(fabric_failed(f) or "-")}</td></tr>'
                   for f in fabrics)
    return (f'<h2>Fabric runs</h2>\n<p>{len(fabrics)} fabric run(s): many nodes tested in pairs, not nodes, so '
            f'not counted above.</p>\n<table id="fabrics"><thead><tr><th>fabric</th><th>result</th>'
            f'<th>finished</th><th>nodes not passed</th></tr></thead><tbody>{rows}</tbody></table>\n')


def _table_row(row: dict[str, Any], severity: int, now: datetime, page_dir: Path | None, failing: bool = True) -> str:
    e = html.escape
    try:
        seconds = max(0.0, (now - datetime.fromisoformat(row["finished_at"].replace("Z", "+00:00"))).total_seconds())
    except (ValueError, TypeError, AttributeError):
        seconds = math.inf
    href = report_link(row["report"], page_dir)
    word = UNQUALIFIED if severity == 0 and not failing else WORDS[severity]
    return (f'<tr class="s{severity}"><td class="st" data-sort="{severity}">{word}</td>'
            f'<td><a href="{e(href)}" title="{e(row["report"])}">{e(row["node"])}</a></td>'
            f'<td>{e(row["hostname"])}</td><td>{e(row["sku"])}</td><td>{e(row["result"])}</td>'
            f'<td data-sort="{seconds:.0f}">{e(row["age"])}</td><td>{e(row["valid_until"] or "-")}</td>'
            f'<td>{e(row["problems"] or "-")}</td><td>{e(row["outliers"] or "-")}</td></tr>')


def _nice(span: float) -> float:
    """A tick step of 1, 2 or 5 times a power of ten giving about five ticks over span."""
    raw = span / 5
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _ticks(lo: float, hi: float) -> list[float]:
    step = _nice(hi - lo)
    first = math.ceil(lo / step - 1e-9) * step
    count = int(math.floor((hi - first) / step + 1e-9)) + 1
    return [round(first + k * step, 10) for k in range(max(count, 0))]


def _strip(d: Any, outs: list[Any], pct: float, min_fleet: int) -> str:
    """One distribution as an inline SVG strip plot (a dot per figure, jittered, one per pixel)
    with a histogram underneath, an axis with ticks in the measure's unit, and each outlier named."""
    e = html.escape
    width, pad = 440, 34
    judged = d.nodes >= min_fleet and d.median > 0
    lower_better = d.unit == "us"
    limit = d.median * (1 + pct / 100) if lower_better else d.median * (1 - pct / 100)
    lo, hi = min(d.values), max(d.values)
    if judged:
        lo, hi = min(lo, limit), max(hi, limit)
    title = f"{d.sku}: {measure_label(d.measure)}, {d.unit}"
    if not math.isfinite((hi - lo) * 4):  # figures near the largest float (a report's, 2026-11-29): no scale spans them
        return (f"<figure><figcaption><b>{e(title)}</b>: {d.count} figures from {d.nodes} nodes, from {lo:g} to "
                f"{hi:g}: too far apart to draw</figcaption></figure>")
    if hi - lo < max(abs(hi), 1.0) * 1e-3:  # all (nearly) one value: a scale around it
        half = max(abs(hi), 1.0) * 0.01
        lo, hi = lo - half, hi + half
    ticks = _ticks(lo, hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    span = hi - lo

    def x(v: float) -> float:
        return pad + (v - lo) / span * (width - 2 * pad)

    bins = [0] * 40
    for v in d.values:
        bins[min(39, int((v - lo) / span * 40))] += 1
    top = max(bins) or 1
    bw = (width - 2 * pad) / 40
    parts = [f'<rect x="{pad + i * bw:.1f}" y="{110 - 45 * b / top:.1f}" width="{bw - 1:.1f}" '
             f'height="{45 * b / top:.1f}" fill="#9bb7d4"/>' for i, b in enumerate(bins) if b]
    seen = set()
    for i, v in enumerate(d.values):  # one dot per pixel and jitter row: 8,000 GPUs stay a small page
        spot = (round(x(v)), i % 7)
        if spot not in seen:
            seen.add(spot)
            parts.append(f'<circle cx="{spot[0]}" cy="{30 + spot[1] * 3}" r="2" fill="#246"/>')
    axis = [f'<line x1="{pad}" x2="{width - pad}" y1="112" y2="112" stroke="#555"/>']
    for t in ticks:
        axis.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="112" y2="116" stroke="#555"/>'
                    f'<text x="{x(t):.1f}" y="127" font-size="10" text-anchor="middle">{t:g}</text>')
    axis.append(f'<text x="{width / 2:.0f}" y="141" font-size="10" text-anchor="middle">'
                f'{e(measure_label(d.measure, with_check=False))} ({e(d.unit)})</text>')
    marks = [f'<line x1="{x(d.median):.1f}" x2="{x(d.median):.1f}" y1="15" y2="112" stroke="#000"/>'
             f'<text x="{x(d.median):.1f}" y="11" font-size="10" text-anchor="middle">median {d.median:g}</text>']
    if judged:
        anchor = "end" if lower_better else "start"
        marks.append(f'<line x1="{x(limit):.1f}" x2="{x(limit):.1f}" y1="15" y2="112" stroke="#c00" '
                     f'stroke-dasharray="4 3"/><text x="{x(limit) + (-3 if lower_better else 3):.1f}" y="24" '
                     f'font-size="9" fill="#c00" text-anchor="{anchor}">limit {limit:.4g}</text>')
    for k, o in enumerate(outs):
        f, cx = o.figure, x(o.figure.value)
        name = f"{f.node} {f.subject}"
        marks.append(f'<circle cx="{cx:.1f}" cy="{30 + (k % 7) * 3}" r="3" fill="#c00"><title>{e(name)}: '
                     f'{f.value:g} {e(f.unit)}</title></circle>')
        if k < NAMED_OUTLIERS:
            right = cx > width / 2
            marks.append(f'<text x="{cx + (-5 if right else 5):.1f}" y="{62 + 11 * k}" font-size="10" fill="#c00" '
                         f'text-anchor="{"end" if right else "start"}" stroke="#fff" stroke-width="3" '
                         f'paint-order="stroke">{e(name)} {f.value:g}</text>')
    if not judged:
        why = (f"too small to judge: {d.nodes} node(s) of this SKU, fewer than min_fleet {min_fleet}"
               if d.nodes < min_fleet else "not judged: the median is not above zero")
        verdict = f'<span class="small">{e(why)}</span>'
    elif outs:
        verdict = f"{len(outs)} outlier(s): " + ", ".join(
            e(f"{o.figure.node} {o.figure.subject} {o.figure.value:g} {o.figure.unit} ({o.off_pct:.1f}% off)")
            for o in outs)
    else:
        verdict = "no outliers"
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="146" role="img" '
            f'aria-label="{e(title)}">{"".join(parts)}{"".join(axis)}{"".join(marks)}</svg>'
            f'<figcaption><b>{e(title)}</b>: {d.count} figures from {d.nodes} nodes, MAD {d.mad:.3g}; '
            f'{verdict}</figcaption></figure>')


def page_dir_of(path: Path) -> Path:
    return Path(os.path.abspath(path)).parent
