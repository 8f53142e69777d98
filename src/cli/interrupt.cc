#include "cli/interrupt.h"

#include <signal.h>

#include <atomic>

namespace gw::cli {
namespace {

std::atomic<int> g_interrupted{0};

void OnInterrupt(int sig) { g_interrupted = sig; }

}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int TakeInterrupt() { return g_interrupted.exchange(0); }

}  // namespace gw::cli
