"""Every code a check can emit has its own remediation.

The registry is nodeqc.core.codes.REMEDIATION. The codes the checks can emit are found in the source,
not listed by hand: an AST scan of nodeqc/ collects every string that reaches a code position (a
`code=` keyword, an assignment to `code`, or a positional argument whose parameter is named `code`
in a function or dataclass of nodeqc), and every UPPER_SNAKE string in the modules that build
results (nodeqc/checks/, the runner and its platform watch, the report's predicate), which also
catches codes carried in tuples. Both directions are checked: an emitted code must be declared,
and a declared code must be emitted somewhere (the scan would otherwise miss a way codes travel,
and a dead code would pass unnoticed).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from nodeqc.core.codes import REMEDIATION, WARN_REMEDIATION, advice, remediation

PACKAGE = Path(__file__).resolve().parent.parent / "nodeqc"
# The modules that build CheckResults; test_result_builders_are_known keeps this honest.
EMITTERS = ("checks", "run/runner.py", "run/platform_watch.py", "report/predicate.py", "fabric/report.py")
UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
RESULT_BUILDERS = {"CheckResult", "Judgement", "skip", "judge", "fold"}


def _modules() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def _is_emitter(path: Path) -> bool:
    rel = path.relative_to(PACKAGE).as_posix()
    return any(rel == e or rel.startswith(e + "/") for e in EMITTERS)


CODE_SHAPE = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _strings(node: ast.AST) -> set[str]:
    """The code-shaped strings an expression can evaluate to: a constant, either branch of a
    conditional, any operand of `or`/`and` (never the strings a condition tests)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} if CODE_SHAPE.match(node.value) else set()
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_strings(v) for v in node.values))
    return set()


def _code_positions(modules: dict[Path, ast.Module]) -> dict[str, int]:
    """Callable name -> index of its positional parameter named `code` (functions and dataclasses)."""
    out: dict[str, int] = {}
    for tree in modules.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                if names and names[0] in ("self", "cls"):
                    continue  # methods are called through attributes; the scan resolves plain names
            elif isinstance(node, ast.ClassDef) and any(
                    "dataclass" in ast.unparse(d) for d in node.decorator_list):
                names = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                         and isinstance(s.target, ast.Name) and "ClassVar" not in ast.unparse(s.annotation)]
            else:
                continue
            if "code" in names:
                out[node.name] = names.index("code")
    return out


def _for_targets_code(node: ast.For) -> int | None:
    """`for a, b, code in ((...), (...))`: the position of `code` in the target tuple."""
    if isinstance(node.target, ast.Tuple):
        for k, elt in enumerate(node.target.elts):
            if isinstance(elt, ast.Name) and elt.id == "code":
                return k
    return None


@functools.cache
def emitted_codes() -> dict[str, set[str]]:
    """Every code the source can emit, with the files it appears in."""
    modules = _modules()
    positions = _code_positions(modules)
    found: dict[str, set[str]] = {}

    def add(values: set[str], path: Path) -> None:
        for v in values:
            found.setdefault(v, set()).add(path.relative_to(PACKAGE).as_posix())

    for path, tree in modules.items():
        if path.name == "codes.py":
            continue
        # Keys of literal tables (environment variables, codes mapped to something) are not emitted.
        keys = {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys if k is not None}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "code":
                        add(_strings(kw.value), path)
                name = node.func.id if isinstance(node.func, ast.Name) else None
                if name in positions and len(node.args) > positions[name]:
                    add(_strings(node.args[positions[name]]), path)
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "code" for t in node.targets):
                add(_strings(node.value), path)
            elif isinstance(node, ast.For) and (k := _for_targets_code(node)) is not None:
                if isinstance(node.iter, (ast.Tuple, ast.List)):
                    for row in node.iter.elts:
                        if isinstance(row, ast.Tuple) and len(row.elts) > k:
                            add(_strings(row.elts[k]), path)
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_emitter(path)
                  and UPPER_SNAKE.match(node.value) and id(node) not in keys):
                add({node.value}, path)
    return found


