// The memory judgement: ECC counters, memory Xids, remapped rows and retired
// pages read together, and what the memory findings and the Xid rule make of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"
#include "kmsg/kernel_event.h"

namespace gw::diagnose {
namespace {

using kmsg::KernelEvent;
using ::testing::HasSubstr;
using namespace fixtures;  // NOLINT

// GPU 1 of HealthyServer sits at 00000000:28:00.0; the kernel writes 0000:28:00.
constexpr const char* kGpu1 = "0000:28:00";

KernelEvent MemoryXid(unsigned xid, std::string detail = "", const char* pci = kGpu1) {
  KernelEvent e;
  e.time_unix_ms = kT0 - 60'000;
  e.pci_bus_id = pci;
  e.xid = xid;
  e.kind = kmsg::kKindXid;
  e.detail = std::move(detail);
  e.boot_id = "log#0";
  e.raw = fmt::format("NVRM: Xid (PCI:{}): {}, pid=7194, name=python3, {}", pci, xid, e.detail);
  return e;
}

const KernelEvent kContained94 = MemoryXid(94, "Contained: SM (0x1). RST: No, D-RST: No");

// GPU 1 with `dbe` volatile uncorrectable errors (not split into SRAM/DRAM).
Snapshot WithDbe(uint64_t dbe) {
  Snapshot s = HealthyServer(4);
  s.gpus[1].ecc.volatile_uncorrected = dbe;
  s.gpus[1].ecc.aggregate_uncorrected = dbe;
  return s;
}

Verdict GpuVerdictOf(const Diagnosis& d, unsigned gpu) {
  for (const GpuVerdict& g : d.gpus) {
    if (g.index == gpu) return g.verdict;
  }
  return Verdict::kUnknown;
}

std::string MemoryEvidence(const Finding& f) {
  for (const Evidence& e : f.evidence) {
    if (e.name == "memory_health") return e.value;
  }
  return "";
}

TEST(MemoryHealth, CountAloneIsNotShownContained) {
  const Diagnosis d = DiagnoseOne(WithDbe(1));
  const Finding* f = Find(d.findings, "ECC_DBE_VOLATILE");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->message, HasSubstr("none shown contained (no Xid 94 in the kernel log)"));
  EXPECT_THAT(MemoryEvidence(*f), HasSubstr("not shown contained"));
  EXPECT_EQ(GpuVerdictOf(d, 1), Verdict::kFault);
}

TEST(MemoryHealth, Xid94RstNoContainsTheCountedError) {
  const std::vector<KernelEvent> log = {MemoryXid(48), kContained94};
  const Diagnosis d = DiagnoseOne(WithDbe(1), {}, log);
  EXPECT_EQ(Count(d.findings, "ECC_DBE_VOLATILE"), 0u);
  const Finding* f = Find(d.findings, "ECC_DBE_CONTAINED");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->implies, Verdict::kDegraded);
  EXPECT_THAT(MemoryEvidence(*f), HasSubstr("contained: Xid 94 x1 (RST: No)"));
  // The Xid 48 is judged with the containment: a warning, not a fault.
  EXPECT_EQ(Count(d.findings, "XID_FATAL"), 0u);
  const Finding* xid = Find(d.findings, "XID_WARNING");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(*EvidenceNumber(*xid, "xid_48"), 1);
  EXPECT_EQ(GpuVerdictOf(d, 1), Verdict::kDegraded);
  EXPECT_EQ(d.server, Verdict::kDegraded);
}

TEST(MemoryHealth, AnUncontainedErrorOnTheSameGpuWins) {
  const std::vector<KernelEvent> log = {kContained94,
                                        MemoryXid(95, "Uncontained: FBHUB. RST: Yes")};
  const Diagnosis d = DiagnoseOne(WithDbe(2), {}, log);
  EXPECT_EQ(Count(d.findings, "ECC_DBE_CONTAINED"), 0u);
  const Finding* f = Find(d.findings, "ECC_DBE_VOLATILE");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->message, HasSubstr("not contained (the kernel log says so)"));
  EXPECT_EQ(GpuVerdictOf(d, 1), Verdict::kFault);
}

