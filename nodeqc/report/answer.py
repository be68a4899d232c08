"""The answer a person needs, computed once: for every subject that failed or warned, the check, the
part with its identity (GPU index, bus id, serial; NIC name and PCI address), one short finding
with the numbers first, and what to do. Plus the checks that did not run, counted once per reason.

The runner puts this in the report and in its last event; the headless summary, the GUI banner and
detail pane, `nodeqc show` and the PDF all render it and decide nothing themselves.
"""

from __future__ import annotations

import re

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from nodeqc.core.codes import advice, escalation, not_applicable_reason, not_run_reason
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.text import is_digits
from nodeqc.spec.selection import describe_partial, partial_words

SHOWN_ORDER = {"fail": 0, "error": 0, "warn": 1}

# Background and text colour per state (a verdict's, the answer's, the app's running/idle), one for
# the app and the printed summary alike: strong, high-contrast, readable in a bright room, and always
# beside the state's word, never colour alone.
COLOURS: dict[str, tuple[str, str]] = {
    "pass": ("#1b7f2a", "#ffffff"),
    "warn": ("#f2b705", "#000000"),
    "fail": ("#c4161c", "#ffffff"),
    "error": ("#7a0a2e", "#ffffff"),
    "skip": ("#8a8f98", "#ffffff"),
    "n/a": ("#8a8f98", "#ffffff"),  # a check of another GPU generation (nodeqc.core.codes.NOT_APPLICABLE)
    "running": ("#1558b0", "#ffffff"),
    "aborted": ("#e06c00", "#000000"),
    "idle": ("#dfe3e8", "#000000"),
}

WORDS = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "error": "ERROR", "skip": "SKIP", "n/a": "N/A",
         "running": "RUNNING", "aborted": "ABORTED", "idle": "WAITING"}


@dataclass(frozen=True)
class Part:
    """What a subject is, so a technician can find it in the chassis and the archive can follow it."""

    kind: str  # gpu | nic | node
    subject: str  # gpu3, nic1, node
    name: str = ""  # GPU: its model; NIC: its interface or RDMA device name
    index: int | None = None  # GPU index
    bus_id: str | None = None
    serial: str | None = None  # GPU serial; NIC: its MAC (NICs have no serial in sysfs)

    @property
    def identity(self) -> str:
        """'GPU 3 (0000:61:00.0, serial 1654...)', 'NIC ibp24s0 (0000:18:00.0)', 'node'."""
        if self.kind == "gpu":
            head = f"GPU {self.index if self.index is not None else self.subject}"
        elif self.kind == "nic":
            head = f"NIC {self.name or self.subject}"
        else:
            return self.subject
        details = [d for d in (self.bus_id, f"serial {self.serial}" if self.kind == "gpu" and self.serial else None) if d]
        return f"{head} ({', '.join(details)})" if details else head

    @property
    def key(self) -> str | None:
        """How the archive follows this part from report to report (None: it cannot)."""
        if self.kind == "gpu" and self.serial:
            return f"gpu:{self.serial}"
        if self.kind == "nic" and (self.serial or self.bus_id):
            return f"nic:{self.serial or self.bus_id}"
        return None


@dataclass
class Finding:
    verdict: str  # fail | error | warn
    check: str
    subject: str
    part: Part
    finding: str  # the first finding of the result, numbers first
    code: str | None
    remediation: str
    more: list[str] = field(default_factory=list)  # the result's other findings, one sentence each
    escalation: int = 0  # 0: first time; 1, 2: this part failed this way before, after a repair
    repair: str | None = None  # on a re-test: STILL FAILING, CHANGED or NEW

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["part"] = {**asdict(self.part), "identity": self.part.identity, "key": self.part.key}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Finding":
        part = {k: v for k, v in (d.get("part") or {}).items() if k in Part.__dataclass_fields__}
        fields = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k != "part"}
        return cls(part=Part(**{"kind": "node", "subject": d.get("subject", "node"), **part}), **fields)


@dataclass(frozen=True)
class NotRun:
    """Checks that judged nothing for one reason: how many results, and which checks."""

    reason: str
    count: int
    checks: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "count": self.count, "checks": list(self.checks)}


