// Where kernel messages come from, and ReadKernelEvents, which reads the
// available ones and merges them into one chronological list of events.
//
// Sources, in order of preference:
//   "kmsg"     /dev/kmsg: the running kernel's ring buffer (this boot only;
//              needs root or kernel.dmesg_restrict=0).
//   "journal"  the systemd journal's kernel messages of every stored boot
//              (`journalctl -o json --no-pager _TRANSPORT=kernel`; `-k` would
//              imply `-b`, this boot only). Needs group adm/systemd-journal.
//   files      /var/log/kern.log, else /var/log/syslog, else /var/log/messages,
//              each with its rotated siblings (.1, .2.gz, -20240101[.gz]),
//              read oldest first.
// or one explicit file (--kernel-log FILE: plain text or gzip, any format
// the parser knows), which is then the only source.
//
// A source that cannot be used here (missing, no permission, no journalctl)
// is reported as unavailable with the reason, never fatal.
#ifndef GPUWARDEN_KMSG_SOURCES_H_
#define GPUWARDEN_KMSG_SOURCES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "kmsg/kernel_event.h"
#include "kmsg/nvrm_parser.h"
#include "os/unique_fd.h"

namespace gw::kmsg {

// What a source needs to know about the running system.
struct SourceContext {
  Opt<int64_t> since_unix_ms;      // Sources may skip older entries (the journal does).
  int64_t now_unix_ms = 0;         // Reference for syslog years of the live logs.
  Opt<int64_t> boot_time_unix_ms;  // Wall time the running kernel booted.
  std::string boot_id;             // The running kernel's boot id (32 hex), or empty.
};

// A boot a source knows by id, with its estimated start.
struct BootSpan {
  std::string boot_id;
  int64_t start_unix_ms = 0;
};

struct SourceRead {
  std::vector<KernelEvent> events;  // Chronological within the source.
  // Boots identified by the kernel's boot id (kmsg, journal). Empty for files,
  // whose "<file>#n" boots are placed by time (see ReadKernelEvents).
  std::vector<BootSpan> boots;
  std::vector<std::string> warnings;  // Partial reads: one line each.
  ParseStats stats;
};

// Error codes of Read: "unavailable" (cannot be used here: the message says
// why), "not_found" / "unreadable" (an explicit file), "io".
class KernelLogSource {
 public:
  virtual ~KernelLogSource() = default;
  virtual std::string Name() const = 0;
  virtual Result<SourceRead> Read(const SourceContext& ctx) = 0;
};

// A source that returns what it was given (tests).
class FakeKernelLogSource final : public KernelLogSource {
 public:
  FakeKernelLogSource(std::string name, Result<SourceRead> result)
      : name_(std::move(name)), result_(std::move(result)) {}
  std::string Name() const override { return name_; }
  Result<SourceRead> Read(const SourceContext&) override { return result_; }

 private:
  std::string name_;
  Result<SourceRead> result_;
};

// ---------------------------------------------------------------------------
// /dev/kmsg

// The device seam: one record per Next().
class KmsgDevice {
 public:
  virtual ~KmsgDevice() = default;
  // Error code "unavailable" (ENOENT, EPERM, EACCES, ...) with the reason.
  virtual Status Open() = 0;
  // Stores the next record; returns false when no record is left (EAGAIN).
  virtual Result<bool> Next(std::string* record) = 0;
};

// The real device: open(O_RDONLY|O_NONBLOCK), lseek(SEEK_DATA) to the first
// record after the last `dmesg --clear`, read records until EAGAIN. Records
// overwritten while reading (EPIPE) are skipped. Stops after kMaxKmsgBytes.
class DevKmsg final : public KmsgDevice {
 public:
  explicit DevKmsg(std::string path = "/dev/kmsg") : path_(std::move(path)) {}
  Status Open() override;
  Result<bool> Next(std::string* record) override;

 private:
  std::string path_;
  os::UniqueFd fd_;
  uint64_t bytes_ = 0;
  std::string buf_;
};
inline constexpr uint64_t kMaxKmsgBytes = uint64_t{256} << 20;

// Records handed out one by one (tests).
class FakeKmsgDevice final : public KmsgDevice {
 public:
  explicit FakeKmsgDevice(std::vector<std::string> records, Status open_status = Status::Ok())
      : records_(std::move(records)), open_status_(std::move(open_status)) {}
  Status Open() override { return open_status_; }
  Result<bool> Next(std::string* record) override {
    if (next_ >= records_.size()) return false;
    *record = records_[next_++];
    return true;
  }

 private:
  std::vector<std::string> records_;
  Status open_status_;
  size_t next_ = 0;
};

// Events of the running boot: boot_id = ctx.boot_id ("current" when unknown),
// wall times = ctx.boot_time_unix_ms + the record's usec.
class KmsgSource final : public KernelLogSource {
 public:
  explicit KmsgSource(KmsgDevice& device) : device_(device) {}
  std::string Name() const override { return "kmsg"; }
  Result<SourceRead> Read(const SourceContext& ctx) override;

 private:
  KmsgDevice& device_;
};

// ---------------------------------------------------------------------------
// The systemd journal

// Reads `journalctl -o json` output lines (newest first when `reversed`, as
// JournalSource asks for them), keeping only the entries that can matter and
// every boot id seen. Finish() parses the kept entries oldest first.
class JournalJsonReader {
 public:
  explicit JournalJsonReader(bool reversed) : reversed_(reversed) {}
  void AddLine(std::string_view line);
  // Events (with a "boot" event for every boot seen that has none) and boots.
  SourceRead Finish();
  uint64_t lines() const { return lines_; }

