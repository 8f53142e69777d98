#!/usr/bin/env bash
# Memory of gpuwardend as a node's exporter (issue 15: at most 16 MiB
# resident; docs/benchmarks.md section 9), at the moments that grew it:
#   1. at rest: `gpuwardend --no-queue --listen` on a fresh state directory,
#      SECONDS after its start;
#   2. after SCRAPES GETs of /metrics (one curl, a kept connection);
#   3. a full hour of 1-s points: a daemon started on a history.db filled by
#      bench/history_bench.cc (90 days: 3,600 1-s, 10,080 1-min, 2,160 1-h
#      points, ending now), SECONDS after its start;
#   4. after 7-day queries on it: `gpuwarden history --since 7d --json`,
#      `history --since 7d`, `usage --since 7d` and `why` (the "trends" op,
#      a day of history), each followed by 2 s at rest; VmHWM is the peak.
# The server is scenarios/bench-8gpu-256proc.json with 256 real `sleep`
# processes (bench/gpu_processes.sh), as in bench/fleet_bench.sh. Memory is
# VmRSS, VmHWM and RssAnon from /proc/PID/status.
#
#   bench/fleet_memory.sh [BUILD_DIR] [SECONDS] [SCRAPES]   (default build 60 400)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-60}
scrapes=${3:-400}
cmake --build "$build" --target gpuwardend gpuwarden gw_nvml_sim history_bench >/dev/null
command -v curl >/dev/null || { echo "curl is needed"; exit 1; }

scenario=$PWD/scenarios/bench-8gpu-256proc.json
work=$(mktemp -d)
pids=()
servers=()
cleanup() {
  for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${servers[@]}"; do wait "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
envs=(LANG=C.UTF-8 GPUWARDEN_CONFIG="$work/config.toml" GPUWARDEN_SIM_START="$(date +%s)")
: > "$work/config.toml"
. bench/gpu_processes.sh  # start_gpu_processes
start_gpu_processes 256
gwd=$PWD/$build/gpuwardend
gw=$PWD/$build/gpuwarden
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
memory() {  # PID
  printf 'VmRSS %5s MiB  VmHWM %5s MiB  RssAnon %5s MiB' "$(mib "$(status_kib "$1" VmRSS)")" \
    "$(mib "$(status_kib "$1" VmHWM)")" "$(mib "$(status_kib "$1" RssAnon)")"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
start_daemon() {  # NAME STATE_DIR -> pid in $daemon
  env "${envs[@]}" "$gwd" --no-queue --listen 127.0.0.1:0 --socket "$work/$1.sock" \
    --state-dir "$2" --sim "$scenario" 2>"$work/$1.log" &
  daemon=$!
  servers+=($!)
  for _ in $(seq 1 100); do
    if [ -S "$work/$1.sock" ] && grep -q 'metrics on http://' "$work/$1.log"; then return 0; fi
    sleep 0.1
  done
  echo "gpuwardend did not start:"; cat "$work/$1.log"; exit 1
}

echo "fleet_memory: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)," \
     "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' + uncommitted src changes')"
mkdir -p "$work/fresh" "$work/hist"
"$build/bench/history_bench" --db "$work/hist/history.db" --end "$(date +%s)" --reps 1 >/dev/null
start_daemon fresh "$work/fresh"
fresh=$daemon
start_daemon hist "$work/hist"
hist=$daemon
t0_fresh=$(ticks "$fresh")
t0_hist=$(ticks "$hist")
sleep "$seconds"
hz=$(getconf CLK_TCK)
cpu() { awk -v d="$(( $(ticks "$1") - $2 ))" -v hz="$hz" -v s="$seconds" 'BEGIN {printf "%.3f %%", 100 * d / hz / s}'; }
echo "1. at rest after ${seconds} s            $(memory "$fresh")  CPU $(cpu "$fresh" "$t0_fresh")"
echo "3. an hour of 1-s points, ${seconds} s    $(memory "$hist")  CPU $(cpu "$hist" "$t0_hist")"

port=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$work/fresh.log" | head -n 1)
args=()
for _ in $(seq 1 "$scrapes"); do args+=(-o /dev/null "http://127.0.0.1:$port/metrics"); done
curl -s "${args[@]}"
sleep 1
echo "2. after $scrapes scrapes              $(memory "$fresh")"

query() {  # LABEL ARGS...
  local label=$1 t0
  shift
  t0=$EPOCHREALTIME
  env "${envs[@]}" "$gw" --socket "$work/hist.sock" "$@" >"$work/out"
  local ms
  ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.0f", (b - a) * 1000}')
  sleep 2
  printf '4. after %-30s %s  (%s ms, %s bytes)\n' "$label" "$(memory "$hist")" "$ms" \
    "$(stat -c %s "$work/out")"
}
query "history --since 7d --json" history --since 7d --json
query "history --since 7d" history --since 7d
query "usage --since 7d" usage --since 7d
query "history --since 1h --json" history --since 1h --json
query "why (trends)" --sim "$scenario" why --json
t0_hist=$(ticks "$hist")
sleep "$seconds"
echo "   ${seconds} s later                     $(memory "$hist")  CPU $(cpu "$hist" "$t0_hist")"
