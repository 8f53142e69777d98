// JOB_DIR's files: the records both ways, and readers that tell a missing
// record from a malformed or unreadable one.
#include "queue/run_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gw::queue {
namespace {

using ::testing::HasSubstr;

TEST(JobDirTest, FirstRunIsTheIdLaterRunsAreNumbered) {
  EXPECT_EQ(JobDir("/var/lib/gw", 12, 0), "/var/lib/gw/jobs/12");
  EXPECT_EQ(JobDir("/var/lib/gw", 12, 3), "/var/lib/gw/jobs/12.3");
}

TEST(SpecJsonTest, RoundTripsArbitraryBytes) {
  SupervisorSpec s;
  s.job_id = 99;
  s.argv = {"/bin/x", std::string("\xff\xfe bad utf8"), "", "$HOME;`rm`"};
  s.env = {"A=\x01\x80", "NOEQUALS"};
  s.cwd = "/tmp/\xc3\x28";
  s.umask = 027;
  s.uid = 1234;
  s.gid = 5678;
  s.user = "ann";
  s.stdout_path = "/l/o";
  s.stderr_path = "/l/e";
  s.stderr_by_job = true;
  s.time_limit_s = 3600;
  s.grace_s = 2.5;
  Result<SupervisorSpec> back = SupervisorSpecFromJson(SupervisorSpecToJson(s));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->job_id, 99);
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->env, s.env);
  EXPECT_EQ(back->cwd, s.cwd);
  EXPECT_EQ(back->umask, 027u);
  EXPECT_EQ(back->uid, 1234u);
  EXPECT_EQ(back->gid, 5678u);
  EXPECT_EQ(back->user, "ann");
  EXPECT_EQ(back->stdout_path, "/l/o");
  EXPECT_FALSE(back->stdout_by_job);
  EXPECT_TRUE(back->stderr_by_job);
  EXPECT_EQ(back->time_limit_s, 3600);
  EXPECT_EQ(back->grace_s, 2.5);
}

// The least spec that is valid.
SupervisorSpec MinimalSpec() {
  SupervisorSpec s;
  s.argv = {"/bin/true"};
  s.cwd = "/";
  s.stdout_path = "/o";
  s.stderr_path = "/e";
  return s;
}

TEST(SpecJsonTest, MalformedSpecsAreRejected) {
  EXPECT_EQ(SupervisorSpecFromJson("not json").error().code, "malformed");
  EXPECT_EQ(SupervisorSpecFromJson("{}").error().code, "malformed");
  SupervisorSpec s = MinimalSpec();
  std::string text = SupervisorSpecToJson(s);
  ASSERT_TRUE(SupervisorSpecFromJson(text).ok());
  const std::string bad_b64 = std::string(text).replace(text.find("\"cwd_b64\":\"") + 11, 1, "!");
  EXPECT_FALSE(SupervisorSpecFromJson(bad_b64).ok());
  s.cwd = "relative";
  EXPECT_FALSE(SupervisorSpecFromJson(SupervisorSpecToJson(s)).ok());
  s.cwd = "/";
  s.argv = {std::string("/bin/a\0b", 8)};
  EXPECT_FALSE(SupervisorSpecFromJson(SupervisorSpecToJson(s)).ok());
}

// A temporary JOB_DIR, removed afterwards.
class RunFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gw-run-files-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }
  std::string dir_;
};

