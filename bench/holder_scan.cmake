# holder_scan_bench: gpuwarden's device-holder scan against `fuser -v` with
# thousands of real processes (see the header of holder_scan_bench.cc).
# Included from bench/CMakeLists.txt.
add_executable(holder_scan_bench ${CMAKE_CURRENT_LIST_DIR}/holder_scan_bench.cc)
target_link_libraries(holder_scan_bench PRIVATE gw_proc)
