#include "cli/slurm_node.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "os/fake_command_runner.h"

namespace gw::cli {
namespace {

using ::testing::HasSubstr;

// Sets (or, with nullptr, unsets) an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

TEST(LooksLikeSlurmHost, SlurmConfOrAConfigFileInItsPlaces) {
  std::set<std::string> files;
  auto exists = [&files](const std::string& p) { return files.count(p) > 0; };
  {
    ScopedEnv conf("SLURM_CONF", nullptr);
    EXPECT_FALSE(LooksLikeSlurmHost(exists));
    files = {"/run/slurm/conf/slurm.conf"};  // configless: slurmd's cache
    EXPECT_TRUE(LooksLikeSlurmHost(exists));
    files = {"/etc/slurm/slurm.conf"};
    EXPECT_TRUE(LooksLikeSlurmHost(exists));
  }
  // $SLURM_CONF decides when set: the file it names.
  ScopedEnv conf("SLURM_CONF", "/srv/cluster/slurm.conf");
  EXPECT_FALSE(LooksLikeSlurmHost(exists));
  files.insert("/srv/cluster/slurm.conf");
  EXPECT_TRUE(LooksLikeSlurmHost(exists));
}

TEST(SlurmNodeName, FlagThenSlurmdsNameThenTheShortHostName) {
  EXPECT_EQ(SlurmNodeName("gpu07"), "gpu07");
  {
    ScopedEnv env("SLURMD_NODENAME", "n2");
    EXPECT_EQ(SlurmNodeName(""), "n2");
  }
  ScopedEnv env("SLURMD_NODENAME", nullptr);
  const std::string host = SlurmNodeName("");
  EXPECT_FALSE(host.empty());
  EXPECT_EQ(host.find('.'), std::string::npos);
}

constexpr char kShowNode[] = "scontrol -o show node n2";

TEST(AttachSlurmNode, NamedNodeIsReadAndMappedOntoTheGpus) {
  os::FakeCommandRunner runner;
  runner.answers[kShowNode] = {0, "NodeName=n2 Arch=x86_64 Gres=gpu:a100:1\n", ""};
  runner.answers["squeue --json --nodelist=n2 --states=RUNNING,SUSPENDED,STOPPED,COMPLETING"] = {
      0,
      R"json({"meta": {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}},
          "jobs": [{"job_id": 7, "user_name": "alice", "name": "train", "job_state": "RUNNING",
                    "nodes": "n[1-2]", "gres_detail": ["gpu:a100:1(IDX:0)", "gpu:a100:1(IDX:0)"],
                    "start_time": 1700000000}]})json",
      ""};
  // No slurmd here: index 0 is the GPU with the lowest minor number.
  Snapshot s;
  s.gpus.resize(2);
  s.gpus[0].index = 0;
  s.gpus[0].minor_number = 5;
  s.gpus[1].index = 1;
  s.gpus[1].minor_number = 4;
  SlurmNodeArgs args;
  args.node = "n2";
  const Status st = AttachSlurmNode(args, /*offline_or_simulated=*/true, s, runner);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(s.slurm.has_value());
  EXPECT_EQ(s.slurm->gpu_map, "minor order");
  ASSERT_EQ(s.slurm->jobs.size(), 1u);
  EXPECT_EQ(s.slurm->jobs[0].id, "7");
  EXPECT_EQ(s.slurm->jobs[0].gpus, std::vector<unsigned>{1});
}

TEST(AttachSlurmNode, ANamedNodeSlurmCannotAnswerIsAnErrorAndAnUnreadSection) {
  os::FakeCommandRunner runner;
  runner.answers[kShowNode] = {1, "",
                               "slurm_load_node error: Unable to contact slurm controller\n"};
  Snapshot s;
  SlurmNodeArgs args;
  args.node = "n2";
  const Status st = AttachSlurmNode(args, true, s, runner);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "slurm");
  EXPECT_THAT(st.error().message, HasSubstr("--slurm-node n2: scontrol show node exited"));
  ASSERT_TRUE(s.slurm.has_value());
  ASSERT_TRUE(s.slurm->unread.has_value());
  EXPECT_THAT(*s.slurm->unread, HasSubstr("Unable to contact slurm controller"));
}

TEST(AttachSlurmNode, UnaskedItNeverTouchesADumpOrTheSimulatorOrANoSlurmRun) {
  os::FakeCommandRunner runner;
  Snapshot s;
  EXPECT_TRUE(AttachSlurmNode({}, /*offline_or_simulated=*/true, s, runner).ok());
  SlurmNodeArgs off;
  off.off = true;
  EXPECT_TRUE(AttachSlurmNode(off, false, s, runner).ok());
  EXPECT_FALSE(s.slurm.has_value());
  EXPECT_TRUE(runner.ran.empty());
}

TEST(AttachSlurmNode, UnaskedOnASlurmHostANonNodeIsQuietAndAFailureIsShown) {
  char path[] = "/tmp/gw-slurm-conf-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ScopedEnv conf("SLURM_CONF", path);
  ScopedEnv name("SLURMD_NODENAME", "n2");
  os::FakeCommandRunner runner;
  // A login node: Slurm has no such node. No section, no error.
  runner.answers[kShowNode] = {1, "Node n2 not found\n", ""};
  Snapshot s;
  EXPECT_TRUE(AttachSlurmNode({}, false, s, runner).ok());
  EXPECT_FALSE(s.slurm.has_value());
  EXPECT_EQ(runner.ran, std::vector<std::string>{kShowNode});
  // A node whose controller does not answer: shown, but not an error.
  runner.answers[kShowNode] = {0, "NodeName=n2 Arch=x86_64\n", ""};
  runner.answers["squeue --json --nodelist=n2 --states=RUNNING,SUSPENDED,STOPPED,COMPLETING"] = {
      1, "", "squeue: error: Unable to contact slurm controller (connect failure)\n"};
  EXPECT_TRUE(AttachSlurmNode({}, false, s, runner).ok());
  ASSERT_TRUE(s.slurm.has_value());
  EXPECT_EQ(s.slurm->name, "n2");
  ASSERT_TRUE(s.slurm->unread.has_value());
  EXPECT_THAT(*s.slurm->unread, HasSubstr("Unable to contact slurm controller"));
  unlink(path);
}

}  // namespace
}  // namespace gw::cli
