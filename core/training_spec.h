// TrainingSpec: global batch (sequences), sequence length, precision, method and framework of one
// training run. The framework is serialised as the plan's top-level "framework" field (core/plan.cpp).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/activation_options.h"
#include "core/framework.h"
#include "core/precision.h"
#include "core/status.h"

namespace mplan {

// pretrain and sft (full fine-tuning) train every weight; lora freezes the base model (no weight
// gradients, gradient reduction or optimizer state for it; the small adapters are neglected).
enum class TrainingMethod { pretrain, sft, lora };
constexpr const char* enum_names_text(TrainingMethod) { return "pretrain,sft,lora"; }  // to_string, parse_enum

struct TrainingSpec {
  int64_t global_batch_size = 0;  // sequences per optimizer step
  int64_t seq_length = 0;
  Precision precision = Precision::bf16;
  TrainingMethod method = TrainingMethod::pretrain;
  // The framework the job runs under (plan field "framework"; default megatron).
  Framework framework = Framework::megatron;
  // Packed sequences (fine-tuning data packed into seq_length, Megatron's THD format with cu_seqlens):
  // the mean tokens per packed document; attention runs within each document. 0 = one document per
  // sequence (plan field training.packed_doc_tokens, --packed-doc-tokens).
  int64_t packed_doc_tokens = 0;
  // torchtitan compiles the model with torch.compile (plan field training.torch_compile,
  // --torch-compile): the pointwise ops of each block fuse into a few kernels. false: eager PyTorch,
  // one kernel per op (torchtitan's default, `compile = false`). Only framework torchtitan takes it.
  bool torch_compile = false;
  bool frozen_base() const { return method == TrainingMethod::lora; }
};

Expected<TrainingSpec> training_from_json(const nlohmann::json& j);
nlohmann::json training_to_json(const TrainingSpec& t);

}  // namespace mplan
