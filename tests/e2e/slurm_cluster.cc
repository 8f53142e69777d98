#include "e2e/slurm_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "e2e/user_process.h"
#include "slurm/slurm_json.h"
#include "test_paths.h"

namespace gw::test {
namespace {

namespace fs = std::filesystem;

constexpr char kSbin[] = "/usr/sbin/";
constexpr char kBin[] = "/usr/bin/";
const char* const kDaemons[] = {"munged", "slurmctld", "slurmd", "slurmdbd", "mariadbd"};
const char* const kClients[] = {"munge",    "sinfo",    "squeue", "sbatch",  "scancel",
                                "scontrol", "sacctmgr", "sprio",  "mariadb", "mariadb-install-db",
                                "sacct"};

// Daemons get this long to register; the first start on a cold cache is the
// slowest (about 1-3 s when warm).
constexpr double kStartTimeoutS = 60;
constexpr double kPollIntervalS = 0.1;

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// A TCP port on 127.0.0.1 free right now (the kernel's pick for port 0).
std::optional<int> FreePort(std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = ErrnoText("socket");
    return std::nullopt;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  std::optional<int> port;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = ErrnoText("bind 127.0.0.1:0");
  } else if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *error = ErrnoText("getsockname");
  } else {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool WriteFile(const std::string& path, const std::string& content, mode_t mode,
               std::string* error) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) {
      *error = "cannot write " + path;
      return false;
    }
  }
  if (chmod(path.c_str(), mode) != 0) {
    *error = ErrnoText("chmod " + path);
    return false;
  }
  return true;
}

bool MakeDir(const std::string& path, mode_t mode, std::string* error) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) {
    *error = "mkdir " + path + ": " + ec.message();
    return false;
  }
  if (chmod(path.c_str(), mode) != 0) {
    *error = ErrnoText("chmod " + path);
    return false;
  }
  return true;
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  if (!in) return "";
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "    " + l + "\n";
  return out;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

bool IsFinished(const std::optional<std::string>& state) {
  static const std::set<std::string> kFinished = {"COMPLETED", "CANCELLED",     "FAILED",
                                                  "TIMEOUT",   "NODE_FAIL",     "PREEMPTED",
                                                  "BOOT_FAIL", "OUT_OF_MEMORY", "DEADLINE"};
  return state && kFinished.count(*state) > 0;
}

// PIDs of processes whose environment holds exactly `entry` ("KEY=value").
std::vector<pid_t> PidsWithEnvironment(const std::string& entry) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator("/proc", ec)) {
    const std::string name = d.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream in(ReadFileOrEmpty(d.path() / "environ"));
    for (std::string var; std::getline(in, var, '\0');) {
      if (var == entry) {
        pids.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
    }
  }
  return pids;
}

}  // namespace

std::vector<SlurmNodeSpec> DefaultSlurmNodes() {
  return {{"n1", "a100", 2, 4}, {"n2", "a100", 2, 4}, {"n3", "l40s", 2, 4}, {"n4", "", 0, 2, true}};
}

std::optional<std::string> SlurmUnavailableReason() {
  std::vector<std::string> missing;
  for (const char* d : kDaemons) {
    if (access((std::string(kSbin) + d).c_str(), X_OK) != 0)
      missing.push_back(kSbin + std::string(d));
  }
  for (const char* c : kClients) {
    if (access((std::string(kBin) + c).c_str(), X_OK) != 0)
      missing.push_back(kBin + std::string(c));
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return "Slurm is not installed (missing " + list +
           "; scripts/setup.sh installs munge slurmctld slurmd slurm-client slurmdbd "
           "mariadb-server-core mariadb-client-core)";
  }
  if (geteuid() != 0) return "the Slurm test cluster needs root (mknod, slurmd)";
  return std::nullopt;
}