TEST_F(RunFilesTest, RecordsRoundTrip) {
  Write("launched", LaunchRecordToJson({true, 42, 777}));
  Result<std::optional<LaunchRecord>> launch = ReadLaunchRecord(dir_);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  ASSERT_TRUE(launch->has_value());
  EXPECT_TRUE((*launch)->by_supervisor);
  EXPECT_EQ((*launch)->pid, 42);
  EXPECT_EQ((*launch)->start_ticks, 777u);

  Write("pid", PidRecordToJson({43, 18446744073709551615ull, 1700000000123}));
  Result<std::optional<PidRecord>> pid = ReadPidRecord(dir_);
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  ASSERT_TRUE(pid->has_value());
  EXPECT_EQ((*pid)->pid, 43);
  EXPECT_EQ((*pid)->start_ticks, 18446744073709551615ull);
  EXPECT_EQ((*pid)->start_unix_ms, 1700000000123);

  ExitRecord e;
  e.reason = "stopped:cancelled";
  e.signal = 15;
  e.core_dumped = true;
  e.start_unix_ms = 1;
  e.end_unix_ms = 2;
  e.detail = "stop requested (cancelled); SIGTERM sent; killed by SIGTERM";
  Write("exit.json", ExitRecordToJson(e));
  Result<std::optional<ExitRecord>> exit = ReadExitRecord(dir_);
  ASSERT_TRUE(exit.ok()) << exit.error().message;
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ((*exit)->reason, e.reason);
  EXPECT_FALSE((*exit)->exit_code.has_value());
  EXPECT_EQ((*exit)->signal, 15);
  EXPECT_TRUE((*exit)->core_dumped);
  EXPECT_EQ((*exit)->start_unix_ms, 1);
  EXPECT_EQ((*exit)->end_unix_ms, 2);
  EXPECT_EQ((*exit)->detail, e.detail);

  Write("stop", StopRequestToJson({"preempted", 2.5}));
  Result<std::optional<StopRequest>> stop = ReadStopRequest(dir_);
  ASSERT_TRUE(stop.ok()) << stop.error().message;
  ASSERT_TRUE(stop->has_value());
  EXPECT_EQ((*stop)->reason, "preempted");
  EXPECT_EQ((*stop)->grace_s, 2.5);
}

template <typename T>
void ExpectAbsent(const Result<std::optional<T>>& r) {
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->has_value());
}

TEST_F(RunFilesTest, AbsentRecordsAreNulloptNotErrors) {
  ExpectAbsent(ReadExitRecord(dir_));
  ExpectAbsent(ReadPidRecord(dir_));
  ExpectAbsent(ReadLaunchRecord(dir_));
  ExpectAbsent(ReadStopRequest(dir_));
  ExpectAbsent(ReadSupervisorSpec(dir_));
  ExpectAbsent(ReadExitRecord(dir_ + "/no-such-dir"));
}

// The reader's error for JOB_DIR/name, or nullopt when it read a record.
template <typename T>
std::optional<Error> ErrorOf(const Result<std::optional<T>>& r) {
  if (r.ok()) return std::nullopt;
  return r.error();
}
std::optional<Error> ReadByName(const std::string& dir, const std::string& name) {
  if (name == "exit.json") return ErrorOf(ReadExitRecord(dir));
  if (name == "pid") return ErrorOf(ReadPidRecord(dir));
  if (name == "launched") return ErrorOf(ReadLaunchRecord(dir));
  if (name == "stop") return ErrorOf(ReadStopRequest(dir));
  return ErrorOf(ReadSupervisorSpec(dir));
}

TEST_F(RunFilesTest, MalformedRecordsAreErrorsNamingTheFileAndTheField) {
  struct Case {
    const char* file;
    const char* text;
    const char* problem;
  };
  const Case cases[] = {
      {"exit.json", R"({"reason":"exit"})", "exit_code: missing"},
      {"exit.json",
       R"({"reason":"exit","exit_code":"3","signal":null,"core_dumped":false,)"
       R"("start_unix_ms":1,"end_unix_ms":2,"detail":""})",
       "exit_code: not an integer"},
      {"exit.json", R"({"reason":"","exit_code":3)", "not JSON"},  // Cut short.
      {"exit.json", R"({"reason":""})", "reason: empty"},
      {"pid", R"({"pid":"12","start_ticks":1,"start_unix_ms":1})", "pid: not an integer"},
      {"pid", R"({"pid":-4,"start_ticks":1,"start_unix_ms":1})", "pid: not positive"},
      {"pid", R"({"pid":4,"start_ticks":-1,"start_unix_ms":1})", "start_ticks: out of range"},
      {"pid", R"({"pid":4294967296,"start_ticks":1,"start_unix_ms":1})", "pid: out of range"},
      {"launched", "garbage", "not JSON"},
      {"launched", "[1, 2]", "not a JSON object"},
      {"launched", R"({"by":"someone","pid":1,"start_ticks":1})", "by: unknown claimant someone"},
      {"stop", R"({"grace_s":1})", "reason: missing"},
      {"spec.json", "{}", "version: missing"},
  };
  for (const Case& c : cases) {
    Write(c.file, c.text);
    const std::optional<Error> error = ReadByName(dir_, c.file);
    ASSERT_TRUE(error.has_value()) << c.file << ": " << c.text;
    EXPECT_EQ(error->code, "malformed") << c.text;
    EXPECT_EQ(error->message, dir_ + "/" + c.file + ": malformed: " + c.problem);
  }
}

