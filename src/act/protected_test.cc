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

TEST(Protected, Argv0AndExecutableCount) {
  ProtectedList list;
  EXPECT_EQ(list.Match(Named("worker", {"/usr/lib/xorg/Xorg", ":0"})), "Xorg");
  HostProcess p = Named("renamed");
  p.exe = "/usr/bin/nv-hostengine";
  EXPECT_EQ(list.Match(p), "nv-hostengine");
}

TEST(Protected, ConfiguredNamesAdd) {
  ProtectedList list({"jupyterhub", "", "Xorg"});
  EXPECT_EQ(list.Match(Named("jupyterhub")), "jupyterhub");
  EXPECT_EQ(list.Match(Named("Xorg")), "Xorg");
}

}  // namespace
}  // namespace gw::act
