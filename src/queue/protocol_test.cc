#include "queue/protocol.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace gw::queue {
namespace {

using nlohmann::json;

TEST(Protocol, Base64RoundTripsEveryLength) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes.push_back(static_cast<char>(i * 37));
    auto back = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, bytes);
  }
  EXPECT_EQ(Base64Encode("Man"), "TWFu");
  EXPECT_EQ(Base64Encode("Ma"), "TWE=");
  EXPECT_EQ(Base64Encode("M"), "TQ==");
  EXPECT_FALSE(Base64Decode("TQ="));
  EXPECT_FALSE(Base64Decode("T!=="));
  EXPECT_FALSE(Base64Decode("TQ==TQ=="));
}

TEST(Protocol, BytesTravelAsTextOrBase64) {
  EXPECT_EQ(BytesToJson("héllo"), json("héllo"));
  const std::string bad = "a\xff\xfe";
  const json j = BytesToJson(bad);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(*BytesFromJson(j, "x"), bad);
  EXPECT_FALSE(BytesFromJson(json(3), "argv").ok());
  EXPECT_EQ(BytesFromJson(json(3), "argv").error().code, "bad_request");
  EXPECT_FALSE(BytesFromJson(json{{"base64", "%%%%"}}, "argv").ok());
}

JobSpec FullSpec() {
  JobSpec s;
  s.name = "train";
  s.argv = {"/usr/bin/python3", "train.py", "--tag", "a b;c$HOME", "\xff\xfe"};
  s.cwd = "/home/alice/x";
  s.env = {"PATH=/usr/bin", "ODD=\x01\x7f"};
  s.umask = 027;
  s.gpus = 2;
  s.vram_bytes = 20ull << 30;
  s.max_util_pct = 10;
  s.priority = -3;
  s.window = TimeWindow{1320, 420};
  s.after = {4, 7};
  s.nvlink = true;
  s.time_limit_s = 4 * 3600;
  s.preemptible = true;
  return s;
}

TEST(Protocol, SpecRoundTrips) {
  const JobSpec s = FullSpec();
  // Through text, as on the wire.
  const json wire = json::parse(SpecToJson(s).dump());
  auto back = SpecFromJson(wire);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->name, s.name);
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->cwd, s.cwd);
  EXPECT_EQ(back->env, s.env);
  EXPECT_EQ(back->umask, s.umask);
  EXPECT_EQ(back->gpus, 2u);
  EXPECT_EQ(back->vram_bytes, s.vram_bytes);
  EXPECT_EQ(back->max_util_pct, 10u);
  EXPECT_EQ(back->priority, -3);
  ASSERT_TRUE(back->window);
  EXPECT_EQ(back->window->start_min, 1320);
  EXPECT_EQ(back->window->end_min, 420);
  EXPECT_EQ(back->after, (std::vector<JobId>{4, 7}));
  EXPECT_TRUE(back->nvlink);
  EXPECT_EQ(back->time_limit_s, 4 * 3600);
  EXPECT_TRUE(back->preemptible);
}

TEST(Protocol, HostileSpecsAreRefusedNamingTheField) {
  auto field_error = [](json j) {
    auto r = SpecFromJson(j);
    EXPECT_FALSE(r.ok()) << j.dump();
    return r.ok() ? std::string() : r.error().message;
  };
  json ok = SpecToJson(FullSpec());
  EXPECT_NE(field_error(json::array()).find("spec"), std::string::npos);
  json j = ok;
  j.erase("argv");
  EXPECT_NE(field_error(j).find("argv"), std::string::npos);
  j = ok;
  j["argv"] = json::array();
  EXPECT_NE(field_error(j).find("argv"), std::string::npos);
  j = ok;
  j["argv"] = {"a\0b"};
  j["argv"][0] = std::string("a\0b", 3);
  EXPECT_NE(field_error(j).find("NUL"), std::string::npos);
  j = ok;
  j["cwd"] = "relative";
  EXPECT_NE(field_error(j).find("cwd"), std::string::npos);
  j = ok;
  j["gpus"] = -1;
  EXPECT_NE(field_error(j).find("gpus"), std::string::npos);
  j = ok;
  j["gpus"] = "2";
  EXPECT_NE(field_error(j).find("gpus"), std::string::npos);
  j = ok;
  j["vram_bytes"] = 1e30;
  EXPECT_NE(field_error(j).find("vram_bytes"), std::string::npos);
  j = ok;
  j["window"] = "25:00-01:00";
  EXPECT_NE(field_error(j).find("window"), std::string::npos);
  j = ok;
  j["env"] = {"NOEQUALS"};
  EXPECT_NE(field_error(j).find("env"), std::string::npos);
  j = ok;
  j["after"] = {0};
  EXPECT_NE(field_error(j).find("after"), std::string::npos);
  j = ok;
  j["nvlink"] = 1;
  EXPECT_NE(field_error(j).find("nvlink"), std::string::npos);
  j = ok;
  j["gpus"] = 0;
  EXPECT_NE(field_error(j).find("vram_bytes"), std::string::npos);
  j = ok;
  j["time_limit_s"] = 0;
  EXPECT_NE(field_error(j).find("time_limit_s"), std::string::npos);
}

