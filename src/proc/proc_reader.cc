#include "proc/proc_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include "os/errno_text.h"
#include "os/mounts.h"
#include "os/unique_fd.h"
#include "proc/device_files.h"
#include "proc/proc_parse.h"
#include "proc/users.h"

namespace gw::proc {
namespace {

// How ReadFileAt knows it has reached the end of a file.
enum class End {
  kZeroRead,   // Only a read that returns 0 (any file).
  kShortRead,  // Also a read that returns less than asked. True of regular files
               // (the fake trees), of /proc/PID/cmdline, and of the /proc files
               // the kernel prints as one record (stat, status, cgroup): they
               // fill the buffer until their data runs out. Not of
               // multi-record seq files such as maps, which stop at a page.
};

// Reads a whole file relative to dir_fd into *out, up to max_bytes (the rest
// is dropped). Returns 0 or an errno value.
int ReadFileAt(int dir_fd, const char* name, std::string* out, End end = End::kZeroRead,
               size_t max_bytes = 1 << 20) {
  out->clear();
  os::UniqueFd fd(openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return errno;
  size_t used = 0;
  out->resize(4096);
  for (;;) {
    if (used == out->size()) {
      if (out->size() >= max_bytes) break;
      out->resize(std::min(out->size() * 2, max_bytes));
    }
    ssize_t n = read(fd.get(), out->data() + used, out->size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      out->clear();
      return err;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    // Saves the read that would return 0: a fifth of a small file's cost.
    if (end == End::kShortRead && used < out->size()) break;
  }
  out->resize(used);
  return 0;
}

bool IsGoneErrno(int err) { return err == ENOENT || err == ESRCH; }

// A readlink/getdents-friendly PID parse: all digits, no overflow, > 0.
bool ParsePidName(const char* name, pid_t* pid) {
  if (*name < '0' || *name > '9' || std::strlen(name) > 10) return false;
  int64_t v = 0;
  for (const char* p = name; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
    if (v > 0x7fffffff) return false;
  }
  *pid = static_cast<pid_t>(v);
  return v > 0;
}

// Layout of a linux_dirent64 record as getdents64 writes it.
constexpr size_t kDirentReclenOffset = 16;
constexpr size_t kDirentNameOffset = 19;

// The largest record getdents64 writes: header, a 255-byte name, NUL, padding.
constexpr size_t kMaxDirentSize = 280;

// Calls fn(name) for every entry of the open directory dir_fd, using buf as
// the getdents64 buffer, until fn returns false. With short_read_is_end, a buffer that came back
// with room for another record ends the listing: procfs fills the buffer until it runs out of
// entries, so for /proc/PID/fd this skips the getdents64 call that would return 0. Returns 0 or an
// errno value.
template <typename Fn>
int ForEachDirent(int dir_fd, char* buf, size_t size, bool short_read_is_end, Fn&& fn) {
  for (;;) {
    ssize_t n = getdents64(dir_fd, buf, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    for (ssize_t off = 0; off < n;) {
      uint16_t reclen;
      std::memcpy(&reclen, buf + off + kDirentReclenOffset, sizeof reclen);
      if (!fn(buf + off + kDirentNameOffset)) return 0;
      off += reclen;
    }
    if (short_read_is_end && size - static_cast<size_t>(n) >= kMaxDirentSize) return 0;
  }
}

// Appends "<pid_name>/<leaf>" to buf (size >= 64). pid_name is at most 10
// digits (ParsePidName checked it).
void JoinPidPath(char* buf, const char* pid_name, const char* leaf) {
  size_t n = std::strlen(pid_name);
  std::memcpy(buf, pid_name, n);
  buf[n] = '/';
  std::strcpy(buf + n + 1, leaf);
}

// Adds to *out every path in a maps file that starts with `want`.
void MatchMaps(std::string_view maps, std::string_view want, std::vector<std::string>* out) {
  constexpr std::string_view kDeleted = " (deleted)";
  for (size_t pos = maps.find(want); pos != std::string_view::npos;
       pos = maps.find(want, pos + 1)) {
    // The path is the last field: it follows a space and runs to the newline.
    if (pos == 0 || maps[pos - 1] != ' ') continue;
    size_t end = maps.find('\n', pos);
    if (end == std::string_view::npos) end = maps.size();
    std::string_view path = maps.substr(pos, end - pos);
    if (path.ends_with(kDeleted)) path.remove_suffix(kDeleted.size());
    out->emplace_back(path);
    pos = end;
  }
}

}  // namespace

ProcReader::ProcReader(std::string proc_root)
    : proc_root_(std::move(proc_root)),
      page_size_(sysconf(_SC_PAGESIZE)),
      clock_ticks_(sysconf(_SC_CLK_TCK)) {}

std::optional<uint64_t> ProcReader::BootTimeS() {
  if (!boot_time_s_) {
    os::UniqueFd root(open(proc_root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::string text;
    if (root.get() >= 0 && ReadFileAt(root.get(), "stat", &text) == 0) {
      boot_time_s_ = ParseBootTime(text);
    }
  }
  return boot_time_s_;
}

std::optional<AncestorMemo::Stat> ProcReader::AncestorStat(pid_t pid, AncestorMemo& memo) {
  if (auto it = memo.stat_.find(pid); it != memo.stat_.end()) return it->second;
  // From stat rather than comm: the same file every fake tree has.
  std::optional<AncestorMemo::Stat> out;
  std::string text;
  const std::string path = proc_root_ + "/" + std::to_string(pid) + "/stat";
  if (ReadFileAt(AT_FDCWD, path.c_str(), &text, End::kShortRead) == 0) {
    if (Result<StatFields> stat = ParseStat(text); stat.ok()) {
      out = AncestorMemo::Stat{std::move(stat->comm), stat->ppid};
    }
  }
  memo.stat_.emplace(pid, out);
  return out;
}

std::optional<SlurmStepId> ProcReader::SlurmStepAncestor(pid_t pid, AncestorMemo& memo) {
  // A job's processes sit a few levels below their slurmstepd (the batch
  // script's shell, srun, a launcher); the bound only stops a cycle that a
  // PID reused mid-walk could make.
  constexpr int kMaxDepth = 64;
  std::vector<pid_t> walked;
  std::optional<SlurmStepId> found;
  for (int depth = 0; depth < kMaxDepth && pid > 1; ++depth) {
    if (auto it = memo.step_above_.find(pid); it != memo.step_above_.end()) {
      found = it->second;
      break;
    }
    walked.push_back(pid);
    const std::optional<AncestorMemo::Stat> stat = AncestorStat(pid, memo);
    if (!stat) break;
    if (stat->comm == "slurmstepd") {
      // A process may call itself anything; only root runs the real one.
      const std::string path = proc_root_ + "/" + std::to_string(pid);
      os::UniqueFd dir(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      std::string text;
      if (dir.get() >= 0 && ReadFileAt(dir.get(), "status", &text, End::kShortRead) == 0 &&
          ParseStatusUid(text) == uid_t{0} &&
          ReadFileAt(dir.get(), "cmdline", &text, End::kShortRead) == 0) {
        found = ParseSlurmstepdTitle(ParseCmdline(text));
      }
      break;
    }
    pid = stat->ppid;
  }
  for (pid_t p : walked) memo.step_above_.emplace(p, found);
  return found;
}

std::optional<std::string> ProcReader::UserName(uid_t uid) {
  auto it = user_names_.find(uid);
  if (it != user_names_.end()) return it->second;
  std::optional<std::string> name = LookupUserName(uid);
  user_names_.emplace(uid, name);
  return name;
}

Result<HostProcess> ProcReader::ReadProcess(pid_t pid, int64_t now_unix_ms, AncestorMemo* memo) {
  AncestorMemo own;  // Without the caller's: good for this process's walk only.
  AncestorMemo& ancestors = memo != nullptr ? *memo : own;
  if (pid <= 0) {
    return MakeError("invalid_argument", "process id " + std::to_string(pid) + " is not valid");
  }
  const std::string pid_dir = proc_root_ + "/" + std::to_string(pid);
  auto gone = [pid]() { return MakeError("not_found", "no process " + std::to_string(pid)); };
  HostProcess p;
  p.pid = pid;
  // Every read goes through this descriptor: if the PID is reused mid-read,
  // the reads fail instead of mixing two processes.
  os::UniqueFd dir(open(pid_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    if (IsGoneErrno(errno) || errno == ENOTDIR) return gone();
    p.readable = false;
    return p;
  }
  // A missing file means the process is gone only if stat went too (a kernel
  // may lack, say, cgroup support).
  auto still_there = [&dir]() { return faccessat(dir.get(), "stat", F_OK, 0) == 0; };

  std::string text;
  int err = ReadFileAt(dir.get(), "stat", &text, End::kShortRead);
  if (IsGoneErrno(err)) return gone();
  if (err != 0) {
    p.readable = false;
  } else {
    Result<StatFields> stat = ParseStat(text);
    if (!stat.ok()) {
      return MakeError("malformed", pid_dir + "/stat: " + stat.error().message);
    }
    p.comm = stat->comm;
    p.state = StateFromChar(stat->state);
    p.ppid = stat->ppid;
    p.pgid = stat->pgrp;
    p.sid = stat->session;
    p.start_ticks = stat->start_ticks;
    if (stat->ppid > 0) {
      if (std::optional<AncestorMemo::Stat> parent = AncestorStat(stat->ppid, ancestors)) {
        p.parent_comm = parent->comm;
      }
    }
    if (clock_ticks_ > 0) {
      const uint64_t ticks = static_cast<uint64_t>(clock_ticks_);
      p.cpu_time_ms = (stat->utime_ticks + stat->stime_ticks) * 1000 / ticks;
      if (std::optional<uint64_t> boot = BootTimeS()) {
        const int64_t start_ms =
            static_cast<int64_t>(*boot * 1000 + stat->start_ticks * 1000 / ticks);
        p.start_time_unix_ms = start_ms;
        // btime has whole-second precision, so a process started this second
        // can appear to start after now; its age is then 0, not negative.
        const int64_t age_ms = std::max<int64_t>(0, now_unix_ms - start_ms);
        p.age_s = static_cast<double>(age_ms) / 1000.0;
        if (age_ms > 0) {
          p.cpu_pct = 100.0 * static_cast<double>(*p.cpu_time_ms) / static_cast<double>(age_ms);
        }
      }
    }
    if (stat->rss_pages >= 0 && page_size_ > 0) {
      p.rss_bytes = static_cast<uint64_t>(stat->rss_pages) * static_cast<uint64_t>(page_size_);
    }
  }

  err = ReadFileAt(dir.get(), "status", &text, End::kShortRead);
  if (err == 0) {
    p.uid = ParseStatusUid(text);
    if (p.uid) p.user = UserName(*p.uid);
  } else if (err == ESRCH || (err == ENOENT && !still_there())) {
    return gone();
  } else if (err != ENOENT) {
    p.readable = false;
  }

  err = ReadFileAt(dir.get(), "cmdline", &text, End::kShortRead);
  if (err == 0) {
    p.cmdline = ParseCmdline(text);
  } else if (err == ESRCH || (err == ENOENT && !still_there())) {
    return gone();
  } else if (err != ENOENT) {
    p.readable = false;
  }

  char exe[4096];
  const ssize_t exe_len = readlinkat(dir.get(), "exe", exe, sizeof exe);
  if (exe_len > 0 && static_cast<size_t>(exe_len) < sizeof exe) {
    p.exe = std::string(exe, static_cast<size_t>(exe_len));
  }

  err = ReadFileAt(dir.get(), "cgroup", &text, End::kShortRead);
  if (err == 0) {
    p.owner = ParseCgroup(text);
  } else if (err == ESRCH || (err == ENOENT && !still_there())) {
    return gone();
  } else if (err != ENOENT) {
    p.readable = false;
  }
  if (!p.owner.slurm_job_id && p.ppid && *p.ppid > 1) {
    if (std::optional<SlurmStepId> step = SlurmStepAncestor(*p.ppid, ancestors)) {
      p.owner.slurm_job_id = std::move(step->job);
      p.owner.slurm_step = std::move(step->step);
    }
  }
  return p;
}

Result<StatFields> ProcReader::ReadStat(pid_t pid) const {
  const std::string path = proc_root_ + "/" + std::to_string(pid) + "/stat";
  if (pid <= 0) return MakeError("gone", "no process " + std::to_string(pid));
  std::string text;
  const int err = ReadFileAt(AT_FDCWD, path.c_str(), &text, End::kShortRead);
  if (IsGoneErrno(err) || err == ENOTDIR)
    return MakeError("gone", "no process " + std::to_string(pid));
  if (err != 0) return MakeError("io", path + ": " + os::ErrnoText(err));
  Result<StatFields> stat = ParseStat(text);
  if (!stat.ok()) return MakeError("io", path + ": " + stat.error().message);
  return stat;
}

HostInfo ProcReader::ReadHost() {
  HostInfo host;
  os::UniqueFd root(open(proc_root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return host;
  std::string text;
  if (ReadFileAt(root.get(), "sys/kernel/hostname", &text) == 0) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (!text.empty()) host.hostname = text;
  }
  if (ReadFileAt(root.get(), "stat", &text) == 0) {
    host.boot_time_unix_s = ParseBootTime(text);
    host.cpu_count = ParseCpuCount(text);
    if (!boot_time_s_) boot_time_s_ = host.boot_time_unix_s;
  }
  return host;
}

Result<std::vector<pid_t>> ProcReader::ListPids() {
  os::UniqueFd proc(open(proc_root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (proc.get() < 0) {
    return MakeError("unavailable", "cannot list " + proc_root_ + ": " + os::ErrnoText(errno));
  }
  constexpr size_t kDentsSize = 32 * 1024;
  std::unique_ptr<char[]> dents(new char[kDentsSize]);
  std::vector<pid_t> pids;
  const int err = ForEachDirent(proc.get(), dents.get(), kDentsSize, false, [&](const char* name) {
    pid_t pid;
    if (ParsePidName(name, &pid)) pids.push_back(pid);
    return true;
  });
  if (err != 0) {
    return MakeError("unavailable", "cannot list " + proc_root_ + ": " + os::ErrnoText(err));
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

Result<std::vector<LoadedModule>> ProcReader::ReadModules() const {
  std::string text;
  const std::string path = proc_root_ + "/modules";
  if (int err = ReadFileAt(AT_FDCWD, path.c_str(), &text); err != 0) {
    return MakeError("unavailable", path + ": " + os::ErrnoText(err));
  }
  return ParseModules(text);
}

bool ProcReader::ShowsEveryHostProcess(bool caller_is_root) const {
  // PROC_PID_INIT_INO: the initial PID namespace, the host's.
  constexpr std::string_view kHostPidNamespace = "pid:[4026531836]";
  char link[64];
  const ssize_t n = readlink((proc_root_ + "/self/ns/pid").c_str(), link, sizeof link);
  if (n <= 0 || std::string_view(link, static_cast<size_t>(n)) != kHostPidNamespace) return false;
  if (caller_is_root) return true;
  std::string mountinfo;
  if (ReadFileAt(AT_FDCWD, (proc_root_ + "/self/mountinfo").c_str(), &mountinfo) != 0) {
    return false;
  }
  Result<os::MountFacts> mount = os::FindMount(mountinfo, proc_root_);
  return mount.ok() && mount->fstype == "proc" && !mount->hides_pids;
}

Result<std::vector<std::string>> ProcReader::ListDriverGpus() {
  const std::string dir = proc_root_ + "/driver/nvidia/gpus";
  os::UniqueFd gpus(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (gpus.get() < 0) {
    return MakeError("unavailable", "cannot list " + dir + ": " + os::ErrnoText(errno));
  }
  constexpr size_t kDentsSize = 8 * 1024;
  std::unique_ptr<char[]> dents(new char[kDentsSize]);
  std::vector<std::string> out;
  const int err = ForEachDirent(gpus.get(), dents.get(), kDentsSize, false, [&](const char* name) {
    // "0000:3b:00.0": hex digits, ':' and '.', nothing else is a GPU entry.
    const std::string_view n(name);
    const bool pci = n.size() >= 7 && n.size() <= 16 &&
                     n.find_first_not_of("0123456789abcdefABCDEF:.") == std::string_view::npos &&
                     n.find(':') != std::string_view::npos;
    if (pci) out.emplace_back(n);
    return true;
  });
  if (err != 0) return MakeError("unavailable", "cannot list " + dir + ": " + os::ErrnoText(err));
  std::sort(out.begin(), out.end());
  return out;
}

Result<HolderMap> ProcReader::ScanDeviceHolders(const DeviceMatch& match, HolderScanStats* stats) {
  const std::string want = DeviceFilePrefix(match.dir, match.prefix);

  os::UniqueFd proc(open(proc_root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (proc.get() < 0) {
    return MakeError("unavailable", "cannot list " + proc_root_ + ": " + os::ErrnoText(errno));
  }
  HolderScanStats local;
  HolderMap holders;
  // Two getdents buffers (the proc root and one fd directory at a time) and
  // one readlink buffer, allocated once per scan.
  constexpr size_t kDentsSize = 32 * 1024;
  constexpr size_t kLinkSize = 4096;
  std::unique_ptr<char[]> bufs(new char[2 * kDentsSize + kLinkSize]);
  char* root_dents = bufs.get();
  char* fd_dents = root_dents + kDentsSize;
  char* link = fd_dents + kDentsSize;
  std::string maps;  // Reused across processes when include_maps.
  std::vector<std::string> found;

  int err = ForEachDirent(proc.get(), root_dents, kDentsSize, false, [&](const char* name) {
    pid_t pid;
    if (!ParsePidName(name, &pid)) return true;
    if (match.exclude_pid && *match.exclude_pid == pid) return true;
    if (std::binary_search(match.skip.begin(), match.skip.end(), pid)) return true;
    ++local.processes;
    found.clear();
    char path[64];
    JoinPidPath(path, name, "fd");
    os::UniqueFd fd_dir(openat(proc.get(), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd_dir.get() < 0) {
      if (IsGoneErrno(errno)) {
        ++local.vanished;
      } else {
        ++local.fd_denied;
        local.denied_pids.push_back(pid);
      }
      return true;
    }
    bool denied = false;
    int dir_err = ForEachDirent(fd_dir.get(), fd_dents, kDentsSize, true, [&](const char* fd_name) {
      if (*fd_name < '0' || *fd_name > '9') return true;
      ssize_t n = readlinkat(fd_dir.get(), fd_name, link, kLinkSize);
      if (n < 0 && (errno == EACCES || errno == EPERM)) {
        // The directory opened but its links are refused (a ptrace access
        // check): they all will be, so stop asking.
        denied = true;
        return false;
      }
      if (n < static_cast<ssize_t>(want.size())) return true;  // Also -1: closed meanwhile.
      if (std::memcmp(link, want.data(), want.size()) == 0) {
        found.emplace_back(link, static_cast<size_t>(n));
      }
      return true;
    });
    if (denied) {
      ++local.fd_denied;
      local.denied_pids.push_back(pid);
    }
    if (dir_err != 0 && found.empty()) {
      ++local.vanished;
      return true;
    }
    if (match.include_maps) {
      JoinPidPath(path, name, "maps");
      if (ReadFileAt(proc.get(), path, &maps, End::kZeroRead, 64 << 20) == 0)
        MatchMaps(maps, want, &found);
    }
    if (found.empty()) return true;
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    holders[pid] = std::move(found);
    found = {};
    return true;
  });
  std::sort(local.denied_pids.begin(), local.denied_pids.end());
  if (stats) *stats = std::move(local);
  if (err != 0) {
    return MakeError("unavailable", "cannot list " + proc_root_ + ": " + os::ErrnoText(err));
  }
  return holders;
}

}  // namespace gw::proc
