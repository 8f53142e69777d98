#include "os/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "os/errno_text.h"
#include "os/unique_fd.h"

namespace gw::os {
namespace {

Error IoError(const std::string& what, int err) {
  return MakeError("io", what + ": " + ErrnoText(err));
}

// Writes `content` to a temporary file beside `name`; the caller renames or
// links it into place. Temporary names carry the writer's PID and a serial
// number, so concurrent writers (two claimants, two threads) never share one.
Result<std::string> WriteTemp(const std::string& dir, const std::string& name,
                              std::string_view content, Sync sync, unsigned mode) {
  static std::atomic<uint64_t> serial{0};
  std::string tmp = dir + "/." + name + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(serial.fetch_add(1, std::memory_order_relaxed));
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                   static_cast<mode_t>(mode)));
  if (!fd.valid()) return IoError(tmp, errno);
  if (!WriteAll(fd.get(), content) || (sync == Sync::kDurable && fsync(fd.get()) != 0)) {
    const int err = errno;
    unlink(tmp.c_str());
    return IoError(tmp, err);
  }
  if (close(fd.Release()) != 0) {  // NFS and some FUSE report write errors here.
    const int err = errno;
    unlink(tmp.c_str());
    return IoError(tmp, err);
  }
  return tmp;
}

}  // namespace

ssize_t ReadSome(int fd, void* buf, size_t n) {
  for (;;) {
    const ssize_t r = read(fd, buf, n);
    if (r >= 0 || errno != EINTR) return r;
  }
}

bool WriteAll(int fd, std::string_view data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

Result<std::string> ReadFileBounded(const std::string& path, size_t max_bytes,
                                    ReadOptions options) {
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
  if (!options.follow_symlinks) flags |= O_NOFOLLOW;
  // A FIFO without a writer would block open(); refused below anyway.
  if (options.regular_only) flags |= O_NONBLOCK;
  UniqueFd fd(open(path.c_str(), flags));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return MakeError("not_found", path + ": cannot open: " + ErrnoText(err));
    }
    return MakeError("io", path + ": cannot open: " + ErrnoText(err));
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0)
    return MakeError("io", path + ": cannot stat: " + ErrnoText(errno));
  if (S_ISDIR(st.st_mode)) return MakeError("io", path + ": is a directory, not a file");
  if (options.regular_only && !S_ISREG(st.st_mode)) {
    return MakeError("io", path + ": is not a regular file");
  }
  auto too_large = [&] {
    return MakeError("too_large", path + ": larger than " + std::to_string(max_bytes) + " bytes");
  };
  // A regular file's size refuses it before any byte is read (a sparse
  // file can claim terabytes); the loop still checks, because the size
  // is only what it was at fstat, and pipes and /proc files report none.
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) return too_large();
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MakeError("io", path + ": cannot read: " + ErrnoText(errno));
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) return too_large();
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

Status FsyncDir(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || fsync(fd.get()) != 0) return IoError("fsync " + dir, errno);
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view content,
                       Sync sync, unsigned mode) {
  Result<std::string> tmp = WriteTemp(dir, name, content, sync, mode);
  if (!tmp.ok()) return tmp.error();
  const std::string path = dir + "/" + name;
  if (rename(tmp->c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp->c_str());
    return IoError("rename to " + path, err);
  }
  return sync == Sync::kDurable ? FsyncDir(dir) : Status::Ok();
}

Result<bool> CreateFileOnce(const std::string& dir, const std::string& name,
                            std::string_view content, unsigned mode) {
  Result<std::string> tmp = WriteTemp(dir, name, content, Sync::kDurable, mode);
  if (!tmp.ok()) return tmp.error();
  const std::string path = dir + "/" + name;
  const int rc = link(tmp->c_str(), path.c_str());
  const int err = errno;
  unlink(tmp->c_str());
  if (rc != 0 && err == EEXIST) return false;
  if (rc != 0) return IoError("link " + path, err);
  Status synced = FsyncDir(dir);
  if (!synced.ok()) return synced.error();
  return true;
}

}  // namespace gw::os
