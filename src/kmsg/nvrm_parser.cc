#include "kmsg/nvrm_parser.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/pci_address.h"
#include "kmsg/scan.h"

namespace gw::kmsg {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}
std::string_view Trim(std::string_view s) {
  s = TrimLeft(s);
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '\0')) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads up to `max_digits` decimal digits at the start of `s`.
Opt<uint64_t> ReadDecimal(std::string_view s, size_t* used, int max_digits) {
  uint64_t v = 0;
  size_t i = 0;
  while (i < s.size() && i < static_cast<size_t>(max_digits) && s[i] >= '0' && s[i] <= '9') {
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
    ++i;
  }
  if (i == 0) return std::nullopt;
  *used = i;
  return v;
}

// "... minor number 3" -> 3.
Opt<unsigned> MinorNumber(std::string_view s) {
  const size_t m = s.find("minor number ");
  if (m == std::string_view::npos) return std::nullopt;
  size_t used = 0;
  if (auto v = ReadDecimal(s.substr(m + 13), &used, 6)) return static_cast<unsigned>(*v);
  return std::nullopt;
}

// A PCI address at the start of `s` (core/pci_address.h gives the forms), in
// NVML's spelling, the one every KernelEvent holds. Sets *used to its length.
Opt<std::string> ReadPci(std::string_view s, size_t* used) {
  const Opt<PciAddressRead> read = ReadPciAddress(s);
  if (!read) return std::nullopt;
  *used = read->length;
  return read->address.ToString();
}

// Decodes the \xNN escapes /dev/kmsg puts in place of control bytes.
std::string UnescapeKmsg(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' && HexValue(s[i + 2]) >= 0 &&
        HexValue(s[i + 3]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 2]) * 16 + HexValue(s[i + 3])));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string CapLine(std::string_view s) { return std::string(s.substr(0, kMaxLineBytes)); }

// Starts of messages that can never continue another one.
bool IsProbeContinuation(std::string_view body, std::string_view text_so_far) {
  static constexpr std::string_view kStarts[] = {"(PCI ID",          "installed in this system",
                                                 "fallen off",       "not responding",
                                                 "is not supported", "not supported by"};
  for (auto s : kStarts) {
    if (StartsWith(body, s)) return true;
  }
  // "... is not supported by the" / "NVIDIA 470.xx driver release."
  return StartsWith(body, "NVIDIA ") && Trim(text_so_far).ends_with("by the");
}

}  // namespace

NvrmParser::NvrmParser(ParseOptions options) : options_(std::move(options)) {
  if (options_.boot_prefix.empty()) options_.boot_prefix = options_.source;
  prefix_ctx_.boot_time_unix_ms = options_.boot_time_unix_ms;
  prefix_ctx_.reference_unix_ms = options_.reference_unix_ms;
}

void NvrmParser::NextFile(std::string source, int64_t reference_unix_ms) {
  options_.source = std::move(source);
  prefix_ctx_.reference_unix_ms = reference_unix_ms;
}

std::string NvrmParser::CurrentBootId() const {
  if (!journal_boot_id_.empty()) return journal_boot_id_;
  if (!options_.boot_id.empty()) return options_.boot_id;
  return options_.boot_prefix + "#" + std::to_string(boot_index_);
}

KernelEvent NvrmParser::NewEvent(const char* kind, const Times& t, std::string_view raw) const {
  KernelEvent ev;
  ev.time_unix_ms = t.time_unix_ms;
  ev.time_from_boot_start = t.time_from_boot_start && t.time_unix_ms.has_value();
  ev.monotonic_s = t.monotonic_s;
  ev.kind = kind;
  ev.raw = CapLine(raw);
  ev.source = options_.source;
  ev.boot_id = CurrentBootId();
  return ev;
}

void NvrmParser::Emit(KernelEvent ev) {
  seen_in_boot_ = true;
  boot_marked_ = false;
  ++stats_.events;
  events_.push_back(std::move(ev));
}

std::vector<KernelEvent> NvrmParser::TakeEvents() {
  FlushPending();
  std::vector<KernelEvent> out = std::move(events_);
  events_.clear();
  return out;
}

