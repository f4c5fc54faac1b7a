// Small text helpers shared by the training-log parsers: trimming, '|' fields, "key: value" pairs,
// numbers that may be absent, and the rank prefixes launchers put in front of every line.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mplan::runs {

std::string trim(const std::string& s);
// Splits on '|' and trims each field.
std::vector<std::string> split_bar(const std::string& s);
// A number, or nullopt when the text does not start with one. "nan" and "inf" parse (as NaN/inf):
// callers decide what a non-finite value means.
std::optional<double> to_double(const std::string& s);
std::optional<int64_t> to_int(const std::string& s);
// "key: value" -> (key, value) split at the last ':'; false when there is no ':' or no key.
bool key_value(const std::string& field, std::string& key, std::string& value);

// A line without the prefix a launcher added: torchrun --tee "[default7]:" (any role name), srun
// --label "7: ", or both ("3: [default1]:"). `prefix` receives what was removed ("" when nothing).
// Only the prefix is removed: the rest keeps its leading spaces (YAML indentation, Megatron's
// leading blank of iteration lines).
std::string strip_rank_prefix(const std::string& line, std::string* prefix = nullptr);

}  // namespace mplan::runs
