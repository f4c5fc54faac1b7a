// Reads fields of a JSON object into typed values, collecting one clear message per bad field
// ("model.num_layers: missing; expected a positive integer") instead of throwing on the first.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mplan {

class JsonFields {
 public:
  // `path` prefixes every message ("model", "cluster.gpu"); problems are appended to `problems`.
  JsonFields(const nlohmann::json& obj, std::string path, std::vector<std::string>& problems);

  bool has(const char* key) const;
  std::string field(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  // Required integer >= min. Returns min on error (callers check problems before using values).
  int64_t integer(const char* key, int64_t min = 1);
  std::optional<int64_t> opt_integer(const char* key, int64_t min = 1);
  int64_t integer_or(const char* key, int64_t fallback, int64_t min = 1);
  // Required number > 0 (or >= 0 when allow_zero).
  double number(const char* key, bool allow_zero = false);
  std::optional<double> opt_number(const char* key, bool allow_zero = false);
  std::string string(const char* key);
  std::optional<std::string> opt_string(const char* key);
  bool boolean(const char* key);
  bool boolean_or(const char* key, bool fallback);
  // Required string among `choices`.
  std::string choice(const char* key, const std::vector<std::string>& choices);
  std::string choice_or(const char* key, const std::vector<std::string>& choices, const std::string& fallback);
  // Object member (or null json when missing: optional objects).
  const nlohmann::json* object(const char* key);
  // Flag every key not in `known` as unknown (with a did-you-mean).
  void reject_unknown(const std::vector<std::string>& known);

  void problem(const std::string& key, const std::string& what);

 private:
  const nlohmann::json& obj_;
  std::string path_;
  std::vector<std::string>& problems_;
};

// Parse text as JSON; on failure a message naming `what` (file name) and the parser's position.
std::optional<nlohmann::json> parse_json_text(const std::string& text, const std::string& what,
                                              std::vector<std::string>& problems);
// Read a whole file; nullopt and a message if unreadable.
std::optional<std::string> read_text_file(const std::string& path, std::vector<std::string>& problems);
// Write atomically: temp file in the same directory, fsync, rename. Returns "" or an error message.
std::string write_text_file_atomic(const std::string& path, const std::string& text);

}  // namespace mplan
