#include "diagnose/verdict.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/slurm_lookup.h"
#include "core/units.h"
#include "diagnose/health.h"
#include "diagnose/placement.h"
#include "diagnose/rule_context.h"

namespace gw::diagnose {
namespace {

using internal::FindHost;
using internal::GpuList;
using internal::Pct;
using internal::UsedPct;
using internal::UserText;

using internal::About;

// Holder findings whose memory could be given back without hurting work.
bool IsReclaimableHolder(const Finding& f) {
  return f.category == Category::kHolder && f.implies == Verdict::kReclaimable;
}

// Idle memory of a user: IDLE, ORPHAN and ZOMBIE holders (not INVISIBLE, which has no owner).
bool IsOwnedIdleHolder(const Finding& f) {
  return IsReclaimableHolder(f) && f.code != "INVISIBLE_HOLDER";
}

uint64_t HeldBytes(const Finding& f) {
  Opt<double> held = EvidenceNumber(f, kHeldEvidence);
  return held && *held > 0 ? static_cast<uint64_t>(*held) : 0;
}

// Reclaimable bytes per GPU, and per GPU the PIDs of reclaimable holders.
struct Reclaim {
  std::map<unsigned, uint64_t> bytes;
  std::map<unsigned, std::set<pid_t>> pids;
};
Reclaim CollectReclaim(std::span<const Finding> findings) {
  Reclaim r;
  std::set<std::pair<unsigned, pid_t>> seen;
  for (const Finding& f : findings) {
    if (!IsReclaimableHolder(f) || f.gpus.empty()) continue;
    // Held bytes are known per GPU only for one-GPU findings (listed processes).
    const unsigned gpu = f.gpus.front();
    const pid_t key = f.pids.size() == 1 ? f.pids.front() : -1;
    if (!seen.insert({gpu, key}).second) continue;
    if (f.gpus.size() == 1) r.bytes[gpu] += HeldBytes(f);
    for (unsigned g : f.gpus) {
      for (pid_t pid : f.pids) r.pids[g].insert(pid);
    }
  }
  return r;
}

// "GPU 3 fell off the bus" -> "fell off the bus"; "GPU 0's PCIe ..." -> "PCIe ...".
bool IsHardwareCategory(Category c) {
  return c == Category::kMemory || c == Category::kBus || c == Category::kThermal ||
         c == Category::kPower || c == Category::kNvlink || c == Category::kHardware;
}

std::string KindWord(const Finding& f) {
  if (IsHardwareCategory(f.category)) return "hardware";
  if (f.category == Category::kHolder) return "stuck process";
  return std::string(CategoryName(f.category));
}

std::string UsageText(const Snapshot& latest, const Gpu& gpu) {
  std::vector<std::string> parts;
  if (Opt<double> pct = UsedPct(gpu)) {
    parts.push_back(fmt::format("VRAM {} ({} of {})", Pct(*pct),
                                FormatBytes(*gpu.memory.used_bytes),
                                FormatBytes(*gpu.memory.total_bytes)));
  }
  if (gpu.utilization_gpu_pct) parts.push_back(fmt::format("util {} %", *gpu.utilization_gpu_pct));
  if (gpu.processes_known) {
    std::set<std::string> users;
    for (const GpuProcess& p : gpu.processes) users.insert(UserText(FindHost(latest, p.pid)));
    if (gpu.processes.empty()) {
      parts.push_back("no process");
    } else {
      // The first users by name; the full list is in the per-user holdings.
      constexpr size_t kShownUsers = 3;
      std::vector<std::string> shown(users.begin(), users.end());
      if (shown.size() > kShownUsers) {
        const size_t more = shown.size() - kShownUsers;
        shown.resize(kShownUsers);
        shown.push_back(fmt::format("+{} more", more));
      }
      parts.push_back(fmt::format("{} process{} ({})", gpu.processes.size(),
                                  gpu.processes.size() == 1 ? "" : "es", fmt::join(shown, ", ")));
    }
  }
  if (parts.empty()) return "no data";
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "10.0 GiB free, 60 % compute free" (the parts that are known).
std::string RoomText(const GpuVerdict& v) {
  std::vector<std::string> parts;
  if (v.room_free_bytes) parts.push_back(FormatBytes(*v.room_free_bytes) + " free");
  if (v.room_compute_free_pct) {
    parts.push_back(fmt::format("{:.0f} % compute free", *v.room_compute_free_pct));
  }
  if (parts.empty()) return "unknown";
  return fmt::format("{}", fmt::join(parts, ", "));
}

size_t CountCode(std::span<const Finding> findings, std::string_view code) {
  return std::count_if(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.code == code; });
}

const Finding* FirstWithCode(std::span<const Finding> findings, std::string_view code) {
  for (const Finding& f : findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

// Whether the need fits once the reclaimable holders are freed (their
// memory, and exclusive-mode GPUs whose only users they are).
bool FitsAfterReclaim(const Snapshot& latest, std::span<const Finding> ranked,
                      const NeedRequest& need, const PlacementHealth& health) {
  const Reclaim reclaim = CollectReclaim(ranked);
  if (reclaim.bytes.empty() && reclaim.pids.empty()) return false;
  std::set<unsigned> exclusive_freed;
  for (const Finding& f : ranked) {
    if (f.code != "COMPUTE_MODE_EXCLUSIVE" || f.gpus.empty()) continue;
    auto it = reclaim.pids.find(f.gpus.front());
    if (it != reclaim.pids.end() &&
        std::all_of(f.pids.begin(), f.pids.end(), [&](pid_t p) { return it->second.count(p); })) {
      exclusive_freed.insert(f.gpus.front());
    }
  }
  std::vector<GpuRoom> rooms = CollectRooms(latest, reclaim.bytes, exclusive_freed, ranked, health);
  return PlaceNeed(need, rooms, latest.topology).outcome == PlacementOutcome::kFits;
}

// Whether a GPU whose state is DEGRADED may still take the need: every
// finding about it of DEGRADED or worse is one placement allows (a pending
// row remap, health.h), as the need rule judged it.
bool DegradedButPlaceable(const GpuVerdict& g, std::span<const Finding> ranked,
                          const PlacementHealth& health) {
  if (g.state != GpuState::kDegraded) return false;
  for (size_t k : g.findings) {
    const Finding& f = ranked[k];
    if (VerdictRank(f.implies) >= VerdictRank(Verdict::kDegraded) &&
        !AllowedByPlacement(f, health)) {
      return false;
    }
  }
  return true;
}

// The server's verdict on a stated need (Diagnosis::server).
Verdict AnswerNeed(const Snapshot& latest, std::span<const GpuVerdict> gpus,
                   std::span<const Finding> ranked, const NeedRequest& need,
                   const PlacementHealth& health) {
  if (FirstWithCode(ranked, "NEED_UNCHECKED") != nullptr) return Verdict::kUnknown;
  if (FirstWithCode(ranked, "NEED_EXCEEDS_SERVER") != nullptr) return Verdict::kNeverFits;
  if (FirstWithCode(ranked, "NEED_FITS") != nullptr) return Verdict::kOk;
  if (FirstWithCode(ranked, "FRAGMENTED") == nullptr &&
      FirstWithCode(ranked, "NEED_UNSATISFIABLE") == nullptr) {
    return Verdict::kUnknown;  // The need rule could not judge (no GPU memory known).
  }
  if (FitsAfterReclaim(latest, ranked, need, health)) return Verdict::kReclaimable;
  // Would it fit on the GPUs that can take work, were they empty? Then work
  // holds the room: BUSY. Otherwise it needs GPUs that are broken, degraded
  // or unreadable: their verdict.
  std::map<unsigned, uint64_t> everything;
  std::set<unsigned> all;
  int worst_unusable = -1;
  Verdict worst_verdict = Verdict::kBusy;
  for (const Gpu& gpu : latest.gpus) {
    if (gpu.memory.total_bytes) everything[gpu.index] = *gpu.memory.total_bytes;
    all.insert(gpu.index);
  }
  // CollectRooms gives every GPU of the snapshot a room (unreadable ones blocked).
  std::vector<GpuRoom> empty = CollectRooms(latest, everything, all, ranked, health);
  for (GpuRoom& room : empty) {
    for (const GpuVerdict& g : gpus) {
      if (g.index != room.index) continue;
      if (DegradedButPlaceable(g, ranked, health)) continue;
      if (g.state == GpuState::kFault || g.state == GpuState::kDegraded ||
          g.state == GpuState::kUnknown) {
        room.usable = false;
        if (VerdictRank(g.verdict) > worst_unusable) {
          worst_unusable = VerdictRank(g.verdict);
          worst_verdict = g.verdict;
        }
      }
    }
  }
  const Placement p = PlaceNeed(need, empty, latest.topology);
  if (p.outcome == PlacementOutcome::kFits || worst_unusable < 0) return Verdict::kBusy;
  return worst_verdict;
}

// "2 of 8 GPUs free (GPU 3, 7); room on GPU 2 (10.0 GiB free, 60 % compute
// free), GPU 4 (…)": free GPUs are counted, GPUs in use with room are named.
std::string FreeAndRoomText(std::span<const GpuVerdict> gpus) {
  std::vector<unsigned> free;
  std::vector<std::string> room;
  for (const GpuVerdict& g : gpus) {
    if (g.state == GpuState::kFree) free.push_back(g.index);
    if (g.state == GpuState::kInUse && g.verdict == Verdict::kOk) {
      room.push_back(fmt::format("GPU {} ({})", g.index, RoomText(g)));
    }
  }
  const size_t n = gpus.size();
  std::string text;
  if (!free.empty() && free.size() == n) {
    text = n == 1 ? "the GPU is free" : fmt::format("all {} GPUs free", n);
  } else {
    text = fmt::format("{} of {} GPU{} free", free.size(), n, n == 1 ? "" : "s");
    if (!free.empty()) text += fmt::format(" (GPU {})", GpuList(free));
  }
  constexpr size_t kShownRooms = 4;
  if (!room.empty()) {
    const size_t more = room.size() > kShownRooms ? room.size() - kShownRooms : 0;
    room.resize(std::min(room.size(), kShownRooms));
    text += fmt::format("; room on {}", fmt::join(room, ", "));
    if (more > 0) text += fmt::format(" and {} more", more);
  }
  return text;
}

// Line 1 with a stated need: the answer to the need, then what stands in its
// way or what else is wrong.
std::string NeedSummary(Verdict server, std::span<const GpuVerdict> gpus,
                        std::span<const Finding> ranked, const NeedRequest& need,
                        const PlacementHealth& health_rule) {
  const std::string head(VerdictName(server));
  const std::string need_text = FormatNeed(need);
  const Finding* why_not = FirstWithCode(ranked, "FRAGMENTED");
  if (why_not == nullptr) why_not = FirstWithCode(ranked, "NEED_UNSATISFIABLE");
  // The worst health finding, for "but" and for a need the broken GPUs block.
  // Not one the answer already speaks of: a pending repair on a GPU the need
  // is placed on ("GPU 1 has a row remap pending; usable").
  const Finding* fits = FirstWithCode(ranked, "NEED_FITS");
  const Finding* health = nullptr;
  for (const Finding& f : ranked) {
    if (fits != nullptr && AllowedByPlacement(f, health_rule) &&
        std::all_of(f.gpus.begin(), f.gpus.end(), [&](unsigned g) { return About(*fits, g); })) {
      continue;
    }
    if (VerdictRank(f.implies) >= VerdictRank(Verdict::kDegraded)) {
      health = &f;
      break;
    }
  }
  switch (server) {
    case Verdict::kOk: {
      std::string text = fmt::format("{} — {}", head, fits ? fits->message : "your need fits now");
      if (health != nullptr) text += "; but " + health->message;
      return text;
    }
    case Verdict::kNeverFits:
    case Verdict::kUnknown: {
      const Finding* f = FirstWithCode(
          ranked, server == Verdict::kNeverFits ? "NEED_EXCEEDS_SERVER" : "NEED_UNCHECKED");
      if (f != nullptr) return fmt::format("{} — {}", head, f->message);
      break;
    }
    default:
      break;
  }
  std::string text = fmt::format("{} — your need {} does not fit now", head, need_text);
  if (why_not != nullptr) text += ": " + why_not->message;
  if (server == Verdict::kReclaimable) {
    uint64_t total = 0;
    for (const GpuVerdict& g : gpus) total += g.reclaimable_bytes;
    text +=
        fmt::format("; it fits once idle holders free their memory ({} held)", FormatBytes(total));
  } else if (server == Verdict::kBusy) {
    // What would free room: the GPUs big enough for the need, and who holds them.
    std::vector<std::string> parts;
    for (const Finding& f : ranked) {
      if (f.code != "VRAM_EXHAUSTED" || f.gpus.size() != 1 || parts.size() >= 3) continue;
      std::vector<std::string> holders;
      for (const Evidence& e : f.evidence) {
        if (e.name == "holder" && holders.size() < 2) holders.push_back(e.value);
      }
      if (holders.empty()) continue;
      parts.push_back(fmt::format("GPU {}: {}", f.gpus.front(), fmt::join(holders, "; ")));
    }
    for (const Finding& f : ranked) {
      if (f.code == "COMPUTE_SATURATED" && f.gpus.size() == 1 && parts.size() < 3) {
        parts.push_back(fmt::format("GPU {} is compute-saturated", f.gpus.front()));
      }
    }
    if (!parts.empty()) text += fmt::format("; room would come from {}", fmt::join(parts, " | "));
  } else if (health != nullptr) {
    text += "; the GPUs it needs are not healthy: " + health->message;
  }
  return text;
}

}  // namespace

void RankFindings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    const int ra = VerdictRank(a.implies), rb = VerdictRank(b.implies);
    if (ra != rb) return ra > rb;
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.impact != b.impact) return a.impact > b.impact;
    return std::tie(a.code, a.gpus, a.pids) < std::tie(b.code, b.gpus, b.pids);
  });
}

