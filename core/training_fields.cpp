// The TrainingSpec descriptor table (see training_fields.h) and its generic value readers and writers.
#include "core/training_fields.h"

#include "core/json_fields.h"
#include "core/limits.h"

namespace mplan {

namespace {
using T = TrainingSpec;

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> n = {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"};
  return n;
}
// a choice member as text and back through its parser
template <auto Member>
std::string get_choice(const T& t) {
  return value_text(t.*Member);
}
template <auto Member, auto Parse>
bool set_choice(T& t, const std::string& s) {
  auto v = Parse(s);
  if (v) t.*Member = *v;
  return v.has_value();
}

}  // namespace

const std::vector<TrainingField>& training_fields() {
  using F = FieldType;
  const Presence req = Presence::required, opt = Presence::if_set;
  // clang-format off
  static const std::vector<TrainingField> fields = {
      {"global_batch_size", "--gbs", "--global-batch-size", F::integer, 1, kMaxBatch, "global batch size (sequences)", req,
       &T::global_batch_size},
      {"seq_length", "--seq", "--seq-length", F::integer, 1, kMaxSeq, "sequence length", req, &T::seq_length},
      {"precision", "--precision", "", F::choice, 0, 0, "bf16|fp16|fp8|mxfp8|nvfp4|fp32", req, nullptr, nullptr,
       get_choice<&T::precision>, set_choice<&T::precision, parse_precision>, precision_names},
      {"method", "--method", "", F::choice, 0, 0, "pretrain|sft|lora (lora: frozen base weights)", Presence::always, nullptr,
       nullptr, get_choice<&T::method>, set_choice<&T::method, parse_enum<TrainingMethod>>,
       enum_names<TrainingMethod>},
      {"packed_doc_tokens", "--packed-doc-tokens", "", F::integer, 0, kMaxSeq,
       "packed sequences: mean tokens per document (attention stays within each); 0 = unpacked", opt, &T::packed_doc_tokens},
      {"", "--framework", "", F::choice, 0, 0, "training framework megatron|torchtitan|llm-foundry|maxtext (default megatron)",
       Presence::always, nullptr, nullptr, get_choice<&T::framework>, set_choice<&T::framework, parse_framework>, framework_choices},
      {"torch_compile", "--torch-compile", "", F::boolean, 0, 0,
       "torchtitan: the model is compiled (torch.compile fuses each block's pointwise ops); default eager", opt, nullptr,
       &T::torch_compile},
  };
  // clang-format on
  return fields;
}

const TrainingField* training_field_of_flag(const std::string& megatron_flag) {
  for (const TrainingField& f : training_fields())
    if (*f.megatron && megatron_flag == f.megatron) return &f;
  return nullptr;
}

std::string training_field_text(const TrainingField& f, const TrainingSpec& t) {
  return f.i ? value_text(t.*f.i) : f.b ? value_text(t.*f.b) : f.get(t);
}

std::string set_training_field_text(const TrainingField& f, TrainingSpec& t, const std::string& text) {
  if (f.i) return value_from_text(text, double(f.min), double(f.max), true, t.*f.i);
  if (f.b) return value_from_text(text, 0, 0, true, t.*f.b);
  return f.set(t, text) ? "" : "'" + text + "' is not one of " + join_names(f.choices(), "|");
}

}  // namespace mplan
