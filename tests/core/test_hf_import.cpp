// Hugging Face config.json import: parameter counts of the imported models against published figures.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/counting.h"
#include "core/hf_import.h"
#include "core/presets.h"
#include "tests/core/expect_util.h"

using namespace mplan;

namespace {
ModelSpec load(const std::string& file) {
  return test::value_or_fail(resolve_model(std::string(MPLAN_SOURCE_DIR) + "/tests/data/hf/" + file));
}
void within(double got, double want, double rel) { test::expect_within(got, want, rel); }
}  // namespace

TEST(HfImport, DenseModels) {
  for (const auto& [file, total] : std::vector<std::pair<std::string, double>>{
           {"llama3-8b.json", 8.03e9}, {"mistral-7b.json", 7.24e9}, {"qwen2-7b.json", 7.62e9}, {"qwen3-8b.json", 8.19e9}})
    within(count_params(load(file)).total, total, 0.005);
  EXPECT_EQ(count_params(load("gpt2.json")).total, 124439808.0);
  EXPECT_EQ(count_params(load("gpt-neox-20b.json")).total, 20554567680.0);  // NeoX paper
}

TEST(HfImport, RopeSpellings) {
  ModelSpec a = load("llama3.1-8b-rope-scaling.json");
  ModelSpec b = load("llama3.1-8b-transformers5.json");
  EXPECT_EQ(count_params(a).total, count_params(b).total);
  EXPECT_EQ(a.position_embedding, PositionEmbedding::rope);
}

TEST(HfImport, MoeModels) {
  struct Published {
    std::string file;
    double total, active;
    double active_rel;  // "3.3B activated": published to two significant figures
  };
  for (const Published& m : std::vector<Published>{{"mixtral-8x7b.json", 46.70e9, 12.88e9, 0.005},
                                                   {"qwen3-30b-a3b.json", 30.5e9, 3.3e9, 0.02},
                                                   {"qwen1.5-moe-a2.7b.json", 14.3e9, 2.7e9, 0.02}}) {
    auto c = count_params(load(m.file));
    within(c.total, m.total, 0.005);
    within(c.active, m.active, m.active_rel);
  }
  auto oss = count_params(load("gpt-oss-120b.json"));
  within(oss.total, 116.83e9, 0.005);
  within(oss.active_excl_embedding, 5.13e9, 0.005);
}

TEST(HfImport, DeepSeekAndKimi) {
  ModelSpec ds = load("deepseek-v3.json");
  ASSERT_TRUE(ds.mla.has_value());
  EXPECT_EQ(ds.mtp_num_layers, 1);
  auto c = count_params(ds);
  within(c.total, 671e9, 0.005);
  EXPECT_NEAR(c.active_excl_embedding, 37e9, 0.5e9);
  ModelSpec kimi = load("kimi-k2.json");
  EXPECT_EQ(kimi.moe->num_experts, 384);
  within(count_params(kimi).total, 1.03e12, 0.01);
}

TEST(HfImport, ImportMatchesPreset) {
  EXPECT_EQ(model_to_json(load("deepseek-v3.json"))["mla"], model_to_json(*model_preset("deepseek-v3"))["mla"]);
  EXPECT_EQ(count_params(load("mixtral-8x7b.json")).total, count_params(*model_preset("mixtral-8x7b")).total);
}

TEST(HfImport, UnknownModelTypeSuggests) {
  nlohmann::json j = {{"model_type", "lama"}, {"hidden_size", 8}};
  auto r = hf_model_from_config(j, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("did you mean 'llama'"), std::string::npos) << r.error().message();
}

TEST(HfImport, MissingFieldNamed) {
  nlohmann::json j = {{"model_type", "llama"}, {"hidden_size", 4096}, {"num_attention_heads", 32}};
  auto r = hf_model_from_config(j, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("num_hidden_layers: missing"), std::string::npos) << r.error().message();
}

