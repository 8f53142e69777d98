#include "queue/daemon_log.h"

#include <unistd.h>

#include <fmt/format.h>

#include "core/text.h"
#include "os/file_io.h"

namespace gw::queue {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kNotice:
      return "notice";
    case LogLevel::kInfo:
      return "info";
  }
  return "info";
}

DaemonLog::DaemonLog(const Clock& clock)
    : DaemonLog(clock, [](std::string_view line) { (void)os::WriteAll(STDERR_FILENO, line); }) {}

void DaemonLog::Write(LogLevel level, std::string_view text) {
  sink_(fmt::format("gpuwardend: {}: {}\n", LogLevelName(level), text));
}

void DaemonLog::Log(LogLevel level, std::string_view raw) {
  Flush();
  std::string text = SanitizeForTerminal(raw);
  const int64_t now = clock_.MonotonicMs();
  auto [it, fresh] = seen_.try_emplace({level, text}, Seen{now, 0});
  if (!fresh) {
    ++it->second.held_back;
    return;
  }
  Write(level, text);
}

void DaemonLog::Flush() {
  const int64_t now = clock_.MonotonicMs();
  for (auto it = seen_.begin(); it != seen_.end();) {
    Seen& s = it->second;
    if (now - s.window_start_ms < kRepeatWindowMs) {
      ++it;
      continue;
    }
    if (s.held_back > 0) {
      Write(it->first.first, fmt::format("{} (repeated {} times in the last {} s)",
                                         it->first.second, s.held_back, kRepeatWindowMs / 1000));
      // Still repeating: a new window starts now, so the line comes once a
      // minute at most for as long as it repeats.
      s = Seen{now, 0};
      ++it;
    } else {
      it = seen_.erase(it);  // Quiet for a whole window: the next one prints at once.
    }
  }
}

}  // namespace gw::queue
