#include "render/why_text.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/text.h"
#include "render/test_diagnoses.h"

namespace gw::render {
namespace {

using testing::BusyBox;
using testing::BusyDiagnosis;
using testing::HealthyDiagnosis;
using testing::MakeFinding;
using testing::SplitLines;

size_t Pos(const std::string& text, const std::string& needle) {
  const size_t p = text.find(needle);
  EXPECT_NE(p, std::string::npos) << "missing: " << needle << "\n" << text;
  return p;
}

TEST(WhyText, FirstLineIsTheVerdictAndSummary) {
  const std::string out = RenderWhyText(BusyDiagnosis(), BusyBox(), {});
  const std::vector<std::string> lines = SplitLines(out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "FAULT — hardware: GPU 3 fell off the bus (Xid 79); 3 other GPUs usable");
  EXPECT_EQ(lines[1], "  GPU 0 BUSY — 70.0/79.6 GiB, 97 % [VRAM_EXHAUSTED]");
  EXPECT_EQ(lines[4], "  GPU 3 FAULT — fell off the bus (Xid 79) [XID_FATAL, GPU_LOST]");
}

// docs/cli.md, "Output": a GPU's line is wrapped at a terminal's width, its
// finding codes kept whole; with no width (a pipe) nothing is cut or wrapped.
TEST(WhyText, GpuLinesWrapOnATerminalAndAreWholeWithoutOne) {
  WhyTextOptions narrow;
  narrow.width = 40;
  const std::string wrapped = RenderWhyText(BusyDiagnosis(), BusyBox(), narrow);
  Pos(wrapped, "[XID_FATAL, GPU_LOST]");
  Pos(wrapped, "[VRAM_EXHAUSTED]");
  for (const std::string& line : SplitLines(wrapped)) EXPECT_LE(DisplayWidth(line), 40) << line;

  WhyTextOptions unlimited;
  unlimited.width = kUnlimitedWidth;
  diagnose::Diagnosis d = BusyDiagnosis();
  d.summary += std::string(300, 'x');
  const std::vector<std::string> lines = SplitLines(RenderWhyText(d, BusyBox(), unlimited));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), d.summary.size()) << lines[0];
  EXPECT_EQ(lines[1], "  GPU 0 BUSY — 70.0/79.6 GiB, 97 % [VRAM_EXHAUSTED]");
}

TEST(WhyText, SummaryWithoutVerdictIsPrefixed) {
  diagnose::Diagnosis d = HealthyDiagnosis();
  d.summary = "4 GPUs healthy";
  const std::vector<std::string> lines = SplitLines(RenderWhyText(d, BusyBox(), {}));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "OK — 4 GPUs healthy");
}

TEST(WhyText, FindingsKeepTheirRankOrder) {
  const std::string out = RenderWhyText(BusyDiagnosis(), BusyBox(), {});
  const size_t xid = Pos(out, "✗ XID_FATAL  GPU 3 fell off the bus (Xid 79)");
  const size_t lost = Pos(out, "✗ GPU_LOST");
  const size_t vram = Pos(out, "! VRAM_EXHAUSTED");
  const size_t idle = Pos(out, "! IDLE_HOLDER");
  const size_t pers = Pos(out, "· PERSISTENCE_OFF");
  EXPECT_LT(xid, lost);
  EXPECT_LT(lost, vram);
  EXPECT_LT(vram, idle);
  EXPECT_LT(idle, pers);
}

TEST(WhyText, EvidenceStepsAndWhoActs) {
  const std::string out = RenderWhyText(BusyDiagnosis(), BusyBox(), {});
  Pos(out, "    xid: 79\n");
  Pos(out, "    held: 10.0 GiB\n");
  Pos(out, "    next: admin: reboot the node\n");
  Pos(out, "          vendor: hardware inspection if it recurs\n");
  Pos(out, "    who acts: the administrator (root)\n");
  Pos(out, "    who acts: bob (owner of PID 1002)\n");
  Pos(out, "    who acts: you\n");
}

TEST(WhyText, CompactShowsTwoStepsVerboseShowsAll) {
  const std::string compact = RenderWhyText(BusyDiagnosis(), BusyBox(), {});
  EXPECT_EQ(compact.find("nvidia-bug-report.sh"), std::string::npos);
  Pos(compact, "(+1 more step: --verbose)");
  WhyTextOptions verbose;
  verbose.verbose = true;
  const std::string all = RenderWhyText(BusyDiagnosis(), BusyBox(), verbose);
  Pos(all, "          admin: nvidia-bug-report.sh\n");
  EXPECT_EQ(all.find("more step"), std::string::npos);
}

