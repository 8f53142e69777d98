// `sprio`: the factors that make up each pending job's priority under
// priority/multifactor, weighted as Slurm adds them. `why --slurm` shows them
// for a job that waits on Priority and for the jobs ahead of it. Pure.
#ifndef GPUWARDEN_SLURM_SPRIO_H_
#define GPUWARDEN_SLURM_SPRIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gw::slurm {

// The format asked of sprio (-h -o): id, user, partition, priority, then the
// weighted factors; TRES last, as its value holds commas.
inline constexpr std::string_view kSprioFormat = "%i|%u|%r|%Y|%S|%A|%B|%F|%J|%P|%Q|%N|%T";

// One row: a job in one partition (a job submitted to several has a row for
// each).
struct PriorityFactors {
  int64_t job_id = 0;
  std::string user;
  std::string partition;
  double priority = 0;
  double site = 0;
  double age = 0;
  double association = 0;
  double fairshare = 0;
  double job_size = 0;
  double partition_factor = 0;
  double qos = 0;
  double nice = 0;   // subtracted
  std::string tres;  // "gres/gpu=100,cpu=5", "" when none
};

// sprio's lines in kSprioFormat. Error "malformed" naming the line when it
// has not 13 fields or a number is not one.
Result<std::vector<PriorityFactors>> ParseSprio(std::string_view text);

// The factors that count, largest first: "QOS 10000 + partition 1000";
// "every factor is 0" when none does.
std::string DescribeFactors(const PriorityFactors& factors);

// A figure of sprio or the association manager: whole numbers bare ("1000"),
// others with two places ("0.60").
std::string FormatFigure(double value);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_SPRIO_H_
