"""Every figure a check writes has a name for a person (nodeqc.core.figures): `compare` printed
`copy_gbps` and `h2d_gbps` where a technician reads (a new user's review, issue 29). The keys are
read from the source with `ast` (a literal key given a Value) and from the keys the checks build
(per dtype, per throttle reason, per RDMA port)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nodeqc.core.figures import BY_CHECK, LABELS, label
from nodeqc.spec.profile import DTYPES
from nodeqc.work.telemetry import FAILING_REASONS

PACKAGE = Path(__file__).resolve().parent.parent / "nodeqc"


def _is_value(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Value"


def literal_keys() -> set[str]:
    """Keys given a Value in a dict literal (`{"copy_gbps": Value(...)}`), a comprehension over a
    literal tuple of keys, or by assignment
    (`values["throttle_s"] = Value(...)`, also several at once)."""
    keys = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Dict):
                keys |= {k.value for k, v in zip(node.keys, node.values)
                         if isinstance(k, ast.Constant) and isinstance(k.value, str) and _is_value(v)}
            elif isinstance(node, ast.DictComp) and _is_value(node.value) and len(node.generators) == 1 \
                    and isinstance(node.generators[0].iter, (ast.Tuple, ast.List)):
                keys |= {e.value for e in node.generators[0].iter.elts if isinstance(e, ast.Constant)}
            elif isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(node.targets[0].elts, node.value.elts))
                keys |= {t.slice.value for t, v in pairs if isinstance(t, ast.Subscript)
                         and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str) and _is_value(v)}
    return keys


BUILT = {f"{d}_tflops" for d in DTYPES} | {f"{r}_s" for r in FAILING_REASONS}


def test_the_source_reading_finds_the_keys_it_must():
    found = literal_keys()
    assert {"copy_gbps", "h2d_gbps", "throttle_s", "tflops_start", "pass_ratio"} <= found and len(found) > 100


@pytest.mark.parametrize("key", sorted(literal_keys() | BUILT))
def test_every_figure_has_a_label(key):
    assert key in LABELS or any(k == key for _, k in BY_CHECK), f"no label for the figure {key!r} (nodeqc/core/figures.py)"


def test_labels_read_as_words_and_shared_keys_by_their_check():
    assert label("h2d_gbps") == "host-to-device bandwidth" and label("copy_gbps", "stress.hbm_bandwidth") == "copy bandwidth"
    assert label("tested", "stress.memtest") == "memory tested" and label("tested", "fabric.coverage") == "pairs tested"
    assert label("mlx5_0/1", "nic.rdma") == "RDMA bandwidth, mlx5_0/1"
    assert label("mlx5_0/1:symbol_error", "nic.stability") == "mlx5_0/1 symbol error"
    assert label("no_such_figure") == "no_such_figure"  # never nothing
    assert all(v and v != k for k, v in LABELS.items() if "_" in k)
