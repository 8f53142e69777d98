#include "fleet/metrics.h"

#include <algorithm>

#include <array>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "diagnose/catalog.h"
#include "fleet/dcgm_fields.h"
#include "fleet/prom_text.h"

namespace gw::fleet {
namespace {

using diagnose::GpuState;
using diagnose::Verdict;

constexpr std::array kStates = {GpuState::kFree,        GpuState::kInUse,    GpuState::kBusy,
                                GpuState::kReclaimable, GpuState::kDegraded, GpuState::kFault,
                                GpuState::kUnknown};
constexpr std::array kVerdicts = {Verdict::kOk,       Verdict::kBusy,  Verdict::kReclaimable,
                                  Verdict::kDegraded, Verdict::kFault, Verdict::kUnknown};

template <typename T>
std::string Text(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

// dcgm-exporter's labels of one GPU, in its order.
Labels GpuLabels(const Snapshot& s, const Gpu& g) {
  Labels l;
  l.emplace_back("gpu", std::to_string(g.index));
  l.emplace_back("UUID", g.uuid.value_or(""));
  l.emplace_back("pci_bus_id", g.pci_bus_id.value_or(""));
  l.emplace_back("device", g.minor_number ? fmt::format("nvidia{}", *g.minor_number) : "");
  l.emplace_back("modelName", g.name.value_or(""));
  l.emplace_back("Hostname", s.host.hostname.value_or(""));
  if (s.system.driver_version) l.emplace_back(kDcgmDriverVersionLabel, *s.system.driver_version);
  return l;
}

Labels With(Labels l, std::string_view name, std::string value) {
  l.emplace_back(name, std::move(value));
  return l;
}

std::string VerdictLabel(Verdict v) {
  std::string out;
  for (char c : diagnose::VerdictName(v)) out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

void DcgmFields(PromText& out, const FleetView& view, const std::vector<Labels>& gpu_labels) {
  const Snapshot& s = *view.latest;
  for (const DcgmField& f : DcgmGpuFields()) {
    out.Family(f.name, f.type, f.help);
    for (size_t i = 0; i < s.gpus.size(); ++i) {
      if (std::optional<double> v = f.read(s.gpus[i])) out.Sample(gpu_labels[i], *v);
    }
  }
  if (!view.xids) return;  // No kernel log read: the Xid fields are unknown.
  out.Family(kDcgmXidErrors, MetricType::kGauge,
             "Value of the last XID error encountered (0 = none since boot).");
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    auto it = view.xids->find(s.gpus[i].index);
    out.Sample(gpu_labels[i], it == view.xids->end() ? 0.0 : it->second.last.value_or(0));
  }
  out.Family(kDcgmXidErrorsCount, MetricType::kGauge,
             "Xid errors since the machine booted, by Xid (err_code).");
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    auto it = view.xids->find(s.gpus[i].index);
    if (it == view.xids->end()) continue;
    for (const auto& [xid, n] : it->second.counts) {
      out.Sample(With(gpu_labels[i], "err_code", std::to_string(xid)), static_cast<double>(n));
    }
  }
}

// Processes: one series per large holder, the rest summed per user and GPU.
void Processes(PromText& out, const Snapshot& s, const std::vector<Labels>& gpu_labels,
               const MetricsOptions& o) {
  struct Own {
    size_t gpu;
    const GpuProcess* p;
    const HostProcess* host;
  };
  std::vector<Own> own;
  std::map<std::pair<size_t, std::string>, uint64_t> other;  // (gpu position, user) -> bytes
  auto user_of = [](const HostProcess* h) {
    if (h == nullptr) return std::string("?");
    if (h->user) return *h->user;
    return h->uid ? fmt::format("uid {}", *h->uid) : std::string("?");
  };
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    for (const GpuProcess& p : s.gpus[i].processes) {
      if (!p.used_memory_bytes) continue;  // Unknown memory is in no total.
      auto h = s.processes.find(p.pid);
      const HostProcess* host = h == s.processes.end() ? nullptr : &h->second;
      if (*p.used_memory_bytes >= o.process_min_bytes) {
        own.push_back({i, &p, host});
      } else {
        other[{i, user_of(host)}] += *p.used_memory_bytes;
      }
    }
  }
  // Past the series cap the largest holders keep their own series, wherever
  // they are; the rest join their user's "other".
  if (own.size() > o.max_process_series) {
    std::stable_sort(own.begin(), own.end(), [](const Own& a, const Own& b) {
      return *a.p->used_memory_bytes > *b.p->used_memory_bytes;
    });
    for (size_t k = o.max_process_series; k < own.size(); ++k) {
      other[{own[k].gpu, user_of(own[k].host)}] += *own[k].p->used_memory_bytes;
    }
    own.resize(o.max_process_series);
    std::stable_sort(own.begin(), own.end(),
                     [](const Own& a, const Own& b) { return a.gpu < b.gpu; });
  }
  auto labels = [&](const Own& x) {
    Labels l = gpu_labels[x.gpu];
    const HostProcess* h = x.host;
    l.emplace_back("pid", std::to_string(x.p->pid));
    l.emplace_back("user", user_of(h));
    l.emplace_back("comm", h && h->comm ? *h->comm : "");
    const ProcessOwner* ow = h ? &h->owner : nullptr;
    l.emplace_back("container", ow && ow->container_id ? ow->container_id->substr(0, 12) : "");
    l.emplace_back("unit", ow && ow->systemd_unit ? *ow->systemd_unit : "");
    l.emplace_back("slurm_job", ow && ow->slurm_job_id ? *ow->slurm_job_id : "");
    return l;
  };
  out.Family("gpuwarden_process_memory_bytes", MetricType::kGauge,
             "GPU memory a process holds on a GPU; pid=\"other\" sums a user's smaller ones.");
  for (const Own& x : own) out.Sample(labels(x), static_cast<double>(*x.p->used_memory_bytes));
  for (const auto& [key, bytes] : other) {
    Labels l = gpu_labels[key.first];
    l.emplace_back("pid", "other");
    l.emplace_back("user", key.second);
    for (const char* empty : {"comm", "container", "unit", "slurm_job"}) l.emplace_back(empty, "");
    out.Sample(l, static_cast<double>(bytes));
  }
  out.Family("gpuwarden_process_sm_util_percent", MetricType::kGauge,
             "SM utilisation of a process on a GPU, from the driver's samples (in %).");
  for (const Own& x : own) {
    if (x.p->sm_util_pct) out.Sample(labels(x), *x.p->sm_util_pct);
  }
}

void Judgement(PromText& out, const FleetView& view, const std::vector<Labels>& gpu_labels) {
  if (!view.diagnosis) return;
  const Snapshot& s = *view.latest;
  const diagnose::Diagnosis& d = *view.diagnosis;
  std::map<unsigned, size_t> position;
  for (size_t i = 0; i < s.gpus.size(); ++i) position[s.gpus[i].index] = i;

  out.Family("gpuwarden_server_verdict", MetricType::kGauge,
             "The server's verdict: 1 for the current one (docs/diagnosis.md).");
  for (Verdict v : kVerdicts) {
    out.Sample({{"verdict", VerdictLabel(v)}}, d.server == v ? 1 : 0);
  }
  out.Family("gpuwarden_gpu_state", MetricType::kGauge,
             "What a GPU is doing: 1 for its current state (docs/diagnosis.md, GPU states).");
  for (const diagnose::GpuVerdict& g : d.gpus) {
    auto at = position.find(g.index);
    if (at == position.end()) continue;
    for (GpuState st : kStates) {
      out.Sample(With(gpu_labels[at->second], "state", std::string(diagnose::GpuStateName(st))),
                 g.state == st ? 1 : 0);
    }
  }
  out.Family("gpuwarden_gpu_verdict", MetricType::kGauge,
             "A GPU's verdict: 1 for the current one.");
  for (const diagnose::GpuVerdict& g : d.gpus) {
    auto at = position.find(g.index);
    if (at == position.end()) continue;
    for (Verdict v : kVerdicts) {
      out.Sample(With(gpu_labels[at->second], "verdict", VerdictLabel(v)), g.verdict == v ? 1 : 0);
    }
  }
  out.Family("gpuwarden_gpu_reclaimable_bytes", MetricType::kGauge,
             "GPU memory held by idle, orphaned, zombie or invisible holders.");
  for (const diagnose::GpuVerdict& g : d.gpus) {
    auto at = position.find(g.index);
    if (at != position.end()) out.Sample(gpu_labels[at->second], g.reclaimable_bytes);
  }

  std::map<std::string, unsigned> by_code;
  for (const diagnose::Finding& f : d.findings) ++by_code[f.code];
  out.Family("gpuwarden_findings", MetricType::kGauge,
             "Findings of the latest diagnosis, by code (every code of the catalog).");
  for (const diagnose::FindingSpec& spec : diagnose::AllSpecs()) {
    auto it = by_code.find(std::string(spec.code));
    out.Sample({{"code", std::string(spec.code)},
                {"severity", std::string(diagnose::SeverityName(spec.severity))}},
               it == by_code.end() ? 0 : it->second);
  }

  out.Family("gpuwarden_user_memory_bytes", MetricType::kGauge,
             "GPU memory a user's processes hold, all GPUs together.");
  for (const diagnose::UserHolding& u : d.users) out.Sample({{"user", u.user}}, u.vram_bytes);
  out.Family("gpuwarden_user_idle_memory_bytes", MetricType::kGauge,
             "The part of a user's GPU memory held by idle, orphaned or zombie processes.");
  for (const diagnose::UserHolding& u : d.users) {
    out.Sample({{"user", u.user}}, u.idle_vram_bytes);
  }
  out.Family("gpuwarden_user_gpus", MetricType::kGauge, "GPUs on which a user holds processes.");
  for (const diagnose::UserHolding& u : d.users) {
    out.Sample({{"user", u.user}}, static_cast<double>(u.gpus.size()));
  }
}

void Queue(PromText& out, const QueueStats& q) {
  out.Family("gpuwarden_queue_jobs", MetricType::kGauge, "Jobs in the queue, by state.");
  const std::pair<const char*, unsigned> states[] = {
      {"queued", q.queued}, {"held", q.held}, {"starting", q.starting}, {"running", q.running}};
  for (const auto& [name, n] : states) out.Sample({{"state", name}}, n);
  out.Family("gpuwarden_queue_oldest_wait_seconds", MetricType::kGauge,
             "How long the longest-waiting queued job has waited (absent: none waits).");
  if (q.oldest_wait_s) out.Sample({}, *q.oldest_wait_s);
  out.Family("gpuwarden_queue_starts_total", MetricType::kCounter,
             "Jobs started since the daemon started.");
  out.Sample({}, static_cast<double>(q.starts_total));
  out.Family("gpuwarden_queue_ended_total", MetricType::kCounter,
             "Jobs ended since the daemon started, by how they ended.");
  for (const auto& [state, n] : q.ended_total) out.Sample({{"state", state}}, n);
  out.Family("gpuwarden_queue_wait_seconds", MetricType::kHistogram,
             "How long the jobs started since the daemon started had waited.");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kWaitBucketsS.size(); ++i) {
    cumulative += q.waits.buckets[i];
    out.Sample({{"le", fmt::format("{}", kWaitBucketsS[i])}}, static_cast<double>(cumulative),
               "_bucket");
  }
  out.Sample({{"le", "+Inf"}}, static_cast<double>(q.waits.count), "_bucket");
  out.Sample({}, q.waits.sum_s, "_sum");
  out.Sample({}, static_cast<double>(q.waits.count), "_count");
  out.Family("gpuwarden_queue_degraded", MetricType::kGauge,
             "1 when the queue's storage refuses writes (docs/queue.md).");
  out.Sample({}, q.degraded ? 1 : 0);
}

}  // namespace

