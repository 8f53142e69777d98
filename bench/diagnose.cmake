# diagnose_bench: one Diagnose pass over a 60-sample history of an 8-GPU,
# 256-process server (synthetic). Included from bench/CMakeLists.txt.
add_executable(diagnose_bench ${CMAKE_CURRENT_LIST_DIR}/diagnose_bench.cc)
target_link_libraries(diagnose_bench PRIVATE gw_diagnose benchmark::benchmark)
