"""Input that parses but is wrong gets one line naming the field and exit 2, before any work (issue
13 items 12-14): nan and infinity in profiles, [run] settings and --inject values; scenario files
that are valid TOML but not a node; durations, limits and output files."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import pytest

from conftest import cli
from nodeqc.backends.sim.faults import parse_fault
from nodeqc.backends.sim.scenario import load_scenario
from nodeqc.cli.common import duration
from nodeqc.core.errors import UsageError
from nodeqc.spec.profile import load_profile


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ------------------------------------------------------------------ nan and infinity (item 12)

def _refused(tmp_path, table, line, named):
    """A profile extending h100 with `line` in [table] (none: at the top) is refused, naming the field."""
    section = f"[{table}]\n" if table else ""
    path = write(tmp_path, "mine.toml", f'extends = "h100"\ndescription = "x"\n{section}{line}\n')
    with pytest.raises(UsageError, match=rf"mine.toml: {named}"):
        load_profile(str(path))


@pytest.mark.parametrize("table,line,named", [
    ("gpu", "max_temp_c = nan", r"\[gpu\] max_temp_c: expected a finite number, got nan"),
    ("gpu", "max_temp_c = inf", r"\[gpu\] max_temp_c: expected a finite number, got inf"),
    ("gpu", "min_bf16_tflops = nan", r"\[gpu\] min_bf16_tflops: expected a finite number"),
    ("gpu", "min_hbm_gbps = { fail = nan, warn = 3000 }", r"\[gpu\] min_hbm_gbps: fail: expected a finite number"),
    ("gpu", "max_temp_c = { fail = 85, warn = nan }", r"\[gpu\] max_temp_c: warn: expected a finite number"),
    ("gpu", "memtest_fraction = nan", r"\[gpu\] memtest_fraction: expected a finite number"),
    ("run", "sample_hz = nan", r"\[run\] sample_hz: expected a finite number"),
    ("run", "burn_in_s = inf", r"\[run\] burn_in_s: expected a finite number"),
    ("run", "stall_timeout_s = -inf", r"\[run\] stall_timeout_s: expected a finite number"),
    ("nic", "min_tcp_fraction = nan", r"\[nic\] min_tcp_fraction: expected a finite number"),
])
def test_nan_and_infinity_in_a_profile_are_refused_with_the_field_named(tmp_path, table, line, named):
    _refused(tmp_path, table, line, named)


@pytest.mark.parametrize("table,line,named", [
    # quick_burn_s = 1e18 was taken: the run burnt on for ever and said nothing.
    ("run", "quick_burn_s = 1e18", r"\[run\] quick_burn_s: expected at most 2\.592e\+06, got 1e\+18"),
    ("run", "burn_s = 2592001", r"\[run\] burn_s: expected at most"),
    ("run", "power_s = 1e12", r"\[run\] power_s: expected at most"),
    ("run", "quick_power_s = 1e12", r"\[run\] quick_power_s: expected at most"),
    ("run", "pulse_s = 1e12", r"\[run\] pulse_s: expected at most"),
    ("run", "quick_pulse_s = 1e12", r"\[run\] quick_pulse_s: expected at most"),
    ("run", "stall_timeout_s = 1e12", r"\[run\] stall_timeout_s: expected at most"),
    ("run", "startup_timeout_s = 1e12", r"\[run\] startup_timeout_s: expected at most"),
    ("nic", "traffic_s = 86401", r"\[nic\] traffic_s: expected at most 86400"),  # iperf3's longest test
    ("nic", "quick_traffic_s = 1e9", r"\[nic\] quick_traffic_s: expected at most 86400"),
])
def test_a_profiles_lengths_are_bounded(tmp_path, table, line, named):
    _refused(tmp_path, table, line, named)
    key = line.split()[0]
    fine = 60 if key == "stall_timeout_s" else 86400  # a stall limit must not exceed the start-up one (180 s)
    ok = write(tmp_path, "ok.toml", f'extends = "h100"\ndescription = "x"\n[{table}]\n{key} = {fine}\n')
    assert load_profile(str(ok)).get(table, key) == fine


@pytest.mark.parametrize("table,line,named", [
    # The 2026-11-29 notes: a dtype listed twice burned twice and said nothing; a NIC pattern, a model.
    ("gpu", 'dtypes = ["fp16", "bf16", "fp16"]', r'\[gpu\] dtypes: "fp16" appears twice'),
    ("nic", 'match = ["ib*", "ib*"]', r'\[nic\] match: "ib\*" appears twice'),
])
def test_a_list_that_names_one_thing_twice_is_refused(tmp_path, table, line, named):
    _refused(tmp_path, table, line, named)


@pytest.mark.parametrize("table,line,named", [
    # The 2026-11-29 fuzzing: each was taken, and a check then did less than it said.
    ("host", "stress_s = 1e15", r"\[host\] stress_s: expected at most 2\.592e\+06"),  # a real node's run never ended
    ("run", "memtest_retention_s = 0", r"\[run\] memtest_retention_s: expected at least 1"),  # bit fade passed unrun
    ("gpu", "nvlink_links = 0", r"\[gpu\] nvlink_links: expected at least 1"),  # NVLink unjudged on 18 links
    ("", 'baseline = ""', r"baseline: an empty path"),  # no baseline, and nothing said
    ("host", 'fio_scratch = ""', r"\[host\] fio_scratch: an empty path"),  # host.nvme gone, nothing said
    ("host", 'fio_targets = [""]', r"\[host\] fio_targets: an empty path"),  # a drive "failed"
    ("fleet", "min_fleet = 1000000000", r"\[fleet\] min_fleet: expected at most 100000"),  # outliers never judged
])
def test_a_setting_that_would_turn_a_check_s_work_off_in_silence_is_refused(tmp_path, table, line, named):
    _refused(tmp_path, table, line, named)


def test_a_chain_of_profiles_deeper_than_any_is_one_line(tmp_path):
    """About a thousand files, each extending the next, ended in a RecursionError."""
    for i in range(40):
        write(tmp_path, f"p{i}.toml", f'description = "p{i}"\nextends = "{f"p{i + 1}.toml" if i < 39 else "h100"}"\n')
    with pytest.raises(UsageError, match=r"extends: more than 32 profiles deep"):
        load_profile(str(tmp_path / "p0.toml"))


def test_a_scenario_whose_gpus_share_a_serial_is_refused(tmp_path):
    """Two GPUs of one serial would be one part to the archive and the repair history."""
    text = GOOD_SCENARIO.replace("count = 1", 'count = 2\nserials = ["S1", "S1"]')
    path = write(tmp_path, "node.toml", text)
    with pytest.raises(UsageError, match=rf'{path}: \[gpus\] serials: "S1" appears twice'):
        load_scenario(str(path))


def test_nan_at_the_top_level_of_a_profile_is_refused(tmp_path):
    path = write(tmp_path, "mine.toml", 'extends = "h100"\ndescription = "x"\nwarn_band = nan\n')
    with pytest.raises(UsageError, match="warn_band: expected a finite number, got nan"):
        load_profile(str(path))


def test_a_nan_ceiling_no_longer_passes_a_hot_gpu(tmp_path):
    """The reproduction: `max_temp_c = nan` let a 90 C GPU pass (every comparison with nan is false)."""
    path = write(tmp_path, "mine.toml", 'extends = "h100"\ndescription = "x"\n[gpu]\nmax_temp_c = nan\n')
    p = cli("--headless", "--profile", str(path), "--simulate", "h100", "--inject", "gpu0:temp=90", "--quick")
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        f"nodeqc: {path}: [gpu] max_temp_c: expected a finite number, got nan"]


@pytest.mark.parametrize("fault", ["gpu0:temp=nan", "gpu0:temp=inf", "gpu0:slow=nan", "gpu0:hbm_bw=NaN",
                                   "gpu0:p2p_bw=nan", "gpu0:power=inf", "gpu0:power=-inf", "gpu0:slow=+nan"])
def test_nan_and_infinity_in_inject_values_are_refused(fault):
    with pytest.raises(UsageError, match=re.escape(f"--inject {fault}: expected a") + "( finite)? number"):
        parse_fault(fault)


@pytest.mark.parametrize("peer", ["10.0.0.2:\u00b2", "10.0.0.2:\u0668\u0660", "eth0=10.0.0.2:5\u00b2"])
def test_a_nic_peers_port_is_ascii_digits(peer):
    """A superscript digit passed str.isdigit() and broke int(): an internal error; an Arabic-Indic 80 was port 80."""
    from nodeqc.spec.peers import parse_peer
    with pytest.raises(UsageError, match="expected 1-65535"):
        parse_peer(peer)


@pytest.mark.parametrize("fault", ["gpu\u0660:lost", "nic\u0661:down", "gpu\uff13:temp=90"])
def test_an_inject_target_index_is_ascii_digits(fault):
    """`gpu٠:lost` (an Arabic-Indic 0) acted on gpu0: regex \\d takes every script's digits."""
    with pytest.raises(UsageError, match="expected TARGET:FAULT"):
        parse_fault(fault)