// ---------------------------------------------------------------------------
// Feeding.

size_t NvrmParser::FeedText(std::string_view text, bool final) {
  const char* data = text.data();
  const size_t n = text.size();
  size_t pos = 0;  // Always a line start.
  while (true) {
    const size_t hit = internal::FindCandidate(text, pos);
    if (hit >= n) break;
    const void* ls = hit > pos ? memrchr(data + pos, '\n', hit - pos) : nullptr;
    const size_t line_start =
        ls ? static_cast<size_t>(static_cast<const char*>(ls) - data) + 1 : pos;
    const void* le = std::memchr(data + hit, '\n', n - hit);
    if (le == nullptr && !final) return line_start;  // Incomplete: the caller carries it.
    const size_t line_end = le ? static_cast<size_t>(static_cast<const char*>(le) - data) : n;
    ProcessTextLine(text.substr(line_start, line_end - line_start), hit - line_start);
    pos = le ? line_end + 1 : n;
  }
  if (final || pos >= n) return n;
  const void* last = memrchr(data + pos, '\n', n - pos);
  return last ? static_cast<size_t>(static_cast<const char*>(last) - data) + 1 : pos;
}

void NvrmParser::FeedOverlongLine(std::string_view head) {
  const size_t hit = internal::FindCandidate(head, 0);
  if (hit < head.size()) ProcessTextLine(head, hit);
}

void NvrmParser::ProcessTextLine(std::string_view line, size_t hit) {
  ++stats_.candidate_lines;
  if (hit > kMaxPrefixBytes) return;  // "NVRM" deep inside some other text.
  if (line.size() > kMaxLineBytes) {
    line = line.substr(0, kMaxLineBytes);
    ++stats_.truncated_lines;
  }
  if (line[hit] == '-') {
    // A journal marker counts only as a whole line; elsewhere it is prose,
    // and an NVRM message later on the line is still looked at.
    if (Trim(line.substr(0, hit)).empty() && options_.boot_id.empty()) {
      HandleJournalMarker(Trim(line.substr(hit)), Times{}, line);
      return;
    }
  }
  size_t nv = line.find("NVRM:", hit);
  size_t lv = line.find("Linux version ", hit);
  if (nv > kMaxPrefixBytes) nv = std::string_view::npos;
  if (lv > kMaxPrefixBytes) lv = std::string_view::npos;
  if (nv == std::string_view::npos && lv == std::string_view::npos) return;
  const bool is_nvrm = nv < lv;
  const size_t at = is_nvrm ? nv : lv;
  if (at > 0 && std::string_view(" \t]:;>").find(line[at - 1]) == std::string_view::npos) return;
  const LinePrefix lp = ParseLinePrefix(line.substr(0, at), prefix_ctx_, local_);
  if (!lp.from_kernel) return;
  const Times t{lp.time_unix_ms, lp.monotonic_s, lp.time_from_boot_start};
  if (!is_nvrm) {
    HandleBoot(line.substr(at), t, line, false);
    return;
  }
  if (lp.monotonic_s && options_.boot_id.empty()) {
    if (last_monotonic_ && *lp.monotonic_s + 1.0 < *last_monotonic_) {
      HandleBoot({}, t, line, true);
    }
    last_monotonic_ = lp.monotonic_s;
  }
  HandleBody(Trim(line.substr(at + 5)), t, line);
}

void NvrmParser::FeedKmsgRecord(std::string_view record) {
  const size_t semi = record.find(';');
  if (semi == std::string_view::npos || semi > 128) return;
  const auto usec = ParseKmsgHeaderUsec(record.substr(0, semi));
  if (!usec) return;
  std::string_view msg = record.substr(semi + 1);
  msg = msg.substr(0, msg.find('\n'));  // " KEY=value" dictionary lines follow.
  if (internal::FindCandidate(msg, 0) >= msg.size() && pending_kind_ == PendingKind::kNone) {
    return;
  }
  ++stats_.candidate_lines;
  Times t;
  t.monotonic_s = static_cast<double>(*usec) / 1e6;
  if (options_.boot_time_unix_ms) {
    t.time_unix_ms = *options_.boot_time_unix_ms + *usec / 1000;
    t.time_from_boot_start = true;
  }
  ProcessMessageLines(UnescapeKmsg(msg), t, record.substr(0, semi + 1));
}

