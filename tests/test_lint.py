"""Every Python file of the project read by pyflakes: a name used but never bound (an import lost in a
split: nodeqc/backends/cupy_node.py used CupyDevice without importing it, which only the real
multi-GPU path ran, and a lent H100 found on 2026-11-27), an import shadowed or unused, an f-string
with nothing to fill. pyflakes reads, it does not import, so the GPU-only code is read like the rest.
A line that means it (an import made to learn whether a package is there) says so with `# noqa`."""

from __future__ import annotations

from pathlib import Path

from pyflakes import api as pyflakes_api, reporter as pyflakes_reporter

ROOT = Path(__file__).resolve().parent.parent
READ = ("nodeqc", "benchmarks", "tests", "packaging")


class _Collect(pyflakes_reporter.Reporter):
    def __init__(self) -> None:
        self.found: list[str] = []

    def unexpectedError(self, filename: str, msg: str) -> None:  # noqa: N802 - pyflakes' name
        self.found.append(f"{filename}: {msg}")

    def syntaxError(self, filename: str, msg: str, lineno: int, offset: int, text: str) -> None:  # noqa: N802
        self.found.append(f"{filename}:{lineno}: {msg}")

    def flake(self, message) -> None:
        line = Path(message.filename).read_text(encoding="utf-8").splitlines()[message.lineno - 1]
        if "# noqa" not in line:
            self.found.append(str(message))


def _flakes(paths: list[Path]) -> list[str]:
    collect = _Collect()
    for path in paths:
        pyflakes_api.checkPath(str(path), collect)
    return collect.found


def test_pyflakes_finds_nothing_in_the_project():
    files = sorted(p for top in READ for p in (ROOT / top).rglob("*.py"))
    assert len(files) > 100
    assert _flakes(files) == []


def test_the_lint_sees_a_lost_import_and_respects_noqa(tmp_path):
    bad = tmp_path / "split.py"
    bad.write_text("import os\nimport sys  # noqa: F401 - is it there?\n\n\n"
                   "def make(i):\n    return CupyDevice(i, os.sep)\n")
    found = _flakes([bad])
    assert len(found) == 1 and "undefined name 'CupyDevice'" in found[0] and ":6:" in found[0]
