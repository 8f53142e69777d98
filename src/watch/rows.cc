#include "watch/rows.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/text.h"
#include "render/summary.h"

namespace gw::watch {
namespace {

std::string CommandOf(const HostProcess* host) {
  if (host == nullptr) return "(not in this /proc: another container or PID namespace)";
  if (!host->cmdline.empty()) return JoinCommandLine(host->cmdline);
  if (host->comm) return "[" + SanitizeForTerminal(*host->comm) + "]";
  return "?";
}

ProcessRow BaseRow(const Snapshot& snapshot, pid_t pid) {
  ProcessRow row;
  row.pid = pid;
  const HostProcess* host = render::FindHostProcess(snapshot, pid);
  row.in_proc = host != nullptr;
  row.user = SanitizeForTerminal(render::UserLabel(snapshot, pid));
  row.command = CommandOf(host);
  if (host != nullptr) {
    row.uid = host->uid;
    row.cpu_pct = host->cpu_pct;
    row.age_s = host->age_s;
    row.state = host->state;
  }
  return row;
}

bool UserMatches(const ProcessRow& row, const std::string& filter) {
  if (filter.empty()) return true;
  if (row.user == filter) return true;
  return row.uid && std::to_string(*row.uid) == filter;
}

bool GpuMatches(const ProcessRow& row, const std::vector<unsigned>& gpus,
                const std::vector<unsigned>& row_gpus) {
  if (gpus.empty()) return true;
  for (unsigned g : row_gpus) {
    if (std::find(gpus.begin(), gpus.end(), g) != gpus.end()) return true;
  }
  return false;
}

// Compares two optional values so that unknown sorts last whatever the
// direction; returns <0, 0, >0.
template <typename T>
int CompareOpt(const std::optional<T>& a, const std::optional<T>& b, bool descending) {
  if (!a && !b) return 0;
  if (!a) return 1;
  if (!b) return -1;
  if (*a == *b) return 0;
  const bool less = *a < *b;
  return (less != descending) ? -1 : 1;
}

int CompareRows(const ProcessRow& a, const ProcessRow& b, SortKey key, bool descending) {
  int c = 0;
  switch (key) {
    case SortKey::kVram:
      c = CompareOpt(a.vram_bytes, b.vram_bytes, descending);
      break;
    case SortKey::kSm:
      c = CompareOpt(a.sm_pct, b.sm_pct, descending);
      break;
    case SortKey::kCpu:
      c = CompareOpt(a.cpu_pct, b.cpu_pct, descending);
      break;
    case SortKey::kAge:
      c = CompareOpt(a.age_s, b.age_s, descending);
      break;
    case SortKey::kPid:
      c = CompareOpt(std::optional<pid_t>(a.pid), std::optional<pid_t>(b.pid), descending);
      break;
    case SortKey::kUser:
      c = CompareOpt(std::optional<std::string>(a.user), std::optional<std::string>(b.user),
                     descending);
      break;
    case SortKey::kGpu:
      c = CompareOpt(a.gpu_index, b.gpu_index, descending);
      break;
  }
  if (c != 0) return c;
  // A stable order for equal keys: GPU, then PID.
  if (a.gpu != b.gpu) return a.gpu < b.gpu ? -1 : 1;
  if (a.pid != b.pid) return a.pid < b.pid ? -1 : 1;
  return 0;
}

// Groups rows into runs: a worker goes under a row of its parent, or, when
// two or more rows share a parent that holds no GPU, under a group row for
// that parent. Top-level units are sorted as the flat list would be (by
// their own or their group's values); workers sorted within.
std::vector<ProcessRow> Tree(const Snapshot& snapshot, std::vector<ProcessRow> rows,
                             const UiState& ui) {
  std::map<pid_t, size_t> first_row_of;  // pid -> its first row
  for (size_t i = 0; i < rows.size(); ++i) first_row_of.emplace(rows[i].pid, i);
  auto parent_of = [&](const ProcessRow& row) -> std::optional<pid_t> {
    const HostProcess* host = render::FindHostProcess(snapshot, row.pid);
    if (host == nullptr || !host->ppid || *host->ppid <= 1) return std::nullopt;
    return *host->ppid;
  };

  // Count rows per parent that is not itself a row.
  std::map<pid_t, std::vector<size_t>> by_parent;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (auto p = parent_of(rows[i])) by_parent[*p].push_back(i);
  }

