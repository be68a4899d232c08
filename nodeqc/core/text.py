"""Text from outside nodeqc made safe to show, and lists of subjects made short.

Text from a report, a host or a tool (a host name, a message, a serial) reaches a terminal only
through clean(): a field holding escape sequences or a line break could otherwise repaint the screen
or forge a line such as "signature: verified". A CSV cell reaches a spreadsheet only through
csv_cell().
"""

from __future__ import annotations

from typing import Any

from nodeqc.core.errors import shown


def is_digits(text: str) -> bool:
    """ASCII digits, at least one. str.isdigit() also takes "²", which int() refuses (a node's tool
    printing one ended in an internal error), and other scripts' digits ("٣", which int() reads as 3)."""
    return text.isascii() and text.isdigit()


def is_unicode(text: str) -> bool:
    """Text UTF-8 can write: JSON's "\\udcff" and a file name of other bytes (os.scandir's surrogate
    escapes) hold lone surrogates, which no UTF-8 writer (SQLite, a terminal, a CSV) takes."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def not_utf8(e: UnicodeDecodeError) -> str:
    """A file that is not UTF-8, said as a person reads it, not as the codec does."""
    return f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})"


def clean(text: Any) -> str:
    """One line of text safe for a terminal: control and format characters (C0, C1, DEL, bidi
    overrides, line and paragraph separators, line breaks) shown as escapes (errors.shown, the one
    escaping of error lines and of everything shown)."""
    text = str(text)
    return text if text.isprintable() else shown(text)


# What makes a spreadsheet read a cell as a formula (OWASP's CSV injection list): a host name set
# to =HYPERLINK(...) would otherwise be a live link, or a command, in the operator's spreadsheet.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string that starts as a formula would gets a single
    quote in front. Numbers (a negative figure) and everything not a string are left as they are:
    they are data a program reads, and no spreadsheet runs them."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_writer(f: Any, fields: Any) -> Any:
    """The one CSV writer of `fleet --csv` and `export --format csv`: rows of dicts, each cell
    through csv_cell. Lines end in CRLF (RFC 4180): the csv module quotes a cell only for the
    characters of its line end, so with a bare newline a cell holding a carriage return was written
    unquoted, and every reader ended the row there (a forged row)."""
    import csv

    class Writer(csv.DictWriter):
        def writerow(self, rowdict: Any) -> Any:
            return super().writerow({k: csv_cell(v) for k, v in rowdict.items()})

    return Writer(f, fields, lineterminator="\r\n")


def clean_lines(text: str) -> str:
    """Several lines (joined by \\n) each made safe for a terminal."""
    return "\n".join(clean(line) for line in text.split("\n"))


def subjects_text(subjects: list[str]) -> str:
    """'gpu0-2,4-7' for runs of numbered subjects of one kind; with several kinds, each kind's in
    the order it first comes ('gpu0-7,node'); names that are no run of three or more as they are."""
    if len(subjects) <= 2:
        return ",".join(subjects)
    by_kind: dict[str, list[str]] = {}
    for s in subjects:
        kind = s.rstrip("0123456789")
        by_kind.setdefault(kind if kind != s else s, []).append(s)
    return ",".join(_numbered_runs(kind, names) if len(names) > 2 and kind not in names else ",".join(names)
                    for kind, names in by_kind.items())


def _numbered_runs(kind: str, names: list[str]) -> str:
    """'gpu0,2-7' for gpu0, gpu2, gpu3, ... gpu7, in any order."""
    numbers = sorted(int(s[len(kind):]) for s in names)
    runs, start = [], numbers[0]
    for a, b in zip(numbers, numbers[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return f"{kind}{','.join(runs)}"


def fit(text: Any, width: int) -> str:
    """One cell of a table: made safe to show (clean), then cut to `width` characters with '…'."""
    shown = clean(text)
    return shown if len(shown) <= width else shown[: max(0, width - 1)] + "…"


def table(headers: list[str], rows: list[list[Any]], caps: list[int], right: frozenset[int] = frozenset()) -> list[str]:
    """Lines of a text table whose columns stay aligned: each column as wide as its widest cell up to
    its cap (a longer cell is cut with '…'), two spaces between columns; the last column is not
    padded. `right`: the columns aligned right. Every cell is made safe to show (clean)."""
    cells = [[fit(c, cap) for c, cap in zip(row, caps)] for row in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for r in cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        parts[-1] = r[-1].rjust(widths[-1]) if len(headers) - 1 in right else r[-1]
        out.append("  ".join(parts))
    return out


def few(names: list[str], most: int = 4) -> str:
    """The first `most` names, and how many more: a list said in one line however long it is."""
    return ", ".join(names[:most]) + (f" +{len(names) - most} more" if len(names) > most else "")
