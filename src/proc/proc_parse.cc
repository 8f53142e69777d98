#include "proc/proc_parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace gw::proc {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsHexId(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Splits on runs of whitespace; stops after `max` tokens.
std::vector<std::string_view> Tokens(std::string_view text, size_t max) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size() && out.size() < max) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// Calls fn(line) for each '\n'-separated line (the last may lack '\n').
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!fn(line)) return;
    if (nl == std::string_view::npos) return;
    text.remove_prefix(nl + 1);
  }
}

Error Malformed(std::string what) {
  return MakeError("malformed", "/proc stat: " + std::move(what));
}

// "<prefix><id><suffix>" -> id, when id is non-empty.
std::optional<std::string_view> Between(std::string_view c, std::string_view prefix,
                                        std::string_view suffix) {
  if (c.size() <= prefix.size() + suffix.size()) return std::nullopt;
  if (!c.starts_with(prefix) || !c.ends_with(suffix)) return std::nullopt;
  return c.substr(prefix.size(), c.size() - prefix.size() - suffix.size());
}

struct ContainerHit {
  std::optional<std::string_view> runtime;  // nullopt: unknown runtime.
  std::string_view id;
};

// Container forms that live in one path component.
std::optional<ContainerHit> ContainerFromComponent(std::string_view c) {
  // Longer prefixes first: "libpod-conmon-" also starts with "libpod-".
  struct Form {
    std::string_view prefix;
    std::string_view suffix;
    std::string_view runtime;
  };
  static constexpr Form kForms[] = {
      {"docker-", ".scope", "docker"},
      {"cri-containerd-", ".scope", "containerd"},
      {"nerdctl-", ".scope", "containerd"},
      {"crio-conmon-", ".scope", "cri-o"},
      {"crio-", ".scope", "cri-o"},
      {"libpod-conmon-", ".scope", "podman"},
      {"libpod-", ".scope", "podman"},
      {"libpod-conmon-", "", "podman"},  // cgroupfs manager: no ".scope".
      {"libpod-", "", "podman"},
      {"lxc.payload.", "", "lxc"},
      {"lxc.monitor.", "", "lxc"},
  };
  for (const Form& f : kForms) {
    if (auto id = Between(c, f.prefix, f.suffix)) return ContainerHit{f.runtime, *id};
  }
  if (IsHexId(c)) return ContainerHit{std::nullopt, c};
  return std::nullopt;
}

ProcessOwner OwnerFromPath(std::string_view path) {
  ProcessOwner owner;
  owner.cgroup_path = std::string(path);
  std::vector<std::string_view> parts;
  for (size_t i = 0; i < path.size();) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > i) parts.push_back(path.substr(i, slash - i));
    i = slash + 1;
  }
  bool kubepods = false;
  bool slurm = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string_view c = parts[i];
    if (c.starts_with("kubepods")) kubepods = true;
    if (c.starts_with("slurm")) slurm = true;
    if (slurm && !owner.slurm_job_id && c.starts_with("job_") && AllDigits(c.substr(4))) {
      owner.slurm_job_id = std::string(c.substr(4));
    } else if (owner.slurm_job_id && !owner.slurm_step && c.starts_with("step_") && c.size() > 5) {
      owner.slurm_step = std::string(c.substr(5));
    }
    if (c.ends_with(".service") || c.ends_with(".scope")) owner.systemd_unit = std::string(c);

    std::optional<ContainerHit> hit;
    if ((c == "docker" || c == "lxc") && i + 1 < parts.size()) {
      std::string_view next = parts[i + 1];
      if (c == "lxc") {
        hit = ContainerHit{"lxc", next};
        ++i;
      } else if (IsHexId(next)) {
        hit = ContainerHit{"docker", next};
        ++i;
      }
    } else {
      hit = ContainerFromComponent(c);
    }
    if (hit) {
      owner.container_id = std::string(hit->id);
      if (kubepods) {
        owner.container_runtime = "kubernetes";
      } else if (hit->runtime) {
        owner.container_runtime = std::string(*hit->runtime);
      } else {
        owner.container_runtime.reset();
      }
    }
  }
  return owner;
}

