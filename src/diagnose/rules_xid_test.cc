// Kernel-log events: categories by the Xid's cause, verdicts by NVIDIA's
// action and containment, event age (history, recovered), one Xid 79 per fall
// off the bus, and GPUs the kernel saw that NVML does not list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"
#include "kmsg/kernel_event.h"

namespace gw::diagnose {
namespace {

using kmsg::KernelEvent;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace fixtures;  // NOLINT

KernelEvent Xid(unsigned xid, Opt<std::string> pci, Opt<int64_t> t = kT0 - 5000,
                std::string detail = "") {
  KernelEvent e;
  e.time_unix_ms = t;
  e.pci_bus_id = std::move(pci);
  e.xid = xid;
  e.kind = kmsg::kKindXid;
  e.detail = std::move(detail);
  e.boot_id = "log#0";
  e.raw =
      fmt::format("NVRM: Xid (PCI:{}): {}, pid=1234, name=python", e.pci_bus_id.value_or("?"), xid);
  return e;
}

KernelEvent Notice(const char* kind, Opt<std::string> pci, Opt<int64_t> t = kT0 - 5000) {
  KernelEvent e;
  e.kind = kind;
  e.pci_bus_id = std::move(pci);
  e.time_unix_ms = t;
  e.boot_id = "log#0";
  e.raw = std::string("NVRM: ") + kind;
  return e;
}

std::vector<Finding> RunXid(const Snapshot& s, const std::vector<KernelEvent>& events,
                            const DiagnoseOptions& o = {}) {
  return RunRules(std::span<const Snapshot>(&s, 1), o, events);
}

Diagnosis DiagnoseWith(const Snapshot& s, const std::vector<KernelEvent>& events,
                       const DiagnoseOptions& o = {}) {
  return Diagnose(std::span<const Snapshot>(&s, 1), o, events);
}

// GPU 3 of HealthyServer sits at 00000000:48:00.0; the kernel writes 0000:48:00.
constexpr const char* kGpu3Kernel = "0000:48:00";

// GPU 3 lost: unreachable, nothing read.
Snapshot WithGpu3Lost() {
  Snapshot s = HealthyServer();
  Gpu bare;
  bare.index = 3;
  bare.pci_bus_id = "00000000:48:00.0";  // NVML read it before the handle failed.
  bare.minor_number = 3;
  bare.unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 3u, 15};
  s.gpus[3] = bare;
  return s;
}

TEST(XidTest, FellOffTheBus) {
  auto findings = RunXid(WithGpu3Lost(), {Xid(79, kGpu3Kernel)});
  ASSERT_EQ(Count(findings, "XID_FATAL"), 1u);
  const Finding& f = *Find(findings, "XID_FATAL");
  EXPECT_THAT(f.gpus, ElementsAre(3));
  EXPECT_EQ(f.message, "GPU 3 (PCI 0000:48:00) fell off the bus (Xid 79)");
  EXPECT_EQ(f.implies, Verdict::kFault);
  EXPECT_EQ(f.category, Category::kBus);
  EXPECT_EQ(*EvidenceNumber(f, "xid_79"), 1);
  EXPECT_THAT(f.next_steps[0],
              HasSubstr("admin: NVIDIA's action for Xid 79: Drain the node and reboot it"));
}

// GPU 5 of eight, lost; NVML (or the dump) listed it at 00000000:BB:00.0, or
// (`with_address` false) could not say where it sits.
Snapshot WithGpu5LostAtBb(bool with_address) {
  Snapshot s = HealthyServer();
  Gpu bare;
  bare.index = 5;
  if (with_address) bare.pci_bus_id = "00000000:BB:00.0";
  bare.unreachable =
      ProbeError{"nvml", "gpu_lost", "nvmlDeviceGetHandleByIndex_v2 on GPU 5: GPU is lost", 5u, 15};
  s.gpus[5] = bare;
  s.errors.push_back(*bare.unreachable);
  if (!with_address) {
    // NVML's PCI order, as in scenarios/xid79-fallen-off-bus.json: GPU 4 at
    // 9B, GPU 6 at CB.
    const char* buses[] = {"19", "3B", "4C", "5D", "9B", "", "CB", "DB"};
    for (unsigned i = 0; i < 8; ++i) {
      if (i != 5) s.gpus[i].pci_bus_id = fmt::format("00000000:{}:00.0", buses[i]);
    }
  }
  return s;
}

// "GPU 5 is lost" and the kernel's Xid 79 at 0000:bb:00 are one GPU's failure:
// both findings name GPU 5 with its address, and each cites the other's source.
TEST(XidTest, AnXid79OfALostGpuNamesItsIndex) {
  const KernelEvent xid = Xid(79, "0000:bb:00");
  const std::vector<Finding> findings = RunXid(WithGpu5LostAtBb(true), {xid});
  const Finding* fatal = Find(findings, "XID_FATAL");
  ASSERT_NE(fatal, nullptr);
  EXPECT_EQ(fatal->message, "GPU 5 (PCI 0000:bb:00) fell off the bus (Xid 79)");
  EXPECT_THAT(fatal->gpus, ElementsAre(5));
  ASSERT_NE(EvidenceNamed(*fatal, "pci_bus_id"), nullptr);
  EXPECT_EQ(EvidenceNamed(*fatal, "pci_bus_id")->value, "0000:bb:00");
  ASSERT_NE(EvidenceNamed(*fatal, "nvml"), nullptr);
  EXPECT_THAT(EvidenceNamed(*fatal, "nvml")->value, HasSubstr("on GPU 5"));
  EXPECT_THAT(EvidenceNamed(*fatal, "nvml")->value, HasSubstr("GPU is lost"));
  const Finding* lost = Find(findings, "GPU_LOST");
  ASSERT_NE(lost, nullptr);
  EXPECT_THAT(lost->message, HasSubstr("GPU 5 (PCI 0000:bb:00) is lost: it fell off the bus"));
  EXPECT_THAT(lost->message,
              HasSubstr("; the kernel logged Xid 79 for the same GPU (PCI 0000:bb:00)"));
  ASSERT_NE(EvidenceNamed(*lost, "kernel_event"), nullptr);
  EXPECT_EQ(EvidenceNamed(*lost, "kernel_event")->value, xid.raw);
  EXPECT_EQ(Count(findings, "GPU_MISSING"), 0u);
  // Nothing says "the GPU at PCI" any more.
  for (const Finding& f : findings) EXPECT_THAT(f.message, Not(HasSubstr("The GPU at PCI")));
}

// A live probe whose handle failed has no address for the lost GPU: NVML's
// PCI order places the kernel's address on it when only it fits.
TEST(XidTest, AnXid79OfALostGpuWithoutAddressIsPlacedByNvmlsOrder) {
  const std::vector<Finding> findings = RunXid(WithGpu5LostAtBb(false), {Xid(79, "0000:bb:00")});
  const Finding* fatal = Find(findings, "XID_FATAL");
  ASSERT_NE(fatal, nullptr);
  EXPECT_EQ(fatal->message, "GPU 5 (PCI 0000:bb:00) fell off the bus (Xid 79)");
  ASSERT_NE(EvidenceNamed(*fatal, "pci_bus_id"), nullptr);
  EXPECT_THAT(EvidenceNamed(*fatal, "pci_bus_id")->value, HasSubstr("NVML's PCI order"));
  EXPECT_THAT(Find(findings, "GPU_LOST")->message, HasSubstr("GPU 5 (PCI 0000:bb:00) is lost"));
  // An address outside GPU 5's place (between 9B and CB) is another GPU's.
  const std::vector<Finding> other = RunXid(WithGpu5LostAtBb(false), {Xid(79, "0000:ee:00")});
  ASSERT_NE(Find(other, "XID_FATAL"), nullptr);
  EXPECT_EQ(Find(other, "XID_FATAL")->message,
            "The GPU at PCI 0000:ee:00 (no GPU listed has that address) fell off the bus (Xid 79)");
  EXPECT_THAT(Find(other, "GPU_LOST")->message, HasSubstr("GPU 5 is lost"));
}

TEST(XidTest, LostGpuFoundByAnEarlierSample) {
  Snapshot before = HealthyServer();
  Snapshot now = before;
  now.time_unix_ms += 1000;
  Gpu bare;
  bare.index = 3;
  bare.unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 3u, 15};
  now.gpus[3] = bare;
  std::vector<Snapshot> history = {before, now};
  std::vector<KernelEvent> events = {Xid(79, kGpu3Kernel)};
  auto findings = RunRules(history, {}, events);
  ASSERT_EQ(Count(findings, "XID_FATAL"), 1u);
  EXPECT_THAT(Find(findings, "XID_FATAL")->gpus, ElementsAre(3));
}

