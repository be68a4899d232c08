"""The package's shape, held: nodeqc/ is a stack of layers in pipeline order, written once here, and
every import (at the top, inside a function, or under TYPE_CHECKING) points down the stack or
within its own layer; no module imports, through any chain, a module that imports it; no module
takes a private name from another layer; no module passes 600 lines. Read with `ast`, so a
violation names the file and the line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "nodeqc"

# Lowest first. A layer may import itself and any layer before it, never one after it.
LAYERS = (
    "core",      # errors, N/A, verdict shapes, codes, SKUs, safe files: imports nothing of nodeqc
    "backends",  # the only code touching hardware, each backend with its twin (backends/sim)
    "spec",      # what a node is held to: profile, calibration, selection, peers, baseline
    "work",      # workers, workloads, telemetry
    "checks",    # verdicts as pure functions, and the plan of checks
    "report",    # the answer, the signed envelope, rendering, comparison
    "archive",   # where reports live, the fleet, a part's history
    "run",       # the runner and the flow around a run
    "fabric",    # the fabric face: many nodes at once
    "gui",       # the desktop face
    "cli",       # the command-line face, which dispatches to the others
)
ROOT_MODULES = {"nodeqc": "core", "nodeqc.__main__": "cli"}  # the version; `python -m nodeqc`
ROOT_ENTRIES = {"__init__.py", "__main__.py", "_data", "__pycache__", *LAYERS}
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _layer(module: str) -> str:
    if module in ROOT_MODULES:
        return ROOT_MODULES[module]
    return module.split(".")[1]


def _imports(module: str, path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every nodeqc import in the module."""
    found = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "nodeqc"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "nodeqc":
                continue
            for alias in node.names:
                sub = f"{name}.{alias.name}"
                if sub in MODULES:
                    found.append((node.lineno, sub, []))
                else:
                    found.append((node.lineno, name, [alias.name]))
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_the_package_root_holds_the_layers_and_nothing_else():
    extra = sorted(p.name for p in PACKAGE.iterdir() if p.name not in ROOT_ENTRIES)
    assert not extra, f"nodeqc/ holds {extra}: put each in the layer it belongs to ({', '.join(LAYERS)})"
    missing = [layer for layer in LAYERS if not (PACKAGE / layer / "__init__.py").is_file()]
    assert not missing, f"layers without a package: {missing}"


def test_every_import_points_down_the_layers():
    wrong = []
    for module, imports in GRAPH.items():
        here = LAYERS.index(_layer(module))
        for line, target, _ in imports:
            if target in MODULES and LAYERS.index(_layer(target)) > here:
                wrong.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: "
                             f"{_layer(module)} imports {target} ({_layer(target)} is above it)")
    assert not wrong, "\n".join(wrong)


def test_no_private_name_is_taken_from_another_layer():
    wrong = []
    for module, imports in GRAPH.items():
        for line, target, names in imports:
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and target in MODULES and _layer(target) != _layer(module):
                wrong.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: {private} from {target}")
    assert not wrong, "\n".join(wrong)


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or a module importing itself."""
    edges = {m: sorted({t for _, t, _ in imps if t in MODULES and t != m}) for m, imps in GRAPH.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_its_importer():
    assert not _cycles(), "import circles: " + "; ".join(" <-> ".join(c) for c in _cycles())


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_passes_the_line_limit(module):
    lines = MODULES[module].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[module].relative_to(PACKAGE.parent)} has {lines} lines (at most {MAX_LINES})"


def _public_classes(paths) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(str(path))
    return found


def test_no_two_public_classes_share_a_name():
    """One name, one thing: two Finding classes (a check's judgement and a person's finding), two
    Figures, two Journals and a Reporter protocol beside its pipe had each been read as the other."""
    shared = {name: where for name, where in _public_classes(sorted(MODULES.values())).items() if len(where) > 1}
    assert not shared, "classes of one name in several modules: " + "; ".join(
        f"{name} in {', '.join(where)}" for name, where in sorted(shared.items())).replace(f"{PACKAGE.parent}/", "")


def test_the_structure_test_sees_the_violations_it_names():
    """The test bites: a made-up upward import, circle and private import are each found."""
    fake = {"nodeqc.core.a": [(3, "nodeqc.run.b", [])], "nodeqc.run.b": [(5, "nodeqc.core.a", ["_x"])]}
    global GRAPH, MODULES
    saved = GRAPH, MODULES
    GRAPH = fake
    MODULES = {"nodeqc.core.a": PACKAGE / "core" / "a.py", "nodeqc.run.b": PACKAGE / "run" / "b.py"}
    try:
        with pytest.raises(AssertionError, match="core imports nodeqc.run.b"):
            test_every_import_points_down_the_layers()
        with pytest.raises(AssertionError, match=r"\['_x'\] from nodeqc.core.a"):
            test_no_private_name_is_taken_from_another_layer()
        with pytest.raises(AssertionError, match="nodeqc.core.a <-> nodeqc.run.b"):
            test_no_module_imports_its_importer()
    finally:
        GRAPH, MODULES = saved


def test_a_class_name_in_two_modules_is_found(tmp_path):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("class Finding:\n    pass\n\nclass _Own:\n    pass\n")
    (tmp_path / "c.py").write_text("class _Own:\n    pass\n")
    found = {k: len(v) for k, v in _public_classes([tmp_path / n for n in ("a.py", "b.py", "c.py")]).items()}
    assert found == {"Finding": 2}