// Lower is preferred: the v2 line, then pids, memory, cpu, name=systemd.
int ControllerRank(std::string_view hierarchy, std::string_view controllers) {
  if (hierarchy == "0" && controllers.empty()) return 0;
  int best = 5;
  while (!controllers.empty()) {
    size_t comma = controllers.find(',');
    std::string_view c = controllers.substr(0, comma);
    if (c == "pids") best = std::min(best, 1);
    if (c == "memory") best = std::min(best, 2);
    if (c == "cpu") best = std::min(best, 3);
    if (c == "name=systemd") best = std::min(best, 4);
    if (comma == std::string_view::npos) break;
    controllers.remove_prefix(comma + 1);
  }
  return best;
}

int OwnerScore(const ProcessOwner& o) {
  if (o.container_id || o.slurm_job_id) return 3;
  if (o.systemd_unit) return 2;
  if (o.cgroup_path && *o.cgroup_path != "/") return 1;
  return 0;
}

}  // namespace

Result<StatFields> ParseStat(std::string_view stat_file) {
  StatFields f;
  size_t open = stat_file.find('(');
  size_t close = stat_file.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Malformed("no (comm)");
  }
  std::string_view pid_text = stat_file.substr(0, open);
  while (!pid_text.empty() && IsSpace(pid_text.back())) pid_text.remove_suffix(1);
  if (!ParseNumber(pid_text, &f.pid)) return Malformed("bad pid");
  f.comm = std::string(stat_file.substr(open + 1, close - open - 1));

  // Fields 3..24 follow the last ')'; tokens[k] is field k + 3.
  std::vector<std::string_view> t = Tokens(stat_file.substr(close + 1), 22);
  if (t.size() < 22) return Malformed("only " + std::to_string(t.size() + 2) + " fields");
  if (t[0].size() != 1) return Malformed("bad state");
  f.state = t[0][0];
  auto field = [&t](int n) { return t[n - 3]; };
  bool ok = ParseNumber(field(4), &f.ppid) && ParseNumber(field(5), &f.pgrp) &&
            ParseNumber(field(6), &f.session) && ParseNumber(field(7), &f.tty_nr) &&
            ParseNumber(field(14), &f.utime_ticks) && ParseNumber(field(15), &f.stime_ticks) &&
            ParseNumber(field(20), &f.num_threads) && ParseNumber(field(22), &f.start_ticks) &&
            ParseNumber(field(23), &f.vsize_bytes) && ParseNumber(field(24), &f.rss_pages);
  if (!ok) return Malformed("non-numeric field");
  return f;
}

ProcessState StateFromChar(char state) {
  switch (state) {
    case 'R':
      return ProcessState::kRunning;
    case 'S':
      return ProcessState::kSleeping;
    case 'D':
      return ProcessState::kDiskSleep;
    case 'Z':
      return ProcessState::kZombie;
    case 'T':
    case 't':
      return ProcessState::kStopped;
    case 'I':
      return ProcessState::kIdle;
    case 'X':
    case 'x':
      return ProcessState::kDead;
    default:
      return ProcessState::kOther;
  }
}

std::optional<uid_t> ParseStatusUid(std::string_view status_file) {
  std::optional<uid_t> uid;
  ForEachLine(status_file, [&uid](std::string_view line) {
    if (!line.starts_with("Uid:")) return true;
    std::vector<std::string_view> t = Tokens(line.substr(4), 1);
    uint64_t v = 0;
    if (!t.empty() && ParseNumber(t[0], &v) && v <= std::numeric_limits<uid_t>::max()) {
      uid = static_cast<uid_t>(v);
    }
    return false;
  });
  return uid;
}

