#!/usr/bin/env bash
# Sets up, builds and runs `gpuwarden status`. With an NVIDIA driver present it
# shows the real GPUs; without one it shows the bundled simulated server and
# says so.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target gpuwarden gw_nvml_sim

if ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1 '; then
  echo "== gpuwarden status (NVIDIA driver found: real GPUs)"
  exec ./build/gpuwarden status "$@"
fi

echo "== No NVIDIA driver on this machine: showing the bundled SIMULATED server"
echo "   (scenarios/demo.json, served by gpuwarden's simulated libnvidia-ml.so.1)."
echo "   Its GPU processes are stand-in 'sleep' processes this script starts and stops."
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for i in 0 1 2 3 4 5; do
  sleep 600 &
  pids+=("$!")
  export "GW_DEMO_PID_$i=$!"
done
# Wait (briefly) until each stand-in has exec'd, so /proc shows it as itself.
for p in "${pids[@]}"; do
  for _ in $(seq 100); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && break
    sleep 0.01
  done
done
echo
./build/gpuwarden --sim scenarios/demo.json status "$@"
