#include "cli/advise_command.h"

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "cli/cli_options.h"
#include "cli/exit_codes.h"
#include "cli/judge.h"
#include "cli/terminal.h"
#include "core/edit_distance.h"
#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"
#include "diagnose/placement.h"
#include "os/file_io.h"
#include "plan/catalog.h"
#include "plan/fit.h"
#include "render/advise_json.h"
#include "render/advise_text.h"
#include "slurm/sbatch.h"

namespace gw::cli {
namespace {

namespace fs = std::filesystem;
constexpr size_t kMaxConfigBytes = size_t{4} << 20;

// $GPUWARDEN_CATALOG_DIR; else beside the program (the build tree's
// catalog/), else the installed share/gpuwarden/catalog (the program is in
// lib/gpuwarden or bin).
std::string CatalogDir() {
  if (const char* env = std::getenv("GPUWARDEN_CATALOG_DIR"); env != nullptr && env[0] != '\0') {
    return env;
  }
  const std::string dir = ExecutableDir();
  const std::string candidates[] = {dir + "/catalog", dir + "/../../share/gpuwarden/catalog",
                                    dir + "/../share/gpuwarden/catalog"};
  for (const std::string& c : candidates) {
    if (access((c + "/models.toml").c_str(), R_OK) == 0) return c;
  }
  return candidates[1];
}

// A model's directory (a Hugging Face download) stands for the config.json in it.
bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool LooksLikePath(const std::string& model) {
  return model.find('/') != std::string::npos || model.ends_with(".json") || IsDirectory(model);
}

// The catalog name nearest to `name`, for "did you mean".
std::string Nearest(const plan::Catalog& catalog, const std::string& name) {
  std::string best;
  size_t best_d = 4;
  for (const plan::ModelSpec& m : catalog.models) {
    const size_t d = EditDistance(name, m.name);
    if (d < best_d) {
      best_d = d;
      best = m.name;
    }
  }
  return best;
}

// The model: a catalog name, a config.json, or --params. `code` is set to
// the exit code on failure.
Result<plan::ModelSpec> ResolveModel(const plan::Catalog& catalog, const AdviseArgs& args,
                                     int* code) {
  *code = kExitUsage;
  if (!args.params.empty()) {
    if (!args.model.empty()) {
      return MakeError("usage", "--params: give a MODEL or --params, not both");
    }
    Result<uint64_t> params = plan::ParseParamCount(args.params);
    if (!params.ok()) return MakeError("usage", "--params: " + params.error().message);
    plan::ModelSpec spec;
    spec.name = args.params + " parameters";
    spec.source = "--params " + args.params;
    spec.params = *params;
    return spec;
  }
  if (args.model.empty()) {
    return MakeError("usage",
                     "MODEL: name a model (gpuwarden advise --help lists the catalog), "
                     "a config.json, or --params 7B");
  }
  if (LooksLikePath(args.model)) {
    *code = kExitBadInput;
    const std::string path =
        IsDirectory(args.model) ? (fs::path(args.model) / "config.json").string() : args.model;
    Result<std::string> text = os::ReadFileBounded(path, kMaxConfigBytes);
    if (!text.ok()) return MakeError("bad_input", SanitizeForTerminal(text.error().message));
    return plan::ParseHfConfig(*text, path);
  }
  if (const plan::ModelSpec* m = catalog.FindModel(args.model)) return *m;
  std::string names;
  for (const plan::ModelSpec& m : catalog.models) names += (names.empty() ? "" : ", ") + m.name;
  const std::string near = Nearest(catalog, args.model);
  return MakeError("usage",
                   fmt::format("MODEL: \"{}\" is not in the catalog{} (models: {}); give a "
                               "config.json path or --params",
                               SanitizeForTerminal(args.model),
                               near.empty() ? "" : "; did you mean \"" + near + "\"?", names));
}

Result<plan::Workload> ResolveWorkload(const AdviseArgs& args) {
  plan::Workload w;
  std::optional<plan::Task> task = plan::TaskNamed(args.task);
  std::optional<plan::Optimizer> optimizer = plan::OptimizerNamed(args.optimizer);
  std::optional<plan::Attention> attention = plan::AttentionNamed(args.attention);
  // CLI11's OneOf has checked the words; these are the enum's own.
  if (!task || !optimizer || !attention) return MakeError("usage", "advise: unknown choice");
  w.task = *task;
  w.optimizer = *optimizer;
  w.attention = *attention;
  const std::string precision =
      args.precision.empty() ? (w.task == plan::Task::kQlora ? "int4" : "bf16") : args.precision;
  std::optional<plan::Precision> p = plan::PrecisionNamed(precision);
  if (!p) return MakeError("usage", "advise: unknown precision");
  w.precision = *p;
  if (w.task == plan::Task::kInfer && args.batch) {
    return MakeError("usage",
                     "--batch: inference serves --concurrency sequences at once; give "
                     "that instead");
  }
  if (w.task != plan::Task::kInfer && args.concurrency) {
    return MakeError("usage",
                     "--concurrency: training runs --batch sequences per GPU a step; "
                     "give that instead");
  }
  w.batch = args.batch.value_or(1);
  w.seq = args.seq;
  w.concurrency = args.concurrency.value_or(1);
  w.checkpointing = args.checkpointing;
  w.lora_rank = args.lora_rank;
  return w;
}

// The need in whole GiB per GPU, as `why --need` and `run --vram` take it.
diagnose::NeedRequest NeedOf(const plan::Layout& layout) {
  diagnose::NeedRequest need;
  need.gpus = layout.gpus;
  need.bytes_per_gpu = (layout.per_gpu_bytes + kGiB - 1) / kGiB * kGiB;
  need.nvlink = layout.needs_nvlink && layout.gpus > 1;
  return need;
}

// "On this server now": one look, the plan for its smallest GPU, and the
// need judged as `why --need` judges it.
void LookAtServer(const GlobalOptions& global, plan::Advice& advice) {
  plan::ServerAdvice& s = advice.server;
  JudgeArgs judge;
  judge.now = true;
  Result<Judged> judged = Judge(global, judge);
  if (!judged.ok()) {
    s.note = judged.error().message;
    return;
  }
  const Snapshot& latest = judged->history.back();
  s.looked = true;
  s.simulated = !global.sim_scenario.empty();
  s.gpu_count = static_cast<unsigned>(latest.gpus.size());
  for (const Gpu& gpu : latest.gpus) {
    if (!gpu.memory.total_bytes) continue;
    if (s.gpu_capacity == 0 || *gpu.memory.total_bytes < s.gpu_capacity) {
      s.gpu_capacity = *gpu.memory.total_bytes;
      s.gpu_name = gpu.name.value_or("");
    }
  }
  if (s.gpu_capacity == 0) {
    s.note = s.gpu_count == 0 ? "no GPU found" : "no GPU's memory could be read";
    return;
  }
  const plan::ModelSpec& m = advice.model;
  s.layout =
      plan::PlanLayout(advice.estimate, plan::IsTraining(advice.workload.task), s.gpu_capacity,
                       m.arch ? m.arch->heads : 0, m.arch ? m.arch->kv_heads : 0);
  if (!s.layout) {
    s.note = fmt::format("not even {} GPUs of {} hold it", plan::kMaxPlanGpus,
                         FormatBytes(s.gpu_capacity));
    return;
  }
  const diagnose::NeedRequest need = NeedOf(*s.layout);
  s.need = diagnose::FormatNeed(need);
  // Judge's options carry the caller's facts and the kernel log's events.
  diagnose::DiagnoseOptions options = judged->options;
  options.need = need;
  // The [placement] settings, as `why --need` places with them.
  auto placement_health = LoadPlacementHealth();
  if (!placement_health.ok()) {
    s.note = placement_health.error().message;
    return;
  }
  options.placement = *placement_health;
  std::span<const kmsg::KernelEvent> events;
  if (judged->kernel_log) events = judged->kernel_log->events;
  const diagnose::Diagnosis diagnosis = diagnose::Diagnose(judged->history, options, events);
  s.verdict = std::string(diagnose::VerdictName(diagnosis.server));
  s.summary = diagnosis.summary;
  const diagnose::Placement placed = diagnose::PlaceNeed(
      need, diagnose::CollectRooms(latest, {}, {}, diagnosis.findings, options.placement),
      latest.topology);
  s.placement = std::string(placement::OutcomeName(placed.core));
  if (placed.outcome == diagnose::PlacementOutcome::kFits) s.chosen = placed.gpus;
}

// The requests for the need: this server's plan when there is one, else
// the catalog GPU that needs the fewest GPUs (then the smallest).
std::optional<plan::Requests> BuildRequests(const plan::Advice& advice) {
  std::optional<plan::Layout> layout = advice.server.layout;
  std::string basis = "this server's GPUs";
  if (!layout) {
    const plan::GpuFit* best = nullptr;
    for (const plan::GpuFit& f : advice.fits) {
      if (!f.layout || !f.warning.empty()) continue;
      if (best == nullptr || f.layout->gpus < best->layout->gpus ||
          (f.layout->gpus == best->layout->gpus && f.gpu->memory_bytes < best->gpu->memory_bytes)) {
        best = &f;
      }
    }
    if (best == nullptr) return std::nullopt;
    layout = best->layout;
    basis = "catalog GPU " + best->gpu->name;
  }
  const diagnose::NeedRequest need = NeedOf(*layout);
  plan::Requests r;
  r.basis = basis;
  if (layout->multi_server) {
    r.note = fmt::format(
        "{} GPUs is more than one server: gpuwarden run and run --slurm place on one node; "
        "start it with your launcher across {} nodes of {} GPUs",
        layout->gpus, (layout->gpus + plan::kGpusPerServer - 1) / plan::kGpusPerServer,
        plan::kGpusPerServer);
    return r;
  }
  const std::string vram = fmt::format("{}G", need.bytes_per_gpu / kGiB);
  r.run = fmt::format("gpuwarden run --gpus {} --vram {}{} -- COMMAND", need.gpus, vram,
                      need.nvlink ? " --nvlink" : "");
  r.run_slurm =
      fmt::format("gpuwarden run --slurm --gpus {} --vram {} -- COMMAND", need.gpus, vram);
  slurm::SlurmSubmit submit;
  submit.command = {"COMMAND"};
  submit.gpus = need.gpus;
  submit.script_path = "job.sh";
  Result<slurm::SbatchPlan> sbatch = slurm::PlanSbatch(submit, nullptr);
  if (sbatch.ok()) {
    std::vector<std::string> argv;
    for (const std::string& arg : sbatch->argv) {
      if (arg != "--parsable") argv.push_back(arg);
    }
    r.sbatch =
        JoinCommandLine(argv) + "   # job.sh: exec \"$@\"; pick the gres type that holds " + vram;
  }
  return r;
}

}  // namespace

CLI::App* AddAdviseSubcommand(CLI::App& app, AdviseArgs& args) {
  CLI::App* advise = app.add_subcommand(
      "advise",
      "What a job needs in GPU memory, which GPUs fit it, and whether it fits here now "
      "(docs/advise.md)");
  advise
      ->add_option("model", args.model,
                   "A catalog model (llama-3-8b, mixtral-8x7b, ...), the path of a Hugging Face "
                   "config.json, or a model's directory holding one")
      ->type_name("MODEL");
  advise->add_option("--params", args.params, "Only a parameter count, e.g. 7B, 350M")
      ->type_name("COUNT")
      ->check(NonEmpty());
  advise->add_option("--task", args.task, "What the job does")
      ->type_name("train|finetune|lora|qlora|infer")
      ->transform(OneOf({"train", "finetune", "lora", "qlora", "infer"}))
      ->capture_default_str();
  advise->add_option("--precision", args.precision, "Weights' precision (default bf16; qlora int4)")
      ->type_name("fp32|bf16|fp16|fp8|int8|int4")
      ->transform(OneOf({"fp32", "bf16", "fp16", "fp8", "int8", "int4"}));
  advise
      ->add_option("--batch", args.batch,
                   "Training: sequences per GPU a step, the micro-batch (default 1)")
      ->type_name("N")
      ->check(WholeNumber(1, uint64_t{1} << 20));
  advise->add_option("--seq", args.seq, "Tokens per sequence (inference: prompt + output)")
      ->type_name("N")
      ->check(WholeNumber(1, uint64_t{1} << 24))
      ->capture_default_str();
  advise->add_option("--optimizer", args.optimizer, "Training: the optimizer")
      ->type_name("adamw|adamw-8bit|sgd|sgd-momentum")
      ->transform(OneOf({"adamw", "adamw-8bit", "sgd", "sgd-momentum"}))
      ->capture_default_str();
  advise
      ->add_option("--concurrency", args.concurrency,
                   "Inference: sequences served at once (default 1)")
      ->type_name("N")
      ->check(WholeNumber(1, uint64_t{1} << 20));
  advise->add_flag("--checkpointing", args.checkpointing,
                   "Training: activation checkpointing (recompute in the backward pass)");
  advise
      ->add_option("--attention", args.attention,
                   "Attention kernel: flash never stores the s x s scores, eager does")
      ->type_name("flash|eager")
      ->transform(OneOf({"flash", "eager"}))
      ->capture_default_str();
  advise->add_option("--lora-rank", args.lora_rank, "lora, qlora: the adapters' rank")
      ->type_name("N")
      ->check(WholeNumber(1, 65536))
      ->capture_default_str();
  advise->add_flag("--offline", args.offline, "Do not look at this server's GPUs");
  advise->add_flag("--json", args.json, "Machine-readable output (schema: docs/json.md)");
  return advise;
}

int RunAdvise(const GlobalOptions& global, const AdviseArgs& args) {
  const std::string dir = CatalogDir();
  Result<plan::Catalog> catalog = plan::LoadCatalog(plan::RealTextFiles(), dir);
  if (!catalog.ok()) return Fail(kExitBadInput, "catalog: " + catalog.error().message);
  int code = kExitUsage;
  Result<plan::ModelSpec> model = ResolveModel(*catalog, args, &code);
  if (!model.ok()) return Fail(code, model.error().message);
  Result<plan::Workload> workload = ResolveWorkload(args);
  if (!workload.ok()) return Fail(kExitUsage, workload.error().message);
  if (Status s = plan::CheckWorkload(*model, *workload); !s.ok()) {
    return Fail(kExitUsage, s.error().message);
  }

  plan::Advice advice;
  advice.model = *model;
  advice.workload = *workload;
  advice.estimate = plan::EstimateMemory(advice.model, advice.workload);
  advice.alternatives = plan::Alternatives(advice.model, advice.workload);
  advice.fits = plan::FitCatalog(catalog->gpus, advice.model, advice.workload, advice.estimate);
  if (args.offline) {
    advice.server.note = "--offline";
  } else {
    LookAtServer(global, advice);
  }
  advice.requests = BuildRequests(advice);

  std::string out = args.json ? DumpJsonForTerminal(render::AdviseJson(advice), /*pretty=*/true,
                                                    render::kAdviseSchemaName) +
                                    "\n"
                              : render::RenderAdviseText(advice);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gw::cli
