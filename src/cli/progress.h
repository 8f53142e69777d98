// What a command says on the terminal while it waits: one status line on
// stderr ("sampling 8 GPUs for 3 s… (--now for one look)"), rewritten in
// place and cleared before the answer is printed. Only on a terminal: never
// in a pipe, a file or a log, and never with --json (the caller decides).
#ifndef GPUWARDEN_CLI_PROGRESS_H_
#define GPUWARDEN_CLI_PROGRESS_H_

#include <string>
#include <string_view>

#include "collect/window.h"

namespace gw::cli {

// The terminal seam: where the status line goes.
class StatusTerminal {
 public:
  virtual ~StatusTerminal() = default;
  // A terminal that can rewrite a line (not TERM=dumb).
  virtual bool IsTerminal() const = 0;
  virtual void Write(std::string_view text) = 0;
};

// stderr.
class StderrTerminal final : public StatusTerminal {
 public:
  bool IsTerminal() const override;
  void Write(std::string_view text) override;
};

// "sampling 8 GPUs for 3 s… (--now for one look)"; "sampling the GPUs for
// 3 s…" before the count is known. Pure.
std::string SamplingText(const collect::WindowProgress& progress);

// Shows the window's progress while it is sampled, when `enabled`, the
// window is longer than one look and the terminal is one; Clear (or the
// destructor) removes the line, leaving the cursor where the line began.
class SamplingNotice {
 public:
  SamplingNotice(StatusTerminal& terminal, bool enabled);
  ~SamplingNotice();
  SamplingNotice(const SamplingNotice&) = delete;
  SamplingNotice& operator=(const SamplingNotice&) = delete;

  void Update(const collect::WindowProgress& progress);
  void Clear();

 private:
  StatusTerminal& terminal_;
  bool enabled_;
  bool shown_ = false;
  std::string last_;
};

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_PROGRESS_H_
