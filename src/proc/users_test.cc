// The passwd/group lookups against this host's real databases.
#include "proc/users.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace gw::proc {
namespace {

// A uid and gid nobody has here: the tests that need one skip otherwise.
constexpr uid_t kUnusedId = 3'999'999'917u;

TEST(Users, A16ByteBufferIsTooSmallForRootsEntrySoTheLookupRetries) {
  // The precondition, asked of the C library directly: 16 bytes cannot hold
  // root's name, password, GECOS, home and shell, so the first call is ERANGE.
  std::vector<char> small(16);
  passwd pw{};
  passwd* found = nullptr;
  ASSERT_EQ(getpwuid_r(0, &pw, small.data(), small.size(), &found), ERANGE);

  const passwd* expected = getpwuid(0);
  ASSERT_NE(expected, nullptr);
  const std::string name = expected->pw_name;
  const std::string home = expected->pw_dir;
  const std::string shell = expected->pw_shell;

  Result<std::optional<PasswdEntry>> by_uid = LookupPasswdByUid(0, 16);
  ASSERT_TRUE(by_uid.ok()) << by_uid.error().message;
  ASSERT_TRUE(by_uid->has_value());
  EXPECT_EQ((*by_uid)->name, name);
  EXPECT_EQ((*by_uid)->uid, 0u);
  EXPECT_EQ((*by_uid)->home, home);
  EXPECT_EQ((*by_uid)->shell, shell);

  Result<std::optional<PasswdEntry>> by_name = LookupPasswdByName(name, 16);
  ASSERT_TRUE(by_name.ok()) << by_name.error().message;
  ASSERT_TRUE(by_name->has_value());
  EXPECT_EQ((*by_name)->uid, 0u);
  EXPECT_EQ((*by_name)->home, home);
}

TEST(Users, GroupLookupsRetryFromASmallBufferToo) {
  std::vector<char> small(8);
  group gr{};
  group* found = nullptr;
  ASSERT_EQ(getgrgid_r(0, &gr, small.data(), small.size(), &found), ERANGE);
  const group* expected = getgrgid(0);
  ASSERT_NE(expected, nullptr);
  const std::string name = expected->gr_name;

  Result<std::optional<GroupEntry>> by_gid = LookupGroupByGid(0, 8);
  ASSERT_TRUE(by_gid.ok()) << by_gid.error().message;
  ASSERT_TRUE(by_gid->has_value());
  EXPECT_EQ((*by_gid)->name, name);
  EXPECT_EQ((*by_gid)->gid, 0u);

  Result<std::optional<GroupEntry>> by_name = LookupGroupByName(name, 8);
  ASSERT_TRUE(by_name.ok()) << by_name.error().message;
  ASSERT_TRUE(by_name->has_value());
  EXPECT_EQ((*by_name)->gid, 0u);
}

TEST(Users, TheDefaultBufferFindsTheSameEntries) {
  Result<std::optional<PasswdEntry>> small = LookupPasswdByUid(0, 16);
  Result<std::optional<PasswdEntry>> normal = LookupPasswdByUid(0);
  ASSERT_TRUE(small.ok() && normal.ok());
  ASSERT_TRUE(small->has_value() && normal->has_value());
  EXPECT_EQ((*small)->name, (*normal)->name);
  EXPECT_EQ((*small)->gecos, (*normal)->gecos);
  EXPECT_EQ(LookupUserName(0), (*normal)->name);
  EXPECT_EQ(UserNameOrUid(0), (*normal)->name);
}

TEST(Users, NoSuchEntryIsNulloptNotAnError) {
  if (getpwuid(kUnusedId) != nullptr || getgrgid(kUnusedId) != nullptr) {
    GTEST_SKIP() << kUnusedId << " exists here";
  }
  Result<std::optional<PasswdEntry>> user = LookupPasswdByUid(kUnusedId, 16);
  ASSERT_TRUE(user.ok()) << user.error().message;
  EXPECT_FALSE(user->has_value());
  Result<std::optional<PasswdEntry>> named = LookupPasswdByName("gw-no-such-user-here");
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_FALSE(named->has_value());
  Result<std::optional<GroupEntry>> grp = LookupGroupByGid(kUnusedId);
  ASSERT_TRUE(grp.ok()) << grp.error().message;
  EXPECT_FALSE(grp->has_value());
  Result<std::optional<GroupEntry>> grp_named = LookupGroupByName("gw-no-such-group-here");
  ASSERT_TRUE(grp_named.ok()) << grp_named.error().message;
  EXPECT_FALSE(grp_named->has_value());
  EXPECT_EQ(LookupUserName(kUnusedId), std::nullopt);
  EXPECT_EQ(UserNameOrUid(kUnusedId), "uid " + std::to_string(kUnusedId));
}

// getgrouplist of `user` with room for everything: the expected answer.
std::vector<gid_t> AllGroups(const std::string& user, gid_t primary) {
  std::vector<gid_t> groups(65536);
  int n = static_cast<int>(groups.size());
  if (getgrouplist(user.c_str(), primary, groups.data(), &n) < 0) return {};
  groups.resize(static_cast<size_t>(n));
  return groups;
}

TEST(Users, SupplementaryGroupsMatchGetgrouplist) {
  const passwd* pw = getpwuid(getuid());
  if (pw == nullptr) GTEST_SKIP() << "this uid has no passwd entry";
  const std::string name = pw->pw_name;
  const gid_t gid = pw->pw_gid;
  const std::vector<gid_t> expected = AllGroups(name, gid);
  ASSERT_FALSE(expected.empty());
  Result<std::vector<gid_t>> groups = SupplementaryGroups(name, gid);
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  EXPECT_EQ(*groups, expected);
  EXPECT_EQ(groups->front(), gid);  // The primary group first, as initgroups sets it.
}

TEST(Users, SupplementaryGroupsGrowFromRoomForOne) {
  // A user listed as a member of some group has at least two: that one and
  // the primary group given (a gid that is not that group).
  std::string member;
  gid_t member_of = 0;
  setgrent();
  while (const group* g = getgrent()) {
    if (g->gr_mem != nullptr && g->gr_mem[0] != nullptr) {
      member = g->gr_mem[0];
      member_of = g->gr_gid;
      break;
    }
  }
  endgrent();
  if (member.empty()) GTEST_SKIP() << "no group here lists a member";
  const gid_t primary = member_of == kUnusedId ? kUnusedId - 1 : kUnusedId;
  const std::vector<gid_t> expected = AllGroups(member, primary);
  ASSERT_GE(expected.size(), 2u);
  Result<std::vector<gid_t>> groups = SupplementaryGroups(member, primary, 1);
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  EXPECT_EQ(*groups, expected);
  EXPECT_EQ(groups->front(), primary);
  EXPECT_NE(std::find(groups->begin(), groups->end(), member_of), groups->end());
}

TEST(UserNameCache, AsksOncePerUidUntilTheEntryIsOld) {
  std::vector<uid_t> asked;
  int renames = 0;
  UserNameCache cache(1000, [&](uid_t uid) {
    asked.push_back(uid);
    return "user" + std::to_string(uid) + "." + std::to_string(renames);
  });
  EXPECT_EQ(cache.NameOrUid(7, 0), "user7.0");
  EXPECT_EQ(cache.NameOrUid(7, 999), "user7.0");
  EXPECT_EQ(cache.NameOrUid(8, 10), "user8.0");
  EXPECT_EQ(asked, (std::vector<uid_t>{7, 8}));
  renames = 1;  // The database changed: seen once the entry is ttl old.
  EXPECT_EQ(cache.NameOrUid(7, 1000), "user7.1");
  EXPECT_EQ(asked, (std::vector<uid_t>{7, 8, 7}));
  // A clock that went back (a fake, a bad monotonic source) asks again.
  EXPECT_EQ(cache.NameOrUid(8, 5), "user8.1");
  EXPECT_EQ(asked.size(), 4u);
}

TEST(UserNameCache, StaysBoundedUnderManyUids) {
  size_t lookups = 0;
  UserNameCache cache(60'000, [&](uid_t uid) {
    ++lookups;
    return std::to_string(uid);
  });
  for (uid_t uid = 0; uid < UserNameCache::kMaxEntries * 2 + 10; ++uid) {
    EXPECT_EQ(cache.NameOrUid(uid, 0), std::to_string(uid));
  }
  EXPECT_EQ(lookups, UserNameCache::kMaxEntries * 2 + 10);
  // Still correct, and still cached, for the uids since the last start-over.
  const uid_t recent = UserNameCache::kMaxEntries * 2 + 9;
  EXPECT_EQ(cache.NameOrUid(recent, 1), std::to_string(recent));
  EXPECT_EQ(lookups, UserNameCache::kMaxEntries * 2 + 10);
}

}  // namespace
}  // namespace gw::proc