# ---------------------------------------------------------------------- computing


def parts(gpus: Iterable[dict[str, Any]], nics: Iterable[dict[str, Any]]) -> dict[str, Part]:
    """subject -> Part, from the report's GPU list and the NIC inventory's evidence."""
    out: dict[str, Part] = {}
    for g in gpus:
        if g.get("subject"):
            out[g["subject"]] = Part("gpu", g["subject"], str(g.get("name") or ""), g.get("index"),
                                     _text(g.get("bus_id")), _text(g.get("serial")))
    for n in nics:
        if n.get("subject"):
            out[n["subject"]] = Part("nic", n["subject"], str(n.get("name") or ""), None, _text(n.get("bus_id")),
                                     _text(n.get("mac")))
    return out


def nics_of(results: Iterable[CheckResult | dict[str, Any]]) -> list[dict[str, Any]]:
    """The NICs the run listed (the nic.inventory result's evidence)."""
    for r in results:
        name, evidence = (r.name, r.evidence) if isinstance(r, CheckResult) else (r.get("name"), r.get("evidence"))
        if name == "nic.inventory" and isinstance(evidence, dict):
            return [n for n in evidence.get("nics", []) if isinstance(n, dict)]
    return []


def collect(results: list[CheckResult], gpus: list[dict[str, Any]]) -> list[Finding]:
    """A Finding for each failing, erroring or warning result: failures first, then warnings; within
    each the node, the GPUs by index, the NICs; a part's checks in run order."""
    known = parts(gpus, nics_of(results))
    found = []
    for r in results:
        if r.verdict not in (Verdict.FAIL, Verdict.ERROR, Verdict.WARN):
            continue
        part = known.get(r.subject) or _unlisted(r.subject)
        message = _without_identity(r.message, part)
        diagnosis = r.evidence.get("diagnosis") if isinstance(r.evidence, dict) else None
        said = diagnosis.get("message") if isinstance(diagnosis, dict) else None
        if isinstance(said, str) and message.startswith(said + "; "):
            # A diagnosis leads its measure's message (diagnosis.apply): the figure and its floor come
            # next, and a line without them says why without saying how far (the 2026-11-28 advice review).
            first, *more = split_findings(message[len(said) + 2:])
            first = f"{said}; {first}"
        else:
            first, *more = split_findings(message)
        found.append(Finding(r.verdict.value, r.name, r.subject, part, first, r.code,
                             advice(r.code, r.subject, r.evidence, r.verdict.value) if r.code else "See the check's evidence.", more))
    return sorted(found, key=lambda f: (SHOWN_ORDER[f.verdict], _part_order(f.part)))


def _unlisted(subject: str) -> Part:
    """A subject the inventory did not describe (a GPU on the bus the driver did not bring up)."""
    kind = subject.rstrip("0123456789")
    number = subject[len(kind):]
    if kind == "gpu" and number:
        return Part("gpu", subject, index=int(number))
    return Part(kind if kind in ("gpu", "nic") else "node", subject, name=subject if kind == "nic" else "")


def _part_order(part: Part) -> tuple[int, int, str]:
    """The node first (its failures are often the cause of the rest), then GPUs by index, then NICs."""
    number = part.subject[len(part.subject.rstrip("0123456789")):]
    return ({"node": 0, "gpu": 1, "nic": 2}.get(part.kind, 3), int(number) if number else -1, part.subject)


def not_run(results: list[CheckResult]) -> list[NotRun]:
    """The results that judged nothing (SKIP), one entry per reason, the commonest first. The reason
    is the code's short text where it has one (nodeqc.core.codes.NOT_RUN), else the message. A check that
    does not apply to the GPU's generation (nodeqc.core.codes.NOT_APPLICABLE) left nothing untested: it
    is not among them."""
    groups: dict[str, list[CheckResult]] = {}
    for r in results:
        if r.verdict is Verdict.SKIP and not not_applicable_reason(r.code):
            reason = not_run_reason(r.code) or _reason_of(r.message)
            groups.setdefault(reason, []).append(r)
    entries = [NotRun(reason, len(rs), tuple(dict.fromkeys(r.name for r in rs))) for reason, rs in groups.items()]
    return sorted(entries, key=lambda e: -e.count)


