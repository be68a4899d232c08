"""Running the commands that set up the tests' own infrastructure (network namespaces, a local
Slurm): bounded, and a failure is an exception that names the command, its exit status and the end
of what it said, so a fixture that cannot come up says why."""

from __future__ import annotations

import subprocess
from typing import Sequence


def run_checked(cmd: Sequence[str], *, timeout: float = 60, env: dict[str, str] | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return done
