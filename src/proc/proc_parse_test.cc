#include "proc/proc_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace gw::proc {
namespace {

using namespace std::string_literals;

// A stat line in the kernel's exact shape (52 fields), with the fields the
// parser reads set from the arguments and the rest as a real process has them.
std::string StatLine(const std::string& pid_and_comm, const std::string& state, int ppid,
                     uint64_t utime, uint64_t stime, uint64_t start_ticks, int64_t rss_pages) {
  return pid_and_comm + " " + state + " " + std::to_string(ppid) +
         " 5401 2636 34816 5404 4194304 101 0 0 0 " + std::to_string(utime) + " " +
         std::to_string(stime) + " 0 0 20 0 3 0 " + std::to_string(start_ticks) + " 3133440 " +
         std::to_string(rss_pages) +
         " 18446744073709551615 94001363652608 94001363672489 140724928542720 0 0 0 0 0 0 0 0 "
         "0 17 1 0 0 0 0 0 94001363688496 94001363690112 94002248556544 140724928547269 "
         "140724928547289 140724928547289 140724928548843 0\n";
}

TEST(ParseStat, ReadsAnOrdinaryProcess) {
  Result<StatFields> f = ParseStat(StatLine("5404 (cat)", "R", 5401, 7, 3, 60307, 390));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->pid, 5404);
  EXPECT_EQ(f->comm, "cat");
  EXPECT_EQ(f->state, 'R');
  EXPECT_EQ(f->ppid, 5401);
  EXPECT_EQ(f->pgrp, 5401);
  EXPECT_EQ(f->session, 2636);
  EXPECT_EQ(f->tty_nr, 34816);
  EXPECT_EQ(f->utime_ticks, 7u);
  EXPECT_EQ(f->stime_ticks, 3u);
  EXPECT_EQ(f->num_threads, 3);
  EXPECT_EQ(f->start_ticks, 60307u);
  EXPECT_EQ(f->vsize_bytes, 3133440u);
  EXPECT_EQ(f->rss_pages, 390);
}

TEST(ParseStat, CommWithSpaces) {
  Result<StatFields> f = ParseStat(StatLine("812 (Web Content)", "S", 1, 0, 0, 9, 1));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->comm, "Web Content");
  EXPECT_EQ(f->state, 'S');
  EXPECT_EQ(f->ppid, 1);
}

TEST(ParseStat, HostileCommIsSplitAtTheLastParenthesis) {
  // A process can name itself "x) R 1 (" with prctl(PR_SET_NAME): a parser
  // that stops at the first ')' would read state 'R' and ppid 1.
  Result<StatFields> f = ParseStat(StatLine("77 (x) R 1 ()", "S", 4242, 1, 2, 3, 4));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->comm, "x) R 1 (");
  EXPECT_EQ(f->state, 'S');
  EXPECT_EQ(f->ppid, 4242);
  EXPECT_EQ(f->start_ticks, 3u);
}

TEST(ParseStat, CommWithNewlinesAndParentheses) {
  Result<StatFields> f = ParseStat(StatLine("78 (a) (b\nc) d)", "T", 9, 0, 0, 5, 6));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->comm, "a) (b\nc) d");
  EXPECT_EQ(f->state, 'T');
  EXPECT_EQ(f->rss_pages, 6);
}

TEST(ParseStat, EmptyCommAndCommThatIsAParenthesis) {
  Result<StatFields> empty = ParseStat(StatLine("10 ()", "S", 1, 0, 0, 0, 0));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->comm, "");
  Result<StatFields> paren = ParseStat(StatLine("11 ())", "S", 2, 0, 0, 0, 0));
  ASSERT_TRUE(paren.ok());
  EXPECT_EQ(paren->comm, ")");
  EXPECT_EQ(paren->ppid, 2);
}

TEST(ParseStat, ZombieAndKernelThread) {
  Result<StatFields> z = ParseStat(StatLine("4321 (python3)", "Z", 4300, 120, 30, 777, 0));
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->state, 'Z');
  EXPECT_EQ(z->rss_pages, 0);
  EXPECT_EQ(z->utime_ticks, 120u);
  Result<StatFields> k = ParseStat(StatLine("2 (kthreadd)", "S", 0, 0, 0, 0, 0));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->ppid, 0);
  EXPECT_EQ(k->comm, "kthreadd");
}