std::vector<GpuVerdict> JudgeGpus(const Snapshot& latest, std::span<const Finding> ranked,
                                  const DiagnoseOptions& options) {
  const Reclaim reclaim = CollectReclaim(ranked);
  std::vector<GpuVerdict> out;
  for (const Gpu& gpu : latest.gpus) {
    GpuVerdict v;
    v.index = gpu.index;
    if (auto it = reclaim.bytes.find(gpu.index); it != reclaim.bytes.end()) {
      v.reclaimable_bytes = it->second;
    }
    v.room_free_bytes = internal::FreeBytes(gpu);
    if (gpu.utilization_gpu_pct) {
      v.room_compute_free_pct = 100.0 - std::min(100.0, double(*gpu.utilization_gpu_pct));
    }
    const std::set<pid_t> no_pids;
    auto pids_it = reclaim.pids.find(gpu.index);
    const std::set<pid_t>& reclaimable_pids =
        pids_it == reclaim.pids.end() ? no_pids : pids_it->second;
    int worst = 0;
    // genuine: work makes new work wait; reclaimable: only non-working
    // holders do; short_of_need: there is room, but not for the stated need.
    bool genuine = false, reclaimable = false, short_of_need = false, need_reclaimable = false;
    for (size_t k = 0; k < ranked.size(); ++k) {
      const Finding& f = ranked[k];
      if (!About(f, gpu.index)) continue;
      v.findings.push_back(k);
      worst = std::max(worst, VerdictRank(f.implies));
      if (f.implies != Verdict::kBusy) continue;
      if (f.code == "VRAM_EXHAUSTED") {
        const uint64_t free = v.room_free_bytes.value_or(0);
        if (internal::VramFull(gpu, options)) {
          // Would freeing the reclaimable holders clear the shortage?
          const bool clears = gpu.memory.total_bytes &&
                              free + v.reclaimable_bytes >=
                                  internal::FullMarkFreeBytes(*gpu.memory.total_bytes, options);
          (clears ? reclaimable : genuine) = true;
        }
        const uint64_t wanted =
            options.need ? options.need->bytes_per_gpu + placement::kDefaultMarginBytes : 0;
        if (options.need && free < wanted) {
          short_of_need = true;
          need_reclaimable = free + v.reclaimable_bytes >= wanted;
        }
      } else if (f.code == "COMPUTE_MODE_EXCLUSIVE") {
        const bool all_reclaimable =
            !f.pids.empty() && std::all_of(f.pids.begin(), f.pids.end(), [&](pid_t pid) {
              return reclaimable_pids.count(pid) > 0;
            });
        (all_reclaimable ? reclaimable : genuine) = true;
      } else {
        genuine = true;
      }
    }
    // Most of the memory held by idle, orphaned, zombie or hidden holders: the
    // GPU is reclaimable even before it is full.
    if (!genuine && !reclaimable && gpu.memory.total_bytes && *gpu.memory.total_bytes > 0 &&
        2 * v.reclaimable_bytes >= *gpu.memory.total_bytes) {
      reclaimable = true;
    }
    if (worst == VerdictRank(Verdict::kFault)) {
      v.state = GpuState::kFault;
    } else if (worst == VerdictRank(Verdict::kDegraded)) {
      v.state = GpuState::kDegraded;
    } else if (gpu.unreachable || internal::UsageUnread(gpu) ||
               worst == VerdictRank(Verdict::kUnknown)) {
      v.state = GpuState::kUnknown;
    } else if (genuine) {
      v.state = GpuState::kBusy;
    } else if (reclaimable) {
      v.state = GpuState::kReclaimable;
    } else if (!gpu.memory.total_bytes || !gpu.memory.used_bytes) {
      // Neither "free" nor "in use with room" can be said without its memory.
      v.state = GpuState::kUnknown;
    } else {
      // Work seen: a compute process, utilisation above idle, or memory in use
      // beyond what an idle GPU shows. Unknown memory is not "free".
      const bool computes =
          gpu.utilization_gpu_pct && *gpu.utilization_gpu_pct > options.idle_util_max_pct;
      const bool work_seen = internal::HasComputeProcess(gpu) || computes ||
                             !internal::MemoryEssentiallyFree(gpu, options);
      // "Free" needs the utilisation seen idle: unknown is not zero. Under
      // MIG the whole GPU reports none by design, and a GPU that does not
      // report utilisation at all (NOT_SUPPORTED, not a failed read) likewise:
      // there its memory and its process list, read, say it all.
      const bool idle_known = gpu.utilization_gpu_pct.has_value() ||
                              gpu.mig_mode_current.value_or(false) ||
                              (gpu.utilization_not_supported && gpu.processes_known);
      v.state = work_seen ? GpuState::kInUse : idle_known ? GpuState::kFree : GpuState::kUnknown;
    }
    switch (v.state) {
      case GpuState::kFault:
        v.verdict = Verdict::kFault;
        break;
      case GpuState::kDegraded:
        v.verdict = Verdict::kDegraded;
        break;
      case GpuState::kUnknown:
        v.verdict = Verdict::kUnknown;
        break;
      case GpuState::kBusy:
        v.verdict = Verdict::kBusy;
        break;
      case GpuState::kReclaimable:
        v.verdict = short_of_need && !need_reclaimable ? Verdict::kBusy : Verdict::kReclaimable;
        break;
      case GpuState::kFree:
      case GpuState::kInUse:
        v.verdict = !short_of_need     ? Verdict::kOk
                    : need_reclaimable ? Verdict::kReclaimable
                                       : Verdict::kBusy;
        break;
    }

    // The line.
    std::string detail;
    if (v.verdict == Verdict::kFault || v.verdict == Verdict::kDegraded ||
        v.verdict == Verdict::kUnknown) {
      for (size_t k : v.findings) {
        if (ranked[k].implies == v.verdict) {
          detail = MessageWithoutSubject(ranked[k].message, gpu.index);
          break;
        }
      }
      if (detail.empty()) detail = "no data: " + internal::UnreadReason(gpu, latest);
    } else {
      detail = UsageText(latest, gpu);
      if (v.reclaimable_bytes > 0) {
        detail +=
            fmt::format("; {} held by idle or stuck holders", FormatBytes(v.reclaimable_bytes));
      }
      if (v.state == GpuState::kInUse) detail += "; room: " + RoomText(v);
      for (const SlurmJob* job : SlurmJobsOnGpu(latest, gpu.index)) {
        detail += "; allocated to Slurm " + DescribeSlurmJob(*job);
      }
    }
    std::vector<std::string_view> codes;
    for (size_t k : v.findings) {
      if (ranked[k].severity == Severity::kInfo) continue;
      if (std::find(codes.begin(), codes.end(), ranked[k].code) == codes.end()) {
        codes.push_back(ranked[k].code);
      }
    }
    // The state in words where the verdict does not already say it: "OK, free",
    // "OK, in use", "BUSY for your need, in use".
    std::string head = fmt::format("GPU {} {}", gpu.index, VerdictName(v.verdict));
    if (v.verdict == Verdict::kBusy && v.state != GpuState::kBusy) head += " for your need";
    if (v.state == GpuState::kFree || v.state == GpuState::kInUse) {
      head += v.state == GpuState::kFree ? ", free" : ", in use";
    }
    v.line = fmt::format("{} — {}", head, detail);
    if (!codes.empty()) v.line += fmt::format(" [{}]", fmt::join(codes, ", "));
    out.push_back(std::move(v));
  }
  return out;
}