TEST(MemoryHealth, Xid94AskingForAResetIsNotContainment) {
  const std::vector<KernelEvent> log = {MemoryXid(94, "Contained: SM (0x1). RST: Yes, D-RST: No")};
  const Diagnosis d = DiagnoseOne(WithDbe(1), {}, log);
  EXPECT_EQ(Count(d.findings, "ECC_DBE_CONTAINED"), 0u);
  EXPECT_THAT(MemoryEvidence(*Find(d.findings, "ECC_DBE_VOLATILE")),
              HasSubstr("Xid 94 x1 asks for a reset (RST: Yes)"));
  EXPECT_EQ(GpuVerdictOf(d, 1), Verdict::kFault);
}

TEST(MemoryHealth, DrainAndResetIsNotTheResetField) {
  // "D-RST: Yes" (drain and reset recommended) is not "RST: Yes".
  const std::vector<KernelEvent> log = {MemoryXid(94, "Contained: SM (0x1). RST: No, D-RST: Yes")};
  const Diagnosis d = DiagnoseOne(WithDbe(1), {}, log);
  EXPECT_EQ(Count(d.findings, "ECC_DBE_CONTAINED"), 1u);
}

TEST(MemoryHealth, ContainmentOnAnotherGpuSaysNothingAboutThisOne) {
  const std::vector<KernelEvent> log = {
      MemoryXid(94, "Contained: SM (0x1). RST: No, D-RST: No", "0000:38:00")};  // GPU 2.
  const Diagnosis d = DiagnoseOne(WithDbe(1), {}, log);
  EXPECT_EQ(Count(d.findings, "ECC_DBE_CONTAINED"), 0u);
  EXPECT_EQ(GpuVerdictOf(d, 1), Verdict::kFault);
}

TEST(MemoryHealth, HistoryDoesNotContainTodaysError) {
  // An Xid 94 before the last reboot is history: it cannot contain an error
  // counted since the driver loaded.
  KernelEvent old = kContained94;
  old.boot_id = "log#old";
  KernelEvent banner;
  banner.kind = kmsg::kKindBoot;
  banner.boot_id = "log#0";
  banner.time_unix_ms = kT0 - 3'600'000;
  banner.raw = "Linux version 6.1.0";
  const std::vector<KernelEvent> log = {old, banner};
  const Diagnosis d = DiagnoseOne(WithDbe(1), {}, log);
  EXPECT_EQ(Count(d.findings, "ECC_DBE_CONTAINED"), 0u);
  EXPECT_EQ(Count(d.findings, "ECC_DBE_VOLATILE"), 1u);
}

TEST(MemoryHealth, RemapFailureOutranksContainment) {
  Snapshot s = WithDbe(1);
  s.gpus[1].remapped_rows.failure = true;
  const std::vector<KernelEvent> log = {kContained94, MemoryXid(64)};
  const Diagnosis d = DiagnoseOne(s, {}, log);
  const Finding* f = Find(d.findings, "ROW_REMAP_FAILED");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(MemoryEvidence(*f), HasSubstr("cannot repair itself"));
  EXPECT_EQ(GpuVerdictOf(d, 1), Verdict::kFault);
}

TEST(MemoryHealth, PendingRemapAloneIsUsableUntilAReset) {
  Snapshot s = HealthyServer(4);
  s.gpus[1].remapped_rows.pending = true;
  s.gpus[1].remapped_rows.correctable = 1;
  const Diagnosis d = DiagnoseOne(s, {}, {});
  const Finding* f = Find(d.findings, "ROW_REMAP_PENDING");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(MemoryEvidence(*f), HasSubstr("usable until a reset: row remap pending"));
  EXPECT_EQ(GpuVerdictOf(d, 1), Verdict::kDegraded);
}

TEST(MemoryHealth, Xid48AloneStaysFatal) {
  const std::vector<KernelEvent> log = {MemoryXid(48)};
  const Diagnosis d = DiagnoseOne(HealthyServer(4), {}, log);
  EXPECT_EQ(Count(d.findings, "XID_FATAL"), 1u);
  EXPECT_THAT(MemoryEvidence(*Find(d.findings, "XID_FATAL")),
              HasSubstr("not shown contained: Xid 48 x1"));
}

}  // namespace
}  // namespace gw::diagnose