  struct Unit {
    ProcessRow head;
    std::vector<ProcessRow> children;
  };
  std::vector<Unit> units;
  std::set<size_t> placed;
  // Rows whose parent is a row: children of that row's unit.
  std::map<pid_t, size_t> unit_of_pid;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto p = parent_of(rows[i]);
    const bool parent_is_row = p && first_row_of.count(*p) && *p != rows[i].pid;
    const bool parent_groups = p && !parent_is_row && by_parent[*p].size() >= 2;
    if (parent_is_row || parent_groups) continue;
    if (unit_of_pid.count(rows[i].pid) == 0) unit_of_pid[rows[i].pid] = units.size();
    units.push_back(Unit{rows[i], {}});
    placed.insert(i);
  }
  // Group rows for parents that are not rows themselves.
  for (const auto& [parent, members] : by_parent) {
    if (first_row_of.count(parent) || members.size() < 2) continue;
    ProcessRow head;
    head.pid = parent;
    head.group = true;
    head.stop_tree = true;
    const HostProcess* any = render::FindHostProcess(snapshot, rows[members.front()].pid);
    head.command = any && any->parent_comm ? "[" + SanitizeForTerminal(*any->parent_comm) +
                                                 "] (run of " + std::to_string(members.size()) + ")"
                                           : "(run of " + std::to_string(members.size()) + ")";
    head.user = rows[members.front()].user;
    head.uid = rows[members.front()].uid;
    std::set<std::string> gpus;
    uint64_t vram = 0;
    bool vram_known = false;
    for (size_t i : members) {
      const ProcessRow& r = rows[i];
      if (r.user != head.user) head.user = "*";
      gpus.insert(r.gpu);
      if (r.vram_bytes) {
        vram += *r.vram_bytes;
        vram_known = true;
      }
      if (r.sm_pct && (!head.sm_pct || *r.sm_pct > *head.sm_pct)) head.sm_pct = r.sm_pct;
      if (r.age_s && (!head.age_s || *r.age_s > *head.age_s)) head.age_s = r.age_s;
      if (r.gpu_index && (!head.gpu_index || *r.gpu_index < *head.gpu_index)) {
        head.gpu_index = r.gpu_index;
      }
    }
    for (const std::string& g : gpus) head.gpu += (head.gpu.empty() ? "" : ",") + g;
    if (vram_known) head.vram_bytes = vram;
    unit_of_pid[parent] = units.size();
    Unit unit{head, {}};
    for (size_t i : members) {
      unit.children.push_back(rows[i]);
      placed.insert(i);
    }
    units.push_back(std::move(unit));
  }
  // Workers under a parent that is a row.
  for (size_t i = 0; i < rows.size(); ++i) {
    if (placed.count(i)) continue;
    auto p = parent_of(rows[i]);
    auto it = p ? unit_of_pid.find(*p) : unit_of_pid.end();
    if (it != unit_of_pid.end()) {
      units[it->second].children.push_back(rows[i]);
    } else {
      units.push_back(Unit{rows[i], {}});
    }
  }

  auto less = [&](const ProcessRow& a, const ProcessRow& b) {
    return CompareRows(a, b, ui.sort, ui.sort_descending) < 0;
  };
  std::stable_sort(units.begin(), units.end(),
                   [&](const Unit& a, const Unit& b) { return less(a.head, b.head); });
  std::vector<ProcessRow> out;
  for (Unit& u : units) {
    std::stable_sort(u.children.begin(), u.children.end(), less);
    out.push_back(std::move(u.head));
    for (ProcessRow& c : u.children) {
      c.depth = 1;
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

std::vector<ProcessRow> BuildRows(const Snapshot& snapshot, const UiState& ui) {
  std::vector<ProcessRow> rows;
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& p : gpu.processes) {
      ProcessRow row = BaseRow(snapshot, p.pid);
      row.gpu = std::to_string(gpu.index);
      row.gpu_index = gpu.index;
      row.vram_bytes = p.used_memory_bytes;
      row.sm_pct = p.sm_util_pct;
      if (!UserMatches(row, ui.user_filter) || !GpuMatches(row, ui.gpu_filter, {gpu.index})) {
        continue;
      }
      rows.push_back(std::move(row));
    }
  }
  for (const HostProcess* host : render::UnlistedDeviceHolders(snapshot)) {
    ProcessRow row = BaseRow(snapshot, host->pid);
    row.listed = false;
    std::vector<unsigned> gpus;
    for (const std::string& file : host->device_files) {
      if (auto g = render::GpuIndexForDeviceFile(snapshot, file)) gpus.push_back(*g);
    }
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    for (unsigned g : gpus) row.gpu += (row.gpu.empty() ? "" : ",") + std::to_string(g);
    if (row.gpu.empty()) row.gpu = "-";
    if (!gpus.empty()) row.gpu_index = gpus.front();
    if (!UserMatches(row, ui.user_filter) || !GpuMatches(row, ui.gpu_filter, gpus)) continue;
    rows.push_back(std::move(row));
  }
  if (ui.tree) return Tree(snapshot, std::move(rows), ui);
  std::stable_sort(rows.begin(), rows.end(), [&](const ProcessRow& a, const ProcessRow& b) {
    return CompareRows(a, b, ui.sort, ui.sort_descending) < 0;
  });
  return rows;
}

}  // namespace gw::watch
