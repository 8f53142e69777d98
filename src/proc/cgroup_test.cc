// ParseCgroup over the shapes /proc/PID/cgroup takes under each container
// runtime, scheduler and systemd, in cgroup v1, v2 and hybrid layouts.
#include <gtest/gtest.h>

#include <string>

#include "proc/proc_parse.h"

namespace gw::proc {
namespace {

const std::string kId = "3f5e2d4c1b0a99887766554433221100ffeeddccbbaa00112233445566778899";
const std::string kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(ParseCgroup, EmptyInputGivesEmptyOwner) {
  ProcessOwner o = ParseCgroup("");
  EXPECT_FALSE(o.cgroup_path);
  EXPECT_FALSE(o.container_runtime);
  EXPECT_FALSE(o.container_id);
  EXPECT_FALSE(o.systemd_unit);
  EXPECT_FALSE(o.slurm_job_id);
  EXPECT_FALSE(ParseCgroup("garbage without colons\n").cgroup_path);
}

TEST(ParseCgroup, RootCgroupOnly) {
  // Inside a container's cgroup namespace, or an unmanaged host.
  ProcessOwner o = ParseCgroup("0::/\n");
  EXPECT_EQ(o.cgroup_path, "/");
  EXPECT_FALSE(o.container_id);
  EXPECT_FALSE(o.systemd_unit);
}

TEST(ParseCgroup, DockerCgroupfsDriverV2) {
  ProcessOwner o = ParseCgroup("0::/docker/" + kId + "\n");
  EXPECT_EQ(o.container_runtime, "docker");
  EXPECT_EQ(o.container_id, kId);
  EXPECT_EQ(o.cgroup_path, "/docker/" + kId);
  EXPECT_FALSE(o.systemd_unit);
}

TEST(ParseCgroup, DockerSystemdDriver) {
  ProcessOwner o = ParseCgroup("0::/system.slice/docker-" + kId + ".scope\n");
  EXPECT_EQ(o.container_runtime, "docker");
  EXPECT_EQ(o.container_id, kId);
  EXPECT_EQ(o.systemd_unit, "docker-" + kId + ".scope");
}

TEST(ParseCgroup, DockerNotAContainerWhenNotAnId) {
  ProcessOwner o = ParseCgroup("0::/docker/buildkit\n");
  EXPECT_FALSE(o.container_id);
  EXPECT_EQ(o.cgroup_path, "/docker/buildkit");
  // docker.service itself is a unit, not a container.
  ProcessOwner d = ParseCgroup("0::/system.slice/docker.service\n");
  EXPECT_FALSE(d.container_id);
  EXPECT_EQ(d.systemd_unit, "docker.service");
}

TEST(ParseCgroup, DockerCgroupV1PrefersPidsMemoryCpu) {
  const std::string v1 = "12:hugetlb:/docker/" + kId + "\n" +  //
                         "11:freezer:/docker/" + kId + "\n" +  //
                         "10:pids:/docker/" + kId + "\n" +     //
                         "9:memory:/docker/" + kId + "\n" +    //
                         "4:cpu,cpuacct:/docker/" + kId + "\n" + "1:name=systemd:/docker/" + kId +
                         "\n" + "0::/system.slice/containerd.service\n";
  ProcessOwner o = ParseCgroup(v1);
  EXPECT_EQ(o.container_runtime, "docker");
  EXPECT_EQ(o.container_id, kId);
  EXPECT_EQ(o.cgroup_path, "/docker/" + kId);
}

TEST(ParseCgroup, ContainerdCriUnderKubernetesSystemdDriver) {
  const std::string path =
      "/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod0c5a2b7e_1d9f_4a63_9c1e_5b8f6d2a7c33.slice/cri-containerd-" +
      kId + ".scope";
  ProcessOwner o = ParseCgroup("0::" + path + "\n");
  EXPECT_EQ(o.container_runtime, "kubernetes");
  EXPECT_EQ(o.container_id, kId);
  EXPECT_EQ(o.systemd_unit, "cri-containerd-" + kId + ".scope");
  EXPECT_EQ(o.cgroup_path, path);
}

TEST(ParseCgroup, KubernetesCgroupfsDriverV1) {
  const std::string path = "/kubepods/besteffort/pod0c5a2b7e-1d9f-4a63-9c1e-5b8f6d2a7c33/" + kId;
  ProcessOwner o = ParseCgroup("11:memory:" + path + "\n6:pids:" + path + "\n");
  EXPECT_EQ(o.container_runtime, "kubernetes");
  EXPECT_EQ(o.container_id, kId);
}

TEST(ParseCgroup, ContainerdWithoutKubernetes) {
  ProcessOwner o = ParseCgroup("0::/system.slice/cri-containerd-" + kId + ".scope\n");
  EXPECT_EQ(o.container_runtime, "containerd");
  EXPECT_EQ(o.container_id, kId);
  ProcessOwner n = ParseCgroup("0::/system.slice/nerdctl-" + kId + ".scope\n");
  EXPECT_EQ(n.container_runtime, "containerd");
  EXPECT_EQ(n.container_id, kId);
}

TEST(ParseCgroup, CriO) {
  ProcessOwner o = ParseCgroup("0::/machine.slice/crio-" + kId + ".scope\n");
  EXPECT_EQ(o.container_runtime, "cri-o");
  EXPECT_EQ(o.container_id, kId);
  ProcessOwner k = ParseCgroup("0::/kubepods.slice/kubepods-pod1.slice/crio-" + kId + ".scope\n");
  EXPECT_EQ(k.container_runtime, "kubernetes");
}

TEST(ParseCgroup, BareIdOutsideKnownParentsHasUnknownRuntime) {
  ProcessOwner o = ParseCgroup("0::/default/" + kId + "\n");
  EXPECT_EQ(o.container_id, kId);
  EXPECT_FALSE(o.container_runtime);
  // Not 64 lowercase hex: not an id.
  EXPECT_FALSE(ParseCgroup("0::/default/" + kId.substr(1) + "\n").container_id);
  EXPECT_FALSE(ParseCgroup("0::/default/3F5E" + kId.substr(4) + "\n").container_id);
}

TEST(ParseCgroup, PodmanRootfulAndRootless) {
  ProcessOwner o = ParseCgroup("0::/machine.slice/libpod-" + kId + ".scope\n");
  EXPECT_EQ(o.container_runtime, "podman");
  EXPECT_EQ(o.container_id, kId);
  const std::string rootless =
      "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId +
      ".scope/container\n";
  ProcessOwner r = ParseCgroup(rootless);
  EXPECT_EQ(r.container_runtime, "podman");
  EXPECT_EQ(r.container_id, kId);
  EXPECT_EQ(r.systemd_unit, "libpod-" + kId + ".scope");
}

TEST(ParseCgroup, PodmanConmonIsAttributedToItsContainer) {
  ProcessOwner o = ParseCgroup("0::/machine.slice/libpod-conmon-" + kId + ".scope\n");
  EXPECT_EQ(o.container_runtime, "podman");
  EXPECT_EQ(o.container_id, kId);  // Not "conmon-<id>".
  ProcessOwner c = ParseCgroup("5:pids:/libpod_parent/libpod-conmon-" + kId + "\n");
  EXPECT_EQ(c.container_runtime, "podman");
  EXPECT_EQ(c.container_id, kId);
  ProcessOwner p = ParseCgroup("5:pids:/libpod_parent/libpod-" + kId + "\n");
  EXPECT_EQ(p.container_id, kId);
}

TEST(ParseCgroup, Lxc) {
  ProcessOwner old_style = ParseCgroup("4:memory:/lxc/web01\n0::/\n");
  EXPECT_EQ(old_style.container_runtime, "lxc");
  EXPECT_EQ(old_style.container_id, "web01");
  ProcessOwner payload = ParseCgroup("0::/lxc.payload.gpu-box/system.slice/jupyter.service\n");
  EXPECT_EQ(payload.container_runtime, "lxc");
  EXPECT_EQ(payload.container_id, "gpu-box");
  EXPECT_EQ(payload.systemd_unit, "jupyter.service");
  ProcessOwner monitor = ParseCgroup("0::/lxc.monitor.gpu-box\n");
  EXPECT_EQ(monitor.container_runtime, "lxc");
  EXPECT_EQ(monitor.container_id, "gpu-box");
  // "lxc" as the last component names no container.
  EXPECT_FALSE(ParseCgroup("0::/lxc\n").container_id);
}

TEST(ParseCgroup, SlurmCgroupV1) {
  const std::string v1 =
      "11:devices:/slurm/uid_1000/job_123/step_0/task_0\n"
      "9:memory:/slurm/uid_1000/job_123/step_0/task_0\n"
      "4:cpuset:/slurm/uid_1000/job_123/step_0\n"
      "1:name=systemd:/system.slice/slurmd.service\n";
  ProcessOwner o = ParseCgroup(v1);
  EXPECT_EQ(o.slurm_job_id, "123");
  EXPECT_EQ(o.slurm_step, "0");
  EXPECT_EQ(o.cgroup_path, "/slurm/uid_1000/job_123/step_0/task_0");
  EXPECT_FALSE(o.container_id);
}

TEST(ParseCgroup, SlurmCgroupV2) {
  ProcessOwner o =
      ParseCgroup("0::/system.slice/slurmstepd.scope/job_4567/step_batch/user/task_0\n");
  EXPECT_EQ(o.slurm_job_id, "4567");
  EXPECT_EQ(o.slurm_step, "batch");
  EXPECT_EQ(o.systemd_unit, "slurmstepd.scope");
  // The job's own cgroup, above any step, has no step.
  EXPECT_FALSE(ParseCgroup("0::/system.slice/slurmstepd.scope/job_4567\n").slurm_step);
}

TEST(ParseSlurmstepdTitle, ReadsTheJobAndStepOfTheTitle) {
  auto batch = ParseSlurmstepdTitle({"slurmstepd: [15.batch]"});
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->job, "15");
  EXPECT_EQ(batch->step, "batch");
  // Split by NULs, or padded with spaces, it is the same title.
  auto zero = ParseSlurmstepdTitle({"slurmstepd:", "[2.0]  "});
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->job, "2");
  EXPECT_EQ(zero->step, "0");
  EXPECT_EQ(ParseSlurmstepdTitle({"slurmstepd: [9.extern]"})->step, "extern");
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{},
                                             {"slurmstepd"},
                                             {"slurmstepd: [15]"},
                                             {"slurmstepd: [x.0]"},
                                             {"slurmstepd: [15.]"},
                                             {"slurmstepd: [15.0"},
                                             {"slurmstepd: [15.0; rm]"},
                                             {"python", "slurmstepd: [15.0]"}}) {
    EXPECT_FALSE(ParseSlurmstepdTitle(bad)) << ::testing::PrintToString(bad);
  }
}

