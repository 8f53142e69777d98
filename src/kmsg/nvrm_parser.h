// The NVRM parser: turns kernel-log text into KernelEvents.
//
// It understands every NVRM message form the driver has printed (Xid lines of
// all eras incl. MIG, fallen-off-the-bus notices, RmInitAdapter failures, GSP
// RPC timeouts, crash-dump notices, GPU UUID / serial announcements) behind
// every timestamp prefix a kernel log carries (see log_prefix.h), whether the
// text comes as file lines, /dev/kmsg records or journal entries (whose one
// MESSAGE may hold several lines).
//
// Speed contract: lines are never split one by one. A SIMD scan finds "NVRM"
// and "Linux version" in the buffer; only those lines are looked at, so a
// buffer of ordinary kernel lines is read at memory speed. No regex anywhere.
//
// Robustness contract: any byte sequence is accepted. A line longer than
// kMaxLineBytes is cut to that length (counted in ParseStats::truncated_lines);
// "NVRM" later than kMaxPrefixBytes into a line is not a driver message;
// unknown NVRM forms are skipped (ParseStats::unrecognised_lines). Nothing
// throws.
//
// Boots: a `Linux version` line, journalctl's "-- Boot <id> --" or
// "-- Reboot --" line (they survive `-p warning`, which drops the banner), or
// (in text) a kernel timestamp that goes back by more than a second, starts a
// new boot: an event of kind "boot" is emitted and later events carry the new
// boot_id ("<boot_prefix>#<n>"), unless ParseOptions::boot_id pins the one
// boot the text belongs to (/dev/kmsg). A banner or a clock going back right
// after a marker belongs to the boot the marker opened.
#ifndef GPUWARDEN_KMSG_NVRM_PARSER_H_
#define GPUWARDEN_KMSG_NVRM_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kmsg/kernel_event.h"
#include "kmsg/log_prefix.h"

namespace gw::kmsg {

// The printk limit is ~1 KiB; anything beyond 4 KiB is not a driver line.
inline constexpr size_t kMaxLineBytes = 4096;
// "NVRM:" must start within this many bytes of its line.
inline constexpr size_t kMaxPrefixBytes = 512;

struct ParseOptions {
  std::string source = "file";  // Copied into KernelEvent::source.
  // When set, every event belongs to this boot (no boot counting).
  std::string boot_id;
  // Boot ids counted in text are "<boot_prefix>#<n>"; empty = `source`.
  std::string boot_prefix;
  // Wall time at which the logged boot started: turns monotonic-only stamps
  // (dmesg, /dev/kmsg) into wall times. Unknown for a file from elsewhere.
  Opt<int64_t> boot_time_unix_ms;
  // "Now" for the text (a file's mtime): the year of syslog stamps.
  int64_t reference_unix_ms = 0;
};

struct ParseStats {
  uint64_t candidate_lines = 0;     // Lines holding "NVRM" or "Linux version".
  uint64_t events = 0;              // Events emitted (boot events included).
  uint64_t truncated_lines = 0;     // Candidate lines cut at kMaxLineBytes.
  uint64_t unrecognised_lines = 0;  // NVRM lines of no known form (skipped).
};

// Metadata of one journal entry (journalctl -o json).
struct JournalEntryMeta {
  Opt<int64_t> realtime_us;   // __REALTIME_TIMESTAMP
  Opt<int64_t> monotonic_us;  // _SOURCE_MONOTONIC_TIMESTAMP (kernel time), else __MONOTONIC_
  std::string boot_id;        // _BOOT_ID
};

// A streaming parser. Feed text in order (any mix of the Feed* calls), then
// TakeEvents. Messages that span lines are assembled across Feed calls.
class NvrmParser {
 public:
  explicit NvrmParser(ParseOptions options);

  // Parses the complete lines of `text`, which must start at a line start.
  // Returns how many bytes were consumed: up to the start of the last,
  // incomplete line (the caller prepends it to the next chunk); all of `text`
  // when `final` (the last line needs no newline).
  size_t FeedText(std::string_view text, bool final);

