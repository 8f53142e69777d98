#include "queue/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "core/text.h"
#include "diagnose/verdict.h"
#include "fleet/fleet_view.h"
#include "fleet/history.h"
#include "fleet/history_store.h"
#include "fleet/metrics.h"
#include "fleet/trends.h"
#include "os/errno_text.h"
#include "os/unique_fd.h"
#include "proc/proc_reader.h"
#include "queue/history_ops.h"
#include "queue/job_table.h"
#include "queue/ops.h"
#include "queue/protocol.h"
#include "queue/snapshotter.h"
#include "queue/socket_server.h"
#include "queue/sqlite_job_store.h"
#include "web/web_api.h"
#include "web/web_assets.h"
#include "web/web_auth.h"

namespace gw::queue {
namespace {

using nlohmann::json;

constexpr int kLockWaitTries = 100;  // 2 s
constexpr size_t kHistory = 8;       // Full looks judged together (idle holders need several).
// How long past a look's deadline the daemon waits for its first look before
// it serves requests (the look reports its own timeout by then).
constexpr int64_t kFirstLookSlackMs = 1000;
// The web API's type (the listener gzips it for a client that takes gzip).
constexpr char kJsonType[] = "application/json; charset=utf-8";
// The page's trends (how long each GPU has sat held and idle or full, as
// `why` says it): made this often, from the last kTrendsLookbackS of history.
constexpr int64_t kTrendsEveryMs = 60'000;
constexpr int64_t kTrendsLookbackS = 86'400;

class DaemonImpl final : public Daemon {
 public:
  DaemonImpl(DaemonOptions o, DaemonParts parts) : o_(std::move(o)), parts_(std::move(parts)) {}

  Status Init() {
    if (!parts_.clock) parts_.clock = std::make_unique<RealClock>();
    log_ = parts_.log_sink ? std::make_unique<DaemonLog>(*parts_.clock, parts_.log_sink)
                           : std::make_unique<DaemonLog>(*parts_.clock);
    if (Status s = InitState(); !s.ok()) return s;
    if (o_.queue) {
      if (Status s = InitQueue(); !s.ok()) return s;
    }
    OpenHistory();
    handler_ = std::make_unique<RequestHandler>(table_.get(), *parts_.clock,
                                                OpsOptions{o_.system_mode, geteuid()});
    handler_->AddOp("history", [this](const Caller&, const json& req) {
      std::lock_guard<std::mutex> lock(history_mu_);
      return HistoryReply(*history_, parts_.clock->NowUnixMs() / 1000, req);
    });
    handler_->AddOp("trends", [this](const Caller&, const json& req) {
      std::lock_guard<std::mutex> lock(history_mu_);
      return TrendsReply(*history_, parts_.clock->NowUnixMs() / 1000, req, activity_shared_.get());
    });
    handler_->AddOp("usage", [this](const Caller&, const json& req) {
      std::lock_guard<std::mutex> lock(history_mu_);
      return UsageReply(*history_, table_.get(), parts_.clock->NowUnixMs() / 1000, req);
    });
    auto server = SocketServer::Listen(
        o_.socket_path, o_.system_mode, *parts_.clock,
        [this](const Caller& c, std::string_view line) { return handler_->Handle(c, line); });
    if (!server.ok()) return server.error();
    server_ = std::move(*server);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
    signal(SIGPIPE, SIG_IGN);
    signal_fd_.Reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
    if (table_) {
      if (Status s = table_->Recover(); !s.ok()) return s;
    }
    snapshots_ = std::make_unique<Snapshotter>(
        o_.collect, *parts_.clock,
        KernelLogReading{o_.read_kernel_log, o_.kernel_log, o_.kernel_log_every_ms},
        o_.holder_scan_every_ms, o_.process_stat_every_ms);
    snapshots_->Request(/*full=*/true);
    if (o_.listen) {
      fleet::HttpGate gate;
      if (o_.web_token) {
        gate = [token = *o_.web_token](const fleet::HttpRequest& r) {
          return web::CheckToken(r, token);
        };
      }
      auto http = fleet::HttpListener::Start(*o_.listen, Routes(), std::move(gate));
      if (!http.ok()) return http.error();
      http_ = std::move(*http);
    }
    std::string listening = "listening on " + o_.socket_path;
    if (http_) {
      const std::string at = fleet::FormatListenAddress({o_.listen->host, http_->port()});
      listening += fmt::format(", metrics on http://{}/metrics, the page on http://{}/{}", at, at,
                               o_.web_token ? " (token needed)" : "");
    }
    if (o_.queue) {
      log_->Notice(fmt::format("{} mode, {}, state in {} ({} active jobs)",
                               o_.system_mode ? "system" : "personal", listening, o_.state_dir,
                               table_->active().size()));
    } else {
      log_->Notice(fmt::format("without the queue, {}, state in {}", listening, o_.state_dir));
    }
    return Status::Ok();
  }