void NvrmParser::FeedJournalMessage(std::string_view message, const JournalEntryMeta& meta) {
  if (internal::FindCandidate(message, 0) >= message.size() &&
      pending_kind_ == PendingKind::kNone) {
    return;
  }
  ++stats_.candidate_lines;
  Times t;
  if (meta.realtime_us) t.time_unix_ms = *meta.realtime_us / 1000;
  if (meta.monotonic_us) t.monotonic_s = static_cast<double>(*meta.monotonic_us) / 1e6;
  journal_boot_id_ = meta.boot_id;
  ProcessMessageLines(message, t, {});
  journal_boot_id_.clear();
}

void NvrmParser::ProcessMessageLines(std::string_view message, const Times& t,
                                     std::string_view raw_head) {
  bool first = true;
  while (true) {
    const size_t nl = message.find('\n');
    std::string_view sub = message.substr(0, nl);
    if (sub.size() > kMaxLineBytes) {
      sub = sub.substr(0, kMaxLineBytes);
      ++stats_.truncated_lines;
    }
    std::string raw = first ? std::string(raw_head) + std::string(sub) : std::string(sub);
    first = false;
    const std::string_view line = TrimLeft(sub);
    if (StartsWith(line, "NVRM:")) {
      HandleBody(Trim(line.substr(5)), t, raw);
    } else if (StartsWith(line, "Linux version ")) {
      HandleBoot(line, t, raw, false);
    } else if (pending_kind_ != PendingKind::kNone && !Trim(line).empty()) {
      // A journal entry may carry the later lines of a message without their
      // "NVRM: " prefix.
      if (!TryContinuation(Trim(line), raw)) FlushPending();
    }
    if (nl == std::string_view::npos) break;
    message.remove_prefix(nl + 1);
  }
}

// ---------------------------------------------------------------------------
// Messages.

void NvrmParser::HandleBoot(std::string_view body, const Times& t, std::string_view raw,
                            bool inferred) {
  std::string detail;
  if (inferred) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "new boot inferred: the kernel clock went back from %.6f s to %.6f s",
                  last_monotonic_.value_or(0.0), t.monotonic_s.value_or(0.0));
    detail = buf;
  } else {
    // "Linux version 6.1.0-18-amd64 (debian-kernel@...) ...": keep the version.
    if (!StartsWith(body, "Linux version ")) return;
    std::string_view v = body.substr(14);
    if (v.empty() || v[0] < '0' || v[0] > '9') return;  // Prose, not the banner.
    v = v.substr(0, v.find(' '));
    detail = "Linux version " + std::string(v.substr(0, 128));
  }
  StartBoot(t, raw, std::move(detail), /*from_marker=*/false);
}

void NvrmParser::HandleJournalMarker(std::string_view line, const Times& t, std::string_view raw) {
  std::string detail;
  if (StartsWith(line, "-- Boot ")) {
    std::string_view id = line.substr(8);
    id = id.substr(0, id.find(' '));
    const bool hex =
        !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) != 0;
        });
    if (!hex) return;
    detail = "journal boot " + std::string(id);
  } else if (StartsWith(line, "-- Reboot --")) {
    detail = "journal reboot marker";
  } else {
    return;
  }
  StartBoot(t, raw, std::move(detail), /*from_marker=*/true);
}

void NvrmParser::StartBoot(const Times& t, std::string_view raw, std::string detail,
                           bool from_marker) {
  FlushPending();
  last_monotonic_ = t.monotonic_s;
  if (boot_marked_ && !from_marker) {
    // journalctl prints the marker, then the boot's first lines: one boot.
    boot_marked_ = false;
    if (!events_.empty() && events_.back().kind == kKindBoot) {
      events_.back().detail += "; " + detail;
      if (!events_.back().time_unix_ms) {
        events_.back().time_unix_ms = t.time_unix_ms;
        events_.back().time_from_boot_start = t.time_from_boot_start;
      }
      if (!events_.back().monotonic_s) events_.back().monotonic_s = t.monotonic_s;
    }
    return;
  }
  if (options_.boot_id.empty() && journal_boot_id_.empty() && seen_in_boot_) ++boot_index_;
  KernelEvent ev = NewEvent(kKindBoot, t, raw);
  ev.detail = std::move(detail);
  Emit(std::move(ev));
  boot_marked_ = from_marker;
}

