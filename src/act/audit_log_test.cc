#include "act/audit_log.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace gw::act {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

AuditRecord SampleRecord() {
  AuditRecord r;
  r.time_unix_ms = 1796000523456;  // 2026-11-30T01:02:03.456Z
  r.event = "signal";
  r.caller_uid = 1000;
  r.caller_user = "alice";
  r.pid = 4242;
  r.start_ticks = 987654;
  r.uid = 1001;
  r.user = "bob";
  r.command = "python train.py --epochs 3";
  r.gpus = {0, 3};
  r.vram_bytes = 81559ull << 20;
  r.signal = "SIGTERM";
  r.outcome = "delivered";
  r.detail = "";
  return r;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  EXPECT_EQ(start, text.size()) << "text does not end with a newline";
  return lines;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gw_audit_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& rel) const { return dir_ + "/" + rel; }

  std::string dir_;
};

TEST(AuditRecordJson, AllKeysInOrder) {
  const std::string line = AuditRecordJson(SampleRecord());
  EXPECT_EQ(line,
            R"({"time":"2026-11-30T01:02:03.456Z","time_unix_ms":1796000523456,"event":"signal",)"
            R"("caller_uid":1000,"caller_user":"alice","pid":4242,"start_ticks":987654,)"
            R"("uid":1001,"user":"bob","command":"python train.py --epochs 3","gpus":[0,3],)"
            R"("vram_bytes":85520809984,"signal":"SIGTERM","outcome":"delivered","detail":""})");
}

TEST(AuditRecordJson, UnknownOptionalsAreNull) {
  AuditRecord r;
  r.event = "result";
  r.outcome = "gone";
  const nlohmann::json j = nlohmann::json::parse(AuditRecordJson(r));
  EXPECT_EQ(j["time"], "1970-01-01T00:00:00.000Z");
  EXPECT_TRUE(j["start_ticks"].is_null());
  EXPECT_TRUE(j["uid"].is_null());
  EXPECT_TRUE(j["vram_bytes"].is_null());
  EXPECT_EQ(j["gpus"], nlohmann::json::array());
  EXPECT_EQ(j["signal"], "");
  EXPECT_EQ(j.size(), 15u);
}

TEST(AuditRecordJson, Times) {
  AuditRecord r;
  r.time_unix_ms = -1;  // Clock before the epoch: still a real instant.
  EXPECT_EQ(nlohmann::json::parse(AuditRecordJson(r))["time"], "1969-12-31T23:59:59.999Z");
  r.time_unix_ms = 253402300799999;
  EXPECT_EQ(nlohmann::json::parse(AuditRecordJson(r))["time"], "9999-12-31T23:59:59.999Z");
  // Outside four-digit years: no time, but the raw number is kept.
  for (const int64_t ms : {int64_t{253402300800000}, INT64_MAX, INT64_MIN}) {
    r.time_unix_ms = ms;
    const nlohmann::json j = nlohmann::json::parse(AuditRecordJson(r));
    EXPECT_TRUE(j["time"].is_null()) << ms;
    EXPECT_EQ(j["time_unix_ms"], ms);
  }
}

