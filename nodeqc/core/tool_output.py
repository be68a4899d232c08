"""Output of the tools nodeqc runs on the node (iperf3, ib_write_bw, fio, ethtool -m, ipmitool,
journalctl, mlxlink) and what sysfs shows: untrusted input. The node being qualified may be broken or
compromised, so its tools may print anything: another type where a number belongs, NaN, Infinity, a
number of 400 digits, a figure beyond what the link or device can carry.

One parse error and one reader of numbers serve every parser:
- `ToolOutputError`: output not in the tool's format. The message is one line naming the tool and
  the field; the check that ran the tool reports it as its ERROR (code TOOL_OUTPUT_UNREADABLE)
  with `excerpt` of the output in its evidence, and the run goes on to the next check.
- `figure`: a number from the output, finite and within bounds, else ToolOutputError.
- `excerpt`: the output as evidence: its last lines, bounded, control characters escaped.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from nodeqc.core.errors import shown

# A number as tools print it: digits, a point, an exponent. Not what float() also takes ("nan",
# "inf", "infinity", "1_000", full-width digits), none of which a tool prints as a measurement.
NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")  # ASCII: re's \d takes any script's digits
MAX_NUMBER_CHARS = 64  # a double has 17 significant digits; more than 64 characters is no tool's figure
EXCERPT_LINES = 20  # the end of the output, where tools print their result and their errors
EXCERPT_CHARS = 2000  # per excerpt: enough to read a result table, never a flood into the report
SHOWN_CHARS = 60  # a bad value as a message quotes it


class ToolOutputError(ValueError):
    """A tool's output is not in its format: the message names the tool and the field, in one line."""


def figure(value: Any, what: str, *, low: float | None = None, high: float | None = None,
           text: bool = False) -> float:
    """VALUE as a finite float within [low, high]; ToolOutputError naming WHAT otherwise. A number
    from JSON comes as int or float; `text=True` also reads a string as tools print numbers (never
    "nan" or "inf"). A bool is not a number (JSON true is not 1)."""
    if isinstance(value, str) and text:
        token = value.strip()
        if len(token) > MAX_NUMBER_CHARS or not NUMBER.fullmatch(token):
            raise ToolOutputError(f"{what} is {quoted(value)}, not a number")
        value = token
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolOutputError(f"{what} is {kind_of(value)}, not a number")
    try:
        x = float(value)
    except (OverflowError, ValueError):  # an int of hundreds of digits
        raise ToolOutputError(f"{what} is a number of {len(str(value))} digits, beyond any measurement") from None
    if not math.isfinite(x):
        raise ToolOutputError(f"{what} is {quoted(value)}, not a finite number")
    if (low is not None and x < low) or (high is not None and x > high):
        bounds = f"[{'' if low is None else f'{low:g}'}, {'' if high is None else f'{high:g}'}]"
        raise ToolOutputError(f"{what} is {x:g}, outside {bounds}")
    return x


def load_json(text: str, what: str, prefix: bool = False) -> Any:
    """Tool output as JSON (`prefix`: the document at its start, text after it ignored).
    json.JSONDecodeError when it is not JSON at all (the caller says what that means for its tool);
    ToolOutputError when it is JSON no tool prints: nested past Python's recursion limit, or a number
    of more digits than Python converts (4300: sys.get_int_max_str_digits), which json raises as a
    bare ValueError."""
    try:
        return json.JSONDecoder().raw_decode(text)[0] if prefix else json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise ToolOutputError(f"{what} is nested deeper than any output of the tool") from None
    except ValueError as e:
        raise ToolOutputError(f"{what} cannot be read: {shown(str(e))[:120]}") from None


def quoted(value: Any) -> str:
    """A value as a message quotes it: short, one line, control characters escaped."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > SHOWN_CHARS:
        text = f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"
    return repr(shown(text)) if isinstance(value, str) else shown(text)


def kind_of(value: Any) -> str:
    """What a parsed value is, for a message: 'the string \'x\'', 'a list [1, 2]', 'missing (null)'."""
    if value is None:
        return "missing (null)"
    if isinstance(value, str):
        return f"the string {quoted(value)}"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    return f"{'an' if type(value).__name__[0] in 'aeiou' else 'a'} {type(value).__name__} {quoted(value)}"


def excerpt(text: str) -> list[str]:
    """The end of a tool's output for a report's evidence: its last lines, at most EXCERPT_CHARS in
    all, each with control characters escaped (a report is shown on terminals)."""
    lines = [shown(line) for line in (text or "").strip().splitlines()[-EXCERPT_LINES:]]
    out: list[str] = []
    room = EXCERPT_CHARS
    for line in reversed(lines):
        if room <= 0:
            break
        out.append(line if len(line) <= room else "..." + line[-room:])
        room -= len(line)
    return out[::-1]
