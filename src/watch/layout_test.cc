// The layout at the sizes the issue names (80x24 over SSH, 200x60 on a big
// screen) from fixed snapshots: what must be on screen, where, and that
// nothing spills over.
#include "watch/layout.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/text.h"
#include "core/units.h"
#include "watch/test_fixtures.h"

namespace gw::watch {
namespace {

struct Fixture {
  WatchModel model;
  History history{600};
  std::vector<ProcessRow> rows;
  UiState ui;
  ViewOptions options;

  explicit Fixture(Snapshot s, int findings = 1) {
    diagnose::Diagnosis d = testing::SomeDiagnosis(s, findings);
    for (int i = 0; i < 30; ++i) {
      // Utilisation of GPU 0 climbs from 0 to 100 over the history.
      Snapshot step = s;
      step.gpus[0].utilization_gpu_pct = static_cast<unsigned>(i * 100 / 29);
      history.Push(step);
    }
    model = testing::ModelOf(std::move(s), std::move(d));
  }
  Screen Draw(int w, int h) {
    rows = BuildRows(*model.snapshot, ui);
    ui = Reselect(ui, rows);
    WatchView view{model, history, rows, options};
    const LayoutPlan plan = PlanLayout(view, ui, w, h);
    ui = FitScroll(ui, plan.table_rows, static_cast<int>(rows.size()));
    return Render(view, ui, w, h);
  }
};

int RowOf(const Screen& s, const std::string& needle) {
  for (int y = 0; y < s.height(); ++y) {
    if (s.RowText(y).find(needle) != std::string::npos) return y;
  }
  return -1;
}

int CountRows(const Screen& s, const std::string& needle) {
  int n = 0;
  for (int y = 0; y < s.height(); ++y) n += s.RowText(y).find(needle) != std::string::npos;
  return n;
}

void ExpectFits(const Screen& s) {
  for (int y = 0; y < s.height(); ++y) {
    EXPECT_LE(DisplayWidth(s.RowText(y)), s.width()) << "row " << y << ": " << s.RowText(y);
    EXPECT_EQ(s.RowText(y).find('\x1b'), std::string::npos);
  }
}

TEST(Layout, TwoGpusAt80x24) {
  Fixture f(testing::TwoGpus());
  const Screen s = f.Draw(80, 24);
  ExpectFits(s);
  EXPECT_EQ(s.RowText(0).rfind("gpuwarden watch · lab-7 · driver 550.90.07 · 2 GPUs · every 1s", 0),
            0u)
      << s.Text();
  EXPECT_EQ(s.RowText(1), "BUSY — resource shortage: 1/2 GPUs ≥ 95 % VRAM");
  // Full GPU panel: a title and two lines of two metrics per GPU.
  const int g0 = RowOf(s, "GPU 0 ●");
  ASSERT_EQ(g0, 2) << s.Text();
  EXPECT_NE(s.RowText(g0).find("BUSY  NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(s.RowText(g0 + 1).find("VRAM"), std::string::npos);
  EXPECT_NE(s.RowText(g0 + 1).find("70.0G/79.6G"), std::string::npos);
  EXPECT_NE(s.RowText(g0 + 1).find("UTIL"), std::string::npos);
  EXPECT_NE(s.RowText(g0 + 1).find("97%"), std::string::npos);
  EXPECT_NE(s.RowText(g0 + 2).find("71°C"), std::string::npos);
  EXPECT_NE(s.RowText(g0 + 2).find("650/700W"), std::string::npos);
  EXPECT_EQ(RowOf(s, "GPU 1 ✓"), g0 + 3);
  // The utilisation sparkline ends with its climb to the top.
  EXPECT_NE(s.RowText(g0 + 1).find("▆▇▇█"), std::string::npos) << s.RowText(g0 + 1);
  // The table, sorted by VRAM, selection on the first row.
  const int head = RowOf(s, "PID USER");
  ASSERT_EQ(head, g0 + 6);
  EXPECT_NE(s.RowText(head).find("VRAM▼"), std::string::npos);
  EXPECT_EQ(s.RowText(head + 1).rfind("▶0      4242 alice", 0), 0u) << s.RowText(head + 1);
  EXPECT_NE(s.RowText(head + 1).find("60.0G   97  98.5     2h R  python train.py --epochs 90"),
            std::string::npos)
      << s.RowText(head + 1);
  EXPECT_TRUE(s.At(0, head + 1).style.reverse);
  EXPECT_NE(s.RowText(head + 2).find("5151 bob"), std::string::npos);
  EXPECT_NE(s.RowText(head + 2).find("1d 6h S  jupyter-kernel"), std::string::npos);
  // Findings, the queue and the keys at the bottom.
  EXPECT_EQ(s.RowText(20).rfind("✗ XID_FATAL finding 0", 0), 0u) << s.Text();
  EXPECT_NE(s.RowText(21).find("2 more findings"), std::string::npos);
  EXPECT_EQ(s.RowText(22), "QUEUE no daemon (gpuwardend is not running)");
  EXPECT_EQ(s.RowText(23).rfind("q quit", 0), 0u);
  EXPECT_NE(s.RowText(23).find("x stop"), std::string::npos);
}

TEST(Layout, EightGpusAnd64ProcessesAt80x24UseOneLinePerGpu) {
  Fixture f(testing::EightGpus(8));
  const Screen s = f.Draw(80, 24);
  ExpectFits(s);
  for (int g = 0; g < 7; ++g) {
    const std::string row = s.RowText(2 + g);
    EXPECT_EQ(row.rfind(" " + std::to_string(g) + " ●", 0), 0u) << row;
    EXPECT_NE(row.find("VRAM"), std::string::npos) << row;
    EXPECT_NE(row.find("UTIL"), std::string::npos) << row;
    EXPECT_NE(row.find("°C"), std::string::npos) << row;
  }
  const int head = RowOf(s, "PID USER");
  ASSERT_GT(head, 0);
  // At least four process rows, and where the list stands.
  EXPECT_GE(RowOf(s, "QUEUE") - head - 1 - 2, 4) << s.Text();
  EXPECT_NE(s.RowText(head).find(" of 64"), std::string::npos) << s.RowText(head);
}

TEST(Layout, EightGpusAt200x60ShowEveryMetricWithHistory) {
  Fixture f(testing::EightGpus(32), 3);
  f.model.queue.state = QueueView::State::kOk;
  f.model.queue.now_unix_ms = testing::kTime;
  QueueJob run;
  run.id = 12;
  run.user = "alice";
  run.name = "train";
  run.state = "running";
  run.gpus = 2;
  run.vram_bytes = 40 * kGiB;
  run.gpu_indices = {0, 1};
  run.since_unix_ms = testing::kTime - 3'600'000;
  QueueJob wait = run;
  wait.id = 13;
  wait.user = "bob";
  wait.state = "queued";
  wait.position = 1;
  wait.gpu_indices.clear();
  wait.wait_code = "resources";
  wait.wait_message = "needs 2 GPUs with 40 GiB free; 0 have it";
  f.model.queue.jobs = {run, wait};
  const Screen s = f.Draw(200, 60);
  ExpectFits(s);
  // Two lines per GPU: the title, then VRAM, UTIL, TEMP and POWER side by side.
  for (int g = 0; g < 8; ++g) {
    const int title = RowOf(s, "GPU " + std::to_string(g) + " ●");
    ASSERT_EQ(title, 2 + 2 * g) << s.Text();
    const std::string metrics = s.RowText(title + 1);
    for (const char* m : {"VRAM", "UTIL", "TEMP", "POWR"}) {
      EXPECT_NE(metrics.find(m), std::string::npos) << metrics;
    }
  }
  const int head = RowOf(s, "PID USER");
  EXPECT_EQ(head, 18);
  EXPECT_NE(s.RowText(head).find("STATE"), std::string::npos);  // Wide columns.
  EXPECT_GE(CountRows(s, "python worker.py"), 25);
  EXPECT_GE(CountRows(s, "XID_FATAL"), 2);  // Up to six findings on a tall screen.
  const int q = RowOf(s, "QUEUE 1 running · 1 waiting");
  ASSERT_GT(q, head);
  EXPECT_NE(s.RowText(q + 1).find("alice"), std::string::npos);
  EXPECT_NE(s.RowText(q + 1).find("GPU 0,1"), std::string::npos);
  EXPECT_NE(s.RowText(q + 2).find("waits: needs 2 GPUs with 40 GiB free"), std::string::npos);
  EXPECT_EQ(s.height(), 60);
  EXPECT_EQ(s.RowText(59).rfind("q quit", 0), 0u);
}

// A degraded daemon (its disk refused a write) is said on the queue's first
// line; a job without --vram needs a whole GPU, not "any" memory.
TEST(Layout, QueuePanelSaysTheDaemonIsDegraded) {
  Fixture f(testing::EightGpus(4), 3);
  f.model.queue.state = QueueView::State::kOk;
  f.model.queue.now_unix_ms = testing::kTime;
  f.model.queue.degraded = {"storage: queue storage not writable: no space left on device"};
  QueueJob wait;
  wait.id = 13;
  wait.user = "bob";
  wait.state = "queued";
  wait.gpus = 1;
  wait.position = 1;
  f.model.queue.jobs = {wait};
  const Screen s = f.Draw(200, 60);
  const int q = RowOf(s, "QUEUE 0 running · 1 waiting · DEGRADED: storage: queue storage not");
  ASSERT_GT(q, 0) << s.Text();
  EXPECT_NE(s.RowText(q + 1).find("1xwhole"), std::string::npos) << s.RowText(q + 1);
}

TEST(Layout, DriverNotRespondingIsSaidAndOldValuesAreMarkedStale) {
  Fixture f(testing::TwoGpus());
  f.model.driver_stuck = true;
  f.model.driver_message = "nvmlDeviceGetMemoryInfo_v2 on GPU 2 did not return within 2.0 s";
  f.model.updated_unix_ms = f.model.data_unix_ms + 12'000;
  const Screen s = f.Draw(80, 24);
  ExpectFits(s);
  EXPECT_EQ(s.RowText(1).rfind("✗ driver not responding: nvmlDeviceGetMemoryInfo_v2", 0), 0u)
      << s.Text();
  EXPECT_EQ(s.At(0, 1).style.fg, Color::kRed);
  Screen wide = f.Draw(200, 60);
  EXPECT_NE(wide.RowText(1).find("(values 12s old)"), std::string::npos) << wide.RowText(1);
}

TEST(Layout, BeforeTheFirstLookItSaysSo) {
  WatchModel model;
  History history;
  std::vector<ProcessRow> rows;
  const Screen s = Render(WatchView{model, history, rows, {}}, UiState{}, 80, 24);
  ExpectFits(s);
  EXPECT_EQ(s.RowText(1), "waiting for the first look at the driver ...");
  EXPECT_EQ(s.RowText(23).rfind("q quit", 0), 0u);
}

TEST(Layout, ReadonlyHidesTheStopKey) {
  Fixture f(testing::TwoGpus());
  f.options.readonly = true;
  Screen s = f.Draw(80, 24);
  EXPECT_EQ(s.RowText(23).find("x stop"), std::string::npos);
  EXPECT_NE(s.RowText(0).find("read-only"), std::string::npos);
  f.ui.dialog = Dialog::kHelp;
  s = f.Draw(80, 24);
  EXPECT_GT(RowOf(s, "off: started with --readonly"), 0) << s.Text();
}

TEST(Layout, DialogsAreDrawnOverTheScreen) {
  Fixture f(testing::TwoGpus());
  f.ui.dialog = Dialog::kConfirm;
  f.ui.dialog_title = "Stop PID 5151?";
  f.ui.dialog_lines = {"PID 5151  user bob  GPU 0  VRAM 10 GiB", "  jupyter-kernel"};
  Screen s = f.Draw(80, 24);
  ExpectFits(s);
  const int top = RowOf(s, "┌ Stop PID 5151? ");
  ASSERT_GT(top, 0) << s.Text();
  EXPECT_NE(s.RowText(top + 1).find("│ PID 5151  user bob"), std::string::npos);
  EXPECT_NE(s.RowText(top + 3).find("y: stop it    n / Esc: cancel"), std::string::npos);
  EXPECT_NE(s.RowText(top + 4).find("└"), std::string::npos);
  f.ui.dialog = Dialog::kInput;
  f.ui.input_kind = InputKind::kUserFilter;
  f.ui.input = "bo";
  s = f.Draw(80, 24);
  EXPECT_EQ(s.RowText(23), "only user (empty: all): bo_");
}

TEST(Layout, AsciiWithoutUnicode) {
  Fixture f(testing::TwoGpus());
  f.options.unicode = false;
  const Screen s = f.Draw(80, 24);
  const int g0 = RowOf(s, "GPU 0 *");
  ASSERT_GT(g0, 0) << s.Text();
  EXPECT_NE(s.RowText(g0 + 1).find("##"), std::string::npos);
  EXPECT_EQ(RowOf(s, "█"), -1);
  EXPECT_EQ(RowOf(s, "▶"), -1);
}

TEST(Layout, SanitisedCommandsOnly) {
  Snapshot snap = testing::TwoGpus();
  snap.processes[4242].cmdline = {"python\x1b[2J", "\xff"};
  Fixture f(snap);
  const Screen s = f.Draw(80, 24);
  ExpectFits(s);
  EXPECT_GT(RowOf(s, "python\\x1b[2J \\xff"), 0) << s.Text();
}

TEST(Layout, GpuFilterNarrowsBothPanels) {
  Fixture f(testing::EightGpus(2));
  f.ui.gpu_filter = {3};
  const Screen s = f.Draw(200, 60);
  EXPECT_GT(RowOf(s, "GPU 3 "), 0);
  EXPECT_EQ(RowOf(s, "GPU 0 "), -1);
  EXPECT_EQ(CountRows(s, "python worker.py"), 2);
}

TEST(Layout, TinyTerminalsStillGetSomethingSensible) {
  for (auto [w, h] : {std::pair{1, 1}, std::pair{20, 5}, std::pair{40, 10}, std::pair{60, 15}}) {
    Fixture f(testing::EightGpus(4), 3);
    f.ui.dialog = Dialog::kHelp;  // The largest dialog, too.
    const Screen s = f.Draw(w, h);
    EXPECT_EQ(s.width(), w);
    EXPECT_EQ(s.height(), h);
    ExpectFits(s);
    if (h >= 10) {
      EXPECT_EQ(s.RowText(h - 1).rfind("q quit", 0), 0u) << s.Text();
    }
  }
}

TEST(Sparkline, ScalesBucketsAndLeavesUnknownBlank) {
  History h(100);
  Snapshot s = testing::TwoGpus();
  for (unsigned u : {0u, 50u, 100u}) {
    s.gpus[0].utilization_gpu_pct = u;
    h.Push(s);
  }
  h.PushGap();
  EXPECT_EQ(Sparkline(h, 0, Metric::kUtil, 6, 1, 100, true), "  ▁▅█ ");
  EXPECT_EQ(Sparkline(h, 0, Metric::kUtil, 6, 1, 100, false), "  _=# ");
  // Two samples a column, aligned to the sample count: [0,50] [100,gap].
  EXPECT_EQ(Sparkline(h, 0, Metric::kUtil, 3, 2, 100, true), " ▅█");
  EXPECT_EQ(Sparkline(h, 5, Metric::kUtil, 3, 1, 100, true), "   ");
}

TEST(Sparkline, BucketGrowsInWholeSteps) {
  EXPECT_EQ(BucketFor(10, 20), 1u);
  EXPECT_EQ(BucketFor(21, 20), 2u);
  EXPECT_EQ(BucketFor(600, 20), 30u);
  EXPECT_EQ(BucketFor(601, 20), 60u);
}

TEST(Bar, EighthsAndAscii) {
  EXPECT_EQ(Bar(0.5, 4, true), "██░░");
  EXPECT_EQ(Bar(0.55, 4, true), "██▎░");  // 17.6 eighths round to 18.
  EXPECT_EQ(Bar(1.5, 3, true), "███");
  EXPECT_EQ(Bar(std::nullopt, 3, true), "░░░");
  EXPECT_EQ(Bar(0.5, 4, false), "##..");
}

}  // namespace
}  // namespace gw::watch
