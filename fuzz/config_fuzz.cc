// fuzz_config: the settings file (config/config.h), strict TOML. Accepted:
// every value within the documented bounds (a typo or a wild value never
// weakens a safety setting). Rejected: "bad_input", one line that starts
// with the file.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  const std::string& path = fuzz::WriteTempFile(fuzz::AsText(data, size), "config.toml");
  Result<config::Config> c = config::LoadConfig(path, /*explicit_path=*/true);
  if (!c.ok()) {
    fuzz::CheckError(c.error(), {"bad_input"}, path, "config");
    GW_FUZZ_CHECK(c.error().message.rfind(path, 0) == 0, c.error().message);
    return 0;
  }
  GW_FUZZ_CHECK(c->found && c->path == path, c->path);
  const config::CleanSettings& clean = c->clean;
  for (const std::string& name : clean.protect) {
    GW_FUZZ_CHECK(!name.empty() && name.size() <= 255, name);
    GW_FUZZ_CHECK(name.find('/') == std::string::npos, name);
    GW_FUZZ_CHECK(name.find('\0') == std::string::npos, name);
  }
  for (const std::optional<double>& s : {clean.grace_s, clean.settle_s}) {
    if (s) GW_FUZZ_CHECK(std::isfinite(*s) && *s >= 0 && *s <= 86400, std::to_string(*s));
  }
  if (clean.audit_log) {
    GW_FUZZ_CHECK(!clean.audit_log->empty() && (*clean.audit_log)[0] == '/', *clean.audit_log);
    GW_FUZZ_CHECK(clean.audit_log->find('\0') == std::string::npos, *clean.audit_log);
  }
  return 0;
}
