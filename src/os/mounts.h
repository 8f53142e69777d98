// Which mount a path lives on, from the kernel's mountinfo table: for naming
// the cause when writes fail (a filesystem the kernel turned read-only after
// an error answers writes to open files with EIO, and statvfs does not say
// so on every kernel; mountinfo's options do).
#ifndef GPUWARDEN_OS_MOUNTS_H_
#define GPUWARDEN_OS_MOUNTS_H_

#include <string>
#include <string_view>

#include "core/result.h"

namespace gw::os {

struct MountFacts {
  std::string mount_point;  // Unescaped ("\040" -> " ").
  std::string fstype;       // "ext4"
  std::string source;       // "/dev/sda1"
  // Mounted read-only, or turned read-only by the filesystem itself: the
  // mount's or the superblock's options hold "ro" or "emergency_ro".
  bool read_only = false;
  // A proc mount that leaves other users' processes out of its listing
  // (hidepid=invisible or ptraceable, 2 or 4): their PIDs are missing from
  // it while they run.
  bool hides_pids = false;
};

// The mount of `path` in a mountinfo text (proc_pid_mountinfo(5) format):
// the last-listed entry whose mount point is `path` or a directory above it
// (later mounts hide earlier ones). `path` must be absolute and normalised
// (no "..", no symlinks to resolve). Error "not_found" when none matches,
// "malformed" naming the line that cannot be parsed.
Result<MountFacts> FindMount(std::string_view mountinfo, std::string_view path);

// FindMount over `mountinfo_path` (default this process's table) for the
// realpath of `path`. Errors as FindMount, and "io" when either cannot be read.
Result<MountFacts> MountOf(const std::string& path,
                           const std::string& mountinfo_path = "/proc/self/mountinfo");

}  // namespace gw::os

#endif  // GPUWARDEN_OS_MOUNTS_H_
