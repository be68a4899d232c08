"""The flow around a run, shared by the headless run and the desktop app: hardware, profile and key
from the arguments; the archive and the report a run re-tests; the run's options; and what follows
the report (the partial note, the comparison with the re-tested report, the Prometheus textfile).

The faces (nodeqc.cli.run, nodeqc.gui) call this; it imports neither.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path
from typing import Any

from nodeqc.core.errors import UsageError
from nodeqc.core.text import clean


def prepare(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """Resolve hardware, profile and key from the arguments, or raise UsageError. Shared by the
    headless run and the GUI."""
    from nodeqc.backends import hardware_for
    from nodeqc.report.keys import load_signer
    from nodeqc.spec.peers import parse_peers
    from nodeqc.spec.profile import MAX_GPU_COUNT, load_for, suggest_profile

    peers = parse_peers(getattr(args, "nic_peer", []))
    if args.gpus is not None and not 1 <= args.gpus <= MAX_GPU_COUNT:
        raise UsageError(f"--gpus {str(args.gpus)[:30]}: expected 1 to {MAX_GPU_COUNT} GPUs")
    if args.sample_hz is not None and not 0.1 <= args.sample_hz <= 50:
        raise UsageError(f"--sample-hz {args.sample_hz:g}: expected 0.1 to 50 samples per second")
    if args.out:
        ensure_writable(Path(args.out))
    simulate = args.simulate
    if simulate == "auto":
        simulate = None if _nvidia_gpu_present() else "hgx-h100"
        if simulate:
            print(f"nodeqc: no NVIDIA GPU found: running the simulated node '{simulate}'", file=sys.stderr)
    # A simulated burn-in of any length takes about a minute: time runs that much faster.
    scale = args.burn_in / 60 if getattr(args, "burn_in", None) and args.burn_in / 60 > 10 else None
    hardware = hardware_for(simulate, args.replay, args.inject, time_scale=scale)
    _check_peer_nics(peers, hardware)
    profile_ref = args.profile or "auto"
    gpus = _gpus(hardware)
    _check_gpu_selection(getattr(args, "gpu", None), gpus)
    auto = profile_ref == "auto"
    if auto:
        profile_ref = suggest_profile(gpus)
        print(f"nodeqc: profile auto: using '{profile_ref}'", file=sys.stderr)
    profile = load_for(profile_ref, gpus)
    if auto:
        profile = profile.chosen_by_auto()
    if args.gpus is not None:
        fixed = profile.get("gpu", "count")
        if profile.kind == "node" and fixed != args.gpus:
            raise UsageError(f"--gpus {args.gpus}: profile {profile.name} fixes the GPU count at {fixed}")
        profile = profile.with_gpu_count(args.gpus)
    signer = load_signer(args.key)
    return hardware, profile, signer


def _check_gpu_selection(values: list[str] | None, gpus: list[Any]) -> None:
    """--gpu must name GPUs this node has (as nodeqc numbers them), before any work."""
    from nodeqc.core.text import subjects_text
    from nodeqc.spec.selection import parse_gpu_list

    wanted = parse_gpu_list(values)
    have = {g.slot for g in gpus if g.slot is not None}
    absent = [f"gpu{i}" for i in wanted if i not in have]
    if absent:
        found = subjects_text([f"gpu{i}" for i in sorted(have)]) if have else "none"
        raise UsageError(f"--gpu: {', '.join(absent)}: no such GPU on this node (it has {found})")


def _check_peer_nics(peers: list[Any], hardware: Any) -> None:
    """A --nic-peer NIC=HOST must name a NIC this node has."""
    named = [p for p in peers if p.nic]
    if not named or hardware.nics is None:
        return
    have = [n.name for n in hardware.nics.nics()]
    for p in named:
        if p.nic not in have:
            raise UsageError(f"--nic-peer {p}: this node has no NIC {p.nic} (it has: {', '.join(have) or 'none'})")


def _nvidia_gpu_present() -> bool:
    from nodeqc.backends.nvml import NvmlBackend
    from nodeqc.core.errors import BackendUnavailable

    nvml = NvmlBackend()
    try:
        nvml.open()
        return len(nvml.gpus()) > 0
    except BackendUnavailable:
        return False
    finally:
        nvml.close()


def _gpus(hardware: Any) -> list[Any]:
    """The GPUs as the management backend finds them (none when it cannot start)."""
    from nodeqc.backends.gpus import open_gpus
    from nodeqc.core.errors import BackendUnavailable

    try:
        return open_gpus(hardware, hardware.host.info()).gpus
    except BackendUnavailable:
        return []
    finally:
        hardware.mgmt.close()


def ensure_writable(directory: Path) -> None:
    """--out: made where missing, as its help says (a destination for this run's files, unlike
    --archive, a store that must exist: a mistyped archive would file reports where nobody looks)."""
    try:  # (exists() too: a name past NAME_MAX raised "File name too long", an internal error)
        if directory.exists() and not directory.is_dir():  # was "File exists", of a file that is there
            raise UsageError(f"{directory}: not a directory (a file of that name is there)")
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise UsageError(f"{directory}: cannot write reports there: {e.strerror}") from None


def check_burn_in(chosen: float | None, profile: Any) -> None:
    """A burn-in too short to show drift (fewer than two windows) is refused before any work: it
    could only end as BURN_IN_SHORT, hours of checks later. `chosen` is --burn-in's seconds, else
    the profile's [run] burn_in_s applies (0: none)."""
    from nodeqc.checks.burnin import BURN_IN_MIN_S, BURN_IN_MIN_WINDOWS, BURN_IN_WINDOW_MIN_S

    seconds = float(profile.get("run", "burn_in_s", 0) if chosen is None else chosen)
    if 0 < seconds < BURN_IN_MIN_S:
        where = f"[run] burn_in_s = {seconds:g} in the profile" if chosen is None else f"--burn-in {seconds:g}s"
        raise UsageError(f"{where}: a burn-in shows drift from its first window to its last, "
                         f"{BURN_IN_MIN_WINDOWS} windows of at least {BURN_IN_WINDOW_MIN_S:g} s; "
                         f"give at least {BURN_IN_MIN_S / 60:g}m")


