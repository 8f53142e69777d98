// Pure parsers for the text files of /proc. They take the file's bytes and
// never touch the file system, so every odd shape the kernel (or a hostile
// process name) can produce is tested without a live process.
#ifndef GPUWARDEN_PROC_PROC_PARSE_H_
#define GPUWARDEN_PROC_PROC_PARSE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"

namespace gw::proc {

// The fields of /proc/PID/stat that gpuwarden uses (proc(5) numbering in
// brackets). Times are in clock ticks (sysconf(_SC_CLK_TCK)), rss in pages.
struct StatFields {
  pid_t pid = 0;             // (1)
  std::string comm;          // (2) Raw bytes between the first '(' and the last ')'.
  char state = '?';          // (3)
  pid_t ppid = 0;            // (4)
  pid_t pgrp = 0;            // (5)
  pid_t session = 0;         // (6)
  int tty_nr = 0;            // (7)
  uint64_t utime_ticks = 0;  // (14)
  uint64_t stime_ticks = 0;  // (15)
  int64_t num_threads = 0;   // (20)
  uint64_t start_ticks = 0;  // (22) Since boot.
  uint64_t vsize_bytes = 0;  // (23)
  int64_t rss_pages = 0;     // (24)
};

// Parses the whole content of /proc/PID/stat. comm may hold any byte except
// NUL (spaces, '(', ')', newlines), so the fields after it are located from the
// LAST ')' in the text. Error code "malformed" when a field up to (24) is
// missing or not a number.
Result<StatFields> ParseStat(std::string_view stat_file);

// Maps a stat state letter to ProcessState: R S D Z T t I X (and 'x', 'K',
// 'W', 'P' as older kernels print them); anything else is kOther.
ProcessState StateFromChar(char state);

// The real uid from the "Uid:" line of /proc/PID/status (first of its four
// numbers). nullopt when the line is absent or malformed.
std::optional<uid_t> ParseStatusUid(std::string_view status_file);

// Splits /proc/PID/cmdline (argv joined by NUL) into arguments. Trailing empty
// pieces are dropped: they are the final terminator or the NUL padding left
// by programs that rewrite their title. Empty input (kernel thread, zombie)
// gives an empty vector. Text without any NUL (a rewritten title) is one
// argument.
std::vector<std::string> ParseCmdline(std::string_view cmdline_file);

// Who owns a process, from /proc/PID/cgroup (cgroup v2 "0::/path", v1
// "N:controllers:/path", or hybrid). Of all the lines it prefers, in order, one
// whose path names a container or a Slurm job, then one that names a systemd
// unit, then any path other than "/"; ties go to the v2 line, then the pids,
// memory and cpu controllers, then name=systemd, then file order. The owner is
// read from that one path, which is returned in cgroup_path:
//   docker      /docker/<64 hex>, docker-<id>.scope
//   containerd  cri-containerd-<id>.scope, nerdctl-<id>.scope
//   podman      libpod-<id>.scope, libpod-conmon-<id>.scope (podman's monitor)
//   lxc         /lxc/<name>, lxc.payload.<name>, lxc.monitor.<name>
//   kubernetes  any container form under a kubepods component, including the
//               bare /kubepods/<qos>/pod<uid>/<64 hex>
//   cri-o       crio-<id>.scope (outside kubepods)
// A bare 64-hex component elsewhere is taken as a container id with an
// unknown runtime. Nested containers: the innermost wins. Slurm: the first
// job_<n> component below a component that starts with "slurm", and the
// step_<name> component after it ("0", "batch", "extern"). systemd_unit
// is the innermost component ending in ".service" or ".scope". Empty input or
// no lines gives an empty owner (cgroup_path nullopt).
ProcessOwner ParseCgroup(std::string_view cgroup_file);

// The step a slurmstepd serves, from its process title: slurmstepd rewrites
// its argv to "slurmstepd: [<job>.<step>]" ("slurmstepd: [15.batch]",
// "[15.0]", "[15.extern]"). The job is digits, the step digits or a word;
// anything else is nullopt. Trust it only from a root-owned process: any
// process can give itself this title.
struct SlurmStepId {
  std::string job;
  std::string step;
};
std::optional<SlurmStepId> ParseSlurmstepdTitle(const std::vector<std::string>& argv);

// The "btime" (boot time, unix seconds) line of /proc/stat.
std::optional<uint64_t> ParseBootTime(std::string_view proc_stat_file);

// Number of "cpuN" lines in /proc/stat (online CPUs); nullopt when none.
std::optional<unsigned> ParseCpuCount(std::string_view proc_stat_file);

// A line of /proc/modules: "nvidia_drm 77824 4 nvidia_modeset, Live 0x0".
struct LoadedModule {
  std::string name;      // "nvidia_drm"
  unsigned used_by = 0;  // References (the third field).
  std::string users;     // Modules using it ("nvidia_drm,nvidia_uvm"), "" when none.
};
// Every module of /proc/modules text; lines that do not parse are skipped.
std::vector<LoadedModule> ParseModules(std::string_view proc_modules_file);

}  // namespace gw::proc

#endif  // GPUWARDEN_PROC_PROC_PARSE_H_
