#!/usr/bin/env bash
# Benchmark: the GPU queue (gpuwardend + `gpuwarden run`) against the peer
# task-spooler (`tsp`, Debian package task-spooler), side by side in the same run.
#   bench/queue_bench.sh [BUILD_DIR] [RUNS]   (default: build-bench/, 5 runs)
#
# 1. Submit, COUNT (1,000) jobs, each submit a new process as from a shell,
#    `gpuwarden run --detach --gpus 0 -- /bin/true` and `tsp /bin/true`
#    interleaved one by one: (a) every job runs as it comes (tsp: one slot, its
#    default); (b) both queues held, so only submitting is timed (tsp's slot
#    taken by a long job, gpuwarden's jobs given a closed --window; at most 900:
#    tsp cannot hold 1,000 waiting jobs). (c) One protocol connection sending
#    COUNT `submit` requests back to back (tsp has no equivalent), jobs held,
#    then jobs starting as they come. Also the daemon's CPU while jobs wait.
# 2. Hand-over: a chain of jobs that each take 70,000 MiB of a single 80 GiB GPU
#    (`--vram 70G`) for HOLD_S, so only one fits at a time; the gap between one
#    job's end and the next one's start, from timestamps the jobs write themselves
#    (`date +%s%N`). The same jobs under `tsp -S 1`. Chains alternate per run.
# 3. A GPU freed by someone else: a process outside the queue holds the GPU, a
#    queued job waits for it; the holder is killed; time until the job starts.
#    gpuwarden only: task-spooler has no notion of GPU memory.
#
# Environment: GW_BENCH_SUBMITS (1000), GW_BENCH_HELD_SUBMITS (900), GW_BENCH_CHAIN
# (transitions per run, 10), GW_BENCH_HOLD_S (how long each chain job holds the GPU,
# 0.3), GW_BENCH_POLL_MS (the daemon's --poll-ms, 20), GW_BENCH_NO_BUILD=1 (use the
# binaries already in BUILD_DIR), GW_BENCH_PARTS (which parts: "submit handover", both).
# Needs task-spooler: installed with apt-get when missing (root), or set GW_TSP.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
runs=${2:-5}
count=${GW_BENCH_SUBMITS:-1000}
held_count=${GW_BENCH_HELD_SUBMITS:-$(( count < 900 ? count : 900 ))}
chain=${GW_BENCH_CHAIN:-10}
hold_s=${GW_BENCH_HOLD_S:-0.3}
poll_ms=${GW_BENCH_POLL_MS:-20}
parts=${GW_BENCH_PARTS:-submit handover}
want() { [[ " $parts " == *" $1 "* ]]; }
export LC_ALL=C

