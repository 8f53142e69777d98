#include "render/status_text.h"

#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/text.h"
#include "core/units.h"
#include "render/filter.h"
#include "render/test_snapshots.h"

namespace gw::render {
namespace {

using testing::AllFixtures;
using testing::BusyBox;
using testing::Hostile;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The first line containing `needle`, or "" when none does.
std::string LineWith(const std::string& text, const std::string& needle) {
  for (const std::string& l : Lines(text)) {
    if (l.find(needle) != std::string::npos) return l;
  }
  return "";
}

size_t LineIndex(const std::string& text, const std::string& needle) {
  const auto lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) return i;
  }
  return lines.size();
}

std::string StripAnsi(const std::string& s) {
  static const std::regex kSgr("\x1b\\[[0-9;]*m");
  return std::regex_replace(s, kSgr, "");
}

// No byte a terminal could act on: C0 (except the line feeds), DEL, or C1
// in its two-byte UTF-8 form.
bool TerminalSafe(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
    if (c == 0xC2 && i + 1 < s.size()) {
      const auto n = static_cast<unsigned char>(s[i + 1]);
      if (n >= 0x80 && n <= 0x9F) return false;
    }
  }
  return true;
}

constexpr char kBusyGolden100[] =
    R"(node07 · driver 550.90.07 · CUDA 12.4 · NVML 12.550.90.07 · 4 GPUs · 2025-01-20 10:18:26 UTC

GPU 0  NVIDIA H100 80GB HBM3  19:00.0   61°C  fan 40%   P0   512 / 700 W
  VRAM ██████████████████░░ 70/79.6 GiB      88%   UTIL ███████████████████░  97%
     1001  alice          60 GiB  SM 95%   3h 20m  run     python train.py --config 'a b.yaml'
     1002  bob            10 GiB  SM 3%     2d 4h  sleep   [jupyter.service] /usr/bin/python3 -m ju…

GPU 1  NVIDIA H100 80GB HBM3  3B:00.0   27°C  fan N/A   P0   72 / 700 W
  VRAM █████░░░░░░░░░░░░░░░ 20/79.6 GiB      25%   UTIL ██████████░░░░░░░░░░  50%
     1001  alice          20 GiB  SM 90%   3h 20m  run     python train.py --config 'a b.yaml'

GPU 2  NVIDIA H100 80GB HBM3  4C:00.0   27°C  fan N/A   P0   72 / 700 W
  VRAM ████████░░░░░░░░░░░░ 31/79.6 GiB      39%   UTIL █░░░░░░░░░░░░░░░░░░░   5%
     2001  carol          30 GiB  SM N/A      45s  run     [docker 3f2a1b9c4d5e] python serve.py
     3001  ?               1 GiB  SM 1%       N/A  N/A     ? (not in /proc)

GPU 3  NVIDIA H100 80GB HBM3  5D:00.0   27°C  fan N/A   P0   72 / 700 W
  VRAM ░░░░░░░░░░░░░░░░░░░░ 1 MiB/79.6 GiB    0%   UTIL ░░░░░░░░░░░░░░░░░░░░   0%
  MIG on
    no processes
    ! /dev/nvidia3 held by 1 process not listed by the driver: 4001 (bob)

Not listed by the driver, but holding GPU device files:
     4001  bob            11m  sleep   holds nvidia3,nvidiactl  python worker.py

USER          PROCS  GPUS                VRAM
alice             1  0,1               80 GiB
carol             1  2                 30 GiB
bob               1  0                 10 GiB  +1 unlisted holder
?                 1  2                  1 GiB
)";

TEST(RenderStatusText, BusyBoxGoldenAt100Columns) {
  EXPECT_EQ(RenderStatusText(BusyBox(), {.color = false, .width = 100}), kBusyGolden100);
}

TEST(RenderStatusText, EveryLineFitsTheWidth) {
  for (const auto& [name, snapshot] : AllFixtures()) {
    for (int width : {20, 40, 60, 79, 80, 100, 132, 200}) {
      const std::string out = RenderStatusText(snapshot, {.color = false, .width = width});
      for (const std::string& line : Lines(out)) {
        EXPECT_LE(DisplayWidth(line), width) << name << " @" << width << ": " << line;
        EXPECT_EQ(ToValidUtf8(line), line) << name << " @" << width << " split a character";
      }
    }
  }
}

