// Runs a real program for an end-to-end test: argv exec'd directly (no shell),
// environment adjusted, stdout and stderr captured, killed after a timeout.
#ifndef GPUWARDEN_TESTS_E2E_RUN_PROCESS_H_
#define GPUWARDEN_TESTS_E2E_RUN_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gw::test {

struct RunResult {
  int exit_code = -1;  // The exit status; 128 + signal when killed by a signal.
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;  // Wall time until the process ended.
};

struct RunOptions {
  // Variables to set (value) or remove (nullopt) in the child's environment.
  std::map<std::string, std::optional<std::string>> env;
  double timeout_s = 30;
  // Run as this user and group (no supplementary groups besides gid); set both
  // or neither. Needs root. Unset: the test's own identity.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  // What the child reads: a file of commands for a client that reads them
  // (sacctmgr, mariadb).
  std::string stdin_path = "/dev/null";
};

// Runs argv in a process group of its own, stdin /dev/null, until it ends or
// options.timeout_s passes (then the group is killed).
RunResult RunProcess(const std::vector<std::string>& argv, const RunOptions& options = {});

// The environment ("KEY=value") of a child started with these options: the
// test's own, adjusted by options.env.
std::vector<std::string> ChildEnvironment(const RunOptions& options);

// For a child between fork and exec: takes on options.uid/gid (setgroups,
// setgid, setuid). Async-signal-safe; true when there was nothing to do or it
// worked.
bool AssumeIdentity(const RunOptions& options);

// Paths of the build tree under test.
std::string GpuwardenBinary();                      // <build>/gpuwarden
std::string SimLibrary();                           // <build>/sim/libnvidia-ml.so.1
std::string ScenarioPath(const std::string& name);  // <source>/scenarios/<name>
std::string SharedSamplesDir();                     // <source>/../shared/research/samples

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_RUN_PROCESS_H_