  // The state directory and its lock: one daemon per directory, queue or not.
  Status InitState() {
    std::error_code ec;
    std::filesystem::create_directories(o_.state_dir + "/jobs", ec);
    if (ec) return MakeError("io", "state directory " + o_.state_dir + ": " + ec.message());
    chmod(o_.state_dir.c_str(), 0700);
    chmod((o_.state_dir + "/jobs").c_str(), 0700);
    const std::string lock_path = o_.state_dir + "/lock";
    lock_fd_.Reset(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock_fd_.valid()) {
      const int err = errno;
      if (err == EROFS || err == ENOSPC || err == EDQUOT || err == EIO) {
        return MakeError(kStoreUnwritable, "queue storage not writable: " + os::ErrnoText(err) +
                                               " (" + lock_path + ")");
      }
      return MakeError("io", lock_path + ": " + os::ErrnoText(err));
    }
    // A daemon that was just killed may leave its lock held for a moment by
    // a child between fork and exec (the descriptor closes at exec): wait up
    // to kLockWaitTries × 20 ms before calling the directory taken. A live
    // daemon holds it for good.
    int tries = 0;
    while (flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || ++tries >= kLockWaitTries) {
        return MakeError("busy", "another gpuwardend uses the state directory " + o_.state_dir);
      }
      poll(nullptr, 0, 20);
    }
    return Status::Ok();
  }

  Status InitQueue() {
    if (!parts_.store) {
      auto store = SqliteJobStore::Open(o_.state_dir + "/queue.db");
      if (!store.ok()) return store.error();
      parts_.store = std::move(*store);
    }
    if (!parts_.supervisors) {
      parts_.supervisors = MakeRealSupervisors(o_.state_dir, o_.collect.proc_root);
    }
    if (!parts_.control) parts_.control = act::MakeRealProcessControl(o_.collect.proc_root);
    procs_ = std::make_unique<proc::ProcReader>(o_.collect.proc_root);

    JobTableOptions to = o_.table;
    to.state_dir = o_.state_dir;
    table_ = std::make_unique<JobTable>(
        to, JobTableParts{*parts_.store, *parts_.supervisors, *parts_.clock, *procs_,
                          *parts_.control, *log_});
    return Status::Ok();
  }

  // STATE_DIR/history.db; a file that cannot be used leaves the history in
  // memory only (said once in the log), never the daemon down.
  void OpenHistory() {
    const std::string path = o_.state_dir + "/history.db";
    auto store = fleet::SqliteHistoryStore::Open(path);
    if (store.ok()) {
      history_store_ = std::move(*store);
    } else {
      log_->Warning("history kept in memory only: " + store.error().message);
      history_store_ = std::make_unique<fleet::MemoryHistoryStore>();
    }
    history_ = std::make_unique<fleet::History>(*history_store_);
    if (Status st = history_->Load(parts_.clock->NowUnixMs() / 1000); !st.ok()) {
      log_->Warning("history not read back: " + st.error().message);
    }
  }

