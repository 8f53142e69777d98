// The job's environment and PATH lookup: pure.
#include "queue/job_environment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gw::queue {
namespace {

// ---------------------------------------------------------------------------
// BuildJobEnvironment

JobSpec SpecWithEnv(std::vector<std::string> env) {
  JobSpec spec;
  spec.argv = {"/bin/true"};
  spec.env = std::move(env);
  return spec;
}

std::vector<std::string> Tail(const std::vector<std::string>& env, size_t from) {
  return std::vector<std::string>(env.begin() + static_cast<long>(from), env.end());
}

TEST(BuildJobEnvironmentTest, SetsDevicesOrderAndIdAfterTheSubmittersEnvironment) {
  JobSpec spec = SpecWithEnv({"HOME=/home/ann", "PATH=/usr/bin", "ODD=a=b"});
  spec.gpus = 2;
  const auto env = BuildJobEnvironment(spec, 42, {"GPU-aaa", "GPU-bbb"}, 80ull << 30, false);
  EXPECT_EQ(env, (std::vector<std::string>{"HOME=/home/ann", "PATH=/usr/bin", "ODD=a=b",
                                           "CUDA_VISIBLE_DEVICES=GPU-aaa,GPU-bbb",
                                           "CUDA_DEVICE_ORDER=PCI_BUS_ID", "GPUWARDEN_JOB_ID=42"}));
}

TEST(BuildJobEnvironmentTest, ZeroGpuJobSeesNoDeviceAndNoBudget) {
  JobSpec spec = SpecWithEnv({"CUDA_VISIBLE_DEVICES=0,1"});
  spec.gpus = 0;
  spec.vram_bytes = 4ull << 30;
  const auto env = BuildJobEnvironment(spec, 7, {}, 80ull << 30, true);
  EXPECT_EQ(env, (std::vector<std::string>{"CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=PCI_BUS_ID",
                                           "GPUWARDEN_JOB_ID=7"}));
}

TEST(BuildJobEnvironmentTest, SubmittersCopiesOfOurVariablesAreReplacedOnce) {
  JobSpec spec = SpecWithEnv({"CUDA_VISIBLE_DEVICES=3", "A=1", "CUDA_DEVICE_ORDER=FASTEST_FIRST",
                              "GPUWARDEN_JOB_ID=999", "GPUWARDEN_VRAM_FRACTION=0.9",
                              "CUDA_VISIBLE_DEVICES=4"});
  const auto env = BuildJobEnvironment(spec, 5, {"GPU-x"}, 0, false);
  EXPECT_EQ(env, (std::vector<std::string>{"A=1", "CUDA_VISIBLE_DEVICES=GPU-x",
                                           "CUDA_DEVICE_ORDER=PCI_BUS_ID", "GPUWARDEN_JOB_ID=5"}));
}

TEST(BuildJobEnvironmentTest, BudgetSetsLimitFractionAndFrameworkKnobs) {
  JobSpec spec = SpecWithEnv({});
  spec.vram_bytes = 20ull << 30;
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a"}, 80ull << 30, false);
  EXPECT_EQ(Tail(env, 3), (std::vector<std::string>{
                              "GPUWARDEN_VRAM_LIMIT_BYTES=" + std::to_string(20ull << 30),
                              "GPUWARDEN_VRAM_FRACTION=0.25", "XLA_PYTHON_CLIENT_PREALLOCATE=false",
                              "XLA_PYTHON_CLIENT_MEM_FRACTION=0.25", "XLA_CLIENT_MEM_FRACTION=0.25",
                              "TF_FORCE_GPU_ALLOW_GROWTH=true"}));
}

TEST(BuildJobEnvironmentTest, FractionRoundsDownAndStaysWithinBounds) {
  JobSpec spec = SpecWithEnv({});
  auto fraction = [&](uint64_t vram, uint64_t total) {
    spec.vram_bytes = vram;
    for (const std::string& e : BuildJobEnvironment(spec, 1, {"GPU-a"}, total, false)) {
      if (e.rfind("GPUWARDEN_VRAM_FRACTION=", 0) == 0) return e.substr(24);
    }
    return std::string("absent");
  };
  EXPECT_EQ(fraction(1, 1000000), "0.0001");  // Never 0: that would allow nothing.
  EXPECT_EQ(fraction(1, 3), "0.3333");
  EXPECT_EQ(fraction(2, 3), "0.6666");   // Down, not to nearest.
  EXPECT_EQ(fraction(90, 80), "1");      // A budget above the GPU caps at the GPU.
  EXPECT_EQ(fraction(10, 0), "absent");  // Total unknown: no fraction at all.
  EXPECT_EQ(fraction(1000, 1001), "0.999");
}

TEST(BuildJobEnvironmentTest, UnknownTotalGivesLimitButNoFractions) {
  JobSpec spec = SpecWithEnv({});
  spec.vram_bytes = 1 << 30;
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a"}, 0, false);
  EXPECT_EQ(Tail(env, 3), (std::vector<std::string>{"GPUWARDEN_VRAM_LIMIT_BYTES=1073741824",
                                                    "XLA_PYTHON_CLIENT_PREALLOCATE=false",
                                                    "TF_FORCE_GPU_ALLOW_GROWTH=true"}));
}

TEST(BuildJobEnvironmentTest, UsersOwnFrameworkSettingsAreKept) {
  JobSpec spec = SpecWithEnv({"XLA_PYTHON_CLIENT_PREALLOCATE=true", "XLA_CLIENT_MEM_FRACTION=.1",
                              "TF_FORCE_GPU_ALLOW_GROWTH=false"});
  spec.vram_bytes = 40ull << 30;
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a"}, 80ull << 30, false);
  EXPECT_EQ(env, (std::vector<std::string>{
                     "XLA_PYTHON_CLIENT_PREALLOCATE=true", "XLA_CLIENT_MEM_FRACTION=.1",
                     "TF_FORCE_GPU_ALLOW_GROWTH=false", "CUDA_VISIBLE_DEVICES=GPU-a",
                     "CUDA_DEVICE_ORDER=PCI_BUS_ID", "GPUWARDEN_JOB_ID=1",
                     "GPUWARDEN_VRAM_LIMIT_BYTES=" + std::to_string(40ull << 30),
                     "GPUWARDEN_VRAM_FRACTION=0.5"}));
  // Either name of the JAX fraction counts as the user's choice.
  spec.env = {"XLA_PYTHON_CLIENT_MEM_FRACTION=.2"};
  const auto env2 = BuildJobEnvironment(spec, 1, {"GPU-a"}, 80ull << 30, false);
  EXPECT_EQ(std::count_if(env2.begin(), env2.end(),
                          [](const std::string& e) { return e.find("MEM_FRACTION") != e.npos; }),
            1);
}

TEST(BuildJobEnvironmentTest, MpsLimitPerGpuInMibReplacesTheUsers) {
  JobSpec spec = SpecWithEnv({"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=99G"});
  spec.vram_bytes = (3ull << 30) + 12345;  // Rounded down to whole MiB.
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a", "GPU-b"}, 0, true);
  EXPECT_EQ(std::count(env.begin(), env.end(),
                       "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-a=3072M,GPU-b=3072M"),
            1);
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) {
                            return e.rfind("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=", 0) == 0;
                          }),
            1);
  // Without MPS the user's setting is theirs to keep, and none is added.
  const auto no_mps = BuildJobEnvironment(spec, 1, {"GPU-a"}, 0, false);
  EXPECT_EQ(no_mps.front(), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=99G");
  EXPECT_EQ(std::count_if(no_mps.begin(), no_mps.end(),
                          [](const std::string& e) { return e.find("MPS") != e.npos; }),
            1);
}

// ---------------------------------------------------------------------------
// ExecCandidates

TEST(ExecCandidatesTest, SlashMeansNoLookup) {
  EXPECT_EQ(ExecCandidates("./run.sh", {"PATH=/x"}), (std::vector<std::string>{"./run.sh"}));
  EXPECT_EQ(ExecCandidates("/bin/true", {}), (std::vector<std::string>{"/bin/true"}));
  EXPECT_TRUE(ExecCandidates("", {"PATH=/x"}).empty());
}

TEST(ExecCandidatesTest, UsesTheJobsFirstPathWithEmptyElementsAsWorkingDirectory) {
  EXPECT_EQ(ExecCandidates("python", {"HOME=/h", "PATH=/opt/env/bin::/usr/bin/", "PATH=/no"}),
            (std::vector<std::string>{"/opt/env/bin/python", "python", "/usr/bin/python"}));
  EXPECT_EQ(ExecCandidates("x", {"PATH="}), (std::vector<std::string>{"x"}));
  EXPECT_EQ(ExecCandidates("x", {"NOPATH=1"}),
            (std::vector<std::string>{"/usr/local/bin/x", "/usr/bin/x", "/bin/x"}));
}

}  // namespace
}  // namespace gw::queue
