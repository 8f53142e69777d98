# slurm_explain_bench: `why --slurm` over 10,000 pending jobs on 1,000 nodes
# (synthetic Slurm 22.05 JSON). Included from bench/CMakeLists.txt.
add_executable(slurm_explain_bench ${CMAKE_CURRENT_LIST_DIR}/slurm_explain_bench.cc)
target_link_libraries(slurm_explain_bench PRIVATE gw_slurm gw_render nlohmann_json::nlohmann_json
                                                  benchmark::benchmark)
