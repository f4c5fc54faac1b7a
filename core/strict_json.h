// Strict JSON parsing for every JSON document mplan reads (model, HF config, cluster, plan,
// calibration): malformed text, a key given twice in one object (which JSON parsers resolve
// differently: the last one silently wins in most) and nesting deeper than any mplan document are
// refused with a message naming the document and the key. `null` values are refused field by field
// by JsonFields (core/json_fields.h), which knows which fields are typed.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mplan {

// Deeper nesting than this is refused (mplan's documents nest at most 4 levels).
constexpr int kMaxJsonDepth = 64;

// The parsed document, or nullopt with one message appended to `problems` ("<what>: ...").
std::optional<nlohmann::json> parse_json_strict(const std::string& text, const std::string& what,
                                                std::vector<std::string>& problems);

// JSON text for output: strings from users' files (CSV cells, log lines, profile rows) may hold
// invalid UTF-8, which nlohmann's dump() throws on; they are replaced with U+FFFD instead.
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace mplan