def test_the_scan_finds_the_codes_of_every_family():
    found = emitted_codes()
    # One code per way a code travels: keyword, positional Judgement/judge argument, conditional
    # assignment, for-loop tuple, a tuple handed on (NIC skips), the runner's own.
    for code in ("GPU_COUNT", "BURN_SLOW", "SDC_KNOWN_ANSWER", "THROTTLE_POWER_BRAKE", "PCIE_WIDTH",
                 "NIC_NO_ADDRESS", "IPERF3_MISSING", "SKIPPED_EARLIER_FAILURE", "XID_RESET_GPU", "XID_APP_FAULT", "NVLINK_DOWN"):
        assert code in found, code


def test_every_emitted_code_has_a_remediation():
    missing = {code: sorted(where) for code, where in emitted_codes().items() if code not in REMEDIATION}
    assert not missing, f"codes without a remediation in nodeqc/core/codes.py: {missing}"


def test_every_declared_code_is_emitted_somewhere():
    dead = sorted(set(REMEDIATION) - set(emitted_codes()))
    assert not dead, f"declared in nodeqc/core/codes.py but emitted nowhere (or the scan misses how): {dead}"


def test_each_code_has_its_own_concrete_remediation():
    texts = list(REMEDIATION.values())
    assert len(set(texts)) == len(texts), "two codes share one remediation text"
    for code, text in REMEDIATION.items():
        assert UPPER_SNAKE.match(code) or code.isupper(), code
        assert len(text) >= 40 and "See the check's evidence" not in text, code
        assert remediation(code) == text


