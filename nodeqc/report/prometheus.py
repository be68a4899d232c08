"""The run's verdict and key figures in the Prometheus text format, for node_exporter's textfile
collector (`--collector.textfile.directory`). The file is written then renamed, so the collector
never reads half of it."""

from __future__ import annotations

import calendar
import os
import time
from pathlib import Path
from typing import Any

from nodeqc.core.codes import COUNTED, verdict_counts
from nodeqc.core.errors import UsageError
from nodeqc.core.safefile import OutputError, probe_directory, write_atomic
from nodeqc.report.answer import parts

# nodeqc_checks{verdict}: the report's verdicts, with "n/a" (a check that does not apply to this
# node's hardware: nodeqc.core.codes.NOT_APPLICABLE) counted apart from the skips, as the answer does.
VERDICTS = COUNTED


def check_path(path: Path) -> None:
    """Before the run: the collector reads only *.prom files, and the directory must be writable."""
    if path.suffix != ".prom":
        raise UsageError(f"--prometheus-textfile {path}: the name must end in .prom "
                         "(node_exporter's textfile collector reads only *.prom files)")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK):
        raise UsageError(f"--prometheus-textfile {path}: {path.parent} is not a writable directory")
    try:  # as the write at the end will: root passes os.access in /proc, and failed only after the run
        probe_directory(path)
    except OutputError as e:
        raise UsageError(f"--prometheus-textfile {path}: {e}") from None


def _label(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: Any) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "}" if labels else ""


def _timestamp(iso: str | None) -> float | None:
    if not iso:
        return None
    try:
        return float(calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _counts(predicate: dict[str, Any]) -> dict[str, int]:
    """The results by verdict, the summary's counts with the checks that do not apply taken out of
    the skips into "n/a"."""
    return verdict_counts((predicate.get("summary") or {}).get("counts") or {},
                          [c.get("code") for c in predicate.get("checks") or [] if c.get("verdict") == "skip"])


def wall_seconds(predicate: dict[str, Any]) -> float | None:
    """How long the run took by the wall clock: from started_at to finished_at (UTC stamps, to the
    second). duration_s is on the run's clock, which a simulated node compresses, so it is the wall
    time only of a run on real hardware; it stands in where a report lacks a stamp."""
    start, end = _timestamp(predicate.get("started_at")), _timestamp(predicate.get("finished_at"))
    if start is not None and end is not None and end >= start:
        return end - start
    duration = predicate.get("duration_s")
    return float(duration) if _number(duration) and not predicate.get("simulated") else None


def _gpu_labels(subject: str, known: dict[str, Any]) -> dict[str, Any]:
    """A GPU subject's serial and PCI bus id, as the report lists the GPU; nothing for other subjects."""
    part = known.get(subject)
    if part is None or part.kind != "gpu":
        return {}
    return {"gpu_serial": part.serial or "", "pci_bus_id": part.bus_id or ""}


def render(predicate: dict[str, Any], report_path: Path | str) -> str:
    p = predicate
    node, checks = p.get("node", {}), p.get("checks", [])
    passed = p.get("verdict") == "PASS"
    qualified = passed and p.get("status") == "complete" and not p.get("partial") and not p.get("simulated")
    counts = _counts(p)
    finished = _timestamp(p.get("finished_at"))
    wall = wall_seconds(p)
    gpus = parts([g for g in p.get("gpus") or [] if isinstance(g, dict)], [])
    info = _labels(serial=node.get("system_serial"), hostname=node.get("hostname"),
                   profile=(p.get("profile") or {}).get("name"), version=(p.get("tool") or {}).get("version"),
                   verdict="ABORTED" if p.get("status") == "aborted" else p.get("verdict"),
                   status=p.get("status"), simulated=str(bool(p.get("simulated"))).lower(), report=report_path)
    figures = [(c, c["values"][c["key"]]) for c in checks
               if c.get("key") in (c.get("values") or {}) and _number(c["values"][c["key"]].get("value"))]
    families: list[tuple[str, str, list[str]]] = [
        ("nodeqc_info", "The last nodeqc run on this node (value 1).", [f"nodeqc_info{info} 1"]),
        ("nodeqc_passed", "1 if the last run passed (warnings allowed), else 0.", [f"nodeqc_passed {int(passed)}"]),
        ("nodeqc_qualified", "1 if the last run is a qualification that passed: complete, not partial, "
         "not simulated.", [f"nodeqc_qualified {int(qualified)}"]),
        ("nodeqc_partial", "1 if the last run left checks out (--only/--skip).",
         [f"nodeqc_partial {int(bool(p.get('partial')))}"]),
        ("nodeqc_last_run_timestamp_seconds", "When the last run finished (Unix time).",
         [f"nodeqc_last_run_timestamp_seconds {finished}"] if finished is not None else []),
        ("nodeqc_valid_until_timestamp_seconds", "When the last run's qualification expires (Unix time; the "
         "profile's valid_days). Alert on time() > this.",
         [f"nodeqc_valid_until_timestamp_seconds {until}"] if (until := _timestamp(p.get("valid_until"))) is not None else []),
        ("nodeqc_run_duration_seconds", "How long the last run took by the wall clock (also when simulated).",
         [f"nodeqc_run_duration_seconds {wall}"] if wall is not None else []),
        ("nodeqc_checks", "Check results of the last run by verdict; n/a: checks that do not apply to this "
         "node's hardware, not among the skips.",
         [f"nodeqc_checks{_labels(verdict=v)} {counts.get(v, 0)}" for v in VERDICTS]),
        ("nodeqc_check_failed", "1 for each check result that failed or could not run (a GPU's with its serial "
         "and PCI bus id).",
         [f"nodeqc_check_failed{_labels(check=c['name'], subject=c['subject'], code=c.get('code'), **gpu)} 1"
          for c in checks if c.get("verdict") in ("fail", "error") for gpu in [_gpu_labels(c["subject"], gpus)]]),
        ("nodeqc_check_value", "The key figure of each check result (its unit in the label).",
         [f"nodeqc_check_value{_labels(check=c['name'], subject=c['subject'], figure=c['key'], unit=v.get('unit') or '')} "
          f"{float(v['value'])}" for c, v in figures]),
    ]
    out = []
    for name, help_text, samples in families:
        if samples:
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *samples]
    return "\n".join(out) + "\n"


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


