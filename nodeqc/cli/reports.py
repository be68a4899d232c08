"""The report tools: `nodeqc verify` and `show` (one report), `history`, `compare` and `export`
(the archive's reports, or two of them)."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any

from nodeqc.cli.archive import archive_parser, chosen_archive, query
from nodeqc.cli.common import check_output_file, positive_int
from nodeqc.core.arguments import Parser
from nodeqc.core.errors import UsageError
from nodeqc.core.text import clean, table


def cmd_verify(argv: list[str]) -> int:
    from nodeqc.report.envelope import VerificationError, evidence_text, verify_file
    from nodeqc.report.keys import trusted_keys
    from nodeqc.report.render import banner

    p = Parser(prog="nodeqc verify", description="Check a report's signature; exit 0 only if it is "
               "intact and signed by a trusted key.")
    p.add_argument("report", help="the .report.json file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable); "
                   "default: your own key and those in the trusted-keys directory")
    p.add_argument("--report-only", action="store_true", help="verify the signed report alone, without "
                   "the journal and telemetry files it names (e.g. a report copied on its own)")
    p.add_argument("--fabric-nodes", action="store_true", help="a fabric report: print each node's verdict "
                   "('NODE pass|fail|error', one a line) once verified, and only from a complete run (exit 1 "
                   "otherwise); nodeqc-retest --fabric returns nodes to service from these lines alone")
    args = p.parse_args(argv)
    try:
        # --report-only: the report alone; its evidence files are not read even where they lie beside it.
        verified = verify_file(Path(args.report), trusted_keys(args.pubkey), evidence=not args.report_only)
        if verified.missing and not args.report_only:
            raise VerificationError(f"evidence missing: {', '.join(f'{m} is missing' for m in verified.missing)} "
                                    "(not beside the report; --report-only verifies the report alone)")
    except VerificationError as e:
        print(clean(f"nodeqc verify: {args.report}: NOT VERIFIED: {e}"), file=sys.stderr)
        return 1
    pred = verified.predicate
    if args.fabric_nodes:
        return _fabric_nodes(args.report, pred)
    try:
        node = pred.get("node") or {}
        line = (f"verified: {banner(pred)}  node {node.get('hostname')} (serial {node.get('system_serial')})  "
                f"profile {(pred.get('profile') or {}).get('name')}  finished {pred.get('finished_at')}  "
                f"key {verified.keyid[:16]} ({verified.key_source})")
    except (AttributeError, TypeError) as e:
        print(clean(f"nodeqc verify: {args.report}: signed, but not in the form nodeqc writes ({e})"),
              file=sys.stderr)
        return 1
    print(clean(line))
    print(clean("evidence: not checked (--report-only)" if args.report_only else f"evidence: {evidence_text(verified)}"))
    return 0


def _fabric_nodes(report: str, pred: Any) -> int:
    """`verify --fabric-nodes`: each node's verdict from a verified, complete fabric report. An
    aborted or simulated run, or a fabric report that is not in the form nodeqc writes, gives none
    (exit 1)."""
    why = None
    if not isinstance(pred, dict) or pred.get("kind") != "fabric":
        why = "not a fabric report"
    elif pred.get("status") != "complete" or pred.get("partial"):
        why = f"the fabric run is {pred.get('status')}, not complete: no node's verdict stands"
    elif pred.get("simulated") is not False:
        # A simulated cluster's verdicts are of no real node, whatever its nodes are called (a
        # topology file names them): printed, they read as any run's, and returned nodes to service.
        why = "a simulated fabric run: no real node's verdict stands"
    nodes = pred.get("nodes") if isinstance(pred, dict) else None
    if why is None and not (isinstance(nodes, list) and nodes and all(
            isinstance(n, dict) and isinstance(n.get("name"), str) and n.get("verdict") in ("pass", "fail", "error")
            for n in nodes)):
        why = "signed, but its nodes are not in the form nodeqc writes"
    if why:
        print(clean(f"nodeqc verify: {report}: {why}"), file=sys.stderr)
        return 1
    for n in nodes:
        print(clean(f"{n['name']} {n['verdict']}"))
    return 0


def cmd_show(argv: list[str]) -> int:
    from nodeqc.core.safefile import NotAFile
    from nodeqc.report.envelope import load
    from nodeqc.report.journal import read_records
    from nodeqc.report.keys import trusted_keys
    from nodeqc.report.render import RENDERED, render_journal, render_report

    p = Parser(prog="nodeqc show", description="Show a report (or the journal or telemetry of a run that did not finish).")
    p.add_argument("report", help="a .report.json file, a .journal.jsonl file, or a .telemetry.csv.gz file")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable)")
    p.add_argument("--unverified", action="store_true", help="show a report that does not verify anyway "
                   "(marked NOT VERIFIED); without it such a report is refused with exit 2")
    p.add_argument("--pdf", metavar="FILE", help="write the printable summary of a report here instead of "
                   "showing it, as the app's Export PDF does (needs the GUI extra, PySide6; no display needed)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document (whether and by "
                   "whom it is verified, and the signed predicate) for scripts, instead of the text")
    args = p.parse_args(argv)
    path = Path(args.report)
    if args.json and path.name.endswith((".csv.gz", ".jsonl")):
        raise UsageError(f"--json: {path}: shows a report (.report.json); a journal is JSON lines already")
    if args.pdf:
        check_output_file(Path(args.pdf), "--pdf", (".pdf",))
        if path.name.endswith((".csv.gz", ".jsonl")):
            raise UsageError(f"--pdf: {path}: a printable summary is made of a report (.report.json), "
                             "not of a journal or telemetry")
    if path.name.endswith(".csv.gz"):
        from nodeqc.work.telemetry import describe_series

        if not path.exists():  # a FIFO or a directory by the name is there, and is said to be what it is
            raise UsageError(f"{path}: no such telemetry file")
        from nodeqc.core.text import clean_lines

        print(clean_lines(describe_series(path)))
        return 0
    if path.name.endswith(".jsonl"):
        if not path.exists():
            raise UsageError(f"{path}: no such journal")
        try:
            records, damaged = read_records(path, RENDERED)
        except NotAFile as e:
            print(clean(f"nodeqc show: {path}: not a readable journal: {e}"), file=sys.stderr)
            return 2
        except OSError as e:
            raise UsageError(f"{path}: cannot read journal: {e.strerror}") from None
        if not any(r.get("type") == "run_started" for r in records):
            # /etc/passwd, random bytes or an empty file named *.jsonl showed as an INCOMPLETE run, exit 0
            print(clean(f"nodeqc show: {path}: not a nodeqc journal (no run_started record)"), file=sys.stderr)
            return 2
        try:
            print(render_journal(records))
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            print(clean(f"nodeqc show: {path}: not a journal nodeqc writes ({type(e).__name__}: {e})"), file=sys.stderr)
            return 2
        if damaged:
            print(f"nodeqc show: warning: {path}: {damaged} damaged line(s) before the last were passed over "
                  "(a kill tears only the last)", file=sys.stderr)
        return 0
    loaded = load(path, trusted_keys(args.pubkey))
    # Exit 2 (could not judge), as `compare` refuses the same report: what it says cannot be relied on.
    if loaded.statement is None:  # not a report at all: --unverified would not show it either
        print(clean(f"nodeqc show: {path}: not a readable nodeqc report: {loaded.unreadable}"), file=sys.stderr)
        return 2
    if loaded.verified is None and not args.unverified:
        print(clean(f"nodeqc show: {path}: NOT VERIFIED: {loaded.problem} (--unverified shows it anyway)"), file=sys.stderr)
        return 2
    stmt, is_verified, trust = loaded.statement, loaded.verified is not None, loaded.trust
    if args.json:
        print(json.dumps(shown_as_json(loaded), sort_keys=True))  # ASCII: every control character escaped
    elif not args.pdf:
        # Its shape was checked as it was loaded (report.shape): an error here is nodeqc's, said as one.
        print(render_report(stmt["predicate"], trust))
    if args.pdf:
        from nodeqc.report.printable import LoadedReport, export_pdf

        export_pdf(LoadedReport(path, stmt["predicate"], is_verified, trust), Path(args.pdf))
        print(clean(f"nodeqc show: printable summary written: {args.pdf}"), file=sys.stderr)
    return 0


def shown_as_json(loaded: Any) -> dict[str, Any]:
    """`show --json`: the report as a script needs it without unwrapping DSSE: the signed predicate,
    whether it verified, by which key, and what was found of its evidence files."""
    v = loaded.verified
    return {"report": str(loaded.path), "verified": v is not None, "trust": loaded.trust,
            "problem": loaded.problem, "keyid": v.keyid if v else None, "key_source": v.key_source if v else None,
            "evidence": {"checked": v.checked, "missing": v.missing} if v else None,
            "sha256": v.sha256 if v else None, "predicate": loaded.statement["predicate"]}


# The widest each column of `history` may be: FINISHED, NODE, HOST, RESULT, PROFILE, FAILED, REPORT.
HISTORY_CAPS = [20, 24, 20, 24, 16, 40, 4096]


def cmd_history(argv: list[str]) -> int:
    p = archive_parser("nodeqc history", "List the verified reports in the archive, newest first. Only a "
                        "complete, full run that passed is a qualification; partial runs say so.")
    p.add_argument("--limit", type=positive_int, metavar="N", help="at most N reports")
    p.add_argument("--expired", action="store_true", help="only each node's newest qualification whose "
                   "valid_until (the profile's valid_days) has passed")
    p.add_argument("--part", metavar="SERIAL", help="one part's story instead: a GPU by its serial, a NIC by its "
                   "MAC or PCI address; each report that saw it, what failed, what was repaired and whether it held")
    args = p.parse_args(argv)
    if args.part:
        return _part_history(args)
    from nodeqc.report.keys import trusted_keys

    limit = args.limit
    if args.expired:  # expiry is judged on each node's newest qualification: limit after that
        args.limit = None
    args.fabrics = not args.expired  # a node's history includes the fabric runs it took part in
    entries = query(args)
    if args.expired:
        from nodeqc.archive.fleet import expired_entries

        expired = expired_entries(entries, trusted=trusted_keys(args.pubkey))
        entries = expired[:limit] if limit else expired
    rows = []
    for e in entries:
        failed = (e.failed[0] + (f" +{len(e.failed) - 1}" if len(e.failed) > 1 else "")) if e.failed else "-"
        host, result = e.hostname, e.result
        if e.fabric:  # many nodes qualified together: with --node, that node's own verdict there
            host, result = f"fabric of {len(e.members)}", f"FABRIC {e.result}"
            found = e.member(args.node) if args.node else None
            if found:
                name, facts = found
                aborted = " (aborted)" if e.status == "aborted" else ""
                result = f"FABRIC {str(facts.get('verdict')).upper()}{aborted}" + (" SIM" if e.simulated else "")
                failed = f"{facts.get('code')} as {name}" if facts.get("code") else f"as {name}"
        rows.append([e.finished_at, e.node, host, result, e.profile, failed, e.path])
    if rows:
        # Columns as wide as their content up to a cap (a longer cell cut with '…'); the report's path
        # whole, last. table() escapes every cell, as `show` does.
        for line in table(["FINISHED", "NODE", "HOST", "RESULT", "PROFILE", "FAILED", "REPORT"], rows,
                          HISTORY_CAPS):
            print(line)
    _watched(entries, trusted_keys(args.pubkey))
    return 0


def _watched(entries: list[Any], trusted: dict[str, Any]) -> None:
    """What `nodeqc watch` says of each node listed (its newest report's qualification ended, and
    why), one line each on stderr under the table."""
    from nodeqc.archive.watch import last_cleared, validity

    seen: set[str] = set()
    cleared = last_cleared(entries)
    for e in entries:  # newest first: each node's newest report
        if e.fabric or e.node in seen:
            continue
        seen.add(e.node)
        until, why = validity(e.node, e.root, None, cleared.get(e.node), trusted)
        if why:
            print(clean(f"nodeqc: {e.node}: {why}" + (f"; valid until {until}" if until else "")), file=sys.stderr)


def _part_history(args: argparse.Namespace) -> int:
    from nodeqc.archive.index import Archive
    from nodeqc.archive.parts import story
    from nodeqc.report.keys import trusted_keys

    archive = Archive(chosen_archive(args), trusted_keys(args.pubkey))
    chapters = story(archive, args.part)
    archive.close()
    if not chapters:
        print(clean(f"nodeqc: no verified report in {archive.root} saw a part {args.part}"), file=sys.stderr)
        return 0
    print(clean(f"part {chapters[-1].identity}: {len(chapters)} report(s), oldest first"))
    for c in chapters:
        print(clean("  " + c.line()))
    nodes = list(dict.fromkeys(c.node for c in chapters))
    if len(nodes) > 1:  # a part moved, or a node's report claims another's part: its key vouches for its node only
        print(clean(f"nodeqc: note: the part is in the reports of {len(nodes)} nodes ({', '.join(nodes[:6])}): a part "
                    "that moved between them, or a report that names another node's part"), file=sys.stderr)
    return 0


def cmd_compare(argv: list[str]) -> int:
    from nodeqc.report.compare import compare
    from nodeqc.report.envelope import load
    from nodeqc.report.keys import trusted_keys

    p = Parser(prog="nodeqc compare", description="Compare two reports of a node, check by check and GPU by "
               "GPU; exit 1 when NEW regressed, 0 when it did not.")
    p.add_argument("old", help="the earlier .report.json")
    p.add_argument("new", help="the later .report.json")
    p.add_argument("--pubkey", metavar="PEM", action="append", help="trusted public key (repeatable)")
    p.add_argument("--unverified", action="store_true", help="compare reports that do not verify anyway "
                   "(with a warning); without it such a report is refused with exit 2")
    p.add_argument("--any-node", action="store_true", help="compare reports of two different nodes anyway (e.g. "
                   "two nodes of one SKU), with a warning; without it they are refused with exit 2")
    args = p.parse_args(argv)
    trusted = trusted_keys(args.pubkey)
    if _same_file(Path(args.old), Path(args.new)):  # "no regression" of a report against itself says nothing
        raise UsageError(f"compare: {args.old} and {args.new} are the same report: give an earlier one and a later one")
    predicates = []
    for path in (Path(args.old), Path(args.new)):
        loaded = load(path, trusted)
        # Unreadable first: --unverified does not make a directory or a FIFO a report.
        if loaded.statement is None:
            raise UsageError(f"{path}: not a readable nodeqc report: {loaded.unreadable}")
        if loaded.verified is None:
            if not args.unverified:
                raise UsageError(f"{path}: NOT VERIFIED: {loaded.problem} (--unverified compares it anyway)")
            print(clean(f"nodeqc: warning: {path}: NOT VERIFIED ({loaded.problem}); compared anyway"), file=sys.stderr)
        predicates.append(loaded.statement["predicate"])
    why = _not_comparable(*predicates, any_node=args.any_node)
    if why:
        raise UsageError(clean(why))
    result = compare(*predicates)
    print("\n".join(result.lines(args.old, args.new)))
    return 1 if result.regressed else 0


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False  # either is missing: said where it is read


def _not_comparable(old: dict[str, Any], new: dict[str, Any], any_node: bool) -> str | None:
    """Why two reports cannot be compared (None: they can): a fabric report (its verdicts are of many
    nodes' pairs), or reports of two nodes (by the archive's node key: system serial, else host
    name), whose GPUs' serials differ without any part being swapped; --any-node allows the latter."""
    from nodeqc.core.names import node_key

    for tag, pred in (("OLD", old), ("NEW", new)):
        if pred.get("kind") == "fabric":
            return f"compare: {tag} is a fabric report, not a node's: compare compares two reports of one node"
    keys = []
    for pred in (old, new):
        node = pred.get("node") if isinstance(pred.get("node"), dict) else {}
        keys.append(node_key(node.get("system_serial"), node.get("hostname")))
    if keys[0] != keys[1] and not any_node:
        return (f"compare: OLD is the report of node {keys[0]}, NEW of node {keys[1]}: compare compares two "
                "reports of one node (--any-node compares them anyway)")
    return None


