"""The argument parser of every nodeqc command (`nodeqc`, its report tools, `baseline`, `fleet`,
`fabric` and `fabric worker`): argparse, but a usage mistake is one line and exit 2, not a usage
dump. A module of its own so that each command's module takes it from here, not from another's."""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Any

from nodeqc.core.errors import UsageError
from nodeqc.core.text import is_unicode

# The longest duration an option (--burn-in) or a profile's setting ([run] burn_in_s) takes: a month.
# Longer is a typo, not a burn-in.
MAX_DURATION_S = 30 * 86400


# What an option's number is written as: ASCII digits. int() and float() also take other scripts'
# digits ("٣", "４"), "1_000", padding and, for float, "nan" and "inf" (2026-11-29 fuzzing: --gpus ٨,
# --simulate ' 4', --port １５２０１ were taken).
_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def ascii_number(text: str, whole: bool = False) -> float | int:
    """The number `text` writes in ASCII decimal notation (a whole one with `whole`); ValueError else."""
    if not (_WHOLE if whole else _DECIMAL).fullmatch(text):
        raise ValueError(f"not a {'whole ' if whole else ''}number: {text[:40]!r}")
    return int(text) if whole else float(text)


def whole_number(text: str) -> int:
    """An argparse type: a whole number in ASCII digits (the option's own check bounds it)."""
    try:
        return int(ascii_number(text, whole=True))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None


def decimal_number(text: str) -> float:
    """An argparse type: a number in ASCII decimal notation (the option's own check bounds it)."""
    try:
        return float(ascii_number(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None


def number_in(low: float, high: float, whole: bool = False, above: bool = False) -> Any:
    """An argparse type: a finite number (a whole one with `whole`) from low (above it, with `above`)
    to high. float() takes "nan", "inf" and "1e308", and a worker handed one ended in an internal
    error or ran unbounded."""
    what = (f"a whole number from {low:.0f} to {high:.0f}" if whole else
            f"a number above {low:g}, at most {high:g}" if above else f"a number from {low:g} to {high:g}")

    def parse(text: str) -> float | int:
        try:
            value = ascii_number(text, whole)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}") from None
        if isinstance(value, int) and value.bit_length() > 64:  # math.isfinite(10**400) raises OverflowError
            raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}")
        if not (math.isfinite(value) and (low < value if above else low <= value) and value <= high):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}")
        return value

    return parse


PATH_METAVARS = frozenset({"FILE", "DIR", "PNG", "PEM", "PATH", "REPORT", "CAPTURE"})


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit 2, not a usage dump."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # A value starting with a minus and a digit is a value (`--burn-in -1h`, `--limit -3`), to be
        # refused by its own check, not an unknown option ("expected one argument"). Our options all
        # start with letters, so nothing is lost.
        self._negative_number_matcher = re.compile(r"^-\d")

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_args(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        # Bytes that are not UTF-8 arrive as lone surrogates, which no report, journal or archive can
        # hold: a --repair of them ran every check, then lost the report to an internal error (the
        # 2026-11-29 fuzzing). Refused before anything runs, naming the argument.
        given = args[0] if args and args[0] is not None else sys.argv[1:]
        for n, arg in enumerate(given, 1):
            if isinstance(arg, str) and not is_unicode(arg):
                raise UsageError(f"argument {n} ({ascii(arg)[:80]}) is not UTF-8 text: give names, paths "
                                 "and notes in UTF-8")
        parsed = super().parse_args(*args, **kwargs)
        # A file or directory option given an empty path (an unset variable: --out "$DIR") fell back
        # to the default place (`fabric --out ""`: the archive) or to stdout (`export --output ""`).
        # Any other option given an empty value was as quietly taken for none: `--simulate ""` ran on
        # the real GPUs, `--only ""` ran everything, `--repair ""` recorded no repair.
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            given = value is not action.default and value is not action.const  # not `--retest` alone
            values = value if isinstance(value, list) and action.option_strings else [value]
            if not given or not any(isinstance(v, str) and not v.strip() for v in values):
                continue
            if action.metavar in PATH_METAVARS:
                raise UsageError(f"{'/'.join(action.option_strings)}: an empty path; give a "
                                 f"{'directory' if action.metavar == 'DIR' else 'file'}")
            if action.option_strings:
                raise UsageError(f"{'/'.join(action.option_strings)}: an empty value; give "
                                 f"{action.metavar or action.dest.upper()} (see {self.prog} --help)")
        return parsed
