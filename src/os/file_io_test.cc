// The bounded read and the atomic writes against real files, with real
// processes killed in the middle of a write.
#include "os/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "os/os_test_util.h"
#include "os/unique_fd.h"

namespace gw::os {
namespace {

using testing::Slurp;
using testing::Spit;
using testing::TempDir;

// Names in `dir` other than `keep`.
std::vector<std::string> Others(const std::string& dir, const std::string& keep) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() != keep) out.push_back(e.path().filename().string());
  }
  return out;
}

// --- ReadFileBounded -------------------------------------------------------

TEST(ReadFileBounded, ReadsAWholeFileUpToAndIncludingTheBound) {
  TempDir dir;
  const std::string path = dir.Path("f");
  const std::string content(100000, 'x');
  Spit(path, content);
  Result<std::string> exact = ReadFileBounded(path, content.size());
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_EQ(*exact, content);
  Result<std::string> over = ReadFileBounded(path, content.size() - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "too_large");
  EXPECT_EQ(over.error().message, path + ": larger than 99999 bytes");
}

TEST(ReadFileBounded, MissingFileIsNotFound) {
  TempDir dir;
  Spit(dir.Path("plain"), "x");
  for (const std::string& path : {dir.Path("absent"), dir.Path("plain/below")}) {
    Result<std::string> r = ReadFileBounded(path, 10);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.error().code, "not_found") << path;
    EXPECT_EQ(r.error().message.rfind(path + ": cannot open: ", 0), 0u) << r.error().message;
  }
}

TEST(ReadFileBounded, ADirectoryIsRefused) {
  TempDir dir;
  Result<std::string> r = ReadFileBounded(dir.path(), 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "io");
  EXPECT_EQ(r.error().message, dir.path() + ": is a directory, not a file");
}

TEST(ReadFileBounded, ASymlinkIsRefusedWhenAskedNotToFollow) {
  TempDir dir;
  Spit(dir.Path("target"), "secret");
  ASSERT_EQ(symlink(dir.Path("target").c_str(), dir.Path("link").c_str()), 0);
  EXPECT_EQ(*ReadFileBounded(dir.Path("link"), 10), "secret");
  Result<std::string> r = ReadFileBounded(dir.Path("link"), 10, {.follow_symlinks = false});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "io");
}

