#include "slurm/pending_reasons.h"

#include <unordered_map>
#include <vector>

namespace gw::slurm {
namespace {

// The limit family: QOS{Grp,Max,Min}<resource>[Minutes|RunMinutes][PerJob|
// PerNode|PerUser]Limit, the same for associations (Assoc...), and the QOS's
// per-account limits (Max<resource>PerAccount). One row per code below; the
// sentence is composed from the row's parts so that 143 codes say the same
// thing the same way.
using enum LimitSpec::Scope;
using enum LimitSpec::Kind;
using enum LimitSpec::Resource;
using enum LimitSpec::Measure;
using enum LimitSpec::Per;
using Resource = LimitSpec::Resource;
using Scope = LimitSpec::Scope;

struct LimitRow {
  const char* code;
  LimitSpec spec;
};

#define L(code, scope, kind, resource, measure, per)        \
  LimitRow {                                                \
    code, LimitSpec { scope, kind, resource, measure, per } \
  }

const char* ResourceWords(Resource r) {
  switch (r) {
    case kCpu:
      return "CPUs";
    case kMemory:
      return "memory";
    case kNode:
      return "nodes";
    case kGres:
      return "GPUs or other generic resources (GRES)";
    case kLicense:
      return "licenses";
    case kBurstBuffer:
      return "burst buffer space";
    case kEnergy:
      return "energy";
    case kBilling:
      return "billing units";
    case kUnknownTres:
      return "a trackable resource this Slurm has no name for";
    case kJobs:
      return "running jobs";
    case kSubmitJobs:
      return "queued jobs (running and waiting)";
    case kWall:
      return "wall-clock time";
  }
  return "resources";
}

const char* ScopeWords(Scope s) {
  switch (s) {
    case kQos:
      return "The job's QOS";
    case kAssociation:
      return "The job's association (its account and user)";
    case kAccountOfQos:
      return "The job's QOS, per account,";
  }
  return "A limit";
}

const char* SlurmKey(const LimitSpec& r) {
  if (r.resource == kJobs) return r.kind == kGroup ? "GrpJobs" : "MaxJobs";
  if (r.resource == kSubmitJobs) return r.kind == kGroup ? "GrpSubmitJobs" : "MaxSubmitJobs";
  if (r.resource == kWall) return r.kind == kGroup ? "GrpWall" : "MaxWall";
  if (r.kind == kMin) return "MinTRESPerJob";
  if (r.kind == kGroup) {
    return r.measure == kMinutes      ? "GrpTRESMins"
           : r.measure == kRunMinutes ? "GrpTRESRunMins"
                                      : "GrpTRES";
  }
  switch (r.per) {
    case kPerJob:
      return r.measure == kMinutes ? "MaxTRESMinsPerJob" : "MaxTRESPerJob";
    case kPerNode:
      return "MaxTRESPerNode";
    case kPerUser:
      return "MaxTRESPerUser";
    case kPerAccount:
      return "MaxTRESPerAccount";
    case kAll:
      break;
  }
  return "MaxTRES";
}

PendingReason FromLimit(const LimitRow& row) {
  const LimitSpec& r = row.spec;
  PendingReason p{row.code, WaitKind::kLimit, Outlook::kByItself, "", "", row.spec};
  const std::string what = ResourceWords(r.resource);
  const std::string scope = ScopeWords(r.scope);
  const std::string key = std::string(" (") + SlurmKey(r) + ")";
  const std::string show =
      r.scope == kAssociation
          ? "`sacctmgr show assoc user=$USER format=account,user,grptres,maxtres,grpjobs,maxjobs`"
          : "`sacctmgr show qos format=name,grptres,maxtrespu,maxtrespj,maxjobspu`";
  if (r.kind == kMin) {
    p.kind = WaitKind::kNeverAsAsked;
    p.outlook = Outlook::kNever;
    p.meaning = scope + " sets a minimum of " + what + " per job" + key +
                ", and this job asks for less: it cannot start as submitted.";
    p.next = "Ask for more, or submit it under another QOS; the limits: " + show + ".";
    return p;
  }
  if (r.kind == kGroup) {
    if (r.measure == kMinutes) {
      p.outlook = Outlook::kNeedsSomeone;
      p.meaning = scope + " has used up its budget of " + what + " × minutes" + key +
                  ": no new job starts under it until the usage decays or an administrator "
                  "raises or resets the budget.";
      p.next =
          "Ask an administrator about the budget, or submit under another account or QOS; "
          "the limits: " +
          show + ".";
      return p;
    }
    if (r.measure == kRunMinutes) {
      p.meaning = scope + " caps the " + what + " × time left of all its running jobs together" +
                  key + ", and they are at the cap: the job starts as they run down or end.";
      p.next =
          "Wait, or ask for less time (--time) so that it fits under the cap sooner; the "
          "limits: " +
          show + ".";
      return p;
    }
    p.meaning = scope + " caps the " + what + " of all its running jobs together" + key +
                ", and they already hold that much: the job starts when some of them end.";
    p.next =
        "Wait for the group's running jobs to end (`squeue -A ACCOUNT` or `squeue -q QOS`); "
        "the limits: " +
        show + ".";
    return p;
  }
  // kMax
  if (r.per == kPerJob || r.per == kPerNode || r.resource == kWall) {
    p.kind = WaitKind::kNeverAsAsked;
    p.outlook = Outlook::kNever;
    const std::string per = r.resource == kWall ? " for one job"
                            : r.per == kPerNode ? " per node"
                                                : " per job";
    const std::string measure = r.measure == kMinutes ? " × minutes of its time limit" : "";
    p.meaning = scope + " sets a maximum of " + what + measure + per + key +
                ", and this job asks for more: it cannot start as submitted.";
    p.next = std::string(r.measure == kMinutes || r.resource == kWall
                             ? "Ask for less, or a shorter --time"
                             : "Ask for less") +
             " (scontrol update job=ID ...), or submit it under another QOS or account; the "
             "limits: " +
             show + ".";
    return p;
  }
  const std::string whose = r.per == kPerAccount ? "the account's" : "your";
  p.meaning = scope + " sets a maximum of " + what +
              (r.per == kPerAccount ? " per account"
               : r.per == kPerUser  ? " per user"
                                    : "") +
              " at once" + key + ", and " + whose +
              " running jobs already hold that much: the job starts when some of them end.";
  p.next = "Wait for " + whose +
           " running jobs to end (`squeue -u $USER`), or cancel one; "
           "the limits: " +
           show + ".";
  return p;
}

const LimitRow kLimitRows[] = {
    L("QOSGrpCpuLimit", kQos, kGroup, kCpu, kAmount, kAll),
    L("QOSGrpCPUMinutesLimit", kQos, kGroup, kCpu, kMinutes, kAll),
    L("QOSGrpCPURunMinutesLimit", kQos, kGroup, kCpu, kRunMinutes, kAll),
    L("QOSGrpJobsLimit", kQos, kGroup, kJobs, kAmount, kAll),
    L("QOSGrpMemLimit", kQos, kGroup, kMemory, kAmount, kAll),
    L("QOSGrpNodeLimit", kQos, kGroup, kNode, kAmount, kAll),
    L("QOSGrpSubmitJobsLimit", kQos, kGroup, kSubmitJobs, kAmount, kAll),
    L("QOSGrpWallLimit", kQos, kGroup, kWall, kAmount, kAll),
    L("QOSMaxCpuPerJobLimit", kQos, kMax, kCpu, kAmount, kPerJob),
    L("QOSMaxCpuMinutesPerJobLimit", kQos, kMax, kCpu, kMinutes, kPerJob),
    L("QOSMaxNodePerJobLimit", kQos, kMax, kNode, kAmount, kPerJob),
    L("QOSMaxWallDurationPerJobLimit", kQos, kMax, kWall, kAmount, kPerJob),
    L("QOSMaxCpuPerUserLimit", kQos, kMax, kCpu, kAmount, kPerUser),
    L("QOSMaxJobsPerUserLimit", kQos, kMax, kJobs, kAmount, kPerUser),
    L("QOSMaxNodePerUserLimit", kQos, kMax, kNode, kAmount, kPerUser),
    L("QOSMaxSubmitJobPerUserLimit", kQos, kMax, kSubmitJobs, kAmount, kPerUser),
    L("QOSMinCpuNotSatisfied", kQos, kMin, kCpu, kAmount, kAll),
    L("AssocGrpCpuLimit", kAssociation, kGroup, kCpu, kAmount, kAll),
    L("AssocGrpCPUMinutesLimit", kAssociation, kGroup, kCpu, kMinutes, kAll),
    L("AssocGrpCPURunMinutesLimit", kAssociation, kGroup, kCpu, kRunMinutes, kAll),
    L("AssocGrpJobsLimit", kAssociation, kGroup, kJobs, kAmount, kAll),
    L("AssocGrpMemLimit", kAssociation, kGroup, kMemory, kAmount, kAll),
    L("AssocGrpNodeLimit", kAssociation, kGroup, kNode, kAmount, kAll),
    L("AssocGrpSubmitJobsLimit", kAssociation, kGroup, kSubmitJobs, kAmount, kAll),
    L("AssocGrpWallLimit", kAssociation, kGroup, kWall, kAmount, kAll),
    L("AssocMaxCpuPerJobLimit", kAssociation, kMax, kCpu, kAmount, kPerJob),
    L("AssocMaxCpuMinutesPerJobLimit", kAssociation, kMax, kCpu, kMinutes, kPerJob),
    L("AssocMaxNodePerJobLimit", kAssociation, kMax, kNode, kAmount, kPerJob),
    L("AssocMaxWallDurationPerJobLimit", kAssociation, kMax, kWall, kAmount, kPerJob),
    L("AssocMaxSubmitJobLimit", kAssociation, kMax, kSubmitJobs, kAmount, kAll),
    L("AssocGrpUnknown", kAssociation, kGroup, kUnknownTres, kAmount, kAll),
    L("AssocGrpUnknownMinutes", kAssociation, kGroup, kUnknownTres, kMinutes, kAll),
    L("AssocGrpUnknownRunMinutes", kAssociation, kGroup, kUnknownTres, kRunMinutes, kAll),
    L("AssocMaxUnknownPerJob", kAssociation, kMax, kUnknownTres, kAmount, kPerJob),
    L("AssocMaxUnknownPerNode", kAssociation, kMax, kUnknownTres, kAmount, kPerNode),
    L("AssocMaxUnknownMinutesPerJob", kAssociation, kMax, kUnknownTres, kMinutes, kPerJob),
    L("AssocMaxCpuPerNode", kAssociation, kMax, kCpu, kAmount, kPerNode),
    L("AssocGrpMemMinutes", kAssociation, kGroup, kMemory, kMinutes, kAll),
    L("AssocGrpMemRunMinutes", kAssociation, kGroup, kMemory, kRunMinutes, kAll),
    L("AssocMaxMemPerJob", kAssociation, kMax, kMemory, kAmount, kPerJob),
    L("AssocMaxMemPerNode", kAssociation, kMax, kMemory, kAmount, kPerNode),
    L("AssocMaxMemMinutesPerJob", kAssociation, kMax, kMemory, kMinutes, kPerJob),
    L("AssocGrpNodeMinutes", kAssociation, kGroup, kNode, kMinutes, kAll),
    L("AssocGrpNodeRunMinutes", kAssociation, kGroup, kNode, kRunMinutes, kAll),
    L("AssocMaxNodeMinutesPerJob", kAssociation, kMax, kNode, kMinutes, kPerJob),
    L("AssocGrpEnergy", kAssociation, kGroup, kEnergy, kAmount, kAll),
    L("AssocGrpEnergyMinutes", kAssociation, kGroup, kEnergy, kMinutes, kAll),
    L("AssocGrpEnergyRunMinutes", kAssociation, kGroup, kEnergy, kRunMinutes, kAll),
    L("AssocMaxEnergyPerJob", kAssociation, kMax, kEnergy, kAmount, kPerJob),
    L("AssocMaxEnergyPerNode", kAssociation, kMax, kEnergy, kAmount, kPerNode),
    L("AssocMaxEnergyMinutesPerJob", kAssociation, kMax, kEnergy, kMinutes, kPerJob),
    L("AssocGrpGRES", kAssociation, kGroup, kGres, kAmount, kAll),
    L("AssocGrpGRESMinutes", kAssociation, kGroup, kGres, kMinutes, kAll),
    L("AssocGrpGRESRunMinutes", kAssociation, kGroup, kGres, kRunMinutes, kAll),
    L("AssocMaxGRESPerJob", kAssociation, kMax, kGres, kAmount, kPerJob),
    L("AssocMaxGRESPerNode", kAssociation, kMax, kGres, kAmount, kPerNode),
    L("AssocMaxGRESMinutesPerJob", kAssociation, kMax, kGres, kMinutes, kPerJob),
    L("AssocGrpLicense", kAssociation, kGroup, kLicense, kAmount, kAll),
    L("AssocGrpLicenseMinutes", kAssociation, kGroup, kLicense, kMinutes, kAll),
    L("AssocGrpLicenseRunMinutes", kAssociation, kGroup, kLicense, kRunMinutes, kAll),
    L("AssocMaxLicensePerJob", kAssociation, kMax, kLicense, kAmount, kPerJob),
    L("AssocMaxLicenseMinutesPerJob", kAssociation, kMax, kLicense, kMinutes, kPerJob),
    L("AssocGrpBB", kAssociation, kGroup, kBurstBuffer, kAmount, kAll),
    L("AssocGrpBBMinutes", kAssociation, kGroup, kBurstBuffer, kMinutes, kAll),
    L("AssocGrpBBRunMinutes", kAssociation, kGroup, kBurstBuffer, kRunMinutes, kAll),
    L("AssocMaxBBPerJob", kAssociation, kMax, kBurstBuffer, kAmount, kPerJob),
    L("AssocMaxBBPerNode", kAssociation, kMax, kBurstBuffer, kAmount, kPerNode),
    L("AssocMaxBBMinutesPerJob", kAssociation, kMax, kBurstBuffer, kMinutes, kPerJob),
    L("QOSGrpUnknown", kQos, kGroup, kUnknownTres, kAmount, kAll),
    L("QOSGrpUnknownMinutes", kQos, kGroup, kUnknownTres, kMinutes, kAll),
    L("QOSGrpUnknownRunMinutes", kQos, kGroup, kUnknownTres, kRunMinutes, kAll),
    L("QOSMaxUnknownPerJob", kQos, kMax, kUnknownTres, kAmount, kPerJob),
    L("QOSMaxUnknownPerNode", kQos, kMax, kUnknownTres, kAmount, kPerNode),
    L("QOSMaxUnknownPerUser", kQos, kMax, kUnknownTres, kAmount, kPerUser),
    L("QOSMaxUnknownMinutesPerJob", kQos, kMax, kUnknownTres, kMinutes, kPerJob),
    L("QOSMinUnknown", kQos, kMin, kUnknownTres, kAmount, kAll),
    L("QOSMaxCpuPerNode", kQos, kMax, kCpu, kAmount, kPerNode),
    L("QOSGrpMemoryMinutes", kQos, kGroup, kMemory, kMinutes, kAll),
    L("QOSGrpMemoryRunMinutes", kQos, kGroup, kMemory, kRunMinutes, kAll),
    L("QOSMaxMemoryMinutesPerJob", kQos, kMax, kMemory, kMinutes, kPerJob),
    L("QOSMaxMemoryPerJob", kQos, kMax, kMemory, kAmount, kPerJob),
    L("QOSMaxMemoryPerNode", kQos, kMax, kMemory, kAmount, kPerNode),
    L("QOSMaxMemoryPerUser", kQos, kMax, kMemory, kAmount, kPerUser),
    L("QOSMinMemory", kQos, kMin, kMemory, kAmount, kAll),
    L("QOSGrpEnergy", kQos, kGroup, kEnergy, kAmount, kAll),
    L("QOSGrpEnergyMinutes", kQos, kGroup, kEnergy, kMinutes, kAll),
    L("QOSGrpEnergyRunMinutes", kQos, kGroup, kEnergy, kRunMinutes, kAll),
    L("QOSMaxEnergyPerJob", kQos, kMax, kEnergy, kAmount, kPerJob),
    L("QOSMaxEnergyPerNode", kQos, kMax, kEnergy, kAmount, kPerNode),
    L("QOSMaxEnergyPerUser", kQos, kMax, kEnergy, kAmount, kPerUser),
    L("QOSMaxEnergyMinutesPerJob", kQos, kMax, kEnergy, kMinutes, kPerJob),
    L("QOSMinEnergy", kQos, kMin, kEnergy, kAmount, kAll),
    L("QOSGrpNodeMinutes", kQos, kGroup, kNode, kMinutes, kAll),
    L("QOSGrpNodeRunMinutes", kQos, kGroup, kNode, kRunMinutes, kAll),
    L("QOSMaxNodeMinutesPerJob", kQos, kMax, kNode, kMinutes, kPerJob),
    L("QOSMinNode", kQos, kMin, kNode, kAmount, kAll),
    L("QOSGrpGRES", kQos, kGroup, kGres, kAmount, kAll),
    L("QOSGrpGRESMinutes", kQos, kGroup, kGres, kMinutes, kAll),
    L("QOSGrpGRESRunMinutes", kQos, kGroup, kGres, kRunMinutes, kAll),
    L("QOSMaxGRESPerJob", kQos, kMax, kGres, kAmount, kPerJob),
    L("QOSMaxGRESPerNode", kQos, kMax, kGres, kAmount, kPerNode),
    L("QOSMaxGRESPerUser", kQos, kMax, kGres, kAmount, kPerUser),
    L("QOSMaxGRESMinutesPerJob", kQos, kMax, kGres, kMinutes, kPerJob),
    L("QOSMinGRES", kQos, kMin, kGres, kAmount, kAll),
    L("QOSGrpLicense", kQos, kGroup, kLicense, kAmount, kAll),
    L("QOSGrpLicenseMinutes", kQos, kGroup, kLicense, kMinutes, kAll),
    L("QOSGrpLicenseRunMinutes", kQos, kGroup, kLicense, kRunMinutes, kAll),
    L("QOSMaxLicensePerJob", kQos, kMax, kLicense, kAmount, kPerJob),
    L("QOSMaxLicensePerUser", kQos, kMax, kLicense, kAmount, kPerUser),
    L("QOSMaxLicenseMinutesPerJob", kQos, kMax, kLicense, kMinutes, kPerJob),
    L("QOSMinLicense", kQos, kMin, kLicense, kAmount, kAll),
    L("QOSGrpBB", kQos, kGroup, kBurstBuffer, kAmount, kAll),
    L("QOSGrpBBMinutes", kQos, kGroup, kBurstBuffer, kMinutes, kAll),
    L("QOSGrpBBRunMinutes", kQos, kGroup, kBurstBuffer, kRunMinutes, kAll),
    L("QOSMaxBBPerJob", kQos, kMax, kBurstBuffer, kAmount, kPerJob),
    L("QOSMaxBBPerNode", kQos, kMax, kBurstBuffer, kAmount, kPerNode),
    L("QOSMaxBBPerUser", kQos, kMax, kBurstBuffer, kAmount, kPerUser),
    L("QOSMinBB", kQos, kMin, kBurstBuffer, kAmount, kAll),
    L("MaxBBPerAccount", kAccountOfQos, kMax, kBurstBuffer, kAmount, kPerAccount),
    L("MaxCpuPerAccount", kAccountOfQos, kMax, kCpu, kAmount, kPerAccount),
    L("MaxEnergyPerAccount", kAccountOfQos, kMax, kEnergy, kAmount, kPerAccount),
    L("MaxGRESPerAccount", kAccountOfQos, kMax, kGres, kAmount, kPerAccount),
    L("MaxNodePerAccount", kAccountOfQos, kMax, kNode, kAmount, kPerAccount),
    L("MaxLicensePerAccount", kAccountOfQos, kMax, kLicense, kAmount, kPerAccount),
    L("MaxMemoryPerAccount", kAccountOfQos, kMax, kMemory, kAmount, kPerAccount),
    L("MaxUnknownPerAccount", kAccountOfQos, kMax, kUnknownTres, kAmount, kPerAccount),
    L("MaxJobsPerAccount", kAccountOfQos, kMax, kJobs, kAmount, kPerAccount),
    L("MaxSubmitJobsPerAccount", kAccountOfQos, kMax, kSubmitJobs, kAmount, kPerAccount),
    L("AssocGrpBilling", kAssociation, kGroup, kBilling, kAmount, kAll),
    L("AssocGrpBillingMinutes", kAssociation, kGroup, kBilling, kMinutes, kAll),
    L("AssocGrpBillingRunMinutes", kAssociation, kGroup, kBilling, kRunMinutes, kAll),
    L("AssocMaxBillingPerJob", kAssociation, kMax, kBilling, kAmount, kPerJob),
    L("AssocMaxBillingPerNode", kAssociation, kMax, kBilling, kAmount, kPerNode),
    L("AssocMaxBillingMinutesPerJob", kAssociation, kMax, kBilling, kMinutes, kPerJob),
    L("QOSGrpBilling", kQos, kGroup, kBilling, kAmount, kAll),
    L("QOSGrpBillingMinutes", kQos, kGroup, kBilling, kMinutes, kAll),
    L("QOSGrpBillingRunMinutes", kQos, kGroup, kBilling, kRunMinutes, kAll),
    L("QOSMaxBillingPerJob", kQos, kMax, kBilling, kAmount, kPerJob),
    L("QOSMaxBillingPerNode", kQos, kMax, kBilling, kAmount, kPerNode),
    L("QOSMaxBillingPerUser", kQos, kMax, kBilling, kAmount, kPerUser),
    L("QOSMaxBillingMinutesPerJob", kQos, kMax, kBilling, kMinutes, kPerJob),
    L("MaxBillingPerAccount", kAccountOfQos, kMax, kBilling, kAmount, kPerAccount),
    L("QOSMinBilling", kQos, kMin, kBilling, kAmount, kAll),
};

#undef L

PendingReason R(const char* code, WaitKind kind, Outlook outlook, const char* meaning,
                const char* next) {
  return PendingReason{code, kind, outlook, meaning, next, std::nullopt};
}

std::vector<PendingReason> Build() {
  using K = WaitKind;
  using O = Outlook;
  std::vector<PendingReason> out = {
      R("None", K::kNotYetLooked, O::kByItself,
        "Slurm has not evaluated the job yet in this scheduling cycle (the main scheduler "
        "stopped early; the backfill scheduler will look at it).",
        "Look again in a minute; if it stays, `sdiag` shows how busy the scheduler is."),
      R("Priority", K::kPriority, O::kByItself,
        "Jobs of higher priority wait for the same resources, and this job queues behind them "
        "(backfill may still start it early if it fits into a gap without delaying them).",
        "See who is ahead and why (`sprio -l`, `squeue --start`); a shorter --time helps "
        "backfill start it sooner."),
      R("Dependency", K::kDependency, O::kByItself,
        "The job waits for the jobs named in its --dependency.",
        "`scontrol show job ID` shows the dependency; it starts once they reach the state it "
        "asks for."),
      R("Resources", K::kResources, O::kByItself,
        "What the job asks for (GPUs, CPUs, memory, nodes) is not free now: other jobs hold it, "
        "or it is free only in pieces spread over nodes where the job needs it on one.",
        "Wait for the running jobs named here to end (`squeue --start` has Slurm's estimate), "
        "or ask for fewer GPUs per node or a GPU type that is free."),
      R("PartitionNodeLimit", K::kNeverAsAsked, O::kNever,
        "The job asks for more (or fewer) nodes than its partition allows (MaxNodes, MinNodes), "
        "or for more nodes than the partition has.",
        "Ask for a node count the partition allows (`scontrol show partition`), or use another "
        "partition."),
      R("PartitionTimeLimit", K::kNeverAsAsked, O::kNever,
        "The job's time limit is above its partition's MaxTime.",
        "Ask for a shorter --time (`scontrol update job=ID timelimit=...`), or use another "
        "partition."),
      R("PartitionDown", K::kPartition, O::kNeedsSomeone,
        "The job's partition is DOWN: it accepts jobs but starts none.",
        "Ask an administrator when it comes back (`scontrol show partition`), or submit to "
        "another partition."),
      R("PartitionInactive", K::kPartition, O::kNeedsSomeone,
        "The job's partition is INACTIVE: it starts no job and accepts none.",
        "Ask an administrator, or move the job to another partition."),
      R("JobHeldAdmin", K::kHeld, O::kNeedsSomeone,
        "An administrator holds the job (priority 0): it never starts until released.",
        "Ask an administrator to release it (`scontrol release ID` as root or the operator)."),
      R("BeginTime", K::kTime, O::kByItself,
        "The job's earliest start (--begin) has not come yet. Slurm also sets it after a "
        "requeue — a preemption or a failed launch — and keeps the job back for about two "
        "minutes before it may start again.",
        "`scontrol show job ID` shows EligibleTime and Restarts; it starts by itself after that."),
      R("Licenses", K::kOtherResource, O::kByItself,
        "The licenses the job asks for (--licenses) are all in use.",
        "`scontrol show licenses` shows who holds them; it starts when enough are free."),
      R("AssociationJobLimit", K::kLimit, O::kByItself,
        "The job's association (account and user) has reached its limit on running jobs.",
        "Wait for your running jobs to end; `sacctmgr show assoc user=$USER` shows the limit."),
      R("AssociationResourceLimit", K::kLimit, O::kByItself,
        "The job's association (account and user) has reached a resource limit.",
        "Wait for your running jobs to end; `sacctmgr show assoc user=$USER` shows the limits."),
      R("AssociationTimeLimit", K::kLimit, O::kNeedsSomeone,
        "The job's association (account and user) has reached a time limit.",
        "Ask for less --time, or ask an administrator; `sacctmgr show assoc user=$USER`."),
      R("Reservation", K::kReservation, O::kByItself,
        "The job runs in a reservation (--reservation) that has not started or has no free "
        "resources now.",
        "`scontrol show reservation` shows when it starts and what it holds."),
      R("ReqNodeNotAvail", K::kNodes, O::kNeedsSomeone,
        "A node the job asks for, or needs, cannot be used: it is down, drained, not "
        "responding, or reserved for other jobs.",
        "The nodes and their reasons are listed here (`sinfo -R`); ask an administrator, or "
        "drop the nodes from --nodelist."),
      R("JobHeldUser", K::kHeld, O::kNeedsSomeone,
        "Its user holds the job (`scontrol hold`, or submitted with --hold): it never starts "
        "until released.",
        "Release it: `scontrol release ID`."),
      R("FrontEndDown", K::kNodes, O::kNeedsSomeone,
        "No front-end node is available to launch the job.", "Ask an administrator."),
      R("SchedDefer", K::kStarting, O::kByItself,
        "The scheduler is configured not to place jobs at submit (SchedulerParameters=defer): "
        "it will be placed in the next scheduling cycle.",
        "Wait a scheduling cycle."),
      R("NodeDown", K::kNodes, O::kNeedsSomeone, "A node the job needs, or was given, is DOWN.",
        "The nodes and their reasons are listed here (`sinfo -R`); Slurm requeues the job "
        "elsewhere, or an administrator resumes the node."),
      R("BadConstraints", K::kNeverAsAsked, O::kNever,
        "No node could ever satisfy the job's request (its --constraint, GRES, memory or CPU "
        "count together).",
        "Change the request (`scontrol update job=ID ...`) or cancel it; `sinfo -o \"%N %f %G\"` "
        "shows what the nodes have."),
      R("SystemFailure", K::kEnded, O::kNotWaiting,
        "Slurm, the file system or the network failed under the job.",
        "Resubmit it; tell an administrator if it happens again."),
      R("JobLaunchFailure", K::kEnded, O::kNotWaiting,
        "The job could not be launched on its nodes (a missing program, a failed prolog, a "
        "file system).",
        "`scontrol show job ID` and the node's slurmd log say why; fix it and resubmit."),
      R("NonZeroExitCode", K::kEnded, O::kNotWaiting, "The job ended with a non-zero exit code.",
        "Its output file says why."),
      R("TimeLimit", K::kEnded, O::kNotWaiting, "The job reached its time limit and was stopped.",
        "Ask for more --time, or checkpoint and resume."),
      R("InactiveLimit", K::kEnded, O::kNotWaiting,
        "The job's allocation (salloc, srun) was inactive longer than InactiveLimit.",
        "Keep the allocating command running while the job needs it."),
      R("InvalidAccount", K::kNeverAsAsked, O::kNever,
        "The job's account does not exist, or the user is not in it.",
        "Submit with an account you belong to (`sacctmgr show assoc user=$USER`)."),
      R("InvalidQOS", K::kNeverAsAsked, O::kNever,
        "The job's QOS does not exist, or the job's association may not use it.",
        "Submit with a QOS your association allows (`sacctmgr show assoc user=$USER "
        "format=qos`)."),
      R("QOSUsageThreshold", K::kLimit, O::kNeedsSomeone,
        "The job's QOS has a UsageThreshold, and the association's fair-share usage is past it.",
        "Wait for the usage to decay, or ask an administrator."),
      R("QOSJobLimit", K::kLimit, O::kByItself, "The job's QOS has reached its limit on jobs.",
        "Wait for jobs under the QOS to end; `sacctmgr show qos` shows the limit."),
      R("QOSResourceLimit", K::kLimit, O::kByItself, "The job's QOS has reached a resource limit.",
        "Wait for jobs under the QOS to end; `sacctmgr show qos` shows the limits."),
      R("QOSTimeLimit", K::kLimit, O::kNeedsSomeone, "The job's QOS has reached a time limit.",
        "Ask for less --time, or ask an administrator; `sacctmgr show qos`."),
      R("BlockMaxError", K::kObsolete, O::kNeedsSomeone,
        "A reason of IBM BlueGene systems, which Slurm no longer supports.",
        "Ask an administrator."),
      R("BlockFreeAction", K::kObsolete, O::kNeedsSomeone,
        "A reason of IBM BlueGene systems, which Slurm no longer supports.",
        "Ask an administrator."),
      R("Cleaning", K::kStarting, O::kByItself,
        "The job was requeued and its previous run is still being cleaned up on its nodes.",
        "It waits by itself until the cleanup ends (an epilog, processes stopping)."),
      R("Prolog", K::kStarting, O::kByItself,
        "The job's prolog (PrologSlurmctld) is running; it starts when the prolog ends.",
        "Wait; if it stays long, the prolog hangs: tell an administrator."),
      R("QOSNotAllowed", K::kNeverAsAsked, O::kNever,
        "The job's QOS is not allowed in its partition, or for its association.",
        "Submit with a QOS the partition allows (`scontrol show partition`: AllowQos)."),
      R("AccountNotAllowed", K::kNeverAsAsked, O::kNever,
        "The job's account is not allowed in its partition.",
        "Submit with an account the partition allows (`scontrol show partition`: "
        "AllowAccounts), or to another partition."),
      R("DependencyNeverSatisfied", K::kNeverAsAsked, O::kNever,
        "The job's dependency can never be met (a job it waits for ended in a way the "
        "dependency excludes).",
        "Cancel it, or change the dependency (`scontrol update job=ID dependency=...`)."),
      R("AssocMaxJobsLimit", K::kLimit, O::kByItself,
        "The job's association (its account and user) sets a maximum of running jobs at once "
        "(MaxJobs), and your running jobs reach it: the job starts when one of them "
        "ends.",
        "Wait for one of your running jobs to end (`squeue -u $USER`); the limit: `sacctmgr show "
        "assoc user=$USER format=account,user,maxjobs`."),
      R("JobHoldMaxRequeue", K::kHeld, O::kNeedsSomeone,
        "The job was requeued more often than MaxBatchRequeue allows and is now held.",
        "Find out why its runs failed, then `scontrol release ID`."),
      R("JobArrayTaskLimit", K::kLimit, O::kByItself,
        "The job array's own throttle (--array=...%N) allows no more of its tasks at once.",
        "It starts when a running task of the array ends; `scontrol update job=ID "
        "arraytaskthrottle=N` changes the throttle."),
      R("BurstBufferResources", K::kOtherResource, O::kByItself,
        "The burst buffer space the job asks for is not free.",
        "Wait, or ask for less burst buffer space."),
      R("BurstBufferStageIn", K::kOtherResource, O::kByItself,
        "The job's files are being staged into the burst buffer.",
        "It starts when the stage-in ends."),
      R("BurstBufferOperation", K::kOtherResource, O::kNeedsSomeone,
        "A burst buffer operation for the job failed.",
        "`scontrol show job ID` says which; tell an administrator."),
      R("PowerNotAvail", K::kOtherResource, O::kByItself,
        "Starting the job would take the cluster past its power cap.",
        "Wait for running jobs to end."),
      R("PowerReserved", K::kOtherResource, O::kByItself,
        "The power the job needs is reserved for other jobs.",
        "Wait for the reservation of power to end."),
      R("DeadLine", K::kNeverAsAsked, O::kNever, "The job can no longer end before its --deadline.",
        "Resubmit with a later deadline or a shorter --time."),
      R("PartitionConfig", K::kNeverAsAsked, O::kNever,
        "The job's request does not fit its partition's configuration (the node count, CPUs, "
        "memory or time it allows).",
        "Compare the request with `scontrol show partition`, then change it or the partition."),
      R("AccountingPolicy", K::kLimit, O::kByItself,
        "A limit of the accounting policy holds the job, and Slurm did not name which.",
        "Look at the limits of your association and QOS: `sacctmgr show assoc user=$USER` and "
        "`sacctmgr show qos`."),
      R("FedJobLock", K::kStarting, O::kByItself,
        "In a federation, another cluster holds the lock to start this job.",
        "Wait; it starts on whichever cluster gets the lock."),
      R("OutOfMemory", K::kEnded, O::kNotWaiting,
        "The job used more memory than it was given and was killed.",
        "Ask for more --mem or --mem-per-cpu."),
      R("MaxMemPerLimit", K::kNeverAsAsked, O::kNever,
        "The job asks for more memory per CPU or per node than its partition allows "
        "(MaxMemPerCPU, MaxMemPerNode).",
        "Ask for less memory per CPU or node, or more CPUs."),
      R("ReservationDeleted", K::kNeverAsAsked, O::kNever,
        "The reservation the job was submitted to has been deleted.",
        "Submit it again without --reservation, or with another one."),
  };
  for (const LimitRow& row : kLimitRows) out.push_back(FromLimit(row));
  return out;
}

}  // namespace

const char* WaitKindName(WaitKind kind) {
  switch (kind) {
    case WaitKind::kNotYetLooked:
      return "not yet looked at";
    case WaitKind::kResources:
      return "resources";
    case WaitKind::kPriority:
      return "priority";
    case WaitKind::kLimit:
      return "limit";
    case WaitKind::kTime:
      return "time";
    case WaitKind::kDependency:
      return "dependency";
    case WaitKind::kHeld:
      return "held";
    case WaitKind::kNodes:
      return "nodes";
    case WaitKind::kPartition:
      return "partition";
    case WaitKind::kReservation:
      return "reservation";
    case WaitKind::kOtherResource:
      return "other resource";
    case WaitKind::kStarting:
      return "starting";
    case WaitKind::kNeverAsAsked:
      return "never as asked";
    case WaitKind::kEnded:
      return "ended";
    case WaitKind::kObsolete:
      return "obsolete";
  }
  return "unknown";
}

const char* OutlookName(Outlook outlook) {
  switch (outlook) {
    case Outlook::kByItself:
      return "by itself";
    case Outlook::kNeedsSomeone:
      return "needs someone";
    case Outlook::kNever:
      return "never as submitted";
    case Outlook::kNotWaiting:
      return "not waiting";
  }
  return "unknown";
}

std::span<const PendingReason> AllPendingReasons() {
  static const std::vector<PendingReason> kAll = Build();
  return kAll;
}

const PendingReason* FindPendingReason(std::string_view code) {
  static const std::unordered_map<std::string_view, const PendingReason*> kByCode = [] {
    std::unordered_map<std::string_view, const PendingReason*> m;
    for (const PendingReason& r : AllPendingReasons()) m.emplace(r.code, &r);
    return m;
  }();
  auto it = kByCode.find(code);
  return it == kByCode.end() ? nullptr : it->second;
}

}  // namespace gw::slurm