# ------------------------------------------------------------------ scenario files (item 13)

GOOD_SCENARIO = '''description = "one GPU"
[host]
cores = 8
memory_gib = 64
[gpus]
model = "h100-sxm5"
count = 1
'''


@pytest.mark.parametrize("extra,named", [
    ('[[nics]]\ndriver = "mlx5_core"\n', r"\[nics.0\] name: missing"),
    ('[nics]\nname = "eth0"\n', r"\[\[nics\]\]: expected an array of tables"),
    ('nics = "eth0"\n', r"\[\[nics\]\]: expected an array of tables"),
    ('[[nics]]\nname = "eth0"\n[[nics]]\nname = "eth0"\n', r"\[\[nics\]\] name: 'eth0' appears 2 times"),
    # The 2026-11-29 fuzzing: a shared RDMA device left host health unread; a virtual one ended in an internal error.
    ('[[nics]]\nname = "ib0"\nib_device = "mlx5_0"\n[[nics]]\nname = "ib1"\nib_device = "mlx5_0"\n',
     r"\[\[nics\]\] ib_device: 'mlx5_0' appears 2 times; each RDMA device is one NIC's"),
    ('[[nics]]\nname = "eth0"\nvirtual = true\nib_device = "mlx5_0"\n',
     r"\[\[nics\]\] 'eth0': a virtual NIC \(virtio_net\) has no RDMA device"),
    ('[[gpus]]\nmodel = "h100-sxm5"\n', None),  # [gpus] already given: TOML refuses it
    ('time_scale = nan\n', r"time_scale: expected a finite number, got nan"),
    # Slower than real time the watchdog took a healthy worker for hung (2026-11-29 fuzzing).
    ('time_scale = 0.1\n', r"time_scale: expected at least 1, got 0.1"),
    ('seed = 1\nhostname = 3\n', r"hostname: expected a string, got 3"),
])
def test_scenarios_that_parse_but_are_wrong_are_refused_with_file_table_and_key(tmp_path, extra, named):
    head, _, rest = GOOD_SCENARIO.partition("[host]")
    text = (extra + GOOD_SCENARIO) if extra.startswith(("time_scale", "seed", "nics =")) else GOOD_SCENARIO + extra
    path = write(tmp_path, "node.toml", text)
    with pytest.raises(UsageError, match=rf"{path}: {named}" if named else rf"{path}: invalid TOML"):
        load_scenario(str(path))


