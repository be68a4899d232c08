"""Wall time of a simulated --quick qualification of an 8-GPU node, run as a user runs it.

Target (issue 3): under 20 s on the 2-core development machine. Run:
    python benchmarks/bench_sim_quick.py [--runs 3] [--scenario hgx-h100]
Prints one JSON line with the figures; record them in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scenario", default="hgx-h100")
    args = ap.parse_args()
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "XDG_DATA_HOME": f"{home}/data", "XDG_CONFIG_HOME": f"{home}/config"}
        for _ in range(args.runs):
            start, used = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run([sys.executable, "-m", "nodeqc", "--headless", "--profile", args.scenario,
                                "--simulate", args.scenario, "--quick"], env=env, capture_output=True, text=True)
            walls.append(time.monotonic() - start)
            now = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU seconds of the run and every process it started (worker start-ups show here).
            cpus.append(now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime)
            if p.returncode != 0:
                print(p.stderr, file=sys.stderr)
                return 1
    peak_rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"benchmark": "sim_quick", "scenario": args.scenario, "runs": args.runs,
                      "wall_s_min": round(min(walls), 2), "wall_s_median": round(statistics.median(walls), 2),
                      "wall_s_max": round(max(walls), 2), "cpu_s_median": round(statistics.median(cpus), 2),
                      "target_s": 20, "peak_child_rss_mib": round(peak_rss_mib, 1),
                      "cpus": os.cpu_count(), "python": platform.python_version()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
