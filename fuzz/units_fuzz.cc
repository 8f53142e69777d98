// fuzz_units: the parsers of what people type: sizes (ParseSize), durations
// (ParseDuration) and `--need` (ParseNeed), which the daemon also reads from
// any local user's requests. Accepted: a size reads back from its decimal
// form; a duration is finite, not negative, and what FormatDuration prints
// of it parses back to no more than it; a need is within its bounds and
// FormatNeed's text of it reads back to the same need. Rejected: "malformed"
// or "out_of_range", one line quoting the input (sanitised for the terminal).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/text.h"
#include "core/units.h"
#include "diagnose/rules.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view text = fuzz::AsText(data, size);
  const std::string quoted = SanitizeForTerminal(text);

  if (Result<uint64_t> s = ParseSize(text); s.ok()) {
    (void)FormatBytes(*s);
    Result<uint64_t> back = ParseSize(std::to_string(*s));
    GW_FUZZ_CHECK(back.ok() && *back == *s, std::to_string(*s));
  } else {
    fuzz::CheckError(s.error(), {"malformed", "out_of_range"}, quoted, "size");
  }

  if (Result<double> d = ParseDuration(text); d.ok()) {
    GW_FUZZ_CHECK(std::isfinite(*d) && *d >= 0, std::to_string(*d));
    const std::string shown = FormatDuration(*d);
    Result<double> back = ParseDuration(shown);
    GW_FUZZ_CHECK(back.ok() && *back <= *d, shown);
  } else {
    fuzz::CheckError(d.error(), {"malformed", "out_of_range"}, quoted, "duration");
  }

  if (Result<diagnose::NeedRequest> n = diagnose::ParseNeed(text); n.ok()) {
    GW_FUZZ_CHECK(n->gpus >= 1 && n->gpus <= 1024 && n->bytes_per_gpu > 0, std::string(text));
    const std::string again = diagnose::FormatNeed(*n);
    Result<diagnose::NeedRequest> back = diagnose::ParseNeed(again);
    GW_FUZZ_CHECK(back.ok() && back->gpus == n->gpus && back->bytes_per_gpu == n->bytes_per_gpu &&
                      back->nvlink == n->nvlink,
                  again);
  } else {
    fuzz::CheckError(n.error(), {"malformed", "out_of_range"}, quoted, "need");
  }
  return 0;
}