Verdict JudgeServer(const Snapshot& latest, std::span<const GpuVerdict> gpus,
                    std::span<const Finding> ranked, const DiagnoseOptions& options) {
  // A stated need is answered first: line 1 and the exit code say whether it
  // can start, before any health finding.
  if (options.need) return AnswerNeed(latest, gpus, ranked, *options.need, options.placement);

  int worst = 0;
  for (const GpuVerdict& g : gpus) worst = std::max(worst, VerdictRank(g.verdict));
  bool server_unknown = false;
  for (const Finding& f : ranked) {
    if (!f.gpus.empty()) continue;
    const int rank = VerdictRank(f.implies);
    if (rank >= VerdictRank(Verdict::kDegraded)) worst = std::max(worst, rank);
    if (f.implies == Verdict::kUnknown) server_unknown = true;
  }
  if (worst == VerdictRank(Verdict::kFault)) return Verdict::kFault;
  if (worst == VerdictRank(Verdict::kDegraded)) return Verdict::kDegraded;

  const bool any_known = std::any_of(
      gpus.begin(), gpus.end(), [](const GpuVerdict& g) { return g.verdict != Verdict::kUnknown; });
  if (!any_known || (server_unknown && gpus.empty())) return Verdict::kUnknown;

  // Without a stated need the server is busy when most of its GPUs are: one
  // usable GPU out of eight does not make a shared server "OK" for its users
  // (`--need` answers whether a particular job fits).
  size_t ok = 0, reclaimable = 0, known = 0;
  for (const GpuVerdict& g : gpus) {
    if (g.verdict == Verdict::kUnknown) continue;
    ++known;
    ok += g.verdict == Verdict::kOk;
    reclaimable += g.verdict == Verdict::kReclaimable;
  }
  if (2 * ok >= known) return Verdict::kOk;
  return reclaimable > 0 ? Verdict::kReclaimable : Verdict::kBusy;
}

