// Verdicts per GPU and for the server, the summary line, ranking and per-user holdings.
#include "diagnose/verdict.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/test_util.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace fixtures;  // NOLINT

// Every GPU of `s` runs a real job: `gib` memory at `sm` %.
void Busy(Snapshot& s, unsigned gpu, uint64_t gib, unsigned sm, std::string user, pid_t pid) {
  AddProcess(
      s, {.pid = pid, .gpu = gpu, .bytes = gib * kGiB, .sm = sm, .user = user, .age_s = 5 * 3600});
  SetLoad(s, gpu, sm);
}

TEST(VerdictTest, HealthyServerIsOkWithNoFindings) {
  for (size_t samples : {1u, 3u, 60u}) {
    auto history = Window(HealthyServer(), samples);
    Diagnosis d = Diagnose(history, {});
    EXPECT_EQ(d.server, Verdict::kOk);
    EXPECT_TRUE(d.findings.empty()) << ::testing::PrintToString(Codes(d.findings));
    EXPECT_EQ(d.summary, "OK — all 8 GPUs free");
    ASSERT_EQ(d.gpus.size(), 8u);
    EXPECT_EQ(d.gpus[0].line,
              "GPU 0 OK, free — VRAM 0.0 % (1 MiB of 80 GiB), util 0 %, no process");
    for (const GpuVerdict& g : d.gpus) {
      EXPECT_EQ(g.verdict, Verdict::kOk);
      EXPECT_EQ(g.state, GpuState::kFree);
    }
  }
}

TEST(VerdictTest, NormalUseIsOkWithoutWarnings) {
  // One job per GPU, half the memory, working: in use with room, not a problem.
  Snapshot s = HealthyServer();
  for (unsigned g = 0; g < 8; ++g) Busy(s, g, 40, 70, "alice", 1000 + g);
  for (Gpu& g : s.gpus) g.pcie.link_gen_current = 5;
  Diagnosis d = Diagnose(Window(s, 3), {});
  EXPECT_EQ(d.server, Verdict::kOk);
  for (const Finding& f : d.findings) EXPECT_EQ(f.severity, Severity::kInfo) << f.code;
  EXPECT_THAT(d.gpus[0].line,
              HasSubstr("GPU 0 OK, in use — VRAM 50.0 % (40.0 GiB of 80 GiB), util 70 %, "
                        "1 process (alice); room: 39.5 GiB free, 30 % compute free"));
  EXPECT_THAT(d.summary, HasSubstr("OK — 0 of 8 GPUs free; room on GPU 0"));
}

TEST(VerdictTest, GenuineShortageIsBusy) {
  Snapshot s = HealthyServer();
  for (unsigned g = 0; g < 7; ++g) Busy(s, g, 78, 80, g % 2 ? "bob" : "alice", 1000 + g);
  Busy(s, 7, 20, 50, "carol", 1007);
  Diagnosis d = DiagnoseOne(s);
  // One free GPU out of eight does not make a shared server OK.
  EXPECT_EQ(d.server, Verdict::kBusy);
  EXPECT_THAT(d.summary, HasSubstr("BUSY — resource shortage: 7/8 GPUs with memory full"));
  EXPECT_THAT(d.summary, HasSubstr("0 of 8 GPUs free; room on GPU 7"));
  EXPECT_EQ(d.gpus[7].verdict, Verdict::kOk);
  Busy(s, 7, 58, 50, "carol", 1008);  // Now 78 GiB there too.
  d = DiagnoseOne(s);
  EXPECT_EQ(d.server, Verdict::kBusy);
  EXPECT_EQ(d.summary, "BUSY — resource shortage: 8/8 GPUs with memory full; 0 of 8 GPUs free");
  for (const GpuVerdict& g : d.gpus) EXPECT_EQ(g.verdict, Verdict::kBusy) << g.line;
  EXPECT_THAT(d.gpus[1].line, HasSubstr("GPU 1 BUSY — VRAM 97.5 % (78.0 GiB of 80 GiB), util 80 %, "
                                        "1 process (bob) [VRAM_EXHAUSTED]"));
}

