"""The hand-made mutations of issue 18, each applied to a copy of the tree and run against the test
that must kill it. Prints one JSON line per mutation and exits 1 if any survives.

    python benchmarks/hand_mutations.py

These are the wrong changes that once survived the whole suite; mutmut (benchmarks/mutation.sh)
covers the rest of the verdict code systematically.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (name, file, original text, mutated text, tests that must fail)
MUTATIONS = [
    ("compare_exact skips the last element", "nodeqc/core/known_answer.py",
     "        bad = xp.flatnonzero(a_bits != w_bits)\n",
     "        bad = xp.flatnonzero(a_bits != w_bits)\n        bad = bad[bad < a_bits.size - 1]\n",
     ["tests/test_verdicts.py::test_compare_exact_finds_one_wrong_element_anywhere"]),
    ("memtest verdict ignores a single bad word", "nodeqc/checks/stress/memory.py",
     '        if r["errors"]:\n', '        if r["errors"] > 1:\n',
     ["tests/test_verdicts.py::test_memtest_one_bad_word_fails"]),
    ("cross-GPU majority off by one (a tie is a majority)", "nodeqc/core/known_answer.py",
     "    if n * 2 <= len(fingerprints):\n", "    if n * 2 < len(fingerprints):\n",
     ["tests/test_verdicts.py::test_odd_ones_out", "tests/test_verdicts.py::test_burn_cross_gpu"]),
    ("cross-GPU majority off by one (2 of 3 is no majority)", "nodeqc/core/known_answer.py",
     "    if n * 2 <= len(fingerprints):\n", "    if n * 2 <= len(fingerprints) + 1:\n",
     ["tests/test_verdicts.py::test_odd_ones_out", "tests/test_verdicts.py::test_burn_cross_gpu"]),
    ("node-median outlier rule switched off", "nodeqc/checks/stress/outcomes.py",
     "    if median is None or peers < 2 or limit is None:\n", "    if True:\n",
     ["tests/test_verdicts.py::test_burn_outlier", "tests/test_verdicts.py::test_hbm_outlier",
      "tests/test_verdicts.py::test_pcie_outlier"]),
    ("outlier limit off by one step (strictly below the median)", "nodeqc/checks/stress/outcomes.py",
     '    deficit = round(relative_deficit_pct(value, median), 1)\n',
     '    deficit = round(relative_deficit_pct(value, median), 1) - 0.1\n',
     ["tests/test_verdicts.py::test_burn_outlier", "tests/test_verdicts.py::test_hbm_outlier"]),
    ("a throttle-reason bit changed in the shared table", "nodeqc/backends/base.py",
     '    "hw_slowdown": 0x8,\n', '    "hw_slowdown": 0x10,\n',
     ["tests/test_verdicts.py::test_throttle_reason_bit_is_nvmls_own"]),
    ("another throttle-reason bit changed", "nodeqc/backends/base.py",
     '    "power_brake": 0x80,\n', '    "power_brake": 0x100,\n',
     ["tests/test_verdicts.py::test_throttle_reason_bit_is_nvmls_own"]),
]


def run(name: str, path: str, old: str, new: str, tests: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="nodeqc-mutation-") as tmp:
        tree = Path(tmp)
        for part in ("nodeqc", "tests", "profiles", "kernels", "pyproject.toml"):
            src = ROOT / part
            (shutil.copytree if src.is_dir() else shutil.copy)(src, tree / part)
        target = tree / path
        text = target.read_text()
        if text.count(old) != 1:
            return {"mutation": name, "error": f"{path}: the original text is not there once"}
        target.write_text(text.replace(old, new))
        killed_by = []
        for test in tests:
            p = subprocess.run([sys.executable, "-m", "pytest", test, "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist"],
                               cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                               capture_output=True, text=True, timeout=600)
            if p.returncode == 1:  # tests ran and failed (2-5: could not run, which kills nothing)
                killed_by.append(test)
            elif p.returncode != 0:
                return {"mutation": name, "error": f"{test}: pytest exit {p.returncode}: {p.stdout[-500:]}"}
        return {"mutation": name, "killed": killed_by == tests, "killed_by": killed_by}


def main() -> int:
    results = [run(*m) for m in MUTATIONS]
    for r in results:
        print(json.dumps(r))
    return 0 if all(r.get("killed") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
