// Signals while `gpuwarden watch` owns the terminal.
//
// SIGINT, SIGTERM, SIGHUP and SIGWINCH only write their number to a pipe
// (the self-pipe trick); the event loop reads it, restores the terminal with
// endwin() and exits (or re-reads the window size), outside the handler.
//
// Crash signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS)
// cannot wait for the loop. endwin(), reset_shell_mode() and the rest of
// curses are not async-signal-safe (they take stdio locks and may call
// malloc), so the crash handler does only what POSIX allows in a handler:
// write(2) a byte sequence prepared before the screen was taken over (leave
// the alternate screen, show the cursor, reset attributes, keypad off) and
// tcsetattr(2) the terminal modes saved at start; then it restores the
// default action and raises the signal again, so the process still dies of
// it (core dump and exit status unchanged).
#ifndef GPUWARDEN_WATCH_SIGNALS_H_
#define GPUWARDEN_WATCH_SIGNALS_H_

#include <string>

#include "core/result.h"

namespace gw::watch {

// Installs the handlers; call before the terminal library starts (ncurses
// then leaves SIGINT, SIGTERM and SIGWINCH to them). Returns the read end of
// the signal pipe (non-blocking). Saves the terminal modes of stdin for the
// crash handler. Once per process.
Result<int> InstallSignalHandlers();

// The bytes the crash handler writes to stdout (at most 512; longer is cut).
void SetCrashRestoreSequence(const std::string& bytes);

// Puts back the handlers that were there before (after endwin).
void RestoreSignalHandlers();

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_SIGNALS_H_
