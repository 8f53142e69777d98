#include "queue/policy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "placement/placement.h"

namespace gw::queue {
namespace {

using placement::Bit;
using placement::Count;
using placement::kMaxGpus;
using placement::Mask;  // One bit per GPU position (GPUs sorted by index).

constexpr int64_t kMsPerS = 1000;
constexpr int64_t kMsPerMin = 60 * kMsPerS;
constexpr int kMinPerDay = 1440;
// Larger requests are clamped so that byte arithmetic stays in int64_t; no
// GPU has 2^62 bytes, so a clamped request still never fits.
constexpr int64_t kBigBytes = int64_t{1} << 62;

// start + limit_s seconds, saturating (a limit of years must not overflow).
int64_t EndMs(int64_t start_ms, int64_t limit_s) {
  constexpr int64_t kMaxS = int64_t{1} << 40;  // 35,000 years.
  return start_ms + std::clamp<int64_t>(limit_s, -kMaxS, kMaxS) * kMsPerS;
}

int64_t Signed(uint64_t bytes) {
  return static_cast<int64_t>(std::min<uint64_t>(bytes, kBigBytes));
}

enum class Code : uint8_t {
  kNone,  // Not decided yet (or started).
  kHeld,
  kDependency,
  kWindow,
  kUserLimit,
  kPriority,
  kResources,
  kUtil,
  kReservedForHead,
  kUnhealthy,
  kTopologyUnknown,
  kNeverFits,
};

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kNone:
      return "";
    case Code::kHeld:
      return "held";
    case Code::kDependency:
      return "dependency";
    case Code::kWindow:
      return "window";
    case Code::kUserLimit:
      return "user_limit";
    case Code::kPriority:
      return "priority";
    case Code::kResources:
      return "resources";
    case Code::kUtil:
      return "util";
    case Code::kReservedForHead:
      return "reserved_for_head";
    case Code::kUnhealthy:
      return "unhealthy";
    case Code::kTopologyUnknown:
      return "topology_unknown";
    case Code::kNeverFits:
      return "never_fits";
  }
  return "";
}

// What a job asks of the GPUs.
struct Need {
  unsigned gpus = 0;
  uint64_t bytes = 0;  // Per GPU; 0 = a whole, otherwise unused GPU.
  bool nvlink = false;
  std::optional<unsigned> max_util;
};

Need NeedOf(const JobSpec& spec) {
  Need need;
  need.gpus = spec.gpus;
  need.bytes = spec.vram_bytes;
  need.nvlink = spec.nvlink && spec.gpus > 1;
  need.max_util = spec.max_util_pct;
  return need;
}

// One GPU's bookkeeping: what starting and ending queue jobs change.
struct Room {
  int64_t free = 0;         // NVML free, plus what projected job ends release.
  int64_t reserved = 0;     // Promised to queue jobs, not allocated by them yet.
  unsigned queue_jobs = 0;  // Queue jobs on it.
  unsigned whole_jobs = 0;  // Of them, undeclared (whole-GPU) jobs.
};
using Rooms = std::vector<Room>;

// What one queue job takes from one GPU.
struct Hold {
  unsigned pos = 0;
  int64_t used = 0;      // Its processes' NVML bytes (already out of `free`).
  int64_t reserved = 0;  // Promised, not allocated yet.
  bool whole = false;
};

// A queue job holding GPUs: running (or starting) before this pass, or
// started by it.
struct Holder {
  JobId id = 0;
  std::string_view user;
  int priority = 0;
  bool preemptible = false;
  bool stopping = false;
  bool this_pass = false;
  int64_t start_ms = 0;
  std::optional<int64_t> end_ms;  // start + time limit.
  std::vector<Hold> holds;
};

void Remove(Rooms& rooms, const Holder& h) {
  for (const Hold& x : h.holds) {
    Room& r = rooms[x.pos];
    r.free += x.used;
    r.reserved -= x.reserved;
    r.queue_jobs -= 1;
    r.whole_jobs -= x.whole ? 1 : 0;
  }
}

// Books a job whose allocations NVML's free memory already reflects (a
// running job as loaded, or one just started, which has none yet).
void Book(Rooms& rooms, const Holder& h) {
  for (const Hold& x : h.holds) {
    Room& r = rooms[x.pos];
    r.reserved += x.reserved;
    r.queue_jobs += 1;
    r.whole_jobs += x.whole ? 1 : 0;
  }
}

// Undoes Remove().
void Add(Rooms& rooms, const Holder& h) {
  Book(rooms, h);
  for (const Hold& x : h.holds) rooms[x.pos].free -= x.used;
}

// The GPUs as the placement core sees them (placement/placement.h decides
// eligibility, room, order, GPU sets and "never"), plus the queue's own
// bookkeeping: reservations, whole-GPU jobs and EXCLUSIVE GPUs taken in this
// pass.
placement::Candidate CandidateOf(const GpuState& g) {
  placement::GpuFacts f;
  f.index = g.index;
  f.total_bytes = g.total_bytes;
  f.reserved_bytes = g.reserved_bytes;
  f.free_bytes = g.free_bytes;
  f.util_pct = g.util_pct;
  for (const auto& [pid, bytes] : g.process_bytes) f.listed_bytes += bytes;
  f.unreachable = g.unreachable;
  f.mig = g.mig;
  f.compute_mode = g.compute_mode;
  f.compute_process = g.compute_process;
  f.healthy = g.healthy;
  f.reset_pending = g.reset_pending;
  return placement::Assess(f);
}

std::vector<const GpuState*> SortedGpus(const QueueView& view) {
  std::vector<const GpuState*> dev;
  for (const GpuState& g : view.gpus) dev.push_back(&g);
  // As placement::Server orders them: stable by index, the first of equal
  // indices kept, at most kMaxGpus.
  std::stable_sort(dev.begin(), dev.end(),
                   [](const GpuState* a, const GpuState* b) { return a->index < b->index; });
  dev.erase(std::unique(dev.begin(), dev.end(),
                        [](const GpuState* a, const GpuState* b) { return a->index == b->index; }),
            dev.end());
  if (dev.size() > kMaxGpus) dev.resize(kMaxGpus);
  return dev;
}

std::vector<placement::Candidate> Candidates(const std::vector<const GpuState*>& dev) {
  std::vector<placement::Candidate> out;
  out.reserve(dev.size());
  for (const GpuState* g : dev) out.push_back(CandidateOf(*g));
  return out;
}

class Gpus {
 public:
  explicit Gpus(const QueueView& view)
      : dev_(SortedGpus(view)),
        core_(Candidates(dev_), view.topology, view.config.margin_bytes),
        ever_(core_) {}

  // Not copyable: ever_ refers to core_.
  Gpus(const Gpus&) = delete;
  Gpus& operator=(const Gpus&) = delete;