@pytest.mark.parametrize("old,new,named", [
    ("memory_gib = 64", "memory_gib = inf", r"\[host\] memory_gib: expected a finite number, got inf"),
    ("memory_gib = 64", "memory_gib = nan", r"\[host\] memory_gib: expected a finite number, got nan"),
    ("memory_gib = 64", "memory_gib = 1e300", r"\[host\] memory_gib: expected at most"),
    ('[gpus]\nmodel = "h100-sxm5"\ncount = 1\n', '[[gpus]]\nmodel = "h100-sxm5"\n', r"\[gpus\]: expected a table, got a list"),
])
def test_scenario_values_that_are_not_numbers_of_a_node(tmp_path, old, new, named):
    path = write(tmp_path, "node.toml", GOOD_SCENARIO.replace(old, new))
    with pytest.raises(UsageError, match=rf"{path}: {named}"):
        load_scenario(str(path))


NICS = "".join(f'[[nics]]\nname = "eth{k}"\n' for k in range(65))


@pytest.mark.parametrize("old,new,named", [
    # Sizes past what one Linux host can be: a million sockets built a million EDAC directories
    # and held the run (and SIGTERM) for minutes.
    ("cores = 8", "cores = 8\nsockets = 1000000", r"\[host\] sockets: expected at most 32, got 1000000"),
    ("cores = 8", "cores = 9000", r"\[host\] cores: expected at most 8192"),
    ("cores = 8", "cores = 8\nthreads = 100000", r"\[host\] threads: expected at most 8192"),
    ("cores = 8", "cores = 8\nnuma_nodes = 5000", r"\[host\] numa_nodes: expected at most 1024"),
    ("count = 1\n", "count = 1\n" + NICS, r"\[\[nics\]\]: 65 NICs; a node has at most 64"),
    ("count = 1\n", 'count = 1\n[[nics]]\nname = "eth0"\nspeed_mbps = 10000000000\n', r"\[nics.0\] speed_mbps: expected at most"),
    ("count = 1\n", 'count = 1\n[[nics]]\nname = "eth0"\nmtu = 1000000\n', r"\[nics.0\] mtu: expected at most 65536"),
    # Names and addresses become paths of the twin's sysfs tree, and are parsed as addresses there.
    ("count = 1\n", 'count = 1\n[[nics]]\nname = "../../../../tmp/x"\n', r"\[\[nics\]\] name: .* is not a device name"),
    ("count = 1\n", 'count = 1\n[[nics]]\nname = "eth0"\nib_device = ".."\n', r"\[\[nics\]\] ib_device: .* is not a device name"),
    ("count = 1\n", 'count = 1\n[[nics]]\nname = "a-sixteen-chars!"\n', r"\[\[nics\]\] name: .* is not a device name"),
    ("count = 1\n", 'count = 1\nbus_ids = ["gpu0"]\n', r'\[gpus\] bus_ids: expected a PCI address like "0000:1b:00.0", got "gpu0"'),
    ("count = 1\n", 'count = 2\nbus_ids = ["0000:18:00.0", "0000:18:00.0"]\n', r'\[gpus\] bus_ids: "0000:18:00.0" appears twice'),
    ("count = 1\n", 'count = 1\n[[nics]]\nname = "eth0"\nbus_id = "18:00.0"\n', r"\[nics.0\] bus_id: expected a PCI address"),
    ("count = 1\n", 'count = 1\nbus_ids = ["0000:18:00.0"]\n[[nics]]\nname = "eth0"\nbus_id = "0000:18:00.0"\n',
     r"PCI address 0000:18:00.0 is 2 devices'"),
    ("count = 1\n", 'count = 1\nbus_ids = ["0000:a0:00.0"]\n[[nics]]\nname = "eth0"\n', r"PCI address 0000:a0:00.0 is 2 devices'"),
])
def test_a_scenario_is_a_node_that_could_be(tmp_path, old, new, named):
    path = write(tmp_path, "node.toml", GOOD_SCENARIO.replace(old, new))
    with pytest.raises(UsageError, match=rf"{path}: {named}"):
        load_scenario(str(path))


