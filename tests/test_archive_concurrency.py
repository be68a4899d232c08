"""Many writers, many readers, one archive directory (issue 13's concurrency test; issue 17's shared
archive): writers write only report files, each reader keeps its own index (per host, in its own
cache), and whatever is listed while others write is verified content that is on disk; at the end
every reader's index agrees with the files."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, cli
from nodeqc.archive.filing import file_sha256
from nodeqc.archive.index import Archive
from nodeqc.report.envelope import verify_file
from nodeqc.report.keys import load_signer
from reports_for_tests import file_report, predicate


def _index_files(root: Path) -> list[Path]:
    return [f for f in root.rglob("*") if "sqlite" in f.name or f.name.startswith(".index")]


@pytest.mark.slow
def test_eight_runs_write_one_archive_while_history_reads_it(tmp_path):
    root = tmp_path / "archive"
    root.mkdir()
    load_signer(None)  # the user's key exists before the runs (its first creation is another test's)
    runs = [subprocess.Popen([sys.executable, "-m", "nodeqc", "--headless", "--profile", "h100", "--simulate",
                              "h100", "--only", "host", "--archive", str(root)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    listings = 0
    while any(r.poll() is None for r in runs) or listings < 2:
        h = cli("history", "--archive", str(root))
        assert h.returncode == 0 and "warning" not in h.stderr, h.stderr
        for line in h.stdout.splitlines()[1:]:
            path = Path(line.split()[-1])
            assert path.is_file() and path.name.endswith(".report.json")  # listed only once whole on disk
        listings += 1
    outputs = [r.communicate() for r in runs]
    assert all(r.returncode == 0 for r in runs), [err for _, err in outputs]
    trouble = [line for _, err in outputs for line in err.splitlines()
               if line.startswith(("nodeqc: warning: index", "nodeqc: warning: archive", "nodeqc: warning: no index"))
               or any(word in line for word in ("Traceback", "internal error", "NOT VERIFIED"))]
    assert trouble == []
    written = {Path(out.strip().splitlines()[-1]) for out, _ in outputs}
    on_disk = set(root.rglob("*.report.json"))
    assert len(written) == 8 and written == on_disk  # none lost, none overwritten
    trusted = Archive(root).trusted
    for path in on_disk:
        verify_file(path, trusted)
    archive = Archive(root)
    assert {e.path: e.sha256 for e in archive.reports()} == {p: file_sha256(p) for p in on_disk}
    assert archive.skipped() == []
    assert len(cli("history", "--archive", str(root)).stdout.splitlines()) == 9
    assert _index_files(root) == []  # the archive holds only what the runs wrote


# ---------------------------------------------------------------------- a fleet on a shared file system


WRITERS, NODES_EACH, READERS = 16, 16, 3


def _write_nodes(root: str, config: str, first: int) -> None:
    """One host's runs: for each node, its journal then its signed report (as the runner files them)."""
    os.environ["XDG_CONFIG_HOME"] = config
    signer = load_signer(None)
    for n in range(first, first + NODES_EACH):
        serial = f"NODE-{n:04d}"
        pred = predicate(serial, "FAIL" if n % 7 == 0 else "PASS", f"2026-11-{1 + n % 28:02d}T08:00:00Z")
        directory = Path(root) / serial
        directory.mkdir(parents=True, exist_ok=True)
        journal = directory / "run.journal.jsonl"
        journal.write_text('{"type":"run_started"}\n')
        pred["journal"] = {"file": journal.name, "sha256": hashlib.sha256(journal.read_bytes()).hexdigest()}
        file_report(Path(root), pred, signer, name="run.report.json")


def _read_while_written(root: str, config: str, cache: str, host: str, stop_after: float, out) -> None:
    """A reader on its own host: lists the archive again and again while the writers write."""
    import socket

    os.environ.update(XDG_CONFIG_HOME=config, XDG_CACHE_HOME=cache)
    socket.gethostname = lambda: host  # type: ignore[assignment]
    seen, problems, rounds = 0, [], 0
    deadline = time.monotonic() + stop_after
    while time.monotonic() < deadline:
        archive = Archive(root, warn=problems.append)
        for e in archive.reports():
            if file_sha256(e.path) != e.sha256:
                problems.append(f"{e.path}: listed with a digest that is not the file's")
        problems += [f"{s.path}: {s.reason}" for s in archive.skipped()]
        seen = max(seen, len(archive.reports()))
        archive.close()
        rounds += 1
    out.put((host, seen, rounds, problems, str(Archive(root).index_path)))


@pytest.mark.slow
def test_a_fleet_writes_one_shared_archive_while_readers_index_it(tmp_path):
    root, config = tmp_path / "shared", tmp_path / "config"
    root.mkdir()
    os.environ["XDG_CONFIG_HOME"] = str(config)
    load_signer(None)  # one fleet key, made before the fleet starts
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    readers = [ctx.Process(target=_read_while_written, args=(str(root), str(config), str(tmp_path / f"cache{i}"),
                                                            f"reader{i}", 6.0, out)) for i in range(READERS)]
    writers = [ctx.Process(target=_write_nodes, args=(str(root), str(config), w * NODES_EACH)) for w in range(WRITERS)]
    for p in readers + writers:
        p.start()
    for p in writers:
        p.join(120)
        assert p.exitcode == 0
    results = [out.get(timeout=120) for _ in readers]
    for p in readers:
        p.join(10)
    reports = set(root.rglob("*.report.json"))
    assert len(reports) == WRITERS * NODES_EACH
    index_paths = set()
    for host, _seen, rounds, problems, index_path in results:
        assert problems == [] and rounds >= 2, (host, problems)
        index_paths.add(index_path)
    assert len(index_paths) == READERS  # one index per reader host, none shared
    assert all(not p.startswith(str(root)) for p in index_paths)
    assert _index_files(root) == []  # no SQLite file in the shared directory
    for i in range(READERS):  # each reader's own index, brought up to date, agrees with the files
        os.environ["XDG_CACHE_HOME"] = str(tmp_path / f"cache{i}")
        archive = Archive(root)
        assert {e.path: e.sha256 for e in archive.reports()} == {p: file_sha256(p) for p in reports}


def test_each_host_has_its_own_index_of_a_shared_archive(tmp_path, monkeypatch):
    import socket

    root = tmp_path / "shared"
    file_report(root, predicate("NODE-1"))
    monkeypatch.setattr(socket, "gethostname", lambda: "node001")
    first = Archive(root).index_path
    monkeypatch.setattr(socket, "gethostname", lambda: "node002")
    second = Archive(root).index_path
    assert first != second and first.parent == second.parent
    assert not str(first).startswith(str(root))
    assert len(Archive(root).reports()) == 1 and second.is_file() and not first.exists()
