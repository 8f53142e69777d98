#include "kmsg/sources.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kmsg/scan.h"
#include "os/errno_text.h"
#include "os/file_io.h"
#include "os/unique_fd.h"

extern char** environ;

namespace gw::kmsg {
namespace {

using os::ErrnoText;
using os::ReadSome;
using os::UniqueFd;

// The first block of a log file, judged text or not.
constexpr size_t kSniffBytes = 4096;

// Length of the valid UTF-8 sequence at s[i], or 0 when there is none.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
  } else {
    return 0;
  }
  // A sequence cut by the end of the block counts as valid: the block is an
  // arbitrary cut of the file.
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return s.size() - i;
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::string NotTextReason(std::string_view block) {
  if (block.empty()) return {};
  size_t nul = 0, other = 0;
  for (size_t i = 0; i < block.size();) {
    const unsigned char c = static_cast<unsigned char>(block[i]);
    if (c == 0) {
      ++nul;
      ++i;
    } else if (c < 0x20) {
      // Tabs, line ends, form feeds, backspace and ESC (colour codes of
      // `dmesg --color`) occur in logs; other control bytes do not.
      if (c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != '\b' && c != 0x1b) {
        ++other;
      }
      ++i;
    } else if (c == 0x7f) {
      ++other;
      ++i;
    } else if (c < 0x80) {
      ++i;
    } else if (const size_t n = Utf8Length(block, i); n > 0) {
      i += n;
    } else {
      ++other;  // Not UTF-8 (a Latin-1 letter, or binary).
      ++i;
    }
  }
  const size_t bad = nul + other;
  // One stray byte (or a few) in a real log is not binary: more than a tenth
  // of the block is.
  if (bad <= std::max<size_t>(block.size() / 10, 1)) return {};
  std::string why = fmt::format(
      "binary data, not a text log ({} of its first {} bytes are not text", bad, block.size());
  if (nul > 0) why += fmt::format(", {} of them NUL", nul);
  return why + ")";
}

namespace {

// Streams log text into a parser through one fixed buffer: the parser takes
// the complete lines of each chunk, the incomplete last line moves to the front
// for the next one. A line that fills the whole buffer is handed over cut and
// the rest of it is skipped, so memory stays bounded whatever the input.
class LineFeeder {
 public:
  static constexpr size_t kMaxCapacity = size_t{256} << 10;
  static constexpr size_t kMinCapacity = size_t{64} << 10;

  // `size_hint`: the input's size when known (a regular file), else 0. A
  // smaller input gets a smaller buffer; no line can be longer than it.
  LineFeeder(NvrmParser& parser, uint64_t size_hint)
      : parser_(parser),
        capacity_(size_hint == 0 ? kMaxCapacity
                                 : static_cast<size_t>(std::clamp<uint64_t>(
                                       size_hint + 1, kMinCapacity, kMaxCapacity))),
        buf_(new char[capacity_]) {}

  char* space() { return buf_.get() + len_; }
  size_t space_size() const { return capacity_ - len_; }

  // Why the input is not a text log (judged on its first block), or empty.
  // Once set, nothing more reaches the parser: a binary file yields no
  // events, it is unreadable.
  const std::string& not_text() const { return not_text_; }

  // `n` bytes were written at space().
  void Commit(size_t n) {
    if (!not_text_.empty()) return;
    char* buf = buf_.get();
    size_t start = len_, end = len_ + n;
    if (!judged_) {
      // The first block is held back until it can be judged.
      len_ = end;
      if (len_ < kSniffBytes) return;
      Judge();
      if (!not_text_.empty()) return;
      start = 0;  // The whole block is parsed now.
    }
    if (skipping_) {
      const void* nl = std::memchr(buf + start, '\n', n);
      if (nl == nullptr) return;  // Still inside the overlong line.
      const size_t after = static_cast<size_t>(static_cast<const char*>(nl) - buf) + 1;
      std::memmove(buf + start, buf + after, end - after);
      end = start + (end - after);
      skipping_ = false;
    }
    len_ = end;
    const size_t consumed = parser_.FeedText(std::string_view(buf, len_), false);
    if (consumed > 0) {
      std::memmove(buf, buf + consumed, len_ - consumed);
      len_ -= consumed;
    }
    if (len_ == capacity_) {
      parser_.FeedOverlongLine(std::string_view(buf, std::min(capacity_, kMaxLineBytes + 1)));
      len_ = 0;
      skipping_ = true;
    }
  }

