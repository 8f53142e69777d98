#include "watch/ui_state.h"

#include <algorithm>
#include <sstream>

#include "watch/rows.h"

namespace gw::watch {
namespace {

constexpr char kReadonlyMessage[] = "read-only (--readonly): stopping processes is off";

UiState Select(UiState s, const std::vector<ProcessRow>& rows, int index) {
  if (rows.empty()) {
    s.selected = 0;
    s.selected_pid = 0;
    s.selected_gpu.clear();
    return s;
  }
  s.selected = std::clamp(index, 0, static_cast<int>(rows.size()) - 1);
  s.selected_pid = rows[static_cast<size_t>(s.selected)].pid;
  s.selected_gpu = rows[static_cast<size_t>(s.selected)].gpu;
  return s;
}

void AppendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x110000) {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

void PopUtf8(std::string& s) {
  while (!s.empty()) {
    const unsigned char c = static_cast<unsigned char>(s.back());
    s.pop_back();
    if ((c & 0xC0) != 0x80) break;  // Removed the lead byte: one character gone.
  }
}

// The first row at or after the selection (wrapping) whose PID, user or
// command contains `needle`.
std::optional<int> Find(const std::vector<ProcessRow>& rows, int from, const std::string& needle) {
  if (needle.empty() || rows.empty()) return std::nullopt;
  const int n = static_cast<int>(rows.size());
  for (int k = 0; k < n; ++k) {
    const int i = (from + k) % n;
    const ProcessRow& r = rows[static_cast<size_t>(i)];
    if (std::to_string(r.pid) == needle) return i;
  }
  for (int k = 0; k < n; ++k) {
    const int i = (from + k) % n;
    const ProcessRow& r = rows[static_cast<size_t>(i)];
    if (std::to_string(r.pid).find(needle) != std::string::npos ||
        r.user.find(needle) != std::string::npos || r.command.find(needle) != std::string::npos) {
      return i;
    }
  }
  return std::nullopt;
}

Reduced ApplyInput(UiState s, const std::vector<ProcessRow>& rows) {
  s.dialog = Dialog::kNone;
  switch (s.input_kind) {
    case InputKind::kUserFilter:
      s.user_filter = s.input;
      s.status = s.input.empty() ? "user filter cleared" : "only user " + s.input;
      break;
    case InputKind::kGpuFilter: {
      auto gpus = ParseGpuList(s.input);
      if (!gpus) {
        s.status = "GPU filter: give indices such as 0,3";
      } else {
        s.gpu_filter = *gpus;
        s.status = gpus->empty() ? "GPU filter cleared" : "only GPU " + s.input;
      }
      break;
    }
    case InputKind::kFind: {
      auto found = Find(rows, s.selected, s.input);
      if (found) {
        s = Select(std::move(s), rows, *found);
        s.status.clear();
      } else {
        s.status = "not found: " + s.input;
      }
      break;
    }
  }
  return {std::move(s), {}};
}

Reduced StartStop(UiState s, const std::vector<ProcessRow>& rows, bool tree) {
  if (s.readonly) {
    s.status = kReadonlyMessage;
    return {std::move(s), {}};
  }
  if (rows.empty() || s.selected < 0 || s.selected >= static_cast<int>(rows.size())) {
    s.status = "no process selected";
    return {std::move(s), {}};
  }
  const ProcessRow& row = rows[static_cast<size_t>(s.selected)];
  if (!row.in_proc) {
    s.status = "PID " + std::to_string(row.pid) +
               " is not in this /proc (another container or PID namespace): it cannot be "
               "signalled from here";
    return {std::move(s), {}};
  }
  Effect e{EffectKind::kPlanStop, row.pid, tree || row.stop_tree};
  s.dialog = Dialog::kPreparing;
  s.dialog_title = "Stop PID " + std::to_string(row.pid);
  s.dialog_lines = {"Checking PID " + std::to_string(row.pid) + " ..."};
  s.status.clear();
  return {std::move(s), e};
}

}  // namespace

const char* SortKeyName(SortKey key) {
  switch (key) {
    case SortKey::kVram:
      return "VRAM";
    case SortKey::kSm:
      return "SM%";
    case SortKey::kCpu:
      return "CPU%";
    case SortKey::kAge:
      return "AGE";
    case SortKey::kPid:
      return "PID";
    case SortKey::kUser:
      return "USER";
    case SortKey::kGpu:
      return "GPU";
  }
  return "?";
}

std::optional<std::vector<unsigned>> ParseGpuList(const std::string& text) {
  std::vector<unsigned> out;
  std::string item;
  std::string normal = text;
  std::replace(normal.begin(), normal.end(), ',', ' ');
  std::istringstream in(normal);
  while (in >> item) {
    if (item.size() > 3 || item.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    out.push_back(static_cast<unsigned>(std::stoul(item)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Reduced Reduce(UiState s, const Key& key, const std::vector<ProcessRow>& rows, int page_rows) {
  const bool is_char = key.code == KeyCode::kChar;
  const char32_t ch = key.ch;
  if (key.code == KeyCode::kCtrlL) return {std::move(s), {EffectKind::kRepaint}};

  switch (s.dialog) {
    case Dialog::kInput:
      if (key.code == KeyCode::kEscape) {
        s.dialog = Dialog::kNone;
        s.input.clear();
        return {std::move(s), {}};
      }
      if (key.code == KeyCode::kEnter) return ApplyInput(std::move(s), rows);
      if (key.code == KeyCode::kBackspace) {
        PopUtf8(s.input);
        return {std::move(s), {}};
      }
      if (is_char && ch >= 0x20 && ch != 0x7f && s.input.size() < 64) AppendUtf8(s.input, ch);
      return {std::move(s), {}};

    case Dialog::kConfirm:
      if (is_char && (ch == 'y' || ch == 'Y')) {
        s.dialog = Dialog::kRunning;
        s.dialog_lines = {"Stopping ..."};
        return {std::move(s), {EffectKind::kConfirmStop}};
      }
      if ((is_char && (ch == 'n' || ch == 'N')) || key.code == KeyCode::kEscape) {
        s.dialog = Dialog::kNone;
        s.status = "nothing was signalled";
        return {std::move(s), {EffectKind::kCancelStop}};
      }
      if (is_char && (ch == 'q' || ch == 'Q')) {
        return {std::move(s), {EffectKind::kQuit}};  // Quitting signals nothing.
      }
      return {std::move(s), {}};

    case Dialog::kPreparing:
    case Dialog::kRunning:
      // The action runs; only quitting is possible meanwhile.
      if (is_char && (ch == 'q' || ch == 'Q')) return {std::move(s), {EffectKind::kQuit}};
      return {std::move(s), {}};

    case Dialog::kHelp:
    case Dialog::kResult:
    case Dialog::kMessage:
      if (is_char && (ch == 'q' || ch == 'Q')) return {std::move(s), {EffectKind::kQuit}};
      s.dialog = Dialog::kNone;
      return {std::move(s), {}};

    case Dialog::kNone:
      break;
  }

  const int last = static_cast<int>(rows.size()) - 1;
  const int page = std::max(1, page_rows);
  switch (key.code) {
    case KeyCode::kUp:
      return {Select(std::move(s), rows, s.selected - 1), {}};
    case KeyCode::kDown:
      return {Select(std::move(s), rows, s.selected + 1), {}};
    case KeyCode::kPageUp:
      return {Select(std::move(s), rows, s.selected - page), {}};
    case KeyCode::kPageDown:
      return {Select(std::move(s), rows, s.selected + page), {}};
    case KeyCode::kHome:
      return {Select(std::move(s), rows, 0), {}};
    case KeyCode::kEnd:
      return {Select(std::move(s), rows, last), {}};
    case KeyCode::kF1:
      s.dialog = Dialog::kHelp;
      return {std::move(s), {}};
    case KeyCode::kF9:
    case KeyCode::kDelete:
      return StartStop(std::move(s), rows, false);
    case KeyCode::kEscape:
      s.status.clear();
      return {std::move(s), {}};
    case KeyCode::kChar:
      break;
    default:
      return {std::move(s), {}};
  }

  switch (ch) {
    case 'q':
    case 'Q':
      return {std::move(s), {EffectKind::kQuit}};
    case 'j':
      return {Select(std::move(s), rows, s.selected + 1), {}};
    case 'k':
      return {Select(std::move(s), rows, s.selected - 1), {}};
    case 'x':
      return StartStop(std::move(s), rows, false);
    case 'X':
      return StartStop(std::move(s), rows, true);
    case 's':
      s.sort = static_cast<SortKey>((static_cast<int>(s.sort) + 1) % kSortKeyCount);
      // Numbers read best largest first, names and PIDs in order.
      s.sort_descending =
          s.sort != SortKey::kPid && s.sort != SortKey::kUser && s.sort != SortKey::kGpu;
      s.status = std::string("sorted by ") + SortKeyName(s.sort);
      return {std::move(s), {}};
    case 'r':
      s.sort_descending = !s.sort_descending;
      s.status = std::string("sorted by ") + SortKeyName(s.sort) +
                 (s.sort_descending ? ", largest first" : ", smallest first");
      return {std::move(s), {}};
    case 't':
      s.tree = !s.tree;
      s.status = s.tree ? "tree: workers under their run's parent" : "flat list";
      return {std::move(s), {}};
    case 'u':
    case 'g':
    case '/':
      s.dialog = Dialog::kInput;
      s.input_kind = ch == 'u'   ? InputKind::kUserFilter
                     : ch == 'g' ? InputKind::kGpuFilter
                                 : InputKind::kFind;
      s.input.clear();
      return {std::move(s), {}};
    case 'c':
      s.user_filter.clear();
      s.gpu_filter.clear();
      s.status = "filters cleared";
      return {std::move(s), {}};
    case '?':
    case 'h':
      s.dialog = Dialog::kHelp;
      return {std::move(s), {}};
    default:
      return {std::move(s), {}};
  }
}

UiState Reselect(UiState s, const std::vector<ProcessRow>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].pid == s.selected_pid && rows[i].gpu == s.selected_gpu) {
      s.selected = static_cast<int>(i);
      return s;
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].pid == s.selected_pid) return Select(std::move(s), rows, static_cast<int>(i));
  }
  return Select(std::move(s), rows, s.selected);
}

UiState FitScroll(UiState s, int visible, int row_count) {
  visible = std::max(1, visible);
  if (s.selected < s.scroll) s.scroll = s.selected;
  if (s.selected >= s.scroll + visible) s.scroll = s.selected - visible + 1;
  s.scroll = std::clamp(s.scroll, 0, std::max(0, row_count - visible));
  return s;
}

}  // namespace gw::watch