@pytest.mark.parametrize("gpus,nics", [
    # 64 GPUs on every fourth bus of domain 0 and a NIC above them all: no bus was left for the
    # NIC's root port, and building the tree raised StopIteration.
    ([f"0000:{4 * k + 3:02x}:00.0" for k in range(64)], ['bus_id = "0000:ff:01.0"']),
    (None, [""] * 64),  # the default addresses of 64 GPUs and 64 NICs: 0x10 + 0x10 * k ran past bus ff
])
def test_the_largest_scenarios_build_with_every_device_at_its_own_address(tmp_path, gpus, nics):
    from nodeqc.backends.sim.node import SimNode
    from nodeqc.backends.sim.platform import make_tree, remove_tree
    text = GOOD_SCENARIO.replace("count = 1\n", "count = 64\n" + (f"bus_ids = {gpus}\n".replace("'", '"') if gpus else ""))
    text += "".join(f'[[nics]]\nname = "eth{k}"\n{extra}\n' for k, extra in enumerate(nics))
    node = SimNode(load_scenario(str(write(tmp_path, "node.toml", text))), [])
    root = make_tree(node)
    try:
        devices = {p.name for p in (root / "sys/bus/pci/devices").iterdir()}
        addresses = {node.scenario.bus_id(k) for k in range(64)} | {node.scenario.nic_bus_id(k) for k in range(len(nics))}
        assert len(addresses) == 64 + len(nics) and addresses <= devices
        assert all((root / "sys/bus/pci/devices" / a).resolve().is_dir() for a in addresses)
    finally:
        remove_tree(root)


