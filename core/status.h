// User-facing errors as values: Expected<T> holds a value or the list of problems found in the input.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mplan {

// Every problem found in one piece of input, each a complete sentence that names the field and says
// what would be valid. `message()` joins them for the command line.
struct Error {
  std::vector<std::string> problems;
  Error() = default;
  explicit Error(std::string one) { problems.push_back(std::move(one)); }
  explicit Error(std::vector<std::string> many) : problems(std::move(many)) {}
  std::string message() const {
    std::string out;
    for (size_t i = 0; i < problems.size(); ++i) {
      if (i) out += "\n";
      out += problems[i];
    }
    return out;
  }
};

template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const { return value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// A result with no value: ok or a list of problems.
class Status {
 public:
  Status() = default;
  Status(Error e) : err_(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  static Status from(std::vector<std::string> problems) {
    if (problems.empty()) return {};
    return Status(Error(std::move(problems)));
  }
  bool ok() const { return !err_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *err_; }

 private:
  std::optional<Error> err_;
};

}  // namespace mplan
