#include "collect/window.h"

#include <gtest/gtest.h>

namespace gw::collect {
namespace {

TEST(WorthProbingAgain, StopsAfterATimeout) {
  Snapshot s;
  s.gpus.resize(1);
  s.timed_out = true;
  EXPECT_FALSE(WorthProbingAgain(s));
}

TEST(WorthProbingAgain, StopsWhenNvmlIsMissing) {
  Snapshot s;
  s.errors.push_back(ProbeError{"nvml", "library_not_found", "m", std::nullopt, std::nullopt});
  EXPECT_FALSE(WorthProbingAgain(s));
}

TEST(WorthProbingAgain, GoesOnForAHealthyServerOrOneWithProcErrors) {
  Snapshot s;
  s.gpus.resize(2);
  EXPECT_TRUE(WorthProbingAgain(s));
  s.errors.push_back(ProbeError{"proc", "partial_scan", "m", std::nullopt, std::nullopt});
  EXPECT_TRUE(WorthProbingAgain(s));
}

}  // namespace
}  // namespace gw::collect
