// The hostile-text table: process names and command lines that another user
// chose (control characters, invalid UTF-8, bidirectional overrides, 100 KB
// names, NUL bytes, text shaped like the output format) through every
// renderer that prints them: the terminal text (status, why), JSON (status
// --json), the TUI (watch's screen), the Prometheus page's labels and the web
// page's data (/api/status). Each
// renderer must keep the process (it is still shown) and keep its format
// (no escape reaches the terminal, the JSON parses, one sample per line).
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "core/units.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"
#include "fleet/metrics.h"
#include "fleet/prom_text.h"
#include "fuzz/text_checks.h"
#include "render/status_json.h"
#include "render/status_text.h"
#include "render/why_text.h"
#include "watch/layout.h"
#include "watch/rows.h"
#include "watch/test_fixtures.h"
#include "watch/ui_state.h"
#include "web/web_api.h"

namespace gw {
namespace {

using namespace std::string_literals;

constexpr pid_t kPid = 31337;
constexpr int kWidth = 100;

struct Hostile {
  const char* what;
  std::string text;
};

std::vector<Hostile> Table() {
  return {
      {"terminal escapes", "\x1b[2J\x1b]0;pwned\x07\x1b[31mred"},
      {"carriage return and backspace", "ok\rnot ok\b\b\x7f"},
      {"newline and tab", "two\nlines\tand a tab"},
      {"C1 control (CSI)",
       "csi\xc2\x9b"
       "31m"},
      {"invalid UTF-8", "caf\xe9 \xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80"},
      {"truncated sequence at the end", "name\xe2\x82"},
      {"bidi override", "rtl\u202egpj.exe"},
      {"bidi isolates and marks", "\u2066a\u2069\u200f\u200e"},
      {"line separator", "a\u2028b\u2029c"},
      {"NUL bytes", "nul\0inside\0"s},
      {"100 KB name", std::string(100 * 1024, 'A')},
      {"100 KB of wide characters",
       [] {
         std::string s;
         for (int i = 0; i < 100 * 1024 / 3; ++i) s += "训";
         return s;
       }()},
      {"100 KB of escapes",
       [] {
         std::string s;
         for (int i = 0; i < 100 * 1024 / 4; ++i) s += "\x1b[2J";
         return s;
       }()},
      {"Prometheus sample", "evil\"} 1\nfake_metric{a=\"b\\"},
      {"JSON breaker", "\"},{\"pid\":1,\"x\":\"\\u0000"},
  };
}

// A server of one GPU where `text` is the process's user, name and command
// line, holding 10 GiB idle for an hour (so the diagnosis names it too).
Snapshot ServerWith(const std::string& text) {
  Snapshot s = diagnose::fixtures::HealthyServer(1);
  diagnose::fixtures::AddProcess(
      s, diagnose::fixtures::Proc{
             .pid = kPid, .bytes = 10 * kGiB, .sm = 0, .user = text, .comm = text});
  s.processes.at(kPid).cmdline = {text, "--x=" + text};
  s.gpus[0].processes.back().name = text;
  return s;
}

diagnose::Diagnosis DiagnosisOf(const Snapshot& s) {
  return diagnose::Diagnose(std::span<const Snapshot>(&s, 1), {});
}

// Every line is safe on a terminal and fits `width` columns.
void ExpectTerminalText(const std::string& text, int width) {
  size_t at = 0;
  const std::string unsafe = fuzz::UnsafeCharacter(text, /*allow_tab=*/false, &at);
  EXPECT_EQ(unsafe, "") << "at byte " << at << ": "
                        << SanitizeForTerminal(text.substr(at > 20 ? at - 20 : 0, 60));
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    EXPECT_LE(DisplayWidth(line), width) << SanitizeForTerminal(line.substr(0, 200));
  }
}

class HostileText : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileText, StatusTextIsSafeAndStillShowsTheProcess) {
  const std::string out = render::RenderStatusText(ServerWith(GetParam().text), {});
  ExpectTerminalText(out, kWidth);
  EXPECT_NE(out.find(std::to_string(kPid)), std::string::npos);
}

TEST_P(HostileText, WhyTextIsSafe) {
  const Snapshot s = ServerWith(GetParam().text);
  render::WhyTextOptions o;
  o.verbose = true;
  ExpectTerminalText(render::RenderWhyText(DiagnosisOf(s), s, o), kWidth);
}

// Finds the object with "pid": kPid anywhere in `j`.
const nlohmann::json* FindProcess(const nlohmann::json& j) {
  if (j.is_object() && j.contains("pid") && j["pid"] == kPid && j.contains("argv")) return &j;
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (const nlohmann::json* found = FindProcess(v)) return found;
    }
  }
  return nullptr;
}

