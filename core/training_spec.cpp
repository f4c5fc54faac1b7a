// TrainingSpec JSON reading/writing.
#include "core/training_spec.h"

#include "core/json_fields.h"
#include "core/training_fields.h"

namespace mplan {

using nlohmann::json;

Expected<TrainingSpec> training_from_json(const json& j) {
  std::vector<std::string> problems;
  JsonFields f(j, "training", problems);
  if (!problems.empty()) return Error(problems);
  std::vector<std::string> known;
  for (const TrainingField& d : training_fields())
    if (*d.json) known.emplace_back(d.json);
  f.reject_unknown(known);
  TrainingSpec t;
  for (const TrainingField& d : training_fields()) {
    if (!*d.json) continue;
    const bool required = d.presence == Presence::required;
    if (d.i)
      t.*d.i = required ? f.integer(d.json, d.min, d.max) : f.integer_or(d.json, t.*d.i, d.min, d.max);
    else if (d.b)
      t.*d.b = f.boolean_or(d.json, t.*d.b);
    else
      d.set(t, required ? f.choice(d.json, d.choices()) : f.choice_or(d.json, d.choices(), d.get(t)));
  }
  if (t.packed_doc_tokens > t.seq_length)
    f.problem("packed_doc_tokens", "must be at most seq_length (" + std::to_string(t.seq_length) + "), got " +
                                       std::to_string(t.packed_doc_tokens) + "; 0 = unpacked");
  if (!problems.empty()) return Error(problems);
  return t;
}

json training_to_json(const TrainingSpec& t) {
  static const TrainingSpec defaults;
  json j = json::object();
  for (const TrainingField& d : training_fields()) {
    if (!*d.json || (d.presence == Presence::if_set && training_field_text(d, t) == training_field_text(d, defaults))) continue;
    if (d.i)
      j[d.json] = t.*d.i;
    else if (d.b)
      j[d.json] = t.*d.b;
    else
      j[d.json] = d.get(t);
  }
  return j;
}

}  // namespace mplan