def not_applicable(results: list[CheckResult]) -> list[str]:
    """What does not apply to this node's GPUs, each said once however many GPUs skipped it."""
    return list(dict.fromkeys(reason for r in results
                              if r.verdict is Verdict.SKIP and (reason := not_applicable_reason(r.code))))


def _reason_of(message: str) -> str:
    """A skip's reason from its message, where its code has no short text: the first finding, less a
    leading 'not run: ' (the tally says that) and the details in brackets after its first words, so
    that GPUs skipped for one reason count together ('never sampled under load (89 idle sample(s),
    peak 31.1 C): ...' on each GPU, with its own figures, is one reason)."""
    first = split_findings(message)[0].removeprefix("not run: ")
    head, sep, _ = first.partition(" (")
    return head if sep and len(head) >= 12 else first


def split_findings(message: str) -> list[str]:
    """A result's message holds its findings joined by '; ' (checks.common.fold): one each."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(message):
        depth += (ch in "([") - (ch in ")]")
        if depth == 0 and message.startswith("; ", i):  # a '; ' inside brackets is part of one finding
            parts.append(message[start:i])
            start = i + 2
    parts.append(message[start:])
    return [p.strip() for p in parts if p.strip()] or [message]


def _without_identity(message: str, part: Part | None) -> str:
    """NIC messages start 'ibp24s0 (mlx5_core, 0000:18:00.0): ...': the part is named beside it."""
    if part is not None and part.kind == "nic" and part.name and message.startswith(part.name):
        head, sep, rest = message.partition("): ")
        if sep and "(" in head:
            return rest
        if message.startswith(f"{part.name}: "):
            return message[len(part.name) + 2:]
    return message


def _text(value: Any) -> str | None:
    return None if value in (None, "", "N/A") else str(value)


# ---------------------------------------------------------------------- a report's answer


TALLY_REASONS = 3  # reasons for checks not run named in the one-line tally; every check lists its own


@dataclass
class Answer:
    """All a face shows of a finished run, before the list of every check."""

    verdict: str  # PASS | FAIL
    status: str  # complete | aborted
    counts: dict[str, int]
    findings: list[Finding]
    not_run: list[NotRun]
    partial: str | None = None  # what --only/--skip left out
    simulated: bool = False
    repair: dict[str, Any] | None = None  # the repair this run re-tests, with FIXED / STILL FAILING
    not_applicable: list[str] = field(default_factory=list)  # checks this generation of GPU has no use for

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if f.verdict in ("fail", "error")]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.verdict == "warn"]

    @property
    def state(self) -> str:
        """pass | fail | error | aborted: the word's colour in the faces. 'error' where checks could
        not run and none failed (another process on a GPU, a missing tool): the run's exit status
        is 2 and the node is not qualified, but nothing says its hardware is bad."""
        if self.status == "aborted":
            return "aborted"
        if self.verdict == "PASS":
            return "pass"
        return "error" if self.counts.get("error") and not self.counts.get("fail") else "fail"

    @property
    def word(self) -> str:
        """The verdict's word as a face shows it: PASS, FAIL, ERROR or ABORTED."""
        return {"aborted": "ABORTED", "error": "ERROR"}.get(self.state, self.verdict)

    @property
    def headline(self) -> str:
        """'FAIL: 187 passed, 3 failed; 25 not run: 17 no NIC peer given (pass --nic-peer), 8 ...'."""
        word = {"aborted": "ABORTED (not qualified)",
                "error": "ERROR (a check could not run: not qualified)"}.get(self.state, self.verdict)
        if self.partial and self.status != "aborted":
            word += f" (PARTIAL: {partial_words(self.partial)}; not a qualification)"
        return f"{word}: {self.tally}"

    @property
    def tally(self) -> str:
        """'187 passed, 3 failed; 25 not run: 17 no NIC peer given (pass --nic-peer), 8 ...'."""
        c = self.counts
        done = [f"{c.get('pass', 0)} passed"] + [f"{c[k]} {w}" for k, w in (("warn", "warned"), ("fail", "failed"),
                                                                        ("error", "could not run")) if c.get(k)]
        text = ", ".join(done)
        skipped = sum(e.count for e in self.not_run)
        if skipped:
            shown = self.not_run if len(self.not_run) <= TALLY_REASONS + 1 else self.not_run[:TALLY_REASONS]
            reasons = (shown[0].reason if len(self.not_run) == 1 else
                       ", ".join(f"{e.count} {e.reason}" for e in shown))
            rest = self.not_run[len(shown):]
            if rest:
                reasons += f", {sum(e.count for e in rest)} more for {len(rest)} other reasons"  # 2 and more
            text += f"; {skipped} not run: {reasons}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"headline": self.headline, "findings": [f.to_dict() for f in self.findings],
                "not_run": [e.to_dict() for e in self.not_run], "not_applicable": self.not_applicable}


