"""The DCGM step of a run: NVIDIA's `dcgmi diag` on the node's idle GPUs, before nodeqc's own stress
(DCGM refuses GPUs another process holds, and its own stress must not meet nodeqc's). Which level
(--dcgm, else the profile's [dcgm] level or quick_level), whether it can run here (a replay cannot; a
simulated run only when --dcgm asks, and then the dcgmi on PATH: tests put a stand-in there), and its time bound.
The verdicts are nodeqc.checks.dcgm's."""

from __future__ import annotations

from typing import Any, Callable

from nodeqc.backends import dcgm as backend
from nodeqc.checks import dcgm as checks
from nodeqc.core.model import CheckResult
from nodeqc.run.events import Notice
from nodeqc.spec.selection import CHECKS

DEFAULT_LEVEL, DEFAULT_QUICK_LEVEL = 2, 1
# How long each level may take before dcgmi is killed: several times the durations DCGM's
# documentation gives (level 1 seconds, 2 about 2 minutes, 3 about 30 minutes, 4 one to two hours);
# an estimate, the profile's [dcgm] timeout_s sets it.
TIMEOUT_S = {1: 300.0, 2: 900.0, 3: 3600.0, 4: 14400.0}


def parse_level(text: str) -> str:
    """--dcgm's value: 'off' or a level 1 to 4 (argparse type: ValueError otherwise)."""
    word = text.strip().lower()
    if word in ("off", "0") or word in {str(n) for n in checks.LEVELS}:
        return "off" if word == "0" else word
    raise ValueError(text)


def level_of(chosen: str | None, profile: Any, quick: bool) -> int:
    """The level to run: --dcgm's, else the profile's for a full or a quick run; 0 for none."""
    if chosen is not None:
        return 0 if chosen == "off" else int(chosen)
    if quick:
        return int(profile.get("dcgm", "quick_level", DEFAULT_QUICK_LEVEL))
    return int(profile.get("dcgm", "level", DEFAULT_LEVEL))


def dcgm_results(hw: Any, options: Any, gpus: list[Any], emit: Callable[[Any], None],
                 should_abort: Callable[[], bool]) -> list[CheckResult]:
    """The dcgm family's results for this run (none when no dcgm check is selected). `gpus`: every
    GPU the run found, to name DCGM's GPUs as the report does (by serial, else by index); with --gpu,
    DCGM is given the selected GPUs' indexes (-i), which are DCGM's GPU ids on a node where DCGM sees
    the GPUs NVML does."""
    selection = options.selection
    if not any(selection.includes(f"dcgm.{name}") for name in CHECKS["dcgm"]):
        return []
    level = level_of(options.dcgm, options.profile, options.quick)
    if level == 0:
        return checks.not_asked("--dcgm off" if options.dcgm == "off" else
                                f"the profile's [dcgm] {'quick_level' if options.quick else 'level'} is 0")
    if hw.replayed:
        return checks.not_here(hw.no_host_reason())
    if hw.simulated and options.dcgm is None:
        # Not by default: on a machine with DCGM and GPUs, the simulated run would test the real GPUs
        # and report them as the simulated ones. Asked for, it runs the dcgmi on PATH (tests: a stand-in).
        return checks.not_here("the simulated node has no DCGM (with --dcgm LEVEL a simulated run runs the dcgmi on PATH)")
    dcgmi = backend.which_dcgmi()
    if dcgmi is None:
        return checks.missing(level, hw.simulated)
    timeout_s = float(options.profile.get("dcgm", "timeout_s", TIMEOUT_S[level]))
    ids = sorted(g.index for g in gpus if selection.covers(g.slot) and not g.lost) if selection.gpus else None
    emit(Notice("info", f"DCGM diagnostic: {' '.join(backend.diag_command(dcgmi, level, ids))} "
                        f"(at most {timeout_s:g} s)"))
    run = backend.run_diag(dcgmi, level, timeout_s, ids, should_abort=should_abort)
    return checks.judge_run(run, level, timeout_s, gpus)
