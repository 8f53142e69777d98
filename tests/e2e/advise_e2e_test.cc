// `gpuwarden advise` end to end: the real binary, the repository's catalog
// (found beside the binary in the build tree), the simulated servers for "on
// this server now", and docs/advise.md's table of estimates against
// published measurements, recomputed row by row.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "test_paths.h"

namespace gw::test {
namespace {

using nlohmann::json;

RunOptions Options() {
  RunOptions o = SimOptions();
  o.env["GPUWARDEN_CATALOG_DIR"] = std::nullopt;
  return o;
}

json AdviseJson(std::vector<std::string> args) {
  args.insert(args.begin(), "advise");
  args.push_back("--json");
  const RunResult r = RunProcess(Gpuwarden(args), Options());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out;
  return doc;
}

uint64_t PartBytes(const json& doc, const std::string& key) {
  for (const json& c : doc["estimate"]["components"]) {
    if (c["key"] == key) return c["bytes"].get<uint64_t>();
  }
  ADD_FAILURE() << "no component " << key;
  return 0;
}

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// docs/advise.md, "Estimates against published measurements": every row's
// estimate and error are what the estimator computes now, and an error
// beyond 10 % has its reason.
TEST(AdviseE2e, TheDocsTableIsWhatTheEstimatorSays) {
  std::ifstream doc(gw::test::SourceDir() + "/docs/advise.md");
  ASSERT_TRUE(doc.good());
  std::string line;
  bool in_table = false;
  unsigned rows = 0;
  double worst = 0;
  while (std::getline(doc, line)) {
    if (line.starts_with("| flags | compared | published MiB |")) {
      in_table = true;
      std::getline(doc, line);  // |---|
      continue;
    }
    if (!in_table) continue;
    if (!line.starts_with("|")) break;
    const std::vector<std::string> cells = Cells(line);
    ASSERT_EQ(cells.size(), 7u) << line;
    const std::string flags = cells[0].substr(1, cells[0].size() - 2);  // Inside the backticks.
    SCOPED_TRACE(flags);
    std::vector<std::string> args = Words(flags);
    args.push_back("--offline");
    const json advice = AdviseJson(args);
    const double bytes = cells[1] == "weights" ? static_cast<double>(PartBytes(advice, "weights"))
                                               : advice["estimate"]["total_bytes"].get<double>();
    ASSERT_TRUE(cells[1] == "weights" || cells[1] == "total") << cells[1];
    const double estimate = bytes / (1 << 20);
    const double published = std::stod(cells[2]);
    EXPECT_NEAR(std::stod(cells[3]), estimate, 0.051) << "estimate in the doc";
    const double error = (estimate - published) / published * 100;
    EXPECT_NEAR(std::stod(cells[4]), error, 0.051) << "error in the doc";
    if (std::fabs(error) > 10) {
      EXPECT_FALSE(cells[5].empty()) << "an error beyond 10 % needs why";
    }
    EXPECT_TRUE(cells[6].find("https://") != std::string::npos) << "a source";
    worst = std::max(worst, std::fabs(error));
    ++rows;
  }
  EXPECT_GE(rows, 5u);
  EXPECT_GT(worst, 0);  // The comparison is with real figures, never the estimator's own.
}

TEST(AdviseE2e, TextShowsEveryPartAndItsFormula) {
  const RunResult r =
      RunProcess(Gpuwarden({"advise", "llama-3-8b", "--task", "finetune", "--offline"}), Options());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"weights (bf16/fp16 working copy)", "P x 2 B = 8.03B x 2 B", "gradients",
                           "optimizer state (AdamW: 2 fp32 moments; fp32 master weights)",
                           "activations with full checkpointing", "CUDA context",
                           "What each choice saves", "qlora, int4 (NF4) base", "Which GPUs fit",
                           "h100-sxm", "not looked at: --offline", "gpuwarden run --gpus"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
}

// "On this server now": the need placed on a simulated server as why --need
// places it, and the same need given to why gets the same verdict.
TEST(AdviseE2e, TheNeedIsJudgedOnTheSimulatedServerAsWhyJudgesIt) {
  const json advice = AdviseJson({"llama-3-8b", "--task", "finetune", "--checkpointing", "--sim",
                                  ScenarioPath("vram-exhausted.json")});
  const json& server = advice["server"];
  ASSERT_TRUE(server["looked"].get<bool>()) << server.dump();
  EXPECT_TRUE(server["simulated"].get<bool>());
  EXPECT_EQ(server["gpu_count"], 8);
  EXPECT_EQ(server["gpu_name"], "NVIDIA H100 80GB HBM3");
  const std::string need = server["need"];
  EXPECT_EQ(server["layout"]["gpus"], 2);
  EXPECT_EQ(need,
            "2x" +
                std::to_string(
                    server["layout"]["per_gpu_bytes"].get<uint64_t>() / (uint64_t{1} << 30) + 1) +
                "G");
  const RunResult why = RunProcess(Gpuwarden({"why", "--now", "--no-kernel-log", "--json", "--need",
                                              need, "--sim", ScenarioPath("vram-exhausted.json")}),
                                   Options());
  const json verdict = json::parse(why.out, nullptr, false);
  ASSERT_FALSE(verdict.is_discarded()) << why.out << why.err;
  EXPECT_EQ(server["verdict"], verdict["verdict"]);
  EXPECT_EQ(server["verdict"], "BUSY");
  EXPECT_EQ(server["placement"], "not_enough_free");
  EXPECT_EQ(advice["requests"]["basis"], "this server's GPUs");
  EXPECT_EQ(advice["requests"]["run"],
            "gpuwarden run --gpus 2 --vram " + need.substr(2) + " -- COMMAND");
}

TEST(AdviseE2e, FitsNowOnIdleGpusAndNamesThem) {
  const json advice = AdviseJson({"llama-3-8b", "--sim", ScenarioPath("healthy-idle.json")});
  EXPECT_EQ(advice["server"]["verdict"], "OK");
  EXPECT_EQ(advice["server"]["placement"], "fits");
  EXPECT_EQ(advice["server"]["gpus"].size(), 1u);
  EXPECT_EQ(advice["requests"]["sbatch"].get<std::string>().rfind(
                "sbatch --job-name=COMMAND --export=ALL --nodes=1 --gres=gpu:1 job.sh COMMAND", 0),
            0u);
}

// Too big for the server: NEVER_FITS, and the catalog says what would hold it.
TEST(AdviseE2e, NeverFitsHereAndTheCatalogSaysWhatWould) {
  const json advice =
      AdviseJson({"llama-3-70b", "--task", "train", "--sim", ScenarioPath("demo.json")});
  EXPECT_EQ(advice["server"]["verdict"], "NEVER_FITS");
  EXPECT_GT(advice["server"]["layout"]["gpus"].get<int>(), 8);
  EXPECT_TRUE(advice["server"]["layout"]["multi_server"].get<bool>());
  EXPECT_TRUE(advice["requests"]["run"].is_null());
  EXPECT_NE(advice["requests"]["note"].get<std::string>().find("more than one server"),
            std::string::npos);
  bool b200 = false;
  for (const json& fit : advice["fits"]) {
    if (fit["gpu"] == "b200") b200 = !fit["layout"].is_null();
  }
  EXPECT_TRUE(b200);
}

TEST(AdviseE2e, AServerWithoutGpusIsSaid) {
  const json advice = AdviseJson({"gpt2", "--sim", ScenarioPath("no-gpus.json")});
  EXPECT_TRUE(advice["server"]["looked"].get<bool>());
  EXPECT_EQ(advice["server"]["note"], "no GPU found");
  EXPECT_TRUE(advice["server"]["need"].is_null());
  // The requests then come from the catalog.
  EXPECT_EQ(advice["requests"]["basis"].get<std::string>().rfind("catalog GPU ", 0), 0u);
}

TEST(AdviseE2e, AConfigJsonIsReadAsTheCatalogModel) {
  TempDir dir;
  const std::string path =
      dir.Write("config.json",
                R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
          "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
          "vocab_size": 128256, "max_position_embeddings": 8192, "tie_word_embeddings": false})");
  const json from_file = AdviseJson({path, "--offline"});
  const json from_catalog = AdviseJson({"llama-3-8b", "--offline"});
  EXPECT_EQ(from_file["model"]["params"], from_catalog["model"]["params"]);
  EXPECT_EQ(from_file["estimate"]["total_bytes"], from_catalog["estimate"]["total_bytes"]);
  EXPECT_EQ(from_file["model"]["source"], path);
  // The model's directory stands for its config.json.
  const json from_dir = AdviseJson({dir.path(), "--offline"});
  EXPECT_EQ(from_dir["model"]["params"], from_catalog["model"]["params"]);
  EXPECT_EQ(from_dir["model"]["source"], dir.path() + "/config.json");
}

// A mixture of experts: every expert's weights are held, the routed ones'
// activations; the text says how many are active.
TEST(AdviseE2e, AMixtureOfExpertsHoldsEveryExpertAndSaysWhatIsActive) {
  const json moe = AdviseJson({"mixtral-8x7b", "--offline"});
  EXPECT_EQ(moe["model"]["params"].get<uint64_t>(), 46'702'792'704u);
  EXPECT_EQ(moe["model"]["active_params"].get<uint64_t>(), 12'879'925'248u);
  EXPECT_EQ(moe["model"]["architecture"]["experts"]["count"], 8);
  EXPECT_EQ(PartBytes(moe, "weights"), 2 * 46'702'792'704u);  // bf16, all experts.
  // A dense model of the active size would hold far less.
  const json dense = AdviseJson({"--params", "12.88B", "--offline"});
  EXPECT_GT(PartBytes(moe, "weights"), 3 * PartBytes(dense, "weights"));
  const RunResult r = RunProcess(Gpuwarden({"advise", "mixtral-8x7b", "--offline"}), Options());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mixture of experts: 8 experts of ffn 14336 in all of the layers, 2 per "
                       "token: 12.88B parameters active per token, all 46.70B in memory"),
            std::string::npos)
      << r.out;
}

// A config.json of a model_type gpuwarden does not know is read as Llama-like,
// and both outputs say so.
TEST(AdviseE2e, AnUnknownModelTypeIsEstimatedWithItsAssumptionShown) {
  TempDir dir;
  const std::string path =
      dir.Write("config.json",
                R"({"model_type": "futurenet", "hidden_size": 1024, "intermediate_size": 4096,
          "num_attention_heads": 16, "num_hidden_layers": 8, "vocab_size": 32000})");
  const json advice = AdviseJson({path, "--offline"});
  EXPECT_NE(advice["model"]["assumption"].get<std::string>().find(
                "model_type \"futurenet\" is not one gpuwarden knows"),
            std::string::npos);
  const RunResult r = RunProcess(Gpuwarden({"advise", path, "--offline"}), Options());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  assumed: model_type \"futurenet\""), std::string::npos) << r.out;
  EXPECT_TRUE(AdviseJson({"llama-3-8b", "--offline"})["model"]["assumption"].is_null());
}

