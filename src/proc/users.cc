#include "proc/users.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "os/errno_text.h"

namespace gw::proc {
namespace {

size_t FirstBufferSize(size_t initial_buffer, int sysconf_name) {
  if (initial_buffer > 0) return initial_buffer;
  const long hint = sysconf(sysconf_name);
  return hint > 0 ? static_cast<size_t>(hint) : 1024;
}

// The reentrant lookups' "no such entry" answers: 0 with no result, or one of
// the errno values glibc's manual lists for a name or id that is not there.
bool IsNotFound(int rc) {
  return rc == 0 || rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM;
}

std::string Str(const char* s) { return s != nullptr ? s : ""; }

PasswdEntry Convert(const passwd& pw) {
  return PasswdEntry{Str(pw.pw_name),  pw.pw_uid,      pw.pw_gid,
                     Str(pw.pw_gecos), Str(pw.pw_dir), Str(pw.pw_shell)};
}

GroupEntry Convert(const group& gr) {
  GroupEntry out{Str(gr.gr_name), gr.gr_gid, {}};
  for (char** m = gr.gr_mem; m != nullptr && *m != nullptr; ++m) out.members.emplace_back(*m);
  return out;
}

int SizeHintName(const passwd*) { return _SC_GETPW_R_SIZE_MAX; }
int SizeHintName(const group*) { return _SC_GETGR_R_SIZE_MAX; }

// Runs one of the reentrant lookups (getpwuid_r, getgrnam_r, ...) with a
// buffer that grows on ERANGE, and converts the entry found.
template <typename Entry, typename Key>
auto Lookup(int (*lookup)(Key, Entry*, char*, size_t, Entry**), Key key, const std::string& what,
            size_t initial_buffer)
    -> Result<std::optional<decltype(Convert(std::declval<const Entry&>()))>> {
  using Out = decltype(Convert(std::declval<const Entry&>()));
  std::vector<char> buffer(
      FirstBufferSize(initial_buffer, SizeHintName(static_cast<Entry*>(nullptr))));
  for (;;) {
    Entry entry{};
    Entry* found = nullptr;
    const int rc = lookup(key, &entry, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE) {
      if (buffer.size() >= kMaxLookupBuffer) {
        return MakeError("unavailable", what + ": the entry is larger than " +
                                            std::to_string(kMaxLookupBuffer) + " bytes");
      }
      buffer.resize(std::min(buffer.size() * 2, kMaxLookupBuffer));
      continue;
    }
    if (rc == 0 && found != nullptr) return std::optional<Out>(Convert(*found));
    if (IsNotFound(rc)) return std::optional<Out>();
    return MakeError("unavailable", what + ": " + os::ErrnoText(rc));
  }
}

}  // namespace

Result<std::optional<PasswdEntry>> LookupPasswdByUid(uid_t uid, size_t initial_buffer) {
  return Lookup(getpwuid_r, uid, "passwd lookup of uid " + std::to_string(uid), initial_buffer);
}

Result<std::optional<PasswdEntry>> LookupPasswdByName(const std::string& name,
                                                      size_t initial_buffer) {
  return Lookup(getpwnam_r, name.c_str(), "passwd lookup of user " + name, initial_buffer);
}

Result<std::optional<GroupEntry>> LookupGroupByGid(gid_t gid, size_t initial_buffer) {
  return Lookup(getgrgid_r, gid, "group lookup of gid " + std::to_string(gid), initial_buffer);
}

Result<std::optional<GroupEntry>> LookupGroupByName(const std::string& name,
                                                    size_t initial_buffer) {
  return Lookup(getgrnam_r, name.c_str(), "group lookup of " + name, initial_buffer);
}

Result<std::vector<gid_t>> SupplementaryGroups(const std::string& user, gid_t primary_gid,
                                               size_t initial_count) {
  // 65536 is the kernel's NGROUPS_MAX; more can never be set.
  constexpr int kMaxGroups = 65536;
  int count =
      initial_count > 0 ? static_cast<int>(std::min<size_t>(initial_count, kMaxGroups)) : 64;
  for (;;) {
    std::vector<gid_t> groups(static_cast<size_t>(count));
    int n = count;
    if (getgrouplist(user.c_str(), primary_gid, groups.data(), &n) >= 0) {
      groups.resize(static_cast<size_t>(n));
      return groups;
    }
    // -1 with n set to the number needed; n <= count is a failure of the
    // database (glibc then leaves n as it was), not a short buffer.
    if (n <= count) {
      if (count >= kMaxGroups) break;
      n = count * 2;
    }
    count = std::min(n, kMaxGroups);
  }
  return MakeError("unavailable", "the groups of user " + user +
                                      ": getgrouplist wants room for more than " +
                                      std::to_string(kMaxGroups) + " groups");
}

std::optional<std::string> LookupUserName(uid_t uid) {
  Result<std::optional<PasswdEntry>> entry = LookupPasswdByUid(uid);
  if (!entry.ok() || !*entry) return std::nullopt;
  return std::move((*entry)->name);
}

std::string UserNameOrUid(uid_t uid) {
  std::optional<std::string> name = LookupUserName(uid);
  return name ? *name : "uid " + std::to_string(uid);
}

const std::string& UserNameCache::NameOrUid(uid_t uid, int64_t now_ms) {
  auto it = entries_.find(uid);
  if (it != entries_.end() && now_ms - it->second.looked_up_ms < ttl_ms_ &&
      now_ms >= it->second.looked_up_ms) {
    return it->second.name;
  }
  if (it == entries_.end() && entries_.size() >= kMaxEntries) entries_.clear();
  Entry& e = entries_[uid];
  e.name = lookup_(uid);
  e.looked_up_ms = now_ms;
  return e.name;
}

}  // namespace gw::proc