std::unique_ptr<SlurmCluster> SlurmCluster::Start(const std::vector<SlurmNodeSpec>& nodes,
                                                  std::string* error) {
  std::unique_ptr<SlurmCluster> cluster(new SlurmCluster());
  cluster->nodes_ = nodes;
  const auto start = std::chrono::steady_clock::now();
  if (!cluster->Launch(error)) {
    *error += "\n" + cluster->LogTails();
    return nullptr;  // The destructor stops what was started.
  }
  cluster->startup_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return cluster;
}

bool SlurmCluster::Launch(std::string* error) {
  const std::string d = dir_.path();
  if (d.empty()) {
    *error = "cannot create a temp directory";
    return false;
  }
  // munged insists that everyone may search the directories above its socket.
  if (chmod(d.c_str(), 0755) != 0) {
    *error = ErrnoText("chmod " + d);
    return false;
  }
  const std::string log = d + "/log";
  if (!MakeDir(log, 0755, error) || !MakeDir(d + "/munge", 0755, error) ||
      !MakeDir(d + "/munge-key", 0700, error) || !MakeDir(d + "/state", 0700, error) ||
      !MakeDir(d + "/jobs", 0755, error)) {
    return false;
  }

  // munge: a key of our own, so that no other munged can vouch for us.
  std::string key(1024, '\0');
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    if (!random.read(key.data(), static_cast<std::streamsize>(key.size()))) {
      *error = "cannot read /dev/urandom";
      return false;
    }
  }
  const std::string key_file = d + "/munge-key/munge.key";
  if (!WriteFile(key_file, key, 0600, error)) return false;
  munge_socket_ = d + "/munge/munge.socket";
  TestChild::Options munged_options;
  munged_options.output = log + "/munged.log";
  daemons_.push_back(std::make_unique<TestChild>(
      std::vector<std::string>{std::string(kSbin) + "munged", "--foreground",
                               "--socket=" + munge_socket_, "--key-file=" + key_file,
                               "--pid-file=" + d + "/munge/munged.pid",
                               "--seed-file=" + d + "/munge/munged.seed"},
      munged_options));
  daemon_names_.push_back("munged");
  if (daemons_.back()->pid() < 0) {
    *error = "cannot start munged: " + std::string(std::strerror(daemons_.back()->start_error()));
    return false;
  }
  RunOptions munge_check;
  munge_check.timeout_s = 5;
  const bool munge_up = WaitUntil(
      [&] {
        return RunProcess({std::string(kBin) + "munge", "-n", "-S", munge_socket_}, munge_check)
                   .exit_code == 0;
      },
      kStartTimeoutS, kPollIntervalS);
  if (!munge_up) {
    *error = "munged did not answer on " + munge_socket_;
    return false;
  }

  // Ports, all on 127.0.0.1 and distinct: slurmctld's, MariaDB's, slurmdbd's
  // and one per slurmd. The kernel may hand out the same free port twice
  // once it is closed.
  std::set<int> taken;
  auto next_port = [&]() -> std::optional<int> {
    std::string port_error;
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto p = FreePort(&port_error);
      if (!p) {
        *error = port_error;
        return std::nullopt;
      }
      if (taken.insert(*p).second) return p;
    }
    *error = "no distinct free port";
    return std::nullopt;
  };
  auto ctld_port = next_port();
  auto db_port = next_port();
  auto dbd_port = next_port();
  if (!ctld_port || !db_port || !dbd_port) return false;
  std::vector<int> node_ports;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    auto p = next_port();
    if (!p) return false;
    node_ports.push_back(*p);
  }
  // The fake GPUs, and the nodes' spool directories (slurmd does not make them).
  std::string gres_conf;
  for (const SlurmNodeSpec& n : nodes_) {
    const std::string dev = d + "/dev/" + n.name;
    if (!MakeDir(dev, 0755, error) || !MakeDir(d + "/spool/" + n.name, 0755, error)) return false;
    for (int i = 0; i < n.gpus; ++i) {
      const std::string path = dev + "/nvidia" + std::to_string(i);
      if (mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
        *error = ErrnoText("mknod " + path);
        return false;
      }
    }
    // n2 names each device on a line of its own, numbered from 4, the shape
    // AutoDetect gives: slurmd -G then prints Index=4, 5 for GRES indexes 0, 1.
    if (n.gpus > 0 && n.name == "n2") {
      for (int i = 0; i < n.gpus; ++i) {
        const std::string file = dev + "/nvidia" + std::to_string(4 + i);
        if (rename((dev + "/nvidia" + std::to_string(i)).c_str(), file.c_str()) != 0) {
          *error = ErrnoText("rename to " + file);
          return false;
        }
        gres_conf += "NodeName=" + n.name + " Name=gpu Type=" + n.gpu_type + " File=" + file + "\n";
      }
    } else if (n.gpus > 0) {
      gres_conf += "NodeName=" + n.name + " Name=gpu Type=" + n.gpu_type + " File=" + dev +
                   "/nvidia[0-" + std::to_string(n.gpus - 1) + "]\n";
    }
  }

  const std::string host = HostName();
  std::ostringstream conf;
  conf << "# Written by tests/e2e/slurm_cluster.cc: a private test cluster.\n"
       << "ClusterName=gwtest\n"
       << "SlurmctldHost=" << host << "(127.0.0.1)\n"
       << "SlurmctldPort=" << *ctld_port
       << "\n"
       // Bind to 127.0.0.1, not every address (slurmd: NoInAddrAny; slurmctld:
       // NoCtldInAddrAny).
       << "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny\n"
       << "SlurmUser=root\nSlurmdUser=root\n"
       << "AuthType=auth/munge\nCredType=cred/munge\n"
       << "AuthInfo=socket=" << munge_socket_ << "\n"
       << "StateSaveLocation=" << d << "/state\n"
       << "SlurmdSpoolDir=" << d << "/spool/%n\n"
       << "SlurmctldPidFile=" << d << "/slurmctld.pid\n"
       << "SlurmdPidFile=" << d << "/slurmd-%n.pid\n"
       << "SlurmctldLogFile=" << log << "/slurmctld.log\n"
       << "SlurmdLogFile=" << log << "/slurmd-%n.log\n"
       << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
       << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
       << "GresTypes=gpu\nMpiDefault=none\nReturnToService=2\n"
       << "SchedulerType=sched/backfill\nJobCompType=jobcomp/none\n"
       // Accounting in slurmdbd, so that QOS and association limits hold
       // (AccountingStoragePass: the munge socket slurmdbd is reached through).
       << "AccountingStorageType=accounting_storage/slurmdbd\n"
       << "AccountingStorageHost=localhost\nAccountingStoragePort=" << *dbd_port << "\n"
       << "AccountingStoragePass=" << munge_socket_ << "\n"
       << "AccountingStorageTRES=gres/gpu\n"
       << "AccountingStorageEnforce=associations,limits,qos\n"
       // Priorities from factors that sprio breaks down: the QOS weighs most.
       << "PriorityType=priority/multifactor\nPriorityWeightQOS=10000\n"
       << "PriorityWeightPartition=1000\nPriorityWeightAge=100\n"
       << "JobAcctGatherType=jobacct_gather/none\n"
       // Nodes may claim more CPUs than this host has.
       << "SlurmdParameters=config_overrides\n"
       // A cancelled job's processes get SIGKILL 2 s after SIGTERM (default 30).
       << "KillWait=2\n"
       // A job of partition "high" preempts the jobs of "gpu" it needs the
       // resources of; they are requeued (BeginTime, restart_cnt 1).
       << "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n";
  std::string node_names;
  std::string cloud_names;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const SlurmNodeSpec& n = nodes_[i];
    conf << "NodeName=" << n.name << " NodeHostname=" << host
         << " NodeAddr=127.0.0.1 Port=" << node_ports[i] << " CPUs=" << n.cpus;
    if (n.gpus > 0) conf << " Gres=gpu:" << n.gpu_type << ":" << n.gpus;
    conf << (n.cloud ? " State=CLOUD\n" : " State=UNKNOWN\n");
    std::string& names = n.cloud ? cloud_names : node_names;
    names += (names.empty() ? "" : ",") + n.name;
  }
  if (!cloud_names.empty()) {
    // Power saving for the cloud nodes only, with the short times of a test
    // (docs/capacity.md gives a site's).
    if (!WritePowerPrograms(error)) return false;
    // PrivateData=cloud: Slurm lists cloud nodes while powered down, too.
    // The power-saving thread looks every second, not every 10.
    conf << "PrivateData=cloud\n"
         << "SlurmctldParameters=power_save_interval=1,power_save_min_interval=0\n";
    conf << "SuspendProgram=" << d << "/power/suspend\nResumeProgram=" << d << "/power/resume\n"
         << "SuspendTime=" << kCloudSuspendTimeS << "\nSuspendTimeout=3\nResumeTimeout=30\n"
         << "SuspendExcNodes=" << node_names << "\n"
         << "PartitionName=cloud Nodes=" << cloud_names << " MaxTime=INFINITE State=UP\n";
  }
  conf << "PartitionName=gpu Nodes=" << node_names
       << " Default=YES MaxTime=INFINITE State=UP PriorityTier=1\n"
       << "PartitionName=high Nodes=" << node_names
       << " MaxTime=INFINITE State=UP PriorityTier=10\n";
  conf_ = d + "/slurm.conf";
  if (!WriteFile(conf_, conf.str(), 0644, error) ||
      !WriteFile(d + "/gres.conf", gres_conf, 0644, error)) {
    return false;
  }
  // slurmdbd (beside a running MariaDB) first: slurmctld will not start
  // without it.
  if (!StartAccounting(*db_port, *dbd_port, error)) return false;

  // The daemons in the foreground (-D), so that they stay our children; -c:
  // a cold start, no state from an earlier run.
  if (!StartDaemon("slurmctld", {std::string(kSbin) + "slurmctld", "-D", "-c", "-i", "-f", conf_},
                   error)) {
    return false;
  }
  for (const SlurmNodeSpec& n : nodes_) {
    if (n.cloud) continue;  // Its ResumeProgram starts it.
    if (!StartDaemon("slurmd-" + n.name,
                     {std::string(kSbin) + "slurmd", "-D", "-N", n.name, "-f", conf_}, error)) {
      return false;
    }
  }

  std::string why = "sinfo never ran";
  bool died = false;
  const bool up = WaitUntil(
      [&] {
        for (size_t i = 0; i < daemons_.size(); ++i) {
          if (daemons_[i]->TryReap()) {
            why = daemon_names_[i] + " exited (status " +
                  std::to_string(daemons_[i]->status().value_or(-1)) + ")";
            died = true;
            return true;  // No point waiting longer.
          }
        }
        return AllNodesIdle(&why);
      },
      kStartTimeoutS, kPollIntervalS);
  if (!up || died) {
    *error = "the Slurm test cluster did not come up within " +
             std::to_string(static_cast<int>(kStartTimeoutS)) + " s: " + why;
    return false;
  }
  return true;
}

