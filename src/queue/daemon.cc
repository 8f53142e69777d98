#include "queue/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/text.h"
#include "core/units.h"
#include "diagnose/health.h"
#include "diagnose/verdict.h"
#include "proc/proc_parse.h"
#include "proc/proc_reader.h"
#include "proc/users.h"
#include "queue/protocol.h"
#include "queue/runner.h"
#include "queue/store.h"

namespace gw::queue {
namespace {

using nlohmann::json;

// Connections: the system socket is open to every local user, so no user may
// take every slot (root is not counted against a user's share), a request
// must arrive whole within a few seconds of its first byte, and a client that
// stops reading its reply is dropped. A client's next request is read only
// once its last reply is sent, so a client holds at most one reply
// (<= kMaxReplyBytes) in the daemon's memory.
constexpr size_t kMaxClients = 1024;
constexpr size_t kMaxClientsPerUser = 64;
constexpr int64_t kPartialRequestTimeoutMs = 10'000;
constexpr int64_t kStalledReaderTimeoutMs = 30'000;
constexpr size_t kLogChunk = 256 << 10;
constexpr size_t kHistory = 8;  // Snapshots kept for idle judgements.

int64_t NowMs() { return RealClock().NowUnixMs(); }

int MinuteOfDay(int64_t unix_ms) {
  const time_t t = static_cast<time_t>(unix_ms / 1000);
  struct tm local;
  localtime_r(&t, &local);
  return local.tm_hour * 60 + local.tm_min;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Takes snapshots on its own thread: a wedged driver blocks this thread (up
// to the probe's deadline), never the event loop. A light snapshot skips the
// device-file holder scan (every open file of every process): the queue's
// decisions need only the driver's view, and light looks are what make a
// short poll interval affordable.
class Snapshotter {
 public:
  explicit Snapshotter(collect::CollectOptions options)
      : options_(std::move(options)), nvml_(collect::NvmlProbeOptions(options_)) {
    options_.nvml_session = &nvml_;
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    thread_ = std::thread([this] { Loop(); });
  }
  ~Snapshotter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    close(wake_fd_);
  }
  int fd() const { return wake_fd_; }
  void Request(bool full) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requested_ = true;
      full_ |= full;
    }
    cv_.notify_all();
  }
  struct Look {
    Snapshot snapshot;
    bool full = false;  // With the device-file holder scan.
  };
  std::optional<Look> Take() {
    uint64_t n;
    while (read(wake_fd_, &n, sizeof n) > 0) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<Look> out = std::move(ready_);
    ready_.reset();
    return out;
  }
  bool busy() {
    std::lock_guard<std::mutex> lock(mu_);
    return requested_ || running_;
  }

 private:
  void Loop() {
    RealClock clock;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || requested_; });
        if (stop_) return;
        requested_ = false;
        running_ = true;
        options_.scan_device_files = full_;
        full_ = false;
      }
      Look look{collect::Collect(options_, clock), options_.scan_device_files};
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_ = std::move(look);
        running_ = false;
      }
      const uint64_t one = 1;
      (void)!write(wake_fd_, &one, sizeof one);
    }
  }

  collect::CollectOptions options_;
  // NVML stays loaded and initialised between looks (a look every --poll-ms).
  nvml::ProbeSession nvml_;
  int wake_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool requested_ = false;
  bool full_ = false;
  bool running_ = false;
  std::optional<Look> ready_;
  std::thread thread_;
};

struct Client {
  int fd = -1;
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::string user;
  std::string in;
  std::string out;
  bool closing = false;
  int64_t in_since_ms = 0;   // Monotonic: when `in` got its first unanswered byte.
  int64_t out_since_ms = 0;  // Monotonic: when the reply in `out` last made progress.
};

// A running job the loop watches: its supervisor's pidfd.
struct Watched {
  int pidfd = -1;
  bool child = false;       // Started by this daemon: reap it.
  std::string stop_reason;  // Set when the daemon asked it to stop.
  bool warned_vram = false;
};

class DaemonImpl final : public Daemon {
 public:
  explicit DaemonImpl(DaemonOptions o) : o_(std::move(o)), snapshots_(o_.collect) {}
  ~DaemonImpl() override {
    for (auto& [id, w] : watched_) close(w.pidfd);
    for (auto& [fd, c] : clients_) close(fd);
    if (listen_fd_ >= 0) close(listen_fd_);
    if (signal_fd_ >= 0) close(signal_fd_);
    if (lock_fd_ >= 0) close(lock_fd_);
  }

