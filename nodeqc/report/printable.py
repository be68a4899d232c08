"""The printable summary of a signed report: read and verified, laid out the answer first, and printed
as a PDF with Qt's own printing. The app's Export PDF and `nodeqc show REPORT --pdf FILE` make the
same document. Printing needs PySide6 (the GUI extra) but no window or display; everything else
here is plain Python.

Everything here reads the report file, so what is printed is what was signed.
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeqc.core.codes import not_applicable_reason
from nodeqc.core.errors import UsageError
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.safefile import write_atomic
from nodeqc.core.text import clean, clean_lines, subjects_text
from nodeqc.report.answer import COLOURS, REPAIR, RETEST_OF, SHOWN_ORDER, WORDS, answer_of, repair_rows
from nodeqc.report.envelope import load
from nodeqc.report.keys import trusted_keys
from nodeqc.report.render import grouped, run_length, shared_detail


@dataclass
class LoadedReport:
    path: Path
    predicate: dict[str, Any]
    verified: bool
    trust: str  # one line: verified by which key, or why not

    @property
    def state(self) -> str:
        """The colour key: aborted, or the verdict."""
        if self.predicate.get("status") == "aborted":
            return "aborted"
        return {"PASS": "pass", "ERROR": "error"}.get(str(self.predicate.get("verdict")), "fail")

    @property
    def word(self) -> str:
        return "ABORTED" if self.state == "aborted" else str(self.predicate.get("verdict", "?"))


def load_report(path: Path) -> LoadedReport:
    """Read and verify a report as `nodeqc show` does (nodeqc.report.envelope.load: signature and
    evidence); UsageError if it is not a readable nodeqc report."""
    loaded = load(path, trusted_keys())
    if loaded.statement is None:
        raise UsageError(f"{path}: not a readable nodeqc report: {loaded.unreadable}")
    return LoadedReport(path, loaded.statement["predicate"], loaded.verified is not None, loaded.trust)


def summary_html(report: LoadedReport) -> str:
    """A printable summary, the answer first: the verdict, then each part that failed with what
    failed and what to do, then the run's particulars, then every check (grouped as `nodeqc show`
    groups them: one row per check for the subjects that passed)."""
    p = report.predicate
    node, prof = p.get("node", {}), p.get("profile", {})
    the_answer = answer_of(p)  # the same answer as the run's summary, the banner and `nodeqc show`
    background, text = COLOURS[the_answer.state]
    e = lambda v: breakable(escaped(v))  # noqa: E731
    out = [
        "<h1>nodeqc qualification report</h1>",
        f"<table width='100%' cellpadding='10'><tr><td style='background:{background}; color:{text}'>"
        f"<span style='font-size:28pt; font-weight:bold'>{e(the_answer.word)}</span>"
        + ("<br><b>A check could not run: the node is not qualified; nothing says its hardware is bad.</b>"
           if the_answer.state == "error" else "")
        + ("<br><b>The run was aborted: the node is not qualified.</b>" if the_answer.state == "aborted" else "")
        + ("<br><b>SIMULATED: not a qualification of real hardware</b>" if p.get("simulated") else "")
        + ("" if report.verified else f"<br><b>NOT VERIFIED: do not rely on this report</b> ({e(report.trust)})")
        + "</td></tr></table>",
        f"<p style='font-size:11pt'>{e(the_answer.tally)}</p>",
        f"<p>Node <b>{e(node.get('hostname'))}</b> serial <b>{e(node.get('system_serial'))}</b> "
        f"({e(node.get('system_vendor'))} {e(node.get('system_model'))})</p>",
    ]
    if the_answer.partial:
        out.append(f"<p><b>Partial run ({e(the_answer.partial)}): not a qualification.</b></p>")
    if the_answer.findings:
        parts = len({f.subject for f in the_answer.findings})
        out.append(f"<h2>What failed and what to do ({parts} part{'s' * (parts != 1)})</h2>")
        by_part: dict[str, list[Any]] = {}
        for f in the_answer.findings:
            by_part.setdefault(f.subject, []).append(f)
        for group in by_part.values():
            worst = min(group, key=lambda f: SHOWN_ORDER[f.verdict])
            by_code: dict[Any, list[Any]] = {}
            for f in group:
                by_code.setdefault(f.code, []).append(f)
            items = "".join(
                f"<li>{e(same[0].finding)} [{e(same[0].code)}] <i>({e(', '.join(dict.fromkeys(f.check for f in same)))})</i>"
                + (f" <b>{e(same[0].repair)}</b>" if same[0].repair else "")
                + f"<br><b>What to do:</b> {e(' '.join(dict.fromkeys(f.remediation for f in same)))}</li>"
                for same in by_code.values())
            out.append(f"<p><b>{e(worst.verdict.upper())} {e(group[0].part.identity)}</b></p><ul>{items}</ul>")
    if the_answer.not_applicable:
        out.append(f"<p>Not applicable to these GPUs: {e('; '.join(the_answer.not_applicable))}</p>")
    if the_answer.repair:
        # "Repair" where the technician said what was repaired (--repair); a re-test without it, such
        # as the automatic one of a node with an earlier report, is a re-test. Its rows are a table
        # like the run's: the terminal's padded lines did not line up in the PDF's proportional type.
        title = "Repair" if the_answer.repair.get("action") else "Re-test"
        rows = [(e(label) if label in (REPAIR, RETEST_OF) else f"<b>{e(label)}</b>", e(text))
                for label, text in repair_rows(the_answer.repair)]
        out.append(f"<h2>{title}</h2>{field_table(rows)}")
    out += [
        "<h2>The run</h2>",
        field_table([
            ("Driver", f"{e(node.get('driver_version'))}, CUDA {e(node.get('cuda_version'))}, "
                       f"{len(p.get('gpus', []))} GPU(s)"),
            ("Profile", f"{e(prof.get('name'))} (sha256 {e(str(prof.get('sha256'))[:16])})"
                        f"{' quick' if p.get('quick') else ''}"),
            ("Run", f"{e(p.get('started_at'))} to {e(p.get('finished_at'))} ({e(run_length(p))})"),
            ("Operator", e(p.get("operator")) + (f", ticket {e(p['ticket'])}" if p.get("ticket") else "")),
            ("Report", e(Path(report.path).resolve())),
            ("Signature", e(report.trust.removeprefix("signature: ")))]),
    ]
    gpus = [g for g in p.get("gpus", []) if isinstance(g, dict)]
    if gpus:
        # Which parts this report qualified, as the chassis and the RMA form name them: "8 GPU(s)" said
        # nothing of the serials a PASS certifies (the 2026-11-28 review).
        cells = "".join(f"<tr><td>{e(g.get('subject'))}</td><td>{e(g.get('bus_id'))}</td><td>{e(g.get('serial'))}</td>"
                        f"<td>{e(g.get('name'))}</td><td>{e(g.get('vbios'))}</td></tr>" for g in gpus)
        out.append(f"<h2>The GPUs ({len(gpus)})</h2><table width='100%' border='1' cellspacing='0' cellpadding='2' "
                   f"style='font-size:8pt'><thead><tr><th>GPU</th><th>PCI bus id</th><th>Serial</th><th>Model</th>"
                   f"<th>VBIOS</th></tr></thead>{cells}</table>")
    checks = [CheckResult.from_dict(c) for c in p.get("checks", [])]
    rows = "".join(_check_row(group) for group in grouped(checks))
    out.append(f"<h2>All checks ({len(checks)} results)</h2><p>{e(results_counted(checks))}</p><table width='100%' border='1' cellspacing='0' "
               f"cellpadding='2' style='font-size:7pt'><thead><tr><th>Check</th><th>Subject</th><th>Verdict</th>"
               f"<th>Message</th></tr></thead>{rows}</table>")
    return "".join(out)


def results_counted(checks: list[CheckResult]) -> str:
    """'264 passed, 2 failed, 9 not run, 8 not applicable': every result the table lists, counted, so
    the table's number adds up. The headline's tally leaves out what does not apply to these GPUs."""
    n_a = sum(1 for c in checks if c.verdict is Verdict.SKIP and not_applicable_reason(c.code))
    counts = [(sum(1 for c in checks if c.verdict is v), word) for v, word in (
        (Verdict.PASS, "passed"), (Verdict.WARN, "warned"), (Verdict.FAIL, "failed"), (Verdict.ERROR, "could not run"))]
    counts += [(sum(1 for c in checks if c.verdict is Verdict.SKIP) - n_a, "not run"), (n_a, "not applicable")]
    return ", ".join(f"{n} {word}" for n, word in counts if n) or "none"


def field_table(rows: list[tuple[str, str]]) -> str:
    """A block of labelled fields (the run, the repair), as HTML: a label column that does not wrap
    and a value column beside it, so every value starts at one left edge and wraps within it."""
    return ("<table cellpadding='2'>"
            + "".join(f"<tr><td nowrap>{label}</td><td>{value}</td></tr>" for label, value in rows) + "</table>")


LONG_WORD = 24  # characters: a longer run without a space (a path, a code) gets places to break


def escaped(value: Any) -> str:
    """HTML of a value that may be the node's: its control and format characters shown as escapes
    (a host name's U+202E reversed the serial and the verdict beside it on the page: the 2026-11-29
    fuzzing), line breaks kept."""
    return html.escape(clean_lines(str(value)))


def breakable(text: str) -> str:
    """Escaped HTML whose long words may break (after / _ . , : = -) instead of running off the page:
    a report path or [ROW_REMAP_PENDING] at a line's end was cut at the right margin. Short words are
    left whole, so the PDF's text searches as it reads."""
    def soften(m: re.Match[str]) -> str:
        return re.sub(r"([/_.,:=-])", "\\1&#8203;", m.group(0))

    return re.sub(rf"[^\s<>&;]{{{LONG_WORD},}}", soften, text)


