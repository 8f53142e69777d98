#include "kmsg/xid_catalog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test_paths.h"

namespace gw::kmsg {
namespace {

bool IsHardwareCause(CauseClass c) {
  return c == CauseClass::kMemory || c == CauseClass::kBus || c == CauseClass::kThermalPower ||
         c == CauseClass::kNvlink;
}

TEST(KmsgNvidiaXid, EveryCodeFromOneTo172InOrder) {
  const auto rows = NvidiaXidCatalog();
  ASSERT_EQ(rows.size(), 172u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].code, i + 1);
    EXPECT_FALSE(rows[i].mnemonic.empty()) << rows[i].code;
    EXPECT_FALSE(rows[i].description.empty()) << rows[i].code;
    ASSERT_TRUE(FindNvidiaXid(rows[i].code)) << rows[i].code;
    EXPECT_EQ(FindNvidiaXid(rows[i].code)->mnemonic, rows[i].mnemonic);
  }
  EXPECT_FALSE(FindNvidiaXid(0));
  EXPECT_FALSE(FindNvidiaXid(173));
  EXPECT_FALSE(FindNvidiaXid(999));
}

// The research copy of NVIDIA's sheet, where it sits beside the repository
// (../shared): every row as transcribed.
TEST(KmsgNvidiaXid, RowsEqualTheResearchCopyOfNvidiasSheet) {
  std::ifstream in(gw::test::SourceDir() + "/../shared/research/xid-catalog-nvidia.md");
  if (!in) GTEST_SKIP() << "../shared/research/xid-catalog-nvidia.md not beside the repository";
  const std::regex row(R"(^\| (\d+) \| (.*?) \| (.*?) \| (.*?) \| (.*?) \|$)");
  std::string line;
  unsigned rows = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    ++rows;
    const unsigned code = static_cast<unsigned>(std::stoul(m[1]));
    SCOPED_TRACE(code);
    const std::optional<NvidiaXid> x = FindNvidiaXid(code);
    ASSERT_TRUE(x);
    EXPECT_EQ(x->mnemonic, m[2].str());
    EXPECT_EQ(x->description, m[3].str());
    EXPECT_EQ(NvidiaResolutionToken(x->immediate), m[4].str());
    std::string investigatory = m[5].str();
    for (size_t p; (p = investigatory.find("\\n")) != std::string::npos;) {
      investigatory.replace(p, 2, "; ");
    }
    EXPECT_EQ(x->investigatory, investigatory);
  }
  EXPECT_EQ(rows, 172u);
}

TEST(KmsgXidCatalog, EveryNvidiaCodeIsCataloguedAndNothingElse) {
  const auto all = XidCatalog();
  ASSERT_EQ(all.size(), NvidiaXidCatalog().size());
  for (size_t i = 0; i < all.size(); ++i) {
    const NvidiaXid& row = NvidiaXidCatalog()[i];
    SCOPED_TRACE(row.code);
    EXPECT_EQ(all[i].code, row.code);
    EXPECT_TRUE(all[i].known);
    EXPECT_EQ(all[i].mnemonic, row.mnemonic);
    EXPECT_EQ(all[i].description, row.description);
    EXPECT_EQ(all[i].immediate, row.immediate);
    EXPECT_EQ(all[i].investigatory, row.investigatory);
    EXPECT_EQ(all[i].unused, row.description == "Unused");
  }
  EXPECT_FALSE(LookupXid(173).known);  // Not in NVIDIA's catalog.
}

// Nothing is set per code: every judged field is the rule applied to NVIDIA's row.
TEST(KmsgXidCatalog, EveryJudgedFieldFollowsTheRule) {
  for (const XidInfo& x : XidCatalog()) {
    SCOPED_TRACE(x.code);
    const NvidiaXid row = *FindNvidiaXid(x.code);
    EXPECT_EQ(x.cause, CauseOf(row));
    EXPECT_EQ(x.action, ActionOf(row));
    EXPECT_EQ(x.impact, ImpactOf(x.cause, x.action));
    EXPECT_EQ(x.actor, ActorOf(x.cause, x.action));
    EXPECT_EQ(x.hardware_fault, x.impact == XidImpact::kFault && IsHardwareCause(x.cause));
    EXPECT_NE(x.cause, CauseClass::kUnknown);
    EXPECT_NE(CategoryWord(x.cause), "");
  }
}