// Issue 17: a garbage or missing activation is refused instead of becoming SwiGLU; a head dimension
// that hidden_size / heads cannot give exactly must be stated; HF's null still means "default".
TEST(HfImport, ActivationAndHeadDimAreNotGuessed) {
  nlohmann::json j = nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 256, "hidden_act": "silu"})");
  ASSERT_TRUE(hf_model_from_config(j, "x").ok());
  j["hidden_act"] = "banana";
  auto bad = hf_model_from_config(j, "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("config.json.hidden_act: 'banana' is not one of silu|swish"), std::string::npos)
      << bad.error().message();
  j.erase("hidden_act");
  auto missing = hf_model_from_config(j, "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("config.json.hidden_act: missing"), std::string::npos) << missing.error().message();
  j["hidden_act"] = "silu";
  j["hidden_size"] = 66;
  auto hd = hf_model_from_config(j, "x");
  ASSERT_FALSE(hd.ok());
  EXPECT_NE(hd.error().message().find("config.json.head_dim: missing, and hidden_size=66"), std::string::npos)
      << hd.error().message();
  j["head_dim"] = 16;
  j["rope_scaling"] = nullptr;  // transformers writes null for "none"
  EXPECT_TRUE(hf_model_from_config(j, "x").ok());
}

// Issue 16: the published model, not an approximation: RoPE base and scaling, norm epsilon, latent
// norms, router, sliding window and sinks read from config.json equal the presets' cited values.
TEST(HfImport, ArchitectureDetailsMatchPresets) {
  const std::vector<std::string> keys = {"norm_epsilon", "rotary_base",           "rotary_percent", "rope_scaling",
                                         "window_size",  "window_attn_skip_freq", "softmax_type",   "qk_layernorm"};
  const std::vector<std::string> router = {"router_score_function", "router_enable_expert_bias", "router_num_groups",
                                           "router_group_topk", "router_topk_scaling_factor"};
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "kimi-k2", "gpt-oss-120b"}) {
    nlohmann::json a = model_to_json(load(std::string(name) + ".json")), b = model_to_json(*model_preset(name));
    for (const auto& k : keys) EXPECT_EQ(a.value(k, nlohmann::json()), b.value(k, nlohmann::json())) << name << " " << k;
    if (b.contains("moe")) {
      for (const auto& k : router) {
        EXPECT_EQ(a["moe"].value(k, nlohmann::json()), b["moe"].value(k, nlohmann::json())) << name << " " << k;
      }
    }
  }
  ModelSpec oss = load("gpt-oss-120b.json");
  EXPECT_EQ(oss.window_size, 128);
  EXPECT_TRUE(oss.is_window_layer(0));
  EXPECT_FALSE(oss.is_window_layer(1));
  EXPECT_EQ(oss.softmax_type, SoftmaxType::learnable);
  ModelSpec ds = load("deepseek-v3.json");
  EXPECT_EQ(ds.moe->router_score_function, RouterScore::sigmoid);
  EXPECT_EQ(ds.moe->router_num_groups, 8);
  EXPECT_EQ(ds.rope_scaling.type, RopeScalingType::yarn);
  ModelSpec l31 = load("llama3.1-8b-rope-scaling.json");
  EXPECT_EQ(l31.rope_scaling.type, RopeScalingType::llama3);
  EXPECT_EQ(l31.rotary_base, 500000);
  EXPECT_EQ(load("llama3.1-8b-transformers5.json").rope_scaling.factor, l31.rope_scaling.factor);
}

// An unknown RoPE scaling or attention variant is refused with the field named, never dropped.
TEST(HfImport, UnknownRopeScalingOrAttentionVariantIsNamed) {
  nlohmann::json j = nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 256, "hidden_act": "silu",
    "rope_scaling": {"rope_type": "longrope", "factor": 4}})");
  auto r = hf_model_from_config(j, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("config.json.rope_scaling.rope_type: 'longrope'"), std::string::npos) << r.error().message();
  j.erase("rope_scaling");
  j["sliding_window"] = 16;
  j["layer_types"] = {"sliding_attention", "chunked_attention"};
  auto v = hf_model_from_config(j, "x");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message().find("config.json.layer_types[1]: 'chunked_attention'"), std::string::npos)
      << v.error().message();
  j["layer_types"] = {"sliding_attention", "full_attention"};
  auto ok = hf_model_from_config(j, "x");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->window_attn_skip_freq, 2);
}