void NvrmParser::HandleBody(std::string_view body, const Times& t, std::string_view raw) {
  // Context that only the very next message may use.
  const Opt<std::string> uuid_pci = std::move(last_uuid_pci_);
  last_uuid_pci_.reset();
  const std::string rm_reason = std::move(rm_init_reason_);
  rm_init_reason_.clear();

  if (pending_kind_ != PendingKind::kNone && pending_kind_ != PendingKind::kSerial &&
      TryContinuation(body, raw)) {
    return;
  }
  if (StartsWith(body, "Xid (")) {
    HandleXid(body.substr(5), t, raw);  // Flushes with its bus id (for a pending serial).
    return;
  }
  FlushPending();

  if (StartsWith(body, "GPU Board Serial Number:")) {
    KernelEvent ev = NewEvent(kKindBoardSerial, t, raw);
    ev.detail = std::string(Trim(body.substr(24)));
    ev.pci_bus_id = uuid_pci;
    if (ev.pci_bus_id) {
      Emit(std::move(ev));
    } else {
      StartPending(PendingKind::kSerial, std::move(ev), body);  // The next Xid names the GPU.
    }
    return;
  }
  if (StartsWith(body, "GPU")) {
    HandleGpuMessage(body, t, raw, rm_reason);
    return;
  }
  if (StartsWith(body, "The NVIDIA GPU ")) {
    KernelEvent ev = NewEvent(kKindFallenOffBus, t, raw);
    size_t used = 0;
    ev.pci_bus_id = ReadPci(body.substr(15), &used);
    StartPending(PendingKind::kProbe, std::move(ev), body);
    if (body.ends_with(".")) FlushPending();  // The older one-line form.
    return;
  }
  if (StartsWith(body, "A GPU crash dump has been created")) {
    StartPending(PendingKind::kCrashDump, NewEvent(kKindCrashDump, t, raw), body);
    if (Contains(body, "unloaded")) FlushPending();
    return;
  }
  if (StartsWith(body, "RmInitAdapter failed!")) {
    KernelEvent ev = NewEvent(kKindRmInitAdapterFailed, t, raw);
    ev.detail = std::string(body);
    if (!rm_reason.empty()) ev.detail += "; " + rm_reason;
    StartPending(PendingKind::kRmInit, std::move(ev), body);
    return;
  }
  if (StartsWith(body, "RmInitAdapter: ")) {
    rm_init_reason_ = std::string(Trim(body.substr(15)).substr(0, 256));
    return;
  }
  if (StartsWith(body, "rm_init_adapter failed")) {  // Follow-up without its first line.
    KernelEvent ev = NewEvent(kKindRmInitAdapterFailed, t, raw);
    ev.detail = std::string(body);
    ev.minor_number = MinorNumber(body);
    Emit(std::move(ev));
    return;
  }
  if (StartsWith(body, "loading NVIDIA UNIX ")) {
    KernelEvent ev = NewEvent(kKindDriverLoad, t, raw);
    ev.detail = std::string(Trim(body.substr(8)).substr(0, 256));
    Emit(std::move(ev));
    return;
  }
  if (StartsWith(body, "The NVIDIA probe routine failed for ")) {
    KernelEvent ev = NewEvent(kKindProbeFailed, t, raw);
    ev.detail = std::string(body.substr(0, 256));
    Emit(std::move(ev));
    return;
  }
  if (StartsWith(body, "No NVIDIA graphics adapter probed!")) {
    KernelEvent ev = NewEvent(kKindNoAdapterProbed, t, raw);
    ev.detail = std::string(body);
    Emit(std::move(ev));
    return;
  }
  if (StartsWith(body, "os_schedule: Attempted to yield the CPU while in atomic")) {
    KernelEvent ev = NewEvent(kKindOsScheduleAtomic, t, raw);
    ev.detail = std::string(body);
    Emit(std::move(ev));
    return;
  }
  if (StartsWith(body, "Rate limiting GSP RPC error prints for GPU at ")) {
    KernelEvent ev = NewEvent(kKindGspRpcRateLimited, t, raw);
    std::string_view at = body.substr(46);
    if (StartsWith(at, "PCI:")) at.remove_prefix(4);
    size_t used = 0;
    ev.pci_bus_id = ReadPci(at, &used);
    ev.detail = std::string(body);
    Emit(std::move(ev));
    return;
  }
  ++stats_.unrecognised_lines;
}

