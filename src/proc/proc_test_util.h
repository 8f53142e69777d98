// Test helpers for gw_proc: a temporary directory tree that removes itself.
#ifndef GPUWARDEN_PROC_PROC_TEST_UTIL_H_
#define GPUWARDEN_PROC_PROC_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace gw::proc::testing {

class TempTree {
 public:
  TempTree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gw_proc_XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    root_ = tmpl;
    // World-readable, so tests that drop privileges can still walk it.
    chmod(root_.c_str(), 0755);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  const std::string& root() const { return root_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }

  void Mkdir(const std::string& rel) const { std::filesystem::create_directories(Path(rel)); }
  // Writes `content` to rel, creating parent directories.
  void Write(const std::string& rel, const std::string& content) const {
    std::filesystem::path p = Path(rel);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out << content;
    ASSERT_TRUE(out.good()) << p;
  }
  void Symlink(const std::string& rel, const std::string& target) const {
    std::filesystem::path p = Path(rel);
    std::filesystem::create_directories(p.parent_path());
    ASSERT_EQ(symlink(target.c_str(), p.c_str()), 0) << p;
  }

 private:
  std::string root_;
};

// The user name of `uid` as the C library reads it: the tests' own oracle for
// the owner that gw_proc reports.
inline std::optional<std::string> PasswdName(uid_t uid) {
  passwd* pw = getpwuid(uid);
  if (pw == nullptr) return std::nullopt;
  return std::string(pw->pw_name);
}

}  // namespace gw::proc::testing

#endif  // GPUWARDEN_PROC_PROC_TEST_UTIL_H_
