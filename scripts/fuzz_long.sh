#!/usr/bin/env bash
# The long fuzz runs behind docs/reliability.md's table: each target, one at a
# time in one process (no -jobs: libFuzzer would fork workers) and at the
# lowest priority (the machine is shared), for RUNS executions
# or MAX_SECONDS, whichever ends first, on a corpus kept between runs in
# BUILD_DIR/fuzz/corpus/TARGET. Each run appends one line to
# BUILD_DIR/fuzz/long-runs.tsv: date, target, executions, seconds, executions
# per second, cov (edges), ft (features), corpus size, crashes, exit status.
# A crash stops that target's run; its input is in BUILD_DIR/fuzz/artifacts.
# ASan keeps no allocation stacks here (malloc_context_size=0): recording one
# at every malloc and free cost about a third of the executions of the
# allocating targets. A crash's input is kept; run the target on it alone for
# the whole report. NICE (default 19) is the runs' priority, both as the
# process's nice value and as its session's autogroup's: where the kernel
# groups processes by session (sched_autogroup), nice alone only ranks a
# process within its own session, and the fuzzer would still take a full share
# of the cores from a build started elsewhere.
# Usage: RUNS=10000000 MAX_SECONDS=3600 scripts/fuzz_long.sh BUILD_DIR [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz_common.sh
build=${1:?usage: scripts/fuzz_long.sh BUILD_DIR [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${GW_FUZZ_TARGETS[@]}")
runs=${RUNS:-10000000}
max_seconds=${MAX_SECONDS:-0}
niceness=${NICE:-19}
# Runs "$@" at the runs' priority in a session of its own, whose autogroup
# takes the same nice value (raising it needs no privilege), and waits for it.
# An interrupt of the script stops it too.
run_low() {
  setsid bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' \
    "$niceness" "$@" &
  local child=$!
  trap 'kill -TERM "$child" 2>/dev/null; exit 130' INT TERM
  wait "$child"
  local status=$?
  trap - INT TERM
  return $status
}
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}
out=$build/fuzz
results=$out/long-runs.tsv
[ -f "$results" ] || printf 'date\ttarget\texecs\tseconds\texecs_per_s\tcov\tft\tcorpus\tcrashes\tstatus\n' >"$results"
for t in "${targets[@]}"; do
  gw_fuzz_seeds "$t" "$out/seeds/$t"
  mkdir -p "$out/corpus/$t" "$out/artifacts"
  dict=$(gw_fuzz_dict "$t")
  max_len=$(gw_fuzz_max_len "$t")
  log=$out/long-$t${GW_FUZZ_JOB:+-$GW_FUZZ_JOB}.log  # GW_FUZZ_JOB: runs of one target side by side
  before=$(ls "$out/artifacts" | grep -c "^$t-" || true)
  start=$(date +%s)
  run_low "$out/fuzz_$t" -runs="$runs" -max_total_time="$max_seconds" -timeout=20 \
    -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
    ${dict:+-dict=$dict} ${max_len:+-max_len=$max_len} \
    "$out/corpus/$t" "fuzz/corpus/$t" "$out/seeds/$t" >"$log" 2>&1
  status=$?
  seconds=$(($(date +%s) - start))
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  # The last status line ("#N DONE cov: C ft: F corp: K/..." or the last pulse).
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | awk '{print $2}')
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | awk '{print $2}')
  corp=$(echo "$last" | grep -o 'corp: [0-9]*' | awk '{print $2}')
  after=$(ls "$out/artifacts" | grep -c "^$t-" || true)
  [ -z "$execs" ] && execs=$(echo "$last" | grep -o '^#[0-9]*' | tr -d '#')
  rate=$(( ${execs:-0} / (seconds > 0 ? seconds : 1) ))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "${execs:-0}" \
    "$seconds" "$rate" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$((after - before))" "$status" | tee -a "$results"
done
