#include "queue/daemon_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gw::queue {
namespace {

using ::testing::ElementsAre;

class DaemonLogTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  std::vector<std::string> lines_;
  DaemonLog log_{clock_, [this](std::string_view l) { lines_.emplace_back(l); }};
};

TEST_F(DaemonLogTest, LinesAreLevelledAndOneLineEach) {
  log_.Error("disk full");
  log_.Warning("w");
  log_.Notice("job 1 started");
  log_.Info("i");
  log_.Error("two\nlines\x1b[2J");
  EXPECT_THAT(lines_, ElementsAre("gpuwardend: error: disk full\n", "gpuwardend: warning: w\n",
                                  "gpuwardend: notice: job 1 started\n", "gpuwardend: info: i\n",
                                  "gpuwardend: error: two\\nlines\\x1b[2J\n"));
}

TEST_F(DaemonLogTest, ARepeatedLineIsWrittenOnceThenCountedOncePerMinute) {
  // The simulator's complaint, 13 times a second for a bit over two minutes.
  for (int second = 0; second < 125; ++second) {
    for (int i = 0; i < 13; ++i) log_.Warning("reading the GPUs (sim): bad value");
    clock_.AdvanceMs(1000);
    log_.Flush();
  }
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_EQ(lines_[0], "gpuwardend: warning: reading the GPUs (sim): bad value\n");
  EXPECT_EQ(lines_[1],
            "gpuwardend: warning: reading the GPUs (sim): bad value (repeated 779 times in the "
            "last 60 s)\n");
  EXPECT_EQ(lines_[2],
            "gpuwardend: warning: reading the GPUs (sim): bad value (repeated 780 times in the "
            "last 60 s)\n");
}

TEST_F(DaemonLogTest, OtherLinesAreNotHeldBackAndAQuietLinePrintsAgainAtOnce) {
  log_.Error("a");
  log_.Error("b");
  log_.Warning("a");  // Another level: another line.
  EXPECT_EQ(lines_.size(), 3u);
  clock_.AdvanceMs(DaemonLog::kRepeatWindowMs);
  log_.Error("a");  // Quiet for a window: no count to report, printed as new.
  EXPECT_EQ(lines_.size(), 4u);
  EXPECT_EQ(lines_.back(), "gpuwardend: error: a\n");
}

}  // namespace
}  // namespace gw::queue
