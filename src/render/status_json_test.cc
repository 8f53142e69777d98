#include "render/status_json.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/units.h"
#include "render/test_snapshots.h"
#include "test_paths.h"

namespace gw::render {
namespace {

using nlohmann::json;
using testing::AllFixtures;
using testing::BusyBox;
using testing::Hostile;
using testing::kH100Total;

const json& ProcessOf(const json& doc, unsigned gpu, pid_t pid) {
  for (const json& p : doc.at("gpus").at(gpu).at("processes")) {
    if (p.at("pid") == pid) return p;
  }
  static const json kNone;
  ADD_FAILURE() << "no pid " << pid << " on GPU " << gpu;
  return kNone;
}

// Every number leaf of `j` whose value is 0, as JSON pointers.
void ZeroLeaves(const json& j, const std::string& path, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) ZeroLeaves(v, path + "/" + k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) ZeroLeaves(j[i], path + "/" + std::to_string(i), out);
  } else if (j.is_number() && j == 0) {
    out.push_back(path);
  }
}

TEST(StatusJson, CarriesTheSchemaHeader) {
  const json doc = StatusJson(BusyBox());
  EXPECT_EQ(doc.at("schema"), "gpuwarden.status");
  EXPECT_EQ(doc.at("schema_version"), 1);
  EXPECT_EQ(doc.at("source"), "nvml");
  EXPECT_EQ(doc.at("source_detail"), "libnvidia-ml.so.1");
  EXPECT_EQ(doc.at("time"), "2025-01-20T10:18:26.000Z");
  EXPECT_EQ(doc.at("time_unix_ms"), testing::kTime);
  EXPECT_EQ(doc.at("timed_out"), false);
  EXPECT_EQ(doc.at("host").at("hostname"), "node07");
  EXPECT_EQ(doc.at("driver").at("version"), "550.90.07");
  EXPECT_EQ(doc.at("driver").at("cuda_version"), "12.4");
  EXPECT_EQ(doc.at("driver").at("cuda_driver_version"), 12040);
  EXPECT_EQ(doc.at("driver").at("gpu_count"), 4);
  EXPECT_EQ(StatusJson(Hostile()).at("source"), "simulated");
  EXPECT_EQ(StatusJson(testing::XmlDump()).at("source"), "xml_dump");
}

TEST(StatusJson, NumbersAreExact) {
  const json doc = StatusJson(BusyBox());
  const json& g0 = doc.at("gpus").at(0);
  EXPECT_EQ(g0.at("index"), 0);
  EXPECT_EQ(g0.at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0.at("uuid"), "GPU-5d1f0c3a-0000-4000-8000-000000000000");
  EXPECT_EQ(g0.at("pci_bus_id"), "00000000:19:00.0");
  EXPECT_EQ(g0.at("memory").at("total_bytes").get<uint64_t>(), kH100Total);
  EXPECT_EQ(g0.at("memory").at("total_bytes").get<uint64_t>(), 85520809984u);
  EXPECT_EQ(g0.at("memory").at("used_bytes").get<uint64_t>(), 70 * kGiB);
  EXPECT_EQ(g0.at("memory").at("reserved_bytes").get<uint64_t>(), 530 * kMiB);
  EXPECT_EQ(g0.at("utilization_pct"), 97);
  EXPECT_DOUBLE_EQ(g0.at("power_draw_w").get<double>(), 512.4);
  EXPECT_EQ(g0.at("pci_device_id"), 0x233010DE);
  EXPECT_EQ(g0.at("compute_mode"), "default");
  EXPECT_EQ(g0.at("pstate"), 0);  // A real P0, not an unknown.
  const json& alice = ProcessOf(doc, 0, 1001);
  EXPECT_EQ(alice.at("used_memory_bytes").get<uint64_t>(), 60 * kGiB);
  EXPECT_EQ(alice.at("sm_util_pct"), 95);
  EXPECT_EQ(alice.at("user"), "alice");
  EXPECT_EQ(alice.at("uid"), 1000);
  EXPECT_EQ(alice.at("type"), "compute");
  EXPECT_EQ(alice.at("state"), "running");
  EXPECT_EQ(alice.at("age_s"), 12000.0);
  EXPECT_EQ(alice.at("command"), "python train.py --config 'a b.yaml'");
  EXPECT_EQ(alice.at("argv"), json({"python", "train.py", "--config", "a b.yaml"}));
  EXPECT_EQ(alice.at("in_proc"), true);
  const json& carol = ProcessOf(doc, 2, 2001);
  EXPECT_EQ(carol.at("container").at("runtime"), "docker");
  EXPECT_EQ(carol.at("sm_util_pct"), nullptr);
  EXPECT_EQ(ProcessOf(doc, 0, 1002).at("systemd_unit"), "jupyter.service");
}

