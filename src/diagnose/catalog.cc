#include "diagnose/catalog.h"

#include <array>

#include <fmt/format.h>

namespace gw::diagnose {
namespace {

using C = Category;
using S = Severity;
using V = Verdict;
using A = Actor;

// Thresholds quoted in the texts are the defaults of DiagnoseOptions
// (rules.h); keep them in step.
constexpr FindingSpec kSpecs[] = {
    // ---- Capacity: memory and compute ------------------------------------
    {.code = "VRAM_EXHAUSTED",
     .severity = S::kWarning,
     .category = C::kShortage,
     .implies = V::kBusy,
     .actor = A::kUser,
     .title = "GPU memory is full",
     .next_steps =
         "gpuwarden status --gpu <gpu>\n"
         "Use a GPU with free memory: gpuwarden why --need SIZE lists the ones that fit\n"
         "Ask the owners of idle holders to free their memory (see IDLE_HOLDER findings)\n"
         "Need less memory: a smaller batch, bf16/fp16, gradient checkpointing",
     .explanation =
         "The GPU's free memory is below its full mark, which is relative to its size: 10 % "
         "of its memory and at least 1 GiB (8 GiB free on an 80 GiB GPU, 2.4 GiB on a 24 GiB "
         "one), or, when you stated a need with --need, its free memory is smaller than what "
         "you asked for per GPU. A new CUDA program started there fails with \"CUDA out of "
         "memory\" even when its code is right.\n\n"
         "This is a resource shortage, not a fault. The finding lists the largest holders with "
         "their owner, memory, SM use and age. When the memory is held by processes that do no "
         "work (idle, orphaned, zombie or hidden holders) the GPU's verdict is RECLAIMABLE; "
         "when it is held by running jobs it is BUSY."},
    {.code = "COMPUTE_SATURATED",
     .severity = S::kWarning,
     .category = C::kContention,
     .implies = V::kBusy,
     .actor = A::kUser,
     .title = "GPU compute is saturated",
     .next_steps = "gpuwarden status --gpu <gpu>\n"
                   "Run on another GPU: gpuwarden why --need SIZE lists the ones that fit\n"
                   "On a shared server, queue jobs (Slurm, a job queue) instead of stacking them",
     .explanation =
         "The GPU's utilisation stayed at or above 90 % in every sample of the window "
         "(sustained, not a spike; one sample of an offline dump at that level is enough). "
         "Even with memory left, a GPU whose compute is fully loaded makes new work wait: "
         "kernels of several processes on one GPU take turns (time-slicing), so a new job runs "
         "slower and slows the one already there. Memory may still be free; compute is the "
         "shortage.\n\n"
         "One process is enough: the GPU is busy for anyone else. The finding says whether "
         "several processes share it and whether your --need could be placed elsewhere."},
    // ---- Holders ---------------------------------------------------------
    {.code = "IDLE_HOLDER",
     .severity = S::kWarning,
     .category = C::kHolder,
     .implies = V::kReclaimable,
     .actor = A::kOwner,
     .title = "A process holds GPU memory but does no work",
     .next_steps = "gpuwarden status --gpu <gpu>\n"
                   "See what would be ended: gpuwarden clean --pid <pid> --dry-run\n"
                   "If it is yours, save your work and end it: gpuwarden kill <pid>\n"
                   "A Jupyter kernel: shut the kernel down (or del the tensors and call "
                   "torch.cuda.empty_cache())\n"
                   "admin: reclaim it after asking the owner: gpuwarden clean --pid <pid>",
     .explanation =
         "The process holds at least 1 GiB on the GPU and has been seen without GPU work for "
         "at least 10 minutes (--idle-for): its idle time, measured, never its age. Idle time "
         "comes from gpuwardend's history when a daemon runs (per process where NVML gives "
         "per-process utilisation, else from the GPU's utilisation: a GPU at or below 5 % had "
         "every holder idle), else from the looks of this command (why's 3 s window, --window "
         "10m); the evidence says which (idle_source) and how long it could see (idle_seen). A "
         "look that cannot tell breaks the idle run as work does. The classic case is a Jupyter "
         "kernel that loaded a model two days ago and keeps 70 GiB while its owner is away.\n\n"
         "The memory is allocated but unused: the capacity can be reclaimed by the owner (or an "
         "administrator) without hurting running work. A protected process (its executable or "
         "systemd unit, never the name it gives itself; docs/cleanup.md) is never an idle "
         "holder. --min-age adds a minimum run time."},
    {.code = "HOLDER_IDLE_ONE_SAMPLE",
     .severity = S::kInfo,
     .category = C::kHolder,
     .implies = V::kOk,
     .actor = A::kOwner,
     .title = "A process holds GPU memory at 0 % in the one sample seen",
     .next_steps = "Look over time before calling it idle: gpuwarden why --window 10m\n"
                   "gpuwarden status --gpu <gpu>\n"
                   "If it is yours and idle, end it: gpuwarden kill <pid>",
     .explanation =
         "The process holds at least 1 GiB on a GPU whose utilisation is at most 5 % in the one "
         "sample there is (an offline dump, why --now). It may be idle, or a job between two "
         "steps (loading data, checkpointing, waiting at a barrier): one sample cannot tell, "
         "and an offline dump has neither the process's age nor its own SM use; a live look "
         "(why --now) reports it unless gpuwardend's history shows the holder idle for the idle "
         "time. The memory is live work until it has been seen idle that long (IDLE_HOLDER, "
         "HOLDER_IDLE_SHORT): it is never counted "
         "as reclaimable, and the GPU's verdict follows its memory like any other. Memory held "
         "with no process listed, in the same situation, is HIDDEN_USE."},
    {.code = "HOLDER_IDLE_SHORT",
     .severity = S::kInfo,
     .category = C::kHolder,
     .implies = V::kOk,
     .actor = A::kOwner,
     .title = "A process holds GPU memory and was seen idle, but not for long enough",
     .next_steps = "Look longer before calling it idle: gpuwarden why --window 10m\n"
                   "gpuwardend's history tells at once: systemctl start gpuwardend\n"
                   "gpuwarden status --gpu <gpu>",
     .explanation =
         "The process holds at least 1 GiB and did no GPU work in what was seen, but was seen "
         "idle for less than the idle time (10 minutes, --idle-for), or has run less than "
         "--min-age. A training run paused for a checkpoint, an evaluation on the CPU or a "
         "stalled data loader looks the same for minutes: it is live work until it has been "
         "seen idle for the whole idle time. Without gpuwardend, the idle time seen is this "
         "command's window (3 s by default); with it, its history (per process, or per GPU) "
         "reaches back as far as the daemon has watched. The memory is never counted as "
         "reclaimable, and clean does not act on it."},
    {.code = "ORPHAN_HOLDER",
     .severity = S::kWarning,
     .category = C::kHolder,
     .implies = V::kReclaimable,
     .actor = A::kOwner,
     .title = "A process left behind by a killed job holds the GPU",
     .next_steps = "See its process group and what would be ended: gpuwarden clean --pid <pid> "
                   "--dry-run\n"
                   "If it is yours: gpuwarden kill <pid>\n"
                   "Next time end a run with Ctrl-C or kill -- -<pgid> (the whole process group)\n"
                   "admin: reclaim it after asking the owner: gpuwarden clean --pid <pid>",
     .explanation =
         "The process was re-parented to init (PPID 1) or to a subreaper such as systemd "
         "--user, yet it is not a daemon: it is still a member of its old process group (its "
         "PGID is not its own PID) and does not lead a session, and the leader of that group "
         "is gone. It did no GPU work in the window (SM 0 % or unknown).\n\n"
         "This is the signature of data-loader workers and helper processes that outlived "
         "their training run after the main process was killed: \"memory held, nothing "
         "running\". Processes that compute are not reported."},
    {.code = "ZOMBIE_HOLDER",
     .severity = S::kWarning,
     .category = C::kHolder,
     .implies = V::kReclaimable,
     .actor = A::kOwner,
     .title = "A zombie process is listed on the GPU; kill cannot remove it",
     .next_steps = "End the processes of its run that inherited the device file: kill -- -<pgid>\n"
                   "See what holds the GPU now: gpuwarden status --gpu <gpu>\n"
                   "admin: if nothing else holds it and the memory stays held for minutes, reset "
                   "the GPU when no other process uses it: sudo nvidia-smi -r -i <gpu>, else "
                   "reboot",
     .explanation =
         "The process has exited (state Z) and the driver still lists it on the GPU. A zombie "
         "has closed all its files: a signal cannot end what has already ended, and reaping it "
         "(its parent's wait) removes the process entry but frees no GPU memory. The memory is "
         "held either by processes that inherited the GPU's device file from it (data-loader "
         "workers forked after CUDA started, still in its process group: the finding names "
         "them, and ending them frees the GPU), or by the driver tearing the context down, "
         "which can take seconds for a large context.\n\n"
         "If nothing else holds the device file and the memory stays held, the context was not "
         "torn down: an administrator must reset the GPU or reboot."},
    {.code = "UNINTERRUPTIBLE_HOLDER",
     .severity = S::kCritical,
     .category = C::kHolder,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "A GPU process is stuck in uninterruptible sleep (D)",
     .next_steps = "Look again in a minute: gpuwarden status --gpu <gpu>\n"
                   "kill -9 cannot end a process in D state; do not loop on it\n"
                   "admin: sudo dmesg -T | grep -iE 'xid|nvrm|hung'\n"
                   "admin: if it stays in D, reset the GPU (gpuwarden reset --plan <gpu> lists "
                   "what is in the way; sudo nvidia-smi -r -i <gpu>) or reboot",
     .explanation =
         "The process holding the GPU was in uninterruptible sleep (state D) in every sample "
         "of a window of at least 2 seconds (two samples or more; a single look is not "
         "enough, as short D states during disk or network I/O are normal).\n\n"
         "Signals cannot reach a process in D state, so kill cannot free its memory. A GPU "
         "process stuck there is often waiting inside the NVIDIA driver: a hung driver or GPU. "
         "Only an administrator can help, by resetting the GPU or rebooting."},
    {.code = "INVISIBLE_HOLDER",
     .severity = S::kWarning,
     .category = C::kHolder,
     .implies = V::kReclaimable,
     .actor = A::kAdmin,
     .title = "GPU memory is held, no process is listed, and the GPU does no work",
     .next_steps = "As root every process and device-file holder is visible: sudo gpuwarden why\n"
                   "Who holds the device files: sudo fuser -v /dev/nvidia*\n"
                   "In a container: run gpuwarden on the host to see other PID namespaces\n"
                   "admin: if nothing holds the GPU, the memory leaked in the driver: sudo "
                   "nvidia-smi -r -i <gpu>, or reboot",
     .explanation =
         "At least 1 GiB is used on the GPU while the driver lists no process on it, and the "
         "GPU's utilisation was idle (5 % or less) in every sample of a window of two samples or "
         "more. A GPU that computes, or whose utilisation is unknown, or that was seen once, "
         "gets HIDDEN_USE instead: that may be live work and is never called reclaimable. The "
         "finding names the likeliest cause, in this order: "
         "gpuwarden runs in a container, and the driver only lists processes of the caller's "
         "PID namespace; processes that hold the GPU's device file without being listed; "
         "processes of other users hidden from a non-root caller (/proc mounted with hidepid, "
         "unreadable /proc/PID/fd); or, as root on the host with no holder at all, memory "
         "leaked by the driver after a crash.\n\n"
         "MIG-enabled GPUs are skipped: their processes are listed per instance."},
    {.code = "HIDDEN_USE",
     .severity = S::kInfo,
     .category = C::kHolder,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "GPU memory is used by processes this view cannot list",
     .next_steps = "As root every process and device-file holder is visible: sudo gpuwarden why\n"
                   "In a container: run gpuwarden on the host to see other PID namespaces\n"
                   "Who holds the device files: sudo fuser -v /dev/nvidia*",
     .explanation =
         "At least 1 GiB is used on the GPU while the driver lists no process on it, and "
         "gpuwarden cannot show that the memory is idle: the GPU computes (utilisation above "
         "5 %), its utilisation is unknown, or it was seen in one sample only (an offline dump, "
         "why --now), which cannot tell an idle holder from a job between two steps.\n\n"
         "Work that computes with nothing listed runs in another PID namespace (a container "
         "or VM the driver does not list here) or belongs to users hidden from you. It is live "
         "work: it is never counted as reclaimable, and the GPU is busy or in use by its "
         "memory and utilisation like any other. Look from the host, or as root, to see whose "
         "it is."},
    {.code = "UNLISTED_DEVICE_HOLDER",
     .severity = S::kInfo,
     .category = C::kHolder,
     .implies = V::kOk,
     .actor = A::kOwner,
     .title = "A process holds a GPU device file but the driver does not list it",
     .next_steps = "gpuwarden status --gpu <gpu>\n"
                   "See what would be ended: gpuwarden clean --pid <pid> --dry-run\n"
                   "If it is a leftover of a finished job: gpuwarden kill <pid>",
     .explanation =
         "The process has /dev/nvidiaN open (the \"fuser -v /dev/nvidia*\" view) but no GPU "
         "lists it as a compute or graphics process. It may have a CUDA context being torn "
         "down, be a leftover of a crashed job, or be a tool that opened the device without "
         "allocating. Known system tools (nvidia-persistenced, DCGM, Xorg, monitors such as "
         "nvidia-smi, nvtop, gpustat and gpuwarden itself) are not reported."},
    {.code = "GONE_PROCESS_HOLDER",
     .severity = S::kWarning,
     .category = C::kHolder,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "GPU memory charged to a process that has ended",
     .next_steps =
         "nvidia-smi --query-compute-apps=pid,used_memory --format=csv (the PID stays listed "
         "while the driver holds its context)\n"
         "Wait a minute: the driver frees a context when the process's teardown ends\n"
         "admin: if it stays, only a GPU reset frees the memory: gpuwarden reset --plan <gpu> "
         "lists what is in the way, then sudo nvidia-smi -r -i <gpu>",
     .explanation =
         "The driver lists a PID on the GPU with memory charged to it, and the PID has no "
         "/proc entry in any sample of a window of at least two samples and two seconds, "
         "while this /proc shows every process of the host (gpuwarden runs in the host's PID "
         "namespace, and /proc hides no user's processes, or it runs as root). No GPU work is "
         "seen for it. The process has ended and the driver has not freed its context: common "
         "after a SIGKILL during teardown or a process stuck in the driver that finally died. "
         "The memory is never free and no kill can reclaim it; it goes when the driver finishes "
         "the teardown, or with a GPU reset. From one sample, or where /proc cannot see every "
         "process (a container, hidepid), the same listing is FOREIGN_PID."},
    {.code = "MPS_SERVER_HOLDER",
     .severity = S::kInfo,
     .category = C::kHolder,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "The CUDA MPS server holds memory for its clients",
     .next_steps =
         "echo get_server_list | nvidia-cuda-mps-control (the servers), and echo "
         "get_client_list <server PID> | nvidia-cuda-mps-control (their clients)\n"
         "The memory goes when the clients end; the MPS daemon's owner stops it with echo quit "
         "| nvidia-cuda-mps-control\n"
         "Never kill the server: every MPS client on the GPU fails with it",
     .explanation =
         "nvidia-cuda-mps-server runs the contexts of every CUDA MPS client on the GPU, so the "
         "driver charges it memory for them (and lists the clients as M+C processes). It is a "
         "service, not an idle job: gpuwarden never calls its memory reclaimable and clean "
         "never signals it. It exits when the MPS control daemon is told to quit and no client "
         "is left."},
    {.code = "GRAPHICS_HOLDER",
     .severity = S::kInfo,
     .category = C::kHolder,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "Graphics contexts hold memory (a display server, a graphics application)",
     .next_steps =
         "A desktop or a graphics application runs on this GPU: its memory is not free while "
         "it runs\n"
         "admin: to keep compute GPUs free of graphics, drive the display from another GPU, or "
         "run the server without one (sudo systemctl isolate multi-user.target)",
     .explanation =
         "The driver lists these processes with graphics contexts only (type G), or they are "
         "known display servers (Xorg, Xwayland, gnome-shell, kwin, mutter, weston, sway, "
         "Hyprland). Their memory is in use by the display, not by compute work: a GPU with "
         "nothing else on it is still free for compute when the rest of its memory is, and "
         "the memory is never called reclaimable (clean never signals a display server)."},
    {.code = "FOREIGN_PID",
     .severity = S::kInfo,
     .category = C::kHolder,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "The driver lists processes that this /proc cannot see",
     .next_steps = "Run gpuwarden on the host (or in a container started with --pid=host)\n"
                   "On the host, nvidia-smi shows the same PIDs with their names",
     .explanation =
         "The driver always reports host PIDs. When gpuwarden runs in a container without "
         "--pid=host, or the process lives in another PID namespace, those PIDs do not exist "
         "in the /proc gpuwarden reads (or belong to an unrelated process there), so owner, "
         "age and state are unknown. A process that exited between the two reads looks the "
         "same; the rule needs it missing in every sample."},
    // ---- Slurm: the node's jobs and their GPUs -------------------------
    {.code = "SLURM_ALLOCATED",
     .severity = S::kInfo,
     .category = C::kShortage,
     .implies = V::kBusy,
     .actor = A::kUser,
     .title = "Slurm gave the GPU to a running job",
     .next_steps = "See the job: scontrol show job <job>\n"
                   "Ask Slurm for a GPU instead of using one on the node: srun --gpus=1 ..., or "
                   "gpuwarden run --slurm\n"
                   "Why your own job waits: gpuwarden why --slurm",
     .explanation =
         "This server is a Slurm node, and slurmctld has allocated the GPU to a job that is "
         "running (or suspended, or ending) here: squeue names the job and its GRES index on "
         "this node (gpu:a100:1(IDX:2)), and slurmd's list of devices (slurmd -G) says which "
         "device file, and so which GPU, that index is. Where slurmd -G cannot be run, index "
         "k is taken as the k-th GPU by minor number, the order slurmd gives the devices it "
         "finds, and the evidence says so.\n\n"
         "Until the job ends the GPU is its own, however little memory it uses: Slurm gives "
         "it to no other job, and work started on the node beside Slurm takes it from the job "
         "that was given it. The GPU is BUSY for anyone else; it is never counted free. The "
         "finding names the job's user and name, and whether any of its processes are on the "
         "GPU (a job that holds a GPU and runs nothing there wastes it; its owner can release "
         "it by ending the job). A suspended job keeps its GPUs."},
    {.code = "SLURM_OUTSIDE_ALLOCATION",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "A process uses a GPU that Slurm did not give its job",
     .next_steps = "See who it is: gpuwarden status --gpu <gpu>\n"
                   "If it is yours, end it and run it through Slurm (srun --gpus=1 ...): "
                   "gpuwarden kill <pid>\n"
                   "admin: confine jobs to their GPUs: TaskPlugin=task/cgroup and "
                   "ConstrainDevices=yes in cgroup.conf",
     .explanation =
         "On a Slurm node every GPU process should belong to the job Slurm gave that GPU. "
         "This one does not: it belongs to another job, which was given other GPUs (or none), "
         "or to no job at all, on a GPU that Slurm gave to a job. Its job comes from its "
         "cgroup (proctrack/cgroup) or from the slurmstepd it descends from; a process that "
         "left its job (re-parented to init, a daemon started from a job) belongs to none.\n\n"
         "Such a process takes memory and compute from the job that owns the GPU, and Slurm "
         "does not count or end it. It happens when devices are not confined "
         "(ConstrainDevices=no): a job can then open every /dev/nvidiaN, and a program that "
         "ignores CUDA_VISIBLE_DEVICES lands on GPUs it was not given. A process whose job "
         "cannot be told (/proc unreadable) is not reported."},
    // ---- Placing a stated need (--need) -------------------------------
    {.code = "FRAGMENTED",
     .severity = S::kWarning,
     .category = C::kShortage,
     .implies = V::kBusy,
     .actor = A::kUser,
     .title = "Enough free memory in total, but not in one place",
     .next_steps = "Per-GPU free memory: gpuwarden status\n"
                   "Split the job over more GPUs with less memory each (model or tensor "
                   "parallelism)\n"
                   "Ask idle holders on partly used GPUs to free them (see IDLE_HOLDER)\n"
                   "If you asked for NVLink and the job can live with PCIe, drop that requirement",
     .explanation =
         "With --need N x SIZE: the free memory of the usable GPUs adds up to N x SIZE or more, "
         "but fewer than N GPUs each have SIZE free, or (with +nvlink) no N of the GPUs that "
         "fit are all joined to each other by NVLink. The resource exists, scattered."},
    {.code = "NEED_UNSATISFIABLE",
     .severity = S::kWarning,
     .category = C::kShortage,
     .implies = V::kBusy,
     .actor = A::kUser,
     .title = "Not enough free GPU memory for the request",
     .next_steps = "Wait for running jobs to finish, or ask idle holders to free memory\n"
                   "Ask for less: a smaller batch, bf16/fp16, gradient checkpointing\n"
                   "Submit through a scheduler so the job waits in a queue instead of failing",
     .explanation =
         "With --need N x SIZE: even all free memory of the usable GPUs together is less than "
         "N x SIZE. The server is short of memory for this request right now. If reclaimable "
         "holders could free enough, the server's verdict is RECLAIMABLE rather than BUSY."},
    {.code = "NEED_FITS",
     .severity = S::kInfo,
     .category = C::kShortage,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "The request fits now",
     .next_steps = "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=<gpus> your-command",
     .explanation =
         "With --need: enough GPUs have the requested memory free (and, with +nvlink, are "
         "joined by NVLink). The finding names them, preferring the least used. Memory can be "
         "taken by someone else before your job starts."},
    {.code = "NEED_EXCEEDS_SERVER",
     .severity = S::kWarning,
     .category = C::kShortage,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "The request can never fit on this server",
     .next_steps = "Ask for fewer GPUs or less memory per GPU\n"
                   "Use a server with more or larger GPUs\n"
                   "gpuwarden status",
     .explanation =
         "With --need N x SIZE: the server has fewer than N usable GPUs, no GPU has SIZE of "
         "memory in total, or (with +nvlink) no N GPUs are joined by NVLink at all, counting "
         "every GPU as empty and healthy. Waiting will not help; the request must change. "
         "`why --need` then answers NEVER_FITS (exit code 17)."},
    {.code = "NEED_UNCHECKED",
     .severity = S::kWarning,
     .category = C::kShortage,
     .implies = V::kUnknown,
     .actor = A::kUser,
     .title = "The request cannot be checked: what it depends on is unknown",
     .next_steps = "nvidia-smi topo -m\n"
                   "Drop +nvlink if the job can live with PCIe\n"
                   "gpuwarden health",
     .explanation =
         "With --need N x SIZE: either NVLink is asked for several GPUs and gpuwarden could not "
         "read which GPUs are joined by NVLink (an offline dump without topology, or NVML did not "
         "say), or the request could fit only on GPUs whose memory could not be read "
         "(unreachable, no permission, no memory data). It never answers \"fits\" for what it "
         "could not check; the queue holds such a job with the same reason (topology_unknown, "
         "or unhealthy for unreadable GPUs). `why --need` then answers UNKNOWN (exit code 14)."},
    // ---- Configuration ----------------------------------------------------
    {.code = "COMPUTE_MODE_EXCLUSIVE",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kBusy,
     .actor = A::kAdmin,
     .title = "The GPU is in exclusive-process mode and already taken",
     .next_steps = "Use another GPU: gpuwarden why --need SIZE\n"
                   "Wait for PID <pid> to finish, or ask its owner\n"
                   "admin: allow sharing: sudo nvidia-smi -i <gpu> -c DEFAULT",
     .explanation =
         "The compute mode is EXCLUSIVE_PROCESS (or the old EXCLUSIVE_THREAD) and a compute "
         "process already holds the GPU. Any other process fails to create a context, with "
         "\"all CUDA-capable devices are busy or unavailable\", however much memory is free. "
         "Administrators use this mode to stop jobs from stacking on one GPU. If the process "
         "that holds it is idle or orphaned, the GPU is RECLAIMABLE."},
    {.code = "COMPUTE_MODE_PROHIBITED",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kBusy,
     .actor = A::kAdmin,
     .title = "The GPU does not accept compute processes",
     .next_steps = "Use another GPU\n"
                   "admin: if not meant: sudo nvidia-smi -i <gpu> -c DEFAULT",
     .explanation =
         "The compute mode is PROHIBITED: no process may create a CUDA context on the GPU. "
         "This is an administrator's setting (often for a GPU being drained or kept for "
         "display); to users it looks like a permanently busy GPU."},
    {.code = "MIG_ENABLED",
     .severity = S::kInfo,
     .category = C::kConfiguration,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "The GPU is split into MIG instances",
     .next_steps = "List MIG devices and their UUIDs: nvidia-smi -L\n"
                   "Select an instance by its UUID: CUDA_VISIBLE_DEVICES=MIG-... your-command\n"
                   "admin: nvidia-smi mig -lgi lists the GPU instances",
     .explanation =
         "Multi-Instance GPU mode is on: the GPU is divided into isolated instances, each with "
         "its own memory and SMs. A program sees one instance, not the whole GPU, and all "
         "instances may be taken even when the GPU's totals look free. GPU-wide utilisation "
         "and per-process memory are not reported in this mode, so some rules skip the GPU."},
    {.code = "PERSISTENCE_OFF",
     .severity = S::kInfo,
     .category = C::kConfiguration,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "Persistence mode is off",
     .next_steps = "admin: sudo systemctl enable --now nvidia-persistenced\n"
                   "admin: or, until the next reboot: sudo nvidia-smi -pm 1",
     .explanation =
         "Without persistence mode the driver tears the GPU state down when the last client "
         "exits and initialises it again for the next one: every nvidia-smi, monitor or CUDA "
         "start pays about a second or more of setup, GPUs stay at a high power state longer, "
         "and hangs of nvidia-smi are more frequent. Volatile ECC counters also reset. NVIDIA "
         "recommends nvidia-persistenced on servers."},
    {.code = "CUDA_VISIBLE_DEVICES_NONE",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "CUDA_VISIBLE_DEVICES hides every GPU",
     .next_steps = "echo \"$CUDA_VISIBLE_DEVICES\"\n"
                   "unset CUDA_VISIBLE_DEVICES, or list GPUs that exist (nvidia-smi -L)",
     .explanation =
         "Your CUDA_VISIBLE_DEVICES is empty, starts with -1, or its first entry names no GPU "
         "of this server. CUDA then sees no device at all and programs report \"no CUDA-capable "
         "device is detected\", which looks like a busy or broken server but is your "
         "environment."},
    {.code = "CUDA_VISIBLE_DEVICES_INVALID",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "CUDA_VISIBLE_DEVICES names GPUs that do not exist",
     .next_steps = "Valid indices and UUIDs: nvidia-smi -L\n"
                   "Fix CUDA_VISIBLE_DEVICES; CUDA ignores everything from the first invalid "
                   "entry on",
     .explanation =
         "An entry of your CUDA_VISIBLE_DEVICES is not a GPU of this server: an index past the "
         "last GPU, a UUID that matches no GPU (or more than one), or text that is neither. "
         "CUDA stops reading the list at the first invalid entry, so the GPUs after it are "
         "silently dropped."},
    {.code = "CUDA_VISIBLE_DEVICES_BUSY",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "CUDA_VISIBLE_DEVICES selects only busy GPUs while others are free",
     .next_steps = "export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=<gpus>\n"
                   "gpuwarden status",
     .explanation =
         "Every GPU your CUDA_VISIBLE_DEVICES selects is full, saturated, taken in exclusive "
         "mode, prohibited or unreachable, while other GPUs of the server are free. The server "
         "is not busy for you; your selection is. The finding suggests free GPUs."},
    {.code = "CUDA_VISIBLE_DEVICES_ORDER",
     .severity = S::kInfo,
     .category = C::kConfiguration,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "CUDA numbers the GPUs differently from nvidia-smi here",
     .next_steps = "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
     .explanation =
         "Your CUDA_VISIBLE_DEVICES uses numeric indices, CUDA_DEVICE_ORDER is not PCI_BUS_ID, "
         "and this server mixes GPU models. CUDA's default order is FASTEST_FIRST while "
         "nvidia-smi, NVML and gpuwarden number GPUs by PCI bus: index 0 may be a different "
         "GPU for your program than in nvidia-smi. With identical GPUs both orders agree and "
         "nothing is reported."},
    // ---- Driver and NVML ---------------------------------------------------
    {.code = "GPU_LOST",
     .severity = S::kCritical,
     .category = C::kBus,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "The GPU is lost (fell off the bus)",
     .next_steps = "Do not restart jobs on it; tell the administrator\n"
                   "admin: sudo dmesg -T | grep -i xid   (Xid 79: fallen off the bus)\n"
                   "admin: drain the server and reboot; check power, cooling and PCIe/riser "
                   "seating\n"
                   "vendor: RMA if it happens again",
     .explanation =
         "NVML answered GPU_IS_LOST: the GPU no longer responds on the PCIe bus. Every call to "
         "it fails until the server is rebooted. Causes are hardware or platform (power, "
         "overheating, PCIe link, the card itself). This is a hardware fault, not load."},
    {.code = "GPU_UNREACHABLE",
     .severity = S::kCritical,
     .category = C::kDriver,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "NVML cannot reach the GPU",
     .next_steps = "gpuwarden status   (shows the NVML error)\n"
                   "admin: sudo dmesg -T | grep -iE 'nvrm|xid'\n"
                   "admin: reset the GPU (sudo nvidia-smi -r -i <gpu>) or reboot",
     .explanation =
         "The driver counts the GPU but NVML could not open it (an error other than lost, "
         "timeout, permission, power or reset-required, e.g. \"Unknown Error\" or an interrupt "
         "problem). The GPU cannot be used until an administrator resets it or reboots."},
    {.code = "NO_PERMISSION",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kUnknown,
     .actor = A::kAdmin,
     .title = "No permission to read the GPU",
     .next_steps = "ls -l /dev/nvidia*   (may your user open them?)\n"
                   "sudo gpuwarden why\n"
                   "admin: give the user access to the GPU device files, or fix the container's "
                   "device list",
     .explanation =
         "NVML refused access (NO_PERMISSION) to the GPU or to the driver: the user cannot open "
         "the device files, or a container or cgroup denies them. gpuwarden cannot see the GPU, "
         "so its verdict is UNKNOWN, not OK."},
    {.code = "GPU_RESET_REQUIRED",
     .severity = S::kCritical,
     .category = C::kDriver,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "The GPU needs a reset",
     .next_steps = "admin: stop the processes on it, then sudo nvidia-smi -r -i <gpu>\n"
                   "admin: if the reset fails, reboot",
     .explanation =
         "NVML answered RESET_REQUIRED: after an error the GPU must be reset before it can be "
         "used again. Jobs on it fail until then."},
    {.code = "GPU_INSUFFICIENT_POWER",
     .severity = S::kCritical,
     .category = C::kPower,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "The GPU lacks external power",
     .next_steps = "admin: check the GPU's auxiliary power cables and the power supply",
     .explanation = "NVML answered INSUFFICIENT_POWER: the GPU's external power connectors are not "
                    "connected or not delivering. The GPU refuses to work until that is fixed."},
    {.code = "INFOROM_CORRUPTED",
     .severity = S::kWarning,
     .category = C::kHardware,
     .implies = V::kDegraded,
     .actor = A::kVendor,
     .title = "The GPU's InfoROM is corrupted",
     .next_steps = "nvidia-smi -q -i <gpu> | grep -i -A4 inforom\n"
                   "vendor: open a support case; ECC and retirement records are unreliable",
     .explanation =
         "NVML answered CORRUPTED_INFOROM. The InfoROM stores ECC counts, retired pages and "
         "configuration; when it is corrupt the GPU may still run, but its health records "
         "cannot be trusted."},
    {.code = "DRIVER_TIMEOUT",
     .severity = S::kCritical,
     .category = C::kDriver,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "The driver did not answer in time",
     .next_steps = "Do not loop on nvidia-smi: a stuck call can hang in D state\n"
                   "admin: sudo dmesg -T | grep -iE 'xid|nvrm|hung'\n"
                   "admin: look for Xid 119/120 (GSP timeouts); if it repeats, drain and reboot",
     .explanation =
         "An NVML call did not return within gpuwarden's deadline (2 s by default), or NVML "
         "itself answered TIMEOUT. A healthy driver answers in milliseconds; one that does not "
         "is wedged or its GPU is hung, and tools that wait on it hang in uninterruptible "
         "sleep. This is the seed's \"driver / kernel lock-up\": the server cannot take new "
         "work until an administrator recovers it."},
    {.code = "DRIVER_NOT_LOADED",
     .severity = S::kCritical,
     .category = C::kDriver,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "The NVIDIA kernel module is not loaded",
     .next_steps = "admin: lsmod | grep nvidia\n"
                   "admin: sudo modprobe nvidia, and read dmesg for why it did not load (secure "
                   "boot, a kernel update without a rebuilt module)",
     .explanation =
         "NVML answered DRIVER_NOT_LOADED: the user-space library is there but the kernel "
         "module is not. No GPU can be used."},
    {.code = "DRIVER_VERSION_MISMATCH",
     .severity = S::kCritical,
     .category = C::kDriver,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "Driver/library version mismatch (driver upgraded without a reboot)",
     .next_steps = "admin: cat /proc/driver/nvidia/version   (the loaded module)\n"
                   "admin: grep -i nvidia /var/log/apt/history.log   (a recent upgrade?)\n"
                   "admin: reboot, or reload the nvidia modules once no process uses them",
     .explanation =
         "\"Failed to initialize NVML: Driver/library version mismatch\": the NVIDIA "
         "user-space libraries were upgraded (often by unattended upgrades) while the old "
         "kernel module is still loaded. Running jobs keep working; nothing new can start "
         "until the server is rebooted or the modules are reloaded."},
    {.code = "NVML_NOT_FOUND",
     .severity = S::kWarning,
     .category = C::kDriver,
     .implies = V::kUnknown,
     .actor = A::kAdmin,
     .title = "libnvidia-ml.so.1 was not found",
     .next_steps = "Is an NVIDIA driver installed? ls /usr/lib/*/libnvidia-ml.so.1\n"
                   "In a container: start it with --gpus all (NVIDIA Container Toolkit)\n"
                   "Point gpuwarden at the library: GPUWARDEN_NVML_LIB=/path/to/libnvidia-ml.so.1",
     .explanation =
         "gpuwarden could not load NVML, the driver's management library. Either no NVIDIA "
         "driver is installed, or this container was started without the GPU libraries. "
         "Nothing about the GPUs is known: UNKNOWN."},
    {.code = "NO_GPU_VISIBLE",
     .severity = S::kWarning,
     .category = C::kConfiguration,
     .implies = V::kUnknown,
     .actor = A::kAdmin,
     .title = "The driver reports no GPU",
     .next_steps = "Does the host see the cards? lspci | grep -i nvidia\n"
                   "In a container: docker run --gpus all ...\n"
                   "admin: sudo dmesg -T | grep -i nvrm",
     .explanation =
         "NVML works but counts 0 GPUs: the container was given no device, the cards are "
         "not detected, or the driver failed to bind them."},
    {.code = "PROC_SCAN_TIMEOUT",
     .severity = S::kWarning,
     .category = C::kDriver,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "Reading /proc did not finish in time",
     .next_steps = "Processes in D state: ps -eo pid,stat,wchan:32,comm | awk '$2 ~ /D/'\n"
                   "admin: sudo dmesg -T | grep -iE 'hung|xid'",
     .explanation =
         "Scanning /proc for GPU holders did not finish within the deadline. Reading a "
         "process's files blocks when the process is stuck in the kernel (D state), often in "
         "the GPU driver or a hung network filesystem. Owner and holder findings may be "
         "missing from this run."},
    // ---- Memory health -----------------------------------------------------
    {.code = "ECC_DBE_VOLATILE",
     .severity = S::kCritical,
     .category = C::kMemory,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "Uncorrectable (double-bit) ECC errors since the driver loaded",
     .next_steps = "nvidia-smi -q -d ECC -i <gpu>\n"
                   "Results of jobs that ran on this GPU may be wrong; stop using it\n"
                   "admin: drain and reset it (sudo nvidia-smi -r -i <gpu>) so the bad memory is "
                   "retired or remapped, then run dcgmi diag -r 3\n"
                   "vendor: RMA if the errors come back",
     .explanation =
         "The volatile uncorrected ECC counter is above 0: the GPU's memory returned data it "
         "could not correct since the driver was loaded. DCGM fails its memory health check "
         "on any such error. Applications that touched the memory were killed or got bad "
         "data. Where the dump splits the counters and every error is in SRAM (contained), "
         "the finding is ECC_SRAM_CONTAINED instead; where the kernel log shows the GPU "
         "contained it (Xid 94, \"RST: No\", and no Xid 95 or 140), ECC_DBE_CONTAINED. The "
         "message says which evidence was missing or what said the error was not contained."},
    {.code = "ECC_SRAM_CONTAINED",
     .severity = S::kWarning,
     .category = C::kMemory,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "Uncorrectable SRAM ECC errors, contained by the GPU",
     .next_steps = "nvidia-smi -q -d ECC -i <gpu>\n"
                   "Restart the application that was running when the error hit\n"
                   "admin: reset the GPU when convenient (sudo nvidia-smi -r -i <gpu>, with no "
                   "process on it)\n"
                   "vendor: RMA if the SRAM threshold is exceeded or the errors come back",
     .explanation =
         "The volatile uncorrectable ECC errors are all in the GPU's SRAM (caches, register "
         "files), none in its DRAM, and the aggregate SRAM count is below NVIDIA's threshold. "
         "Such an error is contained: the GPU stops only the application that was using the "
         "affected unit (the kernel log shows Xid 94). NVIDIA's action is to restart that "
         "application while the GPU keeps serving the others, and to reset the GPU when "
         "convenient. An uncontained error (DRAM, Xid 95, or the threshold exceeded) is "
         "ECC_DBE_VOLATILE, a fault."},
    {.code = "ECC_DBE_CONTAINED",
     .severity = S::kWarning,
     .category = C::kMemory,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "Uncorrectable ECC errors the GPU contained (Xid 94)",
     .next_steps =
         "nvidia-smi -q -d ECC,ROW_REMAPPER -i <gpu>\n"
         "Restart the application that was running when the error hit (the kernel log's "
         "Xid 94 names its PID)\n"
         "admin: reset the GPU at its next idle window (sudo nvidia-smi -r -i <gpu>, with "
         "no process on it; gpuwarden reset --plan <gpu> lists what is in the way) so the "
         "pending row remap takes effect\n"
         "vendor: RMA if row remapping fails (Xid 64) or the errors come back",
     .explanation =
         "The volatile uncorrectable ECC counter is above 0, and the kernel log of the running "
         "driver shows the GPU contained the error: an Xid 94 whose text says no reset is "
         "needed (\"RST: No\"), and no Xid 95 or 140 on the same GPU. On Ampere and later GPUs a "
         "contained error stops only the application whose memory it hit; the row is marked "
         "for remapping and the GPU keeps serving the other applications. NVIDIA's resolution "
         "for Xid 94 is to restart that application; the reset that activates the remap can "
         "wait for the next idle window. An Xid 48 (double-bit error) on the same GPU is judged "
         "with this containment (XID_WARNING, not XID_FATAL). The counters, the memory Xids, "
         "the remapped rows and the retired pages are judged together (the memory_health "
         "evidence says what each showed); without the kernel log the count alone is "
         "ECC_DBE_VOLATILE."},
    {.code = "RETIRED_PAGES_PENDING",
     .severity = S::kWarning,
     .category = C::kMemory,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "A memory page retirement waits for a reset",
     .next_steps = "nvidia-smi -q -d PAGE_RETIREMENT -i <gpu>\n"
                   "admin: when the GPU is idle, reset it (sudo nvidia-smi -r -i <gpu>) or "
                   "reboot",
     .explanation =
         "The GPU marked memory pages to be retired (for ECC errors), but retirement only takes "
         "effect when the driver reloads. Until then the bad pages can still be used."},
    {.code = "RETIRED_PAGES_LIMIT",
     .severity = S::kCritical,
     .category = C::kMemory,
     .implies = V::kFault,
     .actor = A::kVendor,
     .title = "Too many retired memory pages",
     .next_steps = "nvidia-smi -q -d PAGE_RETIREMENT -i <gpu>\n"
                   "vendor: the GPU reached the page-retirement limit: RMA",
     .explanation =
         "Single-bit plus double-bit retired pages reach 63 (DCGM's limit; NVIDIA's RMA policy "
         "uses about 60 to 64). The GPU cannot retire more memory and should be replaced."},
    {.code = "RETIRED_PAGES_DBE",
     .severity = S::kWarning,
     .category = C::kMemory,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "Many pages retired for double-bit errors",
     .next_steps = "nvidia-smi -q -d PAGE_RETIREMENT -i <gpu>\n"
                   "admin: run dcgmi diag -r 3 when the GPU is idle and plan a replacement",
     .explanation =
         "More than 15 pages were retired for double-bit errors (DCGM's soft limit). The memory "
         "is failing faster than normal wear."},
    {.code = "ROW_REMAP_PENDING",
     .severity = S::kWarning,
     .category = C::kMemory,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "A row remap waits for a GPU reset",
     .next_steps = "nvidia-smi -q -d ROW_REMAPPER -i <gpu>\n"
                   "admin: reset it when idle (sudo nvidia-smi -r -i <gpu>, with no process on "
                   "it; gpuwarden reset --plan <gpu> lists what is in the way) to activate the "
                   "remap",
     .explanation =
         "Ampere and later GPUs repair failing memory rows by remapping them to spare rows. A "
         "remap is pending: it takes effect at the next GPU reset. Until then the GPU runs "
         "with the failing row; by NVIDIA's guidance it stays usable, so `why --need` and the "
         "queue still place work on it (last), unless [placement] use_remap_pending = false."},
    {.code = "ROW_REMAP_FAILED",
     .severity = S::kCritical,
     .category = C::kMemory,
     .implies = V::kFault,
     .actor = A::kVendor,
     .title = "Row remapping failed: the memory can no longer repair itself",
     .next_steps = "nvidia-smi -q -d ROW_REMAPPER -i <gpu>\n"
                   "Stop using the GPU\n"
                   "vendor: RMA",
     .explanation =
         "The row remapper reported a failure: a bank ran out of spare rows or a remapped row "
         "failed again. NVIDIA treats this as a reason to replace the GPU."},
    {.code = "ROW_REMAP_LIMIT",
     .severity = S::kCritical,
     .category = C::kMemory,
     .implies = V::kFault,
     .actor = A::kVendor,
     .title = "Too many rows remapped for uncorrectable errors",
     .next_steps = "nvidia-smi -q -d ROW_REMAPPER -i <gpu>\n"
                   "vendor: RMA",
     .explanation =
         "512 or more rows were remapped for uncorrectable errors (DCGM's limit): the spare "
         "rows are used up and the next failure cannot be repaired."},
    // ---- Bus and links -----------------------------------------------------
    {.code = "PCIE_LINK_DEGRADED",
     .severity = S::kWarning,
     .category = C::kBus,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "The PCIe link runs below its maximum under load",
     .next_steps = "nvidia-smi -q -d PCIE -i <gpu>   (current and maximum generation and width)\n"
                   "admin: reseat the card or riser, check the BIOS PCIe settings, run dcgmi "
                   "diag -r 2",
     .explanation =
         "While the GPU was busy (utilisation at or above 50 % in every loaded sample), its PCIe "
         "link ran at a lower generation or width than the maximum the GPU and the host "
         "support. At idle, links slow down on purpose to save power, so idle GPUs are never "
         "reported. Data transfers to and from the GPU are slower than they should be."},
    {.code = "PCIE_REPLAY_RATE",
     .severity = S::kWarning,
     .category = C::kBus,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "PCIe replays are rising faster than expected",
     .next_steps = "nvidia-smi -q -d PCIE -i <gpu>   (replays since reset)\n"
                   "admin: reseat the card or riser, check the slot, run dcgmi diag -r 2",
     .explanation =
         "The PCIe replay counter rose faster over the window than DCGM's expected rate: per "
         "lane per minute 0.15 (Gen1), 0.3 (Gen2), 0.48 (Gen3), 0.96 (Gen4), 1.92 (Gen5), 3.84 "
         "(Gen6), times the link width, and by at least 5. Needs two samples or more. Replays "
         "are retransmissions of corrupted packets: a marginal slot, riser or card."},
    {.code = "NVLINK_DOWN",
     .severity = S::kWarning,
     .category = C::kNvlink,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "NVLink links are down",
     .next_steps = "nvidia-smi nvlink -s -i <gpu>\n"
                   "admin: systemctl status nvidia-fabricmanager (NVSwitch systems); check the "
                   "bridges; reset the GPU\n"
                   "vendor: RMA if links stay down",
     .explanation =
         "An NVLink that was active earlier in the window is now inactive, or the GPU has fewer "
         "active links than the other GPUs of the same model (and more than none). Traffic "
         "between GPUs falls back to fewer links or to PCIe: multi-GPU jobs slow down or fail "
         "to start with NVLink."},
    // ---- Thermal and power -------------------------------------------------
    {.code = "HOT_WHILE_IDLE",
     .severity = S::kWarning,
     .category = C::kThermal,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "The GPU is hot while idle",
     .next_steps = "nvidia-smi -q -d TEMPERATURE,PERFORMANCE -i <gpu>\n"
                   "admin: check airflow, fans, dust and the room temperature",
     .explanation =
         "The GPU was at or above 80 C in every sample while its utilisation was at most 5 % "
         "and no process on it computed, and it was not cooling down (a GPU that just finished "
         "a job cools within a minute). An idle GPU normally sits far lower. The seed document "
         "names this as a sign of a hardware problem rather than load."},
    {.code = "FAN_HIGH_WHILE_IDLE",
     .severity = S::kWarning,
     .category = C::kThermal,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "The fans race while the GPU is idle",
     .next_steps = "nvidia-smi -q -d TEMPERATURE,PERFORMANCE -i <gpu>\n"
                   "admin: check the fans, airflow and any manual fan setting",
     .explanation =
         "The GPU's fan ran at or above 80 % in every sample of a window of at least two while "
         "its utilisation was at most 5 % and no process on it computed. Fans follow "
         "temperature; racing fans on an idle GPU point at a cooling or sensor problem, or at a "
         "fan speed set by hand. One sample (an offline dump, why --now) is not judged: one "
         "reading cannot tell those apart from a GPU that just finished a job."},
    {.code = "HW_SLOWDOWN",
     .severity = S::kWarning,
     .category = C::kHardware,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "Hardware slowdown is engaged",
     .next_steps = "nvidia-smi -q -d PERFORMANCE -i <gpu>\n"
                   "admin: check the power supply and cooling; run dcgmi diag -r 2",
     .explanation =
         "The HW Slowdown clock-event reason was active in every sample: the hardware cut the "
         "clocks by half or more, for high temperature, an external power brake or power draw "
         "spikes. Jobs run much slower. When the thermal or power-brake reason is also set, "
         "HW_THERMAL_SLOWDOWN or HW_POWER_BRAKE is reported instead."},
    {.code = "HW_THERMAL_SLOWDOWN",
     .severity = S::kWarning,
     .category = C::kThermal,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "Hardware thermal slowdown is engaged",
     .next_steps = "nvidia-smi -q -d TEMPERATURE,PERFORMANCE -i <gpu>\n"
                   "admin: check cooling, airflow and fans",
     .explanation =
         "The HW Thermal Slowdown clock-event reason was active in every sample: the GPU is too "
         "hot and the hardware itself cut the clocks."},
    {.code = "HW_POWER_BRAKE",
     .severity = S::kWarning,
     .category = C::kPower,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "The external power brake is engaged",
     .next_steps = "nvidia-smi -q -d PERFORMANCE -i <gpu>\n"
                   "admin: check the power supplies and the server's power capping (BMC)",
     .explanation =
         "The HW Power Brake Slowdown clock-event reason was active in every sample: the "
         "system (power supply or baseboard) asserted the power brake and the GPU runs at "
         "minimum clocks."},
    {.code = "SW_THERMAL_SLOWDOWN",
     .severity = S::kWarning,
     .category = C::kThermal,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "The driver slows the clocks because the GPU is too hot",
     .next_steps = "nvidia-smi -q -d TEMPERATURE,PERFORMANCE -i <gpu>\n"
                   "admin: improve cooling or airflow",
     .explanation =
         "The SW Thermal Slowdown clock-event reason was active in every sample: the GPU is "
         "above its maximum operating temperature and the driver lowers the clocks. Jobs run, "
         "slower."},
    {.code = "POWER_CAPPED",
     .severity = S::kInfo,
     .category = C::kPower,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "The clocks are held at a power limit lowered below the default",
     .next_steps = "nvidia-smi -q -d POWER -i <gpu>\n"
                   "admin: to change the limit: sudo nvidia-smi -i <gpu> -pl WATTS",
     .explanation =
         "The SW Power Cap clock-event reason was active in every sample and the enforced power "
         "limit is below 95 % of the board's default limit: someone lowered it, and the GPU "
         "runs slower than it could. Drawing up to the default limit under full load is the GPU "
         "working as designed and is not reported; neither is a limit whose default is "
         "unknown.\n\n"
         "If the limit was lowered on purpose (power budget, cooling), nothing is wrong."},
    // ---- Kernel log (Xid) --------------------------------------------------
    // Severity and verdict follow NVIDIA's immediate resolution (kmsg::XidImpact,
    // docs/xid-catalog.md); the category follows the Xid's cause.
    {.code = "XID_FATAL",
     .severity = S::kCritical,
     .category = C::kHardware,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "The driver logged an Xid that takes the GPU out of service",
     .next_steps = "sudo dmesg -T | grep -i xid\n"
                   "Stop using the GPU and tell the administrator\n"
                   "admin: drain it; reset the GPU or reboot as the Xid requires, then run dcgmi "
                   "diag -r 3\n"
                   "vendor: RMA if it recurs after a reset or reboot",
     .explanation =
         "The kernel log has, in the current boot and driver load, an Xid whose resolution in "
         "NVIDIA's catalog is to reset the GPU, reboot the node or VM, drain it or check its "
         "power cables: e.g. 48 (double-bit ECC), 54 (auxiliary power), 62 (PMU halt), 64 "
         "(row-remap failure), 74 (NVLink), 79 (fell off the bus), 95 (uncontained ECC), 109 "
         "(context-switch timeout: the application's, but the GPU needs a reset), 119 and 120 "
         "(GSP firmware), 136 (link training), 140 (unrecovered ECC), 143 (initialisation "
         "failure), 154 naming a reset or reboot. The finding's category is the Xid's cause: "
         "memory, bus, nvlink, driver (driver and GSP firmware), power, engine or "
         "application.\n\n"
         "The first step is NVIDIA's action for that Xid. Events of an earlier boot or driver "
         "load are history (XID_HISTORY); a GPU that fell off the bus and reads normally now is "
         "XID_RECOVERED.",
     .category_source = CategorySource::kXidCause},
    {.code = "XID_WARNING",
     .severity = S::kWarning,
     .category = C::kHardware,
     .implies = V::kDegraded,
     .actor = A::kAdmin,
     .title = "The driver logged an Xid that needs attention, not a stop",
     .next_steps = "sudo dmesg -T | grep -i xid\n"
                   "admin: reset the GPU when it is idle if the Xid asks for it; watch whether it "
                   "recurs; run dcgmi diag -r 2 when the GPU is idle",
     .explanation =
         "The kernel log has, in the current boot and driver load, an Xid after which the GPU "
         "still serves work but someone should act: 94 (a contained ECC error: restart the "
         "affected application, reset the GPU at its next idle window to remap the row), codes "
         "NVIDIA's catalog resolves by contacting support or updating the software (78, 142, "
         "163-170, and the codes it lists as unused), 154 whose new action cannot be read, and "
         "Xids NVIDIA's catalog does not list (unknown: category driver, never guessed to be "
         "hardware). The category is the Xid's cause."
         "\n\nThe GPU's verdict is DEGRADED: usable, not at full health.",
     .category_source = CategorySource::kXidCause},
    {.code = "XID_APPLICATION",
     .severity = S::kInfo,
     .category = C::kApplication,
     .implies = V::kOk,
     .actor = A::kUser,
     .title = "An application fault was logged (Xid)",
     .next_steps = "Check the program that ran on GPU <gpu> at that time\n"
                   "Find the bad memory access with compute-sanitizer your-command",
     .explanation =
         "The kernel log has an Xid that almost always comes from the application, not the "
         "GPU: 13 (graphics engine exception, e.g. an illegal address), 31 (GPU memory page "
         "fault), 43 (channel reset after an application fault), 45 (pre-emptive cleanup), 68 "
         "(video decoder exception): the Kubernetes device plugin's application set. The GPU "
         "stays healthy (109, the set's context-switch timeout, is XID_FATAL instead: NVIDIA "
         "resets the GPU after it). If the same Xid repeats on one GPU with known-good code, ask "
         "an administrator to run diagnostics.",
     .category_source = CategorySource::kXidCause},
    {.code = "XID_OTHER",
     .severity = S::kInfo,
     .category = C::kHardware,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "The driver logged an Xid that needs no action by itself",
     .next_steps = "sudo dmesg -T | grep -i xid\n"
                   "Look the number up in NVIDIA's Xid catalog: "
                   "https://docs.nvidia.com/deploy/xid-errors/",
     .explanation =
         "The kernel log has an Xid whose resolution in NVIDIA's catalog is to ignore it or to "
         "restart the application, from a cause other than the application: an engine's "
         "exception (copy engines CE0-CE19: 39-41, 70-72, 75-77, 85, 126-135; video, JPEG and "
         "optical-flow engines; graphics and push-buffer errors: 8, 11, 25, 32, 44, 69, 80), "
         "informational memory events (63, a row marked for remapping; 92, a high single-bit "
         "error rate: monitor), firmware notices (37, 38, 66, 67, 93), 121, 137, 157, 160, 161, "
         "162, a non-fatal NVLink5 error (144-150 marked Nonfatal), or 154 changing the "
         "recovery action to none. It does not change the verdict; the category is the Xid's "
         "cause.",
     .category_source = CategorySource::kXidCause},
    {.code = "XID_RECOVERED",
     .severity = S::kInfo,
     .category = C::kBus,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "A GPU fell off the bus earlier and reads normally now",
     .next_steps = "sudo dmesg -T | grep -iE 'xid|fallen off'\n"
                   "admin: if it happens again, check power, cooling, the riser and the PCIe "
                   "seating; run dcgmi diag -r 3 on GPU <gpu>",
     .explanation =
         "The kernel log of the current boot says the GPU fell off the bus (Xid 79 or the "
         "driver's \"GPU has fallen off the bus\" notice), yet NVML (or the dump) reads the GPU "
         "normally now: it is listed, reachable and reports its memory or utilisation. It has "
         "been recovered (a GPU reset, a re-plug or a hot-plug of the link) and serves work; "
         "the event is history, not a fault.\n\n"
         "A GPU that falls off the bus more than once is a hardware suspect: the kernel-log "
         "escalation (gpuwarden events) names GPUs that do it across reboots.",
     .category_source = CategorySource::kXidCause},
    {.code = "XID_HISTORY",
     .severity = S::kInfo,
     .category = C::kHardware,
     .implies = V::kOk,
     .actor = A::kAdmin,
     .title = "Older kernel-log GPU events (history, not today's state)",
     .next_steps = "gpuwarden events\n"
                   "admin: if the same Xid comes back after reboots, have the GPU inspected",
     .explanation =
         "The kernel log has Xids (or fell-off-the-bus and initialisation-failure notices) that "
         "do not describe the server now: logged in an earlier boot, before the NVIDIA driver "
         "was last loaded, or more than 7 days before the snapshot (the event-age rules in "
         "docs/diagnosis.md). A reboot or a driver reload re-initialises every GPU, so what "
         "happened before says nothing about the GPU's state today; NVML's own counters (ECC, "
         "row remapping, retired pages) carry what persists. They are listed, never a verdict. "
         "The category is that of the most serious Xid listed.",
     .category_source = CategorySource::kXidCause},
    {.code = "GPU_MISSING",
     .severity = S::kCritical,
     .category = C::kHardware,
     .implies = V::kFault,
     .actor = A::kAdmin,
     .title = "A GPU the kernel saw is not listed by NVML",
     .next_steps = "nvidia-smi -L; lspci -d 10de: (the GPUs on the PCI bus)\n"
                   "sudo dmesg -T | grep -iE 'NVRM|RmInitAdapter|fallen off|probe routine'\n"
                   "admin: reset the GPU or reboot the node; check its power cables, seating and "
                   "riser; update the driver if RmInitAdapter failed\n"
                   "vendor: RMA if it stays missing after a reboot",
     .explanation =
         "The kernel saw a GPU that NVML (or the nvidia-smi dump) does not list: in the current "
         "boot the driver failed to initialise it (RmInitAdapter failed), found it fallen off "
         "the bus at probe, or logged an Xid for its PCI address; or, live, the driver lists it "
         "under /proc/driver/nvidia/gpus; or, at its current load, the driver's probe routine "
         "failed for more devices than the log names. The finding names the GPU by its PCI bus "
         "id (or its device minor number when the driver printed no bus id, or only the count "
         "of the probe failure).\n\n"
         "A GPU that vanished is a server fault: the server has fewer GPUs than it should, and "
         "the others may follow (power, a PCIe switch). Only current events count; a GPU "
         "removed since an earlier boot is history.",
     .category_source = CategorySource::kFixed},
};

constexpr std::array<std::string_view, 7> kPlaceholders = {"<gpu>",  "<pid>",  "<ppid>", "<pgid>",
                                                           "<gpus>", "<need>", "<job>"};

}  // namespace

std::span<const FindingSpec> AllSpecs() { return kSpecs; }

const FindingSpec* FindSpec(std::string_view code) {
  for (const FindingSpec& spec : kSpecs) {
    if (spec.code == code) return &spec;
  }
  return nullptr;
}

std::span<const std::string_view> KnownPlaceholders() { return kPlaceholders; }

std::vector<std::string> SplitSteps(std::string_view next_steps) {
  std::vector<std::string> steps;
  while (!next_steps.empty()) {
    size_t end = next_steps.find('\n');
    std::string_view step = next_steps.substr(0, end);
    if (!step.empty()) steps.emplace_back(step);
    if (end == std::string_view::npos) break;
    next_steps.remove_prefix(end + 1);
  }
  return steps;
}

std::vector<std::string> ExpandSteps(const FindingSpec& spec, const StepValues& values) {
  auto text = [](const auto& v) -> std::optional<std::string> {
    if (!v) return std::nullopt;
    return fmt::format("{}", *v);
  };
  const std::array<std::optional<std::string>, 7> filled = {
      values.gpu,  text(values.pid), text(values.ppid), text(values.pgid),
      values.gpus, values.need,      values.job};
  std::vector<std::string> out;
  std::string_view rest = spec.next_steps;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view step = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (step.empty()) continue;
    std::string expanded;
    expanded.reserve(step.size() + 16);
    bool complete = true;
    while (complete && !step.empty()) {
      const size_t open = step.find('<');
      expanded.append(step.substr(0, open));
      if (open == std::string_view::npos) break;
      step.remove_prefix(open);
      size_t k = 0;
      while (k < kPlaceholders.size() &&
             step.substr(0, kPlaceholders[k].size()) != kPlaceholders[k]) {
        ++k;
      }
      if (k == kPlaceholders.size()) {  // A plain '<'.
        expanded.push_back('<');
        step.remove_prefix(1);
      } else if (!filled[k]) {
        complete = false;
      } else {
        expanded.append(*filled[k]);
        step.remove_prefix(kPlaceholders[k].size());
      }
    }
    if (complete) out.push_back(std::move(expanded));
  }
  return out;
}

}  // namespace gw::diagnose
