#include "slurm/hostlist.h"

#include <charconv>

namespace gw::slurm {
namespace {

Error Bad(std::string_view expression, const std::string& why) {
  return MakeError("bad_hostlist", "hostlist \"" + std::string(expression) + "\": " + why);
}

// The items of one bracket group: "1-3,5" -> "1", "2", "3", "5".
Result<std::vector<std::string>> ExpandRange(std::string_view whole, std::string_view inside,
                                             size_t max_names) {
  std::vector<std::string> out;
  if (inside.empty()) return Bad(whole, "empty brackets");
  size_t start = 0;
  while (start <= inside.size()) {
    size_t comma = inside.find(',', start);
    if (comma == std::string_view::npos) comma = inside.size();
    const std::string_view item = inside.substr(start, comma - start);
    const size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text =
        dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    uint64_t lo = 0;
    uint64_t hi = 0;
    auto digits = [](std::string_view t) {
      return !t.empty() && t.size() <= 18 && t.find_first_not_of("0123456789") == t.npos;
    };
    if (!digits(lo_text) || !digits(hi_text)) {
      return Bad(whole, "\"" + std::string(item) + "\" is not a number or a range");
    }
    std::from_chars(lo_text.data(), lo_text.data() + lo_text.size(), lo);
    std::from_chars(hi_text.data(), hi_text.data() + hi_text.size(), hi);
    if (hi < lo) return Bad(whole, "the range \"" + std::string(item) + "\" runs backwards");
    if (hi - lo >= max_names || out.size() + (hi - lo + 1) > max_names) {
      return Bad(whole, "more than " + std::to_string(max_names) + " names");
    }
    const size_t width = lo_text.size();
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      out.push_back(std::move(n));
    }
    start = comma + 1;
  }
  return out;
}

// One comma-free item at the top level: "r[1-2]n[1-2]-ib".
Status ExpandItem(std::string_view whole, std::string_view item, size_t max_names,
                  std::vector<std::string>* out) {
  std::vector<std::string> partial = {""};
  size_t at = 0;
  while (at < item.size()) {
    const size_t open = item.find('[', at);
    const std::string_view literal = item.substr(at, open == item.npos ? item.npos : open - at);
    if (literal.find(']') != std::string_view::npos) return Bad(whole, "unbalanced ']'");
    for (std::string& p : partial) p.append(literal);
    if (open == item.npos) break;
    const size_t close = item.find(']', open);
    if (close == item.npos) return Bad(whole, "unbalanced '['");
    Result<std::vector<std::string>> range =
        ExpandRange(whole, item.substr(open + 1, close - open - 1), max_names);
    if (!range.ok()) return range.error();
    if (partial.size() * range->size() > max_names) {
      return Bad(whole, "more than " + std::to_string(max_names) + " names");
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * range->size());
    for (const std::string& p : partial) {
      for (const std::string& r : *range) next.push_back(p + r);
    }
    partial = std::move(next);
    at = close + 1;
  }
  if (out->size() + partial.size() > max_names) {
    return Bad(whole, "more than " + std::to_string(max_names) + " names");
  }
  for (std::string& p : partial) {
    if (!p.empty()) out->push_back(std::move(p));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view expression, size_t max_names) {
  std::vector<std::string> out;
  if (expression.empty() || expression == "(null)") return out;
  // Split at the commas outside brackets.
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= expression.size(); ++i) {
    const char c = i < expression.size() ? expression[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) return Bad(expression, "unbalanced brackets");
    if (c == ',' && depth == 0) {
      const std::string_view item = expression.substr(start, i - start);
      if (Status s = ExpandItem(expression, item, max_names, &out); !s.ok()) return s.error();
      start = i + 1;
    }
  }
  if (depth != 0) return Bad(expression, "unbalanced '['");
  return out;
}

}  // namespace gw::slurm