def test_a_bad_scenario_is_one_line_from_the_command_line(tmp_path):
    path = write(tmp_path, "node.toml", GOOD_SCENARIO + '[nics]\nname = "eth0"\n')
    p = cli("--headless", "--profile", "h100", "--simulate", str(path), "--quick")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "internal error" not in p.stderr
    assert "[[nics]]: expected an array of tables" in p.stderr


# ------------------------------------------------------------------ strict parsing (item 14)

@pytest.mark.parametrize("text,seconds", [("90s", 90), ("15m", 900), ("1h30m", 5400), ("2h", 7200),
                                          ("1h30m15s", 5415), ("1d", 86400), ("1.5h", 5400), (" 8H ", 28800)])
def test_durations_that_say_their_units(text, seconds):
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["1h30", "90", "30m1h", "1h 30m", "h", "1x", "-1h", "0s", "1e3s", "nan", "infh",
                                  "31d", "", "1hh", "1h-30m", "\u0661h", "\uff11h"])  # Arabic-Indic, fullwidth 1
def test_durations_without_a_unit_for_every_number_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected a duration"):
        duration(text)


@pytest.mark.parametrize("text,said", [
    ("1h30", "expected a duration like 90s, 15m, 1h30m, 2h"),
    ("-1h", "expected a duration above zero, got '-1h'"),
])
def test_bad_burn_in_is_one_line_saying_what_is_accepted(text, said):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", "--burn-in", text)
    assert p.returncode == 2 and said in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("limit", ["0", "-3", "x"])
def test_history_limit_must_be_a_positive_number(limit, tmp_path):
    p = cli("history", "--archive", str(tmp_path), "--limit", limit)
    assert p.returncode == 2 and f"--limit: expected a whole number above zero, got '{limit}'" in p.stderr


@pytest.mark.parametrize("shot,said", [("shot.txt", "expected a .png"), ("no/such/dir/shot.png", "no such directory"),
                                        (".", "is a directory")])
def test_a_screenshot_that_cannot_be_saved_is_refused_before_the_run(tmp_path, shot, said):
    started = time.monotonic()
    p = cli("gui", "--simulate", "hgx-h100", "--profile", "hgx-h100", "--start", "--screenshot", shot,
            cwd=tmp_path, env={"QT_QPA_PLATFORM": "offscreen"})
    assert p.returncode == 2 and said in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert time.monotonic() - started < 20  # it used to run the whole qualification first
    assert not list(tmp_path.glob("**/*.report.json"))


