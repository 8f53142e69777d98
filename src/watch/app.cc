#include "watch/app.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <utility>

namespace gw::watch {

// The result slot of the action worker.
struct App::Pending {
  std::mutex mu;
  std::optional<ActionView> result;
  bool running = false;
  bool executing = false;  // The running action is a confirmed stop.
};

App::App(Terminal& terminal, Prober& prober, StopActions* actions, ViewOptions options, AppFds fds,
         size_t history_samples)
    : term_(terminal),
      prober_(prober),
      actions_(actions),
      options_(options),
      fds_(fds),
      history_(history_samples),
      pending_(std::make_shared<Pending>()) {
  ui_.readonly = options.readonly || actions == nullptr;
  options_.readonly = ui_.readonly;
}

App::~App() {
  if (worker_.joinable()) {
    std::lock_guard<std::mutex> lock(pending_->mu);
    if (pending_->running) {
      worker_.detach();
      return;
    }
  }
  if (worker_.joinable()) worker_.join();
}

bool App::action_running() const {
  std::lock_guard<std::mutex> lock(pending_->mu);
  return pending_->running;
}

bool App::stop_in_progress() const {
  std::lock_guard<std::mutex> lock(pending_->mu);
  return pending_->running && pending_->executing;
}

std::optional<ActionView> App::FinishStop() {
  if (!stop_in_progress()) return std::nullopt;
  worker_.join();
  std::lock_guard<std::mutex> lock(pending_->mu);
  std::optional<ActionView> view = std::move(pending_->result);
  pending_->result.reset();
  return view;
}

void App::StartAction(std::function<ActionView()> work, bool executes) {
  if (worker_.joinable()) worker_.join();  // The previous one has delivered its result.
  {
    std::lock_guard<std::mutex> lock(pending_->mu);
    pending_->running = true;
    pending_->executing = executes;
    pending_->result.reset();
  }
  worker_ = std::thread([pending = pending_, work = std::move(work), fd = fds_.wake_write] {
    ActionView view = work();
    {
      std::lock_guard<std::mutex> lock(pending->mu);
      pending->result = std::move(view);
      pending->running = false;
      pending->executing = false;
    }
    const char byte = 2;
    [[maybe_unused]] ssize_t n = write(fd, &byte, 1);
  });
}

void App::TakeActionResult() {
  std::optional<ActionView> view;
  {
    std::lock_guard<std::mutex> lock(pending_->mu);
    view = std::move(pending_->result);
    pending_->result.reset();
  }
  if (!view) return;
  if (worker_.joinable()) worker_.join();
  ui_.dialog_title = view->title;
  ui_.dialog_lines = view->lines;
  switch (view->kind) {
    case ActionView::Kind::kConfirm:
      ui_.dialog = Dialog::kConfirm;
      break;
    case ActionView::Kind::kResult:
      ui_.dialog = Dialog::kResult;
      // Show the freed memory in the panels too, without waiting a tick.
      prober_.RequestNow();
      break;
    case ActionView::Kind::kRefused:
    case ActionView::Kind::kError:
      ui_.dialog = Dialog::kMessage;
      break;
  }
  dirty_ = true;
}

void App::Refresh() {
  while (auto frame = prober_.Take()) {
    if (frame->snapshot) {
      history_.Push(*frame->snapshot);
    } else {
      history_.PushGap();  // No answer this tick: a gap in the graphs, not a zero.
    }
    ApplyFrame(model_, std::move(*frame));
    dirty_ = true;
  }
}

void App::Draw(bool force) {
  if (!dirty_ && !force) return;
  dirty_ = false;
  rows_.clear();
  if (model_.snapshot) rows_ = BuildRows(*model_.snapshot, ui_);
  ui_ = Reselect(std::move(ui_), rows_);
  const int w = term_.width();
  const int h = term_.height();
  WatchView view{model_, history_, rows_, options_};
  const LayoutPlan plan = PlanLayout(view, ui_, w, h);
  table_rows_ = std::max(1, plan.table_rows);
  ui_ = FitScroll(std::move(ui_), table_rows_, static_cast<int>(rows_.size()));
  auto screen = std::make_unique<Screen>(Render(view, ui_, w, h));
  if (!force && last_ && *last_ == *screen) return;  // Nothing changed on screen.
  term_.Paint(*screen);
  last_ = std::move(screen);
}

bool App::HandleSignal(int* exit_code) {
  unsigned char buf[64];
  const ssize_t n = read(fds_.signals, buf, sizeof buf);
  for (ssize_t i = 0; i < n; ++i) {
    const int sig = buf[i];
    if (sig == SIGWINCH) {
      term_.Resize();
      dirty_ = true;
      continue;
    }
    *exit_code = 128 + sig;
    return true;
  }
  return false;
}

bool App::HandleKeys(int* exit_code) {
  for (const Key& key : term_.ReadKeys()) {
    Reduced r = Reduce(std::move(ui_), key, rows_, table_rows_);
    ui_ = std::move(r.state);
    dirty_ = true;
    switch (r.effect.kind) {
      case EffectKind::kNone:
        break;
      case EffectKind::kQuit:
        *exit_code = 0;
        return true;
      case EffectKind::kRepaint:
        term_.Invalidate();
        Draw(true);
        break;
      case EffectKind::kPlanStop:
        if (actions_ == nullptr) {
          ui_.dialog = Dialog::kNone;
          ui_.status = "read-only: stopping processes is off";
          break;
        }
        StartAction([actions = actions_, pid = r.effect.pid, tree = r.effect.tree,
                     latest = model_.snapshot] { return actions->Plan(pid, tree, latest); },
                    /*executes=*/false);
        break;
      case EffectKind::kConfirmStop:
        if (actions_ != nullptr) {
          StartAction([actions = actions_] { return actions->Execute(); }, /*executes=*/true);
        }
        break;
      case EffectKind::kCancelStop:
        if (actions_ != nullptr) actions_->Cancel();
        break;
    }
    // Rows may have changed (filter, sort): rebuild before the next key.
    if (model_.snapshot) {
      rows_ = BuildRows(*model_.snapshot, ui_);
      ui_ = Reselect(std::move(ui_), rows_);
    }
  }
  return false;
}

int App::Run() {
  prober_.Start();
  int exit_code = 0;
  for (;;) {
    Refresh();
    TakeActionResult();
    Draw(false);
    pollfd fds[3] = {
        {term_.input_fd(), POLLIN, 0}, {fds_.wake, POLLIN, 0}, {fds_.signals, POLLIN, 0}};
    const int ready = poll(fds, 3, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[2].revents & POLLIN) {
      if (HandleSignal(&exit_code)) return exit_code;
    }
    if (fds[1].revents & POLLIN) {
      unsigned char buf[256];
      while (read(fds_.wake, buf, sizeof buf) > 0) {
      }
    }
    // The terminal went away (an SSH session closed, the terminal emulator
    // quit). Checked before POLLIN: a hung-up tty also reports POLLIN, with
    // nothing left to read, for ever — reading keys there would spin.
    if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) return 129;
    if (fds[0].revents & POLLIN) {
      if (HandleKeys(&exit_code)) return exit_code;
    }
  }
}

}  // namespace gw::watch
