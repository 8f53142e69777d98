#include "render/advise_json.h"

#include "core/json_out.h"

namespace gw::render {
namespace {

using nlohmann::json;

json LayoutJson(const std::optional<plan::Layout>& l) {
  if (!l) return nullptr;
  return json{{"gpus", l->gpus},
              {"tensor_parallel", l->tp},
              {"pipeline_parallel", l->pp},
              {"data_parallel", l->dp},
              {"zero_stage", l->zero_stage},
              {"per_gpu_bytes", l->per_gpu_bytes},
              {"strategy", l->strategy},
              {"needs_nvlink", l->needs_nvlink},
              {"wants_nvlink", l->wants_nvlink},
              {"multi_server", l->multi_server},
              {"interconnect", l->interconnect}};
}

json EstimateJson(const plan::Estimate& e) {
  json parts = json::array();
  for (const plan::Component& c : e.components) {
    parts.push_back({{"key", c.key},
                     {"label", c.label},
                     {"bytes", JsonOrNull(c.bytes)},
                     {"formula", c.formula},
                     {"in_total", c.in_total}});
  }
  return json{{"components", parts},
              {"total_bytes", e.total_bytes},
              {"complete", e.complete},
              {"trainable_params", e.trainable_params}};
}

json ModelJson(const plan::ModelSpec& m) {
  json j{{"name", JsonText(m.name)},
         {"source", JsonText(m.source)},
         {"params", m.params},
         {"active_params", nullptr},
         {"assumption", m.assumption.empty() ? json() : JsonText(m.assumption)},
         {"architecture", nullptr}};
  if (m.arch) {
    const plan::Architecture& a = *m.arch;
    j["active_params"] = plan::CountParams(a).active;
    j["architecture"] = {{"layers", a.layers},     {"hidden", a.hidden},     {"heads", a.heads},
                         {"kv_heads", a.kv_heads}, {"head_dim", a.head_dim}, {"vocab", a.vocab},
                         {"ffn", a.ffn},           {"encoder", a.encoder},   {"experts", nullptr}};
    if (a.experts > 0) {
      j["architecture"]["experts"] = {{"count", a.experts},
                                      {"per_token", a.experts_per_token},
                                      {"ffn", a.expert_ffn},
                                      {"shared_ffn", a.shared_ffn},
                                      {"layers", a.moe_layers}};
    }
  }
  return j;
}

}  // namespace

json AdviseJson(const plan::Advice& a) {
  const plan::Workload& w = a.workload;
  json j;
  j["schema"] = kAdviseSchemaName;
  j["schema_version"] = kAdviseSchemaVersion;
  j["model"] = ModelJson(a.model);
  j["workload"] = {{"task", plan::TaskName(w.task)},
                   {"precision", plan::PrecisionName(w.precision)},
                   {"batch", w.batch},
                   {"seq", w.seq},
                   {"optimizer", plan::OptimizerName(w.optimizer)},
                   {"concurrency", w.concurrency},
                   {"checkpointing", w.checkpointing},
                   {"attention", plan::AttentionName(w.attention)},
                   {"lora_rank", w.lora_rank}};
  j["estimate"] = EstimateJson(a.estimate);
  json alts = json::array();
  for (const plan::Alternative& alt : a.alternatives) {
    alts.push_back({{"label", alt.label},
                    {"task", plan::TaskName(alt.workload.task)},
                    {"precision", plan::PrecisionName(alt.workload.precision)},
                    {"checkpointing", alt.workload.checkpointing},
                    {"total_bytes", alt.estimate.total_bytes},
                    {"complete", alt.estimate.complete},
                    {"current", alt.current}});
  }
  j["alternatives"] = alts;
  json fits = json::array();
  for (const plan::GpuFit& f : a.fits) {
    fits.push_back({{"gpu", f.gpu->name},
                    {"memory_bytes", f.gpu->memory_bytes},
                    {"link", plan::LinkName(f.gpu->link)},
                    {"source", f.gpu->source},
                    {"layout", LayoutJson(f.layout)},
                    {"warning", f.warning.empty() ? json(nullptr) : json(f.warning)}});
  }
  j["fits"] = fits;
  const plan::ServerAdvice& s = a.server;
  json chosen = json::array();
  for (unsigned g : s.chosen) chosen.push_back(g);
  auto or_null = [](const std::string& text) {
    return text.empty() ? json(nullptr) : JsonText(text);
  };
  j["server"] = {
      {"looked", s.looked},
      {"note", or_null(s.note)},
      {"simulated", s.simulated},
      {"gpu_count", s.gpu_count},
      {"gpu_name", or_null(s.gpu_name)},
      {"gpu_capacity_bytes", s.looked && s.gpu_capacity ? json(s.gpu_capacity) : json(nullptr)},
      {"layout", LayoutJson(s.layout)},
      {"need", or_null(s.need)},
      {"verdict", or_null(s.verdict)},
      {"summary", or_null(s.summary)},
      {"placement", or_null(s.placement)},
      {"gpus", chosen}};
  if (a.requests) {
    const plan::Requests& r = *a.requests;
    j["requests"] = {{"basis", r.basis},
                     {"run", or_null(r.run)},
                     {"run_slurm", or_null(r.run_slurm)},
                     {"sbatch", or_null(r.sbatch)},
                     {"note", or_null(r.note)}};
  } else {
    j["requests"] = nullptr;
  }
  return j;
}

}  // namespace gw::render
