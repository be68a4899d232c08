"""The node's power supplies during the power tests, as its BMC reported them (nodeqc.backends.bmc):
one result for the node beside the per-GPU ones of stress.power and stress.power_pulse.

A PSU that reports a failure, a predictive failure, lost or out-of-range input, or the PSUs'
redundancy lost, fails, naming the sensor and the first reading that showed it (before the test,
at a pulse period's start or end, after). A voltage or current sensor beyond its own critical
thresholds (the BMC's status, or its reading against the thresholds `ipmitool sensor` lists)
fails when the test brought it there, and warns when it was there already before the test (a
CMOS battery or an idle rail: real, but not the load's doing); beyond a non-critical threshold it
warns. No ipmitool, no BMC, or output nodeqc cannot read: not run, saying why and what to install.
"""

from __future__ import annotations

from typing import Any

from nodeqc.backends.bmc import BmcRun, BmcReading, Sensor
from nodeqc.checks.common import Judgement, fold, skip
from nodeqc.core.model import CheckResult, Value, Verdict

# The states of IPMI's Power Supply sensor type (08h) and of its redundancy sensors (event type
# 0Bh), as ipmitool names them (ipmi_sel.c), lower-cased; matched as substrings of each state.
# "Presence detected" and "Fully Redundant" are the healthy states and match none of these.
# A degraded redundancy (N+2 down to N+1) still rides through one more PSU loss: it warns.
PSU_STATES: tuple[tuple[str, str, str, Verdict], ...] = (
    ("failure detected", "PSU_FAILURE", "failure", Verdict.FAIL),
    ("predictive failure", "PSU_FAILURE", "predictive failure", Verdict.FAIL),
    ("config error", "PSU_FAILURE", "configuration error", Verdict.FAIL),
    ("ac lost", "PSU_INPUT_LOST", "input lost", Verdict.FAIL),  # "Power Supply AC lost", "AC lost or out-of-range"
    ("out-of-range", "PSU_INPUT_LOST", "input out of range", Verdict.FAIL),  # "AC out-of-range, but present"
    ("redundancy lost", "PSU_REDUNDANCY_LOST", "redundancy lost", Verdict.FAIL),
    ("non-redundant", "PSU_REDUNDANCY_LOST", "redundancy lost", Verdict.FAIL),  # "Non-Redundant: Sufficient from Redundant"
    ("redundancy degraded", "PSU_REDUNDANCY_LOST", "redundancy degraded", Verdict.WARN),
)
CRITICAL = {"cr", "nr", "lcr", "ucr", "lnr", "unr"}
NON_CRITICAL = {"nc", "lnc", "unc"}


def _psu_problems(s: Sensor) -> list[tuple[str, Verdict, str]]:
    """(code, verdict, what) for each bad state a PSU sensor asserts."""
    out = []
    for event in s.events:
        low = event.lower()
        hit = next(((code, verdict, f"{what} ({event})") for key, code, what, verdict in PSU_STATES if key in low), None)
        if hit:
            out.append(hit)
    if s.status in CRITICAL:
        out.append(("PSU_FAILURE", Verdict.FAIL, f"status {s.status}"))
    return out


def _crossing(s: Sensor, limits: dict[str, float] | None) -> tuple[str, str] | None:
    """('critical' or 'warning', what) for a voltage or current sensor beyond its thresholds. The
    BMC's own status first; then the reading against the sensor's listed thresholds (the BMC may
    lag a reading: a value beyond a threshold is past it, one exactly at it is not)."""
    shown = f"{s.reading:g} {s.unit}".strip() if s.reading is not None else "no reading"
    if s.status in CRITICAL:
        return "critical", f"{shown}, status {s.status} (beyond its critical threshold)"
    if s.reading is not None and limits:
        for key, level, beyond in (("lnr", "critical", s.reading < limits.get("lnr", float("-inf"))),
                                   ("unr", "critical", s.reading > limits.get("unr", float("inf"))),
                                   ("lcr", "critical", s.reading < limits.get("lcr", float("-inf"))),
                                   ("ucr", "critical", s.reading > limits.get("ucr", float("inf")))):
            if beyond:
                side = "below its lower" if key[0] == "l" else "above its upper"
                kind = "non-recoverable" if key.endswith("nr") else "critical"
                return level, f"{shown}, {side} {kind} threshold {limits[key]:g}"
    if s.status in NON_CRITICAL:
        return "warning", f"{shown}, status {s.status} (beyond its non-critical threshold)"
    if s.reading is not None and limits:
        if s.reading < limits.get("lnc", float("-inf")):
            return "warning", f"{shown}, below its lower non-critical threshold {limits['lnc']:g}"
        if s.reading > limits.get("unc", float("inf")):
            return "warning", f"{shown}, above its upper non-critical threshold {limits['unc']:g}"
    return None


