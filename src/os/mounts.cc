#include "os/mounts.h"

#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "os/errno_text.h"
#include "os/file_io.h"

namespace gw::os {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string_view o = s.substr(i + 1, 3);
      if (o[0] >= '0' && o[0] <= '3' && o[1] >= '0' && o[1] <= '7' && o[2] >= '0' && o[2] <= '7') {
        out.push_back(static_cast<char>((o[0] - '0') * 64 + (o[1] - '0') * 8 + (o[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < line.size()) {
    const size_t end = line.find(' ', at);
    const size_t stop = end == std::string_view::npos ? line.size() : end;
    if (stop > at) out.push_back(line.substr(at, stop - at));
    at = stop + 1;
  }
  return out;
}

bool HasOption(std::string_view options, std::string_view want) {
  size_t at = 0;
  for (;;) {
    const size_t comma = options.find(',', at);
    const size_t stop = comma == std::string_view::npos ? options.size() : comma;
    if (options.substr(at, stop - at) == want) return true;
    if (comma == std::string_view::npos) return false;
    at = comma + 1;
  }
}

// `mount_point` is `path` or a directory above it.
bool Covers(std::string_view mount_point, std::string_view path) {
  if (mount_point == "/") return true;
  return path.substr(0, mount_point.size()) == mount_point &&
         (path.size() == mount_point.size() || path[mount_point.size()] == '/');
}

}  // namespace

Result<MountFacts> FindMount(std::string_view mountinfo, std::string_view path) {
  std::optional<MountFacts> best;
  size_t line_no = 0;
  for (size_t at = 0; at < mountinfo.size();) {
    const size_t nl = mountinfo.find('\n', at);
    const size_t stop = nl == std::string_view::npos ? mountinfo.size() : nl;
    const std::string_view line = mountinfo.substr(at, stop - at);
    at = stop + 1;
    ++line_no;
    if (line.empty()) continue;
    // id parent major:minor root mount_point mount_options [optional...] - fstype source
    // super_options
    const std::vector<std::string_view> f = Fields(line);
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 6 || dash + 3 > f.size()) {
      return MakeError("malformed", "mountinfo line " + std::to_string(line_no) +
                                        ": expected \"... - fstype source options\"");
    }
    MountFacts m;
    m.mount_point = Unescape(f[4]);
    if (!Covers(m.mount_point, path)) continue;
    m.fstype = std::string(f[dash + 1]);
    m.source = Unescape(f[dash + 2]);
    const std::string_view super = dash + 3 < f.size() ? f[dash + 3] : std::string_view();
    m.read_only =
        HasOption(f[5], "ro") || HasOption(super, "ro") || HasOption(super, "emergency_ro");
    m.hides_pids = m.fstype == "proc" &&
                   (HasOption(super, "hidepid=2") || HasOption(super, "hidepid=invisible") ||
                    HasOption(super, "hidepid=4") || HasOption(super, "hidepid=ptraceable"));
    // The longest covering mount point wins; among equals the last (it hides the others).
    if (!best || m.mount_point.size() >= best->mount_point.size()) best = std::move(m);
  }
  if (!best) return MakeError("not_found", "no mount holds " + std::string(path));
  return *best;
}

Result<MountFacts> MountOf(const std::string& path, const std::string& mountinfo_path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return MakeError("io", path + ": " + ErrnoText(errno));
  }
  Result<std::string> table = ReadFileBounded(mountinfo_path, 16 << 20);
  if (!table.ok()) return MakeError("io", table.error().message);
  return FindMount(*table, resolved);
}

}  // namespace gw::os
