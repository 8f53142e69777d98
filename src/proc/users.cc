#include "proc/users.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace gw::proc {

std::optional<std::string> LookupUserName(uid_t uid) {
  const long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 4096);
  for (;;) {
    passwd pw;
    passwd* found = nullptr;
    const int rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc == 0 && found != nullptr && found->pw_name != nullptr)
      return std::string(found->pw_name);
    return std::nullopt;
  }
}

std::string UserNameOrUid(uid_t uid) {
  std::optional<std::string> name = LookupUserName(uid);
  return name ? *name : "uid " + std::to_string(uid);
}

}  // namespace gw::proc