TEST(WhyText, CompactShowsTopFindingsAndNamesTheRest) {
  diagnose::Diagnosis d = BusyDiagnosis();
  for (int i = 0; i < 3; ++i) {
    d.findings.push_back(MakeFinding("MIG_ENABLED", {1}, "MIG note " + std::to_string(i)));
  }
  const std::string compact = RenderWhyText(d, BusyBox(), {});
  Pos(compact, "Findings (top 5 of 8):");
  EXPECT_EQ(compact.find("MIG note 0"), std::string::npos);
  Pos(compact, "+3 more: MIG_ENABLED, MIG_ENABLED, MIG_ENABLED");
  WhyTextOptions verbose;
  verbose.verbose = true;
  const std::string all = RenderWhyText(d, BusyBox(), verbose);
  Pos(all, "Findings (8):");
  Pos(all, "MIG note 2");
}

TEST(WhyText, Holdings) {
  const std::string out = RenderWhyText(BusyDiagnosis(), BusyBox(), {});
  Pos(out, "Holdings:");
  const std::vector<std::string> lines = SplitLines(out);
  bool alice = false;
  bool bob = false;
  for (const std::string& l : lines) {
    if (l.find("  alice") == 0) {
      alice = l.find("0,1") != std::string::npos && l.find("80 GiB") != std::string::npos &&
              l.find("0 B") != std::string::npos;
    }
    if (l.find("  bob") == 0) bob = l.find("10 GiB      10 GiB") != std::string::npos;
  }
  EXPECT_TRUE(alice) << out;
  EXPECT_TRUE(bob) << out;
}

TEST(WhyText, UnknownMemoryIsNotZero) {
  diagnose::Diagnosis d = BusyDiagnosis();
  d.users[1].vram_bytes = 0;
  d.users[1].idle_vram_bytes = 0;
  d.users[1].memory_unknown = 2;
  const std::string out = RenderWhyText(d, BusyBox(), {});
  for (const std::string& l : SplitLines(out)) {
    if (l.find("  bob") == 0) {
      EXPECT_NE(l.find("N/A"), std::string::npos) << l;
      EXPECT_EQ(l.find("0 B"), std::string::npos) << l;
    }
  }
}

TEST(WhyText, FooterSaysWhatWasLookedAt) {
  WhyTextOptions o;
  EXPECT_NE(RenderWhyText(BusyDiagnosis(), BusyBox(), o)
                .find("judged from 1 sample · kernel log not read\n"),
            std::string::npos);
  o.kernel_log_note = "kernel log not read (--no-kernel-log)";
  Pos(RenderWhyText(BusyDiagnosis(), BusyBox(), o),
      "judged from 1 sample · kernel log not read (--no-kernel-log)\n");
  o.samples = 5;
  o.window_s = 4;
  o.kernel_log_sources = {"kmsg", "journal"};
  Pos(RenderWhyText(BusyDiagnosis(), BusyBox(), o),
      "judged from 5 samples over 4.0 s · kernel log: kmsg, journal\n");
  Snapshot dump = BusyBox();
  dump.source = SnapshotSource::kXmlDump;
  dump.source_detail = "node07.xml";
  const std::string offline = RenderWhyText(BusyDiagnosis(), dump, {});
  Pos(offline, "offline: nvidia-smi dump node07.xml");
  // One sample from a dump is judged as such, and the footer says so.
  Pos(offline, "judged from its one sample");
}

