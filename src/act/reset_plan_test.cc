#include "act/reset_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/units.h"

namespace gw::act {
namespace {

using ::testing::HasSubstr;

Snapshot TwoGpus() {
  Snapshot s;
  s.source = SnapshotSource::kNvml;
  s.processes_scanned = true;
  for (unsigned i = 0; i < 2; ++i) {
    Gpu g;
    g.index = i;
    g.name = "NVIDIA A100-SXM4-80GB";
    g.pci_bus_id = i == 0 ? "00000000:01:00.0" : "00000000:41:00.0";
    g.minor_number = i;
    s.gpus.push_back(g);
  }
  return s;
}

HostProcess Host(pid_t pid, std::string comm, std::vector<std::string> files,
                 std::string user = "root") {
  HostProcess h;
  h.pid = pid;
  h.comm = std::move(comm);
  h.user = std::move(user);
  h.state = ProcessState::kSleeping;
  h.device_files = std::move(files);
  return h;
}

void List(Snapshot& s, unsigned gpu, pid_t pid, uint64_t bytes,
          GpuProcessType type = GpuProcessType::kCompute) {
  GpuProcess p;
  p.pid = pid;
  p.used_memory_bytes = bytes;
  p.type = type;
  s.gpus[gpu].processes.push_back(p);
}

std::vector<ResetStepKind> Kinds(const ResetPlan& plan) {
  std::vector<ResetStepKind> out;
  for (const ResetStep& s : plan.steps) out.push_back(s.kind);
  return out;
}

const ResetStep* StepOf(const ResetPlan& plan, ResetStepKind kind) {
  for (const ResetStep& s : plan.steps) {
    if (s.kind == kind) return &s;
  }
  return nullptr;
}

TEST(ResetPlan, EveryBlockerIsNamedInTheOrderToStopIt) {
  Snapshot s = TwoGpus();
  const std::vector<std::string> all = {"/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia1"};
  List(s, 1, 4242, 30 * kGiB);
  s.processes[4242] = Host(4242, "python", {"/dev/nvidiactl", "/dev/nvidia1"}, "alice");
  List(s, 1, 2150, 400 << 20, GpuProcessType::kGraphics);
  s.processes[2150] = Host(2150, "Xorg", {"/dev/nvidiactl", "/dev/nvidia1"});
  s.processes[900] = Host(900, "nvidia-persiste", all);
  s.processes[901] = Host(901, "nv-hostengine", all);
  s.processes[902] = Host(902, "nv-fabricmanage", {"/dev/nvidiactl", "/dev/nvidia-nvswitchctl"});
  s.processes[903] = Host(903, "nvidia-cuda-mps", {"/dev/nvidiactl", "/dev/nvidia1"});
  s.processes[903].cmdline = {"nvidia-cuda-mps-control", "-d"};
  s.processes[904] = Host(904, "nvtop", {"/dev/nvidiactl", "/dev/nvidia1"}, "bob");
  s.processes[905] = Host(905, "python", {"/dev/nvidiactl", "/dev/nvidia0"}, "carol");  // GPU 0.
  const std::vector<proc::LoadedModule> modules = {{"nvidia_drm", 4, ""}, {"nvidia", 220, ""}};
  const ResetPlan plan = PlanReset(s, 1, {}, modules, true);
  EXPECT_TRUE(plan.reset_can_help);
  EXPECT_EQ(plan.pci_bus_id, "00000000:41:00.0");
  EXPECT_EQ(Kinds(plan),
            (std::vector<ResetStepKind>{
                ResetStepKind::kEndJobs, ResetStepKind::kStopDisplay, ResetStepKind::kStopMps,
                ResetStepKind::kStopMonitors, ResetStepKind::kStopDriverDaemons,
                ResetStepKind::kStopFabricManager, ResetStepKind::kUnloadModule,
                ResetStepKind::kReset, ResetStepKind::kRestart, ResetStepKind::kCheck}));
  const ResetStep& jobs = *StepOf(plan, ResetStepKind::kEndJobs);
  ASSERT_EQ(jobs.holders.size(), 2u);  // python on GPU 1 and nvtop; not carol's on GPU 0.
  EXPECT_EQ(jobs.holders[0].text, "PID 4242 python (alice)");
  EXPECT_EQ(jobs.holders[0].bytes, 30 * kGiB);
  EXPECT_THAT(jobs.holders[1].text, HasSubstr("PID 904 nvtop (bob), holds its device file"));
  EXPECT_THAT(jobs.commands[0], HasSubstr("gpuwarden kill 4242 904"));
  EXPECT_THAT(StepOf(plan, ResetStepKind::kStopDisplay)->commands[0],
              HasSubstr("systemctl stop display-manager.service"));
  EXPECT_THAT(StepOf(plan, ResetStepKind::kStopMps)->commands[0],
              HasSubstr("echo quit | nvidia-cuda-mps-control"));
  EXPECT_THAT(StepOf(plan, ResetStepKind::kStopMonitors)->commands[0],
              HasSubstr("systemctl stop nvidia-dcgm.service"));
  EXPECT_THAT(StepOf(plan, ResetStepKind::kStopDriverDaemons)->commands[0],
              HasSubstr("systemctl stop nvidia-persistenced.service"));
  EXPECT_THAT(StepOf(plan, ResetStepKind::kStopFabricManager)->commands[0],
              HasSubstr("systemctl stop nvidia-fabricmanager.service"));
  EXPECT_THAT(StepOf(plan, ResetStepKind::kUnloadModule)->why, HasSubstr("used 4 times"));
  EXPECT_EQ(StepOf(plan, ResetStepKind::kReset)->commands[0],
            "sudo nvidia-smi -r -i 00000000:41:00.0");
  // Started again in reverse: the module first, the display last.
  const std::vector<std::string>& restart = StepOf(plan, ResetStepKind::kRestart)->commands;
  ASSERT_EQ(restart.size(), 6u);
  EXPECT_EQ(restart.front(), "sudo modprobe nvidia_drm");
  EXPECT_EQ(restart[1], "sudo systemctl start nvidia-fabricmanager.service");
  EXPECT_EQ(restart.back(), "sudo systemctl start display-manager.service");
  EXPECT_TRUE(plan.notes.empty());
}

TEST(ResetPlan, EndedStuckAndZombieHoldersNeedNoKillOrCannotTakeOne) {
  Snapshot s = TwoGpus();
  List(s, 0, 31337, 24 * kGiB);  // Not in /proc: ended.
  List(s, 0, 5000, 8 * kGiB);
  s.processes[5000] = Host(5000, "python", {"/dev/nvidia0"}, "alice");
  s.processes[5000].state = ProcessState::kDiskSleep;
  const ResetPlan plan = PlanReset(s, 0, {}, std::vector<proc::LoadedModule>{}, true);
  EXPECT_EQ(StepOf(plan, ResetStepKind::kEndJobs), nullptr);
  ASSERT_NE(StepOf(plan, ResetStepKind::kWaitTeardown), nullptr);
  EXPECT_EQ(StepOf(plan, ResetStepKind::kWaitTeardown)->holders[0].pid, 31337);
  const ResetStep& stuck = *StepOf(plan, ResetStepKind::kStuck);
  EXPECT_THAT(stuck.holders[0].text, HasSubstr("in D state"));
  EXPECT_THAT(stuck.why, HasSubstr("reboot"));
  EXPECT_EQ(StepOf(plan, ResetStepKind::kUnloadModule), nullptr);  // nvidia_drm not loaded.
  // Where /proc cannot see every process, the absent PID is a job to end.
  const ResetPlan hidden = PlanReset(s, 0, {}, std::vector<proc::LoadedModule>{}, false);
  EXPECT_EQ(StepOf(hidden, ResetStepKind::kWaitTeardown), nullptr);
  EXPECT_EQ(StepOf(hidden, ResetStepKind::kEndJobs)->holders[0].pid, 31337);
}

TEST(ResetPlan, ALostGpuCannotBeResetAndADumpSaysWhatItCannotTell) {
  Snapshot s = TwoGpus();
  s.gpus[1].unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 1u, 15};
  const ResetPlan lost = PlanReset(s, 1, {}, std::nullopt, true);
  EXPECT_FALSE(lost.reset_can_help);
  EXPECT_THAT(lost.blockers[0], HasSubstr("fallen off the bus"));
  EXPECT_THAT(StepOf(lost, ResetStepKind::kReset)->title, HasSubstr("Reboot the node"));
  EXPECT_EQ(StepOf(lost, ResetStepKind::kRestart), nullptr);