if [ -z "${GW_BENCH_NO_BUILD:-}" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" --target gpuwarden gpuwardend gpuwarden-supervise gw_nvml_sim \
    queue_submit_bench >/dev/null
fi
case $build in /*) ;; *) build=$PWD/$build ;; esac

tsp=${GW_TSP:-$(command -v tsp || true)}
if [ -z "$tsp" ]; then
  echo "(task-spooler missing: apt-get install -y task-spooler)"
  apt-get install -y task-spooler >/dev/null
  tsp=$(command -v tsp)
fi

gw=$build/gpuwarden
gwd=$build/gpuwardend
driver=$build/bench/queue_submit_bench
work=$(mktemp -d /tmp/gw-queue-bench.XXXXXX)
daemon_pid=
tsp_socket=
holder_pid=

# Ends what this script started, by PID: the daemon, the tsp server (-K) and any
# tsp client still waiting on that socket, a holder process.
stop_tsp() {
  [ -n "$tsp_socket" ] || return 0
  TS_SOCKET=$tsp_socket "$tsp" -K >/dev/null 2>&1 || true
  for p in $(pgrep -x tsp || true); do
    if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "TS_SOCKET=$tsp_socket"; then
      kill "$p" 2>/dev/null || true
    fi
  done
  tsp_socket=
}
stop_daemon() {
  [ -n "$daemon_pid" ] || return 0
  kill "$daemon_pid" 2>/dev/null || true
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=
}
cleanup() {
  [ -z "$holder_pid" ] || kill "$holder_pid" 2>/dev/null || true
  stop_daemon
  stop_tsp
  rm -rf "$work"
}
trap cleanup EXIT

# start_daemon DIR SCENARIO: a fresh gpuwardend with its own socket and state.
start_daemon() {
  local dir=$1 scenario=$2
  mkdir -p "$dir"
  "$gwd" --socket "$dir/s.sock" --state-dir "$dir/state" --sim "$scenario" --poll-ms "$poll_ms" \
    2>>"$dir/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 200); do
    "$gw" --socket "$dir/s.sock" queue >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "gpuwardend did not start:" >&2
  cat "$dir/daemon.log" >&2
  exit 1
}
# start_tsp DIR: a fresh task-spooler server with one slot, its own socket.
start_tsp() {
  mkdir -p "$1/tmp"
  tsp_socket=$1/ts.sock
  export TS_SOCKET=$tsp_socket TMPDIR=$1/tmp
  "$tsp" -S 1
}

# A daily window that is closed for the next 12 hours: jobs given it wait.
closed_window() {
  local h=$(( (10#$(date +%H) + 12) % 24 ))
  printf '%02d:00-%02d:01' "$h" "$h"
}

# stats FILE: n, median, p90, p99 (nearest rank), max of one number per line.
stats() {
  sort -g "$1" | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "n=0"; exit }
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    p90 = v[int(0.90 * NR + 0.999999)]; p99 = v[int(0.99 * NR + 0.999999)]
    printf "n=%d median=%.1f p90=%.1f p99=%.1f min=%.1f max=%.1f\n", NR, m, p90, p99, v[1], v[NR] }'
}
# cpu_pct PID SECONDS: the CPU PID uses (all its threads) over SECONDS, in % of one core.
cpu_pct() {
  local hz a b
  hz=$(getconf CLK_TCK)
  a=$(awk '{ print $14 + $15 }' "/proc/$1/stat")
  sleep "$2"
  b=$(awk '{ print $14 + $15 }' "/proc/$1/stat")
  awk -v a="$a" -v b="$b" -v hz="$hz" -v s="$2" 'BEGIN { printf "%.1f", 100 * (b - a) / hz / s }'
}
# median of one number per line on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field KEY: the value of KEY=... in each line of stdin
field() { grep -o "$1=[^ ]*" | cut -d= -f2; }

# wait_lines FILE PATTERN N TIMEOUT_S: until FILE has N lines matching PATTERN.
wait_lines() {
  local deadline=$(( $(date +%s) + $4 ))
  local n
  for (( ; ; )); do
    n=$(grep -c "$2" "$1" 2>/dev/null) || true  # no file yet: nothing
    [ "${n:-0}" -lt "$3" ] || break
    if [ "$(date +%s)" -gt "$deadline" ]; then
      echo "timed out waiting for $3 \"$2\" lines in $1" >&2
      return 1
    fi
    sleep 0.02
  done
}

# gaps LOG: from a log of alternating "start NS" / "end NS" lines of jobs that
# ran one after another, the ms from each end to the next start.
gaps() {
  awk '$1 == "end" { e = $2 } $1 == "start" && e { printf "%.3f\n", ($2 - e) / 1e6; e = 0 }' "$1"
}

# The job of the chain and of the hand-over: takes 70,000 MiB of the GPU given
# (the simulator's registry: a file named by the PID), holds it, ends.
cat >"$work/job.sh" <<'EOF'
#!/bin/sh
# job.sh LOG REGISTRY_DIR GPU_UUID HOLD_S
echo "start $(date +%s%N)" >>"$1"
echo "$3 70000" >"$2/$$"
sleep "$4"
echo "end $(date +%s%N)" >>"$1"
EOF

# One idle 80 GiB GPU (the first GPU of scenarios/healthy-idle.json, made 80 GiB).
python3 - "$work/one-gpu.json" <<'EOF'
import json, sys
d = json.load(open("scenarios/healthy-idle.json"))
d["name"] = "bench-1gpu-80g"
d["description"] = "One idle 80 GiB GPU for the queue hand-over benchmark."
d["defaults"]["name"] = "NVIDIA A100-SXM4-80GB"
d["defaults"]["memory"]["total_mib"] = 81920
gpu = dict(d["gpus"][0]); gpu.pop("nvlinks", None)
d["gpus"] = [gpu]
d.pop("topology", None)
json.dump(d, open(sys.argv[1], "w"), indent=1)
EOF
uuid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"][0]["uuid"])' "$work/one-gpu.json")

echo "gpuwarden $("$gw" --version | awk '{print $NF}'); task-spooler $("$tsp" -V 2>&1 | head -1)"
echo "$(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# What one synchronous 4 KiB write costs on the disk under the state directory:
# every submit waits for one (SQLite, synchronous=FULL).
sync_ms=$(dd if=/dev/zero of="$work/sync-probe" bs=4k count=100 oflag=dsync 2>&1 |
  awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print $(i - 1) * 10 }')
echo "$(free -g | awk '/^Mem:/ { print $2 }') GiB memory; one 4 KiB O_DSYNC write on $(df --output=source "$work" | tail -1): ${sync_ms} ms"
echo "runs: $runs; submits per run: $count; chain transitions per run: $chain; hold ${hold_s}s; --poll-ms $poll_ms"

# --- 1. Submit ----------------------------------------------------------------
: >"$work/spawn.txt"
: >"$work/spawn-held.txt"
: >"$work/protocol-held.txt"
: >"$work/protocol-run.txt"
: >"$work/cpu-held.txt"
: >"$work/cpu-one.txt"
for r in $(seq "$runs"); do
  want submit || break
  # a. Every job runs as it comes: gpuwarden's --gpus 0 jobs at once, tsp's
  #    one at a time in its one slot.
  d=$work/submit-$r
  start_daemon "$d" scenarios/bench-8gpu-64proc.json
  start_tsp "$d"
  "$driver" spawn --count 3 --name gw -- "$gw" --socket "$d/s.sock" run --detach --gpus 0 -- /bin/true \
    --name tsp -- "$tsp" /bin/true >/dev/null
  "$driver" spawn --count "$count" \
    --name gpuwarden -- "$gw" --socket "$d/s.sock" run --detach --gpus 0 -- /bin/true \
    --name tsp -- "$tsp" /bin/true | sed "s/^/run=$r /" | tee -a "$work/spawn.txt"
  # Both queues must run every job (counted by the driver's one `jobs` call
  # per look; tsp keeps only the last 1,000 finished jobs).
  for _ in $(seq 1200); do
    states=$("$driver" states --socket "$d/s.sock")
    tsp_left=$("$tsp" -l | grep -cE ' (queued|running|allocating) ' || true)
    if ! grep -qE ' (queued|starting|running)=' <<<"$states" && [ "$tsp_left" -eq 0 ]; then break; fi
    sleep 0.1
  done
  echo "run=$r after the submits: gpuwarden $states; tsp: $tsp_left waiting or running," \
    "$("$tsp" -l | awk '$2 == "finished" && $4 != 0' | wc -l) of the last $("$tsp" -l | grep -c ' finished ') finished failed"
  stop_tsp
  stop_daemon

  # b. Both queues held, so that only submitting is timed: tsp's one slot taken
  #    by a long job, gpuwarden's jobs given a closed --window. At most
  #    $held_count: tsp keeps a client process and a connection for every waiting
  #    job and its server accepts at most 1,000 connections.
  d=$work/submit-held-$r
  start_daemon "$d" scenarios/bench-8gpu-64proc.json
  start_tsp "$d"
  blocker=$("$tsp" sleep 100000)
  window=$(closed_window)
  "$driver" spawn --count "$held_count" \
    --name gpuwarden -- "$gw" --socket "$d/s.sock" run --detach --gpus 0 --window "$window" -- /bin/true \
    --name tsp -- "$tsp" /bin/true | sed "s/^/run=$r held /" | tee -a "$work/spawn-held.txt"
  echo "run=$r held: gpuwarden $("$driver" states --socket "$d/s.sock"); tsp waiting: $("$tsp" -l | grep -c ' queued ')"
  kill "$("$tsp" -p "$blocker")" 2>/dev/null || true
  stop_tsp
  stop_daemon

  # c. One protocol connection, COUNT submits back to back: held, then starting.
  d=$work/protocol-$r
  start_daemon "$d" scenarios/bench-8gpu-64proc.json
  "$driver" protocol --socket "$d/s.sock" --count "$count" --window "$(closed_window)" |
    sed "s/^/run=$r held /" | tee -a "$work/protocol-held.txt"
  # What the daemon costs while those jobs wait (it reads the GPUs every --poll-ms).
  echo "$(cpu_pct "$daemon_pid" 5)" >>"$work/cpu-held.txt"
  echo "run=$r daemon CPU with $count jobs waiting: $(tail -1 "$work/cpu-held.txt") % of a core"
  stop_daemon
  d=$work/protocol-run-$r
  start_daemon "$d" scenarios/bench-8gpu-64proc.json
  "$driver" protocol --socket "$d/s.sock" --count "$count" |
    sed "s/^/run=$r starting /" | tee -a "$work/protocol-run.txt"
  stop_daemon
done

# --- 2. Hand-over along a chain, and 3. a GPU freed by someone else -----------
: >"$work/gaps-gw.txt"
: >"$work/gaps-tsp.txt"
: >"$work/freed-gw.txt"
: >"$work/split-gw.txt"
gpu_chain() {
  local d=$1
  for _ in $(seq 0 "$chain"); do
    "$gw" --socket "$d/s.sock" run --detach --gpus 1 --vram 70G -- \
      /bin/sh "$work/job.sh" "$d/gw.log" "$d/reg" "$uuid" "$hold_s" >/dev/null
  done
  wait_lines "$d/gw.log" '^end' $((chain + 1)) 300
  gaps "$d/gw.log" | tee -a "$work/gaps-gw.txt" >/dev/null
  # Where each gap goes, from the daemon's own times (ms): the job's last
  # timestamp → its end as the supervisor recorded it → the daemon starting
  # the next job → that job's first timestamp.
  sleep 0.2
  "$gw" --socket "$d/s.sock" jobs --json | python3 -c '
import json, sys
jobs = sorted((j for j in json.load(sys.stdin)["jobs"] if j["gpus"] == 1), key=lambda j: j["id"])
log = [l.split() for l in open(sys.argv[1])]
starts = [int(v) / 1e6 for k, v in log if k == "start"]
ends = [int(v) / 1e6 for k, v in log if k == "end"]
for k in range(len(jobs) - 1):
    a, b = jobs[k], jobs[k + 1]
    print("%.1f %.1f %.1f" % (a["end_unix_ms"] - ends[k], b["start_unix_ms"] - a["end_unix_ms"],
                              starts[k + 1] - b["start_unix_ms"]))
' "$d/gw.log" >>"$work/split-gw.txt"
}
tsp_chain() {
  local d=$1
  start_tsp "$d"
  for _ in $(seq 0 "$chain"); do
    "$tsp" /bin/sh "$work/job.sh" "$d/tsp.log" "$d/reg" "$uuid" "$hold_s" >/dev/null
  done
  wait_lines "$d/tsp.log" '^end' $((chain + 1)) 300
  gaps "$d/tsp.log" | tee -a "$work/gaps-tsp.txt" >/dev/null
  stop_tsp
}
for r in $(seq "$runs"); do
  want handover || break
  d=$work/chain-$r
  mkdir -p "$d/reg"
  export GPUWARDEN_SIM_PROCESS_DIR=$d/reg
  start_daemon "$d" "$work/one-gpu.json"
  if [ $((r % 2)) -eq 1 ]; then gpu_chain "$d"; tsp_chain "$d"; else tsp_chain "$d"; gpu_chain "$d"; fi
  echo "run=$r hand-over gpuwarden: $(tail -n "$chain" "$work/gaps-gw.txt" | stats /dev/stdin)"
  echo "run=$r hand-over tsp:       $(tail -n "$chain" "$work/gaps-tsp.txt" | stats /dev/stdin)"

  # A waiting job that never starts keeps the daemon reading the GPUs every
  # --poll-ms, as on a server with a queue; the holder is then seen in time.
  "$gw" --socket "$d/s.sock" run --detach --gpus 0 --window "$(closed_window)" -- /bin/true >/dev/null
  echo "$(cpu_pct "$daemon_pid" 5)" >>"$work/cpu-one.txt"
  echo "run=$r daemon CPU with 1 job waiting: $(tail -1 "$work/cpu-one.txt") % of a core"
  : >"$d/freed.log"
  for i in $(seq "$chain"); do
    sleep 600 &
    holder_pid=$!
    echo "$uuid 70000" >"$d/reg/$holder_pid"
    sleep "$(awk -v p="$poll_ms" 'BEGIN { print p < 50 ? 0.5 : 10 * p / 1000 }')"  # many GPU reads
    job=$("$gw" --socket "$d/s.sock" run --detach --gpus 1 --vram 70G -- \
      /bin/sh "$work/job.sh" "$d/freed.log" "$d/reg" "$uuid" 0)
    # The job must be waiting for the holder before the holder goes.
    waiting=
    for _ in $(seq 100); do
      if "$gw" --socket "$d/s.sock" queue --json | tr -d ' \n' |
        grep -q "\"id\":$job,[^}]*\"state\":\"queued\""; then
        waiting=1
        break
      fi
      sleep 0.02
    done
    [ "$(grep -c '^start' "$d/freed.log")" -lt "$i" ] || waiting=
    t_kill=${EPOCHREALTIME/./}
    kill "$holder_pid"
    wait "$holder_pid" 2>/dev/null || true
    holder_pid=
    wait_lines "$d/freed.log" '^end' "$i" 60
    if [ -z "$waiting" ]; then
      echo "run=$r: job $job did not wait for the holder; sample skipped" >&2
      continue
    fi
    start_ns=$(grep '^start' "$d/freed.log" | tail -1 | cut -d' ' -f2)
    awk -v s="$start_ns" -v k="$t_kill" 'BEGIN { printf "%.3f\n", (s - k * 1000) / 1e6 }' \
      >>"$work/freed-gw.txt"
  done
  echo "run=$r freed by a non-queue process, gpuwarden: $(tail -n "$chain" "$work/freed-gw.txt" | stats /dev/stdin)"
  stop_daemon
  unset GPUWARDEN_SIM_PROCESS_DIR
done

if TS_SOCKET=$work/g.sock "$tsp" -G 1 /bin/true >/dev/null 2>&1; then
  tsp_gpu="tsp accepted -G (not measured here)"
else
  tsp_gpu="tsp -G: not supported by this task-spooler ($("$tsp" -V 2>&1 | head -1)): no GPU notion, gpuwarden alone"
fi
TS_SOCKET=$work/g.sock "$tsp" -K >/dev/null 2>&1 || true

# --- Summary -------------------------------------------------------------------
echo
echo "== Summary: medians over $runs runs; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# spawn_summary FILE LABEL N: medians over the runs of each tool's line.
spawn_summary() {
  local v lines total
  for v in gpuwarden tsp; do
    lines=$(grep " name=$v " "$1")
    total=$(field total_ms <<<"$lines" | median)
    printf '%-44s total %8.0f ms  per submit median %6.2f ms  p99 %6.2f ms  (%s/s)  failed %s\n' \
      "submit ×$3, $2, $v" "$total" "$(field median_ms <<<"$lines" | median)" \
      "$(field p99_ms <<<"$lines" | median)" \
      "$(awk -v t="$total" -v n="$3" 'BEGIN { printf "%.0f", n / (t / 1000) }')" \
      "$(field fail <<<"$lines" | awk '{ s += $1 } END { print s + 0 }')"
  done
  echo "  ratio gpuwarden / tsp: total $(awk -v a="$(grep ' name=gpuwarden ' "$1" | field total_ms | median)" \
    -v b="$(grep ' name=tsp ' "$1" | field total_ms | median)" 'BEGIN { printf "%.2f", a / b }'), median $(
    awk -v a="$(grep ' name=gpuwarden ' "$1" | field median_ms | median)" \
    -v b="$(grep ' name=tsp ' "$1" | field median_ms | median)" 'BEGIN { printf "%.2f", a / b }')"
}
if want submit; then
spawn_summary "$work/spawn.txt" "jobs run" "$count"
spawn_summary "$work/spawn-held.txt" "held" "$held_count"
for f in held run; do
  lines=$(cat "$work/protocol-$f.txt")
  printf '%-40s total %8.0f ms  per submit median %6.3f ms  p99 %6.3f ms  (%s/s)\n' \
    "protocol ×$count, jobs ${f/run/starting}" \
    "$(field wall_ms <<<"$lines" | median)" "$(field median_ms <<<"$lines" | median)" \
    "$(field p99_ms <<<"$lines" | median)" "$(field rate_per_s <<<"$lines" | median)"
done
fi
want handover || exit 0
echo "hand-over, end → next start, gpuwarden (ms): $(stats "$work/gaps-gw.txt")"
echo "hand-over, end → next start, tsp -S 1 (ms):  $(stats "$work/gaps-tsp.txt")"
echo "ratio of medians (gpuwarden / tsp): $(awk -v a="$(median <"$work/gaps-gw.txt")" \
  -v b="$(median <"$work/gaps-tsp.txt")" 'BEGIN { printf "%.1f", a / b }')"
echo "  of which (medians, ms): job's end → supervisor records it $(cut -d' ' -f1 "$work/split-gw.txt" | median);" \
  "→ daemon starts the next $(cut -d' ' -f2 "$work/split-gw.txt" | median);" \
  "→ next job's first timestamp $(cut -d' ' -f3 "$work/split-gw.txt" | median) (ms resolution)"
echo "daemon CPU while jobs wait (--poll-ms $poll_ms), % of one core: 1 job $(median <"$work/cpu-one.txt")$(want submit && echo ", $count jobs $(median <"$work/cpu-held.txt")")"
echo "GPU freed by a non-queue process → waiting job starts, gpuwarden (ms): $(stats "$work/freed-gw.txt")"
echo "$tsp_gpu"
