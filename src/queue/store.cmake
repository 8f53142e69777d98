# The durable job store (store.h): one SQLite file.
if(NOT TARGET SQLite::SQLite3)
  find_package(SQLite3 REQUIRED)
endif()

add_library(gw_queue_store STATIC store.cc)
target_link_libraries(gw_queue_store
  PUBLIC gw_queue_job gw_core
  PRIVATE SQLite::SQLite3 nlohmann_json::nlohmann_json fmt::fmt)

# The tests also open the file with SQLite directly (to read pragmas, to fake
# a newer schema).
gw_add_test(gw_queue_store_tests
  SOURCES store_test.cc
  LIBS gw_queue_store SQLite::SQLite3)