// The keys with a field's value are the table's hf column (core/model_fields.cpp): any of a row's
// spellings carries it, a bad value names the key and the row's range, a missing required one its spellings.
TEST(HfImport, KeysOfTheTableAreReadThroughTheirRows) {
  nlohmann::json j = nlohmann::json::parse(R"({"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 256, "hidden_act": "silu",
    "num_local_experts": 8, "num_experts_per_tok": 2, "layer_norm_epsilon": 1e-6})");
  ModelSpec a = test::value_or_fail(hf_model_from_config(j, "x"));
  EXPECT_EQ(a.moe->num_experts, 8);
  EXPECT_EQ(a.norm_epsilon, 1e-6);  // the third of norm_epsilon's spellings
  j.erase("num_local_experts");
  j["n_routed_experts"] = 8;  // DeepSeek's spelling of the same count
  EXPECT_EQ(model_to_json(test::value_or_fail(hf_model_from_config(j, "x"))), model_to_json(a));
  j.erase("n_routed_experts");
  j["num_hidden_layers"] = 1e9;
  const std::string e = hf_model_from_config(j, "x").error().message();
  EXPECT_NE(e.find("config.json.num_hidden_layers: expected an integer in 0..100000, got '1000000000'"), std::string::npos) << e;
  EXPECT_NE(e.find("config.json.num_local_experts: missing; expected an integer in 1..65536 (also read as num_experts | "
                   "n_routed_experts)"),
            std::string::npos)
      << e;
}

// Nemotron-H / Nemotron 3 (model_type nemotron_h). No config.json of these models is stored here: the
// configs below use the keys Megatron-Bridge's nemotron_h_bridge.py reads (NVIDIA-NeMo/Megatron-Bridge
// @067f987) with the presets' values, and must import as the presets.
TEST(HfImport, NemotronHHybridsImportAsThePresets) {
  const ModelSpec h8 = *model_preset("nemotron-h-8b");
  nlohmann::json j = {{"model_type", "nemotron_h"},
                      {"num_hidden_layers", 52},
                      {"hidden_size", 4096},
                      {"intermediate_size", 21504},
                      {"num_attention_heads", 32},
                      {"num_key_value_heads", 8},
                      {"head_dim", 128},
                      {"vocab_size", 131072},
                      {"hybrid_override_pattern", h8.hybrid_override_pattern},
                      {"mamba_num_heads", 128},
                      {"mamba_head_dim", 64},
                      {"ssm_state_size", 128},
                      {"n_groups", 8},
                      {"conv_kernel", 4},
                      {"chunk_size", 128},
                      {"layer_norm_epsilon", 1e-5},
                      {"mlp_hidden_act", "relu2"},
                      {"tie_word_embeddings", false}};
  auto m = hf_model_from_config(j, "h8");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->hybrid_override_pattern, h8.hybrid_override_pattern);
  EXPECT_EQ(count_params(*m).total, count_params(h8).total);
  // Nano: MoE layers with a sigmoid router, a shared expert of its own width; attention_head_dim
  const ModelSpec nano = *model_preset("nemotron-3-nano");
  nlohmann::json n = j;
  n.erase("head_dim");
  n.update({{"num_hidden_layers", 52},
            {"hidden_size", 2688},
            {"intermediate_size", 1856},
            {"num_key_value_heads", 2},
            {"attention_head_dim", 128},
            {"hybrid_override_pattern", nano.hybrid_override_pattern},
            {"mamba_num_heads", 64},
            {"n_routed_experts", 128},
            {"num_experts_per_tok", 6},
            {"moe_intermediate_size", 1856},
            {"moe_shared_expert_intermediate_size", 3712},
            {"routed_scaling_factor", 2.5}});
  auto mn = hf_model_from_config(n, "nano");
  ASSERT_TRUE(mn.ok()) << mn.error().message();
  EXPECT_EQ(mn->kv_channels, 128);
  EXPECT_EQ(count_params(*mn).total, count_params(nano).total);
  EXPECT_EQ(count_params(*mn).active, count_params(nano).active);
  EXPECT_EQ(mn->moe->router_score_function, RouterScore::sigmoid);
  // an MTP pattern mplan does not model is named
  n["num_nextn_predict_layers"] = 1;
  n["mtp_hybrid_override_pattern"] = "M*E";
  auto bad = hf_model_from_config(n, "nano");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("mtp_hybrid_override_pattern"), std::string::npos) << bad.error().message();
}
