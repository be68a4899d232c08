"""`nodeqc watch`: the node watched between qualifications. A healthy simulated node exits 0 and writes a
textfile Prometheus parses; an injected XID 79, lost GPU or uncorrectable ECC exits 1 and stays so
across further passes until a passing qualification is archived; a clearing state (a non-fatal XID,
a corrected-ECC burst) clears after CLEARING_WINDOW_S on a fake clock, a sticky one does not; a
hanging backend is cut at the deadline (exit 2, one line); bad options are one line, exit 2."""

from __future__ import annotations

import base64
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nodeqc.archive.watch import CLEARING_WINDOW_S, load_state, own_key, stamp
from nodeqc.backends import hardware_for
from nodeqc.cli.main import main
from nodeqc.report.keys import load_signer
from nodeqc.run.watch import Watcher

from reports_for_tests import file_report, predicate

NODE, HOST = "SIM-HGXH100-0001", "sim-hgx-h100"  # the simulated hgx-h100's system serial and host name


def watch(archive: Path, *args: str) -> int:
    return main(["watch", "--once", "--simulate", "hgx-h100", "--archive", str(archive), *args])


def state_of(archive: Path):
    """The node's watch state in the archive, believed by the key the watch signs it with."""
    return load_state(NODE, own_key(load_signer(None)), archive)