def write_textfile(path: Path, text: str) -> None:
    """Write then rename, in the same directory: the collector sees the old file or the new one."""
    # The temporary name starts with a dot and ends in .tmp, not .prom: never collected half-written.
    try:
        write_atomic(path, text.encode())
    except OutputError as e:  # its message may name the path already: said once
        raise UsageError(f"--prometheus-textfile {path}: {str(e).removeprefix(f'{path}: ')}") from None


def render_watch(watch: dict[str, Any], findings: list[dict[str, Any]]) -> str:
    """A `nodeqc watch` pass (nodeqc.run.watch) in the text format, for the same collector: `watch`
    holds node, hostname, simulated, profile, judged (bool), error, exit_code, healthy, requalify,
    gpus, pass_timestamp, duration_s, qualified_at (or None); each finding check, subject, code,
    verdict, sticky, first_seen, clears_at (None for a sticky one)."""
    info = _labels(node=watch.get("node"), hostname=watch.get("hostname"), profile=watch.get("profile"),
                   simulated=str(bool(watch.get("simulated"))).lower(), error=watch.get("error") or "")

    def keyed(f: dict[str, Any]) -> str:
        return _labels(check=f["check"], subject=f["subject"], code=f["code"], severity=f["verdict"],
                       sticky=str(bool(f["sticky"])).lower())

    qualified = watch.get("qualified_at")
    families: list[tuple[str, str, list[str]]] = [
        ("nodeqc_watch_info", "The last nodeqc watch pass on this node (value 1); error: why it could not judge.",
         [f"nodeqc_watch_info{info} 1"]),
        ("nodeqc_watch_judged", "1 if the last pass read and judged the node, 0 if it could not (NVML missing or "
         "not answering within the deadline).", [f"nodeqc_watch_judged {int(bool(watch.get('judged')))}"]),
        ("nodeqc_watch_healthy", "1 if no failing finding stands (warnings allowed), else 0.",
         [f"nodeqc_watch_healthy {int(bool(watch.get('healthy')))}"]),
        ("nodeqc_watch_needs_requalification", "1 if a sticky finding stands: the node's qualification has "
         "ended until a qualification passes again.",
         [f"nodeqc_watch_needs_requalification {int(bool(watch.get('requalify')))}"]),
        ("nodeqc_watch_exit_code", "The last pass's exit code: 0 healthy, 1 needs attention, 2 could not judge.",
         [f"nodeqc_watch_exit_code {int(watch.get('exit_code', 2))}"]),
        ("nodeqc_watch_gpus", "GPUs the driver listed in the last pass.", [f"nodeqc_watch_gpus {int(watch.get('gpus') or 0)}"]),
        ("nodeqc_watch_unread", "What the last pass could not read (value 1), by check; code HOST_UNREADABLE: "
         "could not judge (exit 2), HOST_NOT_HERE: not on this machine.",
         [f"nodeqc_watch_unread{_labels(check=u.get('check'), code=u.get('code'))} 1" for u in watch.get("unread") or []]),
        ("nodeqc_watch_last_pass_timestamp_seconds", "When the last pass ran (Unix time).",
         [f"nodeqc_watch_last_pass_timestamp_seconds {float(watch['pass_timestamp'])}"] if _number(watch.get("pass_timestamp")) else []),
        ("nodeqc_watch_pass_duration_seconds", "How long the last pass took.",
         [f"nodeqc_watch_pass_duration_seconds {round(float(watch['duration_s']), 3)}"] if _number(watch.get("duration_s")) else []),
        ("nodeqc_watch_qualified_timestamp_seconds", "When the node's newest passing qualification finished.",
         [f"nodeqc_watch_qualified_timestamp_seconds {float(qualified)}"] if _number(qualified) else []),
        ("nodeqc_watch_finding", "1 for each finding that stands (severity fail or warn; sticky: until a "
         "qualification passes, else until it clears).", [f"nodeqc_watch_finding{keyed(f)} 1" for f in findings]),
        ("nodeqc_watch_finding_first_seen_timestamp_seconds", "When each standing finding was first seen.",
         [f"nodeqc_watch_finding_first_seen_timestamp_seconds{keyed(f)} {float(f['first_seen'])}" for f in findings]),
        ("nodeqc_watch_finding_clears_timestamp_seconds", "When each clearing finding clears unless seen again.",
         [f"nodeqc_watch_finding_clears_timestamp_seconds{keyed(f)} {float(f['clears_at'])}"
          for f in findings if _number(f.get("clears_at"))]),
    ]
    out = []
    for name, help_text, samples in families:
        if samples:
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *samples]
    return "\n".join(out) + "\n"
