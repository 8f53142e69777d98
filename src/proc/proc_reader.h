// ProcReader: gpuwarden's one reader of /proc. Every read goes through the
// proc root given to the constructor, so tests point it at a fake tree in a
// temporary directory and the product points it at /proc.
//
// Facts read (all optional; a value that is present was read):
//   ReadProcess        one process: uid and user, comm, argv, state, parent
//                      (and its name), process group and session, start time
//                      and age, CPU time and lifetime CPU %, RSS, and its
//                      owner (container, systemd unit, Slurm job) from its
//                      cgroup; failing a Slurm job there, the step of the
//                      root-owned slurmstepd it descends from.
//   ReadStat           one process's stat fields (a cheap identity and state check).
//   ReadHost           hostname, boot time, CPU count.
//   ListPids           every PID (for a process table: trees, runs).
//   ScanDeviceHolders  the `fuser -v /dev/nvidia*` view: every process that
//                      holds a matching device file open, with the paths.
//   ListDriverGpus     the GPUs the kernel driver probed (/proc/driver/nvidia/gpus).
//
// Caveat for callers: reading /proc/PID/cmdline (and maps) takes the target's
// memory-map lock, so a process wedged in the driver while holding that lock
// can block the reader. Run it inside the probe's deadline.
//
// Not thread-safe: a reader caches the boot time and user names; use one
// reader per thread.
#ifndef GPUWARDEN_PROC_PROC_READER_H_
#define GPUWARDEN_PROC_PROC_READER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "proc/proc_parse.h"

namespace gw::proc {

// Which device files count as "held GPU devices": entries of `dir` whose name
// starts with `prefix`, and anything below such an entry. The default,
// /dev + "nvidia", covers nvidia0..N, nvidiactl, nvidia-uvm, nvidia-uvm-tools,
// nvidia-modeset and nvidia-caps/*. Tests use a temporary directory of plain
// files. Matching is on the path the kernel reports for the open file.
struct DeviceMatch {
  std::string dir = "/dev";
  std::string prefix = "nvidia";
  // Also count device files mapped into memory (/proc/PID/maps) by a process
  // that has since closed the descriptor. Costs a read of every process's
  // maps, which can block on a process wedged with its memory-map lock held;
  // off by default.
  bool include_maps = false;
  // A PID to leave out, typically gpuwarden's own (it holds /dev/nvidiactl
  // while NVML is loaded).
  std::optional<pid_t> exclude_pid;
  // Sorted PIDs whose open files are not read: the caller knows them from an
  // earlier scan (collect::CachedCollector, for processes the driver lists).
  std::vector<pid_t> skip;
};

// What a holder scan could and could not see. A scan with fd_denied > 0 is
// incomplete: run as root (or as the owner) to see every holder.
struct HolderScanStats {
  unsigned processes = 0;          // PID directories looked at.
  unsigned fd_denied = 0;          // Descriptors not readable (EACCES, EPERM).
  std::vector<pid_t> denied_pids;  // The processes behind fd_denied, sorted.
  unsigned vanished = 0;           // Exited during the scan.
};

// PID -> the matching paths it holds, sorted, without duplicates.
using HolderMap = std::map<pid_t, std::vector<std::string>>;

// What reading several processes in one go learns of their ancestors (each
// one's name and parent, the Slurm step above it), so that the 256 workers
// of one launcher read their shared ancestors once, not 256 times. Valid for
// one look only: a PID names another process later. Pass the same memo to
// the ReadProcess calls of one look, and a new one to the next.
class AncestorMemo {
 private:
  friend class ProcReader;
  struct Stat {
    std::string comm;
    pid_t ppid = 0;
  };
  std::unordered_map<pid_t, std::optional<Stat>> stat_;  // nullopt: not readable.
  std::unordered_map<pid_t, std::optional<SlurmStepId>> step_above_;
};

class ProcReader {
 public:
  explicit ProcReader(std::string proc_root = "/proc");

  // Reads one process at wall time now_unix_ms (the snapshot's time), used
  // for age_s and cpu_pct. device_files and listed_by_driver are left empty:
  // the caller merges the holder scan and the driver's lists.
  // Errors: "not_found" when the process does not exist or exits while being
  // read; "malformed" when its stat file cannot be parsed; "invalid_argument"
  // for pid <= 0. A process whose files cannot be read (permission) is
  // returned with readable = false and whatever could be read. With `memo`,
  // ancestors already read through it are not read again.
  Result<HostProcess> ReadProcess(pid_t pid, int64_t now_unix_ms, AncestorMemo* memo = nullptr);

  // The fields of <root>/PID/stat alone: start time (a process's identity
  // beside its PID), state, parent. The one reader of that file outside
  // ReadProcess, for callers that check a process again and again (clean's
  // signal loop, the queue's supervisors). Errors: "gone" (no such process),
  // "io" (the file could not be read or is not a stat file; the message names
  // the path and the problem). A zombie is returned, state 'Z'.
  Result<StatFields> ReadStat(pid_t pid) const;

  // Hostname (<root>/sys/kernel/hostname), boot time and online CPU count
  // (<root>/stat). Fields that cannot be read stay nullopt.
  HostInfo ReadHost();

  // Every PID under the proc root, ascending (a process table's keys).
  // Error "unavailable" when the proc root cannot be listed.
  Result<std::vector<pid_t>> ListPids();

  // Every process holding a file that `match` selects, by walking
  // <root>/PID/fd (and <root>/PID/maps when match.include_maps). Processes
  // that exit during the scan or whose descriptors cannot be read are skipped
  // and counted in *stats when given. Error "unavailable" only when the proc
  // root itself cannot be listed.
  Result<HolderMap> ScanDeviceHolders(const DeviceMatch& match = {},
                                      HolderScanStats* stats = nullptr);

  // The GPUs the NVIDIA kernel driver has probed: the entry names of
  // <root>/driver/nvidia/gpus ("0000:3b:00.0"), sorted. Error "unavailable"
  // when the directory cannot be listed (no driver loaded).
  Result<std::vector<std::string>> ListDriverGpus();

  // The loaded kernel modules (<root>/modules). Error "unavailable" when the
  // file cannot be read.
  Result<std::vector<LoadedModule>> ReadModules() const;

  // Whether this proc root lists every process of the host, so that a PID
  // the driver lists and the root lacks has ended: the root is the host's
  // PID namespace (<root>/self/ns/pid is the initial namespace, whose inode
  // the kernel fixes at 0xEFFFFFFC) and either the caller is root or the
  // mount does not hide other users' processes (hidepid, os/mounts.h;
  // <root>/self/mountinfo). False when either cannot be read.
  bool ShowsEveryHostProcess(bool caller_is_root) const;

  const std::string& proc_root() const { return proc_root_; }

 private:
  std::optional<std::string> UserName(uid_t uid);
  std::optional<uint64_t> BootTimeS();
  // An ancestor's name and parent, from its stat (through `memo`).
  std::optional<AncestorMemo::Stat> AncestorStat(pid_t pid, AncestorMemo& memo);
  // The step served by the nearest root-owned slurmstepd among `pid` and its
  // ancestors: how Slurm's jobs are known where it tracks them without
  // cgroups (proctrack/linuxproc, proctrack/pgid).
  std::optional<SlurmStepId> SlurmStepAncestor(pid_t pid, AncestorMemo& memo);

  std::string proc_root_;
  long page_size_;
  long clock_ticks_;
  std::optional<uint64_t> boot_time_s_;
  std::unordered_map<uid_t, std::optional<std::string>> user_names_;
};

}  // namespace gw::proc

#endif  // GPUWARDEN_PROC_PROC_READER_H_
