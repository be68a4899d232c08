"""The node's power supplies as its BMC sees them, through ipmitool, read around the power tests.

Three listings, each a fraction of a second on a BMC reached in-band (`sdr type` reads only the
sensors of one type): `ipmitool sdr type "Power Supply"` (each PSU's states, e.g. "Presence
detected, Power Supply AC lost", and the PSUs' redundancy), `sdr type Voltage` and `sdr type
Current` (readings with the BMC's own threshold status). `ipmitool sensor` (seconds: it walks the
whole repository) is read once, for each sensor's own thresholds. Readers and parsers only; the
verdict is nodeqc.checks.psu's.

A missing ipmitool, or a BMC that does not answer, is reported with what to do, never run around.
Output that is not in ipmitool's format raises BmcUnreadable naming the line, never a traceback.
"""

from __future__ import annotations

import queue
import re
import shutil
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

from nodeqc.core.tool_output import ToolOutputError, figure

INSTALL = ("apt-get install ipmitool (or dnf install ipmitool), then load the in-band driver: "
           "modprobe -a ipmi_devintf ipmi_si")
# The listings read at each point of the test: (what the sensors are, ipmitool's sensor type name).
SDR_TYPES = (("psu", "Power Supply"), ("voltage", "Voltage"), ("current", "Current"))
# ipmitool's threshold status (ipmi_sdr_get_thresh_status): ok, ns (no reading), and the threshold
# crossed: nc/cr/nr, or with its side (lnc, ucr, ...) in the extended listings that `sdr type` prints.
STATUSES = frozenset({"ok", "ns", "na", "nc", "cr", "nr", "lnc", "unc", "lcr", "ucr", "lnr", "unr"})
THRESHOLDS = ("lnr", "lcr", "lnc", "unc", "ucr", "unr")  # `ipmitool sensor`'s columns 5-10, in order
SDR_TIMEOUT_S = 30  # `sdr type` takes 65-111 ms on a Gigabyte G431 BMC; a wedged BMC must not hang the run
POLL_EVERY_S = 1.0  # real seconds between reads while a test runs, besides its marks: the BMC serves others too
SENSOR_LIST_TIMEOUT_S = 120  # `sensor` took 3.2-4.5 s there; large BMCs take tens of seconds
_SDR_ID = re.compile(r"^[0-9A-Fa-f]{1,4}h$")
_READING = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(\S.*)?$")  # "12.10 Volts", "0 Watts", "165 Watts"


class BmcUnreadable(ValueError):
    """ipmitool printed something not in its own format: the message names the line."""


class BmcError(RuntimeError):
    """ipmitool is there but the BMC did not answer (no in-band device, a wedged BMC)."""


@dataclass(frozen=True)
class Sensor:
    name: str
    kind: str  # psu, voltage or current: the listing it came from
    status: str  # ipmitool's threshold status (see STATUSES)
    reading: float | None = None  # None: discrete, or no reading
    unit: str = ""  # Volts, Amps, Watts
    events: tuple[str, ...] = ()  # the discrete states asserted: "Presence detected", "Failure detected"
    # The sensor's record id ("6Dh"): names need not be unique (a Dell BMC names both PSUs' rails
    # "Voltage" and "Current"), the id is.
    sdr_id: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.name, self.sdr_id

    @property
    def read(self) -> bool:
        """Whether the BMC gave anything of it: "ns" with no reading and no state is no reading."""
        return not (self.status in ("ns", "na") and self.reading is None and not self.events)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "status": self.status, "reading": self.reading,
                "unit": self.unit, "events": list(self.events), "sdr_id": self.sdr_id}


@dataclass
class BmcReading:
    """One read of the listings at one point of a test: `label` says where ("before the test",
    "at the end of the 20 ms period"); t_s on the run's clock when the read began."""

    label: str
    t_s: float
    sensors: list[Sensor] = field(default_factory=list)
    error: str | None = None
    period_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "t_s": self.t_s, "period_s": self.period_s, "error": self.error,
                "sensors": [s.to_dict() for s in self.sensors]}


# ---------------------------------------------------------------------- parsers

def _columns(line: str, n: int, where: str, number: int) -> list[str]:
    cells = [c.strip() for c in line.split("|")]
    if len(cells) != n:
        raise BmcUnreadable(f"{where} line {number}: expected {n} columns separated by '|', got {len(cells)}: "
                            f"{_shown(line)}")
    if not cells[0]:
        raise BmcUnreadable(f"{where} line {number}: no sensor name: {_shown(line)}")
    return cells


