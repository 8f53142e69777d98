// Carrying out a plan: pin every target (PID + start time), send the stop
// signal, wait out the grace period, SIGKILL what is left, wait again, and
// say what happened to each. Every signal sent and every final result goes
// to the audit log; a failing log is reported, never a reason to stop.
#ifndef GPUWARDEN_ACT_EXECUTE_H_
#define GPUWARDEN_ACT_EXECUTE_H_

#include <signal.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "act/audit_log.h"
#include "act/plan.h"
#include "act/process_control.h"
#include "core/clock.h"

namespace gw::act {

struct ExecuteOptions {
  int first_signal = SIGTERM;
  int64_t grace_ms = 10'000;     // Between the first signal and SIGKILL.
  int64_t kill_wait_ms = 5'000;  // After SIGKILL, before giving up.
};

enum class Outcome {
  kExited,    // Ended after the first signal.
  kKilled,    // Ignored it; ended after SIGKILL.
  kGone,      // Had already exited when its turn came.
  kReused,    // Its PID names another process now: nothing was sent.
  kDenied,    // The kernel refused the signal (EPERM).
  kSurvived,  // Still there after SIGKILL: stuck in the kernel (D state).
  kError,     // Anything else; detail says what.
};
std::string_view OutcomeName(Outcome outcome);  // "exited", "killed", "gone", ...
bool Ended(Outcome outcome);                    // exited, killed or gone.

struct TargetResult {
  PlanItem item;
  Outcome outcome = Outcome::kError;
  std::vector<int> signals;  // In the order sent.
  Opt<double> seconds;       // From the first signal to its exit.
  Opt<ProcessState> state;   // Last state seen, for kSurvived.
  std::string detail;
};

struct ExecuteReport {
  std::vector<TargetResult> results;  // In plan order.
  std::vector<std::string> audit_errors;
};

// `audit` may be null (nothing is logged). `on_result` is called once per
// target as soon as its fate is known, for live output.
ExecuteReport Execute(const Plan& plan, const ExecuteOptions& options, const Caller& caller,
                      ProcessControl& control, const Clock& clock, AuditSink* audit,
                      const std::function<void(const TargetResult&)>& on_result = {});

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_EXECUTE_H_