def answer(results: list[CheckResult], gpus: list[dict[str, Any]], verdict: str, status: str,
           partial: str | None = None, simulated: bool = False) -> Answer:
    counts = {v.value: sum(1 for r in results if r.verdict is v) for v in Verdict}
    return Answer(verdict, status, counts, collect(results, gpus), not_run(results), partial, simulated,
                  not_applicable=not_applicable(results))


def answer_of(predicate: dict[str, Any]) -> Answer:
    """The answer a report carries; computed from its checks for a report written before it did."""
    checks = [CheckResult.from_dict(c) for c in predicate.get("checks", [])]
    partial = predicate.get("partial")
    partial_text = describe_partial(partial) if isinstance(partial, dict) else None
    got = answer(checks, predicate.get("gpus", []), str(predicate.get("verdict", "?")),
                 str(predicate.get("status", "complete")), partial_text, bool(predicate.get("simulated")))
    stored = predicate.get("answer")
    if isinstance(stored, dict) and isinstance(stored.get("findings"), list):
        got.findings = [Finding.from_dict(f) for f in stored["findings"] if isinstance(f, dict)]
    got.repair = predicate.get("repair") if isinstance(predicate.get("repair"), dict) else None
    return got


# ---------------------------------------------------------------------- text


ESCALATED = {1: "AGAIN after a repair", 2: "REPEATED after repairs"}


SHOWN_PARTS = 20  # parts the end-of-run summary lists; `nodeqc show` lists them all


def finding_lines(findings: list[Finding], indent: str = "  ", limit: int | None = None) -> list[str]:
    """Grouped by part: the part's identity, then each check's finding, then what to do (once per
    distinct remediation). At most `limit` parts, then how many more."""
    out: list[str] = []
    by_part: dict[str, list[Finding]] = {}
    for f in findings:
        by_part.setdefault(f.subject, []).append(f)
    groups = list(by_part.values())
    for group in groups[:limit]:
        worst = min(group, key=lambda f: SHOWN_ORDER[f.verdict])
        out.append(f"{indent}{worst.verdict.upper():<5} {group[0].part.identity}")
        for f in group:
            status = f"  [{f.repair}]" if f.repair else ""
            again = f"  ({ESCALATED[min(f.escalation, 2)]})" if f.escalation else ""
            out.append(f"{indent}      {f.check}: {f.finding} [{f.code}]{status}{again}")
        for text in dict.fromkeys(f.remediation for f in group):
            out.append(f"{indent}      what to do: {text}")
    if limit is not None and len(groups) > limit:
        out.append(f"{indent}... and {len(groups) - limit} more part(s): nodeqc show REPORT lists them all")
    return out


def answer_lines(a: Answer, limit: int | None = None) -> list[str]:
    """The end of a run, or the top of a report: the headline, each failing and warning part (at
    most `limit`), the checks that did not run, the repair this run re-tested."""
    out = [a.headline]
    if a.simulated:
        out[0] += "  ** SIMULATED: not a qualification of real hardware **"
    if a.partial:
        out.append(f"  partial run: {a.partial}")
    out += finding_lines(a.findings, limit=limit)
    if a.not_applicable:
        out.append(f"  not applicable to these GPUs: {'; '.join(a.not_applicable)}")
    if a.repair:
        out += repair_lines(a.repair)
    return out


