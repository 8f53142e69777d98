// gpuwarden-supervise: the process that runs one job of the queue and records
// its end (runner.h gives the protocol; run_files.h the files). It leaves the
// daemon's session, claims the run, starts the job in a process group of its
// own, enforces the time limit, obeys stop requests, ends what the job leaves
// behind and records the end. It never needs the daemon again.
#ifndef GPUWARDEN_QUEUE_SUPERVISOR_H_
#define GPUWARDEN_QUEUE_SUPERVISOR_H_

#include <signal.h>

#include <cstdint>
#include <string>

#include "core/clock.h"

namespace gw::queue {

// gpuwarden-supervise's exit status.
// exit.json written (whatever the job did).
inline constexpr int kSupervisorRecorded = 0;
// Wrong command line; nothing touched.
inline constexpr int kSupervisorUsage = 64;
// Could not claim the run (nothing started), or claimed it but could not write
// exit.json before it was told to stop (step 9 below); supervisor.log says which.
inline constexpr int kSupervisorFailed = 70;
// Someone else claimed the run; nothing started.
inline constexpr int kSupervisorRefused = 75;
// JOB_DIR is not an absolute path to a directory (not a link) owned by the
// supervisor's user and not writable by group or others; nothing touched.
inline constexpr int kSupervisorBadJobDir = 78;

// Exit codes the job gets when it cannot be started (a shell's conventions):
// the program was not found, or it was found but could not be run or the
// job's identity, working directory or logs could not be set up.
inline constexpr int kExitNotFound = 127;
inline constexpr int kExitCannotRun = 126;

// How often a record that could not be written is tried again (step 9).
inline constexpr int64_t kRecordRetryMs = 1000;

// The signals the supervisor takes through its signalfd. Its launcher starts
// it with these blocked, so that a stop request sent before it is ready stays
// pending instead of killing it.
sigset_t SupervisorSignals();

// gpuwarden-supervise [--proc-root DIR] JOB_DIR, as a function (supervisor_main.cc
// calls it with one RealClock). Processes are read under `proc_root`.
// Returns the exit status (kSupervisor*). In order:
//   1. setsid(); SIGCHLD, SIGUSR1, SIGTERM, SIGINT, SIGQUIT, SIGHUP blocked and
//      read from a signalfd; SIGPIPE, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO,
//      SIGXFSZ ignored (a stray signal must not end it); becomes a child subreaper
//      (PR_SET_CHILD_SUBREAPER), so that processes the job orphans come back to it.
//   2. JOB_DIR must be a directory (not a link) owned by the supervisor's user
//      and not writable by group or others, else kSupervisorBadJobDir.
//   3. Claims JOB_DIR/launched (link(2)); taken -> kSupervisorRefused.
//   4. Reads spec.json; from here on every outcome ends in exit.json. A stop
//      file, or a pending SIGTERM/SIGINT, found now ends the run unstarted.
//   5. Opens JOB_DIR/stdout and JOB_DIR/stderr (O_CREAT|O_APPEND|O_NOFOLLOW, 0600,
//      fchown to the job's uid/gid when root); looks up the supplementary groups
//      of uid's account (getgrouplist; only gid when uid has no account).
//   6. Forks the job's leader, which: makes its own process group; resets signal
//      mask and dispositions; sets oom_score_adj to 0 (a daemon protected from
//      the OOM killer must not pass that on); takes stdin from /dev/null and
//      stdout/stderr from the logs; when root: setgroups, setgid, setuid, checks
//      that setuid(0) now fails (unless uid is 0); asks for SIGKILL should the
//      supervisor die (PR_SET_PDEATHSIG); opens logs the job named itself (as the
//      job's user); chdir(cwd); umask; execve along ExecCandidates(). A failure
//      goes to the stderr log and, through a close-on-exec pipe, to the
//      supervisor: "start_failed", exit 126 / 127. Not root: the job runs as the
//      supervisor's user, and a spec for another uid fails to start.
//   7. Writes JOB_DIR/pid (retried, see 9); waits. At the time limit (counted from the fork), on
//      SIGUSR1 (JOB_DIR/stop; without a readable one it is ignored) or on
//      SIGTERM/SIGINT/SIGQUIT to itself: SIGTERM + SIGCONT to the job's process group,
//      SIGKILL after the grace. SIGHUP is ignored.
//   8. When the leader has exited (held as a zombie meanwhile, so its PID, the
//      group's id, cannot be reused): whatever is left of its process group and
//      every process orphaned to the supervisor (the job's escaped descendants,
//      with their own groups) gets SIGTERM + SIGCONT, SIGKILL after
//      min(grace, 2 s), and is waited for at most 5 s more.
//   9. Writes exit.json and returns kSupervisorRecorded. A write that fails
//      (disk full, read-only filesystem, I/O error) is not the end: the job has
//      ended and everything it left is cleaned up, so the record is all that is
//      left to do. The supervisor logs the failure once to supervisor.log (as
//      far as that can be written) and tries again every kRecordRetryMs, for as
//      long as it takes, so that the end is recorded once space returns.
//      SIGTERM, SIGINT or SIGQUIT meanwhile: one last attempt, then
//      kSupervisorFailed when that fails too. JOB_DIR removed: kSupervisorFailed.
//      The pid record of step 7 is retried the same way while the job runs
//      (given up once the job has ended: exit.json supersedes it).
// Every wait is bounded by the deadlines above; the supervisor holds no file
// descriptor the daemon gave it but 0-2, and runs nothing through a shell.
int SuperviseMain(const std::string& job_dir, const std::string& proc_root, const Clock& clock);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_SUPERVISOR_H_
