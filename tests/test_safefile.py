"""Every output is created safely (issue 13 item 9): in a directory another user can write to, a link
planted at a name nodeqc will write (the final name, or a temporary one it could predict) must not
redirect the write; a file on disk is whole or absent."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from nodeqc.core.errors import UsageError
from nodeqc.core.safefile import OutputError, create_new, write_atomic
from nodeqc.report.envelope import sign, statement, write_envelope
from nodeqc.report.journal import Journal
from nodeqc.report.keys import default_key_path, load_signer, public_path

VICTIM_TEXT = b"another user's file: must stay as it is\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file elsewhere that a planted link points to."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = elsewhere / "victim"
    path.write_bytes(VICTIM_TEXT)
    return path


def plant(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    return link


def test_write_atomic_replaces_a_planted_link_and_never_writes_through_it(tmp_path, victim):
    out = plant(tmp_path / "out.json", victim)
    write_atomic(out, b"mine\n")
    assert victim.read_bytes() == VICTIM_TEXT
    assert not out.is_symlink() and out.read_bytes() == b"mine\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "out.json"]  # no temporary left


def test_write_atomic_leaves_no_partial_file_when_the_write_fails(tmp_path, monkeypatch):
    out = tmp_path / "out.json"
    out.write_bytes(b"old and whole\n")

    def refuse(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", refuse)
    with pytest.raises(OutputError, match=f"no space left on {tmp_path}"):
        write_atomic(out, b"new")
    assert out.read_bytes() == b"old and whole\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_create_new_refuses_an_existing_name_even_a_dangling_link(tmp_path):
    plant(tmp_path / "series.csv.gz", tmp_path / "not-there")
    with pytest.raises(OutputError, match="already there"):
        create_new(tmp_path / "series.csv.gz")
    assert not (tmp_path / "not-there").exists()


def test_the_report_is_not_written_through_a_link_at_its_old_temporary_name(tmp_path, victim):
    """The report used to go to NAME.tmp, opened with open("w"): a link planted there took the
    signed report (and could have swapped in another)."""
    from nodeqc.report.keys import create_key
    from test_report import predicate

    signer = create_key(tmp_path / "k.pem")
    report = tmp_path / "r.report.json"
    plant(tmp_path / "r.report.json.tmp", victim)
    write_envelope(report, sign(statement(predicate()), signer))
    assert victim.read_bytes() == VICTIM_TEXT
    assert json.loads(report.read_text())["payloadType"]


def test_the_journal_is_not_appended_through_a_link(tmp_path, victim):
    link = plant(tmp_path / "run.journal.jsonl", victim)
    with pytest.raises(OSError):
        Journal(link).append({"type": "run_started"})
    assert victim.read_bytes() == VICTIM_TEXT


def test_the_telemetry_file_is_not_written_through_a_link(tmp_path, victim):
    from nodeqc.backends.base import Clock
    from nodeqc.work.sampler import TelemetrySampler
    from test_telemetry import Scripted, gpus

    link = plant(tmp_path / "run.telemetry.csv.gz", victim)
    sampler = TelemetrySampler(Scripted(), gpus(), Clock(), 0.0, hz=50, series_path=link)
    with pytest.raises(OutputError, match="already there"):
        sampler.start()
    assert victim.read_bytes() == VICTIM_TEXT


def test_the_public_key_is_not_written_through_a_link(victim):
    pub = plant(public_path(default_key_path()), victim)
    os.chmod(pub.parent, 0o700)
    load_signer(None)
    assert victim.read_bytes() == VICTIM_TEXT
    assert not pub.is_symlink() and b"PUBLIC KEY" in pub.read_bytes()


def test_the_prometheus_textfile_is_not_written_through_a_link_at_its_temporary_name(tmp_path, victim):
    from nodeqc.report.prometheus import write_textfile

    plant(tmp_path / f".node.prom.{os.getpid()}.tmp", victim)  # the name it used to use
    write_textfile(tmp_path / "node.prom", "nodeqc_up 1\n")
    assert victim.read_bytes() == VICTIM_TEXT
    assert (tmp_path / "node.prom").read_text() == "nodeqc_up 1\n"


def test_a_capture_replaces_a_planted_link(tmp_path, victim):
    from nodeqc.run.capture import write_capture

    out = plant(tmp_path / "capture.json", victim)
    write_capture(out, {"devices": []})
    assert victim.read_bytes() == VICTIM_TEXT
    assert json.loads(out.read_text()) == {"devices": []}


def test_export_output_replaces_a_planted_link(tmp_path, victim, run_cli):
    archive = tmp_path / "archive"
    archive.mkdir()
    out = plant(tmp_path / "rows.csv", victim)
    proc = run_cli("export", "--archive", str(archive), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_bytes() == VICTIM_TEXT
    assert not out.is_symlink() and out.read_text().startswith("report,")


def test_an_output_that_is_a_fifo_a_socket_or_a_device_is_refused_and_left_as_it_is(tmp_path, run_cli):
    """Run as root, `export --output /dev/full` replaced the device node with a regular file (exit 0),
    as a FIFO a reader waited on was; /dev/null would have gone the same way."""
    import socket

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    targets = [(fifo, "a FIFO"), (tmp_path / "sock", "a socket")]
    try:  # a device node of our own, where this machine lets us make one (root, CAP_MKNOD)
        os.mknod(tmp_path / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        targets.append((tmp_path / "full", "a character device"))
    except (PermissionError, OSError):
        pass
    try:
        for target, kind in targets:
            with pytest.raises(OutputError, match=f"is {kind}, not a file"):
                write_atomic(target, b"x")
            assert not stat.S_ISREG(os.lstat(target).st_mode)
        archive = tmp_path / "archive"
        archive.mkdir()
        proc = run_cli("export", "--archive", str(archive), "--output", str(fifo))
        assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == f"nodeqc: {fifo}: is a FIFO, not a " \
            "file: nodeqc writes a regular file in its place only"
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not list(tmp_path.glob(".fifo.*"))
    finally:
        sock.close()


def test_concurrent_writers_leave_one_whole_file(tmp_path):
    out = tmp_path / "out.bin"
    blobs = [bytes([n]) * 200_000 for n in range(8)]
    threads = [threading.Thread(target=write_atomic, args=(out, b)) for b in blobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out.read_bytes() in blobs
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_output_errors_are_usage_errors_the_cli_prints_in_one_line():
    assert issubclass(OutputError, UsageError)


# ---------------------------------------------------------------------- issue 25: the last two writers


def test_fleet_csv_and_html_are_not_written_through_links_at_their_names_or_old_temporaries(tmp_path, victim,
                                                                                          run_cli):
    """`fleet --csv/--html` wrote a fixed .NAME.tmp with open("w"): a link planted there made the
    writer (root, on a shared archive host) overwrite the file it pointed to."""
    import random
    from datetime import datetime, timezone

    from reports_for_tests import file_report
    from test_fleet import fleet_predicate

    root = tmp_path / "archive"
    file_report(root, fleet_predicate(1, random.Random(1), datetime(2026, 11, 1, tzinfo=timezone.utc)))
    out = tmp_path / "out"
    out.mkdir()
    csv_out, html_out = plant(out / "fleet.csv", victim), out / "fleet.html"
    plant(out / ".fleet.csv.tmp", victim)
    plant(out / ".fleet.html.tmp", victim)
    proc = run_cli("fleet", "--archive", str(root), "--csv", str(csv_out), "--html", str(html_out))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_bytes() == VICTIM_TEXT
    assert not csv_out.is_symlink() and csv_out.read_text().startswith("node,hostname,")
    assert html_out.read_text().startswith("<!DOCTYPE html>") and "SN00001" in html_out.read_text()


def test_baseline_create_is_not_written_through_links_at_its_name_or_old_temporary(tmp_path, victim, run_cli):
    """`baseline create` wrote .NAME.PID.tmp with write_text: a PID is guessed in a few tries."""
    out = tmp_path / "golden.toml"
    for pid in range(os.getpid(), os.getpid() + 200):  # the child's PID is near ours: plant them all
        plant(tmp_path / f".golden.toml.{pid}.tmp", victim)
    proc = run_cli("baseline", "create", str(out), "--simulate", "h100")
    assert proc.returncode == 0, proc.stderr
    assert victim.read_bytes() == VICTIM_TEXT
    assert not out.is_symlink() and out.read_text().startswith("# nodeqc golden baseline")
    # --force over a planted link replaces the link, never the file it points to.
    out.unlink()
    plant(out, victim)
    forced = run_cli("baseline", "create", str(out), "--simulate", "h100", "--force")
    assert forced.returncode == 0, forced.stderr
    assert victim.read_bytes() == VICTIM_TEXT and not out.is_symlink()


def test_claim_takes_a_free_name_once_and_never_one_a_link_holds(tmp_path, victim):
    from nodeqc.core.safefile import claim

    assert claim(tmp_path / "a.journal.jsonl") is True
    assert claim(tmp_path / "a.journal.jsonl") is False
    assert claim(plant(tmp_path / "b.journal.jsonl", victim)) is False
    assert claim(plant(tmp_path / "c.journal.jsonl", tmp_path / "nowhere")) is False
    assert not (tmp_path / "nowhere").exists() and victim.read_bytes() == VICTIM_TEXT


def test_link_new_makes_a_file_whole_once_and_the_first_one_stays(tmp_path, victim):
    from nodeqc.core.safefile import link_new

    target = tmp_path / "secret"
    assert link_new(target, b"first", 0o600) is True
    assert link_new(target, b"second", 0o600) is False
    assert target.read_bytes() == b"first" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert link_new(plant(tmp_path / "planted", victim), b"mine") is False  # a link is "already there"
    assert victim.read_bytes() == VICTIM_TEXT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "planted", "secret"]  # no temporaries


# ---------------------------------------------------------------------- no other write path

import ast  # noqa: E402
import re  # noqa: E402

import nodeqc  # noqa: E402

PACKAGE = Path(nodeqc.__file__).parent
# Every way Python code can create or change a file by name. nodeqc.core.safefile is the one place for them.
WRITE_PATTERNS = {
    "open to write": re.compile(r"""(?<![\w.])open\([^)]*?['"]\w*[wax+]\w*['"]"""),
    "Path.write_text/write_bytes": re.compile(r"\.write_(text|bytes)\("),
    "Path.touch": re.compile(r"\.touch\("),
    "os.open to write": re.compile(r"os\.open\([^)]*(O_CREAT|O_WRONLY|O_RDWR|O_APPEND|O_TRUNC|NEW_FILE_FLAGS)"),
    "os.fdopen to write": re.compile(r"""fdopen\([^)]*['"]\w*[wax+]"""),
    "gzip/bz2/lzma to write": re.compile(r"""(gzip|bz2|lzma)\.open\([^)]*['"]\w*[wax]|GzipFile\("""),
    "shutil copy/move": re.compile(r"shutil\.(copy\w*|move)\("),
    "rename/replace/link": re.compile(r"os\.(rename|renames|replace|link|symlink)\(|\.(rename|symlink_to|hardlink_to)\("
                                      r"|\w\.replace\(\w+\)"),
    "a named temporary file": re.compile(r"mkstemp\(|NamedTemporaryFile\("),
    "SQLite database": re.compile(r"sqlite3\.connect\("),
}
# What must stay, and why (file, pattern name): short, and each entry a reason.
ALLOWED = {
    # The simulated node's sysfs: files in the private directory mkdtemp made for it (mode 0700).
    ("backends/sim/platform.py", "Path.write_text/write_bytes"),
    ("backends/sim/platform.py", "rename/replace/link"),
    # A worker's log: mkstemp (O_EXCL, an unguessable name), then that same file opened by its
    # worker to append, never created there.
    ("work/workers.py", "a named temporary file"),
    ("work/workers.py", "os.open to write"),
    # The job manifest kubectl reads: NamedTemporaryFile is mkstemp (O_EXCL, unguessable name).
    ("fabric/kubernetes.py", "a named temporary file"),
    # The per-user index and figure cache: SQLite databases in the user's own cache directory.
    ("archive/index.py", "SQLite database"),
    ("archive/fleet.py", "SQLite database"),
}