TEST(ParseCgroup, SlurmNodeNamedHierarchyAndNoJobOutsideSlurm) {
  EXPECT_EQ(ParseCgroup("6:pids:/slurm_node07/uid_1000/job_88/step_extern\n").slurm_job_id, "88");
  // job_N outside a slurm path is somebody's unit name, not a job.
  EXPECT_FALSE(ParseCgroup("0::/system.slice/job_5/x.service\n").slurm_job_id);
  // job_ without digits is not a job.
  EXPECT_FALSE(ParseCgroup("0::/slurm/uid_1/job_x/step_0\n").slurm_job_id);
}

TEST(ParseCgroup, SystemdUnitsInnermostWins) {
  ProcessOwner o =
      ParseCgroup("0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service\n");
  EXPECT_EQ(o.systemd_unit, "jupyter.service");
  EXPECT_FALSE(o.container_id);
  ProcessOwner s = ParseCgroup("0::/user.slice/user-1000.slice/session-4.scope\n");
  EXPECT_EQ(s.systemd_unit, "session-4.scope");
  ProcessOwner slice_only = ParseCgroup("0::/user.slice/user-1000.slice\n");
  EXPECT_FALSE(slice_only.systemd_unit);
  EXPECT_EQ(slice_only.cgroup_path, "/user.slice/user-1000.slice");
  ProcessOwner tmux = ParseCgroup(
      "0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
      "tmux-spawn-1c9e5a2b-7f1d-4d0c-8b1e-2a6f9b3c4d5e.scope\n");
  EXPECT_EQ(tmux.systemd_unit, "tmux-spawn-1c9e5a2b-7f1d-4d0c-8b1e-2a6f9b3c4d5e.scope");
}

