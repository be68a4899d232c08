"""A run killed with SIGKILL keeps a telemetry file every gzip reader takes, up to its last flush, and
`nodeqc show` reads it (issue 13 item 16)."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT, cli
from nodeqc.work.sampler import FLUSH_EVERY_S
from nodeqc.work.telemetry import SERIES_COLUMNS, read_series


@pytest.mark.slow
def test_sigkill_mid_run_leaves_a_gzip_file_every_reader_takes(tmp_path):
    profile = tmp_path / "slow.toml"
    profile.write_text('description = "slow"\nextends = "h100"\n[run]\nburn_s = 3000\n')
    proc = subprocess.Popen([sys.executable, "-m", "nodeqc", "--headless", "--profile", str(profile), "--simulate",
                             "h100", "--sample-hz", "20", "--out", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 90
        series = None
        while time.monotonic() < deadline:  # a few flushes into the run
            found = list(tmp_path.glob("*.telemetry.csv.gz"))
            if found and found[0].stat().st_size > 0:
                series = found[0]
                time.sleep(3 * FLUSH_EVERY_S)
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        assert series is not None, "the run never started its telemetry"
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert not list(tmp_path.glob("*.report.json"))  # it really was killed mid-way

    text = gzip.decompress(series.read_bytes()).decode()  # Python's gzip (and so pandas) reads it whole
    lines = text.splitlines()
    assert lines[0] == ",".join(SERIES_COLUMNS) and len(lines) > 20 and text.endswith("\n")
    assert all(len(line.split(",")) == len(SERIES_COLUMNS) for line in lines)
    assert read_series(series) == [line.split(",") for line in lines]
    if shutil.which("gzip"):
        assert subprocess.run(["gzip", "-t", str(series)], capture_output=True).returncode == 0

    show = cli("show", str(series))
    assert show.returncode == 0, show.stderr
    assert f"{len(lines) - 1} rows" in show.stdout and "gpu0:" in show.stdout and "temp_c" in show.stdout


def test_show_reads_a_series_cut_mid_member_up_to_its_last_whole_row(tmp_path):
    whole = gzip.compress(b"t_s,gpu,temp_c\n0.0,0,40\n") + gzip.compress(b"0.5,0,41\n0.6,0,42\n")
    cut = tmp_path / "r.telemetry.csv.gz"
    cut.write_bytes(whole[:-12])  # the last member lost its trailer and some data
    rows = read_series(cut)
    assert rows[:2] == [["t_s", "gpu", "temp_c"], ["0.0", "0", "40"]]
    show = cli("show", str(cut))
    assert show.returncode == 0 and "cut short" in show.stdout


def test_show_of_something_that_is_not_telemetry_is_one_line(tmp_path):
    bad = tmp_path / "x.telemetry.csv.gz"
    bad.write_bytes(b"not gzip at all")
    show = cli("show", str(bad))
    assert show.returncode == 2 and show.stderr.strip() == f"nodeqc: {bad}: not a nodeqc telemetry file (no header t_s,gpu,...)"


def test_show_of_a_telemetry_file_with_odd_gpu_numbers_and_values_reads_them_as_numbers_or_not_at_all(tmp_path):
    """A GPU column of "²" passed str.isdigit() and broke int() (an internal error); "000" was listed
    apart from "0"; "1_000", "nan" and "inf" were read as figures."""
    import gzip

    from nodeqc.work.telemetry import describe_series

    series = tmp_path / "x.telemetry.csv.gz"
    rows = ["t_s,gpu,temp_c,power_w,sm_clock_mhz,util_pct", "0.0,0,40,100,1980,100", "0.5,000,41,110,1980,100",
            "1.0,\u00b2,99,999,1,1", "1.5,0,nan,1_000,inf,-inf"]
    series.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    text = describe_series(series)
    assert "4 rows" in text and "gpu0: 3 samples, temp_c 40..41 C, power_w 100..110 W, sm_clock_mhz 1980..1980 MHz" in text
    assert "gpu000" not in text and "\u00b2" not in text


def test_show_says_what_is_at_a_telemetry_or_journal_name_that_is_no_file(tmp_path):
    """A FIFO or a directory by a telemetry file's name was "no such telemetry file"; a missing journal
    was "no such report"."""
    fifo = tmp_path / "f.telemetry.csv.gz"
    os.mkfifo(fifo)
    (tmp_path / "d.telemetry.csv.gz").mkdir()
    for path, said in ((fifo, "not a regular file (a FIFO): not a telemetry file"),
                       (tmp_path / "d.telemetry.csv.gz", "not a regular file (a directory): not a telemetry file"),
                       (tmp_path / "none.journal.jsonl", "no such journal")):
        p = cli("show", str(path))
        assert p.returncode == 2 and p.stderr.strip() == f"nodeqc: {path}: {said}"
