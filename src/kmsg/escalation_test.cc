#include "kmsg/escalation.h"

#include <gtest/gtest.h>

namespace gw::kmsg {
namespace {

constexpr char kGpuA[] = "00000000:3B:00.0";
constexpr char kGpuB[] = "00000000:5D:00.0";

KernelEvent Boot(const std::string& boot) {
  KernelEvent ev;
  ev.kind = kKindBoot;
  ev.boot_id = boot;
  return ev;
}

KernelEvent Xid(unsigned xid, const std::string& gpu, const std::string& boot, int64_t time_ms = 0,
                std::optional<long> pid = std::nullopt) {
  KernelEvent ev;
  ev.kind = kKindXid;
  ev.xid = xid;
  ev.pci_bus_id = gpu;
  ev.boot_id = boot;
  if (time_ms) ev.time_unix_ms = time_ms;
  ev.pid = pid;
  return ev;
}

TEST(KmsgEscalateReboots, RecurringAfterTwoRebootsNeedsInspection) {
  const std::vector<KernelEvent> ev = {Boot("b0"), Xid(79, kGpuA, "b0"), Boot("b1"), Boot("b2"),
                                       Xid(79, kGpuA, "b2")};
  const auto out = Escalate(ev);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, EscalationKind::kHardwareInspection);
  EXPECT_EQ(EscalationKindName(out[0].kind), "hardware_inspection");
  EXPECT_EQ(out[0].pci_bus_ids, std::vector<std::string>{kGpuA});
  EXPECT_EQ(out[0].xids, std::vector<unsigned>{79});
  EXPECT_EQ(out[0].boots, 2);
  EXPECT_EQ(out[0].reboots, 2);
  EXPECT_EQ(out[0].occurrences, 2);
  EXPECT_NE(out[0].reason.find("Xid 79"), std::string::npos);
}

TEST(KmsgEscalateReboots, OneRebootIsNotEnough) {
  EXPECT_TRUE(Escalate({Xid(79, kGpuA, "b0"), Xid(79, kGpuA, "b1")}).empty());
  EscalationPolicy p;
  p.min_reboots = 1;
  EXPECT_EQ(Escalate({Xid(79, kGpuA, "b0"), Xid(79, kGpuA, "b1")}, p).size(), 1u);
}

TEST(KmsgEscalateReboots, ManyTimesInOneBootIsNotEnough) {
  std::vector<KernelEvent> ev;
  for (int i = 0; i < 50; ++i) ev.push_back(Xid(119, kGpuA, "b0"));
  EXPECT_TRUE(Escalate(ev).empty());
}

TEST(KmsgEscalateReboots, OtherGpuOrOtherXidDoesNotCount) {
  EXPECT_TRUE(Escalate({Xid(79, kGpuA, "b0"), Boot("b1"), Xid(79, kGpuB, "b2")}).empty());
  EXPECT_TRUE(Escalate({Xid(79, kGpuA, "b0"), Boot("b1"), Xid(48, kGpuA, "b2")}).empty());
}

TEST(KmsgEscalateReboots, ApplicationXidsNeverEscalateToHardware) {
  const std::vector<KernelEvent> ev = {Xid(13, kGpuA, "b0", 1000, 1), Xid(13, kGpuA, "b1", 2000, 1),
                                       Xid(13, kGpuA, "b2", 3000, 1), Xid(43, kGpuA, "b3"),
                                       Xid(43, kGpuA, "b5"),          Xid(45, kGpuA, "b0"),
                                       Xid(45, kGpuA, "b9")};
  for (const auto& e : Escalate(ev)) EXPECT_NE(e.kind, EscalationKind::kHardwareInspection);
}

TEST(KmsgEscalateReboots, NoticesCountAsTheirXid) {
  KernelEvent fell;
  fell.kind = kKindFallenOffBus;
  fell.pci_bus_id = kGpuA;
  fell.boot_id = "b0";
  KernelEvent gsp;
  gsp.kind = kKindGspRpcTimeout;
  gsp.pci_bus_id = kGpuB;
  gsp.boot_id = "b0";
  KernelEvent init;
  init.kind = kKindRmInitAdapterFailed;
  init.pci_bus_id = kGpuB;
  init.boot_id = "b0";
  std::vector<KernelEvent> ev = {
      fell, gsp, init, Boot("b1"), Xid(79, kGpuA, "b2"), Xid(119, kGpuB, "b2")};
  init.boot_id = "b3";
  ev.push_back(init);
  const auto out = Escalate(ev);
  ASSERT_EQ(out.size(), 3u);
  for (const auto& e : out) EXPECT_EQ(e.kind, EscalationKind::kHardwareInspection);
  EXPECT_EQ(out[0].pci_bus_ids[0], kGpuA);
  EXPECT_EQ(out[0].xids, std::vector<unsigned>{79});
  EXPECT_EQ(out[1].event_kind, "rm_init_adapter_failed");
  EXPECT_EQ(out[1].reboots, 3);
  EXPECT_EQ(out[2].xids, std::vector<unsigned>{119});
}

TEST(KmsgEscalateReboots, EventsWithoutBusIdAreIgnored) {
  KernelEvent a = Xid(79, kGpuA, "b0");
  a.pci_bus_id.reset();
  KernelEvent b = a;
  b.boot_id = "b4";
  EXPECT_TRUE(Escalate({a, Boot("b2"), b}).empty());
}

// --- Xid 13 / 31 workflow ---------------------------------------------------

TEST(KmsgEscalateWorkflow, SameGpuDifferentProcessesRunsDiagnostics) {
  const std::vector<KernelEvent> ev = {
      Xid(31, kGpuA, "b0", 1'000'000, 100), Xid(31, kGpuA, "b0", 1'000'500, 100),
      Xid(13, kGpuA, "b0", 2'000'000, 200),  // 1000 s later: a second burst.
      Xid(31, kGpuA, "b0", 3'000'000, 300)};
  const auto out = Escalate(ev);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, EscalationKind::kRunDiagnostics);
  EXPECT_EQ(out[0].pci_bus_ids, std::vector<std::string>{kGpuA});
  EXPECT_EQ(out[0].bursts, 3);
  EXPECT_EQ(out[0].processes, 3);
  EXPECT_EQ(out[0].occurrences, 4);
  EXPECT_EQ(out[0].xids, (std::vector<unsigned>{13, 31}));
}