TEST(VerdictTest, IdleHoldersMakeItReclaimable) {
  Snapshot s = HealthyServer(4);
  for (unsigned g = 0; g < 3; ++g) Busy(s, g, 78, 80, "bob", 1000 + g);
  // GPU 3: the Jupyter kernel, 70 GiB for two days, plus 8 GiB of real work.
  AddProcess(
      s, {.pid = 4242, .gpu = 3, .bytes = 70 * kGiB, .sm = 0, .user = "alice", .age_s = 2 * 86400});
  AddProcess(s, {.pid = 4300, .gpu = 3, .bytes = 8 * kGiB, .sm = 20, .user = "carol"});
  SetLoad(s, 3, 20);
  Diagnosis d = DiagnoseOne(s, IdleAtOnce());
  ASSERT_EQ(d.gpus.size(), 4u);
  EXPECT_EQ(d.gpus[3].verdict, Verdict::kReclaimable);
  EXPECT_EQ(d.gpus[3].reclaimable_bytes, 70 * kGiB);
  EXPECT_THAT(d.gpus[3].line, HasSubstr("70 GiB held by idle or stuck holders"));
  EXPECT_EQ(d.gpus[0].verdict, Verdict::kBusy);
  EXPECT_EQ(d.server, Verdict::kReclaimable);
  EXPECT_EQ(d.summary,
            "RECLAIMABLE — memory held without work: 4/4 GPUs with memory full; 1 idle holder "
            "could free 70 GiB; 0 of 4 GPUs free");
}

// The headline puts each GPU under the word its state says: a GPU whose
// memory is held by an idle holder is not "busy".
TEST(VerdictTest, HeadlineNamesIdleHeldGpusApartFromBusyOnes) {
  Snapshot s = HealthyServer(4);
  Busy(s, 0, 78, 95, "bob", 1000);
  AddProcess(
      s, {.pid = 4242, .gpu = 2, .bytes = 70 * kGiB, .sm = 0, .user = "alice", .age_s = 2 * 86400});
  SetLoad(s, 2, 0);
  const Diagnosis d = DiagnoseOne(s, IdleAtOnce());
  ASSERT_EQ(d.gpus[2].verdict, Verdict::kReclaimable);
  EXPECT_THAT(d.summary, HasSubstr("busy: GPU 0; held without work: GPU 2"));
  EXPECT_THAT(d.summary, Not(HasSubstr("busy: GPU 0,2")));
}

TEST(VerdictTest, IdleHolderTooSmallToHelpStaysBusy) {
  Snapshot s = HealthyServer(1);
  AddProcess(s, {.pid = 10, .gpu = 0, .bytes = 2 * kGiB, .sm = 0, .age_s = 86400});
  Busy(s, 0, 76, 80, "bob", 11);
  Diagnosis d = DiagnoseOne(s, IdleAtOnce());
  EXPECT_EQ(d.gpus[0].verdict, Verdict::kBusy);
  EXPECT_EQ(d.server, Verdict::kBusy);
  EXPECT_EQ(d.summary,
            "BUSY — resource shortage: 1/1 GPUs with memory full; 1 idle holder could free 2 GiB; "
            "0 of 1 GPU free");
}

TEST(VerdictTest, ExclusiveHeldByOrphanIsReclaimable) {
  Snapshot s = HealthyServer(1);
  GpuAt(s, 0)->compute_mode = ComputeMode::kExclusiveProcess;
  AddProcess(s, {.pid = 5001,
                 .gpu = 0,
                 .bytes = 1 * kGiB,
                 .sm = 0,
                 .ppid = 1,
                 .pgid = 5000,
                 .parent_comm = "systemd"});
  Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(d.gpus[0].verdict, Verdict::kReclaimable) << d.gpus[0].line;
  EXPECT_EQ(d.server, Verdict::kReclaimable);
  // The same GPU held by a working process is busy.
  Snapshot working = HealthyServer(1);
  GpuAt(working, 0)->compute_mode = ComputeMode::kExclusiveProcess;
  Busy(working, 0, 10, 70, "bob", 77);
  EXPECT_EQ(DiagnoseOne(working).gpus[0].verdict, Verdict::kBusy);
}

