// The one error idiom of gpuwarden's core: functions that can fail return a
// Result<T> (a value or an Error) or, when there is no value, a Status.
// Exceptions never cross module boundaries; code that calls a throwing library
// (nlohmann-json, CLI11) catches at that call and converts to an Error.
#ifndef GPUWARDEN_CORE_RESULT_H_
#define GPUWARDEN_CORE_RESULT_H_

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace gw {

// What went wrong, in one line a user can act on. `code` is a short stable
// machine word ("not_found", "malformed", "timeout", ...) for callers that must
// branch; `message` names the input and the problem.
struct Error {
  std::string code;
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design.
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design.

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok().
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // REQUIRES: !ok().
  const Error& error() const {
    assert(!ok());
    return std::get<Error>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// A Result with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  static Status Ok() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  // REQUIRES: !ok().
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error MakeError(std::string code, std::string message) {
  return Error{std::move(code), std::move(message)};
}

}  // namespace gw

#endif  // GPUWARDEN_CORE_RESULT_H_
