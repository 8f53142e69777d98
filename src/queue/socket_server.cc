#include "queue/socket_server.h"

#include <malloc.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/units.h"
#include "os/errno_text.h"
#include "proc/users.h"
#include "queue/protocol.h"

namespace gw::queue {

using nlohmann::json;

namespace {

// The member that marks a RawReply: no op's reply has a key like it.
constexpr const char* kRawReplyKey = "\x01gpuwarden raw reply";

bool IsRawReply(const json& reply) {
  if (!reply.is_object() || reply.size() != 1) return false;
  auto it = reply.find(kRawReplyKey);
  return it != reply.end() && it->is_array();
}

std::string Dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

json RawReply(std::vector<std::string> pieces) {
  json list = json::array();
  for (std::string& p : pieces) list.push_back(json(std::move(p)));
  json r = json::object();
  r[kRawReplyKey] = std::move(list);
  return r;
}

void AppendReplyText(std::string& out, const json& reply) {
  if (!IsRawReply(reply)) {
    out += Dump(reply);
    return;
  }
  for (const json& piece : reply[kRawReplyKey]) {
    if (piece.is_string()) out += piece.get_ref<const std::string&>();
  }
}

void ReturnFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

Result<std::unique_ptr<SocketServer>> SocketServer::Listen(const std::string& path,
                                                           bool system_mode, const Clock& clock,
                                                           Handler handler) {
  std::unique_ptr<SocketServer> s(new SocketServer(path, system_mode, clock, std::move(handler)));
  if (Status st = s->Bind(); !st.ok()) {
    s->path_.clear();  // Not ours: the destructor must not remove it.
    return st.error();
  }
  return s;
}

SocketServer::~SocketServer() {
  clients_.clear();
  if (listen_fd_.valid() && !path_.empty()) unlink(path_.c_str());
}

Status SocketServer::Bind() {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return MakeError("io", "socket directory " + dir.string() + ": " + ec.message());
    chmod(dir.c_str(), system_mode_ ? 0755 : 0700);
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) {
    return MakeError("io", "socket path too long: " + path_);
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  // A live daemon answers; a stale socket file from a crash does not.
  Result<int> probe = ConnectToDaemon(path_);
  if (probe.ok()) {
    close(*probe);
    return MakeError("busy", "a gpuwardend already listens on " + path_);
  }
  unlink(path_.c_str());
  listen_fd_.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd_.valid()) return MakeError("io", "socket: " + os::ErrnoText(errno));
  const mode_t old = umask(system_mode_ ? 0111 : 0177);
  const int rc = bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old);
  if (rc != 0) {
    const int err = errno;
    listen_fd_.Reset();
    return MakeError("io", "bind " + path_ + ": " + os::ErrnoText(err));
  }
  if (listen(listen_fd_.get(), 128) != 0) {
    return MakeError("io", "listen " + path_ + ": " + os::ErrnoText(errno));
  }
  return Status::Ok();
}

