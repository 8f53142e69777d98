// A real Slurm (Debian 12's 22.05) for end-to-end tests, private to one test
// binary: its own munged (key and socket in a temp directory), MariaDB and
// slurmdbd for accounting (QOS and association limits are enforced; priorities
// are multifactor, so sprio has factors to show), slurmctld and one slurmd per
// node, all on this host and listening on 127.0.0.1 only,
// selected by their own slurm.conf (SLURM_CONF). Each node's GPUs are
// character devices made with mknod (c 1 3, as /dev/null) named in gres.conf.
// Needs root (mknod, slurmd) and the packages scripts/setup.sh installs.
//
// SlurmEnvironment starts it once per test binary (a ::testing::Environment);
// tests reach it through SlurmEnvironment::Cluster() and skip, with the reason,
// when it could not be started because Slurm is not installed or the test is
// not root. Any other failure to start fails the tests that need it.
#ifndef GPUWARDEN_TESTS_E2E_SLURM_CLUSTER_H_
#define GPUWARDEN_TESTS_E2E_SLURM_CLUSTER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/user_process.h"

namespace gw::test {

struct SlurmNodeSpec {
  std::string name;      // NodeName, "n1"
  std::string gpu_type;  // gres type, "a100"
  int gpus = 0;
  int cpus = 4;
  // A cloud node (State=CLOUD, partition "cloud" alone): powered down at the
  // start, its slurmd started by Slurm's ResumeProgram and stopped by its
  // SuspendProgram, the shipped templates (packaging/slurm) with their
  // command filled in. Slurm 22.05 hides it from sinfo while powered down.
  bool cloud = false;
};

// n1, n2: two a100 each; n3: two l40s. Partitions: gpu (the default) and
// high, whose jobs preempt gpu's by requeueing them. n4: a cloud node
// without GPUs, suspended after kCloudSuspendTimeS idle.
inline constexpr int kCloudSuspendTimeS = 5;
std::vector<SlurmNodeSpec> DefaultSlurmNodes();

// Why Slurm cannot run here (a binary missing, not root), or nullopt.
std::optional<std::string> SlurmUnavailableReason();

class SlurmCluster {
 public:
  // Starts munged, slurmctld and the nodes' slurmd and waits until sinfo shows
  // every node idle with its GPUs. nullptr on failure, *error saying why (with
  // the daemons' log tails); whatever was started is stopped again.
  static std::unique_ptr<SlurmCluster> Start(const std::vector<SlurmNodeSpec>& nodes,
                                             std::string* error);
  // Cancels every job, then stops every process it started (by PID): the
  // daemons and anything still carrying this cluster's SLURM_CONF (slurmstepd,
  // job processes).
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Runs a Slurm client ("sinfo", "sbatch", ...: argv[0] a name in /usr/bin)
  // against this cluster.
  RunResult Run(std::vector<std::string> argv, double timeout_s = 30) const;
  // Options for running any program against this cluster (SLURM_CONF set).
  RunOptions ClientOptions() const;

  // Submits `sbatch args... --wrap command` (output to the cluster's
  // directory); the job id, or nullopt with *error set.
  std::optional<int64_t> Submit(const std::vector<std::string>& args, const std::string& command,
                                std::string* error) const;
  // Runs `sacctmgr -i` on these commands, one per line ("add qos q
  // MaxTRESPerUser=gres/gpu=1"); false, with *error, when it fails.
  bool Sacctmgr(const std::vector<std::string>& commands, std::string* error) const;
  // Cancels every job and waits until none is pending or running and every
  // node is idle again. False, with *error, when that does not happen in time.
  bool CancelAllAndWait(std::string* error) const;

  const std::string& dir() const { return dir_.path(); }
  // The log gpuwarden-power writes for the cloud nodes, and the file where
  // each resume appends the SigBlk line of the command it started.
  std::string power_log() const { return dir() + "/log/power.log"; }
  std::string resume_signals() const { return dir() + "/log/resume-sigblk"; }
  const std::string& conf() const { return conf_; }
  const std::vector<SlurmNodeSpec>& nodes() const { return nodes_; }
  double startup_seconds() const { return startup_seconds_; }
  // The last lines of every daemon's log, for failure messages.
  std::string LogTails() const;

 private:
  SlurmCluster() = default;
  bool Launch(std::string* error);
  // MariaDB and slurmdbd, up and answering sacctmgr.
  bool StartAccounting(int db_port, int dbd_port, std::string* error);
  bool StartDaemon(const std::string& label, const std::vector<std::string>& argv,
                   std::string* error);
  // The cloud nodes' ResumeProgram and SuspendProgram, from the templates.
  bool WritePowerPrograms(std::string* error);
  bool AllNodesIdle(std::string* why) const;
  void Stop();

  TempDir dir_;  // First member: removed after the processes are gone.
  std::string conf_;
  std::string munge_socket_;
  std::vector<SlurmNodeSpec> nodes_;
  std::vector<std::unique_ptr<TestChild>> daemons_;  // munged, slurmctld, slurmd...
  std::vector<std::string> daemon_names_;
  double startup_seconds_ = 0;
};

// Starts the cluster in SetUp and stops it in TearDown: once per test binary.
class SlurmEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;
  // The running cluster, or nullptr (then SkipReason or StartError says why).
  static SlurmCluster* Cluster();
  static const std::string& SkipReason();  // Slurm unavailable: tests skip
  static const std::string& StartError();  // it should have started: tests fail
};

// In a test: skips with the reason when Slurm is unavailable, fails when the
// cluster did not start, else declares `SlurmCluster& var`.
#define GW_REQUIRE_SLURM_CLUSTER(var)                                                            \
  if (!::gw::test::SlurmEnvironment::SkipReason().empty())                                       \
    GTEST_SKIP() << ::gw::test::SlurmEnvironment::SkipReason();                                  \
  ASSERT_NE(::gw::test::SlurmEnvironment::Cluster(), nullptr)                                    \
      << "the Slurm test cluster did not start: " << ::gw::test::SlurmEnvironment::StartError(); \
  ::gw::test::SlurmCluster& var = *::gw::test::SlurmEnvironment::Cluster()

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_SLURM_CLUSTER_H_