bool SlurmCluster::WritePowerPrograms(std::string* error) {
  const std::string d = dir();
  if (!MakeDir(d + "/power", 0755, error)) return false;
  // Each template's one command, filled in as a site would with its
  // cloud's: here the node's slurmd on this host, started after a moment
  // (a boot, long enough to be seen powering up; -b: it reports a new boot)
  // and stopped by its PID file. Each resume first notes its own signal
  // mask, which must be empty. gpuwarden-power is the build's.
  const std::map<std::string, std::string> commands = {
      {"resume", "/bin/sh -c 'grep SigBlk /proc/self/status >>" + resume_signals() +
                     "; sleep 2; exec /usr/sbin/slurmd -b -N \"$1\" -f " + d +
                     "/slurm.conf </dev/null >>" + d + "/log/slurmd-$1.start 2>&1' sh {node}"},
      {"suspend", "/bin/sh -c 'exec /bin/kill \"$(cat " + d + "/slurmd-$1.pid)\"' sh {node}"}};
  for (const auto& [action, command] : commands) {
    const std::string source = gw::test::SourceDir() + "/packaging/slurm/" + action;
    std::ifstream in(source);
    if (!in) {
      *error = "cannot read " + source;
      return false;
    }
    std::string program;
    bool filled = false;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("  FILL-IN-", 0) == 0) {
        line = "  " + command;
        filled = true;
      }
      const std::string shipped = "/usr/lib/gpuwarden/gpuwarden-power " + action + " \"$1\"";
      if (const size_t at = line.find(shipped); at != std::string::npos) {
        line.replace(
            at, shipped.size(),
            gw::test::BinaryDir() + "/gpuwarden-power " + action + " \"$1\" --log " + power_log());
      }
      program += line + "\n";
    }
    if (!filled) {
      *error = source + " has no FILL-IN line";
      return false;
    }
    if (!WriteFile(d + "/power/" + action, program, 0755, error)) return false;
  }
  return true;
}