def _shown(line: str) -> str:
    text = line.strip()
    return ascii(text[:80] + ("..." if len(text) > 80 else ""))


def parse_sdr(text: str, kind: str, where: str = "ipmitool sdr type") -> list[Sensor]:
    """`ipmitool sdr type TYPE` (and `sdr elist`): name | id (e.g. 66h) | status | entity | reading
    or states. A threshold sensor's last column is its reading ("12.10 Volts") or "No Reading"; a
    discrete sensor's, its asserted states, comma-separated ("Presence detected, Power Supply AC
    lost"), which some BMCs lead with a reading ("0 Watts, Presence detected, Failure detected").
    Blank lines are skipped; any other line out of this shape raises BmcUnreadable."""
    sensors = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sdr_id, status, _entity, last = _columns(line, 5, where, number)
        status = status.lower()
        if not _SDR_ID.match(sdr_id) or status not in STATUSES:
            raise BmcUnreadable(f"{where} line {number}: expected a sensor id like 66h and a status "
                                f"(ok, ns, lcr, ucr, ...), got {_shown(line)}")
        reading, unit, events = None, "", []
        for n, part in enumerate(p.strip() for p in last.split(",")):
            m = _READING.match(part)
            if n == 0 and m:
                try:  # a reading of 400 digits is no sensor's (an IPMI reading is one byte, scaled)
                    reading = figure(m.group(1), f"{where} line {number}: the reading", text=True)
                except ToolOutputError as e:
                    raise BmcUnreadable(f"{e}: {_shown(line)}") from None
                unit = (m.group(2) or "").strip()
            elif part and part.lower() != "no reading":
                events.append(part)
        sensors.append(Sensor(name, kind, status, reading, unit, tuple(events), sdr_id[:-1].upper() + "h"))
    return sensors


def parse_sensor_thresholds(text: str, where: str = "ipmitool sensor") -> dict[str, dict[str, float]]:
    """`ipmitool sensor` (ten columns: name | reading | unit | status | lnr | lcr | lnc | unc | ucr
    | unr): each threshold sensor's own thresholds, by name ("na" where it has none). Discrete
    sensors (unit "discrete") have none. Blank lines are skipped; any other line out of this shape
    raises BmcUnreadable. A name two sensors share with different thresholds is left out: this
    listing has no record id to tell them apart, and the BMC's own status still judges each."""
    out: dict[str, dict[str, float]] = {}
    shared: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = _columns(line, 10, where, number)
        if cells[2].lower() == "discrete":
            continue
        limits = {}
        for key, cell in zip(THRESHOLDS, cells[4:]):
            if cell.lower() == "na":
                continue
            try:  # "nan" or "inf" is no threshold of ipmitool's, which prints "na" for none
                limits[key] = figure(cell, f"threshold {key}", text=True)
            except ToolOutputError:
                raise BmcUnreadable(f"{where} line {number}: threshold {key} is {ascii(cell)}, expected a number "
                                    f"or na: {_shown(line)}") from None
        if out.get(cells[0], limits) != limits:
            shared.add(cells[0])
        out[cells[0]] = limits
    return {name: limits for name, limits in out.items() if name not in shared}


# ---------------------------------------------------------------------- the reader

class Bmc(ABC):
    @abstractmethod
    def missing(self) -> str | None:
        """What to install when ipmitool is not there; None when it is."""

    @abstractmethod
    def sdr_type(self, sensor_type: str) -> str:
        """`ipmitool sdr type SENSOR_TYPE`'s output; BmcError when the BMC does not answer."""

    @abstractmethod
    def sensor_list(self) -> str:
        """`ipmitool sensor`'s output; BmcError when the BMC does not answer."""

    def read(self, label: str, t_s: float, period_s: float | None = None) -> BmcReading:
        """The three listings, parsed; a BMC that does not answer or output out of format is kept
        as the reading's error."""
        reading = BmcReading(label, round(t_s, 3), period_s=period_s)
        try:
            for kind, sensor_type in SDR_TYPES:
                reading.sensors += parse_sdr(self.sdr_type(sensor_type), kind, f"ipmitool sdr type {sensor_type!r}")
        except (BmcError, BmcUnreadable) as e:
            reading.error = str(e)
        return reading


