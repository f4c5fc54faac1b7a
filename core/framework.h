// The training framework a plan is for (Megatron-Core, torchtitan, llm-foundry, MaxText) and the
// memory-relevant facts that differ between them: what the sharded optimizer / FSDP shards over, which
// gradient dtype is kept, whether a fused or chunked cross-entropy avoids the fp32 logits, which memory
// metric the framework reports (allocated vs reserved), and which options exist at all (activation
// offloading, fine-grained recompute modules). Each fact cites the framework source it reproduces
// (docs/memory.md lists them).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mplan {

enum class Schedule;    // core/parallel_config.h
enum class CpCommType;  // core/parallel_config.h
struct ParallelConfig;
struct TrainingSpec;

enum class Framework { megatron, torchtitan, llm_foundry, maxtext };

std::string to_string(Framework f);  // "megatron", "torchtitan", "llm-foundry", "maxtext"
std::optional<Framework> parse_framework(const std::string& s);
const std::vector<std::string>& framework_choices();
// The framework of a published row's `framework` text ("NeMo 2.0 (Megatron-Core)", "torchtitan (...)",
// "Composer/llm-foundry (PyTorch FSDP)", "MaxText (JAX)", "Paxml (JAX)"); nullopt when unknown.
std::optional<Framework> framework_from_text(const std::string& text);

// Memory facts of a framework (see framework.cpp for the source of each).
struct FrameworkMemory {
  // The sharded optimizer / FSDP groups include the context-parallel ranks (Megatron:
  // data_parallel_group with_context_parallel=True; torchtitan: the dp_shard_cp mesh).
  bool shard_over_cp = true;
  // Gradients accumulate in fp32 (Megatron main_grads for bf16; FSDP2 reduce_dtype fp32). false: the
  // parameter dtype.
  bool fp32_grads = true;
  // Unsharded (gathered) parameter sets held at once under ZeRO-3/FSDP: the current layer and the
  // prefetched next one.
  int fsdp_unsharded_layers = 2;
  // The loss keeps fp32 logits [tokens, vocab/tp] for the backward unless a fused/chunked
  // cross-entropy is used (ParallelConfig::cross_entropy_fusion).
  bool supports_cross_entropy_fusion = true;
  // Megatron's --recompute-modules and fine-grained activation offloading exist only in Megatron-Core.
  bool supports_recompute_modules = true;
  bool supports_activation_offload = true;
  // What the framework's published peak-memory figure measures: the caching allocator's reserved
  // bytes (torchtitan prints torch.cuda.max_memory_reserved) or the allocated peak.
  bool reports_reserved = false;
  // ZeRO levels the framework has (bit z = level z): Megatron 0-3 (DDP, distributed optimizer,
  // Megatron-FSDP optim_grads / optim_grads_params); torchtitan DDP or FSDP2; Composer NO_SHARD,
  // SHARD_GRAD_OP, FULL_SHARD; MaxText shards over its fsdp axis.
  unsigned zero_levels = 0xF;
  // The level a job under this framework uses unless told otherwise.
  int default_zero = 1;
  // The loss is a fused cross-entropy by default (llm-foundry's MPT: loss_fn fused_crossentropy).
  bool default_cross_entropy_fusion = false;
  // Not a memory fact but a runtime default that changes cost: the fused attention runs on the
  // FlashAttention-2 kernel (torchtitan: PyTorch SDPA with FLASH_ATTENTION first, cuDNN first only on
  // compute capability >= 10.0, models/attention.py ScaledDotProductAttention._init_backend;
  // llm-foundry: MPT attn_impl "flash" = the flash-attn 2 package) rather than cuDNN's fused attention
  // (Megatron-Core through Transformer Engine; MaxText's GPU attention "cudnn_flash_te").
  bool flash_attention_2 = false;
};

FrameworkMemory framework_memory(Framework f);

// The layouts a framework runs (see framework.cpp for the source of each). ZeRO levels are
// FrameworkMemory::zero_levels.
struct FrameworkRuns {
  // Megatron-style tensor parallelism of attention and MLP (with or without sequence parallelism).
  bool tensor_parallel = true;
  bool pipeline_parallel = true;
  bool context_parallel = true;
  // Pipeline schedules it runs with pp > 1 (bit int(Schedule)); pp = 1 runs without a pipeline
  // (mplan's 1f1b) everywhere. The interleaved schedule means vpp > 1, the others vpp = 1.
  unsigned schedules = 0;
  // Context-parallel exchanges it runs (bit int(CpCommType)).
  unsigned cp_comm = 0;
  // Pipeline stages may hold different layer counts (a balanced or first/last split).
  bool uneven_pipeline = true;
  // A pipelined step needs a multiple of pp micro-batches (also with vpp = 1).
  bool microbatches_multiple_of_pp = false;
  // Share of the TP collectives' overlappable time its TP-comm overlap hides, against mplan's full
  // chunked overlap (Transformer Engine's userbuffers, 1). torchtitan's async TP (PyTorch's
  // micro-pipelined symmetric-memory matmuls): the median of its published async-vs-vanilla A/B pairs
  // (docs/cost_model.md, "TP-comm overlap by framework").
  double tp_overlap_share = 1.0;
  // Its grouped expert MLP runs one GEMM kernel per local expert, not one grouped kernel: Megatron-Core's
  // TEGroupedMLP calls Transformer Engine's GroupedLinear, whose cuBLAS path launches a GEMM per expert
  // (multi_stream_cublas_gemm, TransformerEngine common/gemm/cublaslt_gemm.cu; CUTLASS grouped GEMM only
  // on Hopper and opt-in, NVTE_USE_CUTLASS_GROUPED_GEMM). torch._grouped_mm, megablox gmm and
  // MegaBlocks' grouped_gemm are one kernel (docs/cost_model.md, "Expert GEMMs, one per expert").
  bool per_expert_gemms = false;
};

FrameworkRuns framework_runs(Framework f);
// Whether framework f runs schedule s with this pipeline (pp = 1: only mplan's 1f1b, no pipeline).
bool runs_schedule(Framework f, Schedule s, int pp, int vpp);
// Whether framework f has some schedule for pp stages of vpp chunks each.
bool runs_pipeline(Framework f, int pp, int vpp);
bool runs_cp_comm(Framework f, CpCommType c);
// The context-parallel exchange a framework uses when none is asked for: Megatron's --cp-comm-type
// default p2p; torchtitan and MaxText all-gather K/V (their defaults, framework.cpp).
CpCommType default_cp_comm(Framework f);
// What of layout p framework t.framework does not run ("" when it runs all of it): tp, pp, cp, the
// schedule, the CP exchange, an uneven split, the micro-batch count, the ZeRO level. One message naming
// the field and the framework's choices.
std::string framework_refusal(const TrainingSpec& t, const ParallelConfig& p);
// The framework's pipeline schedules and CP exchanges as text ("1f1b, interleaved"; "none").
std::string schedule_names(Framework f);
std::string cp_comm_names(Framework f);

}  // namespace mplan
