# queue_submit_bench: submit throughput and latency of gpuwardend, whole
# `gpuwarden run` processes against `tsp`, and one protocol connection
# (bench/queue_bench.sh). Included from bench/CMakeLists.txt.
add_executable(queue_submit_bench ${CMAKE_CURRENT_LIST_DIR}/queue_submit_bench.cc)
target_link_libraries(queue_submit_bench PRIVATE gw_queue_job)
