#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gw::config {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gw_config_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Write(const std::string& content, const std::string& name = "config.toml") {
    const std::string path = dir_ + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << content;
    EXPECT_TRUE(out.good()) << path;
    return path;
  }
  // Loads `content` and returns the error message ("" when it loaded).
  std::string LoadError(const std::string& content) {
    const Result<Config> config = LoadConfig(Write(content), true);
    if (config.ok()) return "";
    EXPECT_EQ(config.error().code, "bad_input");
    return config.error().message;
  }

  std::string dir_;
};

TEST_F(ConfigTest, ValidFile) {
  const std::string path = Write(R"(# gpuwarden settings
[clean]
protect = ["slurmd", "dcgm-exporter", "nvidia-persistenced"]
grace = "10s"
settle = "1m 30s"
audit_log = "/var/log/gpuwarden/audit.log"
)");
  const Result<Config> config = LoadConfig(path, false);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->found);
  EXPECT_EQ(config->path, path);
  EXPECT_EQ(config->clean.protect,
            (std::vector<std::string>{"slurmd", "dcgm-exporter", "nvidia-persistenced"}));
  EXPECT_EQ(config->clean.grace_s, 10.0);
  EXPECT_EQ(config->clean.settle_s, 90.0);
  EXPECT_EQ(config->clean.audit_log, "/var/log/gpuwarden/audit.log");
}

TEST_F(ConfigTest, PartialTableLeavesTheRestUnset) {
  const Result<Config> config = LoadConfig(Write("[clean]\ngrace = \"0s\"\n"), true);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->clean.grace_s, 0.0);
  EXPECT_FALSE(config->clean.settle_s);
  EXPECT_FALSE(config->clean.audit_log);
  EXPECT_TRUE(config->clean.protect.empty());
}

TEST_F(ConfigTest, PlacementTable) {
  const Result<Config> unset = LoadConfig(Write("[clean]\ngrace = \"1s\"\n"), true);
  ASSERT_TRUE(unset.ok()) << unset.error().message;
  EXPECT_FALSE(unset->placement.use_remap_pending);
  const Result<Config> off = LoadConfig(Write("[placement]\nuse_remap_pending = false\n"), true);
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->placement.use_remap_pending, false);
  const Result<Config> on = LoadConfig(Write("placement.use_remap_pending = true\n"), true);
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_EQ(on->placement.use_remap_pending, true);
}

TEST_F(ConfigTest, PlacementTableIsStrict) {
  EXPECT_THAT(LoadError("[placement]\nuse_remap_pending = \"yes\"\n"),
              HasSubstr(":2: [placement] use_remap_pending: expected true or false, got a string"));
  EXPECT_THAT(LoadError("[placement]\nuse_remap_pendng = true\n"),
              HasSubstr(":2: unknown key [placement] use_remap_pendng"));
  EXPECT_THAT(LoadError("[placement.remap]\nx = 1\n"),
              HasSubstr("unknown table [placement.remap]"));
  EXPECT_THAT(LoadError("placement = 1\n"),
              HasSubstr("[placement] must be a table, got an integer"));
}

TEST_F(ConfigTest, DottedAndInlineFormsAreTheSameTable) {
  const Result<Config> dotted = LoadConfig(Write("clean.grace = \"1d\"\n"), true);
  ASSERT_TRUE(dotted.ok()) << dotted.error().message;
  EXPECT_EQ(dotted->clean.grace_s, 86400.0);
  const Result<Config> inline_table =
      LoadConfig(Write("clean = { settle = \"2s\", protect = [] }\n"), true);
  ASSERT_TRUE(inline_table.ok()) << inline_table.error().message;
  EXPECT_EQ(inline_table->clean.settle_s, 2.0);
}

TEST_F(ConfigTest, EmptyFileIsFoundWithDefaults) {
  for (const std::string content : {"", "\n\n", "# only a comment\n", "[clean]\n"}) {
    const Result<Config> config = LoadConfig(Write(content), true);
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_TRUE(config->found) << content;
    EXPECT_TRUE(config->clean.protect.empty());
    EXPECT_FALSE(config->clean.grace_s);
    EXPECT_FALSE(config->clean.settle_s);
    EXPECT_FALSE(config->clean.audit_log);
  }
}

TEST_F(ConfigTest, MissingDefaultFileMeansDefaults) {
  const std::string path = dir_ + "/absent.toml";
  const Result<Config> config = LoadConfig(path, false);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_FALSE(config->found);
  EXPECT_EQ(config->path, path);
  EXPECT_TRUE(config->clean.protect.empty());
  EXPECT_FALSE(config->clean.grace_s);
}

