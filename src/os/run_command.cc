#include "os/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "os/errno_text.h"
#include "os/file_io.h"
#include "os/unique_fd.h"

extern char** environ;

namespace gw::os {
namespace {

std::vector<std::string> ChildEnvironment(
    const std::map<std::string, std::optional<std::string>>& changes) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=')));
    if (changes.count(name) == 0) out.emplace_back(entry);
  }
  for (const auto& [name, value] : changes) {
    if (value) out.push_back(name + "=" + *value);
  }
  return out;
}

void Reap(pid_t pid, int* status) {
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

std::string FirstLine(std::string_view text) {
  while (!text.empty() && (text.front() == '\n' || text.front() == ' ')) text.remove_prefix(1);
  return std::string(text.substr(0, text.find('\n')));
}

}  // namespace

std::string CommandOutput::Describe() const {
  std::string text;
  if (exit_code) {
    text = "exited with status " + std::to_string(*exit_code);
  } else if (signal) {
    text = "was killed by signal " + std::to_string(*signal);
  } else {
    text = "ended";
  }
  // Some programs that fail say why on stdout (scontrol: "Node n9 not found").
  std::string line = FirstLine(err);
  if (line.empty() && exit_code && *exit_code != 0) line = FirstLine(out);
  return line.empty() ? text : text + ": " + line;
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 const CommandOptions& options) {
  if (argv.empty() || argv[0].empty()) return MakeError("io", "no program to run");
  const std::string& name = argv[0];
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_text = ChildEnvironment(options.env);
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return MakeError("io", name + ": pipe: " + ErrnoText(errno));
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return MakeError("io", name + ": pipe: " + ErrnoText(errno));
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), STDERR_FILENO);
  // The child starts with no signal blocked and SIGPIPE at its default,
  // whatever this process set for itself.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, name.c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc == ENOENT) return MakeError("not_found", name + ": not found");
  if (rc != 0) return MakeError("io", "cannot run " + name + ": " + ErrnoText(rc));
  out_w.Reset();
  err_w.Reset();

  CommandOutput result;
  std::string* sinks[2] = {&result.out, &result.err};
  UniqueFd* sources[2] = {&out_r, &err_r};
  bool open[2] = {true, true};
  std::optional<Error> failure;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms);
  char buf[65536];
  while ((open[0] || open[1]) && !failure) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      failure = MakeError(
          "timeout", name + ": no answer within " + std::to_string(options.timeout_ms) + " ms");
      break;
    }
    pollfd fds[2] = {{open[0] ? out_r.get() : -1, POLLIN, 0},
                     {open[1] ? err_r.get() : -1, POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(left));
    if (ready < 0) {
      if (errno == EINTR) continue;
      failure = MakeError("io", name + ": poll: " + ErrnoText(errno));
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ReadSome(sources[i]->get(), buf, sizeof buf);
      if (n < 0) {
        failure = MakeError("io", name + ": reading its output: " + ErrnoText(errno));
        break;
      }
      if (n == 0) {
        open[i] = false;
        continue;
      }
      if (sinks[i]->size() + static_cast<size_t>(n) > options.max_output_bytes) {
        failure = MakeError("too_large", name + ": printed more than " +
                                             std::to_string(options.max_output_bytes) + " bytes");
        break;
      }
      sinks[i]->append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  if (failure) kill(pid, SIGKILL);
  Reap(pid, &status);
  if (failure) return *failure;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace gw::os
