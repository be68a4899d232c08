"""Text renderings for people: progress lines for the terminal, and whole reports for `nodeqc show`.

Text from a report reaches a terminal only through clean() (nodeqc.core.text).
"""

from __future__ import annotations

from typing import Any

from nodeqc.backends.base import describe_unrecorded
from nodeqc.core.codes import advice, not_applicable_reason, not_run_reason
from nodeqc.core.figures import label
from nodeqc.core.model import CheckResult, Verdict
from nodeqc.core.text import clean, subjects_text
from nodeqc.report.answer import answer_lines, answer_of
from nodeqc.spec.selection import describe_partial, partial_words

MARK = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "skip": "SKIP", "error": "ERROR"}


def mark(r: CheckResult) -> str:
    """PASS, WARN, ...; N/A for a check that does not apply to the GPU's generation (not a SKIP)."""
    return "N/A" if not_applicable_reason(r.code) else MARK[r.verdict.value]


def planted_line(planted: dict[str, Any]) -> str:
    """A fault planted in a simulated node or fabric and what became of it (nodeqc.run.planted,
    nodeqc.fabric.simulated): every face says it in these words."""
    return f"simulated fault {planted.get('fault')}: {planted.get('outcome')}: {planted.get('why')}"


def result_line(r: CheckResult, t: float | None = None) -> str:
    stamp = f"[{t:8.1f}s] " if t is not None else ""
    code = f" [{r.code}]" if r.code and r.verdict is not Verdict.PASS and not not_applicable_reason(r.code) else ""
    return clean(f"{stamp}{mark(r):<5} {r.name:<24} {r.subject:<6} {r.message}{code}")


def passed_line(results: list[CheckResult], t: float | None = None) -> str:
    """One line for the subjects of a check that share a verdict (pass, or skip for one reason),
    with the range of their key figure."""
    if len(results) == 1:
        return result_line(results[0], t)
    stamp = f"[{t:8.1f}s] " if t is not None else ""
    first = results[0]
    word = mark(first) if first.verdict is Verdict.SKIP else "PASS"
    return clean(f"{stamp}{word:<5} {first.name:<24} {subjects_text([r.subject for r in results])}: "
                 f"{shared_detail(results)}")


def shared_detail(results: list[CheckResult]) -> str:
    """What subjects that share a verdict have in common: the reason they did not run (in short:
    the notice and the summary give it in full), or the range of their key figure."""
    first = results[0]
    if first.verdict is Verdict.SKIP:
        return not_run_reason(first.code) or first.message
    figures = [r.values[r.key] for r in results if r.key and r.key in r.values]
    numbers = [v.value for v in figures if isinstance(v.value, (int, float)) and not isinstance(v.value, bool)]
    if numbers and len(numbers) == len(figures):
        lo, hi = min(numbers), max(numbers)
        unit = f" {figures[0].unit}" if figures[0].unit else ""
        span = f"{_short(lo)}{unit}" if _short(lo) == _short(hi) else f"{_short(lo)}..{_short(hi)}{unit}"
        return f"{label(first.key, first.name)} {span}"
    distinct = sorted({str(v) for v in figures})
    messages = {r.message for r in results}
    return (", ".join(distinct) if 0 < len(distinct) <= 2 else
            first.message if len(messages) == 1 else "passed")


def _short(x: float) -> str:
    return f"{x:g}" if isinstance(x, int) or abs(x) >= 100 or float(x).is_integer() else f"{x:.3g}"


def banner(predicate: dict[str, Any]) -> str:
    verdict = predicate.get("verdict", "?")
    if predicate.get("status") == "aborted":
        verdict = "ABORTED (not qualified)"
    elif predicate.get("partial"):
        left = describe_partial(predicate["partial"]) if isinstance(predicate["partial"], dict) else ""
        verdict = f"{verdict} (PARTIAL: {partial_words(left)}; not a qualification)"
    sim = "  ** SIMULATED: not a qualification of real hardware **" if predicate.get("simulated") else ""
    return f"{verdict}{sim}"


