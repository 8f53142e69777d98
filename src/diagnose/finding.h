// The diagnosis model: what a rule found, how bad it is, what it means for the
// GPU's verdict and who has to act. Plain values; no I/O.
#ifndef GPUWARDEN_DIAGNOSE_FINDING_H_
#define GPUWARDEN_DIAGNOSE_FINDING_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace gw::diagnose {

enum class Severity { kInfo, kWarning, kCritical };

// What kind of problem. The first five are about capacity and the people and
// settings around it ("resource shortage"); the rest are about the driver and
// the hardware ("fault").
enum class Category {
  kShortage,       // Not enough free memory, for anyone or for a stated need.
  kContention,     // Compute shared by several jobs.
  kHolder,         // A process holds GPU resources: idle, orphaned, zombie, hidden.
  kConfiguration,  // A setting (compute mode, MIG, persistence, CUDA_VISIBLE_DEVICES).
  kApplication,    // An application fault (application Xids).
  kEngine,         // A GPU engine (copy, video, JPEG, graphics) raised an exception running work.
  kDriver,         // The driver or NVML: not loaded, mismatch, timeouts.
  kMemory,         // ECC, page retirement, row remapping.
  kBus,            // PCIe and "fell off the bus".
  kThermal,
  kPower,
  kNvlink,
  kHardware,  // Other hardware faults (HW slowdown, fatal Xids).
};

// The verdict on a GPU or on the server, from bad to good:
// kFault > kDegraded > kBusy = kReclaimable > kUnknown > kOk.
enum class Verdict {
  kOk,           // Usable; nothing stands in the way.
  kBusy,         // Genuinely in use: the shortage is real work.
  kReclaimable,  // Busy, but the capacity is held by idle, orphaned, zombie or hidden holders.
  kDegraded,     // Works, but not at full health (slowdown, pending repair, link down).
  kFault,        // Broken: lost, driver dead, uncorrectable memory errors.
  kUnknown,      // We could not look (no permission, no driver library, no data).
  // The server only, with a stated need: it can never be placed here, even
  // with every GPU empty and healthy (too few GPUs, too small, no NVLink set).
  kNeverFits,
};

// What a GPU is doing now, in words that mean what they say (docs/diagnosis.md
// "GPU states"). Besides the verdict: a GPU in use with room left is OK for new
// work, and so is a free one, but only the free one is counted as free.
enum class GpuState {
  kFree,         // No work seen and memory essentially free.
  kInUse,        // Work running, with room left (free memory and compute headroom).
  kBusy,         // Memory full or compute saturated by working processes, or closed to new work.
  kReclaimable,  // Would be busy (or is mostly held), but its holders do no work.
  kDegraded,
  kFault,
  kUnknown,  // Could not be read: never healthy, never free.
};

// Who must act on a finding.
enum class Actor {
  kUser,    // The person asking: change the request or the environment.
  kOwner,   // The owner of the process(es) named in the finding.
  kAdmin,   // The server's administrator (root).
  kVendor,  // NVIDIA / the hardware vendor (RMA).
};

// One fact behind a finding, for a person and for a machine. `value` is text
// with units ("79.1 GiB of 80.0 GiB (98.9 %)"); `number` and `unit` carry the
// main number ("bytes", "%", "C", "W", "s", "count", ...) for JSON, when there
// is one.
struct Evidence {
  std::string name;
  std::string value;
  Opt<double> number;
  std::string unit;
};

// What one rule found. `code`, severity, category, implies and actor come from
// the catalog (catalog.h) and are fixed per code. `message` and evidence name
// processes and users; text that came from other processes is already
// sanitised for a terminal (gw::SanitizeForTerminal).
struct Finding {
  std::string code;
  Severity severity = Severity::kInfo;
  Category category = Category::kShortage;
  Verdict implies = Verdict::kOk;
  Actor actor = Actor::kUser;
  std::vector<unsigned> gpus;  // GPU indices it is about; empty = the whole server.
  std::vector<pid_t> pids;     // Processes it is about, ascending.
  std::string message;         // One line: what, where, how much.
  std::vector<Evidence> evidence;
  std::vector<std::string> next_steps;  // Concrete: commands with the GPU/PID filled in.
  // Ranks findings of the same verdict and severity: GiB concerned for memory
  // findings (held, reclaimable, missing), otherwise the number of GPUs
  // affected. Higher first.
  double impact = 0;
};

// Stable lower-case words, for JSON and logs: "info", "shortage", "busy", "admin", ...
std::string_view SeverityName(Severity severity);
std::string_view CategoryName(Category category);
std::string_view VerdictName(Verdict verdict);  // Upper case: "OK", "BUSY", "FAULT", ...
std::string_view GpuStateName(GpuState state);  // "free", "in_use", "busy", ...
std::string_view ActorName(Actor actor);

// How bad a verdict is, for "the worst wins": Ok 0, Unknown 1, Busy,
// Reclaimable and NeverFits 2, Degraded 3, Fault 4.
int VerdictRank(Verdict verdict);

// The machine number of the evidence called `name`, if the finding has it.
Opt<double> EvidenceNumber(const Finding& finding, std::string_view name);

// A finding's message without its leading subject, for lines that already
// name the GPU: "GPU 3 fell off the bus" and "GPU 3 (PCI 0000:bb:00) fell
// off the bus" -> "fell off the bus", "GPU 1's PCIe link runs ..." -> "PCIe
// link runs ...". Other messages unchanged.
std::string MessageWithoutSubject(const std::string& message, unsigned gpu);

// Evidence names that holder findings share, read by the verdict.
inline constexpr std::string_view kHeldEvidence = "held";  // Bytes held on finding.gpus[0].

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_FINDING_H_
