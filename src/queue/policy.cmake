# gw_queue_policy: the placement policy (policy.h), a pure function of the
# queue and the GPUs' state, and admission (admission.h: what the daemon
# refuses at submit, by the placement core's "never"). Included from
# src/queue/CMakeLists.txt.
add_library(gw_queue_policy STATIC policy.cc admission.cc)
target_link_libraries(gw_queue_policy PUBLIC gw_queue_job gw_placement gw_core fmt::fmt)

gw_add_test(gw_queue_policy_tests
  SOURCES policy_test.cc admission_test.cc
  LIBS gw_queue_policy)

# The cross test: `why --need` (gw_diagnose) and the queue's policy place a
# table of GPU states the same way (both decide with gw_placement).
gw_add_test(gw_placement_cross_tests
  SOURCES placement_cross_test.cc
  LIBS gw_queue_policy gw_diagnose)
