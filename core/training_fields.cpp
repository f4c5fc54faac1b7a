// The TrainingSpec descriptor table (see training_fields.h) and its generic value readers and writers.
#include "core/training_fields.h"

#include <cerrno>
#include <cstdlib>

#include "core/limits.h"

namespace mplan {

namespace {
using T = TrainingSpec;

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> n = {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"};
  return n;
}
const std::vector<std::string>& method_names() {
  static const std::vector<std::string> n = {"pretrain", "sft", "lora"};
  return n;
}
std::string get_precision(const T& t) { return std::string(to_string(t.precision)); }
bool set_precision(T& t, const std::string& s) {
  auto p = parse_precision(s);
  if (p) t.precision = *p;
  return p.has_value();
}
std::string get_method(const T& t) { return to_string(t.method); }
bool set_method(T& t, const std::string& s) {
  for (size_t i = 0; i < method_names().size(); ++i)
    if (s == method_names()[i]) t.method = TrainingMethod(i);
  return s == to_string(t.method);
}
std::string get_framework(const T& t) { return to_string(t.framework); }
bool set_framework(T& t, const std::string& s) {
  auto f = parse_framework(s);
  if (f) t.framework = *f;
  return f.has_value();
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
       get_precision, set_precision, precision_names},
      {"method", "--method", "", F::choice, 0, 0, "pretrain|sft|lora (lora: frozen base weights)", Presence::always, nullptr,
       nullptr, get_method, set_method, method_names},
      {"packed_doc_tokens", "--packed-doc-tokens", "", F::integer, 0, kMaxSeq,
       "packed sequences: mean tokens per document (attention stays within each); 0 = unpacked", opt, &T::packed_doc_tokens},
      {"", "--framework", "", F::choice, 0, 0, "training framework megatron|torchtitan|llm-foundry|maxtext (default megatron)",
       Presence::always, nullptr, nullptr, get_framework, set_framework, framework_choices},
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
  if (f.i) return std::to_string(t.*f.i);
  if (f.b) return t.*f.b ? "true" : "false";
  return f.get(t);
}

std::string set_training_field_text(const TrainingField& f, TrainingSpec& t, const std::string& text) {
  if (f.i) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || v < f.min || v > f.max)
      return "expected an integer in " + std::to_string(f.min) + ".." + std::to_string(f.max) + ", got '" + text + "'";
    t.*f.i = v;
  } else if (f.b) {
    if (text != "true" && text != "false") return "expected true or false, got '" + text + "'";
    t.*f.b = text == "true";
  } else if (!f.set(t, text)) {
    return "'" + text + "' is not one of " + join_names(f.choices(), "|");
  }
  return "";
}

}  // namespace mplan
