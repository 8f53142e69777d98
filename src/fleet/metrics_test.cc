#include "fleet/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "diagnose/catalog.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::fleet {
namespace {

using diagnose::fixtures::AddProcess;
using diagnose::fixtures::Proc;

// One sample line, parsed.
struct Line {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the exposition, checking its grammar on the way: # HELP and # TYPE
// once per family and before its samples, every sample of a family together,
// names and label syntax valid.
std::vector<Line> Parse(const std::string& text) {
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$)");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?)re");
  std::vector<Line> out;
  std::set<std::string> families_done;
  std::string family;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(families_done.insert(name).second) << "family twice: " << name;
      family = name;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_EQ(line.substr(7, family.size()), family);
      continue;
    }
    if (!std::regex_match(line, m, kSample)) {
      ADD_FAILURE() << "not a sample line: " << line;
      continue;
    }
    Line l;
    l.name = m[1];
    EXPECT_EQ(l.name.rfind(family, 0), 0u) << l.name << " outside its family " << family;
    std::string labels = m[3];
    for (std::sregex_iterator it(labels.begin(), labels.end(), kLabel), end; it != end; ++it) {
      l.labels[(*it)[1]] = (*it)[2];
    }
    l.value = std::stod(m[4]);
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<Line> Named(const std::vector<Line>& lines, const std::string& name) {
  std::vector<Line> out;
  for (const Line& l : lines) {
    if (l.name == name) out.push_back(l);
  }
  return out;
}

FleetView ViewOf(Snapshot s) {
  FleetView v;
  auto snap = std::make_shared<const Snapshot>(std::move(s));
  v.latest = snap;
  v.diagnosis = std::make_shared<const diagnose::Diagnosis>(
      diagnose::Diagnose(std::span<const Snapshot>(snap.get(), 1), {}));
  return v;
}

TEST(Metrics, DcgmFieldsUnderDcgmLabels) {
  Snapshot s = diagnose::fixtures::HealthyServer(2);
  AddProcess(s, Proc{.pid = 101, .gpu = 1, .bytes = 30 * kGiB});
  const std::vector<Line> lines = Parse(RenderMetrics(ViewOf(s), {}));
  const std::vector<Line> used = Named(lines, "DCGM_FI_DEV_FB_USED");
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(used[0].labels.at("gpu"), "0");
  EXPECT_EQ(used[1].labels.at("gpu"), "1");
  EXPECT_EQ(used[1].value, static_cast<double>((30 * kGiB + kMiB) >> 20));
  EXPECT_EQ(used[1].labels.at("UUID"), *s.gpus[1].uuid);
  EXPECT_EQ(used[1].labels.at("pci_bus_id"), *s.gpus[1].pci_bus_id);
  EXPECT_EQ(used[1].labels.at("device"), "nvidia1");
  EXPECT_EQ(used[1].labels.at("modelName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(used[1].labels.at("Hostname"), "gpu-node-01");
  EXPECT_EQ(used[1].labels.at("DCGM_FI_DRIVER_VERSION"), "550.54.15");
}

TEST(Metrics, AnUnknownValueIsAMissingSeriesNotZero) {
  Snapshot s = diagnose::fixtures::HealthyServer(2);
  s.gpus[1].temperature_c.reset();
  s.gpus[0].power_draw_w.reset();
  s.gpus[1].power_draw_w.reset();
  const std::string text = RenderMetrics(ViewOf(s), {});
  const std::vector<Line> lines = Parse(text);
  const std::vector<Line> temp = Named(lines, "DCGM_FI_DEV_GPU_TEMP");
  ASSERT_EQ(temp.size(), 1u);
  EXPECT_EQ(temp[0].labels.at("gpu"), "0");
  // No GPU knows its power: not even the family's header is written.
  EXPECT_EQ(text.find("DCGM_FI_DEV_POWER_USAGE"), std::string::npos);
  // No kernel log read: the Xid fields are unknown.
  EXPECT_EQ(text.find("DCGM_FI_DEV_XID_ERRORS"), std::string::npos);
}

TEST(Metrics, XidsFromTheKernelLog) {
  FleetView v = ViewOf(diagnose::fixtures::HealthyServer(2));
  std::map<unsigned, XidTally> xids;
  xids[1].last = 79;
  xids[1].counts = {{13, 2}, {79, 1}};
  v.xids = xids;
  const std::vector<Line> lines = Parse(RenderMetrics(v, {}));
  const std::vector<Line> last = Named(lines, "DCGM_FI_DEV_XID_ERRORS");
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0].value, 0);  // GPU 0: none this boot (the log was read).
  EXPECT_EQ(last[1].value, 79);
  const std::vector<Line> count = Named(lines, "DCGM_EXP_XID_ERRORS_COUNT");
  ASSERT_EQ(count.size(), 2u);
  EXPECT_EQ(count[0].labels.at("err_code"), "13");
  EXPECT_EQ(count[0].value, 2);
}