def baseline_of(path: str | None, profile: Any) -> Any:
    from nodeqc.spec.baseline import Baseline

    return Baseline.load(path, profile) if path else None


def signer_trust(signer: Any) -> dict[str, Any]:
    """The run's own signing key, as the one that must have signed the report it just wrote."""
    return {signer.keyid: (signer.public, f"this run's signing key {signer.path}")}


def open_archive(directory: str | None, simulated: bool = False) -> Any:
    """--archive, else the default archive (a simulated or replayed node's own: filing.archive_root)."""
    from nodeqc.archive.filing import chosen_archive
    from nodeqc.archive.index import Archive

    return Archive(chosen_archive(directory, simulated))


def is_simulated(args: argparse.Namespace) -> bool:
    """Whether the arguments name a simulated or replayed node (its runs' default archive is its own)."""
    return bool(getattr(args, "simulate", None) or getattr(args, "replay", None))


def retest_mismatch(predicate: dict[str, Any], node: str) -> str | None:
    """Why a verified report cannot be the one this node re-tests (None: it can): a fabric report
    (its verdicts are of many nodes' pairs, not of this node's checks), or another node's (another
    serial, else host name: the archive's key). Refused, not warned: the new signed report would
    otherwise say FIXED of another node's failures."""
    from nodeqc.core.names import node_key

    if predicate.get("kind") == "fabric":
        return "a fabric report, not a node's"
    old = predicate.get("node") if isinstance(predicate.get("node"), dict) else {}
    theirs = node_key(old.get("system_serial"), old.get("hostname"))
    if theirs != node:
        return f"the report of node {theirs}, not of this node ({node})"
    return None