TEST(KmsgXidCatalog, EveryEntryHasWordsOfItsOwn) {
  for (const XidInfo& x : XidCatalog()) {
    SCOPED_TRACE(x.code);
    EXPECT_FALSE(x.name.empty());
    EXPECT_FALSE(x.meaning.empty());
    EXPECT_FALSE(x.advice.empty());
    // A code in use has the project's words (or its engine family's), not
    // NVIDIA's label made a sentence (the fallback of a code without words).
    if (!x.unused) {
      EXPECT_NE(x.meaning, std::string(x.description) + ".");
    }
    // What hardware breaks by itself is never the user's to fix, nor "nothing to do".
    if (x.hardware_fault) {
      EXPECT_NE(x.actor, Actor::kUser);
      EXPECT_NE(x.impact, XidImpact::kNone);
    }
    if (x.reboot_recoverable) {
      EXPECT_NE(x.action, XidAction::kIgnore);
    }
  }
}

// The resolution is NVIDIA's: restart-the-application and ignore leave the
// GPU serving; reset, reboot and drain take it out of service.
TEST(KmsgXidCatalog, ImpactFollowsNvidiasResolution) {
  for (const XidInfo& x : XidCatalog()) {
    SCOPED_TRACE(x.code);
    switch (x.immediate) {
      case NvidiaResolution::kIgnore:
        EXPECT_EQ(x.impact, XidImpact::kNone);
        break;
      case NvidiaResolution::kRestartApp:
        EXPECT_EQ(x.impact,
                  x.cause == CauseClass::kMemory ? XidImpact::kDegraded : XidImpact::kNone);
        break;
      case NvidiaResolution::kResetGpu:
      case NvidiaResolution::kRestartBareMetal:
      case NvidiaResolution::kRestartVm:
      case NvidiaResolution::kCheckMechanicals:
      case NvidiaResolution::kWorkflowXid48:
        EXPECT_EQ(x.impact, XidImpact::kFault);
        break;
      default:
        break;
    }
  }
}

