"""The one-folder technician build (packaging/pyinstaller/nodeqc.spec): it builds, carries the
profiles, kernels, scenarios and the GUI's Qt, leaves the NVIDIA driver's libraries to the machine,
and its binary qualifies the simulated node from any directory."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, cli

SPEC_DIR = ROOT / "packaging" / "pyinstaller"


def _driver_libs():
    spec = importlib.util.spec_from_file_location("driver_libs", SPEC_DIR / "driver_libs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_driver_libraries_are_recognised():
    is_driver = _driver_libs().is_driver_library
    for name in ("libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.570.124.06",
                 "libnvidia-ptxjitcompiler.so.1", "nvidia/libnvidia-nvvm.so.4"):
        assert is_driver(name), name
    for name in ("libcudart.so.12", "libQt6Core.so.6", "libcublas.so.12", "libpython3.11.so.1.0"):
        assert not is_driver(name), name


def _pyinstaller() -> None:
    """PyInstaller from the `build` extra; installed here if missing, skipped only if that fails."""
    if importlib.util.find_spec("PyInstaller") is not None:
        return
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "pyinstaller>=6.10"],
                       capture_output=True, text=True, timeout=600)
    importlib.invalidate_caches()
    if p.returncode != 0 or importlib.util.find_spec("PyInstaller") is None:
        pytest.skip(f"PyInstaller cannot be installed here (pip: {p.stderr.strip().splitlines()[-1:]})")


@pytest.mark.slow
def test_the_frozen_build_qualifies_the_simulated_node(tmp_path):
    _pyinstaller()
    dist, work = tmp_path / "dist", tmp_path / "work"
    build = subprocess.run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
                            "--distpath", str(dist), "--workpath", str(work), str(SPEC_DIR / "nodeqc.spec")],
                           cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    app = dist / "nodeqc"
    files = [p.relative_to(app).as_posix() for p in app.rglob("*") if p.is_file()]
    internal = "_internal/nodeqc"
    assert {p.name for p in (app / internal / "_data" / "profiles").glob("*.toml")} == \
        {p.name for p in (ROOT / "profiles").glob("*.toml")}
    assert (app / internal / "_data" / "kernels").is_dir() and (app / internal / "backends" / "sim" / "scenarios" / "h100.toml").is_file()
    if importlib.util.find_spec("PySide6") is not None:
        assert any(f.endswith("platforms/libqxcb.so") for f in files), "the GUI's Qt platform plugin is missing"
    assert not [f for f in files if _driver_libs().is_driver_library(f)]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    env.pop("PYTHONPATH", None)
    run = subprocess.run([str(app / "nodeqc"), "--headless", "--simulate", "h100", "--quick"], cwd=elsewhere,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "RESULT: PASS" in run.stderr and "stress.burn" in run.stderr
    report = Path(run.stdout.strip().splitlines()[-1])
    assert report.is_relative_to(tmp_path / "data")
    verify = cli("verify", str(report))  # the checkout's nodeqc trusts the frozen build's signature
    assert verify.returncode == 0 and "PASS" in verify.stdout, verify.stderr
    history = subprocess.run([str(app / "nodeqc"), "history", "--simulated"], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert history.returncode == 0 and str(report) in history.stdout