TEST(VerdictTest, LostGpuIsAFault) {
  Snapshot s = HealthyServer();
  ProbeError lost{"nvml", "gpu_lost", "nvmlDeviceGetHandleByIndex_v2 on GPU 3: GPU is lost", 3u,
                  15};
  Gpu bare;
  bare.index = 3;
  bare.unreachable = lost;
  s.gpus[3] = bare;
  s.errors.push_back(lost);
  kmsg::KernelEvent e;
  e.time_unix_ms = kT0 - 60'000;
  e.pci_bus_id = "0000:48:00";
  e.xid = 79;
  e.kind = kmsg::kKindXid;
  e.raw = "NVRM: Xid (PCI:0000:48:00): 79, GPU has fallen off the bus.";
  // NVML read the GPU's PCI address before the handle failed.
  s.gpus[3].pci_bus_id = "00000000:48:00.0";
  std::vector<kmsg::KernelEvent> events = {e};
  Diagnosis d = DiagnoseOne(s, {}, events);
  EXPECT_EQ(d.server, Verdict::kFault);
  EXPECT_EQ(d.summary,
            "FAULT — hardware: GPU 3 (PCI 0000:48:00) fell off the bus (Xid 79); 7 other GPUs OK");
  EXPECT_EQ(d.gpus[3].verdict, Verdict::kFault);
  EXPECT_EQ(d.gpus[3].line, "GPU 3 FAULT — fell off the bus (Xid 79) [XID_FATAL, GPU_LOST]");
  EXPECT_EQ(d.findings[0].code, "XID_FATAL");
  EXPECT_EQ(d.findings[1].code, "GPU_LOST");
  for (unsigned g : {0u, 1u, 2u, 4u, 5u, 6u, 7u}) EXPECT_EQ(d.gpus[g].verdict, Verdict::kOk);
  // Without the kernel log, NVML alone says it.
  d = DiagnoseOne(s);
  EXPECT_EQ(d.summary,
            "FAULT — hardware: GPU 3 (PCI 0000:48:00) is lost: it fell off the bus "
            "(nvmlDeviceGetHandleByIndex_v2 on GPU 3: GPU is lost); 7 other GPUs OK");
}

TEST(VerdictTest, FaultBeatsBusyAndDegraded) {
  Snapshot s = HealthyServer(3);
  for (unsigned g = 0; g < 3; ++g) Busy(s, g, 79, 95, "bob", 100 + g);
  GpuAt(s, 1)->remapped_rows.pending = true;
  GpuAt(s, 2)->ecc.volatile_uncorrected = 1;
  Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(d.gpus[0].verdict, Verdict::kBusy);
  EXPECT_EQ(d.gpus[1].verdict, Verdict::kDegraded);
  EXPECT_EQ(d.gpus[2].verdict, Verdict::kFault);
  EXPECT_EQ(d.server, Verdict::kFault);
  EXPECT_EQ(d.findings[0].code, "ECC_DBE_VOLATILE");
  EXPECT_EQ(d.findings[1].code, "ROW_REMAP_PENDING");
  EXPECT_THAT(d.summary, HasSubstr("FAULT — hardware: GPU 2 had 1 uncorrectable ECC error"));
  EXPECT_THAT(d.summary, HasSubstr("; other GPUs: 1 BUSY, 1 DEGRADED"));

  GpuAt(s, 2)->ecc.volatile_uncorrected = 0;
  d = DiagnoseOne(s);
  EXPECT_EQ(d.server, Verdict::kDegraded);
  EXPECT_THAT(d.summary, HasSubstr("DEGRADED — hardware: GPU 1 has a row remap waiting"));
}

TEST(VerdictTest, DriverProblemsAreServerFaults) {
  Snapshot s;
  s.time_unix_ms = kT0;
  s.errors.push_back(ProbeError{"nvml", "version_mismatch",
                                "Failed to initialize NVML: Driver/library version mismatch",
                                std::nullopt, 18});
  Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(d.server, Verdict::kFault);
  EXPECT_THAT(d.summary, HasSubstr("FAULT — driver: Failed to initialize NVML: Driver/library "
                                   "version mismatch"));
  EXPECT_TRUE(d.gpus.empty());
}

