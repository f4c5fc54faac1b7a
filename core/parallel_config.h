// ParallelConfig: the layout of one training job (TP/SP, PP/VPP, DP+ZeRO, CP, EP/ETP, micro-batch,
// recomputation, overlap, schedule) and the rules a layout must obey for a model, batch and cluster.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/model_spec.h"
#include "core/status.h"
#include "core/training_spec.h"

namespace mplan {

enum class Recompute { none, selective, full };
enum class Schedule { gpipe, one_f_one_b, interleaved, zero_bubble };
enum class CpCommType { p2p, a2a, allgather };
// flash: fused flash attention (scores never stored); unfused: QK^T GEMM, softmax, PV GEMM with the
// score matrix kept for the backward (Megatron-LM before flash attention, 2021-2022).
// flash: fused flash attention (cuDNN / FlashAttention 2-3); unfused: Megatron-LM's QK^T, softmax, PV
// path with the scores in memory; triton: the 2022 FlashAttention Triton kernel (llm-foundry's
// attn_impl: triton), same memory as flash but slower (CostParams::triton_attn_eff).
enum class AttentionBackend { flash, unfused, triton };
// MoE token dispatcher: NCCL all-to-all(v) (Megatron "alltoall"), or a flex dispatcher that sends a
// token once per remote NVLink domain and fans it out inside the domain (DeepEP, HybridEP).
enum class MoeDispatcher { alltoall, deepep, hybridep };

std::string to_string(Recompute r);
std::string to_string(Schedule s);
std::string to_string(CpCommType c);
std::optional<Recompute> parse_recompute(const std::string& s);
std::optional<Schedule> parse_schedule(const std::string& s);  // gpipe|1f1b|interleaved|zb
std::optional<CpCommType> parse_cp_comm_type(const std::string& s);
std::string to_string(AttentionBackend a);
std::optional<AttentionBackend> parse_attention_backend(const std::string& s);
std::string to_string(MoeDispatcher d);
std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& s);

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
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  // Megatron --moe-router-force-load-balancing (benchmarks): every expert gets the same tokens. Off =
  // learned routing with an auxiliary balancing loss, dropless: the busiest expert-parallel rank sets
  // the pace (see CostParams::moe_load_cv).
  bool moe_force_balance = false;
  // Megatron --overlap-moe-expert-parallel-comm: the EP all-to-alls of one micro-batch overlap the
  // compute of another (merged forward/backward of 1F1B).
  bool moe_a2a_overlap = false;
  Schedule schedule = Schedule::one_f_one_b;
  AttentionBackend attention_backend = AttentionBackend::flash;
  int num_layers_in_first_pipeline_stage = 0;  // 0 = even split
  int num_layers_in_last_pipeline_stage = 0;
  // Explicit layers per [stage][chunk] (Megatron's --pipeline-model-parallel-layout); empty = derived
  // from the even split and the first/last stage sizes above.
  std::vector<std::vector<int>> pipeline_layout;

  int dp() const { return tp * pp * cp > 0 ? world_size / (tp * pp * cp) : 0; }
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
