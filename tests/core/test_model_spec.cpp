// ModelSpec JSON: defaults, round trip and one clear message per bad field.
#include <gtest/gtest.h>

#include "core/model_spec.h"
#include "core/presets.h"

using namespace mplan;
using nlohmann::json;

namespace {
json minimal() {
  return {{"name", "tiny"},           {"num_layers", 4},         {"hidden_size", 64},
          {"num_attention_heads", 4}, {"vocab_size", 256},       {"activation", "swiglu"},
          {"norm", "rmsnorm"},        {"tied_embeddings", true}, {"position_embedding", "rope"},
          {"ffn_hidden_size", 176}};
}
std::string errors_of(const json& j) {
  auto r = model_from_json(j);
  return r.ok() ? std::string() : r.error().message();
}
}  // namespace

TEST(ModelSpec, MegatronDefaults) {
  auto r = model_from_json(minimal());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->num_query_groups, 4);
  EXPECT_EQ(r->kv_channels, 16);
  EXPECT_EQ(r->ffn_hidden_size, 176);
}

// Defaults that would change results are not guessed (issue 17): ffn_hidden_size is required, a
// kv_channels that hidden/heads cannot give exactly must be stated, null is not "missing".
TEST(ModelSpec, NoSilentDefaults) {
  json j = minimal();
  j.erase("ffn_hidden_size");
  EXPECT_NE(errors_of(j).find("model.ffn_hidden_size: missing"), std::string::npos) << errors_of(j);
  j = minimal();
  j["hidden_size"] = 66;  // 66 / 4 heads = 16.5
  EXPECT_NE(errors_of(j).find("model.kv_channels: missing, and hidden_size=66 is not divisible"), std::string::npos)
      << errors_of(j);
  j["kv_channels"] = 16;
  EXPECT_EQ(errors_of(j), "");
  j = minimal();
  j["ffn_hidden_size"] = nullptr;
  EXPECT_NE(errors_of(j).find("model.ffn_hidden_size: null is not a value"), std::string::npos) << errors_of(j);
}

TEST(ModelSpec, ImpossibleSizesAreRefused) {
  json j = minimal();
  j["num_layers"] = 1e9;
  std::string e = errors_of(j);
  EXPECT_NE(e.find("model.num_layers: expected an integer in 0..100000, got '1000000000'"), std::string::npos) << e;
  j = minimal();
  j["vocab_size"] = 1ll << 40;
  e = errors_of(j);
  EXPECT_NE(e.find("model.vocab_size: expected an integer in 0..16777216"), std::string::npos) << e;
}

TEST(ModelSpec, RoundTrip) {
  json j = minimal();
  j["moe"] = {{"num_experts", 8}, {"top_k", 2}, {"moe_ffn_hidden_size", 32}, {"first_k_dense_layers", 1}};
  auto r = model_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto r2 = model_from_json(model_to_json(*r));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(model_to_json(*r), model_to_json(*r2));
  EXPECT_FALSE(r->is_moe_layer(0));
  EXPECT_TRUE(r->is_moe_layer(1));
  EXPECT_EQ(r->num_moe_layers(), 3);
}

TEST(ModelSpec, MissingAndNegativeFieldsAreNamed) {
  json j = minimal();
  j.erase("num_layers");
  j["hidden_size"] = -5;
  std::string e = errors_of(j);
  EXPECT_NE(e.find("model.num_layers: missing; expected an integer in 0..100000"), std::string::npos) << e;
  EXPECT_NE(e.find("model.hidden_size: expected an integer in 0..1048576, got '-5'"), std::string::npos) << e;
}