TEST(VerdictTest, UnknownWhenWeCouldNotLook) {
  Diagnosis d = Diagnose({}, {});
  EXPECT_EQ(d.server, Verdict::kUnknown);
  EXPECT_EQ(d.summary, "UNKNOWN — no snapshot to diagnose");

  Snapshot none;
  none.errors.push_back(ProbeError{"nvml", "library_not_found",
                                   "libnvidia-ml.so.1: cannot open shared object file",
                                   std::nullopt, std::nullopt});
  d = DiagnoseOne(none);
  EXPECT_EQ(d.server, Verdict::kUnknown);
  EXPECT_EQ(d.summary,
            "UNKNOWN — could not look: libnvidia-ml.so.1: cannot open shared object file");

  // The probe stopped before GPUs 1 and 2: they have no data.
  Snapshot partial = HealthyServer(3);
  for (unsigned g : {1u, 2u}) {
    Gpu bare;
    bare.index = g;
    partial.gpus[g] = bare;
  }
  d = DiagnoseOne(partial);
  EXPECT_EQ(d.gpus[1].verdict, Verdict::kUnknown);
  EXPECT_EQ(d.gpus[0].verdict, Verdict::kOk);
  EXPECT_EQ(d.server, Verdict::kOk);
  EXPECT_EQ(d.summary, "OK — 1 of 3 GPUs free (GPU 0); 2 GPUs could not be read");
  EXPECT_THAT(d.gpus[1].line, HasSubstr("GPU 1 UNKNOWN — no data"));

  Snapshot denied = HealthyServer(1);
  denied.gpus[0] = Gpu{};
  denied.gpus[0].unreachable =
      ProbeError{"nvml", "no_permission", "Insufficient Permissions", 0u, 4};
  d = DiagnoseOne(denied);
  EXPECT_EQ(d.gpus[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(d.server, Verdict::kUnknown);
}

TEST(VerdictTest, NeedDecidesTheServer) {
  Snapshot s = HealthyServer(4);
  for (unsigned g = 0; g < 3; ++g) Busy(s, g, 60, 50, "bob", 100 + g);
  DiagnoseOptions o = IdleAtOnce();
  o.need = *ParseNeed("2x40G");
  Diagnosis d = DiagnoseOne(s, o);
  EXPECT_EQ(d.server, Verdict::kBusy);  // Only GPU 3 has 40 GiB free.
  EXPECT_THAT(
      d.summary,
      HasSubstr("BUSY — your need 2x40G does not fit now: Free memory of the usable GPUs adds up"));
  EXPECT_THAT(d.summary, HasSubstr("room would come from GPU 0: PID 100 python (bob): 60 GiB"));

  // An idle holder on GPU 2 would make room.
  Snapshot r = HealthyServer(4);
  for (unsigned g = 0; g < 2; ++g) Busy(r, g, 60, 50, "bob", 100 + g);
  AddProcess(r, {.pid = 4242, .gpu = 2, .bytes = 60 * kGiB, .sm = 0, .age_s = 86400});
  d = DiagnoseOne(r, o);
  EXPECT_EQ(d.server, Verdict::kReclaimable);

  o.need = *ParseNeed("1x40G");
  d = DiagnoseOne(s, o);
  EXPECT_EQ(d.server, Verdict::kOk);
  EXPECT_THAT(d.summary, HasSubstr("Your need 40G fits now on GPU 3"));
}

TEST(VerdictTest, CallersEnvironmentIsMentioned) {
  DiagnoseOptions o;
  o.cuda_visible_devices = "";
  Diagnosis d = DiagnoseOne(HealthyServer(2), o);
  EXPECT_EQ(d.server, Verdict::kOk);
  EXPECT_EQ(d.summary,
            "OK — all 2 GPUs free; but CUDA_VISIBLE_DEVICES=\"\" selects no GPU: CUDA programs "
            "see no device");
}

TEST(VerdictTest, OfflineDumpWithoutProc) {
  Snapshot s = HealthyServer(2);
  s.source = SnapshotSource::kXmlDump;
  for (unsigned g = 0; g < 2; ++g) {
    AddProcess(s, {.pid = static_cast<pid_t>(100 + g),
                   .gpu = g,
                   .bytes = 79 * kGiB,
                   .sm = std::nullopt,
                   .in_proc = false});
    GpuAt(s, g)->utilization_gpu_pct.reset();
  }
  s.processes_scanned = false;
  Diagnosis d = DiagnoseOne(s);
  EXPECT_THAT(Codes(d.findings), ElementsAre("VRAM_EXHAUSTED", "VRAM_EXHAUSTED"));
  EXPECT_EQ(d.server, Verdict::kBusy);
  ASSERT_EQ(d.users.size(), 1u);
  EXPECT_EQ(d.users[0].user, "?");
  EXPECT_EQ(d.users[0].vram_bytes, 158 * kGiB);
}

TEST(RankTest, FaultsFirstThenSeverityThenImpact) {
  auto make = [](const char* code, Severity severity, Verdict implies, double impact) {
    Finding f;
    f.code = code;
    f.severity = severity;
    f.implies = implies;
    f.impact = impact;
    return f;
  };
  std::vector<Finding> findings = {
      make("IDLE_HOLDER", Severity::kWarning, Verdict::kReclaimable, 2),
      make("IDLE_HOLDER", Severity::kWarning, Verdict::kReclaimable, 70),
      make("PERSISTENCE_OFF", Severity::kInfo, Verdict::kOk, 8),
      make("GPU_LOST", Severity::kCritical, Verdict::kFault, 1),
      make("HW_SLOWDOWN", Severity::kWarning, Verdict::kDegraded, 1),
  };
  RankFindings(findings);
  EXPECT_THAT(Codes(findings), ElementsAre("GPU_LOST", "HW_SLOWDOWN", "IDLE_HOLDER", "IDLE_HOLDER",
                                           "PERSISTENCE_OFF"));
  EXPECT_EQ(findings[2].impact, 70);
}

TEST(UserHoldingTest, PerUser) {
  Snapshot s = HealthyServer(4);
  AddProcess(
      s, {.pid = 4242, .gpu = 3, .bytes = 70 * kGiB, .sm = 0, .user = "alice", .age_s = 2 * 86400});
  AddProcess(s, {.pid = 4243, .gpu = 1, .bytes = 10 * kGiB, .sm = 90, .user = "alice"});
  AddProcess(s, {.pid = 5000, .gpu = 1, .bytes = 30 * kGiB, .sm = 9, .user = "bob", .uid = 1002});
  AddProcess(s, {.pid = 5001, .gpu = 2, .bytes = 30 * kGiB, .sm = 9, .user = "bob", .uid = 1002});
  AddProcess(s, {.pid = 6000, .gpu = 0, .bytes = 5 * kGiB, .in_proc = false});
  GpuAt(s, 0)->processes.back().used_memory_bytes.reset();
  Diagnosis d = DiagnoseOne(s, IdleAtOnce());
  ASSERT_EQ(d.users.size(), 3u);
  EXPECT_EQ(d.users[0].user, "alice");
  EXPECT_EQ(d.users[0].uid, 1001u);
  EXPECT_THAT(d.users[0].gpus, ElementsAre(1, 3));
  EXPECT_THAT(d.users[0].pids, ElementsAre(4242, 4243));
  EXPECT_EQ(d.users[0].vram_bytes, 80 * kGiB);
  EXPECT_EQ(d.users[0].idle_vram_bytes, 70 * kGiB);
  EXPECT_EQ(d.users[1].user, "bob");
  EXPECT_EQ(d.users[1].vram_bytes, 60 * kGiB);
  EXPECT_EQ(d.users[1].idle_vram_bytes, 0u);
  EXPECT_EQ(d.users[2].user, "?");
  EXPECT_EQ(d.users[2].memory_unknown, 1u);
}

}  // namespace
}  // namespace gw::diagnose
