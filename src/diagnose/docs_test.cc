// docs/diagnosis.md documents every finding code of the catalog and every verdict.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "diagnose/catalog.h"
#include "test_paths.h"

namespace gw::diagnose {
namespace {

std::string ReadDoc() {
  std::ifstream in(gw::test::SourceDir() + "/docs/diagnosis.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DocsTest, EveryCodeHasASection) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << "docs/diagnosis.md is missing";
  for (const FindingSpec& spec : AllSpecs()) {
    const std::string heading = "#### `" + std::string(spec.code) + "`";
    EXPECT_NE(doc.find(heading + "\n"), std::string::npos) << "no section " << heading;
  }
}

TEST(DocsTest, NoSectionForAnUnknownCode) {
  const std::string doc = ReadDoc();
  const std::string marker = "#### `";
  for (size_t at = doc.find(marker); at != std::string::npos; at = doc.find(marker, at + 1)) {
    size_t end = doc.find('`', at + marker.size());
    ASSERT_NE(end, std::string::npos);
    const std::string code = doc.substr(at + marker.size(), end - at - marker.size());
    EXPECT_NE(FindSpec(code), nullptr) << "docs/diagnosis.md documents unknown code " << code;
  }
}

TEST(DocsTest, EveryVerdictIsExplained) {
  const std::string doc = ReadDoc();
  for (Verdict v : {Verdict::kOk, Verdict::kBusy, Verdict::kReclaimable, Verdict::kDegraded,
                    Verdict::kFault, Verdict::kUnknown, Verdict::kNeverFits}) {
    EXPECT_NE(doc.find("**" + std::string(VerdictName(v)) + "**"), std::string::npos)
        << VerdictName(v);
  }
}

TEST(DocsTest, EveryGpuStateIsExplained) {
  const std::string doc = ReadDoc();
  for (GpuState st : {GpuState::kFree, GpuState::kInUse, GpuState::kBusy, GpuState::kReclaimable,
                      GpuState::kDegraded, GpuState::kFault, GpuState::kUnknown}) {
    EXPECT_NE(doc.find("| **" + std::string(GpuStateName(st)) + "** |"), std::string::npos)
        << GpuStateName(st);
  }
}

}  // namespace
}  // namespace gw::diagnose
