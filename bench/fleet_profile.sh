#!/usr/bin/env bash
# Profile: where gpuwardend's CPU goes at its 1-Hz full looks on the simulated
# 8-GPU, 256-process server (issue 15; docs/benchmarks.md section 9). Four
# views:
#   1. bench/fleet_look_bench.cc: each part of a look and of what the daemon
#      does with it, timed alone (process CPU time, medians);
#   2. `perf stat` and `perf record` (DWARF call graphs) of a running
#      `gpuwardend --no-queue --listen` over SECONDS, unscraped: its total CPU
#      and the functions that take it, self and with their callees;
#   3. the system calls of a look (perf stat on the syscall tracepoints);
#   4. the same daemon on scenarios/driver-hang.json, where a look outlasts
#      the 1 s interval.
# The 256 GPU processes are real `sleep` processes, as in bench/fleet_bench.sh.
# Needs perf (Debian: linux-perf), allowed to watch the daemon and to read the
# syscall tracepoints (run as root, or lower kernel.perf_event_paranoid).
#   bench/fleet_profile.sh [BUILD_DIR] [SECONDS]   (default build 30)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-30}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gpuwardend gw_nvml_sim fleet_look_bench >/dev/null
command -v perf >/dev/null || { echo "perf is needed (apt-get install linux-perf)"; exit 1; }

scenario=$PWD/scenarios/bench-8gpu-256proc.json
work=$(mktemp -d)
pids=()
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
envs=(LANG=C.UTF-8 GPUWARDEN_CONFIG="$work/config.toml" GPUWARDEN_SIM_START="$(date +%s)")
: > "$work/config.toml"
. bench/gpu_processes.sh  # start_gpu_processes
start_gpu_processes 256
echo "fleet_profile: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)," \
     "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' + uncommitted src changes')"

echo
echo "1. the parts of one look, alone (fleet_look_bench)"
env "${envs[@]}" "$build/bench/fleet_look_bench" "$PWD/$build/sim/libnvidia-ml.so.1" "$scenario" 20

echo
echo "2. a running gpuwardend --no-queue --listen, ${seconds} s after a 5 s warm-up"
mkdir -p "$work/state"
env "${envs[@]}" "$build/gpuwardend" --no-queue --listen 127.0.0.1:0 --socket "$work/d.sock" \
  --state-dir "$work/state" --sim "$scenario" 2>"$work/d.log" &
daemon=$!
sleep 5
perf stat -e task-clock,context-switches,page-faults -p "$daemon" -- sleep "$seconds" 2>&1 |
  grep -E 'task-clock|context-switches|page-faults|seconds time elapsed' |
  awk -v s="$seconds" '/task-clock/ {printf "  task-clock %.1f ms in %d s = %.3f %% of one core, %.2f ms a look\n", $1, s, $1 / s / 10, $1 / s; next} {print "  " $0}'
perf record -q -F 1999 --call-graph dwarf,16384 -p "$daemon" -o "$work/perf.data" -- sleep "$seconds" \
  2>/dev/null
echo
echo "  self (functions, >= 0.8 %):"
perf report -i "$work/perf.data" --no-children --sort dso,sym -g none --percent-limit 0.8 --stdio \
  2>/dev/null | grep -E '^ +[0-9]' | head -n 40 || true
echo
echo "  with callees (gpuwarden's frames and the big library ones, >= 2 %):"
perf report -i "$work/perf.data" --children --sort sym -g none --percent-limit 2 --stdio 2>/dev/null |
  grep -E '^ +[0-9]' | grep -v -E '\] std::|\(inlined\)' |
  grep -E 'gw::|sqlite3_step|nlohmann|start_thread|sys_readlinkat|sys_openat|sys_getdents64|sys_read$|sys_close|do_syscall_64' |
  cut -c 1-150 | head -n 40 || true
echo
echo "  by library (self; [kernel.kallsyms] is the system calls' work):"
perf report -i "$work/perf.data" --no-children --sort dso -g none --stdio 2>/dev/null |
  grep -E '^ +[0-9]' | head -n 10 || true

echo
echo "  memory after $((seconds * 2 + 5)) s: $(awk '/^(Threads|VmRSS|RssAnon|RssFile):/ {printf "%s %s ", $1, $2}' "/proc/$daemon/status")(kB);"
echo "  resident by mapping (kB, >= 100):"
awk '/^[0-9a-f]+-[0-9a-f]+ / {name = ($6 == "") ? "[anonymous]" : $6} /^Rss:/ {rss[name] += $2}
     END {for (n in rss) if (rss[n] >= 100) printf "  %7d  %s\n", rss[n], n}' "/proc/$daemon/smaps" |
  sort -rn | sed "s|$PWD/||" | head -n 14 || true

echo
echo "3. system calls a look (perf stat on the syscall tracepoints over 10 s, divided by 10;"
echo "   strace would slow the looks past the 1 s interval, and the loop would then spin, see 4.)"
events=raw_syscalls:sys_enter
for call in openat read close readlinkat getdents64 pread64 poll futex clone3; do
  events+=",syscalls:sys_enter_$call"
done
perf stat -x, -e "$events" -p "$daemon" -- sleep 10 2>&1 |
  awk -F, '$3 ~ /sys_enter/ {sub(/.*sys_enter_?/, "", $3); printf "  %-12s %8.0f\n", ($3 == "" ? "all" : $3), $1 / 10}' || true
kill "$daemon" 2>/dev/null || true
wait "$daemon" 2>/dev/null || true
daemon=""

echo
echo "4. a look that takes longer than the 1 s interval: scenarios/driver-hang.json (GPU 2"
echo "   answers after 60 s; the probe's deadline is 2 s), CPU over 10 s after a 3 s start"
mkdir -p "$work/hang"
env GPUWARDEN_CONFIG="$work/config.toml" "$build/gpuwardend" --no-queue --listen 127.0.0.1:0 \
  --socket "$work/hang.sock" --state-dir "$work/hang" --sim "$PWD/scenarios/driver-hang.json" \
  2>"$work/hang.log" &
daemon=$!
sleep 3
t0=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
sleep 10
t1=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "  %.1f %% of one core\n", 100 * d / hz / 10}'