def render_report(predicate: dict[str, Any], trust_line: str) -> str:
    """A whole report for a person: the answer first (what failed, where, what to do; what did not
    run), then the node and the run, then every check, one line per check and verdict."""
    if predicate.get("kind") == "fabric":  # many nodes qualified together
        return render_fabric_report(predicate, trust_line)
    node = predicate.get("node", {})
    prof = predicate.get("profile", {})
    # A report that does not verify says so before its verdict: the first line is the one read.
    head = ("nodeqc report: " if not trust_line.startswith("signature: NOT VERIFIED")
            else "nodeqc report (NOT VERIFIED: do not rely on it): ")
    out = [f"{head}{line}" if i == 0 else line for i, line in enumerate(answer_lines(answer_of(predicate)))]
    out += [
        "",
        trust_line,
        f"node      {node.get('hostname')}  serial {node.get('system_serial')}  "
        f"{node.get('system_vendor')} {node.get('system_model')}",
        f"driver    {node.get('driver_version')}  CUDA {node.get('cuda_version')}  "
        f"{len(predicate.get('gpus', []))} GPU(s)",
        f"profile   {prof.get('name')} ({' -> '.join(prof.get('chain', []))})  sha256 {str(prof.get('sha256'))[:16]}"
        + (f"  SKU {prof['sku']}" if prof.get("sku") else ""),
        *(f"          {notice}" for notice in prof.get("notices", [])),
        f"run       {predicate.get('started_at')} .. {predicate.get('finished_at')}  {run_length(predicate)}"
        f"{'  quick' if predicate.get('quick') else ''}",
        "operator  " + "  ".join([str(predicate.get("operator"))]
                                 + ([f"ticket {predicate['ticket']}"] if predicate.get("ticket") else [])),
    ]
    sim = predicate.get("simulation")
    if sim and sim.get("replay"):
        out.append(f"replayed  capture {sim['replay']} (captured {sim.get('captured_at')}), compute: {sim.get('compute')}")
        if sim.get("unrecorded"):
            out.append(f"          {describe_unrecorded(sim['unrecorded'])}")
    elif sim:
        out.append(f"simulated scenario {sim.get('scenario')}  faults {', '.join(sim.get('faults') or []) or 'none'}"
                   f"  time x{sim.get('time_scale')}")
        out += [f"          {planted_line(planted)}" for planted in sim.get("planted") or []]
    for g in predicate.get("gpus", []):
        out.append(f"  {str(g.get('subject')):<6} {g.get('name')}  {g.get('bus_id')}  serial {g.get('serial')}  "
                   f"VBIOS {g.get('vbios')}")
    checks = [CheckResult.from_dict(c) for c in predicate.get("checks", [])]
    out += ["", f"ALL CHECKS ({len(checks)} results):"]
    out += ["  " + line for line in grouped_lines(checks)]
    return "\n".join(clean(line) for line in out)


def render_fabric_report(predicate: dict[str, Any], trust_line: str) -> str:
    """`nodeqc show` of a fabric report: the verdict and what is bad first, then every node and rail."""
    fab = predicate.get("fabric", {})
    bad = fab.get("bad", {})
    checks = [CheckResult.from_dict(c) for c in predicate.get("checks", [])]
    out = [f"nodeqc fabric report: {banner(predicate)}", trust_line,
           f"fabric    {fab.get('name')}  {len(fab.get('nodes', []))} nodes  rails {', '.join(fab.get('rails', [])) or 'none'}"
           f"  launcher {fab.get('launcher')}",
           f"rounds    {fab.get('rounds')} (seed {fab.get('seed')}); {fab.get('rounds_reason', '')}",
           f"profile   {predicate.get('profile', {}).get('name')}  tests {', '.join(fab.get('tests', []))}",
           f"run       {predicate.get('started_at')} .. {predicate.get('finished_at')}  {predicate.get('duration_s')} s",
           # As a node's report: the ticket only where one was given ("ticket None" read as a ticket's name).
           f"operator  {predicate.get('operator')}" + (f"  ticket {predicate['ticket']}" if predicate.get("ticket") else "")]
    sim = predicate.get("simulation")
    if sim:
        out.append(f"simulated {sim.get('nodes')} nodes, {sim.get('rails')} rails  faults {', '.join(sim.get('faults') or []) or 'none'}")
    named = [("bad nodes", bad.get("nodes")), ("bad rails of one node", [f"{n}:{r}" for n, r in bad.get("node_rails", [])]),
             ("bad rails (fabric-wide)", bad.get("rails")), ("bad links", [f"{a}-{b}" for a, b in bad.get("links", [])]),
             ("bad switch uplinks", [f"{u} uplink" for u in bad.get("uplinks") or []]),
             ("dead leaves", bad.get("leaves") or []),
             ("inconclusive", bad.get("inconclusive")),
             ("fail only together", ["-".join(t) for t in (fab.get("groups") or {}).get("together") or []]),
             ("fabric-wide (groups)", ["every group and half failed"] if bad.get("fabric") else [])]
    out += [""] + [f"{what:<24} {', '.join(items)}" for what, items in named if items]
    topo = fab.get("topology") or {}
    if topo:
        out.append(f"{'topology':<24} {topo.get('source')}: {len(topo.get('leaves') or {})} leaves, "
                   f"{len(set((topo.get('parents') or {}).values()))} switches above them")
    cov = fab.get("coverage") or {}
    pairs = cov.get("pairs") or {}
    if pairs:
        listed = list(pairs.get("listed") or [])
        more = (pairs.get("untested") or 0) - len(listed[:12])
        out.append(f"{'pairs tested':<24} {pairs.get('tested')} of {pairs.get('total')}"
                   + (f"; never tested: {', '.join(listed[:12])}" + (f" +{more} more" if more > 0 else "")
                      if pairs.get("untested") else ""))
    for what, key in (("rails never tested", "rails_untested"), ("ports never tested", "ports_untested"),
                      ("uplinks never tested", "uplinks_untested")):
        if cov.get(key):
            out.append(f"{what:<24} {', '.join(cov[key][:24])}" + (f" +{len(cov[key]) - 24} more" if len(cov[key]) > 24 else ""))
    grouped = fab.get("groups") or {}
    if grouped:
        rows = predicate.get("groups") or []
        out.append(f"{'group tests':<24} {len(rows)} in {grouped.get('rounds')} rounds, groups of {grouped.get('size')} "
                   f"({', '.join(fab.get('group_tests') or [])}); passed {sum(r.get('outcome') == 'pass' for r in rows)}")
    for planted in (sim or {}).get("planted") or []:
        out.append(planted_line(planted))
    failing = [c for c in checks if c.verdict in (Verdict.FAIL, Verdict.ERROR)]
    if failing:
        out += ["", f"FAILED ({len(failing)}):"]
        for c in failing:
            out += [f"  {c.subject:<12} {c.name}: {c.message} [{c.code}]",
                    f"               -> {advice(c.code or '', c.subject, c.evidence, c.verdict.value)}"]
    out += ["", "ALL CHECKS:"] + ["  " + result_line(c) for c in checks]
    # Every line escaped, as a node's report is: check messages carry what the nodes' workers printed
    # (an unreadable tail, a worker's own error), which may hold a terminal's escape sequences.
    return "\n".join(clean(line) for line in out)


