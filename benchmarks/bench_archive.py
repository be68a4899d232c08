"""An archive of 10,000 signed reports: how long `nodeqc history` takes, and how long the index takes
to build from nothing (the reports are the truth, the index a reader's cache of verified facts that
is rebuilt when lost).

Targets (issue 7): history answers in under a second; the index rebuild takes under a minute.
`nodeqc fleet` (issue 17) is held to the same budget: under a second with its figure cache, under a
minute without.
The reports are real signed reports of realistic size: one simulated 8-GPU qualification is run,
and its predicate is re-stamped (node, verdict, time) and signed 10,000 times with nodeqc.report.envelope.
Run:
    python benchmarks/bench_archive.py [--reports 10000] [--nodes 500] [--work DIR]
Prints one JSON line with the figures; record them in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nodeqc.archive.filing import safe_name  # noqa: E402
from nodeqc.archive.index import Archive  # noqa: E402
from nodeqc.report.envelope import sign, statement  # noqa: E402
from nodeqc.report.keys import load_signer  # noqa: E402


def template(env: dict[str, str], work: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "nodeqc", "--headless", "--profile", "hgx-h100", "--simulate",
                        "hgx-h100", "--quick", "--out", str(work / "template")], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    envelope = json.loads(Path(p.stdout.strip().splitlines()[-1]).read_text())
    return json.loads(base64.b64decode(envelope["payload"]))["predicate"]


def generate(root: Path, base: dict, count: int, nodes: int, signer) -> float:
    """`count` signed reports of `nodes` nodes over a year; about 10% fail, 5% partial."""
    rng = random.Random(7)
    start = datetime(2025, 11, 1, tzinfo=timezone.utc)
    t0 = time.monotonic()
    for i in range(count):
        n = i % nodes
        serial, host = f"SN{n:05d}", f"gpu{n:05d}"
        when = (start + timedelta(minutes=i * 52, seconds=rng.randrange(60))).strftime("%Y-%m-%dT%H:%M:%SZ")
        p = dict(base, node=dict(base["node"], system_serial=serial, hostname=host),
                 gpus=[dict(g, serial=f"{serial}-G{k}") for k, g in enumerate(base["gpus"])],
                 started_at=when, finished_at=when)
        if rng.random() < 0.10:
            p["verdict"] = "FAIL"
            p["summary"] = {"counts": p["summary"]["counts"], "failed": ["health.pcie_link gpu3"]}
        if rng.random() < 0.05:
            p["partial"] = {"only": ["health"], "skip": [], "checks": []}
        directory = root / safe_name(serial)
        directory.mkdir(parents=True, exist_ok=True)
        # Written as write_envelope does, less its fsync (10,000 fsyncs measure the disk, not nodeqc).
        (directory / f"{host}-{when.replace('-', '').replace(':', '')}.report.json").write_text(
            json.dumps(sign(statement(p), signer), indent=2) + "\n")
    return time.monotonic() - t0


def timed(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "nodeqc", *args], env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"nodeqc {' '.join(args)}: {p.stderr}")
    return wall, max(0, len(p.stdout.splitlines()) - 1)  # less the header line


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", type=int, default=10_000)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, help="keep the signed archive (and its keys) in this directory and "
                    "reuse it on the next run with the same --reports and --nodes (generating takes minutes)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "XDG_DATA_HOME": str(work / "data"), "XDG_CONFIG_HOME": str(work / "config"),
               "XDG_CACHE_HOME": str(work / "cache")}
        os.environ.update({k: env[k] for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")})
        # Bytecode compiled beforehand, as pip does when it installs nodeqc: where the environment
        # sets PYTHONDONTWRITEBYTECODE (this machine's does), each timed start would otherwise
        # compile nodeqc from source and count that as the query's time.
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "nodeqc")],
                       check=True)
        root = work / "archive"
        made = work / f"generated-{args.reports}-{args.nodes}"
        if made.exists():
            generate_s = float(made.read_text())
        else:
            generate_s = generate(root, template(env, work), args.reports, args.nodes, load_signer(None))
            made.write_text(f"{generate_s}\n")
        size_mib = sum(f.stat().st_size for f in root.rglob("*.report.json")) / 2**20
        index = Archive(root, trusted={}).index_path  # this reader's index of the archive
        rebuild = []
        for _ in range(args.repeat):
            index.unlink(missing_ok=True)
            wall, listed = timed(["history", "--archive", str(root), "--limit", "1"], env)
            rebuild.append(wall)
        queries = {
            "all": ["history", "--archive", str(root)],
            "node": ["history", "--archive", str(root), "--node", "SN00042"],
            "fail_since": ["history", "--archive", str(root), "--verdict", "fail", "--since", "2026-06-01"],
        }
        history = {}
        for name, q in queries.items():
            walls, rows = [], 0
            for _ in range(args.repeat):
                wall, rows = timed(q, env)
                walls.append(wall)
            history[name] = {"median_s": round(statistics.median(walls), 3), "max_s": round(max(walls), 3), "rows": rows}
        # nodeqc fleet (issue 17): the newest report of each node read and its figures cached by
        # digest; cold = no figure cache, warm = cached. Same budget as history: warm under 1 s.
        fleet = {}
        cache = work / "cache" / "nodeqc" / "fleet-figures.sqlite3"
        cold = []
        for _ in range(args.repeat):
            cache.unlink(missing_ok=True)
            cold.append(timed(["fleet", "--archive", str(root), "--rows", "1"], env)[0])
        warm = [timed(["fleet", "--archive", str(root), "--rows", "1"], env)[0] for _ in range(args.repeat)]
        fleet = {"cold_s_median": round(statistics.median(cold), 2), "warm_s_median": round(statistics.median(warm), 3),
                 "warm_s_max": round(max(warm), 3)}
        index_mib = index.stat().st_size / 2**20
    print(json.dumps({"benchmark": "archive", "reports": args.reports, "nodes": args.nodes,
                      "archive_mib": round(size_mib, 1), "index_mib": round(index_mib, 2),
                      "generate_s": round(generate_s, 1),
                      "rebuild_s_median": round(statistics.median(rebuild), 2), "rebuild_s_max": round(max(rebuild), 2),
                      "rebuild_target_s": 60, "history": history, "history_target_s": 1, "fleet": fleet,
                      "cpus": os.cpu_count(), "python": platform.python_version()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
