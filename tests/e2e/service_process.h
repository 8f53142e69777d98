// A long-lived program for an end-to-end test (a daemon, a real server):
// started in a process group of its own with stdout and stderr to a log file,
// stopped with SIGTERM (SIGKILL after a grace) and reaped when the object goes.
#ifndef GPUWARDEN_TESTS_E2E_SERVICE_PROCESS_H_
#define GPUWARDEN_TESTS_E2E_SERVICE_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "e2e/run_process.h"

namespace gw::test {

class ServiceProcess {
 public:
  ServiceProcess() = default;
  ~ServiceProcess() { Stop(); }
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  // argv[0] an absolute path; the environment is the test's adjusted by
  // options.env (options.uid/gid as RunProcess). False when it could not be
  // started (the log says why when the exec failed).
  bool Start(const std::vector<std::string>& argv, const RunOptions& options,
             const std::string& log_path);
  // SIGTERM to its group, SIGKILL after `grace_s`; reaped. Its exit status
  // (128 + signal), -1 when it was not running.
  int Stop(double grace_s = 10);
  bool Alive();
  pid_t pid() const { return pid_; }
  std::string Log() const;

  // Polls `condition` every 20 ms for up to `timeout_s`, and gives up early
  // when the process has exited.
  bool WaitFor(const std::function<bool()>& condition, double timeout_s);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string log_path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (for a server that
// cannot be told to pick its own and say which).
int FreeLoopbackPort();

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_SERVICE_PROCESS_H_
