// The conventions' validators (cli_options.h) on their own.
#include "cli/cli_options.h"

#include <gtest/gtest.h>

#include <string>

namespace gw::cli {
namespace {

// The validator's answer: "" and the value it leaves, or its error.
std::pair<std::string, std::string> Apply(const CLI::Validator& v, std::string value) {
  const std::string error = v(value);
  return {error, value};
}

TEST(CliOptions, SecondsTakesEveryFormOfADurationAndGivesSeconds) {
  const CLI::Validator v = Seconds(0, 86400);
  EXPECT_EQ(Apply(v, "90"), std::make_pair(std::string(), std::string("90")));
  EXPECT_EQ(Apply(v, "90s").second, "90");
  EXPECT_EQ(Apply(v, "5m").second, "300");
  EXPECT_EQ(Apply(v, "2h").second, "7200");
  EXPECT_EQ(Apply(v, "1d").second, "86400");
  EXPECT_EQ(Apply(v, "1h30m").second, "5400");
  EXPECT_EQ(Apply(v, "0.5").second, "0.5");
  EXPECT_EQ(Apply(v, "abc").first, "\"abc\" is not a duration: 30s, 5m, 2h, 1d or plain seconds");
  EXPECT_EQ(Apply(v, "2d").first, "\"2d\" is out of range: 0s to 1d");
  EXPECT_EQ(Apply(Seconds(0.05, 600), "0.01").first, "\"0.01\" is out of range: 0.05s to 10m");
}

TEST(CliOptions, OneOfNamesTheWordsAndLowersTheCase) {
  const CLI::Validator v = OneOf({"auto", "always", "never"});
  EXPECT_EQ(Apply(v, "NEVER"), std::make_pair(std::string(), std::string("never")));
  EXPECT_EQ(Apply(v, "purple").first, "\"purple\" is not one of auto, always or never");
  EXPECT_EQ(Apply(OneOf({"stop", "warn"}), "x").first, "\"x\" is not one of stop or warn");
}

TEST(CliOptions, BytesTakesEverySizeAndKeepsTheText) {
  for (const char* good : {"512M", "20G", "1.5T", "1048576", "20GiB"}) {
    EXPECT_EQ(Apply(Bytes(), good), std::make_pair(std::string(), std::string(good))) << good;
  }
  for (const char* bad : {"20x", "lots", "", "-1G"}) {
    EXPECT_EQ(Apply(Bytes(), bad).first,
              "\"" + std::string(bad) + "\" is not a size: 512M, 20G, 1.5T or plain bytes")
        << bad;
  }
}

TEST(CliOptions, SinceTakesEveryDurationAndKeepsTheText) {
  EXPECT_EQ(Apply(Since(), "2h"), std::make_pair(std::string(), std::string("2h")));
  EXPECT_EQ(Apply(Since(), "3600").first, "");
  EXPECT_NE(Apply(Since(), "yesterday").first.find("is not a duration"), std::string::npos);
}

TEST(CliOptions, ProcessIdsAreWholeNumbersAboveZero) {
  for (const char* good : {"1", "4194304", "2147483647"}) {
    EXPECT_EQ(Apply(ProcessId(), good).first, "") << good;
  }
  for (const char* bad : {"", "0", "-5", "abc", "12x", "2147483648", "99999999999"}) {
    EXPECT_NE(Apply(ProcessId(), bad).first.find("is not a process id"), std::string::npos) << bad;
  }
}

TEST(CliOptions, NearestCommand) {
  const std::vector<std::string> commands = {"status", "why", "health", "clean", "kill",
                                             "watch",  "run", "queue",  "jobs"};
  EXPECT_EQ(NearestCommand("stauts", commands), "status");
  EXPECT_EQ(NearestCommand("clen", commands), "clean");
  EXPECT_EQ(NearestCommand("wath", commands), "watch");
  EXPECT_EQ(NearestCommand("que", commands), "queue") << "a beginning";
  EXPECT_EQ(NearestCommand("frobnicate", commands), "");
  EXPECT_EQ(NearestCommand("x", commands), "") << "one letter begins nothing on its own";
}

}  // namespace
}  // namespace gw::cli
