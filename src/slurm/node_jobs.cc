#include "slurm/node_jobs.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "proc/device_files.h"
#include "slurm/hostlist.h"

namespace gw::slurm {
namespace {

bool ParseUnsigned(std::string_view text, unsigned* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// "Key=value" tokens of one slurmd -G record; values hold no spaces.
std::map<std::string_view, std::string_view> RecordFields(std::string_view record) {
  std::map<std::string_view, std::string_view> fields;
  while (!record.empty()) {
    const size_t space = record.find(' ');
    const std::string_view token = record.substr(0, space);
    if (const size_t eq = token.find('='); eq != std::string_view::npos) {
      fields.emplace(token.substr(0, eq), token.substr(eq + 1));
    }
    if (space == std::string_view::npos) break;
    record.remove_prefix(space + 1);
  }
  return fields;
}

bool IsNull(std::string_view v) { return v.empty() || v == "(null)" || v == "N/A"; }

// The minor number in a device file's name, /dev/nvidia3 -> 3, by the one
// parser of that name (proc::GpuDeviceMinor) in the file's own directory:
// gres.conf may name devices anywhere.
std::optional<unsigned> DeviceMinor(std::string_view file) {
  const size_t slash = file.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return proc::GpuDeviceMinor(file, file.substr(0, slash));
}

}  // namespace

Result<std::vector<unsigned>> ParseGresIndexes(std::string_view list) {
  // The same bracket syntax as a hostlist's: expand "[0-1,3]" and read the names.
  Result<std::vector<std::string>> names =
      ExpandHostlist("[" + std::string(list) + "]", size_t{1} << 16);
  auto bad = [&] {
    return MakeError("malformed", "GRES index list \"" + std::string(list) + "\"");
  };
  if (!names.ok() || list.empty()) return bad();
  std::vector<unsigned> out;
  for (const std::string& n : *names) {
    unsigned v = 0;
    if (!ParseUnsigned(n, &v)) return bad();
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::vector<GresDevice>> ParseSlurmdGres(std::string_view text) {
  std::vector<GresDevice> devices;
  std::map<std::string, unsigned> next_index;  // per resource name
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_number;
    const size_t at = line.find("Gres Name=");
    if (at == std::string_view::npos) continue;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    auto fields = RecordFields(line.substr(at + 5));
    auto bad = [&](const std::string& what) {
      return MakeError("malformed", "slurmd -G, line " + std::to_string(line_number) + ": " + what);
    };
    // Index= is not the GRES index: slurmd prints the trailing number of the
    // File string (3 for /dev/nvidia3, 0 for /dev/nvidia[0-1]). The GRES
    // index (squeue's IDX) is the device's place in slurmd's list of that
    // resource, which is the order slurmd prints its devices.
    const std::string_view file = fields["File"];
    if (IsNull(file)) continue;  // A count without devices (licenses, untracked GRES).
    Result<std::vector<std::string>> files = ExpandHostlist(file, size_t{1} << 16);
    if (!files.ok()) return bad("File " + files.error().message);
    const std::string name(fields["Name"]);
    unsigned& next = next_index[name];
    for (std::string& f : *files) {
      GresDevice d;
      d.name = name;
      if (!IsNull(fields["Type"])) d.type = std::string(fields["Type"]);
      d.index = next++;
      d.file = std::move(f);
      devices.push_back(std::move(d));
    }
  }
  return devices;
}

bool HoldsNodeResources(const Job& job) {
  auto flag = [&](std::string_view f) {
    return std::find(job.state_flags.begin(), job.state_flags.end(), f) != job.state_flags.end();
  };
  return job.state == "RUNNING" || job.state == "SUSPENDED" || job.state == "STOPPED" ||
         job.state == "COMPLETING" || flag("COMPLETING");
}

namespace {

// The GRES the job holds on `node` (gres_detail is per node, in the order of
// its expanded node list); nullopt when the job does not run there.
std::optional<std::vector<Gres>> GresOnNode(const Job& job, const std::string& node) {
  if (!job.nodes) return std::nullopt;
  Result<std::vector<std::string>> names = ExpandHostlist(*job.nodes);
  if (!names.ok()) return std::nullopt;
  const auto it = std::find(names->begin(), names->end(), node);
  if (it == names->end()) return std::nullopt;
  const size_t pos = static_cast<size_t>(it - names->begin());
  if (pos < job.gres_detail.size()) return job.gres_detail[pos];
  return std::vector<Gres>{};
}

bool HoldsGpuIndexes(const std::vector<Gres>& gres) {
  for (const Gres& g : gres) {
    if (g.name == "gpu" && g.indexes) return true;
  }
  return false;
}

}  // namespace

Result<NodeJobsLook> ReadNodeJobs(os::CommandRunner& runner, const std::string& node,
                                  const NodeReadOptions& options) {
  const ReaderOptions& ro = options.reader;
  NodeJobsLook look;
  look.node = node;
  Result<std::string> shown =
      OutputOf(runner, {ro.scontrol, "-o", "show", "node", node}, ro.scontrol + " show node", ro);
  if (!shown.ok()) {
    // scontrol: "Node n9 not found" (exit status 1).
    if (shown.error().code == "slurm" &&
        shown.error().message.find("Node " + node + " not found") != std::string::npos) {
      return MakeError("not_a_node",
                       "Slurm has no node " + node + " (" + shown.error().message + ")");
    }
    return shown.error();
  }
  // "NodeName=n2 Arch=..."; anything else is not the node asked for.
  if (!shown->starts_with("NodeName=" + node + " ") && *shown != "NodeName=" + node) {
    return MakeError("not_a_node", "Slurm has no node " + node +
                                       " (scontrol show node printed "
                                       "no record of it)");
  }

  Result<std::string> json = OutputOf(
      runner,
      {ro.squeue, "--json", "--nodelist=" + node, "--states=RUNNING,SUSPENDED,STOPPED,COMPLETING"},
      ro.squeue + " --json", ro);
  if (!json.ok()) return json.error();
  Result<SqueueDocument> doc = ParseSqueueJson(*json);
  if (!doc.ok()) return MakeError("malformed", ro.squeue + " --json: " + doc.error().message);
  bool gpu_indexes = false;
  for (Job& j : doc->jobs) {
    if (!HoldsNodeResources(j)) continue;
    std::optional<std::vector<Gres>> here = GresOnNode(j, node);
    if (!here) continue;
    gpu_indexes = gpu_indexes || HoldsGpuIndexes(*here);
    look.jobs.push_back(std::move(j));
  }
  if (!gpu_indexes) return look;

  // slurmd's list is what each index is; without it the caller falls back to
  // minor order, so a failure here is a note, not an error.
  std::vector<std::string> argv = {options.slurmd, "-G", "-N", node};
  os::CommandOptions o;
  o.timeout_ms = ro.timeout_ms;
  Result<os::CommandOutput> r = runner.Run(argv, o);
  if (!r.ok() && r.error().code == "not_found" && options.slurmd.find('/') == std::string::npos) {
    argv[0] = "/usr/sbin/" + options.slurmd;
    r = runner.Run(argv, o);
  }
  if (!r.ok()) {
    look.devices_unread = r.error().message;
  } else if (!r->succeeded()) {
    look.devices_unread = options.slurmd + " -G " + r->Describe();
  } else {
    // slurmd logs to stderr; some builds print to stdout.
    Result<std::vector<GresDevice>> devices = ParseSlurmdGres(r->err + "\n" + r->out);
    if (!devices.ok()) {
      look.devices_unread = devices.error().message;
    } else if (devices->empty()) {
      look.devices_unread = options.slurmd + " -G listed no device files";
    } else {
      look.devices = std::move(devices).value();
    }
  }
  return look;
}

SlurmNode MapNodeJobs(const NodeJobsLook& look, const Snapshot& snapshot) {
  SlurmNode out;
  out.name = look.node;
  // minor number -> GPU index, and the GPUs in minor order for the fallback.
  std::map<unsigned, unsigned> by_minor;
  std::vector<const Gpu*> in_minor_order;
  for (const Gpu& g : snapshot.gpus) {
    if (g.minor_number) by_minor.emplace(*g.minor_number, g.index);
    in_minor_order.push_back(&g);
  }
  std::stable_sort(in_minor_order.begin(), in_minor_order.end(), [](const Gpu* a, const Gpu* b) {
    return a->minor_number.value_or(a->index) < b->minor_number.value_or(b->index);
  });
  std::map<unsigned, const GresDevice*> gpu_device;  // GRES index -> device (gpu only)
  if (look.devices) {
    out.gpu_map = "device files";
    for (const GresDevice& d : *look.devices) {
      if (d.name == "gpu") gpu_device.emplace(d.index, &d);
    }
  } else {
    out.gpu_map = "minor order";
    if (!look.devices_unread.empty()) {
      out.notes.push_back(
          "GRES index k taken as the k-th GPU by minor number: slurmd's device "
          "list not read (" +
          look.devices_unread + ")");
    }
  }
  auto gpu_for = [&](unsigned idx) -> std::optional<unsigned> {
    if (look.devices) {
      auto d = gpu_device.find(idx);
      if (d == gpu_device.end()) return std::nullopt;
      std::optional<unsigned> minor = DeviceMinor(d->second->file);
      if (!minor) return std::nullopt;
      auto g = by_minor.find(*minor);
      if (g == by_minor.end()) return std::nullopt;
      return g->second;
    }
    if (idx < in_minor_order.size()) return in_minor_order[idx]->index;
    return std::nullopt;
  };

  for (const Job& j : look.jobs) {
    SlurmJob sj;
    sj.id = std::to_string(j.id);
    sj.user = j.user;
    sj.name = j.name;
    sj.state = j.state;
    sj.start_time_unix_s = j.start_time;
    std::set<unsigned> indexes;
    for (const Gres& g : GresOnNode(j, look.node).value_or(std::vector<Gres>{})) {
      if (g.name != "gpu" || !g.indexes) continue;
      Result<std::vector<unsigned>> list = ParseGresIndexes(*g.indexes);
      if (!list.ok()) {
        out.notes.push_back("job " + sj.id + ": " + list.error().message + " not read");
        continue;
      }
      indexes.insert(list->begin(), list->end());
    }
    for (unsigned idx : indexes) {
      if (std::optional<unsigned> gpu = gpu_for(idx)) {
        sj.gres_indexes.push_back(idx);
        sj.gpus.push_back(*gpu);
      } else {
        out.notes.push_back("job " + sj.id + ": GRES index " + std::to_string(idx) +
                            " matches no GPU of this server" +
                            (look.devices ? " by its device file's minor number" : ""));
      }
    }
    out.jobs.push_back(std::move(sj));
  }
  return out;
}

}  // namespace gw::slurm
