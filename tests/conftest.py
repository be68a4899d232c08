"""Shared fixtures. Every test gets its own XDG directories, so keys and archives never touch the
user's, and a fresh signing key."""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import Phase, settings

ROOT = Path(__file__).resolve().parent.parent
# Byte-code written, whatever the machine says: this project's machines set PYTHONDONTWRITEBYTECODE,
# and pytest then keeps no rewritten test module either, so each of xdist's workers rewrote and
# compiled every test module it collected, and every process the suite starts (a run's workers,
# `nodeqc` subprocesses) compiled what it imported from source. Collecting the suite took 15-17 s of
# CPU a worker against 7 with the byte-code kept (2026-11-27). Set here, before xdist starts its
# workers, which inherit the environment.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# The TCP floor of fabric tests whose pairs all run over 127.0.0.1, unshaped and with nothing planted:
# it only has to show that traffic ran both ways. Loopback under the suite's own load (six workers on
# 2 cores) measured 0.455 Gb/s one way on 2026-11-27 (a 0.5 floor failed that healthy pair); the
# tests that throttle a namespace's link to 100 Mb/s keep their 0.5.
LOOPBACK_TCP_FLOOR_GBPS = "0.05"
# Qt without a display, for every module that starts the app (tests/test_gui.py set it for itself
# only: tests/test_watch.py's GUI test crashed its worker when run without it).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Fabric runs on localhost (the host, Slurm and Kubernetes launchers' tests): each xdist worker's take
# ports of their own (nodeqc fabric --port). Two workers' iperf3 servers on one port refused each
# other's clients: TCP pairs failed in the Slurm and Kubernetes tests whenever their files ran at once.
# 2200 apart: a run takes its base plus 4 a pair, and NCCL 2000 above it (below 32768 for 8 workers).
# Set, not defaulted: the workers inherit the environment of the controller, which read this file too.
if os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw"):
    os.environ["NODEQC_FABRIC_PORT"] = str(15201 + 2200 * int(os.environ["PYTEST_XDIST_WORKER"][2:]))

# Mutation testing (benchmarks/mutation.sh; pyproject's [tool.mutmut] passes --hypothesis-profile=mutation):
# a property that fails a mutant only needs to fail. Shrinking its counterexample took 10-20 s a mutant.
settings.register_profile("mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate])


def pytest_configure(config: pytest.Config) -> None:
    """The package's byte-code written once, before xdist's workers start: the suite's first runs
    start several processes at once, each of which would otherwise compile the package itself
    (with PYTHONDONTWRITEBYTECODE set and nothing written, every process did: the suite took 11.1
    min against 10.3 with the byte-code there, 2026-11-27, 2 cores). It rewrites only what changed."""
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(str(ROOT / "nodeqc"), quiet=1)
        _rewrite_test_modules(config)


def _rewrite_test_modules(config: pytest.Config) -> None:
    """Each test module rewritten for pytest's assertions once, here, and kept where pytest looks
    for it, before xdist's workers start: in a fresh clone they start together, find nothing kept,
    and each of six rewrote and compiled every module it collected (some 8 s of CPU a worker,
    2026-11-27). pytest has no public call for this: through its private one, and where that is
    missing or fails the workers rewrite as before. Only what changed is rewritten."""
    if config.getoption("assertmode") != "rewrite":
        return
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        for fn in sorted((ROOT / "tests").glob("*.py")):
            if not (fn.name.startswith("test_") or fn.name == "conftest.py"):
                continue
            pyc = fn.parent / "__pycache__" / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc, state.trace) is None:
                pyc.parent.mkdir(exist_ok=True)
                source_hash, co = rewrite._rewrite_test(fn, config)
                rewrite._write_pyc(state, co, source_hash, pyc)
    except Exception:  # noqa: BLE001 - an optimisation only: the workers do it themselves
        pass


# The modules that take longest, first: with --no-loadscope-reorder (pyproject's addopts) xdist
# (--dist loadfile) hands modules to its workers in the order collected, and a long module handed
# out last sets the suite's end. Without that option xdist reorders them by their number of tests,
# and this list did nothing (2026-11-28: test_pyinstaller's 78 s began at 444 s of a 526 s run).
# By each module's wall time under the suite's load, from a per-test plugin on 2 cores (2026-11-28),
# longest first; modules not named keep their order after these.
SLOWEST_FIRST = ("test_cli.py", "test_gui.py", "test_fabric_hostile.py", "test_fault_detection.py",
                 "test_nic_simulated.py", "test_fabric_nccl.py", "test_codes.py", "test_fabric_slurm.py",
                 "test_slurm.py", "test_kernels.py", "test_pyinstaller.py", "test_real_captures.py",
                 "test_compare.py", "test_calibration.py", "test_watch.py", "test_runner.py",
                 "test_fabric_k8s.py", "test_findings.py", "test_pulse_load.py", "test_selection.py",
                 "test_fleet.py", "test_archive.py", "test_capture.py", "test_fault_families.py",
                 "test_scratch.py", "test_blackwell.py", "test_fabric_groups.py", "test_twin_fidelity.py",
                 "test_envelope_properties.py", "test_fabric.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each module stays whole


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for var, sub in (("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache")):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.delenv("NODEQC_ARCHIVE", raising=False)
    return home


def cli(*args: str, timeout: float = 120, cwd: Path | None = None, env: dict[str, str] | None = None,
        check_no_traceback: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `nodeqc ARGS` as a user would, in a subprocess with the test's XDG directories."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "nodeqc", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or ROOT, env=full_env)
    if check_no_traceback:
        assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def whole(r):
    """A check result as a tuple of everything it says, to pin one whole (a mutation of any part of
    its text, values, key, thresholds or evidence fails the test)."""
    return (r.name, r.subject, r.verdict.value, r.code, r.message, {k: (v.value, v.unit) for k, v in r.values.items()},
            r.key, [(t.name, t.kind, t.fail, t.warn, t.unit) for t in r.thresholds], r.evidence)


@pytest.fixture
def run_cli():
    return cli


class ManualTime:
    """Time that passes only as the code under test sleeps (nodeqc.backends.base.Clock's time): a
    simulated GPU's phases exact on any host, however starved of CPU."""

    def __init__(self):
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)


@pytest.fixture
def manual_time(monkeypatch):
    """The run's clock on ManualTime (a simulated node's and its workers' in this process)."""
    fake = ManualTime()
    monkeypatch.setattr("nodeqc.backends.base.time", fake)
    return fake
