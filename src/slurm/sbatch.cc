#include "slurm/sbatch.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "core/text.h"
#include "core/units.h"
#include "slurm/gpu_types.h"

namespace gw::slurm {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Gib(uint64_t bytes) { return FormatBytes(bytes); }

std::string TypeLabel(const std::string& type) { return type.empty() ? "untyped" : type; }

// One gres type of the cluster: its memory (when known), the most GPUs of
// it on one node, and how many are free now / in all.
struct TypeFacts {
  std::string type;
  std::optional<uint64_t> memory;
  int64_t most_on_a_node = 0;
  int64_t free = 0;
  int64_t total = 0;
};

std::vector<TypeFacts> FactsOf(const ClusterView& view) {
  std::vector<TypeFacts> facts;
  auto find = [&facts](const std::string& type) -> TypeFacts& {
    for (TypeFacts& f : facts) {
      if (f.type == type) return f;
    }
    facts.push_back({type, GpuTypeMemoryBytes(type), 0, 0, 0});
    return facts.back();
  };
  for (const NodeView& node : view.nodes) {
    if (!node.gpus) continue;
    for (const GpuCounts& c : *node.gpus) {
      TypeFacts& f = find(c.type);
      f.most_on_a_node = std::max(f.most_on_a_node, c.total);
    }
  }
  for (const GpuCounts& c : view.gpu_totals) {
    TypeFacts& f = find(c.type);
    f.free = c.free;
    f.total = c.total;
  }
  return facts;
}

std::string TypesWithMemory(const std::vector<TypeFacts>& facts) {
  std::string out;
  for (const TypeFacts& f : facts) {
    out += (out.empty() ? "" : ", ") + SanitizeForTerminal(TypeLabel(f.type)) + " " +
           (f.memory ? Gib(*f.memory) : std::string("(memory unknown)"));
  }
  return out;
}

// The gres type to ask for ("" = any), or the refusal.
Result<std::string> ChooseType(const SlurmSubmit& s, const ClusterView& view,
                               std::vector<std::string>* notes) {
  const std::vector<TypeFacts> facts = FactsOf(view);
  int64_t most_anywhere = 0;
  for (const TypeFacts& f : facts) most_anywhere = std::max(most_anywhere, f.most_on_a_node);
  if (facts.empty()) {
    return MakeError("unsatisfiable", "the cluster has no GPUs (sinfo lists no gpu gres)");
  }
  if (!s.vram_bytes) {
    if (most_anywhere < s.gpus) {
      return MakeError("unsatisfiable", "--gpus " + std::to_string(s.gpus) +
                                            ": no node of the cluster has " +
                                            std::to_string(s.gpus) + " GPUs (at most " +
                                            std::to_string(most_anywhere) + ")");
    }
    return std::string();
  }
  const std::string vram = "--vram " + Gib(*s.vram_bytes);
  std::vector<const TypeFacts*> fitting;
  bool any_unknown = false;
  bool memory_fits_but_too_few = false;
  for (const TypeFacts& f : facts) {
    if (!f.memory) {
      any_unknown = true;
      continue;
    }
    if (*f.memory < *s.vram_bytes) continue;
    if (f.most_on_a_node < s.gpus) {
      memory_fits_but_too_few = true;
      continue;
    }
    fitting.push_back(&f);
  }
  if (fitting.empty()) {
    if (memory_fits_but_too_few) {
      return MakeError("unsatisfiable", vram + " and --gpus " + std::to_string(s.gpus) +
                                            ": no node has " + std::to_string(s.gpus) +
                                            " GPUs with that much memory (the cluster's GPU "
                                            "types: " +
                                            TypesWithMemory(facts) + ")");
    }
    if (any_unknown && facts.size() == 1) {
      return MakeError("unsatisfiable",
                       vram + ": the cluster's GPUs are " + TypesWithMemory(facts) +
                           "; gpuwarden cannot tell which have that much (give sbatch "
                           "--gres=gpu:TYPE:N yourself, or leave --vram out)");
    }
    return MakeError("unsatisfiable", vram + ": no GPU type of the cluster has that much memory (" +
                                          TypesWithMemory(facts) + ")");
  }
  if (fitting.size() == facts.size()) {
    notes->push_back(vram + ": every GPU type of the cluster has that much (" +
                     TypesWithMemory(facts) + "); asking for any GPU");
    return std::string();
  }
  const TypeFacts* chosen =
      *std::min_element(fitting.begin(), fitting.end(), [](const TypeFacts* a, const TypeFacts* b) {
        if (a->free != b->free) return a->free > b->free;
        if (a->total != b->total) return a->total > b->total;
        return a->type < b->type;
      });
  std::string note = vram + ": asking for " + SanitizeForTerminal(chosen->type) + " GPUs (" +
                     Gib(*chosen->memory) + ")";
  if (fitting.size() > 1) {
    note += ", of the types that have that much the one with the most GPUs free now (" +
            std::to_string(chosen->free) + ")";
  }
  notes->push_back(note);
  return chosen->type;
}

bool IsKeyStart(std::string_view line, size_t pos) {
  // A key: letters, digits and _:/. up to '=', at the start or after a space.
  if (pos != 0 && line[pos - 1] != ' ') return false;
  size_t i = pos;
  if (i >= line.size() || !std::isalpha(static_cast<unsigned char>(line[i]))) return false;
  while (i < line.size() && line[i] != '=' && line[i] != ' ') {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (!std::isalnum(c) && c != '_' && c != ':' && c != '/' && c != '.') return false;
    ++i;
  }
  return i < line.size() && line[i] == '=';
}

}  // namespace

