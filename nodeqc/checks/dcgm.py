"""NVIDIA DCGM's diagnostic inside the report: `dcgmi diag -r LEVEL -j` read and judged. Pure
functions: the run itself is nodeqc.backends.dcgm's, the wiring nodeqc.run.dcgm's.

The checks: `dcgm.run` (node: DCGM's run, its version and level, the raw JSON, bounded, in the
evidence; or why it gave no results: not installed, not asked for, hung, printed what is not its
JSON) and one check per DCGM test category, each per GPU: `dcgm.deployment` (DCGM's software
checks), `dcgm.integration` (PCIe), `dcgm.hardware` (memory, the diagnostic, pulse, EUD) and
`dcgm.stress` (targeted stress and power, memory bandwidth, memtest). A category's result for a GPU
is its worst test there, with every test's status, DCGM_FR code, severity, DCGM's message and the
next step in the evidence. DCGM's "Fail" is that GPU's FAIL, "Warn" its WARN.

The JSON shapes, as DCGM's dcgmi/Diag.cpp builds them (github.com/NVIDIA/DCGM):
- DCGM 4.x (4.0 to 4.6.0, checked at commit 72fa3fe; testing/python3/dcgm_diag_schema.json):
  {"DCGM Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results": [{"entity_group":
  "GPU", "entity_group_id", "entity_id": 0, "status": "Pass|Fail|Warn|Skip", "warnings": [{"warning",
  "error_id", "error_category", "error_severity"}], "info": [..]}], "test_summary": {"status", ...}}]}],
  "runtime_error"?}, "entity_groups": [{"entity_group", "entities": [{"entity_id", "serial_num",
  "device_id"}]}], "metadata": {"version", "Driver Version Detected"}}.
- DCGM 3.x (3.3.5, commit 18b87c7): {"DCGM GPU Diagnostic": {"test_categories": [... "results":
  [{"gpu_id": "0", "status", "warnings": [...], "info": "..."}] ...]}, "version", "Driver Version
  Detected", "GPU Device Serials": {"0": serial}}; the Deployment tests have one result each, with
  the failing GPU's "gpu_id" (a number) and the message under "warnings" (not "warning"). jsoncpp
  fills gaps in an array with null: nulls are passed over.
What dcgmi prints is untrusted input: any other shape is ToolOutputError with one line naming the
field; strings are bounded; nothing raises anything else (tests/test_dcgm.py holds it, Hypothesis
included).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nodeqc.backends.dcgm import INSTALL, DiagRun
from nodeqc.checks import dcgm_codes
from nodeqc.core.errors import shown
from nodeqc.core.model import CheckResult, Value, Verdict
from nodeqc.core.text import is_digits
from nodeqc.core.tool_output import ToolOutputError, excerpt, kind_of, load_json, quoted

CATEGORY_CHECKS = {"deployment": "dcgm.deployment", "integration": "dcgm.integration",
                   "hardware": "dcgm.hardware", "stress": "dcgm.stress"}
OTHER_CATEGORY_CHECK = "dcgm.hardware"  # a category DCGM may add later: judged with the hardware tests
STATUSES = {"pass": Verdict.PASS, "fail": Verdict.FAIL, "warn": Verdict.WARN, "skip": Verdict.SKIP,
            "not run": Verdict.SKIP}
WORST = (Verdict.FAIL, Verdict.WARN, Verdict.PASS, Verdict.SKIP)  # a category's verdict: its worst test
MAX_TEXT = 1000  # characters of one DCGM message kept (DCGM's longest, with its next steps, are ~400)
MAX_ITEMS = 4096  # categories, tests, results or warnings in one list: past any node (8 GPUs x ~20 tests)
MAX_ENTITY_ID = 1 << 20
RAW_EVIDENCE_CHARS = 64_000  # the raw JSON kept in the report: a level-4 run on 8 GPUs fits (estimate)
LEVELS = (1, 2, 3, 4)


@dataclass
class DcgmError:
    code: int | None  # DCGM_FR number
    severity: int | None
    category: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": dcgm_codes.fr_name(self.code), "code_number": self.code,
                "severity": dcgm_codes.SEVERITIES.get(self.severity, self.severity) if self.severity is not None else None,
                "category": dcgm_codes.CATEGORIES.get(self.category, self.category) if self.category is not None else None,
                "message": self.message, "next_step": dcgm_codes.next_step(self.code, self.severity)}


@dataclass
class TestResult:
    category: str
    test: str
    status: str  # DCGM's word: Pass, Fail, Warn, Skip, Not Run
    entity_group: str | None = None  # "GPU", "CPU", ...; None: the test as a whole (no entity)
    entity_id: int | None = None
    errors: list[DcgmError] = field(default_factory=list)
    info: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        return STATUSES[self.status.lower()]

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.test, "status": self.status, "errors": [e.to_dict() for e in self.errors],
                **({"info": self.info} if self.info else {})}


@dataclass
class Diag:
    format: str  # "DCGM 4.x" or "DCGM 3.x": which shape the JSON had
    version: str | None = None
    driver: str | None = None
    runtime_error: str | None = None
    results: list[TestResult] = field(default_factory=list)
    serials: dict[int, str] = field(default_factory=dict)  # DCGM GPU id -> serial, where DCGM gave it


# ---------------------------------------------------------------------- the parser

def parse_diag(text: str) -> Diag:
    """`dcgmi diag -j`'s output; ToolOutputError, one line naming what is wrong, for anything else."""
    if not text or not text.strip():
        raise ToolOutputError("dcgmi diag printed nothing on stdout")
    try:
        doc = load_json(text.strip(), "dcgmi diag -j output")
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.strip()) - 1
        raise ToolOutputError(f"dcgmi diag -j output is not JSON{' (cut short: it ends inside the document)' if cut else ''}: "
                              f"{e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(doc, dict):
        raise ToolOutputError(f"dcgmi diag -j output is {kind_of(doc)}, not a JSON object")
    if "DCGM Diagnostic" in doc:
        fmt, body = "DCGM 4.x", doc["DCGM Diagnostic"]
        meta = _obj(doc.get("metadata", {}), "metadata")
    elif "DCGM GPU Diagnostic" in doc:
        fmt, body, meta = "DCGM 3.x", doc["DCGM GPU Diagnostic"], doc
    else:
        keys = ", ".join(quoted(k) for k in list(doc)[:5]) or "none"
        raise ToolOutputError(f"dcgmi diag -j output has no \"DCGM Diagnostic\" object (its keys: {keys})")
    body = _obj(body, fmt.split()[0] + " Diagnostic")
    diag = Diag(fmt, version=_text(meta.get("version", body.get("version")), "version", optional=True),
                driver=_text(meta.get("Driver Version Detected"), "Driver Version Detected", optional=True))
    if body.get("runtime_error") is not None:
        diag.runtime_error = _text(body["runtime_error"], "runtime_error")
    categories = _list(body.get("test_categories", []), "test_categories")
    if not categories and diag.runtime_error is None:
        raise ToolOutputError("dcgmi diag -j output has no test_categories and no runtime_error: no test results")
    for c, cat in enumerate(categories):
        if cat is None:
            continue
        where = f"test_categories[{c}]"
        cat = _obj(cat, where)
        category = _text(cat.get("category"), f"{where}.category")
        for t, test in enumerate(_list(cat.get("tests", []), f"{where}.tests")):
            if test is not None:
                diag.results += _test(_obj(test, f"{where}.tests[{t}]"), category, f"{where}.tests[{t}]")
    diag.serials = _serials(doc, fmt)
    return diag


def _test(test: dict[str, Any], category: str, where: str) -> list[TestResult]:
    name = _text(test.get("name"), f"{where}.name")
    out = []
    for r, result in enumerate(_list(test.get("results", []), f"{where}.results")):
        if result is not None:
            out.append(_result(_obj(result, f"{where}.results[{r}]"), category, name, f"{where}.results[{r}]"))
    if not out and test.get("test_summary") is not None:  # a test with no entity's result: its summary
        out.append(_result(_obj(test["test_summary"], f"{where}.test_summary"), category, name,
                           f"{where}.test_summary", entity=False))
    return out


def _result(result: dict[str, Any], category: str, test: str, where: str, entity: bool = True) -> TestResult:
    status = _text(result.get("status"), f"{where}.status")
    if status.lower() not in STATUSES:
        raise ToolOutputError(f"{where}.status is {quoted(status)}, not one of DCGM's Pass, Fail, Warn, Skip")
    out = TestResult(category, test, status)
    if entity and result.get("entity_id") is not None:  # DCGM 4.x
        out.entity_group = _text(result.get("entity_group", "GPU"), f"{where}.entity_group")
        out.entity_id = _int(result["entity_id"], f"{where}.entity_id", MAX_ENTITY_ID)
    elif entity and result.get("gpu_id") is not None:  # DCGM 3.x: a string, or a number in Deployment
        out.entity_group, out.entity_id = "GPU", _int(result["gpu_id"], f"{where}.gpu_id", MAX_ENTITY_ID, text=True)
    for w, warning in enumerate(_list(result.get("warnings", []), f"{where}.warnings")):
        if warning is None:
            continue
        here = f"{where}.warnings[{w}]"
        warning = _obj(warning, here)
        message = warning.get("warning", warning.get("warnings"))  # DCGM 3.x Deployment: "warnings"
        out.errors.append(DcgmError(
            code=_int(warning["error_id"], f"{here}.error_id", 1 << 16) if warning.get("error_id") is not None else None,
            severity=_int(warning["error_severity"], f"{here}.error_severity", 64)
            if warning.get("error_severity") is not None else None,
            category=_int(warning["error_category"], f"{here}.error_category", 64)
            if warning.get("error_category") is not None else None,
            message=_text(message, f"{here}.warning") if message is not None else ""))
    info = result.get("info")
    if info is not None:
        items = [info] if isinstance(info, str) else _list(info, f"{where}.info")
        out.info = [_text(i, f"{where}.info") for i in items if i is not None]
    return out


def _serials(doc: dict[str, Any], fmt: str) -> dict[int, str]:
    """DCGM GPU id -> serial, best effort (evidence and matching only: a bad entry is passed over)."""
    out: dict[int, str] = {}
    if fmt == "DCGM 3.x" and isinstance(doc.get("GPU Device Serials"), dict):
        for k, v in list(doc["GPU Device Serials"].items())[:MAX_ITEMS]:
            if isinstance(k, str) and is_digits(k) and len(k) < 8 and isinstance(v, str):
                out[int(k)] = shown(v)[:64]
    groups = doc.get("entity_groups")
    if isinstance(groups, list):
        for g in groups[:MAX_ITEMS]:
            if isinstance(g, dict) and g.get("entity_group") == "GPU" and isinstance(g.get("entities"), list):
                for e in g["entities"][:MAX_ITEMS]:
                    if isinstance(e, dict) and type(e.get("entity_id")) is int and 0 <= e["entity_id"] < MAX_ENTITY_ID \
                            and isinstance(e.get("serial_num"), str):
                        out[e["entity_id"]] = shown(e["serial_num"])[:64]
    return out


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolOutputError(f"dcgmi diag -j: {where} is {kind_of(value)}, not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ToolOutputError(f"dcgmi diag -j: {where} is {kind_of(value)}, not a list")
    if len(value) > MAX_ITEMS:
        raise ToolOutputError(f"dcgmi diag -j: {where} has {len(value)} entries, more than any node's diagnostic")
    return value


def _text(value: Any, where: str, optional: bool = False) -> str:
    if value is None and optional:
        return None  # type: ignore[return-value]
    if not isinstance(value, str):
        raise ToolOutputError(f"dcgmi diag -j: {where} is {kind_of(value)}, not a string")
    text = shown(value.strip())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"... ({len(text)} characters)"


def _int(value: Any, where: str, high: int, text: bool = False) -> int:
    if text and isinstance(value, str) and is_digits(value.strip()) and len(value.strip()) < 10:
        value = int(value.strip())
    if type(value) is not int or not 0 <= value <= high:
        raise ToolOutputError(f"dcgmi diag -j: {where} is {kind_of(value)}, not a whole number from 0 to {high}")
    return value


# ---------------------------------------------------------------------- the verdicts

def not_asked(why: str) -> list[CheckResult]:
    return [CheckResult("dcgm.run", "node", Verdict.SKIP, f"DCGM diagnostic not run: {why}", code="DCGM_OFF")]


def not_here(why: str) -> list[CheckResult]:
    return [CheckResult("dcgm.run", "node", Verdict.SKIP, f"DCGM diagnostic not run: {why}", code="DCGM_NOT_HERE")]


def missing(level: int, simulated: bool) -> list[CheckResult]:
    where = "dcgmi is not on PATH" + (" (a simulated run with --dcgm runs the dcgmi on PATH)" if simulated else "")
    return [CheckResult("dcgm.run", "node", Verdict.SKIP, f"DCGM diagnostic (level {level}) not run: {where}; {INSTALL}",
                        code="DCGM_MISSING", evidence={"level": level})]


def judge_run(run: DiagRun, level: int, timeout_s: float, gpus: list[Any]) -> list[CheckResult]:
    """The results of one `dcgmi diag` run: dcgm.run for the run itself, then each category's per GPU.
    `gpus`: the run's GPUs (GpuInfo: index, serial, subject), to name DCGM's GPUs as the report does."""
    command = " ".join(run.command)
    evidence: dict[str, Any] = {"command": command, "level": level, "exit_status": run.returncode,
                                "seconds": run.seconds}
    if run.notes:
        evidence["notes"] = run.notes
    if run.start_error is not None:
        return [CheckResult("dcgm.run", "node", Verdict.ERROR, f"`{command}` could not be started: {run.start_error}",
                            code="DCGM_RUNTIME_ERROR", evidence=evidence)]
    if run.aborted:
        return [CheckResult("dcgm.run", "node", Verdict.SKIP, f"`{command}` stopped: the run was aborted",
                            code="RUN_ABORTED", evidence=evidence)]
    if run.timed_out:
        evidence["output_end"] = excerpt(run.stdout + "\n" + run.stderr)
        stuck = " and is stuck in the kernel (a wedged GPU or driver: reboot)" if run.unkillable else "; it was killed"
        return [CheckResult("dcgm.run", "node", Verdict.ERROR, f"`{command}` did not finish within {timeout_s:g} s{stuck}",
                            code="DCGM_HANG", evidence=evidence)]
    if run.truncated:
        evidence["output_end"] = excerpt(run.stdout[-4000:])
        return [CheckResult("dcgm.run", "node", Verdict.ERROR, f"`{command}` printed {run.stdout_bytes} bytes, more than "
                            "any diagnostic's JSON: not read", code="TOOL_OUTPUT_UNREADABLE", evidence=evidence)]
    try:
        diag = parse_diag(run.stdout)
    except ToolOutputError as e:
        evidence["output_end"] = excerpt(run.stdout[-4000:] + "\n" + run.stderr[-2000:])
        said = excerpt(run.stderr)
        if run.returncode not in (0, None) and not run.stdout.strip():
            why = said[-1] if said else f"exit status {run.returncode}"
            return [CheckResult("dcgm.run", "node", Verdict.ERROR, f"`{command}` failed without a result: {why} (is the "
                                "host engine running? systemctl status nvidia-dcgm)", code="DCGM_RUNTIME_ERROR",
                                evidence=evidence)]
        return [CheckResult("dcgm.run", "node", Verdict.ERROR, f"`{command}`: {e}", code="TOOL_OUTPUT_UNREADABLE",
                            evidence=evidence)]
    evidence.update({"format": diag.format, "dcgm_version": diag.version, "driver": diag.driver,
                     "serials": {str(k): v for k, v in sorted(diag.serials.items())}})
    evidence.update(_raw(run.stdout))
    if diag.runtime_error is not None:
        return [CheckResult("dcgm.run", "node", Verdict.ERROR, f"DCGM could not run its diagnostic: {diag.runtime_error}",
                            code="DCGM_RUNTIME_ERROR", evidence=evidence)]
    per_check = _categories(diag, gpus)
    tests = sorted({(r.category, r.test) for r in diag.results})
    version = f"DCGM {diag.version}" if diag.version else diag.format
    values = {"tests": Value(len(tests)), "seconds": Value(run.seconds, "s")}
    if not tests:  # a diagnostic of nothing: no pass (it was "level 2, 0 tests")
        return [CheckResult("dcgm.run", "node", Verdict.ERROR, f"{version}: level {level} reported no test result: "
                            "nothing was diagnosed", code="DCGM_RUNTIME_ERROR", values=values, evidence=evidence)]
    results = [CheckResult("dcgm.run", "node", Verdict.PASS, f"{version}: level {level}, {len(tests)} tests in "
                           f"{run.seconds:g} s", values=values, evidence=evidence, key="tests")]
    # DCGM judged GPUs one by one: each of the run's GPUs it said nothing of is not diagnosed, and
    # said so (a GPU missing from its results had no result at all, and no mention).
    judged = {r.subject for r in per_check}
    for g in gpus:
        if g.subject not in judged and not getattr(g, "lost", False):
            results.append(CheckResult("dcgm.run", g.subject, Verdict.ERROR, f"{version}: level {level} reported "
                                       "no result for this GPU: not diagnosed", code="DCGM_RUNTIME_ERROR",
                                       evidence={"dcgm_serials": evidence["serials"]}))
    return results + per_check


def _raw(stdout: str) -> dict[str, Any]:
    """The raw JSON for the report, bounded: whole if it fits, else its start and its size."""
    text = stdout.strip()
    if len(text) <= RAW_EVIDENCE_CHARS:
        try:
            return {"raw": _shown_strings(json.loads(text))}
        except (ValueError, RecursionError):
            pass
    return {"raw_start": shown(text[:RAW_EVIDENCE_CHARS]), "raw_chars": len(text)}


def _shown_strings(value: Any) -> Any:
    """JSON with every string, keys too, safe to show on a terminal (control characters escaped)."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, list):
        return [_shown_strings(v) for v in value]
    if isinstance(value, dict):
        return {shown(k): _shown_strings(v) for k, v in value.items()}
    return value


def _categories(diag: Diag, gpus: list[Any]) -> list[CheckResult]:
    by_serial = {str(g.serial): g for g in gpus if isinstance(getattr(g, "serial", None), str)}
    by_index = {g.index: g for g in gpus}
    # Serials tell the GPUs apart where DCGM gives one of the run's: then a DCGM GPU whose serial is
    # none of the run's is not the run's GPU of the same index (2026-11-29 fuzzing: another GPU's
    # memory failure was laid on it). Where none matches (serials DCGM formats otherwise), by index.
    by_serials = any(str(s) in by_serial for s in diag.serials.values())
    groups: dict[tuple[str, str], list[tuple[TestResult, int | None]]] = {}
    for r in diag.results:
        check = CATEGORY_CHECKS.get(r.category.lower(), OTHER_CATEGORY_CHECK)
        subject = "node"
        if r.entity_group == "GPU" and r.entity_id is not None:
            serial = diag.serials.get(r.entity_id)
            gpu = by_serial.get(str(serial)) if by_serials and serial is not None else by_index.get(r.entity_id)
            subject = gpu.subject if gpu is not None else "node"
        groups.setdefault((check, subject), []).append((r, r.entity_id if r.entity_group == "GPU" else None))
    order = list(CATEGORY_CHECKS.values())
    return [_judge_group(check, subject, entries) for (check, subject), entries in
            sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1] != "node", _slot(kv[0][1])))]


def _slot(subject: str) -> int:
    digits = subject[3:] if subject.startswith("gpu") else ""
    return int(digits) if is_digits(digits) else -1


def _judge_group(check: str, subject: str, entries: list[tuple[TestResult, int | None]]) -> CheckResult:
    tests = [r for r, _ in entries]
    verdict = next(v for v in WORST if v in {r.verdict for r in tests} or v is Verdict.SKIP)
    dcgm_ids = sorted({i for _, i in entries if i is not None})
    evidence: dict[str, Any] = {"tests": [r.to_dict() for r in tests]}
    if dcgm_ids:
        evidence["dcgm_gpu_ids"] = dcgm_ids
    values = {"tests": Value(len(tests)), "failed": Value(sum(r.verdict is Verdict.FAIL for r in tests))}
    where = "" if subject != "node" or not dcgm_ids else f" (DCGM GPU {', '.join(map(str, dcgm_ids))}, not one of this run's GPUs)"
    if verdict in (Verdict.FAIL, Verdict.WARN):
        bad = [r for r in tests if r.verdict is verdict]
        # The first hardware finding leads: a software code listed before it (DCGM_FR_INTERNAL) would
        # make a memory failure "could not test" (2026-11-29 fuzzing).
        errors = [e for r in bad for e in r.errors]
        first = next((e for e in errors if dcgm_codes.fail_code(e.code, e.category) not in dcgm_codes.SOFTWARE_CODES),
                     errors[0] if errors else None)
        said = "; ".join(_said(r) for r in bad)
        if len(said) > 1500:
            said = said[:1500] + "..."
        code = "DCGM_WARN" if verdict is Verdict.WARN else \
            dcgm_codes.fail_code(first.code if first else None, first.category if first else None)
        evidence["next_step"] = dcgm_codes.next_step(first.code if first else None, first.severity if first else None)
        if code in dcgm_codes.SOFTWARE_CODES:
            verdict, said = Verdict.ERROR, f"{said}; DCGM could not test, not judged"
        return CheckResult(check, subject, verdict, f"DCGM: {said}{where}", code=code, values=values,
                           evidence=evidence, key="failed")
    if verdict is Verdict.SKIP:
        names = ", ".join(sorted({r.test for r in tests}))
        return CheckResult(check, subject, Verdict.SKIP, f"DCGM skipped {names}{where}", code="DCGM_TEST_SKIPPED",
                           values=values, evidence=evidence)
    passed = sorted({r.test for r in tests if r.verdict is Verdict.PASS})
    skipped = sorted({r.test for r in tests if r.verdict is Verdict.SKIP})
    note = f" (skipped: {', '.join(skipped)})" if skipped else ""
    return CheckResult(check, subject, Verdict.PASS, f"DCGM passed {', '.join(passed)}{note}{where}", values=values,
                       evidence=evidence, key="failed")


def _said(r: TestResult) -> str:
    """One test's failure as the message gives it: the test, its DCGM_FR code and severity, DCGM's words."""
    if not r.errors:
        return f"{r.test}: {r.status} (DCGM gave no reason)"
    parts = []
    for e in r.errors[:3]:
        tag = ", ".join(x for x in (dcgm_codes.fr_name(e.code),
                                    dcgm_codes.SEVERITIES.get(e.severity) if e.severity is not None else None) if x)
        parts.append(f"{r.test}: {tag + ': ' if tag else ''}{e.message or '(no message)'}")
    more = f" (+{len(r.errors) - 3} more)" if len(r.errors) > 3 else ""
    return "; ".join(parts) + more
