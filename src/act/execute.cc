#include "act/execute.h"

#include <fmt/format.h>

#include <memory>

#include "core/text.h"

namespace gw::act {
namespace {

struct Live {
  TargetResult result;
  std::unique_ptr<ProcessHandle> handle;
  bool done = false;
};

class Executor {
 public:
  Executor(const ExecuteOptions& options, const Caller& caller, ProcessControl& control,
           const Clock& clock, AuditSink* audit,
           const std::function<void(const TargetResult&)>& on_result)
      : options_(options),
        caller_(caller),
        control_(control),
        clock_(clock),
        audit_(audit),
        on_result_(on_result) {}

  ExecuteReport Run(const Plan& plan) {
    std::vector<Live> live(plan.act.size());
    for (size_t i = 0; i < plan.act.size(); ++i) {
      live[i].result.item = plan.act[i];
      Pin(live[i]);
    }
    start_ms_ = clock_.MonotonicMs();
    for (Live& l : live) {
      if (!l.done) Send(l, options_.first_signal);
    }
    WaitFor(live, start_ms_ + options_.grace_ms, Outcome::kExited);
    for (Live& l : live) {
      if (!l.done) Send(l, SIGKILL);
    }
    WaitFor(live, clock_.MonotonicMs() + options_.kill_wait_ms, Outcome::kKilled);
    for (Live& l : live) {
      if (l.done) continue;
      l.result.state = control_.State(*l.handle);
      l.result.detail =
          l.result.state == ProcessState::kDiskSleep
              ? "still there after SIGKILL, in uninterruptible sleep (D): it waits in the kernel "
                "(the GPU driver or I/O) and ends only when that returns"
              : "still there after SIGKILL";
      Finish(l, Outcome::kSurvived);
    }
    ExecuteReport report;
    for (Live& l : live) report.results.push_back(std::move(l.result));
    report.audit_errors = std::move(audit_errors_);
    return report;
  }

 private:
  void Pin(Live& l) {
    const PlanItem& item = l.result.item;
    if (!item.start_ticks) {
      l.result.detail = "its start time could not be read, so its identity cannot be checked";
      Finish(l, Outcome::kError);
      return;
    }
    auto opened = control_.Open(item.pid, *item.start_ticks);
    if (opened.ok()) {
      l.handle = std::move(*opened);
      return;
    }
    const Error& e = opened.error();
    l.result.detail = e.message;
    Finish(l, e.code == "gone"     ? Outcome::kGone
              : e.code == "reused" ? Outcome::kReused
                                   : Outcome::kError);
  }

  void Send(Live& l, int signal) {
    Status sent = control_.Signal(*l.handle, signal);
    const std::string outcome = sent.ok() ? "delivered" : sent.error().code;
    Audit("signal", l.result, SignalName(signal), outcome, sent.ok() ? "" : sent.error().message);
    if (sent.ok()) {
      l.result.signals.push_back(signal);
      return;
    }
    l.result.detail = sent.error().message;
    if (sent.error().code == "gone") {
      // It ended on its own between two steps: as good as stopped.
      if (l.result.signals.empty()) {
        Finish(l, Outcome::kGone);
      } else {
        MarkExited(l, l.result.signals.size() == 1 ? Outcome::kExited : Outcome::kKilled);
      }
      return;
    }
    Finish(l, sent.error().code == "denied" ? Outcome::kDenied : Outcome::kError);
  }

  void WaitFor(std::vector<Live>& live, int64_t deadline_ms, Outcome outcome) {
    for (;;) {
      std::vector<ProcessHandle*> waiting;
      for (Live& l : live) {
        if (l.done) continue;
        if (control_.Exited(*l.handle)) {
          MarkExited(l, outcome);
        } else {
          waiting.push_back(l.handle.get());
        }
      }
      const int64_t left = deadline_ms - clock_.MonotonicMs();
      if (waiting.empty() || left <= 0) return;
      control_.WaitAny(waiting, left);
    }
  }

  void MarkExited(Live& l, Outcome outcome) {
    l.result.seconds = static_cast<double>(clock_.MonotonicMs() - start_ms_) / 1000.0;
    Finish(l, outcome);
  }

  void Finish(Live& l, Outcome outcome) {
    l.done = true;
    l.result.outcome = outcome;
    Audit("result", l.result, "", std::string(OutcomeName(outcome)), l.result.detail);
    if (on_result_) on_result_(l.result);
  }

  void Audit(const char* event, const TargetResult& r, const std::string& signal,
             const std::string& outcome, const std::string& detail) {
    if (audit_ == nullptr) return;
    AuditRecord rec;
    rec.time_unix_ms = clock_.NowUnixMs();
    rec.event = event;
    rec.caller_uid = caller_.uid;
    rec.caller_user = caller_.user;
    rec.pid = r.item.pid;
    rec.start_ticks = r.item.start_ticks;
    rec.uid = r.item.uid;
    rec.user = r.item.user;
    rec.command = JoinCommandLine(r.item.cmdline);
    if (rec.command.empty() && r.item.comm) rec.command = *r.item.comm;
    rec.gpus = r.item.gpus;
    rec.vram_bytes = r.item.vram_bytes;
    rec.signal = signal;
    rec.outcome = outcome;
    rec.detail = detail;
    Status st = audit_->Append(rec);
    // One report per distinct problem: a full disk fails every line alike.
    if (!st.ok() && (audit_errors_.empty() || audit_errors_.back() != st.error().message)) {
      audit_errors_.push_back(st.error().message);
    }
  }

  const ExecuteOptions& options_;
  const Caller& caller_;
  ProcessControl& control_;
  const Clock& clock_;
  AuditSink* audit_;
  const std::function<void(const TargetResult&)>& on_result_;
  int64_t start_ms_ = 0;
  std::vector<std::string> audit_errors_;
};

}  // namespace

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kExited:
      return "exited";
    case Outcome::kKilled:
      return "killed";
    case Outcome::kGone:
      return "gone";
    case Outcome::kReused:
      return "reused";
    case Outcome::kDenied:
      return "denied";
    case Outcome::kSurvived:
      return "survived";
    case Outcome::kError:
      return "error";
  }
  return "error";
}

bool Ended(Outcome outcome) {
  return outcome == Outcome::kExited || outcome == Outcome::kKilled || outcome == Outcome::kGone;
}

ExecuteReport Execute(const Plan& plan, const ExecuteOptions& options, const Caller& caller,
                      ProcessControl& control, const Clock& clock, AuditSink* audit,
                      const std::function<void(const TargetResult&)>& on_result) {
  return Executor(options, caller, control, clock, audit, on_result).Run(plan);
}

}  // namespace gw::act
