# gw_add_test(NAME SOURCES a_test.cc ... LIBS lib ...)
# One GoogleTest executable per module; each TEST becomes its own ctest case.
include(GoogleTest)

# Test code finds the source and build trees through gw::test::SourceDir() and
# BinaryDir() (tests/test_paths.h), defined in one generated file: a macro or -D
# flag holding the clone's absolute path would make every file using it compile
# to different text in every clone and miss the compiler cache CI's fresh clone
# shares with this machine's trees (docs/benchmarks.md, §11).
if(GW_BUILD_TESTS)
  configure_file(${PROJECT_SOURCE_DIR}/tests/test_paths.cc.in ${PROJECT_BINARY_DIR}/gw_test_paths.cc @ONLY)
  add_library(gw_test_paths STATIC ${PROJECT_BINARY_DIR}/gw_test_paths.cc)
  target_include_directories(gw_test_paths PUBLIC ${PROJECT_SOURCE_DIR}/tests)
endif()

# Test code (not the code under test) compiles at -O0: a GoogleTest file's
# expanded assertions and matchers took up to three times longer at -O2, and up
# to four times under GCC's ASan, for no test that runs any faster
# (docs/benchmarks.md, §11).
function(gw_test_code target)
  target_compile_options(${target} PRIVATE -O0)
  target_link_libraries(${target} PRIVATE gw_test_paths)
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
  # Under the sanitizers, LeakSanitizer skips the leaks scripts/lsan.supp
  # names (glibc's, not the project's); the programs a test starts inherit it.
  set(env)
  if(GW_SANITIZE)
    set(env ENVIRONMENT "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/scripts/lsan.supp")
  endif()
  # Timeouts are generous: the suite also runs under ASan on two slow cores,
  # and the queue's crash-safety test loops through 20+ daemon restarts.
  if(T_WHOLE)
    add_test(NAME ${name} COMMAND ${name})
    # Such a binary runs for tens of seconds (the Slurm cluster's for one to
    # two minutes): a high cost makes ctest start it first, where a fresh
    # clone has no timings yet, instead of last with the cores idle around it.
    set_tests_properties(${name} PROPERTIES TIMEOUT 600 COST 1000 ${env})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 600 ${env})
  endif()
endfunction()
