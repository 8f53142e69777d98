// `gpuwarden why --explain CODE`: the long explanation of a finding code,
// from the catalog (diagnose/catalog.h).
#ifndef GPUWARDEN_RENDER_EXPLAIN_H_
#define GPUWARDEN_RENDER_EXPLAIN_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gw::render {

// Columns the explanation is wrapped to.
inline constexpr int kExplainWidth = 80;

// The explanation, '\n'-terminated lines: `CODE — title`; severity, category,
// the verdict it implies and who acts; "What triggers it" (the first paragraph
// of the catalog's explanation); "What to do" (the steps, placeholders as
// written); "Explanation" (the remaining paragraphs). `code` is matched
// case-insensitively. An unknown code is Error{"not_found"} naming it (sanitised)
// and listing close matches, if any.
Result<std::string> RenderExplain(std::string_view code, bool color);

// Catalog codes close to `code` (case-insensitive edit distance, or one
// containing the other), closest first; at most `max` of them.
std::vector<std::string> CloseCodes(std::string_view code, size_t max = 5);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_EXPLAIN_H_