std::vector<std::string> ParseCmdline(std::string_view cmdline_file) {
  std::vector<std::string> args;
  size_t start = 0;
  while (start <= cmdline_file.size()) {
    size_t nul = cmdline_file.find('\0', start);
    if (nul == std::string_view::npos) nul = cmdline_file.size();
    args.emplace_back(cmdline_file.substr(start, nul - start));
    start = nul + 1;
  }
  while (!args.empty() && args.back().empty()) args.pop_back();
  return args;
}

ProcessOwner ParseCgroup(std::string_view cgroup_file) {
  struct Candidate {
    int rank;
    ProcessOwner owner;
  };
  std::vector<Candidate> candidates;
  ForEachLine(cgroup_file, [&candidates](std::string_view line) {
    while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
    size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) return true;
    size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) return true;
    std::string_view path = line.substr(c2 + 1);  // A path may itself hold ':'.
    if (!path.starts_with('/')) return true;
    candidates.push_back({ControllerRank(line.substr(0, c1), line.substr(c1 + 1, c2 - c1 - 1)),
                          OwnerFromPath(path)});
    return true;
  });
  if (candidates.empty()) return {};
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
  const Candidate* best = &candidates[0];
  for (const Candidate& c : candidates) {
    if (OwnerScore(c.owner) > OwnerScore(best->owner)) best = &c;
  }
  return best->owner;
}

std::optional<SlurmStepId> ParseSlurmstepdTitle(const std::vector<std::string>& argv) {
  std::string title;
  for (const std::string& a : argv) title += (title.empty() ? "" : " ") + a;
  while (!title.empty() && IsSpace(title.back())) title.pop_back();
  constexpr std::string_view kPrefix = "slurmstepd: [";
  if (!title.starts_with(kPrefix) || !title.ends_with(']')) return std::nullopt;
  const std::string_view inner =
      std::string_view(title).substr(kPrefix.size(), title.size() - kPrefix.size() - 1);
  const size_t dot = inner.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view job = inner.substr(0, dot);
  const std::string_view step = inner.substr(dot + 1);
  if (job.empty() || !AllDigits(job) || step.empty()) return std::nullopt;
  for (char c : step) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
  }
  return SlurmStepId{std::string(job), std::string(step)};
}

std::optional<uint64_t> ParseBootTime(std::string_view proc_stat_file) {
  std::optional<uint64_t> btime;
  ForEachLine(proc_stat_file, [&btime](std::string_view line) {
    if (!line.starts_with("btime ")) return true;
    std::vector<std::string_view> t = Tokens(line.substr(6), 1);
    uint64_t v = 0;
    if (!t.empty() && ParseNumber(t[0], &v)) btime = v;
    return false;
  });
  return btime;
}

std::optional<unsigned> ParseCpuCount(std::string_view proc_stat_file) {
  unsigned n = 0;
  ForEachLine(proc_stat_file, [&n](std::string_view line) {
    if (line.size() > 3 && line.starts_with("cpu") && line[3] >= '0' && line[3] <= '9') ++n;
    return true;
  });
  if (n == 0) return std::nullopt;
  return n;
}

std::vector<LoadedModule> ParseModules(std::string_view text) {
  // "nvidia_drm 77824 4 nvidia_modeset, Live 0x0000000000000000"
  std::vector<LoadedModule> out;
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    const std::string_view line =
        text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    std::vector<std::string_view> f;
    for (size_t p = 0; p < line.size();) {
      const size_t sp = line.find(' ', p);
      const size_t end = sp == std::string_view::npos ? line.size() : sp;
      if (end > p) f.push_back(line.substr(p, end - p));
      p = end + 1;
    }
    if (f.size() < 4) continue;
    LoadedModule m;
    m.name = std::string(f[0]);
    const auto [ptr, ec] = std::from_chars(f[2].data(), f[2].data() + f[2].size(), m.used_by);
    if (ec != std::errc() || ptr != f[2].data() + f[2].size()) continue;
    if (f[3] != "-") {
      std::string_view users = f[3];
      if (!users.empty() && users.back() == ',') users.remove_suffix(1);
      m.users = std::string(users);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace gw::proc