Result<SbatchPlan> PlanSbatch(const SlurmSubmit& s, const ClusterView* view) {
  if (s.command.empty() || s.command[0].empty()) {
    return MakeError("invalid", "run --slurm: give the command after --");
  }
  SbatchPlan plan;
  plan.argv = {"sbatch", "--parsable"};
  plan.argv.push_back("--job-name=" + (s.name.empty() ? BaseName(s.command[0]) : s.name));
  if (!s.cwd.empty()) plan.argv.push_back("--chdir=" + s.cwd);
  plan.argv.push_back("--export=ALL");
  if (s.time_limit_s) {
    const int64_t minutes = std::max<int64_t>(1, (*s.time_limit_s + 59) / 60);
    plan.argv.push_back("--time=" + std::to_string(minutes));
  }
  if (!s.after.empty()) {
    std::string dependency = "--dependency=afterok";
    for (int64_t id : s.after) dependency += ":" + std::to_string(id);
    plan.argv.push_back(dependency);
  }
  if (s.gpus > 0) {
    std::string type;
    if (view != nullptr) {
      Result<std::string> chosen = ChooseType(s, *view, &plan.notes);
      if (!chosen.ok()) return chosen.error();
      type = *chosen;
    } else if (s.vram_bytes) {
      return MakeError("unsatisfiable", "--vram needs the cluster's GPU types (sinfo)");
    }
    plan.argv.push_back("--nodes=1");
    plan.argv.push_back("--gres=gpu:" + (type.empty() ? "" : type + ":") + std::to_string(s.gpus));
  }
  plan.argv.push_back(s.script_path);
  plan.argv.insert(plan.argv.end(), s.command.begin(), s.command.end());
  return plan;
}

Result<int64_t> ParseSbatchJobId(std::string_view out) {
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) {
    out.remove_suffix(1);
  }
  // Only the last line: sbatch may print warnings before it.
  if (const size_t nl = out.rfind('\n'); nl != std::string_view::npos) out.remove_prefix(nl + 1);
  const std::string_view id = out.substr(0, out.find(';'));
  // Slurm's job ids start at 1: a 0 would be waited on as a job that never ends.
  if (id.empty() || id.size() > 18 ||
      id.find_first_not_of("0123456789") != std::string_view::npos ||
      id.find_first_not_of('0') == std::string_view::npos) {
    return MakeError("malformed", "sbatch --parsable printed \"" +
                                      SanitizeForTerminal(std::string(out)) + "\", not a job id");
  }
  return static_cast<int64_t>(std::strtoll(std::string(id).c_str(), nullptr, 10));
}

std::map<std::string, std::string> ParseScontrolRecord(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
  std::map<std::string, std::string> out;
  std::vector<size_t> starts;
  for (size_t i = 0; i < line.size(); ++i) {
    if (IsKeyStart(line, i)) starts.push_back(i);
  }
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t begin = starts[k];
    const size_t end = k + 1 < starts.size() ? starts[k + 1] - 1 : line.size();
    const size_t eq = line.find('=', begin);
    out.emplace(std::string(line.substr(begin, eq - begin)),
                std::string(line.substr(eq + 1, end > eq ? end - eq - 1 : 0)));
  }
  return out;
}

std::optional<SlurmJobEnd> DescribeSlurmJobEnd(int64_t job_id, std::string_view state,
                                               std::string_view exit_code) {
  // "CANCELLED by 1000" in some versions' text: the first word is the state.
  state = state.substr(0, state.find(' '));
  const std::string job = "Slurm job " + std::to_string(job_id);
  int status = 0;
  int signal = 0;
  if (const size_t colon = exit_code.find(':'); colon != std::string_view::npos) {
    status = std::atoi(std::string(exit_code.substr(0, colon)).c_str());
    signal = std::atoi(std::string(exit_code.substr(colon + 1)).c_str());
  }
  if (state == "COMPLETED") return SlurmJobEnd{status, job + " completed"};
  if (state == "FAILED") {
    if (signal > 0) {
      return SlurmJobEnd{128 + signal, job + " was killed by signal " + std::to_string(signal)};
    }
    return SlurmJobEnd{status > 0 ? status : 1,
                       job + " failed with status " + std::to_string(status)};
  }
  if (state == "CANCELLED") return SlurmJobEnd{1, job + " was cancelled"};
  if (state == "TIMEOUT") return SlurmJobEnd{1, job + " was stopped at its time limit"};
  if (state == "OUT_OF_MEMORY") return SlurmJobEnd{1, job + " ran out of memory"};
  if (state == "NODE_FAIL") return SlurmJobEnd{1, job + " ended: its node failed"};
  if (state == "BOOT_FAIL") return SlurmJobEnd{1, job + " ended: its node failed to boot"};
  if (state == "DEADLINE") return SlurmJobEnd{1, job + " ended: it passed its deadline"};
  if (state == "PREEMPTED") return SlurmJobEnd{1, job + " was preempted (and not requeued)"};
  if (state == "SPECIAL_EXIT") {
    return SlurmJobEnd{status > 0 ? status : 1, job + " ended with a special exit (held)"};
  }
  return std::nullopt;
}

}  // namespace gw::slurm
