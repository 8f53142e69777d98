// The event loop of `gpuwarden watch`: one thread that waits (poll) on the
// keyboard, the probe thread's wake-up pipe and the signal pipe, folds new
// Frames into the model and its history, applies keys through the reducer
// (ui_state.h), runs stop actions on a worker thread, and repaints only when
// what is on screen changed. No busy loop: between events it sleeps in
// poll() without a timeout.
#ifndef GPUWARDEN_WATCH_APP_H_
#define GPUWARDEN_WATCH_APP_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "watch/history.h"
#include "watch/layout.h"
#include "watch/model.h"
#include "watch/prober.h"
#include "watch/screen.h"
#include "watch/ui_state.h"

namespace gw::watch {

// Where the screen goes and keys come from (curses_backend.h; a fake in tests).
class Terminal {
 public:
  virtual ~Terminal() = default;
  virtual int width() const = 0;
  virtual int height() const = 0;
  // The fd that becomes readable when keys are waiting.
  virtual int input_fd() const = 0;
  // Shows `screen` (same size as width() x height()).
  virtual void Paint(const Screen& screen) = 0;
  // Every key waiting now, without blocking.
  virtual std::vector<Key> ReadKeys() = 0;
  // The window size changed (SIGWINCH): read it again.
  virtual void Resize() = 0;
  // Forget what is on screen; the next Paint draws everything.
  virtual void Invalidate() = 0;
};

// What the stop dialogs show; lines are safe for a terminal.
struct ActionView {
  enum class Kind {
    kConfirm,  // A plan to confirm.
    kRefused,  // Nothing to do: every named process is refused (reasons in lines).
    kResult,   // What happened, freed VRAM included.
    kError,
  };
  Kind kind = Kind::kError;
  std::string title;
  std::vector<std::string> lines;
};

// The stop action, as `gpuwarden kill` does it (the implementation lives
// with the CLI and shares its path). Both calls run on a worker thread, one
// at a time.
class StopActions {
 public:
  virtual ~StopActions() = default;
  // Plans stopping `pid` (with its run when `tree`), judged on `latest`;
  // kConfirm keeps the plan for Execute.
  virtual ActionView Plan(pid_t pid, bool tree, std::shared_ptr<const Snapshot> latest) = 0;
  // Carries out the plan of the last kConfirm.
  virtual ActionView Execute() = 0;
  // The user said no: forget the plan.
  virtual void Cancel() = 0;
};

struct AppFds {
  int wake = -1;        // Read end of the wake-up pipe (probe thread, action worker).
  int wake_write = -1;  // Its write end, for the action worker.
  int signals = -1;     // Read end of the signal pipe (one byte per signal number).
};

class App {
 public:
  // `actions` null: every action is off (--readonly).
  App(Terminal& terminal, Prober& prober, StopActions* actions, ViewOptions options, AppFds fds,
      size_t history_samples);
  ~App();

  // Runs until q (0), a terminating signal (128 + its number) or the
  // terminal going away (129). Starts the prober.
  int Run();

  // True while a stop action (a plan or a confirmed stop) runs on its
  // worker. The destructor then detaches the worker: end the process without
  // running destructors under it (std::_Exit).
  bool action_running() const;

  // True while a confirmed stop runs: signals may have been sent and the
  // escalation (SIGKILL after the grace period) and the release check are
  // still to come. Quitting then must not abandon it.
  bool stop_in_progress() const;

  // Waits for the confirmed stop in progress to finish and returns what it
  // reports; nullopt when none was running. Call after Run() returned.
  std::optional<ActionView> FinishStop();

  // For tests: the last screen painted, and the state.
  const Screen* last_screen() const { return last_.get(); }
  const UiState& ui() const { return ui_; }

 private:
  struct Pending;
  void Refresh();
  bool HandleSignal(int* exit_code);
  bool HandleKeys(int* exit_code);
  void StartAction(std::function<ActionView()> work, bool executes);
  void TakeActionResult();
  void Draw(bool force);

  Terminal& term_;
  Prober& prober_;
  StopActions* actions_;
  ViewOptions options_;
  AppFds fds_;
  History history_;
  WatchModel model_;
  UiState ui_;
  std::vector<ProcessRow> rows_;
  int table_rows_ = 1;
  std::unique_ptr<Screen> last_;
  std::shared_ptr<Pending> pending_;
  std::thread worker_;
  bool dirty_ = true;
};

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_APP_H_
