#!/usr/bin/env bash
# Benchmark: whole-process `gpuwarden status --json` against the peer gpustat
# (`gpustat --json`), both reading the same simulated 8-GPU, 64-process server
# through the same simulated libnvidia-ml.so.1, interleaved, median of N runs.
#   bench/status_bench.sh [RUNS] [BUILD_DIR]   (default: 30 runs, build/, optimised build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
build=${2:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gpuwarden gw_nvml_sim cmd_bench >/dev/null

scenario=scenarios/bench-8gpu-64proc.json
export GPUWARDEN_SIM_SCENARIO=$PWD/$scenario
export LD_LIBRARY_PATH=$PWD/$build/sim
unset GPUWARDEN_NVML_LIB

variants=(--name "gpuwarden status --json" -- "$build/gpuwarden" --sim "$scenario" status --json)
if bench/fetch_peers.sh >/dev/null 2>&1; then
  export PYTHONPATH=$PWD/bench/.peers/root/usr/lib/python3/dist-packages
  variants+=(--name "gpustat --json" -- /usr/bin/python3 bench/.peers/root/usr/bin/gpustat --json)
else
  echo "(peer gpustat could not be fetched; timing gpuwarden alone)"
fi
echo "scenario: $scenario; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
"$build/bench/cmd_bench" --runs "$runs" --warmup 3 "${variants[@]}"