  unsigned size() const { return core_.size(); }
  const GpuState& at(unsigned pos) const { return *dev_[pos]; }
  const placement::Server& core() const { return core_; }
  Mask all() const { return core_.all(); }
  Mask placeable() const { return core_.eligible(); }
  bool topology_known() const { return core_.topology_known(); }
  int64_t margin() const { return core_.margin(); }
  int Pos(unsigned index) const { return core_.Pos(index); }

  // Free memory as the core caps it (see placement.h).
  Rooms InitialRooms() const {
    Rooms rooms(size());
    for (unsigned p = 0; p < size(); ++p) rooms[p].free = core_.Free(p);
    return rooms;
  }

  // What a new job could be promised on `pos`; see AvailableBytes().
  int64_t Available(const Rooms& rooms, unsigned pos) const {
    const Room& r = rooms[pos];
    const int64_t avail = r.free - r.reserved - margin();
    return r.whole_jobs > 0 ? std::min<int64_t>(avail, 0) : avail;
  }

  bool Fits(const Rooms& rooms, unsigned pos, uint64_t bytes) const {
    const Room& r = rooms[pos];
    // An EXCLUSIVE GPU takes one process: not a second queue job, even one
    // that has not created its context yet.
    if (core_.at(pos).exclusive && r.queue_jobs > 0) return false;
    if (bytes == 0) {
      // 90 % of total, as task-spooler's "free GPU": a display server or a
      // small idle holder does not make a GPU unusable for a whole-GPU job.
      const int64_t total = Signed(dev_[pos]->total_bytes.value_or(0));
      return r.queue_jobs == 0 && r.free >= total - total * (100 - kWholeGpuFreePct) / 100;
    }
    return r.whole_jobs == 0 && Available(rooms, pos) >= Signed(bytes);
  }

  bool UtilOk(unsigned pos, const Need& need) const {
    if (!need.max_util) return true;
    const std::optional<unsigned>& u = dev_[pos]->util_pct;
    return u && *u <= *need.max_util;
  }

  // Placeable GPUs in `allowed` on which one GPU's share of `need` fits.
  Mask RoomMask(const Rooms& rooms, const Need& need, bool check_util, Mask allowed) const {
    Mask m = 0;
    for (Mask rest = placeable() & allowed; rest != 0; rest &= rest - 1) {
      const auto p = static_cast<unsigned>(std::countr_zero(rest));
      if (Fits(rooms, p, need.bytes) && (!check_util || UtilOk(p, need))) m |= Bit(p);
    }
    return m;
  }

  // The GPUs to give `need` among `cand` (each of which fits), or 0: the
  // core's choice, ranked by what each GPU could still be promised.
  Mask Choose(const Rooms& rooms, const Need& need, Mask cand) const {
    if (need.gpus == 0 || Count(cand) < need.gpus) return 0;
    std::array<int64_t, kMaxGpus> avail{};
    for (Mask rest = cand; rest != 0; rest &= rest - 1) {
      const auto p = static_cast<unsigned>(std::countr_zero(rest));
      avail[p] = Available(rooms, p);
    }
    return core_.Choose(Request(need), cand, std::span<const int64_t>(avail.data(), size()));
  }

  // Whether `need` could ever be placed (the core's answer): kNone when it
  // can, kUnhealthy when only on GPUs that cannot be used, kTopologyUnknown,
  // or kNeverFits.
  Code Static(const Need& need) const {
    switch (ever_.CanEver(Request(need))) {
      case placement::Ever::kPossible:
        return Code::kNone;
      case placement::Ever::kUnusable:
        return Code::kUnhealthy;
      case placement::Ever::kTopologyUnknown:
        return Code::kTopologyUnknown;
      case placement::Ever::kNever:
        return Code::kNeverFits;
    }
    return Code::kNeverFits;
  }

  static placement::Request Request(const Need& need) {
    return {.gpus = need.gpus, .bytes_per_gpu = need.bytes, .nvlink = need.nvlink};
  }

 private:
  std::vector<const GpuState*> dev_;
  placement::Server core_;
  placement::EverCache ever_;
};

Holder RunningHolder(const Gpus& gpus, const RunningJob& job) {
  Holder h;
  h.id = job.id;
  h.user = job.user;
  h.priority = job.priority;
  h.preemptible = job.preemptible;
  h.stopping = job.stopping;
  h.start_ms = job.start_unix_ms;
  if (job.time_limit_s) h.end_ms = EndMs(job.start_unix_ms, *job.time_limit_s);
  for (unsigned index : job.gpus) {
    const int pos = gpus.Pos(index);
    if (pos < 0) continue;
    const GpuState& g = gpus.at(static_cast<unsigned>(pos));
    Hold x;
    x.pos = static_cast<unsigned>(pos);
    for (pid_t pid : job.pids) {
      auto it = g.process_bytes.find(pid);
      if (it != g.process_bytes.end()) x.used += Signed(it->second);
    }
    x.whole = job.vram_per_gpu == 0;
    x.reserved = x.whole ? 0 : std::max<int64_t>(0, Signed(job.vram_per_gpu) - x.used);
    h.holds.push_back(x);
  }
  return h;
}

// uid -> dense index, for per-user counters without a map lookup per job.
class UserIndex {
 public:
  UserIndex() : slots_(64, kEmpty) {}
  uint32_t Get(uid_t uid) {
    if (uid == last_uid_ && last_ != kEmpty) return last_;
    size_t i = Hash(uid) & (slots_.size() - 1);
    while (slots_[i] != kEmpty) {
      if (uids_[slots_[i]] == uid) return Remember(uid, slots_[i]);
      i = (i + 1) & (slots_.size() - 1);
    }
    const auto idx = static_cast<uint32_t>(uids_.size());
    uids_.push_back(uid);
    slots_[i] = idx;
    if (uids_.size() * 2 > slots_.size()) Grow();
    return Remember(uid, idx);
  }
  size_t size() const { return uids_.size(); }
  uid_t uid(uint32_t idx) const { return uids_[idx]; }

 private:
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
  static size_t Hash(uid_t uid) {
    return (static_cast<uint64_t>(uid) * 0x9E3779B97F4A7C15ull) >> 32;
  }
  uint32_t Remember(uid_t uid, uint32_t idx) {
    last_uid_ = uid;
    last_ = idx;
    return idx;
  }
  void Grow() {
    std::vector<uint32_t> bigger(slots_.size() * 2, kEmpty);
    for (uint32_t idx = 0; idx < uids_.size(); ++idx) {
      size_t i = Hash(uids_[idx]) & (bigger.size() - 1);
      while (bigger[i] != kEmpty) i = (i + 1) & (bigger.size() - 1);
      bigger[i] = idx;
    }
    slots_ = std::move(bigger);
  }
  std::vector<uint32_t> slots_;
  std::vector<uid_t> uids_;
  uid_t last_uid_ = 0;
  uint32_t last_ = kEmpty;
};

struct UserStat {
  unsigned running = 0;
  unsigned gpus = 0;
  double usage = 0;
  std::string_view name;
};