// docs/cli.md, "Output": with no width (stdout is not a terminal) no line
// and no table cell is cut.
TEST(RenderStatusText, NoWidthCutsNothing) {
  for (const auto& [name, snapshot] : AllFixtures()) {
    const std::string out = RenderStatusText(snapshot, {.color = false, .width = kUnlimitedWidth});
    EXPECT_EQ(out.find("…"), std::string::npos) << name << "\n" << out;
  }
}

TEST(RenderStatusText, NoEscapeByteWithoutColour) {
  for (const auto& [name, snapshot] : AllFixtures()) {
    for (int width : {60, 100}) {
      const std::string out = RenderStatusText(snapshot, {.color = false, .width = width});
      EXPECT_EQ(out.find('\x1b'), std::string::npos) << name;
      EXPECT_TRUE(TerminalSafe(out)) << name;
    }
  }
}

TEST(RenderStatusText, ColourAddsOnlySgrCodesAndKeepsTheLayout) {
  for (const auto& [name, snapshot] : AllFixtures()) {
    for (int width : {60, 100}) {
      const std::string plain = RenderStatusText(snapshot, {.color = false, .width = width});
      const std::string colored = RenderStatusText(snapshot, {.color = true, .width = width});
      EXPECT_NE(colored.find("\x1b["), std::string::npos) << name;
      EXPECT_EQ(StripAnsi(colored), plain) << name << " @" << width;
      // The only ESC bytes are ours: the hostile names' ones are escaped.
      EXPECT_TRUE(TerminalSafe(StripAnsi(colored))) << name;
    }
  }
}

TEST(RenderStatusText, ColourFollowsLoadThresholds) {
  const std::string out = RenderStatusText(BusyBox(), {.color = true, .width = 100});
  // GPU 0: VRAM 88% and util 97% are heavy (red); GPU 2: util 5% is light
  // (green), VRAM 39% moderate (yellow).
  EXPECT_NE(LineWith(out, "VRAM").find("\x1b[31m 88%"), std::string::npos);
  EXPECT_NE(LineWith(out, "VRAM").find("\x1b[31m 97%"), std::string::npos);
  const std::string gpu2 = Lines(out)[LineIndex(out, "GPU 2") + 1];
  EXPECT_NE(gpu2.find("\x1b[33m 39%"), std::string::npos) << gpu2;
  EXPECT_NE(gpu2.find("\x1b[32m  5%"), std::string::npos) << gpu2;
}

