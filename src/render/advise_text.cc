#include "render/advise_text.h"

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "render/text_table.h"

namespace gw::render {
namespace {

using plan::Advice;

std::string Size(std::optional<uint64_t> bytes) { return bytes ? FormatBytes(*bytes) : "unknown"; }

std::string Header(const Advice& a) {
  const plan::Workload& w = a.workload;
  std::string line = fmt::format("{}: {}, {}", SanitizeForTerminal(a.model.name),
                                 plan::TaskName(w.task), plan::PrecisionName(w.precision));
  if (plan::IsTraining(w.task)) {
    line +=
        fmt::format(", batch {} x {} tokens, {}", w.batch, w.seq, plan::OptimizerName(w.optimizer));
    if (w.checkpointing) line += ", checkpointing";
  } else {
    line += fmt::format(", {} tokens x {} at once", w.seq, w.concurrency);
  }
  std::string out = line + "\n";
  if (a.model.arch) {
    const plan::Architecture& m = *a.model.arch;
    out += fmt::format("  {} parameters: {} layers, hidden {}, {} heads / {} KV heads, vocab {}\n",
                       plan::FormatParamCount(a.model.params), m.layers, m.hidden, m.heads,
                       m.kv_heads, m.vocab);
    if (m.experts > 0) {
      out += fmt::format(
          "  mixture of experts: {} experts of ffn {} in {} of the layers{}, {} per token: "
          "{} parameters active per token, all {} in memory\n",
          m.experts, m.expert_ffn, m.moe_layers == m.layers ? "all" : std::to_string(m.moe_layers),
          m.shared_ffn ? fmt::format(" + a shared MLP of {}", m.shared_ffn) : "",
          m.experts_per_token, plan::FormatParamCount(plan::CountParams(m).active),
          plan::FormatParamCount(a.model.params));
    }
  } else {
    out += fmt::format("  {} parameters (no architecture: activations and KV cache unknown)\n",
                       plan::FormatParamCount(a.model.params));
  }
  out += "  source: " + SanitizeForTerminal(a.model.source) + "\n";
  if (!a.model.assumption.empty()) {
    out += "  assumed: " + SanitizeForTerminal(a.model.assumption) + "\n";
  }
  return out;
}

std::string Breakdown(const Advice& a) {
  std::vector<std::vector<std::string>> rows;
  for (const plan::Component& c : a.estimate.components) {
    rows.push_back({c.in_total ? "  " : "  (", Size(c.bytes) + (c.in_total ? "" : ")"),
                    SanitizeForTerminal(c.label), SanitizeForTerminal(c.formula)});
  }
  rows.push_back({"  =", (a.estimate.complete ? "" : ">= ") + FormatBytes(a.estimate.total_bytes),
                  "total for one replica", ""});
  std::string out = "\nMemory (parentheses: shown, not in the total)\n" + TextTable(rows);
  return out;
}

std::string Savings(const Advice& a) {
  std::vector<std::vector<std::string>> rows;
  for (const plan::Alternative& alt : a.alternatives) {
    const int64_t diff = static_cast<int64_t>(alt.estimate.total_bytes) -
                         static_cast<int64_t>(a.estimate.total_bytes);
    std::string delta = alt.current ? "(as asked)"
                        : diff < 0  ? "saves " + FormatBytes(static_cast<uint64_t>(-diff))
                                    : "costs " + FormatBytes(static_cast<uint64_t>(diff));
    rows.push_back({"  " + alt.label,
                    (alt.estimate.complete ? "" : ">= ") + FormatBytes(alt.estimate.total_bytes),
                    delta});
  }
  return "\nWhat each choice saves\n" + TextTable(rows);
}

std::string Fits(const Advice& a) {
  std::vector<std::vector<std::string>> rows = {
      {"  GPU", "MEMORY", "GPUS", "PER GPU", "LAYOUT", "NEEDS"}};
  for (const plan::GpuFit& f : a.fits) {
    if (!f.layout) {
      rows.push_back({"  " + f.gpu->name, FormatBytes(f.gpu->memory_bytes),
                      fmt::format(">{}", plan::kMaxPlanGpus), "-", "does not fit", "-"});
      continue;
    }
    std::string needs = f.layout->interconnect;
    if (!f.warning.empty()) needs += " (" + f.warning + ")";
    rows.push_back({"  " + f.gpu->name, FormatBytes(f.gpu->memory_bytes),
                    std::to_string(f.layout->gpus), FormatBytes(f.layout->per_gpu_bytes),
                    f.layout->strategy, needs});
  }
  return fmt::format("\nWhich GPUs fit ({:.0f} % of each GPU's memory used at most)\n",
                     plan::kUsableFraction * 100) +
         TextTable(rows);
}

std::string Server(const Advice& a) {
  const plan::ServerAdvice& s = a.server;
  std::string out = "\nOn this server now\n";
  if (!s.looked) return out + "  not looked at: " + SanitizeForTerminal(s.note) + "\n";
  out += fmt::format("  {} GPU{}{}{}\n", s.gpu_count, s.gpu_count == 1 ? "" : "s",
                     s.gpu_name.empty() ? ""
                                        : " (smallest: " + SanitizeForTerminal(s.gpu_name) + ", " +
                                              FormatBytes(s.gpu_capacity) + ")",
                     s.simulated ? ", simulated" : "");
  if (!s.note.empty()) out += "  " + SanitizeForTerminal(s.note) + "\n";
  if (s.need.empty()) return out;
  out += fmt::format("  need: {} ({})\n", s.need, s.layout ? s.layout->strategy : "");
  out += "  " + SanitizeForTerminal(s.summary) + "\n";
  if (!s.chosen.empty()) {
    std::string gpus;
    for (unsigned g : s.chosen) gpus += (gpus.empty() ? "" : ", ") + std::to_string(g);
    out += "  it would start on GPU " + gpus + "\n";
  }
  out += "  details: gpuwarden why --need " + s.need + "\n";
  return out;
}

std::string RequestLines(const Advice& a) {
  if (!a.requests) return "";
  const plan::Requests& r = *a.requests;
  std::string out = "\nRequests (sized for " + r.basis + ")\n";
  if (!r.run.empty()) out += "  " + r.run + "\n  " + r.run_slurm + "\n";
  if (!r.sbatch.empty()) out += "  " + r.sbatch + "\n";
  if (!r.note.empty()) out += "  " + r.note + "\n";
  return out;
}

}  // namespace

std::string RenderAdviseText(const Advice& advice) {
  return Header(advice) + Breakdown(advice) + Savings(advice) + Fits(advice) + Server(advice) +
         RequestLines(advice);
}

}  // namespace gw::render
