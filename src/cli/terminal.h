// Facts about the terminal the output goes to, read once in main.
#ifndef GPUWARDEN_CLI_TERMINAL_H_
#define GPUWARDEN_CLI_TERMINAL_H_

#include <string>

namespace gw::cli {

enum class ColorChoice { kAuto, kAlways, kNever };

// Colour when asked, or in auto mode when stdout is a terminal, NO_COLOR is
// unset or empty (https://no-color.org) and TERM is not "dumb".
bool ShouldUseColor(ColorChoice choice);

// Columns of the terminal on stdout; COLUMNS when not a terminal; else 100.
int OutputWidth();

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_TERMINAL_H_
