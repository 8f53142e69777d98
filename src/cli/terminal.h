// Facts about the terminal the output goes to, read once in main.
#ifndef GPUWARDEN_CLI_TERMINAL_H_
#define GPUWARDEN_CLI_TERMINAL_H_

#include <string>

#include "core/text.h"

namespace gw::cli {

enum class ColorChoice { kAuto, kAlways, kNever };

// Colour when asked, or in auto mode when stdout is a terminal, NO_COLOR is
// unset or empty (https://no-color.org) and TERM is not "dumb".
bool ShouldUseColor(ColorChoice choice);

// The width text is cut and wrapped at: the terminal's columns when stdout is
// a terminal; else COLUMNS when set (40 to 1000: asked for); else
// gw::kUnlimitedWidth, nothing cut or wrapped, so that `why | head -1` is
// the whole verdict (docs/cli.md, "Output").
int OutputWidth();

// The width a chart is drawn to (history's sparklines): the terminal's
// columns, else COLUMNS, else 100. A chart is not text that can be cut.
int ChartWidth();

// Says "gpuwarden: MESSAGE" on stderr and returns `code`: how a command
// reports the error that ends it. MESSAGE is written as it is; text from
// other processes in it is the caller's to sanitise.
int Fail(int code, const std::string& message);

// Writes `text` to stdout, with a newline after it unless it ends in one.
void Print(const std::string& text);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_TERMINAL_H_
