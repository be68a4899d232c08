"""The sampler: runs in the background, survives a lost GPU, keeps memory bounded, and writes a time
series that can be read back, also after a kill."""

import csv
import gzip
import io
import os
import time
from pathlib import Path

import pytest

from nodeqc.backends.base import Clock, GpuCounters, GpuInfo, GpuManagement, GpuSample, XidEvent, REASON_BITS
from nodeqc.core.errors import GpuLostError
from nodeqc.work.sampler import TelemetrySampler
from nodeqc.work.telemetry import MAX_EVENTS, SERIES_COLUMNS, GpuTelemetry, read_series


class Scripted(GpuManagement):
    """Two GPUs; gpu1 is lost after `lose_after` samples; one XID on gpu0."""

    def __init__(self, lose_after=5):
        self.calls = {0: 0, 1: 0}
        self.lose_after = lose_after
        self.xid_sent = False

    def open(self): pass
    def driver_version(self): return "1"
    def cuda_version(self): return "1"
    def gpus(self): return []

    def sample(self, index):
        self.calls[index] += 1
        if index == 1 and self.calls[1] > self.lose_after:
            raise GpuLostError(1)
        return GpuSample(temp_c=40 + self.calls[index], util_pct=100, power_w=300, power_limit_w=400,
                         reasons=REASON_BITS["sw_power_cap"], pcie_gen=4, pcie_width=16)

    def counters(self, index):
        if index == 1 and self.calls[1] > self.lose_after:
            raise GpuLostError(1)
        return GpuCounters(ecc_sbe_volatile=self.calls[index])

    def wait_xids(self, timeout_s, clock):
        time.sleep(0.01)
        if not self.xid_sent:
            self.xid_sent = True
            return [XidEvent(0, 13, clock.now())]
        return []


def gpus():
    return [GpuInfo(index=i, name="x", uuid=f"u{i}", bus_id=f"b{i}") for i in range(2)]


def test_sampler_runs_and_writes_a_readable_series(tmp_path):
    mgmt = Scripted()
    path = tmp_path / "t.csv.gz"
    seen = []
    sampler = TelemetrySampler(mgmt, gpus(), Clock(), 0.0, hz=50, series_path=path,
                               on_sample=lambda t, r: seen.append(r))
    sampler.start()
    deadline = time.monotonic() + 30  # a loaded machine slows the sampler's rounds, not what they read
    while len(seen) < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    summary = sampler.stop()
    g0, g1 = summary.gpus[0], summary.gpus[1]
    assert g0.samples >= 10 and g0.lost_at_s is None
    assert g1.samples == 5 and g1.lost_at_s is not None
    assert g1.counters_end == g1.counters_start  # lost before the next re-read: the last good reading
    assert [e["code"] for e in g0.xids.kept] == [13]
    assert g0.stats["temp_c"].max == 40 + g0.samples
    assert any(r[1] is None for r in seen)  # the lost GPU shows as None to listeners
    rows = read_series(path)
    assert rows == list(csv.reader(io.StringIO(gzip.decompress(path.read_bytes()).decode())))
    assert tuple(rows[0]) == SERIES_COLUMNS
    assert len(rows) - 1 == summary.series_rows == g0.samples + g1.samples
    assert summary.to_dict()["series"]["sha256"] == summary.series_sha256


def test_a_killed_run_keeps_its_flushed_series(tmp_path, monkeypatch):
    import nodeqc.work.sampler as t

    monkeypatch.setattr(t, "FLUSH_EVERY_S", 0.0)
    path = tmp_path / "t.csv.gz"
    sampler = TelemetrySampler(Scripted(), gpus(), Clock(), 0.0, hz=50, series_path=path)
    sampler.start()
    time.sleep(0.3)
    # Read while the writer is still open, as after a SIGKILL: no gzip trailer yet.
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(path.read_bytes())
    sampler.stop()
    rows = read_series(cut)
    assert tuple(rows[0]) == SERIES_COLUMNS and len(rows) > 5
    assert all(len(r) == len(SERIES_COLUMNS) for r in rows)


def test_events_are_capped_so_memory_stays_flat():
    tel = GpuTelemetry(0)
    for n in range(5 * MAX_EVENTS):
        tel.add(n, GpuSample(util_pct=100, reasons=REASON_BITS["hw_slowdown"] if n % 2 else 0))
    assert len(tel.throttle_onsets.kept) == MAX_EVENTS
    assert tel.throttle_onsets.dropped == 5 * MAX_EVENTS // 2 - MAX_EVENTS
    assert tel.samples == 5 * MAX_EVENTS


def test_loaded_and_idle_pcie_readings_are_kept_apart():
    tel = GpuTelemetry(0)
    tel.add(0, GpuSample(util_pct=0, pcie_gen=1, pcie_width=16))
    tel.add(1, GpuSample(util_pct=99, pcie_gen=4, pcie_width=16))
    tel.add(2, GpuSample(util_pct=100, pcie_gen=5, pcie_width=16))
    tel.add(3, GpuSample(util_pct=10, pcie_gen=2, pcie_width=16))
    assert (tel.pcie_loaded_gen.min, tel.pcie_loaded_gen.max) == (4, 5)
    assert (tel.pcie_idle_gen, tel.loaded_samples, tel.loaded_s) == (2, 2, 2.0)