// Cases the issue names, each against NVIDIA's row.
TEST(KmsgXidCatalog, CodesAgreeWithNvidia) {
  // Copy-engine and other engine exceptions: restart the application, the GPU is fine.
  for (unsigned c : {39u, 40u, 41u, 70u, 85u, 126u, 135u, 82u, 83u, 86u, 139u}) {
    const XidInfo x = LookupXid(c);
    EXPECT_EQ(x.cause, CauseClass::kEngine) << c;
    EXPECT_EQ(x.action, XidAction::kRestartApp) << c;
    EXPECT_EQ(x.impact, XidImpact::kNone) << c;
    EXPECT_EQ(x.actor, Actor::kUser) << c;
  }
  EXPECT_EQ(LookupXid(39).name, "copy engine 0 exception");
  EXPECT_EQ(LookupXid(44).impact, XidImpact::kNone);  // IGNORE.
  // 109: NVIDIA resets the GPU; its cause stays the application's.
  EXPECT_EQ(LookupXid(109).action, XidAction::kResetGpu);
  EXPECT_EQ(LookupXid(109).impact, XidImpact::kFault);
  EXPECT_EQ(LookupXid(109).cause, CauseClass::kApplication);
  for (unsigned c : {157u, 160u, 161u}) {
    EXPECT_EQ(LookupXid(c).action, XidAction::kIgnore) << c;
    EXPECT_EQ(LookupXid(c).impact, XidImpact::kNone) << c;
  }
  for (unsigned c : {42u, 58u, 73u}) EXPECT_TRUE(LookupXid(c).unused) << c;
  // 162-165: four events, 162 the capability coming back.
  EXPECT_EQ(LookupXid(162).action, XidAction::kIgnore);
  EXPECT_EQ(LookupXid(162).impact, XidImpact::kNone);
  EXPECT_EQ(LookupXid(163).impact, XidImpact::kDegraded);
  std::set<std::string_view> names;
  for (unsigned c = 162; c <= 165; ++c) names.insert(LookupXid(c).name);
  EXPECT_EQ(names.size(), 4u);
  // 171/172 add to Xid 48 and take its resolution.
  EXPECT_EQ(LookupXid(171).action, LookupXid(48).action);
  EXPECT_EQ(LookupXid(172).impact, XidImpact::kFault);
  EXPECT_EQ(LookupXid(94).impact, XidImpact::kDegraded);
  EXPECT_EQ(LookupXid(94).actor, Actor::kUser);
  EXPECT_EQ(LookupXid(95).impact, XidImpact::kFault);
  EXPECT_EQ(LookupXid(79).action, XidAction::kRebootNode);
  EXPECT_EQ(LookupXid(79).cause, CauseClass::kBus);
  EXPECT_EQ(LookupXid(48).action, XidAction::kDrain);
  EXPECT_EQ(LookupXid(54).action, XidAction::kCheckMechanicals);
  EXPECT_EQ(LookupXid(78).action, XidAction::kUpdateSoftware);
  EXPECT_EQ(LookupXid(151).action, XidAction::kRebootNode);
  EXPECT_EQ(LookupXid(119).cause, CauseClass::kFirmware);
  EXPECT_FALSE(LookupXid(119).hardware_fault);
  EXPECT_EQ(LookupXid(154).cause, CauseClass::kInformational);
  EXPECT_EQ(CategoryWord(LookupXid(74).cause), "nvlink");
  EXPECT_EQ(CategoryWord(LookupXid(119).cause), "driver");
  EXPECT_EQ(CategoryWord(LookupXid(40).cause), "engine");
  EXPECT_EQ(CategoryWord(LookupXid(54).cause), "power");
  for (unsigned c : {48u, 63u, 64u, 92u, 94u, 95u, 140u, 156u, 171u}) {
    EXPECT_EQ(CategoryWord(LookupXid(c).cause), "memory") << c;
  }
  for (unsigned c : {48u, 64u, 74u, 79u, 94u, 95u, 119u}) {
    EXPECT_TRUE(LookupXid(c).reboot_recoverable) << c;
  }
}

// The application set is exactly the Kubernetes device plugin's.
TEST(KmsgXidCatalog, ApplicationXidsAreTheDevicePluginsSet) {
  std::set<unsigned> application;
  for (const XidInfo& x : XidCatalog()) {
    if (x.cause == CauseClass::kApplication) application.insert(x.code);
  }
  EXPECT_EQ(application, (std::set<unsigned>{13, 31, 43, 45, 68, 109}));
  for (unsigned c : application) {
    EXPECT_FALSE(LookupXid(c).hardware_fault) << c;
    EXPECT_EQ(CategoryWord(LookupXid(c).cause), "application") << c;
  }
}