EXPORT_FIELDS = ("report", "report_sha256", "node", "hostname", "finished_at", "report_verdict", "status",
                 "partial", "simulated", "profile", "check", "subject", "verdict", "code", "key", "value",
                 "unit", "message", "gpu_serial", "pci_bus_id")


def cmd_export(argv: list[str]) -> int:
    import json

    from nodeqc.archive.verified import NotVerified, read_checks
    from nodeqc.core.text import clean, csv_writer
    from nodeqc.report.answer import parts

    p = archive_parser("nodeqc export", "Write one row per report and check, for spreadsheets and pandas.")
    p.add_argument("--format", default="csv", type=str.lower, choices=("csv", "jsonl"), metavar="csv|jsonl",
                   help="csv (default) or jsonl (one JSON object a line)")
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    args = p.parse_args(argv)
    if args.output:
        check_output_file(Path(args.output), "--output")
    # A file is written whole at the end (nodeqc.core.safefile: never through a planted link).
    out = io.StringIO() if args.output else sys.stdout
    entries = query(args)
    writer = csv_writer(out, EXPORT_FIELDS) if args.format == "csv" else None
    if writer:
        writer.writeheader()
    to_terminal = out.isatty()  # a file or a pipe gets the data as it is; a terminal, escaped
    for e in entries:
        try:
            checks, gpus = read_checks(e)
        except NotVerified as error:
            print(clean(f"nodeqc: warning: NOT VERIFIED: {e.path}: {error} (not exported)"), file=sys.stderr)
            continue
        base = {"report": str(e.path), "report_sha256": e.sha256, "node": e.node, "hostname": e.hostname,
                "finished_at": e.finished_at, "report_verdict": e.verdict, "status": e.status,
                "partial": e.partial, "simulated": e.simulated, "profile": e.profile}
        known = parts(gpus, [])  # a GPU subject's serial and bus id, as `show` and the textfile name it
        for c in checks or [{}]:  # a report without results still has its row
            figure = (c.get("values") or {}).get(c.get("key") or "", {})
            part = known.get(c.get("subject"))
            gpu = part if part is not None and part.kind == "gpu" else None
            row = {**base, "check": c.get("name"), "subject": c.get("subject"), "verdict": c.get("verdict"),
                   "code": c.get("code"), "key": c.get("key"), "value": figure.get("value"),
                   "unit": figure.get("unit"), "message": c.get("message"),
                   "gpu_serial": gpu.serial if gpu else None, "pci_bus_id": gpu.bus_id if gpu else None}
            if writer:
                writer.writerow({k: clean(v) if to_terminal and isinstance(v, str) else v for k, v in row.items()})
            else:  # ASCII JSON: the data intact, and nothing a terminal would act on
                out.write(json.dumps(row) + "\n")
    if out is not sys.stdout:
        from nodeqc.core.safefile import write_atomic

        write_atomic(Path(args.output), out.getvalue().encode())
    return 0