bool SlurmCluster::StartDaemon(const std::string& label, const std::vector<std::string>& argv,
                               std::string* error) {
  TestChild::Options o;
  o.env["SLURM_CONF"] = conf_;
  o.output = dir() + "/log/" + label + ".out";
  daemons_.push_back(std::make_unique<TestChild>(argv, o));
  daemon_names_.push_back(label);
  if (daemons_.back()->pid() < 0) {
    *error = "cannot start " + label + ": " + std::strerror(daemons_.back()->start_error());
    return false;
  }
  return true;
}

bool SlurmCluster::StartAccounting(int db_port, int dbd_port, std::string* error) {
  const std::string d = dir();
  const std::string db = d + "/mariadb";
  const std::string socket = d + "/mariadb.sock";
  if (!MakeDir(db, 0700, error)) return false;
  // A private MariaDB, as root (its files stay in the temp directory), on
  // 127.0.0.1 only; root reaches it through its socket, slurmdbd over TCP
  // with a password of this run.
  RunOptions install;
  install.timeout_s = kStartTimeoutS;
  RunResult r =
      RunProcess({std::string(kBin) + "mariadb-install-db", "--no-defaults", "--user=root",
                  "--datadir=" + db, "--skip-test-db", "--auth-root-authentication-method=socket"},
                 install);
  if (r.exit_code != 0) {
    *error = "mariadb-install-db exited " + std::to_string(r.exit_code) + ": " + r.err;
    return false;
  }
  if (!StartDaemon(
          "mariadbd",
          {std::string(kSbin) + "mariadbd", "--no-defaults", "--user=root", "--datadir=" + db,
           "--socket=" + socket, "--port=" + std::to_string(db_port), "--bind-address=127.0.0.1",
           "--skip-name-resolve", "--pid-file=" + d + "/mariadb.pid",
           "--log-error=" + d + "/log/mariadb.log", "--innodb-buffer-pool-size=32M"},
          error)) {
    return false;
  }
  std::string password(24, 'x');
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    std::string raw(password.size(), '\0');
    if (!random.read(raw.data(), static_cast<std::streamsize>(raw.size()))) {
      *error = "cannot read /dev/urandom";
      return false;
    }
    static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (size_t i = 0; i < raw.size(); ++i) {
      password[i] = kAlphabet[static_cast<unsigned char>(raw[i]) % (sizeof kAlphabet - 1)];
    }
  }
  const std::string grant = d + "/grant.sql";
  if (!WriteFile(grant,
                 "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '" + password +
                     "';\nGRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';\n",
                 0600, error)) {
    return false;
  }
  RunOptions client;
  client.timeout_s = 5;
  const std::vector<std::string> mariadb = {std::string(kBin) + "mariadb", "--no-defaults",
                                            "--socket=" + socket};
  std::vector<std::string> ping = mariadb;
  ping.insert(ping.end(), {"-e", "SELECT 1"});
  if (!WaitUntil([&] { return RunProcess(ping, client).exit_code == 0; }, kStartTimeoutS,
                 kPollIntervalS)) {
    *error = "MariaDB did not answer on " + socket;
    return false;
  }
  client.stdin_path = grant;
  r = RunProcess(mariadb, client);
  if (r.exit_code != 0) {
    *error =
        "mariadb (creating slurmdbd's user) exited " + std::to_string(r.exit_code) + ": " + r.err;
    return false;
  }

  std::ostringstream dbd;
  dbd << "# Written by tests/e2e/slurm_cluster.cc.\n"
      << "AuthType=auth/munge\nAuthInfo=socket=" << munge_socket_ << "\n"
      << "DbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort=" << dbd_port << "\n"
      << "SlurmUser=root\n"
      << "PidFile=" << d << "/slurmdbd.pid\nLogFile=" << d << "/log/slurmdbd.log\n"
      << "StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n"
      << "StoragePort=" << db_port << "\nStorageUser=slurm\nStoragePass=" << password << "\n"
      << "StorageLoc=slurm_acct_db\n";
  // slurmdbd refuses a configuration others may read.
  if (!WriteFile(d + "/slurmdbd.conf", dbd.str(), 0600, error)) return false;
  if (!StartDaemon("slurmdbd", {std::string(kSbin) + "slurmdbd", "-D"}, error)) return false;
  bool died = false;
  std::string last;
  const bool up = WaitUntil(
      [&] {
        if (daemons_.back()->TryReap()) {
          died = true;
          return true;
        }
        RunResult answer = Run({"sacctmgr", "-n", "-P", "list", "cluster"}, 5);
        last = answer.err;
        return answer.exit_code == 0;
      },
      kStartTimeoutS, kPollIntervalS);
  if (!up || died) {
    *error = died ? "slurmdbd exited" : "slurmdbd did not answer sacctmgr: " + last;
    return false;
  }
  return true;
}