TEST(Metrics, TallyXidsMatchesTheKernelsBusIdInTheRunningBoot) {
  Snapshot s = diagnose::fixtures::HealthyServer(2);  // GPU 1 at 00000000:28:00.0.
  auto xid = [](unsigned n, std::string bus, std::string boot) {
    kmsg::KernelEvent e;
    e.kind = kmsg::kKindXid;
    e.xid = n;
    e.pci_bus_id = std::move(bus);
    e.boot_id = std::move(boot);
    return e;
  };
  const std::vector<kmsg::KernelEvent> events = {
      xid(48, "0000:28:00", "old"), xid(13, "0000:28:00", "new"), xid(31, "0000:28:00", "new"),
      xid(13, "0000:99:00", "new")};
  const std::map<unsigned, XidTally> t = TallyXids(s, events, "new");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.at(1).last, 31u);
  EXPECT_EQ(t.at(1).counts, (std::map<unsigned, uint64_t>{{13, 1}, {31, 1}}));
}

TEST(Metrics, ProcessesBelowTheThresholdAreSummedPerUser) {
  Snapshot s = diagnose::fixtures::HealthyServer(1);
  AddProcess(s, Proc{.pid = 201, .gpu = 0, .bytes = 10 * kGiB, .user = "alice"});
  AddProcess(s, Proc{.pid = 202, .gpu = 0, .bytes = 10 * kMiB, .user = "alice"});
  AddProcess(s, Proc{.pid = 203, .gpu = 0, .bytes = 20 * kMiB, .user = "alice"});
  AddProcess(s, Proc{.pid = 204, .gpu = 0, .bytes = 5 * kMiB, .user = "bob"});
  const std::vector<Line> lines = Parse(RenderMetrics(ViewOf(s), {}));
  const std::vector<Line> mem = Named(lines, "gpuwarden_process_memory_bytes");
  std::map<std::string, double> by_pid, by_user;
  for (const Line& l : mem) {
    by_pid[l.labels.at("pid") + "/" + l.labels.at("user")] = l.value;
    by_user[l.labels.at("user")] += l.value;
  }
  EXPECT_EQ(by_pid.size(), 3u);
  EXPECT_EQ(by_pid.at("201/alice"), 10.0 * kGiB);
  EXPECT_EQ(by_pid.at("other/alice"), 30.0 * kMiB);
  EXPECT_EQ(by_pid.at("other/bob"), 5.0 * kMiB);
  // The per-user totals agree with the per-process series.
  for (const Line& l : Named(lines, "gpuwarden_user_memory_bytes")) {
    EXPECT_EQ(l.value, by_user.at(l.labels.at("user"))) << l.labels.at("user");
  }
  const std::vector<Line> sm = Named(lines, "gpuwarden_process_sm_util_percent");
  ASSERT_EQ(sm.size(), 1u);
  EXPECT_EQ(sm[0].labels.at("pid"), "201");
  EXPECT_EQ(sm[0].labels.at("comm"), "python");
}

TEST(Metrics, TheNumberOfProcessSeriesIsBounded) {
  Snapshot s = diagnose::fixtures::HealthyServer(1);
  for (pid_t p = 1000; p < 1100; ++p) {
    AddProcess(s, Proc{.pid = p, .gpu = 0, .bytes = 256 * kMiB, .user = "carol"});
  }
  MetricsOptions o;
  o.max_process_series = 10;
  const std::vector<Line> mem =
      Named(Parse(RenderMetrics(ViewOf(s), o)), "gpuwarden_process_memory_bytes");
  ASSERT_EQ(mem.size(), 11u);  // 10 of their own, the rest under pid="other".
  double total = 0;
  for (const Line& l : mem) total += l.value;
  EXPECT_EQ(total, 100.0 * 256 * kMiB);
}

// Past the cap, the largest holders keep their series wherever they are: a
// 40 GiB job on the last GPU is not folded into "other" behind small ones.
TEST(Metrics, TheLargestProcessesKeepTheirSeriesPastTheCap) {
  Snapshot s = diagnose::fixtures::HealthyServer(2);
  for (pid_t p = 1000; p < 1020; ++p) {
    AddProcess(s, Proc{.pid = p, .gpu = 0, .bytes = 256 * kMiB, .user = "carol"});
  }
  AddProcess(s, Proc{.pid = 2000, .gpu = 1, .bytes = 40 * kGiB, .user = "dave"});
  MetricsOptions o;
  o.max_process_series = 5;
  const std::vector<Line> mem =
      Named(Parse(RenderMetrics(ViewOf(s), o)), "gpuwarden_process_memory_bytes");
  std::set<std::string> own;
  double carol_other = 0;
  for (const Line& l : mem) {
    if (l.labels.at("pid") != "other") own.insert(l.labels.at("pid"));
    if (l.labels.at("pid") == "other" && l.labels.at("user") == "carol") carol_other += l.value;
  }
  EXPECT_EQ(own.size(), 5u);
  EXPECT_TRUE(own.count("2000"));
  EXPECT_EQ(carol_other, 16.0 * 256 * kMiB);  // 20 of hers, 4 with series of their own.
}

