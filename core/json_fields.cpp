// Typed, message-collecting JSON field access and atomic file I/O.
#include "core/json_fields.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/suggest.h"

namespace mplan {

using nlohmann::json;

JsonFields::JsonFields(const json& obj, std::string path, std::vector<std::string>& problems)
    : obj_(obj), path_(std::move(path)), problems_(problems) {
  if (!obj_.is_object()) problems_.push_back((path_.empty() ? std::string("input") : path_) + ": expected a JSON object");
}

void JsonFields::problem(const std::string& key, const std::string& what) {
  problems_.push_back(field(key.c_str()) + ": " + what);
}

bool JsonFields::has(const char* key) const { return obj_.is_object() && obj_.contains(key) && !obj_[key].is_null(); }

static std::string describe(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::optional<int64_t> JsonFields::opt_integer(const char* key, int64_t min) {
  if (!has(key)) return std::nullopt;
  const json& v = obj_[key];
  int64_t x = 0;
  if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>()))) {
    x = static_cast<int64_t>(v.get<double>());
  } else {
    problem(key, "expected an integer >= " + std::to_string(min) + ", got " + describe(v));
    return std::nullopt;
  }
  if (x < min) {
    problem(key, "must be >= " + std::to_string(min) + ", got " + std::to_string(x));
    return std::nullopt;
  }
  return x;
}

int64_t JsonFields::integer(const char* key, int64_t min) {
  if (!has(key)) {
    problem(key, "missing; expected an integer >= " + std::to_string(min));
    return min;
  }
  return opt_integer(key, min).value_or(min);
}

int64_t JsonFields::integer_or(const char* key, int64_t fallback, int64_t min) {
  return has(key) ? opt_integer(key, min).value_or(fallback) : fallback;
}

std::optional<double> JsonFields::opt_number(const char* key, bool allow_zero) {
  if (!has(key)) return std::nullopt;
  const json& v = obj_[key];
  if (!v.is_number()) {
    problem(key, std::string("expected a number ") + (allow_zero ? ">= 0" : "> 0") + ", got " + describe(v));
    return std::nullopt;
  }
  double x = v.get<double>();
  if (x < 0 || (!allow_zero && x == 0)) {
    problem(key, std::string("must be ") + (allow_zero ? ">= 0" : "> 0") + ", got " + describe(v));
    return std::nullopt;
  }
  return x;
}

double JsonFields::number(const char* key, bool allow_zero) {
  if (!has(key)) {
    problem(key, std::string("missing; expected a number ") + (allow_zero ? ">= 0" : "> 0"));
    return allow_zero ? 0.0 : 1.0;
  }
  return opt_number(key, allow_zero).value_or(1.0);
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
    problem(key, "missing; expected a string");
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
    problem(key, "missing; expected true or false");
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
    problem(key, "missing; expected one of " + join(choices, "|"));
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

std::optional<json> parse_json_text(const std::string& text, const std::string& what, std::vector<std::string>& problems) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    problems.push_back(what + ": malformed JSON (" + std::string(e.what()) + ")");
    return std::nullopt;
  }
}

std::optional<std::string> read_text_file(const std::string& path, std::vector<std::string>& problems) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    problems.push_back(path + ": cannot open (" + std::strerror(errno) + ")");
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string write_text_file_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return path + ": cannot write (" + std::strerror(errno) + ")";
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return path + ": write failed (" + err + ")";
    }
    off += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return path + ": cannot replace (" + err + ")";
  }
  return {};
}

}  // namespace mplan
