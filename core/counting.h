// Parameter counts (total, active per token, per pipeline stage) and model FLOPs per step following
// Megatron-LM's num_floating_point_operations (GQA, SwiGLU, MoE, MLA, MTP), causal-halved or full.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/parallel_config.h"

namespace mplan {

// Parameters of one transformer layer, by component.
struct LayerParams {
  double attention = 0;       // q/k/v/o projections (+ MLA down/up projections, biases, q/k norms)
  double norms = 0;           // the two pre-norms
  double mlp = 0;             // dense MLP (0 on MoE layers)
  double router = 0;          // MoE router
  double experts = 0;         // all routed experts
  double experts_active = 0;  // routed experts used by one token (top_k)
  double shared_experts = 0;
  double mamba = 0;  // a hybrid model's Mamba-2 mixer (in/out projections, conv1d, per-head A, D, dt bias, gated norm)
  double total() const { return attention + norms + mlp + router + experts + shared_experts + mamba; }
  double active() const { return attention + norms + mlp + router + experts_active + shared_experts + mamba; }
};

struct ParamCounts {
  double embedding = 0;  // token (+ learned position) embedding
  double output = 0;     // LM head when untied (0 when tied)
  double final_norm = 0;
  double layers_total = 0;  // sum over transformer layers
  double layers_active = 0;
  double mtp = 0;     // multi-token-prediction modules (not in total/active)
  double total = 0;   // embedding + output + final norm + layers (no MTP)
  double active = 0;  // parameters used by one token
  // Active without the input embedding table (a lookup, not a matmul): the convention of the
  // DeepSeek-V3 and gpt-oss model cards ("37B activated", "5.1B active").
  double active_excl_embedding = 0;
  double dense_layer_total = 0;  // one dense layer
  double moe_layer_total = 0;    // one MoE layer (0 for dense models)
  LayerParams dense_layer, moe_layer;
};

// A transformer layer (attention and a dense MLP, or attention and MoE).
LayerParams layer_params(const ModelSpec& m, bool moe_layer);
// Layer `layer` of the model as it is (a transformer layer, or a hybrid model's M, *, - or E layer).
LayerParams layer_params_at(const ModelSpec& m, int layer);
ParamCounts count_params(const ModelSpec& m);

// Parameters held by one pipeline stage (all its chunks, embedding on the first stage, head and
// final norm on the last; a tied head on a last stage != first keeps its own copy as in Megatron).
// Not divided by TP/EP.
struct StageParams {
  double dense = 0;   // non-expert parameters (replicated over DP, split over TP)
  double expert = 0;  // routed-expert parameters (split over EP x ETP, replicated over EDP)
  double total() const { return dense + expert; }
};
std::vector<StageParams> params_per_stage(const ModelSpec& m, const ParallelConfig& p);

enum class AttentionFlops { causal, full };

// Model FLOPs of one training step (forward + backward, no recomputation) for `global_batch`
// sequences of `seq` tokens, exactly as Megatron-LM's num_floating_point_operations.
double model_flops_per_step(const ModelSpec& m, int64_t global_batch, int64_t seq, AttentionFlops conv);
// Same, per token (forward+backward).
double model_flops_per_token(const ModelSpec& m, int64_t seq, AttentionFlops conv);

}  // namespace mplan