TEST(Metrics, HostileProcessNamesStayText) {
  Snapshot s = diagnose::fixtures::HealthyServer(1);
  AddProcess(s, Proc{.pid = 301,
                     .gpu = 0,
                     .bytes = kGiB,
                     .user = "mallory",
                     .comm = "evil\"} 1\nfake_metric{a=\"b\x1b[2J\xff"});
  const std::string text = RenderMetrics(ViewOf(s), {});
  const std::vector<Line> lines = Parse(text);  // Still one sample per line.
  EXPECT_TRUE(Named(lines, "fake_metric").empty());
  const std::vector<Line> mem = Named(lines, "gpuwarden_process_memory_bytes");
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].labels.at("comm"), "evil\\\"} 1\\\\nfake_metric{a=\\\"b\\\\x1b[2J\\\\xff");
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(Metrics, StatesAndVerdictsAreOneHot) {
  Snapshot s = diagnose::fixtures::HealthyServer(2);
  s.gpus[1].remapped_rows.failure = true;
  s.gpus[1].remapped_rows.uncorrectable = 8;
  const FleetView v = ViewOf(s);
  const std::vector<Line> lines = Parse(RenderMetrics(v, {}));
  std::map<std::string, std::string> state_of;
  for (const Line& l : Named(lines, "gpuwarden_gpu_state")) {
    if (l.value == 1) {
      EXPECT_TRUE(state_of.emplace(l.labels.at("gpu"), l.labels.at("state")).second);
    } else {
      EXPECT_EQ(l.value, 0);
    }
  }
  EXPECT_EQ(state_of, (std::map<std::string, std::string>{{"0", "free"}, {"1", "fault"}}));
  int server_ones = 0;
  for (const Line& l : Named(lines, "gpuwarden_server_verdict")) {
    if (l.value == 1) {
      ++server_ones;
      EXPECT_EQ(l.labels.at("verdict"), "fault");
    }
  }
  EXPECT_EQ(server_ones, 1);
  // Every code of the catalog is a series, so an alert on one never meets
  // "no data"; the ones found count.
  const std::vector<Line> findings = Named(lines, "gpuwarden_findings");
  EXPECT_EQ(findings.size(), diagnose::AllSpecs().size());
  std::map<std::string, double> by_code;
  for (const Line& l : findings) by_code[l.labels.at("code")] = l.value;
  for (const diagnose::Finding& f : v.diagnosis->findings) EXPECT_GE(by_code.at(f.code), 1);
}

TEST(Metrics, QueueFigures) {
  FleetView v = ViewOf(diagnose::fixtures::HealthyServer(1));
  QueueStats q;
  q.queued = 3;
  q.running = 1;
  q.oldest_wait_s = 42;
  q.starts_total = 5;
  q.ended_total = {{"succeeded", 4}};
  for (double w : {0.5, 5.0, 5.0, 100.0, 1e7}) q.waits.Add(w);
  v.queue = q;
  const std::vector<Line> lines = Parse(RenderMetrics(v, {}));
  std::map<std::string, double> jobs;
  for (const Line& l : Named(lines, "gpuwarden_queue_jobs")) jobs[l.labels.at("state")] = l.value;
  EXPECT_EQ(jobs, (std::map<std::string, double>{
                      {"queued", 3}, {"held", 0}, {"starting", 0}, {"running", 1}}));
  std::map<std::string, double> buckets;
  for (const Line& l : Named(lines, "gpuwarden_queue_wait_seconds_bucket")) {
    buckets[l.labels.at("le")] = l.value;
  }
  EXPECT_EQ(buckets.at("1"), 1);
  EXPECT_EQ(buckets.at("10"), 3);
  EXPECT_EQ(buckets.at("300"), 4);
  EXPECT_EQ(buckets.at("604800"), 4);
  EXPECT_EQ(buckets.at("+Inf"), 5);
  EXPECT_EQ(Named(lines, "gpuwarden_queue_wait_seconds_count")[0].value, 5);
  EXPECT_EQ(Named(lines, "gpuwarden_queue_starts_total")[0].value, 5);
}

TEST(Metrics, BeforeTheFirstLookOnlyTheBasics) {
  const std::vector<Line> lines = Parse(RenderMetrics(FleetView{}, {.version = "1.2.3"}));
  ASSERT_EQ(Named(lines, "gpuwarden_up").size(), 1u);
  EXPECT_EQ(Named(lines, "gpuwarden_up")[0].value, 0);
  EXPECT_EQ(Named(lines, "gpuwarden_build_info")[0].labels.at("version"), "1.2.3");
}

}  // namespace
}  // namespace gw::fleet
