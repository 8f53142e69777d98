// slurmctld's association manager, as `scontrol -o show assoc_mgr
// flags=assoc,qos` prints it: every association (cluster, account, user) and
// every QOS with each limit beside its current usage, "GrpTRES=...,gres/gpu=3(2)"
// (limit 3, 2 in use; "N" for no limit). This is what a QOS or association
// limit reason is checked against, so `why --slurm` reads the limit and the
// usage from here rather than from sacctmgr (the database's configuration,
// without usage). Pure.
#ifndef GPUWARDEN_SLURM_ASSOC_MGR_H_
#define GPUWARDEN_SLURM_ASSOC_MGR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "slurm/pending_reasons.h"

namespace gw::slurm {

// "3(2)": limit 3, usage 2. "N(2)": no limit. "" (a key with no value): not
// shown, both nullopt.
struct LimitValue {
  std::optional<double> limit;
  std::optional<double> used;
};

// The limits of one record (or of one user or account under a QOS). Scalar
// keys ("GrpJobs", "MaxJobsPU") and TRES keys ("GrpTRES", "MaxTRESPU") with
// one value per TRES name ("cpu", "gres/gpu", "license/matlab").
struct LimitSet {
  std::map<std::string, LimitValue> scalars;
  std::map<std::string, std::map<std::string, LimitValue>> tres;

  // nullptr when the key (or the TRES under it) is absent.
  const LimitValue* Scalar(std::string_view key) const;
  const LimitValue* Tres(std::string_view key, std::string_view tres_name) const;
};

struct AssocRecord {
  std::string account;
  std::optional<std::string> user;  // nullopt: the account's own record
  std::optional<int64_t> uid;       // "UserName=root(0)"
  std::optional<std::string> partition;
  std::optional<int64_t> id;
  std::optional<std::string> parent_account;  // nullopt for a user record and the root
  std::optional<int64_t> parent_id;
  LimitSet limits;
};

struct QosRecord {
  std::string name;
  LimitSet limits;                           // the QOS as a whole (Grp*, Max*PJ, Max*PN)
  std::map<std::string, LimitSet> accounts;  // "Account Limits": by account name (Max*PA)
  std::map<int64_t, LimitSet> users;         // "User Limits": by uid (Max*PU)
};

struct AssocMgrState {
  std::vector<AssocRecord> associations;
  std::vector<QosRecord> qos;

  const QosRecord* FindQos(std::string_view name) const;
  // The records a job of (account, user) is limited by, nearest first: its
  // user record, its account's record, then the parent accounts up to root.
  std::vector<const AssocRecord*> Chain(std::string_view account, std::string_view user) const;
};

// The whole output of `scontrol -o show assoc_mgr flags=assoc,qos` (22.05:
// a "Current Association Manager state" line, then "Association Records" and
// "QOS Records", one record per line). Records of other kinds ("User
// Records") are skipped. Error "malformed" naming the line when a record has
// no account or QOS name, or a limit that is not "L(U)".
Result<AssocMgrState> ParseAssocMgr(std::string_view text);

// Where a limit reason's limit is kept in the association manager.
struct LimitLocation {
  enum Block { kRecord, kPerUser, kPerAccount };
  Block block = kRecord;
  std::string key;   // "MaxTRESPU", "GrpJobs"
  bool tres = true;  // a TRES list (look the TRES up under key) or a scalar
};
LimitLocation LocateLimit(const LimitSpec& spec);

// The TRES name of a TRES limit, for the job's GRES name when it is one:
// "cpu", "mem", "node", "gres/gpu", "billing", "energy"; "" for licenses,
// burst buffers and TRES without a name (then every limited entry is shown).
std::string TresName(LimitSpec::Resource resource, std::string_view gres_name);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_ASSOC_MGR_H_