def repair_lines(repair: dict[str, Any]) -> list[str]:
    """The repair block in the terminal's monospace: the action and the re-tested report, then each
    part's status padded to one column (repair_rows says the same rows, for a table)."""
    rows = repair_rows(repair)
    heads = 2 if repair.get("action") else 1
    return ([f"  repair: {text}" if label == REPAIR else f"  re-test of {text}" for label, text in rows[:heads]]
            + [f"    {label:<13} {text}" if label else f"    {text}" for label, text in rows[heads:]])


REPAIR, RETEST_OF = "Repair", "Re-test of"  # the labels of repair_rows' first rows


def repair_rows(repair: dict[str, Any]) -> list[tuple[str, str]]:
    """The repair block as (label, text) rows: what was repaired (REPAIR, when said), the re-tested
    report (RETEST_OF), then each part's status (FIXED, STILL FAILING, ...) with what it was."""
    prev = repair.get("previous") or {}
    out = [(REPAIR, str(repair["action"]))] if repair.get("action") else []
    if repair.get("action") and repair.get("named") is False:
        out[0] = (REPAIR, out[0][1] + " (names no part: counted as a repair of every failing part)")
    elif repair.get("action") and repair.get("named"):
        out[0] = (REPAIR, out[0][1] + (f" (of {', '.join(map(str, repair.get('parts') or []))})" if repair.get("parts")
                                       else " (of no part that failed in the re-tested report)"))
    out.append((RETEST_OF, f"{prev.get('path') or prev.get('report')} (sha256 {str(prev.get('sha256'))[:16]}, "
                           f"{'ABORTED' if prev.get('status') == 'aborted' else prev.get('verdict')})"))
    statuses = subject_status(repair)
    by_subject: dict[str, list[dict[str, Any]]] = {}
    for o in repair.get("outcomes", []):
        by_subject.setdefault(o.get("subject"), []).append(o)
    for subject, group in by_subject.items():
        checks = ", ".join(f"{o.get('check')} {o.get('status')}" if o.get("status") != statuses[subject]
                           else str(o.get("check")) for o in group)
        code = str(group[0].get("code")) + (f" -> {group[0]['code_now']}" if group[0].get("code_now") else "")
        since = sorted({str(o["report"]) for o in group if o.get("report") and o["report"] != prev.get("report")})
        where = f" (open since {', '.join(since)})" if since else ""
        out.append((statuses[subject], f"{group[0].get('identity') or subject}: {checks} [{code}]{where}"))
    if not by_subject:
        out.append(("", "(the re-tested report had no failures)"))
    return out


# ---------------------------------------------------------------------- the repair loop

FIXED, STILL_FAILING, NOT_RETESTED, NEW = "FIXED", "STILL FAILING", "NOT RE-TESTED", "NEW"
CHANGED = "CHANGED"  # the same check on the same part fails again, with another code


def failures_of(predicate: dict[str, Any]) -> list[dict[str, Any]]:
    """A report's failures in short, for the report that re-tests it to say what became of each."""
    return [{"check": f.check, "subject": f.subject, "code": f.code, "part": f.part.key,
             "identity": f.part.identity} for f in answer_of(predicate).failing]


def repair_outcome(previous: dict[str, Any], action: str | None, results: list[CheckResult],
                   findings: list[Finding], repair_parts: Iterable[str] = ()) -> dict[str, Any]:
    """What became of each failure of the re-tested report: FIXED (it passes now), STILL FAILING
    (with the same code), CHANGED (it fails with another code: another fault, or the first one
    moved) or NOT RE-TESTED (the check did not run); failures it did not have are marked NEW, also
    after a report that passed. A part is followed by its identity (a swapped GPU is another part,
    even in the same slot)."""
    now = {(r.name, r.subject): r for r in results}
    outcomes = []
    for old in previous.get("failures") or []:
        r = now.get((old.get("check"), old.get("subject")))
        if r is None or r.verdict is Verdict.SKIP:
            status = NOT_RETESTED
        elif r.verdict.blocks_qualification:
            status = STILL_FAILING if r.code == old.get("code") else CHANGED
        else:
            status = FIXED
        outcomes.append({**old, "status": status, **({"code_now": r.code} if status == CHANGED and r else {})})
    named, names_a_part = repair_targets(action, list(repair_parts), outcomes) if action else (set(), False)
    for o in outcomes:  # what the repair was of: the parts it names, else (it names none) every one
        if action:
            o["repaired"] = not names_a_part or o.get("subject") in named
    codes_before = {(o.get("check"), o.get("subject")): o.get("code") for o in outcomes}
    for f in findings:
        if f.verdict in ("fail", "error"):
            before = codes_before.get((f.check, f.subject), NEW)
            f.repair = NEW if before == NEW else STILL_FAILING if before == f.code else CHANGED
    return {"action": action, **({"parts": sorted(named), "named": names_a_part} if action else {}),
            "previous": {k: previous.get(k) for k in ("report", "path", "sha256", "verdict",
                                                                          "status", "finished_at")
                                           if k != "status" or previous.get(k)},
            "outcomes": outcomes}