TEST(StatusJson, UnknownIsNullNeverZero) {
  const json doc = StatusJson(testing::AllUnknown());
  const json& g = doc.at("gpus").at(0);
  for (const char* key :
       {"name", "uuid", "pci_bus_id", "utilization_pct", "temperature_c", "fan_speed_pct",
        "power_draw_w", "power_limit_w", "pstate", "compute_mode", "persistence_mode"}) {
    EXPECT_TRUE(g.at(key).is_null()) << key;
  }
  for (const char* key : {"total_bytes", "used_bytes", "free_bytes", "reserved_bytes"}) {
    EXPECT_TRUE(g.at("memory").at(key).is_null()) << key;
  }
  EXPECT_TRUE(g.at("clock_event_reasons").at("active_names").is_null());
  const json& p = g.at("processes").at(0);
  for (const char* key : {"used_memory_bytes", "sm_util_pct", "user", "uid", "command", "state",
                          "age_s", "container", "slurm_job_id"}) {
    EXPECT_TRUE(p.at(key).is_null()) << key;
  }
  EXPECT_TRUE(doc.at("host").at("hostname").is_null());
  EXPECT_TRUE(doc.at("driver").at("cuda_version").is_null());
  EXPECT_TRUE(doc.at("users").at(0).at("used_memory_bytes").is_null());
  EXPECT_EQ(doc.at("users").at(0).at("used_memory_complete"), false);
  // The only zeros are identities and counts: GPU index 0 and its users' list.
  std::vector<std::string> zeros;
  ZeroLeaves(doc, "", zeros);
  EXPECT_EQ(zeros, std::vector<std::string>(
                       {"/gpus/0/index", "/probe_duration_ms", "/users/0/gpu_indices/0"}));
}

TEST(StatusJson, UnknownProcessListIsNullNotEmpty) {
  const json doc = StatusJson(testing::LostGpu());
  const json& lost = doc.at("gpus").at(1);
  EXPECT_EQ(lost.at("processes_known"), false);
  EXPECT_TRUE(lost.at("processes").is_null());
  EXPECT_EQ(lost.at("unreachable").at("code"), "gpu_lost");
  EXPECT_EQ(lost.at("unreachable").at("nvml_return"), 15);
  EXPECT_TRUE(doc.at("gpus").at(0).at("unreachable").is_null());
  EXPECT_EQ(doc.at("gpus").at(0).at("processes"), json::array());
  EXPECT_EQ(doc.at("errors").at(0).at("gpu_index"), 1);
}

TEST(StatusJson, TimeoutAndErrors) {
  const json doc = StatusJson(testing::TimedOut());
  EXPECT_EQ(doc.at("timed_out"), true);
  EXPECT_EQ(doc.at("probe_duration_ms"), 2000.0);
  ASSERT_EQ(doc.at("errors").size(), 1u);
  EXPECT_EQ(doc.at("errors").at(0).at("code"), "timeout");
  EXPECT_EQ(doc.at("errors").at(0).at("source"), "probe");
  EXPECT_TRUE(doc.at("errors").at(0).at("nvml_return").is_null());
}

