#include "e2e/service_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace gw::test {

bool ServiceProcess::Start(const std::vector<std::string>& argv, const RunOptions& options,
                           const std::string& log_path) {
  if (pid_ > 0 || argv.empty()) return false;
  log_path_ = log_path;
  std::vector<std::string> env = ChildEnvironment(options);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return false;
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    const int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) _exit(127);
    if (!AssumeIdentity(options)) _exit(126);
    execve(args[0], args.data(), envp.data());
    static const char kFailed[] = "exec failed\n";
    (void)!write(2, kFailed, sizeof kFailed - 1);
    _exit(127);
  }
  close(log);
  if (pid_ < 0) return false;
  setpgid(pid_, pid_);
  return true;
}

bool ServiceProcess::Alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pid_ = -1;
  return false;
}

int ServiceProcess::Stop(double grace_s) {
  if (!Alive()) return status_;
  kill(-pid_, SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  while (Alive()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > grace_s) {
      kill(-pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      status_ = 128 + SIGKILL;
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

std::string ServiceProcess::Log() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool ServiceProcess::WaitFor(const std::function<bool()>& condition, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (condition()) return true;
    if (!Alive()) return condition();
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        timeout_s) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace gw::test
