// What every fuzz target checks besides "no crash": the invariants of
// accepted and rejected input (docs/reliability.md). A broken invariant
// prints what broke and aborts, so libFuzzer keeps the input as a crash.
#ifndef GPUWARDEN_FUZZ_FUZZ_CHECK_H_
#define GPUWARDEN_FUZZ_FUZZ_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gw::fuzz {

// Prints "invariant broken: <what>: <detail>" and aborts.
[[noreturn]] void Fail(std::string_view what, std::string_view detail);

// The fuzzer's bytes as text.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// `text` parses as JSON.
void CheckJsonParses(std::string_view text, std::string_view what);

// An error is one line a user can act on: a code from `codes`, a non-empty
// message without a newline that contains `must_name` (the input's name).
void CheckError(const Error& error, std::initializer_list<std::string_view> codes,
                std::string_view must_name, std::string_view what);

// `text` is safe on a terminal (what SanitizeForTerminal promises): valid
// UTF-8 without C0 controls other than '\n' (and '\t' when `allow_tab`), DEL,
// C1 controls, bidirectional controls or line/paragraph separators.
void CheckTerminalSafe(std::string_view text, std::string_view what, bool allow_tab = false);

// Writes `bytes` to a file of this process's own temporary directory
// (/dev/shm when there is one) and returns its path; the same path each call.
const std::string& WriteTempFile(std::string_view bytes, std::string_view name);

}  // namespace gw::fuzz

// Aborts with the condition's text and `detail` when `cond` is false.
#define GW_FUZZ_CHECK(cond, detail)                 \
  do {                                              \
    if (!(cond)) ::gw::fuzz::Fail(#cond, (detail)); \
  } while (0)

#endif  // GPUWARDEN_FUZZ_FUZZ_CHECK_H_
