#include "capacity/capacity_sources.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "core/text.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_reader.h"

namespace gw::capacity {
namespace {

using nlohmann::json;

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(sep, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

std::optional<int64_t> Integer(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// A time field: Unix seconds, or nullopt for "Unknown", "None" and "".
Result<std::optional<int64_t>> TimeField(std::string_view text, std::string_view name) {
  if (text.empty() || text == "Unknown" || text == "None") return std::optional<int64_t>();
  std::optional<int64_t> v = Integer(text);
  if (!v) {
    return MakeError("malformed", std::string(name) + " is not Unix seconds: \"" +
                                      std::string(text) + "\" (SLURM_TIME_FORMAT=%s)");
  }
  return v;
}

// gres/gpu in a TRES list ("cpu=2,gres/gpu:a100=2,gres/gpu=2,node=1"): the
// count and, when accounting keeps typed GPUs, the type.
std::pair<std::optional<int64_t>, std::string> GpusOf(std::string_view tres) {
  std::optional<int64_t> untyped;
  int64_t typed = 0;
  std::string type;
  for (std::string_view item : Split(tres, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq);
    const std::optional<int64_t> n = Integer(item.substr(eq + 1));
    if (!n) continue;
    if (key == "gres/gpu") {
      untyped = *n;
    } else if (key.substr(0, 9) == "gres/gpu:") {
      typed += *n;
      if (type.empty()) type = std::string(key.substr(9));
    }
  }
  if (!untyped && typed > 0) untyped = typed;
  return {untyped, type};
}

}  // namespace

Result<std::vector<SacctJob>> ParseSacct(std::string_view text) {
  std::vector<SacctJob> jobs;
  size_t line_no = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::vector<std::string_view> f = Split(line, '|');
    const auto bad = [&](const std::string& what) {
      return MakeError("malformed", "sacct line " + std::to_string(line_no) + ": " + what);
    };
    if (f.size() != 11) {
      return bad("expected 11 fields separated by '|', got " + std::to_string(f.size()));
    }
    SacctJob j;
    j.id = std::string(f[0]);
    j.user = std::string(f[1]);
    j.partition = std::string(f[2]);
    std::optional<int64_t>* times[] = {&j.submit_s, &j.eligible_s, &j.start_s, &j.end_s};
    const char* names[] = {"Submit", "Eligible", "Start", "End"};
    for (int i = 0; i < 4; ++i) {
      Result<std::optional<int64_t>> t = TimeField(f[3 + i], names[i]);
      if (!t.ok()) return bad(t.error().message);
      *times[i] = *t;
    }
    j.state = std::string(f[7].substr(0, f[7].find(' ')));
    auto [alloc, alloc_type] = GpusOf(f[8]);
    auto [req, req_type] = GpusOf(f[9]);
    j.alloc_gpus = alloc;
    j.req_gpus = req;
    j.gpu_type = !alloc_type.empty() ? alloc_type : req_type;
    j.node_list = std::string(f[10]);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

Result<std::vector<SacctJob>> ReadSacct(os::CommandRunner& runner, int64_t since_s,
                                        int timeout_ms) {
  slurm::ReaderOptions o;
  o.timeout_ms = timeout_ms;
  o.env["SLURM_TIME_FORMAT"] = "%s";
  const std::vector<std::string> argv = {
      "sacct", "-a",  "-X", "-n",        "-P", "-S", "now-" + std::to_string(since_s),
      "-E",    "now", "-o", kSacctFields};
  Result<std::string> out = slurm::OutputOf(runner, argv, "sacct", o);
  if (!out.ok()) return out.error();
  return ParseSacct(*out);
}

Result<CapacityInput> InputFromSlurm(const std::vector<SacctJob>& jobs,
                                     const slurm::SinfoDocument& sinfo, int64_t from_s,
                                     int64_t to_s, int64_t utc_offset_s) {
  CapacityInput in;
  in.source = "slurm";
  in.from_s = from_s;
  in.to_s = to_s;
  in.utc_offset_s = utc_offset_s;
  std::map<std::string, std::string> node_type;
  double capacity = 0;
  for (const slurm::Node& n : sinfo.nodes) {
    int64_t gpus = 0;
    for (const slurm::Gres& g : n.gres.value_or(std::vector<slurm::Gres>{})) {
      if (g.name != "gpu") continue;
      gpus += g.count;
      const std::string type = g.type.value_or("");
      in.gpu_types[type] += static_cast<int>(g.count);
      node_type[n.name] = node_type.count(n.name) && node_type[n.name] != type ? "" : type;
    }
    if (gpus > 0) in.node_gpus[n.name] = static_cast<int>(gpus);
    capacity += static_cast<double>(gpus);
  }

  std::map<int64_t, double> held_change;
  for (const SacctJob& s : jobs) {
    // A job cancelled before it was given anything never started, whatever
    // Start says.
    const bool started = s.start_s && s.alloc_gpus.has_value();
    const double gpus = static_cast<double>(started ? *s.alloc_gpus : s.req_gpus.value_or(0));
    if (gpus <= 0) continue;
    JobRecord j;
    j.id = s.id;
    j.user = s.user;
    j.gpus = gpus;
    if (started) {
      j.start_s = s.start_s;
      j.end_s = s.end_s;
    } else {
      j.end_s = s.end_s;  // Cancelled while pending: it stopped waiting then.
    }
    // Held jobs have no Eligible time: they wait by someone's choice.
    j.chose_to_wait = !s.eligible_s && !started;
    j.eligible_s = s.eligible_s.value_or(s.submit_s.value_or(from_s));
    if (s.node_list != "None assigned" && !s.node_list.empty()) {
      Result<std::vector<std::string>> nodes = slurm::ExpandHostlist(s.node_list, kMaxJobNodes);
      if (!nodes.ok()) {
        return MakeError("malformed", "sacct job " + s.id + ": " + nodes.error().message);
      }
      j.nodes = std::move(*nodes);
    }
    j.gpu_type = s.gpu_type;
    if (j.gpu_type.empty() && !j.nodes.empty()) {
      j.gpu_type = node_type.count(j.nodes[0]) ? node_type[j.nodes[0]] : "";
      for (const std::string& n : j.nodes) {
        if (!node_type.count(n) || node_type[n] != j.gpu_type) j.gpu_type.clear();
      }
    }
    if (started) {
      const int64_t a = std::max(*j.start_s, from_s);
      const int64_t b = std::min(j.end_s.value_or(to_s), to_s);
      if (b > a) {
        held_change[a] += gpus;
        held_change[b] -= gpus;
      }
    }
    in.jobs.push_back(std::move(j));
  }
  // The allocations as spans of constant GPUs held over the whole window.
  held_change.emplace(from_s, 0);
  held_change.emplace(to_s, 0);
  double held = 0;
  for (auto it = held_change.begin(); it != held_change.end(); ++it) {
    held += it->second;
    const auto next = std::next(it);
    if (next == held_change.end() || it->first >= to_s) break;
    if (it->first < from_s) continue;
    Span span;
    span.start_s = it->first;
    span.end_s = next->first;
    span.capacity_gpus = capacity;
    span.held_gpus = std::max(0.0, held);
    in.spans.push_back(span);
  }
  return in;
}

Result<std::vector<JobRecord>> JobsFromQueueJson(const json& jobs, double gpu_memory_bytes) {
  std::vector<JobRecord> out;
  if (!jobs.is_array()) return MakeError("malformed", "jobs: expected an array");
  for (const json& j : jobs) {
    const auto bad = [](const std::string& field) {
      return MakeError("malformed", "jobs: " + field + " missing or of the wrong type");
    };
    if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer()) return bad("id");
    if (!j.contains("submit_unix_ms") || !j["submit_unix_ms"].is_number()) {
      return bad("submit_unix_ms");
    }
    JobRecord r;
    r.id = std::to_string(j["id"].get<int64_t>());
    r.user = j.value("user", "");
    r.eligible_s = j["submit_unix_ms"].get<int64_t>() / 1000;
    for (const char* field : {"start_unix_ms", "end_unix_ms"}) {
      if (j.contains(field) && !j[field].is_null() && !j[field].is_number()) return bad(field);
    }
    if (j.contains("start_unix_ms") && j["start_unix_ms"].is_number()) {
      r.start_s = j["start_unix_ms"].get<int64_t>() / 1000;
    }
    if (j.contains("end_unix_ms") && j["end_unix_ms"].is_number()) {
      r.end_s = j["end_unix_ms"].get<int64_t>() / 1000;
    }
    if (!j.contains("gpus") || !j["gpus"].is_number_unsigned()) return bad("gpus");
    r.gpus = j["gpus"].get<double>();
    if (j.contains("peak_vram_bytes") && j["peak_vram_bytes"].is_number() && gpu_memory_bytes > 0 &&
        r.gpus > 0) {
      r.peak_vram_fraction = j["peak_vram_bytes"].get<double>() / (gpu_memory_bytes * r.gpus);
    }
    const bool windowed = j.contains("window") && j["window"].is_string();
    const bool after = j.contains("after") && j["after"].is_array() && !j["after"].empty();
    r.chose_to_wait = windowed || after || j.value("state", "") == "held";
    if (r.gpus > 0) out.push_back(std::move(r));
  }
  return out;
}

double GpuMemoryOf(const std::vector<fleet::HistoryPoint>& points) {
  double most = 0;
  for (const fleet::HistoryPoint& p : points) {
    for (const fleet::GpuPoint& g : p.gpus) {
      if (g.mem_total_bytes == g.mem_total_bytes) most = std::max(most, g.mem_total_bytes);
    }
  }
  return most;
}

CapacityInput InputFromHistory(const std::vector<fleet::HistoryPoint>& points,
                               std::vector<JobRecord> jobs, int64_t from_s, int64_t to_s,
                               int64_t utc_offset_s) {
  if (!points.empty()) {
    from_s = std::min(from_s, points.front().time_s);
    to_s = std::max(to_s, points.back().time_s + points.back().step_s);
  }
  CapacityInput in;
  in.source = "history";
  in.from_s = from_s;
  in.to_s = to_s;
  in.utc_offset_s = utc_offset_s;
  in.jobs = std::move(jobs);
  in.idle_known = true;
  for (const fleet::HistoryPoint& p : points) {
    const int64_t a = std::max(p.time_s, from_s);
    const int64_t b = std::min(p.time_s + p.step_s, to_s);
    if (b <= a) continue;
    if (!in.spans.empty() && a < in.spans.back().end_s) continue;  // Overlaps the last one.
    Span s;
    s.start_s = a;
    s.end_s = b;
    s.capacity_gpus = static_cast<double>(p.gpus.size());
    double held = 0;
    double idle = 0;
    for (const fleet::UserPoint& u : p.users) {
      held += u.gpus;
      idle += u.idle_gpus;
    }
    s.held_gpus = std::min(held, s.capacity_gpus);
    s.idle_held_gpus = std::min(idle, s.held_gpus);
    double bound = 0;
    bool known = true;
    for (const fleet::GpuPoint& g : p.gpus) {
      const bool readable = g.util_pct == g.util_pct && g.mem_used_bytes == g.mem_used_bytes &&
                            g.mem_total_bytes == g.mem_total_bytes && g.mem_total_bytes > 0;
      if (!readable) {
        known = false;
        continue;
      }
      if (g.mem_used_bytes >= kMemoryBoundFraction * g.mem_total_bytes && g.util_pct > 0 &&
          g.util_pct < kMemoryBoundUtilPct) {
        ++bound;
      }
    }
    if (known) s.memory_bound_gpus = bound;
    in.spans.push_back(s);
    // As fleet::UsageOf sums them.
    for (const fleet::UserPoint& u : p.users) {
      in.gpu_s_by_user[u.user] += u.gpus * static_cast<double>(b - a);
      in.idle_gpu_s_by_user[u.user] += u.idle_gpus * static_cast<double>(b - a);
    }
  }
  return in;
}

}  // namespace gw::capacity