TEST(XidTest, NvmlFormAndUnknownAddress) {
  auto findings = RunXid(HealthyServer(), {Xid(48, "00000000:48:00.0"), Xid(48, "0000:48:00"),
                                           Xid(95, "0000:ee:00"), Xid(74, std::nullopt)});
  ASSERT_EQ(Count(findings, "XID_FATAL"), 3u);
  bool gpu3 = false, unknown_gpu = false, no_address = false;
  for (const Finding& f : findings) {
    // Both forms of GPU 3's address are one group.
    if (f.message == "GPU 3 (PCI 0000:48:00): double-bit ECC error (Xid 48); Xids logged: 48 x2") {
      gpu3 = f.gpus == std::vector<unsigned>{3} && f.category == Category::kMemory;
    }
    if (f.message ==
        "The GPU at PCI 0000:ee:00 (no GPU listed has that address): uncontained memory "
        "error (Xid 95)") {
      unknown_gpu = f.gpus.empty() && f.category == Category::kMemory;
    }
    if (f.message == "A GPU: NVLink error (Xid 74)") {
      no_address = f.gpus.empty() && f.category == Category::kNvlink;
    }
  }
  EXPECT_TRUE(gpu3);
  EXPECT_TRUE(unknown_gpu);
  EXPECT_TRUE(no_address);
}

