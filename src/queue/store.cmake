# The durable job store (sqlite_job_store.h): one SQLite file.
if(NOT TARGET SQLite::SQLite3)
  find_package(SQLite3 REQUIRED)
endif()

add_library(gw_queue_store STATIC sqlite_job_store.cc)
target_link_libraries(gw_queue_store
  PUBLIC gw_queue_job gw_core gw_os
  PRIVATE SQLite::SQLite3 nlohmann_json::nlohmann_json fmt::fmt)

# The tests also open the file with SQLite directly (to read pragmas, to fake
# a newer schema).
gw_add_test(gw_queue_store_tests
  SOURCES store_test.cc
  LIBS gw_queue_store SQLite::SQLite3)

# FaultyJobStore (faulty_job_store.h): any JobStore with chosen writes failing,
# for the daemon's tests.
add_library(gw_queue_faulty_store STATIC faulty_job_store.cc)
target_link_libraries(gw_queue_faulty_store PUBLIC gw_queue_job gw_core PRIVATE fmt::fmt)
gw_add_test(gw_queue_faulty_store_tests
  SOURCES faulty_job_store_test.cc
  LIBS gw_queue_faulty_store gw_queue_store)
