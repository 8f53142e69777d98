#include "slurm/assoc_mgr.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <set>
#include <system_error>

namespace gw::slurm {
namespace {

std::vector<std::string_view> Pieces(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(separator, start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// "gpu2(3)" -> name "gpu2", number 3; a name without "(N)" has no number.
std::pair<std::string, std::optional<int64_t>> NameAndNumber(std::string_view text) {
  const size_t open = text.rfind('(');
  if (open == std::string_view::npos || text.back() != ')') return {std::string(text), {}};
  const std::string digits(text.substr(open + 1, text.size() - open - 2));
  char* end = nullptr;
  const long long n = std::strtoll(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\0') return {std::string(text), {}};
  return {std::string(text.substr(0, open)), static_cast<int64_t>(n)};
}

std::optional<double> Number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

// An id: a whole number that fits int64_t, else nullopt (a double cast to
// int64_t past its range is undefined).
std::optional<int64_t> WholeNumber(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// "3(2)", "N(0.60)", or a bare number (a limit without usage).
std::optional<LimitValue> ParseLimitValue(std::string_view text) {
  LimitValue v;
  const size_t open = text.find('(');
  if (open == std::string_view::npos) {
    v.limit = Number(text);
    if (!v.limit) return std::nullopt;
    return v;
  }
  if (text.back() != ')') return std::nullopt;
  const std::string_view limit = text.substr(0, open);
  const std::string_view used = text.substr(open + 1, text.size() - open - 2);
  if (limit != "N") {
    v.limit = Number(limit);
    if (!v.limit) return std::nullopt;
  }
  v.used = Number(used);
  if (!v.used) return std::nullopt;
  return v;
}

bool IsLimitKey(std::string_view key) {
  return key.starts_with("Grp") || key.starts_with("Max") || key.starts_with("Min");
}

// One "Key=Value" of a record into `set`; non-limit keys are left to the
// caller. False when a limit's value is not what the association manager
// prints.
bool AddLimit(std::string_view key, std::string_view value, LimitSet* set) {
  if (value.empty()) return true;
  if (value.find('=') == std::string_view::npos) {
    auto v = ParseLimitValue(value);
    if (!v) return false;
    set->scalars[std::string(key)] = *v;
    return true;
  }
  auto& list = set->tres[std::string(key)];
  for (std::string_view entry : Pieces(value, ',')) {
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    auto v = ParseLimitValue(entry.substr(eq + 1));
    if (!v) return false;
    list[std::string(entry.substr(0, eq))] = *v;
  }
  return true;
}

Error Malformed(size_t line_number, std::string_view why) {
  return MakeError("malformed", "scontrol show assoc_mgr, line " + std::to_string(line_number) +
                                    ": " + std::string(why));
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

}  // namespace

const LimitValue* LimitSet::Scalar(std::string_view key) const {
  auto it = scalars.find(std::string(key));
  return it == scalars.end() ? nullptr : &it->second;
}

const LimitValue* LimitSet::Tres(std::string_view key, std::string_view tres_name) const {
  auto it = tres.find(std::string(key));
  if (it == tres.end()) return nullptr;
  auto t = it->second.find(std::string(tres_name));
  return t == it->second.end() ? nullptr : &t->second;
}

const QosRecord* AssocMgrState::FindQos(std::string_view name) const {
  for (const QosRecord& q : qos) {
    if (q.name == name) return &q;
  }
  return nullptr;
}

std::vector<const AssocRecord*> AssocMgrState::Chain(std::string_view account,
                                                     std::string_view user) const {
  std::vector<const AssocRecord*> chain;
  for (const AssocRecord& a : associations) {
    if (a.account == account && a.user && *a.user == user && !a.partition) chain.push_back(&a);
  }
  std::set<std::string> seen;
  std::optional<std::string> next = std::string(account);
  while (next && seen.insert(*next).second) {
    const AssocRecord* found = nullptr;
    for (const AssocRecord& a : associations) {
      if (a.account == *next && !a.user) found = &a;
    }
    if (found == nullptr) break;
    chain.push_back(found);
    next = found->parent_account;
  }
  return chain;
}

Result<AssocMgrState> ParseAssocMgr(std::string_view text) {
  AssocMgrState state;
  size_t line_number = 0;
  for (std::string_view line : Pieces(text, '\n')) {
    ++line_number;
    const std::vector<std::string_view> words = Words(line);
    if (words.empty()) continue;
    const bool assoc = words[0].starts_with("ClusterName=");
    const bool qos = words[0].starts_with("QOS=");
    if (!assoc && !qos) continue;  // headers, user and resource records

    AssocRecord a;
    QosRecord q;
    // The block a word belongs to: the record, or one account's or user's
    // limits under a QOS ("Account Limits= lab={MaxJobsPA=N(0) ...}").
    LimitSet* block = assoc ? &a.limits : &q.limits;
    std::string pending_block;  // "Account" or "User" before "Limits="
    for (size_t i = 0; i < words.size(); ++i) {
      std::string_view w = words[i];
      if (w == "Account" || w == "User") {
        pending_block = std::string(w);
        continue;
      }
      if (w == "Limits=") continue;
      const size_t brace = w.find("={");
      if (qos && brace != std::string_view::npos) {
        const std::string owner(w.substr(0, brace));
        if (pending_block == "User") {
          const std::optional<int64_t> uid = WholeNumber(owner);
          if (!uid) return Malformed(line_number, "a user limit of uid \"" + owner + "\"");
          block = &q.users[*uid];
        } else {
          block = &q.accounts[owner];
        }
        w.remove_prefix(brace + 2);
        if (w.empty()) continue;
      }
      bool closes = false;
      if (!w.empty() && w.back() == '}') {
        closes = true;
        w.remove_suffix(1);
      }
      const size_t eq = w.find('=');
      if (eq != std::string_view::npos && eq > 0) {
        const std::string_view key = w.substr(0, eq);
        const std::string_view value = w.substr(eq + 1);
        if (IsLimitKey(key)) {
          if (!AddLimit(key, value, block)) {
            return Malformed(line_number, "the limit " + std::string(key) + "=" +
                                              std::string(value) + " is not \"LIMIT(USAGE)\"");
          }
        } else if (assoc && block == &a.limits) {
          if (key == "Account") {
            a.account = std::string(value);
          } else if (key == "UserName" && !value.empty()) {
            auto [name, uid] = NameAndNumber(value);
            a.user = name;
            a.uid = uid;
          } else if (key == "Partition" && !value.empty()) {
            a.partition = std::string(value);
          } else if (key == "ID") {
            a.id = WholeNumber(value);
          } else if (key == "ParentAccount" && !value.empty()) {
            auto [name, id] = NameAndNumber(value);
            a.parent_account = name;
            a.parent_id = id;
          }
        } else if (qos && key == "QOS") {
          q.name = NameAndNumber(value).first;
        }
      }
      if (closes) block = assoc ? &a.limits : &q.limits;
    }
    if (assoc) {
      if (a.account.empty()) return Malformed(line_number, "an association with no Account=");
      state.associations.push_back(std::move(a));
    } else {
      if (q.name.empty()) return Malformed(line_number, "a QOS with no name");
      state.qos.push_back(std::move(q));
    }
  }
  return state;
}

LimitLocation LocateLimit(const LimitSpec& spec) {
  LimitLocation at;
  const bool qos = spec.scope != LimitSpec::kAssociation;
  if (spec.scope == LimitSpec::kAccountOfQos || (qos && spec.per == LimitSpec::kPerAccount)) {
    at.block = LimitLocation::kPerAccount;
  } else if (qos && spec.per == LimitSpec::kPerUser) {
    at.block = LimitLocation::kPerUser;
  }
  const char* suffix = at.block == LimitLocation::kPerAccount ? "PA"
                       : at.block == LimitLocation::kPerUser  ? "PU"
                                                              : "";
  auto counted = [&](const char* what) {
    at.tres = false;
    if (spec.kind == LimitSpec::kGroup) {
      at.key = std::string("Grp") + what;
    } else {
      at.key = std::string("Max") + what + suffix;
    }
  };
  switch (spec.resource) {
    case LimitSpec::kJobs:
      counted("Jobs");
      return at;
    case LimitSpec::kSubmitJobs:
      counted("SubmitJobs");
      return at;
    case LimitSpec::kWall:
      at.tres = false;
      at.key = spec.kind == LimitSpec::kGroup ? "GrpWall" : "MaxWallPJ";
      return at;
    default:
      break;
  }
  if (spec.kind == LimitSpec::kMin) {
    at.key = "MinTRESPJ";
  } else if (spec.kind == LimitSpec::kGroup) {
    at.key = spec.measure == LimitSpec::kMinutes      ? "GrpTRESMins"
             : spec.measure == LimitSpec::kRunMinutes ? "GrpTRESRunMins"
                                                      : "GrpTRES";
  } else if (at.block != LimitLocation::kRecord) {
    at.key = std::string("MaxTRES") + suffix;
  } else if (spec.per == LimitSpec::kPerNode) {
    at.key = "MaxTRESPN";
  } else {
    at.key = spec.measure == LimitSpec::kMinutes ? "MaxTRESMinsPJ" : "MaxTRESPJ";
  }
  return at;
}

std::string TresName(LimitSpec::Resource resource, std::string_view gres_name) {
  switch (resource) {
    case LimitSpec::kCpu:
      return "cpu";
    case LimitSpec::kMemory:
      return "mem";
    case LimitSpec::kNode:
      return "node";
    case LimitSpec::kGres:
      return "gres/" + std::string(gres_name.empty() ? "gpu" : gres_name);
    case LimitSpec::kEnergy:
      return "energy";
    case LimitSpec::kBilling:
      return "billing";
    default:
      return "";
  }
}

}  // namespace gw::slurm