def metrics(path: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            out.setdefault(s.name, []).append(s)
    return out


def archive_passing_qualification(archive: Path) -> None:
    """A complete passing run of the simulated node, finished after what the watch has seen so far."""
    pred = predicate(NODE, finished_at=stamp(math.ceil(time.time()) + 1), hostname=HOST)
    pred["simulated"] = True
    file_report(archive, pred)


def test_once_on_a_healthy_simulated_node_exits_0_quickly_with_a_textfile_prometheus_parses(tmp_path, capsys):
    prom = tmp_path / "nodeqc_watch.prom"
    started = time.monotonic()
    assert watch(tmp_path, "--textfile", str(prom)) == 0
    assert time.monotonic() - started < 20  # well under Slurm's 60 s for a health check
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["nodeqc watch: healthy: 8 GPU(s)"]
    m = metrics(prom)
    assert m["nodeqc_watch_healthy"][0].value == 1 and m["nodeqc_watch_judged"][0].value == 1
    assert m["nodeqc_watch_needs_requalification"][0].value == 0 and m["nodeqc_watch_gpus"][0].value == 8
    assert m["nodeqc_watch_info"][0].labels["node"] == NODE and m["nodeqc_watch_info"][0].labels["simulated"] == "true"
    assert "nodeqc_watch_finding" not in m
    assert not list(tmp_path.glob(".*.tmp"))  # written whole, then renamed
    assert (tmp_path / NODE / "watch-state.json").is_file()


@pytest.mark.parametrize("fault, code", [("gpu3:xid=79", "XID_REBOOT"), ("gpu2:lost", "GPU_LOST"),
                                         ("gpu1:ecc_dbe=2", "ECC_DBE")])
def test_a_hardware_fault_exits_1_and_stays_until_a_qualification_passes(tmp_path, capsys, fault, code):
    prom = tmp_path / "w.prom"
    assert watch(tmp_path, "--inject", fault, "--textfile", str(prom)) == 1
    assert "needs re-qualification" in capsys.readouterr().err
    m = metrics(prom)
    assert m["nodeqc_watch_healthy"][0].value == 0 and m["nodeqc_watch_needs_requalification"][0].value == 1
    found = [s.labels for s in m["nodeqc_watch_finding"]]
    assert any(f["code"] == code and f["sticky"] == "true" and f["severity"] == "fail" for f in found), found
    # The fault is no longer there to read (the node as found later), and the state stands.
    for _ in range(2):
        assert watch(tmp_path, "--textfile", str(prom)) == 1
        assert metrics(prom)["nodeqc_watch_needs_requalification"][0].value == 1
    archive_passing_qualification(tmp_path)
    assert watch(tmp_path, "--textfile", str(prom)) == 0
    m = metrics(prom)
    assert m["nodeqc_watch_needs_requalification"][0].value == 0 and "nodeqc_watch_finding" not in m
    assert state_of(tmp_path).findings == []


class FakeClock:
    def __init__(self, t: float):
        self.t = t

    def __call__(self) -> float:
        return self.t


def watched(archive: Path, clock: FakeClock, *faults: str):
    w = Watcher(hardware_for("hgx-h100", None, list(faults), in_service=True), archive=str(archive), clock=clock)
    try:
        return w.run_pass()
    finally:
        w.close()


def fleet_problems(archive: Path) -> str:
    """The node's `problems` cell in `nodeqc fleet --csv`, as the operator's machine reads the archive."""
    import csv

    out = archive / "fleet.csv"
    assert main(["fleet", "--archive", str(archive), "--csv", str(out)]) == 0
    [row] = list(csv.DictReader(out.open()))
    return row["problems"]


def edited(path: Path, change: Any) -> bytes:
    """The signed state at `path` with its payload changed by change(payload) and its signature kept:
    what another writer of the archive can make without the node's key."""
    envelope = json.loads(path.read_text())
    payload = json.loads(base64.b64decode(envelope["payload"]))
    change(payload)
    envelope["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    return json.dumps(envelope).encode()


def test_another_writer_of_the_archive_cannot_take_away_what_the_node_found(tmp_path, capsys):
    """In a shared archive other nodes write too: one that emptied the findings and moved the
    kernel-log cursor past every line gave the node back its health (the 2026-11-28 hostile-node
    audit), in the watch and in `fleet`. The state is signed by the node's key now: an edited one is
    believed by neither, and the watch writes its own copy in its place; one put back to an older
    signed state (which no signature can show) is mended from the node's own copy, and said."""
    file_report(tmp_path, predicate(NODE, finished_at=stamp(time.time() - 3600), hostname=HOST))
    assert watch(tmp_path) == 0
    shared = tmp_path / NODE / "watch-state.json"
    healthy = shared.read_bytes()  # signed by the node: what a later writer can put back
    assert watch(tmp_path, "--inject", "gpu3:xid=79") == 1
    capsys.readouterr()
    found = sorted((f.code, f.sticky) for f in state_of(tmp_path).findings)
    assert found == [("KERNEL_XID", True), ("XID_REBOOT", True)]  # NVML's event and the kernel's line of it
    assert fleet_problems(tmp_path).startswith("needs re-qualification (watch: ")

    def forget(payload: dict) -> None:
        payload["findings"] = []
        payload["readings"]["kernel_log"]["seq"] = 10 ** 18

    shared.write_bytes(edited(shared, forget))
    problems = fleet_problems(tmp_path)
    capsys.readouterr()
    assert problems.startswith(f"watch state not believed: {shared}: not a watch state signed for node {NODE} by a "
                               "trusted key: signature does not match the content (altered)"), problems
    assert watch(tmp_path) == 1  # the Xid was not seen again: the node's own record of it stands
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("nodeqc watch: needs re-qualification: ") and "XID_REBOOT" in err[0], err
    assert err[1].startswith(f"nodeqc watch: warning: the archive's watch state was not believed: {shared}: "), err
    assert err[1].endswith("(altered); this node's own copy stands in its place"), err
    assert sorted((f.code, f.sticky) for f in state_of(tmp_path).findings) == found  # written back, signed
    assert fleet_problems(tmp_path).startswith("needs re-qualification (watch: ")
    # The healthy state of an hour ago, signed by the node, put back: the node's own copy mends it.
    shared.write_bytes(healthy)
    capsys.readouterr()
    assert watch(tmp_path) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[1].startswith("nodeqc watch: warning: the archive's watch state had lost what this node recorded; "
                             "put back from its own copy: "), err
    assert "health.xid gpu3 XID_REBOOT (first seen " in err[1] and " KERNEL_XID (first seen " in err[1]
    assert "readings" not in err[1]  # signed, the older readings can only show more growth, never hide it
    assert watch(tmp_path) == 1 and len(capsys.readouterr().err.strip().splitlines()) == 1  # agreed: nothing said
    # Deleted: the node's own copy stands whole, readings and all.
    shared.unlink()
    assert watch(tmp_path) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[1].endswith("; the readings the next pass judges growth from, and where the kernel log was read to")
    # A passing qualification after it still clears it, in both copies.
    archive_passing_qualification(tmp_path)
    time.sleep(1.1)
    assert watch(tmp_path) == 0


def test_a_node_cannot_give_another_node_back_its_validity_with_its_own_key(tmp_path, capsys):
    """The operator trusts every node's key for that node's own reports (a `.nodes` binding). A node
    that writes another's watch state, signed with its own trusted key, or that copies a state of its
    own (signed by a key trusted for any node) over the other's, is not believed: `fleet` and
    `history` say so, and the node's qualification is not given back."""
    from nodeqc.archive.watch import WatchState
    from nodeqc.report.keys import create_key, public_path, trusted_keys_dir

    file_report(tmp_path, predicate(NODE, finished_at=stamp(time.time() - 3600), hostname=HOST))
    assert watch(tmp_path, "--inject", "gpu3:xid=79") == 1
    shared = tmp_path / NODE / "watch-state.json"
    forger = create_key(tmp_path / "gpu99.pem")
    trusted_keys_dir().mkdir(parents=True)
    (trusted_keys_dir() / "gpu99.pem").write_bytes(public_path(forger.path).read_bytes())
    (trusted_keys_dir() / "gpu99.nodes").write_text("SN-99\n")
    state = state_of(tmp_path)
    state.findings = []
    shared.write_bytes(state.signed(forger))
    assert fleet_problems(tmp_path) == (f"watch state not believed: {shared}: not a watch state signed for node {NODE} "
                                        f"by a trusted key: signed by key {forger.keyid[:16]}… "
                                        f"({trusted_keys_dir() / 'gpu99.pem'}), which is bound to node(s) SN-99, not {NODE}")
    shared.write_bytes(WatchState("SN-99").signed(load_signer(None)))
    problems = fleet_problems(tmp_path)
    assert problems.startswith(f"watch state not believed: {shared}: ") and problems.endswith(
        "), it is the state of node SN-99"), problems
    capsys.readouterr()
    assert main(["history", "--archive", str(tmp_path)]) == 0
    assert f"nodeqc: {NODE}: watch state not believed: {shared}: " in capsys.readouterr().err


def test_two_users_watching_one_node_believe_each_others_state_where_its_key_is_bound_to_the_node(
        tmp_path, capsys, monkeypatch):
    """Root's Slurm health check and a user's timer watch one node, each signing with a key of its
    own. Without a binding the second does not believe the first's state, says so and starts afresh;
    with the first's key bound to the node (`.nodes`) it believes it, and the XID the first found
    stands in its pass too."""
    from nodeqc.report.keys import default_key_path, public_path, trusted_keys_dir

    assert watch(tmp_path, "--inject", "gpu3:xid=79") == 1
    shared = tmp_path / NODE / "watch-state.json"
    first, first_pub = shared.read_bytes(), public_path(default_key_path()).read_bytes()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "second-user"))
    capsys.readouterr()
    assert watch(tmp_path) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and ", which is not trusted; this node keeps no copy of its own: the watch starts afresh" \
        in err[1], err
    shared.write_bytes(first)
    trusted_keys_dir().mkdir(parents=True)
    (trusted_keys_dir() / "root.pem").write_bytes(first_pub)
    (trusted_keys_dir() / "root.nodes").write_text(f"{NODE}\n")
    assert watch(tmp_path) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nodeqc watch: needs re-qualification: ") and "XID_REBOOT" in err[0], err


