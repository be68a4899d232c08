#!/usr/bin/env bash
# The real-hardware proof (issues 8 and 23) in one command, for a GPU machine with no network.
#
# Here (with network), from the project root, gather the wheels the GPU machine lacks:
#     ../shared/device/wheels.sh
# There, from the project root, with the wheels carried in .whl/:
#     bash benchmarks/on_device.sh quick [PROFILE]   # quick run, co-tenant, GPU tests, capture, benchmark
#     bash benchmarks/on_device.sh full  [PROFILE]   # the full (non-quick) profile, timed
#     bash benchmarks/on_device.sh burnin [PROFILE]  # --quick --burn-in 3m (about 4.5 min), its telemetry kept:
#         the twin's burn-in warms 6 C from its first minute to its last where the one real 3-minute
#         burn-in (no telemetry kept) warmed 9 (benchmarks/RESULTS.md, round five): its telemetry tells why
# PROFILE defaults to the profile nodeqc suggests for the GPUs found. Everything goes under $OUT
# (or ./device-out), at most eight files: a log per step, the capture, the benchmark's JSON lines and
# the reports with their keys as one archive. Each part prints its figures to stdout as it completes
# (so a run cut short loses only the part in flight): the quick run's verdicts, its burn per dtype
# (rate, span, SM clock, power), its pulse per period (duty, bursts, the power swing NVML read) and
# its memory test's rate; the co-tenant run's answer; the GPU tests' summary; the benchmark's parts.
# Record the figures in benchmarks/RESULTS.md and move the capture into tests/fixtures/.
# It never changes clocks, power limits or modes: it only reads them and loads the GPU.
set -uo pipefail
mode=${1:-quick}
profile=${2:-auto}
case "$mode" in quick|full|burnin) ;; *) echo "on_device: mode is quick, full or burnin, not $mode" >&2; exit 2 ;; esac
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if compgen -G ".whl/*.whl" >/dev/null; then
    site=$(mktemp -d)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" .whl/*.whl || { echo "on_device: installing .whl/ failed" >&2; exit 2; }
    export PYTHONPATH="$site:$root"
else
    export PYTHONPATH="$root"
fi
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 XDG_DATA_HOME="$out/xdg" XDG_CONFIG_HOME="$out/xdg"

say() { echo "on_device: $*" | tee -a "$out/summary.log"; }

step() {  # step NAME COMMAND...: run, keep stdout+stderr in $out/NAME.log, say how it ended
    local name=$1; shift
    local t0=$SECONDS
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    say "$name exit $rc in $((SECONDS - t0)) s"
    return $rc
}

