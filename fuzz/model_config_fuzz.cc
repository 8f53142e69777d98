// fuzz_model_config: what `gpuwarden advise` reads (plan/): a Hugging Face
// config.json from anywhere and the TOML catalogs. Invariants: an accepted
// model is sane (ArchitectureProblem empty), its parameter count is the sum
// of its parts (nothing wrapped round) with no more active than held, and
// its estimates add up: the total is the sum of the parts in it, for
// inference, LoRA and checkpointed training alike, and a layout that holds
// it gives each GPU no more than a GPU can take. A rejected input is
// "bad_input", one line naming the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "plan/catalog.h"
#include "plan/estimate.h"
#include "plan/fit.h"
#include "plan/model.h"

namespace {

constexpr const char* kPath = "/fuzz/config.json";

void CheckModel(const gw::plan::ModelSpec& m) {
  using namespace gw::plan;
  GW_FUZZ_CHECK(m.arch.has_value(), m.name);
  const Architecture& a = *m.arch;
  GW_FUZZ_CHECK(ArchitectureProblem(a).empty(), ArchitectureProblem(a));
  const ParamCounts c = CountParams(a);
  GW_FUZZ_CHECK(c.total == m.params, std::to_string(c.total));
  GW_FUZZ_CHECK(c.embedding + c.block_linear + c.norms + c.head == c.total, "parts");
  GW_FUZZ_CHECK(c.block_linear <= c.total && c.active <= c.total && c.active > 0, "active");
  GW_FUZZ_CHECK(c.total <= 1'000'000'000'000'000u, std::to_string(c.total));
  gw::fuzz::CheckTerminalSafe(m.name, "model name");

  Workload infer;
  Workload lora;
  lora.task = Task::kLora;
  Workload train;
  train.task = Task::kTrain;
  train.checkpointing = true;
  for (const Workload& w : {infer, lora, train}) {
    GW_FUZZ_CHECK(CheckWorkload(m, w).ok(), std::string(TaskName(w.task)));
    const Estimate e = EstimateMemory(m, w);
    uint64_t sum = 0;
    for (const Component& part : e.components) {
      GW_FUZZ_CHECK(part.bytes.has_value(), part.key);
      if (part.in_total) sum += *part.bytes;
    }
    GW_FUZZ_CHECK(e.complete && sum == e.total_bytes, std::to_string(e.total_bytes));
    GW_FUZZ_CHECK(e.weights > 0 && e.total_bytes >= e.weights, "weights");
    constexpr uint64_t kGpu = uint64_t{80} << 30;
    std::optional<Layout> layout = PlanLayout(e, IsTraining(w.task), kGpu, a.heads, a.kv_heads);
    if (layout) {
      GW_FUZZ_CHECK(layout->gpus >= 1 && layout->gpus <= kMaxPlanGpus, layout->strategy);
      GW_FUZZ_CHECK(layout->per_gpu_bytes <= kGpu, layout->strategy);
      GW_FUZZ_CHECK(layout->tp * layout->pp * layout->dp == layout->gpus, layout->strategy);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view text = fuzz::AsText(data, size);
  Result<plan::ModelSpec> model = plan::ParseHfConfig(text, kPath);
  if (model.ok()) {
    CheckModel(*model);
    GW_FUZZ_CHECK(model->source == kPath, model->source);
    fuzz::CheckTerminalSafe(model->assumption, "assumption");
  } else {
    fuzz::CheckError(model.error(), {"bad_input"}, kPath, "config.json");
  }

  Result<std::vector<plan::ModelSpec>> models = plan::ParseModelCatalog(text, "/fuzz/models.toml");
  if (models.ok()) {
    for (const plan::ModelSpec& m : *models) CheckModel(m);
  } else {
    fuzz::CheckError(models.error(), {"bad_input"}, "/fuzz/models.toml", "models.toml");
  }
  Result<std::vector<plan::GpuSpec>> gpus = plan::ParseGpuCatalog(text, "/fuzz/gpus.toml");
  if (gpus.ok()) {
    for (const plan::GpuSpec& g : *gpus) {
      GW_FUZZ_CHECK(g.memory_bytes > 0, g.name);
      fuzz::CheckTerminalSafe(g.name, "GPU name");
    }
  } else {
    fuzz::CheckError(gpus.error(), {"bad_input"}, "/fuzz/gpus.toml", "gpus.toml");
  }
  return 0;
}
