"""A run's files: its report, journal and telemetry, side by side under one stem
(`HOSTNAME-YYYYMMDDTHHMMSSZ`, `-2`, `-3`... where a run of the same second has it), in the
directory asked for or the node's own in the archive."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from nodeqc.archive.filing import node_dir, safe_name
from nodeqc.core.names import node_key
from nodeqc.backends.base import HostInfo
from nodeqc.core.errors import UsageError
from nodeqc.core.safefile import claim


@dataclass
class RunPaths:
    directory: Path
    stem: str

    @property
    def report(self) -> Path:
        return self.directory / f"{self.stem}.report.json"

    @property
    def journal(self) -> Path:
        return self.directory / f"{self.stem}.journal.jsonl"

    @property
    def telemetry(self) -> Path:
        return self.directory / f"{self.stem}.telemetry.csv.gz"


def claim_paths(host: HostInfo, out_dir: Path | None, archive: Path | None) -> RunPaths:
    """The run's files, named for the host and now and claimed. `out_dir` None: the node's
    directory in the archive (`archive` None: archive_root())."""
    directory = out_dir or node_dir(node_key(host.system_serial, host.hostname), archive)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{directory}: cannot create the report directory: {e.strerror}") from None
    base = f"{safe_name(host.hostname)}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}"
    n = 1
    while True:
        paths = RunPaths(directory, base if n == 1 else f"{base}-{n}")
        # Claim the name by creating the journal: two runs starting in the same second cannot
        # both get it, as they could with a look first and a create after. O_NOFOLLOW too: a
        # link planted under the name is taken as "the name is used".
        if not paths.report.exists() and claim(paths.journal):
            return paths
        n += 1
