# The daemon's fleet side (issue 15; bench/fleet_bench.sh runs both):
# history_bench: one 1-s history point kept, a restart's read back, and the
#   7-day query behind `gpuwarden history` and `usage`, on a history.db
#   filled as 90 days of a daemon leave it;
# fleet_look_bench: the CPU of one 1-Hz full look, part by part (NVML, the
#   holder scan, /proc, diagnosis, history, /metrics).
# Included from bench/CMakeLists.txt.
add_executable(history_bench ${CMAKE_CURRENT_LIST_DIR}/history_bench.cc)
target_link_libraries(history_bench PRIVATE gw_queue gw_fleet_store gw_fleet fmt::fmt
                                            nlohmann_json::nlohmann_json)
add_executable(fleet_look_bench ${CMAKE_CURRENT_LIST_DIR}/fleet_look_bench.cc)
target_link_libraries(fleet_look_bench PRIVATE gw_collect gw_fleet_store gw_fleet gw_proc
                                               gw_nvml gw_diagnose)
