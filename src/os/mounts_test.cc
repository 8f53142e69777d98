#include "os/mounts.h"

#include <gtest/gtest.h>

namespace gw::os {
namespace {

// Lines as the kernel writes them (proc_pid_mountinfo(5)), including an
// optional field, an escaped space, and an ext4 turned read-only by an error.
constexpr std::string_view kTable =
    "22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n"
    "45 22 7:2 / /srv/queue rw,relatime - ext4 /dev/loop2 rw,errors=remount-ro,emergency_ro\n"
    "46 22 0:40 / /mnt/my\\040disk ro,nosuid - tmpfs tmpfs ro,size=1024k\n"
    "47 22 0:41 / /srv rw - tmpfs tmpfs rw\n"
    "48 22 0:42 / /srv/queue2 rw - xfs /dev/sdb ro\n";

TEST(FindMount, TheLongestCoveringMountPointWins) {
  Result<MountFacts> m = FindMount(kTable, "/srv/queue/queue.db");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->mount_point, "/srv/queue");
  EXPECT_EQ(m->fstype, "ext4");
  EXPECT_EQ(m->source, "/dev/loop2");
  EXPECT_TRUE(m->read_only);  // emergency_ro in the superblock's options
  Result<MountFacts> srv = FindMount(kTable, "/srv/other");
  ASSERT_TRUE(srv.ok());
  EXPECT_EQ(srv->mount_point, "/srv");
  EXPECT_FALSE(srv->read_only);
  // "/srv/queue2" is not under "/srv/queue".
  Result<MountFacts> q2 = FindMount(kTable, "/srv/queue2/x");
  ASSERT_TRUE(q2.ok());
  EXPECT_EQ(q2->mount_point, "/srv/queue2");
  EXPECT_TRUE(q2->read_only);  // ro superblock under an rw mount
  Result<MountFacts> root = FindMount(kTable, "/home/ann");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->mount_point, "/");
  EXPECT_FALSE(root->read_only);
}

TEST(FindMount, EscapedNamesAndReadOnlyMountOptions) {
  Result<MountFacts> m = FindMount(kTable, "/mnt/my disk/state");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->mount_point, "/mnt/my disk");
  EXPECT_TRUE(m->read_only);
}

TEST(FindMount, ALaterMountOnTheSamePointHidesTheEarlierOne) {
  const std::string table = std::string(kTable) + "60 45 0:50 / /srv/queue rw - tmpfs tmpfs rw\n";
  Result<MountFacts> m = FindMount(table, "/srv/queue/queue.db");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->fstype, "tmpfs");
  EXPECT_FALSE(m->read_only);
}

TEST(FindMount, BadTablesAreErrorsNamingTheLine) {
  EXPECT_EQ(FindMount("", "/x").error().code, "not_found");
  Result<MountFacts> bad = FindMount("22 1 252:1 / / rw - ext4 /dev/vda1 rw\n23 1 0:1 /\n", "/x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "malformed");
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
  EXPECT_EQ(FindMount("22 1 252:1 / / rw no-dash-here at all\n", "/").error().code, "malformed");
}

TEST(FindMount, AProcMountWithHidepidHidesOtherUsersPids) {
  for (std::string_view option :
       {"hidepid=2", "hidepid=invisible", "hidepid=4", "hidepid=ptraceable"}) {
    const std::string table =
        "21 26 0:20 / /proc rw,relatime - proc proc rw," + std::string(option) + ",gid=27\n";
    Result<MountFacts> m = FindMount(table, "/proc");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_TRUE(m->hides_pids) << option;
  }
  // hidepid=1 (noaccess) lists every PID; a tmpfs's option says nothing of processes.
  for (std::string_view line : {"21 26 0:20 / /proc rw - proc proc rw,hidepid=1\n",
                                "21 26 0:20 / /proc rw - proc proc rw,hidepid=noaccess\n",
                                "21 26 0:20 / /proc rw - proc proc rw\n",
                                "21 26 0:20 / /proc rw - tmpfs tmpfs rw,hidepid=2\n"}) {
    Result<MountFacts> m = FindMount(line, "/proc");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_FALSE(m->hides_pids) << line;
  }
}

TEST(MountOf, ThisProcessesRootIsMounted) {
  Result<MountFacts> m = MountOf("/");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->mount_point, "/");
  EXPECT_FALSE(m->fstype.empty());
  EXPECT_EQ(MountOf("/no/such/path/at/all").error().code, "io");
}

}  // namespace
}  // namespace gw::os
