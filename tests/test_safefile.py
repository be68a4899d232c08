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

from nodeqc.errors import UsageError
from nodeqc.journal import Journal
from nodeqc.keys import default_key_path, load_signer, public_path
from nodeqc.report import sign, statement, write_envelope
from nodeqc.safefile import OutputError, create_new, write_atomic

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
    from nodeqc.keys import create_key
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
    from nodeqc.telemetry import TelemetrySampler
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
    from nodeqc.prometheus import write_textfile

    plant(tmp_path / f".node.prom.{os.getpid()}.tmp", victim)  # the name it used to use
    write_textfile(tmp_path / "node.prom", "nodeqc_up 1\n")
    assert victim.read_bytes() == VICTIM_TEXT
    assert (tmp_path / "node.prom").read_text() == "nodeqc_up 1\n"


def test_a_capture_replaces_a_planted_link(tmp_path, victim):
    from nodeqc.capture import write_capture

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
