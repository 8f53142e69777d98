// Bad input end to end: each gives one clear error naming the input and the
// problem, a documented exit code, and no crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "test_paths.h"

namespace gw::test {
namespace {

RunOptions NoLibOverride() {
  RunOptions o;
  o.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  o.env["GPUWARDEN_SIM_SCENARIO"] = std::nullopt;
  return o;
}

// The error is one line on stderr, names `needle`, and nothing crashed.
void ExpectOneLineError(const RunResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.out << r.err;
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.exit_code, 128) << "killed by a signal";
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("AddressSanitizer"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << r.err;
}

TEST(BadInputE2e, MissingScenario) {
  RunResult r =
      RunProcess(Gpuwarden({"--sim", "/nonexistent/scenario.json", "status"}), NoLibOverride());
  ExpectOneLineError(r, 3, "/nonexistent/scenario.json");
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
}

TEST(BadInputE2e, ScenarioThatIsNotJson) {
  TempDir dir;
  std::string path = dir.Write("broken.json", "{ \"gpus\": [ {\"name\": ");
  RunResult r = RunProcess(Gpuwarden({"--sim", path, "status"}), NoLibOverride());
  ExpectOneLineError(r, 3, path);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
}

TEST(BadInputE2e, ScenarioWithWrongTypesIsRejectedByTheSimulator) {
  TempDir dir;
  std::string path = dir.Write("wrong.json", R"({"gpus": [{"name": 42, "memory": "lots"}]})");
  RunResult r = RunProcess(Gpuwarden({"--sim", path, "status"}), NoLibOverride());
  ExpectOneLineError(r, 3, path);
}

TEST(BadInputE2e, MissingNvmlLibrary) {
  RunOptions o = NoLibOverride();
  o.env["GPUWARDEN_NVML_LIB"] = "/nonexistent/libnvidia-ml.so.1";
  RunResult r = RunProcess(Gpuwarden({"status"}), o);
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("/nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << r.out << r.err;
}

TEST(BadInputE2e, MissingNvmlLibraryInJsonStillPrintsValidJson) {
  RunOptions o = NoLibOverride();
  o.env["GPUWARDEN_NVML_LIB"] = "/nonexistent/libnvidia-ml.so.1";
  RunResult r = RunProcess(Gpuwarden({"status", "--json"}), o);
  EXPECT_EQ(r.exit_code, 4);
  auto out = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  EXPECT_TRUE(out["gpus"].empty());
  ASSERT_FALSE(out["errors"].empty());
  EXPECT_EQ(out["errors"][0]["code"], "library_not_found");
}

TEST(BadInputE2e, MissingXmlDump) {
  RunResult r =
      RunProcess(Gpuwarden({"status", "--from", "/nonexistent/dump.xml"}), NoLibOverride());
  ExpectOneLineError(r, 3, "/nonexistent/dump.xml");
}

TEST(BadInputE2e, MalformedTruncatedAndBinaryXml) {
  TempDir dir;
  const std::string cases[][2] = {
      {"malformed.xml", "<nvidia_smi_log><gpu id=\"0\"><product_name>X</gpu></nvidia_smi_log>"},
      {"truncated.xml",
       "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<driver_version>535.54.03</driver_version>\n"
       "<gpu id=\"00000000:07:00.0\">\n<product_name>NVIDIA A100"},
      // 12 bytes: an ELF header's start, NULs included.
      {"binary.xml", std::string("\x7f"
                                 "ELF\x02\x01\x01\0\0\0\xff\xfe",
                                 12)},
      {"empty.xml", ""},
      {"wrong-root.xml", "<?xml version=\"1.0\"?><html><body>hi</body></html>"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c[0]);
    std::string path = dir.Write(c[0], c[1]);
    RunResult r = RunProcess(Gpuwarden({"status", "--from", path}), NoLibOverride());
    ExpectOneLineError(r, 3, path);
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(BadInputE2e, BadFlagsAreUsageErrors) {
  EXPECT_EQ(RunProcess(Gpuwarden({"status", "--no-such-flag"}), NoLibOverride()).exit_code, 2);
  EXPECT_EQ(RunProcess(Gpuwarden({"--timeout", "0", "status"}), NoLibOverride()).exit_code, 2);
  EXPECT_EQ(RunProcess(Gpuwarden({"--color", "purple", "status"}), NoLibOverride()).exit_code, 2);
  EXPECT_EQ(RunProcess(Gpuwarden({}), NoLibOverride()).exit_code, 2);
}

// An empty value would otherwise read as "not given": `why --need ''` would
// answer without the need, with exit 0.
TEST(BadInputE2e, EmptyValuesAreUsageErrorsNamingTheOption) {
  const std::string dump = gw::test::SourceDir() + "/tests/corpus/demo-lab-8x-a100/dump.xml";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"why", "--from", dump, "--need", ""},
           {"why", "--from", dump, "--since", ""},
           {"health", "--from", dump, "--kernel-log", ""},
           {"why", "--from", ""},
           {"events", "--kernel-log", ""},
           {"--sim", "", "status"},
           {"run", "--vram", "", "--", "/bin/true"},
       }) {
    const RunResult r = RunProcess(Gpuwarden(args), NoLibOverride());
    std::string option;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i + 1].empty()) option = args[i];
    }
    SCOPED_TRACE(option);
    ExpectOneLineError(r, 2, option + ": empty value");
    EXPECT_EQ(r.out, "");  // No verdict on bad input.
  }
}

// A log that cannot be opened is said where Slurm keeps the program's stderr,
// and the nodes Slurm asked for are still powered: the log is not the job.
TEST(BadInputE2e, PowerWithAnUnopenableLogSaysSoAndStillRunsEveryNode) {
  TempDir dir;
  const std::string log = dir.path() + "/missing-dir/power.log";
  const std::string marker = dir.path() + "/{node}.started";
  const RunResult r = RunProcess({gw::test::BinaryDir() + "/gpuwarden-power", "resume", "n[1-2]",
                                  "--log", log, "--", "/usr/bin/touch", marker});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot open the log " + log + ": No such file or directory"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("resume n2: done"), std::string::npos) << r.err;
  EXPECT_EQ(access((dir.path() + "/n1.started").c_str(), F_OK), 0);
  EXPECT_EQ(access((dir.path() + "/n2.started").c_str(), F_OK), 0);
}

TEST(BadInputE2e, HelpDocumentsExitCodes) {
  RunResult r = RunProcess(Gpuwarden({"--help"}), NoLibOverride());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("driver not responding"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gw::test