TEST(ModelSpec, WrongTypesAndUnknownFields) {
  json j = minimal();
  j["num_layers"] = "four";
  j["activaton"] = "gelu";
  j["norm"] = "batchnorm";
  std::string e = errors_of(j);
  EXPECT_NE(e.find("model.num_layers: expected an integer"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'activation'"), std::string::npos) << e;
  EXPECT_NE(e.find("'batchnorm' is not one of layernorm|rmsnorm"), std::string::npos) << e;
}

TEST(ModelSpec, GroupsMustDivideHeads) {
  json j = minimal();
  j["num_query_groups"] = 3;
  EXPECT_NE(errors_of(j).find("does not divide num_attention_heads=4"), std::string::npos);
}

TEST(ModelSpec, MoeTopKRange) {
  json j = minimal();
  j["moe"] = {{"num_experts", 4}, {"top_k", 5}};
  EXPECT_NE(errors_of(j).find("model.moe.top_k"), std::string::npos);
}

// Issue 16: the architecture details round-trip through JSON and bad values name their field.
TEST(ModelSpec, ArchitectureDetailsRoundTripAndValidate) {
  for (const std::string& name : model_preset_names()) {
    auto m = model_preset(name);
    ASSERT_TRUE(m.ok()) << name;
    auto back = model_from_json(model_to_json(*m));
    ASSERT_TRUE(back.ok()) << name << ": " << back.error().message();
    EXPECT_EQ(model_to_json(*back), model_to_json(*m)) << name;
  }
  nlohmann::json j = model_to_json(*model_preset("deepseek-v3"));
  j["moe"]["router_score_function"] = "softmax";
  auto bias = model_from_json(j);
  ASSERT_FALSE(bias.ok());
  EXPECT_NE(bias.error().message().find("model.moe.router_enable_expert_bias"), std::string::npos) << bias.error().message();
  j = model_to_json(*model_preset("deepseek-v3"));
  j["moe"]["router_num_groups"] = 7;
  auto groups = model_from_json(j);
  ASSERT_FALSE(groups.ok());
  EXPECT_NE(groups.error().message().find("model.moe.router_num_groups: 7 does not divide num_experts=256"), std::string::npos);
  j = model_to_json(*model_preset("llama3.1-405b"));
  j["rope_scaling"]["type"] = "linear";
  auto rs = model_from_json(j);
  ASSERT_FALSE(rs.ok());
  EXPECT_NE(rs.error().message().find("model.rope_scaling.type"), std::string::npos) << rs.error().message();
  j["rope_scaling"]["type"] = "none";  // a type of the enum, but not one a rope_scaling object can name
  EXPECT_NE(errors_of(j).find("model.rope_scaling.type: expected llama3 or yarn"), std::string::npos) << errors_of(j);
  j["rope_scaling"]["type"] = "llama3";
  j["rope_scaling"]["beta_fast"] = 32;  // YaRN's: refused in a llama3 object
  EXPECT_NE(errors_of(j).find("model.rope_scaling.beta_fast: unknown field"), std::string::npos) << errors_of(j);
  j["rope_scaling"].erase("beta_fast");
  j["rope_scaling"]["low_freq_factor"] = 0;
  EXPECT_NE(errors_of(j).find("low_freq_factor, beta_fast and beta_slow must be > 0"), std::string::npos) << errors_of(j);
  j["rope_scaling"].erase("low_freq_factor");  // the default (1, Megatron's) again
  j["num_layers"] = 126.0;                     // a whole number written as a float is an integer
  EXPECT_EQ(errors_of(j), "");
  j = model_to_json(*model_preset("gpt-oss-120b"));
  j["softmax_type"] = "sink";
  EXPECT_FALSE(model_from_json(j).ok());
}

TEST(ModelSpec, SlidingWindowPatternAndFraction) {
  ModelSpec m = *model_preset("gpt-oss-120b");
  int windowed = 0;
  for (int i = 0; i < m.num_layers; ++i) windowed += m.is_window_layer(i) ? 1 : 0;
  EXPECT_EQ(windowed, 18);
  // closed form: s=1024, w=128: (128*129/2 + 896*128) / (1024*1025/2)
  EXPECT_DOUBLE_EQ(m.window_attention_fraction(1024), (128.0 * 129 / 2 + 896.0 * 128) / (1024.0 * 1025 / 2));
  EXPECT_DOUBLE_EQ(m.window_attention_fraction(64), 1.0);
}

TEST(ModelSpec, PackedDocumentsAttentionFraction) {
  ModelSpec m = *model_preset("llama3-8b");
  // 4096 tokens packing 16 documents of 256: 16 * 256*257/2 of the 4096*4097/2 causal entries
  EXPECT_DOUBLE_EQ(m.attention_fraction(4096, 256, false), 16.0 * 256 * 257 / 2 / (4096.0 * 4097 / 2));
  EXPECT_DOUBLE_EQ(m.attention_fraction(4096, 0, false), 1.0);     // unpacked
  EXPECT_DOUBLE_EQ(m.attention_fraction(4096, 4096, false), 1.0);  // one document
  // a sliding window longer than the documents changes nothing; a shorter one cuts inside each
  ModelSpec g = *model_preset("gpt-oss-120b");  // window 128
  EXPECT_DOUBLE_EQ(g.attention_fraction(4096, 0, true), g.window_attention_fraction(4096));
  EXPECT_DOUBLE_EQ(g.attention_fraction(4096, 64, true), g.attention_fraction(4096, 64, false));
  EXPECT_DOUBLE_EQ(g.attention_fraction(4096, 256, true), 16.0 * (128.0 * 129 / 2 + 128.0 * 128) / (4096.0 * 4097 / 2));
}