 private:
  struct Entry {
    std::string message;
    JournalEntryMeta meta;
  };
  bool reversed_;
  uint64_t lines_ = 0;
  uint64_t bad_lines_ = 0;
  std::vector<Entry> entries_;
  std::vector<BootSpan> boots_;  // In order of first appearance.
};

class JournalSource final : public KernelLogSource {
 public:
  // `journalctl` is run by name through PATH, or by path; killed after
  // `timeout_ms` (what was read so far is kept, with a warning).
  explicit JournalSource(std::string journalctl = "journalctl", int timeout_ms = 10'000)
      : journalctl_(std::move(journalctl)), timeout_ms_(timeout_ms) {}
  std::string Name() const override { return "journal"; }
  Result<SourceRead> Read(const SourceContext& ctx) override;

 private:
  std::string journalctl_;
  int timeout_ms_;
};

// ---------------------------------------------------------------------------
// Log files

class LogFileSource final : public KernelLogSource {
 public:
  // The first of `bases` that exists (with or without rotated siblings), read
  // with its rotated siblings oldest first. Unavailable when none exists or it
  // cannot be read.
  static std::unique_ptr<LogFileSource> FirstFamily(std::vector<std::string> bases);
  // Exactly one file (plain or gzip): errors are "not_found" / "unreadable".
  static std::unique_ptr<LogFileSource> Single(std::string path);

  std::string Name() const override;
  Result<SourceRead> Read(const SourceContext& ctx) override;

 private:
  LogFileSource() = default;
  std::vector<std::string> bases_;
  bool single_ = false;
  std::string chosen_;
};

// The rotated siblings of `base` that exist, oldest first, then `base` itself
// if it exists: base.N[.gz] by descending N, base-DATE[.gz] by ascending date.
std::vector<std::string> RotatedFamily(const std::string& base);

// Reads one file (plain or gzip, detected by content) into `parser`.
// Errors: "not_found"; "unreadable" (the message names the file and the
// problem) for a file that cannot be opened or read, a directory, a gzip
// stream that ends early (truncated) or is damaged (bad CRC, bad data), a
// file compressed otherwise (xz, zstd, bzip2, lz4, zip), and one that is not
// text (NotTextReason of its first block, after gunzip). An unreadable file
// is never "no events". Events of a gzip file read before the damage have
// reached `parser` by then (a caller that keeps going, as the rotated
// families do, keeps them); a binary file gives the parser nothing.
Status ReadLogFile(const std::string& path, NvrmParser& parser, std::vector<std::string>* warnings);

// Why `block` (the first bytes of a file) is not a text log, or empty when it
// is: more than a tenth of it (and more than one byte) NUL bytes, control
// bytes other than tab, line ends, form feed, backspace and ESC, or bytes
// that are not UTF-8. One stray byte in a real log keeps it text.
std::string NotTextReason(std::string_view block);

// ---------------------------------------------------------------------------

// When the running kernel's clock read 0, as wall time: now minus the
// monotonic clock. Both the kernel's own stamps and CLOCK_MONOTONIC leave out
// time spent suspended, so this places a stamp right after a suspend, where
// /proc/stat's btime (the boot's real start) would place it early by the
// time suspended. The one place a kernel time of the running boot becomes a
// wall time: /dev/kmsg records here, and the renderers' placing of a file
// shown to be of this boot.
int64_t RunningBootStartUnixMs(const Clock& clock);

struct ReadOptions {
  std::string kernel_log_file;  // When set: read only this file.
  Opt<int64_t> since_unix_ms;   // Drop events older than this (unknown times are kept).
  // Read every available source and merge them (history across boots), or
  // stop at the first source that can be read.
  bool all_sources = true;
  int journal_timeout_ms = 10'000;
  const Clock* clock = nullptr;  // nullptr: the real clock.
  // The running boot: start (default: RunningBootStartUnixMs) and id
  // (default: read from boot_id_path).
  Opt<int64_t> boot_time_unix_ms;
  std::string boot_id_path = "/proc/sys/kernel/random/boot_id";
  // Replaces the default chain (tests); not owned.
  std::vector<KernelLogSource*> sources;
};

struct SourceReport {
  std::string name;
  std::string status;  // "used", "unavailable", "failed", "not_tried".
  std::string reason;  // Why unavailable / failed; warnings of a used source.
  size_t events = 0;   // Events it contributed after de-duplication.
};

struct ReadResult {
  std::vector<KernelEvent> events;  // Chronological.
  std::vector<SourceReport> sources;
  std::vector<std::string> used;  // Names of the sources that were read.
};

// Reads kernel events. Merging: events of later sources that duplicate an
// event of an earlier source (same kind, bus, Xid and text, within 5 s, or
// same boot and kernel time) are dropped; file boots ("<file>#n") that fall
// into a boot known by id (kmsg, journal) by time take that id; one "boot"
// event is kept per boot. Error "unavailable" when no source could be read
// (the message lists every reason), or the explicit file's error.
Result<ReadResult> ReadKernelEvents(const ReadOptions& options);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_SOURCES_H_
