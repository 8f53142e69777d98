// fuzz_kernel_log_files: the kernel-log sources that read files (kmsg/sources.h):
// a log file as plain text and as gzip (LogFileSource::Single, the path of
// --kernel-log), and the journal's JSON export (JournalJsonReader). The input
// is the file's bytes, and its lines the journal's. Invariants: a rejected
// file is "unreadable" with a one-line message naming it; an accepted one's
// events render to JSON that parses and carry the file as their source;
// plain text that is accepted gives the same events gzipped; the journal's
// events render to JSON that parses and come from "journal".
#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "kmsg/event_json.h"
#include "kmsg/sources.h"

namespace {

// A fixed mtime: a syslog stamp's year is read against it.
constexpr int64_t kMtimeS = 1'733'000'000;

std::string Gzip(std::string_view bytes) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    gw::fuzz::Fail("deflateInit2", "");
  }
  std::string out(deflateBound(&z, bytes.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) gw::fuzz::Fail("deflate", "");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Reads `bytes` as the file --kernel-log names; its events as JSON text, or
// nullopt when the file is rejected.
std::optional<std::string> ReadAsFile(std::string_view bytes) {
  using namespace gw;
  const std::string& path = fuzz::WriteTempFile(bytes, "kern.log");
  const timespec times[2] = {{kMtimeS, 0}, {kMtimeS, 0}};
  utimensat(AT_FDCWD, path.c_str(), times, 0);
  kmsg::SourceContext ctx;
  ctx.now_unix_ms = kMtimeS * 1000;
  Result<kmsg::SourceRead> r = kmsg::LogFileSource::Single(path)->Read(ctx);
  if (!r.ok()) {
    fuzz::CheckError(r.error(), {"unreadable"}, path, "kernel log file");
    return std::nullopt;
  }
  for (const kmsg::KernelEvent& ev : r->events) {
    GW_FUZZ_CHECK(ev.source == path, ev.source);
  }
  std::string json = kmsg::EventsToJson(r->events).dump();
  fuzz::CheckJsonParses(json, "file events JSON");
  return json;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view bytes = fuzz::AsText(data, size);

  const std::optional<std::string> plain = ReadAsFile(bytes);
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (plain && !is_gzip) {
    const std::optional<std::string> gzipped = ReadAsFile(Gzip(bytes));
    GW_FUZZ_CHECK(gzipped.has_value(), "accepted text is rejected once gzipped");
    GW_FUZZ_CHECK(*gzipped == *plain, "gzip changes the events");
  }

  kmsg::JournalJsonReader journal(/*reversed=*/false);
  for (size_t start = 0; start <= bytes.size();) {
    size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos) end = bytes.size();
    journal.AddLine(bytes.substr(start, end - start));
    start = end + 1;
  }
  const kmsg::SourceRead read = journal.Finish();
  for (const kmsg::KernelEvent& ev : read.events) {
    GW_FUZZ_CHECK(ev.source == "journal", ev.source);
  }
  fuzz::CheckJsonParses(kmsg::EventsToJson(read.events).dump(), "journal events JSON");
  return 0;
}