def _write_sites() -> set[tuple[str, str, int, str]]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "core/safefile.py":
            continue
        source = path.read_text(encoding="utf-8")
        # Calls only, one logical line each (a call over several lines is joined), comments and
        # docstrings left out: what runs, not what is said.
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            text = " ".join(ast.unparse(node).split())
            if "os.devnull" in text:  # stdout or a child's output to /dev/null
                continue
            for what, pattern in WRITE_PATTERNS.items():
                if pattern.search(text) and (rel, what) not in ALLOWED:
                    found.add((rel, what, node.lineno, text[:120]))
    return found


def test_every_file_is_written_through_safefile():
    """A planted link made root overwrite another user's file twice (fleet's .NAME.tmp, baseline's
    .NAME.PID.tmp), each a write that did not go through nodeqc.core.safefile. Any new one fails here."""
    assert sorted(_write_sites()) == []


def test_the_write_grep_finds_what_it_must():
    """The patterns catch the writes that were there (so the test above is not vacuous)."""
    samples = ['open(tmp, "w", encoding="utf-8", newline="")', "tmp.write_text(text, encoding='utf-8')",
               "os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)",
               "os.open(p, NEW_FILE_FLAGS, 420)", "os.fdopen(fd, 'wb')", "os.replace(tmp, out)", "tmp.replace(path)",
               "shutil.copyfile(a, b)", "tempfile.mkstemp(dir=d)", "gzip.open(p, 'wt')", "open(p, mode='ab')"]
    for sample in samples:
        assert any(p.search(sample) for p in WRITE_PATTERNS.values()), sample
    for harmless in ["open(p, 'rb')", "text.replace('a', 'b')", "os.open(p, os.O_RDONLY | os.O_NOFOLLOW)",
                     "hw.mgmt.open()"]:
        assert not any(p.search(harmless) for p in WRITE_PATTERNS.values()), harmless