TEST(ParseStat, LargeCounters) {
  Result<StatFields> f = ParseStat(
      StatLine("9 (train)", "R", 1, 18446744073709551615ull, 5, 9000000000000ull, 25000000));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->utime_ticks, 18446744073709551615ull);
  EXPECT_EQ(f->start_ticks, 9000000000000ull);
  EXPECT_EQ(f->rss_pages, 25000000);
}

TEST(ParseStat, WithoutTrailingNewline) {
  std::string line = StatLine("5 (a)", "S", 1, 0, 0, 42, 1);
  line.pop_back();
  Result<StatFields> f = ParseStat(line);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->start_ticks, 42u);
}

TEST(ParseStat, RejectsMalformedInput) {
  const std::string cases[] = {
      "",
      "1234",
      "1234 cat R 1",                                               // No parentheses.
      "abc (cat) R 1 1 1 0 -1 0 0 0 0 0 0 0",                       // PID not a number.
      "12 (cat) R 1 1 1 0 -1 0 0 0 0 0 1 2",                        // Cut short before field 24.
      "12 (cat) RS 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 100 3",  // State of two letters.
      "12 (cat) R x 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 100 3",   // ppid not a number.
      ") 12 (cat R 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 100 3",  // ')' before '('.
  };
  for (const std::string& c : cases) {
    Result<StatFields> f = ParseStat(c);
    ASSERT_FALSE(f.ok()) << "accepted: " << c;
    EXPECT_EQ(f.error().code, "malformed");
  }
}

TEST(ParseStat, MinimalTwentyFourFieldsAreEnough) {
  Result<StatFields> f = ParseStat("12 (cat) R 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 100 3");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->start_ticks, 5u);
  EXPECT_EQ(f->vsize_bytes, 100u);
  EXPECT_EQ(f->rss_pages, 3);
}

TEST(StateFromChar, MapsEveryKernelLetter) {
  EXPECT_EQ(StateFromChar('R'), ProcessState::kRunning);
  EXPECT_EQ(StateFromChar('S'), ProcessState::kSleeping);
  EXPECT_EQ(StateFromChar('D'), ProcessState::kDiskSleep);
  EXPECT_EQ(StateFromChar('Z'), ProcessState::kZombie);
  EXPECT_EQ(StateFromChar('T'), ProcessState::kStopped);
  EXPECT_EQ(StateFromChar('t'), ProcessState::kStopped);
  EXPECT_EQ(StateFromChar('I'), ProcessState::kIdle);
  EXPECT_EQ(StateFromChar('X'), ProcessState::kDead);
  EXPECT_EQ(StateFromChar('x'), ProcessState::kDead);
  EXPECT_EQ(StateFromChar('W'), ProcessState::kOther);
  EXPECT_EQ(StateFromChar('?'), ProcessState::kOther);
}

constexpr char kStatus[] =
    "Name:\tpython3\n"
    "Umask:\t0022\n"
    "State:\tS (sleeping)\n"
    "Tgid:\t4242\n"
    "Ngid:\t0\n"
    "Pid:\t4242\n"
    "PPid:\t1\n"
    "TracerPid:\t0\n"
    "Uid:\t1000\t0\t0\t0\n"
    "Gid:\t1000\t1000\t1000\t1000\n"
    "FDSize:\t64\n";

TEST(ParseStatusUid, TakesTheRealUid) {
  // Real uid 1000, effective 0: a setuid-root program run by uid 1000.
  EXPECT_EQ(ParseStatusUid(kStatus), std::optional<uid_t>(1000));
}

TEST(ParseStatusUid, OtherShapes) {
  EXPECT_EQ(ParseStatusUid("Uid:\t0\t0\t0\t0\n"), std::optional<uid_t>(0));
  EXPECT_EQ(ParseStatusUid("Name:\tx\nUid: 65534 65534 65534 65534"), std::optional<uid_t>(65534));
  EXPECT_EQ(ParseStatusUid("Name:\tx\nGid:\t5\t5\t5\t5\n"), std::nullopt);
  EXPECT_EQ(ParseStatusUid("Uid:\tabc\t1\t1\t1\n"), std::nullopt);
  EXPECT_EQ(ParseStatusUid("Uid:\t99999999999\n"), std::nullopt);
  EXPECT_EQ(ParseStatusUid("Uid:\n"), std::nullopt);
  EXPECT_EQ(ParseStatusUid(""), std::nullopt);
  // "Uid:" must start a line: a Name containing it is not the Uid line.
  EXPECT_EQ(ParseStatusUid("Name:\tUid:\t7\nUid:\t8\t8\t8\t8\n"), std::optional<uid_t>(8));
}

