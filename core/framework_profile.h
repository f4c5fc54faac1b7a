// A framework release's named capabilities (data/frameworks/<framework>.json, section "capabilities",
// embedded, each value with its note and citation): what differs between Megatron-Core, torchtitan,
// llm-foundry and MaxText/Paxml beyond the memory accounting and the layouts of core/framework.h —
// how its attention keeps K/V, what "selective" recompute means, which options exist, the defaults a
// published run leaves unstated. Callers ask these capabilities, never the framework's identity
// (only core/framework.cpp compares Framework values; a lint test holds that).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/framework.h"
#include "core/parallel_config.h"

namespace mplan {

// How the model states of a rank are kept.
enum class ModelStateLayout {
  // bf16 (or fp8) parameters with fp32 main gradients and an fp32 master copy inside the optimizer
  // (Megatron's Float16Module + DistributedOptimizer; TE caches a quantized copy of the fp8 weights)
  mixed_precision_master,
  // the sharded fp32 parameters are the master weights; low-precision copies exist only while gathered
  // (PyTorch FSDP, JAX/XLA)
  sharded_fp32,
};

// What recompute = selective means.
enum class RematStyle {
  modules,     // Megatron's --recompute-modules (default core_attn)
  op_sac,      // PyTorch's op-level selective activation checkpointing
  jax_policy,  // a JAX remat policy that saves named tensors of the layer (ParallelConfig::remat_policy)
};

// How the loss keeps the logits for its backward when no fused cross-entropy is used.
enum class UnfusedLoss {
  vocab_parallel_fp32_softmax,  // Megatron's vocab-parallel cross-entropy: an fp32 softmax per logit
  torch_eager_fp32,             // torch's eager loss over logits upcast to fp32 (log-softmax kept)
};

// The activation recompute a run gets when it configures none.
enum class DefaultRecompute {
  none,
  full,             // every layer rematerialised (MaxText remat_policy 'full', Paxml SAVE_NOTHING)
  selective,        // the framework's selective recompute (remat_style)
  selective_layer,  // layer-level selective checkpointing: every layer_checkpoint_every-th block
};
std::string to_string(DefaultRecompute d);  // "none", "full", "selective", "selective (layer)"

// The defaults of one release line of a framework (section "releases"): settings its recipes apply to
// every run unless the run says otherwise (NeMo's and Megatron-Bridge's performance recipes reduce
// gradients in bf16, ...). A value that is not set leaves the framework's own default.
struct ReleaseDefaults {
  std::string release;
  // the release is the one of a run whose framework text ("NeMo 2.0 (Megatron-Core) NeMo 25.02")
  // contains one of these, case-insensitively
  std::vector<std::string> match;
  std::optional<bool> grad_reduce_in_bf16;
  std::optional<bool> fp8_param_gather;  // under an fp8 precision with a sharded optimizer
  std::optional<MainParams> main_params;
  std::optional<AttentionBackend> attention_backend;  // the attention kernel of that release
  std::optional<double> dropout;                      // hidden and attention dropout probability
  // MoE runs of the release route with forced balance (a benchmark setting of its performance recipes)
  std::optional<bool> moe_force_balance;
};

struct FrameworkProfile {
  std::string release;  // the releases the values were read at
  ModelStateLayout model_states = ModelStateLayout::mixed_precision_master;
  // Megatron-Core's argument checks and Transformer Engine's shape rules apply (fp8 GEMM dimensions,
  // grouped GEMM for the expert activation, CP attention variants, the unfused-attention CP refusal).
  bool megatron_core_rules = true;
  RematStyle remat_style = RematStyle::modules;
  UnfusedLoss unfused_loss = UnfusedLoss::vocab_parallel_fp32_softmax;
  // Attention repeats K/V to all query heads before the kernel (GQA memory and traffic of full MHA).
  bool kv_repeated = false;
  // Context parallelism is PyTorch's ring attention (eager collectives around SDPA).
  bool ring_attention_eager = false;
  // Pointwise ops run eagerly (one kernel each) unless the model is compiled.
  bool eager_by_default = false;
  bool supports_torch_compile = false;
  bool supports_fp8_param_gather = true;
  // Under FSDP with pp > 1 a stage stays gathered between forward and backward (reshard_after_forward
  // off) and fp32 unsharded gradients accumulate until the last micro-batch.
  bool fsdp_pp_keeps_stage_gathered = false;
  // Under FSDP the root module (embedding, final norm, output) is not resharded after the forward.
  bool fsdp_root_unsharded = false;
  // Micro-batches per pipeline stage when a run states neither mbs nor gradient accumulation
  // (0: no documented default).
  int default_microbatches_per_stage = 0;
  // Model chunks per rank of its interleaved schedule when vpp is not stated (0: none).
  int default_interleaved_chunks = 0;
  // Layer-level selective checkpointing recomputes every n-th block (0: the framework has none).
  int layer_checkpoint_every = 0;
  // What a run that configures no recompute gets (the release's default configuration).
  DefaultRecompute default_recompute = DefaultRecompute::none;
  std::vector<ReleaseDefaults> releases;
};

// The committed profile of framework f; throws std::logic_error when the embedded file is missing or
// malformed (a build defect, caught by tests/core/test_framework_profile.cpp).
const FrameworkProfile& framework_profile(Framework f);

// The release of framework f a run's framework text names (its first match), or nullptr.
const ReleaseDefaults* release_defaults(Framework f, const std::string& framework_text);

// The "capabilities" section of one framework file's JSON text (`file` names it in messages); throws
// std::logic_error naming the capability that is missing, of the wrong type, uncited or unknown.
FrameworkProfile parse_framework_profile(const std::string& text, const std::string& file);

// The frameworks whose profile has `cap` (the member) set, as text ("torchtitan"; "a, b"), for messages.
std::string frameworks_with(bool FrameworkProfile::*cap);

}  // namespace mplan
