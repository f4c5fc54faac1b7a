// The descriptor table of ModelSpec: every model field once, with its JSON key, Megatron-LM flag(s),
// printed-argument name, type, range, member and a one-line doc. The model JSON's reader, writer and key lists,
// the Megatron-LM export of the fields with one value, the parse of those flags and the model rows of
// the log check come from it: adding a model field is one row here, the code that uses it, and its tests.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/parallel_fields.h"

namespace mplan {

// How the value is reached: its type (from the member's), and the value as text and back.
struct ModelAccess {
  FieldType type;                                                      // integer, number, boolean or choice
  std::optional<std::string> (*get)(const ModelSpec&);                 // nullopt when its part (moe, mla) is absent
  std::string (*set)(ModelSpec&, const std::string&, double, double);  // "" or what would be valid; makes the part
  const char* names;                                                   // a choice's names ("gelu,swiglu"); else nullptr
};

struct ModelField {
  const char* json;      // key in the model JSON; "moe.top_k": in the model's "moe" ("mla", "rope_scaling", "mamba") object
  const char* megatron;  // Megatron-LM flag(s); "a | b": either carries the value ("" = none)
  const char* log;       // Megatron-LM printed-argument name the log check compares one to one ("" = none or a rule)
  const char* hf;        // Hugging Face config.json key(s) with the same value; "a | b": the first given ("" = a rule)
  MegatronMap map;       // direct: the flag carries the value (a boolean: store_true); mapped: rules of the export
  double min, max;       // a value read from a flag: inclusive range (validate_model checks the rest)
  Presence presence;     // Megatron export: always (also required: the model JSON must give it), or if_set
  const char* doc;
  ModelAccess access;
  bool (*written)(const ModelSpec&) = nullptr;  // the model JSON writes it: always (nullptr), or when this holds
  FieldType type() const { return access.type; }
};

// Every field, the model's own first, then those of rope_scaling, moe, mla and mamba. (The hybrid
// layer pattern, a string, is read and written by model_from_json / model_to_json.)
const std::vector<ModelField>& model_fields();
// The field with this JSON key ("moe.top_k"); nullptr when none.
const ModelField* model_field(const std::string& json_key);
// The field a direct Megatron-LM flag carries; nullptr when none.
const ModelField* model_field_of_flag(const std::string& megatron_flag);
// The keys of one object of the model JSON ("" = the model's own, "moe", "mla", "rope_scaling").
std::vector<std::string> model_json_keys(const std::string& part);
// `--flag value` (a true boolean: `--flag`) when the export writes it ("" when not); see `presence`.
std::string megatron_model_arg(const ModelField& f, const ModelSpec& m);
// The value as the model JSON holds it (an integer, number, boolean or name); null when its part is absent.
nlohmann::json model_field_json(const ModelField& f, const ModelSpec& m);
// Sets the value from text; "" or what would be valid ("expected an integer in 0..16384, got 'x'").
std::string set_model_field_text(const ModelField& f, ModelSpec& m, const std::string& text);
// What a valid value is ("an integer in 0..16384", "one of rope|learned"), for a missing field's message.
std::string model_field_expected(const ModelField& f);
// The key of a field within its object ("moe.top_k" -> "top_k") when it is one of `part`'s ("" = the
// model's own); "" when not.
std::string model_field_key_in(const ModelField& f, const std::string& part);
// Sets the value from a JSON value (a name, number or boolean; 4096.0 is an integer); "" or what would be valid.
std::string set_model_field_json(const ModelField& f, ModelSpec& m, const nlohmann::json& v);
// Reads the fields of one object of the model JSON ("" = the model's own, "moe", "mla", "rope_scaling")
// from `obj` through their rows (type, range, member), each bad or missing required one a problem of `g`.
// Fields that are absent keep m's value: derived defaults are the caller's.
void read_model_part(JsonFields& g, const nlohmann::json& obj, const std::string& part, ModelSpec& m);

}  // namespace mplan