def test_a_clearing_state_clears_after_its_window_and_not_before(tmp_path):
    clock = FakeClock(2_000_000_000.0)
    # An application's XID, in service: the users' work is the likelier cause (in a run's own
    # known-good work it fails): a warning, healthy still, that clears.
    first = watched(tmp_path, clock, "gpu0:xid=13")
    assert first.exit_code == 0 and not first.requalify
    [xid] = [f for f in first.standing if f.check == "health.xid"]
    assert (xid.code, xid.verdict, xid.sticky) == ("XID_WARNING", "warn", False)
    assert "XID 13" in xid.message and "users' work on this GPU is the likelier cause" in xid.message
    assert "known-good" not in xid.message
    clock.t += CLEARING_WINDOW_S - 1  # seen by health checks and scrapes for the whole window
    later = watched(tmp_path, clock)
    assert later.exit_code == 0 and any(f.code == "XID_WARNING" for f in later.standing)
    clock.t += 2
    assert watched(tmp_path, clock).exit_code == 0
    assert state_of(tmp_path).findings == []


def test_a_corrected_ecc_burst_clears_after_its_window(tmp_path):
    clock = FakeClock(2_000_000_000.0)
    assert watched(tmp_path, clock).exit_code == 0  # the first pass records the counters
    clock.t += 60
    burst = watched(tmp_path, clock, "gpu4:ecc_sbe=500")  # 500 corrected errors since the last pass
    assert burst.exit_code == 1
    assert [(f.subject, f.code, f.sticky) for f in burst.standing] == [("gpu4", "ECC_SBE", False)]
    clock.t += CLEARING_WINDOW_S / 2
    assert watched(tmp_path, clock).exit_code == 1
    clock.t += CLEARING_WINDOW_S / 2 + 1
    assert watched(tmp_path, clock).exit_code == 0


def test_a_sticky_state_does_not_clear_with_time(tmp_path):
    clock = FakeClock(2_000_000_000.0)
    assert watched(tmp_path, clock, "gpu5:row_remap_failed").exit_code == 1
    clock.t += 30 * 86400  # a month later, the fault no longer read
    later = watched(tmp_path, clock)
    assert later.exit_code == 1 and [f.code for f in later.requalify] == ["ROW_REMAP_FAILED"]


