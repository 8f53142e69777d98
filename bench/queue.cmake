# queue_policy_bench: one placement pass (gw::queue::Schedule) over 1k, 10k and
# 100k waiting jobs on an 8-GPU server. Included from bench/CMakeLists.txt.
add_executable(queue_policy_bench ${CMAKE_CURRENT_LIST_DIR}/queue_policy_bench.cc)
target_link_libraries(queue_policy_bench PRIVATE gw_queue_policy benchmark::benchmark)