  Status Init() {
    std::error_code ec;
    std::filesystem::create_directories(o_.state_dir + "/jobs", ec);
    if (ec) return MakeError("io", "state directory " + o_.state_dir + ": " + ec.message());
    chmod(o_.state_dir.c_str(), 0700);
    chmod((o_.state_dir + "/jobs").c_str(), 0700);
    lock_fd_ = open((o_.state_dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0 || flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      return MakeError("busy", "another gpuwardend uses the state directory " + o_.state_dir);
    }
    auto store = Store::Open(o_.state_dir + "/queue.db");
    if (!store.ok()) return store.error();
    store_ = std::move(*store);
    if (Status s = Bind(); !s.ok()) return s;
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
    signal(SIGPIPE, SIG_IGN);
    signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    Recover();
    snapshots_.Request(/*full=*/true);
    return Status::Ok();
  }

  int Run() override {
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({listen_fd_, POLLIN, 0});
      fds.push_back({signal_fd_, POLLIN, 0});
      fds.push_back({snapshots_.fd(), POLLIN, 0});
      std::vector<JobId> watched_ids;
      for (auto& [id, w] : watched_) {
        fds.push_back({w.pidfd, POLLIN, 0});
        watched_ids.push_back(id);
      }
      std::vector<int> client_fds;
      for (auto& [fd, c] : clients_) {
        // Backpressure: a client with a reply still to send is not read.
        const short events = c.out.empty() ? POLLIN : POLLOUT;
        fds.push_back({fd, events, 0});
        client_fds.push_back(fd);
      }
      const int64_t now = RealClock().MonotonicMs();
      const int timeout = static_cast<int>(std::clamp<int64_t>(next_poll_ms_ - now, 0, 1000));
      const int n = poll(fds.data(), fds.size(), timeout);
      if (n < 0 && errno != EINTR) break;
      if (fds[1].revents & POLLIN) HandleSignals();
      if (fds[2].revents & POLLIN) {
        if (auto look = snapshots_.Take()) OnSnapshot(std::move(look->snapshot), look->full);
      }
      size_t i = 3;
      for (JobId id : watched_ids) {
        if (fds[i++].revents & (POLLIN | POLLHUP | POLLERR)) OnSupervisorExit(id);
      }
      for (int fd : client_fds) {
        const short re = fds[i++].revents;
        auto it = clients_.find(fd);
        if (it == clients_.end()) continue;
        if (re & POLLOUT) {
          FlushClient(it->second);
          HandleRequests(it->second);
        }
        if (re & (POLLIN | POLLHUP | POLLERR)) ReadClient(it->second);
      }
      if (fds[0].revents & POLLIN) Accept();
      ExpireClients();
      DropClosedClients();
      if (const int64_t now_ms = RealClock().MonotonicMs();
          now_ms >= next_poll_ms_ && !snapshots_.busy()) {
        const bool full = now_ms >= next_full_poll_ms_;
        snapshots_.Request(full);
        next_poll_ms_ = now_ms + PollInterval();
        if (full) next_full_poll_ms_ = now_ms + o_.poll_idle_ms;
      }
      if (schedule_needed_ && latest_) Schedule();
    }
    unlink(o_.socket_path.c_str());
    return 0;
  }

 private:
  // --- Socket ---------------------------------------------------------------
  Status Bind() {
    const std::string& path = o_.socket_path;
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
      std::filesystem::create_directories(dir, ec);
      if (ec) return MakeError("io", "socket directory " + dir.string() + ": " + ec.message());
      chmod(dir.c_str(), o_.system_mode ? 0755 : 0700);
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
      return MakeError("io", "socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    // A live daemon answers; a stale socket file from a crash does not.
    auto probe = ConnectToDaemon(path);
    if (probe.ok()) {
      close(*probe);
      return MakeError("busy", "a gpuwardend already listens on " + path);
    }
    unlink(path.c_str());
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0) return MakeError("io", std::string("socket: ") + std::strerror(errno));
    const mode_t old = umask(o_.system_mode ? 0111 : 0177);
    const int rc = bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    umask(old);
    if (rc != 0) return MakeError("io", "bind " + path + ": " + std::strerror(errno));
    if (listen(listen_fd_, 128) != 0) {
      return MakeError("io", "listen " + path + ": " + std::strerror(errno));
    }
    return Status::Ok();
  }

