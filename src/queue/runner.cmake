# The runner: how a job is started, supervised, stopped and how its end is
# recorded (runner.h, an umbrella over run_files.h, job_environment.h,
# launcher.h and supervisor.h), and the daemon's seam over it
# (supervisors.h: MakeRealSupervisors). The daemon links gw_queue_runner; each
# job runs under its own gpuwarden-supervise process, installed beside
# gpuwarden.
add_library(gw_queue_runner STATIC
  run_files.cc
  job_environment.cc
  launcher.cc
  supervisor.cc
  real_supervisors.cc)
target_link_libraries(gw_queue_runner PUBLIC gw_queue_job gw_core gw_os gw_proc
                                             nlohmann_json::nlohmann_json fmt::fmt)

add_executable(gpuwarden-supervise supervisor_main.cc)
target_link_libraries(gpuwarden-supervise PRIVATE gw_queue_runner)
set_target_properties(gpuwarden-supervise PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

gw_add_test(gw_queue_runner_tests
  SOURCES run_files_test.cc job_environment_test.cc runner_test.cc real_supervisors_test.cc
          supervisor_storage_test.cc
  LIBS gw_queue_runner)
if(TARGET gw_queue_runner_tests)
  add_dependencies(gw_queue_runner_tests gpuwarden-supervise)
endif()
