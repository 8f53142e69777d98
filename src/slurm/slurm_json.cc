#include "slurm/slurm_json.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/text.h"

namespace gw::slurm {
namespace {

using nlohmann::json;

std::string TypeName(const json& j) { return j.type_name(); }

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Reads typed fields out of JSON objects, remembering the first field of the
// wrong type (with its path) so that the parsers read on and report once.
class FieldReader {
 public:
  bool failed() const { return error_.has_value(); }
  const Error& error() const { return *error_; }

  void Fail(const std::string& path, const std::string& what) {
    if (!error_) error_ = MakeError("malformed", path + ": " + what);
  }

  // The member `key` of `obj`, nullptr when absent or null.
  static const json* Find(const json& obj, std::string_view key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // A string; nullopt when absent or null.
  std::optional<std::string> String(const json& obj, std::string_view key,
                                    const std::string& path) {
    const json* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      Fail(path, "expected a string, got " + TypeName(*v));
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  // As String, but the empty string is unknown too.
  std::optional<std::string> NonEmptyString(const json& obj, std::string_view key,
                                            const std::string& path) {
    auto s = String(obj, key, path);
    if (s && s->empty()) return std::nullopt;
    return s;
  }

  // An integer: a plain JSON integer, or the later layouts' {"set", "infinite",
  // "number"} (unset or infinite: nullopt).
  std::optional<int64_t> Integer(const json& obj, std::string_view key, const std::string& path) {
    const json* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    return IntegerValue(*v, path);
  }

  std::optional<int64_t> IntegerValue(const json& v, const std::string& path) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        Fail(path, "integer out of range");
        return std::nullopt;
      }
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_object()) {
      const json* set = Find(v, "set");
      const json* infinite = Find(v, "infinite");
      if (set != nullptr && !set->is_boolean()) {
        Fail(path + ".set", "expected a boolean, got " + TypeName(*set));
        return std::nullopt;
      }
      if (infinite != nullptr && !infinite->is_boolean()) {
        Fail(path + ".infinite", "expected a boolean, got " + TypeName(*infinite));
        return std::nullopt;
      }
      if ((infinite != nullptr && infinite->get<bool>()) || (set != nullptr && !set->get<bool>())) {
        return std::nullopt;
      }
      const json* number = Find(v, "number");
      if (number == nullptr) return std::nullopt;
      if (number->is_object()) {
        Fail(path + ".number", "expected an integer, got object");
        return std::nullopt;
      }
      return IntegerValue(*number, path + ".number");
    }
    Fail(path, "expected an integer, got " + TypeName(v));
    return std::nullopt;
  }

