#include "watch/curses_backend.h"

#include <curses.h>
#include <langinfo.h>
#include <sys/ioctl.h>
#include <term.h>
#include <unistd.h>

#include <cstring>

namespace gw::watch {
namespace {

// Colour pairs, by Color.
short PairOf(Color c) { return static_cast<short>(c); }

attr_t AttrOf(const Style& s, bool color) {
  attr_t a = A_NORMAL;
  if (s.bold) a |= A_BOLD;
  if (s.dim) a |= A_DIM;
  if (s.reverse) a |= A_REVERSE;
  if (color && s.fg != Color::kDefault) a |= COLOR_PAIR(PairOf(s.fg));
  return a;
}

// The ASCII stand-in for the few non-ASCII characters the layout's own text
// uses; anything else becomes '?'.
const char* AsciiFor(std::string_view glyph) {
  static const struct {
    const char* from;
    const char* to;
  } kMap[] = {{"—", "-"}, {"·", "."}, {"…", "~"}, {"°", "o"}, {"→", ">"}, {"↑", "^"}, {"↓", "v"}};
  for (const auto& m : kMap) {
    if (glyph == m.from) return m.to;
  }
  return "?";
}

std::string Cap(const char* name) {
  char* s = tigetstr(const_cast<char*>(name));
  if (s == nullptr || s == reinterpret_cast<char*>(-1)) return "";
  return s;
}

}  // namespace

bool LocaleIsUtf8() {
  const char* codeset = nl_langinfo(CODESET);
  return codeset != nullptr &&
         (std::strcmp(codeset, "UTF-8") == 0 || std::strcmp(codeset, "utf8") == 0);
}

Result<std::unique_ptr<CursesTerminal>> CursesTerminal::Open(bool want_color, bool unicode) {
  if (isatty(STDIN_FILENO) != 1 || isatty(STDOUT_FILENO) != 1) {
    return MakeError("no_terminal", "standard input and output must be a terminal");
  }
  // newterm, unlike initscr, returns an error instead of exiting.
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (screen == nullptr) {
    const char* term = std::getenv("TERM");
    return MakeError("no_terminal", std::string("cannot drive the terminal (TERM=") +
                                        (term ? term : "unset") + ")");
  }
  set_term(screen);
  std::unique_ptr<CursesTerminal> t(new CursesTerminal(false, unicode));
  t->open_ = true;
  cbreak();  // Keys at once; Ctrl-C still sends SIGINT (ISIG stays on).
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  set_escdelay(25);
  curs_set(0);
  leaveok(stdscr, TRUE);
  if (want_color && has_colors()) {
    start_color();
    use_default_colors();
    const short colors[] = {-1,         COLOR_RED,     COLOR_GREEN, COLOR_YELLOW,
                            COLOR_BLUE, COLOR_MAGENTA, COLOR_CYAN};
    for (short i = 1; i < static_cast<short>(std::size(colors)); ++i) init_pair(i, colors[i], -1);
    t->color_ = true;
  }
  return t;
}

CursesTerminal::~CursesTerminal() { Close(); }

void CursesTerminal::Close() {
  if (!open_) return;
  open_ = false;
  curs_set(1);
  endwin();
}

std::string CursesTerminal::RestoreSequence() const {
  return Cap("sgr0") + Cap("cnorm") + Cap("rmkx") + Cap("rmcup");
}

int CursesTerminal::width() const { return COLS; }
int CursesTerminal::height() const { return LINES; }

void CursesTerminal::Resize() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    resizeterm(ws.ws_row, ws.ws_col);
  }
  Invalidate();
}

void CursesTerminal::Invalidate() {
  shown_.reset();
  clearok(curscr, TRUE);
}