newest_report() { ls -t "$out/reports/$1"/*.report.json 2>/dev/null | head -n1; }

{ date -u +%FT%TZ; nvidia-smi; python3 -c 'import cupy, sys; print(sys.version); print("cupy", cupy.__version__,
  "cuda runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion())'; } \
    >"$out/summary.log" 2>&1 || { echo "on_device: no GPU or no CuPy here (see summary.log)" >&2; exit 2; }
say "$(nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader -i 0)"
# fp8's burn and tests need nvmath-python, which the image lacks: said first, not found in the logs after.
python3 -c 'import nvmath' 2>/dev/null || say "no nvmath-python here: fp8 will not run (gather the wheels with ../shared/device/wheels.sh cuda13, or cuda12 for a CUDA 12 driver)"

case "$mode" in
quick)
    # CuPy's kernel cache empty, as on a node that never ran nodeqc (issue 30's 60 s is that node's).
    CUPY_CACHE_DIR=$(mktemp -d) step quick python3 -m nodeqc --headless --profile "$profile" --quick --out "$out/reports/quick"
    if report=$(newest_report quick) && [ -n "$report" ]; then
        python3 benchmarks/device_summary.py "$report" | sed 's/^/on_device: quick | /' | tee -a "$out/summary.log"
        # A real GPU gives valid temperature, link and power readings: none may read NOT_READ (2026-11-29:
        # readings outside any part's range became none, and a check with none is not judged).
        { python3 -m nodeqc show "$report" | grep -E '\[(POWER_)?NOT_READ\]' || echo "no NOT_READ or POWER_NOT_READ"; } \
            | sed 's/^/on_device: quick readings | /' | tee -a "$out/summary.log"
        # The power figures leave each load's first second out (NVML's power is the mean of its last
        # second: telemetry.POWER_SETTLE_S); a healthy H100/H200 held 0.97 of its limit or more so
        # (the 2026-11-2* runs replayed). Each GPU's stress.power and burn figure, to hold to that.
        python3 -m nodeqc show --json "$report" | python3 -c '
import json, sys
for c in json.load(sys.stdin)["predicate"]["checks"]:
    if c["name"] in ("stress.power", "stress.burn") and "power_fraction" in c["values"]:
        print(c["name"], c["subject"], "power_fraction", c["values"]["power_fraction"]["value"], c["verdict"])
' | sed 's/^/on_device: quick power | /' | tee -a "$out/summary.log"
    fi
    # A co-tenant on the GPU and a run of the burn alone: nothing judged is no pass (exit 2, issue 23).
    python3 - >"$out/cotenant-load.log" 2>&1 <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.monotonic() + 40
while time.monotonic() < end:
    a @ a
    torch.cuda.synchronize()
PY
    load=$!
    sleep 8
    step cotenant python3 -m nodeqc --headless --profile "$profile" --quick --only stress.burn --out "$out/reports/cotenant"
    kill "$load" 2>/dev/null; wait "$load" 2>/dev/null
    grep -E "RESULT|ERROR|SKIP" "$out/cotenant.log" | head -n 4 | sed 's/^/on_device: cotenant | /' | tee -a "$out/summary.log"
    # One process, without the suite's xdist options: the GPU machine's image has no pytest-xdist.
    step gpu-tests python3 -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" tests/test_gpu_real.py tests/test_kernels.py
    grep -E "passed|failed|^FAILED" "$out/gpu-tests.log" | tail -n 6 | sed 's/^/on_device: gpu-tests | /' | tee -a "$out/summary.log"
    # Each burn set-up operation's time in a fresh process with an empty CuPy cache (a node's first run).
    CUPY_CACHE_DIR=$(mktemp -d) python3 benchmarks/burn_setup.py >"$out/burn-setup.log" 2>&1
    grep -E '"matmul_setup"|"compile"|import|context' "$out/burn-setup.log" | sed 's/^/on_device: burn-setup | /' | tee -a "$out/summary.log"
    model=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | tr -c 'A-Za-z0-9\n' '-' | tr A-Z a-z)
    step capture python3 -m nodeqc capture "$out/capture-${model}.json"
    # The benchmark prints a JSON line a part as it completes: each one reaches stdout at once.
    t0=$SECONDS
    python3 benchmarks/bench_gpu.py --gpu 0 --profile "$profile" --no-quick 2>"$out/bench.log" \
        | tee "$out/bench.jsonl" | sed 's/^/on_device: bench | /'
    say "bench exit ${PIPESTATUS[0]} in $((SECONDS - t0)) s"
    ;;
burnin)
    step burnin python3 -m nodeqc --headless --profile "$profile" --quick --burn-in 3m --out "$out/reports/burnin"
    if report=$(newest_report burnin) && [ -n "$report" ]; then
        python3 benchmarks/device_summary.py "$report" | sed 's/^/on_device: burnin | /' | tee -a "$out/summary.log"
    fi
    ;;
full)
    step full python3 -m nodeqc --headless --profile "$profile" --out "$out/reports/full"
    if report=$(newest_report full) && [ -n "$report" ]; then
        python3 benchmarks/device_summary.py "$report" | sed 's/^/on_device: full | /' | tee -a "$out/summary.log"
    fi
    ;;
esac
# Few files come back from the device machine: the reports and the XDG keys travel as one archive.
tar -C "$out" -czf "$out/reports.tgz" reports xdg cotenant-load.log burn-setup.log 2>/dev/null && rm -rf "$out/reports" "$out/xdg" \
    "$out/cotenant-load.log" "$out/burn-setup.log"
