// The catalog: one table of every finding code gpuwarden can report, with its
// fixed severity, category, implied verdict, who acts, a title, the next steps
// and a long explanation (`gpuwarden why --explain CODE`).
//
// Codes are stable: scripts match on them. Add new codes, never rename one.
// docs/diagnosis.md documents every code (a test checks it).
#ifndef GPUWARDEN_DIAGNOSE_CATALOG_H_
#define GPUWARDEN_DIAGNOSE_CATALOG_H_

#include <sys/types.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/finding.h"

namespace gw::diagnose {

// Where a finding's category comes from.
enum class CategorySource {
  kFixed,     // FindingSpec::category, for every finding of the code.
  kXidCause,  // The cause class of the Xid the finding reports (kmsg::XidInfo::cause, mapped
              // by XidCategory in rules_xid.h): XID_FATAL about Xid 74 is nvlink, about Xid
              // 119 driver, about Xid 48 memory. FindingSpec::category is then the category
              // of an Xid of unknown cause (hardware).
};

struct FindingSpec {
  std::string_view code;  // UPPER_SNAKE_CASE.
  Severity severity;
  Category category;
  Verdict implies;
  Actor actor;
  std::string_view title;  // One line, no trailing period.
  // Steps, one per line ('\n'). Placeholders filled per finding: <gpu> (GPU
  // index or comma list), <pid>, <ppid>, <pgid>, <gpus> (a suggested GPU
  // list), <need> (the --need text), <job> (a Slurm job id). A step whose placeholder the finding
  // cannot fill is left out. Steps starting "admin:" need root; "vendor:"
  // means a support case.
  std::string_view next_steps;
  std::string_view explanation;  // Paragraphs separated by blank lines.
  CategorySource category_source = CategorySource::kFixed;
};

// Every spec, in catalog order (grouped by theme).
std::span<const FindingSpec> AllSpecs();

// The spec for `code`, or nullptr.
const FindingSpec* FindSpec(std::string_view code);

// Values for the placeholders of FindingSpec::next_steps.
struct StepValues {
  std::optional<std::string> gpu = std::nullopt;
  std::optional<pid_t> pid = std::nullopt;
  std::optional<pid_t> ppid = std::nullopt;
  std::optional<pid_t> pgid = std::nullopt;
  std::optional<std::string> gpus = std::nullopt;
  std::optional<std::string> need = std::nullopt;
  std::optional<std::string> job = std::nullopt;
};

// The spec's steps with the placeholders filled; steps naming a placeholder
// without a value are dropped.
std::vector<std::string> ExpandSteps(const FindingSpec& spec, const StepValues& values);

// The steps as written in the catalog, placeholders kept (for --explain and docs).
std::vector<std::string> SplitSteps(std::string_view next_steps);

// The placeholders ExpandSteps knows, for the completeness test.
std::span<const std::string_view> KnownPlaceholders();

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_CATALOG_H_
