// For tests: an os::CommandRunner that answers each command as scripted,
// keyed by its whole argv joined by spaces ("scontrol -o show node n2"); any
// other command is "not_found", as a missing program is. It records what ran.
// Run is safe from several threads, as the interface requires; set answers
// and read ran only while no Run is in flight.
#ifndef GPUWARDEN_OS_FAKE_COMMAND_RUNNER_H_
#define GPUWARDEN_OS_FAKE_COMMAND_RUNNER_H_

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "os/run_command.h"

namespace gw::os {

class FakeCommandRunner final : public CommandRunner {
 public:
  FakeCommandRunner() = default;
  // Moves the script and the record; the lock is the new object's own.
  FakeCommandRunner(FakeCommandRunner&& other) noexcept
      : answers(std::move(other.answers)), ran(std::move(other.ran)) {}

  struct Answer {
    int exit_code = 0;
    std::string out;
    std::string err;
  };
  std::map<std::string, Answer> answers;
  std::vector<std::string> ran;

  Result<CommandOutput> Run(const std::vector<std::string>& argv,
                            const CommandOptions& /*options*/) override {
    std::string key;
    for (const std::string& a : argv) key += (key.empty() ? "" : " ") + a;
    const std::lock_guard<std::mutex> lock(mutex_);
    ran.push_back(key);
    auto it = answers.find(key);
    if (it == answers.end()) return MakeError("not_found", argv[0] + ": not found");
    CommandOutput out;
    out.exit_code = it->second.exit_code;
    out.out = it->second.out;
    out.err = it->second.err;
    return out;
  }

 private:
  std::mutex mutex_;
};

}  // namespace gw::os

#endif  // GPUWARDEN_OS_FAKE_COMMAND_RUNNER_H_