@pytest.mark.parametrize("args,said", [
    (["--sample-hz", "nan"], "--sample-hz: expected a finite number above zero"),
    (["--sample-hz", "-2"], "--sample-hz: expected a finite number above zero"),
])
def test_numbers_on_the_command_line_are_finite(args, said):
    p = cli("--headless", "--profile", "h100", "--simulate", "h100", *args)
    assert p.returncode == 2 and said in p.stderr


@pytest.mark.parametrize("args, said", [
    (["--seconds", "nan"], "--seconds: expected a number from 1 to 600, got 'nan'"),
    # The 2026-11-29 fuzzing: a sleep of 1e300 s overflowed; a capture of 1e300 s never ended.
    (["--hz", "1e-300"], "--hz: expected a number from 0.1 to 10, got '1e-300'"),
    (["--hz", "50"], "--hz: expected a number from 0.1 to 10, got '50'"),  # ten minutes of it past a replay's 16 MiB
    (["--seconds", "1e300"], "--seconds: expected a number from 1 to 600, got '1e300'"),
])
def test_capture_numbers_are_checked(tmp_path, args, said):
    p = cli("capture", str(tmp_path / "c.json"), *args)
    assert p.returncode == 2 and said in p.stderr, p.stderr


def test_export_output_in_a_missing_directory_is_refused_before_reading_the_archive(tmp_path):
    p = cli("export", "--archive", str(tmp_path), "--output", str(tmp_path / "no" / "rows.csv"))
    assert p.returncode == 2 and "no such directory" in p.stderr


# ------------------------------------------------------------------ files that are not files (issue 25)

@pytest.mark.parametrize("option, made", [("--replay", "fifo"), ("--replay", "/dev/zero"), ("--replay", "big"),
                                          ("--simulate", "big")])
def test_a_capture_or_scenario_that_is_no_file_of_its_kind_is_one_line(tmp_path, option, made):
    """Every reader bounded: a FIFO hung the reader, /dev/zero or a huge file filled the memory."""
    import os

    if made == "fifo":
        path = tmp_path / "capture.json"
        os.mkfifo(path)
    elif made == "big":
        path = tmp_path / "big.toml"
        path.write_bytes(b"#" * (17 << 20))
    else:
        path = Path(made)
    start = time.monotonic()
    p = cli("--headless", option, str(path), "--quick", "--out", str(tmp_path / "out"), timeout=60)
    assert time.monotonic() - start < 50
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert str(path) in p.stderr and ("not a regular file" in p.stderr or "bytes" in p.stderr), p.stderr


def test_a_host_list_file_that_is_no_file_is_one_line(tmp_path):
    p = cli("fabric", "--hosts", "@/dev/zero", "--launch", "ssh {host}", timeout=60)
    assert p.returncode == 2 and p.stderr.strip() == "nodeqc: --hosts @/dev/zero: not a regular file (a character device): not a host list"


@pytest.mark.parametrize("args, message", [
    (["fabric", "--simulate", "4", "--out", ""], "--out: an empty path; give a directory"),
    (["export", "--output", ""], "--output/-o: an empty path; give a file"),
    (["--headless", "--simulate", "h100", "--profile", "h100", "--quick", "--out", " "], "--out: an empty path"),
])
def test_an_empty_path_is_refused_not_taken_for_the_default(args, message):
    """An unset variable (--out "$DIR"): `fabric --out ""` wrote to the archive, `export --output ""` to stdout."""
    p = cli(*args)
    assert p.returncode == 2 and p.stderr.startswith(f"nodeqc: {message}") and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1


RUN = ["--headless", "--simulate", "h100", "--profile", "h100", "--quick"]