size_t SocketServer::AppendPollFds(std::vector<pollfd>& fds) {
  const size_t before = fds.size();
  fds.push_back({listen_fd_.get(), POLLIN, 0});
  polled_.clear();
  for (const auto& [fd, c] : clients_) {
    // Backpressure: a client with a reply still to send is not read.
    fds.push_back({fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
    polled_.push_back(fd);
  }
  return fds.size() - before;
}

void SocketServer::OnPoll(const pollfd* fds, size_t count) {
  for (size_t i = 1; i < count && i - 1 < polled_.size(); ++i) {
    const short re = fds[i].revents;
    auto it = clients_.find(polled_[i - 1]);
    if (it == clients_.end()) continue;
    if (re & POLLOUT) {
      FlushClient(it->second);
      HandleRequests(it->second);
    }
    if (re & (POLLIN | POLLHUP | POLLERR)) ReadClient(it->second);
  }
  if (count > 0 && (fds[0].revents & POLLIN)) Accept();
  ExpireClients();
  DropClosedClients();
}

void SocketServer::Accept() {
  for (;;) {
    os::UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) continue;
    if (std::optional<std::string> full = Full(cred.uid)) {
      // Told, not just dropped: the client can say why. The socket's buffer
      // is empty, so this short write does not block.
      const std::string reply = ErrorReply("busy", *full).dump() + "\n";
      (void)!send(fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      continue;
    }
    Client c;
    c.caller = {cred.uid, cred.gid, cred.pid,
                user_names_.NameOrUid(cred.uid, clock_.MonotonicMs())};
    if (!system_mode_ && cred.uid != geteuid() && cred.uid != 0) {
      // A personal daemon serves its own user only.
      c.out.push_back(ErrorReply("forbidden", "this gpuwardend serves " +
                                                  proc::UserNameOrUid(geteuid()) +
                                                  " only (a personal daemon)")
                          .dump() +
                      "\n");
      c.closing = true;
    }
    const int raw = fd.get();
    c.fd = std::move(fd);
    Client& added = clients_.emplace(raw, std::move(c)).first->second;
    // A client sends its request right after connecting: it is usually
    // here already, and answering now saves a trip through poll (a wake-up
    // of this thread) on every short-lived client, such as a submit from a
    // shell. Nothing there yet: poll reports it as for any client.
    if (!added.closing) ReadClient(added);
  }
}

std::optional<std::string> SocketServer::Full(uid_t uid) const {
  if (clients_.size() >= kMaxClients) {
    return fmt::format("gpuwardend is busy: {} connections open; try again", clients_.size());
  }
  if (uid == 0) return std::nullopt;
  size_t mine = 0;
  for (const auto& [fd, c] : clients_) mine += c.caller.uid == uid ? 1 : 0;
  if (mine < kMaxClientsPerUser) return std::nullopt;
  return fmt::format(
      "gpuwardend is busy: {} already has {} connections open (the most one user "
      "may); close some and try again",
      proc::UserNameOrUid(uid), mine);
}

// Drops a client whose request has been incomplete, or whose reply has not
// moved, for too long: a slot held by a silent client is a slot nobody else
// can use.
void SocketServer::ExpireClients() {
  const int64_t now = clock_.MonotonicMs();
  for (auto& [fd, c] : clients_) {
    if (c.closing) continue;
    if (!c.out.empty() && now - c.out_since_ms > kStalledReaderTimeoutMs) {
      ReleaseOut(c);
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
void SocketServer::ReadClient(Client& c) {
  char buf[65536];
  while (!c.closing && c.in.size() <= kMaxMessageBytes) {
    const ssize_t n = read(c.fd.get(), buf, sizeof buf);
    if (n > 0) {
      if (c.in.empty()) c.in_since_ms = clock_.MonotonicMs();
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

// Answers buffered requests one at a time: the next only once the last reply
// is sent. A request without its newline within 1 MiB is refused.
void SocketServer::HandleRequests(Client& c) {
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
    c.in_since_ms = clock_.MonotonicMs();
    Send(c, handler_(c.caller, line));
    FlushClient(c);
  }
}

void SocketServer::Send(Client& c, json&& reply) {
  std::vector<std::string> pieces;
  size_t size = 0;
  if (IsRawReply(reply)) {
    for (json& piece : reply[kRawReplyKey]) {
      if (!piece.is_string() || piece.get_ref<const std::string&>().empty()) continue;
      pieces.push_back(std::move(piece.get_ref<std::string&>()));
      size += pieces.back().size();
    }
  } else {
    pieces.push_back(Dump(reply));
    size = pieces.back().size();
  }
  reply = nullptr;  // What is left of a large document, freed now.
  if (size >= kMaxReplyBytes) {
    pieces.assign(1, Dump(ErrorReply(
                         "too_long",
                         fmt::format("the reply would be {}, over the protocol's {}; ask for fewer "
                                     "jobs (\"limit\")",
                                     FormatBytes(size), FormatBytes(kMaxReplyBytes)))));
  }
  if (pieces.empty()) pieces.emplace_back();
  pieces.back() += '\n';
  if (c.out.empty()) {
    c.out_since_ms = clock_.MonotonicMs();
    c.out_sent = 0;
  }
  c.out_large = c.out_large || size >= kLargeReplyBytes;
  for (std::string& p : pieces) c.out.push_back(std::move(p));
}

void SocketServer::FlushClient(Client& c) {
  while (!c.out.empty()) {
    const std::string& piece = c.out.front();
    const ssize_t n =
        send(c.fd.get(), piece.data() + c.out_sent, piece.size() - c.out_sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
      c.out_since_ms = clock_.MonotonicMs();
      if (c.out_sent == piece.size()) {
        c.out.pop_front();  // Sent: freed now, not when the whole reply is.
        c.out_sent = 0;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    c.closing = true;
    break;
  }
  ReleaseOut(c);
}

void SocketServer::ReleaseOut(Client& c) {
  c.out.clear();
  c.out_sent = 0;
  if (c.out_large) {
    c.out_large = false;
    ReturnFreedMemory();
  }
}

void SocketServer::DropClosedClients() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->second.closing) FlushClient(it->second);
    if (it->second.closing) {
      ReleaseOut(it->second);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace gw::queue
