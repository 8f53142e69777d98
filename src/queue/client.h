// The one client of gpuwardend's socket (docs/protocol.md): connect, send a
// request line, read the reply line, each wait bounded. Used by the CLI's
// queue commands (cli/queue_command.cc) and watch's queue panel
// (watch/queue_view.cc).
#ifndef GPUWARDEN_QUEUE_CLIENT_H_
#define GPUWARDEN_QUEUE_CLIENT_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "os/unique_fd.h"

namespace gw::queue {

// Error codes of the client itself. A refusal by the daemon keeps the
// daemon's own code ("not_found", "forbidden", "state", "storage",
// "unsatisfiable", "bad_request", "busy", ...) and message.
inline constexpr const char* kClientNoDaemon = "no_daemon";  // Nothing accepts on the socket.
inline constexpr const char* kClientDisconnected = "disconnected";  // The connection broke.
inline constexpr const char* kClientNoReply = "no_reply";           // No reply within the timeout.
inline constexpr const char* kClientProtocol = "protocol";          // The reply is not a reply.

// True when `e` says the daemon could not be talked to (the codes above, and
// the daemon's own "busy": it refused the connection), not that it refused.
bool IsUnreachable(const Error& e);

class Client {
 public:
  // Connects to `socket_path`. `timeout_ms` bounds every later Call's wait
  // for its request to go out and its reply to come back; 0 = unbounded.
  // Errors: kClientNoDaemon, naming the path and what to do.
  static Result<Client> Connect(const std::string& socket_path, int64_t timeout_ms = 0);
  // Over a socket already connected (a test's socketpair).
  explicit Client(os::UniqueFd fd, int64_t timeout_ms = 0);

  // Sends `request` with "v" set to kProtocolVersion and returns the reply
  // when it is {"ok": true, ...}. A reply {"ok": false, "error": {code,
  // message}} is returned as that Error. Errors of its own: kClientDisconnected,
  // kClientNoReply, kClientProtocol. A daemon that refuses the connection
  // writes why and closes: that reply is read even when sending failed.
  Result<nlohmann::json> Call(nlohmann::json request);

 private:
  os::UniqueFd fd_;
  int64_t timeout_ms_ = 0;
  std::string buffer_;  // Bytes read past the last reply line.
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_CLIENT_H_