# ---------------------------------------------------------------------- a hostile series file (issue 25)


def _bomb(path, gigabytes: float = 3.0) -> int:
    """A telemetry file whose gzip members hold `gigabytes` of well-formed rows: 16 MiB of rows
    compressed once, that member repeated (RFC 1952 allows any number). Made in a moment."""
    header = gzip.compress(",".join(SERIES_COLUMNS).encode() + b"\n")
    row = b"0.000,0," + b",".join([b"40"] * (len(SERIES_COLUMNS) - 2)) + b"\n"
    member = gzip.compress(row * ((16 << 20) // len(row)), compresslevel=9)
    repeats = int(gigabytes * 1024 / 16)
    with open(path, "wb") as f:
        f.write(header)
        for _ in range(repeats):
            f.write(member)
    return repeats * 16 << 20


def test_show_of_a_decompression_bomb_is_one_line_and_quick(tmp_path):
    """`show X.telemetry.csv.gz` of a 16 MB gzip holding 3 GB ran out of memory: refused, naming
    the file, without parsing a row (the timeout fails a regression instead of hanging)."""
    from conftest import cli

    bomb = tmp_path / "r.telemetry.csv.gz"
    held = _bomb(bomb)
    assert bomb.stat().st_size < 16 << 20 and held > 3 * 10**9
    started = time.monotonic()
    show = cli("show", str(bomb), timeout=90)
    assert show.returncode == 2 and show.stdout == ""
    assert show.stderr.splitlines() == [f"nodeqc: {bomb}: holds more than 1024 MiB once decompressed, more than "
                                        "any run's telemetry (a decompression bomb?): not read"]
    assert time.monotonic() - started < 60


def test_read_series_stops_at_its_limit_and_takes_a_file_at_it(tmp_path):
    from nodeqc.core.errors import UsageError

    path = tmp_path / "t.csv.gz"
    text = b"t_s,gpu,temp_c\n" + b"0.5,0,41\n" * 1000
    path.write_bytes(gzip.compress(text[:5000]) + gzip.compress(text[5000:]))
    assert len(read_series(path, limit=len(text))) == 1001
    with pytest.raises(UsageError, match=rf"^{path}: holds more than 0 MiB once decompressed"):
        read_series(path, limit=len(text) - 1)


def test_a_series_that_is_a_fifo_a_device_or_one_endless_row_is_refused(tmp_path):
    from nodeqc.core.errors import UsageError
    from nodeqc.work.telemetry import describe_series

    fifo = tmp_path / "f.telemetry.csv.gz"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r"not a regular file \(a FIFO\): not a telemetry file$"):
        describe_series(fifo)  # at once: no writer is waited for
    with pytest.raises(UsageError, match=r"^/dev/zero: not a regular file \(a character device\)"):
        read_series(Path("/dev/zero"))
    endless = tmp_path / "e.telemetry.csv.gz"
    endless.write_bytes(gzip.compress(b"t_s,gpu," + b"9" * (1 << 20)))
    with pytest.raises(UsageError, match=r"a row of more than 65536 bytes: not a nodeqc telemetry file$"):
        describe_series(endless)


def test_describe_series_counts_every_row_and_lists_only_gpu_indices(tmp_path):
    from nodeqc.work.telemetry import describe_series

    path = tmp_path / "r.telemetry.csv.gz"
    rows = [",".join(SERIES_COLUMNS)]
    blank = [""] * (len(SERIES_COLUMNS) - 4)
    rows += [",".join([f"{t}.0", "0", "40", "700"] + blank) for t in range(3)]
    rows += [",".join(["x", "gpu0", "1", "2"] + blank), ",".join(["1.5", "1", "55", "650"] + blank), "short,row"]
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    text = describe_series(path)
    lines = text.splitlines()
    assert lines[1] == "5 rows, t = 0.0 s to 2.0 s"
    assert [ln.split(":")[0].strip() for ln in lines[2:]] == ["gpu0", "gpu1"]
    assert "gpu0: 3 samples" in lines[2] and "cut short" not in text


def test_each_gpus_reading_is_timed_when_it_came_back_not_when_its_round_began():
    """GPUs are read one after another: a reading timed at its round's start could show a state
    that began after that time (a pulse period's brake placed before its period began)."""

    class SlowFirst(Scripted):
        def sample(self, index):
            if index == 0:
                time.sleep(0.3)  # the host stalls reading gpu0
                return super().sample(0)
            return GpuSample(temp_c=40, power_w=300, reasons=REASON_BITS["power_brake"])

    clock = Clock()
    sampler = TelemetrySampler(SlowFirst(), gpus(), clock, clock.now(), hz=1, series_path=None)
    sampler.sample_once()
    onset = sampler.watch[1].throttle_onsets.kept[0]
    assert "power_brake" in onset["reasons"] and onset["t_s"] >= 0.3, onset
