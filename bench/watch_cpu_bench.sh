#!/usr/bin/env bash
# Benchmark: CPU use of `gpuwarden watch` at 1 Hz on a simulated 8-GPU,
# 256-process server over SECONDS, side by side in the same run with
#   - the peer gpustat in its own watch mode (`gpustat -i 1`; Debian contrib,
#     fetched into bench/.peers by bench/fetch_peers.sh, not installed), and
#   - the baseline `watch -n 1 gpuwarden status` (procps watch re-running the
#     one-shot view every second).
# nvtop (also Debian contrib) cannot be measured: it needs NVML calls the
# simulator does not export (encoder/decoder utilisation, PCIe throughput)
# and says "No GPU to monitor".
#
# Each tool runs in a 200x60 tmux pane (a real terminal; tmux's own drawing
# is not counted for any of them). 256 real `sleep` processes stand in for
# the GPU processes (bench-8gpu-256proc.json reads their PIDs from
# $GW_BENCH_PID_n), so every row has a user, a command line and a state read
# from /proc. CPU = utime + stime of the tool and of its finished children
# (/proc/PID/stat fields 14-17) over the measured window, after a 5 s
# warm-up, in % of one core. RUNS rounds, tools interleaved; medians and
# ratios printed at the end.
#   bench/watch_cpu_bench.sh [RUNS] [SECONDS] [BUILD_DIR]   (default 3 60 build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
seconds=${2:-60}
build=${3:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gpuwarden gw_nvml_sim >/dev/null
command -v tmux >/dev/null || { echo "tmux is needed (scripts/setup.sh installs it)"; exit 1; }

scenario=$PWD/scenarios/bench-8gpu-256proc.json
work=$(mktemp -d)
sock=gw-watch-bench-$$
pids=()
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true  # The last one's, if interrupted.
  rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/gw-watch-bench-$$"*
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The GPU processes: 256 real processes, their PIDs exported for the scenario.
envs=(LANG=C.UTF-8 TERM=screen GPUWARDEN_CONFIG="$work/config.toml"
      GPUWARDEN_SOCKET="$work/no-daemon.sock" GPUWARDEN_SIM_START="$(date +%s)")
: > "$work/config.toml"
. bench/gpu_processes.sh  # start_gpu_processes
start_gpu_processes 256

tools=("gpuwarden watch")
declare -A cmd
cmd["gpuwarden watch"]="$PWD/$build/gpuwarden --sim $scenario watch -n 1"
cmd["watch -n 1 gpuwarden status"]="/usr/bin/watch -n 1 $PWD/$build/gpuwarden --sim $scenario status"
if bench/fetch_peers.sh >/dev/null 2>&1; then
  tools+=("gpustat -i 1")
  cmd["gpustat -i 1"]="/usr/bin/env PYTHONPATH=$PWD/bench/.peers/root/usr/lib/python3/dist-packages LD_LIBRARY_PATH=$PWD/$build/sim GPUWARDEN_SIM_SCENARIO=$scenario /usr/bin/python3 $PWD/bench/.peers/root/usr/bin/gpustat -i 1 -cupP"
else
  echo "(peer gpustat could not be fetched; measuring gpuwarden alone)"
fi
tools+=("watch -n 1 gpuwarden status")

ticks() {  # utime+stime+cutime+cstime of PID, in clock ticks
  awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"
}
hz=$(getconf CLK_TCK)
declare -A results
echo "scenario: bench-8gpu-256proc.json (256 real processes); $(nproc) cores; ${seconds} s per run;" \
     "$(date -u +%Y-%m-%dT%H:%MZ)"
n=0
for r in $(seq 1 "$runs"); do
  for tool in "${tools[@]}"; do
    # A tmux server of its own each time: a new session must not reach the
    # previous server while it is still shutting down.
    n=$((n + 1))
    sock=gw-watch-bench-$$-$n
    tmux -L "$sock" -f /dev/null new-session -d -s b -x 200 -y 60 \
      "exec /usr/bin/env ${envs[*]} ${cmd[$tool]}"
    pid=$(tmux -L "$sock" display -p -t b '#{pane_pid}')
    sleep 5
    t0=$(ticks "$pid")
    sleep "$seconds"
    t1=$(ticks "$pid")
    tmux -L "$sock" kill-server
    rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"
    pct=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$seconds" 'BEGIN {printf "%.3f", 100 * d / hz / s}')
    results["$tool"]+="$pct "
    printf 'run %d  %-30s %6s %% of one core (%d ticks)\n' "$r" "$tool" "$pct" $((t1 - t0))
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo
printf '%-30s %10s %10s\n' "tool" "median %" "x watch"
base=$(echo "${results["gpuwarden watch"]}" | median)
for tool in "${tools[@]}"; do
  m=$(echo "${results[$tool]}" | median)
  ratio=$(awk -v a="$m" -v b="$base" 'BEGIN {if (b > 0) printf "%.1f", a / b; else print "-"}')
  printf '%-30s %10s %10s\n' "$tool" "$m" "$ratio"
done