TEST(Protocol, JobJsonHidesEnvironmentFromOthers) {
  Job job;
  job.id = 5;
  job.owner = {1001, 1001, "alice"};
  job.spec = FullSpec();
  const json pub = JobToJson(job, false);
  EXPECT_FALSE(pub.contains("env"));
  EXPECT_FALSE(pub.contains("cwd"));
  EXPECT_EQ(pub["user"], "alice");
  EXPECT_EQ(pub["state"], "queued");
  EXPECT_EQ(pub["window"], "22:00-07:00");
  const json mine = JobToJson(job, true);
  EXPECT_EQ(mine["env"].size(), 2u);
  EXPECT_EQ(mine["cwd"], "/home/alice/x");
}

// How a job ended is null until it has ended, also for a job that was
// preempted and put back (its store row keeps "preempted").
TEST(Protocol, JobJsonEndReasonIsNullUntilTheJobEnded) {
  Job job;
  job.id = 6;
  job.spec = FullSpec();
  job.state = JobState::kRunning;
  EXPECT_TRUE(JobToJson(job, false)["end_reason"].is_null());
  EXPECT_TRUE(JobToJson(job, false)["end_detail"].is_null());
  job.state = JobState::kQueued;
  job.end_reason = "preempted";
  job.end_detail = "stopped for a higher-priority job; back in the queue";
  EXPECT_TRUE(JobToJson(job, false)["end_reason"].is_null());
  job.state = JobState::kFailed;
  job.end_reason = "time_limit";
  job.end_detail = "";
  EXPECT_EQ(JobToJson(job, false)["end_reason"], "time_limit");
  EXPECT_EQ(JobToJson(job, false)["end_detail"], "");
}

// Replies may be longer than requests: a client reads up to kMaxReplyBytes by
// default, and a line in several reads (a newline at a chunk's edge included).
TEST(Protocol, ReadLineTakesLongRepliesAndRefusesEndlessOnes) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const std::string long_line(3 * kMaxMessageBytes, 'x');
  std::thread writer([&] {
    EXPECT_TRUE(WriteLine(fds[1], long_line).ok());
    EXPECT_TRUE(WriteLine(fds[1], "second").ok());
    // The reader stops reading partway: this write may end with EPIPE.
    (void)WriteLine(fds[1], std::string(kMaxMessageBytes + 70000, 'y'));
    close(fds[1]);
  });
  std::string buffer;
  Result<std::string> line = ReadLine(fds[0], buffer);
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line->size(), long_line.size());
  line = ReadLine(fds[0], buffer);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(*line, "second");
  line = ReadLine(fds[0], buffer, kMaxMessageBytes);
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.error().code, "too_long");
  close(fds[0]);
  writer.join();
}

TEST(Protocol, TimeWindows) {
  auto w = ParseTimeWindow("22:00-07:00");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->Contains(23 * 60));
  EXPECT_TRUE(w->Contains(3 * 60));
  EXPECT_FALSE(w->Contains(12 * 60));
  EXPECT_FALSE(w->Contains(7 * 60));
  auto day = ParseTimeWindow("9:30-17:00");
  ASSERT_TRUE(day.ok());
  EXPECT_TRUE(day->Contains(9 * 60 + 30));
  EXPECT_FALSE(day->Contains(17 * 60));
  EXPECT_EQ(FormatTimeWindow(*day), "09:30-17:00");
  auto bad = ParseTimeWindow("22-07");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "bad_input");
  EXPECT_NE(bad.error().message.find("22-07"), std::string::npos);
  EXPECT_FALSE(ParseTimeWindow("10:60-11:00").ok());
  EXPECT_TRUE(ParseTimeWindow("00:00-24:00").ok());
}

}  // namespace
}  // namespace gw::queue
