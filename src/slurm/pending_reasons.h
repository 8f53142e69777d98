// The one catalog of Slurm's pending-job reasons (`squeue -o %r`): every code
// of Slurm 22.05 (job_reason_string() of libslurm, 197 distinct strings) with
// what it means in plain words, what kind of wait it is, and what to do.
// Codes of later Slurm versions that are not here are shown verbatim
// (FindPendingReason returns nullptr). The completeness test checks the
// catalog against the installed Slurm's own list.
#ifndef GPUWARDEN_SLURM_PENDING_REASONS_H_
#define GPUWARDEN_SLURM_PENDING_REASONS_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gw::slurm {

// What kind of wait a reason is, for the one-word summary and the exit code
// of `why --slurm`.
enum class WaitKind {
  kNotYetLooked,   // None: Slurm has not evaluated the job in this cycle
  kResources,      // Resources: what it asks for is in use (or fragmented)
  kPriority,       // Priority: jobs ahead of it
  kLimit,          // a QOS, association or account limit that running jobs fill
  kTime,           // BeginTime, a deadline
  kDependency,     // waits for other jobs
  kHeld,           // held by its user or an administrator
  kNodes,          // nodes it needs are down, drained, reserved or missing
  kPartition,      // its partition is down or inactive
  kReservation,    // waits for a reservation
  kOtherResource,  // licenses, burst buffers, power
  kStarting,       // being set up: prolog, cleanup of a requeue, deferred scheduling
  kNeverAsAsked,   // the request breaks a limit or the configuration: it cannot start as submitted
  kEnded,          // a reason of a job that ended (exit code, time limit, out of memory)
  kObsolete,       // codes of features Slurm no longer has
};
const char* WaitKindName(WaitKind kind);  // "resources", "limit", "never as asked", ...

// Whether the wait ends by itself (jobs end, time passes), needs someone to
// act (release, resume, an administrator's change), or never as submitted.
enum class Outlook { kByItself, kNeedsSomeone, kNever, kNotWaiting };
const char* OutlookName(Outlook outlook);  // "by itself", "needs someone", ...

// What a limit reason (WaitKind::kLimit, or kNeverAsAsked for a per-job
// maximum) limits, parsed from its code: "QOSMaxGRESPerUser" is the QOS's
// maximum of GRES per user. The explainer looks the limit and its usage up by
// it (slurm/assoc_mgr.h).
struct LimitSpec {
  enum Scope { kQos, kAssociation, kAccountOfQos };
  enum Kind { kGroup, kMax, kMin };
  enum Resource {
    kCpu,
    kMemory,
    kNode,
    kGres,
    kLicense,
    kBurstBuffer,
    kEnergy,
    kBilling,
    kUnknownTres,
    kJobs,
    kSubmitJobs,
    kWall
  };
  enum Measure { kAmount, kMinutes, kRunMinutes };
  enum Per { kAll, kPerJob, kPerNode, kPerUser, kPerAccount };
  Scope scope;
  Kind kind;
  Resource resource;
  Measure measure;
  Per per;
};

struct PendingReason {
  std::string code;  // Slurm's string, exactly: "QOSMaxGRESPerUser"
  WaitKind kind;
  Outlook outlook;
  std::string meaning;             // one or two sentences
  std::string next;                // what the user can do
  std::optional<LimitSpec> limit;  // for the limit family only
};

// Every catalogued reason, in Slurm 22.05's enum order.
std::span<const PendingReason> AllPendingReasons();

// The reason with exactly this code, or nullptr (a code of a later Slurm).
const PendingReason* FindPendingReason(std::string_view code);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_PENDING_REASONS_H_
