// TrainingSpec JSON reading/writing.
#include "core/training_spec.h"

#include "core/json_fields.h"

namespace mplan {

using nlohmann::json;

Expected<TrainingSpec> training_from_json(const json& j) {
  std::vector<std::string> problems;
  JsonFields f(j, "training", problems);
  if (!problems.empty()) return Error(problems);
  f.reject_unknown({"global_batch_size", "seq_length", "precision"});
  TrainingSpec t;
  t.global_batch_size = f.integer("global_batch_size");
  t.seq_length = f.integer("seq_length");
  std::string p = f.choice("precision", {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"});
  t.precision = parse_precision(p).value_or(Precision::bf16);
  if (!problems.empty()) return Error(problems);
  return t;
}

json training_to_json(const TrainingSpec& t) {
  return {{"global_batch_size", t.global_batch_size},
          {"seq_length", t.seq_length},
          {"precision", std::string(to_string(t.precision))}};
}

}  // namespace mplan