TEST(RenderStatusText, UnknownValuesPrintNAneverZero) {
  const std::string out = RenderStatusText(testing::AllUnknown(), {.color = false, .width = 100});
  const std::string gpu = LineWith(out, "GPU 0");
  EXPECT_NE(gpu.find("name N/A"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("temp N/A"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("fan N/A"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("pstate N/A"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("power N/A"), std::string::npos) << gpu;
  const std::string mem = LineWith(out, "VRAM");
  EXPECT_NE(mem.find("N/A"), std::string::npos) << mem;
  const std::string proc = LineWith(out, "4242");
  EXPECT_NE(proc.find("SM N/A"), std::string::npos) << proc;
  // Not a single "0" value anywhere apart from the GPU's index and the time.
  const std::regex zero(R"((^|[^0-9.])0(\.0)?( ?(%|B|MiB|GiB|W|°C|s)|$| ))");
  const auto lines = Lines(out);
  const size_t users = LineIndex(out, "USER ");
  ASSERT_LT(users + 1, lines.size());
  EXPECT_TRUE(std::regex_search(lines[users + 1], std::regex(R"(^\? +1 +0 +N/A$)")))
      << lines[users + 1];
  for (size_t i = 0; i < users; ++i) {
    const std::string& line = lines[i];
    if (line.find("UTC") != std::string::npos) continue;
    std::string without_index = std::regex_replace(line, std::regex("GPU 0"), "GPU #");
    EXPECT_FALSE(std::regex_search(without_index, zero)) << line;
  }
}

TEST(RenderStatusText, PartlyKnownPowerAndMemorySayWhichPartIsUnknown) {
  Snapshot s = BusyBox();
  s.gpus[0].power_draw_w.reset();
  s.gpus[0].memory.used_bytes.reset();
  const std::string out = RenderStatusText(s, {.color = false, .width = 100});
  EXPECT_NE(LineWith(out, "GPU 0").find("power N/A / 700 W"), std::string::npos);
  EXPECT_NE(LineWith(out, "VRAM").find("N/A/79.6 GiB"), std::string::npos);
}

TEST(RenderStatusText, HostileNamesAreSanitised) {
  const std::string out = RenderStatusText(Hostile(), {.color = false, .width = 200});
  EXPECT_TRUE(TerminalSafe(out));
  EXPECT_EQ(ToValidUtf8(out), out);
  EXPECT_NE(out.find(R"(\x1b[2J\x1b]0;pwned\x07 evil\nname csi\u009b31m rtl\u202egpj.exe)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(caf\xe9 \xff\xfe --x=\x9b)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"([docker \x1b[31mRED])"), std::string::npos) << out;
}

TEST(RenderStatusText, CjkCommandIsCutOnCharacterBoundaries) {
  for (int width : {61, 62, 80, 99, 100, 120}) {
    const std::string out = RenderStatusText(Hostile(), {.color = false, .width = width});
    const std::string line = LineWith(out, "用户");  // CJK user name, then a CJK command.
    ASSERT_FALSE(line.empty()) << width;
    EXPECT_LE(DisplayWidth(line), width);
    EXPECT_GE(DisplayWidth(line), width - 1);  // A wide character may leave one column.
    EXPECT_TRUE(line.ends_with("…")) << line;
    EXPECT_EQ(ToValidUtf8(line), line);
    if (width >= 100) {
      EXPECT_NE(line.find("python3 训练"), std::string::npos) << line;
    }
  }
}

TEST(RenderStatusText, SimulatedAndOfflineSourcesAreMarkedFirst) {
  const std::string sim = RenderStatusText(Hostile(), {});
  EXPECT_EQ(LineIndex(sim, "SIMULATED server (scenario scenarios/busy-8xh100.yaml)"), 0u);
  const std::string xml = RenderStatusText(testing::XmlDump(), {});
  EXPECT_EQ(LineIndex(xml, "offline: nvidia-smi dump /tmp/a100.xml"), 0u);
  // Offline there is no /proc: the process shows its dump name, user N/A,
  // and no per-user table of unknowns.
  const std::string proc = LineWith(xml, "3121");
  EXPECT_NE(proc.find("N/A"), std::string::npos) << proc;
  EXPECT_NE(proc.find("/usr/bin/python3"), std::string::npos) << proc;
  EXPECT_EQ(xml.find("USER "), std::string::npos);
  const std::string real = RenderStatusText(BusyBox(), {});
  EXPECT_EQ(real.find("SIMULATED"), std::string::npos);
  EXPECT_EQ(real.find("offline"), std::string::npos);
}

TEST(RenderStatusText, ProbeErrorsAndTimeoutComeBeforeTheGpus) {
  const std::string out = RenderStatusText(testing::TimedOut(), {.color = false, .width = 120});
  const size_t timeout = LineIndex(out, "! probe timed out after 2000 ms");
  const size_t driver = LineIndex(out, "! driver not responding: NVML did not answer");
  const size_t gpu = LineIndex(out, "GPU 0  ");
  EXPECT_LT(timeout, gpu);
  EXPECT_LT(driver, gpu);
  EXPECT_NE(LineWith(out, "processes: N/A").size(), 0u);  // List unknown, not "no processes".
  EXPECT_EQ(out.find("no processes"), std::string::npos);

  const std::string colored = RenderStatusText(testing::TimedOut(), {.color = true, .width = 120});
  EXPECT_NE(LineWith(colored, "driver not responding").find("\x1b[31m"), std::string::npos);
}

// A warning about processes names the first ten in its message; --verbose
// adds every PID, wrapped to the width, and only then.
TEST(RenderStatusText, VerboseListsEveryProcessAWarningIsAbout) {
  Snapshot s = BusyBox();
  ProbeError partial{"proc", "partial_scan", "open files of 25 processes unread", std::nullopt,
                     std::nullopt};
  for (pid_t pid = 70001; pid <= 70025; ++pid) partial.pids.push_back(pid);
  s.errors.push_back(partial);

  const std::string quiet = RenderStatusText(s, {.color = false, .width = 60});
  EXPECT_EQ(quiet.find("70025"), std::string::npos) << quiet;

  const std::string out = RenderStatusText(s, {.color = false, .width = 60, .verbose = true});
  const size_t warning = LineIndex(out, "! partial scan: open files of 25 processes unread");
  const size_t list = LineIndex(out, "  PIDs: 70001, 70002,");
  EXPECT_EQ(list, warning + 1) << out;
  for (pid_t pid = 70001; pid <= 70025; ++pid) {
    EXPECT_NE(out.find(std::to_string(pid)), std::string::npos) << pid << "\n" << out;
  }
  for (const std::string& line : Lines(out)) EXPECT_LE(DisplayWidth(line), 60) << line;
}

TEST(RenderStatusText, LostGpuShowsTheReasonInItsBlock) {
  const std::string out = RenderStatusText(testing::LostGpu(), {.color = false, .width = 100});
  const size_t block = LineIndex(out, "GPU 1  ");
  const size_t lost = LineIndex(out, "! LOST: GPU has fallen off the bus");
  EXPECT_GT(lost, block);
  EXPECT_LE(lost, block + 3);
  EXPECT_LT(LineIndex(out, "! GPU lost: GPU has fallen off the bus (GPU 1)"),
            LineIndex(out, "GPU 0  "));
  EXPECT_NE(Lines(out)[block].find("3B:00.0"), std::string::npos);

  Snapshot other = testing::LostGpu();
  other.gpus[1].unreachable->code = "no_permission";
  other.gpus[1].unreachable->message = "insufficient permissions";
  const std::string out2 = RenderStatusText(other, {});
  EXPECT_NE(out2.find("! UNREACHABLE (no_permission): insufficient permissions"),
            std::string::npos);
}

TEST(RenderStatusText, ProcessRowsCarryTheFactsToAct) {
  const std::string out = RenderStatusText(BusyBox(), {.color = false, .width = 120});
  const std::string alice = LineWith(out, "1001  alice");
  EXPECT_NE(alice.find("60 GiB"), std::string::npos);
  EXPECT_NE(alice.find("SM 95%"), std::string::npos);
  EXPECT_NE(alice.find("3h 20m"), std::string::npos);
  EXPECT_NE(alice.find("run"), std::string::npos);
  EXPECT_NE(alice.find("python train.py --config 'a b.yaml'"), std::string::npos);
  // Biggest first within a GPU.
  EXPECT_LT(LineIndex(out, "1001  alice"), LineIndex(out, "1002  bob"));
  // Not in /proc: user and command are '?'.
  const std::string ghost = LineWith(out, "3001");
  EXPECT_NE(ghost.find("?"), std::string::npos);
  EXPECT_NE(ghost.find("? (not in /proc)"), std::string::npos);
  // Container and service owners are tagged; login sessions are not.
  EXPECT_NE(LineWith(out, "2001").find("[docker 3f2a1b9c4d5e]"), std::string::npos);
  EXPECT_NE(LineWith(out, "1002").find("[jupyter.service]"), std::string::npos);
  EXPECT_EQ(out.find("session-4.scope"), std::string::npos);
}

TEST(RenderStatusText, ZombieAndDStateAreFlagged) {
  Snapshot s = BusyBox();
  s.processes.at(1001).state = ProcessState::kZombie;
  s.processes.at(1001).cmdline.clear();
  s.processes.at(1002).state = ProcessState::kDiskSleep;
  const std::string out = RenderStatusText(s, {.color = true, .width = 120});
  const std::string z = StripAnsi(LineWith(out, "1001"));
  EXPECT_NE(z.find("zombie"), std::string::npos) << z;
  EXPECT_NE(z.find("[python]"), std::string::npos) << z;  // comm when argv is empty.
  EXPECT_NE(LineWith(out, "1001").find("\x1b[31mzombie"), std::string::npos);
  EXPECT_NE(LineWith(out, "1002").find("\x1b[31mD-wait"), std::string::npos);
}

TEST(RenderStatusText, UnlistedHoldersAreListedOnceAndMarkedOnTheirGpu) {
  const std::string out = RenderStatusText(BusyBox(), {.color = false, .width = 100});
  const size_t gpu3 = LineIndex(out, "GPU 3");
  const size_t mark = LineIndex(out, "/dev/nvidia3 held by 1 process not listed by the driver");
  EXPECT_GT(mark, gpu3);
  EXPECT_NE(Lines(out)[mark].find("4001 (bob)"), std::string::npos);
  const std::string row = LineWith(out, "holds nvidia3,nvidiactl");
  EXPECT_NE(row.find("4001"), std::string::npos);
  EXPECT_NE(row.find("python worker.py"), std::string::npos);
  // Alice holds every /dev/nvidia* but is listed: never reported as a holder.
  EXPECT_EQ(out.find("1001 (alice)"), std::string::npos);
}

TEST(RenderStatusText, PerUserTotalsAreSummedOverGpus) {
  const std::string out = RenderStatusText(BusyBox(), {.color = false, .width = 100});
  const size_t header = LineIndex(out, "USER ");
  const auto lines = Lines(out);
  ASSERT_LT(header + 4, lines.size());
  EXPECT_TRUE(std::regex_search(lines[header + 1], std::regex(R"(^alice +1 +0,1 +80 GiB$)")))
      << lines[header + 1];
  EXPECT_TRUE(std::regex_search(lines[header + 2], std::regex(R"(^carol +1 +2 +30 GiB$)")));
  EXPECT_TRUE(std::regex_search(lines[header + 3],
                                std::regex(R"(^bob +1 +0 +10 GiB +\+1 unlisted holder$)")));
  EXPECT_TRUE(std::regex_search(lines[header + 4], std::regex(R"(^\? +1 +2 +1 GiB$)")));

  Snapshot partial = BusyBox();
  partial.gpus[1].processes[0].used_memory_bytes.reset();
  const std::string out2 = RenderStatusText(partial, {});
  EXPECT_TRUE(std::regex_search(out2, std::regex(R"((^|\n)alice +1 +0,1 +≥60 GiB\n)"))) << out2;
}

TEST(RenderStatusText, FilteredSnapshotSaysHowManyGpusAreShown) {
  SnapshotFilter only1;
  only1.gpus = {"1"};
  auto f = FilterSnapshot(BusyBox(), only1);
  ASSERT_TRUE(f.ok());
  const std::string out = RenderStatusText(*f, {});
  EXPECT_NE(Lines(out)[0].find("1 of 4 GPUs"), std::string::npos) << Lines(out)[0];
  EXPECT_EQ(out.find("GPU 0"), std::string::npos);
}

TEST(RenderStatusText, NoGpus) {
  EXPECT_NE(RenderStatusText(Snapshot{}, {}).find("no GPUs found"), std::string::npos);
  Snapshot s;
  s.system.gpu_count = 2;
  s.errors.push_back({"nvml", "no_permission", "cannot open /dev/nvidia0", {}, 4});
  const std::string out = RenderStatusText(s, {});
  EXPECT_NE(out.find("no GPU could be read (the driver reports 2)"), std::string::npos);
  EXPECT_NE(out.find("! no permission: cannot open /dev/nvidia0"), std::string::npos);
}

TEST(RenderStatusText, NarrowWidthKeepsTheKeyFacts) {
  const std::string out = RenderStatusText(BusyBox(), {.color = false, .width = 80});
  const std::string alice = LineWith(out, "1001  alice");
  EXPECT_NE(alice.find("60 GiB"), std::string::npos);
  EXPECT_NE(alice.find("SM 95%"), std::string::npos);
  EXPECT_NE(alice.find("python train.py"), std::string::npos);
  EXPECT_NE(LineWith(out, "GPU 0").find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(LineWith(out, "GPU 0").find("512 / 700 W"), std::string::npos);
  EXPECT_NE(LineWith(out, "VRAM").find("88%"), std::string::npos);
  EXPECT_NE(LineWith(out, "VRAM").find("97%"), std::string::npos);
}

TEST(RenderStatusText, RandomBytesNeverEscapeOrOverflow) {
  std::mt19937 rng(20250120);  // Fixed seed: the same cases every run.
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> len(0, 40);
  std::uniform_int_distribution<int> cols(1, 160);
  auto random_text = [&] {
    std::string t;
    for (int i = len(rng); i > 0; --i) t += static_cast<char>(byte(rng));
    return t;
  };
  for (int round = 0; round < 200; ++round) {
    Snapshot s = BusyBox();
    s.host.hostname = random_text();
    s.gpus[0].name = random_text();
    s.processes.at(1001).cmdline = {random_text(), random_text()};
    s.processes.at(1002).user = random_text();
    s.processes.at(4001).device_files.push_back(random_text());
    s.errors.push_back({"nvml", random_text(), random_text(), {}, {}});
    const int width = cols(rng);
    const std::string out = RenderStatusText(s, {.color = round % 2 == 0, .width = width});
    const std::string plain = StripAnsi(out);
    ASSERT_TRUE(TerminalSafe(plain)) << "round " << round;
    ASSERT_EQ(ToValidUtf8(out), out) << "round " << round;
    for (const std::string& line : Lines(plain)) {
      ASSERT_LE(DisplayWidth(line), width) << "round " << round << ": " << line;
    }
  }
}

TEST(RenderStatusText, IsPure) {
  const Snapshot s = Hostile();
  EXPECT_EQ(RenderStatusText(s, {.color = true, .width = 90}),
            RenderStatusText(s, {.color = true, .width = 90}));
}

}  // namespace
}  // namespace gw::render
