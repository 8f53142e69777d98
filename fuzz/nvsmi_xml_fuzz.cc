// fuzz_nvsmi_xml: `nvidia-smi -q -x` dumps (import/nvsmi_xml.h), which come
// from other machines. Accepted: one GPU per <gpu> in file order, at most
// 4096 of them, and the snapshot renders to JSON that parses and to text that
// is safe on a terminal. Rejected: a documented code, one line naming the dump.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_check.h"
#include "import/nvsmi_xml.h"
#include "render/status_json.h"
#include "render/status_text.h"

namespace {

constexpr const char* kName = "fuzz-dump.xml";
// The real cap is 256 MiB; a small one lets the fuzzer reach the refusal.
constexpr uint64_t kCap = 1 << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view xml = fuzz::AsText(data, size);
  Result<Snapshot> s = import::internal::ParseNvidiaSmiXml(xml, kName, kCap);
  if (!s.ok()) {
    fuzz::CheckError(s.error(), {"too_large", "malformed", "not_nvidia_smi", "not_one_dump"}, kName,
                     "import");
    GW_FUZZ_CHECK(s.error().code != "too_large" || size > kCap, s.error().message);
    return 0;
  }
  GW_FUZZ_CHECK(size <= kCap, "a dump over the cap was accepted");
  GW_FUZZ_CHECK(s->source == SnapshotSource::kXmlDump, "source");
  GW_FUZZ_CHECK(s->source_detail == kName, s->source_detail);
  GW_FUZZ_CHECK(s->gpus.size() <= 4096, std::to_string(s->gpus.size()));
  for (size_t i = 0; i < s->gpus.size(); ++i) {
    GW_FUZZ_CHECK(s->gpus[i].index == i, "GPU index is its place in the file");
  }
  fuzz::CheckJsonParses(render::RenderStatusJson(*s, /*pretty=*/false), "status --json");
  const std::string text = render::RenderStatusText(*s, render::TextOptions{});
  fuzz::CheckTerminalSafe(text, "status text");
  return 0;
}
