// Runs a real program on a pseudo-terminal for an end-to-end test: its stdin,
// stdout and stderr are the terminal, so it behaves as it would for a person
// (prompts, colours, a TUI). The test reads what it shows and types answers.
#ifndef GPUWARDEN_TESTS_E2E_PTY_PROCESS_H_
#define GPUWARDEN_TESTS_E2E_PTY_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "e2e/run_process.h"

namespace gw::test {

class PtyProcess {
 public:
  // Starts argv (argv[0] an absolute path, exec'd directly) in a session of its
  // own whose controlling terminal is a new pseudo-terminal of cols x rows.
  // options.env, options.uid/gid apply as for RunProcess; options.timeout_s is
  // not used (each wait has its own). started() is false when it could not
  // start; error() says why.
  explicit PtyProcess(const std::vector<std::string>& argv, const RunOptions& options = {},
                      unsigned short cols = 120, unsigned short rows = 40);
  // Kills the program's process group if it still runs, and reaps it.
  ~PtyProcess();
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  bool started() const { return pid_ > 0; }
  const std::string& error() const { return error_; }
  pid_t pid() const { return pid_; }

  // Reads until everything shown since the start contains `text` (true), or
  // until timeout_s passes or the terminal closes (false).
  bool WaitForOutput(const std::string& text, double timeout_s);
  // Types `line` followed by Enter.
  void WriteLine(const std::string& line);
  // Sends raw bytes (keys of a TUI, Ctrl-C as "\x03", ...).
  void Write(const std::string& bytes);

  // Waits for the program to end, reading its output meanwhile. False after
  // timeout_s (the program is then still running).
  bool WaitForExit(double timeout_s);
  // Exit status (128 + signal when killed by one); nullopt while running.
  std::optional<int> exit_code() const { return exit_code_; }
  // Everything the program wrote to the terminal so far, as the terminal
  // received it (the line discipline turns "\n" into "\r\n"), plus the echo of
  // what was typed.
  const std::string& output() const { return output_; }

 private:
  // Reads what is available within timeout_ms into output_; false once the
  // terminal has closed (every writer gone).
  bool ReadSome(int timeout_ms);
  void Reap(bool block);

  pid_t pid_ = -1;
  int master_ = -1;
  bool closed_ = false;
  std::optional<int> exit_code_;
  std::string output_;
  std::string error_;
};

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_PTY_PROCESS_H_