TEST(AuditRecordJson, HostileBytesStayOnOneLineAndValid) {
  AuditRecord r = SampleRecord();
  r.command = std::string("evil\xff\xfe name\n{\"fake\":1}\x1b[2J\r\t\x7f\xc2\x9b") + '\0' + "end";
  // A truncated UTF-8 sequence; a right-to-left override.
  r.user = "\xc3";
  r.detail = "line1\nline2\xe2\x80\xae";
  const std::string line = AuditRecordJson(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_EQ(line.find('\x7f'), std::string::npos);
  EXPECT_EQ(line.find("\xc2\x9b"), std::string::npos);  // C1 CSI.
  EXPECT_EQ(line.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_EQ(line.find('\0'), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(line);  // Throws on invalid UTF-8.
  EXPECT_EQ(j["command"], std::string("evil\xef\xbf\xbd\xef\xbf\xbd name\n{\"fake\":1}\x1b[2J\r\t"
                                      "\x7f\xc2\x9b") +
                              '\0' + "end");
  EXPECT_EQ(j["user"], "\xef\xbf\xbd");
  EXPECT_EQ(j["detail"], "line1\nline2\xe2\x80\xae");
  EXPECT_EQ(j["pid"], 4242);
}

TEST_F(AuditLogTest, AppendsParseableLines) {
  const std::string path = Path("audit.log");
  FileAuditLog log(path);
  EXPECT_EQ(log.path(), path);
  AuditRecord first = SampleRecord();
  AuditRecord second = SampleRecord();
  second.event = "result";
  second.signal = "";
  second.outcome = "exited";
  second.detail = "exited 0.4s after SIGTERM";
  ASSERT_TRUE(log.Append(first).ok());
  ASSERT_TRUE(log.Append(second).ok());
  // A second writer on the same file appends after the first.
  ASSERT_TRUE(FileAuditLog(path).Append(first).ok());

  const std::vector<std::string> lines = Lines(ReadAll(path));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], AuditRecordJson(first));
  EXPECT_EQ(lines[1], AuditRecordJson(second));
  for (const std::string& line : lines) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["pid"], 4242);
  }
  EXPECT_EQ(nlohmann::json::parse(lines[1])["detail"], "exited 0.4s after SIGTERM");
  EXPECT_EQ(ModeOf(path), 0600u);
}

TEST_F(AuditLogTest, ExistingFileKeepsItsContent) {
  const std::string path = Path("audit.log");
  std::ofstream(path) << "{\"old\":1}\n";
  ASSERT_TRUE(FileAuditLog(path).Append(SampleRecord()).ok());
  const std::vector<std::string> lines = Lines(ReadAll(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "{\"old\":1}");
}

TEST_F(AuditLogTest, CreatesParentsWithExactModes) {
  // Even a strict umask must not change the modes the contract promises.
  const mode_t old_umask = umask(077);
  const std::string path = Path("home/.local/state/gpuwarden/audit.log");
  const Status user = FileAuditLog(path, 0700).Append(SampleRecord());
  const std::string system_path = Path("var/log/gpuwarden/audit.log");
  const Status system = FileAuditLog(system_path, 0750).Append(SampleRecord());
  umask(old_umask);
  ASSERT_TRUE(user.ok()) << user.error().message;
  ASSERT_TRUE(system.ok()) << system.error().message;
  for (const char* rel :
       {"home", "home/.local", "home/.local/state", "home/.local/state/gpuwarden"}) {
    EXPECT_EQ(ModeOf(Path(rel)), 0700u) << rel;
  }
  EXPECT_EQ(ModeOf(Path("var/log/gpuwarden")), 0750u);
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(ModeOf(system_path), 0600u);
  EXPECT_EQ(Lines(ReadAll(path)).size(), 1u);
}

// A log the user named creates no directory: the missing one is named.
TEST_F(AuditLogTest, ANamedLogCreatesNoDirectory) {
  const std::string path = Path("missing/audit.log");
  const Status s = FileAuditLog::InExistingDirectory(path).Append(SampleRecord());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(Path("missing") + " does not exist"), std::string::npos)
      << s.error().message;
  struct stat st {};
  EXPECT_NE(stat(Path("missing").c_str(), &st), 0);
  // In an existing directory it writes as any log does.
  ASSERT_TRUE(FileAuditLog::InExistingDirectory(Path("audit.log")).Append(SampleRecord()).ok());
  EXPECT_EQ(Lines(ReadAll(Path("audit.log"))).size(), 1u);
}

TEST_F(AuditLogTest, ExistingParentModesAreLeftAlone) {
  ASSERT_EQ(mkdir(Path("state").c_str(), 0755), 0);
  ASSERT_EQ(chmod(Path("state").c_str(), 0755), 0);
  ASSERT_TRUE(FileAuditLog(Path("state/gpuwarden/audit.log"), 0700).Append(SampleRecord()).ok());
  EXPECT_EQ(ModeOf(Path("state")), 0755u);
  EXPECT_EQ(ModeOf(Path("state/gpuwarden")), 0700u);
}

TEST_F(AuditLogTest, DefaultDirModeFollowsTheEffectiveUser) {
  const std::string path = Path("made/audit.log");
  ASSERT_TRUE(FileAuditLog(path).Append(SampleRecord()).ok());
  EXPECT_EQ(ModeOf(Path("made")), geteuid() == 0 ? 0750u : 0700u);
}