TEST(StatusJson, AnErrorCarriesEveryProcessItIsAbout) {
  Snapshot s = testing::TimedOut();
  ProbeError partial{"proc", "partial_scan", "m", std::nullopt, std::nullopt};
  for (pid_t pid = 100; pid < 125; ++pid) partial.pids.push_back(pid);
  s.errors.push_back(partial);
  const json doc = StatusJson(s);
  ASSERT_EQ(doc.at("errors").size(), 2u);
  EXPECT_EQ(doc.at("errors").at(0).at("pids"), json::array());
  const json& pids = doc.at("errors").at(1).at("pids");
  ASSERT_EQ(pids.size(), 25u);
  EXPECT_EQ(pids.front(), 100);
  EXPECT_EQ(pids.back(), 124);
}

TEST(StatusJson, UsersAndUnlistedHolders) {
  const json doc = StatusJson(BusyBox());
  const json& users = doc.at("users");
  ASSERT_EQ(users.size(), 4u);
  EXPECT_EQ(users[0].at("user"), "alice");
  EXPECT_EQ(users[0].at("uid"), 1000);
  EXPECT_EQ(users[0].at("process_count"), 1);
  EXPECT_EQ(users[0].at("gpu_indices"), json({0, 1}));
  EXPECT_EQ(users[0].at("used_memory_bytes").get<uint64_t>(), 80 * kGiB);
  EXPECT_EQ(users[0].at("used_memory_complete"), true);
  EXPECT_EQ(users[2].at("user"), "bob");
  EXPECT_EQ(users[2].at("unlisted_holder_pids"), json({4001}));
  EXPECT_EQ(users[3].at("user"), "?");
  EXPECT_TRUE(users[3].at("uid").is_null());

  const json& holders = doc.at("device_holders_not_listed");
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].at("pid"), 4001);
  EXPECT_EQ(holders[0].at("user"), "bob");
  EXPECT_EQ(holders[0].at("gpu_indices"), json({3}));
  EXPECT_EQ(holders[0].at("device_files"), json({"/dev/nvidia3", "/dev/nvidiactl"}));
  EXPECT_EQ(holders[0].at("command"), "python worker.py");

  const json& ghost = ProcessOf(doc, 2, 3001);
  EXPECT_EQ(ghost.at("in_proc"), false);
  EXPECT_TRUE(ghost.at("user").is_null());
  EXPECT_TRUE(ghost.at("argv").is_null());
}

TEST(StatusJson, OfflineProcessesHaveNullInProcAndTheDumpName) {
  const json doc = StatusJson(testing::XmlDump());
  EXPECT_EQ(doc.at("processes_scanned"), false);
  const json& p = ProcessOf(doc, 0, 3121);
  EXPECT_TRUE(p.at("in_proc").is_null());
  EXPECT_EQ(p.at("name"), "/usr/bin/python3");
  EXPECT_EQ(p.at("command"), "/usr/bin/python3");
}

TEST(RenderStatusJson, RoundTripsThroughParse) {
  for (const auto& [name, snapshot] : AllFixtures()) {
    for (bool pretty : {false, true}) {
      const std::string text = RenderStatusJson(snapshot, pretty);
      json parsed;
      ASSERT_NO_THROW(parsed = json::parse(text)) << name;
      EXPECT_EQ(parsed, StatusJson(snapshot)) << name;
      EXPECT_EQ(text.find('\n') != std::string::npos, pretty) << name;
    }
  }
}

TEST(RenderStatusJson, RawTextSurvivesAndInvalidUtf8IsReplaced) {
  const Snapshot s = Hostile();
  const std::string text = RenderStatusJson(s, false);
  const json doc = json::parse(text);
  const json& a = ProcessOf(doc, 0, 1001);
  // Raw values, not terminal-escaped: the consumer gets the real argv.
  EXPECT_EQ(a.at("argv").at(0), "\x1b[2J\x1b]0;pwned\x07");
  EXPECT_EQ(a.at("argv").at(1), "evil\nname");
  EXPECT_EQ(a.at("argv").at(2),
            "csi\xC2\x9B"
            "31m");
  const json& b = ProcessOf(doc, 0, 1002);
  EXPECT_EQ(b.at("argv").at(0), "caf\xEF\xBF\xBD");
  EXPECT_EQ(b.at("argv").at(1), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ProcessOf(doc, 2, 2001).at("user"), "用户");
  EXPECT_EQ(ProcessOf(doc, 2, 2001).at("argv").at(1), "训练模型.py");
}