// Class 3: the category is the Xid's cause, never a blanket "hardware".
TEST(XidTest, CategoriesFollowTheCause) {
  const std::vector<std::pair<unsigned, Category>> want = {
      {74, Category::kNvlink},  {119, Category::kDriver}, {120, Category::kDriver},
      {48, Category::kMemory},  {63, Category::kMemory},  {64, Category::kMemory},
      {92, Category::kMemory},  {94, Category::kMemory},  {95, Category::kMemory},
      {79, Category::kBus},     {54, Category::kPower},   {13, Category::kApplication},
      {149, Category::kNvlink}, {40, Category::kEngine},  {109, Category::kApplication},
      {4242, Category::kDriver}};
  for (const auto& [xid, category] : want) {
    SCOPED_TRACE(xid);
    auto findings = RunXid(WithGpu3Lost(), {Xid(xid, kGpu3Kernel)});
    const Finding* f = nullptr;
    for (const Finding& x : findings) {
      if (x.code.rfind("XID_", 0) == 0) f = &x;
    }
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->category, category) << f->code;
  }
}

// Class 4: contained (94) is DEGRADED with "restart the application"; 95 FAULT.
TEST(XidTest, ContainedIsDegradedUncontainedIsFault) {
  auto contained =
      RunXid(HealthyServer(),
             {Xid(94, kGpu3Kernel, kT0 - 5000, "Contained: SM (0x1). RST: No, D-RST: No")});
  ASSERT_EQ(Count(contained, "XID_WARNING"), 1u);
  const Finding& w = *Find(contained, "XID_WARNING");
  EXPECT_EQ(w.implies, Verdict::kDegraded);
  EXPECT_EQ(w.category, Category::kMemory);
  EXPECT_THAT(w.next_steps[0], HasSubstr("Restart the affected application"));
  EXPECT_EQ(Count(contained, "XID_FATAL"), 0u);
  Diagnosis d = DiagnoseWith(HealthyServer(), {Xid(94, kGpu3Kernel)});
  EXPECT_EQ(d.gpus[3].verdict, Verdict::kDegraded);
  EXPECT_EQ(d.server, Verdict::kDegraded);

  auto uncontained =
      RunXid(HealthyServer(),
             {Xid(95, kGpu3Kernel, kT0 - 5000, "Uncontained: LTC TAG (0x2,0x1). RST: Yes")});
  ASSERT_EQ(Count(uncontained, "XID_FATAL"), 1u);
  EXPECT_EQ(Find(uncontained, "XID_FATAL")->category, Category::kMemory);
  EXPECT_EQ(DiagnoseWith(HealthyServer(), {Xid(95, kGpu3Kernel)}).gpus[3].verdict, Verdict::kFault);
}