TEST(WhyText, HostileTextIsSanitised) {
  diagnose::Diagnosis d = BusyDiagnosis();
  const std::string evil =
      "x\x1b]0;pwned\x07y\x9b"
      "31m\xe2\x80\xaez\n";
  d.summary = "BUSY — " + evil;
  d.gpus[0].line = "GPU 0 " + evil;
  d.findings[0].message = evil;
  d.findings[0].evidence.push_back({evil, evil, std::nullopt, ""});
  d.findings[0].next_steps[0] = evil;
  d.users[0].user = evil;
  WhyTextOptions o;
  o.kernel_log_sources = {evil};
  o.verbose = true;
  const std::string out = RenderWhyText(d, BusyBox(), o);
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_EQ(out.find('\x07'), std::string::npos);
  EXPECT_EQ(out.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_EQ(out.find('\x9b'), std::string::npos);
  Pos(out, "x\\x1b]0;pwned\\x07y\\x9b31m\\u202ez\\n");
  EXPECT_EQ(SanitizeForTerminal(out.substr(0, out.find('\n'))), out.substr(0, out.find('\n')));
}

TEST(WhyText, ColourOnlyWhenAsked) {
  const std::string plain = RenderWhyText(BusyDiagnosis(), BusyBox(), {});
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  WhyTextOptions o;
  o.color = true;
  const std::string coloured = RenderWhyText(BusyDiagnosis(), BusyBox(), o);
  EXPECT_EQ(coloured.rfind("\x1b[1;31mFAULT — ", 0), 0u) << coloured;  // FAULT is red.
  Pos(coloured, "\x1b[33mGPU 0 BUSY");                                 // BUSY yellow.
  Pos(coloured, "\x1b[32mGPU 1 OK");                                   // OK green.
}

TEST(WhyText, EveryLineFitsTheWidth) {
  for (int width : {1, 10, 24, 40, 60, 100, 160}) {
    WhyTextOptions o;
    o.width = width;
    o.verbose = true;
    o.samples = 12;
    o.window_s = 11;
    o.kernel_log_sources = {"/var/log/kern.log", "journal"};
    for (bool color : {false, true}) {
      o.color = color;
      const std::string out = RenderWhyText(BusyDiagnosis(), BusyBox(), o);
      for (const std::string& line : SplitLines(out)) {
        std::string plain = line;
        // Remove SGR sequences before measuring.
        for (size_t p; (p = plain.find('\x1b')) != std::string::npos;) {
          plain.erase(p, plain.find('m', p) - p + 1);
        }
        EXPECT_LE(DisplayWidth(plain), width) << "width " << width << ": " << line;
      }
    }
  }
}

TEST(WhyText, LongMessagesWrapInsteadOfBeingCut) {
  diagnose::Diagnosis d = BusyDiagnosis();
  d.findings[0].message = "GPU 3 " + std::string(30, 'a') + " tail-word-that-must-survive";
  WhyTextOptions o;
  o.width = 40;
  Pos(RenderWhyText(d, BusyBox(), o), "tail-word-that-must-survive");
}

// gpuwardend's history: since when GPUs sat idle or full, the queue's hour.
TEST(WhyText, OverTimeSaysWhatTheHistoryShows) {
  setenv("TZ", "UTC", 1);
  tzset();
  diagnose::Trends t;
  t.as_of_unix_s = 1'800'000'000;  // 2027-01-15T08:00:00Z
  t.covered_from_unix_s = t.as_of_unix_s - 86400;
  t.gpus.push_back(
      {0, diagnose::TrendRun{t.as_of_unix_s - (3 * 3600 + 12 * 60), false}, std::nullopt});
  t.gpus.push_back({2, std::nullopt, diagnose::TrendRun{t.as_of_unix_s - 86400, true}});
  t.queue = diagnose::QueueTrend{19, 3, t.as_of_unix_s - 3600, 21};
  WhyTextOptions o;
  o.width = 200;
  o.trends = &t;
  const std::string out = RenderWhyText(BusyDiagnosis(), BusyBox(), o);
  const size_t header = Pos(out, "Over time (gpuwardend's history):\n");
  EXPECT_LT(Pos(out, "Holdings:"), header);
  EXPECT_LT(header, Pos(out, "  GPU 0 held and idle for 3h 12m (since 04:48)\n"));
  Pos(out,
      "  GPU 2 memory full for at least 1d (since 2027-01-14 08:00, as far as the history "
      "goes)\n");
  Pos(out, "  the queue grew from 3 to 19 waiting jobs in the last 1h (peak 21)\n");
  Pos(out, "history: gpuwardend's, the last 1d");

  // A queue that shrank, and one that never held a job (no line).
  t.queue = diagnose::QueueTrend{0, 3, t.as_of_unix_s - 600, 3};
  Pos(RenderWhyText(BusyDiagnosis(), BusyBox(), o),
      "  the queue shrank from 3 to 0 waiting jobs in the last 10m\n");
  t.queue = diagnose::QueueTrend{0, 0, t.as_of_unix_s - 600, 0};
  t.gpus.clear();
  EXPECT_EQ(RenderWhyText(BusyDiagnosis(), BusyBox(), o).find("Over time"), std::string::npos);
}

TEST(WhyText, NoHistoryNoSectionAndANoteWhenItWasNotUsed) {
  WhyTextOptions o;
  o.width = 200;
  std::string out = RenderWhyText(BusyDiagnosis(), BusyBox(), o);
  EXPECT_EQ(out.find("Over time"), std::string::npos);
  EXPECT_EQ(out.find("history"), std::string::npos) << out;
  o.trends_note = "gpuwardend's history not used: it is of other GPUs than these";
  out = RenderWhyText(BusyDiagnosis(), BusyBox(), o);
  Pos(out, "gpuwardend's history not used: it is of other GPUs than these");
}

}  // namespace
}  // namespace gw::render
