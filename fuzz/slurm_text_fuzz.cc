// fuzz_slurm_text: the readers of Slurm's text output (slurm/): hostlists,
// `slurmd -G`, GRES index lists, sbatch --parsable, `scontrol -o show job`
// records, sprio and `scontrol show assoc_mgr`. Job and account names in it
// are any user's. Invariants: a hostlist expands to at most the names asked
// for, none empty, and a plain name to itself; a GRES index list is read in
// order without duplicates of a range; a job id is positive; the devices of
// one GRES name take consecutive indexes from 0; every error has a
// documented code and a message. Messages quote Slurm's text raw: their
// printers sanitise (cli/cluster_command.cc), so one line is not asked here.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "fuzz/fuzz_check.h"
#include "slurm/assoc_mgr.h"
#include "slurm/hostlist.h"
#include "slurm/node_jobs.h"
#include "slurm/sbatch.h"
#include "slurm/slurm_json.h"
#include "slurm/sprio.h"

namespace {

template <typename T>
void CheckRejected(const gw::Result<T>& r, std::initializer_list<std::string_view> codes,
                   const char* what) {
  if (r.ok()) return;
  bool known = false;
  for (std::string_view c : codes) known = known || r.error().code == c;
  GW_FUZZ_CHECK(known, std::string(what) + ": " + r.error().code);
  GW_FUZZ_CHECK(!r.error().message.empty(), what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string_view text = fuzz::AsText(data, size);
  const std::string_view first_line = text.substr(0, text.find('\n'));

  constexpr size_t kMaxNames = 4096;
  Result<std::vector<std::string>> hosts = slurm::ExpandHostlist(first_line, kMaxNames);
  CheckRejected(hosts, {"bad_hostlist"}, "hostlist");
  if (hosts.ok()) {
    GW_FUZZ_CHECK(hosts->size() <= kMaxNames, std::to_string(hosts->size()));
    for (const std::string& h : *hosts) GW_FUZZ_CHECK(!h.empty(), "an empty host name");
    const bool plain = first_line.find_first_of("[],") == std::string_view::npos;
    if (plain && !first_line.empty() && first_line != "(null)") {
      GW_FUZZ_CHECK(hosts->size() == 1 && (*hosts)[0] == first_line, std::string(first_line));
    }
  }

  Result<std::vector<slurm::GresDevice>> devices = slurm::ParseSlurmdGres(text);
  CheckRejected(devices, {"malformed"}, "slurmd -G");
  if (devices.ok()) {
    std::map<std::string, unsigned> next;
    for (const slurm::GresDevice& d : *devices) {
      GW_FUZZ_CHECK(d.index == next[d.name]++, "GRES index is the place among its name");
    }
  }

  CheckRejected(slurm::ParseGresIndexes(first_line), {"malformed"}, "GRES indexes");
  CheckRejected(slurm::ParseGresList(first_line), {"malformed"}, "gres list");
  CheckRejected(slurm::ParseGresRequests(first_line), {"malformed"}, "gres requests");

  Result<int64_t> id = slurm::ParseSbatchJobId(text);
  CheckRejected(id, {"malformed"}, "sbatch --parsable");
  if (id.ok()) GW_FUZZ_CHECK(*id > 0, std::to_string(*id));

  for (const auto& [key, value] : slurm::ParseScontrolRecord(first_line)) {
    GW_FUZZ_CHECK(!key.empty(), "an empty scontrol key");
  }

  Result<std::vector<slurm::PriorityFactors>> sprio = slurm::ParseSprio(text);
  CheckRejected(sprio, {"malformed"}, "sprio");
  if (sprio.ok()) {
    for (const slurm::PriorityFactors& f : *sprio) (void)slurm::DescribeFactors(f);
  }

  Result<slurm::AssocMgrState> assoc = slurm::ParseAssocMgr(text);
  CheckRejected(assoc, {"malformed"}, "assoc_mgr");
  if (assoc.ok()) {
    // The parent chain must end, whatever parents the records name.
    GW_FUZZ_CHECK(assoc->Chain("a", "u").size() <= assoc->associations.size(), "chain");
    for (const slurm::AssocRecord& r : assoc->associations) {
      GW_FUZZ_CHECK(
          assoc->Chain(r.account, r.user.value_or("")).size() <= assoc->associations.size(),
          "chain");
    }
  }
  return 0;
}