// A waiting job's fields that the pass reads for every job, kept compact so
// that walking 100,000 jobs in scheduling order stays in cache (a Job is
// several hundred bytes; reading Jobs in priority order misses on each).
// The Job itself is read only for the jobs tried or explained.
struct Hot {
  JobId id = 0;
  uint32_t user = 0;
  uint16_t gpus = 0;  // Saturated; more than kMaxGpus never fits anyway.
  Code code = Code::kNone;
  bool started : 1 = false;
  bool has_message : 1 = false;
};

// What orders a waiting job besides its id and owner; only while sorting.
struct SortFields {
  int64_t eff = 0;  // Effective priority.
  int64_t submit = 0;
};

struct KeyIdx {
  uint64_t key;
  uint32_t idx;
};

// Stable LSD radix sort by key, one byte per pass; bytes every key shares are
// skipped (sort keys are packed tightly, so most high bytes are).
void RadixSort(std::vector<KeyIdx>& v) {
  if (v.size() < 2) return;
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (const KeyIdx& x : v) {
    all_or |= x.key;
    all_and &= x.key;
  }
  const uint64_t varying = all_or ^ all_and;
  std::vector<KeyIdx> tmp(v.size());
  for (unsigned shift = 0; shift < 64; shift += 8) {
    if (((varying >> shift) & 0xff) == 0) continue;
    std::array<size_t, 256> count{};
    for (const KeyIdx& x : v) ++count[(x.key >> shift) & 0xff];
    size_t sum = 0;
    for (size_t& c : count) sum += std::exchange(c, sum);
    for (const KeyIdx& x : v) tmp[count[(x.key >> shift) & 0xff]++] = x;
    v.swap(tmp);
  }
}

unsigned Bits(uint64_t range) { return static_cast<unsigned>(std::bit_width(range)); }

// key followed by a field of `bits` bits (a shift by 64 would be undefined;
// then key is 0, as all fields together fit in 64 bits).
uint64_t Append(uint64_t key, unsigned bits, uint64_t field) {
  return bits >= 64 ? field : (key << bits) | field;
}

std::string GpuList(const Gpus& gpus, Mask m) {
  std::string out;
  for (Mask rest = m; rest != 0; rest &= rest - 1) {
    if (!out.empty()) out += ", ";
    out += std::to_string(gpus.at(static_cast<unsigned>(std::countr_zero(rest))).index);
  }
  return out;
}

std::string NeedText(const Need& need) {
  std::string s;
  if (need.gpus == 1) {
    s = need.bytes == 0 ? "a whole GPU (no --vram)"
                        : fmt::format("{} on one GPU", FormatBytes(need.bytes));
  } else {
    s = need.bytes == 0 ? fmt::format("{} whole GPUs (no --vram)", need.gpus)
                        : fmt::format("{} on each of {} GPUs", FormatBytes(need.bytes), need.gpus);
    if (need.nvlink) s += " joined by NVLink";
  }
  if (need.max_util) s += fmt::format(", at most {}% busy", *need.max_util);
  return s;
}

// A pass's head of line and what is kept for it. Outside Pass: clang cannot
// default-construct (std::optional::emplace) a class nested in the class
// that holds it when its members have initialisers.
struct Head {
  uint32_t entry = 0;  // Index into hot_ / jobs_.
  Need need;
  bool reserved = false;       // S and `projected` are set.
  std::optional<int64_t> at;   // Shadow time T.
  Mask gpus = 0;               // S.
  Rooms projected;             // The GPUs at T (or once the queue drains).
  std::vector<JobId> victims;  // Preempted for it in this pass.
};

class Pass {
 public:
  explicit Pass(const QueueView& view)
      : view_(view),
        cfg_(view.config),
        gpus_(view),
        rooms_(gpus_.InitialRooms()),
        minute_(((view.minute_of_day % kMinPerDay) + kMinPerDay) % kMinPerDay) {}

  Decisions Run() {
    LoadRunning();
    LoadWaiting();
    SortOrder();
    for (uint32_t k = 0; k < order_.size(); ++k) {
      // Jobs come in priority order, not in memory order.
      if (k + 32 < order_.size()) __builtin_prefetch(&hot_[order_[k + 32]]);
      Visit(k);
    }
    Finish();
    return std::move(out_);
  }

 private:
  void LoadRunning() {
    holders_.reserve(view_.running.size() + 16);
    for (const RunningJob& job : view_.running) {
      holders_.push_back(RunningHolder(gpus_, job));
      Book(rooms_, holders_.back());
      UserStat& u = users_[UserOf(job.uid)];
      u.running += 1;
      u.gpus += static_cast<unsigned>(job.gpus.size());
      if (u.name.empty()) u.name = job.user;
    }
  }

  uint32_t UserOf(uid_t uid) {
    const uint32_t idx = user_index_.Get(uid);
    if (idx >= users_.size()) users_.resize(idx + 1);
    return idx;
  }

