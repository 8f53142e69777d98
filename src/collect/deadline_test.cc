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

TEST(DeadlineWorker, RunsEveryCallOnTheSameThread) {
  DeadlineWorker worker;
  auto first = worker.Run<std::thread::id>([] { return std::this_thread::get_id(); }, 5000);
  auto second = worker.Run<std::thread::id>([] { return std::this_thread::get_id(); }, 5000);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*first, *second);
  EXPECT_NE(*first, std::this_thread::get_id());
  EXPECT_EQ(worker.runs(), 2u);
  EXPECT_EQ(worker.refused(), 0u);
}

// Work stuck past its deadline keeps the worker: calls meanwhile are refused
// at once (no thread each), and the worker serves again once it ends.
TEST(DeadlineWorker, RefusesWhileStuckAndServesAgainAfter) {
  DeadlineWorker worker;
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto stuck = worker.Run<int>(
      [released] {
        released.wait();
        return 1;
      },
      30);
  EXPECT_FALSE(stuck.has_value());
  const auto before = std::chrono::steady_clock::now();
  auto refused = worker.Run<int>([] { return 2; }, 5000);
  EXPECT_FALSE(refused.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));  // Not waited.
  EXPECT_EQ(worker.refused(), 1u);
  release->set_value();
  std::optional<int> again;
  for (int i = 0; i < 400 && !again; ++i) {
    again = worker.Run<int>([] { return 3; }, 5000);
    if (!again) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, 3);
}

TEST(DeadlineWorker, AWorkerDestroyedWhileStuckLeavesItsWorkToEnd) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  {
    DeadlineWorker worker;
    EXPECT_FALSE(worker
                     .Run<int>(
                         [released, finished] {
                           released.wait();
                           finished->store(true);
                           return 0;
                         },
                         20)
                     .has_value());
  }  // Returns at once although the work still runs.
  EXPECT_FALSE(finished->load());
  release->set_value();
  for (int i = 0; i < 400 && !finished->load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(finished->load());
}

}  // namespace
}  // namespace gw::collect
