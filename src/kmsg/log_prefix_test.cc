#include "kmsg/log_prefix.h"

#include <gtest/gtest.h>

#include "kmsg/kmsg_test_util.h"

namespace gw::kmsg {
namespace {

LinePrefix P(std::string_view prefix, int64_t reference = testing::kReferenceMs,
             std::optional<int64_t> boot = std::nullopt) {
  PrefixContext ctx;
  ctx.reference_unix_ms = reference;
  ctx.boot_time_unix_ms = boot;
  LocalTimeConverter local;
  return ParseLinePrefix(prefix, ctx, local);
}

TEST(KmsgLinePrefix, DmesgMonotonic) {
  auto p = P("[ 1234.567890] ");
  EXPECT_DOUBLE_EQ(*p.monotonic_s, 1234.56789);
  EXPECT_FALSE(p.time_unix_ms);
  EXPECT_TRUE(p.from_kernel);
  EXPECT_DOUBLE_EQ(*P("[1.5] ").monotonic_s, 1.5);
  EXPECT_EQ(P("[    2.000000] ", 0, 1000).time_unix_ms, 3000);
  EXPECT_FALSE(P("[123] ").monotonic_s);  // A pid in brackets is not a time.
}

TEST(KmsgLinePrefix, DmesgHumanTime) {
  EXPECT_EQ(P("[Fri Aug 30 11:43:09 2024] ").time_unix_ms, 1725018189000);
  EXPECT_EQ(P("[Sat Aug  3 11:43:09 2024] ").time_unix_ms, 1722685389000);
  EXPECT_FALSE(P("[Fri Foo 30 11:43:09 2024] ").time_unix_ms);
  EXPECT_FALSE(P("[Fri Aug 30 25:43:09 2024] ").time_unix_ms);
}

TEST(KmsgLinePrefix, Iso) {
  EXPECT_EQ(P("2024-08-30T11:43:09.123456+00:00 host kernel: ").time_unix_ms, 1725018189123);
  EXPECT_EQ(P("2024-08-30T11:43:09Z host kernel: ").time_unix_ms, 1725018189000);
  EXPECT_EQ(P("2024-08-30T13:43:09+0200 host kernel: ").time_unix_ms, 1725018189000);
  EXPECT_EQ(P("2024-08-30T06:43:09-05:00 host kernel: ").time_unix_ms, 1725018189000);
  EXPECT_EQ(P("2024-08-30T11:43:09,500000+00:00 ").time_unix_ms, 1725018189500);  // dmesg iso.
  EXPECT_EQ(P("2024-08-30 11:43:09 host kernel: ").time_unix_ms, 1725018189000);  // Local = UTC.
}

// journalctl -o short-unix: seconds since the epoch, with a fraction.
TEST(KmsgLinePrefix, EpochSeconds) {
  auto p = P("1725018189.250000 host kernel: ");
  EXPECT_EQ(p.time_unix_ms, 1725018189250);
  EXPECT_TRUE(p.from_kernel);
  EXPECT_EQ(P("1725018189.5 host kernel: ").time_unix_ms, 1725018189500);
  EXPECT_FALSE(P("1725018189.5 host sshd[42]: ").from_kernel);
  EXPECT_FALSE(P("1725018189 host kernel: ").time_unix_ms);    // No fraction: not a stamp.
  EXPECT_FALSE(P("12345.678901 host kernel: ").time_unix_ms);  // Not a plausible date.
}

TEST(KmsgLinePrefix, SyslogYearInference) {
  EXPECT_EQ(P("Aug 30 11:43:09 host kernel: ").time_unix_ms, 1725018189000);  // Read in 2025-06.
  // New Year: "Dec 31" read on 2025-01-02 is 2024; "Jan  1" read then is 2025.
  EXPECT_EQ(P("Dec 31 23:59:59 host kernel: ", 1735776000000).time_unix_ms, 1735689599000);
  EXPECT_EQ(P("Jan  1 00:00:00 host kernel: ", 1735776000000).time_unix_ms, 1735689600000);
  EXPECT_EQ(P("Aug 30 11:43:09.250 host kernel: ").time_unix_ms, 1725018189250);
  auto both = P("Aug 30 11:43:09 host kernel: [ 42.000001] ");
  EXPECT_EQ(both.time_unix_ms, 1725018189000);
  EXPECT_DOUBLE_EQ(*both.monotonic_s, 42.000001);
}

TEST(KmsgLinePrefix, KernelTagOnly) {
  EXPECT_TRUE(P("Aug 30 11:43:09 host kernel: ").from_kernel);
  EXPECT_FALSE(P("Aug 30 11:43:09 host gpud[123]: ").from_kernel);
  EXPECT_FALSE(P("2024-08-30T11:43:09+00:00 host python3: ").from_kernel);
  EXPECT_FALSE(P("[ 5.000000] host dockerd[1]: ").from_kernel);
  EXPECT_TRUE(P("kernel: ").from_kernel);
  EXPECT_TRUE(P("").from_kernel);
}

TEST(KmsgLinePrefix, KmsgAndLevels) {
  auto k = P("6,1000,123456789,-;", 0, 1'000'000);
  EXPECT_DOUBLE_EQ(*k.monotonic_s, 123.456789);
  EXPECT_EQ(k.time_unix_ms, 1'000'000 + 123456);
  EXPECT_EQ(ParseKmsgHeaderUsec("6,1000,123456789,-"), 123456789);
  EXPECT_EQ(ParseKmsgHeaderUsec("6,1000,123456789,c,more"), 123456789);
  EXPECT_FALSE(ParseKmsgHeaderUsec("6,1000"));
  EXPECT_FALSE(ParseKmsgHeaderUsec("a,b,c,-"));
  EXPECT_FALSE(ParseKmsgHeaderUsec("6,1000,12x,-"));
  EXPECT_DOUBLE_EQ(*P("<4>[ 12.500000] ").monotonic_s, 12.5);
  EXPECT_DOUBLE_EQ(*P("kern  :warn  : [   12.500000] ").monotonic_s, 12.5);  // dmesg -x.
}

// A header field may have 20 digits; one past int64_t's range overflowed while
// it was read (undefined behaviour, UBSan in the fuzz build:
// fuzz/corpus/nvrm/regression-kmsg-usec-20-digits). It is no header.
TEST(KmsgLinePrefix, AHeaderNumberPastInt64IsNoHeader) {
  EXPECT_EQ(ParseKmsgHeaderUsec("6,1,9223372036854775807,-"), INT64_MAX);
  EXPECT_FALSE(ParseKmsgHeaderUsec("6,1,9223372036854775808,-"));
  EXPECT_FALSE(ParseKmsgHeaderUsec("6,1,99999999999999999999,-"));
  EXPECT_FALSE(ParseKmsgHeaderUsec("6,99999999999999999999,1,-"));
  EXPECT_FALSE(P("6,1,99999999999999999999,-;", 0, 1'000'000).monotonic_s);
}

TEST(KmsgLinePrefix, GarbageHasNoTime) {
  for (std::string_view g : {"\x01\x02\xff", "[", "[ 12.", "2024-13-40T99:99:99 ", "Foo 1 ",
                             "Aug 99 11:43:09 h kernel: ", "[Fri Aug 30 11:43:09 24] "}) {
    const auto p = P(g);
    EXPECT_FALSE(p.time_unix_ms) << g;
  }
}

}  // namespace
}  // namespace gw::kmsg