def run_length(predicate: dict[str, Any]) -> str:
    """'19 s', or for a simulated run '186 s simulated (19 s wall clock)': a simulated node's clock
    runs faster than the wall's."""
    from datetime import datetime

    seconds = predicate.get("duration_s")
    if not predicate.get("simulated"):
        return f"{seconds} s"
    try:
        wall = (datetime.fromisoformat(str(predicate.get("finished_at")).replace("Z", "+00:00"))
                - datetime.fromisoformat(str(predicate.get("started_at")).replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return f"{seconds} s simulated"
    return f"{seconds} s simulated ({wall:g} s wall clock)"


def grouped_lines(results: list[CheckResult]) -> list[str]:
    """Every result, in run order: a line for each that warned or failed, one line per check for
    the subjects that passed, and one per check and reason for those that did not run."""
    return [passed_line(group) for group in grouped(results)]


def grouped(results: list[CheckResult]) -> list[list[CheckResult]]:
    """The results in run order, by check: each that warned or failed alone, then the subjects that
    passed together, then those that did not run, together per reason."""
    out: list[list[CheckResult]] = []
    by_check: dict[str, list[CheckResult]] = {}
    for r in results:
        by_check.setdefault(r.name, []).append(r)
    for batch in by_check.values():
        groups: dict[tuple[str, str], list[CheckResult]] = {}
        for r in batch:
            if r.verdict is Verdict.PASS:
                groups.setdefault(("pass", r.key or ""), []).append(r)
            elif r.verdict is Verdict.SKIP:
                groups.setdefault(("skip", not_run_reason(r.code) or r.message), []).append(r)
            else:
                out.append([r])
        out += list(groups.values())
    return out


RENDERED = frozenset({"run_started", "run_finished", "check_finished", "report_not_written"})  # what it reads


def render_journal(records: list[dict[str, Any]]) -> str:
    """A partial run, from its journal: what was reached before it stopped."""
    started = next((r for r in records if r.get("type") == "run_started"), {})
    finished = next((r for r in records if r.get("type") == "run_finished"), None)
    results = [CheckResult.from_dict(r["result"]) for r in records if r.get("type") == "check_finished"]
    if finished and not (isinstance(finished.get("verdict"), str) and isinstance(finished.get("status"), str)):
        raise ValueError("its run_finished record's verdict or status is not text")  # "finished: [1]", exit 0
    state = (f"finished: {finished['verdict']} ({finished['status']})" if finished else
             "INCOMPLETE: the run stopped before its report was written")
    not_written = next((r for r in records if r.get("type") == "report_not_written"), None)
    if not_written:
        state += f", but its report was NOT written ({not_written.get('reason')}): not a qualification"
    node = started.get("node", {})
    # Unsigned: anyone can write one ("finished: PASS" of a forged journal, exit 0, said nothing of it).
    report = finished.get("report_path") if finished else None
    trust = ("NOT VERIFIED: a journal is not signed, only the run's own record; its signed report is the "
             "qualification" + (f" (nodeqc verify {report})" if isinstance(report, str) else ""))
    out = [f"nodeqc journal: {state}", trust,
           f"node {node.get('hostname')}  profile {started.get('profile', {}).get('name')}  "
           f"started {started.get('started_at')}{'  SIMULATED' if started.get('simulated') else ''}",
           f"{len(results)} result(s) reached:"]
    out += ["  " + result_line(r) for r in results]
    return "\n".join(clean(line) for line in out)
