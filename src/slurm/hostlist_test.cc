#include "slurm/hostlist.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gw::slurm {
namespace {

using Names = std::vector<std::string>;

Names Expand(const std::string& expression) {
  Result<Names> r = ExpandHostlist(expression);
  EXPECT_TRUE(r.ok()) << expression << ": " << r.error().message;
  return r.ok() ? *r : Names{};
}

TEST(Hostlist, PlainNamesAndCommas) {
  EXPECT_EQ(Expand("n1"), (Names{"n1"}));
  EXPECT_EQ(Expand("n1,login2"), (Names{"n1", "login2"}));
  EXPECT_EQ(Expand(""), Names{});
  EXPECT_EQ(Expand("(null)"), Names{});
}

TEST(Hostlist, RangesListsAndPadding) {
  EXPECT_EQ(Expand("n[1-3]"), (Names{"n1", "n2", "n3"}));
  EXPECT_EQ(Expand("n[1-2,5]"), (Names{"n1", "n2", "n5"}));
  EXPECT_EQ(Expand("gpu[08-10]"), (Names{"gpu08", "gpu09", "gpu10"}));
  EXPECT_EQ(Expand("a[1-2]-ib,b3"), (Names{"a1-ib", "a2-ib", "b3"}));
}

TEST(Hostlist, SeveralGroupsMultiplyOut) {
  EXPECT_EQ(Expand("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
}

TEST(Hostlist, MalformedExpressionsAreNamedErrors) {
  for (const std::string bad : {"n[1-3", "n1-3]", "n[]", "n[3-1]", "n[a-b]", "n[[1]]"}) {
    Result<Names> r = ExpandHostlist(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "bad_hostlist") << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(Hostlist, AHugeRangeIsRefusedNotAllocated) {
  Result<Names> r = ExpandHostlist("n[0-999999999999]", 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("more than 1000 names"), std::string::npos);
  EXPECT_FALSE(ExpandHostlist("a[1-100]b[1-100]", 1000).ok());
}

}  // namespace
}  // namespace gw::slurm
