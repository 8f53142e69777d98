#!/usr/bin/env bash
# Benchmark: gpuwardend as a node's GPU exporter (issue 15; results in
# docs/benchmarks.md section 9), side by side in the same runs with peers.
#
#  (a) CPU and memory of 1-Hz sampling on a simulated 8-GPU, 256-process
#      server: `gpuwardend --no-queue --listen` and `gpuwardend` with its
#      queue, against gpustat in its watch mode (`gpustat -i 1 -cupP` in a
#      200x60 tmux pane, Debian contrib, fetched into bench/.peers by
#      bench/fetch_peers.sh: a Python NVML sampler reading the same scenario
#      through the same simulated library) and, when installed, Prometheus'
#      node exporter (`prometheus-node-exporter`, Debian main, default
#      collectors, not scraped here: a Go exporter's resident memory at rest).
#      dcgm-exporter and nvitop-exporter are not packaged in Debian and need
#      a real driver (DCGM): they cannot be run here.
#      All tools run at once over the same window (so machine load hits them
#      alike), RUNS rounds with fresh processes. CPU = utime + stime (and of
#      finished children) from /proc/PID/stat over SECONDS after a 5 s warm-up,
#      in % of one core; memory = VmRSS, VmHWM and RssAnon from
#      /proc/PID/status at the end of the window.
#  (b) Scrape latency: SCRAPES GETs of /metrics on 127.0.0.1 by one curl
#      (one kept connection, as Prometheus scrapes), median, p99 and the
#      page's size, for gpuwardend and the node exporter; and the CPU the
#      exporter spent on them.
#  (c) The 7-day history query: bench/history_bench.cc fills a history.db as
#      90 days of a daemon leave it (8 GPUs, 12 users) and times the query
#      in-process; then a gpuwardend started on that state directory answers
#      `gpuwarden history --since 7d --json`, `gpuwarden history --since 7d`
#      and `gpuwarden usage --since 7d` (whole client processes, wall time),
#      against Prometheus (Debian main) holding the same 7 days as the series
#      of gpuwardend's page, one sample a minute (promtool tsdb
#      create-blocks-from openmetrics): query_range over 7 d at a 60 s step,
#      and sum_over_time per user for the usage.
#
# The GPU processes of the scenario are 256 real `sleep` processes whose PIDs
# scenarios/bench-8gpu-256proc.json reads from $GW_BENCH_PID_n (as in
# bench/watch_cpu_bench.sh), so every look reads a user, a command line, a
# cgroup and a state from /proc for each.
#
#   bench/fleet_bench.sh [BUILD_DIR] [RUNS] [SECONDS]   (default build 3 60)
#   FLEET_BENCH_SCRAPES=200 FLEET_BENCH_QUERIES=5 to change (b) and (c).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
seconds=${3:-60}
scrapes=${FLEET_BENCH_SCRAPES:-200}
queries=${FLEET_BENCH_QUERIES:-5}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gpuwardend gpuwarden gw_nvml_sim history_bench >/dev/null
for tool in tmux curl; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (scripts/setup.sh installs it)"; exit 1; }
done

