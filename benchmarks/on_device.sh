#!/usr/bin/env bash
# The real-hardware proof (issue 8) in one command, for a GPU machine with no network.
#
# Here (with network), from the project root, gather the wheels the GPU machine lacks:
#     ../shared/device/wheels.sh
# There, from the project root, with the wheels carried in .whl/:
#     bash benchmarks/on_device.sh quick [PROFILE]   # quick run, GPU tests, capture, benchmark
#     bash benchmarks/on_device.sh full  [PROFILE]   # the full (non-quick) profile, timed
# PROFILE defaults to the profile nodeqc suggests for the GPUs found. Everything goes under $OUT
# (or ./device-out): a log per step, the signed report, the capture and the benchmark's JSON; record
# the figures in benchmarks/RESULTS.md and move the capture into tests/fixtures/.
# It never changes clocks, power limits or modes: it only reads them and loads the GPU.
set -uo pipefail
mode=${1:-quick}
profile=${2:-auto}
case "$mode" in quick|full) ;; *) echo "on_device: mode is quick or full, not $mode" >&2; exit 2 ;; esac
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
export PYTHONUNBUFFERED=1 XDG_DATA_HOME="$out/xdg" XDG_CONFIG_HOME="$out/xdg"

step() {  # step NAME COMMAND...: run, keep stdout+stderr in $out/NAME.log, say how it ended
    local name=$1; shift
    local t0=$SECONDS
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "on_device: $name exit $rc in $((SECONDS - t0)) s" | tee -a "$out/summary.log" >&2
    return $rc
}

{ date -u +%FT%TZ; nvidia-smi; python3 -c 'import cupy, sys; print(sys.version); print("cupy", cupy.__version__,
  "cuda runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion())'; } \
    >"$out/summary.log" 2>&1 || { echo "on_device: no GPU or no CuPy here (see summary.log)" >&2; exit 2; }

case "$mode" in
quick)
    step quick python3 -m nodeqc --headless --profile "$profile" --quick --out "$out/reports"
    step gpu-tests python3 -m pytest -p no:cacheprovider tests/test_gpu_real.py tests/test_kernels.py
    model=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | tr -c 'A-Za-z0-9\n' '-' | tr A-Z a-z)
    step capture python3 -m nodeqc capture "$out/capture-${model}.json"
    step bench python3 benchmarks/bench_gpu.py --gpu 0 --profile "$profile"
    ;;
full)
    step full python3 -m nodeqc --headless --profile "$profile" --out "$out/reports"
    ;;
esac
# Few files come back from the device machine: the reports and the XDG keys travel as one archive.
tar -C "$out" -czf "$out/reports.tgz" reports xdg 2>/dev/null && rm -rf "$out/reports" "$out/xdg"
cat "$out/summary.log" >&2
