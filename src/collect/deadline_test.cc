#include "collect/deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace gw::collect {
namespace {

TEST(RunWithDeadline, ReturnsTheValueOfWorkThatFinishes) {
  auto value = RunWithDeadline<int>([] { return 42; }, 1000);
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, 42);
}

TEST(RunWithDeadline, GivesUpOnWorkThatBlocksAndLetsItFinishLater) {
  // The work blocks until the test releases it, like an NVML call on a wedged
  // driver; the caller must get nullopt at the deadline, not wait.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  auto value = RunWithDeadline<int>(
      [released, finished] {
        released.wait();
        finished->store(true);
        return 7;
      },
      50);
  EXPECT_FALSE(value.has_value());
  EXPECT_FALSE(finished->load());
  // Unblock the abandoned worker so it ends before the test binary does.
  release->set_value();
  for (int i = 0; i < 200 && !finished->load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(finished->load());
}

TEST(RunWithDeadline, ZeroOrNegativeTimeoutStillReturnsFinishedWork) {
  // A negative budget must not wait; a result that is already there may or may
  // not be seen, but the call must return at once without crashing.
  auto value = RunWithDeadline<int>([] { return 1; }, -5);
  if (value) {
    EXPECT_EQ(*value, 1);
  }
}

}  // namespace
}  // namespace gw::collect
