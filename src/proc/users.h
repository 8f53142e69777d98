// Names for user ids, from the passwd database (files, LDAP, ... as NSS says).
#ifndef GPUWARDEN_PROC_USERS_H_
#define GPUWARDEN_PROC_USERS_H_

#include <sys/types.h>

#include <optional>
#include <string>

namespace gw::proc {

// The user name of `uid`; nullopt when the passwd database has none.
std::optional<std::string> LookupUserName(uid_t uid);

// LookupUserName, or "uid N" when there is no name.
std::string UserNameOrUid(uid_t uid);

}  // namespace gw::proc

#endif  // GPUWARDEN_PROC_USERS_H_
