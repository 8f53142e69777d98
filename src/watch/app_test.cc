// The event loop with a fake terminal, a fake probe round and fake stop
// actions: keys go in through a pipe as a terminal's would, and the test
// reads what was painted.
#include "watch/app.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "watch/test_fixtures.h"

namespace gw::watch {
namespace {

class FakeTerminal final : public Terminal {
 public:
  FakeTerminal() { EXPECT_EQ(pipe2(fds_, O_NONBLOCK | O_CLOEXEC), 0); }
  ~FakeTerminal() override {
    close(fds_[0]);
    close(fds_[1]);
  }
  int width() const override { return 80; }
  int height() const override { return 24; }
  int input_fd() const override { return fds_[0]; }
  void Paint(const Screen& screen) override {
    std::lock_guard<std::mutex> lock(mu_);
    text_ = screen.Text();
    ++paints_;
  }
  std::vector<Key> ReadKeys() override {
    char buf[64];
    while (read(fds_[0], buf, sizeof buf) > 0) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Key> keys(keys_.begin(), keys_.end());
    keys_.clear();
    return keys;
  }
  void Resize() override {}
  void Invalidate() override {}

  void Type(Key key) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      keys_.push_back(key);
    }
    [[maybe_unused]] ssize_t n = write(fds_[1], "k", 1);
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }
  int paints() {
    std::lock_guard<std::mutex> lock(mu_);
    return paints_;
  }
  // Waits until the painted screen contains `needle`.
  bool WaitFor(const std::string& needle, double seconds = 10) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (Text().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  int fds_[2];
  std::mutex mu_;
  std::deque<Key> keys_;
  std::string text_;
  int paints_ = 0;
};

class FakeActions final : public StopActions {
 public:
  ActionView Plan(pid_t pid, bool tree, std::shared_ptr<const Snapshot> latest) override {
    planned = pid;
    planned_tree = tree;
    had_snapshot = latest != nullptr;
    ActionView v;
    v.kind = ActionView::Kind::kConfirm;
    v.title = "Stop PID " + std::to_string(pid) + "?";
    v.lines = {"PID " + std::to_string(pid) + "  user bob  VRAM 10 GiB"};
    return v;
  }
  ActionView Execute() override {
    ++executed;
    ActionView v;
    v.kind = ActionView::Kind::kResult;
    v.title = "Stopped";
    v.lines = {"PID 5151 (jupyter-kernel): exited 0.1 s after SIGTERM",
               "GPU 0: 10 GiB freed (70 GiB → 60 GiB used)"};
    return v;
  }
  void Cancel() override { ++cancelled; }

  std::atomic<pid_t> planned{0};
  std::atomic<bool> planned_tree{false};
  std::atomic<bool> had_snapshot{false};
  std::atomic<int> executed{0};
  std::atomic<int> cancelled{0};
};

struct Harness {
  FakeTerminal term;
  int wake[2];
  int sig[2];
  std::unique_ptr<Prober> prober;
  std::unique_ptr<App> app;
  std::thread loop;
  std::atomic<int> exit_code{-1};