std::string RenderMetrics(const FleetView& view, const MetricsOptions& o) {
  PromText out;
  out.Family("gpuwarden_build_info", MetricType::kGauge, "The gpuwarden that serves this page.");
  out.Sample({{"version", o.version}}, 1);
  if (view.queue) Queue(out, *view.queue);
  if (!view.latest) {
    out.Family("gpuwarden_up", MetricType::kGauge,
               "1 when the latest look at the GPUs read them (0: none yet, or none readable).");
    out.Sample({}, 0);
    return out.Take();
  }
  const Snapshot& s = *view.latest;
  std::vector<Labels> gpu_labels;
  unsigned reachable = 0;
  for (const Gpu& g : s.gpus) {
    gpu_labels.push_back(GpuLabels(s, g));
    reachable += g.unreachable ? 0 : 1;
  }

  out.Family("gpuwarden_up", MetricType::kGauge,
             "1 when the latest look at the GPUs read them (0: none yet, or none readable).");
  out.Sample({}, reachable > 0 ? 1 : 0);
  out.Family("gpuwarden_sample_timestamp_seconds", MetricType::kGauge,
             "When the latest look at the GPUs started (Unix time).");
  out.Sample({}, static_cast<double>(s.time_unix_ms) / 1000.0);
  out.Family("gpuwarden_probe_duration_seconds", MetricType::kGauge,
             "How long the latest look at the GPUs took.");
  out.Sample({}, s.probe_duration_ms / 1000.0);
  out.Family("gpuwarden_probe_errors", MetricType::kGauge,
             "Errors met by the latest look, by source and code.");
  std::map<std::pair<std::string, std::string>, unsigned> errors;
  for (const ProbeError& e : s.errors) ++errors[{e.source, e.code}];
  for (const auto& [key, n] : errors) out.Sample({{"source", key.first}, {"code", key.second}}, n);
  out.Family("gpuwarden_gpus_reported", MetricType::kGauge,
             "GPUs the driver reports (a GPU that fell off the bus may still be counted).");
  if (s.system.gpu_count) out.Sample({}, *s.system.gpu_count);
  out.Family("gpuwarden_gpus_readable", MetricType::kGauge, "GPUs the latest look could read.");
  out.Sample({}, reachable);
  out.Family("gpuwarden_gpu_unreachable", MetricType::kGauge,
             "1 when a GPU could not be read (lost, no permission, timed out).");
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    out.Sample(gpu_labels[i], s.gpus[i].unreachable ? 1 : 0);
  }

  DcgmFields(out, view, gpu_labels);
  Processes(out, s, gpu_labels, o);
  Judgement(out, view, gpu_labels);
  return out.Take();
}

}  // namespace gw::fleet