bool SlurmCluster::AllNodesIdle(std::string* why) const {
  RunResult r = Run({"sinfo", "--json"}, 10);
  if (r.exit_code != 0) {
    *why = "sinfo --json exited " + std::to_string(r.exit_code) + ": " + r.err;
    return false;
  }
  auto doc = slurm::ParseSinfoJson(r.out);
  if (!doc) {
    *why = "sinfo --json: " + doc.error().message;
    return false;
  }
  // Cloud nodes come and go (powered down, they are not listed).
  size_t listed = 0;
  for (const SlurmNodeSpec& spec : nodes_) {
    for (const auto& n : doc->nodes) listed += !spec.cloud && n.name == spec.name ? 1 : 0;
  }
  size_t expected = 0;
  for (const SlurmNodeSpec& spec : nodes_) expected += spec.cloud ? 0 : 1;
  if (listed != expected) {
    *why = "sinfo shows " + std::to_string(listed) + " of the nodes, expected " +
           std::to_string(expected);
    return false;
  }
  for (const SlurmNodeSpec& spec : nodes_) {
    if (spec.cloud) continue;
    const slurm::Node* node = nullptr;
    for (const auto& n : doc->nodes) {
      if (n.name == spec.name) node = &n;
    }
    if (node == nullptr) {
      *why = "sinfo does not show " + spec.name;
      return false;
    }
    std::string flags;
    for (const auto& f : node->state_flags) flags += "+" + f;
    if (node->state != "IDLE" || !node->state_flags.empty()) {
      *why = spec.name + " is " + node->state.value_or("?") + flags +
             (node->reason ? " (" + *node->reason + ")" : "");
      return false;
    }
    int64_t gpus = 0;
    int64_t used = 0;
    for (const auto& g : node->gres.value_or(std::vector<slurm::Gres>{})) {
      if (g.name == "gpu" && g.type == spec.gpu_type) gpus += g.count;
    }
    for (const auto& g : node->gres_used.value_or(std::vector<slurm::Gres>{})) {
      if (g.name == "gpu") used += g.count;
    }
    if (gpus != spec.gpus || used != 0) {
      *why = spec.name + " shows " + std::to_string(gpus) + " " + spec.gpu_type + " (" +
             std::to_string(used) + " used), expected " + std::to_string(spec.gpus) + " free";
      return false;
    }
  }
  return true;
}

