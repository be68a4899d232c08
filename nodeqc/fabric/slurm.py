"""Slurm's own commands for the fabric: the node list (`scontrol show hostnames`) and draining the
nodes a fabric report fails, with the convention of packaging/slurm/nodeqc-retest: a reason that
starts with `nodeqc:`, and a node an operator drained (its reason does not start with `nodeqc:`)
left alone. `nodeqc-retest` resumes a node nodeqc drained only when it passes again, and never one
the fabric test drained (FABRIC_REASON): passing alone does not clear a fabric failure.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from nodeqc.core.errors import UsageError, shown
from nodeqc.core.names import check_host

REASON_PREFIX = "nodeqc:"
# A fabric drain's reason starts so. nodeqc-retest leaves such a node drained: a node that passes
# alone may still fail every job it joins, so only a fabric re-test or an operator clears it.
FABRIC_REASON = f"{REASON_PREFIX} FAIL fabric"
MAX_REASON = 200  # scontrol keeps long reasons, but sinfo's column and people read the start


def expand(nodelist: str, scontrol: str = "scontrol") -> list[str]:
    """gpu[01-04],gpu10 -> the host names, by Slurm's own parser."""
    try:
        done = subprocess.run([scontrol, "show", "hostnames", nodelist], capture_output=True, text=True, errors="replace", timeout=30)
    except FileNotFoundError:
        raise UsageError(f"--slurm {nodelist}: scontrol not found: run on a Slurm login or compute node") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--slurm {nodelist}: scontrol show hostnames did not answer within 30 s") from None
    if done.returncode != 0:
        raise UsageError(f"--slurm {nodelist}: scontrol: {done.stderr.strip() or f'exit {done.returncode}'}")
    names = done.stdout.split()
    if not names:
        raise UsageError(f"--slurm {nodelist}: no nodes in this list")
    # Slurm's answer is checked as a person's list is: each name becomes a word of srun's argv.
    return [check_host(n, f"--slurm {shown(nodelist)}: scontrol show hostnames gave") for n in names]


@dataclass
class DrainOutcome:
    node: str
    action: str  # drained | left (operator's drain) | error
    detail: str


def _reason_of(node: str, scontrol: str) -> tuple[str, str]:
    """(state, reason) from `scontrol show node`."""
    done = subprocess.run([scontrol, "show", "node", node], capture_output=True, text=True, errors="replace", timeout=30)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"exit {done.returncode}")
    state = re.search(r"\bState=(\S+)", done.stdout)
    reason = re.search(r"^\s*Reason=(.*?)(?: \[[^\]]*\])?$", done.stdout, re.M)
    return (state.group(1) if state else ""), (reason.group(1).strip() if reason else "")


def drain(failures: dict[str, str], report: str, scontrol: str = "scontrol") -> list[DrainOutcome]:
    """Drain each failed node with `nodeqc: FAIL fabric <why>; <report>`; never touch a node an
    operator drained."""
    out = []
    for node, why in failures.items():
        try:
            state, reason = _reason_of(node, scontrol)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            out.append(DrainOutcome(node, "error", f"scontrol show node: {e}"))
            continue
        if "DRAIN" in state and not reason.startswith(REASON_PREFIX):
            out.append(DrainOutcome(node, "left", f"drained by an operator ({reason or 'no reason'}): left alone"))
            continue
        text = f"{FABRIC_REASON} {why}"
        text = (text[: MAX_REASON - 1] + "…" if len(text) > MAX_REASON else text) + f"; {report}"
        done = subprocess.run([scontrol, "update", f"NodeName={node}", "State=DRAIN", f"Reason={text}"],
                              capture_output=True, text=True, errors="replace", timeout=30)
        if done.returncode != 0:
            out.append(DrainOutcome(node, "error", f"scontrol update: {done.stderr.strip() or done.returncode}"))
        else:
            out.append(DrainOutcome(node, "drained", text))
    return out
