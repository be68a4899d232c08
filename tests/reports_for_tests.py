"""Signed reports made without a run, for archive tests that need many reports with chosen nodes,
verdicts and dates. They are real signed reports (nodeqc.report.envelope), only their predicate is small."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodeqc.archive.filing import safe_name
from nodeqc.report.envelope import FABRIC_PREDICATE_TYPE, sign, statement, write_envelope
from nodeqc.report.keys import Signer, load_signer


def predicate(serial: str, verdict: str = "PASS", finished_at: str = "2026-11-01T10:00:00Z",
              hostname: str | None = None, partial: dict[str, Any] | None = None,
              status: str = "complete") -> dict[str, Any]:
    host = hostname or f"host-{serial.lower()}"
    bad = verdict == "FAIL"
    checks = [
        {"name": "health.pcie_link", "subject": "gpu0", "verdict": "fail" if bad else "pass",
         "code": "PCIE_WIDTH" if bad else None, "message": "link", "key": "width",
         "values": {"width": {"value": 8 if bad else 16, "unit": ""}}, "thresholds": [], "evidence": {}},
        {"name": "host.memory", "subject": "node", "verdict": "pass", "code": None, "message": "memory",
         "key": "memory", "values": {"memory": {"value": 503.0, "unit": "GiB"}}, "thresholds": [],
         "evidence": {}},
    ]
    return {
        "verdict": verdict, "status": status, "simulated": False, "simulation": None,
        "profile": {"name": "h100"}, "quick": True, "partial": partial, "previous": None,
        "node": {"hostname": host, "system_serial": serial},
        "gpus": [{"subject": "gpu0", "serial": f"{serial}-G0", "uuid": f"GPU-{serial}", "bus_id": "0000:01:00.0"}],
        "checks": checks,
        "summary": {"counts": {}, "failed": ["health.pcie_link gpu0"] if bad else []},
        "started_at": finished_at, "finished_at": finished_at, "operator": "test", "ticket": None,
    }


def file_report(root: Path, pred: dict[str, Any], signer: Signer | None = None, name: str | None = None) -> Path:
    """Sign a predicate and file it in the archive at `root` as the runner does."""
    signer = signer or load_signer(None)
    directory = root / safe_name(pred["node"]["system_serial"])
    directory.mkdir(parents=True, exist_ok=True)
    stamp = pred["finished_at"].replace("-", "").replace(":", "")
    path = directory / (name or f"{pred['node']['hostname']}-{stamp}.report.json")
    stmt = statement(pred)
    if pred.get("kind") == "fabric":  # as nodeqc.fabric.report signs one: its type says what it holds
        stmt["predicateType"] = FABRIC_PREDICATE_TYPE
    write_envelope(path, sign(stmt, signer))
    return path