TEST(ReadFileBounded, ASparseFileOverTheBoundIsRefusedUnread) {
  TempDir dir;
  const std::string path = dir.Path("sparse");
  Spit(path, "");
  ASSERT_EQ(truncate(path.c_str(), off_t{1} << 40), 0);  // 1 TiB of holes.
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> r = ReadFileBounded(path, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "too_large");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ReadFileBounded, RegularOnlyRefusesAFifoWithoutWaitingForAWriter) {
  TempDir dir;
  const std::string path = dir.Path("fifo");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  Result<std::string> r = ReadFileBounded(path, 10, {.regular_only = true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "io");
  EXPECT_EQ(r.error().message, path + ": is not a regular file");
}

TEST(ReadFileBounded, AStreamPastTheBoundIsTooLarge) {
  // /dev/zero has no size: only the bound ends the read.
  Result<std::string> r = ReadFileBounded("/dev/zero", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "too_large");
}

TEST(ReadFileBounded, APipeThatGrowsPastTheBoundWhileReadIsTooLargeNotCut) {
  // The writer sends a first part, waits until the reader has surely read
  // it, then sends the rest: the bound is passed only while reading.
  for (const size_t bound : {size_t{150000}, size_t{300000}}) {
    TempDir dir;
    const std::string path = dir.Path("fifo");
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    const std::string part(100000, 'p');
    signal(SIGPIPE, SIG_IGN);
    std::thread writer([&] {
      UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
      ASSERT_TRUE(fd.valid());
      ASSERT_TRUE(WriteAll(fd.get(), part));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      WriteAll(fd.get(), part);  // May fail with EPIPE once the reader gave up.
    });
    Result<std::string> r = ReadFileBounded(path, bound);
    writer.join();
    if (bound < 2 * part.size()) {
      ASSERT_FALSE(r.ok()) << "a cut text of " << r->size() << " bytes";
      EXPECT_EQ(r.error().code, "too_large");
    } else {
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(*r, part + part);
    }
  }
}

TEST(ReadFileBounded, AFileGrowingWhileReadIsAlwaysAPrefixWithinTheBoundOrTooLarge) {
  // A writer appends a known stream past the bound while reads run: every
  // read is the stream's first N bytes with N within the bound, or
  // "too_large"; once the file is past the bound, only "too_large".
  TempDir dir;
  const std::string path = dir.Path("growing");
  constexpr size_t kBound = 1 << 20;
  constexpr size_t kTotal = 3 << 20;
  std::string stream(kTotal, '\0');
  for (size_t i = 0; i < kTotal; ++i) stream[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  Spit(path, stream.substr(0, 4096));
  std::atomic<bool> done{false};
  bool written = true;
  std::thread writer([&] {
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    for (size_t off = 4096; off < kTotal && written; off += 4096) {
      written = WriteAll(fd.get(), std::string_view(stream).substr(off, 4096));
      if (off % (64 << 10) == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    done = true;
  });
  int reads = 0;
  std::string wrong;  // The first wrong answer; the writer is joined before failing.
  while (!done && wrong.empty()) {
    Result<std::string> r = ReadFileBounded(path, kBound);
    ++reads;
    if (r.ok() && r->size() > kBound) wrong = "over the bound: " + std::to_string(r->size());
    if (r.ok() && *r != stream.substr(0, r->size())) wrong = "not a prefix of the stream";
    if (!r.ok() && r.error().code != "too_large") wrong = r.error().message;
  }
  writer.join();
  ASSERT_EQ(wrong, "") << "read " << reads;
  ASSERT_TRUE(written);
  EXPECT_GT(reads, 0);
  Result<std::string> last = ReadFileBounded(path, kBound);
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.error().code, "too_large");
  EXPECT_EQ(*ReadFileBounded(path, kTotal), stream);
}

// --- WriteFileAtomic -------------------------------------------------------

TEST(WriteFileAtomic, ReplacesTheFileAndLeavesNothingElse) {
  TempDir dir;
  Spit(dir.Path("rec"), "old");
  for (Sync sync : {Sync::kDurable, Sync::kProcessCrashOnly}) {
    ASSERT_TRUE(WriteFileAtomic(dir.path(), "rec", "new contents", sync, 0640).ok());
    EXPECT_EQ(Slurp(dir.Path("rec")), "new contents");
    EXPECT_TRUE(Others(dir.path(), "rec").empty());
  }
  struct stat st {};
  ASSERT_EQ(stat(dir.Path("rec").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777 & ~0640u, 0u);  // At most the mode asked (the umask may narrow it).
}

TEST(WriteFileAtomic, AFailureNamesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  ASSERT_TRUE(
      std::filesystem::create_directory(dir.Path("rec")));  // rename onto a directory fails.
  Status s = WriteFileAtomic(dir.path(), "rec", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "io");
  EXPECT_NE(s.error().message.find(dir.Path("rec")), std::string::npos) << s.error().message;
  EXPECT_TRUE(Others(dir.path(), "rec").empty());
  Status missing = WriteFileAtomic(dir.Path("no-such-dir"), "rec", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "io");
}

TEST(WriteFileAtomic, AWriterKilledBeforeItsRenameLeavesTheOldFileWhole) {
  // The child may write only 4 KiB to any file (RLIMIT_FSIZE): the kernel
  // kills it with SIGXFSZ in the middle of writing the temporary file, that
  // is, before the rename, as surely as a crash would.
  TempDir dir;
  const std::string old_content = "the old record, complete\n";
  Spit(dir.Path("rec"), old_content);
  const std::string big(1 << 20, 'n');
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    const rlimit fsize{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &fsize);
    (void)WriteFileAtomic(dir.path(), "rec", big);
    _exit(0);  // Not reached: the write is over the limit.
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGXFSZ);
  EXPECT_EQ(Slurp(dir.Path("rec")), old_content);
  // The interrupted temporary file is what the contract says is left behind:
  // proof that the child died between starting the write and the rename.
  const std::vector<std::string> left = Others(dir.path(), "rec");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].rfind(".rec.tmp." + std::to_string(pid) + ".", 0), 0u) << left[0];
  EXPECT_EQ(std::filesystem::file_size(dir.Path(left[0])), 4096u);
  // A later writer is not disturbed by the leftover.
  ASSERT_TRUE(WriteFileAtomic(dir.path(), "rec", "after").ok());
  EXPECT_EQ(Slurp(dir.Path("rec")), "after");
}

TEST(WriteFileAtomic, AWriterSigkilledAtRandomTimesLeavesAWholeOldOrNewFile) {
  TempDir dir;
  constexpr size_t kSize = 512 << 10;
  const std::string a(kSize, 'a');
  const std::string b(kSize, 'b');
  Spit(dir.Path("rec"), a);
  std::mt19937 rng(20);
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0;; ++i) (void)WriteFileAtomic(dir.path(), "rec", i % 2 == 0 ? b : a);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    const std::string now = Slurp(dir.Path("rec"));
    ASSERT_TRUE(now == a || now == b) << "round " << round << ": " << now.size() << " bytes";
  }
}

// --- CreateFileOnce --------------------------------------------------------

TEST(CreateFileOnce, ExactlyOneOfManyConcurrentCreatorsWins) {
  TempDir dir;
  constexpr int kCreators = 8;
  std::vector<pid_t> pids;
  for (int i = 0; i < kCreators; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Result<bool> created =
          CreateFileOnce(dir.path(), "claim", "creator " + std::to_string(i) + "\n");
      _exit(!created.ok() ? 2 : *created ? 0 : 1);
    }
    pids.push_back(pid);
  }
  int winners = 0;
  int winner = -1;
  for (int i = 0; i < kCreators; ++i) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[static_cast<size_t>(i)], &status, 0), pids[static_cast<size_t>(i)]);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_NE(WEXITSTATUS(status), 2);
    if (WEXITSTATUS(status) == 0) {
      ++winners;
      winner = i;
    }
  }
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(Slurp(dir.Path("claim")), "creator " + std::to_string(winner) + "\n");
  EXPECT_TRUE(Others(dir.path(), "claim").empty());
  Result<bool> again = CreateFileOnce(dir.path(), "claim", "late");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(Slurp(dir.Path("claim")), "creator " + std::to_string(winner) + "\n");
}

TEST(FsyncDir, AMissingDirectoryIsAnIoError) {
  TempDir dir;
  EXPECT_TRUE(FsyncDir(dir.path()).ok());
  Status s = FsyncDir(dir.Path("absent"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "io");
  EXPECT_NE(s.error().message.find(dir.Path("absent")), std::string::npos);
}

}  // namespace
}  // namespace gw::os
