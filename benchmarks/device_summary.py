"""The figures of a real run that the twin and the profiles are held to, from its report, one line each.

    python benchmarks/device_summary.py REPORT.report.json

For benchmarks/on_device.sh: after the quick qualification on a GPU machine it prints the verdict of
every check that did not pass, the burn per dtype (rate, when it ran, its SM clock, power and
throttle reasons), the pulse per period (duty, bursts, skipped periods, the power swing NVML read in
phase with the swings, and whether the load was proven), the power test, HBM, PCIe and the memory
test's rate. It reads the envelope's payload without verifying it (`nodeqc verify` does that).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any


def predicate(path: str) -> dict[str, Any]:
    envelope = json.loads(open(path, encoding="utf-8").read())
    return json.loads(base64.b64decode(envelope["payload"]))["predicate"]


def lines(p: dict[str, Any]) -> list[str]:
    out = [f"verdict {p['verdict']} ({p['status']}), profile {p['profile'].get('name')}, {p['duration_s']:.1f} s"]
    checks = p["checks"]
    for c in checks:
        if c["verdict"] != "pass":
            out.append(f"{c['verdict'].upper():5} {c['name']} {c['subject']} [{c.get('code')}] {c['message'][:300]}")

    def first(name: str) -> dict[str, Any] | None:
        return next((c for c in checks if c["name"] == name and c["subject"].startswith("gpu")), None)

    if burn := first("stress.burn"):
        for d, m in burn["evidence"].get("dtypes", {}).items():
            span = f"{m['start_s']:.1f}-{m['end_s']:.1f} s" if "start_s" in m else "no span"
            out.append(f"burn {d}: {m['tflops']} TFLOP/s, {m['products']} products, {span}, "
                       f"SM {m.get('sm_clock_mhz')} MHz, {m.get('power_w')} W, throttle {m.get('throttle_s')}")
    if pulse := first("stress.power_pulse"):
        for e in pulse["evidence"].get("load", []):
            out.append(f"pulse {e['period_ms']:g} ms: duty {e['duty']}, {e.get('cycles')} bursts, "
                       f"{e.get('skipped')} skipped, {e.get('products')} products, swing "
                       f"{e.get('swing_w')} W ({e.get('swing_said', 'not read')})")
        periods = {p_["period_s"]: p_ for p_ in pulse["evidence"].get("periods", [])}
        for period, span in sorted(periods.items()):
            if read := span.get("power_read"):
                out.append(f"pulse {period * 1000:g} ms power at the bursts' ends {read['high']}, at the idle "
                           f"ends {read['low']}, instantaneous {read['high_instant']} / {read['low_instant']}")
        out.append(f"pulse verdict {pulse['verdict']} [{pulse.get('code')}]")
    for name, keys in (("stress.power", ("power_w", "power_fraction", "sm_clock_mhz")),
                       ("stress.hbm_bandwidth", ("copy_gbps", "triad_gbps")),
                       ("stress.pcie_bandwidth", ("h2d_gbps", "d2h_gbps", "bidir_gbps")),
                       ("stress.memtest", ("tested", "coverage_pct", "gbps", "errors"))):
        if c := first(name):
            shown = ", ".join(f"{k} {c['values'][k]['value']}" for k in keys if k in c.get("values", {}))
            out.append(f"{name}: {c['verdict']}, {shown}")
    return out


def step_walls(journal: str) -> str | None:
    """Each stress step's wall on the run's clock, from its start to its last result (the journal
    beside the report): what a step took beyond its planned load is its set-up (issue 30: before a
    run kept its workers, each step paid a new process, CuPy and a CUDA context)."""
    try:
        events = [json.loads(line) for line in open(journal, encoding="utf-8") if line.strip()]
    except OSError:
        return None
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    for e in events:
        if e.get("type") == "check_started" and str(e.get("name", "")).startswith("stress."):
            started.setdefault(e["name"], float(e["t"]))
        elif e.get("type") == "check_finished" and str(e.get("result", {}).get("name", "")).startswith("stress."):
            ended[e["result"]["name"]] = float(e["t"])
    shown = [f"{n} {ended[n] - t:.1f}" for n, t in started.items() if n in ended]
    return ("steps, s from start to last result (first stress step at "
            f"{min(started.values()):.1f} s): " + ", ".join(shown)) if shown else None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: device_summary.py REPORT.report.json", file=sys.stderr)
        return 2
    try:
        for line in lines(predicate(sys.argv[1])):
            print(line, flush=True)
        walls = step_walls(sys.argv[1].replace(".report.json", ".journal.jsonl"))
        if walls:
            print(walls, flush=True)
    except (OSError, ValueError, KeyError) as e:
        print(f"device_summary: {sys.argv[1]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
