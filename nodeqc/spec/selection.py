"""--only / --skip: run some checks, for troubleshooting a repair. A run that leaves any check out is
partial, and a partial report never counts as a qualification.

The health checks judge the telemetry recorded under the stress load, so the two go together:
selecting a health check runs the load too (and records stress.burn), and skipping the stress skips
the health checks.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from nodeqc.core.catalogue import FAMILIES, RUN
from nodeqc.core.errors import UsageError

# Every check a run can report, by family, as the catalogue lists them (nodeqc.core.catalogue).
CHECKS: dict[str, tuple[str, ...]] = {f.name: f.checks for f in FAMILIES}
CHECK_NAMES = tuple(name for f in FAMILIES for name in f.names)
# Reported whatever was selected: an internal error, and a run in which no check reached a verdict.
ALWAYS = RUN.names


def family(name: str) -> str:
    return name.split(".", 1)[0]


@dataclass(frozen=True)
class Selection:
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    # --gpu: only these GPUs (by slot, as nodeqc names them: gpu3) do GPU work and are judged by the
    # stress and health checks, as `dcgmi diag -i` and `gpu_burn -i` test a subset; empty: every GPU.
    gpus: tuple[int, ...] = ()

    @classmethod
    def parse(cls, only: list[str] | None, skip: list[str] | None, gpus: list[str] | None = None) -> "Selection":
        """From repeatable, comma-separated option values; UsageError for a name that is no check
        or family, for a GPU list that is not one, and for a selection that leaves no check."""
        sel = cls(_names("--only", only), _names("--skip", skip), parse_gpu_list(gpus))
        if not any(sel.includes(n) for n in CHECK_NAMES):
            raise UsageError("--only/--skip: this selection leaves no check to run")
        return sel

    @property
    def partial(self) -> bool:
        return bool(self.gpus) or not all(self.includes(n) for n in CHECK_NAMES)

    def covers(self, slot: int) -> bool:
        """Whether this GPU (by slot) does the run's GPU work."""
        return not self.gpus or slot in self.gpus

    def _named(self, names: tuple[str, ...], name: str) -> bool:
        return name in names or family(name) in names

    def includes(self, name: str) -> bool:
        if name in ALWAYS:
            return True
        chosen = not self.only or self._named(self.only, name)
        if name == "stress.burn" and any(family(n) == "health" for n in self.only):
            chosen = True  # the load the health checks judge
        if name == "dcgm.run" and any(family(n) == "dcgm" for n in self.only):
            chosen = True  # the DCGM run whose tests the dcgm categories judge: why they have no results
        dropped = self._named(self.skip, name)
        if family(name) == "health" and self._named(self.skip, "stress.burn"):
            dropped = True  # no load, nothing for them to judge
        return chosen and not dropped

    @property
    def needs_load(self) -> bool:
        return self.includes("stress.burn")

    @property
    def needs_gpu_phase(self) -> bool:
        """Any stress or health check: they run in, or judge, the GPU phase (so does a burn-in, when
        one is asked for). Asking for `stress.memtest` alone once ran nothing and passed."""
        return any(self.includes(n) for n in CHECK_NAMES if family(n) in ("stress", "health"))

    def to_dict(self) -> dict[str, Any] | None:
        """What the report records: None for a full run."""
        if not self.partial:
            return None
        recorded: dict[str, Any] = {"only": list(self.only), "skip": list(self.skip),
                                    "checks": [n for n in CHECK_NAMES if self.includes(n)]}
        if self.gpus:
            recorded["gpus"] = [f"gpu{i}" for i in self.gpus]
        return recorded

    def describe(self) -> str:
        return describe_partial(self.to_dict() or {})


def describe_partial(partial: dict[str, Any]) -> str:
    """What a partial run left out, in a few words, from what its report records (to_dict)."""
    parts = ([f"only {','.join(partial['only'])}"] if partial.get("only") else []) + \
            ([f"skip {','.join(partial['skip'])}"] if partial.get("skip") else []) + \
            ([f"GPUs {','.join(partial['gpus'])} only"] if partial.get("gpus") else [])
    return "; ".join(parts) or "partial"


def partial_words(described: str) -> str:
    """What a partial run's headline says it left out, from describe_partial's words: some checks,
    some GPUs, or both (`--gpu 3` ran every check, on one GPU: "only some checks ran" misled)."""
    parts = described.split("; ")
    checks = any(p.startswith(("only ", "skip ")) for p in parts)
    gpus = any(p.startswith("GPUs ") for p in parts)
    if gpus and not checks:
        return "only some GPUs were tested"
    return "only some checks ran, on some GPUs" if gpus else "only some checks ran"


def parse_gpu_list(values: list[str] | None) -> tuple[int, ...]:
    """--gpu 3, --gpu 0,2-3 (repeatable): GPU slots, sorted, each once; UsageError naming a part that
    is not a number or a rising range of numbers."""
    out: set[int] = set()
    for value in values or []:
        for part in (p.strip() for p in value.split(",")):
            m = re.fullmatch(r"([0-9]{1,4})(?:-([0-9]{1,4}))?", part)  # ASCII: \d takes "٣"
            if not m or (m[2] is not None and int(m[2]) < int(m[1])):
                raise UsageError(f"--gpu {value}: expected GPU numbers and ranges as nodeqc names the GPUs, "
                                 f"e.g. 3 or 0,2-3 (not {part!r})")
            out.update(range(int(m[1]), int(m[2] or m[1]) + 1))
    return tuple(sorted(out))


def _names(option: str, values: list[str] | None) -> tuple[str, ...]:
    known = set(CHECK_NAMES) | set(CHECKS)
    out: list[str] = []
    for value in values or []:
        names = [n for n in (v.strip() for v in value.split(",")) if n]
        if not names:  # `--only ,` ran every check, as a full qualification, exit 0 (2026-11-29 fuzzing)
            raise UsageError(f"{option} {value!r}: names no check; give check names or families, e.g. stress.burn,health")
        for name in names:
            if name not in known:
                near = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"did you mean {near[0]}?" if near else f"families: {', '.join(CHECKS)}"
                raise UsageError(f"{option} {name}: no check or family of that name; {hint}")
            out.append(name)
    return tuple(dict.fromkeys(out))
