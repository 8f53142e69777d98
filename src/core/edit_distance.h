// How far apart two short words are, for "did you mean" answers (an unknown
// command, an unknown finding code).
#ifndef GPUWARDEN_CORE_EDIT_DISTANCE_H_
#define GPUWARDEN_CORE_EDIT_DISTANCE_H_

#include <cstddef>
#include <string_view>

namespace gw {

// Levenshtein distance: the insertions, deletions and substitutions that turn
// `a` into `b`. O(|a|·|b|) time, O(|b|) memory: meant for words.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace gw

#endif  // GPUWARDEN_CORE_EDIT_DISTANCE_H_
