// gpuwarden-supervise [--proc-root DIR] JOB_DIR: runs one job of the queue and
// records its end (see queue/supervisor.h). Started by gpuwardend, never by a
// person.
#include <cstdio>
#include <cstring>
#include <string>

#include "core/clock.h"
#include "queue/supervisor.h"

int main(int argc, char** argv) {
  std::string proc_root = "/proc";
  int arg = 1;
  if (argc == 4 && std::strcmp(argv[1], "--proc-root") == 0 && argv[2][0] == '/') {
    proc_root = argv[2];
    arg = 3;
  }
  if (argc != arg + 1) {
    std::fprintf(stderr,
                 "usage: gpuwarden-supervise [--proc-root DIR] JOB_DIR (started by gpuwardend)\n");
    return gw::queue::kSupervisorUsage;
  }
  // The supervisor's one clock, for its deadlines and the times it records.
  const gw::RealClock clock;
  return gw::queue::SuperviseMain(argv[arg], proc_root, clock);
}
