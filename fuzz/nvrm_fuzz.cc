// fuzz_nvrm: the NVRM line parser (kmsg/nvrm_parser.h) and the log-prefix and
// timestamp readers (kmsg/log_prefix.h) over kernel-log text full of other
// programs' lines. Invariants: the events render to JSON that parses (every
// string made valid UTF-8); the parser counts the events it emits; the text
// cut into two chunks anywhere (the caller carrying the incomplete line over,
// as the file reader does) gives the same events as the text whole; a
// /dev/kmsg record and a journal message of the same bytes parse too; a
// prefix's kernel time is finite and not negative.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "kmsg/event_json.h"
#include "kmsg/log_prefix.h"
#include "kmsg/nvrm_parser.h"

namespace {

using gw::kmsg::KernelEvent;

std::string EventsText(const std::vector<KernelEvent>& events) {
  // dump() throws on invalid UTF-8: an escaping string is a crash here.
  return gw::kmsg::EventsToJson(events).dump();
}

gw::kmsg::ParseOptions Options() {
  gw::kmsg::ParseOptions o;
  o.source = "fuzz.log";
  o.boot_time_unix_ms = int64_t{1'700'000'000'000};
  o.reference_unix_ms = int64_t{1'733'000'000'000};
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view text = fuzz::AsText(data, size);

  kmsg::NvrmParser whole(Options());
  whole.FeedText(text, /*final=*/true);
  const std::vector<KernelEvent> events = whole.TakeEvents();
  GW_FUZZ_CHECK(whole.stats().events == events.size(), "ParseStats::events");
  const std::string json = EventsText(events);
  fuzz::CheckJsonParses(json, "events JSON");

  // The same text in two chunks, split at a place the input chooses.
  const size_t cut = size == 0 ? 0 : (size_t{data[0]} * 257 + size_t{data[size - 1]}) % (size + 1);
  kmsg::NvrmParser chunked(Options());
  const size_t used = chunked.FeedText(text.substr(0, cut), /*final=*/false);
  GW_FUZZ_CHECK(used <= cut, "FeedText consumed more than it was given");
  GW_FUZZ_CHECK(used == 0 || text[used - 1] == '\n', "FeedText stopped inside a line");
  chunked.FeedText(text.substr(used), /*final=*/true);
  GW_FUZZ_CHECK(EventsText(chunked.TakeEvents()) == json,
                "events differ when the text comes in two chunks cut at " + std::to_string(cut));

  // The bytes as one /dev/kmsg record and as one journal message.
  kmsg::NvrmParser records(Options());
  records.FeedKmsgRecord(text);
  kmsg::JournalEntryMeta meta;
  meta.realtime_us = int64_t{1'733'000'000'000'000};
  meta.monotonic_us = int64_t{12'345'678};
  meta.boot_id = "0123456789abcdef0123456789abcdef";
  records.FeedJournalMessage(text, meta);
  fuzz::CheckJsonParses(EventsText(records.TakeEvents()), "kmsg/journal events JSON");

  // The prefix readers on the first line.
  const std::string_view line = text.substr(0, text.find('\n'));
  kmsg::LocalTimeConverter local;
  kmsg::PrefixContext ctx;
  ctx.boot_time_unix_ms = int64_t{1'700'000'000'000};
  ctx.reference_unix_ms = int64_t{1'733'000'000'000};
  const kmsg::LinePrefix p = kmsg::ParseLinePrefix(line, ctx, local);
  if (p.monotonic_s) {
    GW_FUZZ_CHECK(std::isfinite(*p.monotonic_s) && *p.monotonic_s >= 0,
                  std::to_string(*p.monotonic_s));
  }
  if (std::optional<int64_t> usec = kmsg::ParseKmsgHeaderUsec(line)) {
    GW_FUZZ_CHECK(*usec >= 0, std::to_string(*usec));
  }
  return 0;
}
