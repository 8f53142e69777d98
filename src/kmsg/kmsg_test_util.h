// Test helpers for src/kmsg: a UTC time zone for local-time stamps, and
// shortcuts to parse log text.
#ifndef GPUWARDEN_KMSG_KMSG_TEST_UTIL_H_
#define GPUWARDEN_KMSG_KMSG_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "kmsg/kernel_event.h"
#include "kmsg/nvrm_parser.h"

namespace gw::kmsg::testing {

// dmesg -T and syslog stamps are local time: the tests run in UTC.
class UtcEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

inline ::testing::Environment* const kUtcEnvironment =
    ::testing::AddGlobalTestEnvironment(new UtcEnvironment);

// 2025-06-01T00:00:00Z: "now" for syslog year inference.
inline constexpr int64_t kReferenceMs = 1748736000000;

inline std::vector<KernelEvent> Parse(std::string_view text, ParseOptions options = {}) {
  if (options.reference_unix_ms == 0) options.reference_unix_ms = kReferenceMs;
  return ParseKernelLog(text, options);
}

// Events of one kind.
inline std::vector<KernelEvent> OfKind(const std::vector<KernelEvent>& events,
                                       std::string_view kind) {
  std::vector<KernelEvent> out;
  for (const auto& e : events) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

}  // namespace gw::kmsg::testing

#endif  // GPUWARDEN_KMSG_KMSG_TEST_UTIL_H_