std::string ServerSummary(Verdict server, std::span<const GpuVerdict> gpus,
                          std::span<const Finding> ranked, const DiagnoseOptions& options) {
  const size_t n = gpus.size();
  const std::string head(VerdictName(server));
  auto count_verdict = [&](Verdict v) {
    return std::count_if(gpus.begin(), gpus.end(),
                         [&](const GpuVerdict& g) { return g.verdict == v; });
  };

  if (options.need) return NeedSummary(server, gpus, ranked, *options.need, options.placement);

  if (server == Verdict::kFault || server == Verdict::kDegraded) {
    // The top finding speaks for its GPUs; others about the same GPUs (e.g.
    // GPU_LOST beside the Xid 79 that explains it) add nothing to the line.
    const Finding* top = nullptr;
    size_t more = 0;
    for (const Finding& f : ranked) {
      if (f.implies != server) continue;
      if (top == nullptr) {
        top = &f;
        continue;
      }
      const bool same_gpus =
          !f.gpus.empty() &&
          std::all_of(f.gpus.begin(), f.gpus.end(), [&](unsigned g) { return About(*top, g); });
      if (!same_gpus) ++more;
    }
    if (top == nullptr) return head;
    std::string text = fmt::format("{} — {}: {}", head, KindWord(*top), top->message);
    if (more > 0) {
      text += fmt::format("; {} more {} finding{}", more,
                          server == Verdict::kFault ? "fault" : "health", more == 1 ? "" : "s");
    }
    if (!top->gpus.empty() && n > 0) {
      // The other GPUs, by verdict: "7 other GPUs OK" or "other GPUs: 5 OK, 2 BUSY".
      std::map<int, std::pair<Verdict, size_t>> others;  // Best verdict first.
      size_t count = 0;
      for (const GpuVerdict& g : gpus) {
        if (About(*top, g.index)) continue;
        auto& entry = others[g.verdict == Verdict::kOk
                                 ? -1
                                 : VerdictRank(g.verdict) * 10 + static_cast<int>(g.verdict)];
        entry = {g.verdict, entry.second + 1};
        ++count;
      }
      if (count > 0 && others.size() == 1) {
        text += fmt::format("; {} other GPU{} {}", count, count == 1 ? "" : "s",
                            VerdictName(others.begin()->second.first));
      } else if (count > 0) {
        std::vector<std::string> parts;
        for (const auto& [rank, entry] : others) {
          parts.push_back(fmt::format("{} {}", entry.second, VerdictName(entry.first)));
        }
        text += fmt::format("; other GPUs: {}", fmt::join(parts, ", "));
      }
    }
    return text;
  }

  if (server == Verdict::kUnknown) {
    for (const Finding& f : ranked) {
      if (f.implies == Verdict::kUnknown)
        return fmt::format("{} — could not look: {}", head, f.message);
    }
    return n == 0 ? head + " — no GPU data" : head + " — no data from any GPU";
  }

  // Holders that could give memory back.
  std::map<std::string_view, size_t> holder_counts;
  uint64_t reclaim_total = 0;
  for (const GpuVerdict& g : gpus) reclaim_total += g.reclaimable_bytes;
  for (const Finding& f : ranked) {
    if (IsReclaimableHolder(f)) ++holder_counts[f.code];
  }
  std::vector<std::string> holder_parts;
  auto holder_word = [&](std::string_view code, const char* one, const char* many) {
    auto it = holder_counts.find(code);
    if (it == holder_counts.end()) return;
    holder_parts.push_back(fmt::format("{} {}", it->second, it->second == 1 ? one : many));
  };
  holder_word("IDLE_HOLDER", "idle holder", "idle holders");
  holder_word("ORPHAN_HOLDER", "orphan", "orphans");
  holder_word("ZOMBIE_HOLDER", "zombie", "zombies");
  holder_word("INVISIBLE_HOLDER", "invisible holder", "invisible holders");
  std::string holders;
  if (!holder_parts.empty()) {
    holders =
        fmt::format("{} could free {}", fmt::join(holder_parts, ", "), FormatBytes(reclaim_total));
  }

  if (server == Verdict::kBusy || server == Verdict::kReclaimable) {
    std::vector<std::string> parts;
    std::string kind;
    const size_t vram = CountCode(ranked, "VRAM_EXHAUSTED");
    const size_t sat = CountCode(ranked, "COMPUTE_SATURATED");
    const size_t excl = CountCode(ranked, "COMPUTE_MODE_EXCLUSIVE");
    const size_t prohib = CountCode(ranked, "COMPUTE_MODE_PROHIBITED");
    if (vram > 0) parts.push_back(fmt::format("{}/{} GPUs with memory full", vram, n));
    if (sat > 0) {
      parts.push_back(fmt::format("{}/{} GPUs with compute saturated (≥ {:.0f} %)", sat, n,
                                  options.saturated_util_pct));
    }
    if (excl > 0)
      parts.push_back(fmt::format("{} GPU{} taken in exclusive mode", excl, excl == 1 ? "" : "s"));
    if (prohib > 0)
      parts.push_back(fmt::format("{} GPU{} prohibited", prohib, prohib == 1 ? "" : "s"));
    const size_t slurm = CountCode(ranked, "SLURM_ALLOCATED");
    if (slurm > 0) parts.push_back(fmt::format("{}/{} GPUs allocated to Slurm jobs", slurm, n));
    if (server == Verdict::kReclaimable) {
      kind = "memory held without work";
    } else if (vram > 0 || (slurm > 0 && sat == 0)) {
      kind = "resource shortage";
    } else if (sat > 0) {
      kind = "contention";
    } else {
      kind = "configuration";
    }
    if (!holders.empty()) parts.push_back(holders);
    if (parts.empty())
      parts.push_back(fmt::format("{}/{} GPUs busy", count_verdict(Verdict::kBusy), n));
    return fmt::format("{} — {}: {}; {}", head, kind, fmt::join(parts, "; "),
                       FreeAndRoomText(gpus));
  }

  // OK: only free GPUs are counted as free; those in use with room are named.
  std::string text = fmt::format("{} — {}", head, FreeAndRoomText(gpus));
  // Each GPU under the word its state says: memory held by nothing at work is
  // not "busy".
  std::vector<unsigned> busy_gpus, reclaimable_gpus;
  for (const GpuVerdict& g : gpus) {
    if (g.verdict == Verdict::kBusy) busy_gpus.push_back(g.index);
    if (g.verdict == Verdict::kReclaimable) reclaimable_gpus.push_back(g.index);
  }
  const size_t unknown = count_verdict(Verdict::kUnknown);
  if (!busy_gpus.empty()) text += fmt::format("; busy: GPU {}", GpuList(busy_gpus));
  if (!reclaimable_gpus.empty()) {
    text += fmt::format("; held without work: GPU {}", GpuList(reclaimable_gpus));
  }
  if (unknown > 0)
    text += fmt::format("; {} GPU{} could not be read", unknown, unknown == 1 ? "" : "s");
  if (!holders.empty()) text += "; " + holders;
  // Things about the caller's own environment.
  for (const Finding& f : ranked) {
    if (f.severity == Severity::kWarning && f.code.rfind("CUDA_VISIBLE_DEVICES", 0) == 0) {
      text += "; but " + f.message;
      break;
    }
  }
  return text;
}

