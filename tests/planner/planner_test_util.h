// Jobs for the planner tests: presets, a few small custom models (MoE with dense layers and MTP, MLA,
// GPT-style with biases, dropout and learned positions) and clusters with small GPUs, so that spaces
// stay small enough to simulate exhaustively in seconds while every code path is exercised.
#pragma once
#include <string>

#include "core/plan.h"
#include "core/presets.h"
#include "planner/layout.h"

namespace mplan::test {

// The job as search() sees it: every layout field open, the job's GPU count and runtime options kept.
inline Plan open_layout(Plan job) {
  const ParallelConfig keep = job.parallel;
  job.parallel = ParallelConfig{};
  job.parallel.world_size = keep.world_size;
  planner::copy_job_runtime(job.parallel, keep);
  return job;
}

inline ModelSpec tiny_dense() {
  return model_from_json(nlohmann::json{{"name", "tiny-dense"},
                                        {"num_layers", 8},
                                        {"hidden_size", 1024},
                                        {"ffn_hidden_size", 3584},
                                        {"num_attention_heads", 16},
                                        {"num_query_groups", 4},
                                        {"vocab_size", 32000},
                                        {"activation", "swiglu"},
                                        {"norm", "rmsnorm"},
                                        {"tied_embeddings", false},
                                        {"position_embedding", "rope"}})
      .value();
}

inline ModelSpec tiny_gpt() {  // GPT-3 style: GELU, LayerNorm, biases, learned positions, dropout, tied
  return model_from_json(nlohmann::json{{"name", "tiny-gpt"},
                                        {"num_layers", 6},
                                        {"hidden_size", 768},
                                        {"ffn_hidden_size", 3072},
                                        {"num_attention_heads", 12},
                                        {"vocab_size", 50257},
                                        {"activation", "gelu"},
                                        {"norm", "layernorm"},
                                        {"tied_embeddings", true},
                                        {"position_embedding", "learned"},
                                        {"max_position_embeddings", 2048},
                                        {"add_bias_linear", true},
                                        {"hidden_dropout", 0.1},
                                        {"attention_dropout", 0.1}})
      .value();
}

inline ModelSpec tiny_moe() {  // DeepSeek style: MLA, a dense first layer, shared expert, MTP
  return model_from_json(nlohmann::json{{"name", "tiny-moe"},
                                        {"num_layers", 7},
                                        {"hidden_size", 1024},
                                        {"ffn_hidden_size", 2816},
                                        {"num_attention_heads", 16},
                                        {"num_query_groups", 16},
                                        {"kv_channels", 96},
                                        {"vocab_size", 32000},
                                        {"activation", "swiglu"},
                                        {"norm", "rmsnorm"},
                                        {"tied_embeddings", false},
                                        {"position_embedding", "rope"},
                                        {"moe",
                                         {{"num_experts", 16},
                                          {"top_k", 4},
                                          {"moe_ffn_hidden_size", 512},
                                          {"shared_expert_ffn_hidden_size", 512},
                                          {"first_k_dense_layers", 1}}},
                                        {"mla",
                                         {{"q_lora_rank", 384},
                                          {"kv_lora_rank", 256},
                                          {"qk_head_dim", 64},
                                          {"qk_rope_head_dim", 32},
                                          {"v_head_dim", 64}}},
                                        {"mtp_num_layers", 1}})
      .value();
}

inline ClusterSpec cluster(const std::string& preset, double memory_gib = 0) {
  ClusterSpec c = cluster_preset(preset).value();
  if (memory_gib > 0) c.gpu.memory_gib = memory_gib;
  return c;
}

inline Plan job(const ModelSpec& m, const ClusterSpec& c, int gpus, int64_t gbs, int64_t seq, Precision prec = Precision::bf16,
                TrainingMethod method = TrainingMethod::pretrain) {
  Plan p;
  p.model = m;
  p.cluster = c;
  p.training.global_batch_size = gbs;
  p.training.seq_length = seq;
  p.training.precision = prec;
  p.training.method = method;
  p.parallel.world_size = gpus;
  return p;
}

}  // namespace mplan::test