  // One sequential walk over the Jobs: everything later steps need, and the
  // reasons that do not depend on the pass (held, dependency, window, never).
  void LoadWaiting() {
    const int64_t now = view_.now_unix_ms;
    const int64_t step_ms =
        cfg_.aging_step_s > 0 && cfg_.aging_cap > 0 ? EndMs(0, cfg_.aging_step_s) : 0;
    const size_t total = view_.waiting.size();
    hot_.reserve(total);
    jobs_.reserve(total);
    sort_.reserve(total);
    for (size_t w = 0; w < total; ++w) {
      // The Jobs are large and wherever the caller keeps them: fetch the
      // lines read below a few jobs ahead.
      constexpr size_t kAhead = 16;
      if (w + kAhead < total && view_.waiting[w + kAhead] != nullptr) {
        const char* ahead = reinterpret_cast<const char*>(view_.waiting[w + kAhead]);
        __builtin_prefetch(ahead);
        __builtin_prefetch(ahead + offsetof(Job, spec) + offsetof(JobSpec, gpus));
        __builtin_prefetch(ahead + offsetof(Job, spec) + offsetof(JobSpec, after));
        __builtin_prefetch(ahead + offsetof(Job, state));
      }
      const Job* job = view_.waiting[w];
      if (job == nullptr || (job->state != JobState::kQueued && job->state != JobState::kHeld)) {
        continue;
      }
      const JobSpec& spec = job->spec;
      bool pending = false;
      if (!spec.after.empty()) {
        bool failed = false;
        for (JobId dep : spec.after) {
          auto it = view_.dependency_states.find(dep);
          if (it == view_.dependency_states.end() ||
              (IsTerminal(it->second) && it->second != JobState::kSucceeded)) {
            failed = true;
          } else if (it->second != JobState::kSucceeded) {
            pending = true;
          }
        }
        if (failed) {
          out_.dependency_failed.push_back(job->id);
          continue;
        }
      }
      Hot h;
      SortFields f;
      h.id = job->id;
      h.user = UserOf(job->owner.uid);
      h.gpus = static_cast<uint16_t>(std::min<unsigned>(spec.gpus, 0xffff));
      if (users_[h.user].name.empty()) users_[h.user].name = job->owner.user;
      f.eff = spec.priority;
      f.submit = job->submit_unix_ms;
      if (step_ms > 0 && now > job->submit_unix_ms) {
        // Unsigned: the difference of any two int64_t fits, not overflows.
        const uint64_t waited =
            static_cast<uint64_t>(now) - static_cast<uint64_t>(job->submit_unix_ms);
        f.eff += static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(cfg_.aging_cap),
                                                         waited / static_cast<uint64_t>(step_ms)));
      }
      if (job->state == JobState::kHeld) {
        h.code = Code::kHeld;
      } else if (pending) {
        h.code = Code::kDependency;
      } else if (spec.window && !spec.window->Contains(minute_)) {
        h.code = Code::kWindow;
        openings_.emplace_back(static_cast<uint32_t>(hot_.size()), WindowOpening(*job));
      } else {
        h.code = gpus_.Static(NeedOf(spec));  // kNone when it can fit.
      }
      hot_.push_back(h);
      jobs_.push_back(job);
      sort_.push_back(f);
    }
    std::sort(out_.dependency_failed.begin(), out_.dependency_failed.end());
    for (size_t i = 0; i < users_.size(); ++i) {
      auto it = view_.usage_gpu_s.find(user_index_.uid(static_cast<uint32_t>(i)));
      users_[i].usage = it == view_.usage_gpu_s.end() ? 0 : it->second;
    }
  }

  // Scheduling order: (effective priority desc, fair-share rank asc) then
  // (submit time, id) asc. Fast path: a stable counting sort on the first
  // pair (few distinct values), which leaves each bucket in the caller's
  // order; the store lists jobs by id and ids grow with submit time, so the
  // buckets are then already in order and only checked (a bucket that is
  // not gets sorted). Otherwise an LSD radix sort of the four keys packed in
  // 64 bits, or, when they do not fit, a comparison sort.
  void SortOrder() {
    const size_t n = hot_.size();
    order_.resize(n);
    if (n == 0) return;
    // Fair share: users ranked by usage, equal usage sharing a rank.
    std::vector<double> usages;
    for (const UserStat& u : users_) usages.push_back(u.usage);
    std::sort(usages.begin(), usages.end());
    usages.erase(std::unique(usages.begin(), usages.end()), usages.end());
    std::vector<uint64_t> rank(users_.size());
    for (size_t i = 0; i < users_.size(); ++i) {
      rank[i] = static_cast<uint64_t>(
          std::lower_bound(usages.begin(), usages.end(), users_[i].usage) - usages.begin());
    }
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    int64_t eff_min = kMax, eff_max = kMin, sub_min = kMax, sub_max = kMin;
    int64_t id_min = kMax, id_max = kMin;
    for (size_t i = 0; i < n; ++i) {
      eff_min = std::min(eff_min, sort_[i].eff);
      eff_max = std::max(eff_max, sort_[i].eff);
      sub_min = std::min(sub_min, sort_[i].submit);
      sub_max = std::max(sub_max, sort_[i].submit);
      id_min = std::min(id_min, hot_[i].id);
      id_max = std::max(id_max, hot_[i].id);
    }
    auto span = [](int64_t lo, int64_t hi) {
      return static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    };
    const unsigned b_user = Bits(usages.size() - 1);
    const unsigned b_sub = Bits(span(sub_min, sub_max));
    const unsigned b_id = Bits(span(id_min, id_max));
    const unsigned b_eff = Bits(span(eff_min, eff_max));
    auto head_key = [&](size_t i) {
      return Append(span(sort_[i].eff, eff_max), b_user, rank[hot_[i].user]);
    };
    auto tail_less = [&](uint32_t a, uint32_t b) {
      if (sort_[a].submit != sort_[b].submit) return sort_[a].submit < sort_[b].submit;
      if (hot_[a].id != hot_[b].id) return hot_[a].id < hot_[b].id;
      return a < b;
    };
    if (b_eff + b_user <= 16) {
      std::vector<uint32_t> start((size_t{1} << (b_eff + b_user)) + 1, 0);
      for (size_t i = 0; i < n; ++i) ++start[head_key(i) + 1];
      for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
      std::vector<uint32_t> next(start.begin(), start.end() - 1);
      for (uint32_t i = 0; i < n; ++i) order_[next[head_key(i)]++] = i;
      for (size_t b = 0; b + 1 < start.size(); ++b) {
        auto first = order_.begin() + start[b];
        auto last = order_.begin() + start[b + 1];
        if (!std::is_sorted(first, last, tail_less)) std::sort(first, last, tail_less);
      }
    } else if (b_eff + b_user + b_sub + b_id <= 64) {
      std::vector<KeyIdx> keys(n);
      for (uint32_t i = 0; i < n; ++i) {
        uint64_t key = head_key(i);  // Higher priority first.
        key = Append(key, b_sub, span(sub_min, sort_[i].submit));
        key = Append(key, b_id, span(id_min, hot_[i].id));
        keys[i] = {key, i};
      }
      RadixSort(keys);
      for (size_t i = 0; i < n; ++i) order_[i] = keys[i].idx;
    } else {
      std::iota(order_.begin(), order_.end(), 0u);
      std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
        if (sort_[a].eff != sort_[b].eff) return sort_[a].eff > sort_[b].eff;
        const uint64_t ra = rank[hot_[a].user], rb = rank[hot_[b].user];
        if (ra != rb) return ra < rb;
        return tail_less(a, b);
      });
    }
    sort_ = {};
  }

  bool Explain(uint32_t k) const { return k < cfg_.explain_depth; }

  void Say(uint32_t idx, std::string message) {
    hot_[idx].has_message = true;
    messages_.emplace_back(idx, std::move(message));
  }

  // When a job outside its window may start: the next opening.
  int64_t WindowOpening(const Job& job) const {
    const int64_t now = view_.now_unix_ms;
    const int delta =
        ((job.spec.window->start_min - minute_) % kMinPerDay + kMinPerDay) % kMinPerDay;
    return now - ((now % kMsPerMin) + kMsPerMin) % kMsPerMin + delta * kMsPerMin;
  }

  void Visit(uint32_t k) {
    const uint32_t idx = order_[k];
    Hot& hot = hot_[idx];
    if (hot.code != Code::kNone) {
      if (Explain(k)) Say(idx, FixedText(idx));
      return;
    }
    UserStat& user = users_[hot.user];
    const bool running_limit =
        cfg_.max_running_per_user > 0 && user.running >= cfg_.max_running_per_user;
    const bool gpu_limit =
        cfg_.max_gpus_per_user > 0 && user.gpus + hot.gpus > cfg_.max_gpus_per_user;
    if (running_limit || gpu_limit) {
      hot.code = Code::kUserLimit;
      if (Explain(k)) Say(idx, UserLimitText(user, hot.gpus, running_limit));
      return;
    }
    if (hot.gpus == 0) {  // Takes nothing the head could need.
      Start(idx, Need{}, 0, false);
      return;
    }
    if (head_ && ++tried_ > cfg_.backfill_depth) {
      hot.code = Code::kPriority;
      if (Explain(k)) {
        Say(idx, fmt::format("behind {} jobs; not tried this pass (backfill depth {})", k,
                             cfg_.backfill_depth));
      }
      return;
    }
    // Only the jobs actually tried read their Job.
    const JobSpec& spec = jobs_[idx]->spec;
    const Need need = NeedOf(spec);
    if (!head_) {
      const Mask fit = gpus_.Choose(rooms_, need, gpus_.RoomMask(rooms_, need, true, ~Mask{0}));
      if (fit != 0) {
        Start(idx, need, fit, false);
        return;
      }
      MakeHead(k, need);
      return;
    }
    const Head& h = *head_;
    const bool ends_first =
        h.at && spec.time_limit_s && EndMs(view_.now_unix_ms, *spec.time_limit_s) <= *h.at;
    const bool guarded = h.reserved && !ends_first;
    const Mask allowed = guarded ? BackfillMask(need) : ~Mask{0};
    const Mask fit = gpus_.Choose(rooms_, need, gpus_.RoomMask(rooms_, need, true, allowed));
    if (fit != 0) {
      Start(idx, need, fit, guarded);
      return;
    }
    const bool fits_unguarded =
        guarded && gpus_.Choose(rooms_, need, gpus_.RoomMask(rooms_, need, true, ~Mask{0})) != 0;
    hot.code = fits_unguarded ? Code::kReservedForHead : Blocker(need);
    if (Explain(k)) {
      Say(idx, hot.code == Code::kReservedForHead ? ReservedText(spec) : BlockedText(need, idx));
    }
  }

  // Why a job that does not fit now (head or not) waits: its --max-util
  // alone, or memory and placement.
  Code Blocker(const Need& need) const {
    const bool util_alone = need.max_util && FitIgnoringUtil(rooms_, need) != 0;
    return util_alone ? Code::kUtil : Code::kResources;
  }

  // GPUs a job may take now without delaying the head: any outside S, and a
  // GPU of S only if what the job takes leaves the head fitting there at T.
  Mask BackfillMask(const Need& need) const {
    const Head& h = *head_;
    Mask allowed = ~h.gpus;
    if (h.need.bytes == 0 || need.bytes == 0) return allowed;
    for (Mask rest = h.gpus; rest != 0; rest &= rest - 1) {
      const auto p = static_cast<unsigned>(std::countr_zero(rest));
      if (gpus_.Available(h.projected, p) - Signed(need.bytes) >= Signed(h.need.bytes)) {
        allowed |= Bit(p);
      }
    }
    return allowed;
  }

  void Start(uint32_t idx, const Need& need, Mask gpus, bool project) {
    const Job& job = *jobs_[idx];
    hot_[idx].started = true;
    StartDecision d;
    d.id = job.id;
    Holder h;
    h.id = job.id;
    h.user = job.owner.user;
    h.priority = job.spec.priority;
    h.preemptible = job.spec.preemptible;
    h.this_pass = true;
    h.start_ms = view_.now_unix_ms;
    if (job.spec.time_limit_s) h.end_ms = EndMs(h.start_ms, *job.spec.time_limit_s);
    for (Mask rest = gpus; rest != 0; rest &= rest - 1) {
      const auto p = static_cast<unsigned>(std::countr_zero(rest));
      d.gpus.push_back(gpus_.at(p).index);
      Hold x;
      x.pos = p;
      x.whole = need.bytes == 0;
      x.reserved = x.whole ? 0 : Signed(need.bytes);
      h.holds.push_back(x);
    }
    Book(rooms_, h);
    if (project) Book(head_->projected, h);
    holders_.push_back(std::move(h));
    UserStat& u = users_[hot_[idx].user];
    u.running += 1;
    u.gpus += need.gpus;
    out_.start.push_back(std::move(d));
  }

  void MakeHead(uint32_t k, const Need& need) {
    const uint32_t idx = order_[k];
    head_.emplace();
    Head& h = *head_;
    h.entry = idx;
    h.need = need;
    hot_[idx].code = Blocker(need);
    if (!(hot_[idx].code == Code::kResources && cfg_.preemption && Preempt())) Shadow();
    if (Explain(k)) Say(idx, BlockedText(need, idx));
  }

  Mask FitIgnoringUtil(const Rooms& rooms, const Need& need) const {
    return gpus_.Choose(rooms, need, gpus_.RoomMask(rooms, need, false, ~Mask{0}));
  }

  // Preemption for the head; true when victims were chosen.
  bool Preempt() {
    const Job& job = *jobs_[head_->entry];
    Head& h = *head_;
    Rooms base = rooms_;
    for (const Holder& x : holders_) {
      if (x.stopping) Remove(base, x);
    }
    // The jobs already being stopped are enough: wait for them.
    if (FitIgnoringUtil(base, h.need) != 0) return false;
    std::vector<const Holder*> cand;
    for (const Holder& x : holders_) {
      if (x.preemptible && !x.stopping && !x.this_pass && x.priority < job.spec.priority) {
        cand.push_back(&x);
      }
    }
    if (cand.empty()) return false;
    Rooms all = base;
    for (const Holder* x : cand) Remove(all, *x);
    if (FitIgnoringUtil(all, h.need) == 0) return false;
    // Lowest priority first, then the most recently started (least work lost).
    std::sort(cand.begin(), cand.end(), [](const Holder* a, const Holder* b) {
      if (a->priority != b->priority) return a->priority < b->priority;
      if (a->start_ms != b->start_ms) return a->start_ms > b->start_ms;
      return a->id > b->id;
    });
    std::vector<const Holder*> chosen;
    Rooms cur = base;
    for (const Holder* x : cand) {
      Remove(cur, *x);
      chosen.push_back(x);
      if (FitIgnoringUtil(cur, h.need) != 0) break;
    }
    // Spare any victim the head does not need after all, the most valuable
    // (last tried) first.
    for (size_t i = chosen.size(); i-- > 0;) {
      Rooms back = cur;
      Add(back, *chosen[i]);
      if (FitIgnoringUtil(back, h.need) != 0) {
        cur = std::move(back);
        chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    std::sort(chosen.begin(), chosen.end(),
              [](const Holder* a, const Holder* b) { return a->id < b->id; });
    for (const Holder* x : chosen) {
      out_.preempt.push_back({x->id, job.id});
      h.victims.push_back(x->id);
    }
    h.reserved = true;
    h.at = view_.now_unix_ms;
    h.gpus = FitIgnoringUtil(cur, h.need);
    h.projected = std::move(cur);
    return true;
  }

  // The head's shadow time and reserved GPUs (see the header).
  void Shadow() {
    Head& h = *head_;
    auto reserve = [&](Rooms rooms, Mask gpus, std::optional<int64_t> at) {
      h.reserved = true;
      h.gpus = gpus;
      h.at = at;
      h.projected = std::move(rooms);
    };
    Rooms rooms = rooms_;
    // Fits in memory now: only utilisation stands in its way, which is not
    // projected; keep its GPUs, with no estimate.
    if (const Mask fit = FitIgnoringUtil(rooms, h.need); fit != 0) {
      return reserve(std::move(rooms), fit, std::nullopt);
    }
    std::vector<std::pair<int64_t, const Holder*>> ends;
    for (const Holder& x : holders_) {
      if (x.stopping) {
        ends.emplace_back(view_.now_unix_ms, &x);
      } else if (x.end_ms) {
        ends.emplace_back(std::max(*x.end_ms, view_.now_unix_ms), &x);
      }
    }
    std::sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->id < b.second->id;
    });
    for (size_t i = 0; i < ends.size();) {
      const int64_t t = ends[i].first;
      for (; i < ends.size() && ends[i].first == t; ++i) Remove(rooms, *ends[i].second);
      if (const Mask fit = FitIgnoringUtil(rooms, h.need); fit != 0) {
        return reserve(std::move(rooms), fit, t);
      }
    }
    // No time limit tells when: plan for the drained queue.
    rooms = rooms_;
    for (const Holder& x : holders_) Remove(rooms, x);
    if (const Mask fit = FitIgnoringUtil(rooms, h.need); fit != 0) {
      return reserve(std::move(rooms), fit, std::nullopt);
    }
  }

  // --- Explanations (only for the first explain_depth jobs) -----------------

  // Reasons decided before the pass: held, dependency, window, never fits.
  std::string FixedText(uint32_t idx) const {
    const JobSpec& spec = jobs_[idx]->spec;
    switch (hot_[idx].code) {
      case Code::kHeld:
        return "held; it starts only once released";
      case Code::kDependency: {
        std::string deps;
        for (JobId dep : spec.after) {
          auto it = view_.dependency_states.find(dep);
          if (it == view_.dependency_states.end() || it->second == JobState::kSucceeded) continue;
          if (!deps.empty()) deps += ", ";
          deps += fmt::format("job {} ({})", dep, JobStateName(it->second));
        }
        return fmt::format("waits for {} to succeed", deps);
      }
      case Code::kWindow: {
        const int64_t wait_ms = WindowOpening(*jobs_[idx]) - view_.now_unix_ms;
        return fmt::format("starts only within {}; next opening in {}",
                           FormatTimeWindow(*spec.window),
                           FormatDuration(static_cast<double>(wait_ms) / kMsPerS));
      }
      case Code::kUnhealthy:
      case Code::kTopologyUnknown:
      case Code::kNeverFits:
        return StaticText(NeedOf(spec), hot_[idx].code);
      default:
        return "";
    }
  }

  std::string StaticText(const Need& need, Code code) const {
    const placement::Server& core = gpus_.core();
    if (code == Code::kTopologyUnknown) {
      return fmt::format("needs {}, but the GPU topology is unknown (NVLink cannot be checked)",
                         NeedText(need));
    }
    if (code == Code::kUnhealthy) {
      std::string bad;
      const Mask big = core.BigEnough(need.bytes) & ~core.later();
      for (Mask rest = big; rest != 0; rest &= rest - 1) {
        const auto p = static_cast<unsigned>(std::countr_zero(rest));
        const GpuState& g = gpus_.at(p);
        if (!bad.empty()) bad += "; ";
        switch (core.at(p).block) {
          case placement::Block::kUnhealthy:
          case placement::Block::kUnreachable:
            bad += fmt::format("GPU {} is {}{}{}", g.index, placement::BlockText(core.at(p).block),
                               g.unhealthy_reason.empty() ? "" : ": ", g.unhealthy_reason);
            break;
          case placement::Block::kMemoryUnknown:
            bad +=
                fmt::format("GPU {}'s {}memory is unknown", g.index, g.total_bytes ? "free " : "");
            break;
          default:
            bad += fmt::format("GPU {} is {}", g.index, placement::BlockText(core.at(p).block));
            break;
        }
      }
      return fmt::format("needs {}; it would fit only on GPUs that cannot be used: {}",
                         NeedText(need), bad);
    }
    const placement::NeverWhy why = core.WhyNever(Gpus::Request(need));
    const unsigned n = why.server_gpus;
    if (why.kind == placement::NeverWhy::Kind::kTooFewGpus) {
      return fmt::format("needs {}; the server has {} GPU{}", NeedText(need), n, n == 1 ? "" : "s");
    }
    if (why.kind == placement::NeverWhy::Kind::kTooSmall) {
      const uint64_t largest = why.largest_capacity.value_or(0);
      const uint64_t margin = static_cast<uint64_t>(gpus_.margin());
      const uint64_t usable = largest > margin ? largest - margin : 0;
      const unsigned big = why.big_enough;
      const std::string how_many = big == 0   ? "no GPU is"
                                   : big == 1 ? "only 1 GPU is"
                                              : fmt::format("only {} GPUs are", big);
      return fmt::format(
          "needs {}; {} that big (the largest has {} usable, {} after the {} margin)",
          NeedText(need), how_many, FormatBytes(largest), FormatBytes(usable), FormatBytes(margin));
    }
    return fmt::format("needs {}; at most {} GPUs big enough are joined by NVLink", NeedText(need),
                       why.largest_nvlink_set);
  }

  std::string UserLimitText(const UserStat& u, unsigned gpus, bool running_limit) const {
    if (running_limit) {
      return fmt::format("{} has {} running job{} (limit {} per user)", u.name, u.running,
                         u.running == 1 ? "" : "s", cfg_.max_running_per_user);
    }
    if (gpus > cfg_.max_gpus_per_user) {
      return fmt::format("needs {} GPUs; the limit is {} per user", gpus, cfg_.max_gpus_per_user);
    }
    return fmt::format("{} uses {} GPU{} and this job needs {} more (limit {} per user)", u.name,
                       u.gpus, u.gpus == 1 ? "" : "s", gpus, cfg_.max_gpus_per_user);
  }

  // "(28 GiB held by PID 4242, alice, idle 2d)" or "(20 GiB held by job 17
  // (bob))": the biggest holder of a GPU, inside or outside the queue.
  std::string HolderText(unsigned pos) const {
    const GpuHolder* outside = nullptr;
    for (const GpuHolder& x : gpus_.at(pos).holders) {
      if (outside == nullptr || x.bytes > outside->bytes) outside = &x;
    }
    const Holder* inside = nullptr;
    int64_t inside_bytes = -1;
    bool whole = false;
    for (const Holder& x : holders_) {
      for (const Hold& hold : x.holds) {
        if (hold.pos != pos || whole) continue;
        // A whole-GPU job is the one to name, whatever it has allocated.
        if (hold.whole || hold.used + hold.reserved > inside_bytes) {
          inside = &x;
          inside_bytes = hold.used + hold.reserved;
          whole = hold.whole;
        }
      }
    }
    if (inside != nullptr &&
        (whole || outside == nullptr || inside_bytes >= Signed(outside->bytes))) {
      const std::string who = fmt::format("job {} ({})", inside->id, inside->user);
      if (whole) return fmt::format(" (taken whole by {})", who);
      return fmt::format(" ({} held by {})", FormatBytes(static_cast<uint64_t>(inside_bytes)), who);
    }
    if (outside != nullptr) {
      std::string who = fmt::format("PID {}", outside->pid);
      if (!outside->user.empty()) who += ", " + outside->user;
      if (outside->idle_s) who += ", idle " + FormatDuration(*outside->idle_s);
      return fmt::format(" ({} held by {})", FormatBytes(outside->bytes), who);
    }
    return "";
  }

  std::string AvailText(int64_t avail) const {
    return avail > 0 ? FormatBytes(static_cast<uint64_t>(avail)) : "nothing";
  }

  // What the server offers now against what `need` asks.
  std::string OfferText(const Need& need) const {
    const Mask usable = gpus_.placeable();
    if (usable == 0) return "no GPU can be used now";
    if (need.bytes == 0) {
      // The emptiest GPU: fewest queue jobs, then most free.
      int best = -1;
      for (Mask rest = usable; rest != 0; rest &= rest - 1) {
        const auto p = static_cast<unsigned>(std::countr_zero(rest));
        if (best < 0 || rooms_[p].queue_jobs < rooms_[best].queue_jobs ||
            (rooms_[p].queue_jobs == rooms_[best].queue_jobs &&
             rooms_[p].free > rooms_[best].free)) {
          best = static_cast<int>(p);
        }
      }
      const auto p = static_cast<unsigned>(best);
      const uint64_t free = static_cast<uint64_t>(std::max<int64_t>(0, rooms_[p].free));
      return fmt::format("the emptiest is GPU {} with {} of {} free{}", gpus_.at(p).index,
                         FormatBytes(free), FormatBytes(gpus_.at(p).total_bytes.value_or(0)),
                         HolderText(p));
    }
    const Mask room = gpus_.RoomMask(rooms_, need, false, ~Mask{0});
    // The most available GPU without room, for a multi-GPU job the next one.
    int best = -1;
    for (Mask rest = usable & ~room; rest != 0; rest &= rest - 1) {
      const auto p = static_cast<unsigned>(std::countr_zero(rest));
      if (best < 0 || gpus_.Available(rooms_, p) > gpus_.Available(rooms_, best)) {
        best = static_cast<int>(p);
      }
    }
    std::string s;
    if (need.gpus > 1 || Count(room) > 0) {
      s = fmt::format("{} GPU{} {} that much available", Count(room), Count(room) == 1 ? "" : "s",
                      Count(room) == 1 ? "has" : "have");
      if (need.nvlink && Count(room) >= need.gpus) s += ", but not enough of them joined by NVLink";
      if (best >= 0) {
        const auto p = static_cast<unsigned>(best);
        s += fmt::format("; the next is GPU {} with {}{}", gpus_.at(p).index,
                         AvailText(gpus_.Available(rooms_, p)), HolderText(p));
      }
      return s;
    }
    const auto p = static_cast<unsigned>(best);
    return fmt::format("the most available is {} on GPU {}{}",
                       AvailText(gpus_.Available(rooms_, p)), gpus_.at(p).index, HolderText(p));
  }

  std::string UtilText(const Need& need) const {
    const Mask room = gpus_.RoomMask(rooms_, need, false, ~Mask{0});
    int best = -1;
    bool unknown = false;
    for (Mask rest = room; rest != 0; rest &= rest - 1) {
      const auto p = static_cast<unsigned>(std::countr_zero(rest));
      const std::optional<unsigned> u = gpus_.at(p).util_pct;
      if (!u) {
        unknown = true;
        continue;
      }
      if (best < 0 || *u < *gpus_.at(static_cast<unsigned>(best)).util_pct)
        best = static_cast<int>(p);
    }
    std::string s = fmt::format("needs {}; ", NeedText(need));
    if (best >= 0) {
      const GpuState& g = gpus_.at(static_cast<unsigned>(best));
      s += fmt::format("the least busy GPU with room is GPU {} at {}%", g.index, *g.util_pct);
    } else {
      s += "the GPUs with room do not report their utilisation";
    }
    if (best >= 0 && unknown) s += " (others do not report utilisation)";
    return s;
  }

  std::string BlockedText(const Need& need, uint32_t idx) const {
    std::string s = hot_[idx].code == Code::kUtil
                        ? UtilText(need)
                        : fmt::format("needs {}; {}", NeedText(need), OfferText(need));
    if (!head_ || head_->entry != idx) return s;
    const Head& h = *head_;
    s += "; first in line";
    if (!h.victims.empty()) {
      std::string v;
      for (JobId id : h.victims) v += fmt::format("{}{}", v.empty() ? "" : ", ", id);
      return s + fmt::format(", preempting job{} {}", h.victims.size() == 1 ? "" : "s", v);
    }
    if (!h.reserved) {
      return s +
             ", but it would not fit even with the queue empty: processes outside the queue "
             "hold the memory";
    }
    s += fmt::format(", GPU{} {} kept for it", Count(h.gpus) == 1 ? "" : "s",
                     GpuList(gpus_, h.gpus));
    if (h.at) {
      s += fmt::format(", expected in {}",
                       FormatDuration(static_cast<double>(*h.at - view_.now_unix_ms) / kMsPerS));
    } else {
      s += ", start time unknown (the jobs in its way have no time limit)";
    }
    return s;
  }

  std::string ReservedText(const JobSpec& spec) const {
    const Head& h = *head_;
    std::string s =
        fmt::format("fits now, but would delay job {} (first in line, needs GPU{} {}",
                    hot_[h.entry].id, Count(h.gpus) == 1 ? "" : "s", GpuList(gpus_, h.gpus));
    if (!h.at) return s + ")";
    const int64_t left_s = (*h.at - view_.now_unix_ms) / kMsPerS;
    s += fmt::format(" in {})", FormatDuration(static_cast<double>(left_s)));
    if (!spec.time_limit_s && left_s > 0) {
      s += fmt::format("; with --time-limit {} or less it could start now",
                       FormatDuration(static_cast<double>(left_s)));
    }
    return s;
  }

  void Finish() {
    out_.order.reserve(order_.size());
    for (uint32_t idx : order_) {
      if (!hot_[idx].started) out_.order.push_back(hot_[idx].id);
    }
    std::sort(messages_.begin(), messages_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    auto emit = [&](uint32_t i) {
      const Hot& hot = hot_[i];
      auto& [id, r] = out_.waiting.emplace_back();
      id = hot.id;
      r.code = CodeName(hot.code);
      if (hot.has_message) {
        auto it = std::lower_bound(messages_.begin(), messages_.end(), i,
                                   [](const auto& m, uint32_t x) { return m.first < x; });
        r.message = std::move(it->second);
      }
      if (hot.code == Code::kWindow) {
        r.estimated_start_unix_ms =
            std::lower_bound(openings_.begin(), openings_.end(), i, [](const auto& o, uint32_t x) {
              return o.first < x;
            })->second;
      } else if (head_ && head_->entry == i) {
        r.estimated_start_unix_ms = head_->at;
      }
    };
    // `waiting` is sorted by id: the caller's order when that is sorted (the
    // store lists jobs by id), else radix-sorted here.
    int64_t id_min = std::numeric_limits<int64_t>::max();
    int64_t last = std::numeric_limits<int64_t>::min();
    bool sorted = true;
    size_t count = 0;
    for (const Hot& hot : hot_) {
      if (hot.started) continue;
      sorted = sorted && hot.id >= last;
      last = hot.id;
      id_min = std::min(id_min, hot.id);
      ++count;
    }
    out_.waiting.reserve(count);
    if (sorted) {
      for (uint32_t i = 0; i < hot_.size(); ++i) {
        if (!hot_[i].started) emit(i);
      }
      return;
    }
    std::vector<KeyIdx> by_id;
    by_id.reserve(count);
    for (uint32_t i = 0; i < hot_.size(); ++i) {
      if (hot_[i].started) continue;
      by_id.push_back({static_cast<uint64_t>(hot_[i].id) - static_cast<uint64_t>(id_min), i});
    }
    RadixSort(by_id);
    for (const KeyIdx& x : by_id) emit(x.idx);
  }

  const QueueView& view_;
  const PolicyConfig& cfg_;
  Gpus gpus_;
  Rooms rooms_;  // Now, with this pass's starts.
  std::vector<Holder> holders_;
  UserIndex user_index_;
  std::vector<UserStat> users_;
  std::vector<Hot> hot_;  // Waiting jobs in the caller's order; jobs_ and sort_ alike.
  std::vector<const Job*> jobs_;
  std::vector<SortFields> sort_;
  std::vector<uint32_t> order_;                             // Indices into hot_, scheduling order.
  std::vector<std::pair<uint32_t, std::string>> messages_;  // By index into hot_.
  std::vector<std::pair<uint32_t, int64_t>> openings_;      // Window jobs, ascending index.
  std::optional<Head> head_;
  unsigned tried_ = 0;  // Jobs tried after the head.
  int minute_ = 0;      // Minute of the day, 0..1439.
  Decisions out_;
};

}  // namespace

