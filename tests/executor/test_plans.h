// Small plans for the executor tests: three tiny models (GPT-style dense, Llama-style dense with GQA
// and a padded vocabulary, and a MoE) on a local CPU "cluster", and the layouts of the
// parallel-equivalence suite.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"

namespace mplan::test {

inline nlohmann::json cpu_cluster() {
  return {{"name", "local-cpu-test"},
          {"gpu", {{"name", "cpu-core"}, {"peak_tflops", {{"fp32", 0.1}}}, {"memory_gib", 4}, {"hbm_gbps", 20}, {"sm_count", 1}}},
          {"gpus_per_node", 64},
          {"nvlink_domain_size", 64},
          {"scale_up_bw_gbps", 10},
          {"scale_up_latency_us", 1},
          {"scale_out_bw_gbps", 10},
          {"scale_out_latency_us", 1},
          {"num_nodes", 1}};
}

// gpt: GELU, LayerNorm, learned positions, biases, tied embeddings
// llama: SwiGLU, RMSNorm, RoPE, GQA (4 heads, 2 groups), untied, vocabulary 255 (padded under tp)
// qwen: llama + q/k layernorm + qkv bias
// moe: llama-style with 4 experts top-2 (layer 0 dense), a shared expert, untied
// moeb: moe with GELU, LayerNorm and biases on every linear layer (router, experts, shared expert)
inline nlohmann::json tiny_model(const std::string& kind) {
  nlohmann::json m = {
      {"name", "tiny-" + kind}, {"num_layers", 4}, {"hidden_size", 64}, {"num_attention_heads", 4}, {"vocab_size", 256}};
  if (kind == "gpt") {
    m.update({{"activation", "gelu"},
              {"norm", "layernorm"},
              {"tied_embeddings", true},
              {"ffn_hidden_size", 256},
              {"position_embedding", "learned"},
              {"max_position_embeddings", 64},
              {"add_bias_linear", true}});
  } else {
    m.update({{"activation", "swiglu"},
              {"norm", "rmsnorm"},
              {"tied_embeddings", false},
              {"position_embedding", "rope"},
              {"num_query_groups", 2},
              {"ffn_hidden_size", 128}});
    if (kind == "llama") m["vocab_size"] = 255;
    if (kind == "qwen") m.update({{"qk_layernorm", true}, {"add_qkv_bias", true}});
    if (kind == "moeb") m.update({{"add_bias_linear", true}, {"activation", "gelu"}, {"norm", "layernorm"}});
    if (kind == "moe" || kind == "moeb")
      m["moe"] = {{"num_experts", 4},
                  {"top_k", 2},
                  {"moe_ffn_hidden_size", 64},
                  {"shared_expert_ffn_hidden_size", 32},
                  {"first_k_dense_layers", 1}};
  }
  return m;
}

inline nlohmann::json plan_json(const nlohmann::json& model, nlohmann::json parallel, int64_t gbs = 8, int64_t seq = 32) {
  return {{"schema", "mplan.plan/1"},
          {"model", model},
          {"cluster", cpu_cluster()},
          {"training", {{"global_batch_size", gbs}, {"seq_length", seq}, {"precision", "fp32"}}},
          {"parallel", std::move(parallel)}};
}

struct LayoutCase {
  std::string name;
  std::string model;
  nlohmann::json parallel;
};

// The parallel-equivalence layouts (every one must reproduce the single-rank run).
inline std::vector<LayoutCase> equivalence_layouts() {
  using J = nlohmann::json;
  return {
      {"tp2", "gpt", J{{"world_size", 2}, {"tp", 2}, {"sp", false}}},
      {"tp2_sp", "llama", J{{"world_size", 2}, {"tp", 2}, {"sp", true}}},
      {"pp2_1f1b", "gpt", J{{"world_size", 2}, {"pp", 2}, {"schedule", "1f1b"}}},
      {"pp2_vpp2", "llama", J{{"world_size", 2}, {"pp", 2}, {"vpp", 2}, {"schedule", "interleaved"}}},
      {"dp2", "gpt", J{{"world_size", 2}, {"zero", 0}}},
      {"dp2_zero1", "llama", J{{"world_size", 2}, {"zero", 1}}},
      {"cp2", "llama", J{{"world_size", 2}, {"cp", 2}}},
      {"ep2", "moe", J{{"world_size", 2}, {"ep", 2}, {"zero", 0}}},
      {"ep2_etp2", "moe", J{{"world_size", 4}, {"ep", 2}, {"etp", 2}, {"zero", 1}}},
      {"tp2_pp2_dp2", "llama", J{{"world_size", 8}, {"tp", 2}, {"sp", true}, {"pp", 2}, {"zero", 1}}},
      // beyond the required list
      {"pp2_gpipe", "qwen", J{{"world_size", 2}, {"pp", 2}, {"schedule", "gpipe"}}},
      {"pp2_zb", "gpt", J{{"world_size", 2}, {"pp", 2}, {"schedule", "zb"}}},
      {"cp2_gpt", "gpt", J{{"world_size", 2}, {"cp", 2}}},
      {"tp2_cp2_qwen", "qwen", J{{"world_size", 4}, {"tp", 2}, {"sp", true}, {"cp", 2}}},
      {"recompute_full", "moe", J{{"world_size", 1}, {"recompute", "full"}}},
      {"moe_tp2_ep2", "moe", J{{"world_size", 4}, {"tp", 2}, {"sp", true}, {"ep", 2}}},
      {"moe_pp2_cp2", "moe", J{{"world_size", 4}, {"pp", 2}, {"cp", 2}, {"ep", 2}}},
      {"pp2_uneven", "gpt",
       J{{"world_size", 2}, {"pp", 2}, {"num_layers_in_first_pipeline_stage", 1}, {"num_layers_in_last_pipeline_stage", 3}}},
      {"dp2_zero3", "qwen", J{{"world_size", 2}, {"zero", 3}}},
      {"tp2_sp_gpt", "gpt", J{{"world_size", 2}, {"tp", 2}, {"sp", true}}},
      {"moe_tp2_etp2", "moe", J{{"world_size", 4}, {"tp", 2}, {"sp", true}, {"ep", 2}, {"etp", 2}}},
      // biases with etp > 1 are refused (Megatron: "Bias in Moe is only supported when ETP==1"): TP on the dense
      // part, EP with unsplit experts
      {"moeb_tp2_ep2", "moeb", J{{"world_size", 4}, {"tp", 2}, {"sp", true}, {"ep", 2}, {"zero", 1}}},
  };
}

// The equivalence layout called `name`, if there is one.
inline std::optional<LayoutCase> find_layout(const std::string& name) {
  for (auto& c : equivalence_layouts())
    if (c.name == name) return c;
  return std::nullopt;
}

}  // namespace mplan::test
