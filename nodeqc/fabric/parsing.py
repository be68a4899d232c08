"""The argument parser of `nodeqc fabric` and `nodeqc fabric worker`: a usage mistake is one line
and exit 2, as for the main command (its own module, so the worker needs nothing of the CLI)."""

from __future__ import annotations

import argparse

from nodeqc.errors import UsageError


class Parser(argparse.ArgumentParser):
    """A usage mistake is one line and exit 2 (as the main command's parser)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")