TEST_F(AuditLogTest, SymlinkedParentIsFollowedLikeMkdirP) {
  // $HOME is often a symlink (/home -> /data/home); only the file itself must not be one.
  ASSERT_EQ(mkdir(Path("real").c_str(), 0700), 0);
  ASSERT_EQ(symlink(Path("real").c_str(), Path("link").c_str()), 0);
  ASSERT_TRUE(FileAuditLog(Path("link/sub/audit.log")).Append(SampleRecord()).ok());
  EXPECT_EQ(Lines(ReadAll(Path("real/sub/audit.log"))).size(), 1u);
}

TEST_F(AuditLogTest, FifoWithoutReaderFailsAtOnce) {
  const std::string path = Path("audit.log");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  // Without O_NONBLOCK this Append would block forever; the test would hang.
  const Status status = FileAuditLog(path).Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, "io");
  EXPECT_EQ(status.error().message,
            "audit log " + path + ": is a FIFO or socket with no reader, not a regular file");
}

TEST_F(AuditLogTest, FifoWithReaderIsNotARegularFile) {
  const std::string path = Path("audit.log");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const int reader = open(path.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const Status status = FileAuditLog(path).Append(SampleRecord());
  char buf[16];
  EXPECT_LE(read(reader, buf, sizeof(buf)), 0) << "nothing may be written to a FIFO";
  close(reader);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "audit log " + path + ": is not a regular file");
}

TEST_F(AuditLogTest, DeviceIsNotARegularFile) {
  const Status status = FileAuditLog("/dev/null").Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "audit log /dev/null: is not a regular file");
}

TEST_F(AuditLogTest, SymlinkAtThePathIsRefused) {
  const std::string target = Path("elsewhere");
  std::ofstream(target) << "precious\n";
  const std::string path = Path("audit.log");
  ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);
  const Status status = FileAuditLog(path).Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "audit log " + path + ": is a symbolic link; refusing to follow it");
  EXPECT_EQ(ReadAll(target), "precious\n");

  // A dangling symlink must not create its target either.
  const std::string dangling = Path("dangling.log");
  ASSERT_EQ(symlink(Path("created-by-symlink").c_str(), dangling.c_str()), 0);
  EXPECT_FALSE(FileAuditLog(dangling).Append(SampleRecord()).ok());
  EXPECT_FALSE(fs::exists(Path("created-by-symlink")));
}

TEST_F(AuditLogTest, HardLinkIsRefused) {
  const std::string target = Path("elsewhere");
  std::ofstream(target) << "precious\n";
  const std::string path = Path("audit.log");
  ASSERT_EQ(link(target.c_str(), path.c_str()), 0);
  const Status status = FileAuditLog(path).Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "audit log " + path + ": has 2 hard links; refusing it");
  EXPECT_EQ(ReadAll(target), "precious\n");
}

TEST_F(AuditLogTest, FileOfAnotherUserIsRefused) {
  const std::string path = Path("audit.log");
  std::ofstream(path) << "";
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  const uid_t other = geteuid() == 65534 ? 65533 : 65534;
  if (chown(path.c_str(), other, static_cast<gid_t>(-1)) != 0) {
    GTEST_SKIP() << "only root can give a file away";
  }
  const Status status = FileAuditLog(path).Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message,
              HasSubstr("is owned by uid " + std::to_string(other) + ", neither uid"));
  EXPECT_EQ(ReadAll(path), "");
}

TEST_F(AuditLogTest, UnwritableDirectory) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  ASSERT_EQ(mkdir(Path("ro").c_str(), 0500), 0);
  const std::string path = Path("ro/audit.log");
  const Status status = FileAuditLog(path).Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "audit log " + path + ": cannot open: Permission denied");

  const std::string deeper = Path("ro/sub/audit.log");
  const Status create = FileAuditLog(deeper).Append(SampleRecord());
  ASSERT_FALSE(create.ok());
  EXPECT_EQ(create.error().message,
            "audit log " + deeper + ": cannot create " + Path("ro/sub") + ": Permission denied");
}