TEST(XidTest, OtherAndUnknown) {
  auto findings = RunXid(HealthyServer(), {Xid(63, kGpu3Kernel), Xid(4242, kGpu3Kernel)});
  ASSERT_EQ(Count(findings, "XID_OTHER"), 1u);  // 63: informational, memory.
  EXPECT_EQ(Find(findings, "XID_OTHER")->implies, Verdict::kOk);
  EXPECT_EQ(Find(findings, "XID_OTHER")->category, Category::kMemory);
  // An Xid NVIDIA's catalog does not list: someone should look; it is the
  // driver's report, never guessed to be hardware.
  ASSERT_EQ(Count(findings, "XID_WARNING"), 1u);
  EXPECT_EQ(Find(findings, "XID_WARNING")->category, Category::kDriver);
  EXPECT_THAT(Find(findings, "XID_WARNING")->message, HasSubstr("unknown Xid"));
  EXPECT_EQ(Count(findings, "XID_FATAL"), 0u);
}

TEST(XidTest, ApplicationXidsNeverFault) {
  Snapshot s = HealthyServer();
  std::vector<KernelEvent> events;
  for (int round = 0; round < 50; ++round) {
    // 109 is in the set too, but NVIDIA resets the GPU after it (below).
    for (unsigned xid : {13u, 31u, 43u, 45u, 68u}) {
      events.push_back(Xid(xid, kGpu3Kernel, kT0 - 1000 * round));
      events.push_back(Xid(xid, std::nullopt, kT0 - 1000 * round));
    }
  }
  auto findings = RunXid(s, events);
  ASSERT_EQ(Count(findings, "XID_APPLICATION"), 2u);
  for (const Finding& f : findings) {
    EXPECT_EQ(f.code, "XID_APPLICATION");
    EXPECT_EQ(f.category, Category::kApplication);
    EXPECT_NE(f.implies, Verdict::kFault);
    EXPECT_NE(f.implies, Verdict::kDegraded);
  }
  Diagnosis d = DiagnoseWith(s, events);
  EXPECT_EQ(d.server, Verdict::kOk);
  for (const GpuVerdict& g : d.gpus) EXPECT_EQ(g.verdict, Verdict::kOk) << g.line;
}

// Xid 109 (context-switch timeout) is the application's (the device plugin's
// set), but NVIDIA's resolution is RESET_GPU: FAULT, category application.
TEST(XidTest, ContextSwitchTimeoutNeedsAResetAndStaysTheApplications) {
  auto findings = RunXid(HealthyServer(), {Xid(109, kGpu3Kernel)});
  ASSERT_EQ(Count(findings, "XID_FATAL"), 1u);
  const Finding& f = *Find(findings, "XID_FATAL");
  EXPECT_EQ(f.category, Category::kApplication);
  EXPECT_EQ(f.implies, Verdict::kFault);
  EXPECT_THAT(f.next_steps[0], HasSubstr("admin: NVIDIA's action for Xid 109: Drain the GPU"));
  EXPECT_EQ(Count(findings, "XID_APPLICATION"), 0u);
}

// Engine exceptions (copy engine, graphics during a context switch): NVIDIA
// restarts the application or ignores them; the GPU serves on.
TEST(XidTest, EngineExceptionsLeaveTheGpuServing) {
  Diagnosis d = DiagnoseWith(HealthyServer(), {Xid(44, kGpu3Kernel), Xid(40, kGpu3Kernel)});
  EXPECT_EQ(d.server, Verdict::kOk);
  EXPECT_EQ(d.gpus[3].verdict, Verdict::kOk);
  auto findings = RunXid(HealthyServer(), {Xid(44, kGpu3Kernel), Xid(40, kGpu3Kernel)});
  ASSERT_EQ(Count(findings, "XID_OTHER"), 1u);
  EXPECT_EQ(Find(findings, "XID_OTHER")->category, Category::kEngine);
  EXPECT_EQ(Count(findings, "XID_WARNING"), 0u);
}

