// `gpuwarden status --from` on the real nvidia-smi captures in ../shared (read
// in place, never copied here): every GPU, memory figure and process shown.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"

namespace gw::test {
namespace {

using nlohmann::json;

struct XmlFacts {
  std::vector<std::string> bus_ids;
  std::vector<uint64_t> fb_total_mib, fb_used_mib;
  std::vector<long long> pids;
  std::vector<std::string> product_names;
};

// std::regex recurses per character, so long spans are cut with find().
std::vector<std::string> Blocks(const std::string& text, const std::string& open,
                                const std::string& close) {
  std::vector<std::string> out;
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    size_t end = text.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(text.substr(at + open.size(), end - at - open.size()));
    at = end;
  }
  return out;
}

std::string RemoveBlocks(std::string text, const std::string& open, const std::string& close) {
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    size_t end = text.find(close, at);
    if (end == std::string::npos) break;
    text.erase(at, end + close.size() - at);
  }
  return text;
}

// Reads the facts straight from the XML text with regular expressions — an
// independent path from the product's pugixml parser.
XmlFacts ReadFacts(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  // MIG instances carry their own fb_memory_usage; the GPU's facts are outside them.
  const std::string xml = RemoveBlocks(ss.str(), "<mig_devices>", "</mig_devices>");
  XmlFacts f;
  std::smatch m;
  std::regex gpu_re(R"re(<gpu id="([^"]+)">)re");
  for (auto g = std::sregex_iterator(xml.begin(), xml.end(), gpu_re); g != std::sregex_iterator();
       ++g) {
    f.bus_ids.push_back((*g)[1]);
  }
  std::regex name_re(R"(<product_name>([^<]*)</product_name>)");
  for (auto n = std::sregex_iterator(xml.begin(), xml.end(), name_re); n != std::sregex_iterator();
       ++n) {
    f.product_names.push_back((*n)[1]);
  }
  std::regex total_re(R"(<total>(\d+) MiB</total>)"), used_re(R"(<used>(\d+) MiB</used>)");
  for (const std::string& block : Blocks(xml, "<fb_memory_usage>", "</fb_memory_usage>")) {
    if (std::regex_search(block, m, total_re)) f.fb_total_mib.push_back(std::stoull(m[1]));
    if (std::regex_search(block, m, used_re)) f.fb_used_mib.push_back(std::stoull(m[1]));
  }
  std::regex pid_re(R"(<pid>(\d+)</pid>)");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), pid_re); it != std::sregex_iterator();
       ++it) {
    f.pids.push_back(std::stoll((*it)[1]));
  }
  return f;
}

std::string SampleTestName(const ::testing::TestParamInfo<std::string>& param_info) {
  return "sample_" + param_info.param.substr(0, 2);
}

class RealCapture : public ::testing::TestWithParam<std::string> {};

TEST_P(RealCapture, EveryGpuMemoryFigureAndProcessIsShown) {
  const std::string path = SharedSamplesDir() + "/" + GetParam();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "real captures live in ../shared/research/samples, not found at " << path;
  }
  XmlFacts facts = ReadFacts(path);
  ASSERT_FALSE(facts.bus_ids.empty());
  ASSERT_EQ(facts.fb_total_mib.size(), facts.bus_ids.size());

  RunResult r = RunProcess(Gpuwarden({"status", "--from", path, "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  ASSERT_EQ(out["gpus"].size(), facts.bus_ids.size());
  std::vector<long long> shown_pids;
  for (size_t i = 0; i < facts.bus_ids.size(); ++i) {
    const json& g = out["gpus"][i];
    EXPECT_EQ(g["pci_bus_id"], facts.bus_ids[i]);
    EXPECT_EQ(g["name"], facts.product_names[i]);
    EXPECT_EQ(g["memory"]["total_bytes"], facts.fb_total_mib[i] * 1024 * 1024);
    EXPECT_EQ(g["memory"]["used_bytes"], facts.fb_used_mib[i] * 1024 * 1024);
    for (const json& p : g["processes"]) shown_pids.push_back(p["pid"]);
  }
  EXPECT_EQ(shown_pids, facts.pids);

  // The text view names every GPU and every process too.
  RunResult t = RunProcess(Gpuwarden({"status", "--from", path}));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const auto& name : facts.product_names) EXPECT_NE(t.out.find(name), std::string::npos);
  for (long long pid : facts.pids) {
    EXPECT_NE(t.out.find(std::to_string(pid)), std::string::npos) << pid;
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, RealCapture,
                         ::testing::Values("01_nvidia-smi-q-x_A100-SXM4-80GB_535.54.03_dtd-v12.xml",
                                           "02_nvidia-smi-q-x_RTX-4000-SFF-Ada_595.84_dtd-v13.xml",
                                           "03_nvidia-smi-q-x_Tesla-T4_515.105.01_dtd-v11.xml"),
                         SampleTestName);

}  // namespace
}  // namespace gw::test
