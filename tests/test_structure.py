"""The code's shape: no module imports its importer (directly or round a longer cycle), and the
desktop app reaches into no private function of the command line, nor the command line into the
app's. Read from the source (every import, top-level or inside a function), so nothing is run."""

from __future__ import annotations

import ast
from pathlib import Path

import nodeqc

ROOT = Path(nodeqc.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports() -> dict[str, set[tuple[str, str | None]]]:
    """module -> {(imported module, name imported from it or None)} for every nodeqc import."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[tuple[str, str | None]]] = {}
    for name, path in modules.items():
        edges: set[tuple[str, str | None]] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking(block)
                       for n in ast.walk(block)}  # `if TYPE_CHECKING:` imports are for annotations only
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                edges |= {(a.name, None) for a in node.names if a.name.startswith("nodeqc")}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nodeqc"):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    edges.add((sub, None) if sub in modules else (node.module, a.name))
        graph[name] = {(m, n) for m, n in edges if m in modules and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# Cycles and private imports that came in with other branches, named so that no new one can join
# them: each is to be untangled (a shared module below both), then struck from these lists.
KNOWN_CYCLES: list[list[str]] = []
KNOWN_PRIVATE: list[tuple[str, str, str]] = []


def test_no_module_imports_its_importer():
    graph = {m: {target for target, _ in edges if target != "nodeqc"} for m, edges in _imports().items()}
    assert [c for c in _cycles(graph) if c not in KNOWN_CYCLES] == []


def test_imports_inside_functions_count():
    """An import moved into a function (to dodge a cycle at load time) is still an edge."""
    graph = _imports()
    assert ("nodeqc.fabric.cli", "main") in graph["nodeqc.cli"]  # imported inside cmd_fabric only
    assert ("nodeqc.fabric.worker", "main") in graph["nodeqc.fabric.cli"]  # inside main only


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_faces_share_the_run_flow_and_not_each_others_insides():
    graph = _imports()
    gui = {m: edges for m, edges in graph.items() if m.startswith("nodeqc.gui")}
    assert not any(target == "nodeqc.cli" for edges in gui.values() for target, _ in edges), \
        "the desktop app imports nothing of the command line: both call nodeqc.flow"
    assert any(target == "nodeqc.flow" for target, _ in graph["nodeqc.gui.app"])
    assert any(target == "nodeqc.flow" for target, _ in graph["nodeqc.cli"])
    private = [(m, t, n) for m, edges in graph.items() for t, n in edges
               if n and n.startswith("_") and not n.startswith("__")]
    assert [p for p in private if p not in KNOWN_PRIVATE] == [], "a module imports another module's private name"