def judge_psu(name: str, run: BmcRun) -> CheckResult:
    """The node's PSU signals around one power test (`name`: stress.power or stress.power_pulse)."""
    if run.unavailable:
        return skip(name, "node", f"PSU sensors not read: {run.unavailable}", code="BMC_UNAVAILABLE")
    # A read that listed no sensor (ipmitool exiting 0 with nothing) read no PSU: it is no reading.
    good = [r for r in run.readings if not r.error and r.sensors]
    during = [r for r in good if r.label != "before the test"]
    failed = [r for r in run.readings if r.error or not r.sensors]
    if not good and not any(r.error for r in run.readings):
        return skip(name, "node", "PSU sensors not read: the BMC lists no power-supply, voltage or current sensors",
                    code="BMC_UNAVAILABLE")
    if not during:
        why = (failed[0].error or "the BMC listed no sensor") if failed else "no reading during or after the test"
        return skip(name, "node", f"PSU sensors not read during the test: {why}", code="BMC_UNAVAILABLE")
    # Sensors by record id, names shared by several shown with theirs; one the BMC gave no reading
    # of ("ns", "No Reading") is not counted as read, and is named.
    listed = [s for r in good for s in r.sensors]
    ids: dict[str, set[str]] = {}
    for s in listed:
        ids.setdefault(s.name, set()).add(s.sdr_id)

    def shown(s: Sensor) -> str:
        return f"{s.name} [{s.sdr_id}]" if len(ids[s.name]) > 1 else s.name
    read = {s.key for s in listed if s.read}
    unread = sorted({shown(s) for s in listed if s.key not in read})
    kinds = {kind: len({s.key for s in listed if s.kind == kind and s.key in read}) for kind in ("psu", "voltage", "current")}
    if not any(kinds.values()):
        what = (f"the BMC gave no reading of its sensors ({_listed(unread)})" if unread else
                "the BMC lists no power-supply, voltage or current sensors")
        return skip(name, "node", f"PSU sensors not read: {what}", code="BMC_UNAVAILABLE")
    before = good[0] if good and good[0].label == "before the test" else None
    # What each sensor showed wrong, first seen in which reading: (sensor, what) -> (code, verdict, text, reading)
    first_seen: dict[tuple[tuple[str, str], str], tuple[str, Verdict, str, BmcReading]] = {}
    for reading in good:
        for s in reading.sensors:
            if s.kind == "psu":
                for code, verdict, what in _psu_problems(s):
                    first_seen.setdefault((s.key, what), (code, verdict, f"{shown(s)}: {what}", reading))
            else:
                crossed = _crossing(s, (run.thresholds or {}).get(s.name))
                if crossed is None:
                    continue
                level, what = crossed
                code = "PSU_SENSOR_CRITICAL" if level == "critical" else "PSU_SENSOR_WARNING"
                verdict = Verdict.FAIL if level == "critical" else Verdict.WARN
                first_seen.setdefault((s.key, level), (code, verdict, f"{shown(s)} ({s.kind}): {what}", reading))
    findings = []
    for code, verdict, text, reading in first_seen.values():
        if reading is before and code == "PSU_SENSOR_CRITICAL":
            findings.append(Judgement(Verdict.WARN, code, f"{text} already before the test (not the test's doing; "
                                                        "see the BMC)"))
        else:
            when = "already before the test" if reading is before else reading.label
            findings.append(Judgement(verdict, code, f"{text} {when}"))
    values = {"psus": Value(kinds["psu"]), "voltage_sensors": Value(kinds["voltage"]),
              "current_sensors": Value(kinds["current"]), "readings": Value(len(good))}
    points = ("before the test, at each period's start and end, and after it"
              if any(r.period_s is not None for r in good) else _joined(sorted(
                  {_when(r.label) for r in good}, key=("before", "during", "after").index)
                  ) + " the test")  # only the points read: "before and after" where none was read during
    if not findings:
        # Rails within their limits say nothing of the PSUs' own state: claimed only where it was read.
        psus = ("no PSU failure, input loss or redundancy loss, " if kinds["psu"] else
                "no power-supply sensor listed, so the PSUs' own state was not read; ")
        findings = [Judgement(Verdict.PASS, None,
                            f"{kinds['psu']} PSU, {kinds['voltage']} voltage and {kinds['current']} current sensor(s) "
                            f"read {len(good)} times ({points}): {psus}no voltage or current beyond its thresholds")]
    result = fold(name, "node", findings, values, [], key="readings", evidence=_evidence(run))
    notes = []
    if unread:
        notes.append(f"no reading of {_listed(unread)}")
    if failed:
        notes.append(f"{len(failed)} reading(s) failed ({failed[0].label}: {failed[0].error or 'no sensor listed'})")
    if run.thresholds is None and run.thresholds_error:
        notes.append(f"thresholds not listed ({run.thresholds_error}): the BMC's own status judged alone")
    if notes:
        result.message += "; " + "; ".join(notes)
    return result


def _when(label: str) -> str:
    """Before, during or after the test, of a reading's label ("during the 20 ms period": during)."""
    return {"before the test": "before", "after the test": "after"}.get(label, "during")


def _listed(names: list[str], most: int = 5) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _joined(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def _evidence(run: BmcRun) -> dict[str, Any]:
    """Every reading, with the sensors that were not plainly healthy in full and the rest counted."""
    def unhealthy(s: Sensor) -> bool:
        return (s.status not in ("ok", "ns", "na")
                or (s.kind == "psu" and any(e.lower() != "presence detected" and e.lower() != "fully redundant"
                                            for e in s.events)))
    return {"readings": [{"label": r.label, "t_s": r.t_s, "error": r.error, "sensors": len(r.sensors),
                          "not_ok": [s.to_dict() for s in r.sensors if unhealthy(s)]} for r in run.readings],
            "psus": sorted({s.name for r in run.readings for s in r.sensors if s.kind == "psu"}),
            "thresholds": run.thresholds, "thresholds_error": run.thresholds_error}