_BUS_ID = re.compile(r"\b[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b")


def _part_words(o: dict[str, Any]) -> list[str]:
    """How a repair note or --repair-part may name the part of one failure: its subject (gpu3, nic1),
    'GPU 3' by its index, its serial, bus id, NIC name or MAC."""
    subject = str(o.get("subject") or "")
    identity = str(o.get("identity") or "")
    words = [subject]
    head = re.match(r"(GPU|NIC) (\S+)", identity)
    if head:
        words.append(f"{head.group(1)} {head.group(2)}")
        if head.group(1) == "NIC":
            words.append(head.group(2))  # its interface or RDMA device name
    words += _BUS_ID.findall(identity.lower())
    key = str(o.get("part") or "")
    if ":" in key:
        words.append(key.split(":", 1)[1])  # a GPU's serial, a NIC's MAC or PCI address
    return [w for w in words if w and w != "node"]


def _names(text: str, word: str) -> bool:
    """Does the note name this word as a whole ('GPU 3' or 'gpu3', not 'GPU 30')?"""
    parts = re.split(r"\s+", word.strip().lower())
    kind_number = re.fullmatch(r"(gpu|nic)\s*#?(\d+)", word.strip().lower())
    pattern = (rf"{kind_number.group(1)}\s*#?\s*{kind_number.group(2)}" if kind_number
               else r"\s+".join(re.escape(p) for p in parts))
    return re.search(rf"(?<![\w:.-]){pattern}(?![\w:-]|\.\w)", text.lower()) is not None


# A part named in a note, failing or not: 'GPU 3', 'gpu3', 'NIC 1', a PCI bus id.
_ANY_PART = re.compile(r"(?<![\w-])(?:gpu|nic)\s*#?\s*\d+(?!\w)|" + _BUS_ID.pattern, re.IGNORECASE)


def repair_targets(action: str, repair_parts: list[str], outcomes: list[dict[str, Any]]) -> tuple[set[str], bool]:
    """The subjects of the re-tested failures a repair was of, and whether it names a part at all:
    the parts named with --repair-part (gpu3, 3, a serial, a bus id, a NIC name or MAC), else those
    the note names the same ways ('reseated GPU 3 riser', 'swapped gpu3', a serial). A note that
    names a part of the node that did not fail ('GPU 3' when only GPU 5 failed) is a repair of none
    of the failures. A note that names no part ('reseated the risers'; a serial of a part that did
    not fail is not recognised) counts for every failing part, and its record says so (named false)."""
    wanted = [f"gpu{w.strip()}" if is_digits(w.strip()) else w for w in repair_parts]
    texts = wanted or [action]
    found = {str(o.get("subject")) for o in outcomes
             if any(_names(t, w) if not wanted else t.strip().lower() == w.lower()
                    for t in texts for w in _part_words(o))}
    return found, bool(wanted or found or _ANY_PART.search(action))


def subject_status(repair: dict[str, Any]) -> dict[str, str]:
    """Per subject: STILL FAILING if any of its failures is, else CHANGED if one fails with another
    code, else FIXED if one was fixed, else NOT RE-TESTED."""
    out: dict[str, str] = {}
    rank = {STILL_FAILING: 3, CHANGED: 2, FIXED: 1, NOT_RETESTED: 0}
    for o in repair.get("outcomes", []):
        s = o.get("subject")
        if s not in out or rank.get(o["status"], 0) > rank.get(out[s], 0):
            out[s] = o["status"]
    return out


