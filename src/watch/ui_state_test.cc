#include "watch/ui_state.h"

#include <gtest/gtest.h>

#include "watch/rows.h"
#include "watch/test_fixtures.h"

namespace gw::watch {
namespace {

std::vector<ProcessRow> Rows() { return BuildRows(testing::TwoGpus(), UiState{}); }

// The first row selected, as on the first screen.
UiState Selected() { return Reselect(UiState{}, Rows()); }

Reduced Press(UiState s, char32_t c) { return Reduce(std::move(s), Key::Char(c), Rows(), 10); }
Reduced Press(UiState s, KeyCode k) { return Reduce(std::move(s), Key::Code(k), Rows(), 10); }

UiState Type(UiState s, const std::string& text) {
  for (char c : text) s = Press(std::move(s), static_cast<char32_t>(c)).state;
  return s;
}

TEST(UiState, ArrowsMoveTheSelectionWithinTheRows) {
  UiState s = Selected();
  EXPECT_EQ(s.selected_pid, 4242);
  s = Press(s, KeyCode::kDown).state;
  EXPECT_EQ(s.selected, 1);
  EXPECT_EQ(s.selected_pid, 5151);
  s = Press(s, KeyCode::kDown).state;  // Stays on the last row.
  EXPECT_EQ(s.selected, 1);
  s = Press(s, 'k').state;
  EXPECT_EQ(s.selected_pid, 4242);
  s = Press(s, KeyCode::kEnd).state;
  EXPECT_EQ(s.selected, 1);
  s = Press(s, KeyCode::kHome).state;
  EXPECT_EQ(s.selected, 0);
}

TEST(UiState, QQuits) {
  EXPECT_EQ(Press(UiState{}, 'q').effect.kind, EffectKind::kQuit);
  UiState help;
  help.dialog = Dialog::kHelp;
  EXPECT_EQ(Press(help, 'q').effect.kind, EffectKind::kQuit);
  UiState confirm;
  confirm.dialog = Dialog::kConfirm;
  EXPECT_EQ(Press(confirm, 'q').effect.kind, EffectKind::kQuit);
}

TEST(UiState, StopAsksForAPlanThenConfirmationThenCarriesItOut) {
  UiState s = Press(Selected(), KeyCode::kDown).state;
  Reduced r = Press(s, 'x');
  EXPECT_EQ(r.effect.kind, EffectKind::kPlanStop);
  EXPECT_EQ(r.effect.pid, 5151);
  EXPECT_FALSE(r.effect.tree);
  EXPECT_EQ(r.state.dialog, Dialog::kPreparing);
  // Keys other than q do nothing while the plan is made.
  EXPECT_EQ(Press(r.state, 'y').effect.kind, EffectKind::kNone);
  s = r.state;
  s.dialog = Dialog::kConfirm;
  EXPECT_EQ(Press(s, KeyCode::kEnter).effect.kind, EffectKind::kNone);  // Only y confirms.
  r = Press(s, 'y');
  EXPECT_EQ(r.effect.kind, EffectKind::kConfirmStop);
  EXPECT_EQ(r.state.dialog, Dialog::kRunning);
  r = Press(s, 'n');
  EXPECT_EQ(r.effect.kind, EffectKind::kCancelStop);
  EXPECT_EQ(r.state.dialog, Dialog::kNone);
  EXPECT_EQ(Press(s, KeyCode::kEscape).effect.kind, EffectKind::kCancelStop);
  EXPECT_TRUE(Press(Selected(), 'X').effect.tree);
  EXPECT_EQ(Press(Selected(), KeyCode::kF9).effect.kind, EffectKind::kPlanStop);
}

TEST(UiState, ReadonlyRefusesEveryAction) {
  UiState s = Selected();
  s.readonly = true;
  for (Key k :
       {Key::Char('x'), Key::Char('X'), Key::Code(KeyCode::kF9), Key::Code(KeyCode::kDelete)}) {
    Reduced r = Reduce(s, k, Rows(), 10);
    EXPECT_EQ(r.effect.kind, EffectKind::kNone);
    EXPECT_EQ(r.state.dialog, Dialog::kNone);
    EXPECT_NE(r.state.status.find("read-only"), std::string::npos);
  }
}

TEST(UiState, AProcessOutsideThisProcCannotBeStopped) {
  std::vector<ProcessRow> rows(1);
  rows[0].pid = 31337;
  rows[0].in_proc = false;
  Reduced r = Reduce(Reselect(UiState{}, rows), Key::Char('x'), rows, 10);
  EXPECT_EQ(r.effect.kind, EffectKind::kNone);
  EXPECT_NE(r.state.status.find("not in this /proc"), std::string::npos);
}

TEST(UiState, FiltersAreTypedAtAPrompt) {
  UiState s = Press(UiState{}, 'u').state;
  EXPECT_EQ(s.dialog, Dialog::kInput);
  s = Type(s, "bobb");
  s = Press(s, KeyCode::kBackspace).state;
  s = Press(s, KeyCode::kEnter).state;
  EXPECT_EQ(s.dialog, Dialog::kNone);
  EXPECT_EQ(s.user_filter, "bob");
  s = Press(Type(Press(s, 'g').state, "3, 0"), KeyCode::kEnter).state;
  EXPECT_EQ(s.gpu_filter, (std::vector<unsigned>{0, 3}));
  s = Press(Type(Press(s, 'g').state, "x"), KeyCode::kEnter).state;
  EXPECT_EQ(s.gpu_filter, (std::vector<unsigned>{0, 3}));  // Unchanged.
  EXPECT_NE(s.status.find("GPU filter"), std::string::npos);
  s = Press(s, 'c').state;
  EXPECT_TRUE(s.user_filter.empty());
  EXPECT_TRUE(s.gpu_filter.empty());
  // Escape leaves a prompt without applying it.
  s = Press(Type(Press(s, 'u').state, "alice"), KeyCode::kEscape).state;
  EXPECT_TRUE(s.user_filter.empty());
}

TEST(UiState, FindSelectsAPidOrACommand) {
  UiState s = Press(Type(Press(Selected(), '/').state, "5151"), KeyCode::kEnter).state;
  EXPECT_EQ(s.selected_pid, 5151);
  s = Press(Type(Press(s, '/').state, "train"), KeyCode::kEnter).state;
  EXPECT_EQ(s.selected_pid, 4242);
  s = Press(Type(Press(s, '/').state, "nothing-like-it"), KeyCode::kEnter).state;
  EXPECT_EQ(s.selected_pid, 4242);
  EXPECT_NE(s.status.find("not found"), std::string::npos);
}

TEST(UiState, SortCyclesAndReverses) {
  UiState s = Press(UiState{}, 's').state;
  EXPECT_EQ(s.sort, SortKey::kSm);
  EXPECT_TRUE(s.sort_descending);
  for (int i = 0; i < 3; ++i) s = Press(s, 's').state;
  EXPECT_EQ(s.sort, SortKey::kPid);
  EXPECT_FALSE(s.sort_descending);
  s = Press(s, 'r').state;
  EXPECT_TRUE(s.sort_descending);
  for (int i = 0; i < 3; ++i) s = Press(s, 's').state;
  EXPECT_EQ(s.sort, SortKey::kVram);
  EXPECT_TRUE(Press(s, 't').state.tree);
}

TEST(UiState, SelectionFollowsItsProcessWhenRowsMove) {
  UiState s = Press(Selected(), KeyCode::kDown).state;  // 5151, row 1.
  UiState by_age;
  by_age.sort = SortKey::kAge;  // 5151 is older: now row 0.
  auto rows = BuildRows(testing::TwoGpus(), by_age);
  s = Reselect(s, rows);
  EXPECT_EQ(s.selected, 0);
  EXPECT_EQ(s.selected_pid, 5151);
  // Gone: the same index, clamped, takes that row.
  rows.erase(rows.begin());
  s = Reselect(s, rows);
  EXPECT_EQ(s.selected, 0);
  EXPECT_EQ(s.selected_pid, 4242);
}

TEST(UiState, ScrollKeepsTheSelectionVisible) {
  UiState s;
  s.selected = 25;
  s = FitScroll(s, 10, 100);
  EXPECT_EQ(s.scroll, 16);
  s.selected = 3;
  s = FitScroll(s, 10, 100);
  EXPECT_EQ(s.scroll, 3);
  s.scroll = 95;
  s.selected = 99;
  s = FitScroll(s, 10, 100);
  EXPECT_EQ(s.scroll, 90);
}

TEST(UiState, GpuListParsing) {
  EXPECT_EQ(ParseGpuList(""), std::vector<unsigned>{});
  EXPECT_EQ(ParseGpuList("2,0 2"), (std::vector<unsigned>{0, 2}));
  EXPECT_FALSE(ParseGpuList("a"));
  EXPECT_FALSE(ParseGpuList("-1"));
}

}  // namespace
}  // namespace gw::watch