def previous_report(hardware: Any, archive: Any, retest: str | None) -> tuple[Path, dict[str, Any]] | None:
    """The report this run re-tests: the one named with --retest REPORT, else this node's newest in
    the archive that ran to its end (None if there is none; an error if --retest asked for one).

    The rule for the automatic re-test (nodeqc.archive.standing): a failure stays open until a report
    that actually re-ran that check on that part judges it. An aborted or partial (--only, --skip,
    --gpu) report judged only what it ran, so the failures of the reports before it that it did not
    judge are carried forward: the re-test says what became of each of the node's open failures, each
    with the report that judged it, never "no failures" because the newest report ran too little. An
    aborted report is linked as the previous one only when the node has no report that ran to its end."""
    from nodeqc.archive.filing import safe_name
    from nodeqc.core.names import node_key
    from nodeqc.archive.verified import read_verified
    from nodeqc.report.envelope import VerificationError

    if retest:
        path = Path(retest)
        try:
            verified = read_verified(path, archive.trusted)  # read once: the digest is of what was verified
        except VerificationError as e:
            raise UsageError(f"--retest {path}: NOT VERIFIED: {e}") from None
        pred = verified.predicate
        host = hardware.host.info()
        why = retest_mismatch(pred, node_key(host.system_serial, host.hostname))
        if why:
            raise UsageError(clean(f"--retest {path}: {why}: a re-test compares a node with its own earlier report"))
        return path, {"report": path.name, "sha256": verified.sha256, "verdict": pred.get("verdict"),
                      "status": pred.get("status"), "finished_at": pred.get("finished_at")}
    host = hardware.host.info()
    node = node_key(host.system_serial, host.hostname)
    entry, carried = _newest_with_open_failures(archive, node)
    for skipped in archive.skipped():
        if skipped.path.parent.name == safe_name(node):
            print(f"nodeqc: warning: archive: NOT VERIFIED: {clean(skipped.path)}: {clean(skipped.reason)}",
                  file=sys.stderr)
    if entry is None:
        if retest is not None:
            raise UsageError(f"--retest: the archive {archive.root} holds no verified report of node {node}; "
                             "name one with --retest REPORT")
        return None
    print(clean(f"nodeqc: re-test of node {node}: previous report {entry.path} ({entry.result}, "
                 f"{entry.finished_at})"), file=sys.stderr)
    others = sorted({f["report"] for f in carried or [] if f.get("report") != entry.path.name})
    if others:
        print(clean(f"nodeqc: re-test: also open, failures judged by earlier reports the newer ones did not "
                    f"re-run: {', '.join(others)}"), file=sys.stderr)
    found = {"report": entry.path.name, "sha256": entry.sha256, "verdict": entry.verdict, "status": entry.status,
             "finished_at": entry.finished_at}
    if carried is not None:
        found["failures"] = carried
    return entry.path, found


def _newest_with_open_failures(archive: Any, node: str) -> tuple[Any, list[dict[str, Any]] | None]:
    """The node's newest report that ran to its end (else its newest), and the node's open failures
    (None where the reports could not be read again: the linked report's own are used)."""
    from nodeqc.archive.standing import open_failures, walked
    from nodeqc.archive.verified import read_by_digest
    from nodeqc.report.envelope import VerificationError

    newest = archive.latest(node)  # brings the node's directory up to date, and warns if it cannot
    if newest is None:
        return None, None
    entries = [e for e in archive.history(node)[0] if not e.fabric]
    entry = next((e for e in entries if e.status != "aborted"), newest)
    try:
        carried = open_failures([(e, read_by_digest(e.path, e.sha256)) for e in walked(entries)])
    except (OSError, VerificationError, UsageError, ValueError, KeyError):
        carried = None
    return entry, carried


def after_run(report: Path, selection: Any, previous: tuple[Path, dict[str, Any]] | None,
              textfile: Path | None, trusted: dict[str, Any] | None = None) -> None:
    """What follows the report: the partial note, the comparison with the re-tested report, the
    Prometheus textfile; each from the files as verified (the report just written by `trusted`, the
    run's own key; the re-tested one by the digest it was looked up with), never from what a file
    says after someone changed it."""
    from nodeqc.archive.verified import read_verified
    from nodeqc.report.envelope import VerificationError
    from nodeqc.report.keys import trusted_keys

    try:
        predicate = read_verified(report, trusted_keys() if trusted is None else trusted).predicate
    except VerificationError as e:
        raise UsageError(f"{report}: the report just written is NOT VERIFIED: {e}") from None
    if selection.partial:
        print(f"nodeqc: partial run ({selection.describe()}): this report is not a qualification",
              file=sys.stderr)
    if previous:
        from nodeqc.archive.verified import read_by_digest
        from nodeqc.report.compare import compare

        try:
            old = read_by_digest(previous[0], previous[1]["sha256"])
        except (VerificationError, UsageError) as e:
            print(clean(f"nodeqc: warning: previous report {previous[0]}: NOT VERIFIED: {e}; not compared"),
                  file=sys.stderr)
        else:
            for line in compare(old, predicate).lines(str(previous[0]), str(report)):
                print(line, file=sys.stderr)
    if textfile:
        from nodeqc.report.prometheus import render, write_textfile

        write_textfile(textfile, render(predicate, report))


