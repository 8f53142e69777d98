#include "core/json_out.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gw {
namespace {

using nlohmann::json;

TEST(JsonText, KeepsValidTextAndReplacesInvalidBytes) {
  EXPECT_EQ(JsonText("python train.py"), json("python train.py"));
  EXPECT_EQ(JsonText("caf\xC3\xA9"), json("caf\xC3\xA9"));
  // Controls are valid UTF-8: JSON escaping handles them, not JsonText.
  EXPECT_EQ(JsonText("a\x1b[2J"), json("a\x1b[2J"));
  EXPECT_EQ(JsonText("bad\xFF"), json("bad\xEF\xBF\xBD"));
  EXPECT_EQ(JsonText(""), json(""));
  // A replaced byte is what lets dump() succeed at all.
  EXPECT_NO_THROW((void)json({{"k", JsonText("\xC3")}}).dump());
}

TEST(JsonTextList, IsAnArrayInOrderEvenWhenEmpty) {
  EXPECT_EQ(JsonTextList({}), json::array());
  EXPECT_EQ(JsonTextList({"b", "a\xFF"}), json::array({"b", "a\xEF\xBF\xBD"}));
}

TEST(JsonOrNull, UnknownIsNullNeverZero) {
  EXPECT_TRUE(JsonOrNull(std::optional<int>()).is_null());
  EXPECT_TRUE(JsonOrNull(std::optional<std::string>()).is_null());
  EXPECT_TRUE(JsonOrNull(std::optional<bool>()).is_null());
  EXPECT_EQ(JsonOrNull(std::optional<int>(0)), json(0));
  EXPECT_EQ(JsonOrNull(std::optional<uint64_t>(18446744073709551615u)),
            json(18446744073709551615u));
  EXPECT_EQ(JsonOrNull(std::optional<double>(2.5)), json(2.5));
  EXPECT_EQ(JsonOrNull(std::optional<bool>(false)), json(false));
  EXPECT_EQ(JsonOrNull(std::optional<std::string>("")), json(""));
}

TEST(JsonOrNull, AStringIsMadeValidUtf8) {
  EXPECT_EQ(JsonOrNull(std::optional<std::string>("x\xFE")), json("x\xEF\xBF\xBD"));
}

TEST(IsoTimeUtc, WritesUtcWithMilliseconds) {
  EXPECT_EQ(IsoTimeUtc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(IsoTimeUtc(1737368306000), "2025-01-20T10:18:26.000Z");
  EXPECT_EQ(IsoTimeUtc(1796000523456), "2026-11-30T01:02:03.456Z");
  EXPECT_EQ(IsoTimeUtc(951782400000), "2000-02-29T00:00:00.000Z");  // A leap day.
  EXPECT_EQ(IsoTimeUtc(1), "1970-01-01T00:00:00.001Z");
}

TEST(IsoTimeUtc, CountsBackBeforeTheEpoch) {
  EXPECT_EQ(IsoTimeUtc(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(IsoTimeUtc(-1000), "1969-12-31T23:59:59.000Z");
  EXPECT_EQ(IsoTimeUtc(-1001), "1969-12-31T23:59:58.999Z");
}

TEST(IsoTimeUtc, OnlyYearsAFourDigitYearCanShow) {
  EXPECT_EQ(IsoTimeUtc(-62167219200000), "0000-01-01T00:00:00.000Z");
  EXPECT_EQ(IsoTimeUtc(253402300799999), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(IsoTimeUtc(-62167219200001), std::nullopt);
  EXPECT_EQ(IsoTimeUtc(253402300800000), std::nullopt);
  EXPECT_EQ(IsoTimeUtc(INT64_MAX), std::nullopt);
  EXPECT_EQ(IsoTimeUtc(INT64_MIN), std::nullopt);
}

TEST(DumpJsonForTerminal, EscapesWhatATerminalCouldActOn) {
  const json doc = {{"s", "del\x7F c1\xC2\x9B bidi\xE2\x80\xAE ls\xE2\x80\xA8 ok\xE2\x80\xA6"}};
  EXPECT_EQ(DumpJsonForTerminal(doc, false, "gpuwarden.test"),
            R"({"s":"del\u007f c1\u009b bidi\u202e ls\u2028 ok)"
            "\xE2\x80\xA6"
            R"("})");
  // The escapes denote the same string value.
  EXPECT_EQ(json::parse(DumpJsonForTerminal(doc, true, "gpuwarden.test")), doc);
}

TEST(DumpJsonForTerminal, InvalidUtf8BecomesReplacementCharacters) {
  const json doc = {{"s", std::string("a\xFF", 2)}};
  EXPECT_EQ(DumpJsonForTerminal(doc, false, "gpuwarden.test"), "{\"s\":\"a\xEF\xBF\xBD\"}");
}

TEST(JsonErrorDocument, IsValidJsonNamingTheSchema) {
  const json doc = json::parse(JsonErrorDocument("gpuwarden.status"));
  EXPECT_EQ(doc.at("schema"), "gpuwarden.status");
  EXPECT_EQ(doc.at("schema_version"), 1);
  ASSERT_EQ(doc.at("errors").size(), 1u);
  EXPECT_EQ(doc.at("errors")[0].at("code"), "internal");
  EXPECT_EQ(doc.at("errors")[0].at("source"), "render");
}

TEST(DumpJsonFragmentForTerminal, IndentsNestedLinesByDepth) {
  const json value = {{"a", 1}};
  EXPECT_EQ(DumpJsonFragmentForTerminal(value, true, 1), "{\n    \"a\": 1\n  }");
  EXPECT_EQ(DumpJsonFragmentForTerminal(value, false, 3), R"({"a":1})");
}

}  // namespace
}  // namespace gw
