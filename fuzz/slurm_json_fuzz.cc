// fuzz_slurm_json: `sinfo --json` and `squeue --json` of every layout
// gpuwarden reads (slurm/slurm_json.h); job names, comments and reasons are
// any user's text. Invariants: an accepted document's states are upper case
// as documented and its GRES counts are not negative; a rejected one is
// "malformed" with a one-line message (naming the field's path; the reader
// adds the command).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "slurm/slurm_json.h"

namespace {

bool UpperCase(const std::string& s) {
  for (char c : s) {
    if (c >= 'a' && c <= 'z') return false;
  }
  return true;
}

void CheckGres(const std::vector<gw::slurm::Gres>& list) {
  for (const gw::slurm::Gres& g : list) GW_FUZZ_CHECK(g.count >= 0, std::to_string(g.count));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view text = fuzz::AsText(data, size);

  Result<slurm::SinfoDocument> sinfo = slurm::ParseSinfoJson(text);
  if (!sinfo.ok()) {
    fuzz::CheckError(sinfo.error(), {"malformed"}, "", "sinfo --json");
  } else {
    for (const slurm::Node& n : sinfo->nodes) {
      if (n.state) GW_FUZZ_CHECK(UpperCase(*n.state), *n.state);
      for (const std::string& f : n.state_flags) GW_FUZZ_CHECK(UpperCase(f), f);
      if (n.gres) CheckGres(*n.gres);
      if (n.gres_used) CheckGres(*n.gres_used);
    }
  }

  Result<slurm::SqueueDocument> squeue = slurm::ParseSqueueJson(text);
  if (!squeue.ok()) {
    fuzz::CheckError(squeue.error(), {"malformed"}, "", "squeue --json");
  } else {
    for (const slurm::Job& j : squeue->jobs) {
      if (j.state) GW_FUZZ_CHECK(UpperCase(*j.state), *j.state);
      for (const std::string& f : j.state_flags) GW_FUZZ_CHECK(UpperCase(f), f);
      for (const auto& node : j.gres_detail) CheckGres(node);
      for (const slurm::GresRequest& r : j.gres_per_node) GW_FUZZ_CHECK(r.count >= 0, "count");
      for (const slurm::GresRequest& r : j.gres_per_job) GW_FUZZ_CHECK(r.count >= 0, "count");
    }
  }
  return 0;
}