class RunFlow:
    """The command line's choices for every run it starts (the headless run, and each run of the
    window): the same options, re-test and archive, the same notes and Prometheus textfile after
    each report. Bad arguments raise UsageError here, before any run or window."""

    def __init__(self, args: argparse.Namespace, argv: list[str]):
        from nodeqc.report.prometheus import check_path
        from nodeqc.spec.selection import Selection

        self.args = args
        self.command = ["nodeqc", *argv]
        self.selection = Selection.parse(args.only, args.skip, getattr(args, "gpu", None))
        self.textfile = Path(args.prometheus_textfile) if args.prometheus_textfile else None
        if self.textfile:
            check_path(self.textfile)
        self.archive = open_archive(args.archive, is_simulated(args))
        self.previous: tuple[Path, dict[str, Any]] | None = None  # the report the current run re-tests
        self.trusted: dict[str, Any] | None = None  # the key the current run's report must be signed with

    def prepare(self, profile_ref: str | None) -> tuple[Any, Any, Any]:
        """Fresh hardware, profile and key for one run, with this profile (name, path or 'auto')."""
        run_args = copy.copy(self.args)
        run_args.profile = profile_ref
        return prepare(run_args)

    def options(self, hardware: Any, profile: Any, signer: Any, operator: str | None, ticket: str | None,
                repair: str | None = None, retest: Path | None = None) -> Any:
        """The run's options. After a repair: `repair` (or --repair) says what was done, and the run
        re-tests `retest` (or --retest REPORT, or the node's newest report): the new report links it
        and says FIXED / STILL FAILING for each of its failures."""
        from nodeqc.run.runner import RunOptions
        from nodeqc.spec.peers import parse_peers

        a = self.args
        check_burn_in(a.burn_in, profile)
        if a.burn_in and not self.selection.includes("burnin.stability"):
            # It ran the checks without a word of the burn-in asked for, exit 0 (2026-11-29 fuzzing).
            raise UsageError("--burn-in: the selection (--only/--skip) leaves out burnin.stability, so no burn-in "
                             "would run; select it, or drop --burn-in")
        repair = repair or getattr(a, "repair", None)
        # A fresh look at the archive for each run: the window's runs are on threads of their own (an
        # index connection is its thread's), and the first run may have created the signing key.
        self.archive = open_archive(a.archive, is_simulated(a))
        self.previous = previous_report(hardware, self.archive, str(retest) if retest else a.retest)
        repair_parts = list(getattr(a, "repair_part", None) or [])
        if repair_parts and not repair:
            raise UsageError("--repair-part: names the part a --repair was of; give --repair \"WHAT WAS DONE\" too")
        if repair and self.previous is None:
            raise UsageError("--repair: there is no earlier report of this node to re-test; name it with --retest REPORT")
        self.trusted = signer_trust(signer)
        previous = self.previous[1] if self.previous else None
        prior: dict[str, int] = {}
        if previous is not None:
            # The node's open failures where the archive gave them (previous_report), else the named report's.
            previous = {**self._failures(self.previous[0]), **previous}
            prior = self._prior_repairs(hardware)
        return RunOptions(profile=profile, signer=signer, out_dir=Path(a.out) if a.out else None, quick=a.quick,
                          operator=operator, ticket=ticket, sample_hz=a.sample_hz, burn_in_s=a.burn_in,
                          command=self.command, archive=self.archive.root, selection=self.selection,
                          previous=previous, nic_peers=parse_peers(a.nic_peer), repair=repair, prior_repairs=prior,
                          repair_parts=repair_parts,
                          baseline=baseline_of(getattr(a, "baseline", None), profile), dcgm=getattr(a, "dcgm", None))

    def _failures(self, path: Path) -> dict[str, Any]:
        """The re-tested report's path and failures, for FIXED / STILL FAILING."""
        from nodeqc.report.answer import failures_of, xids_of
        from nodeqc.report.envelope import VerificationError, verify_file

        try:
            predicate = verify_file(path, self.archive.trusted).predicate
        except VerificationError as e:
            raise UsageError(f"{path}: NOT VERIFIED: {e}") from None
        return {"path": str(path), "failures": failures_of(predicate), "xids": xids_of(predicate)}

    def _prior_repairs(self, hardware: Any) -> dict[str, int]:
        from nodeqc.archive.filing import node_dir
        from nodeqc.core.names import node_key
        from nodeqc.archive.parts import prior_repairs

        host = hardware.host.info()
        node = node_key(host.system_serial, host.hostname)
        if not node_dir(node, self.archive.root).is_dir():  # no history here: leave the archive untouched
            return {}
        return prior_repairs(self.archive, node)

    def after_run(self, report: Path) -> None:
        after_run(report, self.selection, self.previous, self.textfile, trusted=self.trusted)
