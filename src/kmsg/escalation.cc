#include "kmsg/escalation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "kmsg/xid_catalog.h"

namespace gw::kmsg {
namespace {

// The reboot-recoverable fault an event stands for, as (event kind, xid).
std::optional<std::pair<std::string, unsigned>> RecoverableFault(const KernelEvent& ev) {
  if (ev.kind == kKindXid && ev.xid) {
    const XidInfo info = LookupXid(*ev.xid);
    if (info.reboot_recoverable) return std::make_pair(std::string(kKindXid), *ev.xid);
    return std::nullopt;
  }
  if (ev.kind == kKindFallenOffBus) return std::make_pair(std::string(kKindXid), 79u);
  if (ev.kind == kKindGspRpcTimeout || ev.kind == kKindGspRpcRateLimited) {
    return std::make_pair(std::string(kKindXid), 119u);
  }
  if (ev.kind == kKindRmInitAdapterFailed) return std::make_pair(ev.kind, 0u);
  return std::nullopt;
}

struct Recurrence {
  std::set<int> boots;
  int occurrences = 0;
};

struct Burst {
  std::string boot_id;
  std::optional<int64_t> last_ms;
  std::set<std::string> processes;
  std::set<unsigned> xids;
  int events = 0;
};

std::string ProcessKey(const KernelEvent& ev, size_t burst_index) {
  if (ev.pid) return ev.boot_id + "/pid " + std::to_string(*ev.pid);
  // Unknown pid: the burst stands for one process.
  return ev.boot_id + "/burst " + std::to_string(burst_index);
}

std::string JoinXids(const std::vector<unsigned>& xids) {
  std::string s;
  for (unsigned x : xids) s += (s.empty() ? "" : "/") + std::to_string(x);
  return s;
}

}  // namespace

std::string_view EscalationKindName(EscalationKind k) {
  switch (k) {
    case EscalationKind::kHardwareInspection:
      return "hardware_inspection";
    case EscalationKind::kRunDiagnostics:
      return "run_diagnostics";
    case EscalationKind::kCheckApplication:
      return "check_application";
  }
  return "hardware_inspection";
}

std::vector<Escalation> Escalate(const std::vector<KernelEvent>& events,
                                 const EscalationPolicy& policy) {
  std::unordered_map<std::string, int> boot_ordinal;
  std::map<std::tuple<std::string, std::string, unsigned>, Recurrence> recurring;
  std::map<std::string, std::vector<Burst>> bursts;  // By GPU.

  for (const KernelEvent& ev : events) {
    auto [it, inserted] =
        boot_ordinal.try_emplace(ev.boot_id, static_cast<int>(boot_ordinal.size()));
    const int boot = it->second;
    if (!ev.pci_bus_id) continue;
    if (auto fault = RecoverableFault(ev)) {
      Recurrence& r = recurring[{*ev.pci_bus_id, fault->first, fault->second}];
      r.boots.insert(boot);
      ++r.occurrences;
    }
    if (ev.kind == kKindXid && ev.xid && (*ev.xid == 13 || *ev.xid == 31)) {
      std::vector<Burst>& list = bursts[*ev.pci_bus_id];
      const bool same_burst = !list.empty() && list.back().boot_id == ev.boot_id &&
                              (!ev.time_unix_ms || !list.back().last_ms ||
                               *ev.time_unix_ms - *list.back().last_ms <= policy.burst_gap_ms);
      if (!same_burst) {
        list.emplace_back();
        list.back().boot_id = ev.boot_id;
      }
      Burst& b = list.back();
      if (ev.time_unix_ms) b.last_ms = ev.time_unix_ms;
      b.processes.insert(ProcessKey(ev, list.size()));
      b.xids.insert(*ev.xid);
      ++b.events;
    }
  }

  std::vector<Escalation> out;
  for (const auto& [key, r] : recurring) {
    const int reboots = *r.boots.rbegin() - *r.boots.begin();
    if (reboots < policy.min_reboots) continue;
    const auto& [pci, kind, xid] = key;
    Escalation e;
    e.kind = EscalationKind::kHardwareInspection;
    e.pci_bus_ids = {pci};
    e.event_kind = kind;
    if (kind == kKindXid) e.xids.push_back(xid);
    e.boots = static_cast<int>(r.boots.size());
    e.reboots = reboots;
    e.occurrences = r.occurrences;
    const std::string what =
        kind == kKindXid ? "Xid " + std::to_string(xid) : std::string("RmInitAdapter failure");
    e.reason = what + " on " + pci + " recurred in " + std::to_string(e.boots) +
               " boots spanning " + std::to_string(reboots) +
               " reboots: a reset or reboot does not clear it; inspect the hardware.";
    out.push_back(std::move(e));
  }

  // Xid 13 / 31 workflow.
  struct GpuBursts {
    std::string pci;
    int bursts = 0;
    int processes = 0;
    int events = 0;
    std::set<unsigned> xids;
  };
  std::vector<GpuBursts> gpus;
  std::vector<size_t> repeated;
  for (const auto& [pci, list] : bursts) {
    GpuBursts g;
    g.pci = pci;
    std::set<std::string> procs;
    for (const Burst& b : list) {
      procs.insert(b.processes.begin(), b.processes.end());
      g.xids.insert(b.xids.begin(), b.xids.end());
      g.events += b.events;
    }
    g.bursts = static_cast<int>(list.size());
    g.processes = static_cast<int>(procs.size());
    if (g.bursts >= 2 && g.processes >= 2) repeated.push_back(gpus.size());
    gpus.push_back(std::move(g));
  }
  if (repeated.size() == 1 && gpus.size() <= 2) {
    const GpuBursts& g = gpus[repeated[0]];
    Escalation e;
    e.kind = EscalationKind::kRunDiagnostics;
    e.pci_bus_ids = {g.pci};
    e.xids.assign(g.xids.begin(), g.xids.end());
    e.event_kind = kKindXid;
    e.occurrences = g.events;
    e.bursts = g.bursts;
    e.processes = g.processes;
    e.reason = "Xid " + JoinXids(e.xids) + " hit " + g.pci + " in " + std::to_string(g.bursts) +
               " bursts from " + std::to_string(g.processes) +
               " different processes: run diagnostics on this GPU (dcgmi diag).";
    out.push_back(std::move(e));
  } else if (gpus.size() >= 2) {
    Escalation e;
    e.kind = EscalationKind::kCheckApplication;
    e.event_kind = kKindXid;
    std::set<unsigned> xids;
    for (const GpuBursts& g : gpus) {
      e.pci_bus_ids.push_back(g.pci);
      xids.insert(g.xids.begin(), g.xids.end());
      e.occurrences += g.events;
      e.bursts += g.bursts;
      e.processes += g.processes;
    }
    e.xids.assign(xids.begin(), xids.end());
    e.reason = "Xid " + JoinXids(e.xids) + " hit " + std::to_string(gpus.size()) +
               " different GPUs: the application (or its CUDA stack) is the likely cause, not "
               "one GPU.";
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace gw::kmsg
