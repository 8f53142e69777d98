#include "render/explain.h"

#include <string>

#include <gtest/gtest.h>

#include "core/text.h"
#include "diagnose/catalog.h"
#include "render/test_diagnoses.h"

namespace gw::render {
namespace {

TEST(Explain, EveryCatalogCodeExplains) {
  ASSERT_FALSE(diagnose::AllSpecs().empty());
  for (const diagnose::FindingSpec& spec : diagnose::AllSpecs()) {
    const Result<std::string> r = RenderExplain(spec.code, false);
    ASSERT_TRUE(r.ok()) << spec.code;
    const std::string& out = *r;
    // The headline, possibly wrapped: "CODE — title".
    std::string head = out.substr(0, out.find("\nseverity "));
    for (size_t p; (p = head.find("\n  ")) != std::string::npos;) head.replace(p, 3, " ");
    EXPECT_EQ(head, std::string(spec.code) + " — " + std::string(spec.title)) << out;
    EXPECT_NE(out.find("severity " + std::string(diagnose::SeverityName(spec.severity))),
              std::string::npos);
    // Xid findings take the category of the Xid's cause (catalog.h CategorySource).
    const std::string category = spec.category_source == diagnose::CategorySource::kXidCause
                                     ? std::string("by the Xid's cause")
                                     : std::string(diagnose::CategoryName(spec.category));
    EXPECT_NE(out.find("category " + category), std::string::npos) << spec.code;
    EXPECT_NE(out.find("verdict " + std::string(diagnose::VerdictName(spec.implies))),
              std::string::npos);
    EXPECT_NE(out.find("who acts: "), std::string::npos);
    EXPECT_NE(out.find("What triggers it:"), std::string::npos) << spec.code;
    if (!diagnose::SplitSteps(spec.next_steps).empty()) {
      EXPECT_NE(out.find("What to do:\n  - "), std::string::npos) << spec.code;
    }
    EXPECT_EQ(out.find('\x1b'), std::string::npos);
    for (const std::string& line : testing::SplitLines(out)) {
      EXPECT_LE(DisplayWidth(line), kExplainWidth) << spec.code << ": " << line;
    }
  }
}

TEST(Explain, KeepsTheWordsOfTheCatalog) {
  const Result<std::string> r = RenderExplain("IDLE_HOLDER", false);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->find("  - gpuwarden status --gpu <gpu>\n"), std::string::npos) << *r;
  EXPECT_NE(r->find("who acts: the owner of the processes named"), std::string::npos);
  EXPECT_NE(r->find("Explanation:\n"), std::string::npos);
  EXPECT_NE(r->find("reclaimed"), std::string::npos);  // From the second paragraph.
}

TEST(Explain, CodeIsCaseInsensitive) {
  const Result<std::string> r = RenderExplain("xid_fatal", false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rfind("XID_FATAL — ", 0), 0u);
}

TEST(Explain, ColourOnlyWhenAsked) {
  const Result<std::string> r = RenderExplain("XID_FATAL", true);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->find("\x1b[1;31mFAULT"), std::string::npos) << *r;
}

TEST(Explain, UnknownCodeNamesItAndCloseMatches) {
  const Result<std::string> r = RenderExplain("IDLE_HOLDR", false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "not_found");
  EXPECT_NE(r.error().message.find("'IDLE_HOLDR'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("IDLE_HOLDER"), std::string::npos) << r.error().message;
  const Result<std::string> partial = RenderExplain("remap", false);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().message.find("ROW_REMAP_PENDING"), std::string::npos);
}

TEST(Explain, UnknownCodeWithoutMatchesAndHostileText) {
  const Result<std::string> r = RenderExplain("\x1b]0;zzzzzzzzzzzzzzzzzzzz\x07", false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos);
  EXPECT_NE(r.error().message.find("codes are known"), std::string::npos) << r.error().message;
  EXPECT_TRUE(CloseCodes("").empty() || CloseCodes("").size() <= 5);
}

}  // namespace
}  // namespace gw::render
