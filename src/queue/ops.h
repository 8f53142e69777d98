// The request handlers: one JSON request line from a caller in, one reply
// out (protocol.h). They parse and check the request, ask the JobTable and
// shape the reply; they hold no state of their own and never touch the
// socket, so they can be called by a test as by the server.
//
// The caller's identity is the socket's SO_PEERCRED (SocketServer), never a
// field of the request. A request never takes the daemon down: a handler that
// meets a malformed request answers "bad_request".
#ifndef GPUWARDEN_QUEUE_OPS_H_
#define GPUWARDEN_QUEUE_OPS_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "queue/job_table.h"

namespace gw::queue {

// Who sent a request.
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::string user;
};

struct OpsOptions {
  bool system_mode = false;  // Reported by "hello".
  uid_t daemon_uid = 0;
};

class RequestHandler {
 public:
  // `table` and `clock` must outlive the handler. Without a table (a daemon
  // run without its queue) the queue's ops answer "no_queue".
  RequestHandler(JobTable* table, const Clock& clock, OpsOptions options)
      : table_(table), clock_(clock), o_(options) {}

  // The reply to one request line (without its newline).
  nlohmann::json Handle(const Caller& caller, std::string_view line);

  // An op served by another part of the daemon (history, usage): called
  // with the parsed request, on the loop's thread; must not throw.
  using Op = std::function<nlohmann::json(const Caller&, const nlohmann::json&)>;
  void AddOp(std::string name, Op op) { extra_[std::move(name)] = std::move(op); }

 private:
  nlohmann::json Dispatch(const Caller& c, const nlohmann::json& req);
  nlohmann::json Submit(const Caller& c, const nlohmann::json& req);
  nlohmann::json Jobs(const Caller& c, const nlohmann::json& req);
  nlohmann::json OneJob(const Caller& c, const nlohmann::json& req);
  nlohmann::json Queue();
  nlohmann::json Control(const Caller& c, const nlohmann::json& req, const std::string& op);
  nlohmann::json Logs(const Caller& c, const nlohmann::json& req);
  void AddWaitInfo(nlohmann::json& j, JobId id) const;

  JobTable* table_;
  const Clock& clock_;
  OpsOptions o_;
  std::map<std::string, Op> extra_;
};

// The "degraded" array of the "queue" reply: [{"what", "detail",
// "since_unix_ms"}], empty when all is well.
nlohmann::json DegradedToJson(const std::vector<Degraded>& degraded);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_OPS_H_