def _check_row(group: list[CheckResult]) -> str:
    """One row: a result, or the subjects of a check that share a verdict, with what they share."""
    first = group[0]
    state = "n/a" if not_applicable_reason(first.code) else first.verdict.value
    message = first.message if len(group) == 1 else shared_detail(group)
    code = f" [{first.code}]" if first.code and first.verdict.blocks_qualification else ""
    # A break allowed after each comma: a long list of subjects wraps instead of running off the cell.
    subjects = escaped(subjects_text([r.subject for r in group])).replace(",", ",&#8203;")
    # On paper a failed row must stand out from the passes: its verdict in the banner's colours.
    marked = state in ("fail", "error", "warn")
    background, colour = COLOURS[state]
    cell = f"<td style='background:{background}; color:{colour}'>" if marked else "<td>"
    return (f"<tr><td>{escaped(first.name)}</td><td>{subjects}</td>"
            f"{cell}<b>{WORDS[state]}</b></td><td>{escaped(message + code)}</td></tr>")


def export_pdf(report: LoadedReport, pdf_path: Path) -> None:
    """Print the summary to pdf_path; UsageError, one line, if PySide6 is missing or Qt wrote nothing."""
    # Qt prints into a private directory of ours; the file then goes in place as every output does
    # (nodeqc.core.safefile), so a link planted at the name cannot redirect it.
    with tempfile.TemporaryDirectory(prefix="nodeqc-pdf-") as private:
        printed = Path(private) / "summary.pdf"
        try:
            _print_pdf(report, printed)
        except _NeedsQt as e:  # named for the file the user asked for, not our private one
            raise UsageError(f"{pdf_path}: {e}") from None
        if not printed.is_file():
            raise UsageError(f"{pdf_path}: could not write the PDF")
        write_atomic(pdf_path, printed.read_bytes())