  // The first bytes of a line too long for the caller's buffer (the rest of
  // the line is dropped by the caller).
  void FeedOverlongLine(std::string_view head);

  // One /dev/kmsg record: "pri,seq,usec,flags[,...];message\n KEY=value\n...".
  // Escapes (\xNN) in the message are decoded; an escaped newline splits it.
  void FeedKmsgRecord(std::string_view record);

  // One journal entry's MESSAGE (possibly several lines).
  void FeedJournalMessage(std::string_view message, const JournalEntryMeta& meta);

  // Continues with the next file of the same log (rotated files, oldest
  // first): events get the new `source`; boot counting and multi-line state
  // carry on.
  void NextFile(std::string source, int64_t reference_unix_ms);

  // Returns the events parsed so far (multi-line messages still waiting for
  // their continuation are completed first) and clears them.
  std::vector<KernelEvent> TakeEvents();

  const ParseStats& stats() const { return stats_; }

 private:
  struct Times {
    Opt<int64_t> time_unix_ms;
    Opt<double> monotonic_s;
    bool time_from_boot_start = false;  // KernelEvent::time_from_boot_start.
  };
  enum class PendingKind { kNone, kProbe, kCrashDump, kRmInit, kSerial };

  void ProcessTextLine(std::string_view line, size_t hit);
  void ProcessMessageLines(std::string_view message, const Times& t, std::string_view raw_head);
  void HandleBody(std::string_view body, const Times& t, std::string_view raw);
  bool TryContinuation(std::string_view body, std::string_view raw);
  void HandleBoot(std::string_view body, const Times& t, std::string_view raw, bool inferred);
  // "-- Boot <id> --" / "-- Reboot --" at the start of a line (journalctl).
  void HandleJournalMarker(std::string_view line, const Times& t, std::string_view raw);
  // Starts a new boot with a "boot" event saying why; a `Linux version` line
  // or a clock going back right after a journal marker is the same boot.
  void StartBoot(const Times& t, std::string_view raw, std::string detail, bool from_marker);
  void HandleXid(std::string_view rest, const Times& t, std::string_view raw);
  void HandleGpuMessage(std::string_view body, const Times& t, std::string_view raw,
                        const std::string& rm_reason);
  void StartPending(PendingKind kind, KernelEvent ev, std::string_view text);
  void FlushPending(const Opt<std::string>& pci_hint = std::nullopt);
  KernelEvent NewEvent(const char* kind, const Times& t, std::string_view raw) const;
  void Emit(KernelEvent ev);
  std::string CurrentBootId() const;

  ParseOptions options_;
  PrefixContext prefix_ctx_;
  LocalTimeConverter local_;
  ParseStats stats_;
  std::vector<KernelEvent> events_;

  // Boots (text mode).
  unsigned boot_index_ = 0;
  bool seen_in_boot_ = false;
  bool boot_marked_ = false;  // The last event is the boot a journal marker opened.
  Opt<double> last_monotonic_;
  std::string journal_boot_id_;  // Boot of the journal entry being fed.

  // Multi-line messages.
  PendingKind pending_kind_ = PendingKind::kNone;
  KernelEvent pending_;
  std::string pending_text_;
  int pending_lines_ = 0;
  bool pending_complete_ = false;

  // Context carried between lines.
  Opt<std::string> last_uuid_pci_;               // Bus of a `GPU at PCI:` line just seen.
  std::string rm_init_reason_;                   // `RmInitAdapter: <reason>` just seen.
  std::map<unsigned, std::string> gsp_gpu_bus_;  // Driver's "GPUn" -> bus id.
};

// Parses a whole log held in memory.
std::vector<KernelEvent> ParseKernelLog(std::string_view text, const ParseOptions& options);

// The N of a kKindProbeFailed event ("... failed for N device(s)."); nullopt
// for other events or a count that cannot be read.
Opt<unsigned> ProbeFailedDevices(const KernelEvent& ev);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_NVRM_PARSER_H_