TEST_P(HostileText, StatusJsonParsesAndKeepsTheTextAsValidUtf8) {
  const std::string& text = GetParam().text;
  const std::string out = render::RenderStatusJson(ServerWith(text), /*pretty=*/false);
  ASSERT_TRUE(nlohmann::json::accept(out));
  // Printed to a terminal too: controls, bidi and separators only as \u escapes.
  ExpectTerminalText(out, static_cast<int>(out.size()));
  const nlohmann::json j = nlohmann::json::parse(out);
  const nlohmann::json* p = FindProcess(j);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ((*p)["user"], ToValidUtf8(text));
  EXPECT_EQ((*p)["argv"], nlohmann::json({ToValidUtf8(text), ToValidUtf8("--x=" + text)}));
}

// The web page's data, /api/status (the page itself puts every server text in
// through textContent, web/app.js): JSON that parses, safe to show as it is,
// keeping the text as valid UTF-8.
TEST_P(HostileText, TheWebPagesStatusApiParsesAndKeepsTheText) {
  const std::string& text = GetParam().text;
  const Snapshot s = ServerWith(text);
  const diagnose::Diagnosis d = DiagnosisOf(s);
  const std::string out = web::StatusApiText(&s, &d, render::WhyJsonContext{}, web::PageFacts{});
  ASSERT_TRUE(nlohmann::json::accept(out));
  ExpectTerminalText(out, static_cast<int>(out.size()));
  const nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_TRUE(j.contains("status"));
  const nlohmann::json* p = FindProcess(j["status"]);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ((*p)["user"], ToValidUtf8(text));
  EXPECT_EQ((*p)["argv"], nlohmann::json({ToValidUtf8(text), ToValidUtf8("--x=" + text)}));
}

TEST_P(HostileText, TheWatchScreenIsSafeAndFits) {
  Snapshot s = ServerWith(GetParam().text);
  const diagnose::Diagnosis d = DiagnosisOf(s);
  watch::History history(60);
  history.Push(s);
  const watch::WatchModel model = watch::testing::ModelOf(std::move(s), d);
  watch::UiState ui;
  const std::vector<watch::ProcessRow> rows = watch::BuildRows(*model.snapshot, ui);
  ui = watch::Reselect(ui, rows);
  const watch::WatchView view{model, history, rows, {}};
  for (auto [w, h] : {std::pair{80, 24}, std::pair{200, 60}}) {
    const watch::LayoutPlan plan = watch::PlanLayout(view, ui, w, h);
    ui = watch::FitScroll(ui, plan.table_rows, static_cast<int>(rows.size()));
    const watch::Screen screen = watch::Render(view, ui, w, h);
    bool shown = false;
    for (int y = 0; y < screen.height(); ++y) {
      const std::string row = screen.RowText(y);
      ExpectTerminalText(row, w);
      EXPECT_EQ(row.find('\n'), std::string::npos);
      shown = shown || row.find(std::to_string(kPid)) != std::string::npos;
    }
    EXPECT_TRUE(shown) << w << "x" << h;
  }
}

// The exposition format: "# " comments, else `name{label="value",...} number`
// where a value holds no raw '"', '\\' or newline, only their escapes.
TEST_P(HostileText, MetricLabelsStayInsideTheirQuotes) {
  const Snapshot s = ServerWith(GetParam().text);
  fleet::FleetView v;
  auto snap = std::make_shared<const Snapshot>(s);
  v.latest = snap;
  v.diagnosis = std::make_shared<const diagnose::Diagnosis>(DiagnosisOf(s));
  const std::string out = fleet::RenderMetrics(v, {});
  size_t at = 0;
  EXPECT_EQ(fuzz::UnsafeCharacter(out, /*allow_tab=*/false, &at), "") << "at byte " << at;

  int process_samples = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0) continue;
    size_t i = line.find_first_of("{ ");
    ASSERT_NE(i, std::string::npos) << line.substr(0, 200);
    const std::string name = line.substr(0, i);
    EXPECT_TRUE(fleet::IsMetricName(name)) << name;
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const size_t eq = line.find("=\"", i);
        ASSERT_NE(eq, std::string::npos) << line.substr(0, 200);
        EXPECT_TRUE(fleet::IsLabelName(line.substr(i, eq - i))) << line.substr(i, eq - i);
        i = eq + 2;
        for (; i < line.size() && line[i] != '"'; ++i) {
          if (line[i] == '\\') {
            ASSERT_LT(i + 1, line.size());
            EXPECT_NE(std::string("\\\"n").find(line[i + 1]), std::string::npos)
                << "escape \\" << line[i + 1];
            ++i;
          }
        }
        ASSERT_LT(i + 1, line.size()) << "unterminated label value";
        ++i;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    ASSERT_EQ(line[i], ' ') << line.substr(0, 200);
    const std::string value = line.substr(i + 1);
    EXPECT_EQ(value.find(' '), std::string::npos) << line.substr(0, 200);
    process_samples += name == "gpuwarden_process_memory_bytes";
  }
  EXPECT_EQ(process_samples, 1);
}

INSTANTIATE_TEST_SUITE_P(Table, HostileText, ::testing::ValuesIn(Table()),
                         [](const ::testing::TestParamInfo<Hostile>& row) {
                           std::string name;
                           for (char c : std::string(row.param.what)) {
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace gw