class _NeedsQt(Exception):
    """PySide6 cannot be imported; export_pdf says so naming the user's file."""


def _print_pdf(report: LoadedReport, pdf_path: Path) -> None:
    try:
        from PySide6.QtGui import QFont, QGuiApplication, QPageLayout, QPageSize, QTextDocument
        from PySide6.QtPrintSupport import QPrinter
    except ImportError as e:
        raise _NeedsQt(f"printing a PDF needs PySide6 (pip install 'nodeqc[gui]'): {e}") from None
    app = QGuiApplication.instance()
    if app is None:  # `nodeqc show --pdf` on a provisioning host: no app running, often no display
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QGuiApplication(["nodeqc"])
    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    printer.setOutputFormat(QPrinter.OutputFormat.PdfFormat)
    printer.setOutputFileName(str(pdf_path))
    printer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                                      printer.pageLayout().margins()))
    doc = QTextDocument()
    doc.setDefaultFont(QFont("Sans Serif", 9))
    doc.setHtml(summary_html(report))
    _print_pages(doc, printer, page_footer(report))


def page_footer(report: LoadedReport) -> str:
    """What every page says at its foot: a page that comes loose from the rest (the checks table
    runs to several) still names the node, the verdict and the report."""
    p = report.predicate
    node = p.get("node", {})
    simulated = " (SIMULATED)" if p.get("simulated") else ""
    verified = "" if report.verified else " NOT VERIFIED"
    # The verdict and its marks first, and each of the node's own words on one line, cut short: the
    # foot holds two lines, and a host name of two lines ending "PASS" (or of 160 characters) left a
    # failed node's pages reading PASS, without NOT VERIFIED (the 2026-11-29 fuzzing).
    return (f"{answer_of(p).word}{simulated}{verified} · {_short(node.get('hostname'))} · serial "
            f"{_short(node.get('system_serial'))} · {_short(p.get('finished_at'))} · {_short(report.path.name, 60)}")


