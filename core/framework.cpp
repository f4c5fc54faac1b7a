// Framework names and their memory facts (see framework.h). Sources, read at the commits named in
// docs/memory.md:
//  - Megatron-Core: the distributed optimizer and DDP buffers are built over the data-parallel group
//    with context parallelism (process_groups_config.py setup_process_groups_for_ddp, dp_cp_group);
//    validate_args keeps main gradients in fp32 for bf16 unless --grad-reduce-in-bf16
//    (megatron/training/arguments.py); --recompute-modules and fine-grained activation offloading
//    (transformer_config.py recompute_modules, offload_modules); logged memory is torch's allocated peak.
//  - torchtitan: FSDP2 shards over the flattened dp_shard x cp mesh ("dp_shard_cp", parallel_dims.py);
//    MixedPrecisionPolicy(param bf16, reduce fp32) keeps fp32 sharded grads; the loss upcasts the full
//    logits to fp32 (train.py cross_entropy(pred.float())); the console prints peak reserved bytes
//    (metrics.py DeviceMemoryMonitor, reserved_bytes.all.peak).
//  - Composer/llm-foundry: FSDP1 FULL_SHARD with limit_all_gathers (two units unsharded), fused
//    flash-attn cross-entropy (MPT loss_fn 'fused_crossentropy'), grads upcast to fp32.
//  - MaxText: fp32 weights/grads/Adam sharded over the fsdp axis (configs/base.yml); XLA's compiled
//    estimate is what it reports.
#include "core/framework.h"

#include <algorithm>
#include <cctype>

namespace mplan {

std::string to_string(Framework f) {
  switch (f) {
    case Framework::megatron: return "megatron";
    case Framework::torchtitan: return "torchtitan";
    case Framework::llm_foundry: return "llm-foundry";
    case Framework::maxtext: return "maxtext";
  }
  return "?";
}

const std::vector<std::string>& framework_choices() {
  static const std::vector<std::string> v = {"megatron", "torchtitan", "llm-foundry", "maxtext"};
  return v;
}

std::optional<Framework> parse_framework(const std::string& s) {
  for (Framework f : {Framework::megatron, Framework::torchtitan, Framework::llm_foundry, Framework::maxtext})
    if (to_string(f) == s) return f;
  return std::nullopt;
}

std::optional<Framework> framework_from_text(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  auto has = [&](const char* k) { return t.find(k) != std::string::npos; };
  if (has("torchtitan")) return Framework::torchtitan;
  if (has("llm-foundry") || has("composer")) return Framework::llm_foundry;
  if (has("maxtext") || has("paxml") || has("jax")) return Framework::maxtext;
  if (has("megatron") || has("nemo")) return Framework::megatron;
  return std::nullopt;
}

FrameworkMemory framework_memory(Framework f) {
  FrameworkMemory m;
  switch (f) {
    case Framework::megatron:
      break;
    case Framework::torchtitan:
      m.supports_cross_entropy_fusion = false;  // no fused/chunked loss at the benchmark commits
      m.zero_levels = 0b1001;
      m.default_zero = 3;
      m.supports_recompute_modules = false;
      m.supports_activation_offload = false;
      m.reports_reserved = true;
      m.flash_attention_2 = true;
      break;
    case Framework::llm_foundry:
      m.shard_over_cp = false;  // no context parallelism
      m.zero_levels = 0b1101;
      m.default_zero = 3;
      m.default_cross_entropy_fusion = true;
      m.flash_attention_2 = true;
      m.supports_recompute_modules = false;
      m.supports_activation_offload = false;
      break;
    case Framework::maxtext:
      m.shard_over_cp = false;
      m.zero_levels = 0b1000;
      m.default_zero = 3;
      m.supports_cross_entropy_fusion = false;
      m.supports_recompute_modules = false;
      m.supports_activation_offload = false;
      break;
  }
  return m;
}

}  // namespace mplan