void NvrmParser::HandleXid(std::string_view rest, const Times& t, std::string_view raw) {
  const size_t close = rest.find(')');
  if (close == std::string_view::npos) {
    FlushPending();
    ++stats_.unrecognised_lines;
    return;
  }
  KernelEvent ev = NewEvent(kKindXid, t, raw);
  // Inside the parentheses: [PCI:]dddd:bb:dd [GPU-I:nn] [GPU-CI:nn].
  std::string_view inside = rest.substr(0, close);
  if (StartsWith(inside, "PCI:")) inside.remove_prefix(4);
  size_t used = 0;
  ev.pci_bus_id = ReadPci(inside, &used);
  if (const size_t gi = inside.find("GPU-I:"); gi != std::string_view::npos) {
    if (auto v = ReadDecimal(inside.substr(gi + 6), &used, 5)) ev.gpu_instance = *v;
  }
  if (const size_t ci = inside.find("GPU-CI:"); ci != std::string_view::npos) {
    if (auto v = ReadDecimal(inside.substr(ci + 7), &used, 5)) ev.compute_instance = *v;
  }
  std::string_view s = rest.substr(close + 1);
  if (!StartsWith(s, ":")) {
    FlushPending();
    ++stats_.unrecognised_lines;
    return;
  }
  s = TrimLeft(s.substr(1));
  const auto xid = ReadDecimal(s, &used, 6);
  if (!xid || (used < s.size() && s[used] >= '0' && s[used] <= '9')) {
    FlushPending();
    ++stats_.unrecognised_lines;
    return;
  }
  ev.xid = static_cast<unsigned>(*xid);
  s = s.substr(used);
  if (StartsWith(s, ",")) s.remove_prefix(1);
  s = TrimLeft(s);
  // `pid=%s, name=%s, %s` (R515+), `pid=%s, %s` (R4xx), or neither (older).
  if (StartsWith(s, "pid=")) {
    const size_t comma = s.find(',');
    const std::string_view v =
        Trim(s.substr(4, comma == std::string_view::npos ? s.npos : comma - 4));
    size_t n = 0;
    if (auto pid = ReadDecimal(v, &n, 10); pid && n == v.size()) ev.pid = static_cast<long>(*pid);
    s = comma == std::string_view::npos ? std::string_view{} : TrimLeft(s.substr(comma + 1));
  }
  if (StartsWith(s, "name=")) {
    const size_t sep = s.find(", ");
    const std::string_view v = Trim(s.substr(5, sep == std::string_view::npos ? s.npos : sep - 5));
    if (!v.empty() && v != "<unknown>") ev.process_name = std::string(v);
    s = sep == std::string_view::npos ? std::string_view{} : TrimLeft(s.substr(sep + 2));
  }
  ev.detail = std::string(Trim(s));
  // "... waiting for RPC response from GPU4 GSP!": the driver's GPU number,
  // which later GSP lines use instead of the bus id.
  if (ev.pci_bus_id) {
    if (const size_t g = ev.detail.find("from GPU"); g != std::string::npos) {
      if (auto n = ReadDecimal(std::string_view(ev.detail).substr(g + 8), &used, 4)) {
        gsp_gpu_bus_[static_cast<unsigned>(*n)] = *ev.pci_bus_id;
      }
    }
  }
  FlushPending(ev.pci_bus_id);
  Emit(std::move(ev));
}

