#!/usr/bin/env bash
# Sets up, builds and runs every test: once as a normal build (GCC) and once
# under AddressSanitizer + UndefinedBehaviorSanitizer (clang, the tree that also
# builds the fuzz targets), then the fuzz smoke stage. Exits non-zero on any
# failure. Each stage's time is printed (docs/benchmarks.md, §11).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
# One compiler cache for every clone on this machine: paths are hashed relative to the
# clone, so CI's fresh clone reuses what a developer built here.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
jobs=$(nproc 2>/dev/null || echo 2)
# Tests run several per core: most of them wait on processes, sockets and
# servers (Slurm's e2e alone holds a slot for minutes while using a few
# seconds of CPU), so one per core leaves the cores idle. Three per core for
# the plain tree, two for the sanitized one, whose processes cost about three
# times the CPU: at three per core there, daemons' first looks missed their
# deadlines (docs/benchmarks.md, §11).
plain_test_jobs=${GW_TEST_JOBS:-$((jobs * 3))}
sanitized_test_jobs=${GW_TEST_JOBS:-$((jobs * 2))}

# After a failure, what failed and why once more at the very end, where the tail
# of a long log (all that CI shows) has it: each failed test, then each
# assertion that failed and each sanitizer report, with the lines after it.
summarise_failures() {
  local tmp=$1/Testing/Temporary
  [ -f "$tmp/LastTestsFailed.log" ] || return 0
  echo "== failed in $1:"
  sed 's/^[0-9]*:/  /' "$tmp/LastTestsFailed.log"
  grep -E -A6 ': Failure$|ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' \
    "$tmp/LastTest.log" | cut -c1-240 | head -80 || true
}

run_suite() {
  local dir=$1 test_jobs=$2; shift 2
  local start=$SECONDS
  echo "== building $dir ($*)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== built $dir in $((SECONDS - start)) s; testing $dir"
  start=$SECONDS
  if ! (cd "$dir" && ctest --output-on-failure -j "$test_jobs" --timeout 300); then
    summarise_failures "$dir"
    exit 1
  fi
  echo "== tested $dir in $((SECONDS - start)) s"
}

run_suite build "$plain_test_jobs"
# A build-asan configured with GCC (before the sanitized suite and the fuzz
# targets shared one tree) starts afresh rather than through CMake's compiler
# change, which re-runs the configuration from an emptied cache.
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
# One clang tree serves the sanitized suite and the fuzz targets (CMakeLists.txt,
# GW_FUZZ): every library is compiled once under ASan and UBSan, with libFuzzer's
# coverage hooks, which do nothing outside a fuzzer.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build-asan "$sanitized_test_jobs" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DGW_SANITIZE=ON -DGW_FUZZ=ON -DGW_BUILD_BENCH=OFF

# The fuzz stage (fuzz/, docs/reliability.md): each target on its seeds and
# regression inputs and a few seconds of mutation.
echo "== fuzzing build-asan (smoke)"
fuzz_start=$SECONDS
./scripts/fuzz_smoke.sh build-asan 4
echo "== fuzz stage: $((SECONDS - fuzz_start)) s; scripts/test.sh: $SECONDS s in all"
