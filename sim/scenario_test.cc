// Unit tests of the scenario loader (sim/scenario.h): validation messages,
// defaults, timeline resolution and env: PIDs.
#include "sim/scenario.h"

#include <cmath>
#include <map>
#include <string>

#include "gtest/gtest.h"

namespace gw::sim {
namespace {

Opt<std::string> NoEnv(const std::string&) { return std::nullopt; }

Result<Scenario> Parse(const std::string& text, const EnvLookup& env = NoEnv) {
  return ParseScenario(text, "test.json", env);
}

// The error message for `text`, or "" when it parses.
std::string ErrorOf(const std::string& text) {
  auto r = Parse(text);
  return r.ok() ? std::string() : r.error().message;
}

TEST(ScenarioTest, MinimalScenarioHasNothingSupported) {
  auto r = Parse(R"({"gpus": [{}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  const GpuState& g = r->gpus[0].timeline.At(0);
  EXPECT_FALSE(g.name.has_value());
  EXPECT_FALSE(g.memory_total_bytes.has_value());
  EXPECT_FALSE(g.fan_pct.has_value());
  EXPECT_FALSE(g.processes.has_value());
  EXPECT_FALSE(g.nvlinks.has_value());
  EXPECT_FALSE(r->driver.At(0).version.has_value());
  EXPECT_EQ(r->driver.At(0).process_info_stride, 24u);
  EXPECT_FALSE(r->topology.has_value());
}

TEST(ScenarioTest, MalformedJsonNamesThePosition) {
  auto r = Parse("{\"gpus\": [\n  {\"name\": }\n]}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "malformed");
  EXPECT_NE(r.error().message.find("not valid JSON"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
  // One line.
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
}

TEST(ScenarioTest, WrongTypesAreRejectedWithTheirPath) {
  const std::map<std::string, std::string> cases = {
      {R"([1, 2])", "expected an object"},
      {R"({})", "gpus: required"},
      {R"({"gpus": {}})", "gpus: expected a list"},
      {R"({"gpus": [5]})", "gpus[0]: expected an object"},
      {R"({"gpus": [{"memory": {"total_mib": "81559"}}]})",
       "gpus[0].memory.total_mib: expected a non-negative integer, got \"81559\""},
      {R"({"gpus": [{"memory": {"total_mib": -1}}]})", "gpus[0].memory.total_mib: expected"},
      {R"({"gpus": [{"memory": {"total_mib": 1.5}}]})", "gpus[0].memory.total_mib: expected"},
      {R"({"gpus": [{"cuda_compute_capability": "nine"}]})",
       "gpus[0].cuda_compute_capability: expected \"MAJOR.MINOR\""},
      {R"({"gpus": [{"cuda_compute_capability": "9.0x"}]})",
       "gpus[0].cuda_compute_capability: expected"},
      {R"({"gpus": [{"bar1": {"total_mib": 256, "used_mib": 300}}]})",
       "gpus[0].bar1.used_mib: exceeds total_mib"},
      {R"({"gpus": [{"power_min_limit_w": 700, "power_max_limit_w": 200}]})",
       "gpus[0].power_min_limit_w: exceeds power_max_limit_w"},
      {R"({"gpus": [{"architecture": "fermi"}]})", "gpus[0].architecture: unknown value"},
      {R"({"gpus": [{"brand": "Tesla"}]})", "gpus[0].brand: unknown value"},
      {R"({"gpus": [{"utilization": {"encoder": 101}}]})",
       "gpus[0].utilization.encoder: must be at most 100"},
      {R"({"gpus": [{"display": {"mode": 1}}]})", "gpus[0].display.mode: expected true or false"},
      {R"({"gpus": [{"nvlinks": [{"tx_kib": -5}]}]})", "gpus[0].nvlinks[0].tx_kib: expected"},
      {R"({"gpus": [{"processes": [{"pid": 1, "type": "MPS"}]}]})",
       "gpus[0].processes[0].type: unknown value"},
      {R"({"gpus": [{"memory": 80}]})", "gpus[0].memory: expected an object"},
      {R"({"gpus": [{"name": 7}]})", "gpus[0].name: expected a string"},
      {R"({"gpus": [{"persistence_mode": "yes"}]})", "gpus[0].persistence_mode: expected true"},
      {R"({"gpus": [{"power_w": "700"}]})", "gpus[0].power_w: expected a number"},
      {R"({"gpus": [{"pstate": 16}]})", "gpus[0].pstate: must be at most 15"},
      {R"({"gpus": [{"utilization": {"gpu": 101}}]})", "gpus[0].utilization.gpu: must be at most"},
      {R"({"gpus": [{"processes": {}}]})", "gpus[0].processes: expected a list"},
      {R"({"gpus": [{"processes": [{"used_mib": 1}]}]})", "gpus[0].processes[0].pid: required"},
      {R"({"gpus": [{"processes": [{"pid": 0}]}]})", "gpus[0].processes[0].pid: must be positive"},
      {R"({"gpus": [{"processes": [{"pid": "1234"}]}]})",
       "gpus[0].processes[0].pid: expected a non-negative integer"},
      {R"({"gpus": [{"processes": [{"pid": "env:"}]}]})", "needs a variable name"},
      {R"({"gpus": [{"processes": [{"pid": 5, "sm_pct": 3}]}]})", "sm_pct and mem_pct go together"},
      {R"({"gpus": [{"processes": [{"pid": 5, "while_alive": true}]}]})",
       "while_alive: needs an \"env:NAME\" pid"},
      {R"({"gpus": [{"processes": [{"pid": 5, "type": "cuda"}]}]})",
       "gpus[0].processes[0].type: unknown value \"cuda\""},
      {R"({"gpus": [{"pci_bus_id": "19:00.0"}]})", "gpus[0].pci_bus_id: expected a PCI bus id"},
      {R"({"gpus": [{"pci_device_id": "233010DE"}]})",
       "gpus[0].pci_device_id: expected a 32-bit hex"},
      {R"({"gpus": [{"clock_event_reasons": ["idle"]}]})",
       "gpus[0].clock_event_reasons[0]: unknown name \"idle\""},
      {R"({"gpus": [{"nvlinks": [1]}]})", "gpus[0].nvlinks[0]: expected true, false, null"},
      {R"({"gpus": [{"handle_error": "busy"}]})", "gpus[0].handle_error: unknown value"},
      {R"({"gpus": [{"block_s": -1}]})", "gpus[0].block_s: must be between"},
      {R"({"gpus": [{"events": [{"at_s": 1}]}]})", "needs \"xid\" or \"type\""},
      {R"({"gpus": [{"events": [{"at_s": 1, "type": "xid"}]}]})", "an xid event needs \"xid\""},
      {R"({"gpus": [{"serial": "0123456789012345678901234567890"}]})",
       "gpus[0].serial: longer than 29 bytes"},
      {R"({"gpus": [{"temprature_c": 30}]})", "gpus[0].temprature_c: unknown key"},
      {R"({"gpus": [], "extra": 1})", "extra: unknown key"},
      // Found by fuzz_scenario (fuzz/corpus/scenario/regression-newline-in-unknown-key):
      // the key went into the message raw and made it two lines.
      {"{\"defaults\": {\"clock_ev\\nt\": 1}, \"gpus\": []}",
       "defaults.\"clock_ev\\nt\": unknown key"},
      {R"({"driver": {"failure": "crashed"}, "gpus": []})", "driver.failure: unknown value"},
      {R"({"driver": {"process_info_stride": 28}, "gpus": []})", "multiple of 8"},
      {R"({"defaults": {"fan_pct": "x"}, "gpus": []})", "defaults.fan_pct: expected"},
      {R"({"gpus": [{"memory": {"total_mib": 10, "used_mib": 9, "reserved_mib": 2}}]})",
       "gpus[0].memory: used_mib + reserved_mib exceeds total_mib"},
      {R"({"gpus": [{"uuid": "GPU-1"}, {"uuid": "GPU-1"}]})", "gpus[1].uuid: duplicate"},
      {R"({"gpus": [{}], "topology": {"links": [{"gpus": [0, 1], "level": "node"}]}})",
       "topology.links[0].gpus: no such GPU"},
      {R"({"gpus": [{}, {}], "topology": {"default": "nvlink"}})",
       "topology.default: unknown value \"nvlink\""},
      {R"({"gpus": [{}], "timeline": [{"at_s": 1, "gpu": 3, "set": {}}]})",
       "timeline[0].gpu: expected a GPU index below 1"},
      {R"({"gpus": [{}], "timeline": [{"gpu": 0, "set": {}}]})", "timeline[0].at_s: required"},
      {R"({"gpus": [{}], "timeline": [{"at_s": 1, "gpu": 0, "set": {"pstate": "P0"}}]})",
       "timeline[0]: gpus[0].pstate: expected a non-negative integer"},
      {R"({"gpus": [{}], "timeline": [{"at_s": 1, "gpu": 0, "set": {"events": []}}]})",
       "events cannot change on the timeline"},
      {R"({"gpus": [{"pstate": 1}], "timeline": [{"at_s": 1, "gpu": 0, "set": {"pstate.x": 1}}]})",
       "\"pstate\" is not an object"},
      // Found by fuzz_scenario (fuzz/corpus/scenario/regression-newline-in-nvlink-pci-bus-id):
      // a value the file gave went into the message raw, newline and all.
      {"{\"gpus\": [{\"nvlinks\": [{\"remote_pci_bus_id\": \"00000000:AF:00\\n.0\"}]}]}",
       "gpus[0].nvlinks[0].remote_pci_bus_id: expected a PCI bus id like \"00000000:19:00.0\", "
       "got \"00000000:AF:00\\n.0\""},
      {"{\"gpus\": [{\"pci_device_id\": \"0x23\\u001b[2J\"}]}",
       "gpus[0].pci_device_id: expected a 32-bit hex string like \"0x233010DE\", "
       "got \"0x23\\u001b[2J\""},
      {"{\"gpus\": [{\"cuda_compute_capability\": \"9\\n0\"}]}",
       "gpus[0].cuda_compute_capability: expected \"MAJOR.MINOR\" like \"9.0\", got \"9\\n0\""},
      {"{\"gpus\": [{}], \"timeline\": [{\"at_s\": 1, \"gpu\": 0, \"set\": {\"a\\n..b\": 1}}]}",
       "timeline[0].set: empty component in key \"a\\n..b\""},
  };
  for (const auto& [text, want] : cases) {
    std::string got = ErrorOf(text);
    EXPECT_NE(got.find(want), std::string::npos) << text << "\n  got: " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

TEST(ScenarioTest, UnknownComputeModeListsTheChoices) {
  std::string e = ErrorOf(R"({"gpus": [{"compute_mode": "shared"}]})");
  EXPECT_EQ(e,
            "gpus[0].compute_mode: unknown value \"shared\" (one of default, exclusive_thread, "
            "prohibited, exclusive_process)");
}

TEST(ScenarioTest, MissingFileIsOneClearError) {
  auto r = LoadScenarioFile("/nonexistent/dir/s.json", NoEnv);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "not_found");
  EXPECT_EQ(r.error().message, "cannot open: No such file or directory");
  auto dir = LoadScenarioFile("/", NoEnv);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().code, "unreadable");
}

TEST(ScenarioTest, DefaultsMergeDeeplyAndGpuWins) {
  auto r = Parse(R"({
    "defaults": {"name": "X", "memory": {"total_mib": 100, "used_mib": 10}, "fan_pct": 30},
    "gpus": [{"memory": {"used_mib": 20}}, {"fan_pct": null, "name": "Y"}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GpuState& a = r->gpus[0].timeline.At(0);
  const GpuState& b = r->gpus[1].timeline.At(0);
  EXPECT_EQ(a.name, "X");
  EXPECT_EQ(a.memory_total_bytes, 100ull << 20);
  EXPECT_EQ(a.memory_used_bytes, 20ull << 20);
  EXPECT_EQ(a.fan_pct, 30u);
  EXPECT_EQ(b.name, "Y");
  EXPECT_EQ(b.memory_used_bytes, 10ull << 20);
  EXPECT_FALSE(b.fan_pct.has_value());  // null removes the default.
}

TEST(ScenarioTest, UnitsAndEnumsConvert) {
  auto r = Parse(R"({"gpus": [{
    "power_w": 71.97, "power_limit_w": 700, "compute_mode": "exclusive_process",
    "pci_bus_id": "00000000:3b:00.0", "pci_device_id": "0x233010de",
    "clock_event_reasons": ["gpu_idle", "sw_power_cap"], "clock_event_reasons_supported": "0x1FF",
    "supported_events": ["xid", "double_bit_ecc"],
    "retired_pages": {"single_bit": 2, "double_bit": ["0x1000", 8192]},
    "processes": [{"pid": 7, "type": "compute+graphics"}, {"pid": 8, "used_mib": 3}],
    "handle_error": "no_permission"}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GpuState& g = r->gpus[0].timeline.At(0);
  EXPECT_EQ(g.power_mw, 71970u);
  EXPECT_EQ(g.power_limit_mw, 700000u);
  EXPECT_EQ(g.compute_mode, 3);
  ASSERT_TRUE(g.pci.has_value());
  EXPECT_EQ(g.pci->bus_id, "00000000:3B:00.0");
  EXPECT_EQ(g.pci->bus_id_legacy, "0000:3B:00.0");
  EXPECT_EQ(g.pci->bus, 0x3Bu);
  EXPECT_EQ(g.pci_device_id, 0x233010DEu);
  EXPECT_EQ(g.clock_event_reasons, 0x5u);
  EXPECT_EQ(g.clock_event_reasons_supported, 0x1FFu);
  EXPECT_EQ(g.supported_events, 0xAu);
  ASSERT_TRUE(g.retired_pages[0].has_value());
  EXPECT_EQ(*g.retired_pages[0],
            (std::vector<uint64_t>{SynthesisedPageAddress(0, 0), SynthesisedPageAddress(0, 1)}));
  EXPECT_EQ(*g.retired_pages[1], (std::vector<uint64_t>{0x1000, 8192}));
  ASSERT_EQ(g.processes->size(), 2u);
  EXPECT_EQ((*g.processes)[0].type, ProcessType::kComputeAndGraphics);
  EXPECT_FALSE((*g.processes)[0].used_bytes.has_value());
  EXPECT_EQ((*g.processes)[1].used_bytes, 3ull << 20);
  EXPECT_EQ(g.handle_error, 4);
}

TEST(ScenarioTest, EnvPidsResolveAtLoad) {
  std::map<std::string, std::string> env = {{"A", "4242"}, {"B", "not-a-pid"}};
  auto lookup = [&](const std::string& n) -> Opt<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto r = Parse(R"({"gpus": [{"processes": [
    {"pid": "env:A", "while_alive": true}, {"pid": "env:B"}, {"pid": "env:C"}]}]})",
                 lookup);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& p = *r->gpus[0].timeline.At(0).processes;
  EXPECT_EQ(p[0].pid, 4242);
  EXPECT_EQ(p[0].pid_env, "A");
  EXPECT_TRUE(p[0].while_alive);
  EXPECT_FALSE(p[1].pid.has_value());
  EXPECT_FALSE(p[2].pid.has_value());
}

TEST(ScenarioTest, TimelineResolvesInTimeOrderAndLatestWins) {
  auto r = Parse(R"({
    "driver": {"version": "1"},
    "gpus": [{"utilization": {"gpu": 0, "memory": 0}, "temperature_c": 30}, {}],
    "timeline": [
      {"at_s": 5, "gpu": 0, "set": {"utilization.gpu": 50}},
      {"at_s": 2, "gpu": 0, "set": {"utilization.gpu": 20, "temperature_c": 40}},
      {"at_s": 5, "gpu": 0, "set": {"utilization.gpu": 55}},
      {"at_s": 7, "gpu": 0, "set": {"temperature_c": null, "lost": true}},
      {"at_s": 3, "gpu": null, "set": {"version": "2"}},
      {"at_s": 4, "gpu": 1, "set": {"clocks_mhz.sm": 1410}}
    ]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& tl = r->gpus[0].timeline;
  EXPECT_EQ(tl.At(-1).utilization_gpu, 0u);
  EXPECT_EQ(tl.At(1.99).utilization_gpu, 0u);
  EXPECT_EQ(tl.At(2).utilization_gpu, 20u);
  EXPECT_EQ(tl.At(2).temperature_c, 40u);
  EXPECT_EQ(tl.At(5).utilization_gpu, 55u);  // Same moment: file order, last wins.
  EXPECT_EQ(tl.At(5).utilization_memory, 0u);
  EXPECT_EQ(tl.At(6).temperature_c, 40u);
  EXPECT_FALSE(tl.At(7).temperature_c.has_value());  // null → absent.
  EXPECT_TRUE(tl.At(100).lost);
  EXPECT_FALSE(tl.At(6.9).lost);
  EXPECT_EQ(r->driver.At(2.9).version, "1");
  EXPECT_EQ(r->driver.At(3).version, "2");
  EXPECT_FALSE(r->gpus[1].timeline.At(3).clocks_mhz[1].has_value());
  EXPECT_EQ(r->gpus[1].timeline.At(4).clocks_mhz[1], 1410u);
}

TEST(ScenarioTest, EventsAndTopology) {
  auto r = Parse(R"({
    "gpus": [{"events": [{"at_s": 3, "xid": 79}, {"at_s": 1, "type": "double_bit_ecc"}]}, {}, {}],
    "topology": {"default": "system", "links": [{"gpus": [2, 0], "level": "single"}]}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& ev = r->gpus[0].events;
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].at_s, 1);  // Sorted by time.
  EXPECT_EQ(ev[0].type, 0x2u);
  EXPECT_EQ(ev[1].type, 0x8u);
  EXPECT_EQ(ev[1].data, 79u);
  ASSERT_TRUE(r->topology.has_value());
  EXPECT_EQ(r->topology->default_level, 50);
  EXPECT_EQ(r->topology->pairs.at({0, 2}), 10);
}

TEST(ScenarioTest, PciBusIdForms) {
  auto a = ParsePciBusId("0000:19:00.0");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->bus_id, "00000000:19:00.0");
  EXPECT_FALSE(ParsePciBusId("00000000:19:00").has_value());
  EXPECT_FALSE(ParsePciBusId("00000000:1G:00.0").has_value());
  EXPECT_FALSE(ParsePciBusId("").has_value());
  EXPECT_FALSE(ParsePciBusId("00000000:19:20.0").has_value());  // Device > 0x1F.
}

}  // namespace
}  // namespace gw::sim
