// Xid events from the kernel log: judged by class; application Xids never FAULT.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fixtures;  // NOLINT

KernelEvent Xid(unsigned xid, Opt<std::string> pci, int64_t t = kT0 - 5000) {
  KernelEvent e;
  e.time_unix_ms = t;
  e.pci_bus_id = std::move(pci);
  e.xid = xid;
  e.kind = "xid";
  e.text =
      fmt::format("NVRM: Xid (PCI:{}): {}, pid=1234, name=python", e.pci_bus_id.value_or("?"), xid);
  return e;
}

// GPU 3 of HealthyServer sits at 00000000:48:00.0; the kernel writes 0000:48:00.
constexpr const char* kGpu3Kernel = "0000:48:00";

TEST(XidTest, FellOffTheBus) {
  Snapshot s = HealthyServer();
  std::vector<KernelEvent> events = {Xid(79, kGpu3Kernel)};
  auto findings = RunRules(std::span<const Snapshot>(&s, 1), {}, events);
  ASSERT_EQ(Count(findings, "XID_FATAL"), 1u);
  const Finding& f = *Find(findings, "XID_FATAL");
  EXPECT_THAT(f.gpus, ElementsAre(3));
  EXPECT_EQ(f.message, "GPU 3 fell off the bus (Xid 79)");
  EXPECT_EQ(f.implies, Verdict::kFault);
  EXPECT_EQ(*EvidenceNumber(f, "xid_79"), 1);
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
  Snapshot s = HealthyServer();
  std::vector<KernelEvent> events = {Xid(48, "00000000:48:00.0"), Xid(48, "0000:48:00"),
                                     Xid(95, "0000:ee:00"), Xid(74, std::nullopt)};
  auto findings = RunRules(std::span<const Snapshot>(&s, 1), {}, events);
  ASSERT_EQ(Count(findings, "XID_FATAL"), 3u);
  bool gpu3 = false, unknown_gpu = false, no_address = false;
  for (const Finding& f : findings) {
    // Both forms of GPU 3's address are one group.
    if (f.message == "GPU 3 had a double-bit ECC error (Xid 48); Xids logged: 48 x2") {
      gpu3 = f.gpus == std::vector<unsigned>{3};
    }
    if (f.message == "The GPU at PCI 0000:ee:00 had an uncontained ECC error (Xid 95)") {
      unknown_gpu = f.gpus.empty();
    }
    if (f.message == "A GPU had an NVLink error (Xid 74)") no_address = f.gpus.empty();
  }
  EXPECT_TRUE(gpu3);
  EXPECT_TRUE(unknown_gpu);
  EXPECT_TRUE(no_address);
}

TEST(XidTest, WarningAndOther) {
  Snapshot s = HealthyServer();
  std::vector<KernelEvent> events = {Xid(94, kGpu3Kernel), Xid(63, kGpu3Kernel),
                                     Xid(4242, kGpu3Kernel)};
  auto findings = RunRules(std::span<const Snapshot>(&s, 1), {}, events);
  ASSERT_EQ(Count(findings, "XID_WARNING"), 1u);
  EXPECT_EQ(Find(findings, "XID_WARNING")->implies, Verdict::kDegraded);
  ASSERT_EQ(Count(findings, "XID_OTHER"), 1u);  // 63 and 4242, one group.
  EXPECT_EQ(Find(findings, "XID_OTHER")->implies, Verdict::kOk);
  EXPECT_EQ(Count(findings, "XID_FATAL"), 0u);
}

TEST(XidTest, ApplicationXidsNeverFault) {
  Snapshot s = HealthyServer();
  std::vector<KernelEvent> events;
  for (int round = 0; round < 50; ++round) {
    for (unsigned xid : {13u, 31u, 43u, 45u, 68u, 109u}) {
      events.push_back(Xid(xid, kGpu3Kernel, kT0 - 1000 * round));
      events.push_back(Xid(xid, std::nullopt, kT0 - 1000 * round));
    }
  }
  auto findings = RunRules(std::span<const Snapshot>(&s, 1), {}, events);
  ASSERT_EQ(Count(findings, "XID_APPLICATION"), 2u);
  for (const Finding& f : findings) {
    EXPECT_EQ(f.code, "XID_APPLICATION");
    EXPECT_NE(f.implies, Verdict::kFault);
    EXPECT_NE(f.implies, Verdict::kDegraded);
  }
  Diagnosis d = Diagnose(std::span<const Snapshot>(&s, 1), {}, events);
  EXPECT_EQ(d.server, Verdict::kOk);
  for (const GpuVerdict& g : d.gpus) EXPECT_EQ(g.verdict, Verdict::kOk) << g.line;
}

TEST(XidTest, OtherKindsAndMissingNumbersAreIgnored) {
  Snapshot s = HealthyServer();
  KernelEvent sxid = Xid(79, kGpu3Kernel);
  sxid.kind = "sxid";
  KernelEvent no_number = Xid(79, kGpu3Kernel);
  no_number.xid.reset();
  std::vector<KernelEvent> events = {sxid, no_number};
  EXPECT_THAT(Codes(RunRules(std::span<const Snapshot>(&s, 1), {}, events)), ElementsAre());
}

TEST(XidTest, LastLineIsEvidenceAndSanitised) {
  Snapshot s = HealthyServer();
  KernelEvent e = Xid(79, kGpu3Kernel);
  e.text = "NVRM: Xid (PCI:0000:48:00): 79, GPU has fallen off the bus.\x1b[2J";
  std::vector<KernelEvent> events = {e};
  auto findings = RunRules(std::span<const Snapshot>(&s, 1), {}, events);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].evidence.back().value,
            "NVRM: Xid (PCI:0000:48:00): 79, GPU has fallen off the bus.\\x1b[2J");
}

}  // namespace
}  // namespace gw::diagnose