def test_result_builders_are_known():
    """Results are built only in the emitter modules the scan reads for carried codes (and the
    model/common helpers that define them)."""
    outside = set()
    for path, tree in _modules().items():
        rel = path.relative_to(PACKAGE).as_posix()
        if _is_emitter(path) or rel in ("core/model.py", "checks/common.py"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RESULT_BUILDERS \
                    and any(isinstance(a, ast.Constant) and isinstance(a.value, str) and UPPER_SNAKE.match(a.value)
                            for a in node.args):
                outside.add(rel)
    assert not outside, f"results with codes built outside {EMITTERS}: {sorted(outside)}; add them to EMITTERS"


@pytest.mark.parametrize("scenario,fault", [
    ("h100", "gpu0:slow=0.5"), ("h100", "gpu0:hbm_bw=0.5"), ("h100", "gpu0:bitflip"), ("h100", "gpu0:badmem"),
])
def test_a_report_carries_each_failures_remediation(scenario, fault, tmp_path):
    """End to end: what the report says to do is the registry's text for the code, never the fallback."""
    import json

    from tests.conftest import cli
    proc = cli("--headless", "--simulate", scenario, "--profile", "h100", "--inject", fault, "--quick",
               "--only", "stress", "--out", str(tmp_path))
    report = Path(proc.stdout.strip().splitlines()[-1])
    import base64
    envelope = json.loads(report.read_text())
    checks = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["checks"]
    failing = [c for c in checks if c["verdict"] in ("fail", "warn", "error")]
    assert failing
    for c in failing:
        # The code's own advice, its placeholders filled for this GPU (codes.advice)
        assert c["code"] in REMEDIATION and c["remediation"] == advice(c["code"], c["subject"], c["evidence"], c["verdict"]), c
        assert "-i N" not in c["remediation"] or not c["subject"].startswith("gpu"), c


# ---------------------------------------------------------------------- advice for one result

PLACEHOLDERS = ("-i N", "DEFAULT_W")


@pytest.mark.parametrize("code", sorted(c for c in REMEDIATION if any(p in REMEDIATION[c] for p in PLACEHOLDERS)))
def test_no_advice_keeps_a_placeholder_where_the_value_is_known(code):
    """Issue 24: `nvidia-smi -i N -pl DEFAULT_W` where the GPU and its default are known. For a GPU's
    result with its default in the diagnosis, neither placeholder is left; for the node's, the
    placeholders stay (no GPU is named), and a value the evidence does not hold is not invented."""
    said = advice(code, "gpu5", {"diagnosis": {"readings": {"default_power_limit_w": 700.0}}})
    assert not any(p in said for p in PLACEHOLDERS), said
    assert "-i 5" in said
    if "DEFAULT_W" in REMEDIATION[code]:
        assert "-pl 700" in said
        assert "DEFAULT_W" in advice(code, "gpu5", {"diagnosis": {"readings": {"default_power_limit_w": float("nan")}}})
    assert advice(code, "node", {}) == remediation(code)


@pytest.mark.slow
def test_the_burn_says_which_gpu_to_restore_and_to_what(tmp_path, run_cli):
    p = run_cli("--headless", "--profile", "hgx-h100", "--simulate", "hgx-h100", "--quick", "--only", "stress.burn",
                "--inject", "gpu4:power_limit=500", "--out", str(tmp_path))
    import base64
    import json
    envelope = json.loads(next(tmp_path.glob("*.report.json")).read_text())
    checks = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["checks"]
    burn = next(c for c in checks if c["name"] == "stress.burn" and c["subject"] == "gpu4")
    assert burn["code"] == "POWER_LIMIT_LOWERED" and "restore it with nvidia-smi -i 4 -pl 700" in burn["message"]
    assert "`nvidia-smi -i 4 -pl 700`" in burn["remediation"] and "`nvidia-smi -i 4 -pl 700`" in p.stderr


@pytest.mark.parametrize("code", sorted(c for c in REMEDIATION if re.search(r"\bRMA\b", REMEDIATION[c])
                                         and c not in WARN_REMEDIATION))
def test_no_warning_advises_an_rma(code):
    """Issue 24: a WARN's advice keeps what to check and do, never an RMA; a FAIL's is the code's own."""
    from nodeqc.core.codes import WARN_INSTEAD_OF_RMA

    said = advice(code, "gpu3", {}, "warn")
    assert not re.search(r"\bRMA\b", said.replace(WARN_INSTEAD_OF_RMA, "")), said
    assert said.endswith(WARN_INSTEAD_OF_RMA) and len(said) > len(WARN_INSTEAD_OF_RMA) + 20
    assert "RMA" in advice(code, "gpu3", {}, "fail")


def test_a_warning_whose_fail_advice_would_mislead_has_its_own():
    """The 2026-11-28 advice review: a corrected machine check (WARN) said "replace the part it names";
    one remapped row (WARN) said "re-run to confirm", which a lifetime counter cannot be; and the
    letters RMA inside PERFORMANCE would have cut a warning's nvidia-smi command."""
    from nodeqc.core.codes import for_a_warning

    for code, text in WARN_REMEDIATION.items():
        assert advice(code, "gpu3", {}, "warn") == text and "RMA" not in text and "replace the part it names" not in text
    assert "confirm" not in WARN_REMEDIATION["ROW_REMAP_COUNT"] and "a re-run does not change" in WARN_REMEDIATION["ROW_REMAP_COUNT"]
    pulse = REMEDIATION["PULSE_NOT_OBSERVED"]
    assert "PERFORMANCE" in pulse and for_a_warning(pulse) == pulse


@pytest.mark.slow
def test_a_slow_gpus_warning_advises_no_rma_in_the_report_the_summary_and_the_findings(tmp_path, run_cli):
    """`--inject gpu0:slow=0.88`: BURN_SLOW's own text ends in 'RMA it'; the warning says re-run."""
    import base64
    import json

    p = run_cli("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--only", "stress.burn",
                "--inject", "gpu0:slow=0.88", "--out", str(tmp_path))
    envelope = json.loads(next(tmp_path.glob("*.report.json")).read_text())
    burn = next(c for c in json.loads(base64.b64decode(envelope["payload"]))["predicate"]["checks"]
                if c["name"] == "stress.burn")
    assert burn["verdict"] == "warn" and burn["code"] in ("BURN_SLOW", "CLOCKS_LOW"), burn["message"]
    assert "RMA" not in burn["message"] and "RMA" not in burn["remediation"].replace("A warning is no reason for an RMA", "")
    assert "what to do:" in p.stderr and "RMA it" not in p.stderr


# ---------------------------------------------------------------------- the catalogue: one list of checks and codes

# Which family's codes each module that builds results may emit (nodeqc.core.catalogue).
MODULE_FAMILIES = {
    "checks/inventory.py": ("inventory",), "checks/fabric_state.py": ("inventory",), "checks/health.py": ("health",),
    "checks/fleet.py": ("fleet",),
    "checks/host.py": ("host",), "checks/host_health.py": ("host",), "checks/host_stress.py": ("host",),
    "checks/nic.py": ("nic",), "checks/conformance.py": ("baseline",), "checks/burnin.py": ("burnin",),
    "checks/processes.py": ("stress",), "checks/psu.py": ("stress",), "checks/diagnosis.py": ("stress",),
    "checks/dcgm.py": ("dcgm",), "checks/dcgm_codes.py": ("dcgm",),
    "checks/stress": ("stress",), "run/platform_watch.py": ("host",), "report/predicate.py": ("nodeqc",),
    "fabric/report.py": ("fabric",),
    "run/runner.py": ("stress", "host", "nic", "baseline", "nodeqc"),  # it skips what it cannot run, per family
}


def test_the_code_registry_is_the_catalogues_codes():
    """Every code the catalogue declares has its remediation, and the registry has no other."""
    from nodeqc.core.catalogue import declared_codes

    assert set(REMEDIATION) - declared_codes() == set(), "codes no check declares (add them to a family)"
    assert declared_codes() - set(REMEDIATION) == set(), "declared codes without a remediation"


def test_each_familys_modules_emit_only_its_codes():
    from nodeqc.checks.inventory import MODEL_FLOOR_CODES
    from nodeqc.core.catalogue import ANY_CHECK, FABRIC, FAMILIES, RUN

    families = {f.name: f for f in (*FAMILIES, RUN, FABRIC)}
    wrong = []
    for code, files in emitted_codes().items():
        for rel in files:
            owners = next((fams for prefix, fams in MODULE_FAMILIES.items()
                           if rel == prefix or rel.startswith(prefix + "/")), None)
            if owners is None or code in ANY_CHECK:
                continue
            if rel == "checks/inventory.py" and code in MODEL_FLOOR_CODES:
                continue  # codes of other checks it reads, to say when another model's floors did not judge
            if not any(code in families[f].codes for f in owners):
                wrong.append(f"{rel}: {code} is not a code of {', '.join(owners)}")
    assert not wrong, "\n".join(wrong)
    assert set(MODULE_FAMILIES) >= {rel for files in emitted_codes().values() for rel in files
                                    if rel.startswith("checks/") and not rel.startswith("checks/stress/")}


def test_every_result_of_a_faulty_run_carries_a_code_its_family_declares(tmp_path):
    """End to end, the check (bite): a quick run of a simulated node with faults in every family, each
    result's code among its family's (or a code any check may carry)."""
    import base64
    import json

    from nodeqc.core.catalogue import ANY_CHECK, family_of
    from tests.conftest import cli

    faults = ["gpu0:slow=0.5", "gpu1:bitflip", "gpu2:badmem", "gpu3:xid=79", "gpu4:pcie_width=8", "gpu5:temp=95",
              "gpu6:ecc_sbe=3", "gpu7:power_limit=500", "gpu4:aer=2", "host:edac_ce=4", "host:mce", "nic0:down"]
    proc = cli("--headless", "--simulate", "hgx-h100", "--quick", "--out", str(tmp_path),
               *[a for f in faults for a in ("--inject", f)])
    report = Path(proc.stdout.strip().splitlines()[-1])
    checks = json.loads(base64.b64decode(json.loads(report.read_text())["payload"]))["predicate"]["checks"]
    coded = [c for c in checks if c["code"]]
    assert {c["name"].split(".")[0] for c in coded} >= {"stress", "health", "host", "inventory"}, proc.stderr[-2000:]
    wrong = [f"{c['name']} {c['subject']}: {c['code']}" for c in coded
             if c["code"] not in family_of(c["name"]).codes and c["code"] not in ANY_CHECK]
    assert not wrong, wrong


def test_advice_follows_the_diagnosis_where_it_ruled_out_the_codes_first_step():
    from nodeqc.core.codes import DIAGNOSED_REMEDIATION, REMEDIATION, advice

    at_full_clock = {"diagnosis": {"cause": "defect"}}
    assert advice("HBM_SLOW", "gpu1", at_full_clock, "fail") == DIAGNOSED_REMEDIATION[("HBM_SLOW", "defect")]
    # A warning of the same never advises an RMA; another cause keeps the code's own advice.
    warned = advice("HBM_SLOW", "gpu1", at_full_clock, "warn")
    assert "RMA the GPU" not in warned and "full clock" in warned
    assert advice("HBM_SLOW", "gpu1", {"diagnosis": {"cause": "clocks_low"}}, "fail") == REMEDIATION["HBM_SLOW"]
    assert advice("HBM_SLOW", "gpu1", None, "fail") == REMEDIATION["HBM_SLOW"]
    assert all(code in REMEDIATION for code, _ in DIAGNOSED_REMEDIATION)


def test_the_kernel_logs_xid_and_nvmls_give_one_what_to_do():
    """2026-11-28 review: the same Xid 48 on GPU 1, from NVML and from the kernel log, read "reset it
    (`nvidia-smi -r -i 1`)" and "look the code up in NVIDIA's Xid catalogue": two what-to-dos."""
    from nodeqc.core.codes import advice

    kernel, nvml = advice("KERNEL_XID", "gpu1"), advice("XID_RESET_GPU", "gpu1")
    for said in (kernel, nvml):
        assert "`nvidia-smi -r -i 1`" in said and "RMA it" in said
    assert "look the code up" not in kernel


def test_a_shortfall_against_an_estimated_floor_advises_no_rma():
    """The 2026-11-28 advice review: a T4 short of its estimated fp32 floor was told by its diagnosis
    that the part is not to blame on it alone, and by its advice to RMA it."""
    from nodeqc.core.codes import ESTIMATED_INSTEAD_OF_RMA

    estimated = {"diagnosis": {"cause": "compute", "readings": {"estimated_floors": ["fp32"]}}}
    said = advice("BURN_SLOW", "gpu0", estimated, "fail")
    assert not re.search(r"\bRMA\b", said.replace(ESTIMATED_INSTEAD_OF_RMA, "")) and said.endswith(ESTIMATED_INSTEAD_OF_RMA)
    measured = {"diagnosis": {"cause": "compute", "readings": {}}}
    assert re.search(r"\bRMA\b", advice("BURN_SLOW", "gpu0", measured, "fail"))


def test_mixed_gpus_are_advised_by_what_differs():
    """The 2026-11-28 advice review: a VBIOS that differs (WARN) was told to replace the odd part, a
    model that differs (FAIL) to flash the VBIOS."""
    vbios = advice("GPU_MIXED", "node", {"vbios": {"96.00.99.00.01": ["gpu0"], "96.00.74.00.1C": ["gpu3"]}}, "warn")
    assert "flash" in vbios and "replace" not in vbios
    model = advice("GPU_MIXED", "node", {"model": {"a": ["gpu0"], "b": ["gpu3"]}}, "fail")
    assert "replace the GPU of another model" in model and "flash" not in model
    assert advice("GPU_MIXED", "node", {}, "fail") == remediation("GPU_MIXED")  # nothing named: the whole list


def test_a_replay_without_a_twin_is_not_advised_to_install_cupy():
    """The 2026-11-29 fuzzing: a replayed capture of a model with no simulated twin said "GPU stress
    needs CuPy: install nodeqc with the CUDA extra" of its GPU work."""
    from nodeqc.checks.stress.outcomes import outcome_failure
    from nodeqc.core.codes import advice
    from nodeqc.core.errors import ComputeUnavailable
    from nodeqc.work.workers import STATUS_UNAVAILABLE, Outcome, Task, open_device

    task = Task("burn", 0, {}, 1.0)
    with pytest.raises(ComputeUnavailable) as e:
        open_device({"kind": "none"}, task)
    r = outcome_failure("stress.burn", "gpu0", Outcome(task, STATUS_UNAVAILABLE, detail=str(e.value)))
    assert r.code == "CUDA_UNAVAILABLE"
    said = advice(r.code, r.subject, r.evidence, r.verdict.value)
    assert "no simulated twin" in said and "CuPy" not in said
    assert "CuPy" in advice("CUDA_UNAVAILABLE")  # a real node without CuPy is still told to install it