TEST(KmsgXidCatalog, UnknownCodesSayTheyAreUnknown) {
  for (unsigned c : {0u, 173u, 999u, 1234u, 4294967295u}) {
    const XidInfo x = LookupXid(c);
    EXPECT_FALSE(x.known) << c;
    EXPECT_EQ(x.code, c);
    EXPECT_EQ(x.cause, CauseClass::kUnknown);
    EXPECT_EQ(CategoryWord(x.cause), "driver");  // Not "hardware": nobody knows.
    EXPECT_EQ(x.action, XidAction::kContactSupport);
    EXPECT_NE(x.advice.find("Unknown Xid"), std::string_view::npos);
    EXPECT_FALSE(x.hardware_fault);
    EXPECT_EQ(x.impact, XidImpact::kDegraded);
  }
  EXPECT_NE(LookupXid(999).meaning.find("999"), std::string_view::npos);
  EXPECT_NE(LookupXid(4242).meaning.find("not in NVIDIA's catalog"), std::string_view::npos);
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
  EXPECT_EQ(solo.impact, XidImpact::kNone);
  EXPECT_FALSE(solo.info.hardware_fault);
  // The cleanup after a double-bit ECC error says what the ECC error says.
  const auto after48 = AssessXid(XidEvent(45, "caused by previous Xid 48"));
  EXPECT_TRUE(after48.info.hardware_fault);
  EXPECT_EQ(after48.cause, CauseClass::kMemory);
  EXPECT_EQ(after48.impact, XidImpact::kFault);
  EXPECT_EQ(after48.info.action, XidAction::kDrain);
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
  // The actions newer drivers add: 5 recover the IMEX domain, 6 bus reset, 7 system reboot.
  EXPECT_EQ(AssessXid(XidEvent(154, "changed from 0x0 (None) to 0x6 (Bus Reset)")).recovery_action,
            XidAction::kResetGpu);
  EXPECT_EQ(
      AssessXid(XidEvent(154, "changed from 0x0 (None) to 0x7 (System Reboot)")).recovery_action,
      XidAction::kRebootNode);
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
  // Xid 45 caused by Xid N is judged as N.
  const auto a = AssessXid(XidEvent(45, "Ch 00000001 caused by previous Xid 149"));
  EXPECT_EQ(a.impact, XidImpact::kFault);
  EXPECT_EQ(a.cause, CauseClass::kNvlink);
  EXPECT_EQ(AssessXid(XidEvent(94, "Contained: SM (0x1). RST: No, D-RST: No")).impact,
            XidImpact::kDegraded);
  EXPECT_EQ(AssessXid(XidEvent(95, "Uncontained: LTC TAG (0x2,0x1). RST: Yes")).impact,
            XidImpact::kFault);
}

TEST(KmsgXidNames, StableWords) {
  EXPECT_EQ(CauseClassName(CauseClass::kMemory), "memory_ecc");
  EXPECT_EQ(CauseClassName(CauseClass::kBus), "bus_pcie");
  EXPECT_EQ(CauseClassName(CauseClass::kEngine), "engine");
  EXPECT_EQ(XidActionName(XidAction::kRebootNode), "reboot_node");
  EXPECT_EQ(XidActionName(XidAction::kCheckMechanicals), "check_mechanicals");
  EXPECT_EQ(XidActionName(XidAction::kUpdateSoftware), "update_software");
  EXPECT_EQ(ActorName(Actor::kVendor), "vendor");
  EXPECT_EQ(NvidiaResolutionToken(NvidiaResolution::kWorkflowXid48), "WORKFLOW_XID_48");
}

// docs/xid-catalog.md lists every code with NVIDIA's row and what the rule
// makes of it; the page and the code are held equal.
TEST(KmsgXidCatalog, TheCatalogPageEqualsTheCode) {
  std::ifstream in(gw::test::SourceDir() + "/docs/xid-catalog.md");
  ASSERT_TRUE(in) << "docs/xid-catalog.md not found";
  std::map<unsigned, std::string> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < 4 || line[0] != '|' || line[2] < '0' || line[2] > '9') continue;
    rows[static_cast<unsigned>(std::stoul(line.substr(2)))] = line;
  }
  ASSERT_EQ(rows.size(), XidCatalog().size());
  for (const XidInfo& x : XidCatalog()) {
    std::string investigatory(x.investigatory);
    for (size_t p; (p = investigatory.find('|')) != std::string::npos;) {
      investigatory.replace(p, 1, "/");
    }
    const std::string expected =
        "| " + std::to_string(x.code) + " | " + std::string(x.mnemonic) + " | " +
        std::string(x.name) + " | " + std::string(NvidiaResolutionToken(x.immediate)) + " | " +
        investigatory + " | " + std::string(CauseClassName(x.cause)) + " | " +
        std::string(CategoryWord(x.cause)) + " | " + std::string(XidActionName(x.action)) + " | " +
        std::string(XidImpactName(x.impact)) + " | " + std::string(ActorName(x.actor)) + " |";
    EXPECT_EQ(rows[x.code], expected);
  }
}

}  // namespace
}  // namespace gw::kmsg
