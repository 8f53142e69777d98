#include "e2e/run_process.h"
#include "test_paths.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace gw::test {

std::vector<std::string> ChildEnvironment(const RunOptions& options) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, value] : options.env) {
    if (value) {
      env[key] = *value;
    } else {
      env.erase(key);
    }
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

bool AssumeIdentity(const RunOptions& options) {
  if (!options.uid && !options.gid) return true;
  if (!options.uid || !options.gid) return false;
  const gid_t gid = *options.gid;
  // Groups first: after setuid the process may no longer change them.
  return setgroups(1, &gid) == 0 && setgid(gid) == 0 && setuid(*options.uid) == 0;
}

namespace {

// Starts argv like posix_spawn below would, but through fork so that the child
// can change its identity before exec. Returns the PID, or -1.
pid_t ForkAs(char* const* args, char* const* envp, int out_fd, int err_fd,
             const RunOptions& options) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  // Only async-signal-safe calls from here on.
  setpgid(0, 0);
  int in = open(options.stdin_path.c_str(), O_RDONLY);
  if (in < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(err_fd, STDERR_FILENO) < 0 || !AssumeIdentity(options)) {
    _exit(127);
  }
  execve(args[0], args, envp);
  _exit(127);
}

}  // namespace

RunResult RunProcess(const std::vector<std::string>& argv, const RunOptions& options) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, options.stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  // A process group of its own, so a timeout kills the program and its children.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = ChildEnvironment(options);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int rc = 0;
  if (options.uid || options.gid) {
    pid = ForkAs(args.data(), envp.data(), out_pipe[1], err_pipe[1], options);
    if (pid < 0) {
      rc = errno;
    } else {
      setpgid(pid, pid);  // Also here: a timeout may come before the child's own call.
    }
  } else {
    rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), envp.data());
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  RunResult result;
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.exit_code = 127;
    result.err = std::string("spawn failed: ") + std::strerror(rc);
    return result;
  }

  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(options.timeout_s));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

std::string GpuwardenBinary() { return gw::test::BinaryDir() + "/gpuwarden"; }
std::string SimLibrary() { return gw::test::BinaryDir() + "/sim/libnvidia-ml.so.1"; }
std::string ScenarioPath(const std::string& name) {
  return gw::test::SourceDir() + "/scenarios/" + name;
}
std::string SharedSamplesDir() { return gw::test::SourceDir() + "/../shared/research/samples"; }

}  // namespace gw::test