TEST(ParseCmdline, SplitsOnNul) {
  EXPECT_EQ(ParseCmdline("python3\0train.py\0--lr\0"
                         "0.1\0"s),
            (std::vector<std::string>{"python3", "train.py", "--lr", "0.1"}));
}

TEST(ParseCmdline, EmptyForZombiesAndKernelThreads) {
  EXPECT_TRUE(ParseCmdline("").empty());
  EXPECT_TRUE(ParseCmdline("\0"s).empty());
}

TEST(ParseCmdline, KeepsEmptyArgumentsInTheMiddle) {
  EXPECT_EQ(ParseCmdline("a\0\0b\0"s), (std::vector<std::string>{"a", "", "b"}));
}

TEST(ParseCmdline, RewrittenTitles) {
  // No NUL at all, and NUL padding after the title.
  EXPECT_EQ(ParseCmdline("nginx: worker process"),
            (std::vector<std::string>{"nginx: worker process"}));
  EXPECT_EQ(ParseCmdline("postgres: checkpointer\0\0\0\0\0\0"s),
            (std::vector<std::string>{"postgres: checkpointer"}));
}

TEST(ParseCmdline, KeepsHostileBytesRaw) {
  // Sanitising is the renderer's job: the parser must not lose or alter bytes.
  std::string evil = "\x1b]0;owned\x07\x1b[2J\nline2\t\r";
  EXPECT_EQ(ParseCmdline("sh\0"s + evil + "\0"s), (std::vector<std::string>{"sh", evil}));
}

constexpr char kProcStat[] =
    "cpu  10132153 290696 3084719 46828483 16683 0 25195 0 0 0\n"
    "cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n"
    "cpu1 1335294 30546 563913 13329291 2915 0 1788 0 0 0\n"
    "cpu2 1200000 30000 500000 13000000 2000 0 1000 0 0 0\n"
    "intr 199292 0 0\n"
    "ctxt 1990473\n"
    "btime 1062191376\n"
    "processes 2915\n"
    "procs_running 1\n"
    "procs_blocked 0\n";

TEST(ParseProcStat, BootTimeAndCpuCount) {
  EXPECT_EQ(ParseBootTime(kProcStat), std::optional<uint64_t>(1062191376));
  EXPECT_EQ(ParseCpuCount(kProcStat), std::optional<unsigned>(3));
  EXPECT_EQ(ParseBootTime("cpu 1 2 3\n"), std::nullopt);
  EXPECT_EQ(ParseBootTime("btime x\n"), std::nullopt);
  EXPECT_EQ(ParseCpuCount("btime 5\n"), std::nullopt);
  EXPECT_EQ(ParseCpuCount("cpu  1 2 3\n"), std::nullopt);  // The total line is not a CPU.
}

TEST(ParseModules, NameReferencesAndUsers) {
  const auto modules = ParseModules(
      "nvidia_uvm 1576960 2 - Live 0x0000000000000000 (POE)\n"
      "nvidia_drm 77824 4 - Live 0x0000000000000000 (POE)\n"
      "nvidia_modeset 1306624 5 nvidia_drm, Live 0x0000000000000000 (POE)\n"
      "nvidia 56717312 220 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
      "garbage\n"
      "bad x notanumber - Live 0x0\n");
  ASSERT_EQ(modules.size(), 4u);
  EXPECT_EQ(modules[1].name, "nvidia_drm");
  EXPECT_EQ(modules[1].used_by, 4u);
  EXPECT_EQ(modules[1].users, "");
  EXPECT_EQ(modules[2].users, "nvidia_drm");
  EXPECT_EQ(modules[3].users, "nvidia_uvm,nvidia_modeset");
  EXPECT_EQ(modules[3].used_by, 220u);
}

}  // namespace
}  // namespace gw::proc
