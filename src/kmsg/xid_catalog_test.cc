#include "kmsg/xid_catalog.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace gw::kmsg {
namespace {

// Part B.2 of the research notes: the codes with a catalog mnemonic.
constexpr unsigned kTableCodes[] = {8,   13,  31,  32,  38,  43,  45,  48,  56,  57,  61,  62,  63,
                                    64,  68,  69,  74,  79,  92,  94,  95,  109, 119, 120, 121, 122,
                                    123, 140, 143, 144, 145, 146, 147, 148, 149, 150, 154};
// Part B.2 "other frequently seen codes".
constexpr unsigned kOtherCodes[] = {46,  54,  110, 136, 137, 151, 155, 156, 157, 158, 159, 160, 161,
                                    162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173};

// Codes of NVIDIA's legacy listing that gpuwarden's diagnosis table had on its
// own before the two tables became this one catalog.
constexpr unsigned kLegacyCodes[] = {39, 42, 58, 60, 67, 73, 78};

TEST(KmsgXidCatalog, EveryCodeOfPartBIsPresent) {
  for (unsigned c : kTableCodes) {
    const XidInfo x = LookupXid(c);
    EXPECT_TRUE(x.known) << c;
    EXPECT_FALSE(x.mnemonic.empty()) << c;
  }
  for (unsigned c : kOtherCodes) EXPECT_TRUE(LookupXid(c).known) << c;
  for (unsigned c : kLegacyCodes) EXPECT_TRUE(LookupXid(c).known) << c;
  EXPECT_EQ(XidCatalog().size(),
            std::size(kTableCodes) + std::size(kOtherCodes) + std::size(kLegacyCodes));
}

TEST(KmsgXidCatalog, EveryEntryIsComplete) {
  std::set<unsigned> seen;
  unsigned previous = 0;
  for (const XidInfo& x : XidCatalog()) {
    SCOPED_TRACE(x.code);
    EXPECT_TRUE(x.known);
    EXPECT_GT(x.code, previous);  // Ascending, unique.
    previous = x.code;
    EXPECT_FALSE(x.name.empty());
    EXPECT_FALSE(x.meaning.empty());
    EXPECT_FALSE(x.advice.empty());
    EXPECT_NE(x.cause, CauseClass::kUnknown);
    EXPECT_NE(CauseClassName(x.cause), "unknown");
    EXPECT_FALSE(XidActionName(x.action).empty());
    EXPECT_FALSE(ActorName(x.actor).empty());
    // A fault that is hardware by itself is never the user's to fix.
    if (x.hardware_fault) {
      EXPECT_NE(x.actor, Actor::kUser);
    }
    // A reboot can only be expected to clear what is not left to the application.
    if (x.reboot_recoverable) {
      EXPECT_NE(x.action, XidAction::kIgnore);
    }
  }
}

// Every code: its impact follows NVIDIA's action and containment, and its
// cause maps to a finding category.
TEST(KmsgXidCatalog, ImpactFollowsTheActionForEveryCode) {
  for (const XidInfo& x : XidCatalog()) {
    SCOPED_TRACE(x.code);
    EXPECT_NE(CategoryWord(x.cause), "");
    if (x.cause == CauseClass::kApplication) {
      EXPECT_EQ(x.impact, XidImpact::kNone);
      EXPECT_EQ(CategoryWord(x.cause), "application");
      continue;
    }
    if (x.code == 94) {  // The one explicit exception: contained, restart the app.
      EXPECT_EQ(x.impact, XidImpact::kDegraded);
      continue;
    }
    EXPECT_EQ(x.impact, ImpactOf(x.cause, x.action, x.hardware_fault));
    switch (x.action) {
      case XidAction::kIgnore:
        EXPECT_EQ(x.impact, XidImpact::kNone);
        break;
      case XidAction::kResetGpu:
      case XidAction::kRebootNode:
      case XidAction::kDrain:
        if (x.cause != CauseClass::kInformational) {
          EXPECT_EQ(x.impact, XidImpact::kFault);
        }
        break;
      default:
        break;
    }
    // What hardware breaks by itself is never "nothing to do".
    if (x.hardware_fault) {
      EXPECT_NE(x.impact, XidImpact::kNone);
    }
  }
  EXPECT_EQ(LookupXid(94).impact, XidImpact::kDegraded);
  EXPECT_EQ(LookupXid(95).impact, XidImpact::kFault);
  EXPECT_EQ(LookupXid(48).impact, XidImpact::kFault);
  EXPECT_EQ(LookupXid(79).impact, XidImpact::kFault);
  EXPECT_EQ(LookupXid(119).impact, XidImpact::kFault);
  EXPECT_EQ(LookupXid(63).impact, XidImpact::kNone);
  EXPECT_EQ(LookupXid(4242).impact, XidImpact::kDegraded);
  EXPECT_EQ(CategoryWord(LookupXid(74).cause), "nvlink");
  EXPECT_EQ(CategoryWord(LookupXid(119).cause), "driver");
  EXPECT_EQ(CategoryWord(LookupXid(38).cause), "driver");
  EXPECT_EQ(CategoryWord(LookupXid(79).cause), "bus");
  EXPECT_EQ(CategoryWord(LookupXid(54).cause), "power");
  EXPECT_EQ(CategoryWord(LookupXid(4242).cause), "hardware");
  for (unsigned c : {48u, 63u, 64u, 92u, 94u, 95u, 140u}) {
    EXPECT_EQ(CategoryWord(LookupXid(c).cause), "memory") << c;
  }
}

TEST(KmsgXidCatalog, ApplicationXidsAreNeverHardware) {
  for (unsigned c : {13u, 31u, 43u, 45u, 68u, 109u}) {
    const XidInfo x = LookupXid(c);
    EXPECT_EQ(x.cause, CauseClass::kApplication) << c;
    EXPECT_FALSE(x.hardware_fault) << c;
    EXPECT_FALSE(x.reboot_recoverable) << c;
  }
  EXPECT_EQ(LookupXid(13).action, XidAction::kRestartApp);
  EXPECT_EQ(LookupXid(13).actor, Actor::kUser);
  EXPECT_EQ(LookupXid(43).action, XidAction::kIgnore);
}

TEST(KmsgXidCatalog, HardwareAndRecoverableExamples) {
  for (unsigned c : {48u, 64u, 74u, 79u, 95u, 140u}) {
    EXPECT_TRUE(LookupXid(c).hardware_fault) << c;
  }
  for (unsigned c : {48u, 64u, 74u, 79u, 94u, 95u, 119u}) {
    EXPECT_TRUE(LookupXid(c).reboot_recoverable) << c;
  }
  EXPECT_EQ(LookupXid(79).action, XidAction::kRebootNode);
  EXPECT_EQ(LookupXid(79).cause, CauseClass::kBus);
  EXPECT_EQ(LookupXid(48).action, XidAction::kDrain);
  EXPECT_EQ(LookupXid(119).cause, CauseClass::kFirmware);
  EXPECT_FALSE(LookupXid(119).hardware_fault);
  EXPECT_EQ(LookupXid(54).action, XidAction::kCheckMechanicals);
  EXPECT_EQ(LookupXid(63).action, XidAction::kIgnore);
  EXPECT_EQ(LookupXid(74).cause, CauseClass::kNvlink);
  EXPECT_EQ(LookupXid(154).cause, CauseClass::kInformational);
}

TEST(KmsgXidCatalog, UnknownCodes) {
  for (unsigned c : {0u, 1u, 999u, 1234u, 4294967295u}) {
    const XidInfo x = LookupXid(c);
    EXPECT_FALSE(x.known) << c;
    EXPECT_EQ(x.code, c);
    EXPECT_EQ(x.cause, CauseClass::kUnknown);
    EXPECT_EQ(x.action, XidAction::kContactSupport);
    EXPECT_EQ(x.advice, "unknown Xid, contact support");
    EXPECT_FALSE(x.hardware_fault);
  }
  EXPECT_NE(LookupXid(999).meaning.find("999"), std::string_view::npos);
}

KernelEvent XidEvent(unsigned xid, std::string detail) {
  KernelEvent ev;
  ev.kind = kKindXid;
  ev.xid = xid;
  ev.detail = std::move(detail);
  return ev;
}

TEST(KmsgXidAssess, Xid45IsAttributedToThePreviousXid) {
  const auto a = AssessXid(XidEvent(45, "Ch 00000001 caused by previous Xid 149"));
  EXPECT_EQ(a.xid, 45u);
  EXPECT_EQ(a.attributed_xid, 149u);
  EXPECT_EQ(a.info.cause, CauseClass::kNvlink);
  const auto solo = AssessXid(XidEvent(45, "Ch 00000001"));
  EXPECT_EQ(solo.attributed_xid, 45u);
  EXPECT_EQ(solo.info.cause, CauseClass::kApplication);
  EXPECT_FALSE(solo.info.hardware_fault);
  EXPECT_EQ(AssessXid(XidEvent(45, "caused by previous Xid 48")).info.hardware_fault, true);
  EXPECT_EQ(AssessXid(XidEvent(13, "caused by previous Xid 48")).attributed_xid, 13u);
}

TEST(KmsgXidAssess, Xid154RecoveryAction) {
  EXPECT_EQ(AssessXid(XidEvent(154,
                               "GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 "
                               "(GPU Reset Required)"))
                .recovery_action,
            XidAction::kResetGpu);
  EXPECT_EQ(AssessXid(XidEvent(154,
                               "GPU recovery action changed from 0x0 (None) to 0x4 (Drain "
                               "and Reset)"))
                .recovery_action,
            XidAction::kDrain);
  EXPECT_EQ(AssessXid(XidEvent(154,
                               "changed from 0x1 (GPU Reset Required) to 0x2 (Node Reboot "
                               "Required)"))
                .recovery_action,
            XidAction::kRebootNode);
  EXPECT_EQ(AssessXid(XidEvent(154, "changed from 0x1 to 0x0 (None)")).recovery_action,
            XidAction::kIgnore);
  EXPECT_FALSE(AssessXid(XidEvent(154, "garbled")).recovery_action);
  EXPECT_FALSE(AssessXid(XidEvent(79, "to 0x1")).recovery_action);
}

TEST(KmsgXidAssess, ImpactRefinedByTheText) {
  EXPECT_EQ(AssessXid(XidEvent(154, "changed from 0x0 (None) to 0x4 (Drain and Reset)")).impact,
            XidImpact::kFault);
  EXPECT_EQ(AssessXid(XidEvent(154, "changed from 0x1 to 0x0 (None)")).impact, XidImpact::kNone);
  EXPECT_EQ(AssessXid(XidEvent(154, "garbled")).impact, XidImpact::kDegraded);
  const auto nonfatal = AssessXid(XidEvent(145, "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2)"));
  EXPECT_EQ(nonfatal.impact, XidImpact::kNone);
  EXPECT_EQ(nonfatal.info.action, XidAction::kIgnore);  // NVIDIA: ignore, watch for 154.
  EXPECT_EQ(AssessXid(XidEvent(149, "NETIR_LINK_EVT Fatal XC0 i0 Link 09 (0x004525c6)")).impact,
            XidImpact::kFault);
  // Xid 45 stays the application's; the Xid it names is judged on its own line.
  const auto a = AssessXid(XidEvent(45, "Ch 00000001 caused by previous Xid 149"));
  EXPECT_EQ(a.impact, XidImpact::kNone);
  EXPECT_EQ(a.cause, CauseClass::kApplication);
  EXPECT_EQ(AssessXid(XidEvent(94, "Contained: SM (0x1). RST: No, D-RST: No")).impact,
            XidImpact::kDegraded);
  EXPECT_EQ(AssessXid(XidEvent(95, "Uncontained: LTC TAG (0x2,0x1). RST: Yes")).impact,
            XidImpact::kFault);
}

TEST(KmsgXidNames, StableWords) {
  EXPECT_EQ(CauseClassName(CauseClass::kMemory), "memory_ecc");
  EXPECT_EQ(CauseClassName(CauseClass::kBus), "bus_pcie");
  EXPECT_EQ(XidActionName(XidAction::kRebootNode), "reboot_node");
  EXPECT_EQ(XidActionName(XidAction::kCheckMechanicals), "check_mechanicals");
  EXPECT_EQ(ActorName(Actor::kVendor), "vendor");
}

}  // namespace
}  // namespace gw::kmsg

namespace gw::kmsg {
namespace {

// docs/diagnosis.md carries the catalog as a table for users; keep them in step.
TEST(KmsgXidCatalog, EveryCodeIsInTheUsersTable) {
  std::ifstream in(gw::test::SourceDir() + "/docs/diagnosis.md");
  ASSERT_TRUE(in) << "docs/diagnosis.md not found";
  std::stringstream text;
  text << in.rdbuf();
  for (const XidInfo& x : XidCatalog()) {
    EXPECT_NE(text.str().find("| " + std::to_string(x.code) + " | " + std::string(x.name) + " |"),
              std::string::npos)
        << "Xid " << x.code << " missing from docs/diagnosis.md";
  }
}

}  // namespace
}  // namespace gw::kmsg
