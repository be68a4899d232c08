"""A simulated 24-hour burn-in of an 8-GPU node: wall time (target about a minute) and the memory
of nodeqc and its workers over the run (target: flat).

    python benchmarks/bench_burnin.py [--duration 24h] [--scenario hgx-h100]

Prints one JSON line; record it in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import psutil


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="24h")
    ap.add_argument("--scenario", default="hgx-h100")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "XDG_DATA_HOME": f"{home}/d", "XDG_CONFIG_HOME": f"{home}/c"}
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "nodeqc", "--headless", "--profile", args.scenario, "--simulate",
                                 args.scenario, "--quick", "--burn-in", args.duration], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        main_proc = psutil.Process(proc.pid)
        samples = []  # (seconds, main RSS MiB, RSS of main + workers MiB)
        while proc.poll() is None:
            try:
                main_rss = main_proc.memory_info().rss
                tree = main_rss + sum(c.memory_info().rss for c in main_proc.children(recursive=True))
                samples.append((time.monotonic() - start, main_rss / 2**20, tree / 2**20))
            except psutil.NoSuchProcess:
                break
            time.sleep(1.0)
        out, err = proc.communicate()
        wall = time.monotonic() - start
    if proc.returncode != 0:
        print(err, file=sys.stderr)
        return 1
    quarter = [samples[min(len(samples) - 1, int(len(samples) * q))] for q in (0.25, 0.5, 0.75, 0.99)]
    print(json.dumps({"benchmark": "burn_in", "duration": args.duration, "scenario": args.scenario,
                      "wall_s": round(wall, 1), "samples": len(samples),
                      "main_rss_mib_at_25_50_75_99pct": [round(s[1], 1) for s in quarter],
                      "tree_rss_mib_at_25_50_75_99pct": [round(s[2], 1) for s in quarter],
                      "main_rss_mib_max": round(max(s[1] for s in samples), 1), "cpus": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