  // An integer or a string of digits (meta.slurm.version of v0.0.40).
  std::optional<int> SmallNumber(const json& obj, std::string_view key, const std::string& path) {
    const json* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      int n = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec != std::errc() || end != s.data() + s.size()) {
        // Quoted through the terminal sanitiser: a newline in the value must not
        // break the one-line error (found by fuzz_slurm_json).
        Fail(path, "expected a number, got \"" + SanitizeForTerminal(s.substr(0, 64)) + "\"");
        return std::nullopt;
      }
      return n;
    }
    auto n = IntegerValue(*v, path);
    if (!n) return std::nullopt;
    if (*n < 0 || *n > std::numeric_limits<int>::max()) {
      Fail(path, "number out of range");
      return std::nullopt;
    }
    return static_cast<int>(*n);
  }

  // An array of strings; empty when absent or null.
  std::vector<std::string> StringList(const json& obj, std::string_view key,
                                      const std::string& path) {
    std::vector<std::string> out;
    const json* v = Find(obj, key);
    if (v == nullptr) return out;
    if (!v->is_array()) {
      Fail(path, "expected an array, got " + TypeName(*v));
      return out;
    }
    for (size_t i = 0; i < v->size(); ++i) {
      const json& item = (*v)[i];
      if (!item.is_string()) {
        Fail(path + "[" + std::to_string(i) + "]", "expected a string, got " + TypeName(item));
        return out;
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  // An object member; nullptr when absent or null, and (recorded) when it is
  // not an object.
  const json* Object(const json& obj, std::string_view key, const std::string& path) {
    const json* v = Find(obj, key);
    if (v != nullptr && !v->is_object()) {
      Fail(path, "expected an object, got " + TypeName(*v));
      return nullptr;
    }
    return v;
  }

  // An array member; nullptr when absent or null, and (recorded) when it is
  // not an array.
  const json* Array(const json& obj, std::string_view key, const std::string& path) {
    const json* v = Find(obj, key);
    if (v != nullptr && !v->is_array()) {
      Fail(path, "expected an array, got " + TypeName(*v));
      return nullptr;
    }
    return v;
  }

  // A gres string field parsed with ParseGresList.
  std::optional<std::vector<Gres>> GresField(const json& obj, std::string_view key,
                                             const std::string& path) {
    auto s = String(obj, key, path);
    if (!s) return std::nullopt;
    auto parsed = ParseGresList(*s);
    if (!parsed) {
      Fail(path, parsed.error().message);
      return std::nullopt;
    }
    return std::move(parsed).value();
  }

 private:
  std::optional<Error> error_;
};

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

constexpr std::array<std::string_view, 7> kNodeBaseStates = {
    "UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE"};
constexpr std::array<std::string_view, 12> kJobBaseStates = {
    "PENDING", "RUNNING",   "SUSPENDED", "COMPLETED", "CANCELLED",     "FAILED",
    "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "OUT_OF_MEMORY", "DEADLINE"};

template <size_t N>
bool IsOneOf(const std::string& s, const std::array<std::string_view, N>& names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

// A state that is a string ("idle"; the flags elsewhere) or an array of
// names (["IDLE", "DRAIN"]): the base state and the flags, upper case.
template <size_t N>
void ReadState(FieldReader& r, const json& obj, std::string_view key, const std::string& path,
               const std::array<std::string_view, N>& base_states,
               std::optional<std::string>* state, std::vector<std::string>* flags) {
  const json* v = FieldReader::Find(obj, key);
  if (v == nullptr) return;
  if (v->is_string()) {
    *state = Upper(v->get<std::string>());
    return;
  }
  if (!v->is_array()) {
    r.Fail(path, "expected a string or an array, got " + TypeName(*v));
    return;
  }
  for (const std::string& name : r.StringList(obj, key, path)) {
    std::string upper = Upper(name);
    if (!*state && IsOneOf(upper, base_states)) {
      *state = std::move(upper);
    } else {
      flags->push_back(std::move(upper));
    }
  }
}

// "v0.0.38" out of "openapi/v0.0.38", "data_parser/v0.0.40" or "v0.0.40".
std::optional<std::string> VersionPart(const std::optional<std::string>& plugin) {
  if (!plugin) return std::nullopt;
  const size_t slash = plugin->rfind('/');
  std::string v = slash == std::string::npos ? *plugin : plugin->substr(slash + 1);
  if (v.size() < 2 || v[0] != 'v') return std::nullopt;
  return v;
}

// The third number of "v0.0.N"; nullopt for another form.
std::optional<int> ParserMinor(const std::string& version) {
  constexpr std::string_view kPrefix = "v0.0.";
  if (version.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  int n = 0;
  const char* begin = version.data() + kPrefix.size();
  const char* end = version.data() + version.size();
  auto [p, ec] = std::from_chars(begin, end, n);
  if (ec != std::errc() || p != end) return std::nullopt;
  return n;
}

std::vector<std::string> ReadErrors(FieldReader& r, const json& doc) {
  std::vector<std::string> out;
  const json* errors = r.Array(doc, "errors", "errors");
  if (errors == nullptr) return out;
  for (size_t i = 0; i < errors->size(); ++i) {
    const json& e = (*errors)[i];
    if (e.is_string()) {
      out.push_back(e.get<std::string>());
      continue;
    }
    if (!e.is_object()) {
      r.Fail(Index("errors", i), "expected an object, got " + TypeName(e));
      return out;
    }
    const std::string path = Index("errors", i);
    auto description = r.NonEmptyString(e, "description", path + ".description");
    auto name = r.NonEmptyString(e, "error", path + ".error");
    out.push_back(description ? *description
                  : name      ? *name
                              : e.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return out;
}

// The meta of a document and the layout it is read as: from the plugin it
// names, else from its release, else from its shape (has_v0039_key: the
// document has the key only v0.0.39+ write, "sinfo").
SlurmMeta ReadMeta(FieldReader& r, const json& doc, bool has_v0039_key) {
  SlurmMeta meta;
  const json* m = r.Object(doc, "meta", "meta");
  std::optional<std::string> plugin;
  if (m != nullptr) {
    // 22.05: meta.plugin.type "openapi/v0.0.38"; 23.02: meta.plugins.data_parser;
    // 23.11: meta.plugin.data_parser.
    if (const json* p = r.Object(*m, "plugin", "meta.plugin")) {
      plugin = r.NonEmptyString(*p, "data_parser", "meta.plugin.data_parser");
      if (!plugin) plugin = r.NonEmptyString(*p, "type", "meta.plugin.type");
    }
    if (const json* p = r.Object(*m, "plugins", "meta.plugins"); p != nullptr && !plugin) {
      plugin = r.NonEmptyString(*p, "data_parser", "meta.plugins.data_parser");
    }
    const char* slurm_key = FieldReader::Find(*m, "Slurm") != nullptr ? "Slurm" : "slurm";
    const std::string slurm_path = std::string("meta.") + slurm_key;
    if (const json* s = r.Object(*m, slurm_key, slurm_path)) {
      meta.release = r.NonEmptyString(*s, "release", slurm_path + ".release");
      if (const json* v = r.Object(*s, "version", slurm_path + ".version")) {
        meta.major = r.SmallNumber(*v, "major", slurm_path + ".version.major");
        meta.minor = r.SmallNumber(*v, "minor", slurm_path + ".version.minor");
        meta.micro = r.SmallNumber(*v, "micro", slurm_path + ".version.micro");
      }
    }
  }
  meta.data_parser = VersionPart(plugin);
  std::optional<int> minor = meta.data_parser ? ParserMinor(*meta.data_parser) : std::nullopt;
  if (!minor && meta.major && meta.minor) {
    // No plugin named: the release decides (22.05 -> .38, 23.02 -> .39, 23.11+ -> .40).
    const int release = *meta.major * 100 + *meta.minor;
    minor = release < 2302 ? 38 : release < 2311 ? 39 : 40;
  }
  if (!minor) minor = has_v0039_key ? 39 : 38;
  // Later data_parsers (v0.0.41+) are read as the newest layout known here.
  meta.layout = *minor <= 38   ? JsonLayout::kV0038
                : *minor == 39 ? JsonLayout::kV0039
                               : JsonLayout::kV0040;
  meta.errors = ReadErrors(r, doc);
  return meta;
}

Result<json> ParseDocument(std::string_view text, std::string_view what) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return MakeError("malformed", std::string(what) + ": not valid JSON");
  }
  if (!doc.is_object()) {
    return MakeError("malformed", std::string(what) + ": expected an object, got " + TypeName(doc));
  }
  return doc;
}

// A v0.0.38 node (22.05 "nodes" element).
Node ReadNodeV0038(FieldReader& r, const json& n, const std::string& path) {
  Node node;
  if (!n.is_object()) {
    r.Fail(path, "expected an object, got " + TypeName(n));
    return node;
  }
  auto name = r.NonEmptyString(n, "name", path + ".name");
  if (!name && !r.failed()) r.Fail(path + ".name", "missing");
  node.name = name.value_or("");
  ReadState(r, n, "state", path + ".state", kNodeBaseStates, &node.state, &node.state_flags);
  for (std::string& flag : r.StringList(n, "state_flags", path + ".state_flags")) {
    node.state_flags.push_back(Upper(std::move(flag)));
  }
  node.reason = r.NonEmptyString(n, "reason", path + ".reason");
  node.cpus = r.Integer(n, "cpus", path + ".cpus");
  node.alloc_cpus = r.Integer(n, "alloc_cpus", path + ".alloc_cpus");
  node.gres = r.GresField(n, "gres", path + ".gres");
  node.gres_used = r.GresField(n, "gres_used", path + ".gres_used");
  node.partitions = r.StringList(n, "partitions", path + ".partitions");
  return node;
}

// The nodes of v0.0.39+ "sinfo" entries, each a group of nodes alike in the
// columns sinfo groups by. Values that are sums over the group (CPUs) or
// differ per node (gres used) are kept only when the group is one node.
void ReadSinfoEntries(FieldReader& r, const json& entries, std::vector<Node>* nodes) {
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < entries.size() && !r.failed(); ++i) {
    const std::string path = Index("sinfo", i);
    const json& e = entries[i];
    if (!e.is_object()) {
      r.Fail(path, "expected an object, got " + TypeName(e));
      return;
    }
    std::vector<std::string> names;
    if (const json* ns = r.Object(e, "nodes", path + ".nodes")) {
      names = r.StringList(*ns, "nodes", path + ".nodes.nodes");
    }
    Node proto;
    if (const json* nd = r.Object(e, "node", path + ".node")) {
      ReadState(r, *nd, "state", path + ".node.state", kNodeBaseStates, &proto.state,
                &proto.state_flags);
    }
    if (const json* g = r.Object(e, "gres", path + ".gres")) {
      proto.gres = r.GresField(*g, "total", path + ".gres.total");
      auto used = r.GresField(*g, "used", path + ".gres.used");
      if (names.size() == 1) proto.gres_used = std::move(used);
    }
    if (const json* c = r.Object(e, "cpus", path + ".cpus")) {
      auto total = r.Integer(*c, "total", path + ".cpus.total");
      auto allocated = r.Integer(*c, "allocated", path + ".cpus.allocated");
      if (names.size() == 1) {
        proto.cpus = total;
        proto.alloc_cpus = allocated;
      }
    }
    if (const json* reason = r.Object(e, "reason", path + ".reason")) {
      proto.reason = r.NonEmptyString(*reason, "description", path + ".reason.description");
    }
    std::optional<std::string> partition;
    if (const json* p = r.Object(e, "partition", path + ".partition")) {
      partition = r.NonEmptyString(*p, "name", path + ".partition.name");
    }
    for (const std::string& name : names) {
      auto [it, inserted] = by_name.emplace(name, nodes->size());
      if (inserted) {
        Node node = proto;
        node.name = name;
        nodes->push_back(std::move(node));
      }
      Node& node = (*nodes)[it->second];
      if (partition && std::find(node.partitions.begin(), node.partitions.end(), *partition) ==
                           node.partitions.end()) {
        node.partitions.push_back(*partition);
      }
    }
  }
}

Job ReadJob(FieldReader& r, const json& j, const std::string& path) {
  Job job;
  if (!j.is_object()) {
    r.Fail(path, "expected an object, got " + TypeName(j));
    return job;
  }
  auto id = r.Integer(j, "job_id", path + ".job_id");
  if (!id && !r.failed()) r.Fail(path + ".job_id", "missing");
  job.id = id.value_or(0);
  job.user = r.NonEmptyString(j, "user_name", path + ".user_name");
  job.name = r.String(j, "name", path + ".name");
  ReadState(r, j, "job_state", path + ".job_state", kJobBaseStates, &job.state, &job.state_flags);
  job.reason = r.NonEmptyString(j, "state_reason", path + ".state_reason");
  job.state_description = r.NonEmptyString(j, "state_description", path + ".state_description");
  job.partition = r.NonEmptyString(j, "partition", path + ".partition");
  job.nodes = r.NonEmptyString(j, "nodes", path + ".nodes");
  for (const char* key : {"tres_per_node", "tres_per_job"}) {
    auto s = r.String(j, key, path + "." + key);
    if (!s) continue;
    auto requests = ParseGresRequests(*s);
    if (!requests) {
      r.Fail(path + "." + key, requests.error().message);
      continue;
    }
    (std::string_view(key) == "tres_per_node" ? job.gres_per_node : job.gres_per_job) =
        std::move(requests).value();
  }
  const std::vector<std::string> detail = r.StringList(j, "gres_detail", path + ".gres_detail");
  for (size_t i = 0; i < detail.size(); ++i) {
    auto gres = ParseGresList(detail[i]);
    if (!gres) {
      r.Fail(Index(path + ".gres_detail", i), gres.error().message);
      break;
    }
    job.gres_detail.push_back(std::move(gres).value());
  }
  // 0 is Slurm's "not set" for both times.
  job.submit_time = r.Integer(j, "submit_time", path + ".submit_time");
  if (job.submit_time == 0) job.submit_time.reset();
  job.start_time = r.Integer(j, "start_time", path + ".start_time");
  if (job.start_time == 0) job.start_time.reset();
  job.priority = r.Integer(j, "priority", path + ".priority");
  job.node_count = r.Integer(j, "node_count", path + ".node_count");
  job.time_limit_min = r.Integer(j, "time_limit", path + ".time_limit");
  job.required_nodes = r.NonEmptyString(j, "required_nodes", path + ".required_nodes");
  job.qos = r.NonEmptyString(j, "qos", path + ".qos");
  job.account = r.NonEmptyString(j, "account", path + ".account");
  job.restarts = r.Integer(j, "restart_cnt", path + ".restart_cnt");
  job.eligible_time = r.Integer(j, "eligible_time", path + ".eligible_time");
  if (job.eligible_time == 0) job.eligible_time.reset();
  return job;
}

// Splits at commas outside parentheses.
std::vector<std::string_view> SplitTopLevel(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && depth > 0) --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ':') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// "2", "4K": a count; nullopt when the text is not one.
std::optional<int64_t> ParseCount(std::string_view s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return std::nullopt;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc()) return std::nullopt;
  std::string_view suffix(end, s.data() + s.size() - end);
  if (suffix.empty()) return n;
  if (suffix.size() != 1) return std::nullopt;
  static constexpr std::string_view kSuffixes = "KMGT";
  const size_t power = kSuffixes.find(static_cast<char>(std::toupper(suffix[0])));
  if (power == std::string_view::npos) return std::nullopt;
  for (size_t i = 0; i <= power; ++i) {
    if (n > std::numeric_limits<int64_t>::max() / 1024) return std::nullopt;
    n *= 1024;
  }
  return n;
}

bool IsEmptyGres(std::string_view s) { return s.empty() || s == "N/A" || s == "(null)"; }

}  // namespace

std::string_view LayoutName(JsonLayout layout) {
  switch (layout) {
    case JsonLayout::kV0038:
      return "v0.0.38";
    case JsonLayout::kV0039:
      return "v0.0.39";
    case JsonLayout::kV0040:
      return "v0.0.40";
  }
  return "v0.0.38";
}

bool Node::HasFlag(std::string_view flag) const {
  return std::find(state_flags.begin(), state_flags.end(), flag) != state_flags.end();
}

Result<std::vector<Gres>> ParseGresList(std::string_view text) {
  std::vector<Gres> out;
  text = Trim(text);
  if (IsEmptyGres(text)) return out;
  for (std::string_view entry : SplitTopLevel(text)) {
    entry = Trim(entry);
    if (entry.empty()) continue;
    Gres g;
    std::string_view head = entry;
    const size_t open = entry.find('(');
    if (open != std::string_view::npos) {
      if (entry.back() != ')') {
        return MakeError("malformed", "gres \"" + std::string(entry) + "\": unclosed '('");
      }
      head = entry.substr(0, open);
      // "IDX:0-1", "S:0-1" or "S:0-1,IDX:0,2": IDX comes last and its list may
      // hold commas itself, so it runs to the closing parenthesis.
      std::string_view inner = entry.substr(open + 1, entry.size() - open - 2);
      const size_t idx = inner.find("IDX:");
      if (idx != std::string_view::npos && (idx == 0 || inner[idx - 1] == ',')) {
        std::string_view list = Trim(inner.substr(idx + 4));
        if (!IsEmptyGres(list)) g.indexes = std::string(list);
      }
    }
    std::vector<std::string_view> fields = SplitColons(head);
    if (fields.empty() || fields[0].empty() || fields.size() > 3) {
      return MakeError("malformed",
                       "gres \"" + std::string(entry) + "\": expected name[:type][:count]");
    }
    g.name = std::string(fields[0]);
    g.count = 1;
    if (fields.size() >= 2) {
      auto count = ParseCount(fields.back());
      if (count) {
        g.count = *count;
        if (fields.size() == 3) g.type = std::string(fields[1]);
      } else if (fields.size() == 2 && !fields[1].empty()) {
        g.type = std::string(fields[1]);  // "gpu:a100": one of that type
      } else {
        return MakeError("malformed", "gres \"" + std::string(entry) + "\": bad count \"" +
                                          std::string(fields.back()) + "\"");
      }
    }
    if (g.type && g.type->empty()) {
      return MakeError("malformed", "gres \"" + std::string(entry) + "\": empty type");
    }
    out.push_back(std::move(g));
  }
  return out;
}

Result<std::vector<GresRequest>> ParseGresRequests(std::string_view text) {
  std::vector<GresRequest> out;
  text = Trim(text);
  if (IsEmptyGres(text)) return out;
  for (std::string_view entry : SplitTopLevel(text)) {
    entry = Trim(entry);
    std::string_view rest;
    if (entry.substr(0, 5) == "gres:" || entry.substr(0, 5) == "gres/") {
      rest = entry.substr(5);
    } else {
      continue;  // cpu=, mem=, license/...: not a generic resource
    }
    auto parsed = ParseGresList(rest);
    if (!parsed) {
      return MakeError("malformed",
                       "tres \"" + std::string(entry) + "\": " + parsed.error().message);
    }
    for (Gres& g : parsed.value()) {
      out.push_back(GresRequest{std::move(g.name), std::move(g.type), g.count});
    }
  }
  return out;
}

Result<SinfoDocument> ParseSinfoJson(std::string_view text) try {
  auto doc = ParseDocument(text, "sinfo --json");
  if (!doc) return doc.error();
  FieldReader r;
  SinfoDocument out;
  out.meta = ReadMeta(r, *doc, FieldReader::Find(*doc, "sinfo") != nullptr);
  if (out.meta.layout == JsonLayout::kV0038) {
    const json* nodes = r.Array(*doc, "nodes", "nodes");
    if (nodes == nullptr && !r.failed()) r.Fail("nodes", "missing");
    for (size_t i = 0; nodes != nullptr && i < nodes->size() && !r.failed(); ++i) {
      out.nodes.push_back(ReadNodeV0038(r, (*nodes)[i], Index("nodes", i)));
    }
  } else {
    const json* entries = r.Array(*doc, "sinfo", "sinfo");
    if (entries == nullptr && !r.failed()) r.Fail("sinfo", "missing");
    if (entries != nullptr) ReadSinfoEntries(r, *entries, &out.nodes);
  }
  if (r.failed()) return r.error();
  return out;
} catch (const json::exception& e) {
  return MakeError("malformed", std::string("sinfo --json: ") + e.what());
}

Result<SqueueDocument> ParseSqueueJson(std::string_view text) try {
  auto doc = ParseDocument(text, "squeue --json");
  if (!doc) return doc.error();
  FieldReader r;
  SqueueDocument out;
  out.meta = ReadMeta(r, *doc, false);
  const json* jobs = r.Array(*doc, "jobs", "jobs");
  if (jobs == nullptr && !r.failed()) r.Fail("jobs", "missing");
  for (size_t i = 0; jobs != nullptr && i < jobs->size() && !r.failed(); ++i) {
    out.jobs.push_back(ReadJob(r, (*jobs)[i], Index("jobs", i)));
  }
  if (r.failed()) return r.error();
  return out;
} catch (const json::exception& e) {
  return MakeError("malformed", std::string("squeue --json: ") + e.what());
}

}  // namespace gw::slurm
