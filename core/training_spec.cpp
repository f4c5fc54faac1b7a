// TrainingSpec JSON reading/writing.
#include "core/training_spec.h"

#include "core/json_fields.h"
#include "core/limits.h"

namespace mplan {

using nlohmann::json;

std::string to_string(TrainingMethod m) {
  switch (m) {
    case TrainingMethod::pretrain:
      return "pretrain";
    case TrainingMethod::sft:
      return "sft";
    case TrainingMethod::lora:
      return "lora";
  }
  return "?";
}

Expected<TrainingSpec> training_from_json(const json& j) {
  std::vector<std::string> problems;
  JsonFields f(j, "training", problems);
  if (!problems.empty()) return Error(problems);
  f.reject_unknown({"global_batch_size", "seq_length", "precision", "method", "packed_doc_tokens", "torch_compile"});
  TrainingSpec t;
  t.global_batch_size = f.integer("global_batch_size", 1, kMaxBatch);
  t.seq_length = f.integer("seq_length", 1, kMaxSeq);
  std::string p = f.choice("precision", {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"});
  t.precision = parse_precision(p).value_or(Precision::bf16);
  std::string m = f.choice_or("method", {"pretrain", "sft", "lora"}, "pretrain");
  t.method = m == "lora" ? TrainingMethod::lora : m == "sft" ? TrainingMethod::sft : TrainingMethod::pretrain;
  t.packed_doc_tokens = f.integer_or("packed_doc_tokens", 0, 0, kMaxSeq);
  if (t.packed_doc_tokens > t.seq_length)
    f.problem("packed_doc_tokens", "must be at most seq_length (" + std::to_string(t.seq_length) + "), got " +
                                       std::to_string(t.packed_doc_tokens) + "; 0 = unpacked");
  t.torch_compile = f.boolean_or("torch_compile", false);
  if (!problems.empty()) return Error(problems);
  return t;
}

json training_to_json(const TrainingSpec& t) {
  json j = {{"global_batch_size", t.global_batch_size},
            {"seq_length", t.seq_length},
            {"precision", std::string(to_string(t.precision))},
            {"method", to_string(t.method)}};
  if (t.packed_doc_tokens > 0) j["packed_doc_tokens"] = t.packed_doc_tokens;
  if (t.torch_compile) j["torch_compile"] = true;
  return j;
}

}  // namespace mplan
