"""Where the shipped data lives: inside the wheel (nodeqc/_data) or at the top of a source tree."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # nodeqc/


def data_dir(name: str) -> Path:
    """The directory of shipped `profiles` or `kernels`, installed or from a checkout."""
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    source = _PACKAGE.parent / name
    if source.is_dir():
        return source
    raise FileNotFoundError(f"nodeqc installation is missing its {name}/ directory")


def profiles_dir() -> Path:
    return data_dir("profiles")


def kernels_dir() -> Path:
    return data_dir("kernels")


def scenarios_dir() -> Path:
    return _PACKAGE / "backends" / "sim" / "scenarios"
