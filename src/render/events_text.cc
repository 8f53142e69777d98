#include "render/events_text.h"

#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "core/pci_address.h"
#include "core/text.h"
#include "kmsg/xid_catalog.h"
#include "render/events_explain.h"
#include "render/styled_line.h"

namespace gw::render {
namespace {

using kmsg::KernelEvent;

// "GPU 5 (PCI 0000:bb:00)"; an address no GPU of the snapshot has stays an
// address, and says so when there was a snapshot to look in.
std::string GpuLabel(const std::optional<std::string>& bus, const EventsContext& ctx) {
  if (!bus) return "GPU ?";
  const std::optional<PciAddress> slot = ParsePciSlot(*bus);
  if (!slot) return SanitizeForTerminal(*bus);
  if (const std::optional<unsigned> idx = GpuIndexForBusId(ctx, bus)) {
    return GpuWithPci(*idx, slot);
  }
  return fmt::format("PCI {}{}", slot->KernelText(), ctx.gpus ? " (no GPU listed)" : "");
}

std::string LastBootId(const std::vector<KernelEvent>& events) {
  return events.empty() ? std::string() : events.back().boot_id;
}

std::string WhatLabel(const KernelEvent& ev) {
  if (ev.kind == kmsg::kKindXid && ev.xid) {
    const kmsg::XidInfo info = kmsg::LookupXid(*ev.xid);
    // Codes without an NVIDIA mnemonic get their name in the same style.
    std::string mnemonic =
        info.mnemonic.empty() ? AsciiUpper(info.name) : std::string(info.mnemonic);
    std::replace(mnemonic.begin(), mnemonic.end(), ' ', '_');
    // NVIDIA prefixes most names with the reporting unit; the rest says it.
    constexpr std::string_view kUnit = "ROBUST_CHANNEL_";
    if (mnemonic.size() > kUnit.size() && mnemonic.starts_with(kUnit)) {
      mnemonic.erase(0, kUnit.size());
    }
    return fmt::format("Xid {} {}", *ev.xid, mnemonic);
  }
  return std::string(EventKindTitle(ev.kind));
}

std::string ProcessLabel(const KernelEvent& ev) {
  if (!ev.pid && !ev.process_name) return "";
  std::string out = ev.pid ? fmt::format("pid {}", *ev.pid) : std::string("pid ?");
  if (ev.process_name) out += " " + SanitizeForTerminal(*ev.process_name);
  return out;
}

// A key naming what an event is, for explaining each kind once.
std::string ExplainKey(const KernelEvent& ev) {
  if (ev.kind == kmsg::kKindXid && ev.xid) return fmt::format("xid {}", *ev.xid);
  return ev.kind;
}

std::string JoinSanitised(const std::vector<std::string>& list) {
  std::vector<std::string> out;
  for (const std::string& s : list) out.push_back(SanitizeForTerminal(s));
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

std::optional<unsigned> GpuIndexForBusId(const EventsContext& context,
                                         const std::optional<std::string>& pci_bus_id) {
  if (!pci_bus_id || !context.gpus) return std::nullopt;
  return context.gpus->GpuAt(*pci_bus_id);
}

EventWallTime PlaceEventInTime(const KernelEvent& ev, const EventsContext& context,
                               std::string_view last_boot_id) {
  EventWallTime out;
  if (ev.time_unix_ms) {
    out.unix_ms = ev.time_unix_ms;
    out.source = ev.time_from_boot_start ? kTimeFromBootStart : kTimeFromLog;
    return out;
  }
  const bool running = context.running_boot_ids.count(ev.boot_id) > 0;
  if (ev.monotonic_s && running && context.running_boot_start_unix_ms) {
    out.unix_ms = *context.running_boot_start_unix_ms +
                  static_cast<int64_t>(std::llround(*ev.monotonic_s * 1000.0));
    out.source = kTimeFromBootStart;
    return out;
  }
  // The running boot is known and this is not it, or a later boot follows
  // this one in the same log.
  out.other_boot = !running && (!context.running_boot_ids.empty() || ev.boot_id != last_boot_id);
  return out;
}

std::string EventTimeText(const KernelEvent& ev, const EventsContext& context,
                          std::string_view last_boot_id) {
  const EventWallTime when = PlaceEventInTime(ev, context, last_boot_id);
  if (when.unix_ms) return FormatLocalTime(*when.unix_ms);
  if (!ev.monotonic_s) return "time N/A";
  return fmt::format("boot+{:.1f}s ({}; no wall-clock time)", *ev.monotonic_s,
                     when.other_boot ? "another boot" : "boot not matched to this one");
}

std::string RenderEventsText(const std::vector<KernelEvent>& events, const EventsContext& ctx,
                             bool color, int width) {
  width = std::max(width, 1);
  std::string out;
  const auto emit = [&](const StyledLine& l) {
    out += l.Render(width, color);
    out += '\n';
  };
  const auto wrapped = [&](std::string_view text, const std::string& first, int indent, Tone tone) {
    const std::vector<std::string> lines =
        WrapWords(text, width - DisplayWidth(first), width - indent);
    for (size_t i = 0; i < lines.size(); ++i) {
      emit(StyledLine()
               .Add(i == 0 ? first : std::string(static_cast<size_t>(indent), ' '))
               .Add(lines[i], tone));
    }
  };

  // 1. Header.
  const std::string read = ctx.sources_used.empty()
                               ? std::string("no kernel log source could be read")
                               : "NVRM events from " + JoinSanitised(ctx.sources_used);
  wrapped(read, "", 2, Tone::kBold);
  if (!ctx.sources_unavailable.empty()) {
    wrapped(JoinSanitised(ctx.sources_unavailable), "  not read: ", 4, Tone::kDim);
  }
  const std::string last_boot = LastBootId(events);
  const bool unplaced = std::any_of(events.begin(), events.end(), [&](const KernelEvent& ev) {
    return ev.monotonic_s && !PlaceEventInTime(ev, ctx, last_boot).unix_ms;
  });
  if (unplaced) {
    // Say why "boot+N s" has no date: a kernel time counts from a boot whose
    // start only the running kernel knows.
    wrapped(
        "boot+N s: seconds since that boot. A kernel time gets a wall-clock time only when "
        "its boot is the running one: this machine's own logs, or a file the running "
        "kernel's log (/dev/kmsg) shows to be of this boot.",
        "  times: ", 4, Tone::kDim);
  }

  // 2. The events.
  std::vector<const KernelEvent*> to_explain;
  std::set<std::string> explained;
  const bool any = std::any_of(events.begin(), events.end(),
                               [](const KernelEvent& ev) { return ev.kind != kmsg::kKindBoot; });
  if (!any) {
    emit(StyledLine().Add("no NVRM events", Tone::kGreen));
  } else {
    out += '\n';
    for (const KernelEvent& ev : events) {
      if (ev.kind == kmsg::kKindBoot) {
        emit(StyledLine().Add(fmt::format("{}  --- boot ---", EventTimeText(ev, ctx, last_boot)),
                              Tone::kDim));
        continue;
      }
      const EventMeaning m = ExplainEvent(ev);
      StyledLine l;
      l.Add(EventTimeText(ev, ctx, last_boot), Tone::kDim).Add("  ");
      l.Add(GpuLabel(ev.pci_bus_id, ctx), Tone::kBold).Add("  ");
      l.Add(WhatLabel(ev), m.hardware ? Tone::kRed : Tone::kYellow);
      const std::string proc = ProcessLabel(ev);
      if (!proc.empty()) l.Add("  " + proc);
      const std::string tail = fmt::format("— {}; {} ({})", m.name, m.action, m.actor);
      if (l.Width() + 2 + DisplayWidth(tail) <= width) {
        emit(l.Add("  " + tail));
      } else {
        // Too wide for one line: the meaning goes below rather than being cut.
        emit(l);
        wrapped(tail, "    ", 6, Tone::kPlain);
      }
      if (explained.insert(ExplainKey(ev)).second) to_explain.push_back(&ev);
    }
  }

  // 3. What they mean, each once.
  if (!to_explain.empty()) {
    out += '\n';
    emit(StyledLine().Add("What they mean:", Tone::kBold));
    for (const KernelEvent* ev : to_explain) {
      const EventMeaning m = ExplainEvent(*ev);
      const std::string label = ev->kind == kmsg::kKindXid && ev->xid
                                    ? fmt::format("Xid {}", *ev->xid)
                                    : EventKindTitle(ev->kind);
      wrapped(fmt::format("{}. {} {} Who acts: {}.", m.name, m.meaning, m.advice, m.actor),
              "  " + label + ": ", 4, Tone::kPlain);
    }
  }

  // 4. Escalations.
  if (!ctx.escalations.empty()) {
    out += '\n';
    emit(StyledLine().Add("Patterns across events:", Tone::kBold));
    for (const kmsg::Escalation& e : ctx.escalations) {
      std::vector<std::string> gpus;
      for (const std::string& bus : e.pci_bus_ids) {
        gpus.push_back(GpuLabel(bus, ctx));
      }
      std::string kind(kmsg::EscalationKindName(e.kind));
      std::replace(kind.begin(), kind.end(), '_', ' ');
      wrapped(fmt::format("{}: {}", fmt::join(gpus, ", "), SanitizeForTerminal(e.reason)),
              "  ! " + kind + ": ", 4,
              e.kind == kmsg::EscalationKind::kHardwareInspection ? Tone::kRed : Tone::kYellow);
    }
  }
  return out;
}

}  // namespace gw::render
