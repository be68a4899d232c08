"""`pip install .` (not editable) gives a working nodeqc from any directory, with the profiles, the
scenarios and the kernels inside the wheel."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True, timeout=600)
    (whl,) = out.glob("nodeqc-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_carries_the_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped_profiles = {p.name for p in (ROOT / "profiles").glob("*.toml")}
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("nodeqc/_data/profiles/")} == shipped_profiles
    assert any(n.startswith("nodeqc/_data/kernels/") for n in names)
    assert "nodeqc/backends/sim/scenarios/hgx-h100.toml" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "nodeqc = nodeqc.cli.main:main" in zipfile.ZipFile(wheel).read(entry).decode()


@pytest.mark.slow
def test_installed_wheel_runs_from_anywhere(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "nodeqc", *a], cwd=elsewhere, env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    probe = subprocess.run([sys.executable, "-c", "import nodeqc.core.resources as r; print(r.profiles_dir())"],
                           cwd=elsewhere, env=env, capture_output=True, text=True)
    assert probe.stdout.strip().startswith(str(target))  # the wheel's own copy, not the checkout
    assert "hgx-h100" in run("profiles").stdout
    p = run("--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--out", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