@pytest.mark.parametrize("args, message", [
    # Each was taken for no option at all (the 2026-11-29 audit): `--simulate ""` ran on the real
    # GPUs, `--profile ""` chose one, `--only ""` ran everything, `--repair ""` recorded no repair.
    (RUN + ["--simulate", ""], "--simulate: an empty value; give NAME|PATH"),
    (RUN + ["--profile", " "], "--profile: an empty value; give NAME|PATH"),
    (RUN + ["--only", ""], "--only: an empty value; give CHECKS"),
    (RUN + ["--skip", "stress", "--skip", ""], "--skip: an empty value; give CHECKS"),
    (RUN + ["--operator", ""], "--operator: an empty value; give NAME"),
    (RUN + ["--ticket", ""], "--ticket: an empty value; give ID"),
    (RUN + ["--repair", ""], "--repair: an empty value; give TEXT"),
    (["history", "--node", ""], "--node: an empty value; give SERIAL"),
    (["fabric", "--simulate", "4", "--tests", ""], "--tests: an empty value"),
    (["fabric", "worker", "--pairs", ""], "--pairs: an empty value"),
])
def test_an_empty_value_is_refused_not_taken_for_none(args, message):
    p = cli(*args)
    assert p.returncode == 2 and p.stderr.startswith(f"nodeqc: {message}") and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1


def test_a_file_given_where_a_directory_is_wanted_is_named_so(tmp_path):
    """`--out FILE` said "File exists", `--archive FILE` "no such directory", of a file that is there."""
    f = tmp_path / "a-file"
    f.write_text("x")
    p = cli("fabric", "--simulate", "4", "--out", str(f))
    assert p.returncode == 2 and p.stderr.strip() == f"nodeqc: {f}: not a directory (a file of that name is there)"
    p = cli("history", "--archive", str(f))
    assert p.returncode == 2 and p.stderr.strip() == f"nodeqc: --archive {f}: not a directory"


def test_a_name_past_name_max_is_said_or_shortened_never_an_internal_error(tmp_path):
    """The 2026-11-29 fuzzing: `--out` with a 300-character name, and a node whose host name is 1,000
    characters (a capture allows 1,024: the node's to say), ended in "File name too long", an
    internal error. The first is one line; the second's report name is shortened, a digest of the
    whole kept, so two long names stay apart."""
    from nodeqc.archive.filing import SAFE_NAME_MAX, safe_name

    p = cli("--headless", "--simulate", "h100", "--profile", "h100", "--quick", "--only", "inventory",
            "--out", str(tmp_path / ("a" * 300)))
    assert p.returncode == 2 and p.stderr.strip().endswith(": cannot write reports there: File name too long"), p.stderr
    assert "internal error" not in p.stderr
    long_a, long_b = "h" * 1000, "h" * 999 + "i"
    assert len(safe_name(long_a)) == SAFE_NAME_MAX and safe_name(long_a) != safe_name(long_b)
    assert safe_name(long_a).startswith("h" * 100) and safe_name("gpu-node-07.example.com") == "gpu-node-07.example.com"
    scenario = (Path(__file__).parents[1] / "nodeqc/backends/sim/scenarios/h100.toml").read_text()
    (tmp_path / "long.toml").write_text(re.sub(r'(?m)^hostname = ".*"$', f'hostname = "{long_a}"', scenario))
    p = cli("--headless", "--simulate", str(tmp_path / "long.toml"), "--profile", "h100", "--quick", "--only", "inventory",
            "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    [report] = (tmp_path / "out").glob("*.report.json")
    assert report.name.startswith(safe_name(long_a) + "-")


def test_a_profile_s_words_reach_the_terminal_escaped(tmp_path):
    """`nodeqc profiles PATH` printed a description's ESC and BEL as they were (2026-11-29 fuzzing)."""
    path = write(tmp_path, "mine.toml", 'extends = "h100"\ndescription = "x\\u001b[31mRED\\u0007"\n')
    p = cli("profiles", str(path))
    assert p.returncode == 0 and "\x1b" not in p.stdout and "\x07" not in p.stdout and "RED" in p.stdout, p.stdout
