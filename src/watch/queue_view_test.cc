#include "watch/queue_view.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace gw::watch {
namespace {

using nlohmann::json;

TEST(QueueView, ParsesRunningAndWaitingJobs) {
  const json reply = json::parse(R"({
    "v": 1, "ok": true, "now_unix_ms": 1000000,
    "jobs": [
      {"id": 7, "user": "alice", "name": "train", "state": "running", "gpus": 2,
       "vram_bytes": 21474836480, "gpu_indices": [0, 1], "start_unix_ms": 400000,
       "env": ["SECRET=1"], "cwd": "/home/alice"},
      {"id": 8, "user": "bob", "name": {"base64": "ZXZpbBtbMko="}, "state": "queued",
       "gpus": 1, "vram_bytes": 0, "position": 1, "submit_unix_ms": 900000,
       "wait_reason": {"code": "resources", "message": "no GPU has 80 GiB free"},
       "estimated_start_unix_ms": null}
    ]})");
  const QueueView v = ParseQueueReply(reply);
  ASSERT_EQ(v.state, QueueView::State::kOk);
  EXPECT_EQ(v.now_unix_ms, 1000000);
  ASSERT_EQ(v.jobs.size(), 2u);
  EXPECT_EQ(v.jobs[0].id, 7);
  EXPECT_EQ(v.jobs[0].gpu_indices, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(v.jobs[0].since_unix_ms, 400000);
  EXPECT_EQ(v.jobs[1].name, "evil\\x1b[2J");  // base64 bytes, sanitised.
  EXPECT_EQ(v.jobs[1].position, 1);
  EXPECT_EQ(v.jobs[1].wait_code, "resources");
  EXPECT_EQ(v.jobs[1].wait_message, "no GPU has 80 GiB free");
  EXPECT_EQ(v.jobs[1].since_unix_ms, 900000);
  EXPECT_FALSE(v.jobs[1].estimated_start_unix_ms);
}

TEST(QueueView, AnErrorReplyOrGarbageIsAnError) {
  QueueView v = ParseQueueReply(
      json::parse(R"({"v":1,"ok":false,"error":{"code":"forbidden","message":"not yours"}})"));
  EXPECT_EQ(v.state, QueueView::State::kError);
  EXPECT_EQ(v.message, "not yours");
  EXPECT_EQ(ParseQueueReply(json("text")).state, QueueView::State::kError);
  // Missing fields are left empty, not guessed.
  v = ParseQueueReply(json::parse(R"({"ok":true,"jobs":[{"id":3}]})"));
  ASSERT_EQ(v.jobs.size(), 1u);
  EXPECT_EQ(v.jobs[0].user, "?");
  EXPECT_FALSE(v.jobs[0].position);
  // Members of the wrong type are unknown, never an exception on the probe
  // thread; text is sanitised.
  v = ParseQueueReply(
      json::parse(R"({"ok":true,"jobs":[{"id":4,"user":7,"state":["x"],"wait_reason":{"code":1,)"
                  R"("message":"\u001b[31mred"}}]})"));
  ASSERT_EQ(v.state, QueueView::State::kOk);
  ASSERT_EQ(v.jobs.size(), 1u);
  EXPECT_EQ(v.jobs[0].user, "?");
  EXPECT_EQ(v.jobs[0].state, "?");
  EXPECT_EQ(v.jobs[0].wait_code, "");
  EXPECT_EQ(v.jobs[0].wait_message, "\\x1b[31mred");
  v = ParseQueueReply(json::parse(R"({"ok":false,"error":{"message":42}})"));
  EXPECT_EQ(v.state, QueueView::State::kError);
  EXPECT_EQ(v.message, "refused");
  EXPECT_EQ(ParseQueueReply(json::parse(R"({"ok":true,"jobs":{"a":1}})")).jobs.size(), 0u);
  EXPECT_EQ(ParseQueueReply(json::parse(R"({"ok":"yes"})")).state, QueueView::State::kError);
}

// The daemon's "degraded" entries (its disk refused a write): one line each,
// sanitised; entries of the wrong shape are skipped.
TEST(QueueView, ParsesWhatTheDaemonSaysIsDegraded) {
  const QueueView v = ParseQueueReply(json::parse(R"({"ok":true,"jobs":[],"degraded":[
      {"what":"storage","detail":"queue storage not writable: no space left on device\u001b[2J",
       "since_unix_ms":5},
      "not an object", {"what":"storage"}]})"));
  ASSERT_EQ(v.state, QueueView::State::kOk);
  EXPECT_EQ(v.degraded, (std::vector<std::string>{
                            "storage: queue storage not writable: no space left on device\\x1b[2J",
                            "storage"}));
  EXPECT_TRUE(ParseQueueReply(json::parse(R"({"ok":true,"jobs":[]})")).degraded.empty());
}

TEST(QueueView, NoSocketMeansNoDaemon) {
  const QueueView v = FetchQueue("/nonexistent/gpuwarden-test.sock", 100);
  EXPECT_EQ(v.state, QueueView::State::kNoDaemon);
}

// A daemon stand-in on a Unix socket that answers `reply` (or nothing).
class FakeDaemon {
 public:
  explicit FakeDaemon(std::string reply) : reply_(std::move(reply)) {
    path_ = (std::filesystem::temp_directory_path() /
             ("gw-watch-q-" + std::to_string(getpid()) + "-" + std::to_string(counter_++)))
                .string();
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    thread_ = std::thread([this] {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[256];
      [[maybe_unused]] ssize_t n = read(c, buf, sizeof buf);
      if (!reply_.empty()) {
        [[maybe_unused]] ssize_t w = write(c, reply_.data(), reply_.size());
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(800));
      }
      close(c);
    });
  }
  ~FakeDaemon() {
    thread_.join();
    close(fd_);
    unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string reply_;
  std::string path_;
  int fd_ = -1;
  std::thread thread_;
};

TEST(QueueView, AsksTheDaemonForItsQueue) {
  FakeDaemon daemon(R"({"v":1,"ok":true,"now_unix_ms":5,"jobs":[{"id":1,"state":"running"}]})"
                    "\n");
  const QueueView v = FetchQueue(daemon.path(), 2000);
  ASSERT_EQ(v.state, QueueView::State::kOk) << v.message;
  ASSERT_EQ(v.jobs.size(), 1u);
  EXPECT_EQ(v.jobs[0].state, "running");
}

TEST(QueueView, ADaemonThatDoesNotAnswerTakesOnlyTheTimeout) {
  FakeDaemon daemon("");
  const auto start = std::chrono::steady_clock::now();
  const QueueView v = FetchQueue(daemon.path(), 200);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(v.state, QueueView::State::kError);
  EXPECT_LT(took, std::chrono::milliseconds(700));
}

}  // namespace
}  // namespace gw::watch