RunOptions SlurmCluster::ClientOptions() const {
  RunOptions o;
  o.env["SLURM_CONF"] = conf_;
  return o;
}

RunResult SlurmCluster::Run(std::vector<std::string> argv, double timeout_s) const {
  argv[0] = std::string(kBin) + argv[0];
  RunOptions o = ClientOptions();
  o.timeout_s = timeout_s;
  return RunProcess(argv, o);
}

std::optional<int64_t> SlurmCluster::Submit(const std::vector<std::string>& args,
                                            const std::string& command, std::string* error) const {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--chdir=" + dir() + "/jobs",
                                   "--output=" + dir() + "/jobs/job-%j.out"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--wrap");
  argv.push_back(command);
  RunResult r = Run(argv);
  if (r.exit_code != 0) {
    *error = "sbatch exited " + std::to_string(r.exit_code) + ": " + r.err;
    return std::nullopt;
  }
  // "--parsable": "ID" or "ID;CLUSTER".
  try {
    size_t used = 0;
    const int64_t id = std::stoll(r.out, &used);
    if (id > 0) return id;
  } catch (const std::exception&) {
  }
  *error = "sbatch printed no job id: " + r.out;
  return std::nullopt;
}

bool SlurmCluster::Sacctmgr(const std::vector<std::string>& commands, std::string* error) const {
  std::string script;
  for (const std::string& c : commands) script += c + "\n";
  const std::string path = dir() + "/sacctmgr-commands";
  if (!WriteFile(path, script, 0600, error)) return false;
  RunOptions o = ClientOptions();
  o.stdin_path = path;
  RunResult r = RunProcess({std::string(kBin) + "sacctmgr", "-i"}, o);
  // Besides the exit code, a command's error message on stderr ("error: ..."
  // or " Error ...") counts as a failure: one of several commands may fail.
  const bool said_error =
      r.err.find("error") != std::string::npos || r.err.find("Error") != std::string::npos;
  if (r.exit_code != 0 || said_error) {
    *error = "sacctmgr exited " + std::to_string(r.exit_code) + ": " + r.err + r.out;
    return false;
  }
  return true;
}

