#include "os/errno_text.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

namespace gw::os {
namespace {

TEST(ErrnoText, IsTheCLibrarysText) {
  EXPECT_EQ(ErrnoText(ENOSPC), "No space left on device");
  EXPECT_EQ(ErrnoText(ENOENT), "No such file or directory");
  EXPECT_EQ(ErrnoText(EACCES), "Permission denied");
}

TEST(ErrnoText, AnUnknownNumberStillGivesWordsWithTheNumber) {
  const std::string text = ErrnoText(99999);
  EXPECT_NE(text.find("99999"), std::string::npos) << text;
}

TEST(ErrnoText, ThreadsGetTheirOwnText) {
  // strerror may share one buffer between threads; ErrnoText must not.
  std::vector<std::thread> threads;
  std::vector<int> wrong(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &wrong] {
      const int err = t % 2 == 0 ? ENOSPC : 99990 + t;
      const std::string want = t % 2 == 0 ? "No space left on device" : std::to_string(99990 + t);
      for (int i = 0; i < 2000; ++i) {
        if (ErrnoText(err).find(want) == std::string::npos) ++wrong[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int w : wrong) EXPECT_EQ(w, 0);
}

}  // namespace
}  // namespace gw::os
