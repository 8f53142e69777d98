// The runner: how a job is started, supervised and stopped, and how its end is
// recorded, so that the daemon may die at any moment (kill -9 included)
// without losing a job's end and without a job ever starting twice.
//
// This header is the protocol and an umbrella over its parts:
//   run_files.h        JOB_DIR's files and records (JSON both ways, readers through Result)
//   job_environment.h  the job's environment and PATH lookup (pure)
//   launcher.h         the daemon's side: PrepareRun, StartSupervisor, Launch, RequestStop,
//                      ClaimUnlaunched, SupervisorAlive
//   supervisor.h       gpuwarden-supervise itself (SuperviseMain, its exit codes)
//   supervisors.h      the daemon's seam over all of it (MakeRealSupervisors)
//
// Every run of a job has its own directory JOB_DIR (JobDir()), mode 0700,
// owned by the daemon's user. The daemon writes the run's spec there and
// starts `gpuwarden-supervise JOB_DIR` (Launch()). That supervisor leaves the
// daemon's session, claims the run, starts the job in a process group of its
// own, enforces the time limit, obeys stop requests, ends what the job leaves
// behind and records the end. It never needs the daemon again.
//
// Files in JOB_DIR. Every file a reader depends on appears complete or not at
// all (written to a temporary name, fsync'd, renamed or linked into place,
// directory fsync'd):
//   spec.json       daemon      What to run (SupervisorSpec), before the supervisor starts.
//   launched        claimant    Who claimed the run (LaunchRecord): the supervisor that
//                               runs it, or a restarted daemon that gave it up
//                               (ClaimUnlaunched). Created by link(2), so exactly one
//                               claimant wins and the file is complete when it appears.
//   pid             supervisor  The job's leader (PidRecord), once forked.
//   stop            daemon      Why and how gently to stop (RequestStop).
//   exit.json       supervisor  How the run ended (ExitRecord); the supervisor's last act,
//                               retried until the disk takes it (supervisor.h step 9).
//   stdout, stderr  the job     Its logs, unless the job names its own files.
//   supervisor.log  supervisor  Its own messages (stdout and stderr of the supervisor).
//
// The daemon's protocol:
//   start    Persist the job as "starting" first, then Launch(), then persist "running"
//            with Launched's supervisor pid and start ticks and the log paths.
//   watch    The supervisor is the launching daemon's child, for that daemon to reap (no
//            other thread may reap it with waitpid(-1, ...) before Launch() returns: Launch
//            reads its start time from the proc root). A restarted daemon watches adopted
//            supervisors with SupervisorAlive() (or a pidfd). Once the supervisor has ended:
//            ReadExitRecord(); an error there (malformed, unreadable) is not "none": keep
//            the job's processes and report it. None and the supervisor exited
//            kSupervisorRefused: another claimant holds the run (ReadLaunchRecord()); none
//            otherwise: the job is lost, and whatever PidRecord names (pid + start ticks,
//            leader of process group pid) may still run and should be ended by the daemon.
//   restart  For a job in "starting": ReadLaunchRecord(); a supervisor's record -> adopt
//            that supervisor (alive: watch it; gone: ReadExitRecord() or lost). No record
//            -> ClaimUnlaunched(): true = the run never started and never will (requeue
//            it under a new run number, see JobDir()); false = a supervisor claimed it
//            meanwhile, read the record again and adopt. For a job in "running": watch the
//            recorded supervisor as above.
//   stop     RequestStop() (cancel, preempt, VRAM guard); the end arrives in exit.json.
//   find     The job's processes are in the supervisor's session (session id = supervisor
//            pid) and, unless they left it, in the process group PidRecord::pid.
//
// Deployment: the supervisors must outlive the daemon, so a systemd unit for
// gpuwardend needs KillMode=process (or must place each supervisor in a scope
// of its own); with the default KillMode=control-group, stopping or restarting
// the daemon kills every job.
#ifndef GPUWARDEN_QUEUE_RUNNER_H_
#define GPUWARDEN_QUEUE_RUNNER_H_

#include "queue/job_environment.h"  // IWYU pragma: export
#include "queue/launcher.h"         // IWYU pragma: export
#include "queue/run_files.h"        // IWYU pragma: export
#include "queue/supervisor.h"       // IWYU pragma: export

#endif  // GPUWARDEN_QUEUE_RUNNER_H_