std::vector<GpuState> GpuStatesOf(const Snapshot& snapshot,
                                  const std::map<unsigned, std::string>& unhealthy,
                                  const std::set<pid_t>& queue_pids,
                                  const std::set<pid_t>& idle_pids,
                                  const std::map<unsigned, std::string>& reset_pending) {
  std::vector<GpuState> out;
  out.reserve(snapshot.gpus.size());
  for (const Gpu& g : snapshot.gpus) {
    // The core's reading of the GPU, as diagnose::CollectRooms() reads it.
    const placement::GpuFacts facts = placement::FactsOf(g);
    GpuState st;
    st.index = g.index;
    st.uuid = g.uuid.value_or("");
    st.total_bytes = facts.total_bytes;
    st.reserved_bytes = facts.reserved_bytes;
    st.free_bytes = facts.free_bytes;
    st.util_pct = facts.util_pct;
    st.unreachable = facts.unreachable;
    st.mig = facts.mig;
    st.compute_mode = facts.compute_mode;
    // The queue's own jobs on an EXCLUSIVE GPU are its bookkeeping (a job
    // that ends in the projection frees the GPU); only others take it.
    st.compute_process = std::any_of(g.processes.begin(), g.processes.end(), [&](const auto& p) {
      return p.type != GpuProcessType::kGraphics && !queue_pids.count(p.pid);
    });
    if (g.unreachable) {
      st.unhealthy_reason = g.unreachable->message;
    } else if (auto u = unhealthy.find(g.index); u != unhealthy.end()) {
      st.healthy = false;
      st.unhealthy_reason = u->second;
    } else if (reset_pending.count(g.index)) {
      st.reset_pending = true;
    }
    for (const GpuProcess& p : g.processes) {
      if (p.used_memory_bytes) st.process_bytes[p.pid] += *p.used_memory_bytes;
      if (queue_pids.count(p.pid) || !p.used_memory_bytes) continue;
      GpuHolder h;
      h.pid = p.pid;
      h.bytes = *p.used_memory_bytes;
      auto host = snapshot.processes.find(p.pid);
      if (host != snapshot.processes.end()) {
        h.user = host->second.user.value_or("?");
        h.command = JoinCommandLine(host->second.cmdline);
        if (idle_pids.count(p.pid)) h.idle_s = host->second.age_s;
      }
      st.holders.push_back(std::move(h));
    }
    std::stable_sort(st.holders.begin(), st.holders.end(),
                     [](const GpuHolder& a, const GpuHolder& b) { return a.bytes > b.bytes; });
    out.push_back(std::move(st));
  }
  return out;
}

