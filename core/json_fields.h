// Reads fields of a JSON object into typed values, collecting one clear message per bad field
// ("model.num_layers: missing; expected a positive integer") instead of throwing on the first.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mplan {

// Upper bounds when a field names none: integers fit an int (most fields are stored as int),
// numbers are finite and below any physical quantity mplan reads.
constexpr int64_t kMaxJsonInt = std::numeric_limits<int32_t>::max();
constexpr double kMaxJsonNumber = 1e15;

class JsonFields {
 public:
  // `path` prefixes every message ("model", "cluster.gpu"); problems are appended to `problems`.
  // A field whose value is `null` is a problem ("give a value or leave the field out"), unless
  // `null_is_missing` (Hugging Face configs, where null means "the library's default").
  JsonFields(const nlohmann::json& obj, std::string path, std::vector<std::string>& problems, bool null_is_missing = false);

  bool has(const char* key) const;
  std::string field(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  // Required integer in [min, max]. Returns min on error (callers check problems before using values).
  int64_t integer(const char* key, int64_t min = 1, int64_t max = kMaxJsonInt);
  std::optional<int64_t> opt_integer(const char* key, int64_t min = 1, int64_t max = kMaxJsonInt);
  int64_t integer_or(const char* key, int64_t fallback, int64_t min = 1, int64_t max = kMaxJsonInt);
  // Required finite number > 0 (or >= 0 when allow_zero) and <= max.
  double number(const char* key, bool allow_zero = false, double max = kMaxJsonNumber);
  std::optional<double> opt_number(const char* key, bool allow_zero = false, double max = kMaxJsonNumber);
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
  bool null_reported(const char* key) const;  // a null value, already reported by the constructor

  const nlohmann::json& obj_;
  std::string path_;
  std::vector<std::string>& problems_;
  bool null_is_missing_ = false;
};

// One value read from text (a command-line option, a Megatron-LM argument, a descriptor table's text):
// "" and `out` set, or what would be valid ("expected an integer in 1..16384, got 'x'") and `out`
// unchanged. Numbers are finite and in (lo, hi], or [lo, hi] when `lo_closed`.
std::string integer_from_text(const std::string& text, int64_t min, int64_t max, int64_t& out);
std::string number_from_text(const std::string& text, double lo, double hi, bool lo_closed, double& out);
std::string boolean_from_text(const std::string& text, bool& out);

// Parse text as JSON (strictly: core/strict_json.h); on failure a message naming `what` (file name)
// and the parser's position or the duplicated key.
std::optional<nlohmann::json> parse_json_text(const std::string& text, const std::string& what,
                                              std::vector<std::string>& problems);
// Read a whole JSON document (regular file or "-", at most kMaxJsonInputBytes: core/bounded_input.h);
// nullopt and a message if unreadable.
std::optional<std::string> read_text_file(const std::string& path, std::vector<std::string>& problems);
// Write an output file without clobbering what the path names (core/safe_output.h: atomic for
// regular files, write-through for devices, symlinks resolved). Returns "" or an error message.
std::string write_text_file_atomic(const std::string& path, const std::string& text);

}  // namespace mplan