  int Run() override {
    const Clock& clock = *parts_.clock;
    WaitForFirstLook();
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({signal_fd_.get(), POLLIN, 0});
      fds.push_back({snapshots_->fd(), POLLIN, 0});
      const std::vector<JobTable::WatchFd> watches =
          table_ ? table_->Watches() : std::vector<JobTable::WatchFd>();
      for (const JobTable::WatchFd& w : watches) fds.push_back({w.fd, POLLIN, 0});
      const size_t server_at = fds.size();
      const size_t server_count = server_ ? server_->AppendPollFds(fds) : 0;
      const int64_t now = clock.MonotonicMs();
      // A look still in progress (a slow or wedged driver) wakes the loop
      // through the snapshotter's descriptor: a look due meanwhile is not a
      // reason to wake (that spun the loop at a 0 ms timeout until it ended).
      const int64_t look_due =
          snapshots_->busy() ? std::numeric_limits<int64_t>::max() : next_poll_ms_;
      const int64_t wake =
          table_ ? std::min(look_due, table_->NextPassMs().value_or(look_due)) : look_due;
      // A pass due now is INT64_MIN ("at once"): compared, never subtracted
      // from (that overflowed; UBSan stopped the daemon under a burst of
      // submits, and a wrapped difference would have been a 1 s wait).
      const int timeout = wake <= now ? 0 : static_cast<int>(std::min<int64_t>(wake - now, 1000));
      const int n = poll(fds.data(), fds.size(), timeout);
      if (n < 0 && errno != EINTR) {
        log_->Error("poll: " + os::ErrnoText(errno));
        break;
      }
      if (fds[0].revents & POLLIN) HandleSignals();
      if (fds[1].revents & POLLIN) {
        if (auto look = snapshots_->Take()) OnLook(std::move(*look));
      }
      for (size_t i = 0; i < watches.size(); ++i) {
        if (fds[2 + i].revents & (POLLIN | POLLHUP | POLLERR))
          table_->OnSupervisorExit(watches[i].id);
      }
      if (server_) server_->OnPoll(fds.data() + server_at, server_count);
      if (const int64_t now_ms = clock.MonotonicMs();
          now_ms >= next_poll_ms_ && !snapshots_->busy()) {
        const bool full = now_ms >= next_full_poll_ms_;
        snapshots_->Request(full);
        next_poll_ms_ =
            now_ms + (table_ ? table_->PollIntervalMs(o_.poll_waiting_ms, o_.poll_idle_ms)
                             : o_.poll_idle_ms);
        if (full) next_full_poll_ms_ = now_ms + o_.poll_idle_ms;
      }
      if (table_) {
        table_->Tick();
        if (table_->TakeLookRequest()) snapshots_->Request(/*full=*/false);
      }
    }
    log_->Notice(table_ ? "stopping; running jobs keep running under their supervisors"
                        : "stopping");
    return 0;
  }

