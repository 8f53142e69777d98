// gpuwarden-supervise JOB_DIR: runs one job of the queue and records its end
// (see queue/runner.h). Started by gpuwardend, never by a person.
#include <cstdio>
#include <string>

#include "queue/runner.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gpuwarden-supervise JOB_DIR (started by gpuwardend)\n");
    return gw::queue::kSupervisorUsage;
  }
  return gw::queue::SuperviseMain(argv[1]);
}
