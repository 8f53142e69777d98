// Slurm hostlist expressions ("n[1-3,5]", "gpu-a[01-02]-ib,login1"), expanded
// to node names in Slurm's order. Pure.
#ifndef GPUWARDEN_SLURM_HOSTLIST_H_
#define GPUWARDEN_SLURM_HOSTLIST_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gw::slurm {

// "n[1-2],m3" -> {"n1", "n2", "m3"}. Ranges keep their zero padding
// ("[08-10]" -> 08, 09, 10); several bracket groups multiply out
// ("r[1-2]n[1-2]" -> r1n1, r1n2, r2n1, r2n2). "" and "(null)" are the empty
// list. Errors ("bad_hostlist", naming the expression): an unbalanced or
// empty bracket, a range that runs backwards, more than max_names names.
Result<std::vector<std::string>> ExpandHostlist(std::string_view expression,
                                                size_t max_names = 1u << 20);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_HOSTLIST_H_
