// fuzz_history_point: the binary history record (fleet/history_point.h,
// PointFromBinary), read from the history store's rows. Invariants: an
// accepted record encodes back to the same bytes; its streamed JSON
// (AppendPointJson) parses and equals PointToJson's document written out when
// the names are UTF-8; that JSON reads back (PointFromJson), to the same bytes again
// when every number is finite. Rejected: "malformed".
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/text.h"
#include "fleet/history_point.h"
#include "fuzz/fuzz_check.h"

namespace {

bool AllFinite(const gw::fleet::HistoryPoint& p) {
  bool finite = std::isfinite(p.queued) && std::isfinite(p.running);
  for (const gw::fleet::GpuPoint& g : p.gpus) {
    for (double v : {g.util_pct, g.mem_used_bytes, g.mem_total_bytes, g.power_w, g.temp_c}) {
      finite = finite && std::isfinite(v);
    }
  }
  for (const gw::fleet::UserPoint& u : p.users) {
    for (double v : {u.gpus, u.idle_gpus, u.vram_bytes, u.idle_vram_bytes}) {
      finite = finite && std::isfinite(v);
    }
  }
  return finite;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view bytes = fuzz::AsText(data, size);
  Result<fleet::HistoryPoint> p = fleet::PointFromBinary(bytes);
  if (!p.ok()) {
    GW_FUZZ_CHECK(p.error().code == "malformed", p.error().code);
    GW_FUZZ_CHECK(!p.error().message.empty(), "an empty message");
    return 0;
  }
  std::string again;
  fleet::AppendPointBinary(again, *p);
  GW_FUZZ_CHECK(again == bytes, "an accepted record encodes back to other bytes");

  std::string json;
  fleet::AppendPointJson(json, *p);
  fuzz::CheckJsonParses(json, "AppendPointJson");
  const nlohmann::json parsed = nlohmann::json::parse(json);
  bool utf8 = true;
  for (const fleet::UserPoint& u : p->users) utf8 = utf8 && ToValidUtf8(u.user) == u.user;
  // As text: an infinity is a number in the document and null once written.
  if (utf8) GW_FUZZ_CHECK(parsed == nlohmann::json::parse(fleet::PointToJson(*p).dump()), json);

  Result<fleet::HistoryPoint> back = fleet::PointFromJson(parsed);
  GW_FUZZ_CHECK(back.ok(), back.ok() ? "" : back.error().message);
  if (utf8 && AllFinite(*p)) {
    std::string third;
    fleet::AppendPointBinary(third, *back);
    GW_FUZZ_CHECK(third == bytes, "the JSON of a record reads back to other bytes");
  }
  return 0;
}
