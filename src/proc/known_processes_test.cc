#include "proc/known_processes.h"

#include <gtest/gtest.h>

namespace gw::proc {
namespace {

HostProcess Named(std::string comm, std::vector<std::string> cmdline = {}) {
  HostProcess p;
  p.comm = std::move(comm);
  p.cmdline = std::move(cmdline);
  return p;
}

TEST(KnownProcesses, MatchedByCommCutTo15BytesByArgv0OrByExecutable) {
  auto persistenced = MatchKnownProcess(Named("nvidia-persiste"));
  ASSERT_TRUE(persistenced);
  EXPECT_EQ(persistenced->name, "nvidia-persistenced");
  EXPECT_EQ(persistenced->role, ProcessRole::kNvidiaDaemon);
  EXPECT_EQ(persistenced->unit, "nvidia-persistenced.service");
  HostProcess x = Named("something", {"/usr/lib/xorg/Xorg", ":0"});
  ASSERT_TRUE(MatchKnownProcess(x));
  EXPECT_EQ(MatchKnownProcess(x)->role, ProcessRole::kDisplayServer);
  HostProcess renamed = Named("worker");
  renamed.exe = "/usr/bin/nv-hostengine";
  ASSERT_TRUE(MatchKnownProcess(renamed));
  EXPECT_EQ(MatchKnownProcess(renamed)->role, ProcessRole::kDcgm);
  EXPECT_FALSE(MatchKnownProcess(Named("python3", {"python3", "train.py"})));
}

TEST(KnownProcesses, TheMpsServerAndControlDaemonShareTheirCommAndArgv0Decides) {
  // Both run as "nvidia-cuda-mps".
  EXPECT_EQ(MatchKnownProcess(Named("nvidia-cuda-mps"))->role, ProcessRole::kMpsServer);
  EXPECT_EQ(MatchKnownProcess(Named("nvidia-cuda-mps", {"nvidia-cuda-mps-control", "-d"}))->role,
            ProcessRole::kMpsControl);
  EXPECT_EQ(MatchKnownName("/usr/bin/nvidia-cuda-mps-server")->role, ProcessRole::kMpsServer);
  EXPECT_FALSE(MatchKnownName("/usr/bin/python3"));
}

TEST(KnownProcesses, EveryRoleHasWords) {
  for (const KnownProcess& k : KnownProcesses()) {
    EXPECT_FALSE(ProcessRoleText(k.role).empty()) << k.name;
    EXPECT_LE(k.name.size(), 40u);
  }
  EXPECT_EQ(BaseName("/usr/bin/python3"), "python3");
  EXPECT_EQ(BaseName("python3"), "python3");
  EXPECT_EQ(BaseName("/"), "");
}

}  // namespace
}  // namespace gw::proc