  Snapshot dump = TwoGpus();
  dump.source = SnapshotSource::kXmlDump;
  dump.processes_scanned = false;
  List(dump, 0, 2150, 400 << 20, GpuProcessType::kGraphics);
  dump.gpus[0].processes.back().name = "/usr/lib/xorg/Xorg";
  List(dump, 0, 3301, kGiB);
  dump.gpus[0].processes.back().name = "nvidia-cuda-mps-server";
  const ResetPlan plan = PlanReset(dump, 0, {}, std::nullopt, false);
  EXPECT_FALSE(plan.live);
  EXPECT_EQ(StepOf(plan, ResetStepKind::kStopDisplay)->holders[0].text, "PID 2150 Xorg");
  EXPECT_NE(StepOf(plan, ResetStepKind::kStopMps), nullptr);
  ASSERT_EQ(plan.notes.size(), 2u);
  EXPECT_THAT(plan.notes[0], HasSubstr("lsmod"));
  EXPECT_THAT(plan.notes[1], HasSubstr("from a dump"));
}

TEST(ResetPlan, HostileNamesAreSanitised) {
  Snapshot s = TwoGpus();
  List(s, 0, 6000, kGiB);
  s.processes[6000] = Host(6000, "evil\x1b[2J", {"/dev/nvidia0"}, "mallory");
  const ResetPlan plan = PlanReset(s, 0, {}, std::nullopt, true);
  const std::string& text = StepOf(plan, ResetStepKind::kEndJobs)->holders[0].text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_THAT(text, HasSubstr("PID 6000"));
}

}  // namespace
}  // namespace gw::act
