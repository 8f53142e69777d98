// `gpuwarden watch` end to end: the real binary in a real terminal (tmux),
// against the simulated driver, read back with `tmux capture-pane` the way a
// person would see it. Each test runs its own tmux server (-S, a socket in
// its own directory) and kills it at the end, whatever happened. Waits poll the pane
// until what is expected shows, with a deadline; nothing sleeps to
// synchronise.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/user_process.h"
#ifdef GW_E2E_WITH_QUEUE
#include "e2e/queue_e2e_util.h"
#endif

namespace gw::test {
namespace {

// Generous: two shared cores, and the suite also runs under ASan.
constexpr double kShowS = 30;

// GPU 1 of timeline-demo.json.
constexpr char kGpu1Uuid[] = "GPU-1a7de4ca-2caf-80eb-8e74-dbd8ecfe7b1b";

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

bool HaveTmux() { return access("/usr/bin/tmux", X_OK) == 0; }

// One tmux server with one pane running a command. The command runs under a
// small shell that writes its exit status to a file: tmux 3.3 sometimes
// misses the exit of a pane's process (it stays a zombie and
// #{pane_dead_status} stays empty), so the tests do not rely on it.
class Tmux {
 public:
  Tmux(int cols, int rows, const std::vector<std::string>& argv,
       const std::map<std::string, std::string>& env) {
    // The server's socket in the test's own directory (-S): it goes with
    // the directory, even when a test dies before the destructor.
    socket_ = dir_.path() + "/tmux";
    status_file_ = dir_.path() + "/status";
    // The shell catches INT, TERM and HUP (so they reset to the default in
    // the program it starts) and outlives the program to record its status.
    std::string cmd = "exec /bin/sh -c " +
                      ShellQuote("f=$1; shift; trap true INT TERM HUP; \"$@\"; echo $? > \"$f\"") +
                      " sh " + ShellQuote(status_file_) + " /usr/bin/env";
    for (const auto& [k, v] : env) cmd += " " + ShellQuote(k + "=" + v);
    for (const std::string& a : argv) cmd += " " + ShellQuote(a);
    RunResult r = Tmux::Run({"-f", "/dev/null", "new-session", "-d", "-s", "w", "-x",
                             std::to_string(cols), "-y", std::to_string(rows), cmd, ";",
                             "set-option", "-g", "remain-on-exit", "on"});
    started_ = r.exit_code == 0;
    start_error_ = r.err;
  }
  ~Tmux() { Run({"kill-server"}); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  bool started() const { return started_; }
  const std::string& start_error() const { return start_error_; }

  RunResult Run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"/usr/bin/tmux", "-u", "-S", socket_});
    RunOptions o;
    o.timeout_s = 20;
    return RunProcess(args, o);
  }
  std::string Screen() const { return Run({"capture-pane", "-p", "-t", "w"}).out; }
  std::string ScreenWithEscapes() const { return Run({"capture-pane", "-p", "-e", "-t", "w"}).out; }
  void Keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> args = {"send-keys", "-t", "w"};
    args.insert(args.end(), keys.begin(), keys.end());
    Run(args);
  }
  // Types text literally.
  void Type(const std::string& text) const { Run({"send-keys", "-t", "w", "-l", text}); }
  std::string Format(const std::string& f) const {
    std::string out = Run({"display-message", "-p", "-t", "w", f}).out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  // gpuwarden's PID: the child of the pane's shell.
  pid_t ProgramPid() const {
    const std::string shell = Format("#{pane_pid}");
    std::istringstream children(ReadFileOrEmpty("/proc/" + shell + "/task/" + shell + "/children"));
    long pid = 0;
    children >> pid;
    return static_cast<pid_t>(pid);
  }
  // The program's exit status (128 + signal when a signal ended it), once
  // it has ended.
  std::optional<int> ExitStatus() const {
    std::ifstream in(status_file_);
    int code = -1;
    if (!(in >> code)) return std::nullopt;
    return code;
  }

  // Polls the pane until `ok` holds for its text; false after timeout_s.
  bool WaitUntil(const std::function<bool(const std::string&)>& ok, double timeout_s,
                 std::string* last = nullptr) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    std::string text;
    for (;;) {
      text = Screen();
      if (ok(text)) break;
      if (std::chrono::steady_clock::now() > end) {
        if (last) *last = text;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (last) *last = text;
    return true;
  }
  bool WaitFor(const std::string& needle, double timeout_s, std::string* last = nullptr) const {
    return WaitUntil([&](const std::string& t) { return t.find(needle) != std::string::npos; },
                     timeout_s, last);
  }
  // Until the program has ended; its exit status.
  std::optional<int> WaitForExit(double timeout_s) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      if (auto code = ExitStatus()) return code;
      if (std::chrono::steady_clock::now() > end) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  TempDir dir_;
  std::string socket_;
  std::string status_file_;
  bool started_ = false;
  std::string start_error_;
};

#define GW_REQUIRE_TMUX() \
  if (!HaveTmux()) GTEST_SKIP() << "tmux is not installed (scripts/setup.sh installs it)"

// A directory for one test: an empty settings file, the audit log, the
// simulator's process registry.
class Workspace {
 public:
  Workspace() {
    config_ = dir_.Write("config.toml", "");
    std::filesystem::create_directory(registry());
  }
  std::string config() const { return config_; }
  std::string audit_log() const { return dir_.path() + "/audit.jsonl"; }
  std::string registry() const { return dir_.path() + "/registry"; }
  // Registers `pid` as holding `mib` MiB on the GPU with `uuid`.
  void Hold(pid_t pid, const std::string& uuid, int mib) const {
    std::ofstream(registry() + "/" + std::to_string(pid)) << uuid << " " << mib << " 0\n";
  }

 private:
  TempDir dir_;
  std::string config_;
};

std::map<std::string, std::string> Env(const Workspace& ws) {
  return {{"LANG", "C.UTF-8"},
          {"LC_ALL", "C.UTF-8"},
          {"TERM", "screen"},
          {"GPUWARDEN_CONFIG", ws.config()},
          {"GPUWARDEN_SIM_START", NowSecondsString()},
          {"GPUWARDEN_SIM_PROCESS_DIR", ws.registry()},
          {"GPUWARDEN_SOCKET", ws.registry() + "/no-daemon.sock"},
          {"XDG_STATE_HOME", ws.registry() + "/state"}};
}

std::vector<std::string> Watch(const std::string& scenario, std::vector<std::string> extra) {
  std::vector<std::string> argv = {GpuwardenBinary(), "--sim", ScenarioPath(scenario), "watch"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// The line of the pane that starts with `prefix`, and the ones below it.
std::vector<std::string> Lines(const std::string& screen) {
  std::vector<std::string> lines;
  std::istringstream in(screen);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}
std::optional<size_t> LineStarting(const std::string& screen, const std::string& prefix) {
  auto lines = Lines(screen);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(prefix, 0) == 0) return i;
  }
  return std::nullopt;
}
// The metrics line of GPU `g` (full layout: the line after its title).
std::string MetricsOf(const std::string& screen, int g) {
  auto at = LineStarting(screen, "GPU " + std::to_string(g) + " ");
  if (!at) return "";
  auto lines = Lines(screen);
  return *at + 1 < lines.size() ? lines[*at + 1] : "";
}
// "UTIL ██▏░░░       36%       ▄▄▄▄" -> the value and the graph after it.
std::string UtilValue(const std::string& metrics) {
  static const std::regex re("UTIL \\S+ +([0-9]+%|N/A)");
  std::smatch m;
  return std::regex_search(metrics, m, re) ? m[1].str() : "";
}
std::string UtilGraph(const std::string& metrics) {
  static const std::regex re("UTIL \\S+ +(?:[0-9]+%|N/A) +(\\S+)");
  std::smatch m;
  return std::regex_search(metrics, m, re) ? m[1].str() : "";
}

TEST(WatchE2e, ValuesAndHistoryMoveWithTheTimeline) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Tmux t(80, 24, Watch("timeline-demo.json", {}), Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  std::string screen;
  // t < 2 s: GPU 0 idle; GPU 1 runs PID 720440 at 36 %.
  ASSERT_TRUE(t.WaitFor("720440", kShowS, &screen)) << screen;
  EXPECT_NE(screen.find("gpuwarden watch"), std::string::npos) << screen;
  EXPECT_NE(screen.find("SIMULATED"), std::string::npos) << screen;
  // t >= 2 s: the job on GPU 0 appears with its 97 %.
  ASSERT_TRUE(t.WaitUntil(
      [](const std::string& s) {
        return s.find("730001") != std::string::npos && UtilValue(MetricsOf(s, 0)) == "97%";
      },
      kShowS, &screen))
      << screen;
  EXPECT_NE(MetricsOf(screen, 0).find("60.0G/80.0G"), std::string::npos) << screen;
  // t >= 6 s: GPU 1 doubles.
  ASSERT_TRUE(t.WaitUntil([](const std::string& s) { return UtilValue(MetricsOf(s, 1)) == "72%"; },
                          kShowS, &screen))
      << screen;
  // t >= 8 s: the job is gone and GPU 0 idle again, but its history still
  // shows the busy seconds: a full block among the low ones.
  ASSERT_TRUE(t.WaitUntil(
      [](const std::string& s) {
        return s.find("730001") == std::string::npos && UtilValue(MetricsOf(s, 0)) == "0%";
      },
      kShowS, &screen))
      << screen;
  const std::string graph = UtilGraph(MetricsOf(screen, 0));
  EXPECT_NE(graph.find("█"), std::string::npos) << screen;
  EXPECT_NE(graph.rfind("▁"), std::string::npos) << screen;
  EXPECT_GT(graph.rfind("▁"), graph.find("█")) << "the idle end is the newest: " << graph;
  t.Keys({"q"});
  EXPECT_EQ(t.WaitForExit(10), 0);
}

// Starts a real process holding 20 GiB on GPU 1, waits for it on screen
// and selects it with the find prompt.
struct Holder {
  TestChild child{{"/bin/sleep", "300"}};
};

void SelectPid(const Tmux& t, pid_t pid) {
  t.Type("/");
  t.Type(std::to_string(pid));
  t.Keys({"Enter"});
}

TEST(WatchE2e, AProcessIsStoppedThroughTheUiAndItsMemoryShownFreed) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Holder h;
  ASSERT_GT(h.child.pid(), 0);
  ws.Hold(h.child.pid(), kGpu1Uuid, 20480);
  Tmux t(80, 24,
         Watch("timeline-demo.json",
               {"--audit-log", ws.audit_log(), "--grace", "5s", "--settle", "10s"}),
         Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  const std::string pid = std::to_string(h.child.pid());
  std::string screen;
  ASSERT_TRUE(t.WaitFor(pid, kShowS, &screen)) << screen;
  EXPECT_NE(screen.find("sleep 300"), std::string::npos) << screen;
  SelectPid(t, h.child.pid());
  t.Keys({"x"});
  // The confirmation shows the plan before anything happens.
  ASSERT_TRUE(t.WaitFor("Stop PID " + pid + "?", kShowS, &screen)) << screen;
  EXPECT_NE(screen.find("VRAM 20 GiB"), std::string::npos) << screen;
  EXPECT_NE(screen.find("user root"), std::string::npos) << screen;
  EXPECT_NE(screen.find("/bin/sleep 300"), std::string::npos) << screen;
  EXPECT_NE(screen.find("SIGTERM, then SIGKILL after 5s"), std::string::npos) << screen;
  EXPECT_TRUE(ProcessAlive(h.child.pid()));
  t.Keys({"y"});
  ASSERT_TRUE(t.WaitFor("freed", kShowS, &screen)) << screen;
  EXPECT_NE(screen.find("PID " + pid + " (sleep): exited"), std::string::npos) << screen;
  EXPECT_NE(screen.find("GPU 1: 20 GiB freed"), std::string::npos) << screen;
  EXPECT_NE(screen.find("Logged to"), std::string::npos) << screen;
  EXPECT_EQ(h.child.WaitForExit(10), 128 + SIGTERM);
  // The audit log has the signal, as for `gpuwarden kill`.
  const std::string log = ReadFileOrEmpty(ws.audit_log());
  EXPECT_NE(log.find("\"pid\":" + pid), std::string::npos) << log;
  EXPECT_NE(log.find("\"signal\":\"SIGTERM\""), std::string::npos) << log;
  // Closing the result: the process is gone from the table.
  t.Keys({"Escape"});
  ASSERT_TRUE(t.WaitUntil([&](const std::string& s) { return s.find(pid) == std::string::npos; },
                          kShowS, &screen))
      << screen;
  t.Keys({"q"});
  EXPECT_EQ(t.WaitForExit(10), 0);
}

// A process that ignores SIGTERM, and the user quits while the stop waits
// out the grace period: the stop still ends with SIGKILL, and says so.
TEST(WatchE2e, QuittingDuringAStopStillFinishesTheEscalation) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  TestChild stubborn({"/bin/sh", "-c", "trap '' TERM; exec /bin/sleep 300"});
  ASSERT_GT(stubborn.pid(), 0);
  ws.Hold(stubborn.pid(), kGpu1Uuid, 20480);
  Tmux t(100, 30,
         Watch("timeline-demo.json",
               {"--audit-log", ws.audit_log(), "--grace", "2s", "--settle", "5s"}),
         Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  const std::string pid = std::to_string(stubborn.pid());
  std::string screen;
  ASSERT_TRUE(t.WaitFor(pid, kShowS, &screen)) << screen;
  SelectPid(t, stubborn.pid());
  t.Keys({"x"});
  ASSERT_TRUE(t.WaitFor("Stop PID " + pid + "?", kShowS, &screen)) << screen;
  t.Keys({"y"});
  ASSERT_TRUE(t.WaitFor("Stopping", kShowS, &screen)) << screen;
  t.Keys({"q"});
  // The screen is given back at once; the stop goes on in plain text.
  ASSERT_TRUE(t.WaitFor("a stop is in progress; finishing it", 5, &screen)) << screen;
  EXPECT_EQ(t.WaitForExit(30), 0) << t.Screen();
  EXPECT_EQ(stubborn.WaitForExit(10), 128 + SIGKILL);
  screen = t.Screen();
  EXPECT_NE(screen.find("PID " + pid + " (sleep): ignored SIGTERM; killed with SIGKILL"),
            std::string::npos)
      << screen;
  const std::string log = ReadFileOrEmpty(ws.audit_log());
  EXPECT_NE(log.find("\"signal\":\"SIGKILL\""), std::string::npos) << log;
}

TEST(WatchE2e, ReadonlyRefusesToStop) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Holder h;
  ws.Hold(h.child.pid(), kGpu1Uuid, 20480);
  Tmux t(80, 24, Watch("timeline-demo.json", {"--readonly", "--audit-log", ws.audit_log()}),
         Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  const std::string pid = std::to_string(h.child.pid());
  std::string screen;
  ASSERT_TRUE(t.WaitFor(pid, kShowS, &screen)) << screen;
  EXPECT_NE(screen.find("read-only"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("x stop"), std::string::npos) << screen;
  SelectPid(t, h.child.pid());
  t.Keys({"x"});
  ASSERT_TRUE(t.WaitFor("stopping processes is off", kShowS, &screen)) << screen;
  EXPECT_EQ(screen.find("Stop PID"), std::string::npos) << screen;
  t.Keys({"F9"});
  t.Keys({"y"});
  t.Keys({"q"});
  EXPECT_EQ(t.WaitForExit(10), 0);
  EXPECT_TRUE(ProcessAlive(h.child.pid()));
  EXPECT_FALSE(std::filesystem::exists(ws.audit_log()));
}

TEST(WatchE2e, AProtectedProcessIsRefusedWithTheReason) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Holder h;
  ws.Hold(h.child.pid(), kGpu1Uuid, 20480);
  Tmux t(100, 30, Watch("timeline-demo.json", {"--protect", "sleep"}), Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  const std::string pid = std::to_string(h.child.pid());
  std::string screen;
  ASSERT_TRUE(t.WaitFor(pid, kShowS, &screen)) << screen;
  SelectPid(t, h.child.pid());
  t.Keys({"x"});
  ASSERT_TRUE(t.WaitFor("Will not stop PID " + pid, kShowS, &screen)) << screen;
  EXPECT_NE(screen.find("protected"), std::string::npos) << screen;
  EXPECT_NE(screen.find("Nothing was signalled."), std::string::npos) << screen;
  t.Keys({"q"});
  EXPECT_EQ(t.WaitForExit(10), 0);
  EXPECT_TRUE(ProcessAlive(h.child.pid()));
}

TEST(WatchE2e, AHungDriverKeepsTheUiResponsiveAndQQuitsWithinASecond) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Tmux t(80, 24,
         {GpuwardenBinary(), "--sim", ScenarioPath("driver-hang.json"), "--timeout", "1", "watch"},
         Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  std::string screen;
  ASSERT_TRUE(t.WaitFor("driver not responding", kShowS, &screen)) << screen;
  EXPECT_NE(screen.find("GPU 2"), std::string::npos) << screen;
  // Still answering keys while GPU 2's call is stuck for a minute.
  t.Keys({"?"});
  ASSERT_TRUE(t.WaitFor("gpuwarden watch — keys", 5, &screen)) << screen;
  t.Keys({"Escape"});
  ASSERT_TRUE(t.WaitUntil(
      [](const std::string& s) { return s.find("gpuwarden watch — keys") == std::string::npos; }, 5,
      &screen))
      << screen;
  const auto start = std::chrono::steady_clock::now();
  t.Keys({"q"});
  EXPECT_EQ(t.WaitForExit(5), 0) << t.Screen();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 1.0);
  EXPECT_EQ(t.Format("#{alternate_on}"), "0");  // The terminal is given back.
}

// The terminal closes under it (tmux killed, as an SSH connection that
// drops) without a SIGHUP reaching it: watch must end, not spin on a hung-up
// terminal that polls readable for ever.
TEST(WatchE2e, ATerminalThatGoesAwayEndsIt) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  auto t = std::make_unique<Tmux>(80, 24, Watch("timeline-demo.json", {}), Env(ws));
  ASSERT_TRUE(t->started()) << t->start_error();
  ASSERT_TRUE(t->WaitFor("720440", kShowS));
  const pid_t pid = t->ProgramPid();
  ASSERT_GT(pid, 0);
  t.reset();  // kill-server: the pane's terminal is hung up.
  EXPECT_TRUE(WaitUntil([pid] { return !ProcessAlive(pid); }, 10))
      << "gpuwarden watch (PID " << pid << ") still runs after its terminal went away";
  if (ProcessAlive(pid)) kill(pid, SIGKILL);
}

