// gpuwarden-power: Slurm's ResumeProgram and SuspendProgram for cloud nodes
// (capacity/power.h, docs/capacity.md). slurmctld starts it (through the
// templates in /etc/gpuwarden/slurm/) with most signals blocked, its
// standard descriptors closed and no PATH; everything that would make the
// commands it starts misbehave is put right here, before anything runs.
#include <fcntl.h>
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "capacity/power.h"
#include "core/text.h"
#include "os/run_command.h"

namespace {

// The PATH a command gets when Slurm gave none (the commands are named by
// absolute path; what they run may not be).
constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// No signal blocked, every handler at its default: slurmscriptd blocks most
// signals, and a mask and ignored signals are inherited across exec, so a
// node agent started from here would ignore SIGTERM for ever.
void ResetSignals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    signal(sig, SIG_DFL);  // Fails harmlessly for the numbers that are no signal.
  }
}

// Descriptors 0-2 open (on /dev/null when Slurm closed them), so that a log
// file opened later never becomes a command's stdout by accident.
void OpenStandardDescriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0 && null != fd) {
      dup2(null, fd);
      close(null);
    }
  }
}

std::string Now() {
  char buf[64];
  const time_t t = time(nullptr);
  tm local{};
  localtime_r(&t, &local);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &local);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  ResetSignals();
  OpenStandardDescriptors();
  const char* path = getenv("PATH");
  if (path == nullptr || *path == '\0') setenv("PATH", kDefaultPath, 1);
  openlog("gpuwarden-power", LOG_PID, LOG_DAEMON);

  std::vector<std::string> args(argv + 1, argv + argc);
  std::string log_path;
  for (size_t i = 0; i + 1 < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--log") log_path = args[i + 1];
  }
  FILE* log_file = nullptr;
  std::string log_problem;
  if (!log_path.empty()) {
    log_file = fopen(log_path.c_str(), "ae");
    // Not fatal: a node Slurm asked for still gets its command.
    if (log_file == nullptr) {
      log_problem = "cannot open the log " + log_path + ": " + strerror(errno) +
                    " (logging to syslog and stderr only)";
    }
  }
  const std::string pid = std::to_string(getpid());
  auto log = [&](const std::string& raw) {
    const std::string line = gw::SanitizeForTerminal(raw);
    syslog(LOG_NOTICE, "%s", line.c_str());
    const std::string stamped = Now() + " gpuwarden-power[" + pid + "] " + line + "\n";
    if (log_file != nullptr) {
      fputs(stamped.c_str(), log_file);
      fflush(log_file);
    }
    fputs(stamped.c_str(), stderr);
  };
  if (!log_problem.empty()) log(log_problem);
  gw::os::RealCommandRunner runner;
  const int code = gw::capacity::RunPower(args, runner, log);
  if (log_file != nullptr) fclose(log_file);
  closelog();
  return code;
}