void NvrmParser::HandleGpuMessage(std::string_view body, const Times& t, std::string_view raw,
                                  const std::string& rm_reason) {
  size_t used = 0;
  // "GPU at PCI:0000:9b:00: GPU-<uuid>", the same without "PCI:" (as NVIDIA's
  // Xid documentation prints it), and "GPU at 0000:01:00.0 has fallen off the
  // bus." (older drivers).
  if (StartsWith(body, "GPU at ")) {
    std::string_view s = body.substr(7);
    const bool pci_prefix = StartsWith(s, "PCI:");
    if (pci_prefix) s.remove_prefix(4);
    auto pci = ReadPci(s, &used);
    std::string_view rest = s.substr(used);
    if (StartsWith(rest, ":")) rest.remove_prefix(1);
    rest = TrimLeft(rest);
    if (pci && StartsWith(rest, "GPU-")) {
      KernelEvent ev = NewEvent(kKindGpuUuid, t, raw);
      ev.pci_bus_id = pci;
      ev.detail = std::string(rest.substr(0, rest.find(' ')));
      last_uuid_pci_ = pci;
      Emit(std::move(ev));
      return;
    }
    if (pci && !pci_prefix && Contains(body, "fallen off the bus")) {
      KernelEvent ev = NewEvent(kKindFallenOffBus, t, raw);
      ev.pci_bus_id = pci;
      ev.detail = std::string(body);
      Emit(std::move(ev));
      return;
    }
    ++stats_.unrecognised_lines;
    return;
  }
  // "GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data ...".
  if (body.size() > 3 && body[3] >= '0' && body[3] <= '9') {
    const auto n = ReadDecimal(body.substr(3), &used, 4);
    if (n && StartsWith(body.substr(3 + used), " GSP RPC buffer contains function")) {
      KernelEvent ev = NewEvent(kKindGspRpcTimeout, t, raw);
      if (auto it = gsp_gpu_bus_.find(static_cast<unsigned>(*n)); it != gsp_gpu_bus_.end()) {
        ev.pci_bus_id = it->second;
      }
      ev.detail = std::string(body);
      Emit(std::move(ev));
      return;
    }
    ++stats_.unrecognised_lines;  // RPC history tables and the like.
    return;
  }
  // Device-prefixed messages: "GPU 0000:5d:00.0: <message>".
  if (StartsWith(body, "GPU ")) {
    const std::string_view s = body.substr(4);
    auto pci = ReadPci(s, &used);
    if (pci && s.substr(used, 1) == ":") {
      const std::string_view msg = Trim(s.substr(used + 1));
      if (StartsWith(msg, "GPU has fallen off the bus")) {
        KernelEvent ev = NewEvent(kKindFallenOffBus, t, raw);
        ev.pci_bus_id = pci;
        ev.detail = std::string(msg);
        Emit(std::move(ev));
        return;
      }
      if (StartsWith(msg, "RmInitAdapter failed!")) {
        KernelEvent ev = NewEvent(kKindRmInitAdapterFailed, t, raw);
        ev.pci_bus_id = pci;
        ev.detail = std::string(msg);
        if (!rm_reason.empty()) ev.detail += "; " + rm_reason;
        StartPending(PendingKind::kRmInit, std::move(ev), msg);
        return;
      }
      if (StartsWith(msg, "rm_init_adapter failed")) {
        KernelEvent ev = NewEvent(kKindRmInitAdapterFailed, t, raw);
        ev.pci_bus_id = pci;
        ev.detail = std::string(msg);
        ev.minor_number = MinorNumber(msg);
        Emit(std::move(ev));
        return;
      }
      if (StartsWith(msg, "GPU serial number is ")) {
        KernelEvent ev = NewEvent(kKindBoardSerial, t, raw);
        ev.pci_bus_id = pci;
        std::string_view serial = Trim(msg.substr(21));
        if (serial.ends_with(".")) serial.remove_suffix(1);
        ev.detail = std::string(serial);
        Emit(std::move(ev));
        return;
      }
    }
  }
  ++stats_.unrecognised_lines;
}

// ---------------------------------------------------------------------------
// Multi-line messages.

