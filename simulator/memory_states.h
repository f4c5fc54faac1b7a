// Model-state memory of one rank — weights, gradients, optimizer states and the gathered (unsharded)
// parameter/gradient buffers of ZeRO-3/FSDP — following each framework's real accounting:
//  - Megatron-Core: bf16 parameter buffer (2 B) + main-gradient buffer (fp32 4 B, bf16 with
//    --grad-reduce-in-bf16) + fp32 main parameters and Adam moments (12 B) sharded by the distributed
//    optimizer over dp x cp (dense) and the expert data-parallel group (experts) — the "18" and
//    "6 + 12/d" bytes per parameter of megatron/training/theoretical_memory_usage.py with d = dp x cp
//    as the optimizer really shards (process_groups_config.py intra_dp_cp_group); Transformer Engine's
//    persistent fp8 weight cache (data + transpose on Hopper, one copy on Blackwell, row+column MXFP8),
//    or fp8 primary weights with --fp8-param-gather; Megatron-FSDP keeps two units unsharded.
//  - torchtitan FSDP2: fp32 sharded parameters, gradients and AdamW states (16 B / (dp_shard x cp)),
//    the current and prefetched blocks gathered in bf16, the root module (embeddings, output) unsharded
//    through the backward; under pipeline parallelism every block stays gathered and fp32 unsharded
//    gradients accumulate over the micro-batches.
//  - llm-foundry (FSDP1): fp32 flat parameters, gradients and Adam states sharded; two units gathered
//    (limit_all_gathers); SHARD_GRAD_OP (zero 2) keeps every unit gathered from forward to backward.
//  - MaxText: fp32 weights, gradients and Adam states sharded over the fsdp axis, a scanned layer gathered.
// docs/memory.md cites the source line of each term.
#pragma once
#include "core/counting.h"
#include "core/plan.h"
#include "simulator/workload.h"

namespace mplan {

struct ModelStateBytes {
  double weights = 0;    // incl. gathered parameter copies of FSDP and fp8 weight caches
  double gradients = 0;  // incl. unsharded gradient buffers of FSDP
  double optimizer = 0;  // fp32 main parameters (where separate) and optimizer moments
};

// The parameter fields of a stage's StageWork (dense_params, expert_params, unquantized_params,
// layer_params, layers) from the stage's parameter counts and layer count; shared by the simulator's
// workload and the planner's memory bound so both see the same rank.
void fill_stage_params(StageWork& st, const ModelSpec& m, const ParallelConfig& p, const StageParams& sp, int stage, int layers);
// The same with the model's parameter counts given (count_params(m): callers that fill many stages
// of one model count them once).
void fill_stage_params(StageWork& st, const ModelSpec& m, const ParallelConfig& p, const StageParams& sp, int stage, int layers,
                       const ParamCounts& pc);

// Bytes per parameter of Transformer Engine's quantized weight copy (rowwise + columnwise usages) for
// the precision on this GPU architecture; 0 outside the fp8 family.
double fp8_weight_copy_bytes(Precision p, const std::string& arch);

// The shard group of the sharded optimizer / FSDP for dense and for expert parameters.
double dense_shard_group(const Plan& plan);
double expert_shard_group(const Plan& plan);

ModelStateBytes model_state_bytes(const Plan& plan, const StageWork& st);

}  // namespace mplan