# ---------------------------------------------------------------------- evidence and other inputs


def test_evidence_is_read_as_the_file_itself_never_through_a_link_nor_a_fifo(tmp_path):
    """A report's journal and telemetry are opened with O_NOFOLLOW as regular files: a link beside
    the report to a file with the signed bytes is not that evidence, and a FIFO cannot hang verify."""
    import hashlib

    from nodeqc.report.envelope import VerificationError, Verified, check_evidence

    real = tmp_path / "elsewhere.jsonl"
    real.write_bytes(b"journal")
    digest = hashlib.sha256(b"journal").hexdigest()
    plant(tmp_path / "r.journal.jsonl", real)
    with pytest.raises(VerificationError, match=r"^journal r\.journal\.jsonl is a symbolic link"):
        check_evidence(Verified({"predicate": {"journal": {"file": "r.journal.jsonl", "sha256": digest}}}, "k", "t"),
                       tmp_path)
    os.mkfifo(tmp_path / "r.telemetry.csv.gz")
    done: list[str] = []

    def verify() -> None:
        try:
            check_evidence(Verified({"predicate": {"telemetry": {"series": {"file": "r.telemetry.csv.gz",
                                                                            "sha256": digest}}}}, "k", "t"), tmp_path)
        except VerificationError as e:
            done.append(str(e))

    worker = threading.Thread(target=verify, daemon=True)
    worker.start()
    worker.join(10)
    assert done == ["telemetry r.telemetry.csv.gz is not a regular file"]


def test_read_bounded_refuses_a_fifo_a_device_and_a_file_over_its_limit(tmp_path):
    from nodeqc.core.safefile import NotAFile, read_bounded

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotAFile, match=r"^not a regular file \(a FIFO\)$"):
        read_bounded(tmp_path / "fifo", 100)
    with pytest.raises(NotAFile, match=r"^not a regular file \(a character device\)$"):
        read_bounded(Path("/dev/zero"), 100)
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(NotAFile, match=r"^file of 101 bytes, more than any such file \(100 bytes\)$"):
        read_bounded(tmp_path / "big", 100)
    assert read_bounded(tmp_path / "big", 101) == b"x" * 101
    link = plant(tmp_path / "link", tmp_path / "big")
    assert read_bounded(link, 101) == b"x" * 101
    with pytest.raises(OSError):
        read_bounded(link, 101, follow=False)