std::vector<UserHolding> ComputeUserHoldings(const Snapshot& latest,
                                             std::span<const Finding> findings) {
  std::map<std::pair<unsigned, pid_t>, uint64_t> idle;
  for (const Finding& f : findings) {
    if (!IsOwnedIdleHolder(f) || f.gpus.empty() || f.pids.size() != 1) continue;
    idle[{f.gpus.front(), f.pids.front()}] = HeldBytes(f);
  }
  std::map<std::string, UserHolding> by_user;
  // (user, GPU) -> every process idle; by the user's entry in by_user (map
  // values stay put), not a copy of the name for every process.
  std::map<std::pair<UserHolding*, unsigned>, bool> all_idle;
  for (const Gpu& gpu : latest.gpus) {
    for (const GpuProcess& p : gpu.processes) {
      const HostProcess* host = FindHost(latest, p.pid);
      auto [entry, added] = by_user.try_emplace(UserText(host));
      UserHolding& h = entry->second;
      if (added) h.user = entry->first;
      if (host != nullptr && host->uid) h.uid = host->uid;
      h.gpus.push_back(gpu.index);
      h.pids.push_back(p.pid);
      if (p.used_memory_bytes) {
        h.vram_bytes += *p.used_memory_bytes;
      } else {
        ++h.memory_unknown;
      }
      const auto it = idle.find({gpu.index, p.pid});
      if (it != idle.end()) h.idle_vram_bytes += it->second;
      auto at = all_idle.try_emplace({&h, gpu.index}, true).first;
      at->second = at->second && it != idle.end();
    }
  }
  for (const auto& [key, every] : all_idle) {
    if (every) key.first->idle_gpus.push_back(key.second);
  }
  std::vector<UserHolding> out;
  for (auto& [user, h] : by_user) {
    std::sort(h.gpus.begin(), h.gpus.end());
    h.gpus.erase(std::unique(h.gpus.begin(), h.gpus.end()), h.gpus.end());
    std::sort(h.idle_gpus.begin(), h.idle_gpus.end());
    std::sort(h.pids.begin(), h.pids.end());
    h.pids.erase(std::unique(h.pids.begin(), h.pids.end()), h.pids.end());
    out.push_back(std::move(h));
  }
  std::sort(out.begin(), out.end(), [](const UserHolding& a, const UserHolding& b) {
    if (a.vram_bytes != b.vram_bytes) return a.vram_bytes > b.vram_bytes;
    return a.user < b.user;
  });
  return out;
}

Diagnosis Diagnose(std::span<const Snapshot> history, const DiagnoseOptions& options,
                   std::span<const kmsg::KernelEvent> kernel_events) {
  Diagnosis d;
  if (history.empty()) {
    d.server = Verdict::kUnknown;
    d.summary = "UNKNOWN — no snapshot to diagnose";
    return d;
  }
  const Snapshot& latest = history.back();
  d.findings = RunRules(history, options, kernel_events);
  RankFindings(d.findings);
  d.gpus = JudgeGpus(latest, d.findings, options);
  d.server = JudgeServer(latest, d.gpus, d.findings, options);
  d.summary = ServerSummary(d.server, d.gpus, d.findings, options);
  d.users = ComputeUserHoldings(latest, d.findings);
  return d;
}

}  // namespace gw::diagnose