// Xid 154 is filed with the Xid before it on its GPU: after a GSP timeout, driver.
TEST(XidTest, RecoveryActionChangeFollowsTheXidItFollows) {
  const std::string to_reset = "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset)";
  auto after_gsp = RunXid(HealthyServer(), {Xid(119, kGpu3Kernel, kT0 - 6000),
                                            Xid(154, kGpu3Kernel, kT0 - 5000, to_reset)});
  for (const Finding& f : after_gsp) {
    if (f.code.rfind("XID_", 0) == 0) {
      EXPECT_EQ(f.category, Category::kDriver) << f.message;
    }
  }
  auto alone = RunXid(HealthyServer(), {Xid(154, kGpu3Kernel, kT0 - 5000, to_reset)});
  ASSERT_EQ(Count(alone, "XID_FATAL"), 1u);
  EXPECT_EQ(Find(alone, "XID_FATAL")->category, Category::kHardware);
}

TEST(XidTest, OtherKindsAndMissingNumbersAreIgnored) {
  KernelEvent no_number = Xid(79, kGpu3Kernel);
  no_number.xid.reset();
  std::vector<KernelEvent> events = {Notice(kmsg::kKindCrashDump, kGpu3Kernel),
                                     Notice(kmsg::kKindGpuUuid, kGpu3Kernel), no_number};
  EXPECT_THAT(Codes(RunXid(WithGpu3Lost(), events)), ElementsAre("GPU_LOST"));
}

TEST(XidTest, LastLineIsEvidenceAndSanitised) {
  KernelEvent e = Xid(79, kGpu3Kernel);
  e.raw = "NVRM: Xid (PCI:0000:48:00): 79, GPU has fallen off the bus.\x1b[2J";
  auto findings = RunXid(WithGpu3Lost(), {e});
  const Finding* f = Find(findings, "XID_FATAL");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.back().value,
            "NVRM: Xid (PCI:0000:48:00): 79, GPU has fallen off the bus.\\x1b[2J");
}

// Class 7: the Xid 79 line and its "GPU has fallen off the bus" notice are one
// event; a notice alone counts as Xid 79.
TEST(XidTest, Xid79AndItsNoticeAreOneEvent) {
  auto findings =
      RunXid(WithGpu3Lost(), {Xid(79, kGpu3Kernel, kT0 - 5000),
                              Notice(kmsg::kKindFallenOffBus, "00000000:48:00.0", kT0 - 4999)});
  ASSERT_EQ(Count(findings, "XID_FATAL"), 1u);
  const Finding& f = *Find(findings, "XID_FATAL");
  EXPECT_EQ(f.message, "GPU 3 (PCI 0000:48:00) fell off the bus (Xid 79)");  // Not "79 x2".
  EXPECT_EQ(*EvidenceNumber(f, "xid_79"), 1);
  // The notice alone (fell off the bus at probe, no Xid line).
  findings = RunXid(WithGpu3Lost(), {Notice(kmsg::kKindFallenOffBus, "00000000:48:00.0")});
  ASSERT_EQ(Count(findings, "XID_FATAL"), 1u);
  EXPECT_EQ(Find(findings, "XID_FATAL")->message,
            "GPU 3 (PCI 0000:48:00) fell off the bus (Xid 79)");
}

// Class 7: a GPU that NVML reads normally after falling off the bus has been
// recovered: said so, not FAULT (an Xid 79 stamped [ 1234.5] on a GPU at 99 %).
TEST(XidTest, RecoveredGpuIsNotAFault) {
  Snapshot s = HealthyServer();
  SetLoad(s, 3, 99);
  KernelEvent e = Xid(79, kGpu3Kernel, std::nullopt);
  e.monotonic_s = 1234.5;
  auto findings = RunXid(s, {e});
  EXPECT_EQ(Count(findings, "XID_FATAL"), 0u);
  ASSERT_EQ(Count(findings, "XID_RECOVERED"), 1u);
  const Finding& f = *Find(findings, "XID_RECOVERED");
  EXPECT_EQ(f.implies, Verdict::kOk);
  EXPECT_EQ(f.category, Category::kBus);
  EXPECT_THAT(f.message, HasSubstr("GPU 3 (PCI 0000:48:00) fell off the bus (Xid 79) earlier"));
  EXPECT_THAT(f.message, HasSubstr("recovered"));
  Diagnosis d = DiagnoseWith(s, {e});
  EXPECT_NE(d.gpus[3].verdict, Verdict::kFault);
  EXPECT_NE(d.server, Verdict::kFault);
  // Other fatal Xids are not "recovered" by a normal reading.
  EXPECT_EQ(Count(RunXid(s, {Xid(48, kGpu3Kernel)}), "XID_FATAL"), 1u);
}