Decisions Schedule(const QueueView& view) { return Pass(view).Run(); }

const WaitReason* FindWaiting(const Decisions& decisions, JobId id) {
  auto it = std::lower_bound(decisions.waiting.begin(), decisions.waiting.end(), id,
                             [](const auto& entry, JobId x) { return entry.first < x; });
  return it != decisions.waiting.end() && it->first == id ? &it->second : nullptr;
}

std::map<unsigned, int64_t> AvailableBytes(const QueueView& view) {
  const Gpus gpus(view);
  Rooms rooms = gpus.InitialRooms();
  for (const RunningJob& job : view.running) Book(rooms, RunningHolder(gpus, job));
  std::map<unsigned, int64_t> out;
  for (unsigned p = 0; p < gpus.size(); ++p) {
    if (gpus.placeable() & Bit(p)) out[gpus.at(p).index] = gpus.Available(rooms, p);
  }
  return out;
}

double DecayedUsage(double gpu_s, double age_s, double half_life_s) {
  if (age_s < 0) age_s = 0;
  if (half_life_s <= 0) return age_s == 0 ? gpu_s : 0;
  return gpu_s * std::exp2(-age_s / half_life_s);
}

std::string_view GenericWaitMessage(std::string_view code) {
  if (code == "held") return "held; it starts only once released";
  if (code == "dependency") return "waits for the jobs it runs after to succeed";
  if (code == "window") return "waits for its time window to open";
  if (code == "user_limit") return "its owner is at a per-user limit";
  if (code == "priority") return "waits behind jobs ahead of it in the queue";
  if (code == "resources") return "waits for GPU memory to free up";
  if (code == "util") return "waits for a GPU that is busy to become less busy";
  if (code == "reserved_for_head") return "would delay the job first in line";
  if (code == "unhealthy") return "fits only on GPUs that cannot be used now";
  if (code == "topology_unknown") return "needs NVLink, but the GPU topology is unknown";
  if (code == "never_fits") return "cannot fit on this server's GPUs";
  return "waiting";
}

}  // namespace gw::queue