  void Accept() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      ucred cred{};
      socklen_t len = sizeof cred;
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        close(fd);
        continue;
      }
      if (std::optional<std::string> full = Full(cred.uid)) {
        // Told, not just dropped: the client can say why. The socket's
        // buffer is empty, so this short write does not block.
        const std::string reply = ErrorReply("busy", *full).dump() + "\n";
        (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
        continue;
      }
      Client c;
      c.fd = fd;
      c.uid = cred.uid;
      c.gid = cred.gid;
      c.pid = cred.pid;
      c.user = proc::UserNameOrUid(cred.uid);
      if (!o_.system_mode && cred.uid != geteuid() && cred.uid != 0) {
        // A personal daemon serves its own user only.
        c.out = ErrorReply("forbidden", "this gpuwardend serves " + proc::UserNameOrUid(geteuid()) +
                                            " only (a personal daemon)")
                    .dump() +
                "\n";
        c.closing = true;
      }
      clients_.emplace(fd, std::move(c));
    }
  }

  // Why a new connection from `uid` cannot be served now, if it cannot.
  std::optional<std::string> Full(uid_t uid) const {
    if (clients_.size() >= kMaxClients) {
      return fmt::format("gpuwardend is busy: {} connections open; try again", clients_.size());
    }
    if (uid == 0) return std::nullopt;
    size_t mine = 0;
    for (const auto& [fd, c] : clients_) mine += c.uid == uid ? 1 : 0;
    if (mine < kMaxClientsPerUser) return std::nullopt;
    return fmt::format(
        "gpuwardend is busy: {} already has {} connections open (the most one user "
        "may); close some and try again",
        proc::UserNameOrUid(uid), mine);
  }

  // Drops a client whose request has been incomplete, or whose reply has not
  // moved, for too long: a slot held by a silent client is a slot nobody else
  // can use.
  void ExpireClients() {
    const int64_t now = RealClock().MonotonicMs();
    for (auto& [fd, c] : clients_) {
      if (c.closing) continue;
      if (!c.out.empty() && now - c.out_since_ms > kStalledReaderTimeoutMs) {
        c.out.clear();
        c.closing = true;
      } else if (c.out.empty() && !c.in.empty() && now - c.in_since_ms > kPartialRequestTimeoutMs) {
        Send(c, ErrorReply("timeout", fmt::format("the request did not end (\\n) within {} s",
                                                  kPartialRequestTimeoutMs / 1000)));
        c.in.clear();
        c.closing = true;
      }
    }
  }

  // Reads what the client sent (at most one request's worth beyond what is
  // buffered) and answers the complete requests.
  void ReadClient(Client& c) {
    char buf[65536];
    while (!c.closing && c.in.size() <= kMaxMessageBytes) {
      const ssize_t n = read(c.fd, buf, sizeof buf);
      if (n > 0) {
        if (c.in.empty()) c.in_since_ms = RealClock().MonotonicMs();
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) c.closing = true;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) c.closing = true;
      break;
    }
    HandleRequests(c);
  }

  // Answers buffered requests one at a time: the next only once the last
  // reply is sent. A request without its newline within 1 MiB is refused.
  void HandleRequests(Client& c) {
    while (!c.closing && c.out.empty()) {
      const size_t nl = c.in.find('\n');
      if (nl == std::string::npos) {
        if (c.in.size() > kMaxMessageBytes) {
          Send(c, ErrorReply("too_long", "message longer than 1 MiB"));
          c.in.clear();
          c.closing = true;
        }
        break;
      }
      std::string line = c.in.substr(0, nl);
      c.in.erase(0, nl + 1);
      c.in_since_ms = RealClock().MonotonicMs();
      Handle(c, line);
      FlushClient(c);
    }
  }

  void Send(Client& c, const json& reply) {
    std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() >= kMaxReplyBytes) {
      text = ErrorReply("too_long",
                        fmt::format("the reply would be {}, over the protocol's {}; ask for fewer "
                                    "jobs (\"limit\")",
                                    FormatBytes(text.size()), FormatBytes(kMaxReplyBytes)))
                 .dump();
    }
    if (c.out.empty()) c.out_since_ms = RealClock().MonotonicMs();
    c.out += text;
    c.out += '\n';
  }

  void FlushClient(Client& c) {
    while (!c.out.empty()) {
      const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        c.out_since_ms = RealClock().MonotonicMs();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.out.clear();
      c.closing = true;
      return;
    }
  }

  void DropClosedClients() {
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (it->second.closing) FlushClient(it->second);
      if (it->second.closing) {
        close(it->first);
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // --- Requests -------------------------------------------------------------
  void Handle(Client& c, const std::string& line) {
    json req;
    try {
      req = json::parse(line);
    } catch (const std::exception&) {
      Send(c, ErrorReply("bad_request", "not a JSON object"));
      return;
    }
    try {
      if (!req.is_object() || !req.contains("op") || !req["op"].is_string()) {
        Send(c, ErrorReply("bad_request", "expected {\"v\": 1, \"op\": ...}"));
        return;
      }
      if (req.contains("v") && req["v"] != kProtocolVersion) {
        Send(c, ErrorReply("version", fmt::format("protocol version {} is not supported "
                                                  "(this daemon speaks {})",
                                                  req["v"].dump(), kProtocolVersion)));
        return;
      }
      const std::string op = req["op"].get<std::string>();
      if (op == "hello") {
        json r = OkReply();
        r["mode"] = o_.system_mode ? "system" : "personal";
        r["daemon_uid"] = geteuid();
        r["caller_uid"] = c.uid;
        r["caller_user"] = c.user;
        Send(c, r);
      } else if (op == "submit") {
        OpSubmit(c, req);
      } else if (op == "jobs") {
        OpJobs(c, req);
      } else if (op == "job") {
        OpJob(c, req);
      } else if (op == "queue") {
        OpQueue(c);
      } else if (op == "cancel" || op == "hold" || op == "release") {
        OpControl(c, req, op);
      } else if (op == "logs") {
        OpLogs(c, req);
      } else {
        Send(c, ErrorReply("bad_request", "unknown op \"" + SanitizeForTerminal(op) + "\""));
      }
    } catch (const std::exception& e) {
      // A request never takes the daemon down; the store is unchanged by a
      // failed op (each op writes last).
      Send(c, ErrorReply("bad_request", std::string("malformed request: ") + e.what()));
    }
  }

  std::optional<JobId> JobIdOf(Client& c, const json& req) {
    if (!req.contains("job") || !req["job"].is_number_integer() || req["job"].get<int64_t>() <= 0) {
      Send(c, ErrorReply("bad_request", "job: expected a job id"));
      return std::nullopt;
    }
    return req["job"].get<int64_t>();
  }

  // The job, if the caller may act on it (its owner or root).
  Job* OwnedJob(Client& c, JobId id, Job* storage) {
    auto it = active_.find(id);
    Job* job = nullptr;
    if (it != active_.end()) {
      job = &it->second;
    } else {
      auto got = store_->Get(id);
      if (got.ok() && *got) {
        *storage = std::move(**got);
        job = storage;
      }
    }
    if (job == nullptr) {
      Send(c, ErrorReply("not_found", fmt::format("no job {}", id)));
      return nullptr;
    }
    if (c.uid != 0 && c.uid != job->owner.uid) {
      Send(c, ErrorReply("forbidden", fmt::format("job {} belongs to {}; only its owner or root "
                                                  "can do that",
                                                  id, job->owner.user)));
      return nullptr;
    }
    return job;
  }

  void OpSubmit(Client& c, const json& req) {
    if (!req.contains("spec")) {
      Send(c, ErrorReply("bad_request", "spec: missing"));
      return;
    }
    auto spec = SpecFromJson(req["spec"]);
    if (!spec.ok()) {
      Send(c, ErrorReply(spec.error().code, spec.error().message));
      return;
    }
    if (spec->priority > 0 && c.uid != 0) {
      Send(c, ErrorReply("forbidden", "only root may submit with a priority above 0"));
      return;
    }
    Job job;
    job.owner = {c.uid, c.gid, c.user};
    job.spec = std::move(*spec);
    if (job.spec.name.empty()) {
      const std::string& a0 = job.spec.argv[0];
      job.spec.name = a0.substr(a0.rfind('/') == std::string::npos ? 0 : a0.rfind('/') + 1);
    }
    job.state = JobState::kQueued;
    job.submit_unix_ms = NowMs();
    auto id = store_->Insert(job);  // Durable (synchronous=FULL) before the reply.
    if (!id.ok()) {
      Send(c, ErrorReply("store", id.error().message));
      return;
    }
    job.id = *id;
    active_[job.id] = std::move(job);
    json r = OkReply();
    r["job"] = *id;
    Send(c, r);
    schedule_needed_ = true;
  }

  void OpJobs(Client& c, const json& req) {
    JobFilter filter;
    if (req.contains("limit") && req["limit"].is_number_unsigned()) {
      filter.limit = req["limit"].get<size_t>();
      filter.newest_first = true;
    }
    if (req.contains("mine") && req["mine"] == true) filter.uid = c.uid;
    auto jobs = store_->List(filter);
    if (!jobs.ok()) {
      Send(c, ErrorReply("store", jobs.error().message));
      return;
    }
    json list = json::array();
    for (const Job& j : *jobs) {
      auto live = active_.find(j.id);
      const Job& shown = live != active_.end() ? live->second : j;
      list.push_back(JobToJson(shown, /*with_private=*/false));
    }
    json r = OkReply();
    r["jobs"] = std::move(list);
    Send(c, r);
  }

  void OpJob(Client& c, const json& req) {
    auto id = JobIdOf(c, req);
    if (!id) return;
    Job storage;
    auto it = active_.find(*id);
    const Job* job = nullptr;
    if (it != active_.end()) {
      job = &it->second;
    } else {
      auto got = store_->Get(*id);
      if (got.ok() && *got) {
        storage = std::move(**got);
        job = &storage;
      }
    }
    if (job == nullptr) {
      Send(c, ErrorReply("not_found", fmt::format("no job {}", *id)));
      return;
    }
    json r = OkReply();
    r["job"] = JobToJson(*job, c.uid == 0 || c.uid == job->owner.uid);
    AddWaitInfo(r["job"], job->id);
    Send(c, r);
  }

  void AddWaitInfo(json& j, JobId id) {
    if (const WaitReason* w = FindWaiting(last_, id)) {
      j["wait_reason"] = {{"code", w->code}, {"message", ToValidUtf8(w->message)}};
      j["estimated_start_unix_ms"] =
          w->estimated_start_unix_ms ? json(*w->estimated_start_unix_ms) : json(nullptr);
    }
    auto pos = position_.find(id);
    if (pos != position_.end()) j["position"] = pos->second + 1;
  }

  void OpQueue(Client& c) {
    json list = json::array();
    std::vector<const Job*> shown;
    for (const auto& [id, job] : active_) shown.push_back(&job);
    // Running first, then waiting in scheduling order.
    auto rank = [this](JobId id) {
      auto it = position_.find(id);
      return it == position_.end() ? SIZE_MAX : it->second;
    };
    std::sort(shown.begin(), shown.end(), [&](const Job* a, const Job* b) {
      const bool ra = a->state == JobState::kRunning || a->state == JobState::kStarting;
      const bool rb = b->state == JobState::kRunning || b->state == JobState::kStarting;
      if (ra != rb) return ra;
      const size_t ka = rank(a->id);
      const size_t kb = rank(b->id);
      return ka != kb ? ka < kb : a->id < b->id;
    });
    for (const Job* job : shown) {
      json j = JobToJson(*job, /*with_private=*/false);
      AddWaitInfo(j, job->id);
      list.push_back(std::move(j));
    }
    json r = OkReply();
    r["jobs"] = std::move(list);
    r["now_unix_ms"] = NowMs();
    Send(c, r);
  }

  void OpControl(Client& c, const json& req, const std::string& op) {
    auto id = JobIdOf(c, req);
    if (!id) return;
    Job storage;
    Job* job = OwnedJob(c, *id, &storage);
    if (job == nullptr) return;
    const JobState before = job->state;
    if (op == "hold") {
      if (before != JobState::kQueued && before != JobState::kHeld) {
        Send(c, ErrorReply("state", fmt::format("job {} is {}: only a waiting job can be held", *id,
                                                JobStateName(before))));
        return;
      }
      job->state = JobState::kHeld;
    } else if (op == "release") {
      if (before != JobState::kHeld && before != JobState::kQueued) {
        Send(c, ErrorReply("state", fmt::format("job {} is {}: only a held job can be released",
                                                *id, JobStateName(before))));
        return;
      }
      job->state = JobState::kQueued;
    } else {  // cancel
      if (IsTerminal(before)) {
        Send(c, ErrorReply("state",
                           fmt::format("job {} already ended ({})", *id, JobStateName(before))));
        return;
      }
      if (before == JobState::kQueued || before == JobState::kHeld) {
        job->state = JobState::kCancelled;
        job->end_unix_ms = NowMs();
        job->end_reason = "cancelled";
        job->end_detail = fmt::format("cancelled by {} before it started", c.user);
      } else {
        StopJob(*job, "cancelled");
      }
    }
    if (Status s = store_->Update(*job); !s.ok()) {
      Send(c, ErrorReply("store", s.error().message));
      return;
    }
    // `job` may point into active_: read it before the erase.
    const JobState after = job->state;
    if (IsTerminal(after)) active_.erase(*id);
    json r = OkReply();
    r["job"] = *id;
    r["state"] = JobStateName(after);
    Send(c, r);
    schedule_needed_ = true;
  }

  void OpLogs(Client& c, const json& req) {
    auto id = JobIdOf(c, req);
    if (!id) return;
    Job storage;
    Job* job = OwnedJob(c, *id, &storage);
    if (job == nullptr) return;
    const std::string stream = req.value("stream", "stdout");
    if (stream != "stdout" && stream != "stderr") {
      Send(c, ErrorReply("bad_request", "stream: stdout or stderr"));
      return;
    }
    uint64_t offset = 0;
    if (req.contains("offset")) {
      if (!req["offset"].is_number_unsigned()) {
        Send(c, ErrorReply("bad_request", "offset: expected a non-negative integer"));
        return;
      }
      offset = req["offset"].get<uint64_t>();
    }
    const std::string path = stream == "stdout" ? job->stdout_path : job->stderr_path;
    std::string data;
    if (!path.empty()) {
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      if (fd >= 0) {
        data.resize(kLogChunk);
        const ssize_t n = pread(fd, data.data(), data.size(), static_cast<off_t>(offset));
        data.resize(n > 0 ? static_cast<size_t>(n) : 0);
        close(fd);
      }
    }
    json r = OkReply();
    r["data"] = Base64Encode(data);
    r["offset"] = offset + data.size();
    r["state"] = JobStateName(job->state);
    r["exit_code"] = job->exit_code ? json(*job->exit_code) : json(nullptr);
    r["exit_signal"] = job->exit_signal ? json(*job->exit_signal) : json(nullptr);
    Send(c, r);
  }

  // --- Jobs -----------------------------------------------------------------
  std::string DirOf(const Job& job) const {
    return queue::JobDir(o_.state_dir, job.id, job.requeues);
  }

  void StopJob(Job& job, const std::string& reason) {
    auto w = watched_.find(job.id);
    if (w != watched_.end()) w->second.stop_reason = reason;
    if (job.supervisor_pid && job.supervisor_start_ticks) {
      Status s = RequestStop(DirOf(job), *job.supervisor_pid, *job.supervisor_start_ticks, reason,
                             o_.grace_s);
      (void)s;  // Gone already: its exit is read when the pidfd fires.
    }
  }

  void Watch(Job& job, bool child) {
    if (!job.supervisor_pid) return;
    const int fd = PidfdOpen(*job.supervisor_pid);
    if (fd < 0) {
      OnSupervisorGone(job);
      return;
    }
    Watched w;
    w.pidfd = fd;
    w.child = child;
    watched_[job.id] = w;
  }

  void OnSupervisorExit(JobId id) {
    auto w = watched_.find(id);
    if (w == watched_.end()) return;
    if (w->second.child && active_.count(id) && active_[id].supervisor_pid) {
      waitpid(*active_[id].supervisor_pid, nullptr, WNOHANG);
    }
    const std::string reason = w->second.stop_reason;
    close(w->second.pidfd);
    watched_.erase(w);
    auto it = active_.find(id);
    if (it == active_.end()) return;
    Finish(it->second, reason);
  }

  void OnSupervisorGone(Job& job) { Finish(job, ""); }

  // The supervisor ended: read what it recorded. Its record says why the
  // job ended ("stopped:<reason>" for a stop this daemon asked for, even one
  // asked before a restart); `stop_reason` covers a supervisor that died
  // without a record.
  void Finish(Job& job, const std::string& stop_reason) {
    job_pids_stale_ = true;
    std::optional<ExitRecord> rec = ReadExitRecord(DirOf(job), nullptr);
    std::string why = stop_reason;
    if (rec && rec->reason.rfind("stopped:", 0) == 0) why = rec->reason.substr(8);
    if (why == "preempted") {
      // Back to the queue; the next run gets a directory of its own.
      job.state = JobState::kQueued;
      job.requeues++;
      job.start_unix_ms.reset();
      job.gpu_indices.clear();
      job.gpu_uuids.clear();
      job.supervisor_pid.reset();
      job.supervisor_start_ticks.reset();
      job.pid.reset();
      job.pid_start_ticks.reset();
      job.end_reason = "preempted";
      job.end_detail = "stopped for a higher-priority job; back in the queue";
      (void)store_->Update(job);
      schedule_needed_ = true;
      snapshots_.Request(/*full=*/false);
      return;
    }
    job.end_unix_ms = rec && rec->end_unix_ms > 0 ? rec->end_unix_ms : NowMs();
    if (rec) {
      job.exit_code = rec->exit_code;
      job.exit_signal = rec->signal;
      job.end_detail = rec->detail;
    }
    if (!rec) {
      // The supervisor died without a record: its leader got SIGKILL with it,
      // but workers may live on in its session and hold GPU memory.
      // Only the job owner's processes: a session id cannot say more.
      proc::ProcReader reader(o_.collect.proc_root);
      for (pid_t pid : JobProcesses()[job.id]) {
        auto p = reader.ReadProcess(pid, NowMs());
        if (p.ok() && p->uid == job.owner.uid) kill(pid, SIGKILL);
      }
      job.state = JobState::kLost;
      job.end_reason = "lost";
      job.end_detail = "its supervisor ended without recording the job's end";
    } else if (why == "cancelled") {
      job.state = JobState::kCancelled;
      job.end_reason = "cancelled";
    } else if (why == "vram_limit") {
      job.state = JobState::kFailed;
      job.end_reason = "vram_limit";
      job.end_detail = fmt::format("stopped: used more GPU memory than its --vram {} allows",
                                   FormatBytes(job.spec.vram_bytes));
    } else if (rec->reason == "time_limit") {
      job.state = JobState::kFailed;
      job.end_reason = "time_limit";
    } else if (rec->reason == "start_failed") {
      job.state = JobState::kFailed;
      job.end_reason = "start_failed";
    } else if (rec->reason == "exit" && rec->exit_code == 0) {
      job.state = JobState::kSucceeded;
      job.end_reason = "exit";
    } else {
      job.state = JobState::kFailed;
      job.end_reason = rec->signal ? "signal" : "exit";
    }
    (void)store_->Update(job);
    active_.erase(job.id);
    schedule_needed_ = true;
    snapshots_.Request(/*full=*/false);  // Its memory is free now: look at once.
  }

  void Recover() {
    auto jobs = store_->Active();
    if (!jobs.ok()) return;
    for (Job& job : *jobs) {
      const JobId id = job.id;
      active_[id] = std::move(job);
      Job& j = active_[id];
      if (j.state == JobState::kStarting) {
        auto claimed = ClaimUnlaunched(DirOf(j));
        if (claimed.ok() && *claimed) {
          // Its supervisor never started the job, and now never will; the
          // next run gets a directory of its own.
          j.state = JobState::kQueued;
          j.requeues++;
          j.gpu_indices.clear();
          j.gpu_uuids.clear();
          j.supervisor_pid.reset();
          j.supervisor_start_ticks.reset();
          (void)store_->Update(j);
          continue;
        }
        // A supervisor claimed the run: adopt it, even if this daemon died
        // before it stored the supervisor's PID.
        if (!j.supervisor_pid) {
          if (auto l = ReadLaunchRecord(DirOf(j), nullptr); l && l->by_supervisor) {
            j.supervisor_pid = l->pid;
            j.supervisor_start_ticks = l->start_ticks;
          }
        }
        j.state = JobState::kRunning;
      }
      if (j.state != JobState::kRunning) continue;
      if (!j.pid) {
        if (auto p = ReadPidRecord(DirOf(j), nullptr)) {
          j.pid = p->pid;
          j.pid_start_ticks = p->start_ticks;
        }
      }
      (void)store_->Update(j);
      if (j.supervisor_pid && j.supervisor_start_ticks &&
          SupervisorAlive(*j.supervisor_pid, *j.supervisor_start_ticks)) {
        Watch(j, /*child=*/false);
      } else {
        Finish(j, "");
      }
    }
    schedule_needed_ = true;
  }

  // --- Snapshots, guard, schedule ------------------------------------------
  int64_t PollInterval() const {
    for (const auto& [id, j] : active_) {
      if (j.state == JobState::kQueued) return o_.poll_waiting_ms;
    }
    return o_.poll_idle_ms;
  }

  // Every process of a job: its supervisor's session.
  std::map<JobId, std::vector<pid_t>> JobProcesses() {
    std::map<pid_t, JobId> by_session;
    for (const auto& [id, j] : active_) {
      if (j.supervisor_pid) by_session[*j.supervisor_pid] = id;
    }
    std::map<JobId, std::vector<pid_t>> out;
    if (by_session.empty()) return out;
    proc::ProcReader reader(o_.collect.proc_root);
    auto pids = reader.ListPids();
    if (!pids.ok()) return out;
    for (pid_t pid : *pids) {
      std::ifstream in(o_.collect.proc_root + "/" + std::to_string(pid) + "/stat");
      std::string text;
      std::getline(in, text);
      Result<proc::StatFields> stat = proc::ParseStat(text);
      if (!stat.ok()) continue;
      auto it = by_session.find(static_cast<pid_t>(stat->session));
      if (it != by_session.end() && pid != it->first) out[it->second].push_back(pid);
    }
    return out;
  }

  // The job's own PID, once its supervisor has recorded it.
  void LearnJobPids() {
    for (auto& [id, job] : active_) {
      if (job.state != JobState::kRunning || job.pid) continue;
      if (auto p = ReadPidRecord(DirOf(job), nullptr)) {
        job.pid = p->pid;
        job.pid_start_ticks = p->start_ticks;
        (void)store_->Update(job);
      }
    }
  }

  // A look at the GPUs. Light looks come every --poll-ms while jobs wait and
  // answer one question: did anything a placement reads change? Full looks
  // (once a second) also feed the diagnosis, find the queue's own processes
  // (a scan of every /proc entry) and run the VRAM guard.
  void OnSnapshot(Snapshot s, bool full) {
    LearnJobPids();
    const uint64_t fingerprint = DecisionFingerprint(s);
    if (full || fingerprint != fingerprint_) schedule_needed_ = true;
    fingerprint_ = fingerprint;
    if (full) {
      history_.push_back(s);
      if (history_.size() > kHistory) history_.erase(history_.begin());
      Judge();
    }
    latest_ = std::move(s);
    if (full || job_pids_stale_) {
      job_pids_ = JobProcesses();
      job_pids_stale_ = false;
      GuardVram();
    }
  }

  // What placement reads from a snapshot, hashed: free memory, utilisation,
  // reachability and the processes on each GPU. A collision can only delay a
  // pass to the next full look.
  static uint64_t DecisionFingerprint(const Snapshot& s) {
    uint64_t h = 1469598103934665603ULL;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
    for (const Gpu& g : s.gpus) {
      mix(g.index);
      mix(g.memory.free_bytes.value_or(~0ULL));
      mix(g.utilization_gpu_pct.value_or(~0U));
      mix(g.unreachable ? 1 : 0);
      for (const GpuProcess& p : g.processes) {
        mix(static_cast<uint64_t>(p.pid));
        mix(p.used_memory_bytes.value_or(~0ULL));
      }
    }
    return h;
  }

  // Idle holders and hardware problems, from the diagnosis of the recent
  // full looks.
  void Judge() {
    idle_pids_.clear();
    diagnose::DiagnoseOptions dopt;
    diagnose::Diagnosis d = diagnose::Diagnose(history_, dopt);
    for (const diagnose::Finding& f : d.findings) {
      if (f.code == "IDLE_HOLDER") idle_pids_.insert(f.pids.begin(), f.pids.end());
    }
    // What is unhealthy is diagnose's judgement, the same as `gpuwarden health`.
    unhealthy_ = diagnose::UnhealthyGpus(d.findings);
  }

  void GuardVram() {
    for (auto& [id, job] : active_) {
      if (job.state != JobState::kRunning) continue;
      const auto pids_it = job_pids_.find(id);
      if (pids_it == job_pids_.end()) continue;
      const std::set<pid_t> pids(pids_it->second.begin(), pids_it->second.end());
      uint64_t total = 0;
      uint64_t worst = 0;
      for (const Gpu& g : latest_->gpus) {
        uint64_t on_gpu = 0;
        for (const GpuProcess& p : g.processes) {
          if (pids.count(p.pid) && p.used_memory_bytes) on_gpu += *p.used_memory_bytes;
        }
        total += on_gpu;
        worst = std::max(worst, on_gpu);
      }
      if (total > job.peak_vram_bytes.value_or(0)) {
        job.peak_vram_bytes = total;
        (void)store_->Update(job);
      }
      if (job.spec.vram_bytes == 0 || worst <= job.spec.vram_bytes + o_.policy.margin_bytes)
        continue;
      auto wit = watched_.find(id);
      if (wit == watched_.end()) continue;
      Watched& w = wit->second;
      if (!w.warned_vram) {
        w.warned_vram = true;
        AppendToLog(job.stderr_path,
                    fmt::format("gpuwarden: job {} uses {} on one GPU, over its --vram {}{}\n", id,
                                FormatBytes(worst), FormatBytes(job.spec.vram_bytes),
                                o_.vram_guard_stop ? "; stopping it" : ""));
      }
      if (o_.vram_guard_stop && w.stop_reason.empty()) StopJob(job, "vram_limit");
    }
  }

  static void AppendToLog(const std::string& path, const std::string& text) {
    if (path.empty()) return;
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return;
    (void)!write(fd, text.data(), text.size());
    close(fd);
  }

  std::vector<GpuState> GpuStates() {
    std::set<pid_t> queue_pids;
    for (const auto& [id, pids] : job_pids_) queue_pids.insert(pids.begin(), pids.end());
    return GpuStatesOf(*latest_, unhealthy_, queue_pids, idle_pids_);
  }

  void Schedule() {
    schedule_needed_ = false;
    QueueView view;
    view.now_unix_ms = NowMs();
    view.minute_of_day = MinuteOfDay(view.now_unix_ms);
    view.config = o_.policy;
    view.gpus = GpuStates();
    view.topology = latest_->topology;
    std::set<JobId> deps;
    for (const auto& [id, j] : active_) {
      if (j.state == JobState::kQueued || j.state == JobState::kHeld) {
        view.waiting.push_back(&j);
        deps.insert(j.spec.after.begin(), j.spec.after.end());
      } else if (j.state == JobState::kRunning || j.state == JobState::kStarting) {
        RunningJob r;
        r.id = id;
        r.uid = j.owner.uid;
        r.user = j.owner.user;
        r.priority = j.spec.priority;
        r.preemptible = j.spec.preemptible;
        r.gpus = j.gpu_indices;
        r.vram_per_gpu = j.spec.vram_bytes;
        r.pids = job_pids_[id];
        r.start_unix_ms = j.start_unix_ms.value_or(view.now_unix_ms);
        r.time_limit_s = j.spec.time_limit_s;
        auto w = watched_.find(id);
        r.stopping = w != watched_.end() && !w->second.stop_reason.empty();
        view.running.push_back(std::move(r));
      }
    }
    for (JobId dep : deps) {
      auto it = active_.find(dep);
      if (it != active_.end()) {
        view.dependency_states[dep] = it->second.state;
      } else if (auto got = store_->Get(dep); got.ok() && *got) {
        view.dependency_states[dep] = (*got)->state;
      }
    }
    if (auto usage = store_->UsageGpuSeconds(view.now_unix_ms, o_.policy.fair_share_half_life_s);
        usage.ok()) {
      view.usage_gpu_s = std::move(*usage);
    }
    Decisions d = queue::Schedule(view);
    for (JobId id : d.dependency_failed) {
      auto it = active_.find(id);
      if (it == active_.end()) continue;
      it->second.state = JobState::kFailed;
      it->second.end_reason = "dependency";
      it->second.end_detail = "a job it runs after did not succeed";
      it->second.end_unix_ms = view.now_unix_ms;
      (void)store_->Update(it->second);
      active_.erase(it);
    }
    for (const PreemptDecision& p : d.preempt) {
      auto it = active_.find(p.victim);
      if (it == active_.end()) continue;
      auto w = watched_.find(p.victim);
      if (w != watched_.end() && !w->second.stop_reason.empty()) continue;
      StopJob(it->second, "preempted");
    }
    for (const StartDecision& s : d.start) StartJob(s);
    last_ = std::move(d);
    position_.clear();
    for (size_t i = 0; i < last_.order.size(); ++i) position_[last_.order[i]] = i;
  }

  void StartJob(const StartDecision& s) {
    auto it = active_.find(s.id);
    if (it == active_.end()) return;
    Job& job = it->second;
    job.gpu_indices = s.gpus;
    job.gpu_uuids.clear();
    uint64_t total = 0;
    for (unsigned g : s.gpus) {
      for (const Gpu& gpu : latest_->gpus) {
        if (gpu.index != g) continue;
        job.gpu_uuids.push_back(gpu.uuid.value_or(""));
        // The largest: a fraction of it stays within the budget on every GPU.
        total = std::max(total, gpu.memory.total_bytes.value_or(0));
      }
    }
    // The runner's default log paths, known before the launch so a daemon
    // that restarts mid-launch can still serve them.
    job.stdout_path = DirOf(job) + "/stdout";
    job.stderr_path = DirOf(job) + "/stderr";
    job.state = JobState::kStarting;
    job.start_unix_ms = NowMs();
    // Durable before the fork: a crash from here on is resolved by
    // ClaimUnlaunched on restart, so the job starts at most once.
    if (!store_->Update(job).ok()) return;
    LaunchOptions lo;
    lo.state_dir = o_.state_dir;
    lo.supervisor_path = o_.supervisor_path;
    lo.grace_s = o_.grace_s;
    lo.gpu_total_bytes = total;
    auto launched = Launch(job, lo);
    if (!launched.ok()) {
      job.state = JobState::kFailed;
      job.end_reason = "start_failed";
      job.end_detail = launched.error().message;
      job.end_unix_ms = NowMs();
      (void)store_->Update(job);
      active_.erase(it);
      return;
    }
    job.supervisor_pid = launched->supervisor_pid;
    job.supervisor_start_ticks = launched->supervisor_start_ticks;
    job.stdout_path = launched->stdout_path;
    job.stderr_path = launched->stderr_path;
    job.state = JobState::kRunning;
    (void)store_->Update(job);
    Watch(job, /*child=*/true);
    job_pids_stale_ = true;
  }

  void HandleSignals() {
    signalfd_siginfo si;
    while (read(signal_fd_, &si, sizeof si) == sizeof si) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) stop_ = true;
    }
    // Reap supervisors this daemon started; their pidfds report the exit.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  DaemonOptions o_;
  Snapshotter snapshots_;
  std::unique_ptr<Store> store_;
  int listen_fd_ = -1;
  int signal_fd_ = -1;
  int lock_fd_ = -1;
  bool stop_ = false;
  bool schedule_needed_ = false;
  int64_t next_poll_ms_ = 0;
  int64_t next_full_poll_ms_ = 0;  // Light looks in between (see Snapshotter).
  std::map<int, Client> clients_;
  std::map<JobId, Job> active_;
  std::map<JobId, Watched> watched_;
  std::optional<Snapshot> latest_;
  std::vector<Snapshot> history_;
  std::map<JobId, std::vector<pid_t>> job_pids_;
  bool job_pids_stale_ = false;  // A job started or ended since job_pids_ was read.
  uint64_t fingerprint_ = 0;     // DecisionFingerprint of latest_.
  std::set<pid_t> idle_pids_;    // From Judge().
  std::map<unsigned, std::string> unhealthy_;
  Decisions last_;
  std::unordered_map<JobId, size_t> position_;  // Queue position - 1, from last_.order.
};

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  auto d = std::make_unique<DaemonImpl>(std::move(options));
  if (Status s = d->Init(); !s.ok()) return s.error();
  return std::unique_ptr<Daemon>(std::move(d));
}

}  // namespace gw::queue
