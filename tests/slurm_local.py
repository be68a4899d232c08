"""A real Slurm on this one host, for the fabric tests: Debian's slurmctld and several slurmd (one
per simulated node, `slurmd -N NAME`, each on its own port; Debian builds Slurm with multiple-slurmd
support), authenticated by a munged of our own. Everything lives in a temporary directory (its own
munge key and socket, state, spool, logs, ports found free below the ephemeral range), nothing touches the host's
Slurm or munge configuration, and every daemon we started is stopped by its pid file on exit.

`.ci/run` installs the packages (slurmctld slurmd slurm-client munge) when it runs as root; without
them, or without root, the tests that need this skip, saying why.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from processes import run_checked

DAEMONS = {"munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd", "srun": "slurm-client",
           "scontrol": "slurm-client", "salloc": "slurm-client", "sinfo": "slurm-client"}
SBIN = ("/usr/sbin", "/usr/bin")


def _which(tool: str) -> str | None:
    return shutil.which(tool) or next((f"{d}/{tool}" for d in SBIN if os.access(f"{d}/{tool}", os.X_OK)), None)


UP_WITHIN_S = 30.0  # every slurmd registered idle (a few seconds on the 2-core CI machine)


def _free_ports(count: int) -> int:
    """The first of `count` consecutive TCP ports nobody listens on or holds now, below Linux's
    ephemeral range (32768 and up), where outgoing connections of other tests would take them."""
    start = 20000 + (os.getpid() % 700) * 16
    for base in [*range(start, 31000, 16), *range(20000, start, 16)]:
        try:
            with contextlib.ExitStack() as held:
                for port in range(base, base + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("", port))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports between 20000 and 31000")


@functools.lru_cache(maxsize=None)
def unavailable() -> str | None:
    missing = sorted({pkg for tool, pkg in DAEMONS.items() if _which(tool) is None})
    if missing:
        return f"no Slurm here (apt-get install {' '.join(missing)}; .ci/run does when root)"
    if os.geteuid() != 0:
        return "needs root to run slurmd (it starts job steps as their user)"
    return None


class LocalSlurm:
    def __init__(self, directory: Path, nodes: list[str], cpus: int = 2):
        self.dir = directory
        self.nodes = nodes
        self.cpus = cpus
        base = _free_ports(2 + len(nodes))
        self.ctld_port, self.slurmd_port = base, base + 1
        self.node_ports = [base + 2 + i for i in range(len(nodes))]
        self.conf = directory / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._pidfiles: list[Path] = []

    def __enter__(self) -> "LocalSlurm":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        d = self.dir
        for sub in ("munge", "state", "log", *(f"spool/{n}" for n in self.nodes)):
            (d / sub).mkdir(parents=True, exist_ok=True)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        sock = d / "munge" / "munge.sock"
        self._pidfiles.append(d / "munge" / "munged.pid")
        self._run([_which("munged"), f"--key-file={key}", f"--socket={sock}", f"--pid-file={d / 'munge/munged.pid'}",
                   f"--log-file={d / 'munge/munged.log'}", f"--seed-file={d / 'munge/seed'}", "--force"])
        names = ",".join(self.nodes)
        lines = [
            "ClusterName=nodeqctest", "SlurmctldHost=localhost", f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}", "AuthType=auth/munge", f"AuthInfo=socket={sock}", "CredType=cred/munge",
            "SlurmUser=root", "SlurmdUser=root", f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d / 'spool'}/%n",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d}/slurmd-%n.pid",
            f"SlurmctldLogFile={d / 'log/slurmctld.log'}", f"SlurmdLogFile={d}/log/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "ReturnToService=2", "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
        ]
        lines += [f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs={self.cpus} State=UNKNOWN"
                  for n, p in zip(self.nodes, self.node_ports)]
        lines.append(f"PartitionName=test Nodes={names} Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        self._pidfiles.append(d / "slurmctld.pid")
        self._run([_which("slurmctld"), "-f", str(self.conf)])
        for n in self.nodes:
            self._pidfiles.append(d / f"slurmd-{n}.pid")
            self._run([_which("slurmd"), "-f", str(self.conf), "-N", n])
        deadline = time.monotonic() + UP_WITHIN_S  # bounded in time, however long each sinfo waits
        ctld_log = d / "log/slurmctld.log"
        while time.monotonic() < deadline:
            log = ctld_log.read_text(errors="replace") if ctld_log.exists() else ""
            if "fatal:" in log:  # it will not come up (a port taken since we probed it): say so now
                raise RuntimeError(f"the local slurmctld stopped: {log[log.index('fatal:'):][:300]}")
            try:
                out = subprocess.run([_which("sinfo"), "-h", "-o", "%T %D"], capture_output=True, text=True,
                                     env=self.env, timeout=max(1.0, min(5.0, deadline - time.monotonic()))).stdout.split()
            except subprocess.TimeoutExpired:
                continue
            if out[:1] == ["idle"] and out[1:2] == [str(len(self.nodes))]:
                return
            time.sleep(0.1)
        log = ctld_log.read_text(errors="replace")[-800:] if ctld_log.exists() else ""
        raise RuntimeError(f"the local Slurm did not come up within {UP_WITHIN_S:g} s: {log}")

    def _run(self, cmd: list[str | None]) -> None:
        run_checked([str(c) for c in cmd], env=self.env, timeout=30)

    def close(self) -> None:
        """Stop our daemons, by their pid files, slurmd first."""
        for pidfile in reversed(self._pidfiles):
            try:
                pid = int(pidfile.read_text().strip())
            except (OSError, ValueError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(50):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
        self._pidfiles = []

    def node(self, name: str) -> str:
        return subprocess.run([_which("scontrol"), "show", "node", name], capture_output=True, text=True,
                              env=self.env, timeout=10).stdout

    def steps(self) -> dict[str, set[str]]:
        """Job step id -> the nodes it ran tasks on, from the slurmds' logs."""
        import re

        out: dict[str, set[str]] = {}
        for n in self.nodes:
            path = self.dir / f"log/slurmd-{n}.log"
            text = path.read_text() if path.exists() else ""
            for step in re.findall(r"launch task StepId=(\S+) request", text):
                out.setdefault(step, set()).add(n)
        return out
