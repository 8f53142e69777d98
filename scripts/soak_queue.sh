#!/usr/bin/env bash
# Soak test of the queue's crash safety (not run by CI): gpuwardend is killed
# with SIGKILL KILLS times at random moments while a stream of submits goes on,
# and restarted each time on the same state directory. At the end every job
# that was acknowledged (its `run --detach` printed an id) must have run
# exactly once and be recorded as succeeded.
#
#   scripts/soak_queue.sh [BUILD_DIR] [KILLS]      (default: build/, 100 kills)
#
# Reports kills, acknowledged submits, jobs lost (acknowledged, then never run,
# missing from the daemon's table, or recorded as anything but succeeded) and
# jobs run twice (a job's id written more than once by the job itself), and
# exits 0 only when both are 0. Every job writes its own id when it starts, so
# "ran" is seen by the jobs, not taken from the daemon's word.
#
# The jobs are short (0–0.2 s) and mixed: no GPU, one GPU, one GPU with
# --vram, so kills land in submits, placement, launches, runs and the
# recording of ends, on the simulated server scenarios/queue-two-free.json.
# Environment: GW_SOAK_MAX_GAP_MS (the longest pause between kills, 800),
# GW_SOAK_KEEP=1 (keep the work directory and print it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
kills=${2:-100}
max_gap_ms=${GW_SOAK_MAX_GAP_MS:-800}
case $build in /*) ;; *) build=$PWD/$build ;; esac
gw=$build/gpuwarden
gwd=$build/gpuwardend
for b in "$gw" "$gwd" "$build/gpuwarden-supervise"; do
  [ -x "$b" ] || { echo "soak_queue: $b is missing: build first (cmake --build $build)" >&2; exit 2; }
done
export LC_ALL=C

work=$(mktemp -d /tmp/gw-soak.XXXXXX)
sock=$work/s.sock
state=$work/state
ran=$work/ran          # one line per job start, written by the job: its id
acked=$work/acked      # one line per acknowledged submit: the id it printed
: >"$ran"
: >"$acked"
daemon_pid=
submitter_pid=
cleanup() {
  [ -z "$submitter_pid" ] || kill "$submitter_pid" 2>/dev/null || true
  [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "${GW_SOAK_KEEP:-}" ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

start_daemon() {
  "$gwd" --socket "$sock" --state-dir "$state" --sim scenarios/queue-two-free.json \
    --poll-ms 20 2>>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 400); do
    "$gw" --socket "$sock" queue >/dev/null 2>&1 && return 0
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.02
  done
  echo "soak_queue: gpuwardend did not come up; its log:" >&2
  tail -n 30 "$work/daemon.log" >&2
  exit 1
}

# The stream of submits, until killed: each job writes its id, then sleeps.
submitter() {
  local n=0 kind id
  while :; do
    n=$((n + 1))
    kind=$((n % 3))
    local args=(--gpus 0)
    [ "$kind" -eq 1 ] && args=(--gpus 1)
    [ "$kind" -eq 2 ] && args=(--gpus 1 --vram 10G)
    if id=$("$gw" --socket "$sock" run --detach "${args[@]}" -- /bin/sh -c \
      'echo "$GPUWARDEN_JOB_ID" >>"$0"; sleep "$1"' "$ran" "0.$((RANDOM % 3))" 2>/dev/null); then
      echo "$id" >>"$acked"
    else
      echo x >>"$work/refused"  # the daemon was down or dying: not acknowledged
    fi
    sleep "0.0$((RANDOM % 5))"
  done
}

echo "soak: $kills SIGKILLs of gpuwardend under a stream of submits; $(nproc) cores;" \
  "$(date -u +%Y-%m-%dT%H:%MZ); gpuwarden $("$gw" --version | awk '{print $NF}')"
start_daemon
submitter &
submitter_pid=$!
started=$(date +%s)
for i in $(seq "$kills"); do
  sleep "$(awk -v r="$RANDOM" -v m="$max_gap_ms" 'BEGIN { printf "%.3f", (20 + r % m) / 1000 }')"
  kill -KILL "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=
  # Sometimes straight back, sometimes after a pause in which submits fail.
  [ $((RANDOM % 4)) -eq 0 ] && sleep 0.3
  start_daemon
  [ $((i % 10)) -eq 0 ] && echo "  $i kills, $(wc -l <"$acked") submits acknowledged"
done
kill "$submitter_pid" 2>/dev/null || true
wait "$submitter_pid" 2>/dev/null || true
submitter_pid=
soak_s=$(($(date +%s) - started))

# Every acknowledged job must end; the daemon keeps running undisturbed now.
deadline=$(($(date +%s) + 600))
while :; do
  "$gw" --socket "$sock" jobs --all --json >"$work/jobs.json"
  left=$(python3 -c '
import json, sys
jobs = {j["id"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
acked = [int(l) for l in open(sys.argv[2]) if l.strip()]
print(sum(1 for i in acked if i in jobs and jobs[i]["state"] in ("queued", "starting", "running", "held")))
' "$work/jobs.json" "$acked")
  [ "$left" -eq 0 ] && break
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "soak_queue: $left acknowledged jobs still not ended after 600 s" >&2
    break
  fi
  sleep 0.5
done

python3 - "$work/jobs.json" "$acked" "$ran" "$kills" "$soak_s" "$(wc -l <"$work/refused" 2>/dev/null || echo 0)" <<'EOF'
import collections, json, sys
jobs = {j["id"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
acked = [int(l) for l in open(sys.argv[2]) if l.strip()]
runs = collections.Counter(int(l) for l in open(sys.argv[3]) if l.strip())
kills, soak_s, refused = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
lost = [i for i in acked if i not in jobs or runs[i] == 0 or jobs[i]["state"] != "succeeded"]
twice = sorted(i for i, n in runs.items() if n > 1)
unacked_stored = sorted(set(jobs) - set(acked))
states = collections.Counter(jobs[i]["state"] for i in acked if i in jobs)
print(f"kills: {kills} in {soak_s} s; submits acknowledged: {len(acked)}; refused while the daemon "
      f"was down: {refused}")
print(f"acknowledged jobs by final state: {dict(sorted(states.items()))}")
print(f"stored without an acknowledgement (the daemon died between its commit and its reply): "
      f"{len(unacked_stored)}, of which ran more than once: "
      f"{sum(1 for i in unacked_stored if runs[i] > 1)}")
print(f"jobs lost: {len(lost)}{' ' + str(lost[:20]) if lost else ''}")
print(f"jobs run twice: {len(twice)}{' ' + str(twice[:20]) if twice else ''}")
for i in lost[:5]:
    print("  lost:", json.dumps(jobs.get(i, {"id": i, "state": "missing from the table"}))[:400])
sys.exit(0 if not lost and not twice else 1)
EOF