TEST_F(ConfigTest, MissingExplicitFileIsAnError) {
  const std::string path = dir_ + "/absent.toml";
  const Result<Config> config = LoadConfig(path, true);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code, "bad_input");
  EXPECT_THAT(config.error().message, HasSubstr(path));
  EXPECT_THAT(config.error().message, HasSubstr("No such file or directory"));
}

TEST_F(ConfigTest, MissingParentIsMissingToo) {
  // /etc/gpuwarden itself absent: still "no config file".
  const Result<Config> config = LoadConfig(dir_ + "/no-such-dir/config.toml", false);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_FALSE(config->found);
}

TEST_F(ConfigTest, SyntaxErrorNamesFileAndLine) {
  const std::string path = Write("[clean]\ngrace = \"10s\"\nsettle = \n");
  const Result<Config> config = LoadConfig(path, false);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code, "bad_input");
  EXPECT_THAT(config.error().message, HasSubstr(path + ":3: "));
}

TEST_F(ConfigTest, DuplicateKeyIsASyntaxError) {
  EXPECT_THAT(LoadError("[clean]\ngrace = \"1s\"\ngrace = \"2s\"\n"), HasSubstr(":3: "));
}

TEST_F(ConfigTest, InvalidUtf8IsASyntaxError) {
  EXPECT_THAT(LoadError("[clean]\nprotect = [\"a\xff\"]\n"), HasSubstr(":2: "));
}

TEST_F(ConfigTest, UnknownTable) {
  const std::string path = Write("[clean]\ngrace = \"1s\"\n\n[qeue]\nmax = 3\n");
  const Result<Config> config = LoadConfig(path, true);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, path + ":4: unknown table [qeue]");
}

TEST_F(ConfigTest, UnknownNestedTable) {
  EXPECT_THAT(LoadError("[clean.extra]\nx = 1\n"), HasSubstr("unknown table [clean.extra]"));
}

TEST_F(ConfigTest, ArrayOfTablesIsUnknownOrWrong) {
  EXPECT_THAT(LoadError("[[queue]]\nx = 1\n"), HasSubstr("unknown table [queue]"));
  EXPECT_THAT(LoadError("[[clean]]\ngrace = \"1s\"\n"),
              HasSubstr("[clean] must be a table, got an array of tables"));
}

TEST_F(ConfigTest, UnknownKey) {
  const std::string path = Write("[clean]\ngrace = \"10s\"\ngraec = \"1s\"\n");
  const Result<Config> config = LoadConfig(path, true);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, path + ":3: unknown key [clean] graec");
}

TEST_F(ConfigTest, UnknownTopLevelKey) {
  EXPECT_THAT(LoadError("grace = \"10s\"\n"), HasSubstr(":1: unknown key grace"));
}

TEST_F(ConfigTest, HostileKeyIsSanitisedInTheMessage) {
  const std::string message = LoadError("[clean]\n\"gr\\u001b[2Jace\" = 1\n");
  EXPECT_THAT(message, HasSubstr("unknown key [clean] gr\\x1b[2Jace"));
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
}

TEST_F(ConfigTest, WrongTypes) {
  EXPECT_THAT(LoadError("clean = 3\n"), HasSubstr(":1: [clean] must be a table, got an integer"));
  EXPECT_THAT(LoadError("[clean]\ngrace = 10\n"),
              HasSubstr(":2: [clean] grace: expected a duration string such as \"10s\", got an "
                        "integer"));
  EXPECT_THAT(LoadError("[clean]\nsettle = true\n"),
              HasSubstr("[clean] settle: expected a duration string such as \"10s\", got a "
                        "boolean"));
  EXPECT_THAT(LoadError("[clean]\nprotect = \"slurmd\"\n"),
              HasSubstr(":2: [clean] protect: expected an array of process names"));
  EXPECT_THAT(LoadError("[clean]\nprotect = [\"slurmd\",\n  42]\n"),
              HasSubstr(":3: [clean] protect: entry 2 must be a process name string, got an "
                        "integer"));
  EXPECT_THAT(LoadError("[clean]\naudit_log = [\"/a\"]\n"),
              HasSubstr("[clean] audit_log: expected a path string, got an array"));
}

