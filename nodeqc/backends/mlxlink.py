"""A Mellanox/NVIDIA NIC port's module and link as NVIDIA's mlxlink reports them: `mlxlink -d
<PCI address> -m -c` (MFT; mstflint ships the same tool as `mstlink`), as JSON (`--json`) where the
version has it and as text before. Parser only; the reading runs in nodeqc.backends.host_stress and
the verdicts are in nodeqc.checks.host_stress.

What is read, and where mlxlink gets it (mstflint's mlxlink/modules/mlxlink_commander.cpp):
- Module Info: temperature, voltage, and per lane laser bias, receive and transmit power, each
  followed by the module's own alarm range in brackets, `54 [-5..75]` (the PDDR module info page's
  "Alarm low/high ... threshold" fields). Powers are in dBm, voltage in mV. A module without
  digital diagnostics prints `N/A`; a passive cable prints `0 [0..0]` (read as no reading).
- Physical Counters and BER Info: effective (after FEC) errors and BER, the raw (before FEC) BER
  and errors per lane, and on InfiniBand the symbol errors and BER. A BER prints as
  `<coefficient>E-<magnitude>`; no error at all prints as 15E-255.
- Operational Info: state, speed and the FEC in use; Troubleshooting Info: mlxlink's advice.

Anything else in the output is not read. Output that cannot be read gives a reading with `error`
set (one line saying what was wrong), never an exception.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from nodeqc.backends.host_stress import ModuleReading
from nodeqc.core.tool_output import ToolOutputError, load_json

# The drivers of the NICs mlxlink can read (ConnectX-4 onwards use mlx5_core; ConnectX-3, mlx4).
MLXLINK_DRIVERS = ("mlx5_core", "mlx4_core", "mlx4_en")
MODULE, COUNTERS, OPERATIONAL, TROUBLESHOOTING = ("Module Info", "Physical Counters and BER Info",
                                                  "Operational Info", "Troubleshooting Info")
_DDM = {  # mlxlink's field -> (measure as ModuleReading names it, unit mlxlink prints it in)
    "Temperature [C]": ("temperature", "C"),
    "Voltage [mV]": ("voltage", "mV"),
    "Bias Current [mA]": ("bias", "mA"),
    "Rx Power Current [dBm]": ("rx_power", "dBm"),
    "Tx Power Current [dBm]": ("tx_power", "dBm"),
}
# What a module can report, in mlxlink's units (SFF-8472/8636 and CMIS: temperature a signed 1/256 C
# word, supply voltage 100 uV steps to 6.5535 V, bias 2 uA steps (CMIS multiplies up to 4 times),
# optical power 0.1 uW steps to 6.5535 mW: 8.2 dBm; mlxlink prints -40 dBm for no light, and a
# power under 0.1 uW has no finite dBm below that's tens). A reading or alarm range outside it is
# not the module's: read as infinity, a range would pass every reading (as ethtool's MODULE_RANGES).
MLXLINK_RANGES = {"temperature": (-128.0, 128.0), "voltage": (0.0, 6553.5), "bias": (0.0, 524.288),
                  "rx_power": (-50.0, 8.2), "tx_power": (-50.0, 8.2)}
# A count of errors is a 64-bit counter; mlxlink prints no BER of 15E-255 for no error at all.
MAX_COUNT = 2 ** 64 - 1
NO_ERROR_BER = 1e-250
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_READINGS = re.compile(rf"({_NUMBER}(?:\s*,\s*{_NUMBER})*)\s*\[\s*({_NUMBER})\s*\.\.\s*({_NUMBER})\s*\]")
_BER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_NO_MODULE = ("no plugged cable", "no cable", "no module", "cable is not plugged", "module is not plugged")


@dataclass
class LinkReading:
    """One port as mlxlink reports it. None in a field: mlxlink did not print it (or printed N/A)."""

    module: ModuleReading | None = None  # None: no module section (or no cable)
    state: str = ""
    speed: str = ""
    fec: str = ""
    effective_errors: int | None = None
    effective_ber: float | None = None
    symbol_errors: int | None = None  # InfiniBand only
    symbol_ber: float | None = None
    raw_ber: float | None = None  # before FEC: errors here are what the FEC is for
    raw_errors_per_lane: list[int] = field(default_factory=list)
    minutes_since_clear: float | None = None
    recommendation: str = ""
    error: str | None = None  # the output could not be read: why, in one line

    def evidence(self) -> dict[str, Any]:
        return {"state": self.state, "speed": self.speed, "fec": self.fec,
                "effective_errors": self.effective_errors, "effective_ber": self.effective_ber,
                "symbol_errors": self.symbol_errors, "symbol_ber": self.symbol_ber, "raw_ber": self.raw_ber,
                "raw_errors_per_lane": self.raw_errors_per_lane, "minutes_since_clear": self.minutes_since_clear,
                "recommendation": self.recommendation}


def is_mlxlink_nic(driver: Any) -> bool:
    return isinstance(driver, str) and driver in MLXLINK_DRIVERS


def parse_mlxlink(text: str, problem: str | None = None) -> LinkReading | None:
    """mlxlink's output (JSON or text) for one port. `problem`: what mlxlink said on stderr when it
    exited non-zero (it may still have printed the sections it could read). None: no cable or
    module in the port, so there is nothing to judge."""
    link = _parse(text, " ".join((problem or "").split()) or None)
    if link is not None and link.error is not None:
        link.error = " ".join(link.error.split())[:300] or "mlxlink's output is unreadable"
    return link


def _parse(text: str, problem: str | None) -> LinkReading | None:
    try:
        sections = _sections(text or "")
    except ValueError as e:
        if _says_no_module(str(e)) or _says_no_module(problem):
            return None
        return LinkReading(error=f"{e}" + (f" (mlxlink said: {problem})" if problem else ""))
    if not sections:
        if _says_no_module(problem) or _says_no_module(text):
            return None
        if problem:
            return LinkReading(error=f"mlxlink failed: {problem}")
        if (text or "").strip():
            return LinkReading(error=f"mlxlink's output has no sections to read (it begins {text.strip()[:60]!r})")
        return LinkReading(error="mlxlink printed nothing")
    try:
        return _reading(sections)
    except ValueError as e:
        return LinkReading(error=str(e))


def _says_no_module(text: str | None) -> bool:
    return bool(text) and any(s in text.lower() for s in _NO_MODULE)


def _sections(text: str) -> dict[str, dict[str, str]]:
    """Section title -> field -> value as text (a JSON list of values joined with commas)."""
    if text.lstrip().startswith("{"):
        return _json_sections(text)
    sections: dict[str, dict[str, str]] = {}
    lines = text.splitlines()
    current: dict[str, str] | None = None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}\s*", lines[i + 1]) and line.strip():
            current = sections.setdefault(line.strip(), {})
            continue
        key, sep, value = line.partition(":")
        if sep and current is not None and key.strip():
            current[" ".join(key.split())] = value.strip()
    return {title: fields for title, fields in sections.items() if fields}


def _json_sections(text: str) -> dict[str, dict[str, str]]:
    try:
        data = load_json(text, "mlxlink's JSON")
    except (json.JSONDecodeError, ToolOutputError) as e:
        raise ValueError(f"mlxlink's JSON is unreadable: {e}") from None
    if not isinstance(data, dict):
        raise ValueError("mlxlink's JSON is not an object")
    status = data.get("status")
    if isinstance(status, dict) and status.get("code") not in (0, "0", None):
        raise ValueError(f"mlxlink reported status {status.get('code')}: {status.get('message', '')}".rstrip(": "))
    result = data.get("result")
    output = result.get("output") if isinstance(result, dict) else None
    if output is None:
        return {}
    if not isinstance(output, dict):
        raise ValueError("mlxlink's JSON result.output is not an object")
    sections: dict[str, dict[str, str]] = {}
    for title, fields in output.items():
        if not isinstance(fields, dict):
            raise ValueError(f"mlxlink's JSON section {title!r} is not an object")
        sections[str(title)] = {str(k): _json_text(k, v) for k, v in fields.items()}
    return sections


def _json_text(key: Any, value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict) and isinstance(value.get("values"), list):
        if all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value["values"]):
            return ",".join(str(v) for v in value["values"])
    raise ValueError(f"mlxlink's JSON field {key!r} has an unexpected value")


def _reading(sections: dict[str, dict[str, str]]) -> LinkReading:
    if not any(t in sections for t in (MODULE, COUNTERS, OPERATIONAL)):
        raise ValueError("mlxlink's output has neither module info nor counters (sections: "
                         f"{', '.join(sorted(sections))[:200]})")
    op, trouble, counters = sections.get(OPERATIONAL, {}), sections.get(TROUBLESHOOTING, {}), sections.get(COUNTERS, {})
    link = LinkReading(state=_text(op.get("State")), speed=_text(op.get("Speed")), fec=_text(op.get("FEC")),
                       recommendation=_text(trouble.get("Recommendation")))
    if MODULE in sections:
        link.module = _module(sections[MODULE])
    link.effective_errors = _count(counters, "Effective Physical Errors")
    link.effective_ber = _ber(counters, "Effective Physical BER")
    link.symbol_errors = _count(counters, "Symbol Errors")
    link.symbol_ber = _ber(counters, "Symbol BER")
    link.raw_ber = _ber(counters, "Raw Physical BER")
    for label, errors, ber in (("Effective Physical", link.effective_errors, link.effective_ber),
                               ("Symbol", link.symbol_errors, link.symbol_ber)):
        if errors == 0 and ber is not None and ber > NO_ERROR_BER:
            # No error at all prints as 15E-255: a rate beside none is not the link's (2026-11-29 fuzzing).
            raise ValueError(f"mlxlink reads 0 {label.lower()} errors, yet its {label.lower()} BER is {ber:.1e} "
                             "(none prints as 15E-255)")
    lanes = _text(counters.get("Raw Physical Errors Per Lane"))
    if lanes:
        if not re.fullmatch(r"\d{1,20}(?:\s*,\s*\d{1,20})*", lanes) \
                or any(int(x) > MAX_COUNT for x in lanes.split(",")):
            raise ValueError(f"mlxlink's 'Raw Physical Errors Per Lane' reads {lanes[:80]!r}, not counts")
        link.raw_errors_per_lane = [int(x) for x in lanes.split(",")]
    minutes = _text(counters.get("Time Since Last Clear [Min]"))
    if minutes:
        link.minutes_since_clear = _finite(minutes, "Time Since Last Clear [Min]")
    return link


def _module(fields: dict[str, str]) -> ModuleReading:
    m = ModuleReading(vendor=_text(fields.get("Vendor Name")), part=_text(fields.get("Vendor Part Number")),
                      identifier=_text(fields.get("Identifier")))
    for key, (measure, unit) in _DDM.items():
        raw = _text(fields.get(key))
        if not raw:
            continue  # no digital diagnostics
        match = _READINGS.fullmatch(raw)
        if match is None:
            raise ValueError(f"mlxlink's {key!r} reads {raw[:80]!r}, not readings and a range")
        readings = [_finite(x, key) for x in match.group(1).split(",")]
        low, high = _finite(match.group(2), key), _finite(match.group(3), key)
        if low == high == 0 and not any(readings):
            continue  # "0 [0..0]": a passive cable's empty monitor, not a reading
        least, most = MLXLINK_RANGES[measure]
        if not all(least <= x <= most for x in (*readings, low, high)):
            raise ValueError(f"mlxlink's {key!r} reads {raw[:80]!r}: outside what a module can report "
                             f"({least:g} to {most:g} {unit})")
        m.values[measure] = readings
        m.thresholds[measure] = {"low_alarm": low, "high_alarm": high}
        m.units[measure] = unit
    return m


def _text(value: str | None) -> str:
    """A field's value, "" for none or N/A."""
    value = (value or "").strip()
    return "" if value.upper() == "N/A" else value


def _finite(text: str, key: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"mlxlink's {key!r} reads {text[:40]!r}, not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"mlxlink's {key!r} reads {text[:40]!r}, not a finite number")
    return x


def _count(fields: dict[str, str], key: str) -> int | None:
    raw = _text(fields.get(key))
    if not raw:
        return None
    if not re.fullmatch(r"\d{1,20}", raw) or int(raw) > MAX_COUNT:
        raise ValueError(f"mlxlink's {key!r} reads {raw[:80]!r}, not a count")
    return int(raw)


def _ber(fields: dict[str, str], key: str) -> float | None:
    raw = _text(fields.get(key))
    if not raw:
        return None
    if not _BER.fullmatch(raw):
        raise ValueError(f"mlxlink's {key!r} reads {raw[:80]!r}, not a bit error rate")
    return _finite(raw, key)
