// DaemonLog: gpuwardend's own log, one line per event on stderr (journald
// takes it from there):
//   gpuwardend: <level>: <text>
// with level error, warning, notice or info. Text from other processes
// (simulator and driver messages, job names) is sanitised first, so a line
// is always one line.
//
// Repeats are rate-limited: the first line with a given level and text is
// written at once; the same line again within kRepeatWindowMs is only
// counted, and once the window has passed (at the next Log or Flush) one
// line "<text> (repeated N times in the last 60 s)" says how many were held
// back. A simulator error repeated 13 times a second becomes one line a
// minute.
//
// Not thread-safe: the event loop's thread only.
#ifndef GPUWARDEN_QUEUE_DAEMON_LOG_H_
#define GPUWARDEN_QUEUE_DAEMON_LOG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "core/clock.h"

namespace gw::queue {

enum class LogLevel { kError, kWarning, kNotice, kInfo };

std::string_view LogLevelName(LogLevel level);  // "error", ...

class DaemonLog {
 public:
  static constexpr int64_t kRepeatWindowMs = 60'000;

  // Where finished lines go (each with its '\n').
  using Sink = std::function<void(std::string_view line)>;

  // `clock` must outlive the log.
  DaemonLog(const Clock& clock, Sink sink) : clock_(clock), sink_(std::move(sink)) {}
  // A log on stderr.
  explicit DaemonLog(const Clock& clock);

  void Log(LogLevel level, std::string_view text);
  void Error(std::string_view text) { Log(LogLevel::kError, text); }
  void Warning(std::string_view text) { Log(LogLevel::kWarning, text); }
  void Notice(std::string_view text) { Log(LogLevel::kNotice, text); }
  void Info(std::string_view text) { Log(LogLevel::kInfo, text); }

  // Writes the repeat counts of windows that have ended.
  void Flush();

 private:
  struct Seen {
    int64_t window_start_ms = 0;
    int held_back = 0;
  };
  void Write(LogLevel level, std::string_view text);

  const Clock& clock_;
  Sink sink_;
  std::map<std::pair<LogLevel, std::string>, Seen> seen_;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_DAEMON_LOG_H_