 private:
  // Requests wait in the socket's backlog until the first look is in, at
  // most one look's deadline: a submit is then checked against the server's
  // GPUs (admission), never against none, and `queue` never answers "0
  // GPUs" because it asked too early.
  void WaitForFirstLook() {
    const Clock& clock = *parts_.clock;
    const int64_t until = clock.MonotonicMs() + o_.collect.deadline_ms + kFirstLookSlackMs;
    for (;;) {
      const int64_t left = until - clock.MonotonicMs();
      if (left <= 0) return;
      pollfd fd{snapshots_->fd(), POLLIN, 0};
      const int n = poll(&fd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (n < 0 && errno != EINTR) return;
      if (n > 0) {
        if (auto look = snapshots_->Take()) {
          OnLook(std::move(*look));
          return;
        }
      }
    }
  }

  // A full look is judged here, once, for everything the daemon serves: the
  // queue's idle holders and unhealthy GPUs, and the metrics.
  void OnLook(Snapshotter::Look look) {
    if (look.kernel_log) {
      if (look.kernel_log->ok()) {
        kernel_log_ = std::move(**look.kernel_log);
      } else {
        log_->Warning("kernel log not read: " + look.kernel_log->error().message);
      }
    }
    if (!look.full) {
      if (table_) table_->OnSnapshot(std::move(look.snapshot), false, nullptr);
      return;
    }
    // The look joins the judged ones without a copy. The published view
    // points into judged_, so judged_ changes under view_mu_ (the HTTP
    // threads render under it); this thread alone changes it, so it reads
    // it without the lock.
    std::optional<Snapshot> oldest;  // Freed after the lock is released.
    {
      std::lock_guard<std::mutex> lock(view_mu_);
      judged_.push_back(std::move(look.snapshot));
      if (judged_.size() > kHistory) {
        oldest = std::move(judged_.front());
        judged_.erase(judged_.begin());
      }
      // The published view stays whole until Publish: its look has moved
      // within judged_ (one before the new one).
      if (view_.latest) view_.latest = Unowned(judged_[judged_.size() - 2]);
    }
    // Its processes' memory serves the next look's (Snapshotter::Recycle).
    if (oldest) snapshots_->Recycle(std::move(oldest->processes));
    const Snapshot& latest = judged_.back();
    diagnose::DiagnoseOptions dopt;
    // Each holder's work, look by look, for as long as the daemon runs: how
    // long a holder has been idle (diagnose/idle_time.h), for its own
    // judgement and for `why` and `clean` through the trends op.
    diagnose::ObserveLook(activity_, latest, dopt);
    auto activity = std::make_shared<diagnose::ActivityHistory>();
    activity->as_of_ms = latest.time_unix_ms;
    activity->holders = diagnose::HoldersOf(activity_);
    for (const Gpu& g : latest.gpus) activity->gpus.push_back(g.index);
    dopt.activity_history = activity;
    dopt.placement = o_.table.placement;
    std::span<const kmsg::KernelEvent> events;
    if (kernel_log_) {
      dopt.events = collect::EventAgeFor(*kernel_log_, latest, std::nullopt);
      events = kernel_log_->events;
    }
    auto diagnosis =
        std::make_shared<const diagnose::Diagnosis>(diagnose::Diagnose(judged_, dopt, events));
    // The queue's figures in the history point are those of before this
    // look's placement pass.
    const std::optional<fleet::QueueStats> queue =
        table_ ? std::optional<fleet::QueueStats>(QueueStatsNow()) : std::nullopt;
    Status added = Status::Ok();
    {
      std::lock_guard<std::mutex> lock(history_mu_);
      added = history_->Add(fleet::PointOf(latest, *diagnosis, queue));
      activity_shared_ = std::move(activity);
    }
    if (!added.ok()) log_->Warning("history not written: " + added.error().message);
    if (table_) table_->OnSnapshot(Snapshot(latest), true, diagnosis.get());
    if (http_) Publish(std::move(diagnosis));
  }

  // The page's trends, the same as `why` asks of the daemon's trends op:
  // made again at most once a kTrendsEveryMs, on an HTTP thread when the
  // page asks, so a daemon that only answers scrapes never makes them.
  void UpdateTrends() {
    const int64_t now_ms = parts_.clock->MonotonicMs();
    int64_t due = next_trends_ms_.load();
    // One thread makes them; one that loses the race serves the old ones.
    if (now_ms < due || !next_trends_ms_.compare_exchange_strong(due, now_ms + kTrendsEveryMs)) {
      return;
    }
    const int64_t now = parts_.clock->NowUnixMs() / 1000;
    std::shared_ptr<const diagnose::Trends> trends;
    {
      std::lock_guard<std::mutex> lock(history_mu_);
      Result<std::vector<fleet::HistoryPoint>> trail = history_->Trail(now - kTrendsLookbackS, now);
      if (trail.ok()) {
        trends = std::make_shared<const diagnose::Trends>(
            fleet::TrendsOf(*trail, diagnose::DiagnoseOptions{}));
      }
    }
    ReturnFreedMemory();  // The day's points (a few MB) are not kept.
    std::lock_guard<std::mutex> lock(view_mu_);
    trends_ = std::move(trends);
    status_text_.clear();
  }

  // The view /metrics renders: the latest judged look (judged_.back()), its
  // diagnosis, the Xids and the queue's figures.
  void Publish(std::shared_ptr<const diagnose::Diagnosis> diagnosis) {
    fleet::FleetView view;
    const Snapshot& latest = judged_.back();
    if (kernel_log_) {
      const std::string boot = kernel_log_->own_logs || kernel_log_->events.empty()
                                   ? kernel_log_->running_boot_id
                                   : kernel_log_->events.back().boot_id;
      view.xids = fleet::TallyXids(latest, kernel_log_->events, boot);
    }
    view.diagnosis = std::move(diagnosis);
    if (table_) view.queue = QueueStatsNow();
    // The page's queue: the socket's own queue reply, made here on the
    // loop's thread (the table is this thread's alone); once, without a
    // queue (this thread alone writes queue_text_, so it reads it unlocked).
    std::string queue_text;
    if (table_ || queue_text_.empty()) {
      queue_text = handler_->Handle(Caller{}, R"({"op": "queue"})")
                       .dump(-1, ' ', false, json::error_handler_t::replace);
    }
    // What the page's why document says it judged, as `why` would.
    render::WhyJsonContext context;
    context.samples = static_cast<unsigned>(judged_.size());
    context.window_s =
        static_cast<double>(latest.time_unix_ms - judged_.front().time_unix_ms) / 1000.0;
    if (kernel_log_) context.kernel_log_sources = kernel_log_->used;
    std::lock_guard<std::mutex> lock(view_mu_);
    why_context_ = std::move(context);
    view.latest = Unowned(latest);
    view_ = std::move(view);
    if (!queue_text.empty()) queue_text_ = std::move(queue_text);
    status_text_.clear();  // Made again from the new view on the next request.
  }

  // A pointer into judged_ without an owner: valid while view_mu_ is held
  // and judged_ does not change (it changes only under view_mu_).
  static std::shared_ptr<const Snapshot> Unowned(const Snapshot& s) {
    return std::shared_ptr<const Snapshot>(std::shared_ptr<const Snapshot>(), &s);
  }

  fleet::QueueStats QueueStatsNow() const {
    fleet::QueueStats q;
    const int64_t now = parts_.clock->NowUnixMs();
    for (const auto& [id, job] : table_->active()) {
      switch (job.state) {
        case JobState::kQueued: {
          ++q.queued;
          const double waited = static_cast<double>(now - job.submit_unix_ms) / 1000.0;
          q.oldest_wait_s = std::max(q.oldest_wait_s.value_or(0.0), std::max(0.0, waited));
          break;
        }
        case JobState::kHeld:
          ++q.held;
          break;
        case JobState::kStarting:
          ++q.starting;
          break;
        case JobState::kRunning:
          ++q.running;
          break;
        default:
          break;
      }
    }
    const JobCounters& c = table_->counters();
    q.starts_total = c.starts;
    q.ended_total = c.ended;
    q.waits = c.waits;
    for (const Degraded& d : table_->degraded()) q.degraded |= d.what == "storage";
    return q;
  }

  std::map<std::string, fleet::HttpRoute> Routes() {
    std::map<std::string, fleet::HttpRoute> routes;
    routes["/metrics"] = [this](const fleet::HttpRequest&) {
      // Rendered under the lock: the view points into judged_.
      std::lock_guard<std::mutex> lock(view_mu_);
      return fleet::HttpReply{200,
                              "text/plain; version=0.0.4; charset=utf-8",
                              fleet::RenderMetrics(view_, o_.metrics),
                              {}};
    };
    for (const web::WebAsset& a : web::WebAssets()) {
      auto serve = [&a](const fleet::HttpRequest&) {
        return fleet::HttpReply{200, std::string(a.content_type), std::string(a.body), {}};
      };
      routes[std::string(a.path)] = serve;
      if (a.path == "/index.html") routes["/"] = serve;
    }
    routes["/api/status"] = [this](const fleet::HttpRequest&) {
      UpdateTrends();
      std::lock_guard<std::mutex> lock(view_mu_);
      if (status_text_.empty()) status_text_ = StatusTextNow();
      return fleet::HttpReply{200, kJsonType, status_text_, {}};
    };
    routes["/api/queue"] = [this](const fleet::HttpRequest&) {
      std::lock_guard<std::mutex> lock(view_mu_);
      return fleet::HttpReply{200,
                              kJsonType,
                              queue_text_.empty() ? R"({"ok":false,"error":{"code":"starting",)"
                                                    R"("message":"no look yet"}})"
                                                  : queue_text_,
                              {}};
    };
    routes["/api/history"] = [this](const fleet::HttpRequest& r) {
      const int64_t now = parts_.clock->NowUnixMs() / 1000;
      Result<web::HistoryQuery> q = web::ParseHistoryQuery(r.params, now);
      if (!q.ok()) {
        return fleet::HttpReply{
            400, kJsonType, ErrorReply("bad_request", q.error().message).dump(), {}};
      }
      web::HistoryWindow window(*q);
      Status s = Status::Ok();
      {
        std::lock_guard<std::mutex> lock(history_mu_);
        // A reader that asks for the new steps only has the rest: read from there.
        const int64_t from = std::max(q->from_s, q->after_s);
        s = history_->ForEachSince(from, now, [&window](fleet::HistoryPoint&& p) {
          window.Add(std::move(p));
          return Status::Ok();
        });
      }
      if (!s.ok()) {
        return fleet::HttpReply{500, kJsonType, ErrorReply("store", s.error().message).dump(), {}};
      }
      return fleet::HttpReply{200, kJsonType, window.Finish(), {}};
    };
    return routes;
  }

  // The /api/status text of view_, with the trends as `why` shows them
  // when they are of this server; REQUIRES: view_mu_ held.
  std::string StatusTextNow() const {
    web::PageFacts facts{o_.poll_idle_ms, table_ != nullptr, o_.metrics.version};
    if (!trends_ || !view_.latest || !view_.diagnosis ||
        !diagnose::TrendsDescribe(*trends_, *view_.latest)) {
      return web::StatusApiText(view_.latest.get(), view_.diagnosis.get(), why_context_, facts);
    }
    diagnose::Diagnosis diagnosis = *view_.diagnosis;
    diagnose::AddTrendEvidence(diagnosis, *trends_);
    render::WhyJsonContext context = why_context_;
    context.trends = trends_.get();
    return web::StatusApiText(view_.latest.get(), &diagnosis, context, facts);
  }

  void HandleSignals() {
    signalfd_siginfo si;
    while (read(signal_fd_.get(), &si, sizeof si) == sizeof si) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) stop_ = true;
    }
    // Reap supervisors this daemon started; their Watch descriptors report
    // the end.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  DaemonOptions o_;
  DaemonParts parts_;
  std::unique_ptr<DaemonLog> log_;
  std::unique_ptr<proc::ProcReader> procs_;
  std::unique_ptr<JobTable> table_;
  std::unique_ptr<RequestHandler> handler_;
  std::unique_ptr<SocketServer> server_;
  // After the parts its thread reads: destroyed (the thread joined) before them.
  std::unique_ptr<Snapshotter> snapshots_;
  // Full looks judged for everything served (OnLook), the kernel log last
  // read. judged_ changes under view_mu_ (view_ points into it).
  std::vector<Snapshot> judged_;
  std::optional<collect::KernelLog> kernel_log_;
  std::unique_ptr<fleet::HistoryStore> history_store_;
  std::unique_ptr<fleet::History> history_;
  // What the HTTP listener's threads read, under view_mu_: replaced whole
  // after each full look.
  std::mutex view_mu_;
  fleet::FleetView view_;
  std::string queue_text_;              // /api/queue: the queue op's reply as of view_.
  std::string status_text_;             // /api/status of view_, once asked ("": not made yet).
  render::WhyJsonContext why_context_;  // Of view_ (its trends pointer always null).
  std::shared_ptr<const diagnose::Trends> trends_;  // The page's, null until made.
  std::atomic<int64_t> next_trends_ms_{0};
  // history_ is written on the loop's thread and read by the HTTP threads.
  std::mutex history_mu_;
  diagnose::ActivityLog activity_;  // The loop thread's alone.
  // Its latest state, for the trends op (under history_mu_).
  std::shared_ptr<const diagnose::ActivityHistory> activity_shared_;
  // Last: stopped (its threads joined) before anything its routes read.
  std::unique_ptr<fleet::HttpListener> http_;
  os::UniqueFd lock_fd_;
  os::UniqueFd signal_fd_;
  bool stop_ = false;
  int64_t next_poll_ms_ = 0;
  int64_t next_full_poll_ms_ = 0;  // Light looks in between (see Snapshotter).
};

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::StartWith(DaemonOptions options, DaemonParts parts) {
  auto d = std::make_unique<DaemonImpl>(std::move(options), std::move(parts));
  if (Status s = d->Init(); !s.ok()) return s.error();
  return std::unique_ptr<Daemon>(std::move(d));
}

Result<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  return StartWith(std::move(options), DaemonParts{});
}

}  // namespace gw::queue