TEST_F(AuditLogTest, ParentIsAFile) {
  std::ofstream(Path("file")) << "x";
  const std::string path = Path("file/audit.log");
  const Status status = FileAuditLog(path).Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, StartsWith("audit log " + path + ": "));
  EXPECT_THAT(status.error().message, HasSubstr("Not a directory"));
}

TEST_F(AuditLogTest, EmptyPathIsAnError) {
  const Status status = FileAuditLog("").Append(SampleRecord());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, "io");
}

TEST_F(AuditLogTest, ConcurrentAppendsGiveWholeLines) {
  const std::string path = Path("audit.log");
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      FileAuditLog log(path);  // One writer each, as separate processes would be.
      AuditRecord r = SampleRecord();
      r.pid = t;
      // Long enough that an interleaved write would show.
      r.command = std::string(3000 + t * 100, static_cast<char>('a' + t));
      for (int i = 0; i < kPerThread; ++i) {
        r.start_ticks = static_cast<uint64_t>(i);
        EXPECT_TRUE(log.Append(r).ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  const std::vector<std::string> lines = Lines(ReadAll(path));
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kPerThread));
  std::map<int, int> per_thread;
  for (const std::string& line : lines) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const int t = j["pid"].get<int>();
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(j["command"], std::string(3000 + t * 100, static_cast<char>('a' + t)));
    // Each writer's lines appear in the order it wrote them.
    EXPECT_EQ(j["start_ticks"], per_thread[t]++);
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_thread[t], kPerThread);
}

// DefaultAuditLogPath, with an injected environment.
std::function<const char*(const char*)> Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(DefaultAuditLogPath, RootUsesTheSystemLog) {
  EXPECT_EQ(DefaultAuditLogPath(0, Env({{"XDG_STATE_HOME", "/x"}, {"HOME", "/root"}})),
            "/var/log/gpuwarden/audit.log");
}

TEST(DefaultAuditLogPath, XdgStateHome) {
  EXPECT_EQ(DefaultAuditLogPath(1000, Env({{"XDG_STATE_HOME", "/s"}, {"HOME", "/home/a"}})),
            "/s/gpuwarden/audit.log");
  EXPECT_EQ(DefaultAuditLogPath(1000, Env({{"XDG_STATE_HOME", "/s/"}})), "/s/gpuwarden/audit.log");
}

TEST(DefaultAuditLogPath, RelativeOrEmptyXdgFallsBackToHome) {
  for (const char* state : {"", "relative/state"}) {
    EXPECT_EQ(DefaultAuditLogPath(1000, Env({{"XDG_STATE_HOME", state}, {"HOME", "/home/a"}})),
              "/home/a/.local/state/gpuwarden/audit.log")
        << state;
  }
  EXPECT_EQ(DefaultAuditLogPath(1000, Env({{"HOME", "/home/a/"}})),
            "/home/a/.local/state/gpuwarden/audit.log");
}

TEST(DefaultAuditLogPath, NoUsableHomeFallsBackToPasswd) {
  // A uid in the passwd database (nobody, or this user).
  const uid_t uid = geteuid() == 0 ? 65534 : geteuid();
  const passwd* pw = getpwuid(uid);
  if (pw == nullptr || pw->pw_dir == nullptr || pw->pw_dir[0] != '/') {
    GTEST_SKIP() << "uid " << uid << " has no passwd entry with a home";
  }
  const std::string home = pw->pw_dir;
  const std::string expected = (home == "/" ? "" : home) + "/.local/state/gpuwarden/audit.log";
  EXPECT_EQ(DefaultAuditLogPath(uid, Env({})), expected);
  EXPECT_EQ(DefaultAuditLogPath(uid, Env({{"HOME", ""}, {"XDG_STATE_HOME", "x"}})), expected);
  EXPECT_EQ(DefaultAuditLogPath(uid, nullptr), expected);
}

TEST(DefaultAuditLogPath, NothingWorksGivesEmpty) {
  // A uid with no passwd entry (nearly 2^32 - 2: never allocated).
  const uid_t unknown = 4294967200u;
  if (getpwuid(unknown) != nullptr) GTEST_SKIP() << "uid " << unknown << " exists here";
  EXPECT_EQ(DefaultAuditLogPath(unknown, Env({{"HOME", "relative"}})), "");
}

}  // namespace
}  // namespace gw::act