class IpmitoolBmc(Bmc):
    """The BMC in-band, through the local ipmitool (/dev/ipmi0)."""

    def missing(self) -> str | None:
        return None if shutil.which("ipmitool") else INSTALL

    def _run(self, args: list[str], timeout: float) -> str:
        try:
            proc = subprocess.run(["ipmitool", *args], capture_output=True, text=True, timeout=timeout,
                                  errors="replace")
        except subprocess.TimeoutExpired:
            raise BmcError(f"ipmitool {' '.join(args)} did not answer within {timeout:g} s (a wedged BMC?)") from None
        except OSError as e:
            raise BmcError(f"ipmitool could not run: {e}") from None
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise BmcError(f"no BMC answered (ipmitool {' '.join(args)}: {why}); on a bare-metal node load the "
                           "in-band driver (modprobe -a ipmi_devintf ipmi_si); a VM has no BMC")
        return proc.stdout

    def sdr_type(self, sensor_type: str) -> str:
        return self._run(["sdr", "type", sensor_type], SDR_TIMEOUT_S)

    def sensor_list(self) -> str:
        return self._run(["sensor"], SENSOR_LIST_TIMEOUT_S)


@dataclass
class BmcRun:
    """What the BMC showed around one test: why it was not read, or its readings in order and each
    sensor's thresholds (None, with the reason, when `ipmitool sensor` could not be read)."""

    unavailable: str | None = None
    readings: list[BmcReading] = field(default_factory=list)
    thresholds: dict[str, dict[str, float]] | None = None
    thresholds_error: str | None = None


class BmcWatch:
    """Reads the BMC before a test, at the points the test marks (each pulse period's start and
    end), and after it, on a thread of its own: a read takes a fraction of a second and the test's
    counters must be read at once. Marks that arrive while a read runs wait their turn; `poll`
    asks for a read only when none is waiting (the steady power test's periodic reads)."""

    def __init__(self, bmc: Bmc | None, now: Callable[[], float]):
        self.bmc = bmc
        self.now = now
        self.run = BmcRun()
        self._queue: queue.Queue[tuple[str, float | None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._marked: set[tuple[str, float | None]] = set()
        self._lock = threading.Lock()
        self._polled_at = float("-inf")
        self._wedged = False  # a read timed out: no more reads this test

    def start(self, thresholds: tuple[dict[str, dict[str, float]] | None, str | None] | None = None) -> None:
        """The reading before the test (which also finds out whether a BMC answers) and, unless
        already known (`thresholds`), each sensor's thresholds."""
        if self.bmc is None:
            self.run.unavailable = "no BMC reader on this node (a replayed capture has none)"
            return
        missing = self.bmc.missing()
        if missing:
            self.run.unavailable = f"ipmitool is not installed ({missing})"
            return
        before = self.bmc.read("before the test", self.now())
        if before.error:
            self.run.unavailable = before.error
            return
        self.run.readings.append(before)
        if thresholds is None:
            try:
                thresholds = (parse_sensor_thresholds(self.bmc.sensor_list()), None)
            except (BmcError, BmcUnreadable) as e:
                thresholds = (None, str(e))
        self.run.thresholds, self.run.thresholds_error = thresholds
        self._thread = threading.Thread(target=self._loop, name="nodeqc-bmc", daemon=True)
        self._thread.start()

    def mark(self, label: str, period_s: float | None = None) -> None:
        """A read at this point of the test, once however many GPUs report it."""
        with self._lock:
            if self._thread is None or (label, period_s) in self._marked:
                return
            self._marked.add((label, period_s))
        self._queue.put((label, period_s))

    def poll(self, label: str = "during the test") -> None:
        """A read now unless one is waiting or one began less than POLL_EVERY_S ago."""
        now = time.monotonic()
        if self._thread is not None and self._queue.empty() and now - self._polled_at >= POLL_EVERY_S:
            self._polled_at = now
            self._queue.put((label, None))

    def finish(self, timeout_s: float = 60.0, after: bool = True) -> BmcRun:
        """The marked reads still waiting, then the reading after the test (unless the BMC stopped
        answering: a wedged BMC must not hold the run for a timeout per read; nor when `after` is
        false: an aborted run reads no more)."""
        if self._thread is not None:
            if not after:
                with self._lock:
                    self._wedged = True  # the reads still waiting are dropped
            self._queue.put(None)
            self._thread.join(timeout=timeout_s if after else min(timeout_s, 5.0))
            self._thread = None
            with self._lock:
                if not self._wedged:
                    self.run.readings.append(self.bmc.read("after the test", self.now()))
        return self.run

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._wedged:
                continue
            label, period_s = item
            reading = self.bmc.read(label, self.now(), period_s)
            with self._lock:
                self.run.readings.append(reading)
                self._wedged = bool(reading.error and "did not answer within" in reading.error)
