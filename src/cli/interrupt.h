// Ctrl-C and SIGTERM while a command waits for a job (`run --wait`, `run
// --slurm`): the signal is caught and remembered, so the waiting loop can
// cancel the job, say so and keep waiting for its end; a second signal stops
// the wait. The one home of that idiom.
#ifndef GPUWARDEN_CLI_INTERRUPT_H_
#define GPUWARDEN_CLI_INTERRUPT_H_

namespace gw::cli {

// From now on SIGINT and SIGTERM are remembered instead of ending the process.
void CatchInterrupts();

// The signal caught since the last call (SIGINT, SIGTERM), 0 for none.
int TakeInterrupt();

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_INTERRUPT_H_
