#include "cli/slurm_queue_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/terminal.h"
#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"
#include "os/errno_text.h"
#include "os/file_io.h"
#include "os/unique_fd.h"
#include "proc/users.h"
#include "render/text_table.h"
#include "slurm/cluster_view.h"
#include "slurm/pending_reasons.h"
#include "slurm/sbatch.h"
#include "slurm/slurm_reader.h"

namespace gw::cli {
namespace {

constexpr char kJobsSchema[] = "gpuwarden.slurm_jobs";

// Slurm's own words are in these messages.
int FailSanitized(int code, const std::string& message) {
  return Fail(code, SanitizeForTerminal(message));
}

os::CommandOptions Deadline(double seconds) {
  os::CommandOptions o;
  o.timeout_ms = static_cast<int>(seconds * 1000);
  return o;
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line;
}

// A Slurm client that could not be run, or ran and failed: one line, exit 20.
int SlurmUnavailable(const std::string& message) {
  return FailSanitized(kExitSlurmUnavailable, "cannot ask Slurm: " + message);
}

// The wrapper script sbatch is given (slurm::kExecScript), removed once
// sbatch has read it.
class TempScript {
 public:
  static Result<TempScript> Write() {
    const char* tmp = std::getenv("TMPDIR");
    std::string path =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gpuwarden-sbatch-XXXXXX";
    os::UniqueFd fd(mkstemp(path.data()));
    if (!fd.valid()) return MakeError("io", path + ": " + os::ErrnoText(errno));
    TempScript script(path);
    if (!os::WriteAll(fd.get(), slurm::kExecScript) || fchmod(fd.get(), 0700) != 0) {
      return MakeError("io", path + ": " + os::ErrnoText(errno));
    }
    return script;
  }
  TempScript(TempScript&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempScript(const TempScript&) = delete;
  TempScript& operator=(const TempScript&) = delete;
  ~TempScript() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempScript(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Prints what a job's output file gained since the last call.
class OutputTail {
 public:
  void Drain(const std::string& path) {
    if (path.empty() || path == "(null)") return;
    os::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return;  // Not created yet.
    char buf[65536];
    for (;;) {
      const ssize_t n = pread(fd.get(), buf, sizeof buf, static_cast<off_t>(offset_));
      if (n <= 0) break;
      std::fwrite(buf, 1, static_cast<size_t>(n), stdout);
      offset_ += static_cast<uint64_t>(n);
    }
    std::fflush(stdout);
  }

 private:
  uint64_t offset_ = 0;
};

// The local queue's options that have no Slurm request here; nullopt = none.
std::optional<std::string> NotForSlurm(const queue::JobSpec& spec) {
  if (spec.priority != 0) return "--priority: Slurm's own priority decides (sbatch --nice)";
  if (spec.window) return "--window: Slurm decides when jobs start (sbatch --begin)";
  if (spec.max_util_pct) return "--max-util: Slurm gives whole GPUs to one job";
  if (spec.nvlink) return "--nvlink: ask for your cluster's node features (sbatch --constraint)";
  if (spec.preemptible) return "--preemptible: preemption is the cluster's policy (PreemptMode)";
  return std::nullopt;
}

int WaitForJob(int64_t id, double timeout_s, os::CommandRunner& runner) {
  const std::string id_text = std::to_string(id);
  std::fprintf(stderr, "gpuwarden: Slurm job %lld submitted\n", static_cast<long long>(id));
  CatchInterrupts();
  OutputTail tail;
  std::string last_state;
  std::string last_reason;
  int interrupted_by = 0;
  int failures = 0;
  auto pause = std::chrono::milliseconds(200);
  for (;;) {
    if (const int sig = TakeInterrupt(); sig != 0) {
      if (interrupted_by != 0) {
        std::fprintf(stderr, "gpuwarden: Slurm job %lld is still stopping; no longer waiting\n",
                     static_cast<long long>(id));
        return 128 + interrupted_by;
      }
      interrupted_by = sig;
      std::fprintf(stderr, "\ngpuwarden: cancelling Slurm job %lld (again to stop waiting)\n",
                   static_cast<long long>(id));
      Result<os::CommandOutput> c = runner.Run({"scancel", id_text}, Deadline(timeout_s));
      if (!c.ok()) return SlurmUnavailable(c.error().message);
    }
    Result<os::CommandOutput> shown =
        runner.Run({"scontrol", "-o", "show", "job", id_text}, Deadline(timeout_s));
    if (!shown.ok() || !shown->succeeded()) {
      // A controller that restarts, a slow answer: a few tries before giving up.
      const std::string why = shown.ok() ? "scontrol " + shown->Describe() : shown.error().message;
      if (shown.ok() && shown->err.find("Invalid job id") != std::string::npos) {
        return FailSanitized(1, "Slurm no longer knows job " + id_text + " (it ended long ago?)");
      }
      if (++failures >= 5) return SlurmUnavailable(why);
    } else {
      failures = 0;
      const std::map<std::string, std::string> job =
          slurm::ParseScontrolRecord(FirstLine(shown->out));
      auto field = [&job](const char* key) {
        auto it = job.find(key);
        return it == job.end() ? std::string() : it->second;
      };
      const std::string state = field("JobState");
      const std::string reason = field("Reason");
      tail.Drain(field("StdOut"));
      if (std::optional<slurm::SlurmJobEnd> end =
              slurm::DescribeSlurmJobEnd(id, state, field("ExitCode"))) {
        tail.Drain(field("StdOut"));
        if (last_state != "RUNNING" && !field("NodeList").empty() &&
            field("NodeList") != "(null)") {
          std::fprintf(stderr, "gpuwarden: Slurm job %lld ran on %s\n", static_cast<long long>(id),
                       SanitizeForTerminal(field("NodeList")).c_str());
        }
        std::fprintf(stderr, "gpuwarden: %s\n", SanitizeForTerminal(end->line).c_str());
        return interrupted_by != 0 ? 128 + interrupted_by : end->exit_code;
      }
      // "None": not looked at yet, which a new job always is for a moment.
      if (state == "PENDING" && reason != last_reason && reason != "None") {
        const slurm::PendingReason* known = slurm::FindPendingReason(reason);
        std::fprintf(stderr, "gpuwarden: Slurm job %lld waits: %s%s%s\n",
                     static_cast<long long>(id), SanitizeForTerminal(reason).c_str(),
                     known != nullptr ? " — " : "", known != nullptr ? known->meaning.c_str() : "");
        last_reason = reason;
      }
      if (state == "RUNNING" && last_state != "RUNNING") {
        std::fprintf(stderr, "gpuwarden: Slurm job %lld running on %s\n",
                     static_cast<long long>(id), SanitizeForTerminal(field("NodeList")).c_str());
      }
      last_state = state;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

// One job as `queue --slurm` and `jobs --slurm` show it.
struct JobRow {
  std::string id, user, name, state, gpus, where, age;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

JobRow RowOf(const slurm::Job& j, int64_t now_s) {
  JobRow r;
  r.id = std::to_string(j.id);
  r.user = SanitizeForTerminal(j.user.value_or("?"));
  r.name = SanitizeForTerminal(j.name.value_or(""));
  const std::string state = j.state.value_or("?");
  r.state = state == "PENDING" ? "waiting" : Lower(SanitizeForTerminal(state));
  r.gpus = slurm::DescribeGpuRequest(j);
  if (state == "PENDING") {
    const std::string code = j.reason.value_or("");
    const slurm::PendingReason* known = slurm::FindPendingReason(code);
    r.where = SanitizeForTerminal(code) + (known != nullptr ? ": " + known->meaning : "");
  } else {
    r.where = SanitizeForTerminal(j.nodes.value_or("-"));
  }
  const std::optional<int64_t> since = state == "PENDING" ? j.submit_time : j.start_time;
  r.age = since && *since <= now_s ? FormatDuration(static_cast<double>(now_s - *since)) : "-";
  return r;
}

nlohmann::json JobJson(const slurm::Job& j) {
  const slurm::PendingReason* known =
      j.state == "PENDING" ? slurm::FindPendingReason(j.reason.value_or("")) : nullptr;
  return {{"id", j.id},
          {"user", JsonOrNull(j.user)},
          {"name", JsonOrNull(j.name)},
          {"state", JsonOrNull(j.state)},
          {"partition", JsonOrNull(j.partition)},
          {"wants", slurm::DescribeGpuRequest(j)},
          {"nodes", JsonOrNull(j.nodes)},
          {"reason", j.state == "PENDING" ? JsonOrNull(j.reason) : nlohmann::json(nullptr)},
          {"reason_meaning",
           known != nullptr ? nlohmann::json(known->meaning) : nlohmann::json(nullptr)},
          {"submit_unix_s", JsonOrNull(j.submit_time)},
          {"start_unix_s", JsonOrNull(j.start_time)}};
}

int ListJobs(const QueueArgs& args, os::CommandRunner& runner, bool only_mine) {
  slurm::ReaderOptions options;
  options.timeout_ms = static_cast<int>(args.slurm_timeout_s * 1000);
  Result<slurm::SlurmLook> look = slurm::ReadSlurm(runner, options);
  if (!look.ok()) return SlurmUnavailable(look.error().message);
  std::optional<std::string> me;
  if (only_mine) me = proc::UserNameOrUid(getuid());
  std::vector<const slurm::Job*> shown;
  for (const slurm::Job& j : look->squeue.jobs) {
    if (me && j.user != me) continue;
    // queue: what runs and what waits; jobs: whatever squeue still lists.
    if (!only_mine && j.state != "PENDING" && j.state != "RUNNING") continue;
    shown.push_back(&j);
  }
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const slurm::Job* j : shown) list.push_back(JobJson(*j));
    nlohmann::json doc = {{"schema", kJobsSchema},
                          {"schema_version", 1},
                          {"slurm", JsonOrNull(look->squeue.meta.release)},
                          {"jobs", std::move(list)}};
    std::printf("%s\n", DumpJsonForTerminal(doc, /*pretty=*/true, kJobsSchema).c_str());
    return kExitOk;
  }
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  size_t running = 0, waiting = 0;
  std::vector<JobRow> rows;
  for (const slurm::Job* j : shown) {
    running += j->state == "RUNNING";
    waiting += j->state == "PENDING";
    rows.push_back(RowOf(*j, now));
  }
  std::printf("Slurm %s: %zu running, %zu waiting%s\n",
              SanitizeForTerminal(look->squeue.meta.release.value_or("?")).c_str(), running,
              waiting, me ? (" (jobs of " + SanitizeForTerminal(*me) + ")").c_str() : "");
  if (rows.empty()) return kExitOk;
  std::vector<std::vector<std::string>> table = {
      {"JOB", "USER", "NAME", "STATE", "GPUS", "FOR", "WHERE / WHY"}};
  for (const JobRow& r : rows)
    table.push_back({r.id, r.user, r.name, r.state, r.gpus, r.age, r.where});
  std::fputs(render::TextTable(table).c_str(), stdout);
  return kExitOk;
}

}  // namespace

int RunSlurmSubmit(const RunArgs& args, os::CommandRunner& runner) {
  queue::JobSpec spec;
  if (std::optional<int> refused = SpecFromRunArgs(args, spec)) return *refused;
  if (std::optional<std::string> why = NotForSlurm(spec)) {
    return FailSanitized(kExitUsage, *why + "; not with --slurm");
  }
  slurm::ClusterView view;
  if (spec.gpus > 0) {
    slurm::ReaderOptions options;
    options.timeout_ms = static_cast<int>(args.slurm_timeout_s * 1000);
    Result<slurm::SlurmLook> look = slurm::ReadSlurm(runner, options);
    if (!look.ok()) return SlurmUnavailable(look.error().message);
    view = slurm::BuildClusterView(look->sinfo, look->squeue);
  }
  Result<TempScript> script = TempScript::Write();
  if (!script.ok())
    return FailSanitized(kExitInternal, "cannot write the batch script: " + script.error().message);
  slurm::SlurmSubmit submit;
  submit.command = spec.argv;
  submit.name = spec.name;
  submit.gpus = spec.gpus;
  submit.vram_bytes = spec.vram_bytes;
  submit.time_limit_s = spec.time_limit_s;
  submit.after = spec.after;
  submit.cwd = spec.cwd;
  submit.script_path = script->path();
  Result<slurm::SbatchPlan> plan = slurm::PlanSbatch(submit, spec.gpus > 0 ? &view : nullptr);
  if (!plan.ok())
    return FailSanitized(kExitUnsatisfiable, plan.error().message + "; not submitted");
  for (const std::string& note : plan->notes) std::fprintf(stderr, "gpuwarden: %s\n", note.c_str());
  Result<os::CommandOutput> sbatch = runner.Run(plan->argv, Deadline(args.slurm_timeout_s));
  if (!sbatch.ok()) return SlurmUnavailable(sbatch.error().message);
  if (!sbatch->succeeded()) {
    const std::string said = FirstLine(sbatch->err.empty() ? sbatch->out : sbatch->err);
    const bool never =
        said.find("Requested node configuration is not available") != std::string::npos;
    return FailSanitized(never ? kExitUnsatisfiable : kExitRefusedByDaemon,
                         "Slurm refused the job: " + (said.empty() ? sbatch->Describe() : said));
  }
  Result<int64_t> id = slurm::ParseSbatchJobId(sbatch->out);
  if (!id.ok()) return SlurmUnavailable(id.error().message);
  const bool wait = args.wait || (!args.detach && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO));
  if (!wait) {
    std::printf("%lld\n", static_cast<long long>(*id));
    return kExitOk;
  }
  return WaitForJob(*id, args.slurm_timeout_s, runner);
}

int RunSlurmQueue(const QueueArgs& args, os::CommandRunner& runner) {
  return ListJobs(args, runner, /*only_mine=*/false);
}

int RunSlurmJobs(const QueueArgs& args, os::CommandRunner& runner) {
  if (!args.ids.empty())
    return FailSanitized(kExitUsage, "jobs --slurm: lists your jobs; name none");
  return ListJobs(args, runner, /*only_mine=*/true);
}

int RunSlurmCancel(const QueueArgs& args, os::CommandRunner& runner) {
  int code = kExitOk;
  for (int64_t id : args.ids) {
    // scancel is silent about a job it does not know: look first.
    Result<os::CommandOutput> shown = runner.Run(
        {"scontrol", "-o", "show", "job", std::to_string(id)}, Deadline(args.slurm_timeout_s));
    if (!shown.ok()) return SlurmUnavailable(shown.error().message);
    if (!shown->succeeded()) {
      const bool unknown = shown->err.find("Invalid job id") != std::string::npos;
      std::fprintf(stderr, "gpuwarden: Slurm job %lld: %s\n", static_cast<long long>(id),
                   unknown ? "no such job" : SanitizeForTerminal(FirstLine(shown->err)).c_str());
      code = kExitRefusedByDaemon;
      continue;
    }
    const std::map<std::string, std::string> job =
        slurm::ParseScontrolRecord(FirstLine(shown->out));
    const std::string state = job.count("JobState") ? job.at("JobState") : "";
    if (slurm::DescribeSlurmJobEnd(id, state, "0:0")) {
      std::fprintf(stderr, "gpuwarden: Slurm job %lld: already ended (%s)\n",
                   static_cast<long long>(id), SanitizeForTerminal(state).c_str());
      code = kExitRefusedByDaemon;
      continue;
    }
    Result<os::CommandOutput> r =
        runner.Run({"scancel", std::to_string(id)}, Deadline(args.slurm_timeout_s));
    if (!r.ok()) return SlurmUnavailable(r.error().message);
    // scancel says what went wrong on stderr, with or without a failing status.
    const std::string said = FirstLine(r->err);
    if (!r->succeeded() || !said.empty()) {
      std::fprintf(stderr, "gpuwarden: Slurm job %lld: %s\n", static_cast<long long>(id),
                   SanitizeForTerminal(said.empty() ? r->Describe() : said).c_str());
      code = kExitRefusedByDaemon;
      continue;
    }
    std::printf("Slurm job %lld: %s\n", static_cast<long long>(id),
                state == "PENDING" ? "cancelled" : "cancelling (Slurm signals it, then ends it)");
  }
  return code;
}

int RunParsedSlurmSubcommand(const QueueCommands& q, os::CommandRunner& runner) {
  auto parsed = [](const CLI::App* sub) { return sub != nullptr && sub->parsed(); };
  if (parsed(q.run)) return RunSlurmSubmit(q.run_args, runner);
  if (parsed(q.queue)) return RunSlurmQueue(q.queue_args, runner);
  if (parsed(q.jobs)) return RunSlurmJobs(q.queue_args, runner);
  auto cancel = q.controls.find("cancel");
  if (cancel != q.controls.end() && parsed(cancel->second))
    return RunSlurmCancel(q.queue_args, runner);
  return FailSanitized(kExitUsage, "--slurm: only run, queue, jobs and cancel");
}

}  // namespace gw::cli
