"""A part's story across the archive: each GPU followed by its serial, each NIC by its MAC (or PCI
address), through every verified report that saw it, with what failed, what was repaired and
whether the repair held. The repair loop asks it how often a part was repaired for a code, so a
failure that comes back escalates (nodeqc.report.answer.escalate).

Read from the verified report files through the archive's listing; nothing is stored beside them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeqc.report.answer import Part, answer_of, nics_of, parts, repaired_subjects, repairs_of, subject_status


@dataclass
class Chapter:
    """One report's word on one part."""

    finished_at: str
    report: Path
    subject: str  # where the part sat in that run (gpu3, nic1)
    identity: str
    result: str  # PASS, or the failing checks with their codes
    repair: str | None = None  # the repair recorded in this report, if it re-tested this part
    repair_status: str | None = None  # FIXED / STILL FAILING for this part
    simulated: bool = False
    failures: list[tuple[str, str | None]] = field(default_factory=list)  # (check, code)
    node: str = ""  # the node whose report it is (its node key)

    def line(self) -> str:
        sim = " SIM" if self.simulated else ""
        text = f"{self.finished_at:<20}  {self.node} {self.subject:<6} {self.result}{sim}"
        if self.repair:
            text += f"  | repair: {self.repair} -> {self.repair_status or 'NOT RE-TESTED'}"
        return f"{text}  {self.report}"


def _predicates(archive: Any, node: str | None = None, by_host_name: bool = True) -> list[tuple[Any, dict[str, Any]]]:
    """(entry, predicate) of the archive's verified reports, oldest first."""
    from nodeqc.report.envelope import VerificationError, verify_file

    out = []
    for entry in reversed(archive.reports(node=node, by_host_name=by_host_name)):
        try:
            out.append((entry, verify_file(entry.path, archive.trusted).predicate))
        except (VerificationError, OSError):
            continue  # changed since it was listed: not evidence
    return out


def part_matches(part: Part, wanted: str) -> bool:
    """SERIAL, a NIC's MAC or PCI address, or the key itself (gpu:SERIAL)."""
    w = wanted.strip().lower()
    return any(str(x).lower() == w for x in (part.key, part.serial, part.bus_id) if x)


def story(archive: Any, wanted: str) -> list[Chapter]:
    """Every report that saw the part, oldest first."""
    chapters = []
    for entry, pred in _predicates(archive):
        known = parts(pred.get("gpus", []), nics_of(pred.get("checks", [])))
        for subject, part in known.items():
            if not part_matches(part, wanted):
                continue
            the_answer = answer_of(pred)
            mine = [f for f in the_answer.failing if f.subject == subject]
            result = ("PASS" if not mine else
                      "FAIL " + ", ".join(f"{f.check} [{f.code}]" for f in mine))
            if pred.get("status") == "aborted":
                result = "ABORTED " + result
            repair = pred.get("repair") if isinstance(pred.get("repair"), dict) else None
            # Only a repair of this part is in its story: one that named another part is not.
            status = subject_status(repair).get(subject) if repair and subject in repaired_subjects(repair) else None
            chapters.append(Chapter(str(pred.get("finished_at")), entry.path, subject, part.identity, result,
                                    repair.get("action") if repair and status else None, status,
                                    bool(pred.get("simulated")), [(f.check, f.code) for f in mine], entry.node))
    return chapters


def prior_repairs(archive: Any, node: str) -> dict[str, int]:
    """'part key|code' -> how many recorded repairs of this node's reports were for that failure: its
    own reports, by its node key alone (another node's report giving this node's name as its host name
    put repairs in this node's signed advice: 'Failed after repeated repairs: RMA', 2026-11-29)."""
    counts: Counter[str] = Counter()
    for _entry, pred in _predicates(archive, node, by_host_name=False):
        for key, code in set(repairs_of(pred)):  # one repair of a part, however many checks it fixed
            counts[f"{key}|{code}"] += 1
    return dict(counts)
