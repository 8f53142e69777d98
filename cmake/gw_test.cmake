# gw_add_test(NAME SOURCES a_test.cc ... LIBS lib ...)
# One GoogleTest executable per module; each TEST becomes its own ctest case.
include(GoogleTest)
function(gw_add_test name)
  if(NOT GW_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock Threads::Threads)
  target_compile_definitions(${name} PRIVATE
    GW_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GW_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # Generous: the suite also runs under ASan on two slow cores, and the queue's
  # crash-safety test loops through 20+ daemon restarts.
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 600)
endfunction()