TEST(AdviseE2e, OnlyAParameterCountGivesALowerBound) {
  const json advice = AdviseJson({"--params", "7B", "--offline"});
  EXPECT_FALSE(advice["estimate"]["complete"].get<bool>());
  EXPECT_TRUE(advice["model"]["architecture"].is_null());
  const RunResult r = RunProcess(Gpuwarden({"advise", "--params", "7B", "--offline"}), Options());
  EXPECT_NE(r.out.find(">= "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unknown"), std::string::npos) << r.out;
}

// Every key the document has is in docs/json.md's section on it.
TEST(AdviseE2e, EveryKeyOfTheJsonIsDocumented) {
  std::ifstream in(gw::test::SourceDir() + "/docs/json.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const size_t begin = all.find("# `gpuwarden advise --json`");
  ASSERT_NE(begin, std::string::npos);
  const std::string section = all.substr(begin, all.find("\n# ", begin + 1) - begin);
  const json advice = AdviseJson({"llama-3-8b", "--sim", ScenarioPath("healthy-idle.json")});
  std::vector<const json*> objects = {&advice,
                                      &advice["model"],
                                      &advice["model"]["architecture"],
                                      &advice["workload"],
                                      &advice["estimate"],
                                      &advice["estimate"]["components"][0],
                                      &advice["alternatives"][0],
                                      &advice["fits"][0],
                                      &advice["server"],
                                      &advice["server"]["layout"],
                                      &advice["requests"]};
  const json moe = AdviseJson({"mixtral-8x7b", "--offline"});
  objects.push_back(&moe["model"]["architecture"]["experts"]);
  for (const json* object : objects) {
    ASSERT_TRUE(object->is_object());
    for (const auto& [key, value] : object->items()) {
      EXPECT_NE(section.find("`" + key + "`"), std::string::npos) << key << " is not documented";
    }
  }
}

void ExpectOneLine(const RunResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.out << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(AdviseE2e, BadInputIsOneLineWithItsExitCode) {
  TempDir dir;
  const std::string broken = dir.Write("config.json", "{\"hidden_size\": 4096,");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", broken, "--offline"}), Options()), 3,
                broken + ": not valid JSON");
  const std::string mla = dir.Write(
      "mla.json", R"({"model_type": "deepseek_v3", "kv_lora_rank": 512, "hidden_size": 7168})");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", mla, "--offline"}), Options()), 3,
                mla + ": multi-head latent attention");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", dir.path() + "/none.json"}), Options()), 3,
                dir.path() + "/none.json: cannot open");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", "lama-3-8b"}), Options()), 2,
                "MODEL: \"lama-3-8b\" is not in the catalog; did you mean \"llama-3-8b\"?");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", "gpt2", "--task", "train", "--precision", "int4"}),
                           Options()),
                2, "--precision int4: full training needs fp32, bf16 or fp16");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", "gpt2", "--batch", "8"}), Options()), 2,
                "--batch: inference serves --concurrency sequences at once");
  ExpectOneLine(
      RunProcess(Gpuwarden({"advise", "gpt2", "--task", "lora", "--concurrency", "8"}), Options()),
      2, "--concurrency: training runs --batch sequences per GPU");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", "gpt2", "--params", "7B"}), Options()), 2,
                "--params: give a MODEL or --params, not both");
  ExpectOneLine(RunProcess(Gpuwarden({"advise", "--params", "many"}), Options()), 2,
                "--params: \"many\" is not a parameter count");
  ExpectOneLine(RunProcess(Gpuwarden({"advise"}), Options()), 2, "MODEL: name a model");
  // A broken catalog is named too.
  const std::string catalog = dir.path() + "/catalog";
  std::filesystem::create_directories(catalog);
  dir.Write("catalog/models.toml", "[[model]]\nname = \"x\"\n");
  RunOptions o = Options();
  o.env["GPUWARDEN_CATALOG_DIR"] = catalog;
  ExpectOneLine(RunProcess(Gpuwarden({"advise", "x"}), o), 3,
                "catalog: " + catalog + "/models.toml:1: entry x:");
}

}  // namespace
}  // namespace gw::test
