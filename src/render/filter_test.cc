#include "render/filter.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "render/test_snapshots.h"

namespace gw::render {
namespace {

using testing::BusyBox;

SnapshotFilter Gpus(std::vector<std::string> gpus, std::vector<std::string> users = {}) {
  SnapshotFilter f;
  f.gpus = std::move(gpus);
  f.users = std::move(users);
  return f;
}

SnapshotFilter Users(std::vector<std::string> users) { return Gpus({}, std::move(users)); }

std::vector<unsigned> Indices(const Snapshot& s) {
  std::vector<unsigned> out;
  for (const Gpu& g : s.gpus) out.push_back(g.index);
  return out;
}

std::vector<pid_t> Pids(const Gpu& g) {
  std::vector<pid_t> out;
  for (const GpuProcess& p : g.processes) out.push_back(p.pid);
  return out;
}

std::vector<pid_t> HostPids(const Snapshot& s) {
  std::vector<pid_t> out;
  for (const auto& [pid, p] : s.processes) out.push_back(pid);
  return out;
}

TEST(FilterSnapshot, EmptyFilterKeepsEverything) {
  const Snapshot s = BusyBox();
  auto r = FilterSnapshot(s, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Indices(*r), std::vector<unsigned>({0, 1, 2, 3}));
  EXPECT_EQ(r->processes.size(), s.processes.size());
  EXPECT_EQ(r->topology.size(), s.topology.size());
}

TEST(FilterSnapshot, SelectsGpusByIndexUuidAndBusId) {
  const Snapshot s = BusyBox();
  for (const char* sel :
       {"2", "GPU-5d1f0c3a-0000-4000-8000-000000000002", "gpu-5D1F0C3A-0000-4000-8000-000000000002",
        "00000000:4C:00.0", "0000:4c:00.0", "4C:00.0", "4c:0.0",
        // As the kernel log writes it, without a function.
        "0000:4c:00", "4c:00"}) {
    auto r = FilterSnapshot(s, Gpus({sel}));
    ASSERT_TRUE(r.ok()) << sel << ": " << r.error().message;
    EXPECT_EQ(Indices(*r), std::vector<unsigned>({2})) << sel;
  }
  auto two = FilterSnapshot(s, Gpus({"3", "0", "0"}));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(Indices(*two), std::vector<unsigned>({0, 3}));  // Original order, no duplicates.
}

TEST(FilterSnapshot, WrongDomainDoesNotMatch) {
  auto r = FilterSnapshot(BusyBox(), Gpus({"0001:4C:00.0"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "not_found");
}

TEST(FilterSnapshot, UnknownGpuSelectorIsAnErrorNamingIt) {
  for (const char* sel : {"7", "GPU-nope", "FF:00.0", "fast"}) {
    auto r = FilterSnapshot(BusyBox(), Gpus({"0", sel}));
    ASSERT_FALSE(r.ok()) << sel;
    EXPECT_EQ(r.error().code, "not_found");
    EXPECT_NE(r.error().message.find(std::string("\"") + sel + "\""), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("0, 1, 2, 3"), std::string::npos) << r.error().message;
  }
}

TEST(FilterSnapshot, EmptySelectorsAreMalformed) {
  auto g = FilterSnapshot(BusyBox(), Gpus({""}));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, "malformed");
  auto u = FilterSnapshot(BusyBox(), Users({""}));
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().code, "malformed");
}

TEST(FilterSnapshot, GpuFilterNarrowsTopologyErrorsAndHostProcesses) {
  Snapshot s = BusyBox();
  s.errors.push_back({"nvml", "gpu_lost", "lost", 1u, 15});
  s.errors.push_back({"proc", "no_permission", "cannot read /proc/1/fd", std::nullopt, {}});
  auto r = FilterSnapshot(s, Gpus({"2", "3"}));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->topology.size(), 1u);
  EXPECT_EQ(r->topology[0].gpu_a, 2u);
  EXPECT_EQ(r->topology[0].gpu_b, 3u);
  ASSERT_EQ(r->errors.size(), 1u);  // GPU 1's error is gone, the general one stays.
  EXPECT_EQ(r->errors[0].source, "proc");
  // carol on GPU 2; bob's unlisted holder of /dev/nvidia3; alice holds
  // /dev/nvidia2 and /dev/nvidia3 (CUDA opens every device) so she stays too.
  EXPECT_EQ(HostPids(*r), std::vector<pid_t>({1001, 2001, 4001}));
  EXPECT_EQ(r->system.gpu_count, 4u);  // What the driver reports is kept.

  auto only0 = FilterSnapshot(s, Gpus({"0"}));
  ASSERT_TRUE(only0.ok());
  EXPECT_EQ(HostPids(*only0), std::vector<pid_t>({1001, 1002}));
}

TEST(FilterSnapshot, UserFilterKeepsAllGpuBlocksButOnlyTheirProcesses) {
  auto r = FilterSnapshot(BusyBox(), Users({"alice"}));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(Indices(*r), std::vector<unsigned>({0, 1, 2, 3}));
  EXPECT_EQ(Pids(r->gpus[0]), std::vector<pid_t>({1001}));
  EXPECT_EQ(Pids(r->gpus[1]), std::vector<pid_t>({1001}));
  EXPECT_TRUE(r->gpus[2].processes.empty());
  EXPECT_TRUE(r->gpus[3].processes.empty());
  EXPECT_EQ(HostPids(*r), std::vector<pid_t>({1001}));
}

TEST(FilterSnapshot, UserFilterByNumericUid) {
  auto r = FilterSnapshot(BusyBox(), Users({"1001"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Pids(r->gpus[0]), std::vector<pid_t>({1002}));
  EXPECT_EQ(HostPids(*r), std::vector<pid_t>({1002, 4001}));  // Holder kept with its user.
}

TEST(FilterSnapshot, LargeUidsMatchExactly) {
  Snapshot s = BusyBox();
  s.processes.at(2001).uid = 4294967294u;  // nobody on some systems; 10 digits.
  auto r = FilterSnapshot(s, Users({"4294967294"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Pids(r->gpus[2]), std::vector<pid_t>({2001}));
  auto none = FilterSnapshot(s, Users({"99999999999999999999999"}));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->processes.empty());
}

TEST(FilterSnapshot, UnknownUserMatchesNothingWithoutError) {
  auto r = FilterSnapshot(BusyBox(), Users({"zed"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gpus.size(), 4u);
  for (const Gpu& g : r->gpus) EXPECT_TRUE(g.processes.empty());
  EXPECT_TRUE(r->processes.empty());
}

TEST(FilterSnapshot, ProcessesNotInProcMatchNoUser) {
  auto r = FilterSnapshot(BusyBox(), Users({"carol", "0"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Pids(r->gpus[2]), std::vector<pid_t>({2001}));  // 3001 has no owner.
}

TEST(FilterSnapshot, GpusAndUsersCombine) {
  auto r = FilterSnapshot(BusyBox(), Gpus({"0", "2"}, {"alice", "carol"}));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(Indices(*r), std::vector<unsigned>({0, 2}));
  EXPECT_EQ(Pids(r->gpus[0]), std::vector<pid_t>({1001}));
  EXPECT_EQ(Pids(r->gpus[1]), std::vector<pid_t>({2001}));
}

}  // namespace
}  // namespace gw::render
