"""What more than one command module of the command line takes: the option value types (durations,
numbers above zero) and the check that an output file can be written, made before any work."""

from __future__ import annotations

import argparse
import math
import re
import tempfile
from pathlib import Path

from nodeqc.core.arguments import MAX_DURATION_S, ascii_number
from nodeqc.core.errors import UsageError

DURATION_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_DURATION = re.compile("".join(rf"(?:(?P<{u}>[0-9]+(?:\.[0-9]+)?){u})?" for u, _ in DURATION_UNITS))  # ASCII digits
DURATION_GRAMMAR = "a duration like 90s, 15m, 1h30m, 2h or 1d12h (units d, h, m, s, largest first, each number with its unit)"


def duration(text: str) -> float:
    """'8h', '90m', '1h30m', '45s', '1d' -> seconds. Every number carries its unit: '1h30' is refused,
    never taken as 1 h 30 s."""
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"expected a duration above zero, got {text!r}")
    m = _DURATION.fullmatch(text.strip().lower())
    if not text.strip() or not m or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"expected {DURATION_GRAMMAR}, got {text!r}")
    seconds = sum(float(m[u]) * factor for u, factor in DURATION_UNITS if m[u])
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration above zero, got {text!r}")
    if seconds > MAX_DURATION_S:
        raise argparse.ArgumentTypeError(f"expected a duration of at most 30d, got {text!r}")
    return seconds


def positive_int(text: str) -> int:
    try:
        value = int(ascii_number(text, whole=True))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number above zero, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above zero, got {text!r}")
    return value


def dcgm_level(text: str) -> str:
    """--dcgm: 'off' or a DCGM diagnostic level 1 to 4."""
    from nodeqc.run.dcgm import parse_level

    try:
        return parse_level(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a DCGM diagnostic level 1, 2, 3 or 4, or 'off' (or 0), got {text!r}") from None


def positive_float(text: str) -> float:
    try:
        value = float(ascii_number(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number above zero, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number above zero, got {text!r}")
    return value


def check_output_file(path: Path, option: str, suffixes: tuple[str, ...] = ()) -> None:
    """Before any work: the file named by an option can be written where it is asked for."""
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a directory; give a file name")
    if suffixes and path.suffix.lower() not in suffixes:
        raise UsageError(f"{option} {path}: expected a {' or '.join(suffixes)} file")
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"{option} {path}: no such directory {directory}")
    try:  # tried, not asked (os.access): root, read-only mounts and /proc answer it wrongly
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write in {directory}: {e.strerror}") from None
