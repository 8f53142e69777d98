// A headless Chromium (Debian's `chromium`) driven over the DevTools protocol
// on a pipe (--remote-debugging-pipe: JSON messages ended by NUL on file
// descriptors 3 and 4), so a test can read one page's live DOM at several
// moments without a WebSocket library. Started in a process group of its own
// (its renderer and helper processes with it) with a fresh profile, no
// network but what the page asks of 127.0.0.1, and stopped as a whole.
#ifndef GPUWARDEN_TESTS_E2E_CHROMIUM_H_
#define GPUWARDEN_TESTS_E2E_CHROMIUM_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gw::test {

inline constexpr char kChromium[] = "/usr/bin/chromium";

class Chromium {
 public:
  Chromium() = default;
  ~Chromium() { Stop(); }
  Chromium(const Chromium&) = delete;
  Chromium& operator=(const Chromium&) = delete;

  // Starts the browser (profile under `dir`, its output in dir/chromium.log)
  // and opens one tab on about:blank. False with why() set on failure.
  bool Start(const std::string& dir, int width, int height);
  // Closes the browser; kills its group if it does not go within 5 s.
  void Stop();

  // One DevTools command to the tab (`browser`: to the browser itself); its
  // "result", or nullopt with why() set (an error reply, no reply within
  // timeout_s, the browser gone).
  std::optional<nlohmann::json> Call(const std::string& method, const nlohmann::json& params,
                                     bool browser = false, double timeout_s = 20);
  // `expression` evaluated in the tab (promises awaited), its value as JSON;
  // nullopt when it threw (why() says what).
  std::optional<nlohmann::json> Evaluate(const std::string& expression);
  // Polls `expression` every 100 ms until it is true, for up to timeout_s.
  bool WaitUntil(const std::string& expression, double timeout_s);

  const std::string& why() const { return why_; }
  std::string Log() const;

 private:
  bool Send(const nlohmann::json& message);
  std::optional<nlohmann::json> Receive(int id, double timeout_s);

  pid_t pid_ = -1;
  int to_browser_ = -1;    // Its fd 3.
  int from_browser_ = -1;  // Its fd 4.
  std::string buffer_;     // Bytes read past the last whole message.
  std::string session_;    // The tab's flat session.
  std::string log_path_;
  std::string why_;
  int next_id_ = 1;
};

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_CHROMIUM_H_