TEST(WatchE2e, CtrlCRestoresTheTerminal) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Tmux t(80, 24, Watch("timeline-demo.json", {}), Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  ASSERT_TRUE(t.WaitFor("720440", kShowS));
  // Alternate screen and application keypad while it runs...
  EXPECT_EQ(t.Format("#{alternate_on} #{keypad_cursor_flag}"), "1 1");
  t.Keys({"C-c"});
  EXPECT_EQ(t.WaitForExit(10), 128 + SIGINT);
  // ... both given back after.
  EXPECT_EQ(t.Format("#{alternate_on} #{keypad_cursor_flag}"), "0 0");
}

TEST(WatchE2e, ACrashSignalStillRestoresTheTerminal) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Tmux t(80, 24, Watch("timeline-demo.json", {}), Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  ASSERT_TRUE(t.WaitFor("720440", kShowS));
  const pid_t pid = t.ProgramPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(t.Format("#{alternate_on} #{keypad_cursor_flag}"), "1 1");
  ASSERT_EQ(kill(pid, SIGSEGV), 0);
  // It still dies of the signal, and the terminal is back to normal.
  EXPECT_EQ(t.WaitForExit(10), 128 + SIGSEGV);
  EXPECT_EQ(t.Format("#{alternate_on} #{keypad_cursor_flag}"), "0 0");
}

