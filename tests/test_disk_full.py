"""A disk that fills up while the report is written (issue 13 item 15): one line naming the place,
exit 2, no partial file left, and a journal that says the report was not written. On a real full
filesystem (a small tmpfs) when root may mount one."""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli
from nodeqc.cli import main as nodeqc_cli, run as cli_run
from nodeqc.report.journal import read_journal

FREE_LEFT = 12 * 1024  # enough for the last journal records, not for the report (~26 KB for one GPU)


@pytest.fixture
def small_disk(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path, leave: int) -> None:
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    with open(directory / "filler", "wb") as f:
        try:
            f.write(b"\0" * max(0, free - leave))
        except OSError:
            pass


def test_a_full_disk_while_writing_the_report_is_one_line_and_exit_2(small_disk, monkeypatch, capsys):
    out = small_disk / "reports"

    class FillsTheDiskLate(cli_run.ProgressPrinter):
        """Fills the disk when the host checks start: the GPU work and its journal are on disk by then."""

        filled = False

        def __call__(self, event):
            if event.type == "check_started" and event.name.startswith("host.") and not self.filled:
                fill(small_disk, FREE_LEFT)
                type(self).filled = True
            super().__call__(event)

    monkeypatch.setattr(cli_run, "ProgressPrinter", FillsTheDiskLate)
    code = nodeqc_cli.main(["--headless", "--profile", "h100", "--simulate", "h100", "--quick", "--sample-hz", "8",
                            "--out", str(out)])
    captured = capsys.readouterr()
    assert FillsTheDiskLate.filled
    assert code == 2
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith(f"nodeqc: no space left on {out} (writing ") and last.endswith(".report.json)"), captured.err
    assert "internal error" not in captured.err and "Traceback" not in captured.err
    assert captured.out == ""  # no report path: there is no report
    assert not list(out.glob("*.report.json")) and not list(out.glob(".*.tmp")), list(out.iterdir())
    [journal] = out.glob("*.journal.jsonl")
    records = read_journal(journal)
    assert records[-1]["type"] == "report_not_written" and "no space left" in records[-1]["reason"]
    (small_disk / "filler").unlink()
    show = cli("show", str(journal))
    assert show.returncode == 0 and "report was NOT written (no space left on" in show.stdout


def test_a_disk_that_fills_during_the_run_stops_the_telemetry_file_not_the_sampling(small_disk, monkeypatch):
    import threading
    import time

    import nodeqc.work.sampler as sampler_module
    from nodeqc.backends.base import Clock
    from nodeqc.work.sampler import TelemetrySampler
    from nodeqc.work.telemetry import read_series
    from test_telemetry import Scripted, gpus

    crashed = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    monkeypatch.setattr(sampler_module, "FLUSH_EVERY_S", 0.0)
    path = small_disk / "run.telemetry.csv.gz"
    sampler = TelemetrySampler(Scripted(lose_after=10**9), gpus(), Clock(), 0.0, hz=50, series_path=path)
    sampler.start()
    time.sleep(0.3)
    fill(small_disk, 0)
    time.sleep(1.5)  # ~8 KB a second of one-row members: past the slack of the file's last page
    summary = sampler.stop()
    assert crashed == []
    assert "no space left on" in summary.series_error and summary.to_dict()["series"]["incomplete"]
    assert summary.gpus[0].samples > summary.series_rows // 2  # sampling went on in memory
    assert len(read_series(path)) - 1 == summary.series_rows > 0
    assert gzip.decompress(path.read_bytes()).count(b"\n") == summary.series_rows + 1  # whole members only
