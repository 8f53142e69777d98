#!/usr/bin/env bash
# The fuzz stage of scripts/test.sh: every target runs its seeds and every
# regression input in fuzz/corpus, then mutates for a few seconds. A target
# that crashes, leaks, hangs or breaks an invariant fails the stage.
# Usage: scripts/fuzz_smoke.sh BUILD_DIR [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz_common.sh
build=${1:?usage: scripts/fuzz_smoke.sh BUILD_DIR [SECONDS]}
seconds=${2:-4}
work=$build/fuzz/smoke
parallel=${GW_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}

# One target: its outcome goes to $work/$t.result ("ok N" or "failed").
fuzz_target() {
  local t=$1 dict max_len
  gw_fuzz_seeds "$t" "$work/seeds/$t"
  rm -rf "$work/new/$t" && mkdir -p "$work/new/$t" "$work/artifacts"
  dict=$(gw_fuzz_dict "$t")
  max_len=$(gw_fuzz_max_len "$t")
  # New inputs go to a scratch folder (first), never into the repository's corpus.
  if "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" ${dict:+-dict=$dict} \
      ${max_len:+-max_len=$max_len} \
      "$work/new/$t" "fuzz/corpus/$t" "$work/seeds/$t" >"$work/$t.log" 2>&1; then
    echo "ok $(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/$t.log" | awk '{print $2}')" \
      >"$work/$t.result"
  else
    echo failed >"$work/$t.result"
  fi
}

# Targets run side by side, one per core (a target is one process): the
# stage takes the time of the slowest batch, not of every target in turn.
mkdir -p "$work"
for t in "${GW_FUZZ_TARGETS[@]}"; do
  rm -f "$work/$t.result"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  fuzz_target "$t" &
done
wait

failed=()
for t in "${GW_FUZZ_TARGETS[@]}"; do
  result=$(cat "$work/$t.result" 2>/dev/null || echo failed)
  if [ "${result%% *}" = ok ]; then
    echo "fuzz_$t: ${result#ok } runs"
  else
    echo "fuzz_$t: FAILED (last lines of $work/$t.log):"
    tail -n 30 "$work/$t.log" 2>/dev/null || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz smoke: failed: ${failed[*]}" >&2
  exit 1
fi
