// The gpuwardend socket protocol, version 1 (docs/protocol.md): one JSON
// object per line over a Unix stream socket, at most kMaxMessageBytes each.
//
//   request:  {"v": 1, "op": "submit", ...}
//   reply:    {"v": 1, "ok": true, ...}  or  {"v": 1, "ok": false,
//             "error": {"code": "...", "message": "..."}}
//   stream:   ops that follow a job ("wait") send {"event": ...} lines and
//             end with one reply line.
//
// The caller's identity is the socket's SO_PEERCRED, never a field of the
// request. Bytes that may not be UTF-8 (argv, environment, log data) travel
// as a JSON string when they are valid UTF-8 and as {"base64": "..."}
// otherwise (log chunks: always base64).
#ifndef GPUWARDEN_QUEUE_PROTOCOL_H_
#define GPUWARDEN_QUEUE_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "queue/job.h"

namespace gw::queue {

inline constexpr int kProtocolVersion = 1;
// A request is at most 1 MiB. A reply may be longer (the list of a long
// queue), up to kMaxReplyBytes; the daemon answers `too_long` rather than
// send more.
inline constexpr size_t kMaxMessageBytes = 1 << 20;
inline constexpr size_t kMaxReplyBytes = 64 << 20;

// Binary-safe bytes <-> JSON.
nlohmann::json BytesToJson(std::string_view bytes);
Result<std::string> BytesFromJson(const nlohmann::json& value, std::string_view field);
std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

// A submit's spec. ToJson never throws for valid UTF-8 or not; FromJson
// checks every field's type and range and names the bad field (code
// "bad_request").
nlohmann::json SpecToJson(const JobSpec& spec);
Result<JobSpec> SpecFromJson(const nlohmann::json& j);

// A job for replies. `with_private` adds the environment, the working
// directory and the umask: only in the `job` reply, and only for its owner and
// root (list replies stay small: an environment is often kilobytes).
nlohmann::json JobToJson(const Job& job, bool with_private);

// Replies.
nlohmann::json OkReply();
nlohmann::json ErrorReply(std::string_view code, std::string_view message);

// Reads one line (without the newline) from `fd`, buffering in `buffer`
// across calls. Errors: "closed" (EOF before a full line), "too_long" (no
// newline within `max_bytes`), "timeout" (no full line within `timeout_ms`;
// negative = wait as long as it takes), "io" (a read error). For clients,
// which read replies (queue/client.h).
Result<std::string> ReadLine(int fd, std::string& buffer, size_t max_bytes = kMaxReplyBytes,
                             int64_t timeout_ms = -1);
// Writes `line` + '\n' entirely (retries on EINTR and short writes;
// MSG_NOSIGNAL so a vanished peer is an error, not SIGPIPE).
Status WriteLine(int fd, std::string_view line);

// Client: connects to the daemon's socket. Errors: "no_daemon" with the path
// and what to do.
Result<int> ConnectToDaemon(const std::string& socket_path);

// Where clients look for the daemon: --socket, else $GPUWARDEN_SOCKET, else
// the system socket when it exists, else the caller's personal socket.
std::string SystemSocketPath();    // /run/gpuwarden/gpuwardend.sock
std::string PersonalSocketPath();  // $XDG_RUNTIME_DIR/gpuwarden/gpuwardend.sock, else
                                   // /tmp/gpuwarden-<uid>/gpuwardend.sock
std::string ResolveSocketPath(const std::string& flag);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_PROTOCOL_H_