scenario=$PWD/scenarios/bench-8gpu-256proc.json
work=$(mktemp -d)
pids=()      # The sleeps.
servers=()   # Daemons and exporters of the current step.
tmux_sock=""
stop_servers() {
  for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${servers[@]}"; do wait "$p" 2>/dev/null || true; done
  servers=()
  if [ -n "$tmux_sock" ]; then
    tmux -L "$tmux_sock" kill-server 2>/dev/null || true
    rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$tmux_sock"
    tmux_sock=""
  fi
}
cleanup() {
  stop_servers
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

envs=(LANG=C.UTF-8 TERM=screen GPUWARDEN_CONFIG="$work/config.toml"
      GPUWARDEN_SIM_START="$(date +%s)")
: > "$work/config.toml"
. bench/gpu_processes.sh  # start_gpu_processes
start_gpu_processes 256

gwd=$PWD/$build/gpuwardend
gw=$PWD/$build/gpuwarden
node_exporter=$(command -v prometheus-node-exporter || true)
have_gpustat=0
if bench/fetch_peers.sh >/dev/null 2>&1; then have_gpustat=1; else
  echo "(peer gpustat could not be fetched; (a) without it)"
fi
hz=$(getconf CLK_TCK)
load() { cut -d' ' -f1-3 /proc/loadavg; }
ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# Waits for a daemon's socket (and, with a log, for its metrics port).
wait_daemon() {  # SOCKET [LOG]
  for _ in $(seq 1 100); do
    if [ -S "$1" ] && { [ -z "${2:-}" ] || grep -q 'metrics on http://' "$2"; }; then return 0; fi
    sleep 0.1
  done
  echo "gpuwardend did not start:"; cat "${2:-/dev/null}"; exit 1
}
metrics_port() { sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$1" | head -n 1; }
median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "-"; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
p99() { sort -g | awk '{a[NR] = $1} END {i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; print a[i]}'; }

# Starts one of the tools of (a) for round N in the background: its PID in
# pid_of[NAME] (and in servers[] when it is this shell's child).
declare -A pid_of
start_tool() {  # NAME N
  local name=$1 n=$2
  case "$name" in
    "gpuwardend --no-queue --listen")
      mkdir -p "$work/nq$n"
      env "${envs[@]}" "$gwd" --no-queue --listen 127.0.0.1:0 --socket "$work/nq$n.sock" \
        --state-dir "$work/nq$n" --sim "$scenario" 2>"$work/nq$n.log" &
      pid_of[$name]=$!
      servers+=($!)
      wait_daemon "$work/nq$n.sock" "$work/nq$n.log"
      ;;
    "gpuwardend (queue)")
      mkdir -p "$work/q$n"
      env "${envs[@]}" "$gwd" --socket "$work/q$n.sock" --state-dir "$work/q$n" \
        --sim "$scenario" 2>"$work/q$n.log" &
      pid_of[$name]=$!
      servers+=($!)
      wait_daemon "$work/q$n.sock"
      ;;
    "gpustat -i 1 -cupP")
      tmux_sock=gw-fleet-bench-$$-$n
      tmux -L "$tmux_sock" -f /dev/null new-session -d -s b -x 200 -y 60 \
        "exec /usr/bin/env ${envs[*]} PYTHONPATH=$PWD/bench/.peers/root/usr/lib/python3/dist-packages LD_LIBRARY_PATH=$PWD/$build/sim GPUWARDEN_SIM_SCENARIO=$scenario /usr/bin/python3 $PWD/bench/.peers/root/usr/bin/gpustat -i 1 -cupP"
      pid_of[$name]=$(tmux -L "$tmux_sock" display -p -t b '#{pane_pid}')
      ;;
    "node exporter (reference)")
      ne_port=$(free_port)
      "$node_exporter" --web.listen-address="127.0.0.1:$ne_port" 2>"$work/ne$n.log" &
      pid_of[$name]=$!
      servers+=($!)
      ;;
  esac
}

tools=("gpuwardend --no-queue --listen" "gpuwardend (queue)")
[ "$have_gpustat" = 1 ] && tools+=("gpustat -i 1 -cupP")
[ -n "$node_exporter" ] && tools+=("node exporter (reference)")

echo "fleet_bench: scenario bench-8gpu-256proc.json (256 real processes); $(nproc) cores;" \
     "$(date -u +%Y-%m-%dT%H:%MZ); commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' + uncommitted src changes')"
echo
echo "(a) 1-Hz sampling, all tools over the same ${seconds} s window after a 5 s warm-up"
declare -A cpu rss hwm anon
for r in $(seq 1 "$runs"); do
  for tool in "${tools[@]}"; do start_tool "$tool" "$r"; done
  sleep 5
  declare -A tick0
  for tool in "${tools[@]}"; do tick0[$tool]=$(ticks "${pid_of[$tool]}"); done
  load0=$(load)
  sleep "$seconds"
  load1=$(load)
  for tool in "${tools[@]}"; do
    p=${pid_of[$tool]}
    d=$(( $(ticks "$p") - ${tick0[$tool]} ))
    pct=$(awk -v d="$d" -v hz="$hz" -v s="$seconds" 'BEGIN {printf "%.3f", 100 * d / hz / s}')
    cpu[$tool]+="$pct "
    rss[$tool]+="$(mib "$(status_kib "$p" VmRSS)") "
    hwm[$tool]+="$(mib "$(status_kib "$p" VmHWM)") "
    anon[$tool]+="$(mib "$(status_kib "$p" RssAnon)") "
    printf 'run %d  %-32s %7s %% of one core (%3d ticks)  VmRSS %6s MiB  VmHWM %6s MiB  RssAnon %6s MiB\n' \
      "$r" "$tool" "$pct" "$d" "$(mib "$(status_kib "$p" VmRSS)")" \
      "$(mib "$(status_kib "$p" VmHWM)")" "$(mib "$(status_kib "$p" RssAnon)")"
  done
  echo "       load average: $load0 at the start, $load1 at the end"
  if [ "$r" != "$runs" ]; then stop_servers; fi