bool SlurmCluster::CancelAllAndWait(std::string* error) const {
  std::string why;
  auto active_jobs = [&](std::vector<std::string>* ids) {
    RunResult r = Run({"squeue", "--json"}, 10);
    if (r.exit_code != 0) {
      why = "squeue --json exited " + std::to_string(r.exit_code) + ": " + r.err;
      return false;
    }
    auto doc = slurm::ParseSqueueJson(r.out);
    if (!doc) {
      why = doc.error().message;
      return false;
    }
    for (const auto& j : doc->jobs) {
      if (!IsFinished(j.state)) ids->push_back(std::to_string(j.id));
    }
    return true;
  };
  std::vector<std::string> ids;
  if (!active_jobs(&ids)) {
    *error = why;
    return false;
  }
  if (!ids.empty()) {
    std::vector<std::string> argv = {"scancel"};
    argv.insert(argv.end(), ids.begin(), ids.end());
    RunResult r = Run(argv);
    if (r.exit_code != 0) {
      *error = "scancel exited " + std::to_string(r.exit_code) + ": " + r.err;
      return false;
    }
  }
  const bool done = WaitUntil(
      [&] {
        std::vector<std::string> left;
        if (!active_jobs(&left)) return false;
        if (!left.empty()) {
          why = std::to_string(left.size()) + " jobs still active";
          return false;
        }
        return AllNodesIdle(&why);
      },
      30, kPollIntervalS);
  if (!done) *error = "jobs did not end after scancel: " + why;
  return done;
}