def test_a_hanging_nvml_is_cut_at_the_deadline_exit_2_in_one_line(tmp_path, capsys, monkeypatch):
    import nodeqc.backends

    release = threading.Event()

    def hanging(*args, **kwargs):
        hw = hardware_for(*args, **kwargs)
        hw.mgmt.gpus = lambda: release.wait(60) and []  # NVML that never answers
        return hw

    monkeypatch.setattr(nodeqc.backends, "hardware_for", hanging)
    prom = tmp_path / "w.prom"
    started = time.monotonic()
    try:
        assert watch(tmp_path, "--deadline", "2", "--textfile", str(prom)) == 2
    finally:
        release.set()
    assert time.monotonic() - started < 8
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["nodeqc watch: could not judge: no answer within the 2 s deadline (listing the GPUs (NVML))"]
    m = metrics(prom)
    assert m["nodeqc_watch_judged"][0].value == 0 and m["nodeqc_watch_exit_code"][0].value == 2
    assert "listing the GPUs" in m["nodeqc_watch_info"][0].labels["error"]


def test_without_a_driver_it_could_not_judge_exit_2(tmp_path, capsys):
    assert main(["watch", "--once", "--archive", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nodeqc watch: could not judge: NVML not available")


@pytest.mark.parametrize("args, says", [
    (["--once", "--interval", "5"], "--interval: a watch with --once makes one pass"),
    (["--interval", "0.5"], "--interval 0.5: expected at least 1 second"),
    (["--interval", "1e10"], "--interval 1e+10: expected at least 1 second and at most 86400 (a day)"),
    (["--deadline", "0"], "argument --deadline: expected a finite number above zero"),
    (["--deadline", "900"], "--deadline 900: expected more than 0 and at most 300 seconds"),
    (["--textfile", "/tmp/x.txt"], "--textfile /tmp/x.txt: the name must end in .prom"),
    (["--textfile", "/no/such/dir/x.prom"], "--textfile /no/such/dir/x.prom: /no/such/dir is not a writable directory"),
    (["--simulate", "auto"], "--simulate auto: a watch watches this node"),
    (["--inject", "gpu0:xid=79"], "--inject needs --simulate"),
    (["--simulate", "nosuch"], "nosuch"),
    (["--archive", "/no/such/archive"], "--archive /no/such/archive: no such directory"),
    (["--frequency", "3"], "unrecognized arguments: --frequency 3"),
    (["--once", "--simulate", "h100", "--profile", "nosuch"], "nosuch"),
])
def test_bad_options_are_one_line_and_exit_2(capsys, args, says):
    assert main(["watch", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nodeqc: ") and says in err[0], err


def test_fleet_and_history_say_why_the_watch_ended_a_qualification(tmp_path, capsys):
    import csv

    def qualification(finished: float) -> Path:
        pred = predicate(NODE, finished_at=stamp(finished), hostname=HOST)
        pred["valid_until"] = "2099-01-01T00:00:00Z"
        return file_report(tmp_path, pred)

    def fleet_row() -> dict:
        out = tmp_path / "fleet.csv"
        assert main(["fleet", "--archive", str(tmp_path), "--csv", str(out)]) == 0
        rows = list(csv.DictReader(out.open()))
        assert len(rows) == 1
        return rows[0]

    first = qualification(time.time() - 3600)
    assert fleet_row()["problems"] == "" and fleet_row()["valid_until"] == "2099-01-01T00:00:00Z"
    before = time.time()
    assert watch(tmp_path, "--inject", "gpu3:xid=79") == 1
    capsys.readouterr()
    row = fleet_row()
    assert row["problems"].startswith("needs re-qualification (watch: ") and "gpu3 XID_REBOOT since " in row["problems"]
    assert stamp(before - 1) <= row["valid_until"] <= stamp(time.time() + 1)  # ended when the XID was seen
    assert main(["history", "--archive", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert str(first) in out.out
    assert f"nodeqc: {NODE}: needs re-qualification (watch: " in out.err
    assert main(["history", "--archive", str(tmp_path), "--expired"]) == 0
    assert str(first) in capsys.readouterr().out  # its qualification ended, though valid_until is in 2099
    second = qualification(math.ceil(time.time()) + 1)  # re-qualified after the XID
    assert fleet_row()["problems"] == ""
    assert main(["history", "--archive", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert str(second) in out.out and "needs re-qualification" not in out.err
    assert main(["history", "--archive", str(tmp_path), "--expired"]) == 0
    assert capsys.readouterr().out == ""


HEALTHCHECK = Path(__file__).resolve().parent.parent / "packaging" / "slurm" / "nodeqc-healthcheck"


@pytest.mark.parametrize("rc, reason, expect", [
    (1, "", "update nodename=n1 state=drain reason=nodeqc watch: needs re-qualification: health.xid gpu3 XID_REBOOT: XID 79"),
    (2, "", "update nodename=n1 state=drain reason=nodeqc watch: could not judge: no answer within the 20 s deadline"),
    (1, "   Reason=nodeqc watch: needs attention: x [root@2026-11-27T02:00:00]",
     "update nodename=n1 state=drain reason=nodeqc watch: needs re-qualification: health.xid gpu3 XID_REBOOT: XID 79"),
    (1, "   Reason=swapped PSU, do not use [admin@2026-11-27T02:00:00]", None),  # an operator's reason stays
    (0, "   Reason=nodeqc watch: needs attention: x [root@2026-11-27T02:00:00]", "update nodename=n1 state=resume"),
    (0, "   Reason=swapped PSU, do not use [admin@2026-11-27T02:00:00]", None),  # an operator's drain stays
    (0, "   Reason=nodeqc: FAIL health.pcie_link GPU 3; /r.json [slurm@2026-11-27T02:00:00]", None),  # nodeqc-retest's
    (0, "", None),
])
def test_the_slurm_wrapper_drains_on_1_and_2_and_resumes_only_its_own_drain(tmp_path, rc, reason, expect):
    import subprocess

    said = {1: "nodeqc watch: needs re-qualification: health.xid gpu3 XID_REBOOT: XID 79",
            2: "nodeqc watch: could not judge: no answer within the 20 s deadline", 0: "nodeqc watch: healthy: 8 GPU(s)"}
    fake = tmp_path / "nodeqc"
    fake.write_text(f"#!/bin/sh\necho '{said[rc]}' >&2\nexit {rc}\n")
    log = tmp_path / "scontrol.log"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f"#!/bin/sh\nif [ \"$1\" = show ]; then printf '%s\\n' 'NodeName=n1' '{reason}'; "
                        f"else echo \"$*\" >> {log}; fi\n")
    for f in (fake, scontrol):
        f.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "NODEQC": str(fake), "SLURMD_NODENAME": "n1",
           "NODEQC_TEXTFILE": str(tmp_path / "w.prom")}
    p = subprocess.run(["sh", str(HEALTHCHECK)], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr  # slurmd registers the node (drained) rather than waiting
    calls = log.read_text().splitlines() if log.exists() else []
    assert calls == ([expect] if expect else []), calls


def test_the_systemd_units_run_a_watch_the_parser_accepts_within_their_timeout():
    import configparser
    import shlex

    from nodeqc.cli.watch import _parser

    units = Path(__file__).resolve().parent.parent / "packaging" / "systemd"
    services = sorted(units.glob("*.service"))
    assert [s.name for s in services] == ["nodeqc-watch-daemon.service", "nodeqc-watch.service"]
    for service in services:
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.optionxform = str  # systemd's keys are case-sensitive
        unit.read(service)
        argv = shlex.split(unit["Service"]["ExecStart"])
        assert argv[0].endswith("/nodeqc") and argv[1] == "watch", argv
        args = _parser().parse_args(argv[2:])
        assert args.textfile.endswith(".prom") and args.deadline
        if args.once:  # the timer's one-shot pass: its answers (1, 2) are not failures of the unit
            assert unit["Service"]["Type"] == "oneshot" and unit["Service"]["SuccessExitStatus"].split() == ["1", "2"]
            assert float(unit["Service"]["TimeoutStartSec"]) > args.deadline + 10
        else:
            assert unit["Service"]["Restart"] == "always"
    timer = configparser.ConfigParser(strict=False, interpolation=None)
    timer.optionxform = str
    timer.read(units / "nodeqc-watch.timer")
    assert timer["Timer"]["OnUnitActiveSec"] and timer["Install"]["WantedBy"] == "timers.target"


def test_kmsg_read_from_a_cursor_skips_what_an_earlier_pass_read_and_counts_what_was_overwritten(tmp_path,
                                                                                                  monkeypatch):
    from nodeqc.backends import kernel_log as kl

    path = tmp_path / "kmsg"
    path.write_text("")

    def serve(*items):
        reads = iter(items)

        def fake_read(fd, n):
            item = next(reads)
            if isinstance(item, BaseException):
                raise item
            return item
        monkeypatch.setattr(kl.os, "read", fake_read)

    # The buffer still holds 10..12; the earlier pass read up to 11: only 12 is new.
    serve(b"6,10,1,-;old\n", b"6,11,2,-;seen\n", b"6,12,3,-;new\n", BlockingIOError())
    log = kl.Kmsg(str(path), after_seq=11)
    try:
        assert [r.text for r in log.new_records()] == ["new"] and log.lost == 0 and log.last_seq == 12
    finally:
        log.close()
    # The earlier pass read up to 11, the buffer's oldest is now 20: 12..19 were overwritten unread.
    serve(b"6,20,1,-;a\n", b"6,21,2,-;b\n", BlockingIOError())
    log = kl.Kmsg(str(path), after_seq=11)
    try:
        assert [r.text for r in log.new_records()] == ["a", "b"] and log.lost == 8
    finally:
        log.close()
    # No cursor in this boot (-1): everything the buffer holds, nothing counted lost.
    serve(b"6,5,1,-;x\n", BlockingIOError())
    log = kl.Kmsg(str(path), after_seq=-1)
    try:
        assert [r.text for r in log.new_records()] == ["x"] and log.lost == 0
    finally:
        log.close()


def test_a_later_pass_reads_the_kernel_log_from_where_the_last_one_stopped(tmp_path):
    """The cursor kept in the state: the boot id and the newest sequence number read; a new boot starts over."""
    from nodeqc.run.watch import Observation, readings

    class Log:
        last_seq = 41

    obs = Observation(boot_id="boot-a", log=Log())
    cursor = readings(obs, {}, 100.0)["kernel_log"]
    assert cursor == {"boot_id": "boot-a", "seq": 41, "t": 100.0}
    Log.last_seq = None  # nothing new logged since
    assert readings(Observation(boot_id="boot-a", log=Log()), {"kernel_log": cursor}, 160.0)["kernel_log"] == \
        {"boot_id": "boot-a", "seq": 41, "t": 160.0}
    assert readings(Observation(boot_id="boot-b", log=Log()), {"kernel_log": cursor}, 220.0)["kernel_log"] == \
        {"boot_id": "boot-b", "seq": -1, "t": 220.0}


@pytest.mark.parametrize("content", ['{"nodeqc_watch": 1, "node": "x", "findings": [{"check": 1}]}', "not json",
                                     '{"nodeqc_watch": 1, "node": "x", "updated_at": 1e300}', "[]", "fifo",
                                     # readings of the wrong kind were each pass's internal error
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"gpus": "x"}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"gpus": {"S1": 5}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"gpus": {"S1": {"counters": '
                                     '{"pcie_replay": "x"}}}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"gpus": {"S1": {"counters": '
                                     '{"remap_pending": 1}}}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"gpus": {"S1": {"counters": '
                                     '{"ecc_sbe_volatile": NaN}}}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"kernel_log": []}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"kernel_log": {"seq": "x"}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"nics": {"ib0": {"ports": '
                                     '{"p1": {"symbol_error": true}}}}}}',
                                     # 2026-11-29 fuzzing: past math.isfinite (OverflowError: every later pass
                                     # could not judge), and host counters that hid new EDAC errors
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"gpus": {"S1": {"counters": '
                                     '{"ecc_sbe_volatile": 1' + "0" * 400 + '}}}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"host": {"edac": {"mc0": '
                                     '{"ce": NaN}}}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"host": {"edac": {"mc0": '
                                     '{"ce": "x"}}}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"host": {"aer": {"0000:1b:00.0": '
                                     '{"correctable": 1000000000000000000000000000000}}}}}',
                                     '{"nodeqc_watch": 1, "node": "x", "readings": {"host": {"edac_labels": {"mc0": 5}}}}'])
def test_a_state_file_that_is_not_the_watchs_is_said_and_replaced_and_fleet_says_so(tmp_path, capsys, content):
    """A state that cannot be believed (not JSON, another shape, readings of the wrong kind: each was
    once a pass's internal error), unsigned or signed by the node's own key, is said in one line by
    `fleet` and by the watch, which writes its own in its place; one it cannot read at all (a FIFO) is
    one line and exit 2, and `fleet` says so."""
    import os

    from nodeqc.archive.watch import STATE_PAYLOAD_TYPE
    from nodeqc.report.envelope import sign_payload

    state = tmp_path / NODE / "watch-state.json"
    state.parent.mkdir()
    file_report(tmp_path, predicate(NODE, hostname=HOST))
    if content == "fifo":
        os.mkfifo(state)  # would block a reader that opened it blindly
        assert watch(tmp_path) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"nodeqc: {state}: ") and "Traceback" not in err[0], err
        assert "watch state unreadable" in fleet_problems(tmp_path)
        return
    for signed in (False, True):
        state.write_bytes(json.dumps(sign_payload(STATE_PAYLOAD_TYPE, content.encode(), load_signer(None))).encode()
                          if signed else content.encode())
        problems = fleet_problems(tmp_path)
        assert problems.startswith(f"watch state not believed: {state}: not a watch state signed for node {NODE} by "
                                   "a trusted key: "), problems
        assert ("signed, but not a nodeqc watch state (" in problems) == signed, problems
        capsys.readouterr()
        assert watch(tmp_path) == 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and err[1].startswith(f"nodeqc watch: warning: the archive's watch state was not "
                                                   f"believed: {state}: "), err
        assert "Traceback" not in err[1] and "\n" not in err[1]
        assert fleet_problems(tmp_path) == "" and state_of(tmp_path).node == NODE  # its own, signed, in its place


def test_a_gpu_an_earlier_pass_saw_that_the_driver_no_longer_lists_is_lost(tmp_path):
    clock = FakeClock(2_000_000_000.0)
    assert watched(tmp_path, clock).gpus == 8
    clock.t += 60
    later = watched(tmp_path, clock, "gpu2:missing")  # on the PCI bus, not brought up by the driver
    assert later.exit_code == 1 and later.gpus == 7
    [lost] = later.requalify
    assert (lost.check, lost.subject, lost.code) == ("health.gpu_lost", "gpu2", "GPU_LOST")
    assert "is no longer listed by the driver" in lost.message


def test_the_gui_shows_the_watched_nodes_live_health_beside_its_last_qualification(tmp_path, qtbot):
    pytest.importorskip("PySide6")
    from nodeqc.gui.history import WATCH_REFRESH_S, HistoryList

    history = HistoryList()
    qtbot.addWidget(history)
    history.load(NODE, tmp_path)
    assert history.watch.text().startswith("Watch: not watched") and "no passing qualification in the archive" in history.watch.text()
    assert history._timer.isActive() and history._timer.interval() == WATCH_REFRESH_S * 1000
    pred = predicate(NODE, finished_at=stamp(time.time() - 3600), hostname=HOST)
    pred["simulated"] = True
    file_report(tmp_path, pred)
    clock = FakeClock(time.time())
    watched(tmp_path, clock, "gpu3:xid=79")
    history.load(NODE, tmp_path)
    text = history.watch.text()
    assert text.startswith(f"Watch: NEEDS RE-QUALIFICATION since {stamp(clock.t)}") and "health.xid gpu3 XID" in text
    assert f"last passing qualification {pred['finished_at']}, no longer valid" in text
    assert "#c4161c" in history.watch.styleSheet()
    # Re-qualified, then watched again: the line follows without reloading the list (the timer's refresh).
    archive_passing_qualification(tmp_path)
    history.load(NODE, tmp_path)
    clock.t = time.time() + 5
    watched(tmp_path, clock)
    history.refresh_watch()
    assert history.watch.text().startswith("Watch: healthy (last pass ") and "#1b7f2a" in history.watch.styleSheet()
    # A clearing state: needs attention, with when it clears.
    clock.t += 60
    watched(tmp_path, clock, "gpu4:ecc_sbe=500")  # 500 corrected errors since the last pass
    history.refresh_watch(now=clock.t)
    assert history.watch.text().startswith("Watch: needs attention") and f"clears {stamp(clock.t + CLEARING_WINDOW_S)}" in history.watch.text()
    # Edited by another writer of the archive to look healthy: not believed, said in the error colour.
    shared = tmp_path / NODE / "watch-state.json"
    shared.write_bytes(edited(shared, lambda payload: payload.update(findings=[])))
    history.refresh_watch(now=clock.t)
    assert history.watch.text().startswith(f"Watch: its state is not believed: {shared}: ") and \
        history.watch.text().endswith("(altered)") and "#7a0a2e" in history.watch.styleSheet()


def test_without_once_a_pass_every_interval_until_interrupted(tmp_path, capsys, monkeypatch):
    import nodeqc.cli.watch as cli_watch

    slept = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 2:
            raise KeyboardInterrupt  # Ctrl-C, or systemd stopping the service, during the third wait

    monkeypatch.setattr(cli_watch, "sleep", sleep)
    prom = tmp_path / "w.prom"
    rc = main(["watch", "--simulate", "hgx-h100", "--inject", "gpu1:ecc_dbe=1", "--interval", "5",
               "--archive", str(tmp_path), "--textfile", str(prom)])
    assert rc == 1 and slept == [5.0, 5.0]  # the last pass's answer
    assert capsys.readouterr().err.count("nodeqc watch: needs re-qualification: health.ecc gpu1 ECC_DBE") == 2
    assert metrics(prom)["nodeqc_watch_needs_requalification"][0].value == 1


@pytest.mark.parametrize("name, verdict, code, evidence, expect", [
    ("health.xid", "FAIL", "XID", {"xids": [{"code": 79, "fatal": True}]}, True),
    ("health.xid", "FAIL", "XID", {"xids": [{"code": 13, "fatal": False}]}, False),
    ("health.xid", "FAIL", "XID", {"xids": [{"code": 13, "severity": "fatal"}]}, True),
    ("health.xid", "FAIL", "XID", {}, True),  # not known to be harmless: held
    ("health.xid", "FAIL", "XID_REBOOT", {"xids": [{"code": 79, "severity": "fatal", "fatal": True}]}, True),
    ("health.xid", "FAIL", "XID_RESET_GPU", {"xids": [{"code": 48, "severity": "fatal", "fatal": True}]}, True),
    ("health.xid", "FAIL", "XID_REPEATED", {"xids": [{"code": 92, "severity": "warning", "fatal": False}] * 3}, False),
    ("host.kernel_log", "FAIL", "KERNEL_XID", {}, True),  # the log's check fails only fatal XIDs
    ("host.kernel_log", "WARN", "KERNEL_XID", {}, False),
    ("host.kernel_log", "FAIL", "KERNEL_AER", {}, True),
    ("host.kernel_log", "WARN", "KERNEL_AER", {}, False),  # a corrected error
    ("health.ecc", "FAIL", "ECC_DBE", {}, True),
    ("health.ecc", "FAIL", "ECC_SBE", {}, False),
    ("health.throttle", "FAIL", "THROTTLE_THERMAL", {}, False),
    ("health.temperature", "FAIL", "TEMP_HIGH", {}, False),
    ("health.row_remap", "FAIL", "ROW_REMAP_FAILED", {}, True),
    ("health.gpu_lost", "FAIL", "GPU_LOST", {}, True),
    ("nic.stability", "FAIL", "NIC_LINK_FLAP", {}, True),
    ("nic.link", "FAIL", "NIC_LINK_DOWN", {}, False),
    ("host.edac", "WARN", "EDAC_CE", {}, False),
    ("host.edac", "FAIL", "EDAC_UE", {}, True),
])
def test_which_findings_are_sticky(name, verdict, code, evidence, expect):
    from nodeqc.core.model import CheckResult, Verdict
    from nodeqc.run.watch import sticky

    assert sticky(CheckResult(name, "gpu0", Verdict[verdict], "m", code=code, evidence=evidence)) is expect


@pytest.mark.parametrize("part, method, step", [
    ("mgmt", "counters", "reading gpu0's counters (NVML)"),
    ("mgmt", "wait_xids", "waiting for XID events (NVML)"),
    ("platform", "counters", "reading EDAC and AER counters (sysfs)"),
    ("platform", "kernel_log", "reading the kernel log"),  # journalctl that does not return
    ("nics", "nics", "reading the NICs (sysfs)"),
])
def test_any_read_that_hangs_is_cut_at_the_deadline_and_named(tmp_path, part, method, step):
    release = threading.Event()
    hw = hardware_for("hgx-h100", None, [], in_service=True)
    setattr(getattr(hw, part), method, lambda *a, **k: release.wait(60))
    # The reads before the NICs take 0.65 s here alone; under a loaded full suite the EDAC and AER
    # read was still running at 4 s (2026-11-29), and the deadline named it instead of the hung one.
    w = Watcher(hw, archive=str(tmp_path), deadline_s=6)
    started = time.monotonic()
    try:
        result = w.run_pass()
    finally:
        release.set()
        w.close()
    assert time.monotonic() - started < 12
    assert result.exit_code == 2 and result.error == f"no answer within the 6 s deadline ({step})"
    assert w.hung and state_of(tmp_path) is None  # nothing half-read is recorded


def test_two_watches_at_once_keep_what_each_found(tmp_path):
    """A Slurm health check beside a systemd timer: each merges into the state as it is on disk when
    it writes, under the state's lock, so neither overwrites the other's finding."""
    from nodeqc.archive.watch import state_lock

    clock = FakeClock(2_000_000_000.0)
    slow = Watcher(hardware_for("hgx-h100", None, ["gpu3:xid=79"], in_service=True), archive=str(tmp_path),
                   clock=clock)
    original = slow._observe

    def observe_then_let_the_other_write(step, obs):
        result = original(step, obs)
        assert watched(tmp_path, clock, "gpu5:row_remap_failed").exit_code == 1  # the other watch, meanwhile
        return result

    slow._observe = observe_then_let_the_other_write
    try:
        assert slow.run_pass().exit_code == 1
    finally:
        slow.close()
    codes = {(f.subject, f.code) for f in state_of(tmp_path).findings}
    assert {("gpu3", "XID_REBOOT"), ("gpu5", "ROW_REMAP_FAILED")} <= codes
    with state_lock(NODE, tmp_path):  # the lock is taken and given back
        pass


def test_the_history_says_its_times_are_utc_and_which_qualification_the_watch_counts_from(qtbot):
    """2026-11-28 review: the list's times (the reports' UTC, 'Z' cut off) read as local time, and "last
    qualification" beside a newer FAIL read as if the node were qualified: it is the last that passed."""
    pytest.importorskip("PySide6")
    from nodeqc.gui.history import HistoryList

    history = HistoryList()
    qtbot.addWidget(history)
    assert history.tree.headerItem().text(0) == "Finished (UTC)"
