#include "render/history_text.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "diagnose/finding.h"

namespace gw::render {
namespace {

constexpr const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

struct Stats {
  double min = NAN, max = NAN, sum = 0, last = NAN;
  int n = 0;
  void Add(double v) {
    if (std::isnan(v)) return;
    min = n == 0 ? v : std::min(min, v);
    max = n == 0 ? v : std::max(max, v);
    sum += v;
    last = v;
    ++n;
  }
};

std::string Clock(int64_t unix_s) { return FormatLocalTime(unix_s * 1000); }

std::string Csv(double v) { return std::isnan(v) ? std::string() : fmt::format("{}", v); }

}  // namespace

std::string Sparkline(const std::vector<double>& values, int columns, double low, double high) {
  std::string out;
  if (values.empty() || columns <= 0) return out;
  const int cells = std::min<int>(columns, static_cast<int>(values.size()));
  for (int c = 0; c < cells; ++c) {
    const size_t from = values.size() * c / cells;
    const size_t to = std::max(from + 1, values.size() * (c + 1) / cells);
    double sum = 0;
    int n = 0;
    for (size_t i = from; i < to; ++i) {
      if (!std::isnan(values[i])) {
        sum += values[i];
        ++n;
      }
    }
    if (n == 0) {
      out += ' ';
      continue;
    }
    const double span = high > low ? high - low : 1;
    const double f = std::clamp((sum / n - low) / span, 0.0, 1.0);
    out += kBlocks[std::min(7, static_cast<int>(f * 8))];
  }
  return out;
}

std::string HistoryText(const std::vector<fleet::HistoryPoint>& points, std::optional<unsigned> gpu,
                        int columns) {
  if (points.empty()) return "No history yet: gpuwardend keeps a point a second while it runs.\n";
  std::map<unsigned, std::vector<const fleet::GpuPoint*>> by_gpu;
  for (const fleet::HistoryPoint& p : points) {
    for (const fleet::GpuPoint& g : p.gpus) {
      if (!gpu || g.index == *gpu) by_gpu[g.index].push_back(&g);
    }
  }
  const int step = points.back().step_s;
  std::string out = fmt::format("{} – {}, a point every {}\n", Clock(points.front().time_s),
                                Clock(points.back().time_s + points.back().step_s),
                                step == 1    ? "second"
                                : step == 60 ? "minute"
                                             : "hour");
  if (by_gpu.empty()) {
    out += gpu ? fmt::format("No history of GPU {}.\n", *gpu) : "No GPU in the history.\n";
    return out;
  }
  const int width = std::max(10, columns - 12);
  for (const auto& [index, list] : by_gpu) {
    std::vector<double> util, used;
    Stats u, m;
    double total = NAN;
    for (const fleet::GpuPoint* g : list) {
      util.push_back(g->util_pct);
      used.push_back(g->mem_used_bytes);
      u.Add(g->util_pct);
      m.Add(g->mem_used_bytes);
      if (!std::isnan(g->mem_total_bytes)) total = g->mem_total_bytes;
    }
    std::string state = "?";
    if (list.back()->state)
      state = diagnose::GpuStateName(static_cast<diagnose::GpuState>(*list.back()->state));
    out += fmt::format("\nGPU {}  now {}\n", index, state);
    out += fmt::format("  util {}\n", Sparkline(util, width, 0, 100));
    out += u.n == 0
               ? "       unknown\n"
               : fmt::format("       min {:.0f} %  mean {:.0f} %  max {:.0f} %  last {:.0f} %\n",
                             u.min, u.sum / u.n, u.max, u.last);
    out += fmt::format("  mem  {}\n", Sparkline(used, width, 0, std::isnan(total) ? m.max : total));
    out += m.n == 0 ? "       unknown\n"
                    : fmt::format("       min {}  mean {}  max {}  last {}{}\n",
                                  FormatBytes(static_cast<uint64_t>(m.min)),
                                  FormatBytes(static_cast<uint64_t>(m.sum / m.n)),
                                  FormatBytes(static_cast<uint64_t>(m.max)),
                                  FormatBytes(static_cast<uint64_t>(m.last)),
                                  std::isnan(total)
                                      ? std::string()
                                      : " of " + FormatBytes(static_cast<uint64_t>(total)));
  }
  return out;
}

std::string HistoryCsv(const std::vector<fleet::HistoryPoint>& points,
                       std::optional<unsigned> gpu) {
  std::string out =
      "time_unix_s,step_s,gpu,util_pct,mem_used_bytes,mem_total_bytes,power_w,temp_c,state\n";
  for (const fleet::HistoryPoint& p : points) {
    for (const fleet::GpuPoint& g : p.gpus) {
      if (gpu && g.index != *gpu) continue;
      out += fmt::format(
          "{},{},{},{},{},{},{},{},{}\n", p.time_s, p.step_s, g.index, Csv(g.util_pct),
          Csv(g.mem_used_bytes), Csv(g.mem_total_bytes), Csv(g.power_w), Csv(g.temp_c),
          g.state ? std::string(diagnose::GpuStateName(static_cast<diagnose::GpuState>(*g.state)))
                  : std::string());
    }
  }
  return out;
}

std::string UsageText(const nlohmann::json& reply) {
  struct Row {
    std::string user;
    double gpu_h, idle_h, vram, idle_vram;
    std::string jobs;
  };
  std::vector<Row> rows;
  for (const nlohmann::json& u : reply.value("users", nlohmann::json::array())) {
    const nlohmann::json& j = u.value("jobs_started", nlohmann::json());
    rows.push_back({SanitizeForTerminal(u.value("user", "?")), u.value("gpu_hours", 0.0),
                    u.value("idle_gpu_hours", 0.0), u.value("vram_gib_hours", 0.0),
                    u.value("idle_vram_gib_hours", 0.0),
                    j.is_number() ? fmt::format("{}", j.get<uint64_t>()) : "-"});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.gpu_h != b.gpu_h ? a.gpu_h > b.gpu_h : a.user < b.user;
  });
  const double covered_h = reply.value("covered_s", 0.0) / 3600;
  std::string out = fmt::format("{} – {} (history covers {:.1f} h of it)\n",
                                Clock(reply.value("from_unix_s", int64_t{0})),
                                Clock(reply.value("to_unix_s", int64_t{0})), covered_h);
  if (rows.empty()) return out + "Nobody held a GPU.\n";
  out += fmt::format("{:<16} {:>9} {:>10} {:>12} {:>14} {:>5}\n", "USER", "GPU-H", "IDLE GPU-H",
                     "VRAM GIB-H", "IDLE VRAM GIB-H", "JOBS");
  for (const Row& r : rows) {
    out += fmt::format("{} {:>9.2f} {:>10.2f} {:>12.1f} {:>14.1f} {:>5}\n", PadRight(r.user, 16),
                       r.gpu_h, r.idle_h, r.vram, r.idle_vram, r.jobs);
  }
  return out;
}

}  // namespace gw::render
