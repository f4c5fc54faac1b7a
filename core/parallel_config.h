// ParallelConfig: the layout of one training job (TP/SP, PP/VPP, DP+ZeRO, CP, EP/ETP, micro-batch,
// recomputation, overlap, schedule) and the rules a layout must obey for a model, batch and cluster.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/activation_options.h"
#include "core/cluster_spec.h"
#include "core/model_spec.h"
#include "core/status.h"
#include "core/training_spec.h"

namespace mplan {

enum class Recompute { none, selective, full };
enum class Schedule { gpipe, one_f_one_b, interleaved, zero_bubble };
enum class CpCommType { p2p, a2a, allgather };
// flash: fused flash attention (cuDNN / FlashAttention 2-3); unfused: Megatron-LM's QK^T, softmax, PV
// path with the scores in memory; triton: the 2022 FlashAttention Triton kernel (llm-foundry's
// attn_impl: triton), same memory as flash but slower (CostParams::triton_attn_eff).
enum class AttentionBackend { flash, unfused, triton };
// MoE token dispatcher: NCCL all-to-all(v) (Megatron "alltoall"), or a flex dispatcher that sends a
// token once per remote NVLink domain and fans it out inside the domain (DeepEP, HybridEP).
enum class MoeDispatcher { alltoall, deepep, hybridep };
enum class MainParams { fp32, remainder, bf16, none };
// Megatron-LM's --cuda-graph-impl: kernels captured into CUDA graphs by Megatron's own capture
// (local) or Transformer Engine's, the whole training iteration captured as one graph (full_iteration,
// Megatron-Core's value since its CUDA-graph refactor moved it from --cuda-graph-scope), or none.
enum class CudaGraphImpl { none, local, transformer_engine, full_iteration };

// The names of the enums' values (core/activation_options.h: to_string, parse_enum, enum_names).
constexpr const char* enum_names_text(Recompute) { return "none,selective,full"; }
constexpr const char* enum_names_text(Schedule) { return "gpipe,1f1b,interleaved,zb"; }
constexpr const char* enum_names_text(CpCommType) { return "p2p,a2a,allgather"; }
constexpr const char* enum_names_text(AttentionBackend) { return "flash,unfused,triton"; }
constexpr const char* enum_names_text(MoeDispatcher) { return "alltoall,deepep,hybridep"; }
constexpr const char* enum_names_text(MainParams) { return "fp32,remainder,bf16,none"; }
constexpr const char* enum_names_text(CudaGraphImpl) { return "none,local,transformer_engine,full_iteration"; }

struct ParallelConfig {
  int world_size = 1;  // GPUs of the job
  int tp = 1;
  bool sp = false;
  int pp = 1;
  int vpp = 1;  // model chunks per pipeline rank (1 = no interleaving)
  int cp = 1;
  CpCommType cp_comm_type = CpCommType::p2p;
  int ep = 1;
  int etp = 1;
  int zero = 1;  // 0 = DDP, 1 = distributed optimizer, 2 = + gradients sharded, 3 = FSDP
  int micro_batch_size = 1;
  Recompute recompute = Recompute::none;
  int recompute_num_layers = 0;  // full recompute: layers per stage chunk recomputed (0 = all)
  // selective recompute: Megatron's --recompute-modules (empty = its default, core_attn)
  RecomputeModules recompute_modules;
  // Megatron's fine-grained activation offloading (--offload-modules): inputs of these modules go to host
  OffloadModules offload_modules;
  // Megatron's layer-wise activation offloading (--cpu-offloading-num-layers): the activations of this
  // many layers go to host memory (pp = 1, no recompute, as Megatron requires)
  int cpu_offload_layers = 0;
  // The sharded optimizer / FSDP shards over dp*cp/dp_replicate ranks and replicates over dp_replicate
  // groups (Megatron --num-distributed-optimizer-instances, torchtitan/FSDP HSDP dp_replicate).
  int dp_replicate = 1;
  // The optimizer's master weights: fp32 (Megatron's distributed optimizer), 16-bit remainders of the
  // bf16 weights (Megatron's precision-aware optimizer store_param_remainders, Apex/NeMo
  // DistributedFusedAdam), a bf16 copy, or none (the optimizer updates the bf16 weights).
  MainParams main_params = MainParams::fp32;
  // Adam moments in bf16 (Megatron --exp-avg-dtype/--exp-avg-sq-dtype bf16, NeMo optim.dtype bf16).
  bool adam_states_bf16 = false;
  // MaxText / Paxml remat policy under recompute=selective (framework maxtext).
  RematPolicy remat_policy = RematPolicy::none;
  // Megatron --fp8-param-gather: fp8 weights are the primary copy (no bf16 weights, no fp8 cache).
  bool fp8_param_gather = false;
  // Gradients accumulated and reduced in bf16 (Megatron --grad-reduce-in-bf16; Megatron-Bridge performance
  // recipes); default fp32 main gradients.
  bool grad_reduce_in_bf16 = false;
  // A fused cross-entropy that writes the loss gradient into the bf16 logits (Transformer Engine's
  // parallel_cross_entropy, flash-attn's Triton CE): no fp32 copy of the logits is kept.
  bool cross_entropy_fusion = false;
  // MoE expert capacity factor (Megatron --moe-expert-capacity-factor); 0 = dropless. Tokens beyond
  // capacity are dropped; with moe_pad_to_capacity every expert processes exactly its capacity.
  double moe_capacity_factor = 0;
  bool moe_pad_to_capacity = false;
  // Megatron --cuda-graph-impl (Megatron-Bridge performance recipes); recorded and exported, not yet costed.
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::none;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  // Megatron --moe-router-force-load-balancing (benchmarks): every expert gets the same tokens. Off =
  // learned routing with an auxiliary balancing loss, dropless: the busiest expert-parallel rank sets
  // the pace (see CostParams::moe_expert_cv).
  bool moe_force_balance = false;
  // Megatron --overlap-moe-expert-parallel-comm: the EP all-to-alls of one micro-batch overlap the
  // compute of another (merged forward/backward of 1F1B).
  bool moe_a2a_overlap = false;
  // The experts' MLP as Transformer Engine's fused grouped kernels (Megatron-Core
  // --use-transformer-engine-op-fuser with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, Megatron-Bridge's
  // cutedsl_fused_grouped_mlp): one kernel for all local experts, not one cuBLAS GEMM per expert.
  bool moe_fused_grouped_mlp = false;
  Schedule schedule = Schedule::one_f_one_b;
  AttentionBackend attention_backend = AttentionBackend::flash;
  int num_layers_in_first_pipeline_stage = 0;  // 0 = even split
  int num_layers_in_last_pipeline_stage = 0;
  // Explicit layers per [stage][chunk] (Megatron's --pipeline-model-parallel-layout); empty = derived
  // from the even split and the first/last stage sizes above.
  std::vector<std::vector<int>> pipeline_layout;

