#include "cli/progress.h"

#include <string>

#include <gtest/gtest.h>

namespace gw::cli {
namespace {

class FakeTerminal final : public StatusTerminal {
 public:
  explicit FakeTerminal(bool terminal) : terminal_(terminal) {}
  bool IsTerminal() const override { return terminal_; }
  void Write(std::string_view text) override { written += text; }
  std::string written;

 private:
  bool terminal_;
};

collect::WindowProgress At(unsigned samples, size_t gpus, int64_t window_ms = 3000) {
  collect::WindowProgress p;
  p.samples = samples;
  p.gpus = gpus;
  p.window_ms = window_ms;
  return p;
}

TEST(SamplingText, SaysWhatAndHowLong) {
  EXPECT_EQ(SamplingText(At(1, 8)), "sampling 8 GPUs for 3 s… (--now for one look)");
  EXPECT_EQ(SamplingText(At(2, 1, 1500)), "sampling 1 GPU for 1.5 s… (--now for one look)");
  EXPECT_EQ(SamplingText(At(0, 0)), "sampling the GPUs for 3 s… (--now for one look)");
}

// Issue 12, class 11: on a terminal the wait is explained, then cleared
// before the answer.
TEST(SamplingNotice, ShownOnATerminalAndClearedBeforeTheAnswer) {
  FakeTerminal tty(true);
  {
    SamplingNotice notice(tty, true);
    notice.Update(At(0, 0));
    notice.Update(At(1, 8));
    notice.Update(At(2, 8));  // Unchanged: not written again.
    notice.Clear();
    EXPECT_EQ(tty.written,
              "\r\x1b[Ksampling the GPUs for 3 s… (--now for one look)"
              "\r\x1b[Ksampling 8 GPUs for 3 s… (--now for one look)"
              "\r\x1b[K");
  }
  // Cleared once: the destructor has nothing left to do.
  EXPECT_EQ(tty.written.substr(tty.written.size() - 4), "\r\x1b[K");
  EXPECT_EQ(tty.written.find("\r\x1b[K\r\x1b[K"), std::string::npos);
}

TEST(SamplingNotice, NeverInAPipeWithJsonOrForOneLook) {
  FakeTerminal pipe(false);
  {
    SamplingNotice notice(pipe, true);
    notice.Update(At(1, 8));
  }
  EXPECT_EQ(pipe.written, "");
  FakeTerminal tty(true);
  {
    SamplingNotice json(tty, false);
    json.Update(At(1, 8));
    SamplingNotice now(tty, true);
    now.Update(At(0, 0, 0));
  }
  EXPECT_EQ(tty.written, "");
}

TEST(SamplingNotice, TheDestructorClearsALineLeftShown) {
  FakeTerminal tty(true);
  {
    SamplingNotice notice(tty, true);
    notice.Update(At(1, 2));
  }
  EXPECT_EQ(tty.written, "\r\x1b[Ksampling 2 GPUs for 3 s… (--now for one look)\r\x1b[K");
}

}  // namespace
}  // namespace gw::cli
