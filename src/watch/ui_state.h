// The interactive state of `gpuwarden watch` and how keys change it: a pure
// reducer (state, key, rows) -> (state, effect). Effects that reach the
// outside world (quit, plan a stop, carry it out) are returned for the
// event loop to perform; nothing here reads the system or the terminal.
#ifndef GPUWARDEN_WATCH_UI_STATE_H_
#define GPUWARDEN_WATCH_UI_STATE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gw::watch {

struct ProcessRow;  // rows.h

enum class SortKey { kVram, kSm, kCpu, kAge, kPid, kUser, kGpu };
inline constexpr int kSortKeyCount = 7;
const char* SortKeyName(SortKey key);  // "VRAM", "SM%", "CPU%", "AGE", "PID", "USER", "GPU"

enum class Dialog {
  kNone,
  kHelp,       // The key list.
  kInput,      // A one-line prompt (filter or find).
  kPreparing,  // A stop is being planned.
  kConfirm,    // The plan, waiting for y / n.
  kRunning,    // The stop is being carried out.
  kResult,     // What happened, freed VRAM included.
  kMessage,    // A refusal or an error.
};

enum class InputKind { kUserFilter, kGpuFilter, kFind };

struct UiState {
  SortKey sort = SortKey::kVram;
  bool sort_descending = true;
  bool tree = false;                 // Group workers under the run's parent.
  std::string user_filter;           // "" = every user.
  std::vector<unsigned> gpu_filter;  // Empty = every GPU.

  // The selected row, by identity so that it stays on the same process when
  // rows move; `selected` is its index in the current rows.
  pid_t selected_pid = 0;
  std::string selected_gpu;
  int selected = 0;
  int scroll = 0;  // First row shown.

  Dialog dialog = Dialog::kNone;
  InputKind input_kind = InputKind::kFind;
  std::string input;  // What has been typed at the prompt.
  std::string dialog_title;
  std::vector<std::string> dialog_lines;  // Safe for a terminal.

  bool readonly = false;  // --readonly: no action at all.
  std::string status;     // One line in the footer ("" = the key hints).
};

// Keys, independent of the terminal library.
enum class KeyCode {
  kChar,  // `ch` holds the character (a Unicode code point).
  kUp,
  kDown,
  kPageUp,
  kPageDown,
  kHome,
  kEnd,
  kEnter,
  kEscape,
  kBackspace,
  kDelete,
  kF1,
  kF9,
  kCtrlL,  // Repaint everything.
  kOther,
};

struct Key {
  KeyCode code = KeyCode::kOther;
  char32_t ch = 0;
  static Key Char(char32_t c) { return Key{KeyCode::kChar, c}; }
  static Key Code(KeyCode k) { return Key{k, 0}; }
};

enum class EffectKind {
  kNone,
  kQuit,
  kPlanStop,     // Plan stopping `pid` (and its run when `tree`): the loop runs the plan.
  kConfirmStop,  // The user said yes to the plan on screen.
  kCancelStop,   // The user said no.
  kRepaint,      // Clear and repaint the terminal.
};

struct Effect {
  EffectKind kind = EffectKind::kNone;
  pid_t pid = 0;
  bool tree = false;
};

struct Reduced {
  UiState state;
  Effect effect;
};

// Applies one key. `rows` are the process rows on screen now (after filters
// and sorting); `page_rows` is how many of them fit (for Page Up/Down).
Reduced Reduce(UiState state, const Key& key, const std::vector<ProcessRow>& rows, int page_rows);

// Keeps the selection on the same process after the rows changed (a new
// probe, another sort): finds it by PID and GPU; when it is gone, stays at
// the same index (clamped) and takes that row's identity. Pure.
UiState Reselect(UiState state, const std::vector<ProcessRow>& rows);

// Moves `scroll` so that the selected row is one of the `visible` rows shown.
UiState FitScroll(UiState state, int visible, int row_count);

// Parses a GPU filter: indices separated by commas or spaces ("0,3", "1 2");
// nullopt for anything else. "" gives an empty list (no filter).
std::optional<std::vector<unsigned>> ParseGpuList(const std::string& text);

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_UI_STATE_H_
