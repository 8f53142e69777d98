#include "queue/client.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <string_view>

#include "queue/protocol.h"

namespace gw::queue {

using nlohmann::json;

bool IsUnreachable(const Error& e) {
  for (std::string_view code :
       {kClientNoDaemon, kClientDisconnected, kClientNoReply, kClientProtocol, "busy"}) {
    if (e.code == code) return true;
  }
  return false;
}

Result<Client> Client::Connect(const std::string& socket_path, int64_t timeout_ms) {
  auto fd = ConnectToDaemon(socket_path);
  if (!fd.ok()) return MakeError(kClientNoDaemon, fd.error().message);
  return Client(os::UniqueFd(*fd), timeout_ms);
}

Client::Client(os::UniqueFd fd, int64_t timeout_ms) : fd_(std::move(fd)), timeout_ms_(timeout_ms) {
  if (timeout_ms_ > 0) {
    // Sending: a request is small and the daemon reads it at once; only a
    // stuck daemon with a full socket buffer makes send() block.
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout_ms_ / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout_ms_ % 1000) * 1000);
    setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
}

Result<json> Client::Call(json request) {
  request["v"] = kProtocolVersion;
  const Status sent =
      WriteLine(fd_.get(), request.dump(-1, ' ', false, json::error_handler_t::replace));
  auto line = ReadLine(fd_.get(), buffer_, kMaxReplyBytes, timeout_ms_ > 0 ? timeout_ms_ : -1);
  if (!line.ok()) {
    if (line.error().code == "timeout") {
      return MakeError(kClientNoReply,
                       "gpuwardend did not answer within " + std::to_string(timeout_ms_) + " ms");
    }
    if (line.error().code == "too_long") {
      return MakeError(kClientProtocol, "gpuwardend's reply is too long: " + line.error().message);
    }
    const std::string why = sent.ok() ? line.error().message : sent.error().message;
    return MakeError(kClientDisconnected, "lost the connection to gpuwardend: " + why);
  }
  json reply = json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) {
    return MakeError(kClientProtocol, "gpuwardend sent something that is not JSON");
  }
  auto ok = reply.is_object() ? reply.find("ok") : reply.end();
  if (!reply.is_object() || ok == reply.end() || !ok->is_boolean()) {
    return MakeError(kClientProtocol, "gpuwardend sent a reply without \"ok\"");
  }
  if (*ok != true) {
    auto e = reply.find("error");
    std::string code = "refused";
    std::string message = "gpuwardend refused the request";
    if (e != reply.end() && e->is_object()) {
      auto c = e->find("code");
      auto m = e->find("message");
      if (c != e->end() && c->is_string() && !c->get<std::string>().empty())
        code = c->get<std::string>();
      if (m != e->end() && m->is_string() && !m->get<std::string>().empty())
        message = m->get<std::string>();
    }
    return MakeError(std::move(code), std::move(message));
  }
  return reply;
}

}  // namespace gw::queue
