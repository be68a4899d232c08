"""Host stress in a full run: every logical CPU computing known answers (a wrong answer names the
core), host memory bandwidth, local NVMe with fio (its JSON), and the NICs' optical modules with
`ethtool -m` (their own alarm and warning thresholds). Readers and parsers only; the verdicts are in
nodeqc.checks.host_stress.

A tool that is not installed is reported with what to install, never run around. fio reads a
device read-only (`--readonly`), or writes only the scratch file the profile names.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import time
from abc import ABC, abstractmethod
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeqc.core.errors import shown
from nodeqc.core.safefile import OutputError, claim
from nodeqc.core.tool_output import ToolOutputError, excerpt, figure, load_json, quoted

# The known answers: a SHA-256 chain (integer and bit-manipulation units) and a logistic-map sum
# (floating point: IEEE doubles, exact and the same on every conforming CPU; CPython neither fuses
# nor reorders them). Computed once and fixed here, so a faulty core cannot set its own reference;
# tests/test_host_stress.py recomputes them.
CPU_SEED = b"nodeqc-cpu-known-answer"
CPU_HASH_ROUNDS = 20000
CPU_HASH_ANSWER = "8a5ef801b8502c5104b9515fb536b27e43668e5c3ef24d6c3da7ebde93fd41d0"
CPU_FLOAT_STEPS = 200000
CPU_FLOAT_ANSWER = (0.9649654926657113, 118418.01654536717)
INSTALL = {"fio": "apt-get install fio (or dnf install fio)",
           "ethtool": "apt-get install ethtool (or dnf install ethtool)",
           "mlxlink": "install NVIDIA Firmware Tools (MFT, from NVIDIA's site) or mstflint (apt-get install mstflint)"}
# mstflint, the open-source MFT subset in the distributions, builds mlxlink as `mstlink`.
TOOL_NAMES = {"mlxlink": ("mlxlink", "mstlink")}
ETHTOOL_TIMEOUT_S = 30  # `ethtool -m` reads a module's EEPROM over I2C in well under a second; 30 s is a hang
MLXLINK_TIMEOUT_S = 60  # one port's module and counters; it reads registers, seconds at most


def known_answer() -> tuple[str, tuple[float, float]]:
    d = CPU_SEED
    for _ in range(CPU_HASH_ROUNDS):
        d = hashlib.sha256(d).digest()
    x, acc = 0.5, 0.0
    for _ in range(CPU_FLOAT_STEPS):
        x = 3.9 * x * (1.0 - x)
        acc += x
    return d.hex(), (x, acc)


def _cpu_worker(cpu: int, seconds: float) -> dict[str, Any]:
    """On one CPU: the known answers again and again for `seconds`; every wrong one is counted."""
    try:
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError):
        pass  # not Linux, or the CPU is not ours: the work still runs, unpinned
    end = time.monotonic() + seconds
    rounds, wrong, first = 0, 0, None
    while True:
        got = known_answer()
        rounds += 1
        if got != (CPU_HASH_ANSWER, CPU_FLOAT_ANSWER):
            wrong += 1
            first = first or {"hash": got[0], "float": list(got[1])}
        if time.monotonic() >= end:
            break
    return {"cpu": cpu, "rounds": rounds, "wrong": wrong, "first_wrong": first}


def _copy_worker(megabytes: int, repeats: int) -> float:
    """Best copy rate of one stream, GB/s counting bytes read plus written (as STREAM's copy)."""
    import numpy as np

    a = np.ones(megabytes * 2**20 // 8)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(b, a)
        dt = time.perf_counter() - t0
        best = max(best, 2 * a.nbytes / dt / 1e9)
    return best


@dataclass
class FioResult:
    target: str
    read_gbps: Any = None
    write_gbps: Any = None
    read_iops: Any = None
    read_p99_us: Any = None
    error: str | None = None
    command: list[str] = field(default_factory=list)
    unreadable: bool = False  # fio's JSON was not in its format (error says where): not a measurement
    scratch_exists: bool = False  # the scratch path named a file that exists: not touched, nothing measured
    output_tail: list[str] = field(default_factory=list)  # the end of fio's output when it was unreadable


@dataclass
class ModuleReading:
    """One optical module as `ethtool -m` (or mlxlink, nodeqc.backends.mlxlink) shows it: readings
    (per lane where it has lanes) and the module's own thresholds."""

    values: dict[str, list[float]] = field(default_factory=dict)  # temperature, voltage, bias, tx_power, rx_power
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)  # measure -> high_alarm, low_alarm, ...
    units: dict[str, str] = field(default_factory=dict)  # measure -> unit, where not ethtool's (mlxlink: dBm, mV)
    vendor: str = ""
    part: str = ""
    identifier: str = ""


class HostStress(ABC):
    @abstractmethod
    def cpu(self, seconds: float) -> list[dict[str, Any]]: ...

    @abstractmethod
    def memory_bandwidth(self) -> float: ...

    @abstractmethod
    def missing_tool(self, tool: str) -> str | None: ...

    @abstractmethod
    def fio(self, target: str, seconds: float, scratch: bool) -> FioResult: ...

    @abstractmethod
    def module(self, interface: str) -> str | None:
        """`ethtool -m IFACE` output, or None when the NIC has no readable module."""

    @abstractmethod
    def mlxlink(self, device: str) -> tuple[str, str | None]:
        """`mlxlink -d DEVICE -m -c` (JSON where the version has --json, text before) for a
        Mellanox/NVIDIA port: (stdout, what it said on stderr when it exited non-zero, else None)."""


class LinuxHostStress(HostStress):
    COPY_MIB = 256  # per stream: far beyond any CPU cache

    def cpu(self, seconds: float) -> list[dict[str, Any]]:
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=len(cpus), mp_context=ctx) as pool:
            futures = [pool.submit(_cpu_worker, c, seconds) for c in cpus]
            out = []
            for c, f in zip(cpus, futures):
                try:
                    out.append(f.result(timeout=seconds + 120))
                except Exception as e:  # noqa: BLE001 - a worker that died on its core is a finding
                    out.append({"cpu": c, "rounds": 0, "wrong": 0, "error": f"{type(e).__name__}: {e}"})
            return out

    def memory_bandwidth(self) -> float:
        streams = max(1, min(16, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=streams, mp_context=ctx) as pool:
            return round(sum(pool.map(_copy_worker, [self.COPY_MIB] * streams, [5] * streams)), 1)

    def missing_tool(self, tool: str) -> str | None:
        found = any(shutil.which(name) for name in TOOL_NAMES.get(tool, (tool,)))
        return None if found else INSTALL.get(tool, f"install {tool}")

    def fio(self, target: str, seconds: float, scratch: bool) -> FioResult:
        # fio splits --filename at ':' (a list of files): escaped, the one path named ("a:b" wrote a and b;
        # /dev/disk/by-path/pci-0000:06:00.0 read /dev/disk/by-path/pci-0000).
        cmd = ["fio", "--name=nodeqc", "--filename=" + target.replace(":", "\\:"), "--rw=read", "--bs=1M", "--direct=1",
               "--ioengine=libaio", "--iodepth=32", f"--runtime={int(max(1, seconds))}", "--time_based",
               "--output-format=json"]
        cmd += ["--size=1G"] if scratch else ["--readonly"]
        if scratch:
            # Made here, new (O_EXCL, never through a link), so that only a file nodeqc made is written
            # and removed: `[host] fio_scratch` naming an existing file deleted it (2026-11-29 fuzzing).
            try:
                made = claim(Path(target))
            except OutputError as e:
                return FioResult(target, error=f"cannot make the scratch file: {e}", command=cmd)
            if not made:
                return FioResult(target, error=f"{target} exists: [host] fio_scratch must name a file that does not "
                                              "exist (nodeqc writes and removes only a file it makes)", command=cmd,
                                 scratch_exists=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            return FioResult(target, error=f"fio did not finish within {seconds + 120:g} s", command=cmd)
        finally:
            if scratch:
                try:
                    os.unlink(target)
                except OSError:
                    pass
        result = parse_fio(proc.stdout, target)
        if result.error is None and proc.returncode != 0:
            result.error = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        result.command = cmd
        return result

    def module(self, interface: str) -> str | None:
        # TimeoutExpired or OSError go to the caller (optics.read_optics), which says the port was not read.
        proc = subprocess.run(["ethtool", "-m", interface], capture_output=True, text=True, errors="replace", timeout=ETHTOOL_TIMEOUT_S)
        return proc.stdout if proc.returncode == 0 and proc.stdout.strip() else None

    def mlxlink(self, device: str) -> tuple[str, str | None]:
        tool = next((t for t in map(shutil.which, TOOL_NAMES["mlxlink"]) if t), None)
        if tool is None:
            return "", "mlxlink is not installed"
        command = [tool, "-d", device, "-m", "-c"]
        try:
            out, problem = _run_tool(command + ["--json"])
            if out.lstrip().startswith("{") or (problem is None and out.strip()):
                return out, problem  # JSON, or text from a version that ignores --json
            return _run_tool(command)  # a version before --json, which rejects the option: its text
        except subprocess.TimeoutExpired:  # not asked twice: a port that hangs costs one timeout
            return "", f"{Path(tool).name} did not answer within {MLXLINK_TIMEOUT_S} s"


def _run_tool(command: list[str]) -> tuple[str, str | None]:
    """stdout, and stderr's last line (or the exit status) when the command failed."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=MLXLINK_TIMEOUT_S)
    except OSError as e:
        return "", f"{Path(command[0]).name} could not be run: {e}"
    if proc.returncode == 0:
        return proc.stdout, None
    return proc.stdout, (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]


# ---------------------------------------------------------------------- parsers


def parse_fio(text: str, target: str = "") -> FioResult:
    """fio's JSON (--output-format=json). Text around it (fio's own lines, `json,normal` output) is
    skipped; the first job's read and write figures are taken, bw_bytes being bytes per second.
    Never raises: JSON out of fio's format (another type, NaN, a 400-digit rate) gives a result
    with `unreadable` set, its error naming the field and output_tail the end of the output."""
    try:
        return _read_fio(text, target)
    except ToolOutputError as e:
        return FioResult(target, error=str(e), unreadable=True, output_tail=excerpt(text))


def _read_fio(text: str, target: str) -> FioResult:
    start = text.find("{")
    if start < 0:
        return FioResult(target, error="fio printed no JSON")
    try:
        data = load_json(text[start:], "fio's JSON", prefix=True)
    except json.JSONDecodeError as e:
        return FioResult(target, error=f"fio's JSON is unreadable: {e}")
    jobs = _fio_object(data, "fio's JSON").get("jobs") or []
    if not isinstance(jobs, list):
        raise ToolOutputError(f"fio's jobs is {quoted(jobs)}, not a list")
    if not jobs:
        return FioResult(target, error="fio's JSON has no jobs")
    job = _fio_object(jobs[0], "fio's first job")
    result = FioResult(target or shown(str(job.get("jobname", "")))[:100])
    if job.get("error"):
        result.error = f"fio job error {quoted(job['error'])}"
    read = _fio_object(job.get("read") or {}, "fio's read")
    write = _fio_object(job.get("write") or {}, "fio's write")

    def number(side: dict[str, Any], key: str, name: str) -> float:
        return figure(side.get(key, 0), f"fio's {name}.{key}", low=0)

    def rate(side: dict[str, Any], name: str) -> float:  # bw_bytes since fio 3.5; before, only bw in KiB/s
        per_s = number(side, "bw_bytes", name) if "bw_bytes" in side else number(side, "bw", name) * 1024
        return round(per_s / 1e9, 6)

    if number(read, "io_bytes", "read"):
        result.read_gbps = rate(read, "read")
        result.read_iops = round(number(read, "iops", "read"), 1)
        clat = _fio_object(read.get("clat_ns") or {}, "fio's read.clat_ns")
        p99 = _fio_object(clat.get("percentile") or {}, "fio's read.clat_ns.percentile").get("99.000000")
        p99 = None if p99 is None else figure(p99, "fio's read 99th percentile latency", low=0)
        result.read_p99_us = round(p99 / 1000, 1) if p99 else None
    if number(write, "io_bytes", "write"):
        result.write_gbps = rate(write, "write")
    return result


def _fio_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolOutputError(f"{what} is {quoted(value)}, not an object")
    return value


_MEASURES = (  # (measure, pattern of the reading's label, pattern of the threshold's label)
    ("temperature", r"Module temperature", r"Module temperature"),
    ("voltage", r"Module voltage", r"Module voltage"),
    ("bias", r"Laser (?:tx )?bias current", r"Laser bias current"),
    ("tx_power", r"Laser output power|Transmit avg optical power", r"Laser output power"),
    ("rx_power", r"Receiver signal average optical power|Rcvr signal avg optical power", r"Laser rx power"),
)
# What a module's monitor can report at all, in ethtool's units, from its 16-bit fields (SFF-8472
# section 9.2, the same encodings in SFF-8636 and CMIS): temperature a signed 1/256 C (-128 to 128 C),
# voltage an unsigned 100 uV (0 to 6.5535 V), bias an unsigned 2 uA (0 to 131.072 mA; CMIS scales it by
# up to 4, so 524.288 mA), optical power an unsigned 0.1 uW (0 to 6.5535 mW). A reading or a threshold
# beyond them is not a module's: the output is refused, never judged (a threshold read as infinity
# would pass every reading).
MODULE_RANGES = {"temperature": (-128.0, 128.0), "voltage": (0.0, 6.5535), "bias": (0.0, 524.288),
                 "tx_power": (0.0, 6.5535), "rx_power": (0.0, 6.5535)}


def parse_module(text: str) -> ModuleReading:
    """`ethtool -m` text (SFF-8472 SFP and SFF-8636 QSFP layouts; CMIS modules print the same labels).
    Optical power in mW (the first number), temperature in degrees C. A reading or threshold that no
    module can report (see MODULE_RANGES; NaN, a 400-digit number) raises ToolOutputError naming it."""
    m = ModuleReading()
    for number, line in enumerate(text.splitlines(), 1):
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = " ".join(key.split()), value.strip()
        if key == "Vendor name":
            m.vendor = value
        elif key == "Vendor PN":
            m.part = value
        elif key == "Identifier":
            m.identifier = value
        token = re.match(r"-?\d+(?:\.\d+)?", value)
        if token is None:
            continue
        for measure, reading, threshold in _MEASURES:
            t = re.fullmatch(rf"(?:{threshold}) (high|low) (alarm|warning) threshold", key)
            r = None if t else re.fullmatch(rf"(?:{reading})\s*(?:\((?:Channel|Chan) \d+\))?", key)
            if t is None and r is None:
                continue
            low, high = MODULE_RANGES[measure]
            x = figure(token.group(), f"ethtool -m line {number} ({quoted(key)})", low=low, high=high, text=True)
            if t:
                m.thresholds.setdefault(measure, {})[f"{t.group(1)}_{t.group(2)}"] = x
            else:
                m.values.setdefault(measure, []).append(x)
            break
    return m
