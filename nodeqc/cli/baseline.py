"""`nodeqc baseline create OUT.toml` on a known-good node; `nodeqc baseline check FILE` on any node
(a quick look without the stress run; a qualification run takes `--baseline FILE` instead).

Exit codes as everywhere: 0 done / matches, 1 the node differs (check), 2 could not do it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from nodeqc.core.arguments import Parser
from nodeqc.core.errors import UsageError
from nodeqc.core.text import clean


def _parser() -> Parser:
    p = Parser(prog="nodeqc baseline", description="Record a known-good node as a golden baseline, or "
               "compare this node with one.")
    sub = p.add_subparsers(dest="action", metavar="create|check", parser_class=Parser)
    create = sub.add_parser("create", help="record this node as the baseline (a TOML file to review)")
    create.add_argument("out", help="the baseline file to write, e.g. golden-hgx-h100.toml")
    create.add_argument("--force", action="store_true", help="replace OUT if it exists")
    check = sub.add_parser("check", help="compare this node with a baseline now (exit 1 on a difference)")
    check.add_argument("baseline", help="the baseline file")
    check.add_argument("--profile", metavar="NAME|PATH", help="apply this profile's baseline_warn / baseline_ignore")
    for s in (create, check):
        s.add_argument("--simulate", metavar="NAME|PATH", help="a simulated node (nodeqc scenarios)")
        s.add_argument("--inject", metavar="FAULT", action="append", default=[], help="fault for the simulated node")
        s.add_argument("--replay", metavar="CAPTURE", help="a captured machine (nodeqc capture)")
    return p


def _hardware(args: Any) -> Any:
    from nodeqc.backends import hardware_for

    return hardware_for(args.simulate, args.replay, args.inject)


def observe_node(hw: Any) -> tuple[dict[str, Any], Any]:
    """This node in the baseline's shape, and its host record."""
    from nodeqc.backends.gpus import open_gpus
    from nodeqc.core.errors import BackendUnavailable
    from nodeqc.spec.baseline import observe

    host = hw.host.info()
    try:
        found = open_gpus(hw, host)
    except BackendUnavailable as e:
        hw.mgmt.close()
        raise UsageError(f"baseline: {e}") from None
    try:
        observed = observe(found.gpus, found.driver, found.cuda, host,
                           hw.nics.nics() if hw.nics else None, hw.platform, hw.no_host_reason())
    finally:
        hw.mgmt.close()
    return observed, host


def main(argv: list[str]) -> int:
    from nodeqc.checks.conformance import judge_conformance
    from nodeqc.core.model import Verdict
    from nodeqc.core.safefile import write_atomic
    from nodeqc.spec.baseline import Baseline, render

    args = _parser().parse_args(argv)
    if args.action is None:
        raise UsageError("baseline: expected create or check (see nodeqc baseline --help)")
    hw = _hardware(args)
    if args.action == "create":
        out = Path(args.out)
        if out.exists() and not args.force:
            raise UsageError(f"{out}: exists; pass --force to replace it")
        observed, host = observe_node(hw)
        if not observed["gpu"]:
            raise UsageError("baseline create: no GPUs answered: a baseline of a node without its GPUs is no baseline")
        text = render(observed, host.hostname, hw.simulated)
        write_atomic(out, text.encode("utf-8"))  # never through a link planted at its name or a temporary one
        parts = f"{len(observed['gpu'])} GPU(s), {len(observed['nic'])} NIC(s), {len(observed['bridge'])} bridge(s)"
        sim = " (SIMULATED node: for trying nodeqc out, not a real baseline)" if hw.simulated else ""
        print(f"nodeqc: baseline of {host.hostname}: {parts}{sim}", file=sys.stderr)
        for why, tables in _unread(observed).items():
            print(f"nodeqc: not recorded, this run cannot read them ({why}): {tables}", file=sys.stderr)
        print(out)
        return 0
    profile = None
    if args.profile:
        from nodeqc.spec.profile import load_profile

        profile = load_profile(args.profile)
    baseline = Baseline.load(args.baseline, profile)
    observed, _ = observe_node(hw)
    results = judge_conformance(baseline.data, observed, baseline.warn, baseline.ignore, f"the baseline ({baseline.path.name})")
    for r in results:
        if r.verdict is not Verdict.PASS:
            # The baseline's and the node's strings are input: ESC and NUL reached the terminal raw.
            print(clean(f"{r.verdict.value.upper():<5} {r.name:<18} {r.subject:<10} [{r.code}] {r.message}"))
    differ = sum(1 for r in results if r.verdict in (Verdict.FAIL, Verdict.WARN))
    matched = sum(1 for r in results if r.verdict is Verdict.PASS)
    unread = sum(1 for r in results if r.verdict in (Verdict.SKIP, Verdict.ERROR))
    # As a run's: a difference that fails is 1; nothing comparable at all (an ERROR) is 2, could not run;
    # what this run could not read (SKIP) leaves the verdict to the parts that were compared.
    if any(r.verdict is Verdict.ERROR for r in results):
        why = ("the profile's baseline_ignore leaves out every field it records"
               if any(r.code == "BASELINE_NOTHING_COMPARED" for r in results) else "this run cannot read what it records")
        print(f"nodeqc: nothing of {baseline.path} could be compared: {why}", file=sys.stderr)
        return 2
    partly = f"; {unread} check(s) not compared in full: this run cannot read all the baseline records"
    print(f"nodeqc: {differ} difference(s) from {baseline.path}; {matched} part(s) match{partly if unread else ''}",
          file=sys.stderr)
    return 1 if any(r.verdict is Verdict.FAIL for r in results) else 0


def _unread(observed: dict[str, Any]) -> dict[str, str]:
    """What the observation could not read (nodeqc.spec.baseline.observe), by reason: the tables and fields."""
    by_why: dict[str, list[str]] = {}
    for kind, names in observed.get("unread", {}).items():
        for why in dict.fromkeys(names.values()):
            fields = [n for n, w in names.items() if w == why]
            table = "[node]" if kind == "node" else f"[{kind}.*]"
            by_why.setdefault(why, []).append(f"{table} " + ("all" if "devices" in fields else ", ".join(fields)))
    return {why: "; ".join(tables) for why, tables in by_why.items()}
