#!/usr/bin/env bash
# Sets up, builds and runs every test: once as a normal build and once under
# AddressSanitizer + UndefinedBehaviorSanitizer. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
# One compiler cache for every clone on this machine: paths are hashed relative to the
# clone, so CI's fresh clone reuses what a developer built here.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() {
  local dir=$1; shift
  echo "== building $dir ($*)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== testing $dir"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 300)
}

run_suite build
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build-asan -DGW_SANITIZE=ON -DGW_BUILD_BENCH=OFF

# The fuzz targets (fuzz/, docs/reliability.md): clang under ASan and UBSan,
# only the targets and the libraries they link, then each target on its seeds
# and regression inputs and a few seconds of mutation.
echo "== building build-fuzz (clang-14, -DGW_FUZZ=ON)"
fuzz_start=$(date +%s)
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DGW_FUZZ=ON -DGW_BUILD_TESTS=OFF -DGW_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz
echo "== fuzzing build-fuzz (smoke)"
./scripts/fuzz_smoke.sh build-fuzz 4
echo "== fuzz stage: $(($(date +%s) - fuzz_start)) s"
