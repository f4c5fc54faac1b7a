// Typed, message-collecting JSON field access; file I/O through the bounded reader and safe writer.
#include "core/json_fields.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/bounded_input.h"
#include "core/safe_output.h"
#include "core/strict_json.h"
#include "core/suggest.h"

namespace mplan {

using nlohmann::json;

JsonFields::JsonFields(const json& obj, std::string path, std::vector<std::string>& problems, bool null_is_missing)
    : obj_(obj), path_(std::move(path)), problems_(problems), null_is_missing_(null_is_missing) {
  if (!obj_.is_object()) {
    problems_.push_back((path_.empty() ? std::string("input") : path_) + ": expected a JSON object");
    return;
  }
  if (!null_is_missing_)
    for (auto it = obj_.begin(); it != obj_.end(); ++it)
      if (it.value().is_null()) problem(it.key(), "null is not a value; give a value or leave the field out");
}

void JsonFields::problem(const std::string& key, const std::string& what) {
  problems_.push_back(field(key.c_str()) + ": " + what);
}

bool JsonFields::null_reported(const char* key) const {
  return !null_is_missing_ && obj_.is_object() && obj_.contains(key) && obj_[key].is_null();
}

bool JsonFields::has(const char* key) const { return obj_.is_object() && obj_.contains(key) && !obj_[key].is_null(); }

static std::string describe(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

static std::string range_text(int64_t min, int64_t max) {
  return max == kMaxJsonInt && min <= 1 ? ">= " + std::to_string(min) : "in " + std::to_string(min) + ".." + std::to_string(max);
}

std::optional<int64_t> JsonFields::opt_integer(const char* key, int64_t min, int64_t max) {
  if (!has(key)) return std::nullopt;
  const json& v = obj_[key];
  int64_t x = 0;
  bool integral = false, too_big = false;
  if (v.is_number_unsigned()) {
    too_big = v.get<uint64_t>() > uint64_t(max);
    x = too_big ? max : int64_t(v.get<uint64_t>());
    integral = true;
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
    integral = true;
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d)) {
      integral = true;
      too_big = d > double(max);
      x = too_big ? max : d < double(min) ? min - 1 : int64_t(d);
    }
  }
  if (!integral) {
    problem(key, "expected an integer " + range_text(min, max) + ", got " + describe(v));
    return std::nullopt;
  }
  if (too_big || x > max) {
    problem(key, "must be <= " + std::to_string(max) + ", got " + describe(v));
    return std::nullopt;
  }
  if (x < min) {
    problem(key, "must be >= " + std::to_string(min) + ", got " + describe(v));
    return std::nullopt;
  }
  return x;
}

int64_t JsonFields::integer(const char* key, int64_t min, int64_t max) {
  if (!has(key)) {
    if (!null_reported(key)) problem(key, "missing; expected an integer " + range_text(min, max));
    return min;
  }
  return opt_integer(key, min, max).value_or(min);
}

int64_t JsonFields::integer_or(const char* key, int64_t fallback, int64_t min, int64_t max) {
  return has(key) ? opt_integer(key, min, max).value_or(fallback) : fallback;
}

static std::string num_range(bool allow_zero, double max) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s and <= %g", allow_zero ? ">= 0" : "> 0", max);
  return buf;
}

std::optional<double> JsonFields::opt_number(const char* key, bool allow_zero, double max) {
  if (!has(key)) return std::nullopt;
  const json& v = obj_[key];
  if (!v.is_number()) {
    problem(key, "expected a number " + num_range(allow_zero, max) + ", got " + describe(v));
    return std::nullopt;
  }
  double x = v.get<double>();
  if (!std::isfinite(x) || x < 0 || (!allow_zero && x == 0) || x > max) {
    problem(key, "must be " + num_range(allow_zero, max) + ", got " + describe(v));
    return std::nullopt;
  }
  return x;
}

double JsonFields::number(const char* key, bool allow_zero, double max) {
  if (!has(key)) {
    if (!null_reported(key)) problem(key, "missing; expected a number " + num_range(allow_zero, max));
    return allow_zero ? 0.0 : 1.0;
  }
  return opt_number(key, allow_zero, max).value_or(1.0);
}

std::optional<std::string> JsonFields::opt_string(const char* key) {
  if (!has(key)) return std::nullopt;
  const json& v = obj_[key];
  if (!v.is_string()) {
    problem(key, "expected a string, got " + describe(v));
    return std::nullopt;
  }
  return v.get<std::string>();
}

std::string JsonFields::string(const char* key) {
  if (!has(key)) {
    if (!null_reported(key)) problem(key, "missing; expected a string");
    return {};
  }
  return opt_string(key).value_or("");
}

bool JsonFields::boolean_or(const char* key, bool fallback) {
  if (!has(key)) return fallback;
  const json& v = obj_[key];
  if (!v.is_boolean()) {
    problem(key, "expected true or false, got " + describe(v));
    return fallback;
  }
  return v.get<bool>();
}

bool JsonFields::boolean(const char* key) {
  if (!has(key)) {
    if (!null_reported(key)) problem(key, "missing; expected true or false");
    return false;
  }
  return boolean_or(key, false);
}

std::string JsonFields::choice_or(const char* key, const std::vector<std::string>& choices, const std::string& fallback) {
  auto s = opt_string(key);
  if (!s) return fallback;
  for (const auto& c : choices)
    if (*s == c) return c;
  problem(key, "'" + *s + "' is not one of " + join(choices, "|") + did_you_mean(*s, choices));
  return fallback;
}

std::string JsonFields::choice(const char* key, const std::vector<std::string>& choices) {
  if (!has(key)) {
    if (!null_reported(key)) problem(key, "missing; expected one of " + join(choices, "|"));
    return choices.front();
  }
  return choice_or(key, choices, choices.front());
}

const json* JsonFields::object(const char* key) {
  if (!has(key)) return nullptr;
  if (!obj_[key].is_object()) {
    problem(key, "expected a JSON object, got " + describe(obj_[key]));
    return nullptr;
  }
  return &obj_[key];
}

void JsonFields::reject_unknown(const std::vector<std::string>& known) {
  if (!obj_.is_object()) return;
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == it.key();
    if (!ok) problem(it.key(), "unknown field" + did_you_mean(it.key(), known) + "; known fields: " + join(known));
  }
}

std::string integer_from_text(const std::string& text, int64_t min, int64_t max, int64_t& out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
    return "expected an integer in " + std::to_string(min) + ".." + std::to_string(max) + ", got '" + text + "'";
  out = v;
  return "";
}

std::string number_from_text(const std::string& text, double lo, double hi, bool lo_closed, double& out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || (v == lo && !lo_closed) || v > hi) {
    char range[64];
    std::snprintf(range, sizeof range, "%s%g, %g]", lo_closed ? "[" : "(", lo, hi);
    return "expected a number in " + std::string(range) + ", got '" + text + "'";
  }
  out = v;
  return "";
}

std::string boolean_from_text(const std::string& text, bool& out) {
  if (text != "true" && text != "false") return "expected true or false, got '" + text + "'";
  out = text == "true";
  return "";
}

std::optional<json> parse_json_text(const std::string& text, const std::string& what, std::vector<std::string>& problems) {
  return parse_json_strict(text, what, problems);
}

std::optional<std::string> read_text_file(const std::string& path, std::vector<std::string>& problems) {
  return read_input_file(path, kMaxJsonInputBytes, problems);
}

std::string write_text_file_atomic(const std::string& path, const std::string& text) { return write_output_file(path, text); }

}  // namespace mplan