  void Finish() {
    if (!not_text_.empty()) return;
    if (!judged_ && len_ > 0) {
      Judge();
      if (!not_text_.empty()) return;
    }
    if (!skipping_ && len_ > 0) parser_.FeedText(std::string_view(buf_.get(), len_), true);
    len_ = 0;
  }

 private:
  void Judge() {
    judged_ = true;
    not_text_ = NotTextReason(std::string_view(buf_.get(), std::min(len_, kSniffBytes)));
    if (!not_text_.empty()) len_ = 0;
  }

  NvrmParser& parser_;
  size_t capacity_;
  std::unique_ptr<char[]> buf_;
  size_t len_ = 0;
  bool skipping_ = false;
  bool judged_ = false;
  std::string not_text_;
};

// Inflates gzip members (concatenated ones too) from `fd` into `feeder`;
// `first` holds bytes already read from fd. Returns what makes the file
// unreadable, or empty: a stream that ends early (a truncated file), damaged
// data (a bad CRC or length check, an invalid block) or a read error. Bytes
// after a complete member that do not start another one are trailing
// garbage (padding): a warning, as gzip(1) says.
std::string InflateInto(int fd, std::string_view first, LineFeeder& feeder, const std::string& path,
                        std::vector<std::string>* warnings) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return "cannot start gzip decoding";
  std::vector<unsigned char> in(size_t{1} << 20);
  std::memcpy(in.data(), first.data(), first.size());
  zs.next_in = in.data();
  zs.avail_in = static_cast<uInt>(first.size());
  bool eof = false;
  bool finished_member = false;
  uint64_t produced_total = 0;
  std::string error;
  for (;;) {
    if (!feeder.not_text().empty()) break;  // Binary inside: judged by the caller.
    if (zs.avail_in == 0 && !eof) {
      const ssize_t r = ReadSome(fd, in.data(), in.size());
      if (r < 0) {
        error = "read error: " + ErrnoText(errno);
        break;
      }
      if (r == 0) eof = true;
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(r);
    }
    if (zs.avail_in == 0 && eof) {
      if (!finished_member) {
        error = fmt::format(
            "gzip data ends early after {} bytes of text (a truncated or unfinished file)",
            produced_total);
      }
      break;
    }
    if (finished_member) {
      if (zs.next_in[0] != 0x1f || (zs.avail_in > 1 && zs.next_in[1] != 0x8b)) {
        warnings->push_back(path + ": trailing garbage after the gzip data ignored");
        break;
      }
      inflateReset(&zs);  // Another gzip member follows.
      finished_member = false;
    }
    zs.next_out = reinterpret_cast<Bytef*>(feeder.space());
    const size_t space = std::min<size_t>(feeder.space_size(), std::numeric_limits<uInt>::max());
    zs.avail_out = static_cast<uInt>(space);
    const int ret = inflate(&zs, Z_NO_FLUSH);
    const size_t produced = space - zs.avail_out;
    produced_total += produced;
    feeder.Commit(produced);
    if (ret == Z_STREAM_END) {
      finished_member = true;
      continue;
    }
    if (ret == Z_OK || (ret == Z_BUF_ERROR && zs.avail_in == 0)) continue;
    error = fmt::format("damaged gzip data after {} bytes of text ({})", produced_total,
                        zs.msg != nullptr ? zs.msg : "inflate error");
    break;
  }
  inflateEnd(&zs);
  return error;
}

// A compressed format other than gzip, told by its magic bytes: its name and
// the command that decompresses it, or nullptr.
struct OtherFormat {
  const char* name;
  const char* command;
};
const OtherFormat* OtherCompression(std::string_view head) {
  static constexpr OtherFormat kXz{"xz", "xz -dc"}, kZstd{"zstd", "zstd -dc"},
      kBzip2{"bzip2", "bzip2 -dc"}, kLz4{"lz4", "lz4 -dc"}, kZip{"zip", "unzip -p"};
  if (head.starts_with(std::string_view("\xFD"
                                        "7zXZ\0",
                                        6)))
    return &kXz;
  if (head.starts_with("\x28\xB5\x2F\xFD")) return &kZstd;
  if (head.size() >= 4 && head.starts_with("BZh") && head[3] >= '1' && head[3] <= '9') {
    return &kBzip2;
  }
  if (head.starts_with("\x04\x22\x4D\x18")) return &kLz4;
  if (head.starts_with("PK\x03\x04")) return &kZip;
  return nullptr;
}

std::string ReadBootId(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return "";
  char buf[128];
  const ssize_t n = ReadSome(fd.get(), buf, sizeof buf);
  if (n <= 0) return "";
  std::string id;
  for (ssize_t i = 0; i < n; ++i) {
    const char c = buf[i];
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {
      id.push_back(c);
    } else if (c >= 'A' && c <= 'F') {
      id.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (c != '-' && c != '\n') {
      return "";
    }
  }
  return id.size() == 32 ? id : "";
}

// The value of "KEY" : "value" in one journal JSON line, without a JSON parse
// (systemd prints both `"K":"v"` and `"K" : "v"`). `quoted_key` includes the
// quotes.
std::string_view StringField(std::string_view line, std::string_view quoted_key) {
  size_t p = line.find(quoted_key);
  if (p == std::string_view::npos) return {};
  p += quoted_key.size();
  while (p < line.size() && (line[p] == ' ' || line[p] == ':')) ++p;
  if (p >= line.size() || line[p] != '"') return {};
  const size_t end = line.find('"', p + 1);
  if (end == std::string_view::npos) return {};
  return line.substr(p + 1, end - p - 1);
}

Opt<int64_t> ToInt(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool MessageIsByteArray(std::string_view line) {
  size_t p = line.find("\"MESSAGE\"");
  if (p == std::string_view::npos) return false;
  p += 9;
  while (p < line.size() && (line[p] == ' ' || line[p] == ':')) ++p;
  return p < line.size() && line[p] == '[';
}

std::string JoinLines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

KernelEvent SyntheticBoot(const std::string& source, const std::string& boot_id, int64_t start_ms,
                          const char* detail) {
  KernelEvent ev;
  ev.time_unix_ms = start_ms;
  ev.monotonic_s = 0.0;
  ev.kind = kKindBoot;
  ev.detail = detail;
  ev.source = source;
  ev.boot_id = boot_id;
  return ev;
}

void SortChronologically(std::vector<KernelEvent>* events) {
  // Events without a wall time keep their place after the last timed one.
  std::vector<std::pair<int64_t, size_t>> keys;
  keys.reserve(events->size());
  int64_t last = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < events->size(); ++i) {
    if ((*events)[i].time_unix_ms) last = *(*events)[i].time_unix_ms;
    keys.emplace_back(last, i);
  }
  std::stable_sort(keys.begin(), keys.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<KernelEvent> sorted;
  sorted.reserve(events->size());
  for (const auto& k : keys) sorted.push_back(std::move((*events)[k.second]));
  *events = std::move(sorted);
}

}  // namespace

// ---------------------------------------------------------------------------
// Files

Status ReadLogFile(const std::string& path, NvrmParser& parser,
                   std::vector<std::string>* warnings) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int e = errno;
    if (e == ENOENT) return MakeError("not_found", path + ": no such file");
    return MakeError("unreadable", path + ": " + ErrnoText(e));
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return MakeError("unreadable", path + ": " + ErrnoText(errno));
  if (S_ISDIR(st.st_mode)) return MakeError("unreadable", path + ": is a directory");
  const int64_t mtime_ms =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
  parser.NextFile(path, mtime_ms);
#if defined(POSIX_FADV_SEQUENTIAL)
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
#endif

  LineFeeder feeder(parser, S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0);
  // The format is told by its magic bytes, not the name: read the first few.
  constexpr size_t kMagicBytes = 6;
  size_t have = 0;
  bool eof = false;
  while (have < kMagicBytes && !eof) {
    const ssize_t r = ReadSome(fd.get(), feeder.space() + have, feeder.space_size() - have);
    if (r < 0) return MakeError("unreadable", path + ": " + ErrnoText(errno));
    if (r == 0) eof = true;
    have += static_cast<size_t>(r);
  }
  const std::string_view head(feeder.space(), have);
  if (have >= 2 && head[0] == '\x1f' && head[1] == '\x8b') {
    const std::string first(head);
    const std::string error = InflateInto(fd.get(), first, feeder, path, warnings);
    if (!error.empty()) return MakeError("unreadable", path + ": " + error);
    feeder.Finish();
    if (!feeder.not_text().empty()) {
      return MakeError("unreadable", path + ": gzip of " + feeder.not_text());
    }
    return Status::Ok();
  }
  if (const OtherFormat* other = OtherCompression(head)) {
    return MakeError("unreadable",
                     fmt::format("{}: {}-compressed: only plain text and gzip are read "
                                 "(decompress it first: {} FILE > FILE.log)",
                                 path, other->name, other->command));
  }
  feeder.Commit(have);
  while (!eof && feeder.not_text().empty()) {
    const ssize_t r = ReadSome(fd.get(), feeder.space(), feeder.space_size());
    if (r < 0) {
      warnings->push_back(path + ": read error: " + ErrnoText(errno) + "; the rest is skipped");
      break;
    }
    if (r == 0) break;
    feeder.Commit(static_cast<size_t>(r));
  }
  feeder.Finish();
  if (!feeder.not_text().empty()) return MakeError("unreadable", path + ": " + feeder.not_text());
  return Status::Ok();
}

std::vector<std::string> RotatedFamily(const std::string& base) {
  namespace fs = std::filesystem;
  const fs::path base_path(base);
  fs::path dir = base_path.parent_path();
  if (dir.empty()) dir = ".";
  const std::string name = base_path.filename().string();
  std::vector<std::pair<uint64_t, std::string>> numbered;  // (N, path)
  std::vector<std::string> dated;
  bool base_exists = false;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f == name) {
      base_exists = true;
      continue;
    }
    if (f.size() <= name.size() + 1 || f.compare(0, name.size(), name) != 0) continue;
    const char sep = f[name.size()];
    std::string_view rest = std::string_view(f).substr(name.size() + 1);
    if (rest.ends_with(".gz")) rest.remove_suffix(3);
    if (rest.empty() || rest.size() > 14 ||
        !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    if (sep == '.') {
      numbered.emplace_back(std::stoull(std::string(rest)), it->path().string());
    } else if (sep == '-') {
      dated.push_back(it->path().string());
    }
  }
  std::sort(dated.begin(), dated.end());
  std::sort(numbered.begin(), numbered.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out = dated;
  for (auto& n : numbered) out.push_back(n.second);
  if (base_exists) out.push_back(base);
  return out;
}

std::unique_ptr<LogFileSource> LogFileSource::FirstFamily(std::vector<std::string> bases) {
  std::unique_ptr<LogFileSource> s(new LogFileSource());
  s->bases_ = std::move(bases);
  return s;
}

std::unique_ptr<LogFileSource> LogFileSource::Single(std::string path) {
  std::unique_ptr<LogFileSource> s(new LogFileSource());
  s->bases_.push_back(std::move(path));
  s->single_ = true;
  return s;
}

std::string LogFileSource::Name() const {
  if (!chosen_.empty()) return chosen_;
  return bases_.empty() ? "files" : bases_.front();
}

Result<SourceRead> LogFileSource::Read(const SourceContext& ctx) {
  SourceRead out;
  if (single_) {
    chosen_ = bases_.front();
    ParseOptions po;
    po.source = chosen_;
    po.reference_unix_ms = ctx.now_unix_ms;
    NvrmParser parser(po);
    Status st = ReadLogFile(chosen_, parser, &out.warnings);
    if (!st.ok()) return st.error();
    out.events = parser.TakeEvents();
    out.stats = parser.stats();
    return out;
  }
  std::string tried;
  for (const std::string& base : bases_) {
    const std::vector<std::string> family = RotatedFamily(base);
    if (family.empty()) {
      tried += (tried.empty() ? "" : ", ") + base;
      continue;
    }
    chosen_ = base;
    ParseOptions po;
    po.source = family.front();
    po.boot_prefix = base;
    po.reference_unix_ms = ctx.now_unix_ms;
    NvrmParser parser(po);
    size_t read_ok = 0;
    std::string first_error;
    for (const std::string& path : family) {
      Status st = ReadLogFile(path, parser, &out.warnings);
      if (st.ok()) {
        ++read_ok;
      } else {
        if (first_error.empty()) first_error = st.error().message;
        out.warnings.push_back(st.error().message);
      }
    }
    if (read_ok == 0) {
      return MakeError("unavailable",
                       first_error + (first_error.find("ermission") != std::string::npos
                                          ? " (readable by root and group adm)"
                                          : ""));
    }
    out.events = parser.TakeEvents();
    out.stats = parser.stats();
    return out;
  }
  return MakeError("unavailable", "none of " + tried + " exists");
}

// ---------------------------------------------------------------------------
// /dev/kmsg

Status DevKmsg::Open() {
  UniqueFd fd(open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  const int e = errno;
  fd_ = std::move(fd);
  if (!fd_.valid()) {
    std::string why = path_ + ": " + ErrnoText(e);
    if (e == EPERM || e == EACCES) why += " (needs root, or sysctl kernel.dmesg_restrict=0)";
    return MakeError("unavailable", why);
  }
  // From the first record after the last `dmesg --clear`, like dmesg itself.
  lseek(fd_.get(), 0, SEEK_DATA);
  buf_.resize(16384);  // Larger than the kernel's longest record (8 KiB).
  return Status::Ok();
}

Result<bool> DevKmsg::Next(std::string* record) {
  if (!fd_.valid()) return MakeError("io", path_ + ": not open");
  if (bytes_ >= kMaxKmsgBytes) return false;
  for (;;) {
    const ssize_t n = read(fd_.get(), buf_.data(), buf_.size());
    if (n > 0) {
      bytes_ += static_cast<uint64_t>(n);
      record->assign(buf_.data(), static_cast<size_t>(n));
      return true;
    }
    if (n == 0) return false;
    const int e = errno;
    if (e == EINTR || e == EPIPE) continue;  // EPIPE: records overwritten; next one follows.
    if (e == EAGAIN || e == EWOULDBLOCK) return false;
    if (e == EPERM || e == EACCES) return MakeError("unavailable", path_ + ": " + ErrnoText(e));
    return MakeError("io", path_ + ": " + ErrnoText(e));
  }
}

Result<SourceRead> KmsgSource::Read(const SourceContext& ctx) {
  Status st = device_.Open();
  if (!st.ok()) return st.error();
  const std::string boot_id = ctx.boot_id.empty() ? "current" : ctx.boot_id;
  ParseOptions po;
  po.source = "kmsg";
  po.boot_id = boot_id;
  po.boot_time_unix_ms = ctx.boot_time_unix_ms;
  po.reference_unix_ms = ctx.now_unix_ms;
  NvrmParser parser(po);
  SourceRead out;
  std::string record;
  uint64_t records = 0;
  for (;;) {
    auto next = device_.Next(&record);
    if (!next.ok()) {
      if (records == 0) return next.error();
      out.warnings.push_back(next.error().message);
      break;
    }
    if (!*next) break;
    ++records;
    parser.FeedKmsgRecord(record);
  }
  out.events = parser.TakeEvents();
  out.stats = parser.stats();
  const bool has_boot = std::any_of(out.events.begin(), out.events.end(),
                                    [](const KernelEvent& e) { return e.kind == kKindBoot; });
  if (ctx.boot_time_unix_ms) {
    if (!has_boot) {
      out.events.insert(out.events.begin(), SyntheticBoot("kmsg", boot_id, *ctx.boot_time_unix_ms,
                                                          "boot of the running kernel"));
    }
    out.boots.push_back({boot_id, *ctx.boot_time_unix_ms});
  }
  return out;
}

// ---------------------------------------------------------------------------
// The journal

void JournalJsonReader::AddLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.empty()) return;
  ++lines_;
  const std::string_view boot = StringField(line, "\"_BOOT_ID\"");
  if (!boot.empty() && std::none_of(boots_.begin(), boots_.end(),
                                    [&](const BootSpan& b) { return b.boot_id == boot; })) {
    const auto rt = ToInt(StringField(line, "\"__REALTIME_TIMESTAMP\""));
    const auto mono = ToInt(StringField(line, "\"__MONOTONIC_TIMESTAMP\""));
    if (rt && mono && *rt >= *mono) boots_.push_back({std::string(boot), (*rt - *mono) / 1000});
  }
  if (internal::FindCandidate(line, 0) >= line.size() && !MessageIsByteArray(line)) return;
  try {
    const nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++bad_lines_;
      return;
    }
    const auto m = j.find("MESSAGE");
    if (m == j.end()) return;
    Entry e;
    if (m->is_string()) {
      e.message = m->get<std::string>();
    } else if (m->is_array()) {  // Not valid UTF-8 or not printable: bytes.
      for (const auto& b : *m) {
        if (b.is_number_unsigned() && b.get<uint64_t>() <= 255) {
          e.message.push_back(static_cast<char>(b.get<uint64_t>()));
        }
      }
    } else {
      return;
    }
    if (internal::FindCandidate(e.message, 0) >= e.message.size()) return;
    if (e.message.size() > 65536) e.message.resize(65536);
    auto str = [&](const char* key) -> std::string_view {
      const auto it = j.find(key);
      return it != j.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>())
                                              : std::string_view{};
    };
    e.meta.realtime_us = ToInt(str("__REALTIME_TIMESTAMP"));
    e.meta.monotonic_us = ToInt(str("_SOURCE_MONOTONIC_TIMESTAMP"));
    if (!e.meta.monotonic_us) e.meta.monotonic_us = ToInt(str("__MONOTONIC_TIMESTAMP"));
    e.meta.boot_id = std::string(str("_BOOT_ID"));
    entries_.push_back(std::move(e));
  } catch (const nlohmann::json::exception&) {
    ++bad_lines_;
  }
}