TEST(ParseCgroup, HybridPrefersTheV1LineThatNamesMore) {
  // systemd hybrid mode: the unified line carries only the root; the session
  // scope is in the pids and name=systemd hierarchies, memory stays at a slice.
  const std::string hybrid =
      "12:memory:/user.slice\n"
      "7:pids:/user.slice/user-1000.slice/session-2.scope\n"
      "1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n"
      "0::/\n";
  ProcessOwner o = ParseCgroup(hybrid);
  EXPECT_EQ(o.systemd_unit, "session-2.scope");
  EXPECT_EQ(o.cgroup_path, "/user.slice/user-1000.slice/session-2.scope");
}

TEST(ParseCgroup, V2LineWinsTiesAgainstV1) {
  const std::string mixed =
      "7:pids:/system.slice/other.service\n"
      "0::/system.slice/mine.service\n";
  EXPECT_EQ(ParseCgroup(mixed).systemd_unit, "mine.service");
}

TEST(ParseCgroup, ContainerLineBeatsUnitLine) {
  // Docker on cgroup v1 under systemd hybrid: the unified hierarchy only
  // shows the daemon's unit, the v1 controllers show the container.
  const std::string hybrid = "9:memory:/docker/" + kId + "\n1:name=systemd:/docker/" + kId +
                             "\n0::/system.slice/containerd.service\n";
  ProcessOwner o = ParseCgroup(hybrid);
  EXPECT_EQ(o.container_id, kId);
  EXPECT_FALSE(o.systemd_unit);
}

TEST(ParseCgroup, InnermostContainerWinsWhenNested) {
  // kind: a Kubernetes pod container inside a docker container.
  const std::string path = "/docker/" + kId + "/kubepods/burstable/podabc/" + kId2;
  ProcessOwner o = ParseCgroup("0::" + path + "\n");
  EXPECT_EQ(o.container_id, kId2);
  EXPECT_EQ(o.container_runtime, "kubernetes");
  // Docker inside an LXC container.
  ProcessOwner l = ParseCgroup("0::/lxc.payload.box/system.slice/docker-" + kId + ".scope\n");
  EXPECT_EQ(l.container_runtime, "docker");
  EXPECT_EQ(l.container_id, kId);
}

TEST(ParseCgroup, PathWithColonAndCarriageReturn) {
  ProcessOwner o = ParseCgroup("0::/system.slice/odd:name.service\r\n");
  EXPECT_EQ(o.cgroup_path, "/system.slice/odd:name.service");
  EXPECT_EQ(o.systemd_unit, "odd:name.service");
}

TEST(ParseCgroup, NoTrailingNewline) {
  EXPECT_EQ(ParseCgroup("0::/system.slice/ssh.service").systemd_unit, "ssh.service");
}

}  // namespace
}  // namespace gw::proc