// Class 7: events before the current boot, before the driver load or years
// old are history: listed, never a verdict.
TEST(XidTest, OldEventsAreHistory) {
  constexpr int64_t kThreeYearsMs = int64_t{3} * 365 * 24 * 3600 * 1000;
  Snapshot s = HealthyServer();
  auto findings = RunXid(s, {Xid(48, kGpu3Kernel, kT0 - kThreeYearsMs)});
  EXPECT_EQ(Count(findings, "XID_FATAL"), 0u);
  ASSERT_EQ(Count(findings, "XID_HISTORY"), 1u);
  const Finding& h = *Find(findings, "XID_HISTORY");
  EXPECT_EQ(h.implies, Verdict::kOk);
  EXPECT_EQ(h.category, Category::kMemory);
  EXPECT_THAT(h.gpus, ElementsAre(3));
  EXPECT_THAT(h.message, HasSubstr("more than 7 days before the snapshot"));
  EXPECT_EQ(DiagnoseWith(s, {Xid(48, kGpu3Kernel, kT0 - kThreeYearsMs)}).gpus[3].verdict,
            Verdict::kOk);

  // An earlier boot of the log, with a wall time close to now.
  KernelEvent old = Xid(95, kGpu3Kernel, kT0 - 60'000);
  KernelEvent boot = Notice(kmsg::kKindBoot, std::nullopt, kT0 - 30'000);
  boot.boot_id = "log#1";
  findings = RunXid(s, {old, boot});
  EXPECT_EQ(Count(findings, "XID_FATAL"), 0u);
  ASSERT_EQ(Count(findings, "XID_HISTORY"), 1u);
  EXPECT_THAT(Find(findings, "XID_HISTORY")->message, HasSubstr("before the current boot"));

  // Before the driver was last loaded.
  KernelEvent load = Notice(kmsg::kKindDriverLoad, std::nullopt, kT0 - 30'000);
  findings = RunXid(WithGpu3Lost(), {Xid(79, kGpu3Kernel, kT0 - 60'000), load});
  EXPECT_EQ(Count(findings, "XID_FATAL"), 0u);
  EXPECT_THAT(Find(findings, "XID_HISTORY")->message,
              HasSubstr("before the driver was last loaded"));
}

TEST(XidTest, SinceLeavesOlderEventsOut) {
  DiagnoseOptions o;
  o.events.since_s = 3600;
  auto findings = RunXid(WithGpu3Lost(), {Xid(79, kGpu3Kernel, kT0 - 2 * 3600 * 1000)}, o);
  EXPECT_EQ(Count(findings, "XID_FATAL"), 0u);
  EXPECT_EQ(Count(findings, "XID_HISTORY"), 0u);
  findings = RunXid(WithGpu3Lost(), {Xid(79, kGpu3Kernel, kT0 - 600 * 1000)}, o);
  EXPECT_EQ(Count(findings, "XID_FATAL"), 1u);
}

// Class 5: a GPU the kernel saw that NVML does not list is a server FAULT,
// named by its bus id or minor number.
TEST(XidTest, GpuMissingFromRmInitAdapter) {
  Snapshot s = HealthyServer(7);  // 8 GPUs in the server, NVML lists 7 (0x18 ... 0x78).
  KernelEvent rm = Notice(kmsg::kKindRmInitAdapterFailed, "00000000:88:00.0");
  auto findings = RunXid(s, {rm});
  ASSERT_EQ(Count(findings, "GPU_MISSING"), 1u);
  const Finding& f = *Find(findings, "GPU_MISSING");
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_EQ(f.implies, Verdict::kFault);
  EXPECT_THAT(f.message, HasSubstr("PCI 0000:88:00"));
  EXPECT_THAT(f.message, HasSubstr("RmInitAdapter failed"));
  Diagnosis d = DiagnoseWith(s, {rm});
  EXPECT_EQ(d.server, Verdict::kFault);

  // Older drivers name only the minor number.
  KernelEvent old = Notice(kmsg::kKindRmInitAdapterFailed, std::nullopt);
  old.minor_number = 7;
  findings = RunXid(s, {old});
  ASSERT_EQ(Count(findings, "GPU_MISSING"), 1u);
  EXPECT_THAT(Find(findings, "GPU_MISSING")->message, HasSubstr("device minor number 7"));
  old.minor_number = 3;  // Listed: it initialised after all.
  EXPECT_EQ(Count(RunXid(s, {old}), "GPU_MISSING"), 0u);

  // Fell off the bus at probe.
  findings = RunXid(s, {Notice(kmsg::kKindFallenOffBus, "00000000:B3:00.0")});
  EXPECT_EQ(Count(findings, "GPU_MISSING"), 1u);
}

TEST(XidTest, GpuMissingFromAnXidOfAnAbsentGpu) {
  Snapshot s = HealthyServer(7);
  auto findings = RunXid(s, {Xid(13, "0000:ee:00")});
  ASSERT_EQ(Count(findings, "GPU_MISSING"), 1u);
  EXPECT_THAT(Find(findings, "GPU_MISSING")->message, HasSubstr("PCI 0000:ee:00"));
  EXPECT_EQ(DiagnoseWith(s, {Xid(13, "0000:ee:00")}).server, Verdict::kFault);
  // A listed GPU is not missing; a GPU of an earlier boot is history.
  EXPECT_EQ(Count(RunXid(s, {Xid(13, kGpu3Kernel)}), "GPU_MISSING"), 0u);
  KernelEvent boot = Notice(kmsg::kKindBoot, std::nullopt, kT0 - 1000);
  boot.boot_id = "log#1";
  EXPECT_EQ(Count(RunXid(s, {Xid(79, "0000:ee:00", kT0 - 9000), boot}), "GPU_MISSING"), 0u);
  // NVML could not list anything: unknown, not missing.
  Snapshot none;
  none.time_unix_ms = kT0;
  none.errors.push_back(ProbeError{"nvml", "driver_not_loaded", "no driver", std::nullopt, 9});
  EXPECT_EQ(Count(RunXid(none, {Xid(79, "0000:ee:00")}), "GPU_MISSING"), 0u);
}

// Live: a GPU that fell off the bus weeks ago in the running boot is still missing,
// though the event is too old to judge a listed GPU by.
TEST(XidTest, GpuMissingFromAnOldEventOfTheRunningBoot) {
  Snapshot s = HealthyServer(7);
  constexpr int64_t kTenDaysMs = int64_t{10} * 24 * 3600 * 1000;
  KernelEvent off = Notice(kmsg::kKindFallenOffBus, "00000000:88:00.0", kT0 - kTenDaysMs);
  off.boot_id = std::string(32, 'a');
  DiagnoseOptions o;
  o.events.running_boot_id = off.boot_id;
  auto findings = RunXid(s, {off}, o);
  EXPECT_EQ(Count(findings, "GPU_MISSING"), 1u);
  EXPECT_EQ(Count(findings, "XID_HISTORY"), 1u);
  // The same line in a file from elsewhere: too old to say anything about now.
  EXPECT_EQ(Count(RunXid(s, {off}), "GPU_MISSING"), 0u);
}

TEST(XidTest, GpuMissingFromTheDriversProcList) {
  Snapshot s = HealthyServer(2);
  s.driver_gpu_bus_ids = std::vector<std::string>{"0000:18:00.0", "0000:28:00.0", "0000:38:00.0"};
  auto findings = RunXid(s, {});
  ASSERT_EQ(Count(findings, "GPU_MISSING"), 1u);
  EXPECT_THAT(Find(findings, "GPU_MISSING")->message, HasSubstr("PCI 0000:38:00"));
  EXPECT_THAT(Find(findings, "GPU_MISSING")->message,
              HasSubstr("listed in /proc/driver/nvidia/gpus"));
  s.driver_gpu_bus_ids->pop_back();
  EXPECT_EQ(Count(RunXid(s, {}), "GPU_MISSING"), 0u);
}

}  // namespace
}  // namespace gw::diagnose
