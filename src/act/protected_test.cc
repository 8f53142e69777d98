#include "act/protected.h"

#include <gtest/gtest.h>

namespace gw::act {
namespace {

HostProcess Named(std::string comm, std::vector<std::string> argv = {}) {
  HostProcess p;
  p.pid = 42;
  p.comm = std::move(comm);
  p.cmdline = std::move(argv);
  return p;
}

TEST(Protected, DefaultsCoverTheDriverDaemonsAndDisplays) {
  ProtectedList list;
  EXPECT_EQ(list.Match(Named("nvidia-persiste")), "nvidia-persistenced");
  EXPECT_EQ(list.Match(Named("nv-hostengine")), "nv-hostengine");
  EXPECT_EQ(list.Match(Named("nv-fabricmanage")), "nv-fabricmanager");
  // The MPS server and control daemon both run as "nvidia-cuda-mps".
  EXPECT_TRUE(list.Match(Named("nvidia-cuda-mps")));
  EXPECT_EQ(list.Match(Named("Xorg")), "Xorg");
  EXPECT_EQ(list.Match(Named("gnome-shell")), "gnome-shell");
  EXPECT_EQ(list.Match(Named("gpuwardend")), "gpuwardend");
  EXPECT_FALSE(list.Match(Named("python", {"python", "train.py"})));
  // A name is whole, not a prefix or a substring.
  EXPECT_FALSE(list.Match(Named("Xorgish")));
  EXPECT_FALSE(list.Match(Named("myXorg")));
}

// The name a process gives itself counts only while its executable cannot
// be read (another user's process, to a caller without root).
TEST(Protected, Argv0CountsOnlyWithoutTheExecutable) {
  ProtectedList list;
  EXPECT_EQ(list.Match(Named("worker", {"/usr/lib/xorg/Xorg", ":0"})), "Xorg");
  HostProcess p = Named("renamed");
  p.exe = "/usr/bin/nv-hostengine";
  EXPECT_EQ(list.Match(p), "nv-hostengine");
}

// `exec -a Xorg sleep`: argv[0] and comm say Xorg; the kernel says sleep.
TEST(Protected, ARenamedProcessIsNotProtected) {
  ProtectedList list;
  HostProcess p = Named("Xorg", {"Xorg"});
  p.exe = "/usr/bin/sleep";
  EXPECT_FALSE(list.Match(p));
  p.exe = "/usr/lib/xorg/Xorg";
  EXPECT_EQ(list.Match(p), "Xorg");
  // A protected unit, which systemd sets, counts whatever the executable.
  HostProcess helper = Named("sh", {"/bin/sh", "-c", "nvidia-persistenced"});
  helper.exe = "/usr/bin/dash";
  EXPECT_FALSE(list.Match(helper));
  helper.owner.systemd_unit = "nvidia-persistenced.service";
  EXPECT_EQ(list.Match(helper), "nvidia-persistenced");
}

TEST(Protected, ConfiguredNamesAdd) {
  ProtectedList list({"jupyterhub", "", "Xorg"});
  EXPECT_EQ(list.Match(Named("jupyterhub")), "jupyterhub");
  EXPECT_EQ(list.Match(Named("Xorg")), "Xorg");
  // By the executable or the unit, never by a name the process chose.
  HostProcess hub = Named("jupyterhub", {"/usr/bin/python3", "/usr/local/bin/jupyterhub"});
  hub.exe = "/usr/bin/python3.11";
  EXPECT_FALSE(list.Match(hub));
  hub.owner.systemd_unit = "jupyterhub.service";
  EXPECT_EQ(list.Match(hub), "jupyterhub");
  HostProcess own = Named("jupyterhub");
  own.exe = "/opt/hub/bin/jupyterhub";
  EXPECT_EQ(list.Match(own), "jupyterhub");
}

}  // namespace
}  // namespace gw::act
