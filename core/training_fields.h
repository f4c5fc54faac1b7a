// The descriptor table of TrainingSpec: every training field once, with its plan key, mplan option,
// Megatron-LM flag, type, range and a one-line doc. The plan's "training" JSON reader and writer
// (core/training_spec.cpp), the job options of `mplan simulate` and `search` (cli/plan_args.cpp) and the
// Megatron-LM flags that carry one value (planner/export_megatron.cpp: export and parse) come from it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/parallel_fields.h"
#include "core/training_spec.h"

namespace mplan {

struct TrainingField {
  const char* json;      // key in the plan's "training" object ("" = elsewhere: the plan's top-level "framework")
  const char* cli;       // mplan option
  const char* megatron;  // Megatron-LM flag carrying the value ("" = none, or mapped: precision)
  FieldType type;        // integer, boolean or choice
  int64_t min, max;      // integers: inclusive
  const char* doc;
  Presence presence;  // plan JSON: required, always written, or written only when set
  int64_t TrainingSpec::*i = nullptr;
  bool TrainingSpec::*b = nullptr;
  std::string (*get)(const TrainingSpec&) = nullptr;         // a choice as text
  bool (*set)(TrainingSpec&, const std::string&) = nullptr;  // false when not a choice
  const std::vector<std::string>& (*choices)() = nullptr;    // a choice's valid names
  // An option the command line must give: its default is not a valid value (a batch of 0 sequences).
  bool cli_required() const { return type == FieldType::integer && presence == Presence::required; }
};

// Every field, in the order of the job options.
const std::vector<TrainingField>& training_fields();
// The field with this Megatron-LM flag; nullptr when none.
const TrainingField* training_field_of_flag(const std::string& megatron_flag);
// The value as text ("64", "true", "bf16").
std::string training_field_text(const TrainingField& f, const TrainingSpec& t);
// Sets the value from text; "" or what would be valid ("expected an integer in 1..16777216").
std::string set_training_field_text(const TrainingField& f, TrainingSpec& t, const std::string& text);

}  // namespace mplan
