"""Type checking of TOML tables (profiles, simulated-node scenarios) with one-line errors that name
the file, the table and the key: `profiles/x.toml: [gpu] min_bf16_tflops: expected a number, got "fast"`."""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from typing import Any

from nodeqc.core.errors import UsageError
from nodeqc.core.names import PCI_ADDRESS
from nodeqc.core.text import is_digits


@dataclass(frozen=True)
class Spec:
    kind: str  # str | int | number | bool | strlist | names | choice | version | threshold | pci | pcilist
    help: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None


MAX_WHOLE = 2 ** 63  # the widest whole number a device reports (NVML's counters); past it, no figure of ours
Schema = dict[str, dict[str, Spec]]  # table ("" for the top level) -> key -> spec


def validate(where: str, schema: Schema, raw: dict[str, Any], arrays: tuple[str, ...] = (),
             required: dict[str, tuple[str, ...]] | None = None) -> None:
    """Check every key of a parsed TOML document against the schema; raise UsageError on the first
    problem. Tables named in the schema are checked key by key. A table named in `arrays` is an
    array of tables (`[[nics]]`, each checked alike); any other must be one table (`[gpu]`).
    `required` names the keys every table of a kind must have."""
    for key, value in raw.items():
        if key in schema and key != "":
            if key in arrays:
                if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                    raise UsageError(f"{where}: [[{key}]]: expected an array of tables (each one headed "
                                     f"[[{key}]]), got {show(value)}")
                tables, labels = value, [f"{key}.{n}" for n in range(len(value))]
            else:
                if not isinstance(value, dict):
                    raise UsageError(f"{where}: [{key}]: expected a table, got {show(value)}")
                tables, labels = [value], [key]
            for table, label in zip(tables, labels):
                for sub, subvalue in table.items():
                    check_key(where, schema, key, sub, subvalue, label=label)
                for needed in (required or {}).get(key, ()):
                    if needed not in table:
                        raise UsageError(f"{where}: [{label}] {needed}: missing")
        else:
            check_key(where, schema, "", key, value)


def check_key(where: str, schema: Schema, section: str, key: str, value: Any,
              label: str | None = None) -> None:
    shown = f"[{label or section}] {key}" if section else key
    specs = schema[section]
    spec = specs.get(key)
    if spec is None:
        known = list(specs) + ([s for s in schema if s] if not section else [])
        hint = difflib.get_close_matches(key, known, n=1)
        extra = f" (did you mean {hint[0]}?)" if hint else ""
        raise UsageError(f"{where}: {shown}: unknown key{extra}")
    problem = type_problem(spec, key, value)
    if problem:
        raise UsageError(f"{where}: {shown}: {problem}")


def type_problem(spec: Spec, key: str, value: Any) -> str | None:
    kind = spec.kind
    if kind == "threshold":
        return _threshold_problem(key, value)
    if kind == "str":
        return None if isinstance(value, str) else f"expected a string, got {show(value)}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"expected true or false, got {show(value)}"
    if kind in ("int", "number"):
        if isinstance(value, float) and not math.isfinite(value):
            return f"expected a finite number, got {show(value)}"
        if type(value) is int and abs(value) >= MAX_WHOLE:  # TOML takes any digits; float() of 400 did not
            return f"expected a number below 2^63, got {show(value)[:40]}"
        ok = isinstance(value, int) if kind == "int" else is_number(value)
        if not ok or isinstance(value, bool):
            what = "an integer" if kind == "int" else "a number"
            return f"expected {what}, got {show(value)}"
        if spec.low is not None and value < spec.low:
            return f"expected at least {spec.low:g}, got {show(value)}"
        if spec.high is not None and value > spec.high:
            return f"expected at most {spec.high:g}, got {show(value)}"
        return None
    if kind == "choice":
        if value in spec.choices and not isinstance(value, bool):
            return None
        options = ", ".join(show(c) for c in spec.choices)
        return f"expected one of {options}, got {show(value)}"
    if kind == "strlist":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"expected a list of strings, got {show(value)}"
        if not value:
            return "expected at least one entry"
        if spec.choices:
            bad = [v for v in value if v not in spec.choices]
            if bad:
                return f"unknown entry {show(bad[0])} (known: {', '.join(spec.choices)})"
        if len(set(value)) < len(value):  # dtypes = ["fp8", "fp8"] burned fp8 twice and said nothing
            return f"{show(next(v for v in value if value.count(v) > 1))} appears twice"
        return None
    if kind in ("pci", "pcilist"):  # PCI addresses: a simulated node's devices, named in sysfs paths
        values = value if kind == "pcilist" and isinstance(value, list) else [value]
        if kind == "pcilist" and (not isinstance(value, list) or not value):
            return "expected a list of PCI addresses" if not isinstance(value, list) else "expected at least one entry"
        for v in values:
            if not isinstance(v, str) or not PCI_ADDRESS.match(v):
                return f'expected a PCI address like "0000:1b:00.0", got {show(v)[:40]}'
        if len(set(values)) < len(values):
            return f"{show(next(v for v in values if values.count(v) > 1))} appears twice; each device has its own"
        return None
    if kind == "names":  # a list of strings that may be empty (a baseline's switch peers: none)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"expected a list of strings, got {show(value)}"
        return None
    if kind == "version":
        # ASCII digits only: str.isdigit() takes other scripts' digits too ("٥٣٥" for 535).
        if not isinstance(value, str) or not value or not all(is_digits(p) for p in value.split(".")):
            return f'expected a version like "535.104", got {show(value)}'
        return None
    raise AssertionError(f"schema kind {kind}")


def _threshold_problem(key: str, value: Any) -> str | None:
    if isinstance(value, dict):
        extra = set(value) - {"fail", "warn"}
        if extra:
            return f"unknown field {sorted(extra)[0]!r} (a threshold has fail and warn)"
        if "fail" not in value:
            return "a threshold table needs fail = NUMBER"
        for part in ("fail", "warn"):
            if part in value and not is_number(value[part]):
                return f"{part}: expected a {_finite(value[part])}number, got {show(value[part])}"
        if "warn" in value:
            fail, warn = float(value["fail"]), float(value["warn"])
            if key.startswith("min_") and warn < fail:
                return f"warn ({warn:g}) must not be below fail ({fail:g}) for a floor"
            if key.startswith("max_") and warn > fail:
                return f"warn ({warn:g}) must not be above fail ({fail:g}) for a ceiling"
        return None
    if not is_number(value):
        return f"expected a {_finite(value)}number, got {show(value)}"
    if value < 0:
        return f"expected a number >= 0, got {show(value)}"
    return None


def is_number(v: Any) -> bool:
    """An integer narrower than MAX_WHOLE or a finite float. TOML has nan and inf, and every
    comparison with nan is false: `max_temp_c = nan` would pass any temperature; and an integer of
    400 digits ended a profile's load in OverflowError (math.isfinite), naming nothing."""
    if isinstance(v, bool):
        return False
    return abs(v) < MAX_WHOLE if isinstance(v, int) else isinstance(v, float) and math.isfinite(v)


def _finite(v: Any) -> str:
    return "finite " if isinstance(v, float) and not math.isfinite(v) else ""


def show(v: Any) -> str:
    """A value as the error message shows it: strings quoted, TOML spelling for the rest."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, int) and abs(v) >= MAX_WHOLE:
        return f"a whole number of {len(str(abs(v)))} digits, past 2^63"
    return repr(v)