void CursesTerminal::PaintRow(const Screen& screen, int y) {
  // One addstr per run of cells with the same style.
  const int w = std::min(screen.width(), COLS);
  int x = 0;
  while (x < w) {
    const Style style = screen.At(x, y).style;
    std::string run;
    const int start = x;
    while (x < w && screen.At(x, y).style == style) {
      const std::string_view g = screen.At(x, y).glyph();
      if (!g.empty()) {
        const bool ascii = static_cast<unsigned char>(g[0]) < 0x80;
        if (unicode_ || ascii) {
          run += g;
        } else {
          run += AsciiFor(g);
        }
      }
      ++x;
    }
    attrset(AttrOf(style, color_));
    // Writing the bottom-right cell cannot move the cursor past it; curses
    // reports that as an error after drawing the cell, which is fine here.
    mvaddstr(y, start, run.c_str());
  }
  attrset(A_NORMAL);
}

void CursesTerminal::Paint(const Screen& screen) {
  const bool same_size =
      shown_ && shown_->width() == screen.width() && shown_->height() == screen.height();
  const int h = std::min(screen.height(), LINES);
  for (int y = 0; y < h; ++y) {
    if (same_size) {
      bool changed = false;
      for (int x = 0; x < screen.width() && !changed; ++x)
        changed = !(shown_->At(x, y) == screen.At(x, y));
      if (!changed) continue;
    }
    PaintRow(screen, y);
  }
  wnoutrefresh(stdscr);
  doupdate();
  // Assignment reuses the buffer: a plain copy of trivially copyable cells.
  if (same_size) {
    *shown_ = screen;
  } else {
    shown_ = std::make_unique<Screen>(screen);
  }
}

std::vector<Key> CursesTerminal::ReadKeys() {
  std::vector<Key> keys;
  for (;;) {
    wint_t ch = 0;
    const int r = get_wch(&ch);
    if (r == ERR) break;
    if (r == KEY_CODE_YES) {
      switch (ch) {
        case KEY_UP:
          keys.push_back(Key::Code(KeyCode::kUp));
          break;
        case KEY_DOWN:
          keys.push_back(Key::Code(KeyCode::kDown));
          break;
        case KEY_PPAGE:
          keys.push_back(Key::Code(KeyCode::kPageUp));
          break;
        case KEY_NPAGE:
          keys.push_back(Key::Code(KeyCode::kPageDown));
          break;
        case KEY_HOME:
          keys.push_back(Key::Code(KeyCode::kHome));
          break;
        case KEY_END:
          keys.push_back(Key::Code(KeyCode::kEnd));
          break;
        case KEY_ENTER:
          keys.push_back(Key::Code(KeyCode::kEnter));
          break;
        case KEY_BACKSPACE:
          keys.push_back(Key::Code(KeyCode::kBackspace));
          break;
        case KEY_DC:
          keys.push_back(Key::Code(KeyCode::kDelete));
          break;
        case KEY_RESIZE:
          // resizeterm (called for SIGWINCH) queues this key itself:
          // nothing more to do than redraw, which any key causes.
          keys.push_back(Key::Code(KeyCode::kOther));
          break;
        default:
          if (ch == KEY_F(1)) {
            keys.push_back(Key::Code(KeyCode::kF1));
          } else if (ch == KEY_F(9)) {
            keys.push_back(Key::Code(KeyCode::kF9));
          } else {
            keys.push_back(Key::Code(KeyCode::kOther));
          }
      }
      continue;
    }
    switch (ch) {
      case '\r':
      case '\n':
        keys.push_back(Key::Code(KeyCode::kEnter));
        break;
      case 27:
        keys.push_back(Key::Code(KeyCode::kEscape));
        break;
      case 127:
      case 8:
        keys.push_back(Key::Code(KeyCode::kBackspace));
        break;
      case 12:  // Ctrl-L
        keys.push_back(Key::Code(KeyCode::kCtrlL));
        break;
      default:
        if (ch >= 0x20) keys.push_back(Key::Char(static_cast<char32_t>(ch)));
    }
  }
  return keys;
}

}  // namespace gw::watch
