# gw_add_test(NAME SOURCES a_test.cc ... LIBS lib ...)
# One GoogleTest executable per module; each TEST becomes its own ctest case.
include(GoogleTest)

# GW_SOURCE_DIR and GW_BINARY_DIR for tests, from a generated header included
# first, not -D flags: a flag holding the clone's absolute path would differ in
# every clone and defeat the compiler cache for every test file, while the
# header changes only the few files that use the paths.
set(GW_TEST_PATHS_HEADER ${PROJECT_BINARY_DIR}/gw_test_paths.h)
file(CONFIGURE OUTPUT ${GW_TEST_PATHS_HEADER} CONTENT
     "#define GW_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\"\n#define GW_BINARY_DIR \"${PROJECT_BINARY_DIR}\"\n")
#
# Test code (not the code under test) compiles at -O0: a GoogleTest file's
# expanded assertions and matchers took up to three times longer at -O2, and up
# to four times under GCC's ASan, for no test that runs any faster
# (docs/benchmarks.md, §11).
function(gw_test_code target)
  target_compile_options(${target} PRIVATE -include ${GW_TEST_PATHS_HEADER} -O0)
endfunction()

# WHOLE: the executable is one ctest case instead of one per TEST, for a
# binary whose tests share something expensive started once per process (a
# ::testing::Environment, such as the Slurm test cluster).
function(gw_add_test name)
  if(NOT GW_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "WHOLE" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock Threads::Threads)
  gw_test_code(${name})
  # Generous: the suite also runs under ASan on two slow cores, and the queue's
  # crash-safety test loops through 20+ daemon restarts.
  if(T_WHOLE)
    add_test(NAME ${name} COMMAND ${name})
    # Such a binary runs for tens of seconds (the Slurm cluster's for one to
    # two minutes): a high cost makes ctest start it first, where a fresh
    # clone has no timings yet, instead of last with the cores idle around it.
    set_tests_properties(${name} PROPERTIES TIMEOUT 600 COST 1000)
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 600)
  endif()
endfunction()