SourceRead JournalJsonReader::Finish() {
  if (reversed_) std::reverse(entries_.begin(), entries_.end());
  ParseOptions po;
  po.source = "journal";
  NvrmParser parser(po);
  for (const Entry& e : entries_) parser.FeedJournalMessage(e.message, e.meta);
  SourceRead out;
  out.events = parser.TakeEvents();
  out.stats = parser.stats();
  std::set<std::string> with_boot_event;
  for (const auto& ev : out.events) {
    if (ev.kind == kKindBoot) with_boot_event.insert(ev.boot_id);
  }
  for (const BootSpan& b : boots_) {
    if (!with_boot_event.count(b.boot_id)) {
      out.events.push_back(
          SyntheticBoot("journal", b.boot_id, b.start_unix_ms, "boot (from the journal)"));
    }
  }
  SortChronologically(&out.events);
  out.boots = boots_;
  std::sort(out.boots.begin(), out.boots.end(),
            [](const BootSpan& a, const BootSpan& b) { return a.start_unix_ms < b.start_unix_ms; });
  if (bad_lines_ > 0) {
    out.warnings.push_back("journal: " + std::to_string(bad_lines_) +
                           " entries were not valid JSON and were skipped");
  }
  return out;
}

Result<SourceRead> JournalSource::Read(const SourceContext& ctx) {
  std::vector<std::string> args = {journalctl_, "-o", "json", "--no-pager", "--reverse"};
  if (ctx.since_unix_ms) args.push_back("--since=@" + std::to_string(*ctx.since_unix_ms / 1000));
  args.push_back("_TRANSPORT=kernel");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return MakeError("unavailable", "pipe: " + ErrnoText(errno));
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return MakeError("unavailable", "pipe: " + ErrnoText(errno));
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_w.get(), STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    return MakeError("unavailable", rc == ENOENT
                                        ? journalctl_ + " not found"
                                        : "cannot run " + journalctl_ + ": " + ErrnoText(rc));
  }
  out_w.Reset();
  err_w.Reset();

  JournalJsonReader reader(/*reversed=*/true);
  std::string pending, err_text;
  bool skipping = false;  // Inside a line longer than kMaxJournalLine.
  constexpr size_t kMaxJournalLine = size_t{4} << 20;
  std::vector<char> buf(size_t{1} << 20);
  bool out_open = true, err_open = true, timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_r.get() : -1, POLLIN, 0},
                     {err_open ? err_r.get() : -1, POLLIN, 0}};
    const int pr = poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ReadSome(out_r.get(), buf.data(), buf.size());
      if (n <= 0) {
        out_open = false;
      } else {
        std::string_view chunk(buf.data(), static_cast<size_t>(n));
        while (!chunk.empty()) {
          const size_t nl = chunk.find('\n');
          if (nl == std::string_view::npos) {
            if (!skipping) pending.append(chunk);
            if (pending.size() > kMaxJournalLine) {
              pending.clear();
              skipping = true;
            }
            break;
          }
          if (!skipping) {
            if (pending.empty()) {
              reader.AddLine(chunk.substr(0, nl));
            } else {
              pending.append(chunk.substr(0, nl));
              reader.AddLine(pending);
              pending.clear();
            }
          }
          skipping = false;
          chunk.remove_prefix(nl + 1);
        }
      }
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ReadSome(err_r.get(), buf.data(), buf.size());
      if (n <= 0) {
        err_open = false;
      } else if (err_text.size() < 4096) {
        err_text.append(buf.data(), static_cast<size_t>(std::min<ssize_t>(n, 4096)));
      }
    }
  }
  // A line cut by the deadline is incomplete JSON: dropped.
  if (!timed_out && !skipping && !pending.empty()) reader.AddLine(pending);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string first_err = err_text.substr(0, err_text.find('\n'));
  if (reader.lines() == 0) {
    if (timed_out)
      return MakeError("unavailable", journalctl_ + " gave nothing within the deadline");
    if (err_text.find("not seeing messages") != std::string::npos ||
        err_text.find("ermission") != std::string::npos) {
      return MakeError("unavailable",
                       "no permission to read the system journal (group adm or systemd-journal)");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return MakeError("unavailable",
                       journalctl_ + " failed" + (first_err.empty() ? "" : ": " + first_err));
    }
    return MakeError("unavailable", "the journal holds no kernel messages");
  }
  SourceRead out = reader.Finish();
  if (timed_out) {
    out.warnings.push_back(fmt::format(
        "journal: journalctl did not finish within {:.1f} s; older entries were not read",
        timeout_ms_ / 1000.0));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Merging

namespace {

constexpr int64_t kSameMomentMs = 5000;

bool SameMoment(const KernelEvent& a, const KernelEvent& b) {
  if (a.monotonic_s && b.monotonic_s && a.boot_id == b.boot_id) {
    return std::abs(*a.monotonic_s - *b.monotonic_s) <= 0.01;
  }
  if (a.time_unix_ms && b.time_unix_ms) {
    return std::llabs(*a.time_unix_ms - *b.time_unix_ms) <= kSameMomentMs;
  }
  return a.boot_id == b.boot_id;
}

std::string DedupKey(const KernelEvent& ev) {
  std::string k = ev.kind;
  k += '\x1f';
  k += ev.pci_bus_id.value_or("");
  k += '\x1f';
  k += ev.xid ? std::to_string(*ev.xid) : "";
  k += '\x1f';
  k += ev.detail;
  return k;
}

struct Origin {
  size_t source;  // Index in the chain.
  KernelEvent ev;
};

std::vector<Origin> Merge(std::vector<std::pair<size_t, SourceRead>>& reads) {
  std::vector<BootSpan> known;
  for (const auto& [i, r] : reads) {
    for (const BootSpan& b : r.boots) {
      if (std::none_of(known.begin(), known.end(),
                       [&](const BootSpan& k) { return k.boot_id == b.boot_id; })) {
        known.push_back(b);
      }
    }
  }
  std::sort(known.begin(), known.end(),
            [](const BootSpan& a, const BootSpan& b) { return a.start_unix_ms < b.start_unix_ms; });

  std::vector<Origin> items;
  // Per accepted event, the sources whose copy of it was already dropped: each
  // other source may match it once (identical lines within one source are
  // distinct events).
  std::vector<uint64_t> matched_by;
  std::unordered_map<std::string, std::vector<size_t>> by_key;
  std::unordered_set<std::string> boots_with_event;
  for (auto& [source, r] : reads) {
    for (KernelEvent& ev : r.events) {
      // A file's "<file>#n" boot that falls in a boot known by id takes the id.
      if (r.boots.empty() && ev.time_unix_ms && !known.empty() &&
          *ev.time_unix_ms >= known.front().start_unix_ms - kSameMomentMs) {
        auto it =
            std::upper_bound(known.begin(), known.end(), *ev.time_unix_ms + kSameMomentMs,
                             [](int64_t t, const BootSpan& b) { return t < b.start_unix_ms; });
        ev.boot_id = std::prev(it)->boot_id;
      }
      if (ev.kind == kKindBoot) {
        if (!boots_with_event.insert(ev.boot_id).second) continue;
        items.push_back({source, std::move(ev)});
        matched_by.push_back(~uint64_t{0});
        continue;
      }
      std::vector<size_t>& same = by_key[DedupKey(ev)];
      const uint64_t bit = uint64_t{1} << (source % 64);
      bool duplicate = false;
      for (size_t idx : same) {
        if (items[idx].source != source && !(matched_by[idx] & bit) &&
            SameMoment(items[idx].ev, ev)) {
          matched_by[idx] |= bit;
          duplicate = true;
          break;
        }
      }
      if (duplicate) continue;
      same.push_back(items.size());
      items.push_back({source, std::move(ev)});
      matched_by.push_back(0);
    }
  }
  return items;
}

}  // namespace

int64_t RunningBootStartUnixMs(const Clock& clock) {
  return clock.NowUnixMs() - clock.MonotonicMs();
}

Result<ReadResult> ReadKernelEvents(const ReadOptions& options) {
  RealClock real_clock;
  const Clock& clock = options.clock ? *options.clock : real_clock;
  SourceContext ctx;
  ctx.since_unix_ms = options.since_unix_ms;
  ctx.now_unix_ms = clock.NowUnixMs();
  ctx.boot_time_unix_ms =
      options.boot_time_unix_ms ? *options.boot_time_unix_ms : RunningBootStartUnixMs(clock);
  ctx.boot_id = ReadBootId(options.boot_id_path);

  auto keep = [&](const KernelEvent& ev) {
    return !options.since_unix_ms || !ev.time_unix_ms || *ev.time_unix_ms >= *options.since_unix_ms;
  };

  ReadResult result;
  if (!options.kernel_log_file.empty()) {
    auto source = LogFileSource::Single(options.kernel_log_file);
    auto read = source->Read(ctx);
    if (!read.ok()) return read.error();
    for (KernelEvent& ev : read->events) {
      if (keep(ev)) result.events.push_back(std::move(ev));
    }
    result.sources.push_back(
        {source->Name(), "used", JoinLines(read->warnings), result.events.size()});
    result.used.push_back(source->Name());
    return result;
  }

  std::unique_ptr<DevKmsg> device;
  std::unique_ptr<KmsgSource> kmsg;
  std::unique_ptr<JournalSource> journal;
  std::unique_ptr<LogFileSource> files;
  std::vector<KernelLogSource*> chain = options.sources;
  if (chain.empty()) {
    device = std::make_unique<DevKmsg>();
    kmsg = std::make_unique<KmsgSource>(*device);
    journal = std::make_unique<JournalSource>("journalctl", options.journal_timeout_ms);
    files =
        LogFileSource::FirstFamily({"/var/log/kern.log", "/var/log/syslog", "/var/log/messages"});
    chain = {kmsg.get(), journal.get(), files.get()};
  }

  std::vector<std::pair<size_t, SourceRead>> reads;
  bool stop = false;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (stop) {
      result.sources.push_back({chain[i]->Name(), "not_tried", "an earlier source was used", 0});
      continue;
    }
    auto read = chain[i]->Read(ctx);
    if (!read.ok()) {
      result.sources.push_back({chain[i]->Name(),
                                read.error().code == "unavailable" ? "unavailable" : "failed",
                                read.error().message, 0});
      continue;
    }
    result.sources.push_back({chain[i]->Name(), "used", JoinLines(read->warnings), 0});
    result.used.push_back(chain[i]->Name());
    SortChronologically(&read->events);
    reads.emplace_back(i, std::move(*read));
    if (!options.all_sources) stop = true;
  }
  if (reads.empty()) {
    std::string why;
    for (const auto& s : result.sources)
      why += (why.empty() ? "" : "; ") + s.name + ": " + s.reason;
    return MakeError("unavailable", "no kernel log could be read: " + why);
  }

  std::vector<Origin> merged = Merge(reads);
  std::vector<KernelEvent> events;
  for (Origin& o : merged) {
    if (!keep(o.ev)) continue;
    ++result.sources[o.source].events;
    events.push_back(std::move(o.ev));
  }
  SortChronologically(&events);
  result.events = std::move(events);
  return result;
}

}  // namespace gw::kmsg
