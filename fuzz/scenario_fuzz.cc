// fuzz_scenario: the simulator's scenario loader (sim/scenario.h). Scenario
// files are shared between people and machines with the demo. Accepted: at
// most kMaxGpus GPUs; every timeline starts at -infinity with one state per
// change point, in ascending time, and answers At() for any time; events are
// sorted by time. Rejected: "malformed" or "invalid", one line (a JSON path
// and the problem; the file is named by the caller, LoadScenarioFile).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "fuzz/fuzz_check.h"
#include "sim/scenario.h"

namespace {

template <typename State>
void CheckTimeline(const gw::sim::Timeline<State>& t, const char* what) {
  GW_FUZZ_CHECK(!t.at_s.empty() && t.at_s.size() == t.states.size(), what);
  GW_FUZZ_CHECK(std::isinf(t.at_s[0]) && t.at_s[0] < 0, what);
  for (size_t k = 1; k < t.at_s.size(); ++k) {
    GW_FUZZ_CHECK(t.at_s[k - 1] <= t.at_s[k], what);
  }
  for (double at : {-1.0, 0.0, 0.5, 1e9, std::numeric_limits<double>::infinity()}) {
    (void)t.At(at);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string text(fuzz::AsText(data, size));
  // "env:NAME" PIDs resolve for one name only.
  const sim::EnvLookup env = [](const std::string& name) -> sim::Opt<std::string> {
    if (name == "GW_FUZZ_PID") return std::string("4242");
    return std::nullopt;
  };
  Result<sim::Scenario> s = sim::ParseScenario(text, "fuzz.json", env);
  if (!s.ok()) {
    fuzz::CheckError(s.error(), {"malformed", "invalid"}, "", "scenario");
    return 0;
  }
  GW_FUZZ_CHECK(s->gpus.size() <= sim::kMaxGpus, std::to_string(s->gpus.size()));
  CheckTimeline(s->driver, "driver timeline");
  for (const sim::GpuSpec& g : s->gpus) {
    CheckTimeline(g.timeline, "GPU timeline");
    for (size_t k = 1; k < g.events.size(); ++k) {
      GW_FUZZ_CHECK(g.events[k - 1].at_s <= g.events[k].at_s, "events sorted by time");
    }
  }
  return 0;
}