  explicit Harness(StopActions* actions, bool readonly = false, size_t history = 100) {
    EXPECT_EQ(pipe2(wake, O_NONBLOCK | O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(sig, O_NONBLOCK | O_CLOEXEC), 0);
    prober = std::make_unique<Prober>(
        [] {
          Frame f;
          f.snapshot = std::make_shared<const Snapshot>(testing::TwoGpus());
          f.diagnosis =
              std::make_shared<const diagnose::Diagnosis>(testing::SomeDiagnosis(*f.snapshot, 1));
          f.queue.state = QueueView::State::kNoDaemon;
          return f;
        },
        50, wake[1]);
    ViewOptions options;
    options.readonly = readonly;
    app = std::make_unique<App>(term, *prober, actions, options, AppFds{wake[0], wake[1], sig[0]},
                                history);
    loop = std::thread([this] { exit_code = app->Run(); });
  }
  ~Harness() {
    if (loop.joinable()) {
      term.Type(Key::Char('q'));
      loop.join();
    }
    prober->Stop(1000);
    app.reset();
    for (int fd : {wake[0], wake[1], sig[0], sig[1]}) close(fd);
  }
  int Join() {
    loop.join();
    return exit_code;
  }
};

TEST(App, StopAsksConfirmsAndShowsTheResult) {
  FakeActions actions;
  Harness h(&actions);
  ASSERT_TRUE(h.term.WaitFor("5151 bob")) << h.term.Text();
  h.term.Type(Key::Code(KeyCode::kDown));
  h.term.Type(Key::Char('x'));
  ASSERT_TRUE(h.term.WaitFor("Stop PID 5151?")) << h.term.Text();
  EXPECT_EQ(actions.planned, 5151);
  EXPECT_FALSE(actions.planned_tree);
  EXPECT_TRUE(actions.had_snapshot);
  EXPECT_EQ(actions.executed, 0);  // Nothing before the yes.
  h.term.Type(Key::Char('y'));
  ASSERT_TRUE(h.term.WaitFor("10 GiB freed")) << h.term.Text();
  EXPECT_EQ(actions.executed, 1);
  h.term.Type(Key::Char(' '));  // Closes the result.
  ASSERT_TRUE(h.term.WaitFor("q quit"));
  h.term.Type(Key::Char('q'));
  EXPECT_EQ(h.Join(), 0);
}

TEST(App, NoCancelsTheStop) {
  FakeActions actions;
  Harness h(&actions);
  ASSERT_TRUE(h.term.WaitFor("4242 alice"));
  h.term.Type(Key::Char('x'));
  ASSERT_TRUE(h.term.WaitFor("Stop PID 4242?"));
  h.term.Type(Key::Char('n'));
  ASSERT_TRUE(h.term.WaitFor("nothing was signalled"));
  EXPECT_EQ(actions.cancelled, 1);
  EXPECT_EQ(actions.executed, 0);
}

// Stop actions whose Execute() waits until the test lets it finish, as a
// real stop waits out the grace period before SIGKILL.
class SlowActions final : public StopActions {
 public:
  ActionView Plan(pid_t pid, bool, std::shared_ptr<const Snapshot>) override {
    ActionView v;
    v.kind = ActionView::Kind::kConfirm;
    v.title = "Stop PID " + std::to_string(pid) + "?";
    return v;
  }
  ActionView Execute() override {
    std::unique_lock<std::mutex> lock(mu);
    started = true;
    cv.notify_all();
    cv.wait(lock, [this] { return release; });
    ActionView v;
    v.kind = ActionView::Kind::kResult;
    v.title = "Stopped";
    v.lines = {"PID 4242 (python): killed by SIGKILL after the grace period"};
    return v;
  }
  void Cancel() override {}

  void WaitStarted() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return started; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  }

  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  bool release = false;
};

TEST(App, QuittingDuringAStopLetsTheStopFinish) {
  SlowActions actions;
  Harness h(&actions);
  ASSERT_TRUE(h.term.WaitFor("4242 alice"));
  h.term.Type(Key::Char('x'));
  ASSERT_TRUE(h.term.WaitFor("Stop PID 4242?"));
  EXPECT_FALSE(h.app->stop_in_progress());  // Planning is not stopping.
  h.term.Type(Key::Char('y'));
  actions.WaitStarted();
  h.term.Type(Key::Char('q'));
  EXPECT_EQ(h.Join(), 0);                  // The screen goes at once...
  EXPECT_TRUE(h.app->stop_in_progress());  // ...the stop goes on.
  std::thread release([&actions] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    actions.Release();
  });
  std::optional<ActionView> result = h.app->FinishStop();
  release.join();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->title, "Stopped");
  EXPECT_FALSE(h.app->stop_in_progress());
  EXPECT_FALSE(h.app->action_running());
  EXPECT_FALSE(h.app->FinishStop().has_value());
}

TEST(App, ReadonlyNeverCallsTheActions) {
  FakeActions actions;
  Harness h(&actions, /*readonly=*/true);
  ASSERT_TRUE(h.term.WaitFor("4242 alice"));
  h.term.Type(Key::Char('x'));
  ASSERT_TRUE(h.term.WaitFor("read-only")) << h.term.Text();
  EXPECT_EQ(actions.planned, 0);
}

TEST(App, ATerminatingSignalEndsTheLoopWithItsNumber) {
  Harness h(nullptr);
  ASSERT_TRUE(h.term.WaitFor("4242 alice"));
  const unsigned char byte = SIGTERM;
  ASSERT_EQ(write(h.sig[1], &byte, 1), 1);
  EXPECT_EQ(h.Join(), 128 + SIGTERM);
}

TEST(App, RepaintsOnlyWhenTheScreenChanges) {
  Harness h(nullptr, false, /*history=*/5);
  ASSERT_TRUE(h.term.WaitFor("4242 alice"));
  // Once the short history is full, frames keep coming every 50 ms with the
  // same content: no repaint.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const int before = h.term.paints();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_LE(h.term.paints() - before, 1);
  EXPECT_GE(h.prober->rounds(), 5u);
}

}  // namespace
}  // namespace gw::watch