  int dp() const { return tp * pp * cp > 0 ? world_size / (tp * pp * cp) : 0; }
  // The recompute modules in effect (Megatron's default core_attn when selective names none).
  RecomputeModules effective_recompute_modules() const {
    if (recompute != Recompute::selective) return {};
    if (recompute_modules.empty()) return RecomputeModules{uint32_t(RecomputeModule::core_attn)};
    return recompute_modules;
  }
  // Expert data parallel size: tp*cp*dp = etp*ep*edp.
  int edp() const { return etp * ep > 0 ? (tp * cp * dp()) / (etp * ep) : 0; }
  int64_t num_microbatches(int64_t global_batch) const {
    int64_t d = int64_t(micro_batch_size) * dp();
    return d > 0 ? global_batch / d : 0;
  }
};

Expected<ParallelConfig> parallel_from_json(const nlohmann::json& j);
nlohmann::json parallel_to_json(const ParallelConfig& p);

// Every rule the layout breaks for this model, batch and cluster, each naming the rule
// ("tp=16 does not divide num_query_groups=8"). Empty = valid.
std::vector<std::string> validate_layout(const ModelSpec& m, const ClusterSpec& c, const TrainingSpec& t,
                                         const ParallelConfig& p);

// Transformer layers per (pipeline stage, virtual chunk), honouring uneven first/last stages.
// result[stage][chunk] = number of layers. Assumes a valid layout.
std::vector<std::vector<int>> layers_per_stage_chunk(const ModelSpec& m, const ParallelConfig& p);
// First global layer index of (stage, chunk) in model order (chunk-major interleaving as in Megatron).
int first_layer_of(const ModelSpec& m, const ParallelConfig& p, int stage, int chunk);
// The most even layout of the model over pp*vpp chunks, counting the embedding as one layer on the
// first chunk and the loss (plus each MTP module as two) on the last, as Megatron-LM's
// --account-for-embedding/loss-in-pipeline-split do; for models whose layer count does not divide
// evenly (e.g. DeepSeek-V3's 61 layers).
std::vector<std::vector<int>> balanced_pipeline_layout(const ModelSpec& m, int pp, int vpp);

}  // namespace mplan
