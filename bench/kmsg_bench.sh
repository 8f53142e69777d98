#!/usr/bin/env bash
# Kernel-log benchmark: gpuwarden's NVRM parse of a large kernel log, producing
# JSON events, against `grep -c 'NVRM: Xid' FILE` on the same file, in the same
# run. Prints the median of RUNS runs of each (interleaved, after one warm-up
# run each, page cache warm) and the ratio.
#
#   bench/kmsg_bench.sh [BUILD_DIR] [SIZE_MIB] [RUNS]
#
# BUILD_DIR must hold kmsg_gen and kmsg_events (bench/kmsg.cmake), in
# BUILD_DIR/bench or BUILD_DIR. Defaults: build, 1024 MiB, 5 runs. Until
# `gpuwarden events --kernel-log FILE --json` exists, GW_EVENTS_CMD can name
# another command to time in place of kmsg_events (it gets FILE appended).
# The generated file lives in a temporary directory removed on exit.
set -euo pipefail

build=${1:-build}
size_mib=${2:-1024}
runs=${3:-5}

find_bin() {
  for p in "$build/bench/$1" "$build/$1"; do
    if [ -x "$p" ]; then echo "$p"; return 0; fi
  done
  echo "kmsg_bench: $1 not found under $build (build it: ninja -C $build $1)" >&2
  exit 2
}
gen=$(find_bin kmsg_gen)
if [ -n "${GW_EVENTS_CMD:-}" ]; then
  read -r -a events_cmd <<<"$GW_EVENTS_CMD"
else
  events_cmd=("$(find_bin kmsg_events)")
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kmsg_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log="$tmp/kern.log"

"$gen" "$log" "$size_mib"
bytes=$(stat -c %s "$log")
cat "$log" >/dev/null  # Page cache warm for both contenders.

now_ns() { date +%s%N; }
run_events() { "${events_cmd[@]}" "$log" >"$tmp/events.json" 2>"$tmp/events.err"; }
run_grep() { grep -c 'NVRM: Xid' "$log" >"$tmp/grep.out" || true; }

run_events
run_grep
ours=()
theirs=()
for ((i = 0; i < runs; i++)); do
  t0=$(now_ns); run_events; t1=$(now_ns)
  ours+=($(((t1 - t0) / 1000000)))
  t0=$(now_ns); run_grep; t1=$(now_ns)
  theirs+=($(((t1 - t0) / 1000000)))
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
m_ours=$(median "${ours[@]}")
m_grep=$(median "${theirs[@]}")
# Compact or pretty JSON alike; no match is a count of 0, not a failure.
xid_events=$( (grep -oE '"kind": ?"xid"' "$tmp/events.json" || true) | wc -l)
all_events=$( (grep -oE '"raw": ?"' "$tmp/events.json" || true) | wc -l)

echo "file:            $log ($((bytes >> 20)) MiB, $(wc -l <"$log") lines, deleted on exit)"
echo "gpuwarden parse: median ${m_ours} ms over $runs runs (${ours[*]}) -> $all_events events"
echo "grep -c:         median ${m_grep} ms over $runs runs (${theirs[*]}) -> $(cat "$tmp/grep.out") lines"
echo "xid events:      $xid_events (grep counts lines with 'NVRM: Xid': $(cat "$tmp/grep.out"))"
awk -v a="$m_ours" -v b="$m_grep" 'BEGIN {printf "ratio:           gpuwarden/grep = %.2f (%.0f MiB/s vs %.0f MiB/s)\n", a / b, '"$bytes"' / 1048576 / (a / 1000), '"$bytes"' / 1048576 / (b / 1000)}'
