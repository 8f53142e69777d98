#include "capacity/power.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/units.h"
#include "slurm/hostlist.h"

namespace gw::capacity {
namespace {

constexpr char kPlaceholder[] = "{node}";

Error Usage(const std::string& message) { return MakeError("usage", message); }

bool ValidNodeName(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string Replace(std::string text, const std::string& node) {
  for (size_t at = text.find(kPlaceholder); at != std::string::npos;
       at = text.find(kPlaceholder, at + node.size())) {
    text.replace(at, sizeof kPlaceholder - 1, node);
  }
  return text;
}

}  // namespace

Result<PowerArgs> ParsePowerArgs(const std::vector<std::string>& argv) {
  PowerArgs a;
  size_t i = 0;
  if (i >= argv.size() || (argv[i] != "resume" && argv[i] != "suspend")) {
    return Usage("the first argument must be resume or suspend");
  }
  a.action = argv[i++];
  if (i >= argv.size() || argv[i].empty() || argv[i][0] == '-') {
    return Usage(a.action + ": the nodes to " + a.action + " (a Slurm hostlist) must follow");
  }
  a.hostlist = argv[i++];
  for (; i < argv.size() && argv[i] != "--"; ++i) {
    const std::string& flag = argv[i];
    if (i + 1 >= argv.size() || argv[i + 1] == "--") return Usage(flag + ": a value must follow");
    const std::string& value = argv[++i];
    if (flag == "--timeout") {
      Result<double> s = ParseDuration(value);
      if (!s.ok() || *s <= 0) {
        return Usage("--timeout: \"" + value +
                     "\" is not a duration: 30s, 5m, 2h or plain seconds");
      }
      if (*s < 0.001 || *s > kMaxPowerTimeoutS) {
        return Usage("--timeout: \"" + value + "\" is outside 1 ms to 1d");
      }
      a.timeout_s = *s;
    } else if (flag == "--parallel") {
      const bool digits = !value.empty() && value.size() < 5 &&
                          value.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoi(value) < 1) {
        return Usage("--parallel: \"" + value + "\" is not a whole number above 0");
      }
      a.parallel = std::stoi(value);
    } else if (flag == "--log") {
      a.log_path = value;
    } else {
      return Usage("unknown option " + flag + " (--timeout, --parallel, --log, then -- COMMAND)");
    }
  }
  if (i >= argv.size() || i + 1 >= argv.size()) {
    return Usage("the command to run per node must follow \"--\"");
  }
  a.command.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
  const std::string& program = a.command[0];
  if (program.rfind("FILL-IN", 0) == 0) {
    return Usage("the " + a.action + " command is not filled in: edit the template (" + program +
                 ", docs/capacity.md)");
  }
  if (program.empty() || program[0] != '/') {
    return Usage("the command must be an absolute path (Slurm runs " + a.action +
                 " with no PATH): \"" + program + "\"");
  }
  const bool names_node = std::any_of(a.command.begin(), a.command.end(), [](const std::string& s) {
    return s.find(kPlaceholder) != std::string::npos;
  });
  if (!names_node) return Usage("the command must name the node: put {node} where it goes");
  return a;
}

Result<std::vector<NodeCommand>> PlanPower(const PowerArgs& args) {
  Result<std::vector<std::string>> nodes = slurm::ExpandHostlist(args.hostlist, 100000);
  if (!nodes.ok()) return Usage(nodes.error().message);
  if (nodes->empty()) return Usage("no node in \"" + args.hostlist + "\"");
  std::vector<NodeCommand> plan;
  for (const std::string& node : *nodes) {
    if (!ValidNodeName(node)) return Usage("\"" + node + "\" is not a node name");
    NodeCommand c;
    c.node = node;
    for (const std::string& arg : args.command) c.argv.push_back(Replace(arg, node));
    plan.push_back(std::move(c));
  }
  return plan;
}

std::vector<NodeOutcome> RunPowerPlan(const std::vector<NodeCommand>& plan, const PowerArgs& args,
                                      os::CommandRunner& runner,
                                      const std::function<void(const std::string&)>& log) {
  std::vector<NodeOutcome> outcomes(plan.size());
  std::atomic<size_t> next{0};
  std::mutex log_mutex;
  auto work = [&] {
    for (size_t i = next++; i < plan.size(); i = next++) {
      const NodeCommand& c = plan[i];
      os::CommandOptions o;
      o.timeout_ms = static_cast<int>(args.timeout_s * 1000);
      const auto start = std::chrono::steady_clock::now();
      Result<os::CommandOutput> r = runner.Run(c.argv, o);
      const double took =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      NodeOutcome& out = outcomes[i];
      out.node = c.node;
      if (!r.ok()) {
        out.detail = r.error().message;
      } else {
        out.ok = r->succeeded();
        out.detail = fmt::format("{} in {:.1f} s", r->Describe(), took);
      }
      const std::lock_guard<std::mutex> lock(log_mutex);
      log(fmt::format("{} {}: {} {}", args.action, c.node, out.ok ? "done," : "FAILED,",
                      out.detail));
    }
  };
  const size_t workers = std::min<size_t>(static_cast<size_t>(args.parallel), plan.size());
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return outcomes;
}

int RunPower(const std::vector<std::string>& argv, os::CommandRunner& runner,
             const std::function<void(const std::string&)>& log) {
  Result<PowerArgs> args = ParsePowerArgs(argv);
  if (!args.ok()) {
    log("refused: " + args.error().message);
    return kPowerExitUsage;
  }
  Result<std::vector<NodeCommand>> plan = PlanPower(*args);
  if (!plan.ok()) {
    log(args->action + " " + args->hostlist + " refused: " + plan.error().message);
    return kPowerExitUsage;
  }
  log(fmt::format("{} {}: {} node{}", args->action, args->hostlist, plan->size(),
                  plan->size() == 1 ? "" : "s"));
  const std::vector<NodeOutcome> outcomes = RunPowerPlan(*plan, *args, runner, log);
  const bool all_ok =
      std::all_of(outcomes.begin(), outcomes.end(), [](const NodeOutcome& o) { return o.ok; });
  return all_ok ? kPowerExitOk : kPowerExitFailed;
}

}  // namespace gw::capacity