def _short(value: Any, most: int = 40) -> str:
    text = clean(value)
    return text if len(text) <= most else text[:most - 1] + "…"


def _print_pages(doc: Any, printer: Any, footer: str) -> None:
    """Print the document page by page as QTextDocument.print_ does (laid out for the printer, 2 cm
    margins), with `footer` and "page N of M" at the foot of every page; print_ writes only the
    page's number."""
    from PySide6.QtCore import QPointF, QRectF, QSizeF, Qt
    from PySide6.QtGui import QFontMetricsF, QPainter
    from PySide6.QtPrintSupport import QPrinter

    doc.documentLayout().setPaintDevice(printer)
    margin = 2 / 2.54 * printer.logicalDpiY()  # in the printer's pixels
    frame = doc.rootFrame().frameFormat()
    frame.setMargin(2 / 2.54 * 96)  # a frame's margin is in CSS pixels (96 an inch), scaled to the printer
    doc.rootFrame().setFrameFormat(frame)
    page = printer.pageRect(QPrinter.Unit.DevicePixel)
    doc.setPageSize(QSizeF(page.width(), page.height()))
    body = QRectF(0, 0, page.width(), page.height())
    pages = doc.pageCount()
    painter = QPainter(printer)
    font = doc.defaultFont()
    font.setPointSizeF(7)
    line = QFontMetricsF(font, printer).height()
    foot = QRectF(margin, body.height() - margin + line, body.width() - 2 * margin, line * 2)
    try:
        for n in range(pages):
            if n:
                printer.newPage()
            painter.save()
            painter.translate(QPointF(0, -n * body.height()))
            doc.drawContents(painter, body.translated(0, n * body.height()))
            painter.restore()
            painter.setFont(font)
            number = f"page {n + 1} of {pages}"
            painter.drawText(foot, int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop), number)
            room = foot.adjusted(0, 0, -QFontMetricsF(font, printer).horizontalAdvance(number + "    "), 0)
            painter.drawText(room, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap),
                             footer)
    finally:
        painter.end()
