// A ProcessControl for unit tests: scripted processes on a FakeClock. Each
// process has an identity (start ticks) and a behaviour for each signal.
#ifndef GPUWARDEN_ACT_FAKE_PROCESS_CONTROL_H_
#define GPUWARDEN_ACT_FAKE_PROCESS_CONTROL_H_

#include <signal.h>

#include <map>
#include <memory>
#include <vector>

#include "act/process_control.h"
#include "core/clock.h"

namespace gw::act::testing {

struct FakeProcess {
  uint64_t start_ticks = 100;
  bool alive = true;
  ProcessState state = ProcessState::kSleeping;
  // Milliseconds after SIGTERM/INT/... (and after SIGKILL) until it exits;
  // negative: never (ignores it, or is stuck in D for SIGKILL).
  int64_t exits_after_stop_ms = 0;
  int64_t exits_after_kill_ms = 0;
  bool deny = false;        // Signals fail with EPERM.
  int64_t exit_at_ms = -1;  // Pending exit time on the clock, once signalled.
};

class FakeProcessControl final : public ProcessControl {
 public:
  explicit FakeProcessControl(FakeClock& clock) : clock_(clock) {}

  std::map<pid_t, FakeProcess> processes;
  std::vector<std::pair<pid_t, int>> sent;  // Every signal delivered, in order.

  Result<std::unique_ptr<ProcessHandle>> Open(pid_t pid, uint64_t start_ticks) override {
    auto it = processes.find(pid);
    if (it == processes.end() || !it->second.alive) return MakeError("gone", "no such process");
    if (it->second.start_ticks != start_ticks) {
      return MakeError("reused", "the PID now belongs to another process, started later");
    }
    return std::unique_ptr<ProcessHandle>(new Handle(pid));
  }

  Status Signal(ProcessHandle& h, int signal) override {
    Update();
    FakeProcess& p = processes.at(h.pid());
    if (!p.alive) return MakeError("gone", "it has exited");
    if (p.deny) return MakeError("denied", "permission denied");
    sent.emplace_back(h.pid(), signal);
    const int64_t after = signal == SIGKILL ? p.exits_after_kill_ms : p.exits_after_stop_ms;
    if (after >= 0) {
      const int64_t at = clock_.MonotonicMs() + after;
      if (p.exit_at_ms < 0 || at < p.exit_at_ms) p.exit_at_ms = at;
    }
    Update();
    return Status::Ok();
  }

  bool Exited(ProcessHandle& h) override {
    Update();
    return !processes.at(h.pid()).alive;
  }

  void WaitAny(const std::vector<ProcessHandle*>& hs, int64_t timeout_ms) override {
    Update();
    int64_t next = clock_.MonotonicMs() + timeout_ms;
    for (ProcessHandle* h : hs) {
      const FakeProcess& p = processes.at(h->pid());
      if (!p.alive) return;
      if (p.exit_at_ms >= 0) next = std::min(next, p.exit_at_ms);
    }
    clock_.AdvanceMs(std::max<int64_t>(0, next - clock_.MonotonicMs()));
    Update();
  }

  std::optional<ProcessState> State(ProcessHandle& h) override {
    Update();
    const FakeProcess& p = processes.at(h.pid());
    if (!p.alive) return std::nullopt;
    return p.state;
  }

 private:
  class Handle final : public ProcessHandle {
   public:
    explicit Handle(pid_t pid) : pid_(pid) {}
    pid_t pid() const override { return pid_; }

   private:
    pid_t pid_;
  };

  void Update() {
    for (auto& [pid, p] : processes) {
      if (p.alive && p.exit_at_ms >= 0 && clock_.MonotonicMs() >= p.exit_at_ms) p.alive = false;
    }
  }

  FakeClock& clock_;
};

}  // namespace gw::act::testing

#endif  // GPUWARDEN_ACT_FAKE_PROCESS_CONTROL_H_
