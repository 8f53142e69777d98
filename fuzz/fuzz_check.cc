#include "fuzz/fuzz_check.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>

#include <nlohmann/json.hpp>

#include "fuzz/text_checks.h"

namespace gw::fuzz {
namespace {

std::string Excerpt(std::string_view text, size_t at) {
  const size_t from = at > 40 ? at - 40 : 0;
  return nlohmann::json(std::string(text.substr(from, 80)))
      .dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void Fail(std::string_view what, std::string_view detail) {
  fprintf(stderr, "invariant broken: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
          static_cast<int>(detail.size()), detail.data());
  abort();
}

void CheckJsonParses(std::string_view text, std::string_view what) {
  if (!nlohmann::json::accept(text)) {
    Fail(what, "does not parse as JSON: " + Excerpt(text, 0));
  }
}

void CheckError(const Error& error, std::initializer_list<std::string_view> codes,
                std::string_view must_name, std::string_view what) {
  bool known = false;
  for (std::string_view c : codes) known = known || error.code == c;
  const std::string shown = std::string(what) + ": [" + error.code + "] " + error.message;
  if (!known) Fail("error code is one of the documented ones", shown);
  if (error.message.empty()) Fail("error message is not empty", shown);
  if (error.message.find('\n') != std::string::npos) Fail("error message is one line", shown);
  if (error.message.find(must_name) == std::string::npos) {
    Fail("error message names the input", shown);
  }
}

void CheckTerminalSafe(std::string_view text, std::string_view what, bool allow_tab) {
  size_t at = 0;
  const std::string unsafe = UnsafeCharacter(text, allow_tab, &at);
  if (!unsafe.empty()) Fail(what, unsafe + " at " + Excerpt(text, at));
}

namespace {

std::string temp_dir;
// One path per name, kept so the caller may hold the reference.
std::map<std::string, std::string, std::less<>> temp_paths;

// A long run must not leave its files behind in /dev/shm.
void RemoveTempFiles() {
  for (const auto& [name, path] : temp_paths) unlink(path.c_str());
  rmdir(temp_dir.c_str());
}

}  // namespace

const std::string& WriteTempFile(std::string_view bytes, std::string_view name) {
  if (temp_dir.empty()) {
    std::string tmpl =
        access("/dev/shm", W_OK) == 0 ? "/dev/shm/gw_fuzz.XXXXXX" : "/tmp/gw_fuzz.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) Fail("mkdtemp", tmpl);
    temp_dir = tmpl;
    atexit(RemoveTempFiles);
  }
  auto& paths = temp_paths;
  const std::string& dir = temp_dir;
  auto it = paths.find(name);
  if (it == paths.end()) it = paths.emplace(std::string(name), dir + "/" + std::string(name)).first;
  const int fd = open(it->second.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) Fail("open temp file", it->second);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) Fail("write temp file", it->second);
    done += static_cast<size_t>(n);
  }
  close(fd);
  return it->second;
}

}  // namespace gw::fuzz