TEST_F(ConfigTest, BadDurations) {
  const std::string path = Write("[clean]\nprotect = []\ngrace = \"ten\"\n");
  const Result<Config> config = LoadConfig(path, true);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            path + ":3: [clean] grace: \"ten\" is not a duration (e.g. 10s, 5m)");

  EXPECT_THAT(LoadError("[clean]\nsettle = \"\"\n"),
              HasSubstr("[clean] settle: \"\" is not a duration"));
  EXPECT_THAT(LoadError("[clean]\nsettle = \"5 parsecs\"\n"),
              HasSubstr("[clean] settle: \"5 parsecs\" is not a duration"));
  EXPECT_THAT(LoadError("[clean]\ngrace = \"-5s\"\n"),
              HasSubstr(":2: [clean] grace: \"-5s\" is negative"));
  EXPECT_THAT(LoadError("[clean]\ngrace = \"1d 1s\"\n"),
              HasSubstr(":2: [clean] grace: \"1d 1s\" is longer than 1 day"));
  EXPECT_THAT(LoadError("[clean]\ngrace = \"2w\"\n"), HasSubstr("is longer than 1 day"));
  EXPECT_THAT(LoadError("[clean]\ngrace = \"1000000000000d\"\n"),
              HasSubstr("is longer than 1 day"));
  // The bounds themselves are allowed.
  EXPECT_EQ(LoadError("[clean]\ngrace = \"0\"\nsettle = \"24h\"\n"), "");
}

TEST_F(ConfigTest, BadProtectNames) {
  EXPECT_THAT(LoadError("[clean]\nprotect = [\"slurmd\", \"\"]\n"),
              HasSubstr(":2: [clean] protect: entry 2 \"\" is empty"));
  EXPECT_THAT(LoadError("[clean]\nprotect = [\"/usr/sbin/slurmd\"]\n"),
              HasSubstr("[clean] protect: entry 1 \"/usr/sbin/slurmd\" contains '/'"));
  EXPECT_THAT(LoadError("[clean]\nprotect = [\"a\\u0000b\"]\n"), HasSubstr("contains a NUL byte"));
  const std::string long_name(256, 'x');
  EXPECT_THAT(LoadError("[clean]\nprotect = [\"" + long_name + "\"]\n"),
              HasSubstr("is longer than 255 bytes"));
  EXPECT_EQ(LoadError("[clean]\nprotect = [\"" + std::string(255, 'x') + "\"]\n"), "");
}

TEST_F(ConfigTest, BadAuditLogPaths) {
  EXPECT_THAT(LoadError("[clean]\naudit_log = \"audit.log\"\n"),
              HasSubstr(":2: [clean] audit_log: \"audit.log\" is not an absolute path"));
  EXPECT_THAT(LoadError("[clean]\naudit_log = \"\"\n"), HasSubstr("is not an absolute path"));
}

TEST_F(ConfigTest, DirectoryIsAnError) {
  for (const bool explicit_path : {false, true}) {
    const Result<Config> config = LoadConfig(dir_, explicit_path);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().code, "bad_input");
    EXPECT_EQ(config.error().message, dir_ + ": is a directory, not a file");
  }
}

TEST_F(ConfigTest, FifoIsRefusedWithoutWaiting) {
  const std::string path = dir_ + "/fifo.toml";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  // Without O_NONBLOCK this would wait forever for a writer.
  const Result<Config> config = LoadConfig(path, false);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, path + ": is not a regular file");
}

TEST_F(ConfigTest, TooLargeFile) {
  const Result<Config> config = LoadConfig(Write(std::string((1 << 20) + 1, '#')), true);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("larger than 1 MiB"));
}

TEST_F(ConfigTest, UnreadableFile) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any file";
  const std::string path = Write("[clean]\n");
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  const Result<Config> config = LoadConfig(path, false);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code, "bad_input");
  EXPECT_THAT(config.error().message, HasSubstr(path + ": cannot open: Permission denied"));
}

TEST(DefaultConfigPath, EnvironmentOverrides) {
  const char* saved = std::getenv("GPUWARDEN_CONFIG");
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv("GPUWARDEN_CONFIG", "/tmp/gw-test.toml", 1);
  EXPECT_EQ(DefaultConfigPath(), "/tmp/gw-test.toml");
  setenv("GPUWARDEN_CONFIG", "", 1);
  EXPECT_EQ(DefaultConfigPath(), "/etc/gpuwarden/config.toml");
  unsetenv("GPUWARDEN_CONFIG");
  EXPECT_EQ(DefaultConfigPath(), "/etc/gpuwarden/config.toml");
  if (saved != nullptr) setenv("GPUWARDEN_CONFIG", saved_value.c_str(), 1);
}

}  // namespace
}  // namespace gw::config