TEST(WatchE2e, NoColorAndMonochromeTerminalsGetNoColour) {
  GW_REQUIRE_TMUX();
  static const std::regex kColour("\x1b\\[[0-9;]*(3[1-6]|9[1-6])[;m]");
  {
    Workspace ws;
    auto env = Env(ws);
    env["NO_COLOR"] = "1";
    Tmux t(80, 24, Watch("timeline-demo.json", {}), env);
    ASSERT_TRUE(t.started()) << t.start_error();
    ASSERT_TRUE(t.WaitFor("720440", kShowS));
    const std::string s = t.ScreenWithEscapes();
    EXPECT_FALSE(std::regex_search(s, kColour)) << s;
    EXPECT_NE(s.find("\x1b[7m"), std::string::npos) << "reverse video still marks the selection";
  }
  {
    Workspace ws;
    Tmux t(80, 24,
           {GpuwardenBinary(), "--color", "always", "--sim", ScenarioPath("timeline-demo.json"),
            "watch"},
           Env(ws));
    ASSERT_TRUE(t.started()) << t.start_error();
    ASSERT_TRUE(t.WaitFor("720440", kShowS));
    EXPECT_TRUE(std::regex_search(t.ScreenWithEscapes(), kColour)) << t.ScreenWithEscapes();
  }
  {
    // A monochrome terminal: no colour even when asked for, reverse video
    // still marks the selection.
    Workspace ws;
    auto env = Env(ws);
    env["TERM"] = "vt100";
    Tmux t(80, 24,
           {GpuwardenBinary(), "--color", "always", "--sim", ScenarioPath("timeline-demo.json"),
            "watch"},
           env);
    ASSERT_TRUE(t.started()) << t.start_error();
    ASSERT_TRUE(t.WaitFor("720440", kShowS));
    const std::string s = t.ScreenWithEscapes();
    EXPECT_FALSE(std::regex_search(s, kColour)) << s;
    EXPECT_NE(s.find("\x1b[7m"), std::string::npos) << s;
  }
}

