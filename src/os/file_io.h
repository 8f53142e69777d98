// Whole-file reads with a size bound, and writes that a reader sees complete
// or not at all: the one home of these idioms (the queue's run records, its
// store's neighbours, the audit log, configuration files).
#ifndef GPUWARDEN_OS_FILE_IO_H_
#define GPUWARDEN_OS_FILE_IO_H_

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gw::os {

// write(2) until all of `data` is written, retrying EINTR. false with errno
// set on failure (a short write that makes no progress is EIO).
bool WriteAll(int fd, std::string_view data);

// read(2) once, retrying EINTR: bytes read, 0 at end of file, -1 with errno set.
ssize_t ReadSome(int fd, void* buf, size_t n);

struct ReadOptions {
  bool follow_symlinks = true;  // false: a symlink is refused (ELOOP, code "io").
  // true: anything but a regular file (a FIFO, a device, a socket) is refused
  // with "PATH: is not a regular file", without waiting for a FIFO's writer.
  // false: pipes and devices are read to their end (still bounded).
  bool regular_only = false;
};

// Reads the whole file at `path`. A file larger than `max_bytes` (also one
// that grows past it while it is read) is an error, never a silently cut
// text; a regular file whose size is already over it is refused unread. A
// directory is always refused. Errors, each message "PATH: PROBLEM":
//   "not_found"  it does not exist (ENOENT, ENOTDIR): "PATH: cannot open: ..."
//   "too_large"  "PATH: larger than N bytes"
//   "io"         anything else: "PATH: cannot open|stat|read: <errno text>",
//                "PATH: is a directory, not a file", "PATH: is not a regular file".
Result<std::string> ReadFileBounded(const std::string& path, size_t max_bytes,
                                    ReadOptions options = {});

// fsync(2) of a directory, so that a rename or link in it survives a crash of
// the machine. Error "io".
Status FsyncDir(const std::string& dir);

// Whether a file must survive a crash of the machine (fsync of the file and
// its directory), or only a crash of the writing process.
enum class Sync { kDurable, kProcessCrashOnly };

// Replaces dir/name with `content`: written to a temporary file in `dir`
// (".NAME.tmp.PID.N", mode `mode`), fsync'd (kDurable), renamed over dir/name,
// the directory fsync'd (kDurable). A reader sees the old file or the new one,
// never a part; a writer that dies before the rename leaves dir/name as it was
// (and its temporary file behind). Errors: "io" naming the file and errno's
// text; the temporary file is removed on every error.
Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view content,
                       Sync sync = Sync::kDurable, unsigned mode = 0600);

// Creates dir/name with `content` unless it exists, by link(2) of a complete
// temporary file: exactly one of several concurrent creators wins, and the
// file is complete whenever it is visible. true = this call created it; false
// = it existed. Error "io".
Result<bool> CreateFileOnce(const std::string& dir, const std::string& name,
                            std::string_view content, unsigned mode = 0600);

}  // namespace gw::os

#endif  // GPUWARDEN_OS_FILE_IO_H_
