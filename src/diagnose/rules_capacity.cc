// Capacity rules: is memory or compute short, and can a stated need be placed.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/health.h"
#include "diagnose/placement.h"
#include "diagnose/rule_context.h"

namespace gw::diagnose::internal {
namespace {

constexpr size_t kTopHolders = 3;

std::string SmText(const GpuProcess& p) {
  return p.sm_util_pct ? fmt::format("SM {} %", *p.sm_util_pct) : std::string("SM ?");
}

// The largest holders of a GPU, as evidence lines and PIDs.
void AddTopHolders(const Snapshot& snapshot, const Gpu& gpu, Finding& f) {
  std::vector<const GpuProcess*> holders;
  for (const GpuProcess& p : gpu.processes) holders.push_back(&p);
  std::sort(holders.begin(), holders.end(), [](const GpuProcess* a, const GpuProcess* b) {
    uint64_t ma = a->used_memory_bytes.value_or(0), mb = b->used_memory_bytes.value_or(0);
    if (ma != mb) return ma > mb;
    return a->pid < b->pid;
  });
  if (holders.size() > kTopHolders) holders.resize(kTopHolders);
  for (const GpuProcess* p : holders) {
    const HostProcess* host = FindHost(snapshot, p->pid);
    std::string text = ProcessText(snapshot, p->pid, host, p);
    text += ": " + (p->used_memory_bytes ? FormatBytes(*p->used_memory_bytes) : "memory ?");
    text += ", " + SmText(*p);
    if (host != nullptr && host->age_s) text += ", up " + FormatDuration(*host->age_s);
    Evidence e = TextEvidence("holder", text);
    if (p->used_memory_bytes) {
      e.number = static_cast<double>(*p->used_memory_bytes);
      e.unit = "bytes";
    }
    f.evidence.push_back(std::move(e));
    f.pids.push_back(p->pid);
  }
  std::sort(f.pids.begin(), f.pids.end());
}

std::string SamplesText(size_t n, double window_s) {
  if (n == 1) return "in the one sample";
  return fmt::format("in all {} samples over {}", n, FormatDuration(window_s));
}

}  // namespace

void RuleVramExhausted(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  for (const Gpu& gpu : ctx.latest().gpus) {
    if (gpu.unreachable || !gpu.memory.total_bytes || !gpu.memory.used_bytes) continue;
    const uint64_t total = *gpu.memory.total_bytes, used = *gpu.memory.used_bytes;
    const double pct = *UsedPct(gpu);
    const Opt<uint64_t> free = FreeBytes(gpu);
    const bool full = VramFull(gpu, o);
    // The placement core keeps a margin free on every GPU (as the queue does).
    // A GPU that could not hold the need even empty (its total less the
    // driver's reservation) is too small, not short now: waiting on it never
    // helps, and NEED_EXCEEDS_SERVER says so when no GPU is big enough.
    const uint64_t wanted = o.need ? o.need->bytes_per_gpu + placement::kDefaultMarginBytes : 0;
    const uint64_t capacity = total - std::min(total, gpu.memory.reserved_bytes.value_or(0));
    const bool short_of_need = o.need && free && *free < wanted && capacity >= wanted;
    if (!full && !short_of_need) continue;

    std::string message =
        full ? fmt::format("GPU {} memory is {} full: {} of {} used, {} free (full below {})",
                           gpu.index, Pct(pct), FormatBytes(used), FormatBytes(total),
                           free ? FormatBytes(*free) : std::string("?"),
                           FormatBytes(FullMarkFreeBytes(total, o)))
             : fmt::format(
                   "GPU {} has {} free, less than the {} per GPU you need and the {} "
                   "kept free",
                   gpu.index, FormatBytes(*free), FormatBytes(o.need->bytes_per_gpu),
                   FormatBytes(placement::kDefaultMarginBytes));
    Finding f = MakeFinding("VRAM_EXHAUSTED", {gpu.index}, {}, std::move(message), Gib(used));
    f.evidence.push_back(NumberEvidence(
        "used", static_cast<double>(used), "bytes",
        fmt::format("{} of {} ({})", FormatBytes(used), FormatBytes(total), Pct(pct))));
    f.evidence.push_back(NumberEvidence("used_pct", pct, "%", Pct(pct)));
    if (free) f.evidence.push_back(BytesEvidence("free", *free));
    f.evidence.push_back(BytesEvidence("full_below_free", FullMarkFreeBytes(total, o)));
    if (o.need) f.evidence.push_back(BytesEvidence("need_per_gpu", o.need->bytes_per_gpu));
    if (!gpu.processes_known) {
      f.evidence.push_back(TextEvidence("holders", "unknown (process list not read)"));
    } else if (gpu.processes.empty()) {
      f.evidence.push_back(TextEvidence("holders", "none listed (see INVISIBLE_HOLDER)"));
    } else {
      AddTopHolders(ctx.latest(), gpu, f);
    }
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleComputeSaturated(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  const Snapshot& latest = ctx.latest();
  std::set<unsigned> saturated;
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    if (!latest.gpus[i].unreachable && SaturatedOverWindow(ctx.Series(i), o)) {
      saturated.insert(latest.gpus[i].index);
    }
  }
  if (saturated.empty()) return;

  // Would the caller's need fit on the GPUs that are not saturated?
  bool need_blocked = false;
  if (o.need) {
    std::vector<GpuRoom> rooms = CollectRooms(latest, {}, {}, out, o.placement);
    for (GpuRoom& room : rooms) {
      if (saturated.count(room.index)) room.usable = false;
    }
    need_blocked = PlaceNeed(*o.need, rooms, latest.topology).outcome != PlacementOutcome::kFits;
  }

  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    if (!saturated.count(gpu.index)) continue;
    std::set<pid_t> pids;
    std::set<std::string> users;
    if (gpu.processes_known) {
      for (const GpuProcess& p : gpu.processes) {
        if (p.type == GpuProcessType::kGraphics) continue;
        pids.insert(p.pid);
        users.insert(UserText(FindHost(latest, p.pid)));
      }
    }
    const bool shared = pids.size() >= 2;

    unsigned min_util = 100, known = 0;
    for (const Gpu* g : ctx.Series(i)) {
      if (g == nullptr || !g->utilization_gpu_pct) continue;
      min_util = std::min(min_util, *g->utilization_gpu_pct);
      ++known;
    }
    // Even with memory left, a GPU whose compute is fully loaded makes new work
    // wait (kernels take turns): one process is enough.
    std::string why = shared ? fmt::format("shared by {} processes of {} user{}", pids.size(),
                                           users.size(), users.size() == 1 ? "" : "s")
                      : pids.size() == 1 ? fmt::format("by one process of {}", *users.begin())
                                         : std::string("by work this view does not list");
    if (need_blocked) {
      why += fmt::format("; your need {} cannot be placed on a GPU that is not saturated",
                         FormatNeed(*o.need));
    }
    Finding f =
        MakeFinding("COMPUTE_SATURATED", {gpu.index}, {pids.begin(), pids.end()},
                    fmt::format("GPU {} was at least {:.0f} % busy {}, {}", gpu.index,
                                o.saturated_util_pct, SamplesText(known, ctx.window_s()), why),
                    1);
    f.evidence.push_back(NumberEvidence(
        "utilization_min", min_util, "%",
        fmt::format("{} % (lowest of {} sample{})", min_util, known, known == 1 ? "" : "s")));
    f.evidence.push_back(NumberEvidence("processes", static_cast<double>(pids.size()), "count",
                                        fmt::format("{}", pids.size())));
    if (gpu.processes_known) {
      f.pids.clear();
      AddTopHolders(latest, gpu, f);
      f.pids.assign(pids.begin(), pids.end());
    }
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleNeed(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  if (!o.need) return;
  const Snapshot& latest = ctx.latest();
  const NeedRequest& need = *o.need;
  // Health from the findings of the rules before this one (health rules run first).
  std::vector<GpuRoom> rooms = CollectRooms(latest, {}, {}, out, o.placement);
  const std::string need_text = FormatNeed(need);
  const double wanted_gib = Gib(need.bytes_per_gpu) * need.gpus;
  if (rooms.empty()) {
    Finding f = MakeFinding(
        "NEED_UNCHECKED", {}, {},
        fmt::format("Your need {} cannot be checked: no GPU could be read", need_text), wanted_gib);
    f.evidence.push_back(TextEvidence("need", need_text));
    StepValues values;
    values.need = need_text;
    AddCatalogSteps(f, values);
    out.push_back(std::move(f));
    return;
  }
  Placement p = PlaceNeed(need, rooms, latest.topology);
  // Every GPU left out, with its reason and the step that brings it back; the
  // GPUs used although a reset waits for them. Totals and counts quoted below
  // are of the usable GPUs only (the core's room_total, gpus_with_room).
  const std::vector<Exclusion> left_out = DescribeLeftOut(need, p, rooms, latest, out, o.placement);
  const std::vector<Exclusion> caveats = DescribeResetPending(p, rooms);
  // "; left out: GPU 1 (row remap pending), GPU 3 (39.2 GiB free)".
  auto left_out_text = [&]() {
    if (left_out.empty()) return std::string();
    // The first few on the line; the evidence names every one.
    constexpr size_t kShownLeftOut = 4;
    std::vector<std::string> parts;
    for (const Exclusion& e : left_out) {
      if (parts.size() == kShownLeftOut) break;
      parts.push_back(fmt::format("GPU {} ({})", e.gpu, e.brief));
    }
    if (left_out.size() > kShownLeftOut) {
      parts.push_back(fmt::format("{} more", left_out.size() - kShownLeftOut));
    }
    return fmt::format("; left out: {}", fmt::join(parts, ", "));
  };

  std::string per_gpu;
  for (const GpuRoom& room : rooms) {
    if (!per_gpu.empty()) per_gpu += ", ";
    per_gpu += fmt::format("{}: {}{}", room.index,
                           room.free_bytes ? FormatBytes(*room.free_bytes) : "unknown",
                           !room.usable ? fmt::format(" ({})", placement::BlockText(room.block))
                           : room.reset_pending.empty() ? std::string()
                                                        : std::string(" (usable, reset pending)"));
  }
  StepValues values;
  values.need = need_text;

  Finding f;
  switch (p.outcome) {
    case PlacementOutcome::kFits: {
      std::string where;
      for (unsigned g : p.gpus) {
        auto room = std::find_if(rooms.begin(), rooms.end(),
                                 [&](const GpuRoom& r) { return r.index == g; });
        if (!where.empty()) where += ", ";
        where += fmt::format("GPU {} ({} free)", g, FormatBytes(room->free_bytes.value_or(0)));
      }
      // A GPU used with a reset pending says so: usable, reset it when idle.
      for (const Exclusion& c : caveats) {
        where += fmt::format(
            "; GPU {} has a {}; usable (reset it when idle: gpuwarden reset "
            "--plan {})",
            c.gpu, c.brief, c.gpu);
      }
      f = MakeFinding("NEED_FITS", p.gpus, {},
                      fmt::format("Your need {} fits now on {}", need_text, where), wanted_gib);
      values.gpus = GpuList(f.gpus);
      break;
    }
    case PlacementOutcome::kFragmented:
      f = MakeFinding(
          "FRAGMENTED", {}, {},
          need.nvlink && need.gpus > 1 && p.gpus_with_room >= need.gpus
              ? fmt::format("{} GPUs have {} free each, but no {} of them are all joined by "
                            "NVLink, as {} asks",
                            p.gpus_with_room, FormatBytes(need.bytes_per_gpu), need.gpus, need_text)
              : fmt::format("Free memory of the usable GPUs adds up to {}, enough for {}, but "
                            "only {} GPU{} {} {} free{}",
                            FormatBytes(p.free_total), need_text, p.gpus_with_room,
                            p.gpus_with_room == 1 ? "" : "s",
                            p.gpus_with_room == 1 ? "has" : "have", FormatBytes(need.bytes_per_gpu),
                            left_out_text()),
          wanted_gib);
      break;
    case PlacementOutcome::kUnsatisfiable:
      f = MakeFinding("NEED_UNSATISFIABLE", {}, {},
                      fmt::format("Your need {} wants {} free; all usable GPUs together have {}{}",
                                  need_text, FormatBytes(need.bytes_per_gpu * need.gpus),
                                  FormatBytes(p.free_total), left_out_text()),
                      wanted_gib);
      break;
    case PlacementOutcome::kNeverFits: {
      using Kind = placement::NeverWhy::Kind;
      const placement::NeverWhy& n = p.never;
      const std::string margin = FormatBytes(p.margin_bytes);
      std::string why =
          n.kind == Kind::kTooFewGpus
              ? fmt::format("the server has {} GPU{}", n.server_gpus, n.server_gpus == 1 ? "" : "s")
          : n.kind == Kind::kTooSmall && n.big_enough == 0
              ? fmt::format(
                    "the largest GPU can give {} (its total less what the driver "
                    "reserves; {} is kept free on each)",
                    n.largest_capacity ? FormatBytes(*n.largest_capacity) : "unknown", margin)
          : n.kind == Kind::kTooSmall
              ? fmt::format("only {} GPU{} {} that much memory ({} is kept free on each)",
                            n.big_enough, n.big_enough == 1 ? "" : "s",
                            n.big_enough == 1 ? "has" : "have", margin)
              : fmt::format("at most {} GPUs large enough are all joined by NVLink",
                            n.largest_nvlink_set);
      f = MakeFinding("NEED_EXCEEDS_SERVER", {}, {},
                      fmt::format("Your need {} can never fit here: {}", need_text, why),
                      wanted_gib);
      break;
    }
    case PlacementOutcome::kUnusable: {
      // Only unreadable GPUs in the way: it cannot be checked (UNKNOWN);
      // otherwise name the GPUs that cannot take work. A GPU unreachable
      // because it is known broken (lost, fallen off the bus) is not
      // "unread": the need waits on a fault.
      const std::map<unsigned, std::string> unhealthy = UnhealthyGpus(out, o.placement);
      std::string bad;
      bool unread = true;
      for (unsigned g : p.unusable) {
        auto room = std::find_if(rooms.begin(), rooms.end(),
                                 [&](const GpuRoom& r) { return r.index == g; });
        const auto sick = unhealthy.find(g);
        unread = unread && sick == unhealthy.end() &&
                 (room->block == placement::Block::kUnreachable ||
                  room->block == placement::Block::kMemoryUnknown);
        if (!bad.empty()) bad += ", ";
        // Why an unreachable GPU is not merely unread: its finding.
        const bool why_sick =
            sick != unhealthy.end() && room->block != placement::Block::kUnhealthy;
        bad += fmt::format("GPU {} ({}{}{})", g, placement::BlockText(room->block),
                           why_sick ? ": " : "", why_sick ? sick->second : "");
      }
      f = unread ? MakeFinding("NEED_UNCHECKED", {}, {},
                               fmt::format("Your need {} cannot be checked: it would need GPUs "
                                           "that could not be read: {}",
                                           need_text, bad),
                               wanted_gib)
                 : MakeFinding("NEED_UNSATISFIABLE", {}, {},
                               fmt::format("Your need {} would fit only on GPUs that cannot take "
                                           "new work now: {}",
                                           need_text, bad),
                               wanted_gib);
      f.evidence.push_back(TextEvidence("unusable_gpus", GpuList(p.unusable)));
      break;
    }
    case PlacementOutcome::kCannotCheck:
      f = MakeFinding("NEED_UNCHECKED", {}, {},
                      fmt::format("Your need {} asks for NVLink, but the GPU topology is "
                                  "unknown: it cannot be checked",
                                  need_text),
                      wanted_gib);
      break;
  }
  f.evidence.push_back(TextEvidence("need", need_text));
  f.evidence.push_back(BytesEvidence("free_total", p.free_total));
  f.evidence.push_back(NumberEvidence("gpus_with_room", p.gpus_with_room, "count",
                                      fmt::format("{}", p.gpus_with_room)));
  f.evidence.push_back(TextEvidence("free_per_gpu", per_gpu));
  for (const Exclusion& c : caveats) {
    f.evidence.push_back(NumberEvidence("reset_pending", c.gpu, "gpu", c.text));
  }
  for (const Exclusion& e : left_out) {
    f.evidence.push_back(NumberEvidence("excluded", e.gpu, "gpu", e.text));
  }
  AddCatalogSteps(f, values);
  out.push_back(std::move(f));
}

}  // namespace gw::diagnose::internal
