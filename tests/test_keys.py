"""Signing keys that another user could read, replace or plant are refused, with what to do; the
per-user key is made in a private directory, once, however many processes start at once (issue 13
items 10 and 11)."""

from __future__ import annotations

import multiprocessing
import os
import stat
import time
from pathlib import Path

import pytest

from nodeqc.core.errors import UsageError
from nodeqc.report.keys import config_dir, create_key, default_key_path, load_signer, public_path

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
OTHER_UID = 54321


@pytest.fixture
def key(tmp_path: Path) -> Path:
    d = tmp_path / "keys"
    d.mkdir(mode=0o700)
    return create_key(d / "k.pem").path


@pytest.mark.parametrize("mode", [0o640, 0o660, 0o604, 0o620, 0o644], ids=lambda m: f"{m:04o}")
def test_a_key_others_can_read_or_write_is_refused_with_the_fix(key, mode):
    os.chmod(key, mode)
    with pytest.raises(UsageError, match=rf"\(mode {mode:04o}\); run chmod 600 {key}"):
        load_signer(key)


@needs_root
def test_a_key_owned_by_another_user_is_refused(key):
    os.chown(key, OTHER_UID, -1)
    with pytest.raises(UsageError, match=f"belongs to user id {OTHER_UID}, not to you"):
        load_signer(key)


@needs_root
def test_a_key_in_a_directory_of_another_user_is_refused(key):
    os.chown(key.parent, OTHER_UID, -1)
    with pytest.raises(UsageError, match="key directory belongs to user id"):
        load_signer(key)


def test_a_key_in_a_directory_others_can_write_is_refused(key):
    os.chmod(key.parent, 0o777)
    with pytest.raises(UsageError, match=rf"writable by other users \(mode 0777\).*; run chmod 700 {key.parent}"):
        load_signer(key)
    os.chmod(key.parent, 0o1777)  # sticky, as /tmp: nobody else can replace a file of ours there
    assert load_signer(key).path == key


def test_a_key_reached_through_a_link_is_refused(key, tmp_path):
    link = key.parent / "link.pem"
    os.symlink(key, link)
    with pytest.raises(UsageError, match="is a symbolic link"):
        load_signer(link)


def test_a_per_user_key_directory_that_is_a_link_is_refused(tmp_path):
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o700)
    create_key(planted / "signing-key.pem")  # someone else's key, waiting behind the link
    config_dir().parent.mkdir(parents=True, exist_ok=True)
    os.symlink(planted, config_dir())
    with pytest.raises(UsageError, match="key directory is a symbolic link"):
        load_signer(None)


def test_a_planted_per_user_key_in_a_world_writable_directory_is_refused(tmp_path):
    config_dir().mkdir(parents=True)
    os.chmod(config_dir(), 0o777)
    with pytest.raises(UsageError, match="run chmod 700"):
        load_signer(None)
    assert not default_key_path().exists()


def test_the_key_directory_is_private_whatever_the_umask():
    old = os.umask(0)
    try:
        signer = load_signer(None)
    finally:
        os.umask(old)
    assert stat.S_IMODE(config_dir().stat().st_mode) == 0o700
    assert stat.S_IMODE(signer.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(public_path(signer.path).stat().st_mode) == 0o644


def test_the_per_user_key_and_its_directory_are_checked_every_time():
    load_signer(None)
    os.chmod(default_key_path(), 0o640)
    with pytest.raises(UsageError, match="readable by its group"):
        load_signer(None)


# ------------------------------------------------------------------ first use, from many processes


def _first_use(start_at: float, results) -> None:
    while time.time() < start_at:  # spin, not sleep: all wake within microseconds of each other
        pass
    try:
        results.put(load_signer(None).keyid)
    except BaseException as e:  # noqa: BLE001 - the test reports what each process met
        results.put(f"ERROR {type(e).__name__}: {e}")


def test_eight_processes_creating_the_first_key_at_once_end_with_the_same_key(tmp_path, monkeypatch):
    """Nodes sharing a home directory start nodeqc together: the key appears once and every one of
    them signs with it (it used to give FileExistsError and "not a PEM private key"). Ten rounds, each
    with a fresh home: the race needs a few tries to show."""
    ctx = multiprocessing.get_context("fork")
    for attempt in range(10):
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / f"config-{attempt}"))
        results = ctx.Queue()
        start_at = time.time() + 0.3
        procs = [ctx.Process(target=_first_use, args=(start_at, results)) for _ in range(8)]
        for p in procs:
            p.start()
        answers = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(10)
        assert not [a for a in answers if a.startswith("ERROR")], (attempt, answers)
        assert len(set(answers)) == 1, (attempt, answers)
        assert load_signer(None).keyid == answers[0]
        assert sorted(p.name for p in config_dir().iterdir()) == ["signing-key.pem", "signing-key.pub.pem"]


def test_a_fifo_or_a_directory_given_as_the_signing_key_is_refused_at_once(tmp_path):
    """A FIFO hung the run for good (a blocking open); a directory ended in an internal error."""
    d = tmp_path / "keys"
    d.mkdir(mode=0o700)
    fifo = d / "k.pem"
    os.mkfifo(fifo, 0o600)
    sub = d / "sub"
    sub.mkdir(mode=0o700)
    for given in (fifo, sub):
        with pytest.raises(UsageError, match="not a regular file"):
            load_signer(given)


@pytest.mark.parametrize("made", ["fifo", "/dev/zero", "dir", "big"])
def test_a_public_key_that_is_no_file_or_far_too_large_is_one_line(tmp_path, made):
    """/dev/zero filled the memory (MemoryError), a FIFO hung `show --pubkey` for good."""
    from nodeqc.report.keys import load_public

    path = {"/dev/zero": Path("/dev/zero"), "fifo": tmp_path / "p.pem", "dir": tmp_path, "big": tmp_path / "big.pem"}[made]
    if made == "fifo":
        os.mkfifo(path)
    if made == "big":
        path.write_bytes(b"A" * (1 << 20))
    with pytest.raises(UsageError, match=f"^{path}: not a public key file: "):
        load_public(path)