def repairs_of(predicate: dict[str, Any]) -> list[tuple[str, str]]:
    """(part key, code) of each failure a report's repair was meant to fix: the repairs a part has had."""
    repair = predicate.get("repair")
    if not isinstance(repair, dict) or not repair.get("action"):
        return []
    return [(o["part"], o["code"]) for o in repair.get("outcomes", [])
            if o.get("part") and o.get("code") and o.get("repaired", True) is not False]


def repaired_subjects(repair: dict[str, Any] | None) -> set[str]:
    """The subjects of a report's re-tested failures its repair was of (older reports: all)."""
    if not isinstance(repair, dict) or not repair.get("action"):
        return set()
    return {str(o.get("subject")) for o in repair.get("outcomes", []) if o.get("repaired", True) is not False}


def escalate(findings: list[Finding], prior: dict[str, int], repair: dict[str, Any] | None) -> None:
    """A failure that comes back on the same part with the same code after a repair climbs the ladder
    (nodeqc.core.codes.escalation): the first remedy was tried and did not hold. `prior` counts earlier
    repairs per 'part|code' (from the archive); a repair recorded in this very run counts too."""
    this_run = {(p, c) for p, c in repairs_of({"repair": repair})} if repair else set()
    for f in findings:
        if f.verdict not in ("fail", "error") or not f.part.key or not f.code:
            continue
        now = (f.part.key, f.code) in this_run
        times = prior.get(f"{f.part.key}|{f.code}", 0) + now
        if times:
            f.escalation = min(times, 2)
            f.remediation = escalation(f.code, f.escalation, f.part)
            if now and repair is not None and repair.get("named") is False:
                f.remediation += (f" (The repair \"{repair.get('action')}\" named no part, so it counts for every "
                                  "part still failing; name the part in the note or with --repair-part.)")


def xids_of(predicate: dict[str, Any]) -> dict[str, list[int]]:
    """part key -> the XID codes a report's health.xid saw on that GPU (whatever their verdict), for
    the next run of the node to tell an XID that returned."""
    known = parts(predicate.get("gpus") or [], [])
    out: dict[str, list[int]] = {}
    for r in predicate.get("checks") or []:
        if not isinstance(r, dict) or r.get("name") != "health.xid" or not isinstance(r.get("evidence"), dict):
            continue
        part = known.get(r.get("subject"))
        events = r["evidence"].get("xids")
        codes = sorted({e["code"] for e in events if isinstance(e, dict) and type(e.get("code")) is int}
                       if isinstance(events, list) else ())
        if part and part.key and codes:
            out[part.key] = codes[:200]  # bounded: the report's own list is
    return out


def xids_returned(findings: list[Finding], results: list[CheckResult], previous: dict[str, Any] | None) -> None:
    """An XID that comes back on the same GPU (by serial) in the node's next run came back after the
    reset or reboot the earlier report asked for: gpud's rule, hardware inspection. Its finding says
    so; the verdict stays this run's own (the XID is judged by the catalogue, nodeqc.checks.health.xid)."""
    before = (previous or {}).get("xids")
    if not isinstance(before, dict):
        return
    now = {(r.subject, r.name): r for r in results}
    for f in findings:
        r = now.get((f.subject, f.check))
        if f.check != "health.xid" or r is None or not f.part.key or not isinstance(before.get(f.part.key), list):
            continue
        again = sorted({e.get("code") for e in r.evidence.get("xids", [])} & set(before[f.part.key]))
        if not again:
            continue
        codes = ", ".join(f"XID {c}" for c in again)
        f.escalation = max(f.escalation, 1)
        inspect = ("RMA it" if f.verdict in ("fail", "error") else
                   "have it inspected (reseat it, check its power and cooling) and re-run")
        f.remediation = (f"{codes} came back on {f.part.identity} after the previous run "
                         f"({previous.get('report') or previous.get('path')}): the reset or reboot did not clear it, "
                         f"so the GPU needs hardware inspection: {inspect}.")