done
echo
printf '%-32s %9s %7s %10s %10s %12s\n' "tool" "median %" "ratio" "VmRSS MiB" "VmHWM MiB" "RssAnon MiB"
base=$(echo "${cpu["gpuwardend --no-queue --listen"]}" | tr ' ' '\n' | grep -v '^$' | median)
for tool in "${tools[@]}"; do
  m=$(echo "${cpu[$tool]}" | tr ' ' '\n' | grep -v '^$' | median)
  ratio=$(awk -v a="$m" -v b="$base" 'BEGIN {if (b > 0) printf "%.1f", a / b; else print "-"}')
  printf '%-32s %9s %7s %10s %10s %12s\n' "$tool" "$m" "$ratio" \
    "$(echo "${rss[$tool]}" | tr ' ' '\n' | grep -v '^$' | median)" \
    "$(echo "${hwm[$tool]}" | tr ' ' '\n' | grep -v '^$' | median)" \
    "$(echo "${anon[$tool]}" | tr ' ' '\n' | grep -v '^$' | median)"
done

echo
echo "(b) scrape latency: $scrapes GETs of /metrics over one connection (the last round's exporters)"
scrape() {  # NAME PID URL
  local name=$1 pid=$2 url=$3 args=() t0 t1
  for _ in $(seq 1 "$scrapes"); do args+=(-o /dev/null "$url"); done
  curl -s -o "$work/page" "$url"
  t0=$(ticks "$pid")
  curl -s -w '%{time_total} %{size_download} %{num_connects}\n' "${args[@]}" >"$work/scrapes"
  t1=$(ticks "$pid")
  local med p conns
  med=$(awk '{print $1 * 1000}' "$work/scrapes" | median)
  p=$(awk '{print $1 * 1000}' "$work/scrapes" | p99)
  conns=$(awk '{n += $3} END {print n}' "$work/scrapes")
  printf '%-32s median %7.3f ms  p99 %7.3f ms  page %7d bytes, %5d samples  CPU %.2f ms a scrape  (%d connection(s); load %s)\n' \
    "$name" "$med" "$p" "$(stat -c %s "$work/page")" "$(grep -vc '^#' "$work/page")" \
    "$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$scrapes" 'BEGIN {print 1000 * d / hz / n}')" \
    "$conns" "$(load)"
}
memory() {  # PID
  printf 'VmRSS %s MiB, VmHWM %s MiB, RssAnon %s MiB' "$(mib "$(status_kib "$1" VmRSS)")" \
    "$(mib "$(status_kib "$1" VmHWM)")" "$(mib "$(status_kib "$1" RssAnon)")"
}
nq_port=$(metrics_port "$work/nq$runs.log")
for rep in 1 2; do
  scrape "gpuwardend --no-queue --listen" "${pid_of["gpuwardend --no-queue --listen"]}" \
    "http://127.0.0.1:$nq_port/metrics"
  if [ -n "$node_exporter" ]; then
    scrape "node exporter (reference)" "${pid_of["node exporter (reference)"]}" \
      "http://127.0.0.1:$ne_port/metrics"
  fi
done
echo "after the scrapes: gpuwardend $(memory "${pid_of["gpuwardend --no-queue --listen"]}")"
[ -n "$node_exporter" ] && echo "                   node exporter $(memory "${pid_of["node exporter (reference)"]}")"
stop_servers

echo
echo "(c) the 7-day history query"
hist=$work/hist
mkdir -p "$hist"
end=$(date +%s)
"$build/bench/history_bench" --db "$hist/history.db" --end "$end" --openmetrics "$work/week.om" \
  --reps 15
t0=$EPOCHREALTIME
env "${envs[@]}" "$gwd" --no-queue --listen 127.0.0.1:0 --socket "$work/h.sock" \
  --state-dir "$hist" --sim "$scenario" 2>"$work/h.log" &
hist_daemon=$!
servers+=($!)
wait_daemon "$work/h.sock" "$work/h.log"
echo "gpuwardend on that state directory: socket up after" \
     "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.0f", (b - a) * 1000}') ms;" \
     "$(memory "$hist_daemon")"