TEST(KmsgEscalateWorkflow, SameProcessRepeatingIsTheApplication) {
  const std::vector<KernelEvent> ev = {Xid(31, kGpuA, "b0", 1'000'000, 100),
                                       Xid(31, kGpuA, "b0", 2'000'000, 100),
                                       Xid(31, kGpuA, "b0", 3'000'000, 100)};
  EXPECT_TRUE(Escalate(ev).empty());
}

TEST(KmsgEscalateWorkflow, OneBurstIsSolo) {
  // Two processes faulting within the same minute: one burst.
  const std::vector<KernelEvent> ev = {Xid(13, kGpuA, "b0", 1'000'000, 100),
                                       Xid(13, kGpuA, "b0", 1'010'000, 200)};
  EXPECT_TRUE(Escalate(ev).empty());
}

TEST(KmsgEscalateWorkflow, DifferentGpusPointAtTheApplication) {
  const std::vector<KernelEvent> ev = {Xid(31, kGpuA, "b0", 1'000'000, 100),
                                       Xid(31, kGpuB, "b0", 2'000'000, 200)};
  const auto out = Escalate(ev);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, EscalationKind::kCheckApplication);
  EXPECT_EQ(out[0].pci_bus_ids, (std::vector<std::string>{kGpuA, kGpuB}));
}

TEST(KmsgEscalateWorkflow, RepeatedOnSeveralGpusIsTheApplication) {
  std::vector<KernelEvent> ev;
  for (long p = 1; p <= 4; ++p) {
    ev.push_back(Xid(13, kGpuA, "b0", p * 1'000'000, p));
    ev.push_back(Xid(13, kGpuB, "b0", p * 1'000'000 + 1, p + 100));
  }
  const auto out = Escalate(ev);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, EscalationKind::kCheckApplication);
}

TEST(KmsgEscalateWorkflow, UnknownPidBurstsCountAsDifferentProcesses) {
  const std::vector<KernelEvent> ev = {Xid(13, kGpuA, "b0", 1'000'000),
                                       Xid(13, kGpuA, "b0", 1'000'001),
                                       Xid(13, kGpuA, "b0", 9'000'000)};
  const auto out = Escalate(ev);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, EscalationKind::kRunDiagnostics);
  EXPECT_EQ(out[0].bursts, 2);
}

TEST(KmsgEscalateWorkflow, BurstsDoNotSpanBoots) {
  // Same pid number in two boots: two processes.
  const std::vector<KernelEvent> ev = {Xid(31, kGpuA, "b0", 1'000'000, 100),
                                       Xid(31, kGpuA, "b1", 1'000'100, 100)};
  const auto out = Escalate(ev);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, EscalationKind::kRunDiagnostics);
}

}  // namespace
}  // namespace gw::kmsg
