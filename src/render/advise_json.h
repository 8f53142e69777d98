// `gpuwarden advise --json`: the document "gpuwarden.advise",
// schema_version 1 (docs/json.md). Bytes are integers; unknown is null.
#ifndef GPUWARDEN_RENDER_ADVISE_JSON_H_
#define GPUWARDEN_RENDER_ADVISE_JSON_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "plan/advice.h"

namespace gw::render {

inline constexpr std::string_view kAdviseSchemaName = "gpuwarden.advise";
inline constexpr int kAdviseSchemaVersion = 1;

nlohmann::json AdviseJson(const plan::Advice& advice);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_ADVISE_JSON_H_