std::string SlurmCluster::LogTails() const {
  std::string out;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir() + "/log", ec)) {
    out += "  " + f.path().filename().string() + ":\n" + Tail(f.path().string(), 8);
  }
  return out;
}

void SlurmCluster::Stop() {
  // slurmstepd starts a session of its own, so no process group reaches it or
  // the job under it; both carry our SLURM_CONF (the daemons' and sbatch's
  // environment), which names this cluster's temp directory and nothing else.
  // Each is noted with its start time, so that a PID reused meanwhile is
  // left alone.
  std::map<pid_t, unsigned long long> strays;
  auto note_strays = [&] {
    if (conf_.empty()) return;
    for (pid_t pid : PidsWithEnvironment("SLURM_CONF=" + conf_)) {
      bool daemon = false;
      for (const auto& d : daemons_) daemon = daemon || d->pid() == pid;
      if (daemon || pid == getpid()) continue;
      if (auto ticks = ProcessStartTicks(pid)) strays.emplace(pid, *ticks);
    }
  };
  if (!conf_.empty() && !daemons_.empty()) {
    std::string ignored;
    (void)CancelAllAndWait(&ignored);  // Best effort: the kills below are the guarantee.
  }
  note_strays();
  // Daemons in reverse order (nodes, controller, munged): SIGTERM, a moment to
  // exit, then TestChild's SIGKILL to the process group (slurmscriptd too).
  for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
    if ((*it)->pid() > 0 && !(*it)->reaped()) kill((*it)->pid(), SIGTERM);
  }
  for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
    if ((*it)->pid() > 0 && !(*it)->reaped()) (void)(*it)->WaitForExit(5);
  }
  note_strays();
  daemons_.clear();
  for (const auto& [pid, ticks] : strays) {
    if (ProcessStartTicks(pid) == ticks) kill(pid, SIGKILL);
  }
  (void)WaitUntil(
      [&] {
        for (const auto& [pid, ticks] : strays) {
          if (ProcessAlive(pid) && ProcessStartTicks(pid) == ticks) return false;
        }
        return true;
      },
      10, kPollIntervalS);
}

SlurmCluster::~SlurmCluster() { Stop(); }

namespace {
std::unique_ptr<SlurmCluster>& ClusterSlot() {
  static std::unique_ptr<SlurmCluster> cluster;
  return cluster;
}
std::string& SkipSlot() {
  static std::string reason;
  return reason;
}
std::string& ErrorSlot() {
  static std::string error;
  return error;
}
}  // namespace

void SlurmEnvironment::SetUp() {
  if (auto reason = SlurmUnavailableReason()) {
    SkipSlot() = *reason;
    return;
  }
  std::string error;
  ClusterSlot() = SlurmCluster::Start(DefaultSlurmNodes(), &error);
  if (!ClusterSlot()) {
    ErrorSlot() = error;
  } else {
    std::fprintf(stderr, "[slurm] test cluster up in %.2f s (%s)\n",
                 ClusterSlot()->startup_seconds(), ClusterSlot()->conf().c_str());
  }
}

void SlurmEnvironment::TearDown() { ClusterSlot().reset(); }

SlurmCluster* SlurmEnvironment::Cluster() { return ClusterSlot().get(); }
const std::string& SlurmEnvironment::SkipReason() { return SkipSlot(); }
const std::string& SlurmEnvironment::StartError() { return ErrorSlot(); }

}  // namespace gw::test