void NvrmParser::StartPending(PendingKind kind, KernelEvent ev, std::string_view text) {
  FlushPending();
  pending_kind_ = kind;
  pending_ = std::move(ev);
  pending_text_ = std::string(text.substr(0, kMaxLineBytes));
  pending_lines_ = 1;
}

bool NvrmParser::TryContinuation(std::string_view body, std::string_view raw) {
  bool done = false;
  switch (pending_kind_) {
    case PendingKind::kProbe:
      if (pending_lines_ >= 4 || !IsProbeContinuation(body, pending_text_)) return false;
      done = body.ends_with(".");
      break;
    case PendingKind::kCrashDump:
      if (!StartsWith(body, "nvidia-bug-report.sh") &&
          !StartsWith(body, "the NVIDIA kernel module is unloaded")) {
        return false;
      }
      done = Contains(body, "unloaded");
      break;
    case PendingKind::kRmInit: {
      // "rm_init_adapter failed for device bearing minor number 0" (old) or
      // "GPU 0000:81:00.0: rm_init_adapter failed, device minor number 0".
      std::string_view msg = body;
      if (StartsWith(body, "GPU ")) {
        size_t used = 0;
        auto pci = ReadPci(body.substr(4), &used);
        if (!pci || (pending_.pci_bus_id && *pci != *pending_.pci_bus_id)) return false;
        if (body.substr(4 + used, 1) != ":") return false;
        msg = Trim(body.substr(4 + used + 1));
        if (!StartsWith(msg, "rm_init_adapter failed")) return false;
        if (!pending_.pci_bus_id) pending_.pci_bus_id = pci;
      }
      if (!StartsWith(msg, "rm_init_adapter failed")) return false;
      pending_.minor_number = MinorNumber(msg);
      if (const size_t m = msg.find("minor number "); m != std::string_view::npos) {
        pending_.detail += "; device minor number " + std::string(Trim(msg.substr(m + 13)));
      }
      done = true;
      break;
    }
    case PendingKind::kSerial:
    case PendingKind::kNone:
      return false;
  }
  pending_text_ += ' ';
  pending_text_ += std::string(body.substr(0, kMaxLineBytes));
  pending_.raw += '\n';
  pending_.raw += CapLine(raw);
  ++pending_lines_;
  if (done) FlushPending();
  return true;
}

void NvrmParser::FlushPending(const Opt<std::string>& pci_hint) {
  const PendingKind kind = pending_kind_;
  if (kind == PendingKind::kNone) return;
  pending_kind_ = PendingKind::kNone;
  KernelEvent ev = std::move(pending_);
  pending_ = KernelEvent{};
  switch (kind) {
    case PendingKind::kProbe:
      if (Contains(pending_text_, "fallen off")) {  // Also when the log is cut short.
        ev.kind = kKindFallenOffBus;
      } else if (Contains(pending_text_, "not supported")) {
        ev.kind = kKindGpuUnsupported;
      } else {
        ++stats_.unrecognised_lines;
        return;
      }
      ev.detail = pending_text_;
      break;
    case PendingKind::kCrashDump:
      ev.detail = pending_text_;
      break;
    case PendingKind::kSerial:
      if (!ev.pci_bus_id) ev.pci_bus_id = pci_hint;
      break;
    case PendingKind::kRmInit:
    case PendingKind::kNone:
      break;
  }
  Emit(std::move(ev));
}

std::vector<KernelEvent> ParseKernelLog(std::string_view text, const ParseOptions& options) {
  NvrmParser parser(options);
  parser.FeedText(text, true);
  return parser.TakeEvents();
}

Opt<unsigned> ProbeFailedDevices(const KernelEvent& ev) {
  constexpr std::string_view kLead = "The NVIDIA probe routine failed for ";
  const std::string_view d = ev.detail;
  if (ev.kind != kKindProbeFailed || !StartsWith(d, kLead)) return std::nullopt;
  size_t used = 0;
  const Opt<uint64_t> n = ReadDecimal(d.substr(kLead.size()), &used, 4);
  if (!n || *n == 0) return std::nullopt;
  return static_cast<unsigned>(*n);
}

}  // namespace gw::kmsg
