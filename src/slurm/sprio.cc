#include "slurm/sprio.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace gw::slurm {
namespace {

std::optional<double> Number(const std::string& text) {
  if (text.empty()) return 0.0;  // sprio leaves a factor without weight blank
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

Result<std::vector<PriorityFactors>> ParseSprio(std::string_view text) {
  std::vector<PriorityFactors> rows;
  size_t line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::vector<std::string> fields;
    size_t from = 0;
    for (int i = 0; i < 12; ++i) {
      const size_t bar = line.find('|', from);
      if (bar == std::string_view::npos) break;
      fields.emplace_back(line.substr(from, bar - from));
      from = bar + 1;
    }
    fields.emplace_back(line.substr(std::min(from, line.size())));
    const std::string where = "sprio, line " + std::to_string(line_number);
    if (fields.size() != 13) {
      return MakeError("malformed", where + ": " + std::to_string(fields.size()) +
                                        " fields, expected 13 (" + std::string(kSprioFormat) + ")");
    }
    PriorityFactors f;
    char* id_end = nullptr;
    const long long id = std::strtoll(fields[0].c_str(), &id_end, 10);
    if (fields[0].empty() || *id_end != '\0' || id <= 0) {
      return MakeError("malformed", where + ": \"" + fields[0] + "\" is not a job id");
    }
    f.job_id = id;
    f.user = fields[1];
    f.partition = fields[2];
    double* const numbers[] = {&f.priority,         &f.site,      &f.age,
                               &f.association,      &f.fairshare, &f.job_size,
                               &f.partition_factor, &f.qos,       &f.nice};
    for (size_t i = 0; i < std::size(numbers); ++i) {
      auto v = Number(fields[3 + i]);
      if (!v) {
        return MakeError("malformed", where + ": \"" + fields[3 + i] + "\" is not a number");
      }
      *numbers[i] = *v;
    }
    f.tres = fields[12] == "(null)" ? "" : fields[12];
    rows.push_back(std::move(f));
  }
  return rows;
}

std::string DescribeFactors(const PriorityFactors& f) {
  std::vector<std::pair<double, std::string>> parts = {{f.site, "site"},
                                                       {f.age, "age"},
                                                       {f.association, "association"},
                                                       {f.fairshare, "fair-share"},
                                                       {f.job_size, "job size"},
                                                       {f.partition_factor, "partition"},
                                                       {f.qos, "QOS"}};
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [value, name] : parts) {
    if (value == 0) continue;
    out += (out.empty() ? "" : " + ") + name + " " + FormatFigure(value);
  }
  if (!f.tres.empty()) out += (out.empty() ? "" : " + ") + std::string("TRES (") + f.tres + ")";
  if (f.nice != 0) {
    out += (f.nice > 0 ? " − nice " : " + nice ") + FormatFigure(std::fabs(f.nice));
  }
  return out.empty() ? "every factor is 0" : out;
}

std::string FormatFigure(double v) {
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

}  // namespace gw::slurm
