# The kernel-log benchmark programs (bench/kmsg_bench.sh runs them). Included
# from bench/CMakeLists.txt with: include(${CMAKE_CURRENT_SOURCE_DIR}/kmsg.cmake)
add_executable(kmsg_gen ${CMAKE_CURRENT_LIST_DIR}/kmsg_gen.cc)
add_executable(kmsg_events ${CMAKE_CURRENT_LIST_DIR}/kmsg_events.cc)
target_link_libraries(kmsg_events PRIVATE gw_kmsg)
