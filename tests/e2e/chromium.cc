#include "e2e/chromium.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace gw::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

bool Chromium::Start(const std::string& dir, int width, int height) {
  int to[2];
  int from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
    why_ = "pipe failed";
    return false;
  }
  log_path_ = dir + "/chromium.log";
  const std::vector<std::string> argv = {
      kChromium, "--headless", "--no-sandbox",  // The tests run as root.
      "--disable-gpu", "--remote-debugging-pipe", "--user-data-dir=" + dir + "/profile",
      "--no-first-run", "--no-default-browser-check", "--disable-extensions",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
      // Nothing but 127.0.0.1 resolves: the page must need nothing from elsewhere.
      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
      "--window-size=" + std::to_string(width) + "," + std::to_string(height), "about:blank"};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) {
    why_ = "cannot write " + log_path_;
    return false;
  }
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    const int in = open("/dev/null", O_RDONLY);
    // Above 4 first (a pipe end may be 3 or 4 itself), then onto 3 and 4:
    // dup2 clears close-on-exec on the copies, so only they stay open.
    const int r = fcntl(to[0], F_DUPFD, 10);
    const int w = fcntl(from[1], F_DUPFD, 10);
    if (in < 0 || r < 0 || w < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 ||
        dup2(r, 3) < 0 || dup2(w, 4) < 0) {
      _exit(127);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  close(log);
  close(to[0]);
  close(from[1]);
  to_browser_ = to[1];
  from_browser_ = from[0];
  if (pid_ < 0) {
    why_ = "fork failed";
    return false;
  }
  setpgid(pid_, pid_);
  // The tab it opened: attach to it in flat mode (sessionId on each message).
  std::optional<json> targets = Call("Target.getTargets", json::object(), /*browser=*/true, 60);
  if (!targets) return false;
  std::string target;
  for (const json& t : (*targets)["targetInfos"]) {
    if (t.value("type", "") == "page") target = t.value("targetId", "");
  }
  if (target.empty()) {
    std::optional<json> made = Call("Target.createTarget", {{"url", "about:blank"}}, true);
    if (!made) return false;
    target = (*made)["targetId"].get<std::string>();
  }
  std::optional<json> attached =
      Call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}}, true);
  if (!attached) return false;
  session_ = (*attached)["sessionId"].get<std::string>();
  return Call("Page.enable", json::object()).has_value() &&
         Call("Runtime.enable", json::object()).has_value();
}

void Chromium::Stop() {
  if (pid_ <= 0) return;
  if (to_browser_ >= 0) Send({{"id", next_id_++}, {"method", "Browser.close"}});
  const auto start = Clock::now();
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (SecondsSince(start) > 5) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Helpers that outlived the browser (they share its group).
  kill(-pid_, SIGKILL);
  pid_ = -1;
  if (to_browser_ >= 0) close(to_browser_);
  if (from_browser_ >= 0) close(from_browser_);
  to_browser_ = from_browser_ = -1;
}

bool Chromium::Send(const json& message) {
  std::string text = message.dump();
  text.push_back('\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(to_browser_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why_ = "the browser's pipe is closed";
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

std::optional<json> Chromium::Receive(int id, double timeout_s) {
  const auto start = Clock::now();
  for (;;) {
    // Whole messages first; events and other replies are dropped.
    for (size_t end; (end = buffer_.find('\0')) != std::string::npos;) {
      json m = json::parse(buffer_.substr(0, end), nullptr, false);
      buffer_.erase(0, end + 1);
      if (m.is_object() && m.value("id", -1) == id) {
        if (m.contains("error")) {
          why_ = m["error"].dump();
          return std::nullopt;
        }
        return m.value("result", json::object());
      }
    }
    const double left = timeout_s - SecondsSince(start);
    if (left <= 0) {
      why_ = "no reply from the browser in " + std::to_string(timeout_s) + " s";
      return std::nullopt;
    }
    pollfd p{from_browser_, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char chunk[65536];
    const ssize_t got = read(from_browser_, chunk, sizeof chunk);
    if (got <= 0) {
      why_ = "the browser closed its pipe:\n" + Log();
      return std::nullopt;
    }
    buffer_.append(chunk, static_cast<size_t>(got));
  }
}

std::optional<json> Chromium::Call(const std::string& method, const json& params, bool browser,
                                   double timeout_s) {
  if (pid_ <= 0) {
    why_ = "the browser is not running";
    return std::nullopt;
  }
  const int id = next_id_++;
  json m = {{"id", id}, {"method", method}, {"params", params}};
  if (!browser) m["sessionId"] = session_;
  if (!Send(m)) return std::nullopt;
  return Receive(id, timeout_s);
}

std::optional<json> Chromium::Evaluate(const std::string& expression) {
  std::optional<json> r =
      Call("Runtime.evaluate",
           {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (!r) return std::nullopt;
  if (r->contains("exceptionDetails")) {
    why_ = (*r)["exceptionDetails"].dump();
    return std::nullopt;
  }
  return (*r)["result"].value("value", json());
}

bool Chromium::WaitUntil(const std::string& expression, double timeout_s) {
  const auto start = Clock::now();
  while (SecondsSince(start) < timeout_s) {
    std::optional<json> v = Evaluate(expression);
    if (v && v->is_boolean() && v->get<bool>()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string Chromium::Log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gw::test