TEST(WatchE2e, AResizeRedrawsForTheNewSize) {
  GW_REQUIRE_TMUX();
  Workspace ws;
  Tmux t(80, 24, Watch("timeline-demo.json", {}), Env(ws));
  ASSERT_TRUE(t.started()) << t.start_error();
  std::string screen;
  ASSERT_TRUE(t.WaitFor("720440", kShowS, &screen));
  EXPECT_EQ(MetricsOf(screen, 1).find("TEMP"), std::string::npos) << screen;
  t.Run({"resize-window", "-t", "w", "-x", "200", "-y", "60"});
  // 200 columns: all four metrics on one line.
  ASSERT_TRUE(t.WaitUntil(
      [](const std::string& s) {
        const std::string m = MetricsOf(s, 1);
        return m.find("VRAM") != std::string::npos && m.find("POWR") != std::string::npos;
      },
      kShowS, &screen))
      << screen;
  t.Keys({"q"});
  EXPECT_EQ(t.WaitForExit(10), 0);
}

#ifdef GW_E2E_WITH_QUEUE
TEST(WatchE2e, TheQueuePanelShowsRunningAndWaitingJobsWithTheReason) {
  GW_REQUIRE_TMUX();
  QueueServer server("queue-two-free.json");
  ASSERT_TRUE(server.Start());
  ASSERT_TRUE(server.Submit({"--name", "trainer", "--gpus", "1", "--", "/bin/sleep", "300"}));
  // Both GPUs while the trainer holds one: it waits, and says why. (Three
  // GPUs on this two-GPU server are refused at submit: they never fit.)
  ASSERT_TRUE(server.Submit({"--name", "pair", "--gpus", "2", "--", "/bin/sleep", "300"}));
  Workspace ws;
  auto env = Env(ws);
  env["GPUWARDEN_SOCKET"] = server.socket();
  Tmux t(120, 30, Watch("queue-two-free.json", {"--readonly"}), env);
  ASSERT_TRUE(t.started()) << t.start_error();
  std::string screen;
  ASSERT_TRUE(t.WaitFor("QUEUE 1 running · 1 waiting", kQueueWaitS, &screen)) << screen;
  EXPECT_NE(screen.find("trainer"), std::string::npos) << screen;
  EXPECT_NE(screen.find("pair — waits: "), std::string::npos) << screen;
  t.Keys({"q"});
  EXPECT_EQ(t.WaitForExit(10), 0);
}
#endif

TEST(WatchE2e, WithoutATerminalItSaysWhatToUseInstead) {
  RunOptions o;
  o.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  RunResult r = RunProcess(Gpuwarden({"--sim", ScenarioPath("timeline-demo.json"), "watch"}), o);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("watch needs a terminal"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gpuwarden status"), std::string::npos) << r.err;
  // A bad flag is named first, terminal or not.
  r = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("timeline-demo.json"), "watch", "--grace", "soon"}), o);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--grace"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminal"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gw::test