have_prometheus=0
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  have_prometheus=1
  t0=$EPOCHREALTIME
  promtool tsdb create-blocks-from openmetrics "$work/week.om" "$work/prom" >/dev/null
  import_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
  prom_port=$(free_port)
  printf 'global:\n  scrape_interval: 1m\n' >"$work/prom.yml"
  prometheus --config.file="$work/prom.yml" --storage.tsdb.path="$work/prom" \
    --storage.tsdb.retention.time=30d --web.listen-address="127.0.0.1:$prom_port" \
    --log.level=warn 2>"$work/prom.log" &
  prom_pid=$!
  servers+=($!)
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null 2>&1 && break
    sleep 0.1
  done
  # The import gives 2-hour blocks; Prometheus compacts them into larger
  # ones a minute after it starts (as a long-running one holds them): wait
  # for that, so that neither the compaction's CPU nor 84 small blocks are
  # in the figures.
  prom_metric() {
    curl -sf "http://127.0.0.1:$prom_port/metrics" | awk -v m="$1" '$1 == m {print $2}'
  }
  blocks0=$(prom_metric prometheus_tsdb_blocks_loaded)
  last=""; same=0
  for _ in $(seq 1 180); do
    sleep 1
    now_blocks=$(prom_metric prometheus_tsdb_blocks_loaded)
    if [ "$(prom_metric prometheus_tsdb_compactions_total)" != 0 ] && [ "$now_blocks" = "$last" ]; then
      same=$((same + 1)); [ "$same" -ge 5 ] && break
    else
      same=0
    fi
    last=$now_blocks
  done
  echo "Prometheus $(prometheus --version 2>&1 | awk 'NR == 1 {print $3}'): $(du -sm "$work/prom" | cut -f1) MB of blocks" \
       "($blocks0 blocks imported in ${import_s} s from $(du -m "$work/week.om" | cut -f1) MB of OpenMetrics," \
       "$last after its compaction)"
else
  echo "(prometheus/promtool not installed: gpuwarden alone)"
fi
# A command's wall time in ms, its output's size in *size.
timed() {  # OUTFILE CMD...
  local out=$1 t0
  shift
  t0=$EPOCHREALTIME
  "$@" >"$out"
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f\n", (b - a) * 1000}'
}
prom_range='{__name__=~"DCGM_FI_DEV_(GPU_UTIL|FB_USED|FB_TOTAL|POWER_USAGE|GPU_TEMP)|gpuwarden_user_.*"} or gpuwarden_gpu_state == 1'
prom_query() {  # extra curl arguments...
  curl -sf -G "http://127.0.0.1:$prom_port/api/v1/$1" "${@:2}"
}
prom_usage() {
  for m in gpuwarden_user_gpus gpuwarden_user_idle_gpus gpuwarden_user_memory_bytes \
           gpuwarden_user_idle_memory_bytes; do
    prom_query query --data-urlencode "query=sum_over_time(${m}[7d]) * 60 / 3600" \
      --data-urlencode "time=$end"
  done
}
declare -A qt qsize
cases=("gpuwarden history --since 7d --json" "gpuwarden history --since 7d"
       "gpuwarden usage --since 7d")
[ "$have_prometheus" = 1 ] && cases+=("Prometheus query_range 7d, 60 s" \
                                      "Prometheus sum_over_time 7d (4 queries)")
run_case() {
  case "$1" in
    "gpuwarden history --since 7d --json") timed "$work/out" "$gw" --socket "$work/h.sock" history --since 7d --json ;;
    "gpuwarden history --since 7d") timed "$work/out" "$gw" --socket "$work/h.sock" history --since 7d ;;
    "gpuwarden usage --since 7d") timed "$work/out" "$gw" --socket "$work/h.sock" usage --since 7d ;;
    "Prometheus query_range 7d, 60 s")
      timed "$work/out" prom_query query_range --data-urlencode "query=$prom_range" \
        --data-urlencode "start=$((end - 7 * 86400))" --data-urlencode "end=$end" \
        --data-urlencode step=60 ;;
    "Prometheus sum_over_time 7d (4 queries)") timed "$work/out" prom_usage ;;
  esac
}
for c in "${cases[@]}"; do run_case "$c" >/dev/null; done  # Warm: first reads of the files.
for q in $(seq 1 "$queries"); do
  for c in "${cases[@]}"; do
    qt[$c]+="$(run_case "$c") "
    qsize[$c]=$(stat -c %s "$work/out")
  done
done
printf '%-42s %10s %10s %12s\n' "query ($queries runs each, interleaved; load $(load))" "median ms" "min ms" "output bytes"
for c in "${cases[@]}"; do
  printf '%-42s %10s %10s %12s\n' "$c" "$(echo "${qt[$c]}" | tr ' ' '\n' | grep -v '^$' | median)" \
    "$(echo "${qt[$c]}" | tr ' ' '\n' | grep -v '^$' | sort -g | head -n 1)" "${qsize[$c]}"
done
echo "after the queries: gpuwardend $(memory "$hist_daemon")"
[ "$have_prometheus" = 1 ] && echo "                   Prometheus $(memory "$prom_pid")"
exit 0
