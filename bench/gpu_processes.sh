# Sourced by the benchmarks that read scenarios/bench-8gpu-*.json: starts N
# real processes for the scenario's "env:GW_BENCH_PID_n" entries, so that
# every row a look reads has a user, a command line and a state in /proc.
# Appends their PIDs to the caller's `pids` array (which its cleanup kills)
# and GW_BENCH_PID_n=PID to its `envs` array.
start_gpu_processes() {
  local n=$1 i
  for i in $(seq 0 $((n - 1))); do
    sleep 100000 &
    pids+=($!)
    envs+=("GW_BENCH_PID_$i=$!")
  done
}