TEST_F(RunFilesTest, AStopWithABadGraceKeepsItsReason) {
  Write("stop", "{\"reason\":\"cancelled\",\"grace_s\":-1}");
  Result<std::optional<StopRequest>> stop = ReadStopRequest(dir_);
  ASSERT_TRUE(stop.ok()) << stop.error().message;
  ASSERT_TRUE(stop->has_value());
  EXPECT_EQ((*stop)->reason, "cancelled");
  EXPECT_FALSE((*stop)->grace_s.has_value());
}

TEST_F(RunFilesTest, AnOversizedRecordIsMalformed) {
  Write("exit.json", std::string(kMaxRunRecordBytes + 1, ' '));
  Result<std::optional<ExitRecord>> exit = ReadExitRecord(dir_);
  ASSERT_FALSE(exit.ok());
  EXPECT_EQ(exit.error().code, "malformed");
  EXPECT_THAT(exit.error().message, HasSubstr("exit.json"));
}

TEST_F(RunFilesTest, AnUnreadableRecordIsAnIoError) {
  // A symlink is refused (never followed), like any file that cannot be read.
  Write("elsewhere", ExitRecordToJson(ExitRecord{"exit", 0, std::nullopt, false, 1, 2, "x"}));
  ASSERT_EQ(symlink((dir_ + "/elsewhere").c_str(), (dir_ + "/exit.json").c_str()), 0);
  Result<std::optional<ExitRecord>> exit = ReadExitRecord(dir_);
  ASSERT_FALSE(exit.ok());
  EXPECT_EQ(exit.error().code, "io");
  EXPECT_THAT(exit.error().message, HasSubstr("exit.json"));
}

TEST_F(RunFilesTest, SpecReaderNamesTheBadField) {
  std::string text = SupervisorSpecToJson(MinimalSpec());
  const std::string umask = "\"umask\":18";
  Write("spec.json", text.replace(text.find(umask), umask.size(), "\"umask\":4096"));
  Result<std::optional<SupervisorSpec>> spec = ReadSupervisorSpec(dir_);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().code, "malformed");
  EXPECT_EQ(spec.error().message, dir_ + "/spec.json: malformed: umask: out of range");
}

TEST_F(RunFilesTest, PrivateDirIsOwnedAndClosedToOthers) {
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  EXPECT_TRUE(CheckPrivateDir(dir_).ok());
  ASSERT_EQ(chmod(dir_.c_str(), 0770), 0);
  Status open = CheckPrivateDir(dir_);
  ASSERT_FALSE(open.ok());
  EXPECT_THAT(open.error().message, HasSubstr("writable by group or others (mode 0770)"));
  const std::string link = dir_ + "-link";
  ASSERT_EQ(symlink(dir_.c_str(), link.c_str()), 0);
  Status linked = CheckPrivateDir(link);
  unlink(link.c_str());
  ASSERT_FALSE(linked.ok());
  EXPECT_THAT(linked.error().message, HasSubstr("not a directory"));
}

}  // namespace
}  // namespace gw::queue
