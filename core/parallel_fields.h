// The descriptor table of ParallelConfig: every plan field once, with its JSON key, mplan option,
// Megatron-LM flag and printed-argument / run-fact name, torchtitan key, type, range, member and a
// one-line doc. The plan JSON reader and writer, the mplan layout and job options, the Megatron
// export and argument parsing, the planner's job/layout split and the docs are generated from it:
// adding a plan field is one row here, the code that uses the value, and its tests.
#pragma once
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/json_fields.h"
#include "core/parallel_config.h"

namespace mplan {

enum class FieldType { integer, boolean, number, choice, modules, layout };
// Who sets the field in a search: the job (every layout of a search shares it: the planner copies it
// from the job), the layout (the search decides it), or neither (the planner keeps the default).
enum class FieldScope { job, layout, none };
// Which group of mplan options carries it: the job's (simulate and search), the layout's (simulate).
enum class CliGroup { job, layout, none };
// How Megatron-LM spells it: one flag with the member's value (a boolean flag is store_true; the
// exporter decides when to write it, the parser reads it from the table), or a mapping the exporter
// and parser write out (the flags are named in `megatron` all the same).
enum class MegatronMap { direct, mapped, none };

// How the field's value is reached: one member, or (choices, module sets, the pipeline layout) its
// text and back. The helpers of parallel_fields.cpp build it from the member.
struct FieldAccess {
  FieldType type;
  int ParallelConfig::*i = nullptr;
  bool ParallelConfig::*b = nullptr;
  double ParallelConfig::*d = nullptr;
  std::vector<std::vector<int>> ParallelConfig::*l = nullptr;
  std::string (*get)(const ParallelConfig&) = nullptr;                // the value as text
  std::string (*set)(ParallelConfig&, const std::string&) = nullptr;  // "" or what would be valid
  const std::vector<std::string>& (*choices)() = nullptr;             // the valid names
  void (*copy)(ParallelConfig&, const ParallelConfig&) = nullptr;     // dst = src, without text
};
// The shortest decimal ("%g" with 6, 10, 15 or 17 digits) that reads back as the same double.
std::string shortest_decimal(double v);

// A member's value as text and back, the one pair of every descriptor table (plan, training and model
// fields): an integer, a number (its shortest decimal), a boolean ("true"/"false") or an enum (its name).
// Reading returns "" or what would be valid; integers in [lo, hi], numbers in [lo, hi] (lo_closed) or (lo, hi].
template <class V>
std::string value_text(const V& v) {
  if constexpr (std::is_same_v<V, bool>) return v ? "true" : "false";
  if constexpr (std::is_enum_v<V>) return std::string(to_string(v));
  if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) return std::to_string(v);
  if constexpr (std::is_floating_point_v<V>) return shortest_decimal(v);
}
template <class V>
std::string value_from_text(const std::string& s, double lo, double hi, bool lo_closed, V& out) {
  if constexpr (std::is_same_v<V, bool>) {
    return boolean_from_text(s, out);
  } else if constexpr (std::is_enum_v<V>) {
    auto e = parse_enum<V>(s);
    if (e) out = *e;
    return e ? "" : "'" + s + "' is not one of " + join_names(enum_names<V>(), "|");
  } else if constexpr (std::is_integral_v<V>) {
    int64_t x = 0;
    std::string bad = integer_from_text(s, int64_t(lo), int64_t(hi), x);
    if (bad.empty()) out = V(x);
    return bad;
  } else {
    return number_from_text(s, lo, hi, lo_closed, out);
  }
}
// The row of a descriptor table with this JSON key; nullptr when none.
template <class Row>
const Row* row_of(const std::vector<Row>& rows, const std::string& json_key) {
  for (const Row& r : rows)
    if (json_key == r.json) return &r;
  return nullptr;
}

// Plan JSON: a field is always written, or only when it differs from ParallelConfig{}, or (reading)
// must be given.
enum class Presence { always, if_set, required };

struct ParallelField {
  const char* json;        // key in the plan's "parallel" object
  const char* cli;         // mplan option; "--no-x" clears a boolean, "--x/--no-x" gives both
  const char* megatron;    // Megatron-LM flag(s)
  const char* log;         // name in Megatron-LM's printed arguments and in data/run_facts ("" = none)
  const char* torchtitan;  // torchtitan job-config key ("" = none)
  FieldScope scope;
  CliGroup group;
  MegatronMap map;
  double min, max;  // integers: inclusive; numbers: (min, max]
  const char* doc;
  FieldAccess access;
  Presence presence = Presence::always;
  void (*derive)(ParallelConfig&) = nullptr;         // a default that follows fields read before it
  bool (*written)(const ParallelConfig&) = nullptr;  // overrides presence when writing
  FieldType type() const { return access.type; }
};

// Every field, in reading order (a derived default comes after what it derives from).
const std::vector<ParallelField>& parallel_fields();
// The field with this JSON key; nullptr when none.
const ParallelField* parallel_field(const std::string& json_key);
// The value as text ("4", "true", "interleaved", "core_attn,mlp", "4,4;4,3").
std::string field_text(const ParallelField& f, const ParallelConfig& p);
// Sets the value from text; "" or what would be valid ("expected an integer in 1..16384").
std::string set_field_text(const ParallelField& f, ParallelConfig& p, const std::string& text);
// `--flag value` / `--flag` of a direct Megatron field ("" for a false boolean; modules space-separated).
std::string megatron_arg(const ParallelField& f, const ParallelConfig& p);
// The fields of a scope, e.g. the job's runtime options every layout of a search shares.
void copy_fields(ParallelConfig& dst, const ParallelConfig& src, FieldScope scope);

}  // namespace mplan
