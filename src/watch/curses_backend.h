// The only code of `gpuwarden watch` that talks to the terminal: ncurses
// (Debian's ncursesw) paints a Screen and reads keys. Everything it shows
// was decided by the layout; this file maps styles to attributes and
// colours and sends only the rows that changed.
//
// Colour is used only when asked for (--color, NO_COLOR) and the terminal
// has it (has_colors()); otherwise bold, dim and reverse carry the styles.
// Without a UTF-8 locale the layout draws ASCII, and any other non-ASCII
// character (from a process name, say) is shown as '?'.
#ifndef GPUWARDEN_WATCH_CURSES_BACKEND_H_
#define GPUWARDEN_WATCH_CURSES_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "watch/app.h"
#include "watch/screen.h"

namespace gw::watch {

// True when the locale's character set is UTF-8 (after setlocale(LC_ALL, "")).
bool LocaleIsUtf8();

class CursesTerminal final : public Terminal {
 public:
  // Takes over the terminal on stdin/stdout (alternate screen, no echo,
  // cbreak, keypad, hidden cursor). Errors: "no_terminal" (stdin or stdout
  // is not a terminal, or TERM names no known terminal).
  static Result<std::unique_ptr<CursesTerminal>> Open(bool want_color, bool unicode);
  // Gives the terminal back (endwin).
  ~CursesTerminal() override;

  int width() const override;
  int height() const override;
  int input_fd() const override { return 0; }
  void Paint(const Screen& screen) override;
  std::vector<Key> ReadKeys() override;
  void Resize() override;
  void Invalidate() override;

  bool color() const { return color_; }
  // What the crash handler writes to give the terminal back (signals.h):
  // leave the alternate screen, cursor visible, attributes off, keypad off.
  std::string RestoreSequence() const;
  // Ends curses now (also done by the destructor); idempotent.
  void Close();

 private:
  CursesTerminal(bool color, bool unicode) : color_(color), unicode_(unicode) {}
  void PaintRow(const Screen& screen, int y);

  bool color_;
  bool unicode_;
  bool open_ = false;
  std::unique_ptr<Screen> shown_;  // What the terminal shows now.
};

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_CURSES_BACKEND_H_
