// The passwd and group databases (files, LDAP, SSSD, ... as NSS says): the
// one home of getpwuid_r/getpwnam_r/getgrgid_r/getgrnam_r/getgrouplist.
//
// Every lookup grows its buffer and retries on ERANGE, from `initial_buffer`
// bytes (0: the C library's hint, sysconf(_SC_GETPW_R_SIZE_MAX) or
// _SC_GETGR_R_SIZE_MAX, else 1024) doubling up to kMaxLookupBuffer: a group
// with thousands of members or a long GECOS field is an entry like any other.
//
// Result<std::optional<T>>: nullopt = the database has no such entry; error
// "unavailable" = it could not be asked (NSS backend down, an entry larger
// than kMaxLookupBuffer, out of descriptors); the message names what was
// looked up and why it failed.
#ifndef GPUWARDEN_PROC_USERS_H_
#define GPUWARDEN_PROC_USERS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"

namespace gw::proc {

// The largest buffer a lookup grows to (1 MiB).
inline constexpr size_t kMaxLookupBuffer = size_t{1} << 20;

struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;  // The primary group.
  std::string gecos;
  std::string home;
  std::string shell;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;  // The explicit members (not the primary-group users).
};

Result<std::optional<PasswdEntry>> LookupPasswdByUid(uid_t uid, size_t initial_buffer = 0);
Result<std::optional<PasswdEntry>> LookupPasswdByName(const std::string& name,
                                                      size_t initial_buffer = 0);
Result<std::optional<GroupEntry>> LookupGroupByGid(gid_t gid, size_t initial_buffer = 0);
Result<std::optional<GroupEntry>> LookupGroupByName(const std::string& name,
                                                    size_t initial_buffer = 0);

// Every group `user` is in, as initgroups(3) would set them: `primary_gid`
// first, then the supplementary groups (getgrouplist). Starts with room for
// `initial_count` groups (0: 64) and grows to what the database reports.
// Error "unavailable" when the list cannot be read.
Result<std::vector<gid_t>> SupplementaryGroups(const std::string& user, gid_t primary_gid,
                                               size_t initial_count = 0);

// The user name of `uid`; nullopt when the passwd database has none or
// cannot be asked (a display name: callers fall back to the number).
std::optional<std::string> LookupUserName(uid_t uid);

// LookupUserName, or "uid N" when there is no name.
std::string UserNameOrUid(uid_t uid);

// UserNameOrUid remembered per uid for `ttl_ms`: for a daemon that names the
// caller of every request, where each lookup reads /etc/passwd (or asks
// LDAP) again. A name changed in the database shows after at most ttl_ms.
// Holds at most kMaxEntries uids (then starts over). Not thread-safe.
class UserNameCache {
 public:
  static constexpr size_t kMaxEntries = 4096;
  using Lookup = std::function<std::string(uid_t)>;

  explicit UserNameCache(int64_t ttl_ms = 60'000, Lookup lookup = UserNameOrUid)
      : ttl_ms_(ttl_ms), lookup_(std::move(lookup)) {}
  // `now_ms`: a monotonic clock's milliseconds.
  const std::string& NameOrUid(uid_t uid, int64_t now_ms);

 private:
  struct Entry {
    std::string name;
    int64_t looked_up_ms = 0;
  };
  int64_t ttl_ms_;
  Lookup lookup_;
  std::unordered_map<uid_t, Entry> entries_;
};

}  // namespace gw::proc

#endif  // GPUWARDEN_PROC_USERS_H_
