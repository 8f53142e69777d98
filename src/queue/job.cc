#include "queue/job.h"

#include <fmt/format.h>

namespace gw::queue {
namespace {

std::optional<int> ParseClock(std::string_view t) {
  // "H:MM" or "HH:MM", 00:00..24:00.
  const size_t colon = t.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 2 || t.size() - colon != 3) {
    return std::nullopt;
  }
  int h = 0;
  for (char c : t.substr(0, colon)) {
    if (c < '0' || c > '9') return std::nullopt;
    h = h * 10 + (c - '0');
  }
  int m = 0;
  for (char c : t.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    m = m * 10 + (c - '0');
  }
  if (m > 59 || h > 24 || (h == 24 && m != 0)) return std::nullopt;
  return h * 60 + m;
}

}  // namespace

bool TimeWindow::Contains(int minute) const {
  if (start_min == end_min) return true;
  if (start_min < end_min) return minute >= start_min && minute < end_min;
  return minute >= start_min || minute < end_min;
}

Result<TimeWindow> ParseTimeWindow(std::string_view text) {
  const size_t dash = text.find('-');
  std::optional<int> start, end;
  if (dash != std::string_view::npos) {
    start = ParseClock(text.substr(0, dash));
    end = ParseClock(text.substr(dash + 1));
  }
  if (!start || !end) {
    return MakeError("bad_input",
                     fmt::format("\"{}\" is not a daily window such as 22:00-07:00", text));
  }
  return TimeWindow{*start % 1440, *end % 1440};
}

std::string FormatTimeWindow(const TimeWindow& w) {
  return fmt::format("{:02}:{:02}-{:02}:{:02}", w.start_min / 60, w.start_min % 60, w.end_min / 60,
                     w.end_min % 60);
}

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kHeld:
      return "held";
    case JobState::kStarting:
      return "starting";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kLost:
      return "lost";
  }
  return "lost";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (JobState s :
       {JobState::kQueued, JobState::kHeld, JobState::kStarting, JobState::kRunning,
        JobState::kSucceeded, JobState::kFailed, JobState::kCancelled, JobState::kLost}) {
    if (JobStateName(s) == name) return s;
  }
  return std::nullopt;
}

bool IsTerminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled || state == JobState::kLost;
}

}  // namespace gw::queue
