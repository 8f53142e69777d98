// SocketServer: the daemon's Unix socket and its clients. Framing (one JSON
// line per request and reply, protocol.h), backpressure (a client's next
// request is read only once its last reply is sent, so a client holds at
// most one reply in the daemon's memory), limits and timeouts (no user may
// take every connection slot; a request must arrive whole within
// kPartialRequestTimeoutMs of its first byte; a client that stops reading
// its reply is dropped after kStalledReaderTimeoutMs). Each complete request
// goes to the Handler with the caller's SO_PEERCRED identity.
//
// The loop owns the poll: it asks for the descriptors to watch
// (AppendPollFds) and hands back what poll reported, in the same order.
// Not thread-safe.
//
// Large replies (a 7-day "history" is ~24 MB of JSON): a handler may give
// its reply as text already written, in pieces (RawReply), rather than as a
// document of thousands of items; the pieces are sent one after the other,
// each freed once sent, and after a reply of kLargeReplyBytes or more the
// freed memory is returned to the kernel (ReturnFreedMemory), so that the
// daemon comes back to its size at rest.
#ifndef GPUWARDEN_QUEUE_SOCKET_SERVER_H_
#define GPUWARDEN_QUEUE_SOCKET_SERVER_H_

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "os/unique_fd.h"
#include "proc/users.h"
#include "queue/ops.h"

namespace gw::queue {

// A reply written as JSON text already, in pieces (of about a MiB each, for
// a reply of many MiB): the server sends the pieces as the reply's line, one
// after the other, and frees each once it is sent. Together the pieces must be
// one JSON object in valid UTF-8, with no newline.
nlohmann::json RawReply(std::vector<std::string> pieces);
// `reply` as the server sends it (one line, without its newline), appended
// to `out`: a RawReply's pieces, or the document dumped with invalid UTF-8
// replaced. For tests and benchmarks.
void AppendReplyText(std::string& out, const nlohmann::json& reply);
// Gives the memory malloc holds free back to the kernel (malloc_trim): after
// a large reply or query, since gpuwardend raises glibc's trim threshold
// (gpuwardend_main.cc) and freed memory would otherwise stay resident.
void ReturnFreedMemory();

class SocketServer {
 public:
  static constexpr size_t kMaxClients = 1024;
  static constexpr size_t kMaxClientsPerUser = 64;  // Root is not counted against it.
  static constexpr int64_t kPartialRequestTimeoutMs = 10'000;
  static constexpr int64_t kStalledReaderTimeoutMs = 30'000;
  // A reply at least this large frees its buffer once sent, and the freed
  // memory goes back to the kernel.
  static constexpr size_t kLargeReplyBytes = 1 << 20;

  using Handler = std::function<nlohmann::json(const Caller&, std::string_view line)>;

  // Binds and listens on `path` (its directory made when missing: 0755 in
  // system mode, else 0700; the socket 0666 / 0600). A stale socket file is
  // replaced; a live daemon answering on it is an error ("busy"). A personal
  // daemon (not system_mode) answers only its own user and root.
  // Errors: "busy", "io" naming the path.
  static Result<std::unique_ptr<SocketServer>> Listen(const std::string& path, bool system_mode,
                                                      const Clock& clock, Handler handler);
  ~SocketServer();  // Closes every connection and removes the socket file.

  // Appends the descriptors to poll; returns how many.
  size_t AppendPollFds(std::vector<pollfd>& fds);
  // What poll said about the `count` descriptors appended last.
  void OnPoll(const pollfd* fds, size_t count);

 private:
  struct Client {
    os::UniqueFd fd;
    Caller caller;
    std::string in;
    std::deque<std::string> out;  // The reply being sent, in pieces; empty: none.
    size_t out_sent = 0;          // Bytes of out.front() sent already.
    bool out_large = false;       // That reply is kLargeReplyBytes or more.
    bool closing = false;
    int64_t in_since_ms = 0;   // Monotonic: when `in` got its first unanswered byte.
    int64_t out_since_ms = 0;  // Monotonic: when the reply in `out` last made progress.
  };

  SocketServer(std::string path, bool system_mode, const Clock& clock, Handler handler)
      : path_(std::move(path)),
        system_mode_(system_mode),
        clock_(clock),
        handler_(std::move(handler)) {}
  Status Bind();
  void Accept();
  std::optional<std::string> Full(uid_t uid) const;
  void ExpireClients();
  void ReadClient(Client& c);
  void HandleRequests(Client& c);
  void Send(Client& c, nlohmann::json&& reply);
  void FlushClient(Client& c);
  // The reply sent (or given up): frees what is left of it, and returns the
  // memory of a large one to the kernel.
  void ReleaseOut(Client& c);
  void DropClosedClients();

  std::string path_;
  bool system_mode_;
  const Clock& clock_;
  Handler handler_;
  proc::UserNameCache user_names_;  // Each request names its caller.
  os::UniqueFd listen_fd_;
  std::map<int, Client> clients_;
  std::vector<int> polled_;  // Client fds in the order AppendPollFds gave them.
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_SOCKET_SERVER_H_
