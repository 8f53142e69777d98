#include "watch/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/text.h"
#include "core/units.h"
#include "diagnose/finding.h"

namespace gw::watch {
namespace {

using diagnose::Verdict;

constexpr int kMinTableRows = 4;

struct Glyphs {
  const char* const* spark;  // 8 levels
  const char* sel;
  const char* up;
  const char* down;
  const char* branch_mid;
  const char* branch_last;
  const char* h;
  const char* v;
  const char* tl;
  const char* tr;
  const char* bl;
  const char* br;
  const char* dot;
};

constexpr const char* kSparkU[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr const char* kSparkA[] = {"_", ".", "-", ":", "=", "+", "*", "#"};
constexpr Glyphs kUnicode{kSparkU, "▶", "▲", "▼", "├ ", "└ ", "─", "│", "┌", "┐", "└", "┘", "·"};
constexpr Glyphs kAscii{kSparkA, ">", "^", "v", "|- ", "`- ", "-", "|", "+", "+", "+", "+", "."};

const Glyphs& G(bool unicode) { return unicode ? kUnicode : kAscii; }

Style VerdictStyle(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return Fg(Color::kGreen, true);
    case Verdict::kBusy:
    case Verdict::kReclaimable:
    case Verdict::kNeverFits:
      return Fg(Color::kYellow, true);
    case Verdict::kDegraded:
      return Fg(Color::kMagenta, true);
    case Verdict::kFault:
      return Fg(Color::kRed, true);
    case Verdict::kUnknown:
      return kDim;
  }
  return kPlain;
}

// A marker that reads without colour.
const char* VerdictMarker(Verdict v, bool unicode) {
  switch (v) {
    case Verdict::kOk:
      return unicode ? "✓" : "+";
    case Verdict::kBusy:
      return unicode ? "●" : "*";
    case Verdict::kReclaimable:
      return unicode ? "◐" : "~";
    case Verdict::kDegraded:
      return "!";
    case Verdict::kFault:
      return unicode ? "✗" : "X";
    case Verdict::kUnknown:
      return "?";
    case Verdict::kNeverFits:
      return unicode ? "✗" : "X";
  }
  return "?";
}

Style LoadStyle(double fraction) {
  if (fraction >= 0.9) return Fg(Color::kRed);
  if (fraction >= 0.5) return Fg(Color::kYellow);
  return Fg(Color::kGreen);
}

std::string LocalClock(int64_t unix_ms, int64_t offset_s) {
  if (unix_ms <= 0) return "--:--:--";
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000 + offset_s);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "--:--:--";
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string Seconds(double s) {
  if (s < 60) return fmt::format("{:g}s", std::round(s * 10) / 10);
  return FormatDuration(s);
}

// Compact sizes for narrow columns: "79.6G", "512M", "0".
std::string ShortBytes(uint64_t bytes) {
  constexpr double kG = 1024.0 * 1024 * 1024;
  constexpr double kM = 1024.0 * 1024;
  const double b = static_cast<double>(bytes);
  if (bytes == 0) return "0";
  if (b >= 100 * kG) return fmt::format("{:.0f}G", b / kG);
  if (b >= kG) return fmt::format("{:.1f}G", b / kG);
  if (b >= kM) return fmt::format("{:.0f}M", b / kM);
  return fmt::format("{:.0f}K", b / 1024);
}

const diagnose::GpuVerdict* GpuVerdictOf(const WatchModel& m, unsigned index) {
  if (!m.diagnosis) return nullptr;
  for (const auto& g : m.diagnosis->gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

bool GpuShown(const Gpu& gpu, const UiState& ui) {
  return ui.gpu_filter.empty() ||
         std::find(ui.gpu_filter.begin(), ui.gpu_filter.end(), gpu.index) != ui.gpu_filter.end();
}

std::vector<const Gpu*> ShownGpus(const WatchModel& m, const UiState& ui) {
  std::vector<const Gpu*> out;
  if (!m.snapshot) return out;
  for (const Gpu& g : m.snapshot->gpus) {
    if (GpuShown(g, ui)) out.push_back(&g);
  }
  return out;
}

// Value and scale of a metric on the latest snapshot.
struct MetricNow {
  const char* label;
  std::optional<double> value;  // In the metric's unit.
  double scale = 100;           // The bar's and the sparkline's full scale.
  std::string text;             // "60.0/80.0G", " 97%", "71°C", "393/400W"
  Style style = kPlain;
};

MetricNow Now(const Gpu& gpu, Metric metric, const History& history) {
  MetricNow m;
  const float v = MetricValue(gpu, metric);
  if (!std::isnan(v)) m.value = v;
  switch (metric) {
    case Metric::kVram:
      m.label = "VRAM";
      if (gpu.memory.used_bytes && gpu.memory.total_bytes && !gpu.unreachable) {
        m.text = ShortBytes(*gpu.memory.used_bytes) + "/" + ShortBytes(*gpu.memory.total_bytes);
      }
      break;
    case Metric::kUtil:
      m.label = "UTIL";
      if (m.value) m.text = fmt::format("{:.0f}%", *m.value);
      break;
    case Metric::kTemp:
      m.label = "TEMP";
      if (m.value) m.text = fmt::format("{:.0f}°C", *m.value);
      m.scale = gpu.temperature_slowdown_c && *gpu.temperature_slowdown_c > 0
                    ? *gpu.temperature_slowdown_c
                    : 100;
      break;
    case Metric::kPower:
      m.label = "POWR";
      if (m.value) {
        m.text = gpu.power_limit_w ? fmt::format("{:.0f}/{:.0f}W", *m.value, *gpu.power_limit_w)
                                   : fmt::format("{:.0f}W", *m.value);
      }
      if (gpu.power_limit_w && *gpu.power_limit_w > 0) {
        m.scale = *gpu.power_limit_w;
      } else {
        const float peak = history.MaxOver(gpu.index, metric, 0, history.total());
        m.scale = std::isnan(peak) || peak <= 0 ? 1 : peak;
      }
      break;
  }
  if (m.text.empty()) m.text = "N/A";
  if (m.value) m.style = LoadStyle(*m.value / m.scale);
  return m;
}

class Painter {
 public:
  Painter(const WatchView& view, const UiState& ui, const LayoutPlan& plan)
      : v_(view),
        m_(view.model),
        ui_(ui),
        plan_(plan),
        g_(G(view.options.unicode)),
        s_(plan.width, plan.height) {}

  Screen Paint() {
    Header(0);
    int y = 1;
    if (v_.model.driver_stuck) Alert(y++);
    VerdictLine(y++);
    Gpus();
    Table();
    Findings();
    Queue();
    Footer();
    Dialogs();
    return std::move(s_);
  }

 private:
  int W() const { return plan_.width; }

  void Header(int y) {
    const Snapshot* snap = m_.snapshot.get();
    std::string text = "gpuwarden watch";
    if (snap) {
      if (snap->host.hostname) text += " · " + SanitizeForTerminal(*snap->host.hostname);
      if (snap->system.driver_version) {
        text += " · driver " + SanitizeForTerminal(*snap->system.driver_version);
      }
      text += fmt::format(" · {} GPU{}", snap->gpus.size(), snap->gpus.size() == 1 ? "" : "s");
    }
    text += " · every " + Seconds(v_.options.interval_s);
    if (v_.options.readonly) text += " · read-only";
    s_.Put(0, y, text, kBold);
    std::string right;
    if (snap && snap->source == SnapshotSource::kSimulated) right = "SIMULATED ";
    right += LocalClock(m_.data_unix_ms, v_.options.utc_offset_s);
    const int rw = DisplayWidth(right);
    if (rw + DisplayWidth(text) + 1 <= W()) {
      s_.Put(W() - rw, y, right,
             snap && snap->source == SnapshotSource::kSimulated ? Fg(Color::kCyan) : kPlain);
    }
  }

  void Alert(int y) {
    const double stale_s =
        m_.snapshot ? std::max<double>(0, (m_.updated_unix_ms - m_.data_unix_ms) / 1000.0) : 0;
    std::string text = std::string(v_.options.unicode ? "✗" : "X") + " driver not responding";
    if (!m_.driver_message.empty()) text += ": " + m_.driver_message;
    if (m_.snapshot && stale_s >= 1) text += fmt::format(" (values {} old)", Seconds(stale_s));
    s_.Put(0, y, TruncateToWidth(text, W()), Fg(Color::kRed, true));
  }

  void VerdictLine(int y) {
    if (!m_.diagnosis) {
      s_.Put(0, y, m_.snapshot ? "judging ..." : "waiting for the first look at the driver ...",
             kDim);
      return;
    }
    s_.Put(0, y, TruncateToWidth(m_.diagnosis->summary, W()), VerdictStyle(m_.diagnosis->server));
  }

  // ---- GPUs ---------------------------------------------------------------

  void Gpus() {
    if (plan_.gpu_lines == 0) return;
    const auto gpus = ShownGpus(m_, ui_);
    int y = plan_.gpu_top;
    const int end = plan_.gpu_top + plan_.gpu_lines;
    if (gpus.empty()) {
      s_.Put(0, y,
             m_.snapshot ? (ui_.gpu_filter.empty() ? "no GPU" : "no GPU matches the filter") : "",
             kDim);
      return;
    }
    int shown = 0;
    for (const Gpu* gpu : gpus) {
      if (shown >= plan_.gpus_shown) break;
      if (plan_.gpu_compact) {
        CompactGpu(*gpu, y++);
      } else {
        y = FullGpu(*gpu, y);
      }
      ++shown;
    }
    if (shown < static_cast<int>(gpus.size()) && y < end + 1) {
      s_.Put(0, std::min(y, end - 1),
             fmt::format("… {} more GPU{} (g filters GPUs)", gpus.size() - shown,
                         gpus.size() - shown == 1 ? "" : "s"),
             kDim);
    }
  }

  std::pair<std::string, Style> Marker(const Gpu& gpu) const {
    if (gpu.unreachable)
      return {VerdictMarker(Verdict::kFault, v_.options.unicode), VerdictStyle(Verdict::kFault)};
    const diagnose::GpuVerdict* gv = GpuVerdictOf(m_, gpu.index);
    if (!gv) return {" ", kPlain};
    return {VerdictMarker(gv->verdict, v_.options.unicode), VerdictStyle(gv->verdict)};
  }

  // "TEMP ██████░░ 71°C ▁▂▅▇" into `cols` columns from x.
  void MetricCell(const Gpu& gpu, Metric metric, int x, int y, int cols, int bar_cols,
                  int value_cols, bool label) {
    const MetricNow now = Now(gpu, metric, v_.history);
    int cx = x;
    if (label) {
      s_.Put(cx, y, now.label, kDim);
      cx += 5;
    }
    if (bar_cols > 0) {
      std::optional<double> fraction;
      if (now.value) fraction = *now.value / now.scale;
      s_.Put(cx, y, Bar(fraction, bar_cols, v_.options.unicode), now.style);
      cx += bar_cols + 1;
    }
    s_.Put(cx, y, PadLeft(now.text, value_cols), now.value ? kPlain : kDim);
    cx += value_cols + 1;
    const int spark_cols = x + cols - cx - 1;
    if (spark_cols >= 3) {
      const uint64_t bucket = BucketFor(v_.history.size(), spark_cols);
      s_.Put(cx, y,
             Sparkline(v_.history, gpu.index, metric, spark_cols, bucket, now.scale,
                       v_.options.unicode),
             Fg(Color::kCyan));
    }
  }

  int FullGpu(const Gpu& gpu, int y) {
    // Title: index, marker, verdict, name and what the verdict says.
    const auto [marker, mstyle] = Marker(gpu);
    int x = s_.Put(0, y, fmt::format("GPU {} ", gpu.index), kBold);
    x += s_.Put(x, y, marker, mstyle);
    const diagnose::GpuVerdict* gv = GpuVerdictOf(m_, gpu.index);
    std::string rest;
    if (gpu.unreachable) {
      rest = " UNREACHABLE — " + SanitizeForTerminal(gpu.unreachable->message);
    } else {
      if (gv) rest = " " + std::string(diagnose::VerdictName(gv->verdict));
      if (gpu.name) rest += "  " + SanitizeForTerminal(*gpu.name);
      if (gpu.pstate) rest += fmt::format("  P{}", *gpu.pstate);
      if (gpu.clocks.sm_mhz) rest += fmt::format("  {} MHz", *gpu.clocks.sm_mhz);
      if (gpu.fan_speed_pct) rest += fmt::format("  fan {}%", *gpu.fan_speed_pct);
      rest +=
          fmt::format("  {} proc{}", gpu.processes.size(), gpu.processes.size() == 1 ? "" : "s");
      // An OK GPU's verdict line only repeats the metrics below it.
      if (gv && gv->verdict != Verdict::kOk) {
        const size_t dash = gv->line.find("— ");
        if (dash != std::string::npos) rest += "  — " + gv->line.substr(dash + 4);
      }
    }
    s_.Put(x, y, TruncateToWidth(rest, W() - x), gpu.unreachable ? Fg(Color::kRed) : kPlain);
    ++y;
    const int per = plan_.metrics_per_line;
    const int cell = (W() - 2) / per;
    const int bar = cell >= 46 ? 10 : 6;
    for (int m = 0; m < static_cast<int>(kMetricCount); m += per) {
      for (int k = 0; k < per && m + k < static_cast<int>(kMetricCount); ++k) {
        MetricCell(gpu, static_cast<Metric>(m + k), 2 + k * cell, y, cell, bar, 11, true);
      }
      ++y;
    }
    return y;
  }

  void CompactGpu(const Gpu& gpu, int y) {
    const auto [marker, mstyle] = Marker(gpu);
    int x = s_.Put(0, y, fmt::format("{:>2}", gpu.index), kBold);
    x += s_.Put(x, y, " ");
    x += s_.Put(x, y, marker, mstyle);
    x += 1;
    if (gpu.unreachable) {
      s_.Put(x, y,
             TruncateToWidth("UNREACHABLE — " + SanitizeForTerminal(gpu.unreachable->message),
                             W() - x),
             Fg(Color::kRed));
      return;
    }
    // VRAM and UTIL with bars and sparklines; TEMP and POWER as values.
    const MetricNow temp = Now(gpu, Metric::kTemp, v_.history);
    const MetricNow power = Now(gpu, Metric::kPower, v_.history);
    const std::string tail = " " + PadLeft(temp.text, 5) + " " + PadLeft(power.text, 9);
    const int tail_cols = DisplayWidth(tail);
    const int avail = W() - x - tail_cols;
    const int half = avail / 2;
    if (half >= 20) {
      MetricCell(gpu, Metric::kVram, x, y, half, half >= 34 ? 8 : 5, 11, true);
      MetricCell(gpu, Metric::kUtil, x + half, y, avail - half, half >= 34 ? 8 : 5, 4, true);
    } else {
      const MetricNow vram = Now(gpu, Metric::kVram, v_.history);
      const MetricNow util = Now(gpu, Metric::kUtil, v_.history);
      s_.Put(x, y, "VRAM " + vram.text + " UTIL " + util.text, kPlain, avail);
    }
    int tx = W() - tail_cols;
    tx += s_.Put(tx, y, " ");
    tx += s_.Put(tx, y, PadLeft(temp.text, 5), temp.style);
    tx += s_.Put(tx, y, " ");
    s_.Put(tx, y, PadLeft(power.text, 9), power.style);
  }

  // ---- Processes ------------------------------------------------------------

  struct Columns {
    int gpu = 3, pid = 7, user = 8, vram = 7, sm = 4, cpu = 5, age = 6, state = 2;
    bool wide_state = false;
  };

  Columns TableColumns() const {
    Columns c;
    if (W() >= 120) {
      c.user = 12;
      c.vram = 9;
      c.age = 8;
      c.state = 6;
      c.wide_state = true;
    }
    return c;
  }

  static std::string StateText(const ProcessRow& r, bool wide) {
    if (!r.state) return r.in_proc ? "?" : "-";
    switch (*r.state) {
      case ProcessState::kRunning:
        return wide ? "run" : "R";
      case ProcessState::kSleeping:
        return wide ? "sleep" : "S";
      case ProcessState::kDiskSleep:
        return wide ? "D-wait" : "D";
      case ProcessState::kZombie:
        return wide ? "zombie" : "Z";
      case ProcessState::kStopped:
        return wide ? "stop" : "T";
      case ProcessState::kIdle:
        return wide ? "idle" : "I";
      case ProcessState::kDead:
        return wide ? "dead" : "X";
      case ProcessState::kOther:
        return "?";
    }
    return "?";
  }

  // A column title, with the sort direction on the sorted column.
  std::string HeaderCell(const char* name, SortKey key, int cols, bool left) const {
    std::string label = name;
    if (ui_.sort == key) label += ui_.sort_descending ? g_.down : g_.up;
    return left ? PadRight(label, cols) : PadLeft(label, cols);
  }

  void Table() {
    if (plan_.table_top < 0) return;
    const Columns c = TableColumns();
    const int y0 = plan_.table_top;
    std::string head = " ";
    head += HeaderCell("GPU", SortKey::kGpu, c.gpu, true) + " ";
    head += HeaderCell("PID", SortKey::kPid, c.pid, false) + " ";
    head += HeaderCell("USER", SortKey::kUser, c.user, true) + " ";
    head += HeaderCell("VRAM", SortKey::kVram, c.vram, false) + " ";
    head += HeaderCell("SM%", SortKey::kSm, c.sm, false) + " ";
    head += HeaderCell("CPU%", SortKey::kCpu, c.cpu, false) + " ";
    head += HeaderCell("AGE", SortKey::kAge, c.age, false) + " ";
    head += PadRight(c.wide_state ? "STATE" : "ST", c.state) + " ";
    head += "COMMAND";
    std::string right;
    const int n = static_cast<int>(v_.rows.size());
    if (n > plan_.table_rows && plan_.table_rows > 0) {
      right = fmt::format(" {}-{} of {}", ui_.scroll + 1,
                          std::min(n, ui_.scroll + plan_.table_rows), n);
    } else if (ui_.tree) {
      right = " tree";
    }
    if (!ui_.user_filter.empty()) right = " user " + ui_.user_filter + right;
    s_.Put(0, y0, PadRight(head, W()), kReverse);
    if (!right.empty() && DisplayWidth(right) + DisplayWidth(head) < W()) {
      s_.Put(W() - DisplayWidth(right), y0, right, kReverse);
    }
    if (!m_.snapshot) return;
    if (v_.rows.empty()) {
      const bool filtered = !ui_.user_filter.empty() || !ui_.gpu_filter.empty();
      s_.Put(1, y0 + 1,
             filtered ? "no process matches the filters (c clears them)" : "no process holds a GPU",
             kDim);
      return;
    }
    const int cmd_x = 1 + c.gpu + 1 + c.pid + 1 + c.user + 1 + c.vram + 1 + c.sm + 1 + c.cpu + 1 +
                      c.age + 1 + c.state + 1;
    for (int i = 0; i < plan_.table_rows; ++i) {
      const int idx = ui_.scroll + i;
      if (idx >= n) break;
      const ProcessRow& r = v_.rows[static_cast<size_t>(idx)];
      const int y = y0 + 1 + i;
      const bool selected = idx == ui_.selected && ui_.dialog != Dialog::kHelp;
      Style base = r.group || !r.listed ? kDim : kPlain;
      int x = 0;
      x += s_.Put(x, y, selected ? g_.sel : " ", kBold);
      x += s_.Put(x, y, PadRight(r.gpu, c.gpu), base) + 1;
      x += s_.Put(x, y, PadLeft(std::to_string(r.pid), c.pid), base) + 1;
      x += s_.Put(x, y, PadRight(r.user, c.user), base) + 1;
      x += s_.Put(x, y, PadLeft(r.vram_bytes ? ShortBytes(*r.vram_bytes) : "-", c.vram), base) + 1;
      Style sm_style = base;
      if (r.sm_pct && *r.sm_pct == 0 && !r.group) sm_style = Fg(Color::kYellow);
      x += s_.Put(x, y, PadLeft(r.sm_pct ? std::to_string(*r.sm_pct) : "-", c.sm), sm_style) + 1;
      x += s_.Put(x, y, PadLeft(r.cpu_pct ? fmt::format("{:.1f}", *r.cpu_pct) : "-", c.cpu), base) +
           1;
      x += s_.Put(x, y, PadLeft(r.age_s ? FormatDuration(*r.age_s) : "-", c.age), base) + 1;
      Style st = base;
      if (r.state && (*r.state == ProcessState::kDiskSleep || *r.state == ProcessState::kZombie)) {
        st = Fg(Color::kRed, true);
      }
      x += s_.Put(x, y, PadRight(StateText(r, c.wide_state), c.state), st) + 1;
      std::string cmd;
      if (r.depth > 0) {
        const bool last_child = idx + 1 >= n || v_.rows[static_cast<size_t>(idx + 1)].depth == 0;
        cmd = last_child ? g_.branch_last : g_.branch_mid;
      }
      if (!r.listed) cmd += "[not listed by the driver] ";
      cmd += r.command;
      s_.Put(cmd_x, y, TruncateToWidth(cmd, W() - cmd_x), base);
      if (selected) s_.SetStyle(0, y, W(), kReverse);
    }
  }

  // ---- Findings and queue ---------------------------------------------------

  void Findings() {
    if (plan_.findings_lines == 0 || !m_.diagnosis) return;
    const auto& fs = m_.diagnosis->findings;
    const int lines = plan_.findings_lines;
    const bool more = static_cast<int>(fs.size()) > lines;
    const int show = more ? lines - 1 : static_cast<int>(fs.size());
    for (int i = 0; i < show; ++i) {
      const diagnose::Finding& f = fs[static_cast<size_t>(i)];
      const int y = plan_.findings_top + i;
      const char* mark = f.severity == diagnose::Severity::kCritical
                             ? (v_.options.unicode ? "✗" : "X")
                         : f.severity == diagnose::Severity::kWarning ? "!"
                                                                      : g_.dot;
      const Style ms = f.severity == diagnose::Severity::kCritical  ? Fg(Color::kRed, true)
                       : f.severity == diagnose::Severity::kWarning ? Fg(Color::kYellow, true)
                                                                    : kDim;
      int x = s_.Put(0, y, mark, ms) + 1;
      x += s_.Put(x, y, f.code, kBold) + 1;
      s_.Put(x, y, TruncateToWidth(f.message, W() - x));
    }
    if (more) {
      s_.Put(0, plan_.findings_top + show,
             fmt::format("  … {} more finding{} (gpuwarden why)", fs.size() - show,
                         fs.size() - show == 1 ? "" : "s"),
             kDim);
    }
  }

  void Queue() {
    if (plan_.queue_lines == 0) return;
    const QueueView& q = m_.queue;
    const int y0 = plan_.queue_top;
    switch (q.state) {
      case QueueView::State::kNotAsked:
        s_.Put(0, y0, "QUEUE …", kDim);
        return;
      case QueueView::State::kNoDaemon:
        s_.Put(0, y0, "QUEUE no daemon (gpuwardend is not running)", kDim);
        return;
      case QueueView::State::kError:
        s_.Put(0, y0, TruncateToWidth("QUEUE " + q.message, W()), Fg(Color::kYellow));
        return;
      case QueueView::State::kOk:
        break;
    }
    int running = 0;
    int waiting = 0;
    for (const QueueJob& j : q.jobs) (j.state == "running" ? running : waiting)++;
    std::string head = q.jobs.empty()
                           ? "QUEUE empty"
                           : fmt::format("QUEUE {} running · {} waiting", running, waiting);
    if (!q.degraded.empty()) {
      // The daemon cannot do all it should (its disk refused): say so first.
      std::string what;
      for (const std::string& d : q.degraded) what += (what.empty() ? "" : "; ") + d;
      s_.Put(0, y0, TruncateToWidth(head + " · DEGRADED: " + what, W()), Fg(Color::kYellow));
    } else {
      s_.Put(0, y0, head, kBold);
    }
    const int lines = plan_.queue_lines - 1;
    const bool more = static_cast<int>(q.jobs.size()) > lines;
    const int show = more ? lines - 1 : static_cast<int>(q.jobs.size());
    for (int i = 0; i < show; ++i) {
      const QueueJob& j = q.jobs[static_cast<size_t>(i)];
      const int y = y0 + 1 + i;
      std::string where;
      if (j.state == "running") {
        for (unsigned g : j.gpu_indices)
          where += (where.empty() ? "GPU " : ",") + std::to_string(g);
        if (where.empty()) where = "no GPU";
      } else {
        where = j.position ? fmt::format("#{} in line", *j.position) : "";
      }
      std::string since;
      if (j.since_unix_ms && q.now_unix_ms > 0) {
        since = FormatDuration((q.now_unix_ms - *j.since_unix_ms) / 1000.0);
      }
      std::string line =
          fmt::format("  {:>5} {} {} {} {}x{} {} {}", j.id, PadRight(j.user, 8),
                      PadRight(j.state, 8), PadRight(where, 12), j.gpus,
                      j.vram_bytes ? ShortBytes(j.vram_bytes) : "whole", PadLeft(since, 6), j.name);
      if (!j.wait_message.empty()) line += " — waits: " + j.wait_message;
      s_.Put(0, y, TruncateToWidth(line, W()),
             j.state == "running" ? kPlain : (j.state == "held" ? kDim : Fg(Color::kYellow)));
    }
    if (more) {
      s_.Put(0, y0 + 1 + show,
             fmt::format("  … {} more job{} (gpuwarden queue)", q.jobs.size() - show,
                         q.jobs.size() - show == 1 ? "" : "s"),
             kDim);
    }
  }

  // ---- Footer and dialogs ---------------------------------------------------

  void Footer() {
    const int y = plan_.footer;
    if (ui_.dialog == Dialog::kInput) {
      const char* prompt = ui_.input_kind == InputKind::kUserFilter ? "only user (empty: all): "
                           : ui_.input_kind == InputKind::kGpuFilter
                               ? "only GPUs (e.g. 0,3; empty: all): "
                               : "find PID, user or command: ";
      std::string text = std::string(prompt) + ui_.input + "_";
      s_.Put(0, y, PadRight(TruncateToWidth(text, W()), W()), kReverse);
      return;
    }
    std::string text;
    Style style = kReverse;
    if (!ui_.status.empty()) {
      text = ui_.status;
    } else {
      text = std::string("q quit  ") + (v_.options.unicode ? "↑↓" : "j/k") + " select  " +
             (v_.options.readonly ? "" : "x stop  ") +
             "s sort  t tree  u user  g gpu  / find  ? help";
    }
    s_.Put(0, y, PadRight(TruncateToWidth(text, W()), W()), style);
  }

  void Box(const std::string& title, const std::vector<std::string>& lines, const std::string& hint,
           Style frame) {
    int inner = DisplayWidth(title) + 4;
    for (const std::string& l : lines) inner = std::max(inner, DisplayWidth(l));
    inner = std::max(inner, DisplayWidth(hint));
    inner = std::min(inner + 2, W() - 2);
    if (inner < 4) return;
    const int max_lines = std::max(1, plan_.height - 4);
    const int n = std::min(static_cast<int>(lines.size()), max_lines);
    const int h = n + 2 + (hint.empty() ? 0 : 1);
    const int x0 = std::max(0, (W() - inner - 2) / 2);
    const int y0 = std::max(0, (plan_.height - h) / 2);
    std::string top = g_.tl;
    std::string t = TruncateToWidth(" " + title + " ", inner);
    top += t;
    for (int i = DisplayWidth(t); i < inner; ++i) top += g_.h;
    top += g_.tr;
    s_.Put(x0, y0, top, frame);
    auto row = [&](int y, const std::string& text, Style style) {
      s_.Put(x0, y, g_.v, frame);
      s_.Put(x0 + 1, y, PadRight(" " + TruncateToWidth(text, inner - 2), inner), style);
      s_.Put(x0 + 1 + inner, y, g_.v, frame);
    };
    for (int i = 0; i < n; ++i) row(y0 + 1 + i, lines[static_cast<size_t>(i)], kPlain);
    int y = y0 + 1 + n;
    if (!hint.empty()) row(y++, hint, kBold);
    std::string bottom = g_.bl;
    for (int i = 0; i < inner; ++i) bottom += g_.h;
    bottom += g_.br;
    s_.Put(x0, y, bottom, frame);
  }

  void Dialogs() {
    switch (ui_.dialog) {
      case Dialog::kNone:
      case Dialog::kInput:
        return;
      case Dialog::kHelp:
        Box("gpuwarden watch — keys", HelpLines(v_.options.readonly),
            "q quits, any other key closes", kBold);
        return;
      case Dialog::kPreparing:
      case Dialog::kRunning:
        Box(ui_.dialog_title, ui_.dialog_lines, "q quits", kBold);
        return;
      case Dialog::kConfirm:
        Box(ui_.dialog_title, ui_.dialog_lines, "y: stop it    n / Esc: cancel",
            Fg(Color::kYellow, true));
        return;
      case Dialog::kResult:
        Box(ui_.dialog_title, ui_.dialog_lines, "q quits, any other key closes",
            Fg(Color::kGreen, true));
        return;
      case Dialog::kMessage:
        Box(ui_.dialog_title, ui_.dialog_lines, "q quits, any other key closes",
            Fg(Color::kRed, true));
        return;
    }
  }

  const WatchView& v_;
  const WatchModel& m_;
  const UiState& ui_;
  const LayoutPlan& plan_;
  const Glyphs& g_;
  Screen s_;
};

}  // namespace

uint64_t BucketFor(size_t held, int columns) {
  static constexpr uint64_t kSteps[] = {1, 2, 3, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600};
  columns = std::max(1, columns);
  for (uint64_t step : kSteps) {
    if (step * static_cast<uint64_t>(columns) >= held) return step;
  }
  return kSteps[std::size(kSteps) - 1];
}

std::string Sparkline(const History& history, unsigned gpu, Metric metric, int columns,
                      uint64_t bucket, double scale_max, bool unicode) {
  const Glyphs& g = G(unicode);
  std::string out;
  if (columns <= 0) return out;
  bucket = std::max<uint64_t>(1, bucket);
  const uint64_t total = history.total();
  // The newest bucket holds sample total-1; the one `columns - 1` to its left
  // is drawn first.
  const uint64_t newest = total == 0 ? 0 : (total - 1) / bucket;
  for (int c = columns - 1; c >= 0; --c) {
    const uint64_t back = static_cast<uint64_t>(c);
    if (total == 0 || back > newest) {
      out += ' ';
      continue;
    }
    const uint64_t b = newest - back;
    const float v = history.MaxOver(gpu, metric, b * bucket, (b + 1) * bucket);
    if (std::isnan(v)) {
      out += ' ';
      continue;
    }
    const double f = scale_max > 0 ? std::clamp(static_cast<double>(v) / scale_max, 0.0, 1.0) : 0;
    const int level = std::clamp(static_cast<int>(std::lround(f * 7)), 0, 7);
    out += g.spark[level];
  }
  return out;
}

std::string Bar(std::optional<double> fraction, int columns, bool unicode) {
  static constexpr const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  std::string out;
  if (columns <= 0) return out;
  if (!fraction) {
    for (int i = 0; i < columns; ++i) out += unicode ? "░" : ".";
    return out;
  }
  const double f = std::clamp(*fraction, 0.0, 1.0);
  if (!unicode) {
    const int filled = static_cast<int>(std::lround(f * columns));
    out.append(static_cast<size_t>(filled), '#');
    out.append(static_cast<size_t>(columns - filled), '.');
    return out;
  }
  const int eighths = static_cast<int>(std::lround(f * columns * 8));
  const int full = eighths / 8;
  const int part = eighths % 8;
  for (int i = 0; i < full; ++i) out += "█";
  int used = full;
  if (part > 0 && used < columns) {
    out += kEighths[part];
    ++used;
  }
  for (int i = used; i < columns; ++i) out += "░";
  return out;
}

std::vector<std::string> HelpLines(bool readonly) {
  std::vector<std::string> lines = {
      "↑ ↓ j k  PgUp PgDn  Home End   select a process",
      "s        sort by the next column (VRAM, SM%, CPU%, AGE, PID, USER, GPU)",
      "r        reverse the order",
      "t        tree: a run's workers under their parent",
      "u        only one user's processes      g   only some GPUs (0,3)",
      "c        clear the filters              /   find a PID, user or command",
  };
  if (readonly) {
    lines.push_back("x X F9   off: started with --readonly");
  } else {
    lines.push_back("x  F9    stop the selected process (asks first; as `gpuwarden kill`)");
    lines.push_back("X        stop it with its run: parent and workers (`kill --tree`)");
  }
  lines.push_back("Ctrl-L   repaint                        q   quit (Ctrl-C too)");
  lines.push_back("");
  lines.push_back("Markers: ✓ OK  ● busy  ◐ reclaimable  ! degraded  ✗ fault  ? unknown");
  lines.push_back("History: one column per sample (or per few), newest on the right.");
  return lines;
}

LayoutPlan PlanLayout(const WatchView& view, const UiState& ui, int width, int height) {
  LayoutPlan p;
  p.width = std::max(1, width);
  p.height = std::max(1, height);
  const WatchModel& m = view.model;
  p.footer = p.height - 1;
  int y = 2 + (m.driver_stuck ? 1 : 0);  // Header, alert, verdict.
  int left = p.footer - y;               // Rows between the verdict and the footer.

  // What the lower panels would like.
  const size_t findings = m.diagnosis ? m.diagnosis->findings.size() : 0;
  const bool tall = p.height >= 40;
  int want_findings = static_cast<int>(std::min<size_t>(findings, tall ? 6 : 2));
  int want_queue = 1;
  if (m.queue.state == QueueView::State::kOk && !m.queue.jobs.empty()) {
    want_queue = 1 + static_cast<int>(std::min<size_t>(m.queue.jobs.size(), tall ? 8 : 2));
  }

  // GPUs (those the filter keeps): the richest mode that leaves room for a
  // useful table.
  const int gpus = static_cast<int>(ShownGpus(m, ui).size());
  p.metrics_per_line = p.width >= 160 ? 4 : (p.width >= 76 ? 2 : 1);
  const int full_lines =
      1 + (static_cast<int>(kMetricCount) + p.metrics_per_line - 1) / p.metrics_per_line;
  const int budget = left - (1 + kMinTableRows) - want_findings - want_queue;
  if (gpus == 0) {
    p.gpu_lines = 1;
    p.gpus_shown = 0;
  } else if (gpus * full_lines <= budget) {
    p.gpu_compact = false;
    p.gpu_lines = gpus * full_lines;
    p.gpus_shown = gpus;
  } else {
    p.gpu_compact = true;
    const int fit = std::max(1, std::min(gpus, budget));
    p.gpus_shown = fit < gpus ? std::max(1, fit - 1) : gpus;  // One line for "… more".
    p.gpu_lines = fit;
  }
  p.gpu_top = y;
  y += p.gpu_lines;
  left = p.footer - y;

  // Shrink the lower panels if the table would get fewer than its minimum.
  while (left - 1 - want_findings - want_queue < kMinTableRows && want_findings > 1)
    --want_findings;
  while (left - 1 - want_findings - want_queue < kMinTableRows && want_queue > 1) --want_queue;
  while (left - 1 - want_findings - want_queue < 1 && want_findings > 0) --want_findings;
  while (left - 1 - want_findings - want_queue < 1 && want_queue > 0) --want_queue;

  p.table_top = left >= 1 ? y : -1;
  p.table_rows = std::max(0, left - 1 - want_findings - want_queue);
  y += 1 + p.table_rows;
  p.findings_top = y;
  p.findings_lines = want_findings;
  y += want_findings;
  p.queue_top = y;
  p.queue_lines = want_queue;
  return p;
}

Screen Render(const WatchView& view, const UiState& ui, int width, int height) {
  const LayoutPlan plan = PlanLayout(view, ui, width, height);
  Painter painter(view, ui, plan);
  return painter.Paint();
}

}  // namespace gw::watch