TEST(RenderStatusJson, SerialisedTextCannotDriveATerminal) {
  const std::string text = RenderStatusJson(Hostile(), true);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    ASSERT_FALSE(c < 0x20 && c != '\n') << "control byte at " << i;
    ASSERT_NE(c, 0x7F);
    if (c == 0xC2) {
      const auto n = static_cast<unsigned char>(text[i + 1]);
      ASSERT_FALSE(n >= 0x80 && n <= 0x9F) << "C1 control at " << i;
    }
  }
  EXPECT_NE(text.find(R"(\u001b[2J)"), std::string::npos);
  EXPECT_NE(text.find(R"(csi\u009b31m)"), std::string::npos);
  EXPECT_NE(text.find(R"(rtl\u202egpj.exe)"), std::string::npos);
  EXPECT_NE(text.find("训练模型.py"), std::string::npos);  // Other text stays readable.
}

TEST(RenderStatusJson, NeverThrowsOnArbitraryBytes) {
  Snapshot s = BusyBox();
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  s.host.hostname = all;
  s.gpus[0].name = all;
  s.errors.push_back({all, all, all, {}, {}});
  s.processes.at(1001).cmdline = {all, all + all};
  s.processes.at(1001).owner.cgroup_path = all;
  std::string text;
  ASSERT_NO_THROW(text = RenderStatusJson(s, false));
  json doc;
  ASSERT_NO_THROW(doc = json::parse(text));
  EXPECT_EQ(doc.at("schema"), "gpuwarden.status");
  EXPECT_EQ(doc.at("host").at("hostname").get<std::string>().size(),
            128 + 3 * 128u);                    // ASCII kept, each high byte one U+FFFD.
  EXPECT_NO_THROW((void)StatusJson(s).dump());  // The value itself dumps with defaults.
}

std::set<std::string> Keys(const json& object) {
  std::set<std::string> out;
  for (const auto& [k, v] : object.items()) out.insert(k);
  return out;
}

// docs/json.md's example must use exactly the keys the renderer writes, so
// the documentation cannot drift from the code.
TEST(StatusJson, DocumentedExampleHasTheRealKeys) {
  std::ifstream in(gw::test::SourceDir() + "/docs/json.md");
  ASSERT_TRUE(in) << "docs/json.md missing";
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string md = buf.str();
  const size_t start = md.find("```json\n");
  ASSERT_NE(start, std::string::npos);
  const size_t end = md.find("```", start + 8);
  json example;
  ASSERT_NO_THROW(example = json::parse(md.substr(start + 8, end - start - 8)));

  const json real = StatusJson(BusyBox());
  EXPECT_EQ(Keys(example), Keys(real));
  EXPECT_EQ(Keys(example.at("driver")), Keys(real.at("driver")));
  EXPECT_EQ(Keys(example.at("host")), Keys(real.at("host")));
  EXPECT_EQ(Keys(example.at("errors").at(0)),
            Keys(StatusJson(testing::LostGpu()).at("errors").at(0)));
  const json& gpu = example.at("gpus").at(0);
  EXPECT_EQ(Keys(gpu), Keys(real.at("gpus").at(0)));
  for (const char* obj : {"memory", "clocks", "ecc", "mig_mode", "retired_pages", "remapped_rows",
                          "clock_event_reasons", "pcie"}) {
    EXPECT_EQ(Keys(gpu.at(obj)), Keys(real.at("gpus").at(0).at(obj))) << obj;
  }
  EXPECT_EQ(Keys(gpu.at("processes").at(0)), Keys(real.at("gpus").at(0).at("processes").at(0)));
  EXPECT_EQ(Keys(example.at("device_holders_not_listed").at(0)),
            Keys(real.at("device_holders_not_listed").at(0)));
  EXPECT_EQ(Keys(example.at("users").at(0)), Keys(real.at("users").at(0)));
  EXPECT_EQ(Keys(example.at("topology").at(0)), Keys(real.at("topology").at(0)));
  EXPECT_EQ(example.at("schema"), real.at("schema"));
  EXPECT_EQ(example.at("schema_version"), real.at("schema_version"));
}

}  // namespace
}  // namespace gw::render
